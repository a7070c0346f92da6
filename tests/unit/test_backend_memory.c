/*
 * The memory backend (in-process and file stores) through the conformance
 * suite, its own behaviour (merges, persistence across processes), the
 * shared parts of backends/backend.c, and the suite's own sharpness: a
 * backend that claims CONDITIONAL_REF and ignores `expected` must fail it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "backends/memory/memory.h"
#include "conformance.h"
#include "core/kinds.h"
#include "harness.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"

/* --- a conformance harness over the memory store ---------------------------- */

static int next_system;

static json_t *new_locator(void)
{
	char name[64];
	snprintf(name, sizeof name, "conf-%ld-%d", (long)getpid(), ++next_system);
	return json_pack("{s:s}", "system", name);
}

static int h_new_object(void *ctx, json_t **loc)
{
	*loc = new_locator();
	return *loc ? 0 : -1;
}

/* A new key per call ("k<N>": N), on top of what the branch holds: two
 * calls on two branches never touch the same key, so merges are clean. */
static int h_mutate(void *ctx, const json_t *loc, const char *ref)
{
	static int seq;
	tt_error err = TT_ERROR_INIT;
	const char *sys = json_string_value(json_object_get(loc, "system"));
	const char *branch = ref ? ref : "main";
	json_t *payload = NULL;
	char key[32];
	int rc;

	if (json_is_string(json_object_get(loc, "branch")) && !ref)
		branch = json_string_value(json_object_get(loc, "branch"));
	rc = tt_memory_read(sys, branch, &payload, &err);
	if (rc == 0) {
		snprintf(key, sizeof key, "k%d", ++seq);
		json_object_set_new(payload, key, json_integer(seq));
		rc = tt_memory_write(sys, branch, payload, NULL, &err);
	}
	if (rc)
		fprintf(stderr, "  mutate: %s\n", tt_error_text(&err));
	json_decref(payload);
	tt_error_clear(&err);
	return rc;
}

static int h_fresh(void *ctx, json_t **loc)
{
	*loc = new_locator();
	return *loc ? 0 : -1;
}

static tt_backend *memory_backend(void)
{
	tt_backend *b = NULL;
	tt_error err = TT_ERROR_INIT;
	if (tt_backend_new(&b, tt_kind_find("memory"), NULL, NULL, NULL, &err) != 0)
		fprintf(stderr, "  tt_backend_new(memory): %s\n", tt_error_text(&err));
	tt_error_clear(&err);
	return b;
}

static char *store_file(void)
{
	return tt_asprintf("%s/store/memory.json", tt_test_tmpdir());
}

TT_TEST(conformance_memory)
{
	tt_backend *b = memory_backend();
	CHECK(b != NULL);
	tt_conformance_harness h = { .backend = b, .new_object = h_new_object, .mutate = h_mutate,
				     .fresh_locator = h_fresh, .label = "conformance/memory" };
	int failed = tt_conformance_run(&h);
	tt_backend_free(b);
	CHECK_INT(failed, 0);
}

TT_TEST(conformance_memory_file)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf text = TT_BUF_INIT;
	char *path = store_file();
	CHECK(path != NULL);
	setenv(TT_MEMORY_STORE_ENV, path, 1);
	tt_backend *b = memory_backend();
	tt_conformance_harness h = { .backend = b, .new_object = h_new_object, .mutate = h_mutate,
				     .fresh_locator = h_fresh, .label = "conformance/memory-file" };
	int failed = b ? tt_conformance_run(&h) : -1;
	tt_backend_free(b);
	unsetenv(TT_MEMORY_STORE_ENV);
	/* Everything went through the file: it holds the suite's systems. */
	int rc = tt_read_file(path, &text, 0, &err);
	bool mentions = rc == 0 && strstr(text.ptr, "\"conf-") && strstr(text.ptr, "\"snapshots\"");
	free(path);
	tt_buf_release(&text);
	tt_error_clear(&err);
	CHECK_INT(failed, 0);
	CHECK_INT(rc, 0);
	CHECK(mentions);
}

/* --- the suite catches broken backends ----------------------------------------- */

static const tt_backend_ops *real_memory_ops;

/* The bug the task names: a fork that moves unconditionally while the kind
 * claims CONDITIONAL_REF. */
static int broken_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		       const tt_expect *expected, char **ref_out, tt_error *err)
{
	static const tt_expect none = { TT_EXPECT_NONE, NULL };
	return real_memory_ops->fork(b, loc, source, name, &none, ref_out, err);
}

/* A pin that always claims to have made its ref (commit would roll back a
 * pin it found). */
static int broken_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id,
		      tt_pin *out, tt_error *err)
{
	int rc = real_memory_ops->pin(b, loc, state, pin_id, out, err);
	out->created = true;
	return rc;
}

/* A promote that ignores expected. */
static int broken_promote(tt_backend *b, const json_t *loc, const tt_target *source,
			  const tt_expect *expected, json_t **new_state, tt_error *err)
{
	static const tt_expect none = { TT_EXPECT_NONE, NULL };
	return real_memory_ops->promote(b, loc, source, &none, new_state, err);
}

/* Run the suite (counting only) over the memory backend with one op
 * replaced; *names: the failed checks. */
static int run_broken(void (*patch)(tt_backend_ops *), json_t **names)
{
	tt_backend *b = memory_backend();
	if (!b)
		return -1;
	/* The same backend (same impl) under patched ops. */
	tt_backend_ops ops = *b->ops;
	real_memory_ops = b->ops;
	patch(&ops);
	tt_backend broken = *b;
	broken.ops = &ops;
	*names = json_array();
	tt_conformance_harness h = { .backend = &broken, .new_object = h_new_object,
				     .mutate = h_mutate, .fresh_locator = h_fresh,
				     .label = "conformance/broken", .mode = TT_CONFORMANCE_COUNT,
				     .failures = *names };
	int failed = tt_conformance_run(&h);
	tt_backend_free(b);
	return failed;
}

static bool listed(const json_t *names, const char *check)
{
	for (size_t i = 0; i < json_array_size(names); i++)
		if (!strcmp(json_string_value(json_array_get(names, i)), check))
			return true;
	return false;
}

static void patch_fork(tt_backend_ops *o) { o->fork = broken_fork; }
static void patch_pin(tt_backend_ops *o) { o->pin = broken_pin; }
static void patch_promote(tt_backend_ops *o) { o->promote = broken_promote; }

TT_TEST(conformance_catches_ignored_expected)
{
	json_t *names = NULL;
	int failed = run_broken(patch_fork, &names);
	bool race = listed(names, "conditional_race_create");
	bool stale = listed(names, "conditional_stale_refused");
	json_decref(names);
	CHECK(failed > 0);
	CHECK(race);
	CHECK(stale);
}

TT_TEST(conformance_catches_other_broken_contracts)
{
	json_t *names = NULL;
	int failed = run_broken(patch_pin, &names);
	bool idem = listed(names, "pin_idempotent");
	json_decref(names);
	CHECK(failed > 0);
	CHECK(idem);
	failed = run_broken(patch_promote, &names);
	bool stale = listed(names, "promote_stale_expected");
	json_decref(names);
	CHECK(failed > 0);
	CHECK(stale);
}

/* --- memory-specific behaviour ------------------------------------------------ */

/* The snapshot id at ref (base when NULL), or "" (caller frees). */
static char *sid_at(tt_backend *b, const json_t *loc, const char *ref)
{
	tt_error err = TT_ERROR_INIT;
	json_t *st = NULL;
	char *out = NULL;
	if (b->ops->fingerprint(b, loc, ref, &st, &err) == 0)
		out = tt_strdup(json_string_value(json_object_get(st, "snapshot_id")));
	json_decref(st);
	tt_error_clear(&err);
	return out ? out : tt_strdup("");
}

static int write_json(const char *sys, const char *branch, const char *text, char **sid,
		      tt_error *err)
{
	json_t *payload = json_loads(text, 0, NULL);
	int rc = payload ? tt_memory_write(sys, branch, payload, sid, err) : -1;
	json_decref(payload);
	return rc;
}

TT_TEST(memory_initial_state_and_ids)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = memory_backend();
	CHECK(b != NULL);
	json_t *loc = json_pack("{s:s}", "uri", "ids"), *ident = NULL, *st = NULL;
	json_t *want = json_pack("{s:s}", "system", "ids");
	json_t *bad = json_pack("{s:s, s:i}", "system", "", "uri", 0);
	char *s0 = sid_at(b, loc, NULL), *s1 = NULL;
	CHECK_STR(s0, "ids:s0");
	CHECK_OK(write_json("ids", "main", "{\"a\": 1}", &s1, &err));
	CHECK_STR(s1, "ids:s1");
	free(s0);
	s0 = sid_at(b, loc, NULL);
	CHECK_STR(s0, "ids:s1");
	CHECK_OK(b->ops->identity(b, loc, &ident, &err));
	CHECK(json_equal(ident, want));
	/* Falsy `system` and `uri` (as Python reads them): no system. */
	CHECK_INT(b->ops->fingerprint(b, bad, NULL, &st, &err), TT_EBACKEND);
	CHECK_STR(tt_error_text(&err), "[memory] memory locator needs 'system'");
	free(s0);
	free(s1);
	json_decref(loc);
	json_decref(ident);
	json_decref(want);
	json_decref(bad);
	tt_backend_free(b);
	tt_error_clear(&err);
}

TT_TEST(memory_merge_three_way_and_conflicts)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = memory_backend();
	CHECK(b != NULL);
	json_t *loc = json_pack("{s:s}", "system", "mrg"), *base = NULL, *merged = NULL,
	       *conflicts = NULL, *payload = NULL, *want = NULL;
	char *ws = NULL, *head = NULL, *after = NULL;
	tt_expect none = { TT_EXPECT_NONE, NULL };

	CHECK_OK(write_json("mrg", "main", "{\"a\": 1, \"b\": 1, \"c\": 1, \"d\": 1}", NULL, &err));
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &base, &err));
	tt_target from_base = { TT_TARGET_STATE, NULL, NULL, base };
	CHECK_OK(b->ops->fork(b, loc, &from_base, "tether.ws.0000aaaa.m", &none, &ws, &err));
	/* They change a and b, drop d; we change a (differently) and c. */
	CHECK_OK(write_json("mrg", ws, "{\"a\": 2, \"b\": 2, \"c\": 1}", NULL, &err));
	CHECK_OK(write_json("mrg", "main", "{\"a\": 3, \"b\": 1, \"c\": 3, \"d\": 1}", NULL, &err));
	head = sid_at(b, loc, NULL);
	tt_target src = { TT_TARGET_REF, ws, NULL, NULL };
	CHECK_INT(b->ops->merge(b, loc, &src, "m", &none, &merged, &conflicts, &err), TT_ECONFLICT);
	CHECK(merged == NULL);
	want = json_pack("[s]", "a");
	CHECK(json_equal(conflicts, want));
	CHECK_STR(err.message, "[memory] 1 key(s) changed on both main and mrg:s2");
	after = sid_at(b, loc, NULL);
	CHECK_STR(after, head); /* the base is untouched */
	json_decref(conflicts);
	conflicts = NULL;
	/* Agree on a, and the rest merges: b from them, c ours, d dropped by them. */
	CHECK_OK(write_json("mrg", "main", "{\"a\": 2, \"b\": 1, \"c\": 3, \"d\": 1}", NULL, &err));
	CHECK_OK(b->ops->merge(b, loc, &src, "m", &none, &merged, &conflicts, &err));
	CHECK_STR(json_string_value(json_object_get(merged, "snapshot_id")), "mrg:s5");
	CHECK_OK(tt_memory_read("mrg", "main", &payload, &err));
	json_decref(want);
	want = json_pack("{s:i, s:i, s:i}", "a", 2, "b", 2, "c", 3);
	CHECK(json_equal(payload, want));
	/* The merge has both sides as parents: history reaches the fork's write. */
	int answer = -1;
	tt_target merged_t = { TT_TARGET_STATE, NULL, NULL, merged };
	json_t *fork_head = json_pack("{s:s}", "snapshot_id", "mrg:s2");
	CHECK_OK(b->ops->ancestor_of(b, loc, fork_head, &merged_t, &answer, &err));
	json_decref(fork_head);
	CHECK_INT(answer, 1);
	/* Merging again: already there. */
	json_t *again = NULL;
	CHECK_OK(b->ops->merge(b, loc, &src, "m", &none, &again, &conflicts, &err));
	CHECK(json_equal(again, merged));
	json_decref(again);
	json_decref(loc);
	json_decref(base);
	json_decref(merged);
	json_decref(conflicts);
	json_decref(payload);
	json_decref(want);
	free(ws);
	free(head);
	free(after);
	tt_backend_free(b);
	tt_error_clear(&err);
}

TT_TEST(memory_merge_fast_forward_and_promote_refusal)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = memory_backend();
	CHECK(b != NULL);
	json_t *loc = json_pack("{s:s}", "system", "ff"), *base = NULL, *merged = NULL,
	       *conflicts = NULL, *st = NULL;
	char *ws = NULL, *tip = NULL;
	tt_expect none = { TT_EXPECT_NONE, NULL };

	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &base, &err));
	tt_target from_base = { TT_TARGET_STATE, NULL, NULL, base };
	CHECK_OK(b->ops->fork(b, loc, &from_base, "tether.ws.0000aaaa.ff", &none, &ws, &err));
	CHECK_OK(write_json("ff", ws, "{\"x\": 1}", &tip, &err));
	tt_target src = { TT_TARGET_REF, ws, NULL, NULL };
	CHECK_OK(b->ops->merge(b, loc, &src, "m", &none, &merged, &conflicts, &err));
	CHECK_STR(json_string_value(json_object_get(merged, "snapshot_id")), tip);
	/* Diverge, then promote: refused, naming the moved base. */
	CHECK_OK(write_json("ff", "main", "{\"y\": 1}", NULL, &err));
	CHECK_OK(write_json("ff", ws, "{\"x\": 2}", NULL, &err));
	CHECK_INT(b->ops->promote(b, loc, &src, &none, &st, &err), TT_EBACKEND);
	CHECK_STR(err.message, "[memory] main moved to ff:s2, which is not an ancestor of ff:s3");
	/* A stale expected is checked first. */
	tt_expect stale = { TT_EXPECT_STATE, base };
	CHECK_INT(b->ops->promote(b, loc, &src, &stale, &st, &err), TT_EREFMOVED);
	CHECK_STR(err.message, "promote: main is at ff:s2, expected ff:s0");
	json_decref(loc);
	json_decref(base);
	json_decref(merged);
	json_decref(conflicts);
	free(ws);
	free(tip);
	tt_backend_free(b);
	tt_error_clear(&err);
}

TT_TEST(memory_history_at_and_handles)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = memory_backend();
	CHECK(b != NULL);
	json_t *loc = json_pack("{s:s}", "system", "hist"), *at = NULL, *st = NULL, *h = NULL;
	json_t *want = NULL;
	tt_history_entry *e = NULL;
	size_t n = 0;
	tt_pin pin;
	tt_expect none = { TT_EXPECT_NONE, NULL };
	char *ws = NULL, *atsid = NULL;

	CHECK_OK(write_json("hist", "main", "{\"a\": 1}", NULL, &err));
	json_t *s1 = NULL;
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s1, &err));
	CHECK_OK(b->ops->pin(b, loc, s1, "c0fe5a1e.0123456789abcdef", &pin, &err));
	CHECK_STR(pin.ref, "tether.c0fe5a1e.0123456789abcdef");
	tt_target from = { TT_TARGET_STATE, NULL, NULL, s1 };
	CHECK_OK(b->ops->fork(b, loc, &from, "tether.ws.c0fe5a1e.h", &none, &ws, &err));
	CHECK_OK(write_json("hist", "main", "{\"a\": 2}", NULL, &err));
	CHECK_OK(b->ops->history(b, loc, NULL, 20, &e, &n, &err));
	CHECK_INT(n, 3);
	CHECK_STR(e[0].id, "hist:s2");
	CHECK_STR(e[0].message, "snapshot hist:s2");
	CHECK(e[0].when == NULL);
	want = json_pack("[s]", "main");
	CHECK(json_equal(e[0].refs, want));
	json_decref(want);
	want = json_pack("[s, s]", "tether.c0fe5a1e.0123456789abcdef", "tether.ws.c0fe5a1e.h");
	CHECK(json_equal(e[1].refs, want));
	CHECK_STR(e[2].id, "hist:s0");
	tt_history_release(e, n);
	e = NULL;
	/* `at` pins the base read; history starts there too. */
	at = json_pack("{s:s, s:s}", "system", "hist", "at", "hist:s1");
	atsid = sid_at(b, at, NULL);
	CHECK_STR(atsid, "hist:s1");
	CHECK_OK(b->ops->history(b, at, NULL, 1, &e, &n, &err));
	CHECK_INT(n, 1);
	CHECK_STR(e[0].id, "hist:s1");
	/* Handles name the native address. */
	tt_target pt = { TT_TARGET_PIN, NULL, &pin, NULL };
	CHECK_OK(b->ops->open(b, loc, &pt, true, &h, &err));
	json_decref(want);
	want = json_pack("{s:s, s:s, s:b, s:s, s:s}", "type", "memory", "address",
			 "memory://hist#tether.c0fe5a1e.0123456789abcdef", "read_only", 1, "system",
			 "hist", "ref", "tether.c0fe5a1e.0123456789abcdef");
	CHECK(json_equal(h, want));
	json_decref(h);
	h = NULL;
	tt_target base_t = { TT_TARGET_BASE, NULL, NULL, NULL };
	CHECK_OK(b->ops->open(b, loc, &base_t, false, &h, &err));
	CHECK_STR(json_string_value(json_object_get(h, "address")), "memory://hist#main");
	CHECK(json_is_false(json_object_get(h, "read_only")));
	tt_target gone = { TT_TARGET_REF, "nope", NULL, NULL };
	json_decref(h);
	h = NULL;
	CHECK_INT(b->ops->open(b, loc, &gone, true, &h, &err), TT_EBACKEND);
	CHECK_STR(err.message, "[memory] unknown ref 'nope'");
	/* Never the base: deleting main is a no-op. */
	CHECK_OK(b->ops->delete_working_ref(b, loc, "main", &err));
	free(atsid);
	atsid = sid_at(b, loc, NULL);
	CHECK_STR(atsid, "hist:s2");
	tt_history_release(e, n);
	json_decref(loc);
	json_decref(at);
	json_decref(st);
	json_decref(s1);
	json_decref(want);
	free(ws);
	free(atsid);
	tt_backend_free(b);
	tt_error_clear(&err);
}

TT_TEST(memory_diff_details_read_as_python)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = memory_backend();
	CHECK(b != NULL);
	json_t *loc = json_pack("{s:s}", "system", "dif"), *sa = NULL, *sb = NULL, *js = NULL;
	tt_object_diff d;
	char *text = NULL;

	CHECK_OK(write_json("dif", "main", "{\"k\": \"v\", \"n\": 1, \"gone\": true, \"q\": \"it's\"}",
			    NULL, &err));
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &sa, &err));
	CHECK_OK(write_json("dif", "main",
			    "{\"k\": \"w\", \"n\": 1.0, \"new\": [1, 2.5, null, {\"x\": false}], "
			    "\"q\": \"it's\"}", NULL, &err));
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &sb, &err));
	CHECK_OK(b->ops->diff(b, loc, sa, sb, NULL, NULL, &d, &err));
	js = tt_object_diff_json(&d);
	text = json_dumps(js, JSON_COMPACT);
	/* n: 1 == 1.0 in Python, so unchanged. */
	CHECK_STR(text,
		  "{\"summary\":\"+1 -1 ~1 keys\",\"unit\":\"keys\",\"added\":1,\"removed\":1,"
		  "\"modified\":1,\"truncated\":false,\"note\":\"\",\"entries\":["
		  "{\"path\":\"gone\",\"change\":\"removed\",\"detail\":\"True\"},"
		  "{\"path\":\"k\",\"change\":\"modified\",\"detail\":\"'v' -> 'w'\"},"
		  "{\"path\":\"new\",\"change\":\"added\",\"detail\":\"[1, 2.5, None, {'x': False}]\"}]}");
	free(text);
	json_decref(js);
	tt_object_diff_release(&d);
	json_decref(loc);
	json_decref(sa);
	json_decref(sb);
	tt_backend_free(b);
	tt_error_clear(&err);
}

TT_TEST(memory_delete_store_and_create)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = memory_backend();
	CHECK(b != NULL);
	json_t *loc = json_pack("{s:s}", "system", "life"), *st = NULL, *ign = NULL;
	char *owner = NULL;
	int empty = 7;

	CHECK_OK(b->ops->is_ref_empty(b, loc, NULL, &empty, &err));
	CHECK_INT(empty, -1); /* no store: cannot tell */
	CHECK_OK(b->ops->create(b, loc, "0a1b2c3d", &st, &err));
	CHECK_STR(json_string_value(json_object_get(st, "snapshot_id")), "life:s0");
	json_decref(st);
	st = NULL;
	CHECK_INT(b->ops->create(b, loc, "ffffffff", &st, &err), TT_EBACKEND);
	CHECK_STR(err.message, "[memory] system 'life' already exists");
	/* A tag makes it not empty, unless the plan is deleting it. */
	json_t *s0 = json_pack("{s:s}", "snapshot_id", "life:s0");
	tt_pin pin;
	CHECK_OK(b->ops->pin(b, loc, s0, "c0fe5a1e.1111111111111111", &pin, &err));
	json_decref(s0);
	CHECK_OK(b->ops->is_ref_empty(b, loc, NULL, &empty, &err));
	CHECK_INT(empty, 0);
	ign = json_pack("[s]", pin.ref);
	CHECK_OK(b->ops->is_ref_empty(b, loc, ign, &empty, &err));
	CHECK_INT(empty, 1);
	CHECK_OK(b->ops->delete_store(b, loc, &err));
	CHECK_OK(b->ops->owner(b, loc, &owner, &err));
	CHECK(owner == NULL);
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &st, &err), TT_EBACKEND);
	CHECK_STR(tt_error_text(&err), "[memory] system 'life' was deleted");
	CHECK_OK(b->ops->create(b, loc, "0a1b2c3d", &st, &err));
	CHECK_OK(b->ops->owner(b, loc, &owner, &err));
	CHECK_STR(owner, "0a1b2c3d");
	free(owner);
	json_decref(loc);
	json_decref(st);
	json_decref(ign);
	tt_backend_free(b);
	tt_error_clear(&err);
}

/* A child process that forks `name` with expected ABSENT through the file
 * store; its exit status says how it went (0 moved, 3 refused, 1 else). */
static pid_t child_fork_absent(const json_t *loc, const char *name, const char *payload)
{
	pid_t pid = fork();
	if (pid != 0)
		return pid;
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = memory_backend();
	json_t *st = NULL;
	char *ref = NULL;
	tt_expect absent = { TT_EXPECT_ABSENT, NULL };
	int rc = b ? b->ops->fingerprint(b, loc, NULL, &st, &err) : -1;
	tt_target src = { TT_TARGET_STATE, NULL, NULL, st };
	if (rc == 0)
		rc = b->ops->fork(b, loc, &src, name, &absent, &ref, &err);
	if (rc == 0 && payload)
		rc = write_json(json_string_value(json_object_get(loc, "system")), name, payload,
				NULL, &err);
	_exit(rc == 0 ? 0 : rc == TT_EREFMOVED ? 3 : 1);
}

TT_TEST(memory_file_store_across_processes)
{
	tt_error err = TT_ERROR_INIT;
	char *path = store_file();
	CHECK(path != NULL);
	setenv(TT_MEMORY_STORE_ENV, path, 1);
	tt_backend *b = memory_backend();
	json_t *loc = json_pack("{s:s}", "system", "xproc"), *refs = NULL, *payload = NULL;
	int status = 0, won = 0, refused = 0;

	/* A write in a child is seen by the parent. */
	pid_t pid = child_fork_absent(loc, "tether.ws.c0fe5a1e.child", "{\"from\": \"child\"}");
	CHECK(pid > 0);
	CHECK(waitpid(pid, &status, 0) == pid);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	CHECK_OK(b->ops->list_working_refs(b, loc, &refs, &err));
	CHECK_INT(json_array_size(refs), 1);
	CHECK_STR(json_string_value(json_array_get(refs, 0)), "tether.ws.c0fe5a1e.child");
	CHECK_OK(tt_memory_read("xproc", "tether.ws.c0fe5a1e.child", &payload, &err));
	CHECK_STR(json_string_value(json_object_get(payload, "from")), "child");
	/* Conditional moves stay atomic across processes: of four children
	 * creating one branch, exactly one does. */
	pid_t kids[4];
	for (int i = 0; i < 4; i++)
		kids[i] = child_fork_absent(loc, "tether.ws.c0fe5a1e.race", NULL);
	for (int i = 0; i < 4; i++) {
		CHECK(kids[i] > 0 && waitpid(kids[i], &status, 0) == kids[i]);
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			won++;
		else if (WIFEXITED(status) && WEXITSTATUS(status) == 3)
			refused++;
	}
	CHECK_INT(won, 1);
	CHECK_INT(refused, 3);
	/* The in-process store never saw any of it. */
	unsetenv(TT_MEMORY_STORE_ENV);
	json_t *inproc = NULL;
	CHECK_INT(tt_memory_show("xproc", &inproc, &err), TT_ENOTFOUND);
	json_decref(loc);
	json_decref(refs);
	json_decref(payload);
	free(path);
	tt_backend_free(b);
	tt_error_clear(&err);
}

TT_TEST(memory_file_store_refuses_garbage)
{
	tt_error err = TT_ERROR_INIT;
	char *path = store_file();
	CHECK(path != NULL);
	CHECK_OK(tt_write_file_atomic(path, "{\"systems\": []}", 15, 0644, &err));
	setenv(TT_MEMORY_STORE_ENV, path, 1);
	tt_backend *b = memory_backend();
	json_t *loc = json_pack("{s:s}", "system", "g"), *st = NULL;
	int rc = b ? b->ops->fingerprint(b, loc, NULL, &st, &err) : -1;
	unsetenv(TT_MEMORY_STORE_ENV);
	CHECK_INT(rc, TT_EBACKEND);
	CHECK(strstr(err.message, "is not a memory store document") != NULL);
	json_decref(loc);
	free(path);
	tt_backend_free(b);
	tt_error_clear(&err);
}

/* --- backend.c ---------------------------------------------------------------- */

TT_TEST(backend_diff_cap_and_summary)
{
	tt_error err = TT_ERROR_INIT;
	tt_object_diff d;
	char path[32];
	tt_object_diff_init(&d, "files");
	CHECK(tt_object_diff_is_empty(&d));
	for (int i = 0; i < TT_MAX_DIFF_ENTRIES + 5; i++) {
		snprintf(path, sizeof path, "f%d", i);
		CHECK_OK(tt_object_diff_add(&d, path, i % 3 == 0 ? "added" : i % 3 == 1 ? "removed"
									: "renamed",
					    i == 0 ? "+1" : "", &err));
	}
	CHECK_INT(d.nentries, TT_MAX_DIFF_ENTRIES);
	CHECK(d.truncated);
	CHECK_INT(d.added + d.removed + d.modified, TT_MAX_DIFF_ENTRIES + 5);
	CHECK_INT(d.added, 669);
	CHECK_INT(d.modified, 668);
	d.note = tt_strdup("listing missing");
	char *summary = tt_object_diff_summary(&d);
	CHECK_STR(summary, "+669 -668 ~668 files (first 2000 shown); listing missing");
	free(summary);
	json_t *js = tt_object_diff_json(&d);
	CHECK_STR(json_string_value(json_object_get(js, "summary")),
		  "+669 -668 ~668 files (first 2000 shown); listing missing");
	CHECK(json_is_true(json_object_get(js, "truncated")));
	json_t *e0 = json_array_get(json_object_get(js, "entries"), 0);
	json_t *e1 = json_array_get(json_object_get(js, "entries"), 1);
	CHECK_STR(json_string_value(json_object_get(e0, "detail")), "+1");
	CHECK(json_object_get(e1, "detail") == NULL); /* an empty detail is left out */
	CHECK_INT(json_array_size(json_object_get(js, "entries")), TT_MAX_DIFF_ENTRIES);
	json_decref(js);
	tt_object_diff_release(&d);

	tt_object_diff_init(&d, "keys");
	summary = tt_object_diff_summary(&d);
	CHECK_STR(summary, "+0 -0 ~0 keys");
	free(summary);
	js = tt_object_diff_json(&d);
	char *text = json_dumps(js, JSON_COMPACT);
	CHECK_STR(text, "{\"summary\":\"+0 -0 ~0 keys\",\"unit\":\"keys\",\"added\":0,\"removed\":0,"
			"\"modified\":0,\"truncated\":false,\"note\":\"\",\"entries\":[]}");
	free(text);
	json_decref(js);
	tt_object_diff_release(&d);
	tt_error_clear(&err);
}

TT_TEST(backend_states_equal_on_content_keys)
{
	const tt_kind *neon = tt_kind_find("neon"), *mem = tt_kind_find("memory");
	CHECK(neon && mem);
	json_t *a = json_pack("{s:s, s:s, s:s}", "branch_id", "br-1", "lsn", "0/1", "timeline", "t1");
	json_t *b = json_pack("{s:s, s:s}", "lsn", "0/2", "branch_id", "br-1");
	json_t *c = json_pack("{s:s, s:s}", "branch_id", "br-2", "lsn", "0/1");
	CHECK(tt_states_equal(neon, a, b));  /* only volatile keys differ */
	CHECK(!tt_states_equal(neon, a, c));
	CHECK(!tt_states_equal(mem, a, b)); /* memory has no volatile keys */
	CHECK(tt_states_equal(mem, NULL, NULL));
	CHECK(!tt_states_equal(mem, a, NULL));
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

TT_TEST(backend_check_expected)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = memory_backend();
	CHECK(b != NULL);
	json_t *loc = json_pack("{s:s}", "system", "chk"), *s0 = NULL, *s1 = NULL;
	json_t *at_loc = json_pack("{s:s, s:s}", "system", "chk", "at", "chk:s0");
	tt_expect none = { TT_EXPECT_NONE, NULL }, absent = { TT_EXPECT_ABSENT, NULL };
	char *ws = NULL;

	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s0, &err));
	CHECK_OK(tt_check_expected(b, loc, "tether.ws.c0fe5a1e.x", &none, &err));
	CHECK_OK(tt_check_expected(b, loc, "tether.ws.c0fe5a1e.x", &absent, &err));
	tt_expect want0 = { TT_EXPECT_STATE, s0 };
	CHECK_INT(tt_check_expected(b, loc, "tether.ws.c0fe5a1e.x", &want0, &err), TT_EREFMOVED);
	CHECK_STR(err.message, "[memory] fork: tether.ws.c0fe5a1e.x is gone, expected snapshot_id=chk:s0");
	tt_target src = { TT_TARGET_STATE, NULL, NULL, s0 };
	CHECK_OK(b->ops->fork(b, loc, &src, "tether.ws.c0fe5a1e.x", &none, &ws, &err));
	CHECK_INT(tt_check_expected(b, loc, ws, &absent, &err), TT_EREFMOVED);
	CHECK_STR(tt_error_text(&err), "[memory] fork: tether.ws.c0fe5a1e.x exists, expected absent");
	CHECK_OK(tt_check_expected(b, loc, ws, &want0, &err));
	/* An empty state means ABSENT, in the default check and the backend's own. */
	json_t *empty = json_object();
	tt_expect empty_state = { TT_EXPECT_STATE, empty };
	char *junk = NULL;
	int rc_empty = tt_check_expected(b, loc, ws, &empty_state, &err);
	int rc_fork = b->ops->fork(b, loc, &src, ws, &empty_state, &junk, &err);
	json_decref(empty);
	CHECK_INT(rc_empty, TT_EREFMOVED);
	CHECK_INT(rc_fork, TT_EREFMOVED);
	CHECK_STR(err.message, "fork: tether.ws.c0fe5a1e.x exists (at chk:s0), expected absent");
	CHECK_OK(write_json("chk", ws, "{\"a\": 1}", NULL, &err));
	CHECK_INT(tt_check_expected(b, loc, ws, &want0, &err), TT_EREFMOVED);
	CHECK_STR(err.message, "fork: tether.ws.c0fe5a1e.x is at snapshot_id=chk:s1, expected "
			       "snapshot_id=chk:s0");
	/* The base head, with `at` ignored; values cut to 12 characters. */
	CHECK_OK(write_json("chk", "main", "{\"b\": 1}", NULL, &err));
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s1, &err));
	tt_expect want1 = { TT_EXPECT_STATE, s1 };
	CHECK_OK(tt_check_expected(b, at_loc, NULL, &want1, &err));
	CHECK_INT(tt_check_expected_for(b, at_loc, NULL, &want0, "promote", &err), TT_EREFMOVED);
	CHECK_STR(err.message, "promote: main is at snapshot_id=chk:s2, expected snapshot_id=chk:s0");
	json_decref(loc);
	json_decref(at_loc);
	json_decref(s0);
	json_decref(s1);
	free(ws);
	tt_backend_free(b);
	tt_error_clear(&err);
}

TT_TEST(backend_registry_and_caps)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = NULL;
	/* every kind of the seed is built now: a kind the registry has no
	 * backend for, as a newer dataset could name */
	tt_kind unbuilt = *tt_kind_find("memory");
	unbuilt.name = "newkind";
	CHECK_INT(tt_backend_new(&b, &unbuilt, NULL, NULL, NULL, &err), TT_ECAPABILITY);
	CHECK(b == NULL);
	CHECK_STR(tt_error_text(&err), "[newkind] the newkind backend is not built into this tether yet");
	tt_error_clear(&err);
	json_t *config = json_pack("{s:s}", "store", "x");
	CHECK_OK(tt_backend_new(&b, tt_kind_find("memory"), config, "/cache", "/co", &err));
	json_decref(config);
	CHECK_STR(b->cache_dir, "/cache");
	CHECK_STR(json_string_value(json_object_get(b->config, "store")), "x");
	unsigned caps = tt_backend_caps(b, NULL, NULL, NULL);
	CHECK_INT(caps, tt_kind_find("memory")->caps);
	CHECK((caps & TT_CAP_PIN) != 0);
	CHECK((tt_backend_caps(b, NULL, NULL, "record") & TT_CAP_PIN) == 0);
	CHECK((tt_backend_caps(b, NULL, NULL, "native") & TT_CAP_PIN) != 0);
	tt_backend_free(b);
	CHECK_STR(tt_verify_status_name(TT_VERIFY_OK), "ok");
	CHECK_STR(tt_verify_status_name(TT_VERIFY_DRIFTED), "drifted");
	CHECK_STR(tt_verify_status_name(TT_VERIFY_MISSING), "missing");
	CHECK_STR(tt_verify_status_name(TT_VERIFY_UNKNOWN), "unknown");
}

static char *repr(const char *json)
{
	tt_buf b = TT_BUF_INIT;
	json_t *v = json_loads(json, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
	tt_pyv_repr(&b, v);
	json_decref(v);
	return tt_buf_detach(&b);
}

TT_TEST(backend_py_repr)
{
	static const char *const cases[][2] = {
		{ "\"plain\"", "'plain'" },
		{ "\"it's\"", "\"it's\"" },
		{ "\"a\\\"b\"", "'a\"b'" },
		{ "\"it's \\\"x\\\"\"", "'it\\'s \"x\"'" },
		{ "\"back\\\\slash\\n\\t\\r\"", "'back\\\\slash\\n\\t\\r'" },
		{ "\"\\u0000\\u001f\\u007f\\u00a0\\u00e9\"", "'\\x00\\x1f\\x7f\\xa0\xc3\xa9'" },
		{ "\"\\u2028\\ud83d\\ude00\"", "'\\u2028\xf0\x9f\x98\x80'" },
		{ "[1, 2.5, 1e16, null, true, false]", "[1, 2.5, 1e+16, None, True, False]" },
		{ "{\"b\": {}, \"a\": []}", "{'b': {}, 'a': []}" },
		{ "1.0", "1.0" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = repr(cases[i][0]);
		CHECK_STR(got, cases[i][1]);
		free(got);
	}
}
