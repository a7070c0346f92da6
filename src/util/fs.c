/*
 * util/fs.c - files, directories and paths (see fs.h).
 *
 * Every descriptor is opened O_CLOEXEC, so a child started by another thread
 * never inherits one.  Writes that must survive a crash are fsync'd, and so
 * is the directory whose entries they changed.
 */
#include "util/fs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util/fault.h"
#include "util/hash.h"
#include "util/mem.h"

#define DEFAULT_READ_MAX ((size_t)64 << 20)
#define TMP_BASE_MAX 200  /* keeps ".<name>.<16 hex>.tmp" under NAME_MAX */
#define STAGED_DIGITS 16  /* "<name>#<16 digits>" */

/* ---- low-level helpers ------------------------------------------------ */

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;
	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* fsync a directory so a rename/creation in it is durable. */
static int fsync_dir(const char *dir, tt_error *err)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return tt_error_errno(err, errno, "cannot open directory %s", dir);
	int rc = 0;
	/* Some file systems cannot fsync a directory; nothing to be done there. */
	if (fsync(fd) != 0 && errno != EINVAL && errno != EROFS && errno != ENOTSUP)
		rc = tt_error_errno(err, errno, "cannot sync directory %s", dir);
	close(fd);
	return rc;
}

static void random_hex(char out[17])
{
	static atomic_uint_fast64_t counter;
	uint64_t v;
	if (getrandom(&v, sizeof v, GRND_NONBLOCK) != (ssize_t)sizeof v) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		v = ((uint64_t)ts.tv_sec * 1000000007u) ^ (uint64_t)ts.tv_nsec ^
		    ((uint64_t)getpid() << 32) ^ (atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15u);
	}
	static const char hex[] = "0123456789abcdef";
	for (int i = 0; i < 16; i++)
		out[i] = hex[(v >> (i * 4)) & 15];
	out[16] = '\0';
}

/* The last component of path (after the last '/'); "" when it ends in '/'. */
static const char *base_name(const char *path)
{
	const char *sl = strrchr(path, '/');
	return sl ? sl + 1 : path;
}

/*
 * Create a fresh temporary beside path: ".<name>.<random>.tmp", or with
 * staged "<name>#<random digits>" (the form object_store's local listing
 * skips), falling back to the first form where the name would be too long.
 * On success *tmp is the malloc'd name and the fd is returned; on failure
 * err is set and a negative code returned.
 */
static int open_temp(const char *path, const char *dir, mode_t mode, bool staged, char **tmp,
		     tt_error *err)
{
	const char *base = base_name(path);
	size_t bl = strlen(base);
	if (staged && bl + 1 + STAGED_DIGITS > NAME_MAX)
		staged = false;
	if (bl > TMP_BASE_MAX)
		bl = TMP_BASE_MAX;
	for (int attempt = 0; attempt < 32; attempt++) {
		char rnd[17];
		char *name;
		random_hex(rnd);
		if (staged) {
			char digits[STAGED_DIGITS + 1];
			for (int i = 0; i < STAGED_DIGITS; i++)
				digits[i] = (char)('0' + (unsigned char)rnd[i] % 10);
			digits[STAGED_DIGITS] = '\0';
			name = tt_asprintf("%s#%s", path, digits);
		} else {
			name = tt_asprintf("%s/.%.*s.%s.tmp", dir, (int)bl, base, rnd);
		}
		if (!name)
			return tt_error_oom(err);
		int fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (fd >= 0) {
			*tmp = name;
			return fd;
		}
		int e = errno;
		free(name);
		if (e != EEXIST)
			return tt_error_errno(err, e, "cannot create a temporary file in %s", dir);
	}
	return tt_error_set(err, TT_EIO, "cannot create a temporary file in %s: too many collisions", dir);
}

bool tt_is_staged_temp(const char *name)
{
	const char *h = strrchr(name, '#');
	if (!h || h == name || !h[1])
		return false;
	for (h++; *h; h++)
		if (*h < '0' || *h > '9')
			return false;
	return true;
}

bool tt_is_atomic_temp(const char *name)
{
	size_t n = strlen(name);
	/* "." <at least one byte> "." <16 hex> ".tmp" */
	if (n < 1 + 1 + 1 + 16 + 4 || name[0] != '.' || strcmp(name + n - 4, ".tmp") != 0 ||
	    name[n - 4 - 16 - 1] != '.')
		return false;
	for (size_t i = n - 4 - 16; i < n - 4; i++)
		if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
			return false;
	return true;
}

/* Checks shared by the writers; on success *dir is the (created) parent. */
static int prepare_parent(const char *path, char **dir, tt_error *err)
{
	*dir = NULL;
	if (!path || !*path || !*base_name(path) || !strcmp(base_name(path), ".") ||
	    !strcmp(base_name(path), ".."))
		return tt_error_set(err, TT_EUSAGE, "cannot write \"%s\": not a file name", path ? path : "");
	*dir = tt_dirname(path);
	if (!*dir)
		return tt_error_oom(err);
	return tt_mkdirs(*dir, 0777, err);
}

/* ---- writing ---------------------------------------------------------- */

static int write_atomic(const char *path, const void *data, size_t len, mode_t mode, bool staged,
			tt_error *err)
{
	char *dir = NULL, *tmp = NULL;
	int fd = -1;
	int rc = prepare_parent(path, &dir, err);
	if (rc)
		goto done;
	fd = open_temp(path, dir, mode, staged, &tmp, err);
	if (fd < 0) {
		rc = fd;
		fd = -1;
		goto done;
	}
	if (write_all(fd, data, len) != 0) {
		rc = tt_error_errno(err, errno, "cannot write %s", tmp);
		goto done;
	}
	if (fsync(fd) != 0) {
		rc = tt_error_errno(err, errno, "cannot sync %s", tmp);
		goto done;
	}
	int cfd = fd;
	fd = -1;
	if (close(cfd) != 0) {
		rc = tt_error_errno(err, errno, "cannot write %s", tmp);
		goto done;
	}
	tt_fault("fs:before-rename");
	if (rename(tmp, path) != 0) {
		rc = tt_error_errno(err, errno, "cannot replace %s", path);
		goto done;
	}
	free(tmp);
	tmp = NULL;  /* renamed: nothing to clean up */
	rc = fsync_dir(dir, err);

done:
	if (fd >= 0)
		close(fd);
	if (tmp)
		unlink(tmp);
	free(tmp);
	free(dir);
	return rc;
}

/* The fallback when hard links are not available: O_EXCL on path itself. */
static int write_exclusive_direct(const char *path, const void *data, size_t len, mode_t mode, tt_error *err)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
	if (fd < 0) {
		if (errno == EEXIST)
			return tt_error_set(err, TT_EEXISTS, "%s already exists", path);
		return tt_error_errno(err, errno, "cannot create %s", path);
	}
	int rc = 0;
	if (write_all(fd, data, len) != 0 || fsync(fd) != 0)
		rc = tt_error_errno(err, errno, "cannot write %s", path);
	if (close(fd) != 0 && !rc)
		rc = tt_error_errno(err, errno, "cannot write %s", path);
	if (rc)
		unlink(path);
	return rc;
}

/*
 * The content is written to a temporary and hard-linked into place, which
 * fails atomically when path exists: a reader never sees a partial file.
 */
static int write_exclusive(const char *path, const void *data, size_t len, mode_t mode, bool staged,
			   tt_error *err)
{
	char *dir = NULL, *tmp = NULL;
	int fd = -1;
	struct stat st;
	int rc = prepare_parent(path, &dir, err);
	if (rc)
		goto done;
	if (lstat(path, &st) == 0) {
		rc = tt_error_set(err, TT_EEXISTS, "%s already exists", path);
		goto done;
	}
	fd = open_temp(path, dir, mode, staged, &tmp, err);
	if (fd < 0) {
		rc = fd;
		fd = -1;
		goto done;
	}
	if (write_all(fd, data, len) != 0 || fsync(fd) != 0) {
		rc = tt_error_errno(err, errno, "cannot write %s", tmp);
		goto done;
	}
	int cfd = fd;
	fd = -1;
	if (close(cfd) != 0) {
		rc = tt_error_errno(err, errno, "cannot write %s", tmp);
		goto done;
	}
	if (link(tmp, path) != 0) {
		int e = errno;
		if (e == EEXIST) {
			rc = tt_error_set(err, TT_EEXISTS, "%s already exists", path);
			goto done;
		}
		if (e != EPERM && e != EOPNOTSUPP && e != ENOSYS && e != EXDEV && e != EMLINK) {
			rc = tt_error_errno(err, e, "cannot create %s", path);
			goto done;
		}
		rc = write_exclusive_direct(path, data, len, mode, err);
		if (rc)
			goto done;
	}
	rc = fsync_dir(dir, err);

done:
	if (fd >= 0)
		close(fd);
	if (tmp)
		unlink(tmp);
	free(tmp);
	free(dir);
	return rc;
}

int tt_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, tt_error *err)
{
	return write_atomic(path, data, len, mode, false, err);
}

int tt_write_file_atomic_staged(const char *path, const void *data, size_t len, mode_t mode,
				tt_error *err)
{
	return write_atomic(path, data, len, mode, true, err);
}

int tt_write_file_exclusive(const char *path, const void *data, size_t len, mode_t mode, tt_error *err)
{
	return write_exclusive(path, data, len, mode, false, err);
}

int tt_write_file_exclusive_staged(const char *path, const void *data, size_t len, mode_t mode,
				   tt_error *err)
{
	return write_exclusive(path, data, len, mode, true, err);
}

int tt_append_fsync(const char *path, const void *data, size_t len, mode_t mode, tt_error *err)
{
	char *dir = NULL, *rec = NULL;
	int fd = -1;
	struct stat st;
	int rc = prepare_parent(path, &dir, err);
	if (rc)
		goto done;
	bool existed = lstat(path, &st) == 0;
	fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, mode);
	if (fd < 0) {
		rc = tt_error_errno(err, errno, "cannot open %s", path);
		goto done;
	}
	if (fstat(fd, &st) != 0) {
		rc = tt_error_errno(err, errno, "cannot stat %s", path);
		goto done;
	}
	bool torn = false;
	if (st.st_size > 0) {
		char last = '\n';
		ssize_t n;
		do
			n = pread(fd, &last, 1, st.st_size - 1);
		while (n < 0 && errno == EINTR);
		if (n < 0) {
			rc = tt_error_errno(err, errno, "cannot read %s", path);
			goto done;
		}
		torn = n == 1 && last != '\n';
	}
	bool unterminated = len && ((const char *)data)[len - 1] != '\n';
	const void *w = data;
	size_t wl = len;
	if (torn || unterminated) {
		size_t total;
		if (!tt_add_ok(len, 2, &total) || !(rec = tt_malloc(total))) {
			rc = tt_error_oom(err);
			goto done;
		}
		wl = 0;
		if (torn)
			rec[wl++] = '\n';
		if (len)
			memcpy(rec + wl, data, len);
		wl += len;
		if (unterminated)
			rec[wl++] = '\n';
		w = rec;
	}
	/* One write call for the whole record: O_APPEND keeps it in one piece. */
	if (wl && write_all(fd, w, wl) != 0) {
		rc = tt_error_errno(err, errno, "cannot append to %s", path);
		goto done;
	}
	if (fsync(fd) != 0) {
		rc = tt_error_errno(err, errno, "cannot sync %s", path);
		goto done;
	}
	if (!existed)
		rc = fsync_dir(dir, err);

done:
	if (fd >= 0)
		close(fd);
	free(rec);
	free(dir);
	return rc;
}

/* ---- reading ---------------------------------------------------------- */

int tt_read_file(const char *path, tt_buf *out, size_t max, tt_error *err)
{
	int rc = 0;
	size_t start = out->len, got = 0;
	int was_failed = out->failed;
	struct stat st;
	if (!max)
		max = DEFAULT_READ_MAX;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		rc = tt_error_errno(err, errno, "cannot read %s", path);
		goto done;
	}
	if (fstat(fd, &st) != 0) {
		rc = tt_error_errno(err, errno, "cannot read %s", path);
		goto done;
	}
	if (S_ISDIR(st.st_mode)) {
		rc = tt_error_set(err, TT_EIO, "cannot read %s: it is a directory", path);
		goto done;
	}
	if (S_ISREG(st.st_mode) && (uintmax_t)st.st_size > (uintmax_t)max) {
		rc = tt_error_set(err, TT_ELIMIT, "%s is larger than the %zu-byte limit", path, max);
		goto done;
	}
	/* Room for the whole file up front when it fits the buffer's own cap. */
	if (S_ISREG(st.st_mode) && st.st_size > 0 &&
	    (!out->max || out->len + (size_t)st.st_size <= out->max) &&
	    tt_buf_grow(out, (size_t)st.st_size) != 0) {
		rc = tt_buf_check(out, err, path);
		goto done;
	}
	for (;;) {
		char chunk[16384];
		char *dst = chunk;
		size_t room = sizeof chunk;
		if (out->cap > out->len + 1) {
			dst = out->ptr + out->len;  /* read straight into spare capacity */
			room = out->cap - out->len - 1;
		}
		ssize_t n = read(fd, dst, room);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = tt_error_errno(err, errno, "cannot read %s", path);
			goto done;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > max) {
			rc = tt_error_set(err, TT_ELIMIT, "%s is larger than the %zu-byte limit", path, max);
			goto done;
		}
		if (dst == chunk) {
			if (tt_buf_put(out, chunk, (size_t)n) != 0) {
				rc = tt_buf_check(out, err, path);
				goto done;
			}
		} else {
			if (out->max && out->len + (size_t)n > out->max) {
				rc = tt_error_set(err, TT_ELIMIT, "%s is larger than the %zu-byte limit", path,
						  out->max);
				goto done;
			}
			out->len += (size_t)n;
			out->ptr[out->len] = '\0';
		}
	}

done:
	if (fd >= 0)
		close(fd);
	if (rc) {
		/* The buffer as it was: the error is returned, not left sticky. */
		tt_buf_truncate(out, start);
		out->failed = was_failed;
	}
	return rc;
}

/* ---- directories and predicates --------------------------------------- */

bool tt_is_dir(const char *path)
{
	struct stat st;
	return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool tt_is_file(const char *path)
{
	struct stat st;
	return path && stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

bool tt_exists(const char *path)
{
	struct stat st;
	return path && lstat(path, &st) == 0;
}

static int mkdir_one(const char *dir, mode_t mode, tt_error *err)
{
	if (mkdir(dir, mode) == 0)
		return 0;
	int e = errno;
	struct stat st;
	if (stat(dir, &st) == 0) {
		if (S_ISDIR(st.st_mode))
			return 0;
		return tt_error_set(err, TT_EIO, "cannot create directory %s: a file is in the way", dir);
	}
	return tt_error_errno(err, e, "cannot create directory %s", dir);
}

int tt_mkdirs(const char *path, mode_t mode, tt_error *err)
{
	if (!path || !*path || tt_is_dir(path))
		return 0;
	char *copy = tt_strdup(path);
	if (!copy)
		return tt_error_oom(err);
	int rc = 0;
	for (char *p = copy + 1; *p; p++) {
		if (*p != '/' || p[-1] == '/')
			continue;
		*p = '\0';
		rc = mkdir_one(copy, mode, err);
		*p = '/';
		if (rc)
			goto done;
	}
	rc = mkdir_one(copy, mode, err);
done:
	free(copy);
	return rc;
}

int tt_unlink(const char *path, tt_error *err)
{
	if (unlink(path) == 0 || errno == ENOENT || errno == ENOTDIR)
		return 0;
	return tt_error_errno(err, errno, "cannot remove %s", path);
}

/* path made absolute (against the cwd) and normalised; NULL on failure. */
static char *abs_normalized(const char *path)
{
	if (path[0] == '/')
		return tt_path_normalize(path);
	char *cwd = tt_getcwd();
	if (!cwd)
		return NULL;
	char *joined = tt_path_join(cwd, path);
	free(cwd);
	if (!joined)
		return NULL;
	char *n = tt_path_normalize(joined);
	free(joined);
	return n;
}

void tt_prune_empty_dirs(const char *dir, const char *stop)
{
	if (!dir || !stop)
		return;
	char *d = abs_normalized(dir), *s = abs_normalized(stop);
	if (!d || !s)
		goto done;
	size_t sl = strlen(s);
	bool root = !strcmp(s, "/") || !strcmp(s, "//");
	for (;;) {
		size_t dl = strlen(d);
		/* Only strictly below stop. */
		if (dl <= sl || strncmp(d, s, sl) != 0 || (!root && d[sl] != '/'))
			break;
		if (rmdir(d) != 0)
			break;
		char *sl2 = strrchr(d, '/');
		if (!sl2)
			break;
		sl2[sl2 == d ? 1 : 0] = '\0';
	}
done:
	free(d);
	free(s);
}

/* rm -r of what dirfd's entries hold, never following a symlink. */
static int remove_entries(int dirfd, const char *shown, tt_error *err)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *e;
	int rc = 0;
	if (!d) {
		close(dirfd);
		return tt_error_errno(err, errno, "cannot read %s", shown);
	}
	while (rc == 0 && (errno = 0, e = readdir(d))) {
		struct stat st;
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
			if (errno == ENOENT)
				continue; /* gone meanwhile, as wanted */
			rc = tt_error_errno(err, errno, "cannot read %s/%s", shown, e->d_name);
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			int sub = openat(dirfd, e->d_name,
					 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub < 0) {
				rc = tt_error_errno(err, errno, "cannot open %s/%s", shown, e->d_name);
				break;
			}
			if ((rc = remove_entries(sub, shown, err)) < 0)
				break;
			if (unlinkat(dirfd, e->d_name, AT_REMOVEDIR) != 0 && errno != ENOENT)
				rc = tt_error_errno(err, errno, "cannot remove %s/%s", shown,
						    e->d_name);
		} else if (unlinkat(dirfd, e->d_name, 0) != 0 && errno != ENOENT) {
			rc = tt_error_errno(err, errno, "cannot remove %s/%s", shown, e->d_name);
		}
	}
	if (rc == 0 && errno != 0)
		rc = tt_error_errno(err, errno, "cannot read %s", shown);
	closedir(d);
	return rc;
}

int tt_remove_tree(const char *path, tt_error *err)
{
	struct stat st;
	int fd, rc;
	if (lstat(path, &st) != 0)
		return tt_error_errno(err, errno, "cannot remove %s", path);
	if (!S_ISDIR(st.st_mode))
		return tt_error_set(err, TT_EIO, "cannot remove %s: not a directory", path);
	if ((fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)) < 0)
		return tt_error_errno(err, errno, "cannot open %s", path);
	if ((rc = remove_entries(fd, path, err)) < 0)
		return rc;
	if (rmdir(path) != 0)
		return tt_error_errno(err, errno, "cannot remove %s", path);
	return 0;
}

/* ---- paths ------------------------------------------------------------ */

char *tt_percent_decode(const char *s)
{
	char *out = tt_malloc(strlen(s) + 1), *o = out;
	if (!out)
		return NULL;
	for (; *s; s++) {
		int hi = *s == '%' ? tt_hex_digit(s[1]) : -1, lo = hi >= 0 ? tt_hex_digit(s[2]) : -1;
		if (lo >= 0) {
			*o++ = (char)(hi * 16 + lo);
			s += 2;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
	return out;
}

char *tt_path_join(const char *a, const char *b)
{
	if (!a || !*a)
		return tt_strdup(b ? b : "");
	if (!b)
		b = "";
	size_t al = strlen(a);
	while (al > 1 && a[al - 1] == '/')
		al--;
	while (*b == '/')
		b++;
	if (!*b)
		return tt_strndup(a, al);
	if (al == 1 && a[0] == '/')
		return tt_asprintf("/%s", b);
	return tt_asprintf("%.*s/%s", (int)al, a, b);
}

char *tt_dirname(const char *path)
{
	if (!path)
		return NULL;
	size_t len = strlen(path);
	while (len > 1 && path[len - 1] == '/')
		len--;
	while (len > 0 && path[len - 1] != '/')
		len--;
	if (len == 0)
		return tt_strdup(".");
	while (len > 1 && path[len - 1] == '/')
		len--;
	return tt_strndup(path, len);
}

static bool ends_with_dotdot(const char *out, size_t base, size_t o)
{
	return o - base >= 2 && out[o - 1] == '.' && out[o - 2] == '.' &&
	       (o - 2 == base || out[o - 3] == '/');
}

/* Python's posixpath.normpath, byte for byte. */
char *tt_path_normalize(const char *path)
{
	if (!path)
		return NULL;
	if (!*path)
		return tt_strdup(".");
	size_t len = strlen(path), size;
	if (!tt_add_ok(len, 2, &size))
		return NULL;
	char *out = tt_malloc(size);
	if (!out)
		return NULL;
	size_t base = 0;
	if (path[0] == '/')
		base = (path[1] == '/' && path[2] != '/') ? 2 : 1;
	memset(out, '/', base);
	size_t o = base, ncomps = 0;
	const char *s = path;
	while (*s) {
		while (*s == '/')
			s++;
		if (!*s)
			break;
		const char *e = s;
		while (*e && *e != '/')
			e++;
		size_t n = (size_t)(e - s);
		bool dot = n == 1 && s[0] == '.';
		bool dotdot = n == 2 && s[0] == '.' && s[1] == '.';
		if (dot) {
			/* skip */
		} else if (dotdot && ncomps && !ends_with_dotdot(out, base, o)) {
			size_t k = o;
			while (k > base && out[k - 1] != '/')
				k--;
			o = k > base ? k - 1 : base;
			ncomps--;
		} else if (dotdot && !ncomps && base) {
			/* ".." at the root is the root */
		} else {
			if (ncomps)
				out[o++] = '/';
			memcpy(out + o, s, n);
			o += n;
			ncomps++;
		}
		s = e;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	return out;
}

char *tt_getcwd(void)
{
	size_t size = 256;
	for (;;) {
		char *buf = tt_malloc(size);
		if (!buf)
			return NULL;
		if (getcwd(buf, size))
			return buf;
		free(buf);
		if (errno != ERANGE || !tt_mul_ok(size, 2, &size))
			return NULL;
	}
}

/*
 * tt_realpath is a transcription of Python 3.11's posixpath.realpath
 * (strict=False): _joinrealpath() walks the components, resolving each
 * symlink once (`seen` caches results and detects loops), and a loop stops
 * the walk with the unresolved rest appended as it is.
 */
typedef struct seen_ent {
	char *key;
	char *val;  /* NULL while being resolved */
} seen_ent;

typedef struct seen_map {
	seen_ent *v;
	size_t n, alloc;
} seen_map;

/* posixpath.join(path, b) in place. */
static void py_join(tt_buf *path, const char *b, size_t bl)
{
	if (bl && b[0] == '/') {
		tt_buf_truncate(path, 0);
	} else if (path->len && path->ptr[path->len - 1] != '/') {
		tt_buf_putc(path, '/');
	}
	tt_buf_put(path, b, bl);
}

static seen_ent *seen_find(seen_map *m, const char *key)
{
	for (size_t i = 0; i < m->n; i++)
		if (!strcmp(m->v[i].key, key))
			return &m->v[i];
	return NULL;
}

/* Returns 1 when fully resolved, 0 after a loop, TT_ENOMEM on OOM. */
static int join_realpath(tt_buf *path, const char *rest, seen_map *seen)
{
	int rc = 1;
	tt_buf newpath = TT_BUF_INIT;
	if (rest[0] == '/') {
		rest++;
		tt_buf_truncate(path, 0);
		tt_buf_putc(path, '/');
	}
	while (*rest) {
		const char *name = rest;
		const char *sl = strchr(rest, '/');
		size_t nl = sl ? (size_t)(sl - rest) : strlen(rest);
		rest = sl ? sl + 1 : rest + nl;
		if (nl == 0 || (nl == 1 && name[0] == '.'))
			continue;
		if (nl == 2 && name[0] == '.' && name[1] == '.') {
			if (path->len) {
				/* path, name = split(path) */
				size_t i = path->len;
				while (i > 0 && path->ptr[i - 1] != '/')
					i--;
				bool tail_dotdot = path->len - i == 2 && !memcmp(path->ptr + i, "..", 2);
				size_t h = i;
				while (h > 0 && path->ptr[h - 1] == '/')
					h--;
				tt_buf_truncate(path, h ? h : i);
				if (tail_dotdot) {
					py_join(path, "..", 2);
					py_join(path, "..", 2);
				}
			} else {
				tt_buf_put(path, "..", 2);
			}
			continue;
		}
		tt_buf_truncate(&newpath, 0);
		tt_buf_put(&newpath, path->ptr, path->len);
		py_join(&newpath, name, nl);
		if (newpath.failed || path->failed) {
			rc = TT_ENOMEM;
			goto done;
		}
		struct stat st;
		if (lstat(newpath.ptr, &st) != 0 || !S_ISLNK(st.st_mode)) {
			tt_buf_truncate(path, 0);
			tt_buf_put(path, newpath.ptr, newpath.len);
			continue;
		}
		seen_ent *ent = seen_find(seen, newpath.ptr);
		if (ent) {
			if (ent->val) {
				tt_buf_truncate(path, 0);
				tt_buf_puts(path, ent->val);
				continue;
			}
			/* A symlink loop: the resolved part plus the rest as it is. */
			tt_buf_truncate(path, 0);
			tt_buf_put(path, newpath.ptr, newpath.len);
			py_join(path, rest, strlen(rest));
			rc = 0;
			goto done;
		}
		tt_buf target = TT_BUF_INIT;
		for (size_t cap = 256;; cap *= 2) {
			tt_buf_truncate(&target, 0);
			if (tt_buf_grow(&target, cap) != 0)
				break;
			ssize_t n = readlink(newpath.ptr, target.ptr, cap);
			if (n < 0 || (size_t)n < cap) {
				if (n >= 0) {
					target.len = (size_t)n;
					target.ptr[n] = '\0';
				} else {
					target.failed = TT_EIO;
				}
				break;
			}
		}
		if (target.failed) {
			/* Vanished or unreadable since lstat: take it as it is. */
			bool oom = target.failed == TT_ENOMEM;
			tt_buf_release(&target);
			if (oom) {
				rc = TT_ENOMEM;
				goto done;
			}
			tt_buf_truncate(path, 0);
			tt_buf_put(path, newpath.ptr, newpath.len);
			continue;
		}
		if (TT_ARRAY_GROW(seen->v, seen->alloc, seen->n + 1) != 0 ||
		    !(seen->v[seen->n].key = tt_strdup(newpath.ptr))) {
			tt_buf_release(&target);
			rc = TT_ENOMEM;
			goto done;
		}
		size_t idx = seen->n++;
		seen->v[idx].val = NULL;
		int ok = join_realpath(path, target.ptr, seen);
		tt_buf_release(&target);
		if (ok < 0) {
			rc = ok;
			goto done;
		}
		if (!ok) {
			py_join(path, rest, strlen(rest));
			rc = 0;
			goto done;
		}
		if (!(seen->v[idx].val = tt_strdup(path->ptr))) {
			rc = TT_ENOMEM;
			goto done;
		}
	}
done:
	if (rc >= 0 && (path->failed || newpath.failed))
		rc = TT_ENOMEM;
	tt_buf_release(&newpath);
	return rc;
}

char *tt_find_up(const char *start, const char *name, bool file_only)
{
	char *dir = tt_realpath(start);
	while (dir) {
		char *p = tt_path_join(dir, name);
		bool found = p && (file_only ? tt_is_file(p) : tt_exists(p));
		free(p);
		if (found)
			return dir;
		if (strcmp(dir, "/") == 0)
			break;
		char *up = tt_dirname(dir);
		free(dir);
		dir = up;
	}
	free(dir);
	return NULL;
}

char *tt_realpath(const char *path)
{
	if (!path)
		return NULL;
	char *res = NULL, *cwd = NULL;
	tt_buf p = TT_BUF_INIT;
	seen_map seen = { NULL, 0, 0 };
	if (join_realpath(&p, path, &seen) < 0)
		goto done;
	if (p.ptr[0] == '/') {
		res = tt_path_normalize(p.ptr);
	} else {
		/* abspath(): join(cwd, path) then normpath. */
		cwd = tt_getcwd();
		if (!cwd)
			goto done;
		tt_buf a = TT_BUF_INIT;
		tt_buf_puts(&a, cwd);
		py_join(&a, p.ptr, p.len);
		if (!a.failed)
			res = tt_path_normalize(a.ptr);
		tt_buf_release(&a);
	}
done:
	for (size_t i = 0; i < seen.n; i++) {
		free(seen.v[i].key);
		free(seen.v[i].val);
	}
	free(seen.v);
	free(cwd);
	tt_buf_release(&p);
	return res;
}
