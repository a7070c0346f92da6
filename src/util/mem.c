/* util/mem.c - allocation helpers (see mem.h). */
#include "util/mem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *tt_malloc(size_t n) { return malloc(n ? n : 1); }
void *tt_calloc(size_t nmemb, size_t size) { return calloc(nmemb ? nmemb : 1, size ? size : 1); }
void *tt_realloc(void *p, size_t n) { return realloc(p, n ? n : 1); }

void *tt_reallocarray(void *p, size_t nmemb, size_t size)
{
	size_t n;
	if (!tt_mul_ok(nmemb, size, &n))
		return NULL;
	return tt_realloc(p, n);
}

char *tt_strdup(const char *s)
{
	return s ? tt_strndup(s, strlen(s)) : NULL;
}

char *tt_strndup(const char *s, size_t n)
{
	size_t sz;
	if (!s || !tt_add_ok(n, 1, &sz))
		return NULL;
	char *d = malloc(sz);
	if (!d)
		return NULL;
	memcpy(d, s, n);
	d[n] = '\0';
	return d;
}

char *tt_vasprintf(const char *fmt, va_list ap)
{
	va_list cp;
	va_copy(cp, ap);
	int n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return NULL;
	char *s = malloc((size_t)n + 1);
	if (!s)
		return NULL;
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	return s;
}

char *tt_asprintf(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = tt_vasprintf(fmt, ap);
	va_end(ap);
	return s;
}

int tt_array_grow_(void **ptr, size_t *alloc, size_t need, size_t elem)
{
	if (need <= *alloc)
		return 0;
	size_t n = *alloc < 8 ? 8 : *alloc;
	while (n < need) {
		if (!tt_mul_ok(n, 2, &n))
			return -1;
	}
	void *p = tt_reallocarray(*ptr, n, elem);
	if (!p)
		return -1;
	*ptr = p;
	*alloc = n;
	return 0;
}

int tt_cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}
