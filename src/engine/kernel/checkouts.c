/* engine/kernel/checkouts.c - the live checkouts of this repository (see checkouts.h). */
#include "engine/kernel/checkouts.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/layout.h"
#include "engine/kernel/repo.h"
#include "util/fs.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

void tt_engine_checkouts_release(tt_checkouts *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->items[i].vcs_root);
		free(c->items[i].dataset);
		if (c->items[i].ws_ok)
			tt_workspace_release(&c->items[i].ws);
	}
	free(c->items);
	memset(c, 0, sizeof *c);
}

/* A copy the VCS tracks in another checkout came with every clone, and
 * could claim pins or a bookmark as that checkout's. */
bool tt_engine_checkout_owns(tt_repo *repo, const tt_checkout *c, const char *name)
{
	struct stat st;
	if (c->here)
		return true;
	char *sub = tt_asprintf(TT_DIR "/%s", name);
	char *path = sub ? tt_path_join(c->dataset, sub) : NULL;
	char *relpath = sub ? tt_path_join(tt_engine_dataset_rel(repo), sub) : NULL;
	bool own = true;
	if (!path || !relpath || stat(path, &st) != 0)
		goto done;
	const char *paths[] = { relpath };
	bool tracked = false;
	tt_error e = TT_ERROR_INIT;
	char *why = NULL;
	if (tt_vcs_tracked_at(repo->vcs, c->vcs_root, paths, 1, &tracked, &e) < 0) {
		own = false;
		why = tt_asprintf("cannot tell whether %s tracks it there (%s)", tt_vcs_kind(repo->vcs),
				  tt_error_text(&e));
	} else if (tracked) {
		own = false;
		why = tt_asprintf("%s tracks it there", tt_vcs_kind(repo->vcs));
	}
	if (!own)
		tt_engine_warn(repo, tt_asprintf("skipping %s of checkout %s: %s, so it is not that checkout's own "
						 "record (a tracked copy comes with every clone); untrack it in that "
						 "checkout to count it again", relpath, c->vcs_root, why ? why : ""));
	free(why);
	tt_error_clear(&e);
done:
	free(sub);
	free(path);
	free(relpath);
	return own;
}

int tt_engine_live_checkouts(tt_repo *repo, tt_checkouts *out, tt_error *err)
{
	json_t *roots = NULL;
	const char *rel = tt_engine_dataset_rel(repo);
	int rc;
	memset(out, 0, sizeof *out);
	if ((rc = tt_vcs_workspace_roots(repo->vcs, &roots, err)) < 0)
		return rc;
	size_t i;
	json_t *r;
	json_array_foreach(roots, i, r) {
		const char *root = json_string_value(r);
		char *dataset = tt_path_join(root, rel);
		char *wsfile = dataset ? tt_path_join(dataset, TT_DIR "/" TT_WORKSPACE_FILENAME) : NULL;
		if (!dataset || !wsfile) {
			free(dataset);
			free(wsfile);
			rc = tt_error_oom(err);
			goto done;
		}
		bool present = tt_is_file(wsfile);
		free(wsfile);
		if (!present || TT_ARRAY_GROW(out->items, out->alloc, out->n + 1) < 0) {
			free(dataset);
			if (present) {
				rc = tt_error_oom(err);
				goto done;
			}
			continue;
		}
		tt_checkout *c = &out->items[out->n++];
		memset(c, 0, sizeof *c);
		c->vcs_root = tt_strdup(root);
		c->dataset = dataset;
		char *real = tt_realpath(dataset);
		c->here = real && strcmp(real, repo->root) == 0;
		free(real);
		if (!c->vcs_root) {
			rc = tt_error_oom(err);
			goto done;
		}
		if (tt_engine_checkout_owns(repo, c, TT_WORKSPACE_FILENAME)) {
			int exists = 0;
			tt_error ignored = TT_ERROR_INIT;
			/* One that cannot be read (mid-write, another format) is skipped. */
			c->ws_ok = tt_workspace_load(&c->ws, dataset, &exists, &ignored) == 0;
			if (c->ws_ok && !exists) {
				tt_workspace_release(&c->ws);
				c->ws_ok = false;
			}
			tt_error_clear(&ignored);
		}
	}
done:
	json_decref(roots);
	if (rc < 0)
		tt_engine_checkouts_release(out);
	return rc;
}

int tt_engine_bookmark_holders(tt_repo *repo, const char *bookmark, json_t **out, tt_error *err)
{
	tt_checkouts co;
	int rc;
	*out = json_array();
	if (!*out)
		return tt_error_oom(err);
	if (!bookmark)
		return 0;
	if ((rc = tt_engine_live_checkouts(repo, &co, err)) < 0) {
		json_decref(*out);
		*out = NULL;
		return rc;
	}
	for (size_t i = 0; i < co.n; i++) {
		const tt_checkout *c = &co.items[i];
		if (c->here || !c->ws_ok || !c->ws.bookmark || strcmp(c->ws.bookmark, bookmark) != 0)
			continue;
		char id[9];
		snprintf(id, sizeof id, "%s", c->ws.workspace_id);
		json_array_append_new(*out, json_string(id));
	}
	tt_engine_checkouts_release(&co);
	return 0;
}
