/*
 * engine/cmd/promote_check.h - `promote --check`: the check between a promote's
 * plan and its apply (see promote_check.c).
 */
#ifndef TT_ENGINE_PROMOTE_CHECK_H
#define TT_ENGINE_PROMOTE_CHECK_H

#include <tether/tether.h>

#include "core/plan.h"
#include "engine/kernel/handle.h"

/* Run o->check (when set) against what plan lands; refuse (an error,
 * nothing moved) unless it exits 0, else record it in the plan's context
 * as "check": {command, exit_status, rev, bookmark, heads, bases}. */
int tt_engine_promote_check(tt_repo *repo, const tt_promote_opts *o, tt_plan *plan, tt_error *err);

/* cmd with the password of every scheme://user:password@ masked (caller
 * frees; NULL without memory). */
char *tt_check_command_shown(const char *cmd);

#endif
