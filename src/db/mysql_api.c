/* db/mysql_api.c - libmariadb's table; see mysql_api.h. */
#define TT_DB_MYSQL_API_IMPL /* the real names, for the table */
#include "db/mysql_api.h"

#ifndef TT_SONAME_MARIADB
#define TT_SONAME_MARIADB "libmariadb.so.3"
#endif

tt_mysql_api tt_mysql;

#define SYM(name) TT_DYN_SYM(tt_mysql, name)
static const tt_dynsym syms[] = { TT_MYSQL_SYMS(SYM) };
#undef SYM

static tt_dynlib lib = TT_DYNLIB_INIT("libmariadb", TT_SONAME_MARIADB, "TETHER_LIBMARIADB", "libmariadb3", syms);

int tt_mysql_load(tt_error *err)
{
	return tt_dynlib_load(&lib, err);
}
