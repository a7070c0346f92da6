/*
 * cli/markdown.c - `diff --format markdown` and `status --format markdown`:
 * a GitHub-flavoured summary a CI job posts as a pull request's comment.
 *
 * One table row per changed object (kind, the old -> new state in the
 * kind's short form, the content diff's counts), then each object's
 * entries folded under <details>.  The whole text stays within a PR
 * comment's limit (65,536 characters: counted here as bytes, which are
 * never fewer): the table first, then as many objects' details as fit,
 * and a last line saying what was cut.
 *
 * Every name that comes from the data (keys, paths, states, messages) is
 * escaped, so a file called `</details>` or `a|b` cannot change the
 * comment's layout.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/human.h"
#include "cli/markdown.h"

/* Room kept for the line that says what was cut. */
#define CUT_NOTE_ROOM 400

/* Text from the data, safe in a table cell and in a <summary>. */
static void put_escaped(tt_buf *out, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': tt_buf_puts(out, "&amp;"); break;
		case '<': tt_buf_puts(out, "&lt;"); break;
		case '>': tt_buf_puts(out, "&gt;"); break;
		case '|': tt_buf_puts(out, "&#124;"); break;
		case '\n': case '\r': case '\t': tt_buf_putc(out, ' '); break;
		case '\\': case '`': case '*': case '_': case '[': case ']': case '#': case '~':
			tt_buf_putc(out, '\\');
			tt_buf_putc(out, *s);
			break;
		default:
			tt_buf_putc(out, *s);
		}
	}
}

static const char *str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* A row's first cells: "| <code>KEY</code> | F1 | F2 | ", fields of o. */
static void put_cells(tt_buf *out, const json_t *o, const char *const *fields)
{
	tt_buf_puts(out, "| <code>");
	put_escaped(out, str(o, "key"));
	tt_buf_puts(out, "</code> | ");
	for (; *fields; fields++) {
		put_escaped(out, str(o, *fields));
		tt_buf_puts(out, " | ");
	}
}

static void put_state(tt_buf *out, const json_t *state)
{
	tt_buf t = TT_BUF_INIT;
	cli_state_text(&t, state);
	put_escaped(out, t.ptr);
	tt_buf_release(&t);
}

/* The content column: the native diff's counts, or why no state moved. */
static void put_content(tt_buf *out, const json_t *e)
{
	const json_t *detail = json_object_get(e, "detail"), *why = json_object_get(e, "why");
	if (json_is_object(detail)) {
		put_escaped(out, str(detail, "summary"));
		return;
	}
	if (json_is_string(json_object_get(e, "detail_error"))) {
		tt_buf_puts(out, "diff failed: ");
		put_escaped(out, str(e, "detail_error"));
		return;
	}
	size_t k;
	json_t *w;
	bool state = false;
	json_array_foreach(why, k, w)
		state |= strcmp(json_string_value(w), "state") == 0;
	if (json_array_size(why) && !state) {
		json_array_foreach(why, k, w) {
			tt_buf_puts(out, k ? " and " : "");
			put_escaped(out, json_string_value(w));
		}
		tt_buf_puts(out, " changed; same state");
	}
}

/* One object's entries, folded. */
static void put_details(tt_buf *out, const json_t *e, long long limit)
{
	const json_t *detail = json_object_get(e, "detail");
	const json_t *items = json_object_get(detail, "entries");
	size_t n = json_array_size(items), shown = n;
	if (limit >= 0 && (size_t)limit < shown)
		shown = (size_t)limit;
	tt_buf_puts(out, "<details><summary><code>");
	put_escaped(out, str(e, "key"));
	tt_buf_puts(out, "</code>: ");
	put_escaped(out, str(detail, "summary"));
	tt_buf_puts(out, "</summary>\n\n| change | path | detail |\n|---|---|---|\n");
	for (size_t k = 0; k < shown; k++) {
		const json_t *it = json_array_get(items, k);
		tt_buf_puts(out, "| ");
		put_escaped(out, str(it, "change"));
		tt_buf_puts(out, " | ");
		put_escaped(out, str(it, "path"));
		tt_buf_puts(out, " | ");
		put_escaped(out, str(it, "detail"));
		tt_buf_puts(out, " |\n");
	}
	if (shown < n)
		tt_buf_printf(out, "\n%zu more not shown (`--limit`).\n", n - shown);
	if (json_is_true(json_object_get(detail, "truncated")))
		tt_buf_puts(out, "\nThe backend listed the first entries only; the counts are exact.\n");
	const char *note = str(detail, "note");
	if (note && *note) {
		tt_buf_puts(out, "\n");
		put_escaped(out, note);
		tt_buf_puts(out, "\n");
	}
	tt_buf_puts(out, "\n</details>\n\n");
}

int cli_markdown_diff(tt_buf *out, const json_t *entries, const char *from, const char *to, long long limit,
		      size_t cap)
{
	size_t i, changed = 0, counts[3] = { 0 };
	const json_t *e;
	json_array_foreach(entries, i, e) {
		const char *c = str(e, "change");
		if (strcmp(c, "unchanged") == 0)
			continue;
		changed++;
		counts[strcmp(c, "added") == 0 ? 0 : strcmp(c, "removed") == 0 ? 1 : 2]++;
	}
	tt_buf_puts(out, "### tether diff: ");
	put_escaped(out, from);
	tt_buf_puts(out, " → ");
	put_escaped(out, to);
	tt_buf_puts(out, "\n\n");
	if (!changed) {
		tt_buf_printf(out, "No object changed (%zu unchanged).\n", json_array_size(entries));
		return out->failed ? -1 : 0;
	}
	tt_buf_printf(out, "%zu object%s changed (%zu added, %zu removed, %zu changed); %zu unchanged.\n\n", changed,
		      changed == 1 ? "" : "s", counts[0], counts[1], counts[2], json_array_size(entries) - changed);
	tt_buf_puts(out, "| object | kind | change | state | content |\n|---|---|---|---|---|\n");
	size_t rows = 0, row_cut = 0;
	json_array_foreach(entries, i, e) {
		if (strcmp(str(e, "change"), "unchanged") == 0)
			continue;
		size_t mark = out->len;
		put_cells(out, e, (const char *const[]){ "kind", "change", NULL });
		const json_t *sa = json_object_get(e, "state_a"), *sb = json_object_get(e, "state_b");
		put_state(out, sa);
		if (!json_is_object(sa) || !json_is_object(sb) || !json_equal(sa, sb)) {
			tt_buf_puts(out, " → ");
			put_state(out, sb);
		}
		tt_buf_puts(out, " | ");
		put_content(out, e);
		tt_buf_puts(out, " |\n");
		if (out->len + CUT_NOTE_ROOM > cap) {
			tt_buf_truncate(out, mark);
			row_cut = changed - rows;
			break;
		}
		rows++;
	}
	tt_buf_puts(out, "\n");
	size_t folded = 0, with_details = 0, details_cut = 0;
	json_array_foreach(entries, i, e)
		with_details += strcmp(str(e, "change"), "unchanged") != 0 && json_is_object(json_object_get(e, "detail"));
	json_array_foreach(entries, i, e) {
		if (row_cut || strcmp(str(e, "change"), "unchanged") == 0 || !json_is_object(json_object_get(e, "detail")))
			continue;
		size_t mark = out->len;
		put_details(out, e, limit);
		if (out->len + CUT_NOTE_ROOM > cap) {
			tt_buf_truncate(out, mark);
			details_cut = with_details - folded;
			break;
		}
		folded++;
	}
	if (row_cut)
		tt_buf_printf(out, "_Cut to fit a comment (%zu characters): %zu more changed object%s and every "
				   "object's details are not shown; `tether diff --content` lists them._\n",
			      cap, row_cut, row_cut == 1 ? "" : "s");
	else if (details_cut)
		tt_buf_printf(out, "_Cut to fit a comment (%zu characters): the details of %zu more object%s are "
				   "not shown; `tether diff --content` lists them._\n",
			      cap, details_cut, details_cut == 1 ? "" : "s");
	return out->failed ? -1 : 0;
}

int cli_markdown_status(tt_buf *out, const json_t *status, const char *dataset_id, size_t cap)
{
	const json_t *objects = json_object_get(status, "objects"), *o, *w;
	const char *bookmark = str(status, "bookmark");
	size_t i, clean = 0, listed = 0, warned = 0;
	tt_buf_puts(out, "### tether status: dataset ");
	put_escaped(out, dataset_id);
	if (bookmark) {
		tt_buf_printf(out, " on %sbookmark <code>", json_is_true(json_object_get(status, "trunk")) ? "trunk " : "");
		put_escaped(out, bookmark);
		tt_buf_puts(out, "</code>");
	} else {
		tt_buf_puts(out, " on no bookmark (read-only)");
	}
	tt_buf_printf(out, "\n\nManifests `%.12s`", str(status, "manifest_hash") ? str(status, "manifest_hash") : "");
	if (json_is_true(json_object_get(status, "stale")))
		tt_buf_puts(out, " (**stale**: `tether snapshot` rewrites them)");
	if (!json_is_true(json_object_get(status, "fresh"))) {
		tt_buf_puts(out, "; states as last fingerprinted");
		if (str(status, "snapshot_at")) {
			tt_buf_puts(out, " at ");
			put_escaped(out, str(status, "snapshot_at"));
		}
		tt_buf_puts(out, " (`tether status --snapshot` refreshes them)");
	}
	tt_buf_puts(out, ".\n\n");
	json_array_foreach(json_object_get(status, "bookmark_drift"), i, w) {
		tt_buf_puts(out, "> warning: ");
		put_escaped(out, json_string_value(w));
		tt_buf_puts(out, "\n");
		warned++;
	}
	json_array_foreach(json_object_get(status, "vcs_drift"), i, w) {
		tt_buf_puts(out, "> warning: ");
		put_escaped(out, str(w, "message"));
		tt_buf_puts(out, "\n");
		warned++;
	}
	if (warned)
		tt_buf_puts(out, "\n");
	json_array_foreach(objects, i, o)
		clean += strcmp(str(o, "state"), "clean") == 0;
	if (clean == json_array_size(objects)) {
		tt_buf_printf(out, "Every object is clean (%zu).\n", clean);
		return out->failed ? -1 : 0;
	}
	tt_buf_printf(out, "%zu object%s not clean; %zu clean.\n\n", json_array_size(objects) - clean, json_array_size(objects) - clean == 1 ? "" : "s", clean);
	tt_buf_puts(out, "| object | kind | tier | state | note |\n|---|---|---|---|---|\n");
	size_t cut = 0;
	json_array_foreach(objects, i, o) {
		if (strcmp(str(o, "state"), "clean") == 0)
			continue;
		size_t mark = out->len;
		put_cells(out, o, (const char *const[]){ "kind", "tier", "state", NULL });
		const char *sep = "";
		if (str(o, "origin") && strcmp(str(o, "origin"), "created") == 0) {
			tt_buf_puts(out, "created here");
			sep = "; ";
		}
		if (!json_is_true(json_object_get(o, "recoverable"))) {
			tt_buf_printf(out, "%sunrecoverable", sep);
			sep = "; ";
		}
		if (str(o, "verify")) {
			tt_buf_printf(out, "%sverify ", sep);
			put_escaped(out, str(o, "verify"));
			sep = "; ";
		}
		if (str(o, "error")) {
			tt_buf_printf(out, "%serror: ", sep);
			put_escaped(out, str(o, "error"));
		}
		tt_buf_puts(out, " |\n");
		if (out->len + CUT_NOTE_ROOM > cap) {
			tt_buf_truncate(out, mark);
			cut = json_array_size(objects) - clean - listed;
			break;
		}
		listed++;
	}
	if (cut)
		tt_buf_printf(out, "\n_Cut to fit a comment (%zu characters): %zu more object%s not shown; "
				   "`tether status` lists them._\n",
			      cap, cut, cut == 1 ? "" : "s");
	return out->failed ? -1 : 0;
}
