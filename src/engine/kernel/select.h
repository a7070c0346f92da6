/*
 * engine/kernel/select.h - the objects a command's selectors name.
 */
#ifndef TT_ENGINE_KERNEL_SELECT_H
#define TT_ENGINE_KERNEL_SELECT_H

#include <jansson.h>

#include "engine/kernel/handle.h"

/* Keys the selectors name (exact keys, or prefixes ending in '/'), sorted;
 * no selectors: every key.  TT_ECONFIG naming each selector that matches
 * nothing. */
int tt_engine_select(tt_repo *repo, const char *const *selectors, size_t n, json_t **out,
		     tt_error *err);

#endif
