/*
 * backends/neon/neon.c - Neon serverless Postgres branches (Forkable,
 * experimental; NEEDS_QUIESCENCE, RETENTION_BOUND, BRANCH_IS_STORAGE).
 *
 * Two channels: Neon's control-plane API v2 (net/http.c) for branches,
 * endpoints, connection URIs and operations, and SQL over libpq (db/) for
 * the state of a branch.  Tested against a fake of the API built from
 * Neon's published OpenAPI spec, with real PostgreSQL behind it.
 *
 * Locator {project_id, database, role[, branch = "main"]}; identity
 * {project_id, branch}: a branch at an LSN holds every database of the
 * project, so two objects on two databases share one pin per commit, and
 * (branch scope "neon:<project>") one working branch per bookmark.
 *
 * State {lsn, commit_xid, branch[, timeline]}, read by the same probe as
 * tether-vcs: lsn = pg_current_wal_flush_lsn(), commit_xid = the newest
 * committed xid within the 65536 ids below nextXid ("<nextXid" when none),
 * branch = the lineage (the locator's branch when the branch read descends
 * from it), timeline = the branch read when it is not the lineage.  lsn
 * and timeline are volatile.
 *
 * Pin: branch tether.<id> off the timeline at the LSN, no endpoint,
 * protected only under protected_pins.  Fork: a branch off the pin; an
 * existing working branch is restored onto the source, unless a pin hangs
 * off it - then the fork lands on the sibling <name>.2, .3, ...  A branch
 * read or written gets one read_write endpoint; pins and time-travel reads
 * a read_only one.  `upgrade` renames pins and working branches in place
 * (rename_ref: PATCH the branch's name), keeping what hangs off them.
 *
 * Configuration only from .tether/secrets.toml [backends.neon]:
 * api_key_env (default NEON_API_KEY), api_url (default Neon's API v2),
 * protected_pins (default false), timeout_s (per request, default 30).
 * The API key travels only in the Authorization header: never in a
 * message, a state, the journal or a trace.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "backends/kit.h"
#include "core/ids.h"
#include "db/db.h"
#include "net/http.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/mem.h"

#define KIND "neon"
#define DEFAULT_API "https://console.neon.tech/api/v2"
#define PIN_PREFIX "tether."
#define RETRIES 7
#define OP_WAIT_MS (300 * 1000)


#define PROMOTE_HINT                                                                              \
	"Neon cannot promote a child branch into its parent; work on the trunk bookmark for "      \
	"databases that must receive writes on main, or copy the data with pg_dump/psql"

/* The probe tether-vcs runs, word for word in effect: the flush LSN, the
 * newest committed xid in the window below nextXid, and nextXid. */
static const char PROBE_SQL[] =
	"SELECT pg_current_wal_flush_lsn()::text, "
	"(SELECT max(x) FROM generate_series(greatest(n - 65536, 3), n - 1) x "
	"WHERE pg_xact_status(x::text::xid8) = 'committed')::text, n::text "
	"FROM (SELECT pg_snapshot_xmax(pg_current_snapshot())::text::bigint AS n) s";

static const char WRITERS_SQL[] =
	"SELECT count(*) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() "
	"AND backend_type = 'client backend'";

typedef struct neon_impl {
	pthread_mutex_t lock;   /* guards the client's creation */
	pthread_mutex_t ep_lock; /* one endpoint creation at a time */
	tt_http_client *http;
	char *base;             /* API base URL, no trailing slash */
	char *auth;             /* "Authorization: Bearer <key>" */
} neon_impl;

/* --- small helpers --------------------------------------------------------------- */

static const char *str_of(const json_t *o, const char *key)
{
	const json_t *v = json_object_get(o, key);
	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
	}
}

static int project_of(const json_t *loc, const char **out, tt_error *err)
{
	*out = str_of(loc, "project_id");
	return *out ? 0 : KERR(err, TT_ECONFIG, "neon locator needs 'project_id' (`--project-id`)");
}

static const char *source_branch(const json_t *loc)
{
	const char *b = str_of(loc, "branch");
	return b ? b : "main";
}

/* Append s percent-encoded for a query value. */
static void q_enc(tt_buf *b, const char *s)
{
	tt_http_uri_encode(b, s, strlen(s), false);
}

/* url with its password replaced by "***" (caller frees). */
static char *redact(const char *url)
{
	const char *scheme = strstr(url, "://");
	if (!scheme)
		return tt_strdup(url);
	const char *auth = scheme + 3;
	const char *at = strchr(auth, '@');
	const char *slash = strchr(auth, '/');
	if (!at || (slash && slash < at))
		return tt_strdup(url);
	const char *colon = memchr(auth, ':', (size_t)(at - auth));
	if (!colon)
		return tt_strdup(url);
	return tt_asprintf("%.*s:***%s", (int)(colon - url), url, at);
}

/* --- the API client ------------------------------------------------------------- */

static int client(tt_backend *b, neon_impl **out, tt_error *err)
{
	neon_impl *n = b->impl;
	int rc = 0;
	pthread_mutex_lock(&n->lock);
	if (!n->http) {
		const char *env = str_of(b->config, "api_key_env");
		const char *url = str_of(b->config, "api_url");
		if (!env)
			env = "NEON_API_KEY";
		if (!url)
			url = DEFAULT_API;
		const char *key = getenv(env);
		long timeout_s = 30;
		const json_t *t = json_object_get(b->config, "timeout_s");
		if (json_is_integer(t) && json_integer_value(t) > 0)
			timeout_s = (long)json_integer_value(t);
		else if (json_is_real(t) && json_real_value(t) > 0)
			timeout_s = (long)(json_real_value(t) + 0.999);
		if (!key || !*key) {
			rc = KERR(err, TT_ECONFIG, "Neon API key not found in $%s", env);
			tt_error_hint(err, "export the key, or name its variable with api_key_env under "
					   "[backends.neon] in .tether/secrets.toml");
			goto done;
		}
		bool loopback = strncmp(url, "http://127.0.0.1", 16) == 0 ||
				strncmp(url, "http://localhost", 16) == 0 || strncmp(url, "http://[::1]", 12) == 0;
		tt_http_opts o = { .read_timeout_ms = timeout_s * 1000, .total_timeout_ms = timeout_s * 1000,
				   .allow_http = loopback,
				   .max_body = 16u << 20 };
		n->base = tt_strdup(url);
		n->auth = tt_asprintf("Authorization: Bearer %s", key);
		if (!n->base || !n->auth) {
			rc = KOOM(err);
			goto done;
		}
		size_t len = strlen(n->base);
		while (len && n->base[len - 1] == '/')
			n->base[--len] = '\0';
		if ((rc = tt_http_client_new(&o, &n->http, err)) != 0) {
			tt_error_object(err, NULL, KIND);
			goto done;
		}
	}
done:
	pthread_mutex_unlock(&n->lock);
	*out = n;
	return rc;
}

static int poll_operations(tt_backend *b, const char *pid, const json_t *resp, tt_error *err);

/* One API call.  path is under the base ("/projects/..."), query appended
 * as given; body NULL for none.  423/429/503 (Neon applied nothing) are
 * retried with backoff, honouring Retry-After.  *status: the answer's
 * status; a 404 is returned to the caller when allow_404 (with *out NULL),
 * any other error status fails naming the request and Neon's message.
 * The operations a mutation starts are polled to completion when pid is
 * given. */
static int api(tt_backend *b, const char *method, const char *path, const char *query,
	       const json_t *body, bool allow_404, const char *pid, json_t **out, long *status,
	       tt_error *err)
{
	neon_impl *n;
	char *url = NULL, *text = NULL;
	tt_http_response resp;
	int rc;
	*out = NULL;
	if (status)
		*status = 0;
	if ((rc = client(b, &n, err)) != 0)
		return rc;
	url = tt_asprintf("%s%s%s%s", n->base, path, query && *query ? "?" : "", query ? query : "");
	if (body)
		text = json_dumps(body, JSON_COMPACT);
	if (!url || (body && !text)) {
		free(url);
		free(text);
		return KOOM(err);
	}
	const char *headers[] = { n->auth, "Accept: application/json", "Content-Type: application/json",
				  NULL };
	if (!body)
		headers[2] = NULL;
	bool mutating = strcmp(method, "GET") != 0;
	tt_http_response_init(&resp);
	for (int attempt = 0;; attempt++) {
		tt_http_request req = { .method = method, .url = url, .headers = headers, .body = text,
					.body_len = text ? strlen(text) : 0, .no_retry = mutating };
		tt_http_response_release(&resp);
		tt_http_response_init(&resp);
		if ((rc = tt_http_do(n->http, &req, &resp, err)) != 0) {
			/* The message names the URL (no key: it is only in a header). */
			tt_error_object(err, NULL, KIND);
			if (mutating)
				tt_error_hint(err, "Neon may or may not have applied it: run the command "
						   "again (tether checks before it creates anything)");
			goto done;
		}
		if ((resp.status == 423 || resp.status == 429 || resp.status == 503) && attempt < RETRIES) {
			long wait = 250L << attempt;
			const char *ra = tt_http_response_header(&resp, "Retry-After");
			if (ra && *ra) {
				char *end;
				long s = strtol(ra, &end, 10);
				if (*end == '\0' && s >= 0)
					wait = (s > 60 ? 60 : s) * 1000;
			}
			sleep_ms(wait > 15000 && !ra ? 15000 : wait);
			continue;
		}
		break;
	}
	if (status)
		*status = resp.status;
	if (resp.status == 404 && allow_404)
		goto done;
	if (resp.status == 204)
		goto done;
	json_t *parsed = NULL;
	if (resp.body.len) {
		tt_error perr = TT_ERROR_INIT;
		parsed = tt_json_parse(resp.body.ptr, resp.body.len, "Neon API answer", &perr);
		tt_error_clear(&perr);
	}
	if (resp.status < 200 || resp.status >= 300) {
		const char *msg = parsed ? str_of(parsed, "message") : NULL;
		rc = KERR(err, TT_EBACKEND, "Neon API %s %s: %ld %s", method, path, resp.status,
			  msg ? msg : (resp.status == 401 ? "unauthorized (check the API key)" : ""));
		json_decref(parsed);
		goto done;
	}
	if (!parsed) {
		rc = KERR(err, TT_EBACKEND, "Neon API %s %s: %ld with a body that is not JSON", method, path,
			  resp.status);
		goto done;
	}
	if (pid && (rc = poll_operations(b, pid, parsed, err)) != 0) {
		json_decref(parsed);
		goto done;
	}
	*out = parsed;
done:
	tt_http_response_release(&resp);
	free(url);
	free(text);
	return rc;
}

/* Wait for every operation a mutation returned to finish. */
static int poll_operations(tt_backend *b, const char *pid, const json_t *resp, tt_error *err)
{
	const json_t *ops = json_object_get(resp, "operations");
	size_t i;
	const json_t *op;
	json_array_foreach(ops, i, op) {
		const char *id = str_of(op, "id");
		const char *st = str_of(op, "status");
		long waited = 0;
		while (id && st && strcmp(st, "finished") != 0 && strcmp(st, "skipped") != 0) {
			if (!strcmp(st, "failed") || !strcmp(st, "error") || !strcmp(st, "cancelled"))
				return KERR(err, TT_EBACKEND, "Neon operation %s (%s) %s: %s", id,
					    str_of(op, "action") ? str_of(op, "action") : "?", st,
					    str_of(op, "error") ? str_of(op, "error") : "no reason given");
			if (waited >= OP_WAIT_MS)
				return KERR(err, TT_EBACKEND, "Neon operation %s still %s after %ld s", id, st,
					    waited / 1000);
			sleep_ms(200);
			waited += 200;
			char *p = tt_asprintf("/projects/%s/operations/%s", pid, id);
			json_t *got = NULL;
			int rc = p ? api(b, "GET", p, NULL, NULL, false, NULL, &got, NULL, err) : KOOM(err);
			free(p);
			if (rc)
				return rc;
			const json_t *o = json_object_get(got, "operation");
			const char *now = str_of(o, "status");
			bool failed = now && (!strcmp(now, "failed") || !strcmp(now, "error"));
			if (failed) {
				rc = KERR(err, TT_EBACKEND, "Neon operation %s (%s) %s: %s", id,
					  str_of(o, "action") ? str_of(o, "action") : "?", now,
					  str_of(o, "error") ? str_of(o, "error") : "no reason given");
				json_decref(got);
				return rc;
			}
			bool done = !now || !strcmp(now, "finished") || !strcmp(now, "skipped") ||
				    !strcmp(now, "cancelled");
			json_decref(got);
			if (done)
				break;
		}
	}
	return 0;
}

/* Every branch of the project, following the cursor (a new array). */
static int list_branches(tt_backend *b, const char *pid, json_t **out, tt_error *err)
{
	json_t *all = json_array();
	char *path = tt_asprintf("/projects/%s/branches", pid);
	char *cursor = NULL;
	int rc = 0;
	if (!all || !path) {
		rc = KOOM(err);
		goto done;
	}
	for (int pages = 0; pages < 10000; pages++) {
		tt_buf q = TT_BUF_INIT;
		json_t *page = NULL;
		tt_buf_puts(&q, "limit=500");
		if (cursor) {
			tt_buf_puts(&q, "&cursor=");
			q_enc(&q, cursor);
		}
		if (q.failed) {
			tt_buf_release(&q);
			rc = KOOM(err);
			goto done;
		}
		rc = api(b, "GET", path, q.ptr, NULL, false, NULL, &page, NULL, err);
		tt_buf_release(&q);
		if (rc)
			goto done;
		const json_t *brs = json_object_get(page, "branches");
		json_array_extend(all, (json_t *)brs);
		const json_t *pg = json_object_get(page, "pagination");
		const char *next = str_of(pg, "next");
		if (!next)
			next = str_of(pg, "cursor");
		bool more = json_array_size(brs) && next && !(cursor && strcmp(cursor, next) == 0);
		free(cursor);
		cursor = more ? tt_strdup(next) : NULL;
		json_decref(page);
		if (!more)
			break;
	}
done:
	free(cursor);
	free(path);
	if (rc)
		json_decref(all);
	else
		*out = all;
	return rc;
}

static const json_t *branch_named(const json_t *all, const char *name)
{
	size_t i;
	const json_t *br;
	json_array_foreach(all, i, br) {
		const char *n = str_of(br, "name"), *id = str_of(br, "id");
		if ((n && !strcmp(n, name)) || (id && !strcmp(id, name)))
			return br;
	}
	return NULL;
}

static const json_t *branch_by_id(const json_t *all, const char *id)
{
	size_t i;
	const json_t *br;
	json_array_foreach(all, i, br) {
		const char *bid = str_of(br, "id");
		if (bid && !strcmp(bid, id))
			return br;
	}
	return NULL;
}

static int require_branch(const json_t *all, const char *name, const json_t **out, tt_error *err)
{
	*out = branch_named(all, name);
	return *out ? 0 : KERR(err, TT_EBACKEND, "branch '%s' not found", name);
}

/* The lineage: source when br is it or descends from it, else br's name. */
static const char *lineage(const json_t *all, const json_t *br, const char *source)
{
	const json_t *cur = br;
	for (size_t steps = 0; cur && steps <= json_array_size(all); steps++) {
		const char *n = str_of(cur, "name");
		if (n && !strcmp(n, source))
			return source;
		const char *parent = str_of(cur, "parent_id");
		cur = parent ? branch_by_id(all, parent) : NULL;
	}
	return str_of(br, "name");
}

static const char *timeline_of(const json_t *state)
{
	const char *t = str_of(state, "timeline");
	return t ? t : str_of(state, "branch");
}

/* The id of branch_id's endpoint of type (NULL: none), a new string. */
static int find_endpoint(tt_backend *b, const char *pid, const char *branch_id, const char *type,
			 char **id, tt_error *err)
{
	char *path = tt_asprintf("/projects/%s/endpoints", pid);
	json_t *got = NULL;
	int rc = path ? api(b, "GET", path, NULL, NULL, false, NULL, &got, NULL, err) : KOOM(err);
	free(path);
	*id = NULL;
	if (rc)
		return rc;
	size_t i;
	const json_t *ep;
	json_array_foreach(json_object_get(got, "endpoints"), i, ep) {
		const char *bid = str_of(ep, "branch_id"), *t = str_of(ep, "type");
		if (bid && t && !strcmp(bid, branch_id) && !strcmp(t, type)) {
			*id = tt_strdup(str_of(ep, "id"));
			if (!*id)
				rc = KOOM(err);
			break;
		}
	}
	json_decref(got);
	return rc;
}

static int has_rw_endpoint(tt_backend *b, const char *pid, const char *branch_id, bool *out,
			   tt_error *err)
{
	char *id = NULL;
	int rc = find_endpoint(b, pid, branch_id, "read_write", &id, err);
	*out = id != NULL;
	free(id);
	return rc;
}

/* branch_id's endpoint of type, created when it has none: once per branch
 * however many threads ask; when another process won the race (Neon
 * refuses a second read_write endpoint), the one it made serves. */
static int ensure_endpoint(tt_backend *b, const char *pid, const char *branch_id, const char *type,
			   char **id, tt_error *err)
{
	neon_impl *n = b->impl;
	int rc;
	pthread_mutex_lock(&n->ep_lock);
	if ((rc = find_endpoint(b, pid, branch_id, type, id, err)) != 0 || *id)
		goto done;
	json_t *body = json_pack("{s:{s:s,s:s}}", "endpoint", "branch_id", branch_id, "type", type);
	char *path = tt_asprintf("/projects/%s/endpoints", pid);
	json_t *got = NULL;
	rc = body && path ? api(b, "POST", path, NULL, body, false, pid, &got, NULL, err) : KOOM(err);
	json_decref(body);
	free(path);
	if (rc) {
		tt_error ferr = TT_ERROR_INIT;
		if (find_endpoint(b, pid, branch_id, type, id, &ferr) == 0 && *id) {
			tt_error_clear(err);
			rc = 0;
		}
		tt_error_clear(&ferr);
		goto done;
	}
	*id = tt_strdup(str_of(json_object_get(got, "endpoint"), "id"));
	json_decref(got);
	if (!*id)
		rc = KERR(err, TT_EBACKEND, "Neon API POST /projects/%s/endpoints: no endpoint id", pid);
done:
	pthread_mutex_unlock(&n->ep_lock);
	return rc;
}

static int connection_uri(tt_backend *b, const char *pid, const char *branch_id, const char *ep,
			  const json_t *loc, char **uri, tt_error *err)
{
	const char *db = str_of(loc, "database"), *role = str_of(loc, "role");
	if (!db || !role)
		return KERR(err, TT_ECONFIG, "neon locator needs 'database' and 'role' (`--database`, `--role`)");
	tt_buf q = TT_BUF_INIT;
	tt_buf_puts(&q, "branch_id=");
	q_enc(&q, branch_id);
	tt_buf_puts(&q, "&endpoint_id=");
	q_enc(&q, ep);
	tt_buf_puts(&q, "&database_name=");
	q_enc(&q, db);
	tt_buf_puts(&q, "&role_name=");
	q_enc(&q, role);
	char *path = tt_asprintf("/projects/%s/connection_uri", pid);
	json_t *got = NULL;
	int rc = !q.failed && path ? api(b, "GET", path, q.ptr, NULL, false, NULL, &got, NULL, err)
				   : KOOM(err);
	tt_buf_release(&q);
	free(path);
	if (rc)
		return rc;
	*uri = str_of(got, "uri") ? tt_strdup(str_of(got, "uri")) : NULL;
	json_decref(got);
	return *uri ? 0 : KERR(err, TT_EBACKEND, "Neon API gave no connection URI for branch %s", branch_id);
}

static int branch_uri(tt_backend *b, const char *pid, const char *branch_id, const char *type,
		      const json_t *loc, char **uri, tt_error *err)
{
	char *ep = NULL;
	int rc = ensure_endpoint(b, pid, branch_id, type, &ep, err);
	if (rc == 0)
		rc = connection_uri(b, pid, branch_id, ep, loc, uri, err);
	free(ep);
	return rc;
}

static int sql_rows(const char *uri, const char *sql, tt_db_rows *rows, tt_error *err)
{
	tt_db *db = NULL;
	tt_db_opts o = { .read_only = true, .timeout_ms = 60000 };
	memset(rows, 0, sizeof *rows);
	int rc = tt_db_open_postgres(&db, uri, &o, err);
	if (rc == 0)
		rc = tt_db_query(db, sql, NULL, 0, rows, err);
	tt_db_close(db);
	if (rc)
		tt_error_object(err, NULL, KIND);
	else if (rows->nrows != 1 || rows->ncols < 1)
		rc = KERR(err, TT_EBACKEND, "empty probe result");
	return rc;
}

/* --- the protocol ------------------------------------------------------------ */

static int neon_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	(void)b;
	const char *pid;
	int rc = project_of(loc, &pid, err);
	if (rc)
		return rc;
	*out = json_pack("{s:s,s:s}", "project_id", pid, "branch", source_branch(loc));
	return *out ? 0 : KOOM(err);
}

static int neon_scope(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	(void)b;
	const char *pid;
	int rc = project_of(loc, &pid, err);
	if (rc)
		return rc;
	*out = tt_asprintf("neon:%s", pid);
	return *out ? 0 : KOOM(err);
}

static bool has_at(const json_t *loc)
{
	const json_t *at = json_object_get(loc, "at");
	return at && !json_is_null(at) && !(json_is_string(at) && json_string_length(at) == 0);
}

static int neon_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref,
			    json_t **state, tt_error *err)
{
	const char *pid;
	json_t *all = NULL;
	const json_t *br;
	char *uri = NULL;
	tt_db_rows rows = { 0 };
	int rc;
	*state = NULL;
	if (has_at(loc))
		return KERR(err, TT_ECAPABILITY,
			    "neon does not support a detached base (`at`); an LSN is only meaningful "
			    "within the history window -- pin from a branch instead");
	if ((rc = project_of(loc, &pid, err)) || (rc = list_branches(b, pid, &all, err)))
		return rc;
	const char *source = source_branch(loc);
	if ((rc = require_branch(all, working_ref ? working_ref : source, &br, err)) ||
	    (rc = branch_uri(b, pid, str_of(br, "id"), "read_write", loc, &uri, err)) ||
	    (rc = sql_rows(uri, PROBE_SQL, &rows, err)))
		goto done;
	const char *lsn = rows.cells[0], *xid = rows.ncols > 1 ? rows.cells[1] : NULL;
	const char *next = rows.ncols > 2 ? rows.cells[2] : NULL;
	char *cx = xid ? tt_strdup(xid) : tt_asprintf("<%s", next ? next : "0");
	const char *line = lineage(all, br, source);
	const char *name = str_of(br, "name");
	*state = cx && lsn ? json_pack("{s:s,s:s,s:s}", "lsn", lsn, "commit_xid", cx, "branch", line) : NULL;
	free(cx);
	if (!*state) {
		rc = KOOM(err);
		goto done;
	}
	if (name && strcmp(name, line) != 0)
		json_object_set_new(*state, "timeline", json_string(name));
done:
	tt_db_rows_release(&rows);
	free(uri);
	json_decref(all);
	return rc;
}

static int neon_check_quiescence(tt_backend *b, const json_t *loc, const char *working_ref,
				 tt_error *err)
{
	const char *pid;
	json_t *all = NULL;
	const json_t *br;
	char *uri = NULL;
	tt_db_rows rows = { 0 };
	int rc;
	if ((rc = project_of(loc, &pid, err)) || (rc = list_branches(b, pid, &all, err)))
		return rc;
	if ((rc = require_branch(all, working_ref ? working_ref : source_branch(loc), &br, err)) ||
	    (rc = branch_uri(b, pid, str_of(br, "id"), "read_write", loc, &uri, err)) ||
	    (rc = sql_rows(uri, WRITERS_SQL, &rows, err)))
		goto done;
	if (rows.cells[0] && atol(rows.cells[0]) > 0)
		rc = KERR(err, TT_EBACKEND, "active writers detected; commit with --force to override");
done:
	tt_db_rows_release(&rows);
	free(uri);
	json_decref(all);
	return rc;
}

static bool protect_pins(const tt_backend *b)
{
	return json_is_true(json_object_get(b->config, "protected_pins"));
}

static int neon_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id,
		    tt_pin *out, tt_error *err)
{
	const char *pid;
	json_t *all = NULL;
	const json_t *parent;
	int rc;
	if ((rc = tt_kit_fill_pin(out, KIND, pin_id, NULL, false, err)) || (rc = project_of(loc, &pid, err)))
		return rc;
	const char *lsn = str_of(state, "lsn"), *tl = timeline_of(state);
	if (!lsn || !tl)
		return KERR(err, TT_EBACKEND, "state has no lsn/branch to pin");
	if ((rc = list_branches(b, pid, &all, err)) || (rc = require_branch(all, tl, &parent, err)))
		goto done;
	const json_t *have = branch_named(all, out->ref);
	if (have) {
		const char *hp = str_of(have, "parent_id"), *hl = str_of(have, "parent_lsn");
		if (!hp || strcmp(hp, str_of(parent, "id")) || !hl || strcmp(hl, lsn)) {
			rc = KERR(err, TT_EBACKEND, "pin %s exists but hangs off %s@%s, not %s@%s", out->ref,
				  hp ? hp : "?", hl ? hl : "?", str_of(state, "branch"), lsn);
			tt_error_hint(err, "if no commit records it (an interrupted commit left it), "
					   "delete that branch in Neon and commit again");
		}
		goto done;
	}
	json_t *body = json_pack("{s:{s:s,s:s,s:s,s:b},s:[]}", "branch", "name", out->ref, "parent_id",
				 str_of(parent, "id"), "parent_lsn", lsn, "protected", protect_pins(b),
				 "endpoints");
	char *path = tt_asprintf("/projects/%s/branches", pid);
	json_t *got = NULL;
	rc = body && path ? api(b, "POST", path, NULL, body, false, pid, &got, NULL, err) : KOOM(err);
	json_decref(body);
	json_decref(got);
	free(path);
	if (rc == 0)
		out->created = true;
done:
	json_decref(all);
	return rc;
}

static int delete_branch(tt_backend *b, const char *pid, const json_t *br, const char *name,
			 tt_error *err)
{
	char *path = tt_asprintf("/projects/%s/branches/%s", pid, str_of(br, "id"));
	json_t *got = NULL, *all = NULL;
	int rc = path ? api(b, "DELETE", path, NULL, NULL, true, pid, &got, NULL, err) : KOOM(err);
	free(path);
	json_decref(got);
	/* Deletion is asynchronous at Neon: believe the listing, not the code. */
	if (rc == 0 && (rc = list_branches(b, pid, &all, err)) == 0 && branch_named(all, name))
		rc = KERR(err, TT_EBACKEND, "branch %s was not deleted", name);
	json_decref(all);
	return rc;
}

static int neon_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err)
{
	const char *pid;
	json_t *all = NULL;
	int rc;
	if ((rc = project_of(loc, &pid, err)) || (rc = list_branches(b, pid, &all, err)))
		return rc;
	const json_t *br = branch_named(all, pin->ref);
	if (br && json_is_true(json_object_get(br, "protected"))) {
		char *path = tt_asprintf("/projects/%s/branches/%s", pid, str_of(br, "id"));
		json_t *body = json_pack("{s:{s:b}}", "branch", "protected", 0), *got = NULL;
		rc = path && body ? api(b, "PATCH", path, NULL, body, false, pid, &got, NULL, err) : KOOM(err);
		free(path);
		json_decref(body);
		json_decref(got);
	}
	if (br && rc == 0)
		rc = delete_branch(b, pid, br, pin->ref, err);
	json_decref(all);
	return rc;
}

static int list_prefixed(tt_backend *b, const json_t *loc, bool pins, json_t **out, tt_error *err)
{
	const char *pid;
	json_t *all = NULL;
	int rc;
	if ((rc = project_of(loc, &pid, err)) || (rc = list_branches(b, pid, &all, err)))
		return rc;
	*out = json_array();
	size_t i;
	const json_t *br;
	json_array_foreach(all, i, br) {
		const char *n = str_of(br, "name");
		if (*out && (pins ? tt_kit_keep_ref(*out, n, PIN_PREFIX, TT_WORKING_REF_PREFIX, true)
				  : tt_kit_keep_ref(*out, n, TT_WORKING_REF_PREFIX, NULL, false)) != 0) {
			json_decref(*out);
			*out = NULL;
		}
	}
	json_decref(all);
	return *out ? 0 : KOOM(err);
}

static int neon_list_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err)
{
	return list_prefixed(b, loc, true, ids, err);
}

static int neon_list_working_refs(tt_backend *b, const json_t *loc, json_t **refs, tt_error *err)
{
	return list_prefixed(b, loc, false, refs, err);
}

static int neon_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
		       bool deep, tt_verify_status *status, char **message, tt_error *err)
{
	(void)deep;
	const char *pid;
	json_t *all = NULL;
	int rc;
	*message = NULL;
	if (!pin) {
		*status = TT_VERIFY_UNKNOWN;
		*message = tt_strdup("no pin recorded");
		return *message ? 0 : KOOM(err);
	}
	if ((rc = project_of(loc, &pid, err)) || (rc = list_branches(b, pid, &all, err)))
		return rc;
	const json_t *br = branch_named(all, pin->ref);
	const char *lsn = str_of(state, "lsn"), *tl = timeline_of(state);
	const json_t *parent = tl ? branch_named(all, tl) : NULL;
	bool rw = false;
	*status = TT_VERIFY_OK;
	if (!br) {
		*status = TT_VERIFY_MISSING;
		*message = tt_asprintf("branch %s missing", pin->ref);
	} else if (!str_of(br, "parent_lsn") || !lsn || strcmp(str_of(br, "parent_lsn"), lsn)) {
		*status = TT_VERIFY_DRIFTED;
		*message = tt_asprintf("parent_lsn %s != %s", str_of(br, "parent_lsn") ? str_of(br, "parent_lsn") : "None",
				       lsn ? lsn : "?");
	} else if (parent && (!str_of(br, "parent_id") || strcmp(str_of(br, "parent_id"), str_of(parent, "id")))) {
		*status = TT_VERIFY_DRIFTED;
		*message = tt_asprintf("pin hangs off %s, not %s", str_of(br, "parent_id") ? str_of(br, "parent_id") : "None",
				       str_of(state, "branch"));
	} else if (str_of(br, "last_reset_at")) {
		*status = TT_VERIFY_DRIFTED;
		*message = tt_strdup("branch was reset");
	} else if ((rc = has_rw_endpoint(b, pid, str_of(br, "id"), &rw, err)) == 0 && rw) {
		*status = TT_VERIFY_DRIFTED;
		*message = tt_strdup("pin branch has a read-write endpoint");
	}
	json_decref(all);
	if (rc == 0 && *status != TT_VERIFY_OK && !*message)
		rc = KOOM(err);
	return rc;
}

static int neon_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		     const tt_expect *expected, char **ref_out, tt_error *err)
{
	const char *pid;
	json_t *all = NULL, *body = NULL, *got = NULL;
	const json_t *parent;
	char *path = NULL, *target = NULL;
	const char *lsn = NULL;
	int rc;
	*ref_out = NULL;
	if ((rc = tt_check_expected(b, loc, name, expected, err)) ||
	    (rc = project_of(loc, &pid, err)) || (rc = list_branches(b, pid, &all, err)))
		return rc;
	if (source->kind == TT_TARGET_PIN && source->pin) {
		rc = require_branch(all, source->pin->ref, &parent, err);
	} else if (source->kind == TT_TARGET_STATE && source->state) {
		const char *tl = timeline_of(source->state);
		lsn = str_of(source->state, "lsn");
		rc = tl ? require_branch(all, tl, &parent, err) : KERR(err, TT_EBACKEND, "state names no branch");
	} else {
		rc = KERR(err, TT_ECAPABILITY, "neon forks from a pin or a recorded state");
	}
	if (rc)
		goto done;
	target = tt_strdup(name);
	if (!target) {
		rc = KOOM(err);
		goto done;
	}
	const json_t *existing = branch_named(all, name);
	if (existing) {
		bool children = false;
		size_t i;
		const json_t *br;
		json_array_foreach(all, i, br) {
			const char *p = str_of(br, "parent_id");
			children = children || (p && !strcmp(p, str_of(existing, "id")));
		}
		if (!children) {
			/* Restore always: where a branch was created says nothing about
			 * what was written on it since. */
			body = json_pack("{s:s}", "source_branch_id", str_of(parent, "id"));
			if (body && lsn)
				json_object_set_new(body, "source_lsn", json_string(lsn));
			path = tt_asprintf("/projects/%s/branches/%s/restore", pid, str_of(existing, "id"));
			rc = body && path ? api(b, "POST", path, NULL, body, false, pid, &got, NULL, err) : KOOM(err);
			goto done;
		}
		/* A pin hangs off it: a restore would re-parent the pin, so the
		 * fork goes to the first free sibling name. */
		for (int n = 2;; n++) {
			free(target);
			target = tt_asprintf("%s.%d", name, n);
			if (!target) {
				rc = KOOM(err);
				goto done;
			}
			if (!branch_named(all, target))
				break;
		}
	}
	body = json_pack("{s:{s:s,s:s}}", "branch", "name", target, "parent_id", str_of(parent, "id"));
	if (body && lsn)
		json_object_set_new(json_object_get(body, "branch"), "parent_lsn", json_string(lsn));
	path = tt_asprintf("/projects/%s/branches", pid);
	rc = body && path ? api(b, "POST", path, NULL, body, false, pid, &got, NULL, err) : KOOM(err);
done:
	if (rc == 0) {
		*ref_out = target;
		target = NULL;
	}
	free(target);
	free(path);
	json_decref(body);
	json_decref(got);
	json_decref(all);
	return rc;
}

static int neon_working_ref_blockers(tt_backend *b, const json_t *loc, const char *ref, char **why,
				     tt_error *err)
{
	const char *pid;
	json_t *all = NULL;
	int rc;
	*why = NULL;
	if ((rc = project_of(loc, &pid, err)) || (rc = list_branches(b, pid, &all, err)))
		return rc;
	const json_t *me = NULL;
	size_t i;
	const json_t *br;
	json_array_foreach(all, i, br)
		if (str_of(br, "name") && !strcmp(str_of(br, "name"), ref))
			me = br;
	if (me) {
		const char **kids = tt_calloc(json_array_size(all) + 1, sizeof *kids);
		size_t n = 0;
		if (!kids) {
			json_decref(all);
			return KOOM(err);
		}
		json_array_foreach(all, i, br) {
			const char *p = str_of(br, "parent_id");
			if (p && !strcmp(p, str_of(me, "id")))
				kids[n++] = str_of(br, "name") ? str_of(br, "name") : "";
		}
		if (n) {
			qsort(kids, n, sizeof *kids, tt_cmp_cstr);
			tt_buf w = TT_BUF_INIT;
			tt_buf_printf(&w, "%zu branch(es) hang off it (", n);
			for (size_t k = 0; k < n && k < 3; k++)
				tt_buf_printf(&w, "%s%s", k ? ", " : "", kids[k]);
			tt_buf_printf(&w, "%s); Neon deletes a branch only once its children are gone -- "
				      "release those pins first", n > 3 ? ", ..." : "");
			*why = tt_buf_detach(&w);
			if (!*why)
				rc = KOOM(err);
		}
		free(kids);
	}
	json_decref(all);
	return rc;
}

static int neon_delete_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err)
{
	const char *pid;
	json_t *all = NULL;
	int rc;
	if (!strcmp(ref, source_branch(loc)))
		return 0;
	if ((rc = project_of(loc, &pid, err)) || (rc = list_branches(b, pid, &all, err)))
		return rc;
	const json_t *br = branch_named(all, ref);
	if (br)
		rc = delete_branch(b, pid, br, ref, err);
	json_decref(all);
	return rc;
}

/* A branch renamed in place (PATCH .../branches/{id} {"branch": {"name"}}):
 * its data, its parent and the branches hanging off it stay, which pin
 * again + unpin (or fork + delete) could not give a pin with children. */
static int neon_rename_ref(tt_backend *b, const json_t *loc, const char *old, const char *new_name,
			   tt_error *err)
{
	const char *pid;
	json_t *all = NULL, *body = NULL, *got = NULL;
	const json_t *br;
	char *path = NULL;
	int rc;
	if ((rc = project_of(loc, &pid, err)) || (rc = list_branches(b, pid, &all, err)))
		return rc;
	if ((rc = require_branch(all, old, &br, err)))
		goto done;
	const json_t *taken = branch_named(all, new_name);
	if (taken && taken != br) {
		rc = KERR(err, TT_EBACKEND, "cannot rename branch %s: a branch %s already exists", old, new_name);
		tt_error_hint(err, "delete or rename that branch in Neon if nothing records it, then run "
				   "the command again");
		goto done;
	}
	if (taken)
		goto done;
	path = tt_asprintf("/projects/%s/branches/%s", pid, str_of(br, "id"));
	body = json_pack("{s:{s:s}}", "branch", "name", new_name);
	rc = path && body ? api(b, "PATCH", path, NULL, body, false, pid, &got, NULL, err) : KOOM(err);
done:
	json_decref(got);
	json_decref(body);
	free(path);
	json_decref(all);
	return rc;
}

static int neon_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		     json_t **handle, tt_error *err)
{
	const char *pid;
	json_t *all = NULL;
	const json_t *br;
	char *uri = NULL, *shown = NULL;
	const char *name;
	int rc;
	*handle = NULL;
	if ((rc = project_of(loc, &pid, err)) || (rc = list_branches(b, pid, &all, err)))
		return rc;
	if (target->kind == TT_TARGET_PIN && target->pin) {
		name = target->pin->ref;
		read_only = true;
		rc = require_branch(all, name, &br, err);
		if (rc == 0)
			rc = branch_uri(b, pid, str_of(br, "id"), "read_only", loc, &uri, err);
	} else if (target->kind == TT_TARGET_STATE && target->state) {
		/* A time-travel read on the state's branch within the history window. */
		name = timeline_of(target->state);
		read_only = true;
		rc = name ? require_branch(all, name, &br, err) : KERR(err, TT_EBACKEND, "state names no branch");
		if (rc == 0)
			rc = branch_uri(b, pid, str_of(br, "id"), "read_only", loc, &uri, err);
		if (rc == 0) {
			char *t = tt_asprintf("%s%soptions=neon_lsn:%s", uri, strchr(uri, '?') ? "&" : "?",
					      str_of(target->state, "lsn") ? str_of(target->state, "lsn") : "");
			free(uri);
			uri = t;
			rc = uri ? 0 : KOOM(err);
		}
	} else {
		name = target->kind == TT_TARGET_REF && target->ref && *target->ref ? target->ref
										     : source_branch(loc);
		rc = require_branch(all, name, &br, err);
		if (rc == 0)
			rc = branch_uri(b, pid, str_of(br, "id"), "read_write", loc, &uri, err);
	}
	if (rc)
		goto done;
	shown = redact(uri);
	*handle = shown ? json_pack("{s:s,s:s,s:b,s:s,s:s}", "type", KIND, "address", shown, "read_only",
				    read_only, "branch", name, "url_with_password", uri)
			: NULL;
	if (!*handle)
		rc = KOOM(err);
done:
	free(shown);
	free(uri);
	json_decref(all);
	return rc;
}

static void neon_free(tt_backend *b)
{
	neon_impl *n = b->impl;
	if (!n)
		return;
	tt_http_client_free(n->http);
	if (n->auth) {
		memset(n->auth, 0, strlen(n->auth));
		free(n->auth);
	}
	free(n->base);
	pthread_mutex_destroy(&n->lock);
	pthread_mutex_destroy(&n->ep_lock);
	free(n);
	b->impl = NULL;
}

static const tt_backend_ops neon_ops = {
	.abi = TT_BACKEND_ABI,
	.identity = neon_identity,
	.fingerprint = neon_fingerprint,
	.pin = neon_pin,
	.unpin = neon_unpin,
	.list_pins = neon_list_pins,
	.verify = neon_verify,
	.fork = neon_fork,
	.delete_working_ref = neon_delete_working_ref,
	.list_working_refs = neon_list_working_refs,
	.working_ref_blockers = neon_working_ref_blockers,
	.open = neon_open,
	.branch_scope = neon_scope,
	.ref_namespace = neon_scope,
	.check_quiescence = neon_check_quiescence,
	.rename_ref = neon_rename_ref,
	.promote_hint = PROMOTE_HINT,
	.free = neon_free,
};

int tt_neon_backend_new(tt_backend *b, tt_error *err)
{
	neon_impl *n = tt_calloc(1, sizeof *n);
	if (!n)
		return KOOM(err);
	pthread_mutex_init(&n->lock, NULL);
	pthread_mutex_init(&n->ep_lock, NULL);
	b->ops = &neon_ops;
	b->impl = n;
	return 0;
}
