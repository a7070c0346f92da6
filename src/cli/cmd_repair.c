/* cli/cmd_repair.c - `tether repair`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/fs.h"

typedef struct repair_ctx {
	const cli_args *a;
	bool all_history;
} repair_ctx;

static int repair(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res, tt_error *err)
{
	const repair_ctx *c = ctx;
	tt_repair_opts o = TT_REPAIR_OPTS_INIT;
	o.selectors = (const char *const *)c->a->pos;
	o.nselectors = c->a->npos;
	o.all_history = c->all_history;
	return tt_repo_repair(repo, &o, plan, res, err);
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	repair_ctx c = { a, cli_flag(cmd, a, "all-history") };
	if ((rc = cli_run_planned(cmd, a, repo, repair, &c, &out, NULL)) != CLI_PLAN_APPLIED)
		goto done;
	bool partial = json_object_size(json_object_get(out, "failed")) > 0;
	if (cli_flag(cmd, a, "json")) {
		cli_print_json(out);
	} else {
		const char *k;
		json_t *v;
		size_t i;
		json_object_foreach(json_object_get(out, "repinned"), k, v)
			printf("repinned  %s -> %s\n", k, json_string_value(v));
		json_object_foreach(json_object_get(out, "reforked"), k, v)
			printf("reforked  %s -> %s\n", k, json_string_value(v));
		json_array_foreach(json_object_get(out, "notes"), i, v)
			printf("note      %s\n", json_string_value(v));
		json_object_foreach(json_object_get(out, "failed"), k, v)
			fprintf(stderr, "FAILED    %s: %s\n", k, json_string_value(v));
	}
	rc = partial ? EXIT_PARTIAL : EXIT_OK;
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "all-history", 0, OPT_FLAG, NULL, "Also check the pins of every commit in history." },
	{ "dry-run", 0, OPT_FLAG, NULL, "Show what would be rebuilt (and how far interrupted operations got)." },
	{ "plan", 0, OPT_VALUE, "FILE", "Write the plan to FILE (implies --dry-run)." },
	{ "from-plan", 0, OPT_VALUE, "FILE", "Apply a plan saved with --plan." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_repair = {
	.name = "repair",
	.synopsis = "[KEY...] [--all-history] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.summary = "Recreate missing pins and working branches from the manifests.",
	.description = "A manifest promises \"this pin names this state\".  If the native ref is gone but the\n"
	"state is still reachable, repair recreates it; a working branch this checkout expects\n"
	"but the store lost is forked again from the manifest, only while it is still absent.\n"
	"Pins that point elsewhere are reported, never overwritten.  Exit 3 if something could\n"
	"not be rebuilt.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 4096,
	.run = run,
	.planned = CLI_PLANNED,
};
