/*
 * tt_dataset: open the dataset around the current directory through
 * libtether and print what it read, as JSON: the dataset id, trunk, the
 * workspace's bookmark, the manifest hash, and every manifest.  The
 * compatibility tests compare this with what tether-vcs reports for the
 * same dataset.
 */
#include <stdio.h>

#include "core/manifest.h"
#include "engine/kernel/repo.h"
#include "util/buf.h"
#include "util/json.h"

int main(void)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	char hash[65];
	if (tt_repo_open(".", &repo, &err) < 0 || tt_manifests_hash(hash, &repo->objects, &err) < 0) {
		fprintf(stderr, "error: %s\n", tt_error_text(&err));
		tt_error_clear(&err);
		tt_repo_free(repo);
		return 1;
	}
	json_t *objects = json_object();
	for (size_t i = 0; i < repo->objects.n; i++) {
		const tt_manifest *m = &repo->objects.items[i];
		json_object_set_new(objects, m->key,
				    json_pack("{s:s,s:O,s:{s:s,s:s},s:O?,s:s?,s:s?,s:b,s:b}", "kind", m->kind,
					      "locator", m->locator, "policy", "file", m->policy.file,
					      "pin", m->policy.pin, "state", m->state, "pin_id", m->pin_id,
					      "pin_ref", m->pin_ref, "recoverable", m->recoverable,
					      "created", m->created));
	}
	json_t *out = json_pack("{s:s,s:s,s:s?,s:s,s:s,s:o}", "dataset_id", repo->config.dataset_id,
				"trunk", tt_config_trunk(&repo->config), "bookmark", repo->ws.bookmark,
				"workspace_id", repo->ws.workspace_id, "manifest_hash", hash, "objects", objects);
	tt_buf b = TT_BUF_INIT;
	tt_json_dump(&b, out, TT_JSON_PRETTY);
	puts(b.ptr);
	tt_buf_release(&b);
	json_decref(out);
	tt_repo_free(repo);
	return 0;
}
