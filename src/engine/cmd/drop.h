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

#endif
