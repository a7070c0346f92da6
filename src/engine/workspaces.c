/*
 * engine/workspaces.c - the other live checkouts of this repository (git
 * worktrees): which bookmark each works on, so a bookmark another checkout
 * holds is not taken over silently.
 */
#include <stdlib.h>
#include <string.h>

#include "core/layout.h"
#include "engine/engine.h"
#include "util/fs.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

int tt_engine_bookmark_holders(tt_repo *repo, const char *bookmark, json_t **out, tt_error *err)
{
	json_t *roots = NULL;
	int rc;
	*out = json_array();
	if (!*out)
		return tt_error_oom(err);
	if (!bookmark)
		return 0;
	if ((rc = tt_vcs_workspace_roots(repo->vcs, &roots, err)) < 0)
		return rc;
	size_t n = strlen(repo->vcs->root);
	const char *rel = strncmp(repo->root, repo->vcs->root, n) == 0 && repo->root[n] == '/'
				  ? repo->root + n + 1 : "";
	size_t i;
	json_t *r;
	json_array_foreach(roots, i, r) {
		char *droot = *rel ? tt_path_join(json_string_value(r), rel) : tt_strdup(json_string_value(r));
		char *real = droot ? tt_realpath(droot) : NULL;
		if (real && strcmp(real, repo->root) != 0) {
			tt_workspace ws;
			int exists = 0;
			tt_error ignored = TT_ERROR_INIT;
			/* An unreadable peer is not a holder we can name; skip it. */
			if (tt_workspace_load(&ws, real, &exists, &ignored) == 0) {
				if (exists && ws.bookmark && strcmp(ws.bookmark, bookmark) == 0) {
					char id[9];
					snprintf(id, sizeof id, "%s", ws.workspace_id);
					json_array_append_new(*out, json_string(id));
				}
				tt_workspace_release(&ws);
			}
			tt_error_clear(&ignored);
		}
		free(droot);
		free(real);
	}
	json_decref(roots);
	return 0;
}
