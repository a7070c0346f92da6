/*
 * engine/cmd/promote.c - `promote`: land a bookmark on the trunk.  Each
 * system's base branch moves to what the bookmark's working branch holds
 * (fast-forward when the base is unchanged since the fork, native three-way
 * merge where the kind has one, refused otherwise), and when everything
 * fast-forwarded the trunk bookmark moves to the bookmark's commit.
 *
 * The bookmark lands whole or not at all: one refusal holds the rest, and
 * what would stop one object's move (a lock file git left, a dirty
 * checkout: the backend's check_move) is asked of every object before any
 * moves.  Merges run before fast-forwards, which run only once every merge
 * landed; every base moves only from the head the plan reviewed.
 */
#include "engine/cmd/promote.h"

#include <stdlib.h>
#include <string.h>

#include "core/oplog.h"
#include "backends/dispatch.h"
#include "core/plan.h"
#include "engine/cmd/fork.h"
#include "engine/kernel/context.h"
#include "engine/kernel/keyhint.h"
#include "engine/kernel/preconditions.h"
#include "engine/kernel/progress.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/state.h"
#include "engine/kernel/planned.h"
#include "engine/cmd/promote_check.h"
#include "util/fault.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

static const char *base_branch_name(const tt_manifest *m)
{
	json_t *b = json_object_get(m->locator, "branch");
	return json_is_string(b) ? json_string_value(b) : "main";
}

static json_t *base_locator(const tt_manifest *m)
{
	json_t *loc = json_deep_copy(m->locator);
	if (loc)
		json_object_del(loc, "at");
	return loc;
}

static int short_of(tt_buf *b, const json_t *state)
{
	tt_buf_reset(b);
	return tt_short_state(b, state);
}

/* What to do once KEY's base branch moved under a plan: a new plan merges
 * onto it where the backend can; where it cannot, the new plan refuses it
 * too unless the base only moved along the fork. */
static void after_base_moved(tt_repo *repo, tt_buf *b, const char *key, const char *kind, json_t *locator)
{
	const tt_manifest *now = tt_manifests_find(&repo->objects, key);
	tt_manifest m = { .key = (char *)key, .kind = (char *)kind, .locator = locator,
			  .policy = now ? now->policy : TT_POLICY_DEFAULT };
	if (tt_engine_caps(repo, &m) & TT_CAP_MERGE) {
		tt_buf_puts(b, "re-run the plan (it merges onto the moved base)");
		return;
	}
	tt_buf_printf(b, "re-running the plan refuses it too unless the base only moved along the fork: "
		      "the %s backend cannot merge", kind);
	tt_backend *be;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_engine_backend(repo, kind, &be, &ignored) == 0 && tt_backend_promote_hint(be))
		tt_buf_printf(b, "; %s", tt_backend_promote_hint(be));
	tt_error_clear(&ignored);
}

/* What planning `promote` carries from object to object. */
typedef struct promote_plan {
	tt_repo *repo;
	const tt_promote_opts *o;
	const char *strategy;
	const tt_manifest_set *committed; /* what the bookmark's commit records */
	tt_plan *plan;
	json_t *current;                  /* keys whose base is already at the target */
	size_t nrefused;
	tt_buf b1, b2;                    /* scratch: short states */
} promote_plan;

/* The keys a subset names (prefixes "dir/" expanded), or NULL for all. */
static int promote_keys(const tt_manifest_set *objects, const tt_promote_opts *o, json_t **out, tt_error *err)
{
	*out = NULL;
	if (!o->nkeys)
		return 0;
	json_t *keys = json_array();
	if (!keys)
		return tt_error_oom(err);
	for (size_t s = 0; s < o->nkeys; s++) {
		size_t sl = strlen(o->keys[s]);
		bool prefix = sl && o->keys[s][sl - 1] == '/', hit = false;
		for (size_t i = 0; i < objects->n; i++)
			if (prefix ? strncmp(objects->items[i].key, o->keys[s], sl) == 0
				   : strcmp(objects->items[i].key, o->keys[s]) == 0) {
				json_array_append_new(keys, json_string(objects->items[i].key));
				hit = true;
			}
		if (!hit) {
			int rc = tt_error_set(err, TT_ECONFIG, prefix ? "no object under %s" : "no such object: %s",
					      o->keys[s]);
			if (!prefix)
				tt_engine_key_hint(err, objects, o->keys[s]);
			json_decref(keys);
			return rc;
		}
	}
	*out = keys;
	return 0;
}

static bool in_keys(const json_t *keys, const char *key)
{
	size_t k;
	json_t *kv;
	json_array_foreach(keys, k, kv)
		if (strcmp(json_string_value(kv), key) == 0)
			return true;
	return false;
}

/* The plan's context and what applying compares first: the checkout, its
 * bookmark and that bookmark's head, the manifests. */
static int promote_context(tt_repo *repo, const tt_promote_opts *o, tt_plan *plan, const char *strategy,
			   const char *msg, const char *hash, const char *bookmark, const char *bookmark_commit,
			   tt_error *err)
{
	const char *ck;
	json_t *cv;
	int rc = 0;
	json_t *ctx = json_pack("{s:s?,s:s,s:s,s:b,s:s,s:s,s:s?,s:s?}", "rev", o->rev, "strategy", strategy, "message",
				msg, "subset", o->nkeys > 0, "manifest_hash", hash, "workspace_id", repo->ws.workspace_id,
				"bookmark", bookmark, "bookmark_commit", bookmark_commit);
	if (!ctx)
		return tt_error_oom(err);
	json_object_foreach(ctx, ck, cv)
		if ((rc = tt_plan_set_context(plan, ck, cv, err)) < 0)
			break;
	json_decref(ctx);
	if (rc < 0)
		return rc;
	json_t *ws = json_string(repo->ws.workspace_id);
	json_t *bm = bookmark ? json_string(bookmark) : json_null();
	json_t *bc = bookmark_commit ? json_string(bookmark_commit) : json_null();
	json_t *h = json_string(hash);
	json_t *pb = json_pack("{s:O}", "bookmark", bm);
	json_t *pr = json_pack("{s:s?}", "rev", o->rev); /* {"rev": null}, as tether-vcs */
	char d1[256], d2[256];
	snprintf(d1, sizeof d1, "this promote plan was made on %s; the checkout is on {observed} now; "
		 "re-run the plan", bookmark ? bookmark : "no bookmark");
	snprintf(d2, sizeof d2, "bookmark %s moved since the promote plan was made (now at {observed}); "
		 "re-run the plan", bookmark ? bookmark : "None");
	rc = tt_plan_require(plan, "workspace_id", ws, NULL, NULL,
			     "this promote plan was made in another checkout; re-run the plan here", err);
	if (rc == 0)
		rc = tt_plan_require(plan, "workspace_bookmark", bm, NULL, NULL, d1, err);
	if (rc == 0)
		rc = tt_plan_require(plan, "bookmark_head", bc, NULL, pb, d2, err);
	if (rc == 0)
		rc = tt_plan_require(plan, "manifest_hash", h, NULL, pr,
				     "manifests changed since the promote plan was made; re-run the plan", err);
	json_decref(ws), json_decref(bm), json_decref(bc), json_decref(h), json_decref(pb), json_decref(pr);
	return rc;
}

/* What one object lands, as the plan weighs it. */
typedef struct promote_item {
	const tt_manifest *m;
	tt_backend *b;
	unsigned caps;
	json_t *base_state, *target_state, *source, *fork_point, *params;
	char *working_ref;
	const char *op;   /* NULL: undecided; "": a note only */
	char note[600];
	tt_buf d;         /* the action's detail */
} promote_item;

/* -r REV: the pin (or the recorded state) the revision names. */
static void source_at_rev(promote_plan *pp, promote_item *it)
{
	const tt_manifest *m = it->m;
	const char *rev = pp->o->rev;
	if (!m->state) {
		snprintf(it->note, sizeof it->note, "%s: nothing committed at %s", m->key, rev);
		it->op = "";
		return;
	}
	tt_target t;
	tt_pin pin;
	tt_error perr = TT_ERROR_INIT;
	int prc = tt_engine_pinned_source(pp->repo, m, it->b, &pin, &t, &perr);
	if (prc == TT_EPINDRIFT) {
		tt_buf_puts(&it->d, perr.message);
		it->op = "refuse";
	} else if (prc < 0) {
		snprintf(it->note, sizeof it->note, "%s: not recoverable at %s (%s)", m->key, rev, tt_error_text(&perr));
		it->op = "";
	} else {
		it->target_state = json_incref(m->state);
		it->source = t.kind == TT_TARGET_PIN ? json_pack("{s:{s:s,s:s}}", "pin", "id", pin.id, "ref", pin.ref)
						     : json_pack("{s:O}", "state", m->state);
	}
	tt_error_clear(&perr);
}

/* The bookmark: its working branch, which must hold what its last commit
 * recorded (no writes since). */
static int source_working(promote_plan *pp, promote_item *it, tt_error *err)
{
	const tt_manifest *m = it->m;
	int rc;
	if ((rc = tt_engine_working_ref(pp->repo, m, &it->working_ref, err)) < 0)
		return rc;
	const tt_manifest *recorded = tt_manifests_find(pp->committed, m->key);
	if (!it->working_ref) {
		snprintf(it->note, sizeof it->note, "%s: no working branch yet; nothing to promote", m->key);
		it->op = "";
	} else if (!recorded || !recorded->state) {
		snprintf(it->note, sizeof it->note, "%s: nothing committed on this bookmark yet; commit first", m->key);
		it->op = "";
	} else if ((rc = tt_backend_fingerprint(it->b, m->locator, it->working_ref, &it->target_state, err)) < 0) {
		tt_error_object(err, m->key, m->kind);
		return rc;
	} else {
		it->source = json_pack("{s:s}", "ref", it->working_ref);
		it->fork_point = json_object_get(pp->repo->ws.fork_points, m->key);
		if (!tt_engine_same(m, it->target_state, recorded->state)) {
			short_of(&pp->b1, recorded->state);
			short_of(&pp->b2, it->target_state);
			tt_buf_printf(&it->d, "%s has writes since the last commit (%s committed, %s on the "
				      "branch); `tether commit` them first", it->working_ref, pp->b1.ptr, pp->b2.ptr);
			it->op = "refuse";
		}
	}
	return 0;
}

/* Why the base cannot take the target: the refusal's detail. */
static void why_not(promote_plan *pp, promote_item *it, int unchanged, const char *base_txt)
{
	const char *strategy = pp->strategy;
	if (unchanged == 1) {
		tt_buf_printf(&it->d, strcmp(strategy, "merge") == 0 ? "strategy=%s but the backend cannot merge"
								    : "the %s backend cannot move a branch",
			      strcmp(strategy, "merge") == 0 ? strategy : it->m->kind);
	} else if (unchanged == 0) {
		tt_buf fp = TT_BUF_INIT;
		tt_short_state(&fp, it->fork_point);
		tt_buf_printf(&it->d, "%s moved since the fork (%s -> %s)%s", base_txt, fp.ptr, pp->b1.ptr,
			      strcmp(strategy, "ff") == 0 && (it->caps & TT_CAP_MERGE) ? " and strategy=ff"
										    : " and the backend cannot merge");
		tt_buf_release(&fp);
	} else {
		tt_buf_puts(&it->d, "cannot tell whether the base moved (no fork point recorded)");
	}
	if (tt_backend_promote_hint(it->b))
		tt_buf_printf(&it->d, "; %s", tt_backend_promote_hint(it->b));
}

/* Fast-forward, merge or refuse: is the base still behind the source?  The
 * store's own history answers where it can; the fork point is the
 * fallback. */
static void choose_move(promote_plan *pp, promote_item *it, const char *base_txt)
{
	const tt_manifest *m = it->m;
	const char *strategy = pp->strategy;
	int unchanged = -1;
	tt_target t = { .kind = TT_TARGET_STATE, .state = it->target_state };
	tt_error aerr = TT_ERROR_INIT;
	if (!tt_backend_has(it->b, ancestor_of) ||
	    tt_backend_ancestor_of(it->b, m->locator, it->base_state, &t, &unchanged, &aerr) < 0)
		unchanged = -1;
	tt_error_clear(&aerr);
	if (unchanged < 0 && it->fork_point)
		unchanged = tt_engine_same(m, it->fork_point, it->base_state) ? 1 : 0;
	bool can_ff = (it->caps & TT_CAP_PROMOTE) != 0;
	bool can_merge = (it->caps & TT_CAP_MERGE) && !json_object_get(it->source, "state");
	it->params = json_pack("{s:O,s:O,s:O,s:O,s:O}", "locator", m->locator, "source", it->source, "base_state",
			       it->base_state, "target_state", it->target_state, "fork_point",
			       it->fork_point ? it->fork_point : json_null());
	short_of(&pp->b1, it->base_state);
	short_of(&pp->b2, it->target_state);
	if (unchanged == 1 && strcmp(strategy, "merge") != 0 && can_ff) {
		tt_buf_printf(&it->d, "%s %s -> %s (base unchanged since fork)", base_txt, pp->b1.ptr, pp->b2.ptr);
		it->op = "fast-forward";
	} else if (can_merge && strcmp(strategy, "ff") != 0 &&
		   (unchanged != 1 || !can_ff || strcmp(strategy, "merge") == 0)) {
		const char *src_name = json_string_value(json_object_get(it->source, "ref"));
		if (!src_name)
			src_name = json_string_value(json_object_get(json_object_get(it->source, "pin"), "ref"));
		tt_buf_printf(&it->d, "merge %s into %s (%s)", src_name ? src_name : "?", base_txt,
			      unchanged == 1   ? "base unchanged since fork"
			      : unchanged == 0 ? "base moved since fork"
					       : "no fork point recorded; ancestry unknown");
		it->op = "merge";
	} else {
		why_not(pp, it, unchanged, base_txt);
		it->op = "refuse";
	}
}

/* One object of the bookmark: its action (or note) in the plan. */
static int plan_promote_object(promote_plan *pp, const tt_manifest *m, bool on_trunk, tt_error *err)
{
	promote_item it = { .m = m, .d = TT_BUF_INIT };
	json_t *bloc = NULL;
	const char *base_txt = base_branch_name(m);
	int rc = 0;

	it.caps = tt_engine_caps(pp->repo, m);
	if (!(it.caps & TT_CAP_FORK) || tt_engine_backend(pp->repo, m->kind, &it.b, err) < 0) {
		tt_error_clear(err);
		snprintf(it.note, sizeof it.note, "%s: not forkable; nothing to promote", m->key);
		return tt_plan_note(pp->plan, it.note, err);
	}
	if (on_trunk) {
		snprintf(it.note, sizeof it.note, "%s: on trunk; already on the base branch", m->key);
		return tt_plan_note(pp->plan, it.note, err);
	}
	bloc = base_locator(m);
	if ((rc = tt_backend_fingerprint(it.b, bloc, NULL, &it.base_state, err)) < 0) {
		tt_error_object(err, m->key, m->kind);
		goto done;
	}
	if (pp->o->rev)
		source_at_rev(pp, &it);
	else if ((rc = source_working(pp, &it, err)) < 0)
		goto done;
	if (!it.op && tt_engine_same(m, it.target_state, it.base_state)) {
		snprintf(it.note, sizeof it.note, "%s: base already at the target", m->key);
		json_array_append_new(pp->current, json_string(m->key));
		it.op = "";
	}
	if (!it.op)
		choose_move(pp, &it, base_txt);
	if (*it.op) {
		if (!it.params)
			it.params = json_pack("{s:O}", "locator", m->locator);
		if (strcmp(it.op, "refuse") == 0)
			pp->nrefused++;
		rc = tt_plan_action(pp->plan, it.op, m->key, m->kind, base_txt, it.d.ptr, it.params, err);
	} else if (it.note[0]) {
		rc = tt_plan_note(pp->plan, it.note, err);
	}
done:
	json_decref(bloc);
	json_decref(it.base_state);
	json_decref(it.target_state);
	json_decref(it.source);
	json_decref(it.params);
	free(it.working_ref);
	tt_buf_release(&it.d);
	return rc;
}

/* The plan's actions as editable objects. */
static json_t *actions_of(tt_plan *plan)
{
	json_t *acts = json_array();
	for (size_t i = 0; acts && i < tt_plan_action_count(plan); i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		json_array_append_new(acts, json_pack("{s:s,s:s,s:s,s:s,s:s,s:O}", "op", a.op, "key", a.key, "kind",
						      a.kind, "target", a.target, "detail", a.detail, "params",
						      a.params));
	}
	return acts;
}

static bool is_write(const json_t *a)
{
	const char *op = json_string_value(json_object_get(a, "op"));
	return strcmp(op, "fast-forward") == 0 || strcmp(op, "merge") == 0;
}

/* A bookmark lands whole or not at all: one refusal holds every other
 * action. */
static void hold_for_refusals(tt_plan *plan, json_t *acts, tt_error *err)
{
	tt_buf names = TT_BUF_INIT;
	size_t k;
	json_t *a;
	json_array_foreach(acts, k, a)
		if (strcmp(json_string_value(json_object_get(a, "op")), "refuse") == 0)
			tt_buf_printf(&names, "%s%s", names.len ? ", " : "", json_string_value(json_object_get(a, "key")));
	json_array_foreach(acts, k, a) {
		const char *aop = json_string_value(json_object_get(a, "op"));
		if (strcmp(aop, "refuse") == 0)
			continue;
		tt_buf nd = TT_BUF_INIT;
		tt_buf_printf(&nd, "would %s: %s; held because %s refused, and a bookmark is planned whole "
			      "or not at all", aop, json_string_value(json_object_get(a, "detail")), names.ptr);
		json_object_set_new(a, "op", json_string("hold"));
		json_object_set_new(a, "detail", json_string(nd.ptr));
		tt_buf_release(&nd);
	}
	char note[1024];
	snprintf(note, sizeof note, "nothing moved: %s refused; land the rest on purpose with `tether "
		 "promote KEY...`, or write those systems' base branches by hand on the trunk (see the "
		 "refusals) and promote again", names.ptr);
	tt_buf_release(&names);
	tt_plan_note(plan, note, err);
}

/* One write per native branch: later members of a scope share it. */
static void share_scopes(tt_repo *repo, const tt_manifest_set *objects, json_t *acts, tt_error *err)
{
	json_t *scopes = json_object(), *a;
	size_t k;
	json_array_foreach(acts, k, a) {
		if (!is_write(a))
			continue;
		const char *aop = json_string_value(json_object_get(a, "op"));
		const tt_manifest *m = tt_manifests_find(objects, json_string_value(json_object_get(a, "key")));
		tt_backend *b;
		if (!m || tt_engine_backend(repo, m->kind, &b, err) < 0) {
			tt_error_clear(err);
			continue;
		}
		char *scope = NULL;
		json_t *identity = NULL;
		if (tt_backend_has(b, branch_scope)) {
			tt_backend_branch_scope(b, m->locator, &scope, err);
		} else if (tt_backend_identity(b, m->locator, &identity, err) == 0) {
			tt_buf sb = TT_BUF_INIT;
			tt_json_canonical(&sb, identity);
			scope = tt_buf_detach(&sb);
		}
		json_decref(identity);
		tt_error_clear(err);
		char *sk = tt_asprintf("%s|%s|%s", m->kind, scope ? scope : "",
				       json_string_value(json_object_get(a, "target")));
		free(scope);
		const char *first = sk ? json_string_value(json_object_get(scopes, sk)) : NULL;
		if (first) {
			char sd[512];
			snprintf(sd, sizeof sd, "same branch as %s: %s once, for both", first, aop);
			json_t *p = json_object_get(a, "params");
			json_object_set_new(p, "with", json_string(first));
			json_object_set_new(p, "would", json_string(aop));
			json_object_set_new(a, "op", json_string("share"));
			json_object_set_new(a, "detail", json_string(sd));
		} else if (sk) {
			json_object_set_new(scopes, sk, json_string(m->key));
		}
		free(sk);
	}
	json_decref(scopes);
}

/* A full promotion moves the trunk onto this bookmark's commit: only when
 * that is a fast-forward of the trunk; otherwise every action refuses. */
static int refuse_trunk_regression(promote_plan *pp, json_t *acts, json_t *marks, const char *bookmark,
				   const char *bookmark_commit, tt_error *err)
{
	tt_repo *repo = pp->repo;
	const char *trunk = tt_config_trunk(&repo->config);
	const char *tc = json_string_value(json_object_get(marks, trunk));
	bool ok = true;
	size_t k;
	json_t *a;
	int rc;
	if (tc && bookmark_commit && (rc = tt_vcs_is_ancestor(repo->vcs, tc, bookmark_commit, &ok, err)) < 0)
		return rc;
	if (ok)
		return 0;
	char why[600];
	snprintf(why, sizeof why, "%s (%.12s) has commits this bookmark (%s at %.12s) does not; landing "
		 "would move %s backwards or sideways and drop them. Merge or rebase the manifests onto "
		 "%s first, or name keys to land a subset (which never moves the trunk)", trunk, tc, bookmark,
		 bookmark_commit, trunk, trunk);
	json_array_foreach(acts, k, a) {
		if (strcmp(json_string_value(json_object_get(a, "op")), "refuse") == 0)
			continue;
		json_object_set_new(a, "op", json_string("refuse"));
		json_object_set_new(a, "detail", json_string(why));
		json_object_set_new(a, "params", json_pack("{s:O}", "locator",
							   json_object_get(json_object_get(a, "params"), "locator")));
	}
	json_array_clear(pp->current);
	char note[700];
	snprintf(note, sizeof note, "nothing moved: %s", why);
	tt_plan_note(pp->plan, note, err);
	return 0;
}

/* What applying compares before one write: the base where the plan saw
 * it, the source (branch head or pin) at the state reviewed. */
static void write_preconditions(promote_plan *pp, tt_plan *fresh, const json_t *a, tt_error *err)
{
	json_t *p = json_object_get(a, "params");
	const char *key = json_string_value(json_object_get(a, "key"));
	const char *kind = json_string_value(json_object_get(a, "kind"));
	tt_buf bd = TT_BUF_INIT;
	short_of(&pp->b1, json_object_get(p, "base_state"));
	tt_buf_printf(&bd, "'%s': base branch moved since the plan was made (%s -> {observed}); ", key, pp->b1.ptr);
	after_base_moved(pp->repo, &bd, key, kind, json_object_get(p, "locator"));
	json_t *bp = json_pack("{s:s,s:O}", "backend", kind, "locator", json_object_get(p, "locator"));
	tt_plan_require(fresh, "base_state", json_object_get(p, "base_state"), key, bp, bd.ptr, err);
	json_decref(bp);
	tt_buf_release(&bd);
	json_t *src = json_object_get(p, "source");
	char what[300];
	snprintf(what, sizeof what, "promote %s", key);
	if (json_object_get(src, "ref")) {
		json_t *rp = json_pack("{s:s,s:O,s:O,s:s}", "backend", kind, "locator", json_object_get(p, "locator"),
				       "ref", json_object_get(src, "ref"), "what", what);
		tt_plan_require(fresh, "ref_head", json_object_get(p, "target_state"), key, rp, NULL, err);
		json_decref(rp);
	} else if (json_object_get(src, "pin")) {
		json_t *pin = json_pack("{s:s,s:O,s:O}", "backend", kind, "locator", json_object_get(p, "locator"),
					"pin", json_object_get(src, "pin"));
		tt_buf pd = TT_BUF_INIT;
		tt_buf_printf(&pd, "promote %s: pin %s no longer names the reviewed state ({observed}); "
			      "`tether repair` recreates a missing pin, a drifted one needs a look "
			      "(`tether verify`) -- re-running the plan refuses it until then", key,
			      json_string_value(json_object_get(json_object_get(src, "pin"), "ref")));
		tt_plan_require(fresh, "pin_state", json_object_get(p, "target_state"), key, pin, pd.ptr, err);
		tt_buf_release(&pd);
		json_decref(pin);
	}
}

/* The plan again from the adjusted actions: its context (with the keys
 * already current), notes and preconditions, then each write's own. */
static tt_plan *rebuilt(promote_plan *pp, json_t *acts, tt_error *err)
{
	tt_plan *plan = pp->plan, *fresh = tt_plan_new("promote");
	json_t *c = tt_plan_context(plan), *cv, *a;
	const char *ck;
	size_t k;
	if (!fresh)
		return NULL;
	json_object_foreach(c, ck, cv)
		tt_plan_set_context(fresh, ck, cv, err);
	tt_plan_set_context(fresh, "current", pp->current, err);
	for (size_t i = 0; i < tt_plan_note_count(plan); i++)
		tt_plan_note(fresh, tt_plan_note_at(plan, i), err);
	for (size_t i = 0; i < tt_plan_precondition_count(plan); i++) {
		tt_plan_precondition_view p;
		tt_plan_precondition_at(plan, i, &p);
		tt_plan_require(fresh, p.kind, p.expected, json_string_value(p.key), p.params, p.detail, err);
	}
	json_array_foreach(acts, k, a)
		tt_plan_action(fresh, json_string_value(json_object_get(a, "op")),
			       json_string_value(json_object_get(a, "key")), json_string_value(json_object_get(a, "kind")),
			       json_string_value(json_object_get(a, "target")),
			       json_string_value(json_object_get(a, "detail")), json_object_get(a, "params"), err);
	json_array_foreach(acts, k, a)
		if (is_write(a))
			write_preconditions(pp, fresh, a, err);
	return fresh;
}

/*
 * Plan `promote`: per object the move of its base branch (fast-forward,
 * merge, or refused), then the rules across objects (whole or nothing,
 * one write per native branch, no trunk regression), then what applying
 * compares.
 */
int tt_engine_plan_promote(tt_repo *repo, const tt_promote_opts *o, tt_plan **out, tt_error *err)
{
	tt_manifest_set at = { 0 }, committed = { 0 };
	const tt_manifest_set *objects = &repo->objects;
	json_t *keys = NULL, *marks = NULL, *acts = NULL;
	promote_plan pp = { .repo = repo, .o = o, .committed = &committed, .b1 = TT_BUF_INIT, .b2 = TT_BUF_INIT };
	char hash[65], msg[128];
	int rc;

	*out = NULL;
	pp.strategy = o->strategy ? o->strategy : "auto";
	if (strcmp(pp.strategy, "auto") != 0 && strcmp(pp.strategy, "ff") != 0 && strcmp(pp.strategy, "merge") != 0)
		return tt_error_set(err, TT_EUSAGE, "unknown promote strategy '%s' (auto, ff, merge)", pp.strategy);
	if (o->rev && (rc = tt_engine_objects_at(repo, o->rev, &at, NULL, err)) < 0)
		goto done;
	if (o->rev)
		objects = &at;
	if ((rc = promote_keys(objects, o, &keys, err)) < 0)
		goto done;
	if (o->message)
		snprintf(msg, sizeof msg, "%s", o->message);
	else
		snprintf(msg, sizeof msg, "tether promote %.8s", o->rev ? o->rev : repo->ws.workspace_id);
	const char *bookmark = repo->ws.bookmark;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) < 0)
		goto done;
	const char *bookmark_commit = bookmark ? json_string_value(json_object_get(marks, bookmark)) : NULL;
	/* What the bookmark's commit records: where a full promotion moves the trunk. */
	if (bookmark_commit && !o->rev && (rc = tt_engine_objects_at(repo, bookmark_commit, &committed, NULL, err)) < 0)
		goto done;
	if ((rc = tt_manifests_hash(hash, objects, err)) < 0)
		goto done;
	if (!(pp.plan = tt_plan_new("promote")) || !(pp.current = json_array())) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = promote_context(repo, o, pp.plan, pp.strategy, msg, hash, bookmark, bookmark_commit, err)) < 0)
		goto done;
	bool on_trunk = tt_engine_on_trunk(repo);
	tt_engine_prepare(repo);
	for (size_t i = 0; i < objects->n; i++) {
		if (keys && !in_keys(keys, objects->items[i].key))
			continue;
		if ((rc = plan_promote_object(&pp, &objects->items[i], on_trunk, err)) < 0)
			goto done;
	}

	/* The rules across objects, on an editable copy of the actions. */
	if (!(acts = actions_of(pp.plan))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (pp.nrefused && !o->nkeys)
		hold_for_refusals(pp.plan, acts, err);
	share_scopes(repo, objects, acts, err);
	size_t writes = 0, k;
	json_t *a;
	json_array_foreach(acts, k, a)
		writes += is_write(a);
	if (!o->nkeys && !o->rev && bookmark && !on_trunk && (writes || json_array_size(pp.current)) &&
	    (rc = refuse_trunk_regression(&pp, acts, marks, bookmark, bookmark_commit, err)) < 0)
		goto done;
	tt_plan *fresh = rebuilt(&pp, acts, err);
	if (!fresh) {
		rc = tt_error_oom(err);
		goto done;
	}
	tt_plan_free(pp.plan);
	pp.plan = fresh;
	if ((rc = err->code) == 0) {
		*out = pp.plan;
		pp.plan = NULL;
	}
done:
	tt_plan_free(pp.plan);
	tt_manifests_release(&at);
	tt_manifests_release(&committed);
	json_decref(keys);
	json_decref(marks);
	json_decref(acts);
	json_decref(pp.current);
	tt_buf_release(&pp.b1);
	tt_buf_release(&pp.b2);
	return rc;
}

/* --- apply ---------------------------------------------------------------- */

typedef struct move_job {
	tt_repo *repo;
	const char *key, *kind, *op;
	json_t *params;         /* borrowed from the plan */
	const char *target;     /* the base branch's name */
	bool checked;           /* a check saw these heads: they must not have moved */
	const char *message;
	json_t *new_state;
	json_t *conflicts;
	tt_error err;
} move_job;

static void move_one(size_t i, void *ctx)
{
	move_job *j = &((move_job *)ctx)[i];
	tt_backend *b;
	j->err = (tt_error)TT_ERROR_INIT;
	if (tt_engine_backend(j->repo, j->kind, &b, &j->err) < 0)
		return;
	json_t *loc = json_object_get(j->params, "locator");
	/* Land what was reviewed (the target state), and move the base only
	 * from the head the plan saw. */
	json_t *reviewed = json_object_get(j->params, "target_state");
	tt_target what = { .kind = TT_TARGET_STATE, .state = reviewed };
	json_t *base = json_object_get(j->params, "base_state");
	tt_expect expected = json_is_object(base) ? (tt_expect){ TT_EXPECT_STATE, base }
						  : (tt_expect){ TT_EXPECT_NONE, NULL };
	if (strcmp(j->op, "fast-forward") == 0) {
		if (!tt_backend_has(b, promote))
			tt_error_set(&j->err, TT_ECAPABILITY, "%s backend cannot promote", j->kind);
		else
			tt_backend_promote(b, loc, &what, &expected, &j->new_state, &j->err);
	} else {
		if (!tt_backend_has(b, merge))
			tt_error_set(&j->err, TT_ECAPABILITY, "%s backend cannot merge", j->kind);
		else
			tt_backend_merge(b, loc, &what, j->message, &expected, &j->new_state, &j->conflicts, &j->err);
	}
	if (j->err.code)
		tt_error_object(&j->err, j->key, j->kind);
}

/* After a check: are the heads it saw still the heads?  The source (the
 * fork) and the base are read again, just before anything moves; the base
 * then moves only from the head the check saw (the conditional move). */
static int moved_after_check(tt_backend *b, move_job *j)
{
	json_t *loc = json_object_get(j->params, "locator"), *now = NULL;
	const char *ref = json_string_value(json_object_get(json_object_get(j->params, "source"), "ref"));
	const json_t *checked[2] = { json_object_get(j->params, "target_state"), json_object_get(j->params, "base_state") };
	for (int side = 0; side < 2; side++) {
		if (!json_is_object(checked[side]) || (side == 0 && !ref))
			continue;
		json_t *bloc = NULL;
		if (side == 1 && (bloc = json_deep_copy(loc)))
			json_object_del(bloc, "at");
		int rc = tt_backend_fingerprint(b, side ? bloc : loc, side ? NULL : ref, &now, &j->err);
		json_decref(bloc);
		if (rc < 0)
			return rc;
		if (!tt_states_equal(b->kind, now, checked[side])) {
			tt_buf x = TT_BUF_INIT, y = TT_BUF_INIT;
			tt_short_state(&x, checked[side]);
			tt_short_state(&y, now);
			tt_error_set(&j->err, TT_EREFMOVED, "%s moved after the check: %s -> %s; nothing moved -- "
				     "promote --check again to check what is there now", side ? j->target : ref,
				     x.ptr, y.ptr);
			tt_buf_release(&x);
			tt_buf_release(&y);
			json_decref(now);
			return TT_EREFMOVED;
		}
		json_decref(now);
		now = NULL;
	}
	return 0;
}

/* Could this job's base move now?  Asked of every job before any moves. */
static void check_one(size_t i, void *ctx)
{
	move_job *j = &((move_job *)ctx)[i];
	tt_backend *b;
	j->err = (tt_error)TT_ERROR_INIT;
	if (tt_engine_backend(j->repo, j->kind, &b, &j->err) < 0)
		goto done;
	tt_target what = { .kind = TT_TARGET_STATE, .state = json_object_get(j->params, "target_state") };
	json_t *base = json_object_get(j->params, "base_state");
	tt_expect expected = json_is_object(base) ? (tt_expect){ TT_EXPECT_STATE, base }
						  : (tt_expect){ TT_EXPECT_NONE, NULL };
	if (j->checked && moved_after_check(b, j) < 0)
		goto done;
	if (!tt_backend_has(b, check_move))
		goto done;
	tt_backend_check_move(b, json_object_get(j->params, "locator"), &what, &expected,
			      strcmp(j->op, "merge") == 0, &j->err);
done:
	if (j->err.code)
		tt_error_object(&j->err, j->key, j->kind);
}

/* move_one, counted for the progress callback. */
static void move_counted(size_t i, void *ctx)
{
	move_job *j = &((move_job *)ctx)[i];
	move_one(i, ctx);
	tt_engine_progress_step(j->repo, j->key);
}

/* The fast-forwards after the first (see tt_engine_apply_promote). */
typedef struct following {
	move_job *jobs;
	size_t lead;
} following;

static void move_following(size_t i, void *ctx)
{
	following *f = ctx;
	if (i != f->lead)
		move_counted(i, f->jobs);
}

/* What applying `promote` carries from step to step. */
typedef struct promote_apply {
	tt_repo *repo;
	const tt_plan *plan;
	json_t *ctx; /* borrowed: the plan's context */
	/* the result's parts, key -> state or why (skipped: keys) */
	json_t *ff, *merged, *skipped, *refused, *held, *conflicts, *kept, *failed;
	json_t *pre, *wstext, *plan_json;
	json_t *bases;		 /* key -> the base state the plan saw */
	move_job *jobs;		 /* the merges, then the fast-forwards */
	size_t nmerge, nff;
	char op_id[TT_OP_ID_LEN + 1]; /* "": nothing journalled */
	const char *trunk_moved;      /* borrowed: the commit the trunk moved to */
	char *trunk_held;	      /* why the trunk did not move */
} promote_apply;

/* What the plan refused and held, and the notes of objects it skipped. */
static void promote_set_aside(promote_apply *pa)
{
	size_t na = tt_plan_action_count(pa->plan);
	for (size_t i = 0; i < na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(pa->plan, i, &a);
		if (strcmp(a.op, "refuse") == 0)
			json_object_set_new(pa->refused, a.key, json_string(a.detail));
		else if (strcmp(a.op, "hold") == 0)
			json_object_set_new(pa->held, a.key, json_string(a.detail));
	}
	for (size_t i = 0; i < tt_plan_note_count(pa->plan); i++) {
		const char *note = tt_plan_note_at(pa->plan, i);
		const char *sep = strstr(note, ": ");
		if (sep && (strstr(sep, "already at the target") || strstr(sep, "nothing to promote")))
			json_array_append_new(pa->skipped, json_stringn(note, (size_t)(sep - note)));
	}
}

/* A move job per merge and fast-forward: merges first (they are what can
 * still stop), then fast-forwards. */
static int promote_jobs(promote_apply *pa, bool checked, tt_error *err)
{
	size_t na = tt_plan_action_count(pa->plan);
	const char *message = json_string_value(json_object_get(pa->ctx, "message"));
	if (!(pa->jobs = tt_calloc(na ? na : 1, sizeof *pa->jobs)))
		return tt_error_oom(err);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < na; i++) {
			tt_plan_action_view a;
			tt_plan_action_at(pa->plan, i, &a);
			if (strcmp(a.op, pass == 0 ? "merge" : "fast-forward") != 0)
				continue;
			move_job *j = &pa->jobs[pa->nmerge + pa->nff];
			*j = (move_job){ pa->repo, a.key, a.kind, pass == 0 ? "merge" : "fast-forward", a.params,
					 a.target, checked, message, NULL, NULL, TT_ERROR_INIT };
			json_object_set(pa->bases, a.key, json_object_get(a.params, "base_state"));
			if (pass == 0)
				pa->nmerge++;
			else
				pa->nff++;
		}
	return 0;
}

/* Whole or not at all: what would stop one object (a lock file left
 * behind, a dirty checkout) is found before any object moves; then
 * nothing moves, and there is nothing to journal. */
static int check_before_moving(promote_apply *pa, tt_error *err)
{
	size_t n = pa->nmerge + pa->nff;
	int rc;
	tt_engine_prepare(pa->repo);
	if (n && (rc = tt_engine_fanout(n, check_one, pa->jobs, err)) < 0)
		return rc;
	tt_buf names = TT_BUF_INIT;
	for (size_t i = 0; i < n; i++)
		if (pa->jobs[i].err.code) {
			tt_buf_printf(&names, "%s%s", names.len ? ", " : "", pa->jobs[i].key);
			json_object_set_new(pa->jobs[i].err.code == TT_EREFMOVED ? pa->refused : pa->failed,
					    pa->jobs[i].key, json_string(tt_error_text(&pa->jobs[i].err)));
		}
	for (size_t i = 0; names.len && i < n; i++)
		if (!pa->jobs[i].err.code) {
			char *h = tt_asprintf("would %s: held because %s cannot move now, and a bookmark "
					      "lands whole or not at all", pa->jobs[i].op, names.ptr);
			json_object_set_new(pa->held, pa->jobs[i].key, json_string(h ? h : ""));
			free(h);
		}
	for (size_t i = 0; i < n; i++)
		tt_error_clear(&pa->jobs[i].err);
	if (names.len)
		pa->nmerge = pa->nff = 0;
	tt_buf_release(&names);
	return 0;
}

/* The journal's entry: the plan, with the workspace and the bases as its `pre`. */
static int journal_promote(promote_apply *pa, tt_error *err)
{
	tt_buf wb = TT_BUF_INIT;
	int rc = tt_workspace_render(&wb, &pa->repo->ws, err);
	pa->wstext = rc == 0 ? json_stringn(wb.ptr, wb.len) : NULL;
	tt_buf_release(&wb);
	if (rc < 0)
		return rc;
	pa->pre = json_pack("{s:O,s:O}", "workspace", pa->wstext, "base_states", pa->bases);
	if (!pa->pre || !(pa->plan_json = tt_plan_to_object(pa->plan, err)) ||
	    (rc = tt_oplog_begin(pa->repo->root, "promote", pa->plan_json, pa->pre, NULL, pa->op_id, err)) < 0)
		return rc < 0 ? rc : err->code ? err->code : tt_error_oom(err);
	tt_fault("promote:after-journal");
	return 0;
}

/* The merges, side by side; *stopped: one did not land (a conflict, a
 * base that moved, a failure), each recorded as such. */
static int run_merges(promote_apply *pa, bool *stopped, tt_error *err)
{
	*stopped = false;
	tt_engine_prepare(pa->repo);
	tt_engine_progress_begin(pa->repo, "merge", pa->nmerge);
	int rc = tt_engine_fanout(pa->nmerge, move_counted, pa->jobs, err);
	tt_engine_progress_end(pa->repo);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < pa->nmerge; i++) {
		move_job *j = &pa->jobs[i];
		if (j->new_state)
			continue;
		*stopped = true;
		if (j->err.code == TT_ECONFLICT) {
			json_object_set(pa->conflicts, j->key, j->conflicts ? j->conflicts : json_array());
			json_object_set_new(pa->refused, j->key, json_string(tt_error_text(&j->err)));
		} else if (j->err.code == TT_EREFMOVED) {
			json_object_set_new(pa->refused, j->key, json_string(tt_error_text(&j->err)));
		} else {
			json_object_set_new(pa->failed, j->key, json_string(tt_error_text(&j->err)));
		}
	}
	return 0;
}

/* A merge did not land: every fast-forward is held. */
static void hold_fast_forwards(promote_apply *pa)
{
	tt_buf names = TT_BUF_INIT;
	for (size_t i = 0; i < pa->nmerge; i++)
		if (!pa->jobs[i].new_state)
			tt_buf_printf(&names, "%s%s", names.len ? ", " : "", pa->jobs[i].key);
	for (size_t i = pa->nmerge; i < pa->nmerge + pa->nff; i++) {
		char *h = tt_asprintf("would fast-forward: held because the merge of %s did not land, and a "
				      "bookmark lands whole or not at all", names.ptr);
		json_object_set_new(pa->held, pa->jobs[i].key, json_string(h ? h : ""));
		free(h);
	}
	tt_buf_release(&names);
}

/* The fast-forward that goes first: the first on a system whose move is
 * conditional, else the first (an index among the fast-forwards). */
static size_t lead_fast_forward(promote_apply *pa)
{
	for (size_t i = 0; i < pa->nff; i++) {
		move_job *j = &pa->jobs[pa->nmerge + i];
		const tt_manifest *m = tt_manifests_find(&pa->repo->objects, j->key);
		if (m && strcmp(m->kind, j->kind) == 0 && (tt_engine_caps(pa->repo, m) & TT_CAP_CONDITIONAL_REF))
			return i;
	}
	return 0;
}

/*
 * One fast-forward goes first, alone - on a system whose move is
 * conditional where there is one - and the rest only once it landed: of
 * promotes racing from the same bases exactly one gets past it, and the
 * others move nothing.
 */
static int run_fast_forwards(promote_apply *pa, tt_error *err)
{
	move_job *ffs = pa->jobs + pa->nmerge;
	int rc = 0;
	tt_fault("promote:before-fast-forwards");
	size_t lead = lead_fast_forward(pa);
	following rest = { ffs, lead };
	tt_engine_progress_begin(pa->repo, "promote", pa->nff);
	move_counted(lead, ffs);
	if (ffs[lead].new_state && pa->nff > 1)
		rc = tt_engine_fanout(pa->nff, move_following, &rest, err);
	tt_engine_progress_end(pa->repo);
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < pa->nff; i++) {
		move_job *j = &ffs[i];
		if (j->new_state)
			continue;
		if (i != lead && !ffs[lead].new_state) {
			char *h = tt_asprintf("would fast-forward: held because %s did not move, and a bookmark "
					      "lands whole or not at all", ffs[lead].key);
			json_object_set_new(pa->held, j->key, json_string(h ? h : ""));
			free(h);
			continue;
		}
		json_object_set_new(j->err.code == TT_EREFMOVED ? pa->refused : pa->failed, j->key,
				    json_string(tt_error_text(&j->err)));
	}
	return 0;
}

/* Each move that landed, journalled and among the results; then each
 * sharer of a scope as its first member. */
static void record_moves(promote_apply *pa)
{
	size_t na = tt_plan_action_count(pa->plan);
	for (size_t i = 0; i < pa->nmerge + pa->nff; i++) {
		move_job *j = &pa->jobs[i];
		if (!j->new_state)
			continue;
		tt_fault("promote:after-move");
		tt_error ignored = TT_ERROR_INIT;
		json_t *d = json_pack("{s:s,s:O}", "key", j->key, "state", j->new_state);
		tt_oplog_progress(pa->repo->root, pa->op_id, j->op, d, &ignored);
		json_decref(d);
		tt_error_clear(&ignored);
		json_object_set(strcmp(j->op, "merge") == 0 ? pa->merged : pa->ff, j->key, j->new_state);
	}
	for (size_t i = 0; i < na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(pa->plan, i, &a);
		if (strcmp(a.op, "share") != 0)
			continue;
		const char *with = json_string_value(json_object_get(a.params, "with"));
		json_t *s = with ? json_object_get(pa->ff, with) : NULL;
		if (s)
			json_object_set(pa->ff, a.key, s);
		else if (with && (s = json_object_get(pa->merged, with)))
			json_object_set(pa->merged, a.key, s);
	}
}

/* The fork now lags the base: reset it onto the merge result unless it
 * gained writes since the plan read it.  false: left as it is (kept). */
static bool reset_fork_onto(promote_apply *pa, const tt_manifest *m, const char *key, json_t *state, json_t *wr)
{
	tt_backend *b;
	char *ref = NULL;
	tt_error ferr = TT_ERROR_INIT;
	json_t *reviewed = NULL;
	bool reset = true;
	for (size_t i = 0; i < pa->nmerge; i++)
		if (strcmp(pa->jobs[i].key, key) == 0)
			reviewed = json_object_get(pa->jobs[i].params, "target_state");
	tt_target src = { .kind = TT_TARGET_STATE, .state = state };
	tt_expect exp = reviewed ? (tt_expect){ TT_EXPECT_STATE, reviewed } : (tt_expect){ TT_EXPECT_NONE, NULL };
	if (tt_engine_backend(pa->repo, m->kind, &b, &ferr) == 0 &&
	    tt_backend_fork(b, m->locator, &src, json_string_value(wr), &exp, &ref, &ferr) == 0) {
		json_object_set_new(pa->repo->ws.working_refs, key, json_string(ref));
	} else {
		char *why = tt_asprintf("%s was not reset onto the merge result (%s); left as it is -- "
					"commit its writes and promote again", json_string_value(wr),
					tt_error_text(&ferr));
		json_object_set_new(pa->kept, key, json_string(why ? why : ""));
		free(why);
		reset = false;
	}
	free(ref);
	tt_error_clear(&ferr);
	return reset;
}

/* The working branches after a merge, and the fork points and snapshots
 * of every object that moved; the workspace saved when it changed. */
static int settle_workspace(promote_apply *pa, tt_error *err)
{
	tt_workspace *ws = &pa->repo->ws;
	bool touched = false;
	json_t *results = json_object();
	json_object_update(results, pa->ff);
	json_object_update(results, pa->merged);
	const char *key;
	json_t *state;
	json_object_foreach(results, key, state) {
		const tt_manifest *m = tt_manifests_find(&pa->repo->objects, key);
		json_t *wr = json_object_get(ws->working_refs, key);
		if (json_object_get(pa->merged, key) && m && json_is_string(wr) &&
		    !reset_fork_onto(pa, m, key, state, wr))
			continue;
		if (json_object_get(ws->working_refs, key) || json_object_get(ws->fork_points, key)) {
			json_object_set(ws->fork_points, key, state);
			json_object_set(ws->last_snapshot, key, state);
			touched = true;
		}
	}
	json_decref(results);
	return touched ? tt_workspace_save(ws, pa->repo->root, err) : 0;
}

/* Did the whole bookmark fast-forward, so that the trunk follows? */
static bool whole_bookmark_landed(promote_apply *pa)
{
	json_t *current = json_object_get(pa->ctx, "current");
	return (json_object_size(pa->ff) || json_array_size(current)) && pa->repo->ws.bookmark &&
	       !tt_engine_on_trunk(pa->repo) && json_is_null(json_object_get(pa->ctx, "rev")) &&
	       !json_is_true(json_object_get(pa->ctx, "subset")) && !json_object_size(pa->refused) &&
	       !json_object_size(pa->held) && !json_object_size(pa->merged) && !json_object_size(pa->failed);
}

/* The result, as printed and journalled (new reference; NULL: out of memory). */
static json_t *promote_result(promote_apply *pa)
{
	return json_pack("{s:O,s:O,s:O,s:O,s:O,s:O,s:O,s:s?,s:s?,s:O}", "fast_forwarded", pa->ff, "merged",
			 pa->merged, "skipped", pa->skipped, "refused", pa->refused, "held", pa->held, "conflicts",
			 pa->conflicts, "kept_forks", pa->kept, "trunk_moved", pa->trunk_moved, "trunk_held",
			 pa->trunk_held, "failed", pa->failed);
}

/* The dataset side: the trunk bookmark moves to the commit the plan
 * reviewed, never backwards; then the result (*out). */
static int move_trunk(promote_apply *pa, json_t **out, tt_error *err)
{
	json_t *marks = NULL;
	const char *trunk = tt_config_trunk(&pa->repo->config);
	int rc;
	if ((rc = tt_vcs_bookmarks(pa->repo->vcs, &marks, err)) < 0)
		return rc;
	const char *commit = json_string_value(json_object_get(pa->ctx, "bookmark_commit"));
	if (!commit)
		commit = json_string_value(json_object_get(marks, pa->repo->ws.bookmark));
	const char *tc = json_string_value(json_object_get(marks, trunk));
	if (commit && tc && strcmp(commit, tc) == 0)
		commit = NULL;
	bool ok = true;
	if (commit && tc && (rc = tt_vcs_is_ancestor(pa->repo->vcs, tc, commit, &ok, err)) < 0)
		goto done;
	if (commit && ok) {
		if ((rc = tt_vcs_bookmark_set(pa->repo->vcs, trunk, commit, err)) < 0)
			goto done;
		pa->trunk_moved = commit;
	} else if (commit) {
		pa->trunk_held = tt_asprintf("%s moved to %.12s since the plan; not moved backwards -- merge the "
					     "manifests and promote again", trunk, tc);
	}
	*out = promote_result(pa);
done:
	json_decref(marks);
	return rc;
}

static void promote_apply_release(promote_apply *pa)
{
	for (size_t i = 0; pa->jobs && i < pa->nmerge + pa->nff; i++) {
		json_decref(pa->jobs[i].new_state);
		json_decref(pa->jobs[i].conflicts);
		tt_error_clear(&pa->jobs[i].err);
	}
	free(pa->jobs);
	free(pa->trunk_held);
	json_decref(pa->ff);
	json_decref(pa->merged);
	json_decref(pa->skipped);
	json_decref(pa->refused);
	json_decref(pa->held);
	json_decref(pa->conflicts);
	json_decref(pa->kept);
	json_decref(pa->failed);
	json_decref(pa->pre);
	json_decref(pa->wstext);
	json_decref(pa->plan_json);
	json_decref(pa->bases);
}

/*
 * Apply `promote`: what the plan set aside, a check that every base can
 * move (else none does), the journal's entry, the merges, then the
 * fast-forwards (held when a merge did not land), the workspace after
 * them, and the trunk when the whole bookmark landed.
 */
int tt_engine_apply_promote(tt_repo *repo, const tt_plan *plan, bool verify, json_t **out, tt_error *err)
{
	json_t *ctx = tt_plan_context(plan);
	promote_apply pa = { .repo = repo, .plan = plan, .ctx = ctx, .ff = json_object(), .merged = json_object(),
			     .skipped = json_array(), .refused = json_object(), .held = json_object(),
			     .conflicts = json_object(), .kept = json_object(), .failed = json_object(),
			     .bases = json_object() };
	bool stopped;
	int rc = 0;

	*out = NULL;
	if (strcmp(tt_plan_command(plan), "promote") != 0) {
		rc = tt_error_set(err, TT_ECONFIG, "expected a promote plan, got '%s'", tt_plan_command(plan));
		goto done;
	}
	promote_set_aside(&pa);
	if (verify && (rc = tt_engine_check_preconditions(repo, plan, "promote", err)) < 0)
		goto done;
	json_t *check = json_object_get(ctx, "check");
	bool checked = json_is_object(check);
	if ((rc = promote_jobs(&pa, checked, err)) < 0 || (rc = check_before_moving(&pa, err)) < 0)
		goto done;
	if (pa.nmerge + pa.nff && (rc = journal_promote(&pa, err)) < 0)
		goto done;
	if ((rc = run_merges(&pa, &stopped, err)) < 0)
		goto done;
	if (pa.nff && stopped)
		hold_fast_forwards(&pa);
	else if (pa.nff && (rc = run_fast_forwards(&pa, err)) < 0)
		goto done;
	record_moves(&pa);
	if ((rc = settle_workspace(&pa, err)) < 0)
		goto done;
	if (whole_bookmark_landed(&pa)) {
		if ((rc = move_trunk(&pa, out, err)) < 0)
			goto done;
	} else {
		*out = promote_result(&pa);
	}
	if (*out && checked)
		json_object_set(*out, "check", check);
	if (pa.op_id[0]) {
		tt_error ignored = TT_ERROR_INIT;
		tt_oplog_done(repo->root, pa.op_id, *out, NULL, NULL, &ignored);
		tt_error_clear(&ignored);
	}
	if (!*out)
		rc = tt_error_oom(err);
done:
	promote_apply_release(&pa);
	return rc;
}

static int plan_promote(tt_repo *repo, void *ctx, bool applying, tt_plan **out, tt_error *err)
{
	(void)applying;
	return tt_engine_plan_promote(repo, ctx, out, err);
}

static int apply_promote(tt_repo *repo, void *ctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err)
{
	(void)ctx;
	return tt_engine_apply_promote(repo, plan, saved, out, err);
}

static int gate_promote(tt_repo *repo, void *ctx, tt_plan *plan, tt_error *err)
{
	return tt_engine_promote_check(repo, ctx, plan, err);
}

static const tt_planned_cmd promote_cmd = {
	.command = "promote",
	.locks = TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY,
	.plan = plan_promote,
	.gate = gate_promote,
	.apply = apply_promote,
};

int tt_engine_repo_promote(tt_repo *repo, const tt_promote_opts *o, const char *from_plan, size_t from_len,
		    char **plan_json, char **plan_text, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(o, tt_promote_opts, TT_PROMOTE_OPTS_VERSION, err);
	tt_planned_run run = { .dry = plan_json != NULL, .from = from_plan, .from_len = from_len,
			       .plan_json = plan_json, .plan_text = plan_text, .out = out };
	return tt_engine_run_planned(repo, &promote_cmd, (void *)o, &run, err);
}
