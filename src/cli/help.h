/* cli/help.h - help pages and man pages from the command tables. */
#ifndef TT_CLI_HELP_H
#define TT_CLI_HELP_H

#include <stdio.h>

#include "cli/cli.h"
#include "util/buf.h"

/* COLUMNS, else the terminal's width, else 80. */
int cli_term_width(void);
/* Whether an option is listed: not when it serves only kinds this build lacks. */
bool cli_opt_shown(const cli_cmd *cmd, const cli_opt *o);
/* The command's examples, one command line per line (NULL: none). */
const char *cli_examples(const cli_cmd *cmd);
/* An option's description ({kinds} expands to the kinds this build has). */
void cli_opt_help(tt_buf *out, const cli_opt *o);
/* "-n, --limit N" / "    --json". */
void cli_opt_left(tt_buf *out, const cli_opt *o);
/* One "  name  summary" line of the main page, wrapped to the width
 * (name NULL: a paragraph). */
void cli_help_entry(FILE *out, const char *name, const char *summary);
/* The whole --help page of cmd at width columns. */
void cli_help_text(tt_buf *out, const cli_cmd *cmd, int width);

#endif
