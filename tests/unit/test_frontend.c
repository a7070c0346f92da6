/* Unit tests for the public entry points the command line is built on
 * (engine/api/frontend.c, tt_kind_describe): only <tether/tether.h> here, as in
 * src/cli/. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "harness.h"
#include <tether/tether.h>

TT_TEST(compat_version_is_the_saved_plans_tether_version)
{
	CHECK_STR(tt_compat_version(), "0.1.0b7");
}

TT_TEST(kind_describe_says_whether_the_locator_is_a_path)
{
	tt_error err = TT_ERROR_INIT;
	json_t *k = NULL;
	CHECK_OK(tt_kind_describe("lance", &k, &err));
	CHECK_STR(json_string_value(json_object_get(k, "kind")), "lance");
	CHECK(json_is_true(json_object_get(k, "path_locator")));
	CHECK(json_is_array(json_object_get(k, "path_keys")));
	/* the rest is tt_backends()'s row of the kind, field for field */
	json_t *all = tt_backends(), *row, *same = NULL;
	size_t i;
	json_array_foreach(all, i, row)
		if (strcmp(json_string_value(json_object_get(row, "kind")), "lance") == 0)
			same = row;
	CHECK(same != NULL);
	const char *field;
	json_t *v;
	json_object_foreach(same, field, v)
		CHECK(json_equal(v, json_object_get(k, field)));
	CHECK_INT(json_object_size(k), json_object_size(same) + 3);
	CHECK_STR(json_string_value(json_object_get(k, "locator_key")), "uri");
	json_decref(all);
	json_decref(k);

	/* a database kind names no path */
	CHECK_OK(tt_kind_describe("neon", &k, &err));
	CHECK(json_is_false(json_object_get(k, "path_locator")));
	CHECK_INT(json_array_size(json_object_get(k, "path_keys")), 0);
	json_decref(k);

	/* a dolt positional is its url */
	CHECK_OK(tt_kind_describe("dolt", &k, &err));
	CHECK_STR(json_string_value(json_object_get(k, "locator_key")), "url");
	json_decref(k);
}

TT_TEST(kind_describe_refuses_an_unknown_kind_naming_the_known)
{
	tt_error err = TT_ERROR_INIT;
	json_t *k = (json_t *)&err; /* reset on failure */
	CHECK_INT(tt_kind_describe("lancedb", &k, &err), TT_ECONFIG);
	CHECK(k == NULL);
	CHECK(strstr(err.message, "'lancedb'") != NULL);
	CHECK(strstr(err.message, "lance") != NULL && strstr(err.message, "git") != NULL);
	tt_error_clear(&err);
}

TT_TEST(plan_action_writes_matches_the_plan_ops)
{
	CHECK(!tt_plan_action_writes("keep-pin"));
	CHECK(!tt_plan_action_writes("hold"));
	CHECK(!tt_plan_action_writes("trunk"));
	CHECK(!tt_plan_action_writes(NULL));
	CHECK(tt_plan_action_writes("unpin"));
	CHECK(tt_plan_action_writes("delete-store"));
}

TT_TEST(repr_str_quotes_as_python)
{
	char *r = tt_repr_str("a b");
	CHECK_STR(r, "'a b'");
	free(r);
	r = tt_repr_str("it's");
	CHECK_STR(r, "\"it's\"");
	free(r);
	r = tt_repr_str("tab\there");
	CHECK_STR(r, "'tab\\there'");
	free(r);
	r = tt_repr_str(NULL);
	CHECK_STR(r, "''");
	free(r);
}

static int write_text(const char *path, const char *text, int mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
	if (fd < 0)
		return -1;
	size_t n = strlen(text);
	int rc = write(fd, text, n) == (ssize_t)n ? 0 : -1;
	close(fd);
	return rc;
}

/* A dataset in a fresh git repository with one commit on main. */
static int make_dataset(char *dir, size_t cap)
{
	snprintf(dir, cap, "%s/ds", tt_test_tmpdir());
	char cmd[4096];
	snprintf(cmd, sizeof cmd,
		 "mkdir -p '%s' && cd '%s' && git init -q -b main && git -c user.name=t -c user.email=t@t "
		 "commit -q --allow-empty -m start",
		 dir, dir);
	if (system(cmd) != 0)
		return -1;
	tt_error err = TT_ERROR_INIT;
	int rc = tt_init(dir, NULL, NULL, &err);
	tt_error_clear(&err);
	return rc;
}

TT_TEST(repo_bookmarks_and_plan_command)
{
	tt_error err = TT_ERROR_INIT;
	char dir[2048];
	tt_repo *repo = NULL;
	CHECK_OK(make_dataset(dir, sizeof dir));
	CHECK_OK(tt_repo_open(dir, &repo, &err));
	json_t *marks = NULL;
	CHECK_OK(tt_repo_bookmarks(repo, &marks, &err));
	const char *main_at = json_string_value(json_object_get(marks, "main"));
	char *head = NULL;
	CHECK_OK(tt_repo_current_rev(repo, &head, &err));
	CHECK(main_at && head && strcmp(main_at, head) == 0);
	free(head);
	json_decref(marks);

	/* a saved plan names its command; what is not a plan is refused */
	tt_gc_opts o = TT_GC_OPTS_INIT;
	tt_plan_opts preview = TT_PLAN_OPTS_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	preview.mode = TT_PLAN_PREVIEW;
	char *command = NULL;
	CHECK_OK(tt_repo_gc(repo, &o, &preview, &res, &err));
	CHECK(res.out == NULL && res.plan_text != NULL);
	const char *pj = res.plan_json;
	CHECK_OK(tt_plan_command_of(pj, strlen(pj), &command, &err));
	CHECK_STR(command, "gc");
	free(command);
	command = (char *)pj; /* reset on failure */
	CHECK(tt_plan_command_of("{\"format\": 3}", 13, &command, &err) < 0);
	CHECK(command == NULL && err.message[0] != '\0');
	tt_error_clear(&err);
	CHECK(tt_plan_command_of("not json", 8, &command, &err) < 0);
	tt_error_clear(&err);
	tt_plan_result_release(&res);
	tt_repo_free(repo);
}

TT_TEST(repo_secret_setting_reads_this_checkouts_secrets)
{
	tt_error err = TT_ERROR_INIT;
	char dir[2048], path[2300];
	tt_repo *repo = NULL;
	CHECK_OK(make_dataset(dir, sizeof dir));
	snprintf(path, sizeof path, "%s/.tether/secrets.toml", dir);
	CHECK_OK(write_text(path,
			    "[publish]\ndsn = \"postgresql://u:pw@127.0.0.1/db\"\nport = 5432\n"
			    "[import]\nquery = \"select * from objects\"\n",
			    0600));
	CHECK_OK(tt_repo_open(dir, &repo, &err));
	CHECK_STR(tt_repo_secret_setting(repo, "publish", "dsn"), "postgresql://u:pw@127.0.0.1/db");
	CHECK_STR(tt_repo_secret_setting(repo, "import", "query"), "select * from objects");
	CHECK(tt_repo_secret_setting(repo, "publish", "port") == NULL); /* not a string */
	CHECK(tt_repo_secret_setting(repo, "publish", "schema") == NULL);
	CHECK(tt_repo_secret_setting(repo, "nothing", "dsn") == NULL);
	tt_repo_free(repo);
}

TT_TEST(import_read_rows_and_publish_plan)
{
	tt_error err = TT_ERROR_INIT;
	char path[2048];
	snprintf(path, sizeof path, "%s/objects.csv", tt_test_tmpdir());
	CHECK_OK(write_text(path, "key,kind,uri\nraw,file,/data/raw\nmodels,git,/data/models\n", 0644));
	json_t *rows = NULL;
	CHECK_OK(tt_import_read_rows(path, NULL, NULL, &rows, &err));
	CHECK_INT(json_array_size(rows), 2);
	CHECK_STR(json_string_value(json_object_get(json_array_get(rows, 1), "kind")), "git");
	json_decref(rows);
	/* rows is an out parameter: a failure leaves it NULL whatever it held (the caller still owns that) */
	json_t *held = json_array();
	rows = held;
	snprintf(path, sizeof path, "%s/missing.jsonl", tt_test_tmpdir());
	CHECK(tt_import_read_rows(path, NULL, NULL, &rows, &err) < 0);
	CHECK(rows == NULL && strstr(err.message, "missing.jsonl") != NULL);
	tt_error_clear(&err);
	json_decref(held);

	json_t *report = json_pack("{s:s,s:{s:i,s:i},s:i,s:b}", "schema", "tether", "upserted", "commits", 2,
				   "objects", 0, "skipped_commits", 1, "dry_run", 1);
	char *pj = NULL, *pt = NULL, *command = NULL;
	CHECK_OK(tt_export_publish_plan(report, "0123456789abcdef0123456789abcdef01234567", &pj, &pt, &err));
	CHECK_OK(tt_plan_command_of(pj, strlen(pj), &command, &err));
	CHECK_STR(command, "publish");
	CHECK(strstr(pt, "commits") != NULL);
	free(command);
	free(pj);
	free(pt);
	json_decref(report);
}

static int phases_seen;
static void count_phase(const tt_progress *p, void *ctx)
{
	(void)ctx;
	if (p->finished)
		phases_seen++;
}

static void cancel_at_last_object(const tt_progress *p, void *ctx)
{
	if (p->key && p->done == p->total && strcmp(p->phase, "fingerprint") == 0)
		tt_repo_cancel(ctx);
}

TT_TEST(cancel_stops_the_read_only_phases_and_commit_writes_nothing)
{
	tt_error err = TT_ERROR_INIT;
	char dir[2048], data[2300];
	tt_repo *repo = NULL;
	CHECK_OK(make_dataset(dir, sizeof dir));
	CHECK_OK(tt_repo_open(dir, &repo, &err));
	for (int i = 0; i < 3; i++) {
		snprintf(data, sizeof data, "%s/data%d", tt_test_tmpdir(), i);
		char cmd[5000];
		snprintf(cmd, sizeof cmd, "mkdir -p '%s' && echo %d > '%s/x'", data, i, data);
		CHECK_INT(system(cmd), 0);
		tt_add_opts add = TT_ADD_OPTS_INIT;
		json_t *loc = json_pack("{s:s}", "uri", data), *out = NULL;
		add.kind = "file";
		add.locator = loc;
		CHECK_OK(tt_repo_add(repo, &add, &out, &err));
		json_decref(out);
		json_decref(loc);
	}
	tt_repo_set_progress(repo, count_phase, NULL);

	/* a request made first stops the fingerprint before any object */
	json_t *out = NULL;
	tt_repo_cancel(repo);
	CHECK_INT(tt_repo_snapshot(repo, NULL, 0, &out, &err), TT_ECANCELED);
	CHECK(out == NULL);
	CHECK(strstr(err.message, "fingerprint cancelled after 0 of 3") != NULL);
	tt_error_clear(&err);
	CHECK_INT(phases_seen, 1); /* the phase still ends for the callback */

	/* consumed: the next snapshot runs */
	CHECK_OK(tt_repo_snapshot(repo, NULL, 0, &out, &err));
	CHECK_INT(json_object_size(out), 3);
	json_decref(out);

	/* a cancelled commit pins, journals and commits nothing */
	char *before = NULL, *after = NULL;
	json_t *ops_before = NULL, *ops_after = NULL;
	CHECK_OK(tt_repo_current_rev(repo, &before, &err));
	CHECK_OK(tt_repo_ops(repo, 100, &ops_before, NULL, &err));
	tt_commit_opts co = TT_COMMIT_OPTS_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	co.message = "first";
	tt_repo_cancel(repo);
	CHECK_INT(tt_repo_commit(repo, &co, NULL, &res, &err), TT_ECANCELED);
	tt_error_clear(&err);
	CHECK_OK(tt_repo_current_rev(repo, &after, &err));
	CHECK_STR(after, before);
	CHECK_OK(tt_repo_ops(repo, 100, &ops_after, NULL, &err));
	CHECK_INT(json_array_size(ops_after), json_array_size(ops_before));
	json_t *objs = NULL;
	CHECK_OK(tt_repo_objects(repo, &objs, &err));
	CHECK(json_is_null(json_object_get(json_object_get(objs, "data0"), "state")));
	json_decref(objs);
	free(after);
	after = NULL;

	/* and the commit runs once nothing asks it to stop */
	CHECK_OK(tt_repo_commit(repo, &co, NULL, &res, &err));
	CHECK(res.out != NULL && res.plan_json == NULL);
	tt_plan_result_release(&res);
	CHECK_OK(tt_repo_current_rev(repo, &after, &err));
	CHECK(strcmp(after, before) != 0);

	/* a request that comes as the last object finishes still stops the
	 * phase: nothing has been written, so a snapshot still caches nothing */
	tt_repo_set_progress(repo, cancel_at_last_object, repo);
	CHECK_INT(tt_repo_snapshot(repo, NULL, 0, &out, &err), TT_ECANCELED);
	CHECK(out == NULL);
	CHECK(strstr(err.message, "fingerprint cancelled after 3 of 3") != NULL);
	tt_error_clear(&err);
	tt_repo_set_progress(repo, count_phase, NULL);
	CHECK_OK(tt_repo_snapshot(repo, NULL, 0, &out, &err)); /* and the request was used up */
	json_decref(out);

	/* verify stops the same way */
	tt_repo_cancel(repo);
	CHECK_INT(tt_repo_verify(repo, NULL, &out, &err), TT_ECANCELED);
	CHECK(strstr(err.message, "verify cancelled after 0 of 3") != NULL);
	tt_error_clear(&err);
	CHECK_OK(tt_repo_verify(repo, NULL, &out, &err));
	CHECK_INT(json_object_size(out), 3);
	json_decref(out);

	json_decref(ops_before);
	json_decref(ops_after);
	free(before);
	free(after);
	tt_repo_free(repo);
}
