/*
 * fuzz_index - libFuzzer target for core/index's store records.
 *
 * The input is written as the created-store index of a scratch shared
 * directory and read the way gc reads it: a read either succeeds with
 * records of the asked dataset in the checked shape (each with its line),
 * or fails with TT_ECONFIG and a message; a second read agrees.  Then one
 * store is forgotten: what is left must still read, without that store.
 * Any disagreement aborts.
 *
 * The module under test is compiled into this file for the fuzzer's
 * coverage instrumentation (the library itself is built without it).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/index.c"
#include "util/fs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DS "5e1f0a7b"

static char *dir;

static void remove_scratch(void)
{
	char *file = tt_path_join(dir, TT_CREATED_FILENAME);
	if (file)
		unlink(file);
	rmdir(dir);
	free(file);
}

static char *scratch_dir(void)
{
	if (!dir) {
		char tmpl[] = "/tmp/fuzz_index.XXXXXX";
		if (!mkdtemp(tmpl) || !(dir = strdup(tmpl)))
			abort();
		atexit(remove_scratch);
	}
	return dir;
}

static bool shaped(const json_t *r)
{
	const json_t *bm = json_object_get(r, "bookmark");
	return json_is_string(json_object_get(r, "dataset_id")) &&
	       strcmp(json_string_value(json_object_get(r, "dataset_id")), DS) == 0 &&
	       json_string_length(json_object_get(r, "kind")) > 0 &&
	       json_is_object(json_object_get(r, "identity")) &&
	       json_object_size(json_object_get(r, "locator")) > 0 && (!bm || json_is_null(bm) || json_is_string(bm)) &&
	       json_integer_value(json_object_get(r, "line")) > 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tt_error err = TT_ERROR_INIT;
	char *d = scratch_dir(), *path = tt_path_join(d, TT_CREATED_FILENAME);
	FILE *f = path ? fopen(path, "wb") : NULL;
	json_t *recs = NULL, *again = NULL, *left = NULL;
	size_t i;
	json_t *r;
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
		abort();
	free(path);
	int rc = tt_index_read_stores(d, TT_CREATED_FILENAME, DS, &recs, &err);
	if (rc != 0) {
		if (rc != TT_ECONFIG || !err.message || recs)
			abort();
		tt_error_clear(&err);
		if (tt_index_read_stores(d, TT_CREATED_FILENAME, DS, &again, &err) != TT_ECONFIG)
			abort();
		tt_error_clear(&err);
		return 0;
	}
	json_array_foreach(recs, i, r)
		if (!shaped(r))
			abort();
	if (tt_index_read_stores(d, TT_CREATED_FILENAME, DS, &again, &err) != 0 ||
	    json_array_size(again) != json_array_size(recs))
		abort();
	if (json_array_size(recs)) {
		json_t *identity = json_object_get(json_array_get(recs, 0), "identity");
		if (tt_index_forget_store(d, TT_CREATED_FILENAME, DS, identity, &err) != 0)
			abort();
		if (tt_index_read_stores(d, TT_CREATED_FILENAME, DS, &left, &err) != 0 ||
		    json_array_size(left) >= json_array_size(recs))
			abort();
		json_array_foreach(left, i, r)
			if (json_equal(json_object_get(r, "identity"), identity))
				abort();
	}
	json_decref(recs);
	json_decref(again);
	json_decref(left);
	tt_error_clear(&err);
	return 0;
}
