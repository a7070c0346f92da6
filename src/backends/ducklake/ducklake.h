/*
 * backends/ducklake/ducklake.h - the DuckLake backend's parts (ducklake.c) and its
 * reader of DuckDB-file catalogs (ducklake_duck.c).
 *
 * A DuckDB-file catalog is read through libduckdb's C API, loaded at run
 * time by db/duck_api.h (which says where it is looked for).  A build
 * without duckdb.h, or a machine without the library, still reads SQLite
 * and PostgreSQL catalogs and says what a DuckDB-file catalog needs.
 */
#ifndef TT_BACKENDS_DUCKLAKE_H
#define TT_BACKENDS_DUCKLAKE_H

#include "db/db.h"
#include "util/error.h"

typedef struct tt_duck tt_duck;

/* Open a DuckDB database file read-only.  A file another process holds
 * open for writing, or one that is not a DuckDB database, fails at once
 * (TT_EBACKEND naming the file); a missing libduckdb is TT_ECAPABILITY. */
int tt_duck_open(tt_duck **out, const char *path, tt_error *err);
/* One statement with bound $N parameters; cells as text (db.h's rows).
 * The file is open (and locked against a writer) only during the call. */
int tt_duck_query(tt_duck *d, const char *sql, const tt_db_value *params, size_t n,
		  tt_db_rows *out, tt_error *err);
void tt_duck_close(tt_duck *d); /* NULL-safe */

/* The attach alias tether-vcs uses for a metadata string: "tether_" and
 * the blake2b-32 hex of it. */
int tt_ducklake_alias(const char *metadata, char out[16]);

#endif
