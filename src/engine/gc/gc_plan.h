/*
 * engine/gc/gc_plan.h - gc's plan: the whole one, drop's scoped one and
 * abandon's after a history rewrite.
 */
#ifndef TT_ENGINE_GC_GC_PLAN_H
#define TT_ENGINE_GC_GC_PLAN_H

#include <stddef.h>

#include "core/plan.h"
#include "engine/gc/state.h"
#include "engine/kernel/handle.h"

int tt_gc_check_stores(const tt_gc_opts *o, tt_error *err);
int tt_gc_plan_gc(tt_repo *repo, const tt_gc_opts *o, tt_plan **out, tt_error *err);

int tt_gc_plan_scoped(tt_repo *repo, const tt_gc_opts *o, const tt_gc_scope *scope, tt_plan **out, tt_error *err);
/* abandon's plan: the commits it just rewrote away are the user's
 * decision, so their pins are not kept as ones a clone made from here may
 * hold (gc_pins.c's "committed"). */
int tt_gc_plan_after_rewrite(tt_repo *repo, const tt_gc_opts *o, tt_plan **out, tt_error *err);

#endif
