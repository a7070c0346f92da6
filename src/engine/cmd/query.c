/*
 * engine/cmd/query.c - `tether query`: every object of the dataset at a
 * revision as a relation in an in-process DuckDB, read at exactly the
 * state its manifest records.
 *
 * Each object is opened read-only at its verified pin or recorded state
 * (tt_engine_open_recorded, as `open -r` does) and turned into DuckDB
 * statements: a view over delta_scan at the version, over iceberg_scan at
 * the snapshot id, over the Lance directory of the recorded version; a
 * DuckLake catalog attached READ_ONLY at SNAPSHOT_VERSION; a Neon branch's
 * read-only endpoint attached through the postgres scanner; a Dolt
 * revision database at the pinned commit read through the mysql scanner.
 * File objects are read only while their bytes are still the recorded
 * state (an Observed object cannot be read in the past).  Extensions are
 * loaded from files found on this machine; credentials are CREATE SECRET
 * statements in memory or ATTACH strings, never shown by --explain.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tether/tether.h>

#include "backends/dispatch.h"
#include "backends/registry.h"
#include "db/duck_session.h"
#include "db/duck_sql.h"
#include "engine/cmd/fork.h"
#include "engine/kernel/context.h"
#include "engine/kernel/keyhint.h"
#include "engine/kernel/revisions.h"
#include "engine/cmd/query.h"
#include "engine/kernel/repo.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/mem.h"

/* --- quoting ------------------------------------------------------------------------ */

static void quoted(tt_buf *b, const char *s, char q)
{
	tt_buf_putc(b, q);
	for (; *s; s++) {
		if (*s == q)
			tt_buf_putc(b, q);
		tt_buf_putc(b, *s);
	}
	tt_buf_putc(b, q);
}

void tt_q_ident(tt_buf *b, const char *s)
{
	quoted(b, s, '"');
}

void tt_q_literal(tt_buf *b, const char *s)
{
	quoted(b, s, '\'');
}

static bool plain_ident(const char *s)
{
	if (!*s || !((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '_'))
			return false;
	return true;
}

char *tt_query_sql_name(const char *key)
{
	if (plain_ident(key))
		return tt_strdup(key);
	tt_buf b = TT_BUF_INIT;
	tt_q_ident(&b, key);
	return b.failed ? (tt_buf_release(&b), NULL) : tt_buf_detach(&b);
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       (unsigned char)c >= 0x80;
}

/* Whether code (SQL text with its comments and strings blanked, as
 * tt_duck_sql_code makes it) names key as a whole identifier, bare or
 * quoted, in any case: a loose test, so an object is never missed (one
 * named only in a comment or a string is not read). */
bool tt_query_names_key(const char *code, const char *key)
{
	size_t kl = strlen(key);
	if (!kl)
		return false;
	for (const char *p = code; (p = strcasestr(p, key)) != NULL; p++) {
		char before = p == code ? ' ' : p[-1], after = p[kl];
		if ((before == '"' || !ident_char(before)) && (after == '"' || !ident_char(after)))
			return true;
	}
	return false;
}

/* --- statements and extensions -------------------------------------------------------- */

static int add_stmt(tt_qobj *o, tt_buf *sql, const char *shown)
{
	if (sql->failed)
		return TT_ENOMEM;
	json_t *st = json_pack("{s:s, s:s?}", "sql", sql->ptr, "shown", shown);
	tt_buf_reset(sql);
	if (!st || json_array_append_new(o->setup, st) < 0)
		return TT_ENOMEM;
	return 0;
}

static void need(tt_qobj *o, const char *ext)
{
	size_t i;
	json_t *v;
	json_array_foreach(o->exts, i, v)
		if (strcmp(json_string_value(v), ext) == 0)
			return;
	json_array_append_new(o->exts, json_string(ext));
}

static const char *str_of(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static bool is_remote(const char *uri)
{
	return uri && strstr(uri, "://") && strncmp(uri, "file://", 7) != 0;
}

static const char *local_path(const char *uri)
{
	return strncmp(uri, "file://", 7) == 0 ? uri + 7 : uri;
}

/* An S3 location's credentials as an in-memory secret scoped to it. */
static int remote_secret(tt_qobj *o, const char *uri, tt_error *err)
{
	if (!is_remote(uri))
		return 0;
	if (strncmp(uri, "s3://", 5) != 0) {
		/* Spark, Trino and Polars snippets still read it */
		free(o->duck_refused);
		o->duck_refused = tt_asprintf("tether hands DuckDB credentials for s3:// only, not for %s "
					      "(local paths and s3:// are read)", uri);
		return o->duck_refused ? 0 : tt_error_oom(err);
	}
	need(o, "httpfs");
	const json_t *so = json_object_get(o->handle, "secret_storage_options");
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, "CREATE OR REPLACE TEMPORARY SECRET ");
	tt_buf_printf(&b, "\"tether_s3_%zu\" (TYPE s3", json_array_size(o->setup));
	static const char *const map[][2] = { { "access_key_id", "KEY_ID" },
					      { "secret_access_key", "SECRET" },
					      { "session_token", "SESSION_TOKEN" },
					      { "region", "REGION" } };
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		const char *v = str_of(so, map[i][0]);
		if (v) {
			tt_buf_printf(&b, ", %s ", map[i][1]);
			tt_q_literal(&b, v);
		}
	}
	/* shown: all but the credentials (the scope, region and endpoint stay
	 * readable in --explain and in DuckDB's errors) */
	tt_buf shown = TT_BUF_INIT;
	tt_buf_puts(&shown, "CREATE TEMPORARY SECRET (TYPE s3, SCOPE ");
	tt_q_literal(&shown, uri);
	if (str_of(so, "region")) {
		tt_buf_puts(&shown, ", REGION ");
		tt_q_literal(&shown, str_of(so, "region"));
	}
	const char *ep = str_of(so, "endpoint_url");
	if (!ep)
		ep = str_of(so, "endpoint");
	if (ep) {
		bool http = strncmp(ep, "http://", 7) == 0;
		const char *host = http ? ep + 7 : strncmp(ep, "https://", 8) == 0 ? ep + 8 : ep;
		for (tt_buf *t = &b; t; t = t == &b ? &shown : NULL) {
			tt_buf_puts(t, ", ENDPOINT ");
			tt_q_literal(t, host);
			tt_buf_printf(t, ", URL_STYLE 'path', USE_SSL %s", http ? "false" : "true");
		}
	}
	tt_buf_puts(&b, ", SCOPE ");
	tt_q_literal(&b, uri);
	tt_buf_puts(&b, ")");
	tt_buf_puts(&shown, ", ...credentials from .tether/secrets.toml or the environment, not shown)");
	int rc = shown.failed ? TT_ENOMEM : add_stmt(o, &b, shown.ptr);
	tt_buf_release(&shown);
	tt_buf_release(&b);
	return rc ? tt_error_oom(err) : 0;
}

/* --- one object ------------------------------------------------------------------------- */

static int refuse(tt_qobj *o, tt_error *err, const char *fmt, ...) TT_PRINTF(3, 4);
static int refuse(tt_qobj *o, tt_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	free(o->refused);
	o->refused = tt_vasprintf(fmt, ap);
	va_end(ap);
	return o->refused ? 1 : tt_error_oom(err);
}

static int view_over(tt_qobj *o, const char *select, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, "CREATE VIEW ");
	tt_q_ident(&b, o->m->key);
	tt_buf_printf(&b, " AS %s", select);
	int rc = add_stmt(o, &b, NULL) ? tt_error_oom(err) : 0;
	tt_buf_release(&b);
	return rc;
}

static int build_delta(tt_qobj *o, tt_error *err)
{
	const char *uri = str_of(o->handle, "uri");
	json_int_t v = json_integer_value(json_object_get(o->handle, "version"));
	int rc;
	if (!uri)
		return refuse(o, err, "the delta handle names no table");
	if ((rc = remote_secret(o, uri, err)) != 0)
		return rc;
	o->at = tt_asprintf("version %lld", (long long)v);
	o->reader = tt_strdup("delta_scan");
	if (o->duck_refused)
		return 0;
	need(o, "delta");
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, "SELECT * FROM delta_scan(");
	tt_q_literal(&b, local_path(uri));
	tt_buf_printf(&b, ", version => %lld)", (long long)v);
	rc = b.failed ? tt_error_oom(err) : view_over(o, b.ptr, err);
	tt_buf_release(&b);
	return rc;
}

static int build_iceberg(tt_qobj *o, tt_error *err)
{
	const char *meta = str_of(o->handle, "metadata_location");
	json_t *sid = json_object_get(o->handle, "snapshot_id");
	int rc;
	if (!meta)
		return refuse(o, err, "the iceberg catalog gives no metadata location for the table");
	if (!json_is_integer(sid) || json_integer_value(sid) < 0)
		return refuse(o, err, "the table has no snapshot at this revision (it was empty)");
	if ((rc = remote_secret(o, meta, err)) != 0)
		return rc;
	o->at = tt_asprintf("snapshot %lld", (long long)json_integer_value(sid));
	o->reader = tt_strdup("iceberg_scan");
	if (o->duck_refused)
		return 0;
	need(o, "avro"); /* the iceberg extension reads manifests with it */
	need(o, "iceberg");
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, "SELECT * FROM iceberg_scan(");
	tt_q_literal(&b, local_path(meta));
	tt_buf_printf(&b, ", snapshot_from_id => %lld)", (long long)json_integer_value(sid));
	rc = b.failed ? tt_error_oom(err) : view_over(o, b.ptr, err);
	tt_buf_release(&b);
	return rc;
}

/* Lance: the recorded version's manifest, by either naming scheme. */
static int lance_manifest(const char *root, uint64_t v, char **path)
{
	char name[64];
	snprintf(name, sizeof name, "_versions/%" PRIu64 ".manifest", v);
	char *p = tt_path_join(root, name);
	struct stat st;
	if (p && stat(p, &st) == 0) {
		*path = p;
		return 0;
	}
	free(p);
	snprintf(name, sizeof name, "_versions/%" PRIu64 ".manifest", UINT64_MAX - v);
	p = tt_path_join(root, name);
	if (p && stat(p, &st) == 0) {
		*path = p;
		return 0;
	}
	free(p);
	*path = NULL;
	return -1;
}

/* A Lance branch name as a path under tree/: no empty, "." or ".." part,
 * nothing absolute (a hostile store's tag could say otherwise). */
static bool lance_branch_ok(const char *b)
{
	if (!*b || *b == '/')
		return false;
	for (const char *p = b; *p;) {
		size_t n = strcspn(p, "/");
		if (n == 0 || (n == 1 && p[0] == '.') || (n == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += n;
		if (*p == '/')
			p++;
		if (!*p && p[-1] == '/')
			return false;
	}
	return true;
}

/*
 * The branch the handle's version is on.  A handle opened through a tag
 * (a pin) names the tag, not the branch: the tag file says it, read as
 * Lance reads it (_refs/tags/NAME.json, {"branch": null | NAME, "version": V}),
 * and its version must be the handle's.  *branch: NULL for main.
 */
static int lance_branch(tt_qobj *o, const char *root, json_int_t v, char **branch, tt_error *err)
{
	const char *b = str_of(o->handle, "branch"), *tag = str_of(o->handle, "tag");
	*branch = NULL;
	if (tag) {
		char *path = strchr(tag, '/') || strcmp(tag, "..") == 0 ? NULL
			     : tt_asprintf("%s/_refs/tags/%s.json", root, tag);
		tt_buf text = TT_BUF_INIT;
		json_t *t = NULL;
		int rc = path ? tt_read_file(path, &text, 1u << 20, err)
			      : tt_error_set(err, TT_EBACKEND, "the Lance tag name '%s' is no file name", tag);
		if (rc == 0 && !(t = json_loadb(text.ptr, text.len, 0, NULL)))
			rc = tt_error_set(err, TT_EBACKEND, "%s is not a Lance tag file", path);
		json_t *tv = json_object_get(t, "version"), *tb = json_object_get(t, "branch");
		if (rc == 0 && (!json_is_integer(tv) || json_integer_value(tv) != v || (tb && !json_is_null(tb) &&
											   !json_is_string(tb))))
			rc = tt_error_set(err, TT_EBACKEND, "the Lance tag %s no longer names version %lld", tag,
					  (long long)v);
		b = json_string_value(tb);
		if (rc == 0 && b && strcmp(b, "main") != 0 && !(*branch = tt_strdup(b)))
			rc = tt_error_oom(err);
		json_decref(t);
		tt_buf_release(&text);
		free(path);
		if (rc < 0)
			return tt_error_prefix(err, "[%s] ", o->m->key);
	} else if (b && strcmp(b, "main") != 0 && !(*branch = tt_strdup(b))) {
		return tt_error_oom(err);
	}
	if (*branch && !lance_branch_ok(*branch)) {
		int rc = tt_error_set(err, TT_EBACKEND, "[%s] the Lance branch name '%s' is no path under tree/",
				      o->m->key, *branch);
		free(*branch);
		*branch = NULL;
		return rc;
	}
	return 0;
}

static int build_lance(tt_qobj *o, tt_error *err)
{
	const char *uri = str_of(o->handle, "uri"), *tag = str_of(o->handle, "tag");
	json_int_t v = json_integer_value(json_object_get(o->handle, "version"));
	char *root = NULL, *manifest = NULL;
	int rc;
	if (!uri)
		return refuse(o, err, "the lance handle names no dataset");
	if (is_remote(uri)) {
		/* the branch as recorded (the tag file is not read from here) */
		const char *b = str_of(o->handle, "branch");
		if (!b)
			b = str_of(o->m->state, "branch");
		if (b && strcmp(b, "main") != 0 && !(o->branch = tt_strdup(b)))
			return tt_error_oom(err);
		o->at = tag ? tt_asprintf("version %lld (tag %s)", (long long)v, tag)
			    : tt_asprintf("version %lld on %s", (long long)v, o->branch ? o->branch : "main");
		o->duck_refused = tt_asprintf("DuckDB's lance extension reads only a dataset's latest version, "
					      "and tether hands it an older one of %s only on a local path; use "
					      "`tether open %s --for polars` (or pylance) to read version %lld", uri,
					      o->m->key, (long long)v);
		return o->at && o->duck_refused ? 0 : tt_error_oom(err);
	}
	need(o, "lance");
	if ((rc = lance_branch(o, local_path(uri), v, &o->branch, err)) < 0)
		return tt_error_object(err, o->m->key, o->m->kind);
	root = o->branch ? tt_asprintf("%s/tree/%s", local_path(uri), o->branch) : tt_strdup(local_path(uri));
	if (!root)
		return tt_error_oom(err);
	if (lance_manifest(root, (uint64_t)v, &manifest) != 0) {
		rc = tt_error_set(err, TT_EBACKEND, "[%s] lance version %lld has no manifest under %s "
				  "(cleaned up?)", o->m->key, (long long)v, root);
		free(root);
		return tt_error_object(err, o->m->key, o->m->kind);
	}
	rc = tt_query_lance_view(root, manifest, o->m->key, &o->path, err);
	free(root);
	free(manifest);
	if (rc)
		return tt_error_object(err, o->m->key, o->m->kind);
	o->at = tag ? tt_asprintf("version %lld (tag %s)", (long long)v, tag)
		    : tt_asprintf("version %lld on %s", (long long)v, o->branch ? o->branch : "main");
	o->reader = tt_strdup("lance");
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, "SELECT * FROM ");
	tt_q_literal(&b, o->path);
	rc = b.failed ? tt_error_oom(err) : view_over(o, b.ptr, err);
	tt_buf_release(&b);
	return rc;
}

/* The ATTACH the backend wrote, under the object's key instead of its alias. */
static char *realias(const char *sql, const char *alias, const char *key)
{
	char *pat = tt_asprintf(" AS %s (", alias);
	const char *hit = NULL;
	if (!pat)
		return NULL;
	for (const char *p = sql; (p = strstr(p, pat)) != NULL; p++)
		hit = p;
	tt_buf b = TT_BUF_INIT;
	if (hit) {
		tt_buf_put(&b, sql, (size_t)(hit - sql));
		tt_buf_puts(&b, " AS ");
		tt_q_ident(&b, key);
		tt_buf_puts(&b, " (");
		tt_buf_puts(&b, hit + strlen(pat));
	}
	free(pat);
	return hit && !b.failed ? tt_buf_detach(&b) : (tt_buf_release(&b), NULL);
}

static int build_ducklake(tt_qobj *o, tt_error *err)
{
	const char *meta = str_of(o->handle, "metadata"), *alias = str_of(o->handle, "alias"),
		   *plain = str_of(o->handle, "attach_sql"), *secret = str_of(o->handle, "secret_attach_sql"),
		   *table = str_of(o->handle, "table");
	json_int_t sid = json_integer_value(json_object_get(o->handle, "snapshot_id"));
	const json_t *init = json_object_get(o->handle, "secret_init_sql");
	if (!meta || !alias || !plain)
		return refuse(o, err, "the ducklake handle gives no ATTACH");
	if (strncmp(meta, "ducklake:sqlite:", 16) == 0)
		need(o, "sqlite_scanner");
	else if (strncmp(meta, "ducklake:postgres:", 18) == 0)
		need(o, "postgres_scanner");
	need(o, "ducklake");
	size_t i;
	json_t *v;
	json_array_foreach(init, i, v) {
		tt_buf b = TT_BUF_INIT;
		tt_buf_puts(&b, json_string_value(v) ? json_string_value(v) : "");
		if (add_stmt(o, &b, "-- an init_sql statement of .tether/secrets.toml (not shown)"))
			return tt_error_oom(err);
		tt_buf_release(&b);
	}
	char *shown = realias(plain, alias, o->m->key), *full = realias(secret ? secret : plain, alias, o->m->key);
	if (!shown || !full) {
		free(shown);
		free(full);
		return tt_error_set(err, TT_EBACKEND, "[%s] unexpected ATTACH from the ducklake backend", o->m->key);
	}
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, full);
	int rc = add_stmt(o, &b, secret ? shown : NULL);
	tt_buf_release(&b);
	if (full)
		memset(full, 0, strlen(full));
	free(full);
	free(shown);
	if (rc)
		return tt_error_oom(err);
	o->at = tt_asprintf("snapshot %lld", (long long)sid);
	o->reader = tt_strdup("ATTACH (TYPE ducklake, SNAPSHOT_VERSION)");
	if (table) {
		/* a catalog registered for one table: that table is the relation too */
		tt_buf s = TT_BUF_INIT;
		tt_buf_puts(&s, "SELECT * FROM ");
		tt_q_ident(&s, o->m->key);
		tt_buf_putc(&s, '.');
		tt_buf_puts(&s, table); /* as the locator writes it: [schema.]table */
		rc = s.failed ? tt_error_oom(err) : view_over(o, s.ptr, err);
		tt_buf_release(&s);
	}
	return rc;
}

static char *pct_decode(const char *s, size_t n)
{
	char *out = tt_malloc(n + 1), *w = out;
	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && tt_hex_digit(s[i + 1]) >= 0 && tt_hex_digit(s[i + 2]) >= 0) {
			*w++ = (char)(tt_hex_digit(s[i + 1]) * 16 + tt_hex_digit(s[i + 2]));
			i += 2;
		} else {
			*w++ = s[i];
		}
	}
	*w = '\0';
	return out;
}

void tt_query_url_release(tt_query_url *u)
{
	if (u->password)
		memset(u->password, 0, strlen(u->password));
	free(u->user);
	free(u->password);
	free(u->host);
	memset(u, 0, sizeof *u);
}

int tt_query_mysql_url(const char *url, tt_query_url *u)
{
	memset(u, 0, sizeof *u);
	u->port = 3306;
	if (strncmp(url, "mysql://", 8) != 0)
		return -1;
	/* the authority ends at the first '/'; user and password are
	 * percent-escaped, so its last '@' ends them */
	const char *p = url + 8, *end = p + strcspn(p, "/?#"), *at = NULL;
	for (const char *c = p; c < end; c++)
		if (*c == '@')
			at = c;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		if (!(u->user = pct_decode(p, (size_t)((colon ? colon : at) - p))) ||
		    (colon && !(u->password = pct_decode(colon + 1, (size_t)(at - colon - 1))))) {
			tt_query_url_release(u);
			return TT_ENOMEM;
		}
		p = at + 1;
	}
	const char *colon = memchr(p, ':', (size_t)(end - p));
	if (!(u->host = tt_strndup(p, (size_t)((colon ? colon : end) - p)))) {
		tt_query_url_release(u);
		return TT_ENOMEM;
	}
	if (colon) {
		char *stop;
		long port = strtol(colon + 1, &stop, 10);
		if (stop != end || port < 1 || port > 65535) {
			tt_query_url_release(u);
			return -1;
		}
		u->port = port;
	}
	if (!*u->host) {
		tt_query_url_release(u);
		return -1;
	}
	return 0;
}

static int build_dolt(tt_qobj *o, tt_error *err)
{
	const char *url = str_of(o->handle, "url_with_password"), *db = str_of(o->handle, "database"),
		   *commit = str_of(o->handle, "commit"), *ref = str_of(o->handle, "ref");
	tt_query_url u;
	if (!url)
		url = str_of(o->handle, "url");
	if (!url || !db)
		return refuse(o, err, "the dolt handle names no server");
	int urc = tt_query_mysql_url(url, &u);
	if (urc == TT_ENOMEM)
		return tt_error_oom(err);
	if (urc)
		return refuse(o, err, "the dolt handle's server address is not a mysql://HOST:PORT/ URL");
	const char *user = u.user, *password = u.password, *host = u.host;
	long port = u.port;
	/* the revision database of the pinned commit: db/<commit> */
	char *revdb = tt_asprintf("%s/%s", db, commit ? commit : ref);
	char *att = tt_asprintf("tether_dolt_%s", o->m->key);
	tt_buf b = TT_BUF_INIT;
	int rc = 0;
	if (!revdb || !att) {
		rc = tt_error_oom(err);
		goto done;
	}
	need(o, "mysql_scanner");
	tt_buf_puts(&b, "CREATE OR REPLACE TEMPORARY SECRET ");
	tt_q_ident(&b, att);
	tt_buf_puts(&b, " (TYPE mysql, HOST ");
	tt_q_literal(&b, host);
	tt_buf_printf(&b, ", PORT %ld, DATABASE ", port);
	tt_q_literal(&b, revdb);
	if (user) {
		tt_buf_puts(&b, ", USER ");
		tt_q_literal(&b, user);
	}
	if (password) {
		tt_buf_puts(&b, ", PASSWORD ");
		tt_q_literal(&b, password);
	}
	tt_buf_puts(&b, ")");
	char *shown = tt_asprintf("CREATE TEMPORARY SECRET \"%s\" (TYPE mysql, HOST '%s', PORT %ld, DATABASE '%s', "
				  "...credentials not shown)", att, host, port, revdb);
	if (!shown || add_stmt(o, &b, shown)) {
		free(shown);
		rc = tt_error_oom(err);
		goto done;
	}
	free(shown);
	tt_buf_puts(&b, "ATTACH '' AS ");
	tt_q_ident(&b, att);
	tt_buf_puts(&b, " (TYPE mysql, SECRET ");
	tt_q_ident(&b, att);
	tt_buf_puts(&b, ", READ_ONLY)");
	if (add_stmt(o, &b, NULL)) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* The scanner's catalog names the tables after the database's
	 * information_schema, which the revision database may report under
	 * its branch's name: read each table through mysql_query on the
	 * revision database's own connection instead (views made once the
	 * table list is known, see dolt_views). */
	tt_buf_puts(&b, "CREATE SCHEMA ");
	tt_q_ident(&b, o->m->key);
	if (add_stmt(o, &b, NULL)) {
		rc = tt_error_oom(err);
		goto done;
	}
	o->at = tt_asprintf("commit %s", commit ? commit : ref);
	o->reader = tt_strdup("mysql_query on the revision database");
	if (password)
		json_object_set_new(o->handle, "secret_query_password", json_string(password));
done:
	tt_buf_release(&b);
	tt_query_url_release(&u);
	free(revdb);
	free(att);
	return rc;
}

static int build_neon(tt_qobj *o, tt_error *err)
{
	const char *url = str_of(o->handle, "url_with_password"), *shown_url = str_of(o->handle, "address"),
		   *branch = str_of(o->handle, "branch");
	if (!url)
		return refuse(o, err, "the neon handle gives no connection");
	need(o, "postgres_scanner");
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, "ATTACH ");
	tt_q_literal(&b, url);
	tt_buf_puts(&b, " AS ");
	tt_q_ident(&b, o->m->key);
	tt_buf_puts(&b, " (TYPE postgres, READ_ONLY)");
	tt_buf shown = TT_BUF_INIT;
	tt_buf_puts(&shown, "ATTACH ");
	tt_q_literal(&shown, shown_url ? shown_url : "(redacted)");
	tt_buf_puts(&shown, " AS ");
	tt_q_ident(&shown, o->m->key);
	tt_buf_puts(&shown, " (TYPE postgres, READ_ONLY)");
	int rc = shown.failed ? TT_ENOMEM : add_stmt(o, &b, shown.ptr);
	tt_buf_release(&b);
	tt_buf_release(&shown);
	if (rc)
		return tt_error_oom(err);
	o->at = tt_asprintf("branch %s (read-only endpoint)", branch ? branch : "?");
	o->reader = tt_strdup("ATTACH (TYPE postgres, READ_ONLY)");
	return 0;
}

/* --- file objects ------------------------------------------------------------------------ */

static const char *format_of(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (!dot)
		return NULL;
	if (strcasecmp(dot, ".parquet") == 0 || strcasecmp(dot, ".pq") == 0)
		return "parquet";
	if (strcasecmp(dot, ".csv") == 0 || strcasecmp(dot, ".tsv") == 0)
		return "csv";
	if (strcasecmp(dot, ".json") == 0 || strcasecmp(dot, ".jsonl") == 0 || strcasecmp(dot, ".ndjson") == 0)
		return "json";
	return NULL;
}

static int cmp_json_str(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

static void sort_strings(json_t *arr)
{
	size_t n = json_array_size(arr);
	json_t **items = tt_calloc(n ? n : 1, sizeof *items);
	if (!items)
		return;
	for (size_t i = 0; i < n; i++)
		items[i] = json_incref(json_array_get(arr, i));
	qsort(items, n, sizeof *items, cmp_json_str);
	json_array_clear(arr);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(arr, items[i]);
	free(items);
}

static int walk(const char *dir, json_t *files, json_t *others)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	struct dirent *e;
	int rc = 0;
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue; /* hidden files, the owner marker */
		char *p = tt_path_join(dir, e->d_name);
		struct stat st;
		if (!p)
			rc = -1;
		else if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			rc = walk(p, files, others);
		else if (S_ISREG(st.st_mode))
			json_array_append_new(format_of(e->d_name) ? files : others, json_string(p));
		free(p);
	}
	closedir(d);
	return rc;
}

static int build_file(tt_repo *repo, tt_qobj *o, const char *where, tt_error *err)
{
	const tt_manifest *m = o->m;
	const char *path = str_of(m->locator, "path");
	const char *uri = str_of(m->locator, "uri");
	tt_backend *b;
	json_t *now = NULL, *others = NULL;
	int rc;
	if (!path && uri && !strstr(uri, "://"))
		path = uri;
	if (!path)
		return refuse(o, err, "a file object in an object store is not read by `tether query` in this build "
			      "(only local files and directories)");
	if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0)
		return tt_error_object(err, m->key, m->kind);
	/* An Observed object has no past: its files are read only while they
	 * are still the bytes recorded. */
	if ((rc = tt_backend_fingerprint(b, m->locator, NULL, &now, err)) < 0) {
		tt_error_prefix(err, "[%s] cannot read its files now: ", m->key);
		return tt_error_object(err, m->key, m->kind);
	}
	bool same = tt_engine_same(m, now, m->state);
	json_decref(now);
	if (!same) {
		rc = tt_error_set(err, TT_EIMMUTABLE, "'%s' (file) has changed since %s: its files' bytes are no "
				  "longer the recorded state, and an Observed object cannot be read in the past",
				  m->key, where);
		tt_error_hint(err, "query it without -r to read what the working copy records after `tether commit`, "
			      "or pin a copy of the files (a Delta, Iceberg or Lance table keeps its versions)");
		return tt_error_object(err, m->key, m->kind);
	}
	o->files = json_array();
	others = json_array();
	struct stat st;
	if (!o->files || !others)
		rc = tt_error_oom(err);
	else if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		rc = walk(path, o->files, others) ? tt_error_oom(err) : 0;
	else if (format_of(path))
		json_array_append_new(o->files, json_string(path));
	else
		json_array_append_new(others, json_string(path));
	if (rc)
		goto done;
	sort_strings(o->files);
	size_t i;
	json_t *v;
	const char *fmt = NULL;
	json_array_foreach(o->files, i, v) {
		const char *f = format_of(json_string_value(v));
		if (fmt && strcmp(fmt, f) != 0) {
			rc = refuse(o, err, "its files mix %s and %s: one relation reads one format", fmt, f);
			goto done;
		}
		fmt = f;
	}
	if (!fmt) {
		rc = refuse(o, err, "it holds no Parquet, CSV or JSON file%s", json_array_size(others) ? "s" : "");
		goto done;
	}
	o->format = fmt;
	o->at = tt_asprintf("%s %s (checked now)", str_of(m->state, "sha256") ? "sha256" : "digest",
			    str_of(m->state, "sha256") ? str_of(m->state, "sha256") : str_of(m->state, "digest"));
	o->reader = tt_strdup(strcmp(fmt, "csv") == 0 ? "read_csv" : strcmp(fmt, "json") == 0 ? "read_json" : "read_parquet");
	tt_buf s = TT_BUF_INIT;
	tt_buf_printf(&s, "SELECT * FROM %s([", o->reader);
	json_array_foreach(o->files, i, v) {
		if (i)
			tt_buf_puts(&s, ", ");
		tt_q_literal(&s, json_string_value(v));
	}
	tt_buf_puts(&s, "]");
	if (strcmp(fmt, "parquet") != 0)
		tt_buf_puts(&s, ", union_by_name => true");
	tt_buf_puts(&s, ")");
	rc = s.failed ? tt_error_oom(err) : view_over(o, s.ptr, err);
	tt_buf_release(&s);
done:
	json_decref(others);
	return rc;
}

/* Build o for manifest m; 1 when refused (o->refused says why), 0 built. */
static int build(tt_repo *repo, tt_qobj *o, const tt_manifest *m, const char *where, tt_error *err)
{
	int rc;
	o->m = m;
	if (!(o->name = tt_query_sql_name(m->key)) || !(o->exts = json_array()) || !(o->setup = json_array()))
		return tt_error_oom(err);
	const tt_kind *kind = tt_kind_find(m->kind);
	o->form = kind ? kind->query : TT_QUERY_UNREAD;
	if (o->form == TT_QUERY_COMMITS)
		return refuse(o, err, "a git repository holds files and commits, not rows; `tether open %s -r REV` "
			      "gives the commit to check out", m->key);
	if (o->form == TT_QUERY_ARRAYS)
		return refuse(o, err, "an Icechunk repository holds Zarr arrays, not rows; read them with xarray or "
			      "zarr at the snapshot `tether open %s -r REV` gives (the Python package's Repo.open "
			      "hands over the session)", m->key);
	if (o->form == TT_QUERY_SPEC)
		return refuse(o, err, "the memory kind is tether's executable specification, not a table");
	if (!m->state)
		return refuse(o, err, "it has no committed state at %s", where);
	if (o->form == TT_QUERY_FILES)
		return build_file(repo, o, where, err);
	if ((rc = tt_engine_open_recorded(repo, m, where, &o->handle, err)) < 0)
		return rc;
	switch (o->form) {
	case TT_QUERY_DELTA:
		rc = build_delta(o, err);
		break;
	case TT_QUERY_ICEBERG:
		rc = build_iceberg(o, err);
		break;
	case TT_QUERY_LANCE:
		rc = build_lance(o, err);
		break;
	case TT_QUERY_DUCKLAKE:
		rc = build_ducklake(o, err);
		break;
	case TT_QUERY_DOLT:
		rc = build_dolt(o, err);
		break;
	case TT_QUERY_NEON:
		rc = build_neon(o, err);
		break;
	default:
		rc = refuse(o, err, "tether query does not read the %s kind", m->kind);
		break;
	}
	if (rc < 0)
		tt_error_object(err, m->key, m->kind);
	return rc;
}

static void qobj_release(tt_qobj *o)
{
	free(o->name);
	free(o->at);
	free(o->reader);
	free(o->refused);
	free(o->duck_refused);
	free(o->path);
	free(o->branch);
	json_decref(o->handle);
	json_decref(o->exts);
	json_decref(o->setup);
	json_decref(o->files);
}

/* --- extensions ------------------------------------------------------------------------- */

static char *ext_in(const char *dir, const char *name)
{
	for (int i = 0; i < 4; i++) {
		char *p = i == 0   ? tt_asprintf("%s/%s.duckdb_extension", dir, name)
			  : i == 1 ? tt_asprintf("%s/" TT_DUCK_EXT_VERSION "/%s.duckdb_extension", dir, name)
			  : i == 2 ? tt_asprintf("%s/" TT_DUCK_EXT_VERSION "/" TT_DUCK_EXT_PLATFORM "/%s.duckdb_extension",
						 dir, name)
				   : tt_asprintf("%s/duckdb_extension_%s/extensions/" TT_DUCK_EXT_VERSION
						 "/%s.duckdb_extension", dir, name, name);
		struct stat st;
		if (p && stat(p, &st) == 0 && S_ISREG(st.st_mode))
			return p;
		free(p);
	}
	return NULL;
}

static char *ext_in_list(const char *list, const char *name)
{
	char *copy = list ? tt_strdup(list) : NULL, *save = NULL, *found = NULL;
	for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d && !found; d = strtok_r(NULL, ":", &save))
		if (*d)
			found = ext_in(d, name);
	free(copy);
	return found;
}

/* Where name's .duckdb_extension is: TETHER_DUCKDB_EXTENSIONS, then
 * secrets.toml [duckdb] extensions (each a ':'-list of directories laid
 * out flat, as DuckDB's extension directory, or as a Python site-packages
 * with duckdb-extension-NAME wheels), then DuckDB's own directory. */
static char *find_extension(tt_repo *repo, const char *name)
{
	char *p = ext_in_list(getenv("TETHER_DUCKDB_EXTENSIONS"), name);
	if (!p)
		p = ext_in_list(tt_repo_secret_setting(repo, "duckdb", "extensions"), name);
	if (!p && getenv("HOME")) {
		char *d = tt_asprintf("%s/.duckdb/extensions", getenv("HOME"));
		p = d ? ext_in(d, name) : NULL;
		free(d);
	}
	return p;
}

static int load_extension(tt_repo *repo, tt_duck_session *s, const char *name, const char *user, tt_error *err)
{
	char *path = find_extension(repo, name);
	if (!path) {
		const char *pkg = strcmp(name, "mysql_scanner") == 0      ? "mysql-scanner"
				  : strcmp(name, "postgres_scanner") == 0 ? "postgres-scanner"
				  : strcmp(name, "sqlite_scanner") == 0   ? "sqlite-scanner"
									  : name;
		tt_error_set(err, TT_ECAPABILITY, "the DuckDB extension '%s' (for %s) is not installed for DuckDB "
			     TT_DUCK_EXT_VERSION, name, user);
		return tt_error_hint(err, "install it with DuckDB 1.5.5's `INSTALL %s` (into ~/.duckdb/extensions), or "
				     "`pip install duckdb-extension-%s==1.5.5` and name its site-packages directory in "
				     "TETHER_DUCKDB_EXTENSIONS or .tether/secrets.toml [duckdb] extensions; tether "
				     "downloads nothing", name, pkg);
	}
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, "LOAD ");
	tt_q_literal(&b, path);
	char *what = tt_asprintf("loading the %s extension (%s)", name, path);
	int rc = b.failed || !what ? tt_error_oom(err) : tt_duck_session_exec(s, b.ptr, what, err);
	free(what);
	free(path);
	tt_buf_release(&b);
	return rc;
}

/* --- the whole dataset --------------------------------------------------------------------- */

typedef struct qrun {
	tt_qobj *objs;
	size_t n;
	tt_manifest_set at;
	bool have_at;
	char *resolved;
} qrun;

static void qrun_release(qrun *q)
{
	for (size_t i = 0; i < q->n; i++)
		qobj_release(&q->objs[i]);
	free(q->objs);
	if (q->have_at)
		tt_manifests_release(&q->at);
	free(q->resolved);
}

static bool selected(const char *key, const char *const *keys, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(keys[i]);
		if (strcmp(keys[i], key) == 0 || (l && keys[i][l - 1] == '/' && strncmp(keys[i], key, l) == 0))
			return true;
	}
	return false;
}

static int collect(tt_repo *repo, const tt_query_opts *o, qrun *q, tt_error *err)
{
	const tt_manifest_set *set = &repo->objects;
	const char *where = "the working copy";
	int rc;
	if (o->rev) {
		if ((rc = tt_engine_objects_at(repo, o->rev, &q->at, &q->resolved, err)) < 0)
			return rc;
		q->have_at = true;
		set = &q->at;
		where = o->rev;
	}
	for (size_t i = 0; i < o->nkeys; i++) {
		bool hit = false;
		for (size_t j = 0; j < set->n && !hit; j++)
			hit = selected(set->items[j].key, &o->keys[i], 1);
		if (!hit) {
			tt_error_set(err, TT_ECONFIG, "no such object at %s: %s", where, o->keys[i]);
			return tt_engine_key_hint(err, set, o->keys[i]);
		}
	}
	bool every = o->schema || o->engine || !o->sql; /* --explain with SQL: what the SQL reads */
	/* the SQL as names are looked for in it: its comments and strings blank */
	char *code = every || o->nkeys ? NULL : tt_duck_sql_code(o->sql);
	q->objs = tt_calloc(set->n ? set->n : 1, sizeof *q->objs);
	if (!q->objs || (!every && !o->nkeys && !code)) {
		free(code);
		return tt_error_oom(err);
	}
	for (size_t j = 0; j < set->n; j++) {
		const tt_manifest *m = &set->items[j];
		if (o->nkeys ? !selected(m->key, o->keys, o->nkeys) : !(every || tt_query_names_key(code, m->key)))
			continue;
		tt_qobj *ob = &q->objs[q->n++];
		if ((rc = build(repo, ob, m, where, err)) < 0) {
			if (!every || o->nkeys || rc == TT_ENOMEM) {
				free(code);
				return rc;
			}
			/* listing every object: one that cannot be read now is listed as such */
			free(ob->refused);
			ob->refused = tt_strdup(err->message ? err->message : "cannot be read");
			tt_error_clear(err);
			if (!ob->refused)
				return tt_error_oom(err);
			rc = 1;
		}
		if (rc == 0 && ob->duck_refused && !o->engine) {
			/* no relation in DuckDB; read by the other engines' snippets only */
			free(ob->refused);
			ob->refused = ob->duck_refused;
			ob->duck_refused = NULL;
			rc = 1;
		}
		if (rc == 1 && o->nkeys && !every && selected(m->key, o->keys, o->nkeys)) {
			/* named with --key: its refusal is the answer */
			tt_error_set(err, TT_ECAPABILITY, "'%s' (%s) is not a relation: %s", m->key, m->kind,
				     ob->refused);
			return tt_error_object(err, m->key, m->kind);
		}
	}
	free(code); /* (set only when neither every object nor --key, so no return above leaks it) */
	return 0;
}

/* The views of a dolt object, once its revision database is attached. */
static int dolt_views(tt_duck_session *s, tt_qobj *o, tt_error *err)
{
	char *att = tt_asprintf("tether_dolt_%s", o->m->key);
	tt_buf b = TT_BUF_INIT;
	tt_db_rows rows;
	int rc;
	if (!att)
		return tt_error_oom(err);
	tt_buf_puts(&b, "SELECT * FROM mysql_query(");
	tt_q_literal(&b, att);
	tt_buf_puts(&b, ", 'SHOW TABLES')");
	if ((rc = tt_duck_session_rows(s, b.ptr, &rows, err)) < 0) {
		tt_error_prefix(err, "[%s] listing its tables at %s: ", o->m->key, o->at);
		goto done;
	}
	for (size_t r = 0; rc == 0 && r < rows.nrows; r++) {
		const char *t = rows.cells[r * rows.ncols];
		if (!t)
			continue;
		tt_buf q = TT_BUF_INIT, inner = TT_BUF_INIT;
		tt_buf_puts(&inner, "SELECT * FROM `");
		for (const char *c = t; *c; c++) {
			if (*c == '`')
				tt_buf_putc(&inner, '`');
			tt_buf_putc(&inner, *c);
		}
		tt_buf_puts(&inner, "`");
		tt_buf_puts(&b, "");
		tt_buf_reset(&b);
		tt_buf_puts(&b, "CREATE VIEW ");
		tt_q_ident(&b, o->m->key);
		tt_buf_putc(&b, '.');
		tt_q_ident(&b, t);
		tt_buf_puts(&b, " AS SELECT * FROM mysql_query(");
		tt_q_literal(&b, att);
		tt_buf_puts(&b, ", ");
		tt_q_literal(&b, inner.ptr);
		tt_buf_puts(&b, ")");
		if (b.failed || inner.failed)
			rc = tt_error_oom(err);
		else if ((rc = tt_duck_session_exec(s, b.ptr, NULL, err)) == 0)
			json_array_append_new(o->setup, json_pack("{s:s, s:n}", "sql", b.ptr, "shown"));
		tt_buf_release(&q);
		tt_buf_release(&inner);
	}
	tt_db_rows_release(&rows);
done:
	tt_buf_release(&b);
	free(att);
	return rc;
}

static int setup(tt_repo *repo, tt_duck_session *s, qrun *q, tt_error *err)
{
	int rc;
	json_t *loaded = json_array();
	if (!loaded)
		return tt_error_oom(err);
	for (size_t i = 0; i < q->n; i++) {
		tt_qobj *o = &q->objs[i];
		size_t j, k;
		json_t *v, *w;
		if (o->refused)
			continue;
		char *user = tt_asprintf("'%s' (%s)", o->m->key, o->m->kind);
		json_array_foreach(o->exts, j, v) {
			bool done = false;
			json_array_foreach(loaded, k, w)
				done = done || json_equal(v, w);
			if (done)
				continue;
			if ((rc = load_extension(repo, s, json_string_value(v), user ? user : o->m->key, err)) < 0) {
				free(user);
				json_decref(loaded);
				return tt_error_object(err, o->m->key, o->m->kind);
			}
			json_array_append(loaded, v);
		}
		free(user);
		/* credentials never come back in an error message */
		const char *pw = str_of(o->handle, "secret_query_password");
		if (pw)
			tt_duck_session_add_secret(s, pw);
		json_array_foreach(o->setup, j, v) {
			const char *sql = str_of(v, "sql");
			bool secret = json_is_string(json_object_get(v, "shown"));
			char *what = tt_asprintf("setting up '%s' (%s) at %s", o->m->key, o->m->kind,
						 o->at ? o->at : "?");
			rc = secret ? tt_duck_session_exec_secret(s, sql, str_of(v, "shown"), what, err)
				    : tt_duck_session_exec(s, sql, what, err);
			free(what);
			if (rc < 0) {
				json_decref(loaded);
				return tt_error_object(err, o->m->key, o->m->kind);
			}
		}
		if (o->form == TT_QUERY_DOLT && (rc = dolt_views(s, o, err)) < 0) {
			json_decref(loaded);
			return tt_error_object(err, o->m->key, o->m->kind);
		}
	}
	json_decref(loaded);
	return 0;
}

/* --- the answer ------------------------------------------------------------------------------ */

static json_t *relations(const qrun *q, json_t **not_rel)
{
	json_t *rel = json_array();
	*not_rel = json_object();
	for (size_t i = 0; rel && *not_rel && i < q->n; i++) {
		const tt_qobj *o = &q->objs[i];
		if (o->refused)
			json_object_set_new(*not_rel, o->m->key, json_string(o->refused));
		else if (!o->duck_refused) /* (--for ENGINE: in objects alone) */
			json_array_append_new(rel, json_pack("{s:s, s:s, s:s, s:s?, s:s?}", "name", o->name, "key",
							      o->m->key, "kind", o->m->kind, "at", o->at, "reader",
							      o->reader));
	}
	return rel;
}

/* The columns of each relation (catalogs: of each of their tables). */
static int add_columns(tt_duck_session *s, const qrun *q, json_t *rel, tt_error *err)
{
	size_t i;
	json_t *r;
	json_array_foreach(rel, i, r) {
		const char *key = str_of(r, "key");
		const tt_kind *kind = tt_kind_find(str_of(r, "kind"));
		tt_query_form form = kind ? kind->query : TT_QUERY_UNREAD;
		bool catalog = tt_query_is_catalog(form);
		tt_buf b = TT_BUF_INIT;
		tt_db_rows rows;
		int rc;
		if (catalog) {
			tt_buf_puts(&b, "SELECT schema_name || '.' || table_name, column_name, data_type FROM "
					"duckdb_columns() WHERE ");
			tt_buf_puts(&b, form == TT_QUERY_DOLT ? "database_name = 'memory' AND schema_name = "
								  : "database_name = ");
			tt_q_literal(&b, key);
			tt_buf_puts(&b, " AND schema_name NOT IN ('information_schema', 'pg_catalog') ORDER BY 1, "
					"column_index");
		} else {
			tt_buf_puts(&b, "SELECT NULL, column_name, column_type FROM (DESCRIBE ");
			tt_q_ident(&b, key);
			tt_buf_puts(&b, ")");
		}
		if (b.failed) {
			tt_buf_release(&b);
			return tt_error_oom(err);
		}
		rc = tt_duck_session_rows(s, b.ptr, &rows, err);
		tt_buf_release(&b);
		if (rc < 0)
			return tt_error_prefix(err, "[%s] reading its columns: ", key);
		json_t *cols = json_array(), *tables = catalog ? json_object() : NULL;
		for (size_t k = 0; k < rows.nrows; k++) {
			char **c = rows.cells + k * rows.ncols;
			json_t *col = json_pack("{s:s, s:s}", "name", c[1] ? c[1] : "", "type", c[2] ? c[2] : "");
			if (tables) {
				json_t *t = json_object_get(tables, c[0] ? c[0] : "");
				if (!t)
					json_object_set_new(tables, c[0] ? c[0] : "", t = json_array());
				json_array_append_new(t, col);
			} else {
				json_array_append_new(cols, col);
			}
		}
		tt_db_rows_release(&rows);
		if (tables) {
			json_object_set_new(r, "tables", tables);
			json_decref(cols);
		} else {
			json_object_set_new(r, "columns", cols);
		}
	}
	(void)q;
	return 0;
}

static json_t *statements(tt_repo *repo, const qrun *q, bool with_secrets)
{
	json_t *arr = json_array(), *loaded = json_array();
	for (size_t i = 0; arr && i < q->n; i++) {
		const tt_qobj *o = &q->objs[i];
		size_t j;
		json_t *v;
		if (o->refused)
			continue;
		json_array_foreach(o->exts, j, v) {
			size_t k;
			json_t *w;
			bool done = false;
			json_array_foreach(loaded, k, w)
				done = done || json_equal(v, w);
			if (done)
				continue;
			json_array_append(loaded, v);
			/* for a caller's own DuckDB: the file found here */
			char *path = with_secrets ? find_extension(repo, json_string_value(v)) : NULL;
			tt_buf l = TT_BUF_INIT;
			tt_buf_puts(&l, "LOAD ");
			if (path)
				tt_q_literal(&l, path);
			else
				tt_buf_puts(&l, json_string_value(v));
			json_array_append_new(arr, json_string(l.ptr));
			tt_buf_release(&l);
			free(path);
		}
		json_array_foreach(o->setup, j, v) {
			json_t *shown = json_object_get(v, "shown");
			json_array_append(arr, with_secrets || !json_is_string(shown) ? json_object_get(v, "sql") : shown);
		}
		if (o->form == TT_QUERY_DOLT && !with_secrets) {
			char *l = tt_asprintf("-- then one view %s.<table> per table of the revision database, over "
					      "mysql_query('tether_dolt_%s', 'SELECT * FROM `<table>`')", o->name,
					      o->m->key);
			json_array_append_new(arr, json_string(l ? l : ""));
			free(l);
		}
	}
	json_decref(loaded);
	return arr;
}

static int adapt_columns(void *ctx, size_t n, const char *const *names, const char *const *types)
{
	const tt_query_sink *u = ctx;
	(void)types;
	return u->columns ? u->columns(u->ctx, n, names) : 0;
}

static int adapt_row(void *ctx, size_t n, const char *const *cells, const size_t *lens)
{
	const tt_query_sink *u = ctx;
	return u->row(u->ctx, n, cells, lens);
}

int tt_repo_query(tt_repo *repo, const tt_query_opts *o, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(o, tt_query_opts, TT_QUERY_OPTS_VERSION, err);
	qrun q = { 0 };
	tt_duck_session *s = NULL;
	json_t *res = NULL, *not_rel = NULL, *rel = NULL;
	int rc;
	*out = NULL;
	if (!o)
		return tt_error_set(err, TT_EUSAGE, "tt_repo_query needs options (TT_QUERY_OPTS_INIT)");
	int modes = (o->sql != NULL) + o->schema + o->explain + (o->engine != NULL);
	if (modes > 1 && !(o->sql && o->explain))
		return tt_error_set(err, TT_EUSAGE, "SQL, --schema, --explain and --for are separate questions: ask one");
	if (o->sql && !o->explain && !o->sink)
		return tt_error_set(err, TT_EUSAGE, "a query needs a sink for its rows");
	if (o->engine && strcmp(o->engine, "duckdb") != 0 && strcmp(o->engine, "spark") != 0 &&
	    strcmp(o->engine, "trino") != 0 && strcmp(o->engine, "polars") != 0)
		return tt_error_set(err, TT_EUSAGE, "unknown engine '%s': duckdb, spark, trino or polars", o->engine);
	if ((rc = collect(repo, o, &q, err)) < 0)
		goto done;
	rel = relations(&q, &not_rel);
	res = json_pack("{s:s?, s:O, s:O}", "rev", q.resolved, "relations", rel, "not_relations", not_rel);
	if (!res) {
		rc = tt_error_oom(err);
		goto done;
	}
	json_object_set_new(res, "secret_setup", statements(repo, &q, true));
	if (o->explain) {
		json_object_set_new(res, "statements", statements(repo, &q, false));
		goto done;
	}
	if (o->engine) {
		json_t *objs = json_object();
		for (size_t i = 0; i < q.n; i++) {
			const tt_qobj *ob = &q.objs[i];
			const char *no = ob->refused ? ob->refused
					 : strcmp(o->engine, "duckdb") == 0 ? ob->duck_refused
									    : NULL;
			json_t *snip = no ? json_pack("{s:s, s:s}", "refused", no, "kind", ob->m->kind)
						   : tt_query_engine_snippet(ob, o->engine, o->rev ? o->rev : "the working copy");
			if (snip && !no && !ob->duck_refused && json_object_get(snip, "refused") &&
			    strcmp(o->engine, "duckdb") != 0) {
				/* another engine cannot, DuckDB can: say so */
				char *h = tt_asprintf("`tether open %s --for duckdb` reads it", ob->m->key);
				json_object_set_new(snip, "hint", h ? json_string(h) : json_null());
				free(h);
			}
			json_object_set_new(objs, ob->m->key, snip ? snip : json_null());
		}
		json_object_set_new(res, "engine", json_string(o->engine));
		json_object_set_new(res, "objects", objs);
		if (strcmp(o->engine, "spark") == 0) {
			char *script = tt_query_spark_script(q.objs, q.n, o->rev ? o->rev : "the working copy");
			json_object_set_new(res, "script", script ? json_string(script) : json_null());
			free(script);
		}
		goto done;
	}
	if ((rc = tt_duck_session_open(&s, err)) < 0 || (rc = setup(repo, s, &q, err)) < 0)
		goto done;
	if (o->schema) {
		rc = add_columns(s, &q, json_object_get(res, "relations"), err);
		goto done;
	}
	rc = tt_duck_session_stream(s, o->sql, o->json_cells ? TT_DUCK_JSON : TT_DUCK_TEXT,
				    &(tt_duck_sink){ .columns = adapt_columns, .row = adapt_row, .ctx = (void *)o->sink },
				    err);
	if (rc < 0) {
		/* A relation that is none, named in the SQL: say why. */
		for (size_t i = 0; i < q.n; i++)
			if (q.objs[i].refused && strstr(err->message, q.objs[i].m->key)) {
				tt_error_hint(err, "'%s' (%s) is not a relation: %s", q.objs[i].m->key, q.objs[i].m->kind,
					      q.objs[i].refused);
				break;
			}
	}
done:
	if (rc < 0) {
		json_decref(res);
		res = NULL;
	}
	*out = res;
	json_decref(rel);
	json_decref(not_rel);
	tt_duck_session_close(s);
	qrun_release(&q);
	return rc < 0 ? rc : 0;
}
