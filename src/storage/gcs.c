/*
 * storage/gcs.c - the store interface on Google Cloud Storage (see gcs.h):
 * how GCS spells a request, lists and words its errors; the rest is the
 * object-store skeleton (objstore.h).
 *
 * Reads and listings speak the XML API, writes the JSON API's multipart
 * upload with ifGenerationMatch; every call is one request through the
 * shared HTTP client (whose retries cover 429/5xx/resets).  A conditional
 * upload the client had to retry that then fails its precondition is
 * checked against the object's content: our first attempt may have won.
 */
#define _GNU_SOURCE
#include "storage/gcs.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "storage/objstore.h"
#include "util/mem.h"

/* What a server that ignored max-keys gave past the page it was asked for:
 * the next pages of the listing of prefix after the key `after`. */
typedef struct gcs_rest {
	char *prefix, *after;
	tt_store_page page;  /* entries (the first `used` already served), the server's next */
	size_t used;
} gcs_rest;

#define GCS_RESTS 8  /* listings carried on at once (one per parallel range) */

typedef struct gcs_impl {
	tt_objstore os;  /* first: the skeleton's part */
	char *bucket, *base, *auth;
	tt_gcs_token_source *ts;  /* OAuth2 instead of auth */
	pthread_mutex_t rest_mu;
	gcs_rest rests[GCS_RESTS]; /* prefix NULL: free */
	size_t rest_turn;          /* the slot the next one takes when all are used */
} gcs_impl;

#define IM(s) ((gcs_impl *)(s)->impl)

/* ---- requests -------------------------------------------------------------------- */

/* One request: url built by the caller (already encoded); extra headers. */
static int gcs_do(tt_store *s, const char *method, const char *url, const char *const *extra,
		  const void *body, size_t len, tt_http_response *r, tt_error *err)
{
	gcs_impl *im = IM(s);
	const char *headers[8];
	char *tok = NULL;
	size_t nh = 0;
	int rc;
	if (im->ts && (rc = tt_gcs_token_header(im->ts, NULL, &tok, err)) != 0)
		return tt_error_prefix(err, "%s", s->display);
	if (im->auth || tok)
		headers[nh++] = tok ? tok : im->auth;
	for (size_t i = 0; extra && extra[i] && nh < 7; i++)
		headers[nh++] = extra[i];
	headers[nh] = NULL;
	tt_http_request req = { .method = method, .url = url, .headers = headers, .body = body,
				.body_len = len };
	rc = tt_http_do(im->os.http, &req, r, err);
	if (rc == 0 && r->status == 401 && tok) {
		/* the token was revoked or expired early: one fresh token, one retry */
		char *fresh = NULL;
		rc = tt_gcs_token_header(im->ts, tok, &fresh, err);
		if (rc == 0) {
			memset(tok, 0, strlen(tok));
			free(tok);
			tok = fresh;
			headers[0] = tok;
			tt_http_response_release(r);
			tt_http_response_init(r);
			rc = tt_http_do(im->os.http, &req, r, err);
		}
	}
	if (tok) {
		memset(tok, 0, strlen(tok));
		free(tok);
	}
	if (rc)
		tt_error_prefix(err, "%s", s->display);
	return rc;
}

/* {base}/{bucket}/{key encoded, '/' kept}[?generation=N] */
static char *object_url(tt_store *s, const char *fk, const char *version)
{
	gcs_impl *im = IM(s);
	tt_buf b = TT_BUF_INIT;
	tt_buf_printf(&b, "%s/", im->base);
	tt_http_uri_encode(&b, im->bucket, strlen(im->bucket), false);
	tt_buf_putc(&b, '/');
	tt_http_uri_encode(&b, fk, strlen(fk), true);
	if (version) {
		tt_buf_puts(&b, "?generation=");
		tt_http_uri_encode(&b, version, strlen(version), false);
	}
	tt_buf_puts(&b, "");
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

static const char *gcs_fix(long status, const char *code)
{
	(void)code;
	if (status == 401 || status == 403)
		return "; check the service account or token for this store in .tether/secrets.toml";
	return "";
}

/* ---- listings -------------------------------------------------------------------- */

static const tt_objstore_listing gcs_listing = {
	.entry = "Contents", .key = "Key", .etag = "ETag", .size = "Size", .mtime = "LastModified",
	.version = "Generation", .iso_mtime = true, .truncated = "IsTruncated",
	.next = "NextContinuationToken",
};

/* Our own page token, when the server gave more than a page: the listing
 * goes on after this key (no GCS continuation token has this shape). */
#define AFTER_TOKEN "tether-after/"

static void rest_clear(gcs_rest *r)
{
	free(r->prefix);
	free(r->after);
	/* the served entries were moved out: release only the rest */
	for (size_t i = r->used; i < r->page.n; i++) {
		free(r->page.items[i].key);
		tt_store_meta_release(&r->page.items[i].meta);
	}
	free(r->page.items);
	free(r->page.next);
	memset(r, 0, sizeof *r);
}

/* Keep what the server gave past the page (rest: taken over); false when
 * it could not be kept (the next page is then asked for again). */
static bool rest_keep(gcs_impl *im, const char *prefix, const char *after, tt_store_page *rest)
{
	bool kept;
	gcs_rest *slot = NULL;
	pthread_mutex_lock(&im->rest_mu);
	/* a newer answer for the same place replaces an older one left behind */
	for (size_t i = 0; i < GCS_RESTS && !slot; i++)
		if (im->rests[i].prefix && strcmp(im->rests[i].prefix, prefix) == 0 &&
		    strcmp(im->rests[i].after, after) == 0) {
			slot = &im->rests[i];
			rest_clear(slot);
		}
	for (size_t i = 0; i < GCS_RESTS && !slot; i++)
		if (!im->rests[i].prefix)
			slot = &im->rests[i];
	if (!slot) {
		slot = &im->rests[im->rest_turn++ % GCS_RESTS];
		rest_clear(slot);
	}
	slot->prefix = tt_strdup(prefix);
	slot->after = tt_strdup(after);
	slot->page = *rest;
	memset(rest, 0, sizeof *rest);
	kept = slot->prefix && slot->after;
	if (!kept)
		rest_clear(slot); /* no memory: the next page is asked for again */
	pthread_mutex_unlock(&im->rest_mu);
	return kept;
}

/*
 * The page after `after` from what the server already gave, when it gave
 * it: 1 and *out filled (out->next our token while entries are left, then
 * the server's own), 0 when nothing is kept for that key, or an error.
 */
static int rest_take(gcs_impl *im, const char *prefix, const char *after, size_t max_keys,
		     tt_store_page *out, tt_error *err)
{
	gcs_rest *r = NULL;
	int rc = 1;
	pthread_mutex_lock(&im->rest_mu);
	for (size_t i = 0; i < GCS_RESTS && !r; i++)
		if (im->rests[i].prefix && strcmp(im->rests[i].prefix, prefix) == 0 &&
		    strcmp(im->rests[i].after, after) == 0)
			r = &im->rests[i];
	if (!r) {
		pthread_mutex_unlock(&im->rest_mu);
		return 0;
	}
	size_t n = r->page.n - r->used;
	if (n > max_keys)
		n = max_keys;
	if (n && !(out->items = tt_calloc(n, sizeof *out->items))) {
		rc = tt_error_oom(err);
		goto done;
	}
	memcpy(out->items, r->page.items + r->used, n * sizeof *out->items);
	out->n = n;
	r->used += n;
	if (r->used < r->page.n) {
		out->held = true;
		char *last = tt_strdup(out->items[n - 1].key);
		out->next = last ? tt_asprintf(AFTER_TOKEN "%s", last) : NULL;
		if (!last || !out->next) {
			free(last);
			rc = tt_error_oom(err);
			tt_store_page_release(out);
			rest_clear(r);
			goto done;
		}
		free(r->after);
		r->after = last;
	} else {
		out->next = r->page.next;
		r->page.next = NULL;
		rest_clear(r);
	}
done:
	pthread_mutex_unlock(&im->rest_mu);
	return rc;
}

/* One page; own_token: token is one this store handed out to go on with a
 * listing (only then may the page come from what the server already sent). */
static int list_page(tt_store *s, const char *prefix, const char *token, size_t max_keys, bool own_token,
		     tt_store_page *out, tt_error *err)
{
	gcs_impl *im = IM(s);
	tt_http_response r;
	tt_buf url = TT_BUF_INIT;
	char *fp = tt_objstore_full_key(s, prefix);
	const char *after = NULL;
	tt_store_page rest = { 0 };
	bool cut = false;
	int rc;

	if (!fp)
		return tt_error_oom(err);
	if (max_keys > 1000)
		max_keys = 1000;
	if (token && strncmp(token, AFTER_TOKEN, strlen(AFTER_TOKEN)) == 0)
		after = token + strlen(AFTER_TOKEN);
	memset(out, 0, sizeof *out);
	if (after && own_token && (rc = rest_take(im, prefix, after, max_keys, out, err)) != 0) {
		free(fp);
		return rc < 0 ? rc : 0;
	}
	tt_buf_printf(&url, "%s/", im->base);
	tt_http_uri_encode(&url, im->bucket, strlen(im->bucket), false);
	if (token && !after) {
		tt_buf_puts(&url, "?continuation-token=");
		tt_http_uri_encode(&url, token, strlen(token), false);
		tt_buf_putc(&url, '&');
	} else {
		tt_buf_putc(&url, '?');
	}
	tt_buf_printf(&url, "list-type=2&max-keys=%zu&prefix=", max_keys);
	tt_http_uri_encode(&url, fp, strlen(fp), false);
	if (after) {
		char *fa = tt_objstore_full_key(s, after);
		tt_buf_puts(&url, "&start-after=");
		if (fa)
			tt_http_uri_encode(&url, fa, strlen(fa), false);
		else
			url.failed = TT_ENOMEM;
		free(fa);
	}
	tt_buf_puts(&url, "");
	if (url.failed) {
		free(fp);
		tt_buf_release(&url);
		return tt_error_oom(err);
	}
	tt_http_response_init(&r);
	rc = gcs_do(s, "GET", url.ptr, NULL, NULL, 0, &r, err);
	if (rc == 0 && r.status != 200)
		rc = tt_objstore_fail(s, "list", prefix[0] ? prefix : NULL, &r, err);
	if (rc == 0)
		rc = tt_objstore_parse_listing(s, &gcs_listing, &r, after, max_keys, &cut, out, &rest, err);
	/* past a cut the next page starts after the page's last key, from
	 * what the server gave past it (fake-gcs-server gives every key at
	 * once: asking again for each page would read them all each time) */
	if (rc == 0 && cut && !(out->next = tt_asprintf(AFTER_TOKEN "%s", out->items[out->n - 1].key)))
		rc = tt_error_oom(err);
	if (rc == 0 && cut)
		out->held = rest_keep(im, prefix, out->items[out->n - 1].key, &rest);
	tt_store_page_release(&rest);
	if (rc)
		tt_store_page_release(out);
	tt_http_response_release(&r);
	tt_buf_release(&url);
	free(fp);
	return rc;
}

static int gcs_list(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		    tt_store_page *out, tt_error *err)
{
	return list_page(s, prefix, token, max_keys, true, out, err);
}

/* The listing after a key: our own page token says where it starts. */
static int gcs_list_after(tt_store *s, const char *prefix, const char *after, size_t max_keys,
			  tt_store_page *out, tt_error *err)
{
	char *tok = tt_asprintf(AFTER_TOKEN "%s", after);
	int rc;
	memset(out, 0, sizeof *out);
	if (!tok)
		return tt_error_oom(err);
	rc = list_page(s, prefix, tok, max_keys ? max_keys : 1000, false, out, err);
	free(tok);
	return rc;
}

/* ---- requests on a key ---------------------------------------------------------- */

/*
 * A multipart upload of data as fk (the JSON API); gen NULL: unconditional,
 * "0": only if absent, else only if the live generation is gen.  Its answer
 * carries no XML API ETag: the skeleton reads the new meta by HEAD.
 */
static int upload(tt_store *s, const char *fk, const char *gen, const void *data, size_t len,
		  tt_http_response *r, tt_error *err)
{
	gcs_impl *im = IM(s);
	tt_buf url = TT_BUF_INIT, body = TT_BUF_INIT;
	char ctype[96];
	const char *hdrs[] = { ctype, NULL };
	static const char boundary[] = "tether-gcs-upload-7c1f3a";
	json_t *md = json_pack("{s:s}", "name", fk);
	int rc;

	if (!md)
		return tt_error_oom(err);
	tt_buf_printf(&url, "%s/upload/storage/v1/b/", im->base);
	tt_http_uri_encode(&url, im->bucket, strlen(im->bucket), false);
	tt_buf_puts(&url, "/o?uploadType=multipart");
	if (gen) {
		tt_buf_puts(&url, "&ifGenerationMatch=");
		tt_http_uri_encode(&url, gen, strlen(gen), false);
	}
	tt_buf_puts(&url, "");
	{
		char *mj = json_dumps(md, JSON_COMPACT);
		tt_buf_printf(&body, "--%s\r\nContent-Type: application/json; charset=UTF-8\r\n\r\n%s\r\n"
				     "--%s\r\nContent-Type: application/octet-stream\r\n\r\n",
			      boundary, mj ? mj : "{}", boundary);
		free(mj);
	}
	tt_buf_put(&body, data, len);
	tt_buf_printf(&body, "\r\n--%s--\r\n", boundary);
	snprintf(ctype, sizeof ctype, "Content-Type: multipart/related; boundary=%s", boundary);
	json_decref(md);
	if (url.failed || body.failed)
		rc = tt_error_oom(err);
	else
		rc = gcs_do(s, "POST", url.ptr, hdrs, body.ptr, body.len, r, err);
	tt_buf_release(&url);
	tt_buf_release(&body);
	return rc;
}

/* A conditional write: on the generation that carries the caller's ETag,
 * so a replacement in between fails it. */
static int put_request(tt_store *s, const tt_objstore_req *q, tt_http_response *r, tt_error *err)
{
	tt_store_meta cur = { 0 };
	const char *gen = q->cond == TT_STORE_PUT_IF_ABSENT ? "0" : NULL;
	int rc;
	if (q->cond == TT_STORE_PUT_IF_MATCH) {
		if ((rc = tt_objstore_head(s, q->name, NULL, &cur, err)) != 0)
			return rc;
		if (!cur.etag || strcmp(cur.etag, q->etag) != 0 || !cur.version) {
			tt_store_meta_release(&cur);
			return tt_error_set(err, TT_EREFMOVED,
					    "%s: object '%s' moved meanwhile (it no longer has etag %s); "
					    "read it again and retry", s->display, q->name, q->etag);
		}
		gen = cur.version;
	}
	rc = upload(s, q->key, gen, q->body, q->len, r, err);
	tt_store_meta_release(&cur);
	return rc;
}

/* One object request, as GCS spells it: the XML API but for writes. */
static int gcs_send(tt_store *s, const tt_objstore_req *q, tt_http_response *r, tt_error *err)
{
	char range[96];
	const char *hdrs[] = { range, NULL };
	char *url;
	int rc;
	if (strcmp(q->method, "PUT") == 0)
		return put_request(s, q, r, err);
	if (!(url = object_url(s, q->key, q->version)))
		return tt_error_oom(err);
	if (q->range)
		snprintf(range, sizeof range, "Range: %s", q->range);
	rc = gcs_do(s, q->method, url, q->range ? hdrs : NULL, NULL, 0, r, err);
	free(url);
	return rc;
}

static bool gcs_lost(long status, tt_store_cond cond)
{
	return status == 412 && cond != TT_STORE_PUT_ANY;
}

/* ---- open ------------------------------------------------------------------------ */

static void gcs_impl_free(void *p)
{
	gcs_impl *im = p;
	free(im->bucket);
	free(im->base);
	if (im->auth) {
		memset(im->auth, 0, strlen(im->auth));
		free(im->auth);
	}
	tt_gcs_token_source_free(im->ts);
	for (size_t i = 0; i < GCS_RESTS; i++)
		rest_clear(&im->rests[i]);
	pthread_mutex_destroy(&im->rest_mu);
	free(im);
}

static const tt_objstore_driver gcs_driver = {
	.noun = "object",
	.version_word = "generation",
	.version_header = "x-goog-generation",
	.size_header = "x-goog-stored-content-length",
	.clip_ranges = true,
	.meta_by_head = true,
	.send = gcs_send,
	.lost = gcs_lost,
	.fix = gcs_fix,
	.free = gcs_impl_free,
};

static const tt_store_ops gcs_ops = TT_OBJSTORE_OPS(gcs_list, gcs_list_after);

static int gcs_build(const tt_gcs_config *cfg, tt_store **out, tt_error *err)
{
	tt_store *s = NULL;
	gcs_impl *im = NULL;
	const char *base = cfg->base_url && *cfg->base_url ? cfg->base_url
							   : "https://storage.googleapis.com";
	int rc;

	*out = NULL;
	if (!cfg->bucket || !*cfg->bucket || strchr(cfg->bucket, '/')) {
		tt_gcs_token_source_free(cfg->token_source);
		return tt_error_set(err, TT_ECONFIG, "gcs: a store needs a bucket name (gs://<bucket>/...)");
	}
	if (strncasecmp(base, "http://", 7) != 0 && strncasecmp(base, "https://", 8) != 0) {
		tt_gcs_token_source_free(cfg->token_source);
		return tt_error_set(err, TT_ECONFIG, "gs://%s: the base URL must be http(s)://host[:port]",
				    cfg->bucket);
	}
	if (!(s = tt_calloc(1, sizeof *s)) || !(im = tt_calloc(1, sizeof *im))) {
		free(s);
		tt_gcs_token_source_free(cfg->token_source);
		return tt_error_oom(err);
	}
	s->impl = im;
	pthread_mutex_init(&im->rest_mu, NULL);
	im->os.drv = &gcs_driver;
	im->ts = cfg->token_source;
	s->ops = &gcs_ops;
	s->kind = TT_STORE_GCS;
	s->versioned = true;  /* every object has a generation */
	im->bucket = tt_strdup(cfg->bucket);
	im->os.prefix = tt_objstore_prefix(cfg->prefix);
	im->base = tt_strdup(base);
	if (im->base) {
		size_t n = strlen(im->base);
		while (n && im->base[n - 1] == '/')
			im->base[--n] = '\0';
	}
	if (cfg->bearer_token && *cfg->bearer_token && !im->ts)
		im->auth = tt_asprintf("Authorization: Bearer %s", cfg->bearer_token);
	s->display = tt_asprintf("gs://%s/%s", cfg->bucket, im->os.prefix ? im->os.prefix : "");
	if (!im->bucket || !im->os.prefix || !im->base || !s->display ||
	    (cfg->bearer_token && *cfg->bearer_token && !im->ts && !im->auth)) {
		tt_objstore_close(s);
		return tt_error_oom(err);
	}
	if ((rc = tt_http_client_new(&cfg->http, &im->os.http, err)) != 0) {
		tt_objstore_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

int tt_store_gcs_open(const tt_gcs_config *cfg, tt_store **out, tt_error *err)
{
	return gcs_build(cfg, out, err);
}

int tt_gcs_create_bucket(const tt_gcs_config *cfg, bool versioning, tt_error *err)
{
	tt_store *s;
	tt_http_response r;
	const char *hdrs[] = { "Content-Type: application/json", NULL };
	char *url, *body;
	int rc = gcs_build(cfg, &s, err);
	if (rc)
		return rc;
	url = tt_asprintf("%s/storage/v1/b", IM(s)->base);
	body = tt_asprintf("{\"name\":\"%s\",\"versioning\":{\"enabled\":%s}}", cfg->bucket,
			   versioning ? "true" : "false");
	if (!url || !body) {
		free(url);
		free(body);
		tt_objstore_close(s);
		return tt_error_oom(err);
	}
	tt_http_response_init(&r);
	rc = gcs_do(s, "POST", url, hdrs, body, strlen(body), &r, err);
	if (rc == 0 && r.status != 200 && r.status != 409)
		rc = tt_objstore_fail(s, "create bucket", NULL, &r, err);
	tt_http_response_release(&r);
	free(url);
	free(body);
	tt_objstore_close(s);
	return rc;
}
