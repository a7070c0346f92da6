/*
 * toml_encoder - the toml-test encoder protocol: "tagged" JSON on stdin
 * ({"type": "integer", "value": "1"} for each scalar), TOML written by
 * tt_toml_write() on stdout.  Exit status 1 on input it cannot convert.
 *
 * jansson refuses "\u0000" in object keys, which toml-test sends, so this
 * reads the JSON itself: objects, arrays and strings are all tagged JSON
 * has.  Objects are read into TOML tables; a table holding exactly the
 * strings "type" and "value" then becomes the scalar it describes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/buf.h"
#include "util/toml.h"

typedef struct reader {
	const char *s;
	size_t len, pos;
} reader;

static void ws(reader *r)
{
	while (r->pos < r->len && strchr(" \t\r\n", r->s[r->pos]))
		r->pos++;
}

static bool eat(reader *r, char c)
{
	ws(r);
	if (r->pos < r->len && r->s[r->pos] == c) {
		r->pos++;
		return true;
	}
	return false;
}

static int hex4(reader *r, unsigned *out)
{
	*out = 0;
	for (int i = 0; i < 4; i++, r->pos++) {
		if (r->pos >= r->len)
			return -1;
		char c = r->s[r->pos];
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
			: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return -1;
		*out = *out << 4 | (unsigned)d;
	}
	return 0;
}

static void put_utf8(tt_buf *b, unsigned cp)
{
	if (cp < 0x80) {
		tt_buf_putc(b, (char)cp);
	} else if (cp < 0x800) {
		tt_buf_putc(b, (char)(0xC0 | cp >> 6));
		tt_buf_putc(b, (char)(0x80 | (cp & 0x3F)));
	} else if (cp < 0x10000) {
		tt_buf_putc(b, (char)(0xE0 | cp >> 12));
		tt_buf_putc(b, (char)(0x80 | (cp >> 6 & 0x3F)));
		tt_buf_putc(b, (char)(0x80 | (cp & 0x3F)));
	} else {
		tt_buf_putc(b, (char)(0xF0 | cp >> 18));
		tt_buf_putc(b, (char)(0x80 | (cp >> 12 & 0x3F)));
		tt_buf_putc(b, (char)(0x80 | (cp >> 6 & 0x3F)));
		tt_buf_putc(b, (char)(0x80 | (cp & 0x3F)));
	}
}

/* A JSON string into b (reset first). */
static int string(reader *r, tt_buf *b)
{
	tt_buf_reset(b);
	if (!eat(r, '"'))
		return -1;
	while (r->pos < r->len) {
		char c = r->s[r->pos++];
		if (c == '"')
			return b->failed ? -1 : 0;
		if (c != '\\') {
			tt_buf_putc(b, c);
			continue;
		}
		if (r->pos >= r->len)
			return -1;
		c = r->s[r->pos++];
		const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
		const char *e = strchr(from, c);
		if (c && e) {
			tt_buf_putc(b, to[e - from]);
			continue;
		}
		unsigned cp, lo;
		if (c != 'u' || hex4(r, &cp))
			return -1;
		if (cp >= 0xD800 && cp < 0xDC00 && r->pos + 1 < r->len && r->s[r->pos] == '\\' &&
		    r->s[r->pos + 1] == 'u') {
			r->pos += 2;
			if (hex4(r, &lo) || lo < 0xDC00 || lo > 0xDFFF)
				return -1;
			cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
		}
		put_utf8(b, cp);
	}
	return -1;
}

static tt_toml_value *scalar(const char *type, const tt_toml_value *value)
{
	size_t len;
	const char *s = tt_toml_string(value, &len);
	char *end;

	if (strcmp(type, "string") == 0)
		return tt_toml_new_string(s, len);
	if (strcmp(type, "integer") == 0) {
		errno = 0;
		long long i = strtoll(s, &end, 10);
		return errno || *end ? NULL : tt_toml_new_integer(i);
	}
	if (strcmp(type, "float") == 0) {
		double d = strtod(s, &end);
		return *end ? NULL : tt_toml_new_float(d);
	}
	if (strcmp(type, "bool") == 0)
		return tt_toml_new_boolean(strcmp(s, "true") == 0);
	static const struct { const char *name; tt_toml_type t; } dt[] = {
		{ "datetime", TT_TOML_DATETIME },
		{ "datetime-local", TT_TOML_DATETIME_LOCAL },
		{ "date-local", TT_TOML_DATE_LOCAL },
		{ "time-local", TT_TOML_TIME_LOCAL },
	};
	for (size_t i = 0; i < sizeof dt / sizeof dt[0]; i++) {
		if (strcmp(type, dt[i].name) == 0)
			return tt_toml_new_datetime(dt[i].t, s);
	}
	return NULL;
}

/* {"type": "...", "value": "..."} read as a table: the scalar, else NULL. */
static tt_toml_value *untag(const tt_toml_value *t)
{
	const tt_toml_value *type = tt_toml_table_get(t, "type");
	const tt_toml_value *value = tt_toml_table_get(t, "value");
	if (tt_toml_table_len(t) != 2 || !type || !value || tt_toml_type_of(type) != TT_TOML_STRING ||
	    tt_toml_type_of(value) != TT_TOML_STRING)
		return NULL;
	return scalar(tt_toml_string(type, NULL), value);
}

static tt_toml_value *value(reader *r, tt_buf *b, int depth)
{
	if (depth > 200)
		return NULL;
	ws(r);
	if (r->pos >= r->len)
		return NULL;
	char c = r->s[r->pos];
	if (c == '"')
		return string(r, b) ? NULL : tt_toml_new_string(b->ptr, b->len);
	if (c == '[') {
		r->pos++;
		tt_toml_value *a = tt_toml_new_array();
		if (eat(r, ']'))
			return a;
		do {
			tt_toml_value *v = value(r, b, depth + 1);
			if (!v || tt_toml_array_push(a, v) != 0) {
				tt_toml_free(v);
				tt_toml_free(a);
				return NULL;
			}
		} while (eat(r, ','));
		if (!eat(r, ']')) {
			tt_toml_free(a);
			return NULL;
		}
		return a;
	}
	if (c == '{') {
		r->pos++;
		tt_toml_value *t = tt_toml_new_table();
		if (!eat(r, '}')) {
			do {
				if (string(r, b) || !eat(r, ':'))
					goto bad;
				size_t klen = b->len;
				char *k = malloc(klen + 1);
				if (!k)
					goto bad;
				memcpy(k, b->ptr, klen + 1);
				tt_toml_value *v = value(r, b, depth + 1);
				int rc = v ? tt_toml_table_setn(t, k, klen, v) : -1;
				free(k);
				if (rc) {
					tt_toml_free(v);
					goto bad;
				}
			} while (eat(r, ','));
			if (!eat(r, '}'))
				goto bad;
		}
		if (tt_toml_table_get(t, "type") && tt_toml_table_get(t, "value")) {
			tt_toml_value *s = untag(t);
			if (s) {
				tt_toml_free(t);
				return s;
			}
		}
		return t;
bad:
		tt_toml_free(t);
		return NULL;
	}
	return NULL;
}

int main(void)
{
	tt_buf in = TT_BUF_INIT, scratch = TT_BUF_INIT, out = TT_BUF_INIT;
	char chunk[65536];
	size_t n;
	while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
		tt_buf_put(&in, chunk, n);

	reader r = { in.ptr, in.len, 0 };
	tt_toml_value *doc = value(&r, &scratch, 0);
	ws(&r);
	int rc = 1;
	if (!doc || tt_toml_type_of(doc) != TT_TOML_TABLE || r.pos != r.len) {
		fprintf(stderr, "toml_encoder: input is not a tagged JSON object\n");
	} else {
		tt_error err = TT_ERROR_INIT;
		rc = tt_toml_write(&out, doc, &err);
		if (rc == 0)
			fwrite(out.ptr, 1, out.len, stdout);
		else
			fprintf(stderr, "toml_encoder: %s\n", err.message);
		tt_error_clear(&err);
	}
	tt_toml_free(doc);
	tt_buf_release(&in);
	tt_buf_release(&scratch);
	tt_buf_release(&out);
	return rc ? 1 : 0;
}
