/*
 * backends/dispatch.c - the one way the engine calls a backend (see
 * dispatch.h).
 */
#include "backends/dispatch.h"

#include <stddef.h>
#include <string.h>

static tt_backend_trace_fn trace_fn;
static void *trace_ctx;

void tt_backend_set_trace(tt_backend_trace_fn fn, void *ctx)
{
	trace_fn = fn;
	trace_ctx = ctx;
}

const char *tt_backend_promote_hint(const tt_backend *b)
{
	return b->ops->promote_hint;
}

static const char *kind_of(const tt_backend *b)
{
	return b->kind && b->kind->name ? b->kind->name : "backend";
}

static int done(const tt_backend *b, const char *op, int rc, tt_error *err)
{
	if (rc < 0 && err && err->code && !err->kind && !err->key)
		tt_error_object(err, NULL, kind_of(b));
	if (trace_fn)
		trace_fn(trace_ctx, kind_of(b), op, rc);
	return rc;
}

/* A listing that failed hands back nothing, whatever its op left in *out:
 * the caller of a failed call has nothing to free. */
static int listed(const tt_backend *b, const char *op, int rc, json_t **out, tt_error *err)
{
	if (rc < 0 && out) {
		json_decref(*out);
		*out = NULL;
	}
	return done(b, op, rc, err);
}

static int missing(const tt_backend *b, const char *op, tt_error *err)
{
	const char *why = NULL;
	if (strcmp(op, "pin") == 0 || strcmp(op, "unpin") == 0 || strcmp(op, "list_pins") == 0)
		why = b->ops->no_pin;
	else if (strcmp(op, "fork") == 0)
		why = b->ops->no_fork;
	else if (strcmp(op, "merge") == 0)
		why = b->ops->no_merge;
	int rc = why ? TT_BACKEND_ERR(err, kind_of(b), TT_ECAPABILITY, "%s", why)
		     : TT_BACKEND_ERR(err, kind_of(b), TT_ECAPABILITY, "the %s backend cannot %s",
				      kind_of(b), op);
	return done(b, op, rc, err);
}

int tt_backend_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!b->ops->identity)
		return missing(b, "identity", err);
	return done(b, "identity", b->ops->identity(b, loc, out, err), err);
}

int tt_backend_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref,
		json_t **state, tt_error *err)
{
	if (state)
		*state = NULL;
	if (!b->ops->fingerprint)
		return missing(b, "fingerprint", err);
	return done(b, "fingerprint", b->ops->fingerprint(b, loc, working_ref, state, err), err);
}

int tt_backend_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id,
		tt_pin *out, tt_error *err)
{
	if (!b->ops->pin)
		return missing(b, "pin", err);
	return done(b, "pin", b->ops->pin(b, loc, state, pin_id, out, err), err);
}

int tt_backend_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err)
{
	if (!b->ops->unpin)
		return missing(b, "unpin", err);
	return done(b, "unpin", b->ops->unpin(b, loc, pin, err), err);
}

int tt_backend_list_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err)
{
	if (ids)
		*ids = NULL;
	if (!b->ops->list_pins)
		return missing(b, "list_pins", err);
	return listed(b, "list_pins", b->ops->list_pins(b, loc, ids, err), ids, err);
}

int tt_backend_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
		bool deep, tt_verify_status *status, char **message, tt_error *err)
{
	if (status)
		*status = TT_VERIFY_UNKNOWN;
	if (message)
		*message = NULL;
	if (!b->ops->verify)
		return missing(b, "verify", err);
	return done(b, "verify", b->ops->verify(b, loc, state, pin, deep, status, message, err), err);
}

int tt_backend_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		const tt_expect *expected, char **ref_out, tt_error *err)
{
	if (ref_out)
		*ref_out = NULL;
	if (!b->ops->fork)
		return missing(b, "fork", err);
	return done(b, "fork", b->ops->fork(b, loc, source, name, expected, ref_out, err), err);
}

int tt_backend_delete_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err)
{
	if (!b->ops->delete_working_ref)
		return missing(b, "delete_working_ref", err);
	return done(b, "delete_working_ref", b->ops->delete_working_ref(b, loc, ref, err), err);
}

int tt_backend_list_working_refs(tt_backend *b, const json_t *loc, json_t **refs, tt_error *err)
{
	if (refs)
		*refs = NULL;
	if (!b->ops->list_working_refs)
		return missing(b, "list_working_refs", err);
	return listed(b, "list_working_refs", b->ops->list_working_refs(b, loc, refs, err), refs, err);
}

int tt_backend_working_ref_blockers(tt_backend *b, const json_t *loc, const char *ref, char **why,
		tt_error *err)
{
	if (why)
		*why = NULL;
	if (!b->ops->working_ref_blockers)
		return missing(b, "working_ref_blockers", err);
	return done(b, "working_ref_blockers", b->ops->working_ref_blockers(b, loc, ref, why, err), err);
}

int tt_backend_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		json_t **handle, tt_error *err)
{
	if (handle)
		*handle = NULL;
	if (!b->ops->open)
		return missing(b, "open", err);
	return done(b, "open", b->ops->open(b, loc, target, read_only, handle, err), err);
}

int tt_backend_checkout(tt_backend *b, const json_t *loc, const char *ref, const char *want,
		char **where, tt_error *err)
{
	if (where)
		*where = NULL;
	if (!b->ops->checkout)
		return missing(b, "checkout", err);
	return done(b, "checkout", b->ops->checkout(b, loc, ref, want, where, err), err);
}

int tt_backend_promote(tt_backend *b, const json_t *loc, const tt_target *source,
		const tt_expect *expected, json_t **new_state, tt_error *err)
{
	if (new_state)
		*new_state = NULL;
	if (!b->ops->promote)
		return missing(b, "promote", err);
	return done(b, "promote", b->ops->promote(b, loc, source, expected, new_state, err), err);
}

int tt_backend_merge(tt_backend *b, const json_t *loc, const tt_target *source, const char *message,
		const tt_expect *expected, json_t **new_state, json_t **conflicts, tt_error *err)
{
	if (new_state)
		*new_state = NULL;
	if (conflicts)
		*conflicts = NULL;
	if (!b->ops->merge)
		return missing(b, "merge", err);
	return done(b, "merge", b->ops->merge(b, loc, source, message, expected, new_state, conflicts, err), err);
}

int tt_backend_check_move(tt_backend *b, const json_t *loc, const tt_target *source, const tt_expect *expected,
		bool merge, tt_error *err)
{
	if (!b->ops->check_move)
		return missing(b, "check_move", err);
	return done(b, "check_move", b->ops->check_move(b, loc, source, expected, merge, err), err);
}

int tt_backend_ancestor_of(tt_backend *b, const json_t *loc, const json_t *ancestor,
		const tt_target *descendant, int *answer, tt_error *err)
{
	if (!b->ops->ancestor_of)
		return missing(b, "ancestor_of", err);
	return done(b, "ancestor_of", b->ops->ancestor_of(b, loc, ancestor, descendant, answer, err), err);
}

int tt_backend_listing(tt_backend *b, const json_t *loc, const json_t *state, char **text,
		tt_error *err)
{
	if (text)
		*text = NULL;
	if (!b->ops->listing)
		return missing(b, "listing", err);
	return done(b, "listing", b->ops->listing(b, loc, state, text, err), err);
}

int tt_backend_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		const char *la, const char *lb, tt_object_diff *out, tt_error *err)
{
	if (!b->ops->diff)
		return missing(b, "diff", err);
	return done(b, "diff", b->ops->diff(b, loc, a, bstate, la, lb, out, err), err);
}

int tt_backend_history(tt_backend *b, const json_t *loc, const char *ref, size_t limit,
		tt_history_entry **out, size_t *n, tt_error *err)
{
	if (out)
		*out = NULL;
	if (n)
		*n = 0;
	if (!b->ops->history)
		return missing(b, "history", err);
	return done(b, "history", b->ops->history(b, loc, ref, limit, out, n, err), err);
}

int tt_backend_create(tt_backend *b, const json_t *loc, const char *owner, json_t **state,
		tt_error *err)
{
	if (state)
		*state = NULL;
	if (!b->ops->create)
		return missing(b, "create", err);
	return done(b, "create", b->ops->create(b, loc, owner, state, err), err);
}

int tt_backend_owner(tt_backend *b, const json_t *loc, char **owner, tt_error *err)
{
	if (owner)
		*owner = NULL;
	if (!b->ops->owner)
		return missing(b, "owner", err);
	return done(b, "owner", b->ops->owner(b, loc, owner, err), err);
}

int tt_backend_is_ref_empty(tt_backend *b, const json_t *loc, const json_t *ignoring, int *answer,
		tt_error *err)
{
	if (!b->ops->is_ref_empty)
		return missing(b, "is_ref_empty", err);
	return done(b, "is_ref_empty", b->ops->is_ref_empty(b, loc, ignoring, answer, err), err);
}

int tt_backend_delete_store(tt_backend *b, const json_t *loc, tt_error *err)
{
	if (!b->ops->delete_store)
		return missing(b, "delete_store", err);
	return done(b, "delete_store", b->ops->delete_store(b, loc, err), err);
}

unsigned tt_backend_effective_capabilities(tt_backend *b, const json_t *loc,
		const char *file_policy)
{
	return b->ops->effective_capabilities ? b->ops->effective_capabilities(b, loc, file_policy) : b->kind->caps;
}

bool tt_backend_state_addressable(tt_backend *b, const json_t *loc, const json_t *state)
{
	return b->ops->state_addressable ? b->ops->state_addressable(b, loc, state) : true;
}

int tt_backend_branch_scope(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!b->ops->branch_scope)
		return missing(b, "branch_scope", err);
	return done(b, "branch_scope", b->ops->branch_scope(b, loc, out, err), err);
}

int tt_backend_ref_namespace(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!b->ops->ref_namespace)
		return missing(b, "ref_namespace", err);
	return done(b, "ref_namespace", b->ops->ref_namespace(b, loc, out, err), err);
}

int tt_backend_base_branch(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!b->ops->base_branch)
		return missing(b, "base_branch", err);
	return done(b, "base_branch", b->ops->base_branch(b, loc, out, err), err);
}

int tt_backend_check_quiescence(tt_backend *b, const json_t *loc, const char *working_ref,
		tt_error *err)
{
	if (!b->ops->check_quiescence)
		return missing(b, "check_quiescence", err);
	return done(b, "check_quiescence", b->ops->check_quiescence(b, loc, working_ref, err), err);
}

int tt_backend_clear_partial_fork(tt_backend *b, const json_t *loc, const char *name, bool *cleared,
		tt_error *err)
{
	if (cleared)
		*cleared = false;
	if (!b->ops->clear_partial_fork)
		return missing(b, "clear_partial_fork", err);
	return done(b, "clear_partial_fork", b->ops->clear_partial_fork(b, loc, name, cleared, err), err);
}

int tt_backend_check_locator(tt_backend *b, const json_t *loc, tt_error *err)
{
	if (!b->ops->check_locator)
		return missing(b, "check_locator", err);
	return done(b, "check_locator", b->ops->check_locator(b, loc, err), err);
}

int tt_backend_storage_options(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!b->ops->storage_options)
		return 0;
	return done(b, "storage_options", b->ops->storage_options(b, loc, out, err), err);
}

void tt_backend_progress(tt_backend *b, tt_backend_work_fn fn, void *ctx)
{
	if (b->ops->progress)
		b->ops->progress(b, fn, ctx);
}

int tt_backend_rename_ref(tt_backend *b, const json_t *loc, const char *old, const char *new_name,
		tt_error *err)
{
	if (!b->ops->rename_ref)
		return missing(b, "rename_ref", err);
	return done(b, "rename_ref", b->ops->rename_ref(b, loc, old, new_name, err), err);
}
