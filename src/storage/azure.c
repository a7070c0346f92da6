/*
 * storage/azure.c - the store interface on Azure Blob Storage (see azure.h).
 *
 * Every call is one request through the shared HTTP client (whose retries
 * cover 429/5xx/resets), signed with Shared Key over the canonical string
 * the service recomputes (the fixed headers, the x-ms-* headers, the
 * account and path, the sorted query), or carrying the SAS.  The store
 * holds no mutable state after open.  As for S3, a conditional write the
 * client had to retry that then fails its precondition is checked against
 * the blob's content: our own first attempt may have landed.
 */
#define _GNU_SOURCE
#include "storage/azure.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "storage/xml.h"
#include "util/crypto_api.h"
#include "util/mem.h"

#define AZ_VERSION "2021-08-06"

typedef struct az_impl {
	char *account, *container, *prefix;
	char *base;      /* scheme://host[:port][/path], no trailing '/' */
	char *basepath;  /* the path part of base ("" or "/devstoreaccount1") */
	unsigned char *key;
	size_t keylen;
	char *sas;
	tt_http_client *http;
} az_impl;

#define IM(s) ((az_impl *)(s)->impl)

/* ---- small XML reading (the shapes List Blobs and errors use) ------------------- */

static int64_t parse_http_date(const char *v)
{
	struct tm tm;
	memset(&tm, 0, sizeof tm);
	if (!v || !strptime(v, "%a, %d %b %Y %H:%M:%S", &tm))
		return 0;
	return (int64_t)timegm(&tm) * 1000000000LL;
}

/* ---- requests -------------------------------------------------------------------- */

typedef struct az_param {
	const char *name, *value;
} az_param;

typedef struct call {
	const char *method;
	const char *key;          /* full blob name; NULL: the container */
	const az_param *query;    /* sorted by name */
	size_t nquery;
	const char *range;        /* "bytes=a-b" or NULL */
	const char *if_match;     /* quoted etag, or NULL */
	const char *if_none_match;
	bool blob_put;            /* x-ms-blob-type: BlockBlob, a body */
	const void *body;
	size_t len;
} call;

static int b64_decode(const char *in, unsigned char **out, size_t *outlen)
{
	size_t n = strlen(in);
	unsigned char *buf = malloc(n / 4 * 3 + 3);
	int got;
	*out = NULL;
	if (!buf)
		return -1;
	got = n ? EVP_DecodeBlock(buf, (const unsigned char *)in, (int)n) : 0;
	if (got < 0 || n % 4) {
		free(buf);
		return -1;
	}
	while (n && in[n - 1] == '=') {
		got--;
		n--;
	}
	*out = buf;
	*outlen = (size_t)got;
	return 0;
}

static int az_do(tt_store *s, const call *c, tt_http_response *resp, tt_error *err)
{
	az_impl *im = IM(s);
	tt_buf path = TT_BUF_INIT, url = TT_BUF_INIT, sts = TT_BUF_INIT;
	char date[64], clen[32] = "", hdate[80], hver[40], auth[256], hrange[128], hif[300],
		hnone[300];
	const char *headers[12];
	size_t nh = 0;
	struct tm tm;
	time_t now = time(NULL);
	int rc;

	gmtime_r(&now, &tm);
	strftime(date, sizeof date, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	/* the path: /<container>[/<blob>], blob bytes encoded but its '/' kept */
	tt_buf_puts(&path, im->basepath);
	tt_buf_putc(&path, '/');
	tt_http_uri_encode(&path, im->container, strlen(im->container), false);
	if (c->key) {
		tt_buf_putc(&path, '/');
		tt_http_uri_encode(&path, c->key, strlen(c->key), true);
	}
	tt_buf_puts(&url, im->base);
	tt_buf_put(&url, path.ptr + strlen(im->basepath), path.len - strlen(im->basepath));
	for (size_t i = 0; i < c->nquery; i++) {
		tt_buf_putc(&url, i ? '&' : '?');
		tt_buf_puts(&url, c->query[i].name);
		tt_buf_putc(&url, '=');
		tt_http_uri_encode(&url, c->query[i].value, strlen(c->query[i].value), false);
	}
	if (im->sas) {
		tt_buf_putc(&url, c->nquery ? '&' : '?');
		tt_buf_puts(&url, im->sas);
	}
	tt_buf_puts(&url, "");
	if (c->blob_put && c->len)
		snprintf(clen, sizeof clen, "%zu", c->len);
	snprintf(hdate, sizeof hdate, "x-ms-date: %s", date);
	snprintf(hver, sizeof hver, "x-ms-version: %s", AZ_VERSION);
	headers[nh++] = hdate;
	headers[nh++] = hver;
	if (c->blob_put) {
		headers[nh++] = "x-ms-blob-type: BlockBlob";
		headers[nh++] = "Content-Type: application/octet-stream";
	}
	if (c->range) {
		snprintf(hrange, sizeof hrange, "Range: %s", c->range);
		headers[nh++] = hrange;
	}
	if (c->if_match) {
		snprintf(hif, sizeof hif, "If-Match: %s", c->if_match);
		headers[nh++] = hif;
	}
	if (c->if_none_match) {
		snprintf(hnone, sizeof hnone, "If-None-Match: %s", c->if_none_match);
		headers[nh++] = hnone;
	}
	if (im->key) {
		unsigned char mac[32];
		unsigned int maclen = sizeof mac;
		unsigned char b64[64];
		/* VERB, Content-Encoding, -Language, -Length, -MD5, -Type, Date,
		 * If-Modified-Since, If-Match, If-None-Match, If-Unmodified-Since,
		 * Range; then x-ms-* (sorted) and the resource. */
		tt_buf_printf(&sts, "%s\n\n\n%s\n\n%s\n\n\n%s\n%s\n\n%s\n", c->method, clen,
			      c->blob_put ? "application/octet-stream" : "",
			      c->if_match ? c->if_match : "", c->if_none_match ? c->if_none_match : "",
			      c->range ? c->range : "");
		if (c->blob_put)
			tt_buf_puts(&sts, "x-ms-blob-type:BlockBlob\n");
		tt_buf_printf(&sts, "x-ms-date:%s\nx-ms-version:%s\n", date, AZ_VERSION);
		tt_buf_printf(&sts, "/%s%s", im->account, path.ptr ? path.ptr : "");
		for (size_t i = 0; i < c->nquery; i++)
			tt_buf_printf(&sts, "\n%s:%s", c->query[i].name, c->query[i].value);
		if (sts.failed || !HMAC(EVP_sha256(), im->key, (int)im->keylen,
					(const unsigned char *)sts.ptr, sts.len, mac, &maclen)) {
			rc = tt_error_oom(err);
			goto done;
		}
		EVP_EncodeBlock(b64, mac, (int)maclen);
		snprintf(auth, sizeof auth, "Authorization: SharedKey %s:%s", im->account, b64);
		headers[nh++] = auth;
	}
	headers[nh] = NULL;
	if (path.failed || url.failed) {
		rc = tt_error_oom(err);
		goto done;
	}
	{
		tt_http_request req = { .method = c->method, .url = url.ptr, .headers = headers,
					.body = c->body, .body_len = c->len };
		rc = tt_http_do(im->http, &req, resp, err);
	}
	if (rc)
		tt_error_prefix(err, "%s", s->display);
done:
	if (sts.ptr)
		memset(sts.ptr, 0, sts.len);
	tt_buf_release(&sts);
	tt_buf_release(&path);
	tt_buf_release(&url);
	return rc;
}

/* The error for a response we did not expect: the service's code and message. */
static int az_fail(tt_store *s, const char *what, const char *key, const tt_http_response *r,
		   tt_error *err)
{
	const char *end = r->body.ptr + r->body.len, *cs, *ce, *ms, *me;
	char *code = NULL, *msg = NULL;
	const char *fix = "";
	int rc = TT_EBACKEND;
	if (tt_xml_find(r->body.ptr, end, "Code", &cs, &ce, NULL))
		code = tt_xml_text(cs, ce);
	else if (tt_http_response_header(r, "x-ms-error-code"))
		code = tt_strdup(tt_http_response_header(r, "x-ms-error-code"));
	if (tt_xml_find(r->body.ptr, end, "Message", &ms, &me, NULL) && (msg = tt_xml_text(ms, me)))
		msg[strcspn(msg, "\r\n")] = '\0';  /* the first line; the rest is a request id */
	if (r->status == 403)
		fix = "; check the account key or SAS for this store in .tether/secrets.toml";
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
	const char *v = tt_http_response_header(r, "x-ms-version-id");
	m->size = size;
	m->etag = tt_xml_unquote(tt_http_response_header(r, "ETag"));
	if (v && *v && !(m->version = tt_strdup(v)))
		return tt_error_oom(err);
	m->mtime_ns = parse_http_date(tt_http_response_header(r, "Last-Modified"));
	if (tt_http_response_header(r, "ETag") && !m->etag)
		return tt_error_oom(err);
	return 0;
}

static int not_found(tt_store *s, const char *key, const char *version, tt_error *err)
{
	return tt_error_set(err, TT_ENOTFOUND, "%s: no blob '%s'%s%s", s->display, key,
			    version ? " at version " : "", version ? version : "");
}

static int no_versions(tt_store *s, tt_error *err)
{
	return tt_error_set(err, TT_ECAPABILITY,
			    "%s: this account keeps no blob versions; read the current blob, or "
			    "turn on versioning for the account", s->display);
}

/* ---- reads ----------------------------------------------------------------------- */

static int az_head(tt_store *s, const char *key, const char *version, tt_store_meta *out,
		   tt_error *err)
{
	tt_http_response r;
	az_param q[] = { { "versionid", version } };
	char *fk;
	int rc;
	if (version && !s->versioned)
		return no_versions(s, err);
	if (!(fk = full_key(s, key)))
		return tt_error_oom(err);
	call c = { .method = "HEAD", .key = fk, .query = q, .nquery = version ? 1 : 0 };
	tt_http_response_init(&r);
	rc = az_do(s, &c, &r, err);
	if (rc == 0) {
		if (r.status == 200) {
			const char *cl = tt_http_response_header(&r, "Content-Length");
			rc = meta_from_headers(&r, cl ? strtoull(cl, NULL, 10) : 0, out, err);
		} else if (r.status == 404 || (version && r.status == 400)) {
			rc = not_found(s, key, version, err);
		} else {
			rc = az_fail(s, "head", key, &r, err);
		}
	}
	tt_http_response_release(&r);
	free(fk);
	return rc;
}

static int copy_body(tt_store *s, const char *key, const char *data, size_t n, tt_buf *out,
		     tt_error *err)
{
	if (out->max && out->len + n > out->max)
		return tt_error_set(err, TT_ELIMIT, "%s: blob '%s' is larger than the %zu bytes allowed",
				    s->display, key, out->max);
	if (tt_buf_put(out, data, n) != 0)
		return tt_buf_check(out, err, key);
	return 0;
}

static int az_get_any(tt_store *s, const char *key, const char *version, const char *range,
		      tt_http_response *r, tt_error *err)
{
	az_param q[] = { { "versionid", version } };
	char *fk;
	int rc;
	if (version && !s->versioned)
		return no_versions(s, err);
	if (!(fk = full_key(s, key)))
		return tt_error_oom(err);
	call c = { .method = "GET", .key = fk, .query = q, .nquery = version ? 1 : 0,
		   .range = range };
	rc = az_do(s, &c, r, err);
	free(fk);
	if (rc == 0 && (r->status == 404 || (version && r->status == 400)))
		rc = not_found(s, key, version, err);
	return rc;
}

static int az_get(tt_store *s, const char *key, const char *version, tt_buf *out,
		  tt_store_meta *meta, tt_error *err)
{
	tt_http_response r;
	int rc;
	tt_http_response_init(&r);
	rc = az_get_any(s, key, version, NULL, &r, err);
	if (rc == 0 && r.status != 200)
		rc = az_fail(s, "get", key, &r, err);
	if (rc == 0)
		rc = copy_body(s, key, r.body.ptr, r.body.len, out, err);
	if (rc == 0 && meta)
		rc = meta_from_headers(&r, r.body.len, meta, err);
	tt_http_response_release(&r);
	return rc;
}

static int az_get_range(tt_store *s, const char *key, const char *version, uint64_t off,
			uint64_t len, tt_buf *out, tt_error *err)
{
	tt_http_response r;
	tt_store_meta m = { 0 };
	char range[80];
	int rc;
	/* the service refuses a range past the end (416): bound it by the size */
	rc = az_head(s, key, version, &m, err);
	if (rc || len == 0 || off >= m.size) {
		tt_store_meta_release(&m);
		return rc;
	}
	if (off + len > m.size)
		len = m.size - off;
	tt_store_meta_release(&m);
	snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
	tt_http_response_init(&r);
	rc = az_get_any(s, key, version, range, &r, err);
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
			rc = az_fail(s, "get", key, &r, err);
	}
	tt_http_response_release(&r);
	return rc;
}

static int az_list(tt_store *s, const char *prefix, const char *token, size_t max_keys,
		   tt_store_page *out, tt_error *err)
{
	az_impl *im = IM(s);
	tt_http_response r;
	char maxk[24], *fp = tt_asprintf("%s%s", im->prefix, prefix);
	/* sorted by name, as the canonical resource wants them */
	az_param q[5];
	size_t nq = 0, plen = strlen(im->prefix), alloc = 0;
	int rc;

	if (!fp)
		return tt_error_oom(err);
	snprintf(maxk, sizeof maxk, "%zu", max_keys > 5000 ? (size_t)5000 : max_keys);
	q[nq++] = (az_param){ "comp", "list" };
	if (token)
		q[nq++] = (az_param){ "marker", token };
	q[nq++] = (az_param){ "maxresults", maxk };
	if (*fp)
		q[nq++] = (az_param){ "prefix", fp };
	q[nq++] = (az_param){ "restype", "container" };
	call c = { .method = "GET", .query = q, .nquery = nq };
	tt_http_response_init(&r);
	rc = az_do(s, &c, &r, err);
	if (rc == 0 && r.status != 200)
		rc = az_fail(s, "list", prefix[0] ? prefix : NULL, &r, err);
	if (rc == 0) {
		const char *p = r.body.ptr, *end = p + r.body.len, *cs, *ce, *vs, *ve;
		while (rc == 0 && tt_xml_find(p, end, "Blob", &cs, &ce, &p)) {
			tt_store_entry e = { 0 };
			char *k = NULL, *sz = NULL;
			if (tt_xml_find(cs, ce, "Name", &vs, &ve, NULL))
				k = tt_xml_text(vs, ve);
			if (!k || strncmp(k, im->prefix, plen) != 0) {
				rc = k ? tt_error_set(err, TT_EBACKEND, "%s: list returned '%s', outside "
							  "the prefix", s->display, k)
				       : tt_error_set(err, TT_EBACKEND, "%s: list entry without a Name",
						      s->display);
				free(k);
				break;
			}
			e.key = tt_strdup(k + plen);
			free(k);
			if (tt_xml_find(cs, ce, "Etag", &vs, &ve, NULL)) {
				char *t = tt_xml_text(vs, ve);
				e.meta.etag = tt_xml_unquote(t);
				free(t);
			}
			if (tt_xml_find(cs, ce, "Content-Length", &vs, &ve, NULL) && (sz = tt_xml_text(vs, ve)))
				e.meta.size = strtoull(sz, NULL, 10);
			free(sz);
			if (tt_xml_find(cs, ce, "Last-Modified", &vs, &ve, NULL)) {
				char *t = tt_xml_text(vs, ve);
				e.meta.mtime_ns = parse_http_date(t);
				free(t);
			}
			if (tt_xml_find(cs, ce, "VersionId", &vs, &ve, NULL))
				e.meta.version = tt_xml_text(vs, ve);
			if (!e.key || TT_ARRAY_GROW(out->items, alloc, out->n + 1) != 0) {
				free(e.key);
				tt_store_meta_release(&e.meta);
				rc = tt_error_oom(err);
				break;
			}
			out->items[out->n++] = e;
		}
		if (rc == 0 && tt_xml_find(r.body.ptr, end, "NextMarker", &vs, &ve, NULL) && ve > vs &&
		    !(out->next = tt_xml_text(vs, ve)))
			rc = tt_error_oom(err);
	}
	if (rc)
		tt_store_page_release(out);
	tt_http_response_release(&r);
	free(fp);
	return rc;
}

/* ---- writes ---------------------------------------------------------------------- */

typedef enum put_cond { PUT_ALWAYS, PUT_ABSENT, PUT_MATCH } put_cond;

static int az_put_cond(tt_store *s, const char *key, put_cond cond, const char *etag,
		       const void *data, size_t len, tt_store_meta *meta, tt_error *err)
{
	tt_http_response r;
	char quoted[256];
	char *fk = full_key(s, key);
	int rc;
	if (!fk)
		return tt_error_oom(err);
	if (cond == PUT_MATCH)
		snprintf(quoted, sizeof quoted, "\"%s\"", etag);
	call c = { .method = "PUT", .key = fk, .blob_put = true, .body = data, .len = len,
		   .if_match = cond == PUT_MATCH ? quoted : NULL,
		   .if_none_match = cond == PUT_ABSENT ? "*" : NULL };
	tt_http_response_init(&r);
	rc = az_do(s, &c, &r, err);
	if (rc == 0 && (r.status == 412 || r.status == 409) && r.attempts > 1) {
		/* retried: did our first attempt land?  Compare the content. */
		tt_buf now = TT_BUF_INIT;
		tt_store_meta m = { 0 };
		tt_error e2 = TT_ERROR_INIT;
		if (az_get(s, key, NULL, &now, &m, &e2) == 0 && now.len == len &&
		    (len == 0 || memcmp(now.ptr, data, len) == 0)) {
			if (meta) {
				*meta = m;
				memset(&m, 0, sizeof m);
			}
			r.status = 201;
			meta = NULL;
		}
		tt_buf_release(&now);
		tt_store_meta_release(&m);
		tt_error_clear(&e2);
	}
	if (rc == 0) {
		if (r.status == 201 || r.status == 200) {
			if (meta)
				rc = meta_from_headers(&r, len, meta, err);
		} else if ((r.status == 409 || r.status == 412) && cond == PUT_ABSENT) {
			rc = tt_error_set(err, TT_EEXISTS, "%s: blob '%s' already exists", s->display,
					  key);
		} else if (r.status == 412 && cond == PUT_MATCH) {
			/* a missing blob fails If-Match too: tell the two apart */
			tt_store_meta m = { 0 };
			tt_error e2 = TT_ERROR_INIT;
			int hr = az_head(s, key, NULL, &m, &e2);
			tt_store_meta_release(&m);
			tt_error_clear(&e2);
			rc = hr == TT_ENOTFOUND
				     ? not_found(s, key, NULL, err)
				     : tt_error_set(err, TT_EREFMOVED,
						    "%s: blob '%s' moved meanwhile (it no longer has etag "
						    "%s); read it again and retry", s->display, key, etag);
		} else if (r.status == 404 && cond == PUT_MATCH) {
			rc = not_found(s, key, NULL, err);
		} else {
			rc = az_fail(s, "put", key, &r, err);
		}
	}
	tt_http_response_release(&r);
	free(fk);
	return rc;
}

static int az_put(tt_store *s, const char *key, const void *data, size_t len, tt_store_meta *meta,
		  tt_error *err)
{
	return az_put_cond(s, key, PUT_ALWAYS, NULL, data, len, meta, err);
}

static int az_put_if_absent(tt_store *s, const char *key, const void *data, size_t len,
			    tt_store_meta *meta, tt_error *err)
{
	return az_put_cond(s, key, PUT_ABSENT, NULL, data, len, meta, err);
}

static int az_put_if_match(tt_store *s, const char *key, const char *etag, const void *data,
			   size_t len, tt_store_meta *meta, tt_error *err)
{
	if (strchr(etag, '"') || strlen(etag) > 200)
		return tt_error_set(err, TT_EUSAGE, "%s: '%s' is not an etag", s->display, etag);
	return az_put_cond(s, key, PUT_MATCH, etag, data, len, meta, err);
}

static int az_del(tt_store *s, const char *key, tt_error *err)
{
	tt_http_response r;
	char *fk = full_key(s, key);
	int rc;
	if (!fk)
		return tt_error_oom(err);
	call c = { .method = "DELETE", .key = fk };
	tt_http_response_init(&r);
	rc = az_do(s, &c, &r, err);
	if (rc == 0 && r.status != 202 && r.status != 200 && r.status != 404)
		rc = az_fail(s, "delete", key, &r, err);
	tt_http_response_release(&r);
	free(fk);
	return rc;
}

/* ---- open ------------------------------------------------------------------------ */

static void impl_free(az_impl *im)
{
	if (!im)
		return;
	tt_http_client_free(im->http);
	free(im->account);
	free(im->container);
	free(im->prefix);
	free(im->base);
	free(im->basepath);
	if (im->key) {
		memset(im->key, 0, im->keylen);
		free(im->key);
	}
	if (im->sas) {
		memset(im->sas, 0, strlen(im->sas));
		free(im->sas);
	}
	free(im);
}

static void az_close(tt_store *s)
{
	impl_free(s->impl);
	free(s->display);
	free(s);
}

static const tt_store_ops az_ops = {
	.get = az_get,
	.get_range = az_get_range,
	.head = az_head,
	.list = az_list,
	.put = az_put,
	.put_if_absent = az_put_if_absent,
	.put_if_match = az_put_if_match,
	.del = az_del,
	.close = az_close,
};

static int az_build(const tt_azure_config *cfg, tt_store **out, tt_error *err)
{
	tt_store *s = NULL;
	az_impl *im = NULL;
	const char *prefix = cfg->prefix ? cfg->prefix : "";
	int rc;

	*out = NULL;
	if ((rc = tt_crypto_load(err)) != 0)
		return rc;
	if (!cfg->container || !*cfg->container || strchr(cfg->container, '/'))
		return tt_error_set(err, TT_ECONFIG,
				    "azure: a store needs a container name (az://<container>/...)");
	if (!cfg->account || !*cfg->account || strchr(cfg->account, '/'))
		return tt_error_set(err, TT_ECONFIG,
				    "az://%s: no storage account: set account_name for this store in "
				    ".tether/secrets.toml (or AZURE_STORAGE_ACCOUNT_NAME)", cfg->container);
	if (!(s = tt_calloc(1, sizeof *s)) || !(im = tt_calloc(1, sizeof *im))) {
		free(s);
		return tt_error_oom(err);
	}
	s->impl = im;
	s->ops = &az_ops;
	s->kind = TT_STORE_AZURE;
	while (*prefix == '/')
		prefix++;
	im->account = tt_strdup(cfg->account);
	im->container = tt_strdup(cfg->container);
	im->prefix = tt_asprintf("%s%s", prefix, *prefix && prefix[strlen(prefix) - 1] != '/' ? "/" : "");
	s->display = tt_asprintf("az://%s/%s", cfg->container, im->prefix ? im->prefix : "");
	if (cfg->endpoint && *cfg->endpoint) {
		const char *e = cfg->endpoint, *h = strstr(e, "://");
		size_t n;
		if (!h || (strncasecmp(e, "http://", 7) != 0 && strncasecmp(e, "https://", 8) != 0)) {
			az_close(s);
			return tt_error_set(err, TT_ECONFIG,
					    "azure: endpoint must be http(s)://host[:port][/path], not "
					    "'%s'", e);
		}
		im->base = tt_strdup(e);
		if (im->base) {
			n = strlen(im->base);
			while (n && im->base[n - 1] == '/')
				im->base[--n] = '\0';
			h = strstr(im->base, "://") + 3;
			im->basepath = tt_strdup(h + strcspn(h, "/"));
		}
	} else {
		im->base = tt_asprintf("https://%s.blob.core.windows.net", cfg->account);
		im->basepath = tt_strdup("");
	}
	if (cfg->account_key && *cfg->account_key &&
	    b64_decode(cfg->account_key, &im->key, &im->keylen) != 0) {
		az_close(s);
		return tt_error_set(err, TT_ECONFIG,
				    "az://%s: the account key is not base64; copy it again from the "
				    "storage account's access keys", cfg->container);
	}
	if (cfg->sas_token && *cfg->sas_token)
		im->sas = tt_strdup(cfg->sas_token[0] == '?' ? cfg->sas_token + 1 : cfg->sas_token);
	if (!im->account || !im->container || !im->prefix || !s->display || !im->base ||
	    !im->basepath || (cfg->sas_token && *cfg->sas_token && !im->sas)) {
		az_close(s);
		return tt_error_oom(err);
	}
	if ((rc = tt_http_client_new(&cfg->http, &im->http, err)) != 0) {
		az_close(s);
		return rc;
	}
	*out = s;
	return 0;
}

int tt_store_azure_open(const tt_azure_config *cfg, tt_store **out, tt_error *err)
{
	/* Version ids appear on writes and reads where the account keeps them;
	 * a store starts unversioned and a read at a version is refused
	 * (Azurite keeps none). */
	return az_build(cfg, out, err);
}

int tt_azure_create_container(const tt_azure_config *cfg, tt_error *err)
{
	tt_store *s;
	tt_http_response r;
	az_param q[] = { { "restype", "container" } };
	int rc = az_build(cfg, &s, err);
	if (rc)
		return rc;
	call c = { .method = "PUT", .query = q, .nquery = 1 };
	tt_http_response_init(&r);
	rc = az_do(s, &c, &r, err);
	if (rc == 0 && r.status != 201 && r.status != 409)
		rc = az_fail(s, "create container", NULL, &r, err);
	tt_http_response_release(&r);
	az_close(s);
	return rc;
}
