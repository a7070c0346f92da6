/*
 * cli/planned.c - the one handling of a planned command's --dry-run /
 * --no-dry-run / --plan FILE / --from-plan FILE.  The dispatcher checks
 * and reads the flags once (cli_plan_args); the command makes its library
 * call through cli_run_planned, which loads the saved plan, shows a
 * preview or hands back what was applied.  Each command keeps its own
 * checks before and its own output after.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/fs.h"

int cli_plan_args(const cli_cmd *cmd, cli_args *a)
{
	const char *from = cli_value(cmd, a, "from-plan"), *save = cli_value(cmd, a, "plan");
	bool dry = cli_flag(cmd, a, "dry-run");
	if (from && (dry || save))
		return cli_error(NULL, "--from-plan applies a saved plan; it cannot be combined with "
				 "--dry-run or --plan");
	a->plan_from = from;
	/* --plan FILE saves a preview.  Where previewing is the default, only
	 * --no-dry-run applies, and not beside --dry-run. */
	if (cmd->planned == CLI_PLANNED_DRY_DEFAULT)
		dry = dry || !cli_flag(cmd, a, "no-dry-run");
	a->plan_dry = (dry || save) && !from;
	return EXIT_OK;
}

int cli_show_plan(const cli_cmd *cmd, const cli_args *a, const char *plan_json, const char *plan_text)
{
	const char *path = cli_value(cmd, a, "plan");
	if (path) {
		tt_error err = TT_ERROR_INIT;
		if (tt_write_file_atomic(path, plan_json, strlen(plan_json), 0644, &err) < 0)
			return cli_fail(&err);
		fprintf(stderr, "plan written to %s\n", path);
	}
	if (cli_flag(cmd, a, "json"))
		printf("%s\n", plan_json);
	else
		fputs(plan_text, stdout);
	return EXIT_OK;
}

/* The saved plan of --from-plan, which must be one of this command's. */
static int read_plan(const cli_cmd *cmd, const char *path, tt_buf *out)
{
	tt_error err = TT_ERROR_INIT;
	char *command = NULL;
	int rc = EXIT_OK;
	if (tt_read_file(path, out, 64u << 20, &err) < 0 || tt_plan_command_of(out->ptr, out->len, &command, &err) < 0)
		return cli_fail(&err);
	if (strcmp(command, cmd->name) != 0) {
		char *said = tt_repr_str(command), *want = tt_repr_str(cmd->name);
		rc = cli_error(NULL, "%s is a %s plan, expected %s", path, said ? said : "?", want ? want : "?");
		free(said);
		free(want);
	}
	free(command);
	return rc;
}

int cli_run_planned(const cli_cmd *cmd, const cli_args *a, tt_repo *repo, cli_plan_fn fn, void *ctx,
		    json_t **out, tt_error *partial)
{
	tt_error err = TT_ERROR_INIT;
	const char *from = a->plan_from;
	bool dry = a->plan_dry;
	tt_buf saved = TT_BUF_INIT;
	tt_plan_opts plan = TT_PLAN_OPTS_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	int rc;
	*out = NULL;
	if (from && (rc = read_plan(cmd, from, &saved)) != EXIT_OK)
		goto done;
	plan.mode = from ? TT_PLAN_APPLY : dry ? TT_PLAN_PREVIEW : TT_PLAN_RUN;
	plan.saved = from ? saved.ptr : NULL;
	plan.saved_len = from ? saved.len : 0;
	if (fn(repo, ctx, &plan, &res, &err) < 0) {
		if (partial && res.out) {
			*partial = err;
			*out = res.out;
			res.out = NULL;
			rc = CLI_PLAN_APPLIED;
			goto done;
		}
		rc = cli_fail(&err);
		goto done;
	}
	if (dry) {
		rc = cli_show_plan(cmd, a, res.plan_json, res.plan_text);
		goto done;
	}
	*out = res.out;
	res.out = NULL;
	rc = CLI_PLAN_APPLIED;
done:
	tt_buf_release(&saved);
	tt_plan_result_release(&res);
	return rc;
}
