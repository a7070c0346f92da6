/*
 * cli/parse.h - the forgiving parts of option parsing, as git users expect
 * them: options before the command (-C DIR, --version, --help), bundled and
 * attached short options (-n1, -mmsg), and "did you mean" for commands and
 * options.
 */
#ifndef TT_CLI_PARSE_H
#define TT_CLI_PARSE_H

#include "cli/cli.h"

/*
 * The options before the command name: -C DIR (repeatable, each relative to
 * the one before, as git does), --version/-V, --help/-h.  *first is set to
 * the index of the command name in argv (argc when there is none).  Returns
 * -1 to go on, else the exit status to end with (after printing).
 * help(out) prints the main help page.
 */
int cli_global_options(int argc, char **argv, int *first, void (*help)(FILE *out));

/*
 * A short option argument ("-n1", "-cq", "-mmsg"): flags before the last
 * option of a bundle are counted in a->seen; returns the index of the last
 * one (its value, when the rest of the argument holds one, in *inline_val),
 * or -1 after printing a usage error.
 */
int cli_short_option(const cli_cmd *cmd, const char *arg, cli_args *a, const char **inline_val);

/* Print "no such option" with the closest option of cmd; returns EXIT_USAGE. */
int cli_unknown_option(const cli_cmd *cmd, const char *arg);

/* The closest of names[0..n) to name in " (did you mean 'x'?)" form, or "". */
void cli_did_you_mean(char *out, size_t size, const char *name, const char *const *names, size_t n,
		      const char *prefix);

/* Whether argv (after the command) asks for --json, before any "--", of a
 * command that has the option: errors then go out as JSON too. */
bool cli_wants_json(const cli_cmd *cmd, int argc, char **argv);

#endif
