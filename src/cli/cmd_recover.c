/* cli/cmd_recover.c - `tether recover`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void print_report(const json_t *r)
{
	const json_t *objects = json_object_get(r, "objects");
	size_t i, width = 0;
	json_t *o;
	printf("dataset id %s (tether.toml)\n", json_string_value(json_object_get(r, "dataset_id")));
	json_array_foreach(objects, i, o) {
		size_t l = strlen(json_string_value(json_object_get(o, "key")));
		width = l > width ? l : width;
	}
	json_array_foreach(objects, i, o) {
		const char *key = json_string_value(json_object_get(o, "key"));
		const char *kind = json_string_value(json_object_get(o, "kind"));
		const json_t *error = json_object_get(o, "error");
		const json_t *datasets = json_object_get(o, "datasets");
		const json_t *unrec = json_object_get(o, "unrecognized");
		const json_t *missing = json_object_get(o, "missing_pin");
		bool holds = json_is_true(json_object_get(o, "holds_refs"));
		printf("  %-*s  [%s]", (int)width, key, kind);
		if (json_is_string(error)) {
			printf("  error\n");
			fflush(stdout);
			fprintf(stderr, "%s: %s\n", key, json_string_value(error));
			continue;
		}
		if (!holds || !(json_array_size(datasets) || json_array_size(unrec) || json_is_string(missing))) {
			printf("  %s\n", holds ? "none" : "makes no refs");
			continue;
		}
		printf("\n");
		size_t k;
		json_t *d;
		json_array_foreach(datasets, k, d) {
			printf("    %s%s: %lld pin(s); bookmarks: ", json_string_value(json_object_get(d, "dataset_id")),
			       json_is_true(json_object_get(d, "current")) ? " (this dataset)" : "",
			       (long long)json_integer_value(json_object_get(d, "pins")));
			const json_t *bms = json_object_get(d, "bookmarks");
			if (!json_array_size(bms))
				printf("none");
			size_t j;
			json_t *b;
			json_array_foreach(bms, j, b) {
				printf("%s%s", j ? ", " : "", json_string_value(json_object_get(b, "bookmark")));
				json_t *g = json_object_get(b, "generation");
				if (json_is_integer(g) && json_integer_value(g))
					printf(" (generation %lld)", (long long)json_integer_value(g));
			}
			printf("\n");
			json_array_foreach(json_object_get(d, "legacy"), j, b) {
				printf("      legacy branches of workspace %s: ",
				       json_string_value(json_object_get(b, "workspace")));
				size_t z;
				json_t *br;
				json_array_foreach(json_object_get(b, "branches"), z, br)
					printf("%s%s", z ? ", " : "", json_string_value(br));
				printf("\n");
			}
		}
		if (json_is_string(missing))
			printf("    pin %s (the manifest's) is missing\n", json_string_value(missing));
		if (json_array_size(unrec)) {
			printf("    no dataset id: ");
			json_t *u;
			json_array_foreach(unrec, k, u)
				printf("%s%s", k ? ", " : "", json_string_value(u));
			printf("\n");
		}
	}
	printf("next steps:\n");
	json_array_foreach(json_object_get(r, "steps"), i, o) {
		const json_t *command = json_object_get(o, "command");
		const char *note = json_string_value(json_object_get(o, "note"));
		bool first = true;
		if (json_is_string(command)) {
			printf("  %zu. %s\n", i + 1, json_string_value(command));
			first = false;
		}
		for (const char *p = note;;) {
			const char *nl = strchr(p, '\n');
			int len = nl ? (int)(nl - p) : (int)strlen(p);
			if (first)
				printf("  %zu. # %.*s\n", i + 1, len, p);
			else
				printf("     # %.*s\n", len, p);
			first = false;
			if (!nl)
				break;
			p = nl + 1;
		}
	}
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	if (tt_repo_recover(repo, a->pos, a->npos, a->npos > 0, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	bool failed = false;
	size_t i;
	json_t *o;
	json_array_foreach(json_object_get(out, "objects"), i, o)
		if (json_is_string(json_object_get(o, "error")))
			failed = true;
	if (cli_flag(cmd, a, "json"))
		cli_print_json(out);
	else
		print_report(out);
	rc = failed ? EXIT_ERROR : EXIT_OK;
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_recover = {
	.name = "recover",
	.synopsis = "[KEY...] [--json]",
	.summary = "Find what a lost dataset left in its stores, and how to take it back.",
	.description = "Read-only.  Lists tether's refs in each registered object's store -- pins\n"
	"`tether.<dataset>.<hash>` and working branches `tether.ws.<dataset>.<bookmark>` -- by\n"
	"the dataset id they carry, marks the one tether.toml names, and prints the steps,\n"
	"each a command (values quoted for the shell) or none, and a `#` note: `repair` of the\n"
	"objects whose manifest names a pin their store lacks, the id to set while nothing is\n"
	"pinned under this one, a `commit` on the trunk, then `new --adopt -- BOOKMARK` (`new\n"
	"-b BOOKMARK --adopt -- TRUNK` where the VCS has no such bookmark) and a `commit` per\n"
	"bookmark, and per legacy per-workspace branch a `restore --at` onto a bookmark\n"
	"`recover-<workspace>` off the trunk, and a `commit`.  Each command ends its options\n"
	"with `--`, so a key starting with `-` is not read as one.  With KEYs no dataset id and\n"
	"nothing that pins anew is suggested, and `repair` names only those; the steps end\n"
	"with `tether recover` on every object.  Exit 1 if a store could not be listed.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 4096,
	.run = run,
};
