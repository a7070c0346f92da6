/*
 * backends/memory/memory.c - the memory backend: every capability of the memory
 * kind over a tiny versioned key-value store (see memory.h), with the
 * semantics of tether-vcs's memory backend, the reference the conformance
 * suite is checked against.
 *
 * The store is one JSON document, {"systems": {...}, "deleted": [...]}.
 * Every operation is a session: take the process mutex (and, for the file
 * store, the flock on "<file>.lock"), read the document, act, write it back
 * when it changed, release.  So one operation - a conditional move's check
 * and its move included - is one step against every other thread and
 * process (CONDITIONAL_REF).  Operations make all their checks before they
 * change anything; the only earlier change is the implicit creation of a
 * system on first use, which tether-vcs keeps as well.
 */
#include "backends/memory/memory.h"
#include "backends/kit.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/lock.h"
#include "util/mem.h"

#define KIND "memory"
#define PIN_PREFIX "tether."
#define LOCK_TIMEOUT_MS 60000

typedef struct mem_impl {
	char *store_path; /* TETHER_MEMORY_STORE when the backend was built, or NULL */
} mem_impl;

/* --- errors -------------------------------------------------------------- */


/* --- the store and its sessions ------------------------------------------ */

static pthread_mutex_t store_mutex = PTHREAD_MUTEX_INITIALIZER;
static json_t *process_store; /* the in-process document, under store_mutex */

typedef struct session {
	json_t *root;       /* the document (borrowed in-process, owned from a file) */
	const char *path;   /* file store, or NULL */
	tt_lock lock;
	bool active, dirty;
} session;
#define SESSION_INIT { NULL, NULL, TT_LOCK_INIT, false, false }

static json_t *new_document(void)
{
	return json_pack("{s:{}, s:[]}", "systems", "deleted");
}

static bool all_strings(const json_t *o)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)o, k, v)
		if (!json_is_string(v))
			return false;
	return true;
}

/* The shape a file must have before any operation trusts it. */
static bool document_valid(const json_t *root)
{
	const json_t *systems = json_object_get(root, "systems");
	const json_t *deleted = json_object_get(root, "deleted");
	const char *name;
	json_t *sys;
	if (!json_is_object(root) || !json_is_object(systems) || !json_is_array(deleted))
		return false;
	for (size_t i = 0; i < json_array_size(deleted); i++)
		if (!json_is_string(json_array_get(deleted, i)))
			return false;
	json_object_foreach((json_t *)systems, name, sys) {
		json_t *snaps = json_object_get(sys, "snapshots");
		json_t *parents = json_object_get(sys, "parents");
		json_t *owner = json_object_get(sys, "owner");
		const char *k;
		json_t *v;
		if (!json_is_object(snaps) || !json_is_object(parents) ||
		    !json_is_object(json_object_get(sys, "branches")) ||
		    !json_is_object(json_object_get(sys, "tags")) ||
		    !all_strings(json_object_get(sys, "branches")) ||
		    !all_strings(json_object_get(sys, "tags")) ||
		    !json_is_integer(json_object_get(sys, "counter")) ||
		    (owner && !json_is_null(owner) && !json_is_string(owner)))
			return false;
		json_object_foreach(snaps, k, v)
			if (!json_is_object(v))
				return false;
		json_object_foreach(parents, k, v) {
			if (!json_is_array(v))
				return false;
			for (size_t i = 0; i < json_array_size(v); i++)
				if (!json_is_string(json_array_get(v, i)))
					return false;
		}
	}
	return true;
}

static int session_begin(session *s, const char *path, tt_error *err)
{
	int rc = 0;
	char *lock_path = NULL;
	tt_buf text = TT_BUF_INIT;

	pthread_mutex_lock(&store_mutex);
	s->active = true;
	s->path = path;
	if (!path) {
		if (!process_store && !(process_store = new_document())) {
			rc = KOOM(err);
			goto done;
		}
		s->root = process_store;
		goto done;
	}
	lock_path = tt_asprintf("%s.lock", path);
	if (!lock_path) {
		rc = KOOM(err);
		goto done;
	}
	rc = tt_lock_acquire(&s->lock, lock_path, "using the memory store", LOCK_TIMEOUT_MS, err);
	if (rc)
		goto done;
	if (tt_exists(path)) {
		rc = tt_read_file(path, &text, 0, err);
		if (rc)
			goto done;
	}
	if (text.len == 0) {
		s->root = new_document();
		if (!s->root)
			rc = KOOM(err);
		goto done;
	}
	s->root = tt_json_parse(text.ptr, text.len, path, err);
	if (!s->root) {
		rc = err ? err->code : TT_EPARSE;
		goto done;
	}
	if (!document_valid(s->root))
		rc = KERR(err, TT_EBACKEND, "memory store %s is not a memory store document",
			     path);
done:
	free(lock_path);
	tt_buf_release(&text);
	return rc;
}

/* End the session begun (or half-begun) by session_begin: write the file
 * back when the operation changed it, release everything.  Returns rc, or
 * the write's failure when the operation itself succeeded. */
static int session_end(session *s, int rc, tt_error *err)
{
	if (!s->active)
		return rc;
	/* A refused operation may still have made its system (as tether-vcs
	 * does); only a failure of the process itself drops the change. */
	if (s->path && s->root && s->dirty && (rc == 0 || tt_backend_error_code(rc))) {
		tt_buf out = TT_BUF_INIT;
		tt_error werr = TT_ERROR_INIT;
		int wrc = tt_json_dump(&out, s->root, (tt_json_style){ 1, false, false, false });
		if (wrc == 0)
			wrc = tt_buf_putc(&out, '\n');
		if (wrc)
			wrc = tt_error_set(&werr, wrc, "cannot serialise the memory store");
		else
			wrc = tt_write_file_atomic(s->path, out.ptr, out.len, 0644, &werr);
		if (wrc && rc == 0) {
			tt_error_move(err, &werr);
			tt_error_object(err, NULL, KIND);
			rc = wrc;
		}
		tt_error_clear(&werr);
		tt_buf_release(&out);
	}
	if (s->path)
		json_decref(s->root);
	s->root = NULL;
	tt_lock_release(&s->lock);
	s->active = false;
	pthread_mutex_unlock(&store_mutex);
	return rc;
}

void tt_memory_reset(void)
{
	pthread_mutex_lock(&store_mutex);
	json_decref(process_store);
	process_store = NULL;
	pthread_mutex_unlock(&store_mutex);
}

/* --- systems ------------------------------------------------------------- */

static json_t *systems_of(session *s) { return json_object_get(s->root, "systems"); }

static bool is_deleted(session *s, const char *name)
{
	json_t *d = json_object_get(s->root, "deleted");
	for (size_t i = 0; i < json_array_size(d); i++)
		if (strcmp(json_string_value(json_array_get(d, i)), name) == 0)
			return true;
	return false;
}

static void undelete(session *s, const char *name)
{
	json_t *d = json_object_get(s->root, "deleted");
	for (size_t i = json_array_size(d); i-- > 0;)
		if (strcmp(json_string_value(json_array_get(d, i)), name) == 0) {
			json_array_remove(d, i);
			s->dirty = true;
		}
}

/* The system, made (s0 on main) when absent; a deleted one is an error
 * until `create` makes it again. */
static int sys_get(session *s, const char *name, json_t **sys, tt_error *err)
{
	int rc = 0;
	char *sid = NULL, *r = NULL;
	json_t *made = NULL;

	*sys = NULL;
	if (is_deleted(s, name)) {
		r = tt_pyv_repr_dup(name);
		rc = KERR(err, TT_EBACKEND, "system %s was deleted", r ? r : name);
		goto done;
	}
	*sys = json_object_get(systems_of(s), name);
	if (*sys)
		goto done;
	sid = tt_asprintf("%s:s0", name);
	made = sid ? json_pack("{s:{s:{}}, s:{s:s}, s:{}, s:{}, s:I, s:n}", "snapshots", sid,
			       "branches", "main", sid, "tags", "parents", "counter",
			       (json_int_t)0, "owner")
		   : NULL;
	if (!made || json_object_set(systems_of(s), name, made) != 0) {
		rc = KOOM(err);
		goto done;
	}
	s->dirty = true;
	*sys = made;
done:
	json_decref(made);
	free(sid);
	free(r);
	return rc;
}

static const char *map_get(json_t *sys, const char *map, const char *key)
{
	return json_string_value(json_object_get(json_object_get(sys, map), key));
}

static bool has_snapshot(json_t *sys, const char *sid)
{
	return json_object_get(json_object_get(sys, "snapshots"), sid) != NULL;
}

/* A branch, a tag or a snapshot id, in that order, to its snapshot id
 * (borrowed from the session's document). */
static int resolve(json_t *sys, const char *ref, const char **sid, tt_error *err)
{
	const char *v = map_get(sys, "branches", ref);
	if (!v)
		v = map_get(sys, "tags", ref);
	if (!v && has_snapshot(sys, ref))
		v = ref;
	if (!v) {
		char *r = tt_pyv_repr_dup(ref);
		int rc = KERR(err, TT_EBACKEND, "unknown ref %s", r ? r : ref);
		free(r);
		return rc;
	}
	*sid = v;
	return 0;
}

/* sid and everything reachable through parent links, nearest first (a
 * breadth-first walk): a new array of strings. */
static json_t *ancestors(json_t *sys, const char *sid)
{
	json_t *parents = json_object_get(sys, "parents");
	json_t *seen = json_array(), *seen_set = json_object(), *queue = json_array();
	bool ok = seen && seen_set && queue && json_array_append_new(queue, json_string(sid)) == 0;
	size_t head = 0;
	while (ok && head < json_array_size(queue)) {
		const char *cur = json_string_value(json_array_get(queue, head++));
		if (json_object_get(seen_set, cur))
			continue;
		ok = json_object_set(seen_set, cur, json_true()) == 0 &&
		     json_array_append_new(seen, json_string(cur)) == 0;
		json_t *ps = json_object_get(parents, cur);
		for (size_t i = 0; ok && i < json_array_size(ps); i++)
			ok = json_array_append(queue, json_array_get(ps, i)) == 0;
	}
	json_decref(seen_set);
	json_decref(queue);
	if (!ok) {
		json_decref(seen);
		return NULL;
	}
	return seen;
}

static bool array_has(const json_t *arr, const char *s)
{
	for (size_t i = 0; i < json_array_size(arr); i++) {
		const char *v = json_string_value(json_array_get(arr, i));
		if (v && strcmp(v, s) == 0)
			return true;
	}
	return false;
}

/* Append a snapshot of payload (copied) to branch; parents: the branch's
 * head when it exists, then extra_parent.  *sid_out: the new id (owned). */
static int store_write(session *s, json_t *sys, const char *name, const char *branch,
		       const json_t *payload, const char *extra_parent, char **sid_out,
		       tt_error *err)
{
	int rc = 0;
	json_int_t counter = json_integer_value(json_object_get(sys, "counter")) + 1;
	char *sid = tt_asprintf("%s:s%" JSON_INTEGER_FORMAT, name, counter);
	json_t *copy = json_deep_copy(payload), *parents = json_array();
	const char *head = map_get(sys, "branches", branch);
	bool ok = sid && copy && parents;

	if (ok && head)
		ok = json_array_append_new(parents, json_string(head)) == 0;
	if (ok && extra_parent)
		ok = json_array_append_new(parents, json_string(extra_parent)) == 0;
	/* head points into the document: read it before the branch moves. */
	ok = ok && json_object_set_new(sys, "counter", json_integer(counter)) == 0;
	ok = ok && json_object_set(json_object_get(sys, "snapshots"), sid, copy) == 0;
	ok = ok && json_object_set(json_object_get(sys, "parents"), sid, parents) == 0;
	ok = ok && json_object_set_new(json_object_get(sys, "branches"), branch, json_string(sid)) == 0;
	s->dirty = true;
	if (!ok) {
		rc = KOOM(err);
		goto done;
	}
	if (sid_out) {
		*sid_out = sid;
		sid = NULL;
	}
done:
	free(sid);
	json_decref(copy);
	json_decref(parents);
	return rc;
}

/* --- locators and states -------------------------------------------------- */

static int str_of(const json_t *v, char **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	if (tt_pyv_str(&b, v) != 0) {
		tt_buf_release(&b);
		return KOOM(err);
	}
	*out = tt_buf_detach(&b);
	return 0;
}

/* `system`, or the CLI's positional locator (`uri`). */
static int loc_system(const json_t *loc, char **out, tt_error *err)
{
	const json_t *v = json_object_get(loc, "system");
	*out = NULL;
	if (!tt_pyv_truthy(v))
		v = json_object_get(loc, "uri");
	if (!tt_pyv_truthy(v))
		return KERR(err, TT_EBACKEND, "memory locator needs 'system'");
	return str_of(v, out, err);
}

static int loc_base_branch(const json_t *loc, char **out, tt_error *err)
{
	const json_t *v = json_object_get(loc, "branch");
	if (!v) {
		*out = tt_strdup("main");
		return *out ? 0 : KOOM(err);
	}
	return str_of(v, out, err);
}

/* The locator's `at` (NULL when absent, null or ""). */
static int loc_at(const json_t *loc, char **out, tt_error *err)
{
	const json_t *v = json_object_get(loc, "at");
	*out = NULL;
	if (!v || json_is_null(v) || (json_is_string(v) && json_string_length(v) == 0))
		return 0;
	return str_of(v, out, err);
}

/* The ref a read of the base means: `at`, else the base branch. */
static int loc_base_ref(const json_t *loc, char **out, tt_error *err)
{
	int rc = loc_at(loc, out, err);
	if (rc == 0 && !*out)
		rc = loc_base_branch(loc, out, err);
	return rc;
}

static int state_sid(const json_t *state, char **out, tt_error *err)
{
	const json_t *v = json_object_get(state, "snapshot_id");
	*out = NULL;
	if (!v)
		return KERR(err, TT_EBACKEND, "a memory state needs 'snapshot_id'");
	return str_of(v, out, err);
}

static json_t *make_state(const char *sid)
{
	return json_pack("{s:s}", "snapshot_id", sid);
}

static const char *store_path(tt_backend *b)
{
	return b->impl ? ((mem_impl *)b->impl)->store_path : NULL;
}

/* Python equality of two JSON values (None for a missing one): numbers and
 * booleans compare by value (True == 1 == 1.0), containers deeply. */
static bool py_eq(const json_t *a, const json_t *b)
{
	bool an = !a || json_is_null(a), bn = !b || json_is_null(b);
	if (an || bn)
		return an && bn;
	bool anum = json_is_number(a) || json_is_boolean(a);
	bool bnum = json_is_number(b) || json_is_boolean(b);
	if (anum || bnum) {
		if (!anum || !bnum)
			return false;
		if (json_is_real(a) || json_is_real(b)) {
			double x = json_is_real(a) ? json_real_value(a)
				   : json_is_integer(a) ? (double)json_integer_value(a)
							: (double)json_is_true(a);
			double y = json_is_real(b) ? json_real_value(b)
				   : json_is_integer(b) ? (double)json_integer_value(b)
							: (double)json_is_true(b);
			return x == y;
		}
		json_int_t x = json_is_integer(a) ? json_integer_value(a) : json_is_true(a);
		json_int_t y = json_is_integer(b) ? json_integer_value(b) : json_is_true(b);
		return x == y;
	}
	if (json_typeof(a) != json_typeof(b))
		return false;
	if (json_is_string(a))
		return json_string_length(a) == json_string_length(b) &&
		       memcmp(json_string_value(a), json_string_value(b), json_string_length(a)) == 0;
	if (json_is_array(a)) {
		if (json_array_size(a) != json_array_size(b))
			return false;
		for (size_t i = 0; i < json_array_size(a); i++)
			if (!py_eq(json_array_get(a, i), json_array_get(b, i)))
				return false;
		return true;
	}
	if (json_object_size(a) != json_object_size(b))
		return false;
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)a, k, v) {
		json_t *w = json_object_get(b, k);
		if (!w || !py_eq(v, w))
			return false;
	}
	return true;
}

/* A new array of the strings in `keys` (an object's keys when from_keys,
 * else an array's strings) that pass keep(), sorted by code point. */
static json_t *sorted_strings(const json_t *src, bool from_keys, const char *prefix, size_t strip)
{
	size_t n = from_keys ? json_object_size(src) : json_array_size(src), i = 0;
	const char **v = tt_reallocarray(NULL, n ? n : 1, sizeof *v);
	json_t *out = json_array();
	bool ok = v && out;
	if (ok && from_keys) {
		const char *k;
		json_t *val;
		json_object_foreach((json_t *)src, k, val)
			if (i < n && (!prefix || strncmp(k, prefix, strlen(prefix)) == 0))
				v[i++] = k;
	} else if (ok) {
		for (size_t j = 0; j < n; j++) {
			const char *s = json_string_value(json_array_get(src, j));
			if (s && (!prefix || strncmp(s, prefix, strlen(prefix)) == 0))
				v[i++] = s;
		}
	}
	if (ok)
		qsort(v, i, sizeof *v, tt_cmp_cstr);
	for (size_t j = 0; ok && j < i; j++)
		ok = json_array_append_new(out, json_string(v[j] + strip)) == 0;
	free(v);
	if (!ok) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* --- the protocol ---------------------------------------------------------- */

static int mem_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	char *name = NULL;
	int rc = loc_system(loc, &name, err);
	*out = NULL;
	if (rc == 0) {
		*out = json_pack("{s:s}", "system", name);
		if (!*out)
			rc = KOOM(err);
	}
	free(name);
	return rc;
}

static int mem_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref,
			   json_t **state, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *ref = NULL;
	const char *sid;
	json_t *sys;

	*state = NULL;
	rc = loc_system(loc, &name, err);
	if (rc)
		goto done;
	if (working_ref && *working_ref) {
		if (!(ref = tt_strdup(working_ref))) {
			rc = KOOM(err);
			goto done;
		}
	} else if ((rc = loc_base_ref(loc, &ref, err)) != 0) {
		goto done;
	}
	if ((rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0 || (rc = resolve(sys, ref, &sid, err)) != 0)
		goto done;
	if (!(*state = make_state(sid)))
		rc = KOOM(err);
done:
	rc = session_end(&s, rc, err);
	free(name);
	free(ref);
	return rc;
}

static int mem_history(tt_backend *b, const json_t *loc, const char *ref, size_t limit,
		       tt_history_entry **out, size_t *n, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *start = NULL;
	const char *head;
	json_t *sys, *past = NULL;
	tt_history_entry *entries = NULL;
	size_t count = 0;

	*out = NULL;
	*n = 0;
	rc = loc_system(loc, &name, err);
	if (rc)
		goto done;
	if (ref && *ref) {
		if (!(start = tt_strdup(ref))) {
			rc = KOOM(err);
			goto done;
		}
	} else if ((rc = loc_base_ref(loc, &start, err)) != 0) {
		goto done;
	}
	if ((rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0 || (rc = resolve(sys, start, &head, err)) != 0)
		goto done;
	/* The head's own past through parent links - not every snapshot of the
	 * system (a sibling branch's snapshots are not ancestors). */
	past = ancestors(sys, head);
	if (!past) {
		rc = KOOM(err);
		goto done;
	}
	count = json_array_size(past) < limit ? json_array_size(past) : limit;
	entries = tt_calloc(count ? count : 1, sizeof *entries);
	if (!entries) {
		rc = KOOM(err);
		goto done;
	}
	for (size_t i = 0; i < count; i++) {
		const char *sid = json_string_value(json_array_get(past, i));
		json_t *pointing = json_array();
		const char *k;
		json_t *v;
		bool ok = pointing != NULL;
		json_object_foreach(json_object_get(sys, "branches"), k, v)
			if (ok && strcmp(json_string_value(v), sid) == 0)
				ok = json_array_append_new(pointing, json_string(k)) == 0;
		json_object_foreach(json_object_get(sys, "tags"), k, v)
			if (ok && strcmp(json_string_value(v), sid) == 0)
				ok = json_array_append_new(pointing, json_string(k)) == 0;
		entries[i].id = tt_strdup(sid);
		entries[i].message = tt_asprintf("snapshot %s", sid);
		entries[i].refs = ok ? sorted_strings(pointing, false, NULL, 0) : NULL;
		json_decref(pointing);
		if (!entries[i].id || !entries[i].message || !entries[i].refs) {
			rc = KOOM(err);
			goto done;
		}
	}
	*out = entries;
	*n = count;
	entries = NULL;
done:
	rc = session_end(&s, rc, err);
	tt_history_release(entries, count);
	json_decref(past);
	free(name);
	free(start);
	return rc;
}

static int mem_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id,
		   tt_pin *out, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *sid = NULL, *ref = NULL;
	const char *existing;
	json_t *sys;

	if ((rc = loc_system(loc, &name, err)) != 0 || (rc = state_sid(state, &sid, err)) != 0)
		goto done;
	if (!(ref = tt_asprintf(PIN_PREFIX "%s", pin_id))) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0)
		goto done;
	if (!has_snapshot(sys, sid)) {
		rc = KERR(err, TT_EBACKEND, "snapshot %s no longer exists", sid);
		goto done;
	}
	existing = map_get(sys, "tags", ref);
	if (existing && strcmp(existing, sid) != 0) {
		rc = KERR(err, TT_EBACKEND, "pin %s already points elsewhere", ref);
		goto done;
	}
	if ((rc = tt_kit_fill_pin(out, KIND, pin_id, ref, !existing, err)) != 0)
		goto done;
	if (!existing) {
		if (json_object_set_new(json_object_get(sys, "tags"), ref, json_string(sid)) != 0) {
			rc = KOOM(err);
			goto done;
		}
		s.dirty = true;
	}
done:
	rc = session_end(&s, rc, err);
	free(name);
	free(sid);
	free(ref);
	return rc;
}

static int mem_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL;
	json_t *sys;

	if ((rc = loc_system(loc, &name, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0)
		goto done;
	if (json_object_del(json_object_get(sys, "tags"), pin->ref) == 0)
		s.dirty = true;
done:
	rc = session_end(&s, rc, err);
	free(name);
	return rc;
}

/* The names in one of a system's tables ("tags", "branches") that start
 * with prefix, sorted; strip: with the prefix cut off. */
static int list_names(tt_backend *b, const json_t *loc, const char *table, const char *prefix,
		      size_t strip, json_t **out, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL;
	json_t *sys;

	*out = NULL;
	if ((rc = loc_system(loc, &name, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0)
		goto done;
	*out = sorted_strings(json_object_get(sys, table), true, prefix, strip);
	if (!*out)
		rc = KOOM(err);
done:
	rc = session_end(&s, rc, err);
	free(name);
	return rc;
}

static int mem_list_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err)
{
	return list_names(b, loc, "tags", PIN_PREFIX, strlen(PIN_PREFIX), ids, err);
}

static int mem_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
		      bool deep, tt_verify_status *status, char **message, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *sid = NULL, *msg = NULL;
	json_t *sys;

	*status = TT_VERIFY_UNKNOWN;
	*message = NULL;
	if ((rc = loc_system(loc, &name, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0 || (rc = state_sid(state, &sid, err)) != 0)
		goto done;
	if (pin) {
		const char *actual = map_get(sys, "tags", pin->ref);
		if (!actual) {
			*status = TT_VERIFY_MISSING;
			msg = tt_asprintf("pin %s gone", pin->ref);
		} else if (strcmp(actual, sid) != 0) {
			*status = TT_VERIFY_DRIFTED;
			msg = tt_asprintf("%s -> %s, expected %s", pin->ref, actual, sid);
		} else {
			*status = TT_VERIFY_OK;
			msg = tt_strdup("");
		}
	} else if (has_snapshot(sys, sid)) {
		/* Addressable: the snapshot must still exist (deep or not). */
		*status = TT_VERIFY_OK;
		msg = tt_strdup("");
	} else {
		*status = TT_VERIFY_MISSING;
		msg = tt_asprintf("snapshot %s gone", sid);
	}
	if (!msg) {
		rc = KOOM(err);
		goto done;
	}
	*message = msg;
	msg = NULL;
done:
	rc = session_end(&s, rc, err);
	free(name);
	free(sid);
	free(msg);
	return rc;
}

/* The conditional half of a ref move: `ref` holds `expected` (or does not
 * exist, for ABSENT), else TT_EREFMOVED and nothing may move.  Runs inside
 * the session that makes the move. */
static int require_head(json_t *sys, const char *ref, const tt_expect *expected, const char *what,
			tt_error *err)
{
	const char *head = map_get(sys, "branches", ref);
	char *want = NULL;
	int rc = 0;

	if (!expected || expected->kind == TT_EXPECT_NONE)
		return 0;
	if (expected->kind == TT_EXPECT_STATE && !json_is_object(expected->state))
		return KERR(err, TT_EUSAGE, "an expected state must be a JSON object");
	/* An empty state is ABSENT (no fingerprint is ever empty). */
	if (expected->kind == TT_EXPECT_ABSENT || json_object_size(expected->state) == 0) {
		if (head)
			return KERR(err, TT_EREFMOVED, "%s: %s exists (at %s), expected absent", what,
				       ref, head);
		return 0;
	}
	if ((rc = state_sid(expected->state, &want, err)) != 0)
		return rc;
	if (!head || strcmp(head, want) != 0)
		rc = KERR(err, TT_EREFMOVED, "%s: %s is at %s, expected %s", what, ref,
			     head ? head : "None", want);
	free(want);
	return rc;
}

static int mem_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		    const tt_expect *expected, char **ref_out, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *system = NULL, *sid = NULL;
	json_t *sys;

	*ref_out = NULL;
	if (!name || !*name)
		return KERR(err, TT_EUSAGE, "fork needs a branch name");
	if ((rc = loc_system(loc, &system, err)) != 0)
		goto done;
	if (source->kind == TT_TARGET_STATE && (rc = state_sid(source->state, &sid, err)) != 0)
		goto done;
	if (source->kind != TT_TARGET_STATE && source->kind != TT_TARGET_PIN) {
		rc = KERR(err, TT_EUSAGE, "fork needs a pin or a recorded state to start from");
		goto done;
	}
	if ((rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, system, &sys, err)) != 0)
		goto done;
	if (source->kind == TT_TARGET_PIN) {
		const char *tag = map_get(sys, "tags", source->pin->ref);
		if (!tag) {
			rc = KERR(err, TT_EBACKEND, "pin %s missing", source->pin->ref);
			goto done;
		}
		if (!(sid = tt_strdup(tag))) {
			rc = KOOM(err);
			goto done;
		}
	} else if (!has_snapshot(sys, sid)) {
		rc = KERR(err, TT_EBACKEND, "snapshot %s gone", sid);
		goto done;
	}
	/* The check and the move in one session: atomic against every other
	 * thread and process using this store. */
	if ((rc = require_head(sys, name, expected, "fork", err)) != 0)
		goto done;
	if (!(*ref_out = tt_strdup(name)) ||
	    json_object_set_new(json_object_get(sys, "branches"), name, json_string(sid)) != 0) {
		free(*ref_out);
		*ref_out = NULL;
		rc = KOOM(err);
		goto done;
	}
	s.dirty = true;
done:
	rc = session_end(&s, rc, err);
	free(system);
	free(sid);
	return rc;
}

static int mem_delete_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *base = NULL;
	json_t *sys;

	if ((rc = loc_system(loc, &name, err)) != 0 || (rc = loc_base_branch(loc, &base, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0)
		goto done;
	/* Never the base (nor "main", which tether-vcs guards by name). */
	if (strcmp(ref, "main") != 0 && strcmp(ref, base) != 0 &&
	    json_object_del(json_object_get(sys, "branches"), ref) == 0)
		s.dirty = true;
done:
	rc = session_end(&s, rc, err);
	free(name);
	free(base);
	return rc;
}

static int mem_list_working_refs(tt_backend *b, const json_t *loc, json_t **refs, tt_error *err)
{
	return list_names(b, loc, "branches", TT_WORKING_REF_PREFIX, 0, refs, err);
}

static int mem_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		    json_t **handle, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *ref = NULL, *address = NULL;
	const char *sid;
	json_t *sys;

	*handle = NULL;
	if ((rc = loc_system(loc, &name, err)) != 0)
		goto done;
	if ((target->kind == TT_TARGET_PIN && !target->pin) ||
	    (target->kind == TT_TARGET_REF && !target->ref)) {
		rc = KERR(err, TT_EUSAGE, "open needs a target");
		goto done;
	}
	switch (target->kind) {
	case TT_TARGET_PIN:
		ref = tt_strdup(target->pin->ref);
		break;
	case TT_TARGET_STATE:
		if ((rc = state_sid(target->state, &ref, err)) != 0)
			goto done;
		break;
	case TT_TARGET_REF:
		ref = tt_strdup(target->ref);
		break;
	case TT_TARGET_BASE:
		/* tether-vcs opens the base branch here (not a detached `at`). */
		if ((rc = loc_base_branch(loc, &ref, err)) != 0)
			goto done;
		break;
	}
	if (!ref) {
		rc = KOOM(err);
		goto done;
	}
	/* A missing ref is an error now, not at the first read. */
	if ((rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0 || (rc = resolve(sys, ref, &sid, err)) != 0)
		goto done;
	address = tt_asprintf("memory://%s#%s", name, ref);
	*handle = address ? json_pack("{s:s, s:s, s:b, s:s, s:s}", "type", KIND, "address", address,
				      "read_only", read_only, "system", name, "ref", ref)
			  : NULL;
	if (!*handle)
		rc = KOOM(err);
done:
	rc = session_end(&s, rc, err);
	free(name);
	free(ref);
	free(address);
	return rc;
}

/* The snapshot a promote/merge/ancestor source names (owned copy). */
static int source_sid(json_t *sys, const json_t *loc, const tt_target *source, char **out,
		      tt_error *err)
{
	const char *sid = NULL;
	char *ref = NULL;
	int rc = 0;

	*out = NULL;
	switch (source->kind) {
	case TT_TARGET_PIN:
		sid = map_get(sys, "tags", source->pin->ref);
		if (!sid)
			return KERR(err, TT_EBACKEND, "pin %s missing", source->pin->ref);
		break;
	case TT_TARGET_STATE:
		return state_sid(source->state, out, err);
	case TT_TARGET_REF:
		if ((rc = resolve(sys, source->ref, &sid, err)) != 0)
			return rc;
		break;
	case TT_TARGET_BASE:
		if ((rc = loc_base_ref(loc, &ref, err)) == 0)
			rc = resolve(sys, ref, &sid, err);
		free(ref);
		if (rc)
			return rc;
		break;
	}
	*out = tt_strdup(sid);
	return *out ? 0 : KOOM(err);
}

static int mem_ancestor_of(tt_backend *b, const json_t *loc, const json_t *ancestor,
			   const tt_target *descendant, int *answer, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *want = NULL, *target = NULL;
	json_t *sys, *past = NULL;

	*answer = -1;
	if ((rc = loc_system(loc, &name, err)) != 0 || (rc = state_sid(ancestor, &want, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0 ||
	    (rc = source_sid(sys, loc, descendant, &target, err)) != 0)
		goto done;
	if (!(past = ancestors(sys, target))) {
		rc = KOOM(err);
		goto done;
	}
	*answer = array_has(past, want) ? 1 : 0;
done:
	rc = session_end(&s, rc, err);
	json_decref(past);
	free(name);
	free(want);
	free(target);
	return rc;
}

/* The head of branch base (a copy), or an error naming the branch. */
static int base_head(json_t *sys, const char *base, char **head, tt_error *err)
{
	const char *h = map_get(sys, "branches", base);
	if (!h) {
		char *r = tt_pyv_repr_dup(base);
		int rc = KERR(err, TT_EBACKEND, "unknown branch %s", r ? r : base);
		free(r);
		return rc;
	}
	return (*head = tt_strdup(h)) ? 0 : KOOM(err);
}

static int mem_promote(tt_backend *b, const json_t *loc, const tt_target *source,
		       const tt_expect *expected, json_t **new_state, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *base = NULL, *target = NULL, *head = NULL;
	json_t *sys, *past = NULL;

	*new_state = NULL;
	if ((rc = loc_system(loc, &name, err)) != 0 || (rc = loc_base_branch(loc, &base, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0 ||
	    (rc = require_head(sys, base, expected, "promote", err)) != 0)
		goto done;
	if ((rc = base_head(sys, base, &head, err)) != 0)
		goto done;
	if ((rc = source_sid(sys, loc, source, &target, err)) != 0)
		goto done;
	if (strcmp(target, head) != 0) {
		/* A fast-forward never discards anything: the base head must be
		 * in the target's past. */
		if (!(past = ancestors(sys, target))) {
			rc = KOOM(err);
			goto done;
		}
		if (!array_has(past, head)) {
			rc = KERR(err, TT_EBACKEND, "%s moved to %s, which is not an ancestor of %s",
				     base, head, target);
			goto done;
		}
		if (json_object_set_new(json_object_get(sys, "branches"), base, json_string(target))) {
			rc = KOOM(err);
			goto done;
		}
		s.dirty = true;
	}
	if (!(*new_state = make_state(target)))
		rc = KOOM(err);
done:
	rc = session_end(&s, rc, err);
	json_decref(past);
	free(name);
	free(base);
	free(target);
	free(head);
	return rc;
}

/* Three-way merge of the payload dicts ours/theirs against anc: a key only
 * one side changed takes that side; both changed it differently is a
 * conflict.  *merged: a new object (ours with their changes). */
static int merge_payloads(const json_t *ours, const json_t *theirs, const json_t *anc,
			  json_t **merged, json_t **conflicts)
{
	json_t *all = json_object(), *keys = NULL, *out = json_deep_copy(ours), *cf = json_array();
	const char *k;
	json_t *v;
	bool ok = all && out && cf;

	json_object_foreach((json_t *)ours, k, v) ok = ok && json_object_set(all, k, json_null()) == 0;
	json_object_foreach((json_t *)theirs, k, v) ok = ok && json_object_set(all, k, json_null()) == 0;
	json_object_foreach((json_t *)anc, k, v) ok = ok && json_object_set(all, k, json_null()) == 0;
	keys = ok ? sorted_strings(all, true, NULL, 0) : NULL;
	ok = ok && keys;
	for (size_t i = 0; ok && i < json_array_size(keys); i++) {
		const char *key = json_string_value(json_array_get(keys, i));
		json_t *o = json_object_get(ours, key), *t = json_object_get(theirs, key);
		json_t *a = json_object_get(anc, key);
		if (py_eq(o, t))
			continue;
		if (py_eq(o, a)) { /* only they changed it */
			if (t)
				ok = json_object_set(out, key, t) == 0;
			else
				json_object_del(out, key);
		} else if (!py_eq(t, a)) { /* both changed it, differently */
			ok = json_array_append_new(cf, json_string(key)) == 0;
		}
	}
	json_decref(all);
	json_decref(keys);
	if (!ok) {
		json_decref(out);
		json_decref(cf);
		return TT_ENOMEM;
	}
	*merged = out;
	*conflicts = cf;
	return 0;
}

static int mem_merge(tt_backend *b, const json_t *loc, const tt_target *source, const char *message,
		     const tt_expect *expected, json_t **new_state, json_t **conflicts, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *base = NULL, *src = NULL, *head = NULL, *sid = NULL;
	json_t *sys, *src_line = NULL, *head_line = NULL, *merged = NULL, *cf = NULL;
	json_t *snaps;
	const char *common = NULL;

	*new_state = NULL;
	if (conflicts)
		*conflicts = NULL;
	if ((rc = loc_system(loc, &name, err)) != 0 || (rc = loc_base_branch(loc, &base, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0 ||
	    (rc = require_head(sys, base, expected, "merge", err)) != 0)
		goto done;
	if ((rc = base_head(sys, base, &head, err)) != 0)
		goto done;
	if ((rc = source_sid(sys, loc, source, &src, err)) != 0)
		goto done;
	src_line = ancestors(sys, src);
	head_line = ancestors(sys, head);
	if (!src_line || !head_line) {
		rc = KOOM(err);
		goto done;
	}
	/* Already merged: the source is in the base's past. */
	if (array_has(head_line, src)) {
		*new_state = make_state(head);
		rc = *new_state ? 0 : KOOM(err);
		goto done;
	}
	/* Fast-forward: the base is in the source's past. */
	if (array_has(src_line, head)) {
		if (json_object_set_new(json_object_get(sys, "branches"), base, json_string(src))) {
			rc = KOOM(err);
			goto done;
		}
		s.dirty = true;
		*new_state = make_state(src);
		rc = *new_state ? 0 : KOOM(err);
		goto done;
	}
	snaps = json_object_get(sys, "snapshots");
	if (!json_object_get(snaps, src)) {
		rc = KERR(err, TT_EBACKEND, "snapshot %s gone", src);
		goto done;
	}
	/* The nearest common ancestor, by the base's breadth-first past. */
	for (size_t i = 0; !common && i < json_array_size(head_line); i++)
		if (array_has(src_line, json_string_value(json_array_get(head_line, i))))
			common = json_string_value(json_array_get(head_line, i));
	{
		json_t *empty = json_object();
		json_t *anc = common ? json_object_get(snaps, common) : NULL;
		if (!empty ||
		    merge_payloads(json_object_get(snaps, head), json_object_get(snaps, src),
				   anc ? anc : empty, &merged, &cf) != 0) {
			json_decref(empty);
			rc = KOOM(err);
			goto done;
		}
		json_decref(empty);
	}
	if (json_array_size(cf) > 0) {
		rc = KERR(err, TT_ECONFLICT, "%zu key(s) changed on both %s and %s",
			     json_array_size(cf), base, src);
		if (conflicts) {
			*conflicts = cf;
			cf = NULL;
		}
		goto done;
	}
	if ((rc = store_write(&s, sys, name, base, merged, src, &sid, err)) != 0)
		goto done;
	if (!(*new_state = make_state(sid)))
		rc = KOOM(err);
done:
	rc = session_end(&s, rc, err);
	json_decref(src_line);
	json_decref(head_line);
	json_decref(merged);
	json_decref(cf);
	free(name);
	free(base);
	free(src);
	free(head);
	free(sid);
	return rc;
}

static int mem_listing(tt_backend *b, const json_t *loc, const json_t *state, char **text,
		       tt_error *err)
{
	*text = NULL; /* a snapshot id is enough to diff from */
	return 0;
}

static int add_repr_entry(tt_object_diff *out, const char *key, const char *change,
			  const json_t *from, const json_t *to, tt_error *err)
{
	tt_buf d = TT_BUF_INIT;
	int rc;
	tt_pyv_repr(&d, from);
	if (to) {
		tt_buf_puts(&d, " -> ");
		tt_pyv_repr(&d, to);
	}
	rc = d.failed ? KOOM(err) : tt_object_diff_add(out, key, change, d.ptr, err);
	tt_buf_release(&d);
	return rc;
}

static int mem_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		    const char *la, const char *lb, tt_object_diff *out, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *sa = NULL, *sb = NULL;
	const char *ra, *rb;
	json_t *sys, *pa, *pb, *all = NULL, *keys = NULL;
	const char *k;
	json_t *v;

	tt_object_diff_init(out, "keys");
	if ((rc = loc_system(loc, &name, err)) != 0 || (rc = state_sid(a, &sa, err)) != 0 ||
	    (rc = state_sid(bstate, &sb, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0 ||
	    (rc = sys_get(&s, name, &sys, err)) != 0 || (rc = resolve(sys, sa, &ra, err)) != 0 ||
	    (rc = resolve(sys, sb, &rb, err)) != 0)
		goto done;
	pa = json_object_get(json_object_get(sys, "snapshots"), ra);
	pb = json_object_get(json_object_get(sys, "snapshots"), rb);
	all = json_object();
	bool ok = all != NULL;
	json_object_foreach(pa, k, v) ok = ok && json_object_set(all, k, json_null()) == 0;
	json_object_foreach(pb, k, v) ok = ok && json_object_set(all, k, json_null()) == 0;
	if (!ok || !(keys = sorted_strings(all, true, NULL, 0))) {
		rc = KOOM(err);
		goto done;
	}
	for (size_t i = 0; rc == 0 && i < json_array_size(keys); i++) {
		const char *key = json_string_value(json_array_get(keys, i));
		json_t *va = json_object_get(pa, key), *vb = json_object_get(pb, key);
		if (!va)
			rc = add_repr_entry(out, key, "added", vb, NULL, err);
		else if (!vb)
			rc = add_repr_entry(out, key, "removed", va, NULL, err);
		else if (!py_eq(va, vb))
			rc = add_repr_entry(out, key, "modified", va, vb, err);
	}
done:
	rc = session_end(&s, rc, err);
	if (rc)
		tt_object_diff_release(out);
	json_decref(all);
	json_decref(keys);
	free(name);
	free(sa);
	free(sb);
	return rc;
}

/* --- store lifecycle (CREATE) ---------------------------------------------- */

static int mem_create(tt_backend *b, const json_t *loc, const char *owner, json_t **state,
		      tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *ref = NULL, *r = NULL;
	const char *sid;
	json_t *sys;

	*state = NULL;
	if ((rc = loc_system(loc, &name, err)) != 0 || (rc = loc_base_ref(loc, &ref, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0)
		goto done;
	/* Never adopt a store someone else made. */
	if (json_object_get(systems_of(&s), name)) {
		r = tt_pyv_repr_dup(name);
		rc = KERR(err, TT_EBACKEND, "system %s already exists", r ? r : name);
		goto done;
	}
	undelete(&s, name);
	if ((rc = sys_get(&s, name, &sys, err)) != 0)
		goto done;
	/* The owner marker is system metadata, never a ref. */
	if (json_object_set_new(sys, "owner", owner ? json_string(owner) : json_null()) != 0) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = resolve(sys, ref, &sid, err)) != 0)
		goto done;
	if (!(*state = make_state(sid)))
		rc = KOOM(err);
done:
	rc = session_end(&s, rc, err);
	free(name);
	free(ref);
	free(r);
	return rc;
}

static int mem_owner(tt_backend *b, const json_t *loc, char **owner, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL;
	json_t *sys;

	*owner = NULL;
	if ((rc = loc_system(loc, &name, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0)
		goto done;
	sys = json_object_get(systems_of(&s), name);
	if (is_deleted(&s, name) || !sys || !json_is_string(json_object_get(sys, "owner")))
		goto done;
	if (!(*owner = tt_strdup(json_string_value(json_object_get(sys, "owner")))))
		rc = KOOM(err);
done:
	rc = session_end(&s, rc, err);
	free(name);
	return rc;
}

static int mem_is_ref_empty(tt_backend *b, const json_t *loc, const json_t *ignoring, int *answer,
			    tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL, *base = NULL, *initial = NULL;
	json_t *sys;
	const char *k;
	json_t *v;
	bool stray = false;

	*answer = -1;
	if ((rc = loc_system(loc, &name, err)) != 0 || (rc = loc_base_branch(loc, &base, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0)
		goto done;
	sys = json_object_get(systems_of(&s), name);
	if (!sys)
		goto done; /* no store: cannot tell, so keep */
	if (!(initial = tt_asprintf("%s:s0", name))) {
		rc = KOOM(err);
		goto done;
	}
	json_object_foreach(json_object_get(sys, "branches"), k, v)
		if (strcmp(k, base) != 0 && !array_has(ignoring, k))
			stray = true;
	json_object_foreach(json_object_get(sys, "tags"), k, v)
		if (!array_has(ignoring, k))
			stray = true;
	{
		const char *head = map_get(sys, "branches", base);
		*answer = !stray && head && strcmp(head, initial) == 0;
	}
done:
	rc = session_end(&s, rc, err);
	free(name);
	free(base);
	free(initial);
	return rc;
}

static int mem_delete_store(tt_backend *b, const json_t *loc, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	char *name = NULL;

	if ((rc = loc_system(loc, &name, err)) != 0 ||
	    (rc = session_begin(&s, store_path(b), err)) != 0)
		goto done;
	json_object_del(systems_of(&s), name);
	if (!is_deleted(&s, name) &&
	    json_array_append_new(json_object_get(s.root, "deleted"), json_string(name)) != 0) {
		rc = KOOM(err);
		goto done;
	}
	s.dirty = true;
done:
	rc = session_end(&s, rc, err);
	free(name);
	return rc;
}

static int mem_base_branch(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	return loc_base_branch(loc, out, err);
}

static void mem_free(tt_backend *b)
{
	mem_impl *impl = b->impl;
	if (impl) {
		free(impl->store_path);
		free(impl);
	}
	b->impl = NULL;
}

static const tt_backend_ops mem_ops = {
	.abi = TT_BACKEND_ABI,
	.identity = mem_identity,
	.fingerprint = mem_fingerprint,
	.pin = mem_pin,
	.unpin = mem_unpin,
	.list_pins = mem_list_pins,
	.verify = mem_verify,
	.fork = mem_fork,
	.delete_working_ref = mem_delete_working_ref,
	.list_working_refs = mem_list_working_refs,
	.working_ref_blockers = tt_kit_no_blockers,
	.open = mem_open,
	.promote = mem_promote,
	.merge = mem_merge,
	.ancestor_of = mem_ancestor_of,
	.listing = mem_listing,
	.diff = mem_diff,
	.history = mem_history,
	.create = mem_create,
	.owner = mem_owner,
	.is_ref_empty = mem_is_ref_empty,
	.delete_store = mem_delete_store,
	.base_branch = mem_base_branch,
	.free = mem_free,
};

int tt_memory_backend_new(tt_backend *b, tt_error *err)
{
	const char *path = getenv(TT_MEMORY_STORE_ENV);
	mem_impl *impl = tt_calloc(1, sizeof *impl);
	if (!impl)
		return KOOM(err);
	if (path && *path && !(impl->store_path = tt_strdup(path))) {
		free(impl);
		return KOOM(err);
	}
	b->ops = &mem_ops;
	b->impl = impl;
	return 0;
}

/* --- the test seam --------------------------------------------------------- */

static const char *env_store(void)
{
	const char *p = getenv(TT_MEMORY_STORE_ENV);
	return p && *p ? p : NULL;
}

int tt_memory_write(const char *system, const char *branch, const json_t *payload,
		    char **snapshot_id, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	json_t *sys;

	if (snapshot_id)
		*snapshot_id = NULL;
	if (!system || !*system || !branch || !*branch || !json_is_object(payload))
		return KERR(err, TT_EUSAGE, "a memory write needs a system, a branch and an object");
	if ((rc = session_begin(&s, env_store(), err)) != 0 ||
	    (rc = sys_get(&s, system, &sys, err)) != 0)
		goto done;
	rc = store_write(&s, sys, system, branch, payload, NULL, snapshot_id, err);
done:
	return session_end(&s, rc, err);
}

int tt_memory_read(const char *system, const char *ref, json_t **payload, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	const char *sid;
	json_t *sys;

	*payload = NULL;
	if ((rc = session_begin(&s, env_store(), err)) != 0 ||
	    (rc = sys_get(&s, system, &sys, err)) != 0 || (rc = resolve(sys, ref, &sid, err)) != 0)
		goto done;
	*payload = json_deep_copy(json_object_get(json_object_get(sys, "snapshots"), sid));
	if (!*payload)
		rc = KOOM(err);
done:
	return session_end(&s, rc, err);
}

int tt_memory_show(const char *system, json_t **out, tt_error *err)
{
	int rc;
	session s = SESSION_INIT;
	json_t *sys;

	*out = NULL;
	if ((rc = session_begin(&s, env_store(), err)) != 0)
		goto done;
	if (is_deleted(&s, system)) {
		rc = sys_get(&s, system, &sys, err); /* the "was deleted" error */
		goto done;
	}
	sys = json_object_get(systems_of(&s), system);
	if (!sys) {
		rc = KERR(err, TT_ENOTFOUND, "no memory system named %s", system);
		goto done;
	}
	if (!(*out = json_deep_copy(sys)))
		rc = KOOM(err);
done:
	return session_end(&s, rc, err);
}
