/*
 * net/http.c - the HTTP client on libcurl (see http.h for its promises),
 * loaded on the first client (net/curl_api.h).
 *
 * One CURLSH per client shares the connection cache and DNS among the
 * requests of every thread (a mutex per shared part); each request gets its
 * own easy handle.  libcurl never follows a redirect itself: a 3xx with a
 * Location is judged here (same origin only), and retries are ours too.
 */
#include "net/http.h"

#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <time.h>

#include "net/curl_api.h"
#include "util/mem.h"

#ifndef TETHER_VERSION_STRING
#define TETHER_VERSION_STRING "0"
#endif

struct tt_http_client {
	tt_http_opts o;
	char *proxy, *no_proxy, *ca_file, *user_agent;
	struct curl_slist *resolve;
	CURLSH *share;
	pthread_mutex_t locks[CURL_LOCK_DATA_LAST];
};

static pthread_once_t global_once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;

static void global_init(void)
{
	global_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void share_lock(CURL *h, curl_lock_data data, curl_lock_access access, void *ctx)
{
	tt_http_client *c = ctx;
	(void)h;
	(void)access;
	if (data >= 0 && data < CURL_LOCK_DATA_LAST)
		pthread_mutex_lock(&c->locks[data]);
}

static void share_unlock(CURL *h, curl_lock_data data, void *ctx)
{
	tt_http_client *c = ctx;
	(void)h;
	if (data >= 0 && data < CURL_LOCK_DATA_LAST)
		pthread_mutex_unlock(&c->locks[data]);
}

static char *dup_opt(const char *s, bool *oom)
{
	char *d;
	if (!s)
		return NULL;
	if (!(d = tt_strdup(s)))
		*oom = true;
	return d;
}

void tt_http_client_free(tt_http_client *c)
{
	if (!c)
		return;
	if (c->share)
		curl_share_cleanup(c->share);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&c->locks[i]);
	free(c->proxy);
	free(c->no_proxy);
	free(c->ca_file);
	free(c->user_agent);
	curl_slist_free_all(c->resolve);
	free(c);
}

int tt_http_client_new(const tt_http_opts *opts, tt_http_client **out, tt_error *err)
{
	static const tt_http_opts none = { 0 };
	tt_http_client *c;
	bool oom = false;
	int rc;

	*out = NULL;
	if ((rc = tt_curl_load(err)) != 0)
		return rc;
	pthread_once(&global_once, global_init);
	if (global_rc != CURLE_OK)
		return tt_error_set(err, TT_EBACKEND, "libcurl failed to start: %s",
				    curl_easy_strerror(global_rc));
	if (!opts)
		opts = &none;
	if (!(c = tt_calloc(1, sizeof *c)))
		return tt_error_oom(err);
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&c->locks[i], NULL);
	c->o = *opts;
	if (!c->o.connect_timeout_ms)
		c->o.connect_timeout_ms = 10000;
	if (!c->o.read_timeout_ms)
		c->o.read_timeout_ms = 30000;
	if (!c->o.retries)
		c->o.retries = 3;
	if (c->o.retries < 0)
		c->o.retries = 0;
	if (!c->o.backoff_base_ms)
		c->o.backoff_base_ms = 100;
	if (!c->o.backoff_max_ms)
		c->o.backoff_max_ms = 15000;
	if (!c->o.max_body)
		c->o.max_body = (size_t)64 << 20;
	c->proxy = dup_opt(opts->proxy, &oom);
	c->no_proxy = dup_opt(opts->no_proxy, &oom);
	c->ca_file = dup_opt(opts->ca_file, &oom);
	c->user_agent = opts->user_agent ? dup_opt(opts->user_agent, &oom)
					 : tt_strdup("tether/" TETHER_VERSION_STRING);
	for (const char *const *r = opts->resolve; r && *r && !oom; r++) {
		struct curl_slist *n = curl_slist_append(c->resolve, *r);
		oom = !n;
		c->resolve = n ? n : c->resolve;
	}
	c->o.resolve = NULL;
	if (oom || !c->user_agent || !(c->share = curl_share_init())) {
		tt_http_client_free(c);
		return tt_error_oom(err);
	}
	curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
	*out = c;
	return 0;
}

/* ---- URLs ---------------------------------------------------------------------- */

static bool secret_param(const char *name, size_t n)
{
	static const char *const names[] = {
		"x-amz-signature", "x-amz-credential", "x-amz-security-token", "x-goog-signature",
		"x-goog-credential", "sig", "signature", "awsaccesskeyid", "access_token", "token",
		"key", "code", "client_secret", NULL,
	};
	for (const char *const *p = names; *p; p++)
		if (strlen(*p) == n && strncasecmp(*p, name, n) == 0)
			return true;
	return false;
}

char *tt_http_redact_url(const char *url)
{
	tt_buf b = TT_BUF_INIT;
	const char *auth = strstr(url, "://"), *q, *end;
	if (auth) {
		/* user:password@ in the authority */
		const char *host = auth + 3, *host_end = host + strcspn(host, "/?#");
		const char *at = memchr(host, '@', (size_t)(host_end - host));
		if (at) {
			tt_buf_put(&b, url, (size_t)(host - url));
			tt_buf_puts(&b, "REDACTED");
			url = at;
		}
	}
	q = strchr(url, '?');
	if (!q) {
		tt_buf_puts(&b, url);
		return b.failed ? (tt_buf_release(&b), NULL) : tt_buf_detach(&b);
	}
	tt_buf_put(&b, url, (size_t)(q - url) + 1);
	end = q + 1 + strcspn(q + 1, "#");
	for (const char *p = q + 1; p < end;) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *pe = amp ? amp : end;
		const char *eq = memchr(p, '=', (size_t)(pe - p));
		if (eq && secret_param(p, (size_t)(eq - p))) {
			tt_buf_put(&b, p, (size_t)(eq - p) + 1);
			tt_buf_puts(&b, "REDACTED");
		} else {
			tt_buf_put(&b, p, (size_t)(pe - p));
		}
		if (amp)
			tt_buf_putc(&b, '&');
		p = amp ? amp + 1 : end;
	}
	tt_buf_puts(&b, end);
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

int tt_http_uri_encode(tt_buf *out, const char *s, size_t len, bool keep_slash)
{
	static const char hex[] = "0123456789ABCDEF";
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (isalnum(ch) && ch < 0x80)
			tt_buf_putc(out, (char)ch);
		else if (ch == '-' || ch == '_' || ch == '.' || ch == '~' || (keep_slash && ch == '/'))
			tt_buf_putc(out, (char)ch);
		else {
			char e[3] = { '%', hex[ch >> 4], hex[ch & 15] };
			tt_buf_put(out, e, 3);
		}
	}
	return out->failed;
}

/* "scheme://host[:port]" of url, lower-cased, into out; false when none. */
static bool origin(const char *url, char *out, size_t n)
{
	const char *p = strstr(url, "://");
	size_t len;
	if (!p)
		return false;
	p += 3;
	p += strcspn(p, "/?#");
	len = (size_t)(p - url);
	if (len + 1 > n)
		return false;
	for (size_t i = 0; i < len; i++)
		out[i] = (char)tolower((unsigned char)url[i]);
	out[len] = '\0';
	return true;
}

/* ---- one request --------------------------------------------------------------- */

typedef struct xfer {
	tt_http_response *resp;
	bool capped;
} xfer;

static size_t on_body(char *data, size_t size, size_t nmemb, void *ctx)
{
	xfer *x = ctx;
	size_t n = size * nmemb;
	if (tt_buf_put(&x->resp->body, data, n) != 0) {
		x->capped = x->resp->body.failed == TT_ELIMIT;
		return 0;
	}
	return n;
}

static void headers_clear(tt_http_response *r)
{
	for (size_t i = 0; i < r->nheaders; i++) {
		free(r->headers[i].name);
		free(r->headers[i].value);
	}
	free(r->headers);
	r->headers = NULL;
	r->nheaders = 0;
}

static size_t on_header(char *data, size_t size, size_t nitems, void *ctx)
{
	xfer *x = ctx;
	tt_http_response *r = x->resp;
	size_t n = size * nitems, nl, vl;
	const char *colon, *v;
	tt_http_header *grown;

	if (n >= 5 && strncmp(data, "HTTP/", 5) == 0) {
		headers_clear(r);  /* a new response (after a 100 Continue) */
		return n;
	}
	colon = memchr(data, ':', n);
	if (!colon)
		return n;
	nl = (size_t)(colon - data);
	v = colon + 1;
	vl = n - nl - 1;
	while (vl && (*v == ' ' || *v == '\t'))
		v++, vl--;
	while (vl && (v[vl - 1] == '\r' || v[vl - 1] == '\n' || v[vl - 1] == ' '))
		vl--;
	grown = tt_reallocarray(r->headers, r->nheaders + 1, sizeof *r->headers);
	if (!grown)
		return 0;
	r->headers = grown;
	grown[r->nheaders].name = tt_strndup(data, nl);
	grown[r->nheaders].value = tt_strndup(v, vl);
	if (!grown[r->nheaders].name || !grown[r->nheaders].value) {
		free(grown[r->nheaders].name);
		free(grown[r->nheaders].value);
		return 0;
	}
	r->nheaders++;
	return n;
}

void tt_http_response_init(tt_http_response *r)
{
	memset(r, 0, sizeof *r);
	r->body = (tt_buf)TT_BUF_INIT;
}

void tt_http_response_release(tt_http_response *r)
{
	if (!r)
		return;
	headers_clear(r);
	tt_buf_release(&r->body);
	memset(r, 0, sizeof *r);
	r->body = (tt_buf)TT_BUF_INIT;
}

const char *tt_http_response_header(const tt_http_response *r, const char *name)
{
	const char *v = NULL;
	for (size_t i = 0; i < r->nheaders; i++)
		if (strcasecmp(r->headers[i].name, name) == 0)
			v = r->headers[i].value;
	return v;
}

static bool has_header(const char *const *h, const char *name)
{
	size_t n = strlen(name);
	for (; h && *h; h++)
		if (strncasecmp(*h, name, n) == 0 && (*h)[n] == ':')
			return true;
	return false;
}

static bool transient_curl(CURLcode rc)
{
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_SEND_ERROR:
	case CURLE_RECV_ERROR:
	case CURLE_GOT_NOTHING:
	case CURLE_PARTIAL_FILE:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

static bool transient_status(long s)
{
	return s == 429 || (s >= 500 && s <= 599 && s != 501 && s != 505);
}

static uint64_t rand64(void)
{
	static _Thread_local uint64_t state;
	if (!state) {
		if (getrandom(&state, sizeof state, GRND_NONBLOCK) != (ssize_t)sizeof state)
			state = (uint64_t)time(NULL) ^ (uint64_t)(uintptr_t)&state;
		state |= 1;
	}
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

static long backoff_ms(const tt_http_client *c, unsigned attempt, const tt_http_response *r)
{
	long cap = c->o.backoff_base_ms;
	const char *ra = r ? tt_http_response_header(r, "Retry-After") : NULL;
	for (unsigned i = 1; i < attempt && cap < c->o.backoff_max_ms; i++)
		cap *= 2;
	if (cap > c->o.backoff_max_ms)
		cap = c->o.backoff_max_ms;
	if (ra && isdigit((unsigned char)*ra)) {
		long s = strtol(ra, NULL, 10);
		long ms = s > c->o.backoff_max_ms / 1000 ? c->o.backoff_max_ms : s * 1000;
		return ms;
	}
	return (long)(rand64() % (uint64_t)(cap + 1));
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* One attempt at url; *code gets the CURLcode. */
static int attempt(tt_http_client *c, const char *method, const char *url,
		   const tt_http_request *req, bool send_body, tt_http_response *resp,
		   CURLcode *code, char **location, xfer *x, tt_error *err)
{
	CURL *h = curl_easy_init();
	struct curl_slist *hl = NULL;
	char errbuf[CURL_ERROR_SIZE] = "";
	bool oom = false;

	*location = NULL;
	if (!h)
		return tt_error_oom(err);
	for (const char *const *p = req->headers; p && *p && !oom; p++) {
		struct curl_slist *n = curl_slist_append(hl, *p);
		oom = !n;
		hl = n ? n : hl;
	}
	/* no 100-continue round trip, no form content type curl would invent */
	if (!oom && !has_header(req->headers, "Expect"))
		oom = !(hl = curl_slist_append(hl, "Expect:"));
	if (!oom && !has_header(req->headers, "Content-Type"))
		oom = !(hl = curl_slist_append(hl, "Content-Type:"));
	if (oom) {
		curl_slist_free_all(hl);
		curl_easy_cleanup(h);
		return tt_error_oom(err);
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_SHARE, c->share);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYPEER, 1L);
	curl_easy_setopt(h, CURLOPT_SSL_VERIFYHOST, 2L);
	if (c->ca_file)
		curl_easy_setopt(h, CURLOPT_CAINFO, c->ca_file);
	if (c->proxy)
		curl_easy_setopt(h, CURLOPT_PROXY, c->proxy);
	if (c->no_proxy)
		curl_easy_setopt(h, CURLOPT_NOPROXY, c->no_proxy);
	curl_easy_setopt(h, CURLOPT_USERAGENT, c->user_agent);
	if (c->resolve)
		curl_easy_setopt(h, CURLOPT_RESOLVE, c->resolve);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, c->o.connect_timeout_ms);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
	curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (c->o.read_timeout_ms + 999) / 1000);
	if (c->o.total_timeout_ms)
		curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, c->o.total_timeout_ms);
	curl_easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(h, CURLOPT_HEADERDATA, x);
	if (strcmp(method, "HEAD") == 0) {
		curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
	} else if (strcmp(method, "GET") == 0 && !send_body) {
		curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
	} else {
		curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, method);
		if (send_body || strcmp(method, "PUT") == 0 || strcmp(method, "POST") == 0) {
			curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE,
					 (curl_off_t)(send_body ? req->body_len : 0));
			curl_easy_setopt(h, CURLOPT_POSTFIELDS,
					 send_body && req->body ? req->body : (const void *)"");
		}
	}
	*code = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	if (*code == CURLE_OK && resp->status >= 300 && resp->status < 400) {
		char *loc = NULL;
		curl_easy_getinfo(h, CURLINFO_REDIRECT_URL, &loc);
		if (loc && !(*location = tt_strdup(loc)))
			oom = true;
	}
	if (*code != CURLE_OK && !x->capped && errbuf[0]) {
		/* keep curl's words for the final error */
		tt_error_set(err, TT_EBACKEND, "%s", errbuf);
	}
	curl_slist_free_all(hl);
	curl_easy_cleanup(h);
	return oom ? tt_error_oom(err) : 0;
}

int tt_http_do(tt_http_client *c, const tt_http_request *req, tt_http_response *resp,
	       tt_error *err)
{
	char *url = tt_strdup(req->url), *shown = NULL;
	const char *method = req->method ? req->method : "GET";
	bool send_body = req->body_len > 0 || (req->body != NULL);
	unsigned tries = 0, redirects = 0;
	int rc = 0;

	headers_clear(resp);
	tt_buf_release(&resp->body);
	tt_buf_init(&resp->body, c->o.max_body);
	resp->status = 0;
	resp->attempts = 0;
	if (!url)
		return tt_error_oom(err);
	for (;;) {
		CURLcode code = CURLE_OK;
		char *location = NULL;
		xfer x = { resp, false };
		tt_http_trace_event ev;
		long t0 = now_ms(), wait = -1;
		bool retry;

		free(shown);
		if (!(shown = tt_http_redact_url(url))) {
			rc = tt_error_oom(err);
			break;
		}
		if (strncasecmp(url, "https://", 8) != 0 &&
		    !(c->o.allow_http && strncasecmp(url, "http://", 7) == 0)) {
			rc = tt_error_set(err, TT_ECONFIG,
					  strncasecmp(url, "http://", 7) == 0
						  ? "%s: plain http is refused; set allow_http = true for this "
						    "store to allow it"
						  : "%s: only http(s) URLs can be fetched",
					  shown);
			break;
		}
		tt_buf_reset(&resp->body);
		headers_clear(resp);
		resp->status = 0;
		tries++;
		resp->attempts = tries;
		if ((rc = attempt(c, method, url, req, send_body, resp, &code, &location, &x, err)))
			break;
		if (x.capped) {
			rc = tt_error_set(err, TT_ELIMIT,
					  "%s %s: response body passes the %zu bytes allowed", method, shown,
					  c->o.max_body);
			tt_buf_reset(&resp->body);
			free(location);
			break;
		}
		retry = code != CURLE_OK ? transient_curl(code) : transient_status(resp->status);
		retry = retry && !req->no_retry && tries <= (unsigned)c->o.retries;
		if (retry)
			wait = backoff_ms(c, tries, code == CURLE_OK ? resp : NULL);
		if (c->o.trace) {
			ev = (tt_http_trace_event){ method, shown, tries, resp->status, (int)code,
						    now_ms() - t0, wait };
			c->o.trace(c->o.trace_ctx, &ev);
		}
		if (retry) {
			free(location);
			tt_error_clear(err);
			sleep_ms(wait);
			continue;
		}
		if (code != CURLE_OK) {
			char why[CURL_ERROR_SIZE + 64];
			snprintf(why, sizeof why, "%s", err && err->message ? err->message
								   : curl_easy_strerror(code));
			rc = tt_error_set(err, TT_EBACKEND, "%s %s failed after %u attempt%s: %s%s", method,
					  shown, tries, tries == 1 ? "" : "s", why,
					  code == CURLE_PEER_FAILED_VERIFICATION
						  ? " (the server's TLS certificate was not trusted; "
						    "give its CA with ca_file)"
					  : code == CURLE_OPERATION_TIMEDOUT
						  ? " (timed out: the server answered too slowly every time; "
						    "try again later, or raise the store's timeout option)"
						  : "");
			break;
		}
		if (location && resp->status != 304) {
			char a[512], b[512];
			char *loc_shown = tt_http_redact_url(location);
			if (!origin(url, a, sizeof a) || !origin(location, b, sizeof b) ||
			    strcmp(a, b) != 0) {
				rc = tt_error_set(err, TT_EBACKEND,
						  "%s %s: redirect to another host (%s) refused; point "
						  "the store at the right endpoint or region",
						  method, shown, loc_shown ? loc_shown : "?");
			} else if (++redirects > 5) {
				rc = tt_error_set(err, TT_EBACKEND, "%s %s: too many redirects", method,
						  shown);
			} else {
				free(url);
				url = location;
				location = NULL;
				if (resp->status == 303 ||
				    ((resp->status == 301 || resp->status == 302) &&
				     strcmp(method, "POST") == 0)) {
					method = "GET";
					send_body = false;
				}
			}
			free(loc_shown);
			free(location);
			if (rc)
				break;
			tries = 0;
			continue;
		}
		free(location);
		break;
	}
	free(url);
	free(shown);
	return rc;
}
