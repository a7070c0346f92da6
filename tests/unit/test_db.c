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
