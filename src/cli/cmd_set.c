/* cli/cmd_set.c - `tether set KEY... | --all [--file ...] [--pin ...]`. */
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *keys = NULL, *out = NULL;
	const char **argv_keys = NULL;
	size_t n = 0;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	if (cli_flag(cmd, a, "all")) {
		if (a->npos) {
			rc = cli_usage_error(cmd, "give KEYs or --all, not both");
			goto done;
		}
		if (tt_repo_keys(repo, &keys, &err) < 0) {
			rc = cli_fail(&err);
			goto done;
		}
		n = json_array_size(keys);
		argv_keys = calloc(n + 1, sizeof *argv_keys);
		for (size_t i = 0; argv_keys && i < n; i++)
			argv_keys[i] = json_string_value(json_array_get(keys, i));
	} else {
		n = a->npos;
		argv_keys = a->pos;
	}
	if (!n) {
		/* As tether-vcs: an error (1), not a usage error. */
		tt_error_set(&err, TT_ECONFIG, "give one or more KEY, or --all");
		rc = cli_fail(&err);
		goto done;
	}
	tt_set_policy_opts so = TT_SET_POLICY_OPTS_INIT;
	so.keys = (const char *const *)argv_keys;
	so.nkeys = n;
	so.file_policy = cli_value(cmd, a, "file");
	so.pin_policy = cli_value(cmd, a, "pin");
	if (tt_repo_set_policy(repo, &so, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	if (cli_flag(cmd, a, "json")) {
		rc = cli_print_json(out);
		goto done;
	}
	const char *key;
	json_t *diff;
	json_object_foreach(json_object_get(out, "changed"), key, diff) {
		printf("  set %s ", key);
		const char *field;
		json_t *ch;
		int first = 1;
		json_object_foreach(diff, field, ch) {
			printf("%s %s %s -> %s", first ? "" : ",", field,
			       json_string_value(json_object_get(ch, "from")),
			       json_string_value(json_object_get(ch, "to")));
			first = 0;
		}
		printf("\n");
	}
	size_t i;
	json_t *k;
	json_array_foreach(json_object_get(out, "unchanged"), i, k)
		printf("  unchanged %s\n", json_string_value(k));
	if (json_object_size(json_object_get(out, "changed")))
		printf("commit to record the policy\n");
done:
	if (keys)
		free(argv_keys);
	json_decref(keys);
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "file", 0, OPT_VALUE, "immutable|versioned", "File policy (file objects)." },
	{ "pin", 0, OPT_VALUE, "native|record", "A native ref per commit, or the state only." },
	{ "all", 0, OPT_FLAG, NULL, "Every registered object." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_set = {
	.name = "set",
	.synopsis = "KEY... | --all [--file immutable|versioned] [--pin native|record] [--json]",
	.summary = "Change objects' policy in place.",
	.description = "Manifest-only, journaled and undoable; commit afterwards to record the policy.\n"
	"`--pin record` on a pinned object drops the pin at the next commit; `--pin native`\n"
	"makes one again.  Whether writes fork or land upstream is not a policy: it is the\n"
	"bookmark you are on.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 1024,
	.run = run,
};
