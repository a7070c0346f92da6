/*
 * db/db.h - one small connection interface over SQLite (sqlite3),
 * PostgreSQL (libpq) and MySQL-protocol servers - MariaDB, MySQL, Dolt -
 * (MariaDB Connector/C, libmariadb), for every part of tether that talks SQL: the registry
 * commands (export, publish, import) now, SQL-catalogued stores later.
 *
 * The rules every caller gets for free:
 *   - Values only ever travel as bound parameters.  SQL text names them
 *     $1, $2, ... in every dialect (SQLite binds "$N" by name; for MySQL they are
 *     rewritten to the binary protocol's ? marks), so a value is never
 *     spliced into a statement.  Identifiers (schema, table
 *     names) cannot be bound: check them with tt_db_identifier_ok first.
 *   - One statement per call: a second statement after the first (SQLite:
 *     anything but blanks and comments left over; PostgreSQL: the extended
 *     protocol's own refusal; MySQL: the prepared-statement protocol and a
 *     connection without multi-statements) is an error, so `SELECT 1; DROP ...` cannot
 *     ride along.
 *   - Read-only on request: opts.read_only opens SQLite read-only and
 *     refuses any statement that would write; on PostgreSQL the session's
 *     transactions default to READ ONLY and tt_db_begin(db, true) starts one
 *     explicitly, so the server itself refuses a write, however phrased.
 *   - Every statement has a time limit (opts.timeout_ms; PostgreSQL's
 *     statement_timeout, a progress-handler deadline in SQLite) and every
 *     result a size cap (opts.max_rows, opts.max_bytes): TT_ELIMIT past it.
 *   - Errors name the store - "PostgreSQL database 'db' on server
 *     host:port", or "SQLite database <path>" - and the server's words, and
 *     never the password (it is parsed out of the DSN and redacted from any
 *     message that would echo it).
 *
 * A target is a PostgreSQL connection string (postgresql:// or postgres://
 * URI), a MySQL URL (mysql://USER[:PASSWORD]@HOST[:PORT]/DATABASE, also
 * mariadb://; TLS whenever the server offers it) or a SQLite file path.  Result cells are text (NULL for SQL NULL):
 * SQLite integers and reals as their decimal text, PostgreSQL values in
 * its text output format (jsonb as JSON text, booleans as "t"/"f").
 * A tt_db belongs to one thread at a time.
 */
#ifndef TT_DB_DB_H
#define TT_DB_DB_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

typedef struct tt_db tt_db;

typedef enum tt_db_type { TT_DB_NULL, TT_DB_TEXT, TT_DB_INT } tt_db_type;

/* One bound parameter.  Text is bound as text (PostgreSQL casts it where
 * the statement says, e.g. $3::jsonb); an integer as a 64-bit integer. */
typedef struct tt_db_value {
	tt_db_type type;
	const char *text;
	long long i;
} tt_db_value;

typedef struct tt_db_opts {
	bool read_only;      /* see above */
	bool create;         /* SQLite: create the file when missing */
	int timeout_ms;      /* per statement (and connect); 0: 30 s */
	size_t max_rows;     /* per result; 0: 1,000,000 */
	size_t max_bytes;    /* per result, all cells; 0: 256 MiB */
} tt_db_opts;

/* A result: ncols names and nrows * ncols cells, row-major. */
typedef struct tt_db_rows {
	size_t ncols, nrows;
	char **names;
	char **cells;        /* NULL entries are SQL NULLs */
} tt_db_rows;

/* Is target a PostgreSQL connection URI (postgresql:// or postgres://)? */
bool tt_db_is_postgres(const char *target);
/* Is target a MySQL-protocol URL (mysql:// or mariadb://)? */
bool tt_db_is_mysql(const char *target);
/* Is name a plain SQL identifier ([A-Za-z_][A-Za-z0-9_]*, at most 63)? */
bool tt_db_identifier_ok(const char *name);

/* Connect (PostgreSQL) or open (SQLite).  TT_ECONFIG for a malformed DSN,
 * TT_EBACKEND when the server or file refuses, naming tt_db_where. */
int tt_db_open(tt_db **out, const char *target, const tt_db_opts *opts, tt_error *err);
/* The same for PostgreSQL with any libpq connection string, a URI or
 * key=value words ("dbname=lake host=db"). */
int tt_db_open_postgres(tt_db **out, const char *conninfo, const tt_db_opts *opts, tt_error *err);
void tt_db_close(tt_db *db);  /* NULL-safe; an open transaction is rolled back */

/* "sqlite", "postgres" or "mysql". */
const char *tt_db_kind(const tt_db *db);
/* What error messages call the store (no password). */
const char *tt_db_where(const tt_db *db);

/* Transactions: BEGIN [READ ONLY], COMMIT, ROLLBACK (rollback never fails
 * the caller: it is the cleanup path). */
int tt_db_begin(tt_db *db, bool read_only, tt_error *err);
int tt_db_commit(tt_db *db, tt_error *err);
void tt_db_rollback(tt_db *db);

/* Run one statement, discarding any rows. */
int tt_db_exec(tt_db *db, const char *sql, const tt_db_value *params, size_t n, tt_error *err);
/* Run one statement and collect its rows (*out released by the caller,
 * also on failure). */
int tt_db_query(tt_db *db, const char *sql, const tt_db_value *params, size_t n, tt_db_rows *out,
		tt_error *err);
void tt_db_rows_release(tt_db_rows *rows);
/* Run one statement for each of nrows parameter rows (params row-major,
 * ncols per row), prepared once: bulk inserts and upserts. */
int tt_db_exec_many(tt_db *db, const char *sql, const tt_db_value *params, size_t ncols, size_t nrows,
		    tt_error *err);

/* Backend entry points behind tt_db_open (db_sqlite.c, db_pg.c, db_mysql.c;
 * chosen in db/open.c). */
typedef struct tt_db_ops {
	const char *kind;
	int (*exec)(tt_db *db, const char *sql, const tt_db_value *params, size_t n, tt_db_rows *out,
		    tt_error *err);
	int (*exec_many)(tt_db *db, const char *sql, const tt_db_value *params, size_t ncols, size_t nrows,
			 tt_error *err);
	void (*close)(tt_db *db);
} tt_db_ops;

struct tt_db {
	const tt_db_ops *ops;
	tt_db_opts opts;
	char *where;
	char *secret;        /* the password to redact from messages, or NULL */
	bool in_tx;
	void *impl;
};

int tt_db_sqlite_open(tt_db *db, const char *path, tt_error *err);
int tt_db_pg_open(tt_db *db, const char *dsn, tt_error *err);
int tt_db_mysql_open(tt_db *db, const char *dsn, tt_error *err);
/* Append one row of out->ncols cells (taken over, also on failure),
 * enforcing max_rows / max_bytes; *bytes carries the running total. */
int tt_db_rows_push(tt_db *db, tt_db_rows *out, char **cells, size_t *bytes, size_t *alloc,
		    tt_error *err);
/* Set err to "<where>: <message>" with the password redacted. */
int tt_db_fail(tt_db *db, tt_error *err, int code, const char *message);

#endif
