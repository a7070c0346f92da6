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

/* One pull: the objects selected, their heads, and what moved. */
typedef struct pull_ctx {
	tt_repo *repo;
	const char *mine;       /* borrowed: the bookmark this workspace works on */
	const char *message;    /* borrowed; NULL: "pull BOOKMARK: N objects" */
	size_t nsel;
	json_t *keys;           /* the objects selected */
	json_t *committed;      /* key -> {from, to}: what moved */
	json_t *unchanged, *skipped;
	json_t *fetched;        /* key -> the head read */
	json_t *interrupted;
	head_job *jobs;
	size_t njobs;
	tt_plan *plan;
	tt_lock rlock;
} pull_ctx;

static void pull_ctx_release(pull_ctx *c)
{
	for (size_t k = 0; c->jobs && k < c->njobs; k++) {
		free(c->jobs[k].ref);
		json_decref(c->jobs[k].state);
		tt_error_clear(&c->jobs[k].err);
	}
	free(c->jobs);
	tt_plan_free(c->plan);
	json_decref(c->keys);
	json_decref(c->committed);
	json_decref(c->unchanged);
	json_decref(c->skipped);
	json_decref(c->fetched);
	json_decref(c->interrupted);
}

/* The workspace works on a bookmark, the one named if one is. */
static int check_bookmark(const pull_ctx *c, const char *bookmark, tt_error *err)
{
	if (!c->mine)
		return tt_error_set(err, TT_ECONFIG, "this working copy is on no bookmark; `tether new NAME` to "
				    "work on one, then pull");
	if (bookmark && strcmp(bookmark, c->mine) != 0)
		return tt_error_set(err, TT_ECONFIG, "this workspace works on '%s'; `tether new %s` first", c->mine,
				    bookmark);
	return 0;
}

/* The working copy on the bookmark, with no uncommitted manifest edits:
 * they would be swept into the pull's commit (unless they are an
 * interrupted pull's, which this one finishes). */
static int require_clean(pull_ctx *c, tt_error *err)
{
	tt_repo *repo = c->repo;
	char *here = NULL;
	int rc;
	if ((rc = tt_vcs_current_bookmark(repo->vcs, &here, err)) == 0 && !(here && strcmp(here, c->mine) == 0)) {
		rc = tt_error_set(err, TT_ECONFIG, "the working copy is not on bookmark '%s' (it moved to %s)",
				  c->mine, here ? here : "no bookmark");
		tt_error_hint(err, "run `tether new %s` to return, or `tether new` to work where you are", c->mine);
	}
	free(here);
	if (rc < 0)
		return rc;
	if ((rc = rewind_interrupted_pull(repo, err)) < 0)
		return rc;
	size_t n = strlen(repo->vcs->root);
	const char *rel = strncmp(repo->root, repo->vcs->root, n) == 0 && repo->root[n] == '/'
				  ? repo->root + n + 1 : "";
	char *objs = *rel ? tt_asprintf("%s/.tether/objects", rel) : tt_strdup(".tether/objects");
	const char *paths[] = { objs };
	bool dirty = false;
	rc = objs ? tt_vcs_dirty(repo->vcs, paths, 1, &dirty, err) : tt_error_oom(err);
	free(objs);
	if (rc < 0)
		return rc;
	if (dirty)
		return tt_error_set(err, TT_ECONFIG, "manifests have uncommitted edits; `tether commit` them "
				    "(or undo) before pulling");
	return 0;
}

/* A head to read for each selected object on a branch (on the trunk: at
 * its own head too); the rest are skipped with why. */
static int queue_heads(pull_ctx *c, tt_error *err)
{
	tt_repo *repo = c->repo;
	int rc;
	if (!(c->jobs = tt_calloc(repo->objects.n + 1, sizeof *c->jobs)))
		return tt_error_oom(err);
	bool trunk = tt_engine_on_trunk(repo);
	size_t i;
	json_t *kv;
	json_array_foreach(c->keys, i, kv) {
		const tt_manifest *m = tt_manifests_find(&repo->objects, json_string_value(kv));
		if (!m->state) {
			json_object_set_new(c->skipped, m->key, json_string("not committed yet; the first commit reads it"));
			continue;
		}
		char *ref = NULL;
		if ((rc = tt_engine_working_ref(repo, m, &ref, err)) < 0)
			return rc;
		if (!ref && !trunk) {
			json_object_set_new(c->skipped, m->key, json_string("no branch yet; sits at its pin"));
			continue;
		}
		c->jobs[c->njobs++] = (head_job){ repo, m, ref, NULL, TT_ERROR_INIT };
	}
	return 0;
}

/* The heads, read in parallel; the first that could not be read fails
 * the pull. */
static int fetch_heads(pull_ctx *c, tt_error *err)
{
	int rc;
	tt_engine_prepare(c->repo);
	if ((rc = tt_engine_fanout(c->njobs, read_head, c->jobs, err)) < 0)
		return rc;
	for (size_t i = 0; i < c->njobs; i++)
		if (!c->jobs[i].state)
			return tt_error_set(err, c->jobs[i].err.code, "%s", tt_error_text(&c->jobs[i].err));
	return 0;
}

/* Each head against the object's state: unchanged or committed (a changed
 * immutable Observed object is refused, as at commit); every head is
 * fetched and becomes the last snapshot's. */
static int compare_heads(pull_ctx *c, tt_error *err)
{
	tt_repo *repo = c->repo;
	for (size_t i = 0; i < c->njobs; i++) {
		const tt_manifest *m = c->jobs[i].m;
		json_t *head = c->jobs[i].state;
		unsigned caps = tt_engine_caps(repo, m);
		if (!tt_engine_same(m, head, m->state) && strcmp(m->policy.file, "immutable") == 0 &&
		    strcmp(tt_tier_name(caps), "observed") == 0)
			return tt_engine_immutable_changed(m, err);
		if (tt_engine_same(m, head, m->state))
			json_array_append_new(c->unchanged, json_string(m->key));
		else
			json_object_set_new(c->committed, m->key, json_pack("{s:O,s:O}", "from", m->state, "to", head));
		json_object_set(c->fetched, m->key, head);
		json_object_set(repo->ws.last_snapshot, m->key, head);
	}
	return 0;
}

/* Nothing to commit: the workspace saved, and an interrupted pull before
 * this one is moot. */
static int close_moot_pulls(pull_ctx *c, tt_error *err)
{
	int rc;
	if ((rc = tt_engine_scan_interrupted(c->repo, TT_CLOSE_RERUN, &c->interrupted, err)) == 0 &&
	    (rc = tt_workspace_save(&c->repo->ws, c->repo->root, err)) == 0) {
		tt_error ignored = TT_ERROR_INIT;  /* best effort, as after a commit */
		tt_engine_close_interrupted(c->repo, c->interrupted, NULL, "a later pull", &ignored);
		tt_error_clear(&ignored);
	}
	return rc;
}

/* What moved, committed on the bookmark as a commit of the fetched heads;
 * its commit (*vcs_commit, caller frees) and pin ids (into pinned). */
static int commit_fetched(pull_ctx *c, char **vcs_commit, json_t *pinned, tt_error *err)
{
	tt_repo *repo = c->repo;
	char text[256];
	size_t n = json_object_size(c->committed);
	json_t *res = NULL;
	int rc;
	if (c->message)
		snprintf(text, sizeof text, "%s", c->message);
	else
		snprintf(text, sizeof text, "pull %s: %zu object%s", c->mine, n, n == 1 ? "" : "s");
	if ((rc = tt_engine_plan_commit(repo, text, c->nsel ? c->keys : NULL, false, false, false, c->fetched,
					&c->plan, err)) == 0 &&
	    (rc = tt_engine_repo_lock(repo, &c->rlock, err)) == 0 &&
	    (rc = tt_engine_apply_commit(repo, c->plan, true, false, &res, err)) == 0) {
		*vcs_commit = tt_strdup(json_string_value(json_object_get(res, "vcs_commit")));
		const char *k;
		json_t *v;
		/* JSON: pin ids (not refs), as tether-vcs prints them. */
		json_object_foreach(json_object_get(res, "pinned"), k, v) {
			const char *ref = json_string_value(v);
			json_object_set_new(pinned, k, ref && strncmp(ref, "tether.", 7) == 0 ? json_string(ref + 7)
											  : json_null());
		}
	}
	json_decref(res);
	return rc;
}

/* Commit what moved (or close the pulls it makes moot), and the report. */
static int pull_and_report(pull_ctx *c, json_t **out, tt_error *err)
{
	char *vcs_commit = NULL;
	json_t *pinned = json_object();
	int rc;
	if (!json_object_size(c->committed))
		rc = close_moot_pulls(c, err);
	else
		rc = commit_fetched(c, &vcs_commit, pinned, err);
	if (rc == 0 && !(*out = json_pack("{s:s,s:O,s:O,s:O,s:s?,s:O}", "bookmark", c->mine, "committed",
					  c->committed, "unchanged", c->unchanged, "skipped", c->skipped,
					  "vcs_commit", vcs_commit, "pinned", pinned)))
		rc = tt_error_oom(err);
	free(vcs_commit);
	json_decref(pinned);
	return rc;
}

int tt_engine_repo_pull(tt_repo *repo, const char *bookmark, const char *const *selectors, size_t nsel,
		 const char *message, json_t **out, tt_error *err)
{
	pull_ctx c = { .repo = repo, .message = message, .nsel = nsel, .committed = json_object(),
		       .unchanged = json_array(), .skipped = json_object(), .fetched = json_object(),
		       .rlock = TT_LOCK_INIT };
	int rc;
	*out = NULL;
	if ((rc = tt_repo_lock(repo, err)) < 0)
		goto cleanup;
	c.mine = repo->ws.bookmark;
	if ((rc = check_bookmark(&c, bookmark, err)) < 0)
		goto done;
	if ((rc = tt_engine_select(repo, selectors, nsel, &c.keys, err)) < 0 ||
	    (nsel && (rc = tt_engine_require_whole_scopes(repo, c.keys, "pull", err)) < 0))
		goto done;
	if ((rc = require_clean(&c, err)) < 0 || (rc = queue_heads(&c, err)) < 0 || (rc = fetch_heads(&c, err)) < 0 ||
	    (rc = compare_heads(&c, err)) < 0)
		goto done;
	rc = pull_and_report(&c, out, err);
done:
	tt_lock_release(&c.rlock);
	tt_repo_unlock(repo);
cleanup:
	pull_ctx_release(&c);
	return rc;
}
