/*
 * util/buf.h - the one growable byte buffer.
 *
 * Invariants:
 *   - ptr is never NULL and ptr[len] == '\0' (it points at a shared empty
 *     string until the first append), so ptr is always a C string;
 *   - len < cap whenever cap > 0;
 *   - max, when non-zero, caps len: an append that would pass it fails with
 *     TT_ELIMIT and leaves the buffer unchanged.  Anything filled from a
 *     subprocess, a network peer or a database sets a max.
 *   - Failures are sticky: after one, `failed` holds the code and further
 *     appends are no-ops returning it, so a sequence of appends can be
 *     checked once with tt_buf_check().
 * tt_buf_detach() is the only way to take the memory.
 */
#ifndef TT_UTIL_BUF_H
#define TT_UTIL_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "util/error.h"

typedef struct tt_buf {
	char *ptr;
	size_t len;
	size_t cap;
	size_t max;    /* 0: no cap */
	int failed;    /* 0, TT_ENOMEM or TT_ELIMIT */
} tt_buf;

extern char tt_buf__empty[];
#define TT_BUF_INIT { tt_buf__empty, 0, 0, 0, 0 }

void tt_buf_init(tt_buf *b, size_t max);
void tt_buf_release(tt_buf *b);            /* free; back to empty.  NULL-safe */
void tt_buf_reset(tt_buf *b);              /* len = 0, keep memory, clear failure */
char *tt_buf_detach(tt_buf *b);            /* caller owns; buffer back to empty */
int tt_buf_grow(tt_buf *b, size_t extra);
int tt_buf_put(tt_buf *b, const void *data, size_t n);
int tt_buf_puts(tt_buf *b, const char *s);
int tt_buf_putc(tt_buf *b, char c);
int tt_buf_printf(tt_buf *b, const char *fmt, ...) TT_PRINTF(2, 3);
int tt_buf_vprintf(tt_buf *b, const char *fmt, va_list ap) TT_PRINTF(2, 0);
void tt_buf_truncate(tt_buf *b, size_t len);
/* 0 if no append failed; else sets err (naming `what`) and returns the code. */
int tt_buf_check(const tt_buf *b, tt_error *err, const char *what);

#endif
