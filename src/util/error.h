/* util/error.h - setting errors inside the library (see tether/error.h). */
#ifndef TT_UTIL_ERROR_H
#define TT_UTIL_ERROR_H

#include <stdarg.h>
#include <tether/error.h>

#if defined(__GNUC__)
#define TT_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TT_PRINTF(a, b)
#endif

/*
 * Set err (which may be NULL) to code with a printf-style message, replacing
 * anything it held (the object key/kind are kept).  Returns code, so
 * `return tt_error_set(err, TT_ECONFIG, "...")` reads naturally.
 */
int tt_error_set(tt_error *err, int code, const char *fmt, ...) TT_PRINTF(3, 4);
int tt_error_vset(tt_error *err, int code, const char *fmt, va_list ap) TT_PRINTF(3, 0);

/* Attach a fix hint ("run `tether upgrade`").  Returns err->code. */
int tt_error_hint(tt_error *err, const char *fmt, ...) TT_PRINTF(2, 3);

/* Name the object: key and kind (either may be NULL) each fill in once. */
int tt_error_object(tt_error *err, const char *key, const char *kind);

/* Prepend context to the message: "<context>: <old message>". */
int tt_error_prefix(tt_error *err, const char *fmt, ...) TT_PRINTF(2, 3);

/* Move src into dst (dst cleared first); src is left cleared. */
void tt_error_move(tt_error *dst, tt_error *src);

/* Set TT_ENOMEM ("out of memory") and return it. */
int tt_error_oom(tt_error *err);

/* Set TT_EIO from errno: "<what>: <strerror>".  Returns TT_EIO. */
int tt_error_errno(tt_error *err, int errnum, const char *fmt, ...) TT_PRINTF(3, 4);

#endif
