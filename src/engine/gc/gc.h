/*
 * engine/gc/gc.h - `gc`: applying a plan under the command's locks.
 */
#ifndef TT_ENGINE_GC_GC_H
#define TT_ENGINE_GC_GC_H

#include <jansson.h>

#include "core/plan.h"
#include "engine/kernel/handle.h"

/* Apply a gc plan; the caller holds the checkout and repository locks. */
int tt_gc_apply(tt_repo *repo, const tt_plan *plan, const char *parent, json_t **out, tt_error *err);

/* The engine's side of the public tt_repo_gc (include/tether/tether.h):
 * each of its modes as the call that runs it (api/planned.c chooses). */
int tt_engine_repo_gc(tt_repo *repo, const tt_gc_opts *o, json_t **out, tt_error *err);
int tt_engine_repo_plan_gc(tt_repo *repo, const tt_gc_opts *o, char **plan_json, char **plan_text, tt_error *err);
int tt_engine_repo_apply_gc_plan(tt_repo *repo, const char *text, size_t len, json_t **out, tt_error *err);

#endif
