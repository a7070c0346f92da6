/*
 * backends/delta/delta_locator.c - the cheap checks `add` runs on a delta locator
 * (nothing contacted): its tt_kind's validate_locator.
 */
#include "backends/registry.h"

#include <string.h>

#include "backends/kit.h"

int tt_delta_validate_locator(const json_t *loc, const char *checkout, tt_error *err)
{
	return tt_kit_locator_version_at(loc, "delta", "table version", err);
}
