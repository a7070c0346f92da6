/* cli/cmd_pull.c - `tether pull`. */
#include <stdio.h>

#include "cli/cli.h"
#include "cli/human.h"
#include "util/buf.h"

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int ki = cli_opt_index(cmd, "key");
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	cli_interrupt_attach(repo);
	tt_pull_opts po = TT_PULL_OPTS_INIT;
	po.bookmark = a->npos ? a->pos[0] : NULL;
	po.selectors = (const char *const *)a->list[ki];
	po.nselectors = a->nlist[ki];
	po.message = cli_value(cmd, a, "message");
	if (tt_repo_pull(repo, &po, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	if (cli_flag(cmd, a, "json")) {
		rc = cli_print_json(out);
		goto done;
	}
	const char *key;
	json_t *v;
	json_object_foreach(json_object_get(out, "committed"), key, v) {
		tt_buf x = TT_BUF_INIT, y = TT_BUF_INIT;
		cli_state_text(&x, json_object_get(v, "from"));
		cli_state_text(&y, json_object_get(v, "to"));
		printf("  pulled %s  %s -> %s\n", key, x.ptr, y.ptr);
		tt_buf_release(&x);
		tt_buf_release(&y);
	}
	size_t i;
	json_array_foreach(json_object_get(out, "unchanged"), i, v)
		printf("  up to date %s\n", json_string_value(v));
	json_object_foreach(json_object_get(out, "skipped"), key, v)
		printf("  skipped %s: %s\n", key, json_string_value(v));
	const char *commit = json_string_value(json_object_get(out, "vcs_commit"));
	if (commit)
		printf("committed %.12s on %s\n", commit, json_string_value(json_object_get(out, "bookmark")));
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "key", 0, OPT_LIST, "KEY", "Pull only this object (or prefix ending in '/'); repeatable." },
	{ "message", 'm', OPT_VALUE, "MESSAGE", "Commit message (default: pull <bookmark>: N objects)." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_pull = {
	.name = "pull",
	.synopsis = "[BOOKMARK] [--key KEY]... [-m MESSAGE] [--json]",
	.summary = "Take the current heads of this bookmark's branches: pin what moved and commit it.",
	.description = "On the trunk: every upstream branch, and objects without branches at their own head;\n"
	"elsewhere the bookmark's working branches.  Objects with no commit or no branch yet are\n"
	"skipped with a reason.  A changed immutable file object, and uncommitted manifest\n"
	"edits, are refused.  Nothing moved: nothing is committed.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 1,
	.run = run,
};
