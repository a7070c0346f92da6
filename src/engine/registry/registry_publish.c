/*
 * engine/registry/registry_publish.c - `publish`: the export tables upserted into a
 * PostgreSQL schema in one transaction (through src/db/).  Commits are
 * immutable, so rows of commit-keyed tables whose commit is already there
 * are skipped; refs, workspace and tether_meta describe now and are
 * rewritten.  Any failure rolls the whole transaction back - the schema
 * and tables it would have created included.
 */
#include "engine/registry/registry_publish.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/plan.h"
#include "db/db.h"
#include "engine/kernel/planned.h"
#include "engine/registry/registry.h"
#include "util/buf.h"
#include "util/mem.h"
#include "engine/registry/registry_export.h"

static const char *pg_type(tt_reg_type t)
{
	switch (t) {
	case TT_REG_INT: return "BIGINT";
	case TT_REG_BOOL: return "BOOLEAN";
	case TT_REG_JSON: return "JSONB";
	case TT_REG_TIMESTAMP: return "TIMESTAMPTZ";
	default: return "TEXT";
	}
}

static const char *pg_cast(tt_reg_type t)
{
	switch (t) {
	case TT_REG_BOOL: return "::boolean";
	case TT_REG_JSON: return "::jsonb";
	case TT_REG_TIMESTAMP: return "::timestamptz";
	default: return "";
	}
}

static bool is_key(const tt_reg_table *t, const char *col)
{
	for (size_t k = 0; t->primary_key[k]; k++)
		if (!strcmp(t->primary_key[k], col))
			return true;
	return false;
}

static int run(tt_db *db, tt_buf *s, tt_error *err)
{
	tt_buf_putc(s, '\0');
	int rc = tt_buf_check(s, err, "SQL");
	return rc < 0 ? rc : tt_db_exec(db, s->ptr, NULL, 0, err);
}

static int ddl(tt_db *db, const char *schema, tt_error *err)
{
	tt_buf s = TT_BUF_INIT;
	tt_buf_printf(&s, "CREATE SCHEMA IF NOT EXISTS %s", schema);
	int rc = run(db, &s, err);
	for (size_t t = 0; rc == 0 && t < tt_reg_ntables; t++) {
		const tt_reg_table *tb = &tt_reg_tables[t];
		tt_buf_reset(&s);
		tt_buf_printf(&s, "CREATE TABLE IF NOT EXISTS %s.%s (", schema, tb->name);
		for (size_t c = 0; c < tb->ncolumns; c++)
			tt_buf_printf(&s, "%s %s, ", tb->columns[c].name, pg_type(tb->columns[c].type));
		tt_buf_puts(&s, "PRIMARY KEY (");
		for (size_t k = 0; tb->primary_key[k]; k++)
			tt_buf_printf(&s, "%s%s", k ? ", " : "", tb->primary_key[k]);
		tt_buf_puts(&s, "))");
		rc = run(db, &s, err);
	}
	for (size_t v = 0; rc == 0 && v < tt_reg_nviews; v++) {
		tt_buf_reset(&s);
		tt_buf_printf(&s, "CREATE OR REPLACE VIEW %s.%s AS ", schema, tt_reg_views[v][0]);
		for (const char *p = tt_reg_views[v][1]; *p; p++) {
			if (!strncmp(p, "{q}", 3)) {
				tt_buf_printf(&s, "%s.", schema);
				p += 2;
			} else {
				tt_buf_putc(&s, *p);
			}
		}
		rc = run(db, &s, err);
	}
	tt_buf_release(&s);
	return rc;
}

static int upsert(tt_db *db, const char *schema, const tt_reg_table *tb, json_t *rows, tt_error *err)
{
	size_t n = json_array_size(rows), nc = tb->ncolumns;
	tt_buf s = TT_BUF_INIT;
	tt_buf_printf(&s, "INSERT INTO %s.%s (", schema, tb->name);
	for (size_t c = 0; c < nc; c++)
		tt_buf_printf(&s, "%s%s", c ? ", " : "", tb->columns[c].name);
	tt_buf_puts(&s, ") VALUES (");
	for (size_t c = 0; c < nc; c++)
		tt_buf_printf(&s, "%s$%zu%s", c ? ", " : "", c + 1, pg_cast(tb->columns[c].type));
	tt_buf_puts(&s, ") ON CONFLICT (");
	for (size_t k = 0; tb->primary_key[k]; k++)
		tt_buf_printf(&s, "%s%s", k ? ", " : "", tb->primary_key[k]);
	tt_buf_puts(&s, ") ");
	bool any = false;
	for (size_t c = 0; c < nc; c++) {
		if (is_key(tb, tb->columns[c].name))
			continue;
		tt_buf_printf(&s, "%s%s = EXCLUDED.%s", any ? ", " : "DO UPDATE SET ", tb->columns[c].name,
			      tb->columns[c].name);
		any = true;
	}
	if (!any)
		tt_buf_puts(&s, "DO NOTHING");
	tt_buf_putc(&s, '\0');
	tt_db_value *vals = tt_calloc(n * nc + 1, sizeof *vals);
	char **texts = tt_calloc(n * nc + 1, sizeof *texts);
	int rc = tt_buf_check(&s, err, "SQL");
	if (rc == 0 && (!vals || !texts))
		rc = tt_error_oom(err);
	for (size_t r = 0; rc == 0 && r < n; r++) {
		json_t *row = json_array_get(rows, r);
		for (size_t c = 0; c < nc; c++) {
			json_t *v = tt_reg_row_get(row, tb->columns[c].name);
			if (!v || json_is_null(v))
				continue;
			char *t = tt_reg_cell_text(&tb->columns[c], v, "postgres");
			if (!t) {
				rc = tt_error_oom(err);
				break;
			}
			texts[r * nc + c] = t;
			vals[r * nc + c] = (tt_db_value){ TT_DB_TEXT, t, 0 };
		}
	}
	if (rc == 0)
		rc = tt_db_exec_many(db, s.ptr, vals, nc, n, err);
	for (size_t i = 0; texts && i < n * nc; i++)
		free(texts[i]);
	free(texts);
	free(vals);
	tt_buf_release(&s);
	return rc;
}

int tt_registry_publish(const tt_bundle *b, const char *dsn, const char *schema, bool dry_run, json_t **report,
			tt_error *err)
{
	*report = NULL;
	if (!tt_db_identifier_ok(schema))
		return tt_error_set(err, TT_ECONFIG, "invalid SQL identifier: '%s'", schema);
	if (!tt_db_is_postgres(dsn)) {
		tt_error_set(err, TT_ECONFIG, "publish needs a PostgreSQL DSN (postgresql://...)");
		return tt_error_hint(err, "pass --to postgresql://USER@HOST:PORT/DATABASE or set TETHER_PUBLISH_DSN");
	}
	tt_db *db = NULL;
	tt_db_opts o = { .timeout_ms = 600000 };
	json_t *existing = json_object(), *upserted = json_object();
	tt_db_rows rows = { 0 };
	int rc = existing && upserted ? tt_db_open(&db, dsn, &o, err) : tt_error_oom(err);
	if (rc < 0)
		goto done;
	if ((rc = tt_db_begin(db, false, err)) < 0)
		goto done;
	if (!dry_run && (rc = ddl(db, schema, err)) < 0)
		goto done;
	char *sel = tt_asprintf("SELECT commit_id FROM %s.commits", schema);
	if (!sel) {
		rc = tt_error_oom(err);
		goto done;
	}
	tt_error probe = TT_ERROR_INIT;
	rc = tt_db_query(db, sel, NULL, 0, &rows, &probe);
	free(sel);
	if (rc < 0) {
		if (!dry_run) {
			tt_error_move(err, &probe);
			goto done;
		}
		/* A dry run against a schema not made yet: nothing to skip. */
		tt_error_clear(&probe);
		tt_db_rollback(db);
		rc = 0;
	}
	for (size_t r = 0; r < rows.nrows; r++)
		if (rows.cells[r * rows.ncols])
			json_object_set_new(existing, rows.cells[r * rows.ncols], json_true());
	long long skipped = 0;
	size_t i;
	json_t *row;
	json_array_foreach(json_object_get(b->tables, "commits"), i, row)
		skipped += json_object_get(existing, json_string_value(json_object_get(row, "commit_id"))) != NULL;
	for (size_t t = 0; t < tt_reg_ntables; t++) {
		const tt_reg_table *tb = &tt_reg_tables[t];
		json_t *all = json_object_get(b->tables, tb->name), *keep = json_array();
		if (!keep) {
			rc = tt_error_oom(err);
			goto done;
		}
		json_array_foreach(all, i, row)
			if (!tt_reg_commit_keyed(tb->name) ||
			    !json_object_get(existing, json_string_value(json_object_get(row, "commit_id"))))
				json_array_append(keep, row);
		json_object_set_new(upserted, tb->name, json_integer((json_int_t)json_array_size(keep)));
		if (!dry_run && tt_reg_replaced_wholesale(tb->name)) {
			tt_buf s = TT_BUF_INIT;
			tt_buf_printf(&s, "DELETE FROM %s.%s", schema, tb->name);
			rc = run(db, &s, err);
			tt_buf_release(&s);
		}
		if (rc == 0 && !dry_run && json_array_size(keep))
			rc = upsert(db, schema, tb, keep, err);
		json_decref(keep);
		if (rc < 0)
			goto done;
	}
	if (dry_run)
		tt_db_rollback(db);
	else if ((rc = tt_db_commit(db, err)) < 0)
		goto done;
	*report = json_pack("{s:s,s:O,s:I,s:b}", "schema", schema, "upserted", upserted, "skipped_commits",
			    (json_int_t)skipped, "dry_run", dry_run);
	if (!*report)
		rc = tt_error_oom(err);
done:
	tt_db_rows_release(&rows);
	tt_db_close(db);  /* rolls back whatever did not commit */
	json_decref(existing);
	json_decref(upserted);
	return rc;
}

int tt_registry_publish_plan(const json_t *report, const char *head, char **plan_json, char **plan_text,
			     tt_error *err)
{
	const char *schema = json_string_value(json_object_get(report, "schema"));
	tt_plan *plan = tt_plan_new("publish");
	json_t *hv = head ? json_string(head) : json_null();
	json_t *sv = json_string(schema ? schema : "");
	int rc = plan && hv && sv ? 0 : tt_error_oom(err);
	if (rc == 0 && (rc = tt_plan_set_context(plan, "schema", sv, err)) == 0)
		rc = tt_plan_set_context(plan, "head", hv, err);
	const char *name;
	json_t *n;
	json_object_foreach(json_object_get(report, "upserted"), name, n) {
		if (rc < 0 || !json_integer_value(n))
			continue;
		char *target = tt_asprintf("%s.%s", schema, name);
		char *detail = tt_asprintf("%lld row(s)", (long long)json_integer_value(n));
		rc = target && detail ? tt_plan_action(plan, "upsert", NULL, NULL, target, detail, NULL, err)
				      : tt_error_oom(err);
		free(target);
		free(detail);
	}
	long long skipped = json_integer_value(json_object_get(report, "skipped_commits"));
	if (rc == 0 && skipped) {
		char *note = tt_asprintf("%lld commit(s) already published", skipped);
		rc = note ? tt_plan_note(plan, note, err) : tt_error_oom(err);
		free(note);
	}
	if (rc == 0)
		rc = tt_engine_render_plan(plan, plan_json, plan_text, err);
	json_decref(hv);
	json_decref(sv);
	tt_plan_free(plan);
	return rc;
}
