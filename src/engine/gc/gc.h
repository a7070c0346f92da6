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

#endif
