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

int tt_engine_plan_commit(tt_repo *repo, const char *message, const json_t *keys, bool strict,
			  bool force, bool do_snapshot, const json_t *fetched, tt_plan **out, tt_error *err)
{
	json_t *states = NULL, *chosen = NULL, *ctx_states = NULL, *expected = NULL;
	tt_plan *plan = NULL;
	char hash[65];
	int rc;

	*out = NULL;
	if (keys && (rc = tt_engine_require_whole_scopes(repo, keys, fetched ? "pull" : "commit", err)) < 0)
		goto done;
	if (fetched) {
		if (!(states = json_deep_copy(fetched))) {
			rc = tt_error_oom(err);
			goto done;
		}
	} else if (do_snapshot) {
		if ((rc = tt_engine_snapshot(repo, keys, false, &states, NULL, err)) < 0)
			goto done;
	} else if (!(states = json_deep_copy(repo->ws.last_snapshot))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (keys)
		chosen = json_incref((json_t *)keys);
	else if ((rc = objects_in_path_order(repo, &chosen, err)) < 0)
		goto done;
	/* Positions: an object with no working branch commits at its previous
	 * pin, whatever a cached fan-out says about its upstream. */
	size_t i;
	json_t *kv;
	json_array_foreach(chosen, i, kv) {
		const tt_manifest *m = tt_manifests_find(&repo->objects, json_string_value(kv));
		if (!fetched && m && m->state && !tt_engine_moving(repo, m))
			json_object_set(states, m->key, m->state);
	}
	if (!force) {
		json_array_foreach(chosen, i, kv) {
			const tt_manifest *m = tt_manifests_find(&repo->objects, json_string_value(kv));
			tt_backend *b;
			if (!m || !(tt_engine_caps(repo, m) & TT_CAP_NEEDS_QUIESCENCE) ||
			    tt_engine_backend(repo, m->kind, &b, err) < 0 || !tt_backend_has(b, check_quiescence))
				continue;
			char *ref = NULL;
			if ((rc = tt_engine_working_ref(repo, m, &ref, err)) == 0)
				rc = tt_backend_check_quiescence(b, m->locator, ref, err);
			free(ref);
			if (rc < 0) {
				tt_error_object(err, m->key, m->kind);
				goto done;
			}
		}
		tt_error_clear(err);
	}
	if ((rc = tt_manifests_hash(hash, &repo->objects, err)) < 0)
		goto done;
	if (!(plan = tt_plan_new("commit")) || !(ctx_states = json_object())) {
		rc = tt_error_oom(err);
		goto done;
	}
	json_array_foreach(chosen, i, kv) {
		json_t *s = json_object_get(states, json_string_value(kv));
		if (s)
			json_object_set(ctx_states, json_string_value(kv), s);
	}
	json_t *msg = json_string(message), *h = json_string(hash), *ws = json_string(repo->ws.workspace_id);
	json_t *no = json_boolean(fetched != NULL);
	if ((rc = tt_plan_set_context(plan, "message", msg, err)) < 0 ||
	    (rc = tt_plan_set_context(plan, "manifest_hash", h, err)) < 0 ||
	    (rc = tt_plan_set_context(plan, "states", ctx_states, err)) < 0 ||
	    (rc = tt_plan_set_context(plan, "workspace_id", ws, err)) < 0 ||
	    (rc = tt_plan_set_context(plan, "pull", no, err)) < 0 ||
	    (keys && (rc = tt_plan_set_context(plan, "keys", keys, err)) < 0)) {
		json_decref(msg), json_decref(h), json_decref(ws), json_decref(no);
		goto done;
	}
	/* Where first, then what: a plan applied in the wrong checkout or on
	 * another bookmark is told so, not that the manifests differ there. */
	char detail[256];
	snprintf(detail, sizeof detail, "this commit plan was made on %s; the checkout is on {observed} "
		 "now; re-run the plan", repo->ws.bookmark ? repo->ws.bookmark : "no bookmark");
	expected = repo->ws.bookmark ? json_string(repo->ws.bookmark) : json_null();
	rc = tt_plan_require(plan, "workspace_id", ws, NULL, NULL,
			     "this commit plan was made in another checkout; re-run the plan here", err);
	if (rc == 0)
		rc = tt_plan_require(plan, "workspace_bookmark", expected, NULL, NULL, detail, err);
	if (rc == 0)
		rc = tt_plan_require(plan, "manifest_hash", h, NULL, NULL,
				     "manifests changed since the plan was made; re-run the plan", err);
	json_decref(msg), json_decref(h), json_decref(ws), json_decref(no);
	if (rc < 0)
		goto done;

	size_t nactions = 0;
	json_array_foreach(chosen, i, kv) {
		const char *key = json_string_value(kv);
		const tt_manifest *m = tt_manifests_find(&repo->objects, key);
		json_t *state = json_object_get(states, key);
		char note[512];
		if (!m)
			continue;
		if (!state) {
			snprintf(note, sizeof note, "%s: no fingerprint; skipped", key);
			if ((rc = tt_plan_note(plan, note, err)) < 0)
				goto done;
			continue;
		}
		unsigned caps = tt_engine_caps(repo, m);
		bool needs_pin = (caps & TT_CAP_PIN) != 0;
		bool same = m->state && tt_engine_same(m, m->state, state);
		if (same && (m->pin_id != NULL) == needs_pin) {
			snprintf(note, sizeof note, "%s: unchanged", key);
			if ((rc = tt_plan_note(plan, note, err)) < 0)
				goto done;
			continue;
		}
		if (same) {
			snprintf(note, sizeof note, "%s: policy changed; %s", key,
				 needs_pin ? "pin created" : "pin released");
			if ((rc = tt_plan_note(plan, note, err)) < 0)
				goto done;
		}
		if (fetched) {
			tt_buf fs = TT_BUF_INIT;
			tt_short_state(&fs, state);
			snprintf(note, sizeof note, "%s: fetched %s", key, fs.ptr);
			tt_buf_release(&fs);
			if ((rc = tt_plan_note(plan, note, err)) < 0)
				goto done;
		}
		tt_buf short_s = TT_BUF_INIT, det = TT_BUF_INIT;
		tt_short_state(&short_s, state);
		json_t *params = NULL;
		if (strcmp(tt_tier_name(caps), "observed") == 0) {
			if (strict) {
				tt_buf_release(&short_s);
				rc = tt_error_set(err, TT_EUNPINNED, "'%s' is Observed-tier and cannot be pinned", key);
				tt_error_object(err, key, m->kind);
				goto done;
			}
			params = json_pack("{s:O,s:b}", "state", state, "recoverable", 0);
			rc = tt_plan_action(plan, "record", key, m->kind, NULL,
					    "Observed: recorded, not recoverable", params, err);
		} else if (needs_pin) {
			tt_backend *b;
			json_t *identity = NULL, *content = NULL;
			char pin_id[TT_PIN_ID_MAX], ref[TT_PIN_ID_MAX + 8];
			if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0 ||
			    (rc = tt_backend_identity(b, m->locator, &identity, err)) < 0 ||
			    !(content = tt_content_state(b->kind, state)) ||
			    (rc = tt_pin_id(pin_id, repo->config.dataset_id, m->kind, identity, content, err)) < 0) {
				json_decref(identity);
				json_decref(content);
				tt_buf_release(&short_s);
				if (rc == 0)
					rc = tt_error_oom(err);
				tt_error_object(err, key, m->kind);
				goto done;
			}
			json_decref(identity);
			json_decref(content);
			tt_ref_for_pin(ref, sizeof ref, pin_id);
			tt_buf_printf(&det, "native ref at %s", short_s.ptr);
			params = json_pack("{s:O,s:s}", "state", state, "pin_id", pin_id);
			rc = tt_plan_action(plan, "pin", key, m->kind, ref, det.ptr, params, err);
		} else {
			tt_backend *b = NULL;
			bool recoverable = true;
			tt_error ignored = TT_ERROR_INIT;
			if (tt_engine_backend(repo, m->kind, &b, &ignored) == 0 && tt_backend_has(b, state_addressable))
				recoverable = tt_backend_state_addressable(b, m->locator, state);
			tt_error_clear(&ignored);
			tt_buf_printf(&det, "%s%s: state %s, no native ref%s",
				      strcmp(m->policy.pin, "record") == 0 ? "pin=record" : "Addressable",
				      recoverable ? "" : ", but this state carries no address to reopen it by",
				      short_s.ptr, recoverable ? "" : "; recorded, not recoverable");
			params = json_pack("{s:O,s:b}", "state", state, "recoverable", recoverable);
			rc = tt_plan_action(plan, "record", key, m->kind, NULL, det.ptr, params, err);
		}
		json_decref(params);
		tt_buf_release(&short_s);
		tt_buf_release(&det);
		if (rc < 0)
			goto done;
		nactions++;
	}
	if (nactions) {
		tt_buf det = TT_BUF_INIT, rep = TT_BUF_INIT;
		if (message)
			tt_pyv_repr_str(&rep, message, strlen(message));
		else
			tt_buf_puts(&rep, "None");
		tt_buf_printf(&det, "%s commit: %s", tt_vcs_kind(repo->vcs), rep.ptr);
		rc = tt_plan_action(plan, "vcs-commit", NULL, NULL, NULL, det.ptr, NULL, err);
		tt_buf_release(&det);
		tt_buf_release(&rep);
		if (rc < 0)
			goto done;
	}
	*out = plan;
	plan = NULL;
done:
	tt_plan_free(plan);
	json_decref(states);
	json_decref(chosen);
	json_decref(ctx_states);
	json_decref(expected);
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

int tt_engine_apply_commit(tt_repo *repo, const tt_plan *plan, bool vcs, bool verify,
			   json_t **out, tt_error *err)
{
	outcome *outs = NULL;
	size_t nouts = 0;
	tt_pin *created = NULL;
	const char **created_keys = NULL;
	size_t ncreated = 0;
	json_t *pre = NULL, *texts = NULL, *position = NULL, *wstext = NULL, *paths = NULL;
	json_t *unchanged = json_array(), *written_listings = json_array(), *plan_json = NULL;
	json_t *interrupted = NULL;
	char op_id[TT_OP_ID_LEN + 1] = "";
	char *vcs_commit = NULL;
	int rc;

	*out = NULL;
	/* A plan made in this same call needs no re-check (verify = false):
	 * only one from a file does. */
	if (strcmp(tt_plan_command(plan), "commit") != 0) {
		rc = tt_error_set(err, TT_ECONFIG, "expected a commit plan, got '%s'", tt_plan_command(plan));
		goto done;
	}
	if (verify && (rc = tt_engine_check_preconditions(repo, plan, "commit", err)) < 0)
		goto done;
	const char *message = json_string_value(json_object_get(tt_plan_context(plan), "message"));
	if (vcs && (rc = check_on_bookmark(repo, err)) < 0)
		goto done;
	/* Before the first pin: a stale lock would stop the commit at its end. */
	if (vcs && tt_vcs_has(repo->vcs, check_commit) && (rc = tt_vcs_check_commit(repo->vcs, err)) < 0)
		goto done;
	bool is_pull = json_is_true(json_object_get(tt_plan_context(plan), "pull"));
	/* Earlier runs that were interrupted: this one finishes them. */
	if (vcs && (rc = tt_engine_scan_interrupted(repo, TT_CLOSE_RERUN, &interrupted, err)) < 0)
		goto done;
	size_t na = tt_plan_action_count(plan);
	outs = tt_calloc(na ? na : 1, sizeof *outs);
	created = tt_calloc(na ? na : 1, sizeof *created);
	created_keys = tt_calloc(na ? na : 1, sizeof *created_keys);
	if (!outs || !created || !created_keys || !unchanged || !written_listings) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (verify) {
		/* Against one fresh snapshot: a race during apply, not a precondition. */
		json_t *keys = json_object_get(tt_plan_context(plan), "keys"), *current = NULL;
		if ((rc = tt_engine_snapshot(repo, json_is_array(keys) ? keys : NULL, false, &current, NULL,
					     err)) < 0)
			goto done;
		for (size_t i = 0; i < na; i++) {
			tt_plan_action_view a;
			tt_plan_action_at(plan, i, &a);
			if (strcmp(a.op, "pin") != 0 && strcmp(a.op, "record") != 0)
				continue;
			const tt_manifest *m = tt_manifests_find(&repo->objects, a.key);
			json_t *now = json_object_get(current, a.key), *then = json_object_get(a.params, "state");
			if (!m || !now || !tt_engine_same(m, now, then)) {
				tt_buf x = TT_BUF_INIT, y = TT_BUF_INIT;
				tt_short_state(&x, then);
				tt_short_state(&y, now);
				rc = tt_error_set(err, TT_ESTALEPLAN, "'%s' changed since the plan was made (%s -> %s); "
						  "re-run the plan", a.key, x.ptr, y.ptr);
				tt_buf_release(&x);
				tt_buf_release(&y);
				json_decref(current);
				goto done;
			}
		}
		json_decref(current);
	}
	for (size_t i = 0; i < tt_plan_note_count(plan); i++) {
		const char *note = tt_plan_note_at(plan, i);
		const char *sep = strstr(note, ": ");
		if (sep && strcmp(sep + 2, "unchanged") == 0)
			json_array_append_new(unchanged, json_stringn(note, (size_t)(sep - note)));
	}
	bool any_objects = false;
	for (size_t i = 0; i < na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		any_objects |= strcmp(a.op, "pin") == 0 || strcmp(a.op, "record") == 0;
	}
	json_t *sel = json_object_get(tt_plan_context(plan), "keys");
	if (!json_is_array(sel))
		sel = NULL;
	if (!(paths = commit_paths(repo, sel, err))) {
		rc = err->code;
		goto done;
	}
	bool dirty = false;
	if (vcs && !any_objects) {
		size_t np = json_array_size(paths);
		const char **pv = tt_calloc(np ? np : 1, sizeof *pv);
		for (size_t i = 0; pv && i < np; i++)
			pv[i] = json_string_value(json_array_get(paths, i));
		rc = pv ? tt_vcs_dirty(repo->vcs, pv, np, &dirty, err) : tt_error_oom(err);
		free(pv);
		if (rc < 0)
			goto done;
	}
	if (!any_objects && !dirty) {
		*out = json_pack("{s:n,s:{},s:[],s:O}", "vcs_commit", "pinned", "unrecoverable",
				 "unchanged", unchanged);
		rc = *out ? 0 : tt_error_oom(err);
		if (rc == 0) {
			/* Best effort: an entry left open only keeps its pins longer. */
			tt_error ignored = TT_ERROR_INIT;
			tt_engine_close_interrupted(repo, interrupted, NULL, is_pull ? "a later pull" : "a later commit",
						    &ignored);
			tt_error_clear(&ignored);
		}
		goto done;
	}

	/* What undo needs, journaled before the first store write. */
	if (vcs && (rc = tt_vcs_position(repo->vcs, &position, err)) < 0)
		goto done;
	if (!(texts = json_object()) || (rc = workspace_text(repo, &wstext, err)) < 0) {
		rc = rc < 0 ? rc : tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		if (strcmp(a.op, "pin") != 0 && strcmp(a.op, "record") != 0)
			continue;
		const tt_manifest *m = tt_manifests_find(&repo->objects, a.key);
		json_t *t = NULL;
		if (m && (rc = manifest_text(m, &t, err)) < 0)
			goto done;
		json_object_set_new(texts, a.key, t ? t : json_null());
	}
	pre = json_pack("{s:O?,s:O,s:O}", "vcs", position, "objects", texts, "workspace", wstext);
	plan_json = tt_plan_to_object(plan, err);
	if (!pre || !plan_json) {
		rc = plan_json ? tt_error_oom(err) : err->code;
		goto done;
	}
	if ((rc = tt_oplog_begin(repo->root, is_pull ? "pull" : "commit", plan_json, pre, NULL, op_id, err)) < 0)
		goto done;
	tt_fault(is_pull ? "pull:after-journal" : "commit:after-journal");

	for (size_t i = 0; i < na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		if (strcmp(a.op, "pin") != 0 && strcmp(a.op, "record") != 0)
			continue;
		const tt_manifest *m = tt_manifests_find(&repo->objects, a.key);
		outcome *o = &outs[nouts];
		if (!m) {
			rc = tt_error_set(err, TT_ESTALEPLAN, "'%s' is no longer registered; re-run the plan", a.key);
			goto failed;
		}
		o->key = m->key;
		o->state = json_object_get(a.params, "state");
		o->recoverable = true;
		if (strcmp(a.op, "pin") == 0) {
			const char *pin_id = json_string_value(json_object_get(a.params, "pin_id"));
			/* One pin per id per commit: a second object with the same
			 * identity and content is recorded at the state the pin was cut at. */
			bool shared = false;
			for (size_t j = 0; j < nouts; j++) {
				if (outs[j].has_pin && strcmp(outs[j].pin.id, pin_id ? pin_id : "") == 0) {
					o->state = outs[j].state;
					o->pin = outs[j].pin;
					o->pin.created = false;
					shared = true;
				}
			}
			if (!shared) {
				tt_backend *b;
				if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0 || !tt_backend_has(b, pin) ||
				    (rc = tt_backend_pin(b, m->locator, o->state, pin_id, &o->pin, err)) < 0) {
					if (rc == 0)
						rc = tt_error_set(err, TT_ECAPABILITY, "%s backend cannot pin", m->kind);
					tt_error_object(err, m->key, m->kind);
					goto failed;
				}
				json_t *identity = NULL;
				tt_error ignored = TT_ERROR_INIT;
				if (tt_backend_identity(b, m->locator, &identity, &ignored) == 0)
					tt_index_note_touched(repo->vcs->shared_dir, repo->config.dataset_id, m->kind,
							      identity, m->locator, m->key, &ignored);
				json_decref(identity);
				tt_error_clear(&ignored);
				if (o->pin.created) {
					created[ncreated] = o->pin;
					created_keys[ncreated++] = m->key;
					tt_index_note_pinned(repo->vcs->shared_dir, repo->config.dataset_id,
							     o->pin.id, m->kind, m->key, &ignored);
					tt_error_clear(&ignored);
					json_t *detail = json_pack("{s:s,s:s}", "key", m->key, "ref", o->pin.ref);
					rc = tt_oplog_progress(repo->root, op_id, "pin", detail, err);
					json_decref(detail);
					if (rc < 0)
						goto failed;
				}
				tt_fault(is_pull ? "pull:after-pin" : "commit:after-pin");
			}
			o->has_pin = true;
		} else {
			o->recoverable = json_is_true(json_object_get(a.params, "recoverable")) ||
					 !json_object_get(a.params, "recoverable");
		}
		nouts++;
	}

	/* Manifests, and listings for backends that give them. */
	for (size_t i = 0; i < nouts; i++) {
		tt_manifest *m = tt_manifests_find(&repo->objects, outs[i].key);
		/* Pulled onto the branch: where it was first registered is history. */
		if (is_pull)
			json_object_del(m->locator, "at");
		json_decref(m->state);
		m->state = json_deep_copy(outs[i].state);
		free(m->pin_id);
		free(m->pin_ref);
		m->pin_id = outs[i].has_pin ? tt_strdup(outs[i].pin.id) : NULL;
		m->pin_ref = outs[i].has_pin ? tt_strdup(outs[i].pin.ref) : NULL;
		m->recoverable = outs[i].recoverable;
		char now[40];
		tt_now_iso_micro(now);
		free(m->captured_at);
		m->captured_at = tt_strdup(now);
		if (!m->state || !m->captured_at || (outs[i].has_pin && (!m->pin_id || !m->pin_ref))) {
			rc = tt_error_oom(err);
			goto failed;
		}
		if ((rc = tt_manifest_save(m, repo->root, err)) < 0)
			goto failed;
		tt_backend *b;
		if (!(tt_engine_caps(repo, m) & TT_CAP_DIFF) || tt_engine_backend(repo, m->kind, &b, err) < 0 ||
		    !tt_backend_has(b, listing)) {
			tt_error_clear(err);
			continue;
		}
		char *text = NULL, name[TT_LISTING_NAME_MAX];
		json_t *identity = NULL, *content = NULL;
		if ((rc = tt_backend_listing(b, m->locator, m->state, &text, err)) < 0) {
			tt_error_object(err, m->key, m->kind);
			goto failed;
		}
		if (text && (rc = tt_backend_identity(b, m->locator, &identity, err)) == 0 &&
		    (content = tt_content_state(b->kind, m->state)) &&
		    (rc = tt_listing_name(name, m->kind, identity, content, err)) == 0) {
			char *rel = tt_asprintf(TT_DIR "/" TT_LISTINGS_DIR "/%s", name);
			char *path = rel ? tt_path_join(repo->root, rel) : NULL;
			if (!path)
				rc = tt_error_oom(err);
			else if ((rc = tt_refuse_links(repo->root, rel, err)) == 0 && !tt_exists(path) &&
				 (rc = tt_write_file_atomic(path, text, strlen(text), 0644, err)) == 0)
				json_array_append_new(written_listings, json_string(path));
			free(rel);
			free(path);
		}
		json_decref(identity);
		json_decref(content);
		free(text);
		if (rc < 0)
			goto failed;
	}
	tt_fault(is_pull ? "pull:after-manifests" : "commit:after-manifests");
	if (nouts) {
		json_t *keys = json_array(), *detail = NULL;
		for (size_t i = 0; i < nouts; i++)
			json_array_append_new(keys, json_string(outs[i].key));
		detail = json_pack("{s:o}", "keys", keys);
		rc = tt_oplog_progress(repo->root, op_id, "manifests", detail, err);
		json_decref(detail);
		if (rc < 0)
			goto failed;
	}
	if (vcs) {
		json_decref(paths);
		if (!(paths = commit_paths(repo, sel, err))) {
			rc = err->code;
			goto failed;
		}
		size_t np = json_array_size(paths);
		const char **pv = tt_calloc(np ? np : 1, sizeof *pv);
		for (size_t i = 0; pv && i < np; i++)
			pv[i] = json_string_value(json_array_get(paths, i));
		tt_fault(is_pull ? "pull:before-vcs-commit" : "commit:before-vcs-commit");
		/* The commit will name these pins, and a clone made from this
		 * repository may keep them after it is rewritten away here: gc
		 * then keeps them (see gc.c).  Marked first, so a crash errs on
		 * keeping. */
		{
			json_t *ids = json_array();
			tt_error ignored = TT_ERROR_INIT;
			for (size_t i = 0; ids && i < nouts; i++)
				if (outs[i].has_pin)
					json_array_append_new(ids, json_string(outs[i].pin.id));
			tt_index_note_committed(repo->vcs->shared_dir, repo->config.dataset_id, ids, &ignored);
			tt_error_clear(&ignored);
			json_decref(ids);
		}
		rc = pv ? tt_vcs_commit(repo->vcs, pv, np, message ? message : "", repo->ws.bookmark,
						 &vcs_commit, err)
			: tt_error_oom(err);
		free(pv);
		if (rc < 0)
			goto failed;
		tt_fault(is_pull ? "pull:after-vcs-commit" : "commit:after-vcs-commit");
		json_t *detail = json_pack("{s:s}", "commit", vcs_commit);
		rc = tt_oplog_progress(repo->root, op_id, "vcs-commit", detail, err);
		json_decref(detail);
		if (rc < 0)
			goto failed;
	}
	mark_base_states(repo, outs, nouts);
	if ((rc = tt_workspace_save(&repo->ws, repo->root, err)) < 0)
		goto failed;
	/* Reported (and journaled) in tether-vcs's order. */
	qsort(outs, nouts, sizeof *outs, outcome_order);
	json_t *result = journal_result(outs, nouts, vcs_commit);
	rc = tt_oplog_done(repo->root, op_id, result, NULL, NULL, err);
	json_decref(result);
	if (rc < 0)
		goto done;
	if (vcs) {
		char why[64];
		tt_error ignored = TT_ERROR_INIT;
		snprintf(why, sizeof why, "%s %s", is_pull ? "pull" : "commit", op_id);
		tt_engine_close_interrupted(repo, interrupted, op_id, why, &ignored);
		tt_error_clear(&ignored);
	}
	goto report;

failed:
	/* A VCS commit that landed names the pins and carries the manifests:
	 * keep everything, finish as a commit, and surface the error. */
	{
		json_t *now_pos = NULL;
		tt_error ignored = TT_ERROR_INIT;
		const char *landed = NULL;
		if (vcs && tt_vcs_position(repo->vcs, &now_pos, &ignored) == 0) {
			/* jj: the working-copy commit's id changes on every
			 * snapshot; a landed commit moved @ onto a new parent. */
			const char *field = tt_engine_vcs_is_jj(repo) ? "parent" : "commit";
			const char *before = json_string_value(json_object_get(position, field));
			const char *after = json_string_value(json_object_get(now_pos, field));
			if (after && (!before || strcmp(before, after) != 0))
				landed = after;
		}
		if (landed) {
			free(vcs_commit);
			vcs_commit = tt_strdup(landed);
			mark_base_states(repo, outs, nouts);
			tt_workspace_save(&repo->ws, repo->root, &ignored);
			json_t *kept = journal_result(outs, nouts, vcs_commit);
			json_object_set_new(kept, "failed_after_commit", json_string(tt_error_text(err)));
			tt_oplog_done(repo->root, op_id, kept, NULL, NULL, &ignored);
			json_decref(kept);
		} else {
			rollback_pins(repo, created, created_keys, ncreated);
			restore_manifests(repo, texts);
			size_t li;
			json_t *lp;
			json_array_foreach(written_listings, li, lp)
				tt_unlink(json_string_value(lp), &ignored);
			json_t *undone = json_pack("{s:s,s:b}", "failed", tt_error_text(err), "rolled_back", 1);
			tt_oplog_done(repo->root, op_id, undone, NULL, NULL, &ignored);
			json_decref(undone);
		}
		json_decref(now_pos);
		tt_error_clear(&ignored);
		goto done;
	}

report:
	{
		json_t *pinned = json_object(), *unrec = json_array();
		for (size_t i = 0; i < nouts; i++) {
			if (outs[i].has_pin)
				json_object_set_new(pinned, outs[i].key, json_string(outs[i].pin.ref));
			else if (outs[i].recoverable)
				json_object_set_new(pinned, outs[i].key, json_null());
			else
				json_array_append_new(unrec, json_string(outs[i].key));
		}
		*out = json_pack("{s:s?,s:o,s:o,s:O}", "vcs_commit", vcs_commit, "pinned", pinned,
				 "unrecoverable", unrec, "unchanged", unchanged);
		if (!*out)
			rc = tt_error_oom(err);
	}
done:
	free(outs);
	free(created);
	free(created_keys);
	free(vcs_commit);
	json_decref(pre);
	json_decref(texts);
	json_decref(position);
	json_decref(wstext);
	json_decref(paths);
	json_decref(unchanged);
	json_decref(written_listings);
	json_decref(plan_json);
	json_decref(interrupted);
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
