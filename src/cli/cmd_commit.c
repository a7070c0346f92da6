/* cli/cmd_commit.c - `tether commit`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

typedef struct commit_ctx {
	tt_commit_opts o;
	const cli_args *a;
} commit_ctx;

static int commit_call(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res, tt_error *err)
{
	const commit_ctx *c = ctx;
	tt_commit_opts o = c->o;
	if (plan->mode == TT_PLAN_APPLY) { /* the keys named on the command line must be the plan's */
		o.keys = (const char *const *)c->a->pos;
		o.nkeys = c->a->npos;
	}
	return tt_repo_commit(repo, &o, plan, res, err);
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_repo *repo = NULL;
	json_t *out = NULL;
	bool as_json = cli_flag(cmd, a, "json");
	int rc;

	if ((rc = cli_open_repo(&repo)))
		return rc;
	cli_interrupt_attach(repo);
	commit_ctx c = {
		.o = {
			.version = TT_COMMIT_OPTS_VERSION,
			.message = cli_value(cmd, a, "message"),
			.keys = a->pos,
			.nkeys = a->npos,
			.no_vcs = cli_flag(cmd, a, "no-vcs"),
			.strict = cli_flag(cmd, a, "strict"),
			.force = cli_flag(cmd, a, "force"),
			.no_snapshot = cli_flag(cmd, a, "no-snapshot"),
		},
		.a = a,
	};
	if ((rc = cli_run_planned(cmd, a, repo, commit_call, &c, &out, NULL)) != CLI_PLAN_APPLIED)
		goto done;
	rc = EXIT_OK;
	if (as_json) {
		rc = cli_print_json(out);
		goto done;
	}
	const char *key;
	json_t *v;
	json_object_foreach(json_object_get(out, "pinned"), key, v)
		printf("  pinned %s -> %s\n", key, json_is_string(v) ? json_string_value(v) : "(addressable)");
	size_t i;
	json_array_foreach(json_object_get(out, "unrecoverable"), i, v)
		printf("  recorded %s (not recoverable)\n", json_string_value(v));
	const char *commit = json_string_value(json_object_get(out, "vcs_commit"));
	if (commit)
		printf("committed %.12s\n", commit);
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "message", 'm', OPT_VALUE, "MESSAGE", "VCS commit message (required unless --from-plan)." },
	{ "no-vcs", 0, OPT_FLAG, NULL, "Write manifests but skip the git commit." },
	{ "strict", 0, OPT_FLAG, NULL, "Fail instead of recording Observed objects unrecoverably." },
	{ "force", 0, OPT_FLAG, NULL, "Skip quiescence checks (e.g. active Neon writers)." },
	{ "no-snapshot", 0, OPT_FLAG, NULL,
	  "Commit the cached fingerprints as-is instead of fingerprinting first." },
	{ "dry-run", 0, OPT_FLAG, NULL, "Show what would be pinned/recorded; write nothing." },
	{ "plan", 0, OPT_VALUE, "FILE", "Write the plan to FILE (implies --dry-run)." },
	{ "from-plan", 0, OPT_VALUE, "FILE", "Apply a plan saved with --plan instead of replanning." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_commit = {
	.name = "commit",
	.synopsis = "[KEY...] -m MESSAGE [--no-vcs] [--strict] [--force] [--no-snapshot] "
	"[--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.summary = "Pin every changed object and record its state in the manifests.",
	.description = "Pinnable and forkable objects get a native ref tether.<pin_id>; addressable and\n"
	"`pin = \"record\"` objects are recorded; observed objects are recorded as not\n"
	"recoverable (refused with --strict).  Unchanged objects are skipped.  Then the\n"
	"manifests are committed and the bookmark moves.  The operation is journaled before\n"
	"its first store write; a failure before the git commit releases the pins it made\n"
	"and restores the manifests, one after keeps everything.  KEY... commits only those\n"
	"objects, like `git commit PATH`.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 4096,
	.run = run,
	.planned = CLI_PLANNED,
};
