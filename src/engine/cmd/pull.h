/*
 * engine/cmd/pull.h - the engine's side of pull's public calls.
 */
#ifndef TT_ENGINE_CMD_PULL_H
#define TT_ENGINE_CMD_PULL_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/kernel/handle.h"

/* The engine's side of the public tt_repo_pull
 * (include/tether/tether.h; api/calls.c unpacks its options). */
int tt_engine_repo_pull(tt_repo *repo, const char *bookmark, const char *const *selectors, size_t nsel,
		 const char *message, json_t **out, tt_error *err);

#endif
