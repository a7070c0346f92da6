/*
 * engine/gc/gc_listings.h - gc: the listings job.
 */
#ifndef TT_ENGINE_GC_GC_LISTINGS_H
#define TT_ENGINE_GC_GC_LISTINGS_H

#include "engine/gc/state.h"

int tt_gc_plan_listings(gc_state *s, tt_error *err);

#endif
