/*
 * tests/support/conformance.c - the backend conformance suite (see
 * conformance.h): tether-vcs's run_conformance, check by check.
 *
 * Each group below ports one of its check functions.  Where tether-vcs
 * raises an AssertionError and stops, a group here reports the failing
 * check and returns; the next group still runs when it does not depend on
 * what failed, so one run shows every broken contract at once.
 */
#include "conformance.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "core/kinds.h"
#include "harness.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/mem.h"

#define RACERS 8

/* --- sub-results as harness cases ------------------------------------------ */

/*
 * The runner's cases are plain functions without an argument, so each
 * reported sub-result takes one of a fixed pool of functions, each knowing
 * its slot.  They are registered while the calling case runs; the runner
 * runs them after the cases registered before them.  A run beyond the pool
 * still counts (the calling case fails) and prints failures at once.
 */
#define SLOT_COUNT 400

static struct {
	char *name;
	char *message;
	bool ok;
} slots[SLOT_COUNT];
static size_t nslots;

static void slot_run(size_t i)
{
	if (!slots[i].ok)
		tt_test_fail(__FILE__, __LINE__, "%s", slots[i].message ? slots[i].message : "failed");
}

#define D10(M, p) M(p##0) M(p##1) M(p##2) M(p##3) M(p##4) M(p##5) M(p##6) M(p##7) M(p##8) M(p##9)
#define D100(M, p)                                                                           \
	D10(M, p##0) D10(M, p##1) D10(M, p##2) D10(M, p##3) D10(M, p##4) D10(M, p##5)        \
	D10(M, p##6) D10(M, p##7) D10(M, p##8) D10(M, p##9)
/* slot_000 .. slot_399: "1" pasted before the three digits keeps them decimal. */
#define SLOT_FN(n) static void slot_##n(void) { slot_run((size_t)(1##n - 1000)); }
#define SLOT_REF(n) slot_##n,
D100(SLOT_FN, 0) D100(SLOT_FN, 1) D100(SLOT_FN, 2) D100(SLOT_FN, 3)
static void (*const slot_fns[SLOT_COUNT])(void) = {
	D100(SLOT_REF, 0) D100(SLOT_REF, 1) D100(SLOT_REF, 2) D100(SLOT_REF, 3)
};

/* --- one run ----------------------------------------------------------------- */

typedef struct run {
	const tt_conformance_harness *h;
	tt_backend *b;
	const tt_kind *kind;
	unsigned caps;
	const char *ds;
	const char *label;
	int failed, passed;
	tt_buf failed_names;  /* "a, b, ..." for the calling case's message */
	tt_error err;  /* the last backend call's error */
} run;

static bool report(run *r, const char *check, bool ok, const char *fmt, ...) TT_PRINTF(4, 5);
static bool report(run *r, const char *check, bool ok, const char *fmt, ...)
{
	char *msg = NULL, *name = tt_asprintf("%s/%s", r->label, check);
	if (!ok) {
		va_list ap;
		va_start(ap, fmt);
		msg = tt_vasprintf(fmt, ap);
		va_end(ap);
		r->failed++;
		tt_buf_printf(&r->failed_names, "%s%s", r->failed > 1 ? ", " : "", check);
		if (r->h->failures)
			json_array_append_new(r->h->failures, json_string(check));
	} else {
		r->passed++;
	}
	if (r->h->mode == TT_CONFORMANCE_REPORT) {
		if (name && nslots < SLOT_COUNT) {
			slots[nslots].name = name;
			slots[nslots].message = msg;
			slots[nslots].ok = ok;
			tt_test_register(name, slot_fns[nslots]);
			nslots++;
			name = msg = NULL;
		} else if (!ok) {
			fprintf(stderr, "  %s: %s\n", name ? name : check, msg ? msg : "failed");
		}
	}
	free(name);
	free(msg);
	return ok;
}

static const char *err_text(run *r)
{
	return r->err.code ? tt_error_text(&r->err) : "(no error)";
}

/* A backend call that failed: the check it serves fails with its error. */
static void call_failed(run *r, const char *check, const char *what)
{
	report(r, check, false, "%s failed (%s): %s", what, tt_code_name(r->err.code), err_text(r));
}

static int missing(run *r, const char *op)
{
	return tt_error_set(&r->err, TT_ECAPABILITY, "the backend has no %s operation", op);
}

/* Call ops->name(b, ..., &r->err) with a fresh error; a missing op is
 * TT_ECAPABILITY. */
#define OP(name, ...)                                                                        \
	(tt_error_clear(&r->err),                                                            \
	 r->b->ops->name ? r->b->ops->name(r->b, __VA_ARGS__, &r->err) : missing(r, #name))

/* Inside a group: a call that must succeed for `check` to be judged. */
#define CALL(check, expr)                                                                    \
	do {                                                                                 \
		if ((expr) != 0) {                                                           \
			call_failed(r, check, #expr);                                        \
			goto done;                                                           \
		}                                                                            \
	} while (0)
#define PASS(check) report(r, check, true, "%s", "")
/* cond is evaluated first: the message may read what it computed. */
#define EXPECT(check, cond, ...)                                                             \
	do {                                                                                 \
		bool cond_ = (cond);                                                         \
		if (!report(r, check, cond_, __VA_ARGS__))                                   \
			goto done;                                                           \
	} while (0)
/* A call that must be refused: rc TT_EREFMOVED when want is that, else any
 * store refusal (tether-vcs's BackendError and subclasses). */
#define REFUSED(check, rc, want, ...)                                                        \
	do {                                                                                 \
		int rc_ = (rc);                                                              \
		bool ok_ = (want) == TT_EREFMOVED ? rc_ == TT_EREFMOVED                      \
						  : tt_backend_error_code(rc_);              \
		if (!ok_) {                                                                  \
			char *why_ = tt_asprintf(__VA_ARGS__);                               \
			report(r, check, false, "%s, got %s", why_ ? why_ : check,           \
			       rc_ == 0 ? "success" : err_text(r));                          \
			free(why_);                                                          \
			goto done;                                                           \
		}                                                                            \
	} while (0)

static int do_mutate(run *r, const json_t *loc, const char *ref)
{
	tt_error_clear(&r->err);
	if (r->h->mutate(r->h->ctx, loc, ref) != 0)
		return tt_error_set(&r->err, TT_ERROR, "the harness's mutate(%s) failed",
				    ref ? ref : "base");
	return 0;
}

static int fp(run *r, const json_t *loc, const char *ref, json_t **out)
{
	*out = NULL;
	return OP(fingerprint, loc, ref, out);
}

static bool same(run *r, const json_t *a, const json_t *b)
{
	return tt_states_equal(r->kind, a, b);
}

/* The state at ref (the base when NULL) equals want (content keys). */
static bool at_state(run *r, const json_t *loc, const char *ref, const json_t *want)
{
	json_t *s = NULL;
	bool eq = fp(r, loc, ref, &s) == 0 && same(r, s, want);
	json_decref(s);
	return eq;
}

static json_t *content(run *r, const json_t *state)
{
	return tt_content_state(r->kind, state);
}

static int pin_id_of(run *r, const json_t *loc, const json_t *state, char out[TT_PIN_ID_MAX])
{
	json_t *ident = NULL, *c = NULL;
	int rc = OP(identity, loc, &ident);
	if (rc == 0) {
		c = content(r, state);
		rc = c ? tt_pin_id(out, r->ds, r->kind->name, ident, c, &r->err) : tt_error_oom(&r->err);
	}
	json_decref(ident);
	json_decref(c);
	return rc;
}

static int working_ref(run *r, const char *bookmark, char **out)
{
	tt_error_clear(&r->err);
	return tt_working_ref_name(out, r->ds, bookmark, &r->err);
}

static tt_target target_ref(const char *ref)
{
	return (tt_target){ TT_TARGET_REF, ref, NULL, NULL };
}
static tt_target target_pin(const tt_pin *pin)
{
	return (tt_target){ TT_TARGET_PIN, NULL, pin, NULL };
}
static tt_target target_state(const json_t *state)
{
	return (tt_target){ TT_TARGET_STATE, NULL, NULL, state };
}
static const tt_expect expect_none = { TT_EXPECT_NONE, NULL };
static const tt_expect expect_absent = { TT_EXPECT_ABSENT, NULL };
static tt_expect expect_state(const json_t *state)
{
	return (tt_expect){ TT_EXPECT_STATE, state };
}

static int fork_to(run *r, const json_t *loc, tt_target src, const char *name,
		   const tt_expect *expected, char **ref_out)
{
	*ref_out = NULL;
	return OP(fork, loc, &src, name, expected, ref_out);
}

static int list_working(run *r, const json_t *loc, json_t **refs)
{
	*refs = NULL;
	if (!r->b->ops->list_working_refs) { /* the default: none */
		*refs = json_array();
		return *refs ? 0 : tt_error_oom(&r->err);
	}
	return OP(list_working_refs, loc, refs);
}

static bool has_string(const json_t *arr, const char *s)
{
	for (size_t i = 0; i < json_array_size(arr); i++)
		if (json_is_string(json_array_get(arr, i)) &&
		    strcmp(json_string_value(json_array_get(arr, i)), s) == 0)
			return true;
	return false;
}

/* Equal as sets of strings. */
static bool same_set(const json_t *a, const json_t *b)
{
	for (size_t i = 0; i < json_array_size(a); i++)
		if (!has_string(b, json_string_value(json_array_get(a, i))))
			return false;
	for (size_t i = 0; i < json_array_size(b); i++)
		if (!has_string(a, json_string_value(json_array_get(b, i))))
			return false;
	return true;
}

static int ancestor(run *r, const json_t *loc, const json_t *anc, tt_target desc, int *answer)
{
	*answer = -1;
	if (!r->b->ops->ancestor_of) /* the default: unknown */
		return 0;
	return OP(ancestor_of, loc, anc, &desc, answer);
}

static json_t *with_at(const json_t *loc, const char *at)
{
	json_t *l = json_deep_copy(loc);
	if (l && json_object_set_new(l, "at", json_string(at)) != 0) {
		json_decref(l);
		l = NULL;
	}
	return l;
}

/* --- always: fingerprint, content state, identity -------------------------- */

static bool fingerprint_checks(run *r, const json_t *loc, json_t **s1, json_t **s2)
{
	json_t *again = NULL;
	bool ok = false;

	*s1 = *s2 = NULL;
	CALL("fingerprint_object", fp(r, loc, NULL, s1));
	EXPECT("fingerprint_object", json_is_object(*s1), "fingerprint must return a JSON object");
	/* Stability is a content property: volatile keys may move between reads. */
	CALL("fingerprint_stable", fp(r, loc, NULL, &again));
	EXPECT("fingerprint_stable", same(r, again, *s1),
	       "fingerprint must be stable (up to volatile keys)");
	CALL("fingerprint_changes", do_mutate(r, loc, NULL));
	CALL("fingerprint_changes", fp(r, loc, NULL, s2));
	EXPECT("fingerprint_changes", json_is_object(*s2) && !same(r, *s1, *s2),
	       "fingerprint must change after a mutation");
	ok = true;
done:
	json_decref(again);
	return ok;
}

static void content_checks(run *r, const json_t *s1, const json_t *s2)
{
	json_t *c1 = content(r, s1), *c2 = content(r, s2);
	const char *bad = NULL;
	EXPECT("content_state_changes", c1 && c2 && !json_equal(c1, c2),
	       "a real change must survive the content state (not only volatile keys)");
	for (const char *const *v = r->kind->volatile_keys; v && *v; v++)
		if (json_object_get(c1, *v))
			bad = *v;
	EXPECT("volatile_keys_excluded", !bad, "volatile key '%s' leaked into content", bad);
done:
	json_decref(c1);
	json_decref(c2);
}

static void identity_checks(run *r, const json_t *loc, const json_t *state)
{
	json_t *ident = NULL;
	char pid1[TT_PIN_ID_MAX], pid2[TT_PIN_ID_MAX];

	CALL("identity_object", OP(identity, loc, &ident));
	EXPECT("identity_object", json_is_object(ident) && json_object_size(ident) > 0,
	       "identity must be a non-empty JSON object");
	CALL("pin_id_deterministic", pin_id_of(r, loc, state, pid1));
	CALL("pin_id_deterministic", pin_id_of(r, loc, state, pid2));
	EXPECT("pin_id_deterministic", strcmp(pid1, pid2) == 0,
	       "pin id must be deterministic (%s != %s)", pid1, pid2);
done:
	json_decref(ident);
}

/* --- DIFF --------------------------------------------------------------------- */

static int listing_of(run *r, const json_t *loc, const json_t *state, char **text)
{
	*text = NULL;
	if (!r->b->ops->listing) /* the default: no listing */
		return 0;
	return OP(listing, loc, state, text);
}

static void diff_checks(run *r, const json_t *loc, const json_t *s1, const json_t *s2)
{
	char *l1 = NULL, *l2 = NULL, *summary = NULL;
	tt_object_diff self, changed;
	const char *bad = NULL;

	tt_object_diff_init(&self, NULL);
	tt_object_diff_init(&changed, NULL);
	CALL("diff_self_empty", listing_of(r, loc, s1, &l1));
	CALL("diff_self_empty", listing_of(r, loc, s2, &l2));
	CALL("diff_self_empty", OP(diff, loc, s2, s2, l2, l2, &self));
	EXPECT("diff_self_empty", tt_object_diff_is_empty(&self),
	       "diffing a state against itself must be empty");
	CALL("diff_change_nonempty", OP(diff, loc, s1, s2, l1, l2, &changed));
	EXPECT("diff_change_nonempty", !tt_object_diff_is_empty(&changed),
	       "a diff between distinct states must report change");
	summary = tt_object_diff_summary(&changed);
	EXPECT("diff_summary", summary && *summary, "a diff must have a summary");
	for (size_t i = 0; i < changed.nentries; i++) {
		const char *c = changed.entries[i].change;
		if (strcmp(c, "added") && strcmp(c, "removed") && strcmp(c, "modified") &&
		    strcmp(c, "renamed"))
			bad = c;
	}
	EXPECT("diff_entry_changes", !bad, "diff entry change '%s' is not one of "
	       "added/removed/modified/renamed", bad);
done:
	tt_object_diff_release(&self);
	tt_object_diff_release(&changed);
	free(l1);
	free(l2);
	free(summary);
}

/* --- HISTORY ------------------------------------------------------------------- */

static bool entry_equal(const tt_history_entry *a, const tt_history_entry *b)
{
	return strcmp(a->id, b->id) == 0 && !a->when == !b->when &&
	       (!a->when || strcmp(a->when, b->when) == 0) && !a->message == !b->message &&
	       (!a->message || strcmp(a->message, b->message) == 0) &&
	       ((!a->refs && !b->refs) || json_equal(a->refs, b->refs));
}

static void history_checks(run *r, const json_t *loc, const json_t *s2)
{
	tt_history_entry *entries = NULL, *one = NULL;
	size_t n = 0, n1 = 0;
	json_t *detached = NULL, *newest = NULL, *older_loc = NULL, *older = NULL;
	bool ids_ok = true;

	CALL("history_nonempty", OP(history, loc, NULL, 10, &entries, &n));
	for (size_t i = 0; i < n; i++)
		if (!entries[i].id || !*entries[i].id)
			ids_ok = false;
	EXPECT("history_nonempty", n > 0 && ids_ok,
	       "history must list at least the current state, each with an id");
	/* The newest entry is the current state, addressable through `at`. */
	detached = with_at(loc, entries[0].id);
	CALL("history_newest_is_current", detached ? fp(r, detached, NULL, &newest) : TT_ENOMEM);
	EXPECT("history_newest_is_current", json_equal(newest, s2),
	       "history[0] must be the current state (at=%s)", entries[0].id);
	if (n > 1) {
		older_loc = with_at(loc, entries[1].id);
		CALL("history_older_distinct",
		     older_loc ? fp(r, older_loc, NULL, &older) : TT_ENOMEM);
		EXPECT("history_older_distinct", !json_equal(older, s2),
		       "older history entries must be distinct states");
	}
	CALL("history_limit", OP(history, loc, NULL, 1, &one, &n1));
	EXPECT("history_limit", n1 == 1 && entry_equal(&one[0], &entries[0]),
	       "limit must bound the result (%zu entries for limit 1)", n1);
done:
	tt_history_release(entries, n);
	tt_history_release(one, n1);
	json_decref(detached);
	json_decref(newest);
	json_decref(older_loc);
	json_decref(older);
}

/* --- ADDRESSABLE ---------------------------------------------------------------- */

/* A handle's plain-valued fields: its native address, without read_only. */
static json_t *address_of(const json_t *handle)
{
	json_t *out = json_object();
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)handle, k, v) {
		if (!strcmp(k, "read_only") || !strcmp(k, "key") || json_is_object(v) ||
		    json_is_array(v))
			continue;
		json_object_set(out, k, v);
	}
	return out;
}

static bool handle_ro(const json_t *h, bool want)
{
	return json_is_object(h) && json_is_boolean(json_object_get(h, "read_only")) &&
	       json_is_true(json_object_get(h, "read_only")) == want;
}

static void addressable_checks(run *r, const json_t *loc, const json_t *before, const json_t *state)
{
	tt_verify_status st = TT_VERIFY_UNKNOWN;
	char *msg = NULL;
	json_t *h1 = NULL, *h2 = NULL, *a1 = NULL, *a2 = NULL;
	tt_target t1 = target_state(state), t2 = target_state(before);

	CALL("addressable_verify", OP(verify, loc, state, NULL, false, &st, &msg));
	EXPECT("addressable_verify", st == TT_VERIFY_OK || st == TT_VERIFY_UNKNOWN,
	       "an addressable state should verify (or be unknown without deep), got %s",
	       tt_verify_status_name(st));
	free(msg);
	msg = NULL;
	/* The older state is a recorded state too: reading it back is the point. */
	CALL("addressable_verify_older", OP(verify, loc, before, NULL, true, &st, &msg));
	EXPECT("addressable_verify_older", st == TT_VERIFY_OK || st == TT_VERIFY_UNKNOWN,
	       "an older recorded state must still deep-verify, got %s", tt_verify_status_name(st));
	CALL("addressable_open", OP(open, loc, &t1, true, &h1));
	EXPECT("addressable_open", handle_ro(h1, true), "open(state) must give a read-only handle");
	CALL("addressable_open_older", OP(open, loc, &t2, true, &h2));
	EXPECT("addressable_open_older", handle_ro(h2, true),
	       "open(older state) must give a read-only handle");
	a1 = address_of(h1);
	a2 = address_of(h2);
	EXPECT("addressable_distinct_addresses", a1 && a2 && !json_equal(a1, a2),
	       "handles on two states must name two addresses");
done:
	free(msg);
	json_decref(h1);
	json_decref(h2);
	json_decref(a1);
	json_decref(a2);
}

/* --- PIN -------------------------------------------------------------------------- */

static bool verify_is(run *r, const json_t *loc, const json_t *state, const tt_pin *pin, bool deep,
		      tt_verify_status want, tt_verify_status *got)
{
	char *msg = NULL;
	*got = TT_VERIFY_UNKNOWN;
	int rc = OP(verify, loc, state, pin, deep, got, &msg);
	free(msg);
	return rc == 0 && *got == want;
}

static bool pin_checks(run *r, const json_t *loc, const json_t *state, char pid[TT_PIN_ID_MAX])
{
	tt_pin pin, again, other_pin;
	json_t *ids = NULL, *other = NULL, *co = NULL, *cs = NULL, *h = NULL;
	tt_verify_status st;
	bool ok = false;
	const tt_pin ghost = { "0000000000000000", "tether.0000000000000000.ghost", false };
	tt_target tg = target_pin(&ghost);
	int rc;

	/* Pin ids hash the content state (what the engine does); pin() gets the
	 * full state, volatile keys included. */
	CALL("pin_created", pin_id_of(r, loc, state, pid));
	CALL("pin_created", OP(pin, loc, state, pid, &pin));
	EXPECT("pin_ref_prefix", strncmp(pin.ref, "tether.", 7) == 0,
	       "pin ref must carry the tether. prefix (got %s)", pin.ref);
	EXPECT("pin_created", pin.created, "a fresh pin must report created = true");
	CALL("pin_listed", OP(list_pins, loc, &ids));
	EXPECT("pin_listed", has_string(ids, pid), "list_pins must include a fresh pin");
	EXPECT("pin_verify", verify_is(r, loc, state, &pin, false, TT_VERIFY_OK, &st),
	       "a fresh pin must verify (got %s; %s)", tt_verify_status_name(st), err_text(r));
	EXPECT("pin_verify_deep", verify_is(r, loc, state, &pin, true, TT_VERIFY_OK, &st),
	       "deep verify must pass (got %s; %s)", tt_verify_status_name(st), err_text(r));
	/* Idempotent, and honest that it found the ref rather than made it (the
	 * engine rolls back only pins it created). */
	CALL("pin_idempotent", OP(pin, loc, state, pid, &again));
	EXPECT("pin_idempotent", strcmp(again.ref, pin.ref) == 0 && !again.created,
	       "re-pinning the same state must return the same ref with created = false "
	       "(ref %s, created %d)", again.ref, (int)again.created);
	/* The pin protects the state against later drift of the working ref. */
	CALL("pin_protects", do_mutate(r, loc, NULL));
	EXPECT("pin_protects", verify_is(r, loc, state, &pin, false, TT_VERIFY_OK, &st),
	       "a pin must protect its state from later writes (got %s)", tt_verify_status_name(st));
	/* The same id for another state is a contradiction, never papered over. */
	CALL("pin_other_state_refused", fp(r, loc, NULL, &other));
	co = content(r, other);
	cs = content(r, state);
	EXPECT("pin_mutate_changes_state", co && cs && !json_equal(co, cs),
	       "mutate must change the state");
	rc = OP(pin, loc, other, pid, &other_pin);
	REFUSED("pin_other_state_refused", rc, 0,
		"pin(same id, other state) must be refused with a backend error");
	PASS("pin_other_state_refused");
	EXPECT("pin_survives_refusal", verify_is(r, loc, state, &pin, false, TT_VERIFY_OK, &st),
	       "the original pin must survive a refused re-pin (got %s)", tt_verify_status_name(st));
	/* A ref that does not exist: a backend error, not a silent success. */
	rc = OP(open, loc, &tg, true, &h);
	REFUSED("pin_open_missing_refused", rc, 0, "open(missing pin) must be a backend error");
	PASS("pin_open_missing_refused");
	rc = OP(unpin, loc, &ghost);
	EXPECT("pin_unpin_missing", rc == 0 || tt_backend_error_code(rc),
	       "unpin(missing pin) must be a no-op or a backend error, got %s", err_text(r));
	ok = true;
done:
	json_decref(ids);
	json_decref(other);
	json_decref(co);
	json_decref(cs);
	json_decref(h);
	return ok;
}

/* --- FORK (after PIN) ----------------------------------------------------------- */

static void fork_checks(run *r, const json_t *loc, const json_t *state, const char *pid)
{
	tt_pin pin;
	char *name = NULL, *name2 = NULL, *wref = NULL, *again = NULL, *kept = NULL, *wref2 = NULL;
	json_t *forked = NULL, *h = NULL, *base_before = NULL, *now = NULL, *listed_before = NULL,
	       *listed = NULL, *after = NULL;

	CALL("fork_from_pin", OP(pin, loc, state, pid, &pin));
	CALL("fork_from_pin", working_ref(r, "conformance", &name));
	CALL("fork_from_pin", fork_to(r, loc, target_pin(&pin), name, &expect_none, &wref));
	EXPECT("fork_returns_ref", wref && *wref, "fork must return a working ref");
	CALL("fork_from_pin", fp(r, loc, wref, &forked));
	EXPECT("fork_from_pin", same(r, forked, state), "a fresh fork must start at the pinned state");
	{
		tt_target t = target_ref(wref);
		CALL("fork_open_writable", OP(open, loc, &t, false, &h));
		EXPECT("fork_open_writable", handle_ro(h, false),
		       "open(working ref, writable) must give a writable handle");
	}
	/* Writing to the fork changes only the fork. */
	CALL("fork_writes_register", fp(r, loc, NULL, &base_before));
	CALL("fork_writes_register", do_mutate(r, loc, wref));
	CALL("fork_writes_register", fp(r, loc, wref, &now));
	EXPECT("fork_writes_register", !same(r, now, forked), "writes to a fork must register");
	EXPECT("fork_isolates_base", at_state(r, loc, NULL, base_before),
	       "writes to a fork must leave the base alone");
	/* Reset: forking onto an existing name moves it back to the source. */
	CALL("fork_reset", fork_to(r, loc, target_pin(&pin), name, &expect_none, &again));
	EXPECT("fork_reset", at_state(r, loc, again, state),
	       "fork onto an existing name must reset the branch to the source");
	/* ...and a branch already at the source is left alone: the same name,
	 * and no sibling in the listing. */
	CALL("fork_at_source_kept", list_working(r, loc, &listed_before));
	CALL("fork_at_source_kept", fork_to(r, loc, target_pin(&pin), again, &expect_none, &kept));
	EXPECT("fork_at_source_kept", strcmp(kept, again) == 0,
	       "fork onto an at-source branch must keep it (got %s for %s)", kept, again);
	CALL("fork_at_source_no_sibling", list_working(r, loc, &listed));
	EXPECT("fork_at_source_no_sibling", same_set(listed, listed_before),
	       "fork onto an at-source branch must not create a sibling");
	EXPECT("fork_at_source_state", at_state(r, loc, again, state),
	       "fork onto an at-source branch must leave it at the source");
	EXPECT("fork_listed", has_string(listed, again), "list_working_refs must include %s", again);
	CALL("fork_delete", OP(delete_working_ref, loc, again));
	CALL("fork_delete", list_working(r, loc, &after));
	EXPECT("fork_delete", !has_string(after, again), "a deleted working ref is still listed");
	/* Pin-less fork straight from the recorded state (pin = "record"). */
	CALL("fork_from_state", working_ref(r, "conformance-pinless", &name2));
	CALL("fork_from_state", fork_to(r, loc, target_state(state), name2, &expect_none, &wref2));
	EXPECT("fork_from_state", at_state(r, loc, wref2, state), "fork from a state must start there");
	CALL("fork_cleanup", OP(delete_working_ref, loc, wref2));
done:
	free(name);
	free(name2);
	free(wref);
	free(again);
	free(kept);
	free(wref2);
	json_decref(forked);
	json_decref(h);
	json_decref(base_before);
	json_decref(now);
	json_decref(listed_before);
	json_decref(listed);
	json_decref(after);
}

static void unpin_checks(run *r, const json_t *loc, const json_t *state, const char *pid)
{
	tt_pin pin;
	json_t *h = NULL, *ids = NULL;
	tt_verify_status st;

	CALL("unpin_open_pin", OP(pin, loc, state, pid, &pin));
	{
		tt_target t = target_pin(&pin);
		CALL("unpin_open_pin", OP(open, loc, &t, true, &h));
		EXPECT("unpin_open_pin", handle_ro(h, true), "open(pin) must give a read-only handle");
	}
	CALL("unpin_drops_id", OP(unpin, loc, &pin));
	CALL("unpin_drops_id", OP(list_pins, loc, &ids));
	EXPECT("unpin_drops_id", !has_string(ids, pid), "unpin must drop the pin id");
	EXPECT("unpin_verify_missing", verify_is(r, loc, state, &pin, false, TT_VERIFY_MISSING, &st),
	       "verify of an unpinned pin must say missing (got %s)", tt_verify_status_name(st));
done:
	json_decref(h);
	json_decref(ids);
}

/* --- FORK: conditional moves ------------------------------------------------------ */

static void conditional_fork_checks(run *r, const json_t *loc)
{
	json_t *source = NULL, *head = NULL;
	char *name = NULL, *fresh = NULL, *wref = NULL, *wref2 = NULL, *again = NULL, *junk = NULL;
	tt_expect ex;
	int rc;

	CALL("conditional_stale_refused", fp(r, loc, NULL, &source));
	CALL("conditional_stale_refused", working_ref(r, "conformance-cas", &name));
	CALL("conditional_stale_refused",
	     fork_to(r, loc, target_state(source), name, &expect_none, &wref));
	CALL("conditional_stale_refused", do_mutate(r, loc, wref));
	CALL("conditional_stale_refused", fp(r, loc, wref, &head));
	/* Stale: reviewed at the source, moved on since. */
	ex = expect_state(source);
	rc = fork_to(r, loc, target_state(source), wref, &ex, &junk);
	REFUSED("conditional_stale_refused", rc, TT_EREFMOVED,
		"fork with a stale expected must be TT_EREFMOVED");
	EXPECT("conditional_stale_refused", at_state(r, loc, wref, head),
	       "a refused fork must leave the branch where it was");
	rc = fork_to(r, loc, target_state(source), wref, &expect_absent, &junk);
	REFUSED("conditional_absent_refused", rc, TT_EREFMOVED,
		"fork with expected ABSENT onto an existing branch must be TT_EREFMOVED");
	EXPECT("conditional_absent_refused", at_state(r, loc, wref, head),
	       "a refused fork must leave the branch where it was");
	CALL("conditional_absent_creates", working_ref(r, "conformance-cas-fresh", &fresh));
	CALL("conditional_absent_creates",
	     fork_to(r, loc, target_state(source), fresh, &expect_absent, &wref2));
	EXPECT("conditional_absent_creates", at_state(r, loc, wref2, source),
	       "fork with expected ABSENT onto a fresh name must create it at the source");
	CALL("conditional_cleanup", OP(delete_working_ref, loc, wref2));
	ex = expect_state(head);
	CALL("conditional_right_expected", fork_to(r, loc, target_state(source), wref, &ex, &again));
	EXPECT("conditional_right_expected", at_state(r, loc, again, source),
	       "fork with the right expected must move the branch back to the source");
	CALL("conditional_cleanup", OP(delete_working_ref, loc, again));
done:
	json_decref(source);
	json_decref(head);
	free(name);
	free(fresh);
	free(wref);
	free(wref2);
	free(again);
	free(junk);
}

/* Racers wait at the gate until every one of them is ready, then go. */
typedef struct gate {
	pthread_mutex_t m;
	pthread_cond_t c;
	int ready;
	bool go;
} gate;

typedef struct racer {
	tt_backend *b;
	const json_t *loc;
	const tt_target *source;
	const char *name;
	const tt_expect *expected;
	gate *gate;
	int rc;
	tt_error err;
} racer;

static void *race_one(void *p)
{
	racer *x = p;
	char *ref = NULL;
	pthread_mutex_lock(&x->gate->m);
	x->gate->ready++;
	pthread_cond_broadcast(&x->gate->c);
	while (!x->gate->go)
		pthread_cond_wait(&x->gate->c, &x->gate->m);
	pthread_mutex_unlock(&x->gate->m);
	x->rc = x->b->ops->fork(x->b, x->loc, x->source, x->name, x->expected, &ref, &x->err);
	free(ref);
	return NULL;
}

/* RACERS threads released together, each forking name onto source with
 * expected: exactly one may move the ref, the others get TT_EREFMOVED. */
static void race(run *r, const char *check, const json_t *loc, const json_t *source,
		 const char *name, const tt_expect *expected)
{
	racer x[RACERS];
	pthread_t t[RACERS];
	gate g = { PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false };
	tt_target src = target_state(source);
	size_t started = 0;
	int won = 0, refused = 0;
	const char *other = NULL;

	for (size_t i = 0; i < RACERS; i++) {
		x[i] = (racer){ r->b, loc, &src, name, expected, &g, TT_EBACKEND, TT_ERROR_INIT };
		if (pthread_create(&t[i], NULL, race_one, &x[i]) != 0)
			break;
		started++;
	}
	pthread_mutex_lock(&g.m);
	while (g.ready < (int)started)
		pthread_cond_wait(&g.c, &g.m);
	g.go = true;
	pthread_cond_broadcast(&g.c);
	pthread_mutex_unlock(&g.m);
	for (size_t i = 0; i < started; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&g.m);
	pthread_cond_destroy(&g.c);
	if (started < RACERS) {
		report(r, check, false, "could start only %zu of %d racing threads", started, RACERS);
		for (size_t i = 0; i <= started; i++)
			tt_error_clear(&x[i].err);
		return;
	}
	for (size_t i = 0; i < RACERS; i++) {
		if (x[i].rc == 0)
			won++;
		else if (x[i].rc == TT_EREFMOVED)
			refused++;
		else if (!other)
			other = tt_error_text(&x[i].err);
	}
	report(r, check, won == 1 && refused == RACERS - 1,
	       "%d of %d racing forks from the same expected went through and %d were "
	       "TT_EREFMOVED%s%s; a conditional move lets exactly one through",
	       won, RACERS, refused, other ? "; another error: " : "", other ? other : "");
	for (size_t i = 0; i < RACERS; i++)
		tt_error_clear(&x[i].err);
}

static void race_checks(run *r, const json_t *loc)
{
	json_t *source = NULL, *head = NULL;
	char *name = NULL;
	tt_expect ex;

	CALL("conditional_race_create", fp(r, loc, NULL, &source));
	CALL("conditional_race_create", working_ref(r, "conformance-race", &name));
	/* Creating a branch (ABSENT)... */
	race(r, "conditional_race_create", loc, source, name, &expect_absent);
	EXPECT("conditional_race_create_state", at_state(r, loc, name, source),
	       "after the race the branch must be at the source");
	/* ...and resetting one from the head every racer read. */
	CALL("conditional_race_reset", do_mutate(r, loc, name));
	CALL("conditional_race_reset", fp(r, loc, name, &head));
	ex = expect_state(head);
	race(r, "conditional_race_reset", loc, source, name, &ex);
	EXPECT("conditional_race_reset_state", at_state(r, loc, name, source),
	       "after the race the branch must be at the source");
	CALL("conditional_race_cleanup", OP(delete_working_ref, loc, name));
done:
	json_decref(source);
	json_decref(head);
	free(name);
}

/* --- PROMOTE / MERGE --------------------------------------------------------------- */

static void ancestry_checks(run *r, const json_t *loc)
{
	json_t *source = NULL, *head = NULL;
	char *name = NULL, *wref = NULL;
	int forward, backward;

	CALL("ancestor_of", fp(r, loc, NULL, &source));
	CALL("ancestor_of", working_ref(r, "conformance-ancestry", &name));
	CALL("ancestor_of", fork_to(r, loc, target_state(source), name, &expect_none, &wref));
	CALL("ancestor_of", do_mutate(r, loc, wref));
	CALL("ancestor_of", fp(r, loc, wref, &head));
	CALL("ancestor_of", ancestor(r, loc, source, target_ref(wref), &forward));
	CALL("ancestor_of", ancestor(r, loc, head, target_state(source), &backward));
	if (!r->b->ops->ancestor_of)
		EXPECT("ancestor_of", forward == -1 && backward == -1,
		       "the default ancestor_of answers unknown");
	else
		EXPECT("ancestor_of", forward == 1 && backward == 0,
		       "the fork point must be an ancestor of the fork (%d) and the fork's head "
		       "not one of the fork point (%d)", forward, backward);
	CALL("ancestor_cleanup", OP(delete_working_ref, loc, wref));
done:
	json_decref(source);
	json_decref(head);
	free(name);
	free(wref);
}

static void promote_checks(run *r, const json_t *loc)
{
	json_t *base = NULL, *fork_head = NULL, *moved = NULL, *again = NULL, *diverged = NULL,
	       *junk = NULL;
	char *name = NULL, *wref = NULL;
	tt_target src;
	tt_expect ex;
	int anc, rc;

	CALL("promote_stale_expected", fp(r, loc, NULL, &base));
	CALL("promote_stale_expected", working_ref(r, "conformance-promote", &name));
	CALL("promote_stale_expected", fork_to(r, loc, target_state(base), name, &expect_none, &wref));
	CALL("promote_stale_expected", do_mutate(r, loc, wref));
	CALL("promote_stale_expected", fp(r, loc, wref, &fork_head));
	src = target_ref(wref);
	/* The fork's head is a state the base never held: a backend that
	 * ignores expected fast-forwards here. */
	ex = expect_state(fork_head);
	rc = OP(promote, loc, &src, &ex, &junk);
	REFUSED("promote_stale_expected", rc, TT_EREFMOVED,
		"promote with a stale expected must be TT_EREFMOVED, also where the fast-forward "
		"would land");
	EXPECT("promote_stale_expected", at_state(r, loc, NULL, base),
	       "a refused promote must leave the base where it was");
	ex = expect_state(base);
	CALL("promote_returns_state", OP(promote, loc, &src, &ex, &moved));
	EXPECT("promote_returns_state", at_state(r, loc, NULL, moved),
	       "promote must return the base's new state");
	EXPECT("promote_moves_base", !same(r, moved, base), "promote must move the base");
	CALL("promote_keeps_history", ancestor(r, loc, base, target_state(moved), &anc));
	EXPECT("promote_keeps_history", anc != 0, "promote must keep the base's history");
	if (same(r, moved, fork_head)) {
		/* A fast-forward: promoting again has nothing to do. */
		CALL("promote_second_noop", OP(promote, loc, &src, &expect_none, &again));
		EXPECT("promote_second_noop", same(r, again, moved),
		       "a second promote must be a no-op returning the same state");
	}
	/* Diverge: base and fork both move; a fast-forward would discard the
	 * base's commit. */
	CALL("promote_diverged_refused", do_mutate(r, loc, NULL));
	CALL("promote_diverged_refused", do_mutate(r, loc, wref));
	CALL("promote_diverged_refused", fp(r, loc, NULL, &diverged));
	json_decref(junk);
	junk = NULL;
	rc = OP(promote, loc, &src, &expect_none, &junk);
	REFUSED("promote_diverged_refused", rc, 0,
		"promote onto a base that moved must be a backend error");
	EXPECT("promote_diverged_refused", at_state(r, loc, NULL, diverged),
	       "a refused promote must leave the base where it was");
	json_decref(junk);
	junk = NULL;
	ex = expect_state(moved);
	rc = OP(promote, loc, &src, &ex, &junk);
	REFUSED("promote_stale_expected_diverged", rc, TT_EREFMOVED,
		"promote with a stale expected must be TT_EREFMOVED");
	EXPECT("promote_stale_expected_diverged", at_state(r, loc, NULL, diverged),
	       "a refused promote must leave the base where it was");
	CALL("promote_cleanup", OP(delete_working_ref, loc, wref));
done:
	json_decref(base);
	json_decref(fork_head);
	json_decref(moved);
	json_decref(again);
	json_decref(diverged);
	json_decref(junk);
	free(name);
	free(wref);
}

static void merge_checks(run *r, const json_t *loc)
{
	json_t *base = NULL, *fork_head = NULL, *before = NULL, *merged = NULL, *junk = NULL,
	       *conflicts = NULL;
	char *name = NULL, *wref = NULL;
	tt_target src;
	tt_expect ex;
	int anc, rc;

	CALL("merge_stale_expected", fp(r, loc, NULL, &base));
	CALL("merge_stale_expected", working_ref(r, "conformance-merge", &name));
	CALL("merge_stale_expected", fork_to(r, loc, target_state(base), name, &expect_none, &wref));
	CALL("merge_stale_expected", do_mutate(r, loc, wref));
	CALL("merge_stale_expected", fp(r, loc, wref, &fork_head));
	CALL("merge_stale_expected", do_mutate(r, loc, NULL));
	CALL("merge_stale_expected", fp(r, loc, NULL, &before));
	src = target_ref(wref);
	/* Reviewed before the base's own write: a backend that ignores expected
	 * merges here. */
	ex = expect_state(base);
	rc = OP(merge, loc, &src, "conformance merge", &ex, &junk, &conflicts);
	REFUSED("merge_stale_expected", rc, TT_EREFMOVED,
		"merge with a stale expected must be TT_EREFMOVED, also where the merge would land");
	EXPECT("merge_stale_expected", at_state(r, loc, NULL, before),
	       "a refused merge must leave the base where it was");
	json_decref(conflicts);
	conflicts = NULL;
	ex = expect_state(before);
	CALL("merge_returns_state", OP(merge, loc, &src, "conformance merge", &ex, &merged, &conflicts));
	EXPECT("merge_returns_state", at_state(r, loc, NULL, merged),
	       "merge must return the base's new state");
	EXPECT("merge_diverged", !same(r, merged, before) && !same(r, merged, fork_head),
	       "merging two diverged sides must make a new state");
	CALL("merge_keeps_history", ancestor(r, loc, before, target_state(merged), &anc));
	EXPECT("merge_keeps_history", anc != 0, "merge must keep the base's history");
	json_decref(junk);
	junk = NULL;
	json_decref(conflicts);
	conflicts = NULL;
	rc = OP(merge, loc, &src, "conformance merge", &ex, &junk, &conflicts);
	REFUSED("merge_stale_expected_after", rc, TT_EREFMOVED,
		"merge with a stale expected must be TT_EREFMOVED");
	EXPECT("merge_stale_expected_after", at_state(r, loc, NULL, merged),
	       "a refused merge must leave the base where it was");
	CALL("merge_cleanup", OP(delete_working_ref, loc, wref));
done:
	json_decref(base);
	json_decref(fork_head);
	json_decref(before);
	json_decref(merged);
	json_decref(junk);
	json_decref(conflicts);
	free(name);
	free(wref);
}

/* --- CREATE ------------------------------------------------------------------------ */

static void create_checks(run *r)
{
	const char *owner = "0a1b2c3d";
	json_t *loc = NULL, *state = NULL, *now = NULL, *junk = NULL, *again = NULL,
	       *ignoring = NULL;
	char *who = NULL, *name = NULL, *wref = NULL;
	int empty = -1, rc;

	if (!r->h->fresh_locator) {
		report(r, "create_harness", false,
		       "%s declares CREATE: its harness must provide fresh_locator", r->kind->name);
		return;
	}
	if (r->h->fresh_locator(r->h->ctx, &loc) != 0 || !loc) {
		report(r, "create_harness", false, "the harness's fresh_locator failed");
		return;
	}
	/* Declared, but not for this locator: nothing to walk (the engine would
	 * refuse add --create the same way). */
	if (!(tt_backend_caps(r->b, loc, NULL, NULL) & TT_CAP_CREATE))
		goto done;
	CALL("create_initial_state", OP(create, loc, owner, &state));
	EXPECT("create_initial_state", json_is_object(state), "create must return the initial state");
	CALL("create_owner", OP(owner, loc, &who));
	EXPECT("create_owner", who && strcmp(who, owner) == 0,
	       "the owner marker must name the creator (got %s)", who ? who : "none");
	CALL("create_ref_empty", OP(is_ref_empty, loc, NULL, &empty));
	EXPECT("create_ref_empty", empty == 1, "a fresh store is ref-empty (got %d)", empty);
	CALL("create_fingerprint", fp(r, loc, NULL, &now));
	EXPECT("create_fingerprint", same(r, now, state),
	       "the fingerprint of a fresh store is the state create returned");
	rc = OP(create, loc, "ffffffff", &junk);
	REFUSED("create_second_refused", rc, 0, "create must refuse a store that already exists");
	free(who);
	who = NULL;
	CALL("create_second_refused", OP(owner, loc, &who));
	EXPECT("create_second_refused", who && strcmp(who, owner) == 0,
	       "a refused create must not re-own the store");
	if (r->kind->caps & TT_CAP_FORK) {
		/* Writes on a fork make it not empty; deleting the fork makes it
		 * empty again, and `ignoring` says so ahead of time. */
		CALL("create_fork_not_empty", working_ref(r, "create-probe", &name));
		CALL("create_fork_not_empty",
		     fork_to(r, loc, target_state(state), name, &expect_none, &wref));
		CALL("create_fork_not_empty", do_mutate(r, loc, wref));
		CALL("create_fork_not_empty", OP(is_ref_empty, loc, NULL, &empty));
		EXPECT("create_fork_not_empty", empty == 0,
		       "a written fork means not empty (got %d)", empty);
		ignoring = json_pack("[s]", wref);
		CALL("create_ignoring", ignoring ? OP(is_ref_empty, loc, ignoring, &empty) : TT_ENOMEM);
		EXPECT("create_ignoring", empty == 1,
		       "ignoring the fork a plan deletes, the store is empty (got %d)", empty);
		CALL("create_empty_again", OP(delete_working_ref, loc, wref));
		CALL("create_empty_again", OP(is_ref_empty, loc, NULL, &empty));
		EXPECT("create_empty_again", empty == 1,
		       "with the fork deleted the store is empty again (got %d)", empty);
	} else {
		CALL("create_base_not_empty", do_mutate(r, loc, NULL));
		CALL("create_base_not_empty", OP(is_ref_empty, loc, NULL, &empty));
		EXPECT("create_base_not_empty", empty == 0,
		       "a written base means not empty (got %d)", empty);
	}
	CALL("delete_store", OP(is_ref_empty, loc, NULL, &empty));
	if (empty == 1) {
		CALL("delete_store", OP(delete_store, loc));
		free(who);
		who = NULL;
		CALL("delete_store", OP(owner, loc, &who));
		EXPECT("delete_store", who == NULL, "a deleted store has no owner");
		json_decref(now);
		now = NULL;
		rc = fp(r, loc, NULL, &now);
		REFUSED("delete_store_fingerprint", rc, 0,
			"the fingerprint of a deleted store must be a backend error");
		PASS("delete_store_fingerprint");
		CALL("create_again", OP(create, loc, owner, &again));
		EXPECT("create_again", same(r, again, state),
		       "create after delete_store must make the store again");
		CALL("create_cleanup", OP(delete_store, loc));
	}
done:
	json_decref(loc);
	json_decref(state);
	json_decref(now);
	json_decref(junk);
	json_decref(again);
	json_decref(ignoring);
	free(who);
	free(name);
	free(wref);
}

/* --- the suite ---------------------------------------------------------------------- */

int tt_conformance_run(const tt_conformance_harness *h)
{
	run rr = { .failed_names = TT_BUF_INIT }, *r = &rr;
	json_t *loc = NULL, *before = NULL, *state = NULL;
	char pid[TT_PIN_ID_MAX];
	unsigned caps;

	if (!h || !h->backend || !h->backend->ops || !h->backend->kind || !h->new_object ||
	    !h->mutate)
		return -1;
	r->h = h;
	r->b = h->backend;
	r->kind = h->backend->kind;
	r->caps = caps = h->capabilities ? h->capabilities : r->kind->caps;
	r->ds = h->dataset_id ? h->dataset_id : TT_CONFORMANCE_DATASET;
	r->label = h->label ? h->label : "conformance";

	EXPECT("fingerprint_declared", caps & TT_CAP_FINGERPRINT, "every backend must fingerprint");
	EXPECT("new_object", h->new_object(h->ctx, &loc) == 0 && json_is_object(loc),
	       "the harness's new_object must return a locator object");
	if (!fingerprint_checks(r, loc, &before, &state))
		goto done;
	content_checks(r, before, state);
	identity_checks(r, loc, state);
	if (caps & TT_CAP_DIFF)
		diff_checks(r, loc, before, state);
	if (caps & TT_CAP_HISTORY)
		history_checks(r, loc, state);
	if (caps & TT_CAP_ADDRESSABLE)
		addressable_checks(r, loc, before, state);
	if (caps & TT_CAP_PIN) {
		if (pin_checks(r, loc, state, pid)) {
			if (caps & TT_CAP_FORK)
				fork_checks(r, loc, state, pid);
			unpin_checks(r, loc, state, pid);
		}
	}
	if (caps & TT_CAP_FORK) {
		/* Declared per object where the store decides, so the locator is
		 * asked too. */
		bool conditional = (caps | tt_backend_caps(r->b, loc, NULL, NULL)) &
				   TT_CAP_CONDITIONAL_REF;
		conditional_fork_checks(r, loc);
		if (conditional)
			race_checks(r, loc);
		if (caps & (TT_CAP_PROMOTE | TT_CAP_MERGE))
			ancestry_checks(r, loc);
		if (caps & TT_CAP_PROMOTE)
			promote_checks(r, loc);
		if (caps & TT_CAP_MERGE)
			merge_checks(r, loc);
	}
	if (caps & TT_CAP_CREATE)
		create_checks(r);
done:
	json_decref(loc);
	json_decref(before);
	json_decref(state);
	tt_error_clear(&r->err);
	if (h->mode == TT_CONFORMANCE_REPORT && r->failed)
		tt_test_fail(__FILE__, __LINE__, "%s: %d of %d conformance checks failed: %s",
			     r->label, r->failed, r->failed + r->passed, r->failed_names.ptr);
	tt_buf_release(&r->failed_names);
	return r->failed;
}
