/*
 * engine/cmd/lifecycle.c - stores tether makes (experimental): `add --create`
 * and its undo.  The backend makes an empty store carrying this dataset's
 * owner marker; the clone's created-store index remembers it (with the
 * bookmark it was made on) so `gc --delete-stores` can reclaim it once
 * nothing references it (gc_stores.c).  Only the marker in the store ever
 * authorizes removing it; a manifest's `origin = "created"` never does.
 */
#include "engine/cmd/lifecycle.h"

#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/index.h"
#include "core/oplog.h"
#include "engine/kernel/context.h"
#include "engine/kernel/register.h"
#include "util/mem.h"

const char *tt_engine_store_where(const json_t *loc, tt_buf *scratch)
{
	static const char *const fields[] = { "uri", "path", "system", "project_id", "table" };
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		json_t *v = json_object_get(loc, fields[i]);
		if (v && !json_is_null(v) && !(json_is_string(v) && !json_string_length(v)) &&
		    !json_is_false(v) && !(json_is_integer(v) && json_integer_value(v) == 0)) {
			tt_pyv_str(scratch, v);
			return scratch->ptr ? scratch->ptr : "";
		}
	}
	tt_pyv_str(scratch, loc);
	return scratch->ptr ? scratch->ptr : "";
}

/* On a bookmark other than the trunk, the store's working branch is forked
 * at once from its initial state, so the first writable open needs no
 * `new` (a `new` cannot plan it: nothing is committed yet).  *ref_out
 * NULL: nothing to do. */
static int adopt_into_bookmark(tt_repo *repo, const char *key, tt_backend *b, const json_t *loc,
			       const tt_policy *policy, const json_t *initial, char **ref_out,
			       tt_error *err)
{
	char *name = NULL;
	int rc;
	*ref_out = NULL;
	if (!repo->ws.bookmark || tt_engine_on_trunk(repo))
		return 0;
	if (!(tt_backend_caps(b, loc, policy->file, policy->pin) & TT_CAP_FORK) || !tt_backend_has(b, fork))
		return 0;
	if ((rc = tt_working_ref_name(&name, repo->config.dataset_id, repo->ws.bookmark, err)) < 0)
		return rc;
	tt_target src = { .kind = TT_TARGET_STATE, .state = initial };
	tt_expect any = { .kind = TT_EXPECT_NONE };
	rc = tt_backend_fork(b, loc, &src, name, &any, ref_out, err);
	free(name);
	if (rc < 0)
		return rc;
	json_t *identity = NULL;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_backend_identity(b, loc, &identity, &ignored) == 0)
		tt_index_note_touched(repo->vcs->shared_dir, repo->config.dataset_id, b->kind->name, identity,
				      loc, key, &ignored);
	json_decref(identity);
	tt_error_clear(&ignored);
	json_object_del(repo->ws.pending_forks, key);
	if (json_object_set_new(repo->ws.working_refs, key, json_string(*ref_out)) < 0 ||
	    json_object_set_new(repo->ws.fork_points, key, json_deep_copy(initial)) < 0)
		return tt_error_oom(err);
	return tt_workspace_save(&repo->ws, repo->root, err);
}

int tt_engine_add_created(tt_repo *repo, const char *key, const tt_kind *kind, json_t *loc,
			  const tt_policy *policy, json_t *pre, json_t **result, tt_error *err)
{
	tt_backend *b;
	json_t *initial = NULL, *identity = NULL, *res = NULL;
	char op_id[TT_OP_ID_LEN + 1], *ref = NULL;
	int rc;
	*result = NULL;
	if ((rc = tt_engine_backend(repo, kind->name, &b, err)) < 0)
		return tt_error_object(err, key, kind->name);
	if (!(tt_backend_caps(b, loc, policy->file, policy->pin) & TT_CAP_CREATE) || !tt_backend_has(b, create)) {
		rc = tt_error_set(err, TT_ECAPABILITY, "'%s' cannot create a store at this locator; register "
				  "an existing one instead", kind->name);
		tt_error_hint(err, "make the store with its own tools, then `tether add` it without --create");
		return tt_error_object(err, key, kind->name);
	}
	/* A store write follows: journal first, so a crash leaves a started
	 * entry naming what was under way. */
	if ((rc = tt_oplog_begin(repo->root, "add", NULL, pre, NULL, op_id, err)) < 0)
		return rc;
	if ((rc = tt_backend_create(b, loc, repo->config.dataset_id, &initial, err)) < 0) {
		tt_error_object(err, key, kind->name);
		goto done;
	}
	if ((rc = tt_backend_identity(b, loc, &identity, err)) < 0) {
		tt_error_object(err, key, kind->name);
		goto done;
	}
	if ((rc = tt_index_note_created(repo->vcs->shared_dir, repo->config.dataset_id, kind->name, identity,
					loc, key, repo->ws.bookmark, err)) < 0)
		goto done;
	res = json_pack("{s:s,s:{s:s,s:O,s:O}}", "key", key, "created", "kind", kind->name, "identity", identity,
			"locator", loc);
	if (!res) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_engine_register(repo, key, kind->name, loc, *policy, true, err)) < 0)
		goto done;
	if ((rc = adopt_into_bookmark(repo, key, b, loc, policy, initial, &ref, err)) < 0) {
		tt_error_object(err, key, kind->name);
		goto done;
	}
	if (ref && json_object_set_new(res, "fork", json_string(ref)) < 0) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_oplog_done(repo->root, op_id, res, NULL, NULL, err)) < 0)
		goto done;
	*result = res;
	res = NULL;
done:
	json_decref(initial);
	json_decref(identity);
	json_decref(res);
	free(ref);
	return rc;
}

/* One line of an undo report. */
static void report(json_t *list, char *line)
{
	json_array_append_new(list, json_string(line ? line : "out of memory"));
	free(line);
}

void tt_engine_undo_created(tt_repo *repo, const json_t *result, json_t *restored, json_t *irreversible)
{
	const json_t *created = json_object_get(result, "created");
	const char *key = json_string_value(json_object_get(result, "key"));
	const char *kind = json_string_value(json_object_get(created, "kind"));
	json_t *loc = json_object_get(created, "locator"), *identity = json_object_get(created, "identity");
	json_t *fork = json_object_get(result, "fork"), *ignoring = NULL;
	tt_buf wb = TT_BUF_INIT;
	tt_backend *b;
	tt_error e = TT_ERROR_INIT;
	char *owner = NULL;
	int empty = -1;
	if (!json_is_object(created) || json_object_size(created) == 0)
		return;
	key = key ? key : "";
	if (!kind || !json_is_object(loc) || !json_is_object(identity) || (fork && !json_is_string(fork))) {
		report(irreversible, tt_asprintf("%s: the journal's record of the store it created is "
						 "malformed; the store (if any) is left for `gc "
						 "--delete-stores`", key));
		return;
	}
	const char *where = tt_engine_store_where(loc, &wb);
	if (tt_engine_backend(repo, kind, &b, &e) < 0 || !tt_backend_has(b, owner) || !tt_backend_has(b, is_ref_empty) ||
	    !tt_backend_has(b, delete_store)) {
		if (!e.code)
			tt_error_set(&e, TT_ECAPABILITY, "[%s] cannot remove stores", kind);
		goto failed;
	}
	if (tt_backend_owner(b, loc, &owner, &e) < 0)
		goto failed;
	if (!owner || strcmp(owner, repo->config.dataset_id) != 0) {
		report(irreversible, tt_asprintf("%s: the store at %s no longer carries this dataset's owner "
						 "marker; left alone", key, where));
		goto done;
	}
	/* Its own working branch, if add forked one, does not count. */
	if (!(ignoring = fork ? json_pack("[O]", fork) : json_array())) {
		tt_error_oom(&e);
		goto failed;
	}
	if (tt_backend_is_ref_empty(b, loc, ignoring, &empty, &e) < 0)
		goto failed;
	if (empty != 1) {
		report(irreversible, tt_asprintf("%s: the store at %s holds writes; left for `gc "
						 "--delete-stores` to reclaim once nothing references it",
						 key, where));
		goto done;
	}
	if (fork && (!tt_backend_has(b, delete_working_ref) ||
		     tt_backend_delete_working_ref(b, loc, json_string_value(fork), &e) < 0)) {
		if (!e.code)
			tt_error_set(&e, TT_ECAPABILITY, "[%s] cannot delete branches", kind);
		goto failed;
	}
	if (tt_backend_delete_store(b, loc, &e) < 0)
		goto failed;
	/* Best effort: a record left behind is forgotten by the next gc
	 * (`forget-store`: the store has no marker any more). */
	tt_index_forget_store(repo->vcs->shared_dir, TT_CREATED_FILENAME, repo->config.dataset_id, identity, &e);
	tt_error_clear(&e);
	tt_index_forget_store(repo->vcs->shared_dir, TT_TOUCHED_FILENAME, repo->config.dataset_id, identity, &e);
	tt_error_clear(&e);
	report(restored, tt_asprintf("%s: removed the store it created", key));
	goto done;
failed:
	report(irreversible, tt_asprintf("%s: could not remove the store: %s", key, tt_error_text(&e)));
done:
	tt_error_clear(&e);
	json_decref(ignoring);
	tt_buf_release(&wb);
	free(owner);
}
