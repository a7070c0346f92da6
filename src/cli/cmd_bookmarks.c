/* cli/cmd_bookmarks.c - `tether bookmarks`, and the expiry options of
 * `new` and `bookmarks` (cli_expiry_args). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/human.h"
#include "util/when.h"

int cli_expiry_args(const cli_cmd *cmd, const cli_args *a, bool *set, long long *expires, bool *clear)
{
	const char *ttl = cli_value(cmd, a, "ttl"), *at = cli_value(cmd, a, "expires");
	bool none = cli_opt_index(cmd, "no-expiry") >= 0 && cli_flag(cmd, a, "no-expiry");
	int64_t v = 0;
	*set = *clear = false;
	*expires = 0;
	if ((ttl != NULL) + (at != NULL) + none > 1)
		return cli_usage_error(cmd, "--ttl, --expires and --no-expiry each set the expiry; give one");
	if (ttl) {
		if (!tt_when_duration(ttl, &v))
			return cli_usage_error(cmd, "--ttl '%s' is not a duration: give %s", ttl, TT_WHEN_DURATION_FORMS);
		*expires = (long long)time(NULL) + v;
		*set = true;
	} else if (at) {
		if (!tt_when_iso(at, &v))
			return cli_usage_error(cmd, "--expires '%s' is not a time: give %s", at, TT_WHEN_ISO_FORMS);
		*expires = v;
		*set = true;
	} else if (none) {
		*set = *clear = true;
	}
	return EXIT_OK;
}

static void when_text(char *out, size_t n, const char *iso, long long now)
{
	int64_t t;
	if (!iso || !tt_when_iso(iso, &t)) {
		snprintf(out, n, "never expires");
		return;
	}
	char rel[64];
	tt_when_relative(rel, sizeof rel, t, now);
	snprintf(out, n, "%s %s", t <= now ? "expired" : "expires", rel);
}

static void print_list(const json_t *out)
{
	int64_t now = 0;
	tt_when_iso(json_string_value(json_object_get(out, "now")), &now);
	size_t i, width = 0;
	json_t *b;
	json_array_foreach(json_object_get(out, "bookmarks"), i, b) {
		size_t l = strlen(json_string_value(json_object_get(b, "name")));
		width = l > width ? l : width;
	}
	json_array_foreach(json_object_get(out, "bookmarks"), i, b) {
		const char *name = json_string_value(json_object_get(b, "name"));
		bool trunk = json_is_true(json_object_get(b, "trunk"));
		bool here = false;
		size_t j;
		json_t *c;
		json_array_foreach(json_object_get(b, "checkouts"), j, c)
			here |= json_is_true(json_object_get(c, "here"));
		char when[96];
		const char *exp = json_string_value(json_object_get(b, "expires"));
		if (trunk)
			snprintf(when, sizeof when, "trunk, never expires");
		else
			when_text(when, sizeof when, exp, now);
		bool expired = json_is_true(json_object_get(b, "expired"));
		printf("%c %-*s  %.12s  %s%s%s", here ? '*' : ' ', (int)width, name,
		       json_string_value(json_object_get(b, "head")),
		       expired ? cli_paint(CLI_YELLOW) : "", when, expired ? cli_paint(CLI_RESET) : "");
		if (exp)
			printf(" (%s)", exp);
		printf("\n");
		const char *created = json_string_value(json_object_get(b, "created"));
		if (created)
			printf("    created %s\n", created);
		const char *key;
		json_t *refs;
		json_object_foreach(json_object_get(b, "working_refs"), key, refs) {
			printf("    %s:", key);
			json_array_foreach(refs, j, c)
				printf("%s%s", j ? ", " : " ", json_string_value(c));
			printf("\n");
		}
		json_array_foreach(json_object_get(b, "checkouts"), j, c)
			printf("    checkout %s%s  %s\n", json_string_value(json_object_get(c, "workspace_id")),
			       json_is_true(json_object_get(c, "here")) ? " (here)" : "",
			       json_string_value(json_object_get(c, "root")));
	}
	const char *key;
	json_t *msg;
	json_object_foreach(json_object_get(out, "errors"), key, msg)
		cli_warning("[%s] its working branches could not be listed: %s", key, json_string_value(msg));
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	bool json = cli_flag(cmd, a, "json"), set, clear;
	long long expires;
	int rc = cli_expiry_args(cmd, a, &set, &expires, &clear);
	if (rc != EXIT_OK)
		return rc;
	if (set && !a->npos)
		return cli_usage_error(cmd, "--ttl, --expires and --no-expiry change one bookmark's expiry: name it "
				       "(`tether bookmarks NAME --ttl 7d`)");
	if (a->npos && !set)
		return cli_usage_error(cmd, "NAME is given to change its expiry: add --ttl DURATION, --expires TIME or "
				       "--no-expiry");
	if ((rc = cli_open_repo(&repo)))
		return rc;
	if (set) {
		if (tt_repo_set_expiry(repo, a->pos[0], expires, clear, &out, &err) < 0) {
			rc = cli_fail(&err);
			goto done;
		}
		if (json) {
			rc = cli_print_json(out);
			goto done;
		}
		const char *exp = json_string_value(json_object_get(out, "expires"));
		const char *commit = json_string_value(json_object_get(out, "commit"));
		char when[96];
		when_text(when, sizeof when, exp, (long long)time(NULL));
		printf("bookmark %s %s%s%s%s", a->pos[0], when, exp ? " (" : "", exp ? exp : "", exp ? ")" : "");
		if (commit)
			printf("; committed %.12s\n", commit);
		else
			printf("; nothing to commit\n");
		goto done;
	}
	if (tt_repo_list_bookmarks(repo, !cli_flag(cmd, a, "no-stores"), &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	if (json)
		rc = cli_print_json(out);
	else
		print_list(out);
done:
	tt_error_clear(&err);
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "ttl", 0, OPT_VALUE, "DURATION",
	  "Set NAME's expiry this long from now: 45s, 30m, 12h, 7d, 2w, or several (1d12h)." },
	{ "expires", 0, OPT_VALUE, "TIME",
	  "Set NAME's expiry to this ISO 8601 time (2026-12-11T07:30:00Z, with Z or an offset; a date alone is "
	  "midnight UTC)." },
	{ "no-expiry", 0, OPT_FLAG, NULL, "Clear NAME's expiry: it stays until dropped." },
	{ "no-stores", 0, OPT_FLAG, NULL,
	  "List only the working branches the live checkouts hold, without asking the stores." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_bookmarks = {
	.name = "bookmarks",
	.synopsis = "[NAME (--ttl DURATION | --expires TIME | --no-expiry)] [--no-stores] [--json]",
	.summary = "List bookmarks -- trunk, head, working branches, checkouts, expiry -- or change one's expiry.",
	.description = "Without NAME: every bookmark of the dataset, the trunk first, with its head commit, its\n"
	"working branches per object (asked of each store; --no-stores: only those the live\n"
	"checkouts hold), the live checkouts on it (* marks this one), when it was created and\n"
	"when it expires (\"expires in 3d\", \"expired 2h ago\").  With NAME and --ttl, --expires or\n"
	"--no-expiry: change that bookmark's expiry, a commit on the bookmark of\n"
	".tether/bookmarks/NAME.toml, so every clone that has the bookmark has its expiry (run it\n"
	"in a checkout on NAME).  `tether gc --expired` drops the bookmarks whose expiry has\n"
	"passed.  The trunk never expires.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 1,
	.run = run,
};
