/*
 * cli/help.c - `--help` pages from the command tables: wrapped to the
 * terminal's width (COLUMNS, else the terminal's own, else 80), option
 * descriptions in a column that a long option name cannot push out (it
 * gets a line of its own), options of kinds this build lacks left out, and
 * examples at the end.  The man pages (man.c) come from the same tables.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "cli/help.h"

/* Options that only some kinds read: shown only when one of them is built. */
static const struct {
	const char *cmd, *opt, *kinds;
} kind_opts[] = {
	{ "add", "project-id", "neon" },
	{ "add", "database", "neon dolt" },
	{ "add", "role", "neon" },
	{ "add", "host", "dolt" },
	{ "add", "port", "dolt" },
	{ "add", "table", "ducklake iceberg" },
};

static const struct {
	const char *cmd, *text;
} examples[] = {
	{ "init", "tether init\ntether init --dataset-id 0a1b2c3d" },
	{ "backends", "tether backends\ntether backends --json" },
	{ "add", "tether add images ../stores/images --kind file\n"
		 "tether add ../stores/code --kind git\n"
		 "tether add tbl ../stores/t.lance --kind lance --at 3\n"
		 "tether add scratch ../stores/new.icechunk --kind icechunk --create" },
	{ "set", "tether set images --pin record" },
	{ "remove", "tether remove images" },
	{ "status", "tether status\ntether status --snapshot\ntether status tables/ --json" },
	{ "snapshot", "tether snapshot\ntether snapshot code --json" },
	{ "commit", "tether commit -m 'nightly load'\ntether commit -m wip --dry-run\n"
		    "tether commit --plan p.json -m x && tether commit --from-plan p.json -m x" },
	{ "verify", "tether verify\ntether verify --deep --all-history" },
	{ "diff", "tether diff\ntether diff HEAD~1 --content\ntether diff v1 v2 --key tables/ --json" },
	{ "log", "tether log code -n5\ntether log ../stores/t.lance --kind lance" },
	{ "new", "tether new -b experiment\ntether new experiment\ntether new -b pr-42 --ttl 7d --eager" },
	{ "open", "tether open tables\ntether open code --read-only\ntether open sales -r HEAD~1 --for polars" },
	{ "pull", "tether pull\ntether pull --key code -m 'take upstream'" },
	{ "restore", "tether restore tables --from HEAD~2\ntether restore code --from v1 --discard" },
	{ "promote", "tether promote --dry-run\ntether promote\ntether promote tables -m 'land tables'" },
	{ "gc", "tether gc --dry-run\ntether gc --prune-bookmarks\ntether gc --expired --no-dry-run" },
	{ "bookmarks", "tether bookmarks\ntether bookmarks pr-42 --ttl 7d\ntether bookmarks pr-42 --no-expiry\n"
		       "tether bookmarks --json" },
	{ "ops", "tether ops -n5" },
	{ "undo", "tether undo\ntether undo OP_ID" },
	{ "repair", "tether repair --dry-run\ntether repair" },
	{ "query", "tether query -r HEAD~1 'SELECT count(*) FROM sales'\n"
		   "tether query 'SELECT * FROM \"raw/files\" JOIN lake.t USING (id)' --csv\n"
		   "tether query -f report.sql --json\n"
		   "tether query --schema\n"
		   "tether query -r v1.0 --for spark > read_v1.py" },
};

int cli_term_width(void)
{
	const char *c = getenv("COLUMNS");
	if (c && *c) {
		char *end;
		long v = strtol(c, &end, 10);
		if (!*end && v > 0)
			return v < 40 ? 40 : v > 1000 ? 1000 : (int)v;
	}
	struct winsize ws;
	if (isatty(STDOUT_FILENO) && ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col < 40 ? 40 : ws.ws_col;
	return 80;
}

bool cli_opt_shown(const cli_cmd *cmd, const cli_opt *o)
{
	for (size_t i = 0; i < sizeof kind_opts / sizeof kind_opts[0]; i++) {
		if (strcmp(kind_opts[i].cmd, cmd->name) != 0 || strcmp(kind_opts[i].opt, o->name) != 0)
			continue;
		size_t n;
		const cli_kind *kinds = cli_kinds(&n);
		for (size_t k = 0; k < n; k++) {
			size_t l = strlen(kinds[k].name);
			const char *p = kind_opts[i].kinds;
			for (; *p; p += strcspn(p, " "), p += *p == ' ')
				if (strncmp(p, kinds[k].name, l) == 0 && (p[l] == ' ' || !p[l]) && kinds[k].built)
					return true;
		}
		return false;
	}
	return true;
}

const char *cli_examples(const cli_cmd *cmd)
{
	for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++)
		if (strcmp(examples[i].cmd, cmd->name) == 0)
			return examples[i].text;
	return NULL;
}

void cli_opt_help(tt_buf *out, const cli_opt *o)
{
	const char *mark = strstr(o->help, "{kinds}");
	if (!mark) {
		tt_buf_puts(out, o->help);
		return;
	}
	size_t n;
	const cli_kind *kinds = cli_kinds(&n);
	tt_buf_printf(out, "%.*s", (int)(mark - o->help), o->help);
	for (int exp = 0; exp < 2; exp++) {
		bool any = false;
		for (size_t k = 0; k < n; k++) {
			if (!kinds[k].built || strcmp(kinds[k].name, "memory") == 0 ||
			    (strcmp(kinds[k].maturity, "experimental") == 0) != exp)
				continue;
			tt_buf_printf(out, "%s%s", any ? ", " : exp ? "; experimental: " : "", kinds[k].name);
			any = true;
		}
	}
	tt_buf_puts(out, mark + 7);
}

void cli_opt_left(tt_buf *out, const cli_opt *o)
{
	if (o->shortc)
		tt_buf_printf(out, "-%c, ", o->shortc);
	else
		tt_buf_puts(out, "    ");
	tt_buf_printf(out, "--%s%s%s", o->name, o->metavar ? " " : "", o->metavar ? o->metavar : "");
}

/* Words of text (whitespace runs collapse) filled into lines of width,
 * the first starting at column col, the rest indented by indent. */
static void fill(tt_buf *out, const char *text, size_t col, size_t indent, size_t width)
{
	size_t at = col;
	bool first = true;
	while (*text) {
		while (*text == ' ' || *text == '\n' || *text == '\t')
			text++;
		if (!*text)
			break;
		size_t wl = strcspn(text, " \n\t");
		if (!first && at + 1 + wl > width) {
			tt_buf_printf(out, "\n%*s", (int)indent, "");
			at = indent;
		} else if (!first) {
			tt_buf_putc(out, ' ');
			at++;
		}
		tt_buf_printf(out, "%.*s", (int)wl, text);
		at += wl;
		text += wl;
		first = false;
	}
	tt_buf_putc(out, '\n');
}

/* Paragraphs: a blank line, or a line starting with a space or "- ", starts
 * a new one; inside one, line breaks are only where the source wrapped. */
static void paragraphs(tt_buf *out, const char *text, size_t width)
{
	const char *p = text;
	while (*p) {
		tt_buf para = TT_BUF_INIT;
		size_t lead = 0;
		while (p[lead] == ' ')
			lead++;
		for (;;) {
			size_t ll = strcspn(p, "\n");
			tt_buf_printf(&para, "%.*s ", (int)ll, p);
			p += ll;
			if (*p == '\n')
				p++;
			if (!*p || *p == '\n' || *p == ' ' || strncmp(p, "- ", 2) == 0)
				break;
		}
		if (para.len) {
			tt_buf_printf(out, "%*s", (int)lead, "");
			fill(out, para.ptr, lead, lead + (strncmp(para.ptr + lead, "- ", 2) == 0 ? 2 : 0), width);
		}
		tt_buf_release(&para);
		while (*p == '\n') {
			tt_buf_putc(out, '\n');
			p++;
		}
	}
}

void cli_help_text(tt_buf *out, const cli_cmd *cmd, int width)
{
	size_t w = (size_t)width;
	if (w > 100)
		w = 100; /* past this a line is harder to read, not easier */
	/* The option names' column: 24 wide (16 on a narrow terminal); the
	 * descriptions start 2 + L + 2 in. */
	size_t L = w < 70 ? 16 : 24, D = L + 4;
	tt_buf usage = TT_BUF_INIT;
	tt_buf_printf(&usage, "tether %s %s", cmd->name, cmd->synopsis);
	tt_buf_puts(out, "usage: ");
	fill(out, usage.ptr, 7, 7 + strlen(cmd->name) + 8, w);
	tt_buf_release(&usage);
	tt_buf_putc(out, '\n');
	fill(out, cmd->summary, 0, 0, w);
	if (cmd->description && *cmd->description) {
		tt_buf_putc(out, '\n');
		paragraphs(out, cmd->description, w);
	}
	tt_buf_puts(out, "\noptions:\n");
	static const cli_opt help_opt = { "help", 'h', OPT_FLAG, NULL, "Show this message and exit." };
	for (int i = 0; cmd->opts && cmd->opts[i].name; i++) {
		const cli_opt *o = &cmd->opts[i];
		if (!cli_opt_shown(cmd, o))
			continue;
		tt_buf left = TT_BUF_INIT, help = TT_BUF_INIT;
		cli_opt_left(&left, o);
		cli_opt_help(&help, o);
		if (left.len > L) /* too long for the column: the name on its own line */
			tt_buf_printf(out, "  %s\n%*s", left.ptr, (int)D, "");
		else
			tt_buf_printf(out, "  %-*s  ", (int)L, left.ptr);
		fill(out, help.ptr, D, D, w);
		tt_buf_release(&left);
		tt_buf_release(&help);
	}
	tt_buf_printf(out, "  %-*s  ", (int)L, "-h, --help");
	fill(out, help_opt.help, D, D, w);
	const char *ex = cli_examples(cmd);
	if (ex) {
		tt_buf_puts(out, "\nexamples:\n");
		for (const char *p = ex; *p;) {
			size_t ll = strcspn(p, "\n");
			tt_buf_printf(out, "  %.*s\n", (int)ll, p);
			p += ll + (p[ll] == '\n');
		}
	}
}

void cli_help_entry(FILE *out, const char *name, const char *summary)
{
	tt_buf b = TT_BUF_INIT;
	size_t w = (size_t)cli_term_width();
	if (name && strlen(name) > 12)
		/* a long name gets its own line, as a long option does */
		tt_buf_printf(&b, "  %s\n%15s", name, "");
	else if (name)
		tt_buf_printf(&b, "  %-12s ", name);
	fill(&b, summary, name ? 15 : 0, name ? 15 : 0, w > 100 ? 100 : w);
	if (b.ptr)
		fputs(b.ptr, out);
	tt_buf_release(&b);
}

void cli_print_help(const cli_cmd *cmd)
{
	tt_buf b = TT_BUF_INIT;
	cli_help_text(&b, cmd, cli_term_width());
	if (b.ptr)
		fputs(b.ptr, stdout);
	tt_buf_release(&b);
}
