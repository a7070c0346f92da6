/* cli/cmd_status.c - `tether status` and `tether snapshot`. */
#define _XOPEN_SOURCE 700
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/human.h"
#include "cli/markdown.h"
#include "util/buf.h"

/* "3m ago" from an ISO 8601 UTC timestamp ("never" without one). */
static void age(const char *iso, char *out, size_t n)
{
	struct tm tm = { 0 };
	if (!iso) {
		snprintf(out, n, "never");
		return;
	}
	if (!strptime(iso, "%Y-%m-%dT%H:%M:%S", &tm)) {
		snprintf(out, n, "%s", iso);
		return;
	}
	long s = (long)difftime(time(NULL), timegm(&tm));
	if (s < 0)
		s = 0;
	if (s < 60)
		snprintf(out, n, "%lds ago", s);
	else if (s < 3600)
		snprintf(out, n, "%ldm ago", s / 60);
	else if (s < 86400)
		snprintf(out, n, "%ldh ago", s / 3600);
	else
		snprintf(out, n, "%ldd ago", s / 86400);
}

static int run_status(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int markdown;
	int rc = cli_output_format(cmd, a, &markdown);
	if (rc)
		return rc;
	if ((rc = cli_open_repo(&repo)))
		return rc;
	if (cli_flag(cmd, a, "snapshot") && cli_flag(cmd, a, "no-snapshot")) {
		rc = cli_usage_error(cmd, "--snapshot and --no-snapshot contradict each other");
		goto done;
	}
	int want = cli_flag(cmd, a, "snapshot") ? 1 : cli_flag(cmd, a, "no-snapshot") ? 0 : -1;
	cli_interrupt_attach(repo); /* tether.toml may have it fingerprint or verify */
	if (tt_repo_status(repo, a->pos, a->npos, want, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	json_t *objects = json_object_get(out, "objects");
	size_t i;
	json_t *o;
	int failed = 0;
	json_array_foreach(objects, i, o)
		failed |= json_is_string(json_object_get(o, "error"));
	if (cli_flag(cmd, a, "json")) {
		/* tether-vcs's vcs_drift entries are {op, commit, referenced}; the
		 * message is what the text output prints. */
		json_t *d;
		json_array_foreach(json_object_get(out, "vcs_drift"), i, d)
			json_object_del(d, "message");
		cli_print_json(out);
		rc = failed ? EXIT_ERROR : EXIT_OK;
		goto done;
	}
	if (markdown) {
		tt_buf md = TT_BUF_INIT;
		if (cli_markdown_status(&md, out, tt_repo_dataset_id(repo), CLI_MARKDOWN_CAP) < 0) {
			rc = cli_error(NULL, "out of memory");
		} else {
			fputs(md.ptr, stdout);
			rc = failed ? EXIT_ERROR : EXIT_OK;
		}
		tt_buf_release(&md);
		goto done;
	}
	const char *hash = json_string_value(json_object_get(out, "manifest_hash"));
	const char *bookmark = json_string_value(json_object_get(out, "bookmark"));
	tt_buf line = TT_BUF_INIT;
	/* The dataset's id names it; the manifests' hash names this state of it. */
	tt_buf_printf(&line, "dataset %s (manifests %.12s)", tt_repo_dataset_id(repo), hash);
	if (json_is_true(json_object_get(out, "stale"))) {
		tt_buf_puts(&line, " (STALE: ");
		json_t *k;
		json_array_foreach(json_object_get(out, "stale_keys"), i, k)
			tt_buf_printf(&line, "%s%s", i ? ", " : "", json_string_value(k));
		tt_buf_puts(&line, ")");
	}
	if (!bookmark)
		tt_buf_puts(&line, "; on no bookmark: read-only (`tether new -b NAME` to write)");
	else
		tt_buf_printf(&line, "; on %sbookmark %s",
			      json_is_true(json_object_get(out, "trunk")) ? "trunk " : "", bookmark);
	puts(line.ptr);
	tt_buf_release(&line);
	json_t *w;
	json_array_foreach(json_object_get(out, "bookmark_drift"), i, w)
		fprintf(stderr, "  warning: %s\n", json_string_value(w));
	if (!json_is_true(json_object_get(out, "fresh"))) {
		char when[64];
		age(json_string_value(json_object_get(out, "snapshot_at")), when, sizeof when);
		printf("  states as fingerprinted %s; --snapshot to refresh\n", when);
	}
	json_array_foreach(json_object_get(out, "vcs_drift"), i, w)
		fprintf(stderr, "  warning: %s\n", json_string_value(json_object_get(w, "message")));
	json_array_foreach(objects, i, o) {
		json_t *verify = json_object_get(o, "verify");
		const char *label = json_string_value(json_object_get(o, "state"));
		const char *paint = strcmp(label, "clean") == 0 ? "" : strcmp(label, "error") == 0 ? CLI_RED
				  : strcmp(label, "new") == 0 ? CLI_GREEN : CLI_YELLOW;
		printf("  %s%9s%s  %s  [%s/%s]%s%s%s%s\n", cli_paint(paint), label,
		       *paint ? cli_paint(CLI_RESET) : "",
		       json_string_value(json_object_get(o, "key")),
		       json_string_value(json_object_get(o, "kind")),
		       json_string_value(json_object_get(o, "tier")),
		       strcmp(json_string_value(json_object_get(o, "origin")), "created") == 0 ? " (created)" : "",
		       json_is_true(json_object_get(o, "recoverable")) ? "" : " unrecoverable",
		       json_is_string(verify) ? " verify=" : "",
		       json_is_string(verify) ? json_string_value(verify) : "");
	}
	json_array_foreach(objects, i, o) {
		if (json_is_string(json_object_get(o, "error"))) {
			/* "[key] ..." once, whether or not the message names it already */
			const char *key = json_string_value(json_object_get(o, "key"));
			const char *msg = json_string_value(json_object_get(o, "error"));
			size_t kl = strlen(key);
			bool named = msg[0] == '[' && strncmp(msg + 1, key, kl) == 0 && msg[kl + 1] == ']';
			fprintf(stderr, "error: %s%s%s%s\n", named ? "" : "[", named ? "" : key,
				named ? "" : "] ", msg);
		}
	}
	rc = failed ? EXIT_ERROR : EXIT_OK;
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static int run_snapshot(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	cli_interrupt_attach(repo);
	if (tt_repo_snapshot(repo, a->pos, a->npos, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	if (cli_flag(cmd, a, "json")) {
		rc = cli_print_json(out);
		goto done;
	}
	const char *key;
	json_t *state;
	json_object_foreach(out, key, state) {
		tt_buf b = TT_BUF_INIT;
		cli_state_text(&b, state);
		printf("  %s: %s\n", key, b.ptr);
		tt_buf_release(&b);
	}
done:
	json_decref(out);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt status_opts[] = {
	{ "snapshot", 0, OPT_FLAG, NULL, "Fingerprint every object now." },
	{ "no-snapshot", 0, OPT_FLAG, NULL,
	  "Show the last snapshot and its age (default unless tether.toml [snapshot] auto)." },
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ "format", 0, OPT_VALUE, "text|markdown",
	  "text (the default), or markdown: a summary to post as a pull request comment." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_status = {
	.name = "status",
	.synopsis = "[KEY...] [--snapshot | --no-snapshot] [--json | --format text|markdown]",
	.summary = "Classify every object against its committed manifest.",
	.description = "Local by default: the manifests, working refs, staleness and the last snapshot of\n"
	"each object's state, with its age; --snapshot fingerprints every object first, in\n"
	"parallel.  A workspace with no snapshot yet takes one.  Labels: new (never\n"
	"committed), modified, behind (the upstream moved past the pin; `pull` takes it),\n"
	"clean, error (its store could not be read; exit 1).  KEY... (or a prefix ending in\n"
	"'/') limits all of it to those objects.  --format markdown prints the objects\n"
	"that are not clean as a GitHub-flavoured table for a pull request comment.",
	.opts = status_opts,
	.min_pos = 0,
	.max_pos = 4096,
	.run = run_status,
};

static const cli_opt snapshot_opts[] = {
	{ "json", 0, OPT_FLAG, NULL, "Machine-readable output." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_snapshot = {
	.name = "snapshot",
	.synopsis = "[KEY...] [--json]",
	.summary = "Fingerprint every object (or KEY...) and cache the result in the workspace.",
	.description = "The cached states of objects not named stay as they were.",
	.opts = snapshot_opts,
	.min_pos = 0,
	.max_pos = 4096,
	.run = run_snapshot,
};
