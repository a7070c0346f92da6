/*
 * engine/api/binding.h - the engine's halves of what a language binding
 * reaches through the planned calls: gc's scoped plan and import's plan
 * and apply.
 */
#ifndef TT_ENGINE_API_BINDING_H
#define TT_ENGINE_API_BINDING_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "engine/kernel/handle.h"

/* The engine's side of the public tt_repo_gc / import (include/tether/tether.h):
 * each of its modes as the call that runs it (api/planned.c chooses). */
int tt_engine_repo_plan_gc_scoped(tt_repo *repo, const tt_gc_opts *o, const char *const *bookmarks, size_t nbookmarks,
			   const char *const *excluded, size_t nexcluded, const char *const *gone, size_t ngone,
			   char **plan_json, char **plan_text, tt_error *err);
int tt_engine_repo_plan_import(tt_repo *repo, const json_t *rows, bool sync, char **plan_json, char **plan_text,
			tt_error *err);
int tt_engine_repo_apply_import(tt_repo *repo, const char *plan_json, size_t len, json_t **out, tt_error *err);

#endif
