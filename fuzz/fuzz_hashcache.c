/*
 * fuzz_hashcache - libFuzzer target for backends/hashcache, the reader and
 * writer of the file backend's hash cache.
 *
 * The input is loaded as a cache file.  A table that loads is written out;
 * that text must load again, hold as many entries, and write back byte for
 * byte; every entry must be found by its key.  Any disagreement aborts.
 *
 * The module under test is compiled into this file so that it gets the
 * fuzzer's coverage instrumentation.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/file/hashcache.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tt_hcache *c = tt_hcache_new(), *again = tt_hcache_new();
	char *text = tt_malloc(size + 1);
	tt_buf one = TT_BUF_INIT, two = TT_BUF_INIT;

	if (!c || !again || !text)
		abort();
	memcpy(text, data, size);
	text[size] = '\0';
	if (tt_hcache_load(c, text, size) != 0)
		goto done;
	for (size_t i = 0; i < c->n; i++) {
		const rec *r = &c->recs[i];
		if (!r->verbatim && tt_hcache_get(c, r->key, r->klen) != &r->e)
			abort();
	}
	if (tt_hcache_dump(c, &one) != 0)
		abort();
	{
		size_t len = one.len;
		char *copy = tt_malloc(len + 1);
		if (!copy)
			abort();
		memcpy(copy, one.ptr, len + 1);
		if (tt_hcache_load(again, copy, len) != 0 || tt_hcache_count(again) != tt_hcache_count(c))
			abort();
	}
	if (tt_hcache_dump(again, &two) != 0 || two.len != one.len || memcmp(one.ptr, two.ptr, one.len) != 0)
		abort();
done:
	tt_buf_release(&one);
	tt_buf_release(&two);
	tt_hcache_free(c);
	tt_hcache_free(again);
	return 0;
}
