/* cli/cmd_history.c - `tether verify`, `tether log` and `tether diff`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/markdown.h"
#include "util/buf.h"

/* --- verify --- */

static int run_verify(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	cli_interrupt_attach(repo);
	tt_verify_opts vo = TT_VERIFY_OPTS_INIT;
	vo.selectors = (const char *const *)a->pos;
	vo.nselectors = a->npos;
	vo.rev = cli_value(cmd, a, "rev");
	vo.flags = (cli_flag(cmd, a, "deep") ? TT_VERIFY_DEEP : 0u) |
		   (cli_flag(cmd, a, "all-history") ? TT_VERIFY_ALL_HISTORY : 0u);
	if (tt_repo_verify(repo, &vo, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	bool bad = false;
	const char *label;
	json_t *r;
	json_object_foreach(out, label, r)
		bad |= strcmp(json_string_value(json_object_get(r, "status")), "ok") != 0;
	if (cli_flag(cmd, a, "json"))
		cli_print_json(out);
	else
		json_object_foreach(out, label, r)
			printf("  %8s  %s  %s\n", json_string_value(json_object_get(r, "status")), label,
			       json_string_value(json_object_get(r, "message")));
	rc = bad ? EXIT_ERROR : EXIT_OK;
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt verify_opts[] = {
	{ "rev", 'r', OPT_VALUE, "REV", "Verify the manifests at this revision." },
	{ "all-history", 0, OPT_FLAG, NULL, "Verify every commit in the repository." },
	{ "deep", 0, OPT_FLAG, NULL, "Actually open recorded states (resolves `unknown`)." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_verify = {
	.name = "verify",
	.synopsis = "[KEY...] [-r REV] [--all-history] [--deep] [--json]",
	.summary = "Check that recorded states and pins still resolve.",
	.description = "Reports ok, drifted (the ref points elsewhere), missing (ref or state gone) or\n"
	"unknown (cannot tell without --deep) per object, and exits 1 if anything is not ok.\n"
	"--all-history checks every commit, each distinct record once; observed records are\n"
	"skipped.  KEY... verifies only those objects.",
	.opts = verify_opts,
	.min_pos = 0,
	.max_pos = 4096,
	.run = run_verify,
};

/* --- log --- */

static int run_log(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL, *loc = NULL;
	const char *kind = cli_value(cmd, a, "kind");
	int li = cli_opt_index(cmd, "limit");
	long long limit = a->seen[li] ? a->ivalue[li] : 20;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	if (limit < 0)
		limit = 0;
	if (kind) {
		loc = json_pack("{s:s}", "uri", a->pos[0]);
		if (cli_value(cmd, a, "branch"))
			json_object_set_new(loc, "branch", json_string(cli_value(cmd, a, "branch")));
		int si = cli_opt_index(cmd, "set");
		for (size_t j = 0; j < a->nlist[si]; j++) {
			const char *eq = strchr(a->list[si][j], '=');
			if (!eq) {
				rc = cli_error(NULL, "--set expects key=value, got '%s'", a->list[si][j]);
				goto done;
			}
			char *k = strndup(a->list[si][j], (size_t)(eq - a->list[si][j]));
			json_object_set_new(loc, k, json_string(eq + 1));
			free(k);
		}
	}
	tt_log_opts lo = TT_LOG_OPTS_INIT;
	lo.key = kind ? NULL : a->pos[0];
	lo.kind = kind;
	lo.locator = loc;
	lo.ref = cli_value(cmd, a, "ref");
	lo.limit = (size_t)limit;
	if (tt_repo_log(repo, &lo, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	if (cli_flag(cmd, a, "json")) {
		rc = cli_print_json(out);
		goto done;
	}
	cli_print_history(out, false);
done:
	json_decref(out);
	json_decref(loc);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt log_opts[] = {
	{ "kind", 0, OPT_VALUE, "KIND", "Browse an unregistered object of this backend kind." },
	{ "ref", 0, OPT_VALUE, "REF", "Start from this branch/tag/id (default: working ref or base)." },
	{ "limit", 'n', OPT_INT, "N", "Max entries (default 20)." },
	{ "branch", 0, OPT_VALUE, "BRANCH", "With --kind: base branch." },
	{ "set", 0, OPT_LIST, "K=V", "With --kind: extra locator field (repeatable)." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_log = {
	.name = "log",
	.synopsis = "KEY [--ref REF] [-n N] [--json] | LOCATOR --kind KIND [--branch B] [--set K=V]...",
	.summary = "List an object's native history (snapshots, versions, commits), newest first.",
	.description = "Entry ids are valid values for `tether add --at`; native branches, tags and tether\n"
	"pins pointing at an entry are shown in brackets.",
	.opts = log_opts,
	.min_pos = 1,
	.max_pos = 1,
	.run = run_log,
};

/* --- diff --- */

static int run_diff(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int ki = cli_opt_index(cmd, "key"), li = cli_opt_index(cmd, "limit");
	long long limit = a->seen[li] ? a->ivalue[li] : 20;
	int markdown;
	int rc = cli_output_format(cmd, a, &markdown);
	if (rc)
		return rc;
	if ((rc = cli_open_repo(&repo)))
		return rc;
	tt_diff_opts o = { .version = TT_DIFF_OPTS_VERSION, .rev_a = a->npos > 0 ? a->pos[0] : NULL,
			   .rev_b = a->npos > 1 ? a->pos[1] : NULL, .selectors = a->list[ki],
			   .nselectors = a->nlist[ki], .content = cli_flag(cmd, a, "content"), .describe = markdown };
	if (tt_repo_diff(repo, &o, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	if (cli_flag(cmd, a, "json")) {
		rc = cli_print_json(out);
		goto done;
	}
	if (markdown) {
		tt_buf md = TT_BUF_INIT;
		const char *from = o.rev_a ? o.rev_a : "the last commit";
		const char *to = o.rev_b ? o.rev_b : "the working copy";
		if (cli_markdown_diff(&md, out, from, to, a->seen[li] ? limit : -1, CLI_MARKDOWN_CAP) < 0)
			rc = cli_error(NULL, "out of memory");
		else
			fputs(md.ptr, stdout);
		tt_buf_release(&md);
		goto done;
	}
	size_t i;
	json_t *e;
	json_array_foreach(out, i, e) {
		const char *change = json_string_value(json_object_get(e, "change"));
		if (strcmp(change, "unchanged") == 0)
			continue;
		json_t *detail = json_object_get(e, "detail"), *why = json_object_get(e, "why");
		printf("  %9s  %s", change, json_string_value(json_object_get(e, "key")));
		bool has_state = false;
		size_t k;
		json_t *w;
		json_array_foreach(why, k, w)
			has_state |= strcmp(json_string_value(w), "state") == 0;
		if (json_is_object(detail)) {
			printf("  [%s]", json_string_value(json_object_get(detail, "summary")));
		} else if (json_is_string(json_object_get(e, "detail_error"))) {
			printf("  [diff failed: %s]", json_string_value(json_object_get(e, "detail_error")));
		} else if (json_array_size(why) && !has_state) {
			printf("  [");
			json_array_foreach(why, k, w)
				printf("%s%s", k ? " and " : "", json_string_value(w));
			printf(" changed; same state]");
		}
		printf("\n");
		if (!json_is_object(detail))
			continue;
		json_t *items = json_object_get(detail, "entries");
		size_t shown = limit < 0 ? 0 : (size_t)limit;
		if (shown > json_array_size(items))
			shown = json_array_size(items);
		for (k = 0; k < shown; k++) {
			json_t *it = json_array_get(items, k);
			json_t *d = json_object_get(it, "detail");
			printf("%14s%9s  %s%s%s\n", "", json_string_value(json_object_get(it, "change")),
			       json_string_value(json_object_get(it, "path")), json_is_string(d) ? "  " : "",
			       json_is_string(d) ? json_string_value(d) : "");
		}
		if (json_array_size(items) > shown)
			printf("%14s... %zu more (use --limit)\n", "", json_array_size(items) - shown);
	}
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt diff_opts[] = {
	{ "key", 0, OPT_LIST, "KEY", "Only this object (or prefix ending in '/'); repeatable." },
	{ "content", 'c', OPT_FLAG, NULL, "Also describe what changed inside each object." },
	{ "limit", 0, OPT_INT, "N", "Max entries shown per object (default 20; markdown: all)." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ "format", 0, OPT_VALUE, "text|markdown",
	  "text (the default), or markdown: a summary to post as a pull request comment." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_diff = {
	.name = "diff",
	.synopsis = "[REV_A] [REV_B] [--key KEY]... [--content] [--limit N] [--json | --format text|markdown]",
	.summary = "Show object-level manifest differences between two revisions.",
	.description = "No revision: the last commit against the working copy, as `git diff` does -- the\n"
	"objects that move at the states the last snapshot fingerprinted (what `status`\n"
	"shows; `status --snapshot` refreshes them); one: that revision against the working\n"
	"tree's manifests; two: A against B.  With --content, changed objects whose backend\n"
	"supports it are diffed natively from metadata (entries capped at 2000 per object;\n"
	"counts are exact).  --format markdown prints a GitHub-flavoured summary for a pull\n"
	"request comment: a row per changed object (kind, old -> new state, the content\n"
	"diff's counts), each object's entries folded under <details>, cut to 65,536\n"
	"characters with the cut said.",
	.opts = diff_opts,
	.min_pos = 0,
	.max_pos = 2,
	.run = run_diff,
};
