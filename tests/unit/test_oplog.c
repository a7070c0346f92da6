/* Unit tests for core/oplog: journaling (begin, progress, done, undo marks),
 * folding as tether-vcs's read_ops folds, torn and malformed lines,
 * concurrent appends, and the `tether ops` summaries (expected strings
 * produced by tether-vcs 0.1.0b7's OpEntry.summary() on the same entries). */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/oplog.h"
#include "harness.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"

static char *ops_file(const char *root)
{
	return tt_asprintf("%s/.tether/ops.jsonl", root);
}

/* Replace the journal with text. */
static int write_ops(const char *root, const char *text)
{
	tt_error err = TT_ERROR_INIT;
	char *path = ops_file(root);
	int rc = path ? tt_write_file_atomic(path, text, strlen(text), 0644, &err) : -1;
	free(path);
	tt_error_clear(&err);
	return rc;
}

static char *read_ops_text(const char *root)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf b = TT_BUF_INIT;
	char *path = ops_file(root);
	int rc = path ? tt_read_file(path, &b, 0, &err) : -1;
	free(path);
	tt_error_clear(&err);
	if (rc) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

/* A fresh dataset-like directory per call inside the case's tmpdir. */
static char *new_root(void)
{
	static int n;
	tt_error err = TT_ERROR_INIT;
	char *root = tt_asprintf("%s/root%d", tt_test_tmpdir(), n++);
	char *dir = root ? tt_asprintf("%s/.tether", root) : NULL;
	if (!dir || tt_mkdirs(dir, 0755, &err)) {
		free(root);
		root = NULL;
	}
	free(dir);
	tt_error_clear(&err);
	return root;
}

static const char *dumps(const json_t *v)
{
	static char out[8192];
	static const tt_json_style st = { -1, false, true, false };
	tt_buf b = TT_BUF_INIT;
	tt_json_dump(&b, v, st);
	snprintf(out, sizeof out, "%s", b.ptr);
	tt_buf_release(&b);
	return out;
}

TT_TEST(missing_log_is_empty)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT;
	char *root = new_root();
	CHECK(root);
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 0);
	CHECK(tt_oplog_newest(&log, 0) == NULL);
	tt_oplog_free(&log);
	free(root);
}

TT_TEST(begin_progress_done_fold)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT;
	char id[TT_OP_ID_LEN + 1], id2[TT_OP_ID_LEN + 1];
	char *root = new_root();
	json_t *pre = json_pack("{s:i,s:i}", "a", 1, "b", 2);
	json_t *late = json_pack("{s:i,s:i}", "b", 3, "c", 4);
	json_t *result = json_pack("{s:{s:s,s:n}}", "pinned", "k1", "p1", "k2");
	json_t *detail = json_pack("{s:s}", "key", "k1");
	json_t *plan = json_pack("{s:i,s:s}", "format", 3, "command", "commit");
	CHECK(root && pre && late && result && detail && plan);

	CHECK_OK(tt_oplog_begin(root, "commit", plan, pre, NULL, id, &err));
	CHECK_INT(strlen(id), TT_OP_ID_LEN);
	/* The started entry is on disk before anything else happens. */
	char *text = read_ops_text(root);
	CHECK(text);
	CHECK(strstr(text, "\"status\": \"started\""));
	CHECK(strstr(text, "\"plan\": {\"format\": 3, \"command\": \"commit\"}"));
	CHECK(text[strlen(text) - 1] == '\n');
	free(text);
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 1);
	CHECK(tt_op_incomplete(&log.entries[0]));
	CHECK(!tt_op_undoable(&log.entries[0]));

	CHECK_OK(tt_oplog_progress(root, id, "pin", detail, &err));
	CHECK_OK(tt_oplog_progress(root, id, "record", NULL, &err));
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(json_array_size(log.entries[0].progress), 2);
	CHECK_STR(dumps(log.entries[0].progress),
		  "[{\"action\": \"pin\", \"key\": \"k1\"}, {\"action\": \"record\"}]");
	CHECK(tt_op_incomplete(&log.entries[0]));

	CHECK_OK(tt_oplog_done(root, id, result, late, NULL, &err));
	CHECK_OK(tt_oplog_read(root, &log, &err));
	const tt_op_entry *e = &log.entries[0];
	CHECK_STR(e->id, id);
	CHECK_STR(e->command, "commit");
	CHECK_STR(e->status, "done");
	CHECK(!tt_op_incomplete(e));
	CHECK(tt_op_undoable(e));
	CHECK_STR(dumps(e->pre), "{\"a\": 1, \"b\": 3, \"c\": 4}");
	CHECK_STR(dumps(e->result), "{\"pinned\": {\"k1\": \"p1\", \"k2\": null}}");
	char *s = tt_op_summary(e);
	CHECK_STR(s, "pinned k1; recorded k2");
	free(s);

	/* An undo: begun with undoes, done with the undone mark riding along. */
	CHECK_OK(tt_oplog_begin_ex(root, "undo", NULL, NULL, id, NULL, id2, &err));
	json_t *ures = json_pack("{s:s}", "summary", "pinned k1");
	CHECK(ures);
	CHECK_OK(tt_oplog_done(root, id2, ures, NULL, id, &err));
	json_decref(ures);
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 2);
	CHECK_STR(json_string_value(log.entries[0].undone_by), id2);
	CHECK(!tt_op_undoable(&log.entries[0]));
	e = tt_oplog_newest(&log, 0);
	CHECK_STR(e->id, id2);
	CHECK_STR(json_string_value(e->undoes), id);
	CHECK(!tt_op_undoable(e));
	s = tt_op_summary(e);
	char *want = tt_asprintf("undid %s: pinned k1", id);
	CHECK_STR(s, want);
	free(s);
	free(want);
	CHECK(tt_oplog_find(&log, id) == &log.entries[0]);
	CHECK(tt_oplog_newest(&log, 1) == &log.entries[0]);
	CHECK(tt_oplog_newest(&log, 2) == NULL);

	/* A step of another operation is not undoable on its own. */
	char id3[TT_OP_ID_LEN + 1];
	CHECK_OK(tt_oplog_begin(root, "gc", NULL, NULL, id2, id3, &err));
	CHECK_OK(tt_oplog_done(root, id3, NULL, NULL, NULL, &err));
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 3);
	CHECK(!tt_op_incomplete(&log.entries[2]));
	CHECK(!tt_op_undoable(&log.entries[2]));
	CHECK_STR(json_string_value(log.entries[2].parent), id2);

	/* The older separate undo mark. */
	CHECK_OK(tt_oplog_mark_undone(root, id3, "zzzzzzzzzzzz", &err));
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_STR(json_string_value(log.entries[2].undone_by), "zzzzzzzzzzzz");

	/* "action" may not be overridden by the detail. */
	json_t *bad = json_pack("{s:s}", "action", "x");
	CHECK(bad);
	CHECK_INT(tt_oplog_progress(root, id, "pin", bad, &err), TT_EUSAGE);
	tt_error_clear(&err);
	json_decref(bad);

	tt_oplog_free(&log);
	json_decref(pre);
	json_decref(late);
	json_decref(result);
	json_decref(detail);
	json_decref(plan);
	free(root);
}

TT_TEST(record_is_done_entry)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT;
	char id[TT_OP_ID_LEN + 1];
	char *root = new_root();
	json_t *r = json_pack("{s:s,s:b}", "key", "data/x", "created", 1);
	json_t *pre = json_object();
	CHECK(root && r && pre);
	CHECK_OK(tt_oplog_record(root, "add", r, pre, id, &err));
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 1);
	CHECK_STR(log.entries[0].status, "done");
	char *s = tt_op_summary(&log.entries[0]);
	CHECK_STR(s, "data/x (created store)");
	free(s);
	json_t *j = tt_op_to_json(&log.entries[0], true);
	CHECK(j);
	char *want = tt_asprintf("{\"id\": \"%s\", \"at\": \"%s\", \"command\": \"add\", \"plan\": null, "
				 "\"result\": {\"key\": \"data/x\", \"created\": true}, \"pre\": {}, "
				 "\"undoes\": null, \"undone_by\": null, \"status\": \"done\", "
				 "\"parent\": null, \"progress\": [], \"vcs_commit_gone\": true}",
				 id, log.entries[0].at);
	CHECK_STR(dumps(j), want);
	free(want);
	json_decref(j);
	char *line = tt_op_format_line(&log.entries[0], false);
	want = tt_asprintf("%s  %s  add      data/x (created store)", id, log.entries[0].at);
	CHECK_STR(line, want);
	free(want);
	free(line);
	tt_oplog_free(&log);
	json_decref(r);
	json_decref(pre);
	free(root);
}

/* A hand-written log; the expected fold is what read_ops gives for it. */
static const char scenario[] =
	"{\"id\": \"aaaaaaaaaaaa\", \"at\": \"2026-01-01T00:00:00+00:00\", \"command\": \"commit\", \"plan\": null, \"result\": {}, \"pre\": {\"a\": 1, \"b\": 2}, \"undoes\": null, \"undone_by\": null, \"status\": \"started\", \"parent\": null, \"progress\": []}\n"
	"{\"progress\": \"aaaaaaaaaaaa\", \"action\": \"pin\", \"key\": \"k1\"}\n"
	"{\"progress\": \"aaaaaaaaaaaa\", \"action\": \"pin\", \"key\": \"k2\"}\n"
	"\n"
	"{\"done\": \"aaaaaaaaaaaa\", \"result\": {\"pinned\": {\"k1\": \"p\"}}, \"pre\": {\"b\": 3, \"c\": 4}}\n"
	"{\"id\": \"bbbbbbbbbbbb\", \"at\": \"2026-01-01T00:00:01+00:00\", \"command\": \"new\", \"plan\": null, \"result\": {}, \"pre\": {}, \"undoes\": null, \"undone_by\": null, \"status\": \"started\", \"parent\": null, \"progress\": []}\n"
	"{\"progress\": \"bbbbbbbbbbbb\", \"action\": \"fork\", \"key\": \"k1\"}\n"
	"{\"id\": \"cccccccccccc\", \"at\": \"2026-01-01T00:00:02+00:00\", \"command\": \"undo\", \"plan\": null, \"result\": {}, \"pre\": {}, \"undoes\": \"aaaaaaaaaaaa\", \"undone_by\": null, \"status\": \"started\", \"parent\": null, \"progress\": []}\n"
	"{\"done\": \"cccccccccccc\", \"result\": {\"summary\": \"x\"}, \"pre\": {}, \"undone\": \"aaaaaaaaaaaa\", \"by\": \"cccccccccccc\"}\n"
	"{\"id\": \"dddddddddddd\", \"at\": \"2026-01-01T00:00:03+00:00\", \"command\": \"gc\", \"plan\": null, \"result\": {}, \"pre\": {}, \"undoes\": null, \"undone_by\": null, \"status\": \"done\", \"parent\": \"bbbbbbbbbbbb\", \"progress\": []}\n"
	"{\"id\": \"eeeeeeeeeeee\", \"at\": \"2026-01-01T00:00:04+00:00\", \"command\": \"add\", \"plan\": null, \"result\": {\"key\": \"k\"}, \"pre\": {}, \"undoes\": null, \"undone_by\": null, \"status\": \"done\", \"parent\": null, \"progress\": []}\n"
	"{\"undone\": \"eeeeeeeeeeee\", \"by\": \"ffffffffffff\"}\n"
	"{\"id\": \"ffffffffffff\", \"at\": \"2026-01-01T00:00:05+00:00\", \"command\": \"set\", \"plan\": null, \"result\": {}, \"pre\": {}, \"undoes\": null, \"undone_by\": null, \"status\": \"done\", \"parent\": null, \"progress\": []}\n"
	"{\"id\": \"gggggggggggg\", \"at\": \"2026-01-01T00:00:06+00:00\", \"comm";

static const struct {
	const char *record;
	bool incomplete, undoable;
	const char *summary;
} scenario_fold[] = {
	{ "{\"id\": \"aaaaaaaaaaaa\", \"at\": \"2026-01-01T00:00:00+00:00\", \"command\": \"commit\", \"plan\": null, \"result\": {\"pinned\": {\"k1\": \"p\"}}, \"pre\": {\"a\": 1, \"b\": 3, \"c\": 4}, \"undoes\": null, \"undone_by\": \"cccccccccccc\", \"status\": \"done\", \"parent\": null, \"progress\": [{\"action\": \"pin\", \"key\": \"k1\"}, {\"action\": \"pin\", \"key\": \"k2\"}]}",
	  false, false, "pinned k1" },
	{ "{\"id\": \"bbbbbbbbbbbb\", \"at\": \"2026-01-01T00:00:01+00:00\", \"command\": \"new\", \"plan\": null, \"result\": {}, \"pre\": {}, \"undoes\": null, \"undone_by\": null, \"status\": \"started\", \"parent\": null, \"progress\": [{\"action\": \"fork\", \"key\": \"k1\"}]}",
	  true, false, "working refs unchanged" },
	{ "{\"id\": \"cccccccccccc\", \"at\": \"2026-01-01T00:00:02+00:00\", \"command\": \"undo\", \"plan\": null, \"result\": {\"summary\": \"x\"}, \"pre\": {}, \"undoes\": \"aaaaaaaaaaaa\", \"undone_by\": null, \"status\": \"done\", \"parent\": null, \"progress\": []}",
	  false, false, "undid aaaaaaaaaaaa: x" },
	{ "{\"id\": \"dddddddddddd\", \"at\": \"2026-01-01T00:00:03+00:00\", \"command\": \"gc\", \"plan\": null, \"result\": {}, \"pre\": {}, \"undoes\": null, \"undone_by\": null, \"status\": \"done\", \"parent\": \"bbbbbbbbbbbb\", \"progress\": []}",
	  false, false, "unpinned 0, deleted 0 branch(es)" },
	{ "{\"id\": \"eeeeeeeeeeee\", \"at\": \"2026-01-01T00:00:04+00:00\", \"command\": \"add\", \"plan\": null, \"result\": {\"key\": \"k\"}, \"pre\": {}, \"undoes\": null, \"undone_by\": \"ffffffffffff\", \"status\": \"done\", \"parent\": null, \"progress\": []}",
	  false, false, "k" },
	{ "{\"id\": \"ffffffffffff\", \"at\": \"2026-01-01T00:00:05+00:00\", \"command\": \"set\", \"plan\": null, \"result\": {}, \"pre\": {}, \"undoes\": null, \"undone_by\": null, \"status\": \"done\", \"parent\": null, \"progress\": []}",
	  false, true, "" },
};

TT_TEST(fold_like_read_ops)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT;
	char *root = new_root();
	CHECK(root);
	CHECK(write_ops(root, scenario) == 0);
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, sizeof scenario_fold / sizeof *scenario_fold);
	for (size_t i = 0; i < log.count; i++) {
		const tt_op_entry *e = &log.entries[i];
		CHECK_STR(dumps(e->record), scenario_fold[i].record);
		CHECK_MSG(tt_op_incomplete(e) == scenario_fold[i].incomplete, "entry %zu", i);
		CHECK_MSG(tt_op_undoable(e) == scenario_fold[i].undoable, "entry %zu", i);
		char *s = tt_op_summary(e);
		CHECK_STR(s, scenario_fold[i].summary);
		free(s);
	}
	CHECK_INT(log.entries[0].line, 1);
	CHECK_INT(log.entries[1].line, 6);
	/* The INCOMPLETE flag of `tether ops`. */
	char *line = tt_op_format_line(&log.entries[1], false);
	CHECK_STR(line, "bbbbbbbbbbbb  2026-01-01T00:00:01+00:00  new      working refs unchanged"
			"  (INCOMPLETE: never finished; see `tether repair --dry-run`)");
	free(line);
	line = tt_op_format_line(&log.entries[3], true);
	CHECK_STR(line, "dddddddddddd  2026-01-01T00:00:03+00:00  gc       unpinned 0, deleted 0 "
			"branch(es)  (vcs commit gone)  (step of bbbbbbbbbbbb)");
	free(line);
	line = tt_op_format_line(&log.entries[4], true);
	CHECK_STR(line, "eeeeeeeeeeee  2026-01-01T00:00:04+00:00  add      k  (undone by ffffffffffff)");
	free(line);
	tt_oplog_free(&log);
	free(root);
}

TT_TEST(torn_last_line_skipped_then_repaired)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT;
	char id[TT_OP_ID_LEN + 1];
	char *root = new_root();
	CHECK(root);
	CHECK(write_ops(root, scenario) == 0);
	CHECK_OK(tt_oplog_begin(root, "commit", NULL, NULL, NULL, id, &err));
	/* The fragment got its newline; the new entry is on a line of its own. */
	char *text = read_ops_text(root);
	CHECK(text);
	CHECK(strstr(text, "\"comm\n{\"id\": \""));
	free(text);
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 7);
	CHECK_STR(log.entries[6].id, id);
	CHECK(tt_op_incomplete(&log.entries[6]));
	tt_oplog_free(&log);

	/* A torn line that is not even a JSON prefix, last: skipped. */
	CHECK(write_ops(root, "{\"undone\": \"x\", \"by\": \"y\"}\n@@garbage") == 0);
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 0);
	/* Not UTF-8 on the last line: skipped too. */
	CHECK(write_ops(root, "{\"id\": \"a\", \"command\": \"add\"}\n{\"id\": \"\xff") == 0);
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 1);
	/* A complete last line without its newline is read. */
	CHECK(write_ops(root, "{\"id\": \"a\", \"command\": \"add\"}\n{\"id\": \"b\", \"command\": \"set\"}") == 0);
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 2);
	CHECK_STR(log.entries[1].status, "done");
	tt_oplog_free(&log);
	free(root);
}

TT_TEST(malformed_middle_line_refused)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT;
	char *root = new_root();
	CHECK(root);
	CHECK(write_ops(root, "{\"id\": \"a\", \"command\": \"add\"}\n\n{\"id\": oops}\n"
			      "{\"id\": \"b\", \"command\": \"add\"}\n") == 0);
	CHECK_INT(tt_oplog_read(root, &log, &err), TT_EPARSE);
	CHECK(strncmp(err.message, ".tether/ops.jsonl:3: ", 21) == 0);
	tt_error_clear(&err);
	CHECK_INT(log.count, 0);
	/* A line that is valid JSON but not an object. */
	CHECK(write_ops(root, "[1]\n{\"id\": \"b\", \"command\": \"add\"}\n") == 0);
	CHECK_INT(tt_oplog_read(root, &log, &err), TT_EPARSE);
	CHECK(strncmp(err.message, ".tether/ops.jsonl:1: ", 21) == 0);
	tt_error_clear(&err);
	/* An entry without an id. */
	CHECK(write_ops(root, "{\"command\": \"add\"}\n{\"id\": \"b\", \"command\": \"add\"}\n") == 0);
	CHECK_INT(tt_oplog_read(root, &log, &err), TT_EPARSE);
	CHECK(strstr(err.message, ":1: "));
	tt_error_clear(&err);
	/* Invalid UTF-8 in the middle. */
	CHECK(write_ops(root, "{\"id\": \"a\", \"command\": \"add\", \"at\": \"\xc3\"}\n{}\n") == 0);
	CHECK_INT(tt_oplog_read(root, &log, &err), TT_EPARSE);
	CHECK(strstr(err.message, ":1: "));
	tt_error_clear(&err);
	/* But a torn fragment an append closed (a JSON prefix) is skipped. */
	CHECK(write_ops(root, "{\"id\": \"a\", \"command\": \"add\"}\n{\"id\": \"b\", \"comm\n"
			      "{\"id\": \"c\", \"command\": \"add\"}\n{\"id\": \"d\", \"x\": [1, 2.\n"
			      "{\"id\": \"e\", \"command\": \"set\", \"at\": tr\n{}\n") == 0);
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 2);
	CHECK_STR(log.entries[1].id, "c");
	tt_oplog_free(&log);
	free(root);
}

TT_TEST(deeply_nested_line_refused_anywhere)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT;
	char *root = new_root();
	tt_buf text = TT_BUF_INIT;
	CHECK(root);
	/* A complete line nested deeper than the parser reads: not a torn
	 * append, so refused with its line number, in the middle and last. */
	tt_buf_puts(&text, "{\"id\": \"a\", \"command\": \"add\"}\n");
	for (int i = 0; i < 5000; i++)
		tt_buf_putc(&text, '[');
	for (int i = 0; i < 5000; i++)
		tt_buf_putc(&text, ']');
	tt_buf_putc(&text, '\n');
	CHECK(!text.failed);
	CHECK(write_ops(root, text.ptr) == 0);
	CHECK_INT(tt_oplog_read(root, &log, &err), TT_EPARSE);
	CHECK(err.message && strncmp(err.message, ".tether/ops.jsonl:2: ", 21) == 0);
	tt_error_clear(&err);
	tt_buf_puts(&text, "{\"id\": \"b\", \"command\": \"add\"}\n");
	CHECK(write_ops(root, text.ptr) == 0);
	CHECK_INT(tt_oplog_read(root, &log, &err), TT_EPARSE);
	CHECK(err.message && strncmp(err.message, ".tether/ops.jsonl:2: ", 21) == 0);
	tt_error_clear(&err);
	/* Unfinished, last: a torn append, skipped as before. */
	tt_buf_truncate(&text, 0);
	tt_buf_puts(&text, "{\"id\": \"a\", \"command\": \"add\"}\n");
	for (int i = 0; i < 5000; i++)
		tt_buf_putc(&text, '[');
	CHECK(write_ops(root, text.ptr) == 0);
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 1);
	tt_oplog_free(&log);
	tt_buf_release(&text);
	free(root);
}

TT_TEST(python_line_splitting)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT;
	/* splitlines() breaks at \r, \x1e and U+2028; strip() drops U+3000. */
	static const char text[] = "{\"id\": \"a\", \"command\": \"add\"}\r"
				   "{\"id\": \"b\", \"command\": \"add\"}\x1e"
				   "\xe3\x80\x80{\"id\": \"c\", \"command\": \"add\"}\xe2\x80\xa8"
				   "  {\"id\": \"d\", \"command\": \"add\"}\r\n";
	CHECK_OK(tt_oplog_parse(text, sizeof text - 1, NULL, &log, &err));
	CHECK_INT(log.count, 4);
	CHECK_STR(log.entries[3].id, "d");
	CHECK_INT(log.entries[3].line, 4);
	tt_oplog_free(&log);
}

typedef struct thread_arg {
	const char *root;
	int n;
	int failures;
} thread_arg;

static void *appender(void *p)
{
	thread_arg *a = p;
	tt_error err = TT_ERROR_INIT;
	for (int i = 0; i < 40; i++) {
		json_t *d = json_pack("{s:i,s:i,s:s}", "thread", a->n, "i", i, "pad",
				      "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx");
		if (!d || tt_oplog_progress(a->root, "aaaaaaaaaaaa", "pin", d, &err))
			a->failures++;
		json_decref(d);
		tt_error_clear(&err);
	}
	return NULL;
}

TT_TEST(concurrent_appends_intact)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT;
	char id[TT_OP_ID_LEN + 1];
	pthread_t th[8];
	thread_arg args[8];
	char *root = new_root();
	CHECK(root);
	/* Start from a torn log: several threads see the missing newline. */
	CHECK(write_ops(root, "{\"id\": \"aaaaaaaaaaaa\", \"command\": \"gc\", \"status\": \"started\"}\n{\"torn") == 0);
	for (int i = 0; i < 8; i++) {
		args[i] = (thread_arg){ root, i, 0 };
		CHECK(pthread_create(&th[i], NULL, appender, &args[i]) == 0);
	}
	for (int i = 0; i < 8; i++) {
		pthread_join(th[i], NULL);
		CHECK_INT(args[i].failures, 0);
	}
	CHECK_OK(tt_oplog_begin(root, "gc", NULL, NULL, NULL, id, &err));
	CHECK_OK(tt_oplog_read(root, &log, &err));
	CHECK_INT(log.count, 2);
	CHECK_INT(json_array_size(log.entries[0].progress), 8 * 40);
	int seen[8][40] = { { 0 } };
	for (size_t i = 0; i < 8 * 40; i++) {
		json_t *r = json_array_get(log.entries[0].progress, i);
		long long t = json_integer_value(json_object_get(r, "thread"));
		long long k = json_integer_value(json_object_get(r, "i"));
		CHECK(t >= 0 && t < 8 && k >= 0 && k < 40);
		seen[t][k]++;
	}
	for (int t = 0; t < 8; t++)
		for (int k = 0; k < 40; k++)
			CHECK_INT(seen[t][k], 1);
	/* Every line is whole: exactly one fragment line, the rest JSON. */
	char *text = read_ops_text(root);
	CHECK(text);
	size_t lines = 0;
	for (char *p = text; *p; p++)
		lines += *p == '\n';
	CHECK_INT(lines, 2 + 8 * 40 + 1);
	free(text);
	tt_oplog_free(&log);
	free(root);
}

static const struct {
	const char *line;
	const char *summary;
} summaries[] = {
	{ "{\"id\": \"e0\", \"at\": \"t\", \"command\": \"commit\", \"plan\": null, \"result\": {\"pinned\": {\"b\": \"p1\", \"a\": \"p2\", \"c\": null}, \"vcs_commit\": \"0123456789abcdef\"}, \"undoes\": null}",
	  "pinned a, b; recorded c; vcs 0123456789ab" },
	{ "{\"id\": \"e1\", \"at\": \"t\", \"command\": \"commit\", \"plan\": null, \"result\": {}, \"undoes\": null}",
	  "nothing changed" },
	{ "{\"id\": \"e2\", \"at\": \"t\", \"command\": \"new\", \"plan\": {\"context\": {\"rev\": \"main@1\"}}, \"result\": {\"created\": [\"z\", \"y\"], \"reset\": [\"r\"], \"adopted\": {\"q\": 1}, \"reused\": [\"q\", \"k\"], \"pending_forks\": [\"p\"]}, \"undoes\": null}",
	  "forked y, z; reset r; adopted q; kept k; deferred p; at main@1" },
	{ "{\"id\": \"e3\", \"at\": \"t\", \"command\": \"new\", \"plan\": null, \"result\": {}, \"undoes\": null}",
	  "working refs unchanged" },
	{ "{\"id\": \"e4\", \"at\": \"t\", \"command\": \"restore\", \"plan\": null, \"result\": {\"created\": [\"b\"], \"reset\": [\"a\", \"b\"], \"at\": \"v1\"}, \"undoes\": null}",
	  "restored a, b from v1" },
	{ "{\"id\": \"e5\", \"at\": \"t\", \"command\": \"restore\", \"plan\": null, \"result\": {\"created\": [\"b\"], \"from_commit\": \"fedcba9876543210\"}, \"undoes\": null}",
	  "restored b from fedcba987654" },
	{ "{\"id\": \"e6\", \"at\": \"t\", \"command\": \"restore\", \"plan\": null, \"result\": {}, \"undoes\": null}",
	  "restored  from None" },
	{ "{\"id\": \"e7\", \"at\": \"t\", \"command\": \"fork\", \"plan\": null, \"result\": {\"key\": \"k\", \"ref\": \"tether.ws.1\"}, \"undoes\": null}",
	  "forked k -> tether.ws.1" },
	{ "{\"id\": \"e8\", \"at\": \"t\", \"command\": \"drop\", \"plan\": null, \"result\": {\"bookmark\": \"feat\", \"abandoned\": [\"c1\", \"c2\"], \"gc\": {\"unpinned\": {\"a\": [1, 2], \"b\": [3]}, \"deleted_working_refs\": {\"a\": [\"x\"]}, \"deleted_stores\": {\"s\": 1}}}, \"undoes\": null}",
	  "dropped feat: 2 commit(s), 3 pin(s), 1 branch(es), 1 store(s)" },
	{ "{\"id\": \"e9\", \"at\": \"t\", \"command\": \"drop\", \"plan\": null, \"result\": {}, \"undoes\": null}",
	  "dropped None: 0 commit(s), 0 pin(s), 0 branch(es)" },
	{ "{\"id\": \"e10\", \"at\": \"t\", \"command\": \"gc\", \"plan\": null, \"result\": {\"unpinned\": {\"a\": [1, 2]}, \"deleted_working_refs\": {}, \"deleted_stores\": [\"s1\", \"s2\"]}, \"undoes\": null}",
	  "unpinned 2, deleted 0 branch(es), deleted 2 store(s)" },
	{ "{\"id\": \"e11\", \"at\": \"t\", \"command\": \"gc\", \"plan\": null, \"result\": {}, \"undoes\": null}",
	  "unpinned 0, deleted 0 branch(es)" },
	{ "{\"id\": \"e12\", \"at\": \"t\", \"command\": \"promote\", \"plan\": null, \"result\": {\"fast_forwarded\": {\"b\": 1}, \"merged\": {\"a\": 1, \"b\": 2}}, \"undoes\": null}",
	  "promoted a, b" },
	{ "{\"id\": \"e13\", \"at\": \"t\", \"command\": \"promote\", \"plan\": null, \"result\": {}, \"undoes\": null}",
	  "nothing promoted" },
	{ "{\"id\": \"e14\", \"at\": \"t\", \"command\": \"import\", \"plan\": null, \"result\": {\"added\": [1], \"updated\": [], \"removed\": [1, 2]}, \"undoes\": null}",
	  "added 1, updated 0, removed 2" },
	{ "{\"id\": \"e15\", \"at\": \"t\", \"command\": \"add\", \"plan\": null, \"result\": {\"key\": \"k\", \"created\": true}, \"undoes\": null}",
	  "k (created store)" },
	{ "{\"id\": \"e16\", \"at\": \"t\", \"command\": \"remove\", \"plan\": null, \"result\": {}, \"undoes\": null}",
	  "" },
	{ "{\"id\": \"e17\", \"at\": \"t\", \"command\": \"set\", \"plan\": null, \"result\": {\"changed\": {\"k\": {\"a\": [1, 2], \"b\": [null, \"x\"]}, \"j\": {\"c\": [\"u\", \"v\"]}}}, \"undoes\": null}",
	  "k: a=1->2 b=None->x, j: c=u->v" },
	{ "{\"id\": \"e18\", \"at\": \"t\", \"command\": \"pull\", \"plan\": null, \"result\": {\"pinned\": {\"a\": 1}, \"vcs_commit\": \"abcdefabcdefabcdef\"}, \"undoes\": null}",
	  "pulled 1 object(s) -> abcdefabcdef" },
	{ "{\"id\": \"e19\", \"at\": \"t\", \"command\": \"pull\", \"plan\": null, \"result\": {}, \"undoes\": null}",
	  "pulled 0 object(s) -> " },
	{ "{\"id\": \"e20\", \"at\": \"t\", \"command\": \"undo\", \"plan\": null, \"result\": {\"summary\": \"pinned a\"}, \"undoes\": \"0123456789ab\"}",
	  "undid 0123456789ab: pinned a" },
	{ "{\"id\": \"e21\", \"at\": \"t\", \"command\": \"undo\", \"plan\": null, \"result\": {}, \"undoes\": null}",
	  "undid None: " },
	{ "{\"id\": \"e22\", \"at\": \"t\", \"command\": \"repair\", \"plan\": null, \"result\": {\"repinned\": [1], \"reforked\": [1, 2, 3]}, \"undoes\": null}",
	  "repinned 1, reforked 3" },
	{ "{\"id\": \"e23\", \"at\": \"t\", \"command\": \"forget-workspace\", \"plan\": null, \"result\": {\"workspace\": \"ws1\"}, \"undoes\": null}",
	  "forgot workspace ws1" },
	{ "{\"id\": \"e24\", \"at\": \"t\", \"command\": \"abandon\", \"plan\": null, \"result\": {\"abandoned\": [\"0123456789abcdef\", \"x\"], \"unreferenced\": [1, 2]}, \"undoes\": null}",
	  "abandoned 0123456789ab, x; 2 pin(s) freed" },
	{ "{\"id\": \"e25\", \"at\": \"t\", \"command\": \"upgrade\", \"plan\": null, \"result\": {\"from_version\": 4, \"to_version\": 5, \"renamed_pins\": {\"a\": 1}, \"renamed_branches\": {}, \"rewritten_commits\": {\"x\": \"y\", \"z\": \"w\"}}, \"undoes\": null}",
	  "v4 -> v5: 1 pin(s), 0 branch(es), 2 commit(s) rewritten" },
	{ "{\"id\": \"e26\", \"at\": \"t\", \"command\": \"mystery\", \"plan\": null, \"result\": {\"a\": 1}, \"undoes\": null}",
	  "" },
	{ "{\"id\": \"e27\", \"at\": \"t\", \"command\": \"new\", \"plan\": {\"context\": {\"rev\": 7}}, \"result\": {\"created\": \"ba\", \"reused\": [\"a\", \"c\"], \"adopted\": \"abc\"}, \"undoes\": null}",
	  "forked a, b; adopted a, b, c; at 7" },
	{ "{\"id\": \"e28\", \"at\": \"t\", \"command\": \"commit\", \"plan\": null, \"result\": {\"pinned\": {\"\\u00e9\": 1}, \"vcs_commit\": 123456789012345}, \"undoes\": null}",
	  "pinned \xc3\xa9; vcs 123456789012" },
};

TT_TEST(summaries_match_python)
{
	tt_error err = TT_ERROR_INIT;
	tt_oplog log = TT_OPLOG_INIT;
	tt_buf text = TT_BUF_INIT;
	size_t n = sizeof summaries / sizeof *summaries;
	for (size_t i = 0; i < n; i++) {
		tt_buf_puts(&text, summaries[i].line);
		tt_buf_putc(&text, '\n');
	}
	CHECK(!text.failed);
	CHECK_OK(tt_oplog_parse(text.ptr, text.len, "ops", &log, &err));
	CHECK_INT(log.count, n);
	for (size_t i = 0; i < n; i++) {
		char *s = tt_op_summary(&log.entries[i]);
		CHECK_MSG(s && strcmp(s, summaries[i].summary) == 0, "entry %zu: \"%s\" != \"%s\"", i,
			  s ? s : "(null)", summaries[i].summary);
		free(s);
	}
	tt_oplog_free(&log);
	tt_buf_release(&text);
}
