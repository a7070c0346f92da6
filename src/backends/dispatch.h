/*
 * backends/dispatch.h - how the engine calls a backend: tt_backend_<op>(b,
 * ...) for every op of tt_backend_ops, with the op's own signature.
 *
 * Each wrapper resets the op's out-parameters (pointers to NULL, a count to
 * 0, a verify status to UNKNOWN) before the call (and a failed listing's,
 * list_pins and list_working_refs, after it too), answers a missing op with
 * TT_ECAPABILITY naming the kind (the ops' no_pin / no_fork reason for the
 * pin and fork ops), names the kind on every error the backend left
 * without one, and reports each call to the trace hook.  The refinements
 * with a documented default (effective_capabilities, state_addressable,
 * storage_options, progress) give that default when missing.  tt_backend_has(b, op) asks whether a
 * kind implements an optional op at all (the engine's defaults for
 * base_branch, branch_scope, ... hang on it).
 */
#ifndef TT_BACKENDS_DISPATCH_H
#define TT_BACKENDS_DISPATCH_H

#include "backends/backend.h"

#define tt_backend_has(b, op) ((b)->ops->op != NULL)
/* What to do instead, appended to a refused promote (NULL: nothing). */
const char *tt_backend_promote_hint(const tt_backend *b);

/* Called after every dispatched op with the kind, the op's name and its
 * result (tests and debugging); NULL turns it off.  Set it before backends
 * are used from several threads. */
typedef void (*tt_backend_trace_fn)(void *ctx, const char *kind, const char *op, int rc);
void tt_backend_set_trace(tt_backend_trace_fn fn, void *ctx);

int tt_backend_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err);
int tt_backend_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref,
		json_t **state, tt_error *err);
int tt_backend_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id,
		tt_pin *out, tt_error *err);
int tt_backend_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err);
int tt_backend_list_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err);
int tt_backend_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
		bool deep, tt_verify_status *status, char **message, tt_error *err);
int tt_backend_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		const tt_expect *expected, char **ref_out, tt_error *err);
int tt_backend_delete_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err);
int tt_backend_list_working_refs(tt_backend *b, const json_t *loc, json_t **refs, tt_error *err);
int tt_backend_working_ref_blockers(tt_backend *b, const json_t *loc, const char *ref, char **why,
		tt_error *err);
int tt_backend_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		json_t **handle, tt_error *err);
int tt_backend_checkout(tt_backend *b, const json_t *loc, const char *ref, const char *want,
		char **where, tt_error *err);
int tt_backend_promote(tt_backend *b, const json_t *loc, const tt_target *source,
		const tt_expect *expected, json_t **new_state, tt_error *err);
int tt_backend_merge(tt_backend *b, const json_t *loc, const tt_target *source, const char *message,
		const tt_expect *expected, json_t **new_state, json_t **conflicts, tt_error *err);
int tt_backend_check_move(tt_backend *b, const json_t *loc, const tt_target *source, const tt_expect *expected,
		bool merge, tt_error *err);
int tt_backend_ancestor_of(tt_backend *b, const json_t *loc, const json_t *ancestor,
		const tt_target *descendant, int *answer, tt_error *err);
int tt_backend_listing(tt_backend *b, const json_t *loc, const json_t *state, char **text,
		tt_error *err);
int tt_backend_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		const char *la, const char *lb, tt_object_diff *out, tt_error *err);
int tt_backend_history(tt_backend *b, const json_t *loc, const char *ref, size_t limit,
		tt_history_entry **out, size_t *n, tt_error *err);
int tt_backend_create(tt_backend *b, const json_t *loc, const char *owner, json_t **state,
		tt_error *err);
int tt_backend_owner(tt_backend *b, const json_t *loc, char **owner, tt_error *err);
int tt_backend_is_ref_empty(tt_backend *b, const json_t *loc, const json_t *ignoring, int *answer,
		tt_error *err);
int tt_backend_delete_store(tt_backend *b, const json_t *loc, tt_error *err);
unsigned tt_backend_effective_capabilities(tt_backend *b, const json_t *loc,
		const char *file_policy);
bool tt_backend_state_addressable(tt_backend *b, const json_t *loc, const json_t *state);
int tt_backend_branch_scope(tt_backend *b, const json_t *loc, char **out, tt_error *err);
int tt_backend_ref_namespace(tt_backend *b, const json_t *loc, char **out, tt_error *err);
int tt_backend_base_branch(tt_backend *b, const json_t *loc, char **out, tt_error *err);
int tt_backend_check_quiescence(tt_backend *b, const json_t *loc, const char *working_ref,
		tt_error *err);
int tt_backend_clear_partial_fork(tt_backend *b, const json_t *loc, const char *name, bool *cleared,
		tt_error *err);
int tt_backend_check_locator(tt_backend *b, const json_t *loc, tt_error *err);
/* *out NULL (and 0) where the kind opens no object store. */
int tt_backend_storage_options(tt_backend *b, const json_t *loc, json_t **out, tt_error *err);
/* Nothing where the kind reports no progress. */
void tt_backend_progress(tt_backend *b, tt_backend_work_fn fn, void *ctx);
int tt_backend_rename_ref(tt_backend *b, const json_t *loc, const char *old, const char *new_name,
		tt_error *err);

#endif
