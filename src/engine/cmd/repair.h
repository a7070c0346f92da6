/*
 * engine/cmd/repair.h - the engine's side of a planned command's public call.
 */
#ifndef TT_ENGINE_CMD_REPAIR_H
#define TT_ENGINE_CMD_REPAIR_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/kernel/handle.h"

/* The engine's side of the public tt_repo_repair (include/tether/tether.h):
 * each of its modes as the call that runs it (api/planned.c chooses). */
int tt_engine_repo_repair(tt_repo *repo, const char *const *selectors, size_t nsel, bool all_history,
		   bool dry_run, const char *from_plan, size_t from_len, char **plan_json, char **plan_text,
		   json_t **out, tt_error *err);

#endif
