/* util/fs.h - files: atomic writes, capped reads, directories, paths. */
#ifndef TT_UTIL_FS_H
#define TT_UTIL_FS_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/buf.h"
#include "util/error.h"

/*
 * Write data to path atomically: a temporary ".<name>.<random>.tmp" in the
 * same directory, fsync, rename over path, fsync the directory.  Parent
 * directories are created.  A reader sees the old file or the new one,
 * never a mix, and a crash leaves at most a stray temporary.  mode is
 * subject to the umask; a symlink at path is replaced, not followed.
 */
int tt_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode, tt_error *err);
/* Whether a file name is one of the temporaries above (".<name>.<16 hex>.tmp"),
 * which a process killed mid-write leaves behind. */
bool tt_is_atomic_temp(const char *name);

/* Create path only if absent, fsync'd: TT_EEXISTS if present (a dangling
 * symlink counts).  Parent directories are created.  The content goes to a
 * temporary that is hard-linked into place (O_EXCL on path itself where
 * links are unsupported), so readers never see a partial file. */
int tt_write_file_exclusive(const char *path, const void *data, size_t len, mode_t mode, tt_error *err);

/* The two writers above with the temporary named "<path>#<digits>" instead,
 * the form the object_store library's local listing skips as its own staging
 * files (icechunk, Lance and delta-rs read local stores through it), so a
 * temporary left by an interrupted write is never listed as data there.
 * Names too long for that suffix fall back to ".<name>.<random>.tmp". */
int tt_write_file_atomic_staged(const char *path, const void *data, size_t len, mode_t mode,
				tt_error *err);
int tt_write_file_exclusive_staged(const char *path, const void *data, size_t len, mode_t mode,
				   tt_error *err);
/* Whether a file name ends in '#' followed by one or more digits. */
bool tt_is_staged_temp(const char *name);

/* Append a line-framed record and fsync (journal entries).  The file is
 * created with mode if absent.  If the file does not end in '\n' (a torn
 * last write), a '\n' is written first so the record starts a line.
 * A record not ending in '\n' gets one; the whole is one write(2).
 * Parent directories are created. */
int tt_append_fsync(const char *path, const void *data, size_t len, mode_t mode, tt_error *err);

/* Read a whole file (at most max bytes, 0 = 64 MiB), appended to out; a
 * missing file is TT_ENOTFOUND, a bigger one (or one passing out's own cap)
 * TT_ELIMIT.  On failure out is left as it was. */
int tt_read_file(const char *path, tt_buf *out, size_t max, tt_error *err);

int tt_mkdirs(const char *path, mode_t mode, tt_error *err);  /* mkdir -p */
bool tt_is_dir(const char *path);
bool tt_is_file(const char *path);
bool tt_exists(const char *path);   /* lstat succeeds */
/* Remove a file; "already gone" (ENOENT, ENOTDIR) is success. */
int tt_unlink(const char *path, tt_error *err);
/* rm -r path: a directory (else an error naming it) and everything in
 * it, never following a symlink; an entry that vanishes meanwhile is gone
 * as wanted. */
int tt_remove_tree(const char *path, tt_error *err);
/* Remove empty directories from dir upwards, stopping at (not removing) stop.
 * Only directories lexically strictly below stop are touched (both paths
 * are normalised, relative ones against the cwd); NULL stop: nothing. */
void tt_prune_empty_dirs(const char *dir, const char *stop);

/* Join two path parts with one '/' (b is always taken as relative: "a/" +
 * "/b" is "a/b"; an empty part yields the other).  Caller frees.  NULL on OOM. */
/* s with each %XX (two hex digits) replaced by that byte, as URL
 * unquoting does; a '%' not followed by two hex digits stays.  NULL when out
 * of memory. */
char *tt_percent_decode(const char *s);
char *tt_path_join(const char *a, const char *b);
/* The directory part ("." when none), as dirname(1): trailing slashes
 * ignored, "/a" -> "/", "a/b/" -> "a".  Caller frees. */
char *tt_dirname(const char *path);
/* Lexical normalisation: "//" and "/./" folded, ".." resolved against what
 * precedes it, trailing "/" dropped (Python's os.path.normpath, exactly:
 * "" -> ".", a leading "//" is kept, "/.." -> "/"). */
char *tt_path_normalize(const char *path);
/* realpath() that also works when the last components do not exist yet:
 * the existing prefix is resolved and the rest appended normalised
 * (Python's os.path.realpath, strict=False, exactly: relative input is
 * resolved against the cwd; at a symlink loop the path resolved so far is
 * returned with the rest appended).  NULL on OOM or without a cwd. */
char *tt_realpath(const char *path);
/* The nearest of start (resolved) and its ancestors holding name (a file
 * when file_only, else anything lstat finds); NULL when none does or on
 * OOM.  Caller frees. */
char *tt_find_up(const char *start, const char *name, bool file_only);
/* The current working directory.  Caller frees. */
char *tt_getcwd(void);

#endif
