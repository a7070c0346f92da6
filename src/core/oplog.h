/*
 * core/oplog.h - .tether/ops.jsonl, this checkout's journal of what tether
 * did, in tether-vcs's format: one JSON object per line (json.dumps with
 * its default separators, ASCII-escaped), fsync'd after each append.
 *
 *   entry:    {"id", "at", "command", "plan", "result", "pre", "undoes",
 *              "undone_by", "status", "parent", "progress"}
 *   progress: {"progress": <id>, "action": ..., ...}
 *   done:     {"done": <id>, "result": {...}, "pre": {...}[, "undone", "by"]}
 *   undo:     {"undone": <id>, "by": <undo id>}   (the older form)
 *
 * An entry is appended with status "started" before the first side effect
 * of the operation it records; one with no done mark is INCOMPLETE.
 *
 * Appends are serialized inside the process by a mutex (progress records
 * come from fan-out threads); processes are ordered by the checkout lock.
 * A torn last line (an append that was interrupted) is closed with '\n'
 * before the next record, so the fragment stays a fragment.
 */
#ifndef TT_CORE_OPLOG_H
#define TT_CORE_OPLOG_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util/error.h"

#define TT_OP_ID_LEN 12

/* Now as tether-vcs writes `at`: "2026-11-30T03:55:26+00:00". */
void tt_now_iso_seconds(char out[32]);
/* ISO 8601 UTC with microseconds, as Python's datetime.now(UTC).isoformat(). */
void tt_now_iso_micro(char out[40]);

/*
 * Append a finished working-tree operation (add, remove, set): an entry
 * with status "done".  result and pre are borrowed.  id_out (13 bytes) may
 * be NULL.
 */
int tt_oplog_record(const char *root, const char *command, json_t *result, json_t *pre,
		    char *id_out, tt_error *err);

/* The same with the applied plan (Plan.to_dict(); NULL: null) and the
 * operation it is a step of (NULL: none): Repo._log_op. */
int tt_oplog_record_plan(const char *root, const char *command, json_t *plan, json_t *result, json_t *pre,
			 const char *parent, char *id_out, tt_error *err);

/* Append any line (already shaped) and fsync. */
int tt_oplog_append(const char *root, json_t *line, tt_error *err);

/* --- journaling an operation ---------------------------------------------- */

/*
 * Journal an operation before its first side effect: an entry with status
 * "started", the plan (Plan.to_dict(), see tt_plan_to_object; NULL: null)
 * and pre (what undo needs; NULL: {}), synced to disk.  parent is the id of
 * the operation this one is a step of (NULL: none).  The new id is written
 * to id_out.  plan and pre are borrowed.
 */
int tt_oplog_begin(const char *root, const char *command, json_t *plan, json_t *pre,
		   const char *parent, char id_out[TT_OP_ID_LEN + 1], tt_error *err);
/* The same for an `undo` entry: undoes is the id it reverses (NULL: none). */
int tt_oplog_begin_ex(const char *root, const char *command, json_t *plan, json_t *pre,
		      const char *undoes, const char *parent, char id_out[TT_OP_ID_LEN + 1],
		      tt_error *err);

/* One action of a running operation took effect:
 * {"progress": id, "action": action, ...detail}.  detail (borrowed, NULL or
 * an object without "action") adds its members in order. */
int tt_oplog_progress(const char *root, const char *id, const char *action, json_t *detail,
		      tt_error *err);

/* Complete a started entry: {"done": id, "result": result, "pre": pre}
 * (NULL result/pre: {}), plus "undone": <undone>, "by": id when the
 * operation was an undo reversing the entry `undone` (NULL: not an undo). */
int tt_oplog_done(const char *root, const char *id, json_t *result, json_t *pre,
		  const char *undone, tt_error *err);

/* The older undo mark: {"undone": id, "by": by}. */
int tt_oplog_mark_undone(const char *root, const char *id, const char *by, tt_error *err);

/* --- reading -------------------------------------------------------------- */

/*
 * One entry with its marks folded in (OpEntry).  The strings point into
 * `record`, which is the entry as `tether ops --json` shows it (without
 * vcs_commit_gone): {"id", "at", "command", "plan", "result", "pre",
 * "undoes", "undone_by", "status", "parent", "progress"}.  The JSON fields
 * are borrowed from record too; Python's None is JSON null.
 */
typedef struct tt_op_entry {
	const char *id, *at, *command, *status;
	json_t *plan;      /* the applied plan's dict, or null */
	json_t *result;    /* object */
	json_t *pre;       /* object */
	json_t *undoes;    /* the entry an undo reversed: string or null */
	json_t *undone_by; /* the undo that reversed this one: string or null */
	json_t *parent;    /* the operation this is a step of: string or null */
	json_t *progress;  /* array of {"action", ...} */
	size_t line;       /* where the entry is in the file (1-based) */
	json_t *record;
} tt_op_entry;

typedef struct tt_oplog {
	tt_op_entry *entries;  /* oldest first (file order) */
	size_t count;
} tt_oplog;

#define TT_OPLOG_INIT { NULL, 0 }

/*
 * Read and fold .tether/ops.jsonl as tether-vcs's read_ops does: entries in
 * file order; done marks complete them (status "done", their result, their
 * pre merged over the entry's), undo marks set undone_by, progress records
 * collect per id.  A missing log is empty.  A torn last line (invalid JSON,
 * or not UTF-8) is skipped, as is a torn fragment an append has closed
 * since (a line that is an unfinished JSON document); any other malformed
 * line is TT_EPARSE ".tether/ops.jsonl:LINE: ...".  out (TT_OPLOG_INIT, or a
 * log read before) is replaced; on failure it is left empty.
 */
int tt_oplog_read(const char *root, tt_oplog *out, tt_error *err);
/* The same over text in memory; `what` names it in errors. */
int tt_oplog_parse(const char *text, size_t len, const char *what, tt_oplog *out,
		   tt_error *err);
void tt_oplog_free(tt_oplog *log);  /* back to TT_OPLOG_INIT; NULL-safe */

/* The i-th newest entry (0: the newest), NULL past the oldest. */
const tt_op_entry *tt_oplog_newest(const tt_oplog *log, size_t i);
/* The newest entry with this id, or NULL. */
const tt_op_entry *tt_oplog_find(const tt_oplog *log, const char *id);

/* The operation began and no done mark followed (status "started"). */
bool tt_op_incomplete(const tt_op_entry *e);
/* `tether undo` may reverse it: not an undo itself, not undone, complete,
 * not a step of another operation, and not an undo, repair, upgrade,
 * abandon, drop or forget-workspace. */
bool tt_op_undoable(const tt_op_entry *e);
/* OpEntry.summary(): the one line `tether ops` shows.  Caller frees; NULL
 * on OOM. */
char *tt_op_summary(const tt_op_entry *e);
/* The entry as `tether ops --json` lists it: record plus
 * "vcs_commit_gone" (new reference; NULL on OOM). */
json_t *tt_op_to_json(const tt_op_entry *e, bool vcs_commit_gone);
/* The `tether ops` text line (without '\n'):
 * "<id>  <at>  <command:<8> <summary><flags>".  Caller frees. */
char *tt_op_format_line(const tt_op_entry *e, bool vcs_commit_gone);

#endif
