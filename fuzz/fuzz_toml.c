/*
 * fuzz_toml - libFuzzer target for util/toml: parse the input; when it is
 * valid, write it back, parse the output and require the same tree (and
 * run the JSON conversion for coverage).  Any mismatch aborts.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/toml.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf out = TT_BUF_INIT;
	tt_toml_value *doc = NULL, *again = NULL;

	if (tt_toml_parse(&doc, (const char *)data, size, "fuzz", &err) != 0) {
		if (err.code != TT_EPARSE || !err.message)
			abort();
		goto done;
	}
	json_decref(tt_toml_to_json(doc, "fuzz", &err));
	tt_error_clear(&err);

	if (tt_toml_write(&out, doc, &err) != 0)
		abort();
	if (tt_toml_parse(&again, out.ptr, out.len, "written", &err) != 0) {
		fprintf(stderr, "re-parse failed: %s\n--- written:\n%s\n", err.message, out.ptr);
		abort();
	}
	if (!tt_toml_equal(doc, again)) {
		fprintf(stderr, "round trip changed the document\n--- written:\n%s\n", out.ptr);
		abort();
	}
done:
	tt_toml_free(doc);
	tt_toml_free(again);
	tt_buf_release(&out);
	tt_error_clear(&err);
	return 0;
}
