/* engine/kernel/register.c - registering an object (see register.h). */
#include "engine/kernel/register.h"

#include <string.h>

#include "util/mem.h"

int tt_engine_register(tt_repo *repo, const char *key, const char *kind, json_t *loc, tt_policy policy,
		       bool created, tt_error *err)
{
	tt_manifest m = { 0 };
	int rc;
	if ((rc = tt_manifest_new(&m, key, kind, loc, policy, err)) == 0) {
		m.created = created;
		rc = tt_manifest_save(&m, repo->root, err);
	}
	tt_manifest_release(&m);
	if (rc < 0)
		return rc;
	/* A re-registered key starts without a working ref; a branch its
	 * previous incarnation left is found by `gc --prune-bookmarks`. */
	tt_workspace_forget_key(&repo->ws, key, 0);
	return tt_workspace_save(&repo->ws, repo->root, err);
}
