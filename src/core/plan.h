/*
 * core/plan.h - plans: what a store-writing command would do, as data, in
 * tether-vcs's saved-plan format 3 (tether.plan.Plan):
 *
 *   {"format": 3, "tether_version", "command", "created_at",
 *    "context": {...}, "notes": [str],
 *    "preconditions": [{"kind", "expected", "key", "params", "detail"}],
 *    "actions": [{"op", "key", "kind", "target", "detail", "params"}],
 *    "digest"}
 *
 * `digest` is the SHA-256 (hex) of everything before it, dumped with
 * sorted keys, compact separators and ASCII escapes; it detects edits, it
 * does not authenticate.  A saved plan loads only under the tether-vcs
 * version it was made by (TT_PLAN_TETHER_VERSION), so plans of formats 1
 * and 2 are refused with "re-run the plan".
 *
 * A plan is held as the JSON content itself (strings may hold NUL, values
 * are kept exactly as read), with accessors for the typed view.
 */
#ifndef TT_CORE_PLAN_H
#define TT_CORE_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/pyvalue.h"
#include "util/buf.h"
#include "util/error.h"

#define TT_PLAN_FORMAT 3
/* The tether-vcs release whose plans (and journal) this code reads and
 * writes: saved plans carry it as "tether_version". */
#define TT_PLAN_TETHER_VERSION "0.1.0b7"

typedef struct tt_plan tt_plan;

/* The borrowed view of one action; strings end at their first NUL (the
 * *_len fields give the full lengths). */
typedef struct tt_plan_action_view {
	const char *op, *key, *kind, *target, *detail;
	size_t key_len;
	json_t *params;   /* object */
} tt_plan_action_view;

typedef struct tt_plan_precondition_view {
	const char *kind;
	json_t *expected; /* any value; JSON null for none */
	json_t *key;      /* a string, or null (any value in a loaded plan) */
	json_t *params;   /* object */
	const char *detail;
} tt_plan_precondition_view;

/* --- building ------------------------------------------------------------ */

/* A new empty plan for command, created now.  NULL on OOM or when command
 * is not valid UTF-8. */
tt_plan *tt_plan_new(const char *command);
void tt_plan_free(tt_plan *plan);  /* NULL-safe */

/* Replace created_at ("2026-01-01T00:00:00+00:00"). */
int tt_plan_set_created_at(tt_plan *plan, const char *created_at, tt_error *err);

/*
 * Append a precondition.  kind must be one of the precondition kinds
 * (TT_EUSAGE otherwise); expected (NULL: null) and params (NULL: {}, else
 * an object) are copied (deep); key and detail may be NULL (null, "").
 */
int tt_plan_require(tt_plan *plan, const char *kind, const json_t *expected, const char *key,
		    const json_t *params, const char *detail, tt_error *err);

/* Append an action; any string may be NULL (""), params NULL ({}) or an
 * object (deep-copied). */
int tt_plan_action(tt_plan *plan, const char *op, const char *key, const char *kind,
		   const char *target, const char *detail, const json_t *params, tt_error *err);

int tt_plan_note(tt_plan *plan, const char *note, tt_error *err);

/* The context object (borrowed, mutable while building). */
json_t *tt_plan_context(const tt_plan *plan);
/* context[name] = value (a deep copy). */
int tt_plan_set_context(tt_plan *plan, const char *name, const json_t *value, tt_error *err);

/* --- reading ------------------------------------------------------------- */

const char *tt_plan_command(const tt_plan *plan);
const char *tt_plan_created_at(const tt_plan *plan);
size_t tt_plan_action_count(const tt_plan *plan);
size_t tt_plan_note_count(const tt_plan *plan);
const char *tt_plan_note_at(const tt_plan *plan, size_t i);
size_t tt_plan_precondition_count(const tt_plan *plan);
/* Fill *out for index i; false when i is out of range. */
bool tt_plan_action_at(const tt_plan *plan, size_t i, tt_plan_action_view *out);
bool tt_plan_precondition_at(const tt_plan *plan, size_t i, tt_plan_precondition_view *out);

/* Is kind one of tether.plan.PRECONDITION_KINDS? */
bool tt_plan_precondition_kind_valid(const char *kind);
/* Does an action verb write to an external system (not in Plan.NON_WRITES:
 * trunk, keep-branch, keep-pin, keep-store, defer-fork, refuse, reuse,
 * adopt, hold, share)? */
bool tt_plan_op_writes(const char *op);
/* How many actions write (len(plan.writes)); an empty plan has none. */
size_t tt_plan_write_count(const tt_plan *plan);

/* --- serialization ------------------------------------------------------- */

/* Plan.digest(): 64 hex digits + NUL. */
int tt_plan_digest(const tt_plan *plan, char hex[65], tt_error *err);
/* Plan.to_dict(): content plus "digest" (new reference), NULL on error. */
json_t *tt_plan_to_object(const tt_plan *plan, tt_error *err);
/* Plan.to_json(): json.dumps(to_dict(), indent=2), no trailing newline. */
int tt_plan_to_json(const tt_plan *plan, tt_buf *out, tt_error *err);

/*
 * Plan.from_json(): parse a saved plan exactly as tether-vcs loads it
 * (values converted through str()/dict() as it converts them), without
 * checking it.  A plan made by another tether version (every format-1 and
 * format-2 plan among them) is TT_ESTALEPLAN "... re-run the plan"; another
 * format TT_ESTALEPLAN "unsupported plan format N"; an unknown precondition
 * kind or a malformed document TT_ECONFIG ("invalid plan: ...").
 */
int tt_plan_parse(tt_plan **out, const char *text, size_t len, tt_error *err);

/* What the plan lacks of REQUIRED_PRECONDITIONS / REQUIRED_ACTION_PRECONDITIONS
 * for its command, as Plan.missing_preconditions() lists it ("kind",
 * "a/b for 'key'"), joined with ", " into out; returns how many. */
size_t tt_plan_missing_preconditions(const tt_plan *plan, tt_buf *out);
/* Loaded, and the content no longer matches the saved digest (a plan
 * saved without one counts as edited); false for a plan built here. */
bool tt_plan_edited(const tt_plan *plan);
/* The saved digest of a loaded plan, or NULL for one built here. */
const char *tt_plan_saved_digest(const tt_plan *plan);

/* Repo._verify_plan's checks of the plan itself: required preconditions,
 * then the digest.  TT_ESTALEPLAN with tether-vcs's messages. */
int tt_plan_check(const tt_plan *plan, tt_error *err);

/* tt_plan_parse + tt_plan_check: what `--from-plan` accepts. */
int tt_plan_from_json(tt_plan **out, const char *text, size_t len, tt_error *err);

/* --- text ----------------------------------------------------------------- */

/* Plan.render(): one line per action, then the notes; each line ends '\n'. */
int tt_plan_render(const tt_plan *plan, tt_buf *out, tt_error *err);
/* What the CLI prints without --json: "plan: <command> (<N> write(s))\n"
 * followed by tt_plan_render(). */
int tt_plan_render_text(const tt_plan *plan, tt_buf *out, tt_error *err);

#endif
