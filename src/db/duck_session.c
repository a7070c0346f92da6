/*
 * db/duck_session.c - an in-memory DuckDB session over libduckdb's C API,
 * loaded on first use by db/duck_api (see duck_session.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "db/duck_api.h"
#include "db/duck_session.h"
#include "db/duck_sql.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"

/* libduckdb loaded, or the loader's error saying what needed it. */
static int needs(tt_error *err)
{
	int rc = tt_duck_load(err);
	if (rc)
		tt_error_prefix(err, "SQL over a dataset runs in libduckdb");
	return rc;
}

bool tt_duck_session_available(tt_error *err)
{
	return needs(err) == 0;
}

#ifndef TT_HAVE_DUCKDB_H

int tt_duck_session_open(tt_duck_session **out, tt_error *err)
{
	*out = NULL;
	return needs(err);
}

void tt_duck_session_close(tt_duck_session *s)
{
	(void)s;
}

int tt_duck_session_add_secret(tt_duck_session *s, const char *secret)
{
	(void)s, (void)secret;
	return 0;
}

int tt_duck_session_exec(tt_duck_session *s, const char *sql, const char *what, tt_error *err)
{
	(void)s, (void)sql, (void)what;
	return needs(err);
}

int tt_duck_session_exec_secret(tt_duck_session *s, const char *sql, const char *shown, const char *what,
				tt_error *err)
{
	(void)s, (void)sql, (void)shown, (void)what;
	return needs(err);
}

int tt_duck_session_rows(tt_duck_session *s, const char *sql, tt_db_rows *out, tt_error *err)
{
	(void)s, (void)sql;
	memset(out, 0, sizeof *out);
	return needs(err);
}

int tt_duck_session_stream(tt_duck_session *s, const char *sql, tt_duck_cells cells,
			   const tt_duck_sink *sink, tt_error *err)
{
	(void)s, (void)sql, (void)cells, (void)sink;
	return needs(err);
}

void tt_duck_session_interrupt(tt_duck_session *s)
{
	(void)s;
}

#else

struct tt_duck_session {
	duckdb_database db;
	duckdb_connection con;
	char **secrets;
	size_t nsecrets;
};

int tt_duck_session_open(tt_duck_session **out, tt_error *err)
{
	duckdb_config cfg = NULL;
	char *why = NULL;
	*out = NULL;
	int rc = tt_duck_session_available(err) ? 0 : err ? err->code : TT_ECAPABILITY;
	if (rc)
		return rc;
	tt_duck_session *s = tt_calloc(1, sizeof *s);
	if (!s)
		return tt_error_oom(err);
	if (duckdb_create_config(&cfg) != DuckDBSuccess) {
		free(s);
		return tt_error_oom(err);
	}
	/* Nothing fetched at run time: extensions are loaded from files the
	 * caller found, never installed or auto-loaded. */
	duckdb_set_config(cfg, "autoinstall_known_extensions", "false");
	duckdb_set_config(cfg, "autoload_known_extensions", "false");
	duckdb_set_config(cfg, "allow_community_extensions", "false");
	duckdb_state st = duckdb_open_ext(NULL, &s->db, cfg, &why);
	duckdb_destroy_config(&cfg);
	if (st != DuckDBSuccess) {
		rc = tt_error_set(err, TT_EBACKEND, "DuckDB: cannot open an in-memory database: %s",
				  why ? why : "unknown error");
		if (why)
			duckdb_free(why);
		free(s);
		return rc;
	}
	if (duckdb_connect(s->db, &s->con) != DuckDBSuccess) {
		duckdb_close(&s->db);
		free(s);
		return tt_error_set(err, TT_EBACKEND, "DuckDB: cannot connect to an in-memory database");
	}
	*out = s;
	return 0;
}

void tt_duck_session_close(tt_duck_session *s)
{
	if (!s)
		return;
	if (s->con)
		duckdb_disconnect(&s->con);
	if (s->db)
		duckdb_close(&s->db);
	for (size_t i = 0; i < s->nsecrets; i++) {
		memset(s->secrets[i], 0, strlen(s->secrets[i]));
		free(s->secrets[i]);
	}
	free(s->secrets);
	free(s);
}

void tt_duck_session_interrupt(tt_duck_session *s)
{
	if (s && s->con)
		duckdb_interrupt(s->con);
}

int tt_duck_session_add_secret(tt_duck_session *s, const char *secret)
{
	if (!secret || strlen(secret) < 3)
		return 0; /* too short to scrub without mangling the message */
	char **grown = realloc(s->secrets, (s->nsecrets + 1) * sizeof *grown);
	if (!grown)
		return TT_ENOMEM;
	s->secrets = grown;
	if (!(s->secrets[s->nsecrets] = tt_strdup(secret)))
		return TT_ENOMEM;
	s->nsecrets++;
	return 0;
}

/* err = "DuckDB: <prefix><message>" with every remembered credential
 * replaced by "***". */
static int fail(tt_duck_session *s, tt_error *err, const char *what, const char *message)
{
	/* DuckDB prefixes its own class ("Catalog Error: "): kept, it says what went wrong */
	char *m = tt_strdup(message ? message : "unknown error");
	for (size_t i = 0; m && i < s->nsecrets; i++) {
		const char *sec = s->secrets[i], *p = m, *hit;
		size_t sl = strlen(sec);
		if (!strstr(m, sec))
			continue;
		tt_buf b = TT_BUF_INIT;
		for (; (hit = strstr(p, sec)) != NULL; p = hit + sl) {
			tt_buf_put(&b, p, (size_t)(hit - p));
			tt_buf_puts(&b, "***");
		}
		tt_buf_puts(&b, p);
		free(m);
		m = b.failed ? (tt_buf_release(&b), NULL) : tt_buf_detach(&b);
	}
	int rc = !m ? tt_error_oom(err)
		    : tt_error_set(err, TT_EBACKEND, "DuckDB%s%s: %s", what ? ", " : "", what ? what : "", m);
	free(m);
	return rc;
}

static int exec_sql(tt_duck_session *s, const char *sql, const char *what, tt_error *err)
{
	duckdb_result res;
	if (duckdb_query(s->con, sql, &res) != DuckDBSuccess) {
		/* the statement itself is never part of the message */
		int rc = fail(s, err, what, duckdb_result_error(&res));
		duckdb_destroy_result(&res);
		return rc;
	}
	duckdb_destroy_result(&res);
	return 0;
}

int tt_duck_session_exec(tt_duck_session *s, const char *sql, const char *what, tt_error *err)
{
	return exec_sql(s, sql, what, err);
}

/* The credential parts of a literal: a URL's password (user:PASSWORD@, as
 * written and percent-decoded) and libpq's password=VALUE words. */
static int add_inner_secrets(tt_duck_session *s, const char *lit)
{
	int rc = 0;
	const char *sep = strstr(lit, "://");
	if (sep) {
		const char *auth = sep + 3, *end = auth + strcspn(auth, "/?#"), *at = NULL;
		for (const char *c = auth; c < end; c++)
			if (*c == '@')
				at = c;
		const char *colon = at ? memchr(auth, ':', (size_t)(at - auth)) : NULL;
		if (colon) {
			char *pw = tt_strndup(colon + 1, (size_t)(at - colon - 1)), *dec = pw ? tt_percent_decode(pw) : NULL;
			rc = !pw || !dec ? TT_ENOMEM : tt_duck_session_add_secret(s, pw);
			if (rc == 0)
				rc = tt_duck_session_add_secret(s, dec);
			free(pw);
			free(dec);
		}
	}
	for (const char *p = lit; rc == 0 && (p = strstr(p, "password")) != NULL; p += 8) {
		const char *v = p + 8;
		while (*v == ' ')
			v++;
		if (*v != '=')
			continue;
		for (v++; *v == ' '; v++)
			;
		size_t n = *v == '\'' ? strcspn(v + 1, "'") : strcspn(v, " \t\n");
		char *pw = tt_strndup(*v == '\'' ? v + 1 : v, n);
		rc = pw ? tt_duck_session_add_secret(s, pw) : TT_ENOMEM;
		free(pw);
	}
	return rc;
}

int tt_duck_session_exec_secret(tt_duck_session *s, const char *sql, const char *shown, const char *what,
				tt_error *err)
{
	/* Every string of the statement that the shown form does not show is
	 * a credential or part of one: scrubbed from this and every later
	 * message of the session. */
	json_t *lits = NULL, *v;
	size_t i;
	bool oom = tt_duck_sql_strings(sql, &lits) != 0;
	json_array_foreach(lits, i, v) {
		const char *lit = json_string_value(v);
		if (shown && strstr(shown, lit))
			continue; /* shown, so no credential */
		if (tt_duck_session_add_secret(s, lit) != 0 || add_inner_secrets(s, lit) != 0) {
			oom = true;
			break;
		}
	}
	json_decref(lits);
	return oom ? tt_error_oom(err) : exec_sql(s, sql, what, err);
}

/* --- streaming a result ---------------------------------------------------------- */

/* A materialized result handed over whole, as text (or JSON strings). */
static int give_materialized(tt_duck_session *s, duckdb_result *res, tt_duck_cells cells,
			     const tt_duck_sink *sink, tt_error *err)
{
	size_t nc = (size_t)duckdb_column_count(res), nr = (size_t)duckdb_row_count(res);
	const char **names = tt_calloc(nc ? nc : 1, sizeof *names);
	char **row = tt_calloc(nc ? nc : 1, sizeof *row);
	size_t *lens = tt_calloc(nc ? nc : 1, sizeof *lens);
	int rc = 0;
	(void)s;
	if (!names || !row || !lens) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t c = 0; c < nc; c++) {
		names[c] = duckdb_column_name(res, (idx_t)c);
		if (!names[c])
			names[c] = "";
	}
	if (sink->columns && (rc = sink->columns(sink->ctx, nc, names, NULL)) != 0)
		goto done;
	for (size_t r = 0; r < nr && rc == 0; r++) {
		for (size_t c = 0; c < nc; c++) {
			row[c] = NULL;
			lens[c] = 0;
			if (duckdb_value_is_null(res, (idx_t)c, (idx_t)r))
				continue;
			char *v = duckdb_value_varchar(res, (idx_t)c, (idx_t)r);
			if (cells == TT_DUCK_JSON) {
				json_t *js = json_string(v ? v : "");
				row[c] = js ? json_dumps(js, JSON_ENCODE_ANY) : NULL;
				json_decref(js);
			} else {
				row[c] = tt_strdup(v ? v : "");
			}
			if (v)
				duckdb_free(v);
			if (!row[c]) {
				rc = tt_error_oom(err);
				break;
			}
			lens[c] = strlen(row[c]);
		}
		if (rc == 0)
			rc = sink->row(sink->ctx, nc, (const char *const *)row, lens);
		for (size_t c = 0; c < nc; c++) {
			free(row[c]);
			row[c] = NULL;
		}
	}
done:
	free(names);
	free(row);
	free(lens);
	return rc;
}

/* Rows of a result whose every column is VARCHAR, chunk by chunk. */
static int give_streamed(tt_duck_session *s, duckdb_result *res, size_t nc, const tt_duck_sink *sink,
			 tt_error *err)
{
	const char **row = tt_calloc(nc ? nc : 1, sizeof *row);
	size_t *lens = tt_calloc(nc ? nc : 1, sizeof *lens);
	duckdb_string_t **data = tt_calloc(nc ? nc : 1, sizeof *data);
	uint64_t **valid = tt_calloc(nc ? nc : 1, sizeof *valid);
	int rc = 0;
	if (!row || !lens || !data || !valid) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (;;) {
		duckdb_data_chunk chunk = duckdb_fetch_chunk(*res);
		if (!chunk) {
			const char *e = duckdb_result_error(res);
			if (e)
				rc = fail(s, err, NULL, e);
			break;
		}
		idx_t n = duckdb_data_chunk_get_size(chunk);
		if (n == 0) {
			duckdb_destroy_data_chunk(&chunk);
			break;
		}
		for (size_t c = 0; c < nc; c++) {
			duckdb_vector v = duckdb_data_chunk_get_vector(chunk, (idx_t)c);
			data[c] = duckdb_vector_get_data(v);
			valid[c] = duckdb_vector_get_validity(v);
		}
		for (idx_t r = 0; r < n && rc == 0; r++) {
			for (size_t c = 0; c < nc; c++) {
				if (valid[c] && !(valid[c][r / 64] & ((uint64_t)1 << (r % 64)))) {
					row[c] = NULL;
					lens[c] = 0;
					continue;
				}
				duckdb_string_t *str = &data[c][r];
				uint32_t len = str->value.inlined.length;
				row[c] = len <= 12 ? str->value.inlined.inlined : str->value.pointer.ptr;
				lens[c] = len;
			}
			rc = sink->row(sink->ctx, nc, row, lens);
		}
		duckdb_destroy_data_chunk(&chunk);
		if (rc)
			break;
	}
done:
	free(row);
	free(lens);
	free(data);
	free(valid);
	return rc;
}

int tt_duck_session_stream(tt_duck_session *s, const char *sql, tt_duck_cells cells,
			   const tt_duck_sink *sink, tt_error *err)
{
	duckdb_extracted_statements ex = NULL;
	duckdb_prepared_statement ps = NULL, wrapped = NULL;
	duckdb_result res;
	json_t *pieces = NULL;
	char **names = NULL;
	size_t nc = 0;
	bool have_res = false;
	int rc = 0;

	idx_t n = duckdb_extract_statements(s->con, sql, &ex);
	if (n == 0) {
		const char *e = ex ? duckdb_extract_statements_error(ex) : NULL;
		rc = e ? fail(s, err, NULL, e) : tt_error_set(err, TT_EUSAGE, "the SQL holds no statement");
		goto done;
	}
	for (idx_t i = 0; i < n; i++) {
		if (duckdb_prepare_extracted_statement(s->con, ex, i, &ps) != DuckDBSuccess) {
			rc = fail(s, err, NULL, ps ? duckdb_prepare_error(ps) : NULL);
			goto done;
		}
		if (i + 1 < n) {
			if (duckdb_execute_prepared(ps, &res) != DuckDBSuccess) {
				rc = fail(s, err, NULL, duckdb_result_error(&res));
				duckdb_destroy_result(&res);
				goto done;
			}
			duckdb_destroy_result(&res);
			duckdb_destroy_prepare(&ps);
			ps = NULL;
		}
	}
	/* The last statement: a query streams, every column cast to text by
	 * DuckDB itself (or to the JSON its to_json gives), so each cell reads
	 * as DuckDB shows it and no value is converted here. */
	const char *last = NULL;
	if (tt_duck_split_sql(sql, &pieces) == 0 && json_array_size(pieces) == (size_t)n)
		last = json_string_value(json_array_get(pieces, (size_t)n - 1));
	if (duckdb_prepared_statement_type(ps) == DUCKDB_STATEMENT_TYPE_SELECT && last) {
		nc = (size_t)duckdb_prepared_statement_column_count(ps);
		names = tt_calloc(nc ? nc : 1, sizeof *names);
		if (!names) {
			rc = tt_error_oom(err);
			goto done;
		}
		for (size_t c = 0; c < nc; c++)
			names[c] = (char *)duckdb_prepared_statement_column_name(ps, (idx_t)c);
		char *w = tt_asprintf("SELECT %s FROM (\n%s\n) AS __tether_result",
				      cells == TT_DUCK_JSON ? "CAST(to_json(COLUMNS(*)) AS VARCHAR)"
							    : "CAST(COLUMNS(*) AS VARCHAR)",
				      last);
		if (!w) {
			rc = tt_error_oom(err);
			goto done;
		}
		/* The split text must be the statement DuckDB prepared: were it not
		 * (a statement the wrapping cannot hold, or a lexing disagreement),
		 * the statement runs as it is, its result whole. */
		if (nc && (duckdb_prepare(s->con, w, &wrapped) != DuckDBSuccess ||
			   duckdb_prepared_statement_column_count(wrapped) != (idx_t)nc)) {
			duckdb_destroy_prepare(&wrapped);
			wrapped = NULL;
		}
		free(w);
	}
	if (wrapped) {
		if (duckdb_execute_prepared_streaming(wrapped, &res) != DuckDBSuccess) {
			rc = fail(s, err, NULL, duckdb_result_error(&res));
			duckdb_destroy_result(&res);
			goto done;
		}
		have_res = true;
		if (sink->columns && (rc = sink->columns(sink->ctx, nc, (const char *const *)names, NULL)) != 0)
			goto done;
		rc = give_streamed(s, &res, nc, sink, err);
	} else {
		if (duckdb_execute_prepared(ps, &res) != DuckDBSuccess) {
			rc = fail(s, err, NULL, duckdb_result_error(&res));
			duckdb_destroy_result(&res);
			goto done;
		}
		have_res = true;
		rc = give_materialized(s, &res, cells, sink, err);
	}
done:
	if (have_res)
		duckdb_destroy_result(&res);
	if (names) {
		for (size_t c = 0; c < nc; c++)
			if (names[c])
				duckdb_free(names[c]);
		free(names);
	}
	if (wrapped)
		duckdb_destroy_prepare(&wrapped);
	if (ps)
		duckdb_destroy_prepare(&ps);
	if (ex)
		duckdb_destroy_extracted(&ex);
	json_decref(pieces);
	return rc;
}

/* --- a whole small result -------------------------------------------------------- */

typedef struct collect {
	tt_db_rows *out;
	size_t alloc;
	tt_error *err;
} collect;

static int collect_columns(void *ctx, size_t n, const char *const *names, const char *const *types)
{
	collect *c = ctx;
	(void)types;
	c->out->ncols = n;
	c->out->names = tt_calloc(n ? n : 1, sizeof *c->out->names);
	if (!c->out->names)
		return tt_error_oom(c->err);
	for (size_t i = 0; i < n; i++)
		if (!(c->out->names[i] = tt_strdup(names[i])))
			return tt_error_oom(c->err);
	return 0;
}

static int collect_row(void *ctx, size_t n, const char *const *cells, const size_t *lens)
{
	collect *c = ctx;
	tt_db_rows *o = c->out;
	if (o->nrows >= 100000)
		return tt_error_set(c->err, TT_ELIMIT, "DuckDB: more than 100000 rows where a few were expected");
	if ((o->nrows + 1) * n > c->alloc) {
		size_t want = c->alloc ? c->alloc * 2 : 64 * (n ? n : 1);
		char **grown = realloc(o->cells, want * sizeof *grown);
		if (!grown)
			return tt_error_oom(c->err);
		o->cells = grown;
		c->alloc = want;
	}
	for (size_t i = 0; i < n; i++) {
		char **slot = &o->cells[o->nrows * n + i];
		*slot = NULL;
		if (cells[i] && !(*slot = tt_strndup(cells[i], lens[i]))) {
			o->nrows++;
			return tt_error_oom(c->err);
		}
	}
	o->nrows++;
	return 0;
}

int tt_duck_session_rows(tt_duck_session *s, const char *sql, tt_db_rows *out, tt_error *err)
{
	memset(out, 0, sizeof *out);
	collect c = { .out = out, .err = err };
	tt_duck_sink sink = { .columns = collect_columns, .row = collect_row, .ctx = &c };
	int rc = tt_duck_session_stream(s, sql, TT_DUCK_TEXT, &sink, err);
	if (rc) {
		tt_db_rows_release(out);
		return rc < 0 ? rc : TT_EBACKEND;
	}
	return 0;
}
#endif
