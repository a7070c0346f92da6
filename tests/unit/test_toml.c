/* Unit tests for util/toml: every TOML 1.0 construct, the error messages
 * and their positions, the tomlkit-compatible writer, JSON conversions. */
#include <math.h>
#include <stdlib.h>

#include <jansson.h>

#include "harness.h"
#include "util/buf.h"
#include "util/mem.h"
#include "util/toml.h"

/* Parse text; NULL (and the error in *err) on failure. */
static tt_toml_value *parse(const char *text, tt_error *err)
{
	tt_toml_value *doc = NULL;
	if (tt_toml_parse(&doc, text, strlen(text), NULL, err) != 0)
		return NULL;
	return doc;
}

/* The error message a parse of text (len bytes) gives, malloc'd; NULL when
 * it parses (or fails with another code than TT_EPARSE). */
static char *parse_error_n(const char *text, size_t len, const char *file)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = NULL;
	char *msg = NULL;
	if (tt_toml_parse(&doc, text, len, file, &err) == TT_EPARSE && !doc)
		msg = tt_strdup(err.message);
	tt_toml_free(doc);
	tt_error_clear(&err);
	return msg;
}

static char *parse_error(const char *text)
{
	return parse_error_n(text, strlen(text), NULL);
}

/* tt_toml_write output (malloc'd) or NULL. */
static char *write_doc(const tt_toml_value *doc)
{
	tt_buf out = TT_BUF_INIT;
	tt_error err = TT_ERROR_INIT;
	if (tt_toml_write(&out, doc, &err) != 0) {
		tt_error_clear(&err);
		tt_buf_release(&out);
		return NULL;
	}
	return tt_buf_detach(&out);
}

/* JSON text -> tt_toml_from_json -> tt_toml_write. */
static char *write_json(const char *json)
{
	json_error_t jerr;
	json_t *j = json_loads(json, JSON_ALLOW_NUL, &jerr);
	if (!j)
		return NULL;
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = tt_toml_from_json(j, &err);
	json_decref(j);
	char *out = doc ? write_doc(doc) : NULL;
	tt_toml_free(doc);
	tt_error_clear(&err);
	return out;
}

/* Parse, write, parse again: the text written, or NULL when anything
 * failed or the second tree differs from the first. */
static char *round_trip(const char *text)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *a = parse(text, &err), *b = NULL;
	char *out = a ? write_doc(a) : NULL;
	if (out)
		b = parse(out, &err);
	if (!b || !tt_toml_equal(a, b)) {
		free(out);
		out = NULL;
	}
	tt_toml_free(a);
	tt_toml_free(b);
	tt_error_clear(&err);
	return out;
}

/* Follow a path of keys (NULL-terminated) from t. */
static const tt_toml_value *at(const tt_toml_value *t, const char *k1, const char *k2)
{
	const tt_toml_value *v = tt_toml_table_get(t, k1);
	return k2 && v ? tt_toml_table_get(v, k2) : v;
}

#define CHECK_PARSE_ERROR(text, want)                                        \
	do {                                                                 \
		char *m_ = parse_error(text);                                \
		CHECK_MSG(m_ != NULL, "%s: parsed but should not", #text);  \
		int same_ = strcmp(m_, (want)) == 0;                         \
		if (!same_)                                                  \
			tt_test_fail(__FILE__, __LINE__, "got \"%s\"", m_); \
		free(m_);                                                    \
		if (!same_)                                                  \
			return;                                              \
	} while (0)

TT_TEST(test_toml_strings)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = parse(
		"basic = \"tab\\there \\\"q\\\" \\\\ \\b\\f\\n\\r \\u00e9 \\U0001F600\"\n"
		"literal = 'C:\\Users\\x'\n"
		"ml = \"\"\"\nfirst\n  second\"\"\"\n"
		"cont = \"\"\"one \\\n     two \\  \n\n three\"\"\"\n"
		"quotes = \"\"\"a \"\" b\"\"\"\"\"\n"
		"mll = '''\nraw \\n ''line'''''\n"
		"nul = \"a\\u0000b\"\n"
		"empty = ''\n"
		"tab = \"a\tb\"\n",
		&err);
	CHECK_MSG(doc, "%s", err.message);
	size_t n;
	CHECK_STR(tt_toml_string(at(doc, "basic", NULL), NULL),
		  "tab\there \"q\" \\ \b\f\n\r \xC3\xA9 \xF0\x9F\x98\x80");
	CHECK_STR(tt_toml_string(at(doc, "literal", NULL), NULL), "C:\\Users\\x");
	CHECK_STR(tt_toml_string(at(doc, "ml", NULL), NULL), "first\n  second");
	CHECK_STR(tt_toml_string(at(doc, "cont", NULL), NULL), "one two three");
	CHECK_STR(tt_toml_string(at(doc, "quotes", NULL), NULL), "a \"\" b\"\"");
	CHECK_STR(tt_toml_string(at(doc, "mll", NULL), NULL), "raw \\n ''line''");
	const char *s = tt_toml_string(at(doc, "nul", NULL), &n);
	CHECK_INT(n, 3);
	CHECK(memcmp(s, "a\0b", 3) == 0);
	CHECK_STR(tt_toml_string(at(doc, "empty", NULL), NULL), "");
	CHECK_STR(tt_toml_string(at(doc, "tab", NULL), NULL), "a\tb");
	tt_toml_free(doc);

	/* CRLF: a line ending; inside multi-line strings it becomes LF. */
	doc = parse("a = \"\"\"x\r\ny\"\"\"\r\nb = 1\r\n", &err);
	CHECK_MSG(doc, "%s", err.message);
	CHECK_STR(tt_toml_string(at(doc, "a", NULL), NULL), "x\ny");
	CHECK_INT(tt_toml_integer(at(doc, "b", NULL)), 1);
	tt_toml_free(doc);
	tt_error_clear(&err);
}

TT_TEST(test_toml_string_errors)
{
	CHECK_PARSE_ERROR("a = \"abc\nb = 1\n", "<input>:1:5: unterminated string");
	CHECK_PARSE_ERROR("a = \"\"\"abc", "<input>:1:5: unterminated multi-line string");
	CHECK_PARSE_ERROR("a = \"\\x41\"", "<input>:1:6: invalid escape sequence \\x");
	CHECK_PARSE_ERROR("a = \"\\ud800\"", "<input>:1:6: \\uD800 is not a Unicode scalar value");
	CHECK_PARSE_ERROR("a = \"\\U00110000\"",
			  "<input>:1:6: \\U00110000 is not a Unicode scalar value");
	CHECK_PARSE_ERROR("a = \"\\u12\"", "<input>:1:6: \\u needs 4 hex digits");
	CHECK_PARSE_ERROR("a = \"\"\"x\"\"\"\"\"\"", "<input>:1:14: expected the end of the line, found '\"'");
	CHECK_PARSE_ERROR("\"\"\"k\"\"\" = 1", "<input>:1:3: expected '=' after a key, found '\"'");
}

TT_TEST(test_toml_integers)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = parse("a = 42\nb = +17\nc = -0\nd = 1_000_000\n"
				"e = 0xDEAD_beef\nf = 0o755\ng = 0b1101\n"
				"max = 9223372036854775807\nmin = -9223372036854775808\n"
				"hmax = 0x7FFFFFFFFFFFFFFF\n",
				&err);
	CHECK_MSG(doc, "%s", err.message);
	CHECK_INT(tt_toml_integer(at(doc, "a", NULL)), 42);
	CHECK_INT(tt_toml_integer(at(doc, "b", NULL)), 17);
	CHECK_INT(tt_toml_integer(at(doc, "c", NULL)), 0);
	CHECK_INT(tt_toml_integer(at(doc, "d", NULL)), 1000000);
	CHECK_INT(tt_toml_integer(at(doc, "e", NULL)), 0xDEADBEEF);
	CHECK_INT(tt_toml_integer(at(doc, "f", NULL)), 0755);
	CHECK_INT(tt_toml_integer(at(doc, "g", NULL)), 13);
	CHECK(tt_toml_integer(at(doc, "max", NULL)) == INT64_MAX);
	CHECK(tt_toml_integer(at(doc, "min", NULL)) == INT64_MIN);
	CHECK(tt_toml_integer(at(doc, "hmax", NULL)) == INT64_MAX);
	CHECK(tt_toml_type_of(at(doc, "a", NULL)) == TT_TOML_INTEGER);
	tt_toml_free(doc);

	CHECK_PARSE_ERROR("a = 9223372036854775808",
			  "<input>:1:5: integer '9223372036854775808' does not fit in 64 bits");
	CHECK_PARSE_ERROR("a = -9223372036854775809",
			  "<input>:1:5: integer '-9223372036854775809' does not fit in 64 bits");
	CHECK_PARSE_ERROR("a = 0x8000000000000000",
			  "<input>:1:5: integer '0x8000000000000000' does not fit in 64 bits");
	CHECK_PARSE_ERROR("a = 012", "<input>:1:5: leading zeros are not allowed in '012'");
	CHECK_PARSE_ERROR("a = 1__2", "<input>:1:5: invalid value '1__2'");
	CHECK_PARSE_ERROR("a = 1_", "<input>:1:5: invalid value '1_'");
	CHECK_PARSE_ERROR("a = _1", "<input>:1:5: invalid value '_1'");
	CHECK_PARSE_ERROR("a = +0x1", "<input>:1:5: invalid value '+0x1'");
	CHECK_PARSE_ERROR("a = 0xG", "<input>:1:5: invalid hexadecimal integer '0xG'");
	CHECK_PARSE_ERROR("a = 0b102", "<input>:1:5: invalid binary integer '0b102'");
	tt_error_clear(&err);
}

TT_TEST(test_toml_floats)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = parse("a = 3.14\nb = -0.0\nc = 5e+22\nd = 1e06\ne = 6.626e-34\n"
				"f = 9_224_617.445_991\ng = inf\nh = -inf\ni = nan\nj = +nan\n"
				"k = 0e0\nl = 1E2\n",
				&err);
	CHECK_MSG(doc, "%s", err.message);
	CHECK(tt_toml_float(at(doc, "a", NULL)) == 3.14);
	CHECK(tt_toml_float(at(doc, "b", NULL)) == 0.0 && signbit(tt_toml_float(at(doc, "b", NULL))));
	CHECK(tt_toml_float(at(doc, "c", NULL)) == 5e22);
	CHECK(tt_toml_float(at(doc, "d", NULL)) == 1e6);
	CHECK(tt_toml_float(at(doc, "e", NULL)) == 6.626e-34);
	CHECK(tt_toml_float(at(doc, "f", NULL)) == 9224617.445991);
	CHECK(isinf(tt_toml_float(at(doc, "g", NULL))) && tt_toml_float(at(doc, "g", NULL)) > 0);
	CHECK(isinf(tt_toml_float(at(doc, "h", NULL))) && tt_toml_float(at(doc, "h", NULL)) < 0);
	CHECK(isnan(tt_toml_float(at(doc, "i", NULL))));
	CHECK(isnan(tt_toml_float(at(doc, "j", NULL))));
	CHECK(tt_toml_float(at(doc, "k", NULL)) == 0.0);
	CHECK(tt_toml_float(at(doc, "l", NULL)) == 100.0);
	CHECK(tt_toml_type_of(at(doc, "k", NULL)) == TT_TOML_FLOAT);
	tt_toml_free(doc);

	CHECK_PARSE_ERROR("a = 1.", "<input>:1:5: invalid value '1.'");
	CHECK_PARSE_ERROR("a = .5", "<input>:1:5: invalid value '.5'");
	CHECK_PARSE_ERROR("a = 1.e5", "<input>:1:5: invalid value '1.e5'");
	CHECK_PARSE_ERROR("a = 1e", "<input>:1:5: invalid value '1e'");
	CHECK_PARSE_ERROR("a = 03.14", "<input>:1:5: leading zeros are not allowed in '03.14'");
	CHECK_PARSE_ERROR("a = infinity", "<input>:1:5: invalid value 'infinity'");
	CHECK_PARSE_ERROR("a = 1.5_", "<input>:1:5: invalid value '1.5_'");
	tt_error_clear(&err);
}

TT_TEST(test_toml_booleans_and_datetimes)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = parse("t = true\nf = false\n"
				"odt1 = 1979-05-27T07:32:00Z\n"
				"odt2 = 1979-05-27 00:32:00.999999-07:00\n"
				"odt3 = 1979-05-27t07:32:00z\n"
				"ldt = 1979-05-27T07:32:00.5\n"
				"ld = 2000-02-29\n"
				"lt = 23:59:59.25\n"
				"arr = [1979-05-27 07:32:00, 1979-05-27]\n",
				&err);
	CHECK_MSG(doc, "%s", err.message);
	CHECK(tt_toml_boolean(at(doc, "t", NULL)) == true);
	CHECK(tt_toml_boolean(at(doc, "f", NULL)) == false);
	CHECK(tt_toml_type_of(at(doc, "odt1", NULL)) == TT_TOML_DATETIME);
	CHECK_STR(tt_toml_datetime(at(doc, "odt1", NULL)), "1979-05-27T07:32:00Z");
	CHECK_STR(tt_toml_datetime(at(doc, "odt2", NULL)), "1979-05-27T00:32:00.999999-07:00");
	CHECK_STR(tt_toml_datetime(at(doc, "odt3", NULL)), "1979-05-27T07:32:00Z");
	CHECK(tt_toml_type_of(at(doc, "ldt", NULL)) == TT_TOML_DATETIME_LOCAL);
	CHECK_STR(tt_toml_datetime(at(doc, "ldt", NULL)), "1979-05-27T07:32:00.5");
	CHECK(tt_toml_type_of(at(doc, "ld", NULL)) == TT_TOML_DATE_LOCAL);
	CHECK_STR(tt_toml_datetime(at(doc, "ld", NULL)), "2000-02-29");
	CHECK(tt_toml_type_of(at(doc, "lt", NULL)) == TT_TOML_TIME_LOCAL);
	CHECK_STR(tt_toml_datetime(at(doc, "lt", NULL)), "23:59:59.25");
	const tt_toml_value *arr = at(doc, "arr", NULL);
	CHECK(tt_toml_type_of(tt_toml_array_at(arr, 0)) == TT_TOML_DATETIME_LOCAL);
	CHECK(tt_toml_type_of(tt_toml_array_at(arr, 1)) == TT_TOML_DATE_LOCAL);
	CHECK_STR(tt_toml_type_name(TT_TOML_DATETIME_LOCAL), "datetime-local");
	tt_toml_free(doc);

	CHECK_PARSE_ERROR("a = 1900-02-29",
			  "<input>:1:5: invalid date/time '1900-02-29': day out of range for the month");
	CHECK_PARSE_ERROR("a = 2023-04-31",
			  "<input>:1:5: invalid date/time '2023-04-31': day out of range for the month");
	CHECK_PARSE_ERROR("a = 2023-13-01",
			  "<input>:1:5: invalid date/time '2023-13-01': month out of range");
	CHECK_PARSE_ERROR("a = 24:00:00",
			  "<input>:1:5: invalid date/time '24:00:00': hour out of range");
	CHECK_PARSE_ERROR("a = 12:60:00",
			  "<input>:1:5: invalid date/time '12:60:00': minute out of range");
	CHECK_PARSE_ERROR("a = 1979-05-27 07:32:61Z",
			  "<input>:1:5: invalid date/time '1979-05-27T07:32:61Z': second out of range");
	CHECK_PARSE_ERROR("a = 1979-05-27T07:32Z",
			  "<input>:1:5: invalid date/time '1979-05-27T07:32Z': malformed time (want HH:MM:SS)");
	CHECK_PARSE_ERROR("a = 1979-05-27T07:32:00+24:00",
			  "<input>:1:5: invalid date/time '1979-05-27T07:32:00+24:00': time zone offset out of range");
	CHECK_PARSE_ERROR("a = 07:32:00Z",
			  "<input>:1:5: invalid date/time '07:32:00Z': unexpected text after the time");
	CHECK_PARSE_ERROR("a = 1979-5-27",
			  "<input>:1:5: invalid date/time '1979-5-27': malformed date (want YYYY-MM-DD)");
	CHECK_PARSE_ERROR("a = tru", "<input>:1:5: invalid value 'tru'");
	tt_error_clear(&err);
}

TT_TEST(test_toml_arrays)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = parse("a = []\n"
				"b = [ 1, 'two', 3.0, [4], {five = 5} ]\n"
				"c = [\n  1, # one\n  # nothing\n  2,\n]\n"
				"d = [[[]]]\n",
				&err);
	CHECK_MSG(doc, "%s", err.message);
	CHECK_INT(tt_toml_array_len(at(doc, "a", NULL)), 0);
	const tt_toml_value *b = at(doc, "b", NULL);
	CHECK_INT(tt_toml_array_len(b), 5);
	CHECK(tt_toml_type_of(tt_toml_array_at(b, 1)) == TT_TOML_STRING);
	CHECK(tt_toml_type_of(tt_toml_array_at(b, 3)) == TT_TOML_ARRAY);
	CHECK_INT(tt_toml_integer(tt_toml_table_get(tt_toml_array_at(b, 4), "five")), 5);
	CHECK_INT(tt_toml_array_len(at(doc, "c", NULL)), 2);
	CHECK_INT(tt_toml_integer(tt_toml_array_at(at(doc, "c", NULL), 1)), 2);
	CHECK(tt_toml_array_at(b, 5) == NULL);
	tt_toml_free(doc);

	CHECK_PARSE_ERROR("a = [1 2]", "<input>:1:8: expected ',' or ']' in array, found '2'");
	CHECK_PARSE_ERROR("a = [1,,]", "<input>:1:8: expected a value, found ','");
	CHECK_PARSE_ERROR("a = [1,\n", "<input>:2:1: expected a value, found end of input");
	CHECK_PARSE_ERROR("a = [1]\n[[a]]",
			  "<input>:2:3: array a is a static array, which [[...]] cannot extend");
	tt_error_clear(&err);
}

TT_TEST(test_toml_inline_tables)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = parse("p = { x = 1, y.z = 2, y.w = [ {} ], \"q k\" = {} }\n"
				"e = {}\n",
				&err);
	CHECK_MSG(doc, "%s", err.message);
	const tt_toml_value *p = at(doc, "p", NULL);
	CHECK_INT(tt_toml_table_len(p), 3);
	CHECK_INT(tt_toml_integer(at(p, "y", "z")), 2);
	CHECK(tt_toml_type_of(at(p, "y", "w")) == TT_TOML_ARRAY);
	CHECK(tt_toml_type_of(at(p, "q k", NULL)) == TT_TOML_TABLE);
	CHECK_INT(tt_toml_table_len(at(doc, "e", NULL)), 0);
	tt_toml_free(doc);

	CHECK_PARSE_ERROR("a = {x = 1,}", "<input>:1:12: expected a key, found '}'");
	CHECK_PARSE_ERROR("a = {x = 1\n}",
			  "<input>:1:11: expected ',' or '}' in inline table, found end of line");
	CHECK_PARSE_ERROR("a = {x = 1, x = 2}", "<input>:1:13: key x is defined twice");
	CHECK_PARSE_ERROR("a = {x = 1}\na.y = 2",
			  "<input>:2:1: key a is an inline table, which cannot be extended");
	CHECK_PARSE_ERROR("a = {x = {}}\n[a.x.y]",
			  "<input>:2:2: table a is an inline table, which cannot be extended");
	CHECK_PARSE_ERROR("a = {}\n[a]", "<input>:2:2: table a is already defined as an inline table");
	CHECK_PARSE_ERROR("a = {b.c = 1, b = 2}", "<input>:1:15: key b is defined twice");
	tt_error_clear(&err);
}

TT_TEST(test_toml_tables)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = parse("top = 1\n"
				"dot.ted.key = 'v'\n"
				"dot.other = 2\n"
				"[a.b.c]\n"
				"x = 1\n"
				"[a]\n"            /* defines the implicit a */
				"y = 2\n"
				"[ a . 'b' . \"d\" ]\n"
				"[dot.ted.sub]\n"  /* a header below dotted tables */
				"s = 3\n"
				"[[fruit]]\n"
				"name = 'apple'\n"
				"[fruit.physical]\n"
				"color = 'red'\n"
				"[[fruit.variety]]\n"
				"name = 'red delicious'\n"
				"[[fruit]]\n"
				"name = 'banana'\n"
				"[[a.b.list]]\n"
				"[\"\"]\n"
				"'' = 0\n",
				&err);
	CHECK_MSG(doc, "%s", err.message);
	CHECK_INT(tt_toml_integer(at(doc, "top", NULL)), 1);
	CHECK_STR(tt_toml_string(at(at(doc, "dot", "ted"), "key", NULL), NULL), "v");
	CHECK_INT(tt_toml_integer(at(at(doc, "dot", "ted"), "sub", "s")), 3);
	CHECK_INT(tt_toml_integer(at(at(doc, "a", "b"), "c", "x")), 1);
	CHECK_INT(tt_toml_integer(at(doc, "a", "y")), 2);
	CHECK(tt_toml_type_of(at(at(doc, "a", "b"), "d", NULL)) == TT_TOML_TABLE);
	CHECK_INT(tt_toml_array_len(at(at(doc, "a", "b"), "list", NULL)), 1);
	const tt_toml_value *fruit = at(doc, "fruit", NULL);
	CHECK_INT(tt_toml_array_len(fruit), 2);
	CHECK_STR(tt_toml_string(at(tt_toml_array_at(fruit, 0), "physical", "color"), NULL), "red");
	CHECK_STR(tt_toml_string(tt_toml_table_get(tt_toml_array_at(fruit, 1), "name"), NULL), "banana");
	CHECK_INT(tt_toml_integer(at(doc, "", "")), 0);
	/* Keys in definition order. */
	CHECK_STR(tt_toml_table_key(doc, 0), "top");
	CHECK_STR(tt_toml_table_key(doc, 1), "dot");
	CHECK_STR(tt_toml_table_key(doc, 2), "a");
	CHECK_STR(tt_toml_table_key(doc, 3), "fruit");
	CHECK(tt_toml_table_key(doc, 5) == NULL);
	tt_toml_free(doc);

	/* [[x]] after [x.y] with x implicit: an implicit table is no array. */
	CHECK_PARSE_ERROR("[a.b]\n[[a]]", "<input>:2:3: array a is already defined as a table");
	CHECK_PARSE_ERROR("[a]\n[a]", "<input>:2:2: table a is defined twice");
	CHECK_PARSE_ERROR("[a.b]\n[a]\n[a]", "<input>:3:2: table a is defined twice");
	CHECK_PARSE_ERROR("a.b = 1\n[a]", "<input>:2:2: table a is already defined by dotted keys");
	CHECK_PARSE_ERROR("[a]\nb.c = 1\n[a.b]",
			  "<input>:3:4: table a.b is already defined by dotted keys");
	CHECK_PARSE_ERROR("[[a]]\n[a]", "<input>:2:2: table a is already defined as an array of tables");
	CHECK_PARSE_ERROR("a = 1\n[a.b]", "<input>:2:2: table a is already defined as an integer");
	CHECK_PARSE_ERROR("a = 1\na.b = 2", "<input>:2:1: key a is already defined as an integer");
	CHECK_PARSE_ERROR("[a.b.c]\n[a]\nb.c.d = 1",
			  "<input>:3:1: key b is a table defined by a [header]; dotted keys cannot extend it");
	CHECK_PARSE_ERROR("[[a.b]]\n[a]\nb.y = 2", "<input>:3:1: key b is already defined as an array of tables");
	CHECK_PARSE_ERROR("[a]\nx = 1\n\n  x = 2", "<input>:4:3: key x is defined twice");
	CHECK_PARSE_ERROR("[a] x = 1", "<input>:1:5: expected the end of the line, found 'x'");
	CHECK_PARSE_ERROR("[[a] ]", "<input>:1:4: expected ']]' to close the table header, found ']'");
	CHECK_PARSE_ERROR("[]", "<input>:1:2: expected a key, found ']'");
	CHECK_PARSE_ERROR("a = 1 = 2", "<input>:1:7: expected the end of the line, found '='");
	CHECK_PARSE_ERROR("a", "<input>:1:2: expected '=' after a key, found end of input");
	CHECK_PARSE_ERROR("= 1", "<input>:1:1: expected a key, found '='");
	CHECK_PARSE_ERROR("a =", "<input>:1:4: expected a value, found end of input");
	tt_error_clear(&err);
}

TT_TEST(test_toml_positions)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = parse("# comment\n"
				"  alpha = 1\n"
				"\"é\" = 'x'  ; bad\n",
				&err);
	CHECK(doc == NULL);
	/* Columns count characters, not bytes: "é" is one. */
	CHECK_STR(err.message, "<input>:3:12: expected the end of the line, found ';'");
	tt_error_clear(&err);

	doc = parse("a = 1\n"
		    "[t]\n"
		    "\tkey = [10,\n"
		    "         20]\n"
		    "[[arr]]\n"
		    "\"ü\".x = 'é' \n",
		    &err);
	CHECK_MSG(doc, "%s", err.message);
	const tt_toml_value *key = at(doc, "t", "key");
	CHECK_INT(tt_toml_line(at(doc, "a", NULL)), 1);
	CHECK_INT(tt_toml_col(at(doc, "a", NULL)), 1);
	CHECK_INT(tt_toml_line(at(doc, "t", NULL)), 2);
	CHECK_INT(tt_toml_col(at(doc, "t", NULL)), 2);
	CHECK_INT(tt_toml_line(key), 3);
	CHECK_INT(tt_toml_col(key), 2);
	CHECK_INT(tt_toml_line(tt_toml_array_at(key, 1)), 4);
	CHECK_INT(tt_toml_col(tt_toml_array_at(key, 1)), 10);
	CHECK_INT(tt_toml_line(at(doc, "arr", NULL)), 5);
	CHECK_INT(tt_toml_col(at(doc, "arr", NULL)), 3);
	tt_toml_free(doc);

	/* Quoted keys with escapes are not valid here, but keep positions. */
	CHECK_PARSE_ERROR("a = 1\r\nb = 2\r\nc = \x01", "<input>:3:5: control character U+0001 is not allowed");
	CHECK_PARSE_ERROR("a = \"\xC3\xA9\xFF\"", "<input>:1:7: invalid UTF-8 (byte 0xFF)");
	CHECK_PARSE_ERROR("a = \"\xED\xA0\x80\"", "<input>:1:6: invalid UTF-8 (byte 0xED)");
	CHECK_PARSE_ERROR("a = \"\xC0\xAF\"", "<input>:1:6: invalid UTF-8 (byte 0xC0)");
	CHECK_PARSE_ERROR("a = 1\rb = 2", "<input>:1:6: carriage return not followed by a line feed");
	CHECK_PARSE_ERROR("# \x7F", "<input>:1:3: control character U+007F is not allowed");
	CHECK_PARSE_ERROR("a = 'x\x1fy'", "<input>:1:7: control character U+001F is not allowed");

	char *m = parse_error_n("a = 1\na = 2", 11, "conf/tether.toml");
	CHECK_STR(m, "conf/tether.toml:2:1: key a is defined twice");
	free(m);
	/* Embedded NUL bytes are raw control characters too. */
	m = parse_error_n("a = 1\0", 6, NULL);
	CHECK_STR(m, "<input>:1:6: control character U+0000 is not allowed");
	free(m);
	tt_error_clear(&err);
}

TT_TEST(test_toml_misc_documents)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = NULL;
	CHECK_OK(tt_toml_parse(&doc, "", 0, NULL, &err));
	CHECK_INT(tt_toml_table_len(doc), 0);
	tt_toml_free(doc);
	CHECK_OK(tt_toml_parse(&doc, NULL, 0, NULL, &err));
	tt_toml_free(doc);
	/* A byte order mark is skipped; no newline at the end is fine. */
	CHECK_OK(tt_toml_parse(&doc, "\xEF\xBB\xBFk = 1 # c", 12, NULL, &err));
	CHECK_INT(tt_toml_integer(tt_toml_table_get(doc, "k")), 1);
	CHECK_INT(tt_toml_col(tt_toml_table_get(doc, "k")), 1);
	tt_toml_free(doc);
	/* Only len bytes are read. */
	CHECK_OK(tt_toml_parse(&doc, "k = 12345", 6, NULL, &err));
	CHECK_INT(tt_toml_integer(tt_toml_table_get(doc, "k")), 12);
	tt_toml_free(doc);
	CHECK_STR(tt_toml_type_name(TT_TOML_TABLE), "table");
	CHECK_STR(tt_toml_type_name(TT_TOML_BOOLEAN), "boolean");
	tt_error_clear(&err);
}

TT_TEST(test_toml_limits)
{
	/* Deep nesting is refused, not recursed into. */
	size_t n = 100000;
	char *deep = malloc(n + 8);
	CHECK(deep);
	memcpy(deep, "a = ", 4);
	memset(deep + 4, '[', n);
	deep[n + 4] = '\0';
	char *m = parse_error(deep);
	CHECK(m && strstr(m, "nesting deeper than 128 levels"));
	CHECK(strncmp(m, "<input>:1:133:", 14) == 0);
	free(m);
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, "a = ");
	for (int i = 0; i < 20000; i++)
		tt_buf_puts(&b, "{b = ");
	m = parse_error(b.ptr);
	CHECK(m && strstr(m, "nesting deeper than 128 levels"));
	free(m);
	/* Dotted keys and headers count too. */
	tt_buf_reset(&b);
	tt_buf_puts(&b, "[x");
	for (int i = 0; i < 200; i++)
		tt_buf_puts(&b, ".x");
	tt_buf_puts(&b, "]\n");
	m = parse_error(b.ptr);
	CHECK(m && strstr(m, "key has too many parts"));
	free(m);
	tt_buf_reset(&b);
	for (int i = 0; i < 100; i++)
		tt_buf_puts(&b, "x.");
	tt_buf_puts(&b, "y = [");
	for (int i = 0; i < 40; i++)
		tt_buf_puts(&b, "[");
	m = parse_error(b.ptr);
	CHECK(m && strstr(m, "nesting deeper than 128 levels"));
	free(m);
	/* Right at the limit is fine. */
	tt_buf_reset(&b);
	tt_buf_puts(&b, "a = ");
	for (int i = 0; i < 128; i++)
		tt_buf_putc(&b, '[');
	for (int i = 0; i < 128; i++)
		tt_buf_putc(&b, ']');
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = parse(b.ptr, &err);
	CHECK_MSG(doc, "%s", err.message);
	char *out = write_doc(doc);
	CHECK(out && strlen(out) == 4 + 256 + 1);
	free(out);
	tt_toml_free(doc);

	/* Many keys: the hash index keeps lookups and the duplicate check fast. */
	tt_buf_reset(&b);
	for (int i = 0; i < 50000; i++)
		tt_buf_printf(&b, "k%d = %d\n", i, i);
	doc = parse(b.ptr, &err);
	CHECK_MSG(doc, "%s", err.message);
	CHECK_INT(tt_toml_table_len(doc), 50000);
	CHECK_INT(tt_toml_integer(tt_toml_table_get(doc, "k31337")), 31337);
	CHECK(tt_toml_table_get(doc, "k50000") == NULL);
	tt_toml_free(doc);
	tt_buf_puts(&b, "k777 = 1\n");
	m = parse_error(b.ptr);
	CHECK_STR(m, "<input>:50001:1: key k777 is defined twice");
	free(m);
	tt_buf_release(&b);
	free(deep);
	tt_error_clear(&err);
}

TT_TEST(test_toml_build_api)
{
	tt_toml_value *t = tt_toml_new_table();
	CHECK(t);
	CHECK_INT(tt_toml_table_set(t, "b", tt_toml_new_integer(1)), 0);
	CHECK_INT(tt_toml_table_set(t, "a", tt_toml_new_string("x", 1)), 0);
	/* Replacing keeps the position. */
	CHECK_INT(tt_toml_table_set(t, "b", tt_toml_new_boolean(true)), 0);
	CHECK_INT(tt_toml_table_len(t), 2);
	CHECK_STR(tt_toml_table_key(t, 0), "b");
	CHECK(tt_toml_type_of(tt_toml_table_at(t, 0)) == TT_TOML_BOOLEAN);
	CHECK_INT(tt_toml_line(tt_toml_table_at(t, 0)), 0);
	CHECK_INT(tt_toml_table_setn(t, "n\0l", 3, tt_toml_new_float(0.5)), 0);
	size_t klen;
	const char *k = tt_toml_table_key_n(t, 2, &klen);
	CHECK(klen == 3 && memcmp(k, "n\0l", 3) == 0);
	tt_toml_value *a = tt_toml_new_array();
	CHECK_INT(tt_toml_array_push(a, tt_toml_new_datetime(TT_TOML_DATE_LOCAL, "2024-01-02")), 0);
	CHECK(tt_toml_new_datetime(TT_TOML_STRING, "x") == NULL);
	CHECK_INT(tt_toml_table_set(t, "d", a), 0);
	tt_toml_value *i1 = tt_toml_new_integer(1);
	CHECK(tt_toml_array_push(t, i1) != 0); /* not an array: not taken */
	tt_toml_free(i1);
	char *out = write_doc(t);
	CHECK_STR(out, "b = true\na = \"x\"\n\"n\\u0000l\" = 0.5\nd = [2024-01-02]\n");
	free(out);
	CHECK(tt_toml_equal(t, t));
	tt_toml_free(t);
	tt_toml_free(NULL);
}

/* The writer, against output produced by tomlkit 0.13.2's dumps(). */
TT_TEST(test_toml_writer_tomlkit_format)
{
	static const struct {
		const char *json, *toml;
	} cases[] = {
		{ "{\"a\": 1, \"b\": {\"c\": 2, \"d\": {\"e\": 3}}, \"f\": \"x\"}",
		  "a = 1\nf = \"x\"\n\n[b]\nc = 2\n\n[b.d]\ne = 3\n" },
		/* A value added after a table goes above it, with no blank line. */
		{ "{\"t\": {\"a\": 1}, \"x\": 2}", "x = 2\n[t]\na = 1\n" },
		{ "{\"a\": {\"b\": {\"c\": 1}}}", "[a.b]\nc = 1\n" },
		{ "{\"a\": {\"b\": {}, \"c\": {}}}", "[a.b]\n\n[a.c]\n" },
		{ "{\"a\": {}}", "[a]\n" },
		{ "{\"t\": {\"a\": {}, \"b\": 1}}", "[t]\nb = 1\n[t.a]\n" },
		{ "{\"x\": 1, \"t\": {\"aot\": [{\"a\": 1}, {\"b\": 2}], \"z\": 3}}",
		  "x = 1\n\n[t]\nz = 3\n[[t.aot]]\na = 1\n\n[[t.aot]]\nb = 2\n" },
		{ "{\"z\": 3, \"aot\": [{\"a\": 1}]}", "z = 3\n\n[[aot]]\na = 1\n" },
		{ "{\"aot\": [{}, {}]}", "[[aot]]\n[[aot]]\n" },
		{ "{\"aot\": [{\"t\": {\"a\": 1}, \"x\": 1, \"s\": [{\"q\": {}}]}]}",
		  "[[aot]]\nx = 1\n\n[[aot.s]]\n[aot.s.q]\n\n[aot.t]\na = 1\n" },
		{ "{\"arr\": [1, \"a\", {\"x\": 1}], \"arr2\": [{\"x\": 1}, 2], \"e\": [], \"n\": [[1, 2], [3]]}",
		  "arr = [1, \"a\", {x = 1}]\narr2 = [{x = 1}, 2]\ne = []\nn = [[1, 2], [3]]\n" },
		{ "{\"arr\": [1, {\"x\": {\"a\": 1, \"b\": {\"c\": 2, \"d\": 3}}, \"y\": 0}]}",
		  "arr = [1, {y = 0, x = {a = 1,b = {c = 2,d = 3}}}]\n" },
		{ "{\"k y\": 1, \"\\u00e4\": 2, \"a.b\": 3, \"\": 4, \"a\\\"b\\n\": 5, \"A-Z_9\": 6}",
		  "\"k y\" = 1\n\"\xC3\xA4\" = 2\n\"a.b\" = 3\n\"\" = 4\n\"a\\\"b\\n\" = 5\nA-Z_9 = 6\n" },
		{ "{\"s\": \"a\\\"b\\\\c\\b\\t\\n\\f\\r\\u001f\\u007f\\u0000\\u00e9\\u2028\"}",
		  "s = \"a\\\"b\\\\c\\b\\t\\n\\f\\r\\u001f\\u007f\\u0000\xC3\xA9\xE2\x80\xA8\"\n" },
		{ "{\"f\": [0.1, 1e16, 1e-7, -0.0, 1.0, 123456789012345678.0, 1e22]}",
		  "f = [0.1, 1e+16, 1e-07, -0.0, 1.0, 1.2345678901234568e+17, 1e+22]\n" },
		{ "{\"i\": [9223372036854775807, -9223372036854775808, 0], \"b\": [true, false]}",
		  "i = [9223372036854775807, -9223372036854775808, 0]\nb = [true, false]\n" },
		/* Nulls are dropped, everywhere. */
		{ "{\"a\": null, \"b\": {\"c\": null}, \"d\": [1, null]}", "d = [1]\n[b]\n" },
		{ "{}", "" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *out = write_json(cases[i].json);
		CHECK_MSG(out, "case %zu: write failed", i);
		int same = strcmp(out, cases[i].toml) == 0;
		if (!same)
			tt_test_fail(__FILE__, __LINE__, "case %zu: got \"%s\"", i, out);
		free(out);
		if (!same)
			return;
	}

	/* inf and nan (not JSON) from a parsed document. */
	char *out = round_trip("f = [inf, -inf, nan, -nan, +inf]\n");
	CHECK_STR(out, "f = [inf, -inf, nan, nan, inf]\n");
	free(out);
}

TT_TEST(test_toml_round_trips)
{
	static const char *docs[] = {
		("a = 1\n[t]\nb = 'x'\n[[t.arr]]\nc = 1979-05-27T07:32:00Z\n[[t.arr]]\n"
		 "d = 07:32:00\ne.f.g = 1\n"),
		"s = \"\"\"\nline\\ttab\n\"\"\"\nlit = '''x\\y'''\nk.\"q.x\".'r' = { a = [1, {b = 2}] }\n",
		"[a.b.c]\n[a]\nx = 1\n[[a.list]]\n[[a.list]]\ny = {}\n",
		"ints = [0x10, 0o10, 0b10, -1, +2]\nfloats = [1e300, -1e-300, 0.1, 3.0]\n",
		"mixed = [[1, 'a'], {x = [{y = 1}]}, 1979-05-27, 1.5]\n",
		"\"\\u0000\\u007f\" = \"\\u0001\"\n\"\" = ''\n",
		"emptyarr = []\n[empty]\n[[aot]]\n[[aot]]\n[[aot]]\nx = 1\n",
	};
	for (size_t i = 0; i < sizeof docs / sizeof docs[0]; i++) {
		char *out = round_trip(docs[i]);
		CHECK_MSG(out, "doc %zu did not survive a round trip", i);
		/* The output round-trips too (not always to the same text: the
		 * writer's blank lines depend on key order, as tomlkit's do). */
		char *again = round_trip(out);
		free(out);
		CHECK_MSG(again, "doc %zu: output did not survive a round trip", i);
		free(again);
	}
	char *out = round_trip("b = 1\n[t]\nx = 1979-05-27 07:32:00\n");
	CHECK_STR(out, "b = 1\n\n[t]\nx = 1979-05-27T07:32:00\n");
	free(out);
}

TT_TEST(test_toml_json)
{
	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = parse("z = 1\na = [1.5, true, 'x']\n[t]\nk = {q = 2}\n", &err);
	CHECK_MSG(doc, "%s", err.message);
	json_t *j = tt_toml_to_json(doc, "f.toml", &err);
	CHECK_MSG(j, "%s", err.message);
	char *s = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
	CHECK_STR(s, "{\"z\":1,\"a\":[1.5,true,\"x\"],\"t\":{\"k\":{\"q\":2}}}");
	free(s);

	/* And back: key order kept, integers stay integers. */
	tt_toml_value *back = tt_toml_from_json(j, &err);
	CHECK(back && tt_toml_equal(doc, back));
	CHECK_STR(tt_toml_table_key(back, 0), "z");
	CHECK(tt_toml_type_of(tt_toml_array_at(tt_toml_table_get(back, "a"), 0)) == TT_TOML_FLOAT);
	tt_toml_free(back);
	json_decref(j);
	tt_toml_free(doc);

	/* Dates and times have no JSON form: refused with their position. */
	doc = parse("ok = 1\n[t]\n  when = 1979-05-27\n", &err);
	CHECK_MSG(doc, "%s", err.message);
	CHECK(tt_toml_to_json(doc, "tether.toml", &err) == NULL);
	CHECK_INT(err.code, TT_ECONFIG);
	CHECK_STR(err.message, "tether.toml:3:3: when: dates and times are not supported in JSON");
	tt_toml_free(doc);
	doc = parse("a = [1, 07:00:00]\n", &err);
	CHECK(tt_toml_to_json(doc, NULL, &err) == NULL);
	CHECK_STR(err.message,
		  "<input>:1:9: an array element: dates and times are not supported in JSON");
	tt_toml_free(doc);
	doc = parse("\"x y\" = nan\n", &err);
	CHECK(tt_toml_to_json(doc, NULL, &err) == NULL);
	CHECK_INT(err.code, TT_ECONFIG);
	CHECK_STR(err.message, "<input>:1:1: \"x y\": inf and nan are not supported in JSON");
	tt_toml_free(doc);

	/* Nulls are dropped recursively; a NUL inside a key survives. */
	j = json_loads("{\"a\": null, \"b\": [null, {\"c\": null, \"d\": 1}], \"e\\u0000\": 2}",
		       JSON_ALLOW_NUL, NULL);
	if (!j) /* jansson refuses NUL in keys: test without it */
		j = json_loads("{\"a\": null, \"b\": [null, {\"c\": null, \"d\": 1}]}", 0, NULL);
	CHECK(j);
	doc = tt_toml_from_json(j, &err);
	CHECK(doc);
	CHECK(tt_toml_table_get(doc, "a") == NULL);
	const tt_toml_value *b = tt_toml_table_get(doc, "b");
	CHECK_INT(tt_toml_array_len(b), 1);
	CHECK_INT(tt_toml_table_len(tt_toml_array_at(b, 0)), 1);
	tt_toml_free(doc);
	json_decref(j);
	tt_error_clear(&err);
}
