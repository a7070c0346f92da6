/*
 * backends/dolt/dolt.c - Dolt databases over the MySQL protocol (Forkable,
 * experimental; ATOMIC_REF, DIFF, HISTORY, PROMOTE, MERGE).
 *
 * Dolt versions a SQL database like git: a branch's head commit hash is the
 * state, a tag is the pin, a branch made from the tag is the fork.  tether
 * talks to a `dolt sql-server` through src/db (libmariadb): the dolt_*
 * system tables and the DOLT_* procedures, every value a bound parameter.
 *
 * Locator: host (127.0.0.1), port (3306), database (required), branch
 * (main), user; or url = mysql://user@host:port/database.  Identity
 * {host, port, database}.  Credentials only from .tether/secrets.toml's
 * [uris."mysql://host:port"] entry (a .../database entry beats it): user /
 * password or user_env / password_env.  A manifest chooses the host, so a
 * server without an entry gets no password, and user root unless the
 * locator names one.
 *
 * State: {"commit": <branch head>} plus "dirty": true while the branch has
 * uncommitted working-set changes (dolt_branches.dirty; dolt_status where
 * that column is missing), which pin refuses.  Pin: DOLT_TAG('tether.<id>',
 * commit).  Fork: DOLT_BRANCH(name, tag), recreated with -D when it exists
 * at another commit.  Promote: DOLT_MERGE('--ff-only', src) (on servers
 * without --ff-only, ancestry checked with DOLT_MERGE_BASE first); merge:
 * DOLT_MERGE inside an explicit transaction, whose conflicts and constraint
 * violations (dolt_conflicts, dolt_constraint_violations) come back as a
 * merge conflict naming the tables, after DOLT_MERGE('--abort') and a
 * rollback.  Either moves only a base still at the head the plan reviewed,
 * with no uncommitted changes, and its result is the commit DOLT_MERGE
 * returns -- never the base head read again, which a racing writer may
 * have moved on.  Handles are revision-database URLs mysql://user@host:port/
 * db/<ref> (tags and hashes are read-only in Dolt).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "backends/kit.h"
#include "core/ids.h"
#include "core/pyvalue.h"
#include "db/db.h"
#include "util/buf.h"
#include "util/mem.h"

#define KIND "dolt"
#define DEFAULT_PORT 3306
#define LOG_LIMIT 100000


/* --- the locator ------------------------------------------------------------- */

typedef struct dolt_ep {
	char *host;
	long port;
	char *database;
	char *user;     /* the locator's, else the server entry's, else NULL (root) */
	char *password; /* from the server entry only; never printed */
	char *entry;    /* the secrets.toml [uris] key the password came from (or named it) */
	char *unset;    /* the *_env variable an entry names that is not set */
} dolt_ep;

static void ep_release(dolt_ep *e)
{
	free(e->host);
	free(e->database);
	free(e->user);
	free(e->entry);
	free(e->unset);
	if (e->password) {
		memset(e->password, 0, strlen(e->password));
		free(e->password);
	}
	memset(e, 0, sizeof *e);
}

static const char *str_of(const json_t *o, const char *key)
{
	json_t *v = json_object_get(o, key);
	return json_is_string(v) && *json_string_value(v) ? json_string_value(v) : NULL;
}

static char *dup_n(const char *s, size_t n)
{
	char *o = tt_malloc(n + 1);
	if (o) {
		memcpy(o, s, n);
		o[n] = '\0';
	}
	return o;
}

/* mysql://[user@]host[:port]/database[/...]: a password in a committed
 * locator is refused (kinds.c says so at add, this again at use). */
static int parse_url(const char *url, dolt_ep *e, tt_error *err)
{
	const char *p = url;
	if (strncmp(p, "mysql://", 8) != 0)
		return KERR(err, TT_EBACKEND, "dolt url '%s' is not a mysql://user@host:port/database URL", url);
	p += 8;
	const char *slash = strchr(p, '/');
	const char *end = slash ? slash : p + strlen(p);
	const char *at = memchr(p, '@', (size_t)(end - p));
	if (at) {
		if (memchr(p, ':', (size_t)(at - p)))
			return KERR(err, TT_EBACKEND,
				    "dolt url holds a password: a locator is committed; put it in "
				    ".tether/secrets.toml [uris.\"mysql://host:port\"]");
		if (at > p && !(e->user = dup_n(p, (size_t)(at - p))))
			return KOOM(err);
		p = at + 1;
	}
	const char *colon = memchr(p, ':', (size_t)(end - p));
	const char *hend = colon ? colon : end;
	if (hend > p && !(e->host = dup_n(p, (size_t)(hend - p))))
		return KOOM(err);
	if (colon) {
		char *stop;
		e->port = strtol(colon + 1, &stop, 10);
		if (stop != end || e->port <= 0 || e->port > 65535)
			return KERR(err, TT_EBACKEND, "dolt url '%s' has a bad port", url);
	}
	if (slash) {
		const char *d = slash + 1, *dend = strchr(d, '/');
		size_t n = dend ? (size_t)(dend - d) : strlen(d);
		if (n && !(e->database = dup_n(d, n)))
			return KOOM(err);
	}
	return 0;
}

/* The server entry's user / password: [uris."mysql://host:port"], with a
 * [uris."mysql://host:port/database"] entry over it; literal or through
 * user_env / password_env.  Nothing else may supply them. */
static int server_secrets(const tt_backend *b, dolt_ep *e, tt_error *err)
{
	char *server = tt_asprintf("mysql://%s:%ld", e->host, e->port);
	char *full = server ? tt_asprintf("%s/%s", server, e->database) : NULL;
	const char *found[2] = { NULL, NULL };
	static const char *const names[2] = { "user", "password" };
	if (!full) {
		free(server);
		return KOOM(err);
	}
	for (int pass = 0; pass < 2; pass++) {
		const char *want = pass ? full : server;
		const char *k;
		json_t *rule;
		json_object_foreach(b->secret_rules, k, rule) {
			size_t n = strlen(k);
			while (n && k[n - 1] == '/')
				n--;
			if (strlen(want) != n || strncmp(k, want, n) != 0 || !json_is_object(rule))
				continue;
			for (int i = 0; i < 2; i++) {
				char envkey[32];
				snprintf(envkey, sizeof envkey, "%s_env", names[i]);
				const char *v = str_of(rule, names[i]);
				const char *env = str_of(rule, envkey);
				if (!v && env && !(v = getenv(env))) {
					/* named but unset: an authentication failure names it */
					free(e->unset);
					if (!(e->unset = tt_strdup(env)))
						goto oom;
				}
				if (v)
					found[i] = v;
				if ((v || env) && i == 1) {
					free(e->entry);
					if (!(e->entry = tt_strdup(k)))
						goto oom;
				}
			}
		}
	}
	free(server);
	free(full);
	if (found[0] && !e->user && !(e->user = tt_strdup(found[0])))
		return KOOM(err);
	if (found[1] && !(e->password = tt_strdup(found[1])))
		return KOOM(err);
	return 0;
oom:
	free(server);
	free(full);
	return KOOM(err);
}

static int endpoint(const tt_backend *b, const json_t *loc, dolt_ep *e, bool secrets, tt_error *err)
{
	int rc = 0;
	memset(e, 0, sizeof *e);
	const char *url = str_of(loc, "url");
	if (url) {
		rc = parse_url(url, e, err);
	} else {
		const char *h = str_of(loc, "host"), *d = str_of(loc, "database"), *u = str_of(loc, "user");
		json_t *port = json_object_get(loc, "port");
		if ((h && !(e->host = tt_strdup(h))) || (d && !(e->database = tt_strdup(d))) ||
		    (u && !(e->user = tt_strdup(u))))
			rc = KOOM(err);
		if (json_is_integer(port)) {
			e->port = (long)json_integer_value(port);
		} else if (json_is_string(port) && *json_string_value(port)) {
			char *stop;
			e->port = strtol(json_string_value(port), &stop, 10);
			if (*stop)
				e->port = -1;
		}
		if (rc == 0 && (e->port < 0 || e->port > 65535))
			rc = KERR(err, TT_EBACKEND, "dolt port must be a number from 1 to 65535");
	}
	if (rc == 0 && !e->database)
		rc = KERR(err, TT_EBACKEND, "dolt locator needs 'database' (or a url)");
	if (rc == 0 && !e->host && !(e->host = tt_strdup("127.0.0.1")))
		rc = KOOM(err);
	if (rc == 0 && !e->port)
		e->port = DEFAULT_PORT;
	if (rc == 0 && secrets)
		rc = server_secrets(b, e, err);
	if (rc)
		ep_release(e);
	return rc;
}

static int base_branch_of(const json_t *loc, char **out, tt_error *err)
{
	const char *b = str_of(loc, "branch");
	*out = tt_strdup(b ? b : "main");
	return *out ? 0 : KOOM(err);
}

static char *at_of(const json_t *loc)
{
	json_t *v = json_object_get(loc, "at");
	if (!v || json_is_null(v))
		return NULL;
	return tt_pyv_str_dup(v);
}

static bool mentions(const tt_error *err, const char *word)
{
	if (!err || !err->message)
		return false;
	size_t n = strlen(word);
	for (const char *p = err->message; *p; p++)
		if (strncasecmp(p, word, n) == 0)
			return true;
	return false;
}

/* --- the connection ------------------------------------------------------------ */

typedef struct dconn {
	tt_db *db;
	dolt_ep ep;
	char *where; /* host:port/database, what messages name */
} dconn;

static void pct(tt_buf *b, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~')
			tt_buf_putc(b, (char)c);
		else
			tt_buf_printf(b, "%%%02X", c);
	}
}

static void dc_close(dconn *c)
{
	tt_db_close(c->db);
	ep_release(&c->ep);
	free(c->where);
	memset(c, 0, sizeof *c);
}

/* Name the server in a failure ("dolt server host:port/db: ..."). */
static int dc_fail(dconn *c, int rc, tt_error *err)
{
	tt_error_prefix(err, "dolt server %s", c->where);
	tt_error_object(err, NULL, KIND);
	return rc;
}

/* The server refused the login: say so, with where the credentials come
 * from and what to fix there -- in the message itself, since callers that
 * fold the error into a plan's text keep only that.  The server's own
 * words stay, after the name of the server. */
static int auth_failed(dconn *c, tt_error *err)
{
	const char *said = err && err->message ? err->message : "";
	const char *tail = strstr(said, ": ");
	const char *server_said = strstr(said, "Access denied") ? strstr(said, "Access denied")
				 : strstr(said, "access denied") ? strstr(said, "access denied")
				 : tail ? tail + 2 : said;
	char *why = tt_strdup(server_said);
	const char *user = c->ep.user ? c->ep.user : "root";
	tt_error_clear(err);
	if (!why)
		return KOOM(err);
	if (c->ep.unset)
		KERR(err, TT_EBACKEND,
		     "dolt server %s: authentication failed for user '%s' (%s): the [uris.\"%s\"] entry in "
		     ".tether/secrets.toml takes its password from $%s, which is not set",
		     c->where, user, why, c->ep.entry ? c->ep.entry : "mysql://host:port", c->ep.unset);
	else if (c->ep.entry)
		KERR(err, TT_EBACKEND,
		     "dolt server %s: authentication failed for user '%s' (%s): check the user and password of "
		     "the [uris.\"%s\"] entry in .tether/secrets.toml",
		     c->where, user, why, c->ep.entry);
	else
		KERR(err, TT_EBACKEND,
		     "dolt server %s: authentication failed for user '%s' (%s): no [uris.\"mysql://%s:%ld\"] "
		     "entry in .tether/secrets.toml gives a password for this server",
		     c->where, user, why, c->ep.host, c->ep.port);
	tt_error_hint(err, c->ep.unset ? "export %s, or set password (or password_env) in that entry"
				       : "set user and password (or password_env) in [uris.\"mysql://%s:%ld\"] of "
					 ".tether/secrets.toml",
		      c->ep.unset ? c->ep.unset : c->ep.host, c->ep.port);
	free(why);
	tt_error_object(err, NULL, KIND);
	return TT_EBACKEND;
}

static int dc_open(tt_backend *b, const json_t *loc, dconn *c, tt_error *err)
{
	tt_buf dsn = TT_BUF_INIT;
	int rc;
	memset(c, 0, sizeof *c);
	if ((rc = endpoint(b, loc, &c->ep, true, err)) != 0)
		return rc;
	if (!(c->where = tt_asprintf("%s:%ld/%s", c->ep.host, c->ep.port, c->ep.database))) {
		dc_close(c);
		return KOOM(err);
	}
	tt_buf_puts(&dsn, "mysql://");
	pct(&dsn, c->ep.user ? c->ep.user : "root");
	if (c->ep.password && *c->ep.password) {
		tt_buf_putc(&dsn, ':');
		pct(&dsn, c->ep.password);
	}
	tt_buf_printf(&dsn, "@%s:%ld/", c->ep.host, c->ep.port);
	pct(&dsn, c->ep.database);
	if (dsn.failed) {
		tt_buf_release(&dsn);
		dc_close(c);
		return KOOM(err);
	}
	tt_db_opts o = { 0 };
	rc = tt_db_open(&c->db, dsn.ptr, &o, err);
	memset(dsn.ptr, 0, dsn.len);
	tt_buf_release(&dsn);
	if (rc && rc != TT_ENOMEM && mentions(err, "access denied")) {
		rc = auth_failed(c, err);
		dc_close(c);
		return rc;
	}
	if (rc) {
		dc_fail(c, rc == TT_ENOMEM ? rc : TT_EBACKEND, err);
		if (err)
			err->code = rc == TT_ENOMEM ? rc : TT_EBACKEND;
		tt_error_hint(err, "check that the server is running and the [uris.\"mysql://%s:%ld\"] entry "
			      "in .tether/secrets.toml", c->ep.host, c->ep.port);
		rc = rc == TT_ENOMEM ? rc : TT_EBACKEND;
		dc_close(c);
	}
	return rc;
}

#define TXT(s) ((tt_db_value){ TT_DB_TEXT, (s), 0 })

static int dc_query(dconn *c, const char *sql, const tt_db_value *p, size_t n, tt_db_rows *out, tt_error *err)
{
	tt_db_rows ignore = { 0 };
	int rc = tt_db_query(c->db, sql, p, n, out ? out : &ignore, err);
	if (!out)
		tt_db_rows_release(&ignore);
	if (rc) {
		if (out)
			tt_db_rows_release(out);
		if (err)
			err->code = rc == TT_ENOMEM ? rc : TT_EBACKEND;
		return dc_fail(c, rc == TT_ENOMEM ? rc : TT_EBACKEND, err);
	}
	return 0;
}

static const char *cell(const tt_db_rows *r, size_t row, size_t col)
{
	return row < r->nrows && col < r->ncols ? r->cells[row * r->ncols + col] : NULL;
}

static long col_index(const tt_db_rows *r, const char *name)
{
	for (size_t i = 0; i < r->ncols; i++)
		if (r->names[i] && strcasecmp(r->names[i], name) == 0)
			return (long)i;
	return -1;
}

static const char *cell_named(const tt_db_rows *r, size_t row, const char *name)
{
	long i = col_index(r, name);
	return i < 0 ? NULL : cell(r, row, (size_t)i);
}

static bool truthy(const char *v)
{
	return v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0 && strcmp(v, "f") != 0;
}

/* A quoted identifier: `name` with backticks doubled. */
static void quote_ident(tt_buf *b, const char *name)
{
	tt_buf_putc(b, '`');
	for (; *name; name++) {
		if (*name == '`')
			tt_buf_putc(b, '`');
		tt_buf_putc(b, *name);
	}
	tt_buf_putc(b, '`');
}

/* (commit, dirty) of a branch; *hash NULL when there is no such branch. */
static int branch_head(dconn *c, const char *branch, char **hash, bool *dirty, tt_error *err)
{
	tt_db_rows r = { 0 };
	tt_db_value v[] = { TXT(branch) };
	tt_error e = TT_ERROR_INIT;
	int rc;
	*hash = NULL;
	*dirty = false;
	rc = tt_db_query(c->db, "SELECT hash, dirty FROM dolt_branches WHERE name = $1", v, 1, &r, &e);
	if (rc == 0) {
		tt_error_clear(&e);
		if (r.nrows && cell(&r, 0, 0)) {
			*dirty = truthy(cell(&r, 0, 1));
			if (!(*hash = tt_strdup(cell(&r, 0, 0))))
				rc = KOOM(err);
		}
		tt_db_rows_release(&r);
		return rc;
	}
	if (!mentions(&e, "dirty")) {
		tt_error_move(err, &e);
		if (err)
			err->code = TT_EBACKEND;
		return dc_fail(c, TT_EBACKEND, err);
	}
	/* A Dolt without dolt_branches.dirty: the branch's own dolt_status. */
	tt_error_clear(&e);
	if ((rc = dc_query(c, "SELECT hash FROM dolt_branches WHERE name = $1", v, 1, &r, err)) != 0)
		return rc;
	if (!r.nrows || !cell(&r, 0, 0)) {
		tt_db_rows_release(&r);
		return 0;
	}
	*hash = tt_strdup(cell(&r, 0, 0));
	tt_db_rows_release(&r);
	if (!*hash)
		return KOOM(err);
	tt_buf sql = TT_BUF_INIT;
	char *rev = tt_asprintf("%s/%s", c->ep.database, branch);
	tt_buf_puts(&sql, "SELECT COUNT(*) FROM ");
	if (rev)
		quote_ident(&sql, rev);
	tt_buf_puts(&sql, ".dolt_status");
	free(rev);
	if (sql.failed || !rev) {
		tt_buf_release(&sql);
		return KOOM(err);
	}
	rc = dc_query(c, sql.ptr, NULL, 0, &r, err);
	tt_buf_release(&sql);
	if (rc == 0) {
		*dirty = truthy(cell(&r, 0, 0));
		tt_db_rows_release(&r);
	}
	return rc;
}

static int one_text(dconn *c, const char *sql, const tt_db_value *v, size_t n, char **out, tt_error *err)
{
	tt_db_rows r = { 0 };
	int rc;
	*out = NULL;
	if ((rc = dc_query(c, sql, v, n, &r, err)) != 0)
		return rc;
	if (r.nrows && cell(&r, 0, 0) && !(*out = tt_strdup(cell(&r, 0, 0))))
		rc = KOOM(err);
	tt_db_rows_release(&r);
	return rc;
}

static int tag_hash(dconn *c, const char *name, char **out, tt_error *err)
{
	tt_db_value v[] = { TXT(name) };
	return one_text(c, "SELECT tag_hash FROM dolt_tags WHERE tag_name = $1", v, 1, out, err);
}

static int commit_exists(dconn *c, const char *commit, bool *yes, tt_error *err)
{
	char *one = NULL;
	tt_db_value v[] = { TXT(commit) };
	int rc = one_text(c, "SELECT 1 FROM dolt_commits WHERE commit_hash = $1", v, 1, &one, err);
	*yes = one != NULL;
	free(one);
	return rc;
}

/* HASHOF(ref): *out NULL when Dolt says the ref does not exist. */
static int resolve(dconn *c, const char *ref, char **out, tt_error *err)
{
	tt_db_rows r = { 0 };
	tt_db_value v[] = { TXT(ref) };
	tt_error e = TT_ERROR_INIT;
	*out = NULL;
	int rc = tt_db_query(c->db, "SELECT HASHOF($1)", v, 1, &r, &e);
	if (rc) {
		if (mentions(&e, "not found") || mentions(&e, "invalid ref") || mentions(&e, "branch not")) {
			tt_error_clear(&e);
			return 0;
		}
		tt_error_move(err, &e);
		if (err)
			err->code = TT_EBACKEND;
		return dc_fail(c, TT_EBACKEND, err);
	}
	if (r.nrows && cell(&r, 0, 0) && *cell(&r, 0, 0) && !(*out = tt_strdup(cell(&r, 0, 0))))
		rc = KOOM(err);
	tt_db_rows_release(&r);
	return rc;
}

static json_t *commit_state(const char *hash, bool dirty)
{
	json_t *s = json_pack("{s:s}", "commit", hash);
	if (s && dirty)
		json_object_set_new(s, "dirty", json_true());
	return s;
}

static const char *state_commit(const json_t *state)
{
	return str_of(state, "commit");
}

/* --- identity and state -------------------------------------------------------- */

static int dolt_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	dolt_ep e;
	int rc;
	*out = NULL;
	if ((rc = endpoint(b, loc, &e, false, err)) != 0)
		return rc;
	*out = json_pack("{s:s, s:I, s:s}", "host", e.host, "port", (json_int_t)e.port, "database", e.database);
	ep_release(&e);
	return *out ? 0 : KOOM(err);
}

static int fingerprint_on(dconn *c, const json_t *loc, const char *working_ref, json_t **state,
			  tt_error *err)
{
	char *at = working_ref ? NULL : at_of(loc), *hash = NULL, *base = NULL;
	bool dirty = false;
	int rc = 0;
	*state = NULL;
	if (at) {
		if ((rc = resolve(c, at, &hash, err)) == 0 && !hash)
			rc = KERR(err, TT_EBACKEND, "cannot resolve dolt ref '%s' on %s", at, c->where);
	} else {
		if (!working_ref && (rc = base_branch_of(loc, &base, err)) != 0)
			return rc;
		const char *branch = working_ref ? working_ref : base;
		if ((rc = branch_head(c, branch, &hash, &dirty, err)) == 0 && !hash)
			rc = KERR(err, TT_EBACKEND, "dolt branch not found: %s (on %s)", branch, c->where);
	}
	if (rc == 0 && !(*state = commit_state(hash, dirty)))
		rc = KOOM(err);
	free(at);
	free(base);
	free(hash);
	return rc;
}

static int dolt_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref, json_t **state,
			  tt_error *err)
{
	dconn c;
	int rc;
	*state = NULL;
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		return rc;
	rc = fingerprint_on(&c, loc, working_ref, state, err);
	dc_close(&c);
	return rc;
}

/* --- pins ---------------------------------------------------------------------- */

static int dolt_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id, tt_pin *out,
		  tt_error *err)
{
	dconn c;
	char *have = NULL;
	const char *commit = state_commit(state);
	int rc;
	if (!pin_id || !*pin_id)
		return KERR(err, TT_EUSAGE, "pin needs an id");
	if (!commit)
		return KERR(err, TT_EBACKEND, "dolt state has no commit");
	if (json_is_true(json_object_get(state, "dirty")))
		return KERR(err, TT_EBACKEND,
			    "dolt branch has uncommitted changes; DOLT_COMMIT or DOLT_RESET first");
	if ((rc = tt_kit_fill_pin(out, KIND, pin_id, NULL, false, err)) != 0)
		return rc;
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		return rc;
	if ((rc = tag_hash(&c, out->ref, &have, err)) != 0)
		goto done;
	if (!have) {
		tt_db_value v[] = { TXT(out->ref), TXT(commit) };
		if ((rc = dc_query(&c, "CALL DOLT_TAG($1, $2)", v, 2, NULL, err)) != 0)
			goto done;
		out->created = true;
		if ((rc = tag_hash(&c, out->ref, &have, err)) != 0)
			goto done;
	}
	if (!have || strcmp(have, commit) != 0)
		rc = KERR(err, TT_EBACKEND, "tag %s already points at %s, not %s", out->ref,
			  have ? have : "nothing", commit);
done:
	free(have);
	dc_close(&c);
	return rc;
}

static int dolt_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err)
{
	dconn c;
	char *have = NULL;
	int rc;
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		return rc;
	if ((rc = tag_hash(&c, pin->ref, &have, err)) == 0 && have) {
		tt_db_value v[] = { TXT(pin->ref) };
		rc = dc_query(&c, "CALL DOLT_TAG('-d', $1)", v, 1, NULL, err);
	}
	free(have);
	dc_close(&c);
	return rc;
}

static int list_names(tt_backend *b, const json_t *loc, const char *sql, const char *prefix, bool strip,
		      json_t **out, tt_error *err)
{
	dconn c;
	tt_db_rows r = { 0 };
	int rc;
	*out = NULL;
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		return rc;
	if ((rc = dc_query(&c, sql, NULL, 0, &r, err)) == 0) {
		*out = json_array();
		for (size_t i = 0; *out && i < r.nrows; i++)
			if (tt_kit_keep_ref(*out, cell(&r, i, 0), prefix, NULL, strip) != 0) {
				json_decref(*out);
				*out = NULL;
			}
		if (!*out)
			rc = KOOM(err);
	}
	tt_db_rows_release(&r);
	dc_close(&c);
	return rc;
}

static int dolt_list_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err)
{
	return list_names(b, loc, "SELECT tag_name FROM dolt_tags ORDER BY tag_name", "tether.", true, ids, err);
}

static int dolt_list_working_refs(tt_backend *b, const json_t *loc, json_t **refs, tt_error *err)
{
	return list_names(b, loc, "SELECT name FROM dolt_branches ORDER BY name", TT_WORKING_REF_PREFIX, false,
			  refs, err);
}

static int dolt_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin, bool deep,
		     tt_verify_status *status, char **message, tt_error *err)
{
	dconn c;
	char *have = NULL;
	const char *commit = state_commit(state);
	int rc;
	*message = NULL;
	*status = TT_VERIFY_UNKNOWN;
	if (!commit)
		return KERR(err, TT_EBACKEND, "dolt state has no commit");
	if (!pin && !deep) {
		*message = tt_strdup("pass --deep to look up the commit");
		return *message ? 0 : KOOM(err);
	}
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		return rc;
	if (pin) {
		if ((rc = tag_hash(&c, pin->ref, &have, err)) != 0)
			goto done;
		if (!have) {
			*status = TT_VERIFY_MISSING;
			*message = tt_asprintf("tag %s missing", pin->ref);
		} else if (strcmp(have, commit) != 0) {
			*status = TT_VERIFY_DRIFTED;
			*message = tt_asprintf("%s -> %s, expected %s", pin->ref, have, commit);
		} else {
			*status = TT_VERIFY_OK;
			goto done;
		}
	} else {
		bool yes;
		if ((rc = commit_exists(&c, commit, &yes, err)) != 0)
			goto done;
		if (yes) {
			*status = TT_VERIFY_OK;
			goto done;
		}
		*status = TT_VERIFY_MISSING;
		*message = tt_asprintf("commit %s not found", commit);
	}
	if (!*message)
		rc = KOOM(err);
done:
	free(have);
	dc_close(&c);
	return rc;
}

/* --- forks --------------------------------------------------------------------- */

/* What a source names, as a Dolt ref (a tag, a hash, a branch) and the
 * commit it is at. */
static int source_of(dconn *c, const json_t *loc, const tt_target *src, char **ref, char **commit,
		     tt_error *err)
{
	int rc = 0;
	*ref = *commit = NULL;
	if (src->kind == TT_TARGET_PIN && src->pin) {
		if ((rc = tag_hash(c, src->pin->ref, commit, err)) != 0)
			return rc;
		if (!*commit)
			return KERR(err, TT_EBACKEND, "tag %s missing on %s; cannot use it (tether repair recreates it)",
				    src->pin->ref, c->where);
		*ref = tt_strdup(src->pin->ref);
	} else if (src->kind == TT_TARGET_STATE && src->state) {
		const char *h = state_commit(src->state);
		bool yes = false;
		if (!h)
			return KERR(err, TT_EBACKEND, "dolt state has no commit");
		if ((rc = commit_exists(c, h, &yes, err)) != 0)
			return rc;
		if (!yes)
			return KERR(err, TT_EBACKEND, "commit %s missing on %s", h, c->where);
		*ref = tt_strdup(h);
		*commit = tt_strdup(h);
	} else {
		char *name = NULL;
		if (src->kind == TT_TARGET_REF && src->ref && *src->ref)
			name = tt_strdup(src->ref);
		else if ((rc = base_branch_of(loc, &name, err)) != 0)
			return rc;
		if (!name)
			return KOOM(err);
		if ((rc = resolve(c, name, commit, err)) == 0 && !*commit)
			rc = KERR(err, TT_EBACKEND, "'%s' does not resolve on %s", name, c->where);
		*ref = name;
		if (rc)
			return rc;
	}
	return *ref && *commit ? 0 : KOOM(err);
}

static int dolt_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		   const tt_expect *expected, char **ref_out, tt_error *err)
{
	dconn c;
	char *ref = NULL, *target = NULL, *head = NULL;
	bool dirty = false;
	int rc;
	*ref_out = NULL;
	if (!name || !*name)
		return KERR(err, TT_EUSAGE, "fork needs a branch name");
	if ((rc = tt_check_expected(b, loc, name, expected, err)) != 0)
		return rc;
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		return rc;
	if ((rc = source_of(&c, loc, source, &ref, &target, err)) != 0 ||
	    (rc = branch_head(&c, name, &head, &dirty, err)) != 0)
		goto done;
	if (head && strcmp(head, target) == 0 && !dirty)
		goto made;
	if (head) {
		/* reset semantics: the branch is recreated at the source */
		tt_db_value v[] = { TXT(name) };
		if ((rc = dc_query(&c, "CALL DOLT_BRANCH('-D', $1)", v, 1, NULL, err)) != 0)
			goto done;
	}
	{
		tt_db_value v[] = { TXT(name), TXT(ref) };
		if ((rc = dc_query(&c, "CALL DOLT_BRANCH($1, $2)", v, 2, NULL, err)) != 0)
			goto done;
	}
made:
	if (!(*ref_out = tt_strdup(name)))
		rc = KOOM(err);
done:
	free(ref);
	free(target);
	free(head);
	dc_close(&c);
	return rc;
}

static int dolt_delete_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err)
{
	dconn c;
	char *base = NULL, *head = NULL;
	bool dirty;
	int rc;
	if ((rc = base_branch_of(loc, &base, err)) != 0)
		return rc;
	bool keep = strcmp(ref, base) == 0 || strcmp(ref, "main") == 0;
	free(base);
	if (keep)
		return 0;
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		return rc;
	if ((rc = branch_head(&c, ref, &head, &dirty, err)) == 0 && head) {
		tt_db_value v[] = { TXT(ref) };
		rc = dc_query(&c, "CALL DOLT_BRANCH('-D', $1)", v, 1, NULL, err);
	}
	free(head);
	dc_close(&c);
	return rc;
}

/* --- promote and merge ------------------------------------------------------------- */

static int in_log(dconn *c, const char *from, const char *want, int *answer, tt_error *err)
{
	tt_db_rows r = { 0 };
	tt_db_value v[] = { TXT(from), { TT_DB_INT, NULL, LOG_LIMIT } };
	int rc;
	*answer = -1;
	if ((rc = dc_query(c, "SELECT commit_hash FROM DOLT_LOG($1) LIMIT $2", v, 2, &r, err)) != 0)
		return rc;
	*answer = r.nrows < LOG_LIMIT ? 0 : -1;
	for (size_t i = 0; i < r.nrows; i++)
		if (cell(&r, i, 0) && strcmp(cell(&r, i, 0), want) == 0)
			*answer = 1;
	tt_db_rows_release(&r);
	return 0;
}

static int dolt_ancestor_of(tt_backend *b, const json_t *loc, const json_t *ancestor,
			  const tt_target *descendant, int *answer, tt_error *err)
{
	dconn c;
	char *ref = NULL, *commit = NULL;
	const char *want = state_commit(ancestor);
	int rc;
	*answer = -1;
	if (!want)
		return KERR(err, TT_EBACKEND, "dolt state has no commit");
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		return rc;
	if ((rc = source_of(&c, loc, descendant, &ref, &commit, err)) == 0)
		rc = in_log(&c, commit, want, answer, err);
	free(ref);
	free(commit);
	dc_close(&c);
	return rc;
}

/* What a lost race says: the base moved between the head this promote read
 * and its own move, so nothing of it landed.  TT_EREFMOVED: promote reports
 * it as refused, and running it again plans against the new head. */
static int moved_while_promoting(dconn *c, const char *base, const char *saw, const char *now,
				 tt_error *err)
{
	if (now && saw)
		return KERR(err, TT_EREFMOVED,
			    "%s moved while promoting; rerun `tether promote` (%s on %s went from %.12s to "
			    "%.12s under another writer; nothing was merged)",
			    base, base, c->where, saw, now);
	return KERR(err, TT_EREFMOVED,
		    "%s moved while promoting; rerun `tether promote` (%s on %s is no longer where this "
		    "promote found it; nothing was merged)", base, base, c->where);
}

static int base_dirty(dconn *c, const char *base, tt_error *err)
{
	KERR(err, TT_EBACKEND,
	     "%s on %s has uncommitted changes: promote moves only a clean branch, by fast-forward or merge",
	     base, c->where);
	tt_error_hint(err, "commit them on %s (CALL DOLT_COMMIT('-Am', '...')) or discard them "
		      "(CALL DOLT_RESET('--hard')), then rerun `tether promote`", base);
	return TT_EBACKEND;
}

/* How long a base that reads dirty is watched before its changes are taken
 * for uncommitted ones (base_ready): about two seconds, in steps doubling
 * from 10 ms. */
#define SETTLE_STEPS 8

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* The base head promote and merge read before they move it: it must be the
 * head the plan reviewed (else another writer moved it: a lost race), with
 * a clean working set (agreeing with git, which merges into a clean
 * checkout only).  Dolt moves a branch before it rewrites the branch's
 * working set, so a branch another session is moving reads dirty, at its
 * new head, until that session's transaction ends -- and a plan made in
 * that instant reviewed that head.  So a dirty read is read again for a
 * moment: the head moving on is a lost race, turning clean is the other
 * move finished, and only a branch dirty at one head all along has
 * uncommitted changes.  *head: the head read last, which the move is
 * conditional on. */
static int base_ready(dconn *c, const char *base, const tt_expect *expected, char **head, tt_error *err)
{
	bool dirty = false;
	int rc = 0;
	const char *want = expected && expected->kind == TT_EXPECT_STATE ? state_commit(expected->state) : NULL;
	char *first = NULL; /* without a reviewed head: the one read first */
	*head = NULL;
	for (int step = 0;; step++) {
		free(*head);
		*head = NULL;
		if ((rc = branch_head(c, base, head, &dirty, err)) != 0)
			break;
		if (!*head) {
			rc = KERR(err, TT_EBACKEND, "dolt branch not found: %s (on %s)", base, c->where);
			break;
		}
		if (want && strcmp(want, *head) != 0) {
			rc = moved_while_promoting(c, base, want, *head, err);
			break;
		}
		if (!dirty)
			break;
		if (step == SETTLE_STEPS) {
			rc = base_dirty(c, base, err);
			break;
		}
		if (!want && !(want = first = tt_strdup(*head))) {
			rc = KOOM(err);
			break;
		}
		pause_ms(10L << step);
	}
	free(first);
	return rc;
}

/* After a move failed (DOLT_MERGE refused, or the COMMIT after it): the
 * base head read again, to tell a lost race (it moved since *saw*: the
 * refusal is Dolt's view of the other writer's move, whatever its words)
 * from a refusal of this move.  The read only words the error; no result
 * is ever taken from it. */
static int move_failed(dconn *c, const char *base, const char *saw, tt_error *err)
{
	char *now = NULL;
	bool dirty = false;
	tt_error e = TT_ERROR_INIT;
	int rc = err ? err->code : TT_EBACKEND;
	if (branch_head(c, base, &now, &dirty, &e) == 0 && (!now || strcmp(now, saw) != 0)) {
		tt_error_clear(err);
		rc = moved_while_promoting(c, base, saw, now, err);
	} else if (mentions(err, "stomped") || mentions(err, "uncommitted changes")) {
		tt_error_clear(err);
		rc = base_dirty(c, base, err);
	}
	tt_error_clear(&e);
	free(now);
	return rc;
}

/* The tables a conflicted merge names: dolt_conflicts' and, apart,
 * dolt_constraint_violations' (each with its violation types, from the
 * table's own dolt_constraint_violations_<table>, where Dolt has one). */
static void conflicted_tables(dconn *c, json_t *conflicted, json_t *violated)
{
	static const char *const q[] = { "SELECT `table` FROM dolt_conflicts",
					 "SELECT `table` FROM dolt_constraint_violations" };
	for (size_t i = 0; i < 2; i++) {
		json_t *into = i ? violated : conflicted;
		tt_db_rows r = { 0 };
		tt_error e = TT_ERROR_INIT;
		if (tt_db_query(c->db, q[i], NULL, 0, &r, &e) == 0)
			for (size_t j = 0; j < r.nrows; j++) {
				const char *t = cell(&r, j, 0);
				if (t && !json_object_get(into, t))
					json_object_set_new(into, t, json_array());
			}
		tt_db_rows_release(&r);
		tt_error_clear(&e);
	}
	const char *t;
	json_t *types;
	json_object_foreach(violated, t, types) {
		tt_buf sql = TT_BUF_INIT;
		tt_db_rows r = { 0 };
		tt_error e = TT_ERROR_INIT;
		char *name = tt_asprintf("dolt_constraint_violations_%s", t);
		tt_buf_puts(&sql, "SELECT DISTINCT violation_type FROM ");
		if (name)
			quote_ident(&sql, name);
		if (name && !sql.failed && tt_db_query(c->db, sql.ptr, NULL, 0, &r, &e) == 0)
			for (size_t j = 0; j < r.nrows; j++)
				if (cell(&r, j, 0) && *cell(&r, j, 0))
					json_array_append_new(types, json_string(cell(&r, j, 0)));
		free(name);
		tt_buf_release(&sql);
		tt_db_rows_release(&r);
		tt_error_clear(&e);
	}
}

/* "conflicts in 2 table(s): a, b; constraint violation in t (unique index)" */
static void describe_conflicts(tt_buf *out, const json_t *conflicted, const json_t *violated)
{
	const char *t;
	json_t *v;
	size_t k = 0;
	if (json_object_size(conflicted))
		tt_buf_printf(out, "conflicts in %zu table(s): ", json_object_size(conflicted));
	json_object_foreach((json_t *)conflicted, t, v)
		tt_buf_printf(out, "%s%s", k++ ? ", " : "", t);
	k = 0;
	json_object_foreach((json_t *)violated, t, v) {
		tt_buf_printf(out, "%sconstraint violation in %s", out->len ? "; " : "", t);
		for (size_t i = 0; i < json_array_size(v); i++)
			tt_buf_printf(out, "%s%s", i ? ", " : " (", json_string_value(json_array_get(v, i)));
		if (json_array_size(v))
			tt_buf_putc(out, ')');
		k++;
	}
	if (!out->len)
		tt_buf_puts(out, "conflicts");
}

/* The merge on one session (DOLT_CHECKOUT picks the branch it merges into),
 * inside an explicit transaction: only there does Dolt report what
 * conflicts instead of rolling back and raising.  *made: the commit this
 * merge made, as DOLT_MERGE returned it (the target of a fast-forward, the
 * new merge commit) -- never the branch head read afterwards, which
 * another writer may already have moved on.  saw: the head base_ready read. */
static int run_merge(dconn *c, const char *base, const char *src, const char *saw, const char *message,
		     bool ff_only, char **made, json_t **conflicts, tt_error *err)
{
	tt_db_rows r = { 0 };
	int rc;
	*made = NULL;
	*conflicts = NULL;
	tt_db_value co[] = { TXT(base) };
	if ((rc = dc_query(c, "CALL DOLT_CHECKOUT($1)", co, 1, NULL, err)) != 0)
		return rc;
	if ((rc = tt_db_begin(c->db, false, err)) != 0)
		return dc_fail(c, TT_EBACKEND, err);
	if (ff_only) {
		tt_db_value v[] = { TXT(src) };
		tt_error e = TT_ERROR_INIT;
		rc = tt_db_query(c->db, "CALL DOLT_MERGE('--ff-only', $1)", v, 1, &r, &e);
		if (rc && (mentions(&e, "ff-only") || mentions(&e, "unknown option"))) {
			/* Dolt < 1.79.2: no --ff-only.  Ancestry by DOLT_MERGE_BASE
			 * (of the head base_ready read), then a plain merge, which
			 * fast-forwards. */
			char *mb = NULL;
			tt_error_clear(&e);
			tt_db_rollback(c->db);
			tt_db_value m[] = { TXT(base), TXT(src) };
			if ((rc = one_text(c, "SELECT DOLT_MERGE_BASE($1, $2)", m, 2, &mb, err)) == 0 &&
			    (!mb || strcmp(mb, saw) != 0))
				rc = KERR(err, TT_EBACKEND, "%s on %s is not an ancestor of %s; merge instead", base,
					  c->where, src);
			free(mb);
			if (rc)
				return rc;
			if ((rc = tt_db_begin(c->db, false, err)) != 0)
				return dc_fail(c, TT_EBACKEND, err);
			rc = dc_query(c, "CALL DOLT_MERGE($1)", v, 1, &r, err);
		} else if (rc) {
			tt_error_move(err, &e);
			if (err)
				err->code = TT_EBACKEND;
			rc = dc_fail(c, TT_EBACKEND, err);
		}
	} else {
		tt_db_value v[] = { TXT(src), TXT(message ? message : "tether merge") };
		rc = dc_query(c, "CALL DOLT_MERGE($1, '-m', $2)", v, 2, &r, err);
	}
	if (rc) {
		tt_db_rollback(c->db);
		return move_failed(c, base, saw, err);
	}
	bool conflicted = truthy(r.nrows ? cell_named(&r, 0, "conflicts") : NULL);
	const char *hash = r.nrows ? cell_named(&r, 0, "hash") : NULL;
	if (!conflicted) {
		bool named = hash && *hash;
		char *h = named ? tt_strdup(hash) : NULL;
		tt_db_rows_release(&r);
		if (named && !h)
			return KOOM(err);
		if (tt_db_commit(c->db, err)) {
			free(h);
			dc_fail(c, TT_EBACKEND, err);
			return move_failed(c, base, saw, err);
		}
		if (!h) {
			/* "Up to date": nothing was made.  The base already held the
			 * source when it was read (it stays there), or it moved onto
			 * it since: a lost race. */
			char *now = NULL;
			bool dirty = false;
			if ((rc = branch_head(c, base, &now, &dirty, err)) == 0 && (!now || strcmp(now, saw) != 0))
				rc = moved_while_promoting(c, base, saw, now, err);
			free(now);
			if (rc == 0 && !(h = tt_strdup(saw)))
				rc = KOOM(err);
			if (rc)
				return rc;
		}
		*made = h;
		return 0;
	}
	tt_db_rows_release(&r);
	json_t *conflicted_t = json_object(), *violated = json_object();
	if (conflicted_t && violated)
		conflicted_tables(c, conflicted_t, violated);
	tt_error ignored = TT_ERROR_INIT;
	tt_db_query(c->db, "CALL DOLT_MERGE('--abort')", NULL, 0, &r, &ignored);
	tt_db_rows_release(&r);
	tt_error_clear(&ignored);
	tt_db_rollback(c->db);
	json_t *tables = json_array();
	if (!conflicted_t || !violated || !tables) {
		json_decref(conflicted_t);
		json_decref(violated);
		json_decref(tables);
		return KOOM(err);
	}
	const char *t;
	json_t *v;
	json_object_foreach(conflicted_t, t, v)
		json_array_append_new(tables, json_string(t));
	json_object_foreach(violated, t, v)
		if (!json_object_get(conflicted_t, t))
			json_array_append_new(tables, json_string(t));
	tt_buf what = TT_BUF_INIT;
	describe_conflicts(&what, conflicted_t, violated);
	rc = KERR(err, TT_ECONFLICT, "merging %s into %s: %s; nothing was merged", src, base,
		  what.failed ? "conflicts" : what.ptr);
	tt_buf_release(&what);
	json_decref(conflicted_t);
	json_decref(violated);
	*conflicts = tables;
	return rc;
}

static int source_name(const tt_target *src, const json_t *loc, char **out, tt_error *err)
{
	if (src->kind == TT_TARGET_PIN && src->pin)
		*out = tt_strdup(src->pin->ref);
	else if (src->kind == TT_TARGET_STATE && src->state && state_commit(src->state))
		*out = tt_strdup(state_commit(src->state));
	else if (src->kind == TT_TARGET_REF && src->ref && *src->ref)
		*out = tt_strdup(src->ref);
	else
		return base_branch_of(loc, out, err);
	return *out ? 0 : KOOM(err);
}

/* Whether the base could fast-forward (merge false) or merge onto the
 * source now, moving nothing: the questions dolt_promote and dolt_merge ask
 * first, so that one object that cannot move holds the whole bookmark. */
static int dolt_check_move(tt_backend *b, const json_t *loc, const tt_target *source, const tt_expect *expected,
			 bool merge, tt_error *err)
{
	dconn c;
	char *base = NULL, *src = NULL, *head = NULL, *target = NULL;
	int rc, anc;
	if ((rc = base_branch_of(loc, &base, err)) != 0 || (rc = source_name(source, loc, &src, err)) != 0)
		goto out;
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		goto out;
	if ((rc = base_ready(&c, base, expected, &head, err)) != 0 || (rc = resolve(&c, src, &target, err)) != 0)
		goto done;
	if (!target)
		rc = KERR(err, TT_EBACKEND, "'%s' does not resolve on %s", src, c.where);
	else if (!merge && strcmp(target, head) != 0 && (rc = in_log(&c, src, head, &anc, err)) == 0 && anc != 1)
		rc = KERR(err, TT_EBACKEND, "%s moved to %.12s, which is not an ancestor of %.12s; merge instead",
			  base, head, target);
done:
	dc_close(&c);
out:
	free(base);
	free(src);
	free(head);
	free(target);
	return rc;
}

static int dolt_promote(tt_backend *b, const json_t *loc, const tt_target *source, const tt_expect *expected,
		      json_t **new_state, tt_error *err)
{
	dconn c;
	char *base = NULL, *src = NULL, *head = NULL, *target = NULL, *made = NULL;
	json_t *conflicts = NULL;
	int rc, anc;
	*new_state = NULL;
	if ((rc = base_branch_of(loc, &base, err)) != 0 || (rc = source_name(source, loc, &src, err)) != 0)
		goto out;
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		goto out;
	if ((rc = base_ready(&c, base, expected, &head, err)) != 0 || (rc = resolve(&c, src, &target, err)) != 0)
		goto done;
	if (!target) {
		rc = KERR(err, TT_EBACKEND, "'%s' does not resolve on %s", src, c.where);
		goto done;
	}
	if (strcmp(target, head) != 0) {
		if ((rc = in_log(&c, src, head, &anc, err)) != 0)
			goto done;
		if (anc != 1) {
			rc = KERR(err, TT_EBACKEND,
				  "%s moved to %.12s, which is not an ancestor of %.12s; merge instead", base, head,
				  target);
			goto done;
		}
		if ((rc = run_merge(&c, base, src, head, NULL, true, &made, &conflicts, err)) != 0)
			goto done;
	}
	/* The base is where this promote put it (or found it): the target. */
	if (!(*new_state = commit_state(made ? made : target, false)))
		rc = KOOM(err);
done:
	dc_close(&c);
out:
	json_decref(conflicts);
	free(base);
	free(src);
	free(head);
	free(target);
	free(made);
	return rc;
}

static int dolt_merge(tt_backend *b, const json_t *loc, const tt_target *source, const char *message,
		    const tt_expect *expected, json_t **new_state, json_t **conflicts, tt_error *err)
{
	dconn c;
	char *base = NULL, *src = NULL, *head = NULL, *made = NULL;
	json_t *cf = NULL;
	int rc;
	*new_state = NULL;
	if (conflicts)
		*conflicts = NULL;
	if ((rc = base_branch_of(loc, &base, err)) != 0 || (rc = source_name(source, loc, &src, err)) != 0)
		goto out;
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		goto out;
	if ((rc = base_ready(&c, base, expected, &head, err)) == 0 &&
	    (rc = run_merge(&c, base, src, head, message, false, &made, &cf, err)) == 0 &&
	    !(*new_state = commit_state(made, false)))
		rc = KOOM(err);
	dc_close(&c);
out:
	if (conflicts && cf) {
		*conflicts = cf;
		cf = NULL;
	}
	json_decref(cf);
	free(base);
	free(src);
	free(head);
	free(made);
	return rc;
}

/* --- open ----------------------------------------------------------------------- */

static char *rev_url(const dolt_ep *e, const char *ref, bool with_password)
{
	tt_buf u = TT_BUF_INIT;
	tt_buf_puts(&u, "mysql://");
	if (e->user || (with_password && e->password)) {
		pct(&u, e->user ? e->user : "root");
		if (with_password && e->password) {
			tt_buf_putc(&u, ':');
			pct(&u, e->password);
		}
		tt_buf_putc(&u, '@');
	}
	tt_buf_printf(&u, "%s:%ld/%s/%s", e->host, e->port, e->database, ref);
	if (u.failed) {
		tt_buf_release(&u);
		return NULL;
	}
	return tt_buf_detach(&u);
}

static int dolt_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only, json_t **handle,
		   tt_error *err)
{
	dconn c;
	char *ref = NULL, *commit = NULL, *at = NULL, *url = NULL, *full = NULL, *dbref = NULL;
	bool ro = read_only, connected = false;
	int rc = 0;
	*handle = NULL;
	if (target->kind == TT_TARGET_PIN && target->pin) {
		if ((rc = dc_open(b, loc, &c, err)) != 0)
			return rc;
		connected = true;
		if ((rc = tag_hash(&c, target->pin->ref, &commit, err)) == 0 && !commit)
			rc = KERR(err, TT_EBACKEND, "tag %s missing on %s (tether repair recreates it)",
				  target->pin->ref, c.where);
		ref = tt_strdup(target->pin->ref);
		ro = true;
	} else if (target->kind == TT_TARGET_STATE && target->state) {
		const char *h = state_commit(target->state);
		if (!h)
			return KERR(err, TT_EBACKEND, "dolt state has no commit");
		ref = tt_strdup(h);
		commit = tt_strdup(h);
		ro = true;
	} else if (target->kind == TT_TARGET_BASE && read_only && (at = at_of(loc)) != NULL) {
		if ((rc = dc_open(b, loc, &c, err)) != 0) {
			free(at);
			return rc;
		}
		connected = true;
		rc = resolve(&c, at, &commit, err);
		ref = at;
		at = NULL;
		ro = true;
	} else if (target->kind == TT_TARGET_REF && target->ref && *target->ref) {
		ref = tt_strdup(target->ref);
	} else {
		rc = base_branch_of(loc, &ref, err);
	}
	if (rc)
		goto done;
	if (!connected) {
		if ((rc = endpoint(b, loc, &c.ep, true, err)) != 0)
			goto done;
		c.db = NULL;
		c.where = NULL;
		connected = true;
	}
	if (!ref || !(url = rev_url(&c.ep, ref, false)) ||
	    !(dbref = tt_asprintf("%s/%s", c.ep.database, ref))) {
		rc = KOOM(err);
		goto done;
	}
	*handle = json_pack("{s:s, s:s, s:b, s:s, s:s, s:s, s:s}", "type", KIND, "address", url, "read_only", ro,
			    "url", url, "database", c.ep.database, "ref", ref, "database_ref", dbref);
	if (*handle) {
		json_object_set_new(*handle, "commit", commit ? json_string(commit) : json_null());
		if (!ro)
			json_object_set_new(*handle, "branch", json_string(ref));
		if (c.ep.password && (full = rev_url(&c.ep, ref, true)))
			json_object_set_new(*handle, "url_with_password", json_string(full));
	} else {
		rc = KOOM(err);
	}
done:
	if (full) {
		memset(full, 0, strlen(full));
		free(full);
	}
	if (connected)
		dc_close(&c);
	free(ref);
	free(commit);
	free(at);
	free(url);
	free(dbref);
	return rc;
}

/* --- history and diff ------------------------------------------------------------ */

/* "2026-01-02 03:04:05[.ffffff]" (UTC, as Dolt stores it) -> ISO 8601. */
static char *iso_utc(const char *v)
{
	if (!v || strlen(v) < 19)
		return v ? tt_strdup(v) : NULL;
	char out[40];
	snprintf(out, sizeof out, "%.10sT%.8s+00:00", v, v + 11);
	return tt_strdup(out);
}

static int dolt_history(tt_backend *b, const json_t *loc, const char *ref, size_t limit, tt_history_entry **out,
		      size_t *n, tt_error *err)
{
	dconn c;
	char *start = NULL, *head = NULL;
	tt_db_rows tags = { 0 }, log = { 0 };
	tt_history_entry *e = NULL;
	bool dirty;
	int rc;
	*out = NULL;
	*n = 0;
	if (ref && *ref)
		start = tt_strdup(ref);
	else if (!(start = at_of(loc)) && (rc = base_branch_of(loc, &start, err)) != 0)
		return rc;
	if (!start)
		return KOOM(err);
	if ((rc = dc_open(b, loc, &c, err)) != 0) {
		free(start);
		return rc;
	}
	tt_db_value v[] = { TXT(start), { TT_DB_INT, NULL, (long long)limit } };
	if ((rc = dc_query(&c, "SELECT tag_name, tag_hash FROM dolt_tags ORDER BY tag_name", NULL, 0, &tags, err)) ||
	    (rc = branch_head(&c, start, &head, &dirty, err)) ||
	    (rc = dc_query(&c, "SELECT commit_hash, committer, date, message FROM DOLT_LOG($1) LIMIT $2", v, 2, &log,
			   err)))
		goto done;
	if (log.nrows && !(e = tt_calloc(log.nrows, sizeof *e))) {
		rc = KOOM(err);
		goto done;
	}
	for (size_t i = 0; i < log.nrows; i++) {
		const char *id = cell(&log, i, 0);
		e[i].id = tt_strdup(id ? id : "");
		e[i].when = cell(&log, i, 2) ? iso_utc(cell(&log, i, 2)) : NULL;
		e[i].message = tt_strdup(cell(&log, i, 3) ? cell(&log, i, 3) : "");
		e[i].refs = json_array();
		*n = i + 1;
		if (!e[i].id || !e[i].message || !e[i].refs || (cell(&log, i, 2) && !e[i].when)) {
			rc = KOOM(err);
			goto done;
		}
		if (head && id && strcmp(head, id) == 0)
			json_array_append_new(e[i].refs, json_string(start));
		for (size_t t = 0; id && t < tags.nrows; t++)
			if (cell(&tags, t, 1) && strcmp(cell(&tags, t, 1), id) == 0 && cell(&tags, t, 0))
				json_array_append_new(e[i].refs, json_string(cell(&tags, t, 0)));
	}
done:
	if (rc) {
		tt_history_release(e, *n);
		*n = 0;
	} else {
		*out = e;
	}
	tt_db_rows_release(&tags);
	tt_db_rows_release(&log);
	free(start);
	free(head);
	dc_close(&c);
	return rc;
}

static bool nonzero(const char *v)
{
	return v && *v && strcmp(v, "0") != 0;
}

static int dolt_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate, const char *la,
		   const char *lb, tt_object_diff *out, tt_error *err)
{
	dconn c;
	tt_db_rows stat = { 0 }, sum = { 0 };
	const char *ca = state_commit(a), *cb = state_commit(bstate);
	int rc;
	(void)la;
	(void)lb;
	tt_object_diff_init(out, "tables");
	if (!ca || !cb)
		return KERR(err, TT_EBACKEND, "dolt state has no commit");
	if (strcmp(ca, cb) == 0) {
		bool da = json_is_true(json_object_get(a, "dirty")), db = json_is_true(json_object_get(bstate, "dirty"));
		if (da != db && !(out->note = tt_asprintf("dirty %s -> %s", da ? "True" : "None", db ? "True" : "None")))
			return KOOM(err);
		return 0;
	}
	if ((rc = dc_open(b, loc, &c, err)) != 0)
		return rc;
	tt_db_value v[] = { TXT(ca), TXT(cb) };
	if ((rc = dc_query(&c, "SELECT * FROM dolt_diff_stat($1, $2)", v, 2, &stat, err)) ||
	    (rc = dc_query(&c, "SELECT * FROM dolt_diff_summary($1, $2)", v, 2, &sum, err)))
		goto done;
	for (size_t i = 0; rc == 0 && i < sum.nrows; i++) {
		const char *t = cell_named(&sum, i, "table_name");
		if (!t || !*t)
			t = cell_named(&sum, i, "to_table_name");
		if (!t || !*t)
			t = cell_named(&sum, i, "from_table_name");
		if (!t || !*t)
			t = "?";
		const char *dt = cell_named(&sum, i, "diff_type");
		const char *change = !dt ? "modified"
				   : strcmp(dt, "added") == 0   ? "added"
				   : strcmp(dt, "dropped") == 0 ? "removed"
				   : strcmp(dt, "renamed") == 0 ? "renamed"
								: "modified";
		const char *from = cell_named(&sum, i, "from_table_name"), *to = cell_named(&sum, i, "to_table_name");
		char *path = strcmp(change, "renamed") == 0
				     ? tt_asprintf("%s -> %s", from ? from : "?", to ? to : "?")
				     : tt_strdup(t);
		tt_buf d = TT_BUF_INIT;
		size_t parts = 0;
		for (size_t s = 0; path && s < stat.nrows; s++) {
			const char *st = cell_named(&stat, s, "table_name");
			if (!st || strcmp(st, path) != 0)
				continue;
			static const struct { const char *col, *sign; } cols[] = {
				{ "rows_added", "+" }, { "rows_deleted", "-" }, { "rows_modified", "~" } };
			for (size_t k = 0; k < 3; k++) {
				const char *val = cell_named(&stat, s, cols[k].col);
				if (nonzero(val))
					tt_buf_printf(&d, "%s%s%s rows", parts++ ? ", " : "", cols[k].sign, val);
			}
			break;
		}
		if (truthy(cell_named(&sum, i, "schema_change")))
			tt_buf_printf(&d, "%sschema changed", parts++ ? ", " : "");
		if (!path || d.failed)
			rc = KOOM(err);
		else
			rc = tt_object_diff_add(out, path, change, parts ? d.ptr : "", err);
		tt_buf_release(&d);
		free(path);
	}
done:
	tt_db_rows_release(&stat);
	tt_db_rows_release(&sum);
	dc_close(&c);
	return rc;
}

/* --- refinements ----------------------------------------------------------------- */

static int dolt_base_branch(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	(void)b;
	return base_branch_of(loc, out, err);
}

static int dolt_check_locator(tt_backend *b, const json_t *loc, tt_error *err)
{
	dolt_ep e;
	int rc = endpoint(b, loc, &e, false, err);
	if (rc == 0)
		ep_release(&e);
	return rc;
}

static void dolt_free(tt_backend *b)
{
	(void)b;
}

static const tt_backend_ops dolt_ops = {
	.abi = TT_BACKEND_ABI,
	.identity = dolt_identity,
	.fingerprint = dolt_fingerprint,
	.pin = dolt_pin,
	.unpin = dolt_unpin,
	.list_pins = dolt_list_pins,
	.verify = dolt_verify,
	.fork = dolt_fork,
	.delete_working_ref = dolt_delete_working_ref,
	.list_working_refs = dolt_list_working_refs,
	.working_ref_blockers = tt_kit_no_blockers,
	.open = dolt_open,
	.promote = dolt_promote,
	.merge = dolt_merge,
	.check_move = dolt_check_move,
	.ancestor_of = dolt_ancestor_of,
	.diff = dolt_diff,
	.history = dolt_history,
	.base_branch = dolt_base_branch,
	.check_locator = dolt_check_locator,
	.free = dolt_free,
};

int tt_dolt_backend_new(tt_backend *b, tt_error *err)
{
	(void)err;
	b->ops = &dolt_ops;
	b->impl = NULL;
	return 0;
}
