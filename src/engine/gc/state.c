/* engine/gc/state.c - the helpers every gc job shares (see state.h). */
#include "engine/gc/state.h"

#include <stdlib.h>
#include <string.h>

#include "backends/dispatch.h"
#include "backends/registry.h"
#include "core/ids.h"
#include "engine/kernel/context.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

bool tt_gc_kind_gone(const char *kind)
{
	return tt_kind_find(kind) == NULL;
}

bool tt_gc_set_has(const json_t *set, const char *k)
{
	return k && json_object_get(set, k) != NULL;
}

int tt_gc_set_add(json_t *set, const char *k)
{
	return json_object_set_new(set, k, json_true());
}

/* Append v to obj[k] (a list, made when absent). */
int tt_gc_map_append(json_t *obj, const char *k, json_t *v)
{
	json_t *list = json_object_get(obj, k);
	if (!v)
		return -1;
	if (!list) {
		if (!(list = json_array()) || json_object_set_new(obj, k, list) < 0) {
			json_decref(v);
			return -1;
		}
	}
	return json_array_append_new(list, v);
}

/* Does the list hold a value equal (as Python compares) to v? */
bool tt_gc_list_has_value(const json_t *list, const json_t *v)
{
	size_t i;
	json_t *x;
	json_array_foreach((json_t *)list, i, x)
		if (tt_pyv_eq(x, v))
			return true;
	return false;
}

/* Sort an array of strings in place (by code point, as Python's sorted()). */
int tt_gc_sort_strings(json_t *arr)
{
	size_t n = json_array_size(arr), i;
	json_t *copy = json_copy(arr), *v;
	const char **items = tt_calloc(n ? n : 1, sizeof *items);
	int rc = 0;
	if (!copy || !items) {
		rc = -1;
		goto done;
	}
	json_array_foreach(copy, i, v) items[i] = json_string_value(v) ? json_string_value(v) : "";
	qsort(items, n, sizeof *items, tt_cmp_cstr);
	json_array_clear(arr);
	for (i = 0; i < n && rc == 0; i++)
		rc = json_array_append_new(arr, json_string(items[i]));
done:
	free(items);
	json_decref(copy);
	return rc;
}

/* An error about one object, as gc reports it.  A backend words its errors
 * "[kind] ..." (as tether-vcs does), and the key the engine adds then does
 * not show in the text; gc walks every object of the history, so the text
 * names which one: "[kind] key: ...". */
int tt_gc_object_error(tt_error *err, const char *key, const char *kind)
{
	int code = tt_error_object(err, key, kind);
	if (!err || !err->message || !key || !kind || code == TT_ENOMEM)
		return code;
	size_t kl = strlen(kind), keyl = strlen(key);
	const char *m = err->message, *rest = m + kl + 3;
	if (m[0] != '[' || strncmp(m + 1, kind, kl) != 0 || m[kl + 1] != ']' || m[kl + 2] != ' ' ||
	    (strncmp(rest, key, keyl) == 0 && rest[keyl] == ':'))
		return code;
	char *named = tt_asprintf("[%s] %s: %s", kind, key, rest);
	char *hint = err->hint ? tt_strdup(err->hint) : NULL;
	if (named)
		tt_error_set(err, code, "%s", named);
	if (hint)
		tt_error_hint(err, "%s", hint);
	free(named);
	free(hint);
	return code;
}

/* kind + "|" + the backend's ref namespace (default: canon(identity)). */
int tt_gc_namespace_key(tt_backend *b, const char *kind, const json_t *loc, char **out, tt_error *err)
{
	char *ns = NULL;
	int rc;
	*out = NULL;
	if (tt_backend_has(b, ref_namespace)) {
		if ((rc = tt_backend_ref_namespace(b, loc, &ns, err)) < 0)
			return rc;
	} else {
		json_t *identity = NULL;
		tt_buf c = TT_BUF_INIT;
		if ((rc = tt_backend_identity(b, loc, &identity, err)) < 0)
			return rc;
		rc = tt_json_canonical(&c, identity);
		json_decref(identity);
		if (rc == 0)
			rc = tt_buf_check(&c, err, "identity");
		if (rc < 0) {
			tt_buf_release(&c);
			return rc;
		}
		ns = tt_buf_detach(&c);
	}
	*out = ns ? tt_asprintf("%s|%s", kind, ns) : NULL;
	free(ns);
	return *out ? 0 : tt_error_oom(err);
}

int tt_gc_note(tt_plan *plan, char *text, tt_error *err)
{
	int rc = text ? tt_plan_note(plan, text, err) : tt_error_oom(err);
	free(text);
	return rc;
}

/* "<8 hex>.<16>.<digits>" -> "<8 hex>.<16>": generations count as one pin. */
char *tt_gc_pin_of_listed(const char *id)
{
	char *ref = tt_asprintf("tether.%s", id), pid[TT_PIN_ID_MAX];
	if (!ref)
		return NULL;
	bool ok = tt_pin_id_of_ref(ref, pid);
	free(ref);
	return tt_strdup(ok ? pid : id);
}

/*
 * The remotes this clone shares the dataset through, quoted and joined
 * (NULL when it has none), read once per plan.  A clone with a remote is
 * one of a family: any other clone of it may commit the state a pin holds,
 * and its pin has the same id.
 */
int tt_gc_sharing_remotes(gc_state *s, const char **out, tt_error *err)
{
	if (!s->remotes_read) {
		json_t *names = NULL;
		int rc = tt_vcs_has(s->repo->vcs, remotes) ? tt_vcs_remotes(s->repo->vcs, &names, err) : 0;
		if (rc < 0)
			return rc;
		tt_buf t = TT_BUF_INIT;
		size_t i;
		json_t *v;
		json_array_foreach(names, i, v) {
			tt_buf_puts(&t, i ? ", " : "");
			tt_pyv_repr_str(&t, json_string_value(v), strlen(json_string_value(v)));
		}
		json_decref(names);
		if ((rc = tt_buf_check(&t, err, "remotes")) < 0) {
			tt_buf_release(&t);
			return rc;
		}
		s->remotes = t.len ? tt_buf_detach(&t) : NULL;
		tt_buf_release(&t);
		s->remotes_read = true;
	}
	*out = s->remotes;
	return 0;
}

/*
 * Why some remote may hold commits that name pins this clone cannot see
 * (NULL: every remote's branches and tags are here), asked once per plan:
 * a remote with a branch or tag whose commit was not fetched, or one that
 * cannot be listed.
 */
int tt_gc_remote_unfetched(gc_state *s, const char **out, tt_error *err)
{
	const char *names;
	int rc;
	if ((rc = tt_gc_sharing_remotes(s, &names, err)) < 0)
		return rc;
	if (!s->unfetched_read && names) {
		json_t *list = NULL;
		tt_buf t = TT_BUF_INIT;
		size_t i, j;
		json_t *v, *r;
		if ((rc = tt_vcs_remotes(s->repo->vcs, &list, err)) < 0)
			return rc;
		json_array_foreach(list, i, v) {
			const char *name = json_string_value(v);
			json_t *refs = NULL;
			tt_error e = TT_ERROR_INIT;
			if (!tt_vcs_has(s->repo->vcs, remote_unfetched))
				break;
			tt_buf_puts(&t, t.len ? "; " : "");
			if (tt_vcs_remote_unfetched(s->repo->vcs, name, &refs, &e) < 0) {
				tt_buf_printf(&t, "%s, whose commits may name it: fetch it (or remove the remote) "
					      "first", tt_error_text(&e));
			} else if (json_array_size(refs)) {
				tt_buf_puts(&t, "remote ");
				tt_pyv_repr_str(&t, name, strlen(name));
				tt_buf_printf(&t, " has %zu branch(es)/tag(s) this clone has not fetched (",
					      json_array_size(refs));
				json_array_foreach(refs, j, r) {
					if (j == 3) {
						tt_buf_puts(&t, ", ...");
						break;
					}
					tt_buf_printf(&t, "%s%s", j ? ", " : "", json_string_value(r));
				}
				tt_buf_puts(&t, "), whose commits may name it: fetch them first");
			} else if (t.len) {
				tt_buf_truncate(&t, t.len - 2);
			}
			json_decref(refs);
			tt_error_clear(&e);
		}
		json_decref(list);
		if ((rc = tt_buf_check(&t, err, "remotes")) < 0) {
			tt_buf_release(&t);
			return rc;
		}
		s->unfetched = t.len ? tt_buf_detach(&t) : NULL;
		tt_buf_release(&t);
	}
	s->unfetched_read = true;
	*out = s->unfetched;
	return 0;
}

const tt_manifest *tt_gc_manifest_at(const gc_state *s, size_t i)
{
	return i < s->w.norder ? &s->w.memo.items[s->w.order[i]] : s->working[i - s->w.norder];
}

/* Every manifest gc weighs: those of visible history, then the working
 * tree's and the live checkouts'. */
size_t tt_gc_manifest_count(const gc_state *s)
{
	return s->w.norder + s->nworking;
}

/* The identity of m's store, by its kind's backend (errors name m). */
int tt_gc_manifest_identity(tt_repo *repo, const tt_manifest *m, tt_backend **b,
			     json_t **identity, tt_error *err)
{
	int rc;
	*identity = NULL;
	if ((rc = tt_engine_backend(repo, m->kind, b, err)) < 0 ||
	    (rc = tt_backend_identity(*b, m->locator, identity, err)) < 0)
		tt_gc_object_error(err, m->key, m->kind);
	return rc;
}
