/*
 * engine/kernel/checkouts.h - the live checkouts of this repository: every
 * workspace the VCS lists (git worktrees, jj workspaces) whose dataset
 * directory has run tether, this one included.
 *
 * Another checkout's per-checkout files (.tether/workspace.toml, ops.jsonl)
 * are read only when they are that checkout's own: a copy the VCS tracks
 * there came with a clone or was committed by hand, could claim pins or a
 * bookmark for a checkout that never made them, and is skipped with a
 * warning that names it and the fix.  gc (which pins and branches are
 * still someone's) and the bookmark checks of new, drop and saved plans
 * (who else works on a bookmark) read the same list.
 */
#ifndef TT_ENGINE_CHECKOUTS_H
#define TT_ENGINE_CHECKOUTS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/workspace.h"
#include "engine/kernel/handle.h"

typedef struct tt_checkout {
	char *vcs_root;   /* the workspace root as the VCS lists it */
	char *dataset;    /* its dataset directory */
	bool here;        /* this checkout */
	bool ws_ok;       /* ws read: its workspace.toml exists, is its own and parses */
	tt_workspace ws;
} tt_checkout;

typedef struct tt_checkouts {
	tt_checkout *items;
	size_t n, alloc;
} tt_checkouts;

/* Every live checkout (with a .tether/workspace.toml); *out released on
 * failure.  Skipped files are warned about on repo (tt_engine_warn). */
int tt_engine_live_checkouts(tt_repo *repo, tt_checkouts *out, tt_error *err);
void tt_engine_checkouts_release(tt_checkouts *c);

/* Whether .tether/<name> of c is c's own record (always for this
 * checkout): false for one the VCS tracks there or may track (it cannot
 * tell), with a warning.  One VCS call for another checkout's file. */
bool tt_engine_checkout_owns(tt_repo *repo, const tt_checkout *c, const char *name);

/* The workspace ids (8 hex) of the other live checkouts on bookmark (a JSON
 * array; empty for none or a NULL bookmark). */
int tt_engine_bookmark_holders(tt_repo *repo, const char *bookmark, json_t **out, tt_error *err);

#endif
