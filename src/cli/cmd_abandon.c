/* cli/cmd_abandon.c - `tether abandon`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	if (tt_repo_abandon(repo, a->pos, a->npos, cli_flag(cmd, a, "gc"), &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	const json_t *plan = json_object_get(out, "gc_plan");
	if (cli_flag(cmd, a, "json")) {
		json_t *j = json_pack("{s:O,s:O,s:O}", "abandoned", json_object_get(out, "abandoned"), "gc_plan", plan,
				      "gc_applied", json_object_get(out, "gc_applied"));
		cli_print_json(j);
		json_decref(j);
		goto done;
	}
	printf("abandoned ");
	size_t i;
	json_t *c;
	json_array_foreach(json_object_get(out, "abandoned"), i, c)
		printf("%s%.12s", i ? ", " : "", json_string_value(c));
	printf("\n");
	size_t writes = 0;
	json_array_foreach(json_object_get(plan, "actions"), i, c) {
		const char *op = json_string_value(json_object_get(c, "op"));
		writes += tt_plan_action_writes(op);
	}
	if (json_is_object(json_object_get(out, "gc_report")))
		cli_print_gc_report(json_object_get(out, "gc_report"));
	else if (!writes)
		printf("nothing became unreferenced\n");
	else {
		const char *text = json_string_value(json_object_get(out, "gc_plan_text"));
		fputs(text ? text : "", stdout);
		printf("(not applied; `tether gc --no-dry-run` releases these, or re-run with --gc)\n");
	}
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "gc", 0, OPT_FLAG, NULL, "Also release the pins only those commits referenced." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_abandon = {
	.name = "abandon",
	.synopsis = "REV... [--gc] [--json]",
	.summary = "Drop dataset commits from VCS history and see what that frees.",
	.description = "`jj abandon` / a git rebase, with one difference: later commits keep their manifests\n"
	"exactly as they were (a manifest records a whole state, so it must not conflict with\n"
	"the removal of an earlier one).  Then the `gc` plan: pins that only the dropped\n"
	"commits referenced.  Without `--gc` nothing is released -- run `tether gc --no-dry-run`\n"
	"when ready (undoing the abandon in jj/git first brings the pins back into use).  Not\n"
	"undoable by tether.",
	.opts = opts,
	.min_pos = 1,
	.max_pos = 4096,
	.run = run,
};
