/*
 * Unit tests: storage/azure.c against Azurite started here on 127.0.0.1
 * (scripts/objstore-tools.sh installs it once per machine; without it the
 * tests say so and pass, unless TETHER_REQUIRE_TOOLS=1, where they fail).
 * The store passes the same conformance suite as the local and S3 stores,
 * with Shared Key signing that Azurite checks: a wrong key is a 403 that
 * names the container and never the key.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include "store_conformance.h"
#include "storage/azure.h"
#include "storage/open.h"
#include "testserver.h"
#include "util/mem.h"

#define DEV_ACCOUNT "devstoreaccount1"
#define DEV_KEY "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="

static tt_testserver azurite;
static char ep[128];
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

/* The Azurite blob endpoint, "" when it cannot run here. */
static const char *endpoint(void)
{
	if (!azurite.pid && !missing) {
		char *bin = tool_path("azurite");
		char port[16];
		int p = tt_testserver_free_port();
		snprintf(port, sizeof port, "%d", p);
		const char *argv[] = { bin, "--blobHost", "127.0.0.1", "--blobPort", port,
				       "--inMemoryPersistence", "--disableTelemetry", "--skipApiVersionCheck",
				       NULL };
		if (!bin) {
			missing = true;
			fprintf(stderr, "azurite is not installed (scripts/objstore-tools.sh install azurite)\n");
		} else if (tt_testserver_start(argv, p, 60000, &azurite) != 0) {
			azurite.base[0] = '\0';
			missing = true;
		} else {
			snprintf(ep, sizeof ep, "%s/%s", azurite.base, DEV_ACCOUNT);
		}
		free(bin);
	}
	return ep;
}

/* Whether to go on: Azurite runs, or its absence is allowed (a note). */
static bool have_azurite(void)
{
	if (*endpoint())
		return true;
	if (getenv("TETHER_REQUIRE_TOOLS") && strcmp(getenv("TETHER_REQUIRE_TOOLS"), "1") == 0)
		tt_test_fail(__FILE__, __LINE__,
			     "azurite is required (TETHER_REQUIRE_TOOLS=1) and did not start");
	else
		fprintf(stderr, "note: azurite not available; Azure tests not run\n");
	return false;
}

static tt_azure_config config(const char *container, const char *prefix)
{
	tt_azure_config c = { .account = DEV_ACCOUNT, .container = container, .prefix = prefix,
			      .endpoint = endpoint(), .account_key = DEV_KEY };
	c.http.allow_http = true;
	c.http.backoff_base_ms = 20;
	return c;
}

static void run(tt_azure_config c, const char *label)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	CHECK_OK(tt_azure_create_container(&c, &err));
	CHECK_OK(tt_store_azure_open(&c, &s, &err));
	CHECK_INT(tt_store_conformance_run(s, label), 0);
	tt_store_close(s);
}

TT_TEST(azure_store_conformance)
{
	if (have_azurite())
		run(config("tt-plain", NULL), "azure/container");
}

TT_TEST(azure_store_conformance_with_prefix)
{
	if (have_azurite())
		run(config("tt-prefixed", "root/dir"), "azure/prefix");
}

TT_TEST(azure_store_list_pages)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_page p = { 0 };
	char *token = NULL;
	size_t total = 0, pages = 0;
	if (!have_azurite())
		return;
	tt_azure_config c = config("tt-many", NULL);
	CHECK_OK(tt_azure_create_container(&c, &err));
	CHECK_OK(tt_store_azure_open(&c, &s, &err));
	for (int i = 0; i < 25; i++) {
		char k[32];
		snprintf(k, sizeof k, "k/%05d", i);
		CHECK_OK(tt_store_put(s, k, k, strlen(k), NULL, &err));
	}
	do {
		CHECK_OK(tt_store_list(s, "k/", token, 10, &p, &err));
		CHECK(p.n <= 10);
		total += p.n;
		pages++;
		free(token);
		token = p.next;
		p.next = NULL;
		tt_store_page_release(&p);
	} while (token);
	CHECK_INT(total, 25);
	CHECK_INT(pages, 3);
	tt_store_close(s);
}

TT_TEST(azure_store_wrong_key_is_named_not_shown)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_store_meta m = { 0 };
	static const char bad[] = "AAAAbm90IHRoZSBrZXkgYXQgYWxsLCBqdXN0IGJ5dGVzIGZvciBhIHRlc3Q=";
	if (!have_azurite())
		return;
	tt_azure_config c = config("tt-auth", NULL);
	CHECK_OK(tt_azure_create_container(&c, &err));
	c.account_key = bad;
	CHECK_OK(tt_store_azure_open(&c, &s, &err));
	CHECK_INT(tt_store_head(s, "x", NULL, &m, &err), TT_EBACKEND);
	CHECK_MSG(strstr(err.message, "az://tt-auth/") && strstr(err.message, "403") &&
			  strstr(err.message, "secrets.toml"),
		  "%s", err.message);
	CHECK(!strstr(err.message, bad) && !strstr(err.message, DEV_KEY));
	tt_error_clear(&err);
	tt_store_close(s);
	/* a key that is not base64 is a config error naming the container */
	c.account_key = "not base64!";
	CHECK_INT(tt_store_azure_open(&c, &s, &err), TT_ECONFIG);
	CHECK(strstr(err.message, "az://tt-auth") && !strstr(err.message, "not base64!"));
	tt_error_clear(&err);
}
