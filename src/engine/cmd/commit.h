/*
 * engine/cmd/commit.h - `commit` as a plan and its application (a `pull`
 * plans through it too).
 */
#ifndef TT_ENGINE_CMD_COMMIT_H
#define TT_ENGINE_CMD_COMMIT_H

#include <stdbool.h>
#include <jansson.h>

#include "engine/kernel/handle.h"

struct tt_plan;
/* commit's two halves. */
/* fetched: states `pull` read (used instead of a snapshot; the plan is a
 * pull plan); NULL for a commit. */
int tt_engine_plan_commit(tt_repo *repo, const char *message, const json_t *keys, bool strict,
			  bool force, bool do_snapshot, const json_t *fetched, struct tt_plan **out,
			  tt_error *err);
int tt_engine_apply_commit(tt_repo *repo, const struct tt_plan *plan, bool vcs, bool verify,
			   json_t **out, tt_error *err);

/* The engine's side of the public tt_repo_commit (include/tether/tether.h):
 * each of its modes as the call that runs it (api/planned.c chooses). */
int tt_engine_repo_commit(tt_repo *repo, const tt_commit_opts *o, json_t **out, tt_error *err);
int tt_engine_repo_plan_commit(tt_repo *repo, const tt_commit_opts *o, char **json_text, char **text,
			tt_error *err);
int tt_engine_repo_apply_commit_plan(tt_repo *repo, const char *plan_text, size_t len, const char *message,
			      const char *const *keys, size_t nkeys, bool no_vcs, json_t **out,
			      tt_error *err);

#endif
