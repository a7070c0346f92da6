/*
 * net/http.h - the one HTTP client (libcurl) every network store talks
 * through.
 *
 * Invariants:
 *   - TLS peer and host verification are always on; there is no option to
 *     turn them off (a private CA bundle replaces the system one with ca_file).  Plain http:// is
 *     refused unless the caller's config set allow_http.
 *   - A response body goes into a tt_buf with a cap (max_body): a bigger
 *     body fails the request with TT_ELIMIT naming the URL; nothing past the
 *     cap is kept.
 *   - Connect timeout and read timeout (no byte for that long) per attempt,
 *     and an optional overall deadline per attempt.
 *   - Transient failures are retried up to `retries` times with full-jitter
 *     exponential backoff (a random wait in [0, min(max, base * 2^n)]),
 *     honouring Retry-After on 429/503 up to backoff_max_ms: HTTP 429 and
 *     5xx, connection refused/reset, a timeout, a truncated body.  A request
 *     marked no_retry is sent once.  A conditional write that is retried
 *     after its first attempt reached the server can see its own write as
 *     a failed precondition: callers of conditional writes re-read to tell.
 *   - Redirects are followed by us, at most 5, only to the same scheme, host
 *     and port; a redirect to another host is refused with TT_EBACKEND.
 *   - Proxies: proxy/no_proxy when given, else libcurl's usual environment
 *     variables (https_proxy, no_proxy, ...).
 *   - The trace hook sees the method, the URL with credential-bearing query
 *     values (signatures, credentials, tokens, SAS `sig`) replaced by
 *     "REDACTED", the attempt, status and timing; never a header or a
 *     body.  Errors name the URL spelled the same way.
 *   - One client may be used from several threads at once; connections are
 *     kept alive and shared among them.
 *   - tt_http_do() returns 0 whenever a response arrived (any status: the
 *     caller judges it), an error code when none did after the retries.
 */
#ifndef TT_NET_HTTP_H
#define TT_NET_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"
#include "util/error.h"

typedef struct tt_http_trace_event {
	const char *method;
	const char *url;       /* redacted */
	unsigned attempt;      /* 1, 2, ... */
	long status;           /* 0: no response */
	int curl_code;         /* CURLcode of the attempt (0: ok) */
	long elapsed_ms;
	long retry_in_ms;      /* -1: no retry follows */
} tt_http_trace_event;
typedef void (*tt_http_trace_fn)(void *ctx, const tt_http_trace_event *ev);

typedef struct tt_http_opts {
	long connect_timeout_ms;  /* 0: 10 s */
	long read_timeout_ms;     /* 0: 30 s without a byte (rounded up to seconds) */
	long total_timeout_ms;    /* 0: none */
	int retries;              /* < 0: none; 0: 3 */
	long backoff_base_ms;     /* 0: 100 */
	long backoff_max_ms;      /* 0: 15 s */
	size_t max_body;          /* 0: 64 MiB */
	bool allow_http;
	const char *proxy;        /* NULL: the environment's */
	const char *no_proxy;
	const char *ca_file;      /* the CA bundle to trust instead of the system one */
	const char *user_agent;   /* NULL: "tether/<version>" */
	/* "host:port:address" lines pinning names to addresses (tests: a
	 * virtual-hosted bucket name on 127.0.0.1), NULL-terminated. */
	const char *const *resolve;
	tt_http_trace_fn trace;
	void *trace_ctx;
} tt_http_opts;

typedef struct tt_http_client tt_http_client;

int tt_http_client_new(const tt_http_opts *opts, tt_http_client **out, tt_error *err);
void tt_http_client_free(tt_http_client *c);

typedef struct tt_http_request {
	const char *method;           /* "GET", "HEAD", "PUT", "POST", "DELETE" */
	const char *url;
	const char *const *headers;   /* NULL-terminated "Name: value" lines, or NULL */
	const void *body;
	size_t body_len;
	bool no_retry;
} tt_http_request;

typedef struct tt_http_header {
	char *name;   /* as sent */
	char *value;  /* trimmed */
} tt_http_header;

typedef struct tt_http_response {
	long status;
	tt_buf body;
	tt_http_header *headers;
	size_t nheaders;
	unsigned attempts;
} tt_http_response;

void tt_http_response_init(tt_http_response *r);
void tt_http_response_release(tt_http_response *r);
/* The last value of a response header (case-insensitive name), or NULL. */
const char *tt_http_response_header(const tt_http_response *r, const char *name);

int tt_http_do(tt_http_client *c, const tt_http_request *req, tt_http_response *resp,
	       tt_error *err);

/* url with credential-bearing query values replaced (see above).  Caller
 * frees; NULL on OOM. */
char *tt_http_redact_url(const char *url);

/* Percent-encode s as RFC 3986 unreserved-only (what SigV4 wants); '/'
 * kept when keep_slash.  Appends to out. */
int tt_http_uri_encode(tt_buf *out, const char *s, size_t len, bool keep_slash);

#endif
