/*
 * cli/main.c - `tether`: finds the command, parses its options from the
 * command's own table, runs it, and maps the result to an exit status.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/help.h"
#include "cli/parse.h"
#include "util/mem.h"

static const cli_cmd *const commands[] = {
	&cmd_init, &cmd_backends, &cmd_add, &cmd_set, &cmd_remove,
	&cmd_status, &cmd_snapshot, &cmd_commit, &cmd_verify, &cmd_diff, &cmd_log,
	&cmd_new, &cmd_open, &cmd_pull, &cmd_restore, &cmd_promote, &cmd_gc,
	&cmd_ops, &cmd_undo, &cmd_repair,
	&cmd_export, &cmd_publish, &cmd_import,
	&cmd_recover, &cmd_forget_workspace, &cmd_abandon, &cmd_drop, &cmd_bookmarks,
	&cmd_upgrade, &cmd_query,
	&cmd_completion,
};
#define NCOMMANDS (sizeof commands / sizeof commands[0])

static void print_main_help(FILE *out)
{
	cli_help_entry(out, NULL, "usage: tether [-C DIR] [--version] [--help] COMMAND [ARGS]...");
	fputc('\n', out);
	cli_help_entry(out, NULL, "Version control -- fingerprints, pins and forks -- for datasets that "
		       "live in other systems.  A dataset is a git repository holding tether.toml and one "
		       "manifest per tracked object.");
	fprintf(out, "\ncommands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++)
		cli_help_entry(out, commands[i]->name, commands[i]->summary);
	cli_help_entry(out, "help", "Show help for tether or one command.");
	fprintf(out, "\n`tether COMMAND --help` describes one command.\n");
}

const cli_cmd *const *cli_commands(size_t *n)
{
	*n = NCOMMANDS;
	return commands;
}

static const cli_cmd *find_command(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i]->name, name) == 0)
			return commands[i];
	return NULL;
}

static int unknown_command(const char *name)
{
	const char *names[NCOMMANDS + 1];
	size_t n = 0;
	char hint[160];
	for (size_t i = 0; i < NCOMMANDS; i++)
		names[n++] = commands[i]->name;
	names[n++] = "help";
	cli_did_you_mean(hint, sizeof hint, name, names, n, "");
	return cli_usage_error(NULL, "no such command '%s'%s", name, hint);
}

static void free_args(cli_args *a)
{
	for (int i = 0; i < CLI_MAX_OPTS; i++)
		free(a->list[i]);
	free(a->pos);
}

/* 0, or -1 (not an integer), -2 (below 0: every count, limit and port is
 * one), -3 (too big to hold). */
static int parse_int(const char *s, long long *out)
{
	char *end;
	if (!*s)
		return -1;
	errno = 0;
	*out = strtoll(s, &end, 10);
	if (*end)
		return -1;
	if (errno == ERANGE)
		return *out < 0 ? -2 : -3;
	return *out < 0 ? -2 : 0;
}

/* Parse argv (after the command name).  Returns -1 after printing a usage
 * error, 1 when --help was asked for, 0 otherwise. */
static int parse_args(const cli_cmd *cmd, int argc, char **argv, cli_args *a)
{
	bool only_pos = false;
	int bad;
	memset(a, 0, sizeof *a);
	a->pos = tt_calloc((size_t)argc + 1, sizeof *a->pos);
	if (!a->pos)
		return -1;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		if (only_pos || arg[0] != '-' || arg[1] == '\0') {
			a->pos[a->npos++] = arg;
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			only_pos = true;
			continue;
		}
		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)
			return 1;
		int idx = -1;
		const char *inline_val = NULL;
		if (arg[1] == '-') {
			const char *name = arg + 2;
			const char *eq = strchr(name, '=');
			size_t len = eq ? (size_t)(eq - name) : strlen(name);
			for (int j = 0; cmd->opts && cmd->opts[j].name; j++)
				if (strlen(cmd->opts[j].name) == len && strncmp(cmd->opts[j].name, name, len) == 0)
					idx = j;
			if (eq)
				inline_val = eq + 1;
		} else if ((idx = cli_short_option(cmd, arg, a, &inline_val)) < 0) {
			return -1;
		}
		if (idx < 0) {
			cli_unknown_option(cmd, arg);
			return -1;
		}
		const cli_opt *o = &cmd->opts[idx];
		a->seen[idx]++;
		if (o->type == OPT_FLAG) {
			if (inline_val) {
				cli_usage_error(cmd, "option --%s does not take a value", o->name);
				return -1;
			}
			continue;
		}
		const char *val = inline_val;
		if (!val) {
			if (i + 1 >= argc) {
				cli_usage_error(cmd, "option --%s requires an argument", o->name);
				return -1;
			}
			val = argv[++i];
		}
		if (o->type == OPT_LIST) {
			const char **grown = realloc(a->list[idx], (a->nlist[idx] + 1) * sizeof *grown);
			if (!grown)
				return -1;
			a->list[idx] = grown;
			a->list[idx][a->nlist[idx]++] = val;
		} else if (o->type == OPT_INT && (bad = parse_int(val, &a->ivalue[idx])) < 0) {
			if (bad == -1)
				cli_usage_error(cmd, "invalid value for --%s: '%s' is not a valid integer",
						o->name, val);
			else if (bad == -2)
				cli_usage_error(cmd, "invalid value for --%s: %s is not in the range x>=0",
						o->name, val);
			else
				cli_usage_error(cmd, "invalid value for --%s: %s is too large (at most %lld)",
						o->name, val, LLONG_MAX);
			return -1;
		}
		a->value[idx] = val;
	}
	if (a->npos < cmd->min_pos) {
		cli_usage_error(cmd, "missing argument");
		return -1;
	}
	if (a->npos > cmd->max_pos) {
		cli_usage_error(cmd, "got unexpected extra argument (%s)", a->pos[cmd->max_pos]);
		return -1;
	}
	return 0;
}

/* TETHER_TRACE=1: the library's trace lines on stderr. */
static void print_trace(void *ctx, const char *line)
{
	(void)ctx;
	fprintf(stderr, "tether: trace: %s\n", line);
}

int main(int argc, char **argv)
{
	const char *trace = getenv("TETHER_TRACE");
	if (trace && *trace && strcmp(trace, "0") != 0)
		tt_set_trace(print_trace, NULL);
	int first = 1, g = cli_global_options(argc, argv, &first, print_main_help);
	if (g >= 0)
		return g;
	argc -= first - 1; /* argv[1] is the command from here on */
	argv += first - 1;
	if (argc < 2) {
		print_main_help(stderr); /* as tether-vcs: the page on stderr, exit 2 */
		return EXIT_USAGE;
	}
	const char *name = argv[1];
	if (strcmp(name, "--version") == 0 || strcmp(name, "-V") == 0) {
		/* Scripts written for tether-vcs read which release this behaves as;
		 * it is also every saved plan's tether_version. */
		printf("tether %s (tether-vcs %s compatible)\n", tt_version(), tt_compat_version());
		return EXIT_OK;
	}
	if (strcmp(name, "--help") == 0 || strcmp(name, "-h") == 0) {
		print_main_help(stdout);
		return EXIT_OK;
	}
	if (strcmp(name, "help") == 0) {
		if (argc < 3) {
			print_main_help(stdout);
			return EXIT_OK;
		}
		const cli_cmd *cmd = find_command(argv[2]);
		if (!cmd)
			return unknown_command(argv[2]);
		cli_print_help(cmd);
		return EXIT_OK;
	}
	if (strcmp(name, "__complete") == 0) /* hidden: for the completion scripts */
		return cli_complete_words(argc - 2, argv + 2);
	if (strcmp(name, "__man") == 0 && argc == 3) /* hidden: the build writes the man pages */
		return cli_write_man_pages(argv[2]);
	const cli_cmd *cmd = find_command(name);
	if (!cmd)
		return unknown_command(name);
	cli_args args;
	cli_json_errors = cli_wants_json(cmd, argc - 2, argv + 2);
	int rc = parse_args(cmd, argc - 2, argv + 2, &args);
	if (rc == 1) {
		cli_print_help(cmd);
		rc = EXIT_OK;
	} else if (rc < 0) {
		rc = EXIT_USAGE;
	} else if (!cmd->planned || (rc = cli_plan_args(cmd, &args)) == EXIT_OK) {
		rc = cmd->run(cmd, &args);
	}
	free_args(&args);
	fflush(stdout);
	return rc;
}
