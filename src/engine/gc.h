/*
 * engine/gc.h - what gc.c shares with its store step (gc_stores.c, the
 * experimental `gc --delete-stores`).
 */
#ifndef TT_ENGINE_GC_H
#define TT_ENGINE_GC_H

#include <stdbool.h>

#include <jansson.h>

#include "core/ids.h"
#include "core/plan.h"
#include "engine/engine.h"

/* A tether.ws.<ds8>.<rest> name, taken apart. */
typedef struct tt_ref_parts {
	char ds[TT_DATASET_ID_LEN + 1];
	char *slug;       /* bookmark slug, NULL for a legacy per-workspace ref */
	char *legacy_ws;  /* 8-hex workspace of a legacy ref, else NULL */
} tt_ref_parts;

/* A sibling generation ".<n>" is parsed off and a legacy "<ws8>.<slug>"
 * recognized.  False for anything else (nothing to release then). */
bool tt_working_ref_parts(const char *ref, tt_ref_parts *out);
void tt_ref_parts_release(tt_ref_parts *p);

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

/* `drop`'s view of gc (tether-vcs's GcScope): judge only these bookmarks'
 * branches (the plan's context gains "scope"), walk history as if
 * excluded_commits were gone (their manifests join dropped), treat
 * gone_bookmarks as not live; a branch whose head a dropped manifest
 * pinned or recorded may be deleted ("head was committed by a dropped
 * commit"). */
typedef struct tt_gc_scope {
	const char *const *bookmarks;
	size_t nbookmarks;
	const char *const *excluded_commits;
	size_t nexcluded;
	const char *const *gone_bookmarks;
	size_t ngone;
	const tt_manifest *dropped;
	size_t ndropped;
} tt_gc_scope;

int tt_gc_plan_scoped(tt_repo *repo, const tt_gc_opts *o, const tt_gc_scope *scope, tt_plan **out, tt_error *err);
/* abandon's plan: the commits it just rewrote away are the user's
 * decision, so their pins are not kept as ones a clone made from here may
 * hold (gc_pins.c's "committed"). */
int tt_gc_plan_after_rewrite(tt_repo *repo, const tt_gc_opts *o, tt_plan **out, tt_error *err);
/* Apply a gc plan; the caller holds the checkout and repository locks. */
int tt_gc_apply(tt_repo *repo, const tt_plan *plan, const char *parent, json_t **out, tt_error *err);

#endif
