/* core/pyvalue.c - Python value semantics for JSON values (see pyvalue.h). */
#include "core/pyvalue.h"

#include <inttypes.h>
#include <math.h> /* isnan: a macro, no libm */
#include <stdint.h>
#include <string.h>

#include "util/json.h"
#include "util/num.h"

bool tt_pyv_truthy(const json_t *v)
{
	if (!v)
		return false;
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return json_object_size(v) > 0;
	case JSON_ARRAY:
		return json_array_size(v) > 0;
	case JSON_STRING:
		return json_string_length(v) > 0;
	case JSON_INTEGER:
		return json_integer_value(v) != 0;
	case JSON_REAL:
		return json_real_value(v) != 0.0;
	case JSON_TRUE:
		return true;
	default:
		return false;
	}
}

static size_t utf8_count(const char *s, size_t len)
{
	size_t n = 0;
	for (size_t i = 0; i < len; i++)
		if (((unsigned char)s[i] & 0xc0) != 0x80)
			n++;
	return n;
}

bool tt_pyv_len(const json_t *v, size_t *out)
{
	if (!v)
		return false;
	if (json_is_string(v))
		*out = utf8_count(json_string_value(v), json_string_length(v));
	else if (json_is_array(v))
		*out = json_array_size(v);
	else if (json_is_object(v))
		*out = json_object_size(v);
	else
		return false;
	return true;
}

/* str.isprintable() for one code point, as far as a small table goes: the
 * controls, format characters, separators other than ' ', surrogates and
 * private use are not printable; everything else is taken as printable. */
static bool py_printable(uint32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad)
		return false;
	if ((cp >= 0x600 && cp <= 0x605) || cp == 0x61c || cp == 0x6dd || cp == 0x70f ||
	    cp == 0x890 || cp == 0x891 || cp == 0x8e2 || cp == 0x1680 || cp == 0x180e)
		return false;
	if ((cp >= 0x2000 && cp <= 0x200f) || (cp >= 0x2028 && cp <= 0x202f) ||
	    (cp >= 0x205f && cp <= 0x206f) || cp == 0x3000)
		return false;
	if ((cp >= 0xd800 && cp <= 0xf8ff) || cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) || (cp >= 0xfffe && cp <= 0xffff))
		return false;
	if (cp == 0x110bd || cp == 0x110cd || (cp >= 0x13430 && cp <= 0x1343f) ||
	    (cp >= 0x1bca0 && cp <= 0x1bca3) || (cp >= 0x1d173 && cp <= 0x1d17a) ||
	    cp == 0xe0001 || (cp >= 0xe0020 && cp <= 0xe007f) || cp >= 0xf0000)
		return false;
	return true;
}

/* repr() of a str. */
int tt_pyv_repr_str(tt_buf *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	bool has_sq = memchr(s, '\'', len) != NULL, has_dq = memchr(s, '"', len) != NULL;
	char quote = has_sq && !has_dq ? '"' : '\'';
	const unsigned char *p = (const unsigned char *)s;
	tt_buf_putc(out, quote);
	for (size_t i = 0; i < len;) {
		uint32_t cp;
		size_t n = tt_utf8_next(p + i, len - i, &cp);
		if (cp == (uint32_t)quote || cp == '\\') {
			tt_buf_putc(out, '\\');
			tt_buf_putc(out, (char)cp);
		} else if (cp == '\t') {
			tt_buf_puts(out, "\\t");
		} else if (cp == '\n') {
			tt_buf_puts(out, "\\n");
		} else if (cp == '\r') {
			tt_buf_puts(out, "\\r");
		} else if (py_printable(cp)) {
			tt_buf_put(out, p + i, n);
		} else if (cp <= 0xff) {
			tt_buf_printf(out, "\\x%c%c", hex[cp >> 4], hex[cp & 15]);
		} else if (cp <= 0xffff) {
			tt_buf_printf(out, "\\u%04" PRIx32, cp);
		} else {
			tt_buf_printf(out, "\\U%08" PRIx32, cp);
		}
		i += n;
	}
	return tt_buf_putc(out, quote);
}

static int py_scalar(tt_buf *out, const json_t *v)
{
	char tmp[TT_DOUBLE_REPR_MAX];
	if (!v || json_is_null(v))
		return tt_buf_puts(out, "None");
	switch (json_typeof(v)) {
	case JSON_TRUE:
		return tt_buf_puts(out, "True");
	case JSON_FALSE:
		return tt_buf_puts(out, "False");
	case JSON_INTEGER:
		return tt_buf_printf(out, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	case JSON_REAL: {
		double d = json_real_value(v);
		size_t n = tt_double_repr(tmp, d);
		if (n)
			return tt_buf_put(out, tmp, n);
		return tt_buf_puts(out, isnan(d) ? "nan" : d < 0 ? "-inf" : "inf");
	}
	default:
		return 0;
	}
}

static int py_repr_depth(tt_buf *out, const json_t *v, int depth)
{
	if (depth > TT_JSON_MAX_DEPTH)
		return tt_buf_puts(out, "...");
	if (json_is_string(v))
		return tt_pyv_repr_str(out, json_string_value(v), json_string_length(v));
	if (json_is_array(v)) {
		tt_buf_putc(out, '[');
		for (size_t i = 0; i < json_array_size(v); i++) {
			if (i)
				tt_buf_puts(out, ", ");
			py_repr_depth(out, json_array_get(v, i), depth + 1);
		}
		return tt_buf_putc(out, ']');
	}
	if (json_is_object(v)) {
		const char *k;
		size_t klen;
		json_t *x;
		bool first = true;
		tt_buf_putc(out, '{');
		json_object_keylen_foreach((json_t *)v, k, klen, x)
		{
			if (!first)
				tt_buf_puts(out, ", ");
			first = false;
			tt_pyv_repr_str(out, k, klen);
			tt_buf_puts(out, ": ");
			py_repr_depth(out, x, depth + 1);
		}
		return tt_buf_putc(out, '}');
	}
	return py_scalar(out, v);
}

int tt_pyv_repr(tt_buf *out, const json_t *v)
{
	return py_repr_depth(out, v, 0);
}

int tt_pyv_str(tt_buf *out, const json_t *v)
{
	if (v && json_is_string(v))
		return tt_buf_put(out, json_string_value(v), json_string_length(v));
	return tt_pyv_repr(out, v);
}

json_t *tt_pyv_list(const json_t *v)
{
	json_t *arr;
	if (!v)
		return NULL;
	if (json_is_array(v))
		return json_copy((json_t *)v);
	if (!(arr = json_array()))
		return NULL;
	if (json_is_object(v)) {
		const char *k;
		size_t klen;
		json_t *x;
		json_object_keylen_foreach((json_t *)v, k, klen, x)
		{
			(void)x;
			if (json_array_append_new(arr, json_stringn(k, klen)))
				goto fail;
		}
		return arr;
	}
	if (json_is_string(v)) {
		const unsigned char *s = (const unsigned char *)json_string_value(v);
		size_t len = json_string_length(v);
		for (size_t i = 0; i < len;) {
			uint32_t cp;
			size_t n = tt_utf8_next(s + i, len - i, &cp);
			if (json_array_append_new(arr, json_stringn((const char *)s + i, n)))
				goto fail;
			i += n;
		}
		return arr;
	}
fail:
	json_decref(arr);
	return NULL;
}

static bool is_number(const json_t *v)
{
	return json_is_number(v) || json_is_boolean(v);
}

static double num_value(const json_t *v)
{
	if (json_is_true(v))
		return 1;
	if (json_is_false(v))
		return 0;
	return json_number_value(v);
}

bool tt_pyv_eq(const json_t *v, const json_t *w)
{
	if (!v || !w)
		return (!v || json_is_null(v)) && (!w || json_is_null(w));
	if (is_number(v) && is_number(w)) {
		if (json_is_real(v) || json_is_real(w))
			return num_value(v) == num_value(w);
		long long a = json_is_integer(v) ? json_integer_value(v) : json_is_true(v);
		long long b = json_is_integer(w) ? json_integer_value(w) : json_is_true(w);
		return a == b;
	}
	if (json_typeof(v) != json_typeof(w))
		return false;
	switch (json_typeof(v)) {
	case JSON_NULL:
		return true;
	case JSON_STRING:
		return json_equal(v, w);
	case JSON_ARRAY:
		if (json_array_size(v) != json_array_size(w))
			return false;
		for (size_t i = 0; i < json_array_size(v); i++)
			if (!tt_pyv_eq(json_array_get(v, i), json_array_get(w, i)))
				return false;
		return true;
	case JSON_OBJECT: {
		const char *k;
		size_t klen;
		json_t *x;
		if (json_object_size(v) != json_object_size(w))
			return false;
		json_object_keylen_foreach((json_t *)v, k, klen, x)
		{
			json_t *y = json_object_getn(w, k, klen);
			if (!y || !tt_pyv_eq(x, y))
				return false;
		}
		return true;
	}
	default:
		return false;
	}
}

json_t *tt_pyv_dict(const json_t *v)
{
	if (!tt_pyv_truthy(v))
		return json_object();
	if (json_is_object(v))
		return json_copy((json_t *)v);
	if (!json_is_array(v))
		return NULL;
	/* dict() of an iterable of pairs; only string keys survive JSON. */
	json_t *d = json_object();
	for (size_t i = 0; d && i < json_array_size(v); i++) {
		json_t *pair = tt_pyv_list(json_array_get(v, i));
		json_t *k = pair ? json_array_get(pair, 0) : NULL;
		bool ok = pair && json_array_size(pair) == 2 && json_is_string(k) &&
			  !json_object_setn(d, json_string_value(k), json_string_length(k),
					    json_array_get(pair, 1));
		json_decref(pair);
		if (!ok) {
			json_decref(d);
			d = NULL;
		}
	}
	return d;
}

char *tt_pyv_str_dup(const json_t *v)
{
	tt_buf b = TT_BUF_INIT;
	if (tt_pyv_str(&b, v) != 0 || b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

char *tt_pyv_repr_dup(const char *s)
{
	tt_buf b = TT_BUF_INIT;
	s = s ? s : "";
	if (tt_pyv_repr_str(&b, s, strlen(s)) != 0 || b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}
