/*
 * backends/delta/delta.h - the `delta` backend's log readers.
 *
 * The backend itself is reached through the vtable (tt_delta_backend_new,
 * declared in backend.h).  This header holds the pure readers of one
 * transaction-log file that delta.c builds on, so that the tests and the
 * fuzz target can drive them on bytes:
 *   - a commit (`NNNNNNNNNNNNNNNNNNNN.json`, one action per line): its
 *     commitInfo (operation, metrics in either Spark's or delta-rs's
 *     spelling, timestamps) and its metaData id;
 *   - the Thrift-compact footer of a Parquet checkpoint: the table id from
 *     the `metaData.id` column's statistics, without decoding any data.
 */
#ifndef TT_BACKENDS_DELTA_H
#define TT_BACKENDS_DELTA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

/* Metrics a commit reports, normalised; -1: not reported. */
typedef struct tt_delta_metrics {
	long long added_rows, deleted_rows, updated_rows, added_files, removed_files;
} tt_delta_metrics;

/* What one commit file says. */
typedef struct tt_delta_commit {
	bool has_commit_info;
	char *operation;          /* NULL without commitInfo.operation */
	tt_delta_metrics metrics;
	bool has_ict;             /* inCommitTimestamp (ms) */
	long long ict_ms;
	bool has_timestamp;       /* commitInfo.timestamp (ms) */
	long long timestamp_ms;
	char *table_id;           /* metaData.id, NULL when the commit has none */
} tt_delta_commit;

void tt_delta_commit_release(tt_delta_commit *c);

/*
 * Read a commit file's text.  Every line must be a JSON object (blank
 * lines are skipped); unknown actions and fields are ignored.  what names
 * the file in errors (TT_EPARSE "<what>:<line>:<col>: ...").
 */
int tt_delta_parse_commit(const char *text, size_t len, const char *what, tt_delta_commit *out,
			  tt_error *err);

/* The same, reading only the lines that hold a commitInfo action (a
 * history listing needs nothing else); other lines are not checked. */
int tt_delta_parse_commit_info(const char *text, size_t len, const char *what,
			       tt_delta_commit *out, tt_error *err);

/* The actions of a commit or JSON checkpoint that add or remove data files,
 * and the sidecar files a V2 checkpoint lists, for a replay. */
typedef enum tt_delta_file_action {
	TT_DELTA_ADD, TT_DELTA_REMOVE, TT_DELTA_SIDECAR,
	/* the deletion-vector file an add / remove names (one file may hold
	 * the vectors of several data files) */
	TT_DELTA_ADD_DV, TT_DELTA_REMOVE_DV
} tt_delta_file_action;
typedef int (*tt_delta_file_fn)(void *ctx, tt_delta_file_action action, const char *path,
				tt_error *err);
/* Call fn for every add / remove / sidecar path (as written: URL-encoded)
 * in order, each add or remove followed by its deletion vector's file when
 * it has one stored in a file.  A malformed deletion-vector descriptor is
 * TT_EPARSE. */
int tt_delta_commit_files(const char *text, size_t len, const char *what, tt_delta_file_fn fn,
			  void *ctx, tt_error *err);

/*
 * The file a deletion vector is stored in, from its descriptor's
 * storageType and pathOrInlineDv: "u" is a path relative to the table,
 * `[<prefix>/]deletion_vector_<uuid>.bin`, the UUID Z85-encoded in the
 * last 20 characters; "p" is an absolute path as written; "i" (inline) has
 * no file.  *path: malloc'd, or NULL for an inline vector.  Returns 0, or
 * -1 when the descriptor is malformed (or memory ran out: *path NULL and
 * errno ENOMEM).
 */
int tt_delta_dv_file(const char *storage_type, const char *value, size_t len, char **path);

/*
 * The table id a Parquet checkpoint's footer gives: the statistics of the
 * `metaData.id` column (min == max, a checkpoint holds one metaData row).
 * data is the whole file or at least its tail (the footer and the trailing
 * 8 bytes); *id NULL: the footer parses but does not say (no statistics).
 * A file that is not Parquet, or whose footer is cut or malformed, is
 * TT_EPARSE naming what.
 */
int tt_delta_footer_table_id(const unsigned char *data, size_t len, const char *what, char **id,
			     tt_error *err);

/* The footer's length from a file's last 8 bytes (TT_EPARSE when they are
 * not "<len32>PAR1"). */
int tt_delta_footer_length(const unsigned char tail[8], const char *what, uint32_t *len,
			   tt_error *err);

#endif
