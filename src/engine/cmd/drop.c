/*
 * engine/cmd/drop.c - `drop`: throw a bookmark away, the opposite of
 * `promote`, in one step: leave it if this checkout is on it (`new` to
 * --to, default the trunk), drop the commits only it reaches, delete it,
 * then release what it held in the stores - `gc --prune-bookmarks` for this
 * bookmark alone.  Refused for the trunk and for a bookmark another live
 * checkout works on.  The plan's store actions are a preview made as if
 * the commits were gone; the apply re-plans them live after the VCS half.
 * Not undoable by tether.
 */
#include "engine/cmd/drop.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/oplog.h"
#include "core/plan.h"
#include "backends/dispatch.h"
#include "engine/kernel/checkouts.h"
#include "engine/cmd/fork.h"
#include "engine/kernel/context.h"
#include "engine/kernel/preconditions.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/planned.h"
#include "util/fault.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/gc/gc.h"
#include "engine/gc/gc_plan.h"

/* Python's repr of a str, for the messages that quote names with it. */
static char *repr(const char *s)
{
	tt_buf b = TT_BUF_INIT;
	tt_pyv_repr_str(&b, s, strlen(s));
	return tt_buf_detach(&b);
}

/* "<lead> 'name' <mid> a, b; <tail>" */
static int holders_error(tt_error *err, const json_t *holders, const char *lead, const char *name, const char *mid,
			 const char *tail)
{
	tt_buf names = TT_BUF_INIT;
	size_t i;
	json_t *h;
	json_array_foreach(holders, i, h)
		tt_buf_printf(&names, "%s%s", i ? ", " : "", json_string_value(h));
	char *r = repr(name);
	int rc = tt_error_set(err, TT_ECONFIG, "%s%s%s%s%s", lead, r ? r : name, mid, names.ptr ? names.ptr : "", tail);
	free(r);
	tt_buf_release(&names);
	return rc;
}

static bool on_bookmark(tt_repo *repo, const char *bookmark, const json_t *commits, tt_error *err)
{
	char *here = NULL;
	bool on = false;
	if (tt_engine_vcs_is_jj(repo)) {
		/* jj: the bookmark at the working copy or its parent (a hand edit
		 * in @ keeps it on its parent's).  One with no commits of its own
		 * shares its commit with its base, and jj cannot tell which of the
		 * two the working copy is on: workspace.toml can. */
		json_t *marks = NULL, *pos = NULL;
		if (tt_vcs_bookmarks(repo->vcs, &marks, err) == 0 &&
		    tt_vcs_position(repo->vcs, &pos, err) == 0) {
			const char *at = json_string_value(json_object_get(marks, bookmark));
			const char *c = json_string_value(json_object_get(pos, "commit"));
			const char *p = json_string_value(json_object_get(pos, "parent"));
			on = at && ((c && strcmp(at, c) == 0) || (p && strcmp(at, p) == 0));
			if (on && !json_array_size(commits))
				on = repo->ws.bookmark && strcmp(repo->ws.bookmark, bookmark) == 0;
		}
		json_decref(marks);
		json_decref(pos);
		return on;
	}
	if (tt_vcs_current_bookmark(repo->vcs, &here, err) == 0)
		on = here && strcmp(here, bookmark) == 0;
	free(here);
	return on;
}

static const char **string_list(const json_t *arr, size_t extra)
{
	const char **out = tt_calloc(json_array_size(arr) + extra + 1, sizeof *out);
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x)
		if (out)
			out[i] = json_string_value(x);
	return out;
}

/* The manifests the commits held (locators made absolute). */
static int dropped_manifests(tt_repo *repo, const json_t *commits, tt_manifest_set *out, tt_error *err)
{
	json_t *files_by = NULL;
	char *reldir = tt_engine_objects_reldir(repo);
	const char **ids = string_list(commits, 0);
	int rc = 0;
	if (!reldir || !ids) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (json_array_size(commits) &&
	    (rc = tt_vcs_files_at_many(repo->vcs, ids, json_array_size(commits), reldir, &files_by, err)) < 0)
		goto done;
	const char *rev;
	json_t *files;
	json_object_foreach(files_by, rev, files) {
		const char *path;
		json_t *text;
		json_object_foreach(files, path, text) {
			if (!tt_engine_is_manifest_path(reldir, path))
				continue;
			tt_manifest m;
			tt_error ig = TT_ERROR_INIT;
			if (tt_manifest_parse(&m, json_string_value(text), json_string_length(text), path, &ig) == 0) {
				tt_absolutize_locator(m.locator, m.kind, repo->root, &ig);
				if (TT_ARRAY_GROW(out->items, out->alloc, out->n + 1) == 0)
					out->items[out->n++] = m;
				else
					tt_manifest_release(&m);
			}
			tt_error_clear(&ig);
		}
	}
done:
	free(reldir);
	free(ids);
	json_decref(files_by);
	return rc;
}

/* The commits an interrupted drop of bookmark planned (its journal entry
 * never finished), or NULL: a rerun picks up its store side. */
static json_t *interrupted_drop(tt_repo *repo, const char *bookmark)
{
	tt_oplog log = TT_OPLOG_INIT;
	tt_error ig = TT_ERROR_INIT;
	json_t *found = NULL;
	if (tt_oplog_read(repo->root, &log, &ig) == 0) {
		for (size_t i = log.count; i-- > 0 && !found;) {
			const tt_op_entry *e = &log.entries[i];
			if (strcmp(e->command, "drop") != 0)
				continue;
			json_t *ctx = json_object_get(e->plan, "context");
			const char *b = json_string_value(json_object_get(ctx, "bookmark"));
			if (!b || strcmp(b, bookmark) != 0)
				continue;
			if (tt_op_incomplete(e))
				found = json_deep_copy(json_object_get(ctx, "commits"));
			break;
		}
	}
	tt_oplog_free(&log);
	tt_error_clear(&ig);
	if (found && !json_is_array(found)) {
		json_decref(found);
		found = NULL;
	}
	return found;
}

char *tt_engine_interrupted_drop(tt_repo *repo, const tt_op_entry *e)
{
	json_t *ctx = json_object_get(e->plan, "context"), *marks = NULL;
	const char *bookmark = json_string_value(json_object_get(ctx, "bookmark"));
	bool left = false, deleted = false;
	size_t i;
	json_t *p;
	json_array_foreach(e->progress, i, p) {
		const char *action = json_string_value(json_object_get(p, "action"));
		left |= action && strcmp(action, "leave-bookmark") == 0;
		deleted |= action && strcmp(action, "delete-bookmark") == 0;
	}
	const char *came = deleted ? "after abandoning the bookmark's commits and deleting it"
			   : left  ? "after leaving the bookmark, before abandoning its commits"
				   : "before abandoning the bookmark's commits";
	tt_error ig = TT_ERROR_INIT;
	bool exists = bookmark && tt_vcs_bookmarks(repo->vcs, &marks, &ig) == 0 && json_object_get(marks, bookmark);
	tt_error_clear(&ig);
	json_decref(marks);
	if (!bookmark)
		bookmark = "None";
	char *finish = exists ? tt_asprintf("`tether drop %s` again finishes it", bookmark)
			      : tt_asprintf("%s is gone, so `tether gc --prune-bookmarks` finishes its store half (a "
					    "branch it keeps held what only the dropped commits pinned; `--force-prune` "
					    "deletes it)", bookmark);
	char *out = finish ? tt_asprintf("%s (drop %s), which was interrupted %s: %s. A drop is finished, not "
					 "undone -- the VCS's own undo is the way back", e->id, bookmark, came, finish)
			   : NULL;
	free(finish);
	return out;
}

/* A resumed drop: each branch the interrupted run set out to delete and
 * that its store no longer lists is deleted once more, so what a killed
 * delete left of it (a Lance tree whose branch file went) goes too.  A
 * branch that is simply gone is no error here. */
static void finish_branch_deletes(tt_repo *repo, const char *bookmark, const char *running)
{
	tt_oplog log = TT_OPLOG_INIT;
	tt_error ig = TT_ERROR_INIT;
	if (tt_oplog_read(repo->root, &log, &ig) < 0)
		goto done;
	for (size_t i = log.count; i-- > 0;) {
		const tt_op_entry *e = &log.entries[i];
		if (strcmp(e->command, "drop") != 0 || (e->id && strcmp(e->id, running) == 0))
			continue;
		const char *b = json_string_value(json_object_get(json_object_get(e->plan, "context"), "bookmark"));
		if (!b || strcmp(b, bookmark) != 0)
			continue;
		if (!tt_op_incomplete(e))
			break;
		size_t k;
		json_t *a;
		json_array_foreach(json_object_get(e->plan, "actions"), k, a) {
			const char *op = json_string_value(json_object_get(a, "op"));
			const char *kind = json_string_value(json_object_get(a, "kind"));
			const char *ref = json_string_value(json_object_get(a, "target"));
			json_t *loc = json_object_get(json_object_get(a, "params"), "locator");
			tt_backend *be;
			json_t *refs = NULL;
			if (!op || strcmp(op, "delete-branch") != 0 || !kind || !ref || !json_is_object(loc) ||
			    tt_engine_backend(repo, kind, &be, &ig) < 0 || !tt_backend_has(be, delete_working_ref) ||
			    tt_backend_list_working_refs(be, loc, &refs, &ig) < 0) {
				tt_error_clear(&ig);
				continue;
			}
			bool listed = tt_json_has_string(refs, ref);
			json_decref(refs);
			if (!listed)
				tt_backend_delete_working_ref(be, loc, ref, &ig);
			tt_error_clear(&ig);
		}
		break;
	}
done:
	tt_oplog_free(&log);
	tt_error_clear(&ig);
}

/* What `drop` is asked to remove and from where: refused as a whole when
 * the bookmark is the trunk, missing, held by a checkout, or cannot be
 * left for its destination.  *commits: the ones only it reaches (or an
 * interrupted drop's, *resumed); *here: this checkout is on it. */
static int drop_subject(tt_repo *repo, const tt_drop_opts *opt, json_t *marks, json_t **commits, bool *resumed,
			bool *here, tt_error *err)
{
	const char *bookmark = opt->bookmark, *trunk = tt_config_trunk(&repo->config);
	const char *destination = opt->to ? opt->to : trunk;
	json_t *holders = NULL, *prior = NULL;
	char *r = NULL;
	int rc = 0;
	*commits = NULL;
	*resumed = *here = false;
	if (strcmp(bookmark, trunk) == 0) {
		r = repr(bookmark);
		rc = tt_error_set(err, TT_ECONFIG, "%s is the trunk bookmark; it cannot be dropped", r ? r : bookmark);
		goto done;
	}
	if (!json_object_get(marks, bookmark) && !(prior = interrupted_drop(repo, bookmark))) {
		r = repr(bookmark);
		rc = tt_error_set(err, TT_ECONFIG, "no bookmark %s", r ? r : bookmark);
		goto done;
	}
	if ((rc = tt_engine_bookmark_holders(repo, bookmark, &holders, err)) < 0)
		goto done;
	if (json_array_size(holders)) {
		rc = holders_error(err, holders, "bookmark ", bookmark, " is worked on by checkout(s) ",
				   "; `tether forget-workspace` or `tether new` there first");
		goto done;
	}
	if (strcmp(destination, trunk) != 0 && !json_object_get(marks, destination)) {
		r = repr(destination);
		rc = tt_error_set(err, TT_ECONFIG, "no bookmark %s to leave for", r ? r : destination);
		goto done;
	}
	if (!tt_vcs_has(repo->vcs, exclusive_commits)) {
		rc = tt_error_set(err, TT_EVCS, "this VCS cannot tell which commits only one bookmark reaches");
		goto done;
	}
	if (prior) {
		*commits = prior;
		*resumed = true;
		prior = NULL;
	} else if ((rc = tt_vcs_exclusive_commits(repo->vcs, bookmark, commits, err)) < 0) {
		goto done;
	}
	*here = !*resumed && on_bookmark(repo, bookmark, *commits, err);
	if (err->code) {
		rc = err->code;
		goto done;
	}
	if (*here) {
		json_decref(holders);
		holders = NULL;
		if ((rc = tt_engine_bookmark_holders(repo, destination, &holders, err)) < 0)
			goto done;
		if (json_array_size(holders))
			rc = holders_error(err, holders, "cannot leave for ", destination, ": checkout(s) ",
					   " work on it; `--to` another bookmark");
	}
done:
	json_decref(holders);
	json_decref(prior);
	free(r);
	return rc;
}

/* The plan's context and what applying compares first. */
static void drop_context(tt_repo *repo, const tt_drop_opts *opt, tt_plan *plan, json_t *marks, json_t *commits,
			 const char *leave, const char *head, const char *digest, bool resumed, tt_error *err)
{
	const char *bookmark = opt->bookmark, *k;
	json_t *v, *x, *params;
	tt_buf d = TT_BUF_INIT;
	json_t *ctx = json_pack("{s:s,s:O,s:s?,s:b,s:b,s:s,s:s?,s:s}", "bookmark", bookmark, "commits", commits,
				"leave", leave, "delete_stores", opt->delete_stores, "force_prune", opt->force_prune,
				"workspace_id", repo->ws.workspace_id, "vcs_head", head, "history_digest", digest);
	/* tether-vcs's plans have no release_foreign: written only when set */
	if (!ctx || (opt->release_foreign && json_object_set_new(ctx, "release_foreign", json_true()) < 0)) {
		json_decref(ctx);
		tt_error_oom(err);
		return;
	}
	json_object_foreach(ctx, k, v)
		tt_plan_set_context(plan, k, v, err);
	json_decref(ctx);
	if (resumed) {
		/* An interrupted drop got past deleting the bookmark: what is
		 * left is its store side. */
		tt_plan_set_context(plan, "resume", json_true(), err);
		tt_plan_note(plan, "resuming an interrupted drop: the bookmark and its commits are gone already; what is "
				   "left is the store side", err);
	}
	x = json_string(repo->ws.workspace_id);
	tt_plan_require(plan, "workspace_id", x, NULL, NULL,
			"this drop plan was made in another checkout; re-run the plan here", err);
	json_decref(x);
	tt_buf_printf(&d, "this checkout is on {observed} now, not %s as when the drop plan was made (or as its "
			  "workspace file says); `tether new` to settle it, then re-run the plan",
		      repo->ws.bookmark ? repo->ws.bookmark : "no bookmark");
	x = repo->ws.bookmark ? json_string(repo->ws.bookmark) : json_null();
	tt_plan_require(plan, "workspace_bookmark", x, NULL, NULL, d.ptr, err);
	json_decref(x);
	x = json_string(digest);
	tt_plan_require(plan, "history_digest", x, NULL, NULL,
			"history changed since the drop plan was made; re-run the plan", err);
	json_decref(x);
	params = json_pack("{s:s}", "bookmark", bookmark);
	tt_buf_reset(&d);
	tt_buf_printf(&d, "bookmark %s moved since the drop plan was made (now at {observed}); re-run the plan",
		      bookmark);
	tt_plan_require(plan, "bookmark_head", json_object_get(marks, bookmark), bookmark, params, d.ptr, err);
	tt_buf_reset(&d);
	tt_buf_printf(&d, "another checkout started working on %s ({observed}); re-run the plan", bookmark);
	tt_plan_require(plan, "no_new_holders", NULL, NULL, params, d.ptr, err);
	json_decref(params);
	x = head ? json_string(head) : json_null();
	tt_plan_require(plan, "vcs_head", x, NULL, NULL,
			"the working copy moved since the drop plan was made; re-run the plan", err);
	json_decref(x);
	tt_buf_release(&d);
}

/* The VCS side: leave the bookmark, abandon each commit only it reaches
 * (with its subject), delete the bookmark. */
static int drop_vcs_actions(tt_repo *repo, tt_plan *plan, const char *bookmark, json_t *commits,
			    const char *leave, tt_error *err)
{
	json_t *infos = NULL, *c, *info;
	size_t i, j;
	int rc;
	if (leave) {
		tt_buf d = TT_BUF_INIT;
		tt_buf_printf(&d, "this checkout is on %s; `new %s` first", bookmark, leave);
		tt_plan_action(plan, "leave-bookmark", NULL, NULL, leave, d.ptr, NULL, err);
		tt_buf_release(&d);
	}
	if (json_array_size(commits)) {
		const char **ids = string_list(commits, 0);
		rc = ids ? tt_vcs_commit_info(repo->vcs, ids, json_array_size(commits), &infos, err) : tt_error_oom(err);
		free(ids);
		if (rc < 0)
			return rc;
	}
	json_array_foreach(commits, i, c) {
		const char *id = json_string_value(c);
		char subject[1024] = "", short_id[13];
		json_array_foreach(infos, j, info) {
			if (strcmp(json_string_value(json_object_get(info, "commit_id")), id) != 0)
				continue;
			const char *msg = json_string_value(json_object_get(info, "message"));
			if (msg)
				snprintf(subject, sizeof subject, "%.*s", (int)strcspn(msg, "\r\n"), msg);
		}
		snprintf(short_id, sizeof short_id, "%.12s", id);
		json_t *pp = json_pack("{s:s}", "commit", id);
		tt_plan_action(plan, "abandon-commit", NULL, NULL, short_id, subject, pp, err);
		json_decref(pp);
	}
	json_decref(infos);
	tt_plan_action(plan, "delete-bookmark", NULL, NULL, bookmark, "jj: goes with its commits; git: the branch",
		       NULL, err);
	return err->code < 0 ? err->code : 0;
}

/*
 * The store side, as gc will see it once the commits are gone: a gc plan
 * scoped to the bookmark, from the destination's manifests (and none of
 * this checkout's working refs) while this checkout is on the bookmark.
 */
static int drop_store_preview(tt_repo *repo, const tt_drop_opts *opt, json_t *commits, const char *leave,
			      const char *head, bool resumed, tt_plan **preview, tt_error *err)
{
	const char *bookmark = opt->bookmark;
	const char **excluded = string_list(commits, 1);
	size_t nex = json_array_size(commits);
	tt_manifest_set saved_objects = { 0 }, at = { 0 }, gone_set = { 0 };
	json_t *saved_refs = NULL, *saved_pending = NULL;
	int rc;
	if (!excluded)
		return tt_error_oom(err);
	if (leave) {
		if ((rc = tt_engine_objects_at(repo, leave, &at, NULL, err)) < 0) {
			tt_manifests_release(&at);
			free(excluded);
			return rc;
		}
		saved_objects = repo->objects;
		repo->objects = at;
		saved_refs = repo->ws.working_refs;
		saved_pending = repo->ws.pending_forks;
		repo->ws.working_refs = json_object();
		repo->ws.pending_forks = json_object();
		if (head)
			excluded[nex++] = head;
	}
	tt_gc_opts o = { .version = TT_GC_OPTS_VERSION, .prune_bookmarks = true, .force_prune = opt->force_prune,
			  .delete_stores = opt->delete_stores, .release_foreign = opt->release_foreign };
	const char *one[] = { bookmark };
	rc = resumed ? dropped_manifests(repo, commits, &gone_set, err) : 0;
	if (rc == 0) {
		tt_gc_scope scope = { .bookmarks = one, .nbookmarks = 1, .excluded_commits = excluded,
				      .nexcluded = nex, .gone_bookmarks = one, .ngone = 1,
				      .dropped = gone_set.items, .ndropped = gone_set.n };
		rc = tt_gc_plan_scoped(repo, &o, &scope, preview, err);
	}
	tt_manifests_release(&gone_set);
	if (leave) {
		tt_manifests_release(&repo->objects);
		repo->objects = saved_objects;
		json_decref(repo->ws.working_refs);
		json_decref(repo->ws.pending_forks);
		repo->ws.working_refs = saved_refs;
		repo->ws.pending_forks = saved_pending;
	}
	free(excluded);
	return rc;
}

/* The gc preview's actions and notes into the plan, then what remotes
 * still hold. */
static void drop_store_actions(tt_repo *repo, tt_plan *plan, const tt_plan *preview, const char *bookmark,
			       json_t *commits, json_t *remotes, tt_error *err)
{
	size_t i;
	json_t *c;
	for (i = 0; i < tt_plan_action_count(preview); i++) {
		tt_plan_action_view a;
		tt_plan_action_at(preview, i, &a);
		tt_plan_action(plan, a.op, a.key, a.kind, a.target, a.detail, a.params, err);
	}
	for (i = 0; i < tt_plan_note_count(preview); i++)
		tt_plan_note(plan, tt_plan_note_at(preview, i), err);
	if (json_array_size(remotes)) {
		tt_buf n = TT_BUF_INIT;
		json_array_foreach(remotes, i, c)
			tt_buf_printf(&n, "%s%s", i ? ", " : "", json_string_value(c));
		tt_buf_printf(&n, " %s; ", json_array_size(commits) ? "still reach its commits" : "also exist");
		if (strcmp(tt_vcs_kind(repo->vcs), "jj") == 0)
			tt_buf_puts(&n, "the deletion goes with the next `jj git push`");
		else
			tt_buf_printf(&n, "`git push <remote> --delete %s` removes them", bookmark);
		tt_plan_note(plan, n.ptr, err);
		tt_buf_release(&n);
	}
	if (tt_plan_write_count(preview))
		tt_plan_note(plan, "store actions are what gc will plan once the commits are gone; they are re-planned at "
				   "apply", err);
}

/*
 * Plan `drop`: what it removes (drop_subject), the context and
 * preconditions, the VCS side (unless an interrupted drop got past it),
 * then the store side as gc will plan it once the commits are gone.
 */
static int plan_drop(tt_repo *repo, const tt_drop_opts *opt, tt_plan **out, tt_error *err)
{
	const char *bookmark = opt->bookmark;
	const char *destination = opt->to ? opt->to : tt_config_trunk(&repo->config);
	json_t *marks = NULL, *commits = NULL, *remotes = NULL;
	char *head = NULL, digest[17];
	tt_plan *plan = NULL, *preview = NULL;
	bool resumed = false, here = false;
	int rc;
	*out = NULL;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) < 0 ||
	    (rc = drop_subject(repo, opt, marks, &commits, &resumed, &here, err)) < 0)
		goto done;
	if (tt_vcs_has(repo->vcs, remote_counterparts) &&
	    (rc = tt_vcs_remote_counterparts(repo->vcs, bookmark, &remotes, err)) < 0)
		goto done;
	head = tt_engine_vcs_head(repo);
	if ((rc = tt_vcs_history_digest(repo->vcs, digest, err)) < 0)
		goto done;
	if (!(plan = tt_plan_new("drop"))) {
		rc = tt_error_oom(err);
		goto done;
	}
	const char *leave = here ? destination : NULL;
	drop_context(repo, opt, plan, marks, commits, leave, head, digest, resumed, err);
	if ((rc = err->code) < 0)
		goto done;
	if (!resumed && (rc = drop_vcs_actions(repo, plan, bookmark, commits, leave, err)) < 0)
		goto done;
	if ((rc = drop_store_preview(repo, opt, commits, leave, head, resumed, &preview, err)) < 0)
		goto done;
	drop_store_actions(repo, plan, preview, bookmark, commits, remotes, err);
	if ((rc = err->code) < 0)
		goto done;
	*out = plan;
	plan = NULL;
done:
	tt_plan_free(plan);
	tt_plan_free(preview);
	free(head);
	json_decref(marks);
	json_decref(commits);
	json_decref(remotes);
	return rc;
}

static json_t *empty_gc_report(void)
{
	return json_pack("{s:b,s:{},s:{},s:{},s:{},s:{},s:[],s:{},s:{},s:[],s:{}}", "dry_run", 0, "unpinned",
			 "kept_pins", "deleted_working_refs", "kept_working_refs", "forgotten_working_refs",
			 "deleted_listings", "deleted_stores", "kept_stores", "forgotten_stores", "failed");
}

/* {key: [..]} maps of b's added to a's, each list without repeats. */
static void merge_lists(json_t *a, const json_t *b)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)b, k, v) {
		json_t *to = json_object_get(a, k);
		if (!json_is_array(to)) {
			to = json_array();
			json_object_set_new(a, k, to);
		}
		size_t i;
		json_t *x;
		json_array_foreach(v, i, x)
			if (!tt_json_has_string(to, json_string_value(x)))
				json_array_append(to, x);
	}
}

/*
 * Leaf first: a store that deletes a branch only once the branches made
 * off it are gone (Neon) refused the bookmark's branch while the pins the
 * dropped commits made hung off it, and the same pass released those pins.
 * Judged once more, now that they are gone, the branch goes too; report
 * holds both passes.
 */
static int leaf_first_pass(tt_repo *repo, const tt_gc_opts *o, const tt_gc_scope *scope, const char *parent,
			   json_t *report, tt_error *err)
{
	json_t *kept = json_object_get(report, "kept_working_refs"), *again = NULL;
	tt_plan *plan = NULL;
	int rc;
	if (!json_object_size(kept) || !json_object_size(json_object_get(report, "unpinned")))
		return 0;
	if ((rc = tt_gc_plan_scoped(repo, o, scope, &plan, err)) < 0)
		return rc;
	if (!tt_plan_write_count(plan) || (rc = tt_gc_apply(repo, plan, parent, &again, err)) < 0)
		goto done;
	static const char *const lists[] = { "unpinned", "deleted_working_refs", "forgotten_working_refs" };
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
		json_t *a = json_object_get(report, lists[i]);
		if (json_is_object(a))
			merge_lists(a, json_object_get(again, lists[i]));
	}
	json_object_set(report, "kept_working_refs",
			json_is_object(json_object_get(again, "kept_working_refs")) ? json_object_get(again, "kept_working_refs")
										      : json_object());
	json_t *failed = json_object_get(report, "failed");
	if (json_is_object(failed) && json_is_object(json_object_get(again, "failed")))
		json_object_update(failed, json_object_get(again, "failed"));
done:
	tt_plan_free(plan);
	json_decref(again);
	return rc;
}

/* What applying a drop carries from step to step. */
typedef struct drop_run {
	tt_repo *repo;
	json_t *ctx;              /* the plan's context (borrowed) */
	const char *bookmark;     /* borrowed from ctx */
	const char *leave;        /* where this checkout goes first; NULL: it is elsewhere */
	const char *left_for;     /* leave, once left */
	bool resume, deleted;
	char op_id[TT_OP_ID_LEN + 1];
	json_t *commits;          /* the commits only the bookmark reaches */
	tt_manifest_set dropped;  /* what they (and a left checkout) pinned */
	tt_plan *gc_plan, *new_plan;
	json_t *gc_report;
} drop_run;

/* The commits only the bookmark reaches depend on every other bookmark,
 * which no precondition watches: derive them again (a resumed drop's
 * bookmark is gone: the plan's, unless the bookmark is back). */
static int drop_commits(drop_run *d, tt_error *err)
{
	int rc;
	if (d->resume) {
		json_t *marks = NULL;
		if ((rc = tt_vcs_bookmarks(d->repo->vcs, &marks, err)) < 0)
			return rc;
		bool back = json_object_get(marks, d->bookmark) != NULL;
		json_decref(marks);
		if (back)
			return tt_error_set(err, TT_ESTALEPLAN, "bookmark %s exists again since the drop plan was made; re-run "
								"the plan", d->bookmark);
		d->commits = json_deep_copy(json_object_get(d->ctx, "commits"));
		return 0;
	}
	return tt_vcs_exclusive_commits(d->repo->vcs, d->bookmark, &d->commits, err);
}

/* Refused when the commits differ from the plan's (naming the planned
 * ones another bookmark now reaches). */
static int same_commits(const drop_run *d, tt_error *err)
{
	json_t *planned = json_object_get(d->ctx, "commits");
	bool same = json_array_size(planned) == json_array_size(d->commits);
	tt_buf gained = TT_BUF_INIT;
	size_t i, nplanned = json_array_size(planned);
	json_t *c;
	int rc = 0;
	json_array_foreach(planned, i, c) {
		bool found = false;
		size_t j;
		json_t *x;
		json_array_foreach(d->commits, j, x)
			found |= json_equal(c, x);
		if (!found) {
			same = false;
			tt_buf_printf(&gained, "%s%.12s", gained.len ? ", " : "", json_string_value(c));
		}
	}
	if (!same)
		rc = tt_error_set(err, TT_ESTALEPLAN,
				  "the commits only %s reaches changed since the drop plan was made (%zu planned, %zu now%s%s); "
				  "re-run the plan", d->bookmark, nplanned, json_array_size(d->commits),
				  gained.len ? "; another bookmark now reaches " : "", gained.len ? gained.ptr : "");
	tt_buf_release(&gained);
	return rc;
}

/* Refused when this checkout moved onto or off the bookmark since the
 * plan (which leaves it only when it was on it). */
static int still_where_planned(const drop_run *d, tt_error *err)
{
	bool here = !d->resume && on_bookmark(d->repo, d->bookmark, d->commits, err);
	if (err->code)
		return err->code;
	if (here != (d->leave != NULL) && !d->resume)
		return tt_error_set(err, TT_ESTALEPLAN,
				    "this checkout %s %s%s, unlike when the drop plan was made; re-run the plan",
				    here ? "is on" : "is no longer on", d->bookmark, here ? " now" : "");
	return 0;
}

/* The journal's begin record: the plan, with the VCS position and the
 * workspace it starts from; d->op_id names it. */
static int begin_drop(drop_run *d, const tt_plan *plan, tt_error *err)
{
	json_t *pos = NULL, *pre, *pj;
	tt_buf wb = TT_BUF_INIT;
	int rc;
	if ((rc = tt_workspace_render(&wb, &d->repo->ws, err)) < 0) {
		tt_error_prefix(err, "drop %s: the journal's entry cannot hold this checkout's workspace; nothing was "
				"dropped", d->bookmark);
		tt_buf_release(&wb);
		return rc;
	}
	if ((rc = tt_vcs_position(d->repo->vcs, &pos, err)) < 0) {
		tt_buf_release(&wb);
		json_decref(pos);
		return rc;
	}
	pre = json_pack("{s:O,s:s}", "vcs", pos, "workspace", wb.ptr ? wb.ptr : "");
	tt_buf_release(&wb);
	if (!(pj = tt_plan_to_object(plan, err)))
		rc = err->code;
	else
		rc = pre ? tt_oplog_begin(d->repo->root, "drop", pj, pre, NULL, d->op_id, err) : tt_error_oom(err);
	json_decref(pj);
	json_decref(pre);
	json_decref(pos);
	if (rc < 0)
		return rc;
	tt_fault("drop:after-journal");
	return 0;
}

/* This checkout leaves the bookmark for d->leave (a `new` onto it); what
 * its objects pinned joins the dropped manifests, since the sweep may
 * delete a head they pinned. */
static int leave_bookmark(drop_run *d, tt_error *err)
{
	tt_repo *repo = d->repo;
	int rc;
	for (size_t i = 0; i < repo->objects.n; i++) {
		tt_manifest m;
		tt_error ig = TT_ERROR_INIT;
		if (tt_manifest_copy(&m, &repo->objects.items[i], &ig) == 0 &&
		    TT_ARRAY_GROW(d->dropped.items, d->dropped.alloc, d->dropped.n + 1) == 0)
			d->dropped.items[d->dropped.n++] = m;
		tt_error_clear(&ig);
	}
	tt_new_opts no = { .version = TT_NEW_OPTS_VERSION, .rev = d->leave, .eager = -1 };
	if ((rc = tt_engine_plan_new(repo, &no, &d->new_plan, err)) < 0 ||
	    (rc = tt_engine_apply_new(repo, d->new_plan, false, NULL, d->op_id, err)) < 0)
		return rc;
	d->left_for = d->leave;
	json_t *dd = json_pack("{s:s}", "target", d->leave);
	tt_oplog_progress(repo->root, d->op_id, "leave-bookmark", dd, err);
	json_decref(dd);
	tt_fault("drop:after-leave");
	return 0;
}

/* The bookmark goes from the VCS (a resumed drop's already has), then the
 * working tree's objects are read again. */
static int delete_bookmark(drop_run *d, tt_error *err)
{
	int rc;
	if (!d->resume && (rc = tt_vcs_drop_bookmark(d->repo->vcs, d->bookmark, d->commits, err)) < 0)
		return rc;
	d->deleted = true;
	json_t *dd = json_pack("{s:s}", "target", d->bookmark);
	tt_oplog_progress(d->repo->root, d->op_id, "delete-bookmark", dd, err);
	json_decref(dd);
	tt_fault("drop:after-delete-bookmark");
	tt_manifests_release(&d->repo->objects);
	return tt_manifests_load(&d->repo->objects, d->repo->root, err);
}

/* The gc scoped to the dropped bookmark and what its commits pinned
 * (leaf first), into d->gc_report. */
static int sweep_dropped(drop_run *d, tt_error *err)
{
	tt_gc_opts o = { .version = TT_GC_OPTS_VERSION, .prune_bookmarks = true,
			 .force_prune = json_is_true(json_object_get(d->ctx, "force_prune")),
			 .delete_stores = json_is_true(json_object_get(d->ctx, "delete_stores")),
			 .release_foreign = json_is_true(json_object_get(d->ctx, "release_foreign")) };
	const char *one[] = { d->bookmark };
	tt_gc_scope scope = { .bookmarks = one, .nbookmarks = 1, .dropped = d->dropped.items, .ndropped = d->dropped.n };
	int rc;
	if ((rc = tt_gc_plan_scoped(d->repo, &o, &scope, &d->gc_plan, err)) < 0)
		return rc;
	if (tt_plan_write_count(d->gc_plan)) {
		if ((rc = tt_gc_apply(d->repo, d->gc_plan, d->op_id, &d->gc_report, err)) < 0 ||
		    (rc = leaf_first_pass(d->repo, &o, &scope, d->op_id, d->gc_report, err)) < 0)
			return rc;
	} else if (!(d->gc_report = empty_gc_report())) {
		return tt_error_oom(err);
	}
	if (d->resume)
		finish_branch_deletes(d->repo, d->bookmark, d->op_id);
	return rc;
}

/* The journal's done record (the gc report less what only the text report
 * shows) and the caller's result: *out, NULL when out of memory. */
static void drop_done(const drop_run *d, json_t **out)
{
	json_t *gcj = json_deep_copy(d->gc_report);
	json_object_del(gcj, "failed");
	json_object_del(gcj, "kept_pins_shared"); /* the text report's, not the journal's */
	json_t *result = json_pack("{s:s,s:s?,s:O,s:o}", "bookmark", d->bookmark, "left_for", d->left_for, "abandoned",
				   d->commits, "gc", gcj);
	tt_error ig = TT_ERROR_INIT;
	tt_oplog_done(d->repo->root, d->op_id, result, NULL, NULL, &ig);
	tt_error_clear(&ig);
	*out = json_pack("{s:s,s:s?,s:O,s:O}", "bookmark", d->bookmark, "left_for", d->left_for, "abandoned",
			 d->commits, "gc", d->gc_report);
	json_decref(result);
}

/* The journal's done record of a drop that failed after it began: what
 * it abandoned (nothing before the bookmark went) and why. */
static void drop_failed(const drop_run *d, tt_error *err)
{
	tt_error ig = TT_ERROR_INIT;
	json_t *fr = json_pack("{s:s,s:s?,s:o,s:s}", "bookmark", d->bookmark, "left_for", d->left_for, "abandoned",
			       d->deleted ? json_incref(d->commits) : json_array(), "failed", tt_error_text(err));
	tt_oplog_done(d->repo->root, d->op_id, fr, NULL, NULL, &ig);
	json_decref(fr);
	tt_error_clear(&ig);
}

static int apply_drop(tt_repo *repo, const tt_plan *plan, json_t **out, tt_error *err)
{
	json_t *ctx = tt_plan_context(plan);
	drop_run d = { .repo = repo, .ctx = ctx, .bookmark = json_string_value(json_object_get(ctx, "bookmark")),
		       .leave = json_string_value(json_object_get(ctx, "leave")) };
	int rc;
	*out = NULL;
	if ((rc = tt_engine_check_preconditions(repo, plan, "drop", err)) < 0)
		return rc;
	if (!d.bookmark)
		return tt_error_set(err, TT_ESTALEPLAN, "this drop plan names no bookmark; re-run the plan");
	d.resume = json_is_true(json_object_get(ctx, "resume"));
	if ((rc = drop_commits(&d, err)) < 0)
		return rc;
	if ((rc = same_commits(&d, err)) < 0 || (rc = still_where_planned(&d, err)) < 0 ||
	    (rc = begin_drop(&d, plan, err)) < 0)
		goto done;
	/* What the dropped commits pinned: no references once they are gone,
	 * but the branch sweep may delete a head one of them pinned. */
	if ((rc = dropped_manifests(repo, d.commits, &d.dropped, err)) < 0 ||
	    (d.leave && !d.resume && (rc = leave_bookmark(&d, err)) < 0) || (rc = delete_bookmark(&d, err)) < 0 ||
	    (rc = sweep_dropped(&d, err)) < 0) {
		drop_failed(&d, err);
		goto done;
	}
	drop_done(&d, out);
	if (!*out)
		rc = tt_error_oom(err);
done:
	tt_manifests_release(&d.dropped);
	tt_plan_free(d.gc_plan);
	tt_plan_free(d.new_plan);
	json_decref(d.commits);
	json_decref(d.gc_report);
	return rc;
}

/* A drop killed while it left the bookmark: its inner `new` switched the
 * working copy to the destination, but the workspace file still names the
 * dropped bookmark.  The rerun finishes that `new` first (the same one the
 * drop runs), so it plans from where the killed run stood. */
static int settle_interrupted_leave(tt_repo *repo, const char *bookmark, tt_error *err)
{
	tt_oplog log = TT_OPLOG_INIT;
	tt_error ig = TT_ERROR_INIT;
	char *leave = NULL, *here = NULL;
	tt_plan *new_plan = NULL;
	int rc = 0;
	if (!repo->ws.bookmark || strcmp(repo->ws.bookmark, bookmark) != 0)
		return 0;
	if (tt_oplog_read(repo->root, &log, &ig) == 0) {
		for (size_t i = log.count; i-- > 0;) {
			const tt_op_entry *e = &log.entries[i];
			if (!e->command || strcmp(e->command, "drop") != 0)
				continue;
			json_t *ctx = json_object_get(e->plan, "context");
			const char *b = json_string_value(json_object_get(ctx, "bookmark"));
			const char *l = json_string_value(json_object_get(ctx, "leave"));
			if (b && strcmp(b, bookmark) == 0 && l && tt_op_incomplete(e))
				leave = tt_strdup(l);
			break;
		}
	}
	tt_oplog_free(&log);
	tt_error_clear(&ig);
	if (!leave)
		return 0;
	if (tt_vcs_current_bookmark(repo->vcs, &here, &ig) == 0 && here && strcmp(here, leave) == 0) {
		tt_new_opts no = { .version = TT_NEW_OPTS_VERSION, .rev = leave, .eager = -1 };
		if ((rc = tt_engine_plan_new(repo, &no, &new_plan, err)) == 0)
			rc = tt_engine_apply_new(repo, new_plan, false, NULL, NULL, err);
	}
	tt_error_clear(&ig);
	tt_plan_free(new_plan);
	free(here);
	free(leave);
	return rc;
}

static int plan_drop_cmd(tt_repo *repo, void *ctx, bool applying, tt_plan **out, tt_error *err)
{
	const tt_drop_opts *o = ctx;
	int rc;
	if (applying && (rc = settle_interrupted_leave(repo, o->bookmark, err)) < 0)
		return rc;
	return plan_drop(repo, o, out, err);
}

static int apply_drop_cmd(tt_repo *repo, void *ctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err)
{
	(void)ctx, (void)saved;
	return apply_drop(repo, plan, out, err);
}

static const tt_planned_cmd drop_cmd = {
	.command = "drop",
	.locks = TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY,
	.plan = plan_drop_cmd,
	.apply = apply_drop_cmd,
};

int tt_engine_repo_drop(tt_repo *repo, const tt_drop_opts *opts, const char *from_plan, size_t from_len,
		 char **plan_json, char **plan_text, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(opts, tt_drop_opts, TT_DROP_OPTS_VERSION, err);
	if (!opts || (!opts->bookmark && !from_plan))
		return tt_error_set(err, TT_EUSAGE, "drop needs a bookmark");
	tt_drop_opts o = *opts;
	tt_planned_run run = { .dry = opts->dry_run, .from = from_plan, .from_len = from_len, .plan_json = plan_json,
			       .plan_text = plan_text, .out = out };
	return tt_engine_run_planned(repo, &drop_cmd, &o, &run, err);
}
