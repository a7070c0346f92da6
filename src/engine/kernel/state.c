/* engine/kernel/state.c - helpers over recorded states the commands share
 * (see state.h). */
#include "engine/kernel/state.h"

#include <string.h>

#include "engine/kernel/context.h"
#include "util/mem.h"
#include "backends/dispatch.h"
#include "util/json.h"

static bool array_has(const json_t *arr, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v)
		if (strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

/* "k=v k=v" with each value cut at 16 characters, as tether-vcs shows states. */
int tt_short_state(tt_buf *out, const json_t *state)
{
	const char *k;
	json_t *v;
	bool first = true;
	if (!state || !json_object_size(state))
		return tt_buf_puts(out, "?");
	json_object_foreach((json_t *)state, k, v) {
		tt_buf text = TT_BUF_INIT;
		tt_pyv_str(&text, v);
		/* Count code points, not bytes. */
		size_t cut = 0, chars = 0;
		while (cut < text.len && chars < 16) {
			cut++;
			while (cut < text.len && ((unsigned char)text.ptr[cut] & 0xc0) == 0x80)
				cut++;
			chars++;
		}
		tt_buf_printf(out, "%s%s=%.*s%s", first ? "" : " ", k, (int)cut, text.ptr,
			      cut < text.len ? "\xe2\x80\xa6" : "");
		tt_buf_release(&text);
		first = false;
	}
	return out->failed;
}

int tt_engine_branch_scope(tt_repo *repo, const tt_manifest *m, char **out, tt_error *err)
{
	tt_backend *b;
	json_t *identity = NULL;
	int rc;
	*out = NULL;
	if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0)
		return rc;
	if (tt_backend_has(b, branch_scope))
		return tt_backend_branch_scope(b, m->locator, out, err);
	if ((rc = tt_backend_identity(b, m->locator, &identity, err)) == 0) {
		tt_buf sb = TT_BUF_INIT;
		tt_json_canonical(&sb, identity);
		if (!(*out = tt_buf_detach(&sb)))
			rc = tt_error_oom(err);
	}
	json_decref(identity);
	return rc;
}

int tt_engine_require_whole_scopes(tt_repo *repo, const json_t *selected, const char *verb, tt_error *err)
{
	json_t *scopes = json_object(), *named = json_object(), *missing = json_object(), *kinds = json_object();
	size_t i;
	json_t *kv;
	int rc = 0;
	if (!scopes || !named || !missing || !kinds) {
		rc = tt_error_oom(err);
		goto done;
	}
	json_array_foreach(selected, i, kv) {
		const tt_manifest *m = tt_manifests_find(&repo->objects, json_string_value(kv));
		if (m)
			json_object_set_new(kinds, m->kind, json_true());
	}
	/* (kind, scope) -> [member keys], every registered object of those kinds. */
	for (i = 0; i < repo->objects.n; i++) {
		const tt_manifest *m = &repo->objects.items[i];
		char *scope = NULL, *sk;
		if (!json_object_get(kinds, m->kind))
			continue;
		if ((rc = tt_engine_branch_scope(repo, m, &scope, err)) < 0)
			goto done;
		sk = tt_asprintf("%s|%s", m->kind, scope ? scope : "");
		free(scope);
		if (!sk) {
			rc = tt_error_oom(err);
			goto done;
		}
		json_t *members = json_object_get(scopes, sk);
		if (!members) {
			members = json_array();
			json_object_set_new(scopes, sk, members);
		}
		free(sk);
		json_array_append_new(members, json_string(m->key));
	}
	const char *sk;
	json_t *members;
	json_object_foreach(scopes, sk, members) {
		size_t left = 0, j;
		json_t *k;
		json_array_foreach(members, j, k)
			left += !array_has(selected, json_string_value(k));
		if (!left || left == json_array_size(members))
			continue;
		json_array_foreach(members, j, k)
			json_object_set_new(array_has(selected, json_string_value(k)) ? named : missing,
					    json_string_value(k), json_true());
	}
	if (!json_object_size(missing))
		goto done;
	{
		tt_buf nb = TT_BUF_INIT, mb = TT_BUF_INIT, again = TT_BUF_INIT;
		bool pull = strcmp(verb, "pull") == 0;
		/* Sorted: the keys are listed as the objects are (byte order). */
		for (i = 0; i < repo->objects.n; i++) {
			const char *key = repo->objects.items[i].key;
			if (json_object_get(named, key))
				tt_buf_printf(&nb, "%s%s", nb.len ? ", " : "", key);
			if (json_object_get(missing, key))
				tt_buf_printf(&mb, "%s%s", mb.len ? ", " : "", key);
			if (json_object_get(missing, key) || array_has(selected, key))
				tt_buf_printf(&again, "%s%s%s", again.len ? " " : "", pull ? "--key " : "", key);
		}
		size_t nn = json_object_size(named), nm = json_object_size(missing);
		rc = tt_error_set(err, TT_ECONFIG, "%s share%s a native branch space with %s: one pin and one "
				  "working branch for all of them, so they %s together; add %s to the selection "
				  "(`tether %s %s`)", nb.ptr ? nb.ptr : "", nn == 1 ? "s" : "", mb.ptr ? mb.ptr : "",
				  verb, nm == 1 ? "it" : "them", verb, again.ptr ? again.ptr : "");
		tt_buf_release(&nb);
		tt_buf_release(&mb);
		tt_buf_release(&again);
	}
done:
	json_decref(scopes);
	json_decref(named);
	json_decref(missing);
	json_decref(kinds);
	return rc;
}
