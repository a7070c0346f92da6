/*
 * backends/registry.h - the one table of kinds (backends/registry.c; the
 * type is core/kinds.h's) and building a backend of a kind.  Below it the
 * locator checks of the kinds, each beside its backend
 * (backends/<kind>/<kind>_locator.c), for the table: each is a tt_kind's
 * validate_locator, cheap, nothing contacted; TT_EBACKEND naming the kind
 * and the fix.
 */
#ifndef TT_BACKENDS_REGISTRY_H
#define TT_BACKENDS_REGISTRY_H

#include <jansson.h>

#include "backends/backend.h"
#include "core/kinds.h"
#include "util/error.h"

/* Every kind, sorted by name (as `tether backends` lists them). */
const tt_kind *tt_kinds(size_t *count);
const tt_kind *tt_kind_find(const char *name);
/* TT_ECONFIG "unknown backend kind: 'x' (known: ...)" when absent. */
int tt_kind_lookup(const tt_kind **out, const char *name, tt_error *err);

/* Build the backend for a kind: TT_ECAPABILITY naming the kind when this
 * tether does not include it yet. */
int tt_backend_new(tt_backend **out, const tt_kind *kind, const json_t *config,
		   const char *cache_dir, const char *checkout, tt_error *err);

int tt_delta_validate_locator(const json_t *loc, const char *checkout, tt_error *err);
int tt_dolt_validate_locator(const json_t *loc, const char *checkout, tt_error *err);
int tt_ducklake_validate_locator(const json_t *loc, const char *checkout, tt_error *err);
int tt_git_validate_locator(const json_t *loc, const char *checkout, tt_error *err);
int tt_icechunk_validate_locator(const json_t *loc, const char *checkout, tt_error *err);
int tt_neon_validate_locator(const json_t *loc, const char *checkout, tt_error *err);

#endif
