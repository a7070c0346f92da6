/* core/workspace.c - the per-checkout state file (see workspace.h). */
#include "core/workspace.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "core/layout.h"
#include "core/tomlfile.h"
#include "util/fs.h"
#include "util/mem.h"
#include "util/toml.h"

/* The tables, in the order tether-vcs writes them. */
#define TABLES(X) X(working_refs) X(pending_forks) X(pending_resets) X(fork_points) \
	X(base_states) X(last_snapshot) X(last_snapshot_errors)

static int init_tables(tt_workspace *w)
{
#define INIT(f) if (!w->f && !(w->f = json_object())) return -1;
	TABLES(INIT)
#undef INIT
	return 0;
}

int tt_workspace_new(tt_workspace *w, tt_error *err)
{
	char id[33];
	memset(w, 0, sizeof *w);
	if (tt_random_hex(id, 32, err) < 0)
		return err->code;
	w->workspace_id = tt_strdup(id);
	if (!w->workspace_id || init_tables(w) < 0) {
		tt_workspace_release(w);
		return tt_error_oom(err);
	}
	return 0;
}

void tt_workspace_release(tt_workspace *w)
{
	if (!w)
		return;
	free(w->workspace_id);
	free(w->bookmark);
	free(w->last_snapshot_at);
#define FREE(f) json_decref(w->f);
	TABLES(FREE)
#undef FREE
	memset(w, 0, sizeof *w);
}

int tt_workspace_set_bookmark(tt_workspace *w, const char *bookmark, tt_error *err)
{
	char *b = bookmark ? tt_strdup(bookmark) : NULL;
	if (bookmark && !b)
		return tt_error_oom(err);
	free(w->bookmark);
	w->bookmark = b;
	return 0;
}

int tt_workspace_parse(tt_workspace *w, const char *text, size_t len, const char *file, tt_error *err)
{
	tt_toml_value *doc = NULL;
	const char *s;
	int rc;
	memset(w, 0, sizeof *w);
	if ((rc = tt_toml_parse(&doc, text, len, file, err)) < 0)
		return rc;
	const struct {
		const char *key;
		char **slot;
	} strs[] = {
		{ "workspace_id", &w->workspace_id },
		{ "bookmark", &w->bookmark },
		{ "last_snapshot_at", &w->last_snapshot_at },
	};
	for (size_t i = 0; i < 3; i++) {
		s = NULL;
		if ((rc = tt_toml_get_str(doc, strs[i].key, &s, file, "workspace", err)) < 0)
			goto done;
		if (s && *s) {
			if (!(*strs[i].slot = tt_strdup(s))) {
				rc = tt_error_oom(err);
				goto done;
			}
		}
	}
#define LOAD(f)                                                                          \
	{                                                                                \
		const tt_toml_value *t = NULL;                                              \
		if ((rc = tt_toml_get_table(doc, #f, &t, file, "workspace", err)) < 0)   \
			goto done;                                                       \
		if (t && !(w->f = tt_toml_to_json(t, file, err))) {                         \
			rc = err->code ? err->code : tt_error_oom(err);                  \
			goto done;                                                       \
		}                                                                        \
	}
	TABLES(LOAD)
#undef LOAD
	if (!w->workspace_id) {
		char id[33];
		if ((rc = tt_random_hex(id, 32, err)) < 0)
			goto done;
		w->workspace_id = tt_strdup(id);
	}
	if (!w->workspace_id || init_tables(w) < 0)
		rc = tt_error_oom(err);
done:
	tt_toml_free(doc);
	if (rc < 0)
		tt_workspace_release(w);
	return rc;
}

int tt_workspace_render(tt_buf *out, const tt_workspace *w, tt_error *err)
{
	json_t *doc = json_object();
	tt_toml_value *t = NULL;
	int rc = -1;
	if (!doc)
		return tt_error_oom(err);
	json_object_set_new(doc, "workspace_id", json_string(w->workspace_id));
	if (w->bookmark)
		json_object_set_new(doc, "bookmark", json_string(w->bookmark));
	if (w->last_snapshot_at)
		json_object_set_new(doc, "last_snapshot_at", json_string(w->last_snapshot_at));
#define PUT(f) if (w->f && json_object_size(w->f)) json_object_set(doc, #f, w->f);
	TABLES(PUT)
#undef PUT
	if (!(t = tt_toml_from_json(doc, err))) {
		rc = err && err->code ? err->code : TT_ERROR;
		goto done;
	}
	rc = tt_toml_write(out, t, err);
done:
	tt_toml_free(t);
	json_decref(doc);
	return rc;
}

int tt_workspace_load(tt_workspace *w, const char *root, int *exists, tt_error *err)
{
	char *path = tt_tether_path(root, TT_WORKSPACE_FILENAME);
	tt_buf text = TT_BUF_INIT;
	int rc;
	if (!path)
		return tt_error_oom(err);
	*exists = tt_is_file(path);
	if (!*exists)
		rc = tt_workspace_new(w, err);
	else if ((rc = tt_read_file(path, &text, 64u << 20, err)) == 0)
		rc = tt_workspace_parse(w, text.ptr, text.len, ".tether/" TT_WORKSPACE_FILENAME, err);
	free(path);
	tt_buf_release(&text);
	return rc;
}

int tt_workspace_save(const tt_workspace *w, const char *root, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	char *path = tt_tether_path(root, TT_WORKSPACE_FILENAME);
	int rc = path ? tt_workspace_render(&b, w, err) : tt_error_oom(err);
	if (rc == 0)
		rc = tt_write_file_atomic(path, b.ptr, b.len, 0644, err);
	free(path);
	tt_buf_release(&b);
	return rc;
}

int tt_workspace_claim(tt_workspace *w, const char *root, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	char *path = tt_tether_path(root, TT_WORKSPACE_FILENAME);
	int rc = path ? tt_workspace_render(&b, w, err) : tt_error_oom(err);
	if (rc == 0) {
		rc = tt_write_file_exclusive(path, b.ptr, b.len, 0644, err);
		if (rc == TT_EEXISTS) {
			int exists;
			tt_error_clear(err);
			tt_workspace_release(w);
			rc = tt_workspace_load(w, root, &exists, err);
		}
	}
	free(path);
	tt_buf_release(&b);
	return rc;
}

void tt_workspace_forget_key(tt_workspace *w, const char *key, int keep_working_ref)
{
	if (!keep_working_ref)
		json_object_del(w->working_refs, key);
	json_object_del(w->pending_forks, key);
	json_object_del(w->pending_resets, key);
	json_object_del(w->fork_points, key);
	json_object_del(w->base_states, key);
}
