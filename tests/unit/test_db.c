/* Unit tests: the db layer over SQLite (PostgreSQL is exercised by the
 * e2e registry tests against a real server) and the Parquet writer read
 * back by the Parquet reader. */
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "formats/parquet.h"
#include "harness.h"
#include "util/buf.h"
#include "util/mem.h"

static char *db_path(const char *name)
{
	return tt_asprintf("%s/%s", tt_test_tmpdir(), name);
}

static tt_db *open_db(const char *path, bool read_only)
{
	tt_db *db = NULL;
	tt_error err = TT_ERROR_INIT;
	tt_db_opts o = { .read_only = read_only, .create = !read_only, .max_rows = 3 };
	if (tt_db_open(&db, path, &o, &err) < 0) {
		fprintf(stderr, "open: %s\n", tt_error_text(&err));
		tt_error_clear(&err);
	}
	return db;
}

TT_TEST(sqlite_bound_parameters_round_trip)
{
	char *path = db_path("a.sqlite");
	tt_db *db = open_db(path, false);
	tt_error err = TT_ERROR_INIT;
	CHECK(db != NULL);
	CHECK_STR(tt_db_kind(db), "sqlite");
	CHECK(tt_db_exec(db, "CREATE TABLE t (k TEXT PRIMARY KEY, n INTEGER)", NULL, 0, &err) == 0);
	/* A value that would break a spliced statement is just a value. */
	tt_db_value rows[] = { { TT_DB_TEXT, "x'); DROP TABLE t; --", 0 }, { TT_DB_INT, NULL, 7 },
			       { TT_DB_TEXT, "y", 0 }, { TT_DB_NULL, NULL, 0 } };
	CHECK(tt_db_begin(db, false, &err) == 0);
	CHECK(tt_db_exec_many(db, "INSERT INTO t (k, n) VALUES ($1, $2)", rows, 2, 2, &err) == 0);
	CHECK(tt_db_commit(db, &err) == 0);
	tt_db_rows r;
	tt_db_value want = { TT_DB_INT, NULL, 7 };
	CHECK(tt_db_query(db, "SELECT k, n FROM t WHERE n = $1", &want, 1, &r, &err) == 0);
	CHECK_INT(r.nrows, 1);
	CHECK_STR(r.names[0], "k");
	CHECK_STR(r.cells[0], "x'); DROP TABLE t; --");
	CHECK_STR(r.cells[1], "7");
	tt_db_rows_release(&r);
	CHECK(tt_db_query(db, "SELECT n FROM t WHERE k = 'y'", NULL, 0, &r, &err) == 0);
	CHECK(r.nrows == 1 && r.cells[0] == NULL);
	tt_db_rows_release(&r);
	/* A rolled-back transaction leaves nothing. */
	CHECK(tt_db_begin(db, false, &err) == 0);
	CHECK(tt_db_exec(db, "DELETE FROM t", NULL, 0, &err) == 0);
	tt_db_rollback(db);
	CHECK(tt_db_query(db, "SELECT count(*) FROM t", NULL, 0, &r, &err) == 0);
	CHECK_STR(r.cells[0], "2");
	tt_db_rows_release(&r);
	tt_db_close(db);
	free(path);
}

TT_TEST(sqlite_refuses_second_statement_writes_and_big_results)
{
	char *path = db_path("b.sqlite");
	tt_db *db = open_db(path, false);
	tt_error err = TT_ERROR_INIT;
	CHECK(db != NULL);
	CHECK(tt_db_exec(db, "CREATE TABLE t (k TEXT)", NULL, 0, &err) == 0);
	CHECK(tt_db_exec(db, "INSERT INTO t VALUES ('a'), ('b'), ('c'), ('d')", NULL, 0, &err) == 0);
	CHECK(tt_db_exec(db, "SELECT 1; -- a comment\n", NULL, 0, &err) == 0);
	CHECK(tt_db_exec(db, "SELECT 1; DROP TABLE t", NULL, 0, &err) == TT_ECONFIG);
	CHECK(strstr(tt_error_text(&err), "only one SQL statement") != NULL);
	tt_error_clear(&err);
	tt_db_close(db);

	db = open_db(path, true);
	CHECK(db != NULL);
	tt_db_rows r;
	CHECK(tt_db_query(db, "DELETE FROM t RETURNING k", NULL, 0, &r, &err) == TT_ECONFIG);
	CHECK(strstr(tt_error_text(&err), "read-only") != NULL);
	CHECK(strstr(tt_error_text(&err), path) != NULL);
	tt_error_clear(&err);
	tt_db_rows_release(&r);
	/* Four rows against a cap of three. */
	CHECK(tt_db_query(db, "SELECT k FROM t", NULL, 0, &r, &err) == TT_ELIMIT);
	tt_error_clear(&err);
	tt_db_rows_release(&r);
	CHECK(tt_db_query(db, "SELECT k FROM t LIMIT 3", NULL, 0, &r, &err) == 0);
	CHECK_INT(r.nrows, 3);
	tt_db_rows_release(&r);
	tt_db_close(db);
	free(path);
}

TT_TEST(sqlite_statement_timeout)
{
	char *path = db_path("c.sqlite");
	tt_db *db = NULL;
	tt_error err = TT_ERROR_INIT;
	tt_db_opts o = { .create = true, .timeout_ms = 200 };
	CHECK(tt_db_open(&db, path, &o, &err) == 0);
	tt_db_rows r;
	/* A query that never ends is stopped at the deadline. */
	int rc = tt_db_query(db, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
				 "SELECT count(*) FROM c", NULL, 0, &r, &err);
	CHECK_INT(rc, TT_ELIMIT);
	CHECK(strstr(tt_error_text(&err), "longer than 200 ms") != NULL);
	tt_error_clear(&err);
	tt_db_rows_release(&r);
	/* The connection stays usable. */
	CHECK(tt_db_query(db, "SELECT 42", NULL, 0, &r, &err) == 0);
	CHECK_STR(r.cells[0], "42");
	tt_db_rows_release(&r);
	tt_db_close(db);
	free(path);
}

TT_TEST(sqlite_open_errors_name_the_file)
{
	tt_db *db = NULL;
	tt_error err = TT_ERROR_INIT;
	char *path = db_path("missing.sqlite");
	tt_db_opts o = { .read_only = true };
	CHECK(tt_db_open(&db, path, &o, &err) < 0 && db == NULL);
	CHECK(strstr(tt_error_text(&err), path) != NULL);
	tt_error_clear(&err);
	free(path);
}

TT_TEST(postgres_dsn_errors_never_show_the_password)
{
	tt_db *db = NULL;
	tt_error err = TT_ERROR_INIT;
	tt_db_opts o = { .timeout_ms = 2000 };
	/* Nothing listens on port 1. */
	int rc = tt_db_open(&db, "postgresql://u:hunter2secret@127.0.0.1:1/reg", &o, &err);
	CHECK(rc == TT_EBACKEND && db == NULL);
	CHECK(strstr(tt_error_text(&err), "PostgreSQL database 'reg' on server 127.0.0.1:1") != NULL);
	CHECK(strstr(tt_error_text(&err), "hunter2secret") == NULL);
	tt_error_clear(&err);
	CHECK(tt_db_open(&db, "postgresql://u:pw@host:notaport/x?bogus=1", &o, &err) == TT_ECONFIG);
	CHECK(strstr(tt_error_text(&err), ":pw@") == NULL);
	tt_error_clear(&err);
	CHECK(tt_db_identifier_ok("tether_2"));
	CHECK(!tt_db_identifier_ok("2x") && !tt_db_identifier_ok("a;b") && !tt_db_identifier_ok(""));
}

static int collect(void *ctx, int64_t row, const unsigned char *s, size_t n, tt_error *err)
{
	tt_buf *b = ctx;
	tt_buf_printf(b, "%lld=%.*s|", (long long)row, (int)n, (const char *)s);
	return 0;
}

TT_TEST(parquet_writer_read_back)
{
	tt_parquet_column cols[] = { { "name", TT_PARQUET_STRING }, { "n", TT_PARQUET_INT64 },
				     { "ok", TT_PARQUET_BOOL } };
	tt_parquet_cell cells[] = {
		{ false, "alpha", 5, 0 }, { false, NULL, 0, -3 }, { false, NULL, 0, 1 },
		{ true, NULL, 0, 0 }, { true, NULL, 0, 0 }, { false, NULL, 0, 0 },
		{ false, "", 0, 0 }, { false, NULL, 0, 1LL << 40 }, { true, NULL, 0, 0 },
	};
	tt_buf file = TT_BUF_INIT, got = TT_BUF_INIT;
	tt_error err = TT_ERROR_INIT;
	CHECK(tt_parquet_write(&file, cols, 3, cells, 3, "test", &err) == 0);
	CHECK(file.len > 12 && memcmp(file.ptr, "PAR1", 4) == 0 && memcmp(file.ptr + file.len - 4, "PAR1", 4) == 0);
	const char *path[] = { "name" };
	bool found = false;
	CHECK(tt_parquet_strings((const unsigned char *)file.ptr, file.len, "t.parquet", path, 1, collect, &got,
				 &found, &err) == 0);
	CHECK(found);
	tt_buf_putc(&got, '\0');
	CHECK_STR(got.ptr, "0=alpha|2=|");
	/* An empty table is a valid file with no row group. */
	tt_buf_reset(&file);
	tt_buf_reset(&got);
	CHECK(tt_parquet_write(&file, cols, 3, cells, 0, NULL, &err) == 0);
	CHECK(tt_parquet_strings((const unsigned char *)file.ptr, file.len, "e.parquet", path, 1, collect, &got,
				 &found, &err) == 0);
	CHECK(found && got.len == 0);
	tt_buf_release(&file);
	tt_buf_release(&got);
}

/* ---- The same checks against real servers -------------------------------
 * TETHER_TEST_MYSQL and TETHER_TEST_PG name a database on a running server
 * (a URL with the password in it); tests/e2e/test_db_servers.py starts
 * MariaDB and PostgreSQL on 127.0.0.1 and runs this binary with both set,
 * and checks the "ran:" lines below, so these cases cannot pass by not
 * running.  Without the variables they do nothing. */

static tt_db *open_server(const char *dsn, bool read_only, int timeout_ms)
{
	tt_db *db = NULL;
	tt_error err = TT_ERROR_INIT;
	tt_db_opts o = { .read_only = read_only, .max_rows = 3, .timeout_ms = timeout_ms };
	if (tt_db_open(&db, dsn, &o, &err) < 0) {
		fprintf(stderr, "open %s: %s\n", tt_db_is_mysql(dsn) ? "mysql" : "pg", tt_error_text(&err));
		tt_error_clear(&err);
	}
	return db;
}

/* dsn with its password replaced by a wrong one. */
static char *wrong_password(const char *dsn, const char *password)
{
	const char *p = strstr(dsn, password);
	if (!p)
		return NULL;
	return tt_asprintf("%.*sWRONG-%s%s", (int)(p - dsn), dsn, password, p + strlen(password));
}

static void server_suite(const char *env, const char *kind)
{
	const char *dsn = getenv(env);
	const char *password = getenv("TETHER_TEST_DB_PASSWORD");
	if (!dsn || !*dsn)
		return;
	tt_error err = TT_ERROR_INIT;
	tt_db *db = open_server(dsn, false, 5000);
	CHECK(db != NULL);
	CHECK_STR(tt_db_kind(db), kind);
	CHECK(strstr(tt_db_where(db), "127.0.0.1:") != NULL);
	tt_error_clear(&err);
	tt_db_exec(db, "DROP TABLE IF EXISTS tt_unit", NULL, 0, &err);
	tt_error_clear(&err);
	CHECK(tt_db_exec(db, "CREATE TABLE tt_unit (k VARCHAR(200) PRIMARY KEY, n BIGINT, body TEXT)", NULL, 0,
			 &err) == 0);
	/* A hostile value is just a value; parameters may be named out of order. */
	tt_db_value rows[] = { { TT_DB_INT, NULL, 7 }, { TT_DB_TEXT, "x'); DROP TABLE tt_unit; --", 0 },
			       { TT_DB_NULL, NULL, 0 }, { TT_DB_TEXT, "y\\' \"q\" `b`", 0 } };
	CHECK(tt_db_begin(db, false, &err) == 0);
	CHECK(tt_db_exec_many(db, "INSERT INTO tt_unit (k, n) VALUES ($2, $1)", rows, 2, 2, &err) == 0);
	CHECK(tt_db_commit(db, &err) == 0);
	tt_db_rows r;
	tt_db_value want = { TT_DB_INT, NULL, 7 };
	CHECK(tt_db_query(db, "SELECT k, n FROM tt_unit WHERE n = $1", &want, 1, &r, &err) == 0);
	CHECK_INT(r.nrows, 1);
	CHECK_STR(r.names[0], "k");
	CHECK_STR(r.cells[0], "x'); DROP TABLE tt_unit; --");
	CHECK_STR(r.cells[1], "7");
	tt_db_rows_release(&r);
	tt_db_value q = { TT_DB_TEXT, "y\\' \"q\" `b`", 0 };
	CHECK(tt_db_query(db, "SELECT n FROM tt_unit WHERE k = $1", &q, 1, &r, &err) == 0);
	CHECK(r.nrows == 1 && r.cells[0] == NULL);
	tt_db_rows_release(&r);
	/* $1 inside a string literal or a comment is text, not a parameter. */
	tt_db_value one = { TT_DB_TEXT, "v", 0 };
	CHECK(tt_db_query(db, "SELECT '$1 it''s', $1 /* $2 */", &one, 1, &r, &err) == 0);
	CHECK_STR(r.cells[0], "$1 it's");
	CHECK_STR(r.cells[1], "v");
	tt_db_rows_release(&r);
	/* A cell longer than any fixed buffer comes back whole. */
	char big[3001];
	memset(big, 'z', 3000);
	big[3000] = '\0';
	tt_db_value body[] = { { TT_DB_TEXT, big, 0 }, { TT_DB_TEXT, "y\\' \"q\" `b`", 0 } };
	CHECK(tt_db_exec(db, "UPDATE tt_unit SET body = $1 WHERE k = $2", body, 2, &err) == 0);
	CHECK(tt_db_query(db, "SELECT body, k FROM tt_unit WHERE body IS NOT NULL", NULL, 0, &r, &err) == 0);
	CHECK_INT(r.nrows, 1);
	CHECK_STR(r.cells[0], big);
	tt_db_rows_release(&r);
	/* A rolled-back transaction leaves nothing. */
	CHECK(tt_db_begin(db, false, &err) == 0);
	CHECK(tt_db_exec(db, "DELETE FROM tt_unit", NULL, 0, &err) == 0);
	tt_db_rollback(db);
	CHECK(tt_db_query(db, "SELECT count(*) FROM tt_unit", NULL, 0, &r, &err) == 0);
	CHECK_STR(r.cells[0], "2");
	tt_db_rows_release(&r);
	/* A second statement never rides along, with or without parameters. */
	CHECK(tt_db_exec(db, "SELECT 1; DROP TABLE tt_unit", NULL, 0, &err) < 0);
	tt_error_clear(&err);
	CHECK(tt_db_exec(db, "SELECT $1; DROP TABLE tt_unit", &one, 1, &err) < 0);
	tt_error_clear(&err);
	/* A parameter the caller did not give is refused before the server. */
	CHECK(tt_db_exec(db, "SELECT $2", &one, 1, &err) < 0);
	tt_error_clear(&err);
	/* Results are capped (max_rows = 3). */
	tt_db_value more[] = { { TT_DB_TEXT, "a", 0 }, { TT_DB_TEXT, "b", 0 }, { TT_DB_TEXT, "c", 0 } };
	CHECK(tt_db_exec_many(db, "INSERT INTO tt_unit (k) VALUES ($1)", more, 1, 3, &err) == 0);
	CHECK(tt_db_query(db, "SELECT k FROM tt_unit", NULL, 0, &r, &err) == TT_ELIMIT);
	tt_db_rows_release(&r);
	tt_error_clear(&err);
	tt_db_close(db);

	/* Read-only: the server refuses a write, however phrased. */
	db = open_server(dsn, true, 5000);
	CHECK(db != NULL);
	CHECK(tt_db_exec(db, "INSERT INTO tt_unit (k) VALUES ('w')", NULL, 0, &err) < 0);
	tt_error_clear(&err);
	CHECK(tt_db_begin(db, true, &err) == 0);
	CHECK(tt_db_exec(db, "DELETE FROM tt_unit WHERE k = $1", &one, 1, &err) < 0);
	tt_error_clear(&err);
	tt_db_rollback(db);
	tt_db_close(db);

	/* A statement past the time limit stops with TT_ELIMIT. */
	db = open_server(dsn, false, 1000);
	CHECK(db != NULL);
	int rc = tt_db_exec(db, strcmp(kind, "mysql") == 0 ? "SELECT SLEEP(4)" : "SELECT pg_sleep(4)", NULL, 0, &err);
	CHECK_MSG(rc == TT_ELIMIT, "timeout gave %d: %s", rc, tt_error_text(&err));
	tt_error_clear(&err);
	tt_db_close(db);

	/* A wrong password names the server, never the password. */
	if (password && *password) {
		char *bad = wrong_password(dsn, password);
		CHECK(bad != NULL);
		tt_db_opts o = { .timeout_ms = 5000 };
		CHECK(tt_db_open(&db, bad, &o, &err) < 0);
		const char *text = tt_error_text(&err);
		CHECK_MSG(strstr(text, "127.0.0.1:") != NULL, "no server in: %s", text);
		CHECK_MSG(strstr(text, password) == NULL, "password in: %s", text);
		tt_error_clear(&err);
		free(bad);
	}
	printf("ran: %s server suite\n", kind);
}

TT_TEST(mysql_server_suite)
{
	server_suite("TETHER_TEST_MYSQL", "mysql");
}

TT_TEST(postgres_server_suite)
{
	server_suite("TETHER_TEST_PG", "postgres");
}

TT_TEST(mysql_url_errors_never_show_the_password)
{
	tt_db *db = NULL;
	tt_error err = TT_ERROR_INIT;
	tt_db_opts o = { .timeout_ms = 2000 };
	/* Nothing listens on port 9 of 127.0.0.1. */
	CHECK(tt_db_open(&db, "mysql://u:hunter2-pw@127.0.0.1:9/lake", &o, &err) < 0);
	CHECK(strstr(tt_error_text(&err), "MySQL database 'lake' on server 127.0.0.1:9") != NULL);
	CHECK(strstr(tt_error_text(&err), "hunter2") == NULL);
	tt_error_clear(&err);
	CHECK(tt_db_open(&db, "mysql://u:hunter2-pw@127.0.0.1:99999/lake", &o, &err) == TT_ECONFIG);
	CHECK(strstr(tt_error_text(&err), "hunter2") == NULL);
	tt_error_clear(&err);
}
