/*
 * engine/gc/gc_stores.h - `gc --delete-stores` (experimental): the store
 * step of a gc plan and its application.
 */
#ifndef TT_ENGINE_GC_GC_STORES_H
#define TT_ENGINE_GC_GC_STORES_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/plan.h"
#include "engine/kernel/handle.h"

/* What the store step knows about the rest of the world (JSON objects
 * used as sets). */
typedef struct tt_gc_store_ctx {
	const json_t *in_use;      /* "kind|canon(identity)" of every store a manifest names:
				    * visible history, this and every live checkout's working tree */
	const json_t *keep_slugs;  /* slugs of live bookmarks: their branches are never stray */
	const json_t *known_slugs; /* keep_slugs plus every bookmark a live checkout's `new` made */
	const json_t *known_pins;  /* pins this clone created (tether-pinned.jsonl) */
	const json_t *referenced;  /* pin ids a manifest names or an unfinished operation makes */
} tt_gc_store_ctx;

/* Plan `delete-store` / `keep-store` / `forget-store` (and the unpins and
 * branch deletions inside such a store) for the stores this dataset
 * created - its created-store index plus `claimed` "KIND=LOCATOR" items -
 * then `forget-touched` and the release of this dataset's dead refs in
 * every other store this clone touched that no manifest names. */
int tt_gc_plan_stores(tt_repo *repo, tt_plan *plan, const tt_gc_store_ctx *ctx, bool prune_bookmarks,
		      bool force, const char *const *claimed, size_t nclaimed, tt_error *err);

/* Is op one of the store step's verbs? */
bool tt_gc_store_op(const char *op);
/* Apply one store verb into report (delete-store re-checks owner and
 * emptiness first).  A failure is left in *e for the caller's failures. */
void tt_gc_apply_store(tt_repo *repo, const tt_plan_action_view *a, json_t *report, const char *op_id,
		       tt_error *e);
/* What a dry run reports for one store verb. */
void tt_gc_preview_store(const tt_plan_action_view *a, json_t *report);

#endif
