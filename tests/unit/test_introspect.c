/* Unit tests for the public id and hash functions language bindings call
 * (engine/cmd/introspect.c).  Expected values were computed with tether-vcs
 * 0.1.0b7's own functions (tether.manifest). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include <tether/tether.h>

TT_TEST(pin_id_listing_name_and_working_ref)
{
	tt_error err = TT_ERROR_INIT;
	char id[64], name[32];
	char *ref = NULL;
	json_t *identity = json_pack("{s:s}", "path", "/data/repo");
	json_t *state = json_pack("{s:s}", "sha", "0000000000000000000000000000000000000000");
	CHECK_OK(tt_compute_pin_id("git", identity, state, "4e9503fc", id, &err));
	CHECK_STR(id, "4e9503fc.e480353842b2a741");
	CHECK_OK(tt_compute_listing_name("git", identity, state, name, &err));
	CHECK_STR(name, "e480353842b2a74118b6.jsonl");
	CHECK_OK(tt_compute_working_ref_name("abcdef12", "feat/x y", &ref, &err));
	CHECK_STR(ref, "tether.ws.abcdef12.feat-x-y-b483c3");
	free(ref);
	json_decref(identity);
	json_decref(state);
}

TT_TEST(manifest_hash_of_plain_manifests)
{
	tt_error err = TT_ERROR_INIT;
	char hex[65];
	json_t *set = json_object();
	CHECK_OK(tt_manifest_hash(set, hex, &err));
	CHECK_STR(hex, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
	/* Fields outside the hash (captured_at, origin) do not count. */
	json_object_set_new(set, "code",
			    json_pack("{s:s,s:s,s:{s:s},s:{s:s,s:s},s:{s:s},s:{s:s,s:s},s:b,s:s,s:s}", "key", "code",
				      "kind", "git", "locator", "uri", "/data/repo", "policy", "file", "immutable",
				      "pin", "native", "state", "sha", "0000000000000000000000000000000000000000",
				      "pin", "id", "4e9503fc.e480353842b2a741", "ref", "tether.4e9503fc.e480353842b2a741",
				      "recoverable", 1, "captured_at", "2026-01-01T00:00:00+00:00", "origin", "adopted"));
	json_object_set_new(set, "notes",
			    json_pack("{s:s,s:{s:s},s:{s:s,s:s},s:n,s:n,s:b}", "kind", "file", "locator", "uri", "/n.txt",
				      "policy", "file", "mutable", "pin", "record", "state", "pin", "recoverable", 0));
	CHECK_OK(tt_manifest_hash(set, hex, &err));
	CHECK_STR(hex, "88a325a3319a4333bf0e7502a6211fa717861d2ca8130e31453f6a9ef7b3ef5e");
	json_decref(set);
}

TT_TEST(manifest_hash_refuses_malformed_manifests)
{
	tt_error err = TT_ERROR_INIT;
	char hex[65];
	json_t *arr = json_array();
	CHECK_INT(tt_manifest_hash(arr, hex, &err), TT_EUSAGE);
	tt_error_clear(&err);
	json_decref(arr);

	json_t *set = json_pack("{s:{s:s}}", "k", "kind", "git");
	CHECK_INT(tt_manifest_hash(set, hex, &err), TT_EUSAGE);
	CHECK(strstr(err.message, "[k]") != NULL);
	tt_error_clear(&err);
	json_decref(set);

	set = json_pack("{s:{s:s,s:{},s:{s:s,s:s},s:{s:s}}}", "k", "kind", "git", "locator", "policy", "file",
			"immutable", "pin", "native", "pin", "id", "x");
	CHECK_INT(tt_manifest_hash(set, hex, &err), TT_EUSAGE);
	CHECK(strstr(err.message, "'pin'") != NULL);
	tt_error_clear(&err);
	json_decref(set);
}

TT_TEST(export_write_refuses_what_is_not_an_export)
{
	tt_error err = TT_ERROR_INIT;
	size_t n = 7;
	json_t *none = json_object();
	CHECK_INT(tt_export_write(none, "/nonexistent/x.sqlite", "sqlite", false, &n, &err), TT_EUSAGE);
	CHECK(strstr(err.message, "[export]") != NULL && n == 0);
	tt_error_clear(&err);
	/* A table missing is named, and nothing is written. */
	json_t *partial = json_pack("{s:{s:[]}}", "tables", "commits");
	CHECK_INT(tt_export_write(partial, "/nonexistent/x.sqlite", "sqlite", false, NULL, &err), TT_EUSAGE);
	CHECK(strstr(err.message, "missing") != NULL);
	tt_error_clear(&err);
	json_t *report = NULL;
	CHECK_INT(tt_export_publish(partial, "host=127.0.0.1", "tether", true, &report, &err), TT_EUSAGE);
	CHECK(report == NULL);
	tt_error_clear(&err);
	json_decref(none);
	json_decref(partial);
}
