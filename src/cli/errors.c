/*
 * cli/errors.c - errors as a program reads them.  Under --json an error is
 * one JSON object on one line of stderr instead of the "error:"/"hint:"
 * lines, so a caller that parses stdout can parse the failure too:
 *   {"error": {"message": "...", "hint": "..."|null, "code": "config",
 *              "key": "..."|null, "kind": "..."|null, "exit": 1}}
 * (code is the library's error code name, or "usage" for a usage error,
 * which also names the command's "usage" line).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/cli.h"
#include "util/buf.h"
#include "util/json.h"

bool cli_json_errors;
const char *cli_usage_line; /* for a usage error: "tether CMD SYNOPSIS" */

void cli_json_error(const char *message, const char *hint, const char *code, const char *key,
		    const char *kind, int exit_status)
{
	json_t *o = json_pack("{s:{s:s,s:s?,s:s,s:s?,s:s?,s:i}}", "error", "message", message ? message : "",
			      "hint", hint, "code", code, "key", key, "kind", kind, "exit", exit_status);
	if (o && exit_status == EXIT_USAGE && cli_usage_line)
		json_object_set_new(json_object_get(o, "error"), "usage", json_string(cli_usage_line));
	tt_buf b = TT_BUF_INIT;
	if (o && tt_json_dump(&b, o, (tt_json_style){ -1, false, false, false }) == 0)
		fprintf(stderr, "%s\n", b.ptr);
	else
		fprintf(stderr, "error: %s\n", message ? message : "");
	tt_buf_release(&b);
	json_decref(o);
}

int cli_error(const char *hint, const char *fmt, ...)
{
	va_list ap;
	tt_buf msg = TT_BUF_INIT;
	va_start(ap, fmt);
	tt_buf_vprintf(&msg, fmt, ap);
	va_end(ap);
	if (cli_json_errors) {
		cli_json_error(msg.ptr, hint, "error", NULL, NULL, EXIT_ERROR);
	} else {
		fprintf(stderr, "error: %s\n", msg.ptr ? msg.ptr : "");
		if (hint)
			fprintf(stderr, "hint: %s\n", hint);
	}
	tt_buf_release(&msg);
	return EXIT_ERROR;
}
