/*
 * cli/human.c - text for people: sizes in KiB/MiB/GiB, a state by its
 * kind's short form (a git sha, an icechunk snapshot, a version, a file's
 * size and digest) rather than a Python-style repr, and colour only on a
 * terminal (never with NO_COLOR set, or under TERM=dumb).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/human.h"

void cli_size_text(char *out, size_t n, double bytes)
{
	static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
	if (bytes < 1024) {
		snprintf(out, n, "%.0f B", bytes);
		return;
	}
	int u = -1;
	while (bytes >= 1024 && u < 4) {
		bytes /= 1024;
		u++;
	}
	snprintf(out, n, bytes < 10 ? "%.1f %s" : "%.0f %s", bytes, units[u]);
}

static void put_cut(tt_buf *out, const char *s, size_t max)
{
	size_t len = strlen(s);
	tt_buf_printf(out, "%.*s", (int)(len > max ? max : len), s);
}

int cli_state_text(tt_buf *out, const json_t *state)
{
	const json_t *v;
	char size[32];
	if (!json_is_object(state) || !json_object_size(state))
		return tt_buf_puts(out, json_is_null(state) || !state ? "(none)" : "?");
	if (json_is_string(v = json_object_get(state, "sha"))) { /* git */
		put_cut(out, json_string_value(v), 12);
		if (json_is_true(json_object_get(state, "dirty")))
			tt_buf_puts(out, " (dirty)");
		return out->failed;
	}
	if (json_is_string(v = json_object_get(state, "snapshot_id"))) /* icechunk */
		return tt_buf_printf(out, "snapshot %s", json_string_value(v));
	if (json_is_integer(v = json_object_get(state, "version"))) { /* lance, delta */
		const json_t *br = json_object_get(state, "branch");
		tt_buf_printf(out, "version %" JSON_INTEGER_FORMAT, json_integer_value(v));
		if (json_is_string(br) && strcmp(json_string_value(br), "main") != 0)
			tt_buf_printf(out, " on %s", json_string_value(br));
		return out->failed;
	}
	const char *type = json_string_value(json_object_get(state, "type"));
	if (type && (strcmp(type, "file") == 0 || strcmp(type, "dir") == 0)) { /* file */
		const json_t *sz = json_object_get(state, "size"), *count = json_object_get(state, "count");
		const json_t *digest = json_object_get(state, "digest");
		if (!json_is_string(digest))
			digest = json_object_get(state, "sha256");
		tt_buf_puts(out, type);
		if (json_is_integer(count))
			tt_buf_printf(out, ", %" JSON_INTEGER_FORMAT " file%s", json_integer_value(count),
				      json_integer_value(count) == 1 ? "" : "s");
		if (json_is_integer(sz)) {
			cli_size_text(size, sizeof size, (double)json_integer_value(sz));
			tt_buf_printf(out, ", %s", size);
		}
		if (json_is_string(digest)) {
			tt_buf_puts(out, ", ");
			put_cut(out, json_string_value(digest), 12);
		}
		if (json_is_string(v = json_object_get(state, "version_id"))) {
			tt_buf_puts(out, ", version ");
			put_cut(out, json_string_value(v), 12);
		}
		return out->failed;
	}
	/* Any other kind: its fields, short, without quotes or braces. */
	const char *k;
	json_t *x;
	bool first = true;
	json_object_foreach((json_t *)state, k, x) {
		tt_buf_printf(out, "%s%s=", first ? "" : " ", k);
		first = false;
		if (json_is_string(x)) {
			put_cut(out, json_string_value(x), 16);
		} else if (json_is_integer(x) && strcmp(k, "size") == 0) {
			cli_size_text(size, sizeof size, (double)json_integer_value(x));
			tt_buf_puts(out, size);
		} else if (json_is_integer(x)) {
			tt_buf_printf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(x));
		} else if (json_is_boolean(x)) {
			tt_buf_puts(out, json_is_true(x) ? "yes" : "no");
		} else if (json_is_null(x)) {
			tt_buf_puts(out, "-");
		} else {
			tt_buf_puts(out, "...");
		}
	}
	return out->failed;
}

static int colour = -1;

bool cli_colour(void)
{
	if (colour < 0) {
		const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");
		colour = isatty(STDOUT_FILENO) && !(nc && *nc) && !(term && strcmp(term, "dumb") == 0);
	}
	return colour != 0;
}

const char *cli_paint(const char *sgr)
{
	return cli_colour() ? sgr : "";
}

/* s as a Python string literal ('...'), or a shell word ('...'). */
static void py_str(tt_buf *b, const char *s, bool shell)
{
	tt_buf_putc(b, '\'');
	for (; s && *s; s++) {
		if (*s == '\'')
			tt_buf_puts(b, shell ? "'\\''" : "\\'");
		else if (*s == '\\' && !shell)
			tt_buf_puts(b, "\\\\");
		else
			tt_buf_putc(b, *s);
	}
	tt_buf_putc(b, '\'');
}

void cli_handle_snippet(const json_t *h)
{
	/* the kind ("type" is tether-vcs's handle class, e.g. "GitHandle") */
	const char *type = json_string_value(json_object_get(h, "kind"));
	const char *uri = json_string_value(json_object_get(h, "uri"));
	const char *branch = json_string_value(json_object_get(h, "branch"));
	const char *tag = json_string_value(json_object_get(h, "tag"));
	const json_t *version = json_object_get(h, "version");
	bool ro = json_is_true(json_object_get(h, "read_only"));
	tt_buf b = TT_BUF_INIT;
	if (!type)
		return;
	const char *worktree = json_string_value(json_object_get(h, "worktree"));
	if (strcmp(type, "git") == 0 && !ro && branch && worktree) {
		/* the branch is checked out there already */
		tt_buf_puts(&b, "cd ");
		py_str(&b, worktree, true);
	} else if (strcmp(type, "git") == 0 && !ro && branch && json_is_string(json_object_get(h, "path"))) {
		tt_buf_puts(&b, "git -C ");
		py_str(&b, json_string_value(json_object_get(h, "path")), true);
		tt_buf_puts(&b, " checkout ");
		py_str(&b, branch, true);
	} else if (strcmp(type, "git") == 0 && json_is_string(json_object_get(h, "path"))) {
		tt_buf_puts(&b, "git -C ");
		py_str(&b, json_string_value(json_object_get(h, "path")), true);
		tt_buf_printf(&b, " checkout %s%s", ro ? "--detach " : "",
			      json_string_value(json_object_get(h, "sha")));
	} else if (strcmp(type, "icechunk") == 0 && uri) {
		const char *sid = json_string_value(json_object_get(h, "snapshot_id"));
		tt_buf_puts(&b, "icechunk.Repository.open(icechunk.local_filesystem_storage(");
		py_str(&b, uri, false);
		tt_buf_puts(&b, "))");
		if (!ro && branch) {
			tt_buf_puts(&b, ".writable_session(");
			py_str(&b, branch, false);
		} else if (tag) {
			tt_buf_puts(&b, ".readonly_session(tag=");
			py_str(&b, tag, false);
		} else if (sid) {
			tt_buf_puts(&b, ".readonly_session(snapshot_id=");
			py_str(&b, sid, false);
		} else {
			tt_buf_puts(&b, ".readonly_session(branch=");
			py_str(&b, branch ? branch : "main", false);
		}
		tt_buf_putc(&b, ')');
	} else if ((strcmp(type, "lance") == 0 || strcmp(type, "delta") == 0) && uri) {
		tt_buf_puts(&b, strcmp(type, "lance") == 0 ? "lance.dataset(" : "DeltaTable(");
		py_str(&b, uri, false);
		if (tag && strcmp(type, "lance") == 0) {
			tt_buf_puts(&b, ", version=");
			py_str(&b, tag, false);
		} else if (json_is_integer(version)) {
			tt_buf_printf(&b, ", version=%" JSON_INTEGER_FORMAT, json_integer_value(version));
		}
		tt_buf_putc(&b, ')');
		if (branch && strcmp(type, "lance") == 0 && !ro)
			tt_buf_printf(&b, "  # writes go to branch %s", branch);
	}
	if (b.len)
		fprintf(stderr, "  open it: %s\n", b.ptr);
	tt_buf_release(&b);
}
