/*
 * backends/ducklake/ducklake.c - DuckLake catalogs, read natively from their
 * metadata tables.
 *
 * Addressable tier: a state is {snapshot_id, snapshot_time_us}, a row of
 * the catalog's `ducklake_snapshot` table (the newest, or the locator's
 * `at`).  The commit time makes a dropped-and-recreated catalog verify as
 * drifted; a snapshot `ducklake_expire_snapshots` removed verifies as
 * missing.  DuckLake has no tags or branches: nothing is pinned or forked,
 * and tether never writes a catalog.
 *
 * The catalog is plain SQL tables, so it is read where it lives: a SQLite
 * file through sqlite3 (`ducklake:sqlite:<file>`), a PostgreSQL database
 * through libpq (`ducklake:postgres:<conninfo>`, connection options and
 * the password from secrets), and a DuckDB file (`ducklake:<file>` or
 * `ducklake:duckdb:<file>`) through libduckdb's C API (ducklake_duck.c),
 * loaded at run time.  Every statement is read-only and short; PostgreSQL
 * reads run in one READ ONLY transaction (which never blocks a writer), a
 * SQLite catalog is read one statement at a time so a writer waits at most
 * one query.
 *
 * History is `ducklake_snapshot` with `ducklake_snapshot_changes`: each
 * snapshot's `changes_made` tokens, named and grouped as DuckDB's
 * `ducklake_snapshots()` names them.  A content diff groups the changes of
 * the snapshots in (a, b] per table, with row counts from the data files,
 * delete files and inlined rows those snapshots wrote (an insert and a
 * delete of the same row in one snapshot count as an update).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "backends/kit.h"
#include "backends/ducklake/ducklake.h"
#include "db/db.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"

#define KIND "ducklake"
#define MAX_ROW_COUNTED_TABLES 25


/* --- the catalog connection ----------------------------------------------------- */

typedef enum dl_dialect { DL_SQLITE, DL_PG, DL_DUCKDB } dl_dialect;

typedef struct dl_cat {
	dl_dialect d;
	tt_db *db;              /* SQLite and PostgreSQL */
	tt_duck *duck;          /* DuckDB files */
	char *metadata;         /* "ducklake:..." as the locator gives it */
	char *where;            /* the store, for messages (never a password) */
} dl_cat;

static void cat_close(dl_cat *c)
{
	if (c->db) {
		tt_db_rollback(c->db);
		tt_db_close(c->db);
	}
	tt_duck_close(c->duck);
	free(c->metadata);
	free(c->where);
	memset(c, 0, sizeof *c);
}

/* The locator's metadata string with the `ducklake:` prefix. */
static int metadata_of(const json_t *loc, char **out, tt_error *err)
{
	json_t *v = json_object_get(loc, "metadata");
	if (!json_is_string(v) || !json_string_length(v))
		v = json_object_get(loc, "uri");
	if (!json_is_string(v) || !json_string_length(v))
		return KERR(err, TT_EBACKEND, "ducklake locator needs 'metadata'");
	const char *m = json_string_value(v);
	*out = strncmp(m, "ducklake:", 9) == 0 ? tt_strdup(m) : tt_asprintf("ducklake:%s", m);
	return *out ? 0 : KOOM(err);
}

static const char *data_path_of(const json_t *loc)
{
	json_t *v = json_object_get(loc, "data_path");
	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

/* Append " key='value'" to a libpq connection string. */
static void conninfo_put(tt_buf *b, const char *key, const char *value)
{
	tt_buf_printf(b, " %s='", key);
	for (const char *p = value; *p; p++) {
		if (*p == '\'' || *p == '\\')
			tt_buf_putc(b, '\\');
		tt_buf_putc(b, *p);
	}
	tt_buf_putc(b, '\'');
}

/* The libpq words secrets may add to a catalog's connection string. */
static const char *const pg_secret_keys[] = {
	"host", "hostaddr", "port", "dbname", "user", "password", "passfile", "sslmode",
	"sslrootcert", "sslcert", "sslkey", "options", NULL,
};

/* conninfo with the words secrets add for this object, into *ci (which may
 * then hold a password: the caller wipes it). */
static int pg_conninfo(tt_backend *b, const json_t *loc, const char *conninfo, tt_buf *ci, tt_error *err)
{
	json_t *sec = NULL;
	int rc;
	if ((rc = tt_backend_secrets_for(b, loc, &sec, err)) != 0)
		return rc;
	tt_buf_puts(ci, conninfo);
	for (const char *const *k = pg_secret_keys; *k; k++) {
		json_t *v = json_object_get(sec, *k);
		char num[32];
		if (json_is_integer(v)) {
			snprintf(num, sizeof num, "%lld", (long long)json_integer_value(v));
			conninfo_put(ci, *k, num);
		} else if (json_is_string(v)) {
			conninfo_put(ci, *k, json_string_value(v));
		}
	}
	json_decref(sec);
	tt_buf_putc(ci, '\0');
	return ci->failed ? KOOM(err) : 0;
}

static int open_pg(tt_backend *b, const json_t *loc, dl_cat *c, const char *conninfo,
		   const tt_db_opts *opts, tt_error *err)
{
	tt_buf ci = TT_BUF_INIT;
	int rc;
	if ((rc = pg_conninfo(b, loc, conninfo, &ci, err)) != 0) {
		if (ci.ptr)
			memset(ci.ptr, 0, ci.len);
		tt_buf_release(&ci);
		return rc;
	}
	rc = tt_db_open_postgres(&c->db, ci.ptr, opts, err);
	/* the string may hold the password: wipe it */
	memset(ci.ptr, 0, ci.len);
	tt_buf_release(&ci);
	if (rc) {
		tt_error_prefix(err, "cannot open the ducklake catalog");
		tt_error_object(err, NULL, KIND);
		return rc;
	}
	c->where = tt_strdup(tt_db_where(c->db));
	if (!c->where)
		return KOOM(err);
	return tt_db_begin(c->db, true, err);
}

/* Open the catalog a locator names. */
static int cat_open(tt_backend *b, const json_t *loc, dl_cat *c, tt_error *err)
{
	tt_db_opts opts = { .read_only = true, .timeout_ms = 30000 };
	int rc;
	memset(c, 0, sizeof *c);
	if ((rc = metadata_of(loc, &c->metadata, err)) != 0)
		return rc;
	const char *rest = c->metadata + 9;
	if (strncmp(rest, "postgres:", 9) == 0) {
		c->d = DL_PG;
		rc = open_pg(b, loc, c, rest + 9, &opts, err);
	} else if (strncmp(rest, "sqlite:", 7) == 0) {
		const char *path = rest + 7;
		c->d = DL_SQLITE;
		if (!tt_is_file(path)) {
			rc = KERR(err, TT_EBACKEND, "the ducklake catalog file %s does not exist", path);
			tt_error_hint(err, "check the locator's metadata path (`tether add ... --kind ducklake`)");
		} else if ((rc = tt_db_open(&c->db, path, &opts, err)) != 0) {
			tt_error_prefix(err, "%s is not a readable DuckLake SQLite catalog", path);
			tt_error_object(err, NULL, KIND);
		} else if (!(c->where = tt_asprintf("SQLite catalog %s", path))) {
			rc = KOOM(err);
		}
	} else if (strncmp(rest, "mysql:", 6) == 0) {
		rc = KERR(err, TT_ECAPABILITY,
			  "MySQL DuckLake catalogs are not supported by this tether (SQLite, PostgreSQL "
			  "and DuckDB files are)");
	} else {
		const char *path = strncmp(rest, "duckdb:", 7) == 0 ? rest + 7 : rest;
		c->d = DL_DUCKDB;
		if (!tt_is_file(path)) {
			rc = KERR(err, TT_EBACKEND, "the ducklake catalog file %s does not exist", path);
			tt_error_hint(err, "check the locator's metadata path (`tether add ... --kind ducklake`)");
		} else if ((rc = tt_duck_open(&c->duck, path, err)) != 0) {
			tt_error_object(err, NULL, KIND);
		} else if (!(c->where = tt_asprintf("DuckDB catalog %s", path))) {
			rc = KOOM(err);
		}
	}
	if (rc)
		cat_close(c);
	return rc;
}

static int cat_query(dl_cat *c, const char *sql, const tt_db_value *p, size_t n, tt_db_rows *out,
		     tt_error *err)
{
	int rc;
	memset(out, 0, sizeof *out);
	if (c->d == DL_DUCKDB)
		rc = tt_duck_query(c->duck, sql, p, n, out, err);
	else
		rc = tt_db_query(c->db, sql, p, n, out, err);
	if (rc) {
		if (rc == TT_ENOMEM)
			return KOOM(err);
		if (c->d == DL_DUCKDB)
			tt_error_prefix(err, "%s", c->where);
		if (err && err->message && strstr(err->message, "ducklake_") &&
		    (strstr(err->message, "no such table") || strstr(err->message, "does not exist") ||
		     strstr(err->message, "not exist"))) {
			tt_error_set(err, TT_EBACKEND, "%s is not a DuckLake catalog (it has no "
				     "ducklake_snapshot table): check the locator's metadata", c->where);
		}
		tt_error_object(err, NULL, KIND);
		if (err && err->code != TT_ELIMIT)
			err->code = TT_EBACKEND;
		return err ? err->code : TT_EBACKEND;
	}
	return 0;
}

/* Does a table exist in the catalog's schema? */
static int cat_has_table(dl_cat *c, const char *name, bool *yes, tt_error *err)
{
	static const char *const sql[] = {
		[DL_SQLITE] = "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = $1",
		[DL_PG] = "SELECT 1 FROM information_schema.tables WHERE table_schema = current_schema() "
			  "AND table_name = $1",
		[DL_DUCKDB] = "SELECT 1 FROM information_schema.tables WHERE table_name = $1",
	};
	tt_db_value p = { TT_DB_TEXT, name, 0 };
	tt_db_rows r;
	int rc = cat_query(c, sql[c->d], &p, 1, &r, err);
	*yes = rc == 0 && r.nrows > 0;
	tt_db_rows_release(&r);
	return rc;
}

/* The snapshot time column as epoch microseconds (SQLite: text, parsed). */
static const char *time_expr(const dl_cat *c)
{
	switch (c->d) {
	case DL_PG:
		return "(extract(epoch from snapshot_time) * 1000000)::bigint";
	case DL_DUCKDB:
		return "epoch_us(snapshot_time)";
	default:
		return "snapshot_time";
	}
}

static long long days_from_civil(long long y, unsigned m, unsigned d)
{
	y -= m <= 2;
	long long era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (long long)doe - 719468;
}

/* "2026-05-01 10:11:12.345+00" (DuckDB's text of a TIMESTAMPTZ: any number
 * of fractional digits, an offset +HH, +HH:MM or none) -> epoch us. */
static bool parse_time(const char *s, long long *us)
{
	int y, mo, d, h, mi, sec, n = 0;
	if (sscanf(s, "%d-%d-%d%*[ T]%d:%d:%d%n", &y, &mo, &d, &h, &mi, &sec, &n) != 6 || n == 0)
		return false;
	const char *p = s + n;
	long long frac = 0;
	int digits = 0;
	if (*p == '.') {
		for (p++; isdigit((unsigned char)*p); p++, digits++)
			if (digits < 6)
				frac = frac * 10 + (*p - '0');
		for (int k = digits; k < 6; k++)
			frac *= 10;
	}
	long long off = 0;
	if (*p == '+' || *p == '-') {
		int sign = *p == '+' ? 1 : -1, oh = 0, om = 0, os = 0;
		p++;
		if (sscanf(p, "%2d", &oh) != 1)
			return false;
		p += 2;
		if (*p == ':') {
			sscanf(p + 1, "%2d", &om);
			p += 3;
			if (*p == ':') {
				sscanf(p + 1, "%2d", &os);
				p += 3;
			}
		}
		off = sign * ((long long)oh * 3600 + om * 60 + os);
	} else if (*p == 'Z') {
		p++;
	}
	if (*p)
		return false;
	long long days = days_from_civil(y, (unsigned)mo, (unsigned)d);
	*us = ((days * 86400 + h * 3600LL + mi * 60LL + sec) - off) * 1000000LL + frac;
	return true;
}

static int time_cell(const dl_cat *c, const char *cell, long long *us, tt_error *err)
{
	if (!cell)
		return KERR(err, TT_EBACKEND, "%s: a snapshot has no time", c->where);
	if (c->d == DL_SQLITE) {
		if (!parse_time(cell, us))
			return KERR(err, TT_EBACKEND, "%s: cannot read the snapshot time '%s'", c->where,
				    cell);
		return 0;
	}
	char *end;
	*us = strtoll(cell, &end, 10);
	if (*end)
		return KERR(err, TT_EBACKEND, "%s: cannot read the snapshot time '%s'", c->where, cell);
	return 0;
}

/* Snapshot sid (-1: the newest): *found false when the catalog lacks it. */
static int cat_snapshot(dl_cat *c, long long sid, bool *found, long long *id, long long *us,
			tt_error *err)
{
	char sql[256];
	tt_db_rows r;
	tt_db_value p = { TT_DB_INT, NULL, sid };
	int rc;
	if (sid < 0)
		snprintf(sql, sizeof sql,
			 "SELECT snapshot_id, %s FROM ducklake_snapshot ORDER BY snapshot_id DESC LIMIT 1",
			 time_expr(c));
	else
		snprintf(sql, sizeof sql,
			 "SELECT snapshot_id, %s FROM ducklake_snapshot WHERE snapshot_id = $1",
			 time_expr(c));
	if ((rc = cat_query(c, sql, &p, sid < 0 ? 0 : 1, &r, err)) != 0)
		return rc;
	*found = r.nrows > 0;
	if (*found) {
		*id = strtoll(r.cells[0] ? r.cells[0] : "-1", NULL, 10);
		rc = time_cell(c, r.cells[1], us, err);
	} else if (sid < 0) {
		rc = KERR(err, TT_EBACKEND, "%s has no snapshots", c->where);
	}
	tt_db_rows_release(&r);
	return rc;
}

/* --- snapshot numbers named by locators, refs and states ---------------------------- */

static int number_of(const json_t *v, const char *what, long long *out, tt_error *err)
{
	*out = -1;
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t n = strlen(s);
		if (!n)
			return 0;
		bool digits = n <= 18;
		for (size_t i = 0; i < n && digits; i++)
			digits = isdigit((unsigned char)s[i]);
		if (digits) {
			*out = strtoll(s, NULL, 10);
			return 0;
		}
		return KERR(err, TT_EBACKEND, "ducklake %s must be a snapshot number, got '%s'", what, s);
	}
	return KERR(err, TT_EBACKEND, "ducklake %s must be a snapshot number", what);
}

static int state_snapshot(const json_t *state, long long *sid, tt_error *err)
{
	int rc = number_of(json_object_get(state, "snapshot_id"), "state's snapshot_id", sid, err);
	if (rc == 0 && *sid < 0)
		return KERR(err, TT_EBACKEND, "a ducklake state needs a snapshot_id");
	return rc;
}

/* --- identity, fingerprint -------------------------------------------------------- */

static int dl_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	char *meta = NULL;
	int rc;
	(void)b;
	*out = NULL;
	if ((rc = metadata_of(loc, &meta, err)) != 0)
		return rc;
	const char *dp = data_path_of(loc);
	*out = dp ? json_pack("{s:s, s:s}", "metadata", meta, "data_path", dp)
		  : json_pack("{s:s}", "metadata", meta);
	free(meta);
	return *out ? 0 : KOOM(err);
}

static int dl_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref,
			  json_t **state, tt_error *err)
{
	dl_cat c;
	long long at, id = -1, us = 0;
	bool found = false;
	int rc;
	(void)working_ref; /* no branches: the catalog's own snapshots */
	*state = NULL;
	if ((rc = number_of(json_object_get(loc, "at"), "`at`", &at, err)) != 0)
		return rc;
	if ((rc = cat_open(b, loc, &c, err)) != 0)
		return rc;
	if ((rc = cat_snapshot(&c, at, &found, &id, &us, err)) != 0)
		goto done;
	if (!found) {
		rc = KERR(err, TT_EBACKEND, "snapshot '%lld' is not in the catalog %s", at, c.where);
		tt_error_hint(err, "pick one `tether log` lists (expired snapshots are gone)");
		goto done;
	}
	if (!(*state = json_pack("{s:I, s:I}", "snapshot_id", (json_int_t)id, "snapshot_time_us",
				 (json_int_t)us)))
		rc = KOOM(err);
done:
	cat_close(&c);
	return rc;
}

/* Pins and forks: none (the kit's stubs, see the ops table). */

/* --- verify ----------------------------------------------------------------------- */

static int dl_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
		     bool deep, tt_verify_status *status, char **message, tt_error *err)
{
	dl_cat c;
	long long sid, id, us = 0;
	bool found = false;
	tt_error why = TT_ERROR_INIT;
	int rc;
	(void)pin, (void)deep;
	*status = TT_VERIFY_UNKNOWN;
	*message = NULL;
	if ((rc = state_snapshot(state, &sid, err)) != 0)
		return rc;
	if (cat_open(b, loc, &c, &why) != 0 || cat_snapshot(&c, sid, &found, &id, &us, &why) != 0) {
		if (why.code == TT_ENOMEM) {
			tt_error_clear(&why);
			if (c.where)
				cat_close(&c);
			return KOOM(err);
		}
		*status = TT_VERIFY_MISSING;
		*message = tt_strdup(tt_error_text(&why));
		tt_error_clear(&why);
		if (c.where || c.metadata)
			cat_close(&c);
		return *message ? 0 : KOOM(err);
	}
	cat_close(&c);
	json_t *rec = json_object_get(state, "snapshot_time_us");
	if (!found) {
		*status = TT_VERIFY_MISSING;
		*message = tt_asprintf("snapshot %lld is not in the catalog (expired?)", sid);
	} else if (json_is_integer(rec) && json_integer_value(rec) != us) {
		*status = TT_VERIFY_DRIFTED;
		*message = tt_asprintf("snapshot %lld has a different commit time (catalog recreated?)",
				       sid);
	} else {
		*status = TT_VERIFY_OK;
		return 0;
	}
	return *message ? 0 : KOOM(err);
}

/* --- snapshot changes ----------------------------------------------------------------- */

/* How a changes_made token names what it changed. */
enum { V_NAME, V_QUAL, V_ID, V_TID };

/* changes_made kinds, in the order ducklake_snapshots() lists its keys. */
static const struct {
	const char *token, *key;
	int value;
} change_kinds[] = {
	{ "created_schema", "schemas_created", V_NAME },
	{ "dropped_schema", "schemas_dropped", V_ID },
	{ "created_table", "tables_created", V_QUAL },
	{ "created_view", "views_created", V_QUAL },
	{ "created_scalar_macro", "scalar_macros_created", V_QUAL },
	{ "created_table_macro", "table_macros_created", V_QUAL },
	{ "dropped_table", "tables_dropped", V_TID },
	{ "altered_table", "tables_altered", V_TID },
	{ "inserted_into_table", "tables_inserted_into", V_TID },
	{ "deleted_from_table", "tables_deleted_from", V_TID },
	{ "dropped_view", "views_dropped", V_ID },
	{ "dropped_scalar_macro", "scalar_macros_dropped", V_ID },
	{ "dropped_table_macro", "table_macros_dropped", V_ID },
	{ "altered_view", "views_altered", V_ID },
	{ "inlined_insert", "inlined_insert", V_TID },
	{ "inlined_delete", "inlined_delete", V_TID },
	{ "flushed_inlined", "flushed_inlined", V_TID },
	{ "inline_flush", "flushed_inlined", V_TID },
	{ "merge_adjacent", "merge_adjacent", V_TID },
	{ "rewrite_delete", "rewrite_delete", V_TID },
	{ "compacted_table", "compacted_table", V_TID },
};
#define NKINDS (sizeof change_kinds / sizeof change_kinds[0])

/* One token: its kind (an index into change_kinds, or -1 with `raw` set),
 * and its value: a name, a schema-qualified name (schema, name), or an id. */
typedef struct dl_token {
	int kind;
	char *raw;              /* unknown kinds, verbatim */
	char *a, *b;            /* name / schema and name; an id as text in a */
} dl_token;

static void tokens_release(dl_token *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(t[i].raw);
		free(t[i].a);
		free(t[i].b);
	}
	free(t);
}

/* A double-quoted name at *p ("" escapes a quote), or a bare word up to
 * '.', ',' or the end. */
static char *name_at(const char **p)
{
	tt_buf b = TT_BUF_INIT;
	const char *s = *p;
	if (*s == '"') {
		for (s++; *s; s++) {
			if (*s == '"') {
				if (s[1] == '"') {
					tt_buf_putc(&b, '"');
					s++;
					continue;
				}
				s++;
				break;
			}
			tt_buf_putc(&b, *s);
		}
	} else {
		for (; *s && *s != '.' && *s != ','; s++)
			tt_buf_putc(&b, *s);
	}
	*p = s;
	tt_buf_putc(&b, '\0');
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

static int parse_changes(const char *s, dl_token **out, size_t *n)
{
	dl_token *t = NULL;
	size_t count = 0, alloc = 0;
	*out = NULL;
	*n = 0;
	while (s && *s) {
		const char *colon = strchr(s, ':');
		if (!colon)
			break;
		if (TT_ARRAY_GROW(t, alloc, count + 1) != 0)
			goto oom;
		dl_token *k = &t[count++];
		memset(k, 0, sizeof *k);
		k->kind = -1;
		for (size_t i = 0; i < NKINDS; i++)
			if (strlen(change_kinds[i].token) == (size_t)(colon - s) &&
			    strncmp(change_kinds[i].token, s, (size_t)(colon - s)) == 0)
				k->kind = (int)i;
		if (k->kind < 0 && !(k->raw = tt_strndup(s, (size_t)(colon - s))))
			goto oom;
		s = colon + 1;
		if (k->kind >= 0 && change_kinds[k->kind].value == V_QUAL) {
			if (!(k->a = name_at(&s)))
				goto oom;
			if (*s == '.') {
				s++;
				if (!(k->b = name_at(&s)))
					goto oom;
			}
			/* anything else up to the next token */
			while (*s && *s != ',')
				s++;
		} else if (*s == '"') {
			if (!(k->a = name_at(&s)))
				goto oom;
			while (*s && *s != ',')
				s++;
		} else {
			const char *e = strchr(s, ',');
			size_t len = e ? (size_t)(e - s) : strlen(s);
			if (!(k->a = tt_strndup(s, len)))
				goto oom;
			s += len;
		}
		if (*s == ',')
			s++;
	}
	*out = t;
	*n = count;
	return 0;
oom:
	tokens_release(t, count);
	return TT_ENOMEM;
}

/* A table path: each part double-quoted unless a plain lowercase SQL
 * identifier (sales.europe.orders, "a.child".t). */
static void put_part(tt_buf *b, const char *s)
{
	bool plain = *s && (islower((unsigned char)*s) || *s == '_');
	for (const char *p = s; *p && plain; p++)
		plain = islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '_';
	if (plain) {
		tt_buf_puts(b, s);
		return;
	}
	tt_buf_putc(b, '"');
	for (const char *p = s; *p; p++) {
		if (*p == '"')
			tt_buf_putc(b, '"');
		tt_buf_putc(b, *p);
	}
	tt_buf_putc(b, '"');
}

static char *qualified(const char *schema, const char *name)
{
	tt_buf b = TT_BUF_INIT;
	if (schema && name) {
		put_part(&b, schema);
		tt_buf_putc(&b, '.');
		put_part(&b, name);
	} else {
		put_part(&b, schema ? schema : name ? name : "");
	}
	tt_buf_putc(&b, '\0');
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

/* Every row of ducklake_table with its schema's name (a rename or an
 * alter adds a row with the same table id). */
typedef struct dl_tablerow {
	long long id, begin, end; /* end -1: live */
	char *schema, *name;
} dl_tablerow;

typedef struct dl_tables {
	dl_tablerow *rows;
	size_t n;
} dl_tables;

static void tables_release(dl_tables *t)
{
	for (size_t i = 0; i < t->n; i++) {
		free(t->rows[i].schema);
		free(t->rows[i].name);
	}
	free(t->rows);
	t->rows = NULL;
	t->n = 0;
}

static int load_tables(dl_cat *c, dl_tables *t, tt_error *err)
{
	tt_db_rows r;
	int rc = cat_query(c,
			   "SELECT t.table_id, s.schema_name, t.table_name, t.begin_snapshot, "
			   "t.end_snapshot FROM ducklake_table t JOIN ducklake_schema s ON "
			   "s.schema_id = t.schema_id ORDER BY t.table_id, t.begin_snapshot",
			   NULL, 0, &r, err);
	memset(t, 0, sizeof *t);
	if (rc)
		return rc;
	t->rows = tt_calloc(r.nrows ? r.nrows : 1, sizeof *t->rows);
	if (!t->rows) {
		tt_db_rows_release(&r);
		return KOOM(err);
	}
	for (size_t i = 0; i < r.nrows; i++) {
		char **row = r.cells + i * r.ncols;
		dl_tablerow *x = &t->rows[t->n++];
		x->id = row[0] ? strtoll(row[0], NULL, 10) : -1;
		x->begin = row[3] ? strtoll(row[3], NULL, 10) : 0;
		x->end = row[4] ? strtoll(row[4], NULL, 10) : -1;
		x->schema = tt_strdup(row[1] ? row[1] : "");
		x->name = tt_strdup(row[2] ? row[2] : "");
		if (!x->schema || !x->name) {
			tt_db_rows_release(&r);
			tables_release(t);
			return KOOM(err);
		}
	}
	tt_db_rows_release(&r);
	return 0;
}

/* The row naming table id at snapshot s (s -1: its newest row). */
static const dl_tablerow *table_row(const dl_tables *t, long long id, long long s)
{
	const dl_tablerow *last = NULL;
	for (size_t i = 0; i < t->n; i++) {
		const dl_tablerow *x = &t->rows[i];
		if (x->id != id)
			continue;
		if (s >= 0 && x->begin <= s && (x->end < 0 || s < x->end))
			return x;
		if (!last || x->begin >= last->begin)
			last = x;
	}
	return last;
}

/* The label of a token's value (*out caller-owned). at: the snapshot whose
 * names id-valued tokens take (-1: each table's newest name). */
static char *token_label(const dl_token *k, const dl_tables *t, long long at)
{
	int v = k->kind >= 0 ? change_kinds[k->kind].value : V_ID;
	if (v == V_QUAL)
		return qualified(k->a, k->b);
	if (v == V_TID) {
		char *end;
		long long id = strtoll(k->a, &end, 10);
		const dl_tablerow *x = *k->a && !*end ? table_row(t, id, at) : NULL;
		if (x)
			return qualified(x->schema, x->name);
	}
	return tt_strdup(k->a);
}

/* tether-vcs's words for a set of change keys (sorted, without repeats). */
static const char *word_of(const char *key)
{
	static const char *const words[][2] = {
		{ "tables_created", "created" },        { "tables_altered", "schema altered" },
		{ "tables_inserted_into", "rows inserted" }, { "tables_deleted_from", "rows deleted" },
		{ "inlined_insert", "rows inserted" },  { "inlined_delete", "rows deleted" },
		{ "tables_dropped", "dropped" },        { "schemas_created", "schema created" },
		{ "schemas_dropped", "schema dropped" },
	};
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (strcmp(words[i][0], key) == 0)
			return words[i][1];
	return NULL;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* ", "-join of the distinct strings in v (sorted in place). */
static void put_sorted_unique(tt_buf *b, char **v, size_t n)
{
	if (n > 1)
		qsort(v, n, sizeof *v, cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (i && strcmp(v[i], v[i - 1]) == 0)
			continue;
		if (i)
			tt_buf_puts(b, ", ");
		tt_buf_puts(b, v[i]);
	}
}

static char *word_dup(const char *key)
{
	const char *w = word_of(key);
	if (w)
		return tt_strdup(w);
	char *s = tt_strdup(key);
	for (char *p = s; p && *p; p++)
		if (*p == '_')
			*p = ' ';
	return s;
}

/* The key a token files under. */
static const char *token_key(const dl_token *k)
{
	return k->kind >= 0 ? change_kinds[k->kind].key : k->raw;
}

/* A history message: "<words>: <labels>; ..." in ducklake_snapshots()'s
 * key order. */
static char *message_of(const dl_token *t, size_t n, const dl_tables *tables)
{
	tt_buf b = TT_BUF_INIT;
	bool *done = tt_calloc(n ? n : 1, sizeof *done);
	char **labels = tt_calloc(n ? n : 1, sizeof *labels);
	size_t parts = 0;
	if (!done || !labels)
		goto fail;
	/* known keys in order, then unknown ones in the order they came */
	for (size_t pass = 0; pass <= NKINDS; pass++) {
		for (size_t i = 0; i < n; i++) {
			if (done[i])
				continue;
			const char *key = token_key(&t[i]);
			if (pass < NKINDS ? strcmp(key, change_kinds[pass].key) != 0 : false)
				continue;
			if (pass < NKINDS && pass > 0 && strcmp(change_kinds[pass].key,
								change_kinds[pass - 1].key) == 0)
				continue; /* an alias token spelling the previous key */
			size_t nl = 0;
			for (size_t j = i; j < n; j++) {
				if (done[j] || strcmp(token_key(&t[j]), key) != 0)
					continue;
				done[j] = true;
				if (!(labels[nl++] = token_label(&t[j], tables, -1)))
					goto fail;
			}
			char *w = word_dup(key);
			if (!w)
				goto fail;
			tt_buf_printf(&b, "%s%s: ", parts++ ? "; " : "", w);
			free(w);
			put_sorted_unique(&b, labels, nl);
			for (size_t j = 0; j < nl; j++)
				free(labels[j]);
		}
	}
	free(done);
	free(labels);
	tt_buf_putc(&b, '\0');
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
fail:
	free(done);
	free(labels);
	tt_buf_release(&b);
	return NULL;
}

/* tether-vcs's iso_utc on epoch microseconds. */
static char *iso_utc(long long us)
{
	char out[40];
	long long s = us >= 0 ? us / 1000000 : -((-us + 999999) / 1000000);
	time_t tt = (time_t)s;
	struct tm tm;
	if (!gmtime_r(&tt, &tm))
		return NULL;
	strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
	return tt_strdup(out);
}

/* --- history ---------------------------------------------------------------------- */

static int dl_history(tt_backend *b, const json_t *loc, const char *ref, size_t limit,
		      tt_history_entry **out, size_t *n, tt_error *err)
{
	dl_cat c;
	dl_tables tables = { 0 };
	long long hi;
	tt_db_rows r = { 0 };
	tt_history_entry *entries = NULL;
	size_t count = 0, alloc = 0;
	char sql[512];
	int rc;

	*out = NULL;
	*n = 0;
	if (ref && *ref) {
		json_t *v = json_string(ref);
		rc = v ? number_of(v, "history start", &hi, err) : KOOM(err);
		json_decref(v);
	} else {
		rc = number_of(json_object_get(loc, "at"), "`at`", &hi, err);
	}
	if (rc)
		return rc;
	if ((rc = cat_open(b, loc, &c, err)) != 0)
		return rc;
	if ((rc = load_tables(&c, &tables, err)) != 0)
		goto done;
	snprintf(sql, sizeof sql,
		 "SELECT s.snapshot_id, %s, c.changes_made FROM ducklake_snapshot s LEFT JOIN "
		 "ducklake_snapshot_changes c ON c.snapshot_id = s.snapshot_id %s ORDER BY "
		 "s.snapshot_id DESC LIMIT $%d",
		 c.d == DL_SQLITE ? "s.snapshot_time" : c.d == DL_PG
			 ? "(extract(epoch from s.snapshot_time) * 1000000)::bigint"
			 : "epoch_us(s.snapshot_time)",
		 hi >= 0 ? "WHERE s.snapshot_id <= $1" : "", hi >= 0 ? 2 : 1);
	tt_db_value p[2] = { { TT_DB_INT, NULL, hi }, { TT_DB_INT, NULL, (long long)limit } };
	if ((rc = cat_query(&c, sql, hi >= 0 ? p : p + 1, 1 + (hi >= 0), &r, err)) != 0)
		goto done;
	for (size_t i = 0; i < r.nrows; i++) {
		char **row = r.cells + i * r.ncols;
		long long us = 0;
		dl_token *t = NULL;
		size_t nt = 0;
		if ((rc = time_cell(&c, row[1], &us, err)) != 0)
			goto done;
		if (parse_changes(row[2], &t, &nt) != 0 || TT_ARRAY_GROW(entries, alloc, count + 1)) {
			tokens_release(t, nt);
			rc = KOOM(err);
			goto done;
		}
		tt_history_entry *e = &entries[count++];
		memset(e, 0, sizeof *e);
		e->id = tt_strdup(row[0] ? row[0] : "");
		e->when = iso_utc(us);
		e->message = message_of(t, nt, &tables);
		e->refs = json_array();
		tokens_release(t, nt);
		if (!e->id || !e->when || !e->message || !e->refs) {
			rc = KOOM(err);
			goto done;
		}
	}
	*out = entries;
	*n = count;
	entries = NULL;
done:
	tt_db_rows_release(&r);
	tt_history_release(entries, count);
	tables_release(&tables);
	cat_close(&c);
	return rc;
}

/* --- diff ------------------------------------------------------------------------- */

enum {
	K_CREATED = 1, K_DROPPED = 2, K_ALTERED = 4, K_INSERTED = 8, K_DELETED = 16,
	K_IINSERT = 32, K_IDELETE = 64, K_RENAMED = 128,
};
#define K_DATA (K_INSERTED | K_DELETED | K_IINSERT | K_IDELETE)

typedef struct dl_entity {
	long long tid;            /* -1: known only by its label */
	char *label;
	char *renamed_from;
	unsigned kinds;
	long long *snaps;         /* snapshots that wrote or deleted its rows */
	size_t nsnaps, asnaps;
} dl_entity;

typedef struct dl_other {
	char *key;
	char **values;
	size_t n, alloc;
} dl_other;

static unsigned kind_bit(const char *key)
{
	static const struct { const char *key; unsigned bit; } bits[] = {
		{ "tables_created", K_CREATED },       { "tables_dropped", K_DROPPED },
		{ "tables_altered", K_ALTERED },       { "tables_inserted_into", K_INSERTED },
		{ "tables_deleted_from", K_DELETED },  { "inlined_insert", K_IINSERT },
		{ "inlined_delete", K_IDELETE },
	};
	for (size_t i = 0; i < sizeof bits / sizeof bits[0]; i++)
		if (strcmp(bits[i].key, key) == 0)
			return bits[i].bit;
	return 0;
}

/* The words of a kind set, tether-vcs's _describe (plus a rename). */
static char *describe(unsigned kinds, unsigned other_bits, const char *renamed_from)
{
	static const struct { unsigned bit; const char *word; } words[] = {
		{ K_CREATED, "created" },       { K_DROPPED, "dropped" },
		{ K_ALTERED, "schema altered" }, { K_INSERTED, "rows inserted" },
		{ K_DELETED, "rows deleted" },  { K_IINSERT, "rows inserted" },
		{ K_IDELETE, "rows deleted" },
	};
	char *v[16];
	size_t n = 0;
	char *ren = NULL;
	(void)other_bits;
	for (size_t i = 0; i < sizeof words / sizeof words[0]; i++)
		if (kinds & words[i].bit)
			v[n++] = (char *)words[i].word;
	if ((kinds & K_RENAMED) && renamed_from) {
		if (!(ren = tt_asprintf("renamed from %s", renamed_from)))
			return NULL;
		v[n++] = ren;
	}
	tt_buf b = TT_BUF_INIT;
	put_sorted_unique(&b, v, n);
	tt_buf_putc(&b, '\0');
	free(ren);
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

static bool snap_in(const dl_entity *e, long long s)
{
	for (size_t i = 0; i < e->nsnaps; i++)
		if (e->snaps[i] == s)
			return true;
	return false;
}

typedef struct dl_rowev {
	long long snap, row;
} dl_rowev;

static int cmp_ev(const void *a, const void *b)
{
	const dl_rowev *x = a, *y = b;
	if (x->snap != y->snap)
		return x->snap < y->snap ? -1 : 1;
	return x->row < y->row ? -1 : x->row > y->row;
}

typedef struct dl_evs {
	dl_rowev *v;
	size_t n, alloc;
} dl_evs;

static int ev_push(dl_evs *e, long long snap, long long row)
{
	if (TT_ARRAY_GROW(e->v, e->alloc, e->n + 1) != 0)
		return -1;
	e->v[e->n].snap = snap;
	e->v[e->n++].row = row;
	return 0;
}

/* Per-snapshot sums of file rows inserted and deleted, and of rows in
 * data files that carry their row ids (an UPDATE's new rows); unk: a data
 * file of that snapshot could not be read to tell. */
typedef struct dl_sums {
	long long *snap, *ins, *del, *kept;
	bool *unk;
	size_t n, alloc_s, alloc_i, alloc_d, alloc_k, alloc_u;
} dl_sums;

static int sums_add(dl_sums *s, long long snap, long long ins, long long del, long long kept, bool unk)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->snap[i] == snap) {
			s->ins[i] += ins;
			s->del[i] += del;
			s->kept[i] += kept;
			s->unk[i] = s->unk[i] || unk;
			return 0;
		}
	if (TT_ARRAY_GROW(s->snap, s->alloc_s, s->n + 1) || TT_ARRAY_GROW(s->ins, s->alloc_i, s->n + 1) ||
	    TT_ARRAY_GROW(s->del, s->alloc_d, s->n + 1) || TT_ARRAY_GROW(s->kept, s->alloc_k, s->n + 1) ||
	    TT_ARRAY_GROW(s->unk, s->alloc_u, s->n + 1))
		return -1;
	s->snap[s->n] = snap;
	s->ins[s->n] = ins;
	s->del[s->n] = del;
	s->kept[s->n] = kept;
	s->unk[s->n++] = unk;
	return 0;
}

#define ROW_ID_COLUMN "_ducklake_internal_row_id"

/*
 * Whether a Parquet data file carries DuckLake's row-id column, as the
 * files an UPDATE writes do (their rows keep the ids of the rows they
 * replace); 1 yes, 0 no, -1 cannot tell (not a local file, unreadable,
 * encrypted).  Only the footer is read: the column's name is in its
 * schema.
 */
static int carries_row_ids(const char *path)
{
	unsigned char tail[8];
	int rc = -1;
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	if (fseek(f, -8, SEEK_END) == 0 && fread(tail, 1, 8, f) == 8 && memcmp(tail + 4, "PAR1", 4) == 0) {
		unsigned long len = (unsigned long)tail[0] | (unsigned long)tail[1] << 8 |
				    (unsigned long)tail[2] << 16 | (unsigned long)tail[3] << 24;
		char *footer = len > 0 && len <= (64ul << 20) ? tt_malloc(len) : NULL;
		if (footer && fseek(f, -8 - (long)len, SEEK_END) == 0 && fread(footer, 1, len, f) == len)
			rc = memmem(footer, len, ROW_ID_COLUMN, sizeof ROW_ID_COLUMN - 1) != NULL;
		free(footer);
	}
	fclose(f);
	return rc;
}

/* The directory a table's relative data file paths are under: the
 * catalog's data_path (the locator's when set), the schema's path and the
 * table's, each joined when relative; NULL when not on a local path. */
static char *table_dir(dl_cat *c, const char *loc_data_path, long long tid, tt_error *err, int *rc)
{
	tt_db_rows r = { 0 };
	tt_db_value p = { TT_DB_INT, NULL, tid };
	tt_buf b = TT_BUF_INIT;
	*rc = 0;
	/* the catalog's own (DuckLake uses it over an ATTACH's DATA_PATH) */
	if ((*rc = cat_query(c, "SELECT value FROM ducklake_metadata WHERE key = 'data_path' AND "
			     "scope IS NULL", NULL, 0, &r, err)) != 0)
		goto fail;
	if (r.nrows && r.cells[0] && *r.cells[0])
		tt_buf_puts(&b, r.cells[0]);
	else if (loc_data_path)
		tt_buf_puts(&b, loc_data_path);
	tt_db_rows_release(&r);
	if (!b.len)
		goto none;
	if ((*rc = cat_query(c, "SELECT s.path, s.path_is_relative, t.path, t.path_is_relative FROM "
			     "ducklake_table t JOIN ducklake_schema s ON s.schema_id = t.schema_id WHERE "
			     "t.table_id = $1 ORDER BY t.begin_snapshot DESC LIMIT 1", &p, 1, &r, err)) != 0)
		goto fail;
	if (!r.nrows)
		goto none;
	for (int part = 0; part < 2; part++) {
		const char *path = r.cells[part * 2], *rel = r.cells[part * 2 + 1];
		if (!path)
			continue;
		bool relative = rel && (strcmp(rel, "1") == 0 || strcmp(rel, "true") == 0 || strcmp(rel, "t") == 0);
		if (!relative)
			b.len = 0;
		if (b.len && b.ptr[b.len - 1] != '/')
			tt_buf_putc(&b, '/');
		tt_buf_puts(&b, path);
	}
	tt_db_rows_release(&r);
	tt_buf_putc(&b, '\0');
	if (b.failed) {
		*rc = KOOM(err);
		goto fail;
	}
	/* a local directory only (object stores are not read here) */
	if (strstr(b.ptr, "://") && strncmp(b.ptr, "file://", 7) != 0)
		goto none;
	if (strncmp(b.ptr, "file://", 7) == 0)
		memmove(b.ptr, b.ptr + 7, strlen(b.ptr + 7) + 1);
	return tt_buf_detach(&b);
none:
fail:
	tt_db_rows_release(&r);
	tt_buf_release(&b);
	return NULL;
}

/* The same for one data file: 1, 0, or -1 (cannot tell). */
static int file_carries_row_ids(const char *dir, const char *path, const char *rel)
{
	if (!path)
		return -1;
	bool relative = rel && (strcmp(rel, "1") == 0 || strcmp(rel, "true") == 0 || strcmp(rel, "t") == 0);
	if (!relative)
		return strstr(path, "://") && strncmp(path, "file://", 7) != 0
			       ? -1
			       : carries_row_ids(strncmp(path, "file://", 7) == 0 ? path + 7 : path);
	if (!dir)
		return -1;
	char *full = tt_asprintf("%s%s%s", dir, *dir && dir[strlen(dir) - 1] == '/' ? "" : "/", path);
	int yes = full ? carries_row_ids(full) : -1;
	free(full);
	return yes;
}

static long long cell_ll(const char *s)
{
	return s ? strtoll(s, NULL, 10) : 0;
}

/* Rows one table's snapshots in (lo, hi] inserted, deleted and updated,
 * from its data files, delete files and inlined rows. */
static int row_counts(dl_cat *c, const dl_entity *e, const char *data_path, long long lo, long long hi,
		      long long *ins, long long *del, long long *upd, tt_error *err)
{
	dl_sums sums = { 0 };
	char *dir = NULL;
	dl_evs ie = { 0 }, de = { 0 };
	tt_db_rows r = { 0 }, names = { 0 };
	char sql[512];
	int rc = 0;
	tt_db_value p[3] = { { TT_DB_INT, NULL, e->tid }, { TT_DB_INT, NULL, lo },
			     { TT_DB_INT, NULL, hi } };
	*ins = *del = *upd = 0;

	/* data files a snapshot added, and delete files (each holds the data
	 * file's deletions so far: the new ones are the difference) */
	static const char *const file_sql[] = {
		"SELECT begin_snapshot, record_count, 0, path, path_is_relative FROM ducklake_data_file "
		"WHERE table_id = $1 AND begin_snapshot > $2 AND begin_snapshot <= $3",
		"SELECT d.begin_snapshot, 0, d.delete_count - coalesce((SELECT max(p.delete_count) "
		"FROM ducklake_delete_file p WHERE p.data_file_id = d.data_file_id AND "
		"p.end_snapshot = d.begin_snapshot), 0) FROM ducklake_delete_file d WHERE "
		"d.table_id = $1 AND d.begin_snapshot > $2 AND d.begin_snapshot <= $3",
		"SELECT f.end_snapshot, 0, f.record_count - coalesce((SELECT max(p.delete_count) FROM "
		"ducklake_delete_file p WHERE p.data_file_id = f.data_file_id AND p.begin_snapshot < "
		"f.end_snapshot), 0) FROM ducklake_data_file f WHERE f.table_id = $1 AND "
		"f.end_snapshot > $2 AND f.end_snapshot <= $3",
	};
	for (size_t q = 0; q < 3; q++) {
		if ((rc = cat_query(c, file_sql[q], p, 3, &r, err)) != 0)
			goto done;
		if (q == 0 && r.nrows && !(dir = table_dir(c, data_path, e->tid, err, &rc)) && rc)
			goto done;
		for (size_t i = 0; i < r.nrows; i++) {
			char **row = r.cells + i * r.ncols;
			long long s = cell_ll(row[0]), n = cell_ll(row[1]);
			int kept = q == 0 ? (snap_in(e, s) ? file_carries_row_ids(dir, row[3], row[4]) : 0) : 0;
			if (snap_in(e, s) &&
			    sums_add(&sums, s, n, cell_ll(row[2]), kept > 0 ? n : 0, kept < 0) != 0) {
				rc = KOOM(err);
				goto done;
			}
		}
		tt_db_rows_release(&r);
	}

	/* inlined rows: inserted at begin_snapshot, deleted at end_snapshot */
	if ((rc = cat_query(c, "SELECT table_name FROM ducklake_inlined_data_tables WHERE table_id = $1",
			    p, 1, &names, err)) != 0)
		goto done;
	for (size_t i = 0; i < names.nrows; i++) {
		const char *name = names.cells[i * names.ncols];
		bool there = false;
		if (!name || !tt_db_identifier_ok(name))
			continue;
		if ((rc = cat_has_table(c, name, &there, err)) != 0)
			goto done;
		if (!there)
			continue;
		snprintf(sql, sizeof sql,
			 "SELECT row_id, begin_snapshot, end_snapshot FROM %s WHERE (begin_snapshot > $1 "
			 "AND begin_snapshot <= $2) OR (end_snapshot > $1 AND end_snapshot <= $2)",
			 name);
		if ((rc = cat_query(c, sql, p + 1, 2, &r, err)) != 0)
			goto done;
		for (size_t k = 0; k < r.nrows; k++) {
			char **row = r.cells + k * r.ncols;
			long long id = cell_ll(row[0]), b0 = cell_ll(row[1]);
			long long e0 = row[2] ? cell_ll(row[2]) : -1;
			if (b0 > lo && b0 <= hi && snap_in(e, b0) && ev_push(&ie, b0, id) != 0)
				rc = KOOM(err);
			if (e0 > lo && e0 <= hi && snap_in(e, e0) && ev_push(&de, e0, id) != 0)
				rc = KOOM(err);
			if (rc)
				goto done;
		}
		tt_db_rows_release(&r);
	}
	/* inlined deletions of rows in data files (row ids are global) */
	char dname[64];
	snprintf(dname, sizeof dname, "ducklake_inlined_delete_%lld", e->tid);
	bool there = false;
	if ((rc = cat_has_table(c, dname, &there, err)) != 0)
		goto done;
	if (there) {
		snprintf(sql, sizeof sql,
			 "SELECT row_id, begin_snapshot FROM %s WHERE begin_snapshot > $1 AND "
			 "begin_snapshot <= $2", dname);
		if ((rc = cat_query(c, sql, p + 1, 2, &r, err)) != 0)
			goto done;
		for (size_t k = 0; k < r.nrows; k++) {
			char **row = r.cells + k * r.ncols;
			long long s = cell_ll(row[1]);
			if (snap_in(e, s) && ev_push(&de, s, cell_ll(row[0])) != 0) {
				rc = KOOM(err);
				goto done;
			}
		}
		tt_db_rows_release(&r);
	}

	/* an insert and a delete of one row id in one snapshot: an update */
	if (ie.n > 1)
		qsort(ie.v, ie.n, sizeof *ie.v, cmp_ev);
	if (de.n > 1)
		qsort(de.v, de.n, sizeof *de.v, cmp_ev);
	long long inl_upd = 0;
	for (size_t i = 0, j = 0; i < ie.n && j < de.n;) {
		int d = cmp_ev(&ie.v[i], &de.v[j]);
		if (d == 0) {
			inl_upd++;
			i++;
			j++;
		} else if (d < 0) {
			i++;
		} else {
			j++;
		}
	}
	long long fi = 0, fd = 0, fu = 0;
	for (size_t i = 0; i < sums.n; i++) {
		fi += sums.ins[i];
		fd += sums.del[i];
		/* an UPDATE's new rows keep their row ids, in files that carry
		 * them: each replaces a deleted row.  A file that could not be
		 * read leaves the smaller of the two counts. */
		long long u = sums.unk[i] ? sums.ins[i] : sums.kept[i];
		fu += u < sums.del[i] ? u : sums.del[i];
	}
	*upd = inl_upd + fu;
	*ins = (long long)ie.n + fi - *upd;
	*del = (long long)de.n + fd - *upd;
done:
	tt_db_rows_release(&r);
	tt_db_rows_release(&names);
	free(sums.snap);
	free(sums.ins);
	free(sums.del);
	free(sums.kept);
	free(sums.unk);
	free(dir);
	free(ie.v);
	free(de.v);
	return rc;
}

static dl_entity *entity_for(dl_entity **ents, size_t *n, size_t *alloc, long long tid,
			     const char *label)
{
	for (size_t i = 0; i < *n; i++)
		if (tid >= 0 ? (*ents)[i].tid == tid : ((*ents)[i].tid < 0 && strcmp((*ents)[i].label, label) == 0))
			return &(*ents)[i];
	if (TT_ARRAY_GROW(*ents, *alloc, *n + 1) != 0)
		return NULL;
	dl_entity *e = &(*ents)[(*n)++];
	memset(e, 0, sizeof *e);
	e->tid = tid;
	e->label = label ? tt_strdup(label) : NULL;
	if (label && !e->label) {
		(*n)--;
		return NULL;
	}
	return e;
}

static int cmp_entity(const void *a, const void *b)
{
	const dl_entity *x = a, *y = b;
	return strcmp(x->label ? x->label : "", y->label ? y->label : "");
}

static int cmp_other(const void *a, const void *b)
{
	return strcmp(((const dl_other *)a)->key, ((const dl_other *)b)->key);
}

static int add_note(tt_object_diff *out, const char *note, tt_error *err)
{
	char *n = out->note && *out->note ? tt_asprintf("%s; %s", out->note, note) : tt_strdup(note);
	if (!n)
		return KOOM(err);
	free(out->note);
	out->note = n;
	return 0;
}

static int dl_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		   const char *la, const char *lb, tt_object_diff *out, tt_error *err)
{
	dl_cat c = { 0 };
	dl_tables tables = { 0 };
	tt_db_rows r = { 0 };
	dl_entity *ents = NULL;
	dl_other *others = NULL;
	size_t nents = 0, aents = 0, nothers = 0, aothers = 0;
	long long sa, sb, lo, hi;
	bool opened = false;
	int rc;

	(void)la, (void)lb;
	tt_object_diff_init(out, "tables");
	if ((rc = state_snapshot(a, &sa, err)) != 0 || (rc = state_snapshot(bstate, &sb, err)) != 0)
		return rc;
	if (sa == sb) {
		if (!json_equal(json_object_get(a, "snapshot_time_us"),
				json_object_get(bstate, "snapshot_time_us")))
			return add_note(out, "catalog was recreated between the two states", err);
		return 0;
	}
	lo = sa < sb ? sa : sb;
	hi = sa < sb ? sb : sa;
	if (sb < sa && (rc = add_note(out, "b is older than a", err)) != 0)
		return rc;
	if ((rc = cat_open(b, loc, &c, err)) != 0)
		goto done;
	opened = true;
	if ((rc = load_tables(&c, &tables, err)) != 0)
		goto done;
	tt_db_value p[2] = { { TT_DB_INT, NULL, lo }, { TT_DB_INT, NULL, hi } };
	if ((rc = cat_query(&c,
			    "SELECT snapshot_id, changes_made FROM ducklake_snapshot_changes WHERE "
			    "snapshot_id > $1 AND snapshot_id <= $2 ORDER BY snapshot_id",
			    p, 2, &r, err)) != 0)
		goto done;
	for (size_t i = 0; i < r.nrows; i++) {
		long long s = cell_ll(r.cells[i * r.ncols]);
		dl_token *t = NULL;
		size_t nt = 0;
		if (parse_changes(r.cells[i * r.ncols + 1], &t, &nt) != 0) {
			rc = KOOM(err);
			goto done;
		}
		for (size_t k = 0; k < nt && rc == 0; k++) {
			const char *key = token_key(&t[k]);
			bool per_table = strncmp(key, "tables_", 7) == 0 || strncmp(key, "inlined_", 8) == 0;
			char *label = NULL;
			if (!per_table) {
				dl_other *o = NULL;
				for (size_t j = 0; j < nothers; j++)
					if (strcmp(others[j].key, key) == 0)
						o = &others[j];
				if (!o) {
					if (TT_ARRAY_GROW(others, aothers, nothers + 1) != 0) {
						rc = KOOM(err);
						break;
					}
					o = &others[nothers++];
					memset(o, 0, sizeof *o);
					if (!(o->key = tt_strdup(key))) {
						rc = KOOM(err);
						break;
					}
				}
				if (TT_ARRAY_GROW(o->values, o->alloc, o->n + 1) != 0 ||
				    !(o->values[o->n] = token_label(&t[k], &tables, hi)))
					rc = KOOM(err);
				else
					o->n++;
				continue;
			}
			long long tid = -1;
			const dl_tablerow *prev = NULL; /* the row a rename ended */
			unsigned bit = kind_bit(key);
			if (t[k].kind >= 0 && change_kinds[t[k].kind].value == V_QUAL) {
				/* a created table: the row that began here under that name */
				for (size_t j = 0; j < tables.n; j++) {
					const dl_tablerow *x = &tables.rows[j];
					if (x->begin == s && t[k].b && strcmp(x->schema, t[k].a) == 0 &&
					    strcmp(x->name, t[k].b) == 0)
						tid = x->id;
				}
				/* ... which a rename made when the same table ended a row here */
				for (size_t j = 0; tid >= 0 && j < tables.n; j++)
					if (tables.rows[j].id == tid && tables.rows[j].end == s)
						prev = &tables.rows[j];
			} else if (t[k].a && *t[k].a) {
				char *end;
				long long id = strtoll(t[k].a, &end, 10);
				if (!*end && table_row(&tables, id, hi))
					tid = id;
			}
			const dl_tablerow *cur = tid >= 0 ? table_row(&tables, tid, hi) : NULL;
			label = cur ? qualified(cur->schema, cur->name) : token_label(&t[k], &tables, hi);
			dl_entity *e = label ? entity_for(&ents, &nents, &aents, tid, label) : NULL;
			free(label);
			if (!e) {
				rc = KOOM(err);
				break;
			}
			if (prev) {
				e->kinds |= K_RENAMED;
				if (!e->renamed_from && !(e->renamed_from = qualified(prev->schema, prev->name))) {
					rc = KOOM(err);
					break;
				}
			} else {
				e->kinds |= bit;
			}
			if ((bit & K_DATA) && !snap_in(e, s)) {
				if (TT_ARRAY_GROW(e->snaps, e->asnaps, e->nsnaps + 1) != 0) {
					rc = KOOM(err);
					break;
				}
				e->snaps[e->nsnaps++] = s;
			}
		}
		tokens_release(t, nt);
		if (rc)
			goto done;
	}
	if (nents > 1)
		qsort(ents, nents, sizeof *ents, cmp_entity);
	size_t counted = 0;
	for (size_t i = 0; i < nents; i++) {
		dl_entity *e = &ents[i];
		char *detail = NULL;
		const char *change = "modified";
		if (e->kinds & K_DROPPED) {
			rc = tt_object_diff_add(out, e->label, "removed", "dropped", err);
			if (rc)
				goto done;
			continue;
		}
		if (e->kinds & K_CREATED)
			change = "added";
		else if (e->kinds & K_RENAMED)
			change = "renamed";
		if ((e->kinds & K_DATA) && e->tid >= 0) {
			long long ni, nd, nu;
			if ((rc = row_counts(&c, e, data_path_of(loc), lo, hi, &ni, &nd, &nu, err)) != 0)
				goto done;
			tt_buf d = TT_BUF_INIT;
			size_t parts = 0;
			if (ni)
				tt_buf_printf(&d, "%s+%lld rows", parts++ ? ", " : "", ni);
			if (nd)
				tt_buf_printf(&d, "%s-%lld rows", parts++ ? ", " : "", nd);
			if (nu)
				tt_buf_printf(&d, "%s%lld update_postimage, %lld update_preimage",
					      parts++ ? ", " : "", nu, nu);
			char *extra = describe(e->kinds & ~K_DATA, 0, e->renamed_from);
			if (!extra) {
				tt_buf_release(&d);
				rc = KOOM(err);
				goto done;
			}
			if (*extra)
				tt_buf_printf(&d, "%s%s", parts++ ? ", " : "", extra);
			free(extra);
			tt_buf_putc(&d, '\0');
			if (d.failed) {
				tt_buf_release(&d);
				rc = KOOM(err);
				goto done;
			}
			if (parts && ++counted <= MAX_ROW_COUNTED_TABLES)
				detail = tt_buf_detach(&d);
			tt_buf_release(&d);
		}
		if (!detail && !(detail = describe(e->kinds, 0, e->renamed_from))) {
			rc = KOOM(err);
			goto done;
		}
		rc = tt_object_diff_add(out, e->label, change, detail, err);
		free(detail);
		if (rc)
			goto done;
	}
	if (nothers > 1)
		qsort(others, nothers, sizeof *others, cmp_other);
	for (size_t i = 0; i < nothers; i++) {
		tt_buf d = TT_BUF_INIT;
		put_sorted_unique(&d, others[i].values, others[i].n);
		tt_buf_putc(&d, '\0');
		if (d.failed) {
			tt_buf_release(&d);
			rc = KOOM(err);
			goto done;
		}
		rc = tt_object_diff_add(out, others[i].key, "modified", d.ptr, err);
		tt_buf_release(&d);
		if (rc)
			goto done;
	}
done:
	tt_db_rows_release(&r);
	for (size_t i = 0; i < nents; i++) {
		free(ents[i].label);
		free(ents[i].renamed_from);
		free(ents[i].snaps);
	}
	free(ents);
	for (size_t i = 0; i < nothers; i++) {
		free(others[i].key);
		for (size_t j = 0; j < others[i].n; j++)
			free(others[i].values[j]);
		free(others[i].values);
	}
	free(others);
	tables_release(&tables);
	if (opened)
		cat_close(&c);
	if (rc)
		tt_object_diff_release(out);
	return rc;
}

/* --- open ------------------------------------------------------------------------- */

/* A SQL string literal. */
static void put_literal(tt_buf *b, const char *s)
{
	tt_buf_putc(b, '\'');
	for (; *s; s++) {
		if (*s == '\'')
			tt_buf_putc(b, '\'');
		tt_buf_putc(b, *s);
	}
	tt_buf_putc(b, '\'');
}

/* The ATTACH statement a DuckDB user pastes to read the catalog (at
 * SNAPSHOT_VERSION when sid >= 0), read-only. */
static char *attach_sql(const char *metadata, const char *alias, const char *data_path,
			long long sid)
{
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, "ATTACH ");
	put_literal(&b, metadata);
	tt_buf_printf(&b, " AS %s (", alias);
	if (data_path) {
		tt_buf_puts(&b, "DATA_PATH ");
		put_literal(&b, data_path);
		tt_buf_puts(&b, ", ");
	}
	if (sid >= 0)
		tt_buf_printf(&b, "SNAPSHOT_VERSION %lld, ", sid);
	tt_buf_puts(&b, "READ_ONLY)");
	tt_buf_putc(&b, '\0');
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

int tt_ducklake_alias(const char *metadata, char out[16])
{
	uint8_t h[4];
	if (tt_blake2b(h, sizeof h, metadata, strlen(metadata)) != 0)
		return -1;
	snprintf(out, 16, "tether_%02x%02x%02x%02x", h[0], h[1], h[2], h[3]);
	return 0;
}

/*
 * What a caller in this process needs to attach the catalog itself (the
 * Python package's DuckLakeHandle), credentials included: the ATTACH with
 * the secrets' libpq words for a PostgreSQL catalog (`secret_attach_sql`)
 * and secrets.toml's `init_sql` statements (`secret_init_sql`).  A secret_
 * key is never printed (see tether.h).
 */
static int secret_attach(tt_backend *b, const json_t *loc, const dl_cat *c, const char *alias,
			 const char *dp, long long sid, json_t *handle, tt_error *err)
{
	json_t *sec = NULL, *init = NULL;
	int rc;
	if (c->d == DL_PG) {
		tt_buf ci = TT_BUF_INIT;
		char *full = NULL, *sql = NULL;
		if ((rc = pg_conninfo(b, loc, c->metadata + 18, &ci, err)) == 0) {
			full = tt_asprintf("ducklake:postgres:%s", ci.ptr);
			sql = full ? attach_sql(full, alias, dp, sid) : NULL;
			if (!sql || json_object_set_new(handle, "secret_attach_sql", json_string(sql)) < 0)
				rc = KOOM(err);
		}
		if (ci.ptr)
			memset(ci.ptr, 0, ci.len);
		tt_buf_release(&ci);
		if (full)
			memset(full, 0, strlen(full));
		if (sql)
			memset(sql, 0, strlen(sql));
		free(full);
		free(sql);
		if (rc)
			return rc;
	}
	if ((rc = tt_backend_secrets_for(b, loc, &sec, err)) != 0)
		return rc;
	json_t *v = json_object_get(sec, "init_sql");
	if (json_is_string(v))
		init = json_pack("[O]", v);
	else if (json_is_array(v))
		init = json_deep_copy(v);
	json_decref(sec);
	if (init && json_object_set_new(handle, "secret_init_sql", init) < 0)
		return KOOM(err);
	return 0;
}

static int dl_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		   json_t **handle, tt_error *err)
{
	dl_cat c;
	long long sid = -1, id = -1, us = 0;
	bool found = false, positioned = false;
	char alias[16], *sql = NULL, *address = NULL;
	int rc;

	(void)read_only; /* tether never writes DuckLake catalogs */
	*handle = NULL;
	if (target->kind == TT_TARGET_PIN)
		return KERR(err, TT_ECAPABILITY, "ducklake has no tags; snapshots are recorded only");
	if (target->kind == TT_TARGET_STATE)
		rc = state_snapshot(target->state, &sid, err);
	else if (target->kind == TT_TARGET_BASE)
		rc = number_of(json_object_get(loc, "at"), "`at`", &sid, err);
	else
		rc = 0;
	if (rc)
		return rc;
	positioned = sid >= 0;
	if ((rc = cat_open(b, loc, &c, err)) != 0)
		return rc;
	if ((rc = cat_snapshot(&c, sid, &found, &id, &us, err)) != 0)
		goto done;
	if (!found) {
		rc = KERR(err, TT_EBACKEND, "snapshot %lld is not in the catalog %s (expired?)", sid,
			  c.where);
		goto done;
	}
	const char *dp = data_path_of(loc);
	json_t *table = json_object_get(loc, "table");
	if (tt_ducklake_alias(c.metadata, alias) != 0 ||
	    !(sql = attach_sql(c.metadata, alias, dp, positioned ? id : -1)) ||
	    !(address = tt_asprintf("%s#snapshot=%lld", c.metadata, id)) ||
	    !(*handle = json_pack("{s:s, s:s, s:b, s:s, s:s, s:I, s:s, s:o, s:o}", "type", KIND,
				  "address", address, "read_only", 1, "metadata", c.metadata,
				  "alias", alias, "snapshot_id", (json_int_t)id, "attach_sql", sql,
				  "data_path", dp ? json_string(dp) : json_null(), "table",
				  json_is_string(table) ? json_copy(table) : json_null()))) {
		rc = KOOM(err);
		goto done;
	}
	if (json_is_string(table)) {
		char *ref = tt_asprintf("%s.%s", alias, json_string_value(table));
		if (!ref || json_object_set_new(*handle, "table_ref", json_string(ref)) < 0)
			rc = KOOM(err);
		free(ref);
	}
	if (rc == 0)
		rc = secret_attach(b, loc, &c, alias, dp, positioned ? id : -1, *handle, err);
done:
	if (rc) {
		json_decref(*handle);
		*handle = NULL;
	}
	free(sql);
	free(address);
	cat_close(&c);
	return rc;
}

/* --- the backend ------------------------------------------------------------------- */

static void dl_free(tt_backend *b)
{
	b->impl = NULL;
}

static const tt_backend_ops ducklake_ops = {
	.abi = TT_BACKEND_ABI,
	.no_pin = "ducklake has no tags; snapshots are recorded only",
	.no_fork = "ducklake cannot fork; copy the catalog instead",
	.identity = dl_identity,
	.fingerprint = dl_fingerprint,
	.pin = tt_kit_no_pin,
	.unpin = tt_kit_no_unpin,
	.list_pins = tt_kit_no_pins,
	.verify = dl_verify,
	.fork = tt_kit_no_fork,
	.delete_working_ref = tt_kit_no_working_ref,
	.open = dl_open,
	.diff = dl_diff,
	.history = dl_history,
	.free = dl_free,
};

int tt_ducklake_backend_new(tt_backend *b, tt_error *err)
{
	(void)err;
	b->ops = &ducklake_ops;
	b->impl = NULL;
	return 0;
}
