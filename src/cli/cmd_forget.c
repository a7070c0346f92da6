/* cli/cmd_forget.c - `tether forget-workspace`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int forget(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res, tt_error *err)
{
	const cli_args *a = ctx;
	tt_forget_opts o = TT_FORGET_OPTS_INIT;
	o.workspace_id = a->npos ? a->pos[0] : NULL;
	return tt_repo_forget_workspace(repo, &o, plan, res, err);
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	if ((rc = cli_run_planned(cmd, a, repo, forget, a, &out, NULL)) != CLI_PLAN_APPLIED)
		goto done;
	json_t *failed = json_object_get(out, "failed");
	if (cli_flag(cmd, a, "json")) {
		cli_print_json(out);
	} else {
		printf("forgot workspace %s\n", json_string_value(json_object_get(out, "workspace")));
		size_t i;
		json_t *v;
		json_array_foreach(json_object_get(out, "removed_files"), i, v)
			printf("  removed  %s\n", json_string_value(v));
		if (json_is_string(json_object_get(out, "vcs")))
			printf("  vcs      %s\n", json_string_value(json_object_get(out, "vcs")));
		fflush(stdout);
		/* sorted by target */
		const char **keys = calloc(json_object_size(failed) + 1, sizeof *keys);
		size_t n = 0;
		const char *k;
		json_object_foreach(failed, k, v)
			if (keys)
				keys[n++] = k;
		for (size_t x = 1; keys && x < n; x++)
			for (size_t y = x; y > 0 && strcmp(keys[y - 1], keys[y]) > 0; y--) {
				const char *t = keys[y];
				keys[y] = keys[y - 1];
				keys[y - 1] = t;
			}
		for (size_t x = 0; keys && x < n; x++)
			fprintf(stderr, "  FAILED   %s: %s\n", keys[x], json_string_value(json_object_get(failed, keys[x])));
		free(keys);
	}
	rc = json_object_size(failed) ? EXIT_PARTIAL : EXIT_OK;
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "dry-run", 0, OPT_FLAG, NULL, "Show the plan; write nothing." },
	{ "plan", 0, OPT_VALUE, "FILE", "Write the plan to FILE (implies --dry-run)." },
	{ "from-plan", 0, OPT_VALUE, "FILE", "Apply a plan saved with --plan instead of replanning." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_forget_workspace = {
	.name = "forget-workspace",
	.synopsis = "[WORKSPACE_ID] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.summary = "Forget a workspace: its state files and the VCS checkout.",
	.description = "`jj workspace forget` / `git worktree remove` plus tether's half in one step: the\n"
	"workspace's `workspace.toml` and `ops.jsonl` are removed and the VCS stops tracking the\n"
	"checkout (git's main worktree is left; jj leaves the directory).  Store branches belong\n"
	"to bookmarks, not workspaces, so none are touched -- delete the bookmark and `gc\n"
	"--prune-bookmarks` for that.  Forgetting the current workspace means the next tether\n"
	"command here starts a fresh one.  WORKSPACE_ID: full or 8 characters (default: this\n"
	"workspace).  Exit code 3 if a step failed.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 1,
	.run = run,
	.planned = CLI_PLANNED,
};
