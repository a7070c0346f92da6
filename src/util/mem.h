/*
 * util/mem.h - allocation helpers.  They return NULL on failure (the library
 * never aborts); callers turn that into tt_error_oom().
 */
#ifndef TT_UTIL_MEM_H
#define TT_UTIL_MEM_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/error.h"

void *tt_malloc(size_t n);
void *tt_calloc(size_t nmemb, size_t size);
void *tt_realloc(void *p, size_t n);
/* realloc of nmemb*size with overflow checking. */
void *tt_reallocarray(void *p, size_t nmemb, size_t size);
char *tt_strdup(const char *s);
char *tt_strndup(const char *s, size_t n);
char *tt_asprintf(const char *fmt, ...) TT_PRINTF(1, 2);
char *tt_vasprintf(const char *fmt, va_list ap) TT_PRINTF(1, 0);
/* qsort/bsearch comparator for an array of C strings (byte order). */
int tt_cmp_cstr(const void *a, const void *b);

/* Checked size arithmetic: false on overflow. */
static inline bool tt_add_ok(size_t a, size_t b, size_t *out)
{
	return !__builtin_add_overflow(a, b, out);
}
static inline bool tt_mul_ok(size_t a, size_t b, size_t *out)
{
	return !__builtin_mul_overflow(a, b, out);
}

/*
 * Grow an array (ptr, nr, alloc) so that at least `need` elements fit.
 * Evaluates to 0 on success, -1 on overflow or allocation failure.
 */
int tt_array_grow_(void **ptr, size_t *alloc, size_t need, size_t elem);
#define TT_ARRAY_GROW(ptr, alloc, need) \
	tt_array_grow_((void **)&(ptr), &(alloc), (need), sizeof(*(ptr)))

#endif
