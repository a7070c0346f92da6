/* cli/cmd_publish.c - `tether publish` (experimental). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	bool json = cli_flag(cmd, a, "json"), dry = cli_flag(cmd, a, "dry-run");
	const char *schema = cli_value(cmd, a, "schema");
	if (!schema)
		schema = "tether";
	tt_repo *repo = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	/* The DSN never comes from a committed file: the flag, the environment,
	 * or this checkout's secrets.toml [publish] dsn. */
	const char *to = cli_value(cmd, a, "to");
	if (!to || !*to)
		to = getenv("TETHER_PUBLISH_DSN");
	if (!to || !*to)
		to = tt_repo_secret_setting(repo, "publish", "dsn");
	if (!to || !*to) {
		fprintf(stderr, "error: a Postgres DSN is required: --to or $TETHER_PUBLISH_DSN\n");
		fprintf(stderr, "hint: or set [publish] dsn in .tether/secrets.toml\n");
		cli_close_repo(repo);
		return EXIT_ERROR;
	}
	if (!json)
		cli_note("%s", TT_REGISTRY_NOTE);
	int ri = cli_opt_index(cmd, "rev");
	json_t *bundle = NULL, *report = NULL;
	char *pj = NULL, *pt = NULL;
	const char *head = NULL;
	tt_export_opts eo = TT_EXPORT_OPTS_INIT;
	eo.revs = (const char *const *)a->list[ri];
	eo.nrevs = a->nlist[ri];
	eo.listings = cli_flag(cmd, a, "listings");
	if (tt_repo_export(repo, &eo, &bundle, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	head = json_string_value(json_object_get(bundle, "head"));
	if (tt_export_publish(bundle, to, schema, dry, &report, &err) < 0 ||
	    (dry && tt_export_publish_plan(report, head, &pj, &pt, &err) < 0)) {
		rc = cli_fail(&err);
		goto done;
	}
	json_t *up = json_object_get(report, "upserted");
	long long skipped = json_integer_value(json_object_get(report, "skipped_commits"));
	if (dry) {
		rc = cli_show_plan(cmd, a, pj, pt);
	} else if (json) {
		json_t *out = json_pack("{s:s,s:s?,s:O,s:I}", "schema", schema, "head", head, "upserted", up,
					"skipped_commits", (json_int_t)skipped);
		rc = cli_print_json(out);
		json_decref(out);
	} else {
		long long total = 0;
		const char *k;
		json_t *v;
		json_object_foreach(up, k, v)
			total += json_integer_value(v);
		printf("published %lld row(s) to schema '%s' (%lld commit(s) already present)\n", total, schema, skipped);
		cli_print_row_counts(up);
	}
done:
	free(pj);
	free(pt);
	json_decref(report);
	json_decref(bundle);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "to", 0, OPT_VALUE, "DSN",
	  "Postgres DSN (postgresql://...). Defaults to $TETHER_PUBLISH_DSN, then [publish] dsn in "
	  ".tether/secrets.toml." },
	{ "schema", 0, OPT_VALUE, "NAME", "Target schema name (default tether)." },
	{ "rev", 'r', OPT_LIST, "REV", "Publish only these revisions (repeatable)." },
	{ "listings", 0, OPT_FLAG, NULL, "Include per-file listings (listings, listing_entries)." },
	{ "dry-run", 0, OPT_FLAG, NULL, "Show what would be written per table; write nothing." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_publish = {
	.name = "publish",
	.synopsis = "[--to DSN] [--schema NAME] [--rev REV]... [--listings] [--dry-run] [--json]",
	.summary = "[experimental] Upsert the export tables into a Postgres schema.",
	.description = "Idempotent and incremental, in one transaction: commits already present are skipped,\n"
	"refs and tether_meta are refreshed, and a failure leaves the schema as it was.  Run it\n"
	"after each `tether commit` (or from CI) so a registry can join objects.uri /\n"
	"objects.commit_id against its own tables.  The DSN never comes from tether.toml, and\n"
	"its password is never printed.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 0,
	.run = run,
};
