/* Unit tests: net/http.c against tests/support/http_test_server.py. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "harness.h"
#include "net/http.h"
#include "testserver.h"
#include "util/mem.h"

static tt_testserver srv;

static const char *base(void)
{
	if (!srv.pid) {
		char *script = tt_asprintf("%s/tests/support/http_test_server.py", tt_testserver_source_dir());
		const char *argv[] = { "python3", script, NULL };
		if (tt_testserver_start(argv, 0, 0, &srv) != 0)
			srv.base[0] = '\0';
		free(script);
	}
	return srv.base;
}

typedef struct trace_log {
	int n;
	char urls[16][512];
	long retry_in[16];
	long status[16];
} trace_log;

static void on_trace(void *ctx, const tt_http_trace_event *ev)
{
	trace_log *t = ctx;
	if (t->n < 16) {
		snprintf(t->urls[t->n], sizeof t->urls[0], "%s", ev->url);
		t->retry_in[t->n] = ev->retry_in_ms;
		t->status[t->n] = ev->status;
	}
	t->n++;
}

static tt_http_client *client(tt_http_opts o, trace_log *t)
{
	tt_http_client *c = NULL;
	tt_error err = TT_ERROR_INIT;
	o.allow_http = true;
	if (!o.backoff_base_ms)
		o.backoff_base_ms = 20;
	if (t) {
		o.trace = on_trace;
		o.trace_ctx = t;
	}
	if (tt_http_client_new(&o, &c, &err) != 0)
		tt_test_fail(__FILE__, __LINE__, "client: %s", err.message);
	tt_error_clear(&err);
	return c;
}

/* GET base()+path; resp must be initialised. */
static int get(tt_http_client *c, const char *path, tt_http_response *r, tt_error *err)
{
	char url[512];
	tt_http_request req = { .method = "GET", .url = url };
	snprintf(url, sizeof url, "%s%s", base(), path);
	return tt_http_do(c, &req, r, err);
}

static long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

TT_TEST(http_get_body_and_headers)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	tt_http_client *c = client((tt_http_opts){ 0 }, NULL);
	CHECK(*base());
	tt_http_response_init(&r);
	CHECK_OK(get(c, "/ok", &r, &err));
	CHECK_INT(r.status, 200);
	CHECK_STR(r.body.ptr, "hello");
	CHECK_STR(tt_http_response_header(&r, "etag"), "\"abc\"");
	CHECK_INT(r.attempts, 1);
	/* the same client again: the connection is reused, nothing leaks */
	CHECK_OK(get(c, "/ok", &r, &err));
	CHECK_STR(r.body.ptr, "hello");
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_retries_5xx_then_succeeds)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	trace_log t = { 0 };
	tt_http_client *c = client((tt_http_opts){ 0 }, &t);
	tt_http_response_init(&r);
	CHECK_OK(get(c, "/status/503/2/r5xx", &r, &err));
	CHECK_INT(r.status, 200);
	CHECK_STR(r.body.ptr, "recovered");
	CHECK_INT(r.attempts, 3);
	CHECK_INT(t.n, 3);
	CHECK_INT(t.status[0], 503);
	CHECK(t.retry_in[0] >= 0 && t.retry_in[1] >= 0 && t.retry_in[2] == -1);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_retries_exhausted_gives_last_status)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	tt_http_client *c = client((tt_http_opts){ .retries = 2 }, NULL);
	tt_http_response_init(&r);
	CHECK_OK(get(c, "/status/500/10/rexh", &r, &err));
	CHECK_INT(r.status, 500);
	CHECK_INT(r.attempts, 3);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_no_retry_on_4xx_or_when_asked)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	char url[256];
	tt_http_client *c = client((tt_http_opts){ 0 }, NULL);
	tt_http_response_init(&r);
	CHECK_OK(get(c, "/status/404/5/r4xx", &r, &err));
	CHECK_INT(r.status, 404);
	CHECK_INT(r.attempts, 1);
	snprintf(url, sizeof url, "%s/status/503/5/rnoretry", base());
	tt_http_request req = { .method = "PUT", .url = url, .body = "x", .body_len = 1,
				.no_retry = true };
	CHECK_OK(tt_http_do(c, &req, &r, &err));
	CHECK_INT(r.status, 503);
	CHECK_INT(r.attempts, 1);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_retry_after_is_honoured)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	tt_http_client *c = client((tt_http_opts){ 0 }, NULL);
	long t0 = now_ms();
	tt_http_response_init(&r);
	CHECK_OK(get(c, "/retry-after/1/ra", &r, &err));
	CHECK_INT(r.status, 200);
	CHECK_INT(r.attempts, 2);
	CHECK_MSG(now_ms() - t0 >= 900, "waited only %ld ms", now_ms() - t0);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_connection_reset_is_retried)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	tt_http_client *c = client((tt_http_opts){ 0 }, NULL);
	tt_http_response_init(&r);
	CHECK_OK(get(c, "/reset/2/rst", &r, &err));
	CHECK_INT(r.status, 200);
	CHECK_STR(r.body.ptr, "recovered");
	CHECK_INT(r.attempts, 3);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_truncated_body_fails_after_retries)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	tt_http_client *c = client((tt_http_opts){ .retries = 1 }, NULL);
	tt_http_response_init(&r);
	CHECK_INT(get(c, "/truncate/trunc", &r, &err), TT_EBACKEND);
	CHECK_MSG(strstr(err.message, "/truncate/trunc") && strstr(err.message, "2 attempts"), "%s",
		  err.message);
	tt_error_clear(&err);
	CHECK_OK(get(c, "/count/trunc", &r, &err));
	CHECK_STR(r.body.ptr, "2");
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_read_timeout)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	tt_http_client *c = client((tt_http_opts){ .read_timeout_ms = 1000, .retries = -1 }, NULL);
	long t0 = now_ms();
	tt_http_response_init(&r);
	CHECK_INT(get(c, "/stall", &r, &err), TT_EBACKEND);
	CHECK_MSG(now_ms() - t0 < 6000, "took %ld ms", now_ms() - t0);
	CHECK_MSG(strstr(err.message, "/stall"), "%s", err.message);
	tt_error_clear(&err);
	/* a total deadline cuts a slow response short too */
	tt_http_client_free(c);
	c = client((tt_http_opts){ .total_timeout_ms = 500, .retries = -1 }, NULL);
	t0 = now_ms();
	CHECK_INT(get(c, "/slow/3", &r, &err), TT_EBACKEND);
	CHECK_MSG(now_ms() - t0 < 2500, "took %ld ms", now_ms() - t0);
	tt_error_clear(&err);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_connect_refused)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	char url[64];
	trace_log t = { 0 };
	tt_http_client *c = client((tt_http_opts){ .retries = 2 }, &t);
	snprintf(url, sizeof url, "http://127.0.0.1:%d/x", tt_testserver_free_port());
	tt_http_request req = { .method = "GET", .url = url };
	tt_http_response_init(&r);
	CHECK_INT(tt_http_do(c, &req, &r, &err), TT_EBACKEND);
	CHECK_INT(t.n, 3);
	CHECK_MSG(strstr(err.message, "3 attempts"), "%s", err.message);
	tt_error_clear(&err);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_body_cap)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	tt_http_client *c = client((tt_http_opts){ .max_body = 1000 }, NULL);
	tt_http_response_init(&r);
	CHECK_OK(get(c, "/big/1000", &r, &err));
	CHECK_INT(r.body.len, 1000);
	CHECK_INT(get(c, "/big/5000", &r, &err), TT_ELIMIT);
	CHECK_MSG(strstr(err.message, "1000 bytes") && strstr(err.message, "/big/5000"), "%s",
		  err.message);
	CHECK_INT(r.body.len, 0);
	CHECK_INT(r.attempts, 1);
	tt_error_clear(&err);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_redirects_same_host_only)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	tt_http_client *c = client((tt_http_opts){ 0 }, NULL);
	tt_http_response_init(&r);
	CHECK_OK(get(c, "/redirect/same", &r, &err));
	CHECK_INT(r.status, 200);
	CHECK_STR(r.body.ptr, "hello");
	CHECK_INT(get(c, "/redirect/other", &r, &err), TT_EBACKEND);
	CHECK_MSG(strstr(err.message, "another host") && strstr(err.message, "localhost"), "%s",
		  err.message);
	tt_error_clear(&err);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_plain_http_needs_allow_http)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	tt_http_client *c = NULL;
	char url[256];
	snprintf(url, sizeof url, "%s/ok", base());
	tt_http_request req = { .method = "GET", .url = url };
	CHECK_OK(tt_http_client_new(&(tt_http_opts){ 0 }, &c, &err));
	tt_http_response_init(&r);
	CHECK_INT(tt_http_do(c, &req, &r, &err), TT_ECONFIG);
	CHECK(strstr(err.message, "allow_http"));
	tt_error_clear(&err);
	req.url = "ftp://127.0.0.1/x";
	CHECK_INT(tt_http_do(c, &req, &r, &err), TT_ECONFIG);
	tt_error_clear(&err);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_trace_and_errors_redact_credentials)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	trace_log t = { 0 };
	tt_http_client *c = client((tt_http_opts){ .retries = 1, .max_body = 10 }, &t);
	tt_http_response_init(&r);
	CHECK_INT(get(c, "/big/20?list-type=2&X-Amz-Signature=deadbeef&X-Amz-Credential=AKIASECRET"
			 "%2F20260101&X-Amz-Security-Token=tok3n&sig=sassig",
		      &r, &err),
		  TT_ELIMIT);
	CHECK_INT(t.n, 0);  /* a cap is not retried; the trace only sees completed attempts */
	CHECK_MSG(!strstr(err.message, "deadbeef") && !strstr(err.message, "AKIASECRET") &&
			  !strstr(err.message, "tok3n") && !strstr(err.message, "sassig"),
		  "%s", err.message);
	CHECK(strstr(err.message, "list-type=2"));
	tt_error_clear(&err);
	CHECK_OK(get(c, "/ok?X-Amz-Signature=deadbeef&prefix=a", &r, &err));
	CHECK_INT(t.n, 1);
	CHECK_MSG(!strstr(t.urls[0], "deadbeef") && strstr(t.urls[0], "prefix=a") &&
			  strstr(t.urls[0], "X-Amz-Signature=REDACTED"),
		  "%s", t.urls[0]);
	char *red = tt_http_redact_url("https://user:pw@h/p?Signature=s&a=b#f");
	CHECK_STR(red, "https://REDACTED@h/p?Signature=REDACTED&a=b#f");
	free(red);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_put_sends_body_and_headers_only)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	char url[256];
	const char *hdrs[] = { "X-Test: 1", NULL };
	tt_http_client *c = client((tt_http_opts){ 0 }, NULL);
	snprintf(url, sizeof url, "%s/echo", base());
	tt_http_request req = { .method = "PUT", .url = url, .headers = hdrs, .body = "data",
				.body_len = 4 };
	tt_http_response_init(&r);
	CHECK_OK(tt_http_do(c, &req, &r, &err));
	CHECK_MSG(strncmp(r.body.ptr, "PUT /echo\n", 10) == 0, "%s", r.body.ptr);
	CHECK_MSG(strstr(r.body.ptr, "X-Test: 1\n") && strstr(r.body.ptr, "Content-Length: 4\n"), "%s",
		  r.body.ptr);
	CHECK_MSG(!strstr(r.body.ptr, "Expect") && !strstr(r.body.ptr, "Content-Type"), "%s",
		  r.body.ptr);
	CHECK(r.body.len >= 4 && memcmp(r.body.ptr + r.body.len - 6, "\n\ndata", 6) == 0);
	/* an empty PUT still says Content-Length: 0 */
	req.body = NULL;
	req.body_len = 0;
	CHECK_OK(tt_http_do(c, &req, &r, &err));
	CHECK_MSG(strstr(r.body.ptr, "Content-Length: 0\n"), "%s", r.body.ptr);
	tt_http_response_release(&r);
	tt_http_client_free(c);
}

TT_TEST(http_uri_encode)
{
	tt_buf b = TT_BUF_INIT;
	const char *s = "a b/c~d_e.f-g+h=i&\xc3\xa9";
	tt_http_uri_encode(&b, s, strlen(s), true);
	CHECK_STR(b.ptr, "a%20b/c~d_e.f-g%2Bh%3Di%26%C3%A9");
	tt_buf_reset(&b);
	tt_http_uri_encode(&b, "a/b", 3, false);
	CHECK_STR(b.ptr, "a%2Fb");
	tt_buf_release(&b);
}

TT_TEST(http_tls_verification_is_always_on)
{
	tt_error err = TT_ERROR_INIT;
	tt_http_response r;
	tt_http_client *c = NULL;
	tt_testserver tls;
	char url[128], cmd[1024];
	char *cert = tt_asprintf("%s/cert.pem", tt_test_tmpdir());
	char *key = tt_asprintf("%s/key.pem", tt_test_tmpdir());
	char *script = tt_asprintf("%s/tests/support/http_test_server.py", tt_testserver_source_dir());
	snprintf(cmd, sizeof cmd,
		 "openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=127.0.0.1 "
		 "-addext subjectAltName=IP:127.0.0.1 -days 2 -keyout %s -out %s 2>/dev/null",
		 key, cert);
	CHECK_INT(system(cmd), 0);
	const char *argv[] = { "python3", script, "--tls", cert, key, NULL };
	CHECK_INT(tt_testserver_start(argv, 0, 0, &tls), 0);
	snprintf(url, sizeof url, "https://127.0.0.1:%d/ok", tls.port);
	tt_http_request req = { .method = "GET", .url = url };
	tt_http_response_init(&r);
	/* a self-signed certificate is refused, and not retried */
	CHECK_OK(tt_http_client_new(&(tt_http_opts){ .retries = 2 }, &c, &err));
	CHECK_INT(tt_http_do(c, &req, &r, &err), TT_EBACKEND);
	CHECK_MSG(strstr(err.message, "ca_file") && strstr(err.message, "1 attempt"), "%s",
		  err.message);
	tt_error_clear(&err);
	tt_http_client_free(c);
	/* trusted through ca_file */
	CHECK_OK(tt_http_client_new(&(tt_http_opts){ .ca_file = cert }, &c, &err));
	CHECK_OK(tt_http_do(c, &req, &r, &err));
	CHECK_INT(r.status, 200);
	CHECK_STR(r.body.ptr, "hello");
	tt_http_client_free(c);
	/* the name must match too: "localhost" is not in the certificate */
	snprintf(url, sizeof url, "https://localhost:%d/ok", tls.port);
	CHECK_OK(tt_http_client_new(&(tt_http_opts){ .ca_file = cert, .retries = -1 }, &c, &err));
	CHECK_INT(tt_http_do(c, &req, &r, &err), TT_EBACKEND);
	tt_error_clear(&err);
	tt_http_client_free(c);
	tt_http_response_release(&r);
	tt_testserver_stop(&tls);
	free(cert);
	free(key);
	free(script);
}
