/* cli/cmd_export.c - `tether export` (experimental). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

json_t *cli_row_counts(const json_t *bundle)
{
	json_t *counts = json_object(), *rows;
	const char *name;
	json_object_foreach(json_object_get(bundle, "tables"), name, rows)
		json_object_set_new(counts, name, json_integer((json_int_t)json_array_size(rows)));
	return counts;
}

void cli_print_row_counts(const json_t *counts)
{
	const char *k;
	json_t *v;
	int width = 0;
	json_object_foreach((json_t *)counts, k, v)
		if ((int)strlen(k) > width)
			width = (int)strlen(k);
	json_object_foreach((json_t *)counts, k, v)
		printf("  %-*s  %7lld row(s)\n", width, k, (long long)json_integer_value(v));
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	const char *fmt = cli_value(cmd, a, "format");
	bool json = cli_flag(cmd, a, "json");
	if (!fmt)
		fmt = "sqlite";
	if (strcmp(fmt, "sqlite") && strcmp(fmt, "parquet") && strcmp(fmt, "csv") && strcmp(fmt, "jsonl")) {
		fprintf(stderr, "error: --format must be one of sqlite, parquet, csv, jsonl\n");
		return EXIT_ERROR;
	}
	if (!json)  /* machine consumers get JSON alone */
		cli_note("%s", TT_REGISTRY_NOTE);
	tt_repo *repo = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	int ri = cli_opt_index(cmd, "rev");
	const char *const *revs = a->list[ri];
	size_t nrevs = a->nlist[ri];
	const char *here[1] = { strcmp(tt_repo_vcs_kind(repo), "jj") == 0 ? "@" : "HEAD" };
	/* --no-all-history without --rev: the working copy's commit. */
	int ai = cli_opt_index(cmd, "all-history"), ni = cli_opt_index(cmd, "no-all-history");
	if (!nrevs && a->seen[ni] && !a->seen[ai]) {
		revs = here;
		nrevs = 1;
	}
	json_t *bundle = NULL;
	size_t nfiles = 0;
	const char *path = a->pos[0];
	tt_export_opts eo = TT_EXPORT_OPTS_INIT;
	eo.revs = (const char *const *)revs;
	eo.nrevs = nrevs;
	eo.listings = cli_flag(cmd, a, "listings");
	eo.workspace = cli_flag(cmd, a, "workspace");
	if (tt_repo_export(repo, &eo, &bundle, &err) < 0 ||
	    tt_export_write(bundle, path, fmt, cli_flag(cmd, a, "append"), &nfiles, &err) < 0) {
		rc = cli_fail(&err);
		json_decref(bundle);
		cli_close_repo(repo);
		return rc;
	}
	json_t *counts = cli_row_counts(bundle);
	const char *head = json_string_value(json_object_get(bundle, "head"));
	if (json) {
		json_t *out = json_pack("{s:s,s:s,s:s?,s:O}", "path", path, "format", fmt, "head", head, "rows", counts);
		rc = cli_print_json(out);
		json_decref(out);
	} else {
		printf("exported %zu file(s) to %s (%s)\n", nfiles, path, fmt);
		cli_print_row_counts(counts);
	}
	json_decref(counts);
	json_decref(bundle);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "rev", 'r', OPT_LIST, "REV", "Export only these revisions (repeatable)." },
	{ "all-history", 0, OPT_FLAG, NULL, "Export every reachable commit (default when no --rev is given)." },
	{ "no-all-history", 0, OPT_FLAG, NULL, "Without --rev: export only the working copy's commit." },
	{ "format", 0, OPT_VALUE, "FORMAT", "sqlite (default), parquet, csv, or jsonl." },
	{ "listings", 0, OPT_FLAG, NULL, "Include per-file listings (listings, listing_entries)." },
	{ "workspace", 0, OPT_FLAG, NULL, "Include this checkout's working refs and snapshot." },
	{ "append", 0, OPT_FLAG, NULL, "sqlite: upsert into an existing file instead of replacing it." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_export = {
	.name = "export",
	.synopsis = "PATH [--rev REV]... [--all-history | --no-all-history] [--format FORMAT] [--listings] "
	"[--workspace] [--append] [--json]",
	.summary = "[experimental] Write tether history as relational tables for registries.",
	.description = "Tables: commits, commit_parents, refs, objects, object_states, plus listings /\n"
	"listing_entries (--listings) and workspace (--workspace), and tether_meta.  PATH is a\n"
	"SQLite file (the default format; query it directly or ATTACH it in DuckDB), or a\n"
	"directory for parquet/csv/jsonl with one file per table and a schema.json.",
	.opts = opts,
	.min_pos = 1,
	.max_pos = 1,
	.run = run,
};
