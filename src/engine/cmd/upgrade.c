/*
 * engine/cmd/upgrade.c - `upgrade`: bring a dataset an older tether-vcs wrote
 * to format 5 (TT_CONFIG_VERSION), as tether-vcs 0.1.0b7's one migration
 * does: its parts run on what the dataset shows, tether.toml records the
 * new version once at the end, and one VCS commit lands it.
 *
 * The parts, oldest first, each only for a dataset recorded below the
 * version it was made for:
 *   - (below 4) dataset-namespaced refs: pins and working branches renamed
 *     in every store (in place where the kind renames, else pinned or
 *     forked anew and the old one dropped), history rewritten to the new
 *     names (plan_v2, apply_v2).  A dataset whose VCS cannot rewrite its
 *     history, or whose kind cannot rename its refs here, is refused
 *     before anything is written, naming tether-vcs 0.1.0b7's `tether
 *     upgrade` (v2_refusals);
 *   - (below 4) content-hashed file states, no write policy: `write = ...`
 *     lines dropped, local `file` states re-read into content hashes, a
 *     workspace from before bookmarks put on one as init would;
 *   - (below 5) one manifest file per key, absolute local paths;
 *   - (below 5) 0.1.0b3 identities and states: store-index records given
 *     the identity their store has now, listings stored again under the
 *     name a `file` object's new identity gives them, and states 0.1.0b3
 *     recorded in a form 0.1.0b4 changed (directories with symlinks, Lance
 *     states off main, Neon next_xid) carried forward when the data is
 *     unchanged.
 * While the parts write, a marker in .tether/cache says the manifests'
 * uncommitted changes are the upgrade's own, so the rerun after a kill
 * plans what is left and finishes instead of refusing a dirty tree.
 */
#include "engine/cmd/upgrade.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backends/backend.h"
#include "backends/dispatch.h"
#include "backends/file/file.h"
#include "storage/store.h"
#include "core/config.h"
#include "core/ids.h"
#include "core/kinds.h"
#include "core/pyvalue.h"
#include "core/layout.h"
#include "core/tomlfile.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/kernel/context.h"
#include "engine/kernel/preconditions.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/planned.h"
#include "util/fault.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/toml.h"
#include "vcs/dispatch.h"
#include "backends/registry.h"

/* [tether] version tether.toml's text records (1 when absent), or -1
 * when it cannot be read. */
static long long version_in(const char *text, size_t len)
{
	tt_error ig = TT_ERROR_INIT;
	tt_toml_value *doc = NULL;
	const tt_toml_value *tether = NULL;
	int64_t version = 1;
	long long out = -1;
	if (text && tt_toml_parse(&doc, text, len, TT_CONFIG_FILENAME, &ig) == 0 &&
	    tt_toml_get_table(doc, "tether", &tether, TT_CONFIG_FILENAME, "", &ig) == 0 &&
	    tt_toml_get_int(tether, "version", &version, TT_CONFIG_FILENAME, "[tether]", &ig) == 0)
		out = (long long)version;
	tt_toml_free(doc);
	tt_error_clear(&ig);
	return out;
}

/* The dataset's path relative to the VCS root ("" at the root). */
static char *dataset_rel(tt_repo *repo)
{
	return tt_strdup(tt_engine_dataset_rel(repo));
}

/*
 * The version the last commit's tether.toml records when it is older than
 * the working tree's current one: an upgrade killed after writing
 * tether.toml and before its VCS commit landed (0 when there is none).
 */
static int interrupted_from(tt_repo *repo)
{
	char *rel = dataset_rel(repo), *path = NULL, *head = NULL, *text = NULL;
	size_t len = 0;
	long long v = 0;
	tt_error ig = TT_ERROR_INIT;
	if (rel && (path = *rel ? tt_asprintf("%s/%s", rel, TT_CONFIG_FILENAME) : tt_strdup(TT_CONFIG_FILENAME)) &&
	    (head = tt_engine_vcs_head(repo)) &&
	    tt_vcs_read_file_at(repo->vcs, head, path, &text, &len, &ig) == 0 && text)
		v = version_in(text, len);
	tt_error_clear(&ig);
	free(rel);
	free(path);
	free(head);
	free(text);
	return v > 0 && v < TT_CONFIG_VERSION && repo->config.version >= TT_CONFIG_VERSION ? (int)v : 0;
}

int tt_repo_open_outdated(const char *start_dir, tt_repo **out, tt_error *err)
{
	*out = NULL;
	tt_config_accept_outdated(true);
	tt_manifests_accept_misplaced(true);
	int rc = tt_repo_open(start_dir, out, err);
	tt_config_accept_outdated(false);
	tt_manifests_accept_misplaced(false);
	return rc;
}

/* --- what the parts share ------------------------------------------------- */

static const char P_NS[] = "dataset-namespaced refs";
static const char P_CONTENT[] = "content-hashed file states; no write policy";
static const char P_LAYOUT[] = "one manifest file per key; absolute local paths";
static const char P_IDS[] = "0.1.0b3 identities and states";

static int cmp_cstr(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Paths compared segment by segment (as Python sorts pathlib paths). */
static int cmp_path(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
	for (;;) {
		size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
		size_t n = la < lb ? la : lb;
		int c = memcmp(a, b, n);
		if (c)
			return c;
		if (la != lb)
			return la < lb ? -1 : 1;
		if (!a[la] || !b[lb])
			return !a[la] && !b[lb] ? 0 : !a[la] ? -1 : 1;
		a += la + 1;
		b += lb + 1;
	}
}

/* The working tree's objects in Python's sorted(keys) order (borrowed). */
static const tt_manifest **objects_by_key(tt_repo *repo)
{
	const tt_manifest **out = tt_calloc(repo->objects.n + 1, sizeof *out);
	if (!out)
		return NULL;
	for (size_t i = 0; i < repo->objects.n; i++)
		out[i] = &repo->objects.items[i];
	for (size_t i = 1; i < repo->objects.n; i++)
		for (size_t j = i; j > 0 && strcmp(out[j - 1]->key, out[j]->key) > 0; j--) {
			const tt_manifest *t = out[j];
			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return out;
}

/* str(v), or NULL on OOM. */
static char *py_str(const json_t *v)
{
	tt_buf b = TT_BUF_INIT;
	if (tt_pyv_str(&b, v) < 0) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

static bool is_ds8(const char *s)
{
	for (int i = 0; i < 8; i++)
		if (!s[i] || !strchr("0123456789abcdef", s[i]))
			return false;
	return true;
}

/* A pin in the pre-namespace format ("<hash>", not "<ds8>.<hash>"). */
static bool old_pin(const tt_manifest *m)
{
	return m->pin_id && !(strlen(m->pin_id) > 9 && is_ds8(m->pin_id) && m->pin_id[8] == '.');
}

/* Every "*.toml" under .tether/objects, relative to it, in sorted path
 * order (a JSON array). */
static int list_tomls(const char *objdir, const char *rel, json_t *out, int depth, tt_error *err)
{
	char *dir = *rel ? tt_path_join(objdir, rel) : tt_strdup(objdir);
	DIR *d = dir ? opendir(dir) : NULL;
	struct dirent *e;
	int rc = 0;
	if (!dir)
		return tt_error_oom(err);
	if (!d || depth > 64) {
		if (d)
			closedir(d);
		free(dir);
		return 0;
	}
	while (rc == 0 && (e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *sub = *rel ? tt_asprintf("%s/%s", rel, e->d_name) : tt_strdup(e->d_name);
		char *full = sub ? tt_path_join(objdir, sub) : NULL;
		struct stat st;
		if (!full)
			rc = tt_error_oom(err);
		else if (lstat(full, &st) == 0 && S_ISDIR(st.st_mode))
			rc = list_tomls(objdir, sub, out, depth + 1, err);
		else if (lstat(full, &st) == 0 && S_ISREG(st.st_mode) && strlen(sub) > 5 &&
			 strcmp(sub + strlen(sub) - 5, ".toml") == 0)
			json_array_append_new(out, json_string(sub));
		free(sub);
		free(full);
	}
	closedir(d);
	free(dir);
	if (rc == 0 && depth == 0) {
		size_t n = json_array_size(out);
		const char **names = tt_calloc(n + 1, sizeof *names);
		if (!names)
			return tt_error_oom(err);
		for (size_t i = 0; i < n; i++)
			names[i] = json_string_value(json_array_get(out, i));
		qsort(names, n, sizeof *names, cmp_path);
		json_t *sorted = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(sorted, json_string(names[i]));
		free(names);
		json_array_clear(out);
		json_array_extend(out, sorted);
		json_decref(sorted);
	}
	return rc;
}

static json_t *manifest_files(tt_repo *repo, tt_error *err)
{
	char *objdir = tt_tether_path(repo->root, TT_OBJECTS_DIR);
	json_t *out = json_array();
	if (!objdir || !out || list_tomls(objdir, "", out, 0, err) < 0) {
		if (!objdir || !out)
			tt_error_oom(err);
		json_decref(out);
		out = NULL;
	}
	free(objdir);
	return out;
}

static char *read_text(const char *path)
{
	tt_buf b = TT_BUF_INIT;
	tt_error ig = TT_ERROR_INIT;
	char *out = NULL;
	if (tt_read_file(path, &b, 4u << 20, &ig) == 0)
		out = tt_buf_detach(&b);
	tt_buf_release(&b);
	tt_error_clear(&ig);
	return out;
}

/* Whether a line is an alpha manifest's `write = "fork|track|direct"`. */
static bool write_line(const char *line, size_t len)
{
	static const char *const lines[] = { "write = \"fork\"", "write = \"track\"", "write = \"direct\"" };
	for (size_t i = 0; i < 3; i++)
		if (len == strlen(lines[i]) && memcmp(line, lines[i], len) == 0)
			return true;
	return false;
}

/* The text without its write-policy lines (NULL: it has none). */
static char *drop_write_lines(const char *text)
{
	tt_buf b = TT_BUF_INIT;
	bool found = false;
	for (const char *p = text; *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		if (nl && write_line(p, len))
			found = true;
		else
			tt_buf_put(&b, p, nl ? len + 1 : len);
		p += nl ? len + 1 : len;
	}
	if (!found) {
		tt_buf_release(&b);
		return NULL;
	}
	if (!b.ptr)
		return tt_strdup("");
	return tt_buf_detach(&b);
}

/* A plan action with {"migration": n} (and more) as its params. */
static int action(tt_plan *plan, const char *op, const char *key, const char *kind, const char *target,
		  const char *detail, int migration, json_t *more, tt_error *err)
{
	json_t *params = json_pack("{s:i}", "migration", migration);
	if (more)
		json_object_update(params, more);
	int rc = params ? tt_plan_action(plan, op, key, kind, target, detail, params, err) : tt_error_oom(err);
	json_decref(params);
	json_decref(more);
	return rc;
}

/* The plan's actions of one op and migration. */
typedef struct planned_action {
	const char *op, *key, *kind, *target;
	const json_t *params;
} planned_action;

/* The plan's actions of op and migration, in order (*out caller-frees;
 * NULL with n 0 when there are none, or on OOM: *oom says which). */
static size_t planned(const tt_plan *plan, const char *op, int migration, planned_action **out, bool *oom)
{
	size_t n = 0, total = tt_plan_action_count(plan);
	tt_plan_action_view v;
	*out = total ? tt_calloc(total, sizeof **out) : NULL;
	*oom = total && !*out;
	for (size_t i = 0; *out && i < total; i++) {
		if (!tt_plan_action_at(plan, i, &v) || strcmp(v.op, op) != 0 ||
		    json_integer_value(json_object_get(v.params, "migration")) != migration)
			continue;
		(*out)[n++] = (planned_action){ v.op, v.key, v.kind, v.target, v.params };
	}
	return n;
}

static int reload_objects(tt_repo *repo, tt_error *err)
{
	tt_manifests_release(&repo->objects);
	return tt_manifests_load(&repo->objects, repo->root, err);
}

/* Store a listing under .tether/listings unless it is there already. */
static int write_listing(tt_repo *repo, const char *name, const char *text, tt_error *err)
{
	char *rel = tt_asprintf(TT_DIR "/" TT_LISTINGS_DIR "/%s", name);
	char *path = rel ? tt_path_join(repo->root, rel) : NULL;
	char *dir = path ? tt_dirname(path) : NULL;
	int rc = 0;
	if (!dir)
		rc = tt_error_oom(err);
	else if ((rc = tt_refuse_links(repo->root, rel, err)) == 0 && !tt_exists(path) &&
		 (rc = tt_mkdirs(dir, 0755, err)) == 0)
		rc = tt_write_file_atomic(path, text, strlen(text), 0644, err);
	free(rel);
	free(path);
	free(dir);
	return rc;
}

/* The listing name of a state of m (identity from its locator now). */
static int listing_name_of(tt_backend *b, const tt_manifest *m, const json_t *identity, const json_t *state,
			   char name[TT_LISTING_NAME_MAX], tt_error *err)
{
	json_t *content = tt_content_state(b->kind, state);
	int rc = content ? tt_listing_name(name, m->kind, identity, content, err) : tt_error_oom(err);
	json_decref(content);
	return rc;
}

/* The backend's listing of m at state, stored under its name (when the
 * kind gives one). */
static int store_listing(tt_repo *repo, tt_backend *b, const tt_manifest *m, const json_t *state, tt_error *err)
{
	char *text = NULL, name[TT_LISTING_NAME_MAX];
	json_t *identity = NULL;
	int rc = 0;
	if (!tt_backend_has(b, listing))
		return 0;
	if ((rc = tt_backend_listing(b, m->locator, state, &text, err)) == 0 && text &&
	    (rc = tt_backend_identity(b, m->locator, &identity, err)) == 0 &&
	    (rc = listing_name_of(b, m, identity, state, name, err)) == 0)
		rc = write_listing(repo, name, text, err);
	json_decref(identity);
	free(text);
	return rc;
}

/* Every manifest history holds under the dataset's .tether/objects, parsed
 * (one JSON array of text blobs would do; we keep parsed manifests). */
typedef struct hist_manifests {
	tt_manifest *items;
	size_t n, alloc;
	json_t *seen;  /* texts already parsed */
	bool old_pin;  /* one of them has a pre-namespace pin */
} hist_manifests;

static int hist_cb(void *ctx, const char *commit, json_t *files, tt_error *err)
{
	hist_manifests *h = ctx;
	const char *path;
	json_t *text;
	(void)commit;
	json_object_foreach(files, path, text) {
		size_t pl = strlen(path);
		const char *t = json_string_value(text);
		if (pl < 5 || strcmp(path + pl - 5, ".toml") != 0 || !t || json_object_get(h->seen, t))
			continue;
		json_object_set_new(h->seen, t, json_true());
		tt_manifest m;
		tt_error ig = TT_ERROR_INIT;
		if (tt_manifest_parse(&m, t, strlen(t), path, &ig) < 0) {
			tt_error_clear(&ig);
			continue;
		}
		if (old_pin(&m))
			h->old_pin = true;
		if (TT_ARRAY_GROW(h->items, h->alloc, h->n + 1) < 0) {
			tt_manifest_release(&m);
			return tt_error_oom(err);
		}
		h->items[h->n++] = m;
	}
	return 0;
}

static int history_manifests(tt_repo *repo, hist_manifests *h, tt_error *err)
{
	char *reldir = tt_engine_objects_reldir(repo);
	memset(h, 0, sizeof *h);
	h->seen = json_object();
	if (!reldir || !h->seen) {
		free(reldir);
		return tt_error_oom(err);
	}
	int rc = tt_vcs_iter_history_files(repo->vcs, reldir, hist_cb, h, err);
	free(reldir);
	return rc < 0 ? rc : 0;
}

static void hist_release(hist_manifests *h)
{
	for (size_t i = 0; i < h->n; i++)
		tt_manifest_release(&h->items[i]);
	free(h->items);
	json_decref(h->seen);
	memset(h, 0, sizeof *h);
}

/* --- v2: does the dataset need its refs namespaced? ------------------------ */

static int needs_namespacing(tt_repo *repo, bool *out, tt_error *err)
{
	*out = !repo->config.dataset_id[0];
	for (size_t i = 0; !*out && i < repo->objects.n; i++)
		*out = old_pin(&repo->objects.items[i]);
	if (*out)
		return 0;
	hist_manifests h;
	int rc = history_manifests(repo, &h, err);
	*out = h.old_pin;
	hist_release(&h);
	return rc;
}

/* --- v3: content-hashed local file states; no write policy ------------------- */

static bool local_file_object(const tt_manifest *m)
{
	const char *type = json_string_value(json_object_get(m->state, "type"));
	return strcmp(m->kind, "file") == 0 && m->state && type &&
	       (strcmp(type, "file") == 0 || strcmp(type, "dir") == 0);
}

static bool content_hashed(const tt_manifest *m)
{
	const char *type = json_string_value(json_object_get(m->state, "type"));
	return type && strcmp(type, "file") == 0 && json_object_get(m->state, "sha256");
}

/* Keys (from their paths) of manifests still carrying a write policy. */
static json_t *manifests_with_write(tt_repo *repo, tt_error *err)
{
	json_t *files = manifest_files(repo, err), *out = json_array();
	char *objdir = tt_tether_path(repo->root, TT_OBJECTS_DIR);
	size_t i;
	json_t *v;
	if (!files || !out || !objdir) {
		json_decref(files);
		json_decref(out);
		free(objdir);
		if (!err->code)
			tt_error_oom(err);
		return NULL;
	}
	json_array_foreach(files, i, v) {
		char *full = tt_path_join(objdir, json_string_value(v));
		char *text = full ? read_text(full) : NULL, *dropped = text ? drop_write_lines(text) : NULL;
		if (dropped) {
			const char *rel = json_string_value(v);
			json_array_append_new(out, json_stringn(rel, strlen(rel) - 5));
		}
		free(dropped);
		free(text);
		free(full);
	}
	json_decref(files);
	free(objdir);
	return out;
}

static int needs_content_hashes(tt_repo *repo, bool *out, tt_error *err)
{
	json_t *w = manifests_with_write(repo, err);
	if (!w)
		return err->code;
	*out = json_array_size(w) > 0 || !repo->ws.bookmark;
	json_decref(w);
	for (size_t i = 0; !*out && i < repo->objects.n; i++)
		if (local_file_object(&repo->objects.items[i]) && !content_hashed(&repo->objects.items[i]))
			*out = true;
	return 0;
}

static int plan_v3(tt_repo *repo, tt_plan *plan, tt_error *err)
{
	json_t *w = manifests_with_write(repo, err);
	size_t i, acted = 0;
	json_t *v;
	int rc = 0;
	if (!w)
		return err->code;
	json_array_foreach(w, i, v) {
		if ((rc = action(plan, "rewrite-manifest", json_string_value(v), NULL, NULL,
				 "drop the write policy: whether writes fork or land upstream is now the bookmark "
				 "the working copy is on, not a per-object setting", 3, NULL, err)) < 0)
			break;
		acted++;
	}
	json_decref(w);
	for (size_t k = 0; rc == 0 && k < repo->objects.n; k++) {
		const tt_manifest *m = &repo->objects.items[k];
		if (!local_file_object(m))
			continue;
		if (content_hashed(m)) {
			char *note = tt_asprintf("%s: already content-hashed", m->key);
			rc = note ? tt_plan_note(plan, note, err) : tt_error_oom(err);
			free(note);
			continue;
		}
		const char *type = json_string_value(json_object_get(m->state, "type"));
		const json_t *uri = json_object_get(m->locator, "uri");
		const json_t *path = json_object_get(m->locator, "path");
		char *target = tt_pyv_truthy(uri) ? py_str(uri) : path ? py_str(path) : tt_strdup("");
		char *detail = tt_asprintf("re-read the %s and record its content hash in place of the mtime-based "
					   "state (reads every byte once; the stat cache remembers it)",
					   strcmp(type, "file") == 0 ? "file" : "directory");
		rc = target && detail ? action(plan, "refingerprint", m->key, m->kind, target, detail, 3, NULL, err)
				      : tt_error_oom(err);
		acted++;
		free(target);
		free(detail);
	}
	if (rc == 0 && !acted)
		rc = tt_plan_note(plan, "v3: no local file objects to re-fingerprint and no manifests carrying a write "
				  "policy", err);
	if (rc == 0 && !repo->ws.bookmark) {
		char *trunk = tt_pyv_repr_dup(tt_config_trunk(&repo->config));
		char *note = trunk ? tt_asprintf("v3: this workspace will work on the trunk bookmark %s (created if the "
						 "VCS has none), or on the bookmark its working copy is on", trunk)
				   : NULL;
		rc = note ? tt_plan_note(plan, note, err) : tt_error_oom(err);
		free(note);
		free(trunk);
	}
	return rc;
}

/* Where a workspace from before bookmarks works now: as init puts one. */
static int adopt_trunk(tt_repo *repo, char **out, tt_error *err)
{
	const char *trunk = tt_config_trunk(&repo->config);
	char *here = NULL;
	int rc;
	*out = NULL;
	if ((rc = tt_vcs_current_bookmark(repo->vcs, &here, err)) < 0)
		return rc;
	if (strcmp(tt_vcs_kind(repo->vcs), "git") == 0) {
		if (here && strcmp(here, trunk) != 0) {
			json_object_set_new(repo->config.vcs, "trunk", json_string(here));
			*out = here;
			return tt_config_save(&repo->config, repo->root, err);
		}
		free(here);
		if (!here && (rc = tt_vcs_park(repo->vcs, trunk, err)) < 0)
			return rc;
		*out = tt_strdup(trunk);
		return *out ? 0 : tt_error_oom(err);
	}
	json_t *marks = NULL;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) < 0) {
		free(here);
		return rc;
	}
	bool have = json_object_get(marks, trunk) != NULL;
	json_decref(marks);
	if (here) {
		*out = here;
		return 0;
	}
	if (!have && (rc = tt_vcs_park(repo->vcs, trunk, err)) < 0)
		return rc;
	*out = tt_strdup(trunk);
	return *out ? 0 : tt_error_oom(err);
}

static json_t *misplaced_manifests(tt_repo *repo, tt_error *err);

/*
 * Write m's manifest in the file it is read from.  A manifest an alpha left
 * at another path than its key's ("d.x" in d.toml) is moved by the v4 part
 * after this one; written at its key's path here, it would leave the old
 * file behind for v4 to find colliding with it (tether-vcs 0.1.0b7 stops
 * there, with both files in the tree).
 */
static int save_where_it_is(tt_repo *repo, const tt_manifest *m, tt_error *err)
{
	json_t *moves = misplaced_manifests(repo, err), *v;
	const char *at = NULL;
	size_t i;
	int rc;
	if (!moves)
		return err->code;
	json_array_foreach(moves, i, v) if (strcmp(json_string_value(json_array_get(v, 2)), m->key) == 0) at =
		json_string_value(json_array_get(v, 0));
	if (!at) {
		json_decref(moves);
		return tt_manifest_save(m, repo->root, err);
	}
	tt_buf b = TT_BUF_INIT;
	char *objdir = tt_tether_path(repo->root, TT_OBJECTS_DIR), *path = objdir ? tt_path_join(objdir, at) : NULL;
	if (!path)
		rc = tt_error_oom(err);
	else if ((rc = tt_manifest_render(&b, m, err)) == 0)
		rc = tt_write_file_atomic(path, b.ptr, b.len, 0644, err);
	tt_buf_release(&b);
	free(objdir);
	free(path);
	json_decref(moves);
	return rc;
}

static int apply_v3(tt_repo *repo, const tt_plan *plan, json_t *report, tt_error *err)
{
	json_t *files = manifest_files(repo, err), *rewritten = json_object_get(report, "rewritten_manifests");
	char *objdir = tt_tether_path(repo->root, TT_OBJECTS_DIR);
	json_t *v, *failed = json_object_get(report, "failed");
	size_t i;
	int rc = 0;
	if (!files || !objdir) {
		json_decref(files);
		free(objdir);
		return err->code ? err->code : tt_error_oom(err);
	}
	json_array_foreach(files, i, v) {
		char *full = tt_path_join(objdir, json_string_value(v));
		char *text = full ? read_text(full) : NULL, *dropped = text ? drop_write_lines(text) : NULL;
		if (dropped && (rc = tt_write_file_atomic(full, dropped, strlen(dropped), 0644, err)) == 0) {
			const char *rel = json_string_value(v);
			json_array_append_new(rewritten, json_stringn(rel, strlen(rel) - 5));
		}
		free(dropped);
		free(text);
		free(full);
		if (rc < 0)
			break;
	}
	json_decref(files);
	free(objdir);
	if (rc < 0 || (json_array_size(rewritten) && (rc = reload_objects(repo, err)) < 0))
		return rc;
	planned_action *acts = NULL;
	bool oom;
	size_t n = planned(plan, "refingerprint", 3, &acts, &oom);
	tt_backend *b = NULL;
	if (oom)
		return tt_error_oom(err);
	if (n && (rc = tt_engine_backend(repo, "file", &b, err)) < 0) {
		free(acts);
		return rc;
	}
	for (size_t k = 0; k < n; k++) {
		tt_manifest *m = tt_manifests_find(&repo->objects, acts[k].key);
		json_t *state = NULL;
		tt_error e = TT_ERROR_INIT;
		if (!m)
			continue;
		if (tt_backend_fingerprint(b, m->locator, NULL, &state, &e) < 0 ||
		    (json_decref(m->state), m->state = state, save_where_it_is(repo, m, &e) < 0) ||
		    store_listing(repo, b, m, state, &e) < 0) {
			char *what = tt_asprintf("refingerprint %s", m->key);
			if (what)
				json_object_set_new(failed, what, json_string(e.message ? e.message : "failed"));
			free(what);
			tt_error_clear(&e);
			continue;
		}
		json_array_append_new(json_object_get(report, "refingerprinted"), json_string(m->key));
	}
	free(acts);
	if (json_object_size(failed)) {
		tt_buf keys = TT_BUF_INIT;
		const char *k;
		json_object_foreach(failed, k, v) tt_buf_printf(&keys, "%s%s", keys.len ? ", " : "", k + 14);
		rc = tt_error_set(err, TT_EBACKEND, "upgrade stopped: could not re-fingerprint %s (the paths must exist "
				  "and be readable); fix and re-run `tether upgrade`", keys.ptr ? keys.ptr : "");
		tt_buf_release(&keys);
		return rc;
	}
	if (!repo->ws.bookmark) {
		char *mark = NULL;
		if ((rc = adopt_trunk(repo, &mark, err)) == 0 && (rc = tt_workspace_set_bookmark(&repo->ws, mark, err)) == 0)
			rc = tt_workspace_save(&repo->ws, repo->root, err);
		free(mark);
	}
	return rc;
}

/* --- v4: one manifest file per key; absolute local paths ----------------------- */

/* [[key, old locator, new locator], ...] for relative or `~` local paths. */
static json_t *relative_locators(tt_repo *repo)
{
	const tt_manifest **ms = objects_by_key(repo);
	json_t *out = json_array();
	for (size_t i = 0; ms && out && i < repo->objects.n; i++) {
		const tt_manifest *m = ms[i];
		tt_backend *b;
		tt_error ig = TT_ERROR_INIT;
		json_t *copy = NULL;
		if (tt_engine_backend(repo, m->kind, &b, &ig) == 0 && (copy = json_deep_copy(m->locator)) &&
		    tt_absolutize_locator(copy, m->kind, repo->root, &ig) == 0 && !json_equal(copy, m->locator))
			json_array_append_new(out, json_pack("[s,O,O]", m->key, m->locator, copy));
		json_decref(copy);
		tt_error_clear(&ig);
	}
	free(ms);
	return out;
}

/* [[path under objects, wanted path, key], ...] of manifests not at their
 * key's path. */
static json_t *misplaced_manifests(tt_repo *repo, tt_error *err)
{
	json_t *files = manifest_files(repo, err), *out = json_array(), *v;
	char *objdir = tt_tether_path(repo->root, TT_OBJECTS_DIR);
	size_t i;
	if (!files || !out || !objdir) {
		json_decref(files);
		json_decref(out);
		free(objdir);
		if (!err->code)
			tt_error_oom(err);
		return NULL;
	}
	json_array_foreach(files, i, v) {
		const char *rel = json_string_value(v);
		char *full = tt_path_join(objdir, rel), *text = full ? read_text(full) : NULL;
		tt_manifest m;
		tt_error ig = TT_ERROR_INIT;
		if (text && tt_manifest_parse(&m, text, strlen(text), rel, &ig) == 0) {
			char *want = tt_asprintf("%s.toml", m.key);
			if (want && strcmp(want, rel) != 0)
				json_array_append_new(out, json_pack("[s,s,s]", rel, want, m.key));
			free(want);
			tt_manifest_release(&m);
		}
		tt_error_clear(&ig);
		free(text);
		free(full);
	}
	json_decref(files);
	free(objdir);
	return out;
}

static int needs_layout(tt_repo *repo, bool *out, tt_error *err)
{
	json_t *moves = misplaced_manifests(repo, err), *rel = moves ? relative_locators(repo) : NULL;
	if (!moves || !rel) {
		json_decref(moves);
		return err->code ? err->code : tt_error_oom(err);
	}
	*out = json_array_size(moves) || json_array_size(rel);
	json_decref(moves);
	json_decref(rel);
	return 0;
}

static int plan_v4(tt_repo *repo, tt_plan *plan, tt_error *err)
{
	json_t *rel = relative_locators(repo), *moves = misplaced_manifests(repo, err), *v;
	size_t i;
	int rc = 0;
	if (!rel || !moves) {
		rc = err->code ? err->code : tt_error_oom(err);
		goto done;
	}
	json_array_foreach(rel, i, v) {
		json_t *old = json_array_get(v, 1), *new = json_array_get(v, 2), *val;
		const char *k;
		tt_buf changed = TT_BUF_INIT;
		json_object_foreach(new, k, val) {
			json_t *was = json_object_get(old, k);
			if (was && json_equal(was, val))
				continue;
			tt_buf_printf(&changed, "%s%s: ", changed.len ? ", " : "", k);
			tt_pyv_repr(&changed, was ? was : json_null());
			tt_buf_put(&changed, " -> ", 4);
			tt_pyv_repr(&changed, val);
		}
		char *detail = tt_asprintf("make the local path absolute (%s): a relative one against the dataset root, "
					   "`~` from the home directory; the locator meant a different path from each "
					   "directory", changed.ptr ? changed.ptr : "");
		tt_buf_release(&changed);
		rc = detail ? action(plan, "rewrite-locator", json_string_value(json_array_get(v, 0)), NULL, NULL,
				     detail, 4, json_pack("{s:O}", "locator", new), err)
			    : tt_error_oom(err);
		free(detail);
		if (rc < 0)
			goto done;
	}
	json_array_foreach(moves, i, v) {
		char *target = tt_asprintf(TT_DIR "/" TT_OBJECTS_DIR "/%s", json_string_value(json_array_get(v, 1)));
		char *detail = tt_asprintf("move " TT_DIR "/" TT_OBJECTS_DIR "/%s so a key with a dot in its last "
					   "segment no longer shares a file with the key before the dot",
					   json_string_value(json_array_get(v, 0)));
		rc = target && detail ? action(plan, "rename-manifest", json_string_value(json_array_get(v, 2)), NULL,
					       target, detail, 4, NULL, err)
				      : tt_error_oom(err);
		free(target);
		free(detail);
		if (rc < 0)
			goto done;
	}
	if (!json_array_size(moves) && !json_array_size(rel))
		rc = tt_plan_note(plan, "v4: every manifest already sits at its key's path and no locator holds a "
				  "relative path", err);
done:
	json_decref(rel);
	json_decref(moves);
	return rc;
}

static int apply_v4(tt_repo *repo, json_t *report, tt_error *err)
{
	json_t *moves = misplaced_manifests(repo, err), *v, *failed = json_object_get(report, "failed");
	json_t *rewritten = json_object_get(report, "rewritten_manifests");
	char *objdir = tt_tether_path(repo->root, TT_OBJECTS_DIR);
	size_t i;
	int rc = 0;
	if (!moves || !objdir) {
		json_decref(moves);
		free(objdir);
		return err->code ? err->code : tt_error_oom(err);
	}
	/* Every destination is checked before anything moves. */
	tt_buf why = TT_BUF_INIT;
	json_array_foreach(moves, i, v) {
		char *want = tt_path_join(objdir, json_string_value(json_array_get(v, 1)));
		if (want && tt_exists(want)) {
			char *what = tt_asprintf("rename-manifest %s", json_string_value(json_array_get(v, 2)));
			char *msg = tt_asprintf("%s already exists; a key collided here before v4 -- re-add the missing "
						"object", want);
			if (what && msg)
				json_object_set_new(failed, what, json_string(msg));
			tt_buf_printf(&why, "%s%s", why.len ? "; " : "", msg ? msg : "");
			free(what);
			free(msg);
		}
		free(want);
	}
	if (why.len) {
		rc = tt_error_set(err, TT_ECONFIG, "upgrade stopped: %s -- resolve the collision (re-add the missing "
				  "object under its own key) and re-run `tether upgrade`", why.ptr);
		goto done;
	}
	json_array_foreach(moves, i, v) {
		char *from = tt_path_join(objdir, json_string_value(json_array_get(v, 0)));
		char *to = tt_path_join(objdir, json_string_value(json_array_get(v, 1)));
		char *dir = to ? tt_dirname(to) : NULL;
		if (!from || !dir)
			rc = tt_error_oom(err);
		else if ((rc = tt_mkdirs(dir, 0755, err)) == 0 && rename(from, to) != 0)
			rc = tt_error_errno(err, errno, "cannot move %s to %s", from, to);
		if (rc == 0) {
			char *fdir = tt_dirname(from);
			if (fdir)
				tt_prune_empty_dirs(fdir, objdir);
			free(fdir);
			json_array_append_new(rewritten, json_incref(json_array_get(v, 2)));
		}
		free(from);
		free(to);
		free(dir);
		if (rc < 0)
			goto done;
	}
	if (json_array_size(moves) && (rc = reload_objects(repo, err)) < 0)
		goto done;
	json_t *rel = relative_locators(repo);
	json_array_foreach(rel, i, v) {
		tt_manifest *m = tt_manifests_find(&repo->objects, json_string_value(json_array_get(v, 0)));
		if (!m)
			continue;
		json_decref(m->locator);
		m->locator = json_incref(json_array_get(v, 2));
		if ((rc = tt_manifest_save(m, repo->root, err)) < 0)
			break;
		bool listed = false;
		size_t j;
		json_t *k;
		json_array_foreach(rewritten, j, k) listed = listed || strcmp(json_string_value(k), m->key) == 0;
		if (!listed)
			json_array_append_new(rewritten, json_string(m->key));
	}
	json_decref(rel);
done:
	tt_buf_release(&why);
	json_decref(moves);
	free(objdir);
	return rc;
}

/* --- v5: what 0.1.0b3 recorded under identities and states that changed ------------ */

static const char *const INDEXES[] = { "tether-touched.jsonl", "tether-created.jsonl" };

/* An index's records with the identities their stores give now, one per
 * store (*kept), and how many changed (0: leave the file alone). */
static int index_rewrite(tt_repo *repo, const char *name, json_t **kept, long long *changed, tt_error *err)
{
	char *path = tt_path_join(repo->vcs->shared_dir, name);
	tt_buf b = TT_BUF_INIT;
	json_t *seen = json_object();
	*kept = json_array();
	*changed = 0;
	if (!path || !seen || !*kept) {
		free(path);
		json_decref(seen);
		return tt_error_oom(err);
	}
	if (tt_is_file(path)) {
		int rc = tt_read_file(path, &b, 256u << 20, err);
		if (rc < 0) {
			free(path);
			json_decref(seen);
			return rc;
		}
	}
	for (char *line = b.ptr, *end = b.ptr + b.len; line && line < end;) {
		char *nl = memchr(line, '\n', (size_t)(end - line));
		size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
		json_t *r = NULL;
		/* blank and broken lines are not records (read_jsonl skips them) */
		for (size_t k = 0; k < len; k++)
			if (line[k] != ' ' && line[k] != '\t' && line[k] != '\r') {
				r = json_loadb(line, len, 0, NULL);
				break;
			}
		line = nl ? nl + 1 : NULL;
		if (!json_is_object(r)) {
			json_decref(r);
			continue;
		}
		json_t *new = json_deep_copy(r);
		const char *kind = json_string_value(json_object_get(r, "kind"));
		const char *ds = json_string_value(json_object_get(r, "dataset_id"));
		tt_backend *be;
		tt_error ig = TT_ERROR_INIT;
		if (ds && strcmp(ds, repo->config.dataset_id) == 0 && tt_kind_find(kind ? kind : "") &&
		    tt_engine_backend(repo, kind, &be, &ig) == 0) {
			json_t *loc = json_object_get(r, "locator"), *now = NULL;
			json_t *l = json_is_object(loc) ? json_deep_copy(loc) : json_object();
			if (tt_backend_identity(be, l, &now, &ig) == 0 && now)
				json_object_set_new(new, "identity", now);
			json_decref(l);
		}
		tt_error_clear(&ig);
		tt_buf tag = TT_BUF_INIT;
		json_t *t = json_pack("[O,s,O]", json_object_get(new, "dataset_id") ? json_object_get(new, "dataset_id")
										 : json_null(),
				      kind ? kind : "", json_object_get(new, "identity") ? json_object_get(new, "identity")
										 : json_null());
		if (t && tt_json_canonical(&tag, t) == 0 && tag.ptr) {
			if (json_object_get(seen, tag.ptr)) {
				(*changed)++;
			} else {
				json_object_set(seen, tag.ptr, json_true());
				if (!json_equal(new, r))
					(*changed)++;
				json_array_append(*kept, new);
			}
		}
		json_decref(t);
		tt_buf_release(&tag);
		json_decref(new);
		json_decref(r);
	}
	tt_buf_release(&b);
	json_decref(seen);
	free(path);
	return 0;
}

/* The identities earlier releases gave a `file` object. */
static json_t *old_file_identities(const tt_manifest *m)
{
	const json_t *u = json_object_get(m->locator, "uri");
	if (!tt_pyv_truthy(u))
		u = json_object_get(m->locator, "path");
	char *uri = tt_pyv_truthy(u) ? py_str(u) : tt_strdup("");
	json_t *out = json_array();
	if (!uri || !out) {
		free(uri);
		json_decref(out);
		return NULL;
	}
	json_array_append_new(out, json_pack("{s:s}", "uri", uri));
	static const char *const prefixes[] = { "file://localhost", "file://", "file:" };
	for (size_t i = 0; i < 3; i++)
		if (strncmp(uri, prefixes[i], strlen(prefixes[i])) == 0) {
			json_array_append_new(out, json_pack("{s:s}", "uri", uri + strlen(prefixes[i])));
			break;
		}
	free(uri);
	return out;
}

static int listings_cb(void *ctx, const char *commit, json_t *files, tt_error *err)
{
	json_t *stored = ctx;
	const char *path;
	json_t *text;
	(void)commit;
	(void)err;
	json_object_foreach(files, path, text) {
		const char *base = strrchr(path, '/');
		base = base ? base + 1 : path;
		if (!json_object_get(stored, base))
			json_object_set(stored, base, text);
	}
	return 0;
}

/* {new listing name: [old name, text]} for every recorded `file` state
 * whose listing is stored under the name an earlier identity gave it. */
static json_t *listing_copies(tt_repo *repo, tt_error *err)
{
	json_t *stored = json_object(), *out = json_object();
	char *rel = NULL, *dir = NULL;
	hist_manifests h;
	int rc;
	bool any_file = false;
	memset(&h, 0, sizeof h);
	if (!stored || !out)
		goto oom;
	for (size_t i = 0; i < repo->objects.n; i++)
		any_file = any_file || strcmp(repo->objects.items[i].kind, "file") == 0;
	if ((rc = history_manifests(repo, &h, err)) < 0)
		goto fail;
	for (size_t i = 0; i < h.n; i++)
		any_file = any_file || strcmp(h.items[i].kind, "file") == 0;
	if (!any_file) {
		hist_release(&h);
		json_decref(stored);
		return out;
	}
	char *drel = dataset_rel(repo);
	rel = drel ? (*drel ? tt_asprintf("%s/" TT_DIR "/" TT_LISTINGS_DIR, drel) : tt_strdup(TT_DIR "/" TT_LISTINGS_DIR))
		   : NULL;
	free(drel);
	if (!rel)
		goto oom;
	if ((rc = tt_vcs_iter_history_files(repo->vcs, rel, listings_cb, stored, err)) < 0)
		goto fail;
	if (!(dir = tt_tether_path(repo->root, TT_LISTINGS_DIR)))
		goto oom;
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 6, ".jsonl") != 0)
			continue;
		char *p = tt_path_join(dir, e->d_name), *t = p ? read_text(p) : NULL;
		if (t)
			json_object_set_new(stored, e->d_name, json_string(t));
		free(t);
		free(p);
	}
	if (d)
		closedir(d);
	tt_backend *b;
	if ((rc = tt_engine_backend(repo, "file", &b, err)) < 0)
		goto fail;
	for (size_t i = 0; i < h.n + repo->objects.n; i++) {
		const tt_manifest *m = i < h.n ? &h.items[i] : &repo->objects.items[i - h.n];
		json_t *identity = NULL, *olds = NULL;
		char name[TT_LISTING_NAME_MAX], oldname[TT_LISTING_NAME_MAX];
		if (strcmp(m->kind, "file") != 0 || !m->state)
			continue;
		if ((rc = tt_backend_identity(b, m->locator, &identity, err)) < 0 ||
		    (rc = listing_name_of(b, m, identity, m->state, name, err)) < 0) {
			json_decref(identity);
			goto fail;
		}
		json_decref(identity);
		if (json_object_get(stored, name) || json_object_get(out, name))
			continue;
		if (!(olds = old_file_identities(m)))
			goto oom;
		size_t k;
		json_t *id;
		json_array_foreach(olds, k, id) {
			if ((rc = listing_name_of(b, m, id, m->state, oldname, err)) < 0) {
				json_decref(olds);
				goto fail;
			}
			json_t *text = json_object_get(stored, oldname);
			if (text) {
				json_object_set_new(out, name, json_pack("[s,O]", oldname, text));
				break;
			}
		}
		json_decref(olds);
	}
	hist_release(&h);
	json_decref(stored);
	free(rel);
	free(dir);
	return out;
oom:
	tt_error_oom(err);
fail:
	hist_release(&h);
	json_decref(stored);
	json_decref(out);
	free(rel);
	free(dir);
	return NULL;
}

/* The state 0.1.0b4 gives a local directory 0.1.0b3 recorded, when only
 * the symlinks b3 left out tell the two apart (*out NULL: none). */
static int b3_dir_state(tt_backend *b, const tt_manifest *m, json_t **out, tt_error *err)
{
	json_t *now = NULL;
	char *text = NULL;
	int rc;
	*out = NULL;
	if ((rc = tt_backend_fingerprint(b, m->locator, NULL, &now, err)) < 0)
		return rc;
	const char *type = json_string_value(json_object_get(now, "type"));
	if (json_equal(now, m->state) || !type || strcmp(type, "dir") != 0 || !tt_backend_has(b, listing) ||
	    (rc = tt_backend_listing(b, m->locator, now, &text, err)) < 0 || !text) {
		json_decref(now);
		return rc;
	}
	/* the listing's file rows (symlinks left out), sorted by path */
	json_t *rows = json_object();
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		json_t *r = len ? json_loadb(line, len, 0, NULL) : NULL;
		const char *p = json_string_value(json_object_get(r, "p"));
		const char *k = json_string_value(json_object_get(r, "k"));
		if (p && strncmp(k ? k : "", "symlink:", 8) != 0)
			json_object_set_new(rows, p, json_string(k ? k : ""));
		json_decref(r);
		line = nl ? nl + 1 : NULL;
	}
	size_t n = json_object_size(rows);
	json_t *count = json_object_get(now, "count");
	if ((long long)n != (json_is_integer(count) ? json_integer_value(count) : 0)) {
		tt_file_row *fr = tt_calloc(n + 1, sizeof *fr);
		const char **names = tt_calloc(n + 1, sizeof *names);
		const char *p;
		json_t *v;
		size_t i = 0;
		if (!fr || !names) {
			rc = tt_error_oom(err);
		} else {
			json_object_foreach(rows, p, v) names[i++] = p;
			qsort(names, n, sizeof *names, cmp_cstr);
			for (i = 0; i < n; i++) {
				fr[i].path = names[i];
				snprintf(fr[i].token, sizeof fr[i].token, "%s", json_string_value(json_object_get(rows, names[i])));
			}
			char hex[33];
			tt_file_rows_digest(fr, n, hex);
			json_t *b3 = json_pack("{s:s,s:I,s:O,s:s}", "type", "dir", "count", (json_int_t)n, "size",
					       json_object_get(now, "size") ? json_object_get(now, "size") : json_null(),
					       "digest", hex);
			if (b3 && json_equal(b3, m->state))
				*out = json_incref(now);
			json_decref(b3);
		}
		free(fr);
		free(names);
	}
	json_decref(rows);
	json_decref(now);
	free(text);
	return rc;
}

#define NEON_XID_WINDOW 65536

/* Whether a Neon branch that recorded next_xid = recorded has committed
 * nothing since, given its commit_xid now (-1: not numbers). */
static int neon_xid_unchanged(const char *recorded, const char *now)
{
	char *end;
	long long r = strtoll(recorded, &end, 10);
	if (!*recorded || *end)
		return -1;
	bool window = *now == '<';
	long long n = strtoll(window ? now + 1 : now, &end, 10);
	if (!*(window ? now + 1 : now) || *end)
		return -1;
	return window ? r >= n - NEON_XID_WINDOW : n < r;
}

/* {key: {old, new, why}} for working-tree states 0.1.0b3 recorded in a form
 * 0.1.0b4 no longer produces, whose data is unchanged; notes gets what
 * could not be read. */
static json_t *state_rewrites(tt_repo *repo, json_t *notes)
{
	const tt_manifest **ms = objects_by_key(repo);
	json_t *out = json_object();
	for (size_t i = 0; ms && out && i < repo->objects.n; i++) {
		const tt_manifest *m = ms[i];
		const json_t *st = m->state;
		tt_backend *b;
		tt_error e = TT_ERROR_INIT;
		json_t *new = NULL;
		const char *why = NULL;
		if (!st || !tt_kind_find(m->kind))
			continue;
		const char *type = json_string_value(json_object_get(st, "type"));
		const json_t *branch = json_object_get(st, "branch");
		if (strcmp(m->kind, "file") == 0 && type && strcmp(type, "dir") == 0) {
			const json_t *u = json_object_get(m->locator, "uri");
			if (!tt_pyv_truthy(u))
				u = json_object_get(m->locator, "path");
			char *uri = py_str(u ? u : json_string("")), *local = NULL;
			int isl = uri ? tt_store_local_path(uri, &local) : 0;
			free(uri);
			free(local);
			if (isl != 1)
				continue;
			if (tt_engine_backend(repo, m->kind, &b, &e) == 0 && b3_dir_state(b, m, &new, &e) == 0 && new)
				why = "symlinks are entries now";
		} else if (strcmp(m->kind, "lance") == 0 && branch && !json_is_null(branch) &&
			   !(json_is_string(branch) && strcmp(json_string_value(branch), "main") == 0) &&
			   !json_object_get(st, "branch_id")) {
			char *br = py_str(branch);
			json_t *now = NULL;
			if (br && tt_engine_backend(repo, m->kind, &b, &e) == 0 &&
			    tt_backend_fingerprint(b, m->locator, br, &now, &e) == 0 && json_object_get(now, "branch_id")) {
				json_t *bare = json_deep_copy(now);
				json_object_del(bare, "branch_id");
				if (json_equal(bare, st)) {
					new = json_incref(now);
					why = "states off main carry the branch id";
				}
				json_decref(bare);
			}
			json_decref(now);
			free(br);
		} else if (strcmp(m->kind, "neon") == 0 && json_object_get(st, "next_xid") &&
			   !json_object_get(st, "commit_xid")) {
			const json_t *tl = json_object_get(st, "timeline");
			if (!tt_pyv_truthy(tl))
				tl = json_object_get(st, "branch");
			const json_t *src = json_object_get(m->locator, "branch");
			char *timeline = tt_pyv_truthy(tl) ? py_str(tl) : tt_strdup("");
			char *source = src ? py_str(src) : tt_strdup("main");
			json_t *now = NULL;
			if (timeline && source && tt_engine_backend(repo, m->kind, &b, &e) == 0 &&
			    tt_backend_fingerprint(b, m->locator, strcmp(timeline, source) == 0 ? NULL : timeline, &now,
						&e) == 0 &&
			    json_equal(json_object_get(now, "branch") ? json_object_get(now, "branch") : json_null(),
				       json_object_get(st, "branch") ? json_object_get(st, "branch") : json_null())) {
				char *rec = py_str(json_object_get(st, "next_xid"));
				char *cx = py_str(json_object_get(now, "commit_xid") ? json_object_get(now, "commit_xid")
										     : json_null());
				int same = rec && cx ? neon_xid_unchanged(rec, cx) : 0;
				if (same < 0) {
					/* what int() says of an xid that is no number */
					char *r = rec ? tt_pyv_repr_dup(rec) : NULL;
					tt_error_set(&e, TT_EBACKEND, "invalid literal for int() with base 10: %s", r ? r : "''");
					free(r);
				} else if (same) {
					new = json_deep_copy(st);
					json_object_del(new, "next_xid");
					json_object_set(new, "commit_xid", json_object_get(now, "commit_xid"));
					why = "next_xid became commit_xid";
				}
				free(rec);
				free(cx);
			}
			json_decref(now);
			free(timeline);
			free(source);
		}
		if (new && why) {
			json_object_set_new(out, m->key, json_pack("{s:O,s:O,s:s}", "old", st, "new", new, "why", why));
		} else if (e.code) {
			char *note = tt_asprintf("%s: could not read it to carry its %s state forward (%s); it reads as "
						 "changed once, and its next commit pins it anew", m->key, m->kind,
						 e.message ? e.message : "failed");
			if (note)
				json_array_append_new(notes, json_string(note));
			free(note);
		}
		json_decref(new);
		tt_error_clear(&e);
	}
	free(ms);
	return out;
}

static int plan_v5(tt_repo *repo, tt_plan *plan, tt_error *err)
{
	int rc = 0;
	size_t acted = 0;
	for (size_t k = 0; k < 2 && rc == 0; k++) {
		json_t *kept = NULL;
		long long changed = 0;
		if ((rc = index_rewrite(repo, INDEXES[k], &kept, &changed, err)) == 0 && changed) {
			char *detail = tt_asprintf("%lld record(s) take the identity their store has now (one spelling per "
						   "local path: `file://`, trailing slashes and symlinks resolved), so `gc "
						   "--delete-stores` sees the stores manifests name as in use", changed);
			rc = detail ? action(plan, "rewrite-index", NULL, NULL, INDEXES[k], detail, 5, NULL, err)
				    : tt_error_oom(err);
			free(detail);
			acted++;
		}
		json_decref(kept);
	}
	if (rc < 0)
		return rc;
	json_t *copies = listing_copies(repo, err);
	if (!copies)
		return err->code;
	const char **names = tt_calloc(json_object_size(copies) + 1, sizeof *names);
	const char *name;
	json_t *v;
	size_t n = 0;
	json_object_foreach(copies, name, v) names[n++] = name;
	qsort(names, n, sizeof *names, cmp_cstr);
	for (size_t i = 0; i < n && rc == 0; i++) {
		const char *old = json_string_value(json_array_get(json_object_get(copies, names[i]), 0));
		char *detail = tt_asprintf("listing %s under the name its object's identity gives it now, so `diff` "
					   "finds it and `gc` keeps it", old);
		rc = detail ? action(plan, "copy-listing", NULL, NULL, names[i], detail, 5, json_pack("{s:s}", "old", old),
				     err)
			    : tt_error_oom(err);
		free(detail);
		acted++;
	}
	free(names);
	json_decref(copies);
	if (rc < 0)
		return rc;
	json_t *notes = json_array(), *rw = state_rewrites(repo, notes);
	const char **keys = tt_calloc(json_object_size(rw) + 1, sizeof *keys);
	n = 0;
	json_object_foreach(rw, name, v) keys[n++] = name;
	qsort(keys, n, sizeof *keys, cmp_cstr);
	for (size_t i = 0; i < n && rc == 0; i++) {
		json_t *r = json_object_get(rw, keys[i]);
		const tt_manifest *m = tt_manifests_find(&repo->objects, keys[i]);
		char *detail = tt_asprintf("%s; the data is unchanged, so the state it would read now is recorded in "
					   "place of the old form (and in workspace.toml)",
					   json_string_value(json_object_get(r, "why")));
		rc = detail ? action(plan, "rewrite-state", keys[i], m ? m->kind : NULL, NULL, detail, 5,
				     json_pack("{s:O,s:O}", "old", json_object_get(r, "old"), "new",
					       json_object_get(r, "new")),
				     err)
			    : tt_error_oom(err);
		free(detail);
		acted++;
	}
	free(keys);
	json_decref(rw);
	size_t i;
	json_array_foreach(notes, i, v) if (rc == 0) rc = tt_plan_note(plan, json_string_value(v), err);
	json_decref(notes);
	if (rc == 0 && !acted)
		rc = tt_plan_note(plan, "0.1.0b3 left nothing under an old identity or state: only the version changes "
				  "(which also stops a 0.1.0b3 from opening the dataset)", err);
	return rc;
}

static int apply_v5(tt_repo *repo, const tt_plan *plan, json_t *report, tt_error *err)
{
	planned_action *acts = NULL;
	bool oom;
	size_t n;
	int rc = 0;
	n = planned(plan, "rewrite-index", 5, &acts, &oom);
	if (oom)
		return tt_error_oom(err);
	for (size_t i = 0; i < n && rc == 0; i++) {
		json_t *kept = NULL;
		long long changed = 0;
		if ((rc = index_rewrite(repo, acts[i].target, &kept, &changed, err)) == 0 && changed) {
			tt_buf b = TT_BUF_INIT;
			size_t j;
			json_t *r;
			static const tt_json_style py_default = { -1, false, true, false };
			json_array_foreach(kept, j, r) {
				tt_json_dump(&b, r, py_default);
				tt_buf_put(&b, "\n", 1);
			}
			char *path = tt_path_join(repo->vcs->shared_dir, acts[i].target);
			rc = path ? tt_write_file_atomic(path, b.ptr ? b.ptr : "", b.len, 0644, err) : tt_error_oom(err);
			free(path);
			tt_buf_release(&b);
			if (rc == 0)
				json_object_set_new(json_object_get(report, "rewritten_indexes"), acts[i].target,
						    json_integer(changed));
		}
		json_decref(kept);
	}
	free(acts);
	if (rc < 0)
		return rc;
	n = planned(plan, "copy-listing", 5, &acts, &oom);
	if (oom)
		return tt_error_oom(err);
	if (n) {
		json_t *copies = listing_copies(repo, err);
		if (!copies) {
			free(acts);
			return err->code;
		}
		for (size_t i = 0; i < n && rc == 0; i++) {
			json_t *c = json_object_get(copies, acts[i].target);
			if (!c)
				continue;
			if ((rc = write_listing(repo, acts[i].target, json_string_value(json_array_get(c, 1)), err)) == 0)
				json_array_append_new(json_object_get(report, "copied_listings"), json_string(acts[i].target));
		}
		json_decref(copies);
	}
	free(acts);
	if (rc < 0)
		return rc;
	n = planned(plan, "rewrite-state", 5, &acts, &oom);
	if (oom)
		return tt_error_oom(err);
	json_t **tables[] = { &repo->ws.base_states, &repo->ws.fork_points, &repo->ws.pending_resets,
			      &repo->ws.last_snapshot };
	for (size_t i = 0; i < n && rc == 0; i++) {
		tt_manifest *m = tt_manifests_find(&repo->objects, acts[i].key);
		const json_t *old = json_object_get(acts[i].params, "old"), *new = json_object_get(acts[i].params, "new");
		tt_backend *b;
		if (!m || !json_equal(m->state, old))
			continue;  /* changed since the plan: it commits as changed */
		if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0)
			break;
		json_decref(m->state);
		m->state = json_deep_copy(new);
		if ((rc = tt_manifest_save(m, repo->root, err)) < 0 || (rc = store_listing(repo, b, m, new, err)) < 0)
			break;
		for (size_t t = 0; t < 4; t++) {
			json_t *cur = *tables[t] ? json_object_get(*tables[t], m->key) : NULL;
			if (cur && json_equal(cur, old))
				json_object_set_new(*tables[t], m->key, json_deep_copy(new));
		}
		json_array_append_new(json_object_get(report, "rewritten_manifests"), json_string(m->key));
	}
	free(acts);
	if (rc == 0)
		rc = tt_workspace_save(&repo->ws, repo->root, err);
	return rc;
}

/* --- v2: dataset-namespaced refs, planned and applied ---------------------- */

#define WS_PREFIX "tether.ws."

/* slugify_key: runs of [^0-9A-Za-z] become "-", stripped, lower-cased. */
static char *key_slug(const char *key)
{
	tt_buf b = TT_BUF_INIT;
	bool dash = false;
	for (const unsigned char *p = (const unsigned char *)key; *p; p++) {
		bool ok = (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z');
		if (!ok) {
			dash = true;
			continue;
		}
		if (dash && b.len)
			tt_buf_putc(&b, '-');
		dash = false;
		tt_buf_putc(&b, (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p));
	}
	if (!b.len)
		tt_buf_puts(&b, "obj");
	return tt_buf_detach(&b);
}

/* key_digest6: blake(canon(key), size=8)[:6]. */
static int key6(const char *key, char out[7])
{
	tt_buf q = TT_BUF_INIT;
	json_t *s = json_string(key);
	char hex[17];
	int rc = s && tt_json_canonical(&q, s) == 0 ? 0 : -1;
	tt_bytes part = { q.ptr, q.len };
	if (rc == 0)
		rc = tt_blake_parts(hex, 8, &part, 1);
	if (rc == 0)
		memcpy(out, hex, 6), out[6] = '\0';
	json_decref(s);
	tt_buf_release(&q);
	return rc;
}

/* {slug: key} of the working tree's keys (the last key wins, as a dict). */
static json_t *key_slugs(tt_repo *repo)
{
	json_t *out = json_object();
	for (size_t i = 0; out && i < repo->objects.n; i++) {
		char *s = key_slug(repo->objects.items[i].key);
		if (s)
			json_object_set_new(out, s, json_string(repo->objects.items[i].key));
		free(s);
	}
	return out;
}

/* A pre-namespace working branch: tether.ws.<ws8>.<slug>[-<key6>], its
 * ws8 no dataset id seen in the store's pins (foreign, may be NULL). */
static bool v1_branch(const char *ref, const json_t *slugs, const json_t *foreign)
{
	if (strncmp(ref, WS_PREFIX, strlen(WS_PREFIX)) != 0)
		return false;
	const char *rest = ref + strlen(WS_PREFIX), *dot = strchr(rest, '.');
	if (!dot || dot - rest != 8 || !is_ds8(rest) || strchr(dot + 1, '.'))
		return false;
	char ws8[9];
	memcpy(ws8, rest, 8);
	ws8[8] = '\0';
	if (foreign && json_object_get(foreign, ws8))
		return false;
	const char *tail = dot + 1;
	if (json_object_get(slugs, tail))
		return true;
	const char *dash = strrchr(tail, '-');
	if (!dash || strlen(dash + 1) != 6)
		return false;
	for (const char *p = dash + 1; *p; p++)
		if (!strchr("0123456789abcdef", *p))
			return false;
	char *slug = tt_strndup(tail, (size_t)(dash - tail));
	bool out = slug && json_object_get(slugs, slug);
	free(slug);
	return out;
}

/* tether.ws.<ws8>.<tail> -> tether.ws.<ds8>.<ws8>.<tail>[-<key6>]. */
static char *v1_branch_new(const char *ref, const char *ds, const json_t *slugs)
{
	const char *rest = ref + strlen(WS_PREFIX), *tail = rest + 9;
	const char *key = json_string_value(json_object_get(slugs, tail));
	char d6[7] = "";
	if (key && key6(key, d6) < 0)
		return NULL;
	return tt_asprintf(WS_PREFIX "%s.%.8s.%s%s%s", ds, rest, tail, key ? "-" : "", d6);
}

/* The locator a history manifest is read with (a relative local path
 * resolved against the dataset root, as tether-vcs reads history). */
static json_t *resolved_locator(tt_repo *repo, const tt_manifest *m)
{
	json_t *copy = json_deep_copy(m->locator);
	tt_error ig = TT_ERROR_INIT;
	if (copy && tt_absolutize_locator(copy, m->kind, repo->root, &ig) < 0) {
		json_decref(copy);
		copy = json_deep_copy(m->locator);
	}
	tt_error_clear(&ig);
	return copy;
}

/* The namespaced pin id of m's state and its system key (kind|identity). */
static int new_pin_id(tt_repo *repo, const tt_manifest *m, const json_t *loc, const char *ds, char id[TT_PIN_ID_MAX],
		      char **sys_key, tt_error *err)
{
	tt_backend *b;
	json_t *identity = NULL, *content = NULL;
	int rc;
	if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0 || (rc = tt_backend_identity(b, loc, &identity, err)) < 0)
		return rc;
	content = tt_content_state(b->kind, m->state);
	rc = content ? tt_pin_id(id, ds, m->kind, identity, content, err) : tt_error_oom(err);
	if (rc == 0 && sys_key) {
		tt_buf c = TT_BUF_INIT;
		if (tt_json_canonical(&c, identity) < 0 || !(*sys_key = tt_asprintf("%s|%s", m->kind, c.ptr ? c.ptr : "")))
			rc = tt_error_oom(err);
		tt_buf_release(&c);
	}
	json_decref(identity);
	json_decref(content);
	return rc;
}

typedef struct ns_hist {
	tt_repo *repo;
	size_t commits;       /* commits holding an old-format pin */
	json_t *renames;      /* {sys_key \x1f old id: [key, kind, locator, state, old pin id, old ref, new id]} */
	json_t *order;        /* their tags in first-seen order */
} ns_hist;

static int ns_add(ns_hist *h, const tt_manifest *m, const json_t *loc, const char *ds, tt_error *err)
{
	char id[TT_PIN_ID_MAX], *sys = NULL;
	int rc = new_pin_id(h->repo, m, loc, ds, id, &sys, err);
	if (rc < 0)
		return rc;
	char *tag = tt_asprintf("%s\x1f%s", sys, m->pin_id);
	if (!tag)
		rc = tt_error_oom(err);
	else if (!json_object_get(h->renames, tag)) {
		json_object_set_new(h->renames, tag,
				    json_pack("[s,s,O,O,s,s,s]", m->key, m->kind, loc, m->state, m->pin_id,
					      m->pin_ref ? m->pin_ref : "", id));
		json_array_append_new(h->order, json_string(tag));
	}
	free(tag);
	free(sys);
	return rc;
}

typedef struct ns_walk {
	ns_hist *h;
	const char *ds;
} ns_walk;

static int ns_hist_cb(void *ctx, const char *commit, json_t *files, tt_error *err)
{
	ns_walk *w = ctx;
	const char *path;
	json_t *text;
	bool any = false;
	(void)commit;
	json_object_foreach(files, path, text) {
		size_t pl = strlen(path);
		const char *t = json_string_value(text);
		tt_manifest m;
		tt_error ig = TT_ERROR_INIT;
		if (pl < 5 || strcmp(path + pl - 5, ".toml") != 0 || !t)
			continue;
		if (tt_manifest_parse(&m, t, strlen(t), path, &ig) < 0) {
			tt_error_clear(&ig);
			continue;
		}
		int rc = 0;
		if (old_pin(&m) && m.state) {
			any = true;
			json_t *loc = resolved_locator(w->h->repo, &m);
			rc = loc ? ns_add(w->h, &m, loc, w->ds, err) : tt_error_oom(err);
			json_decref(loc);
		}
		tt_manifest_release(&m);
		if (rc < 0)
			return rc;
	}
	w->h->commits += any;
	return 0;
}

/* Python's sorted() of (sys_key, old id) tuples. */
static int cmp_tag(const void *pa, const void *pb)
{
	const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
	size_t la = strcspn(a, "\x1f"), lb = strcspn(b, "\x1f");
	int c = memcmp(a, b, la < lb ? la : lb);
	if (c)
		return c;
	if (la != lb)
		return la < lb ? -1 : 1;
	return strcmp(a + la + 1, b + lb + 1);
}

static bool in_array(const json_t *arr, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach(arr, i, v) if (json_is_string(v) && strcmp(json_string_value(v), s) == 0) return true;
	return false;
}

static int note_fmt(tt_plan *plan, tt_error *err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int note_fmt(tt_plan *plan, tt_error *err, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = tt_vasprintf(fmt, ap);
	va_end(ap);
	int rc = s ? tt_plan_note(plan, s, err) : tt_error_oom(err);
	free(s);
	return rc;
}

/* Dataset ids other than ours in the pins of m's store (an object). */
static json_t *foreign_ids(tt_backend *b, const tt_manifest *m, const char *ours)
{
	json_t *out = json_object(), *pins = NULL;
	tt_error ig = TT_ERROR_INIT;
	if (out && (b->kind->caps & TT_CAP_PIN) && tt_backend_has(b, list_pins) && tt_backend_list_pins(b, m->locator, &pins, &ig) == 0) {
		size_t i;
		json_t *v;
		json_array_foreach(pins, i, v) {
			const char *id = json_string_value(v);
			const char *dot = id ? strchr(id, '.') : NULL;
			if (dot && dot - id == 8 && is_ds8(id) && strncmp(id, ours, 8) != 0) {
				char ds[9];
				memcpy(ds, id, 8);
				ds[8] = '\0';
				json_object_set_new(out, ds, json_true());
			}
		}
	}
	json_decref(pins);
	tt_error_clear(&ig);
	return out;
}

/* The dataset id the upgrade names refs under (the config's, else a new
 * one), into ds, the plan's context and a note. */
static int v2_dataset_id(tt_repo *repo, tt_plan *plan, char ds[TT_DATASET_ID_LEN + 1], tt_error *err)
{
	int rc;
	if (repo->config.dataset_id[0])
		memcpy(ds, repo->config.dataset_id, TT_DATASET_ID_LEN + 1);
	else if ((rc = tt_new_dataset_id(ds, err)) < 0)
		return rc;
	json_t *dsj = json_string(ds);
	rc = tt_plan_set_context(plan, "dataset_id", dsj, err);
	json_decref(dsj);
	if (rc < 0)
		return rc;
	return note_fmt(plan, err, "dataset id: %s", ds);
}

/* Every old-format pin the history and the working tree record, into h. */
static int v2_old_pins(tt_repo *repo, ns_hist *h, const char *ds, const char *reldir, tt_error *err)
{
	ns_walk w = { h, ds };
	int rc;
	if ((rc = tt_vcs_iter_history_files(repo->vcs, reldir, ns_hist_cb, &w, err)) < 0)
		return rc;
	rc = 0;
	for (size_t i = 0; i < repo->objects.n && rc == 0; i++)
		if (old_pin(&repo->objects.items[i]) && repo->objects.items[i].state)
			rc = ns_add(h, &repo->objects.items[i], repo->objects.items[i].locator, ds, err);
	return rc;
}

/* The pins in the store sys names, listed once per store (live: sys ->
 * pins); a store that cannot list them gets a note and counts as holding
 * none.  *out is borrowed from live. */
static int v2_live_pins(tt_plan *plan, tt_backend *b, json_t *live, const char *sys, const char *key, json_t *loc,
			json_t **out, tt_error *err)
{
	json_t *pins = json_object_get(live, sys);
	int rc = 0;
	if (!pins) {
		tt_error e = TT_ERROR_INIT;
		if ((b->kind->caps & TT_CAP_PIN) && tt_backend_has(b, list_pins)) {
			if (tt_backend_list_pins(b, loc, &pins, &e) < 0) {
				rc = note_fmt(plan, err, "%s: could not list pins (%s)", key, e.message ? e.message : "failed");
				json_decref(pins);
				pins = NULL;
			}
		}
		tt_error_clear(&e);
		json_object_set_new(live, sys, pins ? pins : json_array());
		pins = json_object_get(live, sys);
	}
	*out = pins;
	return rc;
}

/* One old-format pin (tag: its store key \x1f old id; r: what ns_add
 * recorded): a rename in its store, or a note when the store no longer
 * holds it. */
static int v2_plan_pin_rename(tt_repo *repo, tt_plan *plan, json_t *live, const char *tag, json_t *r, tt_error *err)
{
	const char *key = json_string_value(json_array_get(r, 0)), *kind = json_string_value(json_array_get(r, 1));
	json_t *loc = json_array_get(r, 2), *state = json_array_get(r, 3), *pins;
	const char *old_id = json_string_value(json_array_get(r, 4)), *old_ref = json_string_value(json_array_get(r, 5));
	const char *new_id = json_string_value(json_array_get(r, 6));
	char *sys = tt_strndup(tag, strcspn(tag, "\x1f"));
	tt_backend *b;
	int rc = 0;
	if (!sys || (rc = tt_engine_backend(repo, kind, &b, err)) < 0) {
		free(sys);
		return rc < 0 ? rc : tt_error_oom(err);
	}
	rc = v2_live_pins(plan, b, live, sys, key, loc, &pins, err);
	free(sys);
	if (rc < 0)
		return rc;
	if (!in_array(pins, old_id))
		return note_fmt(plan, err, "%s: pin %s is not in the store; manifests are rewritten to the new name only",
				key, old_ref);
	char target[TT_PIN_ID_MAX + 8], *detail = tt_asprintf("from %s", old_ref);
	tt_ref_for_pin(target, sizeof target, new_id);
	rc = detail ? action(plan, "rename-pin", key, kind, target, detail, 2,
			     json_pack("{s:O,s:{s:s,s:s},s:O,s:s}", "locator", loc, "old", "id", old_id, "ref", old_ref,
				       "state", state, "new_id", new_id),
			     err)
		    : tt_error_oom(err);
	free(detail);
	return rc;
}

/* The old-format pins' renames, in the order of their tags. */
static int v2_plan_pin_renames(tt_repo *repo, tt_plan *plan, const ns_hist *h, json_t *live, tt_error *err)
{
	size_t n = json_array_size(h->order);
	const char **tags = tt_calloc(n + 1, sizeof *tags);
	int rc = 0;
	if (!tags)
		return tt_error_oom(err);
	for (size_t i = 0; i < n; i++)
		tags[i] = json_string_value(json_array_get(h->order, i));
	qsort(tags, n, sizeof *tags, cmp_tag);
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = v2_plan_pin_rename(repo, plan, live, tags[i], json_object_get(h->renames, tags[i]), err);
	free(tags);
	return rc;
}

/* The key of m's store: kind|identity (a state-free part of new_pin_id),
 * or kind|?key when the identity is unknown.  Caller frees; NULL: out of
 * memory. */
static char *v2_store_key(tt_backend *b, const tt_manifest *m)
{
	json_t *identity = NULL;
	tt_error e = TT_ERROR_INIT;
	char *sys;
	if (tt_backend_identity(b, m->locator, &identity, &e) == 0) {
		tt_buf c = TT_BUF_INIT;
		tt_json_canonical(&c, identity);
		sys = tt_asprintf("%s|%s", m->kind, c.ptr ? c.ptr : "");
		tt_buf_release(&c);
	} else {
		sys = tt_asprintf("%s|?%s", m->kind, m->key);
	}
	json_decref(identity);
	tt_error_clear(&e);
	return sys;
}

/* The renames of the old-format working branches among refs (m's store's
 * working branches), in name order. */
static int v2_plan_branches_of(tt_plan *plan, const tt_manifest *m, json_t *refs, const char *ds,
			       const json_t *slugs, const json_t *foreign, tt_error *err)
{
	size_t nr = json_array_size(refs);
	const char **names = tt_calloc(nr + 1, sizeof *names);
	int rc = 0;
	for (size_t k = 0; names && k < nr; k++)
		names[k] = json_string_value(json_array_get(refs, k));
	if (names)
		qsort(names, nr, sizeof *names, cmp_cstr);
	for (size_t k = 0; names && k < nr && rc == 0; k++) {
		if (!names[k] || !v1_branch(names[k], slugs, foreign))
			continue;
		char *target = v1_branch_new(names[k], ds, slugs), *detail = tt_asprintf("from %s", names[k]);
		rc = target && detail ? action(plan, "rename-branch", m->key, m->kind, target, detail, 2,
					       json_pack("{s:O,s:s}", "locator", m->locator, "old", names[k]), err)
				      : tt_error_oom(err);
		free(target);
		free(detail);
	}
	if (!names)
		rc = tt_error_oom(err);
	free(names);
	return rc;
}

/* The old-format working branches in m's store, once per store (seen):
 * their renames, or a note when the store cannot list them. */
static int v2_plan_branch_renames_of(tt_repo *repo, tt_plan *plan, const tt_manifest *m, const char *ds,
				     const json_t *slugs, json_t *seen, tt_error *err)
{
	tt_backend *b;
	json_t *refs = NULL, *foreign;
	tt_error e = TT_ERROR_INIT;
	int rc;
	if (!tt_kind_find(m->kind) || tt_engine_backend(repo, m->kind, &b, &e) < 0) {
		tt_error_clear(&e);
		return 0;
	}
	if (!(tt_backend_caps(b, m->locator, m->policy.file, m->policy.pin) & TT_CAP_FORK) || !tt_backend_has(b, list_working_refs))
		return 0;
	char *sys = v2_store_key(b, m);
	if (!sys)
		return tt_error_oom(err);
	if (json_object_get(seen, sys)) {
		free(sys);
		return 0;
	}
	json_object_set_new(seen, sys, json_true());
	free(sys);
	if (tt_backend_list_working_refs(b, m->locator, &refs, &e) < 0) {
		rc = note_fmt(plan, err, "%s: could not list working branches (%s)", m->key,
			      e.message ? e.message : "failed");
		tt_error_clear(&e);
		json_decref(refs);
		return rc;
	}
	foreign = foreign_ids(b, m, ds);
	rc = v2_plan_branches_of(plan, m, refs, ds, slugs, foreign, err);
	json_decref(refs);
	json_decref(foreign);
	return rc;
}

/* Working branches in the old format, in every store the working tree
 * names (objects in key order). */
static int v2_plan_branch_renames(tt_repo *repo, tt_plan *plan, const char *ds, tt_error *err)
{
	json_t *slugs = key_slugs(repo), *seen = json_object();
	const tt_manifest **ms = objects_by_key(repo);
	int rc = 0;
	if (!slugs || !seen || !ms)
		rc = tt_error_oom(err);
	for (size_t i = 0; i < repo->objects.n && rc == 0; i++)
		rc = v2_plan_branch_renames_of(repo, plan, ms[i], ds, slugs, seen, err);
	free(ms);
	json_decref(slugs);
	json_decref(seen);
	return rc;
}

static int plan_v2(tt_repo *repo, tt_plan *plan, tt_error *err)
{
	char ds[TT_DATASET_ID_LEN + 1];
	int rc;
	if ((rc = v2_dataset_id(repo, plan, ds, err)) < 0)
		return rc;
	ns_hist h = { repo, 0, json_object(), json_array() };
	char *reldir = tt_engine_objects_reldir(repo);
	json_t *live = json_object();  /* store key -> its pins */
	if (!h.renames || !h.order || !reldir || !live) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = v2_old_pins(repo, &h, ds, reldir, err)) < 0 ||
	    (rc = v2_plan_pin_renames(repo, plan, &h, live, err)) < 0 ||
	    (rc = v2_plan_branch_renames(repo, plan, ds, err)) < 0)
		goto done;
	if (h.commits) {
		char target[64];
		snprintf(target, sizeof target, "%zu commit(s)", h.commits);
		rc = action(plan, "rewrite-history", NULL, NULL, target,
			    "manifests with old-format pins get the new names; commit ids change, every clone must re-sync",
			    2, NULL, err);
	}
done:
	free(reldir);
	json_decref(live);
	json_decref(h.renames);
	json_decref(h.order);
	return rc;
}

typedef struct ns_rewrite {
	tt_repo *repo;
	const char *ds;
} ns_rewrite;

/* History: every manifest with an old-format pin gets the new name. */
static int ns_transform(void *ctx, const char *commit, const json_t *files, json_t **out, tt_error *err)
{
	ns_rewrite *r = ctx;
	const char *path;
	json_t *text;
	(void)commit;
	*out = json_object();
	if (!*out)
		return tt_error_oom(err);
	json_object_foreach((json_t *)files, path, text) {
		size_t pl = strlen(path);
		const char *t = json_string_value(text);
		tt_manifest m;
		tt_error ig = TT_ERROR_INIT;
		json_object_set(*out, path, text);
		if (pl < 5 || strcmp(path + pl - 5, ".toml") != 0 || !t)
			continue;
		if (tt_manifest_parse(&m, t, strlen(t), path, &ig) < 0) {
			tt_error_clear(&ig);
			continue;
		}
		int rc = 0;
		if (old_pin(&m) && m.state) {
			char id[TT_PIN_ID_MAX], ref[TT_PIN_ID_MAX + 8];
			json_t *loc = resolved_locator(r->repo, &m);
			tt_buf b = TT_BUF_INIT;
			if (!loc)
				rc = tt_error_oom(err);
			else if ((rc = new_pin_id(r->repo, &m, loc, r->ds, id, NULL, err)) == 0) {
				tt_ref_for_pin(ref, sizeof ref, id);
				free(m.pin_id);
				free(m.pin_ref);
				m.pin_id = tt_strdup(id);
				m.pin_ref = tt_strdup(ref);
				if (!m.pin_id || !m.pin_ref)
					rc = tt_error_oom(err);
				else if ((rc = tt_manifest_render(&b, &m, err)) == 0)
					json_object_set_new(*out, path, json_stringn(b.ptr ? b.ptr : "", b.len));
			}
			tt_buf_release(&b);
			json_decref(loc);
		}
		tt_manifest_release(&m);
		if (rc < 0) {
			json_decref(*out);
			*out = NULL;
			return rc;
		}
	}
	return 0;
}

/* Whether a store rename (or the history rewrite) this plan needs can be
 * made here at all: refused before anything is written. */
static int v2_refusals(tt_repo *repo, const tt_plan *plan, tt_error *err)
{
	size_t total = tt_plan_action_count(plan);
	tt_plan_action_view v;
	for (size_t i = 0; i < total; i++) {
		if (!tt_plan_action_at(plan, i, &v) || json_integer_value(json_object_get(v.params, "migration")) != 2)
			continue;
		if (strcmp(v.op, "rewrite-history") == 0 && !tt_vcs_has(repo->vcs, rewrite_history)) {
			tt_error_set(err, TT_ECONFIG, "upgrade: this dataset's history holds old-format pins to rewrite, and "
				     "this tether cannot rewrite %s history", tt_vcs_kind(repo->vcs));
			return tt_error_hint(err, "run the upgrade with tether-vcs 0.1.0b7 (`pip install "
						  "tether-vcs==0.1.0b7`, then `tether upgrade`); nothing was written");
		}
		tt_backend *b;
		if ((strcmp(v.op, "rename-pin") == 0 || strcmp(v.op, "rename-branch") == 0) &&
		    tt_engine_backend(repo, v.kind, &b, err) == 0) {
			bool pin = strcmp(v.op, "rename-pin") == 0;
			/* in place where the kind renames (Neon), else pin + unpin / fork + delete */
			bool can = pin ? tt_backend_has(b, unpin) && (tt_backend_has(b, rename_ref) || tt_backend_has(b, pin))
				       : tt_backend_has(b, rename_ref) ||
					 (tt_backend_has(b, fork) && tt_backend_has(b, delete_working_ref) &&
					  tt_backend_has(b, fingerprint));
			if (!can) {
				tt_error_set(err, TT_ECAPABILITY, "upgrade: [%s] %s cannot rename its %s here (%s)", v.key,
					     v.kind, pin ? "pins" : "working branches", v.target);
				return tt_error_hint(err, "run the upgrade with tether-vcs 0.1.0b7 (`pip install "
							  "tether-vcs==0.1.0b7`, then `tether upgrade`); nothing was written");
			}
		} else if (err->code) {
			return err->code;
		}
	}
	return 0;
}

/* The plan's dataset id, checked against the config; the config takes it
 * first, so a re-run after a failure uses the same namespace.  *ds is
 * borrowed from the plan. */
static int v2_adopt_namespace(tt_repo *repo, const tt_plan *plan, const char **ds, tt_error *err)
{
	const char *id = json_string_value(json_object_get(tt_plan_context(plan), "dataset_id"));
	int rc;
	*ds = NULL;
	if (!id || !tt_is_dataset_id(id))
		return tt_error_set(err, TT_ESTALEPLAN, "upgrade plan carries no dataset id; re-run the plan");
	if (repo->config.dataset_id[0] && strcmp(repo->config.dataset_id, id) != 0)
		return tt_error_set(err, TT_ESTALEPLAN, "this dataset already renamed refs under id %s; the plan carries "
				    "%s -- re-run the plan", repo->config.dataset_id, id);
	if (strcmp(repo->config.dataset_id, id) != 0) {
		memcpy(repo->config.dataset_id, id, TT_DATASET_ID_LEN + 1);
		if ((rc = tt_config_save(&repo->config, repo->root, err)) < 0)
			return rc;
	}
	*ds = id;
	return 0;
}

/* A pin as the store knows it by its old name. */
static void v2_old_pin_of(tt_pin *op, const char *old_id, const char *old_ref)
{
	memset(op, 0, sizeof *op);
	snprintf(op->id, sizeof op->id, "%s", old_id);
	snprintf(op->ref, sizeof op->ref, "%s", old_ref);
}

/* One rename-pin action: skipped when the store already has only the new
 * name, in place where the kind renames, else pin the new name and unpin
 * the old; into rp (old ref -> new ref).  The failure's name when it
 * failed (e says why; caller frees), else NULL. */
static char *v2_rename_pin(tt_repo *repo, const tt_plan_action_view *v, json_t *rp, tt_error *e)
{
	const json_t *loc = json_object_get(v->params, "locator"), *old = json_object_get(v->params, "old");
	const char *old_id = json_string_value(json_object_get(old, "id"));
	const char *old_ref = json_string_value(json_object_get(old, "ref"));
	const char *new_id = json_string_value(json_object_get(v->params, "new_id"));
	char new_ref[TT_PIN_ID_MAX + 8];
	json_t *live = NULL;
	tt_backend *b;
	tt_pin np, op;
	if (!old_id || !old_ref || !new_id)
		return NULL;
	tt_ref_for_pin(new_ref, sizeof new_ref, new_id);
	if (tt_engine_backend(repo, v->kind, &b, e) == 0 && tt_backend_list_pins(b, loc, &live, e) == 0) {
		if (!in_array(live, old_id) && in_array(live, new_id)) {
			json_object_set_new(rp, old_ref, json_string(new_ref));
		} else if (tt_backend_has(b, rename_ref)) {
			/* in place: what hangs off the pin stays on it; a pin
			 * already under the new name makes the old one a
			 * duplicate to drop */
			v2_old_pin_of(&op, old_id, old_ref);
			if ((in_array(live, new_id) ? tt_backend_unpin(b, loc, &op, e)
						    : tt_backend_rename_ref(b, loc, old_ref, new_ref, e)) == 0)
				json_object_set_new(rp, old_ref, json_string(new_ref));
		} else if (tt_backend_pin(b, loc, json_object_get(v->params, "state"), new_id, &np, e) == 0) {
			v2_old_pin_of(&op, old_id, old_ref);
			if (strcmp(op.ref, np.ref) == 0 || tt_backend_unpin(b, loc, &op, e) == 0)
				json_object_set_new(rp, old_ref, json_string(np.ref));
		}
	}
	char *what = e->code ? tt_asprintf("rename-pin %s", old_ref) : NULL;
	json_decref(live);
	return what;
}

/* One rename-branch action: skipped when the store already has only the
 * new name, in place where the kind renames, else fork the new branch at
 * the old one's head and delete the old; into rb (old -> new).  The
 * failure's name when it failed (e says why; caller frees), else NULL. */
static char *v2_rename_branch(tt_repo *repo, const tt_plan_action_view *v, json_t *rb, tt_error *e)
{
	const json_t *loc = json_object_get(v->params, "locator");
	const char *old = json_string_value(json_object_get(v->params, "old"));
	json_t *live = NULL, *head = NULL;
	char *ref = NULL;
	tt_backend *b;
	if (!old)
		return NULL;
	if (tt_engine_backend(repo, v->kind, &b, e) == 0 && tt_backend_list_working_refs(b, loc, &live, e) == 0) {
		if (!in_array(live, old) && in_array(live, v->target)) {
			json_object_set_new(rb, old, json_string(v->target));
		} else if (tt_backend_has(b, rename_ref)) {
			if (tt_backend_rename_ref(b, loc, old, v->target, e) == 0)
				json_object_set_new(rb, old, json_string(v->target));
		} else if (tt_backend_fingerprint(b, loc, old, &head, e) == 0) {
			tt_target src = { .kind = TT_TARGET_STATE, .state = head };
			tt_expect ex = { TT_EXPECT_NONE, NULL };
			if (tt_backend_fork(b, loc, &src, v->target, &ex, &ref, e) == 0 &&
			    (strcmp(ref, old) == 0 || tt_backend_delete_working_ref(b, loc, old, e) == 0))
				json_object_set_new(rb, old, json_string(ref));
		}
	}
	json_decref(head);
	free(ref);
	char *what = e->code ? tt_asprintf("rename-branch %s", old) : NULL;
	json_decref(live);
	return what;
}

/* The stores' renames (migration 2): pins, then working branches, as
 * planned; what already happened is skipped, what fails goes to the
 * report's failed. */
static void v2_store_renames(tt_repo *repo, const tt_plan *plan, json_t *report)
{
	json_t *failed = json_object_get(report, "failed"), *rp = json_object_get(report, "renamed_pins");
	json_t *rb = json_object_get(report, "renamed_branches");
	size_t total = tt_plan_action_count(plan);
	tt_plan_action_view v;
	for (size_t i = 0; i < total; i++) {
		if (!tt_plan_action_at(plan, i, &v) || json_integer_value(json_object_get(v.params, "migration")) != 2)
			continue;
		tt_error e = TT_ERROR_INIT;
		char *what = NULL;
		if (strcmp(v.op, "rename-pin") == 0)
			what = v2_rename_pin(repo, &v, rp, &e);
		else if (strcmp(v.op, "rename-branch") == 0)
			what = v2_rename_branch(repo, &v, rb, &e);
		if (what)
			json_object_set_new(failed, what, json_string(e.message ? e.message : "failed"));
		free(what);
		tt_error_clear(&e);
	}
}

/* Fail closed: a rename that did not happen leaves the manifests naming
 * the old refs; the re-run skips the renames already made. */
static int v2_renames_failed(json_t *failed, tt_error *err)
{
	tt_buf why = TT_BUF_INIT;
	const char *k;
	json_t *x;
	void *it;
	const char **keys = tt_calloc(json_object_size(failed) + 1, sizeof *keys);
	size_t n = 0;
	json_object_foreach_safe(failed, it, k, x) if (keys) keys[n++] = k;
	if (keys)
		qsort(keys, n, sizeof *keys, cmp_cstr);
	for (size_t i = 0; keys && i < n; i++)
		tt_buf_printf(&why, "\n  %s: %s", keys[i], json_string_value(json_object_get(failed, keys[i])));
	free(keys);
	int rc = tt_error_set(err, TT_EBACKEND, "upgrade stopped before rewriting history: %zu store rename(s) failed:%s"
			      "\nfix the cause and re-run `tether upgrade` (renames already made are skipped)",
			      n, why.ptr ? why.ptr : "");
	tt_buf_release(&why);
	return rc;
}

/* The history's manifests with old-format pins get the new names, when
 * the plan has a rewrite-history action; the report's rewritten_commits
 * maps old commit ids to new. */
static int v2_rewrite_history(tt_repo *repo, const tt_plan *plan, const char *ds, json_t *report, tt_error *err)
{
	size_t total = tt_plan_action_count(plan);
	tt_plan_action_view v;
	bool rewrite = false;
	int rc;
	for (size_t i = 0; i < total; i++)
		if (tt_plan_action_at(plan, i, &v) && strcmp(v.op, "rewrite-history") == 0 &&
		    json_integer_value(json_object_get(v.params, "migration")) == 2)
			rewrite = true;
	if (!rewrite)
		return 0;
	char *reldir = tt_engine_objects_reldir(repo);
	ns_rewrite ctx = { repo, ds };
	json_t *mapping = NULL;
	if (!reldir)
		return tt_error_oom(err);
	rc = tt_vcs_rewrite_history(repo->vcs, reldir, ns_transform, &ctx,
				    json_is_true(json_object_get(tt_plan_context(plan), "ignore_immutable")), &mapping,
				    err);
	free(reldir);
	if (rc < 0)
		return rc;
	json_object_update(json_object_get(report, "rewritten_commits"), mapping);
	json_decref(mapping);
	tt_fault("upgrade:after-history");
	return 0;
}

/* The working tree's manifests with old-format pins get the new names,
 * then the objects are read again. */
static int v2_rename_working_pins(tt_repo *repo, const char *ds, tt_error *err)
{
	int rc = 0;
	for (size_t i = 0; i < repo->objects.n && rc == 0; i++) {
		tt_manifest *m = &repo->objects.items[i];
		char id[TT_PIN_ID_MAX], ref[TT_PIN_ID_MAX + 8];
		if (!old_pin(m) || !m->state)
			continue;
		if ((rc = new_pin_id(repo, m, m->locator, ds, id, NULL, err)) < 0)
			break;
		tt_ref_for_pin(ref, sizeof ref, id);
		free(m->pin_id);
		free(m->pin_ref);
		m->pin_id = tt_strdup(id);
		m->pin_ref = tt_strdup(ref);
		rc = m->pin_id && m->pin_ref ? save_where_it_is(repo, m, err) : tt_error_oom(err);
	}
	if (rc < 0)
		return rc;
	return reload_objects(repo, err);
}

/* The workspace's working refs and pending forks in the old format get
 * the new names. */
static int v2_rename_workspace_refs(tt_repo *repo, const char *ds, tt_error *err)
{
	json_t *slugs = key_slugs(repo);
	json_t *tables[] = { repo->ws.working_refs, repo->ws.pending_forks };
	for (size_t t = 0; slugs && t < 2; t++) {
		const char *k;
		json_t *x;
		json_object_foreach(tables[t], k, x) {
			const char *r = json_string_value(x);
			char *nn = r && v1_branch(r, slugs, NULL) ? v1_branch_new(r, ds, slugs) : NULL;
			if (nn)
				json_object_set_new(tables[t], k, json_string(nn));
			free(nn);
		}
	}
	json_decref(slugs);
	return tt_workspace_save(&repo->ws, repo->root, err);
}

static int apply_v2(tt_repo *repo, const tt_plan *plan, json_t *report, tt_error *err)
{
	const char *ds;
	int rc;
	if ((rc = v2_adopt_namespace(repo, plan, &ds, err)) < 0)
		return rc;
	v2_store_renames(repo, plan, report);
	tt_fault("upgrade:after-renames");
	if (json_object_size(json_object_get(report, "failed")))
		return v2_renames_failed(json_object_get(report, "failed"), err);
	if ((rc = v2_rewrite_history(repo, plan, ds, report, err)) < 0 ||
	    (rc = v2_rename_working_pins(repo, ds, err)) < 0)
		return rc;
	return v2_rename_workspace_refs(repo, ds, err);
}

/* The parts a dataset at its version shows it needs, in order (titles
 * into parts). */
static int choose_parts(tt_repo *repo, json_t *parts, tt_error *err)
{
	int v = repo->config.version, rc = 0;
	bool need = false;
	if (v < 4) {
		if ((rc = needs_namespacing(repo, &need, err)) < 0)
			return rc;
		if (need)
			json_array_append_new(parts, json_string(P_NS));
		if ((rc = needs_content_hashes(repo, &need, err)) < 0)
			return rc;
		if (need)
			json_array_append_new(parts, json_string(P_CONTENT));
	}
	if (v < 5) {
		if ((rc = needs_layout(repo, &need, err)) < 0)
			return rc;
		if (need)
			json_array_append_new(parts, json_string(P_LAYOUT));
		json_array_append_new(parts, json_string(P_IDS));
	}
	return 0;
}

static bool has_part(const json_t *parts, const char *title)
{
	size_t i;
	json_t *v;
	json_array_foreach(parts, i, v) if (json_is_string(v) && strcmp(json_string_value(v), title) == 0) return true;
	return false;
}

static int plan_upgrade(tt_repo *repo, bool ignore_immutable, tt_plan **out, tt_error *err)
{
	int from = repo->config.version;
	tt_plan *plan = tt_plan_new("upgrade");
	json_t *parts = NULL;
	int rc = 0;
	*out = NULL;
	if (!plan)
		return tt_error_oom(err);
	bool pending = from < TT_CONFIG_VERSION;
	json_t *ctx = json_pack("{s:i,s:i,s:b,s:[]}", "from", from, "to", TT_CONFIG_VERSION, "ignore_immutable",
				ignore_immutable, "steps");
	if (pending)
		json_array_append_new(json_object_get(ctx, "steps"),
				      json_sprintf("v%d: Bring an older dataset to the current format", TT_CONFIG_VERSION));
	const char *k;
	json_t *v;
	json_object_foreach(ctx, k, v) tt_plan_set_context(plan, k, v, err);
	json_decref(ctx);
	json_t *x = json_integer(from);
	char detail[160];
	snprintf(detail, sizeof detail,
		 "plan was made for version %d, the dataset is at {observed}; re-run the plan", from);
	tt_plan_require(plan, "config_version", x, NULL, NULL, detail, err);
	json_decref(x);
	if (!pending) {
		char note[200];
		int was = interrupted_from(repo);
		if (was)
			snprintf(note, sizeof note, "already at version %d; an interrupted upgrade from version %d left "
				 "tether.toml uncommitted: its VCS commit is made now", from, was);
		else
			snprintf(note, sizeof note, "already at version %d", from);
		tt_plan_note(plan, note, err);
		goto done;
	}
	if (!(parts = json_array())) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = choose_parts(repo, parts, err)) < 0)
		goto done;
	tt_plan_set_context(plan, "parts", parts, err);
	if (has_part(parts, P_NS) && (rc = plan_v2(repo, plan, err)) < 0)
		goto done;
	if (has_part(parts, P_CONTENT) && (rc = plan_v3(repo, plan, err)) < 0)
		goto done;
	if (has_part(parts, P_LAYOUT) && (rc = plan_v4(repo, plan, err)) < 0)
		goto done;
	if (has_part(parts, P_IDS) && (rc = plan_v5(repo, plan, err)) < 0)
		goto done;
	if (!json_array_size(parts))
		tt_plan_note(plan, "the dataset already has the current format; only the version changes", err);
	char target[64];
	tt_buf d = TT_BUF_INIT;
	snprintf(target, sizeof target, "tether upgrade: v%d -> v%d", from, TT_CONFIG_VERSION);
	tt_buf_printf(&d, "tether.toml records version = %d", TT_CONFIG_VERSION);
	size_t i;
	json_array_foreach(parts, i, v) tt_buf_printf(&d, "%s%s", i ? "; " : " after: ", json_string_value(v));
	json_t *params = json_pack("{s:i}", "migration", TT_CONFIG_VERSION);
	tt_plan_action(plan, "vcs-commit", NULL, NULL, target, d.ptr, params, err);
	json_decref(params);
	tt_buf_release(&d);
done:
	json_decref(parts);
	if (rc == 0 && (rc = err->code) == 0)
		*out = plan;
	else
		tt_plan_free(plan);
	return rc;
}

/* In .tether/cache while an upgrade's parts are being written. */
#define MARKER "upgrade-interrupted"

static json_t *report(int from, const char *vcs_commit)
{
	return json_pack("{s:i,s:i,s:{},s:{},s:{},s:[],s:[],s:{},s:[],s:{},s:s?}", "from_version", from, "to_version",
			 TT_CONFIG_VERSION, "renamed_pins", "renamed_branches", "rewritten_commits", "refingerprinted",
			 "rewritten_manifests", "rewritten_indexes", "copied_listings", "failed", "vcs_commit", vcs_commit);
}

/* An upgrade killed after its commit: only the marker is left to clear;
 * *out: the empty report (caller frees). */
static int upgrade_clear_marker(tt_repo *repo, int from, json_t **out, tt_error *err)
{
	char *cache = tt_tether_path(repo->root, TT_CACHE_DIR), *left = cache ? tt_path_join(cache, MARKER) : NULL;
	if (left && tt_is_file(left))
		tt_unlink(left, NULL);
	free(left);
	free(cache);
	*out = report(from, NULL);
	return *out ? 0 : tt_error_oom(err);
}

/*
 * A marker in the per-checkout cache says a killed upgrade of ours left
 * the manifests changed: the re-run plans what is left and finishes.
 * Without it, the manifests (objrel) must be committed; a fresh upgrade
 * writes it.  *marker: its path (caller frees, also on failure).
 */
static int upgrade_marker(tt_repo *repo, int resumed, const char *objrel, char **marker, tt_error *err)
{
	char *cache = tt_tether_path(repo->root, TT_CACHE_DIR);
	int rc = 0;
	*marker = cache ? tt_path_join(cache, MARKER) : NULL;
	if (!*marker) {
		free(cache);
		return tt_error_oom(err);
	}
	bool dirty = false, ours = tt_is_file(*marker);
	if (!ours && (rc = tt_vcs_dirty(repo->vcs, (const char *const[]){ objrel }, 1, &dirty, err)) < 0) {
		free(cache);
		return rc;
	}
	if (!resumed && rc == 0 && (rc = tt_mkdirs(cache, 0755, err)) == 0)
		rc = tt_write_file_atomic(*marker, "upgrade\n", 8, 0644, err);
	free(cache);
	if (rc < 0)
		return rc;
	if (dirty) {
		tt_unlink(*marker, NULL);
		return tt_error_set(err, TT_ECONFIG, "the dataset's manifests have uncommitted changes; commit or restore "
						     "them before upgrading");
	}
	return 0;
}

/* A namespacing that stopped after some store renames: the journal
 * records what did happen, marked stopped (best effort). */
static void record_stopped(tt_repo *repo, const tt_plan *plan, const json_t *result)
{
	if (!json_object_size(json_object_get(result, "renamed_pins")) &&
	    !json_object_size(json_object_get(result, "renamed_branches")))
		return;
	tt_error ig = TT_ERROR_INIT;
	json_t *p = tt_plan_to_object(plan, &ig), *r = json_deep_copy(result);
	if (p && r && json_object_set_new(r, "stopped", json_true()) == 0)
		tt_oplog_record_plan(repo->root, "upgrade", p, r, NULL, NULL, NULL, &ig);
	json_decref(p);
	json_decref(r);
	tt_error_clear(&ig);
}

/* The plan's parts, in order, each into result. */
static int upgrade_parts(tt_repo *repo, const tt_plan *plan, const json_t *parts, json_t *result,
			 const char *marker, tt_error *err)
{
	int rc;
	if (has_part(parts, P_NS) && (rc = apply_v2(repo, plan, result, err)) < 0) {
		/* record what did happen (store renames), then surface the stop */
		record_stopped(repo, plan, result);
		/* it stopped before writing a manifest: the tree is the user's again */
		tt_unlink(marker, NULL);
		return rc;
	}
	if (has_part(parts, P_CONTENT) && (rc = apply_v3(repo, plan, result, err)) < 0)
		return rc;
	if (has_part(parts, P_LAYOUT) && (rc = apply_v4(repo, result, err)) < 0)
		return rc;
	if (has_part(parts, P_IDS) && (rc = apply_v5(repo, plan, result, err)) < 0)
		return rc;
	tt_fault("upgrade:after-parts");
	return 0;
}

/* The VCS commit of what the upgrade changed (the manifests, .gitignore,
 * tether.toml, the listings when there are any), when anything did.
 * *commit: its id (caller frees), NULL when nothing was committed. */
static int upgrade_commit(tt_repo *repo, const char *rel, const char *objrel, int from, char **commit, tt_error *err)
{
	char *paths[4] = { NULL };
	size_t np = 0;
	bool dirty = false;
	int rc = 0;
	paths[np++] = tt_strdup(objrel);
	paths[np++] = *rel ? tt_asprintf("%s/.tether/.gitignore", rel) : tt_strdup(".tether/.gitignore");
	paths[np++] = *rel ? tt_asprintf("%s/tether.toml", rel) : tt_strdup("tether.toml");
	char *listings = tt_tether_path(repo->root, TT_LISTINGS_DIR);
	if (listings && tt_is_dir(listings))
		paths[np++] = *rel ? tt_asprintf("%s/.tether/listings", rel) : tt_strdup(".tether/listings");
	free(listings);
	for (size_t i = 0; i < np; i++)
		if (!paths[i])
			rc = tt_error_oom(err);
	if (rc == 0 && (rc = tt_vcs_dirty(repo->vcs, (const char *const *)paths, np, &dirty, err)) == 0 &&
	    dirty) {
		char msg[64];
		snprintf(msg, sizeof msg, "tether upgrade: v%d -> v%d", from, TT_CONFIG_VERSION);
		rc = tt_vcs_commit(repo->vcs, (const char *const *)paths, np, msg, repo->ws.bookmark, commit, err);
	}
	for (size_t i = 0; i < np; i++)
		free(paths[i]);
	return rc;
}

/* The journal record of the upgrade (the plan and its report). */
static int record_upgrade(tt_repo *repo, const tt_plan *plan, json_t *result, tt_error *err)
{
	json_t *pj = tt_plan_to_object(plan, err);
	if (!pj)
		return err->code ? err->code : tt_error_oom(err);
	int rc = tt_oplog_record_plan(repo->root, "upgrade", pj, result, NULL, NULL, NULL, err);
	json_decref(pj);
	return rc;
}

static int apply_upgrade(tt_repo *repo, const tt_plan *plan, json_t **out, tt_error *err)
{
	int from = repo->config.version, rc;
	char *commit = NULL, *objrel = NULL, *rel = NULL, *marker = NULL;
	json_t *result = NULL;
	const json_t *planned_from = json_object_get(tt_plan_context(plan), "from");
	if ((rc = tt_engine_check_preconditions(repo, plan, "upgrade", err)) < 0)
		return rc;
	if (!json_is_integer(planned_from) || json_integer_value(planned_from) != from)
		return tt_error_set(err, TT_ESTALEPLAN, "plan was made for version %lld, the dataset is at %d; re-run the plan",
				    (long long)json_integer_value(planned_from), from);
	int resumed = from >= TT_CONFIG_VERSION ? interrupted_from(repo) : 0;
	if (from >= TT_CONFIG_VERSION && !resumed)
		return upgrade_clear_marker(repo, from, out, err);
	const json_t *parts = json_object_get(tt_plan_context(plan), "parts");
	/* what this build cannot rename or rewrite is refused before anything is written */
	if (!resumed && has_part(parts, P_NS) && (rc = v2_refusals(repo, plan, err)) < 0)
		return rc;
	if (resumed)
		from = resumed;  /* finish it: the commit and the journal record */
	result = report(from, NULL);
	if (!result)
		return tt_error_oom(err);
	/* The manifests must be committed. */
	rel = dataset_rel(repo);
	objrel = rel ? (*rel ? tt_asprintf("%s/.tether/objects", rel) : tt_strdup(".tether/objects")) : NULL;
	if (!objrel) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = upgrade_marker(repo, resumed, objrel, &marker, err)) < 0)
		goto done;
	if (!resumed && (rc = upgrade_parts(repo, plan, parts, result, marker, err)) < 0)
		goto done;
	repo->config.version = TT_CONFIG_VERSION;
	if ((rc = tt_config_save(&repo->config, repo->root, err)) < 0 ||
	    (rc = tt_ensure_ignored(repo->root, false, err)) < 0)
		goto done;
	tt_fault("upgrade:after-config");
	if ((rc = upgrade_commit(repo, rel, objrel, from, &commit, err)) < 0)
		goto done;
	tt_fault("upgrade:after-vcs-commit");
	if (commit)
		json_object_set_new(result, "vcs_commit", json_string(commit));
	if ((rc = record_upgrade(repo, plan, result, err)) < 0)
		goto done;
	if (tt_is_file(marker))
		tt_unlink(marker, NULL);
	*out = result;
	result = NULL;
done:
	free(commit);
	free(objrel);
	free(rel);
	free(marker);
	json_decref(result);
	return rc;
}

static int plan_upgrade_cmd(tt_repo *repo, void *ctx, bool applying, tt_plan **out, tt_error *err)
{
	(void)applying;
	return plan_upgrade(repo, *(const bool *)ctx, out, err);
}

static int apply_upgrade_cmd(tt_repo *repo, void *ctx, const tt_plan *plan, bool saved, json_t **out,
			     tt_error *err)
{
	(void)ctx, (void)saved;
	return apply_upgrade(repo, plan, out, err);
}

static const tt_planned_cmd upgrade_cmd = {
	.command = "upgrade",
	.locks = TT_PLANNED_CHECKOUT_AT_APPLY,
	.plan = plan_upgrade_cmd,
	.apply = apply_upgrade_cmd,
};

int tt_engine_repo_upgrade(tt_repo *repo, bool ignore_immutable, bool dry_run, const char *from_plan, size_t from_len,
		    char **plan_json, char **plan_text, json_t **out, tt_error *err)
{
	tt_planned_run run = { .dry = dry_run, .from = from_plan, .from_len = from_len, .plan_json = plan_json,
			       .plan_text = plan_text, .out = out };
	/* Manifests an alpha left at another path than their key's are read
	 * throughout: by the plan, and by the lock re-reading the checkout
	 * before the apply (the version stays as loaded). */
	tt_manifests_accept_misplaced(true);
	int rc = tt_engine_run_planned(repo, &upgrade_cmd, &ignore_immutable, &run, err);
	tt_manifests_accept_misplaced(false);
	return rc;
}
