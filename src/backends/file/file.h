/*
 * backends/file/file.h - the `file` backend: local files and directories, and
 * objects and prefixes in the object stores storage/ builds in.
 *
 * The backend itself is reached through the vtable (tt_file_backend_new,
 * declared in backend.h; its hashing progress through the progress op).
 * This header holds what else the tests need from it:
 *   - hooks on a built backend: the number of hashing threads, a clock
 *     (tests), counters;
 * and, below the line, the interface between file.c (the protocol) and
 * file_hash.c (the directory walk, the parallel hashing engine and the
 * persistent hash cache), which nothing else should use.
 */
#ifndef TT_BACKENDS_FILE_H
#define TT_BACKENDS_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "backends/backend.h"
#include "util/buf.h"

/* --- hooks on a built file backend (b->kind is "file") ---------------------- */

/* Its hashing progress is the progress op (tt_backend_progress): bytes and
 * files read so far out of what this fingerprint has to read. */

/* Hashing threads per fingerprint (0: one per CPU, at least 4). */
void tt_file_backend_set_threads(tt_backend *b, unsigned threads);

/* The wall clock the hash cache stamps entries with and judges "racily
 * clean" against (NULL: CLOCK_REALTIME).  For tests. */
void tt_file_backend_set_clock(tt_backend *b, int64_t (*now_ns)(void));

/* Counters since the backend was built. */
typedef struct tt_file_stats {
	uint64_t hashed_files;  /* files read and hashed */
	uint64_t hashed_bytes;
	uint64_t cache_hits;    /* files answered by the hash cache */
	uint64_t cache_saves;   /* times the cache file was written */
} tt_file_stats;
void tt_file_backend_stats(tt_backend *b, tt_file_stats *out);

/* Why a directory's refresh walked instead of asking the file watcher, and
 * what the watcher answered (TETHER_FSMONITOR / [file] fsmonitor), go to
 * the kit's notes (tt_kit_note, kind "file", about the directory). */

/* ========================================================================= */
/* Internal to the file backend (file.c <-> file_hash.c).                    */
/* ========================================================================= */

/* The file at the root of a directory tether created; never content. */
#define TT_FILE_OWNER_MARKER ".tether-owner"
/* The cache file under the checkout's .tether/cache/. */
#define TT_FILE_HASH_CACHE "file-hashes.json"
/* A listing token: 64 hex digits of sha256, or "symlink:" and 64. */
#define TT_FILE_TOKEN_MAX 73

/* One listing row: a file (token = sha256 of its content, size) or a
 * symlink that is not read through (token "symlink:<sha256 of target>",
 * size 0). */
typedef struct tt_file_row {
	const char *path;  /* relative, '/'-separated; points into the tree's names */
	uint64_t size;
	char token[TT_FILE_TOKEN_MAX];
} tt_file_row;

/* A hashed directory: its rows sorted by path (byte order, which is code
 * point order for UTF-8, as Python sorts str). */
typedef struct tt_file_tree {
	tt_file_row *rows;
	size_t n;
	char *names;        /* the rows' paths, NUL-separated */
	char **more_names;  /* and further blocks of them (a walk's threads each fill one) */
	size_t nmore;
	uint64_t size;      /* sum of file sizes (symlinks count 0) */
	char digest[33];    /* blake2b-16 hex over the sorted (path, token) pairs */
	size_t links_through; /* rows that are symlinks read through to a file */
} tt_file_tree;
void tt_file_tree_release(tt_file_tree *t);

/* The hashing engine and its cache, one per backend; thread-safe. */
typedef struct tt_fhash tt_fhash;

/* cache_file NULL: entries live for the engine's lifetime only. */
int tt_fhash_new(tt_fhash **out, const char *cache_file, tt_error *err);
void tt_fhash_free(tt_fhash *h);
void tt_fhash_set_progress(tt_fhash *h, tt_backend_work_fn fn, void *ctx);
void tt_fhash_set_threads(tt_fhash *h, unsigned threads);
void tt_fhash_set_clock(tt_fhash *h, int64_t (*now_ns)(void));
void tt_fhash_stats(tt_fhash *h, tt_file_stats *out);
/* For tests: fn runs with each entry's full path right after the walk read
 * it from its directory (TT_FHASH_LISTED) and right before a listed file
 * is opened to be hashed (TT_FHASH_OPENING): where another writer can
 * remove it.  NULL: none. */
enum { TT_FHASH_LISTED = 1, TT_FHASH_OPENING = 2 };
void tt_fhash_set_race_hook(tt_fhash *h, void (*fn)(void *ctx, const char *path, int when), void *ctx);

/* Walk root (not following symlinked directories; the root-level owner
 * marker skipped), hash what the cache cannot answer, and fill *out.
 * Errors are TT_EBACKEND worded as tether-vcs words an OSError, or
 * TT_ENOMEM. */
int tt_fhash_dir(tt_fhash *h, const char *root, tt_file_tree *out, tt_error *err);
/* One file (st: its stat, following symlinks): sha256 hex. */
int tt_fhash_file(tt_fhash *h, const char *path, const struct stat *st, char hex[65],
		  tt_error *err);

/* Many files at once (sts[i]: paths[i]'s stat, following symlinks): the
 * cache answers what it can, the rest are read in parallel and recorded
 * with one save of the cache.  hex[i]: sha256 hex. */
int tt_fhash_files(tt_fhash *h, const char *const *paths, const struct stat *sts, size_t n,
		   char (*hex)[65], tt_error *err);

/* str(Path(root) / rel), as the walk keys the cache (rel NULL or "": root). */
int tt_file_join(tt_buf *out, const char *root, const char *rel);
/* The token of a symlink not read through ("symlink:" + sha256 of its
 * target's bytes); -1 with *errnum set when it cannot be read. */
int tt_file_link_token(int dfd, const char *name, char token[TT_FILE_TOKEN_MAX], int *errnum);

/* The digest of sorted rows, as tether-vcs's _digest_pairs. */
void tt_file_rows_digest(const tt_file_row *rows, size_t n, char hex[33]);
/* The same digest fed a row at a time, rows in path order (a listing too
 * long to hold): path is plen bytes, token a string.  _new: NULL on OOM;
 * _end writes the hex; _free is NULL-safe. */
typedef struct tt_file_digest tt_file_digest;
tt_file_digest *tt_file_digest_new(void);
void tt_file_digest_add(tt_file_digest *d, const char *path, size_t plen, const char *token);
void tt_file_digest_end(tt_file_digest *d, char hex[33]);
void tt_file_digest_free(tt_file_digest *d);

/* Set err the way tether-vcs's wrap_library_errors words an OSError:
 * "file: PermissionError: [Errno 13] Permission denied: '/p'" (path NULL:
 * without the filename); TT_EBACKEND, kind "file". */
int tt_file_os_error(tt_error *err, int errnum, const char *path);

#endif
