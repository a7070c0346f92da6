/*
 * engine/cmd/query_lance.c - a Lance dataset's recorded version as a directory
 * DuckDB's lance extension reads (it reads a dataset's latest version only).
 *
 * A version view is a directory of its own holding
 *   _versions/<the manifest>   a copy of that version's manifest, alone;
 *   <dir>/<entry>              for every other directory of the dataset
 *                              (data, _deletions, _indices, _transactions),
 *                              a directory of the view's own with a symbolic
 *                              link to each of the store's entries there.
 * The dataset's files are immutable, so the links reach exactly the bytes
 * of that version; nothing but the manifest is copied.  Top-level files
 * (a legacy _latest.manifest, a hint) and _refs, tree and _versions are
 * left out: the view has one version and no branches.
 *
 * Safety:
 *   - The store is only read.  Every directory in a view is the view's own,
 *     so a file written through the view's path (a Lance append, compaction
 *     or index build pointed at it) lands in the cache, never in the store.
 *   - Nothing of a manifest's content becomes a path: links are named after
 *     the store's directory entries (single names, from readdir), the copy
 *     after the manifest's file name.  A manifest that is no regular file
 *     (a FIFO, a device, a directory) is refused before it is read.
 *   - Views live under $XDG_CACHE_HOME/tether/lance-views (else
 *     ~/.cache/tether/lance-views), a directory that must be this user's
 *     own, not a link, writable by no one else.  A view's name is the
 *     BLAKE2b of the dataset root's real path and of the manifest's bytes,
 *     so a view is never stale: another dataset at that path, or another
 *     manifest at that version, is another view.
 *   - Concurrent queries: a view is built in a private staging directory
 *     (mkdtemp) and renamed into place; a lost race keeps the winner's.
 *     A view found in place is checked before use (its _versions holds
 *     the one manifest, byte for byte the store's) and replaced when it
 *     does not - a writer through the view adds a version to it.
 *   - Cleaned: each use touches the view; building one removes views
 *     unused for 30 days and staging or discarded directories over a day
 *     old (removal never follows a link).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <tether/error.h>

#include "engine/cmd/query.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/mem.h"

#define VIEW_UNUSED_DAYS 30
#define MANIFEST_MAX (1u << 30)

/* The views' directory, made if need be and checked private. */
static int views_dir(char **out, tt_error *err)
{
	const char *x = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	struct stat st;
	char *dir = x && *x == '/' ? tt_asprintf("%s/tether/lance-views", x)
		    : home && *home ? tt_asprintf("%s/.cache/tether/lance-views", home)
				    : NULL;
	*out = NULL;
	if (!dir)
		return x || home ? tt_error_oom(err)
				 : tt_error_set(err, TT_ECONFIG, "no cache directory for Lance version views: "
						"set HOME or XDG_CACHE_HOME");
	int rc = tt_mkdirs(dir, 0700, err);
	if (rc < 0) {
		free(dir);
		return rc;
	}
	if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022)) {
		rc = tt_error_set(err, TT_ECONFIG, "the Lance version views' directory %s is not this user's own "
				  "(a directory, not a link, owned by this user, writable by no one else)", dir);
		tt_error_hint(err, "remove it (tether makes it again), or point XDG_CACHE_HOME elsewhere");
		free(dir);
		return rc;
	}
	*out = dir;
	return 0;
}

/* The bytes of a regular file: a FIFO or device is refused before any read. */
static int read_regular(const char *path, const char *key, tt_buf *out, tt_error *err)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), rc = 0;
	if (fd < 0)
		return tt_error_errno(err, errno, "[%s] cannot read %s", key, path);
	if (fstat(fd, &st) != 0) {
		rc = tt_error_errno(err, errno, "[%s] cannot read %s", key, path);
	} else if (!S_ISREG(st.st_mode)) {
		rc = tt_error_set(err, TT_EBACKEND, "[%s] %s is no regular file: not a Lance manifest", key, path);
	} else if ((uintmax_t)st.st_size > MANIFEST_MAX) {
		rc = tt_error_set(err, TT_ELIMIT, "[%s] %s is larger than a manifest can be (%u bytes)", key, path,
				  MANIFEST_MAX);
	} else if (tt_buf_grow(out, (size_t)st.st_size + 1) != 0) {
		rc = tt_error_oom(err);
	} else {
		for (;;) {
			ssize_t n = read(fd, out->ptr + out->len, out->cap - out->len - 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				rc = tt_error_errno(err, errno, "[%s] cannot read %s", key, path);
				break;
			}
			if (n == 0)
				break;
			out->len += (size_t)n;
			out->ptr[out->len] = '\0';
			if (out->len + 1 >= out->cap && tt_buf_grow(out, 65536) != 0) {
				rc = tt_error_oom(err);
				break;
			}
			if (out->len > MANIFEST_MAX) {
				rc = tt_error_set(err, TT_ELIMIT, "[%s] %s grew past %u bytes while read", key, path,
						  MANIFEST_MAX);
				break;
			}
		}
	}
	close(fd);
	return rc;
}

/* Whether the view at dir holds exactly the manifest name with bytes man. */
static bool view_intact(const char *dir, const char *name, const tt_buf *man)
{
	struct stat st;
	char *vers = tt_path_join(dir, "_versions"), *file = vers ? tt_path_join(vers, name) : NULL;
	bool ok = false;
	DIR *d = NULL;
	if (!file || lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    !(d = opendir(vers)))
		goto done;
	struct dirent *e;
	size_t n = 0;
	bool named = false;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		n++;
		named = named || strcmp(e->d_name, name) == 0;
	}
	if (n != 1 || !named || lstat(file, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size != man->len)
		goto done;
	tt_buf copy = TT_BUF_INIT;
	ok = tt_read_file(file, &copy, man->len + 1, NULL) == 0 && copy.len == man->len &&
	     memcmp(copy.ptr, man->ptr, man->len) == 0;
	tt_buf_release(&copy);
done:
	if (d)
		closedir(d);
	free(vers);
	free(file);
	return ok;
}

/* Move dir aside (atomically) and remove it; gone already is fine. */
static void discard(const char *base, const char *dir)
{
	char *trash = tt_asprintf("%s/.trash-XXXXXX", base);
	if (trash && mkdtemp(trash)) {
		char *into = tt_path_join(trash, "v");
		if (into && rename(dir, into) == 0)
			tt_remove_tree(into, NULL);
		rmdir(trash);
		free(into);
	}
	free(trash);
}

/* Views unused for VIEW_UNUSED_DAYS, staging and discarded directories
 * over a day old. */
static void prune(const char *base)
{
	DIR *d = opendir(base);
	time_t now = time(NULL);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		struct stat st;
		bool view = strlen(e->d_name) > 6 && strcmp(e->d_name + strlen(e->d_name) - 6, ".lance") == 0 &&
			    e->d_name[0] != '.';
		bool stale = strncmp(e->d_name, ".stage-", 7) == 0 || strncmp(e->d_name, ".trash-", 7) == 0;
		if (!view && !stale)
			continue;
		char *p = tt_path_join(base, e->d_name);
		if (p && lstat(p, &st) == 0 && S_ISDIR(st.st_mode) &&
		    now - st.st_mtime > (view ? VIEW_UNUSED_DAYS * 86400L : 86400L)) {
			if (view)
				discard(base, p);
			else
				tt_remove_tree(p, NULL);
		}
		free(p);
	}
	closedir(d);
}

/* In stage: a directory per directory of root, of links to its entries. */
static int link_dirs(const char *root, const char *stage, const char *key, tt_error *err)
{
	DIR *d = opendir(root);
	int rc = 0;
	if (!d)
		return tt_error_errno(err, errno, "[%s] cannot list %s", key, root);
	struct dirent *e;
	while (rc == 0 && (errno = 0, e = readdir(d)) != NULL) {
		const char *n = e->d_name;
		struct stat st;
		if (strcmp(n, ".") == 0 || strcmp(n, "..") == 0 || strcmp(n, "_versions") == 0 ||
		    strcmp(n, "_refs") == 0 || strcmp(n, "tree") == 0)
			continue;
		char *from = tt_path_join(root, n), *to = tt_path_join(stage, n);
		DIR *sub = NULL;
		if (!from || !to) {
			rc = tt_error_oom(err);
		} else if (stat(from, &st) != 0 || !S_ISDIR(st.st_mode)) {
			/* a file (a legacy _latest.manifest names the newest version): not in a view */
		} else if (mkdir(to, 0700) != 0) {
			rc = tt_error_errno(err, errno, "[%s] cannot make %s", key, to);
		} else if (!(sub = opendir(from))) {
			rc = tt_error_errno(err, errno, "[%s] cannot list %s", key, from);
		} else {
			struct dirent *f;
			while (rc == 0 && (errno = 0, f = readdir(sub)) != NULL) {
				if (strcmp(f->d_name, ".") == 0 || strcmp(f->d_name, "..") == 0)
					continue;
				char *a = tt_path_join(from, f->d_name), *b = tt_path_join(to, f->d_name);
				if (!a || !b)
					rc = tt_error_oom(err);
				else if (symlink(a, b) != 0)
					rc = tt_error_errno(err, errno, "[%s] cannot link %s", key, b);
				free(a);
				free(b);
			}
			if (rc == 0 && errno)
				rc = tt_error_errno(err, errno, "[%s] cannot list %s", key, from);
			closedir(sub);
		}
		free(from);
		free(to);
	}
	if (rc == 0 && errno)
		rc = tt_error_errno(err, errno, "[%s] cannot list %s", key, root);
	closedir(d);
	return rc;
}

int tt_query_lance_view(const char *root, const char *manifest, const char *key, char **out, tt_error *err)
{
	tt_buf man = TT_BUF_INIT;
	char *base = NULL, *real = NULL, *dir = NULL, *stage = NULL, *vers = NULL, *copy = NULL;
	const char *slash = strrchr(manifest, '/'), *name = slash ? slash + 1 : manifest;
	uint8_t h[20], mh[32];
	char hex[41];
	int rc;
	*out = NULL;
	if ((rc = views_dir(&base, err)) < 0)
		return rc;
	if ((rc = read_regular(manifest, key, &man, err)) < 0)
		goto done;
	if (!(real = tt_realpath(root))) {
		rc = tt_error_errno(err, errno, "[%s] cannot resolve %s", key, root);
		goto done;
	}
	/* the name: BLAKE2b(real root path, NUL, BLAKE2b(manifest bytes)) */
	tt_blake2b(mh, sizeof mh, man.ptr ? man.ptr : "", man.len);
	tt_buf id = TT_BUF_INIT;
	tt_buf_put(&id, real, strlen(real) + 1);
	tt_buf_put(&id, mh, sizeof mh);
	if (id.failed) {
		tt_buf_release(&id);
		rc = tt_error_oom(err);
		goto done;
	}
	tt_blake2b(h, sizeof h, id.ptr, id.len);
	tt_buf_release(&id);
	for (size_t i = 0; i < sizeof h; i++)
		snprintf(hex + 2 * i, 3, "%02x", h[i]);
	if (!(dir = tt_asprintf("%s/%s.lance", base, hex))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (tt_exists(dir)) {
		if (view_intact(dir, name, &man)) {
			utimensat(AT_FDCWD, dir, NULL, AT_SYMLINK_NOFOLLOW); /* in use: not pruned */
			goto found;
		}
		discard(base, dir); /* written through, or half gone: built again */
	}
	prune(base);
	if (!(stage = tt_asprintf("%s/.stage-XXXXXX", base))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!mkdtemp(stage)) {
		rc = tt_error_errno(err, errno, "[%s] cannot make a directory in %s", key, base);
		free(stage);
		stage = NULL;
		goto done;
	}
	if (!(vers = tt_path_join(stage, "_versions")) || !(copy = tt_path_join(vers, name))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (mkdir(vers, 0700) != 0) {
		rc = tt_error_errno(err, errno, "[%s] cannot make %s", key, vers);
		goto done;
	}
	if ((rc = tt_write_file_exclusive(copy, man.ptr ? man.ptr : "", man.len, 0400, err)) < 0 ||
	    (rc = link_dirs(real, stage, key, err)) < 0)
		goto done;
	if (rename(stage, dir) != 0) {
		/* another query put the same view in place first: use it */
		int e = errno;
		if ((e != EEXIST && e != ENOTEMPTY) || !view_intact(dir, name, &man)) {
			rc = tt_error_errno(err, e, "[%s] cannot put the Lance version view in place at %s", key, dir);
			goto done;
		}
	} else {
		free(stage);
		stage = NULL;
	}
found:
	*out = dir;
	dir = NULL;
	rc = 0;
done:
	if (stage) /* a failure, or a lost race: the staging directory goes */
		tt_remove_tree(stage, NULL);
	tt_buf_release(&man);
	free(base);
	free(real);
	free(dir);
	free(stage);
	free(vers);
	free(copy);
	return rc;
}
