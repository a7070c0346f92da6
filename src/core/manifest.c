/* core/manifest.c - object manifests (see manifest.h). */
#include "core/manifest.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ids.h"
#include "core/layout.h"
#include "core/tomlfile.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/toml.h"

#define MANIFEST_MAX (4u << 20)

int tt_manifest_new(tt_manifest *m, const char *key, const char *kind, json_t *locator,
		    tt_policy policy, tt_error *err)
{
	memset(m, 0, sizeof *m);
	m->key = tt_strdup(key);
	m->kind = tt_strdup(kind);
	m->locator = locator ? json_incref(locator) : json_object();
	m->policy = policy;
	m->recoverable = true;
	if (!m->key || !m->kind || !m->locator) {
		tt_manifest_release(m);
		return tt_error_oom(err);
	}
	return 0;
}

void tt_manifest_release(tt_manifest *m)
{
	if (!m)
		return;
	free(m->key);
	free(m->kind);
	json_decref(m->locator);
	json_decref(m->state);
	free(m->pin_id);
	free(m->pin_ref);
	free(m->captured_at);
	memset(m, 0, sizeof *m);
}

int tt_manifest_copy(tt_manifest *dst, const tt_manifest *src, tt_error *err)
{
	memset(dst, 0, sizeof *dst);
	dst->key = tt_strdup(src->key);
	dst->kind = tt_strdup(src->kind);
	dst->locator = json_deep_copy(src->locator);
	dst->policy = src->policy;
	dst->state = src->state ? json_deep_copy(src->state) : NULL;
	dst->pin_id = src->pin_id ? tt_strdup(src->pin_id) : NULL;
	dst->pin_ref = src->pin_ref ? tt_strdup(src->pin_ref) : NULL;
	dst->captured_at = src->captured_at ? tt_strdup(src->captured_at) : NULL;
	dst->recoverable = src->recoverable;
	dst->created = src->created;
	if (!dst->key || !dst->kind || !dst->locator || (src->state && !dst->state) ||
	    (src->pin_id && !dst->pin_id) || (src->pin_ref && !dst->pin_ref) ||
	    (src->captured_at && !dst->captured_at)) {
		tt_manifest_release(dst);
		return tt_error_oom(err);
	}
	return 0;
}

/* A required-or-optional string field of the manifest, refused when of
 * another type (tether-vcs would str() it; we keep files honest). */
static int req_str(const tt_toml_value *doc, const char *key, char **out, bool required,
		   const char *file, tt_error *err)
{
	const char *s = NULL;
	int rc = tt_toml_get_str(doc, key, &s, file, "manifest", err);
	if (rc < 0)
		return rc;
	if (!s) {
		if (required)
			return tt_toml_refuse(err, file, NULL, "object manifest missing '%s'", key);
		return 0;
	}
	*out = tt_strdup(s);
	return *out ? 0 : tt_error_oom(err);
}

int tt_manifest_parse(tt_manifest *m, const char *text, size_t len, const char *file, tt_error *err)
{
	tt_toml_value *doc = NULL;
	const tt_toml_value *loc = NULL, *pol = NULL, *state = NULL, *pin = NULL;
	const char *origin = NULL;
	int rc;

	memset(m, 0, sizeof *m);
	m->recoverable = true;
	m->policy = TT_POLICY_DEFAULT;
	if ((rc = tt_toml_parse(&doc, text, len, file, err)) < 0)
		return rc;
	if ((rc = req_str(doc, "key", &m->key, true, file, err)) < 0 ||
	    (rc = req_str(doc, "kind", &m->kind, true, file, err)) < 0 ||
	    (rc = req_str(doc, "captured_at", &m->captured_at, false, file, err)) < 0 ||
	    (rc = tt_toml_get_str(doc, "origin", &origin, file, "manifest", err)) < 0 ||
	    (rc = tt_toml_get_bool(doc, "recoverable", &m->recoverable, file, "manifest", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "locator", &loc, file, "manifest", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "policy", &pol, file, "manifest", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "state", &state, file, "manifest", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "pin", &pin, file, "manifest", err)) < 0)
		goto done;
	m->created = origin && strcmp(origin, "created") == 0;
	if ((rc = tt_validate_key(m->key, err)) < 0) {
		tt_error_prefix(err, "%s:%d:%d", file, tt_toml_line(tt_toml_table_get(doc, "key")),
				tt_toml_col(tt_toml_table_get(doc, "key")));
		goto done;
	}
	static const char *const fields[] = { "file", "pin" };
	for (size_t i = 0; pol && i < 2; i++) {
		const char *s = NULL;
		if ((rc = tt_toml_get_str(pol, fields[i], &s, file, "[policy]", err)) < 0)
			goto done;
		if (s && (rc = tt_policy_set(&m->policy, fields[i], s, err)) < 0) {
			const tt_toml_value *v = tt_toml_table_get(pol, fields[i]);
			tt_error_prefix(err, "%s:%d:%d", file, tt_toml_line(v), tt_toml_col(v));
			goto done;
		}
	}
	m->locator = loc ? tt_toml_to_json(loc, file, err) : json_object();
	if (!m->locator) {
		rc = err && err->code ? err->code : tt_error_oom(err);
		goto done;
	}
	if (state && !(m->state = tt_toml_to_json(state, file, err))) {
		rc = err && err->code ? err->code : tt_error_oom(err);
		goto done;
	}
	if (pin) {
		const char *id = NULL, *ref = NULL;
		if ((rc = tt_toml_get_str(pin, "id", &id, file, "[pin]", err)) < 0 ||
		    (rc = tt_toml_get_str(pin, "ref", &ref, file, "[pin]", err)) < 0)
			goto done;
		if (!id || !ref) {
			rc = tt_toml_refuse(err, file, pin, "[pin] needs both id and ref");
			goto done;
		}
		m->pin_id = tt_strdup(id);
		m->pin_ref = tt_strdup(ref);
		if (!m->pin_id || !m->pin_ref) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
done:
	tt_toml_free(doc);
	if (rc < 0)
		tt_manifest_release(m);
	return rc;
}

int tt_manifest_render(tt_buf *out, const tt_manifest *m, tt_error *err)
{
	json_t *doc = json_object();
	tt_toml_value *t = NULL;
	int rc = -1;
	if (!doc)
		return tt_error_oom(err);
	json_object_set_new(doc, "key", json_string(m->key));
	json_object_set_new(doc, "kind", json_string(m->kind));
	json_object_set_new(doc, "recoverable", json_boolean(m->recoverable));
	if (m->created)
		json_object_set_new(doc, "origin", json_string("created"));
	if (m->captured_at)
		json_object_set_new(doc, "captured_at", json_string(m->captured_at));
	json_object_set(doc, "locator", m->locator);
	json_object_set_new(doc, "policy",
			    json_pack("{s:s,s:s}", "file", m->policy.file, "pin", m->policy.pin));
	if (m->state)
		json_object_set(doc, "state", m->state);
	if (m->pin_id)
		json_object_set_new(doc, "pin", json_pack("{s:s,s:s}", "id", m->pin_id, "ref", m->pin_ref));
	if (!(t = tt_toml_from_json(doc, err)))
		goto done;
	rc = tt_toml_write(out, t, err);
done:
	tt_toml_free(t);
	json_decref(doc);
	return rc;
}

int tt_manifest_canonical(tt_buf *out, const tt_manifest *m, tt_error *err)
{
	json_t *doc = json_pack("{s:s,s:s,s:O,s:{s:s,s:s},s:O,s:o,s:b}", "key", m->key, "kind",
				m->kind, "locator", m->locator, "policy", "file", m->policy.file,
				"pin", m->policy.pin, "state", m->state ? m->state : json_null(),
				"pin",
				m->pin_id ? json_pack("{s:s,s:s}", "id", m->pin_id, "ref", m->pin_ref)
					  : json_null(),
				"recoverable", m->recoverable);
	if (!doc)
		return tt_error_oom(err);
	int rc = tt_json_canonical(out, doc);
	json_decref(doc);
	return rc < 0 ? tt_buf_check(out, err, "manifest") : 0;
}

/* --- the working tree's set ---------------------------------------------- */

void tt_manifests_release(tt_manifest_set *set)
{
	if (!set)
		return;
	for (size_t i = 0; i < set->n; i++)
		tt_manifest_release(&set->items[i]);
	free(set->items);
	memset(set, 0, sizeof *set);
}

tt_manifest *tt_manifests_find(const tt_manifest_set *set, const char *key)
{
	for (size_t i = 0; i < set->n; i++)
		if (strcmp(set->items[i].key, key) == 0)
			return &set->items[i];
	return NULL;
}

/* The byte at i of segment seg (len n) followed by sfx, or -1 past its end. */
static int seg_at(const char *seg, size_t n, const char *sfx, size_t i)
{
	if (i < n)
		return (unsigned char)seg[i];
	i -= n;
	return i < strlen(sfx) ? (unsigned char)sfx[i] : -1;
}

int tt_key_path_order(const char *a, const char *b)
{
	for (;;) {
		size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
		bool lasta = !a[la], lastb = !b[lb];
		const char *sa = lasta ? ".toml" : "", *sb = lastb ? ".toml" : "";
		for (size_t i = 0;; i++) {
			int ca = seg_at(a, la, sa, i), cb = seg_at(b, lb, sb, i);
			if (ca != cb)
				return ca < cb ? -1 : 1;
			if (ca < 0)
				break;
		}
		if (lasta || lastb)
			return lasta == lastb ? 0 : lasta ? -1 : 1;
		a += la + 1;
		b += lb + 1;
	}
}

static int cmp_manifest(const void *a, const void *b)
{
	return strcmp(((const tt_manifest *)a)->key, ((const tt_manifest *)b)->key);
}

/* `upgrade` reads manifests a release before 0.1.0b1 left at another path
 * than their key's (it moves them); everything else refuses them. */
static _Thread_local bool accept_misplaced;

void tt_manifests_accept_misplaced(bool yes)
{
	accept_misplaced = yes;
}

/* Walk objects/<rel>; rel is "" at the top. */
static int walk(tt_manifest_set *set, const char *objdir, const char *rel, int depth, tt_error *err)
{
	char *dirpath = rel[0] ? tt_path_join(objdir, rel) : tt_strdup(objdir);
	DIR *d = NULL;
	int rc = 0;
	struct dirent *e;

	if (!dirpath)
		return tt_error_oom(err);
	if (depth > 64) {
		rc = tt_error_set(err, TT_ECONFIG, ".tether/objects/%s nests too deep", rel);
		goto done;
	}
	if (!(d = opendir(dirpath))) {
		rc = tt_error_errno(err, errno, "cannot read .tether/objects/%s", rel);
		goto done;
	}
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *sub = rel[0] ? tt_asprintf("%s/%s", rel, e->d_name) : tt_strdup(e->d_name);
		char *full = sub ? tt_path_join(objdir, sub) : NULL;
		struct stat st;
		if (!full) {
			free(sub);
			rc = tt_error_oom(err);
			goto done;
		}
		if (lstat(full, &st) != 0) {
			rc = tt_error_errno(err, errno, "cannot stat .tether/objects/%s", sub);
		} else if (S_ISLNK(st.st_mode)) {
			rc = tt_error_set(err, TT_ECONFIG,
					  ".tether/objects/%s is a symbolic link; manifests are plain files "
					  "(a clone must not point tether at files outside .tether)", sub);
			tt_error_hint(err, "remove the link and restore the manifest from history");
		} else if (S_ISDIR(st.st_mode)) {
			rc = walk(set, objdir, sub, depth + 1, err);
		} else if (S_ISREG(st.st_mode) && strlen(sub) > 5 &&
			   strcmp(sub + strlen(sub) - 5, ".toml") == 0) {
			tt_buf text = TT_BUF_INIT;
			char *label = tt_asprintf(".tether/objects/%s", sub);
			if (!label)
				rc = tt_error_oom(err);
			else if ((rc = tt_read_file(full, &text, MANIFEST_MAX, err)) == 0 &&
				 TT_ARRAY_GROW(set->items, set->alloc, set->n + 1) < 0)
				rc = tt_error_oom(err);
			else if (rc == 0) {
				tt_manifest *m = &set->items[set->n];
				rc = tt_manifest_parse(m, text.ptr, text.len, label, err);
				if (rc == 0) {
					set->n++;
					size_t kl = strlen(m->key);
					if (!accept_misplaced &&
					    (kl + 5 != strlen(sub) || strncmp(sub, m->key, kl) != 0)) {
						rc = tt_error_set(err, TT_ECONFIG,
								  "%s declares key '%s', which belongs in "
								  ".tether/objects/%s.toml", label, m->key, m->key);
						tt_error_hint(err, "move the file or fix its key");
					}
				}
			}
			free(label);
			tt_buf_release(&text);
		}
		free(sub);
		free(full);
		if (rc < 0)
			goto done;
	}
done:
	if (d)
		closedir(d);
	free(dirpath);
	return rc;
}

int tt_manifests_load(tt_manifest_set *set, const char *root, tt_error *err)
{
	char *objdir = tt_tether_path(root, TT_OBJECTS_DIR);
	int rc = 0;
	memset(set, 0, sizeof *set);
	if (!objdir)
		return tt_error_oom(err);
	/* Also after a checkout changed the tree: the links a commit brought. */
	if ((rc = tt_check_dataset_links(root, err)) < 0 ||
	    (rc = tt_refuse_links(root, TT_DIR "/" TT_OBJECTS_DIR, err)) < 0) {
		free(objdir);
		return rc;
	}
	if (tt_is_dir(objdir))
		rc = walk(set, objdir, "", 0, err);
	free(objdir);
	if (rc < 0) {
		tt_manifests_release(set);
		return rc;
	}
	if (set->n)
		qsort(set->items, set->n, sizeof *set->items, cmp_manifest);
	return 0;
}

int tt_manifests_hash(char hex[65], const tt_manifest_set *set, tt_error *err)
{
	tt_keyed_canon *entries = tt_calloc(set->n, sizeof *entries);
	tt_buf *canon = tt_calloc(set->n, sizeof *canon);
	int rc = 0;
	if (!entries || !canon) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < set->n; i++) {
		tt_buf_init(&canon[i], 0);
		if ((rc = tt_manifest_canonical(&canon[i], &set->items[i], err)) < 0)
			goto done;
		entries[i].key = set->items[i].key;
		entries[i].canonical = canon[i].ptr;
	}
	rc = tt_manifest_hash_of(hex, entries, set->n, err);
done:
	for (size_t i = 0; canon && i < set->n; i++)
		tt_buf_release(&canon[i]);
	free(canon);
	free(entries);
	return rc;
}

static char *manifest_path(const char *root, const char *key, tt_error *err)
{
	char *rel = NULL, *p;
	if (tt_key_relpath(&rel, key, err) < 0)
		return NULL;
	char *under = tt_asprintf(TT_DIR "/%s", rel);
	if (!under || tt_refuse_links(root, under, err) < 0) {
		if (!under)
			tt_error_oom(err);
		free(under);
		free(rel);
		return NULL;
	}
	free(under);
	p = tt_tether_path(root, rel);
	free(rel);
	if (!p)
		tt_error_oom(err);
	return p;
}

int tt_manifest_save(const tt_manifest *m, const char *root, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	char *path = manifest_path(root, m->key, err);
	int rc = path ? tt_manifest_render(&b, m, err) : err->code;
	if (rc == 0)
		rc = tt_write_file_atomic(path, b.ptr, b.len, 0644, err);
	free(path);
	tt_buf_release(&b);
	return rc;
}

int tt_manifest_delete(const char *root, const char *key, tt_error *err)
{
	char *path = manifest_path(root, key, err);
	char *objdir = tt_tether_path(root, TT_OBJECTS_DIR);
	int rc = path && objdir ? tt_unlink(path, err) : (path ? tt_error_oom(err) : err->code);
	if (rc == 0) {
		char *dir = tt_dirname(path);
		if (dir)
			tt_prune_empty_dirs(dir, objdir);
		free(dir);
	}
	free(path);
	free(objdir);
	return rc;
}

int tt_manifest_read_text(char **out, const char *root, const char *key, tt_error *err)
{
	char *path = manifest_path(root, key, err);
	tt_buf b = TT_BUF_INIT;
	int rc;
	*out = NULL;
	if (!path)
		return err->code;
	if (!tt_is_file(path)) {
		free(path);
		return 0;
	}
	rc = tt_read_file(path, &b, MANIFEST_MAX, err);
	if (rc == 0)
		*out = tt_buf_detach(&b);
	tt_buf_release(&b);
	free(path);
	return rc;
}
