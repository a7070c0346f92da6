/*
 * backends/iceberg/iceberg_meta.h - Apache Iceberg table metadata (format v1, v2
 * and v3 JSON), read and edited natively.
 *
 * A parsed table keeps the whole document (every key the reader does not
 * know travels through untouched when the file is written again) and an
 * index of what tether needs: the snapshots (id, parent, time, summary),
 * the refs (tags and branches) and the current snapshot.  A table with no
 * snapshot has current = -1: absent, null and -1 mean the same.  When a
 * table has no `refs` map but a current snapshot, `main` is that snapshot.
 *
 * Malformed input is TT_EPARSE with a message naming `what` and the field;
 * the reader never trusts a count or an id it has not checked.
 */
#ifndef TT_BACKENDS_ICEBERG_META_H
#define TT_BACKENDS_ICEBERG_META_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/error.h"

#define TT_ICEBERG_NO_SNAPSHOT (-1LL)
/* Bigger metadata files are refused (TT_ELIMIT). */
#define TT_ICEBERG_META_MAX ((size_t)256 << 20)

typedef struct tt_iceberg_snapshot {
	long long id;
	long long parent;          /* -1: a root (or no parent recorded) */
	long long timestamp_ms;
	long long sequence;        /* 0 in v1 */
	const json_t *summary;     /* an object of strings, or NULL */
} tt_iceberg_snapshot;

typedef struct tt_iceberg_ref {
	const char *name;
	long long snapshot_id;
	bool tag;                  /* else a branch */
} tt_iceberg_ref;

typedef struct tt_iceberg_meta {
	json_t *doc;               /* the whole document (owned) */
	int format_version;
	const char *uuid;          /* may be NULL in v1 */
	const char *location;
	long long current;         /* current-snapshot-id, -1 for none */
	long long last_updated_ms;
	tt_iceberg_snapshot *snaps; /* in file order */
	size_t nsnaps;
	tt_iceberg_snapshot **by_id; /* into snaps, sorted by id */
	tt_iceberg_ref *refs;      /* sorted by name */
	size_t nrefs;
} tt_iceberg_meta;

/* Parse metadata text (gzip-compressed input is recognised by its magic
 * bytes).  *m is released by the caller also on failure. */
int tt_iceberg_meta_parse(const void *data, size_t len, const char *what, tt_iceberg_meta *m,
			  tt_error *err);
void tt_iceberg_meta_release(tt_iceberg_meta *m);

const tt_iceberg_snapshot *tt_iceberg_meta_snapshot(const tt_iceberg_meta *m, long long id);
const tt_iceberg_ref *tt_iceberg_meta_ref(const tt_iceberg_meta *m, const char *name);

/* A summary value as text, or NULL. */
const char *tt_iceberg_summary(const tt_iceberg_snapshot *s, const char *key);

/* Walk the ancestry from snapshot id `start` (newest first) while fn
 * returns 0; stops at a root, an expired parent or a cycle.  fn returning
 * > 0 stops early (the walk returns 0), < 0 fails the walk. */
typedef int (*tt_iceberg_walk_fn)(const tt_iceberg_snapshot *s, void *ctx, tt_error *err);
int tt_iceberg_meta_ancestry(const tt_iceberg_meta *m, long long start, tt_iceberg_walk_fn fn,
			     void *ctx, tt_error *err);
/* Is `ancestor` on the ancestry of `of` (a snapshot is its own ancestor;
 * -1, the empty table, is everyone's)? */
bool tt_iceberg_meta_is_ancestor(const tt_iceberg_meta *m, long long ancestor, long long of);

/*
 * Edits, as a catalog commit applies them (pyiceberg's update_table_metadata):
 * set a ref to a snapshot (tag or branch; moving "main" also sets the current
 * snapshot and appends to snapshot-log), or remove one.  Both append the
 * previous metadata file to metadata-log (trimmed to
 * write.metadata.previous-versions-max, default 100) and bump
 * last-updated-ms to now_ms.  *changed false: the ref already was so and
 * nothing was touched.  The index is rebuilt; pointers into it are stale.
 */
int tt_iceberg_meta_set_ref(tt_iceberg_meta *m, const char *name, bool tag, long long snapshot_id,
			    const char *previous_file, long long now_ms, bool *changed,
			    tt_error *err);
int tt_iceberg_meta_remove_ref(tt_iceberg_meta *m, const char *name, const char *previous_file,
			       long long now_ms, bool *changed, tt_error *err);

/* The document as compact JSON text. */
int tt_iceberg_meta_dump(const tt_iceberg_meta *m, tt_buf *out, tt_error *err);

/* The version number of a metadata file name ("00003-<uuid>.metadata.json"
 * -> 3), or -1 when the name does not have that shape. */
long tt_iceberg_meta_file_version(const char *location);

#endif
