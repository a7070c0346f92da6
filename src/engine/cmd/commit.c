/*
 * engine/cmd/commit.c - `commit`: pin (or record) every changed object, write
 * the manifests and listings, and commit them to the dataset's VCS, moving
 * the bookmark.
 *
 * The plan is the read-only half (what would be pinned or recorded, with
 * the preconditions that bind it to this checkout, bookmark and manifest
 * set); applying it journals the operation before the first store write,
 * compensates what it did if anything fails before the VCS commit lands, and
 * keeps everything (finishing as a commit) once it has.
 */
#include "engine/cmd/commit.h"

#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/index.h"
#include "core/layout.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/cmd/snapshot.h"
#include "engine/kernel/context.h"
#include "engine/kernel/preconditions.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/resume.h"
#include "engine/kernel/select.h"
#include "engine/kernel/state.h"
#include "engine/kernel/planned.h"
#include "util/fault.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

/* The paths a dataset commit hands the VCS: the committed surface. */
static json_t *vcs_paths(tt_repo *repo)
{
	const char *rel = tt_engine_dataset_rel(repo);
	json_t *out = json_array();
	char *p;
#define ADD(fmt) if ((p = *rel ? tt_asprintf("%s/" fmt, rel) : tt_strdup(fmt))) { \
		json_array_append_new(out, json_string(p)); free(p); }
	ADD(TT_DIR "/" TT_OBJECTS_DIR)
	ADD(TT_DIR "/.gitignore")
	ADD(TT_CONFIG_FILENAME)
	char *listings = tt_tether_path(repo->root, TT_LISTINGS_DIR);
	if (listings && tt_is_dir(listings))
		ADD(TT_DIR "/" TT_LISTINGS_DIR)
	free(listings);
#undef ADD
	return out;
}

/* The listing name of m's recorded state ("" when it has no state or the
 * kind keeps no listings). */
static int state_listing_name(tt_repo *repo, const tt_manifest *m, char name[TT_LISTING_NAME_MAX],
			      tt_error *err)
{
	tt_backend *b;
	json_t *identity = NULL, *content = NULL;
	int rc = 0;
	name[0] = '\0';
	if (!m->state || tt_engine_backend(repo, m->kind, &b, err) < 0) {
		tt_error_clear(err);
		return 0;
	}
	if ((rc = tt_backend_identity(b, m->locator, &identity, err)) == 0) {
		if (!(content = tt_content_state(b->kind, m->state)))
			rc = tt_error_oom(err);
		else
			rc = tt_listing_name(name, m->kind, identity, content, err);
	}
	json_decref(identity);
	json_decref(content);
	if (rc < 0)
		name[0] = '\0';
	return rc;
}

/* What a selective commit hands the VCS: each key's manifest and the
 * listing of its state where one is stored, nothing else under .tether/. */
static json_t *object_paths(tt_repo *repo, const json_t *keys, tt_error *err)
{
	const char *rel = tt_engine_dataset_rel(repo);
	json_t *out = json_array();
	size_t i;
	json_t *kv;
	if (!out) {
		tt_error_oom(err);
		return NULL;
	}
	json_array_foreach(keys, i, kv) {
		const tt_manifest *m = tt_manifests_find(&repo->objects, json_string_value(kv));
		char *mrel = NULL, *p;
		char name[TT_LISTING_NAME_MAX];
		if (!m)
			continue;
		if (tt_key_relpath(&mrel, m->key, err) < 0)
			goto fail;
		p = tt_asprintf("%s%s" TT_DIR "/%s", rel, *rel ? "/" : "", mrel);
		free(mrel);
		if (!p || json_array_append_new(out, json_string(p)) != 0) {
			free(p);
			tt_error_oom(err);
			goto fail;
		}
		free(p);
		if (state_listing_name(repo, m, name, err) < 0)
			goto fail;
		if (!name[0])
			continue;
		char *lrel = tt_asprintf(TT_LISTINGS_DIR "/%s", name);
		char *abs = lrel ? tt_tether_path(repo->root, lrel) : NULL;
		bool there = abs && tt_is_file(abs);
		free(abs);
		free(lrel);
		if (!there)
			continue;
		p = tt_asprintf("%s%s" TT_DIR "/" TT_LISTINGS_DIR "/%s", rel, *rel ? "/" : "", name);
		bool dup = false;
		size_t j;
		json_t *q;
		json_array_foreach(out, j, q)
			dup |= p && strcmp(json_string_value(q), p) == 0;
		if (!p || (!dup && json_array_append_new(out, json_string(p)) != 0)) {
			free(p);
			tt_error_oom(err);
			goto fail;
		}
		free(p);
	}
	return out;
fail:
	json_decref(out);
	return NULL;
}

/* The paths a commit hands the VCS: with keys, only those objects'. */
static json_t *commit_paths(tt_repo *repo, const json_t *keys, tt_error *err)
{
	json_t *p;
	if (keys)
		return object_paths(repo, keys, err);
	if (!(p = vcs_paths(repo)))
		tt_error_oom(err);
	return p;
}

static int manifest_text(const tt_manifest *m, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc = tt_manifest_render(&b, m, err);
	*out = rc == 0 ? json_stringn(b.ptr, b.len) : NULL;
	tt_buf_release(&b);
	return rc == 0 && !*out ? tt_error_oom(err) : rc;
}

static int workspace_text(tt_repo *repo, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc = tt_workspace_render(&b, &repo->ws, err);
	*out = rc == 0 ? json_stringn(b.ptr, b.len) : NULL;
	tt_buf_release(&b);
	return rc == 0 && !*out ? tt_error_oom(err) : rc;
}

/* --- plan ------------------------------------------------------------------ */

static int cmp_key_path(const void *x, const void *y)
{
	return tt_key_path_order(*(const char *const *)x, *(const char *const *)y);
}

/* Every object's key in tether-vcs's object order (its manifests' paths,
 * part by part: "foo.bar" before "foo"), the order a whole commit plans in. */
static int objects_in_path_order(tt_repo *repo, json_t **out, tt_error *err)
{
	size_t n = repo->objects.n;
	const char **keys = tt_calloc(n ? n : 1, sizeof *keys);
	*out = json_array();
	if (!keys || !*out) {
		free(keys);
		json_decref(*out);
		*out = NULL;
		return tt_error_oom(err);
	}
	for (size_t i = 0; i < n; i++)
		keys[i] = repo->objects.items[i].key;
	qsort(keys, n, sizeof *keys, cmp_key_path);
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++)
		if (json_array_append_new(*out, json_string(keys[i])) < 0)
			rc = tt_error_oom(err);
	free(keys);
	return rc;
}

/* A commit plan in the making. */
typedef struct plan_ctx {
	tt_repo *repo;
	const char *message;    /* borrowed */
	const json_t *keys;     /* borrowed: the selection, NULL for every object */
	const json_t *fetched;  /* borrowed: the states pull fetched, NULL for a commit */
	bool strict;
	json_t *states;         /* each object's state to commit */
	json_t *chosen;         /* the keys planned, in order */
	tt_plan *plan;
} plan_ctx;

/* The states to commit (fetched, a fresh snapshot, or the last one) and
 * the keys to plan. */
static int gather_states(plan_ctx *c, bool do_snapshot, tt_error *err)
{
	int rc;
	if (c->fetched) {
		if (!(c->states = json_deep_copy(c->fetched)))
			return tt_error_oom(err);
	} else if (do_snapshot) {
		if ((rc = tt_engine_snapshot(c->repo, c->keys, false, &c->states, NULL, err)) < 0)
			return rc;
	} else if (!(c->states = json_deep_copy(c->repo->ws.last_snapshot))) {
		return tt_error_oom(err);
	}
	if (c->keys)
		c->chosen = json_incref((json_t *)c->keys);
	else if ((rc = objects_in_path_order(c->repo, &c->chosen, err)) < 0)
		return rc;
	/* Positions: an object with no working branch commits at its previous
	 * pin, whatever a cached fan-out says about its upstream. */
	size_t i;
	json_t *kv;
	json_array_foreach(c->chosen, i, kv) {
		const tt_manifest *m = tt_manifests_find(&c->repo->objects, json_string_value(kv));
		if (!c->fetched && m && m->state && !tt_engine_moving(c->repo, m))
			json_object_set(c->states, m->key, m->state);
	}
	return 0;
}

/* Each chosen object whose kind needs it is quiescent on its working ref. */
static int require_quiescence(plan_ctx *c, tt_error *err)
{
	size_t i;
	json_t *kv;
	int rc;
	json_array_foreach(c->chosen, i, kv) {
		const tt_manifest *m = tt_manifests_find(&c->repo->objects, json_string_value(kv));
		tt_backend *b;
		if (!m || !(tt_engine_caps(c->repo, m) & TT_CAP_NEEDS_QUIESCENCE) ||
		    tt_engine_backend(c->repo, m->kind, &b, err) < 0 || !tt_backend_has(b, check_quiescence))
			continue;
		char *ref = NULL;
		if ((rc = tt_engine_working_ref(c->repo, m, &ref, err)) == 0)
			rc = tt_backend_check_quiescence(b, m->locator, ref, err);
		free(ref);
		if (rc < 0) {
			tt_error_object(err, m->key, m->kind);
			return rc;
		}
	}
	tt_error_clear(err);
	return 0;
}

/* The plan with its context (message, manifest hash, the chosen states,
 * workspace, pull, selection) and its preconditions: where first, then
 * what, so a plan applied in the wrong checkout or on another bookmark is
 * told so, not that the manifests differ there. */
static int new_plan(plan_ctx *c, tt_error *err)
{
	tt_repo *repo = c->repo;
	json_t *ctx_states = NULL, *expected = NULL;
	char hash[65];
	size_t i;
	json_t *kv;
	int rc;
	if ((rc = tt_manifests_hash(hash, &repo->objects, err)) < 0)
		return rc;
	if (!(c->plan = tt_plan_new("commit")) || !(ctx_states = json_object()))
		return tt_error_oom(err);
	json_array_foreach(c->chosen, i, kv) {
		json_t *s = json_object_get(c->states, json_string_value(kv));
		if (s)
			json_object_set(ctx_states, json_string_value(kv), s);
	}
	json_t *msg = json_string(c->message), *h = json_string(hash), *ws = json_string(repo->ws.workspace_id);
	json_t *no = json_boolean(c->fetched != NULL);
	if ((rc = tt_plan_set_context(c->plan, "message", msg, err)) < 0 ||
	    (rc = tt_plan_set_context(c->plan, "manifest_hash", h, err)) < 0 ||
	    (rc = tt_plan_set_context(c->plan, "states", ctx_states, err)) < 0 ||
	    (rc = tt_plan_set_context(c->plan, "workspace_id", ws, err)) < 0 ||
	    (rc = tt_plan_set_context(c->plan, "pull", no, err)) < 0 ||
	    (c->keys && (rc = tt_plan_set_context(c->plan, "keys", c->keys, err)) < 0))
		goto out;
	char detail[256];
	snprintf(detail, sizeof detail, "this commit plan was made on %s; the checkout is on {observed} "
		 "now; re-run the plan", repo->ws.bookmark ? repo->ws.bookmark : "no bookmark");
	expected = repo->ws.bookmark ? json_string(repo->ws.bookmark) : json_null();
	rc = tt_plan_require(c->plan, "workspace_id", ws, NULL, NULL,
			     "this commit plan was made in another checkout; re-run the plan here", err);
	if (rc == 0)
		rc = tt_plan_require(c->plan, "workspace_bookmark", expected, NULL, NULL, detail, err);
	if (rc == 0)
		rc = tt_plan_require(c->plan, "manifest_hash", h, NULL, NULL,
				     "manifests changed since the plan was made; re-run the plan", err);
out:
	json_decref(msg), json_decref(h), json_decref(ws), json_decref(no);
	json_decref(ctx_states);
	json_decref(expected);
	return rc;
}

/* The notes before an object's action: a pin policy that changed, and
 * for a pull the state fetched. */
static int note_object(plan_ctx *c, const char *key, const json_t *state, bool same, bool needs_pin,
		       tt_error *err)
{
	char note[512];
	int rc;
	if (same) {
		snprintf(note, sizeof note, "%s: policy changed; %s", key,
			 needs_pin ? "pin created" : "pin released");
		if ((rc = tt_plan_note(c->plan, note, err)) < 0)
			return rc;
	}
	if (c->fetched) {
		tt_buf fs = TT_BUF_INIT;
		tt_short_state(&fs, state);
		snprintf(note, sizeof note, "%s: fetched %s", key, fs.ptr);
		tt_buf_release(&fs);
		if ((rc = tt_plan_note(c->plan, note, err)) < 0)
			return rc;
	}
	return 0;
}

/* An Observed-tier object is recorded, not recoverable (refused when
 * strict). */
static int plan_observed(plan_ctx *c, const tt_manifest *m, const char *key, json_t *state, tt_error *err)
{
	int rc;
	if (c->strict) {
		rc = tt_error_set(err, TT_EUNPINNED, "'%s' is Observed-tier and cannot be pinned", key);
		tt_error_object(err, key, m->kind);
		return rc;
	}
	json_t *params = json_pack("{s:O,s:b}", "state", state, "recoverable", 0);
	rc = tt_plan_action(c->plan, "record", key, m->kind, NULL, "Observed: recorded, not recoverable",
			    params, err);
	json_decref(params);
	return rc;
}

/* A pin at state, named by the object's identity and content. */
static int plan_pin(plan_ctx *c, const tt_manifest *m, const char *key, json_t *state, const char *short_s,
		    tt_error *err)
{
	tt_backend *b;
	json_t *identity = NULL, *content = NULL;
	char pin_id[TT_PIN_ID_MAX], ref[TT_PIN_ID_MAX + 8];
	int rc = 0;
	if ((rc = tt_engine_backend(c->repo, m->kind, &b, err)) < 0 ||
	    (rc = tt_backend_identity(b, m->locator, &identity, err)) < 0 ||
	    !(content = tt_content_state(b->kind, state)) ||
	    (rc = tt_pin_id(pin_id, c->repo->config.dataset_id, m->kind, identity, content, err)) < 0) {
		json_decref(identity);
		json_decref(content);
		if (rc == 0)
			rc = tt_error_oom(err);
		tt_error_object(err, key, m->kind);
		return rc;
	}
	json_decref(identity);
	json_decref(content);
	tt_ref_for_pin(ref, sizeof ref, pin_id);
	tt_buf det = TT_BUF_INIT;
	tt_buf_printf(&det, "native ref at %s", short_s);
	json_t *params = json_pack("{s:O,s:s}", "state", state, "pin_id", pin_id);
	rc = tt_plan_action(c->plan, "pin", key, m->kind, ref, det.ptr, params, err);
	json_decref(params);
	tt_buf_release(&det);
	return rc;
}

/* A record of state with no native ref: recoverable when the backend
 * can reopen the state by its address. */
static int plan_record(plan_ctx *c, const tt_manifest *m, const char *key, json_t *state, const char *short_s,
		       tt_error *err)
{
	tt_backend *b = NULL;
	bool recoverable = true;
	tt_error ignored = TT_ERROR_INIT;
	int rc;
	if (tt_engine_backend(c->repo, m->kind, &b, &ignored) == 0 && tt_backend_has(b, state_addressable))
		recoverable = tt_backend_state_addressable(b, m->locator, state);
	tt_error_clear(&ignored);
	tt_buf det = TT_BUF_INIT;
	tt_buf_printf(&det, "%s%s: state %s, no native ref%s",
		      strcmp(m->policy.pin, "record") == 0 ? "pin=record" : "Addressable",
		      recoverable ? "" : ", but this state carries no address to reopen it by",
		      short_s, recoverable ? "" : "; recorded, not recoverable");
	json_t *params = json_pack("{s:O,s:b}", "state", state, "recoverable", recoverable);
	rc = tt_plan_action(c->plan, "record", key, m->kind, NULL, det.ptr, params, err);
	json_decref(params);
	tt_buf_release(&det);
	return rc;
}

/* One object's notes and action (pin or record; *acted when it has one):
 * none for an object without a fingerprint, or unchanged under the same
 * pin policy. */
static int plan_object(plan_ctx *c, const char *key, bool *acted, tt_error *err)
{
	const tt_manifest *m = tt_manifests_find(&c->repo->objects, key);
	json_t *state = json_object_get(c->states, key);
	char note[512];
	int rc;
	*acted = false;
	if (!m)
		return 0;
	if (!state) {
		snprintf(note, sizeof note, "%s: no fingerprint; skipped", key);
		return tt_plan_note(c->plan, note, err);
	}
	unsigned caps = tt_engine_caps(c->repo, m);
	bool needs_pin = (caps & TT_CAP_PIN) != 0;
	bool same = m->state && tt_engine_same(m, m->state, state);
	if (same && (m->pin_id != NULL) == needs_pin) {
		snprintf(note, sizeof note, "%s: unchanged", key);
		return tt_plan_note(c->plan, note, err);
	}
	if ((rc = note_object(c, key, state, same, needs_pin, err)) < 0)
		return rc;
	tt_buf short_s = TT_BUF_INIT;
	tt_short_state(&short_s, state);
	if (strcmp(tt_tier_name(caps), "observed") == 0)
		rc = plan_observed(c, m, key, state, err);
	else if (needs_pin)
		rc = plan_pin(c, m, key, state, short_s.ptr, err);
	else
		rc = plan_record(c, m, key, state, short_s.ptr, err);
	tt_buf_release(&short_s);
	if (rc < 0)
		return rc;
	*acted = true;
	return 0;
}

/* The closing action: the VCS commit, with the message as tether-vcs
 * shows it. */
static int plan_vcs_commit(plan_ctx *c, tt_error *err)
{
	tt_buf det = TT_BUF_INIT, rep = TT_BUF_INIT;
	int rc;
	if (c->message)
		tt_pyv_repr_str(&rep, c->message, strlen(c->message));
	else
		tt_buf_puts(&rep, "None");
	tt_buf_printf(&det, "%s commit: %s", tt_vcs_kind(c->repo->vcs), rep.ptr);
	rc = tt_plan_action(c->plan, "vcs-commit", NULL, NULL, NULL, det.ptr, NULL, err);
	tt_buf_release(&det);
	tt_buf_release(&rep);
	return rc;
}

int tt_engine_plan_commit(tt_repo *repo, const char *message, const json_t *keys, bool strict,
			  bool force, bool do_snapshot, const json_t *fetched, tt_plan **out, tt_error *err)
{
	plan_ctx c = { .repo = repo, .message = message, .keys = keys, .fetched = fetched, .strict = strict };
	size_t i, nactions = 0;
	json_t *kv;
	int rc;

	*out = NULL;
	if (keys && (rc = tt_engine_require_whole_scopes(repo, keys, fetched ? "pull" : "commit", err)) < 0)
		goto done;
	if ((rc = gather_states(&c, do_snapshot, err)) < 0)
		goto done;
	if (!force && (rc = require_quiescence(&c, err)) < 0)
		goto done;
	if ((rc = new_plan(&c, err)) < 0)
		goto done;
	json_array_foreach(c.chosen, i, kv) {
		bool acted;
		if ((rc = plan_object(&c, json_string_value(kv), &acted, err)) < 0)
			goto done;
		nactions += acted;
	}
	if (nactions && (rc = plan_vcs_commit(&c, err)) < 0)
		goto done;
	*out = c.plan;
	c.plan = NULL;
done:
	tt_plan_free(c.plan);
	json_decref(c.states);
	json_decref(c.chosen);
	return rc;
}

/* The bookmark the VCS has this checkout on (git: HEAD's branch). */
static int vcs_bookmark_here(tt_repo *repo, char **out, tt_error *err)
{
	return tt_vcs_current_bookmark(repo->vcs, out, err);
}

/* Refuse to commit when the working copy has left the workspace's bookmark:
 * the commit would move the bookmark where its branches are not. */
static int check_on_bookmark(tt_repo *repo, tt_error *err)
{
	const char *b = repo->ws.bookmark;
	json_t *marks = NULL;
	char *here = NULL;
	int rc;
	if (!b)
		return 0;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) < 0 ||
	    (rc = vcs_bookmark_here(repo, &here, err)) < 0)
		goto done;
	bool on = here && strcmp(here, b) == 0;
	if (json_object_get(marks, b) && tt_engine_vcs_is_jj(repo)) {
		/* jj: the bookmark on the working copy or its parent -- where new
		 * and commit leave it, and the only place from which the commit's
		 * own operation carries it along (so one `jj undo` reverts both). */
		bool at = false, behind = false;
		if ((rc = tt_vcs_is_ancestor(repo->vcs, b, "@", &at, err)) < 0 ||
		    (at && (rc = tt_vcs_is_ancestor(repo->vcs, b, "@--", &behind, err)) < 0))
			goto done;
		if (!at) {
			rc = tt_error_set(err, TT_ECONFIG, "the working copy is not on bookmark '%s' (it moved to %s)",
					  b, here ? here : "no bookmark");
			tt_error_hint(err, "run `tether new %s` to return, or `tether new` to work where you are", b);
		} else if (behind) {
			rc = tt_error_set(err, TT_ECONFIG, "bookmark '%s' is behind the working copy's parent: there "
					  "are commits between them that the commit would skip over, and the bookmark "
					  "could not move with it in one operation", b);
			tt_error_hint(err, "run `tether new %s --keep` to put the working copy back on the bookmark "
					   "(its branches are untouched)", b);
		}
	} else if (!json_object_get(marks, b) && !on) {
		rc = tt_error_set(err, TT_ECONFIG, "bookmark '%s' no longer exists", b);
		tt_error_hint(err, "`tether new -b %s` recreates it, `tether new NAME` joins another", b);
	} else if (!on) {
		rc = tt_error_set(err, TT_ECONFIG, "the working copy is not on bookmark '%s' (it moved to %s)",
				  b, here ? here : "no bookmark");
		tt_error_hint(err, "run `tether new %s` to return, or `tether new` to work where you are", b);
	}
done:
	json_decref(marks);
	free(here);
	return rc;
}

/* --- apply ------------------------------------------------------------------ */

typedef struct outcome {
	const char *key;
	json_t *state;     /* borrowed from the plan */
	tt_pin pin;
	bool has_pin;
	bool recoverable;
} outcome;

static void rollback_pins(tt_repo *repo, const tt_pin *pins, const char **keys, size_t n)
{
	json_t *ids = json_array();
	for (size_t i = 0; i < n; i++) {
		const tt_manifest *m = tt_manifests_find(&repo->objects, keys[i]);
		tt_backend *b;
		tt_error ignored = TT_ERROR_INIT;
		/* Best effort: a failed unpin is reconciled by gc. */
		if (m && tt_engine_backend(repo, m->kind, &b, &ignored) == 0 && tt_backend_has(b, unpin) &&
		    tt_backend_unpin(b, m->locator, &pins[i], &ignored) == 0)
			json_array_append_new(ids, json_string(pins[i].id));
		tt_error_clear(&ignored);
	}
	tt_error ignored = TT_ERROR_INIT;
	tt_index_forget_pinned(repo->vcs->shared_dir, repo->config.dataset_id, ids, &ignored);
	tt_error_clear(&ignored);
	json_decref(ids);
}

static void restore_manifests(tt_repo *repo, json_t *texts)
{
	const char *key;
	json_t *text;
	json_object_foreach(texts, key, text) {
		tt_error ignored = TT_ERROR_INIT;
		if (json_is_string(text)) {
			char *rel = NULL;
			if (tt_key_relpath(&rel, key, &ignored) == 0) {
				char *path = tt_tether_path(repo->root, rel);
				if (path)
					tt_write_file_atomic(path, json_string_value(text),
							     json_string_length(text), 0644, &ignored);
				free(path);
			}
			free(rel);
		} else {
			tt_manifest_delete(repo->root, key, &ignored);
		}
		tt_error_clear(&ignored);
	}
}

/* Record what this workspace just committed as the base of its working refs. */
static void mark_base_states(tt_repo *repo, const outcome *outs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!json_object_get(repo->ws.working_refs, outs[i].key) &&
		    !json_object_get(repo->ws.pending_forks, outs[i].key))
			continue;
		json_object_set(repo->ws.base_states, outs[i].key, outs[i].state);
	}
}

/* tether-vcs's object order: its manifests' paths compared segment by
 * segment (tt_key_path_order), so "a/x" comes before "a.y". */
static int outcome_order(const void *x, const void *y)
{
	return tt_key_path_order(((const outcome *)x)->key, ((const outcome *)y)->key);
}

static json_t *journal_result(const outcome *outs, size_t n, const char *vcs_commit)
{
	json_t *pinned = json_object(), *unrec = json_array();
	for (size_t i = 0; i < n; i++) {
		if (outs[i].has_pin)
			json_object_set_new(pinned, outs[i].key, json_string(outs[i].pin.id));
		else if (outs[i].recoverable)
			json_object_set_new(pinned, outs[i].key, json_null());
		else
			json_array_append_new(unrec, json_string(outs[i].key));
	}
	return json_pack("{s:s?,s:o,s:o}", "vcs_commit", vcs_commit, "pinned", pinned,
			 "unrecoverable", unrec);
}

/* One commit's apply: the plan, what it did so far (for the compensation),
 * and what undo needs. */
typedef struct apply_ctx {
	tt_repo *repo;
	const tt_plan *plan;       /* borrowed */
	bool vcs;
	bool is_pull;
	const char *message;       /* borrowed from the plan */
	const json_t *sel;         /* borrowed from the plan: the keys committed, NULL for every object */
	size_t na;                 /* the plan's actions */
	outcome *outs;             /* each object pinned or recorded, in plan order */
	size_t nouts;
	tt_pin *created;           /* the pins this commit cut, to take back */
	const char **created_keys; /* borrowed from the manifests */
	size_t ncreated;
	json_t *pre, *texts, *position, *wstext, *paths, *plan_json, *interrupted;
	json_t *unchanged, *written_listings;
	char op_id[TT_OP_ID_LEN + 1];
	char *vcs_commit;
} apply_ctx;

static void apply_ctx_init(apply_ctx *c, tt_repo *repo, const tt_plan *plan, bool vcs)
{
	const json_t *sel = json_object_get(tt_plan_context(plan), "keys");
	memset(c, 0, sizeof *c);
	c->repo = repo;
	c->plan = plan;
	c->vcs = vcs;
	c->is_pull = json_is_true(json_object_get(tt_plan_context(plan), "pull"));
	c->message = json_string_value(json_object_get(tt_plan_context(plan), "message"));
	c->sel = json_is_array(sel) ? sel : NULL;
	c->na = tt_plan_action_count(plan);
	c->unchanged = json_array();
	c->written_listings = json_array();
}

static void apply_ctx_release(apply_ctx *c)
{
	free(c->outs);
	free(c->created);
	free(c->created_keys);
	free(c->vcs_commit);
	json_decref(c->pre);
	json_decref(c->texts);
	json_decref(c->position);
	json_decref(c->wstext);
	json_decref(c->paths);
	json_decref(c->unchanged);
	json_decref(c->written_listings);
	json_decref(c->plan_json);
	json_decref(c->interrupted);
}

/* An action that pins or records an object (the others are notes). */
static bool is_object_action(const tt_plan_action_view *a)
{
	return strcmp(a->op, "pin") == 0 || strcmp(a->op, "record") == 0;
}

/* The paths as the VCS takes them (caller frees the array, not the
 * strings: borrowed from paths); NULL when out of memory. */
static const char **path_vector(const json_t *paths)
{
	size_t np = json_array_size(paths);
	const char **pv = tt_calloc(np ? np : 1, sizeof *pv);
	for (size_t i = 0; pv && i < np; i++)
		pv[i] = json_string_value(json_array_get(paths, i));
	return pv;
}

/* Before anything is touched: a commit plan, still holding when it comes
 * from a file (verify), on the bookmark, with a VCS that can commit. */
static int apply_checks(apply_ctx *c, bool verify, tt_error *err)
{
	int rc;
	if (strcmp(tt_plan_command(c->plan), "commit") != 0)
		return tt_error_set(err, TT_ECONFIG, "expected a commit plan, got '%s'", tt_plan_command(c->plan));
	if (verify && (rc = tt_engine_check_preconditions(c->repo, c->plan, "commit", err)) < 0)
		return rc;
	if (c->vcs && (rc = check_on_bookmark(c->repo, err)) < 0)
		return rc;
	/* Before the first pin: a stale lock would stop the commit at its end. */
	if (c->vcs && tt_vcs_has(c->repo->vcs, check_commit) && (rc = tt_vcs_check_commit(c->repo->vcs, err)) < 0)
		return rc;
	return 0;
}

static int alloc_outcomes(apply_ctx *c, tt_error *err)
{
	size_t n = c->na ? c->na : 1;
	c->outs = tt_calloc(n, sizeof *c->outs);
	c->created = tt_calloc(n, sizeof *c->created);
	c->created_keys = tt_calloc(n, sizeof *c->created_keys);
	if (!c->outs || !c->created || !c->created_keys || !c->unchanged || !c->written_listings)
		return tt_error_oom(err);
	return 0;
}

/* A plan from a file, against one fresh snapshot: an object that moved
 * since is a race during apply, not a precondition. */
static int check_states_unchanged(apply_ctx *c, tt_error *err)
{
	json_t *current = NULL;
	int rc;
	if ((rc = tt_engine_snapshot(c->repo, c->sel, false, &current, NULL, err)) < 0)
		return rc;
	for (size_t i = 0; i < c->na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(c->plan, i, &a);
		if (!is_object_action(&a))
			continue;
		const tt_manifest *m = tt_manifests_find(&c->repo->objects, a.key);
		json_t *now = json_object_get(current, a.key), *then = json_object_get(a.params, "state");
		if (!m || !now || !tt_engine_same(m, now, then)) {
			tt_buf x = TT_BUF_INIT, y = TT_BUF_INIT;
			tt_short_state(&x, then);
			tt_short_state(&y, now);
			rc = tt_error_set(err, TT_ESTALEPLAN, "'%s' changed since the plan was made (%s -> %s); "
					  "re-run the plan", a.key, x.ptr, y.ptr);
			tt_buf_release(&x);
			tt_buf_release(&y);
			break;
		}
	}
	json_decref(current);
	return rc;
}

/* The keys of the plan's "<key>: unchanged" notes. */
static void collect_unchanged(apply_ctx *c)
{
	for (size_t i = 0; i < tt_plan_note_count(c->plan); i++) {
		const char *note = tt_plan_note_at(c->plan, i);
		const char *sep = strstr(note, ": ");
		if (sep && strcmp(sep + 2, "unchanged") == 0)
			json_array_append_new(c->unchanged, json_stringn(note, (size_t)(sep - note)));
	}
}

/* Whether there is nothing to commit: no object to pin or record and, with
 * the VCS, no change in the committed paths (listed here, c->paths). */
static int nothing_to_commit(apply_ctx *c, bool *nothing, tt_error *err)
{
	bool any_objects = false, dirty = false;
	int rc;
	*nothing = false;
	for (size_t i = 0; i < c->na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(c->plan, i, &a);
		any_objects |= is_object_action(&a);
	}
	if (!(c->paths = commit_paths(c->repo, c->sel, err)))
		return err->code;
	if (c->vcs && !any_objects) {
		const char **pv = path_vector(c->paths);
		rc = pv ? tt_vcs_dirty(c->repo->vcs, pv, json_array_size(c->paths), &dirty, err) : tt_error_oom(err);
		free(pv);
		if (rc < 0)
			return rc;
	}
	*nothing = !any_objects && !dirty;
	return 0;
}

/* Nothing to commit: the report, closing the interrupted runs it finishes. */
static int report_nothing(apply_ctx *c, json_t **out, tt_error *err)
{
	*out = json_pack("{s:n,s:{},s:[],s:O}", "vcs_commit", "pinned", "unrecoverable",
			 "unchanged", c->unchanged);
	if (!*out)
		return tt_error_oom(err);
	/* Best effort: an entry left open only keeps its pins longer. */
	tt_error ignored = TT_ERROR_INIT;
	tt_engine_close_interrupted(c->repo, c->interrupted, NULL,
				    c->is_pull ? "a later pull" : "a later commit", &ignored);
	tt_error_clear(&ignored);
	return 0;
}

/* What undo needs (the VCS position, each object's manifest as it is, the
 * workspace), journaled before the first store write. */
static int journal_begin(apply_ctx *c, tt_error *err)
{
	int rc = 0;
	if (c->vcs && (rc = tt_vcs_position(c->repo->vcs, &c->position, err)) < 0)
		return rc;
	if (!(c->texts = json_object()) || (rc = workspace_text(c->repo, &c->wstext, err)) < 0)
		return rc < 0 ? rc : tt_error_oom(err);
	for (size_t i = 0; i < c->na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(c->plan, i, &a);
		if (!is_object_action(&a))
			continue;
		const tt_manifest *m = tt_manifests_find(&c->repo->objects, a.key);
		json_t *t = NULL;
		if (m && (rc = manifest_text(m, &t, err)) < 0)
			return rc;
		json_object_set_new(c->texts, a.key, t ? t : json_null());
	}
	c->pre = json_pack("{s:O?,s:O,s:O}", "vcs", c->position, "objects", c->texts, "workspace", c->wstext);
	c->plan_json = tt_plan_to_object(c->plan, err);
	if (!c->pre || !c->plan_json)
		return c->plan_json ? tt_error_oom(err) : err->code;
	if ((rc = tt_oplog_begin(c->repo->root, c->is_pull ? "pull" : "commit", c->plan_json, c->pre, NULL,
				 c->op_id, err)) < 0)
		return rc;
	tt_fault(c->is_pull ? "pull:after-journal" : "commit:after-journal");
	return 0;
}

/* One pin per id per commit: a second object with the same identity and
 * content is recorded at the state the pin was cut at. */
static bool share_pin(const apply_ctx *c, outcome *o, const char *pin_id)
{
	bool shared = false;
	for (size_t j = 0; j < c->nouts; j++) {
		if (c->outs[j].has_pin && strcmp(c->outs[j].pin.id, pin_id ? pin_id : "") == 0) {
			o->state = c->outs[j].state;
			o->pin = c->outs[j].pin;
			o->pin.created = false;
			shared = true;
		}
	}
	return shared;
}

/* Cut m's pin at o->state; a pin it created is noted in the index and the
 * journal, and kept to take back on failure. */
static int cut_pin(apply_ctx *c, const tt_manifest *m, outcome *o, const char *pin_id, tt_error *err)
{
	tt_backend *b;
	int rc = 0;
	if ((rc = tt_engine_backend(c->repo, m->kind, &b, err)) < 0 || !tt_backend_has(b, pin) ||
	    (rc = tt_backend_pin(b, m->locator, o->state, pin_id, &o->pin, err)) < 0) {
		if (rc == 0)
			rc = tt_error_set(err, TT_ECAPABILITY, "%s backend cannot pin", m->kind);
		tt_error_object(err, m->key, m->kind);
		return rc;
	}
	json_t *identity = NULL;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_backend_identity(b, m->locator, &identity, &ignored) == 0)
		tt_index_note_touched(c->repo->vcs->shared_dir, c->repo->config.dataset_id, m->kind, identity,
				      m->locator, m->key, &ignored);
	json_decref(identity);
	tt_error_clear(&ignored);
	if (o->pin.created) {
		c->created[c->ncreated] = o->pin;
		c->created_keys[c->ncreated++] = m->key;
		tt_index_note_pinned(c->repo->vcs->shared_dir, c->repo->config.dataset_id, o->pin.id, m->kind,
				     m->key, &ignored);
		tt_error_clear(&ignored);
		json_t *detail = json_pack("{s:s,s:s}", "key", m->key, "ref", o->pin.ref);
		rc = tt_oplog_progress(c->repo->root, c->op_id, "pin", detail, err);
		json_decref(detail);
		if (rc < 0)
			return rc;
	}
	tt_fault(c->is_pull ? "pull:after-pin" : "commit:after-pin");
	return 0;
}

/* Pin or record each object of the plan, in plan order (c->outs). */
static int pin_objects(apply_ctx *c, tt_error *err)
{
	int rc;
	for (size_t i = 0; i < c->na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(c->plan, i, &a);
		if (!is_object_action(&a))
			continue;
		const tt_manifest *m = tt_manifests_find(&c->repo->objects, a.key);
		outcome *o = &c->outs[c->nouts];
		if (!m)
			return tt_error_set(err, TT_ESTALEPLAN, "'%s' is no longer registered; re-run the plan", a.key);
		o->key = m->key;
		o->state = json_object_get(a.params, "state");
		o->recoverable = true;
		if (strcmp(a.op, "pin") == 0) {
			const char *pin_id = json_string_value(json_object_get(a.params, "pin_id"));
			if (!share_pin(c, o, pin_id) && (rc = cut_pin(c, m, o, pin_id, err)) < 0)
				return rc;
			o->has_pin = true;
		} else {
			o->recoverable = json_is_true(json_object_get(a.params, "recoverable")) ||
					 !json_object_get(a.params, "recoverable");
		}
		c->nouts++;
	}
	return 0;
}

/* m's manifest at what o pinned or recorded, saved. */
static int save_manifest(apply_ctx *c, tt_manifest *m, const outcome *o, tt_error *err)
{
	/* Pulled onto the branch: where it was first registered is history. */
	if (c->is_pull)
		json_object_del(m->locator, "at");
	json_decref(m->state);
	m->state = json_deep_copy(o->state);
	free(m->pin_id);
	free(m->pin_ref);
	m->pin_id = o->has_pin ? tt_strdup(o->pin.id) : NULL;
	m->pin_ref = o->has_pin ? tt_strdup(o->pin.ref) : NULL;
	m->recoverable = o->recoverable;
	char now[40];
	tt_now_iso_micro(now);
	free(m->captured_at);
	m->captured_at = tt_strdup(now);
	if (!m->state || !m->captured_at || (o->has_pin && (!m->pin_id || !m->pin_ref)))
		return tt_error_oom(err);
	return tt_manifest_save(m, c->repo->root, err);
}

/* The listing of m's state, for a backend that gives listings: written
 * unless one of its name is there already, and kept to take back. */
static int write_listing(apply_ctx *c, tt_manifest *m, tt_error *err)
{
	tt_backend *b;
	if (!(tt_engine_caps(c->repo, m) & TT_CAP_DIFF) || tt_engine_backend(c->repo, m->kind, &b, err) < 0 ||
	    !tt_backend_has(b, listing)) {
		tt_error_clear(err);
		return 0;
	}
	char *text = NULL, name[TT_LISTING_NAME_MAX];
	json_t *identity = NULL, *content = NULL;
	int rc;
	if ((rc = tt_backend_listing(b, m->locator, m->state, &text, err)) < 0) {
		tt_error_object(err, m->key, m->kind);
		return rc;
	}
	if (text && (rc = tt_backend_identity(b, m->locator, &identity, err)) == 0 &&
	    !(content = tt_content_state(b->kind, m->state)))
		rc = tt_error_oom(err);
	else if (text && rc == 0 && (rc = tt_listing_name(name, m->kind, identity, content, err)) == 0) {
		char *rel = tt_asprintf(TT_DIR "/" TT_LISTINGS_DIR "/%s", name);
		char *path = rel ? tt_path_join(c->repo->root, rel) : NULL;
		if (!path)
			rc = tt_error_oom(err);
		else if ((rc = tt_refuse_links(c->repo->root, rel, err)) == 0 && !tt_exists(path) &&
			 (rc = tt_write_file_atomic(path, text, strlen(text), 0644, err)) == 0)
			json_array_append_new(c->written_listings, json_string(path));
		free(rel);
		free(path);
	}
	json_decref(identity);
	json_decref(content);
	free(text);
	return rc;
}

/* The manifests, and listings for backends that give them; journaled. */
static int save_manifests(apply_ctx *c, tt_error *err)
{
	int rc;
	for (size_t i = 0; i < c->nouts; i++) {
		tt_manifest *m = tt_manifests_find(&c->repo->objects, c->outs[i].key);
		if ((rc = save_manifest(c, m, &c->outs[i], err)) < 0 || (rc = write_listing(c, m, err)) < 0)
			return rc;
	}
	tt_fault(c->is_pull ? "pull:after-manifests" : "commit:after-manifests");
	if (!c->nouts)
		return 0;
	json_t *keys = json_array(), *detail = NULL;
	for (size_t i = 0; i < c->nouts; i++)
		json_array_append_new(keys, json_string(c->outs[i].key));
	detail = json_pack("{s:o}", "keys", keys);
	rc = tt_oplog_progress(c->repo->root, c->op_id, "manifests", detail, err);
	json_decref(detail);
	return rc;
}

/* The commit will name these pins, and a clone made from this repository
 * may keep them after it is rewritten away here: gc then keeps them (see
 * gc.c).  Marked before the commit, so a crash errs on keeping. */
static void note_committed(apply_ctx *c)
{
	json_t *ids = json_array();
	tt_error ignored = TT_ERROR_INIT;
	for (size_t i = 0; ids && i < c->nouts; i++)
		if (c->outs[i].has_pin)
			json_array_append_new(ids, json_string(c->outs[i].pin.id));
	tt_index_note_committed(c->repo->vcs->shared_dir, c->repo->config.dataset_id, ids, &ignored);
	tt_error_clear(&ignored);
	json_decref(ids);
}

/* The VCS commit of the committed paths (listed again: the manifests and
 * listings were just written), moving the bookmark; journaled. */
static int commit_to_vcs(apply_ctx *c, tt_error *err)
{
	int rc;
	json_decref(c->paths);
	if (!(c->paths = commit_paths(c->repo, c->sel, err)))
		return err->code;
	size_t np = json_array_size(c->paths);
	const char **pv = path_vector(c->paths);
	tt_fault(c->is_pull ? "pull:before-vcs-commit" : "commit:before-vcs-commit");
	note_committed(c);
	rc = pv ? tt_vcs_commit(c->repo->vcs, pv, np, c->message ? c->message : "", c->repo->ws.bookmark,
				&c->vcs_commit, err)
		: tt_error_oom(err);
	free(pv);
	if (rc < 0)
		return rc;
	tt_fault(c->is_pull ? "pull:after-vcs-commit" : "commit:after-vcs-commit");
	json_t *detail = json_pack("{s:s}", "commit", c->vcs_commit);
	rc = tt_oplog_progress(c->repo->root, c->op_id, "vcs-commit", detail, err);
	json_decref(detail);
	return rc;
}

/* The entry done, its outcomes in tether-vcs's order; with the VCS, the
 * interrupted runs this one finishes are closed. */
static int journal_done(apply_ctx *c, tt_error *err)
{
	int rc;
	qsort(c->outs, c->nouts, sizeof *c->outs, outcome_order);
	json_t *result = journal_result(c->outs, c->nouts, c->vcs_commit);
	rc = tt_oplog_done(c->repo->root, c->op_id, result, NULL, NULL, err);
	json_decref(result);
	if (rc < 0)
		return rc;
	if (c->vcs) {
		char why[64];
		tt_error ignored = TT_ERROR_INIT;
		snprintf(why, sizeof why, "%s %s", c->is_pull ? "pull" : "commit", c->op_id);
		tt_engine_close_interrupted(c->repo, c->interrupted, c->op_id, why, &ignored);
		tt_error_clear(&ignored);
	}
	return rc;
}

/* The VCS commit that landed before the failure, if one did (borrowed from
 * now_pos, which the caller releases); NULL otherwise. */
static const char *landed_commit(apply_ctx *c, json_t **now_pos, tt_error *ignored)
{
	if (!c->vcs || tt_vcs_position(c->repo->vcs, now_pos, ignored) != 0)
		return NULL;
	/* jj: the working-copy commit's id changes on every snapshot; a
	 * landed commit moved @ onto a new parent. */
	const char *field = tt_engine_vcs_is_jj(c->repo) ? "parent" : "commit";
	const char *before = json_string_value(json_object_get(c->position, field));
	const char *after = json_string_value(json_object_get(*now_pos, field));
	return after && (!before || strcmp(before, after) != 0) ? after : NULL;
}

/* After a failure: a VCS commit that landed names the pins and carries the
 * manifests, so everything is kept and the entry finishes as a commit, with
 * the error; otherwise the pins, manifests and listings are taken back. */
static void compensate(apply_ctx *c, tt_error *err)
{
	json_t *now_pos = NULL;
	tt_error ignored = TT_ERROR_INIT;
	const char *landed = landed_commit(c, &now_pos, &ignored);
	if (landed) {
		free(c->vcs_commit);
		c->vcs_commit = tt_strdup(landed);
		mark_base_states(c->repo, c->outs, c->nouts);
		tt_workspace_save(&c->repo->ws, c->repo->root, &ignored);
		json_t *kept = journal_result(c->outs, c->nouts, c->vcs_commit);
		json_object_set_new(kept, "failed_after_commit", json_string(tt_error_text(err)));
		tt_oplog_done(c->repo->root, c->op_id, kept, NULL, NULL, &ignored);
		json_decref(kept);
	} else {
		rollback_pins(c->repo, c->created, c->created_keys, c->ncreated);
		restore_manifests(c->repo, c->texts);
		size_t li;
		json_t *lp;
		json_array_foreach(c->written_listings, li, lp)
			tt_unlink(json_string_value(lp), &ignored);
		json_t *undone = json_pack("{s:s,s:b}", "failed", tt_error_text(err), "rolled_back", 1);
		tt_oplog_done(c->repo->root, c->op_id, undone, NULL, NULL, &ignored);
		json_decref(undone);
	}
	json_decref(now_pos);
	tt_error_clear(&ignored);
}

static int report_commit(const apply_ctx *c, json_t **out, tt_error *err)
{
	json_t *pinned = json_object(), *unrec = json_array();
	for (size_t i = 0; i < c->nouts; i++) {
		if (c->outs[i].has_pin)
			json_object_set_new(pinned, c->outs[i].key, json_string(c->outs[i].pin.ref));
		else if (c->outs[i].recoverable)
			json_object_set_new(pinned, c->outs[i].key, json_null());
		else
			json_array_append_new(unrec, json_string(c->outs[i].key));
	}
	*out = json_pack("{s:s?,s:o,s:o,s:O}", "vcs_commit", c->vcs_commit, "pinned", pinned,
			 "unrecoverable", unrec, "unchanged", c->unchanged);
	return *out ? 0 : tt_error_oom(err);
}

int tt_engine_apply_commit(tt_repo *repo, const tt_plan *plan, bool vcs, bool verify,
			   json_t **out, tt_error *err)
{
	apply_ctx c;
	bool nothing = false;
	int rc;

	apply_ctx_init(&c, repo, plan, vcs);
	*out = NULL;
	/* A plan made in this same call needs no re-check (verify = false):
	 * only one from a file does. */
	if ((rc = apply_checks(&c, verify, err)) < 0)
		goto done;
	/* Earlier runs that were interrupted: this one finishes them. */
	if (vcs && (rc = tt_engine_scan_interrupted(repo, TT_CLOSE_RERUN, &c.interrupted, err)) < 0)
		goto done;
	if ((rc = alloc_outcomes(&c, err)) < 0)
		goto done;
	if (verify && (rc = check_states_unchanged(&c, err)) < 0)
		goto done;
	collect_unchanged(&c);
	if ((rc = nothing_to_commit(&c, &nothing, err)) < 0)
		goto done;
	if (nothing) {
		rc = report_nothing(&c, out, err);
		goto done;
	}
	if ((rc = journal_begin(&c, err)) < 0)
		goto done;

	if ((rc = pin_objects(&c, err)) < 0 || (rc = save_manifests(&c, err)) < 0 ||
	    (vcs && (rc = commit_to_vcs(&c, err)) < 0))
		goto failed;
	mark_base_states(repo, c.outs, c.nouts);
	if ((rc = tt_workspace_save(&repo->ws, repo->root, err)) < 0)
		goto failed;
	if ((rc = journal_done(&c, err)) < 0)
		goto done;
	rc = report_commit(&c, out, err);
	goto done;

failed:
	compensate(&c, err);
done:
	apply_ctx_release(&c);
	return rc;
}

/* --- the public entry points -------------------------------------------------- */

/* A commit's options; a saved plan applies with message (when given),
 * keys (checked against the plan's selection) and vcs from them. */
typedef struct commit_ctx {
	const tt_commit_opts *o;
	const char *message;
	const char *const *keys;
	size_t nkeys;
	bool vcs;
} commit_ctx;

static int plan_commit(tt_repo *repo, void *vctx, bool applying, tt_plan **out, tt_error *err)
{
	const tt_commit_opts *o = ((commit_ctx *)vctx)->o;
	json_t *keys = NULL;
	int rc;
	(void)applying;
	if (o->nkeys && (rc = tt_engine_select(repo, o->keys, o->nkeys, &keys, err)) < 0)
		return rc;
	rc = tt_engine_plan_commit(repo, o->message, keys, o->strict, o->force, !o->no_snapshot, NULL, out, err);
	json_decref(keys);
	return rc;
}

static int load_commit(tt_repo *repo, void *vctx, tt_plan *plan, tt_error *err)
{
	const commit_ctx *c = vctx;
	json_t *asked = NULL;
	int rc = 0;
	if (c->message) {
		json_t *m = json_string(c->message);
		rc = tt_plan_set_context(plan, "message", m, err);
		json_decref(m);
		if (rc < 0)
			return rc;
	}
	if (!c->nkeys)
		return 0;
	json_t *recorded = json_object_get(tt_plan_context(plan), "keys");
	if ((rc = tt_engine_select(repo, c->keys, c->nkeys, &asked, err)) < 0)
		return rc;
	if (!json_is_array(recorded) || !json_equal(recorded, asked))
		rc = tt_error_set(err, TT_ECONFIG, "this commit plan commits %s, not the objects named; "
				  "apply it without keys, or re-run the plan with the ones you mean",
				  json_is_array(recorded) ? "another selection" : "every object");
	json_decref(asked);
	return rc;
}

static int apply_commit(tt_repo *repo, void *vctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err)
{
	return tt_engine_apply_commit(repo, plan, ((commit_ctx *)vctx)->vcs, saved, out, err);
}

/* Plan and apply under one lock: nothing in this checkout moves between. */
static const tt_planned_cmd commit_cmd = {
	.command = "commit",
	.locks = TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY,
	.plan = plan_commit,
	.load = load_commit,
	.apply = apply_commit,
};

int tt_engine_repo_commit(tt_repo *repo, const tt_commit_opts *o, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(o, tt_commit_opts, TT_COMMIT_OPTS_VERSION, err);
	commit_ctx c = { .o = o, .vcs = !o->no_vcs };
	tt_planned_run run = { .out = out };
	*out = NULL;
	if (!o->message)
		return tt_error_set(err, TT_EUSAGE, "a message is required: -m/--message");
	return tt_engine_run_planned(repo, &commit_cmd, &c, &run, err);
}

int tt_engine_repo_plan_commit(tt_repo *repo, const tt_commit_opts *o, char **json_text, char **text,
			tt_error *err)
{
	TT_CHECK_OPTS(o, tt_commit_opts, TT_COMMIT_OPTS_VERSION, err);
	commit_ctx c = { .o = o };
	tt_planned_run run = { .dry = true, .plan_json = json_text, .plan_text = text };
	*json_text = *text = NULL;
	if (!o->message)
		return tt_error_set(err, TT_EUSAGE, "a message is required: -m/--message");
	return tt_engine_run_planned(repo, &commit_cmd, &c, &run, err);
}

int tt_engine_repo_apply_commit_plan(tt_repo *repo, const char *plan_text, size_t len, const char *message,
			      const char *const *keys, size_t nkeys, bool no_vcs, json_t **out,
			      tt_error *err)
{
	commit_ctx c = { .message = message, .keys = keys, .nkeys = nkeys, .vcs = !no_vcs };
	tt_planned_run run = { .from = plan_text, .from_len = len, .out = out };
	return tt_engine_run_planned(repo, &commit_cmd, &c, &run, err);
}
