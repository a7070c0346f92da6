/*
 * core/oplog.h - .tether/ops.jsonl, this checkout's journal of what tether
 * did, in tether-vcs's format: one JSON object per line (json.dumps with
 * its default separators, ASCII-escaped), fsync'd after each append.
 *
 *   entry:    {"id", "at", "command", "plan", "result", "pre", "undoes",
 *              "undone_by", "status", "parent", "progress"}
 *   progress: {"progress": <id>, "action": ..., ...}
 *   done:     {"done": <id>, "result": {...}, "pre": {...}[, "undone", "by"]}
 *
 * An entry is appended with status "started" before the first side effect
 * of the operation it records; one with no done mark is INCOMPLETE.
 */
#ifndef TT_CORE_OPLOG_H
#define TT_CORE_OPLOG_H

#include <jansson.h>

#include "util/error.h"

#define TT_OP_ID_LEN 12

/* Now as tether-vcs writes `at`: "2026-11-30T03:55:26+00:00". */
void tt_now_iso_seconds(char out[32]);

/*
 * Append a finished working-tree operation (add, remove, set): an entry
 * with status "done".  result and pre are borrowed.  id_out (13 bytes) may
 * be NULL.
 */
int tt_oplog_record(const char *root, const char *command, json_t *result, json_t *pre,
		    char *id_out, tt_error *err);

/* Append any line (already shaped) and fsync. */
int tt_oplog_append(const char *root, json_t *line, tt_error *err);

#endif
