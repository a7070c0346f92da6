/*
 * storage/local.c - the store interface on a local directory.
 *
 * A key is a file under the root.  Writes go through util/fs.c (a
 * temporary "<name>#<digits>" in the same directory, fsync, rename or link,
 * fsync of the directory), so a blob is replaced whole.  That temporary form
 * is the one object_store's local listing skips as its own staging files, so
 * a temporary left by an interrupted write is invisible to the libraries
 * (icechunk, Lance, delta-rs) that read the same directory through it.
 * Conditional writes and deletes of one directory's keys are serialised
 * by an flock(2) on that directory, which makes put_if_match a
 * compare-and-swap between processes too.  The ETag
 * is the one the object-store libraries give a local file:
 * "<inode>-<mtime in µs>-<size>", each in lower-case hex.
 *
 * Listing walks the tree below the prefix's directory, skips the
 * temporaries of writes in flight ("<name>#<digits>", and the older
 * ".<name>.<random>.tmp") and anything not a regular file, sorts by key
 * and pages by "the last key returned".
 */
#define _GNU_SOURCE
#include "storage/store.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/mem.h"

typedef struct local_impl {
	char *root;
} local_impl;

#define ROOT(s) (((local_impl *)(s)->impl)->root)

static char *key_path(tt_store *s, const char *key)
{
	return tt_asprintf("%s/%s", ROOT(s), key);
}

static int meta_from_stat(const struct stat *st, tt_store_meta *m, tt_error *err)
{
	uint64_t us = (uint64_t)st->st_mtim.tv_sec * 1000000u + (uint64_t)st->st_mtim.tv_nsec / 1000u;
	m->size = (uint64_t)st->st_size;
	m->mtime_ns = (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;
	m->etag = tt_asprintf("%" PRIx64 "-%" PRIx64 "-%" PRIx64, (uint64_t)st->st_ino, us,
			      (uint64_t)st->st_size);
	return m->etag ? 0 : tt_error_oom(err);
}

static int not_found(tt_store *s, const char *key, tt_error *err)
{
	return tt_error_set(err, TT_ENOTFOUND, "%s: no blob '%s'", s->display, key);
}

static int io_err(tt_store *s, const char *key, int e, const char *what, tt_error *err)
{
	return tt_error_errno(err, e, "%s: %s '%s'", s->display, what, key);
}

static int local_head(tt_store *s, const char *key, const char *version, tt_store_meta *out,
		      tt_error *err)
{
	struct stat st;
	char *path = key_path(s, key);
	int rc;
	(void)version;
	if (!path)
		return tt_error_oom(err);
	rc = stat(path, &st);
	free(path);
	if (rc != 0)
		return errno == ENOENT || errno == ENOTDIR ? not_found(s, key, err)
							   : io_err(s, key, errno, "cannot stat", err);
	if (!S_ISREG(st.st_mode))
		return not_found(s, key, err);
	return meta_from_stat(&st, out, err);
}

static int open_blob(tt_store *s, const char *key, struct stat *st, tt_error *err)
{
	char *path = key_path(s, key);
	int fd;
	if (!path)
		return tt_error_oom(err);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	free(path);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == EISDIR
			       ? not_found(s, key, err)
			       : io_err(s, key, errno, "cannot open", err);
	if (fstat(fd, st) != 0 || !S_ISREG(st->st_mode)) {
		int e = errno;
		bool reg = S_ISREG(st->st_mode);
		close(fd);
		return reg ? io_err(s, key, e, "cannot stat", err) : not_found(s, key, err);
	}
	return fd;
}

/* Read [off, off+len) of fd into out. */
static int read_span(tt_store *s, const char *key, int fd, uint64_t off, uint64_t len, tt_buf *out,
		     tt_error *err)
{
	size_t start = out->len;
	if (len > SIZE_MAX / 2 || (out->max && out->len + len > out->max))
		return tt_error_set(err, TT_ELIMIT, "%s: blob '%s' is larger than the %zu bytes allowed",
				    s->display, key, out->max);
	if (tt_buf_grow(out, (size_t)len) != 0)
		return tt_buf_check(out, err, key);
	while (len > 0) {
		ssize_t r = pread(fd, out->ptr + out->len, (size_t)len, (off_t)off);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			int e = errno;
			tt_buf_truncate(out, start);
			return io_err(s, key, e, "cannot read", err);
		}
		if (r == 0)
			break;
		out->len += (size_t)r;
		out->ptr[out->len] = '\0';
		off += (uint64_t)r;
		len -= (uint64_t)r;
	}
	return 0;
}

static int local_get(tt_store *s, const char *key, const char *version, tt_buf *out,
		     tt_store_meta *meta, tt_error *err)
{
	struct stat st;
	int fd = open_blob(s, key, &st, err), rc;
	(void)version;
	if (fd < 0)
		return fd;
	rc = read_span(s, key, fd, 0, (uint64_t)st.st_size, out, err);
	close(fd);
	if (rc == 0 && meta)
		rc = meta_from_stat(&st, meta, err);
	return rc;
}

static int local_get_range(tt_store *s, const char *key, const char *version, uint64_t off,
			   uint64_t len, tt_buf *out, tt_error *err)
{
	struct stat st;
	int fd = open_blob(s, key, &st, err), rc;
	(void)version;
	if (fd < 0)
		return fd;
	if (off >= (uint64_t)st.st_size)
		len = 0;
	else if (len > (uint64_t)st.st_size - off)
		len = (uint64_t)st.st_size - off;
	rc = read_span(s, key, fd, off, len, out, err);
	close(fd);
	return rc;
}

/* ---- listing ------------------------------------------------------------------- */

typedef struct key_list {
	tt_store_entry *v;
	size_t n, alloc;
} key_list;

static bool is_temporary(const char *name)
{
	size_t n = strlen(name);
	return (name[0] == '.' && n > 5 && strcmp(name + n - 4, ".tmp") == 0) ||
	       tt_is_staged_temp(name);
}

/* Every key under directory k ("k/...") sorts before token t: "k/" does
 * and t does not lie under it (where t and "k/" first differ, "k/" has
 * the smaller byte, and so has every key that starts with it). */
static bool dir_before_token(const char *k, size_t klen, const char *t)
{
	int c = strncmp(k, t, klen);
	if (c != 0)
		return c < 0;
	unsigned char next = (unsigned char)t[klen]; /* t is at least klen long: k holds no NUL */
	return next != '\0' && next > '/';
}

/* Every regular file below dir (whose key prefix is rel: "" or "a/b/")
 * whose key starts with prefix and sorts after token; with_meta: its
 * size, mtime and ETag too (else only the key, and a regular file that
 * the directory entry names as one is not stat'ed).  A name that can
 * neither be such a key nor hold one is skipped before anything else. */
static int walk(tt_store *s, const char *dir, const char *rel, const char *prefix, const char *token,
		bool with_meta, key_list *kl, tt_error *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	int rc = 0;
	size_t plen = strlen(prefix), rlen = strlen(rel);
	tt_buf key = TT_BUF_INIT;

	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0 : io_err(s, rel, errno, "cannot list", err);
	while (rc == 0 && (de = readdir(d))) {
		struct stat st;
		const char *name = de->d_name;
		if (!strcmp(name, ".") || !strcmp(name, "..") || is_temporary(name))
			continue;
		tt_buf_reset(&key);
		tt_buf_put(&key, rel, rlen);
		tt_buf_puts(&key, name);
		if (key.failed) {
			rc = tt_error_oom(err);
			break;
		}
		size_t klen = key.len;
		/* a blob here: the key starts with prefix and sorts after token;
		 * a directory: its keys ("key/...") can start with prefix */
		bool as_dir = strncmp(key.ptr, prefix, klen < plen ? klen : plen) == 0;
		bool as_blob = as_dir && klen >= plen && (!token || strcmp(key.ptr, token) > 0);
		if (as_dir && token && dir_before_token(key.ptr, klen, token))
			as_dir = false;
		if (!as_dir && !as_blob)
			continue;
		unsigned char type = de->d_type;
		bool stat_it = with_meta || (type != DT_REG && type != DT_DIR);
		if (stat_it) {
			if (fstatat(dirfd(d), name, &st, 0) != 0)
				continue; /* vanished meanwhile, or a dangling link: not a blob */
		} else {
			st.st_mode = type == DT_DIR ? S_IFDIR : S_IFREG;
		}
		if (S_ISDIR(st.st_mode)) {
			if (!as_dir)
				continue;
			char *path = tt_asprintf("%s/%s", dir, name);
			if (!path || tt_buf_putc(&key, '/') != 0) {
				free(path);
				rc = tt_error_oom(err);
				break;
			}
			rc = walk(s, path, key.ptr, prefix, token, with_meta, kl, err);
			free(path);
		} else if (S_ISREG(st.st_mode) && as_blob) {
			if (TT_ARRAY_GROW(kl->v, kl->alloc, kl->n + 1) != 0) {
				rc = tt_error_oom(err);
				break;
			}
			tt_store_entry *e = &kl->v[kl->n];
			memset(e, 0, sizeof *e);
			if (!(e->key = tt_strndup(key.ptr, key.len))) {
				rc = tt_error_oom(err);
				break;
			}
			kl->n++;
			if (with_meta)
				rc = meta_from_stat(&st, &e->meta, err);
		}
	}
	tt_buf_release(&key);
	closedir(d);
	return rc;
}

static int cmp_entry(const void *a, const void *b)
{
	return strcmp(((const tt_store_entry *)a)->key, ((const tt_store_entry *)b)->key);
}

static int list_local(tt_store *s, const char *prefix, const char *token, size_t max_keys, bool with_meta,
		      tt_store_page *out, tt_error *err)
{
	key_list kl = { 0 };
	const char *slash = strrchr(prefix, '/');
	char *rel = slash ? tt_strndup(prefix, (size_t)(slash - prefix + 1)) : tt_strdup("");
	char *dir = rel ? tt_asprintf("%s/%s", ROOT(s), rel) : NULL;
	int rc;

	if (!dir) {
		free(rel);
		return tt_error_oom(err);
	}
	rc = walk(s, dir, rel, prefix, token, with_meta, &kl, err);
	free(dir);
	free(rel);
	if (rc == 0) {
		if (kl.n)
			qsort(kl.v, kl.n, sizeof *kl.v, cmp_entry);
		if (kl.n > max_keys) {
			for (size_t i = max_keys; i < kl.n; i++) {
				free(kl.v[i].key);
				tt_store_meta_release(&kl.v[i].meta);
			}
			kl.n = max_keys;
			if (!(out->next = tt_strdup(kl.v[kl.n - 1].key)))
				rc = tt_error_oom(err);
		}
	}
	out->items = kl.v;
	out->n = kl.n;
	if (rc)
		tt_store_page_release(out);
	return rc;
}

static int local_list(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		      tt_store_page *out, tt_error *err)
{
	return list_local(s, prefix, token, max_keys, true, out, err);
}

static int local_list_keys(tt_store *s, const char *prefix, const char *token, size_t max_keys,
			   tt_store_page *out, tt_error *err)
{
	return list_local(s, prefix, token, max_keys, false, out, err);
}

/* One directory's entries: its blobs and its subdirectories (empty ones
 * too), not the temporaries of writes in flight nor anything else.  The
 * names go into one block (page.keys), a directory of commits being many
 * short names. */
static int local_list_names(tt_store *s, const char *dir, tt_store_page *out, tt_error *err)
{
	char *path = *dir ? key_path(s, dir) : tt_strdup(ROOT(s));
	tt_buf names = TT_BUF_INIT;
	DIR *d;
	struct dirent *de;
	size_t alloc = 0;
	int rc = 0;

	if (!path)
		return tt_error_oom(err);
	d = opendir(path);
	free(path);
	if (!d)
		return errno == ENOENT || errno == ENOTDIR ? 0 : io_err(s, dir, errno, "cannot list", err);
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		struct stat st;
		if (!strcmp(name, ".") || !strcmp(name, "..") || is_temporary(name))
			continue;
		if (de->d_type != DT_REG && de->d_type != DT_DIR &&
		    (fstatat(dirfd(d), name, &st, 0) != 0 ||
		     !(S_ISREG(st.st_mode) || S_ISDIR(st.st_mode))))
			continue; /* vanished meanwhile, a dangling link, a device */
		if (TT_ARRAY_GROW(out->items, alloc, out->n + 1) != 0) {
			rc = tt_error_oom(err);
			break;
		}
		memset(&out->items[out->n], 0, sizeof out->items[out->n]);
		/* an offset for now: the block moves as it grows */
		out->items[out->n++].key = (char *)(uintptr_t)names.len;
		tt_buf_put(&names, name, strlen(name) + 1);
	}
	closedir(d);
	if (rc == 0 && names.failed)
		rc = tt_error_oom(err);
	if (rc == 0) {
		out->keys = tt_buf_detach(&names);
		for (size_t i = 0; i < out->n; i++)
			out->items[i].key = out->keys + (uintptr_t)out->items[i].key;
	} else {
		tt_buf_release(&names);
		free(out->items);
		memset(out, 0, sizeof *out);
	}
	return rc;
}

/* ---- writes -------------------------------------------------------------------- */

/* Lock the directory key's blob lives in (created first): the fd, or < 0. */
static int lock_dir(tt_store *s, const char *key, tt_error *err)
{
	const char *slash = strrchr(key, '/');
	char *dir = slash ? tt_asprintf("%s/%.*s", ROOT(s), (int)(slash - key), key) : tt_strdup(ROOT(s));
	int fd, rc;
	if (!dir)
		return tt_error_oom(err);
	if ((rc = tt_mkdirs(dir, 0777, err)) != 0) {
		free(dir);
		return rc;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd < 0)
		return io_err(s, key, errno, "cannot open the directory of", err);
	while (flock(fd, LOCK_EX) != 0) {
		if (errno != EINTR) {
			int e = errno;
			close(fd);
			return io_err(s, key, e, "cannot lock the directory of", err);
		}
	}
	return fd;
}

static void unlock_dir(int fd)
{
	flock(fd, LOCK_UN);
	close(fd);
}

static int after_write(tt_store *s, const char *key, tt_store_meta *meta, tt_error *err)
{
	if (!meta)
		return 0;
	return local_head(s, key, NULL, meta, err);
}

static int write_blob(tt_store *s, const char *key, const void *data, size_t len, bool exclusive,
		      tt_error *err)
{
	char *path = key_path(s, key);
	int rc;
	if (!path)
		return tt_error_oom(err);
	rc = exclusive ? tt_write_file_exclusive_staged(path, data, len, 0666, err)
		       : tt_write_file_atomic_staged(path, data, len, 0666, err);
	free(path);
	if (rc == TT_EEXISTS)
		return tt_error_set(err, TT_EEXISTS, "%s: blob '%s' already exists", s->display, key);
	if (rc)
		tt_error_prefix(err, "%s", s->display);
	return rc;
}

/* Under the directory's lock: the condition checked, then the blob written. */
static int local_put(tt_store *s, const char *key, tt_store_cond cond, const char *etag,
		     const void *data, size_t len, tt_store_meta *meta, tt_error *err)
{
	tt_store_meta cur = { 0 };
	int fd = lock_dir(s, key, err), rc = 0;
	if (fd < 0)
		return fd;
	if (cond == TT_STORE_PUT_IF_MATCH) {
		rc = local_head(s, key, NULL, &cur, err);
		if (rc == 0 && strcmp(cur.etag, etag) != 0)
			rc = tt_error_set(err, TT_EREFMOVED,
					  "%s: blob '%s' moved meanwhile (etag %s, expected %s); read it "
					  "again and retry", s->display, key, cur.etag, etag);
	}
	if (rc == 0)
		rc = write_blob(s, key, data, len, cond == TT_STORE_PUT_IF_ABSENT, err);
	if (rc == 0)
		rc = after_write(s, key, meta, err);
	unlock_dir(fd);
	tt_store_meta_release(&cur);
	return rc;
}

static int local_del(tt_store *s, const char *key, tt_error *err)
{
	char *path = key_path(s, key);
	int fd, rc = 0;
	struct stat st;
	if (!path)
		return tt_error_oom(err);
	if (stat(path, &st) != 0 && (errno == ENOENT || errno == ENOTDIR)) {
		free(path);
		return 0;  /* nothing to delete; don't create its directory */
	}
	if (S_ISDIR(st.st_mode)) {
		free(path);
		return 0;  /* a directory is no blob */
	}
	fd = lock_dir(s, key, err);
	if (fd < 0) {
		free(path);
		return fd;
	}
	if (unlink(path) != 0 && errno != ENOENT && errno != ENOTDIR)
		rc = io_err(s, key, errno, "cannot delete", err);
	free(path);
	unlock_dir(fd);
	return rc;
}

static bool local_has_dir(tt_store *s, const char *dir)
{
	struct stat st;
	char *path = key_path(s, dir);
	bool yes = path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
	free(path);
	return yes;
}

/* The directory and all in it: blobs, the temporaries of interrupted
 * writes, empty subdirectories.  A file named dir is no directory (and
 * no key under it): it stays. */
static int local_delete_tree(tt_store *s, const char *dir, tt_error *err)
{
	char *path = key_path(s, dir);
	struct stat st;
	int rc = 0;
	if (!path)
		return tt_error_oom(err);
	if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode) && (rc = tt_remove_tree(path, err)) != 0)
		tt_error_prefix(err, "%s", s->display);
	free(path);
	return rc;
}

static int local_delete_all(tt_store *s, tt_error *err)
{
	local_impl *im = s->impl;
	struct stat st;
	int rc = 0;
	if (lstat(im->root, &st) == 0 && S_ISDIR(st.st_mode) && (rc = tt_remove_tree(im->root, err)) != 0)
		tt_error_prefix(err, "%s", s->display);
	return rc;
}

static void local_close(tt_store *s)
{
	local_impl *im = s->impl;
	free(im->root);
	free(im);
	free(s->display);
	free(s);
}

static const tt_store_ops local_ops = {
	.get = local_get,
	.get_range = local_get_range,
	.head = local_head,
	.list = local_list,
	.list_keys = local_list_keys,
	.list_names = local_list_names,
	.put = local_put,
	.del = local_del,
	.delete_tree = local_delete_tree,
	.has_dir = local_has_dir,
	.delete_all = local_delete_all,
	.close = local_close,
};

int tt_store_local_open(const char *dir, bool create, tt_store **out, tt_error *err)
{
	tt_store *s;
	local_impl *im;
	int rc;

	*out = NULL;
	if (create && (rc = tt_mkdirs(dir, 0777, err)) != 0)
		return rc;
	if (!tt_is_dir(dir))
		return tt_error_set(err, TT_ENOTFOUND, "store directory '%s' does not exist%s", dir,
				    create ? "" : "; create it first");
	s = tt_calloc(1, sizeof *s);
	im = tt_calloc(1, sizeof *im);
	if (s && im) {
		im->root = tt_realpath(dir);
		s->display = im->root ? tt_strdup(im->root) : NULL;
	}
	if (!s || !im || !im->root || !s->display) {
		if (im)
			free(im->root);
		free(im);
		if (s)
			free(s->display);
		free(s);
		return tt_error_oom(err);
	}
	s->ops = &local_ops;
	s->kind = TT_STORE_LOCAL;
	s->impl = im;
	*out = s;
	return 0;
}
