/* Unit tests for core/index's store records: the created-store index in
 * tether-vcs's line format (json.dumps defaults, its field order), the
 * checked reader gc acts on (torn lines skipped, misshapen records refused
 * by line), and forgetting one store of one dataset. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/index.h"
#include "core/manifest.h"
#include "harness.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"

static char *new_dir(void)
{
	static int n;
	tt_error err = TT_ERROR_INIT;
	char *dir = tt_asprintf("%s/shared%d", tt_test_tmpdir(), n++);
	if (!dir || tt_mkdirs(dir, 0755, &err)) {
		free(dir);
		dir = NULL;
	}
	tt_error_clear(&err);
	return dir;
}

static char *index_text(const char *dir)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf b = TT_BUF_INIT;
	char *path = tt_path_join(dir, TT_CREATED_FILENAME);
	int rc = path ? tt_read_file(path, &b, 0, &err) : -1;
	free(path);
	tt_error_clear(&err);
	if (rc) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

static int write_index(const char *dir, const char *text)
{
	tt_error err = TT_ERROR_INIT;
	char *path = tt_path_join(dir, TT_CREATED_FILENAME);
	int rc = path ? tt_write_file_atomic(path, text, strlen(text), 0644, &err) : -1;
	free(path);
	tt_error_clear(&err);
	return rc;
}

TT_TEST(created_record_in_tether_vcs_format)
{
	tt_error err = TT_ERROR_INIT;
	char *dir = new_dir();
	json_t *id = json_pack("{s:s}", "path", "/s/g.git"), *loc = json_pack("{s:s}", "uri", "/s/g.git");
	CHECK(dir && id && loc);
	CHECK_OK(tt_index_note_created(dir, "5e1f0a7b", "git", id, loc, "g", "main", &err));
	CHECK_OK(tt_index_note_created(dir, "5e1f0a7b", "git", id, loc, "g2", NULL, &err));
	char *text = index_text(dir);
	CHECK(text);
	/* {"dataset_id": ..., "kind", "identity", "locator", "key", "at": "<iso micro>", "bookmark"} */
	const char *head = "{\"dataset_id\": \"5e1f0a7b\", \"kind\": \"git\", \"identity\": {\"path\": "
			   "\"/s/g.git\"}, \"locator\": {\"uri\": \"/s/g.git\"}, \"key\": \"g\", \"at\": \"";
	CHECK(strncmp(text, head, strlen(head)) == 0);
	const char *at = text + strlen(head);
	/* 2026-11-30T09:05:25.815840+00:00 */
	CHECK(strlen(at) > 32 && at[10] == 'T' && at[19] == '.' && strncmp(at + 26, "+00:00\"", 7) == 0);
	CHECK(strncmp(at + 33, ", \"bookmark\": \"main\"}\n", 22) == 0);
	CHECK(strstr(text, "\"key\": \"g2\"") && strstr(text, "\"bookmark\": null}\n"));
	free(text);
	json_t *recs = NULL;
	CHECK_OK(tt_index_read_stores(dir, TT_CREATED_FILENAME, "5e1f0a7b", &recs, &err));
	CHECK_INT(json_array_size(recs), 2);
	CHECK_INT(json_integer_value(json_object_get(json_array_get(recs, 1), "line")), 2);
	CHECK(json_is_null(json_object_get(json_array_get(recs, 1), "bookmark")));
	json_decref(recs);
	json_decref(id);
	json_decref(loc);
	free(dir);
}

TT_TEST(reader_skips_torn_lines_and_other_datasets)
{
	tt_error err = TT_ERROR_INIT;
	char *dir = new_dir();
	CHECK(dir);
	CHECK(write_index(dir,
			  "{\"dataset_id\": \"5e1f0a7b\", \"kind\": \"file\", \"identity\": {\"uri\": \"/a\"}, "
			  "\"locator\": {\"uri\": \"/a\"}, \"key\": \"a\"}\n"
			  "{\"dataset_id\": \"5e1f\n"
			  "[1, 2]\n"
			  "{\"dataset_id\": \"0badbeef\", \"kind\": 3}\n"
			  "{\"dataset_id\": \"5e1f0a7b\", \"kind\": \"file\", \"identity\": {\"uri\": \"/b\"}, "
			  "\"locator\": {\"uri\": \"/b\"}, \"key\": \"b\", \"bookmark\": null}") == 0);
	json_t *recs = NULL;
	CHECK_OK(tt_index_read_stores(dir, TT_CREATED_FILENAME, "5e1f0a7b", &recs, &err));
	CHECK_INT(json_array_size(recs), 2);
	CHECK_STR(json_string_value(json_object_get(json_array_get(recs, 0), "key")), "a");
	CHECK_INT(json_integer_value(json_object_get(json_array_get(recs, 1), "line")), 5);
	json_decref(recs);
	free(dir);
}

TT_TEST(reader_refuses_misshapen_records_by_line)
{
	static const struct {
		const char *line, *why;
	} cases[] = {
		{ "{\"dataset_id\": \"5e1f0a7b\", \"kind\": \"file\", \"identity\": \"x\", \"locator\": "
		  "{\"uri\": \"/a\"}}", ":2: 'identity' is not a JSON object" },
		{ "{\"dataset_id\": \"5e1f0a7b\", \"kind\": \"file\", \"identity\": {}, \"locator\": {}}",
		  ":2: 'locator' is not a non-empty JSON object" },
		{ "{\"dataset_id\": \"5e1f0a7b\", \"kind\": \"\", \"identity\": {}, \"locator\": {\"uri\": \"/a\"}}",
		  ":2: 'kind' is not a non-empty string" },
		{ "{\"dataset_id\": \"5e1f0a7b\", \"kind\": \"file\", \"identity\": {}, \"locator\": "
		  "{\"uri\": \"/a\"}, \"bookmark\": 1}", ":2: 'bookmark' is neither a string nor null" },
		{ "{\"kind\": \"file\"}", ":2: 'dataset_id' is not a string" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tt_error err = TT_ERROR_INIT;
		char *dir = new_dir();
		char *text = dir ? tt_asprintf("{\"dataset_id\": \"5e1f0a7b\", \"kind\": \"file\", \"identity\": "
					       "{}, \"locator\": {\"uri\": \"/ok\"}}\n%s\n", cases[i].line)
				 : NULL;
		CHECK(text && write_index(dir, text) == 0);
		json_t *recs = NULL;
		int rc = tt_index_read_stores(dir, TT_CREATED_FILENAME, "5e1f0a7b", &recs, &err);
		CHECK_INT(rc, TT_ECONFIG);
		CHECK(recs == NULL);
		CHECK_MSG(strstr(tt_error_text(&err), cases[i].why) != NULL, "case %zu: %s", i, tt_error_text(&err));
		CHECK(strstr(tt_error_text(&err), TT_CREATED_FILENAME ":2") != NULL);
		CHECK(err.hint && strstr(err.hint, "fix or delete that line"));
		tt_error_clear(&err);
		free(text);
		free(dir);
	}
}

TT_TEST(forget_drops_one_store_of_one_dataset)
{
	tt_error err = TT_ERROR_INIT;
	char *dir = new_dir();
	json_t *a = json_pack("{s:s}", "uri", "/a"), *b = json_pack("{s:s}", "uri", "/b");
	CHECK(dir && a && b);
	CHECK_OK(tt_index_note_created(dir, "5e1f0a7b", "file", a, a, "a", "main", &err));
	CHECK_OK(tt_index_note_created(dir, "0badbeef", "file", a, a, "a", "main", &err));
	CHECK_OK(tt_index_note_created(dir, "5e1f0a7b", "file", b, b, "b", "main", &err));
	CHECK_OK(tt_index_forget_store(dir, TT_CREATED_FILENAME, "5e1f0a7b", a, &err));
	json_t *mine = NULL, *theirs = NULL;
	CHECK_OK(tt_index_read_stores(dir, TT_CREATED_FILENAME, "5e1f0a7b", &mine, &err));
	CHECK_OK(tt_index_read_stores(dir, TT_CREATED_FILENAME, "0badbeef", &theirs, &err));
	CHECK_INT(json_array_size(mine), 1);
	CHECK_STR(json_string_value(json_object_get(json_array_get(mine, 0), "key")), "b");
	CHECK_INT(json_array_size(theirs), 1);
	json_decref(mine);
	json_decref(theirs);
	/* Forgetting in a missing index is nothing to do. */
	char *empty = new_dir();
	CHECK(empty);
	CHECK_OK(tt_index_forget_store(empty, TT_CREATED_FILENAME, "5e1f0a7b", a, &err));
	char *p = tt_path_join(empty, TT_CREATED_FILENAME);
	CHECK(p && !tt_exists(p));
	free(p);
	free(empty);
	json_decref(a);
	json_decref(b);
	free(dir);
}

TT_TEST(committed_marks_only_pins_this_clone_created_once)
{
	tt_error err = TT_ERROR_INIT;
	char *dir = new_dir();
	CHECK(dir);
	CHECK_OK(tt_index_note_pinned(dir, "5e1f0a7b", "5e1f0a7b.0000000000000001", "memory", "m", &err));
	json_t *ids = json_pack("[sss]", "5e1f0a7b.0000000000000001", "5e1f0a7b.0000000000000002",
				"5e1f0a7b.0000000000000001");
	CHECK(ids);
	CHECK_OK(tt_index_note_committed(dir, "5e1f0a7b", ids, &err));
	CHECK_OK(tt_index_note_committed(dir, "5e1f0a7b", ids, &err));
	json_t *all = tt_index_read(dir, TT_PINNED_FILENAME);
	/* The created record, then one mark; no mark for a pin not on record. */
	CHECK_INT(json_array_size(all), 2);
	CHECK(json_is_true(json_object_get(json_array_get(all, 1), "committed")));
	CHECK_STR(json_string_value(json_object_get(json_array_get(all, 1), "pin_id")),
		  "5e1f0a7b.0000000000000001");
	json_decref(all);
	/* Releasing the pin forgets both records. */
	json_t *gone = json_pack("[s]", "5e1f0a7b.0000000000000001");
	CHECK_OK(tt_index_forget_pinned(dir, "5e1f0a7b", gone, &err));
	all = tt_index_read(dir, TT_PINNED_FILENAME);
	CHECK_INT(json_array_size(all), 0);
	json_decref(all);
	json_decref(gone);
	json_decref(ids);
	free(dir);
}

TT_TEST(key_path_order_is_tether_vcs_object_order)
{
	/* Python sorts the manifests' paths part by part. */
	CHECK(tt_key_path_order("a/x", "a.f") < 0);
	CHECK(tt_key_path_order("a.b", "a") < 0);
	CHECK(tt_key_path_order("A", "a/f") < 0);
	CHECK(tt_key_path_order("a/f", "a/x") < 0);
	CHECK(tt_key_path_order("x", "x.toml/y") < 0);
	CHECK(tt_key_path_order("b", "b") == 0);
	CHECK(tt_key_path_order("z", "a.y") > 0);
}
