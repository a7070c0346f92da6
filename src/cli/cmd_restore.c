/* cli/cmd_restore.c - `tether restore KEY... --from REV | --at REF`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/fs.h"

typedef struct restore_ctx {
	const cli_args *a;
	const char *rev, *at;
	bool discard;
} restore_ctx;

static int restore(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res, tt_error *err)
{
	const restore_ctx *c = ctx;
	tt_restore_opts o = TT_RESTORE_OPTS_INIT;
	o.selectors = (const char *const *)c->a->pos;
	o.nselectors = c->a->npos;
	o.rev = c->rev;
	o.at = c->at;
	o.discard = c->discard;
	return tt_repo_restore(repo, &o, plan, res, err);
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	const char *from_plan = a->plan_from;
	const char *rev = cli_value(cmd, a, "from"), *at = cli_value(cmd, a, "at");
	if (!from_plan && !a->npos)
		return cli_usage_error(cmd, "missing argument KEY");
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	/* As tether-vcs: a missing or doubled source is an error (1), not a
	 * usage error. */
	if (!from_plan && !rev == !at) {
		tt_error_set(&err, TT_ECONFIG, "restore takes --from REV or --at REF (one of them)");
		rc = cli_fail(&err);
		goto done;
	}
	restore_ctx c = { a, rev, at, cli_flag(cmd, a, "discard") };
	if ((rc = cli_run_planned(cmd, a, repo, restore, &c, &out, NULL)) != CLI_PLAN_APPLIED)
		goto done;
	rc = EXIT_OK;
	if (cli_flag(cmd, a, "json")) {
		rc = cli_print_json(out);
		goto done;
	}
	const char *k, *src_at = json_string_value(json_object_get(out, "at"));
	const char *source = src_at ? src_at : json_string_value(json_object_get(out, "from"));
	json_t *v;
	json_object_foreach(json_object_get(out, "working_refs"), k, v)
		printf("%s -> %s  (from %s%s%s%s)\n", k, json_string_value(v), source ? source : "None",
		       src_at ? "; " : "", src_at ? src_at : "", src_at ? " is untouched" : "");
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "from", 'f', OPT_VALUE, "REV", "The dataset revision whose pins to restore." },
	{ "at", 0, OPT_VALUE, "REF", "Instead of --from: start each branch from this native ref or state in "
				      "its store (a branch, tag or state id, as `add --at` takes); REF itself "
				      "is never moved or written." },
	{ "discard", 0, OPT_FLAG, NULL, "Reset a branch even if it holds writes nobody committed." },
	{ "dry-run", 0, OPT_FLAG, NULL, "Show what would be reset; write nothing." },
	{ "plan", 0, OPT_VALUE, "FILE", "Write the plan to FILE (implies --dry-run)." },
	{ "from-plan", 0, OPT_VALUE, "FILE", "Apply a plan saved with --plan." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_restore = {
	.name = "restore",
	.synopsis = "KEY... (--from REV | --at REF) [--discard] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.summary = "Reset objects' working branches to what a dataset revision pinned.",
	.description = "Like `git restore --source REV` per object: each KEY's working branch is reset onto (or\n"
	"created from) REV's pin; nothing else moves.  The next commit pins it, and promote\n"
	"treats the branch as forked from REV.  Writes nobody committed are refused without\n"
	"--discard.  --at REF starts the branch from a native ref or state instead (a\n"
	"branch made outside tether); the object reads as modified until the next commit.\n"
	"Refused on the trunk bookmark.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 4096,
	.run = run,
	.planned = CLI_PLANNED,
};
