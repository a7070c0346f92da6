/*
 * backends/backend.c - the parts of the backend contract every kind shares
 * (see backend.h): content diffs, history entries, building a backend with
 * its kind's constructor, effective capabilities, state equality and the
 * default conditional-move check.
 */
#include "backends/backend.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/secrets.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/num.h"

/* --- small things -------------------------------------------------------- */

const char *tt_verify_status_name(tt_verify_status s)
{
	switch (s) {
	case TT_VERIFY_OK:
		return "ok";
	case TT_VERIFY_DRIFTED:
		return "drifted";
	case TT_VERIFY_MISSING:
		return "missing";
	case TT_VERIFY_UNKNOWN:
		return "unknown";
	}
	return "unknown";
}

bool tt_backend_error_code(int code)
{
	return code == TT_EBACKEND || code == TT_EREFMOVED || code == TT_ECONFLICT ||
	       code == TT_ECAPABILITY;
}

/* --- content diffs ------------------------------------------------------- */

void tt_object_diff_init(tt_object_diff *d, const char *unit)
{
	memset(d, 0, sizeof *d);
	snprintf(d->unit, sizeof d->unit, "%s", unit ? unit : "entries");
}

void tt_object_diff_release(tt_object_diff *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->nentries; i++) {
		free(d->entries[i].path);
		free(d->entries[i].change);
		free(d->entries[i].detail);
	}
	free(d->entries);
	free(d->note);
	d->entries = NULL;
	d->nentries = d->alloc = 0;
	d->note = NULL;
}

int tt_object_diff_add(tt_object_diff *d, const char *path, const char *change,
		       const char *detail, tt_error *err)
{
	if (!d || !path || !change)
		return tt_error_set(err, TT_EUSAGE, "a diff entry needs a path and a change");
	/* Counts are exact whatever the cap; anything not added/removed counts
	 * as modified (renames included), as tether-vcs counts. */
	if (strcmp(change, "added") == 0)
		d->added++;
	else if (strcmp(change, "removed") == 0)
		d->removed++;
	else
		d->modified++;
	if (d->nentries >= TT_MAX_DIFF_ENTRIES) {
		d->truncated = true;
		return 0;
	}
	if (TT_ARRAY_GROW(d->entries, d->alloc, d->nentries + 1) != 0)
		return tt_error_oom(err);
	tt_diff_entry *e = &d->entries[d->nentries];
	e->path = tt_strdup(path);
	e->change = tt_strdup(change);
	/* An empty detail is no detail (to_dict leaves it out). */
	e->detail = detail && *detail ? tt_strdup(detail) : NULL;
	if (!e->path || !e->change || (detail && *detail && !e->detail)) {
		free(e->path);
		free(e->change);
		free(e->detail);
		return tt_error_oom(err);
	}
	d->nentries++;
	return 0;
}

bool tt_object_diff_is_empty(const tt_object_diff *d)
{
	return !(d->added || d->removed || d->modified || d->nentries);
}

char *tt_object_diff_summary(const tt_object_diff *d)
{
	tt_buf b = TT_BUF_INIT;
	tt_buf_printf(&b, "+%lld -%lld ~%lld %s", d->added, d->removed, d->modified, d->unit);
	if (d->truncated)
		tt_buf_printf(&b, " (first %zu shown)", d->nentries);
	if (d->note && *d->note)
		tt_buf_printf(&b, "; %s", d->note);
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

json_t *tt_object_diff_json(const tt_object_diff *d)
{
	json_t *out = NULL, *entries = NULL;
	char *summary = tt_object_diff_summary(d);
	bool ok = summary != NULL;

	out = json_object();
	entries = json_array();
	ok = ok && out && entries;
	for (size_t i = 0; ok && i < d->nentries; i++) {
		const tt_diff_entry *e = &d->entries[i];
		json_t *o = json_object();
		ok = o && json_array_append_new(entries, o) == 0;
		ok = ok && json_object_set_new(o, "path", json_string(e->path)) == 0;
		ok = ok && json_object_set_new(o, "change", json_string(e->change)) == 0;
		if (ok && e->detail && *e->detail)
			ok = json_object_set_new(o, "detail", json_string(e->detail)) == 0;
	}
	ok = ok && json_object_set_new(out, "summary", json_string(summary)) == 0;
	ok = ok && json_object_set_new(out, "unit", json_string(d->unit)) == 0;
	ok = ok && json_object_set_new(out, "added", json_integer(d->added)) == 0;
	ok = ok && json_object_set_new(out, "removed", json_integer(d->removed)) == 0;
	ok = ok && json_object_set_new(out, "modified", json_integer(d->modified)) == 0;
	ok = ok && json_object_set_new(out, "truncated", json_boolean(d->truncated)) == 0;
	ok = ok && json_object_set_new(out, "note", json_string(d->note ? d->note : "")) == 0;
	if (ok) {
		ok = json_object_set_new(out, "entries", entries) == 0;
		entries = NULL;
	}
	free(summary);
	json_decref(entries);
	if (!ok) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* --- history ------------------------------------------------------------- */

void tt_history_release(tt_history_entry *entries, size_t n)
{
	if (!entries)
		return;
	for (size_t i = 0; i < n; i++) {
		free(entries[i].id);
		free(entries[i].when);
		free(entries[i].message);
		json_decref(entries[i].refs);
	}
	free(entries);
}

/* --- building a backend ------------------------------------------------- */

void tt_backend_seterr(tt_error *err, const char *kind, int code, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tt_error_vset(err, code, fmt, ap);
	va_end(ap);
	tt_error_object(err, NULL, kind);
}

void tt_backend_setoom(tt_error *err, const char *kind)
{
	tt_error_oom(err);
	tt_error_object(err, NULL, kind);
}

void tt_backend_free(tt_backend *b)
{
	if (!b)
		return;
	if (b->ops && b->ops->free)
		b->ops->free(b);
	json_decref(b->config);
	json_decref(b->secret_rules);
	free(b->cache_dir);
	free(b->checkout);
	free(b);
}

unsigned tt_backend_caps(tt_backend *b, const json_t *loc, const char *file_policy,
			 const char *pin_policy)
{
	unsigned caps = b->ops && b->ops->effective_capabilities
				? b->ops->effective_capabilities(b, loc, file_policy)
				: b->kind->caps;
	if (pin_policy && strcmp(pin_policy, "record") == 0)
		caps &= ~(unsigned)TT_CAP_PIN;
	return caps;
}

/* --- states -------------------------------------------------------------- */

/* Canonical text of the content state, or NULL (OOM, or not dumpable). */
static char *content_canon(const tt_kind *kind, const json_t *state)
{
	tt_buf b = TT_BUF_INIT;
	json_t *c = json_is_object(state) ? tt_content_state(kind, state) : json_incref((json_t *)state);
	char *out = NULL;
	if (c && tt_json_canonical(&b, c) == 0)
		out = tt_buf_detach(&b);
	tt_buf_release(&b);
	json_decref(c);
	return out;
}

bool tt_states_equal(const tt_kind *kind, const json_t *a, const json_t *b)
{
	if (!a || !b)
		return a == b;
	char *ca = content_canon(kind, a), *cb = content_canon(kind, b);
	bool eq = ca && cb && strcmp(ca, cb) == 0;
	free(ca);
	free(cb);
	return eq;
}

/* tether-vcs's _short(state): "k=v, ..." over sorted keys, each value's
 * str() cut to 12 characters (code points). */
static void short_state(tt_buf *out, const json_t *state)
{
	size_t n = json_object_size(state), i = 0;
	const char **keys = n ? tt_reallocarray(NULL, n, sizeof *keys) : NULL;
	const char *key;
	json_t *val;
	if (n && !keys) {
		out->failed = TT_ENOMEM;
		return;
	}
	json_object_foreach((json_t *)state, key, val)
		if (i < n)
			keys[i++] = key;
	/* Insertion sort: states have a handful of keys. */
	for (size_t a = 1; a < i; a++)
		for (size_t z = a; z > 0 && strcmp(keys[z - 1], keys[z]) > 0; z--) {
			const char *t = keys[z];
			keys[z] = keys[z - 1];
			keys[z - 1] = t;
		}
	for (size_t k = 0; k < i; k++) {
		tt_buf v = TT_BUF_INIT;
		size_t cut = 0, chars = 0;
		tt_pyv_str(&v, json_object_get(state, keys[k]));
		while (cut < v.len && chars < 12) {
			uint32_t cp;
			cut += tt_utf8_next((const unsigned char *)v.ptr + cut, v.len - cut, &cp);
			chars++;
		}
		tt_buf_printf(out, "%s%s=", k ? ", " : "", keys[k]);
		tt_buf_put(out, v.ptr, cut);
		if (v.failed)
			out->failed = v.failed;
		tt_buf_release(&v);
	}
	free(keys);
}

int tt_check_expected_for(tt_backend *b, const json_t *loc, const char *ref,
			  const tt_expect *expected, const char *what, tt_error *err)
{
	int rc = 0;
	json_t *refs = NULL, *head = NULL, *base_loc = NULL, *absent = NULL;
	const json_t *want;
	char *base = NULL;
	tt_buf msg = TT_BUF_INIT;
	const char *kind = b->kind ? b->kind->name : "backend";

	if (!expected || expected->kind == TT_EXPECT_NONE)
		return 0;
	if (!what)
		what = "fork";
	if (expected->kind == TT_EXPECT_STATE && !json_is_object(expected->state))
		return tt_error_set(err, TT_EUSAGE, "an expected state must be a JSON object");
	/* An empty state is ABSENT, as tether-vcs tests `not expected`. */
	if (expected->kind == TT_EXPECT_STATE && json_object_size(expected->state) > 0) {
		want = expected->state;
	} else {
		/* ABSENT is the empty state, which no fingerprint ever is. */
		absent = json_object();
		if (!absent)
			return tt_error_oom(err);
		want = absent;
	}
	if (ref) {
		bool present = false;
		if (b->ops->list_working_refs) {
			rc = b->ops->list_working_refs(b, loc, &refs, err);
			if (rc)
				goto done;
			for (size_t i = 0; i < json_array_size(refs); i++)
				if (json_is_string(json_array_get(refs, i)) &&
				    strcmp(json_string_value(json_array_get(refs, i)), ref) == 0)
					present = true;
		}
		if (want == absent) {
			if (present) {
				rc = tt_error_set(err, TT_EREFMOVED, "%s: %s exists, expected absent",
						  what, ref);
				tt_error_object(err, NULL, kind);
			}
			goto done;
		}
		if (!present) {
			short_state(&msg, want);
			rc = tt_error_set(err, TT_EREFMOVED, "%s: %s is gone, expected %s", what, ref,
					  msg.failed ? "?" : msg.ptr);
			tt_error_object(err, NULL, kind);
			goto done;
		}
		rc = b->ops->fingerprint(b, loc, ref, &head, err);
		if (rc)
			goto done;
	} else {
		/* The base head itself, not a detached `at`. */
		base_loc = json_is_object(loc) ? json_deep_copy(loc) : json_object();
		if (!base_loc) {
			rc = tt_error_oom(err);
			goto done;
		}
		json_object_del(base_loc, "at");
		rc = b->ops->fingerprint(b, base_loc, NULL, &head, err);
		if (rc)
			goto done;
	}
	if (!tt_states_equal(b->kind, head, want)) {
		const char *where = ref;
		if (!where) {
			if (b->ops->base_branch) {
				rc = b->ops->base_branch(b, loc, &base, err);
				if (rc)
					goto done;
			} else {
				json_t *br = json_object_get(loc, "branch");
				tt_buf t = TT_BUF_INIT;
				if (br)
					tt_pyv_str(&t, br);
				else
					tt_buf_puts(&t, "main");
				base = t.failed ? NULL : tt_buf_detach(&t);
				tt_buf_release(&t);
				if (!base) {
					rc = tt_error_oom(err);
					goto done;
				}
			}
			where = base;
		}
		tt_buf_printf(&msg, "%s: %s is at ", what, where);
		short_state(&msg, head);
		tt_buf_puts(&msg, ", expected ");
		short_state(&msg, want);
		if (msg.failed) {
			rc = tt_error_oom(err);
			goto done;
		}
		rc = tt_error_set(err, TT_EREFMOVED, "%s", msg.ptr);
		tt_error_object(err, NULL, kind);
	}
done:
	json_decref(refs);
	json_decref(head);
	json_decref(base_loc);
	json_decref(absent);
	free(base);
	tt_buf_release(&msg);
	return rc;
}

int tt_check_expected(tt_backend *b, const json_t *loc, const char *ref, const tt_expect *expected,
		      tt_error *err)
{
	return tt_check_expected_for(b, loc, ref, expected, "fork", err);
}

void tt_backend_set_secret_rules(tt_backend *b, json_t *rules)
{
	if (!rules)
		return;
	json_decref(b->secret_rules);
	b->secret_rules = rules;
}

int tt_backend_secrets_for(const tt_backend *b, const json_t *locator, json_t **out, tt_error *err)
{
	json_t *o = json_object();
	json_t *rule = tt_secrets_rule_for(b->secret_rules, tt_secrets_locator_uri(locator));
	*out = NULL;
	if (!o || (b->config && tt_secrets_merge(o, b->config) < 0) ||
	    (rule && tt_secrets_merge(o, rule) < 0)) {
		json_decref(o);
		return tt_error_oom(err);
	}
	*out = o;
	return 0;
}
