/*
 * Unit tests: storage/gcs.c against fake-gcs-server started here on
 * 127.0.0.1 (scripts/objstore-tools.sh builds it once per machine; without
 * it the tests say so and pass, unless TETHER_REQUIRE_TOOLS=1, where they
 * fail).  The store passes the same conformance suite as the local, S3 and
 * Azure stores on a bucket that keeps its generations; conditional writes
 * go through ifGenerationMatch, which the emulator enforces.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "store_conformance.h"
#include "storage/gcs.h"
#include "storage/open.h"
#include "testserver.h"
#include "util/mem.h"

static tt_testserver gcs;
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

static const char *endpoint(void)
{
	if (!gcs.pid && !missing) {
		char *bin = tool_path("fake-gcs-server");
		char port[16], pub[64];
		int p = tt_testserver_free_port();
		snprintf(port, sizeof port, "%d", p);
		snprintf(pub, sizeof pub, "127.0.0.1:%d", p);
		char ext[80];
		snprintf(ext, sizeof ext, "http://127.0.0.1:%d", p);
		const char *argv[] = { bin, "-backend", "memory", "-scheme", "http", "-host", "127.0.0.1",
				       "-port", port, "-public-host", pub, "-external-url", ext,
				       "-log-level", "error", NULL };
		if (!bin) {
			missing = true;
			fprintf(stderr, "fake-gcs-server is not installed (scripts/objstore-tools.sh "
					"install fake-gcs-server)\n");
		} else if (tt_testserver_start(argv, p, 60000, &gcs) != 0) {
			gcs.base[0] = '\0';
			missing = true;
		}
		free(bin);
	}
	return gcs.base;
}

static bool have_gcs(void)
{
	if (*endpoint())
		return true;
	if (getenv("TETHER_REQUIRE_TOOLS") && strcmp(getenv("TETHER_REQUIRE_TOOLS"), "1") == 0)
		tt_test_fail(__FILE__, __LINE__,
			     "fake-gcs-server is required (TETHER_REQUIRE_TOOLS=1) and did not start");
	else
		fprintf(stderr, "note: fake-gcs-server not available; GCS tests not run\n");
	return false;
}

static tt_gcs_config config(const char *bucket, const char *prefix)
{
	tt_gcs_config c = { .bucket = bucket, .prefix = prefix, .base_url = endpoint() };
	c.http.allow_http = true;
	c.http.backoff_base_ms = 20;
	return c;
}

static void run(tt_gcs_config c, const char *label)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	CHECK_OK(tt_gcs_create_bucket(&c, true, &err));
	CHECK_OK(tt_store_gcs_open(&c, &s, &err));
	CHECK_INT(tt_store_conformance_run(s, label), 0);
	tt_store_close(s);
}

TT_TEST(gcs_store_conformance)
{
	if (have_gcs())
		run(config("tt-gcs-plain", NULL), "gcs/bucket");
}

TT_TEST(gcs_store_conformance_with_prefix)
{
	if (have_gcs())
		run(config("tt-gcs-prefixed", "root/dir"), "gcs/prefix");
}

TT_TEST(gcs_store_list_pages_past_1000)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_page p = { 0 };
	char *token = NULL;
	size_t total = 0, pages = 0;
	if (!have_gcs())
		return;
	tt_gcs_config c = config("tt-gcs-many", NULL);
	CHECK_OK(tt_gcs_create_bucket(&c, false, &err));
	CHECK_OK(tt_store_gcs_open(&c, &s, &err));
	for (int i = 0; i < 1105; i++) {
		char k[32];
		snprintf(k, sizeof k, "k/%05d", i);
		CHECK_OK(tt_store_put(s, k, k, strlen(k), NULL, &err));
	}
	do {
		CHECK_OK(tt_store_list(s, "k/", token, 0, &p, &err));
		CHECK(p.n <= 1000);
		total += p.n;
		pages++;
		/* fake-gcs-server ignores max-keys and sends all 1105 at once:
		 * the second page is what it already sent, not asked again - a
		 * key put now is not in it */
		if (pages == 1) {
			CHECK(p.held);
			CHECK_OK(tt_store_put(s, "k/99999", "x", 1, NULL, &err));
		}
		free(token);
		token = p.next;
		p.next = NULL;
		tt_store_page_release(&p);
	} while (token);
	CHECK_INT(total, 1105);
	CHECK_INT(pages, 2);
	/* a new listing asks the server again */
	total = pages = 0;
	do {
		CHECK_OK(tt_store_list(s, "k/", token, 0, &p, &err));
		total += p.n;
		pages++;
		free(token);
		token = p.next;
		p.next = NULL;
		tt_store_page_release(&p);
	} while (token);
	CHECK_INT(total, 1106);
	CHECK_INT(pages, 2);
	/* a listing left after its first page, a key put, a new listing: the
	 * new one goes on from its own answer, not from the one left behind */
	CHECK_OK(tt_store_list(s, "k/", NULL, 0, &p, &err));
	CHECK(p.held);
	tt_store_page_release(&p);
	CHECK_OK(tt_store_put(s, "k/99998", "x", 1, NULL, &err));
	total = 0;
	do {
		CHECK_OK(tt_store_list(s, "k/", token, 0, &p, &err));
		total += p.n;
		free(token);
		token = p.next;
		p.next = NULL;
		tt_store_page_release(&p);
	} while (token);
	CHECK_INT(total, 1107);
	tt_store_close(s);
}

/* A service account's key is used for OAuth2 now (test_gcs_oauth.py); a
 * key file it cannot use is refused naming the file, never the key. */
TT_TEST(gcs_service_account_unusable_key_is_refused_by_name)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	char *key = NULL, *sa = tt_asprintf("%s/sa.json", tt_test_tmpdir());
	FILE *f = fopen(sa, "w");
	CHECK(f != NULL);
	fputs("{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nAAAA\\n\"}", f);
	fclose(f);
	json_t *o = json_pack("{s:s}", "service_account_path", sa);
	CHECK_INT(tt_store_open_uri("gs://tt-b/x", o, &s, &key, &err), TT_ECONFIG);
	CHECK_MSG(strstr(err.message, "gs://tt-b") && strstr(err.message, sa) &&
			  strstr(err.message, "client_email") && !strstr(err.message, "PRIVATE"),
		  "%s", err.message);
	tt_error_clear(&err);
	f = fopen(sa, "w");
	CHECK(f != NULL);
	fputs("{\"type\": \"service_account\", \"client_email\": \"a@b\", \"private_key\": "
	      "\"-----BEGIN PRIVATE KEY-----\\nAAAA\\n-----END PRIVATE KEY-----\\n\"}", f);
	fclose(f);
	CHECK_INT(tt_store_open_uri("gs://tt-b/x", o, &s, &key, &err), TT_ECONFIG);
	CHECK_MSG(strstr(err.message, "gs://tt-b") && strstr(err.message, sa) &&
			  strstr(err.message, "RSA private key") && !strstr(err.message, "AAAA"),
		  "%s", err.message);
	tt_error_clear(&err);
	json_decref(o);
	free(sa);
}
