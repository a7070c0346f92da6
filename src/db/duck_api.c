/* db/duck_api.c - libduckdb's table; see duck_api.h. */
#define TT_DB_DUCK_API_IMPL /* the real names, for the table */
#include <stddef.h>

#include "db/duck_api.h"

#ifndef TT_HAVE_DUCKDB_H

int tt_duck_load(tt_error *err)
{
	return tt_error_set(err, TT_ECAPABILITY, "this tether was built without duckdb.h, so it cannot load "
			    "libduckdb: configure with TETHER_LIBDUCKDB_DIR naming a directory with "
			    "include/duckdb.h (in a checkout, scripts/setup.sh --test fetches libduckdb 1.5.5 "
			    "and its header) and rebuild");
}

const char *tt_duck_library_version(void)
{
	return NULL;
}

#else
#include <pthread.h>
#include <unistd.h>

#ifndef TT_LIBDUCKDB_PATH
#define TT_LIBDUCKDB_PATH "libduckdb.so"
#endif

tt_duck_api tt_duckdb;

#define SYM(name) TT_DYN_SYM(tt_duckdb, name)
static const tt_dynsym syms[] = { TT_DUCK_SYMS(SYM) };
#undef SYM

/* What to install where no distribution packages libduckdb: the library of
 * DuckDB's release, on the library path (a tarball's lib/ is on it: libtether
 * has RPATH $ORIGIN). */
static tt_dynlib lib = TT_DYNLIB_INIT_HOW("libduckdb", TT_LIBDUCKDB_PATH, "TETHER_LIBDUCKDB",
					  "install libduckdb 1.5.5, DuckDB's C library (libduckdb-linux-amd64.zip "
					  "of DuckDB's release; no distribution packages it): put libduckdb.so on "
					  "the library path (e.g. /usr/local/lib, then ldconfig) or set "
					  "TETHER_LIBDUCKDB to its path",
					  syms);

/* The library the build found, while it is still there; else the loader's
 * search for libduckdb.so (an installed tether on another machine). */
static pthread_once_t pick_once = PTHREAD_ONCE_INIT;
static void pick(void)
{
	if (access(TT_LIBDUCKDB_PATH, F_OK) != 0)
		lib.soname = "libduckdb.so";
}

int tt_duck_load(tt_error *err)
{
	pthread_once(&pick_once, pick);
	return tt_dynlib_load(&lib, err);
}

const char *tt_duck_library_version(void)
{
	return tt_duck_load(NULL) == 0 ? tt_duckdb.duckdb_library_version() : NULL;
}
#endif
