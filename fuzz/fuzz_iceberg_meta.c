/*
 * fuzz_iceberg_meta - libFuzzer target for the Iceberg table-metadata reader
 * (backends/iceberg/iceberg_meta.c): the input is read as a metadata file (plain or
 * gzip), then every ref's ancestry is walked and a tag is set and removed
 * again as a catalog commit would.  Malformed input must be a TT_EPARSE (or
 * TT_ELIMIT) with a message, never a crash.
 *
 * The module is compiled into this file, so that it gets the fuzzer's
 * coverage instrumentation; its archive member is then never linked in.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backends/iceberg/iceberg_meta.c"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_step(const tt_iceberg_snapshot *s, void *ctx, tt_error *err)
{
	(void)err;
	(void)tt_iceberg_summary(s, "operation");
	(*(size_t *)ctx)++;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tt_error err = TT_ERROR_INIT;
	tt_iceberg_meta m;
	size_t steps = 0;
	bool changed;
	int rc = tt_iceberg_meta_parse(data, size, "fuzz.metadata.json", &m, &err);
	if (rc != 0) {
		if (rc != TT_ENOMEM && ((rc != TT_EPARSE && rc != TT_ELIMIT) || !err.message))
			abort();
		tt_iceberg_meta_release(&m);
		tt_error_clear(&err);
		return 0;
	}
	for (size_t i = 0; i < m.nrefs; i++) {
		size_t before = steps;
		tt_iceberg_meta_ancestry(&m, m.refs[i].snapshot_id, count_step, &steps, &err);
		if (steps - before > m.nsnaps)
			abort();
	}
	if (m.nsnaps) {
		long long id = m.snaps[0].id;
		if (tt_iceberg_meta_set_ref(&m, "tether.fuzz", true, id, "prev", 1, &changed, &err) == 0) {
			if (!tt_iceberg_meta_ref(&m, "tether.fuzz"))
				abort();
			tt_iceberg_meta_remove_ref(&m, "tether.fuzz", "prev", 2, &changed, &err);
		}
		tt_error_clear(&err);
	}
	tt_iceberg_meta_release(&m);
	tt_error_clear(&err);
	return 0;
}
