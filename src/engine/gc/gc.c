/*
 * engine/gc/gc.c - `gc`: release what nothing references.
 *
 * The plan (read-only, but for seeding the clone's pinned index the first
 * time it is needed) decides, as tether-vcs decides but more cautiously
 * where other clones are concerned:
 *   - unpin: a pin of this dataset's namespace that no manifest anywhere in
 *     visible history (every ref, remote-tracking ones included), in this or
 *     any other live checkout's working tree, or in an operation still
 *     running or interrupted in any checkout names - and that this clone
 *     may release.  Pin ids depend only on the dataset and the state, and
 *     stores are shared, so another clone that commits the same state holds
 *     the same pin, and gc cannot see that clone's unpushed commits.  So,
 *     without --release-foreign, only a pin this clone created
 *     (tether-pinned.jsonl) in a clone with no remote, and that no commit
 *     of this repository ever named, is released; a pin it did not create
 *     is a keep-pin (tether-vcs's caution), and so is one it created while
 *     the dataset is shared through a remote (kept "shared"), and one a
 *     commit here named before it was rewritten away, since a clone made
 *     from this repository leaves no trace in it (kept "committed").
 *     With --release-foreign both are released, but only once every
 *     remote's branches and tags are fetched: a remote that has commits
 *     this clone lacks, or cannot be listed, keeps them all (kept
 *     "unfetched"), and never a pin that a commit a remote-tracking ref
 *     once held names (pushed or fetched, then rewritten away: kept
 *     "published"), since clones that fetched it may still name it;
 *   - forget-working-ref: this workspace's refs of removed objects;
 *   - with --prune-bookmarks, delete-branch / keep-branch for stray
 *     tether.ws.* branches, judged by their heads;
 *   - delete-listing: listings no manifest names;
 *   - with --delete-stores, the store step of gc_stores.c.
 * Applying it re-checks the preconditions (workspace id, history digest,
 * head, manifest hash), journals the operation, and attempts every action,
 * collecting failures instead of stopping at the first.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/index.h"
#include "core/layout.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/resume.h"
#include "engine/gc/gc.h"
#include "engine/kernel/planned.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/fault.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/gc/gc_apply.h"
#include "engine/gc/gc_plan.h"

/* --- the public entry points -------------------------------------------------------- */

static int plan_gc(tt_repo *repo, void *ctx, bool applying, tt_plan **out, tt_error *err)
{
	/* Interrupted commits and pulls the checkout has moved past since, with
	 * no uncommitted manifests left of them, are closed first when the
	 * plan is applied: the pins they cut are then weighed like any other. */
	if (applying) {
		json_t *moot = NULL;
		int rc = tt_engine_scan_interrupted(repo, TT_CLOSE_MOVED, &moot, err);
		if (rc == 0)
			rc = tt_engine_close_interrupted(repo, moot, NULL, "gc", err);
		json_decref(moot);
		if (rc < 0)
			return rc;
	}
	return tt_gc_plan_gc(repo, ctx, out, err);
}

static int apply_gc(tt_repo *repo, void *ctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err)
{
	(void)ctx;
	int rc = tt_gc_apply_gc(repo, plan, NULL, out, err);
	/* An interrupted gc with the same options is redone by this one. */
	if (!saved && rc == 0 && !json_object_size(json_object_get(*out, "failed"))) {
		static const char *const options[] = { "prune_bookmarks", "keep_bookmarks", "force_prune",
						       "delete_stores", "stores", "release_foreign", NULL };
		tt_error ignored = TT_ERROR_INIT;
		tt_engine_close_reruns(repo, "gc", tt_plan_context(plan), options, NULL, "a later gc", &ignored);
		tt_error_clear(&ignored);
	}
	return rc;
}

/* Plan and apply under one lock: nothing in this checkout moves between;
 * the repository lock from the start when applying, as closing
 * interrupted operations writes. */
static const tt_planned_cmd gc_cmd = {
	.command = "gc",
	.locks = TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY | TT_PLANNED_REPOSITORY_EARLY,
	.plan = plan_gc,
	.apply = apply_gc,
	.preview = tt_gc_dry_report,
};

/* The plan alone, as tether-vcs's plan_gc: read without the lock. */
static const tt_planned_cmd gc_plan_cmd = {
	.command = "gc",
	.plan = plan_gc,
	.apply = apply_gc,
};

int tt_engine_repo_gc(tt_repo *repo, const tt_gc_opts *o, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(o, tt_gc_opts, TT_GC_OPTS_VERSION, err);
	tt_planned_run run = { .dry = o->dry_run, .out = out };
	int rc;
	*out = NULL;
	if ((rc = tt_gc_check_stores(o, err)) < 0)
		return rc;
	return tt_engine_run_planned(repo, &gc_cmd, (void *)o, &run, err);
}

int tt_engine_repo_plan_gc(tt_repo *repo, const tt_gc_opts *o, char **plan_json, char **plan_text, tt_error *err)
{
	TT_CHECK_OPTS(o, tt_gc_opts, TT_GC_OPTS_VERSION, err);
	tt_planned_run run = { .dry = true, .plan_json = plan_json, .plan_text = plan_text };
	return tt_engine_run_planned(repo, &gc_plan_cmd, (void *)o, &run, err);
}

int tt_engine_repo_apply_gc_plan(tt_repo *repo, const char *text, size_t len, json_t **out, tt_error *err)
{
	tt_planned_run run = { .from = text, .from_len = len, .out = out };
	return tt_engine_run_planned(repo, &gc_cmd, NULL, &run, err);
}

int tt_gc_apply(tt_repo *repo, const tt_plan *plan, const char *parent, json_t **out, tt_error *err)
{
	return tt_gc_apply_gc(repo, plan, parent, out, err);
}
