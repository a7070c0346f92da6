/* cli/cmd_gc.c - `tether gc`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/buf.h"
#include "util/fs.h"

static size_t total(const json_t *map)
{
	const char *k;
	json_t *v;
	size_t n = 0;
	json_object_foreach((json_t *)map, k, v) n += json_array_size(v);
	return n;
}

/* map's entries, those in (in) or not in (!in) the same-shaped `only`. */
static size_t print_some(const json_t *map, const json_t *only, bool in, bool print)
{
	const char *k;
	json_t *v, *x, *y;
	size_t i, j, n = 0;
	json_object_foreach((json_t *)map, k, v) {
		json_array_foreach(v, i, x) {
			bool found = false;
			json_array_foreach(json_object_get(only, k), j, y)
				found = found || json_equal(x, y);
			if (found != in)
				continue;
			n++;
			if (print)
				printf("  %s: %s\n", k, json_string_value(x));
		}
	}
	return n;
}

static void print_entries(const json_t *map)
{
	print_some(map, NULL, false, true);
}

/* tether-vcs's _print_gc_report. */
static void print_report(const json_t *r)
{
	const json_t *unpinned = json_object_get(r, "unpinned"), *kept = json_object_get(r, "kept_pins");
	const json_t *deleted = json_object_get(r, "deleted_working_refs");
	const json_t *kept_refs = json_object_get(r, "kept_working_refs");
	const json_t *listings = json_object_get(r, "deleted_listings");
	const json_t *stores = json_object_get(r, "deleted_stores"), *kept_st = json_object_get(r, "kept_stores");
	const char *k;
	json_t *v;
	printf("unpinned %zu pin(s)\n", total(unpinned));
	print_entries(unpinned);
	/* kept_pins_shared: those kept because another clone may hold them
	 * although this clone made them, or because a commit naming them
	 * left this clone (not part of the --json report). */
	const json_t *shared = json_object_get(r, "kept_pins_shared");
	size_t nforeign = print_some(kept, shared, false, false);
	if (nforeign) {
		printf("kept %zu unreferenced pin(s) this clone did not create (--release-foreign releases)\n",
		       nforeign);
		print_some(kept, shared, false, true);
	}
	if (total(kept) > nforeign) {
		printf("kept %zu unreferenced pin(s) another clone may hold (`tether gc` says why)\n",
		       total(kept) - nforeign);
		print_some(kept, shared, true, true);
	}
	if (total(deleted)) {
		printf("deleted %zu working branch(es)\n", total(deleted));
		print_entries(deleted);
	}
	if (total(kept_refs)) {
		printf("kept %zu working branch(es) holding unpinned data (--force-prune deletes)\n",
		       total(kept_refs));
		print_entries(kept_refs);
	}
	if (total(json_object_get(r, "forgotten_working_refs")))
		printf("forgot %zu working ref(s) of removed object(s)\n",
		       total(json_object_get(r, "forgotten_working_refs")));
	if (json_array_size(listings))
		printf("deleted %zu orphan listing(s)\n", json_array_size(listings));
	if (json_object_size(stores)) {
		printf("deleted %zu created store(s)\n", json_object_size(stores));
		json_object_foreach((json_t *)stores, k, v) printf("  %s: %s\n", k, json_string_value(v));
	}
	if (json_object_size(kept_st)) {
		printf("kept %zu unreferenced created store(s)\n", json_object_size(kept_st));
		json_object_foreach((json_t *)kept_st, k, v) printf("  %s: %s\n", k, json_string_value(v));
	}
	if (json_array_size(json_object_get(r, "forgotten_stores")))
		printf("forgot %zu store(s) with nothing of tether's left in them\n",
		       json_array_size(json_object_get(r, "forgotten_stores")));
}

static bool applied(const json_t *r)
{
	return total(json_object_get(r, "unpinned")) || json_object_size(json_object_get(r, "deleted_working_refs")) ||
	       json_object_size(json_object_get(r, "forgotten_working_refs")) ||
	       json_array_size(json_object_get(r, "deleted_listings")) ||
	       json_object_size(json_object_get(r, "deleted_stores")) ||
	       json_array_size(json_object_get(r, "forgotten_stores"));
}

/* The report in the order `tether gc --json` prints it. */
static json_t *report_json(const json_t *r)
{
	static const char *const order[] = {
		"dry_run", "unpinned", "kept_pins", "deleted_working_refs", "kept_working_refs",
		"forgotten_working_refs", "deleted_listings", "deleted_stores", "kept_stores",
		"forgotten_stores", "failed",
	};
	json_t *out = json_object();
	for (size_t i = 0; out && i < sizeof order / sizeof order[0]; i++) {
		json_t *v = json_object_get(r, order[i]);
		json_object_set(out, order[i], v ? v : json_object());
	}
	return out;
}

static int gc(tt_repo *repo, void *ctx, const tt_plan_opts *plan, tt_plan_result *res, tt_error *err)
{
	return tt_repo_gc(repo, ctx, plan, res, err);
}

/* `gc --expired`: each expired bookmark dropped as `tether drop` would. */
static int run_expired(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	bool json = cli_flag(cmd, a, "json"), dry = a->plan_dry;
	static const char *const alone[] = { "prune-bookmarks", "keep-bookmark", "store", "plan", "from-plan" };
	for (size_t i = 0; i < sizeof alone / sizeof alone[0]; i++)
		if (a->seen[cli_opt_index(cmd, alone[i])])
			return cli_usage_error(cmd, "--expired drops expired bookmarks, each as `tether drop` would; it "
					       "takes no --%s (run that gc on its own)", alone[i]);
	if (cli_flag(cmd, a, "delete-stores") && !json)
		cli_note("reclaiming created stores is experimental: `delete-store` has no `repair`; read the plan");
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	tt_drop_opts o = { .version = TT_DROP_OPTS_VERSION, .delete_stores = cli_flag(cmd, a, "delete-stores"),
			   .force_prune = cli_flag(cmd, a, "force-prune"),
			   .release_foreign = cli_flag(cmd, a, "release-foreign"), .dry_run = dry };
	if (tt_repo_gc_expired(repo, &o, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	size_t i, done_n = 0, refused = 0;
	json_t *b;
	json_array_foreach(json_object_get(out, "bookmarks"), i, b) {
		const char *outcome = json_string_value(json_object_get(b, "outcome"));
		if (strcmp(outcome, "planned") == 0 || strcmp(outcome, "dropped") == 0)
			done_n++;
		else
			refused++;
	}
	if (json) {
		json_array_foreach(json_object_get(out, "bookmarks"), i, b)
			json_object_del(b, "plan_text");
		rc = cli_print_json(out);
	} else if (!json_array_size(json_object_get(out, "bookmarks"))) {
		printf("no expired bookmark\n");
	} else {
		json_array_foreach(json_object_get(out, "bookmarks"), i, b) {
			const char *name = json_string_value(json_object_get(b, "bookmark"));
			const char *outcome = json_string_value(json_object_get(b, "outcome"));
			const char *expires = json_string_value(json_object_get(b, "expires"));
			if (strcmp(outcome, "planned") == 0) {
				printf("bookmark %s expired at %s; drop plan:\n", name, expires);
				fputs(json_string_value(json_object_get(b, "plan_text")), stdout);
			} else if (strcmp(outcome, "dropped") == 0) {
				const json_t *r = json_object_get(b, "result");
				printf("dropped %s (expired at %s): %zu commit(s)\n", name, expires,
				       json_array_size(json_object_get(r, "abandoned")));
				if (json_is_object(json_object_get(r, "gc")))
					cli_print_gc_report(json_object_get(r, "gc"));
			} else {
				printf("%s %s (expired at %s)\n", strcmp(outcome, "failed") == 0 ? "FAILED" : "refused", name,
				       expires);
				fprintf(stderr, "%s   %s: %s\n", strcmp(outcome, "failed") == 0 ? "FAILED" : "REFUSED", name,
					json_string_value(json_object_get(b, "error")));
			}
		}
		if (dry && done_n)
			printf("(not applied; `--no-dry-run` drops %s)\n", done_n > 1 ? "them" : "it");
	}
	if (rc == EXIT_OK && refused)
		rc = done_n ? EXIT_PARTIAL : EXIT_ERROR;
done:
	tt_error_clear(&err);
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	if (cli_flag(cmd, a, "expired"))
		return run_expired(cmd, a);

	tt_repo *repo = NULL;
	json_t *out = NULL;
	bool as_json = cli_flag(cmd, a, "json");
	int ki = cli_opt_index(cmd, "keep-bookmark"), si = cli_opt_index(cmd, "store");
	int rc = EXIT_OK;

	tt_gc_opts o = {
		.version = TT_GC_OPTS_VERSION,
		.release_foreign = cli_flag(cmd, a, "release-foreign"),
		.prune_bookmarks = cli_flag(cmd, a, "prune-bookmarks"),
		.keep_bookmarks = a->list[ki],
		.nkeep = a->nlist[ki],
		.force_prune = cli_flag(cmd, a, "force-prune"),
		.delete_stores = cli_flag(cmd, a, "delete-stores"),
		.stores = a->list[si],
		.nstores = a->nlist[si],
	};
	if (o.force_prune && !o.prune_bookmarks)
		return cli_error(NULL, "--force-prune requires --prune-bookmarks");
	for (size_t i = 0; i < o.nstores; i++) {
		const char *eq = strchr(o.stores[i], '=');
		if (!eq || eq == o.stores[i] || !eq[1]) {
			char *r = tt_repr_str(o.stores[i]);
			rc = cli_error(NULL, "--store expects KIND=LOCATOR, got %s", r ? r : o.stores[i]);
			free(r);
			return rc;
		}
	}
	if ((o.delete_stores || o.nstores) && !as_json)
		cli_note("reclaiming created stores is experimental: `delete-store` has no `repair`; fetch "
			 "every bookmark first, and read the plan");
	if ((rc = cli_open_repo(&repo)))
		return rc;
	if ((rc = cli_run_planned(cmd, a, repo, gc, &o, &out, NULL)) != CLI_PLAN_APPLIED)
		goto done;
	rc = EXIT_OK;
	json_t *failed = json_object_get(out, "failed");
	if (as_json) {
		json_t *shaped = report_json(out);
		rc = shaped ? cli_print_json(shaped) : EXIT_ERROR;
		json_decref(shaped);
	} else {
		const char *k;
		json_t *v;
		print_report(out);
		json_object_foreach(failed, k, v) fprintf(stderr, "FAILED    %s: %s\n", k, json_string_value(v));
	}
	if (rc == EXIT_OK && json_object_size(failed))
		rc = applied(out) ? EXIT_PARTIAL : EXIT_ERROR;
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "dry-run", 0, OPT_FLAG, NULL, "Show the plan (the default)." },
	{ "no-dry-run", 0, OPT_FLAG, NULL, "Apply the plan: release what nothing references." },
	{ "prune-bookmarks", 0, OPT_FLAG, NULL,
	  "Also delete `tether.ws.*` branches of bookmarks that are gone, legacy per-workspace branches, "
	  "and this workspace's unused ones." },
	{ "expired", 0, OPT_FLAG, NULL,
	  "Drop every bookmark whose expiry (`new --ttl`, `bookmarks NAME --ttl`) has passed, each exactly as "
	  "`tether drop` would: its commits, the bookmark, its branches and pins in every store.  One a live "
	  "checkout works on (this one too), or whose branches hold unpinned writes (without --force-prune), "
	  "is refused by name and the others still go (exit status 3).  Takes --force-prune, "
	  "--delete-stores and --release-foreign (as drop takes them); the trunk never expires." },
	{ "keep-bookmark", 0, OPT_LIST, "NAME",
	  "Bookmark whose branches --prune-bookmarks must keep although the VCS here does not have it; "
	  "repeatable." },
	{ "force-prune", 0, OPT_FLAG, NULL,
	  "With --prune-bookmarks (or --expired): delete stray branches even when they hold unpinned writes, a pin-less "
	  "recorded state, or are the storage itself.  Data on them is lost." },
	{ "delete-stores", 0, OPT_FLAG, NULL,
	  "Also reclaim stores this dataset created (`add --create`) that nothing references any more: their "
	  "pins and branches are released and, when only tether's own refs remained, the store is deleted.  "
	  "Irreversible; fetch every bookmark first (experimental)." },
	{ "store", 0, OPT_LIST, "KIND=LOCATOR",
	  "A created store to consider even when this clone's index does not have it (its creator's clone "
	  "is gone); the owner marker in the store must name this dataset.  Repeatable; implies "
	  "--delete-stores." },
	{ "release-foreign", 0, OPT_FLAG, NULL,
	  "Also release unreferenced pins this clone did not create, and those it created while the "
	  "dataset has a remote (kept as `keep-pin` by default) - once every remote's branches and tags "
	  "are fetched, and never one a commit that left this clone names." },
	{ "plan", 0, OPT_VALUE, "FILE", "Write the plan to FILE (implies --dry-run)." },
	{ "from-plan", 0, OPT_VALUE, "FILE", "Apply a plan saved with --plan." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_gc = {
	.name = "gc",
	.synopsis = "[--dry-run | --no-dry-run] [--expired] [--release-foreign] [--prune-bookmarks [--keep-bookmark NAME]... "
	"[--force-prune]] [--delete-stores] [--store KIND=LOCATOR]... [--plan FILE | --from-plan FILE] [--json]",
	.summary = "Release native pins that no manifest in VCS history references.",
	.description = "Only pins this clone created are released; any other unreferenced pin is kept and\n"
	"listed as `keep-pin` (--release-foreign releases those too).  References count from\n"
	"every manifest in visible history (every ref, remote-tracking ones too), the working\n"
	"trees of every live checkout, and operations still running or interrupted in any of\n"
	"them.  A pin's id depends only on the state it holds, so another clone that\n"
	"committed the same state holds the same pin, and gc cannot see that clone's unpushed\n"
	"commits: while the dataset has a remote, the pins this clone created are kept too\n"
	"(`keep-pin`, another clone may hold them).  --release-foreign releases both kinds,\n"
	"but only after asking every remote for its branches and tags: while a remote has\n"
	"commits this clone has not fetched, or cannot be reached, every unreferenced pin is\n"
	"kept.  Nor is a pin released, even then, that a commit a remote-tracking ref once\n"
	"held names (pushed or fetched, then rewritten away): clones that fetched it may\n"
	"still name it.  A repository others cloned from directly cannot see those clones:\n"
	"with no remote, a pin this clone created is kept when one of its commits named it\n"
	"and was rewritten away since (a clone may have it), and released only when no\n"
	"commit ever named it; add each clone as a remote (`git remote add`) so gc counts\n"
	"it, or pass --release-foreign in a repository nobody cloned.  Also forgets this\n"
	"workspace's refs for removed objects and deletes unreferenced listings.\n"
	"--prune-bookmarks evaluates stray `tether.ws.*` branches: one is deleted only if its\n"
	"head is pinned or equals the base head, otherwise kept (--force-prune deletes those\n"
	"too).  --delete-stores also reclaims stores this dataset created (`add --create`)\n"
	"that nothing references any more, once only tether's own refs remain in them\n"
	"(`delete-store`).  A dry run by default: pass --no-dry-run (or --from-plan) to\n"
	"release.  When some actions fail, what the rest did is printed with the failures;\n"
	"exit status 3 if anything was released.\n"
	"--expired drops the bookmarks whose expiry has passed instead, each as `tether drop`\n"
	"would; a bookmark drop refuses (a live checkout on it, this one included, or unpinned\n"
	"writes without --force-prune) is refused by name while the others still go.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 0,
	.run = run,
	.planned = CLI_PLANNED_DRY_DEFAULT,
};

void cli_print_gc_report(const json_t *report)
{
	print_report(report);
}
