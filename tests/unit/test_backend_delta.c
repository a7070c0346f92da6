/*
 * The delta backend (backends/delta.c) through the conformance suite on
 * tables the deltalake package writes, against the delta-rs fixture tables
 * (versions, table ids and histories as deltalake itself reads them), and
 * on broken logs: a corrupt commit, a truncated checkpoint, a missing
 * _delta_log, a gap, a recreated table and a vacuumed version.
 *
 * deltalake runs through tests/support/delta_oracle.py with the Python of
 * $TETHER_PYTHON (default: the source tree's .venv); the fixtures are
 * $TETHER_DELTA_FIXTURES (default: ../shared/fixtures/delta beside the
 * source tree).  Without them the cases that need them say so and skip.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "backends/delta/delta.h"
#include "conformance.h"
#include "formats/parquet.h"
#include "core/kinds.h"
#include "harness.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/proc.h"

/* --- the oracle and the fixtures ----------------------------------------------------- */

static char *source_path(const char *rel)
{
	const char *src = getenv("TETHER_SOURCE_DIR");
	return tt_path_join(src ? src : ".", rel);
}

static char *python(void)
{
	const char *py = getenv("TETHER_PYTHON");
	char *p = py ? tt_strdup(py) : source_path(".venv/bin/python");
	if (p && access(p, X_OK) != 0) {
		free(p);
		return NULL;
	}
	return p;
}

static char *fixtures(void)
{
	const char *f = getenv("TETHER_DELTA_FIXTURES");
	char *p = f ? tt_strdup(f) : source_path("../shared/fixtures/delta");
	if (p && !tt_is_dir(p)) {
		free(p);
		return NULL;
	}
	return p;
}

/* Run the oracle: its JSON answer, or NULL (printed). */
static json_t *oracle(const char *cmd, const char *dir)
{
	char *py = python(), *script = source_path("tests/support/delta_oracle.py");
	json_t *out = NULL;
	tt_error err = TT_ERROR_INIT;
	tt_proc_result r;
	tt_proc_result_init(&r);
	if (py && script) {
		const char *argv[] = { py, script, cmd, dir, NULL };
		tt_proc_opts o = { .argv = argv, .timeout_ms = 120000 };
		if (tt_proc_run(&o, &r, &err) == 0 && r.status == 0)
			out = tt_json_parse(r.out.ptr, r.out.len, "oracle", &err);
		else
			fprintf(stderr, "  oracle %s %s: %s%s\n", cmd, dir, tt_error_text(&err), r.err.ptr);
	}
	tt_proc_result_release(&r);
	tt_error_clear(&err);
	free(py);
	free(script);
	return out;
}

static int sh(const char *script, const char *a, const char *b)
{
	const char *argv[] = { "sh", "-c", script, "sh", a, b, NULL };
	tt_proc_opts o = { .argv = argv, .timeout_ms = 60000 };
	tt_proc_result r;
	tt_error err = TT_ERROR_INIT;
	tt_proc_result_init(&r);
	int rc = tt_proc_run(&o, &r, &err) == 0 && r.status == 0 ? 0 : -1;
	tt_proc_result_release(&r);
	tt_error_clear(&err);
	return rc;
}

/* A private copy of a fixture table (tests may break it). */
static char *copy_fixture(const char *name)
{
	char *fx = fixtures();
	char *src = fx ? tt_path_join(fx, name) : NULL;
	char *dst = tt_path_join(tt_test_tmpdir(), name);
	if (!src || !dst || sh("cp -R \"$1\" \"$2\"", src, dst) != 0) {
		free(dst);
		dst = NULL;
	}
	free(fx);
	free(src);
	return dst;
}

static tt_backend *delta_backend(void)
{
	tt_backend *b = NULL;
	tt_error err = TT_ERROR_INIT;
	if (tt_backend_new(&b, tt_kind_find("delta"), NULL, NULL, NULL, &err) != 0)
		fprintf(stderr, "  tt_backend_new(delta): %s\n", tt_error_text(&err));
	tt_error_clear(&err);
	return b;
}

static json_t *loc_of(const char *uri)
{
	return json_pack("{s:s}", "uri", uri);
}

static json_t *loc_at(const char *uri, long long at)
{
	char v[32];
	snprintf(v, sizeof v, "%lld", at);
	return json_pack("{s:s, s:s}", "uri", uri, "at", v);
}

#define SKIP_WITHOUT(cond, what)                                       \
	do {                                                           \
		if (!(cond)) {                                         \
			printf("  (%s not available: skipped)\n", what); \
			return;                                        \
		}                                                      \
	} while (0)

static bool have_oracle(void)
{
	char *py = python();
	bool ok = py != NULL;
	free(py);
	return ok;
}

/* --- conformance on deltalake-written tables ------------------------------------------ */

typedef struct conf_ctx {
	int objects;
} conf_ctx;

static int h_new(void *p, json_t **loc)
{
	conf_ctx *c = p;
	char name[32];
	snprintf(name, sizeof name, "table%d", ++c->objects);
	char *dir = tt_path_join(tt_test_tmpdir(), name);
	json_t *r = dir ? oracle("new", dir) : NULL;
	*loc = r ? loc_of(dir) : NULL;
	json_decref(r);
	free(dir);
	return *loc ? 0 : -1;
}

static int h_mutate(void *p, const json_t *loc, const char *ref)
{
	(void)p, (void)ref;
	json_t *r = oracle("mutate", json_string_value(json_object_get(loc, "uri")));
	json_decref(r);
	return r ? 0 : -1;
}

TT_TEST(conformance_delta)
{
	SKIP_WITHOUT(have_oracle(), "deltalake");
	tt_backend *b = delta_backend();
	conf_ctx c = { 0 };
	tt_conformance_harness h = { .backend = b, .new_object = h_new, .mutate = h_mutate,
				     .ctx = &c, .label = "conformance/delta" };
	int failed = b ? tt_conformance_run(&h) : -1;
	tt_backend_free(b);
	CHECK_INT(failed, 0);
}

/* --- the fixtures, as deltalake reads them -------------------------------------------- */

static const char *const fixture_tables[] = {
	"checkpoint-v2-table", "checkpoints_vacuumed", "delta-0.2.0", "delta-0.8.0",
	"simple_commit", "simple_table", "simple_table_with_checkpoint", "table-with-dv-small",
	"table_failed_last_checkpoint_update", NULL,
};

TT_TEST(fixtures_match_deltalake)
{
	char *fx = fixtures();
	SKIP_WITHOUT(fx && have_oracle(), "the delta fixtures or deltalake");
	tt_backend *b = delta_backend();
	CHECK(b);
	int tables = 0;
	for (const char *const *t = fixture_tables; *t; t++) {
		char *dir = tt_path_join(fx, *t);
		if (!tt_is_dir(dir)) {
			free(dir);
			continue;
		}
		tables++;
		json_t *want = oracle("expect", dir), *loc = loc_of(dir), *state = NULL;
		tt_error err = TT_ERROR_INIT;
		tt_history_entry *hist = NULL;
		size_t n = 0;
		CHECK_MSG(want, "deltalake cannot read %s", *t);
		CHECK_OK(b->ops->fingerprint(b, loc, NULL, &state, &err));
		CHECK_MSG(json_integer_value(json_object_get(state, "version")) ==
				  json_integer_value(json_object_get(want, "version")),
			  "%s: version %lld, deltalake says %lld", *t,
			  (long long)json_integer_value(json_object_get(state, "version")),
			  (long long)json_integer_value(json_object_get(want, "version")));
		CHECK_STR(json_string_value(json_object_get(state, "table_id")),
			  json_string_value(json_object_get(want, "table_id")));
		/* The log lists what deltalake's history() lists, newest first. */
		json_t *wh = json_object_get(want, "history");
		CHECK_OK(b->ops->history(b, loc, NULL, 1000, &hist, &n, &err));
		CHECK_MSG(n == json_array_size(wh), "%s: %zu log entries, deltalake %zu", *t, n,
			  json_array_size(wh));
		for (size_t i = 0; i < n; i++) {
			json_t *w = json_array_get(wh, i);
			char id[32];
			const char *op = json_string_value(json_object_get(w, "operation"));
			snprintf(id, sizeof id, "%lld",
				 (long long)json_integer_value(json_object_get(w, "version")));
			CHECK_STR(hist[i].id, id);
			CHECK_MSG(strncmp(hist[i].message, op ? op : "COMMIT", strlen(op ? op : "COMMIT")) == 0,
				  "%s v%s: message '%s', operation '%s'", *t, id, hist[i].message, op);
			/* commitInfo.timestamp, as deltalake reports it (these
			 * fixtures have no in-commit timestamps). */
			const char *when = json_string_value(json_object_get(w, "when"));
			CHECK_MSG(when && hist[i].when && strcmp(when, hist[i].when) == 0,
				  "%s v%s: when %s, deltalake %s", *t, id, hist[i].when, when);
		}
		/* Every listed version is addressable through `at`. */
		for (size_t i = 0; i < n; i++) {
			json_t *at = loc_at(dir, atoll(hist[i].id)), *s = NULL;
			CHECK_OK(b->ops->fingerprint(b, at, NULL, &s, &err));
			CHECK_INT(json_integer_value(json_object_get(s, "version")), atoll(hist[i].id));
			json_decref(s);
			json_decref(at);
		}
		tt_history_release(hist, n);
		json_decref(want);
		json_decref(loc);
		json_decref(state);
		free(dir);
	}
	CHECK(tables > 0);
	tt_backend_free(b);
	free(fx);
}

/* diff --content: one entry per commit in (a, b], the metrics normalised from
 * Spark's strings as from delta-rs's numbers. */
TT_TEST(diff_lists_commits)
{
	char *fx = fixtures();
	SKIP_WITHOUT(fx, "the delta fixtures");
	char *dir = tt_path_join(fx, "delta-0.8.0");
	tt_backend *b = delta_backend();
	json_t *loc = loc_of(dir), *a = NULL, *s = NULL;
	json_t *l0 = loc_at(dir, 0);
	tt_error err = TT_ERROR_INIT;
	tt_object_diff d;
	tt_object_diff_init(&d, NULL);
	CHECK_OK(b->ops->fingerprint(b, l0, NULL, &a, &err));
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s, &err));
	CHECK_OK(b->ops->diff(b, loc, a, s, NULL, NULL, &d, &err));
	CHECK_STR(d.unit, "commits");
	CHECK_INT(d.nentries, 1);
	CHECK_STR(d.entries[0].path, "v1");
	CHECK_STR(d.entries[0].change, "modified");
	/* delta-0.8.0's v1 is Spark's DELETE of one row. */
	CHECK(strncmp(d.entries[0].detail, "DELETE: -1 rows", 15) == 0);
	tt_object_diff_release(&d);
	json_decref(loc);
	json_decref(l0);
	json_decref(a);
	json_decref(s);
	tt_backend_free(b);
	free(dir);
	free(fx);
}

/* --- broken logs ------------------------------------------------------------------------ */

static int fingerprint_error(tt_backend *b, const char *dir, char **msg)
{
	json_t *loc = loc_of(dir), *s = NULL;
	tt_error err = TT_ERROR_INIT;
	int rc = b->ops->fingerprint(b, loc, NULL, &s, &err);
	*msg = tt_strdup(tt_error_text(&err));
	tt_error_clear(&err);
	json_decref(loc);
	json_decref(s);
	return rc;
}

TT_TEST(corrupt_commit_names_table_and_file)
{
	char *dir = copy_fixture("simple_table");
	SKIP_WITHOUT(dir, "the delta fixtures");
	char *f = tt_path_join(dir, "_delta_log/00000000000000000004.json"), *msg = NULL;
	FILE *fp = fopen(f, "w");
	CHECK(fp);
	fputs("{\"commitInfo\":{\"operation\":\"DELETE\"}}\n{\"add\":{\"path\":", fp);
	fclose(fp);
	tt_backend *b = delta_backend();
	CHECK_INT(fingerprint_error(b, dir, &msg), TT_EBACKEND);
	CHECK_MSG(strstr(msg, dir) && strstr(msg, "00000000000000000004.json"), "%s", msg);
	tt_backend_free(b);
	free(msg);
	free(f);
	free(dir);
}

TT_TEST(truncated_checkpoint_is_an_error)
{
	char *dir = copy_fixture("checkpoints_vacuumed");
	SKIP_WITHOUT(dir, "the delta fixtures");
	char *f = tt_path_join(dir, "_delta_log/00000000000000000010.checkpoint.parquet");
	char *msg = NULL;
	struct stat st;
	CHECK(stat(f, &st) == 0 && truncate(f, st.st_size / 2) == 0);
	tt_backend *b = delta_backend();
	/* Its id lives only in the checkpoint: the error names it. */
	CHECK_INT(fingerprint_error(b, dir, &msg), TT_EBACKEND);
	CHECK_MSG(strstr(msg, dir) && strstr(msg, "00000000000000000010.checkpoint.parquet") &&
			  strstr(msg, "truncated"), "%s", msg);
	tt_backend_free(b);
	free(msg);
	free(f);
	free(dir);
}

TT_TEST(missing_log_and_gap)
{
	char *dir = copy_fixture("simple_table");
	SKIP_WITHOUT(dir, "the delta fixtures");
	char *f = tt_path_join(dir, "_delta_log/00000000000000000002.json"), *msg = NULL;
	tt_backend *b = delta_backend();
	CHECK(unlink(f) == 0);
	CHECK_INT(fingerprint_error(b, dir, &msg), TT_EBACKEND);
	CHECK_MSG(strstr(msg, "gap") && strstr(msg, "00000000000000000002.json"), "%s", msg);
	free(msg);
	CHECK(sh("rm -rf \"$1/_delta_log\"", dir, NULL) == 0);
	CHECK_INT(fingerprint_error(b, dir, &msg), TT_EBACKEND);
	CHECK_MSG(strstr(msg, dir) && strstr(msg, "_delta_log"), "%s", msg);
	tt_backend_free(b);
	free(msg);
	free(f);
	free(dir);
}

static tt_verify_status verify(tt_backend *b, const char *dir, const json_t *state, bool deep,
			       char **msg)
{
	json_t *loc = loc_of(dir);
	tt_error err = TT_ERROR_INIT;
	tt_verify_status st = TT_VERIFY_UNKNOWN;
	*msg = NULL;
	if (b->ops->verify(b, loc, state, NULL, deep, &st, msg, &err) != 0) {
		fprintf(stderr, "  verify: %s\n", tt_error_text(&err));
		st = (tt_verify_status)-1;
	}
	tt_error_clear(&err);
	json_decref(loc);
	return st;
}

/* A table recreated at the same path verifies as drifted; a version whose
 * data files are gone (vacuumed) as missing under --deep. */
TT_TEST(verify_recreated_and_vacuumed)
{
	SKIP_WITHOUT(have_oracle(), "deltalake");
	char *dir = tt_path_join(tt_test_tmpdir(), "t"), *msg = NULL;
	tt_backend *b = delta_backend();
	json_t *loc = loc_of(dir), *s0 = NULL, *s1 = NULL, *r;
	tt_error err = TT_ERROR_INIT;
	CHECK((r = oracle("new", dir)) != NULL);
	json_decref(r);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s0, &err));
	CHECK((r = oracle("mutate", dir)) != NULL);
	json_decref(r);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s1, &err));
	CHECK_INT(verify(b, dir, s0, false, &msg), TT_VERIFY_UNKNOWN);
	free(msg);
	CHECK_INT(verify(b, dir, s0, true, &msg), TT_VERIFY_OK);
	free(msg);
	/* "Vacuum" v0's only data file by hand: its add path is in the log. */
	CHECK(sh("cd \"$1\" && f=$(sed -n 's/.*\"add\":{\"path\":\"\\([^\"]*\\)\".*/\\1/p' "
		 "_delta_log/00000000000000000000.json | head -1) && test -n \"$f\" && rm \"$f\"",
		 dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s0, true, &msg), TT_VERIFY_MISSING);
	CHECK_MSG(strstr(msg, "vacuumed"), "%s", msg);
	free(msg);
	/* Recreate the table: a new metaData.id. */
	CHECK(sh("rm -rf \"$1\"", dir, NULL) == 0);
	CHECK((r = oracle("new", dir)) != NULL);
	json_decref(r);
	CHECK_INT(verify(b, dir, s0, false, &msg), TT_VERIFY_DRIFTED);
	free(msg);
	json_decref(loc);
	json_decref(s0);
	json_decref(s1);
	tt_backend_free(b);
	free(dir);
}

/* The footer reader on bytes: not Parquet, cut short, or garbage is a parse
 * error; never a crash and never a guessed id. */
TT_TEST(footer_reader_refuses_garbage)
{
	tt_error err = TT_ERROR_INIT;
	char *id = NULL;
	const unsigned char junk[] = "0123456789abcdef";
	CHECK_INT(tt_delta_footer_table_id(junk, 16, "junk", &id, &err), TT_EPARSE);
	unsigned char cut[16] = { 0 };
	memcpy(cut + 8, "\xff\x00\x00\x00PAR1", 8);
	CHECK_INT(tt_delta_footer_table_id(cut, 16, "cut", &id, &err), TT_EPARSE);
	unsigned char bad[16] = { 0x19, 0x1c, 0x1c, 0x1c, 0x1c, 0x1c, 0x1c, 0x1c };
	memcpy(bad + 8, "\x08\x00\x00\x00PAR1", 8);
	CHECK_INT(tt_delta_footer_table_id(bad, 16, "bad", &id, &err), TT_EPARSE);
	CHECK(id == NULL);
	tt_error_clear(&err);
}

/* Without .crc files the id comes from the commits back to the checkpoint,
 * then from _last_checkpoint's V2 non-file actions, then from the JSON V2
 * checkpoint itself: each must give deltalake's id. */
TT_TEST(id_sources_past_the_crc)
{
	char *fx = fixtures();
	SKIP_WITHOUT(fx && have_oracle(), "the delta fixtures or deltalake");
	char *orig = tt_path_join(fx, "checkpoint-v2-table");
	json_t *want = oracle("expect", orig);
	CHECK(want);
	const char *id = json_string_value(json_object_get(want, "table_id"));
	char *dir = copy_fixture("checkpoint-v2-table");
	CHECK(dir);
	tt_backend *b = delta_backend();
	json_t *loc = loc_of(dir), *s = NULL;
	tt_error err = TT_ERROR_INIT;
	CHECK(sh("cd \"$1/_delta_log\" && rm -f *.crc && rm -f 0000000000000000000[0-8].json", dir,
		 NULL) == 0);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s, &err));
	CHECK_STR(json_string_value(json_object_get(s, "table_id")), id);
	CHECK_INT(json_integer_value(json_object_get(s, "version")),
		  json_integer_value(json_object_get(want, "version")));
	json_decref(s);
	s = NULL;
	CHECK(sh("rm \"$1/_delta_log/_last_checkpoint\"", dir, NULL) == 0);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s, &err));
	CHECK_STR(json_string_value(json_object_get(s, "table_id")), id);
	json_decref(s);
	/* Version 7 is past log cleanup now, and says so. */
	json_t *at7 = loc_at(dir, 7);
	s = NULL;
	CHECK(b->ops->fingerprint(b, at7, NULL, &s, &err) == TT_EBACKEND);
	CHECK_MSG(strstr(tt_error_text(&err), "no longer in the log"), "%s", tt_error_text(&err));
	tt_error_clear(&err);
	json_decref(at7);
	json_decref(loc);
	json_decref(want);
	tt_backend_free(b);
	free(orig);
	free(dir);
	free(fx);
}

/* verify --deep on a fixture: every file v2 needs is there; a corrupt
 * commit at or below it makes it missing, and so does one above it here
 * (the head's id is read back through it), each naming the file. */
TT_TEST(deep_verify_reads_the_commits)
{
	char *dir = copy_fixture("simple_table");
	SKIP_WITHOUT(dir, "the delta fixtures");
	tt_backend *b = delta_backend();
	json_t *l2 = loc_at(dir, 2), *s2 = NULL;
	tt_error err = TT_ERROR_INIT;
	char *msg = NULL;
	CHECK_OK(b->ops->fingerprint(b, l2, NULL, &s2, &err));
	CHECK_INT(verify(b, dir, s2, true, &msg), TT_VERIFY_OK);
	free(msg);
	CHECK(sh("cp \"$1/_delta_log/00000000000000000003.json\" \"$1/v3\" && printf '{\"add\":' >> "
		 "\"$1/_delta_log/00000000000000000003.json\"", dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s2, true, &msg), TT_VERIFY_MISSING);
	CHECK_MSG(msg && strstr(msg, "00000000000000000003.json"), "%s", msg ? msg : "");
	free(msg);
	CHECK(sh("mv \"$1/v3\" \"$1/_delta_log/00000000000000000003.json\" && printf '{\"add\":' >> "
		 "\"$1/_delta_log/00000000000000000001.json\"", dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s2, true, &msg), TT_VERIFY_MISSING);
	CHECK_MSG(msg && strstr(msg, "00000000000000000001.json"), "%s", msg ? msg : "");
	free(msg);
	json_decref(l2);
	json_decref(s2);
	tt_backend_free(b);
	free(dir);
}

/* With every commit still in the log, --deep checks the files a checkpoint
 * lists too: one of them gone is reported.  With the commits before the
 * checkpoint cleaned up, the checkpoint's own add.path column (snappy
 * pages, written by Spark) says which files the version has: the same gone
 * file is reported, and once it is back the version verifies. */
TT_TEST(deep_verify_sees_files_behind_a_checkpoint)
{
	char *dir = copy_fixture("simple_table_with_checkpoint");
	SKIP_WITHOUT(dir, "the delta fixtures");
	tt_backend *b = delta_backend();
	json_t *loc = loc_at(dir, 10), *s = NULL;
	tt_error err = TT_ERROR_INIT;
	char *msg = NULL;
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s, &err));
	CHECK_INT(verify(b, dir, s, true, &msg), TT_VERIFY_OK);
	free(msg);
	/* the first commit's file: added before the checkpoint, never removed */
	CHECK(sh("f=$(grep -o '\"add\":{\"path\":\"[^\"]*' \"$1/_delta_log/00000000000000000000.json\" "
		 "| head -1 | sed 's/.*\"//') && [ -n \"$f\" ] && ! grep -q \"\\\"remove\\\":{\\\"path\\\":\\\"$f\" "
		 "\"$1\"/_delta_log/*.json && mv \"$1/$f\" \"$1/gone.parquet\" && echo \"$f\" > \"$1/gone.name\"",
		 dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s, true, &msg), TT_VERIFY_MISSING);
	CHECK_MSG(msg && strstr(msg, "is gone"), "%s", msg ? msg : "");
	free(msg);
	/* log cleanup: the commits before the checkpoint removed */
	CHECK(sh("rm \"$1\"/_delta_log/0000000000000000000[0-9].json", dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s, true, &msg), TT_VERIFY_MISSING);
	CHECK_MSG(msg && strstr(msg, "is gone"), "%s", msg ? msg : "");
	free(msg);
	msg = NULL;
	CHECK(sh("mv \"$1/gone.parquet\" \"$1/$(cat \"$1/gone.name\")\"", dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s, true, &msg), TT_VERIFY_OK);
	CHECK_MSG(!msg, "%s", msg ? msg : "");
	free(msg);
	msg = NULL;
	/* A checkpoint whose pages are zeroed (its footer intact) leaves the
	 * version unreadable. */
	CHECK(sh("f=\"$1/_delta_log/00000000000000000010.checkpoint.parquet\" && "
		 "python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,\"rb\").read()); "
		 "n=int.from_bytes(b[-8:-4],\"little\"); b[4:len(b)-8-n]=bytes(len(b)-12-n); "
		 "open(p,\"wb\").write(b)' \"$f\"", dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s, true, &msg), TT_VERIFY_MISSING);
	CHECK_MSG(msg && strstr(msg, "00000000000000000010.checkpoint.parquet"), "%s",
		  msg ? msg : "");
	free(msg);
	json_decref(loc);
	json_decref(s);
	tt_backend_free(b);
	free(dir);
}

/* A version whose rows were deleted through a deletion vector needs the
 * vector's file too: Databricks' table-with-dv-small keeps it as
 * deletion_vector_<uuid>.bin, named by a Z85-encoded UUID in the log. */
TT_TEST(deep_verify_checks_deletion_vector_files)
{
	char *dir = copy_fixture("table-with-dv-small");
	SKIP_WITHOUT(dir, "the delta fixtures");
	tt_backend *b = delta_backend();
	json_t *l1 = loc_at(dir, 1), *l0 = loc_at(dir, 0), *s1 = NULL, *s0 = NULL;
	tt_error err = TT_ERROR_INIT;
	char *msg = NULL;
	CHECK_OK(b->ops->fingerprint(b, l1, NULL, &s1, &err));
	CHECK_OK(b->ops->fingerprint(b, l0, NULL, &s0, &err));
	CHECK_INT(verify(b, dir, s1, true, &msg), TT_VERIFY_OK);
	free(msg);
	msg = NULL;
	CHECK(sh("mv \"$1/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin\" \"$1/dv.moved\"",
		 dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s1, true, &msg), TT_VERIFY_MISSING);
	CHECK_MSG(msg && strstr(msg, "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin"),
		  "%s", msg ? msg : "");
	free(msg);
	msg = NULL;
	/* v0 had no deletion vector */
	CHECK_INT(verify(b, dir, s0, true, &msg), TT_VERIFY_OK);
	free(msg);
	json_decref(l0);
	json_decref(l1);
	json_decref(s0);
	json_decref(s1);
	tt_backend_free(b);
	free(dir);
}

/* Deletion-vector descriptors to file names, as the Delta protocol spells
 * them; malformed ones refused. */
TT_TEST(deletion_vector_file_names)
{
	char *path = NULL;
	CHECK_INT(tt_delta_dv_file("u", "vBn[lx{q8@P<9BNH/isA", 20, &path), 0);
	CHECK_STR(path, "deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin");
	free(path);
	CHECK_INT(tt_delta_dv_file("u", "abvBn[lx{q8@P<9BNH/isA", 22, &path), 0);
	CHECK_STR(path, "ab/deletion_vector_61d16c75-6994-46b7-a15b-8b538852e50e.bin");
	free(path);
	CHECK_INT(tt_delta_dv_file("p", "s3://b/t/dv.bin", 15, &path), 0);
	CHECK_STR(path, "s3://b/t/dv.bin");
	free(path);
	CHECK_INT(tt_delta_dv_file("i", "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", 50, &path), 0);
	CHECK(path == NULL);
	CHECK_INT(tt_delta_dv_file("u", "short", 5, &path), -1);
	CHECK_INT(tt_delta_dv_file("u", "vBn[lx{q8@P<9BNH/is~", 20, &path), -1); /* not Z85 */
	CHECK_INT(tt_delta_dv_file("u", "#####vBn[lx{q8@P<9BN", 20, &path), -1); /* > 2^32 */
	CHECK_INT(tt_delta_dv_file("x", "vBn[lx{q8@P<9BNH/isA", 20, &path), -1);
	CHECK(path == NULL);
}

/* A V2 checkpoint (UUID-named JSON, Databricks) keeps its add actions in a
 * Parquet sidecar under _delta_log/_sidecars: after log cleanup the files
 * the version has come from there, and a gone one is reported. */
TT_TEST(deep_verify_reads_v2_checkpoint_sidecars)
{
	char *dir = copy_fixture("checkpoint-v2-table");
	SKIP_WITHOUT(dir, "the delta fixtures");
	tt_backend *b = delta_backend();
	json_t *loc = loc_at(dir, 9), *s = NULL;
	tt_error err = TT_ERROR_INIT;
	char *msg = NULL;
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s, &err));
	CHECK(sh("rm \"$1\"/_delta_log/0000000000000000000[0-7].json", dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s, true, &msg), TT_VERIFY_OK);
	CHECK_MSG(!msg, "%s", msg ? msg : "");
	free(msg);
	msg = NULL;
	/* a file the sidecar lists, which commit 9 does not touch */
	CHECK(sh("cd \"$1\" && f=$(ls _delta_log/_sidecars/00000000000000000008.* >/dev/null && "
		 "for p in part-*.parquet; do grep -q \"$p\" _delta_log/00000000000000000009.json "
		 "|| { echo \"$p\"; break; }; done) && [ -n \"$f\" ] && "
		 "grep -q \"$f\" _delta_log/_sidecars/00000000000000000008.* && mv \"$f\" gone.bin",
		 dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s, true, &msg), TT_VERIFY_MISSING);
	CHECK_MSG(msg && strstr(msg, "is gone"), "%s", msg ? msg : "");
	free(msg);
	msg = NULL;
	/* a sidecar that is gone leaves the version unreadable */
	CHECK(sh("rm \"$1\"/_delta_log/_sidecars/00000000000000000008.*", dir, NULL) == 0);
	CHECK_INT(verify(b, dir, s, true, &msg), TT_VERIFY_MISSING);
	CHECK_MSG(msg && strstr(msg, "_sidecars"), "%s", msg ? msg : "");
	free(msg);
	json_decref(loc);
	json_decref(s);
	tt_backend_free(b);
	free(dir);
}

/* The commit reader on text: both metric spellings, a MERGE's output rows
 * not counted as additions, inCommitTimestamp beside timestamp, and a
 * corrupt line named by its number. */
TT_TEST(commit_reader_normalises_metrics)
{
	tt_error err = TT_ERROR_INIT;
	tt_delta_commit c;
	const char *spark =
		"{\"commitInfo\":{\"inCommitTimestamp\":1700000000123,\"timestamp\":1700000009999,"
		"\"operation\":\"MERGE\",\"operationMetrics\":{\"numOutputRows\":\"10\","
		"\"numTargetRowsInserted\":\"2\",\"numTargetRowsUpdated\":\"3\","
		"\"numTargetRowsDeleted\":\"1\",\"numTargetFilesAdded\":\"1\","
		"\"numTargetFilesRemoved\":\"2\"}}}\n"
		"{\"metaData\":{\"id\":\"abc\"}}\n";
	CHECK_OK(tt_delta_parse_commit(spark, strlen(spark), "spark.json", &c, &err));
	CHECK_STR(c.operation, "MERGE");
	CHECK_INT(c.metrics.added_rows, 2);
	CHECK_INT(c.metrics.updated_rows, 3);
	CHECK_INT(c.metrics.deleted_rows, 1);
	CHECK_INT(c.metrics.added_files, 1);
	CHECK_INT(c.metrics.removed_files, 2);
	CHECK(c.has_ict && c.ict_ms == 1700000000123LL);
	CHECK(c.has_timestamp && c.timestamp_ms == 1700000009999LL);
	CHECK_STR(c.table_id, "abc");
	tt_delta_commit_release(&c);

	const char *rs = "\n{\"commitInfo\":{\"operation\":\"OPTIMIZE\",\"operationMetrics\":"
			 "{\"num_files_added\":1,\"num_files_removed\":4}}}\n";
	CHECK_OK(tt_delta_parse_commit_info(rs, strlen(rs), "rs.json", &c, &err));
	CHECK_INT(c.metrics.added_files, 1);
	CHECK_INT(c.metrics.removed_files, 4);
	CHECK_INT(c.metrics.added_rows, -1);
	CHECK(!c.has_ict && !c.has_timestamp && !c.table_id);
	tt_delta_commit_release(&c);

	const char *bad = "{\"commitInfo\":{}}\n{\"add\":{\"path\":\n";
	CHECK_INT(tt_delta_parse_commit(bad, strlen(bad), "bad.json", &c, &err), TT_EPARSE);
	CHECK_MSG(strstr(tt_error_text(&err), "bad.json (line 2)"), "%s", tt_error_text(&err));
	tt_error_clear(&err);
}

static int count_value(void *ctx, int64_t row, const unsigned char *s, size_t n, tt_error *err)
{
	(void)row;
	(void)s;
	(void)n;
	(void)err;
	(*(uint64_t *)ctx)++;
	return 0;
}

/* A file of 641 bytes whose pages repeat one dictionary index billions of
 * times (found by the fuzzer, which it kept busy past its timeout): the
 * read stops at the values its size allows, TT_ELIMIT naming the file. */
TT_TEST(parquet_repeated_dictionary_run_is_bounded_by_the_file_size)
{
	static const char *const col[] = { "add", "path" };
	tt_error err = TT_ERROR_INIT;
	tt_buf data = TT_BUF_INIT;
	uint64_t values = 0;
	bool found = false;
	char *f = source_path("fuzz/corpus/parquet/repeated-dictionary-run.parquet");
	CHECK_OK(tt_read_file(f, &data, 0, &err));
	CHECK_INT(tt_parquet_strings((const unsigned char *)data.ptr, data.len, "crafted.parquet", col, 2,
				     count_value, &values, &found, &err),
		  TT_ELIMIT);
	CHECK(values == TT_PARQUET_VALUES_FLOOR);
	CHECK_MSG(strstr(err.message, "crafted.parquet") && strstr(err.message, "add.path"), "%s",
		  err.message);
	tt_error_clear(&err);
	tt_buf_release(&data);
	free(f);
}

typedef struct rows_seen {
	int64_t row[4];
	char value[4][4];
	size_t n;
} rows_seen;

static int note_row(void *ctx, int64_t row, const unsigned char *s, size_t n, tt_error *err)
{
	rows_seen *r = ctx;
	(void)err;
	if (r->n < 4) {
		r->row[r->n] = row;
		snprintf(r->value[r->n], sizeof r->value[r->n], "%.*s", (int)n, (const char *)s);
	}
	r->n++;
	return 0;
}

/* Long runs of nulls (one RLE run each, as our writer and pyarrow write
 * them) are skipped whole: the values after them keep their rows. */
TT_TEST(parquet_values_after_long_null_runs_keep_their_rows)
{
	static const char *const col[] = { "s" };
	static const tt_parquet_column cols[] = { { "s", TT_PARQUET_STRING } };
	enum { N = 2001 };
	tt_parquet_cell *cells = tt_calloc(N, sizeof *cells);
	tt_error err = TT_ERROR_INIT;
	tt_buf file = TT_BUF_INIT;
	rows_seen seen = { 0 };
	bool found = false;
	CHECK(cells);
	for (size_t i = 0; i < N; i++)
		cells[i].null = true;
	cells[1000] = (tt_parquet_cell){ false, "x", 1, 0 };
	cells[2000] = (tt_parquet_cell){ false, "y", 1, 0 };
	CHECK_OK(tt_parquet_write(&file, cols, 1, cells, N, "test", &err));
	CHECK_OK(tt_parquet_strings((const unsigned char *)file.ptr, file.len, "runs.parquet", col, 1,
				    note_row, &seen, &found, &err));
	CHECK(found);
	CHECK_INT(seen.n, 2);
	CHECK(seen.row[0] == 1000 && seen.row[1] == 2000);
	CHECK_STR(seen.value[0], "x");
	CHECK_STR(seen.value[1], "y");
	tt_buf_release(&file);
	free(cells);
}
