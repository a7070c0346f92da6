/*
 * engine/cmd/ops.h - the dataset commits the journal records that the VCS
 * no longer has.
 */
#ifndef TT_ENGINE_CMD_OPS_H
#define TT_ENGINE_CMD_OPS_H

#include <jansson.h>

#include "engine/kernel/handle.h"

struct tt_oplog;
struct tt_op_entry;
/* Dataset commits the journal records that the VCS no longer has:
 * [{op, commit, referenced: {key: bool}, message}]. */
int tt_engine_vcs_drift(tt_repo *repo, const struct tt_oplog *log, json_t **out, tt_error *err);

#endif
