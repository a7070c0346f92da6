/* cli/parse.c - see parse.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/parse.h"
#include "util/suggest.h"

void cli_did_you_mean(char *out, size_t size, const char *name, const char *const *names, size_t n,
		      const char *prefix)
{
	const char *s = tt_suggest(name, names, n);
	if (s)
		snprintf(out, size, "; did you mean '%s%s'?", prefix, s);
	else if (size)
		out[0] = '\0';
}

int cli_unknown_option(const cli_cmd *cmd, const char *arg)
{
	const char *names[CLI_MAX_OPTS + 1];
	size_t n = 0;
	char hint[160] = "";
	for (int j = 0; cmd && cmd->opts && cmd->opts[j].name && n < CLI_MAX_OPTS; j++)
		names[n++] = cmd->opts[j].name;
	names[n++] = "help";
	/* "--jsn" -> json; "-json" (one dash) -> json too. */
	const char *word = arg[1] == '-' ? arg + 2 : arg + 1;
	size_t len = strcspn(word, "=");
	char buf[128];
	snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), word);
	bool exact = false;
	for (size_t j = 0; j < n; j++)
		exact |= strcmp(names[j], buf) == 0;
	if (exact && arg[1] != '-')
		snprintf(hint, sizeof hint, "; did you mean '--%s'?", buf);
	else if (strlen(buf) > 1)
		cli_did_you_mean(hint, sizeof hint, buf, names, n, "--");
	return cli_usage_error(cmd, "no such option: %s%s", arg, hint);
}

int cli_short_option(const cli_cmd *cmd, const char *arg, cli_args *a, const char **inline_val)
{
	int idx = -1;
	*inline_val = NULL;
	for (const char *p = arg + 1; *p; p++) {
		if (idx >= 0)
			a->seen[idx]++; /* a flag inside a bundle: -cq */
		idx = -1;
		for (int j = 0; cmd->opts && cmd->opts[j].name; j++)
			if (cmd->opts[j].shortc == *p)
				idx = j;
		if (idx < 0) {
			if (p == arg + 1) {
				cli_unknown_option(cmd, arg);
			} else {
				char one[3] = { '-', *p, '\0' };
				cli_usage_error(cmd, "no such option: %s (in %s)", one, arg);
			}
			return -1;
		}
		if (cmd->opts[idx].type != OPT_FLAG) {
			if (p[1])
				*inline_val = p + 1; /* -n1, -mmsg */
			return idx;
		}
	}
	return idx;
}

int cli_global_options(int argc, char **argv, int *first, void (*help)(FILE *out))
{
	int i = 1;
	for (; i < argc; i++) {
		const char *arg = argv[i];
		if (arg[0] != '-' || arg[1] == '\0')
			break;
		if (strcmp(arg, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(arg, "--version") == 0 || strcmp(arg, "-V") == 0) {
			printf("tether %s (tether-vcs %s compatible)\n", tt_version(), tt_compat_version());
			return EXIT_OK;
		}
		if (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0) {
			help(stdout);
			return EXIT_OK;
		}
		if (strncmp(arg, "-C", 2) == 0) {
			const char *dir = arg[2] ? arg + 2 : NULL;
			if (!dir) {
				if (i + 1 >= argc)
					return cli_usage_error(NULL, "option -C requires an argument (a directory)");
				dir = argv[++i];
			}
			/* git treats an empty -C as "stay here". */
			if (*dir && chdir(dir) != 0) {
				fprintf(stderr, "error: cannot change to '%s' (-C): %s\n", dir, strerror(errno));
				return EXIT_ERROR;
			}
			continue;
		}
		const char *names[] = { "version", "help" };
		char hint[160] = "";
		const char *word = arg[1] == '-' ? arg + 2 : arg + 1;
		if (strlen(word) > 1)
			cli_did_you_mean(hint, sizeof hint, word, names, 2, "--");
		return cli_usage_error(NULL, "no such option: %s%s", arg, hint);
	}
	*first = i;
	return -1;
}

bool cli_wants_json(const cli_cmd *cmd, int argc, char **argv)
{
	if (cli_opt_index(cmd, "json") < 0)
		return false;
	for (int i = 0; i < argc && strcmp(argv[i], "--") != 0; i++)
		if (strcmp(argv[i], "--json") == 0)
			return true;
	return false;
}
