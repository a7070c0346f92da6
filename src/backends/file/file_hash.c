/*
 * backends/file/file_hash.c - the file backend's directory walk, its parallel
 * SHA-256 engine and the persistent hash cache (see file.h).
 *
 * The walk follows tether-vcs's _walk: directories are descended without
 * following symlinked ones; a regular file, or a symlink whose target is a
 * regular file, is a file (stat'ed through); any other symlink - to a
 * directory, dangling, to a FIFO - is recorded by its target; FIFOs,
 * sockets and devices are skipped; the owner marker is skipped at the root
 * only.  A stat error other than "no such file" is an error, as it is for
 * os.DirEntry.is_file().
 *
 * Hashing: the cache answers every file whose (size, mtime_ns, ctime_ns,
 * inode) match an entry that was not made "racily" (within 2 s of the
 * file's last change); the rest are read on a pool of workers, each with
 * one 1 MiB buffer and one EVP context for all its files, biggest files
 * first so one large file does not finish last.  The cache file
 * (.tether/cache/file-hashes.json) is tether-vcs's format, byte for byte:
 *     {"<path>":[size,mtime_ns,ctime_ns,inode,"<sha256>",hashed_at_ns],...}
 * dumped with json.dumps(separators=(",", ":")) (ASCII escapes, insertion
 * order), so either implementation reads what the other wrote.
 */
#define _GNU_SOURCE
#include "backends/file/file.h"

#include <blake2.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/file/hashbin.h"
#include "backends/file/hashcache.h"
#include "util/buf.h"
#include "util/crypto_api.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/pool.h"

#define KIND "file"
#define READ_BUF ((size_t)1 << 20)
/* An entry hashed this close to the file's last change is not trusted: a
 * write landing in the same timestamp tick as the read leaves size, mtime
 * and ctime unchanged (git's "racily clean" files); ticks can be as coarse
 * as 2 s (FAT, some NFS). */
#define RACY_WINDOW_NS INT64_C(2000000000)
/* The cache file can be big (about 150 bytes per file ever hashed). */
#define CACHE_READ_MAX ((size_t)2 << 30)
#define MIN_DEFAULT_THREADS 4u

/* --- errors ------------------------------------------------------------------------ */

/* The OSError subclass CPython raises for errnum. */
static const char *py_oserror_class(int e)
{
	switch (e) {
	case EAGAIN:
	case EALREADY:
	case EINPROGRESS:
		return "BlockingIOError";
	case ECHILD:
		return "ChildProcessError";
	case EPIPE:
	case ESHUTDOWN:
		return "BrokenPipeError";
	case ECONNABORTED:
		return "ConnectionAbortedError";
	case ECONNREFUSED:
		return "ConnectionRefusedError";
	case ECONNRESET:
		return "ConnectionResetError";
	case EEXIST:
		return "FileExistsError";
	case ENOENT:
		return "FileNotFoundError";
	case EISDIR:
		return "IsADirectoryError";
	case ENOTDIR:
		return "NotADirectoryError";
	case EINTR:
		return "InterruptedError";
	case EACCES:
	case EPERM:
		return "PermissionError";
	case ESRCH:
		return "ProcessLookupError";
	case ETIMEDOUT:
		return "TimeoutError";
	default:
		return "OSError";
	}
}

int tt_file_os_error(tt_error *err, int errnum, const char *path)
{
	tt_buf quoted = TT_BUF_INIT;
	json_t *s = path ? json_string(path) : NULL;
	int rc;

	if (errnum == ENOMEM)
		return tt_error_oom(err);
	if (path) {
		/* repr(path); a name that is not UTF-8 is shown as it is. */
		if (!s || tt_pyv_repr(&quoted, s) != 0) {
			tt_buf_reset(&quoted);
			tt_buf_printf(&quoted, "'%s'", path);
		}
	}
	if (path && !quoted.failed)
		rc = tt_error_set(err, TT_EBACKEND, KIND ": %s: [Errno %d] %s: %s",
				  py_oserror_class(errnum), errnum, strerror(errnum), quoted.ptr);
	else
		rc = tt_error_set(err, TT_EBACKEND, KIND ": %s: [Errno %d] %s",
				  py_oserror_class(errnum), errnum, strerror(errnum));
	tt_error_object(err, NULL, KIND);
	json_decref(s);
	tt_buf_release(&quoted);
	return rc;
}

/* --- the engine -------------------------------------------------------------------- */

/* What the cache file looked like when last read or written. */
typedef struct file_sig {
	bool exists;
	dev_t dev;
	ino_t ino;
	off_t size;
	int64_t mtime_ns, ctime_ns;
} file_sig;

struct tt_fhash {
	pthread_mutex_t lock;   /* entries, loaded, dirty, disk */
	char *cache_file;       /* NULL: memory only */
	tt_hcache *entries;     /* path -> [size, mtime_ns, ctime_ns, ino, sha256, hashed_at_ns] */
	char *bin_file;         /* the binary copy beside cache_file */
	tt_hcbin *bin;          /* that copy, mapped: answers lookups until entries is read */
	bool loaded, dirty;
	file_sig disk;
	unsigned threads;
	tt_backend_work_fn progress;
	void *progress_ctx;
	int64_t (*now_ns)(void);
	void (*race_hook)(void *ctx, const char *path, int when);
	void *race_ctx;
	atomic_uint_fast64_t hashed_files, hashed_bytes, hits, saves;
};

static int64_t ts_ns(struct timespec t)
{
	return (int64_t)t.tv_sec * INT64_C(1000000000) + (int64_t)t.tv_nsec;
}

static int64_t realtime_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return ts_ns(t);
}

int tt_fhash_new(tt_fhash **out, const char *cache_file, tt_error *err)
{
	tt_fhash *h = tt_calloc(1, sizeof *h);
	*out = NULL;
	if (!h)
		return tt_error_oom(err);
	if (cache_file && (!(h->cache_file = tt_strdup(cache_file)) ||
			   !(h->bin_file = tt_hcbin_path(cache_file)))) {
		free(h->cache_file);
		free(h);
		return tt_error_oom(err);
	}
	if (pthread_mutex_init(&h->lock, NULL) != 0) {
		free(h->cache_file);
		free(h->bin_file);
		free(h);
		return tt_error_set(err, TT_ERROR, "cannot create a mutex");
	}
	atomic_init(&h->hashed_files, 0);
	atomic_init(&h->hashed_bytes, 0);
	atomic_init(&h->hits, 0);
	atomic_init(&h->saves, 0);
	*out = h;
	return 0;
}

void tt_fhash_free(tt_fhash *h)
{
	if (!h)
		return;
	pthread_mutex_destroy(&h->lock);
	tt_hcache_free(h->entries);
	tt_hcbin_close(h->bin);
	free(h->cache_file);
	free(h->bin_file);
	free(h);
}

void tt_fhash_set_progress(tt_fhash *h, tt_backend_work_fn fn, void *ctx)
{
	pthread_mutex_lock(&h->lock);
	h->progress = fn;
	h->progress_ctx = ctx;
	pthread_mutex_unlock(&h->lock);
}

void tt_fhash_set_threads(tt_fhash *h, unsigned threads)
{
	pthread_mutex_lock(&h->lock);
	h->threads = threads;
	pthread_mutex_unlock(&h->lock);
}

void tt_fhash_set_race_hook(tt_fhash *h, void (*fn)(void *ctx, const char *path, int when), void *ctx)
{
	pthread_mutex_lock(&h->lock);
	h->race_hook = fn;
	h->race_ctx = ctx;
	pthread_mutex_unlock(&h->lock);
}

void tt_fhash_set_clock(tt_fhash *h, int64_t (*now_ns)(void))
{
	pthread_mutex_lock(&h->lock);
	h->now_ns = now_ns;
	pthread_mutex_unlock(&h->lock);
}

void tt_fhash_stats(tt_fhash *h, tt_file_stats *out)
{
	out->hashed_files = atomic_load(&h->hashed_files);
	out->hashed_bytes = atomic_load(&h->hashed_bytes);
	out->cache_hits = atomic_load(&h->hits);
	out->cache_saves = atomic_load(&h->saves);
}

/* --- the cache file ---------------------------------------------------------------- */

static file_sig sig_of(const char *path)
{
	file_sig s = { 0 };
	struct stat st;
	if (path && stat(path, &st) == 0) {
		s.exists = true;
		s.dev = st.st_dev;
		s.ino = st.st_ino;
		s.size = st.st_size;
		s.mtime_ns = ts_ns(st.st_mtim);
		s.ctime_ns = ts_ns(st.st_ctim);
	}
	return s;
}

static bool sig_equal(const file_sig *a, const file_sig *b)
{
	return a->exists == b->exists &&
	       (!a->exists || (a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
			       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns));
}

static file_sig sig_of_stat(const struct stat *st)
{
	file_sig s = { 0 };
	s.exists = true;
	s.dev = st->st_dev;
	s.ino = st->st_ino;
	s.size = st->st_size;
	s.mtime_ns = ts_ns(st->st_mtim);
	s.ctime_ns = ts_ns(st->st_ctim);
	return s;
}

/* Open the cache file: its descriptor (or -1), *sig, and in *key the
 * identity a binary copy of it is keyed by (*keyed false when there is
 * none to be had).  The table is then read from the same descriptor, so
 * the key names exactly the text that was parsed. */
static int open_cache_json(const char *path, file_sig *sig, tt_hcbin_key *key, bool *keyed)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	memset(sig, 0, sizeof *sig);
	*keyed = false;
	if (fd < 0)
		return -1;
	if (fstat(fd, &st) != 0) {
		close(fd);
		return -1;
	}
	*sig = sig_of_stat(&st);
	*keyed = S_ISREG(st.st_mode) && tt_hcbin_key_of_fd(fd, key) == 0;
	return fd;
}

/* The table in the file open on fd (sig: its stat), or NULL when out of
 * memory.  An unreadable file or one that is not a JSON object is an empty
 * table (as tether-vcs treats it). */
static tt_hcache *table_from_fd(int fd, const file_sig *sig)
{
	tt_hcache *c = tt_hcache_new();
	size_t cap, len = 0;
	char *text;

	if (!c || fd < 0 || sig->size < 0 || (uint64_t)sig->size > CACHE_READ_MAX)
		return c;
	cap = (size_t)sig->size;
	if (!(text = tt_malloc(cap + 1))) {
		tt_hcache_free(c);
		return NULL;
	}
	for (;;) {
		ssize_t got = len < cap ? read(fd, text + len, cap - len) : 0;
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			free(text);
			return c;
		}
		if (got == 0)
			break;
		len += (size_t)got;
	}
	text[len] = '\0';
	if (tt_hcache_load(c, text, len) < 0) {
		tt_hcache_free(c);
		return NULL;
	}
	return c;
}

/* The cache file's table, or NULL when out of memory.  A file that is
 * missing, unreadable or not a JSON object is an empty table (as tether-vcs
 * treats it).  *sig: the file as read; *key and *keyed as in open_cache_json. */
static tt_hcache *read_cache_file(const char *path, file_sig *sig, tt_hcbin_key *key, bool *keyed)
{
	int fd = open_cache_json(path, sig, key, keyed);
	tt_hcache *c = table_from_fd(fd, sig);
	if (fd >= 0)
		close(fd);
	return c;
}

/*
 * The table is read lazily: when the binary copy beside the JSON file was
 * made from the JSON file as it is now, lookups are answered from it
 * (mapped, nothing parsed); otherwise the JSON is parsed and a new binary
 * copy written.  The JSON stays the truth: a binary copy is used only under
 * the JSON file's present identity, and the table itself is read from the
 * JSON before anything is recorded.
 */
static int cache_load_locked(tt_fhash *h, tt_error *err)
{
	tt_hcbin_key key;
	bool keyed;
	int fd;

	if (h->loaded)
		return 0;
	if (!h->cache_file) {
		if (!(h->entries = tt_hcache_new()))
			return tt_error_oom(err);
		h->loaded = true;
		return 0;
	}
	fd = open_cache_json(h->cache_file, &h->disk, &key, &keyed);
	if (keyed && (h->bin = tt_hcbin_open(h->bin_file, &key)) != NULL) {
		close(fd);
		h->loaded = true;
		return 0;
	}
	h->entries = table_from_fd(fd, &h->disk);
	if (fd >= 0)
		close(fd);
	if (!h->entries)
		return tt_error_oom(err);
	if (keyed)
		(void)tt_hcbin_write(h->bin_file, h->entries, &key); /* best effort */
	h->loaded = true;
	return 0;
}

/* The table itself, for a change to it: parsed from the JSON file when
 * lookups were answered from the binary copy until now. */
static int cache_table_locked(tt_fhash *h, tt_error *err)
{
	tt_hcbin_key key;
	bool keyed;
	int rc;

	if ((rc = cache_load_locked(h, err)) != 0 || h->entries)
		return rc;
	if (!(h->entries = read_cache_file(h->cache_file, &h->disk, &key, &keyed)))
		return tt_error_oom(err);
	tt_hcbin_close(h->bin);
	h->bin = NULL;
	return 0;
}

/* Another process (or another backend of this one) may have written the file
 * since it was read: keep its entries, the newer of two for one path.  Every
 * entry carries the stat it was made for, so either choice is a correct
 * cache; the newer one is just likelier to hit. */
static int merge_disk_locked(tt_hcache *mine, const char *cache_file, file_sig *disk_sig, tt_error *err)
{
	file_sig now = sig_of(cache_file);
	tt_hcache *disk;
	int rc;

	if (sig_equal(&now, disk_sig))
		return 0;
	tt_hcbin_key key;
	bool keyed;
	if (!(disk = read_cache_file(cache_file, &now, &key, &keyed)))
		return tt_error_oom(err);
	rc = tt_hcache_merge(mine, disk) == 0 ? 0 : tt_error_oom(err);
	tt_hcache_free(disk);
	return rc;
}

/*
 * The cache file is read, merged and rewritten under an flock on its
 * directory, so two writers (processes, or two backends of one process)
 * never drop each other's entries.  Best effort: where the lock cannot be
 * had (no flock on the file system, a holder for over 2 s) the write goes
 * ahead anyway - the worst case is a lost entry, which costs a re-hash.
 * Returns the locked descriptor or -1.
 */
static int lock_cache_dir(const char *cache_file)
{
	tt_error ignored = TT_ERROR_INIT;
	char *dir = tt_dirname(cache_file);
	int fd = -1;

	if (dir && tt_mkdirs(dir, 0777, &ignored) == 0)
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	tt_error_clear(&ignored);
	free(dir);
	for (int tries = 0; fd >= 0; tries++) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return fd;
		if ((errno != EWOULDBLOCK && errno != EINTR) || tries >= 400) {
			close(fd);
			return -1;
		}
		nanosleep(&(struct timespec){ 0, 5000000 }, NULL);
	}
	return -1;
}

/* Write the table if it changed.  A cache is not worth an error: a failure
 * to write it leaves the old file and costs a re-hash next time. */
static int cache_save_locked(tt_fhash *h, tt_error *err)
{
	tt_buf text = TT_BUF_INIT;
	tt_error ignored = TT_ERROR_INIT;
	int rc = 0;

	int lock_fd;

	if (!h->dirty || !h->cache_file || !h->entries)
		return 0;
	lock_fd = lock_cache_dir(h->cache_file);
	if ((rc = merge_disk_locked(h->entries, h->cache_file, &h->disk, err)) != 0)
		goto done;
	/* json.dumps(entries, separators=(",", ":")): ASCII escapes, insertion order. */
	if (tt_hcache_dump(h->entries, &text) != 0) {
		rc = text.failed == TT_ENOMEM ? tt_error_oom(err) : 0;
		goto done;
	}
	if (tt_write_file_atomic(h->cache_file, text.ptr, text.len, 0666, &ignored) == 0) {
		tt_hcbin_key key;
		bool keyed;
		int fd = open_cache_json(h->cache_file, &h->disk, &key, &keyed);
		if (fd >= 0)
			close(fd);
		h->dirty = false;
		atomic_fetch_add(&h->saves, 1);
		/* The binary copy, keyed by the file now there when that is the
		 * text just written (another writer may have replaced it since). */
		if (keyed && key.size == text.len && key.edges == tt_hcbin_edges(text.ptr, text.len))
			(void)tt_hcbin_write(h->bin_file, h->entries, &key);
	}
done:
	if (lock_fd >= 0)
		close(lock_fd); /* releases the flock */
	tt_error_clear(&ignored);
	tt_buf_release(&text);
	return rc;
}

/* The stat of one file as the cache keys it. */
typedef struct fstat_key {
	uint64_t size, ino;
	int64_t mtime_ns, ctime_ns;
} fstat_key;

static fstat_key key_of(const struct stat *st)
{
	return (fstat_key){ (uint64_t)st->st_size, (uint64_t)st->st_ino, ts_ns(st->st_mtim),
			    ts_ns(st->st_ctim) };
}

/* The cached sha256 of path (into hex) when every stat field matches and
 * the entry was not made racily. */
static bool cache_lookup_locked(tt_fhash *h, const char *path, size_t len, const fstat_key *k,
				char hex[65], size_t *hint)
{
	tt_hc_entry found;
	const tt_hc_entry *e = NULL;
	int64_t changed;

	if (h->entries)
		e = tt_hcache_get(h->entries, path, len);
	else if (h->bin && tt_hcbin_get(h->bin, path, len, hint, &found))
		e = &found;

	if (!e || !e->decoded || (uint64_t)e->size != k->size || e->size < 0 ||
	    e->mtime_ns != k->mtime_ns || e->ctime_ns != k->ctime_ns || e->ino < 0 ||
	    (uint64_t)e->ino != k->ino)
		return false;
	changed = k->mtime_ns > k->ctime_ns ? k->mtime_ns : k->ctime_ns;
	if (e->hashed_at < changed || e->hashed_at - changed < RACY_WINDOW_NS)
		return false;
	tt_hc_entry_hex(e, hex);
	return true;
}

static int cache_record_locked(tt_fhash *h, const char *path, const fstat_key *k, const char *hex,
			       int64_t hashed_at, tt_error *err)
{
	tt_hc_entry e = { 0 };
	/* Numbers beyond a JSON integer (a 64-bit inode past 2^63) are not
	 * cached: such a file is simply hashed every time. */
	if (k->size > (uint64_t)INT64_MAX || k->ino > (uint64_t)INT64_MAX)
		return 0;
	/* Nor is a path that is not UTF-8 (a JSON key cannot hold it). */
	if (!tt_utf8_valid(path, strlen(path)))
		return 0;
	if (tt_unhex_lower(e.sha, hex, 32) != 0)
		return 0;
	e.size = (int64_t)k->size;
	e.mtime_ns = k->mtime_ns;
	e.ctime_ns = k->ctime_ns;
	e.ino = (int64_t)k->ino;
	e.hashed_at = hashed_at;
	if (tt_hcache_put(h->entries, path, strlen(path), &e) != 0)
		return tt_error_oom(err);
	h->dirty = true;
	return 0;
}

/* --- hashing ----------------------------------------------------------------------- */

/* One file to read. */
typedef struct miss {
	const char *path;       /* full path (cache key, and what is opened) */
	fstat_key key;
	char *hex;              /* 65 bytes to fill */
	int errnum;             /* -1 not run, 0 done, else errno */
	bool read_error;        /* failed in read(), not open(): no filename in the message */
} miss;

typedef struct hash_job {
	miss **items;
	size_t n;
	atomic_size_t next;
	atomic_bool stop;
	EVP_MD *md;
	tt_fhash *h;
	tt_backend_work_fn progress;
	void *progress_ctx;
	uint64_t files_total, bytes_total;
	atomic_uint_fast64_t files_done, bytes_done;
} hash_job;

/* sha256 of an open file into hex, with the worker's buffer and context. */
static int hash_fd(int fd, uint64_t size, unsigned char *buf, EVP_MD_CTX *ctx, const EVP_MD *md,
		   char *hex, uint64_t *read_bytes)
{
	unsigned char digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;

	if (size > READ_BUF)
		(void)posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
	if (EVP_DigestInit_ex2(ctx, md, NULL) != 1)
		return ENOMEM;
	for (;;) {
		ssize_t got = read(fd, buf, READ_BUF);
		if (got < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		if (got == 0)
			break;
		*read_bytes += (uint64_t)got;
		if (EVP_DigestUpdate(ctx, buf, (size_t)got) != 1)
			return ENOMEM;
	}
	if (EVP_DigestFinal_ex(ctx, digest, &dlen) != 1 || dlen != 32)
		return ENOMEM;
	tt_hex(hex, digest, 32);
	return 0;
}

static void hash_one(hash_job *job, miss *m, unsigned char *buf, EVP_MD_CTX *ctx)
{
	uint64_t got = 0;
	/* O_NONBLOCK: a FIFO named as the object reads as empty instead of
	 * hanging (no effect on regular files). */
	int fd;
	if (job->h->race_hook)
		job->h->race_hook(job->h->race_ctx, m->path, TT_FHASH_OPENING);
	fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		m->errnum = errno;
		return;
	}
	m->errnum = hash_fd(fd, m->key.size, buf, ctx, job->md, m->hex, &got);
	m->read_error = m->errnum != 0 && m->errnum != ENOMEM;
	close(fd);
	atomic_fetch_add(&job->h->hashed_bytes, got);
	if (m->errnum == 0) {
		atomic_fetch_add(&job->h->hashed_files, 1);
		uint64_t files = atomic_fetch_add(&job->files_done, 1) + 1;
		uint64_t bytes = atomic_fetch_add(&job->bytes_done, got) + got;
		if (job->progress) {
			tt_backend_work p = { files, job->files_total, bytes, job->bytes_total, got };
			job->progress(job->progress_ctx, &p);
		}
	}
}

/* One worker: its own buffer and EVP context, reused for every file it
 * takes.  A worker that cannot allocate them takes nothing; the others (or,
 * when none could, the check after the pool) deal with it. */
static void hash_worker(size_t index, void *arg)
{
	hash_job *job = arg;
	unsigned char *buf = aligned_alloc(4096, READ_BUF);
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	(void)index;

	if (buf && ctx) {
		for (;;) {
			size_t i = atomic_fetch_add(&job->next, 1);
			if (i >= job->n || atomic_load(&job->stop))
				break;
			hash_one(job, job->items[i], buf, ctx);
			if (job->items[i]->errnum != 0)
				atomic_store(&job->stop, true);
		}
	}
	EVP_MD_CTX_free(ctx);
	free(buf);
}

static int by_size_desc(const void *pa, const void *pb)
{
	const miss *a = *(miss *const *)pa, *b = *(miss *const *)pb;
	if (a->key.size != b->key.size)
		return a->key.size > b->key.size ? -1 : 1;
	return strcmp(a->path, b->path);
}

/* The threads set, or (0) one per CPU but at least MIN_DEFAULT_THREADS:
 * reads and directory listings from cold storage overlap. */
static unsigned default_threads(unsigned set)
{
	unsigned n = set ? set : tt_cpu_count();
	return !set && n < MIN_DEFAULT_THREADS ? MIN_DEFAULT_THREADS : n;
}

static int64_t now_of(tt_fhash *h)
{
	return h->now_ns ? h->now_ns() : realtime_ns();
}

/*
 * Fill each miss's hex: all reads in parallel, then record them in the
 * cache and save it.  The first failure in path order is the error (the
 * files hashed before it are still recorded).
 */
static int hash_misses(tt_fhash *h, miss *misses, size_t n, bool *vanished, tt_error *err)
{
	int rc = 0;
	miss **order = NULL, *failed = NULL;
	hash_job job;
	unsigned threads;
	int64_t started;

	memset(&job, 0, sizeof job);
	if (n == 0)
		return 0;
	if (!(order = tt_reallocarray(NULL, n, sizeof *order)))
		return tt_error_oom(err);
	for (size_t i = 0; i < n; i++) {
		order[i] = &misses[i];
		misses[i].errnum = -1;
		job.bytes_total += misses[i].key.size;
	}
	/* Biggest first: the pool then ends on small files, not on one big one. */
	qsort(order, n, sizeof *order, by_size_desc);
	job.items = order;
	job.n = n;
	job.h = h;
	job.files_total = n;
	atomic_init(&job.next, 0);
	atomic_init(&job.stop, false);
	atomic_init(&job.files_done, 0);
	atomic_init(&job.bytes_done, 0);
	pthread_mutex_lock(&h->lock);
	threads = h->threads;
	job.progress = h->progress;
	job.progress_ctx = h->progress_ctx;
	/* The stamp is taken before any read: an entry claims no more than
	 * what was true when reading began. */
	started = now_of(h);
	pthread_mutex_unlock(&h->lock);
	threads = default_threads(threads);
	if ((size_t)threads > n)
		threads = (unsigned)n;
	if ((rc = tt_crypto_load(err)) != 0)
		goto done;
	if (!(job.md = EVP_MD_fetch(NULL, "SHA256", NULL))) {
		rc = tt_error_set(err, TT_ERROR, "OpenSSL has no SHA256");
		goto done;
	}
	if ((rc = tt_pool_map(threads, threads, hash_worker, &job, err)) != 0)
		goto done;

	/* The first failure in path order; an item no worker ran (-1) with no
	 * failure anywhere means no worker could allocate its buffer. */
	for (size_t i = 0; i < n && !failed; i++)
		if (misses[i].errnum > 0)
			failed = &misses[i];
	for (size_t i = 0; i < n && !failed; i++)
		if (misses[i].errnum != 0)
			failed = &misses[i];
	pthread_mutex_lock(&h->lock);
	rc = cache_table_locked(h, err);
	for (size_t i = 0; rc == 0 && i < n; i++)
		if (misses[i].errnum == 0)
			rc = cache_record_locked(h, misses[i].path, &misses[i].key, misses[i].hex,
						 started, err);
	if (rc == 0)
		rc = cache_save_locked(h, err);
	pthread_mutex_unlock(&h->lock);
	if (rc == 0 && failed) {
		if (failed->errnum == -1 || failed->errnum == ENOMEM)
			rc = tt_error_oom(err);
		else
			rc = tt_file_os_error(err, failed->errnum, failed->read_error ? NULL : failed->path);
		/* Listed, then gone before it could be read: another writer. */
		if (vanished && failed->errnum == ENOENT && !failed->read_error)
			*vanished = true;
	}
done:
	if (job.md)
		EVP_MD_free(job.md);
	free(order);
	return rc;
}

int tt_fhash_file(tt_fhash *h, const char *path, const struct stat *st, char hex[65],
		  tt_error *err)
{
	int rc;
	bool known;
	miss m;

	memset(&m, 0, sizeof m);
	m.path = path;
	m.key = key_of(st);
	m.hex = hex;
	pthread_mutex_lock(&h->lock);
	rc = cache_load_locked(h, err);
	known = rc == 0 && cache_lookup_locked(h, path, strlen(path), &m.key, hex, NULL);
	pthread_mutex_unlock(&h->lock);
	if (rc)
		return rc;
	if (known) {
		atomic_fetch_add(&h->hits, 1);
		return 0;
	}
	return hash_misses(h, &m, 1, NULL, err);
}

int tt_fhash_files(tt_fhash *h, const char *const *paths, const struct stat *sts, size_t n,
		   char (*hex)[65], tt_error *err)
{
	int rc;
	size_t nmiss = 0;
	miss *m = n ? tt_calloc(n, sizeof *m) : NULL;

	if (n && !m)
		return tt_error_oom(err);
	pthread_mutex_lock(&h->lock);
	rc = cache_load_locked(h, err);
	for (size_t i = 0; rc == 0 && i < n; i++) {
		fstat_key k = key_of(&sts[i]);
		if (cache_lookup_locked(h, paths[i], strlen(paths[i]), &k, hex[i], NULL)) {
			atomic_fetch_add(&h->hits, 1);
			continue;
		}
		m[nmiss].path = paths[i];
		m[nmiss].key = k;
		m[nmiss].hex = hex[i];
		nmiss++;
	}
	pthread_mutex_unlock(&h->lock);
	if (rc == 0 && nmiss)
		rc = hash_misses(h, m, nmiss, NULL, err);
	free(m);
	return rc;
}

/* --- the walk ---------------------------------------------------------------------- */

/*
 * Directories are read by several threads at once: on a warm tree the walk
 * is nothing but readdir and stat system calls, each CPU-bound in the
 * kernel, so cores divide it.  Each walker keeps its own names and entries;
 * a shared stack hands out directories (as malloc'd relative paths, NULL
 * for the root).  The order of discovery does not matter: the rows are
 * sorted at the end.
 */
/* Kept small (48 bytes): a refresh of 10^6 files holds 10^6 of them.  A
 * file's token is written straight into its row; a symlink's is kept in
 * the names buffer right after its name. */
typedef struct wentry {
	union {
		size_t off;     /* relative path in the (merged) names buffer... */
		const char *path; /* ...and, once that buffer stops moving, the path */
	} u;
	fstat_key key;          /* files: stat through symlinks */
	uint32_t len;           /* of the relative path */
	bool link;
} wentry;

typedef struct walkq {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	char **dirs;            /* directories to read: relative paths, NULL the root */
	size_t ndirs, alloc;
	size_t busy;            /* walkers reading a directory now */
	bool stop;              /* an error: everyone stops */
} walkq;

/* One directory read: its files and symlinks are entries [start, start +
 * count) of its walker's items, sorted by name; key is its relative path
 * and a '/' ("" for the root), an offset into the names buffer until that
 * stops moving. */
typedef struct dirrun {
	union {
		size_t off;
		const char *path;
	} key;
	size_t start, count;
	unsigned walker;
} dirrun;

typedef struct walk {
	const char *root;
	tt_fhash *h;
	walkq *q;
	dirrun *runs;
	size_t nruns, runs_alloc;
	unsigned index;
	tt_buf names;           /* relative paths, NUL-separated (offsets stay valid) */
	wentry *items;
	size_t n, alloc;
	char **found;           /* subdirectories of the directory being read */
	size_t nfound, found_alloc;
	tt_buf full;            /* scratch: a full path */
	tt_buf scratch;
	size_t links_through;   /* symlinks read through to a regular file */
	int rc;
	tt_error err;
} walk;

/* str(Path(root) / rel): "." contributes nothing, "/" no extra slash. */
int tt_file_join(tt_buf *out, const char *root, const char *rel)
{
	size_t rl = strlen(root);
	tt_buf_reset(out);
	if (!rel || !*rel)
		return tt_buf_puts(out, root);
	if (strcmp(root, ".") == 0)
		return tt_buf_puts(out, rel);
	tt_buf_puts(out, root);
	if (rl == 0 || root[rl - 1] != '/')
		tt_buf_putc(out, '/');
	return tt_buf_puts(out, rel);
}

/* names += [parent "/"] name "\0" (parent_len: strlen(parent));
 * returns the offset or SIZE_MAX on OOM (or a path longer than a
 * wentry's len holds), *len the path's length. */
static size_t add_name(walk *w, const char *parent, size_t parent_len, const char *name, uint32_t *len)
{
	size_t off = w->names.len, nl = strlen(name);
	if (parent) {
		tt_buf_put(&w->names, parent, parent_len);
		tt_buf_putc(&w->names, '/');
	}
	tt_buf_put(&w->names, name, nl + 1); /* with its NUL */
	size_t total = w->names.len - off - 1;
	if (w->names.failed || total > UINT32_MAX)
		return SIZE_MAX;
	*len = (uint32_t)total;
	return off;
}

/* w->full = the full path of name in directory rel (NULL: the root). */
static int child_full(walk *w, const char *rel, const char *name)
{
	tt_buf_reset(&w->scratch);
	if (rel) {
		tt_buf_puts(&w->scratch, rel);
		tt_buf_putc(&w->scratch, '/');
	}
	tt_buf_puts(&w->scratch, name);
	if (w->scratch.failed)
		return TT_ENOMEM;
	return tt_file_join(&w->full, w->root, w->scratch.ptr);
}

static int add_entry(walk *w, size_t off, uint32_t len, bool link, const struct stat *st, wentry **out)
{
	if (TT_ARRAY_GROW(w->items, w->alloc, w->n + 1) != 0)
		return TT_ENOMEM;
	wentry *e = &w->items[w->n++];
	memset(e, 0, sizeof *e);
	e->u.off = off;
	e->len = len;
	e->link = link;
	if (st)
		e->key = key_of(st);
	*out = e;
	return 0;
}

/* A subdirectory to read later: rel "/" name, malloc'd. */
static int add_found(walk *w, const char *rel, const char *name)
{
	char *path = rel ? tt_asprintf("%s/%s", rel, name) : tt_strdup(name);
	if (!path || TT_ARRAY_GROW(w->found, w->found_alloc, w->nfound + 1) != 0) {
		free(path);
		return TT_ENOMEM;
	}
	w->found[w->nfound++] = path;
	return 0;
}

/* A symlink that is not read through: its token hashes the target's bytes
 * (os.readlink, as os.fsencode gives them back). */
int tt_file_link_token(int dfd, const char *name, char token[TT_FILE_TOKEN_MAX], int *errnum)
{
	char stack_buf[512], *target = stack_buf;
	size_t cap = sizeof stack_buf;
	ssize_t n;
	char hex[65];

	for (;;) {
		n = readlinkat(dfd, name, target, cap);
		if (n < 0) {
			*errnum = errno;
			break;
		}
		if ((size_t)n < cap)
			break;
		if (target != stack_buf)
			free(target);
		cap *= 2;
		if (!(target = tt_malloc(cap))) {
			*errnum = ENOMEM;
			return -1;
		}
	}
	if (n >= 0 && tt_sha256_hex(hex, target, (size_t)n) != 0) {
		*errnum = ENOMEM;
		n = -1;
	}
	if (target != stack_buf)
		free(target);
	if (n < 0)
		return -1;
	snprintf(token, TT_FILE_TOKEN_MAX, "symlink:%s", hex);
	return 0;
}

/*
 * A directory's entries sorted by name.  Every path in one directory
 * starts with the same "rel/", so only the names are compared, and by a
 * sort key first: a name's first 8 bytes as a big-endian number (zeros
 * past its end, and a name holds no NUL, so numbers order as strcmp
 * does).  Equal keys mean both names are at least 8 bytes long and share
 * them: the rest decides.  The keys are sorted, then the entries moved
 * into that order.
 */
typedef struct name_key {
	uint64_t pfx;
	const char *rest;       /* the name from its 9th byte */
	size_t idx;
} name_key;

static uint64_t name_prefix(const char *name)
{
	uint64_t v = 0;
	for (int i = 0; i < 8; i++) {
		unsigned char c = (unsigned char)name[i];
		v = v << 8 | c;
		if (!c) {
			v <<= 8 * (7 - i);
			break;
		}
	}
	return v;
}

static bool key_less(const name_key *a, const name_key *b)
{
	if (a->pfx != b->pfx)
		return a->pfx < b->pfx;
	return strcmp(a->rest, b->rest) < 0;
}

static void sort_keys(name_key *v, size_t n)
{
	while (n > 16) {
		/* median of three as the pivot, then Hoare's partition */
		name_key *a = &v[0], *m = &v[n / 2], *z = &v[n - 1], t;
		if (key_less(m, a)) { t = *m; *m = *a; *a = t; }
		if (key_less(z, m)) { t = *z; *z = *m; *m = t; }
		if (key_less(m, a)) { t = *m; *m = *a; *a = t; }
		name_key pivot = *m;
		size_t i = 0, j = n - 1;
		for (;;) {
			while (key_less(&v[i], &pivot))
				i++;
			while (key_less(&pivot, &v[j]))
				j--;
			if (i >= j)
				break;
			t = v[i];
			v[i] = v[j];
			v[j] = t;
			i++;
			j--;
		}
		/* [0, j] and [j + 1, n): the smaller by recursion, the larger here */
		size_t left = j + 1;
		if (left < n - left) {
			sort_keys(v, left);
			v += left;
			n -= left;
		} else {
			sort_keys(v + left, n - left);
			n = left;
		}
	}
	for (size_t i = 1; i < n; i++) {
		name_key k = v[i];
		size_t j = i;
		for (; j > 0 && key_less(&k, &v[j - 1]); j--)
			v[j] = v[j - 1];
		v[j] = k;
	}
}

static int sort_dir(walk *w, size_t first, size_t skip)
{
	size_t n = w->n - first;
	if (n < 2)
		return 0;
	tt_buf_reset(&w->scratch);
	if (tt_buf_grow(&w->scratch, n * (sizeof(name_key) + sizeof(wentry))) != 0)
		return TT_ENOMEM;
	name_key *keys = (name_key *)(void *)w->scratch.ptr; /* malloc'd: aligned for both */
	wentry *moved = (wentry *)(void *)(keys + n);
	wentry *items = w->items + first;
	for (size_t i = 0; i < n; i++) {
		const char *name = w->names.ptr + items[i].u.off + skip;
		keys[i].pfx = name_prefix(name);
		keys[i].rest = items[i].len >= skip + 8 ? name + 8 : "";
		keys[i].idx = i;
	}
	sort_keys(keys, n);
	for (size_t i = 0; i < n; i++)
		moved[i] = items[keys[i].idx];
	memcpy(items, moved, n * sizeof *items);
	return 0;
}

/* The directory just read (its entries from first on): sorted, and
 * recorded as a run. */
static int end_dir(walk *w, const char *rel, size_t first)
{
	dirrun *r;
	size_t key = w->names.len;

	if (sort_dir(w, first, rel ? strlen(rel) + 1 : 0) != 0)
		return TT_ENOMEM;
	if (rel) {
		tt_buf_puts(&w->names, rel);
		tt_buf_putc(&w->names, '/');
	}
	tt_buf_putc(&w->names, '\0');
	if (w->names.failed || TT_ARRAY_GROW(w->runs, w->runs_alloc, w->nruns + 1) != 0)
		return TT_ENOMEM;
	r = &w->runs[w->nruns++];
	r->key.off = key;
	r->start = first;
	r->count = w->n - first;
	r->walker = w->index;
	return 0;
}

/* Read one directory (rel: NULL for the root). */
static int walk_dir(walk *w, const char *rel, tt_error *err)
{
	int rc = 0;
	DIR *d;
	int dfd;
	size_t first = w->n;

	/* tether-vcs hashes and lists names as UTF-8 text; a file whose path is
	 * not cannot be written into a listing. */
	size_t rel_len = rel ? strlen(rel) : 0;
	bool rel_utf8 = !rel || tt_utf8_valid(rel, rel_len);

	if (tt_file_join(&w->full, w->root, rel) != 0)
		return tt_error_oom(err);
	if (!(d = opendir(w->full.ptr))) {
		/* A subdirectory removed (or replaced) since its parent was read
		 * is what a walk a moment later would see: nothing there. */
		if (rel && (errno == ENOENT || errno == ENOTDIR))
			return end_dir(w, rel, first) != 0 ? tt_error_oom(err) : 0;
		return tt_file_os_error(err, errno, w->full.ptr);
	}
	dfd = dirfd(d);
	for (;;) {
		struct dirent *de;
		struct stat st;
		unsigned char type;
		size_t off;
		uint32_t len;
		wentry *e;

		errno = 0;
		if (!(de = readdir(d))) {
			if (errno) {
				int errnum = errno;
				if (tt_file_join(&w->full, w->root, rel))
					rc = tt_error_oom(err);
				else
					rc = tt_file_os_error(err, errnum, w->full.ptr);
			}
			break;
		}
		if (de->d_name[0] == '.' &&
		    (de->d_name[1] == '\0' || (de->d_name[1] == '.' && de->d_name[2] == '\0')))
			continue;
		if (w->h->race_hook) {
			if (child_full(w, rel, de->d_name) != 0) {
				rc = tt_error_oom(err);
				break;
			}
			w->h->race_hook(w->h->race_ctx, w->full.ptr, TT_FHASH_LISTED);
		}
		type = de->d_type;
		if (type == DT_UNKNOWN) {
			/* The file system does not say: lstat, as DirEntry does. */
			if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
				if (errno == ENOENT)
					continue; /* gone since readdir */
				rc = errno;
				goto os_error;
			}
			type = IFTODT(st.st_mode);
		}
		if (type != DT_DIR && type != DT_REG && type != DT_LNK)
			continue; /* FIFOs, sockets, devices: not files */
		if (type != DT_DIR && (!rel_utf8 || !tt_utf8_valid(de->d_name, strlen(de->d_name)))) {
			if (child_full(w, rel, de->d_name) != 0) {
				rc = tt_error_oom(err);
			} else {
				rc = tt_error_set(err, TT_EBACKEND,
						  "file name is not valid UTF-8: %s (rename it, or "
						  "track its directory some other way)", w->full.ptr);
				tt_error_object(err, NULL, KIND);
			}
			break;
		}
		if (type == DT_DIR) {
			if (add_found(w, rel, de->d_name) != 0) {
				rc = tt_error_oom(err);
				break;
			}
			continue;
		}
		/* A file, or a symlink to one: stat through.  A dangling symlink
		 * (ENOENT) is not a file; any other failure is an error, as
		 * DirEntry.is_file() raises it. */
		if (fstatat(dfd, de->d_name, &st, 0) != 0) {
			if (type == DT_REG && errno == ENOENT)
				continue; /* gone since readdir */
			if (type == DT_REG || errno != ENOENT) {
				rc = errno;
				goto os_error;
			}
			st.st_mode = 0;
		}
		if (S_ISREG(st.st_mode)) {
			/* The owner marker is not content; only at the root. */
			if (!rel && strcmp(de->d_name, TT_FILE_OWNER_MARKER) == 0)
				continue;
			if (type == DT_LNK)
				w->links_through++;
			if ((off = add_name(w, rel, rel_len, de->d_name, &len)) == SIZE_MAX ||
			    add_entry(w, off, len, false, &st, &e) != 0) {
				rc = tt_error_oom(err);
				break;
			}
			continue;
		}
		if (type != DT_LNK)
			continue; /* a "regular" entry that stat calls something else */
		{
			char token[TT_FILE_TOKEN_MAX];
			int errnum = 0;
			if (tt_file_link_token(dfd, de->d_name, token, &errnum) != 0) {
				rc = errnum;
				goto os_error;
			}
			/* name "\0" token "\0" */
			if ((off = add_name(w, rel, rel_len, de->d_name, &len)) == SIZE_MAX ||
			    tt_buf_put(&w->names, token, strlen(token) + 1) != 0 ||
			    add_entry(w, off, len, true, NULL, &e) != 0) {
				rc = tt_error_oom(err);
				break;
			}
		}
		continue;
	os_error:
		if (child_full(w, rel, de->d_name) != 0)
			rc = tt_error_oom(err);
		else
			rc = tt_file_os_error(err, rc, w->full.ptr);
		break;
	}
	closedir(d);
	if (rc == 0 && end_dir(w, rel, first) != 0)
		rc = tt_error_oom(err);
	return rc;
}

/* One walker: take directories off the shared stack until none is left
 * and no walker can add more. */
static void walker(size_t index, void *arg)
{
	walk *w = &((walk *)arg)[index];
	walkq *q = w->q;

	for (;;) {
		char *rel;
		int rc;

		pthread_mutex_lock(&q->mu);
		while (!q->ndirs && q->busy && !q->stop)
			pthread_cond_wait(&q->cv, &q->mu);
		if (!q->ndirs || q->stop) {
			pthread_mutex_unlock(&q->mu);
			return;
		}
		rel = q->dirs[--q->ndirs];
		q->busy++;
		pthread_mutex_unlock(&q->mu);

		rc = walk_dir(w, rel, &w->err);
		free(rel);

		pthread_mutex_lock(&q->mu);
		q->busy--;
		if (rc) {
			w->rc = rc;
			q->stop = true;
		} else if (w->nfound) {
			if (TT_ARRAY_GROW(q->dirs, q->alloc, q->ndirs + w->nfound) != 0) {
				w->rc = tt_error_oom(&w->err);
				q->stop = true;
			} else {
				memcpy(q->dirs + q->ndirs, w->found, w->nfound * sizeof *w->found);
				q->ndirs += w->nfound;
				w->nfound = 0;
			}
		}
		pthread_cond_broadcast(&q->cv);
		pthread_mutex_unlock(&q->mu);
		if (w->rc)
			return;
	}
}

/* The listing's digest, fed rows in order a run at a time.  Rows are
 * gathered into a block before hashing: a call per field costs more than
 * the hashing of a hundred bytes. */
typedef struct rows_digest {
	blake2b_state S;
	size_t used;
	uint8_t block[16384];
} rows_digest;

static void digest_begin(rows_digest *d)
{
	blake2b_init(&d->S, 16);
	d->used = 0;
}

/* One field with its NUL separator. */
static void digest_field(rows_digest *d, const char *f, size_t len)
{
	if (d->used + len + 1 > sizeof d->block) {
		blake2b_update(&d->S, d->block, d->used);
		d->used = 0;
	}
	if (len + 1 > sizeof d->block) { /* a path longer than the block */
		blake2b_update(&d->S, (const uint8_t *)f, len);
		blake2b_update(&d->S, (const uint8_t *)"", 1);
		return;
	}
	memcpy(d->block + d->used, f, len);
	d->block[d->used + len] = 0;
	d->used += len + 1;
}

static void digest_rows(rows_digest *d, const tt_file_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		digest_field(d, rows[i].path, strlen(rows[i].path));
		digest_field(d, rows[i].token, strlen(rows[i].token));
	}
}

static void digest_end(rows_digest *d, char hex[33])
{
	uint8_t out[16];
	blake2b_update(&d->S, d->block, d->used);
	blake2b_final(&d->S, out, sizeof out);
	tt_hex(hex, out, sizeof out);
}

struct tt_file_digest {
	rows_digest d;
};

tt_file_digest *tt_file_digest_new(void)
{
	tt_file_digest *fd = malloc(sizeof *fd);
	if (fd)
		digest_begin(&fd->d);
	return fd;
}

void tt_file_digest_add(tt_file_digest *fd, const char *path, size_t plen, const char *token)
{
	digest_field(&fd->d, path, plen);
	digest_field(&fd->d, token, strlen(token));
}

void tt_file_digest_end(tt_file_digest *fd, char hex[33])
{
	digest_end(&fd->d, hex);
}

void tt_file_digest_free(tt_file_digest *fd)
{
	free(fd);
}

void tt_file_rows_digest(const tt_file_row *rows, size_t n, char hex[33])
{
	rows_digest d;
	digest_begin(&d);
	digest_rows(&d, rows, n);
	digest_end(&d, hex);
}

void tt_file_tree_release(tt_file_tree *t)
{
	if (!t)
		return;
	free(t->rows);
	free(t->names);
	for (size_t i = 0; i < t->nmore; i++)
		free(t->more_names[i]);
	free(t->more_names);
	memset(t, 0, sizeof *t);
}

/*
 * After the walk, the work per entry (the full paths the cache is
 * keyed by, the cache lookups, the rows) is split across threads too: for
 * a cached refresh of a large tree it is most of what is left once the
 * kernel has answered the stats.  Below PARALLEL_MIN entries a thread
 * costs more than it saves.  The sorted entries are cut into slices of
 * about SLICE entries, taken in order; the listing's digest (one BLAKE2b
 * stream, so on one thread at a time) follows them, fed each slice as soon
 * as it and every slice before it are done, so it runs beside the
 * lookups instead of after them.  A slice with cache misses stops it: the
 * rest is digested once the misses are hashed.
 */
#define PARALLEL_MIN 16384u
#define SLICE 4096u

struct digest_line;

/* One slice of the sorted entries: their full paths (in a buffer of its
 * own), the cache's answer for each file, its rows. */
typedef struct resolve_part {
	tt_fhash *h;
	const char *root;
	wentry **v;
	tt_file_row *rows;      /* the slice's rows: a file's token is written there */
	size_t n;
	tt_buf fulls;
	miss *misses;           /* room for n */
	size_t nmiss;
	uint64_t hits, size;
	bool oom;
	struct digest_line *line;
} resolve_part;

/* The digest following the slices. */
typedef struct digest_line {
	pthread_mutex_t mu;
	resolve_part *parts;
	unsigned char *done;    /* per slice: resolved */
	size_t nparts, next;    /* next: the first slice not digested */
	bool busy;              /* a thread is feeding the digest */
	bool stopped;           /* at a slice with misses: finished after hashing */
	rows_digest d;
} digest_line;

/* Slice i is resolved: feed the digest every slice now ready in order,
 * unless another thread is doing so (it will see this one when it gets
 * here, since done[] and next are read and written under the mutex). */
static void line_done(digest_line *l, size_t i)
{
	pthread_mutex_lock(&l->mu);
	l->done[i] = 1;
	if (!l->busy) {
		l->busy = true;
		while (!l->stopped && l->next < l->nparts && l->done[l->next]) {
			resolve_part *p = &l->parts[l->next];
			if (p->nmiss || p->oom) {
				l->stopped = true;
				break;
			}
			pthread_mutex_unlock(&l->mu);
			digest_rows(&l->d, p->rows, p->n);
			pthread_mutex_lock(&l->mu);
			l->next++;
		}
		l->busy = false;
	}
	pthread_mutex_unlock(&l->mu);
}

/* b = base (str(Path(root)) and its '/', as join_full builds a child's
 * path; written once) + rel: only rel is copied. */
static void full_into(tt_buf *b, size_t base_len, const char *rel, size_t len)
{
	b->len = base_len;
	tt_buf_put(b, rel, len);
}

static void resolve_slice(resolve_part *p);

static void resolve_one(size_t i, void *arg)
{
	resolve_part *p = &((resolve_part *)arg)[i];
	resolve_slice(p);
	line_done(p->line, i);
}

static void resolve_slice(resolve_part *p)
{
	size_t rl = strlen(p->root), need = 0;
	bool dot = strcmp(p->root, ".") == 0;
	bool slash = !dot && (rl == 0 || p->root[rl - 1] != '/');
	/* The caller holds h->lock for all the slices: the table only is read.
	 * Each lookup's slot is asked for a few entries ahead; the full paths
	 * (the cache's keys) live in a ring of that many buffers, and only a
	 * miss keeps its own. */
	enum { AHEAD = 8, RING = AHEAD + 1 };
	size_t hint = 0;        /* the binary copy's next record: slices are in key order */
	tt_buf ring[RING];
	size_t base_len = (dot ? 0 : rl) + (slash ? 1 : 0);
	for (int k = 0; k < RING; k++) {
		tt_buf_init(&ring[k], 0);
		if (!dot)
			tt_buf_put(&ring[k], p->root, rl);
		if (slash)
			tt_buf_putc(&ring[k], '/');
		if (ring[k].failed || ring[k].len != base_len)
			p->oom = true;
	}
	if (p->oom) {
		for (int k = 0; k < RING; k++)
			tt_buf_release(&ring[k]);
		return;
	}
	for (size_t j = 0; j < p->n && j < AHEAD; j++)
		if (!p->v[j]->link) {
			full_into(&ring[j % RING], base_len, p->v[j]->u.path, p->v[j]->len);
			if (p->h->entries)
				tt_hcache_prefetch(p->h->entries, ring[j % RING].ptr, ring[j % RING].len);
		}
	for (size_t j = 0; j < p->n; j++) {
		wentry *e = p->v[j];
		tt_file_row *r = &p->rows[j];
		size_t a = j + AHEAD;
		r->path = e->u.path;
		r->size = e->link ? 0 : e->key.size;
		p->size += r->size;
		if (e->link) { /* its token follows its name */
			const char *t = e->u.path + e->len + 1;
			memcpy(r->token, t, strlen(t) + 1);
		}
		if (a < p->n && !p->v[a]->link) {
			full_into(&ring[a % RING], base_len, p->v[a]->u.path, p->v[a]->len);
			if (p->h->entries)
				tt_hcache_prefetch(p->h->entries, ring[a % RING].ptr, ring[a % RING].len);
		}
		if (e->link)
			continue;
		tt_buf *key = &ring[j % RING];
		if (key->failed) {
			p->oom = true;
			break;
		}
		if (cache_lookup_locked(p->h, key->ptr, key->len, &e->key, p->rows[j].token, &hint)) {
			p->hits++;
			continue;
		}
		p->misses[p->nmiss].path = (const char *)e;  /* the entry, until its path is kept */
		p->misses[p->nmiss].key = e->key;
		p->misses[p->nmiss].hex = p->rows[j].token;
		p->nmiss++;
		need += key->len + 1;
	}
	for (int k = 0; k < RING; k++)
		tt_buf_release(&ring[k]);
	if (p->oom || !p->nmiss)
		return;
	/* The misses' full paths, in one block that does not move. */
	if (tt_buf_grow(&p->fulls, need) != 0) {
		p->oom = true;
		return;
	}
	for (size_t m = 0; m < p->nmiss; m++) {
		wentry *e = (wentry *)p->misses[m].path;
		const char *full = p->fulls.ptr + p->fulls.len;
		if (!dot)
			tt_buf_put(&p->fulls, p->root, rl);
		if (slash)
			tt_buf_putc(&p->fulls, '/');
		tt_buf_put(&p->fulls, e->u.path, (size_t)e->len + 1);
		p->misses[m].path = full;
	}
}

/* The cache file is parsed while the walk runs. */
typedef struct loader {
	tt_fhash *h;
	int rc;
	tt_error err;
} loader;

static void *load_cache(void *arg)
{
	loader *l = arg;
	pthread_mutex_lock(&l->h->lock);
	l->rc = cache_load_locked(l->h, &l->err);
	pthread_mutex_unlock(&l->h->lock);
	return NULL;
}

static unsigned walkers_for(tt_fhash *h)
{
	unsigned n;
	pthread_mutex_lock(&h->lock);
	n = h->threads;
	pthread_mutex_unlock(&h->lock);
	n = default_threads(n);
	return n > 16 ? 16 : n;
}

static int by_key(const void *pa, const void *pb)
{
	const dirrun *a = pa, *b = pb;
	return strcmp(a->key.path, b->key.path);
}

/*
 * The entries in path order, from the directories' runs sorted by key: a
 * directory's subtree is one block of that order (every path in it starts
 * with its key) that follows the directory's own key, and a file of its
 * parent sorts before the whole block or after it, as its path compares
 * with the key.  So each directory's sorted files are merged with its
 * children's blocks, emitted in turn.  Returns the run after runs[i]'s
 * block.  The depth of recursion is the tree's.
 */
static size_t emit_run(const dirrun *runs, size_t nruns, size_t i, const walk *ws, wentry **order,
		       size_t *k)
{
	const dirrun *d = &runs[i];
	const wentry *files = ws[d->walker].items + d->start;
	size_t klen = strlen(d->key.path), f = 0, j = i + 1;

	while (j < nruns && strncmp(runs[j].key.path, d->key.path, klen) == 0) {
		while (f < d->count && strcmp(files[f].u.path, runs[j].key.path) < 0)
			order[(*k)++] = (wentry *)&files[f++];
		j = emit_run(runs, nruns, j, ws, order, k);
	}
	while (f < d->count)
		order[(*k)++] = (wentry *)&files[f++];
	return j;
}

static int order_entries(walk *ws, unsigned nw, wentry **order, size_t n, tt_error *err)
{
	size_t nruns = 0, k = 0;
	dirrun *runs;

	for (unsigned i = 0; i < nw; i++)
		nruns += ws[i].nruns;
	if (!nruns)
		return 0;
	if (!(runs = tt_reallocarray(NULL, nruns, sizeof *runs)))
		return tt_error_oom(err);
	nruns = 0;
	for (unsigned i = 0; i < nw; i++) {
		if (ws[i].nruns) /* a walker that took no directory has no runs (NULL) */
			memcpy(runs + nruns, ws[i].runs, ws[i].nruns * sizeof *runs);
		nruns += ws[i].nruns;
	}
	qsort(runs, nruns, sizeof *runs, by_key);
	/* runs[0] is the root (key ""); its block is everything. */
	emit_run(runs, nruns, 0, ws, order, &k);
	free(runs);
	return k == n ? 0 : tt_error_set(err, TT_ERROR, "[file] the walk lost track of %zu entries",
					   n - k);
}

static int fhash_dir_once(tt_fhash *h, const char *root, tt_file_tree *out, bool *vanished,
			  tt_error *err)
{
	int rc = 0;
	walk *ws = NULL;
	size_t n = 0;                 /* entries of every walker */
	walkq q;
	wentry **order = NULL;        /* the entries sorted by path */
	unsigned nw = walkers_for(h);
	miss *misses = NULL;
	size_t nmiss = 0;
	uint64_t hits = 0;
	loader ld = { h, 0, TT_ERROR_INIT };
	resolve_part *parts = NULL;
	size_t nparts = 0;
	digest_line line = { .mu = PTHREAD_MUTEX_INITIALIZER };
	pthread_t ldt;
	bool loading = false;

	memset(out, 0, sizeof *out);
	memset(&q, 0, sizeof q);
	pthread_mutex_init(&q.mu, NULL);
	pthread_cond_init(&q.cv, NULL);

	pthread_mutex_lock(&h->lock);
	loading = !h->loaded && h->cache_file;
	pthread_mutex_unlock(&h->lock);
	if (loading)
		loading = pthread_create(&ldt, NULL, load_cache, &ld) == 0;

	if (!(ws = tt_calloc(nw, sizeof *ws)) ||
	    TT_ARRAY_GROW(q.dirs, q.alloc, 1) != 0) {
		rc = tt_error_oom(err);
		goto done;
	}
	q.dirs[q.ndirs++] = NULL; /* the root */
	for (unsigned i = 0; i < nw; i++) {
		ws[i].root = root;
		ws[i].q = &q;
		ws[i].h = h;
		ws[i].index = i;
		tt_buf_init(&ws[i].names, 0);
		tt_buf_init(&ws[i].full, 0);
		tt_buf_init(&ws[i].scratch, 0);
		ws[i].err = (tt_error)TT_ERROR_INIT;
	}
	if ((rc = tt_pool_map(nw, nw, walker, ws, err)) != 0)
		goto done;
	for (unsigned i = 0; i < nw; i++) {
		if (ws[i].rc) {
			tt_error_move(err, &ws[i].err);
			rc = ws[i].rc;
			goto done;
		}
	}
	/* The walkers' names buffers have stopped moving: point into them
	 * (each stays where it is, and the tree takes them over). */
	for (unsigned i = 0; i < nw; i++) {
		if (ws[i].names.failed) {
			rc = tt_error_oom(err);
			goto done;
		}
		n += ws[i].n;
		out->links_through += ws[i].links_through;
		for (size_t j = 0; j < ws[i].n; j++) /* UTF-8: walk_dir checked */
			ws[i].items[j].u.path = ws[i].names.ptr + ws[i].items[j].u.off;
		for (size_t j = 0; j < ws[i].nruns; j++)
			ws[i].runs[j].key.path = ws[i].names.ptr + ws[i].runs[j].key.off;
	}
	if (n && !(order = tt_reallocarray(NULL, n, sizeof *order))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (n && (rc = order_entries(ws, nw, order, n, err)) != 0)
		goto done;

	/* The rows, in order: the cache's answers and the hashes land there. */
	if (n && !(out->rows = tt_reallocarray(NULL, n, sizeof *out->rows))) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* Full paths (the cache's keys), then the cache's answers, in slices. */
	if (n && !(misses = tt_calloc(n, sizeof *misses))) {
		rc = tt_error_oom(err);
		goto done;
	}
	nparts = n < PARALLEL_MIN || nw < 2 ? 1 : (n + SLICE - 1) / SLICE;
	if (!(parts = tt_calloc(nparts, sizeof *parts)) || !(line.done = tt_calloc(nparts, 1))) {
		rc = tt_error_oom(err);
		goto done;
	}
	line.parts = parts;
	line.nparts = nparts;
	digest_begin(&line.d);
	for (size_t i = 0; i < nparts; i++) {
		size_t from = n * i / nparts, to = n * (i + 1) / nparts;
		parts[i] = (resolve_part){ h, root, order + from, out->rows + from, to - from, TT_BUF_INIT,
					   misses + from, 0, 0, 0, false, &line };
		tt_buf_init(&parts[i].fulls, 0);
	}
	if (loading) {
		pthread_join(ldt, NULL);
		loading = false;
		if ((rc = ld.rc) != 0) {
			tt_error_move(err, &ld.err);
			goto done;
		}
	}
	pthread_mutex_lock(&h->lock);
	rc = cache_load_locked(h, err);
	if (rc == 0)
		rc = tt_pool_map(nparts, nparts < nw ? (unsigned)nparts : nw, resolve_one, parts, err);
	pthread_mutex_unlock(&h->lock);
	if (rc)
		goto done;
	for (size_t i = 0; i < nparts; i++) {
		if (parts[i].oom) {
			rc = tt_error_oom(err);
			goto done;
		}
		/* The slices' misses, moved together in order. */
		if (parts[i].nmiss)
			memmove(misses + nmiss, parts[i].misses, parts[i].nmiss * sizeof *misses);
		nmiss += parts[i].nmiss;
		hits += parts[i].hits;
		out->size += parts[i].size;
	}
	atomic_fetch_add(&h->hits, hits);
	if ((rc = hash_misses(h, misses, nmiss, vanished, err)) != 0)
		goto done;

	/* The tree: the rows point into names (which does not move when the
	 * tree takes it over); the slices the digest has not had yet. */
	if (nw > 1 && !(out->more_names = tt_calloc(nw - 1, sizeof *out->more_names))) {
		rc = tt_error_oom(err);
		goto done;
	}
	out->names = tt_buf_detach(&ws[0].names);
	for (unsigned i = 1; out->names && i < nw; i++) {
		if (!(out->more_names[out->nmore] = tt_buf_detach(&ws[i].names))) {
			rc = tt_error_oom(err);
			goto done;
		}
		out->nmore++;
	}
	if (!out->names) {
		rc = tt_error_oom(err);
		goto done;
	}
	out->n = n;
	for (; line.next < nparts; line.next++)
		digest_rows(&line.d, parts[line.next].rows, parts[line.next].n);
	digest_end(&line.d, out->digest);
done:
	if (loading)
		pthread_join(ldt, NULL);
	tt_error_clear(&ld.err);
	if (rc)
		tt_file_tree_release(out);
	for (unsigned i = 0; ws && i < nw; i++) {
		for (size_t j = 0; j < ws[i].nfound; j++)
			free(ws[i].found[j]);
		free(ws[i].found);
		free(ws[i].items);
		free(ws[i].runs);
		tt_buf_release(&ws[i].names);
		tt_buf_release(&ws[i].full);
		tt_buf_release(&ws[i].scratch);
		tt_error_clear(&ws[i].err);
	}
	free(ws);
	for (size_t j = 0; j < q.ndirs; j++)
		free(q.dirs[j]);
	free(q.dirs);
	pthread_mutex_destroy(&q.mu);
	pthread_cond_destroy(&q.cv);
	for (size_t i = 0; parts && i < nparts; i++)
		tt_buf_release(&parts[i].fulls);
	free(parts);
	free(line.done);
	free(misses);
	free(order);
	return rc;
}

/* How many times a walk is taken again when a file it listed is gone
 * before it could be read. */
#define VANISHED_RETRIES 3

/*
 * The tree of root.  A directory written to while it is walked can lose a
 * listed file before its bytes are read; the walk is then taken again (a
 * few times), and only a directory that keeps changing is an error.
 */
int tt_fhash_dir(tt_fhash *h, const char *root, tt_file_tree *out, tt_error *err)
{
	for (int attempt = 0;; attempt++) {
		bool vanished = false;
		int rc = fhash_dir_once(h, root, out, &vanished, err);
		if (rc == 0 || !vanished)
			return rc;
		if (attempt == VANISHED_RETRIES) {
			char *why = err->message ? tt_strdup(err->message) : NULL;
			tt_error_clear(err);
			rc = tt_error_set(err, TT_EBACKEND,
					  "%s changed while it was fingerprinted (%s); run again once "
					  "nothing writes to it", root, why ? why : "a listed file vanished");
			tt_error_object(err, NULL, KIND);
			free(why);
			return rc;
		}
		tt_error_clear(err);
	}
}
