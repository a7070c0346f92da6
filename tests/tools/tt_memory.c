/*
 * tt_memory - read and write the memory backend's store from end-to-end
 * tests (the store is the file TETHER_MEMORY_STORE names; without it each
 * run sees an empty in-process store).
 *
 *   tt_memory write SYSTEM BRANCH JSON   append a snapshot holding the JSON
 *                                        object to BRANCH; prints its id
 *   tt_memory show SYSTEM                prints the system as JSON
 *
 * Exit status: 0 done, 1 the store refused (message on stderr), 2 usage.
 */
#include <stdio.h>
#include <string.h>

#include "backends/memory/memory.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/mem.h"

static int usage(void)
{
	fputs("usage: tt_memory write SYSTEM BRANCH JSON\n"
	      "       tt_memory show SYSTEM\n",
	      stderr);
	return 2;
}

static int fail(tt_error *err)
{
	fprintf(stderr, "error: %s\n", tt_error_text(err));
	tt_error_clear(err);
	return 1;
}

int main(int argc, char **argv)
{
	tt_error err = TT_ERROR_INIT;

	if (argc == 5 && strcmp(argv[1], "write") == 0) {
		json_t *payload = tt_json_parse(argv[4], strlen(argv[4]), "JSON", &err);
		char *sid = NULL;
		if (!payload)
			return fail(&err);
		int rc = tt_memory_write(argv[2], argv[3], payload, &sid, &err);
		json_decref(payload);
		if (rc)
			return fail(&err);
		printf("%s\n", sid);
		free(sid);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "show") == 0) {
		json_t *sys = NULL;
		tt_buf out = TT_BUF_INIT;
		if (tt_memory_show(argv[2], &sys, &err) != 0)
			return fail(&err);
		int rc = tt_json_dump(&out, sys, TT_JSON_PRETTY);
		json_decref(sys);
		if (rc) {
			tt_buf_release(&out);
			fputs("error: cannot print the system\n", stderr);
			return 1;
		}
		printf("%s\n", out.ptr);
		tt_buf_release(&out);
		return 0;
	}
	return usage();
}
