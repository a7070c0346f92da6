/*
 * engine/registry/registry_write.c - writing an export bundle: a SQLite file (through
 * src/db/), or a directory of Parquet / CSV / JSONL files with schema.json.
 */
#include "engine/registry/registry_write.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "db/db.h"
#include "engine/registry/registry.h"
#include "formats/parquet.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "engine/registry/registry_export.h"

static const char *const type_names[] = { "text", "int", "bool", "json", "timestamp" };

static json_t *rows_of(const tt_bundle *b, const tt_reg_table *t)
{
	return json_object_get(b->tables, t->name);
}

/* --- SQLite ------------------------------------------------------------------ */

static const char *sqlite_type(tt_reg_type t)
{
	return t == TT_REG_INT || t == TT_REG_BOOL ? "INTEGER" : "TEXT";
}

static void put_pk(tt_buf *s, const tt_reg_table *t)
{
	for (size_t k = 0; t->primary_key[k]; k++)
		tt_buf_printf(s, "%s%s", k ? ", " : "", t->primary_key[k]);
}

/* One table's rows as bound values (texts owned by *texts). */
static int bind_rows(const tt_reg_table *t, json_t *rows, const char *dialect, tt_db_value **vals, char ***texts,
		     tt_error *err)
{
	size_t n = json_array_size(rows), nc = t->ncolumns;
	*vals = tt_calloc(n * nc + 1, sizeof **vals);
	*texts = tt_calloc(n * nc + 1, sizeof **texts);
	if (!*vals || !*texts)
		return tt_error_oom(err);
	for (size_t r = 0; r < n; r++) {
		json_t *row = json_array_get(rows, r);
		for (size_t c = 0; c < nc; c++) {
			const tt_reg_column *col = &t->columns[c];
			json_t *v = tt_reg_row_get(row, col->name);
			tt_db_value *out = &(*vals)[r * nc + c];
			if (!v || json_is_null(v)) {
				out->type = TT_DB_NULL;
			} else if (!strcmp(dialect, "sqlite") && (col->type == TT_REG_INT || col->type == TT_REG_BOOL)) {
				out->type = TT_DB_INT;
				out->i = json_is_boolean(v) ? json_is_true(v) : (long long)json_integer_value(v);
			} else {
				char *s = tt_reg_cell_text(col, v, dialect);
				if (!s)
					return tt_error_set(err, TT_ENOMEM, "cannot serialize %s.%s", t->name, col->name);
				(*texts)[r * nc + c] = s;
				out->type = TT_DB_TEXT;
				out->text = s;
			}
		}
	}
	return 0;
}

static void free_bound(const tt_reg_table *t, size_t n, tt_db_value *vals, char **texts)
{
	for (size_t i = 0; texts && i < n * t->ncolumns; i++)
		free(texts[i]);
	free(texts);
	free(vals);
}

static int run_sql(tt_db *db, tt_buf *s, tt_error *err)
{
	int rc = tt_buf_check(s, err, "SQL");
	return rc < 0 ? rc : tt_db_exec(db, s->ptr, NULL, 0, err);
}

static int write_sqlite(const tt_bundle *b, const char *path, bool append, tt_error *err)
{
	if (!append && unlink(path) < 0 && errno != ENOENT)
		return tt_error_errno(err, errno, "cannot replace %s", path);
	char *parent = tt_strdup(path);
	if (!parent)
		return tt_error_oom(err);
	char *slash = strrchr(parent, '/');
	int rc = 0;
	if (slash && slash != parent) {
		*slash = '\0';
		rc = tt_mkdirs(parent, 0777, err);
	}
	free(parent);
	if (rc < 0)
		return rc;
	tt_db *db = NULL;
	tt_db_opts o = { .create = true, .timeout_ms = 600000 };
	if ((rc = tt_db_open(&db, path, &o, err)) < 0)
		return rc;
	tt_buf s = TT_BUF_INIT;
	if ((rc = tt_db_begin(db, false, err)) < 0)
		goto done;
	for (size_t t = 0; rc == 0 && t < tt_reg_ntables; t++) {
		const tt_reg_table *tb = &tt_reg_tables[t];
		tt_buf_reset(&s);
		tt_buf_printf(&s, "CREATE TABLE IF NOT EXISTS %s (", tb->name);
		for (size_t c = 0; c < tb->ncolumns; c++)
			tt_buf_printf(&s, "%s %s, ", tb->columns[c].name, sqlite_type(tb->columns[c].type));
		tt_buf_puts(&s, "PRIMARY KEY (");
		put_pk(&s, tb);
		tt_buf_puts(&s, "))");
		tt_buf_putc(&s, '\0');
		rc = run_sql(db, &s, err);
	}
	for (size_t v = 0; rc == 0 && v < tt_reg_nviews; v++) {
		tt_buf_reset(&s);
		tt_buf_printf(&s, "CREATE VIEW IF NOT EXISTS %s AS ", tt_reg_views[v][0]);
		for (const char *p = tt_reg_views[v][1]; *p; p++) {
			if (!strncmp(p, "{q}", 3))
				p += 2;
			else
				tt_buf_putc(&s, *p);
		}
		tt_buf_putc(&s, '\0');
		rc = run_sql(db, &s, err);
	}
	for (size_t t = 0; rc == 0 && t < tt_reg_ntables; t++) {
		const tt_reg_table *tb = &tt_reg_tables[t];
		json_t *rows = rows_of(b, tb);
		if (tt_reg_replaced_wholesale(tb->name)) {
			tt_buf_reset(&s);
			tt_buf_printf(&s, "DELETE FROM %s", tb->name);
			tt_buf_putc(&s, '\0');
			if ((rc = run_sql(db, &s, err)) < 0)
				break;
		}
		tt_buf_reset(&s);
		tt_buf_printf(&s, "INSERT OR REPLACE INTO %s (", tb->name);
		for (size_t c = 0; c < tb->ncolumns; c++)
			tt_buf_printf(&s, "%s%s", c ? ", " : "", tb->columns[c].name);
		tt_buf_puts(&s, ") VALUES (");
		for (size_t c = 0; c < tb->ncolumns; c++)
			tt_buf_printf(&s, "%s$%zu", c ? ", " : "", c + 1);
		tt_buf_puts(&s, ")");
		tt_buf_putc(&s, '\0');
		tt_db_value *vals = NULL;
		char **texts = NULL;
		if ((rc = tt_buf_check(&s, err, "SQL")) == 0 &&
		    (rc = bind_rows(tb, rows, "sqlite", &vals, &texts, err)) == 0)
			rc = tt_db_exec_many(db, s.ptr, vals, tb->ncolumns, json_array_size(rows), err);
		free_bound(tb, json_array_size(rows), vals, texts);
	}
	if (rc == 0)
		rc = tt_db_commit(db, err);
done:
	tt_buf_release(&s);
	tt_db_close(db);
	return rc;
}

/* --- directories ------------------------------------------------------------- */

static int schema_document(tt_buf *out, tt_error *err)
{
	json_t *tables = json_object(), *views = json_array();
	json_t *doc = json_pack("{s:i,s:o,s:o}", "schema_version", TT_REG_SCHEMA_VERSION, "tables", tables, "views", views);
	if (!doc)
		return tt_error_oom(err);
	for (size_t t = 0; t < tt_reg_ntables; t++) {
		const tt_reg_table *tb = &tt_reg_tables[t];
		json_t *pk = json_array(), *cols = json_array();
		for (size_t k = 0; tb->primary_key[k]; k++)
			json_array_append_new(pk, json_string(tb->primary_key[k]));
		for (size_t c = 0; c < tb->ncolumns; c++)
			json_array_append_new(cols, json_pack("{s:s,s:s,s:s}", "name", tb->columns[c].name, "type",
							      type_names[tb->columns[c].type], "doc", tb->columns[c].doc));
		json_object_set_new(tables, tb->name, json_pack("{s:s,s:o,s:o}", "doc", tb->doc, "primary_key", pk,
								"columns", cols));
	}
	for (size_t v = 0; v < tt_reg_nviews; v++)
		json_array_append_new(views, json_string(tt_reg_views[v][0]));
	int rc = tt_json_dump(out, doc, TT_JSON_PRETTY);
	json_decref(doc);
	return rc < 0 ? tt_error_set(err, rc, "cannot write schema.json") : 0;
}

/* Python's csv.writer (QUOTE_MINIMAL, "\r\n"): a field is quoted when it
 * holds the delimiter, a quote or a line break. */
static void csv_field(tt_buf *out, const char *s)
{
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		tt_buf_puts(out, s);
		return;
	}
	tt_buf_putc(out, '"');
	for (; *s; s++) {
		if (*s == '"')
			tt_buf_putc(out, '"');
		tt_buf_putc(out, *s);
	}
	tt_buf_putc(out, '"');
}

static int table_csv(tt_buf *out, const tt_reg_table *tb, json_t *rows, tt_error *err)
{
	for (size_t c = 0; c < tb->ncolumns; c++) {
		if (c)
			tt_buf_putc(out, ',');
		csv_field(out, tb->columns[c].name);
	}
	tt_buf_puts(out, "\r\n");
	size_t r;
	json_t *row;
	json_array_foreach(rows, r, row) {
		for (size_t c = 0; c < tb->ncolumns; c++) {
			char *s = tt_reg_cell_text(&tb->columns[c], tt_reg_row_get(row, tb->columns[c].name), "csv");
			if (c)
				tt_buf_putc(out, ',');
			csv_field(out, s);
			free(s);
		}
		tt_buf_puts(out, "\r\n");
	}
	return tt_buf_check(out, err, tb->name);
}

static int table_jsonl(tt_buf *out, json_t *rows, tt_error *err)
{
	size_t r;
	json_t *row;
	json_array_foreach(rows, r, row) {
		json_t *full = tt_reg_row_full(row);
		int rc = full ? tt_json_dump(out, full, (tt_json_style){ -1, true, true, false }) : TT_ENOMEM;
		json_decref(full);
		if (rc < 0)
			return tt_error_set(err, rc, "cannot write a JSONL row");
		tt_buf_putc(out, '\n');
	}
	return tt_buf_check(out, err, "JSONL");
}

static int table_parquet(tt_buf *out, const tt_reg_table *tb, json_t *rows, tt_error *err)
{
	size_t n = json_array_size(rows), nc = tb->ncolumns;
	tt_parquet_column cols[32];
	tt_parquet_cell *cells = tt_calloc(n * nc + 1, sizeof *cells);
	char **texts = tt_calloc(n * nc + 1, sizeof *texts);
	int rc = 0;
	if (!cells || !texts) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t c = 0; c < nc; c++) {
		cols[c].name = tb->columns[c].name;
		cols[c].type = tb->columns[c].type == TT_REG_INT    ? TT_PARQUET_INT64
			       : tb->columns[c].type == TT_REG_BOOL ? TT_PARQUET_BOOL
								    : TT_PARQUET_STRING;
	}
	for (size_t r = 0; r < n; r++) {
		json_t *row = json_array_get(rows, r);
		for (size_t c = 0; c < nc; c++) {
			json_t *v = tt_reg_row_get(row, tb->columns[c].name);
			tt_parquet_cell *cell = &cells[r * nc + c];
			if (!v || json_is_null(v)) {
				cell->null = true;
			} else if (cols[c].type != TT_PARQUET_STRING) {
				cell->i = json_is_boolean(v) ? json_is_true(v) : (int64_t)json_integer_value(v);
			} else {
				char *s = tt_reg_cell_text(&tb->columns[c], v, "csv");
				if (!s) {
					rc = tt_error_oom(err);
					goto done;
				}
				texts[r * nc + c] = s;
				cell->s = s;
				cell->n = strlen(s);
			}
		}
	}
	rc = tt_parquet_write(out, cols, nc, cells, n, "tether", err);
done:
	for (size_t i = 0; texts && i < n * nc; i++)
		free(texts[i]);
	free(texts);
	free(cells);
	return rc;
}

static int write_dir(const tt_bundle *b, const char *dir, const char *fmt, size_t *nfiles, tt_error *err)
{
	int rc = tt_mkdirs(dir, 0777, err);
	tt_buf out = TT_BUF_INIT;
	char *path = NULL;
	if (rc < 0)
		return rc;
	if ((rc = schema_document(&out, err)) < 0)
		goto done;
	if (!(path = tt_asprintf("%s/schema.json", dir))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_write_file_atomic(path, out.ptr, out.len, 0666, err)) < 0)
		goto done;
	(*nfiles)++;
	for (size_t t = 0; t < tt_reg_ntables; t++) {
		const tt_reg_table *tb = &tt_reg_tables[t];
		json_t *rows = rows_of(b, tb);
		tt_buf_reset(&out);
		if (!strcmp(fmt, "jsonl"))
			rc = table_jsonl(&out, rows, err);
		else if (!strcmp(fmt, "csv"))
			rc = table_csv(&out, tb, rows, err);
		else
			rc = table_parquet(&out, tb, rows, err);
		if (rc < 0)
			goto done;
		free(path);
		if (!(path = tt_asprintf("%s/%s.%s", dir, tb->name, fmt))) {
			rc = tt_error_oom(err);
			goto done;
		}
		if ((rc = tt_write_file_atomic(path, out.ptr, out.len, 0666, err)) < 0)
			goto done;
		(*nfiles)++;
	}
done:
	free(path);
	tt_buf_release(&out);
	return rc;
}

int tt_registry_write(const tt_bundle *b, const char *path, const char *format, bool append, size_t *nfiles,
		      tt_error *err)
{
	*nfiles = 0;
	if (!strcmp(format, "sqlite")) {
		int rc = write_sqlite(b, path, append, err);
		if (rc == 0)
			*nfiles = 1;
		return rc;
	}
	if (strcmp(format, "parquet") && strcmp(format, "csv") && strcmp(format, "jsonl"))
		return tt_error_set(err, TT_EUSAGE, "unknown export format '%s'", format);
	return write_dir(b, path, format, nfiles, err);
}
