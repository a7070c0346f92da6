/*
 * fuzz_parquet - libFuzzer target for the Parquet string-column reader
 * (formats/parquet.c) and the Snappy decompressor under it.  The input is
 * read as a whole Parquet file, for a nested optional column (add.path,
 * as in a Delta checkpoint) and a top-level one; and, from its second
 * byte on, as a raw Snappy block.  Malformed input must be an error with a
 * message (never a crash), every value must lie inside memory the reader
 * owns, and a block that decompresses must fill exactly its stated length.
 *
 * The modules are compiled into this file, so that they get the fuzzer's
 * coverage instrumentation; their archive members are then never linked in.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/parquet.c"
#include "formats/snappy.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct seen {
	unsigned sum;
	int64_t last;           /* the last value's row in this read */
} seen;

static int touch(void *ctx, int64_t row, const unsigned char *s, size_t n, tt_error *err)
{
	seen *c = ctx;
	unsigned sum = 0;
	(void)err;
	if (row <= c->last)
		abort(); /* rows only grow within a read */
	c->last = row;
	for (size_t i = 0; i < n; i++)
		sum += s[i]; /* the sanitizer sees a read out of bounds */
	c->sum += sum + 1;
	return 0;
}

static void expect_error(int rc, tt_error *err)
{
	if (rc == 0 || rc == TT_ENOMEM)
		return;
	if ((rc != TT_EPARSE && rc != TT_ECAPABILITY && rc != TT_ELIMIT) || err->code != rc ||
	    !err->message)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const nested[] = { "add", "path" };
	static const char *const flat[] = { "s" };
	tt_error err = TT_ERROR_INIT;
	seen c = { 0, -1 };
	bool found;
	int rc;

	rc = tt_parquet_strings(data, size, "fuzz.parquet", nested, 2, touch, &c, &found, &err);
	expect_error(rc, &err);
	if (rc && found)
		abort();
	tt_error_clear(&err);
	c.last = -1;
	rc = tt_parquet_strings(data, size, "fuzz.parquet", flat, 1, touch, &c, &found, &err);
	expect_error(rc, &err);
	tt_error_clear(&err);

	size_t want;
	if (size > 1 && tt_snappy_length(data + 1, size - 1, &want) && want <= ((size_t)1 << 20)) {
		unsigned char *out = malloc(want ? want : 1);
		if (out && tt_snappy_uncompress(data + 1, size - 1, out, want)) {
			unsigned sum = 0;
			for (size_t i = 0; i < want; i++)
				sum += out[i];
			c.sum += sum;
		}
		free(out);
	}
	return c.sum == 0xdeadbeef; /* keeps the reads from being optimised away */
}
