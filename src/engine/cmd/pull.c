/*
 * engine/cmd/pull.c - `pull`: the dataset's fetch.  Read the heads of the
 * bookmark's branches (on the trunk: every upstream branch, and objects
 * without branches at their own head), pin what moved, and commit it on the
 * bookmark.  Nothing moved: no commit.
 */
#include "engine/cmd/pull.h"

#include <stdlib.h>
#include <string.h>

#include "core/kinds.h"
#include "backends/dispatch.h"
#include "core/layout.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/cmd/commit.h"
#include "engine/cmd/snapshot.h"
#include "engine/kernel/context.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/resume.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/select.h"
#include "engine/kernel/state.h"
#include "util/fs.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

typedef struct head_job {
	tt_repo *repo;
	const tt_manifest *m;
	char *ref;
	json_t *state;
	tt_error err;
} head_job;

static void read_head(size_t i, void *ctx)
{
	head_job *j = &((head_job *)ctx)[i];
	tt_backend *b;
	j->err = (tt_error)TT_ERROR_INIT;
	if (tt_engine_backend(j->repo, j->m->kind, &b, &j->err) < 0)
		goto done;
	if (j->ref) {
		tt_backend_fingerprint(b, j->m->locator, j->ref, &j->state, &j->err);
	} else {
		json_t *loc = json_deep_copy(j->m->locator);
		json_object_del(loc, "at");
		tt_backend_fingerprint(b, loc, NULL, &j->state, &j->err);
		json_decref(loc);
	}
done:
	if (j->err.code)
		tt_error_object(&j->err, j->m->key, j->m->kind);
}

/*
 * The last commit, where a pull's commit lands on top of: git's HEAD, jj's
 * @- (jj's @ is the working-copy commit, which every snapshot rewrites),
 * and the same as `pre.vcs` journaled it (position(): git "commit", jj
 * "parent").
 */
static int last_commit(tt_repo *repo, const json_t *position, const char **before, char **head, tt_error *err)
{
	bool jj = tt_engine_vcs_is_jj(repo);
	*before = json_string_value(json_object_get(position, jj ? "parent" : "commit"));
	return jj ? tt_vcs_resolve(repo->vcs, "@-", head, err) : tt_vcs_current_rev(repo->vcs, head, err);
}

/*
 * An interrupted pull of this checkout that wrote manifests but never
 * committed them (the VCS is still where it started): put those manifests
 * back as committed, in the working tree and in git's staging area (a pull
 * killed between its `git add` and `git commit` left them staged), so this
 * pull starts where that one did and finishes it (its journal entry is
 * closed once this one succeeds).  Only a manifest that is still exactly the
 * committed one or the interrupted pull's own write is touched; anything
 * else is the user's, and nothing is put back.
 */
/* tt_vcs_unstage over a JSON array of VCS-root-relative paths. */
static int unstage_all(tt_repo *repo, const json_t *paths, tt_error *err)
{
	size_t n = json_array_size(paths), i;
	const char **v = tt_calloc(n ? n : 1, sizeof *v);
	json_t *p;
	int rc;
	if (!v)
		return tt_error_oom(err);
	json_array_foreach(paths, i, p)
		v[i] = json_string_value(p);
	rc = tt_vcs_unstage(repo->vcs, v, n, err);
	free(v);
	return rc;
}

static int rewind_interrupted_pull(tt_repo *repo, tt_error *err)
{
	tt_oplog log = TT_OPLOG_INIT;
	json_t *back = json_object(), *staged = NULL;
	char *head = NULL, *reldir = NULL;
	int rc = 0;
	if (!back)
		return tt_error_oom(err);
	if (tt_oplog_read(repo->root, &log, err) < 0) {
		/* An unreadable journal names no pull to finish; the dirty
		 * manifests are then refused as anyone's. */
		tt_error_clear(err);
		goto done;
	}
	const tt_op_entry *e = NULL;
	for (size_t i = 0; i < log.count && !e; i++) {
		const tt_op_entry *x = tt_oplog_newest(&log, i);
		if (strcmp(x->command, "commit") == 0 || strcmp(x->command, "pull") == 0)
			e = x;
	}
	if (!e || strcmp(e->command, "pull") != 0 || !tt_op_incomplete(e) || json_is_string(e->parent))
		goto done;
	const char *before = NULL;
	tt_error none = TT_ERROR_INIT;
	if (last_commit(repo, json_object_get(e->pre, "vcs"), &before, &head, &none) < 0 || !head || !before ||
	    strcmp(head, before) != 0) {
		tt_error_clear(&none);
		goto done;
	}
	if (!(reldir = tt_engine_objects_reldir(repo))) {
		rc = tt_error_oom(err);
		goto done;
	}
	size_t i;
	json_t *a;
	if (!(staged = json_array())) {
		rc = tt_error_oom(err);
		goto done;
	}
	json_array_foreach(json_object_get(e->plan, "actions"), i, a) {
		const char *op = json_string_value(json_object_get(a, "op"));
		const char *key = json_string_value(json_object_get(a, "key"));
		json_t *params = json_object_get(a, "params");
		if (!op || !key || (strcmp(op, "pin") != 0 && strcmp(op, "record") != 0))
			continue;
		char *rel = tt_asprintf("%s/%s.toml", reldir, key), *then = NULL, *now = NULL;
		size_t then_len = 0;
		if (!rel) {
			rc = tt_error_oom(err);
			goto done;
		}
		rc = tt_vcs_read_file_at(repo->vcs, head, rel, &then, &then_len, err);
		if (rc == 0 && then)
			json_array_append_new(staged, json_string(rel));
		free(rel);
		if (rc == 0)
			rc = tt_manifest_read_text(&now, repo->root, key, err);
		bool same = rc == 0 && then && now && strlen(now) == then_len && memcmp(now, then, then_len) == 0;
		const tt_manifest *m = tt_manifests_find(&repo->objects, key);
		const char *pid = json_string_value(json_object_get(params, "pin_id"));
		bool ours = rc == 0 && then && m && m->state &&
			    tt_engine_same(m, m->state, json_object_get(params, "state")) &&
			    (strcmp(op, "record") == 0 || (m->pin_id && pid && strcmp(m->pin_id, pid) == 0));
		if (rc == 0 && !same && ours)
			json_object_set_new(back, key, json_stringn(then, then_len));
		free(then);
		free(now);
		if (rc < 0)
			goto done;
		if (!same && !ours) {
			json_object_clear(back); /* someone else's edit: leave everything */
			goto done;
		}
	}
	const char *key;
	json_t *text;
	json_object_foreach(back, key, text) {
		char *rel = NULL, *path = NULL;
		if ((rc = tt_key_relpath(&rel, key, err)) < 0)
			goto done;
		path = tt_tether_path(repo->root, rel);
		free(rel);
		rc = path ? tt_write_file_atomic(path, json_string_value(text), json_string_length(text), 0644, err)
			  : tt_error_oom(err);
		free(path);
		if (rc < 0)
			goto done;
	}
	/* What the interrupted `git add` staged goes too: left there, the
	 * manifests would still differ from the last commit. */
	if ((rc = unstage_all(repo, staged, err)) < 0)
		goto done;
	if (json_object_size(back)) {
		tt_manifest_set fresh;
		if ((rc = tt_manifests_load(&fresh, repo->root, err)) < 0)
			goto done;
		tt_manifests_release(&repo->objects);
		repo->objects = fresh;
	}
done:
	tt_oplog_free(&log);
	json_decref(back);
	json_decref(staged);
	free(head);
	free(reldir);
	return rc;
}

int tt_engine_repo_pull(tt_repo *repo, const char *bookmark, const char *const *selectors, size_t nsel,
		 const char *message, json_t **out, tt_error *err)
{
	json_t *keys = NULL, *committed = json_object(), *unchanged = json_array(), *skipped = json_object();
	json_t *fetched = json_object(), *result = NULL, *interrupted = NULL;
	head_job *jobs = NULL;
	size_t njobs = 0;
	tt_plan *plan = NULL;
	tt_lock rlock = TT_LOCK_INIT;
	int rc;
	*out = NULL;
	if ((rc = tt_repo_lock(repo, err)) < 0)
		goto cleanup;
	const char *mine = repo->ws.bookmark;
	if (!mine) {
		rc = tt_error_set(err, TT_ECONFIG, "this working copy is on no bookmark; `tether new NAME` to "
				  "work on one, then pull");
		goto done;
	}
	if (bookmark && strcmp(bookmark, mine) != 0) {
		rc = tt_error_set(err, TT_ECONFIG, "this workspace works on '%s'; `tether new %s` first", mine,
				  bookmark);
		goto done;
	}
	if ((rc = tt_engine_select(repo, selectors, nsel, &keys, err)) < 0 ||
	    (nsel && (rc = tt_engine_require_whole_scopes(repo, keys, "pull", err)) < 0))
		goto done;
	/* Uncommitted manifest edits would be swept into the pull's commit. */
	{
		json_t *marks = NULL;
		char *here = NULL;
		if ((rc = tt_vcs_current_bookmark(repo->vcs, &here, err)) == 0 &&
		    !(here && strcmp(here, mine) == 0)) {
			rc = tt_error_set(err, TT_ECONFIG, "the working copy is not on bookmark '%s' (it moved to %s)",
					  mine, here ? here : "no bookmark");
			tt_error_hint(err, "run `tether new %s` to return, or `tether new` to work where you are", mine);
		}
		free(here);
		json_decref(marks);
		if (rc < 0)
			goto done;
		/* ... unless they are an interrupted pull's, which this one finishes. */
		if ((rc = rewind_interrupted_pull(repo, err)) < 0)
			goto done;
		size_t n = strlen(repo->vcs->root);
		const char *rel = strncmp(repo->root, repo->vcs->root, n) == 0 && repo->root[n] == '/'
					  ? repo->root + n + 1 : "";
		char *objs = *rel ? tt_asprintf("%s/.tether/objects", rel) : tt_strdup(".tether/objects");
		const char *paths[] = { objs };
		bool dirty = false;
		rc = objs ? tt_vcs_dirty(repo->vcs, paths, 1, &dirty, err) : tt_error_oom(err);
		free(objs);
		if (rc < 0)
			goto done;
		if (dirty) {
			rc = tt_error_set(err, TT_ECONFIG, "manifests have uncommitted edits; `tether commit` them "
					  "(or undo) before pulling");
			goto done;
		}
	}
	jobs = tt_calloc(repo->objects.n + 1, sizeof *jobs);
	if (!jobs) {
		rc = tt_error_oom(err);
		goto done;
	}
	bool trunk = tt_engine_on_trunk(repo);
	size_t i;
	json_t *kv;
	json_array_foreach(keys, i, kv) {
		const tt_manifest *m = tt_manifests_find(&repo->objects, json_string_value(kv));
		if (!m->state) {
			json_object_set_new(skipped, m->key, json_string("not committed yet; the first commit reads it"));
			continue;
		}
		char *ref = NULL;
		if ((rc = tt_engine_working_ref(repo, m, &ref, err)) < 0)
			goto done;
		if (!ref && !trunk) {
			json_object_set_new(skipped, m->key, json_string("no branch yet; sits at its pin"));
			continue;
		}
		jobs[njobs++] = (head_job){ repo, m, ref, NULL, TT_ERROR_INIT };
	}
	tt_engine_prepare(repo);
	if ((rc = tt_engine_fanout(njobs, read_head, jobs, err)) < 0)
		goto done;
	for (i = 0; i < njobs; i++) {
		if (!jobs[i].state) {
			rc = tt_error_set(err, jobs[i].err.code, "%s", tt_error_text(&jobs[i].err));
			goto done;
		}
	}
	for (i = 0; i < njobs; i++) {
		const tt_manifest *m = jobs[i].m;
		unsigned caps = tt_engine_caps(repo, m);
		/* A changed immutable Observed object is refused, as at commit. */
		if (!tt_engine_same(m, jobs[i].state, m->state) && strcmp(m->policy.file, "immutable") == 0 &&
		    strcmp(tt_tier_name(caps), "observed") == 0) {
			rc = tt_engine_immutable_changed(m, err);
			goto done;
		}
		if (tt_engine_same(m, jobs[i].state, m->state))
			json_array_append_new(unchanged, json_string(m->key));
		else
			json_object_set_new(committed, m->key,
					    json_pack("{s:O,s:O}", "from", m->state, "to", jobs[i].state));
		json_object_set(fetched, m->key, jobs[i].state);
		json_object_set(repo->ws.last_snapshot, m->key, jobs[i].state);
	}
	char *vcs_commit = NULL;
	json_t *pinned = json_object();
	if (!json_object_size(committed)) {
		/* Nothing to commit; an interrupted pull before this one is moot. */
		if ((rc = tt_engine_scan_interrupted(repo, TT_CLOSE_RERUN, &interrupted, err)) == 0 &&
		    (rc = tt_workspace_save(&repo->ws, repo->root, err)) == 0) {
			tt_error ignored = TT_ERROR_INIT;  /* best effort, as after a commit */
			tt_engine_close_interrupted(repo, interrupted, NULL, "a later pull", &ignored);
			tt_error_clear(&ignored);
		}
	} else {
		char text[256];
		size_t n = json_object_size(committed);
		if (message)
			snprintf(text, sizeof text, "%s", message);
		else
			snprintf(text, sizeof text, "pull %s: %zu object%s", mine, n, n == 1 ? "" : "s");
		json_t *res = NULL;
		if ((rc = tt_engine_plan_commit(repo, text, nsel ? keys : NULL, false, false, false, fetched, &plan,
						err)) == 0 &&
		    (rc = tt_engine_repo_lock(repo, &rlock, err)) == 0 &&
		    (rc = tt_engine_apply_commit(repo, plan, true, false, &res, err)) == 0) {
			vcs_commit = tt_strdup(json_string_value(json_object_get(res, "vcs_commit")));
			const char *k;
			json_t *v;
			/* JSON: pin ids (not refs), as tether-vcs prints them. */
			json_object_foreach(json_object_get(res, "pinned"), k, v) {
				const char *ref = json_string_value(v);
				json_object_set_new(pinned, k, ref && strncmp(ref, "tether.", 7) == 0
									 ? json_string(ref + 7) : json_null());
			}
		}
		json_decref(res);
	}
	if (rc == 0)
		result = json_pack("{s:s,s:O,s:O,s:O,s:s?,s:O}", "bookmark", mine, "committed", committed,
				   "unchanged", unchanged, "skipped", skipped, "vcs_commit", vcs_commit, "pinned", pinned);
	free(vcs_commit);
	json_decref(pinned);
	if (rc == 0) {
		*out = result;
		result = NULL;
	}
done:
	tt_lock_release(&rlock);
	tt_repo_unlock(repo);
cleanup:
	for (size_t k = 0; jobs && k < njobs; k++) {
		free(jobs[k].ref);
		json_decref(jobs[k].state);
		tt_error_clear(&jobs[k].err);
	}
	free(jobs);
	tt_plan_free(plan);
	json_decref(keys);
	json_decref(committed);
	json_decref(unchanged);
	json_decref(skipped);
	json_decref(fetched);
	json_decref(result);
	json_decref(interrupted);
	return rc;
}
