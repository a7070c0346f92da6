/* cli/cmd_drop.c - `tether drop`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int drop(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res, tt_error *err)
{
	return tt_repo_drop(repo, ctx, plan, res, err);
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_repo *repo = NULL;
	json_t *out = NULL;
	bool json = cli_flag(cmd, a, "json");
	tt_drop_opts d = { .version = TT_DROP_OPTS_VERSION, .bookmark = a->npos ? a->pos[0] : NULL,
			   .to = cli_value(cmd, a, "to"), .delete_stores = cli_flag(cmd, a, "delete-stores"),
			   .force_prune = cli_flag(cmd, a, "force-prune"),
			   .release_foreign = cli_flag(cmd, a, "release-foreign") };
	if (d.delete_stores && !json)
		cli_note("reclaiming created stores is experimental: `delete-store` has no `repair`; read the plan");
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	if ((rc = cli_run_planned(cmd, a, repo, drop, &d, &out, NULL)) != CLI_PLAN_APPLIED) {
		if (rc == EXIT_OK && a->plan_dry && !json)
			printf("(not applied; `--no-dry-run` drops it)\n");
		goto done;
	}
	rc = EXIT_OK;
	const json_t *gc = json_object_get(out, "gc");
	if (json) {
		static const char *const keys[] = { "unpinned", "deleted_working_refs", "kept_working_refs",
						    "forgotten_working_refs", "deleted_listings", "deleted_stores",
						    "kept_stores", "forgotten_stores" };
		json_t *g = json_is_object(gc) ? json_object() : json_null();
		for (size_t i = 0; json_is_object(gc) && i < sizeof keys / sizeof keys[0]; i++) {
			json_t *v = json_object_get(gc, keys[i]);
			json_object_set(g, keys[i], v ? v : json_object());
		}
		json_t *j = json_pack("{s:O,s:O,s:O,s:o}", "bookmark", json_object_get(out, "bookmark"), "left_for",
				      json_object_get(out, "left_for") ? json_object_get(out, "left_for") : json_null(),
				      "abandoned", json_object_get(out, "abandoned"), "gc", g);
		cli_print_json(j);
		json_decref(j);
		goto done;
	}
	const char *bookmark = json_string_value(json_object_get(out, "bookmark"));
	if (json_is_string(json_object_get(out, "left_for")))
		printf("left %s for %s\n", bookmark, json_string_value(json_object_get(out, "left_for")));
	const json_t *ab = json_object_get(out, "abandoned");
	printf("dropped %s: %zu commit(s)", bookmark, json_array_size(ab));
	if (json_array_size(ab)) {
		printf(" (");
		size_t i;
		json_t *c;
		json_array_foreach(ab, i, c)
			printf("%s%.12s", i ? ", " : "", json_string_value(c));
		printf(")");
	}
	printf("\n");
	if (json_is_object(gc))
		cli_print_gc_report(gc);
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "to", 0, OPT_VALUE, "BOOKMARK", "Where to leave for when this checkout is on the bookmark (default: the trunk)." },
	{ "delete-stores", 0, OPT_FLAG, NULL, "Also reclaim stores created on it (experimental; see `gc`)." },
	{ "force-prune", 0, OPT_FLAG, NULL, "Delete its branches even when they hold unpinned writes. Data on them is lost." },
	{ "release-foreign", 0, OPT_FLAG, NULL,
	  "Also release the pins only its commits named that another clone made (as `gc --release-foreign`: "
	  "once every remote's branches and tags are fetched) -- a CI job's fresh clone made none of them." },
	{ "dry-run", 0, OPT_FLAG, NULL, "Only show the plan (default)." },
	{ "no-dry-run", 0, OPT_FLAG, NULL, "Drop it." },
	{ "plan", 0, OPT_VALUE, "FILE", "Write the plan to FILE (implies --dry-run)." },
	{ "from-plan", 0, OPT_VALUE, "FILE", "Apply a plan saved with --plan." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_drop = {
	.name = "drop",
	.synopsis = "BOOKMARK [--to BOOKMARK] [--delete-stores] [--force-prune] [--release-foreign] "
	"[--dry-run/--no-dry-run | --plan FILE | "
	"--from-plan FILE] [--json]",
	.summary = "Throw a bookmark away: its commits, the bookmark, and its store leftovers.",
	.description = "The opposite of `promote`, in one step: leave the bookmark if this checkout is on it\n"
	"(`--to`, default the trunk), drop the commits only it reaches, delete it, then release\n"
	"what it held in the stores -- `gc --prune-bookmarks` for this bookmark alone, under its\n"
	"rules (a branch with unpinned writes is kept unless `--force-prune`; `--delete-stores`\n"
	"adds the experimental created-store step).  Refused for the trunk and for a bookmark\n"
	"another live checkout works on.  Dry-run by default: the plan shows the store side as it\n"
	"will be once the commits are gone.  Not undoable by tether (`jj undo` / the reflog bring\n"
	"the commits back; `repair` the pins and branches).",
	.opts = opts,
	.min_pos = 1,
	.max_pos = 1,
	.run = run,
	.planned = CLI_PLANNED_DRY_DEFAULT,
};
