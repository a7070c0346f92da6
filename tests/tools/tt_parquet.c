/*
 * tt_parquet - print one string column of a Parquet file as formats/parquet
 * reads it, for the end-to-end tests to compare with pyarrow.
 *
 *   tt_parquet FILE COLUMN    COLUMN is dotted ("add.path"); prints
 *                             {"found": bool, "values": [...], "rows": [...]}
 *                             with every non-null value in row order and
 *                             the row each is in
 *
 * Exit 1 with "<code>: <message>" on stderr when the read fails, where
 * code is parse, capability, limit or other.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats/parquet.h"
#include "util/buf.h"
#include "util/fs.h"

static int collect(void *ctx, int64_t row, const unsigned char *s, size_t n, tt_error *err)
{
	json_t *out = ctx, *v = json_stringn((const char *)s, n);
	if (!v)
		return tt_error_set(err, TT_EPARSE, "a value is not UTF-8");
	if (json_array_append_new(json_object_get(out, "values"), v) ||
	    json_array_append_new(json_object_get(out, "rows"), json_integer(row)))
		return tt_error_oom(err);
	return 0;
}

static const char *code_name(int code)
{
	return code == TT_EPARSE ? "parse" : code == TT_ECAPABILITY ? "capability"
		: code == TT_ELIMIT ? "limit" : "other";
}

int main(int argc, char **argv)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf file = TT_BUF_INIT;
	const char *path[16];
	size_t depth = 0;
	bool found;
	int rc;

	if (argc != 3) {
		fprintf(stderr, "usage: tt_parquet FILE COLUMN\n");
		return 2;
	}
	char *col = strdup(argv[2]);
	for (char *save = NULL, *part = strtok_r(col, ".", &save); part && depth < 16;
	     part = strtok_r(NULL, ".", &save))
		path[depth++] = part;
	json_t *out = json_pack("{s:[], s:[]}", "values", "rows");
	if ((rc = tt_read_file(argv[1], &file, (size_t)1 << 34, &err)) == 0)
		rc = tt_parquet_strings((const unsigned char *)file.ptr, file.len, argv[1], path, depth,
					collect, out, &found, &err);
	if (rc) {
		fprintf(stderr, "%s: %s\n", code_name(rc), tt_error_text(&err));
	} else {
		json_object_set_new(out, "found", json_boolean(found));
		char *text = json_dumps(out, JSON_COMPACT | JSON_ENSURE_ASCII);
		puts(text);
		free(text);
	}
	json_decref(out);
	tt_buf_release(&file);
	tt_error_clear(&err);
	free(col);
	return rc ? 1 : 0;
}
