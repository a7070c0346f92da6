/*
 * cli/planned.c - the one driver of a planned command's --dry-run / --plan
 * FILE / --from-plan FILE: read the saved plan, make the library call, show
 * the plan or hand back what the call applied.  Each command keeps its own
 * checks before and its own output after.
 */
#include <stdlib.h>

#include "cli/cli.h"

int cli_run_planned(const cli_cmd *cmd, const cli_args *a, tt_repo *repo, cli_plan_fn fn, void *ctx,
		    json_t **out)
{
	tt_error err = TT_ERROR_INIT;
	const char *from = cli_value(cmd, a, "from-plan");
	/* --plan implies --dry-run; cli_plan_flags_conflict refused either with --from-plan */
	bool dry = (cli_flag(cmd, a, "dry-run") || cli_value(cmd, a, "plan")) && !from;
	tt_buf saved = TT_BUF_INIT;
	char *pj = NULL, *pt = NULL;
	int rc;
	*out = NULL;
	if (from && (rc = cli_read_plan(from, &saved)) != EXIT_OK)
		goto done;
	if (fn(repo, ctx, dry, from ? saved.ptr : NULL, saved.len, &pj, &pt, out, &err) < 0) {
		json_decref(*out);
		*out = NULL;
		rc = cli_fail(&err);
		goto done;
	}
	if (dry) {
		json_decref(*out);
		*out = NULL;
		rc = cli_show_plan(cmd, a, pj, pt);
		goto done;
	}
	rc = CLI_PLAN_APPLIED;
done:
	tt_buf_release(&saved);
	free(pj);
	free(pt);
	return rc;
}
