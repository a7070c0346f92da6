/*
 * toml_decoder - the toml-test decoder protocol: TOML on stdin, the
 * "tagged" JSON form on stdout ({"type": "integer", "value": "1"} for each
 * scalar, plain objects and arrays for tables and arrays).  Invalid input:
 * the error on stderr and exit status 1.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/num.h"
#include "util/toml.h"

static json_t *tagged(const char *type, const char *value, size_t len)
{
	json_t *o = json_object();
	json_object_set_new(o, "type", json_string(type));
	json_object_set_new(o, "value", json_stringn(value, len));
	return o;
}

static json_t *convert(const tt_toml_value *v)
{
	char num[64];
	switch (tt_toml_type_of(v)) {
	case TT_TOML_TABLE: {
		json_t *o = json_object();
		for (size_t i = 0; i < tt_toml_table_len(v); i++) {
			size_t klen;
			const char *k = tt_toml_table_key_n(v, i, &klen);
			json_object_setn_new(o, k, klen, convert(tt_toml_table_at(v, i)));
		}
		return o;
	}
	case TT_TOML_ARRAY: {
		json_t *a = json_array();
		for (size_t i = 0; i < tt_toml_array_len(v); i++)
			json_array_append_new(a, convert(tt_toml_array_at(v, i)));
		return a;
	}
	case TT_TOML_STRING: {
		size_t len;
		const char *s = tt_toml_string(v, &len);
		return tagged("string", s, len);
	}
	case TT_TOML_INTEGER:
		snprintf(num, sizeof num, "%lld", (long long)tt_toml_integer(v));
		return tagged("integer", num, strlen(num));
	case TT_TOML_FLOAT: {
		double d = tt_toml_float(v);
		if (!tt_double_repr(num, d))
			strcpy(num, d != d ? "nan" : d < 0 ? "-inf" : "inf");
		return tagged("float", num, strlen(num));
	}
	case TT_TOML_BOOLEAN:
		return tagged("bool", tt_toml_boolean(v) ? "true" : "false",
			      tt_toml_boolean(v) ? 4 : 5);
	default: {
		const char *s = tt_toml_datetime(v);
		return tagged(tt_toml_type_name(tt_toml_type_of(v)), s, strlen(s));
	}
	}
}

int main(void)
{
	tt_buf in = TT_BUF_INIT;
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
		tt_buf_put(&in, chunk, n);
	if (in.failed) {
		fprintf(stderr, "toml_decoder: out of memory\n");
		return 2;
	}

	tt_error err = TT_ERROR_INIT;
	tt_toml_value *doc = NULL;
	if (tt_toml_parse(&doc, in.ptr, in.len, NULL, &err) != 0) {
		fprintf(stderr, "%s\n", err.message ? err.message : "parse error");
		tt_error_clear(&err);
		tt_buf_release(&in);
		return 1;
	}
	json_t *j = convert(doc);
	json_dumpf(j, stdout, JSON_INDENT(1) | JSON_ENSURE_ASCII);
	putchar('\n');
	json_decref(j);
	tt_toml_free(doc);
	tt_buf_release(&in);
	return 0;
}
