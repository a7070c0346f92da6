/* cli/cmd_import.c - `tether import` (experimental). */
#include <stdio.h>

#include "cli/cli.h"

static int run(const cli_cmd *cmd, cli_args *a)
{
	return EXIT_ERROR;
}

static const cli_opt opts[] = {
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_import = {
	"import", "SOURCE", "[experimental] Register or sync objects from a registry query.", "", opts, 1, 1, run,
};
