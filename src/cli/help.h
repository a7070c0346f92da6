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

/* Every command of the table (main.c), for completion and man pages. */
const cli_cmd *const *cli_commands(size_t *n);
extern const cli_cmd cmd_completion;
/* `tether __complete keys|bookmarks|kinds`: one word a line (nothing
 * outside a dataset). */
int cli_complete_words(int argc, char **argv);
/* A command's man page (roff), from the tables --help uses. */
void cli_man_page(tt_buf *out, const cli_cmd *cmd);
/* `tether __man DIR`: tether.1 and tether-COMMAND.1 for every command. */
int cli_write_man_pages(const char *dir);

#endif
