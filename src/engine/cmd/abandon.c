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

/* One abandon: the commits named, what the rewrite did, and the gc plan of
 * what it freed. */
typedef struct abandon_ctx {
	tt_repo *repo;
	const char *const *revs;  /* borrowed */
	size_t n;
	json_t *pre;              /* the journal's pre: position and workspace before */
	json_t *pos, *before;     /* the VCS position and bookmarks before */
	json_t *targets;          /* the commits abandoned, resolved: {id: true} */
	json_t *infos;            /* their commit info (parents) */
	json_t *ids, *rewritten;  /* what the VCS abandoned and rewrote */
	json_t *moved;            /* bookmark -> where it moved */
	json_t *gc_plan, *unreferenced, *gc_report;
	char *reldir, *plan_json, *plan_text;
	const char **sorted;      /* the targets' ids, sorted (borrowed from targets) */
	size_t writes;            /* the gc plan's actions that write */
} abandon_ctx;

static void abandon_ctx_release(abandon_ctx *c)
{
	free(c->sorted);
	free(c->reldir);
	free(c->plan_json);
	free(c->plan_text);
	json_decref(c->pre);
	json_decref(c->pos);
	json_decref(c->before);
	json_decref(c->targets);
	json_decref(c->infos);
	json_decref(c->ids);
	json_decref(c->rewritten);
	json_decref(c->moved);
	json_decref(c->gc_plan);
	json_decref(c->unreferenced);
	json_decref(c->gc_report);
}

/* What the journal keeps from before: the VCS position and the workspace
 * (and the bookmarks, to move those on an abandoned commit). */
static int read_before(abandon_ctx *c, tt_error *err)
{
	tt_buf wb = TT_BUF_INIT;
	int rc;
	tt_workspace_render(&wb, &c->repo->ws, err);
	if ((rc = tt_vcs_position(c->repo->vcs, &c->pos, err)) < 0 ||
	    (rc = tt_vcs_bookmarks(c->repo->vcs, &c->before, err)) < 0) {
		tt_buf_release(&wb);
		return rc;
	}
	c->pre = json_pack("{s:O,s:s}", "vcs", c->pos, "workspace", wb.ptr ? wb.ptr : "");
	tt_buf_release(&wb);
	return 0;
}

static int resolve_targets(abandon_ctx *c, tt_error *err)
{
	int rc;
	for (size_t i = 0; i < c->n; i++) {
		char *id = NULL;
		if ((rc = tt_vcs_resolve(c->repo->vcs, c->revs[i], &id, err)) < 0)
			return rc;
		json_object_set(c->targets, id, json_true());
		free(id);
	}
	return 0;
}

/* The parents of every target (for the bookmarks that sit on one), then
 * the rewrite that abandons them. */
static int rewrite(abandon_ctx *c, tt_error *err)
{
	size_t nt = json_object_size(c->targets), k = 0;
	const char *t;
	json_t *tv;
	int rc = 0;
	if (!(c->sorted = tt_calloc(nt ? nt : 1, sizeof *c->sorted)))
		return tt_error_oom(err);
	json_object_foreach(c->targets, t, tv)
		c->sorted[k++] = t;
	for (size_t a = 1; a < nt; a++)
		for (size_t b = a; b > 0 && strcmp(c->sorted[b - 1], c->sorted[b]) > 0; b--) {
			const char *x = c->sorted[b];
			c->sorted[b] = c->sorted[b - 1];
			c->sorted[b - 1] = x;
		}
	if ((rc = tt_vcs_commit_info(c->repo->vcs, c->sorted, nt, &c->infos, err)) < 0 ||
	    !(c->reldir = tt_engine_objects_reldir(c->repo)) ||
	    (rc = tt_vcs_abandon(c->repo->vcs, c->revs, c->n, c->reldir, &c->ids, &c->rewritten, err)) < 0) {
		if (!c->reldir && rc == 0)
			rc = tt_error_oom(err);
		return rc;
	}
	tt_fault("abandon:after-rewrite");
	return 0;
}

/* Where a bookmark on an abandoned commit goes: its nearest kept
 * ancestor, as rewritten (caller frees; "" for none). */
static char *nearest_kept(const abandon_ctx *c, const char *dest)
{
	json_t *seen = json_object();
	while (dest && *dest && json_object_get(c->targets, dest) && !json_object_get(seen, dest)) {
		json_object_set(seen, dest, json_true());
		const char *next = "";
		size_t i;
		json_t *info;
		json_array_foreach(c->infos, i, info)
			if (strcmp(json_string_value(json_object_get(info, "commit_id")), dest) == 0)
				next = json_string_value(json_array_get(json_object_get(info, "parents"), 0));
		dest = next ? next : "";
	}
	json_t *mapped = dest ? json_object_get(c->rewritten, dest) : NULL;
	char *final = tt_strdup(mapped ? json_string_value(mapped) : dest ? dest : "");
	json_decref(seen);
	return final;
}

/* Each bookmark that sat on an abandoned commit, moved (c->moved). */
static int move_bookmarks(abandon_ctx *c, tt_error *err)
{
	const char *name;
	json_t *cv;
	int rc;
	json_object_foreach(c->before, name, cv) {
		const char *dest = json_string_value(cv);
		if (!json_object_get(c->targets, dest))
			continue;
		char *final = nearest_kept(c, dest);
		if (final && *final) {
			if ((rc = tt_vcs_bookmark_set(c->repo->vcs, name, final, err)) < 0) {
				free(final);
				return rc;
			}
			json_object_set_new(c->moved, name, json_string(final));
		}
		free(final);
	}
	return 0;
}

/* The gc plan of what the rewrite freed (a rewrite that left a conflict:
 * a plan whose note says the store half waits for `gc`); the pins it
 * unpins are reported unreferenced. */
static int plan_gc(abandon_ctx *c, tt_error *err)
{
	tt_gc_opts plain = TT_GC_OPTS_INIT;
	tt_error gerr = TT_ERROR_INIT;
	tt_plan *planned = NULL;
	int grc = tt_gc_plan_after_rewrite(c->repo, &plain, &planned, &gerr);
	if (grc == 0)
		grc = tt_engine_render_plan(planned, &c->plan_json, &c->plan_text, &gerr);
	tt_plan_free(planned);
	if (grc == 0) {
		c->gc_plan = tt_json_parse(c->plan_json, strlen(c->plan_json), "gc plan", err);
	} else if (gerr.code == TT_EVCS) {
		/* The rewrite left a conflict: the store half waits for `gc`. */
		tt_plan *p = tt_plan_new("gc");
		tt_error ig = TT_ERROR_INIT;
		if (p)
			tt_plan_note(p, tt_error_text(&gerr), &ig);
		c->gc_plan = p ? tt_plan_to_object(p, &ig) : NULL;
		tt_plan_free(p);
		tt_error_clear(&ig);
	} else {
		tt_error_move(err, &gerr);
		return err->code;
	}
	tt_error_clear(&gerr);
	if (!c->gc_plan)
		return err->code ? err->code : tt_error_oom(err);
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(c->gc_plan, "actions"), i, a) {
		const char *op = json_string_value(json_object_get(a, "op"));
		if (op && strcmp(op, "unpin") == 0)
			json_array_append(c->unreferenced, json_object_get(a, "target"));
		if (op && tt_plan_op_writes(op))
			c->writes++;
	}
	return 0;
}

static int journal_abandon(abandon_ctx *c, tt_error *err)
{
	json_t *result = json_pack("{s:O,s:O,s:O,s:O}", "abandoned", c->ids, "rewritten_commits", c->rewritten,
				   "bookmarks_moved", c->moved, "unreferenced", c->unreferenced);
	int rc = result ? tt_oplog_record_plan(c->repo->root, "abandon", NULL, result, c->pre, NULL, NULL, err)
			: tt_error_oom(err);
	json_decref(result);
	return rc;
}

int tt_repo_abandon(tt_repo *repo, const char *const *revs, size_t n, bool gc, json_t **out, tt_error *err)
{
	abandon_ctx c = { .repo = repo, .revs = revs, .n = n, .targets = json_object(), .moved = json_object(),
			  .unreferenced = json_array() };
	tt_lock rlock = TT_LOCK_INIT;
	bool locked = false;
	int rc;
	*out = NULL;
	if (!c.targets || !c.moved || !c.unreferenced) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!tt_vcs_has(repo->vcs, abandon)) {
		rc = tt_error_set(err, TT_EVCS, "this VCS cannot abandon commits");
		goto done;
	}
	if ((rc = tt_repo_lock(repo, err)) < 0)
		goto done;
	locked = true;
	if ((rc = tt_engine_repo_lock(repo, &rlock, err)) < 0 || (rc = read_before(&c, err)) < 0 ||
	    (rc = resolve_targets(&c, err)) < 0 || (rc = rewrite(&c, err)) < 0 || (rc = move_bookmarks(&c, err)) < 0)
		goto done;
	tt_manifests_release(&repo->objects);
	if ((rc = tt_manifests_load(&repo->objects, repo->root, err)) < 0 || (rc = plan_gc(&c, err)) < 0 ||
	    (rc = journal_abandon(&c, err)) < 0)
		goto done;
	tt_fault("abandon:after-journal");
	tt_lock_release(&rlock);
	tt_repo_unlock(repo);
	locked = false;
	if (gc && c.writes) {
		rc = tt_engine_repo_apply_gc_plan(repo, c.plan_json, strlen(c.plan_json), &c.gc_report, err);
		if (rc < 0)
			goto done;
	}
	*out = json_pack("{s:O,s:O,s:b,s:O?,s:O,s:s?}", "abandoned", c.ids, "gc_plan", c.gc_plan, "gc_applied",
			 c.gc_report != NULL, "gc_report", c.gc_report, "bookmarks_moved", c.moved, "gc_plan_text",
			 c.plan_text);
	if (!*out)
		rc = tt_error_oom(err);
done:
	tt_lock_release(&rlock);
	if (locked)
		tt_repo_unlock(repo);
	abandon_ctx_release(&c);
	return rc;
}
