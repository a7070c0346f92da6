/*
 * fuzz_delta_log - libFuzzer target for the Delta log readers
 * (backends/delta/delta_log.c): the input is read as a commit file (its
 * commitInfo, metaData and add/remove actions) and as the tail of a Parquet
 * checkpoint (the Thrift-compact footer).  Malformed input must be a
 * TT_EPARSE with a message, never a crash; an id from a footer must be
 * text.
 *
 * The module is compiled into this file, so that it gets the fuzzer's
 * coverage instrumentation; its archive member is then never linked in.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/delta/delta_log.c"
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count_file(void *ctx, tt_delta_file_action action, const char *path, tt_error *err)
{
	(void)err;
	if (!path || action > TT_DELTA_REMOVE_DV)
		abort();
	(*(size_t *)ctx)++;
	return 0;
}

static void expect_parse_error(int rc, tt_error *err)
{
	if (rc == 0 || rc == TT_ENOMEM)
		return;
	if (rc != TT_EPARSE || err->code != TT_EPARSE || !err->message)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tt_error err = TT_ERROR_INIT;
	tt_delta_commit c;
	size_t files = 0;
	char *id = NULL;
	int rc;

	rc = tt_delta_parse_commit((const char *)data, size, "fuzz.json", &c, &err);
	expect_parse_error(rc, &err);
	if (rc == 0) {
		if (c.table_id && !tt_utf8_valid(c.table_id, strlen(c.table_id)))
			abort();
		tt_delta_commit_release(&c);
	}
	tt_error_clear(&err);

	rc = tt_delta_commit_files((const char *)data, size, "fuzz.json", count_file, &files, &err);
	expect_parse_error(rc, &err);
	tt_error_clear(&err);

	rc = tt_delta_footer_table_id(data, size, "fuzz.parquet", &id, &err);
	expect_parse_error(rc, &err);
	if (rc == 0 && id && !tt_utf8_valid(id, strlen(id)))
		abort();
	free(id);
	tt_error_clear(&err);
	return 0;
}
