/*
 * engine/kernel/progress.h - progress of a fan-out, reported through the
 * callback of tether/progress.h.
 */
#ifndef TT_ENGINE_KERNEL_PROGRESS_H
#define TT_ENGINE_KERNEL_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/kernel/handle.h"

/* Progress of a fan-out (nothing without a callback):
 * begin a phase of total objects, count one done (any thread), end it. */
void tt_engine_progress_begin(tt_repo *repo, const char *phase, size_t total);
void tt_engine_progress_step(tt_repo *repo, const char *key);
void tt_engine_progress_end(tt_repo *repo);
/* Count the file kind's hashing into the phase's files and bytes (on), or
 * stop (off); nothing without a callback.  Backends built by then only. */
void tt_engine_progress_files(tt_repo *repo, bool on);
/* Release the progress state (tt_repo_free). */
void tt_engine_progress_free(tt_repo *repo);

#endif
