/* cli/cmd_import.c - `tether import` (experimental). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void print_keys(const char *label, const json_t *keys)
{
	size_t i;
	json_t *k;
	json_array_foreach((json_t *)keys, i, k)
		printf("  %s %s\n", label, json_string_value(k));
}

typedef struct import_ctx {
	const char *source, *table, *query;
	bool sync;
} import_ctx;

/* A fresh import plans from the source's rows, then applies that plan as a
 * saved one would be (its preconditions checked again under the lock). */
static int import(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res, tt_error *err)
{
	const import_ctx *c = ctx;
	tt_import_opts o = TT_IMPORT_OPTS_INIT;
	json_t *rows = NULL;
	int rc;
	if (plan->mode == TT_PLAN_APPLY)
		return tt_repo_import(repo, &o, plan, res, err);
	/* A standing query lives in secrets.toml, never in the committed file
	 * (a tether.toml that sets one is refused when the dataset opens). */
	const char *query = c->query;
	if (!c->table && !query)
		query = tt_repo_secret_setting(repo, "import", "query");
	if ((rc = tt_import_read_rows(c->source, c->table, query, &rows, err)) == 0) {
		o.rows = rows;
		o.sync = c->sync;
		rc = tt_repo_import(repo, &o, plan, res, err);
	}
	json_decref(rows);
	return rc;
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	bool json = cli_flag(cmd, a, "json");
	if (!json)
		cli_note("%s", TT_REGISTRY_NOTE);
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc;
	if ((rc = cli_open_repo(&repo)))
		return rc;
	import_ctx c = { a->pos[0], cli_value(cmd, a, "table"), cli_value(cmd, a, "query"), cli_flag(cmd, a, "sync") };
	if ((rc = cli_run_planned(cmd, a, repo, import, &c, &out, NULL)) != CLI_PLAN_APPLIED)
		goto done;
	rc = EXIT_OK;
	json_t *added = json_object_get(out, "added"), *updated = json_object_get(out, "updated");
	json_t *removed = json_object_get(out, "removed"), *unchanged = json_object_get(out, "unchanged");
	if (json) {
		rc = cli_print_json(out);
		goto done;
	}
	printf("added %zu, updated %zu, removed %zu, unchanged %zu\n", json_array_size(added),
	       json_array_size(updated), json_array_size(removed), json_array_size(unchanged));
	print_keys("added  ", added);
	print_keys("updated", updated);
	print_keys("removed", removed);
	if (json_array_size(added) || json_array_size(updated))
		printf("run `tether commit` to record their states\n");
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "table", 0, OPT_VALUE, "NAME", "SQL sources: read every row of this table." },
	{ "query", 0, OPT_VALUE, "SQL",
	  "SQL sources: run this query (must yield key, kind, and locator columns).  Defaults to "
	  "[import] query in .tether/secrets.toml." },
	{ "sync", 0, OPT_FLAG, NULL, "Also remove registered objects the source does not list." },
	{ "dry-run", 0, OPT_FLAG, NULL, "Show the add/update/remove plan; write nothing." },
	{ "plan", 0, OPT_VALUE, "FILE", "Write the plan to FILE (implies --dry-run)." },
	{ "from-plan", 0, OPT_VALUE, "FILE", "Apply a plan saved with --plan instead of re-reading." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_import = {
	.name = "import",
	.synopsis = "SOURCE [--table NAME | --query SQL] [--sync] [--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.summary = "[experimental] Register or sync objects from a registry query.",
	.description = "SOURCE is a Postgres DSN, a SQLite file, a .csv or a .jsonl.  Rows carry `key`, `kind`,\n"
	"and any of `uri`, `locator_json`, `policy_file`, `policy_pin`, `at`; write the mapping\n"
	"from your registry's columns in SQL.  The query runs alone in a read-only transaction.\n"
	"Import changes what is tracked (manifests only; `tether undo` takes it back) - run\n"
	"`tether commit` afterwards to record states.  `--sync` removes objects the source no\n"
	"longer lists.",
	.opts = opts,
	.min_pos = 1,
	.max_pos = 1,
	.run = run,
	.planned = CLI_PLANNED,
};
