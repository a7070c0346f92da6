/*
 * storage/store.h - the one object-store interface: what every backend that
 * keeps its data as keyed blobs (icechunk, lance, delta, `file` on remote
 * URIs) reads and writes through, whatever holds the blobs (a local
 * directory, S3, GCS, Azure).
 *
 * A store is opened on a root (a directory, or a bucket/container and an
 * optional key prefix) and addresses blobs by key relative to that root.
 *
 * Invariants every implementation keeps (tests/support/store_conformance.c
 * checks each of them, against every implementation):
 *   - Keys are '/'-separated, non-empty, UTF-8 without NUL, with no empty
 *     segment, no "." or ".." segment and no leading or trailing '/'; any
 *     other key is refused with TT_EUSAGE before anything is touched.
 *   - A blob is written whole or not at all: a reader sees the old content
 *     or the new, never a mix; after a successful put the blob is durable
 *     (the local store fsyncs the file and its directory).
 *   - head/get/get_range of a missing key: TT_ENOTFOUND.
 *   - The ETag changes whenever the content is replaced (it is the
 *     provider's own value with the quotes stripped; locally it is derived
 *     from inode, mtime and size the way the object-store libraries do for
 *     local files: "<ino hex>-<mtime µs hex>-<size hex>").
 *   - put_if_absent on an existing key: TT_EEXISTS, nothing written.
 *     put_if_match on a missing key: TT_ENOTFOUND; on a key whose ETag is
 *     not the one given: TT_EREFMOVED ("moved meanwhile"), nothing written.
 *     Of N racing conditional writes from the same ETag, exactly one wins.
 *   - list returns the keys starting with prefix (a plain string prefix, not
 *     only whole segments) in ascending byte order, at most max_keys per
 *     page; `next` is an opaque token for the following page, NULL on the
 *     last one.  A listing paged to the end names every key that existed
 *     throughout, once.
 *   - delete of a missing key succeeds (as the object stores do).
 *   - The local store cannot hold both "a" and "a/b" (a file cannot also be
 *     a directory): the second put fails naming the path.  The suite uses
 *     only keys every store can hold.
 *   - A version (S3 version id, GCS generation) is returned in meta where
 *     the store keeps versions; reading with a version reads that one.  A
 *     store without versions refuses a version argument with TT_ECAPABILITY.
 *   - Errors name the store and key (never a credential) and say what to do.
 *   - Out-parameters are reset on entry: on failure they hold nothing to
 *     free beyond what tt_store_meta_release/tt_store_page_release free.
 */
#ifndef TT_STORAGE_STORE_H
#define TT_STORAGE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

/* ---- URIs ---------------------------------------------------------------------- */

typedef enum tt_store_scheme {
	TT_STORE_LOCAL = 1, /* a local path or file:// */
	TT_STORE_S3,        /* s3://, s3a:// */
	TT_STORE_GCS,       /* gs://, gcs:// */
	TT_STORE_AZURE,     /* az://, azure://, abfs://, abfss://, adl:// */
	TT_STORE_HTTP       /* http://, https:// (a plain HTTP store) */
} tt_store_scheme;

/*
 * A store URI, parsed.  For the object stores: scheme as written
 * (lower-cased), bucket (the container for Azure), account (Azure only,
 * from "container@account.dfs.core.windows.net"; else NULL), key (the path
 * after the authority, query/fragment/;params dropped, leading slashes
 * stripped: "" names the whole bucket).  For http(s): bucket is the host
 * (with port).  For local: path is the resolved local path (as tether-vcs's
 * local_path() spells it) and the rest is NULL.
 */
typedef struct tt_store_uri {
	tt_store_scheme kind;
	char scheme[16];
	char *path;
	char *bucket;
	char *account;
	char *key;
} tt_store_uri;

/*
 * tether-vcs's local_path(uri): the filesystem path a locator string names,
 * in one spelling per directory, or "not local" for a remote URL.
 * "file:///p" and "file://localhost/p" are "/p"; an absolute path is
 * resolved (symlinks followed, ".", "..", doubled and trailing slashes
 * gone, as os.path.realpath); a relative one is normalised lexically (as
 * os.path.normpath); anything with another URL scheme is not local.
 * Returns 1 with *out set (caller frees), 0 when not local (*out NULL), or
 * TT_ENOMEM.
 */
int tt_store_local_path(const char *uri, char **out);

/* The scheme urllib.parse.urlsplit finds in s, lower-cased into out (at
 * most outsz-1 bytes), or false when s has none. */
bool tt_store_url_scheme(const char *s, char *out, size_t outsz);

/* Parse uri.  An unknown scheme, an empty bucket, or credentials in the
 * authority ("s3://key:secret@bucket") are TT_ECONFIG naming the scheme
 * (never the rest of the authority). */
int tt_store_uri_parse(const char *uri, tt_store_uri *out, tt_error *err);
void tt_store_uri_release(tt_store_uri *u);
/* "s3", "gcs", "azure", "http" or "local". */
const char *tt_store_scheme_name(tt_store_scheme k);

/* 0 when key is a valid store key (see the invariants), else TT_EUSAGE with
 * a message naming it. */
int tt_store_key_check(const char *key, tt_error *err);

/* ---- metadata and listings ------------------------------------------------------ */

typedef struct tt_store_meta {
	uint64_t size;
	char *etag;        /* without quotes; NULL when the store gives none */
	char *version;     /* version id / generation; NULL when unversioned */
	int64_t mtime_ns;  /* last modified (0 when unknown) */
} tt_store_meta;

void tt_store_meta_release(tt_store_meta *m);

typedef struct tt_store_entry {
	char *key;
	tt_store_meta meta;
} tt_store_entry;

typedef struct tt_store_page {
	tt_store_entry *items;
	size_t n;
	char *next;  /* token for the following page; NULL on the last */
	char *keys;  /* where set, every key points into this one block (freed
		      * with it): a key cannot be taken out of the page then */
	bool held;   /* the following pages are already in memory (a server that
		      * gave more than a page): listing them in key ranges would
		      * only ask the server again */
	bool retried; /* the server failed the request before answering it
		       * (503 SlowDown, 429, a dropped connection): a caller
		       * listing in parallel should ask less at once */
} tt_store_page;

void tt_store_page_release(tt_store_page *p);

/* ---- the store ----------------------------------------------------------------- */

typedef struct tt_store tt_store;

/* What a write asks of the blob it would replace. */
typedef enum tt_store_cond {
	TT_STORE_PUT_ANY,       /* nothing: an unconditional write */
	TT_STORE_PUT_IF_ABSENT, /* that there is none (else TT_EEXISTS) */
	TT_STORE_PUT_IF_MATCH   /* that it has the etag given (else TT_EREFMOVED; TT_ENOTFOUND
				 * when there is none) */
} tt_store_cond;

/*
 * A store's primitives.  What can be derived from them is written once in
 * store.c (the three kinds of write, paging, names under a directory,
 * deleting a tree); the optional ops are where a store does it better
 * itself.
 */
typedef struct tt_store_ops {
	/* Whole blob into out (whose cap applies: TT_ELIMIT past it); meta
	 * (may be NULL) gets its head.  version NULL: the current one. */
	int (*get)(tt_store *s, const char *key, const char *version, tt_buf *out,
		   tt_store_meta *meta, tt_error *err);
	/* Bytes [off, off+len) (fewer at the end of the blob; none past it). */
	int (*get_range)(tt_store *s, const char *key, const char *version, uint64_t off,
			 uint64_t len, tt_buf *out, tt_error *err);
	int (*head)(tt_store *s, const char *key, const char *version, tt_store_meta *out,
		    tt_error *err);
	/* One page of keys under prefix ("" = all); token NULL for the first
	 * page; max_keys 0 = the store's default (1000). */
	int (*list)(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		    tt_store_page *out, tt_error *err);
	/* The one write, with what it asks of the blob it replaces (etag: for
	 * TT_STORE_PUT_IF_MATCH, non-empty; else NULL).  meta (may be NULL)
	 * gets the new etag/version. */
	int (*put)(tt_store *s, const char *key, tt_store_cond cond, const char *etag,
		   const void *data, size_t len, tt_store_meta *meta, tt_error *err);
	int (*del)(tt_store *s, const char *key, tt_error *err);
	void (*close)(tt_store *s);
	/* Optional (NULL where the store cannot; see tt_store_list_after). */
	int (*list_after)(tt_store *s, const char *prefix, const char *after, size_t max_keys,
			  tt_store_page *out, tt_error *err);
	/* Optional: list with the keys only (every meta zero), where that is
	 * cheaper than list (the local store stats no file for it). */
	int (*list_keys)(tt_store *s, const char *prefix, const char *token, size_t max_keys,
			 tt_store_page *out, tt_error *err);
	/* Optional: the names one level below dir (see tt_store_list_names),
	 * where the store can read that level alone. */
	int (*list_names)(tt_store *s, const char *dir, tt_store_page *out, tt_error *err);
	/* Optional: tt_store_delete_tree where the store has more to remove
	 * than its keys (the local store: directories, staged temporaries). */
	int (*delete_tree)(tt_store *s, const char *dir, tt_error *err);
	/* Optional: tt_store_has_dir where the store has directories of its
	 * own (the local store). */
	bool (*has_dir)(tt_store *s, const char *dir);
	/* Optional: tt_store_delete_all where the store is more than its keys
	 * (the local store: its root directory). */
	int (*delete_all)(tt_store *s, tt_error *err);
} tt_store_ops;

struct tt_store {
	const tt_store_ops *ops;
	tt_store_scheme kind;
	bool versioned;     /* reads and heads may name a version */
	char *display;      /* the root as users spell it, for errors */
	void *impl;
};

/* Local store rooted at dir (created if absent when create is set). */
int tt_store_local_open(const char *dir, bool create, tt_store **out, tt_error *err);

/* Calls through the vtable; each validates the key first and resets its
 * out-parameters.  NULL-safe close.  The three writes are the put op's
 * three conditions. */
int tt_store_get(tt_store *s, const char *key, const char *version, tt_buf *out,
		 tt_store_meta *meta, tt_error *err);
int tt_store_get_range(tt_store *s, const char *key, const char *version, uint64_t off,
		       uint64_t len, tt_buf *out, tt_error *err);
int tt_store_head(tt_store *s, const char *key, const char *version, tt_store_meta *out,
		  tt_error *err);
int tt_store_list(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		  tt_store_page *out, tt_error *err);
/* As tt_store_list, for a caller that needs only the keys: the pages'
 * meta may be empty (zero size, no ETag) where the store can list faster
 * without them; the keys and pages are list's. */
int tt_store_list_keys(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		       tt_store_page *out, tt_error *err);
/* The first page of the keys under prefix that sort after `after` (S3's
 * start-after); the page's `next` goes on through tt_store_list.  Lets a
 * caller list key ranges in parallel, where the store can
 * (tt_store_lists_after); TT_ECAPABILITY where it cannot. */
int tt_store_list_after(tt_store *s, const char *prefix, const char *after, size_t max_keys,
			tt_store_page *out, tt_error *err);
bool tt_store_lists_after(const tt_store *s);
/* fn for every key under prefix, the listing paged to its end in list
 * order; fn's nonzero return stops it and is returned. */
typedef int (*tt_store_key_fn)(const char *key, void *ctx, tt_error *err);
int tt_store_each_key(tt_store *s, const char *prefix, tt_store_key_fn fn, void *ctx, tt_error *err);
/* The names directly under dir ("" = the root): the distinct first
 * segments of the keys under "dir/", each once, all of them (no paging)
 * -- what a listing with a '/' delimiter gives -- in no promised order
 * (the local store gives its directory's; sort where order matters).
 * Each item's key is a name, its meta zero.  A store that can read that
 * one level does (the local store reads one directory, so an empty
 * subdirectory is a name there too); elsewhere the keys below dir are
 * listed and cut. */
int tt_store_list_names(tt_store *s, const char *dir, tt_store_page *out, tt_error *err);
/* Is there a directory dir?  On an object store: some key under "dir/".
 * Locally: the directory itself, even one holding nothing but what an
 * interrupted write left.  false too where the store cannot say. */
bool tt_store_has_dir(tt_store *s, const char *dir);
int tt_store_put(tt_store *s, const char *key, const void *data, size_t len,
		 tt_store_meta *meta, tt_error *err);
int tt_store_put_if_absent(tt_store *s, const char *key, const void *data, size_t len,
			   tt_store_meta *meta, tt_error *err);
int tt_store_put_if_match(tt_store *s, const char *key, const char *etag, const void *data,
			  size_t len, tt_store_meta *meta, tt_error *err);
int tt_store_delete(tt_store *s, const char *key, tt_error *err);
/* Delete every key under "dir/" (dir itself is not a key here: a blob
 * named dir stays).  The local store removes the directory itself, with
 * whatever interrupted writes left in it; a missing dir is no error.  On
 * failure some keys may be gone already: the error says which was not. */
int tt_store_delete_tree(tt_store *s, const char *dir, tt_error *err);
/* Delete the whole store: every key under its root.  The local store
 * removes the root directory itself, with whatever interrupted writes left
 * in it; a store already gone is no error.  On failure some keys may be
 * gone already.  The store stays open (a local one is recreated by the
 * next put). */
int tt_store_delete_all(tt_store *s, tt_error *err);
void tt_store_close(tt_store *s);

#endif
