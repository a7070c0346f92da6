/*
 * storage/gcs_auth.c - service-account JWTs and their access tokens (see
 * gcs_auth.h).
 *
 * The JWT's header and claims are serialised as Google's Python library
 * serialises them (the same members in the same order, ", " and ": "
 * separators), so for the same issue time both produce the same bytes and,
 * RS256 being deterministic, the same signature: the tests hold us to it.
 */
#include "storage/gcs_auth.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/crypto_api.h"
#include "util/mem.h"

struct tt_gcs_token_source {
	char *where;       /* the key file, for errors */
	char *email;
	char *key_id;      /* NULL: none in the file */
	char *token_uri;
	char *cache_id;    /* token_uri \n email \n key_id */
	EVP_PKEY *key;
	tt_http_client *http;
};

/* ---- the process's tokens ------------------------------------------------------- */

typedef struct cached_token {
	char *id;
	char *header;      /* "Authorization: Bearer ..." */
	long long expires; /* epoch seconds */
} cached_token;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static cached_token *cache;
static size_t ncache, cache_alloc;

static void wipe_free(char *s)
{
	if (s) {
		memset(s, 0, strlen(s));
		free(s);
	}
}

static cached_token *cache_find(const char *id)
{
	for (size_t i = 0; i < ncache; i++)
		if (strcmp(cache[i].id, id) == 0)
			return &cache[i];
	return NULL;
}

/* ---- JWT --------------------------------------------------------------------------- */

/* base64url without padding of n bytes, appended to b. */
static void b64url(tt_buf *b, const unsigned char *p, size_t n)
{
	size_t cap = 4 * ((n + 2) / 3) + 1;
	unsigned char *o = tt_malloc(cap);
	int len;
	if (!o) {
		b->failed = TT_ENOMEM;
		return;
	}
	len = EVP_EncodeBlock(o, p, (int)n);
	while (len > 0 && o[len - 1] == '=')
		len--;
	for (int i = 0; i < len; i++)
		if (o[i] == '+')
			o[i] = '-';
		else if (o[i] == '/')
			o[i] = '_';
	tt_buf_put(b, o, (size_t)len);
	free(o);
}

static void b64url_json(tt_buf *b, json_t *j)
{
	/* Python's json.dumps: ", " and ": ", non-ASCII as \u escapes */
	char *s = j ? json_dumps(j, JSON_ENSURE_ASCII) : NULL;
	if (!s) {
		b->failed = TT_ENOMEM;
		return;
	}
	b64url(b, (const unsigned char *)s, strlen(s));
	free(s);
}

int tt_gcs_jwt_assertion(const tt_gcs_token_source *ts, long long now, char **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	json_t *hdr = json_object(), *claims = json_object();
	EVP_MD_CTX *md = NULL;
	unsigned char *sig = NULL;
	size_t siglen = 0;
	int rc = 0;

	*out = NULL;
	if (!hdr || !claims ||
	    json_object_set_new(hdr, "typ", json_string("JWT")) ||
	    json_object_set_new(hdr, "alg", json_string("RS256")) ||
	    (ts->key_id && json_object_set_new(hdr, "kid", json_string(ts->key_id))) ||
	    json_object_set_new(claims, "iat", json_integer(now)) ||
	    json_object_set_new(claims, "exp", json_integer(now + 3600)) ||
	    json_object_set_new(claims, "iss", json_string(ts->email)) ||
	    json_object_set_new(claims, "aud", json_string(TT_GCS_TOKEN_AUDIENCE)) ||
	    json_object_set_new(claims, "scope", json_string(TT_GCS_SCOPE))) {
		rc = tt_error_oom(err);
		goto done;
	}
	b64url_json(&b, hdr);
	tt_buf_putc(&b, '.');
	b64url_json(&b, claims);
	if (b.failed) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!(md = EVP_MD_CTX_new()) || EVP_DigestSignInit(md, NULL, EVP_sha256(), NULL, ts->key) != 1 ||
	    EVP_DigestSign(md, NULL, &siglen, (const unsigned char *)b.ptr, b.len) != 1 ||
	    !(sig = tt_malloc(siglen ? siglen : 1)) ||
	    EVP_DigestSign(md, sig, &siglen, (const unsigned char *)b.ptr, b.len) != 1) {
		rc = tt_error_set(err, TT_EBACKEND,
				  "%s: OpenSSL could not sign the service account's token request "
				  "with its private key", ts->where);
		goto done;
	}
	tt_buf_putc(&b, '.');
	b64url(&b, sig, siglen);
	tt_buf_puts(&b, "");
	if (b.failed)
		rc = tt_error_oom(err);
	else
		*out = tt_buf_detach(&b);
done:
	free(sig);
	EVP_MD_CTX_free(md);
	json_decref(hdr);
	json_decref(claims);
	tt_buf_release(&b);
	return rc;
}

/* ---- the token endpoint ------------------------------------------------------------ */

static bool token_ok(const char *t)
{
	if (!t || !*t || strlen(t) > 8192)
		return false;
	for (const char *p = t; *p; p++)
		if (*p <= ' ' || *p > '~')
			return false;
	return true;
}

/* POST the grant; *header and *expires from the answer. */
static int fetch_token(tt_gcs_token_source *ts, char **header, long long *expires, tt_error *err)
{
	static const char *const hdrs[] = { "Content-Type: application/x-www-form-urlencoded",
					    "Accept: application/json", NULL };
	long long now = (long long)time(NULL);
	char *jwt = NULL, *body = NULL;
	tt_http_response r;
	json_t *j = NULL;
	int rc;

	*header = NULL;
	if ((rc = tt_gcs_jwt_assertion(ts, now, &jwt, err)) != 0)
		return rc;
	body = tt_asprintf("grant_type=urn%%3Aietf%%3Aparams%%3Aoauth%%3Agrant-type%%3Ajwt-bearer"
			   "&assertion=%s", jwt);
	wipe_free(jwt);
	if (!body)
		return tt_error_oom(err);
	tt_http_response_init(&r);
	tt_http_request req = { .method = "POST", .url = ts->token_uri, .headers = hdrs,
				.body = body, .body_len = strlen(body) };
	rc = tt_http_do(ts->http, &req, &r, err);
	wipe_free(body);
	if (rc) {
		tt_error_prefix(err, "the token endpoint of the service account in %s", ts->where);
		goto done;
	}
	if (r.body.len)
		j = json_loadb(r.body.ptr, r.body.len, 0, NULL);
	if (r.status != 200) {
		const char *code = json_string_value(json_object_get(j, "error"));
		const char *desc = json_string_value(json_object_get(j, "error_description"));
		rc = tt_error_set(err, TT_EBACKEND,
				  "the token endpoint %s refused the service account %s (key file %s): "
				  "HTTP %ld%s%s%s%s; check that the key file is current and the "
				  "account is enabled",
				  ts->token_uri, ts->email, ts->where, r.status, code ? " " : "",
				  code ? code : "", desc ? ": " : "", desc ? desc : "");
		goto done;
	}
	{
		json_t *at = json_object_get(j, "access_token"), *ei = json_object_get(j, "expires_in");
		long long life = json_is_integer(ei) ? json_integer_value(ei)
				 : json_is_real(ei)  ? (long long)json_real_value(ei)
				 : json_is_string(ei) ? atoll(json_string_value(ei)) : 3600;
		if (!json_is_string(at) || !token_ok(json_string_value(at))) {
			rc = tt_error_set(err, TT_EBACKEND,
					  "the token endpoint %s answered the service account %s (key "
					  "file %s) without a usable access_token", ts->token_uri,
					  ts->email, ts->where);
			goto done;
		}
		if (!(*header = tt_asprintf("Authorization: Bearer %s", json_string_value(at)))) {
			rc = tt_error_oom(err);
			goto done;
		}
		*expires = now + (life > 0 ? life : 0);
	}
done:
	if (j) {
		json_t *at = json_object_get(j, "access_token");
		if (json_is_string(at))
			memset((char *)json_string_value(at), 0, json_string_length(at));
		json_decref(j);
	}
	if (r.body.ptr)
		memset(r.body.ptr, 0, r.body.len);
	tt_http_response_release(&r);
	return rc;
}

int tt_gcs_token_header(tt_gcs_token_source *ts, const char *stale, char **header, tt_error *err)
{
	cached_token *c;
	long long now = (long long)time(NULL), exp = 0;
	char *h = NULL;
	int rc = 0;

	*header = NULL;
	pthread_mutex_lock(&cache_lock);
	c = cache_find(ts->cache_id);
	if (c && c->expires - now > TT_GCS_REFRESH_S && !(stale && strcmp(stale, c->header) == 0)) {
		if (!(*header = tt_strdup(c->header)))
			rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = fetch_token(ts, &h, &exp, err)) != 0)
		goto done;
	if (!c) {
		char *id = tt_strdup(ts->cache_id);
		if (!id || TT_ARRAY_GROW(cache, cache_alloc, ncache + 1) != 0) {
			free(id);
			wipe_free(h);
			rc = tt_error_oom(err);
			goto done;
		}
		c = &cache[ncache++];
		c->id = id;
		c->header = NULL;
	}
	wipe_free(c->header);
	c->header = h;
	c->expires = exp;
	if (!(*header = tt_strdup(h)))
		rc = tt_error_oom(err);
done:
	pthread_mutex_unlock(&cache_lock);
	return rc;
}

/* ---- the key file ------------------------------------------------------------------ */

/* An encrypted key is refused, never asked a passphrase for on the terminal. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return 0;
}

void tt_gcs_token_source_free(tt_gcs_token_source *ts)
{
	if (!ts)
		return;
	if (ts->key)
		EVP_PKEY_free(ts->key);
	tt_http_client_free(ts->http);
	free(ts->where);
	free(ts->email);
	free(ts->key_id);
	free(ts->token_uri);
	free(ts->cache_id);
	free(ts);
}

int tt_gcs_token_source_new(const json_t *sa, const char *where, const tt_http_opts *http,
			    tt_gcs_token_source **out, tt_error *err)
{
	const char *email = json_string_value(json_object_get(sa, "client_email"));
	const char *pem = json_string_value(json_object_get(sa, "private_key"));
	const char *kid = json_string_value(json_object_get(sa, "private_key_id"));
	const char *uri = json_string_value(json_object_get(sa, "token_uri"));
	const char *type = json_string_value(json_object_get(sa, "type"));
	tt_gcs_token_source *ts;
	BIO *bio;
	int rc;

	*out = NULL;
	if (type && strcmp(type, "service_account") != 0)
		return tt_error_set(err, TT_ECONFIG,
				    "%s: a key file of type '%s' is not a service account's; give the "
				    "JSON key of a service account (type \"service_account\")",
				    where, type);
	if (!email || !*email || !pem || !*pem)
		return tt_error_set(err, TT_ECONFIG,
				    "%s: a service-account key file needs client_email and private_key; "
				    "download the account's JSON key again", where);
	if (!uri || !*uri)
		uri = TT_GCS_TOKEN_AUDIENCE;
	if (strncmp(uri, "https://", 8) != 0 && !(http->allow_http && strncmp(uri, "http://", 7) == 0))
		return tt_error_set(err, TT_ECONFIG,
				    "%s: the token_uri %s is not https:// (plain http only with "
				    "allow_http)", where, uri);
	if ((rc = tt_crypto_load(err)) != 0)
		return rc;
	if (!(ts = tt_calloc(1, sizeof *ts)))
		return tt_error_oom(err);
	ts->where = tt_strdup(where);
	ts->email = tt_strdup(email);
	ts->key_id = kid && *kid ? tt_strdup(kid) : NULL;
	ts->token_uri = tt_strdup(uri);
	ts->cache_id = tt_asprintf("%s\n%s\n%s", uri, email, kid ? kid : "");
	if (!ts->where || !ts->email || (kid && *kid && !ts->key_id) || !ts->token_uri ||
	    !ts->cache_id) {
		tt_gcs_token_source_free(ts);
		return tt_error_oom(err);
	}
	if ((bio = BIO_new_mem_buf(pem, -1)) != NULL) {
		ts->key = PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL);
		BIO_free(bio);
	}
	if (!ts->key || EVP_PKEY_get_base_id(ts->key) != EVP_PKEY_RSA) {
		tt_gcs_token_source_free(ts);
		return tt_error_set(err, TT_ECONFIG,
				    "%s: the private_key of service account %s is not an RSA private "
				    "key in PEM form; download the account's JSON key again",
				    where, email);
	}
	if ((rc = tt_http_client_new(http, &ts->http, err)) != 0) {
		tt_gcs_token_source_free(ts);
		return rc;
	}
	*out = ts;
	return 0;
}
