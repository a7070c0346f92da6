/* Unit tests for core/ids.  Expected values were computed with tether-vcs
 * 0.1.0b7's own functions (tether.manifest). */
#include <stdlib.h>

#include "harness.h"
#include "core/ids.h"

static json_t *obj1(const char *k, json_t *v)
{
	json_t *o = json_object();
	json_object_set_new(o, k, v);
	return o;
}

TT_TEST(pin_id_and_listing_name)
{
	tt_error err = TT_ERROR_INIT;
	char id[TT_PIN_ID_MAX], name[TT_LISTING_NAME_MAX];
	json_t *identity = obj1("path", json_string("/data/repo"));
	json_t *state = obj1("sha", json_string("0000000000000000000000000000000000000000"));

	CHECK_OK(tt_pin_id(id, "4e9503fc", "git", identity, state, &err));
	CHECK_STR(id, "4e9503fc.e480353842b2a741");
	CHECK_OK(tt_listing_name(name, "git", identity, state, &err));
	CHECK_STR(name, "e480353842b2a74118b6.jsonl");
	/* dataset_id[:8], as Python slices it. */
	CHECK_OK(tt_pin_id(id, "0123456789", "git", identity, state, &err));
	CHECK_STR(id, "01234567.e480353842b2a741");
	json_decref(identity);
	json_decref(state);
}

TT_TEST(pin_id_unicode)
{
	tt_error err = TT_ERROR_INIT;
	char id[TT_PIN_ID_MAX], name[TT_LISTING_NAME_MAX];
	json_t *identity = json_pack("{s:s, s:[i, f, n]}", "uri", "s3://b/k", "\xc3\xa9", 1, 0.1);
	json_t *state = json_object();
	CHECK(identity != NULL);
	/* Nine "é": Python keeps eight code points (16 bytes). */
	CHECK_OK(tt_pin_id(id, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9",
			   "file", identity, state, &err));
	CHECK_STR(id, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9.6f3ae0ea2de3a9e4");
	CHECK_OK(tt_listing_name(name, "file", identity, state, &err));
	CHECK_STR(name, "6f3ae0ea2de3a9e4e0ac.jsonl");
	json_decref(identity);
	json_decref(state);
}

TT_TEST(pin_id_errors)
{
	tt_error err = TT_ERROR_INIT;
	char id[TT_PIN_ID_MAX];
	json_t *o = json_object();
	CHECK(tt_pin_id(id, "4e9503fc", NULL, o, o, &err) == TT_EUSAGE);
	tt_error_clear(&err);
	CHECK(tt_pin_id(id, "4e9503fc", "git", NULL, o, &err) == TT_EUSAGE);
	tt_error_clear(&err);
	CHECK(tt_pin_id(id, "4e9503fc", "g\xff", o, o, &err) == TT_EPARSE);
	tt_error_clear(&err);
	CHECK(tt_pin_id(id, "\xff", "git", o, o, &err) == TT_EUSAGE);
	tt_error_clear(&err);
	json_decref(o);
}

TT_TEST(manifest_hash)
{
	tt_error err = TT_ERROR_INIT;
	char hex[65];
	/* Given out of order: the hash sorts by key. */
	tt_keyed_canon e[2] = {
		{ "b", "{\"key\":\"b\",\"kind\":\"git\",\"locator\":{\"path\":\"/x\"},\"pin\":null,"
		       "\"policy\":{\"file\":\"immutable\",\"pin\":\"native\"},\"recoverable\":true,"
		       "\"state\":null}" },
		{ "a", "{\"key\":\"a\",\"kind\":\"file\",\"locator\":{\"uri\":\"s3://b/k\"},"
		       "\"pin\":{\"id\":\"4e9503fc.0123456789abcdef\",\"ref\":"
		       "\"tether.4e9503fc.0123456789abcdef\"},\"policy\":{\"file\":\"immutable\","
		       "\"pin\":\"native\"},\"recoverable\":true,\"state\":{\"etag\":\"x\"}}" },
	};
	CHECK_OK(tt_manifest_hash_of(hex, e, 2, &err));
	CHECK_STR(hex, "9ce39ad42acab3e33bcdd68870d651319332c6143661bf9444c8d636f21c3d9f");
	CHECK_OK(tt_manifest_hash_of(hex, NULL, 0, &err));
	CHECK_STR(hex, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
}

TT_TEST(manifest_hash_errors)
{
	tt_error err = TT_ERROR_INIT;
	char hex[65];
	tt_keyed_canon dup[2] = { { "a", "{}" }, { "a", "{}" } };
	CHECK_INT(tt_manifest_hash_of(hex, dup, 2, &err), TT_EUSAGE);
	CHECK_STR(err.key, "a");
	tt_error_clear(&err);
	tt_keyed_canon bad[1] = { { "k", "\"\xc3\"" } };
	CHECK_INT(tt_manifest_hash_of(hex, bad, 1, &err), TT_EPARSE);
	tt_error_clear(&err);
	tt_keyed_canon nokey[1] = { { NULL, "{}" } };
	CHECK_INT(tt_manifest_hash_of(hex, nokey, 1, &err), TT_EUSAGE);
	tt_error_clear(&err);
}

TT_TEST(dataset_ids)
{
	tt_error err = TT_ERROR_INIT;
	char a[TT_DATASET_ID_LEN + 1], b[TT_DATASET_ID_LEN + 1];
	CHECK(tt_is_dataset_id("4e9503fc"));
	CHECK(tt_is_dataset_id("00000000"));
	CHECK(!tt_is_dataset_id("4E9503FC"));
	CHECK(!tt_is_dataset_id("4e9503f"));
	CHECK(!tt_is_dataset_id("4e9503fc0"));
	CHECK(!tt_is_dataset_id("4e9503fg"));
	CHECK(!tt_is_dataset_id(""));
	CHECK(!tt_is_dataset_id(NULL));
	CHECK_OK(tt_new_dataset_id(a, &err));
	CHECK_OK(tt_new_dataset_id(b, &err));
	CHECK(tt_is_dataset_id(a));
	CHECK(tt_is_dataset_id(b));
	CHECK(strcmp(a, b) != 0);  /* 1 in 2^32 */
}

TT_TEST(random_hex_lengths)
{
	tt_error err = TT_ERROR_INIT;
	char buf[201];
	size_t lens[] = { 0, 1, 12, 32, 63, 64, 65, 200 };
	for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
		memset(buf, 'Z', sizeof buf);
		CHECK_OK(tt_random_hex(buf, lens[i], &err));
		CHECK_INT(strlen(buf), lens[i]);
		CHECK(strspn(buf, "0123456789abcdef") == lens[i]);
	}
}

TT_TEST(ref_for_pin)
{
	char ref[64];
	CHECK_INT(tt_ref_for_pin(ref, sizeof ref, "4e9503fc.e480353842b2a741"), 0);
	CHECK_STR(ref, "tether.4e9503fc.e480353842b2a741");
	CHECK_INT(tt_ref_for_pin(ref, 9, "x"), 0);
	CHECK_STR(ref, "tether.x");
	CHECK_INT(tt_ref_for_pin(ref, 9, "xy"), TT_ELIMIT);
	CHECK_STR(ref, "");
}

TT_TEST(pin_dataset)
{
	char ds[TT_DATASET_ID_LEN + 1];
	CHECK(tt_pin_dataset("4e9503fc.e480353842b2a741", ds));
	CHECK_STR(ds, "4e9503fc");
	CHECK(tt_pin_dataset("4e9503fc.x", NULL));
	CHECK(!tt_pin_dataset("4e9503fc.", ds));
	CHECK(!tt_pin_dataset("4e9503fc", ds));
	CHECK(!tt_pin_dataset("4e9503fc.a.b", ds));
	CHECK(!tt_pin_dataset("4E9503FC.ab", ds));
	CHECK(!tt_pin_dataset("4e9503f.ab", ds));
	CHECK(!tt_pin_dataset(".ab", ds));
	CHECK(!tt_pin_dataset(NULL, ds));
}

TT_TEST(pin_id_of_ref)
{
	char id[TT_PIN_ID_MAX];
	CHECK(tt_pin_id_of_ref("tether.4e9503fc.0123456789abcdef", id));
	CHECK_STR(id, "4e9503fc.0123456789abcdef");
	CHECK(tt_pin_id_of_ref("tether.4e9503fc.0123456789abcdef.2", id));
	CHECK_STR(id, "4e9503fc.0123456789abcdef");
	CHECK(tt_pin_id_of_ref("tether.4e9503fc.0123456789abcdef.1000", id));
	CHECK_STR(id, "4e9503fc.0123456789abcdef");
	/* str.isdigit(): superscript two and MATHEMATICAL DOUBLE-STRUCK ZERO count,
	 * VULGAR FRACTION ONE HALF does not. */
	CHECK(tt_pin_id_of_ref("tether.4e9503fc.0123456789abcdef.\xc2\xb2", id));
	CHECK_STR(id, "4e9503fc.0123456789abcdef");
	CHECK(tt_pin_id_of_ref("tether.4e9503fc.0123456789abcdef.\xf0\x9d\x9f\x98", id));
	CHECK(!tt_pin_id_of_ref("tether.4e9503fc.0123456789abcdef.\xc2\xbd", id));
	CHECK(!tt_pin_id_of_ref("tether.4e9503fc.0123456789abcdef.", id));
	CHECK(!tt_pin_id_of_ref("tether.4e9503fc.0123456789abcdef.x", id));
	CHECK(!tt_pin_id_of_ref("tether.4e9503fc.0123456789abcdef.1.2", id));
	CHECK(!tt_pin_id_of_ref("tether.ws.4e9503fc.main", id));
	CHECK(!tt_pin_id_of_ref("tether.owner.4e9503fc", id));
	CHECK(!tt_pin_id_of_ref("tether.4e9503fc..2", id));
	CHECK(!tt_pin_id_of_ref("tether.4e9503fc", id));
	CHECK(!tt_pin_id_of_ref("refs/tags/tether.4e9503fc.0123456789abcdef", id));
	CHECK(!tt_pin_id_of_ref("tether.", id));
	CHECK(!tt_pin_id_of_ref(NULL, id));
	/* Not a generation but still a pin id: "4e9503fc.5" */
	CHECK(tt_pin_id_of_ref("tether.4e9503fc.5", id));
	CHECK_STR(id, "4e9503fc.5");
}

TT_TEST(pin_id_span_long)
{
	char ref[200], id[TT_PIN_ID_MAX];
	size_t off, len;
	memcpy(ref, "tether.4e9503fc.", 16);
	memset(ref + 16, 'a', 100);
	memcpy(ref + 116, ".7", 3);
	CHECK(tt_pin_id_span(ref, &off, &len));
	CHECK_INT(off, 7);
	CHECK_INT(len, 109);
	CHECK(!tt_pin_id_of_ref(ref, id));  /* does not fit */
}

static const struct {
	const char *bookmark, *slug;
} slugs[] = {
	{ "main", "main" },
	{ "ok_name-1", "ok_name-1" },
	{ "feat/x", "feat-x-cdd300" },
	{ "feat.x", "feat-x-463316" },
	{ "", "" },
	{ "///", "bm-b9e4d4" },
	{ "\xc3\xa9", "bm-c96d43" },
	{ "-a-", "a-39ff29" },
	{ "a b", "a-b-feef06" },
};

TT_TEST(bookmark_slugs)
{
	tt_error err = TT_ERROR_INIT;
	for (size_t i = 0; i < sizeof slugs / sizeof slugs[0]; i++) {
		char *s = NULL;
		CHECK_OK(tt_bookmark_slug(&s, slugs[i].bookmark, &err));
		int same = strcmp(s, slugs[i].slug) == 0;
		CHECK_MSG(same, "slug(%s) = %s, want %s", slugs[i].bookmark, s, slugs[i].slug);
		free(s);
	}
	char *s = NULL;
	CHECK(tt_bookmark_slug(&s, "x\xff", &err) == TT_EPARSE);
	tt_error_clear(&err);
	CHECK(tt_bookmark_slug(&s, NULL, &err) == TT_EUSAGE);
	tt_error_clear(&err);
}

TT_TEST(working_ref_names)
{
	tt_error err = TT_ERROR_INIT;
	char *r = NULL;
	CHECK_OK(tt_working_ref_name(&r, "4e9503fc", "relabel", &err));
	CHECK_STR(r, "tether.ws.4e9503fc.relabel");
	free(r);
	CHECK_OK(tt_working_ref_name(&r, "4e9503fc", "feat/x", &err));
	CHECK_STR(r, "tether.ws.4e9503fc.feat-x-cdd300");
	free(r);
	CHECK_OK(tt_working_ref_name(&r, "4e9503fc", "", &err));
	CHECK_STR(r, "tether.ws.4e9503fc.");
	free(r);
	CHECK_OK(tt_working_ref_name(&r, "ABCDEFGHIJ", "feat/\xc3\xbc x", &err));
	CHECK_STR(r, "tether.ws.ABCDEFGH.feat-x-94578f");
	free(r);
}
