/*
 * backends/iceberg/iceberg.c - Apache Iceberg tables through their catalog
 * (Forkable, experimental; RETENTION_BOUND, DIFF, HISTORY, PROMOTE and
 * CONDITIONAL_REF).
 *
 * The catalog is spoken natively: a SQL catalog with pyiceberg's schema
 * (iceberg_tables, iceberg_namespace_properties) on SQLite or PostgreSQL,
 * through src/db.  Table metadata is read natively (iceberg_meta.c) from
 * the metadata file the catalog points at, on a local (file://)
 * warehouse.  A commit writes the next metadata file
 * (<version+1>-<uuid4>.metadata.json, created exclusively) and swaps the
 * catalog's metadata_location with a compare-and-set on the location it
 * read, exactly as pyiceberg does, so both can write one catalog; when the
 * swap finds another location the table is read again and the change's
 * requirement (the ref at the head the plan reviewed) checked afresh, so a
 * ref only ever moves from the head that was reviewed.
 *
 * State: {"snapshot_id": <the ref's snapshot>} only (metadata_location is
 * volatile: it changes with every commit on any branch); -1 for a table
 * with no snapshot yet, which needs no tag to hold and cannot be forked.
 * Pin: the tag tether.<id>; fork: the branch tether.ws.*, created or
 * re-pointed; promote: the base branch set to the fork's snapshot when the
 * base head is its ancestor.
 *
 * Committed catalog properties (tether.toml or the locator) are exactly
 * type, warehouse and name; uri, credentials and every other property come
 * from .tether/secrets.toml ([backends.iceberg] catalog, or the object's
 * own entry), and never reach a message, a state or a handle.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/kit.h"
#include "backends/iceberg/iceberg_meta.h"
#include "backends/iceberg/iceberg_rest.h"
#include "core/ids.h"
#include "core/pyvalue.h"
#include "core/secrets.h"
#include "db/db.h"
#include "util/buf.h"
#include "util/fault.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"

#define KIND "iceberg"
#define EMPTY TT_ICEBERG_NO_SNAPSHOT
#define COMMIT_ATTEMPTS 8


static const char *const safe_catalog_keys[] = { "type", "warehouse", "name", NULL };

/* --- the locator ---------------------------------------------------------------- */

static const char *str_of(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

static int get_ident(const json_t *loc, const char **out, tt_error *err)
{
	*out = str_of(loc, "identifier");
	if (!*out)
		*out = str_of(loc, "table");
	if (!*out)
		return KERR(err, TT_ECONFIG, "iceberg locator needs 'identifier' (namespace.table)");
	return 0;
}

static int base_branch_of(const json_t *loc, char **out, tt_error *err)
{
	const char *b = str_of(loc, "branch");
	*out = tt_strdup(b ? b : "main");
	return *out ? 0 : KOOM(err);
}

static const char *catalog_name_of(const json_t *loc, const json_t *props)
{
	const char *n = str_of(loc, "catalog_name");
	if (!n)
		n = str_of(props, "name");
	return n ? n : "default";
}

/* A committed locator may set only the safe catalog keys. */
static int check_committed(const json_t *loc, tt_error *err)
{
	const json_t *cat = json_object_get(loc, "catalog");
	const char *k;
	json_t *v;
	tt_buf bad = TT_BUF_INIT;
	size_t n = 0;
	int rc = 0;
	if (!cat || json_is_null(cat))
		return 0;
	if (!json_is_object(cat))
		return KERR(err, TT_ECONFIG, "iceberg locator's 'catalog' must be a table of properties");
	/* json objects iterate in insertion order; report sorted like tether-vcs */
	const char **names = tt_calloc(json_object_size(cat) + 1, sizeof *names);
	if (!names)
		return KOOM(err);
	json_object_foreach((json_t *)cat, k, v) {
		bool ok = false;
		for (const char *const *s = safe_catalog_keys; *s; s++)
			ok = ok || strcmp(*s, k) == 0;
		if (!ok)
			names[n++] = k;
	}
	if (n) {
		qsort(names, n, sizeof *names, tt_cmp_cstr);
		for (size_t i = 0; i < n; i++)
			tt_buf_printf(&bad, "%scatalog.%s", i ? ", " : "", names[i]);
		rc = bad.failed ? KOOM(err)
				: KERR(err, TT_ECONFIG,
				       "iceberg locator sets %s; a manifest is committed and may only set "
				       "catalog.{name, type, warehouse} -- put the rest in "
				       ".tether/secrets.toml under [backends.iceberg] catalog or "
				       "[uris.\"<identifier>\"]",
				       bad.ptr);
	}
	tt_buf_release(&bad);
	free(names);
	return rc;
}

/* The catalog properties for an object: the kind's (committed, then
 * secrets.toml), the locator's, then the object's own secrets entry. */
static int catalog_props(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	const char *ident;
	json_t *props = json_object(), *rule;
	int rc;
	*out = NULL;
	if (!props)
		return KOOM(err);
	if ((rc = get_ident(loc, &ident, err)) != 0 || (rc = check_committed(loc, err)) != 0) {
		json_decref(props);
		return rc;
	}
	rule = tt_secrets_rule_for(b->secret_rules, ident);
	const json_t *layers[] = { json_object_get(b->config, "catalog"), json_object_get(loc, "catalog"),
				   rule ? json_object_get(rule, "catalog") : NULL };
	for (size_t i = 0; i < 3; i++)
		if (json_is_object(layers[i]) && tt_secrets_merge(props, layers[i]) < 0) {
			json_decref(props);
			return KOOM(err);
		}
	*out = props;
	return 0;
}

/* --- local paths ---------------------------------------------------------------- */

/* The local path a file:// URI or an absolute path names (NULL: not local). */
static char *local_path(const char *uri)
{
	if (strncmp(uri, "file://", 7) == 0) {
		const char *p = uri + 7;
		if (*p != '/')
			return NULL; /* file://host/... */
		return tt_path_normalize(p);
	}
	if (strncmp(uri, "file:/", 6) == 0)
		return tt_path_normalize(uri + 5);
	if (uri[0] == '/')
		return tt_path_normalize(uri);
	return NULL;
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '/' || path[n] == '\0');
}

/* --- the table through its catalog ---------------------------------------------- */

typedef struct ib_table {
	tt_backend *b;
	const json_t *loc;
	const char *ident;
	char *ns, *name;
	const char *catalog_name;
	json_t *props;
	char *warehouse;      /* local path, or NULL */
	tt_db *db;
	tt_iceberg_rest *rest; /* a REST catalog (then db is NULL) */
	bool typed;           /* iceberg_tables has iceberg_type (pyiceberg's "v1" schema) */
	char *location;       /* metadata_location as the catalog holds it */
	tt_iceberg_meta meta;
	bool loaded;
} ib_table;

static void table_release(ib_table *t)
{
	free(t->ns);
	free(t->name);
	json_decref(t->props);
	free(t->warehouse);
	tt_db_close(t->db);
	tt_iceberg_rest_close(t->rest);
	free(t->location);
	tt_iceberg_meta_release(&t->meta);
	memset(t, 0, sizeof *t);
}

/* The catalog type: `type`, else what the uri says (as pyiceberg infers). */
static const char *catalog_type(const json_t *props)
{
	const char *type = str_of(props, "type");
	const char *uri = str_of(props, "uri");
	if (type)
		return type;
	if (!uri)
		return NULL;
	if (strncmp(uri, "http", 4) == 0)
		return "rest";
	if (strncmp(uri, "sqlite", 6) == 0 || strncmp(uri, "postgresql", 10) == 0)
		return "sql";
	return NULL;
}

/* A SQLAlchemy URL as a tt_db target: sqlite[+driver]:///path -> path,
 * postgresql[+driver]://... -> postgresql://... */
static char *db_target(const char *uri)
{
	const char *p;
	if (strncmp(uri, "sqlite", 6) == 0) {
		p = strstr(uri, ":///");
		if (!p || !p[4])
			return NULL;
		/* sqlite:///rel.db is relative, sqlite:////abs.db absolute */
		char *path = tt_strdup(p + 4);
		if (path) {
			char *q = strchr(path, '?');
			if (q)
				*q = '\0';
		}
		return path;
	}
	if (strncmp(uri, "postgresql", 10) == 0) {
		p = strstr(uri, "://");
		return p ? tt_asprintf("postgresql%s", p) : NULL;
	}
	return NULL;
}

static int split_ident(ib_table *t, tt_error *err)
{
	const char *dot = strrchr(t->ident, '.');
	t->ns = dot ? tt_strndup(t->ident, (size_t)(dot - t->ident)) : tt_strdup("");
	t->name = tt_strdup(dot ? dot + 1 : t->ident);
	return t->ns && t->name ? 0 : KOOM(err);
}

/* A REST catalog: its config read and the client authenticated.  Its
 * warehouse may be a name the server knows rather than a path: only a local
 * one bounds where metadata may live. */
static int rest_connect(ib_table *t, const char *uri, tt_error *err)
{
	const char *wh = str_of(t->props, "warehouse");
	if (!uri)
		return KERR(err, TT_ECONFIG,
			    "iceberg REST catalog '%s' for %s has no uri; set catalog.uri "
			    "(http(s)://...) in .tether/secrets.toml under [backends.iceberg]",
			    t->catalog_name, t->ident);
	if (wh && (strncmp(wh, "file:", 5) == 0 || wh[0] == '/'))
		t->warehouse = local_path(wh);
	return tt_iceberg_rest_open(t->props, t->ident, &t->rest, err);
}

static int table_connect(tt_backend *b, const json_t *loc, ib_table *t, tt_error *err)
{
	const char *type, *uri, *wh;
	char *target = NULL;
	tt_db_opts opts = { 0 };
	tt_db_rows rows = { 0 };
	int rc;

	memset(t, 0, sizeof *t);
	t->b = b;
	t->loc = loc;
	if ((rc = get_ident(loc, &t->ident, err)) != 0 || (rc = catalog_props(b, loc, &t->props, err)) != 0 ||
	    (rc = split_ident(t, err)) != 0)
		return rc;
	t->catalog_name = catalog_name_of(loc, t->props);
	type = catalog_type(t->props);
	uri = str_of(t->props, "uri");
	if (!type)
		return KERR(err, TT_ECONFIG,
			    "iceberg catalog '%s' for %s has no type and no uri to tell it from; set "
			    "catalog = { type = \"sql\", uri = \"sqlite:///...\" } under [backends.iceberg] "
			    "in .tether/secrets.toml",
			    t->catalog_name, t->ident);
	if (strcmp(type, "rest") == 0)
		return rest_connect(t, uri, err);
	if (strcmp(type, "sql") != 0)
		return KERR(err, TT_ECAPABILITY,
			    "iceberg catalog type '%s' (for %s) is not supported by this tether yet; "
			    "use a SQL catalog (type = \"sql\") on SQLite or PostgreSQL, or a REST "
			    "catalog (type = \"rest\")",
			    type, t->ident);
	if (!uri)
		return KERR(err, TT_ECONFIG,
			    "iceberg SQL catalog '%s' for %s has no uri; set catalog.uri (sqlite:///... or "
			    "postgresql://...) in .tether/secrets.toml under [backends.iceberg]",
			    t->catalog_name, t->ident);
	if (!(target = db_target(uri)))
		return KERR(err, TT_ECONFIG,
			    "iceberg SQL catalog '%s' for %s: the uri is neither sqlite:///<path> nor "
			    "postgresql://...; fix catalog.uri in .tether/secrets.toml",
			    t->catalog_name, t->ident);
	wh = str_of(t->props, "warehouse");
	if (wh && !(t->warehouse = local_path(wh))) {
		free(target);
		return KERR(err, TT_ECAPABILITY,
			    "iceberg warehouse for %s is not on a local file system (file://); object-store "
			    "warehouses are not supported by this tether yet",
			    t->ident);
	}
	opts.timeout_ms = 30000;
	rc = tt_db_open(&t->db, target, &opts, err);
	free(target);
	if (rc) {
		tt_error_object(err, NULL, KIND);
		return rc;
	}
	/* pyiceberg's "v1" catalog schema has iceberg_type (views beside tables). */
	rc = tt_db_query(t->db, "SELECT iceberg_type FROM iceberg_tables LIMIT 0", NULL, 0, &rows, err);
	tt_db_rows_release(&rows);
	t->typed = rc == 0;
	tt_error_clear(err);
	return 0;
}

/* Take a REST catalog's table (loaded, or the answer to a commit; NULL:
 * load it now) as the table's location and metadata. */
static int rest_load(ib_table *t, tt_iceberg_rest_table *given, tt_error *err)
{
	tt_iceberg_rest_table got = { NULL, TT_BUF_INIT };
	tt_iceberg_rest_table *rt = given ? given : &got;
	char *path = NULL, *what = NULL;
	tt_iceberg_meta meta;
	int rc = 0;

	if (!given && (rc = tt_iceberg_rest_load(t->rest, t->ns, t->name, t->ident, &got, err)) != 0)
		goto done;
	if (t->warehouse && (path = local_path(rt->location)) && !under(path, t->warehouse)) {
		rc = KERR(err, TT_EBACKEND,
			  "iceberg table %s: metadata location %s is outside the catalog's warehouse %s; "
			  "refusing to read or write there (check the catalog entry and catalog.warehouse)",
			  t->ident, rt->location, t->warehouse);
		goto done;
	}
	if (!(what = tt_asprintf("iceberg table %s metadata %s", t->ident, rt->location))) {
		rc = KOOM(err);
		goto done;
	}
	memset(&meta, 0, sizeof meta);
	if ((rc = tt_iceberg_meta_parse(rt->metadata.ptr, rt->metadata.len, what, &meta, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	free(t->location);
	tt_iceberg_meta_release(&t->meta);
	t->meta = meta;
	t->location = rt->location;
	rt->location = NULL;
	t->loaded = true;
done:
	tt_iceberg_rest_table_release(&got);
	free(path);
	free(what);
	return rc;
}

/* Read the table's catalog row and its metadata file. */
static int table_load(ib_table *t, tt_error *err)
{
	tt_db_value p[3] = { { TT_DB_TEXT, t->catalog_name, 0 }, { TT_DB_TEXT, t->ns, 0 },
			     { TT_DB_TEXT, t->name, 0 } };
	tt_db_rows rows = { 0 };
	tt_buf text = TT_BUF_INIT;
	char *path = NULL, *what = NULL;
	int rc;

	free(t->location);
	t->location = NULL;
	tt_iceberg_meta_release(&t->meta);
	t->loaded = false;
	if (t->rest)
		return rest_load(t, NULL, err);
	rc = tt_db_query(t->db,
			 t->typed ? "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 "
				    "AND table_namespace = $2 AND table_name = $3 AND "
				    "(iceberg_type = 'TABLE' OR iceberg_type IS NULL)"
				  : "SELECT metadata_location FROM iceberg_tables WHERE catalog_name = $1 "
				    "AND table_namespace = $2 AND table_name = $3",
			 p, 3, &rows, err);
	if (rc) {
		if (strstr(err->message ? err->message : "", "no such table"))
			tt_error_hint(err, "is this an Iceberg SQL catalog? pyiceberg creates "
					   "iceberg_tables on first use");
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	if (rows.nrows == 0 || !rows.cells[0]) {
		/* pyiceberg's words, as tether-vcs passes them on; the hint says where. */
		rc = KERR(err, TT_EBACKEND, "iceberg: NoSuchTableError: Table does not exist: %s", t->ident);
		tt_error_hint(err, "looked up in catalog '%s' (%s)", t->catalog_name, tt_db_where(t->db));
		goto done;
	}
	if (!(t->location = tt_strdup(rows.cells[0]))) {
		rc = KOOM(err);
		goto done;
	}
	if (!(path = local_path(t->location))) {
		rc = KERR(err, TT_ECAPABILITY,
			  "iceberg table %s: metadata location %s is not on a local file system; "
			  "object-store warehouses are not supported by this tether yet",
			  t->ident, t->location);
		goto done;
	}
	if (t->warehouse && !under(path, t->warehouse)) {
		rc = KERR(err, TT_EBACKEND,
			  "iceberg table %s: metadata location %s is outside the catalog's warehouse %s; "
			  "refusing to read or write there (check the catalog entry and catalog.warehouse)",
			  t->ident, t->location, t->warehouse);
		goto done;
	}
	if ((rc = tt_read_file(path, &text, TT_ICEBERG_META_MAX, err)) != 0) {
		tt_error_prefix(err, "iceberg table %s: cannot read its metadata", t->ident);
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	what = tt_asprintf("iceberg table %s metadata %s", t->ident, t->location);
	if (!what) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = tt_iceberg_meta_parse(text.ptr, text.len, what, &t->meta, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	t->loaded = true;
done:
	tt_db_rows_release(&rows);
	tt_buf_release(&text);
	free(path);
	free(what);
	return rc;
}

static int table_open(tt_backend *b, const json_t *loc, ib_table *t, tt_error *err)
{
	int rc = table_connect(b, loc, t, err);
	if (rc == 0)
		rc = table_load(t, err);
	if (rc)
		table_release(t);
	return rc;
}

/* --- commits -------------------------------------------------------------------- */

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A change to apply to fresh metadata: 0 applied (or *changed false: nothing
 * to do), < 0 refused (its requirement no longer holds: TT_EREFMOVED). */
typedef int (*apply_fn)(ib_table *t, void *ctx, const char *prev, bool *changed, tt_error *err);

static int uuid4(char out[37], tt_error *err)
{
	char hex[33];
	int rc = tt_random_hex(hex, 32, err);
	if (rc)
		return rc;
	hex[12] = '4';
	hex[16] = "89ab"[tt_hex_digit(hex[16]) & 3];
	snprintf(out, 37, "%.8s-%.4s-%.4s-%.4s-%.12s", hex, hex + 8, hex + 12, hex + 16, hex + 20);
	return 0;
}

/* Write the table's (edited) metadata as its next file; *uri and *path of
 * the new file. */
static int write_next(ib_table *t, char **uri, char **path, tt_error *err)
{
	const char *mdir = str_of(json_object_get(t->meta.doc, "properties"), "write.metadata.path");
	char *dir_uri = mdir ? tt_strdup(mdir) : tt_asprintf("%s/metadata", t->meta.location);
	char *dir = NULL, id[37];
	tt_buf text = TT_BUF_INIT;
	long version = tt_iceberg_meta_file_version(t->location);
	int rc = 0;

	*uri = *path = NULL;
	if (!dir_uri)
		return KOOM(err);
	while (strlen(dir_uri) > 1 && dir_uri[strlen(dir_uri) - 1] == '/')
		dir_uri[strlen(dir_uri) - 1] = '\0';
	if (!(dir = local_path(dir_uri))) {
		rc = KERR(err, TT_ECAPABILITY,
			  "iceberg table %s: its metadata directory %s is not on a local file system",
			  t->ident, dir_uri);
		goto done;
	}
	if (t->warehouse && !under(dir, t->warehouse)) {
		rc = KERR(err, TT_EBACKEND,
			  "iceberg table %s: its metadata directory %s is outside the catalog's "
			  "warehouse %s; refusing to write there",
			  t->ident, dir_uri, t->warehouse);
		goto done;
	}
	if ((rc = uuid4(id, err)) != 0 || (rc = tt_iceberg_meta_dump(&t->meta, &text, err)) != 0)
		goto done;
	*uri = tt_asprintf("%s/%05ld-%s.metadata.json", dir_uri, version + 1, id);
	*path = tt_asprintf("%s/%05ld-%s.metadata.json", dir, version + 1, id);
	if (!*uri || !*path) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = tt_write_file_exclusive(*path, text.ptr, text.len, 0644, err)) != 0) {
		tt_error_prefix(err, "iceberg table %s: cannot write its next metadata file", t->ident);
		tt_error_object(err, NULL, KIND);
	}
done:
	if (rc) {
		free(*uri);
		free(*path);
		*uri = *path = NULL;
	}
	tt_buf_release(&text);
	free(dir_uri);
	free(dir);
	return rc;
}

/* Swap metadata_location from the location read to the new one; *won
 * false when another writer committed first. */
static int swap_location(ib_table *t, const char *next, bool *won, tt_error *err)
{
	tt_db_value p[5] = { { TT_DB_TEXT, next, 0 }, { TT_DB_TEXT, t->location, 0 },
			     { TT_DB_TEXT, t->catalog_name, 0 }, { TT_DB_TEXT, t->ns, 0 },
			     { TT_DB_TEXT, t->name, 0 } };
	tt_db_rows rows = { 0 };
	int rc = tt_db_query(t->db,
			     "UPDATE iceberg_tables SET metadata_location = $1, "
			     "previous_metadata_location = $2 WHERE catalog_name = $3 AND "
			     "table_namespace = $4 AND table_name = $5 AND metadata_location = $2 "
			     "RETURNING table_name",
			     p, 5, &rows, err);
	*won = rc == 0 && rows.nrows == 1;
	tt_db_rows_release(&rows);
	if (rc)
		tt_error_object(err, NULL, KIND);
	return rc;
}

/* Apply a change as one catalog commit: on fresh metadata, checking its
 * requirement there; retried from a fresh read when another writer's commit
 * lands in between.  *changed false: nothing needed writing. */
static int rest_commit(ib_table *t, apply_fn apply, void *ctx, bool *changed_out, tt_error *err);

static int table_commit(ib_table *t, apply_fn apply, void *ctx, bool *changed_out, tt_error *err)
{
	bool changed = false;
	int rc = 0;
	if (t->rest)
		return rest_commit(t, apply, ctx, changed_out, err);
	for (int attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
		char *uri = NULL, *path = NULL;
		bool won = false;
		if (attempt > 0 && (rc = table_load(t, err)) != 0)
			return rc;
		if ((rc = apply(t, ctx, t->location, &changed, err)) != 0)
			return rc;
		if (!changed)
			break;
		if ((rc = write_next(t, &uri, &path, err)) != 0)
			return rc;
		tt_fault("iceberg:after-metadata-write");
		rc = swap_location(t, uri, &won, err);
		if (rc || !won)
			unlink(path); /* never the catalog's file: it was not swapped in */
		free(path);
		if (rc) {
			free(uri);
			return rc;
		}
		if (won) {
			free(t->location);
			t->location = uri;
			break;
		}
		free(uri);
		if (attempt + 1 == COMMIT_ATTEMPTS) {
			/* t->meta is the edited copy that lost: callers read the table's */
			if ((rc = table_load(t, err)) != 0)
				return rc;
			return KERR(err, TT_EREFMOVED,
				    "iceberg table %s moved meanwhile %d times (other writers commit "
				    "faster); nothing was changed -- run it again",
				    t->ident, COMMIT_ATTEMPTS);
		}
	}
	if (changed_out)
		*changed_out = changed;
	return 0;
}

/* A ref move: the ref `name` set to sid (tag or branch), or removed (sid
 * < -1), only from the head `from` (NULL: anything; EMPTY: absent). */
typedef struct ref_change {
	const char *name;
	bool tag;
	long long sid;
	bool conditional;
	long long from;        /* expected head; EMPTY: the ref must be absent */
	const char *what;      /* "fork", "promote", "pin", ... */
} ref_change;

#define REMOVE_REF (-2LL)

static int apply_ref(ib_table *t, void *ctx, const char *prev, bool *changed, tt_error *err)
{
	ref_change *c = ctx;
	const tt_iceberg_ref *r = tt_iceberg_meta_ref(&t->meta, c->name);
	int rc;
	*changed = false;
	if (c->conditional) {
		if (c->from == EMPTY && r)
			return KERR(err, TT_EREFMOVED, "%s: %s exists (at %lld), expected absent", c->what,
				    c->name, r->snapshot_id);
		if (c->from != EMPTY && (!r || r->snapshot_id != c->from)) {
			if (r)
				return KERR(err, TT_EREFMOVED,
					    "%s: %s moved meanwhile: it is at snapshot %lld, expected %lld "
					    "(the head the plan reviewed); nothing moved",
					    c->what, c->name, r->snapshot_id, c->from);
			return KERR(err, TT_EREFMOVED, "%s: %s is gone, expected snapshot %lld", c->what,
				    c->name, c->from);
		}
	}
	if (c->sid == REMOVE_REF)
		rc = tt_iceberg_meta_remove_ref(&t->meta, c->name, prev, now_ms(), changed, err);
	else
		rc = tt_iceberg_meta_set_ref(&t->meta, c->name, c->tag, c->sid, prev, now_ms(), changed,
					     err);
	if (rc) {
		tt_error_prefix(err, "iceberg table %s", t->ident);
		tt_error_object(err, NULL, KIND);
	}
	return rc;
}

/* The REST path of table_commit: the change applied to the metadata read
 * (checking its requirement there, as on SQL), then sent as one commit
 * whose requirements are the table's uuid and the ref at the head read
 * (assert-ref-snapshot-id) and whose update is the ref move; a 409 means
 * another writer moved that ref first: read again and check afresh.  A
 * commit that was retried and then refused may have been refused its own
 * write: a fresh read tells. */
static json_t *ref_update(const ref_change *c, const json_t *old)
{
	static const char *const keep[] = { "max-ref-age-ms", "max-snapshot-age-ms",
					    "min-snapshots-to-keep", NULL };
	json_t *u;
	if (c->sid == REMOVE_REF)
		return json_pack("{s:s, s:s}", "action", "remove-snapshot-ref", "ref-name", c->name);
	u = json_pack("{s:s, s:s, s:I, s:s}", "action", "set-snapshot-ref", "ref-name", c->name,
		      "snapshot-id", (json_int_t)c->sid, "type", c->tag ? "tag" : "branch");
	for (const char *const *k = keep; u && old && *k; k++) {
		json_t *v = json_object_get(old, *k);
		if (json_is_integer(v))
			json_object_set(u, *k, v);
	}
	return u;
}

static int rest_commit(ib_table *t, apply_fn apply, void *ctx, bool *changed_out, tt_error *err)
{
	ref_change *c = ctx;
	bool changed = false;
	int rc = 0;
	if (apply != apply_ref)
		return KERR(err, TT_ERROR, "iceberg table %s: this change cannot be sent to a REST catalog",
			    t->ident);
	bool fresh = true; /* t->meta is the catalog's, not edited by apply */
	for (int attempt = 0; attempt < COMMIT_ATTEMPTS; attempt++) {
		tt_iceberg_rest_table rt = { NULL, TT_BUF_INIT };
		const tt_iceberg_ref *r;
		json_t *old, *req = NULL, *upd = NULL, *u;
		char *uuid;
		bool had, conflict = false;
		long long head;
		unsigned sent = 0;

		if (!fresh && (rc = table_load(t, err)) != 0)
			return rc;
		fresh = false;
		r = tt_iceberg_meta_ref(&t->meta, c->name);
		had = r != NULL;
		head = r ? r->snapshot_id : 0;
		old = json_object_get(json_object_get(t->meta.doc, "refs"), c->name);
		old = old ? json_deep_copy(old) : NULL;
		uuid = t->meta.uuid ? tt_strdup(t->meta.uuid) : NULL;
		if ((rc = apply(t, ctx, t->location, &changed, err)) != 0 || !changed) {
			json_decref(old);
			free(uuid);
			if (rc)
				return rc;
			break;
		}
		req = json_array();
		upd = json_array();
		u = ref_update(c, old);
		json_decref(old);
		if (!req || !upd || !u || (uuid && json_array_append_new(req, json_pack("{s:s, s:s}", "type",
			"assert-table-uuid", "uuid", uuid)) != 0) ||
		    json_array_append_new(req, json_pack("{s:s, s:s, s:o}", "type", "assert-ref-snapshot-id",
			"ref", c->name, "snapshot-id", had ? json_integer(head) : json_null())) != 0 ||
		    json_array_append_new(upd, u) != 0) {
			json_decref(req);
			json_decref(upd);
			free(uuid);
			return KOOM(err);
		}
		free(uuid);
		rc = tt_iceberg_rest_commit(t->rest, t->ns, t->name, t->ident, req, upd, &conflict, &sent,
					    &rt, err);
		json_decref(req);
		json_decref(upd);
		if (rc)
			return rc;
		if (!conflict) {
			rc = rest_load(t, &rt, err);
			tt_iceberg_rest_table_release(&rt);
			if (rc)
				return rc;
			break;
		}
		/* Refused: read the catalog's metadata again (the edited copy is not
		 * the table's), and when the commit was sent again after a transient
		 * failure, see whether the refusal was of our own write. */
		if ((rc = table_load(t, err)) != 0)
			return rc;
		fresh = true;
		r = tt_iceberg_meta_ref(&t->meta, c->name);
		if (sent > 1 &&
		    (c->sid == REMOVE_REF ? !r : (r && r->snapshot_id == c->sid && r->tag == c->tag))) {
			tt_error_clear(err);
			break;
		}
		if (attempt + 1 == COMMIT_ATTEMPTS)
			return KERR(err, TT_EREFMOVED,
				    "iceberg table %s moved meanwhile %d times (other writers commit "
				    "faster); nothing was changed -- run it again",
				    t->ident, COMMIT_ATTEMPTS);
		tt_error_clear(err);
	}
	if (changed_out)
		*changed_out = changed;
	return 0;
}

/* --- resolving ------------------------------------------------------------------ */

static json_t *sid_state(long long sid)
{
	return json_pack("{s:I}", "snapshot_id", (json_int_t)sid);
}

static int state_sid(const json_t *state, long long *sid, tt_error *err)
{
	const json_t *s = json_object_get(state, "snapshot_id");
	if (json_is_integer(s)) {
		*sid = (long long)json_integer_value(s);
		return 0;
	}
	if (json_is_string(s)) {
		char *end = NULL;
		errno = 0;
		*sid = strtoll(json_string_value(s), &end, 10);
		if (!errno && end && !*end && end != json_string_value(s))
			return 0;
	}
	return KERR(err, TT_EBACKEND, "iceberg state needs an integer 'snapshot_id'");
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* A branch or tag name, or a snapshot id, to a snapshot id. */
static int resolve(ib_table *t, const char *ref, long long *sid, tt_error *err)
{
	const tt_iceberg_ref *r = tt_iceberg_meta_ref(&t->meta, ref);
	if (r) {
		*sid = r->snapshot_id;
		return 0;
	}
	if (all_digits(ref) && strlen(ref) < 20) {
		long long want = strtoll(ref, NULL, 10);
		if (tt_iceberg_meta_snapshot(&t->meta, want)) {
			*sid = want;
			return 0;
		}
	}
	char *r2 = tt_pyv_repr_dup(ref);
	int rc = KERR(err, TT_EBACKEND, "no snapshot for ref %s", r2 ? r2 : ref);
	free(r2);
	return rc;
}

static bool has_at(const json_t *loc)
{
	const json_t *at = json_object_get(loc, "at");
	return at && !json_is_null(at) && !(json_is_string(at) && json_string_length(at) == 0);
}

/* The ref a read names: the working ref, the locator's `at`, else the base. */
static int read_ref(const json_t *loc, const char *working_ref, char **out, tt_error *err)
{
	if (working_ref) {
		*out = tt_strdup(working_ref);
		return *out ? 0 : KOOM(err);
	}
	if (has_at(loc)) {
		*out = tt_pyv_str_dup(json_object_get(loc, "at"));
		return *out ? 0 : KOOM(err);
	}
	return base_branch_of(loc, out, err);
}

static bool is_empty_at(ib_table *t, const json_t *loc, const char *ref)
{
	char *base = NULL;
	tt_error e = TT_ERROR_INIT;
	bool empty = false;
	if (base_branch_of(loc, &base, &e) == 0)
		empty = strcmp(ref, base) == 0 && t->meta.nsnaps == 0;
	free(base);
	tt_error_clear(&e);
	return empty;
}

/* --- the protocol --------------------------------------------------------------- */

static int ib_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	const char *ident, *branch = str_of(loc, "branch"), *cn = str_of(loc, "catalog_name");
	int rc;
	(void)b;
	*out = NULL;
	if ((rc = get_ident(loc, &ident, err)) != 0)
		return rc;
	*out = json_pack("{s:s, s:s, s:s}", "identifier", ident, "branch", branch ? branch : "main",
			 "catalog_name", cn ? cn : "default");
	return *out ? 0 : KOOM(err);
}

static int ib_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref, json_t **state,
			  tt_error *err)
{
	ib_table t;
	char *ref = NULL;
	long long sid = EMPTY;
	int rc;
	*state = NULL;
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	if ((rc = read_ref(loc, working_ref, &ref, err)) == 0 && !is_empty_at(&t, loc, ref))
		rc = resolve(&t, ref, &sid, err);
	if (rc == 0 && !(*state = sid_state(sid)))
		rc = KOOM(err);
	free(ref);
	table_release(&t);
	return rc;
}

static int ib_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id,
		  tt_pin *out, tt_error *err)
{
	ib_table t;
	long long sid;
	bool changed = false;
	int rc;
	if (!pin_id || !*pin_id)
		return KERR(err, TT_EUSAGE, "pin needs an id");
	if ((rc = state_sid(state, &sid, err)) != 0 || (rc = tt_kit_fill_pin(out, KIND, pin_id, NULL, false, err)) != 0)
		return rc;
	if (sid == EMPTY)
		return 0; /* nothing to hold */
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	const tt_iceberg_ref *have = tt_iceberg_meta_ref(&t.meta, out->ref);
	if (have) {
		if (have->snapshot_id != sid)
			rc = KERR(err, TT_EBACKEND, "tag %s already points at %lld", out->ref,
				  have->snapshot_id);
		goto done;
	}
	if (!tt_iceberg_meta_snapshot(&t.meta, sid)) {
		rc = KERR(err, TT_EBACKEND,
			  "iceberg table %s: snapshot %lld is no longer in the table (expired?); it "
			  "cannot be pinned",
			  t.ident, sid);
		goto done;
	}
	ref_change c = { out->ref, true, sid, true, EMPTY, "pin" };
	rc = table_commit(&t, apply_ref, &c, &changed, err);
	if (rc == TT_EREFMOVED) {
		/* Someone made it meanwhile: fine if it holds this snapshot. */
		const tt_iceberg_ref *now = tt_iceberg_meta_ref(&t.meta, out->ref);
		if (now && now->snapshot_id == sid) {
			tt_error_clear(err);
			rc = 0;
		}
	}
	out->created = rc == 0 && changed;
done:
	table_release(&t);
	return rc;
}

static int ib_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err)
{
	ib_table t;
	int rc;
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	if (tt_iceberg_meta_ref(&t.meta, pin->ref)) {
		ref_change c = { pin->ref, true, REMOVE_REF, false, 0, "unpin" };
		rc = table_commit(&t, apply_ref, &c, NULL, err);
	}
	table_release(&t);
	return rc;
}

static int list_refs(tt_backend *b, const json_t *loc, const char *prefix, bool tags, json_t **out,
		     tt_error *err)
{
	ib_table t;
	int rc;
	*out = NULL;
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	*out = json_array();
	for (size_t i = 0; *out && i < t.meta.nrefs; i++) {
		const tt_iceberg_ref *r = &t.meta.refs[i];
		if (r->tag == tags && tt_kit_keep_ref(*out, r->name, prefix, NULL, tags) != 0) {
			json_decref(*out);
			*out = NULL;
		}
	}
	if (!*out)
		rc = KOOM(err);
	table_release(&t);
	return rc;
}

static int ib_list_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err)
{
	return list_refs(b, loc, "tether.", true, ids, err);
}

static int ib_list_working_refs(tt_backend *b, const json_t *loc, json_t **refs, tt_error *err)
{
	return list_refs(b, loc, TT_WORKING_REF_PREFIX, false, refs, err);
}

static int ib_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
		     bool deep, tt_verify_status *status, char **message, tt_error *err)
{
	ib_table t;
	long long sid;
	int rc;
	(void)deep;
	*message = NULL;
	*status = TT_VERIFY_UNKNOWN;
	if ((rc = state_sid(state, &sid, err)) != 0)
		return rc;
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	if (sid == EMPTY) {
		*status = TT_VERIFY_OK;
		*message = tt_strdup("no snapshot yet: nothing to hold");
	} else if (pin) {
		const tt_iceberg_ref *r = tt_iceberg_meta_ref(&t.meta, pin->ref);
		if (!r) {
			*status = TT_VERIFY_MISSING;
			*message = tt_asprintf("tag %s missing", pin->ref);
		} else if (r->snapshot_id != sid) {
			*status = TT_VERIFY_DRIFTED;
			*message = tt_asprintf("%s -> %lld, expected %lld", pin->ref, r->snapshot_id, sid);
		} else {
			*status = TT_VERIFY_OK;
			goto done;
		}
	} else if (tt_iceberg_meta_snapshot(&t.meta, sid)) {
		/* record: the snapshot must still be within retention */
		*status = TT_VERIFY_OK;
		goto done;
	} else {
		*status = TT_VERIFY_MISSING;
		*message = tt_asprintf("snapshot %lld expired/absent", sid);
	}
	if (!*message)
		rc = KOOM(err);
done:
	table_release(&t);
	return rc;
}

/* Was this pin cut at the empty state?  Its ref never exists; its
 * content-addressed id says what it holds. */
static bool holds_empty(tt_backend *b, const json_t *loc, const tt_pin *pin)
{
	char ds[TT_DATASET_ID_LEN + 1], id[TT_PIN_ID_MAX];
	json_t *ident = NULL, *st = sid_state(EMPTY);
	tt_error e = TT_ERROR_INIT;
	bool yes = false;
	if (st && tt_pin_dataset(pin->id, ds) && ib_identity(b, loc, &ident, &e) == 0 &&
	    tt_pin_id(id, ds, KIND, ident, st, &e) == 0)
		yes = strcmp(id, pin->id) == 0;
	json_decref(ident);
	json_decref(st);
	tt_error_clear(&e);
	return yes;
}

static int no_fork_of_empty(ib_table *t, tt_error *err)
{
	return KERR(err, TT_EBACKEND,
		    "iceberg table %s had no snapshot yet; Iceberg has no branch before the first "
		    "snapshot -- write it on the trunk bookmark first",
		    t->ident);
}

/* The snapshot a source names: a pin's tag, a recorded state, or a ref. */
static int source_sid(ib_table *t, const json_t *loc, const tt_target *src, long long *sid,
		      tt_error *err)
{
	if (src->kind == TT_TARGET_PIN && src->pin) {
		const tt_iceberg_ref *r = tt_iceberg_meta_ref(&t->meta, src->pin->ref);
		if (r) {
			*sid = r->snapshot_id;
			return 0;
		}
		if (holds_empty(t->b, loc, src->pin))
			return no_fork_of_empty(t, err);
		return KERR(err, TT_EBACKEND, "pin %s missing", src->pin->ref);
	}
	if (src->kind == TT_TARGET_STATE && src->state) {
		int rc = state_sid(src->state, sid, err);
		if (rc)
			return rc;
		if (*sid == EMPTY)
			return no_fork_of_empty(t, err);
		char text[32];
		snprintf(text, sizeof text, "%lld", *sid);
		return resolve(t, text, sid, err);
	}
	if (src->kind == TT_TARGET_REF && src->ref)
		return resolve(t, src->ref, sid, err);
	char *base = NULL;
	int rc = base_branch_of(loc, &base, err);
	if (rc == 0)
		rc = resolve(t, base, sid, err);
	free(base);
	return rc;
}

/* The expected head as a ref_change condition. */
static int expect_of(const tt_expect *e, ref_change *c, tt_error *err)
{
	c->conditional = false;
	if (!e || e->kind == TT_EXPECT_NONE)
		return 0;
	c->conditional = true;
	if (e->kind == TT_EXPECT_ABSENT || !json_is_object(e->state) || !json_object_size(e->state)) {
		c->from = EMPTY;
		return 0;
	}
	return state_sid(e->state, &c->from, err);
}

static int ib_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		   const tt_expect *expected, char **ref_out, tt_error *err)
{
	ib_table t;
	long long sid;
	int rc;
	*ref_out = NULL;
	if (!name || !*name)
		return KERR(err, TT_EUSAGE, "fork needs a branch name");
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	ref_change c = { name, false, 0, false, 0, "fork" };
	if ((rc = expect_of(expected, &c, err)) != 0 || (rc = source_sid(&t, loc, source, &sid, err)) != 0)
		goto done;
	c.sid = sid;
	/* created, or re-pointed (reset semantics); one already there is left */
	rc = table_commit(&t, apply_ref, &c, NULL, err);
done:
	if (rc == 0 && !(*ref_out = tt_strdup(name)))
		rc = KOOM(err);
	table_release(&t);
	return rc;
}

static int ib_delete_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err)
{
	ib_table t;
	char *base = NULL;
	int rc;
	if ((rc = base_branch_of(loc, &base, err)) != 0)
		return rc;
	bool keep = strcmp(ref, base) == 0 || strcmp(ref, "main") == 0;
	free(base);
	if (keep)
		return 0;
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	const tt_iceberg_ref *r = tt_iceberg_meta_ref(&t.meta, ref);
	if (r && !r->tag) {
		ref_change c = { ref, false, REMOVE_REF, false, 0, "delete" };
		rc = table_commit(&t, apply_ref, &c, NULL, err);
	}
	table_release(&t);
	return rc;
}

static int ib_ancestor_of(tt_backend *b, const json_t *loc, const json_t *ancestor,
			  const tt_target *descendant, int *answer, tt_error *err)
{
	ib_table t;
	long long want, sid;
	int rc;
	*answer = -1;
	if ((rc = state_sid(ancestor, &want, err)) != 0)
		return rc;
	if (want == EMPTY) {
		*answer = 1;
		return 0;
	}
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	if (descendant->kind == TT_TARGET_STATE && descendant->state)
		rc = state_sid(descendant->state, &sid, err);
	else
		rc = source_sid(&t, loc, descendant, &sid, err);
	if (rc == 0)
		*answer = tt_iceberg_meta_is_ancestor(&t.meta, want, sid) ? 1 : 0;
	table_release(&t);
	return rc;
}

#define PROMOTE_HINT                                                                              \
	"pyiceberg has no branch merge; use your engine's fast_forward / cherrypick_snapshot "       \
	"procedure, or re-apply the writes on a fresh fork"

static int ib_promote(tt_backend *b, const json_t *loc, const tt_target *source,
		      const tt_expect *expected, json_t **new_state, tt_error *err)
{
	ib_table t;
	char *base = NULL;
	long long head, target;
	int rc;
	*new_state = NULL;
	if ((rc = base_branch_of(loc, &base, err)) != 0)
		return rc;
	if ((rc = table_open(b, loc, &t, err)) != 0) {
		free(base);
		return rc;
	}
	ref_change c = { base, false, 0, true, 0, "promote" };
	if ((rc = resolve(&t, base, &head, err)) != 0)
		goto done;
	if (expected && expected->kind != TT_EXPECT_NONE) {
		long long from = EMPTY;
		if (expected->kind == TT_EXPECT_STATE && (rc = state_sid(expected->state, &from, err)) != 0)
			goto done;
		if (from != head) {
			rc = KERR(err, TT_EREFMOVED,
				  "promote: %s moved meanwhile: it is at snapshot %lld, expected %lld (the "
				  "head the plan reviewed); nothing moved",
				  base, head, from);
			goto done;
		}
	}
	if (source->kind == TT_TARGET_STATE && source->state)
		rc = state_sid(source->state, &target, err);
	else
		rc = source_sid(&t, loc, source, &target, err);
	if (rc)
		goto done;
	if (target != head) {
		if (!tt_iceberg_meta_is_ancestor(&t.meta, head, target)) {
			rc = KERR(err, TT_EBACKEND,
				  "%s moved to snapshot %lld, which is not an ancestor of %lld; " PROMOTE_HINT,
				  base, head, target);
			goto done;
		}
		/* moves only from the head the ancestry was checked against */
		c.sid = target;
		c.from = head;
		if ((rc = table_commit(&t, apply_ref, &c, NULL, err)) != 0)
			goto done;
	}
	if (!(*new_state = sid_state(target)))
		rc = KOOM(err);
done:
	free(base);
	table_release(&t);
	return rc;
}

/* --- open ----------------------------------------------------------------------- */

static int ib_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		   json_t **handle, tt_error *err)
{
	ib_table t;
	char *ref = NULL, *address = NULL;
	long long sid = EMPTY;
	bool have_sid = false;
	json_t *cat = NULL;
	int rc;
	*handle = NULL;
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	if (target->kind == TT_TARGET_PIN && target->pin) {
		const tt_iceberg_ref *r = tt_iceberg_meta_ref(&t.meta, target->pin->ref);
		read_only = true;
		if (r) {
			ref = tt_strdup(target->pin->ref);
			sid = r->snapshot_id;
			have_sid = true;
			if (!ref) {
				rc = KOOM(err);
				goto done;
			}
		} else if (holds_empty(b, loc, target->pin)) {
			have_sid = true; /* at -1: a reader refuses it */
		} else {
			rc = KERR(err, TT_EBACKEND, "iceberg tag %s not found", target->pin->ref);
			goto done;
		}
	} else if (target->kind == TT_TARGET_STATE && target->state) {
		read_only = true;
		if ((rc = state_sid(target->state, &sid, err)) != 0)
			goto done;
		have_sid = true;
	} else if (target->kind == TT_TARGET_BASE && read_only && has_at(loc)) {
		char *at = tt_pyv_str_dup(json_object_get(loc, "at"));
		rc = at ? resolve(&t, at, &sid, err) : KOOM(err);
		free(at);
		if (rc)
			goto done;
		have_sid = true;
	} else {
		if (target->kind == TT_TARGET_REF && target->ref && *target->ref)
			ref = tt_strdup(target->ref);
		else if ((rc = base_branch_of(loc, &ref, err)) != 0)
			goto done;
		if (!ref) {
			rc = KOOM(err);
			goto done;
		}
	}
	if (ref)
		address = tt_asprintf("%s#%s", t.ident, ref);
	else
		address = tt_asprintf("%s#%lld", t.ident, sid);
	/* What a reader needs to load the catalog, without its secrets. */
	cat = json_object();
	for (const char *const *k = safe_catalog_keys; cat && *k; k++) {
		const char *v = str_of(t.props, *k);
		if (v && json_object_set_new(cat, *k, json_string(v)) != 0) {
			json_decref(cat);
			cat = NULL;
		}
	}
	if (!address || !cat) {
		rc = KOOM(err);
		goto done;
	}
	*handle = json_pack("{s:s, s:s, s:b, s:s, s:s, s:O, s:s?, s:s}", "type", KIND, "address",
			    address, "read_only", read_only, "identifier", t.ident, "catalog_name",
			    t.catalog_name, "catalog", cat, "ref", ref, "metadata_location",
			    t.location);
	if (*handle && have_sid)
		json_object_set_new(*handle, "snapshot_id", json_integer(sid));
	/* The whole catalog configuration, credentials included, for a caller
	 * in this process that loads the table itself (the Python package's
	 * IcebergHandle); a secret_ key is never printed (see tether.h). */
	if (*handle && json_object_set_new(*handle, "secret_catalog", json_deep_copy(t.props)) < 0) {
		json_decref(*handle);
		*handle = NULL;
	}
	if (!*handle)
		rc = KOOM(err);
done:
	json_decref(cat);
	free(ref);
	free(address);
	table_release(&t);
	return rc;
}

/* --- history and diff ------------------------------------------------------------ */

static char *iso_utc_ms(long long ms)
{
	char out[40];
	time_t tt = (time_t)(ms >= 0 ? ms / 1000 : -((-ms + 999) / 1000));
	struct tm tm;
	if (!gmtime_r(&tt, &tm))
		return NULL;
	strftime(out, sizeof out, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
	return tt_strdup(out);
}

static bool shown(const char *v)
{
	return v && strcmp(v, "0") != 0;
}

typedef struct hist_ctx {
	ib_table *t;
	tt_history_entry *entries;
	size_t n, cap, limit;
} hist_ctx;

static int hist_step(const tt_iceberg_snapshot *s, void *ctx, tt_error *err)
{
	hist_ctx *h = ctx;
	tt_buf msg = TT_BUF_INIT;
	const char *op = tt_iceberg_summary(s, "operation");
	const char *add = tt_iceberg_summary(s, "added-records");
	const char *del = tt_iceberg_summary(s, "deleted-records");
	if (h->n >= h->limit)
		return 1;
	if (TT_ARRAY_GROW(h->entries, h->cap, h->n + 1) != 0)
		return KOOM(err);
	tt_history_entry *e = &h->entries[h->n];
	memset(e, 0, sizeof *e);
	h->n++;
	tt_buf_puts(&msg, op ? op : "");
	if (shown(add) || shown(del)) {
		tt_buf_puts(&msg, ": ");
		if (shown(add))
			tt_buf_printf(&msg, "+%s rows", add);
		if (shown(del))
			tt_buf_printf(&msg, "%s-%s rows", shown(add) ? ", " : "", del);
	}
	e->id = tt_asprintf("%lld", s->id);
	e->when = iso_utc_ms(s->timestamp_ms);
	e->message = msg.failed ? NULL : tt_buf_detach(&msg);
	tt_buf_release(&msg);
	e->refs = json_array();
	for (size_t i = 0; e->refs && i < h->t->meta.nrefs; i++)
		if (h->t->meta.refs[i].snapshot_id == s->id)
			json_array_append_new(e->refs, json_string(h->t->meta.refs[i].name));
	if (!e->id || !e->message || !e->refs)
		return KOOM(err);
	return 0;
}

static int ib_history(tt_backend *b, const json_t *loc, const char *ref, size_t limit,
		      tt_history_entry **out, size_t *n, tt_error *err)
{
	ib_table t;
	char *name = NULL;
	long long start;
	hist_ctx h = { NULL, NULL, 0, 0, limit };
	int rc;
	*out = NULL;
	*n = 0;
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	h.t = &t;
	if ((rc = read_ref(loc, ref, &name, err)) != 0 || is_empty_at(&t, loc, name))
		goto done;
	if ((rc = resolve(&t, name, &start, err)) != 0)
		goto done;
	rc = tt_iceberg_meta_ancestry(&t.meta, start, hist_step, &h, err);
done:
	if (rc) {
		tt_history_release(h.entries, h.n);
	} else {
		*out = h.entries;
		*n = h.n;
	}
	free(name);
	table_release(&t);
	return rc;
}

typedef struct chain_ctx {
	long long stop;
	const tt_iceberg_snapshot **items;
	size_t n, cap;
	bool reached;
} chain_ctx;

static int chain_step(const tt_iceberg_snapshot *s, void *ctx, tt_error *err)
{
	chain_ctx *c = ctx;
	if (s->id == c->stop) {
		c->reached = true;
		return 1;
	}
	if (TT_ARRAY_GROW(c->items, c->cap, c->n + 1) != 0)
		return KOOM(err);
	c->items[c->n++] = s;
	return 0;
}

static int ib_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		   const char *la, const char *lb, tt_object_diff *out, tt_error *err)
{
	ib_table t;
	long long sa, sb;
	chain_ctx c = { 0 };
	int rc;
	(void)la;
	(void)lb;
	tt_object_diff_init(out, "snapshots");
	if ((rc = state_sid(a, &sa, err)) != 0 || (rc = state_sid(bstate, &sb, err)) != 0)
		return rc;
	if (sa == sb)
		return 0;
	if ((rc = table_open(b, loc, &t, err)) != 0)
		return rc;
	c.stop = sa;
	if ((rc = tt_iceberg_meta_ancestry(&t.meta, sb, chain_step, &c, err)) != 0)
		goto done;
	if (!c.reached && sa != EMPTY) {
		static const char *const keys[] = { "total-records", "total-data-files",
						    "total-delete-files" };
		const tt_iceberg_snapshot *xa = tt_iceberg_meta_snapshot(&t.meta, sa);
		const tt_iceberg_snapshot *xb = tt_iceberg_meta_snapshot(&t.meta, sb);
		if (!(out->note = tt_asprintf("%lld is not an ancestor of %lld; comparing totals", sa, sb))) {
			rc = KOOM(err);
			goto done;
		}
		for (size_t i = 0; i < 3 && rc == 0; i++) {
			const char *va = tt_iceberg_summary(xa, keys[i]), *vb = tt_iceberg_summary(xb, keys[i]);
			if ((va == NULL) == (vb == NULL) && (!va || strcmp(va, vb) == 0))
				continue;
			char *d = tt_asprintf("%s -> %s", va ? va : "?", vb ? vb : "?");
			rc = d ? tt_object_diff_add(out, keys[i], "modified", d, err) : KOOM(err);
			free(d);
		}
		goto done;
	}
	for (size_t i = c.n; i-- > 0 && rc == 0;) {
		const tt_iceberg_snapshot *s = c.items[i];
		static const struct { const char *key, *sign, *label; } parts[] = {
			{ "added-records", "+", "rows" },    { "deleted-records", "-", "rows" },
			{ "added-data-files", "+", "files" }, { "deleted-data-files", "-", "files" },
		};
		const char *op = tt_iceberg_summary(s, "operation");
		tt_buf d = TT_BUF_INIT;
		size_t k = 0;
		char id[32];
		tt_buf_printf(&d, "%s: ", op ? op : "commit");
		for (size_t j = 0; j < 4; j++) {
			const char *v = tt_iceberg_summary(s, parts[j].key);
			if (shown(v))
				tt_buf_printf(&d, "%s%s%s %s", k++ ? ", " : "", parts[j].sign, v, parts[j].label);
		}
		if (!k)
			tt_buf_puts(&d, "metadata");
		snprintf(id, sizeof id, "%lld", s->id);
		rc = d.failed ? KOOM(err) : tt_object_diff_add(out, id, "modified", d.ptr, err);
		tt_buf_release(&d);
	}
done:
	free(c.items);
	table_release(&t);
	return rc;
}

/* --- refinements ----------------------------------------------------------------- */

static int ib_scope(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	const char *ident, *cn = str_of(loc, "catalog_name");
	int rc;
	(void)b;
	if ((rc = get_ident(loc, &ident, err)) != 0)
		return rc;
	/* Branches and tags are table-wide, whichever branch an object reads. */
	*out = tt_asprintf("iceberg:%s:%s", cn ? cn : "default", ident);
	return *out ? 0 : KOOM(err);
}

static int ib_base_branch(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	(void)b;
	return base_branch_of(loc, out, err);
}

static unsigned ib_effective_caps(tt_backend *b, const json_t *loc, const char *file_policy)
{
	(void)loc;
	(void)file_policy;
	/* Every ref move is a compare-and-set on the catalog's metadata location,
	 * re-checked on the table as it is then: CONDITIONAL_REF. */
	return b->kind->caps | TT_CAP_CONDITIONAL_REF;
}

static int ib_check_locator(tt_backend *b, const json_t *loc, tt_error *err)
{
	const char *ident;
	(void)b;
	int rc = get_ident(loc, &ident, err);
	return rc ? rc : check_committed(loc, err);
}

static void ib_free(tt_backend *b)
{
	(void)b;
}

static const tt_backend_ops ib_ops = {
	.abi = TT_BACKEND_ABI,
	.identity = ib_identity,
	.fingerprint = ib_fingerprint,
	.pin = ib_pin,
	.unpin = ib_unpin,
	.list_pins = ib_list_pins,
	.verify = ib_verify,
	.fork = ib_fork,
	.delete_working_ref = ib_delete_working_ref,
	.list_working_refs = ib_list_working_refs,
	.working_ref_blockers = tt_kit_no_blockers,
	.open = ib_open,
	.promote = ib_promote,
	.merge = tt_kit_no_merge,
	.no_merge = "iceberg cannot merge diverged branches; " PROMOTE_HINT,
	.ancestor_of = ib_ancestor_of,
	.diff = ib_diff,
	.history = ib_history,
	.effective_capabilities = ib_effective_caps,
	.branch_scope = ib_scope,
	.ref_namespace = ib_scope,
	.base_branch = ib_base_branch,
	.check_locator = ib_check_locator,
	.promote_hint = PROMOTE_HINT,
	.free = ib_free,
};

int tt_iceberg_backend_new(tt_backend *b, tt_error *err)
{
	(void)err;
	b->ops = &ib_ops;
	b->impl = NULL;
	return 0;
}
