/* vcs/git_native.c - reading a git repository without running git (see git_native.h). */
#define _GNU_SOURCE
#include "vcs/git_native.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/fs.h"
#include "util/hash.h"
#include "util/mem.h"

#define ASK TT_GITNAT_ASK
#define OBJECT_CAP ((size_t)256 << 20)  /* as the cat-file reader's cap */
#define SMALL_FILE ((size_t)64 << 20)
#define MAX_DELTA_DEPTH 10000
#define MAX_SYMREF_DEPTH 5
#define MAX_TREE_DEPTH 4096

typedef struct pack {
	char *path;             /* .pack */
	const uint8_t *idx;     /* mapped .idx */
	size_t idx_len;
	uint32_t count;
	const uint8_t *data;    /* mapped .pack, on first use */
	size_t data_len;
	bool data_failed;
} pack;

struct tt_gitnat {
	char *git_dir;      /* this worktree's */
	char *common_dir;
	char *objects;
	pack *packs;
	size_t npacks;
	bool objects_ok;    /* no alternates, grafts or replace refs */
	bool walk_ok;       /* ...and no shallow file */
	char *packed;       /* packed-refs text, NULL when none */
	size_t packed_len;
	bool packed_read;
};

/* ---- small helpers ---------------------------------------------------- */

static bool is_hex40(const char *s, size_t n)
{
	if (n != 40)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* A whole small file into a NUL-terminated string; NULL when unreadable. */
static char *slurp(const char *path, size_t *len)
{
	tt_buf b = TT_BUF_INIT;
	tt_error err = TT_ERROR_INIT;
	char *out = NULL;
	if (tt_read_file(path, &b, SMALL_FILE, &err) == 0) {
		if (len)
			*len = b.len;
		/* an empty file still yields a string */
		out = b.len ? tt_buf_detach(&b) : tt_strdup("");
	}
	tt_buf_release(&b);
	tt_error_clear(&err);
	return out;
}

static char *join(const char *a, const char *b)
{
	return tt_path_join(a, b);
}

static bool present(const char *dir, const char *name)
{
	char *p = join(dir, name);
	bool there = p && tt_exists(p);
	free(p);
	return !p || there;  /* out of memory: say yes, so the caller asks git */
}

static void chomp_s(char *s)
{
	size_t n = strlen(s);
	while (n && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' ' || s[n - 1] == '\t'))
		s[--n] = '\0';
}

/* A directory holding anything but "." and ".." (or one that cannot be read). */
static bool dir_nonempty(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return errno != ENOENT && errno != ENOTDIR;
	struct dirent *e;
	bool any = false;
	while (!any && (e = readdir(d)))
		any = strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return any;
}

/* ---- opening ---------------------------------------------------------- */

static int load_packs(tt_gitnat *g)
{
	char *dir = join(g->objects, "pack");
	DIR *d = dir ? opendir(dir) : NULL;
	int rc = 0;
	if (!d) {
		rc = dir && (errno == ENOENT) ? 0 : ASK;
		free(dir);
		return rc;
	}
	struct dirent *e;
	size_t alloc = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 5 || strcmp(e->d_name + l - 4, ".idx") != 0)
			continue;
		char *idx = join(dir, e->d_name);
		char *pk = idx ? tt_asprintf("%.*s.pack", (int)(strlen(idx) - 4), idx) : NULL;
		if (!pk) {
			free(idx);
			rc = ASK;
			break;
		}
		struct stat st;
		int fd = open(idx, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) != 0 || stat(pk, &st) != 0) {
			/* an index without its pack (being written): git skips it too */
			if (fd >= 0)
				close(fd);
			free(idx);
			free(pk);
			continue;
		}
		fstat(fd, &st);
		void *m = st.st_size >= 8 + 256 * 4 ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
						    : MAP_FAILED;
		close(fd);
		free(idx);
		const uint8_t *p = m;
		if (m == MAP_FAILED || memcmp(p, "\377tOc", 4) != 0 || p[4] || p[5] || p[6] || p[7] != 2) {
			if (m != MAP_FAILED)
				munmap(m, (size_t)st.st_size);
			free(pk);
			rc = ASK;  /* an index version not read here */
			break;
		}
		const uint8_t *f = p + 8 + 255 * 4;
		uint32_t count = (uint32_t)f[0] << 24 | (uint32_t)f[1] << 16 | (uint32_t)f[2] << 8 | f[3];
		if ((size_t)st.st_size < 8 + 256 * 4 + (size_t)count * 28 + 40 ||
		    TT_ARRAY_GROW(g->packs, alloc, g->npacks + 1) != 0) {
			munmap(m, (size_t)st.st_size);
			free(pk);
			rc = ASK;
			break;
		}
		g->packs[g->npacks++] = (pack){ .path = pk, .idx = p, .idx_len = (size_t)st.st_size,
						.count = count };
	}
	closedir(d);
	free(dir);
	return rc;
}

/* The config says something this reader does not follow. */
static bool config_unread(const char *common)
{
	char *path = join(common, "config");
	char *text = path ? slurp(path, NULL) : NULL;
	bool bad = !path;
	if (text) {
		for (char *p = text; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		bad = strstr(text, "objectformat") || strstr(text, "refstorage") ||
		      strstr(text, "compatobjectformat");
	}
	free(path);
	free(text);
	return bad;
}

tt_gitnat *tt_gitnat_open(const char *dir, const char *git_dir)
{
	const char *off = getenv("TETHER_GIT_NATIVE");
	if (off && strcmp(off, "0") == 0)
		return NULL;  /* every read through git, as a check on this one */
	tt_gitnat *g = tt_calloc(1, sizeof *g);
	char *dotgit = NULL, *gd = NULL, *text = NULL, *common = NULL;
	if (!g)
		return NULL;
	if (git_dir) {
		gd = tt_realpath(git_dir);
	} else {
		struct stat st;
		dotgit = join(dir, ".git");
		if (!dotgit || lstat(dotgit, &st) != 0)
			goto fail;
		if (S_ISDIR(st.st_mode)) {
			gd = tt_realpath(dotgit);
		} else if (S_ISREG(st.st_mode)) {
			if (!(text = slurp(dotgit, NULL)) || strncmp(text, "gitdir: ", 8) != 0)
				goto fail;
			chomp_s(text);
			char *t = text[8] == '/' ? tt_strdup(text + 8) : join(dir, text + 8);
			gd = t ? tt_realpath(t) : NULL;
			free(t);
		} else {
			goto fail;
		}
	}
	if (!gd || !tt_is_dir(gd))
		goto fail;
	/* a git directory has HEAD and objects (through commondir for a worktree) */
	char *cpath = join(gd, "commondir");
	if (!cpath)
		goto fail;
	free(text);
	text = tt_exists(cpath) ? slurp(cpath, NULL) : NULL;
	bool has_common = tt_exists(cpath);
	free(cpath);
	if (has_common) {
		if (!text)
			goto fail;
		chomp_s(text);
		char *t = text[0] == '/' ? tt_strdup(text) : join(gd, text);
		common = t ? tt_realpath(t) : NULL;
		free(t);
	} else {
		common = tt_strdup(gd);
	}
	if (!common || !present(gd, "HEAD") || !present(common, "objects") || config_unread(common))
		goto fail;
	g->git_dir = gd;
	g->common_dir = common;
	gd = common = NULL;
	if (!(g->objects = join(g->common_dir, "objects")))
		goto fail;
	/* refs kept per worktree elsewhere than HEAD: read by git only */
	if (has_common) {
		char *r = join(g->git_dir, "refs");
		bool per_wt = !r || dir_nonempty(r);
		free(r);
		if (per_wt)
			goto fail;
	}
	{
		char *alt = join(g->objects, "info/alternates");
		char *graft = join(g->common_dir, "info/grafts");
		char *repl = join(g->common_dir, "refs/replace");
		g->objects_ok = alt && graft && repl && !tt_exists(alt) && !tt_exists(graft) &&
				!dir_nonempty(repl) && load_packs(g) == 0;
		free(alt);
		free(graft);
		free(repl);
	}
	g->walk_ok = g->objects_ok && !present(g->common_dir, "shallow");
	free(dotgit);
	free(text);
	return g;
fail:
	free(dotgit);
	free(gd);
	free(text);
	free(common);
	tt_gitnat_close(g);
	return NULL;
}

void tt_gitnat_close(tt_gitnat *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->npacks; i++) {
		munmap((void *)g->packs[i].idx, g->packs[i].idx_len);
		if (g->packs[i].data)
			munmap((void *)g->packs[i].data, g->packs[i].data_len);
		free(g->packs[i].path);
	}
	free(g->packs);
	free(g->git_dir);
	free(g->common_dir);
	free(g->objects);
	free(g->packed);
	free(g);
}

const char *tt_gitnat_common_dir(const tt_gitnat *g)
{
	return g->common_dir;
}

/* ---- refs ------------------------------------------------------------- */

static bool per_worktree(const char *name)
{
	return strchr(name, '/') == NULL || strncmp(name, "refs/bisect/", 12) == 0 ||
	       strncmp(name, "refs/worktree/", 14) == 0 || strncmp(name, "refs/rewritten/", 15) == 0;
}

/* A name git would accept as a ref here (a conservative subset). */
static bool plain_name(const char *name)
{
	if (!*name || name[0] == '/' || name[0] == '.' || strstr(name, "..") || strstr(name, "//") ||
	    strstr(name, "/.") || strstr(name, "@{"))
		return false;
	size_t n = strlen(name);
	if (name[n - 1] == '/' || name[n - 1] == '.' || (n >= 5 && strcmp(name + n - 5, ".lock") == 0))
		return false;
	for (const char *p = name; *p; p++) {
		unsigned char c = (unsigned char)*p;
		if (c < 0x20 || c == 0x7f || strchr(" ~^:?*[\\", c))
			return false;
	}
	return true;
}

static int packed_refs(tt_gitnat *g)
{
	if (g->packed_read)
		return 0;
	char *p = join(g->common_dir, "packed-refs");
	if (!p)
		return ASK;
	if (tt_exists(p)) {
		g->packed = slurp(p, &g->packed_len);
		if (!g->packed) {
			free(p);
			return ASK;
		}
	}
	free(p);
	g->packed_read = true;
	return 0;
}

/* name's value in packed-refs: 1 (hex set), 0 absent, ASK. */
static int packed_lookup(tt_gitnat *g, const char *name, char hex[65])
{
	if (packed_refs(g) < 0)
		return ASK;
	if (!g->packed)
		return 0;
	size_t nl = strlen(name);
	for (const char *line = g->packed; *line;) {
		const char *le = strchr(line, '\n');
		size_t ll = le ? (size_t)(le - line) : strlen(line);
		if (ll && line[ll - 1] == '\r')
			return ASK;
		if (ll == 41 + nl && line[40] == ' ' && memcmp(line + 41, name, nl) == 0) {
			if (!is_hex40(line, 40))
				return ASK;
			memcpy(hex, line, 40);
			hex[40] = '\0';
			return 1;
		}
		line += ll + (le != NULL);
	}
	return 0;
}

static int ref_depth(tt_gitnat *g, const char *name, char hex[65], int depth)
{
	if (depth > MAX_SYMREF_DEPTH || !(strcmp(name, "HEAD") == 0 || strncmp(name, "refs/", 5) == 0) ||
	    !plain_name(name))
		return ASK;
	char *path = join(per_worktree(name) ? g->git_dir : g->common_dir, name);
	if (!path)
		return ASK;
	struct stat st;
	int rc;
	if (lstat(path, &st) == 0) {
		if (S_ISDIR(st.st_mode)) {
			rc = packed_lookup(g, name, hex);
			free(path);
			return rc;
		}
		char *text = S_ISREG(st.st_mode) ? slurp(path, NULL) : NULL;
		free(path);
		if (!text)
			return ASK;  /* a symlinked ref, or unreadable */
		chomp_s(text);
		if (strncmp(text, "ref: ", 5) == 0) {
			rc = ref_depth(g, text + 5, hex, depth + 1);
		} else if (is_hex40(text, strlen(text))) {
			memcpy(hex, text, 41);
			rc = 1;
		} else {
			rc = ASK;
		}
		free(text);
		return rc;
	}
	rc = errno == ENOENT || errno == ENOTDIR ? packed_lookup(g, name, hex) : ASK;
	free(path);
	return rc;
}

int tt_gitnat_ref(tt_gitnat *g, const char *name, char hex[65])
{
	hex[0] = '\0';
	return ref_depth(g, name, hex, 0);
}

int tt_gitnat_head(tt_gitnat *g, char **symref, char hex[65])
{
	char *path = join(g->git_dir, "HEAD");
	char *text = path ? slurp(path, NULL) : NULL;
	int rc = ASK;
	*symref = NULL;
	hex[0] = '\0';
	free(path);
	if (!text)
		return ASK;
	chomp_s(text);
	if (strncmp(text, "ref: ", 5) == 0) {
		if (strncmp(text + 5, "refs/", 5) == 0 && plain_name(text + 5)) {
			int r = ref_depth(g, text + 5, hex, 1);
			if (r >= 0 && (*symref = tt_strdup(text + 5)))
				rc = 0;
			if (r == 0)
				hex[0] = '\0';
		}
	} else if (is_hex40(text, strlen(text))) {
		memcpy(hex, text, 41);
		rc = 0;
	}
	free(text);
	return rc;
}

typedef struct reflist {
	tt_gitnat_refent *v;
	size_t n, alloc;
} reflist;

static int ref_add(reflist *l, const char *name, size_t nl, const char *hex)
{
	if (TT_ARRAY_GROW(l->v, l->alloc, l->n + 1) != 0)
		return ASK;
	if (!(l->v[l->n].name = tt_strndup(name, nl)))
		return ASK;
	memcpy(l->v[l->n].hex, hex, 40);
	l->v[l->n].hex[40] = '\0';
	l->n++;
	return 0;
}

/* Loose refs under common_dir/<rel> (recursively) into l. */
static int loose_walk(tt_gitnat *g, const char *rel, reflist *l, int depth)
{
	char *path = join(g->common_dir, rel);
	DIR *d = path ? opendir(path) : NULL;
	int rc = 0;
	if (!d) {
		rc = path && errno == ENOENT ? 0 : ASK;
		free(path);
		return rc;
	}
	struct dirent *e;
	while (rc == 0 && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *name = tt_asprintf("%s/%s", rel, e->d_name);
		char *full = name ? join(g->common_dir, name) : NULL;
		struct stat st;
		if (!full || lstat(full, &st) != 0 || depth > 64) {
			rc = ASK;
		} else if (S_ISDIR(st.st_mode)) {
			rc = loose_walk(g, name, l, depth + 1);
		} else {
			char hex[65];
			int r = ref_depth(g, name, hex, 0);
			/* a name git would skip or a value that does not parse: git decides */
			rc = r == 1 ? ref_add(l, name, strlen(name), hex) : ASK;
		}
		free(name);
		free(full);
	}
	closedir(d);
	free(path);
	return rc;
}

static int cmp_refent(const void *a, const void *b)
{
	return strcmp(((const tt_gitnat_refent *)a)->name, ((const tt_gitnat_refent *)b)->name);
}

void tt_gitnat_refs_free(tt_gitnat_refent *refs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(refs[i].name);
	free(refs);
}

int tt_gitnat_refs(tt_gitnat *g, const char *prefix, tt_gitnat_refent **out, size_t *n)
{
	reflist l = { 0 };
	size_t pl = strlen(prefix);
	int rc = 0;
	*out = NULL;
	*n = 0;
	/* the directory the prefix names: "refs/heads/" -> refs/heads */
	char *rel = tt_strndup(prefix, pl && prefix[pl - 1] == '/' ? pl - 1 : pl);
	if (!rel || strncmp(prefix, "refs", 4) != 0 || (rc = loose_walk(g, rel, &l, 0)) < 0 ||
	    (rc = packed_refs(g)) < 0)
		goto fail;
	size_t loose = l.n;
	if (loose)
		qsort(l.v, loose, sizeof *l.v, cmp_refent);
	for (const char *line = g->packed ? g->packed : ""; *line;) {
		const char *le = strchr(line, '\n');
		size_t ll = le ? (size_t)(le - line) : strlen(line);
		const char *next = line + ll + (le != NULL);
		if (line[0] == '#' || line[0] == '^') {
			line = next;
			continue;
		}
		if (ll < 42 || line[40] != ' ' || !is_hex40(line, 40) || line[ll - 1] == '\r') {
			rc = ASK;
			goto fail;
		}
		const char *name = line + 41;
		size_t nl = ll - 41;
		if (nl >= pl && memcmp(name, prefix, pl) == 0) {
			char *nm = tt_strndup(name, nl);
			tt_gitnat_refent key = { .name = nm };
			bool shadowed = nm && loose && bsearch(&key, l.v, loose, sizeof *l.v, cmp_refent);
			if (!nm || !plain_name(nm)) {
				free(nm);
				rc = ASK;
				goto fail;
			}
			if (!shadowed && (rc = ref_add(&l, nm, nl, line)) < 0) {
				free(nm);
				goto fail;
			}
			free(nm);
		}
		line = next;
	}
	if (l.n)
		qsort(l.v, l.n, sizeof *l.v, cmp_refent);
	free(rel);
	*out = l.v;
	*n = l.n;
	return 0;
fail:
	free(rel);
	tt_gitnat_refs_free(l.v, l.n);
	return ASK;
}

bool tt_gitnat_short_is_plain(tt_gitnat *g, const char *branch)
{
	/* `--short` spells the branch "heads/<name>" when another rule would
	 * read <name> first; any other ref of that name: git decides */
	static const char *const other[][2] = { { "refs/", "" }, { "refs/tags/", "" },
						{ "refs/remotes/", "" }, { "refs/remotes/", "/HEAD" } };
	char hex[65];
	if (present(g->git_dir, branch) || present(g->common_dir, branch))
		return false;
	for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
		char *full = tt_asprintf("%s%s%s", other[i][0], branch, other[i][1]);
		int r = full ? tt_gitnat_ref(g, full, hex) : ASK;
		free(full);
		if (r != 0)
			return false;
	}
	return true;
}

int tt_gitnat_checked_out(const char *dir, char **out)
{
	tt_gitnat *g = tt_gitnat_open(dir, NULL);
	char *sym = NULL, hex[65];
	int rc = ASK;
	*out = NULL;
	if (!g)
		return ASK;
	if (tt_gitnat_head(g, &sym, hex) == 0) {
		rc = 0;
		if (sym) {
			if (strncmp(sym, "refs/heads/", 11) != 0 || !tt_gitnat_short_is_plain(g, sym + 11))
				rc = ASK;  /* --short of another namespace, or ambiguous: git's rules */
			else if (!(*out = tt_strdup(sym + 11)))
				rc = ASK;
		}
	}
	free(sym);
	tt_gitnat_close(g);
	return rc;
}

/* ---- objects ---------------------------------------------------------- */

static const char *const type_names[] = { NULL, "commit", "tree", "blob", "tag" };

/* Inflate exactly want bytes from src into out (replaced). */
static int inflate_into(const uint8_t *src, size_t srclen, size_t want, tt_buf *out, size_t *used)
{
	z_stream z = { 0 };
	tt_buf_reset(out);
	if (want > OBJECT_CAP || tt_buf_grow(out, want + 1) != 0)
		return ASK;
	if (inflateInit(&z) != Z_OK)
		return ASK;
	z.next_in = (Bytef *)src;
	z.avail_in = (uInt)(srclen > UINT32_MAX ? UINT32_MAX : srclen);
	z.next_out = (Bytef *)out->ptr;
	z.avail_out = (uInt)want + 1;
	int zr = inflate(&z, Z_FINISH);
	size_t got = z.total_out;
	if (used)
		*used = z.total_in;
	inflateEnd(&z);
	if (zr != Z_STREAM_END || got != want)
		return ASK;
	out->len = want;
	out->ptr[want] = '\0';
	return 0;
}

static int loose_read(tt_gitnat *g, const char *hex, char type[16], tt_buf *data)
{
	char rel[48];
	snprintf(rel, sizeof rel, "%.2s/%s", hex, hex + 2);
	char *path = join(g->objects, rel);
	int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
	free(path);
	if (fd < 0)
		return ASK;
	/* small objects (commits, manifests) in one read; a larger one mapped */
	uint8_t small[16384];
	const uint8_t *m = small;
	size_t len = 0;
	bool mapped = false;
	ssize_t got = read(fd, small, sizeof small);
	struct stat st;
	if (got == (ssize_t)sizeof small) {
		if (fstat(fd, &st) == 0 && st.st_size > 0) {
			void *mm = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
			if (mm != MAP_FAILED) {
				m = mm;
				len = (size_t)st.st_size;
				mapped = true;
			}
		}
		got = mapped ? (ssize_t)len : -1;
	}
	close(fd);
	if (got <= 0)
		return ASK;
	len = (size_t)got;
	int rc = ASK;
	/* the header first, then the whole object */
	z_stream z = { 0 };
	char head[64];
	if (inflateInit(&z) == Z_OK) {
		z.next_in = (Bytef *)m;
		z.avail_in = (uInt)len;
		z.next_out = (Bytef *)head;
		z.avail_out = sizeof head - 1;
		int zr = inflate(&z, Z_SYNC_FLUSH);
		size_t hl = sizeof head - 1 - z.avail_out;
		head[hl] = '\0';
		inflateEnd(&z);
		char *nul = memchr(head, '\0', hl);
		char *sp = strchr(head, ' ');
		if ((zr == Z_OK || zr == Z_STREAM_END) && nul && sp && sp < nul && sp - head < 16) {
			char *end = NULL;
			unsigned long long size = strtoull(sp + 1, &end, 10);
			size_t hdr = (size_t)(nul - head) + 1;
			if (end == nul && size <= OBJECT_CAP &&
			    inflate_into(m, len, hdr + (size_t)size, data, NULL) == 0) {
				memmove(data->ptr, data->ptr + hdr, (size_t)size);
				data->len = (size_t)size;
				data->ptr[size] = '\0';
				memcpy(type, head, (size_t)(sp - head));
				type[sp - head] = '\0';
				rc = 1;
			}
		}
	}
	if (mapped)
		munmap((void *)m, len);
	return rc;
}

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The offset of oid in pack p, or -1. */
static int64_t pack_find(const pack *p, const uint8_t oid[20])
{
	const uint8_t *fan = p->idx + 8;
	uint32_t lo = oid[0] ? be32(fan + (oid[0] - 1) * 4) : 0, hi = be32(fan + oid[0] * 4);
	const uint8_t *names = fan + 256 * 4;
	if (hi > p->count || lo > hi)
		return -1;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = memcmp(names + (size_t)mid * 20, oid, 20);
		if (c == 0) {
			const uint8_t *offs = names + (size_t)p->count * 24;  /* after names and CRCs */
			uint32_t o = be32(offs + (size_t)mid * 4);
			if (!(o & 0x80000000u))
				return o;
			const uint8_t *large = offs + (size_t)p->count * 4 + (size_t)(o & 0x7fffffffu) * 8;
			if (large + 8 > p->idx + p->idx_len - 40)
				return -1;
			return (int64_t)((uint64_t)be32(large) << 32 | be32(large + 4));
		}
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

static bool pack_map(pack *p)
{
	if (p->data || p->data_failed)
		return p->data != NULL;
	int fd = open(p->path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	void *m = MAP_FAILED;
	if (fd >= 0 && fstat(fd, &st) == 0 && st.st_size >= 32)
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (fd >= 0)
		close(fd);
	if (m == MAP_FAILED || memcmp(m, "PACK", 4) != 0) {
		if (m != MAP_FAILED)
			munmap(m, (size_t)st.st_size);
		p->data_failed = true;
		return false;
	}
	p->data = m;
	p->data_len = (size_t)st.st_size;
	return true;
}

static int odb_read_raw(tt_gitnat *g, const uint8_t oid[20], int *type, tt_buf *data, int depth);

static size_t delta_varint(const uint8_t **p, const uint8_t *end)
{
	size_t v = 0;
	int shift = 0;
	while (*p < end) {
		uint8_t c = *(*p)++;
		v |= (size_t)(c & 0x7f) << shift;
		shift += 7;
		if (!(c & 0x80) || shift > 56)
			break;
	}
	return v;
}

static int apply_delta(const tt_buf *base, const tt_buf *delta, tt_buf *out)
{
	const uint8_t *p = (const uint8_t *)delta->ptr, *end = p + delta->len;
	size_t src = delta_varint(&p, end), dst = delta_varint(&p, end);
	if (src != base->len || dst > OBJECT_CAP)
		return ASK;
	tt_buf_reset(out);
	if (tt_buf_grow(out, dst + 1) != 0)
		return ASK;
	while (p < end) {
		uint8_t c = *p++;
		if (c & 0x80) {
			size_t off = 0, sz = 0;
			for (int i = 0; i < 4; i++)
				if (c & (1u << i)) {
					if (p >= end)
						return ASK;
					off |= (size_t)*p++ << (8 * i);
				}
			for (int i = 0; i < 3; i++)
				if (c & (0x10u << i)) {
					if (p >= end)
						return ASK;
					sz |= (size_t)*p++ << (8 * i);
				}
			if (!sz)
				sz = 0x10000;
			if (off + sz > base->len || out->len + sz > dst)
				return ASK;
			memcpy(out->ptr + out->len, base->ptr + off, sz);
			out->len += sz;
		} else if (c) {
			if ((size_t)(end - p) < c || out->len + c > dst)
				return ASK;
			memcpy(out->ptr + out->len, p, c);
			out->len += c;
			p += c;
		} else {
			return ASK;
		}
	}
	if (out->len != dst)
		return ASK;
	out->ptr[dst] = '\0';
	return 0;
}

static int pack_read_at(tt_gitnat *g, pack *p, uint64_t off, int *type, tt_buf *data, int depth)
{
	if (depth > MAX_DELTA_DEPTH || !pack_map(p) || off >= p->data_len - 20)
		return ASK;
	const uint8_t *q = p->data + off, *end = p->data + p->data_len - 20;
	uint8_t c = *q++;
	int t = (c >> 4) & 7;
	size_t size = c & 15;
	int shift = 4;
	while (c & 0x80) {
		if (q >= end || shift > 56)
			return ASK;
		c = *q++;
		size |= (size_t)(c & 0x7f) << shift;
		shift += 7;
	}
	if (t >= 1 && t <= 4) {
		*type = t;
		return inflate_into(q, (size_t)(end - q), size, data, NULL) == 0 ? 1 : ASK;
	}
	tt_buf base = TT_BUF_INIT, delta = TT_BUF_INIT;
	int rc = ASK, bt = 0;
	if (t == 6) {
		if (q >= end)
			return ASK;
		c = *q++;
		uint64_t back = c & 0x7f;
		while (c & 0x80) {
			if (q >= end || back > (UINT64_MAX >> 8))
				return ASK;
			c = *q++;
			back = ((back + 1) << 7) | (c & 0x7f);
		}
		if (back == 0 || back > off)
			return ASK;
		if (pack_read_at(g, p, off - back, &bt, &base, depth + 1) != 1)
			goto done;
	} else if (t == 7) {
		if ((size_t)(end - q) < 20)
			return ASK;
		uint8_t boid[20];
		memcpy(boid, q, 20);
		q += 20;
		if (odb_read_raw(g, boid, &bt, &base, depth + 1) != 1)
			goto done;
	} else {
		return ASK;
	}
	if (inflate_into(q, (size_t)(end - q), size, &delta, NULL) == 0 && apply_delta(&base, &delta, data) == 0) {
		*type = bt;
		rc = 1;
	}
done:
	tt_buf_release(&base);
	tt_buf_release(&delta);
	return rc;
}

static int odb_read_raw(tt_gitnat *g, const uint8_t oid[20], int *type, tt_buf *data, int depth)
{
	for (size_t i = 0; i < g->npacks; i++) {
		int64_t off = pack_find(&g->packs[i], oid);
		if (off >= 0)
			return pack_read_at(g, &g->packs[i], (uint64_t)off, type, data, depth);
	}
	char hex[41], t[16];
	tt_hex(hex, oid, 20);
	int rc = loose_read(g, hex, t, data);
	if (rc != 1)
		return ASK;
	*type = 0;
	for (int i = 1; i <= 4; i++)
		if (strcmp(t, type_names[i]) == 0)
			*type = i;
	return *type ? 1 : ASK;
}

int tt_gitnat_read(tt_gitnat *g, const char *hex, char type[16], tt_buf *data)
{
	uint8_t oid[20];
	int t = 0;
	if (!g->objects_ok || !is_hex40(hex, strlen(hex)) || tt_unhex_lower(oid, hex, 20) != 0)
		return ASK;
	if (odb_read_raw(g, oid, &t, data, 0) != 1)
		return ASK;
	snprintf(type, 16, "%s", type_names[t]);
	return 1;
}

/* ---- revisions -------------------------------------------------------- */

/* The id a commit's or tag's header line names ("tree X", "object X"). */
static bool header_oid(const tt_buf *data, const char *field, char hex[65])
{
	size_t fl = strlen(field);
	for (const char *line = data->ptr; line < data->ptr + data->len && *line != '\n';) {
		const char *le = memchr(line, '\n', (size_t)(data->ptr + data->len - line));
		if (!le)
			return false;
		if ((size_t)(le - line) == fl + 41 && memcmp(line, field, fl) == 0 && line[fl] == ' ' &&
		    is_hex40(line + fl + 1, 40)) {
			memcpy(hex, line + fl + 1, 40);
			hex[40] = '\0';
			return true;
		}
		line = le + 1;
	}
	return false;
}

/* Peel hex (read into type/data) until it is want ("commit", "tree") or
 * no tag is left: 1 with hex/type/data the peeled object, 0 when it does
 * not peel to want, ASK. */
static int peel(tt_gitnat *g, char hex[65], char type[16], tt_buf *data, const char *want)
{
	for (int i = 0; i < 64; i++) {
		if (!want || strcmp(type, want) == 0)
			return 1;
		char next[65];
		if (strcmp(type, "tag") == 0) {
			if (!header_oid(data, "object", next))
				return ASK;
		} else if (strcmp(type, "commit") == 0 && strcmp(want, "tree") == 0) {
			if (!header_oid(data, "tree", next))
				return ASK;
		} else {
			return 0;
		}
		memcpy(hex, next, 41);
		if (tt_gitnat_read(g, hex, type, data) != 1)
			return ASK;
	}
	return ASK;
}

/* A revision name to a full id: a full id, HEAD, or a ref by git's
 * lookup order.  1, or ASK (anything else, or nothing found). */
static int rev_hex(tt_gitnat *g, const char *rev, size_t rl, char hex[65])
{
	char *name = tt_strndup(rev, rl);
	int rc = ASK;
	if (!name)
		return ASK;
	if (is_hex40(name, rl)) {
		memcpy(hex, name, 41);
		rc = 1;
	} else if (strcmp(name, "HEAD") == 0) {
		rc = tt_gitnat_ref(g, "HEAD", hex) == 1 ? 1 : ASK;
	} else if (plain_name(name) && strcmp(name, "@") != 0) {
		/* refs/<name>, refs/tags, refs/heads, refs/remotes, refs/remotes/<name>/HEAD;
		 * an all-caps name could be a file in the git directory (FETCH_HEAD): git decides */
		static const char *const rules[][2] = { { "", "" }, { "refs/", "" }, { "refs/tags/", "" },
							{ "refs/heads/", "" }, { "refs/remotes/", "" },
							{ "refs/remotes/", "/HEAD" } };
		bool caps = true;
		for (const char *p = name; *p; p++)
			caps = caps && (isupper((unsigned char)*p) || *p == '_');
		for (size_t i = caps ? 6 : 0; i < 6; i++) {
			char *full = tt_asprintf("%s%s%s", rules[i][0], name, rules[i][1]);
			int r;
			if (!full)
				r = ASK;
			else if (i == 0 && strncmp(name, "refs/", 5) != 0)
				/* a file of that name in the git directory would win */
				r = present(g->git_dir, name) || present(g->common_dir, name) ? ASK : 0;
			else
				r = tt_gitnat_ref(g, full, hex);
			free(full);
			if (r != 0) {
				rc = r == 1 ? 1 : ASK;
				break;
			}
		}
	}
	free(name);
	return rc;
}

static int tree_entry(const tt_buf *tree, const char *name, size_t nl, char mode[8], char hex[65])
{
	const char *p = tree->ptr, *end = tree->ptr + tree->len;
	while (p < end) {
		const char *sp = memchr(p, ' ', (size_t)(end - p));
		const char *nul = sp ? memchr(sp, '\0', (size_t)(end - sp)) : NULL;
		if (!nul || end - nul - 1 < 20 || sp - p > 7)
			return ASK;
		if ((size_t)(nul - sp - 1) == nl && memcmp(sp + 1, name, nl) == 0) {
			memcpy(mode, p, (size_t)(sp - p));
			mode[sp - p] = '\0';
			tt_hex(hex, (const uint8_t *)nul + 1, 20);
			return 1;
		}
		p = nul + 21;
	}
	return 0;
}

int tt_gitnat_lookup(tt_gitnat *g, const char *spec, char type[16], char oid[65], tt_buf *data)
{
	if (!g->objects_ok)
		return ASK;
	const char *colon = strchr(spec, ':');
	size_t rl = colon ? (size_t)(colon - spec) : strlen(spec);
	const char *want = NULL;
	if (rl > 7 && memcmp(spec + rl - 7, "^{tree}", 7) == 0) {
		want = "tree";
		rl -= 7;
	} else if (rl > 9 && memcmp(spec + rl - 9, "^{commit}", 9) == 0) {
		want = "commit";
		rl -= 9;
	}
	if (colon && want)
		return ASK;
	if (colon)
		want = "tree";
	char hex[65];
	if (!rl || rev_hex(g, spec, rl, hex) != 1 || tt_gitnat_read(g, hex, type, data) != 1)
		return ASK;
	int rc = peel(g, hex, type, data, want);
	if (rc != 1)
		return rc;
	if (colon) {
		const char *path = colon + 1;
		if (!*path || path[0] == '/' || strstr(path, "//") || path[strlen(path) - 1] == '/')
			return ASK;
		for (const char *seg = path; *seg;) {
			const char *slash = strchr(seg, '/');
			size_t sl = slash ? (size_t)(slash - seg) : strlen(seg);
			char mode[8];
			if ((sl == 1 && seg[0] == '.') || (sl == 2 && seg[0] == '.' && seg[1] == '.'))
				return ASK;
			if (strcmp(type, "tree") != 0)
				return 0;  /* a file where a directory was asked for */
			int r = tree_entry(data, seg, sl, mode, hex);
			if (r != 1)
				return r;
			if (strcmp(mode, "160000") == 0)
				return ASK;  /* a submodule's commit: not in this repository */
			if (tt_gitnat_read(g, hex, type, data) != 1)
				return ASK;
			seg += sl + (slash != NULL);
		}
	}
	memcpy(oid, hex, 41);
	return 1;
}

/* ---- the index -------------------------------------------------------- */

int tt_gitnat_index_has(tt_gitnat *g, const char *const *paths, size_t n, bool *out)
{
	for (size_t i = 0; i < n; i++)
		out[i] = false;
	char *path = join(g->git_dir, "index");
	if (!path)
		return ASK;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return errno == ENOENT ? 0 : ASK;  /* no index: nothing is tracked */
	struct stat st;
	uint8_t *m = MAP_FAILED;
	if (fstat(fd, &st) == 0 && st.st_size >= 12 + 20)
		m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (m == MAP_FAILED)
		return ASK;
	const uint8_t *p = m, *end = m + st.st_size - 20;
	int rc = ASK;
	uint32_t version = be32(p + 4), count = be32(p + 8);
	tt_buf prev = TT_BUF_INIT;
	if (memcmp(p, "DIRC", 4) != 0 || version < 2 || version > 4)
		goto done;
	p += 12;
	for (uint32_t e = 0; e < count; e++) {
		const uint8_t *start = p;
		if (end - p < 62)
			goto done;
		uint32_t mode = be32(p + 24);
		uint16_t flags = (uint16_t)(p[60] << 8 | p[61]);
		p += 62;
		if (flags & 0x4000) {
			if (version < 3 || end - p < 2)
				goto done;
			p += 2;
		}
		if ((mode & 0170000) == 0040000)
			goto done;  /* a sparse index's directory entry */
		const uint8_t *nul;
		if (version == 4) {
			const uint8_t *q = p;
			if (q >= end)
				goto done;
			uint8_t c = *q++;
			size_t strip = c & 0x7f;
			while (c & 0x80) {
				if (q >= end || strip > ((size_t)1 << 40))
					goto done;
				c = *q++;
				strip = ((strip + 1) << 7) | (c & 0x7f);
			}
			if (strip > prev.len || !(nul = memchr(q, '\0', (size_t)(end - q))))
				goto done;
			tt_buf_truncate(&prev, prev.len - strip);
			tt_buf_put(&prev, q, (size_t)(nul - q));
			if (prev.failed)
				goto done;
			p = nul + 1;
		} else {
			if (!(nul = memchr(p, '\0', (size_t)(end - p))))
				goto done;
			tt_buf_reset(&prev);
			tt_buf_put(&prev, p, (size_t)(nul - p));
			if (prev.failed)
				goto done;
			size_t len = (size_t)(nul + 1 - start);
			p = start + ((len + 7) & ~(size_t)7);
			if (p > end)
				goto done;
		}
		for (size_t i = 0; i < n; i++)
			if (!out[i] && strcmp(prev.ptr, paths[i]) == 0)
				out[i] = true;
	}
	rc = 0;
done:
	if (rc < 0)
		for (size_t i = 0; i < n; i++)
			out[i] = false;
	tt_buf_release(&prev);
	munmap(m, (size_t)st.st_size);
	return rc;
}

/* ---- reachability ----------------------------------------------------- */

typedef struct oidset {
	uint8_t (*slots)[20];
	bool *used;
	size_t cap, n;
} oidset;

static size_t oid_slot(const uint8_t oid[20], size_t cap)
{
	uint64_t h;
	memcpy(&h, oid, sizeof h);
	return (size_t)h & (cap - 1);
}

/* 1 when added, 0 when already there, ASK out of memory. */
static int oidset_add(oidset *s, const uint8_t oid[20])
{
	if ((s->n + 1) * 2 > s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 1024;
		uint8_t (*slots)[20] = tt_calloc(cap, 20);
		bool *used = tt_calloc(cap, sizeof *used);
		if (!slots || !used) {
			free(slots);
			free(used);
			return ASK;
		}
		for (size_t i = 0; i < s->cap; i++)
			if (s->used[i]) {
				size_t j = oid_slot(s->slots[i], cap);
				while (used[j])
					j = (j + 1) & (cap - 1);
				used[j] = true;
				memcpy(slots[j], s->slots[i], 20);
			}
		free(s->slots);
		free(s->used);
		s->slots = slots;
		s->used = used;
		s->cap = cap;
	}
	size_t j = oid_slot(oid, s->cap);
	while (s->used[j]) {
		if (memcmp(s->slots[j], oid, 20) == 0)
			return 0;
		j = (j + 1) & (s->cap - 1);
	}
	s->used[j] = true;
	memcpy(s->slots[j], oid, 20);
	s->n++;
	return 1;
}

typedef struct walk {
	tt_gitnat *g;
	oidset seen;
	uint8_t (*stack)[20];
	size_t n, alloc;
	tt_buf data;
} walk;

static int walk_push_hex(walk *w, const char *hex)
{
	uint8_t oid[20];
	if (tt_unhex_lower(oid, hex, 20) != 0)
		return ASK;
	int r = oidset_add(&w->seen, oid);
	if (r <= 0)
		return r;
	if (TT_ARRAY_GROW(w->stack, w->alloc, w->n + 1) != 0)
		return ASK;
	memcpy(w->stack[w->n++], oid, 20);
	return 0;
}

/* A tip: peeled to its commit (a tag of a tree or a blob adds nothing). */
static int walk_tip(walk *w, const char *tip)
{
	char hex[65], type[16];
	memcpy(hex, tip, 41);
	if (tt_gitnat_read(w->g, hex, type, &w->data) != 1)
		return ASK;
	int r = peel(w->g, hex, type, &w->data, "commit");
	if (r < 0)
		return ASK;
	return r == 1 ? walk_push_hex(w, hex) : 0;
}

/* Call fn for every tip reachability starts from: every ref, this HEAD,
 * the main worktree's HEAD when this is a linked one, and every other
 * worktree's HEAD.  0, or ASK (also when fn says ASK). */
static int each_tip(tt_gitnat *g, int (*fn)(void *ctx, const char *hex), void *ctx)
{
	tt_gitnat_refent *refs = NULL;
	size_t nrefs = 0;
	char *wtdir = NULL;
	int rc = ASK;

	if (tt_gitnat_refs(g, "refs/", &refs, &nrefs) < 0)
		goto done;
	for (size_t i = 0; i < nrefs; i++)
		if (fn(ctx, refs[i].hex) < 0)
			goto done;
	{
		char hex[65];
		int r = tt_gitnat_ref(g, "HEAD", hex);
		if (r < 0 || (r == 1 && fn(ctx, hex) < 0))
			goto done;
		/* the main worktree's HEAD when this is a linked one */
		if (strcmp(g->git_dir, g->common_dir) != 0) {
			char *hp = join(g->common_dir, "HEAD");
			char *text = hp ? slurp(hp, NULL) : NULL;
			free(hp);
			if (!text)
				goto done;
			chomp_s(text);
			int hr = strncmp(text, "ref: ", 5) == 0 ? ref_depth(g, text + 5, hex, 1)
				 : is_hex40(text, strlen(text)) ? (memcpy(hex, text, 41), 1) : ASK;
			free(text);
			if (hr < 0 || (hr == 1 && fn(ctx, hex) < 0))
				goto done;
		}
		if (!(wtdir = join(g->common_dir, "worktrees")))
			goto done;
		DIR *d = opendir(wtdir);
		if (!d && errno != ENOENT)
			goto done;
		struct dirent *e;
		int bad = 0;
		while (d && !bad && (e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char *hp = tt_asprintf("%s/%s/HEAD", wtdir, e->d_name);
			char *rp = tt_asprintf("%s/%s/refs", wtdir, e->d_name);
			char *text = hp ? slurp(hp, NULL) : NULL;
			if (!hp || !rp || dir_nonempty(rp)) {
				bad = 1;
			} else if (text) {
				chomp_s(text);
				int hr = strncmp(text, "ref: ", 5) == 0 ? ref_depth(g, text + 5, hex, 1)
					 : is_hex40(text, strlen(text)) ? (memcpy(hex, text, 41), 1) : ASK;
				bad = hr < 0 || (hr == 1 && fn(ctx, hex) < 0);
			}
			free(hp);
			free(rp);
			free(text);
		}
		if (d)
			closedir(d);
		if (bad)
			goto done;
	}
	rc = 0;
done:
	free(wtdir);
	tt_gitnat_refs_free(refs, nrefs);
	return rc;
}

static int walk_tip_cb(void *ctx, const char *hex)
{
	return walk_tip(ctx, hex);
}

typedef struct tipset {
	char (*hex)[41];
	size_t n, alloc;
} tipset;

static int tip_collect(void *ctx, const char *hex)
{
	tipset *t = ctx;
	if (!is_hex40(hex, strlen(hex)) || TT_ARRAY_GROW(t->hex, t->alloc, t->n + 1) != 0)
		return ASK;
	memcpy(t->hex[t->n++], hex, 41);
	return 0;
}

static int cmp_hex41(const void *a, const void *b)
{
	return memcmp(a, b, 41);
}

int tt_gitnat_tips_token(tt_gitnat *g, char out[65])
{
	tipset t = { 0 };
	uint8_t d[32];
	int rc = ASK;
	out[0] = '\0';
	if (!g->walk_ok || each_tip(g, tip_collect, &t) < 0)
		goto done;
	if (t.n)
		qsort(t.hex, t.n, sizeof *t.hex, cmp_hex41);
	/* "reach1" and the sorted ids: the set, not the names, decides */
	{
		tt_buf b = TT_BUF_INIT;
		tt_buf_puts(&b, "reach1");
		for (size_t i = 0; i < t.n; i++)
			if (i == 0 || memcmp(t.hex[i], t.hex[i - 1], 41) != 0)
				tt_buf_printf(&b, "\n%s", t.hex[i]);
		if (!b.failed && tt_blake2b(d, sizeof d, b.ptr, b.len) == 0) {
			tt_hex(out, d, sizeof d);
			rc = 0;
		}
		tt_buf_release(&b);
	}
done:
	free(t.hex);
	return rc;
}

int tt_gitnat_reachable(tt_gitnat *g, const char *const *commits, size_t n, bool *out)
{
	walk w = { .g = g, .data = TT_BUF_INIT };
	oidset want = { 0 };
	size_t left = 0;
	int rc = ASK;
	for (size_t i = 0; i < n; i++)
		out[i] = false;
	if (!g->walk_ok)
		return ASK;
	for (size_t i = 0; i < n; i++) {
		uint8_t oid[20];
		if (commits[i] && is_hex40(commits[i], strlen(commits[i])) &&
		    tt_unhex_lower(oid, commits[i], 20) == 0) {
			int r = oidset_add(&want, oid);
			if (r < 0)
				goto done;
			left += (size_t)r;
		}
	}
	if (!left) {
		rc = 0;
		goto done;
	}
	if (each_tip(g, walk_tip_cb, &w) < 0)
		goto done;
	/* depth first from the tips, until every commit asked about is met */
	oidset met = { 0 };
	while (w.n && left) {
		uint8_t oid[20];
		memcpy(oid, w.stack[--w.n], 20);
		int t = 0;
		if (want.n) {
			size_t j = oid_slot(oid, want.cap);
			while (want.used[j]) {
				if (memcmp(want.slots[j], oid, 20) == 0) {
					if (oidset_add(&met, oid) == 1)
						left--;
					break;
				}
				j = (j + 1) & (want.cap - 1);
			}
		}
		if (!left)
			break;
		if (odb_read_raw(g, oid, &t, &w.data, 0) != 1 || t != 1) {
			free(met.slots);
			free(met.used);
			goto done;
		}
		for (const char *line = w.data.ptr; line < w.data.ptr + w.data.len && *line != '\n';) {
			const char *le = memchr(line, '\n', (size_t)(w.data.ptr + w.data.len - line));
			if (!le)
				break;
			if (le - line == 47 && memcmp(line, "parent ", 7) == 0) {
				char hex[41];
				memcpy(hex, line + 7, 40);
				hex[40] = '\0';
				if (walk_push_hex(&w, hex) < 0) {
					free(met.slots);
					free(met.used);
					goto done;
				}
			}
			line = le + 1;
		}
	}
	for (size_t i = 0; i < n; i++) {
		uint8_t oid[20];
		out[i] = false;
		if (commits[i] && is_hex40(commits[i], strlen(commits[i])) &&
		    tt_unhex_lower(oid, commits[i], 20) == 0 && met.n) {
			size_t j = oid_slot(oid, met.cap);
			while (met.used[j] && !out[i]) {
				out[i] = memcmp(met.slots[j], oid, 20) == 0;
				j = (j + 1) & (met.cap - 1);
			}
		}
	}
	free(met.slots);
	free(met.used);
	rc = 0;
done:
	if (rc < 0)
		for (size_t i = 0; i < n; i++)
			out[i] = false;
	free(want.slots);
	free(want.used);
	free(w.seen.slots);
	free(w.seen.used);
	free(w.stack);
	tt_buf_release(&w.data);
	return rc;
}
