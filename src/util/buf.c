/* util/buf.c - the growable byte buffer (see buf.h for the invariants). */
#include "util/buf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

char tt_buf__empty[1];

void tt_buf_init(tt_buf *b, size_t max)
{
	b->ptr = tt_buf__empty;
	b->len = b->cap = 0;
	b->max = max;
	b->failed = 0;
}

void tt_buf_release(tt_buf *b)
{
	if (!b)
		return;
	if (b->cap)
		free(b->ptr);
	size_t max = b->max;
	tt_buf_init(b, max);
}

void tt_buf_reset(tt_buf *b)
{
	b->len = 0;
	b->ptr[0] = '\0';
	b->failed = 0;
}

char *tt_buf_detach(tt_buf *b)
{
	char *p = b->cap ? b->ptr : tt_strdup("");
	size_t max = b->max;
	tt_buf_init(b, max);
	return p;
}

int tt_buf_grow(tt_buf *b, size_t extra)
{
	if (b->failed)
		return b->failed;
	size_t need;
	if (!tt_add_ok(b->len, extra, &need) || !tt_add_ok(need, 1, &need)) {
		b->failed = TT_ENOMEM;
		return b->failed;
	}
	if (b->max && need - 1 > b->max) {
		b->failed = TT_ELIMIT;
		return b->failed;
	}
	if (need <= b->cap)
		return 0;
	size_t cap = b->cap ? b->cap : 64;
	while (cap < need) {
		if (!tt_mul_ok(cap, 2, &cap)) {
			cap = need;
			break;
		}
	}
	char *p = realloc(b->cap ? b->ptr : NULL, cap);
	if (!p) {
		b->failed = TT_ENOMEM;
		return b->failed;
	}
	if (!b->cap)
		p[0] = '\0';
	b->ptr = p;
	b->cap = cap;
	return 0;
}

int tt_buf_put(tt_buf *b, const void *data, size_t n)
{
	int rc = tt_buf_grow(b, n);
	if (rc)
		return rc;
	if (n)
		memcpy(b->ptr + b->len, data, n);
	b->len += n;
	if (b->cap)
		b->ptr[b->len] = '\0';
	return 0;
}

int tt_buf_puts(tt_buf *b, const char *s)
{
	return tt_buf_put(b, s, strlen(s));
}

int tt_buf_putc(tt_buf *b, char c)
{
	return tt_buf_put(b, &c, 1);
}

int tt_buf_vprintf(tt_buf *b, const char *fmt, va_list ap)
{
	if (b->failed)
		return b->failed;
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0) {
		b->failed = TT_ENOMEM;
		return b->failed;
	}
	int rc = tt_buf_grow(b, (size_t)n);
	if (rc)
		return rc;
	vsnprintf(b->ptr + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return 0;
}

int tt_buf_printf(tt_buf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = tt_buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void tt_buf_truncate(tt_buf *b, size_t len)
{
	if (len < b->len) {
		b->len = len;
		b->ptr[len] = '\0';
	}
}

int tt_buf_check(const tt_buf *b, tt_error *err, const char *what)
{
	if (!b->failed)
		return 0;
	if (b->failed == TT_ELIMIT)
		return tt_error_set(err, TT_ELIMIT, "%s is larger than the %zu-byte limit", what, b->max);
	return tt_error_oom(err);
}
