/*
 * engine/kernel/state.h - helpers over recorded states the commands share:
 * tether-vcs's short form of a state, and the native branch space (scope)
 * whose objects share a pin and a working branch.
 */
#ifndef TT_ENGINE_KERNEL_STATE_H
#define TT_ENGINE_KERNEL_STATE_H

#include <jansson.h>

#include "util/buf.h"
#include "engine/kernel/handle.h"

/* The native resource that owns m's branches, as a string (the backend's
 * branch_scope, else its canonical identity). */
int tt_engine_branch_scope(tt_repo *repo, const tt_manifest *m, char **out, tt_error *err);

/* Refuse a `commit` or `pull` (verb) selection naming only some of the
 * objects of one native branch space (one kind and branch scope): they
 * share a pin and a working branch.  TT_ECONFIG naming the missing keys
 * and the command that takes them all. */
int tt_engine_require_whole_scopes(tt_repo *repo, const json_t *selected, const char *verb,
				   tt_error *err);

/* tether-vcs's short_state: "k=v k=v", values cut at 16 characters. */
int tt_short_state(tt_buf *out, const json_t *state);

#endif
