/*
 * backends/icechunk/icechunk_fmt.h - readers for Icechunk's on-disk format (spec 1
 * and spec 2): the metadata-file container (header + one zstd frame), a
 * bounds-checked flatbuffers table reader, and decoders for the objects the
 * backend needs: the spec-2 `repo` file, snapshots and transaction logs.
 *
 * Everything here works on bytes in memory; storage is the caller's.  Every
 * decoder checks every offset against the buffer, so a corrupt or truncated
 * file is a TT_EPARSE naming `what` (the object's name), never a crash.
 * Decoded objects own copies of their strings.
 */
#ifndef TT_BACKENDS_ICECHUNK_FMT_H
#define TT_BACKENDS_ICECHUNK_FMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

#define IC_ID_LEN 12          /* snapshot / manifest / chunk ids */
#define IC_ID_CHARS 20        /* their Crockford base32 spelling */
#define IC_NODE_ID_LEN 8

/* Container file types (header byte 37). */
enum { IC_FILE_SNAPSHOT = 1, IC_FILE_MANIFEST = 2, IC_FILE_TXLOG = 4, IC_FILE_REPO = 6 };

/* Crockford base32, upper case, no padding: 12 bytes -> 20 chars + NUL. */
void tt_ic_id_encode(const uint8_t id[IC_ID_LEN], char out[IC_ID_CHARS + 1]);
/* 0, or -1 when s is not a 20-character id (lower case is accepted). */
int tt_ic_id_decode(const char *s, uint8_t id[IC_ID_LEN]);

/* Check the 39-byte header (magic, spec byte 1 or 2, file type == want_type,
 * zstd) and decompress the payload into out (at most max bytes; 0: 256 MiB).
 * *spec receives the header's spec byte. */
int tt_ic_container_read(const uint8_t *data, size_t len, int want_type, const char *what,
		      size_t max, tt_buf *out, int *spec, tt_error *err);

/* --- flatbuffers --------------------------------------------------------- */

/* A table inside a flatbuffer: every accessor re-checks bounds. */
typedef struct ic_fb {
	const uint8_t *buf;
	size_t len;
	size_t pos;      /* table start */
	size_t vt;       /* vtable start */
	size_t vt_len;   /* vtable byte length */
	size_t inl_len;  /* table inline size */
} ic_fb;

/* The root table of a flatbuffer. 0 or -1. */
int tt_ic_fb_root(const uint8_t *buf, size_t len, ic_fb *out);
/* The absolute position of field `slot`, 0 when absent, -1 when the field
 * does not fit the table / buffer (size bytes). */
long tt_ic_fb_field(const ic_fb *t, unsigned slot, size_t size);
/* Scalars: def when absent; -1 on a corrupt offset. */
int tt_ic_fb_u8(const ic_fb *t, unsigned slot, uint8_t def, uint8_t *v);
int tt_ic_fb_u16(const ic_fb *t, unsigned slot, uint16_t def, uint16_t *v);
int tt_ic_fb_u32(const ic_fb *t, unsigned slot, uint32_t def, uint32_t *v);
int tt_ic_fb_i32(const ic_fb *t, unsigned slot, int32_t def, int32_t *v);
int tt_ic_fb_u64(const ic_fb *t, unsigned slot, uint64_t def, uint64_t *v);
/* An inline struct of size bytes: *p NULL when absent. */
int tt_ic_fb_struct(const ic_fb *t, unsigned slot, size_t size, const uint8_t **p);
/* A string: *s NULL when absent (not NUL-terminated: use *n). */
int tt_ic_fb_string(const ic_fb *t, unsigned slot, const char **s, size_t *n);
/* A vector of elem-byte elements: *count 0 and *data NULL when absent. */
int tt_ic_fb_vector(const ic_fb *t, unsigned slot, size_t elem, const uint8_t **data,
		 size_t *count);
/* Table i of a vector of tables (data/count from tt_ic_fb_vector, elem 4). */
int tt_ic_fb_vector_table(const ic_fb *t, const uint8_t *data, size_t count, size_t i, ic_fb *out);
/* String i of a vector of strings. */
int tt_ic_fb_vector_string(const ic_fb *t, const uint8_t *data, size_t count, size_t i,
			const char **s, size_t *n);
/* A table-valued field: 1 found, 0 absent, -1 corrupt. */
int tt_ic_fb_table(const ic_fb *t, unsigned slot, ic_fb *out);

/* --- decoded objects ------------------------------------------------------ */

typedef struct ic_snapinfo {
	uint8_t id[IC_ID_LEN];
	int32_t parent;          /* index into snaps, -1 for a root */
	uint64_t flushed_at;     /* microseconds since the epoch */
	char *message;
	uint8_t (*pruned)[IC_ID_LEN]; /* pruned_ancestor_tx_logs, oldest first */
	size_t npruned;
} ic_snapinfo;

typedef struct ic_ref {
	char *name;
	uint32_t snap;           /* index into snaps */
} ic_ref;

typedef struct ic_meta {
	char *name;
	uint8_t *value;          /* FlexBuffers bytes */
	size_t len;
} ic_meta;

/* The spec-2 `repo` file. */
typedef struct ic_repo {
	uint8_t spec_version;
	ic_snapinfo *snaps;
	size_t nsnaps;
	ic_ref *tags, *branches;
	size_t ntags, nbranches;
	char **deleted_tags;
	size_t ndeleted;
	ic_meta *metadata;
	size_t nmetadata;
	uint8_t availability;    /* 0 online, 1 read-only, 2 offline */
	uint64_t last_update_at; /* the newest ops-log entry's updated_at */
	size_t nupdates;         /* ops-log entries in this file */
	bool create_tag_off;     /* feature flag 4 explicitly disabled */
	bool delete_tag_off;     /* feature flag 5 explicitly disabled */
	bool chained;            /* repo_before_updates is set */
} ic_repo;

int tt_ic_repo_decode(const uint8_t *fb, size_t len, const char *what, ic_repo *out, tt_error *err);
void tt_ic_repo_release(ic_repo *r);
/* Index of a snapshot / ref by exact match, -1 when absent. */
long tt_ic_repo_find_snap(const ic_repo *r, const uint8_t id[IC_ID_LEN]);
long tt_ic_repo_find_ref(const ic_ref *refs, size_t n, const char *name);

typedef struct ic_node {
	uint8_t id[IC_NODE_ID_LEN];
	char *path;
	uint8_t type;            /* 1 array, 2 group */
} ic_node;

typedef struct ic_snapshot {
	uint8_t id[IC_ID_LEN];
	bool has_parent;         /* spec 1 only */
	uint8_t parent[IC_ID_LEN];
	uint64_t flushed_at;
	char *message;
	ic_node *nodes;
	size_t nnodes;
} ic_snapshot;

int tt_ic_snapshot_decode(const uint8_t *fb, size_t len, const char *what, ic_snapshot *out,
		       tt_error *err);
void tt_ic_snapshot_release(ic_snapshot *s);

typedef struct ic_idlist {
	uint8_t (*ids)[IC_NODE_ID_LEN];
	size_t n;
} ic_idlist;

typedef struct ic_chunks {
	uint8_t node[IC_NODE_ID_LEN];
	char **coords;           /* each chunk's coordinates as "i,j,k" */
	size_t ncoords;
} ic_chunks;

typedef struct ic_move {
	char *from, *to;
	uint8_t node[IC_NODE_ID_LEN];
} ic_move;

/* A transaction log; lists in schema order. */
enum {
	IC_TX_NEW_GROUPS, IC_TX_NEW_ARRAYS, IC_TX_DELETED_GROUPS, IC_TX_DELETED_ARRAYS,
	IC_TX_UPDATED_ARRAYS, IC_TX_UPDATED_GROUPS, IC_TX_NLISTS
};
typedef struct ic_txlog {
	uint8_t id[IC_ID_LEN];
	ic_idlist lists[IC_TX_NLISTS];
	ic_chunks *chunks;
	size_t nchunks;
	ic_move *moves;
	size_t nmoves;
} ic_txlog;

int tt_ic_txlog_decode(const uint8_t *fb, size_t len, const char *what, ic_txlog *out,
		    tt_error *err);
void tt_ic_txlog_release(ic_txlog *t);

#endif

/* --- writing --------------------------------------------------------------- */

/* A header, then payload compressed into one zstd frame. */
int tt_ic_container_write(const uint8_t *payload, size_t len, int type, int spec, tt_buf *out,
		       tt_error *err);

/* A change to a spec-2 repo file.  The rewrite copies every field of the
 * old file it knows the schema of (config, feature flags, status, snapshot
 * metadata, pruned logs, the ops log, repo_before_updates, extra), applies
 * the change, keeps tags / branches / deleted tags byte-sorted, and puts a
 * new ops-log entry first (updated_at strictly after the previous first
 * entry's; that entry gets backup_path).  A file with fields or ops-log
 * entries newer than this schema is refused rather than rewritten. */
typedef enum ic_change_kind {
	IC_CHANGE_TAG_CREATE,      /* name at snap */
	IC_CHANGE_TAG_DELETE,      /* name (its snapshot becomes previous_snap_id) */
	IC_CHANGE_BRANCH_CREATE,   /* name at snap */
	IC_CHANGE_BRANCH_DELETE,   /* name */
	IC_CHANGE_BRANCH_RESET,    /* name to snap */
	IC_CHANGE_METADATA_SET     /* metadata item name = value (FlexBuffers bytes) */
} ic_change_kind;

typedef struct ic_change {
	ic_change_kind kind;
	const char *name;
	uint32_t snap;             /* index into the repo's snapshot list */
	const uint8_t *value;      /* IC_CHANGE_METADATA_SET */
	size_t value_len;
	uint64_t now_us;           /* the clock; updated_at is max(now, top + 1) */
	const char *backup_name;   /* the file the old bytes were copied to (no dir) */
} ic_change;

/* The new flatbuffer for old (a decompressed repo flatbuffer, decoded as
 * cur) after change. */
int tt_ic_repo_rewrite(const uint8_t *old, size_t len, const ic_repo *cur, const ic_change *change,
		    const char *what, tt_buf *out, tt_error *err);

/* The flatbuffers of a new spec-2 repository: its initial snapshot
 * (1CECHNKREP0F1RSTCMT0, "Repository initialized"), the empty transaction
 * log, and the repo file (main at the initial snapshot, one metadata item
 * when meta_name is set). */
int tt_ic_initial_snapshot(uint64_t now_us, tt_buf *out, tt_error *err);
int tt_ic_initial_txlog(tt_buf *out, tt_error *err);
int tt_ic_initial_repo(uint64_t now_us, const char *meta_name, const uint8_t *meta_value,
		    size_t meta_len, tt_buf *out, tt_error *err);

/* FlexBuffers encoding of one JSON string (repository metadata values). */
int tt_ic_flex_string(const char *s, tt_buf *out);
/* The string a FlexBuffers value holds (0 with s and n), or -1 when not a string. */
int tt_ic_flex_read_string(const uint8_t *v, size_t len, const char **s, size_t *n);
