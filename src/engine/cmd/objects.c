/* engine/cmd/objects.c - add, remove, set: the working-tree registry commands. */
#include "engine/cmd/objects.h"

#include <ctype.h>
#include <pwd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/kinds.h"
#include "core/layout.h"
#include "core/oplog.h"
#include "engine/cmd/lifecycle.h"
#include "engine/kernel/context.h"
#include "engine/kernel/keyhint.h"
#include "engine/kernel/register.h"
#include "engine/kernel/repo.h"
#include "storage/store.h"
#include "util/fs.h"
#include "util/mem.h"
#include "backends/registry.h"

/* Python's urlparse(s).scheme is non-empty: letters first, then letters,
 * digits, '+', '-', '.', up to a ':'. */
static bool url_scheme(const char *s)
{
	if (!isascii((unsigned char)s[0]) || !isalpha((unsigned char)s[0]))
		return false;
	for (const char *p = s + 1; *p; p++) {
		if (*p == ':')
			return true;
		if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
			return false;
	}
	return false;
}

/* os.path.expanduser: "~" and "~/x" from $HOME, "~user/x" from the password
 * database; anything else unchanged.  Caller frees. */
static char *expanduser(const char *path)
{
	if (path[0] != '~')
		return tt_strdup(path);
	const char *slash = strchr(path, '/');
	size_t ulen = slash ? (size_t)(slash - path - 1) : strlen(path) - 1;
	const char *rest = slash ? slash : "";
	char *home = NULL;
	if (ulen == 0) {
		const char *h = getenv("HOME");
		if (h)
			home = tt_strdup(h);
		else {
			struct passwd pw, *res = NULL;
			char buf[4096];
			if (getpwuid_r(getuid(), &pw, buf, sizeof buf, &res) == 0 && res)
				home = tt_strdup(pw.pw_dir);
		}
	} else {
		char *user = tt_strndup(path + 1, ulen);
		struct passwd pw, *res = NULL;
		char buf[4096];
		if (user && getpwnam_r(user, &pw, buf, sizeof buf, &res) == 0 && res)
			home = tt_strdup(pw.pw_dir);
		free(user);
	}
	if (!home)
		return tt_strdup(path);
	size_t hl = strlen(home);
	while (hl > 1 && home[hl - 1] == '/')
		home[--hl] = '\0';
	char *out = tt_asprintf("%s%s", strcmp(home, "/") == 0 && *rest ? "" : home, rest);
	free(home);
	return out ? out : NULL;
}

int tt_absolutize_locator(json_t *locator, const char *kind, const char *base, tt_error *err)
{
	const tt_kind *k = tt_kind_find(kind);
	if (!k)
		return 0;
	for (const char *const *key = k->local_path_keys; key && *key; key++) {
		json_t *v = json_object_get(locator, *key);
		if (!json_is_string(v) || !json_string_length(v))
			continue;
		const char *value = json_string_value(v);
		size_t plen = 0;
		for (const char *const *p = k->local_path_prefixes; p && *p; p++) {
			size_t l = strlen(*p);
			if (l > plen && strncmp(value, *p, l) == 0)
				plen = l;
		}
		const char *path = value + plen;
		if (!*path || url_scheme(path))
			continue;
		char *expanded = expanduser(path), *abs = NULL, *joined = NULL;
		if (!expanded)
			return tt_error_oom(err);
		if (expanded[0] == '/') {
			if (strcmp(expanded, path) != 0)
				abs = tt_strdup(expanded);
		} else {
			joined = tt_path_join(base, expanded);
			abs = joined ? tt_realpath(joined) : NULL;
			if (!abs) {
				free(expanded);
				free(joined);
				return tt_error_oom(err);
			}
		}
		if (abs) {
			char *full = tt_asprintf("%.*s%s", (int)plen, value, abs);
			if (!full || json_object_set_new(locator, *key, json_string(full)) < 0) {
				free(full);
				free(abs);
				free(expanded);
				free(joined);
				return tt_error_oom(err);
			}
			free(full);
		}
		free(abs);
		free(expanded);
		free(joined);
	}
	return 0;
}

char *tt_default_key(const json_t *locator, const char *kind)
{
	const tt_kind *k = tt_kind_find(kind);
	if (!k || !k->key_suffixes)
		return NULL;
	json_t *u = json_object_get(locator, "uri");
	if (!json_is_string(u) || !json_string_length(u))
		u = json_object_get(locator, "path");
	if (!json_is_string(u) || !json_string_length(u))
		return NULL;
	const char *uri = json_string_value(u);
	char *path = NULL;
	if (strncmp(uri, "file://", 7) == 0) {
		const char *rest = uri + 7;
		if (strncmp(rest, "localhost/", 10) == 0)
			rest += 9;
		path = rest[0] == '/' ? tt_strdup(rest) : NULL;
	} else if (uri[0] == '/' || !url_scheme(uri)) {
		path = tt_strdup(uri);
	} else {
		const char *sep = strstr(uri, "://");
		path = tt_strdup(sep ? sep + 3 : "");
	}
	if (!path)
		return NULL;
	size_t n = strlen(path);
	while (n && path[n - 1] == '/')
		path[--n] = '\0';
	const char *slash = strrchr(path, '/');
	char *name = tt_strdup(slash ? slash + 1 : path);
	free(path);
	if (!name)
		return NULL;
	size_t nl = strlen(name);
	for (const char *const *s = k->key_suffixes; *s; s++) {
		size_t sl = strlen(*s);
		if (nl > sl && strncasecmp(name + nl - sl, *s, sl) == 0) {
			name[nl - sl] = '\0';
			break;
		}
	}
	if (tt_validate_key(name, NULL) != 0) {
		free(name);
		return NULL;
	}
	return name;
}

/*
 * A new key must not collide with tether's own names: no segment starting
 * with '.' (.tether, .git, the ".<name>.<hex>.tmp" temporaries a killed
 * write leaves, which .tether/.gitignore ignores), and no directory
 * segment ending in ".toml" (objects/a.toml/ would be the file of key "a").
 * Reading keeps tether-vcs's rules (tt_validate_key): this is for add only.
 */
static int refuse_reserved_key(const char *key, bool derived, tt_error *err)
{
	for (const char *seg = key; *seg;) {
		const char *end = strchr(seg, '/');
		size_t len = end ? (size_t)(end - seg) : strlen(seg);
		if (seg[0] == '.' || (end && len >= 5 && strncmp(end - 5, ".toml", 5) == 0)) {
			tt_error_set(err, TT_ECONFIG,
				     "object key '%s'%s: %s '%.*s' %s", key,
				     derived ? " (the key taken from the locator)" : "",
				     seg[0] == '.' ? "segment" : "directory segment", (int)len, seg,
				     seg[0] == '.' ? "starts with '.', which tether keeps for its own "
						     "files (.tether, the temporaries of its writes)"
						   : "ends in \".toml\", so its manifests' directory would be "
						     "another key's manifest file");
			tt_error_hint(err, "give the object another key: `tether add KEY LOCATOR --kind ...`");
			return TT_ECONFIG;
		}
		if (!end)
			break;
		seg = end + 1;
	}
	return 0;
}

/* A locator's local path must not be tether's own files: .tether (or
 * anything in it) or tether.toml. */
static int refuse_own_paths(tt_repo *repo, const tt_kind *k, const json_t *loc, tt_error *err)
{
	char *tdir = tt_path_join(repo->root, TT_DIR), *cfg = tt_config_path(repo->root);
	int rc = tdir && cfg ? 0 : tt_error_oom(err);
	for (const char *const *key = k->local_path_keys; rc == 0 && key && *key; key++) {
		json_t *v = json_object_get(loc, *key);
		if (!json_is_string(v) || !json_string_length(v))
			continue;
		char *real = NULL;
		int local = tt_store_local_path(json_string_value(v), &real);
		if (local == 0 || (local > 0 && real[0] != '/')) {
			free(real);
			continue; /* a remote store, or a relative path no add writes */
		}
		size_t tl = strlen(tdir);
		bool in_tdir = real && strncmp(real, tdir, tl) == 0 && (real[tl] == '\0' || real[tl] == '/');
		if (!real)
			rc = tt_error_oom(err);
		else if (in_tdir || strcmp(real, cfg) == 0) {
			rc = tt_error_set(err, TT_ECONFIG, "a %s object at %s would be tether's own files "
					  "(%s): tether keeps the dataset's manifests, journal and caches there",
					  k->name, real, in_tdir ? TT_DIR : TT_CONFIG_FILENAME);
			tt_error_hint(err, "track a store outside %s and %s", TT_DIR, TT_CONFIG_FILENAME);
		}
		free(real);
	}
	free(tdir);
	free(cfg);
	return rc;
}

static int workspace_text(tt_repo *repo, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc = tt_workspace_render(&b, &repo->ws, err);
	*out = rc == 0 ? json_stringn(b.ptr, b.len) : NULL;
	tt_buf_release(&b);
	if (rc == 0 && !*out)
		rc = tt_error_oom(err);
	return rc;
}

static bool blank_at(json_t *at)
{
	if (json_is_null(at))
		return true;
	if (!json_is_string(at))
		return false;
	for (const char *p = json_string_value(at); *p; p++)
		if (!isspace((unsigned char)*p))
			return false;
	return true;
}

int tt_repo_add(tt_repo *repo, const tt_add_opts *opts, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(opts, tt_add_opts, TT_ADD_OPTS_VERSION, err);
	const tt_kind *kind = NULL;
	json_t *loc = NULL, *pre = NULL, *wstext = NULL, *result = NULL;
	char *key = NULL, *cwd = NULL;
	bool derived = false;
	int rc;

	*out = NULL;
	if ((rc = tt_kind_lookup(&kind, opts->kind, err)) < 0)
		return rc;
	if (!(loc = json_deep_copy(opts->locator ? opts->locator : json_object()))) {
		rc = tt_error_oom(err);
		goto done;
	}
	json_t *at = json_object_get(loc, "at");
	if (at && blank_at(at)) {
		rc = tt_error_set(err, TT_ECONFIG, "--at needs a native state (snapshot id, version, "
				  "commit or tag); an empty one would mean the branch head");
		goto done;
	}
	if ((rc = tt_repo_lock(repo, err)) < 0)
		goto done;
	if (!(cwd = opts->cwd ? tt_strdup(opts->cwd) : tt_getcwd())) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_absolutize_locator(loc, kind->name, cwd, err)) < 0)
		goto done;
	if (opts->key) {
		key = tt_strdup(opts->key);
	} else {
		derived = true;
		if (!(key = tt_default_key(loc, kind->name))) {
			rc = tt_error_set(err, TT_ECONFIG, "a %s object needs a key: none follows from its "
					  "locator", kind->name);
			tt_error_hint(err, "give one: `tether add KEY LOCATOR --kind %s`", kind->name);
			goto done;
		}
	}
	if (!key) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_validate_key(key, err)) < 0 || (rc = refuse_reserved_key(key, derived, err)) < 0)
		goto done;
	if ((rc = refuse_own_paths(repo, kind, loc, err)) < 0) {
		tt_error_object(err, key, kind->name);
		goto done;
	}
	if (tt_manifests_find(&repo->objects, key)) {
		rc = tt_error_set(err, TT_ECONFIG, "object already exists: %s%s", key,
				  derived ? " (the key taken from the locator)" : "");
		tt_error_hint(err, derived ? "give this one a key of its own"
					   : "pick another key, or `tether remove %s` first", key);
		goto done;
	}
	if (kind->validate_locator && (rc = kind->validate_locator(loc, repo->vcs->root, err)) < 0)
		goto done;
	/* What only the store can answer (a git remote it has configured) is
	 * refused here too, not at the first commit. */
	{
		tt_backend *b;
		tt_error berr = TT_ERROR_INIT;
		if (tt_engine_backend(repo, kind->name, &b, &berr) == 0 && tt_backend_has(b, check_locator) &&
		    (rc = tt_backend_check_locator(b, loc, err)) < 0) {
			tt_error_clear(&berr);
			goto done;
		}
		tt_error_clear(&berr);
	}
	tt_policy policy = repo->config.defaults;
	if ((opts->file_policy && (rc = tt_policy_set(&policy, "file", opts->file_policy, err)) < 0) ||
	    (opts->pin_policy && (rc = tt_policy_set(&policy, "pin", opts->pin_policy, err)) < 0))
		goto done;
	if ((rc = workspace_text(repo, &wstext, err)) < 0)
		goto done;
	pre = json_pack("{s:{s:n},s:O}", "objects", key, "workspace", wstext);
	if (!pre) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (opts->create) {
		if ((rc = tt_engine_add_created(repo, key, kind, loc, &policy, pre, &result, err)) < 0)
			goto done;
	} else {
		if ((rc = tt_engine_register(repo, key, kind->name, loc, policy, false, err)) < 0)
			goto done;
		result = json_pack("{s:s}", "key", key);
		if (!result || (rc = tt_oplog_record(repo->root, "add", result, pre, NULL, err)) < 0) {
			rc = result ? rc : tt_error_oom(err);
			goto done;
		}
	}
	*out = json_pack("{s:s,s:s,s:b,s:b,s:O?,s:b,s:O?,s:O?}", "key", key, "kind", kind->name, "derived_key",
			 derived, "experimental", strcmp(kind->maturity, "stable") != 0, "at",
			 json_object_get(loc, "at"), "created", opts->create, "locator",
			 opts->create ? loc : NULL, "fork", json_object_get(result, "fork"));
	if (!*out)
		rc = tt_error_oom(err);
done:
	tt_repo_unlock(repo);
	json_decref(loc);
	json_decref(pre);
	json_decref(wstext);
	json_decref(result);
	free(key);
	free(cwd);
	return rc;
}

int tt_repo_remove(tt_repo *repo, const char *key, tt_error *err)
{
	json_t *pre = NULL, *wstext = NULL, *result = NULL;
	char *text = NULL;
	int rc;
	if ((rc = tt_repo_lock(repo, err)) < 0)
		return rc;
	if (!tt_manifests_find(&repo->objects, key)) {
		rc = tt_error_set(err, TT_ECONFIG, "no such object: %s", key);
		tt_engine_key_hint(err, &repo->objects, key);
		goto done;
	}
	if ((rc = tt_manifest_read_text(&text, repo->root, key, err)) < 0 ||
	    (rc = workspace_text(repo, &wstext, err)) < 0)
		goto done;
	if (!(pre = json_pack("{s:{s:s?},s:O}", "objects", key, text, "workspace", wstext))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_manifest_delete(repo->root, key, err)) < 0)
		goto done;
	/* Its last_snapshot_errors entry stays until the next snapshot
	 * replaces the table, as tether-vcs keeps it. */
	json_object_del(repo->ws.last_snapshot, key);
	tt_workspace_forget_key(&repo->ws, key, 1);
	if ((rc = tt_workspace_save(&repo->ws, repo->root, err)) < 0)
		goto done;
	if (!(result = json_pack("{s:s}", "key", key)))
		rc = tt_error_oom(err);
	else
		rc = tt_oplog_record(repo->root, "remove", result, pre, NULL, err);
done:
	tt_repo_unlock(repo);
	json_decref(pre);
	json_decref(wstext);
	json_decref(result);
	free(text);
	return rc;
}

int tt_engine_repo_set_policy(tt_repo *repo, const char *const *keys, size_t nkeys, const char *file,
		       const char *pin, json_t **out, tt_error *err)
{
	json_t *changed = json_object(), *unchanged = json_array(), *log_changed = json_object();
	json_t *objects = json_object(), *pre = NULL, *wstext = NULL, *result = NULL;
	tt_manifest *updated = NULL;
	size_t nupdated = 0;
	int rc;

	*out = NULL;
	if (!changed || !unchanged || !log_changed || !objects) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!file && !pin) {
		rc = tt_error_set(err, TT_ECONFIG, "nothing to set: pass --file or --pin");
		goto done;
	}
	if ((rc = tt_repo_lock(repo, err)) < 0)
		goto done;
	if (!(updated = tt_calloc(nkeys, sizeof *updated))) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < nkeys; i++) {
		tt_manifest *m = tt_manifests_find(&repo->objects, keys[i]);
		if (!m) {
			rc = tt_error_set(err, TT_ECONFIG, "no such object: %s", keys[i]);
			tt_engine_key_hint(err, &repo->objects, keys[i]);
			goto done;
		}
		if (json_object_get(changed, keys[i]))
			continue;
		tt_policy want = m->policy;
		if ((file && (rc = tt_policy_set(&want, "file", file, err)) < 0) ||
		    (pin && (rc = tt_policy_set(&want, "pin", pin, err)) < 0))
			goto done;
		json_t *diff = json_object(), *ldiff = json_object();
		if (!diff || !ldiff) {
			json_decref(diff);
			json_decref(ldiff);
			rc = tt_error_oom(err);
			goto done;
		}
		if (strcmp(want.file, m->policy.file) != 0) {
			json_object_set_new(diff, "file", json_pack("{s:s,s:s}", "from", m->policy.file, "to", want.file));
			json_object_set_new(ldiff, "file", json_pack("[s,s]", m->policy.file, want.file));
		}
		if (strcmp(want.pin, m->policy.pin) != 0) {
			json_object_set_new(diff, "pin", json_pack("{s:s,s:s}", "from", m->policy.pin, "to", want.pin));
			json_object_set_new(ldiff, "pin", json_pack("[s,s]", m->policy.pin, want.pin));
		}
		if (!json_object_size(diff)) {
			json_decref(diff);
			json_decref(ldiff);
			json_array_append_new(unchanged, json_string(keys[i]));
			continue;
		}
		json_object_set_new(changed, keys[i], diff);
		json_object_set_new(log_changed, keys[i], ldiff);
		if ((rc = tt_manifest_copy(&updated[nupdated], m, err)) < 0)
			goto done;
		updated[nupdated++].policy = want;
		char *text = NULL;
		if ((rc = tt_manifest_read_text(&text, repo->root, keys[i], err)) < 0)
			goto done;
		json_object_set_new(objects, keys[i], text ? json_string(text) : json_null());
		free(text);
	}
	if (nupdated) {
		if ((rc = workspace_text(repo, &wstext, err)) < 0)
			goto done;
		pre = json_pack("{s:O,s:O}", "objects", objects, "workspace", wstext);
		result = json_pack("{s:O}", "changed", log_changed);
		if (!pre || !result) {
			rc = tt_error_oom(err);
			goto done;
		}
		for (size_t i = 0; i < nupdated; i++)
			if ((rc = tt_manifest_save(&updated[i], repo->root, err)) < 0)
				goto done;
		if ((rc = tt_oplog_record(repo->root, "set", result, pre, NULL, err)) < 0)
			goto done;
	}
	if (!(*out = json_pack("{s:O,s:O}", "changed", changed, "unchanged", unchanged)))
		rc = tt_error_oom(err);
done:
	tt_repo_unlock(repo);
	for (size_t i = 0; updated && i < nupdated; i++)
		tt_manifest_release(&updated[i]);
	free(updated);
	json_decref(changed);
	json_decref(unchanged);
	json_decref(log_changed);
	json_decref(objects);
	json_decref(pre);
	json_decref(wstext);
	json_decref(result);
	return rc;
}

int tt_repo_keys(tt_repo *repo, json_t **out, tt_error *err)
{
	/* From the manifests on disk, as tt_repo_objects reads them: a handle
	 * kept open (a language binding's) has the set its last command loaded,
	 * which that command's own add or remove left behind. */
	tt_manifest_set fresh = { 0 };
	int rc = tt_manifests_load(&fresh, repo->root, err);
	if (rc < 0)
		return rc;
	*out = json_array();
	for (size_t i = 0; *out && i < fresh.n; i++)
		json_array_append_new(*out, json_string(fresh.items[i].key));
	tt_manifests_release(&fresh);
	return *out ? 0 : tt_error_oom(err);
}

/*
 * The URI schemes this build reaches a kind's stores through ("file": a
 * local path or file://), or NULL for kinds not addressed by a store URI
 * (a catalog, a database, a repository).  The object-store schemes are
 * the ones src/storage/open.c opens; icechunk takes s3 (as tether-vcs
 * does) and Azure (which icechunk itself writes; tether-vcs refuses it).
 */
static json_t *kind_schemes(const char *kind)
{
	static const char *const objstore[] = { "file", "s3", "s3a", "gs", "gcs", "az", "azure",
						"abfs", "abfss", "adl", NULL };
	static const char *const icechunk[] = { "file", "s3", "s3a", "az", "azure", NULL };
	static const struct {
		const char *kind;
		const char *const *schemes;
	} table[] = {
		{ "delta", objstore }, { "file", objstore }, { "icechunk", icechunk }, { "lance", objstore },
	};
	for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
		if (strcmp(table[i].kind, kind) != 0)
			continue;
		json_t *out = json_array();
		for (const char *const *sc = table[i].schemes; out && *sc; sc++)
			json_array_append_new(out, json_string(*sc));
		return out;
	}
	return json_null();
}

/* A kind's row of `tether backends --json`. */
static json_t *kind_row(const tt_kind *k)
{
	json_t *caps = json_array();
	for (unsigned b = 0; b < TT_CAP_COUNT; b++)
		if (k->caps & (1u << b))
			json_array_append_new(caps, json_string(tt_cap_name(b)));
	return json_pack("{s:s,s:b,s:s,s:s,s:o,s:s?,s:o}", "kind", k->name, "installed", k->built, "maturity",
			 k->maturity, "tier", tt_tier_name(k->caps), "capabilities", caps, "note", k->not_built_note,
			 "schemes", k->built ? kind_schemes(k->name) : json_null());
}

json_t *tt_backends(void)
{
	size_t n;
	const tt_kind *kinds = tt_kinds(&n);
	json_t *rows = json_array();
	for (size_t i = 0; rows && i < n; i++)
		json_array_append_new(rows, kind_row(&kinds[i]));
	return rows;
}

int tt_kind_describe(const char *kind, json_t **out, tt_error *err)
{
	const tt_kind *k = NULL;
	*out = NULL;
	int rc = tt_kind_lookup(&k, kind, err);
	if (rc < 0)
		return rc;
	json_t *row = kind_row(k), *keys = json_array();
	for (const char *const *p = k->local_path_keys; keys && p && *p; p++)
		json_array_append_new(keys, json_string(*p));
	if (!row) {
		json_decref(keys);
		return tt_error_oom(err);
	}
	/* json_object_set_new takes keys even when it fails */
	if (!keys || json_object_set_new(row, "path_locator", json_boolean(k->key_suffixes != NULL)) < 0 ||
	    json_object_set_new(row, "path_keys", keys) < 0 ||
	    json_object_set_new(row, "locator_key", json_string(k->locator_key ? k->locator_key : "uri")) < 0) {
		json_decref(row);
		return tt_error_oom(err);
	}
	*out = row;
	return 0;
}
