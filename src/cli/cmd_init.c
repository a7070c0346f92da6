/* cli/cmd_init.c - `tether init [PATH]`. */
#include <stdio.h>

#include "cli/cli.h"

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	const char *path = a->npos ? a->pos[0] : ".";
	if (tt_init(path, cli_value(cmd, a, "dataset-id"), &out, &err) < 0)
		return cli_fail(&err);
	int rc = EXIT_OK;
	if (cli_flag(cmd, a, "json")) {
		rc = cli_print_json(out);
	} else {
		const char *id = json_string_value(json_object_get(out, "dataset_id"));
		printf("initialized tether dataset at %s (dataset id %s: its pins and working branches "
		       "are tether.%s.* / tether.ws.%s.*)\n",
		       json_string_value(json_object_get(out, "root")), id, id, id);
	}
	json_decref(out);
	return rc;
}

static const cli_opt opts[] = {
	{ "dataset-id", 0, OPT_VALUE, "ID",
	  "Use this dataset id (8 lowercase hex) instead of a fresh one: a dataset whose "
	  "repository was lost takes back the pins and branches its stores still hold." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_init = {
	.name = "init",
	.synopsis = "[PATH] [--dataset-id ID] [--json]",
	.summary = "Initialise a tether dataset in an existing git repository.",
	.description = "Writes tether.toml (with a fresh [dataset] id) and .tether/ at PATH (default: the\n"
	"current directory), and puts this checkout on HEAD's branch, which becomes the trunk\n"
	"bookmark: the one that stands for every object's upstream branch.  Nothing is written\n"
	"when PATH is not inside a git repository.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 1,
	.run = run,
};
