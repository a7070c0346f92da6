/*
 * storage/gcs.c - the store interface on Google Cloud Storage (see gcs.h).
 *
 * Reads and listings speak the XML API, writes the JSON API's multipart
 * upload with ifGenerationMatch; every call is one request through the
 * shared HTTP client (whose retries cover 429/5xx/resets).  A conditional
 * upload that the client had to retry and that then fails its precondition
 * is checked against the object's content: our first attempt may have won.
 */
#define _GNU_SOURCE
#include "storage/gcs.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <jansson.h>

#include "storage/xml.h"
#include "util/mem.h"

typedef struct gcs_impl {
	char *bucket, *prefix, *base, *auth;
	tt_gcs_token_source *ts;  /* OAuth2 instead of auth */
	tt_http_client *http;
} gcs_impl;

#define IM(s) ((gcs_impl *)(s)->impl)

/* ---- small XML reading (the shapes List Blobs and errors use) ------------------- */

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
		ms = strtol(end + 1, NULL, 10) % 1000;
	return ((int64_t)timegm(&tm) * 1000 + ms) * 1000000;
}

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
	rc = tt_http_do(im->http, &req, r, err);
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
			rc = tt_http_do(im->http, &req, r, err);
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

static int gcs_fail(tt_store *s, const char *what, const char *key, const tt_http_response *r,
		    tt_error *err)
{
	const char *end = r->body.ptr + r->body.len, *cs, *ce, *ms, *me;
	char *code = NULL, *msg = NULL;
	const char *fix = "";
	int rc = TT_EBACKEND;
	json_t *j = NULL;
	if (tt_xml_find(r->body.ptr, end, "Code", &cs, &ce, NULL)) {
		code = tt_xml_text(cs, ce);
		if (tt_xml_find(r->body.ptr, end, "Message", &ms, &me, NULL))
			msg = tt_xml_text(ms, me);
	} else if (r->body.len && (j = json_loadb(r->body.ptr, r->body.len, 0, NULL))) {
		json_t *m = json_object_get(json_object_get(j, "error"), "message");
		if (json_is_string(m))
			msg = tt_strdup(json_string_value(m));
		json_decref(j);
	}
	if (r->status == 401 || r->status == 403)
		fix = "; check the service account or token for this store in .tether/secrets.toml";
	else if (r->status == 404)
		rc = TT_ENOTFOUND;
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
	const char *v = tt_http_response_header(r, "x-goog-generation");
	m->size = size;
	m->etag = tt_xml_unquote(tt_http_response_header(r, "ETag"));
	if (v && *v && !(m->version = tt_strdup(v)))
		return tt_error_oom(err);
	m->mtime_ns = parse_time(tt_http_response_header(r, "Last-Modified"), false);
	if (tt_http_response_header(r, "ETag") && !m->etag)
		return tt_error_oom(err);
	return 0;
}

static int not_found(tt_store *s, const char *key, const char *version, tt_error *err)
{
	return tt_error_set(err, TT_ENOTFOUND, "%s: no object '%s'%s%s", s->display, key,
			    version ? " at generation " : "", version ? version : "");
}

/* ---- reads ----------------------------------------------------------------------- */

static int gcs_head(tt_store *s, const char *key, const char *version, tt_store_meta *out,
		    tt_error *err)
{
	tt_http_response r;
	char *fk = full_key(s, key), *url = fk ? object_url(s, fk, version) : NULL;
	int rc;
	if (!url) {
		free(fk);
		return tt_error_oom(err);
	}
	tt_http_response_init(&r);
	rc = gcs_do(s, "HEAD", url, NULL, NULL, 0, &r, err);
	if (rc == 0) {
		if (r.status == 200) {
			const char *cl = tt_http_response_header(&r, "Content-Length");
			const char *gl = tt_http_response_header(&r, "x-goog-stored-content-length");
			rc = meta_from_headers(&r, gl ? strtoull(gl, NULL, 10)
						      : cl ? strtoull(cl, NULL, 10) : 0, out, err);
		} else if (r.status == 404 || (version && r.status == 400)) {
			rc = not_found(s, key, version, err);
		} else {
			rc = gcs_fail(s, "head", key, &r, err);
		}
	}
	tt_http_response_release(&r);
	free(url);
	free(fk);
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

static int gcs_get_any(tt_store *s, const char *key, const char *version, const char *range,
		       tt_http_response *r, tt_error *err)
{
	const char *hdrs[] = { range, NULL };
	char *fk = full_key(s, key), *url = fk ? object_url(s, fk, version) : NULL;
	int rc;
	if (!url) {
		free(fk);
		return tt_error_oom(err);
	}
	rc = gcs_do(s, "GET", url, range ? hdrs : NULL, NULL, 0, r, err);
	free(url);
	free(fk);
	if (rc == 0 && (r->status == 404 || (version && r->status == 400)))
		rc = not_found(s, key, version, err);
	return rc;
}

static int gcs_get(tt_store *s, const char *key, const char *version, tt_buf *out,
		   tt_store_meta *meta, tt_error *err)
{
	tt_http_response r;
	int rc;
	tt_http_response_init(&r);
	rc = gcs_get_any(s, key, version, NULL, &r, err);
	if (rc == 0 && r.status != 200)
		rc = gcs_fail(s, "get", key, &r, err);
	if (rc == 0)
		rc = copy_body(s, key, r.body.ptr, r.body.len, out, err);
	if (rc == 0 && meta)
		rc = meta_from_headers(&r, r.body.len, meta, err);
	tt_http_response_release(&r);
	return rc;
}

static int gcs_get_range(tt_store *s, const char *key, const char *version, uint64_t off,
			 uint64_t len, tt_buf *out, tt_error *err)
{
	tt_http_response r;
	tt_store_meta m = { 0 };
	char range[80];
	int rc = gcs_head(s, key, version, &m, err);
	if (rc || len == 0 || off >= m.size) {
		tt_store_meta_release(&m);
		return rc;
	}
	if (off + len > m.size)
		len = m.size - off;
	tt_store_meta_release(&m);
	snprintf(range, sizeof range, "Range: bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
	tt_http_response_init(&r);
	rc = gcs_get_any(s, key, version, range, &r, err);
	if (rc == 0) {
		if (r.status == 206)
			rc = copy_body(s, key, r.body.ptr, r.body.len, out, err);
		else if (r.status == 200)
			rc = off < r.body.len ? copy_body(s, key, r.body.ptr + off,
							  r.body.len - off < len ? r.body.len - (size_t)off
										 : (size_t)len,
							  out, err)
					      : 0;
		else if (r.status != 416)
			rc = gcs_fail(s, "get", key, &r, err);
	}
	tt_http_response_release(&r);
	return rc;
}

/* Our own page token, when the server gave more than a page: the listing
 * goes on after this key (no GCS continuation token has this shape). */
#define AFTER_TOKEN "tether-after/"

static int gcs_list(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		    tt_store_page *out, tt_error *err)
{
	gcs_impl *im = IM(s);
	tt_http_response r;
	tt_buf url = TT_BUF_INIT;
	char *fp = tt_asprintf("%s%s", im->prefix, prefix);
	size_t plen = strlen(im->prefix), alloc = 0;
	const char *after = NULL;
	bool cut = false;
	int rc;

	if (!fp)
		return tt_error_oom(err);
	if (max_keys > 1000)
		max_keys = 1000;
	if (token && strncmp(token, AFTER_TOKEN, strlen(AFTER_TOKEN)) == 0)
		after = token + strlen(AFTER_TOKEN);
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
		char *fa = tt_asprintf("%s%s", im->prefix, after);
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
		rc = gcs_fail(s, "list", prefix[0] ? prefix : NULL, &r, err);
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
			if (after && strcmp(k + plen, after) <= 0) {
				free(k);  /* a server that ignored start-after */
				continue;
			}
			if (out->n == max_keys) {
				/* a server that ignored max-keys: the page ends here,
				 * and the next one starts after its last key */
				free(k);
				cut = true;
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
			if (tt_xml_find(cs, ce, "Generation", &vs, &ve, NULL))
				e.meta.version = tt_xml_text(vs, ve);
			if (!e.key || TT_ARRAY_GROW(out->items, alloc, out->n + 1) != 0) {
				free(e.key);
				tt_store_meta_release(&e.meta);
				rc = tt_error_oom(err);
				break;
			}
			out->items[out->n++] = e;
		}
		if (rc == 0 && cut) {
			if (!(out->next = tt_asprintf(AFTER_TOKEN "%s", out->items[out->n - 1].key)))
				rc = tt_error_oom(err);
		} else if (rc == 0 && tt_xml_find(r.body.ptr, end, "IsTruncated", &vs, &ve, NULL) &&
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
	tt_buf_release(&url);
	free(fp);
	return rc;
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
	rc = gcs_list(s, prefix, tok, max_keys ? max_keys : 1000, out, err);
	free(tok);
	return rc;
}

/* ---- writes ---------------------------------------------------------------------- */

/*
 * A multipart upload of data as key; gen NULL: unconditional, "0": only
 * if absent, else only if the live generation is gen.  *status is the
 * HTTP status; on 200 meta gets the new object's etag (read back through
 * the XML API, whose ETag is the one listings carry) and generation.
 */
static int upload(tt_store *s, const char *key, const char *gen, const void *data, size_t len,
		  long *status, unsigned *attempts, tt_error *err)
{
	gcs_impl *im = IM(s);
	tt_buf url = TT_BUF_INIT, body = TT_BUF_INIT, meta = TT_BUF_INIT;
	tt_http_response r;
	char ctype[96];
	const char *hdrs[] = { ctype, NULL };
	char *fk = full_key(s, key);
	static const char boundary[] = "tether-gcs-upload-7c1f3a";
	json_t *md = fk ? json_pack("{s:s}", "name", fk) : NULL;
	int rc;

	*status = 0;
	if (!md) {
		free(fk);
		return tt_error_oom(err);
	}
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
	free(fk);
	if (url.failed || body.failed) {
		tt_buf_release(&url);
		tt_buf_release(&body);
		return tt_error_oom(err);
	}
	tt_http_response_init(&r);
	rc = gcs_do(s, "POST", url.ptr, hdrs, body.ptr, body.len, &r, err);
	if (rc == 0) {
		*status = r.status;
		*attempts = r.attempts;
		if (r.status != 200 && r.status != 412 && r.status != 404)
			rc = gcs_fail(s, "put", key, &r, err);
	}
	tt_http_response_release(&r);
	tt_buf_release(&url);
	tt_buf_release(&body);
	tt_buf_release(&meta);
	return rc;
}

typedef enum put_cond { PUT_ALWAYS, PUT_ABSENT, PUT_MATCH } put_cond;

static int gcs_put_cond(tt_store *s, const char *key, put_cond cond, const char *etag,
			const void *data, size_t len, tt_store_meta *meta, tt_error *err)
{
	tt_store_meta cur = { 0 };
	long status;
	unsigned attempts = 0;
	const char *gen = NULL;
	int rc;

	if (cond == PUT_ABSENT) {
		gen = "0";
	} else if (cond == PUT_MATCH) {
		/* the generation that carries the caller's ETag: the upload is
		 * conditional on it, so a replacement in between fails it */
		if ((rc = gcs_head(s, key, NULL, &cur, err)) != 0)
			return rc;
		if (!cur.etag || strcmp(cur.etag, etag) != 0 || !cur.version) {
			tt_store_meta_release(&cur);
			return tt_error_set(err, TT_EREFMOVED,
					    "%s: object '%s' moved meanwhile (it no longer has etag %s); "
					    "read it again and retry", s->display, key, etag);
		}
		gen = cur.version;
	}
	rc = upload(s, key, gen, data, len, &status, &attempts, err);
	if (rc == 0 && status == 412 && attempts > 1) {
		/* retried: did our first attempt land?  Compare the content. */
		tt_buf now = TT_BUF_INIT;
		tt_store_meta m = { 0 };
		tt_error e2 = TT_ERROR_INIT;
		if (gcs_get(s, key, NULL, &now, &m, &e2) == 0 && now.len == len &&
		    (len == 0 || memcmp(now.ptr, data, len) == 0))
			status = 200;
		tt_buf_release(&now);
		tt_store_meta_release(&m);
		tt_error_clear(&e2);
	}
	if (rc == 0) {
		if (status == 200) {
			if (meta)
				rc = gcs_head(s, key, NULL, meta, err);
		} else if (status == 412 && cond == PUT_ABSENT) {
			rc = tt_error_set(err, TT_EEXISTS, "%s: object '%s' already exists", s->display,
					  key);
		} else if (status == 412 && cond == PUT_MATCH) {
			rc = tt_error_set(err, TT_EREFMOVED,
					  "%s: object '%s' moved meanwhile (it no longer has etag %s); "
					  "read it again and retry", s->display, key, etag);
		} else {
			rc = tt_error_set(err, TT_EBACKEND, "%s: put '%s': HTTP %ld", s->display, key,
					  status);
		}
	}
	tt_store_meta_release(&cur);
	return rc;
}

static int gcs_put(tt_store *s, const char *key, const void *data, size_t len,
		   tt_store_meta *meta, tt_error *err)
{
	return gcs_put_cond(s, key, PUT_ALWAYS, NULL, data, len, meta, err);
}

static int gcs_put_if_absent(tt_store *s, const char *key, const void *data, size_t len,
			     tt_store_meta *meta, tt_error *err)
{
	return gcs_put_cond(s, key, PUT_ABSENT, NULL, data, len, meta, err);
}

static int gcs_put_if_match(tt_store *s, const char *key, const char *etag, const void *data,
			    size_t len, tt_store_meta *meta, tt_error *err)
{
	if (strchr(etag, '"') || strlen(etag) > 200)
		return tt_error_set(err, TT_EUSAGE, "%s: '%s' is not an etag", s->display, etag);
	return gcs_put_cond(s, key, PUT_MATCH, etag, data, len, meta, err);
}

static int gcs_del(tt_store *s, const char *key, tt_error *err)
{
	tt_http_response r;
	char *fk = full_key(s, key), *url = fk ? object_url(s, fk, NULL) : NULL;
	int rc;
	if (!url) {
		free(fk);
		return tt_error_oom(err);
	}
	tt_http_response_init(&r);
	rc = gcs_do(s, "DELETE", url, NULL, NULL, 0, &r, err);
	if (rc == 0 && r.status != 204 && r.status != 200 && r.status != 404)
		rc = gcs_fail(s, "delete", key, &r, err);
	tt_http_response_release(&r);
	free(url);
	free(fk);
	return rc;
}

/* ---- open ------------------------------------------------------------------------ */

static void gcs_close(tt_store *s)
{
	gcs_impl *im = s->impl;
	if (im) {
		tt_http_client_free(im->http);
		free(im->bucket);
		free(im->prefix);
		free(im->base);
		if (im->auth) {
			memset(im->auth, 0, strlen(im->auth));
			free(im->auth);
		}
		tt_gcs_token_source_free(im->ts);
		free(im);
	}
	free(s->display);
	free(s);
}

static const tt_store_ops gcs_ops = {
	.get = gcs_get,
	.get_range = gcs_get_range,
	.head = gcs_head,
	.list = gcs_list,
	.list_after = gcs_list_after,
	.put = gcs_put,
	.put_if_absent = gcs_put_if_absent,
	.put_if_match = gcs_put_if_match,
	.del = gcs_del,
	.close = gcs_close,
};

static int gcs_build(const tt_gcs_config *cfg, tt_store **out, tt_error *err)
{
	tt_store *s = NULL;
	gcs_impl *im = NULL;
	const char *prefix = cfg->prefix ? cfg->prefix : "";
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
	im->ts = cfg->token_source;
	s->ops = &gcs_ops;
	s->kind = TT_STORE_GCS;
	s->versioned = true;  /* every object has a generation */
	while (*prefix == '/')
		prefix++;
	im->bucket = tt_strdup(cfg->bucket);
	im->prefix = tt_asprintf("%s%s", prefix, *prefix && prefix[strlen(prefix) - 1] != '/' ? "/" : "");
	im->base = tt_strdup(base);
	if (im->base) {
		size_t n = strlen(im->base);
		while (n && im->base[n - 1] == '/')
			im->base[--n] = '\0';
	}
	if (cfg->bearer_token && *cfg->bearer_token && !im->ts)
		im->auth = tt_asprintf("Authorization: Bearer %s", cfg->bearer_token);
	s->display = tt_asprintf("gs://%s/%s", cfg->bucket, im->prefix ? im->prefix : "");
	if (!im->bucket || !im->prefix || !im->base || !s->display ||
	    (cfg->bearer_token && *cfg->bearer_token && !im->ts && !im->auth)) {
		gcs_close(s);
		return tt_error_oom(err);
	}
	if ((rc = tt_http_client_new(&cfg->http, &im->http, err)) != 0) {
		gcs_close(s);
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
		gcs_close(s);
		return tt_error_oom(err);
	}
	tt_http_response_init(&r);
	rc = gcs_do(s, "POST", url, hdrs, body, strlen(body), &r, err);
	if (rc == 0 && r.status != 200 && r.status != 409)
		rc = gcs_fail(s, "create bucket", NULL, &r, err);
	tt_http_response_release(&r);
	free(url);
	free(body);
	gcs_close(s);
	return rc;
}
