/* core/secrets.c - the per-checkout secrets file (see secrets.h). */
#include "core/secrets.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/layout.h"
#include "core/tomlfile.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"
#include "util/toml.h"

void tt_secrets_release(tt_secrets *s)
{
	if (!s)
		return;
	json_decref(s->doc);
	memset(s, 0, sizeof *s);
}

/* The shapes the file may have; values are not inspected beyond types. */
static int check_shape(const tt_toml_value *doc, const char *file, tt_error *err)
{
	const tt_toml_value *vcs = NULL, *imp = NULL, *t = NULL;
	const char *s = NULL;
	int rc;
	if ((rc = tt_toml_get_table(doc, "vcs", &vcs, file, "secrets", err)) < 0 ||
	    (rc = tt_toml_get_str(vcs, "git_path", &s, file, "[vcs]", err)) < 0 ||
	    (rc = tt_toml_get_str(vcs, "jj_path", &s, file, "[vcs]", err)) < 0 ||
	    (rc = tt_toml_get_table(doc, "import", &imp, file, "secrets", err)) < 0 ||
	    (rc = tt_toml_get_str(imp, "query", &s, file, "[import]", err)) < 0)
		return rc;
	static const char *const maps[] = { "backends", "uris", "objects" };
	for (size_t i = 0; i < 3; i++) {
		if ((rc = tt_toml_get_table(doc, maps[i], &t, file, "secrets", err)) < 0)
			return rc;
		for (size_t j = 0; t && j < tt_toml_table_len(t); j++) {
			if (tt_toml_type_of(tt_toml_table_at(t, j)) != TT_TOML_TABLE)
				return tt_toml_refuse(err, file, tt_toml_table_at(t, j),
						      "[%s] entries must be tables", maps[i]);
		}
	}
	return 0;
}

int tt_secrets_parse(tt_secrets *s, const char *text, size_t len, const char *file, tt_error *err)
{
	tt_toml_value *doc = NULL;
	int rc;
	memset(s, 0, sizeof *s);
	if ((rc = tt_toml_parse(&doc, text, len, file, err)) < 0)
		return rc;
	if ((rc = check_shape(doc, file, err)) == 0) {
		s->doc = tt_toml_to_json(doc, file, err);
		if (!s->doc)
			rc = err->code ? err->code : tt_error_oom(err);
		s->present = true;
	}
	tt_toml_free(doc);
	return rc;
}

int tt_secrets_load(tt_secrets *s, const char *root, tt_error *err)
{
	char *path = tt_tether_path(root, TT_SECRETS_FILENAME);
	tt_buf text = TT_BUF_INIT;
	struct stat st;
	int rc = 0;
	memset(s, 0, sizeof *s);
	if (!path)
		return tt_error_oom(err);
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		s->doc = json_object();
		rc = s->doc ? 0 : tt_error_oom(err);
	} else if ((rc = tt_read_file(path, &text, 4u << 20, err)) == 0 &&
		   (rc = tt_secrets_parse(s, text.ptr, text.len, ".tether/" TT_SECRETS_FILENAME, err)) == 0) {
		s->insecure = (st.st_mode & 077) != 0;
	}
	tt_buf_release(&text);
	free(path);
	return rc;
}

const char *tt_secrets_vcs(const tt_secrets *s, const char *key)
{
	json_t *v = json_object_get(json_object_get(s->doc, "vcs"), key);
	return json_is_string(v) && json_string_length(v) ? json_string_value(v) : NULL;
}

json_t *tt_secrets_backend(const tt_secrets *s, const char *kind)
{
	return json_object_get(json_object_get(s->doc, "backends"), kind);
}

int tt_secrets_merge(json_t *dst, const json_t *src)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)src, k, v) {
		json_t *held = json_object_get(dst, k);
		if (json_is_object(v) && json_is_object(held)) {
			if (tt_secrets_merge(held, v) < 0)
				return -1;
		} else if (json_object_set_new(dst, k, json_deep_copy(v)) < 0) {
			return -1;
		}
	}
	return 0;
}

const char *tt_secrets_locator_uri(const json_t *locator)
{
	/* identifier: an Iceberg table's catalog name for it */
	static const char *const keys[] = { "uri", "path", "identifier" };
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(locator, keys[i]);
		if (json_is_string(v) && json_string_length(v))
			return json_string_value(v);
	}
	return NULL;
}

json_t *tt_secrets_rules(const tt_secrets *s, size_t n, const char *const *keys,
			 const json_t *const *locators)
{
	json_t *uris = json_object_get(s->doc, "uris");
	json_t *objects = json_object_get(s->doc, "objects");
	json_t *rules = json_is_object(uris) ? json_deep_copy(uris) : json_object();
	if (!rules)
		return NULL;
	for (size_t i = 0; i < n && json_is_object(objects); i++) {
		json_t *entry = json_object_get(objects, keys[i]);
		const char *uri = tt_secrets_locator_uri(locators[i]);
		json_t *rule;
		if (!json_is_object(entry) || !uri)
			continue;
		rule = json_object_get(rules, uri);
		if (!rule) {
			rule = json_object();
			if (!rule || json_object_set_new(rules, uri, rule) < 0) {
				json_decref(rules);
				return NULL;
			}
		}
		/* the object's own entry wins over the [uris] one, key by key */
		const char *k;
		json_t *v;
		json_object_foreach(entry, k, v) {
			if (json_object_set_new(rule, k, json_deep_copy(v)) < 0) {
				json_decref(rules);
				return NULL;
			}
		}
	}
	return rules;
}

json_t *tt_secrets_rule_for(const json_t *rules, const char *uri)
{
	const char *k, *best = NULL;
	json_t *v, *out = NULL;
	if (!uri)
		return NULL;
	json_object_foreach((json_t *)rules, k, v) {
		if (strncmp(uri, k, strlen(k)) == 0 && (!best || strlen(k) > strlen(best))) {
			best = k;
			out = v;
		}
	}
	return out;
}
