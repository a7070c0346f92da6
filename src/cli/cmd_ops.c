/* cli/cmd_ops.c - `tether ops`. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	char *text = NULL;
	int li = cli_opt_index(cmd, "limit");
	long long limit = a->seen[li] ? a->ivalue[li] : 20;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	if (tt_repo_ops(repo, limit < 0 ? 0 : (size_t)limit, &out, &text, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	if (cli_flag(cmd, a, "json"))
		rc = cli_print_json(out);
	else
		fputs(text, stdout);
done:
	free(text);
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "limit", 'n', OPT_INT, "N", "Show the newest N entries (default 20)." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_ops = {
	.name = "ops",
	.synopsis = "[-n N] [--json]",
	.summary = "Show this checkout's operation log (what tether did to the stores).",
	.description = "Every store-writing command journals an entry before its first write: the plan it\n"
	"applied, what it created or deleted, and what it replaced.  INCOMPLETE marks an\n"
	"operation that never finished (rerun it); `(vcs commit gone)` a dataset commit that\n"
	"was undone or abandoned outside tether.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 0,
	.run = run,
};
