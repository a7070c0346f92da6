/* cli/cmd_upgrade.c - `tether upgrade`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int upgrade(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res, tt_error *err)
{
	tt_upgrade_opts o = TT_UPGRADE_OPTS_INIT;
	o.ignore_immutable = *(const bool *)ctx;
	return tt_repo_upgrade(repo, &o, plan, res, err);
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc;
	if (tt_repo_open_outdated(".", &repo, &err) < 0)
		return cli_fail(&err);
	cli_print_warnings(repo);
	bool ignore_immutable = cli_flag(cmd, a, "ignore-immutable");
	if ((rc = cli_run_planned(cmd, a, repo, upgrade, &ignore_immutable, &out, NULL)) != CLI_PLAN_APPLIED)
		goto done;
	json_t *failed = json_object_get(out, "failed");
	if (cli_flag(cmd, a, "json")) {
		cli_print_json(out);
	} else {
		long long f = json_integer_value(json_object_get(out, "from_version"));
		long long t = json_integer_value(json_object_get(out, "to_version"));
		if (f == t)
			printf("already at version %lld\n", t);
		else
			printf("upgraded v%lld -> v%lld\n", f, t);
		const char *k;
		json_t *v;
		json_object_foreach(json_object_get(out, "renamed_pins"), k, v)
			printf("  pin     %s -> %s\n", k, json_string_value(v));
		json_object_foreach(json_object_get(out, "renamed_branches"), k, v)
			printf("  branch  %s -> %s\n", k, json_string_value(v));
		if (json_object_size(json_object_get(out, "rewritten_commits")))
			printf("  rewrote %zu commit(s); other clones must re-sync\n",
			       json_object_size(json_object_get(out, "rewritten_commits")));
		size_t i;
		json_array_foreach(json_object_get(out, "refingerprinted"), i, v)
			printf("  rehashed %s\n", json_string_value(v));
		json_array_foreach(json_object_get(out, "rewritten_manifests"), i, v)
			printf("  rewrote  %s\n", json_string_value(v));
		json_object_foreach(json_object_get(out, "rewritten_indexes"), k, v)
			printf("  index   %s: %lld record(s)\n", k, (long long)json_integer_value(v));
		if (json_array_size(json_object_get(out, "copied_listings")))
			printf("  listings %zu stored under new names\n", json_array_size(json_object_get(out, "copied_listings")));
		if (json_is_string(json_object_get(out, "vcs_commit")))
			printf("  commit  %.12s\n", json_string_value(json_object_get(out, "vcs_commit")));
		fflush(stdout);
		json_object_foreach(failed, k, v)
			fprintf(stderr, "  FAILED  %s: %s\n", k, json_string_value(v));
	}
	rc = json_object_size(failed) ? EXIT_PARTIAL : EXIT_OK;
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "dry-run", 0, OPT_FLAG, NULL, "Show what the upgrade would do; write nothing." },
	{ "plan", 0, OPT_VALUE, "FILE", "Write the plan to FILE (implies --dry-run)." },
	{ "from-plan", 0, OPT_VALUE, "FILE", "Apply a plan saved with --plan instead of replanning." },
	{ "ignore-immutable", 0, OPT_FLAG, NULL, "jj: also rewrite commits jj marks immutable (pushed history)." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_upgrade = {
	.name = "upgrade",
	.synopsis = "[--dry-run | --plan FILE | --from-plan FILE] [--ignore-immutable] [--json]",
	.summary = "Bring a dataset made by an older tether up to this version.",
	.description = "One migration whose parts run on what the dataset shows, not on the version it\n"
	"recorded; the new `[tether] version` is written once at the end and one VCS commit\n"
	"lands it.  A dataset at the current version is left as it is.  The parts, as\n"
	"tether-vcs 0.1.0b7 has them: a dataset from 0.1.0a8 on (version 2 and later) gets its\n"
	"write policy dropped, its local `file` states rehashed (content, not mtime) and its\n"
	"workspace put on a bookmark; its manifests moved to their keys' files and its local\n"
	"paths made absolute; and what 0.1.0b3 recorded under an identity or state 0.1.0b4\n"
	"changed (store-index records, listings under their new names, directory states\n"
	"with symlinks, Lance states off main, Neon xids) carried forward.  A dataset from\n"
	"before 0.1.0a8 (no dataset id, or pins outside a dataset namespace) needs its pins\n"
	"and working branches renamed in every store and its history rewritten: this build\n"
	"refuses it before anything is written, naming the part -- tether-vcs 0.1.0b7's\n"
	"`tether upgrade` does it.  A killed upgrade's rerun finishes it.\n"
	"Run `--dry-run` first.  Exit code 3 marks a partially applied step.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 0,
	.run = run,
	.planned = CLI_PLANNED,
};
