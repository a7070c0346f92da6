/*
 * fuzz_lance_manifest - libFuzzer target for formats/protobuf and
 * formats/lance_manifest.
 *
 * The input is a manifest file.  The protobuf walker must stay inside the
 * input whatever it holds; a manifest that decodes is cloned onto a branch
 * the way a fork writes it, and the clone must decode again to the same
 * version, fragments and schema, on the new branch with BASE_PATHS set.
 * Any disagreement aborts.
 *
 * The modules under test are compiled into this file, so that they get the
 * fuzzer's coverage instrumentation; their archive members are then never
 * linked in.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/lance_manifest.c"
#include "formats/protobuf.c"
#include "util/buf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk(const uint8_t *data, size_t size, int depth)
{
	tt_pb_reader r;
	tt_pb_field f;
	tt_pb_reader_init(&r, data, size);
	while (tt_pb_next(&r, &f) > 0) {
		if (f.start < data || f.start + f.size > data + size)
			abort();
		if (f.wire == TT_PB_LEN && depth < 4)
			walk(f.data, f.len, depth + 1);
	}
}

static void same(const tt_lance_manifest *a, const tt_lance_manifest *b)
{
	if (a->version != b->version || a->nfrags != b->nfrags || a->nfields != b->nfields)
		abort();
	for (size_t i = 0; i < a->nfrags; i++)
		if (a->frags[i].id != b->frags[i].id ||
		    a->frags[i].physical_rows != b->frags[i].physical_rows ||
		    a->frags[i].has_deletion != b->frags[i].has_deletion ||
		    strcmp(a->frags[i].files, b->frags[i].files) != 0)
			abort();
	for (size_t i = 0; i < a->nfields; i++)
		if (a->fields[i].id != b->fields[i].id || strcmp(a->fields[i].name, b->fields[i].name) != 0)
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tt_lance_manifest m, again;
	tt_lance_summary sum;
	tt_buf out = TT_BUF_INIT;
	char why[256];

	walk(data, size, 0);
	if (tt_lance_manifest_parse(&m, data, size, why, sizeof why) != 0) {
		if (!why[0])
			abort();
		return 0;
	}
	tt_lance_manifest_summary(&m, &sum);
	if (tt_lance_manifest_branch(&out, data, size, "fz", NULL, "/fuzz/root", 1700000000, 5, why,
				     sizeof why) == 0) {
		if (tt_lance_manifest_parse(&again, out.ptr, out.len, why, sizeof why) != 0) {
			fprintf(stderr, "clone does not decode: %s\n", why);
			abort();
		}
		same(&m, &again);
		if (!again.branch || strcmp(again.branch, "fz") != 0 ||
		    !(again.reader_flags & TT_LANCE_FLAG_BASE_PATHS) || !again.has_timestamp ||
		    again.ts_seconds != 1700000000)
			abort();
		tt_lance_manifest_release(&again);
	}
	tt_buf_release(&out);
	tt_lance_manifest_release(&m);
	return 0;
}
