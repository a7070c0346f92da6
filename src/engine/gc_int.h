/*
 * engine/gc_int.h - what the files of gc share among themselves (gc.c the
 * entry points, gc_plan.c, gc_workspaces.c, gc_pins.c, gc_prune.c,
 * gc_listings.c, gc_apply.c); never included outside them.
 */
#ifndef TT_ENGINE_GC_INT_H
#define TT_ENGINE_GC_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "backends/backend.h"
#include "core/index.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "core/workspace.h"
#include "engine/engine.h"
#include "engine/checkouts.h"
#include "engine/gc.h"

/* The journals of every live checkout whose own file it is. */
typedef struct journals {
	tt_oplog *logs;
	size_t n;
} journals;

/* The history walk: each distinct manifest text parsed once. */
typedef struct gc_walk {
	tt_repo *repo;
	const char *reldir;
	tt_manifest_memo memo; /* history manifests, locators made absolute */
	size_t aside;        /* capacity of the per-manifest arrays below */
	char **ns;           /* per hist index: namespace key (pinned ones) */
	bool *seen;          /* per hist index: processed */
	size_t *order;       /* all_manifests: hist indices in first-seen order */
	size_t norder;
	size_t *pinned_order; /* history_manifests: first of each signature */
	size_t npinned;
	json_t *sigs;        /* signature set */
	json_t *referenced;  /* pin id set */
	json_t *skipped;     /* kind -> count */
	json_t *excluded;    /* drop's preview: commits walked as if gone (set), or NULL */
	tt_manifest_memo dropped; /* their manifests */
} gc_walk;

/* Everything one plan needs to keep alive while it is built. */
typedef struct gc_state {
	tt_repo *repo;
	const tt_gc_opts *o;
	tt_plan *plan;
	tt_checkouts co;
	journals journal;
	tt_manifest_set *others;      /* other live checkouts' working trees */
	size_t nothers;
	const tt_manifest **working;  /* available working-tree manifests */
	size_t nworking;
	gc_walk w;
	json_t *inflight;
	json_t *known;
	bool remotes_read, unfetched_read;
	json_t *published;            /* pin ids commits that left this clone name (NULL: not read) */
	json_t *committed;            /* known pin ids a commit of this clone named (the index's mark) */
	json_t *held;                 /* pin ids commits this repository held once name (NULL: not read) */
	char *held_unread;            /* why the reflogs could not be read (NULL: they were) */
	char *remotes;                /* "'origin', 'peer'" (NULL: none) */
	char *unfetched;              /* why a remote may name pins unseen here (NULL: none) */
	const tt_gc_scope *scope;     /* drop's, or NULL */
	bool after_rewrite;           /* abandon's: tt_gc_plan_after_rewrite */
} gc_state;


/* gc_plan.c */
int tt_gc_check_stores(const tt_gc_opts *o, tt_error *err);
bool tt_gc_kind_gone(const char *kind);
bool tt_gc_list_has_value(const json_t *list, const json_t *v);
int tt_gc_map_append(json_t *obj, const char *k, json_t *v);
int tt_gc_object_error(tt_error *err, const char *key, const char *kind);
int tt_gc_namespace_key(tt_backend *b, const char *kind, const json_t *loc, char **out, tt_error *err);
int tt_gc_note(tt_plan *plan, char *text, tt_error *err);
char *tt_gc_pin_of_listed(const char *id);
int tt_gc_plan_gc(tt_repo *repo, const tt_gc_opts *o, tt_plan **out, tt_error *err);
int tt_gc_remote_unfetched(gc_state *s, const char **out, tt_error *err);
int tt_gc_set_add(json_t *set, const char *k);
bool tt_gc_set_has(const json_t *set, const char *k);
int tt_gc_sharing_remotes(gc_state *s, const char **out, tt_error *err);
int tt_gc_sort_strings(json_t *arr);

/* gc_workspaces.c */
int tt_gc_inflight_pins(const journals *j, json_t *ids, tt_error *err);
void tt_gc_journals_release(journals *j);
json_t *tt_gc_known_pins(tt_repo *repo, json_t **committed);
/* The journals of the live checkouts whose ops.jsonl is their own. */
int tt_gc_read_journals(tt_repo *repo, const tt_checkouts *co, journals *out, tt_error *err);
int tt_gc_seed_pinned(tt_repo *repo, const journals *j, tt_error *err);

/* gc_pins.c */
int tt_gc_plan_forget_refs(gc_state *s, tt_error *err);
int tt_gc_plan_unpins(gc_state *s, tt_error *err);

/* gc_prune.c */
const tt_manifest *tt_gc_manifest_at(const gc_state *s, size_t i);
size_t tt_gc_manifest_count(const gc_state *s);
int tt_gc_manifest_identity(tt_repo *repo, const tt_manifest *m, tt_backend **b,
			     json_t **identity, tt_error *err);
int tt_gc_plan_prune(gc_state *s, tt_error *err);

/* gc_listings.c */
int tt_gc_plan_listings(gc_state *s, tt_error *err);

/* gc_apply.c */
int tt_gc_apply_gc(tt_repo *repo, const tt_plan *plan, const char *parent, json_t **out, tt_error *err);
json_t *tt_gc_dry_report(const tt_plan *plan);

#endif
