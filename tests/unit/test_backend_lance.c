/*
 * The lance backend (backends/lance.c, formats/lance_manifest.c): the
 * protobuf walker, manifest names and footers, corrupt manifests refused
 * with the file named, every upstream fixture decoded, and the conformance
 * suite on datasets that real pylance creates and writes to.
 *
 * pylance runs from the checkout's .venv (TETHER_PYTHON overrides); the
 * fixtures are the upstream samples in ../shared/fixtures/lance next to the
 * checkout (TETHER_LANCE_FIXTURES overrides).
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "conformance.h"
#include "core/kinds.h"
#include "formats/lance_manifest.h"
#include "formats/protobuf.h"
#include "harness.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"
#include "util/proc.h"

/* --- helpers --------------------------------------------------------------------- */

static char *python_path(void)
{
	const char *p = getenv("TETHER_PYTHON");
	if (p && *p)
		return tt_strdup(p);
	const char *src = getenv("TETHER_SOURCE_DIR");
	return tt_asprintf("%s/.venv/bin/python", src && *src ? src : ".");
}

static char *fixtures_dir(void)
{
	const char *p = getenv("TETHER_LANCE_FIXTURES");
	if (p && *p)
		return tt_strdup(p);
	const char *src = getenv("TETHER_SOURCE_DIR");
	return tt_asprintf("%s/../shared/fixtures/lance", src && *src ? src : ".");
}

/* Writes with pylance: "create PATH" (one row), "append PATH BRANCH|-"
 * (one new row, a new fragment, on the branch or main). */
static const char *const PY =
	"import sys, lance, pyarrow as pa\n"
	"op, path = sys.argv[1], sys.argv[2]\n"
	"n = int(sys.argv[4]) if len(sys.argv) > 4 else 0\n"
	"t = pa.table({'x': pa.array([n], pa.int64())})\n"
	"if op == 'create':\n"
	"    lance.write_dataset(t, path)\n"
	"else:\n"
	"    ds = lance.dataset(path)\n"
	"    if sys.argv[3] != '-':\n"
	"        ds = ds.checkout_version((sys.argv[3], None))\n"
	"    lance.write_dataset(t, ds, mode='append')\n";

static int pylance(const char *op, const char *path, const char *ref, int n)
{
	char *py = python_path(), num[24];
	tt_proc_result r;
	tt_error err = TT_ERROR_INIT;
	snprintf(num, sizeof num, "%d", n);
	const char *argv[] = { py, "-c", PY, op, path, ref ? ref : "-", num, NULL };
	tt_proc_opts o = { .argv = argv, .timeout_ms = 120000 };
	tt_proc_result_init(&r);
	int rc = py ? tt_proc_run(&o, &r, &err) : -1;
	if (rc == 0 && r.status != 0) {
		fprintf(stderr, "  pylance %s %s failed:\n%s\n", op, path, r.err.ptr);
		rc = -1;
	} else if (rc) {
		fprintf(stderr, "  cannot run %s: %s\n", py ? py : "python", tt_error_text(&err));
	}
	tt_proc_result_release(&r);
	tt_error_clear(&err);
	free(py);
	return rc;
}

static tt_backend *lance_backend(void)
{
	tt_backend *b = NULL;
	tt_error err = TT_ERROR_INIT;
	if (tt_backend_new(&b, tt_kind_find("lance"), NULL, NULL, NULL, &err) != 0) {
		fprintf(stderr, "  %s\n", tt_error_text(&err));
		b = NULL;
	}
	tt_error_clear(&err);
	return b;
}

static json_t *loc_of(const char *path)
{
	return json_pack("{s:s}", "uri", path);
}

/* --- protobuf -------------------------------------------------------------------- */

TT_TEST(protobuf_round_trip)
{
	tt_buf b = TT_BUF_INIT;
	CHECK_INT(tt_pb_put_uint(&b, 3, 300), 0);
	CHECK_INT(tt_pb_put_uint(&b, 4, (uint64_t)(int64_t)-1), 0); /* int32 -1: ten bytes */
	CHECK_INT(tt_pb_put_bytes(&b, 20, "feat", 4), 0);
	CHECK_INT(tt_pb_put_uint(&b, 536870911, 1), 0); /* the largest field number */

	tt_pb_reader r;
	tt_pb_field f;
	tt_pb_reader_init(&r, b.ptr, b.len);
	CHECK_INT(tt_pb_next(&r, &f), 1);
	CHECK(f.number == 3 && f.wire == TT_PB_VARINT && f.value == 300);
	CHECK_INT(tt_pb_next(&r, &f), 1);
	CHECK(f.number == 4 && tt_pb_int32(f.value) == -1 && f.size == 11);
	CHECK_INT(tt_pb_next(&r, &f), 1);
	CHECK(f.number == 20 && f.wire == TT_PB_LEN && f.len == 4 && memcmp(f.data, "feat", 4) == 0);
	CHECK_INT(tt_pb_next(&r, &f), 1);
	CHECK(f.number == 536870911);
	CHECK_INT(tt_pb_next(&r, &f), 0);

	/* Truncated spans, an 11-byte varint, field 0 and groups are malformed. */
	static const uint8_t bad[][12] = {
		{ 0x12, 0x05, 'a' },
		{ 0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 },
		{ 0x00, 0x01 },
		{ 0x0b },
	};
	static const size_t lens[] = { 3, 12, 2, 1 };
	for (size_t i = 0; i < 4; i++) {
		tt_pb_reader_init(&r, bad[i], lens[i]);
		CHECK_MSG(tt_pb_next(&r, &f) == -1, "case %zu accepted", i);
	}
	tt_buf_release(&b);
}

TT_TEST(manifest_names_both_schemes)
{
	uint64_t v;
	bool v2;
	CHECK_INT(tt_lance_manifest_name("1.manifest", &v, &v2), 1);
	CHECK(v == 1 && !v2);
	CHECK_INT(tt_lance_manifest_name("42.manifest", &v, &v2), 1);
	CHECK(v == 42 && !v2);
	CHECK_INT(tt_lance_manifest_name("18446744073709551615.manifest", &v, &v2), 1);
	CHECK(v == 0 && v2);
	CHECK_INT(tt_lance_manifest_name("18446744073709551573.manifest", &v, &v2), 1);
	CHECK(v == 42 && v2);
	/* Temporaries, staging copies, detached versions and hints are skipped. */
	static const char *const skip[] = {
		"d9223372036854775809.manifest", ".tmp_1.manifest", "3.manifest-6f1e", "3.manifest#1",
		"_latest.manifest", "latest_version_hint.json", ".manifest", "99999999999999999999.manifest",
		"184467440737095516150.manifest", NULL,
	};
	for (size_t i = 0; skip[i]; i++)
		CHECK_MSG(tt_lance_manifest_name(skip[i], &v, &v2) == 0, "%s accepted", skip[i]);
}

/* --- fixtures ---------------------------------------------------------------------- */

/* Every manifest of every upstream fixture decodes, and its version field
 * matches its name.  (Their contents are compared with pylance's view in
 * the end-to-end tests.) */
static int walk_versions(const char *dir, int *count)
{
	char *vd = tt_path_join(dir, "_versions");
	DIR *d = vd ? opendir(vd) : NULL;
	struct dirent *e;
	int bad = 0;
	if (!d) {
		free(vd);
		return 0;
	}
	while ((e = readdir(d)) != NULL) {
		uint64_t v;
		bool v2;
		if (tt_lance_manifest_name(e->d_name, &v, &v2) != 1)
			continue;
		char *p = tt_path_join(vd, e->d_name), why[256];
		tt_buf buf = TT_BUF_INIT;
		tt_error err = TT_ERROR_INIT;
		tt_lance_manifest m;
		if (!p || tt_read_file(p, &buf, 64u << 20, &err) != 0 ||
		    tt_lance_manifest_parse(&m, buf.ptr, buf.len, why, sizeof why) != 0) {
			fprintf(stderr, "  %s: %s\n", p ? p : "?", err.code ? tt_error_text(&err) : why);
			bad++;
		} else {
			if (m.version != v) {
				fprintf(stderr, "  %s: version %" PRIu64 "\n", p, m.version);
				bad++;
			}
			(*count)++;
			tt_lance_manifest_release(&m);
		}
		tt_error_clear(&err);
		tt_buf_release(&buf);
		free(p);
	}
	closedir(d);
	free(vd);
	return bad;
}

TT_TEST(every_fixture_manifest_decodes)
{
	char *root = fixtures_dir();
	DIR *top = root ? opendir(root) : NULL;
	struct dirent *e, *f;
	int count = 0, bad = 0, datasets = 0;
	CHECK_MSG(top != NULL, "no fixtures at %s (set TETHER_LANCE_FIXTURES)", root ? root : "?");
	while ((e = readdir(top)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		char *ver = tt_path_join(root, e->d_name);
		DIR *vd = ver ? opendir(ver) : NULL;
		while (vd && (f = readdir(vd)) != NULL) {
			if (f->d_name[0] == '.')
				continue;
			char *ds = tt_path_join(ver, f->d_name);
			if (ds && tt_is_dir(ds)) {
				int before = count;
				bad += walk_versions(ds, &count);
				datasets += count > before;
			}
			free(ds);
		}
		if (vd)
			closedir(vd);
		free(ver);
	}
	closedir(top);
	free(root);
	CHECK_INT(bad, 0);
	CHECK_MSG(datasets >= 14 && count >= 30, "only %d manifests in %d datasets", count, datasets);
}

/* --- corrupt manifests -------------------------------------------------------------- */

/* A dataset whose newest manifest is damaged: fingerprint fails with an
 * error naming the dataset and the file, and writes nothing. */
TT_TEST(corrupt_manifest_named_and_refused)
{
	char *tmp = tt_realpath(tt_test_tmpdir());
	char *ds = tmp ? tt_path_join(tmp, "broken") : NULL;
	CHECK(ds && pylance("create", ds, NULL, 1) == 0);
	CHECK(pylance("append", ds, NULL, 2) == 0);
	char *man = tt_asprintf("%s/_versions/%020" PRIu64 ".manifest", ds, UINT64_MAX - 2);
	tt_buf buf = TT_BUF_INIT;
	tt_error err = TT_ERROR_INIT;
	CHECK(man && tt_read_file(man, &buf, 1 << 20, &err) == 0);
	tt_backend *b = lance_backend();
	json_t *loc = loc_of(ds), *state = NULL;
	CHECK(b && loc);

	/* Truncated, bad magic, footer pointing outside, length mismatch,
	 * garbage protobuf. */
	for (int i = 0; i < 5; i++) {
		tt_buf bad = TT_BUF_INIT;
		tt_buf_put(&bad, buf.ptr, buf.len);
		switch (i) {
		case 0:
			bad.len = bad.len / 2;
			break;
		case 1:
			bad.ptr[bad.len - 1] = 'X';
			break;
		case 2:
			memset(bad.ptr + bad.len - 16, 0x7f, 8);
			break;
		case 3:
			bad.ptr[bad.len - 16] ^= 1;
			break;
		case 4: {
			uint32_t pos = (uint8_t)bad.ptr[bad.len - 16] | (uint32_t)(uint8_t)bad.ptr[bad.len - 15] << 8;
			memset(bad.ptr + pos + 4, 0xff, 6);
			break;
		}
		}
		CHECK(tt_write_file_atomic(man, bad.ptr, bad.len, 0644, &err) == 0);
		tt_error_clear(&err);
		int rc = b->ops->fingerprint(b, loc, NULL, &state, &err);
		CHECK_MSG(rc == TT_EBACKEND, "case %d: rc %d", i, rc);
		CHECK_MSG(err.message && strstr(err.message, "corrupt manifest") &&
				  strstr(err.message, ds) && strstr(err.message, "18446744073709551613.manifest"),
			  "case %d: %s", i, tt_error_text(&err));
		CHECK(state == NULL);
		tt_error_clear(&err);
		tt_buf_release(&bad);
	}
	/* Nothing was written: no tag, no branch. */
	char *refs = tt_path_join(ds, "_refs");
	CHECK(refs && !tt_exists(refs));
	free(refs);
	json_decref(loc);
	tt_backend_free(b);
	tt_buf_release(&buf);
	free(man);
	free(ds);
	free(tmp);
}

/* --- conformance with pylance ------------------------------------------------------------ */

typedef struct harness_ctx {
	const char *tmp;
	int objects, writes;
} harness_ctx;

static int h_new_object(void *p, json_t **loc)
{
	harness_ctx *c = p;
	char *path = tt_asprintf("%s/obj%d.lance", c->tmp, ++c->objects);
	*loc = NULL;
	if (path && pylance("create", path, NULL, 0) == 0)
		*loc = loc_of(path);
	free(path);
	return *loc ? 0 : -1;
}

static int h_mutate(void *p, const json_t *loc, const char *ref)
{
	harness_ctx *c = p;
	return pylance("append", json_string_value(json_object_get(loc, "uri")), ref, ++c->writes);
}

TT_TEST(conformance_lance_with_pylance)
{
	char *tmp = tt_realpath(tt_test_tmpdir());
	char *py = python_path();
	CHECK_MSG(py && tt_is_file(py), "no python at %s (run scripts/setup.sh or set TETHER_PYTHON)",
		  py ? py : "?");
	tt_backend *b = lance_backend();
	harness_ctx c = { .tmp = tmp };
	tt_conformance_harness h = { .backend = b, .new_object = h_new_object, .mutate = h_mutate,
				     .ctx = &c, .label = "conformance/lance" };
	int failed = b && tmp ? tt_conformance_run(&h) : -1;
	tt_backend_free(b);
	free(py);
	free(tmp);
	CHECK(c.writes > 0);
	CHECK_INT(failed, 0);
}



/* --- forks of pinned branches ------------------------------------------------------------ */

/* Lance keeps a branch a tag references, so an unconditional re-fork of a
 * pinned working branch lands on name.2, then name.3; pylance still sees
 * the original with its writes. */
TT_TEST(refork_of_tagged_branch_picks_sibling)
{
	char *tmp = tt_realpath(tt_test_tmpdir());
	char *ds = tmp ? tt_path_join(tmp, "sib.lance") : NULL;
	tt_backend *b = lance_backend();
	tt_error err = TT_ERROR_INIT;
	json_t *loc = NULL, *s0 = NULL, *s1 = NULL;
	tt_pin p0, p1;
	char *ref = NULL;
	CHECK(ds && b && pylance("create", ds, NULL, 1) == 0);
	loc = loc_of(ds);
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &s0, &err), 0);
	CHECK_INT(b->ops->pin(b, loc, s0, "c0fe5a1e.0000000000000001", &p0, &err), 0);
	tt_target src = { .kind = TT_TARGET_PIN, .pin = &p0 };
	tt_expect none = { .kind = TT_EXPECT_NONE };
	CHECK_INT(b->ops->fork(b, loc, &src, "tether.ws.c0fe5a1e.w", &none, &ref, &err), 0);
	CHECK_STR(ref, "tether.ws.c0fe5a1e.w");
	free(ref);
	ref = NULL;
	CHECK(pylance("append", ds, "tether.ws.c0fe5a1e.w", 2) == 0);
	CHECK_INT(b->ops->fingerprint(b, loc, "tether.ws.c0fe5a1e.w", &s1, &err), 0);
	CHECK(json_object_get(s1, "branch_id") != NULL);
	CHECK_INT(b->ops->pin(b, loc, s1, "c0fe5a1e.0000000000000002", &p1, &err), 0);

	/* The branch cannot go while the tag holds it ... */
	CHECK_INT(b->ops->delete_working_ref(b, loc, "tether.ws.c0fe5a1e.w", &err), TT_EBACKEND);
	CHECK_MSG(err.message && strstr(err.message, "release its pins first"), "%s", tt_error_text(&err));
	tt_error_clear(&err);
	/* ... so re-forks take siblings. */
	CHECK_INT(b->ops->fork(b, loc, &src, "tether.ws.c0fe5a1e.w", &none, &ref, &err), 0);
	CHECK_STR(ref, "tether.ws.c0fe5a1e.w.2");
	free(ref);
	ref = NULL;
	CHECK(pylance("append", ds, "tether.ws.c0fe5a1e.w.2", 3) == 0);
	CHECK_INT(b->ops->pin(b, loc, s1, "c0fe5a1e.0000000000000002", &p1, &err), 0);
	CHECK(!p1.created);
	json_t *s2 = NULL;
	CHECK_INT(b->ops->fingerprint(b, loc, "tether.ws.c0fe5a1e.w.2", &s2, &err), 0);
	CHECK_INT(b->ops->pin(b, loc, s2, "c0fe5a1e.0000000000000003", &p1, &err), 0);
	CHECK_INT(b->ops->fork(b, loc, &src, "tether.ws.c0fe5a1e.w", &none, &ref, &err), 0);
	CHECK_STR(ref, "tether.ws.c0fe5a1e.w.3");
	/* The state recorded on the first life still verifies. */
	tt_verify_status st;
	char *msg = NULL;
	CHECK_INT(b->ops->verify(b, loc, s1, NULL, true, &st, &msg, &err), 0);
	CHECK_INT(st, TT_VERIFY_OK);
	free(msg);
	free(ref);
	json_decref(s0);
	json_decref(s1);
	json_decref(s2);
	json_decref(loc);
	tt_backend_free(b);
	tt_error_clear(&err);
	free(ds);
	free(tmp);
}

/* A branch deleted and re-created restarts its versions under a new
 * branch_id: states of the old life are refused, not silently reread. */
TT_TEST(recreated_branch_is_a_new_life)
{
	char *tmp = tt_realpath(tt_test_tmpdir());
	char *ds = tmp ? tt_path_join(tmp, "life.lance") : NULL;
	tt_backend *b = lance_backend();
	tt_error err = TT_ERROR_INIT;
	json_t *loc = NULL, *s0 = NULL, *old = NULL, *now = NULL;
	tt_pin p0;
	char *ref = NULL;
	CHECK(ds && b && pylance("create", ds, NULL, 1) == 0);
	loc = loc_of(ds);
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &s0, &err), 0);
	CHECK_INT(b->ops->pin(b, loc, s0, "c0fe5a1e.00000000000000aa", &p0, &err), 0);
	tt_target src = { .kind = TT_TARGET_PIN, .pin = &p0 };
	tt_expect none = { .kind = TT_EXPECT_NONE };
	CHECK_INT(b->ops->fork(b, loc, &src, "tether.ws.c0fe5a1e.l", &none, &ref, &err), 0);
	free(ref);
	ref = NULL;
	CHECK(pylance("append", ds, "tether.ws.c0fe5a1e.l", 2) == 0);
	CHECK_INT(b->ops->fingerprint(b, loc, "tether.ws.c0fe5a1e.l", &old, &err), 0);
	CHECK_INT(b->ops->delete_working_ref(b, loc, "tether.ws.c0fe5a1e.l", &err), 0);
	CHECK_INT(b->ops->fork(b, loc, &src, "tether.ws.c0fe5a1e.l", &none, &ref, &err), 0);
	CHECK_STR(ref, "tether.ws.c0fe5a1e.l");
	CHECK(pylance("append", ds, "tether.ws.c0fe5a1e.l", 3) == 0);
	CHECK_INT(b->ops->fingerprint(b, loc, "tether.ws.c0fe5a1e.l", &now, &err), 0);
	/* Same branch, same version number, another life. */
	CHECK(json_equal(json_object_get(old, "version"), json_object_get(now, "version")));
	CHECK(!json_equal(json_object_get(old, "branch_id"), json_object_get(now, "branch_id")));
	tt_verify_status st;
	char *msg = NULL;
	CHECK_INT(b->ops->verify(b, loc, old, NULL, true, &st, &msg, &err), 0);
	CHECK_INT(st, TT_VERIFY_MISSING);
	CHECK_MSG(msg && strstr(msg, "deleted and re-created"), "%s", msg ? msg : "(none)");
	free(msg);
	free(ref);
	json_decref(s0);
	json_decref(old);
	json_decref(now);
	json_decref(loc);
	tt_backend_free(b);
	tt_error_clear(&err);
	free(ds);
	free(tmp);
}

/* --- latest-version discovery ---------------------------------------------------------- */

/* Temporaries, staging copies, detached versions and hints never count as
 * the latest version; a directory mixing V1 and V2 names is refused. */
TT_TEST(latest_version_skips_temporaries_and_refuses_mixed_schemes)
{
	char *tmp = tt_realpath(tt_test_tmpdir());
	char *ds = tmp ? tt_path_join(tmp, "names.lance") : NULL;
	tt_backend *b = lance_backend();
	tt_error err = TT_ERROR_INIT;
	json_t *loc = NULL, *state = NULL;
	CHECK(ds && b && pylance("create", ds, NULL, 1) == 0);
	CHECK(pylance("append", ds, NULL, 2) == 0);
	loc = loc_of(ds);
	static const char *const junk[] = {
		".tmp_18446744073709551600.manifest", "d9223372036854775809.manifest",
		"18446744073709551600.manifest-6f1e2d3c", "18446744073709551600.manifest#1",
		"_latest.manifest", "latest_version_hint.json", NULL,
	};
	for (size_t i = 0; junk[i]; i++) {
		char *p = tt_asprintf("%s/_versions/%s", ds, junk[i]);
		CHECK(p && tt_write_file_atomic(p, "junk", 4, 0644, &err) == 0);
		free(p);
	}
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &state, &err), 0);
	CHECK_INT(json_integer_value(json_object_get(state, "version")), 2);
	json_decref(state);
	state = NULL;

	char *v1 = tt_asprintf("%s/_versions/7.manifest", ds);
	CHECK(v1 && tt_write_file_atomic(v1, "junk", 4, 0644, &err) == 0);
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &state, &err), TT_EBACKEND);
	CHECK_MSG(err.message && strstr(err.message, "mixes both manifest naming schemes"), "%s",
		  tt_error_text(&err));
	CHECK(state == NULL);
	tt_error_clear(&err);
	free(v1);
	json_decref(loc);
	tt_backend_free(b);
	free(ds);
	free(tmp);
}

/* V1 names ({v}.manifest, what pylance wrote before 14): the newest is the
 * largest number, not the last in directory order, and forks of such a
 * dataset still commit their own first manifest under a V2 name. */
TT_TEST(v1_dataset_latest_and_fork)
{
	char *tmp = tt_realpath(tt_test_tmpdir());
	char *ds = tmp ? tt_path_join(tmp, "v1.lance") : NULL;
	tt_backend *b = lance_backend();
	tt_error err = TT_ERROR_INIT;
	json_t *loc = NULL, *state = NULL;
	tt_pin pin;
	char *ref = NULL;
	CHECK(ds && b && pylance("create", ds, NULL, 1) == 0);
	for (int i = 2; i <= 10; i++)
		CHECK(pylance("append", ds, NULL, i) == 0);
	/* Rename every V2 manifest to its V1 name. */
	for (uint64_t v = 1; v <= 10; v++) {
		char *from = tt_asprintf("%s/_versions/%020" PRIu64 ".manifest", ds, UINT64_MAX - v);
		char *to = tt_asprintf("%s/_versions/%" PRIu64 ".manifest", ds, v);
		CHECK(from && to && rename(from, to) == 0);
		free(from);
		free(to);
	}
	loc = loc_of(ds);
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &state, &err), 0);
	CHECK_INT(json_integer_value(json_object_get(state, "version")), 10);
	CHECK_INT(b->ops->pin(b, loc, state, "c0fe5a1e.00000000000000b1", &pin, &err), 0);
	tt_target src = { .kind = TT_TARGET_PIN, .pin = &pin };
	tt_expect absent = { .kind = TT_EXPECT_ABSENT };
	CHECK_INT(b->ops->fork(b, loc, &src, "tether.ws.c0fe5a1e.v1", &absent, &ref, &err), 0);
	CHECK(pylance("append", ds, "tether.ws.c0fe5a1e.v1", 11) == 0);
	json_t *on = NULL;
	CHECK_INT(b->ops->fingerprint(b, loc, ref, &on, &err), 0);
	CHECK_INT(json_integer_value(json_object_get(on, "version")), 11);
	/* "absent" is atomic: a second fork expecting it finds the branch. */
	char *again = NULL;
	CHECK_INT(b->ops->fork(b, loc, &src, "tether.ws.c0fe5a1e.v1", &absent, &again, &err),
		  TT_EREFMOVED);
	tt_error_clear(&err);
	free(again);
	free(ref);
	json_decref(on);
	json_decref(state);
	json_decref(loc);
	tt_backend_free(b);
	free(ds);
	free(tmp);
}
