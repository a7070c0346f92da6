/*
 * engine/gc/gc_prune.h - gc: the --prune-bookmarks job.
 */
#ifndef TT_ENGINE_GC_GC_PRUNE_H
#define TT_ENGINE_GC_GC_PRUNE_H

#include "engine/gc/state.h"

int tt_gc_plan_prune(gc_state *s, tt_error *err);

#endif
