/* engine/kernel/select.c - the objects a command's selectors name (see
 * select.h). */
#include "engine/kernel/select.h"

#include <string.h>

#include "util/mem.h"
#include "engine/kernel/keyhint.h"

int tt_engine_select(tt_repo *repo, const char *const *selectors, size_t n, json_t **out,
		     tt_error *err)
{
	json_t *chosen = json_object(), *keys = json_array();
	tt_buf unknown = TT_BUF_INIT, empty = TT_BUF_INIT;
	const char *first_unknown = NULL;
	int rc = 0;
	*out = NULL;
	if (!chosen || !keys) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t s = 0; s < n; s++) {
		const char *sel = selectors[s];
		size_t sl = strlen(sel);
		bool prefix = sl && sel[sl - 1] == '/', hit = false;
		for (size_t i = 0; i < repo->objects.n; i++) {
			const char *key = repo->objects.items[i].key;
			if (prefix ? strncmp(key, sel, sl) == 0 : strcmp(key, sel) == 0) {
				json_object_set(chosen, key, json_true());
				hit = true;
			}
		}
		if (!hit && !prefix && !unknown.len)
			first_unknown = sel;
		if (!hit)
			tt_buf_printf(prefix ? &empty : &unknown, "%s%s", (prefix ? empty.len : unknown.len) ? ", " : "", sel);
	}
	if (unknown.len || empty.len) {
		rc = tt_error_set(err, TT_ECONFIG, "%s%s%s%s%s", unknown.len ? "no such object: " : "",
				  unknown.ptr, unknown.len && empty.len ? "; " : "",
				  empty.len ? "no object under " : "", empty.ptr);
		if (first_unknown && !strchr(unknown.ptr, ','))
			tt_engine_key_hint(err, &repo->objects, first_unknown);
		goto done;
	}
	for (size_t i = 0; i < repo->objects.n; i++) {
		const char *key = repo->objects.items[i].key;
		if (!n || json_object_get(chosen, key))
			json_array_append_new(keys, json_string(key));
	}
	*out = keys;
	keys = NULL;
done:
	json_decref(chosen);
	json_decref(keys);
	tt_buf_release(&unknown);
	tt_buf_release(&empty);
	return rc;
}
