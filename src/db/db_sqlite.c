/* db/db_sqlite.c - the SQLite side of db.h, through sqlite3. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "db/db.h"
#include "util/mem.h"

typedef struct sq_impl {
	sqlite3 *h;
	struct timespec deadline;
	bool armed;
} sq_impl;

static int progress(void *ctx)
{
	sq_impl *s = ctx;
	if (!s->armed)
		return 0;
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return now.tv_sec > s->deadline.tv_sec ||
	       (now.tv_sec == s->deadline.tv_sec && now.tv_nsec > s->deadline.tv_nsec);
}

static void arm(sq_impl *s, int ms)
{
	clock_gettime(CLOCK_MONOTONIC, &s->deadline);
	s->deadline.tv_sec += ms / 1000;
	s->deadline.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (s->deadline.tv_nsec >= 1000000000L) {
		s->deadline.tv_sec++;
		s->deadline.tv_nsec -= 1000000000L;
	}
	s->armed = true;
}

/* Only blanks and comments after the first statement. */
static bool only_trivia(const char *p)
{
	while (*p) {
		if (isspace((unsigned char)*p) || *p == ';') {
			p++;
		} else if (p[0] == '-' && p[1] == '-') {
			while (*p && *p != '\n')
				p++;
		} else if (p[0] == '/' && p[1] == '*') {
			const char *e = strstr(p + 2, "*/");
			if (!e)
				return true;
			p = e + 2;
		} else {
			return false;
		}
	}
	return true;
}

static int sq_fail(tt_db *db, tt_error *err, int rc)
{
	sq_impl *s = db->impl;
	if (rc == SQLITE_INTERRUPT) {
		char msg[96];
		snprintf(msg, sizeof msg, "the statement ran longer than %d ms and was stopped", db->opts.timeout_ms);
		return tt_db_fail(db, err, TT_ELIMIT, msg);
	}
	return tt_db_fail(db, err, TT_EBACKEND, sqlite3_errmsg(s->h));
}

/* Bind $1..$n by name (a statement may leave some out). */
static int bind(sqlite3_stmt *st, const tt_db_value *params, size_t n)
{
	int rc = SQLITE_OK;
	for (size_t i = 0; rc == SQLITE_OK && i < n; i++) {
		char name[24];
		snprintf(name, sizeof name, "$%zu", i + 1);
		int idx = sqlite3_bind_parameter_index(st, name);
		if (idx == 0)
			continue;
		if (params[i].type == TT_DB_NULL)
			rc = sqlite3_bind_null(st, idx);
		else if (params[i].type == TT_DB_INT)
			rc = sqlite3_bind_int64(st, idx, params[i].i);
		else
			rc = sqlite3_bind_text(st, idx, params[i].text, -1, SQLITE_STATIC);
	}
	return rc;
}

static int sq_prepare(tt_db *db, const char *sql, sqlite3_stmt **st, tt_error *err)
{
	sq_impl *s = db->impl;
	const char *tail = NULL;
	int rc = sqlite3_prepare_v2(s->h, sql, -1, st, &tail);
	if (rc != SQLITE_OK)
		return sq_fail(db, err, rc);
	if (!*st)
		return tt_db_fail(db, err, TT_EUSAGE, "the statement is empty");
	if (tail && !only_trivia(tail))
		return tt_db_fail(db, err, TT_ECONFIG, "only one SQL statement may run here; remove what follows the first");
	if (db->opts.read_only && !sqlite3_stmt_readonly(*st))
		return tt_db_fail(db, err, TT_ECONFIG, "the database is open read-only and this statement writes; "
					     "only a query that reads is allowed");
	return 0;
}

static int sq_exec_many(tt_db *db, const char *sql, const tt_db_value *params, size_t ncols, size_t nrows,
			tt_error *err)
{
	sq_impl *s = db->impl;
	sqlite3_stmt *st = NULL;
	int ret = sq_prepare(db, sql, &st, err);
	arm(s, db->opts.timeout_ms);
	for (size_t r = 0; ret == 0 && r < nrows; r++) {
		int rc = bind(st, params + r * ncols, ncols);
		while (rc == SQLITE_OK && (rc = sqlite3_step(st)) == SQLITE_ROW)
			;
		if (rc != SQLITE_DONE && rc != SQLITE_OK)
			ret = sq_fail(db, err, rc);
		sqlite3_reset(st);
		sqlite3_clear_bindings(st);
	}
	s->armed = false;
	sqlite3_finalize(st);
	return ret;
}

static int sq_exec(tt_db *db, const char *sql, const tt_db_value *params, size_t n, tt_db_rows *out,
		   tt_error *err)
{
	sq_impl *s = db->impl;
	sqlite3_stmt *st = NULL;
	int rc, ret = sq_prepare(db, sql, &st, err);
	if (ret < 0)
		goto done;
	if ((rc = bind(st, params, n)) != SQLITE_OK) {
		ret = sq_fail(db, err, rc);
		goto done;
	}
	size_t bytes = 0, alloc = 0;
	if (out) {
		out->ncols = (size_t)sqlite3_column_count(st);
		out->names = tt_calloc(out->ncols ? out->ncols : 1, sizeof *out->names);
		if (!out->names) {
			out->ncols = 0;
			ret = tt_error_oom(err);
			goto done;
		}
		for (size_t c = 0; c < out->ncols; c++) {
			const char *nm = sqlite3_column_name(st, (int)c);
			if (!(out->names[c] = tt_strdup(nm ? nm : ""))) {
				ret = tt_error_oom(err);
				goto done;
			}
		}
	}
	arm(s, db->opts.timeout_ms);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!out)
			continue;
		char **row = tt_calloc(out->ncols ? out->ncols : 1, sizeof *row);
		if (!row) {
			ret = tt_error_oom(err);
			goto done;
		}
		for (size_t c = 0; c < out->ncols; c++) {
			if (sqlite3_column_type(st, (int)c) == SQLITE_NULL)
				continue;
			const unsigned char *t = sqlite3_column_text(st, (int)c);
			row[c] = tt_strdup(t ? (const char *)t : "");
		}
		ret = tt_db_rows_push(db, out, row, &bytes, &alloc, err);
		free(row);
		if (ret < 0)
			goto done;
	}
	if (rc != SQLITE_DONE)
		ret = sq_fail(db, err, rc);
done:
	s->armed = false;
	sqlite3_finalize(st);
	return ret;
}

static void sq_close(tt_db *db)
{
	sq_impl *s = db->impl;
	if (s) {
		sqlite3_close_v2(s->h);
		free(s);
	}
	db->impl = NULL;
}

static const tt_db_ops sqlite_ops = { "sqlite", sq_exec, sq_exec_many, sq_close };

int tt_db_sqlite_open(tt_db *db, const char *path, tt_error *err)
{
	sq_impl *s = tt_calloc(1, sizeof *s);
	if (!s)
		return tt_error_oom(err);
	db->ops = &sqlite_ops;
	db->impl = s;
	if (!(db->where = tt_asprintf("SQLite database %s", path)))
		return tt_error_oom(err);
	int flags = db->opts.read_only ? SQLITE_OPEN_READONLY
				       : SQLITE_OPEN_READWRITE | (db->opts.create ? SQLITE_OPEN_CREATE : 0);
	int rc = sqlite3_open_v2(path, &s->h, flags | SQLITE_OPEN_NOMUTEX, NULL);
	if (rc != SQLITE_OK) {
		const char *why = s->h ? sqlite3_errmsg(s->h) : sqlite3_errstr(rc);
		return tt_db_fail(db, err, rc == SQLITE_CANTOPEN ? TT_ENOTFOUND : TT_EBACKEND, why);
	}
	sqlite3_busy_timeout(s->h, db->opts.timeout_ms);
	sqlite3_progress_handler(s->h, 1000, progress, s);
	sqlite3_extended_result_codes(s->h, 0);
	/* A file that is not a database fails here, not on the first query. */
	return sq_exec(db, "SELECT count(*) FROM sqlite_master", NULL, 0, NULL, err);
}
