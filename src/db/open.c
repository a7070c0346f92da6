/*
 * db/open.c - opening a connection: the defaults of tt_db_opts, then the
 * driver the target names (db_pg.c, db_mysql.c, db_sqlite.c).  The one
 * file that knows every driver, so the drivers and db.c's shared half
 * need not know each other.
 */
#include "db/db.h"
#include "util/mem.h"

static int db_open(tt_db **out, const char *target, bool pg, const tt_db_opts *opts, tt_error *err)
{
	*out = NULL;
	if (!target || !*target)
		return tt_error_set(err, TT_EUSAGE, "no database given");
	tt_db *db = tt_calloc(1, sizeof *db);
	if (!db)
		return tt_error_oom(err);
	if (opts)
		db->opts = *opts;
	if (db->opts.timeout_ms <= 0)
		db->opts.timeout_ms = 30000;
	if (!db->opts.max_rows)
		db->opts.max_rows = 1000000;
	if (!db->opts.max_bytes)
		db->opts.max_bytes = (size_t)256 << 20;
	int rc = pg		       ? tt_db_pg_open(db, target, err)
		 : tt_db_is_mysql(target) ? tt_db_mysql_open(db, target, err)
					   : tt_db_sqlite_open(db, target, err);
	if (rc < 0) {
		tt_db_close(db);
		return rc;
	}
	*out = db;
	return 0;
}

int tt_db_open(tt_db **out, const char *target, const tt_db_opts *opts, tt_error *err)
{
	return db_open(out, target, tt_db_is_postgres(target), opts, err);
}

int tt_db_open_postgres(tt_db **out, const char *conninfo, const tt_db_opts *opts, tt_error *err)
{
	return db_open(out, conninfo, true, opts, err);
}
