/*
 * db/duck_session.h - an in-memory DuckDB session (libduckdb's C API,
 * loaded on first use by db/duck_api) for reading a dataset's objects
 * with SQL.
 *
 * The session never fetches anything: DuckDB's automatic extension install
 * and load are off, and extensions are loaded by the caller from files it
 * found (engine/cmd/query.c looks for them).  Statements that carry a
 * credential (CREATE SECRET, an ATTACH with a password) are run through
 * tt_duck_session_exec_secret: the credential is remembered only to be
 * scrubbed from every error message the session returns, and DuckDB keeps
 * the secret in memory (a temporary secret is never written to disk).
 *
 * Results stream: tt_duck_session_stream hands one row at a time to a
 * callback, every cell already text - DuckDB's own VARCHAR cast of the
 * value, or the JSON DuckDB's to_json makes of it - so no result is held
 * whole.  A session belongs to one thread at a time.
 */
#ifndef TT_DB_DUCK_SESSION_H
#define TT_DB_DUCK_SESSION_H

#include <stdbool.h>
#include <stddef.h>

#include "db/db.h"
#include "util/error.h"

typedef struct tt_duck_session tt_duck_session;

/* The DuckDB version whose extensions the session loads ("v1.5.5") and
 * its platform ("linux_amd64"). */
#define TT_DUCK_EXT_VERSION "v1.5.5"
#define TT_DUCK_EXT_PLATFORM "linux_amd64"

/* Whether libduckdb can be loaded (why, when it cannot: a message with the
 * fix, into err). */
bool tt_duck_session_available(tt_error *err);

/* An in-memory database, one connection.  threads 0: DuckDB's default. */
int tt_duck_session_open(tt_duck_session **out, tt_error *err);
void tt_duck_session_close(tt_duck_session *s); /* NULL-safe */

/* Remember a credential to scrub from error messages (copied). */
int tt_duck_session_add_secret(tt_duck_session *s, const char *secret);

/* Run SQL (one or more statements), discarding results.  what names the
 * step in an error ("loading the delta extension"). */
int tt_duck_session_exec(tt_duck_session *s, const char *sql, const char *what, tt_error *err);
/* The same for a statement holding a credential, whose form without it
 * is shown: every string literal of sql that shown does not hold (and a
 * URL's password or a password=VALUE word inside one) is scrubbed from
 * this and every later error message of the session; an error never
 * repeats the statement. */
int tt_duck_session_exec_secret(tt_duck_session *s, const char *sql, const char *shown, const char *what,
				tt_error *err);
/* One statement's whole result as text cells (small results only: capped
 * at 100,000 rows). */
int tt_duck_session_rows(tt_duck_session *s, const char *sql, tt_db_rows *out, tt_error *err);

typedef enum tt_duck_cells {
	TT_DUCK_TEXT, /* each cell as DuckDB's CAST(value AS VARCHAR); NULL for SQL NULL */
	TT_DUCK_JSON, /* each cell as the JSON text DuckDB's to_json gives it; NULL for SQL NULL */
} tt_duck_cells;

/* Callbacks of tt_duck_session_stream: columns once, then each row.  A
 * non-zero return stops the query (that value is returned, err untouched). */
typedef struct tt_duck_sink {
	int (*columns)(void *ctx, size_t n, const char *const *names, const char *const *types);
	int (*row)(void *ctx, size_t n, const char *const *cells, const size_t *lens);
	void *ctx;
} tt_duck_sink;

/*
 * Run sql - one statement or several; every statement runs and the last
 * one's rows go to the sink - streaming a SELECT's rows chunk by chunk.
 * A last statement that is no query (PRAGMA, SET, ...) has its (small)
 * result handed over whole.
 */
int tt_duck_session_stream(tt_duck_session *s, const char *sql, tt_duck_cells cells,
			   const tt_duck_sink *sink, tt_error *err);

/* Stop a running statement from another thread. */
void tt_duck_session_interrupt(tt_duck_session *s);

#endif
