/*
 * storage/s3.c - the store interface on S3 (see s3.h): how S3 spells a
 * request (SigV4, path-style or virtual-hosted), lists (ListObjectsV2) and
 * words its errors; the rest is the object-store skeleton (objstore.h).
 *
 * Every call is one signed request through the shared HTTP client (whose
 * retries cover 429/5xx/resets); the store holds no mutable state after
 * open but its temporary keys (renewed under a lock), so one store serves
 * many threads.  412 on If-None-Match is an existing object, 412/409 on
 * If-Match one that moved; a retried conditional PUT is checked against
 * the blob's MD5 ETag.
 */
#define _GNU_SOURCE
#include "storage/s3.h"
#include "storage/objstore.h"
#include "storage/xml.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <pthread.h>

#include "util/crypto_api.h"
#include "util/mem.h"

typedef struct s3_impl {
	tt_objstore os;  /* first: the skeleton's part */
	char *bucket, *region, *scheme, *host;
	bool vhost;
	char *ak, *sk, *tok;
	/* Temporary keys: asked for again shortly before they expire. */
	long long expires;
	tt_s3_refresh_fn refresh;
	void *refresh_ctx;
	void (*refresh_free)(void *ctx);
	pthread_mutex_t creds_lock;
} s3_impl;

#define IM(s) ((s3_impl *)(s)->impl)

/* ---- requests -------------------------------------------------------------------- */

typedef struct call {
	const char *method;
	const char *key;               /* the full object key; NULL: the bucket */
	const tt_sigv4_param *query;
	size_t nquery;
	const char *const *headers;
	const void *body;
	size_t len;
} call;

static void wipe(char *ak, char *sk, char *tok)
{
	free(ak);
	if (sk) {
		memset(sk, 0, strlen(sk));
		free(sk);
	}
	if (tok) {
		memset(tok, 0, strlen(tok));
		free(tok);
	}
}

/* Copies of the keys to sign one request with, fetched anew when they
 * expire within five minutes (several threads may share the store). */
static int take_creds(tt_store *s, char **ak, char **sk, char **tok, tt_error *err)
{
	s3_impl *im = IM(s);
	int rc = 0;
	pthread_mutex_lock(&im->creds_lock);
	if (im->refresh && im->expires && (long long)time(NULL) > im->expires - 300) {
		char *nak = NULL, *nsk = NULL, *ntok = NULL;
		long long nexp = 0;
		rc = im->refresh(im->refresh_ctx, &nak, &nsk, &ntok, &nexp, err);
		if (rc == 0) {
			wipe(im->ak, im->sk, im->tok);
			im->ak = nak;
			im->sk = nsk;
			im->tok = ntok;
			im->expires = nexp;
		} else {
			tt_error_prefix(err, "%s: renewing its temporary credentials", s->display);
		}
	}
	if (rc == 0) {
		*ak = im->ak ? tt_strdup(im->ak) : NULL;
		*sk = im->sk ? tt_strdup(im->sk) : NULL;
		*tok = im->tok ? tt_strdup(im->tok) : NULL;
		if ((im->ak && !*ak) || (im->sk && !*sk) || (im->tok && !*tok)) {
			wipe(*ak, *sk, *tok);
			*ak = *sk = *tok = NULL;
			rc = tt_error_oom(err);
		}
	}
	pthread_mutex_unlock(&im->creds_lock);
	return rc;
}

/* Nothing in the chain gave keys (tt_aws_resolve): where they go, as
 * docs/object-stores.md says. */
static int no_creds(tt_store *s, tt_error *err)
{
	return tt_error_set(err, TT_ECONFIG,
			    "%s: no AWS credentials to sign with: set access_key_id and "
			    "secret_access_key (or profile) under [uris.\"s3://%s/\"] in "
			    ".tether/secrets.toml, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or "
			    "AWS_PROFILE) in the environment", s->display, IM(s)->bucket);
}

static int s3_do(tt_store *s, const call *c, tt_http_response *resp, tt_error *err)
{
	s3_impl *im = IM(s);
	char *host = im->vhost ? tt_asprintf("%s.%s", im->bucket, im->host) : tt_strdup(im->host);
	char *path = im->vhost ? tt_asprintf("/%s", c->key ? c->key : "")
			       : c->key ? tt_asprintf("/%s/%s", im->bucket, c->key)
					: tt_asprintf("/%s", im->bucket);
	char *ak = NULL, *sk = NULL, *tok = NULL;
	int rc = take_creds(s, &ak, &sk, &tok, err);
	if (rc == 0 && (!ak || !*ak || !sk || !*sk))
		rc = no_creds(s, err);
	if (rc) {
		free(host);
		free(path);
		wipe(ak, sk, tok);
		return rc;
	}
	tt_aws_creds cr = { ak, sk, tok };
	tt_sigv4_input in = { .method = c->method, .scheme = im->scheme, .host = host, .path = path,
			      .query = c->query, .nquery = c->nquery, .headers = c->headers,
			      .body = c->body, .body_len = c->len, .region = im->region,
			      .service = "s3" };
	tt_sigv4_out so;
	if (!host || !path) {
		free(host);
		free(path);
		wipe(ak, sk, tok);
		return tt_error_oom(err);
	}
	rc = tt_sigv4_sign(&in, &cr, &so, err);
	wipe(ak, sk, tok);
	if (rc == 0) {
		tt_http_request req = { .method = c->method, .url = so.url,
					.headers = (const char *const *)so.headers, .body = c->body,
					.body_len = c->len };
		rc = tt_http_do(im->os.http, &req, resp, err);
		tt_sigv4_out_release(&so);
	}
	if (rc)
		tt_error_prefix(err, "%s", s->display);
	free(host);
	free(path);
	return rc;
}

/* What to do about a failure the server named. */
static const char *s3_fix(long status, const char *code)
{
	if (code && (!strcmp(code, "ExpiredToken") || !strcmp(code, "TokenRefreshRequired") ||
		     !strcmp(code, "RequestExpired")))
		return "; the credentials have expired: renew them (the session_token, profile or "
		       "role for this store in .tether/secrets.toml, or the AWS environment) and run "
		       "the command again";
	if (status == 403)
		return "; check the credentials for this store in .tether/secrets.toml";
	if (status == 301 || status == 400)
		return "; check the store's region and endpoint";
	return "";
}

/* One object request, as S3 spells it. */
static int s3_send(tt_store *s, const tt_objstore_req *q, tt_http_response *r, tt_error *err)
{
	tt_sigv4_param query[] = { { "versionId", q->version } };
	char h[2][300];
	const char *hdrs[3] = { NULL };
	size_t nh = 0;
	if (q->range) {
		snprintf(h[nh], sizeof h[nh], "Range: %s", q->range);
		hdrs[nh] = h[nh];
		nh++;
	}
	if (q->cond == TT_STORE_PUT_IF_ABSENT) {
		snprintf(h[nh], sizeof h[nh], "If-None-Match: *");
		hdrs[nh] = h[nh];
		nh++;
	} else if (q->cond == TT_STORE_PUT_IF_MATCH) {
		snprintf(h[nh], sizeof h[nh], "If-Match: \"%s\"", q->etag);
		hdrs[nh] = h[nh];
		nh++;
	}
	call c = { .method = q->method, .key = q->key, .query = query, .nquery = q->version ? 1 : 0,
		   .headers = nh ? hdrs : NULL, .body = q->body, .len = q->len };
	return s3_do(s, &c, r, err);
}

static bool s3_lost(long status, tt_store_cond cond)
{
	return (cond == TT_STORE_PUT_IF_ABSENT && status == 412) ||
	       (cond == TT_STORE_PUT_IF_MATCH && (status == 412 || status == 409));
}

static void md5_hex(char out[33], const void *data, size_t len)
{
	unsigned char d[16];
	unsigned int n = 16;
	EVP_Digest(data, len, d, &n, EVP_md5(), NULL);
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void s3_impl_free(void *p);

static const tt_objstore_driver s3_driver = {
	.noun = "object",
	.version_word = "version",
	.version_header = "x-amz-version-id",
	.send = s3_send,
	.etag_of = md5_hex,
	.lost = s3_lost,
	.fix = s3_fix,
	.free = s3_impl_free,
};

/* ---- listings -------------------------------------------------------------------- */

static const tt_objstore_listing s3_listing = {
	.entry = "Contents", .key = "Key", .etag = "ETag", .size = "Size", .mtime = "LastModified",
	.iso_mtime = true, .truncated = "IsTruncated", .next = "NextContinuationToken",
};

static int s3_list_any(tt_store *s, const char *prefix, const char *token, const char *after,
		       size_t max_keys, tt_store_page *out, tt_error *err)
{
	tt_http_response r;
	char maxk[24], *fp = tt_objstore_full_key(s, prefix);
	char *fa = after ? tt_objstore_full_key(s, after) : NULL;
	tt_sigv4_param q[5] = { { "list-type", "2" }, { "prefix", fp }, { "max-keys", maxk } };
	size_t nq = 3;
	call c = { .method = "GET", .query = q };
	int rc;

	if (!fp || (after && !fa)) {
		free(fp);
		return tt_error_oom(err);
	}
	snprintf(maxk, sizeof maxk, "%zu", max_keys > 1000 ? (size_t)1000 : max_keys);
	if (token)
		q[nq++] = (tt_sigv4_param){ "continuation-token", token };
	if (fa)
		q[nq++] = (tt_sigv4_param){ "start-after", fa };
	c.nquery = nq;
	tt_http_response_init(&r);
	rc = s3_do(s, &c, &r, err);
	if (rc == 0 && r.status != 200)
		rc = tt_objstore_fail(s, "list", prefix[0] ? prefix : NULL, &r, err);
	if (rc == 0)
		rc = tt_objstore_parse_listing(s, &s3_listing, &r, NULL, 0, NULL, out, NULL, err);
	tt_http_response_release(&r);
	free(fp);
	free(fa);
	return rc;
}

static int s3_list(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		   tt_store_page *out, tt_error *err)
{
	return s3_list_any(s, prefix, token, NULL, max_keys, out, err);
}

static int s3_list_after(tt_store *s, const char *prefix, const char *after, size_t max_keys,
			 tt_store_page *out, tt_error *err)
{
	memset(out, 0, sizeof *out);
	return s3_list_any(s, prefix, NULL, after, max_keys, out, err);
}

/* ---- open ------------------------------------------------------------------------ */

static void s3_impl_free(void *p)
{
	s3_impl *im = p;
	free(im->bucket);
	free(im->region);
	free(im->scheme);
	free(im->host);
	wipe(im->ak, im->sk, im->tok);
	if (im->refresh_free)
		im->refresh_free(im->refresh_ctx);
	pthread_mutex_destroy(&im->creds_lock);
	free(im);
}

static const tt_store_ops s3_ops = TT_OBJSTORE_OPS(s3_list, s3_list_after);

static char *dup_or_null(const char *s, bool *oom)
{
	char *d;
	if (!s || !*s)
		return NULL;
	if (!(d = tt_strdup(s)))
		*oom = true;
	return d;
}

/* A store handle on cfg without the versioning lookup. */
/* The refresher's context belongs to the store only from tt_store_s3_open;
 * the administration calls build with it left out. */
static int s3_build(const tt_s3_config *cfg, tt_store **out, tt_error *err)
{
	tt_store *s = NULL;
	s3_impl *im = NULL;
	bool oom = false;
	const char *region = cfg->region && *cfg->region ? cfg->region : "us-east-1";
	int rc;

	*out = NULL;
	if (!cfg->bucket || !*cfg->bucket || strchr(cfg->bucket, '/')) {
		if (cfg->refresh_free)
			cfg->refresh_free(cfg->refresh_ctx);
		return tt_error_set(err, TT_ECONFIG, "s3: a store needs a bucket name (s3://<bucket>/...)");
	}
	if (!(s = tt_calloc(1, sizeof *s)) || !(im = tt_calloc(1, sizeof *im))) {
		free(s);
		if (cfg->refresh_free)
			cfg->refresh_free(cfg->refresh_ctx);
		return tt_error_oom(err);
	}
	pthread_mutex_init(&im->creds_lock, NULL);
	im->os.drv = &s3_driver;
	im->refresh = cfg->refresh;
	im->refresh_ctx = cfg->refresh_ctx;
	im->refresh_free = cfg->refresh_free;
	s->impl = im;
	s->ops = &s3_ops;
	s->kind = TT_STORE_S3;
	im->bucket = dup_or_null(cfg->bucket, &oom);
	im->region = dup_or_null(region, &oom);
	im->os.prefix = tt_objstore_prefix(cfg->prefix);
	s->display = tt_asprintf("s3://%s/%s", cfg->bucket, im->os.prefix ? im->os.prefix : "");
	im->vhost = cfg->virtual_hosted;
	if (cfg->endpoint && *cfg->endpoint) {
		const char *e = cfg->endpoint, *h = strstr(e, "://");
		size_t hl;
		if (!h || (strncasecmp(e, "http://", 7) != 0 && strncasecmp(e, "https://", 8) != 0)) {
			tt_objstore_close(s);
			return tt_error_set(err, TT_ECONFIG,
					    "s3: endpoint must be http(s)://host[:port], not '%s'", e);
		}
		im->scheme = tt_strndup(e, (size_t)(h - e));
		h += 3;
		hl = strcspn(h, "/?#");
		im->host = tt_strndup(h, hl);
		if (im->scheme)
			for (char *p = im->scheme; *p; p++)
				*p = (char)tolower((unsigned char)*p);
		/* the Host header has no default port */
		if (im->host && im->scheme) {
			size_t n = strlen(im->host);
			const char *dp = strcmp(im->scheme, "https") == 0 ? ":443" : ":80";
			if (n > strlen(dp) && strcmp(im->host + n - strlen(dp), dp) == 0)
				im->host[n - strlen(dp)] = '\0';
		}
	} else {
		im->scheme = tt_strdup("https");
		im->host = tt_asprintf("s3.%s.amazonaws.com", region);
	}
	im->ak = dup_or_null(cfg->creds.access_key_id, &oom);
	im->sk = dup_or_null(cfg->creds.secret_access_key, &oom);
	im->tok = dup_or_null(cfg->creds.session_token, &oom);
	im->expires = cfg->expires;
	if (oom || !im->os.prefix || !s->display || !im->scheme || !im->host) {
		tt_objstore_close(s);
		return tt_error_oom(err);
	}
	if ((rc = tt_crypto_load(err)) != 0 || (rc = tt_http_client_new(&cfg->http, &im->os.http, err)) != 0) {
		tt_objstore_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* A bucket-level request: ?name (versioning, ...) with an optional body. */
static int bucket_call(tt_store *s, const char *method, const char *sub, const char *body,
		       tt_http_response *r, tt_error *err)
{
	tt_sigv4_param q[] = { { sub, "" } };
	call c = { .method = method, .query = q, .nquery = sub ? 1 : 0, .body = body,
		   .len = body ? strlen(body) : 0 };
	return s3_do(s, &c, r, err);
}

int tt_store_s3_open(const tt_s3_config *cfg, tt_store **out, tt_error *err)
{
	tt_store *s;
	tt_http_response r;
	int rc = s3_build(cfg, &s, err);
	if (rc)
		return rc;
	tt_http_response_init(&r);
	rc = bucket_call(s, "GET", "versioning", NULL, &r, err);
	if (rc == 0) {
		const char *vs, *ve;
		if (r.status == 200)
			s->versioned = tt_xml_find(r.body.ptr, r.body.ptr + r.body.len, "Status", &vs, &ve,
						NULL) && ve - vs == 7 && memcmp(vs, "Enabled", 7) == 0;
		else if (r.status == 404)
			rc = tt_objstore_fail(s, "open bucket", NULL, &r, err);
		/* 403 and the like: we may not ask; reads at a version stay refused */
	}
	tt_http_response_release(&r);
	if (rc) {
		tt_objstore_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

/* cfg without its renewal: the administration calls build a store of their own. */
static tt_s3_config plain_config(const tt_s3_config *cfg)
{
	tt_s3_config plain = *cfg;
	plain.refresh = NULL;
	plain.refresh_ctx = NULL;
	plain.refresh_free = NULL;
	plain.expires = 0;
	return plain;
}

int tt_s3_create_bucket(const tt_s3_config *cfg, tt_error *err)
{
	tt_store *s;
	tt_http_response r;
	char *body = NULL;
	tt_s3_config plain = plain_config(cfg);
	int rc = s3_build(&plain, &s, err);
	if (rc)
		return rc;
	if (strcmp(IM(s)->region, "us-east-1") != 0)
		body = tt_asprintf("<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/"
				   "2006-03-01/\"><LocationConstraint>%s</LocationConstraint>"
				   "</CreateBucketConfiguration>", IM(s)->region);
	tt_http_response_init(&r);
	rc = bucket_call(s, "PUT", NULL, body, &r, err);
	if (rc == 0 && r.status != 200) {
		const char *cs, *ce;
		bool ours = r.status == 409 && tt_xml_find(r.body.ptr, r.body.ptr + r.body.len, "Code",
							&cs, &ce, NULL) &&
			    (size_t)(ce - cs) == strlen("BucketAlreadyOwnedByYou") &&
			    memcmp(cs, "BucketAlreadyOwnedByYou", (size_t)(ce - cs)) == 0;
		if (!ours)
			rc = tt_objstore_fail(s, "create bucket", NULL, &r, err);
	}
	tt_http_response_release(&r);
	free(body);
	tt_objstore_close(s);
	return rc;
}

int tt_s3_enable_versioning(const tt_s3_config *cfg, tt_error *err)
{
	tt_store *s;
	tt_http_response r;
	tt_s3_config plain = plain_config(cfg);
	int rc = s3_build(&plain, &s, err);
	if (rc)
		return rc;
	tt_http_response_init(&r);
	rc = bucket_call(s, "PUT", "versioning",
			 "<VersioningConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
			 "<Status>Enabled</Status></VersioningConfiguration>",
			 &r, err);
	if (rc == 0 && r.status != 200)
		rc = tt_objstore_fail(s, "enable versioning on", NULL, &r, err);
	tt_http_response_release(&r);
	tt_objstore_close(s);
	return rc;
}
