/*
 * backends/registry.h - the locator checks of the kinds, each beside its
 * backend (backends/<kind>/<kind>_locator.c), for the one table of kinds
 * (backends/registry.c).  Each is a tt_kind's validate_locator: cheap,
 * nothing contacted; TT_EBACKEND naming the kind and the fix.
 */
#ifndef TT_BACKENDS_REGISTRY_H
#define TT_BACKENDS_REGISTRY_H

#include <jansson.h>

#include "core/kinds.h"
#include "util/error.h"

int tt_delta_validate_locator(const json_t *loc, const char *checkout, tt_error *err);
int tt_dolt_validate_locator(const json_t *loc, const char *checkout, tt_error *err);
int tt_ducklake_validate_locator(const json_t *loc, const char *checkout, tt_error *err);
int tt_git_validate_locator(const json_t *loc, const char *checkout, tt_error *err);
int tt_icechunk_validate_locator(const json_t *loc, const char *checkout, tt_error *err);
int tt_neon_validate_locator(const json_t *loc, const char *checkout, tt_error *err);

#endif
