/*
 * backends/lance/lance.c - Lance datasets, read and referenced natively.
 *
 * Everything goes through the dataset's own files: manifests (decoded by
 * formats/lance_manifest), tags (_refs/tags/<name>.json) and branches
 * (_refs/branches/<name>.json plus tree/<name>/), in the layout pylance 14
 * writes, so pylance reads what we write and we read what it writes.
 *
 * A state is {branch, version} plus, on any branch but main, branch_id:
 * Lance numbers versions per branch and restarts them when a branch is
 * re-created, so the id (the last entry of the branch's identifier) tells
 * two lives of one name apart.  An untouched fork reports its parent's
 * (branch, version), so a no-op commit after `tether new` stays a no-op.
 *
 * Pins are tags "tether.<id>" (create-only, so racing pins agree);
 * forks are branches cloned from a tag's manifest (create-only manifest,
 * then create-only branch file, as Lance orders them).  Lance refuses to
 * delete a branch a tag references, so re-forking a pinned working branch
 * picks a sibling name.  Promote and merge do not exist: Lance cannot move
 * a branch head.
 *
 * Every file is read and written through the storage layer
 * (storage/store.h): a local directory, or an object-store prefix, where
 * create-only is If-None-Match: *.
 */
#define _GNU_SOURCE 1
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/kit.h"
#include "formats/lance_manifest.h"
#include "storage/open.h"
#include "storage/store.h"
#include "util/buf.h"
#include "util/fault.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"

#define KIND "lance"
#define MAIN "main"
#define PIN_PREFIX "tether."
#define MAX_MANIFEST (256u << 20)
#define MAX_REF (1u << 20)


/* --- storage ------------------------------------------------------------------ */

/*
 * The dataset's files through the storage layer (storage/store.h), paths
 * relative to the dataset root: a local directory or an object-store
 * prefix.  read: TT_ENOTFOUND when absent.  list: the names in a directory
 * (none when it is absent; never the temporaries of writes in flight).
 * put_new: create-only (TT_EEXISTS; If-None-Match: * on an object store).
 * remove: gone is fine.  remove_tree: a whole directory (locally with what
 * an interrupted write left in it).
 */
typedef struct lstore {
	tt_store *st;
	bool remote;
	char *root;   /* the dataset root as the locator gives it (for messages, base paths) */
	char *prefix; /* the dataset's key prefix, "" or "a/b.lance/" */
} lstore;

static void free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

/* A local dataset's path for rel (messages only: nothing is opened by it). */
static char *local_path(lstore *s, const char *rel)
{
	return rel && *rel ? tt_path_join(s->root, rel) : tt_strdup(s->root);
}

static char *ls_key(lstore *s, const char *rel)
{
	return tt_asprintf("%s%s", s->prefix, rel ? rel : "");
}

/* The store's name for directory rel ("" the root): the key without a
 * trailing '/'. */
static char *ls_dir(lstore *s, const char *rel)
{
	size_t n = strlen(s->prefix);
	if (rel && *rel)
		return ls_key(s, rel);
	return n ? tt_strndup(s->prefix, n - 1) : tt_strdup("");
}

static int ls_read(lstore *s, const char *rel, tt_buf *out, size_t max, tt_error *err)
{
	char *k = ls_key(s, rel);
	int rc;
	if (!k)
		return KOOM(err);
	out->max = max;
	rc = tt_store_get(s->st, k, NULL, out, NULL, err);
	free(k);
	return rc;
}

static int ls_list(lstore *s, const char *rel, char ***names, size_t *n, tt_error *err)
{
	tt_store_page page = { 0 };
	char *dir = ls_dir(s, rel);
	int rc;
	*names = NULL;
	*n = 0;
	if (!dir)
		return KOOM(err);
	rc = tt_store_list_names(s->st, dir, &page, err);
	free(dir);
	if (rc == 0 && page.n && !(*names = tt_calloc(page.n, sizeof **names)))
		rc = KOOM(err);
	for (size_t i = 0; rc == 0 && i < page.n; i++)
		if (!((*names)[(*n)++] = tt_strdup(page.items[i].key)))
			rc = KOOM(err);
	if (rc) {
		free_names(*names, *n);
		*names = NULL;
		*n = 0;
	}
	tt_store_page_release(&page);
	return rc;
}

static int ls_put_new(lstore *s, const char *rel, const void *data, size_t len, tt_error *err)
{
	char *k = ls_key(s, rel);
	int rc = k ? tt_store_put_if_absent(s->st, k, data, len, NULL, err) : KOOM(err);
	free(k);
	return rc;
}

static int ls_remove(lstore *s, const char *rel, tt_error *err)
{
	char *k = ls_key(s, rel);
	int rc = k ? tt_store_delete(s->st, k, err) : KOOM(err);
	free(k);
	return rc;
}

static int ls_remove_tree(lstore *s, const char *rel, tt_error *err)
{
	char *k = ls_key(s, rel);
	int rc = k ? tt_store_delete_tree(s->st, k, err) : KOOM(err);
	free(k);
	return rc;
}

/* A file at rel. */
static bool ls_has_file(lstore *s, const char *rel)
{
	tt_error quiet = TT_ERROR_INIT;
	tt_store_meta meta;
	char *k = ls_key(s, rel);
	bool yes = k && tt_store_head(s->st, k, NULL, &meta, &quiet) == 0;
	if (k)
		tt_store_meta_release(&meta);
	tt_error_clear(&quiet);
	free(k);
	return yes;
}

/* A directory at rel (locally even one holding only what an interrupted
 * write left). */
static bool ls_has_dir(lstore *s, const char *rel)
{
	char *k = ls_key(s, rel);
	bool yes = k && tt_store_has_dir(s->st, k);
	free(k);
	return yes;
}

static void lstore_close(lstore *s)
{
	free(s->root);
	s->root = NULL;
	tt_store_close(s->st);
	s->st = NULL;
	free(s->prefix);
	s->prefix = NULL;
}

/* Open a remote dataset root: the store, and the key prefix within it. */
static int open_remote(tt_backend *b, const json_t *loc, const char *uri, lstore *s, tt_error *err)
{
	json_t *opts = NULL;
	char *key = NULL;
	int rc = tt_kit_storage_options(b, loc, &opts, err);
	if (rc)
		return rc;
	rc = tt_store_open_uri(uri, opts, &s->st, &key, err);
	json_decref(opts);
	if (rc) {
		tt_error_object(err, NULL, KIND);
		return rc;
	}
	size_t n = strlen(key);
	while (n && key[n - 1] == '/')
		key[--n] = '\0';
	s->prefix = n ? tt_asprintf("%s/", key) : tt_strdup("");
	free(key);
	/* the root as written, without a trailing '/' (base paths join onto it) */
	n = strlen(uri);
	while (n > 1 && uri[n - 1] == '/')
		n--;
	s->root = tt_strndup(uri, n);
	s->remote = true;
	if (!s->prefix || !s->root) {
		lstore_close(s);
		return KOOM(err);
	}
	/* a dataset has versions: anything else is no dataset (or a refusal
	 * from the store, which says so) */
	char **names = NULL;
	size_t nn = 0;
	if ((rc = ls_list(s, "_versions", &names, &nn, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		lstore_close(s);
		return rc;
	}
	free_names(names, nn);
	if (!nn) {
		KERR(err, TT_EBACKEND, "cannot open lance dataset %s: no _versions under it", uri);
		lstore_close(s);
		return err->code;
	}
	return 0;
}

/* --- locators ----------------------------------------------------------------- */

static const char *loc_uri(const json_t *loc)
{
	const json_t *v = json_object_get(loc, "uri");
	if (!json_is_string(v) || !json_string_length(v))
		v = json_object_get(loc, "path");
	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

static int open_store(tt_backend *b, const json_t *loc, lstore *s, tt_error *err)
{
	const char *uri = loc_uri(loc);
	char *path = NULL;
	int local, rc;

	memset(s, 0, sizeof *s);
	if (!uri)
		return KERR(err, TT_EBACKEND, "lance locator needs 'uri'");
	local = tt_store_local_path(uri, &path);
	if (local < 0)
		return KOOM(err);
	if (local == 0)
		return open_remote(b, loc, uri, s, err);
	if (!tt_is_dir(path)) {
		KERR(err, TT_EBACKEND, "cannot open lance dataset %s: no such directory", uri);
		free(path);
		return err->code;
	}
	s->root = path;
	if (!(s->prefix = tt_strdup(""))) {
		lstore_close(s);
		return KOOM(err);
	}
	if ((rc = tt_store_local_open(path, false, &s->st, err)) != 0) {
		tt_error_object(err, NULL, KIND);
		lstore_close(s);
	}
	return rc;
}

static const char *base_branch_of(const json_t *loc)
{
	const json_t *v = json_object_get(loc, "branch");
	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : MAIN;
}

/* The locator's `at` as text, NULL when absent. */
static char *at_of(const json_t *loc)
{
	const json_t *v = json_object_get(loc, "at");
	if (!v || json_is_null(v))
		return NULL;
	return tt_pyv_str_dup(v);
}

static bool is_main(const char *branch)
{
	return !branch || !*branch || strcmp(branch, MAIN) == 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

/* Lance's ref name rules (tags and each branch segment): ASCII letters,
 * digits, '.', '-', '_'; no leading/trailing '.', no "..", no ".lock". */
static bool ref_segment_ok(const char *s, size_t n)
{
	if (!n || s[0] == '.' || s[n - 1] == '.' || (n >= 5 && memcmp(s + n - 5, ".lock", 5) == 0))
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '.' || c == '-' || c == '_'))
			return false;
		if (c == '.' && i + 1 < n && s[i + 1] == '.')
			return false;
	}
	return true;
}

static bool branch_name_ok(const char *name)
{
	if (is_main(name) || name[0] == '/' || name[strlen(name) - 1] == '/')
		return false;
	for (const char *p = name;;) {
		const char *q = strchr(p, '/');
		size_t n = q ? (size_t)(q - p) : strlen(p);
		if (!ref_segment_ok(p, n))
			return false;
		if (!q)
			return true;
		p = q + 1;
	}
}

/* --- versions and manifests ------------------------------------------------------ */

static char *versions_dir(const char *branch)
{
	return is_main(branch) ? tt_strdup("_versions") : tt_asprintf("tree/%s/_versions", branch);
}

static const char *shown(const char *branch)
{
	return is_main(branch) ? MAIN : branch;
}

/* The newest attached version on a branch; *found false when none. */
static int latest_version(lstore *s, const char *branch, uint64_t *version, bool *found,
			  int *scheme, tt_error *err)
{
	char *dir = versions_dir(branch), **names = NULL;
	size_t n = 0;
	int rc, seen = 0;

	*found = false;
	*version = 0;
	if (!dir)
		return KOOM(err);
	if ((rc = ls_list(s, dir, &names, &n, err)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		uint64_t v;
		bool v2;
		if (tt_lance_manifest_name(names[i], &v, &v2) != 1)
			continue;
		seen |= v2 ? 2 : 1;
		if (!*found || v > *version)
			*version = v;
		*found = true;
	}
	if (seen == 3) {
		rc = KERR(err, TT_EBACKEND,
			  "lance dataset %s: %s mixes both manifest naming schemes; Lance refuses such a "
			  "dataset too (migrate it with pylance's migrate_manifest_paths_v2)",
			  s->root, dir);
		goto done;
	}
	if (scheme)
		*scheme = seen ? seen : 2;
done:
	free_names(names, n);
	free(dir);
	return rc;
}

/* The relative path of version v's manifest on branch (V2 name first),
 * NULL in *rel when it does not exist. */
static int manifest_rel(lstore *s, const char *branch, uint64_t v, char **rel, tt_error *err)
{
	char *dir = versions_dir(branch);
	*rel = NULL;
	if (!dir)
		return KOOM(err);
	char *v2 = tt_asprintf("%s/%020" PRIu64 ".manifest", dir, UINT64_MAX - v);
	char *v1 = tt_asprintf("%s/%" PRIu64 ".manifest", dir, v);
	free(dir);
	if (!v2 || !v1) {
		free(v1);
		free(v2);
		return KOOM(err);
	}
	if (ls_has_file(s, v2)) {
		*rel = v2;
		free(v1);
	} else if (ls_has_file(s, v1)) {
		*rel = v1;
		free(v2);
	} else {
		free(v1);
		free(v2);
	}
	return 0;
}

/* Read and decode version v of branch; TT_ENOTFOUND when there is none.
 * raw (may be NULL) receives the file's bytes. */
static int load_manifest(lstore *s, const char *branch, uint64_t v, tt_lance_manifest *m,
			 tt_buf *raw, tt_error *err)
{
	char *rel = NULL, why[256];
	tt_buf buf = TT_BUF_INIT;
	int rc;

	memset(m, 0, sizeof *m);
	if ((rc = manifest_rel(s, branch, v, &rel, err)) < 0)
		return rc;
	if (!rel) {
		rc = tt_error_set(err, TT_ENOTFOUND,
				  "lance dataset %s has no version %" PRIu64 " on branch %s", s->root, v,
				  shown(branch));
		return tt_error_object(err, NULL, KIND);
	}
	if ((rc = ls_read(s, rel, &buf, MAX_MANIFEST, err)) < 0) {
		tt_error_prefix(err, "lance dataset %s", s->root);
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	if (tt_lance_manifest_parse(m, buf.ptr, buf.len, why, sizeof why) < 0) {
		rc = KERR(err, TT_EBACKEND, "lance dataset %s: corrupt manifest %s/%s: %s", s->root, s->root,
			  rel, why);
		goto done;
	}
	if (m->version != v) {
		rc = KERR(err, TT_EBACKEND,
			  "lance dataset %s: corrupt manifest %s/%s: it says version %" PRIu64
			  " but its name says %" PRIu64, s->root, s->root, rel, m->version, v);
		tt_lance_manifest_release(m);
		goto done;
	}
	if (raw) {
		*raw = buf;
		buf = (tt_buf)TT_BUF_INIT;
	}
done:
	tt_buf_release(&buf);
	free(rel);
	return rc;
}

static int manifest_size(lstore *s, const char *branch, uint64_t v, size_t *size, tt_error *err)
{
	tt_lance_manifest m;
	tt_buf raw = TT_BUF_INIT;
	int rc = load_manifest(s, branch, v, &m, &raw, err);
	if (rc == 0) {
		*size = raw.len;
		tt_lance_manifest_release(&m);
	}
	tt_buf_release(&raw);
	return rc;
}

/* --- refs: tags and branches ---------------------------------------------------- */

static int read_ref_json(lstore *s, const char *rel, json_t **out, tt_error *err)
{
	tt_buf buf = TT_BUF_INIT;
	int rc;
	*out = NULL;
	rc = ls_read(s, rel, &buf, MAX_REF, err);
	if (rc == TT_ENOTFOUND) {
		tt_error_clear(err);
		rc = 0;
	} else if (rc == 0) {
		tt_error perr = TT_ERROR_INIT;
		*out = tt_json_parse(buf.ptr, buf.len, rel, &perr);
		if (!*out || !json_is_object(*out)) {
			json_decref(*out);
			*out = NULL;
			rc = KERR(err, TT_EBACKEND, "lance dataset %s: corrupt ref file %s/%s: %s", s->root,
				  s->root, rel, perr.code ? tt_error_text(&perr) : "not a JSON object");
		}
		tt_error_clear(&perr);
	}
	tt_buf_release(&buf);
	return rc;
}

/* '/' in a branch name is %2F in its file name. */
static char *branch_file(const char *name)
{
	tt_buf b = TT_BUF_INIT;
	tt_buf_puts(&b, "_refs/branches/");
	for (const char *p = name; *p; p++)
		if (*p == '/')
			tt_buf_puts(&b, "%2F");
		else
			tt_buf_putc(&b, *p);
	tt_buf_puts(&b, ".json");
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

static char *branch_name_of_file(const char *file)
{
	size_t n = strlen(file);
	if (n <= 5 || strcmp(file + n - 5, ".json") != 0)
		return NULL;
	tt_buf b = TT_BUF_INIT;
	for (size_t i = 0; i < n - 5; i++) {
		if (strncmp(file + i, "%2F", 3) == 0 || strncmp(file + i, "%2f", 3) == 0) {
			tt_buf_putc(&b, '/');
			i += 2;
		} else {
			tt_buf_putc(&b, file[i]);
		}
	}
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

/* A tag's (branch, version); false when the JSON lacks them. */
static bool tag_target(const json_t *tag, const char **branch, uint64_t *version)
{
	const json_t *b = json_object_get(tag, "branch"), *v = json_object_get(tag, "version");
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return false;
	*branch = json_is_string(b) && !is_main(json_string_value(b)) ? json_string_value(b) : MAIN;
	*version = (uint64_t)json_integer_value(v);
	return true;
}

static int read_tag(lstore *s, const char *name, json_t **out, tt_error *err)
{
	*out = NULL;
	if (!ref_segment_ok(name, strlen(name)))
		return 0;
	char *rel = tt_asprintf("_refs/tags/%s.json", name);
	if (!rel)
		return KOOM(err);
	int rc = read_ref_json(s, rel, out, err);
	if (rc == 0 && *out) {
		const char *br;
		uint64_t v;
		if (!tag_target(*out, &br, &v)) {
			rc = KERR(err, TT_EBACKEND, "lance dataset %s: corrupt tag file %s/%s: no version",
				  s->root, s->root, rel);
			json_decref(*out);
			*out = NULL;
		}
	}
	free(rel);
	return rc;
}

/* Every tag: {name: json}. */
static int list_tags(lstore *s, json_t **out, tt_error *err)
{
	char **names = NULL;
	size_t n = 0;
	int rc;

	*out = json_object();
	if (!*out)
		return KOOM(err);
	if ((rc = ls_list(s, "_refs/tags", &names, &n, err)) < 0)
		goto done;
	for (size_t i = 0; i < n && rc == 0; i++) {
		size_t l = strlen(names[i]);
		if (l <= 5 || strcmp(names[i] + l - 5, ".json") != 0)
			continue;
		names[i][l - 5] = '\0';
		json_t *t = NULL;
		if ((rc = read_tag(s, names[i], &t, err)) == 0 && t)
			json_object_set_new(*out, names[i], t);
	}
done:
	free_names(names, n);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static int read_branch(lstore *s, const char *name, json_t **out, tt_error *err)
{
	char *rel = branch_file(name);
	*out = NULL;
	if (!rel)
		return KOOM(err);
	int rc = read_ref_json(s, rel, out, err);
	free(rel);
	return rc;
}

/* Every branch: {name: json}. */
static int list_branches(lstore *s, json_t **out, tt_error *err)
{
	char **names = NULL;
	size_t n = 0;
	int rc;

	*out = json_object();
	if (!*out)
		return KOOM(err);
	if ((rc = ls_list(s, "_refs/branches", &names, &n, err)) < 0)
		goto done;
	for (size_t i = 0; i < n && rc == 0; i++) {
		char *name = branch_name_of_file(names[i]);
		if (!name)
			continue;
		json_t *j = NULL;
		if ((rc = read_branch(s, name, &j, err)) == 0 && j)
			json_object_set_new(*out, name, j);
		free(name);
	}
done:
	free_names(names, n);
	if (rc) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static uint64_t fnv1a(uint64_t h, const char *s)
{
	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 0x100000001b3ULL;
	}
	return h;
}

/* The branch's identifier (an array of [version, id]); legacy branch files
 * without one get Lance's deterministic stand-in. */
static json_t *branch_identifier(const char *name, const json_t *meta)
{
	const json_t *id = json_object_get(json_object_get(meta, "identifier"), "version_mapping");
	if (json_is_array(id))
		return json_incref((json_t *)id);
	const json_t *pb = json_object_get(meta, "parentBranch");
	char *in = tt_asprintf("branch_name=%s\nparent_branch=%s\nparent_version=%lld\ncreate_at=%lld",
			       name, json_is_string(pb) ? json_string_value(pb) : "",
			       (long long)json_integer_value(json_object_get(meta, "parentVersion")),
			       (long long)json_integer_value(json_object_get(meta, "createAt")));
	if (!in)
		return NULL;
	uint64_t seed = 0xcbf29ce484222325ULL;
	char hex[33];
	snprintf(hex, sizeof hex, "%016" PRIx64 "%016" PRIx64, fnv1a(seed, in),
		 fnv1a(seed ^ 0x9e3779b97f4a7c15ULL, in));
	free(in);
	return json_pack("[[i,s]]", 0, hex);
}

/* The id of the branch's current life: its identifier's last entry. */
static char *branch_id_of(const char *name, const json_t *meta)
{
	json_t *id = branch_identifier(name, meta);
	const json_t *last = json_array_get(id, json_array_size(id) ? json_array_size(id) - 1 : 0);
	const json_t *hex = json_array_get(last, 1);
	char *out = json_is_string(hex) ? tt_strdup(json_string_value(hex)) : NULL;
	json_decref(id);
	return out;
}

/* The state {branch, version[, branch_id]}. */
static int make_state(lstore *s, const char *branch, uint64_t version, json_t **state, tt_error *err)
{
	*state = json_pack("{s:s, s:I}", "branch", shown(branch), "version", (json_int_t)version);
	if (!*state)
		return KOOM(err);
	if (is_main(branch))
		return 0;
	json_t *meta = NULL;
	int rc = read_branch(s, branch, &meta, err);
	if (rc == 0 && meta) {
		char *id = branch_id_of(branch, meta);
		if (id)
			json_object_set_new(*state, "branch_id", json_string(id));
		free(id);
	}
	json_decref(meta);
	if (rc) {
		json_decref(*state);
		*state = NULL;
	}
	return rc;
}

static int state_ref(const json_t *state, const char **branch, uint64_t *version, tt_error *err)
{
	const json_t *b = json_object_get(state, "branch"), *v = json_object_get(state, "version");
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return KERR(err, TT_EBACKEND, "lance state has no version: not a state this backend recorded");
	*branch = json_is_string(b) && json_string_length(b) ? json_string_value(b) : MAIN;
	*version = (uint64_t)json_integer_value(v);
	return 0;
}

/* Refuse a state recorded on an earlier life of its branch. */
static int check_branch_life(lstore *s, const json_t *state, tt_error *err)
{
	const json_t *rec = json_object_get(state, "branch_id");
	const char *branch;
	uint64_t v;
	json_t *meta = NULL;
	char *now = NULL;
	int rc;

	if (!rec || json_is_null(rec))
		return 0;
	if ((rc = state_ref(state, &branch, &v, err)) < 0)
		return rc;
	if (!is_main(branch) && (rc = read_branch(s, branch, &meta, err)) < 0)
		return rc;
	now = meta ? branch_id_of(branch, meta) : NULL;
	char *recorded = tt_pyv_str_dup(rec);
	if (!recorded || !now || strcmp(now, recorded) != 0)
		rc = KERR(err, TT_EBACKEND,
			  "lance branch %s was deleted and re-created since this state was recorded; its "
			  "version %" PRIu64 " is gone", branch, v);
	free(recorded);
	free(now);
	json_decref(meta);
	return rc;
}

static int check_version(lstore *s, const char *branch, uint64_t v, tt_error *err);

/* A branch's head version; TT_EBACKEND naming it when it has none. */
static int head_of(lstore *s, const char *branch, uint64_t *version, tt_error *err)
{
	bool found;
	int rc;
	if (!is_main(branch)) {
		json_t *meta = NULL;
		if ((rc = read_branch(s, branch, &meta, err)) < 0)
			return rc;
		json_decref(meta);
		if (!meta)
			return KERR(err, TT_EBACKEND, "lance ref '%s' not found: no such branch in %s",
				    branch, s->root);
	}
	if ((rc = latest_version(s, branch, version, &found, NULL, err)) < 0)
		return rc;
	if (!found)
		return KERR(err, TT_EBACKEND, "lance dataset %s has no versions on branch %s", s->root,
			    shown(branch));
	/* The head must decode: a damaged manifest is reported here, naming
	 * the file, before anything is recorded or written. */
	return check_version(s, branch, *version, err);
}

/* `at`: a tag, else a version number of the base branch. */
static int resolve_at(lstore *s, const json_t *loc, const char *at, const char **branch,
		      uint64_t *version, json_t **hold, tt_error *err)
{
	json_t *tag = NULL;
	int rc = read_tag(s, at, &tag, err);
	*hold = NULL;
	if (rc < 0)
		return rc;
	if (tag) {
		tag_target(tag, branch, version);
		*hold = tag;
		return 0;
	}
	if (all_digits(at) && strlen(at) < 20) {
		*branch = base_branch_of(loc);
		*version = strtoull(at, NULL, 10);
		return 0;
	}
	char *r = tt_pyv_repr_dup(at);
	rc = KERR(err, TT_EBACKEND, "%s is neither a tag nor a version number", r ? r : at);
	free(r);
	return rc;
}

/* Version v exists on branch (its manifest decodes). */
static int check_version(lstore *s, const char *branch, uint64_t v, tt_error *err)
{
	tt_lance_manifest m;
	int rc = load_manifest(s, branch, v, &m, NULL, err);
	if (rc == TT_ENOTFOUND) {
		tt_error_clear(err);
		return KERR(err, TT_EBACKEND, "lance ref (%s, %" PRIu64 ") not found in %s", shown(branch), v,
			    s->root);
	}
	if (rc == 0)
		tt_lance_manifest_release(&m);
	return rc;
}

/* --- identity, fingerprint ----------------------------------------------------------- */

static int lance_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	const char *uri = loc_uri(loc);
	char *path = NULL;
	*out = NULL;
	if (!uri)
		return KERR(err, TT_EBACKEND, "lance locator needs 'uri'");
	int local = tt_store_local_path(uri, &path);
	if (local < 0)
		return KOOM(err);
	*out = json_pack("{s:s}", "uri", local ? path : uri);
	free(path);
	return *out ? 0 : KOOM(err);
}

static int lance_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref,
			     json_t **state, tt_error *err)
{
	lstore s;
	char *at = NULL;
	json_t *hold = NULL, *meta = NULL;
	const char *branch;
	uint64_t version;
	int rc;

	*state = NULL;
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	if ((!working_ref || !*working_ref) && (at = at_of(loc)) != NULL) {
		if ((rc = resolve_at(&s, loc, at, &branch, &version, &hold, err)) < 0 ||
		    (rc = check_version(&s, branch, version, err)) < 0)
			goto done;
		rc = make_state(&s, branch, version, state, err);
		goto done;
	}
	branch = working_ref && *working_ref ? working_ref : base_branch_of(loc);
	if ((rc = head_of(&s, branch, &version, err)) < 0)
		goto done;
	if (!is_main(branch) && (rc = read_branch(&s, branch, &meta, err)) < 0)
		goto done;
	const json_t *pv = json_object_get(meta, "parentVersion");
	if (meta && json_is_integer(pv) && (uint64_t)json_integer_value(pv) == version) {
		/* Untouched fork: the parent's address, which tags point at. */
		const json_t *pb = json_object_get(meta, "parentBranch");
		rc = make_state(&s, json_is_string(pb) ? json_string_value(pb) : MAIN, version, state, err);
	} else {
		rc = make_state(&s, branch, version, state, err);
	}
done:
	json_decref(hold);
	json_decref(meta);
	free(at);
	lstore_close(&s);
	return rc;
}

/* --- pins ------------------------------------------------------------------------ */

static void rfc3339_now(char *out, size_t n, int64_t *sec, int32_t *nsec)
{
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	char base[32];
	strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(out, n, "%s.%09ldZ", base, (long)ts.tv_nsec);
	if (sec)
		*sec = (int64_t)ts.tv_sec;
	if (nsec)
		*nsec = (int32_t)ts.tv_nsec;
}

/* Pretty JSON as serde writes it (2-space indent, keys in order). */
static char *ref_text(const json_t *j)
{
	return json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

static int lance_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id,
		     tt_pin *out, tt_error *err)
{
	lstore s;
	const char *branch;
	uint64_t version;
	size_t size = 0;
	char stamp[48], *rel = NULL, *text = NULL;
	json_t *tag = NULL, *existing = NULL;
	int rc;

	if ((rc = tt_kit_fill_pin(out, KIND, pin_id, NULL, true, err)) < 0)
		return rc;
	if (!ref_segment_ok(out->ref, strlen(out->ref)))
		return KERR(err, TT_EBACKEND, "'%s' is not a valid Lance tag name", out->ref);
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	if ((rc = state_ref(state, &branch, &version, err)) < 0 ||
	    (rc = check_branch_life(&s, state, err)) < 0)
		goto done;
	rc = manifest_size(&s, branch, version, &size, err);
	if (rc == TT_ENOTFOUND) {
		tt_error_clear(err);
		rc = KERR(err, TT_EBACKEND, "cannot tag %s: version %" PRIu64 " of branch %s is gone from %s",
			  out->ref, version, shown(branch), s.root);
	}
	if (rc < 0)
		goto done;
	rfc3339_now(stamp, sizeof stamp, NULL, NULL);
	tag = json_object();
	if (!tag || json_object_set_new(tag, "branch", is_main(branch) ? json_null() : json_string(branch)) ||
	    json_object_set_new(tag, "version", json_integer((json_int_t)version)) ||
	    json_object_set_new(tag, "createdAt", json_string(stamp)) ||
	    json_object_set_new(tag, "updatedAt", json_string(stamp)) ||
	    json_object_set_new(tag, "manifestSize", json_integer((json_int_t)size)) ||
	    json_object_set_new(tag, "metadata", json_object()) || !(text = ref_text(tag)) ||
	    !(rel = tt_asprintf("_refs/tags/%s.json", out->ref))) {
		rc = KOOM(err);
		goto done;
	}
	rc = ls_put_new(&s, rel, text, strlen(text), err);
	if (rc == TT_EEXISTS) {
		/* Already there (an idempotent commit, or a racing one): it must
		 * hold this very state. */
		const char *eb;
		uint64_t ev;
		tt_error_clear(err);
		if ((rc = read_tag(&s, out->ref, &existing, err)) < 0)
			goto done;
		if (!existing || !tag_target(existing, &eb, &ev) || strcmp(shown(eb), shown(branch)) != 0 ||
		    ev != version) {
			rc = KERR(err, TT_EBACKEND, "tag %s exists and points elsewhere ((%s, %" PRIu64
				  ") != (%s, %" PRIu64 "))", out->ref, existing ? shown(eb) : "?",
				  existing ? ev : 0, shown(branch), version);
			goto done;
		}
		out->created = false;
		rc = 0;
	} else if (rc < 0) {
		tt_error_prefix(err, "cannot create tag %s", out->ref);
		tt_error_object(err, NULL, KIND);
	}
done:
	json_decref(tag);
	json_decref(existing);
	free(text);
	free(rel);
	lstore_close(&s);
	return rc;
}

static int lance_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err)
{
	lstore s;
	int rc;
	if (!ref_segment_ok(pin->ref, strlen(pin->ref)))
		return KERR(err, TT_EBACKEND, "'%s' is not a Lance tag name", pin->ref);
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	char *rel = tt_asprintf("_refs/tags/%s.json", pin->ref);
	if (!rel)
		rc = KOOM(err);
	else if ((rc = ls_remove(&s, rel, err)) < 0)
		tt_error_object(err, NULL, KIND);
	else if (ls_has_file(&s, rel))
		rc = KERR(err, TT_EBACKEND, "tag %s was not deleted", pin->ref);
	free(rel);
	lstore_close(&s);
	return rc;
}

static json_t *sorted_keys(const json_t *obj, const char *prefix, bool strip)
{
	size_t n = json_object_size(obj), k = 0, pl = strlen(prefix);
	const char **v = tt_calloc(n ? n : 1, sizeof *v);
	json_t *out = json_array();
	const char *key;
	json_t *val;
	if (!v || !out) {
		free(v);
		json_decref(out);
		return NULL;
	}
	json_object_foreach((json_t *)obj, key, val)
		if (strncmp(key, prefix, pl) == 0)
			v[k++] = key;
	qsort(v, k, sizeof *v, tt_cmp_cstr);
	for (size_t i = 0; out && i < k; i++)
		if (tt_kit_keep_ref(out, v[i], prefix, NULL, strip) != 0) {
			json_decref(out);
			out = NULL;
		}
	free(v);
	return out;
}

static int lance_list_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err)
{
	lstore s;
	json_t *tags = NULL;
	int rc;
	*ids = NULL;
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	if ((rc = list_tags(&s, &tags, err)) == 0 && !(*ids = sorted_keys(tags, PIN_PREFIX, true)))
		rc = KOOM(err);
	json_decref(tags);
	lstore_close(&s);
	return rc;
}

static int lance_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
			bool deep, tt_verify_status *status, char **message, tt_error *err)
{
	lstore s;
	const char *branch, *tb;
	uint64_t version, tv;
	json_t *tag = NULL;
	tt_error life = TT_ERROR_INIT;
	int rc;

	*status = TT_VERIFY_UNKNOWN;
	*message = NULL;
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	if ((rc = state_ref(state, &branch, &version, err)) < 0)
		goto done;
	if (check_branch_life(&s, state, &life) < 0) {
		*status = TT_VERIFY_MISSING;
		*message = tt_strdup(tt_error_text(&life));
		goto done;
	}
	if (pin) {
		if ((rc = read_tag(&s, pin->ref, &tag, err)) < 0)
			goto done;
		if (!tag) {
			*status = TT_VERIFY_MISSING;
			*message = tt_asprintf("tag %s missing", pin->ref);
			goto done;
		}
		tag_target(tag, &tb, &tv);
		if (strcmp(shown(tb), shown(branch)) != 0 || tv != version) {
			*status = TT_VERIFY_DRIFTED;
			*message = tt_asprintf("%s -> ('%s', %" PRIu64 "), expected ('%s', %" PRIu64 ")",
					       pin->ref, shown(tb), tv, shown(branch), version);
			goto done;
		}
		if (!deep) {
			*status = TT_VERIFY_OK;
			goto done;
		}
	} else if (!deep) {
		*status = TT_VERIFY_UNKNOWN;
		*message = tt_strdup("pass --deep to read version");
		goto done;
	}
	{
		tt_error miss = TT_ERROR_INIT;
		if (check_version(&s, branch, version, &miss) < 0) {
			*status = TT_VERIFY_MISSING;
			*message = tt_strdup(tt_error_text(&miss));
		} else {
			*status = TT_VERIFY_OK;
		}
		tt_error_clear(&miss);
	}
done:
	tt_error_clear(&life);
	json_decref(tag);
	lstore_close(&s);
	return rc;
}

/* --- forks ----------------------------------------------------------------------- */

static int random_hex(char out[33], tt_error *err)
{
	uint8_t raw[16];
	if (getentropy(raw, sizeof raw) != 0)
		return KERR(err, TT_EIO, "no randomness for a branch id: %s", strerror(errno));
	raw[6] = (uint8_t)((raw[6] & 0x0f) | 0x40); /* a version 4 UUID, as Lance makes */
	raw[8] = (uint8_t)((raw[8] & 0x3f) | 0x80);
	for (int i = 0; i < 16; i++)
		snprintf(out + 2 * i, 3, "%02x", raw[i]);
	return 0;
}

/*
 * Create branch `name` at (src, version), as Lance's create_branch does:
 * the clone manifest goes into tree/<name>/_versions create-only, then the
 * branch file create-only.  TT_EEXISTS when either is already there.
 */
/* How many entries directory rel holds (SIZE_MAX when it cannot be listed). */
static size_t entries_in(lstore *s, const char *rel)
{
	char **names = NULL;
	size_t n = 0;
	tt_error ignored = TT_ERROR_INIT;
	if (ls_list(s, rel, &names, &n, &ignored) != 0)
		n = SIZE_MAX;
	free_names(names, n == SIZE_MAX ? 0 : n);
	tt_error_clear(&ignored);
	return n;
}

static int create_branch(lstore *s, const char *name, const char *src, uint64_t version,
			 tt_error *err)
{
	tt_lance_manifest m;
	tt_buf raw = TT_BUF_INIT, out = TT_BUF_INIT;
	json_t *parent = NULL, *ident = NULL, *meta = NULL;
	char *tree = NULL, *vdir = NULL, *rel = NULL, *src_root = NULL, *text = NULL, *bfile = NULL, hex[33],
	     why[256], stamp[48];
	int64_t now_s;
	int32_t now_ns;
	int rc;

	if (!branch_name_ok(name))
		return KERR(err, TT_EBACKEND, "'%s' is not a valid Lance branch name", name);
	if (!(bfile = branch_file(name)) || !(tree = tt_asprintf("tree/%s", name)) ||
	    !(rel = tt_asprintf("tree/%s/_versions/%020" PRIu64 ".manifest", name, UINT64_MAX - version))) {
		rc = KOOM(err);
		goto done;
	}
	if (ls_has_file(s, bfile)) {
		rc = KERR(err, TT_EEXISTS, "lance branch %s already exists in %s", name, s->root);
		goto done;
	}
	if (!(vdir = tt_asprintf("%s/_versions", tree))) {
		rc = KOOM(err);
		goto done;
	}
	if (ls_has_dir(s, vdir)) {
		/* Versions without the branch file: a fork that was interrupted
		 * (or one being made right now).  The fix names the tree when it
		 * holds nothing else (a branch nested under the name stays). */
		bool alone = entries_in(s, tree) == 1;
		char *path = local_path(s, alone ? tree : vdir);
		rc = KERR(err, TT_EBACKEND, "lance branch %s is half-made in %s: %s exists without its "
			  "branch file -- a fork was interrupted there, or another is creating it now; "
			  "if none is, remove it (rm -r %s) and run the command again",
			  name, s->root, path ? path : vdir, path ? path : vdir);
		free(path);
		goto done;
	}
	if (ls_has_dir(s, tree)) {
		/* An empty tree/<name>/ is what a fork killed right after making
		 * it leaves (a local store's directory): no branch, nothing to
		 * keep; the create-only writes below still settle a race. */
		if (entries_in(s, tree) != 0) {
			rc = KERR(err, TT_EEXISTS, "lance branch %s already exists in %s", name, s->root);
			goto done;
		}
	}
	if (!is_main(src)) {
		if ((rc = read_branch(s, src, &parent, err)) < 0)
			goto done;
		if (!parent) {
			rc = KERR(err, TT_EBACKEND, "lance branch %s (the fork's source) not found in %s", src,
				  s->root);
			goto done;
		}
		ident = branch_identifier(src, parent);
	} else {
		ident = json_array();
	}
	if (!ident || (rc = random_hex(hex, err)) < 0) {
		rc = ident ? rc : KOOM(err);
		goto done;
	}
	json_array_append_new(ident, json_pack("[I,s]", (json_int_t)version, hex));
	rc = load_manifest(s, src, version, &m, &raw, err);
	if (rc == TT_ENOTFOUND) {
		tt_error_clear(err);
		rc = KERR(err, TT_EBACKEND, "cannot fork %s: version %" PRIu64 " of branch %s is gone from %s",
			  name, version, shown(src), s->root);
	}
	if (rc < 0)
		goto done;
	tt_lance_manifest_release(&m);
	src_root = is_main(src) ? tt_strdup(s->root) : tt_asprintf("%s/tree/%s", s->root, src);
	if (!src_root) {
		rc = KOOM(err);
		goto done;
	}
	rfc3339_now(stamp, sizeof stamp, &now_s, &now_ns);
	if (tt_lance_manifest_branch(&out, raw.ptr, raw.len, name, is_main(src) ? NULL : src, src_root,
				     now_s, now_ns, why, sizeof why) < 0) {
		rc = KERR(err, TT_EBACKEND, "lance dataset %s: cannot fork %s from (%s, %" PRIu64 "): %s",
			  s->root, name, shown(src), version, why);
		goto done;
	}
	if ((rc = ls_put_new(s, rel, out.ptr, out.len, err)) < 0) {
		if (rc != TT_EEXISTS)
			tt_error_prefix(err, "cannot create lance branch %s", name);
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	tt_fault("fork:lance-before-ref");
	meta = json_object();
	if (!meta ||
	    json_object_set_new(meta, "parentBranch", is_main(src) ? json_null() : json_string(src)) ||
	    json_object_set_new(meta, "identifier", json_pack("{s:O}", "version_mapping", ident)) ||
	    json_object_set_new(meta, "parentVersion", json_integer((json_int_t)version)) ||
	    json_object_set_new(meta, "createAt", json_integer((json_int_t)now_s)) ||
	    json_object_set_new(meta, "manifestSize", json_integer((json_int_t)raw.len)) ||
	    json_object_set_new(meta, "metadata", json_object()) || !(text = ref_text(meta))) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = ls_put_new(s, bfile, text, strlen(text), err)) < 0) {
		/* Someone else's branch file won (a racer forking from another
		 * version): the manifest we created is ours alone - theirs would
		 * have stopped ours at the same name - so take it back rather
		 * than leave it in their branch. */
		tt_error drop = TT_ERROR_INIT;
		if (rc != TT_EEXISTS)
			tt_error_prefix(err, "cannot create lance branch %s", name);
		tt_error_object(err, NULL, KIND);
		ls_remove(s, rel, &drop);
		tt_error_clear(&drop);
	}
done:
	tt_buf_release(&raw);
	tt_buf_release(&out);
	json_decref(parent);
	json_decref(ident);
	json_decref(meta);
	free(tree);
	free(vdir);
	free(rel);
	free(src_root);
	free(text);
	free(bfile);
	return rc;
}

/* Why branch `name` cannot be deleted (NULL: it can). */
static int delete_blockers(lstore *s, const char *name, char **why, tt_error *err)
{
	json_t *tags = NULL, *branches = NULL, *mine = NULL;
	const char *key;
	json_t *val;
	int rc;

	*why = NULL;
	if ((rc = list_tags(s, &tags, err)) < 0)
		return rc;
	json_object_foreach(tags, key, val) {
		const char *tb;
		uint64_t tv;
		if (tag_target(val, &tb, &tv) && strcmp(tb, name) == 0) {
			*why = tt_asprintf("tag %s references version %" PRIu64 " of it", key, tv);
			goto done;
		}
	}
	if ((rc = list_branches(s, &branches, err)) < 0)
		goto done;
	mine = branch_identifier(name, json_object_get(branches, name));
	json_object_foreach(branches, key, val) {
		json_t *theirs;
		size_t n = json_array_size(mine);
		if (strcmp(key, name) == 0 || !mine)
			continue;
		theirs = branch_identifier(key, val);
		bool desc = theirs && json_array_size(theirs) > n;
		for (size_t i = 0; desc && i < n; i++)
			desc = json_equal(json_array_get(theirs, i), json_array_get(mine, i));
		json_decref(theirs);
		if (desc) {
			*why = tt_asprintf("branch %s was forked from it", key);
			break;
		}
	}
done:
	json_decref(tags);
	json_decref(branches);
	json_decref(mine);
	return rc;
}

/* Delete branch `name`: its file, then its tree (unless another branch
 * lives under it).  Gone already is success. */
/* Whether branches (a listing) holds name itself or a branch nested under
 * it ("name/..."), whose tree lives inside name's. */
static bool has_nested(json_t *branches, const char *name)
{
	size_t n = strlen(name);
	const char *key;
	json_t *val;
	json_object_foreach(branches, key, val)
		if (strncmp(key, name, n) == 0 && (key[n] == '/' || key[n] == '\0'))
			return true;
	return false;
}

static int delete_branch(lstore *s, const char *name, tt_error *err)
{
	char *why = NULL, *bfile = NULL, *tree = NULL;
	json_t *branches = NULL;
	int rc;

	if ((rc = delete_blockers(s, name, &why, err)) < 0)
		return rc;
	if (why) {
		rc = KERR(err, TT_EBACKEND,
			  "branch %s was not deleted: Lance keeps a branch while %s; release its pins first",
			  name, why);
		free(why);
		return rc;
	}
	if (!(bfile = branch_file(name)) || !(tree = tt_asprintf("tree/%s", name))) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = ls_remove(s, bfile, err)) < 0 || (rc = list_branches(s, &branches, err)) < 0)
		goto done;
	tt_fault("lance:after-branch-file");
	if (!has_nested(branches, name))
		rc = ls_remove_tree(s, tree, err);
done:
	if (rc < 0)
		tt_error_object(err, NULL, KIND);
	json_decref(branches);
	free(bfile);
	free(tree);
	return rc;
}

static int lance_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		      const tt_expect *expected, char **ref_out, tt_error *err)
{
	lstore s;
	json_t *tag = NULL, *branches = NULL, *st = NULL;
	const char *src;
	uint64_t version;
	char *target = NULL;
	int rc;

	*ref_out = NULL;
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	switch (source->kind) {
	case TT_TARGET_PIN:
		if (!source->pin) {
			rc = KERR(err, TT_EUSAGE, "a pin source needs a pin");
			goto done;
		}
		if ((rc = read_tag(&s, source->pin->ref, &tag, err)) < 0)
			goto done;
		if (!tag) {
			rc = KERR(err, TT_EBACKEND, "cannot create lance branch %s from '%s': no such tag", name,
				  source->pin->ref);
			goto done;
		}
		tag_target(tag, &src, &version);
		break;
	case TT_TARGET_STATE:
		if ((rc = state_ref(source->state, &src, &version, err)) < 0 ||
		    (rc = check_branch_life(&s, source->state, err)) < 0)
			goto done;
		break;
	case TT_TARGET_REF:
	case TT_TARGET_BASE:
		if ((rc = lance_fingerprint(b, loc, source->kind == TT_TARGET_REF ? source->ref : NULL, &st,
					    err)) < 0 ||
		    (rc = state_ref(st, &src, &version, err)) < 0)
			goto done;
		break;
	}
	if (!(target = tt_strdup(name))) {
		rc = KOOM(err);
		goto done;
	}
	if (!expected || expected->kind != TT_EXPECT_ABSENT) {
		/* Lance has no conditional delete: the head is compared as late as
		 * it can be, right before the branch is dropped (a window). */
		if (expected && expected->kind == TT_EXPECT_STATE &&
		    (rc = tt_check_expected(b, loc, name, expected, err)) < 0)
			goto done;
		if ((rc = list_branches(&s, &branches, err)) < 0)
			goto done;
		if (json_object_get(branches, name)) {
			tt_error derr = TT_ERROR_INIT;
			if (delete_branch(&s, name, &derr) < 0) {
				/* Tags hold the old working branch: leave it and take a
				 * sibling name rather than fail the fork. */
				for (unsigned n = 2;; n++) {
					free(target);
					if (!(target = tt_asprintf("%s.%u", name, n))) {
						tt_error_clear(&derr);
						rc = KOOM(err);
						goto done;
					}
					if (!json_object_get(branches, target))
						break;
				}
			}
			tt_error_clear(&derr);
		}
	}
	rc = create_branch(&s, target, src, version, err);
	if (rc == TT_EEXISTS) {
		if (expected && expected->kind != TT_EXPECT_NONE) {
			tt_error_clear(err);
			rc = KERR(err, TT_EREFMOVED, "fork: %s was created by someone else meanwhile", target);
		} else {
			rc = KERR(err, TT_EBACKEND, "cannot create lance branch %s: it already exists", target);
		}
	}
	if (rc == 0) {
		*ref_out = target;
		target = NULL;
	}
done:
	json_decref(tag);
	json_decref(branches);
	json_decref(st);
	free(target);
	lstore_close(&s);
	return rc;
}

static bool manifest_name(const char *n)
{
	size_t len = strlen(n);
	return n[0] != '.' && len > 9 && strcmp(n + len - 9, ".manifest") == 0;
}

/* tree/<name>/_versions holds no more than create_branch writes there
 * before the branch file: one manifest (a temporary of its write, the
 * listing leaves out). */
static int half_made_versions(lstore *s, const char *vdir, bool *yes, tt_error *err)
{
	char **names = NULL;
	size_t n = 0, manifests = 0;
	bool ok = true;
	int rc;
	*yes = false;
	if ((rc = ls_list(s, vdir, &names, &n, err)) < 0)
		return rc;
	for (size_t i = 0; i < n; i++) {
		if (manifest_name(names[i]))
			manifests++;
		else
			ok = false;
	}
	*yes = ok && manifests <= 1;
	free_names(names, n);
	return 0;
}

static int lance_clear_partial_fork(tt_backend *b, const json_t *loc, const char *name, bool *cleared,
				    tt_error *err)
{
	lstore s;
	char *bfile = NULL, *tree = NULL, *vdir = NULL, **left = NULL;
	size_t nleft = 0;
	bool half = false;
	int rc;
	*cleared = false;
	if (!name || is_main(name) || !branch_name_ok(name))
		return 0;
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	if (!(bfile = branch_file(name)) || !(tree = tt_asprintf("tree/%s", name)) ||
	    !(vdir = tt_asprintf("%s/_versions", tree))) {
		rc = KOOM(err);
		goto done;
	}
	if (ls_has_file(&s, bfile) || !ls_has_dir(&s, vdir))
		goto done;
	if ((rc = half_made_versions(&s, vdir, &half, err)) < 0 || !half)
		goto done;
	/* Only the versions: a branch nested under the name keeps its tree. */
	if ((rc = ls_remove_tree(&s, vdir, err)) < 0 || (rc = ls_list(&s, tree, &left, &nleft, err)) < 0 ||
	    (!nleft && (rc = ls_remove_tree(&s, tree, err)) < 0)) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	*cleared = true;
done:
	free_names(left, nleft);
	free(bfile);
	free(tree);
	free(vdir);
	lstore_close(&s);
	return rc;
}

/* A delete killed between the branch file and its tree leaves
 * tree/<name> with no branch: the delete is finished (unless a branch
 * nested under the name still lives there). */
static int finish_delete(lstore *s, const char *name, tt_error *err)
{
	char *tree = tt_asprintf("tree/%s", name);
	json_t *branches = NULL;
	int rc = 0;
	if (!tree)
		return KOOM(err);
	if (ls_has_dir(s, tree) && (rc = list_branches(s, &branches, err)) == 0 &&
	    !has_nested(branches, name) && (rc = ls_remove_tree(s, tree, err)) < 0)
		tt_error_object(err, NULL, KIND);
	json_decref(branches);
	free(tree);
	return rc;
}

static int lance_delete_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err)
{
	lstore s;
	json_t *meta = NULL;
	int rc;
	if (!ref || is_main(ref) || strcmp(ref, base_branch_of(loc)) == 0)
		return 0;
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	if ((rc = read_branch(&s, ref, &meta, err)) == 0 && meta)
		rc = delete_branch(&s, ref, err);
	else if (rc == 0)
		rc = finish_delete(&s, ref, err);
	json_decref(meta);
	lstore_close(&s);
	return rc;
}

static int lance_list_working_refs(tt_backend *b, const json_t *loc, json_t **refs, tt_error *err)
{
	lstore s;
	json_t *branches = NULL;
	int rc;
	*refs = NULL;
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	if ((rc = list_branches(&s, &branches, err)) == 0 &&
	    !(*refs = sorted_keys(branches, TT_WORKING_REF_PREFIX, false)))
		rc = KOOM(err);
	json_decref(branches);
	lstore_close(&s);
	return rc;
}

/* --- open -------------------------------------------------------------------------- */

static int lance_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		      json_t **handle, tt_error *err)
{
	lstore s;
	const char *uri = loc_uri(loc), *branch = NULL, *tagname = NULL;
	char *at = NULL, *address = NULL;
	json_t *tag = NULL;
	uint64_t version = 0;
	int rc;

	*handle = NULL;
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	switch (target->kind) {
	case TT_TARGET_PIN:
		read_only = true;
		if (!target->pin) {
			rc = KERR(err, TT_EUSAGE, "open needs a pin");
			goto done;
		}
		if ((rc = read_tag(&s, target->pin->ref, &tag, err)) < 0)
			goto done;
		if (!tag) {
			rc = KERR(err, TT_EBACKEND, "lance ref '%s' not found: no such tag in %s",
				  target->pin->ref, s.root);
			goto done;
		}
		tag_target(tag, &branch, &version);
		if ((rc = check_version(&s, branch, version, err)) < 0)
			goto done;
		tagname = target->pin->ref;
		break;
	case TT_TARGET_STATE:
		read_only = true;
		if ((rc = state_ref(target->state, &branch, &version, err)) < 0 ||
		    (rc = check_branch_life(&s, target->state, err)) < 0 ||
		    (rc = check_version(&s, branch, version, err)) < 0)
			goto done;
		break;
	case TT_TARGET_BASE:
	case TT_TARGET_REF:
		if (target->kind == TT_TARGET_BASE && read_only && (at = at_of(loc)) != NULL) {
			if ((rc = resolve_at(&s, loc, at, &branch, &version, &tag, err)) < 0 ||
			    (rc = check_version(&s, branch, version, err)) < 0)
				goto done;
			break;
		}
		branch = target->kind == TT_TARGET_REF && target->ref && *target->ref ? target->ref
										     : base_branch_of(loc);
		if ((rc = head_of(&s, branch, &version, err)) < 0)
			goto done;
		break;
	}
	address = tagname ? tt_asprintf("%s#%s", uri, tagname)
			  : tt_asprintf("%s#%s@v%" PRIu64, uri, shown(branch), version);
	*handle = address ? json_pack("{s:s, s:s, s:b, s:s, s:I, s:s?, s:s?}", "type", KIND, "address",
				      address, "read_only", read_only, "uri", uri, "version",
				      (json_int_t)version, "branch", tagname ? NULL : shown(branch),
				      "tag", tagname)
			  : NULL;
	if (!*handle)
		rc = KOOM(err);
	if (*handle && tagname)
		json_object_set_new(*handle, "branch", json_null());
	if (*handle && !tagname)
		json_object_set_new(*handle, "tag", json_null());
done:
	json_decref(tag);
	free(at);
	free(address);
	lstore_close(&s);
	return rc;
}

/* --- history ------------------------------------------------------------------------ */

static int cmp_u64_desc(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? 1 : x > y ? -1 : 0;
}

static char *iso_seconds(int64_t sec)
{
	time_t t = (time_t)sec;
	struct tm tm;
	char buf[40];
	if (!gmtime_r(&t, &tm))
		return NULL;
	strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
	return tt_strdup(buf);
}

static int lance_history(tt_backend *b, const json_t *loc, const char *ref, size_t limit,
			 tt_history_entry **out, size_t *n, tt_error *err)
{
	lstore s;
	const char *branch;
	char *at = NULL, *dir = NULL, **names = NULL;
	json_t *hold = NULL, *tags = NULL;
	uint64_t *versions = NULL, head = 0, top = UINT64_MAX;
	size_t nn = 0, nv = 0, alloc = 0;
	int rc;

	*out = NULL;
	*n = 0;
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	branch = ref && *ref ? ref : base_branch_of(loc);
	if ((!ref || !*ref) && (at = at_of(loc)) != NULL &&
	    (rc = resolve_at(&s, loc, at, &branch, &top, &hold, err)) < 0)
		goto done;
	if ((rc = head_of(&s, branch, &head, err)) < 0 || (rc = list_tags(&s, &tags, err)) < 0)
		goto done;
	if (!(dir = versions_dir(branch))) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = ls_list(&s, dir, &names, &nn, err)) < 0)
		goto done;
	for (size_t i = 0; i < nn; i++) {
		uint64_t v;
		bool v2;
		if (tt_lance_manifest_name(names[i], &v, &v2) != 1 || v > top)
			continue;
		if (TT_ARRAY_GROW(versions, alloc, nv + 1) != 0) {
			rc = KOOM(err);
			goto done;
		}
		versions[nv++] = v;
	}
	qsort(versions, nv, sizeof *versions, cmp_u64_desc);
	if (limit && nv > limit)
		nv = limit;
	if (nv && !(*out = tt_calloc(nv, sizeof **out))) {
		rc = KOOM(err);
		goto done;
	}
	for (size_t i = 0; i < nv; i++) {
		tt_history_entry *e = &(*out)[i];
		tt_lance_manifest m;
		tt_lance_summary sum;
		json_t *here = json_object();
		const char *key;
		json_t *val;
		(*n)++;
		if ((rc = load_manifest(&s, branch, versions[i], &m, NULL, err)) < 0) {
			json_decref(here);
			goto done;
		}
		tt_lance_manifest_summary(&m, &sum);
		e->id = tt_asprintf("%" PRIu64, versions[i]);
		e->when = m.has_timestamp ? iso_seconds(m.ts_seconds) : NULL;
		/* Lance's per-version metadata is its summary; sorted keys. */
		e->message = tt_asprintf("total_data_file_rows=%" PRIu64 ", total_data_files=%" PRIu64
					 ", total_deletion_file_rows=%" PRIu64 ", total_deletion_files=%" PRIu64
					 ", total_files_size=%" PRIu64 ", total_fragments=%" PRIu64
					 ", total_rows=%" PRIu64,
					 sum.data_file_rows, sum.data_files, sum.deletion_file_rows,
					 sum.deletion_files, sum.files_size, sum.fragments, sum.rows);
		tt_lance_manifest_release(&m);
		json_object_foreach(tags, key, val) {
			const char *tb;
			uint64_t tv;
			if (tag_target(val, &tb, &tv) && strcmp(tb, shown(branch)) == 0 && tv == versions[i])
				json_object_set_new(here, key, json_true());
		}
		e->refs = sorted_keys(here, "", false);
		json_decref(here);
		if (e->refs && versions[i] == head)
			json_array_insert_new(e->refs, 0, json_string(shown(branch)));
		if (!e->id || !e->message || !e->refs || (m.has_timestamp && !e->when)) {
			rc = KOOM(err);
			goto done;
		}
	}
done:
	if (rc) {
		tt_history_release(*out, *n);
		*out = NULL;
		*n = 0;
	}
	free_names(names, nn);
	free(versions);
	free(dir);
	free(at);
	json_decref(hold);
	json_decref(tags);
	lstore_close(&s);
	return rc;
}

/* --- diff ------------------------------------------------------------------------- */

static const tt_lance_fragment *find_frag(const tt_lance_manifest *m, uint64_t id)
{
	for (size_t i = 0; i < m->nfrags; i++)
		if (m->frags[i].id == id)
			return &m->frags[i];
	return NULL;
}

static bool has_column(const tt_lance_manifest *m, const char *name)
{
	for (size_t i = 0; i < m->nfields; i++)
		if (m->fields[i].parent == -1 && strcmp(m->fields[i].name, name) == 0)
			return true;
	return false;
}

static int cmp_u64_asc(const void *a, const void *b)
{
	return -cmp_u64_desc(a, b);
}

static int column_changes(tt_object_diff *d, const tt_lance_manifest *from, const tt_lance_manifest *to,
			  const char *change, tt_error *err)
{
	const char **names = tt_calloc(to->nfields + 1, sizeof *names);
	size_t k = 0;
	int rc = 0;
	if (!names)
		return KOOM(err);
	for (size_t i = 0; i < to->nfields; i++)
		if (to->fields[i].parent == -1 && !has_column(from, to->fields[i].name))
			names[k++] = to->fields[i].name;
	qsort(names, k, sizeof *names, tt_cmp_cstr);
	for (size_t i = 0; i < k && rc == 0; i++) {
		if (i && strcmp(names[i], names[i - 1]) == 0)
			continue;
		char *path = tt_asprintf("column %s", names[i]);
		rc = path ? tt_object_diff_add(d, path, change, NULL, err) : KOOM(err);
		free(path);
	}
	free(names);
	return rc;
}

static int lance_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		      const char *la, const char *lb, tt_object_diff *out, tt_error *err)
{
	lstore s;
	tt_lance_manifest ma, mb;
	const char *ba, *bb;
	uint64_t va, vb, *ids = NULL;
	size_t nids = 0;
	int rc;

	memset(&ma, 0, sizeof ma);
	memset(&mb, 0, sizeof mb);
	tt_object_diff_init(out, "fragments");
	if (tt_states_equal(b->kind, a, bstate))
		return 0;
	if ((rc = open_store(b, loc, &s, err)) < 0)
		return rc;
	if ((rc = state_ref(a, &ba, &va, err)) < 0 || (rc = state_ref(bstate, &bb, &vb, err)) < 0 ||
	    (rc = check_branch_life(&s, a, err)) < 0 || (rc = check_branch_life(&s, bstate, err)) < 0 ||
	    (rc = load_manifest(&s, ba, va, &ma, NULL, err)) < 0 ||
	    (rc = load_manifest(&s, bb, vb, &mb, NULL, err)) < 0)
		goto done;
	if (!(ids = tt_calloc(ma.nfrags + mb.nfrags + 1, sizeof *ids))) {
		rc = KOOM(err);
		goto done;
	}
	for (size_t i = 0; i < ma.nfrags; i++)
		ids[nids++] = ma.frags[i].id;
	for (size_t i = 0; i < mb.nfrags; i++)
		if (!find_frag(&ma, mb.frags[i].id))
			ids[nids++] = mb.frags[i].id;
	qsort(ids, nids, sizeof *ids, cmp_u64_asc);
	for (size_t i = 0; i < nids && rc == 0; i++) {
		const tt_lance_fragment *fa = find_frag(&ma, ids[i]), *fb = find_frag(&mb, ids[i]);
		char path[48], detail[96];
		const char *change = NULL;
		snprintf(path, sizeof path, "fragment %" PRIu64, ids[i]);
		detail[0] = '\0';
		if (!fa && fb) {
			change = "added";
			snprintf(detail, sizeof detail, "+%" PRIu64 " rows", fb->physical_rows);
		} else if (!fb && fa) {
			change = "removed";
			snprintf(detail, sizeof detail, "-%" PRIu64 " rows", fa->physical_rows);
		} else if (!fa || !fb) {
			continue;
		} else if (fa->has_deletion != fb->has_deletion ||
			   (fa->has_deletion && (fa->del_read_version != fb->del_read_version ||
						 fa->del_id != fb->del_id || fa->del_rows != fb->del_rows))) {
			change = "modified";
			snprintf(detail, sizeof detail, "deletions changed");
		} else if (fa->physical_rows != fb->physical_rows || strcmp(fa->files, fb->files) != 0) {
			change = "modified";
			snprintf(detail, sizeof detail, "rewritten");
		}
		if (change)
			rc = tt_object_diff_add(out, path, change, detail, err);
	}
	if (rc == 0)
		rc = column_changes(out, &ma, &mb, "added", err);
	if (rc == 0)
		rc = column_changes(out, &mb, &ma, "removed", err);
done:
	free(ids);
	tt_lance_manifest_release(&ma);
	tt_lance_manifest_release(&mb);
	lstore_close(&s);
	return rc;
}

/* --- the vtable ------------------------------------------------------------------------ */

static const tt_backend_ops lance_ops = {
	.abi = TT_BACKEND_ABI,
	.identity = lance_identity,
	.fingerprint = lance_fingerprint,
	.pin = lance_pin,
	.unpin = lance_unpin,
	.list_pins = lance_list_pins,
	.verify = lance_verify,
	.fork = lance_fork,
	.delete_working_ref = lance_delete_working_ref,
	.list_working_refs = lance_list_working_refs,
	.working_ref_blockers = tt_kit_no_blockers,
	.clear_partial_fork = lance_clear_partial_fork,
	.open = lance_open,
	.diff = lance_diff,
	.history = lance_history,
	.storage_options = tt_kit_storage_options,
	.promote_hint = "Lance cannot move a branch head; write the result onto the base branch "
			"(or keep reading the fork) -- there is no branch merge or fast-forward yet",
};

int tt_lance_backend_new(tt_backend *b, tt_error *err)
{
	b->ops = &lance_ops;
	b->impl = NULL;
	return 0;
}
