/* core/config.c - tether.toml (see config.h). */
#include "core/config.h"

#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "core/kinds.h"
#include "core/layout.h"
#include "core/tomlfile.h"
#include "util/fs.h"
#include "util/mem.h"
#include "util/toml.h"

int tt_policy_set(tt_policy *p, const char *field, const char *value, tt_error *err)
{
	if (strcmp(field, "file") == 0) {
		if (strcmp(value, "immutable") != 0 && strcmp(value, "versioned") != 0)
			return tt_error_set(err, TT_ECONFIG,
					    "invalid policy.file: '%s' (immutable or versioned)", value);
		snprintf(p->file, sizeof p->file, "%s", value);
		return 0;
	}
	if (strcmp(field, "pin") == 0) {
		if (strcmp(value, "native") != 0 && strcmp(value, "record") != 0)
			return tt_error_set(err, TT_ECONFIG,
					    "invalid policy.pin: '%s' (native or record)", value);
		snprintf(p->pin, sizeof p->pin, "%s", value);
		return 0;
	}
	return tt_error_set(err, TT_ECONFIG, "unknown policy field: '%s' (file or pin)", field);
}

static void defaults(tt_config *c)
{
	memset(c, 0, sizeof *c);
	c->version = TT_CONFIG_VERSION;
	c->defaults = TT_POLICY_DEFAULT;
	snprintf(c->new_fork, sizeof c->new_fork, "lazy");
}

int tt_config_new(tt_config *c, const char *dataset_id, tt_error *err)
{
	defaults(c);
	c->vcs = json_object();
	c->backends = json_object();
	if (!c->vcs || !c->backends)
		return tt_error_oom(err);
	if (dataset_id) {
		if (!tt_is_dataset_id(dataset_id))
			return tt_error_set(err, TT_ECONFIG,
					    "invalid dataset id '%s': 8 lowercase hex characters (0-9, a-f), "
					    "as in the tether.<id>.* refs a dataset makes", dataset_id);
		memcpy(c->dataset_id, dataset_id, 9);
		return 0;
	}
	return tt_new_dataset_id(c->dataset_id, err);
}

void tt_config_release(tt_config *c)
{
	if (!c)
		return;
	json_decref(c->vcs);
	json_decref(c->backends);
	c->vcs = c->backends = NULL;
}

const char *tt_config_trunk(const tt_config *c)
{
	json_t *t = c->vcs ? json_object_get(c->vcs, "trunk") : NULL;
	return json_is_string(t) && json_string_length(t) ? json_string_value(t) : "main";
}

static bool listed(const char *const *list, const char *name)
{
	for (; list && *list; list++)
		if (strcmp(*list, name) == 0)
			return true;
	return false;
}

static const char *const UNSAFE_TAIL =
	"a committed file arrives with every clone and must not choose executables, "
	"endpoints, credentials, or SQL";

/* [backends.<kind>]: only the kind's allowlisted keys, and inside an option
 * table only its allowlisted options. */
static int check_backend_table(const tt_toml_value *tbl, const char *kind, const tt_kind *kinds,
			       size_t nkinds, const char *file, tt_error *err)
{
	const tt_kind *k = tt_kind_in(kinds, nkinds, kind);
	if (!k) {
		if (strcmp(kind, "lakefs") == 0)
			return 0; /* retired kind: its old settings are inert */
		return tt_toml_refuse(err, file, tbl,
				      "[backends.%s] configures an unknown backend kind", kind);
	}
	for (size_t i = 0; i < tt_toml_table_len(tbl); i++) {
		const char *key = tt_toml_table_key(tbl, i);
		const tt_toml_value *v = tt_toml_table_at(tbl, i);
		if (!listed(k->safe_config_keys, key)) {
			tt_toml_refuse(err, file, v, "tether.toml [backends.%s] sets %s; %s", kind, key,
				       UNSAFE_TAIL);
			return tt_error_hint(err, "put it in .tether/secrets.toml (untracked) under "
						  "[backends.%s], or in the environment", kind);
		}
		if (tt_toml_type_of(v) != TT_TOML_TABLE)
			continue;
		for (size_t j = 0; j < tt_toml_table_len(v); j++) {
			const char *opt = tt_toml_table_key(v, j);
			if (listed(k->safe_option_keys, opt))
				continue;
			tt_toml_refuse(err, file, tt_toml_table_at(v, j),
				       "tether.toml [backends.%s] sets %s.%s; %s", kind, key, opt,
				       UNSAFE_TAIL);
			return tt_error_hint(err, "put it in .tether/secrets.toml (untracked) under "
						  "[backends.%s] %s, or in the environment", kind, key);
		}
	}
	return 0;
}

/* `upgrade` reads a dataset of an older format (this thread only). */
static _Thread_local bool accept_outdated;

void tt_config_accept_outdated(bool yes)
{
	accept_outdated = yes;
}

int tt_config_parse(tt_config *c, const char *text, size_t len, const char *file, const tt_kind *kinds,
		    size_t nkinds, tt_error *err)
{
	tt_toml_value *doc = NULL;
	const tt_toml_value *tether = NULL, *dataset = NULL, *snapshot = NULL, *verify = NULL,
			 *newt = NULL, *defs = NULL, *vcs = NULL, *backends = NULL, *import = NULL;
	int64_t version = 1;
	const char *id = NULL, *fork = NULL, *s;
	int rc;

	defaults(c);
	if ((rc = tt_toml_parse(&doc, text, len, file, err)) < 0)
		return rc;
	if ((rc = tt_toml_get_table(doc, "tether", &tether, file, "", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "dataset", &dataset, file, "", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "snapshot", &snapshot, file, "", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "verify", &verify, file, "", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "new", &newt, file, "", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "defaults", &defs, file, "", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "vcs", &vcs, file, "", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "backends", &backends, file, "", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "import", &import, file, "", err)) < 0)
		goto done;

	if ((rc = tt_toml_get_int(tether, "version", &version, file, "[tether]", err)) < 0)
		goto done;
	if (version > TT_CONFIG_VERSION) {
		rc = tt_toml_refuse(err, file, tt_toml_table_get(tether, "version"),
				    "tether.toml is version %lld, newer than this tether understands (%d)",
				    (long long)version, TT_CONFIG_VERSION);
		tt_error_hint(err, "upgrade tether to a release that reads format %lld", (long long)version);
		goto done;
	}
	if (version < TT_CONFIG_VERSION && !accept_outdated) {
		rc = tt_error_set(err, TT_ECONFIG, "%s: tether.toml is version %lld; this tether expects %d",
				  file, (long long)version, TT_CONFIG_VERSION);
		tt_error_hint(err, "bring the dataset forward with tether-vcs 0.1.0b7 (`pip install "
				   "tether-vcs==0.1.0b7`, then `tether upgrade --dry-run` and `tether upgrade`)");
		goto done;
	}
	c->version = (int)version;

	if ((rc = tt_toml_get_str(dataset, "id", &id, file, "[dataset]", err)) < 0)
		goto done;
	if (!id && accept_outdated && version < 4) {
		/* an alpha dataset from before dataset ids: the upgrade's
		 * namespacing part gives it one */
		c->dataset_id[0] = '\0';
	} else if (!id || !tt_is_dataset_id(id)) {
		char fresh[9] = "0a1b2c3d";
		tt_new_dataset_id(fresh, NULL);
		rc = tt_toml_refuse(err, file, id ? tt_toml_table_get(dataset, "id") : dataset,
				    "tether.toml has no valid [dataset] id (8 lowercase hex characters); "
				    "it namespaces this dataset's pins and working branches in every store");
		tt_error_hint(err, "add\n  [dataset]\n  id = \"%s\"\n(pins and branches made before it was "
				   "set are not recognised: re-commit and `new`, or `tether repair`)", fresh);
		goto done;
	} else {
		memcpy(c->dataset_id, id, 9);
	}

	if ((rc = tt_toml_get_bool(snapshot, "auto", &c->snapshot_auto, file, "[snapshot]", err)) < 0 ||
	    (rc = tt_toml_get_bool(verify, "on_status", &c->verify_on_status, file, "[verify]", err)) < 0 ||
	    (rc = tt_toml_get_str(newt, "fork", &fork, file, "[new]", err)) < 0)
		goto done;
	if (fork) {
		if (strcmp(fork, "lazy") != 0 && strcmp(fork, "eager") != 0) {
			rc = tt_toml_refuse(err, file, tt_toml_table_get(newt, "fork"),
					    "invalid [new] fork: '%s' (lazy or eager)", fork);
			goto done;
		}
		snprintf(c->new_fork, sizeof c->new_fork, "%s", fork);
	}
	static const char *const fields[] = { "file", "pin" };
	for (size_t i = 0; i < 2; i++) {
		s = NULL;
		if ((rc = tt_toml_get_str(defs, fields[i], &s, file, "[defaults]", err)) < 0)
			goto done;
		if (s && (rc = tt_policy_set(&c->defaults, fields[i], s, err)) < 0) {
			tt_error_prefix(err, "%s:%d:%d", file, tt_toml_line(tt_toml_table_get(defs, fields[i])),
					tt_toml_col(tt_toml_table_get(defs, fields[i])));
			goto done;
		}
	}

	/* What a clone may not decide. */
	static const char *const exec_keys[] = { "git_path", "jj_path" };
	for (size_t i = 0; i < 2; i++) {
		const tt_toml_value *v = vcs ? tt_toml_table_get(vcs, exec_keys[i]) : NULL;
		if (!v)
			continue;
		rc = tt_toml_refuse(err, file, v, "tether.toml [vcs] sets %s; a committed file arrives "
				    "with every clone and must not choose executables", exec_keys[i]);
		tt_error_hint(err, "put it in .tether/secrets.toml (untracked) under [vcs], or set "
				   "TETHER_GIT / TETHER_JJ");
		goto done;
	}
	for (size_t i = 0; vcs && i < tt_toml_table_len(vcs); i++) {
		const char *k = tt_toml_table_key(vcs, i);
		if ((strcmp(k, "trunk") == 0 || strcmp(k, "prefer") == 0) &&
		    tt_toml_type_of(tt_toml_table_at(vcs, i)) != TT_TOML_STRING) {
			rc = tt_toml_refuse(err, file, tt_toml_table_at(vcs, i), "[vcs] %s must be a string", k);
			goto done;
		}
	}
	if (import && tt_toml_table_get(import, "query")) {
		rc = tt_toml_refuse(err, file, tt_toml_table_get(import, "query"),
				    "tether.toml [import] sets query; a committed file arrives with every "
				    "clone and must not choose SQL");
		tt_error_hint(err, "put it in .tether/secrets.toml (untracked) under [import]");
		goto done;
	}
	for (size_t i = 0; backends && i < tt_toml_table_len(backends); i++) {
		const tt_toml_value *t = tt_toml_table_at(backends, i);
		if (tt_toml_type_of(t) != TT_TOML_TABLE) {
			rc = tt_toml_refuse(err, file, t, "[backends] %s must be a table", tt_toml_table_key(backends, i));
			goto done;
		}
		if ((rc = check_backend_table(t, tt_toml_table_key(backends, i), kinds, nkinds, file, err)) < 0)
			goto done;
	}

	c->vcs = vcs ? tt_toml_to_json(vcs, file, err) : json_object();
	c->backends = backends ? tt_toml_to_json(backends, file, err) : json_object();
	if (!c->vcs || !c->backends)
		rc = err && err->code ? err->code : tt_error_oom(err);
done:
	tt_toml_free(doc);
	if (rc < 0)
		tt_config_release(c);
	return rc;
}

int tt_config_load(tt_config *c, const char *root, const tt_kind *kinds, size_t nkinds, tt_error *err)
{
	char *path = tt_config_path(root);
	tt_buf text = TT_BUF_INIT;
	int rc;
	if (!path)
		return tt_error_oom(err);
	rc = tt_read_file(path, &text, 4 << 20, err);
	if (rc == 0)
		rc = tt_config_parse(c, text.ptr, text.len, TT_CONFIG_FILENAME, kinds, nkinds, err);
	free(path);
	tt_buf_release(&text);
	return rc;
}

int tt_config_render(tt_buf *out, const tt_config *c, tt_error *err)
{
	json_t *doc = json_pack("{s:{s:i}}", "tether", "version", c->version);
	tt_toml_value *t = NULL;
	int rc = -1;
	if (!doc)
		return tt_error_oom(err);
	if (c->dataset_id[0])
		json_object_set_new(doc, "dataset", json_pack("{s:s}", "id", c->dataset_id));
	json_object_set_new(doc, "snapshot", json_pack("{s:b}", "auto", c->snapshot_auto));
	json_object_set_new(doc, "verify", json_pack("{s:b}", "on_status", c->verify_on_status));
	json_object_set_new(doc, "new", json_pack("{s:s}", "fork", c->new_fork));
	json_object_set_new(doc, "defaults",
			    json_pack("{s:s,s:s}", "file", c->defaults.file, "pin", c->defaults.pin));
	if (c->vcs && json_object_size(c->vcs))
		json_object_set(doc, "vcs", c->vcs);
	if (c->backends && json_object_size(c->backends))
		json_object_set(doc, "backends", c->backends);
	if (!(t = tt_toml_from_json(doc, err)))
		goto done;
	rc = tt_toml_write(out, t, err);
done:
	tt_toml_free(t);
	json_decref(doc);
	return rc;
}

int tt_config_save(const tt_config *c, const char *root, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	char *path = tt_config_path(root);
	int rc = path ? tt_config_render(&b, c, err) : tt_error_oom(err);
	if (rc == 0)
		rc = tt_write_file_atomic(path, b.ptr, b.len, 0644, err);
	free(path);
	tt_buf_release(&b);
	return rc;
}
