/*
 * engine/cmd/history.h - the engine's side of history's public calls.
 */
#ifndef TT_ENGINE_CMD_HISTORY_H
#define TT_ENGINE_CMD_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/kernel/handle.h"

/* The engine's side of the public tt_repo_verify, tt_repo_log
 * (include/tether/tether.h; api/calls.c unpacks its options). */
int tt_engine_repo_verify(tt_repo *repo, const char *const *selectors, size_t n, const char *rev,
		   bool deep, bool all_history, json_t **out, tt_error *err);
int tt_engine_repo_log(tt_repo *repo, const char *key, const char *kind, const json_t *locator,
		const char *ref, size_t limit, json_t **out, tt_error *err);

#endif
