/*
 * engine/gc/state.h - what one gc plan keeps alive while it is built, and
 * the helpers every gc job shares.
 */
#ifndef TT_ENGINE_GC_STATE_H
#define TT_ENGINE_GC_STATE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "backends/backend.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/kernel/checkouts.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/handle.h"

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

bool tt_gc_kind_gone(const char *kind);
bool tt_gc_list_has_value(const json_t *list, const json_t *v);
int tt_gc_map_append(json_t *obj, const char *k, json_t *v);
int tt_gc_object_error(tt_error *err, const char *key, const char *kind);
int tt_gc_namespace_key(tt_backend *b, const char *kind, const json_t *loc, char **out, tt_error *err);
int tt_gc_note(tt_plan *plan, char *text, tt_error *err);
char *tt_gc_pin_of_listed(const char *id);
int tt_gc_remote_unfetched(gc_state *s, const char **out, tt_error *err);
int tt_gc_set_add(json_t *set, const char *k);
bool tt_gc_set_has(const json_t *set, const char *k);
int tt_gc_sharing_remotes(gc_state *s, const char **out, tt_error *err);
int tt_gc_sort_strings(json_t *arr);
const tt_manifest *tt_gc_manifest_at(const gc_state *s, size_t i);
size_t tt_gc_manifest_count(const gc_state *s);
int tt_gc_manifest_identity(tt_repo *repo, const tt_manifest *m, tt_backend **b,
			     json_t **identity, tt_error *err);

#endif
