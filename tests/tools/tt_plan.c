/*
 * tt_plan - drive core/plan and core/oplog from the compatibility tests.
 *
 * Reads one JSON object per line on stdin and prints one JSON line per case
 * (ASCII-escaped), or {"error": "...", "code": "...", "hint": ...}.
 *
 *   {"op":"load","text":S[,"check":true]}
 *       tt_plan_parse (then tt_plan_check): the plan as below
 *   {"op":"build","plan":{"command","created_at","context","notes",
 *        "preconditions":[{"kind","expected","key","params","detail"}],
 *        "actions":[{"op","key","kind","target","detail","params"}]}}
 *       the builder API: the plan as below
 *       -> {"json": to_json, "digest", "edited", "missing", "writes",
 *           "text": render_text}
 *   {"op":"fold","root":S}
 *       tt_oplog_read -> {"entries":[{"record", "incomplete", "undoable",
 *                          "summary", "line"}]}
 *   {"op":"journal","root":S,"steps":[
 *        {"do":"begin","as":NAME,"command","plan","pre","parent","undoes"},
 *        {"do":"progress","id":NAME,"action","detail"},
 *        {"do":"done","id":NAME,"result","pre","undone":NAME},
 *        {"do":"undone","id":NAME,"by":NAME}]}
 *       append with our journal; parent/undoes/undone/by name earlier
 *       steps when they match one, else are taken literally
 *       -> {"ids": {NAME: id}}
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/oplog.h"
#include "core/plan.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/mem.h"

static const tt_json_style LINE = { -1, false, true, false };

/* A string member or NULL (absent, null); *bad set for other types. */
static const char *opt_str(const json_t *o, const char *name, int *bad)
{
	json_t *v = json_object_get(o, name);
	if (!v || json_is_null(v))
		return NULL;
	if (!json_is_string(v)) {
		*bad = 1;
		return NULL;
	}
	return json_string_value(v);
}

static json_t *opt_obj(const json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);
	return json_is_object(v) ? v : NULL;
}

static json_t *describe(const tt_plan *plan, tt_error *err)
{
	tt_buf js = TT_BUF_INIT, text = TT_BUF_INIT, missing = TT_BUF_INIT;
	char hex[65];
	json_t *out = NULL;
	if (tt_plan_to_json(plan, &js, err) || tt_plan_digest(plan, hex, err) ||
	    tt_plan_render_text(plan, &text, err))
		goto done;
	tt_plan_missing_preconditions(plan, &missing);
	out = json_pack("{s:s%,s:s,s:b,s:s%,s:I,s:s%}", "json", js.ptr, js.len, "digest", hex,
			"edited", tt_plan_edited(plan), "missing", missing.ptr, missing.len,
			"writes", (json_int_t)tt_plan_write_count(plan), "text", text.ptr, text.len);
	if (!out)
		tt_error_oom(err);
done:
	tt_buf_release(&js);
	tt_buf_release(&text);
	tt_buf_release(&missing);
	return out;
}

static json_t *op_load(const json_t *c, tt_error *err)
{
	json_t *t = json_object_get(c, "text"), *out;
	tt_plan *plan = NULL;
	int rc;
	if (!json_is_string(t)) {
		tt_error_set(err, TT_EUSAGE, "\"text\" must be a string");
		return NULL;
	}
	rc = json_is_true(json_object_get(c, "check"))
		     ? tt_plan_from_json(&plan, json_string_value(t), json_string_length(t), err)
		     : tt_plan_parse(&plan, json_string_value(t), json_string_length(t), err);
	if (rc)
		return NULL;
	out = describe(plan, err);
	tt_plan_free(plan);
	return out;
}

static json_t *op_build(const json_t *c, tt_error *err)
{
	json_t *spec = opt_obj(c, "plan"), *out = NULL, *v;
	const char *k;
	int bad = 0;
	tt_plan *plan;
	if (!spec || !opt_str(spec, "command", &bad)) {
		tt_error_set(err, TT_EUSAGE, "\"plan\" with a \"command\" expected");
		return NULL;
	}
	if (!(plan = tt_plan_new(opt_str(spec, "command", &bad)))) {
		tt_error_oom(err);
		return NULL;
	}
	if (opt_str(spec, "created_at", &bad) &&
	    tt_plan_set_created_at(plan, opt_str(spec, "created_at", &bad), err))
		goto done;
	json_object_foreach(opt_obj(spec, "context"), k, v)
	{
		if (tt_plan_set_context(plan, k, v, err))
			goto done;
	}
	json_t *list = json_object_get(spec, "notes");
	for (size_t i = 0; i < json_array_size(list); i++)
		if (tt_plan_note(plan, json_string_value(json_array_get(list, i)), err))
			goto done;
	list = json_object_get(spec, "preconditions");
	for (size_t i = 0; i < json_array_size(list); i++) {
		json_t *p = json_array_get(list, i);
		if (tt_plan_require(plan, opt_str(p, "kind", &bad), json_object_get(p, "expected"),
				    opt_str(p, "key", &bad), opt_obj(p, "params"),
				    opt_str(p, "detail", &bad), err))
			goto done;
	}
	list = json_object_get(spec, "actions");
	for (size_t i = 0; i < json_array_size(list); i++) {
		json_t *a = json_array_get(list, i);
		if (tt_plan_action(plan, opt_str(a, "op", &bad), opt_str(a, "key", &bad),
				   opt_str(a, "kind", &bad), opt_str(a, "target", &bad),
				   opt_str(a, "detail", &bad), opt_obj(a, "params"), err))
			goto done;
	}
	if (bad) {
		tt_error_set(err, TT_EUSAGE, "a string field holds something else");
		goto done;
	}
	out = describe(plan, err);
done:
	tt_plan_free(plan);
	return out;
}

static json_t *op_fold(const json_t *c, tt_error *err)
{
	int bad = 0;
	const char *root = opt_str(c, "root", &bad);
	tt_oplog log = TT_OPLOG_INIT;
	json_t *entries = NULL, *out = NULL;
	if (!root) {
		tt_error_set(err, TT_EUSAGE, "\"root\" expected");
		return NULL;
	}
	if (tt_oplog_read(root, &log, err))
		return NULL;
	if (!(entries = json_array()))
		goto oom;
	for (size_t i = 0; i < log.count; i++) {
		const tt_op_entry *e = &log.entries[i];
		char *summary = tt_op_summary(e), *line = tt_op_format_line(e, false);
		json_t *rec = tt_op_to_json(e, false);
		json_t *x = summary && line && rec
				    ? json_pack("{s:O,s:b,s:b,s:s,s:s}", "record", e->record,
						"incomplete", tt_op_incomplete(e), "undoable",
						tt_op_undoable(e), "summary", summary, "line", line)
				    : NULL;
		if (x && json_object_set(x, "ops_json", rec)) {
			json_decref(x);
			x = NULL;
		}
		free(summary);
		free(line);
		json_decref(rec);
		if (!x || json_array_append_new(entries, x))
			goto oom;
	}
	out = json_pack("{s:o}", "entries", entries);
	entries = NULL;
	if (!out)
		goto oom;
	tt_oplog_free(&log);
	return out;
oom:
	json_decref(entries);
	tt_oplog_free(&log);
	tt_error_oom(err);
	return NULL;
}

/* A name of an earlier step, or the text itself. */
static const char *resolve(json_t *ids, const char *name)
{
	json_t *v = name ? json_object_get(ids, name) : NULL;
	return v ? json_string_value(v) : name;
}

static json_t *op_journal(const json_t *c, tt_error *err)
{
	int bad = 0;
	const char *root = opt_str(c, "root", &bad);
	json_t *steps = json_object_get(c, "steps"), *ids = json_object();
	if (!root || !ids) {
		json_decref(ids);
		tt_error_set(err, TT_EUSAGE, "\"root\" expected");
		return NULL;
	}
	for (size_t i = 0; i < json_array_size(steps); i++) {
		json_t *s = json_array_get(steps, i);
		const char *what = opt_str(s, "do", &bad);
		int rc;
		if (!what) {
			rc = tt_error_set(err, TT_EUSAGE, "step %zu: \"do\" expected", i);
		} else if (!strcmp(what, "begin")) {
			char id[TT_OP_ID_LEN + 1];
			json_t *plan = json_object_get(s, "plan");
			rc = tt_oplog_begin_ex(root, opt_str(s, "command", &bad),
					       json_is_null(plan) ? NULL : plan, opt_obj(s, "pre"),
					       resolve(ids, opt_str(s, "undoes", &bad)),
					       resolve(ids, opt_str(s, "parent", &bad)), id, err);
			if (rc == 0 && opt_str(s, "as", &bad))
				json_object_set_new(ids, opt_str(s, "as", &bad), json_string(id));
		} else if (!strcmp(what, "progress")) {
			rc = tt_oplog_progress(root, resolve(ids, opt_str(s, "id", &bad)),
					       opt_str(s, "action", &bad), opt_obj(s, "detail"), err);
		} else if (!strcmp(what, "done")) {
			rc = tt_oplog_done(root, resolve(ids, opt_str(s, "id", &bad)),
					   opt_obj(s, "result"), opt_obj(s, "pre"),
					   resolve(ids, opt_str(s, "undone", &bad)), err);
		} else if (!strcmp(what, "undone")) {
			rc = tt_oplog_mark_undone(root, resolve(ids, opt_str(s, "id", &bad)),
						  resolve(ids, opt_str(s, "by", &bad)), err);
		} else {
			rc = tt_error_set(err, TT_EUSAGE, "step %zu: unknown \"do\"", i);
		}
		if (rc) {
			json_decref(ids);
			return NULL;
		}
	}
	return json_pack("{s:o}", "ids", ids);
}

int main(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int status = 0;
	while ((n = getline(&line, &cap, stdin)) > 0) {
		tt_error err = TT_ERROR_INIT;
		tt_buf out = TT_BUF_INIT;
		json_t *c = tt_json_parse(line, (size_t)n, "case", &err), *res = NULL;
		const char *op = json_string_value(json_object_get(c, "op"));
		if (c && !op)
			tt_error_set(&err, TT_EUSAGE, "\"op\" expected");
		else if (op && !strcmp(op, "load"))
			res = op_load(c, &err);
		else if (op && !strcmp(op, "build"))
			res = op_build(c, &err);
		else if (op && !strcmp(op, "fold"))
			res = op_fold(c, &err);
		else if (op && !strcmp(op, "journal"))
			res = op_journal(c, &err);
		else if (op)
			tt_error_set(&err, TT_EUSAGE, "unknown op \"%s\"", op);
		if (!res)
			res = json_pack("{s:s,s:s,s:s?}", "error",
					err.message ? err.message : "failed", "code",
					tt_code_name(err.code), "hint", err.hint);
		if (!res || tt_json_dump(&out, res, LINE)) {
			fputs("{\"error\": \"tt_plan: cannot print the result\"}\n", stdout);
			status = 1;
		} else {
			fwrite(out.ptr, 1, out.len, stdout);
			fputc('\n', stdout);
		}
		fflush(stdout);
		tt_buf_release(&out);
		json_decref(res);
		json_decref(c);
		tt_error_clear(&err);
	}
	free(line);
	return status;
}
