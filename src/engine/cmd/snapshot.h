/*
 * engine/cmd/snapshot.h - fingerprinting objects (`snapshot`, `status`,
 * and every command that reads the current states).
 */
#ifndef TT_ENGINE_CMD_SNAPSHOT_H
#define TT_ENGINE_CMD_SNAPSHOT_H

#include <stdbool.h>
#include <jansson.h>

#include "engine/kernel/handle.h"

/*
 * Fingerprint concurrently and cache in workspace.toml.  keys: a JSON array
 * to limit to (NULL: all).  upstream: objects without a working ref are read
 * at their upstream head (on the trunk or no bookmark), else left at their
 * committed state.  *states: key -> state.  failures: when non-NULL, failed
 * objects are collected there ({key: {ref, error}}) instead of failing the
 * call.  An Observed immutable object that changed is TT_EIMMUTABLE.
 */
int tt_engine_snapshot(tt_repo *repo, const json_t *keys, bool upstream, json_t **states,
		       json_t **failures, tt_error *err);
/* TT_EIMMUTABLE for m, an immutable Observed object whose state changed:
 * tether-vcs's words, and the way to record the new state as the hint. */
int tt_engine_immutable_changed(const tt_manifest *m, tt_error *err);

#endif
