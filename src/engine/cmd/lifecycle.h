/*
 * engine/cmd/lifecycle.h - stores tether makes: `add --create` and its undo.
 */
#ifndef TT_ENGINE_CMD_LIFECYCLE_H
#define TT_ENGINE_CMD_LIFECYCLE_H

#include <jansson.h>

#include "core/kinds.h"
#include "util/buf.h"
#include "engine/kernel/handle.h"

/* `add --create` after add's own checks, pre being add's undo record:
 * require CREATE, journal, have the backend make the store with this
 * dataset's owner marker, record it in the created-store index, register
 * it, and on a bookmark other than the trunk fork its working branch.
 * *result: the journal's result {key, created: {kind, identity, locator},
 * fork?}. */
int tt_engine_add_created(tt_repo *repo, const char *key, const tt_kind *kind, json_t *loc,
			  const tt_policy *policy, json_t *pre, json_t **result, tt_error *err);

/* Undoing such an add: remove the store while it is still empty and still
 * carries this dataset's marker (its own fork does not count); otherwise
 * say why it stays.  Lines go to restored / irreversible. */
void tt_engine_undo_created(tt_repo *repo, const json_t *result, json_t *restored, json_t *irreversible);

/* The locator field that names a store, for plan targets and messages
 * (uri, path, system, project_id or table; else the whole locator),
 * written to scratch. */
const char *tt_engine_store_where(const json_t *loc, tt_buf *scratch);

#endif
