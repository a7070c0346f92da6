/*
 * engine/gc/gc_workspaces.h - gc: the journals of the live checkouts.
 */
#ifndef TT_ENGINE_GC_GC_WORKSPACES_H
#define TT_ENGINE_GC_GC_WORKSPACES_H

#include <jansson.h>

#include "engine/gc/state.h"

int tt_gc_inflight_pins(const journals *j, json_t *ids, tt_error *err);
void tt_gc_journals_release(journals *j);
json_t *tt_gc_known_pins(tt_repo *repo, json_t **committed);
/* The journals of the live checkouts whose ops.jsonl is their own. */
int tt_gc_read_journals(tt_repo *repo, const tt_checkouts *co, journals *out, tt_error *err);
int tt_gc_seed_pinned(tt_repo *repo, const journals *j, tt_error *err);

#endif
