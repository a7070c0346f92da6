/*
 * backends/ducklake/ducklake_duck.c - DuckDB-file DuckLake catalogs through
 * libduckdb's C API, loaded on first use by db/duck_api (see ducklake.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ducklake/ducklake.h"
#include "db/duck_api.h"
#include "util/mem.h"

/* libduckdb loaded, or the loader's error with what needed it. */
static int duck_ready(const char *path, tt_error *err)
{
	int rc = tt_duck_load(err);
	if (rc)
		tt_error_prefix(err, "cannot read the DuckDB-file DuckLake catalog %s (SQLite and PostgreSQL "
				"catalogs need no libduckdb)", path);
	return rc;
}

#ifndef TT_HAVE_DUCKDB_H

int tt_duck_open(tt_duck **out, const char *path, tt_error *err)
{
	*out = NULL;
	return duck_ready(path, err);
}

int tt_duck_query(tt_duck *d, const char *sql, const tt_db_value *params, size_t n,
		  tt_db_rows *out, tt_error *err)
{
	(void)d, (void)sql, (void)params, (void)n;
	memset(out, 0, sizeof *out);
	return duck_ready("(none)", err);
}

void tt_duck_close(tt_duck *d)
{
	(void)d;
}

#else

/*
 * A DuckDB file is held (opened, which takes its file lock) only while one
 * query runs: DuckDB lets a single process open a database file for
 * writing and refuses it while any reader has it open, so a handle held
 * for a whole command would lock a DuckLake writer out for that long.  Each
 * query opens, connects, runs and closes; queries are keyed by snapshot
 * id, so a commit landing between two of them does not mix states.
 */
struct tt_duck {
	duckdb_database db;
	duckdb_connection con;
	char *path;
};

static void duck_release(tt_duck *d)
{
	if (d->con)
		duckdb_disconnect(&d->con);
	if (d->db)
		duckdb_close(&d->db);
	d->con = NULL;
	d->db = NULL;
}

void tt_duck_close(tt_duck *d)
{
	if (!d)
		return;
	duck_release(d);
	free(d->path);
	free(d);
}

/* Open the file read-only and connect (held until duck_release). */
static int duck_hold(tt_duck *d, tt_error *err)
{
	duckdb_config cfg = NULL;
	char *why = NULL;
	const char *path = d->path;
	/* Read-only, one thread, nothing fetched or loaded from elsewhere: a
	 * file another process writes fails on its lock at once. */
	if (duckdb_create_config(&cfg) != DuckDBSuccess)
		return tt_error_oom(err);
	duckdb_set_config(cfg, "access_mode", "READ_ONLY");
	duckdb_set_config(cfg, "threads", "1");
	duckdb_set_config(cfg, "autoinstall_known_extensions", "false");
	duckdb_set_config(cfg, "autoload_known_extensions", "false");
	duckdb_state st = duckdb_open_ext(path, &d->db, cfg, &why);
	duckdb_destroy_config(&cfg);
	if (st != DuckDBSuccess) {
		const char *w = why ? why : "could not open it";
		int rc;
		if (strstr(w, "lock"))
			rc = tt_error_set(err, TT_EBACKEND,
					  "DuckDB catalog %s is open in another process (%s)", path, w);
		else
			rc = tt_error_set(err, TT_EBACKEND,
					  "%s is not a readable DuckDB database: %s", path, w);
		if (strstr(w, "lock"))
			tt_error_hint(err, "close the DuckDB session writing it (DuckDB lets one process "
					   "open a database file for writing), or keep the catalog in "
					   "SQLite or PostgreSQL");
		if (why)
			duckdb_free(why);
		d->db = NULL;
		return rc;
	}
	if (duckdb_connect(d->db, &d->con) != DuckDBSuccess) {
		d->con = NULL;
		duck_release(d);
		return tt_error_set(err, TT_EBACKEND, "DuckDB catalog %s: cannot connect", path);
	}
	return 0;
}

int tt_duck_open(tt_duck **out, const char *path, tt_error *err)
{
	int rc;
	*out = NULL;
	if ((rc = duck_ready(path, err)) != 0)
		return rc;
	tt_duck *d = tt_calloc(1, sizeof *d);
	if (!d || !(d->path = tt_strdup(path))) {
		free(d);
		return tt_error_oom(err);
	}
	/* Opened once here so that a file that is not DuckDB's, or is locked,
	 * is reported now; then let go until the first query. */
	if ((rc = duck_hold(d, err)) != 0) {
		tt_duck_close(d);
		return rc;
	}
	duck_release(d);
	*out = d;
	return 0;
}

static int duck_query(tt_duck *d, const char *sql, const tt_db_value *params, size_t n,
		      tt_db_rows *out, tt_error *err);

int tt_duck_query(tt_duck *d, const char *sql, const tt_db_value *params, size_t n,
		  tt_db_rows *out, tt_error *err)
{
	int rc;
	memset(out, 0, sizeof *out);
	if ((rc = duck_hold(d, err)) != 0)
		return rc;
	rc = duck_query(d, sql, params, n, out, err);
	duck_release(d);
	return rc;
}

static int duck_query(tt_duck *d, const char *sql, const tt_db_value *params, size_t n,
		      tt_db_rows *out, tt_error *err)
{
	duckdb_prepared_statement ps = NULL;
	duckdb_result res;
	int rc = 0;
	memset(out, 0, sizeof *out);
	if (duckdb_prepare(d->con, sql, &ps) != DuckDBSuccess) {
		const char *e = ps ? duckdb_prepare_error(ps) : NULL;
		rc = tt_error_set(err, TT_EBACKEND, "DuckDB catalog %s: %s", d->path, e ? e : "cannot prepare");
		duckdb_destroy_prepare(&ps);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		idx_t k = (idx_t)i + 1;
		duckdb_state s = params[i].type == TT_DB_INT ? duckdb_bind_int64(ps, k, params[i].i)
				 : params[i].type == TT_DB_TEXT ? duckdb_bind_varchar(ps, k, params[i].text)
								: duckdb_bind_null(ps, k);
		if (s != DuckDBSuccess) {
			duckdb_destroy_prepare(&ps);
			return tt_error_set(err, TT_EBACKEND, "DuckDB catalog %s: cannot bind $%zu", d->path,
					    i + 1);
		}
	}
	if (duckdb_execute_prepared(ps, &res) != DuckDBSuccess) {
		const char *e = duckdb_result_error(&res);
		rc = tt_error_set(err, TT_EBACKEND, "DuckDB catalog %s: %s", d->path, e ? e : "query failed");
		duckdb_destroy_result(&res);
		duckdb_destroy_prepare(&ps);
		return rc;
	}
	size_t nc = (size_t)duckdb_column_count(&res), nr = (size_t)duckdb_row_count(&res);
	out->ncols = nc;
	out->names = tt_calloc(nc ? nc : 1, sizeof *out->names);
	out->cells = tt_calloc(nc && nr ? nc * nr : 1, sizeof *out->cells);
	if (!out->names || !out->cells)
		rc = tt_error_oom(err);
	else
		out->nrows = nr;
	for (size_t c = 0; rc == 0 && c < nc; c++) {
		const char *nm = duckdb_column_name(&res, (idx_t)c);
		if (!(out->names[c] = tt_strdup(nm ? nm : "")))
			rc = tt_error_oom(err);
	}
	for (size_t r = 0; rc == 0 && r < nr; r++) {
		for (size_t c = 0; rc == 0 && c < nc; c++) {
			if (duckdb_value_is_null(&res, (idx_t)c, (idx_t)r))
				continue;
			char *v = duckdb_value_varchar(&res, (idx_t)c, (idx_t)r);
			out->cells[r * nc + c] = tt_strdup(v ? v : "");
			if (v)
				duckdb_free(v);
			if (!out->cells[r * nc + c])
				rc = tt_error_oom(err);
		}
	}
	duckdb_destroy_result(&res);
	duckdb_destroy_prepare(&ps);
	if (rc)
		tt_db_rows_release(out);
	return rc;
}

#endif
