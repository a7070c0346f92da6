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
#include <unistd.h>

#include "harness.h"
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
