/*
 * engine/kernel/register.h - registering an object: its manifest written
 * and its key started in the workspace.
 */
#ifndef TT_ENGINE_KERNEL_REGISTER_H
#define TT_ENGINE_KERNEL_REGISTER_H

#include <stdbool.h>
#include <jansson.h>

#include "engine/kernel/handle.h"

/* Write a new object's manifest (origin "created" when created) and start
 * its key without a working ref. */
int tt_engine_register(tt_repo *repo, const char *key, const char *kind, json_t *loc, tt_policy policy,
		       bool created, tt_error *err);

#endif
