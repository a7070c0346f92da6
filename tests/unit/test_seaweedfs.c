/*
 * Unit tests: storage/s3.c against SeaweedFS (Apache-2.0) started here on
 * 127.0.0.1 with an identity, so every request's SigV4 signature is
 * checked for real: the S3 conformance suite passes on it, and a wrong
 * secret is a 403 that names the bucket and never the secret.
 * scripts/objstore-tools.sh builds SeaweedFS once per machine; without it
 * the tests say so and pass, unless TETHER_REQUIRE_TOOLS=1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "store_conformance.h"
#include "storage/s3.h"
#include "testserver.h"
#include "util/fs.h"
#include "util/mem.h"

#define AK "tether-test-ak"
#define SK "tether-test-secret-key"

static tt_testserver weed;
static bool missing;

/* The tool's path from scripts/objstore-tools.sh; NULL when absent. */
static char *tool_path(const char *name)
{
	char *cmd = tt_asprintf("'%s/scripts/objstore-tools.sh' path %s", tt_testserver_source_dir(), name);
	char line[4096] = "";
	FILE *f = popen(cmd, "r");
	free(cmd);
	if (!f)
		return NULL;
	if (!fgets(line, sizeof line, f))
		line[0] = '\0';
	pclose(f);
	line[strcspn(line, "\n")] = '\0';
	return line[0] && access(line, X_OK) == 0 ? tt_strdup(line) : NULL;
}

/* A port p with p + 10000 (the gRPC port SeaweedFS adds) usable too. */
static int low_port(void)
{
	for (int i = 0; i < 200; i++) {
		int p = tt_testserver_free_port();
		if (p > 1024 && p < 50000)
			return p;
	}
	return 20000 + (int)(getpid() % 20000);
}

static const char *endpoint(void)
{
	if (!weed.pid && !missing) {
		char *bin = tool_path("seaweedfs");
		const char *dir = tt_test_tmpdir();
		char *data = tt_asprintf("%s/weed-data", dir), *cfg = tt_asprintf("%s/s3.json", dir);
		char a[32], b[32], c[32], d[32], e[64], f[300];
		int s3 = low_port();
		tt_error err = TT_ERROR_INIT;
		static const char conf[] =
			"{\"identities\":[{\"name\":\"tester\",\"credentials\":[{\"accessKey\":\"" AK
			"\",\"secretKey\":\"" SK "\"}],\"actions\":[\"Admin\",\"Read\",\"List\","
			"\"Tagging\",\"Write\"]}]}";
		tt_mkdirs(data, 0755, &err);
		tt_write_file_atomic(cfg, conf, sizeof conf - 1, 0600, &err);
		tt_error_clear(&err);
		snprintf(a, sizeof a, "-master.port=%d", low_port());
		snprintf(b, sizeof b, "-volume.port=%d", low_port());
		snprintf(c, sizeof c, "-filer.port=%d", low_port());
		snprintf(d, sizeof d, "-s3.port=%d", s3);
		snprintf(e, sizeof e, "-dir=%s", data);
		snprintf(f, sizeof f, "-s3.config=%s", cfg);
		const char *argv[] = { bin, "server", "-ip=127.0.0.1", "-ip.bind=127.0.0.1", e, a, b,
				       "-filer", c, "-s3", d, f, "-volume.max=4", NULL };
		if (!bin) {
			missing = true;
			fprintf(stderr, "seaweedfs is not installed (scripts/objstore-tools.sh install "
					"seaweedfs)\n");
		} else if (tt_testserver_start(argv, s3, 120000, &weed) != 0) {
			weed.base[0] = '\0';
			missing = true;
		}
		free(bin);
		free(data);
		free(cfg);
	}
	return weed.base;
}

static bool have_weed(void)
{
	if (*endpoint())
		return true;
	if (getenv("TETHER_REQUIRE_TOOLS") && strcmp(getenv("TETHER_REQUIRE_TOOLS"), "1") == 0)
		tt_test_fail(__FILE__, __LINE__,
			     "seaweedfs is required (TETHER_REQUIRE_TOOLS=1) and did not start");
	else
		fprintf(stderr, "note: seaweedfs not available; SeaweedFS tests not run\n");
	return false;
}

static tt_s3_config config(const char *bucket, const char *prefix, const char *secret)
{
	tt_s3_config c = { .bucket = bucket, .prefix = prefix, .endpoint = endpoint(),
			   .creds = { AK, secret, NULL } };
	c.http.allow_http = true;
	c.http.backoff_base_ms = 50;
	c.http.retries = 8;  /* the filer may still be starting */
	return c;
}

/* Create the bucket once the gateway can: until its filer is up, SeaweedFS's
 * S3 gateway answers a bucket PUT with 404 (not a 5xx the client retries),
 * so a freshly started server is given up to 30 s. */
static int create_bucket_ready(const tt_s3_config *c, tt_error *err)
{
	int rc = 0;
	for (int i = 0; i < 300; i++) {
		tt_error_clear(err);
		rc = tt_s3_create_bucket(c, err);
		if (rc == 0 || !err->message || !strstr(err->message, "HTTP 404"))
			return rc;
		nanosleep(&(struct timespec){ .tv_nsec = 100 * 1000 * 1000 }, NULL);
	}
	return rc;
}

TT_TEST(seaweedfs_s3_conformance_with_strict_sigv4)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	if (!have_weed())
		return;
	tt_s3_config c = config("tt-weed", "root/dir", SK);
	CHECK_OK(create_bucket_ready(&c, &err));
	CHECK_OK(tt_store_s3_open(&c, &s, &err));
	CHECK_INT(tt_store_conformance_run(s, "seaweedfs"), 0);
	tt_store_close(s);
}

TT_TEST(seaweedfs_wrong_secret_is_403_named)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_meta m = { 0 };
	if (!have_weed())
		return;
	tt_s3_config good = config("tt-weed-auth", NULL, SK);
	CHECK_OK(create_bucket_ready(&good, &err));
	tt_s3_config c = config("tt-weed-auth", NULL, "not-the-secret-at-all");
	int rc = tt_store_s3_open(&c, &s, &err);
	if (rc == 0)
		rc = tt_store_head(s, "x", NULL, &m, &err);
	CHECK_INT(rc, TT_EBACKEND);
	CHECK_MSG(strstr(err.message, "s3://tt-weed-auth/") && strstr(err.message, "403") &&
			  strstr(err.message, "secrets.toml"),
		  "%s", err.message);
	CHECK(!strstr(err.message, "not-the-secret-at-all") && !strstr(err.message, SK));
	tt_error_clear(&err);
	tt_store_close(s);
}
