/*
 * backends/file/watch.c - directory states from Watchman (see watch.h).
 *
 * Watchman's JSON protocol: one JSON array per request, one JSON object
 * per response, each ended by a newline, on the unix socket `watchman
 * get-sockname` names ($WATCHMAN_SOCK first).  The socket is found once
 * per process; every read and write has a deadline, so a server that
 * stops answering costs a timeout and a walk, never a hang.
 *
 * The snapshot file (native byte order, made and read on one machine):
 *     a header line: a JSON object {"v", "root", "watch", "rel", "clock",
 *         "count", "size", "digest", "links_through", "stream"} and '\n';
 *     zero bytes up to a multiple of 8;
 *     sizes   count x u64: each row's size;
 *     offsets count x u64: where each row starts in the stream;
 *     stream  per row, path NUL token NUL: the bytes the digest hashes.
 * A changed refresh feeds the digest the stream's unchanged spans straight
 * from the mapped file, with the changed rows in between.
 */
#define _GNU_SOURCE
#include "backends/file/watch.h"

#include <blake2.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/openat2.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "backends/kit.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/mem.h"
#include "util/proc.h"

#define SNAP_VERSION 1
#define SNAP_DIR "file-watch"
/* Each call to Watchman: how long it may take (TETHER_WATCHMAN_TIMEOUT_MS
 * overrides), and how long Watchman may take to see the file system
 * settle (its sync cookie). */
#define CALL_TIMEOUT_MS 20000
#define SYNC_TIMEOUT_MS 10000
#define HEADER_MAX ((size_t)64 << 10)
/* More changes than this and a walk is cheaper (or the snapshot is
 * rewritten). */
#define CHANGES_MAX(n) ((n) / 4 > 65536 ? (n) / 4 : 65536)
#define REWRITE_AT(n) ((n) / 64 > 1024 ? (n) / 64 : 1024)

struct tt_fwatch {
	char *snap_dir;     /* .tether/cache/file-watch, or NULL */
	char *sock;         /* the socket path once found */
	int fd;             /* connected, or -1 */
	int timeout_ms;     /* per call */
	bool unusable;      /* Watchman failed this process once: walk from now on */
	char *why_unusable;
	pthread_mutex_t lock;   /* the socket and the fields above */
};

/* What the walk that follows a 0 stores with its rows. */
struct tt_fwatch_pending {
	char *root, *watch, *rel, *clock;
	long recrawls;
};

/* --- traces ------------------------------------------------------------------------ */

#define trace(root, ...) tt_kit_note("file", (root), __VA_ARGS__)

/* --- the engine -------------------------------------------------------------------- */

int tt_fwatch_new(tt_fwatch **out, const char *cache_dir, tt_error *err)
{
	tt_fwatch *w = tt_calloc(1, sizeof *w);
	if (!w || (cache_dir && !(w->snap_dir = tt_path_join(cache_dir, SNAP_DIR)))) {
		free(w);
		return tt_error_oom(err);
	}
	if (pthread_mutex_init(&w->lock, NULL) != 0) {
		free(w->snap_dir);
		free(w);
		return tt_error_set(err, TT_ERROR, "cannot create a mutex");
	}
	w->fd = -1;
	w->timeout_ms = CALL_TIMEOUT_MS;
	{
		const char *t = getenv("TETHER_WATCHMAN_TIMEOUT_MS");
		long v = t ? strtol(t, NULL, 10) : 0;
		if (v > 0 && v < 3600000)
			w->timeout_ms = (int)v;
	}
	*out = w;
	return 0;
}

static void pending_free(tt_fwatch_pending *p)
{
	if (!p)
		return;
	free(p->root);
	free(p->watch);
	free(p->rel);
	free(p->clock);
	free(p);
}

/* A pending store of root's rows with clock (NULL when out of memory). */
static tt_fwatch_pending *pending_new(const char *root, const char *watch, const char *rel,
				      const char *clock, long recrawls)
{
	tt_fwatch_pending *p = tt_calloc(1, sizeof *p);
	if (!p)
		return NULL;
	p->root = tt_strdup(root);
	p->watch = tt_strdup(watch);
	p->rel = tt_strdup(rel);
	p->clock = tt_strdup(clock);
	p->recrawls = recrawls;
	if (!p->root || !p->watch || !p->rel || !p->clock) {
		pending_free(p);
		return NULL;
	}
	return p;
}

void tt_fwatch_free(tt_fwatch *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	pthread_mutex_destroy(&w->lock);
	free(w->snap_dir);
	free(w->sock);
	free(w->why_unusable);
	free(w);
}

/* --- the protocol ------------------------------------------------------------------ */

static int64_t mono_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Give up on Watchman for the rest of this process (why: for the trace). */
static void set_unusable(tt_fwatch *w, const char *why)
{
	if (w->fd >= 0)
		close(w->fd);
	w->fd = -1;
	w->unusable = true;
	free(w->why_unusable);
	w->why_unusable = tt_strdup(why);
}

/* The socket: $WATCHMAN_SOCK, else what `watchman get-sockname` says (which
 * starts the server when none runs).  NULL with *why set when there is none. */
static char *find_socket(int timeout_ms, const char **why)
{
	const char *env = getenv("WATCHMAN_SOCK");
	char *exe, *sock = NULL;
	tt_proc_result r;
	tt_error err = TT_ERROR_INIT;
	json_t *doc;

	if (env && *env)
		return tt_strdup(env);
	if (!(exe = tt_proc_which("watchman"))) {
		*why = "Watchman is not installed (no `watchman` on PATH)";
		return NULL;
	}
	const char *argv[] = { exe, "--no-pretty", "get-sockname", NULL };
	tt_proc_opts o = { .argv = argv, 	.timeout_ms = timeout_ms, .max_out = 1 << 16,
			   .max_err = 1 << 16 };
	tt_proc_result_init(&r);
	if (tt_proc_run(&o, &r, &err) != 0 || r.status != 0) {
		*why = "`watchman get-sockname` failed";
	} else if (!(doc = json_loadb(r.out.ptr, r.out.len, 0, NULL)) ||
		   !json_is_string(json_object_get(doc, "sockname"))) {
		*why = "`watchman get-sockname` gave no socket";
		json_decref(doc);
	} else {
		sock = tt_strdup(json_string_value(json_object_get(doc, "sockname")));
		json_decref(doc);
	}
	tt_proc_result_release(&r);
	tt_error_clear(&err);
	free(exe);
	return sock;
}

static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		int left = (int)(deadline - mono_ms());
		struct pollfd p = { .fd = fd, .events = events };
		if (left <= 0)
			return -1;
		int n = poll(&p, 1, left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -1;
	}
}

/* One request and its response (a JSON object without "error").  NULL
 * with *why set otherwise; a failure of the socket makes w unusable. */
static json_t *call(tt_fwatch *w, json_t *req, char *why, size_t whysz)
{
	char *text = NULL;
	tt_buf in = TT_BUF_INIT;
	json_t *resp = NULL;
	int64_t deadline = mono_ms() + w->timeout_ms;

	if (w->fd < 0) {
		struct sockaddr_un a;
		const char *reason = NULL;
		if (!w->sock && !(w->sock = find_socket(w->timeout_ms, &reason))) {
			snprintf(why, whysz, "%s", reason ? reason : "out of memory");
			set_unusable(w, why);
			goto done;
		}
		memset(&a, 0, sizeof a);
		a.sun_family = AF_UNIX;
		if (strlen(w->sock) >= sizeof a.sun_path ||
		    (w->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) < 0) {
			snprintf(why, whysz, "cannot open a socket to Watchman");
			set_unusable(w, why);
			goto done;
		}
		memcpy(a.sun_path, w->sock, strlen(w->sock) + 1);
		if (connect(w->fd, (struct sockaddr *)&a, sizeof a) != 0) {
			snprintf(why, whysz, "cannot connect to Watchman's socket: %s", strerror(errno));
			set_unusable(w, why);
			goto done;
		}
	}
	if (!(text = json_dumps(req, JSON_COMPACT))) {
		snprintf(why, whysz, "out of memory");
		goto done;
	}
	{
		size_t len = strlen(text), off = 0;
		text[len] = '\0';
		while (off < len + 1) {
			const char *p = off < len ? text + off : "\n";
			size_t n = off < len ? len - off : 1;
			ssize_t k;
			if (wait_fd(w->fd, POLLOUT, deadline) != 0) {
				snprintf(why, whysz, "Watchman did not take the request in %d ms", w->timeout_ms);
				set_unusable(w, why);
				goto done;
			}
			k = send(w->fd, p, n, MSG_NOSIGNAL);
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				snprintf(why, whysz, "writing to Watchman's socket: %s", strerror(errno));
				set_unusable(w, why);
				goto done;
			}
			off += (size_t)k;
		}
	}
	for (;;) {
		char *nl;
		ssize_t k;
		size_t scan = in.len;
		if (tt_buf_grow(&in, 1 << 16) != 0) {
			snprintf(why, whysz, "out of memory");
			set_unusable(w, why);
			goto done;
		}
		if (wait_fd(w->fd, POLLIN, deadline) != 0) {
			snprintf(why, whysz, "Watchman did not answer in %d ms", w->timeout_ms);
			set_unusable(w, why);
			goto done;
		}
		k = recv(w->fd, in.ptr + in.len, 1 << 16, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			snprintf(why, whysz, "Watchman closed its socket");
			set_unusable(w, why);
			goto done;
		}
		in.len += (size_t)k;
		if (!(nl = memchr(in.ptr + scan, '\n', in.len - scan)))
			continue;
		size_t line = (size_t)(nl - in.ptr);
		json_decref(resp);
		resp = json_loadb(in.ptr, line, 0, NULL);
		memmove(in.ptr, nl + 1, in.len - line - 1);
		in.len -= line + 1;
		if (!resp) {
			snprintf(why, whysz, "Watchman's answer is not JSON");
			set_unusable(w, why);
			goto done;
		}
		/* a unilateral message (a subscription's, a log) is not ours */
		if (json_is_true(json_object_get(resp, "unilateral")))
			continue;
		if (in.len) { /* more than one response to one request */
			snprintf(why, whysz, "Watchman answered out of turn");
			set_unusable(w, why);
			json_decref(resp);
			resp = NULL;
		}
		break;
	}
	if (resp && json_object_get(resp, "error")) {
		const char *e = json_string_value(json_object_get(resp, "error"));
		snprintf(why, whysz, "Watchman: %s", e ? e : "an error");
		json_decref(resp);
		resp = NULL;
	}
done:
	free(text);
	tt_buf_release(&in);
	return resp;
}

/* --- the snapshot file ------------------------------------------------------------- */

static char *snap_path(const tt_fwatch *w, const char *root)
{
	uint8_t d[16];
	char hex[33], name[48];
	if (!w->snap_dir || tt_blake2b(d, sizeof d, root, strlen(root)) != 0)
		return NULL;
	tt_hex(hex, d, sizeof d);
	snprintf(name, sizeof name, "%s.snap", hex);
	return tt_path_join(w->snap_dir, name);
}

typedef struct snap {
	json_t *hdr;
	uint64_t count, size, stream_len;
	const uint64_t *sizes, *offs;
	const char *stream;
	void *map;
	size_t map_len;
} snap;

static void snap_close(snap *s)
{
	json_decref(s->hdr);
	if (s->map)
		munmap(s->map, s->map_len);
	memset(s, 0, sizeof *s);
}

static uint64_t hdr_u64(const json_t *hdr, const char *k, bool *ok)
{
	json_t *v = json_object_get(hdr, k);
	if (!json_is_integer(v) || json_integer_value(v) < 0) {
		*ok = false;
		return 0;
	}
	return (uint64_t)json_integer_value(v);
}

static const char *hdr_str(const json_t *hdr, const char *k, bool *ok)
{
	const char *v = json_string_value(json_object_get(hdr, k));
	if (!v)
		*ok = false;
	return v ? v : "";
}

/* Open and map path: 1 when it is a snapshot of this version whose sizes
 * add up; 0 (with *why) otherwise. */
static int snap_open(const char *path, snap *s, const char **why)
{
	int fd;
	struct stat st;
	char *nl;
	size_t body;
	bool ok = true;

	memset(s, 0, sizeof *s);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		*why = "no rows stored with a Watchman clock yet";
		return 0;
	}
	if (fstat(fd, &st) != 0 || st.st_size <= 0 ||
	    (s->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED) {
		s->map = NULL;
		close(fd);
		*why = "the stored rows cannot be read";
		return 0;
	}
	close(fd);
	s->map_len = (size_t)st.st_size;
	nl = memchr(s->map, '\n', s->map_len < HEADER_MAX ? s->map_len : HEADER_MAX);
	if (!nl || !(s->hdr = json_loadb(s->map, (size_t)(nl - (char *)s->map), 0, NULL)) ||
	    hdr_u64(s->hdr, "v", &ok) != SNAP_VERSION) {
		*why = "the stored rows are of another version";
		snap_close(s);
		return 0;
	}
	s->count = hdr_u64(s->hdr, "count", &ok);
	s->size = hdr_u64(s->hdr, "size", &ok);
	s->stream_len = hdr_u64(s->hdr, "stream", &ok);
	body = ((size_t)(nl - (char *)s->map) + 1 + 7) & ~(size_t)7;
	if (!ok || s->count > (SIZE_MAX - body) / 16 ||
	    s->map_len != body + s->count * 16 + s->stream_len ||
	    (s->stream_len && ((const char *)s->map)[s->map_len - 1] != '\0')) {
		*why = "the stored rows are damaged";
		snap_close(s);
		return 0;
	}
	s->sizes = (const uint64_t *)((char *)s->map + body);
	s->offs = s->sizes + s->count;
	s->stream = (const char *)(s->offs + s->count);
	return 1;
}

/* The header line and body of a snapshot of rows into out. */
static int snap_build(tt_buf *out, const char *root, const char *watch, const char *rel,
		      const char *clock, uint64_t count, uint64_t size, const char *digest,
		      uint64_t links_through, long recrawls, const tt_buf *sizes, const tt_buf *offs,
		      const tt_buf *stream)
{
	json_t *hdr = json_pack("{s:i, s:I, s:s, s:s, s:s, s:s, s:I, s:I, s:s, s:I, s:I}", "v", SNAP_VERSION,
				"recrawls", (json_int_t)recrawls,
				"root", root, "watch", watch, "rel", rel, "clock", clock, "count",
				(json_int_t)count, "size", (json_int_t)size, "digest", digest,
				"links_through", (json_int_t)links_through, "stream",
				(json_int_t)stream->len);
	char *text = hdr ? json_dumps(hdr, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
	json_decref(hdr);
	if (!text)
		return -1;
	tt_buf_puts(out, text);
	tt_buf_putc(out, '\n');
	free(text);
	while (out->len % 8)
		tt_buf_putc(out, '\0');
	tt_buf_put(out, sizes->ptr, sizes->len);
	tt_buf_put(out, offs->ptr, offs->len);
	tt_buf_put(out, stream->ptr, stream->len);
	return out->failed ? -1 : 0;
}

static int snap_write(tt_fwatch *w, const char *root, const tt_buf *data)
{
	tt_error err = TT_ERROR_INIT;
	char *path = snap_path(w, root);
	int rc = -1;
	if (path && tt_mkdirs(w->snap_dir, 0755, &err) == 0 &&
	    tt_write_file_atomic(path, data->ptr, data->len, 0644, &err) == 0)
		rc = 0;
	tt_error_clear(&err);
	free(path);
	return rc;
}

static void snap_remove(tt_fwatch *w, const char *root)
{
	char *path = snap_path(w, root);
	if (path)
		unlink(path);
	free(path);
}

/* --- changes ----------------------------------------------------------------------- */

/* One changed path, as it is now. */
typedef struct change {
	const char *path;       /* relative to the root */
	enum { CH_GONE, CH_ROW, CH_DIR } what;
	uint64_t size;
	char token[TT_FILE_TOKEN_MAX];
	bool hash;              /* a file: token to come from the hashing engine */
	struct stat st;
} change;

static int by_path(const void *pa, const void *pb)
{
	const change *a = pa, *b = pb;
	return strcmp(a->path, b->path);
}

/* The first row whose path is not below key (a lower bound). */
static size_t lower_bound(const snap *s, const char *key)
{
	size_t lo = 0, hi = s->count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (strcmp(s->stream + s->offs[mid], key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

static bool row_is(const snap *s, size_t i, const char *path)
{
	return i < s->count && strcmp(s->stream + s->offs[i], path) == 0;
}

/* Rows [*lo, *hi) below directory path ("path/..."). */
static void rows_under(const snap *s, const char *path, tt_buf *scratch, size_t *lo, size_t *hi)
{
	tt_buf_reset(scratch);
	tt_buf_puts(scratch, path);
	tt_buf_putc(scratch, '/');
	*lo = lower_bound(s, scratch->ptr);
	scratch->ptr[scratch->len - 1] = '/' + 1;
	*hi = lower_bound(s, scratch->ptr);
}

static long open_beneath(int rootfd, const char *rel)
{
	struct open_how how;
	memset(&how, 0, sizeof how);
	how.flags = O_PATH | O_DIRECTORY | O_CLOEXEC;
	how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
	return syscall(SYS_openat2, rootfd, rel, &how, sizeof how);
}

/*
 * What c->path is now, by the walk's rules.  0, or 1 with *why when only a
 * walk can say (a new directory, a symlink read through, an error to be
 * reported as the walk reports it).
 */
static int classify(int rootfd, change *c, const char **why)
{
	const char *slash = strrchr(c->path, '/');
	const char *name = slash ? slash + 1 : c->path;
	int dfd = rootfd;
	int rc = 0;

	c->what = CH_GONE;
	if (slash) {
		char *parent = tt_strndup(c->path, (size_t)(slash - c->path));
		long fd = parent ? open_beneath(rootfd, parent) : -1;
		int e = errno;
		free(parent);
		if (fd < 0) {
			if (!parent) {
				*why = "out of memory";
				return 1;
			}
			/* under a symlink or a file now, or gone: not in a walk */
			if (e == ENOENT || e == ENOTDIR || e == ELOOP || e == EXDEV)
				return 0;
			*why = e == ENOSYS ? "this kernel has no openat2" : "a changed directory cannot be opened";
			return 1;
		}
		dfd = (int)fd;
	}
	if (fstatat(dfd, name, &c->st, AT_SYMLINK_NOFOLLOW) != 0) {
		if (errno != ENOENT && errno != ENOTDIR) {
			*why = "a changed path cannot be read";
			rc = 1;
		}
		goto done;
	}
	if (S_ISDIR(c->st.st_mode)) {
		c->what = CH_DIR;
	} else if (S_ISREG(c->st.st_mode)) {
		if (!slash && strcmp(name, TT_FILE_OWNER_MARKER) == 0)
			goto done;
		c->what = CH_ROW;
		c->hash = true;
		c->size = (uint64_t)c->st.st_size;
	} else if (S_ISLNK(c->st.st_mode)) {
		struct stat t;
		int errnum = 0;
		if (fstatat(dfd, name, &t, 0) == 0 && S_ISREG(t.st_mode)) {
			*why = "a symlink to a file appeared (a walk reads it through)";
			rc = 1;
			goto done;
		}
		if (fstatat(dfd, name, &t, 0) != 0 && errno != ENOENT) {
			*why = "a changed symlink cannot be followed";
			rc = 1;
			goto done;
		}
		if (tt_file_link_token(dfd, name, c->token, &errnum) != 0) {
			*why = "a changed symlink cannot be read";
			rc = 1;
			goto done;
		}
		c->what = CH_ROW;
		c->size = 0;
	}
	/* FIFOs, sockets, devices: not files (CH_GONE) */
done:
	if (dfd != rootfd)
		close(dfd);
	return rc;
}

/* How many times Watchman has recrawled the watch an answer is about (it
 * says so in a "warning" on every answer once it has): 0 when there is no
 * warning, -1 for a warning of another kind. */
static long recrawls_of(const json_t *resp)
{
	static const char lead[] = "Recrawled this watch ";
	const char *warn = json_string_value(json_object_get(resp, "warning"));
	const char *p;
	if (!warn)
		return 0;
	if (!(p = strstr(warn, lead)))
		return -1;
	p += sizeof lead - 1;
	char *end;
	long n = strtol(p, &end, 10);
	return end != p && n > 0 ? n : -1;
}

/* --- the refresh ------------------------------------------------------------------- */

static bool same(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

/* The file system of fd is a network or FUSE one: inotify misses what
 * other machines do there. */
static const char *remote_fs(const char *root)
{
	struct statfs sf;
	if (statfs(root, &sf) != 0)
		return "its file system cannot be asked";
	switch ((unsigned long)sf.f_type) {
	case 0x6969UL:      /* NFS */
	case 0x517BUL:      /* SMB */
	case 0xFF534D42UL:  /* CIFS */
	case 0xFE534D42UL:  /* SMB2 */
	case 0x65735546UL:  /* FUSE */
	case 0x00C36400UL:  /* Ceph */
	case 0x01021997UL:  /* 9p */
	case 0x5346414FUL:  /* AFS */
	case 0x73757245UL:  /* Coda */
	case 0x47504653UL:  /* GPFS */
	case 0x0BD00BD0UL:  /* Lustre */
		return "it is on a network or FUSE file system, whose changes Watchman cannot see";
	default:
		return NULL;
	}
}

/* Watchman leaves the insides of these out of every answer when they are
 * at the top of the watch; a .watchmanconfig can leave out more. */
static const char *ignored_by_watchman(const char *watch, const char *rel)
{
	static const char *const vcs[] = { ".git", ".hg", ".svn", ".watchmanconfig" };
	tt_buf p = TT_BUF_INIT;
	const char *why = NULL;
	for (size_t i = 0; i < sizeof vcs / sizeof *vcs && !why; i++) {
		size_t n = strlen(vcs[i]);
		if (strncmp(rel, vcs[i], n) == 0 && (rel[n] == '/' || rel[n] == '\0'))
			why = "it is inside a directory Watchman ignores";
		else if (i < 3 && *rel == '\0') {
			tt_buf_reset(&p);
			tt_buf_printf(&p, "%s/%s", watch, vcs[i]);
			if (!p.failed && tt_exists(p.ptr))
				why = "it holds a .git, .hg or .svn directory, whose insides Watchman ignores";
		} else if (i == 3) {
			tt_buf_reset(&p);
			tt_buf_printf(&p, "%s/%s", watch, vcs[i]);
			if (!p.failed && tt_exists(p.ptr))
				why = "its watch has a .watchmanconfig, which can make Watchman ignore paths";
		}
	}
	tt_buf_release(&p);
	return why;
}

/* Whether this Watchman has what is used here; the watch of root. */
static bool watch_of(tt_fwatch *w, const char *root, char **watch, char **rel, char *why,
		     size_t whysz)
{
	json_t *req, *resp;
	*watch = *rel = NULL;
	if (w->fd < 0) {
		req = json_pack("[s, {s:[s, s]}]", "version", "required", "cmd-watch-project",
				"relative_root");
		resp = req ? call(w, req, why, whysz) : NULL;
		json_decref(req);
		if (!resp) {
			if (!w->unusable) { /* an error answer: it lacks a capability */
				char msg[560]; /* (why holds up to 511 bytes) */
				snprintf(msg, sizeof msg, "Watchman is too old (%s)", why);
				snprintf(why, whysz, "%.*s", (int)(whysz - 1), msg);
				set_unusable(w, why);
			}
			return false;
		}
		json_decref(resp);
	}
	req = json_pack("[s, s]", "watch-project", root);
	resp = req ? call(w, req, why, whysz) : NULL;
	json_decref(req);
	if (!resp)
		return false;
	const char *wr = json_string_value(json_object_get(resp, "watch"));
	const char *rp = json_string_value(json_object_get(resp, "relative_path"));
	const char *warn = json_string_value(json_object_get(resp, "warning"));
	(void)warn; /* a recrawl's warning: judged against the stored clock's (recrawls_of) */
	if (!wr) {
		snprintf(why, whysz, "Watchman named no watch");
		json_decref(resp);
		return false;
	}
	*watch = tt_strdup(wr);
	*rel = tt_strdup(rp ? rp : "");
	json_decref(resp);
	if (!*watch || !*rel) {
		free(*watch);
		free(*rel);
		*watch = *rel = NULL;
		snprintf(why, whysz, "out of memory");
		return false;
	}
	return true;
}

static json_t *query_since(tt_fwatch *w, const char *watch, const char *rel, const char *clock,
			   char *why, size_t whysz)
{
	json_t *q = json_pack("{s:s, s:[s], s:i, s:b}", "since", clock, "fields", "name",
			      "sync_timeout", SYNC_TIMEOUT_MS, "empty_on_fresh_instance", 1);
	json_t *req, *resp;
	if (q && *rel)
		json_object_set_new(q, "relative_root", json_string(rel));
	req = q ? json_pack("[s, s, o]", "query", watch, q) : NULL;
	resp = req ? call(w, req, why, whysz) : NULL;
	json_decref(req);
	return resp;
}

/*
 * Apply the changes to the stored rows: the new count, size and digest,
 * and (rewrite) a new snapshot's body.  0, or 1 with *why for a walk.
 */
/* The new rows in order - the stored spans between drops, the changed rows
 * between them - digested into st, and copied into sizes/offs/stream when
 * rewrite.  1 with *why when the stored rows are damaged. */
static int merge_rows(const snap *s, const change *cs, size_t nc, size_t (*drops)[2], size_t nd, bool rewrite,
		      tt_fwatch_state *st, tt_buf *sizes, tt_buf *offs, tt_buf *stream, const char **why,
		      tt_error *err)
{
	size_t di = 0, ci = 0, i = 0;
	uint64_t count = 0, size = 0;
	blake2b_state B;
	/* sort drops by start; they may nest (a row and its directory) */
	for (size_t a = 1; a < nd; a++)
		for (size_t b = a; b > 0 && drops[b][0] < drops[b - 1][0]; b--) {
			size_t t0 = drops[b][0], t1 = drops[b][1];
			drops[b][0] = drops[b - 1][0];
			drops[b][1] = drops[b - 1][1];
			drops[b - 1][0] = t0;
			drops[b - 1][1] = t1;
		}
	blake2b_init(&B, 16);
	for (;;) {
		/* next changed row and where it goes */
		while (ci < nc && cs[ci].what != CH_ROW)
			ci++;
		size_t stop = ci < nc ? lower_bound(s, cs[ci].path) : s->count;
		while (i < stop) {
			while (di < nd && drops[di][1] <= i)
				di++;
			size_t end = stop;
			if (di < nd && drops[di][0] <= i) {
				i = drops[di][1] > i ? drops[di][1] : i + 1;
				continue;
			}
			if (di < nd && drops[di][0] < end)
				end = drops[di][0];
			/* rows [i, end) unchanged */
			size_t from = s->offs[i];
			size_t to = end < s->count ? s->offs[end] : s->stream_len;
			if (to < from || to > s->stream_len) {
				*why = "the stored rows are damaged";
				return 1;
			}
			blake2b_update(&B, (const uint8_t *)s->stream + from, to - from);
			for (size_t r = i; r < end; r++)
				size += s->sizes[r];
			if (rewrite) {
				for (size_t r = i; r < end; r++) {
					uint64_t o = stream->len + (s->offs[r] - from);
					tt_buf_put(offs, &o, sizeof o);
				}
				tt_buf_put(sizes, s->sizes + i, (end - i) * sizeof *s->sizes);
				tt_buf_put(stream, s->stream + from, to - from);
			}
			count += end - i;
			i = end;
		}
		if (ci >= nc)
			break;
		/* the changed row itself */
		const change *c = &cs[ci++];
		size_t pl = strlen(c->path) + 1, kl = strlen(c->token) + 1;
		blake2b_update(&B, (const uint8_t *)c->path, pl);
		blake2b_update(&B, (const uint8_t *)c->token, kl);
		size += c->size;
		count++;
		if (rewrite) {
			uint64_t o = stream->len;
			tt_buf_put(offs, &o, sizeof o);
			tt_buf_put(sizes, &c->size, sizeof c->size);
			tt_buf_put(stream, c->path, pl);
			tt_buf_put(stream, c->token, kl);
		}
	}
	if (sizes->failed || offs->failed || stream->failed)
		return tt_error_oom(err);
	uint8_t out[16];
	blake2b_final(&B, out, sizeof out);
	tt_hex(st->digest, out, sizeof out);
	st->count = count;
	st->size = size;
	return 0;
}

static int apply(tt_fwatch *w, tt_fhash *h, const char *root, int rootfd, const snap *s,
		 json_t *files, bool rewrite, tt_fwatch_state *st, tt_buf *sizes, tt_buf *offs,
		 tt_buf *stream, bool *unchanged, const char **why, tt_error *err)
{
	int rc = 0;
	size_t n = json_array_size(files), nc = 0, nd = 0, nh = 0;
	change *cs = n ? tt_calloc(n, sizeof *cs) : NULL;
	size_t (*drops)[2] = n ? tt_calloc(2 * n, sizeof *drops) : NULL;
	char **full = n ? tt_calloc(n, sizeof *full) : NULL;
	struct stat *sts = n ? tt_calloc(n, sizeof *sts) : NULL;
	char (*hex)[65] = n ? tt_calloc(n, sizeof *hex) : NULL;
	size_t *who = n ? tt_calloc(n, sizeof *who) : NULL;
	tt_buf scratch = TT_BUF_INIT;
	(void)w;

	if (n && (!cs || !drops || !full || !sts || !hex || !who)) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		const char *p = json_string_value(json_array_get(files, i));
		if (!p) {
			*why = "Watchman's answer names a path that is not text";
			rc = 1;
			goto done;
		}
		cs[nc++].path = p;
	}
	if (nc)
		qsort(cs, nc, sizeof *cs, by_path);
	for (size_t i = 0; i < nc; i++) {
		change *c = &cs[i];
		size_t lo, hi, at;
		if (i && strcmp(c->path, cs[i - 1].path) == 0) {
			c->what = CH_DIR; /* a duplicate: nothing more to do */
			continue;
		}
		if ((rc = classify(rootfd, c, why)) != 0)
			goto done;
		rows_under(s, c->path, &scratch, &lo, &hi);
		if (scratch.failed) {
			rc = tt_error_oom(err);
			goto done;
		}
		if (c->what == CH_DIR) {
			if (lo == hi && !row_is(s, lower_bound(s, c->path), c->path)) {
				/* a directory the stored rows know nothing under: it may
				 * be new (or was empty), and only a walk lists it */
				*why = "a directory appeared or an empty one changed";
				rc = 1;
				goto done;
			}
			if (lo == hi) {
				/* was a row, is a directory now */
				*why = "a file was replaced by a directory";
				rc = 1;
				goto done;
			}
			continue;
		}
		at = lower_bound(s, c->path);
		if (row_is(s, at, c->path)) {
			drops[nd][0] = at;
			drops[nd++][1] = at + 1;
		}
		if (lo < hi) { /* a directory is something else now: its rows go */
			drops[nd][0] = lo;
			drops[nd++][1] = hi;
		}
		if (c->what == CH_ROW && c->hash) {
			tt_buf_reset(&scratch);
			if (tt_file_join(&scratch, root, c->path) != 0 ||
			    !(full[nh] = tt_strdup(scratch.ptr))) {
				rc = tt_error_oom(err);
				goto done;
			}
			sts[nh] = c->st;
			who[nh++] = i;
		}
	}
	/* the changed files' contents: the cache, else read */
	if (nh && (rc = tt_fhash_files(h, (const char *const *)full, sts, nh, hex, err)) != 0)
		goto done;
	for (size_t k = 0; k < nh; k++)
		memcpy(cs[who[k]].token, hex[k], 65);

	/* Nothing changed in the rows (no paths, or only directories whose
	 * entries changed, or what a walk skips): the stored state stands,
	 * with no need to read the rows. */
	{
		bool rows_changed = nd > 0;
		for (size_t i = 0; i < nc && !rows_changed; i++)
			rows_changed = cs[i].what == CH_ROW;
		if (!rows_changed) {
			bool ok = true;
			const char *d = hdr_str(s->hdr, "digest", &ok);
			if (!ok || strlen(d) != 32) {
				*why = "the stored rows are damaged";
				rc = 1;
				goto done;
			}
			memcpy(st->digest, d, 33);
			st->count = s->count;
			st->size = s->size;
			*unchanged = true;
			goto done;
		}
	}

	/* the rows, in order: stored spans between drops, changed rows between */
	rc = merge_rows(s, cs, nc, drops, nd, rewrite, st, sizes, offs, stream, why, err);
done:
	for (size_t k = 0; full && k < nh; k++)
		free(full[k]);
	free(full);
	free(sts);
	free(hex);
	free(who);
	free(drops);
	free(cs);
	tt_buf_release(&scratch);
	return rc;
}

static int state_of_locked(tt_fwatch *w, tt_fhash *h, const char *root, tt_fwatch_state *st,
			   tt_fwatch_pending **pend, tt_error *err)
{
	char why[512];
	const char *reason = NULL;
	char *watch = NULL, *rel = NULL, *real = NULL, *path = NULL;
	json_t *resp = NULL;
	snap s;
	int rc = 0, rootfd = -1;
	bool have_snap = false;

	memset(&s, 0, sizeof s);
	*pend = NULL;
	why[0] = '\0';
	if (!w->snap_dir) {
		reason = "no checkout cache to keep a clock in";
		goto walk;
	}
	if (w->unusable) {
		snprintf(why, sizeof why, "%s", w->why_unusable ? w->why_unusable : "Watchman failed");
		goto walk;
	}
	if (!(real = realpath(root, NULL)) || strcmp(real, root) != 0) {
		reason = "it is reached through a symlink (Watchman watches where links lead)";
		goto walk;
	}
	if ((reason = remote_fs(root)))
		goto walk;
	if (!watch_of(w, root, &watch, &rel, why, sizeof why))
		goto walk;
	if ((reason = ignored_by_watchman(watch, rel)))
		goto walk;
	if (!(path = snap_path(w, root))) {
		rc = tt_error_oom(err);
		goto out;
	}
	if (snap_open(path, &s, &reason)) {
		bool ok = true;
		have_snap = true;
		if (!same(hdr_str(s.hdr, "root", &ok), root) || !same(hdr_str(s.hdr, "watch", &ok), watch) ||
		    !same(hdr_str(s.hdr, "rel", &ok), rel) || !ok)
			reason = "the stored clock is of another watch";
		else if (hdr_u64(s.hdr, "links_through", &ok) != 0)
			reason = "it holds symlinks to files, whose targets Watchman does not follow";
	}
	if (!have_snap || reason) {
		/* the clock the walk's rows will be stored with */
		json_t *req = json_pack("[s, s, {s:i}]", "clock", watch, "sync_timeout", SYNC_TIMEOUT_MS);
		json_t *c = req ? call(w, req, why, sizeof why) : NULL;
		json_decref(req);
		if (c && json_string_value(json_object_get(c, "clock")) && recrawls_of(c) >= 0) {
			*pend = pending_new(root, watch, rel, json_string_value(json_object_get(c, "clock")),
					    recrawls_of(c));
		}
		json_decref(c);
		if (!*pend && reason) {
			/* say both: why this walk, and why the next will walk too */
			char both[512];
			snprintf(both, sizeof both, "%s; and Watchman gave no clock to store its rows with (%.300s)",
				 reason, why[0] ? why : "a warning of another kind");
			snprintf(why, sizeof why, "%s", both);
			reason = NULL;
		}
		goto walk;
	}
	resp = query_since(w, watch, rel, hdr_str(s.hdr, "clock", &(bool){ true }), why, sizeof why);
	if (!resp)
		goto walk;
	{
		const char *clock = json_string_value(json_object_get(resp, "clock"));
		json_t *files = json_object_get(resp, "files");
		const char *warn = json_string_value(json_object_get(resp, "warning"));
		if (clock && recrawls_of(resp) >= 0) { /* a walk from here is stored with this clock */
			*pend = pending_new(root, watch, rel, clock, recrawls_of(resp));
		}
		if (json_is_true(json_object_get(resp, "is_fresh_instance"))) {
			reason = "Watchman cannot say what changed since the stored clock (a fresh instance: "
				 "it restarted, or the clock is of another watch)";
			goto walk;
		}
		if (recrawls_of(resp) < 0) {
			snprintf(why, sizeof why, "Watchman warns: %.400s", warn);
			goto walk;
		}
		if ((uint64_t)recrawls_of(resp) != hdr_u64(s.hdr, "recrawls", &(bool){ true })) {
			/* it lost events (an inotify overflow, say) and read the
			 * tree again: what changed in the meantime with the same
			 * stat is not known to it */
			reason = "Watchman recrawled the directory since the stored clock (it had lost events)";
			goto walk;
		}
		if (!clock || !json_is_array(files)) {
			reason = "Watchman's answer has no clock or files";
			goto walk;
		}
		if (json_array_size(files) > CHANGES_MAX(s.count)) {
			reason = "so many paths changed that a walk is quicker";
			goto walk;
		}
		bool rewrite = json_array_size(files) >= REWRITE_AT(s.count);
		tt_buf sizes = TT_BUF_INIT, offs = TT_BUF_INIT, stream = TT_BUF_INIT, data = TT_BUF_INIT;
		if ((rootfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0) {
			reason = "it cannot be opened";
			goto walk;
		}
		bool unchanged = false;
		rc = apply(w, h, root, rootfd, &s, files, rewrite, st, &sizes, &offs, &stream, &unchanged,
			   &reason, err);
		if (rc == 0 && rewrite && !unchanged) {
			if (snap_build(&data, root, watch, rel, clock, st->count, st->size, st->digest, 0,
				       recrawls_of(resp), &sizes,
				       &offs, &stream) == 0)
				snap_write(w, root, &data);
		}
		tt_buf_release(&sizes);
		tt_buf_release(&offs);
		tt_buf_release(&stream);
		tt_buf_release(&data);
		if (rc == 1)
			goto walk;
		if (rc == 0) {
			trace(root, "Watchman: %zu path(s) changed since the stored clock%s",
			      json_array_size(files),
			      unchanged ? ", none of the rows" : rewrite ? "; rows stored again" : "");
			pending_free(*pend);
			*pend = NULL;
			rc = 1;
		}
		goto out;
	}
walk:
	trace(root, "walking: %s", reason ? reason : why);
	rc = 0;
out:
	if (rootfd >= 0)
		close(rootfd);
	if (rc != 0 && rc != 1) {
		pending_free(*pend);
		*pend = NULL;
	}
	if (rc == 0 && have_snap && !*pend)
		snap_remove(w, root);
	snap_close(&s);
	json_decref(resp);
	free(watch);
	free(rel);
	free(real);
	free(path);
	return rc;
}

int tt_fwatch_state_of(tt_fwatch *w, tt_fhash *h, const char *root, tt_fwatch_state *st,
		       tt_fwatch_pending **pend, tt_error *err)
{
	int rc;
	pthread_mutex_lock(&w->lock);
	rc = state_of_locked(w, h, root, st, pend, err);
	pthread_mutex_unlock(&w->lock);
	return rc;
}

void tt_fwatch_after_walk(tt_fwatch *w, tt_fwatch_pending *pend, const tt_file_tree *tree)
{
	tt_buf sizes = TT_BUF_INIT, offs = TT_BUF_INIT, stream = TT_BUF_INIT, data = TT_BUF_INIT;
	if (!pend)
		return;
	for (size_t i = 0; i < tree->n && !stream.failed; i++) {
		uint64_t o = stream.len, sz = tree->rows[i].size;
		tt_buf_put(&offs, &o, sizeof o);
		tt_buf_put(&sizes, &sz, sizeof sz);
		tt_buf_put(&stream, tree->rows[i].path, strlen(tree->rows[i].path) + 1);
		tt_buf_put(&stream, tree->rows[i].token, strlen(tree->rows[i].token) + 1);
	}
	if (!sizes.failed && !offs.failed && !stream.failed &&
	    snap_build(&data, pend->root, pend->watch, pend->rel, pend->clock, tree->n, tree->size,
		       tree->digest, tree->links_through, pend->recrawls, &sizes, &offs, &stream) == 0 &&
	    snap_write(w, pend->root, &data) == 0)
		trace(pend->root, "stored %zu row(s) with Watchman's clock", tree->n);
	pending_free(pend);
	tt_buf_release(&sizes);
	tt_buf_release(&offs);
	tt_buf_release(&stream);
	tt_buf_release(&data);
}

void tt_fwatch_pending_free(tt_fwatch_pending *pend)
{
	pending_free(pend);
}
