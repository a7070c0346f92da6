/*
 * backends/iceberg/iceberg_rest.c - the Iceberg REST catalog client (see
 * iceberg_rest.h) on net/http.c.
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "backends/backend.h"
#include "backends/kit.h"
#include "backends/iceberg/iceberg_rest.h"
#include "net/http.h"
#include "net/sigv4.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"

#define KIND "iceberg"
#define MAX_HEADERS 32

struct tt_iceberg_rest {
	tt_http_client *http;
	json_t *props;        /* defaults < given < overrides (holds secrets: never shown) */
	char *uri;            /* without a trailing '/' */
	char *prefix;         /* "" or "<prefix>/" */
	char *auth;           /* "Authorization: Bearer ..." or NULL */
	bool sigv4;           /* rest.sigv4-enabled: every request signed instead */
	char *extra[MAX_HEADERS];
	size_t nextra;
};

static const char *prop(const tt_iceberg_rest *r, const char *key)
{
	const json_t *v = json_object_get(r->props, key);
	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

/* A boolean property: true, or the string "true" as pyiceberg reads it. */
static bool prop_true(const tt_iceberg_rest *r, const char *key)
{
	const json_t *v = json_object_get(r->props, key);
	return json_is_true(v) || (json_is_string(v) && strcasecmp(json_string_value(v), "true") == 0);
}

static const char *prop_or_env(const tt_iceberg_rest *r, const char *key, const char *env)
{
	const char *v = prop(r, key);
	if (!v && env && getenv(env) && *getenv(env))
		v = getenv(env);
	return v;
}

/*
 * SigV4 headers for one request, as pyiceberg's rest.sigv4-enabled signs
 * it (botocore's SigV4Auth for service rest.signing-name, default
 * execute-api): the path as sent (already percent-encoded) encoded once
 * more, as AWS services other than S3 canonicalise it; the query decoded
 * then encoded canonically; the body's SHA-256.  Credentials:
 * client.access-key-id / client.secret-access-key / client.session-token,
 * else AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN.
 */
static int sigv4_sign(tt_iceberg_rest *r, const char *method, const char *url, const char *const *headers,
		      const char *body, size_t len, tt_sigv4_out *out, tt_error *err)
{
	tt_aws_creds creds = {
		.access_key_id = prop_or_env(r, "client.access-key-id", "AWS_ACCESS_KEY_ID"),
		.secret_access_key = prop_or_env(r, "client.secret-access-key", "AWS_SECRET_ACCESS_KEY"),
		.session_token = prop_or_env(r, "client.session-token", "AWS_SESSION_TOKEN"),
	};
	const char *region = prop(r, "rest.signing-region");
	if (!region)
		region = prop_or_env(r, "client.region", "AWS_REGION");
	if (!region && getenv("AWS_DEFAULT_REGION") && *getenv("AWS_DEFAULT_REGION"))
		region = getenv("AWS_DEFAULT_REGION");
	const char *service = prop(r, "rest.signing-name") ? prop(r, "rest.signing-name") : "execute-api";
	if (!creds.access_key_id || !creds.secret_access_key)
		return KERR(err, TT_ECONFIG,
			    "iceberg REST catalog %s: rest.sigv4-enabled, but no AWS credentials: set "
			    "client.access-key-id and client.secret-access-key in the catalog under "
			    "[backends.iceberg] in .tether/secrets.toml, or AWS_ACCESS_KEY_ID and "
			    "AWS_SECRET_ACCESS_KEY",
			    r->uri);
	if (!region)
		return KERR(err, TT_ECONFIG,
			    "iceberg REST catalog %s: rest.sigv4-enabled, but no signing region: set "
			    "rest.signing-region in the catalog in .tether/secrets.toml, or AWS_REGION",
			    r->uri);
	const char *sep = strstr(url, "://");
	if (!sep)
		return KERR(err, TT_ECONFIG, "iceberg REST catalog: %s is not an http(s) URL", r->uri);
	char *scheme = tt_strndup(url, (size_t)(sep - url));
	const char *hp = sep + 3, *slash = strchr(hp, '/');
	char *host = slash ? tt_strndup(hp, (size_t)(slash - hp)) : tt_strdup(hp);
	const char *q = slash ? strchr(slash, '?') : NULL;
	char *path = slash ? (q ? tt_strndup(slash, (size_t)(q - slash)) : tt_strdup(slash)) : tt_strdup("/");
	char *query = q ? tt_strdup(q + 1) : NULL;
	tt_sigv4_param params[16];
	char *decoded[32];
	size_t np = 0, nd = 0;
	int rc = 0;
	if (!scheme || !host || !path || (q && !query)) {
		rc = KOOM(err);
		goto done;
	}
	/* the Host header curl sends: no default port */
	size_t hl = strlen(host);
	if ((strcmp(scheme, "https") == 0 && hl > 4 && strcmp(host + hl - 4, ":443") == 0) ||
	    (strcmp(scheme, "http") == 0 && hl > 3 && strcmp(host + hl - 3, ":80") == 0))
		*strrchr(host, ':') = '\0';
	for (char *p = query, *next; p && *p; p = next) {
		next = strchr(p, '&');
		if (next)
			*next++ = '\0';
		if (np == sizeof params / sizeof *params) {
			rc = KERR(err, TT_EBACKEND, "iceberg REST catalog %s: too many query parameters", r->uri);
			goto done;
		}
		char *eq = strchr(p, '=');
		if (eq)
			*eq++ = '\0';
		char *name = decoded[nd++] = tt_percent_decode(p);
		char *value = decoded[nd++] = tt_percent_decode(eq ? eq : "");
		if (!name || !value) {
			rc = KOOM(err);
			goto done;
		}
		params[np++] = (tt_sigv4_param){ name, value };
	}
	tt_sigv4_input in = { .method = method, .scheme = scheme, .host = host, .path = path, .query = params,
			      .nquery = np, .headers = headers, .body = body, .body_len = len, .region = region,
			      .service = service };
	rc = tt_sigv4_sign(&in, &creds, out, err);
	if (rc)
		tt_error_prefix(err, "iceberg REST catalog %s: signing a request", r->uri);
done:
	for (size_t i = 0; i < nd; i++)
		free(decoded[i]);
	free(scheme);
	free(host);
	free(path);
	free(query);
	return rc;
}

const char *tt_iceberg_rest_uri(const tt_iceberg_rest *r)
{
	return r->uri;
}

void tt_iceberg_rest_table_release(tt_iceberg_rest_table *t)
{
	free(t->location);
	t->location = NULL;
	tt_buf_release(&t->metadata);
}

void tt_iceberg_rest_close(tt_iceberg_rest *r)
{
	if (!r)
		return;
	tt_http_client_free(r->http);
	json_decref(r->props);
	free(r->uri);
	free(r->prefix);
	if (r->auth) {
		memset(r->auth, 0, strlen(r->auth));
		free(r->auth);
	}
	for (size_t i = 0; i < r->nextra; i++)
		free(r->extra[i]);
	free(r);
}

static int set_base(tt_iceberg_rest *r, tt_error *err)
{
	const char *uri = prop(r, "uri"), *prefix = prop(r, "prefix");
	free(r->uri);
	free(r->prefix);
	r->uri = tt_strdup(uri ? uri : "");
	if (r->uri)
		while (*r->uri && r->uri[strlen(r->uri) - 1] == '/')
			r->uri[strlen(r->uri) - 1] = '\0';
	if (!prefix)
		r->prefix = tt_strdup("");
	else {
		while (*prefix == '/')
			prefix++;
		size_t n = strlen(prefix);
		while (n && prefix[n - 1] == '/')
			n--;
		r->prefix = n ? tt_asprintf("%.*s/", (int)n, prefix) : tt_strdup("");
	}
	return r->uri && r->prefix ? 0 : KOOM(err);
}

/* The server's error object as "Type: message" (or the body's first bytes). */
static char *server_message(const tt_http_response *resp)
{
	json_t *doc = json_loadb(resp->body.ptr, resp->body.len, 0, NULL);
	const json_t *e = json_object_get(doc, "error");
	const char *msg = json_string_value(json_object_get(e, "message"));
	const char *type = json_string_value(json_object_get(e, "type"));
	char *out;
	if (msg)
		out = type ? tt_asprintf("%s: %.500s", type, msg) : tt_asprintf("%.500s", msg);
	else if (resp->body.len) {
		size_t n = resp->body.len < 200 ? resp->body.len : 200;
		out = tt_asprintf("%.*s", (int)n, resp->body.ptr);
		for (char *p = out; p && *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = ' ';
	} else
		out = tt_strdup("no message");
	json_decref(doc);
	return out;
}

static int http_error(const tt_http_response *resp, const char *what, const char *ident,
		      const char *uri, tt_error *err)
{
	char *msg = server_message(resp);
	int code = TT_EBACKEND;
	bool auth = resp->status == 401 || resp->status == 403;
	KERR(err, code, "iceberg REST catalog %s: %s%s%s: HTTP %ld %s%s", uri, what, ident ? " " : "",
	     ident ? ident : "", resp->status, msg ? msg : "",
	     auth ? "; check catalog.token or catalog.credential (client_id:client_secret) in "
		    ".tether/secrets.toml under [backends.iceberg]"
		  : resp->status >= 500 ? " (the catalog failed; tether retried it)" : "");
	free(msg);
	return code;
}

/* Send one request with the catalog's headers; content_type NULL: none. */
static int rest_send(tt_iceberg_rest *r, const char *method, const char *url, const char *content_type,
		const char *body, size_t len, bool auth, tt_http_response *resp, tt_error *err)
{
	const char *headers[MAX_HEADERS + 4];
	char *ct = NULL;
	size_t n = 0;
	int rc;
	if (auth && r->auth && !r->sigv4)
		headers[n++] = r->auth;
	if (content_type) {
		if (!(ct = tt_asprintf("Content-Type: %s", content_type)))
			return KOOM(err);
		headers[n++] = ct;
	}
	headers[n++] = "Accept: application/json";
	for (size_t i = 0; i < r->nextra; i++)
		headers[n++] = r->extra[i];
	headers[n] = NULL;
	tt_sigv4_out sig = { 0 };
	if (r->sigv4 && (rc = sigv4_sign(r, method, url, headers, body, len, &sig, err)) != 0) {
		free(ct);
		return rc;
	}
	tt_http_request req = { .method = method, .url = url,
				.headers = r->sigv4 ? (const char *const *)sig.headers : headers, .body = body,
				.body_len = len };
	tt_http_response_release(resp);
	tt_http_response_init(resp);
	rc = tt_http_do(r->http, &req, resp, err);
	tt_sigv4_out_release(&sig);
	free(ct);
	if (rc)
		tt_error_object(err, NULL, KIND);
	return rc;
}

static int form_put(tt_buf *b, const char *key, const char *value)
{
	if (b->len)
		tt_buf_putc(b, '&');
	tt_buf_puts(b, key);
	tt_buf_putc(b, '=');
	return tt_http_uri_encode(b, value, strlen(value), false);
}

/* OAuth2 client credentials at the token endpoint: r->auth. */
static int fetch_token(tt_iceberg_rest *r, const char *ident, tt_error *err)
{
	const char *cred = prop(r, "credential"), *colon = strchr(cred, ':');
	const char *scope = prop(r, "scope");
	char *url = prop(r, "oauth2-server-uri") ? tt_strdup(prop(r, "oauth2-server-uri"))
						  : tt_asprintf("%s/v1/oauth/tokens", r->uri);
	char *id = colon ? tt_strndup(cred, (size_t)(colon - cred)) : NULL;
	tt_buf form = TT_BUF_INIT;
	tt_http_response resp;
	json_t *doc = NULL;
	int rc = 0;

	tt_http_response_init(&resp);
	if (!url || (colon && !id)) {
		rc = KOOM(err);
		goto done;
	}
	form_put(&form, "grant_type", "client_credentials");
	if (id)
		form_put(&form, "client_id", id);
	form_put(&form, "client_secret", colon ? colon + 1 : cred);
	form_put(&form, "scope", scope ? scope : "catalog");
	if (form.failed) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = rest_send(r, "POST", url, "application/x-www-form-urlencoded", form.ptr, form.len, false,
		       &resp, err)) != 0) {
		tt_error_prefix(err, "iceberg REST catalog %s: token request for %s", r->uri, ident);
		goto done;
	}
	if (resp.status != 200) {
		char *msg = server_message(&resp);
		rc = KERR(err, TT_EBACKEND,
			  "iceberg REST catalog %s: the token endpoint refused the client credentials "
			  "for %s: HTTP %ld %s; check catalog.credential (client_id:client_secret) and "
			  "catalog.oauth2-server-uri in .tether/secrets.toml",
			  r->uri, ident, resp.status, msg ? msg : "");
		free(msg);
		goto done;
	}
	doc = json_loadb(resp.body.ptr, resp.body.len, 0, NULL);
	const char *tok = json_string_value(json_object_get(doc, "access_token"));
	if (!tok || !*tok || strpbrk(tok, "\r\n")) {
		rc = KERR(err, TT_EBACKEND,
			  "iceberg REST catalog %s: the token endpoint's answer for %s has no "
			  "access_token",
			  r->uri, ident);
		goto done;
	}
	if (r->auth) {
		memset(r->auth, 0, strlen(r->auth));
		free(r->auth);
	}
	if (!(r->auth = tt_asprintf("Authorization: Bearer %s", tok)))
		rc = KOOM(err);
done:
	if (form.len)
		memset(form.ptr, 0, form.len);
	tt_buf_release(&form);
	tt_http_response_release(&resp);
	json_decref(doc);
	free(url);
	free(id);
	return rc;
}

/* An authenticated request; a 401 with client credentials fetches a new
 * token and tries once more. */
static int call(tt_iceberg_rest *r, const char *method, const char *url, const json_t *body,
		const char *ident, tt_http_response *resp, tt_error *err)
{
	tt_buf text = TT_BUF_INIT;
	int rc;
	if (body && tt_json_dump(&text, body, (tt_json_style){ -1, false, false, true }) != 0) {
		tt_buf_release(&text);
		return KOOM(err);
	}
	rc = rest_send(r, method, url, body ? "application/json" : NULL, body ? text.ptr : NULL, text.len,
		  true, resp, err);
	if (rc == 0 && resp->status == 401 && prop(r, "credential")) {
		if ((rc = fetch_token(r, ident, err)) == 0)
			rc = rest_send(r, method, url, body ? "application/json" : NULL,
				  body ? text.ptr : NULL, text.len, true, resp, err);
	}
	tt_buf_release(&text);
	return rc;
}

static int take_headers(tt_iceberg_rest *r, tt_error *err)
{
	const char *k;
	json_t *v;
	json_object_foreach(r->props, k, v) {
		if (strncmp(k, "header.", 7) != 0 || !k[7] || !json_is_string(v))
			continue;
		if (strpbrk(k, "\r\n:") || strpbrk(json_string_value(v), "\r\n"))
			return KERR(err, TT_ECONFIG, "iceberg REST catalog property %s is not a valid "
						     "header; fix it in .tether/secrets.toml", k);
		if (r->nextra == MAX_HEADERS)
			return KERR(err, TT_ECONFIG, "iceberg REST catalog: more than %d header.* "
						     "properties", MAX_HEADERS);
		if (!(r->extra[r->nextra++] = tt_asprintf("%s: %s", k + 7, json_string_value(v))))
			return KOOM(err);
	}
	return 0;
}

int tt_iceberg_rest_open(const json_t *props, const char *ident, tt_iceberg_rest **out,
			 tt_error *err)
{
	tt_iceberg_rest *r = tt_calloc(1, sizeof *r);
	tt_http_response resp;
	json_t *doc = NULL, *merged = NULL;
	char *url = NULL;
	tt_buf q = TT_BUF_INIT;
	int rc = 0;

	*out = NULL;
	tt_http_response_init(&resp);
	if (!r || !(r->props = json_deep_copy(props))) {
		free(r);
		return KOOM(err);
	}
	if ((rc = set_base(r, err)) != 0)
		goto done;
	if (strncmp(r->uri, "http://", 7) != 0 && strncmp(r->uri, "https://", 8) != 0) {
		rc = KERR(err, TT_ECONFIG,
			  "iceberg REST catalog for %s: catalog.uri must be http(s)://...; fix it in "
			  ".tether/secrets.toml under [backends.iceberg]",
			  ident);
		goto done;
	}
	{
		tt_http_opts o = { .allow_http = strncmp(r->uri, "http://", 7) == 0,
				   .ca_file = prop(r, "ssl.cabundle") };
		if ((rc = tt_http_client_new(&o, &r->http, err)) != 0)
			goto done;
	}
	if ((rc = take_headers(r, err)) != 0)
		goto done;
	r->sigv4 = prop_true(r, "rest.sigv4-enabled");
	if (r->sigv4) {
		/* signed requests carry no bearer token (pyiceberg's choice too) */
	} else if (prop(r, "credential")) {
		if ((rc = fetch_token(r, ident, err)) != 0)
			goto done;
	} else if (prop(r, "token")) {
		if (strpbrk(prop(r, "token"), "\r\n")) {
			rc = KERR(err, TT_ECONFIG, "iceberg REST catalog for %s: catalog.token is not a "
						   "valid token; fix it in .tether/secrets.toml", ident);
			goto done;
		}
		if (!(r->auth = tt_asprintf("Authorization: Bearer %s", prop(r, "token")))) {
			rc = KOOM(err);
			goto done;
		}
	}
	/* GET /v1/config[?warehouse=...]: defaults < ours < overrides. */
	if (prop(r, "warehouse")) {
		tt_buf_puts(&q, "?warehouse=");
		tt_http_uri_encode(&q, prop(r, "warehouse"), strlen(prop(r, "warehouse")), false);
	}
	if (q.failed || !(url = tt_asprintf("%s/v1/config%s", r->uri, q.len ? q.ptr : ""))) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = call(r, "GET", url, NULL, ident, &resp, err)) != 0) {
		tt_error_prefix(err, "iceberg REST catalog for %s: reading its config", ident);
		goto done;
	}
	if (resp.status != 200) {
		rc = http_error(&resp, "config for", ident, r->uri, err);
		goto done;
	}
	if (!(doc = json_loadb(resp.body.ptr, resp.body.len, 0, NULL)) || !json_is_object(doc)) {
		rc = KERR(err, TT_EBACKEND,
			  "iceberg REST catalog %s: its /v1/config answer (for %s) is not a JSON object",
			  r->uri, ident);
		goto done;
	}
	merged = json_object();
	if (!merged) {
		rc = KOOM(err);
		goto done;
	}
	const json_t *layers[] = { json_object_get(doc, "defaults"), r->props,
				   json_object_get(doc, "overrides") };
	for (size_t i = 0; i < 3; i++) {
		const char *k;
		json_t *v;
		if (!json_is_object(layers[i]))
			continue;
		json_object_foreach((json_t *)layers[i], k, v)
			if (json_is_string(v) && json_object_set(merged, k, v) != 0) {
				rc = KOOM(err);
				goto done;
			}
	}
	json_decref(r->props);
	r->props = merged;
	merged = NULL;
	rc = set_base(r, err);
done:
	tt_http_response_release(&resp);
	tt_buf_release(&q);
	json_decref(doc);
	json_decref(merged);
	free(url);
	if (rc)
		tt_iceberg_rest_close(r);
	else
		*out = r;
	return rc;
}

/* <uri>/v1/<prefix>namespaces/<ns>/tables/<name> (namespace levels joined
 * by the unit separator, as the spec says). */
static char *table_url(const tt_iceberg_rest *r, const char *ns, const char *name)
{
	tt_buf b = TT_BUF_INIT;
	tt_buf_printf(&b, "%s/v1/%snamespaces/", r->uri, r->prefix);
	for (const char *p = ns;;) {
		const char *dot = strchr(p, '.');
		size_t n = dot ? (size_t)(dot - p) : strlen(p);
		tt_http_uri_encode(&b, p, n, false);
		if (!dot)
			break;
		tt_buf_puts(&b, "%1F");
		p = dot + 1;
	}
	tt_buf_puts(&b, "/tables/");
	tt_http_uri_encode(&b, name, strlen(name), false);
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

/* A LoadTableResult into out. */
static int take_table(const tt_http_response *resp, const char *ident, const char *uri,
		      tt_iceberg_rest_table *out, tt_error *err)
{
	json_t *doc = json_loadb(resp->body.ptr, resp->body.len, 0, NULL);
	const char *loc = json_string_value(json_object_get(doc, "metadata-location"));
	const json_t *meta = json_object_get(doc, "metadata");
	int rc = 0;
	tt_iceberg_rest_table_release(out);
	if (!json_is_object(meta) || !loc || !*loc) {
		rc = KERR(err, TT_EPARSE,
			  "iceberg REST catalog %s: its answer for table %s has no metadata-location "
			  "and metadata",
			  uri, ident);
	} else if (!(out->location = tt_strdup(loc)) ||
		   tt_json_dump(&out->metadata, meta, (tt_json_style){ -1, false, false, true }) != 0) {
		rc = KOOM(err);
	}
	json_decref(doc);
	if (rc)
		tt_iceberg_rest_table_release(out);
	return rc;
}

int tt_iceberg_rest_load(tt_iceberg_rest *r, const char *ns, const char *name, const char *ident,
			 tt_iceberg_rest_table *out, tt_error *err)
{
	char *url = table_url(r, ns, name);
	tt_http_response resp;
	int rc;
	if (!url)
		return KOOM(err);
	tt_http_response_init(&resp);
	if ((rc = call(r, "GET", url, NULL, ident, &resp, err)) != 0)
		tt_error_prefix(err, "iceberg REST catalog: loading table %s", ident);
	else if (resp.status == 404) {
		/* pyiceberg's words, as tether-vcs passes them on; the hint says where. */
		char *msg = resp.body.len ? server_message(&resp) : tt_strdup("NoSuchTableError: RestError: Not Found");
		rc = KERR(err, TT_EBACKEND, "iceberg: NoSuchTableError: %s", msg ? msg : "");
		tt_error_hint(err, "table %s looked up in REST catalog %s", ident, r->uri);
		free(msg);
	}
	else if (resp.status != 200)
		rc = http_error(&resp, "load table", ident, r->uri, err);
	else
		rc = take_table(&resp, ident, r->uri, out, err);
	tt_http_response_release(&resp);
	free(url);
	return rc;
}

int tt_iceberg_rest_commit(tt_iceberg_rest *r, const char *ns, const char *name, const char *ident,
			   const json_t *requirements, const json_t *updates, bool *conflict,
			   unsigned *attempts, tt_iceberg_rest_table *out, tt_error *err)
{
	char *url = table_url(r, ns, name);
	json_t *body = json_pack("{s:O, s:O}", "requirements", requirements, "updates", updates);
	tt_http_response resp;
	int rc;
	*conflict = false;
	*attempts = 0;
	tt_http_response_init(&resp);
	if (!url || !body) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = call(r, "POST", url, body, ident, &resp, err)) != 0) {
		tt_error_prefix(err, "iceberg REST catalog: committing to table %s (its state is "
				     "unknown: run status)", ident);
		goto done;
	}
	*attempts = resp.attempts;
	if (resp.status == 409) {
		char *msg = server_message(&resp);
		*conflict = true;
		KERR(err, TT_EREFMOVED, "iceberg table %s moved meanwhile (REST catalog %s: %s)", ident,
		     r->uri, msg ? msg : "");
		free(msg);
	} else if (resp.status != 200) {
		rc = http_error(&resp, "commit to table", ident, r->uri, err);
		if (resp.status >= 500)
			tt_error_prefix(err, "the catalog may or may not have applied it (run "
					     "`tether status` to see)");
	} else
		rc = take_table(&resp, ident, r->uri, out, err);
done:
	tt_http_response_release(&resp);
	json_decref(body);
	free(url);
	return rc;
}
