/*
 * The icechunk backend: the format readers (ids, container, flatbuffers)
 * against every fixture repository, corrupt and truncated input, pins with
 * generations, and the conformance suite with objects made and written by
 * the real icechunk Python package (spec 1) through
 * tests/support/icechunk_writer.py.
 *
 * Fixtures: $TETHER_ICECHUNK_FIXTURES, else ../shared/fixtures/icechunk
 * beside the source tree ($TETHER_SOURCE_DIR).  The Python used for the
 * real icechunk: $TETHER_PYTHON, else .venv/bin/python in the source tree.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "backends/icechunk/icechunk_fmt.h"
#include "conformance.h"
#include "core/kinds.h"
#include "harness.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/proc.h"

static const char *const fixture_names[] = {
	"test-repo-v1", "test-repo-v2", "test-repo-v2-migrated", "split-repo-v1", "split-repo-v2",
	"split-repo-v2-migrated", "expire-repo-v1-by-1.1.21", "expire-repo-v1-by-2.0.5",
	"expire-repo-v1-by-working-copy", "expire-repo-v2-by-2.0.5",
	"expire-repo-v2-by-working-copy", NULL,
};

static char *fixture(const char *name)
{
	const char *env = getenv("TETHER_ICECHUNK_FIXTURES");
	const char *src = getenv("TETHER_SOURCE_DIR");
	if (env && *env)
		return tt_asprintf("%s/%s", env, name);
	return tt_asprintf("%s/../shared/fixtures/icechunk/%s", src ? src : ".", name);
}

static tt_backend *backend(void)
{
	tt_backend *b = NULL;
	tt_error err = TT_ERROR_INIT;
	if (tt_backend_new(&b, tt_kind_find("icechunk"), NULL, NULL, NULL, &err) != 0)
		fprintf(stderr, "  tt_backend_new(icechunk): %s\n", tt_error_text(&err));
	tt_error_clear(&err);
	return b;
}

static json_t *loc_of(const char *path)
{
	return json_pack("{s:s}", "uri", path);
}

/* cp -r src dst (fixtures are read-only inputs; writes go to copies). */
static int copy_tree(const char *src, const char *dst)
{
	const char *argv[] = { "cp", "-R", src, dst, NULL };
	tt_proc_opts o = { .argv = argv };
	tt_proc_result r;
	tt_error err = TT_ERROR_INIT;
	int rc;
	tt_proc_result_init(&r);
	rc = tt_proc_run(&o, &r, &err) == 0 && r.status == 0 ? 0 : -1;
	tt_proc_result_release(&r);
	tt_error_clear(&err);
	return rc;
}

static char *head_of(tt_backend *b, const char *path, const char *branch)
{
	tt_error err = TT_ERROR_INIT;
	json_t *loc = loc_of(path), *st = NULL;
	char *sid = NULL;
	if (b->ops->fingerprint(b, loc, branch, &st, &err) == 0)
		sid = tt_strdup(json_string_value(json_object_get(st, "snapshot_id")));
	else
		fprintf(stderr, "  fingerprint %s: %s\n", path, tt_error_text(&err));
	json_decref(st);
	json_decref(loc);
	tt_error_clear(&err);
	return sid;
}

/* --- ids and the container -------------------------------------------------------- */

TT_TEST(ids_are_crockford_base32)
{
	static const uint8_t root[12] = { 0x0b, 0x1c, 0xc8, 0xd6, 0x78, 0x75,
					  0x80, 0xf0, 0xe3, 0x3a, 0x65, 0x34 };
	uint8_t seq[12], back[12];
	char s[21];
	for (int i = 0; i < 12; i++)
		seq[i] = (uint8_t)i;
	tt_ic_id_encode(root, s);
	CHECK_STR(s, "1CECHNKREP0F1RSTCMT0");
	tt_ic_id_encode(seq, s);
	CHECK_STR(s, "000G40R40M30E209185G");
	CHECK_INT(tt_ic_id_decode("000g40r40m30e209185g", back), 0);
	CHECK(memcmp(back, seq, 12) == 0);
	CHECK(tt_ic_id_decode("000G40R40M30E209185", back) != 0);  /* short */
	CHECK(tt_ic_id_decode("000G40R40M30E209185U", back) != 0); /* not in the alphabet */
	CHECK(tt_ic_id_decode("000G40R40M30E209185H", back) != 0); /* padding bits set */
}

/* Every fixture: the container and flatbuffers decode; heads, branches and
 * ancestry are readable, and every ancestry ends at a root. */
TT_TEST(every_fixture_reads)
{
	tt_backend *b = backend();
	CHECK(b);
	for (size_t f = 0; fixture_names[f]; f++) {
		tt_error err = TT_ERROR_INIT;
		char *path = fixture(fixture_names[f]);
		json_t *loc = loc_of(path), *st = NULL, *pins = NULL, *ws = NULL;
		tt_history_entry *h = NULL;
		size_t n = 0;
		CHECK_MSG(tt_is_dir(path), "fixture %s missing: set TETHER_ICECHUNK_FIXTURES", path);
		CHECK_OK(b->ops->fingerprint(b, loc, NULL, &st, &err));
		CHECK_INT(strlen(json_string_value(json_object_get(st, "snapshot_id"))), 20);
		CHECK_OK(b->ops->history(b, loc, NULL, 100, &h, &n, &err));
		CHECK_MSG(n >= 2, "%s: %zu ancestors", fixture_names[f], n);
		CHECK_STR(h[0].id, json_string_value(json_object_get(st, "snapshot_id")));
		CHECK_STR(h[n - 1].message, "Repository initialized");
		CHECK(json_array_size(h[0].refs) >= 1);
		CHECK_OK(b->ops->list_pins(b, loc, &pins, &err));
		CHECK_INT(json_array_size(pins), 0);
		CHECK_OK(b->ops->list_working_refs(b, loc, &ws, &err));
		CHECK_INT(json_array_size(ws), 0);
		tt_history_release(h, n);
		json_decref(st);
		json_decref(pins);
		json_decref(ws);
		json_decref(loc);
		free(path);
	}
	tt_backend_free(b);
}

/* A spec-2 repository migrated from spec 1 keeps its ids: both layouts must
 * read to the same heads, tags and ancestry (times and messages included). */
TT_TEST(migrated_repo_reads_like_its_spec1_original)
{
	tt_backend *b = backend();
	const char *pairs[][2] = { { "test-repo-v1", "test-repo-v2-migrated" },
				   { "split-repo-v1", "split-repo-v2-migrated" } };
	CHECK(b);
	for (size_t p = 0; p < 2; p++) {
		tt_error err = TT_ERROR_INIT;
		char *a = fixture(pairs[p][0]), *c = fixture(pairs[p][1]);
		json_t *la = loc_of(a), *lc = loc_of(c);
		tt_history_entry *ha = NULL, *hc = NULL;
		size_t na = 0, nc = 0;
		CHECK_OK(b->ops->history(b, la, NULL, 100, &ha, &na, &err));
		CHECK_OK(b->ops->history(b, lc, NULL, 100, &hc, &nc, &err));
		CHECK_INT(na, nc);
		for (size_t i = 0; i < na; i++) {
			CHECK_STR(ha[i].id, hc[i].id);
			CHECK_STR(ha[i].when, hc[i].when);
			CHECK_STR(ha[i].message, hc[i].message);
			CHECK(json_equal(ha[i].refs, hc[i].refs));
		}
		tt_history_release(ha, na);
		tt_history_release(hc, nc);
		json_decref(la);
		json_decref(lc);
		free(a);
		free(c);
	}
	tt_backend_free(b);
}

/* `at` and history accept a tag, a branch and a snapshot id; a deleted tag
 * is no longer a name. */
TT_TEST(at_resolves_tags_branches_and_ids)
{
	tt_backend *b = backend();
	const char *names[] = { "test-repo-v1", "test-repo-v2", NULL };
	CHECK(b);
	for (size_t f = 0; names[f]; f++) {
		tt_error err = TT_ERROR_INIT;
		char *path = fixture(names[f]);
		char *mine = head_of(b, path, "my-branch");
		json_t *loc = json_pack("{s:s, s:s}", "uri", path, "at", "it also works!"), *st = NULL;
		CHECK(mine);
		CHECK_OK(b->ops->fingerprint(b, loc, NULL, &st, &err));
		CHECK_STR(json_string_value(json_object_get(st, "snapshot_id")), mine);
		json_decref(st);
		json_object_set_new(loc, "at", json_string(mine));
		CHECK_OK(b->ops->fingerprint(b, loc, NULL, &st, &err));
		CHECK_STR(json_string_value(json_object_get(st, "snapshot_id")), mine);
		json_decref(st);
		json_object_set_new(loc, "at", json_string("deleted"));
		CHECK(b->ops->fingerprint(b, loc, NULL, &st, &err) == TT_EBACKEND);
		CHECK(strstr(err.message, "not a branch, tag, or snapshot id"));
		tt_error_clear(&err);
		json_decref(loc);
		free(mine);
		free(path);
	}
	tt_backend_free(b);
}

/* --- corrupt input ------------------------------------------------------------------ */

static int read_all(const char *path, tt_buf *out)
{
	tt_error err = TT_ERROR_INIT;
	int rc = tt_read_file(path, out, 0, &err);
	tt_error_clear(&err);
	return rc;
}

/* Truncations and bit flips of a real repo file and snapshot never crash;
 * every failure is a parse error naming the file. */
TT_TEST(corrupt_and_truncated_files_fail_clearly)
{
	const char *tmp = tt_test_tmpdir();
	tt_backend *b = backend();
	char *v2 = fixture("test-repo-v2"), *v1 = fixture("test-repo-v1");
	char *c2 = tt_path_join(tmp, "v2"), *c1 = tt_path_join(tmp, "v1");
	tt_buf repo = TT_BUF_INIT, snap = TT_BUF_INIT;
	char *repo_path = tt_path_join(c2, "repo");
	char *head = NULL, *snap_path = NULL;
	CHECK(b && copy_tree(v2, c2) == 0 && copy_tree(v1, c1) == 0);
	CHECK(read_all(repo_path, &repo) == 0);
	head = head_of(b, c1, "main");
	CHECK(head);
	snap_path = tt_asprintf("%s/snapshots/%s", c1, head);
	CHECK(read_all(snap_path, &snap) == 0);
	for (int which = 0; which < 2; which++) {
		tt_buf *orig = which ? &snap : &repo;
		const char *target = which ? snap_path : repo_path;
		const char *dir = which ? c1 : c2;
		size_t cuts[] = { 0, 10, 38, 39, 45, orig->len / 2, orig->len - 1 };
		for (size_t k = 0; k < sizeof cuts / sizeof cuts[0] + 64; k++) {
			tt_error err = TT_ERROR_INIT;
			json_t *loc = loc_of(dir), *st = NULL;
			tt_history_entry *h = NULL;
			size_t n = 0, len = orig->len;
			char *bytes = tt_malloc(orig->len);
			int rc;
			memcpy(bytes, orig->ptr, orig->len);
			if (k < sizeof cuts / sizeof cuts[0])
				len = cuts[k];
			else
				bytes[(k * 7919) % orig->len] ^= (char)(1u << (k % 8));
			CHECK(tt_write_file_atomic(target, bytes, len, 0644, &err) == 0);
			rc = b->ops->fingerprint(b, loc, NULL, &st, &err);
			if (rc == 0)
				rc = b->ops->history(b, loc, NULL, 100, &h, &n, &err);
			if (rc != 0) {
				CHECK_MSG(err.message && strstr(err.message, "icechunk"),
					  "cut %zu: unclear error: %s", k, err.message);
				CHECK_MSG(rc == TT_EPARSE || rc == TT_EBACKEND || rc == TT_ELIMIT,
					  "cut %zu: rc %d (%s)", k, rc, err.message);
			}
			CHECK_MSG(k >= sizeof cuts / sizeof cuts[0] || rc != 0,
				  "truncation to %zu bytes was accepted", len);
			tt_history_release(h, n);
			json_decref(st);
			json_decref(loc);
			free(bytes);
			tt_error_clear(&err);
		}
	}
	tt_buf_release(&repo);
	tt_buf_release(&snap);
	free(v1);
	free(v2);
	free(c1);
	free(c2);
	free(repo_path);
	free(snap_path);
	free(head);
	tt_backend_free(b);
}

/* A spec-1 ref that is not {"snapshot": "<id>"} names the file. */
TT_TEST(corrupt_spec1_ref_fails_clearly)
{
	const char *tmp = tt_test_tmpdir();
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = backend();
	char *src = fixture("test-repo-v1"), *dst = tt_path_join(tmp, "repo");
	char *ref = tt_path_join(dst, "refs/branch.main/ref.json");
	static const char *const bad[] = { "", "{", "{\"snapshot\": 3}", "{\"snapshot\":\"SHORT\"}",
					   "[\"NXH3M0HJ7EEJ0699DPP0\"]" };
	json_t *loc = NULL, *st = NULL;
	CHECK(b && copy_tree(src, dst) == 0);
	loc = loc_of(dst);
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK(tt_write_file_atomic(ref, bad[i], strlen(bad[i]), 0644, &err) == 0);
		CHECK_INT(b->ops->fingerprint(b, loc, NULL, &st, &err), TT_EPARSE);
		CHECK(strstr(err.message, "branch.main/ref.json"));
		tt_error_clear(&err);
	}
	json_decref(loc);
	free(src);
	free(dst);
	free(ref);
	tt_backend_free(b);
}

/* --- pins on a spec-1 copy --------------------------------------------------------- */

TT_TEST(pin_generations_after_deletion)
{
	const char *tmp = tt_test_tmpdir();
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = backend();
	char *src = fixture("test-repo-v1"), *dst = tt_path_join(tmp, "repo");
	json_t *loc = NULL, *st = NULL, *pins = NULL;
	tt_pin p1, p2, p3;
	tt_verify_status vs;
	char *msg = NULL;
	CHECK(b && copy_tree(src, dst) == 0);
	loc = loc_of(dst);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &st, &err));
	CHECK_OK(b->ops->pin(b, loc, st, "0a1b2c3d.0011223344556677", &p1, &err));
	CHECK_STR(p1.ref, "tether.0a1b2c3d.0011223344556677");
	CHECK(p1.created);
	CHECK_OK(b->ops->pin(b, loc, st, "0a1b2c3d.0011223344556677", &p2, &err));
	CHECK(!p2.created);
	CHECK_OK(b->ops->unpin(b, loc, &p1, &err));
	CHECK_OK(b->ops->verify(b, loc, st, &p1, false, &vs, &msg, &err));
	CHECK_INT(vs, TT_VERIFY_MISSING);
	free(msg);
	/* The name is burnt: the next pin of the same id is generation 2. */
	CHECK_OK(b->ops->pin(b, loc, st, "0a1b2c3d.0011223344556677", &p3, &err));
	CHECK_STR(p3.ref, "tether.0a1b2c3d.0011223344556677.2");
	CHECK_OK(b->ops->list_pins(b, loc, &pins, &err));
	CHECK_INT(json_array_size(pins), 1);
	CHECK_STR(json_string_value(json_array_get(pins, 0)), "0a1b2c3d.0011223344556677");
	/* The manifest's ref (generation 1) still verifies through the live one. */
	CHECK_OK(b->ops->verify(b, loc, st, &p1, false, &vs, &msg, &err));
	CHECK_INT(vs, TT_VERIFY_OK);
	CHECK(msg && strstr(msg, ".2"));
	free(msg);
	json_decref(pins);
	json_decref(st);
	json_decref(loc);
	free(src);
	free(dst);
	tt_backend_free(b);
}

/* --- conformance with the real icechunk (spec 1) ------------------------------------ */

typedef struct oracle {
	tt_proc *proc;
	const char *tmp;
	int objects, writes;
} oracle;

static char *python_exe(void)
{
	const char *env = getenv("TETHER_PYTHON");
	const char *src = getenv("TETHER_SOURCE_DIR");
	if (env && *env)
		return tt_strdup(env);
	return tt_asprintf("%s/.venv/bin/python", src ? src : ".");
}

/* One request to the writer; the answer (caller frees) or NULL. */
static json_t *ask(oracle *o, json_t *req)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf line = TT_BUF_INIT;
	char *text = json_dumps(req, JSON_COMPACT);
	json_t *ans = NULL;
	json_decref(req);
	if (text && tt_proc_write(o->proc, text, strlen(text), &err) == 0 &&
	    tt_proc_write(o->proc, "\n", 1, &err) == 0 && tt_proc_read_line(o->proc, &line, &err) == 0)
		ans = json_loads(line.ptr, 0, NULL);
	if (err.code || !ans)
		fprintf(stderr, "  icechunk writer: %s [%s] [%s]\n", tt_error_text(&err), line.ptr, text ? text : "");
	if (ans && !json_is_true(json_object_get(ans, "ok"))) {
		fprintf(stderr, "  icechunk: %s\n", json_string_value(json_object_get(ans, "error")));
		json_decref(ans);
		ans = NULL;
	}
	free(text);
	tt_buf_release(&line);
	tt_error_clear(&err);
	return ans;
}

static int o_new_object(void *p, json_t **loc)
{
	oracle *o = p;
	char *path = tt_asprintf("%s/obj%d", o->tmp, ++o->objects);
	json_t *ans = path ? ask(o, json_pack("[s,s]", "create", path)) : NULL;
	*loc = ans ? loc_of(path) : NULL;
	json_decref(ans);
	free(path);
	return *loc ? 0 : -1;
}

static int o_fresh(void *p, json_t **loc)
{
	oracle *o = p;
	char *path = tt_asprintf("%s/fresh%d", o->tmp, ++o->objects);
	*loc = path ? loc_of(path) : NULL;
	free(path);
	return *loc ? 0 : -1;
}

static int o_mutate(void *p, const json_t *loc, const char *ref)
{
	oracle *o = p;
	char name[32];
	json_t *ans;
	snprintf(name, sizeof name, "a%d", ++o->writes);
	ans = ask(o, json_pack("[s,s,s,s]", "commit", json_string_value(json_object_get(loc, "uri")),
			       ref ? ref : "main", name));
	json_decref(ans);
	return ans ? 0 : -1;
}

/* spec 1: the icechunk Python package (1.x); spec 2: icechunk 2.x from npm
 * ($ICECHUNK_JS_DIR, else .cache/icechunk-js; both made by scripts/setup.sh). */
static int start_oracle(oracle *o, int spec)
{
	const char *src = getenv("TETHER_SOURCE_DIR"), *js = getenv("ICECHUNK_JS_DIR");
	char *exe = spec == 1 ? python_exe() : tt_strdup("node");
	char *script = tt_asprintf("%s/tests/support/icechunk_writer.%s", src ? src : ".",
				   spec == 1 ? "py" : "mjs");
	char *jsdir = js && *js ? tt_asprintf("ICECHUNK_JS_DIR=%s", js)
				: tt_asprintf("ICECHUNK_JS_DIR=%s/.cache/icechunk-js", src ? src : ".");
	const char *argv[] = { exe, "--no-warnings", script, NULL };
	const char *env[] = { jsdir, NULL };
	tt_proc_opts opts = { .argv = argv, .env_set = env, .timeout_ms = 60000 };
	tt_error err = TT_ERROR_INIT;
	int rc;
	if (spec == 1) {
		argv[1] = script;
		argv[2] = NULL;
	}
	rc = tt_proc_spawn(&o->proc, &opts, &err);
	if (rc)
		fprintf(stderr, "  cannot start %s: %s\n", exe, tt_error_text(&err));
	tt_error_clear(&err);
	free(exe);
	free(script);
	free(jsdir);
	return rc;
}

static void conformance(int spec)
{
	oracle o = { NULL, tt_test_tmpdir(), 0, 0 };
	tt_backend *b = backend();
	tt_error err = TT_ERROR_INIT;
	tt_buf errout = TT_BUF_INIT;
	int failed;
	CHECK(b);
	CHECK_MSG(start_oracle(&o, spec) == 0, "real icechunk is needed (scripts/setup.sh)");
	/* What the backend declares for a local repository (the kind row is
	 * the contract for every storage).  CREATE makes a spec-2 repository,
	 * which icechunk 1.x cannot write to: it is checked with 2.x only. */
	unsigned caps = b->ops->effective_capabilities(b, NULL, NULL);
	tt_conformance_harness h = { .backend = b, .new_object = o_new_object, .mutate = o_mutate,
				     .fresh_locator = o_fresh,
				     .ctx = &o,
				     .label = spec == 1 ? "conformance/icechunk-spec1"
							: "conformance/icechunk-spec2",
				     .capabilities = spec == 1 ? caps & ~(unsigned)TT_CAP_CREATE : caps };
	failed = tt_conformance_run(&h);
	tt_proc_finish(o.proc, NULL, &errout, &err);
	tt_error_clear(&err);
	tt_backend_free(b);
	if (failed && errout.len)
		fprintf(stderr, "  icechunk writer stderr:\n%s\n", errout.ptr);
	tt_buf_release(&errout);
	CHECK_INT(failed, 0);
}

TT_TEST(conformance_icechunk_spec1_by_icechunk_1x)
{
	conformance(1);
}

TT_TEST(conformance_icechunk_spec2_by_icechunk_2x)
{
	conformance(2);
}

/* --- real icechunk accepts what tether writes ------------------------------------- */

static char *ask_sid(oracle *o, json_t *req)
{
	json_t *ans = ask(o, req);
	char *sid = ans ? tt_strdup(json_string_value(json_object_get(ans, "snapshot_id"))) : NULL;
	json_decref(ans);
	return sid;
}

static void accepts(int spec)
{
	oracle o = { NULL, tt_test_tmpdir(), 0, 0 };
	tt_backend *b = backend();
	tt_error err = TT_ERROR_INIT;
	char *path = tt_asprintf("%s/repo", o.tmp), *s1 = NULL, *s2 = NULL, *s3 = NULL, *ref = NULL;
	json_t *loc = NULL, *st1 = NULL, *st2 = NULL, *ans = NULL, *st = NULL;
	tt_pin px, py, py2;
	tt_target from_pin = { TT_TARGET_PIN, NULL, &px, NULL };
	tt_expect at_s3 = { TT_EXPECT_STATE, NULL };
	tt_history_entry *h = NULL;
	size_t n = 0;
	tt_verify_status vs;
	char *msg = NULL;
	const char *dev = "tether.ws.c0fe5a1e.dev";

	CHECK(b && path);
	CHECK_MSG(start_oracle(&o, spec) == 0, "real icechunk is needed (scripts/setup.sh)");
	CHECK((ans = ask(&o, json_pack("[s,s]", "create", path))));
	json_decref(ans);
	CHECK((s1 = ask_sid(&o, json_pack("[s,s,s,s]", "commit", path, "main", "a1"))));
	CHECK((s2 = ask_sid(&o, json_pack("[s,s,s,s]", "commit", path, "main", "a2"))));
	loc = loc_of(path);
	st1 = json_pack("{s:s}", "snapshot_id", s1);
	st2 = json_pack("{s:s}", "snapshot_id", s2);

	/* tags: a pin, and a pin re-made after its deletion (generation 2) */
	CHECK_OK(b->ops->pin(b, loc, st1, "c0fe5a1e.1111111111111111", &px, &err));
	CHECK_OK(b->ops->pin(b, loc, st2, "c0fe5a1e.2222222222222222", &py, &err));
	CHECK_OK(b->ops->unpin(b, loc, &py, &err));
	CHECK_OK(b->ops->pin(b, loc, st2, "c0fe5a1e.2222222222222222", &py2, &err));
	CHECK_STR(py2.ref, "tether.c0fe5a1e.2222222222222222.2");
	CHECK((ans = ask(&o, json_pack("[s,s]", "check", path))));
	json_decref(ans);
	CHECK((ans = ask(&o, json_pack("[s,s]", "tags", path))));
	CHECK_INT(json_array_size(json_object_get(ans, "names")), 2);
	CHECK_STR(json_string_value(json_array_get(json_object_get(ans, "names"), 0)), px.ref);
	CHECK_STR(json_string_value(json_array_get(json_object_get(ans, "names"), 1)), py2.ref);
	json_decref(ans);
	free(ref);
	CHECK((ref = ask_sid(&o, json_pack("[s,s,s]", "lookup_tag", path, py2.ref))));
	CHECK_STR(ref, s2);

	/* a fork icechunk commits on, then a conditional reset of it */
	free(ref);
	ref = NULL;
	CHECK_OK(b->ops->fork(b, loc, &from_pin, dev, NULL, &ref, &err));
	free(ref);
	ref = NULL;
	CHECK((ans = ask(&o, json_pack("[s,s]", "branches", path))));
	CHECK(json_array_size(json_object_get(ans, "names")) == 2);
	json_decref(ans);
	CHECK((s3 = ask_sid(&o, json_pack("[s,s,s,s]", "commit", path, dev, "on-fork"))));
	CHECK_OK(b->ops->fingerprint(b, loc, dev, &st, &err));
	CHECK_STR(json_string_value(json_object_get(st, "snapshot_id")), s3);
	CHECK_OK(b->ops->history(b, loc, dev, 100, &h, &n, &err));
	CHECK((ans = ask(&o, json_pack("[s,s,s]", "ancestry", path, dev))));
	CHECK_INT(json_array_size(json_object_get(ans, "entries")), n);
	for (size_t i = 0; i < n; i++) {
		json_t *e = json_array_get(json_object_get(ans, "entries"), i);
		CHECK_STR(h[i].id, json_string_value(json_array_get(e, 0)));
		CHECK_STR(h[i].when, json_string_value(json_array_get(e, 1)));
		CHECK_STR(h[i].message, json_string_value(json_array_get(e, 2)));
	}
	json_decref(ans);
	at_s3.state = st;
	CHECK_OK(b->ops->fork(b, loc, &from_pin, dev, &at_s3, &ref, &err));
	free(ref);
	ref = NULL;
	CHECK((ref = ask_sid(&o, json_pack("[s,s,s]", "lookup_branch", path, dev))));
	CHECK_STR(ref, s1);
	/* and icechunk keeps writing on the reset branch and on main */
	free(s3);
	CHECK((s3 = ask_sid(&o, json_pack("[s,s,s,s]", "commit", path, dev, "after-reset"))));
	free(s3);
	CHECK((s3 = ask_sid(&o, json_pack("[s,s,s,s]", "commit", path, "main", "a3"))));

	if (spec == 1) {
		/* expire_snapshots + garbage_collect keep the tagged snapshots */
		char when[64];
		time_t now = time(NULL) + 5;
		struct tm tm;
		gmtime_r(&now, &tm);
		strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
		CHECK((ans = ask(&o, json_pack("[s,s,s]", "expire", path, when))));
		json_decref(ans);
		CHECK_OK(b->ops->verify(b, loc, st1, &px, true, &vs, &msg, &err));
		CHECK_INT(vs, TT_VERIFY_OK);
		free(msg);
		msg = NULL;
		CHECK_OK(b->ops->verify(b, loc, st2, &py, true, &vs, &msg, &err));
		CHECK_INT(vs, TT_VERIFY_OK);
		free(msg);
		free(ref);
		CHECK((ref = ask_sid(&o, json_pack("[s,s,s]", "lookup_tag", path, px.ref))));
		CHECK_STR(ref, s1);
	}
	tt_history_release(h, n);
	tt_proc_finish(o.proc, NULL, NULL, &err);
	tt_error_clear(&err);
	json_decref(loc);
	json_decref(st1);
	json_decref(st2);
	json_decref(st);
	free(path);
	free(s1);
	free(s2);
	free(s3);
	free(ref);
	tt_backend_free(b);
}

TT_TEST(icechunk_1x_accepts_our_spec1_writes)
{
	accepts(1);
}

TT_TEST(icechunk_2x_accepts_our_spec2_writes)
{
	accepts(2);
}

/* The owner marker is FlexBuffers as icechunk writes it, and survives
 * icechunk 2.x decoding and re-encoding the repository metadata (every
 * commit rewrites the repo file from its decoded metadata). */
TT_TEST(created_repo_metadata_survives_icechunk_2x_writes)
{
	static const uint8_t alice[] = { 0x05, 0x61, 0x6c, 0x69, 0x63, 0x65, 0x00, 0x06, 0x14, 0x01 };
	oracle o = { NULL, tt_test_tmpdir(), 0, 0 };
	tt_backend *b = backend();
	tt_error err = TT_ERROR_INIT;
	tt_buf flex = TT_BUF_INIT;
	char *path = tt_asprintf("%s/made", o.tmp), *who = NULL, *s1 = NULL;
	json_t *loc = NULL, *st = NULL, *ans = NULL;
	int empty = -1;

	CHECK(b && path);
	CHECK_INT(tt_ic_flex_string("alice", &flex), 0);
	CHECK(flex.len == sizeof alice && memcmp(flex.ptr, alice, sizeof alice) == 0);
	tt_buf_release(&flex);
	loc = loc_of(path);
	CHECK_OK(b->ops->create(b, loc, "alice@example.com", &st, &err));
	CHECK_STR(json_string_value(json_object_get(st, "snapshot_id")), "1CECHNKREP0F1RSTCMT0");
	CHECK_MSG(start_oracle(&o, 2) == 0, "real icechunk is needed (scripts/setup.sh)");
	CHECK((ans = ask(&o, json_pack("[s,s]", "check", path))));
	json_decref(ans);
	CHECK((s1 = ask_sid(&o, json_pack("[s,s,s,s]", "commit", path, "main", "a1"))));
	CHECK((ans = ask(&o, json_pack("[s,s,s]", "ancestry", path, "main"))));
	CHECK_INT(json_array_size(json_object_get(ans, "entries")), 2);
	CHECK_STR(json_string_value(json_array_get(json_array_get(json_object_get(ans, "entries"), 1), 2)),
		  "Repository initialized");
	json_decref(ans);
	CHECK_OK(b->ops->owner(b, loc, &who, &err));
	CHECK_STR(who, "alice@example.com");
	CHECK_OK(b->ops->is_ref_empty(b, loc, NULL, &empty, &err));
	CHECK_INT(empty, 0);
	/* not empty: delete_store refuses and keeps everything */
	CHECK(b->ops->delete_store(b, loc, &err) == TT_EBACKEND);
	tt_error_clear(&err);
	CHECK(tt_is_dir(path));
	tt_proc_finish(o.proc, NULL, NULL, &err);
	tt_error_clear(&err);
	free(who);
	free(s1);
	free(path);
	json_decref(loc);
	json_decref(st);
	tt_backend_free(b);
}

/* delete_store removes only icechunk's names: anything else keeps it all. */
TT_TEST(delete_store_refuses_foreign_files)
{
	tt_backend *b = backend();
	tt_error err = TT_ERROR_INIT;
	char *path = tt_asprintf("%s/made", tt_test_tmpdir()), *extra = NULL;
	json_t *loc = NULL, *st = NULL;
	CHECK(b && path);
	loc = loc_of(path);
	CHECK_OK(b->ops->create(b, loc, "me", &st, &err));
	extra = tt_path_join(path, "notes.txt");
	CHECK(tt_write_file_atomic(extra, "x", 1, 0644, &err) == 0);
	CHECK(b->ops->delete_store(b, loc, &err) == TT_EBACKEND);
	CHECK(strstr(err.message, "notes.txt"));
	tt_error_clear(&err);
	CHECK(tt_is_dir(path));
	CHECK_OK(tt_unlink(extra, &err));
	CHECK_OK(b->ops->delete_store(b, loc, &err));
	CHECK(!tt_exists(path));
	free(extra);
	free(path);
	json_decref(loc);
	json_decref(st);
	tt_backend_free(b);
}

/* The ops log is capped at 1000 entries per repo file: past that, the file
 * keeps the newest entries and chains to the rest through
 * repo_before_updates (a backup's name).  icechunk 2.x must still read the
 * repository and write on top of it. */
TT_TEST(ops_log_cap_chains_to_backups)
{
	oracle o = { NULL, tt_test_tmpdir(), 0, 0 };
	tt_backend *b = backend();
	tt_error err = TT_ERROR_INIT;
	char *path = tt_asprintf("%s/capped", o.tmp), *sid = NULL;
	json_t *loc = NULL, *st = NULL, *ans = NULL;
	tt_buf raw = TT_BUF_INIT, fb = TT_BUF_INIT;
	ic_repo r;
	int spec = 0;

	CHECK(b && path);
	loc = loc_of(path);
	CHECK_OK(b->ops->create(b, loc, "me", &st, &err));
	for (int i = 0; i < 1005; i++) {
		tt_pin p;
		char id[64];
		snprintf(id, sizeof id, "c0fe5a1e.%016x", i);
		CHECK_OK(b->ops->pin(b, loc, st, id, &p, &err));
	}
	{
		char *repo = tt_path_join(path, "repo");
		CHECK(read_all(repo, &raw) == 0);
		free(repo);
	}
	CHECK_OK(tt_ic_container_read((const uint8_t *)raw.ptr, raw.len, IC_FILE_REPO, "repo", 0, &fb,
				   &spec, &err));
	CHECK_OK(tt_ic_repo_decode((const uint8_t *)fb.ptr, fb.len, "repo", &r, &err));
	CHECK_INT(r.ntags, 1005);
	CHECK(r.nupdates <= 1000);
	CHECK(r.chained);
	tt_ic_repo_release(&r);
	CHECK_MSG(start_oracle(&o, 2) == 0, "real icechunk is needed (scripts/setup.sh)");
	CHECK((ans = ask(&o, json_pack("[s,s]", "check", path))));
	json_decref(ans);
	CHECK((ans = ask(&o, json_pack("[s,s]", "tags", path))));
	CHECK_INT(json_array_size(json_object_get(ans, "names")), 1005);
	json_decref(ans);
	CHECK((sid = ask_sid(&o, json_pack("[s,s,s,s]", "commit", path, "main", "a1"))));
	tt_proc_finish(o.proc, NULL, NULL, &err);
	tt_error_clear(&err);
	tt_buf_release(&raw);
	tt_buf_release(&fb);
	free(sid);
	free(path);
	json_decref(loc);
	json_decref(st);
	tt_backend_free(b);
}

/* Racing conditional forks on a spec-2 repository (threads of one process
 * stand for tether processes: each call takes its own lock): exactly one
 * moves the branch, every other one finds it moved. */
typedef struct racer {
	tt_backend *b;
	const json_t *loc, *source, *expected;
	int rc;
} racer;

static void *race_fork(void *p)
{
	racer *r = p;
	tt_error err = TT_ERROR_INIT;
	tt_target src = { TT_TARGET_STATE, NULL, NULL, r->source };
	tt_expect exp = { TT_EXPECT_STATE, r->expected };
	char *ref = NULL;
	r->rc = r->b->ops->fork(r->b, r->loc, &src, "tether.ws.c0fe5a1e.race", &exp, &ref, &err);
	free(ref);
	tt_error_clear(&err);
	return NULL;
}

TT_TEST(spec2_racing_conditional_forks_one_wins)
{
	oracle o = { NULL, tt_test_tmpdir(), 0, 0 };
	tt_backend *b = backend();
	tt_error err = TT_ERROR_INIT;
	char *path = tt_asprintf("%s/race", o.tmp), *s1 = NULL, *s2 = NULL, *ref = NULL;
	json_t *loc = NULL, *st0 = NULL, *st1 = NULL, *st2 = NULL, *ans = NULL;
	racer r[8];
	pthread_t th[8];
	int wins = 0, moved = 0;

	CHECK(b && path);
	loc = loc_of(path);
	CHECK_OK(b->ops->create(b, loc, "me", &st0, &err));
	CHECK_MSG(start_oracle(&o, 2) == 0, "real icechunk is needed (scripts/setup.sh)");
	CHECK((s1 = ask_sid(&o, json_pack("[s,s,s,s]", "commit", path, "main", "a1"))));
	CHECK((s2 = ask_sid(&o, json_pack("[s,s,s,s]", "commit", path, "main", "a2"))));
	st1 = json_pack("{s:s}", "snapshot_id", s1);
	st2 = json_pack("{s:s}", "snapshot_id", s2);
	{
		tt_target src = { TT_TARGET_STATE, NULL, NULL, st0 };
		CHECK_OK(b->ops->fork(b, loc, &src, "tether.ws.c0fe5a1e.race", NULL, &ref, &err));
	}
	for (int i = 0; i < 8; i++) {
		r[i] = (racer){ b, loc, i % 2 ? st1 : st2, st0, 1 };
		CHECK(pthread_create(&th[i], NULL, race_fork, &r[i]) == 0);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 8; i++) {
		wins += r[i].rc == 0;
		moved += r[i].rc == TT_EREFMOVED;
	}
	CHECK_INT(wins, 1);
	CHECK_INT(moved, 7);
	CHECK((ans = ask(&o, json_pack("[s,s]", "check", path))));
	json_decref(ans);
	tt_proc_finish(o.proc, NULL, NULL, &err);
	tt_error_clear(&err);
	free(ref);
	free(s1);
	free(s2);
	free(path);
	json_decref(loc);
	json_decref(st0);
	json_decref(st1);
	json_decref(st2);
	tt_backend_free(b);
}

/* Forks of eight different branches racing on one local spec-2
 * repository: each rewrites the one `repo` file, If-Match on what it read,
 * so every one lands (the losers of a round plan again) and none is lost. */
typedef struct brancher {
	tt_backend *b;
	const json_t *loc, *source;
	char name[64];
	int rc;
} brancher;

static void *race_branch(void *p)
{
	brancher *r = p;
	tt_error err = TT_ERROR_INIT;
	tt_target src = { TT_TARGET_STATE, NULL, NULL, r->source };
	char *ref = NULL;
	r->rc = r->b->ops->fork(r->b, r->loc, &src, r->name, NULL, &ref, &err);
	free(ref);
	tt_error_clear(&err);
	return NULL;
}

TT_TEST(spec2_racing_forks_of_distinct_branches_all_land)
{
	tt_backend *b = backend();
	tt_error err = TT_ERROR_INIT;
	char *path = tt_asprintf("%s/many", tt_test_tmpdir());
	json_t *loc = NULL, *st0 = NULL, *refs = NULL;
	brancher r[8];
	pthread_t th[8];

	CHECK(b && path);
	loc = loc_of(path);
	CHECK_OK(b->ops->create(b, loc, "me", &st0, &err));
	for (int i = 0; i < 8; i++) {
		r[i] = (brancher){ b, loc, st0, "", 1 };
		snprintf(r[i].name, sizeof r[i].name, "tether.ws.c0fe5a1e.b%d", i);
		CHECK(pthread_create(&th[i], NULL, race_branch, &r[i]) == 0);
	}
	for (int i = 0; i < 8; i++)
		pthread_join(th[i], NULL);
	for (int i = 0; i < 8; i++)
		CHECK_INT(r[i].rc, 0);
	CHECK_OK(b->ops->list_working_refs(b, loc, &refs, &err));
	CHECK_INT(json_array_size(refs), 8);
	free(path);
	json_decref(loc);
	json_decref(st0);
	json_decref(refs);
	tt_backend_free(b);
}

/* A repository where icechunk's create_tag feature is disabled gets no pin
 * from tether either (icechunk's own writers refuse there too). */
TT_TEST(spec2_disabled_tag_creation_is_respected)
{
	oracle o = { NULL, tt_test_tmpdir(), 0, 0 };
	tt_backend *b = backend();
	tt_error err = TT_ERROR_INIT;
	char *path = tt_asprintf("%s/flags", o.tmp);
	json_t *loc = NULL, *st = NULL, *ans = NULL;
	tt_pin p;

	CHECK(b && path);
	loc = loc_of(path);
	CHECK_MSG(start_oracle(&o, 2) == 0, "real icechunk is needed (scripts/setup.sh)");
	CHECK((ans = ask(&o, json_pack("[s,s]", "create", path))));
	json_decref(ans);
	CHECK((ans = ask(&o, json_pack("[s,s,s,b]", "set_flag", path, "create_tag", 0))));
	json_decref(ans);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &st, &err));
	CHECK_INT(b->ops->pin(b, loc, st, "c0fe5a1e.0011223344556677", &p, &err), TT_EBACKEND);
	CHECK(strstr(err.message, "create_tag"));
	tt_error_clear(&err);
	CHECK((ans = ask(&o, json_pack("[s,s]", "tags", path))));
	CHECK_INT(json_array_size(json_object_get(ans, "names")), 0);
	json_decref(ans);
	tt_proc_finish(o.proc, NULL, NULL, &err);
	tt_error_clear(&err);
	free(path);
	json_decref(loc);
	json_decref(st);
	tt_backend_free(b);
}
