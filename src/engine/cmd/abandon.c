/*
 * engine/cmd/abandon.c - `abandon`: drop dataset commits from VCS history
 * (`jj abandon` / a git rebase), later commits keeping their manifests
 * exactly as they were, then the gc plan of what that freed - applied
 * with --gc.  A bookmark on an abandoned commit moves to the nearest kept
 * ancestor.  Journaled as `abandon`; not undoable by tether.
 */
#include <stdlib.h>
#include <string.h>

#include "core/oplog.h"
#include "core/plan.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/planned.h"
#include "util/fault.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/gc/gc_plan.h"
#include "engine/gc/gc.h"

int tt_repo_abandon(tt_repo *repo, const char *const *revs, size_t n, bool gc, json_t **out, tt_error *err)
{
	tt_lock rlock = TT_LOCK_INIT;
	json_t *pos = NULL, *before = NULL, *targets = json_object(), *infos = NULL, *ids = NULL, *rewritten = NULL;
	json_t *moved = json_object(), *gc_plan = NULL, *unreferenced = json_array(), *gc_report = NULL;
	char *reldir = NULL, *plan_json = NULL, *plan_text = NULL;
	const char **sorted = NULL;
	bool locked = false;
	int rc;
	*out = NULL;
	if (!targets || !moved || !unreferenced)
		return tt_error_oom(err);
	if (!tt_vcs_has(repo->vcs, abandon)) {
		rc = tt_error_set(err, TT_EVCS, "this VCS cannot abandon commits");
		goto done;
	}
	if ((rc = tt_repo_lock(repo, err)) < 0)
		goto done;
	locked = true;
	if ((rc = tt_engine_repo_lock(repo, &rlock, err)) < 0)
		goto done;
	tt_buf wb = TT_BUF_INIT;
	tt_workspace_render(&wb, &repo->ws, err);
	if ((rc = tt_vcs_position(repo->vcs, &pos, err)) < 0 ||
	    (rc = tt_vcs_bookmarks(repo->vcs, &before, err)) < 0) {
		tt_buf_release(&wb);
		goto done;
	}
	json_t *pre = json_pack("{s:O,s:s}", "vcs", pos, "workspace", wb.ptr ? wb.ptr : "");
	tt_buf_release(&wb);
	for (size_t i = 0; i < n; i++) {
		char *id = NULL;
		if ((rc = tt_vcs_resolve(repo->vcs, revs[i], &id, err)) < 0) {
			json_decref(pre);
			goto done;
		}
		json_object_set(targets, id, json_true());
		free(id);
	}
	/* parents of every target, for the bookmarks that sit on one */
	size_t nt = json_object_size(targets), k = 0;
	sorted = tt_calloc(nt ? nt : 1, sizeof *sorted);
	const char *t;
	json_t *tv;
	json_object_foreach(targets, t, tv)
		sorted[k++] = t;
	for (size_t a = 1; a < nt; a++)
		for (size_t b = a; b > 0 && strcmp(sorted[b - 1], sorted[b]) > 0; b--) {
			const char *x = sorted[b];
			sorted[b] = sorted[b - 1];
			sorted[b - 1] = x;
		}
	if ((rc = tt_vcs_commit_info(repo->vcs, sorted, nt, &infos, err)) < 0 ||
	    !(reldir = tt_engine_objects_reldir(repo)) ||
	    (rc = tt_vcs_abandon(repo->vcs, revs, n, reldir, &ids, &rewritten, err)) < 0) {
		if (!reldir && rc == 0)
			rc = tt_error_oom(err);
		json_decref(pre);
		goto done;
	}
	tt_fault("abandon:after-rewrite");
	const char *name;
	json_t *cv;
	json_object_foreach(before, name, cv) {
		const char *dest = json_string_value(cv);
		if (!json_object_get(targets, dest))
			continue;
		json_t *seen = json_object();
		while (dest && *dest && json_object_get(targets, dest) && !json_object_get(seen, dest)) {
			json_object_set(seen, dest, json_true());
			const char *next = "";
			size_t i;
			json_t *info;
			json_array_foreach(infos, i, info)
				if (strcmp(json_string_value(json_object_get(info, "commit_id")), dest) == 0)
					next = json_string_value(json_array_get(json_object_get(info, "parents"), 0));
			dest = next ? next : "";
		}
		json_t *mapped = dest ? json_object_get(rewritten, dest) : NULL;
		char *final = tt_strdup(mapped ? json_string_value(mapped) : dest ? dest : "");
		json_decref(seen);
		if (final && *final) {
			if ((rc = tt_vcs_bookmark_set(repo->vcs, name, final, err)) < 0) {
				free(final);
				json_decref(pre);
				goto done;
			}
			json_object_set_new(moved, name, json_string(final));
		}
		free(final);
	}
	tt_manifests_release(&repo->objects);
	if ((rc = tt_manifests_load(&repo->objects, repo->root, err)) < 0) {
		json_decref(pre);
		goto done;
	}
	tt_gc_opts plain = TT_GC_OPTS_INIT;
	tt_error gerr = TT_ERROR_INIT;
	tt_plan *planned = NULL;
	int grc = tt_gc_plan_after_rewrite(repo, &plain, &planned, &gerr);
	if (grc == 0)
		grc = tt_engine_render_plan(planned, &plan_json, &plan_text, &gerr);
	tt_plan_free(planned);
	if (grc == 0) {
		gc_plan = tt_json_parse(plan_json, strlen(plan_json), "gc plan", err);
	} else if (gerr.code == TT_EVCS) {
		/* The rewrite left a conflict: the store half waits for `gc`. */
		tt_plan *p = tt_plan_new("gc");
		tt_error ig = TT_ERROR_INIT;
		if (p)
			tt_plan_note(p, tt_error_text(&gerr), &ig);
		gc_plan = p ? tt_plan_to_object(p, &ig) : NULL;
		tt_plan_free(p);
		tt_error_clear(&ig);
	} else {
		tt_error_move(err, &gerr);
		rc = err->code;
		json_decref(pre);
		goto done;
	}
	tt_error_clear(&gerr);
	if (!gc_plan) {
		rc = err->code ? err->code : tt_error_oom(err);
		json_decref(pre);
		goto done;
	}
	size_t i;
	json_t *a;
	size_t writes = 0;
	json_array_foreach(json_object_get(gc_plan, "actions"), i, a) {
		const char *op = json_string_value(json_object_get(a, "op"));
		if (op && strcmp(op, "unpin") == 0)
			json_array_append(unreferenced, json_object_get(a, "target"));
		if (op && tt_plan_op_writes(op))
			writes++;
	}
	json_t *result = json_pack("{s:O,s:O,s:O,s:O}", "abandoned", ids, "rewritten_commits", rewritten,
				   "bookmarks_moved", moved, "unreferenced", unreferenced);
	rc = result ? tt_oplog_record_plan(repo->root, "abandon", NULL, result, pre, NULL, NULL, err) : tt_error_oom(err);
	json_decref(result);
	json_decref(pre);
	if (rc < 0)
		goto done;
	tt_fault("abandon:after-journal");
	tt_lock_release(&rlock);
	tt_repo_unlock(repo);
	locked = false;
	if (gc && writes) {
		rc = tt_engine_repo_apply_gc_plan(repo, plan_json, strlen(plan_json), &gc_report, err);
		if (rc < 0)
			goto done;
	}
	*out = json_pack("{s:O,s:O,s:b,s:O?,s:O,s:s?}", "abandoned", ids, "gc_plan", gc_plan, "gc_applied",
			 gc_report != NULL, "gc_report", gc_report, "bookmarks_moved", moved, "gc_plan_text", plan_text);
	if (!*out)
		rc = tt_error_oom(err);
done:
	tt_lock_release(&rlock);
	if (locked)
		tt_repo_unlock(repo);
	free(sorted);
	free(reldir);
	free(plan_json);
	free(plan_text);
	json_decref(pos);
	json_decref(before);
	json_decref(targets);
	json_decref(infos);
	json_decref(ids);
	json_decref(rewritten);
	json_decref(moved);
	json_decref(gc_plan);
	json_decref(unreferenced);
	json_decref(gc_report);
	return rc;
}
