/* engine/kernel/planned.c - the one driver of a planned command (see planned.h). */
#include "engine/kernel/planned.h"

#include <stdlib.h>
#include <string.h>

#include "engine/kernel/repo.h"
#include "util/buf.h"

int tt_engine_render_plan(const tt_plan *plan, char **plan_json, char **plan_text, tt_error *err)
{
	tt_buf jb = TT_BUF_INIT, tb = TT_BUF_INIT;
	int rc;
	*plan_json = *plan_text = NULL;
	if ((rc = tt_plan_to_json(plan, &jb, err)) == 0 && (rc = tt_plan_render_text(plan, &tb, err)) == 0) {
		*plan_json = tt_buf_detach(&jb);
		*plan_text = tt_buf_detach(&tb);
		if (!*plan_json || !*plan_text) {
			free(*plan_json);
			free(*plan_text);
			*plan_json = *plan_text = NULL;
			rc = tt_error_oom(err);
		}
	}
	tt_buf_release(&jb);
	tt_buf_release(&tb);
	return rc;
}

static int preview(const tt_planned_cmd *cmd, const tt_plan *plan, const tt_planned_run *run, tt_error *err)
{
	if (run->plan_json)
		return tt_engine_render_plan(plan, run->plan_json, run->plan_text, err);
	if (cmd->preview && run->out && !(*run->out = cmd->preview(plan)))
		return tt_error_oom(err);
	return 0;
}

int tt_engine_run_planned(tt_repo *repo, const tt_planned_cmd *cmd, void *ctx, const tt_planned_run *run,
			  tt_error *err)
{
	tt_plan *plan = NULL;
	tt_lock rlock = TT_LOCK_INIT;
	/* A preview of a saved plan shows it: asked to preview, nothing is
	 * applied. */
	bool saved = run->from != NULL, dry = run->dry, checkout = false;
	bool repository_early = (cmd->locks & TT_PLANNED_REPOSITORY_EARLY) && !dry;
	int rc;
	if (run->out)
		*run->out = NULL;
	if (run->plan_json)
		*run->plan_json = NULL;
	if (run->plan_text)
		*run->plan_text = NULL;
	/* Planning and loading: under the checkout lock unless the command
	 * plans without it; a saved plan is loaded under the lock it is
	 * applied under. */
	if ((cmd->locks & TT_PLANNED_CHECKOUT) || (saved && !dry && (cmd->locks & TT_PLANNED_CHECKOUT_AT_APPLY))) {
		if ((rc = tt_repo_lock(repo, err)) < 0)
			return rc;
		checkout = true;
	}
	if (repository_early && (rc = tt_engine_repo_lock(repo, &rlock, err)) < 0)
		goto done;
	if (saved) {
		if ((rc = tt_plan_from_json(&plan, run->from, run->from_len, err)) < 0)
			goto done;
		if (strcmp(tt_plan_command(plan), cmd->command) != 0) {
			rc = tt_error_set(err, TT_ECONFIG, "this is a '%s' plan, expected '%s'", tt_plan_command(plan),
					  cmd->command);
			goto done;
		}
	} else if ((rc = cmd->plan(repo, ctx, !dry, &plan, err)) < 0) {
		goto done;
	}
	if (cmd->gate && (rc = cmd->gate(repo, ctx, plan, err)) < 0)
		goto done;
	if (dry) {
		rc = preview(cmd, plan, run, err);
		goto done;
	}
	if (!checkout && (cmd->locks & TT_PLANNED_CHECKOUT_AT_APPLY)) {
		if ((rc = tt_repo_lock(repo, err)) < 0)
			goto done;
		checkout = true;
	}
	if (saved && cmd->load && (rc = cmd->load(repo, ctx, plan, err)) < 0)
		goto done;
	if ((cmd->locks & TT_PLANNED_REPOSITORY) && !repository_early &&
	    (rc = tt_engine_repo_lock(repo, &rlock, err)) < 0)
		goto done;
	rc = cmd->apply(repo, ctx, plan, saved, run->out, err);
done:
	tt_lock_release(&rlock);
	if (checkout)
		tt_repo_unlock(repo);
	tt_plan_free(plan);
	return rc;
}
