/* db/db_pg.c - the PostgreSQL side of db.h, through libpq (loaded on the
 * first connection, db/pg_api.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/pg_api.h"
#include "util/mem.h"

static int pg_fail_conn(tt_db *db, tt_error *err, int code)
{
	PGconn *c = db->impl;
	return tt_db_fail(db, err, code, c ? PQerrorMessage(c) : "could not connect");
}

static int pg_fail_result(tt_db *db, tt_error *err, const PGresult *res)
{
	const char *primary = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
	const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
	int code = TT_EBACKEND;
	if (state && strcmp(state, "57014") == 0)  /* query_canceled: the statement timeout */
		code = TT_ELIMIT;
	return tt_db_fail(db, err, code, primary ? primary : PQresultErrorMessage(res));
}

static void row_values(const tt_db_value *params, size_t n, const char **values, char (*ints)[24]);

static int pg_exec(tt_db *db, const char *sql, const tt_db_value *params, size_t n, tt_db_rows *out,
		   tt_error *err)
{
	PGconn *c = db->impl;
	const char **values = tt_calloc(n ? n : 1, sizeof *values);
	char (*ints)[24] = tt_calloc(n ? n : 1, sizeof *ints);
	if (!values || !ints) {
		free(values);
		free(ints);
		return tt_error_oom(err);
	}
	row_values(params, n, values, ints);
	/* The extended protocol: one statement, parameters never in the text. */
	int sent = PQsendQueryParams(c, sql, (int)n, NULL, values, NULL, NULL, 0);
	free(values);
	free(ints);
	if (!sent)
		return pg_fail_conn(db, err, TT_EBACKEND);
	if (out)
		PQsetSingleRowMode(c);
	int ret = 0;
	size_t bytes = 0, alloc = 0;
	bool named = false;
	PGresult *res;
	while ((res = PQgetResult(c))) {
		ExecStatusType st = PQresultStatus(res);
		if (ret < 0) {
			PQclear(res);
			continue;
		}
		if (st == PGRES_SINGLE_TUPLE || st == PGRES_TUPLES_OK) {
			if (out && !named) {
				out->ncols = (size_t)PQnfields(res);
				out->names = tt_calloc(out->ncols ? out->ncols : 1, sizeof *out->names);
				if (!out->names) {
					out->ncols = 0;
					ret = tt_error_oom(err);
				}
				for (size_t k = 0; ret == 0 && k < out->ncols; k++)
					if (!(out->names[k] = tt_strdup(PQfname(res, (int)k))))
						ret = tt_error_oom(err);
				named = true;
			}
			for (int r = 0; out && ret == 0 && r < PQntuples(res); r++) {
				char **row = tt_calloc(out->ncols ? out->ncols : 1, sizeof *row);
				if (!row) {
					ret = tt_error_oom(err);
					break;
				}
				for (size_t k = 0; k < out->ncols; k++)
					if (!PQgetisnull(res, r, (int)k))
						row[k] = tt_strdup(PQgetvalue(res, r, (int)k));
				ret = tt_db_rows_push(db, out, row, &bytes, &alloc, err);
				free(row);
			}
			if (ret < 0) {
				/* Past the cap: stop the server rather than drain it. */
				PGcancel *cancel = PQgetCancel(c);
				char buf[256];
				if (cancel) {
					PQcancel(cancel, buf, sizeof buf);
					PQfreeCancel(cancel);
				}
			}
		} else if (st != PGRES_COMMAND_OK && st != PGRES_EMPTY_QUERY) {
			ret = pg_fail_result(db, err, res);
		}
		PQclear(res);
	}
	if (ret == 0 && PQstatus(c) != CONNECTION_OK)
		ret = pg_fail_conn(db, err, TT_EBACKEND);
	return ret;
}

/* Text values of one parameter row (ints formatted into ints). */
static void row_values(const tt_db_value *params, size_t n, const char **values, char (*ints)[24])
{
	for (size_t i = 0; i < n; i++) {
		values[i] = NULL;
		if (params[i].type == TT_DB_INT) {
			snprintf(ints[i], sizeof ints[i], "%lld", params[i].i);
			values[i] = ints[i];
		} else if (params[i].type == TT_DB_TEXT) {
			values[i] = params[i].text;
		}
	}
}

/* Prepared once, then sent in pipelined batches: one round trip per batch
 * rather than per row. */
static int pg_exec_many(tt_db *db, const char *sql, const tt_db_value *params, size_t ncols, size_t nrows,
			tt_error *err)
{
	PGconn *c = db->impl;
	enum { BATCH = 512 };
	PGresult *res = PQprepare(c, "", sql, (int)ncols, NULL);
	int ret = 0;
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		ret = pg_fail_result(db, err, res);
	PQclear(res);
	if (ret < 0)
		return ret;
	const char **values = tt_calloc(ncols ? ncols : 1, sizeof *values);
	char (*ints)[24] = tt_calloc(ncols ? ncols : 1, sizeof *ints);
	if (!values || !ints || !PQenterPipelineMode(c)) {
		free(values);
		free(ints);
		return values && ints ? pg_fail_conn(db, err, TT_EBACKEND) : tt_error_oom(err);
	}
	for (size_t start = 0; ret == 0 && start < nrows; start += BATCH) {
		size_t end = start + BATCH < nrows ? start + BATCH : nrows;
		for (size_t r = start; ret == 0 && r < end; r++) {
			row_values(params + r * ncols, ncols, values, ints);
			if (!PQsendQueryPrepared(c, "", (int)ncols, values, NULL, NULL, 0))
				ret = pg_fail_conn(db, err, TT_EBACKEND);
		}
		if (ret == 0 && !PQpipelineSync(c))
			ret = pg_fail_conn(db, err, TT_EBACKEND);
		if (ret < 0)
			break;
		for (;;) {
			res = PQgetResult(c);
			if (!res) {
				if (PQstatus(c) != CONNECTION_OK) {
					if (ret == 0)
						ret = pg_fail_conn(db, err, TT_EBACKEND);
					break;
				}
				continue;
			}
			ExecStatusType st = PQresultStatus(res);
			if (st == PGRES_PIPELINE_SYNC) {
				PQclear(res);
				break;
			}
			if (ret == 0 && st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK && st != PGRES_PIPELINE_ABORTED)
				ret = pg_fail_result(db, err, res);
			PQclear(res);
		}
	}
	PQexitPipelineMode(c);
	free(values);
	free(ints);
	return ret;
}

static void pg_close(tt_db *db)
{
	if (db->impl)
		PQfinish(db->impl);
	db->impl = NULL;
}

/* The library never prints: the server's notices ("already exists,
 * skipping") are dropped instead of going to stderr. */
static void quiet(void *arg, const char *message)
{
	(void)arg;
	(void)message;
}

static const tt_db_ops pg_ops = { "postgres", pg_exec, pg_exec_many, pg_close };

int tt_db_pg_open(tt_db *db, const char *dsn, tt_error *err)
{
	char *perr = NULL;
	db->ops = &pg_ops;
	int lrc = tt_pg_load(err);
	if (lrc < 0)
		return lrc;
	PQconninfoOption *info = PQconninfoParse(dsn, &perr);
	if (!info) {
		/* libpq's words about a malformed string never quote the password. */
		int rc = tt_error_set(err, TT_ECONFIG, "invalid PostgreSQL connection string: %s",
				      perr ? perr : "could not parse it");
		tt_error_hint(err, "use postgresql://USER@HOST:PORT/DATABASE (the password from ~/.pgpass or PGPASSWORD)");
		PQfreemem(perr);
		return rc;
	}
	const char *host = NULL, *port = NULL, *dbname = NULL, *user = NULL;
	for (PQconninfoOption *o = info; o->keyword; o++) {
		if (!o->val)
			continue;
		if (!strcmp(o->keyword, "host") || (!strcmp(o->keyword, "hostaddr") && !host))
			host = o->val;
		else if (!strcmp(o->keyword, "port"))
			port = o->val;
		else if (!strcmp(o->keyword, "dbname"))
			dbname = o->val;
		else if (!strcmp(o->keyword, "user"))
			user = o->val;
		else if (!strcmp(o->keyword, "password") && *o->val)
			db->secret = tt_strdup(o->val);
	}
	db->where = tt_asprintf("PostgreSQL database '%s' on server %s:%s", dbname ? dbname : (user ? user : "(default)"),
				host ? host : "localhost", port ? port : "5432");
	PQconninfoFree(info);
	if (!db->where)
		return tt_error_oom(err);
	char timeout[16];
	int secs = (db->opts.timeout_ms + 999) / 1000;
	snprintf(timeout, sizeof timeout, "%d", secs < 2 ? 2 : secs);
	const char *const keys[] = { "dbname", "connect_timeout", "application_name", NULL };
	const char *const vals[] = { dsn, timeout, "tether", NULL };
	PGconn *c = PQconnectdbParams(keys, vals, 1);
	db->impl = c;
	if (!c)
		return tt_error_oom(err);
	if (PQstatus(c) != CONNECTION_OK)
		return pg_fail_conn(db, err, TT_EBACKEND);
	PQsetNoticeProcessor(c, quiet, NULL);
	char set[64];
	snprintf(set, sizeof set, "SET statement_timeout = %d", db->opts.timeout_ms);
	int rc = pg_exec(db, set, NULL, 0, NULL, err);
	if (rc == 0 && db->opts.read_only)
		rc = pg_exec(db, "SET default_transaction_read_only = on", NULL, 0, NULL, err);
	return rc;
}
