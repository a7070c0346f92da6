/*
 * A DuckDB-file DuckLake catalog is held only while one query runs: between
 * two queries of an open tt_duck handle another process can take the
 * file's write lock, as a DuckLake writer does; while it holds it a query
 * fails at once naming the file.  The lock is checked the way DuckDB
 * takes it (an fcntl write lock on the database file), from a child
 * process.  Needs libduckdb (scripts/setup.sh): without it the tests say so
 * and pass, unless TETHER_REQUIRE_TOOLS=1, where they fail.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/ducklake/ducklake.h"
#include "db/duck_api.h"
#include "harness.h"


static bool have_duckdb(void)
{
#ifdef TT_HAVE_DUCKDB_H
	if (tt_duck_library_version())
		return true;
#endif
	if (getenv("TETHER_REQUIRE_TOOLS") && strcmp(getenv("TETHER_REQUIRE_TOOLS"), "1") == 0)
		tt_test_fail(__FILE__, __LINE__, "libduckdb is required (TETHER_REQUIRE_TOOLS=1) and is missing");
	else
		fprintf(stderr, "note: libduckdb not available; DuckDB-file tests not run\n");
	return false;
}

#ifdef TT_HAVE_DUCKDB_H
/* A DuckDB database file with one table of three rows, written with the
 * same libduckdb tether loads. */
static bool make_db(const char *path)
{
	duckdb_database db;
	duckdb_connection con;
	if (tt_duck_load(NULL) != 0 || duckdb_open_ext(path, &db, NULL, NULL) != DuckDBSuccess)
		return false;
	bool ok = duckdb_connect(db, &con) == DuckDBSuccess;
	ok = ok && duckdb_query(con, "CREATE TABLE t AS SELECT range AS a FROM range(3)", NULL) == DuckDBSuccess;
	if (ok)
		duckdb_disconnect(&con);
	duckdb_close(&db);
	return ok;
}

/* Whether another process can take the file's write lock now. */
static bool writer_can_lock(const char *path)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		_exit(fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0 ? 0 : 1);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	return WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

/* A child that holds the write lock until killed; its pid. */
static pid_t writer_holding(const char *path)
{
	int p[2];
	if (pipe(p) != 0)
		return -1;
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open(path, O_RDWR);
		struct flock fl = { .l_type = F_WRLCK, .l_whence = SEEK_SET };
		char c = fd >= 0 && fcntl(fd, F_SETLK, &fl) == 0 ? 'y' : 'n';
		if (write(p[1], &c, 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	char c = 0;
	close(p[1]);
	if (read(p[0], &c, 1) != 1 || c != 'y') {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}
#endif

TT_TEST(a_handle_holds_the_file_only_during_a_query)
{
	if (!have_duckdb())
		return;
#ifdef TT_HAVE_DUCKDB_H
	char path[4096];
	snprintf(path, sizeof path, "%s/cat.duckdb", tt_test_tmpdir());
	CHECK_MSG(make_db(path), "cannot write %s with libduckdb", path);
	CHECK(writer_can_lock(path)); /* nobody has it yet */

	tt_error err = TT_ERROR_INIT;
	tt_duck *d = NULL;
	CHECK_INT(tt_duck_open(&d, path, &err), 0);
	CHECK(writer_can_lock(path)); /* opened and let go */
	tt_db_rows rows;
	CHECK_INT(tt_duck_query(d, "SELECT count(*) FROM t", NULL, 0, &rows, &err), 0);
	CHECK_STR(rows.cells[0], "3");
	tt_db_rows_release(&rows);
	CHECK(writer_can_lock(path)); /* between two queries: a writer gets in */
	CHECK_INT(tt_duck_query(d, "SELECT max(a) FROM t", NULL, 0, &rows, &err), 0);
	CHECK_STR(rows.cells[0], "2");
	tt_db_rows_release(&rows);
	tt_duck_close(d);
	tt_error_clear(&err);
#endif
}

TT_TEST(a_query_while_a_writer_holds_the_file_fails_at_once_naming_it)
{
	if (!have_duckdb())
		return;
#ifdef TT_HAVE_DUCKDB_H
	char path[4096];
	snprintf(path, sizeof path, "%s/held.duckdb", tt_test_tmpdir());
	CHECK_MSG(make_db(path), "cannot write %s with libduckdb", path);
	tt_error err = TT_ERROR_INIT;
	tt_duck *d = NULL;
	CHECK_INT(tt_duck_open(&d, path, &err), 0);

	pid_t w = writer_holding(path);
	CHECK(w > 0);
	tt_db_rows rows;
	int rc = tt_duck_query(d, "SELECT count(*) FROM t", NULL, 0, &rows, &err);
	kill(w, SIGKILL);
	waitpid(w, NULL, 0);
	CHECK_INT(rc, TT_EBACKEND);
	CHECK_MSG(strstr(err.message, path) && strstr(err.message, "another process"), "%s", err.message);
	tt_error_clear(&err);

	/* the writer gone, the same handle reads again */
	err = (tt_error)TT_ERROR_INIT;
	CHECK_INT(tt_duck_query(d, "SELECT count(*) FROM t", NULL, 0, &rows, &err), 0);
	CHECK_STR(rows.cells[0], "3");
	tt_db_rows_release(&rows);
	tt_duck_close(d);
	tt_error_clear(&err);
#endif
}
