/*
 * util/json.c - a JSON writer that reproduces Python's json.dumps byte for
 * byte (see json.h), and the jansson-backed parser.
 */
#include "util/json.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"
#include "util/num.h"

static const char hexdigits[] = "0123456789abcdef";

/*
 * Decode one UTF-8 sequence at s (avail bytes left).  Returns its length
 * and stores the code point, or 0 when the bytes are not well-formed UTF-8
 * (overlong forms, surrogates and values past U+10FFFF are refused).
 */
static size_t utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp)
{
	unsigned char c = s[0];
	size_t n;
	uint32_t v, min;

	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if (c >= 0xc2 && c <= 0xdf) {
		n = 2;
		v = c & 0x1f;
		min = 0x80;
	} else if (c >= 0xe0 && c <= 0xef) {
		n = 3;
		v = c & 0x0f;
		min = 0x800;
	} else if (c >= 0xf0 && c <= 0xf4) {
		n = 4;
		v = c & 0x07;
		min = 0x10000;
	} else {
		return 0;
	}
	if (avail < n)
		return 0;
	for (size_t i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		v = (v << 6) | (s[i] & 0x3f);
	}
	if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
		return 0;
	*cp = v;
	return n;
}

size_t tt_utf8_put(char o[4], uint32_t cp)
{
	if (cp < 0x80) {
		o[0] = (char)cp;
		return 1;
	}
	if (cp < 0x800) {
		o[0] = (char)(0xc0 | cp >> 6);
		o[1] = (char)(0x80 | (cp & 0x3f));
		return 2;
	}
	if (cp < 0x10000) {
		o[0] = (char)(0xe0 | cp >> 12);
		o[1] = (char)(0x80 | (cp >> 6 & 0x3f));
		o[2] = (char)(0x80 | (cp & 0x3f));
		return 3;
	}
	o[0] = (char)(0xf0 | cp >> 18);
	o[1] = (char)(0x80 | (cp >> 12 & 0x3f));
	o[2] = (char)(0x80 | (cp >> 6 & 0x3f));
	o[3] = (char)(0x80 | (cp & 0x3f));
	return 4;
}

size_t tt_utf8_next(const unsigned char *s, size_t avail, uint32_t *cp)
{
	size_t n = utf8_decode(s, avail, cp);
	if (n)
		return n;
	*cp = s[0];
	return 1;
}

bool tt_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < len) {
		uint32_t cp;
		if (p[i] < 0x80) {
			i++;
			continue;
		}
		size_t n = utf8_decode(p + i, len - i, &cp);
		if (!n)
			return false;
		i += n;
	}
	return true;
}

static void put_u16(tt_buf *out, uint32_t u)
{
	char e[6] = { '\\', 'u', hexdigits[(u >> 12) & 0xf], hexdigits[(u >> 8) & 0xf],
		      hexdigits[(u >> 4) & 0xf], hexdigits[u & 0xf] };
	tt_buf_put(out, e, sizeof e);
}

/*
 * Python's escaping: with ensure_ascii=False only '"', '\\' and C0 controls
 * are escaped (\n \r \t \b \f short, the rest \u00XX); with ensure_ascii=True
 * everything outside ' '..'~' is escaped too, as \uXXXX or a surrogate pair.
 */
int tt_json_dump_string(tt_buf *out, const char *s, size_t len, bool ensure_ascii)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, run = 0;

	tt_buf_putc(out, '"');
	while (i < len) {
		unsigned char c = p[i];
		const char *esc = NULL;

		if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') {
			i++;
			continue;
		}
		if (c >= 0x80) {
			uint32_t cp;
			size_t n = utf8_decode(p + i, len - i, &cp);
			if (!n)
				return TT_EPARSE;
			if (!ensure_ascii) {
				i += n;
				continue;
			}
			tt_buf_put(out, s + run, i - run);
			if (cp < 0x10000) {
				put_u16(out, cp);
			} else {
				cp -= 0x10000;
				put_u16(out, 0xd800 | (cp >> 10));
				put_u16(out, 0xdc00 | (cp & 0x3ff));
			}
			i += n;
			run = i;
			continue;
		}
		if (c == 0x7f && !ensure_ascii) {
			i++;
			continue;
		}
		tt_buf_put(out, s + run, i - run);
		switch (c) {
		case '"': esc = "\\\""; break;
		case '\\': esc = "\\\\"; break;
		case '\n': esc = "\\n"; break;
		case '\r': esc = "\\r"; break;
		case '\t': esc = "\\t"; break;
		case '\b': esc = "\\b"; break;
		case '\f': esc = "\\f"; break;
		default: break;
		}
		if (esc)
			tt_buf_put(out, esc, 2);
		else
			put_u16(out, c);
		i++;
		run = i;
	}
	tt_buf_put(out, s + run, i - run);
	return tt_buf_putc(out, '"');
}

static int put_number(tt_buf *out, const json_t *v)
{
	if (json_is_integer(v))
		return tt_buf_printf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	double d = json_real_value(v);
	char tmp[TT_DOUBLE_REPR_MAX];
	size_t n = tt_double_repr(tmp, d);
	if (n)
		return tt_buf_put(out, tmp, n);
	/* json.dumps' allow_nan spellings (jansson itself never holds these). */
	if (isnan(d))
		return tt_buf_puts(out, "NaN");
	return tt_buf_puts(out, d < 0 ? "-Infinity" : "Infinity");
}

static void newline_indent(tt_buf *out, tt_json_style st, int level)
{
	size_t n = (size_t)st.indent * (size_t)level;
	tt_buf_putc(out, '\n');
	if (tt_buf_grow(out, n) == 0) {
		memset(out->ptr + out->len, ' ', n);
		out->len += n;
		out->ptr[out->len] = '\0';
	}
}

/* Between two items: "," or ", ", then the newline and indent when indenting. */
static void item_sep(tt_buf *out, tt_json_style st, int level)
{
	if (st.indent >= 0) {
		tt_buf_putc(out, ',');
		newline_indent(out, st, level);
	} else {
		tt_buf_puts(out, st.compact ? "," : ", ");
	}
}

typedef struct key_ref {
	const char *key;
	size_t len;
	const json_t *value;
} key_ref;

/* Code point order == UTF-8 byte order; a proper prefix sorts first. */
static int key_cmp(const void *a, const void *b)
{
	const key_ref *x = a, *y = b;
	size_t n = x->len < y->len ? x->len : y->len;
	int c = memcmp(x->key, y->key, n);
	if (c)
		return c;
	return (x->len > y->len) - (x->len < y->len);
}

static int dump_value(tt_buf *out, const json_t *v, tt_json_style st, int level);

static int dump_member(tt_buf *out, const key_ref *k, tt_json_style st, int level)
{
	int rc = tt_json_dump_string(out, k->key, k->len, st.ensure_ascii);
	if (rc)
		return rc;
	tt_buf_puts(out, st.compact ? ":" : ": ");
	return dump_value(out, k->value, st, level);
}

static int dump_object(tt_buf *out, const json_t *v, tt_json_style st, int level)
{
	size_t n = json_object_size(v);
	const char *key;
	size_t klen;
	json_t *val;
	int rc = 0;

	if (n == 0)
		return tt_buf_puts(out, "{}");
	tt_buf_putc(out, '{');
	if (st.indent >= 0)
		newline_indent(out, st, level + 1);

	if (!st.sort_keys) {
		size_t i = 0;
		json_object_keylen_foreach((json_t *)v, key, klen, val) {
			key_ref k = { key, klen, val };
			if (i++)
				item_sep(out, st, level + 1);
			rc = dump_member(out, &k, st, level + 1);
			if (rc)
				return rc;
		}
	} else {
		key_ref *keys = tt_reallocarray(NULL, n, sizeof *keys);
		size_t i = 0;
		if (!keys)
			return TT_ENOMEM;
		json_object_keylen_foreach((json_t *)v, key, klen, val) {
			if (i < n) {
				keys[i].key = key;
				keys[i].len = klen;
				keys[i].value = val;
				i++;
			}
		}
		qsort(keys, i, sizeof *keys, key_cmp);
		for (size_t j = 0; j < i && !rc; j++) {
			if (j)
				item_sep(out, st, level + 1);
			rc = dump_member(out, &keys[j], st, level + 1);
		}
		free(keys);
		if (rc)
			return rc;
	}
	if (st.indent >= 0)
		newline_indent(out, st, level);
	return tt_buf_putc(out, '}');
}

static int dump_array(tt_buf *out, const json_t *v, tt_json_style st, int level)
{
	size_t n = json_array_size(v);
	if (n == 0)
		return tt_buf_puts(out, "[]");
	tt_buf_putc(out, '[');
	if (st.indent >= 0)
		newline_indent(out, st, level + 1);
	for (size_t i = 0; i < n; i++) {
		if (i)
			item_sep(out, st, level + 1);
		int rc = dump_value(out, json_array_get(v, i), st, level + 1);
		if (rc)
			return rc;
	}
	if (st.indent >= 0)
		newline_indent(out, st, level);
	return tt_buf_putc(out, ']');
}

static int dump_value(tt_buf *out, const json_t *v, tt_json_style st, int level)
{
	if (out->failed)
		return out->failed;
	if (!v)
		return TT_EUSAGE;
	if (level >= TT_JSON_MAX_DEPTH)
		return TT_ELIMIT;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return dump_object(out, v, st, level);
	case JSON_ARRAY:
		return dump_array(out, v, st, level);
	case JSON_STRING:
		return tt_json_dump_string(out, json_string_value(v), json_string_length(v),
					   st.ensure_ascii);
	case JSON_INTEGER:
	case JSON_REAL:
		return put_number(out, v);
	case JSON_TRUE:
		return tt_buf_puts(out, "true");
	case JSON_FALSE:
		return tt_buf_puts(out, "false");
	case JSON_NULL:
		return tt_buf_puts(out, "null");
	}
	return TT_EUSAGE;
}

int tt_json_dump(tt_buf *out, const json_t *v, tt_json_style style)
{
	int rc = dump_value(out, v, style, 0);
	if (rc)
		return rc;
	return out->failed;
}

int tt_json_canonical(tt_buf *out, const json_t *v)
{
	return tt_json_dump(out, v, TT_JSON_CANONICAL);
}

json_t *tt_json_parse(const char *text, size_t len, const char *what, tt_error *err)
{
	json_error_t je;
	json_t *v;

	if (!text) {
		tt_error_set(err, TT_EUSAGE, "%s: no JSON text", what ? what : "<json>");
		return NULL;
	}
	v = json_loadb(text, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!v) {
		if (json_error_code(&je) == json_error_out_of_memory)
			tt_error_oom(err);
		else
			tt_error_set(err, TT_EPARSE, "%s:%d:%d: %s", what ? what : "<json>",
				     je.line, je.column, je.text);
	}
	return v;
}

bool tt_json_has_string(const json_t *v, const char *s)
{
	size_t i;
	const char *k;
	json_t *x;
	if (json_is_array(v)) {
		json_array_foreach(v, i, x)
			if (json_is_string(x) && strcmp(json_string_value(x), s) == 0)
				return true;
	} else if (json_is_object(v)) {
		json_object_foreach((json_t *)v, k, x)
			if (json_is_string(x) && strcmp(json_string_value(x), s) == 0)
				return true;
	}
	return false;
}
