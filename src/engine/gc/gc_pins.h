/*
 * engine/gc/gc_pins.h - gc: the unpin job.
 */
#ifndef TT_ENGINE_GC_GC_PINS_H
#define TT_ENGINE_GC_GC_PINS_H

#include "engine/gc/state.h"

int tt_gc_plan_forget_refs(gc_state *s, tt_error *err);
int tt_gc_plan_unpins(gc_state *s, tt_error *err);

#endif
