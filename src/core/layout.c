/* core/layout.c - dataset paths and object keys (see layout.h). */
#include "core/layout.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"

static const char *const untracked[] = {
	TT_WORKSPACE_FILENAME, TT_OPS_FILENAME, TT_CACHE_DIR, TT_LOCK_FILENAME, TT_SECRETS_FILENAME,
};

char *tt_config_path(const char *root)
{
	return tt_path_join(root, TT_CONFIG_FILENAME);
}

char *tt_tether_path(const char *root, const char *name)
{
	char *dir = tt_path_join(root, TT_DIR);
	if (!dir || !name)
		return dir;
	char *p = tt_path_join(dir, name);
	free(dir);
	return p;
}

char *tt_find_dataset_root(const char *start)
{
	return tt_find_up(start, TT_CONFIG_FILENAME, true);
}

/* Python's str.isspace() for the code points a key might carry. */
static bool is_unicode_space(unsigned cp)
{
	return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 ||
	       cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
	       cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* Decode one UTF-8 sequence; returns its length (1 for a stray byte). */
static size_t utf8_next(const unsigned char *s, unsigned *cp)
{
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	size_t n = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 1;
	unsigned v = n == 4 ? s[0] & 0x07 : n == 3 ? s[0] & 0x0f : s[0] & 0x1f;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) {
			*cp = 0xfffd;
			return 1;
		}
		v = (v << 6) | (s[i] & 0x3f);
	}
	*cp = n == 1 ? 0xfffd : v;
	return n;
}

int tt_validate_key(const char *key, tt_error *err)
{
	size_t n = strlen(key);
	bool bad = n == 0 || key[0] == '/' || key[n - 1] == '/' || strchr(key, '\\') != NULL;
	/* Segments: none empty, ".", "..", or starting with a drive letter. */
	for (const char *seg = key; !bad;) {
		const char *end = strchr(seg, '/');
		size_t len = end ? (size_t)(end - seg) : strlen(seg);
		if (len == 0 || (len == 1 && seg[0] == '.') || (len == 2 && seg[0] == '.' && seg[1] == '.'))
			bad = true;
		if (len >= 2 && isalpha((unsigned char)seg[0]) && seg[1] == ':')
			bad = true;
		if (!end)
			break;
		seg = end + 1;
	}
	for (const unsigned char *p = (const unsigned char *)key; !bad && *p;) {
		unsigned cp;
		p += utf8_next(p, &cp);
		if (cp < 32 || (cp != ' ' && is_unicode_space(cp)))
			bad = true;
	}
	if (!bad)
		return 0;
	tt_buf b = TT_BUF_INIT;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		if (*p < 32 || *p == '\'' || *p == '\\')
			tt_buf_printf(&b, *p == '\'' ? "\\'" : *p == '\\' ? "\\\\" : "\\x%02x", *p);
		else
			tt_buf_putc(&b, (char)*p);
	}
	tt_error_set(err, TT_ECONFIG, "unsafe object key: '%s'", b.ptr);
	tt_error_hint(err, "a key is a relative slash-separated name: no leading or trailing '/', "
			   "no '..', no '\\', no drive letter, no control characters");
	tt_buf_release(&b);
	return TT_ECONFIG;
}

int tt_key_relpath(char **out, const char *key, tt_error *err)
{
	int rc = tt_validate_key(key, err);
	if (rc)
		return rc;
	*out = tt_asprintf("%s/%s.toml", TT_OBJECTS_DIR, key);
	return *out ? 0 : tt_error_oom(err);
}

/* --- links out of the dataset ---------------------------------------------- */

static int link_error(const char *root, const char *rel, tt_error *err)
{
	char *full = tt_path_join(root, rel);
	char target[PATH_MAX];
	ssize_t n = full ? readlink(full, target, sizeof target - 1) : -1;
	free(full);
	if (n < 0)
		n = 0;
	target[n] = '\0';
	tt_error_set(err, TT_ECONFIG,
		     "%s is a symbolic link%s%s%s: tether reads and writes only inside the dataset, and "
		     "a link (one a clone brought, say) would lead it to files elsewhere", rel,
		     n ? " (to " : "", target, n ? ")" : "");
	tt_error_hint(err, "put the real directory or file there instead of the link (a committed "
			   "link: `git rm` it and restore what it replaced from history), then rerun");
	return TT_ECONFIG;
}

int tt_refuse_links(const char *root, const char *rel, tt_error *err)
{
	char *sub = tt_strdup(rel);
	int rc = 0;
	if (!sub)
		return tt_error_oom(err);
	for (char *p = sub;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		char c = *p;
		*p = '\0';
		if (*sub) {
			char *full = tt_path_join(root, sub);
			struct stat st;
			if (!full) {
				rc = tt_error_oom(err);
				break;
			}
			int got = lstat(full, &st);
			free(full);
			if (got != 0)
				break; /* nothing there, nor below it */
			if (S_ISLNK(st.st_mode)) {
				rc = link_error(root, sub, err);
				break;
			}
		}
		if (!c)
			break;
		*p = c;
	}
	free(sub);
	return rc;
}

/* Every entry of <root>/<rel> (one level), which must not be a link. */
static int refuse_links_in(const char *root, const char *rel, tt_error *err)
{
	char *dir = tt_path_join(root, rel);
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	int rc = 0;
	if (!dir)
		return tt_error_oom(err);
	free(dir);
	if (!d)
		return 0; /* absent (or unreadable: the reader that needs it says so) */
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (e->d_type != DT_LNK && e->d_type != DT_UNKNOWN)
			continue;
		char *sub = tt_asprintf("%s/%s", rel, e->d_name);
		rc = sub ? tt_refuse_links(root, sub, err) : tt_error_oom(err);
		free(sub);
	}
	closedir(d);
	return rc;
}

int tt_check_dataset_links(const char *root, tt_error *err)
{
	int rc;
	if ((rc = tt_refuse_links(root, TT_CONFIG_FILENAME, err)) < 0 ||
	    (rc = tt_refuse_links(root, TT_DIR, err)) < 0 ||
	    (rc = refuse_links_in(root, TT_DIR, err)) < 0 ||
	    (rc = refuse_links_in(root, TT_DIR "/" TT_CACHE_DIR, err)) < 0 ||
	    (rc = refuse_links_in(root, TT_DIR "/" TT_LISTINGS_DIR, err)) < 0)
		return rc;
	return 0;
}

/* --- temporaries a crash left ------------------------------------------------- */

static bool older(const struct stat *st, const struct timespec *t)
{
	return st->st_mtim.tv_sec < t->tv_sec ||
	       (st->st_mtim.tv_sec == t->tv_sec && st->st_mtim.tv_nsec < t->tv_nsec);
}

/* Sweep dir (only_base: only the temporaries of that one file), down to
 * depth more levels of real directories. */
static void sweep_dir(const char *dir, const char *only_base, int depth, const struct timespec *before)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t bl = only_base ? strlen(only_base) : 0;
	if (!d)
		return;
	while ((e = readdir(d)) != NULL) {
		const char *name = e->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		bool temp = tt_is_atomic_temp(name) &&
			    (!only_base || (strncmp(name + 1, only_base, bl) == 0 && name[1 + bl] == '.' &&
					    strlen(name) == 1 + bl + 1 + 16 + 4));
		if (!temp && depth <= 0)
			continue;
		char *full = tt_path_join(dir, name);
		struct stat st;
		if (full && lstat(full, &st) == 0) {
			if (temp && S_ISREG(st.st_mode) && older(&st, before))
				unlink(full);
			else if (!temp && depth > 0 && S_ISDIR(st.st_mode))
				sweep_dir(full, NULL, depth - 1, before);
		}
		free(full);
	}
	closedir(d);
}

void tt_sweep_temps(const char *root, const struct timespec *before)
{
	char *tdir = tt_path_join(root, TT_DIR);
	char *objects = tdir ? tt_path_join(tdir, TT_OBJECTS_DIR) : NULL;
	char *listings = tdir ? tt_path_join(tdir, TT_LISTINGS_DIR) : NULL;
	/* A link is refused before anything is read; never sweep through one. */
	if (objects && listings && tt_refuse_links(root, TT_DIR "/" TT_OBJECTS_DIR, NULL) == 0 &&
	    tt_refuse_links(root, TT_DIR "/" TT_LISTINGS_DIR, NULL) == 0) {
		sweep_dir(root, TT_CONFIG_FILENAME, 0, before);
		sweep_dir(tdir, NULL, 0, before);
		sweep_dir(objects, NULL, 64, before);
		sweep_dir(listings, NULL, 0, before);
	}
	/* The hash cache is rewritten without the checkout lock, under an flock
	 * on its directory (backends/file/file_hash.c): sweep it holding that. */
	char *cache = tdir ? tt_path_join(tdir, TT_CACHE_DIR) : NULL;
	int fd = cache && tt_refuse_links(root, TT_DIR "/" TT_CACHE_DIR, NULL) == 0
			 ? open(cache, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
	if (fd >= 0) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			sweep_dir(cache, NULL, 0, before);
		close(fd); /* releases the flock */
	}
	free(cache);
	free(tdir);
	free(objects);
	free(listings);
}

/* Whether text has line (a "\r\n" ending counts as "\n"). */
static bool has_line(const char *text, const char *line)
{
	for (const char *p = text; *p;) {
		const char *e = strchr(p, '\n');
		size_t raw = e ? (size_t)(e - p) : strlen(p), l = raw;
		if (l && p[l - 1] == '\r')
			l--;
		if (l == strlen(line) && memcmp(p, line, l) == 0)
			return true;
		p = e ? e + 1 : p + raw;
	}
	return false;
}

int tt_ensure_ignored(const char *root, bool only_present, tt_error *err)
{
	char *path = tt_tether_path(root, ".gitignore");
	tt_buf text = TT_BUF_INIT, out = TT_BUF_INIT;
	int rc = 0;
	bool exists;

	if (!path)
		return tt_error_oom(err);
	exists = tt_is_file(path);
	if (exists && (rc = tt_read_file(path, &text, 1 << 20, err)) < 0)
		goto done;
	/* Keep the file's lines as they are, then append what is missing. */
	tt_buf_put(&out, text.ptr, text.len);
	if (out.len && out.ptr[out.len - 1] != '\n')
		tt_buf_putc(&out, '\n');
	bool added = false;
	for (size_t i = 0; i < sizeof untracked / sizeof untracked[0]; i++) {
		char line[64];
		snprintf(line, sizeof line, "/%s", untracked[i]);
		if (has_line(text.ptr, line))
			continue;
		if (only_present) {
			char *f = tt_tether_path(root, untracked[i]);
			bool present = f && tt_exists(f);
			free(f);
			if (!present)
				continue;
		}
		tt_buf_printf(&out, "%s\n", line);
		added = true;
	}
	/* The temporaries a killed atomic write leaves, at every level of
	 * .tether: a new file gets the pattern, an old one when it is being
	 * rewritten anyway (tether's staging leaves them out regardless). */
	if (added || (!exists && !only_present)) {
		if (!has_line(text.ptr, TT_TEMP_PATTERN))
			tt_buf_printf(&out, "%s\n", TT_TEMP_PATTERN);
	}
	if ((rc = tt_buf_check(&out, err, ".tether/.gitignore")) < 0)
		goto done;
	if (added || (!exists && !only_present))
		rc = tt_write_file_atomic(path, out.ptr, out.len, 0644, err);
done:
	free(path);
	tt_buf_release(&text);
	tt_buf_release(&out);
	return rc;
}
