/*
 * engine/cmd/drop.h - what an interrupted `drop` got done, as `undo` and
 * `repair` describe it.
 */
#ifndef TT_ENGINE_CMD_DROP_H
#define TT_ENGINE_CMD_DROP_H

#include "engine/kernel/handle.h"

struct tt_op_entry;
/* What a drop the journal entry e records as never finished got done, and
 * which command finishes it: "<id> (drop <bookmark>), which was
 * interrupted <how far>: <command>. A drop is finished, not undone -- ...",
 * as `undo` refuses it and `repair` notes it.  Caller frees; NULL on OOM. */
char *tt_engine_interrupted_drop(tt_repo *repo, const struct tt_op_entry *e);

/* The engine's side of the public tt_repo_drop (include/tether/tether.h):
 * each of its modes as the call that runs it (api/planned.c chooses). */
int tt_engine_repo_drop(tt_repo *repo, const tt_drop_opts *opts, const char *from_plan, size_t from_len,
		 char **plan_json, char **plan_text, json_t **out, tt_error *err);

#endif
