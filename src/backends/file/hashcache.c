/*
 * backends/file/hashcache.c - see hashcache.h.
 *
 * Records live in one array in key order; an open-addressing table of
 * record indices finds them by key.  Key and value text come from the loaded
 * file (kept whole) or from an arena of chunks, so a record is a few fixed
 * fields and a refresh of a million files allocates a handful of blocks.
 */
#include "backends/file/hashcache.h"

#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"

/* Deeper nesting in a value of another shape makes the text unreadable
 * (tether-vcs would hit Python's recursion limit near here too). */
#define MAX_DEPTH 512
#define CHUNK_MIN ((size_t)64 << 10)

typedef struct rec {
	const char *key;        /* decoded bytes; the escaped text when verbatim */
	const char *raw;        /* the value's JSON text when !e.decoded */
	uint32_t klen, rawlen;
	uint64_t hash;
	tt_hc_entry e;
	bool verbatim;          /* a key Python can hold but UTF-8 cannot (lone surrogate) */
} rec;

typedef struct chunk {
	struct chunk *next;
	size_t used, cap;
	char data[];
} chunk;

struct tt_hcache {
	rec *recs;
	size_t n, alloc;
	uint32_t *slots;        /* record index + 1; 0 is empty */
	size_t nslots;          /* a power of two, at least 2n */
	char *text;             /* the loaded file */
	chunk *chunks;
};

/* --- memory -------------------------------------------------------------------------- */

static char *arena_alloc(tt_hcache *c, size_t n)
{
	chunk *k = c->chunks;
	if (!k || k->cap - k->used < n) {
		size_t cap = n > CHUNK_MIN ? n : CHUNK_MIN;
		if (!(k = tt_malloc(sizeof *k + cap)))
			return NULL;
		k->next = c->chunks;
		k->used = 0;
		k->cap = cap;
		c->chunks = k;
	}
	k->used += n;
	return k->data + k->used - n;
}

static char *arena_copy(tt_hcache *c, const char *s, size_t n)
{
	char *p = n ? arena_alloc(c, n) : (char *)"";
	if (p && n)
		memcpy(p, s, n);
	return p;
}

static void reset(tt_hcache *c)
{
	while (c->chunks) {
		chunk *next = c->chunks->next;
		free(c->chunks);
		c->chunks = next;
	}
	free(c->recs);
	free(c->slots);
	free(c->text);
	c->recs = NULL;
	c->slots = NULL;
	c->text = NULL;
	c->n = c->alloc = c->nslots = 0;
}

tt_hcache *tt_hcache_new(void)
{
	return tt_calloc(1, sizeof(tt_hcache));
}

void tt_hcache_free(tt_hcache *c)
{
	if (!c)
		return;
	reset(c);
	free(c);
}

size_t tt_hcache_count(const tt_hcache *c)
{
	return c->n;
}

/* --- the table ----------------------------------------------------------------------- */

static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = UINT64_C(0x9e3779b97f4a7c15) ^ (uint64_t)n;
	uint64_t w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * UINT64_C(0xff51afd7ed558ccd);
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, p, n);
	h = (h ^ w) * UINT64_C(0xc4ceb9fe1a85ec53);
	h ^= h >> 29;
	h *= UINT64_C(0x94d049bb133111eb);
	return h ^ (h >> 31);
}

/* The slot holding key, or the empty slot where it would go. */
static size_t find_slot(const tt_hcache *c, const char *key, size_t len, uint64_t h)
{
	size_t mask = c->nslots - 1;
	for (size_t i = (size_t)h & mask;; i = (i + 1) & mask) {
		uint32_t s = c->slots[i];
		const rec *r;
		if (!s)
			return i;
		r = &c->recs[s - 1];
		if (r->hash == h && r->klen == len && memcmp(r->key, key, len) == 0)
			return i;
	}
}

static int grow_slots(tt_hcache *c, size_t need)
{
	size_t n = c->nslots ? c->nslots : 1024;
	uint32_t *old = c->slots;
	size_t oldn = c->nslots;

	if (need > UINT32_MAX - 1)
		return -1;
	while (n < need * 2)
		n *= 2;
	if (n == c->nslots)
		return 0;
	if (!(c->slots = tt_calloc(n, sizeof *c->slots))) {
		c->slots = old;
		return -1;
	}
	c->nslots = n;
	for (size_t i = 0; i < oldn; i++) {
		if (old[i]) {
			const rec *r = &c->recs[old[i] - 1];
			c->slots[find_slot(c, r->key, r->klen, r->hash)] = old[i];
		}
	}
	free(old);
	return 0;
}

/* A new record for key at the end (the key is not there yet, or verbatim). */
static rec *append(tt_hcache *c, const char *key, size_t len, uint64_t h, bool verbatim)
{
	rec *r;
	if (len > UINT32_MAX || c->n >= UINT32_MAX - 1)
		return NULL;
	if (c->n == c->alloc && tt_array_grow_((void **)&c->recs, &c->alloc, c->n + 1, sizeof *r) != 0)
		return NULL;
	if (!verbatim && c->nslots < (c->n + 1) * 2 && grow_slots(c, c->n + 1) != 0)
		return NULL;
	r = &c->recs[c->n++];
	memset(r, 0, sizeof *r);
	r->key = key;
	r->klen = (uint32_t)len;
	r->hash = h;
	r->verbatim = verbatim;
	if (!verbatim)
		c->slots[find_slot(c, key, len, h)] = (uint32_t)c->n;
	return r;
}

static rec *lookup(const tt_hcache *c, const char *key, size_t len, uint64_t h)
{
	uint32_t s;
	if (!c->nslots)
		return NULL;
	s = c->slots[find_slot(c, key, len, h)];
	return s ? &c->recs[s - 1] : NULL;
}

void tt_hcache_prefetch(const tt_hcache *c, const char *key, size_t len)
{
	if (c->nslots)
		__builtin_prefetch(&c->slots[(size_t)hash_bytes(key, len) & (c->nslots - 1)]);
}

const tt_hc_entry *tt_hcache_get(const tt_hcache *c, const char *key, size_t len)
{
	const rec *r = lookup(c, key, len, hash_bytes(key, len));
	return r ? &r->e : NULL;
}

bool tt_hcache_at(const tt_hcache *c, size_t i, const char **key, size_t *len,
		  const tt_hc_entry **e)
{
	const rec *r = &c->recs[i];
	if (r->verbatim || !r->e.decoded)
		return false;
	*key = r->key;
	*len = r->klen;
	*e = &r->e;
	return true;
}

int tt_hcache_put(tt_hcache *c, const char *key, size_t len, const tt_hc_entry *e)
{
	uint64_t h = hash_bytes(key, len);
	rec *r = lookup(c, key, len, h);
	if (!r) {
		const char *k = arena_copy(c, key, len);
		if (!k || !(r = append(c, k, len, h, false)))
			return -1;
	}
	r->e = *e;
	r->e.decoded = true;
	r->raw = NULL;
	r->rawlen = 0;
	return 0;
}

int tt_hcache_merge(tt_hcache *dst, const tt_hcache *src)
{
	for (size_t i = 0; i < src->n; i++) {
		const rec *s = &src->recs[i];
		rec *d;
		if (s->verbatim)
			continue; /* no path can name it; only its own file keeps it */
		d = lookup(dst, s->key, s->klen, s->hash);
		if (d && s->e.hashed_at <= d->e.hashed_at)
			continue;
		if (!d) {
			const char *k = arena_copy(dst, s->key, s->klen);
			if (!k || !(d = append(dst, k, s->klen, s->hash, false)))
				return -1;
		}
		d->e = s->e;
		d->raw = NULL;
		d->rawlen = 0;
		if (!s->e.decoded) {
			if (!(d->raw = arena_copy(dst, s->raw, s->rawlen)))
				return -1;
			d->rawlen = s->rawlen;
		}
	}
	return 0;
}

/* --- reading ------------------------------------------------------------------------- */

typedef struct parser {
	tt_hcache *c;
	const char *p, *end;
	bool oom;
} parser;

static inline void skip_ws(parser *ps)
{
	if (ps->p < ps->end && (unsigned char)*ps->p > ' ')
		return;
	while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\n' || *ps->p == '\r' || *ps->p == '\t'))
		ps->p++;
}

static bool eat(parser *ps, char ch)
{
	skip_ws(ps);
	if (ps->p < ps->end && *ps->p == ch) {
		ps->p++;
		return true;
	}
	return false;
}

static bool hex4(const char *p, const char *end, uint32_t *out)
{
	uint32_t v = 0;
	if (end - p < 4)
		return false;
	for (int i = 0; i < 4; i++) {
		int d = tt_hex_digit((unsigned char)p[i]);
		if (d < 0)
			return false;
		v = v << 4 | (uint32_t)d;
	}
	*out = v;
	return true;
}

static bool all_ascii(const char *s, size_t n)
{
	uint64_t acc = 0, w;
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, s + i, 8);
		acc |= w;
	}
	for (; i < n; i++)
		acc |= (unsigned char)s[i];
	return !(acc & UINT64_C(0x8080808080808080));
}

/*
 * The string starting at ps->p (a '"'): its body [*body, *body + *blen) and
 * whether it holds escapes.  Refuses raw control characters and text that is
 * not UTF-8, as json.loads of a UTF-8 file does.
 */
static bool scan_string(parser *ps, const char **body, size_t *blen, bool *escaped)
{
	const char *s = ps->p + 1, *q = s;
	*escaped = false;
	for (;;) {
		const char *quote = memchr(q, '"', (size_t)(ps->end - q));
		const char *bs;
		if (!quote)
			return false;
		bs = memchr(q, '\\', (size_t)(quote - q));
		if (!bs) {
			q = quote;
			break;
		}
		*escaped = true;
		if (bs + 1 >= ps->end)
			return false;
		q = bs + 2;
	}
	for (const char *t = s; t < q; t++)
		if ((unsigned char)*t < 0x20)
			return false;
	if (!all_ascii(s, (size_t)(q - s)) && !tt_utf8_valid(s, (size_t)(q - s)))
		return false;
	*body = s;
	*blen = (size_t)(q - s);
	ps->p = q + 1;
	return true;
}

/* Decode an escaped string body into o (at least len bytes: escapes never
 * grow).  Returns the length, or -1 for a bad escape, -2 for a lone
 * surrogate (valid JSON, but no UTF-8 string can hold it). */
static long unescape(const char *s, size_t len, char *o)
{
	const char *end = s + len;
	size_t n = 0;
	int rc = 0;
	while (s < end) {
		uint32_t cp;
		if (*s != '\\') {
			o[n++] = *s++;
			continue;
		}
		switch (s[1]) {
		case '"': o[n++] = '"'; s += 2; continue;
		case '\\': o[n++] = '\\'; s += 2; continue;
		case '/': o[n++] = '/'; s += 2; continue;
		case 'b': o[n++] = '\b'; s += 2; continue;
		case 'f': o[n++] = '\f'; s += 2; continue;
		case 'n': o[n++] = '\n'; s += 2; continue;
		case 'r': o[n++] = '\r'; s += 2; continue;
		case 't': o[n++] = '\t'; s += 2; continue;
		case 'u': break;
		default: return -1;
		}
		if (!hex4(s + 2, end, &cp))
			return -1;
		s += 6;
		if (cp >= 0xd800 && cp <= 0xdbff) {
			uint32_t lo;
			if (end - s >= 6 && s[0] == '\\' && s[1] == 'u' && hex4(s + 2, end, &lo) &&
			    lo >= 0xdc00 && lo <= 0xdfff) {
				cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
				s += 6;
			} else {
				rc = -2;
			}
		} else if (cp >= 0xdc00 && cp <= 0xdfff) {
			rc = -2;
		}
		n += tt_utf8_put(o + n, cp);
	}
	return rc ? rc : (long)n;
}

/* An integer exactly as json.loads reads one into an int. */
static bool parse_int(parser *ps, int64_t *out)
{
	const char *p = ps->p;
	bool neg = false;
	uint64_t v = 0;

	skip_ws(ps);
	p = ps->p;
	if (p < ps->end && *p == '-') {
		neg = true;
		p++;
	}
	if (p >= ps->end || *p < '0' || *p > '9')
		return false;
	if (*p == '0') {
		p++;
	} else {
		/* 18 digits cannot overflow; only those after them are checked. */
		const char *easy = ps->end - p > 18 ? p + 18 : ps->end;
		while (p < easy && *p >= '0' && *p <= '9')
			v = v * 10 + (unsigned)(*p++ - '0');
		while (p < ps->end && *p >= '0' && *p <= '9') {
			unsigned d = (unsigned)(*p++ - '0');
			if (v > (UINT64_C(9223372036854775808) - d) / 10)
				return false;
			v = v * 10 + d;
		}
	}
	if (p < ps->end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9')))
		return false;
	if (!neg && v > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? (int64_t)(0 - v) : (int64_t)v;
	ps->p = p;
	return true;
}

/* [size,mtime_ns,ctime_ns,inode,"<64 lower-case hex>",hashed_at] */
static bool parse_entry(parser *ps, tt_hc_entry *e)
{
	int64_t *ints[4] = { &e->size, &e->mtime_ns, &e->ctime_ns, &e->ino };
	const char *h;

	if (!eat(ps, '['))
		return false;
	for (int i = 0; i < 4; i++)
		if (!parse_int(ps, ints[i]) || !eat(ps, ','))
			return false;
	skip_ws(ps);
	h = ps->p;
	if (ps->end - h < 66 || h[0] != '"' || h[65] != '"')
		return false;
	if (tt_unhex_lower(e->sha, h + 1, 32) != 0)
		return false;
	ps->p = h + 66;
	if (!eat(ps, ',') || !parse_int(ps, &e->hashed_at) || !eat(ps, ']'))
		return false;
	e->decoded = true;
	return true;
}

static bool skip_literal(parser *ps, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0)
		return false;
	ps->p += n;
	return true;
}

static bool skip_number(parser *ps)
{
	const char *p = ps->p, *end = ps->end;
	if (p < end && *p == '-')
		p++;
	if (p < end && *p == 'I') { /* -Infinity */
		ps->p = p;
		return skip_literal(ps, "Infinity");
	}
	if (p >= end || *p < '0' || *p > '9')
		return false;
	if (*p == '0')
		p++;
	else
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	if (p < end && *p == '.') {
		if (++p >= end || *p < '0' || *p > '9')
			return false;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			p++;
		if (p >= end || *p < '0' || *p > '9')
			return false;
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	ps->p = p;
	return true;
}

static bool check_escapes(const char *s, size_t len)
{
	for (const char *end = s + len; s < end; s++) {
		uint32_t cp;
		if (*s != '\\')
			continue;
		if (strchr("\"\\/bfnrt", s[1]) && s[1]) {
			s++;
			continue;
		}
		if (s[1] != 'u' || !hex4(s + 2, end, &cp))
			return false;
		s += 5;
	}
	return true;
}

/* Any JSON value json.loads accepts (NaN and the infinities included). */
static bool skip_value(parser *ps, int depth)
{
	const char *body;
	size_t blen;
	bool escaped;

	skip_ws(ps);
	if (ps->p >= ps->end || depth > MAX_DEPTH)
		return false;
	switch (*ps->p) {
	case '"':
		return scan_string(ps, &body, &blen, &escaped) && (!escaped || check_escapes(body, blen));
	case '[':
		ps->p++;
		if (eat(ps, ']'))
			return true;
		do {
			if (!skip_value(ps, depth + 1))
				return false;
		} while (eat(ps, ','));
		return eat(ps, ']');
	case '{':
		ps->p++;
		if (eat(ps, '}'))
			return true;
		do {
			skip_ws(ps);
			if (ps->p >= ps->end || *ps->p != '"' || !skip_value(ps, depth + 1) || !eat(ps, ':') ||
			    !skip_value(ps, depth + 1))
				return false;
		} while (eat(ps, ','));
		return eat(ps, '}');
	case 't': return skip_literal(ps, "true");
	case 'f': return skip_literal(ps, "false");
	case 'n': return skip_literal(ps, "null");
	case 'N': return skip_literal(ps, "NaN");
	case 'I': return skip_literal(ps, "Infinity");
	default: return skip_number(ps);
	}
}

/* One "key":value member. */
static bool parse_member(parser *ps)
{
	const char *body, *key, *vstart;
	size_t blen, klen;
	bool escaped, verbatim = false;
	tt_hc_entry e;
	rec *r;
	uint64_t h;

	skip_ws(ps);
	if (ps->p >= ps->end || *ps->p != '"' || !scan_string(ps, &body, &blen, &escaped))
		return false;
	key = body;
	klen = blen;
	if (escaped) {
		char *o = arena_alloc(ps->c, blen ? blen : 1);
		long n;
		if (!o) {
			ps->oom = true;
			return false;
		}
		n = unescape(body, blen, o);
		if (n == -1)
			return false;
		if (n == -2) {
			verbatim = true; /* kept as written */
		} else {
			key = o;
			klen = (size_t)n;
		}
	}
	if (!eat(ps, ':'))
		return false;
	/* The key's slot is a cache miss in a table of a million entries: ask
	 * for it now, and it arrives while the value is parsed. */
	h = hash_bytes(key, klen);
	__builtin_prefetch(&ps->c->slots[(size_t)h & (ps->c->nslots - 1)]);
	skip_ws(ps);
	vstart = ps->p;
	memset(&e, 0, sizeof e);
	if (!parse_entry(ps, &e)) {
		ps->p = vstart;
		if (!skip_value(ps, 1))
			return false;
		memset(&e, 0, sizeof e);
		e.hashed_at = INT64_MIN;
		if (!all_ascii(vstart, (size_t)(ps->p - vstart)) &&
		    !tt_utf8_valid(vstart, (size_t)(ps->p - vstart)))
			return false;
	}
	r = verbatim ? NULL : lookup(ps->c, key, klen, h);
	if (!r && !(r = append(ps->c, key, klen, h, verbatim))) {
		ps->oom = true;
		return false;
	}
	r->e = e;
	r->raw = e.decoded ? NULL : vstart;
	r->rawlen = e.decoded ? 0 : (uint32_t)(ps->p - vstart);
	return true;
}

int tt_hcache_load(tt_hcache *c, char *text, size_t len)
{
	parser ps = { c, text, text + len, false };
	bool ok;

	reset(c);
	c->text = text;
	if (len > UINT32_MAX) {
		reset(c);
		return 1;
	}
	if (grow_slots(c, len / 160 + 16) != 0) {
		reset(c);
		return -1;
	}
	ok = eat(&ps, '{');
	if (ok && !eat(&ps, '}')) {
		do {
			ok = parse_member(&ps);
		} while (ok && eat(&ps, ','));
		ok = ok && eat(&ps, '}');
	}
	skip_ws(&ps);
	if (ok && ps.p == ps.end)
		return 0;
	reset(c);
	return ps.oom ? -1 : 1;
}

/* --- writing ------------------------------------------------------------------------- */

static char *put_i64(char *o, int64_t v)
{
	char tmp[24];
	size_t n = 0;
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
	do {
		tmp[n++] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		*o++ = '-';
	while (n)
		*o++ = tmp[--n];
	return o;
}

void tt_hc_entry_hex(const tt_hc_entry *e, char hex[65])
{
	tt_hex(hex, e->sha, 32);
}

/* Printable ASCII that json.dumps writes as it is. */
static bool plain_key(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if (ch < 0x20 || ch > 0x7e || ch == '"' || ch == '\\')
			return false;
	}
	return true;
}

int tt_hcache_dump(const tt_hcache *c, tt_buf *out)
{
	tt_buf_putc(out, '{');
	for (size_t i = 0; i < c->n && !out->failed; i++) {
		const rec *r = &c->recs[i];
		if (i)
			tt_buf_putc(out, ',');
		if (r->verbatim) {
			tt_buf_putc(out, '"');
			tt_buf_put(out, r->key, r->klen);
			tt_buf_putc(out, '"');
		} else if (plain_key(r->key, r->klen)) {
			tt_buf_putc(out, '"');
			tt_buf_put(out, r->key, r->klen);
			tt_buf_putc(out, '"');
		} else if (tt_json_dump_string(out, r->key, r->klen, true) != 0) {
			break;
		}
		tt_buf_putc(out, ':');
		if (!r->e.decoded) {
			tt_buf_put(out, r->raw, r->rawlen);
		} else if (tt_buf_grow(out, 5 * 21 + 64 + 12) == 0) {
			char *o = out->ptr + out->len;
			*o++ = '[';
			o = put_i64(o, r->e.size);
			*o++ = ',';
			o = put_i64(o, r->e.mtime_ns);
			*o++ = ',';
			o = put_i64(o, r->e.ctime_ns);
			*o++ = ',';
			o = put_i64(o, r->e.ino);
			*o++ = ',';
			*o++ = '"';
			tt_hc_entry_hex(&r->e, o);
			o += 64;
			*o++ = '"';
			*o++ = ',';
			o = put_i64(o, r->e.hashed_at);
			*o++ = ']';
			out->len = (size_t)(o - out->ptr);
			out->ptr[out->len] = '\0';
		}
	}
	tt_buf_putc(out, '}');
	return out->failed;
}
