/*
 * net/sigv4.c - AWS Signature Version 4 (see sigv4.h).
 */
#include "net/sigv4.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/http.h"
#include "util/buf.h"
#include "util/crypto_api.h"
#include "util/hash.h"
#include "util/mem.h"

#define UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

/* Headers sent but never signed (they change on the way, or are hop-by-hop). */
static bool unsigned_header(const char *lname)
{
	static const char *const names[] = {
		"baggage", "connection", "expect", "keep-alive", "proxy-authenticate",
		"proxy-authorization", "te", "traceparent", "tracestate", "trailer",
		"transfer-encoding", "upgrade", "user-agent", "x-amzn-trace-id", "authorization",
		NULL,
	};
	for (const char *const *p = names; *p; p++)
		if (strcmp(*p, lname) == 0)
			return true;
	return false;
}

typedef struct kv {
	char *k, *v;
	size_t order;
} kv;

typedef struct kvs {
	kv *v;
	size_t n, alloc;
	bool oom;
} kvs;

static void kvs_add(kvs *s, char *k, char *v)
{
	if (!k || !v || TT_ARRAY_GROW(s->v, s->alloc, s->n + 1) != 0) {
		free(k);
		free(v);
		s->oom = true;
		return;
	}
	s->v[s->n] = (kv){ k, v, s->n };
	s->n++;
}

static void kvs_free(kvs *s)
{
	for (size_t i = 0; i < s->n; i++) {
		free(s->v[i].k);
		free(s->v[i].v);
	}
	free(s->v);
}

static int cmp_kv(const void *a, const void *b)
{
	const kv *x = a, *y = b;
	int c = strcmp(x->k, y->k);
	if (c)
		return c;
	return strcmp(x->v, y->v);
}

static int cmp_kv_stable(const void *a, const void *b)
{
	const kv *x = a, *y = b;
	int c = strcmp(x->k, y->k);
	return c ? c : (x->order > y->order) - (x->order < y->order);
}

static char *encode(const char *s, bool keep_slash)
{
	tt_buf b = TT_BUF_INIT;
	if (tt_http_uri_encode(&b, s ? s : "", s ? strlen(s) : 0, keep_slash) != 0 ||
	    tt_buf_puts(&b, "") != 0) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

/* Lower-cased name; value with surrounding whitespace gone and inner runs
 * folded to one space. */
static void add_header(kvs *h, const char *line)
{
	const char *colon = strchr(line, ':');
	tt_buf v = TT_BUF_INIT;
	char *name;
	if (!colon)
		return;
	name = tt_strndup(line, (size_t)(colon - line));
	if (name) {
		for (char *p = name; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		/* trailing spaces in the name are not part of it */
		for (size_t n = strlen(name); n && isspace((unsigned char)name[n - 1]); n--)
			name[n - 1] = '\0';
	}
	for (const char *p = colon + 1; *p;) {
		while (*p && isspace((unsigned char)*p))
			p++;
		if (!*p)
			break;
		if (v.len)
			tt_buf_putc(&v, ' ');
		const char *e = p;
		while (*e && !isspace((unsigned char)*e))
			e++;
		tt_buf_put(&v, p, (size_t)(e - p));
		p = e;
	}
	tt_buf_puts(&v, "");
	if (v.failed) {
		tt_buf_release(&v);
		free(name);
		h->oom = true;
		return;
	}
	kvs_add(h, name, tt_buf_detach(&v));
}

static void hmac(uint8_t out[32], const void *key, size_t klen, const char *msg)
{
	unsigned int n = 32;
	HMAC(EVP_sha256(), key, (int)klen, (const unsigned char *)msg, strlen(msg), out, &n);
}

void tt_sigv4_out_release(tt_sigv4_out *out)
{
	if (!out)
		return;
	free(out->url);
	for (size_t i = 0; i < out->nheaders; i++)
		free(out->headers[i]);
	free(out->headers);
	free(out->signature);
	memset(out, 0, sizeof *out);
}

static void out_header(tt_sigv4_out *o, char *line, bool *oom)
{
	char **g;
	if (!line) {
		*oom = true;
		return;
	}
	g = tt_reallocarray(o->headers, o->nheaders + 2, sizeof *g);
	if (!g) {
		free(line);
		*oom = true;
		return;
	}
	o->headers = g;
	g[o->nheaders++] = line;
	g[o->nheaders] = NULL;
}

static int sign(const tt_sigv4_input *in, const tt_aws_creds *cr, bool presign, tt_sigv4_out *out,
		tt_error *err)
{
	char amzdate[17], datestamp[9], payload[65], crhash[65];
	time_t now = in->now ? in->now : time(NULL);
	struct tm tm;
	kvs q = { 0 }, h = { 0 };
	tt_buf canon = TT_BUF_INIT, signed_h = TT_BUF_INIT, sts = TT_BUF_INIT, scope = TT_BUF_INIT;
	tt_buf url = TT_BUF_INIT;
	char *path = NULL, *cred = NULL;
	uint8_t k[32], sig[32];
	char sighex[65];
	bool token = cr->session_token && *cr->session_token, oom = false;
	const char *scheme = in->scheme ? in->scheme : "https";
	int rc = 0;

	memset(out, 0, sizeof *out);
	if ((rc = tt_crypto_load(err)) != 0)
		return rc;
	if (!cr->access_key_id || !*cr->access_key_id || !cr->secret_access_key ||
	    !*cr->secret_access_key)
		return tt_error_set(err, TT_ECONFIG,
				    "[%s] no AWS credentials to sign with: set access_key_id and "
				    "secret_access_key (or a profile) for this store",
				    in->service ? in->service : "s3");
	if (!in->region || !*in->region || !in->host || !*in->host || !in->path || in->path[0] != '/')
		return tt_error_set(err, TT_EUSAGE, "sigv4: region, host and an absolute path are needed");
	gmtime_r(&now, &tm);
	strftime(amzdate, sizeof amzdate, "%Y%m%dT%H%M%SZ", &tm);
	memcpy(datestamp, amzdate, 8);
	datestamp[8] = '\0';
	tt_buf_printf(&scope, "%s/%s/%s/aws4_request", datestamp, in->region, in->service);

	if (presign || in->unsigned_payload)
		strcpy(payload, UNSIGNED_PAYLOAD);
	else
		tt_sha256_hex(payload, in->body ? in->body : "", in->body_len);

	/* headers to sign */
	kvs_add(&h, tt_strdup("host"), tt_strdup(in->host));
	for (const char *const *p = in->headers; p && *p; p++)
		add_header(&h, *p);
	if (!presign) {
		kvs_add(&h, tt_strdup("x-amz-date"), tt_strdup(amzdate));
		kvs_add(&h, tt_strdup("x-amz-content-sha256"), tt_strdup(payload));
		if (token)
			kvs_add(&h, tt_strdup("x-amz-security-token"), tt_strdup(cr->session_token));
	}
	if (h.oom || q.oom)
		goto oom;
	qsort(h.v, h.n, sizeof *h.v, cmp_kv_stable);
	{
		tt_buf ch = TT_BUF_INIT;
		const char *last = NULL;
		for (size_t i = 0; i < h.n; i++) {
			if (unsigned_header(h.v[i].k))
				continue;
			if (last && strcmp(last, h.v[i].k) == 0) {
				tt_buf_printf(&ch, ",%s", h.v[i].v);
				continue;
			}
			if (last)
				tt_buf_putc(&ch, '\n');
			tt_buf_printf(&ch, "%s:%s", h.v[i].k, h.v[i].v);
			tt_buf_printf(&signed_h, "%s%s", last ? ";" : "", h.v[i].k);
			last = h.v[i].k;
		}
		tt_buf_putc(&ch, '\n');
		/* the query, now that SignedHeaders is known */
		for (size_t i = 0; i < in->nquery; i++)
			kvs_add(&q, encode(in->query[i].name, false), encode(in->query[i].value, false));
		if (presign) {
			char expires[24];
			cred = tt_asprintf("%s/%s", cr->access_key_id, scope.ptr);
			snprintf(expires, sizeof expires, "%ld", in->expires > 0 ? in->expires : 3600L);
			kvs_add(&q, tt_strdup("X-Amz-Algorithm"), tt_strdup("AWS4-HMAC-SHA256"));
			kvs_add(&q, tt_strdup("X-Amz-Credential"), encode(cred, false));
			kvs_add(&q, tt_strdup("X-Amz-Date"), tt_strdup(amzdate));
			kvs_add(&q, tt_strdup("X-Amz-Expires"), tt_strdup(expires));
			kvs_add(&q, tt_strdup("X-Amz-SignedHeaders"), encode(signed_h.ptr, false));
			if (token)
				kvs_add(&q, tt_strdup("X-Amz-Security-Token"), encode(cr->session_token, false));
		}
		if (q.oom || !(path = encode(in->path, true))) {
			tt_buf_release(&ch);
			goto oom;
		}
		if (q.n)
			qsort(q.v, q.n, sizeof *q.v, cmp_kv);
		tt_buf_printf(&url, "%s://%s%s", scheme, in->host, path);
		tt_buf_printf(&canon, "%s\n%s\n", in->method, path);
		for (size_t i = 0; i < q.n; i++) {
			tt_buf_printf(&canon, "%s%s=%s", i ? "&" : "", q.v[i].k, q.v[i].v);
			tt_buf_printf(&url, "%s%s=%s", i ? "&" : "?", q.v[i].k, q.v[i].v);
		}
		tt_buf_printf(&canon, "\n%s\n%s\n%s", ch.ptr, signed_h.ptr, payload);
		tt_buf_release(&ch);
	}
	if (canon.failed || signed_h.failed || scope.failed || url.failed)
		goto oom;
	tt_sha256_hex(crhash, canon.ptr, canon.len);
	tt_buf_printf(&sts, "AWS4-HMAC-SHA256\n%s\n%s\n%s", amzdate, scope.ptr, crhash);
	{
		tt_buf key = TT_BUF_INIT;
		tt_buf_printf(&key, "AWS4%s", cr->secret_access_key);
		if (key.failed || sts.failed) {
			tt_buf_release(&key);
			goto oom;
		}
		hmac(k, key.ptr, key.len, datestamp);
		memset(key.ptr, 0, key.len);
		tt_buf_release(&key);
	}
	hmac(k, k, 32, in->region);
	hmac(k, k, 32, in->service);
	hmac(k, k, 32, "aws4_request");
	hmac(sig, k, 32, sts.ptr);
	memset(k, 0, sizeof k);
	tt_hex(sighex, sig, 32);

	if (presign)
		tt_buf_printf(&url, "&X-Amz-Signature=%s", sighex);
	if (url.failed)
		goto oom;
	out->url = tt_buf_detach(&url);
	out->signature = tt_strdup(sighex);
	for (const char *const *p = in->headers; p && *p; p++)
		out_header(out, tt_strdup(*p), &oom);
	if (!presign) {
		out_header(out, tt_asprintf("X-Amz-Date: %s", amzdate), &oom);
		out_header(out, tt_asprintf("X-Amz-Content-SHA256: %s", payload), &oom);
		if (token)
			out_header(out, tt_asprintf("X-Amz-Security-Token: %s", cr->session_token), &oom);
		out_header(out,
			   tt_asprintf("Authorization: AWS4-HMAC-SHA256 Credential=%s/%s, "
				       "SignedHeaders=%s, Signature=%s",
				       cr->access_key_id, scope.ptr, signed_h.ptr, sighex),
			   &oom);
	} else if (!out->headers && !(out->headers = tt_calloc(1, sizeof *out->headers))) {
		oom = true;
	}
	if (oom || !out->signature)
		goto oom;
	goto done;
oom:
	tt_sigv4_out_release(out);
	rc = tt_error_oom(err);
done:
	kvs_free(&q);
	kvs_free(&h);
	tt_buf_release(&canon);
	tt_buf_release(&signed_h);
	tt_buf_release(&sts);
	tt_buf_release(&scope);
	tt_buf_release(&url);
	free(path);
	free(cred);
	return rc;
}

int tt_sigv4_sign(const tt_sigv4_input *in, const tt_aws_creds *creds, tt_sigv4_out *out,
		  tt_error *err)
{
	return sign(in, creds, false, out, err);
}

int tt_sigv4_presign(const tt_sigv4_input *in, const tt_aws_creds *creds, tt_sigv4_out *out,
		     tt_error *err)
{
	return sign(in, creds, true, out, err);
}
