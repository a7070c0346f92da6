/*
 * storage/s3.c - the store interface on S3 (see s3.h).
 *
 * Every call is one signed request through the shared HTTP client (whose
 * retries cover 429/5xx/resets); the store holds no mutable state after
 * open, so one store serves many threads.  Responses are mapped onto the
 * store's codes: 404 -> TT_ENOTFOUND, 412 on If-None-Match -> TT_EEXISTS,
 * 412/409 on If-Match -> TT_EREFMOVED.  A conditional PUT that the client
 * had to retry and that then fails its precondition is checked against the
 * blob's MD5 ETag: if the blob now holds exactly our bytes, the first
 * attempt won and the write succeeded.
 */
#define _GNU_SOURCE
#include "storage/s3.h"
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
	char *bucket, *prefix, *region, *scheme, *host;
	bool vhost;
	char *ak, *sk, *tok;
	/* Temporary keys: asked for again shortly before they expire. */
	long long expires;
	tt_s3_refresh_fn refresh;
	void *refresh_ctx;
	void (*refresh_free)(void *ctx);
	pthread_mutex_t creds_lock;
	tt_http_client *http;
} s3_impl;

#define IM(s) ((s3_impl *)(s)->impl)

/* ---- small XML reading ---------------------------------------------------------- */

static int64_t parse_time(const char *v, bool iso)
{
	struct tm tm;
	const char *end;
	int64_t ms = 0;
	memset(&tm, 0, sizeof tm);
	if (!v)
		return 0;
	end = strptime(v, iso ? "%Y-%m-%dT%H:%M:%S" : "%a, %d %b %Y %H:%M:%S", &tm);
	if (!end)
		return 0;
	if (iso && *end == '.')
		ms = strtol(end + 1, NULL, 10);
	return ((int64_t)timegm(&tm) * 1000 + ms) * 1000000;
}

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

static int s3_do(tt_store *s, const call *c, tt_http_response *resp, tt_error *err)
{
	s3_impl *im = IM(s);
	char *host = im->vhost ? tt_asprintf("%s.%s", im->bucket, im->host) : tt_strdup(im->host);
	char *path = im->vhost ? tt_asprintf("/%s", c->key ? c->key : "")
			       : c->key ? tt_asprintf("/%s/%s", im->bucket, c->key)
					: tt_asprintf("/%s", im->bucket);
	char *ak = NULL, *sk = NULL, *tok = NULL;
	int rc = take_creds(s, &ak, &sk, &tok, err);
	if (rc) {
		free(host);
		free(path);
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
		rc = tt_http_do(im->http, &req, resp, err);
		tt_sigv4_out_release(&so);
	}
	if (rc)
		tt_error_prefix(err, "%s", s->display);
	free(host);
	free(path);
	return rc;
}

/* The error for a response we did not expect: the server's code and message. */
static int s3_fail(tt_store *s, const char *what, const char *key, const tt_http_response *r,
		   tt_error *err)
{
	const char *end = r->body.ptr + r->body.len, *cs, *ce, *ms, *me;
	char *code = NULL, *msg = NULL;
	const char *fix = "";
	int rc = TT_EBACKEND;
	if (tt_xml_find(r->body.ptr, end, "Code", &cs, &ce, NULL))
		code = tt_xml_text(cs, ce);
	if (tt_xml_find(r->body.ptr, end, "Message", &ms, &me, NULL))
		msg = tt_xml_text(ms, me);
	if (code && (!strcmp(code, "ExpiredToken") || !strcmp(code, "TokenRefreshRequired") ||
		     !strcmp(code, "RequestExpired")))
		fix = "; the credentials have expired: renew them (the session_token, profile or "
		      "role for this store in .tether/secrets.toml, or the AWS environment) and run "
		      "the command again";
	else if (r->status == 403)
		fix = "; check the credentials for this store in .tether/secrets.toml";
	else if (r->status == 404)
		rc = TT_ENOTFOUND;
	else if (r->status == 301 || r->status == 400)
		fix = "; check the store's region and endpoint";
	tt_error_set(err, rc, "%s: %s%s%s%s: HTTP %ld%s%s%s%s%s", s->display, what, key ? " '" : "",
		     key ? key : "", key ? "'" : "", r->status, code ? " " : "", code ? code : "",
		     msg ? ": " : "", msg ? msg : "", fix);
	free(code);
	free(msg);
	return rc;
}

static char *full_key(tt_store *s, const char *key)
{
	return tt_asprintf("%s%s", IM(s)->prefix, key);
}

static int meta_from_headers(const tt_http_response *r, uint64_t size, tt_store_meta *m,
			     tt_error *err)
{
	const char *v = tt_http_response_header(r, "x-amz-version-id");
	m->size = size;
	m->etag = tt_xml_unquote(tt_http_response_header(r, "ETag"));
	if (v && *v && strcmp(v, "null") != 0 && !(m->version = tt_strdup(v)))
		return tt_error_oom(err);
	m->mtime_ns = parse_time(tt_http_response_header(r, "Last-Modified"), false);
	if (tt_http_response_header(r, "ETag") && !m->etag)
		return tt_error_oom(err);
	return 0;
}

static int not_found(tt_store *s, const char *key, const char *version, tt_error *err)
{
	return tt_error_set(err, TT_ENOTFOUND, "%s: no object '%s'%s%s", s->display, key,
			    version ? " at version " : "", version ? version : "");
}

/* ---- reads ----------------------------------------------------------------------- */

static int s3_head(tt_store *s, const char *key, const char *version, tt_store_meta *out,
		   tt_error *err)
{
	tt_http_response r;
	tt_sigv4_param q[] = { { "versionId", version } };
	char *fk = full_key(s, key);
	call c = { .method = "HEAD", .key = fk, .query = q, .nquery = version ? 1 : 0 };
	int rc;
	if (!fk)
		return tt_error_oom(err);
	tt_http_response_init(&r);
	rc = s3_do(s, &c, &r, err);
	if (rc == 0) {
		if (r.status == 200) {
			const char *cl = tt_http_response_header(&r, "Content-Length");
			rc = meta_from_headers(&r, cl ? strtoull(cl, NULL, 10) : 0, out, err);
		} else if (r.status == 404 || (version && r.status == 400)) {
			rc = not_found(s, key, version, err);
		} else {
			rc = s3_fail(s, "head", key, &r, err);
		}
	}
	tt_http_response_release(&r);
	free(fk);
	return rc;
}

/* GET key, with an optional Range; status must be in ok[]. */
static int s3_get_any(tt_store *s, const char *key, const char *version, const char *range,
		      tt_http_response *r, tt_error *err)
{
	tt_sigv4_param q[] = { { "versionId", version } };
	const char *hdrs[] = { range, NULL };
	char *fk = full_key(s, key);
	call c = { .method = "GET", .key = fk, .query = q, .nquery = version ? 1 : 0,
		   .headers = range ? hdrs : NULL };
	int rc;
	if (!fk)
		return tt_error_oom(err);
	rc = s3_do(s, &c, r, err);
	free(fk);
	if (rc == 0 && (r->status == 404 || (version && r->status == 400)))
		rc = not_found(s, key, version, err);
	return rc;
}

static int copy_body(tt_store *s, const char *key, const char *data, size_t n, tt_buf *out,
		     tt_error *err)
{
	if (out->max && out->len + n > out->max)
		return tt_error_set(err, TT_ELIMIT, "%s: object '%s' is larger than the %zu bytes allowed",
				    s->display, key, out->max);
	if (tt_buf_put(out, data, n) != 0)
		return tt_buf_check(out, err, key);
	return 0;
}

static int s3_get(tt_store *s, const char *key, const char *version, tt_buf *out,
		  tt_store_meta *meta, tt_error *err)
{
	tt_http_response r;
	int rc;
	tt_http_response_init(&r);
	rc = s3_get_any(s, key, version, NULL, &r, err);
	if (rc == 0 && r.status != 200)
		rc = s3_fail(s, "get", key, &r, err);
	if (rc == 0)
		rc = copy_body(s, key, r.body.ptr, r.body.len, out, err);
	if (rc == 0 && meta)
		rc = meta_from_headers(&r, r.body.len, meta, err);
	tt_http_response_release(&r);
	return rc;
}

static int s3_get_range(tt_store *s, const char *key, const char *version, uint64_t off,
			uint64_t len, tt_buf *out, tt_error *err)
{
	tt_http_response r;
	char range[80];
	int rc;
	if (len == 0) {
		tt_store_meta m = { 0 };
		rc = s3_head(s, key, version, &m, err);  /* still: a missing key is an error */
		tt_store_meta_release(&m);
		return rc;
	}
	snprintf(range, sizeof range, "Range: bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
	tt_http_response_init(&r);
	rc = s3_get_any(s, key, version, range, &r, err);
	if (rc == 0) {
		if (r.status == 206)
			rc = copy_body(s, key, r.body.ptr, r.body.len, out, err);
		else if (r.status == 200) /* the server ignored the range */
			rc = off < r.body.len ? copy_body(s, key, r.body.ptr + off,
							  r.body.len - off < len ? r.body.len - (size_t)off
										 : (size_t)len,
							  out, err)
					      : 0;
		else if (r.status != 416)  /* past the end: nothing */
			rc = s3_fail(s, "get", key, &r, err);
	}
	tt_http_response_release(&r);
	return rc;
}

static int s3_list_any(tt_store *s, const char *prefix, const char *token, const char *after,
		       size_t max_keys, tt_store_page *out, tt_error *err)
{
	s3_impl *im = IM(s);
	tt_http_response r;
	char maxk[24], *fp = tt_asprintf("%s%s", im->prefix, prefix);
	char *fa = after ? tt_asprintf("%s%s", im->prefix, after) : NULL;
	tt_sigv4_param q[5] = { { "list-type", "2" }, { "prefix", fp }, { "max-keys", maxk } };
	size_t nq = 3, plen = strlen(im->prefix), alloc = 0;
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
		rc = s3_fail(s, "list", prefix[0] ? prefix : NULL, &r, err);
	if (rc == 0) {
		const char *p = r.body.ptr, *end = p + r.body.len, *cs, *ce, *vs, *ve;
		while (rc == 0 && tt_xml_find(p, end, "Contents", &cs, &ce, &p)) {
			tt_store_entry e = { 0 };
			char *k = NULL, *sz = NULL;
			if (tt_xml_find(cs, ce, "Key", &vs, &ve, NULL))
				k = tt_xml_text(vs, ve);
			if (!k || strncmp(k, im->prefix, plen) != 0) {
				rc = k ? tt_error_set(err, TT_EBACKEND, "%s: list returned '%s', outside "
							  "the prefix", s->display, k)
				       : tt_error_set(err, TT_EBACKEND, "%s: list entry without a Key",
						      s->display);
				free(k);
				break;
			}
			e.key = tt_strdup(k + plen);
			free(k);
			if (tt_xml_find(cs, ce, "ETag", &vs, &ve, NULL)) {
				char *t = tt_xml_text(vs, ve);
				e.meta.etag = tt_xml_unquote(t);
				free(t);
			}
			if (tt_xml_find(cs, ce, "Size", &vs, &ve, NULL) && (sz = tt_xml_text(vs, ve)))
				e.meta.size = strtoull(sz, NULL, 10);
			free(sz);
			if (tt_xml_find(cs, ce, "LastModified", &vs, &ve, NULL)) {
				char *t = tt_xml_text(vs, ve);
				e.meta.mtime_ns = parse_time(t, true);
				free(t);
			}
			if (!e.key || TT_ARRAY_GROW(out->items, alloc, out->n + 1) != 0) {
				free(e.key);
				tt_store_meta_release(&e.meta);
				rc = tt_error_oom(err);
				break;
			}
			out->items[out->n++] = e;
		}
		if (rc == 0 && tt_xml_find(r.body.ptr, end, "IsTruncated", &vs, &ve, NULL) &&
		    ve - vs == 4 && memcmp(vs, "true", 4) == 0) {
			if (!tt_xml_find(r.body.ptr, end, "NextContinuationToken", &vs, &ve, NULL))
				rc = tt_error_set(err, TT_EBACKEND,
						  "%s: a truncated listing without a continuation token",
						  s->display);
			else if (!(out->next = tt_xml_text(vs, ve)))
				rc = tt_error_oom(err);
		}
	}
	if (rc)
		tt_store_page_release(out);
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

/* ---- writes ---------------------------------------------------------------------- */

typedef enum put_cond { PUT_ALWAYS, PUT_ABSENT, PUT_MATCH } put_cond;

static void md5_hex(char out[33], const void *data, size_t len)
{
	unsigned char d[16];
	unsigned int n = 16;
	EVP_Digest(data, len, d, &n, EVP_md5(), NULL);
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static int s3_put_cond(tt_store *s, const char *key, put_cond cond, const char *etag,
		       const void *data, size_t len, tt_store_meta *meta, tt_error *err)
{
	tt_http_response r;
	char cond_h[300];
	const char *hdrs[] = { cond_h, NULL };
	char *fk = full_key(s, key);
	call c = { .method = "PUT", .key = fk, .headers = cond == PUT_ALWAYS ? NULL : hdrs,
		   .body = data, .len = len };
	int rc;
	if (!fk)
		return tt_error_oom(err);
	if (cond == PUT_ABSENT)
		snprintf(cond_h, sizeof cond_h, "If-None-Match: *");
	else if (cond == PUT_MATCH)
		snprintf(cond_h, sizeof cond_h, "If-Match: \"%s\"", etag);
	tt_http_response_init(&r);
	rc = s3_do(s, &c, &r, err);
	if (rc == 0 && (r.status == 412 || r.status == 409) && r.attempts > 1) {
		/* retried: did our first attempt land? */
		tt_store_meta m = { 0 };
		tt_error e2 = TT_ERROR_INIT;
		char md5[33];
		md5_hex(md5, data, len);
		if (s3_head(s, key, NULL, &m, &e2) == 0 && m.etag && strcmp(m.etag, md5) == 0) {
			if (meta) {
				*meta = m;
				memset(&m, 0, sizeof m);
			}
			r.status = 200;
			meta = NULL;
		}
		tt_store_meta_release(&m);
		tt_error_clear(&e2);
	}
	if (rc == 0) {
		if (r.status == 200) {
			if (meta)
				rc = meta_from_headers(&r, len, meta, err);
		} else if (r.status == 412 && cond == PUT_ABSENT) {
			rc = tt_error_set(err, TT_EEXISTS, "%s: object '%s' already exists", s->display,
					  key);
		} else if ((r.status == 412 || r.status == 409) && cond == PUT_MATCH) {
			rc = tt_error_set(err, TT_EREFMOVED,
					  "%s: object '%s' moved meanwhile (it no longer has etag %s); "
					  "read it again and retry", s->display, key, etag);
		} else if (r.status == 404 && cond == PUT_MATCH) {
			rc = not_found(s, key, NULL, err);
		} else if (r.status == 501 && cond != PUT_ALWAYS) {
			rc = tt_error_set(err, TT_ECAPABILITY,
					  "%s: the server does not support conditional writes "
					  "(If-%s); use a server that does", s->display,
					  cond == PUT_ABSENT ? "None-Match" : "Match");
		} else {
			rc = s3_fail(s, "put", key, &r, err);
		}
	}
	tt_http_response_release(&r);
	free(fk);
	return rc;
}

static int s3_put(tt_store *s, const char *key, const void *data, size_t len, tt_store_meta *meta,
		  tt_error *err)
{
	return s3_put_cond(s, key, PUT_ALWAYS, NULL, data, len, meta, err);
}

static int s3_put_if_absent(tt_store *s, const char *key, const void *data, size_t len,
			    tt_store_meta *meta, tt_error *err)
{
	return s3_put_cond(s, key, PUT_ABSENT, NULL, data, len, meta, err);
}

static int s3_put_if_match(tt_store *s, const char *key, const char *etag, const void *data,
			   size_t len, tt_store_meta *meta, tt_error *err)
{
	if (strchr(etag, '"') || strlen(etag) > 200)
		return tt_error_set(err, TT_EUSAGE, "%s: '%s' is not an etag", s->display, etag);
	return s3_put_cond(s, key, PUT_MATCH, etag, data, len, meta, err);
}

static int s3_del(tt_store *s, const char *key, tt_error *err)
{
	tt_http_response r;
	char *fk = full_key(s, key);
	call c = { .method = "DELETE", .key = fk };
	int rc;
	if (!fk)
		return tt_error_oom(err);
	tt_http_response_init(&r);
	rc = s3_do(s, &c, &r, err);
	if (rc == 0 && r.status != 204 && r.status != 200 && r.status != 404)
		rc = s3_fail(s, "delete", key, &r, err);
	tt_http_response_release(&r);
	free(fk);
	return rc;
}

/* ---- open ------------------------------------------------------------------------ */

static void impl_free(s3_impl *im)
{
	if (!im)
		return;
	tt_http_client_free(im->http);
	free(im->bucket);
	free(im->prefix);
	free(im->region);
	free(im->scheme);
	free(im->host);
	free(im->ak);
	if (im->sk) {
		memset(im->sk, 0, strlen(im->sk));
		free(im->sk);
	}
	if (im->tok) {
		memset(im->tok, 0, strlen(im->tok));
		free(im->tok);
	}
	if (im->refresh_free)
		im->refresh_free(im->refresh_ctx);
	pthread_mutex_destroy(&im->creds_lock);
	free(im);
}

static void s3_close(tt_store *s)
{
	impl_free(s->impl);
	free(s->display);
	free(s);
}

static const tt_store_ops s3_ops = {
	.get = s3_get,
	.get_range = s3_get_range,
	.head = s3_head,
	.list = s3_list,
	.list_after = s3_list_after,
	.put = s3_put,
	.put_if_absent = s3_put_if_absent,
	.put_if_match = s3_put_if_match,
	.del = s3_del,
	.close = s3_close,
};

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
	const char *prefix = cfg->prefix ? cfg->prefix : "";
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
	im->refresh = cfg->refresh;
	im->refresh_ctx = cfg->refresh_ctx;
	im->refresh_free = cfg->refresh_free;
	s->impl = im;
	s->ops = &s3_ops;
	s->kind = TT_STORE_S3;
	while (*prefix == '/')
		prefix++;
	im->bucket = dup_or_null(cfg->bucket, &oom);
	im->region = dup_or_null(region, &oom);
	im->prefix = tt_asprintf("%s%s", prefix, *prefix && prefix[strlen(prefix) - 1] != '/' ? "/" : "");
	s->display = tt_asprintf("s3://%s/%s", cfg->bucket, im->prefix ? im->prefix : "");
	im->vhost = cfg->virtual_hosted;
	if (cfg->endpoint && *cfg->endpoint) {
		const char *e = cfg->endpoint, *h = strstr(e, "://");
		size_t hl;
		if (!h || (strncasecmp(e, "http://", 7) != 0 && strncasecmp(e, "https://", 8) != 0)) {
			s3_close(s);
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
	if (oom || !im->prefix || !s->display || !im->scheme || !im->host) {
		s3_close(s);
		return tt_error_oom(err);
	}
	if ((rc = tt_crypto_load(err)) != 0 || (rc = tt_http_client_new(&cfg->http, &im->http, err)) != 0) {
		s3_close(s);
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
			rc = s3_fail(s, "open bucket", NULL, &r, err);
		/* 403 and the like: we may not ask; reads at a version stay refused */
	}
	tt_http_response_release(&r);
	if (rc) {
		s3_close(s);
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
			rc = s3_fail(s, "create bucket", NULL, &r, err);
	}
	tt_http_response_release(&r);
	free(body);
	s3_close(s);
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
		rc = s3_fail(s, "enable versioning on", NULL, &r, err);
	tt_http_response_release(&r);
	s3_close(s);
	return rc;
}
