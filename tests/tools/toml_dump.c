/*
 * toml_dump - a plain JSON document on stdin, tt_toml_write(tt_toml_from_json())
 * on stdout: the end-to-end tests compare this with tomlkit.dumps().
 */
#include <stdio.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/toml.h"

int main(void)
{
	json_error_t jerr;
	json_t *j = json_loadf(stdin, JSON_ALLOW_NUL, &jerr);
	if (!j) {
		fprintf(stderr, "toml_dump: bad JSON: %s (line %d)\n", jerr.text, jerr.line);
		return 1;
	}
	tt_error err = TT_ERROR_INIT;
	tt_buf out = TT_BUF_INIT;
	tt_toml_value *doc = tt_toml_from_json(j, &err);
	int rc = doc ? tt_toml_write(&out, doc, &err) : err.code;
	if (rc == 0)
		fwrite(out.ptr, 1, out.len, stdout);
	else
		fprintf(stderr, "toml_dump: %s\n", err.message ? err.message : "failed");
	tt_error_clear(&err);
	tt_buf_release(&out);
	tt_toml_free(doc);
	json_decref(j);
	return rc ? 1 : 0;
}
