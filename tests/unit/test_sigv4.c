/*
 * Unit tests: net/sigv4.c, checked against botocore's own signer
 * (tests/support/sigv4_oracle.py run with $TETHER_PYTHON, default the
 * source tree's .venv, which tests/requirements.txt gives botocore), plus
 * AWS's published example.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <jansson.h>

#include "harness.h"
#include "net/sigv4.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/mem.h"
#include "util/proc.h"

#define T0 1767268800  /* 2026-01-01T12:00:00Z */

typedef struct sig_case {
	tt_sigv4_input in;
	tt_aws_creds cr;
	bool presign;
} sig_case;

static const tt_sigv4_param q_list[] = {
	{ "list-type", "2" },
	{ "prefix", "a b/\xc3\xbc~x" },
	{ "continuation-token", "x+y/z=" },
	{ "max-keys", "1000" },
	{ "encoding-type", NULL },
};
static const tt_sigv4_param q_ver[] = { { "versionId", "3/L4kqtJl+cPoFNWc_" } };
static const char *const h_put[] = { "If-None-Match: *", "Content-Type: application/octet-stream",
				     "x-amz-meta-Note:   two   spaces  ", "User-Agent: tether/t", NULL };
static const char *const h_range[] = { "Range: bytes=0-99", "If-Match: \"abc\"", NULL };

static sig_case cases[] = {
	{ { .method = "GET", .scheme = "http", .host = "127.0.0.1:9000", .path = "/bkt",
	    .query = q_list, .nquery = 5, .region = "us-east-1", .service = "s3", .now = T0 },
	  { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL }, false },
	{ { .method = "PUT", .scheme = "http", .host = "127.0.0.1:9000", .path = "/bkt/dir/obj.bin",
	    .headers = h_put, .body = "hello\0world", .body_len = 11, .region = "us-east-1",
	    .service = "s3", .now = T0 + 59 },
	  { "ASIAEXAMPLE", "secret/with+chars", "FwoGZXIvYXdzE//token+=/" }, false },
	{ { .method = "HEAD", .host = "bkt.s3.eu-west-1.amazonaws.com",
	    .path = "/key with spaces/and~tilde/\xc3\xa4+=&.txt", .headers = h_range,
	    .region = "eu-west-1", .service = "s3", .now = T0 + 86399 },
	  { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL }, false },
	{ { .method = "PUT", .host = "s3.amazonaws.com", .path = "/bkt/k", .body = "data",
	    .body_len = 4, .unsigned_payload = true, .region = "us-east-1", .service = "s3",
	    .now = T0 },
	  { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL }, false },
	{ { .method = "GET", .host = "bkt.s3.us-west-2.amazonaws.com", .path = "/a/b c.parquet",
	    .query = q_ver, .nquery = 1, .region = "us-west-2", .service = "s3", .now = T0,
	    .expires = 600 },
	  { "ASIAEXAMPLE", "secret", "tok/en+==" }, true },
	{ { .method = "PUT", .scheme = "http", .host = "localhost:8333", .path = "/b/\xe2\x82\xac/x",
	    .region = "us-east-1", .service = "s3", .now = T0 },
	  { "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", NULL }, true },
};
enum { NCASES = sizeof cases / sizeof cases[0] };

static char *source_path(const char *rel)
{
	const char *src = getenv("TETHER_SOURCE_DIR");
	return tt_path_join(src ? src : ".", rel);
}

/* The URL botocore is given: ours without the signature (presigned: only
 * the caller's query). */
static char *oracle_url(const sig_case *c, const tt_sigv4_out *o)
{
	if (!c->presign)
		return tt_strdup(o->url);
	tt_sigv4_input in = c->in;
	tt_sigv4_out plain;
	tt_error err = TT_ERROR_INIT;
	char *u;
	if (tt_sigv4_sign(&in, &c->cr, &plain, &err) != 0)
		return NULL;
	u = tt_strdup(plain.url);
	tt_sigv4_out_release(&plain);
	return u;
}

static const char *out_header(const tt_sigv4_out *o, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < o->nheaders; i++)
		if (strncasecmp(o->headers[i], name, n) == 0 && o->headers[i][n] == ':')
			return o->headers[i] + n + 2;
	return NULL;
}

TT_TEST(sigv4_matches_botocore)
{
	tt_error err = TT_ERROR_INIT;
	tt_sigv4_out outs[NCASES];
	json_t *in = json_array(), *res = NULL;
	char *py = getenv("TETHER_PYTHON") ? tt_strdup(getenv("TETHER_PYTHON"))
					   : source_path(".venv/bin/python");
	char *script = source_path("tests/support/sigv4_oracle.py");
	char *file = tt_path_join(tt_test_tmpdir(), "cases.json");
	memset(outs, 0, sizeof outs);
	for (int i = 0; i < NCASES; i++) {
		sig_case *c = &cases[i];
		char stamp[17], hex[2 * 32 + 1];
		struct tm tm;
		json_t *hdrs = json_array(), *o;
		gmtime_r(&c->in.now, &tm);
		strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
		CHECK_OK((c->presign ? tt_sigv4_presign : tt_sigv4_sign)(&c->in, &c->cr, &outs[i], &err));
		for (const char *const *h = c->in.headers; h && *h; h++) {
			const char *colon = strchr(*h, ':');
			json_array_append_new(hdrs, json_pack("[s%s]", *h, (size_t)(colon - *h),
							      colon + 1));
		}
		char *bhex = tt_malloc(2 * c->in.body_len + 1);
		tt_hex(bhex, (const uint8_t *)(c->in.body ? c->in.body : ""), c->in.body_len);
		char *url = oracle_url(c, &outs[i]);
		o = json_pack("{s:s, s:s, s:o, s:s, s:s, s:s, s:s, s:s, s:s?, s:s, s:b, s:b, s:I}",
			      "method", c->in.method, "url", url, "headers", hdrs, "body_hex", bhex,
			      "region", c->in.region, "service", c->in.service, "key",
			      c->cr.access_key_id, "secret", c->cr.secret_access_key, "token",
			      c->cr.session_token, "timestamp", stamp, "presign", c->presign,
			      "unsigned_payload", c->in.unsigned_payload, "expires",
			      (json_int_t)(c->in.expires ? c->in.expires : 3600));
		(void)hex;
		CHECK(o);
		json_array_append_new(in, o);
		free(bhex);
		free(url);
	}
	CHECK(json_dump_file(in, file, 0) == 0);
	{
		const char *argv[] = { py, script, file, NULL };
		tt_proc_opts po = { .argv = argv };
		tt_proc_result pr;
		tt_proc_result_init(&pr);
		CHECK_MSG(access(py, X_OK) == 0, "no python at %s: set TETHER_PYTHON or install "
						 "tests/requirements.txt into .venv", py);
		CHECK_OK(tt_proc_run(&po, &pr, &err));
		CHECK_MSG(pr.status == 0, "oracle failed (botocore installed? tests/requirements.txt): %s",
			  pr.err.ptr);
		res = json_loads(pr.out.ptr, 0, NULL);
		tt_proc_result_release(&pr);
	}
	CHECK(json_array_size(res) == NCASES);
	for (int i = 0; i < NCASES; i++) {
		json_t *r = json_array_get(res, (size_t)i);
		if (cases[i].presign) {
			const char *sig = json_string_value(json_object_get(r, "signature"));
			CHECK_MSG(sig && strcmp(sig, outs[i].signature) == 0,
				  "case %d: botocore %s, we %s\n  %s\n  %s", i, sig, outs[i].signature,
				  json_string_value(json_object_get(r, "url")), outs[i].url);
		} else {
			CHECK_MSG(strcmp(json_string_value(json_object_get(r, "authorization")),
					 out_header(&outs[i], "Authorization")) == 0,
				  "case %d:\n  botocore %s\n  we       %s", i,
				  json_string_value(json_object_get(r, "authorization")),
				  out_header(&outs[i], "Authorization"));
			CHECK_STR(json_string_value(json_object_get(r, "content_sha256")),
				  out_header(&outs[i], "X-Amz-Content-SHA256"));
			if (cases[i].cr.session_token)
				CHECK_STR(json_string_value(json_object_get(r, "token")),
					  out_header(&outs[i], "X-Amz-Security-Token"));
		}
	}
	for (int i = 0; i < NCASES; i++)
		tt_sigv4_out_release(&outs[i]);
	json_decref(in);
	json_decref(res);
	free(py);
	free(script);
	free(file);
}

/* AWS's documented example: GET /test.txt, bucket examplebucket, Range. */
TT_TEST(sigv4_aws_documented_example)
{
	tt_error err = TT_ERROR_INIT;
	tt_sigv4_out o;
	const char *hdrs[] = { "Range: bytes=0-9", NULL };
	tt_sigv4_input in = { .method = "GET", .host = "examplebucket.s3.amazonaws.com",
			      .path = "/test.txt", .headers = hdrs, .region = "us-east-1",
			      .service = "s3", .now = 1369353600 /* 2013-05-24 */ };
	tt_aws_creds cr = { "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", NULL };
	CHECK_OK(tt_sigv4_sign(&in, &cr, &o, &err));
	CHECK_STR(o.signature, "f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41");
	CHECK_STR(o.url, "https://examplebucket.s3.amazonaws.com/test.txt");
	tt_sigv4_out_release(&o);
}

TT_TEST(sigv4_never_shows_the_secret)
{
	tt_error err = TT_ERROR_INIT;
	tt_sigv4_out o;
	tt_sigv4_input in = { .method = "GET", .host = "h", .path = "/b", .region = "r",
			      .service = "s3", .now = T0 };
	tt_aws_creds cr = { "AKID", "hunter2-secret", "the-token" };
	CHECK_OK(tt_sigv4_sign(&in, &cr, &o, &err));
	for (size_t i = 0; i < o.nheaders; i++)
		CHECK(!strstr(o.headers[i], "hunter2"));
	CHECK(!strstr(o.url, "hunter2"));
	tt_sigv4_out_release(&o);
	CHECK_OK(tt_sigv4_presign(&in, &cr, &o, &err));
	CHECK(!strstr(o.url, "hunter2") && strstr(o.url, "X-Amz-Security-Token=the-token"));
	tt_sigv4_out_release(&o);
	cr.secret_access_key = "";
	CHECK_INT(tt_sigv4_sign(&in, &cr, &o, &err), TT_ECONFIG);
	CHECK(strstr(err.message, "secret_access_key"));
	tt_error_clear(&err);
}
