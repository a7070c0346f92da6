/* cli/util.c - printing for the CLI (the only place tether prints). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/progress.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"

int cli_opt_index(const cli_cmd *cmd, const char *name)
{
	for (int i = 0; cmd->opts && cmd->opts[i].name; i++)
		if (strcmp(cmd->opts[i].name, name) == 0)
			return i;
	return -1;
}

bool cli_flag(const cli_cmd *cmd, const cli_args *a, const char *name)
{
	int i = cli_opt_index(cmd, name);
	return i >= 0 && a->seen[i];
}

const char *cli_value(const cli_cmd *cmd, const cli_args *a, const char *name)
{
	int i = cli_opt_index(cmd, name);
	return i >= 0 && a->seen[i] ? a->value[i] : NULL;
}

int cli_fail(tt_error *err)
{
	int status = err->code == TT_ECANCELED ? EXIT_INTERRUPTED : EXIT_ERROR;
	if (cli_json_errors) {
		cli_json_error(tt_error_text(err), err->hint, tt_code_name(err->code), err->key, err->kind,
			       status);
		tt_error_clear(err);
		return status;
	}
	fprintf(stderr, "error: %s\n", tt_error_text(err));
	if (err->hint)
		fprintf(stderr, "hint: %s\n", err->hint);
	tt_error_clear(err);
	return status;
}

int cli_output_format(const cli_cmd *cmd, const cli_args *a, int *markdown)
{
	const char *fmt = cli_value(cmd, a, "format");
	*markdown = fmt && strcmp(fmt, "markdown") == 0;
	if (fmt && !*markdown && strcmp(fmt, "text") != 0)
		return cli_usage_error(cmd, "--format is text or markdown, not '%s'", fmt);
	if (fmt && cli_flag(cmd, a, "json"))
		return cli_usage_error(cmd, "--json and --format contradict each other");
	return EXIT_OK;
}

int cli_usage_error(const cli_cmd *cmd, const char *fmt, ...)
{
	va_list ap;
	if (cli_json_errors) {
		tt_buf msg = TT_BUF_INIT, usage = TT_BUF_INIT;
		va_start(ap, fmt);
		tt_buf_vprintf(&msg, fmt, ap);
		va_end(ap);
		if (cmd)
			tt_buf_printf(&usage, "tether %s %s", cmd->name, cmd->synopsis);
		cli_usage_line = usage.ptr;
		cli_json_error(msg.ptr, "see `tether help` for the options", "usage", NULL, NULL, EXIT_USAGE);
		cli_usage_line = NULL;
		tt_buf_release(&msg);
		tt_buf_release(&usage);
		return EXIT_USAGE;
	}
	if (cmd)
		fprintf(stderr, "usage: tether %s %s\n", cmd->name, cmd->synopsis);
	fprintf(stderr, "error: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\n%s\n", cmd ? "(see `tether help' for the options)" : "(see `tether help')");
	return EXIT_USAGE;
}

void cli_note(const char *fmt, ...)
{
	va_list ap;
	fputs("note: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

void cli_warning(const char *fmt, ...)
{
	va_list ap;
	fputs("warning: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int cli_print_json(json_t *v)
{
	tt_buf b = TT_BUF_INIT;
	int rc = tt_json_dump(&b, v, TT_JSON_PRETTY);
	if (rc == 0) {
		fwrite(b.ptr, 1, b.len, stdout);
		fputc('\n', stdout);
	}
	tt_buf_release(&b);
	return rc == 0 ? EXIT_OK : EXIT_ERROR;
}

void cli_print_warnings(const tt_repo *repo)
{
	static const tt_repo *of;
	static size_t printed;
	if (!repo || repo != of) {
		of = repo;
		printed = 0;
	}
	for (; repo && printed < tt_repo_warning_count(repo); printed++)
		cli_warning("%s", tt_repo_warning(repo, printed));
}

int cli_open_repo(tt_repo **out)
{
	tt_error err = TT_ERROR_INIT;
	if (tt_repo_open(".", out, &err) < 0)
		return cli_fail(&err);
	cli_print_warnings(*out);
	cli_progress_attach(*out);
	return EXIT_OK;
}

/* cli_print_help: see help.c. */

void cli_print_history(const json_t *entries, bool numbered)
{
	size_t i, width = 0;
	json_t *e;
	json_array_foreach((json_t *)entries, i, e) {
		size_t l = strlen(json_string_value(json_object_get(e, "id")));
		width = l > width ? l : width;
	}
	json_array_foreach((json_t *)entries, i, e) {
		char when[17] = "";
		const char *w = json_string_value(json_object_get(e, "when"));
		snprintf(when, sizeof when, "%s", w ? w : "");
		for (char *p = when; *p; p++)
			if (*p == 'T')
				*p = ' ';
		tt_buf refs = TT_BUF_INIT;
		size_t k;
		json_t *r;
		json_array_foreach(json_object_get(e, "refs"), k, r)
			tt_buf_printf(&refs, "%s%s", k ? ", " : "  [", json_string_value(r));
		if (refs.len)
			tt_buf_putc(&refs, ']');
		if (numbered)
			printf("%3zu. ", i + 1);
		else
			printf("  ");
		printf("%-*s  %-16s  %s%s\n", (int)width, json_string_value(json_object_get(e, "id")), when,
		       json_string_value(json_object_get(e, "message")), refs.ptr ? refs.ptr : "");
		tt_buf_release(&refs);
	}
}

const cli_kind *cli_kinds(size_t *count)
{
	static json_t *rows;
	static cli_kind *kinds;
	static size_t n;
	if (!rows) {  /* the strings point into rows, kept for the process */
		json_t *r = tt_backends();
		cli_kind *k = r ? calloc(json_array_size(r) ? json_array_size(r) : 1, sizeof *k) : NULL;
		if (!k) {
			json_decref(r);
			*count = 0;
			return NULL;
		}
		size_t i;
		json_t *row;
		json_array_foreach(r, i, row) {
			k[i].name = json_string_value(json_object_get(row, "kind"));
			k[i].maturity = json_string_value(json_object_get(row, "maturity"));
			k[i].built = json_is_true(json_object_get(row, "installed"));
		}
		rows = r;
		kinds = k;
		n = json_array_size(r);
	}
	*count = n;
	return kinds;
}
