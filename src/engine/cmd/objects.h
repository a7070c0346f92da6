/*
 * engine/cmd/objects.h - the engine's side of objects's public calls.
 */
#ifndef TT_ENGINE_CMD_OBJECTS_H
#define TT_ENGINE_CMD_OBJECTS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/kernel/handle.h"

/* The engine's side of the public tt_repo_set_policy
 * (include/tether/tether.h; api/calls.c unpacks its options). */
int tt_engine_repo_set_policy(tt_repo *repo, const char *const *keys, size_t nkeys, const char *file,
		       const char *pin, json_t **out, tt_error *err);

#endif
