/* Unit tests for util/json: byte-compatibility with Python's json.dumps
 * (expected strings were produced with CPython's json module) and the
 * jansson-backed parser. */
#include <limits.h>
#include <stdlib.h>

#include "harness.h"
#include "util/json.h"

static const tt_json_style PY_DEFAULT = { -1, false, true, false };

/* Dump v (stolen) in style st into a static buffer; "<rc N>" on failure. */
static const char *dump(json_t *v, tt_json_style st)
{
	static char out[4096];
	tt_buf b = TT_BUF_INIT;
	int rc = tt_json_dump(&b, v, st);
	if (rc)
		snprintf(out, sizeof out, "<rc %d>", rc);
	else
		snprintf(out, sizeof out, "%s", b.ptr);
	tt_buf_release(&b);
	json_decref(v);
	return out;
}

static const char *canon(json_t *v) { return dump(v, TT_JSON_CANONICAL); }

TT_TEST(float_repr_like_python)
{
	CHECK_STR(canon(json_real(0.1)), "0.1");
	CHECK_STR(canon(json_real(1e16)), "1e+16");
	CHECK_STR(canon(json_real(1e15)), "1000000000000000.0");
	CHECK_STR(canon(json_real(1e-05)), "1e-05");
	CHECK_STR(canon(json_real(1e-7)), "1e-07");
	CHECK_STR(canon(json_real(123456789012345678.0)), "1.2345678901234568e+17");
	CHECK_STR(canon(json_real(5e-324)), "5e-324");
	CHECK_STR(canon(json_real(1.7976931348623157e+308)), "1.7976931348623157e+308");
	CHECK_STR(canon(json_real(-0.0)), "-0.0");
	CHECK_STR(canon(json_real(0.0)), "0.0");
	CHECK_STR(canon(json_real(100.0)), "100.0");
	CHECK_STR(canon(json_real(0.0001)), "0.0001");
	CHECK_STR(canon(json_real(1e22)), "1e+22");
	CHECK_STR(canon(json_real(2.5e-5)), "2.5e-05");
	CHECK_STR(canon(json_real(-1.5)), "-1.5");
	CHECK_STR(canon(json_real(123456789.123)), "123456789.123");
}

TT_TEST(integers_and_literals)
{
	CHECK_STR(canon(json_integer(0)), "0");
	CHECK_STR(canon(json_integer(-42)), "-42");
	CHECK_STR(canon(json_integer(LLONG_MAX)), "9223372036854775807");
	CHECK_STR(canon(json_integer(LLONG_MIN)), "-9223372036854775808");
	CHECK_STR(canon(json_true()), "true");
	CHECK_STR(canon(json_false()), "false");
	CHECK_STR(canon(json_null()), "null");
}

/* All escapes in one string: ensure_ascii=False keeps DEL, U+2028 and
 * non-ASCII raw; ensure_ascii=True escapes them (surrogate pair for the
 * emoji), always in lower-case hex. */
static const char escape_input[] =
	"q\"b\\s/\n\r\t\b\f\0\x01\x1b\x1f\x7f \xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80";

TT_TEST(string_escapes_canonical)
{
	json_t *s = json_stringn(escape_input, sizeof escape_input - 1);
	CHECK(s != NULL);
	CHECK_STR(canon(s), "\"q\\\"b\\\\s/\\n\\r\\t\\b\\f\\u0000\\u0001\\u001b\\u001f\x7f "
			    "\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80\"");
}

TT_TEST(string_escapes_ascii)
{
	json_t *s = json_stringn(escape_input, sizeof escape_input - 1);
	CHECK(s != NULL);
	CHECK_STR(dump(s, TT_JSON_PRETTY),
		  "\"q\\\"b\\\\s/\\n\\r\\t\\b\\f\\u0000\\u0001\\u001b\\u001f\\u007f "
		  "\\u00e9\\u2028\\ud83d\\ude00\"");
}

TT_TEST(dump_string_direct)
{
	tt_buf b = TT_BUF_INIT;
	CHECK_INT(tt_json_dump_string(&b, "", 0, false), 0);
	CHECK_STR(b.ptr, "\"\"");
	tt_buf_reset(&b);
	CHECK_INT(tt_json_dump_string(&b, "\xef\xbf\xbf", 3, true), 0);
	CHECK_STR(b.ptr, "\"\\uffff\"");
	tt_buf_reset(&b);
	CHECK_INT(tt_json_dump_string(&b, "\xf4\x8f\xbf\xbf", 4, true), 0);
	CHECK_STR(b.ptr, "\"\\udbff\\udfff\"");
	tt_buf_release(&b);
}

TT_TEST(invalid_utf8_refused)
{
	static const char *bad[] = {
		"\xff", "\xc3", "\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80",
		"\xe0\x80\xaf", "a\x80",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		tt_buf b = TT_BUF_INIT;
		CHECK(!tt_utf8_valid(bad[i], strlen(bad[i])));
		int rc = tt_json_dump_string(&b, bad[i], strlen(bad[i]), false);
		tt_buf_release(&b);
		CHECK_INT(rc, TT_EPARSE);
		json_t *s = json_stringn_nocheck(bad[i], strlen(bad[i]));
		CHECK_STR(canon(s), "<rc -14>");
	}
	CHECK(tt_utf8_valid("\xf0\x9f\x98\x80 \xc3\xa9", 7));
	CHECK(tt_utf8_valid("", 0));
}

/* sort_keys orders by code point: U+FFFF before U+1F600 (UTF-16 order would
 * put the surrogate pair first), and a key that is a prefix sorts first. */
static json_t *awkward_keys(void)
{
	json_t *o = json_object();
	json_object_set_new(o, "\xef\xbf\xbf", json_integer(1));
	json_object_set_new(o, "\xf0\x9f\x98\x80", json_integer(2));
	json_object_set_new(o, "a", json_integer(3));
	json_object_set_new(o, "", json_integer(4));
	json_object_setn_new(o, "a\0", 2, json_integer(5));
	json_object_set_new(o, "Z", json_integer(6));
	json_object_set_new(o, "\xc3\xa9", json_integer(7));
	return o;
}

/* (json_deep_copy is not used: jansson copies keys as C strings and would
 * fold "a\0" into "a".) */
TT_TEST(sort_keys_by_code_point)
{
	json_t *o = awkward_keys(), *o2 = awkward_keys();
	CHECK_STR(canon(o), "{\"\":4,\"Z\":6,\"a\":3,\"a\\u0000\":5,\"\xc3\xa9\":7,"
			    "\"\xef\xbf\xbf\":1,\"\xf0\x9f\x98\x80\":2}");
	tt_json_style st = TT_JSON_CANONICAL;
	st.ensure_ascii = true;
	CHECK_STR(dump(o2, st), "{\"\":4,\"Z\":6,\"a\":3,\"a\\u0000\":5,\"\\u00e9\":7,"
				"\"\\uffff\":1,\"\\ud83d\\ude00\":2}");
}

static json_t *sample(void)
{
	/* {"b": [1, 2, {"x": null}], "a": {}, "c": []} in insertion order */
	json_t *o = json_object();
	json_t *arr = json_array();
	json_t *inner = json_object();
	json_object_set_new(inner, "x", json_null());
	json_array_append_new(arr, json_integer(1));
	json_array_append_new(arr, json_integer(2));
	json_array_append_new(arr, inner);
	json_object_set_new(o, "b", arr);
	json_object_set_new(o, "a", json_object());
	json_object_set_new(o, "c", json_array());
	return o;
}

TT_TEST(pretty_like_indent_2)
{
	CHECK_STR(dump(sample(), TT_JSON_PRETTY),
		  "{\n"
		  "  \"b\": [\n"
		  "    1,\n"
		  "    2,\n"
		  "    {\n"
		  "      \"x\": null\n"
		  "    }\n"
		  "  ],\n"
		  "  \"a\": {},\n"
		  "  \"c\": []\n"
		  "}");
	CHECK_STR(dump(json_object(), TT_JSON_PRETTY), "{}");
	CHECK_STR(dump(json_array(), TT_JSON_PRETTY), "[]");
	CHECK_STR(dump(json_string("x"), TT_JSON_PRETTY), "\"x\"");
}

TT_TEST(other_styles)
{
	CHECK_STR(canon(sample()), "{\"a\":{},\"b\":[1,2,{\"x\":null}],\"c\":[]}");
	CHECK_STR(dump(sample(), PY_DEFAULT), "{\"b\": [1, 2, {\"x\": null}], \"a\": {}, \"c\": []}");
	tt_json_style zero = { 0, false, true, false };
	CHECK_STR(dump(sample(), zero), "{\n\"b\": [\n1,\n2,\n{\n\"x\": null\n}\n],\n\"a\": {},\n\"c\": []\n}");
}

TT_TEST(canonical_appends)
{
	tt_buf b = TT_BUF_INIT;
	json_t *v = json_pack("[i,s]", 1, "x");
	tt_buf_puts(&b, "pre:");
	CHECK_INT(tt_json_canonical(&b, v), 0);
	CHECK_STR(b.ptr, "pre:[1,\"x\"]");
	json_decref(v);
	tt_buf_release(&b);
}

TT_TEST(buffer_limit_is_reported)
{
	tt_buf b;
	tt_buf_init(&b, 8);
	json_t *v = json_string("a long string that does not fit");
	CHECK_INT(tt_json_canonical(&b, v), TT_ELIMIT);
	json_decref(v);
	tt_buf_release(&b);
}

TT_TEST(depth_limit)
{
	json_t *root = json_array(), *cur = root;
	for (int i = 0; i < TT_JSON_MAX_DEPTH + 10; i++) {
		json_t *next = json_array();
		json_array_append_new(cur, next);
		cur = next;
	}
	tt_buf b = TT_BUF_INIT;
	CHECK_INT(tt_json_canonical(&b, root), TT_ELIMIT);
	tt_buf_release(&b);
	json_decref(root);

	tt_buf c = TT_BUF_INIT;
	CHECK_INT(tt_json_canonical(&c, NULL), TT_EUSAGE);
	tt_buf_release(&c);
}

TT_TEST(parse_roundtrip)
{
	tt_error err = TT_ERROR_INIT;
	const char *text = "{\"b\": [1, 2.50, -0.0, 1E16, -0], \"a\": \"x\\u0000y\", \"\\u00e9\": true}";
	json_t *v = tt_json_parse(text, strlen(text), "t.json", &err);
	CHECK(v != NULL);
	json_t *a = json_object_get(v, "a");
	CHECK(json_is_string(a));
	CHECK_INT(json_string_length(a), 3);
	CHECK_STR(canon(v), "{\"a\":\"x\\u0000y\",\"b\":[1,2.5,-0.0,1e+16,0],\"\xc3\xa9\":true}");
}

TT_TEST(parse_scalars_and_duplicates)
{
	tt_error err = TT_ERROR_INIT;
	json_t *v = tt_json_parse(" 42 ", 4, "n", &err);
	CHECK(v != NULL && json_is_integer(v));
	json_decref(v);
	v = tt_json_parse("\"s\"", 3, "s", &err);
	CHECK(v != NULL && json_is_string(v));
	json_decref(v);
	/* Last value wins, in the first key's place (a Python dict). */
	const char *dup = "{\"k\":1,\"j\":2,\"k\":3}";
	v = tt_json_parse(dup, strlen(dup), "d", &err);
	CHECK(v != NULL);
	CHECK_STR(dump(v, PY_DEFAULT), "{\"k\": 3, \"j\": 2}");
}

TT_TEST(parse_errors)
{
	static const char *bad[] = {
		"", "{", "[1,]", "{\"a\":1} x", "NaN", "Infinity", "-Infinity",
		"99999999999999999999", "\"\\ud800\"", "1e400", "'x'",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		tt_error err = TT_ERROR_INIT;
		json_t *v = tt_json_parse(bad[i], strlen(bad[i]), "in.json", &err);
		CHECK_MSG(v == NULL, "accepted %s", bad[i]);
		CHECK_INT(err.code, TT_EPARSE);
		CHECK_MSG(strncmp(err.message, "in.json:", 8) == 0, "message %s", err.message);
		tt_error_clear(&err);
	}
	tt_error err = TT_ERROR_INIT;
	json_t *v = tt_json_parse("[1,\n  x]", 8, "f", &err);
	CHECK(v == NULL);
	CHECK_MSG(strncmp(err.message, "f:2:", 4) == 0, "message %s", err.message);
	tt_error_clear(&err);
}

TT_TEST(has_string_in_array_items_and_object_values)
{
	json_t *a = json_pack("[s,i,s]", "x.2", 3, "y");
	json_t *o = json_pack("{s:s,s:n}", "k", "x.2", "n");
	CHECK(tt_json_has_string(a, "x.2") && tt_json_has_string(a, "y"));
	CHECK(!tt_json_has_string(a, "x") && !tt_json_has_string(a, "3"));
	CHECK(tt_json_has_string(o, "x.2") && !tt_json_has_string(o, "k"));
	CHECK(!tt_json_has_string(NULL, "x.2") && !tt_json_has_string(json_null(), "x.2"));
	json_decref(a);
	json_decref(o);
}
