/*
 * engine/cmd/forget.c - `forget-workspace`: tether's half of `git worktree
 * remove` / `jj workspace forget` in one step.  The workspace's
 * workspace.toml and ops.jsonl go, and the VCS stops tracking the
 * checkout (git's main worktree stays).  Store branches belong to
 * bookmarks, not workspaces: none are touched.
 */
#include "engine/cmd/forget.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/layout.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/kernel/checkouts.h"
#include "engine/kernel/preconditions.h"
#include "engine/kernel/planned.h"
#include "util/fault.h"
#include "util/fs.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

/* The dataset root of the live checkout whose workspace id starts with
 * id8 (this one included), resolved; NULL when none. */
static char *workspace_root(tt_repo *repo, const char *id8, tt_error *err)
{
	tt_checkouts co;
	char *found = NULL;
	if (tt_engine_live_checkouts(repo, &co, err) < 0)
		return NULL;
	for (size_t i = 0; !found && i < co.n; i++) {
		const tt_checkout *c = &co.items[i];
		if (c->ws_ok && c->ws.workspace_id && strncmp(c->ws.workspace_id, id8, 8) == 0)
			found = tt_realpath(c->dataset);
	}
	tt_engine_checkouts_release(&co);
	return found;
}

static int plan_forget(tt_repo *repo, const char *workspace_id, tt_plan **out, tt_error *err)
{
	char target[9] = { 0 };
	const char *id = workspace_id ? workspace_id : repo->ws.workspace_id;
	char *root = NULL;
	int rc = 0;
	snprintf(target, sizeof target, "%.8s", id);
	tt_plan *plan = tt_plan_new("forget-workspace");
	if (!plan)
		return tt_error_oom(err);
	char own[9];
	snprintf(own, sizeof own, "%.8s", repo->ws.workspace_id);
	bool current = strcmp(target, own) == 0;
	json_t *v = json_string(target);
	tt_plan_set_context(plan, "workspace", v, err);
	json_decref(v);
	tt_plan_set_context(plan, "current", current ? json_true() : json_false(), err);
	root = workspace_root(repo, target, err);
	if (err->code) {
		rc = err->code;
		goto done;
	}
	if (root) {
		v = json_string(root);
		tt_plan_set_context(plan, "root", v, err);
		json_decref(v);
		static const char *const names[] = { TT_WORKSPACE_FILENAME, TT_OPS_FILENAME };
		for (size_t i = 0; i < 2; i++) {
			char *path = tt_tether_path(root, names[i]);
			if (path && tt_exists(path))
				tt_plan_action(plan, "delete-file", NULL, NULL, path, "per-workspace state", NULL, err);
			free(path);
		}
		tt_buf d = TT_BUF_INIT;
		tt_buf_puts(&d, "jj workspace forget / git worktree remove (git's main worktree stays)");
		if (current)
			tt_buf_puts(&d, "; this checkout then has no working copy until `jj undo` or a new `jj workspace add`");
		tt_plan_action(plan, "forget-vcs-workspace", NULL, NULL, root, d.ptr, NULL, err);
		tt_buf_release(&d);
	} else {
		char note[64];
		snprintf(note, sizeof note, "workspace %s: no live checkout found", target);
		tt_plan_note(plan, note, err);
	}
	tt_plan_note(plan, "store branches belong to bookmarks, not workspaces: none are touched (delete the bookmark "
			   "and `gc --prune-bookmarks`)", err);
	rc = err->code;
done:
	free(root);
	if (rc < 0)
		tt_plan_free(plan);
	else
		*out = plan;
	return rc;
}

static int plan_forget_cmd(tt_repo *repo, void *ctx, bool applying, tt_plan **out, tt_error *err)
{
	(void)applying;
	return plan_forget(repo, ctx, out, err);
}

static int apply_forget(tt_repo *repo, void *ctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err)
{
	json_t *removed = json_array(), *failed = json_object(), *vcs = json_null();
	int rc;
	(void)ctx, (void)saved;
	if ((rc = tt_engine_check_preconditions(repo, plan, "forget-workspace", err)) < 0)
		goto done;
	const char *target = json_string_value(json_object_get(tt_plan_context(plan), "workspace"));
	if (!target)
		target = "";
	/* Journal first: forgetting this workspace removes its own journal. */
	json_t *pj = tt_plan_to_object(plan, err);
	tt_buf wb = TT_BUF_INIT;
	tt_workspace_render(&wb, &repo->ws, err);
	json_t *pre = json_pack("{s:s}", "workspace", wb.ptr ? wb.ptr : "");
	json_t *result = json_pack("{s:s}", "workspace", target);
	tt_buf_release(&wb);
	rc = pj && pre && result ? tt_oplog_record_plan(repo->root, "forget-workspace", pj, result, pre, NULL, NULL, err)
				 : tt_error_oom(err);
	json_decref(pj);
	json_decref(pre);
	json_decref(result);
	if (rc < 0)
		goto done;
	tt_fault("forget-workspace:after-journal");
	for (size_t i = 0; i < tt_plan_action_count(plan); i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		tt_error aerr = TT_ERROR_INIT;
		if (strcmp(a.op, "delete-file") == 0) {
			if (unlink(a.target) == 0 || errno == ENOENT)
				json_array_append_new(removed, json_string(a.target));
			else
				tt_error_errno(&aerr, errno, "cannot remove %s", a.target);
		} else if (strcmp(a.op, "forget-vcs-workspace") == 0) {
			char *said = NULL;
			if (!tt_vcs_has(repo->vcs, forget_workspace))
				tt_error_set(&aerr, TT_EVCS, "this VCS cannot forget a workspace");
			else if (tt_vcs_forget_workspace(repo->vcs, a.target, &said, &aerr) == 0 && said) {
				json_decref(vcs);
				vcs = json_string(said);
			}
			free(said);
		}
		if (aerr.code) {
			char *k = tt_asprintf("%s %s", a.op, a.target);
			json_object_set_new(failed, k ? k : a.op, json_string(tt_error_text(&aerr)));
			free(k);
		}
		tt_error_clear(&aerr);
	}
	*out = json_pack("{s:s,s:O,s:O,s:O}", "workspace", target, "removed_files", removed, "vcs", vcs, "failed",
			 failed);
	if (!*out)
		rc = tt_error_oom(err);
done:
	json_decref(removed);
	json_decref(failed);
	json_decref(vcs);
	return rc;
}

/* Planning reads the live checkouts without the lock: forgetting one is
 * this checkout's write alone. */
static const tt_planned_cmd forget_cmd = {
	.command = "forget-workspace",
	.locks = TT_PLANNED_CHECKOUT_AT_APPLY,
	.plan = plan_forget_cmd,
	.apply = apply_forget,
};

int tt_engine_repo_forget_workspace(tt_repo *repo, const char *workspace_id, bool dry_run, const char *from_plan,
			     size_t from_len, char **plan_json, char **plan_text, json_t **out, tt_error *err)
{
	tt_planned_run run = { .dry = dry_run, .from = from_plan, .from_len = from_len, .plan_json = plan_json,
			       .plan_text = plan_text, .out = out };
	return tt_engine_run_planned(repo, &forget_cmd, (void *)workspace_id, &run, err);
}
