/* cli/cmd_backends.c - `tether backends`. */
#include <stdio.h>

#include "cli/cli.h"

static int run(const cli_cmd *cmd, cli_args *a)
{
	json_t *rows = tt_backends();
	size_t i;
	json_t *row;
	if (!rows) {
		fprintf(stderr, "error: out of memory\n");
		return EXIT_ERROR;
	}
	if (cli_flag(cmd, a, "json")) {
		int rc = cli_print_json(rows);
		json_decref(rows);
		return rc;
	}
	json_array_foreach(rows, i, row) {
		printf("%-10s %-13s %-11s", json_string_value(json_object_get(row, "kind")),
		       json_string_value(json_object_get(row, "maturity")),
		       json_string_value(json_object_get(row, "tier")));
		size_t j;
		json_t *cap;
		json_array_foreach(json_object_get(row, "capabilities"), j, cap)
			printf("%s%s", j ? ", " : " ", json_string_value(cap));
		if (!json_is_true(json_object_get(row, "installed")))
			printf("  (not built yet)");
		else if (json_is_string(json_object_get(row, "note")))
			printf("  (%s)", json_string_value(json_object_get(row, "note")));
		if (json_array_size(json_object_get(row, "schemes"))) {
			/* where this build reaches the kind's stores */
			json_array_foreach(json_object_get(row, "schemes"), j, cap)
				printf("%s%s", j ? ", " : "  [", json_string_value(cap));
			printf("]");
		}
		printf("\n");
	}
	json_decref(rows);
	return EXIT_OK;
}

static const cli_opt opts[] = {
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_backends = {
	.name = "backends",
	.synopsis = "[--json]",
	.summary = "List backend kinds with their maturity, tier, and capabilities.",
	.description = "Every kind tether knows, with the contract it follows: maturity (stable, or\n"
	"experimental as tether-vcs marks it), tier (observed, addressable, pinnable, forkable)\n"
	"and capability flags.  Kinds whose backend this build does not include yet say so\n"
	"(installed = false).  What each kind is tested against: ducklake and iceberg against\n"
	"DuckDB, pyiceberg and Apache Iceberg's REST catalog; neon against a fake of Neon's API\n"
	"(its note says so).\n"
	/* dolt */
	"dolt: CI tests it against a test server (go-mysql-server with Dolt's versioning SQL),\n"
	"not a real dolt sql-server; TETHER_TEST_DOLT=host:port[/db] runs the dolt e2e suite against\n"
	"a real one (docs/backend-dolt.md).\n"
	"Kinds whose stores are named by a URI list, in brackets (--json: schemes), the URI\n"
	"schemes this build reaches them through: file (a local path), s3, gs, az, ...",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 0,
	.run = run,
};
