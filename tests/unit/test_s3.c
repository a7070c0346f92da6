/*
 * Unit tests: storage/s3.c against a moto server started here on
 * 127.0.0.1 (moto_server beside $TETHER_PYTHON, default the source tree's
 * .venv; tests/requirements.txt installs moto[server]).  The store passes
 * the same conformance suite as the local store: path-style with a key
 * prefix, a versioned bucket, and virtual-hosted requests.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "net/http.h"
#include "store_conformance.h"
#include "storage/open.h"
#include "storage/s3.h"
#include "testserver.h"
#include "util/fs.h"
#include "util/mem.h"

static tt_testserver moto;

static const char *endpoint(void)
{
	if (!moto.pid) {
		const char *py = getenv("TETHER_PYTHON");
		char *pyp = py ? tt_strdup(py) : tt_asprintf("%s/.venv/bin/python", tt_testserver_source_dir());
		char *bin = tt_asprintf("%s/moto_server", dirname(pyp));
		char port[16];
		int p = tt_testserver_free_port();
		snprintf(port, sizeof port, "%d", p);
		const char *argv[] = { bin, "-H", "127.0.0.1", "-p", port, NULL };
		if (access(bin, X_OK) != 0)
			fprintf(stderr, "no moto_server at %s: install tests/requirements.txt or set "
					"TETHER_PYTHON\n", bin);
		else if (tt_testserver_start(argv, p, 30000, &moto) != 0)
			moto.base[0] = '\0';
		free(bin);
		free(pyp);
	}
	return moto.base;
}

static tt_s3_config config(const char *bucket, const char *prefix)
{
	tt_s3_config c = { .bucket = bucket, .prefix = prefix, .endpoint = endpoint(),
			   .creds = { "testing", "testing-secret", NULL } };
	c.http.allow_http = true;
	c.http.backoff_base_ms = 20;
	return c;
}

static void run(tt_s3_config c, bool versioning, const char *label)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	CHECK_MSG(*endpoint(), "moto server did not start");
	CHECK_OK(tt_s3_create_bucket(&c, &err));
	if (versioning)
		CHECK_OK(tt_s3_enable_versioning(&c, &err));
	CHECK_OK(tt_store_s3_open(&c, &s, &err));
	CHECK_INT(s->versioned, versioning);
	CHECK_INT(tt_store_conformance_run(s, label), 0);
	tt_store_close(s);
}

TT_TEST(s3_store_conformance_path_style)
{
	run(config("tt-plain", "root/dir"), false, "s3/path-style");
}

TT_TEST(s3_store_conformance_versioned)
{
	run(config("tt-versioned", NULL), true, "s3/versioned");
}

TT_TEST(s3_store_conformance_virtual_hosted)
{
	char ep[64], res[96];
	const char *resolve[] = { res, NULL };
	tt_s3_config c = config("tt-vhost", "p/");
	CHECK(*endpoint());
	snprintf(ep, sizeof ep, "http://s3.tether.test:%d", moto.port);
	snprintf(res, sizeof res, "tt-vhost.s3.tether.test:%d:127.0.0.1", moto.port);
	c.endpoint = ep;
	c.virtual_hosted = true;
	c.http.resolve = resolve;
	run(c, false, "s3/virtual-hosted");
}

TT_TEST(s3_store_prefix_isolates_keys)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *a = NULL, *whole = NULL;
	tt_store_page p = { 0 };
	tt_s3_config ca = config("tt-prefix", "a"), cw = config("tt-prefix", "");
	CHECK(*endpoint());
	CHECK_OK(tt_s3_create_bucket(&cw, &err));
	CHECK_OK(tt_store_s3_open(&ca, &a, &err));
	CHECK_OK(tt_store_s3_open(&cw, &whole, &err));
	CHECK_OK(tt_store_put(whole, "ab/outside", "x", 1, NULL, &err));
	CHECK_OK(tt_store_put(a, "inside", "y", 1, NULL, &err));
	CHECK_OK(tt_store_list(a, "", NULL, 0, &p, &err));
	CHECK_INT(p.n, 1);
	CHECK_STR(p.items[0].key, "inside");
	tt_store_page_release(&p);
	CHECK_OK(tt_store_list(whole, "a/", NULL, 0, &p, &err));
	CHECK_INT(p.n, 1);
	CHECK_STR(p.items[0].key, "a/inside");
	tt_store_page_release(&p);
	tt_store_close(a);
	tt_store_close(whole);
}

TT_TEST(s3_store_list_pages_past_1000)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_page p = { 0 };
	char *token = NULL;
	size_t total = 0, pages = 0;
	tt_s3_config c = config("tt-many", NULL);
	CHECK(*endpoint());
	CHECK_OK(tt_s3_create_bucket(&c, &err));
	CHECK_OK(tt_store_s3_open(&c, &s, &err));
	for (int i = 0; i < 1205; i++) {
		char k[32];
		snprintf(k, sizeof k, "k/%05d", i);
		CHECK_OK(tt_store_put(s, k, k, strlen(k), NULL, &err));
	}
	do {
		CHECK_OK(tt_store_list(s, "k/", token, 5000, &p, &err));
		CHECK(p.n <= 1000);
		total += p.n;
		pages++;
		free(token);
		token = p.next;
		p.next = NULL;
		tt_store_page_release(&p);
	} while (token);
	CHECK_INT(total, 1205);
	CHECK_INT(pages, 2);
	tt_store_close(s);
}

TT_TEST(s3_store_errors_name_the_bucket)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_s3_config c = config("tt-no-such-bucket", NULL);
	CHECK(*endpoint());
	CHECK_INT(tt_store_s3_open(&c, &s, &err), TT_ENOTFOUND);
	CHECK_MSG(strstr(err.message, "s3://tt-no-such-bucket/") && strstr(err.message, "NoSuchBucket"),
		  "%s", err.message);
	CHECK(!strstr(err.message, "testing-secret"));
	tt_error_clear(&err);
	c.endpoint = "ftp://x";
	CHECK_INT(tt_store_s3_open(&c, &s, &err), TT_ECONFIG);
	tt_error_clear(&err);
	/* plain http needs allow_http */
	c = config("tt-plain", NULL);
	c.http.allow_http = false;
	CHECK_INT(tt_store_s3_open(&c, &s, &err), TT_ECONFIG);
	CHECK(strstr(err.message, "allow_http"));
	tt_error_clear(&err);
}

TT_TEST(s3_store_open_uri_with_options_and_profile)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_meta m = { 0 };
	char *key = NULL, *cred = tt_asprintf("%s/credentials", tt_test_tmpdir());
	static const char text[] = "[moto]\naws_access_key_id = AKMOTO\naws_secret_access_key = skmoto\n";
	tt_s3_config c = config("tt-uri", NULL);
	CHECK(*endpoint());
	CHECK_OK(tt_s3_create_bucket(&c, &err));
	CHECK_OK(tt_write_file_atomic(cred, text, sizeof text - 1, 0600, &err));
	setenv("AWS_SHARED_CREDENTIALS_FILE", cred, 1);
	json_t *o = json_pack("{s:s, s:s, s:b, s:i}", "profile", "moto", "AWS_ENDPOINT", endpoint(),
			      "allow_http", 1, "timeout", 5);
	CHECK_OK(tt_store_open_uri("s3://tt-uri/some/object.bin", o, &s, &key, &err));
	CHECK_STR(key, "some/object.bin");
	CHECK_STR(s->display, "s3://tt-uri/");
	CHECK_OK(tt_store_put(s, key, "abc", 3, NULL, &err));
	CHECK_OK(tt_store_head(s, key, NULL, &m, &err));
	CHECK_INT(m.size, 3);
	/* S3's ETag of a single PUT is the MD5 of the bytes */
	CHECK_STR(m.etag, "900150983cd24fb0d6963f7d28e17f72");
	tt_store_meta_release(&m);
	tt_store_close(s);
	free(key);
	/* without allow_http a plain-http endpoint is refused */
	json_object_del(o, "allow_http");
	CHECK_INT(tt_store_open_uri("s3://tt-uri/x", o, &s, &key, &err), TT_ECONFIG);
	CHECK(strstr(err.message, "allow_http"));
	tt_error_clear(&err);
	json_object_set_new(o, "timeout", json_string("soon"));
	CHECK_INT(tt_store_open_uri("s3://tt-uri/x", o, &s, &key, &err), TT_ECONFIG);
	CHECK(strstr(err.message, "timeout"));
	tt_error_clear(&err);
	json_decref(o);
	unsetenv("AWS_SHARED_CREDENTIALS_FILE");
	free(cred);
}

/* ---- temporary credentials: STS on moto, the metadata endpoints on a fake ---- */

static tt_testserver meta;

static const char *meta_base(void)
{
	if (!meta.pid) {
		char *script = tt_asprintf("%s/tests/support/http_test_server.py", tt_testserver_source_dir());
		const char *argv[] = { "python3", script, NULL };
		if (tt_testserver_start(argv, 0, 0, &meta) != 0)
			meta.base[0] = '\0';
		free(script);
	}
	return meta.base;
}

static void creds_env_clear(void)
{
	static const char *const names[] = { "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
					     "AWS_PROFILE", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE",
					     "AWS_CONTAINER_CREDENTIALS_FULL_URI",
					     "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
					     "AWS_CONTAINER_AUTHORIZATION_TOKEN",
					     "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE",
					     "AWS_EC2_METADATA_SERVICE_ENDPOINT", "AWS_ENDPOINT_URL_STS", NULL };
	for (const char *const *n = names; *n; n++)
		unsetenv(*n);
	/* An empty HOME: no shared files of the machine's. */
	setenv("HOME", tt_test_tmpdir(), 1);
	setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/credentials", 1);
	setenv("AWS_CONFIG_FILE", "/nonexistent/config", 1);
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
}

/* Resolve options; check the source and that the keys are temporary ones. */
static void temp_case(const char *options, const char *source, const char *ak_prefix, const char *token)
{
	tt_error err = TT_ERROR_INIT;
	tt_aws_resolved r;
	json_t *o = json_loads(options, 0, NULL);
	CHECK(o != NULL);
	int rc = tt_aws_resolve(o, &r, &err);
	json_decref(o);
	CHECK_MSG(rc == 0, "%s: %s", options, tt_error_text(&err));
	CHECK_STR(r.source, source);
	CHECK_MSG(r.access_key_id && strncmp(r.access_key_id, ak_prefix, strlen(ak_prefix)) == 0, "%s: key %s",
		  options, r.access_key_id ? r.access_key_id : "(none)");
	CHECK(r.secret_access_key && *r.secret_access_key);
	if (token)
		CHECK_STR(r.session_token, token);
	else
		CHECK(r.session_token && strlen(r.session_token) > 20);
	long long now = (long long)time(NULL);
	CHECK_MSG(r.expires > now + 600 && r.expires < now + 4 * 3600, "expires %lld, now %lld", r.expires, now);
	tt_aws_resolved_release(&r);
}

TT_TEST(s3_credentials_from_sts_assume_role_and_web_identity)
{
	CHECK(*endpoint());
	creds_env_clear();
	char *opts = tt_asprintf("{\"access_key_id\": \"AKSOURCE\", \"secret_access_key\": \"sksource\", "
				 "\"role_arn\": \"arn:aws:iam::123456789012:role/reader\", \"allow_http\": true, "
				 "\"sts_endpoint\": \"%s\", \"role_session_name\": \"unit\"}", endpoint());
	/* moto's STS answers with ASIA... keys, a session token and an expiry. */
	temp_case(opts, "assume-role", "ASIA", NULL);
	free(opts);

	/* A profile that assumes a role from its source_profile. */
	char *conf = tt_asprintf("%s/config", tt_test_tmpdir());
	static const char text[] = "[profile base]\naws_access_key_id = AKBASE\naws_secret_access_key = skbase\n"
				   "[profile reader]\nrole_arn = arn:aws:iam::123456789012:role/reader\n"
				   "source_profile = base\nduration_seconds = 1800\n";
	tt_error err = TT_ERROR_INIT;
	CHECK_OK(tt_write_file_atomic(conf, text, sizeof text - 1, 0600, &err));
	setenv("AWS_CONFIG_FILE", conf, 1);
	setenv("AWS_ENDPOINT_URL_STS", endpoint(), 1);
	temp_case("{\"profile\": \"reader\", \"allow_http\": true}", "assume-role", "ASIA", NULL);

	/* Web identity from the environment, unsigned. */
	char *tok = tt_asprintf("%s/token", tt_test_tmpdir());
	CHECK_OK(tt_write_file_atomic(tok, "eyJ.web.identity\n", 17, 0600, &err));
	setenv("AWS_ROLE_ARN", "arn:aws:iam::123456789012:role/web", 1);
	setenv("AWS_WEB_IDENTITY_TOKEN_FILE", tok, 1);
	temp_case("{\"allow_http\": true}", "web-identity", "ASIA", NULL);

	/* And the keys work: a store opened through the chain writes and reads. */
	tt_s3_config c = config("tt-assumed", NULL);
	CHECK_OK(tt_s3_create_bucket(&c, &err));
	json_t *o = json_pack("{s:s, s:b}", "endpoint", endpoint(), "allow_http", 1);
	tt_store *s = NULL;
	char *key = NULL;
	CHECK_OK(tt_store_open_uri("s3://tt-assumed/k", o, &s, &key, &err));
	CHECK_OK(tt_store_put(s, key, "abc", 3, NULL, &err));
	tt_store_meta m = { 0 };
	CHECK_OK(tt_store_head(s, key, NULL, &m, &err));
	CHECK_INT(m.size, 3);
	tt_store_meta_release(&m);
	tt_store_close(s);
	free(key);
	json_decref(o);
	creds_env_clear();
	free(tok);
	free(conf);
}

TT_TEST(s3_credentials_from_the_container_and_instance_metadata)
{
	CHECK(*meta_base());
	tt_error err = TT_ERROR_INIT;
	creds_env_clear();
	char *url = tt_asprintf("%s/ecs/creds", meta_base());
	char *tokfile = tt_asprintf("%s/container-token", tt_test_tmpdir());
	CHECK_OK(tt_write_file_atomic(tokfile, "container-token\n", 16, 0600, &err));
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE", tokfile, 1);
	temp_case("{}", "container", "ASIAECS", "ecs-session");
	/* A wrong token is refused by the endpoint: named, not echoed. */
	unsetenv("AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE");
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "wrong-token-value", 1);
	tt_aws_resolved r;
	CHECK(tt_aws_resolve(NULL, &r, &err) < 0);
	CHECK_MSG(strstr(err.message, "HTTP 401") && !strstr(err.message, "wrong-token-value"), "%s", err.message);
	tt_error_clear(&err);
	/* An http endpoint that is neither loopback nor ECS's is refused. */
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://example.com/creds", 1);
	CHECK_INT(tt_aws_resolve(NULL, &r, &err), TT_ECONFIG);
	tt_error_clear(&err);
	creds_env_clear();

	/* IMDSv2: token, role list, role keys. */
	unsetenv("AWS_EC2_METADATA_DISABLED");
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", meta_base(), 1);
	temp_case("{}", "instance-metadata", "ASIAIMDS", "imds-session");
	/* Disabled, and nothing else: no credentials, not an error. */
	setenv("AWS_EC2_METADATA_DISABLED", "true", 1);
	CHECK_OK(tt_aws_resolve(NULL, &r, &err));
	CHECK(!r.access_key_id && !r.source);
	tt_aws_resolved_release(&r);
	/* Not reachable: the same, quickly (one second, one attempt). */
	unsetenv("AWS_EC2_METADATA_DISABLED");
	setenv("AWS_EC2_METADATA_SERVICE_ENDPOINT", "http://127.0.0.1:9", 1);
	CHECK_OK(tt_aws_resolve(NULL, &r, &err));
	CHECK(!r.access_key_id);
	tt_aws_resolved_release(&r);
	creds_env_clear();
	free(url);
	free(tokfile);
}

TT_TEST(s3_store_renews_temporary_keys_before_they_expire)
{
	CHECK(*endpoint());
	CHECK(*meta_base());
	tt_error err = TT_ERROR_INIT;
	creds_env_clear();
	/* Keys that expire in two minutes: inside the renewal window, so every
	 * request asks the endpoint again. */
	char *url = tt_asprintf("%s/ecs/creds/short", meta_base());
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", url, 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "container-token", 1);
	tt_s3_config c = config("tt-renew", NULL);
	CHECK_OK(tt_s3_create_bucket(&c, &err));
	json_t *o = json_pack("{s:s, s:b}", "endpoint", endpoint(), "allow_http", 1);
	tt_store *s = NULL;
	char *key = NULL;
	CHECK_OK(tt_store_open_uri("s3://tt-renew/k", o, &s, &key, &err));
	CHECK_OK(tt_store_put(s, key, "abc", 3, NULL, &err));
	CHECK_OK(tt_store_put(s, key, "abcd", 4, NULL, &err));
	tt_store_close(s);
	free(key);
	json_decref(o);
	/* open (resolve + the versioning probe) and two puts: four asks. */
	char *count = tt_asprintf("%s/count/ecs-short", meta_base());
	tt_http_client *h = NULL;
	tt_http_opts ho = { .allow_http = true };
	CHECK_OK(tt_http_client_new(&ho, &h, &err));
	tt_http_request req = { .method = "GET", .url = count };
	tt_http_response resp;
	tt_http_response_init(&resp);
	CHECK_OK(tt_http_do(h, &req, &resp, &err));
	CHECK_MSG(atoi(resp.body.ptr) >= 4, "asked %s times", resp.body.ptr);
	tt_http_response_release(&resp);
	tt_http_client_free(h);
	creds_env_clear();
	free(count);
	free(url);
}
