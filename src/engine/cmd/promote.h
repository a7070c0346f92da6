/*
 * engine/cmd/promote.h - `promote` as a plan and its application.
 */
#ifndef TT_ENGINE_CMD_PROMOTE_H
#define TT_ENGINE_CMD_PROMOTE_H

#include <stdbool.h>
#include <jansson.h>

#include "engine/kernel/handle.h"

struct tt_plan;
/* promote's two halves. */
int tt_engine_plan_promote(tt_repo *repo, const tt_promote_opts *o, struct tt_plan **out, tt_error *err);
int tt_engine_apply_promote(tt_repo *repo, const struct tt_plan *plan, bool verify, json_t **out,
			    tt_error *err);

/* The engine's side of the public tt_repo_promote (include/tether/tether.h):
 * each of its modes as the call that runs it (api/planned.c chooses). */
int tt_engine_repo_promote(tt_repo *repo, const tt_promote_opts *o, const char *from_plan, size_t from_len,
		    char **plan_json, char **plan_text, json_t **out, tt_error *err);

#endif
