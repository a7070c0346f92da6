/* Unit tests for backends/hashcache: the reader and writer of
 * .tether/cache/file-hashes.json.  The texts below are what Python's
 * json.dumps(table, separators=(",", ":")) writes for the tables named in
 * each case (ASCII escapes, lower-case \u hex, insertion order). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/file/hashcache.h"
#include "harness.h"
#include "util/buf.h"
#include "util/mem.h"

#define HEX_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX_B "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"

/* Load a copy of text into c; returns tt_hcache_load's answer. */
static int load(tt_hcache *c, const char *text)
{
	size_t n = strlen(text);
	char *copy = tt_malloc(n + 1);
	if (!copy)
		return -1;
	memcpy(copy, text, n + 1);
	return tt_hcache_load(c, copy, n);
}

/* The dump of c as a malloc'd string. */
static char *dump(const tt_hcache *c)
{
	tt_buf b = TT_BUF_INIT;
	if (tt_hcache_dump(c, &b) != 0) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

TT_TEST(hashcache_round_trips_canonical_text)
{
	/* {"/d/a.txt": [...], "/d/\u00e9\"q\\\n": [...], "/d/\U0001f600": [...],
	 *  "/d/x": <a float hashed_at>, "/d/y": {"k": [true, null]}} */
	static const char text[] =
		"{\"/d/a.txt\":[6,1700000000123456789,1700000000123456789,42,\"" HEX_A "\",1700000009000000000],"
		"\"/d/\\u00e9\\\"q\\\\\\n\":[0,-5,7,1,\"" HEX_B "\",9],"
		"\"/d/\\ud83d\\ude00\":[1,2,3,4,\"" HEX_A "\",5],"
		"\"/d/x\":[1,2,3,4,\"" HEX_A "\",5.5],"
		"\"/d/y\":{\"k\":[true,null]},"
		"\"/d/lone\\udc00\":[1,2,3,4,\"" HEX_A "\",5]}";
	tt_hcache *c = tt_hcache_new();
	const tt_hc_entry *e;
	char hex[65], *out = NULL;

	CHECK(c);
	CHECK_INT(load(c, text), 0);
	CHECK_INT(tt_hcache_count(c), 6);

	e = tt_hcache_get(c, "/d/a.txt", 8);
	CHECK(e && e->decoded);
	CHECK_INT(e->size, 6);
	CHECK_INT(e->mtime_ns, 1700000000123456789LL);
	CHECK_INT(e->ino, 42);
	CHECK_INT(e->hashed_at, 1700000009000000000LL);
	tt_hc_entry_hex(e, hex);
	CHECK_STR(hex, HEX_A);

	/* Escapes are decoded to the path's UTF-8 bytes. */
	e = tt_hcache_get(c, "/d/\xc3\xa9\"q\\\n", 9);
	CHECK(e && e->decoded && e->mtime_ns == -5);
	e = tt_hcache_get(c, "/d/\xf0\x9f\x98\x80", 7);
	CHECK(e && e->decoded && e->ino == 4);
	/* Values of another shape are kept but never hits. */
	e = tt_hcache_get(c, "/d/x", 4);
	CHECK(e && !e->decoded && e->hashed_at == INT64_MIN);
	CHECK(tt_hcache_get(c, "/d/y", 4) && !tt_hcache_get(c, "/d/y", 4)->decoded);
	CHECK(!tt_hcache_get(c, "/d/nope", 7));

	out = dump(c);
	CHECK(out);
	CHECK_STR(out, text);
	free(out);
	tt_hcache_free(c);
}

TT_TEST(hashcache_reads_spaced_text_and_writes_compact)
{
	static const char text[] =
		" {\n  \"/a\" : [ 1 , 2 ,\t3 , 4 , \"" HEX_A "\" , 5 ] ,\r\n"
		"  \"/b\": [1, 2] }\n";
	tt_hcache *c = tt_hcache_new();
	char *out;

	CHECK(c);
	CHECK_INT(load(c, text), 0);
	CHECK(tt_hcache_get(c, "/a", 2) && tt_hcache_get(c, "/a", 2)->decoded);
	out = dump(c);
	CHECK_STR(out, "{\"/a\":[1,2,3,4,\"" HEX_A "\",5],\"/b\":[1, 2]}");
	free(out);
	tt_hcache_free(c);
}

TT_TEST(hashcache_duplicate_keys_keep_first_place_last_value)
{
	static const char text[] = "{\"/a\":[1,2,3,4,\"" HEX_A "\",5],\"/b\":7,"
				   "\"/a\":[9,2,3,4,\"" HEX_B "\",5]}";
	tt_hcache *c = tt_hcache_new();
	char *out;

	CHECK(c);
	CHECK_INT(load(c, text), 0);
	CHECK_INT(tt_hcache_count(c), 2);
	CHECK_INT(tt_hcache_get(c, "/a", 2)->size, 9);
	out = dump(c);
	CHECK_STR(out, "{\"/a\":[9,2,3,4,\"" HEX_B "\",5],\"/b\":7}");
	free(out);
	tt_hcache_free(c);
}

TT_TEST(hashcache_refuses_what_json_loads_refuses)
{
	static const char *const bad[] = {
		"", "[]", "\"x\"", "{", "{\"a\"}", "{\"a\":}", "{\"a\":[1,2]", "{\"a\":1,}",
		"{\"a\":1} x", "{\"a\":01}", "{\"a\":1.}", "{\"a\":-}", "{\"a\":\"\\x\"}",
		"{\"a\\q\":1}", "{\"a\":\"\t\"}", "{\"\xff\":1}", "{\"a\":\"\xc3\"}",
		"{\"a\":[1,2,3,4,\"" HEX_A "\",5]", "{\"a\":tru}", "{a:1}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		tt_hcache *c = tt_hcache_new();
		int rc;
		CHECK(c);
		/* A good table first: a bad text leaves an empty one. */
		CHECK_INT(load(c, "{\"/z\":1}"), 0);
		rc = load(c, bad[i]);
		CHECK_MSG(rc == 1, "text %zu (%s): got %d", i, bad[i], rc);
		CHECK_INT(tt_hcache_count(c), 0);
		tt_hcache_free(c);
	}
}

TT_TEST(hashcache_accepts_python_extras)
{
	/* json.loads takes NaN and the infinities, big exponents, nested values. */
	static const char text[] = "{\"/n\":NaN,\"/i\":[-Infinity,Infinity],\"/e\":1.5e+300,"
				   "\"/o\":{\"a\":{\"b\":[[],{}]}},\"/s\":\"\\u00e9\",\"/z\":0,\"/m\":-0}";
	tt_hcache *c = tt_hcache_new();
	char *out;
	CHECK(c);
	CHECK_INT(load(c, text), 0);
	CHECK_INT(tt_hcache_count(c), 7);
	out = dump(c);
	CHECK_STR(out, text);
	free(out);
	/* An integer out of int64 range is kept as text, not decoded. */
	CHECK_INT(load(c, "{\"/a\":[99999999999999999999,2,3,4,\"" HEX_A "\",5]}"), 0);
	CHECK(!tt_hcache_get(c, "/a", 2)->decoded);
	/* Upper-case hex is not what we or tether-vcs write: not a hit. */
	CHECK_INT(load(c, "{\"/a\":[1,2,3,4,\"" "ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef0123456789" "\",5]}"), 0);
	CHECK(!tt_hcache_get(c, "/a", 2)->decoded);
	CHECK_INT(load(c, "{}"), 0);
	CHECK_INT(tt_hcache_count(c), 0);
	tt_hcache_free(c);
}

TT_TEST(hashcache_put_and_merge_keep_order)
{
	tt_hcache *a = tt_hcache_new(), *b = tt_hcache_new();
	tt_hc_entry e = { 1, 2, 3, 4, 100, { 0 }, true };
	char *out;

	CHECK(a && b);
	CHECK_INT(load(a, "{\"/x\":[1,2,3,4,\"" HEX_A "\",50],\"/y\":[1,2,3,4,\"" HEX_A "\",50]}"), 0);
	memset(e.sha, 0xff, sizeof e.sha);
	CHECK_INT(tt_hcache_put(a, "/new", 4, &e), 0);
	e.hashed_at = 60;
	CHECK_INT(tt_hcache_put(a, "/x", 2, &e), 0); /* keeps its place */
	out = dump(a);
	CHECK_STR(out, "{\"/x\":[1,2,3,4,\"" HEX_B "\",60],\"/y\":[1,2,3,4,\"" HEX_A "\",50],"
		       "\"/new\":[1,2,3,4,\"" HEX_B "\",100]}");
	free(out);

	/* Merge: newer hashed_at wins, absent keys are appended in src order,
	 * a kept-as-text value is copied (its text outlives src). */
	CHECK_INT(load(b, "{\"/y\":[5,2,3,4,\"" HEX_B "\",70],\"/x\":[5,2,3,4,\"" HEX_A "\",10],"
			  "\"/raw\":[true],\"/b\":[1,2,3,4,\"" HEX_A "\",1]}"), 0);
	CHECK_INT(tt_hcache_merge(a, b), 0);
	tt_hcache_free(b);
	out = dump(a);
	CHECK_STR(out, "{\"/x\":[1,2,3,4,\"" HEX_B "\",60],\"/y\":[5,2,3,4,\"" HEX_B "\",70],"
		       "\"/new\":[1,2,3,4,\"" HEX_B "\",100],\"/raw\":[true],"
		       "\"/b\":[1,2,3,4,\"" HEX_A "\",1]}");
	free(out);
	tt_hcache_free(a);
}

TT_TEST(hashcache_many_entries)
{
	enum { N = 20000 };
	tt_hcache *c = tt_hcache_new();
	tt_buf text = TT_BUF_INIT;
	char *out;

	CHECK(c);
	tt_buf_putc(&text, '{');
	for (int i = 0; i < N; i++)
		tt_buf_printf(&text, "%s\"/data/dir%03d/file-%07d.bin\":[%d,%d,%d,%d,\"" HEX_A "\",%d]",
			      i ? "," : "", i % 997, i, i, i + 1, i + 2, i + 3, i + 4);
	tt_buf_putc(&text, '}');
	CHECK(!text.failed);
	CHECK_INT(load(c, text.ptr), 0);
	CHECK_INT(tt_hcache_count(c), N);
	for (int i = 0; i < N; i += 7) {
		char key[64];
		const tt_hc_entry *e;
		int n = snprintf(key, sizeof key, "/data/dir%03d/file-%07d.bin", i % 997, i);
		e = tt_hcache_get(c, key, (size_t)n);
		CHECK_MSG(e && e->decoded && e->size == i && e->hashed_at == i + 4, "entry %d", i);
	}
	out = dump(c);
	CHECK_STR(out, text.ptr);
	free(out);
	tt_buf_release(&text);
	tt_hcache_free(c);
}
