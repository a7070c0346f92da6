/* cli/cmd_new.c - `tether new` and `tether open`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/human.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"

static int new_call(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res, tt_error *err)
{
	return tt_repo_new(repo, ctx, plan, res, err);
}

static int run_new(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT, unforked = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL, *adopted_detail = NULL;
	int rc;
	bool expiry = false, clear = false;
	long long expires = 0;
	if (cli_flag(cmd, a, "eager") && cli_flag(cmd, a, "lazy"))
		return cli_usage_error(cmd, "--eager and --lazy contradict each other");
	if ((rc = cli_expiry_args(cmd, a, &expiry, &expires, &clear)) != EXIT_OK)
		return rc;
	if (expiry && !cli_value(cmd, a, "bookmark"))
		return cli_usage_error(cmd, "--ttl and --expires give the bookmark -b creates an expiry; `tether "
				       "bookmarks NAME --ttl DURATION` changes an existing one's");
	if ((rc = cli_open_repo(&repo)))
		return rc;
	if (expiry && strcmp(cli_value(cmd, a, "bookmark"), tt_repo_trunk(repo)) == 0) {
		rc = cli_error(NULL, "'%s' is the trunk bookmark, and the trunk never expires; drop --ttl/--expires",
			       tt_repo_trunk(repo));
		goto done;
	}
	tt_new_opts o = {
		.version = TT_NEW_OPTS_VERSION,
		.rev = a->npos ? a->pos[0] : NULL,
		.bookmark = cli_value(cmd, a, "bookmark"),
		.shared = cli_flag(cmd, a, "shared"),
		.keep = cli_flag(cmd, a, "keep"),
		.eager = cli_flag(cmd, a, "eager") ? 1 : cli_flag(cmd, a, "lazy") ? 0 : -1,
		.discard = cli_flag(cmd, a, "discard"),
		.adopt = cli_flag(cmd, a, "adopt"),
	};
	/* With the error in unforked: the new took effect except for the
	 * objects it names. */
	if ((rc = cli_run_planned(cmd, a, repo, new_call, &o, &out, &unforked)) != CLI_PLAN_APPLIED)
		goto done;
	rc = EXIT_OK;
	/* The bookmark -b made gets its expiry as a commit on it; without one,
	 * an expiry file of that name it inherited from REV goes. */
	if (o.bookmark && json_is_string(json_object_get(out, "bookmark")) && (expiry || !unforked.code)) {
		json_t *x = NULL;
		if (tt_repo_set_expiry(repo, o.bookmark, expires, !expiry, &x, &err) < 0) {
			tt_error_prefix(&err, "bookmark %s is made, but not its expiry", o.bookmark);
			tt_error_hint(&err, "`tether bookmarks %s %s %s` sets it once that is fixed", o.bookmark,
				      cli_value(cmd, a, "ttl") ? "--ttl" : "--expires",
				      cli_value(cmd, a, "ttl") ? cli_value(cmd, a, "ttl") : cli_value(cmd, a, "expires"));
			if (expiry && unforked.code)
				cli_fail(&err);
			else if (expiry) {
				unforked = err;
				err = (tt_error)TT_ERROR_INIT;
			}
			tt_error_clear(&err);
		} else if (expiry) {
			json_object_set(out, "expiry", x);
		}
		json_decref(x);
	}
	adopted_detail = json_incref(json_object_get(out, "adopted_detail"));
	json_object_del(out, "adopted_detail");
	if (cli_flag(cmd, a, "json")) {
		rc = cli_print_json(out);
		goto done;
	}
	const char *bm = json_string_value(json_object_get(out, "bookmark"));
	if (!bm && unforked.code)
		goto done;
	if (!bm) {
		printf("on no bookmark: read-only (`tether new -b NAME` to write)\n");
		goto done;
	}
	cli_close_repo(repo);
	repo = NULL;
	/* Re-open to learn whether this is the trunk and which objects exist. */
	if ((rc = cli_open_repo(&repo)))
		goto done;
	bool trunk = strcmp(bm, tt_repo_trunk(repo)) == 0;
	printf("on %sbookmark %s; %s\n", trunk ? "trunk " : "", bm,
	       o.keep ? "kept working refs" : "working refs set up");
	json_t *keys = NULL;
	tt_repo_keys(repo, &keys, &err);
	tt_error_clear(&err);
	const char *key;
	json_t *ref;
	json_object_foreach(json_object_get(out, "working_refs"), key, ref) {
		bool present = false;
		size_t i;
		json_t *k;
		json_array_foreach(keys, i, k)
			present |= strcmp(json_string_value(k), key) == 0;
		const char *how = json_string_value(json_object_get(adopted_detail, key));
		if (how)
			printf("  %s -> %s  (%s)\n", key, json_string_value(ref), how);
		else
			printf("  %s -> %s%s\n", key, json_string_value(ref),
			       present ? "" : "  (not at this revision; branch kept for gc)");
	}
	json_decref(keys);
	json_object_foreach(json_object_get(out, "pending_forks"), key, ref)
		printf("  %s -> %s  (created on first writable open)\n", key, json_string_value(ref));
done:
	if (unforked.code && rc == EXIT_OK) {
		cli_fail(&unforked);
		rc = EXIT_PARTIAL;
	}
	tt_error_clear(&unforked);
	tt_error_clear(&err);
	json_decref(adopted_detail);
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt new_opts[] = {
	{ "bookmark", 'b', OPT_VALUE, "NAME",
	  "Create this bookmark at REV (default: here) and work on it." },
	{ "shared", 0, OPT_FLAG, NULL, "Work on a bookmark another live checkout already holds." },
	{ "keep", 0, OPT_FLAG, NULL, "Keep current working refs; only refresh the baseline." },
	{ "eager", 0, OPT_FLAG, NULL, "Create every working branch now." },
	{ "lazy", 0, OPT_FLAG, NULL, "Create working branches on the first writable open (default)." },
	{ "discard", 0, OPT_FLAG, NULL, "Reset working branches even if they hold uncommitted writes." },
	{ "adopt", 0, OPT_FLAG, NULL,
	  "Take the bookmark's existing store branches (tether.ws.<dataset>.<bookmark>, its highest .N "
	  "generation where there are several) as they are, whatever they hold -- the branches of a dataset "
	  "whose repository was lost (`tether recover`). Objects with no such branch fork as usual. Not on "
	  "the trunk." },
	{ "ttl", 0, OPT_VALUE, "DURATION",
	  "With -b: the bookmark expires this long from now (45s, 30m, 12h, 7d, 2w, or several: 1d12h); "
	  "`tether gc --expired` drops it after that.  Committed on the bookmark." },
	{ "expires", 0, OPT_VALUE, "TIME",
	  "With -b: the bookmark expires at this ISO 8601 time (2026-12-11T07:30:00Z, with Z or an offset)." },
	{ "dry-run", 0, OPT_FLAG, NULL, "Show which branches would be forked; write nothing." },
	{ "plan", 0, OPT_VALUE, "FILE", "Write the plan to FILE (implies --dry-run)." },
	{ "from-plan", 0, OPT_VALUE, "FILE", "Apply a plan saved with --plan instead of replanning." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_new = {
	.name = "new",
	.synopsis = "[REV] [-b NAME [--ttl DURATION | --expires TIME]] [--shared] [--keep] [--eager | --lazy] [--discard] [--adopt] "
	"[--dry-run | --plan FILE | --from-plan FILE] [--json]",
	.summary = "Start working on a bookmark: its store branches become your working refs.",
	.description = "`tether new -b NAME [REV]` creates bookmark NAME (at REV, default here) and forks a\n"
	"tether.ws.<dataset>.NAME branch per forkable object off its pin -- lazily, on the\n"
	"first writable `open`, or now with --eager.  `tether new NAME` joins an existing\n"
	"bookmark; on the trunk every object writes its upstream branch.  A bookmark another\n"
	"live checkout holds is refused unless --shared.  A working branch holding writes no\n"
	"commit pinned is not reset unless --discard.  --ttl/--expires give the new bookmark an\n"
	"expiry, committed on it (`tether bookmarks`, `tether gc --expired`).",
	.opts = new_opts,
	.min_pos = 0,
	.max_pos = 1,
	.run = run_new,
	.planned = CLI_PLANNED,
};

static int run_open(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	char *worktree = NULL;
	int rc;
	if (cli_flag(cmd, a, "read-only") && cli_flag(cmd, a, "writable"))
		return cli_usage_error(cmd, "--read-only and --writable contradict each other");
	if (cli_value(cmd, a, "for")) {
		if (cli_flag(cmd, a, "writable") || cli_value(cmd, a, "worktree") || cli_flag(cmd, a, "with-password"))
			return cli_usage_error(cmd, "--for reads the recorded state: no --writable, --worktree or "
					       "--with-password");
		if (!cli_engine_known(cli_value(cmd, a, "for")))
			return cli_usage_error(cmd, "--for is duckdb, spark, trino or polars, not '%s'",
					       cli_value(cmd, a, "for"));
		return cli_open_for(a->pos[0], cli_value(cmd, a, "rev"), cli_value(cmd, a, "for"),
				    cli_flag(cmd, a, "json"));
	}
	if ((rc = cli_open_repo(&repo)))
		return rc;
	tt_open_opts o = {
		.version = TT_OPEN_OPTS_VERSION,
		.rev = cli_value(cmd, a, "rev"),
		.read_only = cli_flag(cmd, a, "read-only") ? 1 : cli_flag(cmd, a, "writable") ? 0 : -1,
	};
	const char *wt = cli_value(cmd, a, "worktree");
	if (wt && !*wt) {
		rc = cli_usage_error(cmd, "--worktree needs a directory");
		goto done;
	}
	if (wt && wt[0] != '/') {
		char *cwd = tt_getcwd();
		if (!cwd || !(worktree = tt_path_join(cwd, wt))) {
			free(cwd);
			rc = cli_error(NULL, "out of memory");
			goto done;
		}
		free(cwd);
	}
	o.worktree = worktree ? worktree : wt;
	if (tt_repo_open_handle(repo, a->pos[0], &o, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	if (cli_flag(cmd, a, "json")) {
		json_t *shown = json_pack("{s:O,s:O,s:O,s:O}", "key", json_object_get(out, "key"), "read_only",
					  json_object_get(out, "read_only"), "address",
					  json_object_get(out, "address"), "type", json_object_get(out, "type"));
		const char *k;
		json_t *v;
		json_object_foreach(out, k, v)
			if (!json_object_get(shown, k) && strcmp(k, "url_with_password") != 0 &&
			    strncmp(k, "secret_", 7) != 0)
				json_object_set(shown, k, v);
		rc = cli_print_json(shown);
		json_decref(shown);
		goto done;
	}
	/* A connection URL is redacted unless asked (shell history and CI
	 * logs keep stdout); a backend whose handle carries a credential puts
	 * the full URL in url_with_password.  Never under --json. */
	const json_t *full = json_object_get(out, "url_with_password");
	if (cli_flag(cmd, a, "with-password") && json_is_string(full))
		printf("%s\n", json_string_value(full));
	else
		printf("%s\n", json_string_value(json_object_get(out, "address")));
	fflush(stdout);
	/* Where a writable branch is: the name, and the checkout that has it. */
	const char *branch = json_string_value(json_object_get(out, "branch"));
	const char *where = json_string_value(json_object_get(out, "worktree"));
	if (branch && !json_is_true(json_object_get(out, "read_only"))) {
		fprintf(stderr, "  branch: %s (writable)\n", branch);
		if (where)
			fprintf(stderr, "  worktree: %s\n", where);
		else
			fprintf(stderr, "  worktree: none has it checked out (`tether open %s --worktree DIR` "
				"makes one)\n", a->pos[0]);
	}
	cli_handle_snippet(out);
done:
	free(worktree);
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt open_opts[] = {
	{ "rev", 'r', OPT_VALUE, "REV", "Open read-only at what this dataset commit pinned." },
	{ "read-only", 0, OPT_FLAG, NULL, "A read-only handle." },
	{ "writable", 0, OPT_FLAG, NULL, "A writable handle (forkable objects; forks lazily)." },
	{ "worktree", 0, OPT_VALUE, "DIR",
	  "A git object opened writable: check its branch out in a new worktree at DIR (or "
	  "where that branch is already checked out, if that is DIR)." },
	{ "with-password", 0, OPT_FLAG, NULL,
	  "Print a connection URL with its password (Neon); by default the password is redacted. "
	  "Never honoured under --json." },
	{ "for", 0, OPT_VALUE, "duckdb|spark|trino|polars",
	  "Print the code that reads the object at its recorded state in that engine instead of an "
	  "address (refused where that engine cannot address the state); --json adds its options." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_open = {
	.name = "open",
	.synopsis = "KEY [-r REV] [--read-only | --writable] [--worktree DIR] [--with-password] "
		    "[--for duckdb|spark|trino|polars] [--json]",
	.summary = "Print the native address of an object's handle.",
	.description = "Without -r (and TETHER_REV), forkable objects open writable at their working ref -- the\n"
	"deferred fork is created first -- and everything else read-only.  With -r REV the\n"
	"handle is read-only at that commit's pinned or recorded state.  A moved pin is\n"
	"refused; a deleted one falls back to the recorded state where the kind can address it.\n"
	"A writable git handle names its branch and the worktree that has it checked out\n"
	"(--worktree DIR makes one); a writable open is refused while the dataset's checkout\n"
	"is off the workspace's bookmark.\n"
	"\n"
	"--for ENGINE prints the code that reads the object at what the working copy (or -r REV)\n"
	"recorded, in DuckDB, Spark, Trino or Polars - a Delta version, an Iceberg snapshot id,\n"
	"a Lance tag - with no credential in it; `tether query --for spark` does the same for\n"
	"the whole dataset.",
	.opts = open_opts,
	.min_pos = 1,
	.max_pos = 1,
	.run = run_open,
};
