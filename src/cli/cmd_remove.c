/* cli/cmd_remove.c - `tether remove KEY`. */
#include <stdio.h>

#include "cli/cli.h"

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	if (tt_repo_remove(repo, a->pos[0], &err) < 0)
		rc = cli_fail(&err);
	else
		printf("removed %s\n", a->pos[0]);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = { { NULL, 0, 0, NULL, NULL } };

const cli_cmd cmd_remove = {
	.name = "remove",
	.synopsis = "KEY",
	.summary = "Unregister an object (does not touch the external system).",
	.description = "Deletes the object's manifest and nothing else: the store, its pins and branches are\n"
	"untouched.  A later `tether gc` releases pins nothing references any more.  Undoable.",
	.opts = opts,
	.min_pos = 1,
	.max_pos = 1,
	.run = run,
};
