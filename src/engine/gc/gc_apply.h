/*
 * engine/gc/gc_apply.h - gc: applying a plan.
 */
#ifndef TT_ENGINE_GC_GC_APPLY_H
#define TT_ENGINE_GC_GC_APPLY_H

#include <jansson.h>

#include "core/plan.h"
#include "engine/kernel/handle.h"

int tt_gc_apply_gc(tt_repo *repo, const tt_plan *plan, const char *parent, json_t **out, tt_error *err);
json_t *tt_gc_dry_report(const tt_plan *plan);

#endif
