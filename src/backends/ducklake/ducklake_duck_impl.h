/*
 * backends/ducklake/ducklake_duck_impl.h - the libduckdb half of ducklake_duck.c,
 * compiled when the build found duckdb.h (TT_HAVE_DUCKDB_H).  The library
 * itself is loaded with dlopen on first use, so the binary does not depend
 * on it.  Included by ducklake_duck.c only.
 */
#include <dlfcn.h>
#include <pthread.h>

/* DuckDB's header declares a few f() without void */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstrict-prototypes"
#include <duckdb.h>
#pragma GCC diagnostic pop

#ifndef TT_LIBDUCKDB_PATH
#define TT_LIBDUCKDB_PATH "libduckdb.so"
#endif

#define FN(name) __typeof__(name) *name
static struct {
	void *lib;
	char why[512];
	FN(duckdb_create_config);
	FN(duckdb_set_config);
	FN(duckdb_destroy_config);
	FN(duckdb_open_ext);
	FN(duckdb_close);
	FN(duckdb_connect);
	FN(duckdb_disconnect);
	FN(duckdb_prepare);
	FN(duckdb_prepare_error);
	FN(duckdb_destroy_prepare);
	FN(duckdb_bind_int64);
	FN(duckdb_bind_varchar);
	FN(duckdb_bind_null);
	FN(duckdb_execute_prepared);
	FN(duckdb_result_error);
	FN(duckdb_destroy_result);
	FN(duckdb_column_count);
	FN(duckdb_row_count);
	FN(duckdb_column_name);
	FN(duckdb_value_is_null);
	FN(duckdb_value_varchar);
	FN(duckdb_free);
	FN(duckdb_library_version);
} api;
#undef FN

static pthread_once_t api_once = PTHREAD_ONCE_INIT;

static void api_load(void)
{
	const char *env = getenv("TETHER_LIBDUCKDB");
	const char *path = env && *env ? env : TT_LIBDUCKDB_PATH;
	void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!lib && !(env && *env))
		lib = dlopen("libduckdb.so", RTLD_NOW | RTLD_LOCAL);
	if (!lib) {
		const char *e = dlerror();
		snprintf(api.why, sizeof api.why, "cannot load libduckdb (%s): %s", path, e ? e : "not found");
		return;
	}
#define GET(name)                                                                              \
	do {                                                                                   \
		*(void **)&api.name = dlsym(lib, #name);                                       \
		if (!api.name) {                                                               \
			snprintf(api.why, sizeof api.why, "%s has no %s: not a libduckdb 1.x", \
				 path, #name);                                                 \
			dlclose(lib);                                                          \
			return;                                                                \
		}                                                                              \
	} while (0)
	GET(duckdb_create_config);
	GET(duckdb_set_config);
	GET(duckdb_destroy_config);
	GET(duckdb_open_ext);
	GET(duckdb_close);
	GET(duckdb_connect);
	GET(duckdb_disconnect);
	GET(duckdb_prepare);
	GET(duckdb_prepare_error);
	GET(duckdb_destroy_prepare);
	GET(duckdb_bind_int64);
	GET(duckdb_bind_varchar);
	GET(duckdb_bind_null);
	GET(duckdb_execute_prepared);
	GET(duckdb_result_error);
	GET(duckdb_destroy_result);
	GET(duckdb_column_count);
	GET(duckdb_row_count);
	GET(duckdb_column_name);
	GET(duckdb_value_is_null);
	GET(duckdb_value_varchar);
	GET(duckdb_free);
	GET(duckdb_library_version);
#undef GET
	api.lib = lib;
}

static bool api_ready(tt_error *err)
{
	pthread_once(&api_once, api_load);
	if (api.lib)
		return true;
	tt_error_set(err, TT_ECAPABILITY, "%s; %s", api.why, NEEDS);
	return false;
}

/*
 * A DuckDB file is held (opened, which takes its file lock) only while one
 * query runs: DuckDB lets a single process open a database file for
 * writing and refuses it while any reader has it open, so a handle held
 * for a whole command would lock a DuckLake writer out for that long.  Each
 * query opens, connects, runs and closes; queries are keyed by snapshot
 * id, so a commit landing between two of them does not mix states.
 */
struct tt_duck {
	duckdb_database db;
	duckdb_connection con;
	char *path;
};

const char *tt_duck_version(void)
{
	pthread_once(&api_once, api_load);
	return api.lib ? api.duckdb_library_version() : NULL;
}

static void duck_release(tt_duck *d)
{
	if (d->con)
		api.duckdb_disconnect(&d->con);
	if (d->db)
		api.duckdb_close(&d->db);
	d->con = NULL;
	d->db = NULL;
}

void tt_duck_close(tt_duck *d)
{
	if (!d)
		return;
	duck_release(d);
	free(d->path);
	free(d);
}

/* Open the file read-only and connect (held until duck_release). */
static int duck_hold(tt_duck *d, tt_error *err)
{
	duckdb_config cfg = NULL;
	char *why = NULL;
	const char *path = d->path;
	/* Read-only, one thread, nothing fetched or loaded from elsewhere: a
	 * file another process writes fails on its lock at once. */
	if (api.duckdb_create_config(&cfg) != DuckDBSuccess)
		return tt_error_oom(err);
	api.duckdb_set_config(cfg, "access_mode", "READ_ONLY");
	api.duckdb_set_config(cfg, "threads", "1");
	api.duckdb_set_config(cfg, "autoinstall_known_extensions", "false");
	api.duckdb_set_config(cfg, "autoload_known_extensions", "false");
	duckdb_state st = api.duckdb_open_ext(path, &d->db, cfg, &why);
	api.duckdb_destroy_config(&cfg);
	if (st != DuckDBSuccess) {
		const char *w = why ? why : "could not open it";
		int rc;
		if (strstr(w, "lock"))
			rc = tt_error_set(err, TT_EBACKEND,
					  "DuckDB catalog %s is open in another process (%s)", path, w);
		else
			rc = tt_error_set(err, TT_EBACKEND,
					  "%s is not a readable DuckDB database: %s", path, w);
		if (strstr(w, "lock"))
			tt_error_hint(err, "close the DuckDB session writing it (DuckDB lets one process "
					   "open a database file for writing), or keep the catalog in "
					   "SQLite or PostgreSQL");
		if (why)
			api.duckdb_free(why);
		d->db = NULL;
		return rc;
	}
	if (api.duckdb_connect(d->db, &d->con) != DuckDBSuccess) {
		d->con = NULL;
		duck_release(d);
		return tt_error_set(err, TT_EBACKEND, "DuckDB catalog %s: cannot connect", path);
	}
	return 0;
}

int tt_duck_open(tt_duck **out, const char *path, tt_error *err)
{
	int rc;
	*out = NULL;
	if (!api_ready(err))
		return err ? err->code : TT_ECAPABILITY;
	tt_duck *d = tt_calloc(1, sizeof *d);
	if (!d || !(d->path = tt_strdup(path))) {
		free(d);
		return tt_error_oom(err);
	}
	/* Opened once here so that a file that is not DuckDB's, or is locked,
	 * is reported now; then let go until the first query. */
	if ((rc = duck_hold(d, err)) != 0) {
		tt_duck_close(d);
		return rc;
	}
	duck_release(d);
	*out = d;
	return 0;
}

static int duck_query(tt_duck *d, const char *sql, const tt_db_value *params, size_t n,
		      tt_db_rows *out, tt_error *err);

int tt_duck_query(tt_duck *d, const char *sql, const tt_db_value *params, size_t n,
		  tt_db_rows *out, tt_error *err)
{
	int rc;
	memset(out, 0, sizeof *out);
	if ((rc = duck_hold(d, err)) != 0)
		return rc;
	rc = duck_query(d, sql, params, n, out, err);
	duck_release(d);
	return rc;
}

static int duck_query(tt_duck *d, const char *sql, const tt_db_value *params, size_t n,
		      tt_db_rows *out, tt_error *err)
{
	duckdb_prepared_statement ps = NULL;
	duckdb_result res;
	int rc = 0;
	memset(out, 0, sizeof *out);
	if (api.duckdb_prepare(d->con, sql, &ps) != DuckDBSuccess) {
		const char *e = ps ? api.duckdb_prepare_error(ps) : NULL;
		rc = tt_error_set(err, TT_EBACKEND, "DuckDB catalog %s: %s", d->path, e ? e : "cannot prepare");
		api.duckdb_destroy_prepare(&ps);
		return rc;
	}
	for (size_t i = 0; i < n; i++) {
		idx_t k = (idx_t)i + 1;
		duckdb_state s = params[i].type == TT_DB_INT ? api.duckdb_bind_int64(ps, k, params[i].i)
				 : params[i].type == TT_DB_TEXT ? api.duckdb_bind_varchar(ps, k, params[i].text)
								: api.duckdb_bind_null(ps, k);
		if (s != DuckDBSuccess) {
			api.duckdb_destroy_prepare(&ps);
			return tt_error_set(err, TT_EBACKEND, "DuckDB catalog %s: cannot bind $%zu", d->path,
					    i + 1);
		}
	}
	if (api.duckdb_execute_prepared(ps, &res) != DuckDBSuccess) {
		const char *e = api.duckdb_result_error(&res);
		rc = tt_error_set(err, TT_EBACKEND, "DuckDB catalog %s: %s", d->path, e ? e : "query failed");
		api.duckdb_destroy_result(&res);
		api.duckdb_destroy_prepare(&ps);
		return rc;
	}
	size_t nc = (size_t)api.duckdb_column_count(&res), nr = (size_t)api.duckdb_row_count(&res);
	out->ncols = nc;
	out->names = tt_calloc(nc ? nc : 1, sizeof *out->names);
	out->cells = tt_calloc(nc && nr ? nc * nr : 1, sizeof *out->cells);
	if (!out->names || !out->cells)
		rc = tt_error_oom(err);
	else
		out->nrows = nr;
	for (size_t c = 0; rc == 0 && c < nc; c++) {
		const char *nm = api.duckdb_column_name(&res, (idx_t)c);
		if (!(out->names[c] = tt_strdup(nm ? nm : "")))
			rc = tt_error_oom(err);
	}
	for (size_t r = 0; rc == 0 && r < nr; r++) {
		for (size_t c = 0; rc == 0 && c < nc; c++) {
			if (api.duckdb_value_is_null(&res, (idx_t)c, (idx_t)r))
				continue;
			char *v = api.duckdb_value_varchar(&res, (idx_t)c, (idx_t)r);
			out->cells[r * nc + c] = tt_strdup(v ? v : "");
			if (v)
				api.duckdb_free(v);
			if (!out->cells[r * nc + c])
				rc = tt_error_oom(err);
		}
	}
	api.duckdb_destroy_result(&res);
	api.duckdb_destroy_prepare(&ps);
	if (rc)
		tt_db_rows_release(out);
	return rc;
}
