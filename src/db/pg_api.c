/* db/pg_api.c - libpq's table; see pg_api.h. */
#define TT_DB_PG_API_IMPL /* the real names, for the table */
#include "db/pg_api.h"

#ifndef TT_SONAME_PQ
#define TT_SONAME_PQ "libpq.so.5"
#endif

tt_pg_api tt_pg;

#define SYM(name) TT_DYN_SYM(tt_pg, name)
static const tt_dynsym syms[] = { TT_PG_SYMS(SYM) };
#undef SYM

static tt_dynlib lib = TT_DYNLIB_INIT("libpq", TT_SONAME_PQ, "TETHER_LIBPQ", "libpq5", syms);

int tt_pg_load(tt_error *err)
{
	return tt_dynlib_load(&lib, err);
}
