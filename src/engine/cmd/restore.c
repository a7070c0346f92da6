/*
 * engine/cmd/restore.c - `restore KEY... --from REV`: the per-object
 * `jj restore --from`.  Each named object's working branch is reset onto
 * (or created from) what REV's manifest pinned; nothing else moves (other
 * branches, the manifests, the VCS working copy).  The next commit pins it;
 * promote sees the fork point move to REV's state.  A branch holding writes
 * nobody committed is refused without --discard.
 */
#include "engine/cmd/restore.h"

#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/oplog.h"
#include "util/fault.h"
#include "core/plan.h"
#include "core/index.h"
#include "core/pyvalue.h"
#include "engine/cmd/fork.h"
#include "engine/kernel/context.h"
#include "engine/kernel/preconditions.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/select.h"
#include "engine/kernel/state.h"
#include "engine/kernel/planned.h"
#include "util/mem.h"

/* Fork branch `name` for key from a native state (what `--at` resolved),
 * moving it only from expected. */
static int fork_from_state(tt_repo *repo, const tt_manifest *m, const json_t *state, const char *name,
			   const tt_expect *expected, char **ref_out, tt_error *err)
{
	tt_backend *b;
	int rc;
	*ref_out = NULL;
	if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0)
		return tt_error_object(err, m->key, m->kind);
	if (!tt_backend_has(b, fork)) {
		tt_error_set(err, TT_ECAPABILITY, "%s backend cannot fork", m->kind);
		return tt_error_object(err, m->key, m->kind);
	}
	tt_target src = { .kind = TT_TARGET_STATE, .state = state };
	if ((rc = tt_backend_fork(b, m->locator, &src, name, expected, ref_out, err)) < 0)
		return tt_error_object(err, m->key, m->kind);
	json_t *identity = NULL;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_backend_identity(b, m->locator, &identity, &ignored) == 0)
		tt_index_note_touched(repo->vcs->shared_dir, repo->config.dataset_id, m->kind, identity,
				      m->locator, m->key, &ignored);
	json_decref(identity);
	tt_error_clear(&ignored);
	return 0;
}

/* What `at` resolves to in m's store (its upstream locator, at `at`). */
static int resolve_at(tt_repo *repo, const tt_manifest *m, const char *at, json_t **state, tt_error *err)
{
	tt_backend *b;
	json_t *loc;
	int rc;
	*state = NULL;
	if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0)
		return rc;
	if (!(loc = json_deep_copy(m->locator)) || json_object_set_new(loc, "at", json_string(at)) != 0) {
		json_decref(loc);
		return tt_error_oom(err);
	}
	rc = tt_backend_fingerprint(b, loc, NULL, state, err);
	json_decref(loc);
	return rc;
}

static bool blank(const char *s)
{
	for (; s && *s; s++)
		if (*s != ' ' && *s != '\t' && *s != '\n' && *s != '\r' && *s != '\f' && *s != '\v')
			return false;
	return true;
}

/* A --from or --at given with --from-plan must be the plan's own. */
static int plan_source_matches(const tt_plan *plan, const char *rev, const char *at, tt_error *err)
{
	const char *flags[2] = { "--from", "--at" }, *given[2] = { rev, at };
	const char *fields[2] = { "from_rev", "at" };
	for (int i = 0; i < 2; i++) {
		if (!given[i])
			continue;
		json_t *p = json_object_get(tt_plan_context(plan), fields[i]);
		tt_buf planned = TT_BUF_INIT;
		bool made = p && !json_is_null(p);
		if (made)
			tt_pyv_str(&planned, p);
		bool same = made && planned.ptr && strcmp(planned.ptr, given[i]) == 0;
		if (!same) {
			if (made)
				tt_error_set(err, TT_ECONFIG, "this restore plan was made with %s %s, not %s %s; apply "
					     "it without %s, or re-run the plan", flags[i], planned.ptr, flags[i],
					     given[i], flags[i]);
			else
				tt_error_set(err, TT_ECONFIG, "this restore plan was made with no %s, not %s %s; apply "
					     "it without %s, or re-run the plan", flags[i], flags[i], given[i], flags[i]);
		}
		tt_buf_release(&planned);
		if (!same)
			return err->code;
	}
	return 0;
}

typedef struct restore_opts {
	const char *const *selectors;
	size_t nsel;
	const char *rev, *at;
	bool discard;
} restore_opts;

/* The plan's context and what applying compares first. */
static void restore_context(tt_repo *repo, tt_plan *plan, const restore_opts *o, const char *commit,
			    const char *hash, tt_error *err)
{
	json_t *ctx = json_pack("{s:s?,s:s?,s:b,s:s,s:s}", "from_rev", o->rev, "from_commit", commit, "discard",
				o->discard, "manifest_hash", hash, "workspace_id", repo->ws.workspace_id);
	const char *ck;
	json_t *cv;
	if (o->at)
		json_object_set_new(ctx, "at", json_string(o->at));
	json_object_foreach(ctx, ck, cv)
		tt_plan_set_context(plan, ck, cv, err);
	json_decref(ctx);
	json_t *ws = json_string(repo->ws.workspace_id), *h = json_string(hash);
	json_t *bm = repo->ws.bookmark ? json_string(repo->ws.bookmark) : json_null();
	char d[256];
	snprintf(d, sizeof d, "this restore plan was made on %s; the checkout is on {observed} now; re-run the plan",
		 repo->ws.bookmark ? repo->ws.bookmark : "no bookmark");
	tt_plan_require(plan, "workspace_id", ws, NULL, NULL,
			"this restore plan was made in another checkout; re-run the plan here", err);
	tt_plan_require(plan, "workspace_bookmark", bm, NULL, NULL, d, err);
	tt_plan_require(plan, "manifest_hash", h, NULL, NULL, "manifests changed since the plan was made; re-run the plan",
			err);
	json_decref(ws), json_decref(h), json_decref(bm);
}

/* Why the object cannot be restored (NULL: it can); with --at, *start is
 * the state AT names in its store. */
static const char *why_refused(tt_repo *repo, const restore_opts *o, const tt_manifest *now, const tt_manifest *m,
			       json_t **start, char *why, size_t cap)
{
	unsigned caps = tt_engine_caps(repo, now);
	const char *rev = o->rev, *at = o->at;
	*start = NULL;
	if (at) {
		if (tt_engine_on_trunk(repo) || !repo->ws.bookmark) {
			snprintf(why, cap, "on the trunk (%s) the working ref is the upstream branch "
				 "itself, which restore never moves: restore on a bookmark (`tether new -b "
				 "NAME`), or re-register the object at it (`tether add ... --at REF`), or "
				 "`tether pull`", tt_config_trunk(&repo->config));
			return why;
		}
		if (!(caps & TT_CAP_FORK)) {
			snprintf(why, cap, "%s objects cannot fork: no working branch", now->kind);
			return why;
		}
		tt_error rerr = TT_ERROR_INIT;
		const char *refuse = NULL;
		if (resolve_at(repo, now, at, start, &rerr) < 0) {
			tt_buf r = TT_BUF_INIT;
			tt_pyv_repr_str(&r, at, strlen(at));
			snprintf(why, cap, "cannot resolve %s in its store: %s", r.ptr, tt_error_text(&rerr));
			tt_buf_release(&r);
			refuse = why;
		}
		tt_error_clear(&rerr);
		return refuse;
	}
	if (!m) {
		snprintf(why, cap, "not registered at %s", rev);
		return why;
	}
	if (!(caps & TT_CAP_FORK) || tt_engine_on_trunk(repo) || !repo->ws.bookmark)
		return "no working branch to restore (not Forkable, or on trunk)";
	if (!m->state) {
		snprintf(why, cap, "nothing committed at %s", rev);
		return why;
	}
	if (!m->pin_id && !(caps & TT_CAP_ADDRESSABLE)) {
		snprintf(why, cap, "no pin at %s and the backend cannot fork from a state", rev);
		return why;
	}
	return NULL;
}

/* The working branch the object restores onto: this checkout's, a pending
 * fork's, or the bookmark's name for it. */
static int restore_ref_name(tt_repo *repo, const char *key, char **name, tt_error *err)
{
	json_t *wr = json_object_get(repo->ws.working_refs, key), *pf = json_object_get(repo->ws.pending_forks, key);
	*name = NULL;
	if (json_is_string(wr))
		*name = tt_strdup(json_string_value(wr));
	else if (json_is_string(pf))
		*name = tt_strdup(json_string_value(pf));
	else
		return tt_working_ref_name(name, repo->config.dataset_id, repo->ws.bookmark, err);
	return *name ? 0 : tt_error_oom(err);
}

/*
 * Whether the branch exists (*present, its head in *head) and may be
 * reset: "refuse" when that cannot be told, or when it holds writes no
 * commit pins and --discard was not given; else "fork".
 */
static const char *restore_branch(tt_repo *repo, const restore_opts *o, const tt_manifest *now, const char *key,
				  const char *name, json_t *params, tt_buf *det, bool *present, json_t **head)
{
	tt_backend *b;
	json_t *refs = NULL, *r;
	tt_error lerr = TT_ERROR_INIT;
	const char *op = "fork";
	size_t k;
	*present = false;
	*head = NULL;
	if (tt_engine_backend(repo, now->kind, &b, &lerr) < 0 || !tt_backend_has(b, list_working_refs) ||
	    tt_backend_list_working_refs(b, now->locator, &refs, &lerr) < 0) {
		tt_buf_reset(det);
		tt_buf_printf(det, "could not list branches (%s); whether %s exists is unknown and a fork "
			      "would reset it blind", tt_error_text(&lerr), name);
		op = "refuse";
	} else {
		json_array_foreach(refs, k, r)
			*present |= strcmp(json_string_value(r), name) == 0;
	}
	json_decref(refs);
	if (strcmp(op, "fork") == 0 && *present) {
		if (tt_backend_fingerprint(b, now->locator, name, head, &lerr) < 0) {
			tt_buf_reset(det);
			tt_buf_printf(det, "%s exists but its head could not be read (%s); a restore would "
				      "reset it blind", name, tt_error_text(&lerr));
			op = "refuse";
		} else {
			json_object_set_new(params, "existing", json_string(name));
			json_object_set(params, "head", *head);
			tt_buf_printf(det, "; resets %s", name);
			const json_t *known[3] = { json_object_get(repo->ws.base_states, key),
						   json_object_get(repo->ws.fork_points, key), now->state };
			bool pinned = false;
			for (int q = 0; q < 3; q++)
				pinned |= known[q] && tt_engine_same(now, *head, known[q]);
			tt_buf hs = TT_BUF_INIT;
			tt_short_state(&hs, *head);
			if (!pinned && !o->discard) {
				tt_buf_reset(det);
				tt_buf_printf(det, "%s has writes since this workspace last committed (%s); commit "
					      "them, or pass --discard to throw them away", name, hs.ptr);
				op = "refuse";
			} else if (!pinned) {
				tt_buf_printf(det, ", discarding its writes (%s)", hs.ptr);
			}
			tt_buf_release(&hs);
		}
	}
	tt_error_clear(&lerr);
	return op;
}

/* What applying compares before a restore's fork: the branch still at the
 * head reviewed, or still absent. */
static void restore_precondition(tt_plan *plan, const tt_manifest *now, const char *key, const char *name,
				 bool present, json_t *head, tt_error *err)
{
	char what[300];
	snprintf(what, sizeof what, "restore %s", key);
	json_t *p = json_pack("{s:s,s:O,s:s,s:s}", "backend", now->kind, "locator", now->locator, "ref", name, "what",
			      what);
	if (present) {
		tt_plan_require(plan, "ref_head", head, key, p, NULL, err);
	} else {
		char d[512];
		snprintf(d, sizeof d, "restore %s: %s exists since the plan was made; re-run the plan", key, name);
		/* Its detail names the command: no "what" (tether-vcs writes none). */
		json_object_del(p, "what");
		tt_plan_require(plan, "ref_absent", NULL, key, p, d, err);
	}
	json_decref(p);
}

/* One selected object: its fork onto the working branch, or a refusal. */
static int plan_restore_object(tt_repo *repo, tt_plan *plan, const restore_opts *o, const char *key,
			       const tt_manifest_set *then, tt_error *err)
{
	const tt_manifest *now = tt_manifests_find(&repo->objects, key), *m = tt_manifests_find(then, key);
	json_t *start = NULL, *params, *head = NULL;
	char why[1024], *name = NULL;
	const char *refuse = why_refused(repo, o, now, m, &start, why, sizeof why), *op;
	tt_buf text = TT_BUF_INIT, det = TT_BUF_INIT, st = TT_BUF_INIT;
	bool present = false;
	int rc;
	if (refuse) {
		json_decref(start);
		tt_plan_action(plan, "refuse", key, now->kind, NULL, refuse, NULL, err);
		return 0;
	}
	if ((rc = restore_ref_name(repo, key, &name, err)) < 0) {
		json_decref(start);
		return rc;
	}
	if (start) {
		tt_short_state(&st, start);
		tt_buf_printf(&det, "from %s: %s (a copy; %s is untouched)", o->at, st.ptr, o->at);
		params = json_pack("{s:s,s:O,s:O}", "at", o->at, "at_state", start, "then_state", start);
	} else {
		tt_manifest_render(&text, m, err);
		tt_short_state(&st, m->state);
		tt_buf_printf(&det, "from %s: %s", o->rev, m->pin_id ? m->pin_ref : st.ptr);
		params = json_pack("{s:s,s:O}", "then", text.ptr, "then_state", m->state);
	}
	json_decref(start);
	op = restore_branch(repo, o, now, key, name, params, &det, &present, &head);
	tt_plan_action(plan, op, key, now->kind, name, det.ptr, params, err);
	if (strcmp(op, "fork") == 0)
		restore_precondition(plan, now, key, name, present, head, err);
	json_decref(params);
	json_decref(head);
	tt_buf_release(&text);
	tt_buf_release(&det);
	tt_buf_release(&st);
	free(name);
	return err->code < 0 ? err->code : 0;
}

/* Plan `restore`: per selected object, a fork of its working branch from
 * REV's pin (or from AT in its store), or a refusal saying why. */
static int plan_restore(tt_repo *repo, void *vctx, bool applying, tt_plan **out, tt_error *err)
{
	const restore_opts *o = vctx;
	tt_manifest_set then = { 0 };
	tt_plan *plan = NULL;
	json_t *keys = NULL, *kv;
	char *commit = NULL, hash[65];
	size_t i;
	int rc;
	(void)applying;
	if ((rc = tt_engine_select(repo, o->selectors, o->nsel, &keys, err)) < 0 ||
	    (o->rev && (rc = tt_engine_objects_at(repo, o->rev, &then, &commit, err)) < 0) ||
	    (rc = tt_manifests_hash(hash, &repo->objects, err)) < 0)
		goto done;
	if (!(plan = tt_plan_new("restore"))) {
		rc = tt_error_oom(err);
		goto done;
	}
	restore_context(repo, plan, o, commit, hash, err);
	tt_engine_prepare(repo);
	json_array_foreach(keys, i, kv)
		if ((rc = plan_restore_object(repo, plan, o, json_string_value(kv), &then, err)) < 0)
			goto done;
done:
	tt_manifests_release(&then);
	json_decref(keys);
	free(commit);
	if (rc < 0)
		tt_plan_free(plan);
	else
		*out = plan;
	return rc;
}

static int load_restore(tt_repo *repo, void *vctx, tt_plan *plan, tt_error *err)
{
	const restore_opts *o = vctx;
	int rc = plan_source_matches(plan, o->rev, o->at, err);
	return rc < 0 ? rc : tt_engine_check_preconditions(repo, plan, "restore", err);
}

/* What applying `restore` carries from step to step. */
typedef struct restore_apply {
	tt_repo *repo;
	const tt_plan *plan;
	const char *commit, *rev, *at; /* borrowed: what the plan was made from */
	json_t *done_refs;	       /* key -> working ref restored */
	json_t *created, *reset;       /* keys of branches made, and reset */
	json_t *heads;		       /* key -> head of an existing branch */
	char op_id[TT_OP_ID_LEN + 1];
	const char *failing; /* borrowed: the key being restored */
	bool unjournaled;    /* a reset the journal could not record stopped it */
} restore_apply;

/* The plan's refusals as one error, and the heads of the existing branches it resets. */
static int restore_refusals(restore_apply *ra, tt_error *err)
{
	tt_buf refused = TT_BUF_INIT;
	int rc = 0;
	for (size_t a = 0; a < tt_plan_action_count(ra->plan); a++) {
		tt_plan_action_view v;
		tt_plan_action_at(ra->plan, a, &v);
		if (strcmp(v.op, "refuse") == 0)
			tt_buf_printf(&refused, "\n  %s: %s", v.key, v.detail);
		else if (json_object_get(v.params, "existing"))
			json_object_set(ra->heads, v.key, json_object_get(v.params, "head"));
	}
	if (refused.len)
		rc = tt_error_set(err, TT_ECONFIG, "cannot restore:%s", refused.ptr);
	tt_buf_release(&refused);
	return rc;
}

/* The journal's entry: the plan, with the workspace and the heads as its
 * `pre` (what undo puts back).  An entry that cannot say all of it is not
 * begun, and nothing is reset. */
static int journal_restore(restore_apply *ra, tt_error *err)
{
	tt_buf wb = TT_BUF_INIT;
	json_t *pre = NULL, *pj = NULL;
	int rc;
	if ((rc = tt_workspace_render(&wb, &ra->repo->ws, err)) < 0) {
		tt_error_prefix(err, "restore: the journal's entry cannot hold this checkout's workspace; nothing "
				"was restored");
		goto done;
	}
	if (!(pre = json_pack("{s:s,s:O}", "workspace", wb.ptr, "heads", ra->heads))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!(pj = tt_plan_to_object(ra->plan, err))) {
		rc = err->code;
		goto done;
	}
	rc = tt_oplog_begin(ra->repo->root, "restore", pj, pre, NULL, ra->op_id, err);
done:
	json_decref(pre);
	json_decref(pj);
	tt_buf_release(&wb);
	return rc;
}

/* The working branch of one object forked anew: from the state it had
 * then, or from the manifest it had then.  *ref: caller frees. */
static int fork_restored(restore_apply *ra, const tt_plan_action_view *v, char **ref, tt_error *err)
{
	json_t *h = json_object_get(v->params, "head");
	tt_expect exp = json_object_get(v->params, "existing")
				? (json_is_object(h) ? (tt_expect){ TT_EXPECT_STATE, h } : (tt_expect){ TT_EXPECT_NONE, NULL })
				: (tt_expect){ TT_EXPECT_ABSENT, NULL };
	json_t *at_state = json_object_get(v->params, "at_state");
	int rc;
	if (at_state) {
		const tt_manifest *now = tt_manifests_find(&ra->repo->objects, v->key);
		if (!now)
			return tt_error_set(err, TT_ESTALEPLAN, "'%s' is no longer registered; re-run the plan", v->key);
		return fork_from_state(ra->repo, now, at_state, v->target, &exp, ref, err);
	}
	tt_manifest src;
	json_t *t = json_object_get(v->params, "then");
	if ((rc = tt_manifest_parse(&src, json_string_value(t), json_string_length(t), "plan", err)) < 0)
		return rc;
	rc = tt_engine_fork_from_manifest(ra->repo, &src, v->target, &exp, ref, err);
	tt_manifest_release(&src);
	return rc;
}

/* The restored branch in the workspace and the journal; the workspace is
 * written after each reset: a crash leaves every reset described.  A
 * progress record the journal refuses still leaves the reset in the
 * workspace, then stops the restore with the journal's error
 * (ra->unjournaled): no more resets the journal does not describe. */
static int record_restored(restore_apply *ra, const tt_plan_action_view *v, const char *ref, tt_error *err)
{
	tt_workspace *ws = &ra->repo->ws;
	json_t *ts = json_object_get(v->params, "then_state");
	json_object_set_new(ws->working_refs, v->key, json_string(ref));
	json_object_del(ws->pending_forks, v->key);
	json_object_del(ws->pending_resets, v->key);
	json_object_set(ws->fork_points, v->key, ts);
	json_object_set(ws->last_snapshot, v->key, ts);
	const tt_manifest *now = tt_manifests_find(&ra->repo->objects, v->key);
	if (now && now->state)
		json_object_set(ws->base_states, v->key, now->state);
	json_object_set_new(ra->done_refs, v->key, json_string(ref));
	json_array_append_new(json_object_get(v->params, "existing") ? ra->reset : ra->created, json_string(v->key));
	json_t *d = json_pack("{s:s,s:s}", "key", v->key, "ref", ref);
	tt_error jerr = TT_ERROR_INIT;
	int jrc = d ? tt_oplog_progress(ra->repo->root, ra->op_id, "fork", d, &jerr) : tt_error_oom(&jerr);
	json_decref(d);
	tt_fault("restore:after-reset");
	int rc = tt_workspace_save(ws, ra->repo->root, err);
	if (rc == 0 && jrc < 0) {
		tt_error_move(err, &jerr);
		ra->unjournaled = true;
		rc = jrc;
	}
	tt_error_clear(&jerr);
	return rc;
}

/* Each planned fork, forked and recorded in turn. */
static int restore_forks(restore_apply *ra, tt_error *err)
{
	int rc;
	for (size_t a = 0; a < tt_plan_action_count(ra->plan); a++) {
		tt_plan_action_view v;
		tt_plan_action_at(ra->plan, a, &v);
		if (strcmp(v.op, "fork") != 0)
			continue;
		ra->failing = v.key;
		char *ref = NULL;
		if ((rc = fork_restored(ra, &v, &ref, err)) < 0)
			return rc;
		tt_fault("restore:after-fork");
		rc = record_restored(ra, &v, ref, err);
		free(ref);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* The entry done, and the result. */
static int restore_done(restore_apply *ra, json_t **out, tt_error *err)
{
	json_t *res = json_pack("{s:O,s:O,s:O,s:s?,s:s?}", "created", ra->created, "reset", ra->reset,
				"working_refs", ra->done_refs, "from_commit", ra->commit, "at", ra->at);
	int rc = tt_oplog_done(ra->repo->root, ra->op_id, res, NULL, NULL, err);
	json_decref(res);
	if (rc == 0)
		*out = json_pack("{s:s?,s:s?,s:O}", "from", ra->rev, "at", ra->at, "working_refs", ra->done_refs);
	return rc;
}

/* A head that moved between the plan's check and its reset (a clone that
 * shares no lock) stops the restore with nothing written for it; a reset
 * the journal could not record stops it after that reset (rc, the
 * journal's error).  What was reset so far is journaled as done, beside
 * why it stopped, where the journal takes it. */
static int restore_stopped(restore_apply *ra, int rc, tt_error *err)
{
	bool moved = rc == TT_EREFMOVED;
	tt_error ignored = TT_ERROR_INIT;
	char *why = tt_strdup(tt_error_text(err));
	json_t *res = json_pack("{s:O,s:O,s:O,s:s?,s:s?,s:s}", "created", ra->created, "reset", ra->reset,
				"working_refs", ra->done_refs, "from_commit", ra->commit, "at", ra->at, "failed",
				why ? why : "");
	tt_oplog_done(ra->repo->root, ra->op_id, res, NULL, NULL, &ignored);
	json_decref(res);
	tt_error_clear(&ignored);
	tt_buf keys = TT_BUF_INIT;
	size_t n = 0;
	const char *k, **names = tt_calloc(json_object_size(ra->done_refs) + 1, sizeof *names);
	json_t *r;
	json_object_foreach(ra->done_refs, k, r) if (names) names[n++] = k;
	if (names)
		qsort(names, n, sizeof *names, tt_cmp_cstr);
	for (size_t i = 0; i < n; i++)
		tt_buf_printf(&keys, "%s%s", i ? ", " : "", names[i]);
	free(names);
	tt_error_clear(err);
	rc = tt_error_set(err, moved ? TT_ESTALEPLAN : rc, "restore %s: %s; %s%s%s", ra->failing ? ra->failing : "",
			  why ? why : "", keys.ptr, keys.len ? " restored and recorded, " : "",
			  moved ? "re-run the plan for the rest"
				: "once .tether/ops.jsonl takes writes again, restore the rest");
	tt_buf_release(&keys);
	free(why);
	return rc;
}

/* Apply `restore`: refusals, the journal's entry, each fork in turn, then
 * the entry done (or stopped, on a head that moved). */
static int apply_restore(tt_repo *repo, void *vctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err)
{
	/* What the plan was made from, as its context records it. */
	const json_t *pctx = tt_plan_context(plan);
	restore_apply ra = { .repo = repo, .plan = plan,
			     .commit = json_string_value(json_object_get(pctx, "from_commit")),
			     .rev = json_string_value(json_object_get(pctx, "from_rev")),
			     .at = json_string_value(json_object_get(pctx, "at")), .done_refs = json_object(),
			     .created = json_array(), .reset = json_array(), .heads = json_object() };
	int rc;
	(void)vctx, (void)saved;
	if ((rc = restore_refusals(&ra, err)) < 0)
		goto done;
	/* the repository lock: taken by the driver from here on */
	if ((rc = journal_restore(&ra, err)) < 0)
		goto done;
	tt_fault("restore:after-journal");
	if ((rc = restore_forks(&ra, err)) < 0) {
		/* Any failure but a moved head, or a journal that refused a
		 * finished reset, may have left part of a fork behind: the
		 * entry stays started, as an interrupted restore's does. */
		if (rc == TT_EREFMOVED || ra.unjournaled)
			rc = restore_stopped(&ra, rc, err);
		goto done;
	}
	tt_fault("restore:before-done");
	rc = restore_done(&ra, out, err);
done:
	json_decref(ra.done_refs);
	json_decref(ra.created);
	json_decref(ra.reset);
	json_decref(ra.heads);
	return rc;
}

static const tt_planned_cmd restore_cmd = {
	.command = "restore",
	.locks = TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY,
	.plan = plan_restore,
	.load = load_restore,
	.apply = apply_restore,
};

int tt_engine_repo_restore(tt_repo *repo, const char *const *selectors, size_t nsel, const char *rev,
		    const char *at, bool discard, bool dry_run, const char *from_plan, size_t from_len, char **plan_json,
		    char **plan_text, json_t **out, tt_error *err)
{
	restore_opts o = { selectors, nsel, rev, at, discard };
	tt_planned_run run = { .dry = dry_run, .from = from_plan, .from_len = from_len, .plan_json = plan_json,
			       .plan_text = plan_text, .out = out };
	if (out)
		*out = NULL;
	/* The arguments of a fresh plan (a saved one carries its own). */
	if (!from_plan && !rev == !at)
		return tt_error_set(err, TT_ECONFIG, "restore takes one source: a revision (--from REV) or a "
				    "native ref or state (--at REF)");
	if (!from_plan && at && blank(at))
		return tt_error_set(err, TT_ECONFIG, "--at needs a native ref or state; an empty one would "
				    "start the branch from the upstream head");
	if (!from_plan && !nsel)
		return tt_error_set(err, TT_ECONFIG, "restore needs at least one key");
	return tt_engine_run_planned(repo, &restore_cmd, &o, &run, err);
}
