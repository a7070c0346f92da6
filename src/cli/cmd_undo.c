/* cli/cmd_undo.c - `tether undo`. */
#include <stdio.h>

#include "cli/cli.h"

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	if (tt_repo_undo(repo, a->npos ? a->pos[0] : NULL, cli_flag(cmd, a, "discard"), &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	bool partial = json_array_size(json_object_get(out, "irreversible")) > 0;
	if (cli_flag(cmd, a, "json")) {
		json_t *shown = json_pack("{s:O,s:O,s:O,s:O,s:O,s:O}", "undone", json_object_get(out, "undone"),
					  "command", json_object_get(out, "command"), "undo_id",
					  json_object_get(out, "undo_id"), "restored", json_object_get(out, "restored"),
					  "irreversible", json_object_get(out, "irreversible"), "skipped",
					  json_object_get(out, "skipped"));
		cli_print_json(shown);
		json_decref(shown);
	} else {
		printf("undid %s (%s: %s)\n", json_string_value(json_object_get(out, "undone")),
		       json_string_value(json_object_get(out, "command")),
		       json_string_value(json_object_get(out, "summary")));
		size_t i;
		json_t *l;
		json_array_foreach(json_object_get(out, "restored"), i, l)
			printf("  restored   %s\n", json_string_value(l));
		json_array_foreach(json_object_get(out, "skipped"), i, l)
			printf("  skipped    %s\n", json_string_value(l));
		json_array_foreach(json_object_get(out, "irreversible"), i, l)
			fprintf(stderr, "  IRREVERSIBLE %s\n", json_string_value(l));
	}
	rc = partial ? EXIT_PARTIAL : EXIT_OK;
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "discard", 0, OPT_FLAG, NULL, "Delete the branches the operation created even if they gained writes." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_undo = {
	.name = "undo",
	.synopsis = "[OP_ID] [--discard] [--json]",
	.summary = "Reverse an operation where the stores still allow it.",
	.description = "commit/pull: uncommit (manifests become working-tree changes; pins stay).\n"
	"new/fork/restore: delete the branches it created and restore workspace.toml and the\n"
	"working copy (and a bookmark -b made); branches it reset are reported with their old\n"
	"head.  add/remove/set/import: restore the manifests.  gc: listings it deleted come back,\n"
	"the pins, branches and stores it deleted are reported; promote: refused, naming the old\n"
	"heads.  An older operation, named by id, gets back only the workspace fields nothing\n"
	"changed again.  Exit 3 when part of it could not be reversed.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 1,
	.run = run,
};
