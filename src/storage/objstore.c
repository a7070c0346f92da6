/*
 * storage/objstore.c - what the object stores on HTTP share (see
 * objstore.h): each op sends through the driver and reads the answer the
 * same way.  Responses map onto the store's codes: 404 -> TT_ENOTFOUND
 * (and 400 on a read at a version: no such version), a failed condition
 * -> TT_EEXISTS / TT_EREFMOVED.  A conditional write that the HTTP client
 * had to retry and that then fails its condition may have been ours: when
 * the blob now holds exactly our bytes, the first attempt won and the
 * write succeeded.
 */
#define _GNU_SOURCE
#include "storage/objstore.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "storage/xml.h"
#include "util/mem.h"

#define OS(s) ((tt_objstore *)(s)->impl)

char *tt_objstore_full_key(tt_store *s, const char *key)
{
	return tt_asprintf("%s%s", OS(s)->prefix, key);
}

char *tt_objstore_prefix(const char *configured)
{
	const char *p = configured ? configured : "";
	while (*p == '/')
		p++;
	return tt_asprintf("%s%s", p, *p && p[strlen(p) - 1] != '/' ? "/" : "");
}

/* The n digits at v as a number, or -1. */
static int digits(const char *v, int n)
{
	int x = 0;
	for (int i = 0; i < n; i++) {
		if (v[i] < '0' || v[i] > '9')
			return -1;
		x = x * 10 + (v[i] - '0');
	}
	return x;
}

/*
 * "YYYY-MM-DDTHH:MM:SS[.fff...]" (what every listing entry carries) in ms
 * since the epoch into *ms, without strptime and timegm, whose locale and
 * time-zone work was a tenth of a listing's time; false for anything else
 * (parse_time then reads it the long way).  The day count is the proleptic
 * Gregorian one timegm uses.
 */
static bool iso_fast(const char *v, int64_t *ms)
{
	int y = digits(v, 4), mo, d, h, mi, sec;
	if (y < 0 || v[4] != '-' || v[7] != '-' || v[10] != 'T' || v[13] != ':' || v[16] != ':')
		return false;
	mo = digits(v + 5, 2), d = digits(v + 8, 2), h = digits(v + 11, 2);
	mi = digits(v + 14, 2), sec = digits(v + 17, 2);
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || h < 0 || h > 23 || mi < 0 || mi > 59 || sec < 0 ||
	    sec > 60)
		return false;
	int64_t yy = y - (mo <= 2), era = (yy >= 0 ? yy : yy - 399) / 400;
	int64_t yoe = yy - era * 400, mp = (mo + 9) % 12;
	int64_t doy = (153 * mp + 2) / 5 + d - 1, doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	int64_t days = era * 146097 + doe - 719468, frac = 0;
	if (v[19] == '.')
		for (int i = 1, scale = 100; i <= 3 && v[19 + i] >= '0' && v[19 + i] <= '9'; i++, scale /= 10)
			frac += (v[19 + i] - '0') * scale;
	*ms = ((days * 24 + h) * 60 + mi) * 60000 + (int64_t)sec * 1000 + frac;
	return true;
}

/* An ISO 8601 time (milliseconds kept) or an HTTP date, in ns since the
 * epoch; 0 when it is neither. */
static int64_t parse_time(const char *v, bool iso)
{
	struct tm tm;
	const char *end;
	int64_t ms = 0;
	memset(&tm, 0, sizeof tm);
	if (!v)
		return 0;
	if (iso && iso_fast(v, &ms))
		return ms * 1000000;
	end = strptime(v, iso ? "%Y-%m-%dT%H:%M:%S" : "%a, %d %b %Y %H:%M:%S", &tm);
	if (!end)
		return 0;
	if (iso && *end == '.')
		for (int i = 1, scale = 100; i <= 3 && end[i] >= '0' && end[i] <= '9'; i++, scale /= 10)
			ms += (end[i] - '0') * scale;
	return ((int64_t)timegm(&tm) * 1000 + ms) * 1000000;
}

static int send_req(tt_store *s, const tt_objstore_req *q, tt_http_response *r, tt_error *err)
{
	tt_http_response_init(r);
	return OS(s)->drv->send(s, q, r, err);
}

/* ---- answers ------------------------------------------------------------------- */

int tt_objstore_fail(tt_store *s, const char *what, const char *key, const tt_http_response *r,
		     tt_error *err)
{
	const tt_objstore_driver *d = OS(s)->drv;
	const char *end = r->body.ptr + r->body.len, *cs, *ce, *ms, *me, *h;
	char *code = NULL, *msg = NULL;
	const char *fix;
	int rc = r->status == 404 ? TT_ENOTFOUND : TT_EBACKEND;
	if (tt_xml_find(r->body.ptr, end, "Code", &cs, &ce, NULL))
		code = tt_xml_text(cs, ce);
	else if (d->code_header && (h = tt_http_response_header(r, d->code_header)))
		code = tt_strdup(h);
	if (tt_xml_find(r->body.ptr, end, "Message", &ms, &me, NULL) && (msg = tt_xml_text(ms, me)))
		msg[strcspn(msg, "\r\n")] = '\0'; /* the first line; a request id may follow */
	if (!code && !msg && r->body.len) {
		/* a JSON API's error (GCS's upload) */
		json_t *j = json_loadb(r->body.ptr, r->body.len, 0, NULL);
		json_t *m = json_object_get(json_object_get(j, "error"), "message");
		if (json_is_string(m))
			msg = tt_strdup(json_string_value(m));
		json_decref(j);
	}
	fix = d->fix ? d->fix(r->status, code) : "";
	tt_error_set(err, rc, "%s: %s%s%s%s: HTTP %ld%s%s%s%s%s", s->display, what, key ? " '" : "",
		     key ? key : "", key ? "'" : "", r->status, code ? " " : "", code ? code : "",
		     msg ? ": " : "", msg ? msg : "", fix);
	free(code);
	free(msg);
	return rc;
}

static int not_found(tt_store *s, const char *key, const char *version, tt_error *err)
{
	const tt_objstore_driver *d = OS(s)->drv;
	return tt_error_set(err, TT_ENOTFOUND, "%s: no %s '%s'%s%s%s%s", s->display, d->noun, key,
			    version ? " at " : "", version ? d->version_word : "", version ? " " : "",
			    version ? version : "");
}

/* A response's meta: size as given, etag unquoted, version, mtime. */
static int meta_of(tt_store *s, const tt_http_response *r, uint64_t size, tt_store_meta *m,
		   tt_error *err)
{
	const char *v = tt_http_response_header(r, OS(s)->drv->version_header);
	m->size = size;
	m->etag = tt_xml_unquote(tt_http_response_header(r, "ETag"));
	if (v && *v && strcmp(v, "null") != 0 && !(m->version = tt_strdup(v)))
		return tt_error_oom(err);
	m->mtime_ns = parse_time(tt_http_response_header(r, "Last-Modified"), false);
	if (tt_http_response_header(r, "ETag") && !m->etag)
		return tt_error_oom(err);
	return 0;
}

static int copy_body(tt_store *s, const char *key, const char *data, size_t n, tt_buf *out,
		     tt_error *err)
{
	if (out->max && out->len + n > out->max)
		return tt_error_set(err, TT_ELIMIT, "%s: %s '%s' is larger than the %zu bytes allowed",
				    s->display, OS(s)->drv->noun, key, out->max);
	if (tt_buf_put(out, data, n) != 0)
		return tt_buf_check(out, err, key);
	return 0;
}

/* ---- reads --------------------------------------------------------------------- */

int tt_objstore_head(tt_store *s, const char *key, const char *version, tt_store_meta *out,
		     tt_error *err)
{
	const tt_objstore_driver *d = OS(s)->drv;
	tt_http_response r;
	char *fk = tt_objstore_full_key(s, key);
	int rc;
	if (!fk)
		return tt_error_oom(err);
	rc = send_req(s, &(tt_objstore_req){ .method = "HEAD", .key = fk, .name = key, .version = version }, &r, err);
	if (rc == 0) {
		if (r.status == 200) {
			const char *sz = d->size_header ? tt_http_response_header(&r, d->size_header) : NULL;
			if (!sz)
				sz = tt_http_response_header(&r, "Content-Length");
			rc = meta_of(s, &r, sz ? strtoull(sz, NULL, 10) : 0, out, err);
		} else if (r.status == 404 || (version && r.status == 400)) {
			rc = not_found(s, key, version, err);
		} else {
			rc = tt_objstore_fail(s, "head", key, &r, err);
		}
	}
	tt_http_response_release(&r);
	free(fk);
	return rc;
}

/* GET key, with an optional range: a missing key (or version) is an error. */
static int get_any(tt_store *s, const char *key, const char *version, const char *range,
		   tt_http_response *r, tt_error *err)
{
	char *fk = tt_objstore_full_key(s, key);
	int rc;
	if (!fk) {
		tt_http_response_init(r);
		return tt_error_oom(err);
	}
	rc = send_req(s, &(tt_objstore_req){ .method = "GET", .key = fk, .name = key, .version = version,
						     .range = range },
		      r, err);
	free(fk);
	if (rc == 0 && (r->status == 404 || (version && r->status == 400)))
		rc = not_found(s, key, version, err);
	return rc;
}

int tt_objstore_get(tt_store *s, const char *key, const char *version, tt_buf *out,
		    tt_store_meta *meta, tt_error *err)
{
	tt_http_response r;
	int rc = get_any(s, key, version, NULL, &r, err);
	if (rc == 0 && r.status != 200)
		rc = tt_objstore_fail(s, "get", key, &r, err);
	if (rc == 0)
		rc = copy_body(s, key, r.body.ptr, r.body.len, out, err);
	if (rc == 0 && meta)
		rc = meta_of(s, &r, r.body.len, meta, err);
	tt_http_response_release(&r);
	return rc;
}

int tt_objstore_get_range(tt_store *s, const char *key, const char *version, uint64_t off,
			  uint64_t len, tt_buf *out, tt_error *err)
{
	tt_http_response r;
	char range[64];
	int rc;
	if (len == 0 || OS(s)->drv->clip_ranges) {
		/* a missing key is an error even for no bytes; where the service
		 * refuses a range past the end (416), the size bounds it */
		tt_store_meta m = { 0 };
		rc = tt_objstore_head(s, key, version, &m, err);
		uint64_t size = m.size;
		tt_store_meta_release(&m);
		if (rc || len == 0 || off >= size)
			return rc;
		if (off + len > size)
			len = size - off;
	}
	snprintf(range, sizeof range, "bytes=%" PRIu64 "-%" PRIu64, off, off + len - 1);
	rc = get_any(s, key, version, range, &r, err);
	if (rc == 0) {
		if (r.status == 206)
			rc = copy_body(s, key, r.body.ptr, r.body.len, out, err);
		else if (r.status == 200) /* the server ignored the range */
			rc = off < r.body.len ? copy_body(s, key, r.body.ptr + off,
							  r.body.len - off < len ? r.body.len - (size_t)off
										 : (size_t)len,
							  out, err)
					      : 0;
		else if (r.status != 416) /* past the end: nothing */
			rc = tt_objstore_fail(s, "get", key, &r, err);
	}
	tt_http_response_release(&r);
	return rc;
}

/* ---- writes -------------------------------------------------------------------- */

/* After a retried conditional write failed its condition: does the blob
 * hold exactly data (our first attempt landed)?  *m gets its meta then. */
static bool landed(tt_store *s, const char *key, const void *data, size_t len, tt_store_meta *m)
{
	const tt_objstore_driver *d = OS(s)->drv;
	tt_error quiet = TT_ERROR_INIT;
	bool yes;
	if (d->etag_of) {
		char want[33];
		d->etag_of(want, data, len);
		yes = tt_objstore_head(s, key, NULL, m, &quiet) == 0 && m->etag && strcmp(m->etag, want) == 0;
	} else {
		tt_buf now = TT_BUF_INIT;
		yes = tt_objstore_get(s, key, NULL, &now, m, &quiet) == 0 && now.len == len &&
		      (len == 0 || memcmp(now.ptr, data, len) == 0);
		tt_buf_release(&now);
	}
	if (!yes)
		tt_store_meta_release(m);
	tt_error_clear(&quiet);
	return yes;
}

/* A failed If-Match: moved, or gone (a missing blob fails it too). */
static int match_lost(tt_store *s, const char *key, const char *etag, tt_error *err)
{
	tt_store_meta m = { 0 };
	tt_error quiet = TT_ERROR_INIT;
	int hr = tt_objstore_head(s, key, NULL, &m, &quiet);
	tt_store_meta_release(&m);
	tt_error_clear(&quiet);
	if (hr == TT_ENOTFOUND)
		return not_found(s, key, NULL, err);
	return tt_error_set(err, TT_EREFMOVED,
			    "%s: %s '%s' moved meanwhile (it no longer has etag %s); read it again and "
			    "retry", s->display, OS(s)->drv->noun, key, etag);
}

int tt_objstore_put(tt_store *s, const char *key, tt_store_cond cond, const char *etag,
		    const void *data, size_t len, tt_store_meta *meta, tt_error *err)
{
	const tt_objstore_driver *d = OS(s)->drv;
	tt_http_response r;
	tt_store_meta mine = { 0 };
	char *fk;
	int rc;
	if (cond == TT_STORE_PUT_IF_MATCH && (strchr(etag, '"') || strlen(etag) > 200))
		return tt_error_set(err, TT_EUSAGE, "%s: '%s' is not an etag", s->display, etag);
	if (!(fk = tt_objstore_full_key(s, key)))
		return tt_error_oom(err);
	rc = send_req(s, &(tt_objstore_req){ .method = "PUT", .key = fk, .name = key, .cond = cond, .etag = etag,
					     .body = data, .len = len },
		      &r, err);
	free(fk);
	if (rc == 0 && (r.status == 412 || r.status == 409) && r.attempts > 1 &&
	    landed(s, key, data, len, &mine)) {
		if (meta) {
			*meta = mine;
			memset(&mine, 0, sizeof mine);
		}
	} else if (rc == 0) {
		bool lost = d->lost(r.status, cond);
		if (r.status >= 200 && r.status < 300) {
			if (meta)
				rc = d->meta_by_head ? tt_objstore_head(s, key, NULL, meta, err)
						     : meta_of(s, &r, len, meta, err);
		} else if (lost && cond == TT_STORE_PUT_IF_ABSENT) {
			rc = tt_error_set(err, TT_EEXISTS, "%s: %s '%s' already exists", s->display,
					  d->noun, key);
		} else if (lost && cond == TT_STORE_PUT_IF_MATCH) {
			rc = match_lost(s, key, etag, err);
		} else if (r.status == 404 && cond == TT_STORE_PUT_IF_MATCH) {
			rc = not_found(s, key, NULL, err);
		} else if (r.status == 501 && cond != TT_STORE_PUT_ANY) {
			rc = tt_error_set(err, TT_ECAPABILITY,
					  "%s: the server does not support conditional writes (If-%s); use "
					  "a server that does", s->display,
					  cond == TT_STORE_PUT_IF_ABSENT ? "None-Match" : "Match");
		} else {
			rc = tt_objstore_fail(s, "put", key, &r, err);
		}
	}
	tt_store_meta_release(&mine);
	tt_http_response_release(&r);
	return rc;
}

int tt_objstore_del(tt_store *s, const char *key, tt_error *err)
{
	tt_http_response r;
	char *fk = tt_objstore_full_key(s, key);
	int rc;
	if (!fk)
		return tt_error_oom(err);
	rc = send_req(s, &(tt_objstore_req){ .method = "DELETE", .key = fk, .name = key }, &r, err);
	/* a missing key is deleted already */
	if (rc == 0 && !(r.status >= 200 && r.status < 300) && r.status != 404)
		rc = tt_objstore_fail(s, "delete", key, &r, err);
	tt_http_response_release(&r);
	free(fk);
	return rc;
}

void tt_objstore_close(tt_store *s)
{
	tt_objstore *o = s->impl;
	if (o) {
		tt_http_client_free(o->http);
		free(o->prefix);
		o->drv->free(o);
	}
	free(s->display);
	free(s);
}

/* ---- listings ------------------------------------------------------------------ */

/* [vs, ve) as a NUL-terminated string in buf (cut at its size). */
static const char *raw_copy(const char *vs, const char *ve, char *buf, size_t size)
{
	size_t n = (size_t)(ve - vs) < size - 1 ? (size_t)(ve - vs) : size - 1;
	memcpy(buf, vs, n);
	buf[n] = '\0';
	return buf;
}

enum { F_KEY, F_ETAG, F_SIZE, F_MTIME, F_VERSION, F_COUNT };

/* The fields an entry of t has, in F_ order (the version's only when t
 * names one); their count. */
static size_t entry_fields(const tt_objstore_listing *t, tt_xml_field *f)
{
	const char *tags[F_COUNT] = { t->key, t->etag, t->size, t->mtime, t->version };
	size_t n = t->version ? F_COUNT : F_VERSION;
	for (size_t i = 0; i < n; i++)
		f[i] = (tt_xml_field){ .tag = tags[i], .len = strlen(tags[i]) };
	return n;
}

/* One entry into e from its fields f (as entry_fields made them, then
 * tt_xml_entry found them); 1 to skip it (at or before after).  Two
 * allocations a key (its name and ETag): a listing of millions of keys
 * spends its time here. */
static int entry_of(tt_store *s, const tt_objstore_listing *t, const tt_xml_field *f, const char *after,
		    tt_store_entry *e, tt_error *err)
{
	const char *prefix = OS(s)->prefix;
	size_t plen = strlen(prefix);
	char *k = NULL, *v, num[64];
	if (f[F_KEY].vs && !(k = tt_xml_text(f[F_KEY].vs, f[F_KEY].ve)))
		return tt_error_oom(err);
	if (!k || strncmp(k, prefix, plen) != 0) {
		int rc = k ? tt_error_set(err, TT_EBACKEND, "%s: list returned '%s', outside the prefix",
					  s->display, k)
			   : tt_error_set(err, TT_EBACKEND, "%s: list entry without a %s", s->display,
					  t->key);
		free(k);
		return rc;
	}
	if (after && strcmp(k + plen, after) <= 0) {
		free(k); /* a server that ignored start-after */
		return 1;
	}
	if (plen)
		memmove(k, k + plen, strlen(k + plen) + 1);
	e->key = k;
	if (f[F_ETAG].vs) {
		size_t n;
		if (!(v = tt_xml_text(f[F_ETAG].vs, f[F_ETAG].ve)))
			return tt_error_oom(err); /* the caller releases e */
		n = strlen(v);
		if (n >= 2 && v[0] == '"' && v[n - 1] == '"') { /* tt_xml_unquote, in place */
			memmove(v, v + 1, n - 2);
			v[n - 2] = '\0';
		}
		e->meta.etag = v;
	}
	/* a number and a time hold no entities */
	if (f[F_SIZE].vs)
		e->meta.size = strtoull(raw_copy(f[F_SIZE].vs, f[F_SIZE].ve, num, sizeof num), NULL, 10);
	if (f[F_MTIME].vs)
		e->meta.mtime_ns = parse_time(raw_copy(f[F_MTIME].vs, f[F_MTIME].ve, num, sizeof num), t->iso_mtime);
	if (t->version && f[F_VERSION].vs && !(e->meta.version = tt_xml_text(f[F_VERSION].vs, f[F_VERSION].ve)))
		return tt_error_oom(err);
	return 0;
}

/* A page-level tag of [body, end) (the truncated flag, the next token)
 * outside the run of entries, [body, head) before it or [tail, end) after
 * it (head NULL: no entries), so a page of 1000 entries is not read again
 * for each of them. */
static bool page_tag(const char *body, const char *head, const char *tail, const char *end, const char *tag,
		     const char **vs, const char **ve)
{
	if (!head)
		return tt_xml_find(body, end, tag, vs, ve, NULL);
	return tt_xml_find(body, head, tag, vs, ve, NULL) || tt_xml_find(tail, end, tag, vs, ve, NULL);
}

int tt_objstore_parse_listing(tt_store *s, const tt_objstore_listing *t, const tt_http_response *r,
			      const char *after, size_t max_keys, bool *cut, tt_store_page *out,
			      tt_store_page *rest, tt_error *err)
{
	const char *p = r->body.ptr, *end = p + r->body.len, *head = NULL, *vs, *ve;
	size_t alloc = 0;
	tt_xml_field f[F_COUNT];
	size_t nf = entry_fields(t, f);
	tt_store_page *into = out;
	int rc = 0;
	if (cut)
		*cut = false;
	if (rest)
		memset(rest, 0, sizeof *rest);
	while (rc == 0 && tt_xml_entry(p, end, t->entry, f, nf, &p)) {
		tt_store_entry e = { 0 };
		if (!head)
			head = p; /* the end of the first entry */
		if ((rc = entry_of(s, t, f, after, &e, err)) == 1) {
			rc = 0;
			continue;
		}
		if (rc == 0 && cut && into == out && out->n == max_keys) {
			/* a server that ignored max-keys: the page ends here, and
			 * what it gave past that is kept for the next pages */
			*cut = true;
			if (!rest) {
				free(e.key);
				tt_store_meta_release(&e.meta);
				break;
			}
			into = rest;
			alloc = 0;
		}
		if (rc == 0 && TT_ARRAY_GROW(into->items, alloc, into->n + 1) != 0)
			rc = tt_error_oom(err);
		if (rc) {
			free(e.key);
			tt_store_meta_release(&e.meta);
			break;
		}
		into->items[into->n++] = e;
	}
	if (rc == 0 && (!(cut && *cut) || rest)) {
		tt_store_page *pg = cut && *cut ? rest : out;
		const char *body = r->body.ptr;
		bool more = t->truncated ? page_tag(body, head, p, end, t->truncated, &vs, &ve) && ve - vs == 4 &&
						   memcmp(vs, "true", 4) == 0
					 : page_tag(body, head, p, end, t->next, &vs, &ve) && ve > vs;
		if (more && t->truncated && !page_tag(body, head, p, end, t->next, &vs, &ve))
			rc = tt_error_set(err, TT_EBACKEND,
					  "%s: a truncated listing without a continuation token", s->display);
		else if (more && !(pg->next = tt_xml_text(vs, ve)))
			rc = tt_error_oom(err);
	}
	out->retried = r->attempts > 1;
	if (rc)
		tt_store_page_release(out);
	if (rc && rest)
		tt_store_page_release(rest);
	return rc;
}
