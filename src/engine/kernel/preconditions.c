/*
 * engine/kernel/preconditions.c - the drift contract in one place: before a plan's
 * first action, re-read everything its preconditions recorded (where the
 * checkout is, which manifests, which heads) and refuse with the plan's own
 * words on the first mismatch.  Races during the apply itself are handled
 * per action (conditional moves), not here.
 */
#include "engine/kernel/preconditions.h"

#include <stdlib.h>
#include <string.h>

#include "core/plan.h"
#include "backends/dispatch.h"
#include "engine/kernel/checkouts.h"
#include "engine/kernel/context.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/state.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

static int stale(const tt_plan_precondition_view *pre, const char *observed, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	const char *detail = pre->detail && *pre->detail ? pre->detail : NULL;
	if (!detail)
		tt_buf_printf(&b, "%s changed since the plan was made", pre->kind);
	else
		for (const char *p = detail; *p;) {
			const char *hit = strstr(p, "{observed}");
			size_t n = hit ? (size_t)(hit - p) : strlen(p);
			tt_buf_put(&b, p, n);
			if (!hit)
				break;
			tt_buf_puts(&b, observed ? observed : "None");
			p = hit + strlen("{observed}");
		}
	if (!strstr(b.ptr, "re-run"))
		tt_buf_puts(&b, "; re-run the plan");
	int rc = tt_error_set(err, TT_ESTALEPLAN, "%s", b.ptr);
	tt_buf_release(&b);
	return rc;
}

static const char *what_of(const tt_plan_precondition_view *pre)
{
	const char *w = json_string_value(json_object_get(pre->params, "what"));
	if (w && *w)
		return w;
	w = json_string_value(pre->key);
	return w && *w ? w : "plan";
}

/* The backend and locator a ref precondition names. */
static int ref_target(tt_repo *repo, const tt_plan_precondition_view *pre, tt_backend **b,
		      json_t **loc, const char **ref, tt_error *err)
{
	const char *kind = json_string_value(json_object_get(pre->params, "backend"));
	*loc = json_object_get(pre->params, "locator");
	*ref = json_string_value(json_object_get(pre->params, "ref"));
	if (!kind || !json_is_object(*loc) || !*ref)
		return tt_error_set(err, TT_ESTALEPLAN, "a %s precondition without backend, locator and "
				    "ref; re-run the plan", pre->kind);
	return tt_engine_backend(repo, kind, b, err);
}

/* Each check re-reads what one kind of precondition recorded: 0 when it
 * still holds, the plan's own words (stale) when it does not. */

static int check_workspace_id(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	const char *want = json_string_value(pre->expected);
	if (want && strcmp(want, repo->ws.workspace_id) != 0)
		return stale(pre, repo->ws.workspace_id, err);
	return 0;
}

/* The workspace's bookmark, and the VCS's agreeing with it. */
static int check_workspace_bookmark(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	const char *want = json_string_value(pre->expected), *mine = repo->ws.bookmark;
	char *observed = NULL;
	int rc = 0;
	if ((want == NULL) != (mine == NULL) || (want && strcmp(want, mine) != 0)) {
		rc = stale(pre, mine ? mine : "no bookmark", err);
	} else if (want) {
		if ((rc = tt_vcs_current_bookmark(repo->vcs, &observed, err)) == 0 &&
		    !(observed && strcmp(observed, want) == 0))
			rc = stale(pre, observed ? observed : "no bookmark", err);
	}
	free(observed);
	return rc;
}

/* The manifests' hash, here or at the revision the plan read them at. */
static int check_manifest_hash(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	const char *want = json_string_value(pre->expected);
	char hash[65];
	const char *rev = json_string_value(json_object_get(pre->params, "rev"));
	int rc;
	if (rev) {
		tt_manifest_set at;
		if ((rc = tt_engine_objects_at(repo, rev, &at, NULL, err)) == 0) {
			rc = tt_manifests_hash(hash, &at, err);
			tt_manifests_release(&at);
		}
	} else {
		rc = tt_manifests_hash(hash, &repo->objects, err);
	}
	if (rc == 0 && (!want || strcmp(want, hash) != 0))
		rc = stale(pre, hash, err);
	return rc;
}

static int check_history_digest(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	const char *want = json_string_value(pre->expected);
	char digest[17];
	int rc;
	if ((rc = tt_vcs_history_digest(repo->vcs, digest, err)) == 0 && (!want || strcmp(want, digest) != 0))
		rc = stale(pre, digest, err);
	return rc;
}

static int check_vcs_head(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	const char *want = json_string_value(pre->expected);
	char *observed = tt_engine_vcs_head(repo);
	int rc = 0;
	if ((want == NULL) != (observed == NULL) || (want && strcmp(want, observed) != 0))
		rc = stale(pre, observed, err);
	free(observed);
	return rc;
}

/* No other checkout has come to hold the bookmark. */
static int check_no_new_holders(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	const char *bm = json_string_value(json_object_get(pre->params, "bookmark"));
	json_t *holders = NULL;
	int rc;
	if ((rc = tt_engine_bookmark_holders(repo, bm, &holders, err)) == 0 && json_array_size(holders)) {
		tt_buf names = TT_BUF_INIT;
		size_t k;
		json_t *h;
		json_array_foreach(holders, k, h)
			tt_buf_printf(&names, "%s%s", k ? ", " : "", json_string_value(h));
		rc = stale(pre, names.ptr, err);
		tt_buf_release(&names);
	}
	json_decref(holders);
	return rc;
}

/* A bookmark's head in the VCS (a null bookmark: the checkout is on none). */
static int check_bookmark_head(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	const char *want = json_string_value(pre->expected);
	json_t *bm = json_object_get(pre->params, "bookmark");
	int rc = 0;
	if (!bm)
		return stale(pre, "no bookmark named", err);
	if (json_is_null(bm)) {
		if (!json_is_null(pre->expected) || repo->ws.bookmark)
			rc = stale(pre, repo->ws.bookmark ? repo->ws.bookmark : want, err);
		return rc;
	}
	json_t *marks = NULL;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) == 0) {
		const char *now = json_string_value(json_object_get(marks, json_string_value(bm)));
		if ((want == NULL) != (now == NULL) || (want && strcmp(want, now) != 0))
			rc = stale(pre, now ? now : "gone", err);
	}
	json_decref(marks);
	return rc;
}

static int check_config_version(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	if (!json_is_integer(pre->expected) ||
	    json_integer_value(pre->expected) != (json_int_t)repo->config.version) {
		char now[24];
		snprintf(now, sizeof now, "%d", repo->config.version);
		return stale(pre, now, err);
	}
	return 0;
}

/* ref_absent / ref_present: whether a working ref is listed. */
static int check_ref_listed(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	tt_backend *b;
	json_t *loc, *refs = NULL;
	const char *ref;
	bool absent = strcmp(pre->kind, "ref_absent") == 0;
	int rc;
	if ((rc = ref_target(repo, pre, &b, &loc, &ref, err)) == 0 && tt_backend_has(b, list_working_refs) &&
	    (rc = tt_backend_list_working_refs(b, loc, &refs, err)) == 0) {
		bool found = false;
		size_t k;
		json_t *r;
		json_array_foreach(refs, k, r)
			found |= strcmp(json_string_value(r), ref) == 0;
		if (absent && found)
			rc = stale(pre, ref, err);
		else if (!absent && !found)
			rc = tt_error_set(err, TT_ESTALEPLAN, "%s: %s is gone since the plan was "
					  "made; re-run the plan", what_of(pre), ref);
	}
	json_decref(refs);
	return rc;
}

/* A ref's head: the state the plan read, or still unreadable when the
 * plan could not read it. */
static int check_ref_head(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	tt_backend *b;
	json_t *loc, *now = NULL;
	const char *ref;
	int rc;
	if ((rc = ref_target(repo, pre, &b, &loc, &ref, err)) == 0) {
		tt_error none = TT_ERROR_INIT;
		if (json_is_null(pre->expected)) {
			/* The plan could not read the head; if it reads now, the
			 * plan should be made again with it in view. */
			if (tt_backend_fingerprint(b, loc, ref, &now, &none) == 0) {
				tt_buf s = TT_BUF_INIT;
				tt_short_state(&s, now);
				rc = tt_error_set(err, TT_ESTALEPLAN, "%s: the plan could not read %s's "
						  "head, but it reads now (%s); re-run the plan to "
						  "review it", what_of(pre), ref, s.ptr);
				tt_buf_release(&s);
			}
		} else if ((rc = tt_backend_fingerprint(b, loc, ref, &now, err)) == 0 &&
			   !tt_states_equal(b->kind, now, pre->expected)) {
			tt_buf x = TT_BUF_INIT, y = TT_BUF_INIT;
			tt_short_state(&x, pre->expected);
			tt_short_state(&y, now);
			rc = tt_error_set(err, TT_ESTALEPLAN, "%s: %s moved since the plan was made "
					  "(%s -> %s); re-run the plan", what_of(pre), ref, x.ptr, y.ptr);
			tt_buf_release(&x);
			tt_buf_release(&y);
		}
		tt_error_clear(&none);
	}
	json_decref(now);
	return rc;
}

/* A ref still builds on the state the plan reviewed. */
static int check_ref_descends(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	tt_backend *b;
	json_t *loc;
	const char *ref;
	int answer = -1;
	int rc;
	if ((rc = ref_target(repo, pre, &b, &loc, &ref, err)) == 0) {
		tt_target t = { .kind = TT_TARGET_REF, .ref = ref };
		tt_error none = TT_ERROR_INIT;
		if (!tt_backend_has(b, ancestor_of) || tt_backend_ancestor_of(b, loc, pre->expected, &t, &answer, &none) < 0)
			answer = -1;
		tt_error_clear(&none);
		if (answer != 1)
			rc = tt_error_set(err, TT_ESTALEPLAN, answer == 0
					  ? "%s: %s no longer builds on the state the plan reviewed; re-run the plan"
					  : "%s: cannot tell whether %s still builds on the state the plan reviewed; re-run the plan",
					  what_of(pre), ref);
	}
	return rc;
}

/* The base branch's state (the locator without its working "at"). */
static int check_base_state(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	tt_backend *b;
	json_t *loc = json_object_get(pre->params, "locator"), *now = NULL, *base = NULL;
	const char *kind = json_string_value(json_object_get(pre->params, "backend"));
	int rc;
	if (!kind || !json_is_object(loc)) {
		rc = stale(pre, "no backend named", err);
	} else if ((rc = tt_engine_backend(repo, kind, &b, err)) == 0) {
		base = json_deep_copy(loc);
		json_object_del(base, "at");
		if ((rc = tt_backend_fingerprint(b, base, NULL, &now, err)) == 0 &&
		    !tt_states_equal(b->kind, now, pre->expected)) {
			tt_buf s = TT_BUF_INIT;
			tt_short_state(&s, now);
			rc = stale(pre, s.ptr, err);
			tt_buf_release(&s);
		}
	}
	json_decref(now);
	json_decref(base);
	return rc;
}

/* A pin still verifies, for a backend that can tell. */
static int check_pin_state(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	tt_backend *b;
	json_t *loc = json_object_get(pre->params, "locator"), *pj = json_object_get(pre->params, "pin");
	const char *kind = json_string_value(json_object_get(pre->params, "backend"));
	int rc;
	if (!kind || !json_is_object(loc) || !json_is_object(pj))
		return stale(pre, "no pin named", err);
	if ((rc = tt_engine_backend(repo, kind, &b, err)) == 0 && tt_backend_has(b, verify)) {
		tt_pin pin = { 0 };
		snprintf(pin.id, sizeof pin.id, "%s", json_string_value(json_object_get(pj, "id")));
		snprintf(pin.ref, sizeof pin.ref, "%s", json_string_value(json_object_get(pj, "ref")));
		tt_verify_status st = TT_VERIFY_UNKNOWN;
		char *msg = NULL;
		if ((rc = tt_backend_verify(b, loc, pre->expected, &pin, false, &st, &msg, err)) == 0 &&
		    st != TT_VERIFY_OK) {
			char *o = tt_asprintf("%s: %s", tt_verify_status_name(st), msg ? msg : "");
			rc = stale(pre, o, err);
			free(o);
		}
		free(msg);
	}
	return rc;
}

/* A created store gc is about to remove: nothing may remain in it but
 * tether's own refs the same plan deletes first (ignoring); the delete
 * itself asks once more with nothing ignored. */
static int check_store_empty(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	tt_backend *b;
	json_t *loc = json_object_get(pre->params, "locator");
	json_t *ignoring = json_object_get(pre->params, "ignoring");
	const char *kind = json_string_value(json_object_get(pre->params, "backend"));
	int empty = -1;
	int rc;
	if (!kind || !json_is_object(loc) || (ignoring && !json_is_null(ignoring) && !json_is_array(ignoring)))
		return stale(pre, "no store named", err);
	if ((rc = tt_engine_backend(repo, kind, &b, err)) == 0) {
		if (!tt_backend_has(b, is_ref_empty))
			rc = stale(pre, "cannot tell", err);
		else if ((rc = tt_backend_is_ref_empty(b, loc, json_is_array(ignoring) ? ignoring : NULL, &empty,
						       err)) == 0 && empty != 1)
			rc = stale(pre, empty < 0 ? "cannot tell" : "not empty", err);
	}
	return rc;
}

typedef int (*precondition_check)(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err);

static const struct {
	const char *kind;
	precondition_check check;
} checks[] = {
	{ "workspace_id", check_workspace_id },
	{ "workspace_bookmark", check_workspace_bookmark },
	{ "manifest_hash", check_manifest_hash },
	{ "history_digest", check_history_digest },
	{ "vcs_head", check_vcs_head },
	{ "no_new_holders", check_no_new_holders },
	{ "bookmark_head", check_bookmark_head },
	{ "config_version", check_config_version },
	{ "ref_absent", check_ref_listed },
	{ "ref_present", check_ref_listed },
	{ "ref_head", check_ref_head },
	{ "ref_descends", check_ref_descends },
	{ "base_state", check_base_state },
	{ "pin_state", check_pin_state },
	{ "store_empty", check_store_empty },
};

/* One precondition, by its kind; one this tether does not know is refused. */
static int check_precondition(tt_repo *repo, const tt_plan_precondition_view *pre, tt_error *err)
{
	for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
		if (strcmp(pre->kind, checks[i].kind) == 0)
			return checks[i].check(repo, pre, err);
	return tt_error_set(err, TT_ESTALEPLAN, "this tether cannot check a '%s' precondition; "
			    "re-run the plan with the same tether", pre->kind);
}

int tt_engine_check_preconditions(tt_repo *repo, const tt_plan *plan, const char *command,
				  tt_error *err)
{
	int rc;
	if (strcmp(tt_plan_command(plan), command) != 0)
		return tt_error_set(err, TT_ECONFIG, "expected a %s plan, got '%s'", command,
				    tt_plan_command(plan));
	if ((rc = tt_plan_check(plan, err)) < 0)
		return rc;
	for (size_t i = 0; i < tt_plan_precondition_count(plan); i++) {
		tt_plan_precondition_view pre;
		tt_plan_precondition_at(plan, i, &pre);
		if ((rc = check_precondition(repo, &pre, err)) < 0)
			return rc;
	}
	return 0;
}
