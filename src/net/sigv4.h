/*
 * net/sigv4.h - AWS Signature Version 4, for S3 and STS: the Authorization
 * header form and the presigned-URL (query) form.
 *
 * We build the canonical request ourselves (libcurl's aws-sigv4 option on
 * the Debian version neither encodes the query canonically nor sends
 * x-amz-content-sha256):
 *   - the path is given raw and encoded once, RFC 3986 unreserved kept and
 *     '/' kept (S3 paths are not normalised: "a/./b" stays);
 *   - query names and values are given raw, encoded (unreserved only),
 *     sorted by encoded name then value; the URL we return carries exactly
 *     that string, so what is sent is what was signed;
 *   - signed headers: host, x-amz-date, x-amz-content-sha256 (header form),
 *     x-amz-security-token when there is a session token, and every header
 *     the caller gives except hop-by-hop ones (expect, user-agent,
 *     connection, ...), lower-cased, values trimmed with inner runs of
 *     spaces folded, same names joined with ',';
 *   - the payload hash is the SHA-256 of the body, or UNSIGNED-PAYLOAD when
 *     asked (and always in the presigned form).
 * The result is byte-for-byte what botocore's S3SigV4Auth / S3SigV4QueryAuth
 * produce for the same inputs (tests/unit/test_sigv4.c checks it against
 * botocore itself).
 *
 * Secrets: the secret key never leaves this module; the session token goes
 * into a header or the query, which the HTTP client's trace and errors
 * redact.  host must be spelled without a default port (":443" on https,
 * ":80" on http), as the Host header curl sends.
 */
#ifndef TT_NET_SIGV4_H
#define TT_NET_SIGV4_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#include "util/error.h"

typedef struct tt_aws_creds {
	const char *access_key_id;
	const char *secret_access_key;
	const char *session_token;  /* NULL or "": none */
} tt_aws_creds;

typedef struct tt_sigv4_param {
	const char *name;
	const char *value;  /* NULL: "" */
} tt_sigv4_param;

typedef struct tt_sigv4_input {
	const char *method;
	const char *scheme;           /* "https" (NULL) or "http" */
	const char *host;             /* host[:port] */
	const char *path;             /* raw, from '/' */
	const tt_sigv4_param *query;
	size_t nquery;
	const char *const *headers;   /* NULL-terminated "Name: value", sent and signed */
	const void *body;
	size_t body_len;
	bool unsigned_payload;        /* header form: UNSIGNED-PAYLOAD, not the body's hash */
	const char *region;
	const char *service;          /* "s3", "sts" */
	time_t now;                   /* 0: the current time */
	long expires;                 /* presigned form: seconds (0: 3600) */
} tt_sigv4_input;

typedef struct tt_sigv4_out {
	char *url;       /* scheme://host/path?query, the query canonical */
	char **headers;  /* NULL-terminated: the caller's, then those signing added */
	size_t nheaders;
	char *signature; /* hex */
} tt_sigv4_out;

int tt_sigv4_sign(const tt_sigv4_input *in, const tt_aws_creds *creds, tt_sigv4_out *out,
		  tt_error *err);
int tt_sigv4_presign(const tt_sigv4_input *in, const tt_aws_creds *creds, tt_sigv4_out *out,
		     tt_error *err);
void tt_sigv4_out_release(tt_sigv4_out *out);

#endif
