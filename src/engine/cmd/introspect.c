/* engine/cmd/introspect.c - read-only views a language binding needs: the
 * working tree's manifests as JSON, the working copy's commit, and the id
 * and hash functions over plain JSON values (see tether.h). */
#include <stdlib.h>
#include <string.h>

#include "engine/kernel/repo.h"

#include "core/ids.h"
#include "core/manifest.h"
#include "util/buf.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

static json_t *manifest_json(const tt_manifest *m)
{
	return json_pack("{s:s,s:s,s:O,s:{s:s,s:s},s:O,s:o,s:s?,s:b,s:s}", "key", m->key, "kind", m->kind,
			 "locator", m->locator, "policy", "file", m->policy.file, "pin", m->policy.pin,
			 "state", m->state ? m->state : json_null(), "pin",
			 m->pin_id ? json_pack("{s:s,s:s}", "id", m->pin_id, "ref", m->pin_ref) : json_null(),
			 "captured_at", m->captured_at, "recoverable", m->recoverable, "origin",
			 m->created ? "created" : "adopted");
}

int tt_repo_objects(tt_repo *repo, json_t **out, tt_error *err)
{
	tt_manifest_set fresh = { 0 };
	*out = NULL;
	int rc = tt_manifests_load(&fresh, repo->root, err);
	if (rc < 0)
		return rc;
	json_t *all = json_object();
	for (size_t i = 0; all && i < fresh.n; i++) {
		json_t *one = manifest_json(&fresh.items[i]);
		if (!one || json_object_set_new(all, fresh.items[i].key, one) < 0) {
			json_decref(all);
			all = NULL;
		}
	}
	tt_manifests_release(&fresh);
	if (!all)
		return tt_error_oom(err);
	*out = all;
	return 0;
}

int tt_repo_current_rev(tt_repo *repo, char **out, tt_error *err)
{
	*out = NULL;
	return tt_vcs_current_rev(repo->vcs, out, err);
}

const char *tt_repo_vcs_kind(const tt_repo *repo) { return tt_vcs_kind(repo->vcs); }

const char *tt_repo_bookmark(const tt_repo *repo) { return repo->ws.bookmark; }


int tt_compute_pin_id(const char *kind, const json_t *identity, const json_t *state, const char *dataset_id,
		      char out[64], tt_error *err)
{
	return tt_pin_id(out, dataset_id, kind, identity, state, err);
}

int tt_compute_listing_name(const char *kind, const json_t *identity, const json_t *state, char out[32],
			    tt_error *err)
{
	return tt_listing_name(out, kind, identity, state, err);
}

int tt_compute_working_ref_name(const char *dataset_id, const char *bookmark, char **out, tt_error *err)
{
	*out = NULL;
	return tt_working_ref_name(out, dataset_id, bookmark, err);
}

static int str_field(const json_t *obj, const char *name, const char **out, const char *key, tt_error *err)
{
	const json_t *v = json_object_get(obj, name);
	if (!json_is_string(v))
		return tt_error_set(err, TT_EUSAGE, "[%s] manifest field '%s' must be a string", key, name);
	*out = json_string_value(v);
	return 0;
}

int tt_manifest_hash(const json_t *manifests, char hex[65], tt_error *err)
{
	if (!json_is_object(manifests))
		return tt_error_set(err, TT_EUSAGE, "manifest_hash takes an object of manifests by key");
	size_t n = json_object_size(manifests), i = 0;
	tt_keyed_canon *entries = tt_calloc(n ? n : 1, sizeof *entries);
	tt_buf *canon = tt_calloc(n ? n : 1, sizeof *canon);
	int rc = 0;
	if (!entries || !canon) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t j = 0; j < n; j++)
		tt_buf_init(&canon[j], 0);
	const char *key;
	json_t *m;
	json_object_foreach((json_t *)manifests, key, m) {
		const char *kind = NULL, *file = NULL, *pin = NULL;
		const json_t *policy = json_object_get(m, "policy");
		if (!json_is_object(m) || !json_is_object(policy)) {
			rc = tt_error_set(err, TT_EUSAGE, "[%s] a manifest needs an object 'policy'", key);
			goto done;
		}
		if ((rc = str_field(m, "kind", &kind, key, err)) < 0 || (rc = str_field(policy, "file", &file, key, err)) < 0 ||
		    (rc = str_field(policy, "pin", &pin, key, err)) < 0)
			goto done;
		const json_t *locator = json_object_get(m, "locator");
		const json_t *state = json_object_get(m, "state");
		const json_t *p = json_object_get(m, "pin");
		const json_t *recoverable = json_object_get(m, "recoverable");
		json_t *pinv = json_null();
		if (p && !json_is_null(p)) {
			const json_t *id = json_object_get(p, "id"), *ref = json_object_get(p, "ref");
			pinv = json_is_string(id) && json_is_string(ref) ? json_pack("{s:O,s:O}", "id", id, "ref", ref) : NULL;
		}
		json_t *doc = pinv && json_is_object(locator)
				      ? json_pack("{s:s,s:s,s:O,s:{s:s,s:s},s:O,s:o,s:b}", "key", key, "kind", kind,
						  "locator", locator, "policy", "file", file, "pin", pin, "state",
						  state ? state : json_null(), "pin", pinv, "recoverable",
						  recoverable ? json_is_true(recoverable) : 1)
				      : NULL;
		if (!doc) {
			if (pinv && !json_is_object(locator))
				json_decref(pinv);
			rc = tt_error_set(err, TT_EUSAGE, "[%s] a manifest needs an object 'locator', and a 'pin' "
					  "with string 'id' and 'ref' or null", key);
			goto done;
		}
		rc = tt_json_canonical(&canon[i], doc);
		json_decref(doc);
		if (rc < 0) {
			rc = tt_buf_check(&canon[i], err, "manifest");
			goto done;
		}
		entries[i].key = key;
		entries[i].canonical = canon[i].ptr;
		i++;
	}
	rc = tt_manifest_hash_of(hex, entries, n, err);
done:
	for (size_t j = 0; canon && entries && j < n; j++)
		tt_buf_release(&canon[j]);
	free(canon);
	free(entries);
	return rc;
}
