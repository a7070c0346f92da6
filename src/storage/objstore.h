/*
 * storage/objstore.h - the skeleton the object stores on HTTP (s3.c,
 * gcs.c, azure.c) share, internal to storage/.
 *
 * Written once here: head, whole and ranged reads, delete, what a
 * conditional write's answer means (a retried write that finds its own
 * first attempt landed included), reading a listing's page, and the
 * failure path (the service's code and message, and the fix).  A driver
 * says only how its service spells a request (send), how it lists, and
 * the names and hints its messages use.
 *
 * A driver's impl starts with a tt_objstore; its tt_store_ops take the
 * tt_objstore_* functions below as they are, beside its own list.
 */
#ifndef TT_STORAGE_OBJSTORE_H
#define TT_STORAGE_OBJSTORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/http.h"
#include "storage/store.h"

/* One request on a key. */
typedef struct tt_objstore_req {
	const char *method;  /* "GET", "HEAD", "PUT", "DELETE" */
	const char *key;     /* the full key (the store's prefix included) */
	const char *name;    /* the key as the store's caller gave it (for the driver's own
			      * calls through the skeleton) */
	const char *version; /* GET, HEAD: this version (NULL: the current one) */
	const char *range;   /* GET: "bytes=A-B" (NULL: the whole blob) */
	tt_store_cond cond;  /* PUT: what it asks of the blob it replaces */
	const char *etag;    /* PUT, TT_STORE_PUT_IF_MATCH: the etag, unquoted */
	const void *body;    /* PUT */
	size_t len;
} tt_objstore_req;

typedef struct tt_objstore_driver {
	const char *noun;           /* what the service calls a blob: "object", "blob" */
	const char *version_word;   /* and a version: "version", "generation" */
	const char *version_header; /* the response header naming the version */
	const char *size_header;    /* HEAD: the size, asked before Content-Length (NULL: none) */
	const char *code_header;    /* the error code when the body names none (NULL: none) */
	bool clip_ranges;           /* a range past the end is refused: HEAD first, then clip it */
	bool meta_by_head;          /* a write's answer lacks the blob's meta: HEAD after it */
	/* Send q and take the response, whatever its status (0), or fail
	 * without one. */
	int (*send)(tt_store *s, const tt_objstore_req *q, tt_http_response *r, tt_error *err);
	/* The etag a whole write of data gets, where the service derives it
	 * from the bytes (S3: their MD5): a retried write is then checked by
	 * HEAD instead of reading the blob back.  NULL: read it back. */
	void (*etag_of)(char out[33], const void *data, size_t len);
	/* Does status say a conditional write's condition did not hold? */
	bool (*lost)(long status, tt_store_cond cond);
	/* The fix a failure's message ends with: "" or "; <what to do>". */
	const char *(*fix)(long status, const char *code);
	/* The driver's own part of the impl (the tt_objstore's is freed after). */
	void (*free)(void *impl);
} tt_objstore_driver;

/* The first member of every driver's impl. */
typedef struct tt_objstore {
	const tt_objstore_driver *drv;
	char *prefix;          /* the keys' prefix: "" or ending in '/' */
	tt_http_client *http;
} tt_objstore;

/* "<prefix><key>", or NULL (out of memory). */
char *tt_objstore_full_key(tt_store *s, const char *key);
/* "<prefix>" normalised from a configured one: leading '/' dropped, a
 * trailing '/' added unless empty; NULL: out of memory. */
char *tt_objstore_prefix(const char *configured);

/* The store ops (see store.h). */
int tt_objstore_head(tt_store *s, const char *key, const char *version, tt_store_meta *out,
		     tt_error *err);
int tt_objstore_get(tt_store *s, const char *key, const char *version, tt_buf *out,
		    tt_store_meta *meta, tt_error *err);
int tt_objstore_get_range(tt_store *s, const char *key, const char *version, uint64_t off,
			  uint64_t len, tt_buf *out, tt_error *err);
int tt_objstore_put(tt_store *s, const char *key, tt_store_cond cond, const char *etag,
		    const void *data, size_t len, tt_store_meta *meta, tt_error *err);
int tt_objstore_del(tt_store *s, const char *key, tt_error *err);
/* Frees the impl (the driver's part, then the skeleton's) and the store. */
void tt_objstore_close(tt_store *s);
/* A driver's tt_store_ops: the skeleton's, with its own listing (list_after
 * may be NULL). */
#define TT_OBJSTORE_OPS(list_fn, list_after_fn)                                                \
	{                                                                                      \
		.get = tt_objstore_get, .get_range = tt_objstore_get_range,                    \
		.head = tt_objstore_head, .list = (list_fn), .list_after = (list_after_fn),    \
		.put = tt_objstore_put, .del = tt_objstore_del, .close = tt_objstore_close,    \
	}

/* The error for a response nothing expected: "<store>: <what> '<key>':
 * HTTP <status> <code>: <message><fix>", TT_ENOTFOUND for 404, else
 * TT_EBACKEND.  key may be NULL. */
int tt_objstore_fail(tt_store *s, const char *what, const char *key, const tt_http_response *r,
		     tt_error *err);

/* What a listing's page looks like: element names of an entry and of the
 * page's continuation. */
typedef struct tt_objstore_listing {
	const char *entry, *key, *etag, *size, *mtime;
	const char *version;   /* NULL: entries carry none */
	bool iso_mtime;        /* mtime in ISO 8601 (else an HTTP date) */
	const char *truncated; /* the flag saying more follow (NULL: a non-empty next says so) */
	const char *next;      /* the next page's token */
} tt_objstore_listing;

/*
 * Read a listing's page (r, status 200) into out: keys without the
 * store's prefix (TT_EBACKEND for one outside it), out->next from the
 * page.  For a server that ignores what it was asked: after (may be NULL)
 * skips keys that sort at or before it; with cut (may be NULL), the page
 * stops at max_keys entries, *cut set, and out->next is left to the
 * caller; rest (may be NULL) then takes the entries past the cut and the
 * server's own next token, so that the caller can serve them as the
 * following pages without asking again.  On failure out (and rest) are
 * released.
 */
int tt_objstore_parse_listing(tt_store *s, const tt_objstore_listing *t, const tt_http_response *r,
			      const char *after, size_t max_keys, bool *cut, tt_store_page *out,
			      tt_store_page *rest, tt_error *err);

#endif
