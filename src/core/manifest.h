/*
 * core/manifest.h - one object's committed record, .tether/objects/<key>.toml.
 *
 *   key = "zarr/imaging"
 *   kind = "icechunk"
 *   recoverable = true
 *   origin = "created"          # only for stores `add --create` made
 *   captured_at = "2026-..."    # once committed
 *   [locator] ...               # where the object is (nulls dropped)
 *   [policy] file, pin
 *   [state] ...                 # the full committed state, once committed
 *   [pin] id, ref               # absent for recorded-only states
 *
 * Every read validates the key (a clone brings manifests that never went
 * through `add`) and that the file's path matches the key it declares.
 */
#ifndef TT_CORE_MANIFEST_H
#define TT_CORE_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/config.h"
#include "util/buf.h"
#include "util/error.h"

typedef struct tt_manifest {
	char *key;
	char *kind;
	json_t *locator;      /* object; never NULL */
	tt_policy policy;
	json_t *state;        /* object, or NULL before the first commit */
	char *pin_id;         /* NULL: no pin */
	char *pin_ref;
	char *captured_at;    /* NULL until committed */
	bool recoverable;
	bool created;         /* origin = "created" */
} tt_manifest;

/* A new, uncommitted manifest (copies key/kind, takes a reference to locator). */
int tt_manifest_new(tt_manifest *m, const char *key, const char *kind, json_t *locator,
		    tt_policy policy, tt_error *err);
void tt_manifest_release(tt_manifest *m);
/* Deep copy. */
int tt_manifest_copy(tt_manifest *dst, const tt_manifest *src, tt_error *err);

/* Parse a manifest file's text; filename is used in error positions. */
int tt_manifest_parse(tt_manifest *m, const char *text, size_t len, const char *filename,
		      tt_error *err);
/* The file text, as tether-vcs writes it. */
int tt_manifest_render(tt_buf *out, const tt_manifest *m, tt_error *err);
/* canon({key, kind, locator, policy, state, pin, recoverable}) - the input
 * of the manifest hash. */
int tt_manifest_canonical(tt_buf *out, const tt_manifest *m, tt_error *err);

/* All manifests of a working tree, sorted by key. */
typedef struct tt_manifest_set {
	tt_manifest *items;
	size_t n, alloc;
} tt_manifest_set;

int tt_manifests_load(tt_manifest_set *set, const char *root, tt_error *err);
/* Let this thread's loads accept a manifest whose path is not its key's
 * (for `upgrade` only, which moves it). */
void tt_manifests_accept_misplaced(bool yes);
void tt_manifests_release(tt_manifest_set *set);
tt_manifest *tt_manifests_find(const tt_manifest_set *set, const char *key);
/* tether-vcs's object order (it loads its objects in it, and tables it
 * fills by walking them follow it): the manifests' paths
 * ("<key>.toml") compared segment by segment, so "a/x" precedes "a.y" and
 * "a.b" precedes "a". */
int tt_key_path_order(const char *a, const char *b);
/* 64 hex digits; the status header shows the first 12. */
int tt_manifests_hash(char hex[65], const tt_manifest_set *set, tt_error *err);

/* Write (atomically) / delete one manifest under root; delete prunes empty
 * parent directories up to .tether/objects. */
int tt_manifest_save(const tt_manifest *m, const char *root, tt_error *err);
int tt_manifest_delete(const char *root, const char *key, tt_error *err);
/* The file's current text, or NULL when absent (*out). */
int tt_manifest_read_text(char **out, const char *root, const char *key, tt_error *err);

#endif
