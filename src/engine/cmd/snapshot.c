/*
 * engine/cmd/snapshot.c - `snapshot` and `status`: fingerprint objects
 * concurrently, cache what was read in workspace.toml, and classify each
 * object against its committed manifest.
 */
#include "engine/cmd/snapshot.h"

#include <stdlib.h>
#include <pthread.h>
#include <string.h>

#include "core/kinds.h"
#include "backends/dispatch.h"
#include "core/oplog.h"
#include "engine/cmd/ops.h"
#include "engine/kernel/context.h"
#include "engine/kernel/progress.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/select.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "backends/registry.h"

/* --- selection ----------------------------------------------------------- */

static bool selected(const json_t *keys, const char *key)
{
	size_t i;
	json_t *k;
	json_array_foreach(keys, i, k)
		if (strcmp(json_string_value(k), key) == 0)
			return true;
	return false;
}

/* --- snapshot ----------------------------------------------------------- */

typedef struct fp_job {
	tt_repo *repo;
	const tt_manifest *m;
	char *ref;            /* where it is read; NULL: upstream / base */
	bool moving;
	json_t *state;        /* result */
	tt_error err;
} fp_job;

static void fingerprint_one(size_t i, void *ctx)
{
	fp_job *job = &((fp_job *)ctx)[i];
	tt_backend *b = NULL;
	json_t *loc = NULL;
	/* Backends were built before the fan-out; this only looks them up. */
	if (tt_engine_backend(job->repo, job->m->kind, &b, &job->err) < 0)
		goto done;
	if (!job->ref && !job->moving) {
		/* Not moving: read the upstream head, `at` dropped. */
		loc = json_deep_copy(job->m->locator);
		if (!loc) {
			tt_error_oom(&job->err);
			goto done;
		}
		json_object_del(loc, "at");
	}
	if (tt_backend_fingerprint(b, loc ? loc : job->m->locator, job->ref, &job->state, &job->err) < 0)
		job->state = NULL;
done:
	if (job->err.code)
		tt_error_object(&job->err, job->m->key, job->m->kind);
	json_decref(loc);
	tt_engine_progress_step(job->repo, job->m->key);
}

/* An Observed object under `file = "immutable"` may not change at all. */
static int enforce_immutability(tt_repo *repo, const json_t *states, tt_error *err)
{
	const char *key;
	json_t *state;
	json_object_foreach((json_t *)states, key, state) {
		const tt_manifest *m = tt_manifests_find(&repo->objects, key);
		if (!m || !m->state || strcmp(m->policy.file, "immutable") != 0)
			continue;
		unsigned caps = tt_engine_caps(repo, m);
		if (strcmp(tt_tier_name(caps), "observed") != 0 || tt_engine_same(m, state, m->state))
			continue;
		return tt_engine_immutable_changed(m, err);
	}
	return 0;
}

int tt_engine_immutable_changed(const tt_manifest *m, tt_error *err)
{
	tt_error_set(err, TT_EIMMUTABLE, "immutable object '%s' changed since it was committed; "
		     "re-register with acceptance to record the new state", m->key);
	tt_error_hint(err, "an immutable object's bytes may not change; record the new state by "
			   "re-registering it (`tether remove %s`, `tether add ...`), or set `--file "
			   "versioned` where the store keeps versions", m->key);
	return tt_error_object(err, m->key, m->kind);
}

static int cmp_path_order(const void *x, const void *y)
{
	return tt_key_path_order((*(const tt_manifest *const *)x)->key, (*(const tt_manifest *const *)y)->key);
}

/* What a snapshot carries from step to step. */
typedef struct snapshot_run {
	tt_repo *repo;
	const json_t *keys;	    /* borrowed: the selection (NULL: every object) */
	const tt_manifest **by_path; /* the objects in object order (manifest paths) */
	fp_job *jobs;
	size_t njobs;
	json_t *states; /* key -> state read, or committed */
	json_t *errors; /* key -> {ref, error} of an object that could not be read */
} snapshot_run;

/* A job per object to read: when asking upstream every selected object
 * in object order, else the moving ones by key. */
static int snapshot_jobs(snapshot_run *sr, bool ask_upstream, tt_error *err)
{
	tt_repo *repo = sr->repo;
	int rc;
	for (size_t i = 0; i < repo->objects.n; i++)
		sr->by_path[i] = &repo->objects.items[i];
	qsort(sr->by_path, repo->objects.n, sizeof *sr->by_path, cmp_path_order);
	for (size_t i = 0; i < repo->objects.n; i++) {
		const tt_manifest *m = ask_upstream ? sr->by_path[i] : &repo->objects.items[i];
		if (sr->keys && !selected(sr->keys, m->key))
			continue;
		bool moving = tt_engine_moving(repo, m);
		if (!ask_upstream && !moving)
			continue;
		fp_job *job = &sr->jobs[sr->njobs++];
		job->repo = repo;
		job->m = m;
		job->moving = moving;
		job->err = (tt_error)TT_ERROR_INIT;
		if ((rc = tt_engine_working_ref(repo, m, &job->ref, err)) < 0)
			return rc;
	}
	return 0;
}

/* The jobs side by side, counted (objects and files) for the progress callback. */
static int fingerprint_all(snapshot_run *sr, tt_error *err)
{
	tt_engine_progress_begin(sr->repo, "fingerprint", sr->njobs);
	tt_engine_progress_files(sr->repo, true);
	int rc = tt_engine_fanout_cancellable(sr->repo, "fingerprint", sr->njobs, fingerprint_one, sr->jobs, err);
	tt_engine_progress_files(sr->repo, false);
	tt_engine_progress_end(sr->repo);
	return rc;
}

/* What each job read or why it could not; objects not read stand at
 * their committed state. */
static void gather_states(snapshot_run *sr)
{
	for (size_t i = 0; i < sr->njobs; i++) {
		fp_job *j = &sr->jobs[i];
		if (j->state)
			json_object_set(sr->states, j->m->key, j->state);
		else
			json_object_set_new(sr->errors, j->m->key,
					    json_pack("{s:s,s:s}", "ref", j->ref ? j->ref : "", "error",
						      tt_error_text(&j->err)));
	}
	for (size_t i = 0; i < sr->repo->objects.n; i++) {
		const tt_manifest *m = sr->by_path[i];
		if ((sr->keys && !selected(sr->keys, m->key)) || json_object_get(sr->states, m->key) ||
		    json_object_get(sr->errors, m->key) || !m->state)
			continue;
		json_object_set(sr->states, m->key, m->state);
	}
}

/* Did this snapshot read key? */
static bool snapshot_read(snapshot_run *sr, const char *key)
{
	bool read = false;
	for (size_t i = 0; i < sr->njobs; i++)
		read = read || strcmp(sr->jobs[i].m->key, key) == 0;
	return read;
}

/* Cache what was read in the workspace; a partial snapshot keeps what
 * earlier ones learned; failures replace a state with the error and its
 * branch. */
static int cache_snapshot(snapshot_run *sr, tt_error *err)
{
	tt_workspace *ws = &sr->repo->ws;
	json_t *cached = json_object(), *failed = json_object();
	const char *key;
	json_t *v;
	if (!cached || !failed) {
		json_decref(cached);
		json_decref(failed);
		return tt_error_oom(err);
	}
	json_object_foreach(ws->last_snapshot, key, v)
		if (tt_manifests_find(&sr->repo->objects, key))
			json_object_set(cached, key, v);
	for (size_t i = 0; i < sr->njobs; i++)
		if (sr->jobs[i].state)
			json_object_set(cached, sr->jobs[i].m->key, sr->jobs[i].state);
	json_object_foreach(sr->states, key, v)
		if (!json_object_get(cached, key))
			json_object_set(cached, key, v);
	json_object_foreach(ws->last_snapshot_errors, key, v)
		if (tt_manifests_find(&sr->repo->objects, key) && !snapshot_read(sr, key))
			json_object_set(failed, key, v);
	json_object_foreach(sr->errors, key, v) {
		json_object_del(cached, key);
		json_object_set(failed, key, v);
	}
	char now[40];
	tt_now_iso_micro(now);
	json_decref(ws->last_snapshot);
	json_decref(ws->last_snapshot_errors);
	ws->last_snapshot = cached;
	ws->last_snapshot_errors = failed;
	free(ws->last_snapshot_at);
	ws->last_snapshot_at = tt_strdup(now);
	return tt_workspace_save(ws, sr->repo->root, err);
}

/* One error naming every failing object. */
static int fingerprint_failures(json_t *errors, tt_error *err)
{
	tt_buf msg = TT_BUF_INIT;
	const char *key;
	json_t *v;
	tt_buf_printf(&msg, "%zu object(s) could not be fingerprinted:", json_object_size(errors));
	json_object_foreach(errors, key, v) {
		/* "key: [kind] ...": the text names the backend, the line the object. */
		const char *text = json_string_value(json_object_get(v, "error"));
		size_t kl = strlen(key);
		bool named = text && text[0] == '[' && strncmp(text + 1, key, kl) == 0 && text[kl + 1] == ']';
		tt_buf_printf(&msg, "\n  %s%s%s", named ? "" : key, named ? "" : ": ", text ? text : "");
	}
	int rc = tt_error_set(err, TT_EBACKEND, "%s", msg.ptr);
	tt_buf_release(&msg);
	return rc;
}

/*
 * Fingerprint the selected objects side by side, stand the rest at their
 * committed state, refuse a changed immutable object, and cache the
 * result in the workspace.
 */
int tt_engine_snapshot(tt_repo *repo, const json_t *keys, bool upstream, json_t **states_out,
		       json_t **failures, tt_error *err)
{
	/* tether-vcs's orders, which the cached tables keep: every object in
	 * its object order (manifest paths, see tt_key_path_order) when asking
	 * upstream, else the moving ones by key; then the rest in object order. */
	snapshot_run sr = { .repo = repo, .keys = keys, .states = json_object(), .errors = json_object() };
	int rc = 0;

	*states_out = NULL;
	if (!sr.states || !sr.errors || !(sr.jobs = tt_calloc(repo->objects.n, sizeof *sr.jobs))) {
		rc = tt_error_oom(err);
		goto done;
	}
	tt_engine_prepare(repo);
	bool ask_upstream = upstream && (tt_engine_on_trunk(repo) || !repo->ws.bookmark);
	if (!(sr.by_path = tt_calloc(repo->objects.n ? repo->objects.n : 1, sizeof *sr.by_path))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = snapshot_jobs(&sr, ask_upstream, err)) < 0 || (rc = fingerprint_all(&sr, err)) < 0)
		goto done;
	gather_states(&sr);
	if ((rc = enforce_immutability(repo, sr.states, err)) < 0 || (rc = cache_snapshot(&sr, err)) < 0)
		goto done;
	if (json_object_size(sr.errors) && !failures) {
		rc = fingerprint_failures(sr.errors, err);
		goto done;
	}
	if (failures) {
		*failures = sr.errors;
		sr.errors = NULL;
	}
	*states_out = sr.states;
	sr.states = NULL;
done:
	for (size_t i = 0; i < sr.njobs; i++) {
		free(sr.jobs[i].ref);
		json_decref(sr.jobs[i].state);
		tt_error_clear(&sr.jobs[i].err);
	}
	free(sr.jobs);
	free(sr.by_path);
	json_decref(sr.states);
	json_decref(sr.errors);
	return rc;
}

int tt_repo_snapshot(tt_repo *repo, const char *const *selectors, size_t n, json_t **out,
		     tt_error *err)
{
	json_t *keys = NULL;
	int rc;
	*out = NULL;
	if ((rc = tt_repo_lock(repo, err)) < 0)
		return rc;
	if ((rc = tt_engine_select(repo, selectors, n, &keys, err)) == 0)
		rc = tt_engine_snapshot(repo, keys, true, out, NULL, err);
	json_decref(keys);
	tt_repo_unlock(repo);
	return rc;
}

/* --- status ------------------------------------------------------------- */

/* How the VCS bookmark and this workspace have parted, if they have; each
 * message says what to do.  VCS-only: no store is contacted. */
static int bookmark_drift(tt_repo *repo, json_t **out, tt_error *err)
{
	const char *b = repo->ws.bookmark;
	json_t *marks = NULL;
	char *here = NULL;
	tt_buf msg = TT_BUF_INIT;
	int rc = 0;
	*out = json_array();
	if (!b)
		return 0;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) < 0 ||
	    (rc = tt_vcs_current_bookmark(repo->vcs, &here, err)) < 0)
		goto done;
	const char *trunk = tt_config_trunk(&repo->config);
	bool on = here && strcmp(here, b) == 0;
	if (!json_object_get(marks, b)) {
		if (on)
			goto done; /* an unborn branch: HEAD is on it */
		if (here && strcmp(here, trunk) != 0 && json_object_get(marks, here))
			tt_buf_printf(&msg, "bookmark '%s' is gone and '%s' sits where the working copy is -- "
				      "renamed? `tether new %s` continues there (its store branches are forked "
				      "anew; '%s''s go to `gc --prune-bookmarks`)", b, here, here, b);
		else
			tt_buf_printf(&msg, "bookmark '%s' no longer exists in the VCS; `tether new -b %s` "
				      "recreates it here, `tether new NAME` joins another; its store branches stay "
				      "until `gc --prune-bookmarks`", b, b);
	} else if (!on) {
		tt_buf_printf(&msg, "the working copy has left bookmark '%s' (now on %s); `tether new %s` "
			      "returns to it, `tether new` works where you are", b, here ? here : "no bookmark", b);
	} else {
		/* Moved by hand: its commit no longer records what the branches hold. */
		tt_manifest_set at = { 0 };
		tt_error ignored = TT_ERROR_INIT;
		const char *commit = json_string_value(json_object_get(marks, b));
		if (tt_engine_objects_at(repo, commit, &at, NULL, &ignored) == 0) {
			tt_buf moved = TT_BUF_INIT;
			const char *key;
			json_t *expected;
			json_object_foreach(repo->ws.base_states, key, expected) {
				const tt_manifest *m = tt_manifests_find(&at, key);
				const tt_manifest *now = tt_manifests_find(&repo->objects, key);
				bool differs = m && m->state ? !tt_engine_same(m, m->state, expected)
							     : (now && now->state);
				if (differs)
					tt_buf_printf(&moved, "%s%s", moved.len ? ", " : "", key);
			}
			if (moved.len)
				tt_buf_printf(&msg, "bookmark '%s' was moved to %.12s: its commit no longer records "
					      "what the store branches of %s hold; `tether new %s` resets them onto the "
					      "pins there (refused while they hold unpinned writes; --discard to drop "
					      "those)", b, commit, moved.ptr, b);
			tt_buf_release(&moved);
		}
		tt_manifests_release(&at);
		tt_error_clear(&ignored);
	}
	if (msg.len)
		json_array_append_new(*out, json_string(msg.ptr));
done:
	tt_buf_release(&msg);
	json_decref(marks);
	free(here);
	return rc;
}

/* The last snapshot's failure for key while it still describes what a
 * snapshot would read: no state cached since, same branch. */
static const char *cached_error(tt_repo *repo, const tt_manifest *m)
{
	json_t *failed = json_object_get(repo->ws.last_snapshot_errors, m->key);
	if (!failed || json_object_get(repo->ws.last_snapshot, m->key))
		return NULL;
	char *ref = NULL;
	tt_error ignored = TT_ERROR_INIT;
	tt_engine_working_ref(repo, m, &ref, &ignored);
	tt_error_clear(&ignored);
	const char *was = json_string_value(json_object_get(failed, "ref"));
	bool same = strcmp(was ? was : "", ref ? ref : "") == 0;
	free(ref);
	if (!same)
		return NULL;
	const char *e = json_string_value(json_object_get(failed, "error"));
	return e && *e ? e : "the last snapshot could not read it";
}

/* Does status read the stores afresh?  When asked (or configured), or
 * when nothing is cached: no state, and no failure still current. */
static bool status_fresh(tt_repo *repo, const json_t *keys, int snapshot)
{
	bool want = snapshot < 0 ? repo->config.snapshot_auto : snapshot > 0;
	bool any_cached_error = false;
	for (size_t i = 0; i < repo->objects.n; i++)
		if (selected(keys, repo->objects.items[i].key) && cached_error(repo, &repo->objects.items[i]))
			any_cached_error = true;
	return want || !(json_object_size(repo->ws.last_snapshot) || any_cached_error);
}

/* Why key could not be read, if it could not (borrowed: from failures,
 * the workspace, or kerr). */
static const char *status_error(tt_repo *repo, const tt_manifest *m, bool fresh, json_t *failures, tt_error *kerr)
{
	const tt_kind *known;
	if (fresh) {
		json_t *f = json_object_get(failures, m->key);
		return f ? json_string_value(json_object_get(f, "error")) : NULL;
	}
	if (tt_kind_lookup(&known, m->kind, kerr) < 0) {
		/* No snapshot asked, but no backend could read it either: not
		 * "clean" from the cache. */
		tt_error_object(kerr, m->key, NULL);
		return tt_error_text(kerr);
	}
	return cached_error(repo, m);
}

/* With `verify_on_status`: does the committed pin still hold?  (new reference) */
static json_t *status_verify(tt_repo *repo, const tt_manifest *m)
{
	tt_backend *b;
	tt_verify_status vs = TT_VERIFY_UNKNOWN;
	char *msg = NULL;
	tt_error verr = TT_ERROR_INIT;
	if (tt_engine_backend(repo, m->kind, &b, &verr) == 0 && tt_backend_has(b, verify)) {
		tt_pin pin = { 0 };
		if (m->pin_id) {
			snprintf(pin.id, sizeof pin.id, "%s", m->pin_id);
			snprintf(pin.ref, sizeof pin.ref, "%s", m->pin_ref);
		}
		if (tt_backend_verify(b, m->locator, m->state, m->pin_id ? &pin : NULL, false, &vs, &msg, &verr) < 0)
			vs = TT_VERIFY_UNKNOWN;
	}
	free(msg);
	tt_error_clear(&verr);
	return json_string(tt_verify_status_name(vs));
}

/* One object's line of the status: its state against the committed one (new reference). */
static json_t *status_object(tt_repo *repo, const tt_manifest *m, json_t *states, json_t *failures, bool fresh)
{
	unsigned caps = tt_engine_caps(repo, m);
	json_t *current = json_object_get(states, m->key);
	bool committed = m->state != NULL;
	bool differs = committed && current && !tt_engine_same(m, current, m->state);
	bool moving = tt_engine_moving(repo, m);
	tt_error kerr = TT_ERROR_INIT;
	const char *error = status_error(repo, m, fresh, failures, &kerr);
	const char *label = error ? "error" : !committed ? "new" : (differs && !moving) ? "behind"
		: (differs && moving) ? "modified" : "clean";
	json_t *verify = repo->config.verify_on_status && committed ? status_verify(repo, m) : json_null();
	json_t *line = json_pack("{s:s,s:s,s:s,s:s,s:b,s:b,s:s,s:o,s:s?}", "key", m->key, "kind", m->kind, "tier",
				 tt_tier_name(caps), "state", label, "pinned", m->pin_id != NULL, "recoverable",
				 m->recoverable, "origin", m->created ? "created" : "adopted", "verify", verify,
				 "error", error);
	tt_error_clear(&kerr);
	return line;
}

/* The journal's operations the VCS no longer agrees with, as shown.  A
 * journal that cannot be read costs the warning, not the status (new
 * reference). */
static json_t *status_vcs_drift(tt_repo *repo)
{
	json_t *vdrift = NULL;
	tt_oplog log = TT_OPLOG_INIT;
	tt_error lerr = TT_ERROR_INIT;
	if (tt_oplog_read(repo->root, &log, &lerr) == 0)
		tt_engine_vcs_drift(repo, &log, &vdrift, &lerr);
	tt_error_clear(&lerr);
	tt_oplog_free(&log);
	return vdrift;
}

/* The selected keys among the stale ones (new reference). */
static json_t *stale_selected(json_t *stale, const json_t *keys)
{
	json_t *chosen = json_array();
	size_t si;
	json_t *sk;
	json_array_foreach(stale, si, sk)
		if (selected(keys, json_string_value(sk)))
			json_array_append(chosen, sk);
	return chosen;
}

/* The fields of each drift the status shows (new reference). */
static json_t *vcs_drift_shown(json_t *vdrift)
{
	json_t *vshown = json_array();
	size_t vi;
	json_t *vd;
	json_array_foreach(vdrift, vi, vd)
		json_array_append_new(vshown, json_pack("{s:O,s:O,s:O,s:O}", "op", json_object_get(vd, "op"),
							"commit", json_object_get(vd, "commit"), "referenced",
							json_object_get(vd, "referenced"), "message",
							json_object_get(vd, "message")));
	return vshown;
}

/*
 * `status`: the selected objects' states (read afresh, or as cached), each
 * against its committed one, then how the bookmark, the journal and the
 * committed states have parted from this workspace.
 */
int tt_repo_status(tt_repo *repo, const char *const *selectors, size_t n, int snapshot,
		   json_t **out, tt_error *err)
{
	json_t *keys = NULL, *states = NULL, *failures = NULL, *objects = NULL, *stale = NULL;
	json_t *chosen_stale = NULL;
	char hash[65];
	int rc;
	*out = NULL;
	if ((rc = tt_repo_lock(repo, err)) < 0)
		return rc;
	if ((rc = tt_engine_select(repo, selectors, n, &keys, err)) < 0)
		goto done;
	bool fresh = status_fresh(repo, keys, snapshot);
	if (fresh) {
		if ((rc = tt_engine_snapshot(repo, keys, true, &states, &failures, err)) < 0)
			goto done;
	} else {
		states = json_incref(repo->ws.last_snapshot);
	}
	objects = json_array();
	if (!objects) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < repo->objects.n; i++)
		if (selected(keys, repo->objects.items[i].key))
			json_array_append_new(objects, status_object(repo, &repo->objects.items[i], states, failures,
								     fresh));
	if ((rc = tt_manifests_hash(hash, &repo->objects, err)) < 0)
		goto done;
	json_t *bdrift = NULL, *vdrift = NULL;
	if ((rc = bookmark_drift(repo, &bdrift, err)) < 0) {
		json_decref(bdrift);
		goto done;
	}
	vdrift = status_vcs_drift(repo);
	stale = tt_engine_stale_keys(repo);
	chosen_stale = stale_selected(stale, keys);
	json_t *vshown = vcs_drift_shown(vdrift);
	*out = json_pack("{s:s,s:b,s:O,s:b,s:s?,s:s?,s:b,s:o,s:o,s:O}", "manifest_hash", hash,
			 "stale", json_array_size(chosen_stale) > 0, "stale_keys", chosen_stale,
			 "fresh", fresh, "snapshot_at", repo->ws.last_snapshot_at, "bookmark",
			 repo->ws.bookmark, "trunk", tt_engine_on_trunk(repo), "bookmark_drift",
			 bdrift ? bdrift : json_array(), "vcs_drift", vshown, "objects", objects);
	bdrift = NULL;
	json_decref(vdrift);
	if (!*out)
		rc = tt_error_oom(err);
done:
	tt_repo_unlock(repo);
	json_decref(keys);
	json_decref(states);
	json_decref(failures);
	json_decref(objects);
	json_decref(stale);
	json_decref(chosen_stale);
	return rc;
}
