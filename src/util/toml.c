/*
 * util/toml.c - the TOML 1.0 tree and parser (the writer and the JSON
 * conversions are in tt_toml_write.c).
 *
 * The parser is a single pass over the text.  Before it runs, the whole
 * document is checked once for valid UTF-8 and for raw control characters:
 * TOML allows none of U+0000-U+0008, U+000A-U+001F (other than a newline)
 * and U+007F anywhere -- not in strings, comments or between tokens -- and a
 * carriage return only as part of CRLF, so the grammar below never has to
 * think about them again.
 *
 * Safety on hostile input: every table and array node has a depth (root 0)
 * and none may pass TOML_MAX_DEPTH, which bounds the recursion of the value
 * parser and of everything that later walks the tree; tables with many keys
 * get a hash index so lookups stay constant-time.
 */
#include "util/toml.h"

#include <limits.h>
#include <locale.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"

#define TOML_MAX_DEPTH 128

/* Parser bookkeeping on tables and arrays (see the redefinition rules). */
enum {
	F_IMPLICIT = 1, /* table created as the parent in a [a.b] header */
	F_DEFINED = 2,  /* table named by a [header] or a [[header]] element */
	F_DOTTED = 4,   /* table created by a dotted key (a.b = 1) */
	F_INLINE = 8,   /* inline table { ... }: closed once written */
	F_AOT = 16      /* array created by [[header]]; others are static */
};

typedef struct toml_entry {
	char *key;        /* NUL-terminated, but may hold NULs: see klen */
	size_t klen;
	tt_toml_value *val;
} toml_entry;

struct tt_toml_value {
	tt_toml_type type;
	int line, col;
	unsigned flags;
	int depth;
	union {
		struct {
			toml_entry *ents;
			size_t len, alloc;
			size_t *index;   /* open addressing, entry number + 1; NULL when small */
			size_t index_cap;
		} tab;
		struct {
			tt_toml_value **items;
			size_t len, alloc;
		} arr;
		struct {
			char *ptr;     /* string bytes, or the date/time text */
			size_t len;
		} str;
		int64_t i;
		double d;
		bool b;
	} u;
};

/* ------------------------------------------------------------------ */
/* The tree                                                            */
/* ------------------------------------------------------------------ */

static tt_toml_value *new_value(tt_toml_type t)
{
	tt_toml_value *v = tt_calloc(1, sizeof *v);
	if (v)
		v->type = t;
	return v;
}

void tt_toml_free(tt_toml_value *v)
{
	if (!v)
		return;
	switch (v->type) {
	case TT_TOML_TABLE:
		for (size_t i = 0; i < v->u.tab.len; i++) {
			free(v->u.tab.ents[i].key);
			tt_toml_free(v->u.tab.ents[i].val);
		}
		free(v->u.tab.ents);
		free(v->u.tab.index);
		break;
	case TT_TOML_ARRAY:
		for (size_t i = 0; i < v->u.arr.len; i++)
			tt_toml_free(v->u.arr.items[i]);
		free(v->u.arr.items);
		break;
	case TT_TOML_STRING:
	case TT_TOML_DATETIME:
	case TT_TOML_DATETIME_LOCAL:
	case TT_TOML_DATE_LOCAL:
	case TT_TOML_TIME_LOCAL:
		free(v->u.str.ptr);
		break;
	default:
		break;
	}
	free(v);
}

tt_toml_type tt_toml_type_of(const tt_toml_value *v) { return v->type; }

const char *tt_toml_type_name(tt_toml_type t)
{
	switch (t) {
	case TT_TOML_TABLE: return "table";
	case TT_TOML_ARRAY: return "array";
	case TT_TOML_STRING: return "string";
	case TT_TOML_INTEGER: return "integer";
	case TT_TOML_FLOAT: return "float";
	case TT_TOML_BOOLEAN: return "boolean";
	case TT_TOML_DATETIME: return "datetime";
	case TT_TOML_DATETIME_LOCAL: return "datetime-local";
	case TT_TOML_DATE_LOCAL: return "date-local";
	case TT_TOML_TIME_LOCAL: return "time-local";
	}
	return "unknown";
}

int tt_toml_line(const tt_toml_value *v) { return v ? v->line : 0; }
int tt_toml_col(const tt_toml_value *v) { return v ? v->col : 0; }

size_t tt_toml_table_len(const tt_toml_value *t)
{
	return t && t->type == TT_TOML_TABLE ? t->u.tab.len : 0;
}

const char *tt_toml_table_key(const tt_toml_value *t, size_t i)
{
	return tt_toml_table_key_n(t, i, NULL);
}

const char *tt_toml_table_key_n(const tt_toml_value *t, size_t i, size_t *len)
{
	if (!t || t->type != TT_TOML_TABLE || i >= t->u.tab.len)
		return NULL;
	if (len)
		*len = t->u.tab.ents[i].klen;
	return t->u.tab.ents[i].key;
}

tt_toml_value *tt_toml_table_at(const tt_toml_value *t, size_t i)
{
	if (!t || t->type != TT_TOML_TABLE || i >= t->u.tab.len)
		return NULL;
	return t->u.tab.ents[i].val;
}

static size_t key_hash(const char *k, size_t n)
{
	size_t h = 14695981039346656037u & SIZE_MAX; /* FNV-1a */
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)k[i];
		h *= (size_t)1099511628211u;
	}
	return h;
}

/* The index is built once a table has this many keys. */
#define INDEX_MIN 16

static int index_rebuild(tt_toml_value *t, size_t cap)
{
	size_t *ix = tt_calloc(cap, sizeof *ix);
	if (!ix)
		return -1;
	for (size_t i = 0; i < t->u.tab.len; i++) {
		const toml_entry *e = &t->u.tab.ents[i];
		size_t h = key_hash(e->key, e->klen) & (cap - 1);
		while (ix[h])
			h = (h + 1) & (cap - 1);
		ix[h] = i + 1;
	}
	free(t->u.tab.index);
	t->u.tab.index = ix;
	t->u.tab.index_cap = cap;
	return 0;
}

/* Entry number of key in t, or -1. */
static ptrdiff_t table_find(const tt_toml_value *t, const char *k, size_t n)
{
	const toml_entry *ents = t->u.tab.ents;
	if (t->u.tab.index) {
		size_t cap = t->u.tab.index_cap;
		size_t h = key_hash(k, n) & (cap - 1);
		for (; t->u.tab.index[h]; h = (h + 1) & (cap - 1)) {
			size_t i = t->u.tab.index[h] - 1;
			if (ents[i].klen == n && memcmp(ents[i].key, k, n) == 0)
				return (ptrdiff_t)i;
		}
		return -1;
	}
	for (size_t i = 0; i < t->u.tab.len; i++) {
		if (ents[i].klen == n && memcmp(ents[i].key, k, n) == 0)
			return (ptrdiff_t)i;
	}
	return -1;
}

static tt_toml_value *table_getn(const tt_toml_value *t, const char *k, size_t n)
{
	ptrdiff_t i = table_find(t, k, n);
	return i < 0 ? NULL : t->u.tab.ents[i].val;
}

tt_toml_value *tt_toml_table_get(const tt_toml_value *t, const char *key)
{
	if (!t || t->type != TT_TOML_TABLE || !key)
		return NULL;
	return table_getn(t, key, strlen(key));
}

/* Append a new key (the caller checked it is absent); takes key and v. */
static int table_append(tt_toml_value *t, char *key, size_t klen, tt_toml_value *v)
{
	size_t n = t->u.tab.len;
	if (TT_ARRAY_GROW(t->u.tab.ents, t->u.tab.alloc, n + 1) != 0)
		return -1;
	/* Keep the index at most half full; build it when the table grows. */
	if (n + 1 >= INDEX_MIN && (n + 1) * 2 > t->u.tab.index_cap) {
		size_t cap = t->u.tab.index_cap ? t->u.tab.index_cap * 2 : 64;
		if (cap < (n + 1) * 2 || index_rebuild(t, cap) != 0)
			return -1;
	}
	t->u.tab.ents[n] = (toml_entry){ key, klen, v };
	t->u.tab.len = n + 1;
	if (t->u.tab.index) {
		size_t cap = t->u.tab.index_cap;
		size_t h = key_hash(key, klen) & (cap - 1);
		while (t->u.tab.index[h])
			h = (h + 1) & (cap - 1);
		t->u.tab.index[h] = n + 1;
	}
	return 0;
}

int tt_toml_table_setn(tt_toml_value *t, const char *key, size_t klen, tt_toml_value *v)
{
	if (!t || t->type != TT_TOML_TABLE || !key || !v)
		return -1;
	ptrdiff_t i = table_find(t, key, klen);
	if (i >= 0) {
		tt_toml_free(t->u.tab.ents[i].val);
		t->u.tab.ents[i].val = v;
		return 0;
	}
	char *k = tt_malloc(klen + 1);
	if (!k)
		return -1;
	memcpy(k, key, klen);
	k[klen] = '\0';
	if (table_append(t, k, klen, v) != 0) {
		free(k);
		return -1;
	}
	return 0;
}

int tt_toml_table_set(tt_toml_value *t, const char *key, tt_toml_value *v)
{
	return tt_toml_table_setn(t, key, key ? strlen(key) : 0, v);
}

size_t tt_toml_array_len(const tt_toml_value *a)
{
	return a && a->type == TT_TOML_ARRAY ? a->u.arr.len : 0;
}

tt_toml_value *tt_toml_array_at(const tt_toml_value *a, size_t i)
{
	if (!a || a->type != TT_TOML_ARRAY || i >= a->u.arr.len)
		return NULL;
	return a->u.arr.items[i];
}

int tt_toml_array_push(tt_toml_value *a, tt_toml_value *v)
{
	if (!a || a->type != TT_TOML_ARRAY || !v)
		return -1;
	if (TT_ARRAY_GROW(a->u.arr.items, a->u.arr.alloc, a->u.arr.len + 1) != 0)
		return -1;
	a->u.arr.items[a->u.arr.len++] = v;
	return 0;
}

const char *tt_toml_string(const tt_toml_value *v, size_t *len)
{
	if (len)
		*len = v->u.str.len;
	return v->u.str.ptr;
}

int64_t tt_toml_integer(const tt_toml_value *v) { return v->u.i; }
double tt_toml_float(const tt_toml_value *v) { return v->u.d; }
bool tt_toml_boolean(const tt_toml_value *v) { return v->u.b; }
const char *tt_toml_datetime(const tt_toml_value *v) { return v->u.str.ptr; }

tt_toml_value *tt_toml_new_table(void) { return new_value(TT_TOML_TABLE); }
tt_toml_value *tt_toml_new_array(void) { return new_value(TT_TOML_ARRAY); }

tt_toml_value *tt_toml_new_string(const char *s, size_t len)
{
	tt_toml_value *v = new_value(TT_TOML_STRING);
	char *p = tt_malloc(len + 1);
	if (!v || !p) {
		free(v);
		free(p);
		return NULL;
	}
	if (len)
		memcpy(p, s, len);
	p[len] = '\0';
	v->u.str.ptr = p;
	v->u.str.len = len;
	return v;
}

tt_toml_value *tt_toml_new_integer(int64_t i)
{
	tt_toml_value *v = new_value(TT_TOML_INTEGER);
	if (v)
		v->u.i = i;
	return v;
}

tt_toml_value *tt_toml_new_float(double d)
{
	tt_toml_value *v = new_value(TT_TOML_FLOAT);
	if (v)
		v->u.d = d;
	return v;
}

tt_toml_value *tt_toml_new_boolean(bool b)
{
	tt_toml_value *v = new_value(TT_TOML_BOOLEAN);
	if (v)
		v->u.b = b;
	return v;
}

tt_toml_value *tt_toml_new_datetime(tt_toml_type t, const char *text)
{
	if (t != TT_TOML_DATETIME && t != TT_TOML_DATETIME_LOCAL && t != TT_TOML_DATE_LOCAL &&
	    t != TT_TOML_TIME_LOCAL)
		return NULL;
	tt_toml_value *v = tt_toml_new_string(text, strlen(text));
	if (v)
		v->type = t;
	return v;
}

bool tt_toml_equal(const tt_toml_value *a, const tt_toml_value *b)
{
	if (!a || !b || a->type != b->type)
		return a == b;
	switch (a->type) {
	case TT_TOML_TABLE:
		if (a->u.tab.len != b->u.tab.len)
			return false;
		for (size_t i = 0; i < a->u.tab.len; i++) {
			const toml_entry *e = &a->u.tab.ents[i];
			if (!tt_toml_equal(e->val, table_getn(b, e->key, e->klen)))
				return false;
		}
		return true;
	case TT_TOML_ARRAY:
		if (a->u.arr.len != b->u.arr.len)
			return false;
		for (size_t i = 0; i < a->u.arr.len; i++) {
			if (!tt_toml_equal(a->u.arr.items[i], b->u.arr.items[i]))
				return false;
		}
		return true;
	case TT_TOML_INTEGER:
		return a->u.i == b->u.i;
	case TT_TOML_FLOAT:
		if (isnan(a->u.d) || isnan(b->u.d))
			return isnan(a->u.d) && isnan(b->u.d);
		return a->u.d == b->u.d && !signbit(a->u.d) == !signbit(b->u.d);
	case TT_TOML_BOOLEAN:
		return a->u.b == b->u.b;
	default: /* strings and date/times */
		return a->u.str.len == b->u.str.len &&
		       memcmp(a->u.str.ptr, b->u.str.ptr, a->u.str.len) == 0;
	}
}

/* ------------------------------------------------------------------ */
/* Parser state and errors                                             */
/* ------------------------------------------------------------------ */

typedef struct parser {
	const unsigned char *s;
	size_t len, pos;
	int line, col;           /* of s[pos] */
	const char *file;
	tt_error *err;
	tt_buf sbuf;             /* scratch: the string being decoded */
	tt_toml_value *root;
	tt_toml_value *cur;         /* the table key/value pairs go to */
} parser;

/* One part of a dotted key. */
typedef struct keypart {
	char *s;
	size_t len;
	int line, col;
} keypart;

typedef struct keypath {
	keypart *v;
	size_t n, alloc;
} keypath;

static void keypath_free(keypath *k)
{
	for (size_t i = 0; i < k->n; i++)
		free(k->v[i].s);
	free(k->v);
	k->v = NULL;
	k->n = k->alloc = 0;
}

static int peek(const parser *p)
{
	return p->pos < p->len ? p->s[p->pos] : -1;
}

static int peek_at(const parser *p, size_t off)
{
	return p->pos + off < p->len ? p->s[p->pos + off] : -1;
}

/* Consume one byte; columns count characters, so continuation bytes of a
 * UTF-8 sequence do not advance the column. */
static void adv(parser *p)
{
	unsigned char c = p->s[p->pos++];
	if (c == '\n') {
		if (p->line < INT_MAX)
			p->line++;
		p->col = 1;
	} else if ((c & 0xC0) != 0x80 && p->col < INT_MAX) {
		p->col++;
	}
}

static void adv_n(parser *p, size_t n)
{
	while (n-- > 0 && p->pos < p->len)
		adv(p);
}

static int fail_at(parser *p, int line, int col, const char *fmt, ...) TT_PRINTF(4, 5);
static int fail_at(parser *p, int line, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *what = tt_vasprintf(fmt, ap);
	va_end(ap);
	if (!what)
		return tt_error_oom(p->err);
	tt_error_set(p->err, TT_EPARSE, "%s:%d:%d: %s", p->file, line, col, what);
	free(what);
	return TT_EPARSE;
}

#define fail_here(p, ...) fail_at((p), (p)->line, (p)->col, __VA_ARGS__)

static int oom(parser *p)
{
	return tt_error_oom(p->err);
}

/* What is at the current position, for "expected X, found Y". */
static const char *found(const parser *p, char *buf, size_t size)
{
	int c = peek(p);
	if (c < 0)
		return "end of input";
	if (c == '\n' || (c == '\r' && peek_at(p, 1) == '\n'))
		return "end of line";
	size_t n = 1;
	if (c >= 0xC0)
		n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : 2;
	if (n > p->len - p->pos)
		n = p->len - p->pos;
	snprintf(buf, size, "'%.*s'", (int)n, (const char *)p->s + p->pos);
	return buf;
}

/* ---- spelling keys and strings as the writer does (toml.h) ---- */

/* s as a basic string: \" \\ \b \t \n \f \r, other controls and DEL
 * as \u00xx in lower-case hex, everything else (non-ASCII too) as is. */
void tt_toml_write_string(tt_buf *out, const char *s, size_t n)
{
	tt_buf_putc(out, '"');
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		switch (c) {
		case '"': tt_buf_puts(out, "\\\""); break;
		case '\\': tt_buf_puts(out, "\\\\"); break;
		case '\b': tt_buf_puts(out, "\\b"); break;
		case '\t': tt_buf_puts(out, "\\t"); break;
		case '\n': tt_buf_puts(out, "\\n"); break;
		case '\f': tt_buf_puts(out, "\\f"); break;
		case '\r': tt_buf_puts(out, "\\r"); break;
		default:
			if (c < 0x20 || c == 0x7F)
				tt_buf_printf(out, "\\u%04x", c);
			else
				tt_buf_putc(out, (char)c);
		}
	}
	tt_buf_putc(out, '"');
}

void tt_toml_write_key(tt_buf *out, const char *k, size_t n)
{
	bool bare = n > 0;
	for (size_t i = 0; i < n && bare; i++) {
		unsigned char c = (unsigned char)k[i];
		bare = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		       (c >= '0' && c <= '9') || c == '_' || c == '-';
	}
	if (bare)
		tt_buf_put(out, k, n);
	else
		tt_toml_write_string(out, k, n);
}

/* The dotted key parts [0, upto] as written, for messages. */
static char *key_text(const keypath *k, size_t upto)
{
	tt_buf b = TT_BUF_INIT;
	for (size_t i = 0; i <= upto && i < k->n; i++) {
		if (i)
			tt_buf_putc(&b, '.');
		tt_toml_write_key(&b, k->v[i].s, k->v[i].len);
	}
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

/* "<noun> <key parts 0..i> <what>" at key part i. */
static int fail_key(parser *p, const keypath *k, size_t i, const char *noun, const char *what,
		    const char *arg)
{
	char *kt = key_text(k, i);
	if (!kt)
		return oom(p);
	int rc = fail_at(p, k->v[i].line, k->v[i].col, "%s %s %s%s", noun, kt, what,
			 arg ? arg : "");
	free(kt);
	return rc;
}

/* What an existing value is, for "... is already defined as ...". */
static const char *what_is(const tt_toml_value *v)
{
	switch (v->type) {
	case TT_TOML_TABLE:
		return v->flags & F_INLINE ? "an inline table" : "a table";
	case TT_TOML_ARRAY:
		return v->flags & F_AOT ? "an array of tables" : "an array";
	case TT_TOML_STRING: return "a string";
	case TT_TOML_INTEGER: return "an integer";
	case TT_TOML_FLOAT: return "a float";
	case TT_TOML_BOOLEAN: return "a boolean";
	default: return "a date/time";
	}
}

/* ------------------------------------------------------------------ */
/* The whole-document check: UTF-8 and control characters             */
/* ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence at s (n bytes left), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	size_t len;
	uint32_t cp, min;
	if (c < 0x80)
		return 1;
	if (c >= 0xC2 && c <= 0xDF) {
		len = 2, cp = c & 0x1F, min = 0x80;
	} else if (c >= 0xE0 && c <= 0xEF) {
		len = 3, cp = c & 0x0F, min = 0x800;
	} else if (c >= 0xF0 && c <= 0xF4) {
		len = 4, cp = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	/* No overlong forms, no surrogates, nothing past U+10FFFF. */
	if (cp < min || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return 0;
	return len;
}

static int check_text(parser *p)
{
	while (p->pos < p->len) {
		unsigned char c = p->s[p->pos];
		if (c >= 0x80) {
			size_t n = utf8_seq(p->s + p->pos, p->len - p->pos);
			if (!n)
				return fail_here(p, "invalid UTF-8 (byte 0x%02X)", c);
			adv_n(p, n);
			continue;
		}
		if (c == '\r' && peek_at(p, 1) != '\n')
			return fail_here(p, "carriage return not followed by a line feed");
		if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r') || c == 0x7F)
			return fail_here(p, "control character U+%04X is not allowed", c);
		adv(p);
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* Whitespace, comments, newlines                                      */
/* ------------------------------------------------------------------ */

static void skip_ws(parser *p)
{
	while (peek(p) == ' ' || peek(p) == '\t')
		adv(p);
}

static bool at_newline(const parser *p)
{
	return peek(p) == '\n' || (peek(p) == '\r' && peek_at(p, 1) == '\n');
}

static void skip_newline(parser *p)
{
	if (peek(p) == '\r')
		adv(p);
	adv(p);
}

/* A comment runs to the end of the line (the newline is not consumed). */
static void skip_comment(parser *p)
{
	while (p->pos < p->len && !at_newline(p))
		adv(p);
}

/* Whitespace, newlines and comments, as allowed inside arrays. */
static void skip_ws_nl(parser *p)
{
	for (;;) {
		skip_ws(p);
		if (peek(p) == '#')
			skip_comment(p);
		if (!at_newline(p))
			return;
		skip_newline(p);
	}
}

/* ------------------------------------------------------------------ */
/* Strings                                                             */
/* ------------------------------------------------------------------ */

static void put_utf8(tt_buf *b, uint32_t cp)
{
	char u[4];
	tt_buf_put(b, u, tt_utf8_put(u, cp));
}

/* An escape sequence; p is at the backslash. */
static int parse_escape(parser *p)
{
	int line = p->line, col = p->col;
	adv(p);
	int c = peek(p);
	const char *simple = NULL;
	switch (c) {
	case 'b': simple = "\b"; break;
	case 't': simple = "\t"; break;
	case 'n': simple = "\n"; break;
	case 'f': simple = "\f"; break;
	case 'r': simple = "\r"; break;
	case '"': simple = "\""; break;
	case '\\': simple = "\\"; break;
	case 'u':
	case 'U':
		break;
	default:
		if (c > ' ' && c < 0x7F)
			return fail_at(p, line, col, "invalid escape sequence \\%c", c);
		return fail_at(p, line, col, "invalid escape sequence (backslash before %s)",
			       c < 0 || c == '\n' || c == '\r' ? "the end of the line"
							     : "a blank or non-ASCII character");
	}
	adv(p);
	if (simple) {
		tt_buf_putc(&p->sbuf, simple[0]);
		return 0;
	}
	int digits = c == 'u' ? 4 : 8;
	uint32_t cp = 0;
	for (int i = 0; i < digits; i++) {
		int h = tt_hex_digit(peek(p));
		if (h < 0)
			return fail_at(p, line, col, "\\%c needs %d hex digits", c, digits);
		cp = cp << 4 | (uint32_t)h;
		adv(p);
	}
	/* Only Unicode scalar values: no surrogates, nothing past U+10FFFF. */
	if ((cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)
		return fail_at(p, line, col, "\\%c%0*X is not a Unicode scalar value", c,
			       digits, (unsigned)cp);
	put_utf8(&p->sbuf, cp);
	return 0;
}

/* Copy one (valid, checked) UTF-8 character to the scratch buffer. */
static void copy_char(parser *p)
{
	size_t n = utf8_seq(p->s + p->pos, p->len - p->pos);
	tt_buf_put(&p->sbuf, p->s + p->pos, n);
	adv_n(p, n);
}

/* A single-line basic "..." or literal '...' string; p is at the quote. */
static int parse_string1(parser *p, char q)
{
	int line = p->line, col = p->col;
	adv(p);
	for (;;) {
		int c = peek(p);
		if (c < 0 || at_newline(p))
			return fail_at(p, line, col, "unterminated string");
		if (c == q) {
			adv(p);
			return 0;
		}
		if (c == '\\' && q == '"') {
			int rc = parse_escape(p);
			if (rc)
				return rc;
			continue;
		}
		copy_char(p);
	}
}

/*
 * A multi-line string """...""" or '''...'''; p is at the first quote.  A
 * newline right after the opening delimiter is dropped; CRLF becomes LF; in
 * basic strings a backslash that is the last non-blank on its line eats all
 * whitespace and newlines up to the next other character.  Up to two quotes
 * may sit right before the closing delimiter (""""" is '""' and the end).
 */
static int parse_string3(parser *p, char q)
{
	int line = p->line, col = p->col;
	adv_n(p, 3);
	if (at_newline(p))
		skip_newline(p);
	for (;;) {
		int c = peek(p);
		if (c < 0)
			return fail_at(p, line, col, "unterminated multi-line string");
		if (c == q && peek_at(p, 1) == q && peek_at(p, 2) == q) {
			size_t run = 3;
			while (run < 5 && peek_at(p, run) == q)
				run++;
			for (size_t i = 3; i < run; i++)
				tt_buf_putc(&p->sbuf, q);
			adv_n(p, run);
			return 0;
		}
		if (at_newline(p)) {
			skip_newline(p);
			tt_buf_putc(&p->sbuf, '\n');
			continue;
		}
		if (c == '\\' && q == '"') {
			/* Line-ending backslash: blanks, then a newline. */
			size_t i = 1;
			while (peek_at(p, i) == ' ' || peek_at(p, i) == '\t')
				i++;
			if (peek_at(p, i) == '\n' || (peek_at(p, i) == '\r' && peek_at(p, i + 1) == '\n')) {
				adv_n(p, i);
				while (peek(p) == ' ' || peek(p) == '\t' || at_newline(p))
					adv(p);
				continue;
			}
			int rc = parse_escape(p);
			if (rc)
				return rc;
			continue;
		}
		copy_char(p);
	}
}

/* Any string at p into p->sbuf (reset first). */
static int parse_string(parser *p, bool allow_multiline)
{
	tt_buf_reset(&p->sbuf);
	int q = peek(p);
	int rc;
	if (peek_at(p, 1) == q && peek_at(p, 2) == q && allow_multiline)
		rc = parse_string3(p, (char)q);
	else
		rc = parse_string1(p, (char)q);
	if (!rc && p->sbuf.failed)
		rc = oom(p);
	return rc;
}

/* ------------------------------------------------------------------ */
/* Keys                                                                */
/* ------------------------------------------------------------------ */

/* A NUL-terminated copy of n bytes that may themselves hold NULs. */
static char *dup_bytes(const char *s, size_t n)
{
	char *d = tt_malloc(n + 1);
	if (d) {
		if (n)
			memcpy(d, s, n);
		d[n] = '\0';
	}
	return d;
}

static bool is_bare(int c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
	       c == '_' || c == '-';
}

/* A dotted key (whitespace allowed around the dots) into k. */
static int parse_key(parser *p, keypath *k)
{
	for (;;) {
		skip_ws(p);
		keypart part = { NULL, 0, p->line, p->col };
		int c = peek(p);
		if (c == '"' || c == '\'') {
			int rc = parse_string(p, false);
			if (rc)
				return rc;
			part.len = p->sbuf.len;
			part.s = dup_bytes(p->sbuf.ptr, part.len);
		} else if (is_bare(c)) {
			size_t start = p->pos;
			while (is_bare(peek(p)))
				adv(p);
			part.len = p->pos - start;
			part.s = dup_bytes((const char *)p->s + start, part.len);
		} else {
			char fb[8];
			return fail_here(p, "expected a key, found %s", found(p, fb, sizeof fb));
		}
		if (!part.s)
			return oom(p);
		if (k->n >= TOML_MAX_DEPTH) {
			free(part.s);
			return fail_at(p, part.line, part.col, "key has too many parts");
		}
		if (TT_ARRAY_GROW(k->v, k->alloc, k->n + 1) != 0) {
			free(part.s);
			return oom(p);
		}
		k->v[k->n++] = part;
		skip_ws(p);
		if (peek(p) != '.')
			return 0;
		adv(p);
	}
}

/* ------------------------------------------------------------------ */
/* Numbers, booleans, dates and times                                  */
/* ------------------------------------------------------------------ */

static bool is_digit(int c) { return c >= '0' && c <= '9'; }

/* The characters a bare value (number, boolean, date/time) is made of. */
static bool is_token(int c)
{
	return is_bare(c) || c == '+' || c == '.' || c == ':';
}

static int digit_in(int c, int base)
{
	int d = tt_hex_digit(c);
	return d >= 0 && d < base ? d : -1;
}

/*
 * Digits in base with single underscores between them: d(_?d)*.  Returns
 * the characters used (0 when t does not start with a digit); *bad is set
 * when an underscore is not followed by a digit.
 */
static size_t scan_digits(const char *t, size_t n, int base, bool *bad)
{
	size_t i = 0;
	if (i >= n || digit_in(t[i], base) < 0)
		return 0;
	i++;
	while (i < n) {
		if (t[i] == '_') {
			if (i + 1 >= n || digit_in(t[i + 1], base) < 0) {
				*bad = true;
				return i;
			}
			i += 2;
		} else if (digit_in(t[i], base) >= 0) {
			i++;
		} else {
			break;
		}
	}
	return i;
}

static tt_toml_value *number_value(parser *p, const char *t, size_t n, int line, int col)
{
	bool bad = false;
	int failed = 0;
	tt_toml_value *v = NULL;
	char *clean = NULL;

	if (n > 2 && t[0] == '0' && (t[1] == 'x' || t[1] == 'o' || t[1] == 'b')) {
		/* Hex, octal, binary: no sign, at most INT64_MAX. */
		int base = t[1] == 'x' ? 16 : t[1] == 'o' ? 8 : 2;
		size_t used = scan_digits(t + 2, n - 2, base, &bad);
		if (!used || bad || used != n - 2) {
			failed = fail_at(p, line, col, "invalid %s integer '%.*s'",
				base == 16 ? "hexadecimal" : base == 8 ? "octal" : "binary", (int)n, t);
			goto done;
		}
		uint64_t u = 0;
		for (size_t i = 2; i < n; i++) {
			if (t[i] == '_')
				continue;
			int d = digit_in(t[i], base);
			if (u > ((uint64_t)INT64_MAX - (uint64_t)d) / (uint64_t)base) {
				failed = fail_at(p, line, col, "integer '%.*s' does not fit in 64 bits", (int)n, t);
				goto done;
			}
			u = u * (uint64_t)base + (uint64_t)d;
		}
		v = tt_toml_new_integer((int64_t)u);
		goto done;
	}

	/* Decimal: [+-] int-part [. digits] [e [+-] digits]. */
	size_t i = 0;
	bool neg = false;
	if (i < n && (t[i] == '+' || t[i] == '-'))
		neg = t[i++] == '-';
	size_t int_start = i;
	size_t used = scan_digits(t + i, n - i, 10, &bad);
	if (!used || bad)
		goto invalid;
	/* No leading zeros: "0" alone, or a non-zero first digit. */
	if (t[int_start] == '0' && used > 1) {
		failed = fail_at(p, line, col, "leading zeros are not allowed in '%.*s'", (int)n, t);
		goto done;
	}
	i += used;
	bool is_float = false;
	if (i < n && t[i] == '.') {
		i++;
		used = scan_digits(t + i, n - i, 10, &bad);
		if (!used || bad)
			goto invalid;
		i += used;
		is_float = true;
	}
	if (i < n && (t[i] == 'e' || t[i] == 'E')) {
		i++;
		if (i < n && (t[i] == '+' || t[i] == '-'))
			i++;
		used = scan_digits(t + i, n - i, 10, &bad);
		if (!used || bad)
			goto invalid;
		i += used;
		is_float = true;
	}
	if (i != n)
		goto invalid;

	if (!is_float) {
		uint64_t u = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
		for (size_t j = int_start; j < n; j++) {
			if (t[j] == '_')
				continue;
			uint64_t d = (uint64_t)(t[j] - '0');
			if (u > (limit - d) / 10) {
				failed = fail_at(p, line, col, "integer '%.*s' does not fit in 64 bits", (int)n, t);
				goto done;
			}
			u = u * 10 + d;
		}
		/* -2^63 has no positive counterpart: negate in unsigned space. */
		v = tt_toml_new_integer(neg ? (int64_t)(0 - u) : (int64_t)u);
		goto done;
	}

	/* strtod honours the locale's decimal point: give it that one. */
	clean = tt_malloc(n + 1);
	if (!clean)
		goto done;
	char dp = localeconv()->decimal_point[0];
	size_t m = 0;
	for (size_t j = 0; j < n; j++) {
		if (t[j] == '_')
			continue;
		clean[m++] = t[j] == '.' && dp ? dp : t[j];
	}
	clean[m] = '\0';
	v = tt_toml_new_float(strtod(clean, NULL));
	goto done;

invalid:
	failed = fail_at(p, line, col, "invalid value '%.*s'", (int)n, t);
done:
	free(clean);
	if (!v && !failed)
		oom(p);
	return v;
}

static int two(const char *t) { return (t[0] - '0') * 10 + (t[1] - '0'); }

static bool all_digits(const char *t, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(t[i]))
			return false;
	}
	return true;
}

static bool looks_like_date(const char *t, size_t n)
{
	return n >= 5 && all_digits(t, 4) && t[4] == '-';
}

static bool looks_like_time(const char *t, size_t n)
{
	return n >= 3 && all_digits(t, 2) && t[2] == ':';
}

static int days_in_month(int y, int m)
{
	static const int days[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
	return m == 2 && leap ? 29 : days[m - 1];
}

/* YYYY-MM-DD at t (exactly 10 characters); NULL or an error text. */
static const char *check_date(const char *t, size_t n)
{
	if (n != 10 || !all_digits(t, 4) || t[4] != '-' || !all_digits(t + 5, 2) ||
	    t[7] != '-' || !all_digits(t + 8, 2))
		return "malformed date (want YYYY-MM-DD)";
	int y = (t[0] - '0') * 1000 + (t[1] - '0') * 100 + two(t + 2);
	int m = two(t + 5), d = two(t + 8);
	if (m < 1 || m > 12)
		return "month out of range";
	if (d < 1 || d > days_in_month(y, m))
		return "day out of range for the month";
	return NULL;
}

/*
 * HH:MM:SS[.frac] at the start of t; *used gets its length.  Seconds stop
 * at 59: RFC 3339 allows a leap second 60, but neither Python (tether-vcs)
 * nor most TOML readers accept one, so a file using it would not travel.
 */
static const char *check_time(const char *t, size_t n, size_t *used)
{
	if (n < 8 || !all_digits(t, 2) || t[2] != ':' || !all_digits(t + 3, 2) || t[5] != ':' ||
	    !all_digits(t + 6, 2))
		return "malformed time (want HH:MM:SS)";
	if (two(t) > 23)
		return "hour out of range";
	if (two(t + 3) > 59)
		return "minute out of range";
	if (two(t + 6) > 59)
		return "second out of range";
	size_t i = 8;
	if (i < n && t[i] == '.') {
		i++;
		size_t f = i;
		while (i < n && is_digit(t[i]))
			i++;
		if (i == f)
			return "fraction of a second needs digits";
	}
	*used = i;
	return NULL;
}

/* Z or +HH:MM / -HH:MM, the whole of t. */
static const char *check_offset(const char *t, size_t n)
{
	if (n == 1 && (t[0] == 'Z' || t[0] == 'z'))
		return NULL;
	if (n != 6 || (t[0] != '+' && t[0] != '-') || !all_digits(t + 1, 2) || t[3] != ':' ||
	    !all_digits(t + 4, 2))
		return "malformed time zone offset";
	if (two(t + 1) > 23 || two(t + 4) > 59)
		return "time zone offset out of range";
	return NULL;
}

/* What kind of date/time text is (already normalised); NULL or an error. */
static const char *classify_datetime(const char *text, size_t n, tt_toml_type *type)
{
	const char *why;
	size_t used = 0;
	if (looks_like_time(text, n)) {
		*type = TT_TOML_TIME_LOCAL;
		why = check_time(text, n, &used);
		return why ? why : used != n ? "unexpected text after the time" : NULL;
	}
	if ((why = check_date(text, n < 10 ? n : 10)) != NULL)
		return why;
	*type = TT_TOML_DATE_LOCAL;
	if (n == 10)
		return NULL;
	if (text[10] != 'T')
		return "expected 'T' or a space between date and time";
	if ((why = check_time(text + 11, n - 11, &used)) != NULL)
		return why;
	*type = TT_TOML_DATETIME_LOCAL;
	if (used == n - 11)
		return NULL;
	*type = TT_TOML_DATETIME;
	return check_offset(text + 11 + used, n - 11 - used);
}

/*
 * A date, time or date-time; t (n chars) is the token at line:col.  A date
 * followed by a space and a time is one value ("1979-05-27 07:32:00"): p
 * is right after the date then, and the time is taken from the input.  The
 * stored text always joins date and time with 'T' and spells UTC 'Z'.
 */
static tt_toml_value *datetime_value(parser *p, const char *t, size_t n, int line, int col)
{
	tt_buf text = TT_BUF_INIT;
	tt_toml_value *v = NULL;
	tt_toml_type type = TT_TOML_DATE_LOCAL;

	if (n == 10 && looks_like_date(t, n) && peek(p) == ' ' && is_digit(peek_at(p, 1)) &&
	    is_digit(peek_at(p, 2)) && peek_at(p, 3) == ':') {
		adv(p);
		size_t start = p->pos;
		while (is_token(peek(p)))
			adv(p);
		tt_buf_put(&text, t, n);
		tt_buf_putc(&text, 'T');
		tt_buf_put(&text, p->s + start, p->pos - start);
	} else {
		tt_buf_put(&text, t, n);
	}
	if (text.failed) {
		oom(p);
		goto done;
	}
	if (text.len > 10 && looks_like_date(text.ptr, text.len) && text.ptr[10] == 't')
		text.ptr[10] = 'T';
	const char *why = classify_datetime(text.ptr, text.len, &type);
	if (why) {
		fail_at(p, line, col, "invalid date/time '%s': %s", text.ptr, why);
		goto done;
	}
	if (type == TT_TOML_DATETIME && text.ptr[text.len - 1] == 'z')
		text.ptr[text.len - 1] = 'Z';
	v = tt_toml_new_datetime(type, text.ptr);
	if (!v)
		oom(p);
done:
	tt_buf_release(&text);
	return v;
}

/* A bare value: boolean, number, inf/nan, date or time. */
static tt_toml_value *parse_bare(parser *p)
{
	int line = p->line, col = p->col;
	size_t start = p->pos;
	while (is_token(peek(p)))
		adv(p);
	const char *t = (const char *)p->s + start;
	size_t n = p->pos - start;
	tt_toml_value *v = NULL;

	if (n == 0) {
		char fb[8];
		fail_here(p, "expected a value, found %s", found(p, fb, sizeof fb));
		return NULL;
	}
	if ((n == 4 && memcmp(t, "true", 4) == 0) || (n == 5 && memcmp(t, "false", 5) == 0)) {
		v = tt_toml_new_boolean(n == 4);
	} else {
		const char *u = t;
		size_t un = n;
		if (*u == '+' || *u == '-')
			u++, un--;
		if (un == 3 && (memcmp(u, "inf", 3) == 0 || memcmp(u, "nan", 3) == 0)) {
			double d = u[0] == 'i' ? HUGE_VAL : NAN;
			v = tt_toml_new_float(t[0] == '-' ? -d : d);
		} else if (looks_like_date(t, n) || looks_like_time(t, n)) {
			return datetime_value(p, t, n, line, col);
		} else {
			return number_value(p, t, n, line, col);
		}
	}
	if (!v)
		oom(p);
	return v;
}

/* ------------------------------------------------------------------ */
/* Values, arrays, inline tables                                       */
/* ------------------------------------------------------------------ */

static tt_toml_value *parse_value(parser *p, int depth);
static int put_keyval(parser *p, tt_toml_value *tab, keypath *k);

static int check_depth(parser *p, int depth, int line, int col)
{
	if (depth > TOML_MAX_DEPTH)
		return fail_at(p, line, col, "nesting deeper than %d levels", TOML_MAX_DEPTH);
	return 0;
}

/* [ v, v, ... ] with newlines and comments allowed between the values and
 * an optional trailing comma. */
static tt_toml_value *parse_array(parser *p, int depth)
{
	tt_toml_value *a = NULL;
	bool ok = false;
	char fb[8];

	if (check_depth(p, depth, p->line, p->col))
		goto done;
	a = tt_toml_new_array();
	if (!a) {
		oom(p);
		goto done;
	}
	a->depth = depth;
	adv(p); /* [ */
	for (;;) {
		skip_ws_nl(p);
		if (peek(p) == ']')
			break;
		int vl = p->line, vc = p->col;
		tt_toml_value *v = parse_value(p, depth + 1);
		if (!v)
			goto done;
		v->line = vl, v->col = vc;
		if (tt_toml_array_push(a, v) != 0) {
			tt_toml_free(v);
			oom(p);
			goto done;
		}
		skip_ws_nl(p);
		if (peek(p) == ',') {
			adv(p);
			continue;
		}
		if (peek(p) == ']')
			break;
		fail_here(p, "expected ',' or ']' in array, found %s", found(p, fb, sizeof fb));
		goto done;
	}
	adv(p); /* ] */
	ok = true;
done:
	if (!ok) {
		tt_toml_free(a);
		a = NULL;
	}
	return a;
}

/* { k = v, ... } on one line, no trailing comma (TOML 1.0). */
static tt_toml_value *parse_inline_table(parser *p, int depth)
{
	tt_toml_value *t = NULL;
	keypath k = { 0 };
	bool ok = false;
	char fb[8];

	if (check_depth(p, depth, p->line, p->col))
		goto done;
	t = tt_toml_new_table();
	if (!t) {
		oom(p);
		goto done;
	}
	t->depth = depth;
	t->flags = F_INLINE;
	adv(p); /* { */
	skip_ws(p);
	while (peek(p) != '}') {
		if (parse_key(p, &k) || put_keyval(p, t, &k))
			goto done;
		keypath_free(&k);
		skip_ws(p);
		if (peek(p) == '}')
			break;
		if (peek(p) != ',') {
			fail_here(p, "expected ',' or '}' in inline table, found %s",
				  found(p, fb, sizeof fb));
			goto done;
		}
		adv(p);
		/* A key must follow: no trailing comma in TOML 1.0. */
		skip_ws(p);
		if (peek(p) == '}') {
			fail_here(p, "expected a key, found %s", found(p, fb, sizeof fb));
			goto done;
		}
	}
	adv(p); /* } */
	ok = true;
done:
	keypath_free(&k);
	if (!ok) {
		tt_toml_free(t);
		t = NULL;
	}
	return t;
}

static tt_toml_value *parse_value(parser *p, int depth)
{
	int c = peek(p);
	if (c == '"' || c == '\'') {
		if (parse_string(p, true))
			return NULL;
		tt_toml_value *v = tt_toml_new_string(p->sbuf.ptr, p->sbuf.len);
		if (!v)
			oom(p);
		return v;
	}
	if (c == '[')
		return parse_array(p, depth);
	if (c == '{')
		return parse_inline_table(p, depth);
	return parse_bare(p);
}

static tt_toml_value *new_child_table(parser *p, const tt_toml_value *parent, const keypart *kp,
				   unsigned flags)
{
	if (check_depth(p, parent->depth + 1, kp->line, kp->col))
		return NULL;
	tt_toml_value *t = tt_toml_new_table();
	if (!t) {
		oom(p);
		return NULL;
	}
	t->depth = parent->depth + 1;
	t->flags = flags;
	t->line = kp->line;
	t->col = kp->col;
	return t;
}

/* Add (a copy of) the key part's name to tab, taking v. */
static int attach(parser *p, tt_toml_value *tab, const keypart *kp, tt_toml_value *v)
{
	char *k = dup_bytes(kp->s, kp->len);
	if (!k || table_append(tab, k, kp->len, v) != 0) {
		free(k);
		tt_toml_free(v);
		return oom(p);
	}
	return 0;
}

/*
 * key = value into tab; p is right after the key (k), before the '='.
 * Dotted keys create tables (F_DOTTED) and may only walk through tables
 * created the same way: not through a [header] table (that would define it
 * a second time), nor an inline table (closed), nor any array.
 */
static int put_keyval(parser *p, tt_toml_value *tab, keypath *k)
{
	tt_toml_value *t = tab;
	for (size_t i = 0; i + 1 < k->n; i++) {
		const keypart *kp = &k->v[i];
		tt_toml_value *c = table_getn(t, kp->s, kp->len);
		if (!c) {
			c = new_child_table(p, t, kp, F_DOTTED);
			if (!c || attach(p, t, kp, c))
				return p->err->code;
		} else if (c->type != TT_TOML_TABLE) {
			return fail_key(p, k, i, "key", "is already defined as ", what_is(c));
		} else if (c->flags & F_INLINE) {
			return fail_key(p, k, i, "key", "is an inline table, which cannot be extended",
					NULL);
		} else if (!(c->flags & F_DOTTED)) {
			return fail_key(p, k, i, "key", "is a table defined by a [header]; "
					"dotted keys cannot extend it", NULL);
		}
		t = c;
	}
	const keypart *last = &k->v[k->n - 1];
	if (table_getn(t, last->s, last->len))
		return fail_key(p, k, k->n - 1, "key", "is defined twice", NULL);
	skip_ws(p);
	if (peek(p) != '=') {
		char fb[8];
		return fail_here(p, "expected '=' after a key, found %s", found(p, fb, sizeof fb));
	}
	adv(p);
	skip_ws(p);
	tt_toml_value *v = parse_value(p, t->depth + 1);
	if (!v)
		return p->err->code ? p->err->code : oom(p);
	v->line = last->line;
	v->col = last->col;
	return attach(p, t, last, v);
}

/* ------------------------------------------------------------------ */
/* Table headers                                                       */
/* ------------------------------------------------------------------ */

/*
 * [a.b.c] or [[a.b.c]]; p is at the first '['.  Parents are created as
 * F_IMPLICIT tables or walked into (the last element of an array of
 * tables); the last part must be new, or a table so far only created
 * implicitly, which this header now defines.
 */
static int parse_header(parser *p)
{
	keypath k = { 0 };
	int rc = 0;
	bool aot = peek_at(p, 1) == '[';
	adv_n(p, aot ? 2 : 1);
	rc = parse_key(p, &k);
	if (rc)
		goto done;
	skip_ws(p);
	if (peek(p) != ']' || (aot && peek_at(p, 1) != ']')) {
		char fb[8];
		rc = fail_here(p, "expected '%s' to close the table header, found %s",
			       aot ? "]]" : "]", found(p, fb, sizeof fb));
		goto done;
	}
	adv_n(p, aot ? 2 : 1);

	tt_toml_value *t = p->root;
	for (size_t i = 0; i + 1 < k.n; i++) {
		const keypart *kp = &k.v[i];
		tt_toml_value *c = table_getn(t, kp->s, kp->len);
		if (!c) {
			c = new_child_table(p, t, kp, F_IMPLICIT);
			if (!c || (rc = attach(p, t, kp, c)) != 0) {
				rc = p->err->code;
				goto done;
			}
		} else if (c->type == TT_TOML_ARRAY && (c->flags & F_AOT)) {
			c = c->u.arr.items[c->u.arr.len - 1];
		} else if (c->type != TT_TOML_TABLE) {
			rc = fail_key(p, &k, i, "table", "is already defined as ", what_is(c));
			goto done;
		} else if (c->flags & F_INLINE) {
			rc = fail_key(p, &k, i, "table", "is an inline table, which cannot be extended",
				      NULL);
			goto done;
		}
		t = c;
	}

	const keypart *last = &k.v[k.n - 1];
	tt_toml_value *c = table_getn(t, last->s, last->len);
	if (aot) {
		if (!c) {
			c = tt_toml_new_array();
			if (!c) {
				rc = oom(p);
				goto done;
			}
			c->flags = F_AOT;
			c->depth = t->depth + 1;
			c->line = last->line, c->col = last->col;
			if ((rc = attach(p, t, last, c)) != 0)
				goto done;
		} else if (c->type != TT_TOML_ARRAY || !(c->flags & F_AOT)) {
			rc = c->type == TT_TOML_ARRAY
			     ? fail_key(p, &k, k.n - 1, "array", "is a static array, which [[...]] "
					"cannot extend", NULL)
			     : fail_key(p, &k, k.n - 1, "array", "is already defined as ", what_is(c));
			goto done;
		}
		tt_toml_value *e = new_child_table(p, c, last, F_DEFINED);
		if (!e) {
			rc = p->err->code;
			goto done;
		}
		if (tt_toml_array_push(c, e) != 0) {
			tt_toml_free(e);
			rc = oom(p);
			goto done;
		}
		p->cur = e;
	} else {
		if (!c) {
			c = new_child_table(p, t, last, F_DEFINED);
			if (!c || (rc = attach(p, t, last, c)) != 0) {
				rc = p->err->code;
				goto done;
			}
		} else if (c->type == TT_TOML_TABLE && c->flags == F_IMPLICIT) {
			c->flags = F_DEFINED;
			c->line = last->line, c->col = last->col;
		} else {
			rc = c->type != TT_TOML_TABLE || (c->flags & F_INLINE)
			     ? fail_key(p, &k, k.n - 1, "table", "is already defined as ", what_is(c))
			     : fail_key(p, &k, k.n - 1, "table", c->flags & F_DOTTED
					? "is already defined by dotted keys" : "is defined twice", NULL);
			goto done;
		}
		p->cur = c;
	}
done:
	keypath_free(&k);
	return rc;
}

/* ------------------------------------------------------------------ */
/* The document                                                        */
/* ------------------------------------------------------------------ */

static int parse_document(parser *p)
{
	keypath k = { 0 };
	int rc = 0;
	for (;;) {
		skip_ws(p);
		int c = peek(p);
		if (c < 0)
			break;
		if (at_newline(p)) {
			skip_newline(p);
			continue;
		}
		if (c == '#') {
			skip_comment(p);
			continue;
		}
		if (c == '[') {
			rc = parse_header(p);
		} else {
			rc = parse_key(p, &k);
			if (!rc)
				rc = put_keyval(p, p->cur, &k);
			keypath_free(&k);
		}
		if (rc)
			goto done;
		/* Only a comment may follow on the line. */
		skip_ws(p);
		if (peek(p) == '#')
			skip_comment(p);
		if (peek(p) >= 0 && !at_newline(p)) {
			char fb[8];
			rc = fail_here(p, "expected the end of the line, found %s", found(p, fb, sizeof fb));
			goto done;
		}
	}
done:
	keypath_free(&k);
	return rc;
}

int tt_toml_parse(tt_toml_value **out, const char *text, size_t len, const char *filename,
	       tt_error *err)
{
	tt_error local = TT_ERROR_INIT;
	parser p = { 0 };
	int rc;

	*out = NULL;
	p.s = (const unsigned char *)(text ? text : "");
	p.len = text ? len : 0;
	p.line = p.col = 1;
	p.file = filename ? filename : "<input>";
	p.err = err ? err : &local;
	tt_buf_init(&p.sbuf, 0);

	/* A UTF-8 byte order mark is tolerated (and not counted as a column). */
	if (p.len >= 3 && memcmp(p.s, "\xEF\xBB\xBF", 3) == 0)
		p.pos = 3;
	rc = check_text(&p);
	if (rc)
		goto done;
	p.pos = p.len >= 3 && memcmp(p.s, "\xEF\xBB\xBF", 3) == 0 ? 3 : 0;
	p.line = p.col = 1;

	p.root = tt_toml_new_table();
	if (!p.root) {
		rc = oom(&p);
		goto done;
	}
	p.cur = p.root;
	rc = parse_document(&p);
	if (rc)
		goto done;
	*out = p.root;
	p.root = NULL;
done:
	tt_toml_free(p.root);
	tt_buf_release(&p.sbuf);
	tt_error_clear(&local);
	return rc;
}
