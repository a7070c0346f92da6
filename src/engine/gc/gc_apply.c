/*
 * engine/gc/gc_apply.c - gc: applying a gc plan: re-checked heads, unpins,
 * branch deletions, the report.
 */
#include "engine/gc/gc_apply.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/index.h"
#include "core/layout.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/kernel/context.h"
#include "engine/kernel/preconditions.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/state.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/fault.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/gc/gc_stores.h"
#include "engine/gc/state.h"

/* --- apply --------------------------------------------------------------------------- */

static json_t *new_report(bool dry_run)
{
	return json_pack("{s:{},s:{},s:{},s:{},s:{},s:[],s:{},s:{},s:[],s:b}", "unpinned", "kept_pins",
			 "deleted_working_refs", "kept_working_refs", "forgotten_working_refs",
			 "deleted_listings", "deleted_stores", "kept_stores", "forgotten_stores", "dry_run",
			 dry_run);
}

/* Where a failed action joins the failures: verb, target, (key), #n. */
static int fail_action(json_t *failed, const tt_plan_action_view *a, tt_error *e)
{
	tt_buf base = TT_BUF_INIT, key = TT_BUF_INIT;
	tt_buf_printf(&base, "%s %s", a->op, a->target);
	if (a->key && *a->key)
		tt_buf_printf(&base, " (%s)", a->key);
	tt_buf_puts(&key, base.ptr);
	for (int n = 2; json_object_get(failed, key.ptr); n++) {
		tt_buf_reset(&key);
		tt_buf_printf(&key, "%s #%d", base.ptr, n);
	}
	int rc = key.failed ? -1 : json_object_set_new(failed, key.ptr, json_string(tt_error_text(e)));
	tt_buf_release(&base);
	tt_buf_release(&key);
	tt_error_clear(e);
	return rc;
}

/* A branch gc deletes must still hold the head the plan saw. */
static int require_head(tt_repo *repo, const tt_plan_action_view *a, tt_error *err)
{
	tt_backend *b;
	json_t *loc = json_object_get(a->params, "locator"), *expected = json_object_get(a->params, "head");
	json_t *now = NULL;
	int rc;
	if ((rc = tt_engine_backend(repo, a->kind, &b, err)) < 0)
		return rc;
	if (!json_is_object(loc))
		return tt_error_set(err, TT_ESTALEPLAN, "gc %s: the plan names no locator; re-run the plan", a->key);
	if ((!expected || json_is_null(expected)) && (b->kind->caps & TT_CAP_BRANCH_IS_STORAGE))
		return 0; /* the plan read no head on purpose: the branch is the storage (forced) */
	if (!expected || json_is_null(expected)) {
		/* The plan could not read the head: if it reads now, review it. */
		tt_error none = TT_ERROR_INIT;
		if (tt_backend_fingerprint(b, loc, a->target, &now, &none) < 0) {
			tt_error_clear(&none);
			return 0;
		}
		tt_buf st = TT_BUF_INIT;
		tt_short_state(&st, now);
		rc = tt_error_set(err, TT_ESTALEPLAN, "gc %s: the plan could not read %s's head, but it reads "
				  "now (%s); re-run the plan to review it", a->key, a->target, st.ptr);
		tt_buf_release(&st);
		json_decref(now);
		return rc;
	}
	if ((rc = tt_backend_fingerprint(b, loc, a->target, &now, err)) < 0)
		return rc;
	if (!json_is_object(expected) || !tt_states_equal(b->kind, now, expected)) {
		tt_buf x = TT_BUF_INIT, y = TT_BUF_INIT;
		tt_short_state(&x, expected);
		tt_short_state(&y, now);
		rc = tt_error_set(err, TT_ESTALEPLAN, "gc %s: %s moved since the plan was made (%s -> %s); "
				  "re-run the plan", a->key, a->target, x.ptr, y.ptr);
		tt_buf_release(&x);
		tt_buf_release(&y);
	}
	json_decref(now);
	return rc;
}

static int do_unpin(tt_repo *repo, const tt_plan_action_view *a, const char *pid, tt_error *err)
{
	tt_backend *b;
	json_t *loc = json_object_get(a->params, "locator"), *refs = json_object_get(a->params, "refs");
	int rc;
	if ((rc = tt_engine_backend(repo, a->kind, &b, err)) < 0)
		return rc;
	if (!tt_backend_has(b, unpin) || !json_is_object(loc))
		return tt_error_set(err, TT_ECAPABILITY, "[%s] cannot unpin %s", a->kind, a->target);
	tt_pin pin = { 0 };
	if (strlen(pid) >= sizeof pin.id || strlen(a->target) >= sizeof pin.ref)
		return tt_error_set(err, TT_ELIMIT, "pin %s is too long", pid);
	memcpy(pin.id, pid, strlen(pid) + 1);
	memcpy(pin.ref, a->target, strlen(a->target) + 1);
	if ((rc = tt_backend_unpin(b, loc, &pin, err)) < 0)
		return rc;
	/* Every generation of this id the plan listed. */
	size_t i;
	json_t *r;
	json_array_foreach(refs, i, r) {
		const char *ref = json_string_value(r);
		char of[TT_PIN_ID_MAX];
		if (!ref || strcmp(ref, a->target) == 0 || strlen(ref) >= sizeof pin.ref ||
		    !tt_pin_id_of_ref(ref, of) || strcmp(of, pid) != 0)
			continue;
		memcpy(pin.ref, ref, strlen(ref) + 1);
		if ((rc = tt_backend_unpin(b, loc, &pin, err)) < 0)
			return rc;
	}
	return 0;
}

/* What applying a gc carries from action to action. */
typedef struct gc_run {
	tt_repo *repo;
	json_t *report;   /* what was done */
	json_t *failed;   /* what failed, and why */
	json_t *shared;   /* keep-pins for another clone: the CLI's, not journaled */
	char op_id[TT_OP_ID_LEN + 1];
	bool journaled, forgot;
	tt_error jerr;	/* a progress record the journal refused: the run stops */
	char *stopped;	/* "unpin tether.X": the action whose record was refused */
} gc_run;

/* Preflight every branch the plan deletes before the first action: a
 * stale head found half-way would leave the plan half-applied. */
static int preflight_heads(tt_repo *repo, const tt_plan *plan, tt_error *err)
{
	size_t na = tt_plan_action_count(plan);
	int rc;
	for (size_t i = 0; i < na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		if (strcmp(a.op, "delete-branch") == 0 && (rc = require_head(repo, &a, err)) < 0)
			return rc;
	}
	return 0;
}

/* The journal's begin record (the plan and the workspace it starts
 * from), under parent when the gc is part of another command;
 * r->journaled once it is written. */
static int begin_gc(gc_run *r, const tt_plan *plan, const char *parent, tt_error *err)
{
	tt_buf ws = TT_BUF_INIT;
	json_t *pre, *plan_obj = NULL;
	int rc;
	if ((rc = tt_workspace_render(&ws, &r->repo->ws, err)) < 0) {
		tt_buf_release(&ws);
		return rc;
	}
	pre = json_pack("{s:s%}", "workspace", ws.ptr, ws.len);
	tt_buf_release(&ws);
	if (!pre || !(plan_obj = tt_plan_to_object(plan, err))) {
		rc = pre ? err->code : tt_error_oom(err);
		json_decref(pre);
		return rc;  /* not journaled: the gc stops there */
	}
	rc = tt_oplog_begin(r->repo->root, "gc", plan_obj, pre, parent, r->op_id, err);
	json_decref(pre);
	json_decref(plan_obj);
	if (rc < 0)
		return rc;
	r->journaled = true;
	tt_fault("gc:after-journal");
	return rc;
}

/* Best effort: take pin pid off the pinned index.  A miss can only make a
 * later gc release a pin another clone re-creates under the same id. */
static void forget_pinned(tt_repo *repo, const char *pid)
{
	json_t *ids = json_pack("[s]", pid);
	tt_error ignored = TT_ERROR_INIT;
	tt_index_forget_pinned(repo->vcs->shared_dir, repo->config.dataset_id, ids, &ignored);
	if (ignored.code)
		tt_engine_warn(repo, tt_asprintf("could not take pin %s off the pinned index: %s; if "
						 "another clone creates it again, a later `gc` "
						 "here may release it", pid, tt_error_text(&ignored)));
	tt_error_clear(&ignored);
	json_decref(ids);
}

/* A finished action's progress record.  A record the journal refuses
 * leaves the action done (reported, its bookkeeping done by the caller)
 * and stops the run after it. */
static void gc_progress(gc_run *r, const tt_plan_action_view *a, const char *step, json_t *d)
{
	if (r->journaled && !r->jerr.code &&
	    (!d || tt_oplog_progress(r->repo->root, r->op_id, step, d, &r->jerr) < 0)) {
		if (!d)
			tt_error_oom(&r->jerr);
		r->stopped = tt_asprintf("%s %s", a->op, a->target);
	}
	json_decref(d);
}

/* An unpin action: the pin and its generations go from the store, then
 * from the pinned index. */
static void gc_unpin(gc_run *r, const tt_plan_action_view *a, tt_error *e)
{
	tt_buf pid = TT_BUF_INIT;
	tt_pyv_str(&pid, json_object_get(a->params, "pin_id"));
	if (do_unpin(r->repo, a, pid.ptr, e) == 0) {
		tt_gc_map_append(json_object_get(r->report, "unpinned"), a->kind, json_string(pid.ptr));
		gc_progress(r, a, "unpin", json_pack("{s:s}", "target", a->target));
		tt_fault("gc:after-unpin");
		forget_pinned(r->repo, pid.ptr);
	}
	tt_buf_release(&pid);
}

/* A delete-branch action.  Checked in the preflight; again now.  A move
 * found here is a race, not a stale plan: keep this branch, finish the
 * rest. */
static void gc_delete_branch(gc_run *r, const tt_plan_action_view *a, tt_error *e)
{
	tt_backend *b;
	json_t *loc = json_object_get(a->params, "locator");
	if (require_head(r->repo, a, e) < 0) {
		if (e->code == TT_ESTALEPLAN)
			tt_gc_map_append(json_object_get(r->report, "kept_working_refs"), a->key, json_string(a->target));
	} else if (tt_engine_backend(r->repo, a->kind, &b, e) == 0) {
		if (!tt_backend_has(b, delete_working_ref))
			tt_error_set(e, TT_ECAPABILITY, "[%s] cannot delete branches", a->kind);
		else if (tt_backend_delete_working_ref(b, loc, a->target, e) == 0) {
			tt_gc_map_append(json_object_get(r->report, "deleted_working_refs"), a->key, json_string(a->target));
			gc_progress(r, a, "delete-branch", json_pack("{s:s,s:s}", "key", a->key, "target", a->target));
		}
	}
}

/* A keep-pin action: reported, and among the shared ones when another
 * clone keeps it. */
static void gc_keep_pin(gc_run *r, const tt_plan_action_view *a)
{
	tt_buf pid = TT_BUF_INIT;
	tt_pyv_str(&pid, json_object_get(a->params, "pin_id"));
	tt_gc_map_append(json_object_get(r->report, "kept_pins"), a->kind, json_string(pid.ptr));
	if (json_is_string(json_object_get(a->params, "kept")))
		tt_gc_map_append(r->shared, a->kind, json_string(pid.ptr));
	tt_buf_release(&pid);
}

/* A delete-listing action.  A listing name, never a path: a plan is not
 * authenticated. */
static void gc_delete_listing(gc_run *r, const tt_plan_action_view *a, tt_error *e)
{
	if (!*a->target || strchr(a->target, '/') || a->target[0] == '.') {
		tt_error_set(e, TT_ECONFIG, "not a listing name: %s", a->target);
		return;
	}
	char *rel = tt_asprintf(TT_LISTINGS_DIR "/%s", a->target);
	char *path = rel ? tt_tether_path(r->repo->root, rel) : NULL;
	if (!path)
		tt_error_oom(e);
	else if (!tt_exists(path) || tt_unlink(path, e) == 0)
		json_array_append_new(json_object_get(r->report, "deleted_listings"), json_string(a->target));
	free(rel);
	free(path);
}

/* One action of the plan; e: why it failed. */
static void gc_action(gc_run *r, const tt_plan_action_view *a, tt_error *e)
{
	if (strcmp(a->op, "unpin") == 0) {
		gc_unpin(r, a, e);
	} else if (strcmp(a->op, "forget-working-ref") == 0) {
		json_object_del(r->repo->ws.working_refs, a->key);
		r->forgot = true;
		tt_gc_map_append(json_object_get(r->report, "forgotten_working_refs"), a->key, json_string(a->target));
	} else if (strcmp(a->op, "delete-branch") == 0) {
		gc_delete_branch(r, a, e);
	} else if (strcmp(a->op, "keep-branch") == 0) {
		tt_gc_map_append(json_object_get(r->report, "kept_working_refs"), a->key, json_string(a->target));
	} else if (strcmp(a->op, "keep-pin") == 0) {
		gc_keep_pin(r, a);
	} else if (tt_gc_store_op(a->op)) {
		tt_gc_apply_store(r->repo, a, r->report, r->journaled ? r->op_id : NULL, e);
	} else if (strcmp(a->op, "delete-listing") == 0) {
		gc_delete_listing(r, a, e);
	}
}

/* The workspace without the working refs forgotten; a failure is the
 * report's. */
static void save_forgotten(gc_run *r)
{
	tt_error e = TT_ERROR_INIT;
	if (tt_workspace_save(&r->repo->ws, r->repo->root, &e) < 0) {
		tt_plan_action_view a = { .op = "forget-working-ref", .target = "workspace.toml", .key = "" };
		fail_action(r->failed, &a, &e);
	}
}

/* The journal's done record: the report with what failed (a failure to
 * write it is the report's too). */
static int end_gc(gc_run *r, tt_error *err)
{
	json_t *result = json_deep_copy(r->report);
	tt_error e = TT_ERROR_INIT;
	if (!result || json_object_set(result, "failed", r->failed) < 0) {
		json_decref(result);
		return tt_error_oom(err);
	}
	if (tt_oplog_done(r->repo->root, r->op_id, result, NULL, NULL, &e) < 0)
		fail_action(r->failed, &(tt_plan_action_view){ .op = "journal", .target = r->op_id, .key = "" }, &e);
	json_decref(result);
	return 0;
}

/* The journal refused a progress record: what was done stays done (its
 * store, pinned index and workspace written), the entry stays started, as
 * an interrupted gc's, and the error names the action and the fix. */
static int gc_stopped(gc_run *r, tt_error *err)
{
	return tt_error_set(err, r->jerr.code, "gc: %s: %s; it was done (and any actions before it), once "
			    ".tether/ops.jsonl takes writes again, run `tether gc` for the rest",
			    r->stopped ? r->stopped : "an action", tt_error_text(&r->jerr));
}

/* apply_gc: locks held by the caller. */
int tt_gc_apply_gc(tt_repo *repo, const tt_plan *plan, const char *parent, json_t **out, tt_error *err)
{
	gc_run r = { .repo = repo };
	size_t na = tt_plan_action_count(plan);
	int rc;
	*out = NULL;
	if ((rc = tt_engine_check_preconditions(repo, plan, "gc", err)) < 0)
		return rc;
	if (!(r.shared = json_object()) || !(r.report = new_report(false)) || !(r.failed = json_object())) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = preflight_heads(repo, plan, err)) < 0 ||
	    (tt_plan_write_count(plan) && ((rc = begin_gc(&r, plan, parent, err)) < 0 || !r.journaled)))
		goto done;
	for (size_t i = 0; i < na && !r.jerr.code; i++) {
		tt_plan_action_view a;
		tt_error e = TT_ERROR_INIT;
		tt_plan_action_at(plan, i, &a);
		gc_action(&r, &a, &e);
		if (e.code && fail_action(r.failed, &a, &e) < 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	if (r.forgot)
		save_forgotten(&r);
	if (r.jerr.code) {
		rc = gc_stopped(&r, err);
		goto done;
	}
	if (r.journaled && (rc = end_gc(&r, err)) < 0)
		goto done;
	json_object_set(r.report, "failed", r.failed);
	json_object_set(r.report, "kept_pins_shared", r.shared);
	*out = r.report;
	r.report = NULL;
done:
	json_decref(r.report);
	json_decref(r.shared);
	json_decref(r.failed);
	tt_error_clear(&r.jerr);
	free(r.stopped);
	return rc;
}

/* Python's gc(dry_run=True): the report the plan would make. */
json_t *tt_gc_dry_report(const tt_plan *plan)
{
	json_t *r = new_report(true);
	for (size_t i = 0; r && i < tt_plan_action_count(plan); i++) {
		tt_plan_action_view a;
		tt_buf pid = TT_BUF_INIT;
		tt_plan_action_at(plan, i, &a);
		tt_pyv_str(&pid, json_object_get(a.params, "pin_id"));
		if (!strcmp(a.op, "unpin"))
			tt_gc_map_append(json_object_get(r, "unpinned"), a.kind, json_string(pid.ptr));
		else if (!strcmp(a.op, "keep-pin")) {
			tt_gc_map_append(json_object_get(r, "kept_pins"), a.kind, json_string(pid.ptr));
			if (json_is_string(json_object_get(a.params, "kept"))) {
				if (!json_object_get(r, "kept_pins_shared"))
					json_object_set_new(r, "kept_pins_shared", json_object());
				tt_gc_map_append(json_object_get(r, "kept_pins_shared"), a.kind, json_string(pid.ptr));
			}
		}
		else if (!strcmp(a.op, "forget-working-ref"))
			tt_gc_map_append(json_object_get(r, "forgotten_working_refs"), a.key, json_string(a.target));
		else if (!strcmp(a.op, "delete-branch"))
			tt_gc_map_append(json_object_get(r, "deleted_working_refs"), a.key, json_string(a.target));
		else if (!strcmp(a.op, "keep-branch"))
			tt_gc_map_append(json_object_get(r, "kept_working_refs"), a.key, json_string(a.target));
		else if (!strcmp(a.op, "delete-listing"))
			json_array_append_new(json_object_get(r, "deleted_listings"), json_string(a.target));
		else if (tt_gc_store_op(a.op))
			tt_gc_preview_store(&a, r);
		tt_buf_release(&pid);
	}
	if (r)
		json_object_set_new(r, "failed", json_object());
	return r;
}
