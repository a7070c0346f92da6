/* cli/cmd_promote.c - `tether promote`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/human.h"
#include "util/buf.h"
#include "util/fs.h"

static void print_states(json_t *obj, const char *label)
{
	const char *key;
	json_t *state;
	json_object_foreach(obj, key, state) {
		tt_buf b = TT_BUF_INIT;
		cli_state_text(&b, state);
		printf("  %s%s -> %s\n", label, key, b.ptr);
		tt_buf_release(&b);
	}
}

/* A refusal once: where the kind's own hint follows the generic "the KIND
 * backend cannot move a branch", the hint alone says it (--json keeps the
 * whole text, as tether-vcs has it). */
static const char *refusal_text(const char *text)
{
	static const char tail[] = " backend cannot move a branch; ";
	const char *p = strncmp(text, "the ", 4) == 0 ? text + 4 : NULL;
	if (p)
		p += strcspn(p, " ");
	if (p && strncmp(p, tail, sizeof tail - 1) == 0 && p[sizeof tail - 1])
		return p + sizeof tail - 1;
	return text;
}

static int promote(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res, tt_error *err)
{
	return tt_repo_promote(repo, ctx, plan, res, err);
}

/* The check's output, as it comes, on our stderr (stdout is the answer). */
static void check_output(void *ctx, const char *data, size_t len)
{
	(void)ctx;
	fwrite(data, 1, len, stderr);
	fflush(stderr);
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc;
	if ((rc = cli_open_repo(&repo)))
		return rc;
	tt_promote_opts o = {
		.version = TT_PROMOTE_OPTS_VERSION,
		.keys = a->pos,
		.nkeys = a->npos,
		.rev = cli_value(cmd, a, "rev"),
		.strategy = cli_value(cmd, a, "strategy"),
		.message = cli_value(cmd, a, "message"),
		.check = cli_value(cmd, a, "check"),
		.check_output = check_output,
	};
	if (o.check && !*o.check) {
		rc = cli_usage_error(cmd, "--check needs a command");
		goto done;
	}
	if (o.check)
		cli_interrupt_attach(repo); /* Ctrl-C stops the check and refuses */
	if ((rc = cli_run_planned(cmd, a, repo, promote, &o, &out, NULL)) != CLI_PLAN_APPLIED)
		goto done;
	json_t *refused = json_object_get(out, "refused"), *failed = json_object_get(out, "failed");
	bool stopped = json_object_size(refused) || json_object_size(failed);
	bool landed = json_object_size(json_object_get(out, "fast_forwarded")) ||
		      json_object_size(json_object_get(out, "merged"));
	int code = stopped ? (landed ? EXIT_PARTIAL : EXIT_ERROR) : EXIT_OK;
	if (cli_flag(cmd, a, "json")) {
		cli_print_json(out);
		rc = code;
		goto done;
	}
	print_states(json_object_get(out, "fast_forwarded"), "fast-forwarded ");
	print_states(json_object_get(out, "merged"), "merged         ");
	const char *key;
	json_t *v;
	json_object_foreach(json_object_get(out, "kept_forks"), key, v)
		printf("  kept           %s: %s\n", key, json_string_value(v));
	size_t i;
	json_array_foreach(json_object_get(out, "skipped"), i, v)
		printf("  skipped        %s\n", json_string_value(v));
	json_object_foreach(refused, key, v) {
		printf("  refused        %s: %s\n", key, refusal_text(json_string_value(v)));
		json_t *u;
		json_array_foreach(json_object_get(json_object_get(out, "conflicts"), key), i, u)
			printf("                   conflict: %s\n", json_string_value(u));
	}
	json_object_foreach(json_object_get(out, "held"), key, v)
		printf("  held           %s: %s\n", key, json_string_value(v));
	if (json_object_size(json_object_get(out, "held")))
		printf("nothing moved: a bookmark is planned whole or not at all; name keys to land a subset, "
		       "or finish the refused systems on the trunk and promote again\n");
	if (json_object_size(json_object_get(out, "merged")))
		printf("run `tether commit` to pin the merge result(s), then promote again\n");
	json_t *check = json_object_get(out, "check");
	if (check && json_object_size(json_object_get(out, "fast_forwarded")))
		printf("landed as checked by `%s` at %.12s\n", json_string_value(json_object_get(check, "command")),
		       json_string_value(json_object_get(check, "rev")));
	const char *moved = json_string_value(json_object_get(out, "trunk_moved"));
	const char *held_t = json_string_value(json_object_get(out, "trunk_held"));
	if (moved)
		printf("%s -> %.12s\n", tt_repo_trunk(repo), moved);
	if (held_t)
		printf("%s not moved: %s\n", tt_repo_trunk(repo), held_t);
	json_object_foreach(failed, key, v)
		fprintf(stderr, "  FAILED         %s: %s\n", key, json_string_value(v));
	rc = code;
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "rev", 'r', OPT_VALUE, "REV",
	  "Promote the states pinned at this dataset commit instead of the working branches." },
	{ "strategy", 0, OPT_VALUE, "auto|ff|merge",
	  "auto: fast-forward when the base is unchanged, else merge; ff: only fast-forwards; "
	  "merge: only merges." },
	{ "message", 'm', OPT_VALUE, "MESSAGE", "Merge message for systems that record one." },
	{ "check", 0, OPT_VALUE, "CMD",
	  "Write-audit-publish: run CMD (/bin/sh -c) with every object readable at exactly the heads that "
	  "land ($TETHER_CHECK_HANDLES, $TETHER_CHECK_REV, $TETHER_CHECK_BOOKMARK); land only if it exits 0 "
	  "and nothing moved since." },
	{ "dry-run", 0, OPT_FLAG, NULL, "Show per-object outcomes; write nothing (with --check: run the check too)." },
	{ "plan", 0, OPT_VALUE, "FILE", "Write the plan to FILE (implies --dry-run)." },
	{ "from-plan", 0, OPT_VALUE, "FILE", "Apply a plan saved with --plan." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_promote = {
	.name = "promote",
	.synopsis = "[KEY...] [-r REV] [--strategy auto|ff|merge] [-m MESSAGE] [--check CMD] "
	"[--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.summary = "Land this bookmark on the trunk: move each system's upstream branch to the bookmark's.",
	.description = "Base unchanged since the fork -> fast-forward; base moved -> native three-way merge\n"
	"where the system has one, otherwise refused with its own recipe.  Without KEYs the\n"
	"bookmark lands whole or not at all, merges before fast-forwards, and when everything\n"
	"fast-forwarded the trunk bookmark moves to this bookmark's commit.  After a merge,\n"
	"`commit` then `promote` again.  Exit 1 when something was refused and nothing landed,\n"
	"3 when some of it landed.\n"
	"\n"
	"--check CMD runs CMD after planning, its output on stderr, with $TETHER_CHECK_HANDLES\n"
	"naming a JSON file of every object's `open --json` at the commit that lands\n"
	"($TETHER_CHECK_REV; $TETHER_REV is set to it too, so `tether open` in CMD reads the\n"
	"same heads).  A non-zero exit, or Ctrl-C, refuses the promote: nothing moves.  Exit 0\n"
	"lands exactly the heads checked: an object whose fork or base moved after the check\n"
	"is refused (\"moved after the check\") and holds the rest.  A merge cannot be checked\n"
	"before it exists, so a plan that merges is refused.  The journal records the check.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 4096,
	.run = run,
	.planned = CLI_PLANNED,
};
