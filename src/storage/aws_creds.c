/*
 * storage/aws_creds.c - AWS credentials that come from a service rather
 * than a file: STS AssumeRole (a role_arn, signed with source keys), STS
 * AssumeRoleWithWebIdentity (a role_arn and a token file, unsigned), the
 * ECS/EKS container endpoint and the EC2 instance metadata service
 * (IMDSv2).  Each gives temporary keys with an expiry; the S3 store asks
 * again before they run out (open.c).
 *
 * Endpoints are the SDKs' own variables, so a user's setup and the tests'
 * fakes on 127.0.0.1 are found the same way: AWS_ENDPOINT_URL_STS (else
 * AWS_ENDPOINT_URL, else sts.<region>.amazonaws.com),
 * AWS_CONTAINER_CREDENTIALS_FULL_URI / _RELATIVE_URI with
 * AWS_CONTAINER_AUTHORIZATION_TOKEN(_FILE), AWS_EC2_METADATA_SERVICE_ENDPOINT
 * and AWS_EC2_METADATA_DISABLED.  No key, token or signature reaches an
 * error message: errors name the endpoint and what the service said.
 */
#define _GNU_SOURCE
#include "storage/aws_creds.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "net/http.h"
#include "net/sigv4.h"
#include "storage/xml.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static void wipe_free(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void tt_aws_temp_release(tt_aws_temp *t)
{
	if (!t)
		return;
	free(t->access_key_id);
	wipe_free(t->secret_access_key);
	wipe_free(t->session_token);
	memset(t, 0, sizeof *t);
}

/* "2026-12-01T13:00:00Z" (fractions and offsets accepted) as epoch seconds; 0 unreadable. */
long long tt_aws_parse_time(const char *s)
{
	struct tm tm = { 0 };
	int y, mo, d, h, mi, se;
	if (!s || sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d", &y, &mo, &d, &h, &mi, &se) != 6)
		return 0;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = h;
	tm.tm_min = mi;
	tm.tm_sec = se;
	long long t = (long long)timegm(&tm);
	const char *z = s + 19;
	while (*z == '.' || (*z >= '0' && *z <= '9'))
		z++;
	if (*z == '+' || *z == '-') {
		int oh = 0, om = 0;
		if (sscanf(z + 1, "%2d:%2d", &oh, &om) >= 1)
			t -= (*z == '+' ? 1 : -1) * (oh * 3600LL + om * 60LL);
	}
	return t;
}

/* ---- one request ---------------------------------------------------------------- */

static int client(tt_http_client **c, long timeout_ms, bool allow_http, int retries, tt_error *err)
{
	tt_http_opts o = { .connect_timeout_ms = timeout_ms, .read_timeout_ms = timeout_ms,
			   .total_timeout_ms = timeout_ms * 3, .retries = retries, .backoff_base_ms = 50,
			   .allow_http = allow_http, .max_body = 1 << 20 };
	return tt_http_client_new(&o, c, err);
}

/* Split "scheme://host[:port][/path]" into its parts. */
static int split_url(const char *url, char **scheme, char **host, char **path, tt_error *err)
{
	const char *h = strstr(url, "://");
	*scheme = *host = *path = NULL;
	if (!h || (strncasecmp(url, "http://", 7) != 0 && strncasecmp(url, "https://", 8) != 0))
		return tt_error_set(err, TT_ECONFIG, "endpoint must be http(s)://host[:port], not '%s'", url);
	*scheme = tt_strndup(url, (size_t)(h - url));
	h += 3;
	size_t hl = strcspn(h, "/?#");
	*host = tt_strndup(h, hl);
	*path = tt_strdup(h[hl] == '/' ? h + hl : "/");
	if (!*scheme || !*host || !*path)
		return tt_error_oom(err);
	for (char *p = *scheme; *p; p++)
		*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
	return 0;
}

static void form_add(tt_buf *b, const char *name, const char *value)
{
	if (b->len)
		tt_buf_putc(b, '&');
	tt_buf_puts(b, name);
	tt_buf_putc(b, '=');
	tt_http_uri_encode(b, value, strlen(value), false);
}

/* The <Credentials> of an STS answer, or its <Error>. */
static int sts_answer(const char *where, const tt_http_response *r, tt_aws_temp *out, tt_error *err)
{
	const char *p = r->body.ptr ? r->body.ptr : "", *end = p + r->body.len, *vs, *ve;
	if (r->status != 200) {
		char *code = NULL, *msg = NULL;
		if (tt_xml_find(p, end, "Code", &vs, &ve, NULL))
			code = tt_xml_text(vs, ve);
		if (tt_xml_find(p, end, "Message", &vs, &ve, NULL))
			msg = tt_xml_text(vs, ve);
		int rc = tt_error_set(err, r->status == 403 ? TT_ECONFIG : TT_EBACKEND,
				      "AWS STS at %s refused: HTTP %ld%s%s%s%s", where, r->status, code ? " " : "",
				      code ? code : "", msg ? ": " : "", msg ? msg : "");
		if (r->status == 403)
			tt_error_hint(err, "check role_arn and the source credentials the role trusts");
		free(code);
		free(msg);
		return rc;
	}
	const char *cs, *ce;
	if (!tt_xml_find(p, end, "Credentials", &cs, &ce, NULL))
		return tt_error_set(err, TT_EBACKEND, "AWS STS at %s answered without credentials", where);
	char *fields[4] = { NULL, NULL, NULL, NULL };
	static const char *const tags[4] = { "AccessKeyId", "SecretAccessKey", "SessionToken", "Expiration" };
	for (int i = 0; i < 4; i++)
		if (tt_xml_find(cs, ce, tags[i], &vs, &ve, NULL))
			fields[i] = tt_xml_text(vs, ve);
	if (!fields[0] || !fields[1]) {
		free(fields[0]);
		wipe_free(fields[1]);
		wipe_free(fields[2]);
		free(fields[3]);
		return tt_error_set(err, TT_EBACKEND, "AWS STS at %s answered without an access key", where);
	}
	out->access_key_id = fields[0];
	out->secret_access_key = fields[1];
	out->session_token = fields[2];
	out->expires = tt_aws_parse_time(fields[3]);
	free(fields[3]);
	return 0;
}

static char *sts_endpoint(const tt_aws_role *role)
{
	if (role->endpoint && *role->endpoint)
		return tt_strdup(role->endpoint);
	if (env("AWS_ENDPOINT_URL_STS"))
		return tt_strdup(env("AWS_ENDPOINT_URL_STS"));
	if (env("AWS_ENDPOINT_URL"))
		return tt_strdup(env("AWS_ENDPOINT_URL"));
	return tt_asprintf("https://sts.%s.amazonaws.com", role->region && *role->region ? role->region : "us-east-1");
}

/* AssumeRole (signed with src) or, when token is given, AssumeRoleWithWebIdentity (unsigned). */
static int sts_call(const tt_aws_creds *src, const char *token, const tt_aws_role *role, tt_aws_temp *out,
		    tt_error *err)
{
	char *url = sts_endpoint(role), *scheme = NULL, *host = NULL, *path = NULL;
	tt_buf body = TT_BUF_INIT;
	tt_http_client *c = NULL;
	tt_http_response r;
	int rc;
	char dur[24];

	memset(out, 0, sizeof *out);
	tt_http_response_init(&r);
	if (!url)
		return tt_error_oom(err);
	if ((rc = split_url(url, &scheme, &host, &path, err)) != 0)
		goto done;
	form_add(&body, "Action", token ? "AssumeRoleWithWebIdentity" : "AssumeRole");
	form_add(&body, "Version", "2011-06-15");
	form_add(&body, "RoleArn", role->arn);
	form_add(&body, "RoleSessionName",
		 role->session_name && *role->session_name ? role->session_name : "tether");
	snprintf(dur, sizeof dur, "%ld", role->duration_s > 0 ? role->duration_s : 3600L);
	form_add(&body, "DurationSeconds", dur);
	if (role->external_id && *role->external_id && !token)
		form_add(&body, "ExternalId", role->external_id);
	if (token)
		form_add(&body, "WebIdentityToken", token);
	if (!body.ptr) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = client(&c, 10000, role->allow_http, 0, err)) != 0)
		goto done;
	static const char *const form_headers[] = {
		"Content-Type: application/x-www-form-urlencoded; charset=utf-8", NULL
	};
	if (token) {
		tt_http_request req = { .method = "POST", .url = url, .headers = form_headers, .body = body.ptr,
					.body_len = body.len };
		rc = tt_http_do(c, &req, &r, err);
	} else {
		tt_sigv4_input in = { .method = "POST", .scheme = scheme, .host = host, .path = path,
				      .headers = form_headers, .body = body.ptr, .body_len = body.len,
				      .region = role->region && *role->region ? role->region : "us-east-1",
				      .service = "sts" };
		tt_sigv4_out so;
		rc = tt_sigv4_sign(&in, src, &so, err);
		if (rc == 0) {
			tt_http_request req = { .method = "POST", .url = so.url,
						.headers = (const char *const *)so.headers, .body = body.ptr,
						.body_len = body.len };
			rc = tt_http_do(c, &req, &r, err);
			tt_sigv4_out_release(&so);
		}
	}
	if (rc == 0)
		rc = sts_answer(url, &r, out, err);
	else
		tt_error_prefix(err, "AWS STS at %s", url);
done:
	if (body.ptr)
		explicit_bzero(body.ptr, body.len);
	tt_buf_release(&body);
	tt_http_response_release(&r);
	tt_http_client_free(c);
	free(url);
	free(scheme);
	free(host);
	free(path);
	return rc;
}

int tt_aws_assume_role(const tt_aws_creds *src, const tt_aws_role *role, tt_aws_temp *out, tt_error *err)
{
	if (!src || !src->access_key_id || !src->secret_access_key)
		return tt_error_set(err, TT_ECONFIG,
				    "role_arn %s needs source credentials to assume it (static keys, a source_profile, "
				    "or the environment)", role->arn);
	return sts_call(src, NULL, role, out, err);
}

int tt_aws_web_identity(const tt_aws_role *role, const char *token_file, tt_aws_temp *out, tt_error *err)
{
	tt_buf tok = TT_BUF_INIT;
	memset(out, 0, sizeof *out);
	if (tt_read_file(token_file, &tok, 1 << 20, err) != 0)
		return tt_error_prefix(err, "web identity token file");
	/* The token as written, without a trailing newline. */
	while (tok.len && (tok.ptr[tok.len - 1] == '\n' || tok.ptr[tok.len - 1] == '\r'))
		tok.ptr[--tok.len] = '\0';
	int rc = tok.len ? sts_call(NULL, tok.ptr, role, out, err)
			 : tt_error_set(err, TT_ECONFIG, "web identity token file %s is empty", token_file);
	if (tok.ptr)
		explicit_bzero(tok.ptr, tok.len);
	tt_buf_release(&tok);
	return rc;
}

/* ---- metadata endpoints (JSON answers) -------------------------------------------- */

static int json_creds(const char *where, const tt_http_response *r, tt_aws_temp *out, tt_error *err)
{
	json_error_t je;
	json_t *j = json_loadb(r->body.ptr ? r->body.ptr : "", r->body.len, 0, &je);
	const char *ak = json_string_value(json_object_get(j, "AccessKeyId"));
	const char *sk = json_string_value(json_object_get(j, "SecretAccessKey"));
	const char *tk = json_string_value(json_object_get(j, "Token"));
	const char *ex = json_string_value(json_object_get(j, "Expiration"));
	int rc = 0;
	if (!ak || !sk) {
		const char *code = json_string_value(json_object_get(j, "Code"));
		rc = tt_error_set(err, TT_EBACKEND, "%s answered without credentials%s%s", where,
				  code ? ": " : "", code ? code : "");
	} else {
		out->access_key_id = tt_strdup(ak);
		out->secret_access_key = tt_strdup(sk);
		out->session_token = tk && *tk ? tt_strdup(tk) : NULL;
		out->expires = tt_aws_parse_time(ex);
		if (!out->access_key_id || !out->secret_access_key)
			rc = tt_error_oom(err);
	}
	json_decref(j);
	if (rc)
		tt_aws_temp_release(out);
	return rc;
}

/* http is allowed to the container endpoints the SDKs allow it to: loopback and ECS/EKS's link-local hosts. */
static bool container_host_ok(const char *host)
{
	static const char *const ok[] = { "127.", "localhost", "169.254.170.2", "169.254.170.23", "[::1]",
					  "[fd00:ec2::23]" };
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
		if (strncmp(host, ok[i], strlen(ok[i])) == 0)
			return true;
	return false;
}

int tt_aws_container_creds(tt_aws_temp *out, tt_error *err)
{
	char *url = NULL, *scheme = NULL, *host = NULL, *path = NULL, *auth = NULL;
	tt_http_client *c = NULL;
	tt_http_response r;
	int rc;
	memset(out, 0, sizeof *out);
	tt_http_response_init(&r);
	if (env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"))
		url = tt_asprintf("http://169.254.170.2%s", env("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"));
	else if (env("AWS_CONTAINER_CREDENTIALS_FULL_URI"))
		url = tt_strdup(env("AWS_CONTAINER_CREDENTIALS_FULL_URI"));
	else
		return TT_ENOTFOUND;  /* not in a container: no message, the chain goes on */
	if (!url)
		return tt_error_oom(err);
	if ((rc = split_url(url, &scheme, &host, &path, err)) != 0)
		goto done;
	if (strcmp(scheme, "https") != 0 && !container_host_ok(host)) {
		rc = tt_error_set(err, TT_ECONFIG,
				  "AWS_CONTAINER_CREDENTIALS_FULL_URI must be https, or http to a loopback or the "
				  "ECS/EKS metadata address, not %s", host);
		goto done;
	}
	if (env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE")) {
		tt_buf t = TT_BUF_INIT;
		if ((rc = tt_read_file(env("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"), &t, 1 << 16, err)) != 0) {
			tt_buf_release(&t);
			tt_error_prefix(err, "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
			goto done;
		}
		while (t.len && (t.ptr[t.len - 1] == '\n' || t.ptr[t.len - 1] == '\r'))
			t.ptr[--t.len] = '\0';
		auth = tt_asprintf("Authorization: %s", t.ptr ? t.ptr : "");
		if (t.ptr)
			explicit_bzero(t.ptr, t.len);
		tt_buf_release(&t);
	} else if (env("AWS_CONTAINER_AUTHORIZATION_TOKEN")) {
		auth = tt_asprintf("Authorization: %s", env("AWS_CONTAINER_AUTHORIZATION_TOKEN"));
	}
	if ((rc = client(&c, 2000, true, 2, err)) != 0)
		goto done;
	const char *headers[] = { auth, NULL };
	tt_http_request req = { .method = "GET", .url = url, .headers = auth ? headers : NULL };
	if ((rc = tt_http_do(c, &req, &r, err)) != 0) {
		tt_error_prefix(err, "the container credentials endpoint");
		goto done;
	}
	if (r.status != 200)
		rc = tt_error_set(err, r.status == 401 || r.status == 403 ? TT_ECONFIG : TT_EBACKEND,
				  "the container credentials endpoint %s answered HTTP %ld", host, r.status);
	else
		rc = json_creds("the container credentials endpoint", &r, out, err);
done:
	wipe_free(auth);
	tt_http_response_release(&r);
	tt_http_client_free(c);
	free(url);
	free(scheme);
	free(host);
	free(path);
	return rc;
}

int tt_aws_imds_creds(tt_aws_temp *out, tt_error *err)
{
	const char *dis = env("AWS_EC2_METADATA_DISABLED");
	const char *base = env("AWS_EC2_METADATA_SERVICE_ENDPOINT");
	tt_http_client *c = NULL;
	tt_http_response r;
	char *token = NULL, *url = NULL, *role = NULL, *hdr = NULL;
	int rc;
	memset(out, 0, sizeof *out);
	if (dis && strcasecmp(dis, "true") == 0)
		return TT_ENOTFOUND;
	if (!base)
		base = "http://169.254.169.254";
	size_t bl = strlen(base);
	while (bl && base[bl - 1] == '/')
		bl--;
	tt_http_response_init(&r);
	/* The SDKs' budget: one second, one attempt; off an instance it is not there. */
	if ((rc = client(&c, 1000, true, -1, err)) != 0)
		return rc;
	url = tt_asprintf("%.*s/latest/api/token", (int)bl, base);
	static const char *const ttl[] = { "X-aws-ec2-metadata-token-ttl-seconds: 21600", NULL };
	tt_http_request put = { .method = "PUT", .url = url, .headers = ttl };
	tt_error quiet = TT_ERROR_INIT;
	if (!url || tt_http_do(c, &put, &r, &quiet) != 0 || r.status != 200 || !r.body.len) {
		tt_error_clear(&quiet);
		rc = url ? TT_ENOTFOUND : tt_error_oom(err);
		goto done;
	}
	token = tt_strndup(r.body.ptr, r.body.len);
	hdr = tt_asprintf("X-aws-ec2-metadata-token: %s", token ? token : "");
	const char *auth[] = { hdr, NULL };
	free(url);
	url = tt_asprintf("%.*s/latest/meta-data/iam/security-credentials/", (int)bl, base);
	tt_http_response_release(&r);
	tt_http_response_init(&r);
	tt_http_request get = { .method = "GET", .url = url, .headers = auth };
	if (!url || !hdr || (rc = tt_http_do(c, &get, &r, err)) != 0) {
		rc = url && hdr ? tt_error_prefix(err, "the EC2 instance metadata service") : tt_error_oom(err);
		goto done;
	}
	if (r.status == 404) {
		rc = tt_error_set(err, TT_ENOTFOUND, "the EC2 instance metadata service has no IAM role for this "
				  "instance");
		tt_error_hint(err, "attach an instance profile, or give the store credentials in .tether/secrets.toml");
		goto done;
	}
	if (r.status != 200 || !r.body.len) {
		rc = tt_error_set(err, TT_EBACKEND, "the EC2 instance metadata service answered HTTP %ld for the "
				  "role list", r.status);
		goto done;
	}
	role = tt_strndup(r.body.ptr, strcspn(r.body.ptr, "\r\n"));
	free(url);
	url = role ? tt_asprintf("%.*s/latest/meta-data/iam/security-credentials/%s", (int)bl, base, role) : NULL;
	tt_http_response_release(&r);
	tt_http_response_init(&r);
	get.url = url;
	if (!url || (rc = tt_http_do(c, &get, &r, err)) != 0) {
		rc = url ? tt_error_prefix(err, "the EC2 instance metadata service") : tt_error_oom(err);
		goto done;
	}
	if (r.status != 200)
		rc = tt_error_set(err, TT_EBACKEND, "the EC2 instance metadata service answered HTTP %ld for role %s",
				  r.status, role);
	else
		rc = json_creds("the EC2 instance metadata service", &r, out, err);
done:
	wipe_free(token);
	wipe_free(hdr);
	free(role);
	free(url);
	tt_http_response_release(&r);
	tt_http_client_free(c);
	return rc;
}
