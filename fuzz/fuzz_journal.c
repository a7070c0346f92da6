/*
 * fuzz_journal - libFuzzer target for core/oplog and core/plan.
 *
 * The input is written as .tether/ops.jsonl of a scratch dataset and
 * folded (and folded again from memory: both must agree); every entry is
 * summarized and listed.  The same bytes are loaded as a saved plan; a plan
 * that loads is written back, and that text must load again unedited and
 * write back byte for byte.  Any disagreement aborts.
 *
 * The two modules under test are compiled into this file, so that they get
 * the fuzzer's coverage instrumentation (the library itself is built
 * without it); their archive members are then never linked in.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/oplog.c"
#include "core/plan.c"
#include "util/buf.h"
#include "util/fs.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *root;

/* Remove the scratch dataset when the process ends. */
static void remove_scratch(void)
{
	char *dir = tt_path_join(root, ".tether");
	char *file = dir ? tt_path_join(dir, "ops.jsonl") : NULL;
	if (file)
		unlink(file);
	if (dir)
		rmdir(dir);
	rmdir(root);
	free(file);
	free(dir);
}

static char *scratch_root(void)
{
	if (!root) {
		char tmpl[] = "/tmp/fuzz_journal.XXXXXX";
		tt_error err = TT_ERROR_INIT;
		char *dir;
		if (!mkdtemp(tmpl))
			abort();
		root = strdup(tmpl);
		dir = root ? tt_path_join(root, ".tether") : NULL;
		if (!dir || tt_mkdirs(dir, 0700, &err))
			abort();
		free(dir);
		atexit(remove_scratch);
	}
	return root;
}

static void check_error(const tt_error *err)
{
	if (err->code >= 0 || !err->message)
		abort();
}

static void fuzz_journal(const uint8_t *data, size_t size)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT, mem = TT_OPLOG_INIT;
	char *root = scratch_root();
	char *path = tt_path_join(root, ".tether/ops.jsonl");
	FILE *f = path ? fopen(path, "wb") : NULL;
	if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
		abort();
	free(path);

	int rc = tt_oplog_read(root, &log, &err);
	if (rc) {
		check_error(&err);
		tt_error_clear(&err);
	}
	int rc2 = tt_oplog_parse((const char *)data, size, NULL, &mem, &err);
	if ((rc == 0) != (rc2 == 0) || log.count != mem.count)
		abort();
	tt_error_clear(&err);
	for (size_t i = 0; i < log.count; i++) {
		const tt_op_entry *e = &log.entries[i];
		char *s = tt_op_summary(e), *line = tt_op_format_line(e, i & 1);
		char *s2 = tt_op_summary(&mem.entries[i]);
		json_t *j = tt_op_to_json(e, false);
		if (!s || !line || !j || !s2 || strcmp(s, s2) != 0)
			abort();
		if (!json_equal(e->record, mem.entries[i].record))
			abort();
		(void)tt_op_undoable(e);
		(void)tt_op_incomplete(e);
		free(s);
		free(s2);
		free(line);
		json_decref(j);
	}
	if (log.count && tt_oplog_newest(&log, 0) != &log.entries[log.count - 1])
		abort();
	tt_oplog_free(&log);
	tt_oplog_free(&mem);
}

static void fuzz_plan(const uint8_t *data, size_t size)
{
	tt_error err = TT_ERROR_INIT;
	tt_plan *plan = NULL, *again = NULL;
	tt_buf a = TT_BUF_INIT, b = TT_BUF_INIT, text = TT_BUF_INIT, missing = TT_BUF_INIT;

	if (tt_plan_parse(&plan, (const char *)data, size, &err) != 0) {
		check_error(&err);
		goto done;
	}
	(void)tt_plan_edited(plan);
	(void)tt_plan_write_count(plan);
	tt_plan_missing_preconditions(plan, &missing);
	if (tt_plan_check(plan, &err) != 0)
		check_error(&err);
	tt_error_clear(&err);
	if (tt_plan_render_text(plan, &text, &err) != 0)
		abort();
	if (tt_plan_to_json(plan, &a, &err) != 0)
		abort();
	if (tt_plan_parse(&again, a.ptr, a.len, &err) != 0) {
		fprintf(stderr, "written plan does not load: %s\n%s\n", err.message, a.ptr);
		abort();
	}
	if (tt_plan_edited(again) || tt_plan_to_json(again, &b, &err) != 0 ||
	    a.len != b.len || memcmp(a.ptr, b.ptr, a.len) != 0) {
		fprintf(stderr, "plan round trip changed it\n--- first:\n%s\n--- second:\n%s\n",
			a.ptr, b.ptr);
		abort();
	}
done:
	tt_plan_free(plan);
	tt_plan_free(again);
	tt_buf_release(&a);
	tt_buf_release(&b);
	tt_buf_release(&text);
	tt_buf_release(&missing);
	tt_error_clear(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_journal(data, size);
	fuzz_plan(data, size);
	return 0;
}
