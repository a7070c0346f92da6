/*
 * engine/cmd/repair.c - `repair`: keep the manifests' promises.  A pin whose
 * native ref is gone is recreated while the store still has the state
 * (`repin`); a working branch this checkout expects but the store lost is
 * forked again from the manifest, only while it is still absent (`refork`).
 * A pin that points elsewhere is reported, never overwritten, and every
 * interrupted operation is described from its journal entry.
 */
#include "engine/cmd/repair.h"

#include <stdlib.h>
#include <string.h>

#include "core/index.h"
#include "backends/dispatch.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/cmd/drop.h"
#include "engine/cmd/fork.h"
#include "engine/kernel/context.h"
#include "engine/kernel/preconditions.h"
#include "engine/kernel/resume.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/select.h"
#include "engine/kernel/state.h"
#include "engine/kernel/planned.h"
#include "util/fault.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

typedef struct walk_ctx {
	const char *reldir;
	tt_manifest_memo memo;
	json_t *labels;          /* "<key>@<commit[:12]>" -> index in memo */
} walk_ctx;

static int collect(void *vctx, const char *commit, json_t *files, tt_error *err)
{
	walk_ctx *w = vctx;
	const char *path;
	json_t *text;
	json_object_foreach(files, path, text) {
		size_t i;
		int rc;
		if (!tt_engine_is_manifest_path(w->reldir, path))
			continue;
		if ((rc = tt_manifest_memo_get(&w->memo, text, NULL, path, &i, NULL, err)) < 0)
			return rc;
		const tt_manifest *m = &w->memo.items[i];
		if (!m->pin_id || !m->state)
			continue;
		char *label = tt_asprintf("%s@%.12s", m->key, commit);
		if (label && !json_object_get(w->labels, label))
			json_object_set_new(w->labels, label, json_integer((json_int_t)i));
		free(label);
	}
	return 0;
}

typedef struct repair_opts {
	const char *const *selectors;
	size_t nsel;
	bool all_history;
} repair_opts;

/* The plan's context and what applying compares first. */
static void repair_context(tt_repo *repo, tt_plan *plan, bool all_history, json_t *keys, const char *digest,
			   tt_error *err)
{
	json_t *ctx = json_pack("{s:b,s:s,s:s}", "all_history", all_history, "workspace_id", repo->ws.workspace_id,
				"history_digest", digest);
	const char *ck;
	json_t *cv;
	json_object_foreach(ctx, ck, cv)
		tt_plan_set_context(plan, ck, cv, err);
	if (keys)
		tt_plan_set_context(plan, "keys", keys, err);
	json_decref(ctx);
	json_t *wsid = json_string(repo->ws.workspace_id), *dg = json_string(digest);
	tt_plan_require(plan, "workspace_id", wsid, NULL, NULL,
			"this repair plan was made in another checkout; re-run the plan here", err);
	tt_plan_require(plan, "history_digest", dg, NULL, NULL,
			"history changed since the repair plan was made; re-run the plan", err);
	json_decref(wsid);
	json_decref(dg);
}

/* One interrupted operation: how far it got, and what finishes it. */
static void interrupted_note(tt_repo *repo, tt_plan *plan, const tt_op_entry *e, tt_error *err)
{
	if (strcmp(e->command, "drop") == 0) {
		/* A drop is finished by its own rerun or by gc, never undone. */
		char *how = tt_engine_interrupted_drop(repo, e);
		char *line = how ? tt_asprintf("operation %s", how) : NULL;
		tt_plan_note(plan, line ? line : "", err);
		free(line);
		free(how);
		return;
	}
	tt_buf note = TT_BUF_INIT, did = TT_BUF_INIT;
	size_t k;
	json_t *p;
	json_array_foreach(e->progress, k, p) {
		const char *what = json_string_value(json_object_get(p, "key"));
		if (!what)
			what = json_string_value(json_object_get(p, "target"));
		tt_buf_printf(&did, "%s%s%s%s", did.len ? ", " : "", json_string_value(json_object_get(p, "action")),
			      what ? " " : "", what ? what : "");
	}
	size_t planned = json_array_size(json_object_get(e->plan, "actions"));
	tt_buf_printf(&note, "operation %s (%s, %s) never finished%s%s", e->id, e->command, e->at,
		      did.len ? "; done before it stopped: " : "; no action had completed", did.ptr);
	if (planned)
		tt_buf_printf(&note, " (of %zu planned)", planned);
	tt_buf_puts(&note, "; re-running the command finishes what is left (creating an absent ref "
			   "from a pinned state is idempotent; a reset needs the head reviewed again), "
			   "pins it created and no commit names are released by `gc`, branches it made "
			   "are judged by `gc --prune-bookmarks`");
	tt_plan_note(plan, note.ptr, err);
	tt_buf_release(&note);
	tt_buf_release(&did);
}

static bool wanted(const json_t *keys, const char *key)
{
	size_t k;
	json_t *kv;
	if (!keys)
		return true;
	json_array_foreach(keys, k, kv)
		if (strcmp(json_string_value(kv), key) == 0)
			return true;
	return false;
}

/* Pins to check: the working tree's, and with --all-history every
 * commit's ({label, i, tree}). */
static json_t *repin_targets(tt_repo *repo, const walk_ctx *w, const json_t *keys)
{
	json_t *targets = json_array(), *iv;
	const char *label;
	for (size_t i = 0; targets && i < repo->objects.n; i++) {
		const tt_manifest *m = &repo->objects.items[i];
		if (m->pin_id && m->state && wanted(keys, m->key))
			json_array_append_new(targets, json_pack("{s:s,s:i,s:b}", "label", m->key, "i", (json_int_t)i,
								 "tree", 1));
	}
	json_object_foreach(w->labels, label, iv) {
		const tt_manifest *m = &w->memo.items[json_integer_value(iv)];
		if (targets && wanted(keys, m->key))
			json_array_append_new(targets, json_pack("{s:s,s:O,s:b}", "label", label, "i", iv, "tree", 0));
	}
	return targets;
}

/* One pin: recreated where missing, left (with a note) where drifted or
 * when it cannot be checked. */
static void plan_repin(tt_repo *repo, tt_plan *plan, const char *label, const tt_manifest *m, tt_error *err)
{
	tt_backend *b;
	tt_pin pin = { 0 };
	tt_verify_status st = TT_VERIFY_UNKNOWN;
	char *msg = NULL, note[600];
	tt_error verr = TT_ERROR_INIT;
	snprintf(pin.id, sizeof pin.id, "%s", m->pin_id);
	snprintf(pin.ref, sizeof pin.ref, "%s", m->pin_ref);
	if (tt_engine_backend(repo, m->kind, &b, &verr) < 0 || !tt_backend_has(b, verify) ||
	    tt_backend_verify(b, m->locator, m->state, &pin, false, &st, &msg, &verr) < 0) {
		snprintf(note, sizeof note, "%s: could not check its pin (%s)", label,
			 verr.code ? tt_error_text(&verr) : "cannot verify");
		tt_plan_note(plan, note, err);
	} else if (st == TT_VERIFY_MISSING) {
		tt_buf d = TT_BUF_INIT, s = TT_BUF_INIT;
		tt_short_state(&s, m->state);
		tt_buf_printf(&d, "pin missing (%s); recreate at %s", msg ? msg : "", s.ptr);
		json_t *params = json_pack("{s:O,s:O,s:s}", "locator", m->locator, "state", m->state, "pin_id", m->pin_id);
		tt_plan_action(plan, "repin", label, m->kind, m->pin_ref, d.ptr, params, err);
		json_decref(params);
		tt_buf_release(&d);
		tt_buf_release(&s);
	} else if (st == TT_VERIFY_DRIFTED) {
		snprintf(note, sizeof note, "%s: pin drifted, not touched (%s)", label, msg ? msg : "");
		tt_plan_note(plan, note, err);
	}
	free(msg);
	tt_error_clear(&verr);
}

/* Working branches this checkout expects that the store lost: recreated
 * from the manifest, only while still absent. */
static void plan_reforks(tt_repo *repo, tt_plan *plan, const json_t *keys, tt_error *err)
{
	const char *key;
	json_t *ref, *kv;
	size_t k;
	json_object_foreach(repo->ws.working_refs, key, ref) {
		const tt_manifest *m = tt_manifests_find(&repo->objects, key);
		if (!m || tt_engine_on_trunk(repo) || !m->state || !(tt_engine_caps(repo, m) & TT_CAP_FORK))
			continue;
		tt_backend *b;
		json_t *refs = NULL;
		tt_error lerr = TT_ERROR_INIT;
		if (!wanted(keys, key) || tt_engine_backend(repo, m->kind, &b, &lerr) < 0 ||
		    !tt_backend_has(b, list_working_refs) || tt_backend_list_working_refs(b, m->locator, &refs, &lerr) < 0) {
			tt_error_clear(&lerr);
			continue;
		}
		bool present = false;
		json_array_foreach(refs, k, kv)
			present |= strcmp(json_string_value(kv), json_string_value(ref)) == 0;
		json_decref(refs);
		if (present)
			continue;
		tt_buf d = TT_BUF_INIT;
		if (m->pin_id) {
			tt_buf_printf(&d, "working branch missing; recreate from the manifest (pin %s)", m->pin_ref);
		} else {
			tt_buf s = TT_BUF_INIT;
			tt_short_state(&s, m->state);
			tt_buf_printf(&d, "working branch missing; recreate from the manifest (%s)", s.ptr);
			tt_buf_release(&s);
		}
		json_t *params = json_pack("{s:O}", "locator", m->locator);
		tt_plan_action(plan, "refork", key, m->kind, json_string_value(ref), d.ptr, params, err);
		json_decref(params);
		char det[512];
		snprintf(det, sizeof det, "%s exists again since the plan was made; re-run the plan", json_string_value(ref));
		json_t *pp = json_pack("{s:s,s:O,s:O}", "backend", m->kind, "locator", m->locator, "ref", ref);
		tt_plan_require(plan, "ref_absent", NULL, key, pp, det, err);
		json_decref(pp);
		tt_buf_release(&d);
	}
}

/*
 * Plan `repair`: notes on interrupted operations, then every pin in
 * reach checked (recreated where missing), then working branches the
 * store lost recreated.
 */
static int plan_repair(tt_repo *repo, void *vctx, bool applying, tt_plan **out, tt_error *err)
{
	const repair_opts *o = vctx;
	walk_ctx w = { 0 };
	tt_plan *plan = NULL;
	tt_oplog log = TT_OPLOG_INIT;
	json_t *keys = NULL, *seen = json_object(), *targets = NULL, *t;
	char digest[17], *reldir = NULL;
	size_t ti;
	int rc;
	(void)applying;
	if ((rc = tt_vcs_history_digest(repo->vcs, digest, err)) < 0)
		goto done;
	if (o->nsel && (rc = tt_engine_select(repo, o->selectors, o->nsel, &keys, err)) < 0)
		goto done;
	w.labels = json_object();
	if (o->all_history) {
		if (!(reldir = tt_engine_objects_reldir(repo))) {
			rc = tt_error_oom(err);
			goto done;
		}
		w.reldir = reldir;
		if ((rc = tt_vcs_iter_history_files(repo->vcs, reldir, collect, &w, err)) < 0)
			goto done;
	}
	if (!(plan = tt_plan_new("repair"))) {
		rc = tt_error_oom(err);
		goto done;
	}
	repair_context(repo, plan, o->all_history, keys, digest, err);
	/* How far each interrupted operation got. */
	if (tt_oplog_read(repo->root, &log, err) == 0)
		for (size_t i = 0; i < log.count; i++)
			if (tt_op_incomplete(&log.entries[i]))
				interrupted_note(repo, plan, &log.entries[i], err);
	tt_error_clear(err);
	targets = repin_targets(repo, &w, keys);
	tt_engine_prepare(repo);
	json_array_foreach(targets, ti, t) {
		const tt_manifest *m = json_is_true(json_object_get(t, "tree"))
					       ? &repo->objects.items[json_integer_value(json_object_get(t, "i"))]
					       : &w.memo.items[json_integer_value(json_object_get(t, "i"))];
		char sig[160];
		snprintf(sig, sizeof sig, "%s:%s", m->kind, m->pin_id);
		if (json_object_get(seen, sig))
			continue;
		json_object_set(seen, sig, json_true());
		plan_repin(repo, plan, json_string_value(json_object_get(t, "label")), m, err);
	}
	plan_reforks(repo, plan, keys, err);
	if (!tt_plan_write_count(plan))
		tt_plan_note(plan, "nothing to repair", err);
	rc = err->code < 0 ? err->code : 0;
done:
	tt_oplog_free(&log);
	tt_manifest_memo_release(&w.memo);
	json_decref(w.labels);
	json_decref(targets);
	free(reldir);
	json_decref(keys);
	json_decref(seen);
	if (rc < 0)
		tt_plan_free(plan);
	else
		*out = plan;
	return rc;
}

static int load_repair(tt_repo *repo, void *ctx, tt_plan *plan, tt_error *err)
{
	(void)ctx;
	return tt_engine_check_preconditions(repo, plan, "repair", err);
}

/* The journal's entry, with the workspace undo puts back as its `pre`.
 * An entry that cannot say it is not begun, and nothing is repaired. */
static int journal_repair(tt_repo *repo, const tt_plan *plan, char *op_id, tt_error *err)
{
	tt_buf wb = TT_BUF_INIT;
	int rc;
	if ((rc = tt_workspace_render(&wb, &repo->ws, err)) < 0) {
		tt_error_prefix(err, "repair: the journal's entry cannot hold this checkout's workspace; nothing "
				"was repaired");
		tt_buf_release(&wb);
		return rc;
	}
	json_t *pj = tt_plan_to_object(plan, err);
	json_t *pre = json_pack("{s:s}", "workspace", wb.ptr ? wb.ptr : "");
	tt_buf_release(&wb);
	if (!pj)
		rc = err->code ? err->code : tt_error_oom(err);
	else
		rc = pre ? tt_oplog_begin(repo->root, "repair", pj, pre, NULL, op_id, err) : tt_error_oom(err);
	json_decref(pj);
	json_decref(pre);
	return rc;
}

/* What a repair run carries from action to action. */
typedef struct repair_run {
	tt_repo *repo;
	char op_id[TT_OP_ID_LEN + 1]; /* "": nothing journaled */
	json_t *repinned, *reforked, *failed;
	bool ws_changed;
	tt_error jerr;	     /* a progress record the journal refused: the run stops */
	const char *stopped; /* borrowed: the key whose record was refused */
} repair_run;

/* A finished action's progress record.  A record the journal refuses
 * leaves the action done (reported, and in the workspace) and stops the
 * run after it. */
static void repair_progress(repair_run *r, const char *key, const char *step, json_t *d)
{
	if (!r->op_id[0] || r->jerr.code) {
		json_decref(d);
		return;
	}
	if (!d || tt_oplog_progress(r->repo->root, r->op_id, step, d, &r->jerr) < 0) {
		if (!d)
			tt_error_oom(&r->jerr);
		r->stopped = key;
	}
	json_decref(d);
}

static void repair_repin(repair_run *r, const tt_plan_action_view *a, tt_error *aerr)
{
	tt_repo *repo = r->repo;
	tt_backend *b;
	tt_pin pin;
	const char *pid = json_string_value(json_object_get(a->params, "pin_id"));
	json_t *loc = json_object_get(a->params, "locator");
	if (tt_engine_backend(repo, a->kind, &b, aerr) == 0 && tt_backend_has(b, pin) &&
	    tt_backend_pin(b, loc, json_object_get(a->params, "state"), pid, &pin, aerr) == 0) {
		if (pin.created)
			tt_index_note_pinned(repo->vcs->shared_dir, repo->config.dataset_id, pin.id, a->kind, a->key,
					     aerr);
		tt_error_clear(aerr);
		json_object_set_new(r->repinned, a->key, json_string(pid));
		repair_progress(r, a->key, "repin",
				json_pack("{s:s,s:s,s:b}", "key", a->key, "target", a->target, "created", pin.created));
		tt_fault("repair:after-repin");
	}
}

static void repair_refork(repair_run *r, const tt_plan_action_view *a, tt_error *aerr)
{
	tt_repo *repo = r->repo;
	const tt_manifest *m = tt_manifests_find(&repo->objects, a->key);
	tt_expect absent = { TT_EXPECT_ABSENT, NULL };
	char *made = NULL;
	if (m && tt_engine_fork_from_manifest(repo, m, a->target, &absent, &made, aerr) == 0) {
		json_object_set_new(repo->ws.working_refs, a->key, json_string(made));
		json_object_set(repo->ws.fork_points, a->key, m->state);
		json_object_set(repo->ws.base_states, a->key, m->state);
		json_object_set_new(r->reforked, a->key, json_string(made));
		r->ws_changed = true;
		repair_progress(r, a->key, "refork", json_pack("{s:s,s:s}", "key", a->key, "ref", made));
		tt_fault("repair:after-refork");
	}
	free(made);
}

/* Each action in turn, until one the journal could not record. */
static void repair_actions(repair_run *r, const tt_plan *plan)
{
	for (size_t i = 0; i < tt_plan_action_count(plan) && !r->jerr.code; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		tt_error aerr = TT_ERROR_INIT;
		if (strcmp(a.op, "repin") == 0)
			repair_repin(r, &a, &aerr);
		else if (strcmp(a.op, "refork") == 0)
			repair_refork(r, &a, &aerr);
		if (aerr.code) {
			char *t2 = tt_asprintf("%s %s", a.op, a.target);
			json_object_set_new(r->failed, t2 ? t2 : a.op, json_string(tt_error_text(&aerr)));
			free(t2);
		}
		tt_error_clear(&aerr);
	}
}

/* The journal refused a record: what was done is in the workspace (saved
 * before), the entry stays started as an interrupted repair's, and the
 * error names the key and the fix. */
static int repair_stopped(repair_run *r, tt_error *err)
{
	return tt_error_set(err, r->jerr.code, "repair %s: %s; %s repaired and recorded in the workspace, once "
			    ".tether/ops.jsonl takes writes again, run `tether repair` for the rest",
			    r->stopped ? r->stopped : "", tt_error_text(&r->jerr), r->stopped ? r->stopped : "it");
}

static int apply_repair(tt_repo *repo, void *ctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err)
{
	repair_run r = { .repo = repo, .repinned = json_object(), .reforked = json_object(),
			 .failed = json_object(), .jerr = TT_ERROR_INIT };
	json_t *notes = NULL, *moot = NULL;
	char *op_id = r.op_id;
	int rc;
	(void)ctx, (void)saved;
	/* Interrupted commits and pulls with no uncommitted manifests left of
	 * them: their work is in history or moot, closed once this repair is. */
	if ((rc = tt_engine_scan_interrupted(repo, TT_CLOSE_REPAIR, &moot, err)) < 0)
		goto done;
	if (tt_plan_write_count(plan)) {
		if ((rc = journal_repair(repo, plan, op_id, err)) < 0)
			goto done;
		tt_fault("repair:after-journal");
	}
	repair_actions(&r, plan);
	if (r.ws_changed && (rc = tt_workspace_save(&repo->ws, repo->root, err)) < 0)
		goto done;
	if (r.jerr.code) {
		rc = repair_stopped(&r, err);
		goto done;
	}
	notes = json_array();
	for (size_t i = 0; i < tt_plan_note_count(plan); i++)
		json_array_append_new(notes, json_string(tt_plan_note_at(plan, i)));
	if (op_id[0]) {
		/* The journal keeps the report alone; the plan's notes are in its plan. */
		json_t *report = json_pack("{s:O,s:O,s:O}", "repinned", r.repinned, "reforked", r.reforked,
					   "failed", r.failed);
		tt_error ignored = TT_ERROR_INIT;
		tt_oplog_done(repo->root, op_id, report, NULL, NULL, &ignored);
		tt_error_clear(&ignored);
		json_decref(report);
	}
	*out = json_pack("{s:O,s:O,s:O,s:O}", "repinned", r.repinned, "reforked", r.reforked, "failed", r.failed,
			 "notes", notes);
	{
		char why[32];
		snprintf(why, sizeof why, "repair%s%s", op_id[0] ? " " : "", op_id);
		tt_error ignored = TT_ERROR_INIT;
		/* Best effort, like the done mark: a later repair closes them. */
		tt_engine_close_interrupted(repo, moot, op_id[0] ? op_id : NULL, why, &ignored);
		tt_error_clear(&ignored);
		/* An interrupted repair of the same scope is redone by this one. */
		static const char *const scope[] = { "all_history", "keys", NULL };
		if (!json_object_size(r.failed))
			tt_engine_close_reruns(repo, "repair", tt_plan_context(plan), scope, op_id[0] ? op_id : NULL,
					       why, &ignored);
		tt_error_clear(&ignored);
	}
done:
	json_decref(r.repinned);
	json_decref(r.reforked);
	json_decref(r.failed);
	tt_error_clear(&r.jerr);
	json_decref(notes);
	json_decref(moot);
	return rc;
}

static const tt_planned_cmd repair_cmd = {
	.command = "repair",
	.locks = TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY,
	.plan = plan_repair,
	.load = load_repair,
	.apply = apply_repair,
};

int tt_engine_repo_repair(tt_repo *repo, const char *const *selectors, size_t nsel, bool all_history,
		   bool dry_run, const char *from_plan, size_t from_len, char **plan_json, char **plan_text,
		   json_t **out, tt_error *err)
{
	repair_opts o = { selectors, nsel, all_history };
	tt_planned_run run = { .dry = dry_run, .from = from_plan, .from_len = from_len, .plan_json = plan_json,
			       .plan_text = plan_text, .out = out };
	return tt_engine_run_planned(repo, &repair_cmd, &o, &run, err);
}
