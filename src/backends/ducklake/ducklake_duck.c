/*
 * backends/ducklake/ducklake_duck.c - DuckDB-file DuckLake catalogs through
 * libduckdb's C API, loaded with dlopen (see ducklake.h).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/ducklake/ducklake.h"
#include "util/mem.h"

#define NEEDS \
	"a DuckDB-file DuckLake catalog needs libduckdb 1.5.5 (the DuckDB C library): run " \
	"scripts/setup.sh and rebuild, or set TETHER_LIBDUCKDB to a libduckdb.so; SQLite " \
	"(ducklake:sqlite:FILE) and PostgreSQL (ducklake:postgres:...) catalogs need nothing more"

#ifndef TT_HAVE_DUCKDB_H

int tt_duck_open(tt_duck **out, const char *path, tt_error *err)
{
	*out = NULL;
	return tt_error_set(err, TT_ECAPABILITY, "cannot read %s: this tether was built without "
			    "duckdb.h; %s", path, NEEDS);
}

int tt_duck_query(tt_duck *d, const char *sql, const tt_db_value *params, size_t n,
		  tt_db_rows *out, tt_error *err)
{
	(void)d, (void)sql, (void)params, (void)n, (void)out;
	return tt_error_set(err, TT_ECAPABILITY, NEEDS);
}

void tt_duck_close(tt_duck *d)
{
	(void)d;
}

const char *tt_duck_version(void)
{
	return NULL;
}

#else
#include "ducklake_duck_impl.h"
#endif
