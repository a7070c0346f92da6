/*
 * engine/kernel/preconditions.h - the drift contract: a plan's
 * preconditions checked against the checkout before it is applied.
 */
#ifndef TT_ENGINE_KERNEL_PRECONDITIONS_H
#define TT_ENGINE_KERNEL_PRECONDITIONS_H

#include "engine/kernel/handle.h"

struct tt_plan;
/* Check a plan's command, digest and every precondition against the
 * checkout; TT_ESTALEPLAN with the plan's words. */
int tt_engine_check_preconditions(tt_repo *repo, const struct tt_plan *plan, const char *command,
				  tt_error *err);

#endif
