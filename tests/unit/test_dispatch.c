/*
 * The backend dispatch layer (backends/dispatch.c) and the kit's shared
 * pieces (backends/kit.c): a missing op is the capability error naming the
 * kind, out-parameters are reset before the op runs, errors a backend left
 * without a kind get one, every call reaches the trace hook, and the kit's
 * pin descriptors and record-only stubs behave as the backends relied on.
 */
#include <string.h>

#include "backends/backend.h"
#include "backends/dispatch.h"
#include "backends/kit.h"
#include "backends/registry.h"
#include "core/kinds.h"
#include "harness.h"
#include "util/fs.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

static int seen_out_null;

static int fake_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	(void)b, (void)loc;
	seen_out_null = *out == NULL;
	/* An error raised below the backend, without the kind. */
	return tt_error_set(err, TT_EBACKEND, "the store said no");
}

static int fake_fingerprint(tt_backend *b, const json_t *loc, const char *ref, json_t **state,
			    tt_error *err)
{
	(void)b, (void)loc, (void)ref, (void)err;
	*state = json_object();
	return 0;
}

static const tt_backend_ops fake_ops = {
	.abi = TT_BACKEND_ABI,
	.no_fork = "fake cannot fork; copy it",
	.identity = fake_identity,
	.fingerprint = fake_fingerprint,
};

static tt_kind fake_kind;

static void fake_backend(tt_backend *b)
{
	memset(b, 0, sizeof *b);
	memset(&fake_kind, 0, sizeof fake_kind);
	fake_kind.name = "fake";
	fake_kind.caps = TT_CAP_PIN;
	b->ops = &fake_ops;
	b->kind = &fake_kind;
}

struct trace {
	int calls;
	char last[32];
	int rc;
};

static void on_trace(void *ctx, const char *kind, const char *op, int rc)
{
	struct trace *t = ctx;
	t->calls++;
	snprintf(t->last, sizeof t->last, "%s.%s", kind, op);
	t->rc = rc;
}

TT_TEST(missing_op_is_the_capability_error)
{
	tt_backend b;
	tt_error err = TT_ERROR_INIT;
	json_t *refs = json_string("stale");
	json_t *keep = refs;
	fake_backend(&b);
	CHECK(!tt_backend_has(&b, list_working_refs));
	CHECK(tt_backend_list_working_refs(&b, NULL, &refs, &err) == TT_ECAPABILITY);
	CHECK(refs == NULL); /* reset before the op was looked at */
	CHECK(err.kind && strcmp(err.kind, "fake") == 0);
	CHECK_MSG(strstr(err.message, "cannot list_working_refs") != NULL, "%s", err.message);
	json_decref(keep);
	tt_error_clear(&err);
}

TT_TEST(missing_fork_gives_the_kinds_reason)
{
	tt_backend b;
	tt_error err = TT_ERROR_INIT;
	char *ref = (char *)"stale";
	tt_target src = { .kind = TT_TARGET_BASE };
	fake_backend(&b);
	CHECK(tt_backend_fork(&b, NULL, &src, "x", NULL, &ref, &err) == TT_ECAPABILITY);
	CHECK(ref == NULL);
	CHECK_MSG(strstr(err.message, "fake cannot fork; copy it") != NULL, "%s", err.message);
	tt_error_clear(&err);
}

TT_TEST(missing_rename_ref_is_the_capability_error)
{
	tt_backend b;
	tt_error err = TT_ERROR_INIT;
	fake_backend(&b);
	CHECK(!tt_backend_has(&b, rename_ref)); /* upgrade then pins again, or forks, and deletes */
	CHECK(tt_backend_rename_ref(&b, NULL, "tether.old", "tether.new", &err) == TT_ECAPABILITY);
	CHECK(err.kind && strcmp(err.kind, "fake") == 0);
	CHECK_MSG(strstr(err.message, "cannot rename_ref") != NULL, "%s", err.message);
	tt_error_clear(&err);
}

/* The two refinements a caller may ask of any kind: no store options and
 * no progress where the kind has none (nothing is refused), and the
 * kinds that open an object store answer with its options, the locator's
 * region among them (what `open` hands a caller in this process). */
TT_TEST(storage_options_and_progress_default_to_nothing)
{
	tt_backend b;
	tt_error err = TT_ERROR_INIT;
	json_t *opts = json_string("stale"), *keep = opts;
	json_t *loc = json_pack("{s:s,s:s}", "uri", "s3://bucket/t", "region", "eu-west-3");
	fake_backend(&b);
	CHECK(tt_backend_storage_options(&b, loc, &opts, &err) == 0 && opts == NULL);
	tt_backend_progress(&b, NULL, NULL);
	json_decref(keep);
	static const char *const with[] = { "delta", "file", "icechunk", "lance" };
	static const char *const without[] = { "git", "iceberg", "ducklake", "dolt", "neon", "memory" };
	for (size_t i = 0; i < sizeof with / sizeof *with; i++) {
		tt_backend *k = NULL;
		CHECK_OK(tt_backend_new(&k, tt_kind_find(with[i]), NULL, NULL, NULL, &err));
		CHECK_MSG(tt_backend_has(k, storage_options), "%s", with[i]);
		CHECK_OK(tt_backend_storage_options(k, loc, &opts, &err));
		CHECK_MSG(opts && strcmp(json_string_value(json_object_get(opts, "region")), "eu-west-3") == 0,
			  "%s", with[i]);
		json_decref(opts);
		tt_backend_free(k);
	}
	for (size_t i = 0; i < sizeof without / sizeof *without; i++) {
		tt_backend *k = NULL;
		CHECK_OK(tt_backend_new(&k, tt_kind_find(without[i]), NULL, NULL, NULL, &err));
		CHECK_MSG(!tt_backend_has(k, storage_options), "%s", without[i]);
		tt_backend_free(k);
	}
	json_decref(loc);
	tt_error_clear(&err);
}

TT_TEST(errors_name_the_kind_and_calls_are_traced)
{
	tt_backend b;
	tt_error err = TT_ERROR_INIT;
	json_t *out = json_string("stale"), *keep = out, *state = NULL;
	struct trace t = { 0 };
	fake_backend(&b);
	tt_backend_set_trace(on_trace, &t);
	CHECK(tt_backend_identity(&b, NULL, &out, &err) == TT_EBACKEND);
	CHECK(seen_out_null && out == NULL);
	CHECK(err.kind && strcmp(err.kind, "fake") == 0);
	CHECK(t.calls == 1 && strcmp(t.last, "fake.identity") == 0 && t.rc == TT_EBACKEND);
	tt_error_clear(&err);
	CHECK(tt_backend_fingerprint(&b, NULL, NULL, &state, &err) == 0 && json_is_object(state));
	CHECK(t.calls == 2 && strcmp(t.last, "fake.fingerprint") == 0 && t.rc == 0);
	tt_backend_set_trace(NULL, NULL);
	CHECK(tt_backend_effective_capabilities(&b, NULL, NULL) == TT_CAP_PIN); /* the default */
	CHECK(tt_backend_state_addressable(&b, NULL, NULL));
	json_decref(state);
	json_decref(keep);
}

/* A listing that fails after it filled its output: what the memory
 * backend's list did when its store could not be written back. */
static int leaky_list(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	(void)b, (void)loc;
	*out = json_pack("[s]", "tether.0a1b2c3d.0123456789abcdef");
	return tt_error_set(err, TT_EIO, "the store could not be written back");
}

static const tt_backend_ops leaky_ops = {
	.abi = TT_BACKEND_ABI,
	.list_pins = leaky_list,
	.list_working_refs = leaky_list,
};

TT_TEST(a_failed_listing_leaves_the_caller_nothing_to_free)
{
	tt_backend b;
	tt_error err = TT_ERROR_INIT;
	json_t *ids = NULL, *refs = NULL;
	fake_backend(&b);
	b.ops = &leaky_ops;
	CHECK(tt_backend_list_pins(&b, NULL, &ids, &err) == TT_EIO);
	CHECK(ids == NULL);
	CHECK(err.kind && strcmp(err.kind, "fake") == 0);
	tt_error_clear(&err);
	CHECK(tt_backend_list_working_refs(&b, NULL, &refs, &err) == TT_EIO);
	CHECK(refs == NULL);
	tt_error_clear(&err);
}

TT_TEST(kit_fill_pin)
{
	tt_pin p;
	tt_error err = TT_ERROR_INIT;
	char longid[80];
	CHECK(tt_kit_fill_pin(&p, "fake", "abcd1234.0123456789abcdef", NULL, true, &err) == 0);
	CHECK(strcmp(p.id, "abcd1234.0123456789abcdef") == 0);
	CHECK(strcmp(p.ref, "tether.abcd1234.0123456789abcdef") == 0 && p.created);
	CHECK(tt_kit_fill_pin(&p, "fake", "a.b", "tether.a.b.2", false, &err) == 0);
	CHECK(strcmp(p.ref, "tether.a.b.2") == 0 && !p.created);
	memset(longid, 'x', sizeof longid - 1);
	longid[sizeof longid - 1] = '\0';
	CHECK(tt_kit_fill_pin(&p, "fake", longid, NULL, false, &err) == TT_ELIMIT);
	CHECK(err.kind && strcmp(err.kind, "fake") == 0);
	CHECK(p.id[0] == '\0' && p.ref[0] == '\0');
	tt_error_clear(&err);
}

TT_TEST(kit_record_only_stubs)
{
	static const tt_backend_ops rec_ops = {
		.abi = TT_BACKEND_ABI,
		.no_pin = "rec has no tags",
		.pin = tt_kit_no_pin,
		.unpin = tt_kit_no_unpin,
		.list_pins = tt_kit_no_pins,
		.delete_working_ref = tt_kit_no_working_ref,
	};
	tt_backend b;
	tt_error err = TT_ERROR_INIT;
	tt_pin p;
	json_t *ids = NULL;
	fake_backend(&b);
	b.ops = &rec_ops;
	CHECK(tt_backend_pin(&b, NULL, NULL, "x", &p, &err) == TT_ECAPABILITY);
	CHECK_MSG(strstr(err.message, "rec has no tags") != NULL, "%s", err.message);
	tt_error_clear(&err);
	CHECK(tt_backend_unpin(&b, NULL, &p, &err) == TT_ECAPABILITY);
	tt_error_clear(&err);
	CHECK(tt_backend_list_pins(&b, NULL, &ids, &err) == 0 && json_array_size(ids) == 0);
	CHECK(tt_backend_delete_working_ref(&b, NULL, "tether.ws.x", &err) == 0);
	json_decref(ids);
}

/* The kinds that promote by fast-forward only refuse a merge with what to
 * do instead, through the kit's one stub. */
TT_TEST(kit_no_merge_says_what_to_do_instead)
{
	static const char *const kinds[] = { "iceberg", "icechunk" };
	for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
		tt_backend *b = NULL;
		tt_error err = TT_ERROR_INIT;
		json_t *state = json_string("stale"), *conflicts = json_string("stale");
		json_t *keep[2] = { state, conflicts };
		tt_target src = { .kind = TT_TARGET_REF, .ref = "tether.ws.x" };
		tt_expect none = { TT_EXPECT_NONE, NULL };
		CHECK_OK(tt_backend_new(&b, tt_kind_find(kinds[i]), NULL, NULL, NULL, &err));
		CHECK(tt_backend_merge(b, NULL, &src, "m", &none, &state, &conflicts, &err) == TT_ECAPABILITY);
		CHECK(state == NULL && conflicts == NULL);
		CHECK(err.kind && strcmp(err.kind, kinds[i]) == 0);
		/* the refusal, then what to do instead */
		CHECK_MSG(strstr(err.message, "cannot merge diverged branches") != NULL &&
				  strstr(err.message, "re-apply the writes on a fresh fork") != NULL,
			  "%s", err.message);
		json_decref(keep[0]);
		json_decref(keep[1]);
		tt_error_clear(&err);
		tt_backend_free(b);
	}
}

/* The identity file, icechunk and delta objects share: a URL as written, a
 * local path resolved, a path that is not UTF-8 refused naming the kind. */
TT_TEST(kit_uri_identity)
{
	tt_backend b;
	tt_error err = TT_ERROR_INIT;
	json_t *id = NULL;
	fake_backend(&b);
	CHECK_OK(tt_kit_uri_identity(&b, "s3://bucket/a/../t.zarr", &id, &err));
	CHECK(strcmp(json_string_value(json_object_get(id, "uri")), "s3://bucket/a/../t.zarr") == 0);
	json_decref(id);
	char *dir = tt_realpath(tt_test_tmpdir());
	char *messy = tt_asprintf("%s/./x/../y", dir), *clean = tt_asprintf("%s/y", dir);
	char *bad = tt_asprintf("%s/\xff", dir);
	CHECK_OK(tt_kit_uri_identity(&b, messy, &id, &err));
	CHECK_STR(json_string_value(json_object_get(id, "uri")), clean);
	json_decref(id);
	CHECK(tt_kit_uri_identity(&b, bad, &id, &err) == TT_EBACKEND && id == NULL);
	free(dir);
	free(messy);
	free(clean);
	free(bad);
	CHECK(err.kind && strcmp(err.kind, "fake") == 0);
	CHECK_MSG(strstr(err.message, "the path is not valid UTF-8") != NULL, "%s", err.message);
	tt_error_clear(&err);
}

TT_TEST(kit_keep_ref)
{
	json_t *out = json_array();
	CHECK(tt_kit_keep_ref(out, "tether.a.b", "tether.", "tether.ws.", true) == 0);
	CHECK(tt_kit_keep_ref(out, "tether.ws.x", "tether.", "tether.ws.", true) == 0);
	CHECK(tt_kit_keep_ref(out, "main", "tether.", NULL, true) == 0);
	CHECK(tt_kit_keep_ref(out, NULL, "tether.", NULL, true) == 0);
	CHECK(tt_kit_keep_ref(out, "tether.ws.y", TT_WORKING_REF_PREFIX, NULL, false) == 0);
	CHECK(json_array_size(out) == 2);
	CHECK(strcmp(json_string_value(json_array_get(out, 0)), "a.b") == 0);
	CHECK(strcmp(json_string_value(json_array_get(out, 1)), "tether.ws.y") == 0);
	json_decref(out);
}

static const tt_vcs_ops bare_vcs_ops = { .kind = "git" };

TT_TEST(vcs_missing_op_is_the_capability_error)
{
	tt_vcs v = { .ops = &bare_vcs_ops };
	tt_error err = TT_ERROR_INIT;
	json_t *out = json_string("stale"), *keep = out;
	char token[65];
	CHECK(!tt_vcs_has(&v, abandon));
	CHECK(strcmp(tt_vcs_kind(&v), "git") == 0);
	CHECK(tt_vcs_bookmarks(&v, &out, &err) == TT_ECAPABILITY && out == NULL);
	CHECK_MSG(strstr(err.message, "git adapter cannot bookmarks") != NULL, "%s", err.message);
	CHECK(tt_vcs_alive_token(&v, token) == 0);
	json_decref(keep);
	tt_error_clear(&err);
}

/* An adapter with only the primitives: what dispatch derives from them. */
static int prim_resolve(tt_vcs *v, const char *rev, char **out, tt_error *err)
{
	(void)v;
	if (!(*out = tt_asprintf("resolved:%s", rev)))
		return tt_error_oom(err);
	return 0;
}

static int prim_files_at_many(tt_vcs *v, const char *const *revs, size_t n, const char *reldir,
			      json_t **out, tt_error *err)
{
	(void)v, (void)err;
	*out = json_object();
	for (size_t i = 0; i < n; i++)
		json_object_set_new(*out, revs[i], json_pack("{s:s}", reldir, revs[i]));
	return 0;
}

static int prim_alive_commits(tt_vcs *v, const char *const *commits, size_t n, bool *out,
			      tt_error *err)
{
	(void)v, (void)err;
	for (size_t i = 0; i < n; i++)
		out[i] = strcmp(commits[i], "alive") == 0;
	return 0;
}

static int prim_history_revs(tt_vcs *v, json_t **out, tt_error *err)
{
	(void)v, (void)err;
	*out = json_pack("[s,s]", "b", "a");
	return 0;
}

static const tt_vcs_ops prim_vcs_ops = {
	.kind = "git",
	.working_rev = "HEAD",
	.resolve = prim_resolve,
	.files_at_many = prim_files_at_many,
	.alive_commits = prim_alive_commits,
	.history_revs = prim_history_revs,
};

TT_TEST(vcs_derived_calls_come_from_the_primitives)
{
	tt_vcs v = { .ops = &prim_vcs_ops };
	tt_error err = TT_ERROR_INIT;
	json_t *files = NULL;
	char *id = NULL, d1[17], d2[17];
	bool alive = false;
	const char *ids[] = { "a", "b" };
	CHECK_OK(tt_vcs_current_rev(&v, &id, &err));
	CHECK(id && strcmp(id, "resolved:HEAD") == 0);
	free(id);
	CHECK_OK(tt_vcs_files_at(&v, "r1", "data", &files, &err));
	CHECK(files && strcmp(json_string_value(json_object_get(files, "data")), "r1") == 0);
	json_decref(files);
	CHECK_OK(tt_vcs_commit_alive(&v, "alive", &alive, &err));
	CHECK(alive);
	CHECK_OK(tt_vcs_commit_alive(&v, "gone", &alive, &err));
	CHECK(!alive);
	/* no history_digest op: the digest of history_revs, in any order */
	CHECK_OK(tt_vcs_history_digest(&v, d1, &err));
	CHECK_OK(tt_vcs_digest_revs(d2, ids, 2, &err));
	CHECK(strlen(d1) == 16 && strcmp(d1, d2) == 0);
	/* no tracked op: both questions are the capability error */
	bool t[1] = { true };
	const char *paths[] = { "x" };
	CHECK(tt_vcs_tracked_at(&v, "/elsewhere", paths, 1, t, &err) == TT_ECAPABILITY && !t[0]);
	tt_error_clear(&err);
	CHECK(tt_vcs_tracked(&v, paths, 1, t, &err) == TT_ECAPABILITY);
	tt_error_clear(&err);
}
