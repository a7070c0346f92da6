/*
 * backends/file/watch.h - a directory's state from Watchman's list of what
 * changed, instead of a walk (opt-in: `[file] fsmonitor = "watchman"` in
 * .tether/secrets.toml, or TETHER_FSMONITOR=watchman).
 *
 * After a walk, the directory's rows are kept in
 * .tether/cache/file-watch/<blake2b of the path>.snap with the Watchman
 * clock taken just before the walk started.  A later refresh asks Watchman
 * (its JSON protocol on its unix socket) for every path changed under the
 * directory since that clock, looks at only those (the walk's rules:
 * symlinked directories not followed, FIFOs and devices skipped, the owner
 * marker skipped at the root) and streams the stored rows with them into
 * the digest.  Whenever the answer cannot be trusted (no stored clock, a
 * fresh Watchman instance or a recrawl, a clock of another watch, a
 * directory reached through a symlink or on a remote file system, a
 * directory Watchman ignores, a new directory, a symlink read through to a
 * file, Watchman missing, too old or not answering in time) it says why
 * through the trace hook and the caller walks: the state is always the
 * walk's.  The snapshot is rewritten only when the changes since its clock
 * grow past a threshold, so a refresh after a few changes reads nothing
 * but the stored rows' header and the changed files.
 */
#ifndef TT_BACKENDS_FILE_WATCH_H
#define TT_BACKENDS_FILE_WATCH_H

#include <stdbool.h>
#include <stdint.h>

#include "backends/file/file.h"

typedef struct tt_fwatch tt_fwatch;

/* cache_dir: the checkout's .tether/cache (NULL: nothing can be stored, so
 * every refresh walks). */
int tt_fwatch_new(tt_fwatch **out, const char *cache_dir, tt_error *err);
void tt_fwatch_free(tt_fwatch *w);

/* A directory's state as a walk gives it, without its rows. */
typedef struct tt_fwatch_state {
	uint64_t count, size;
	char digest[33];
} tt_fwatch_state;

/* What a walk stores its rows with: the clock taken before it. */
typedef struct tt_fwatch_pending tt_fwatch_pending;

/*
 * The state of directory root (an absolute path) from Watchman: 1 with *st
 * filled; 0 when the caller must walk (the reason went to the trace), and
 * then hand the walk's tree and *pend to tt_fwatch_after_walk (*pend NULL:
 * nothing to store it with).  <0: out of memory or an error of the walk's
 * kind (a changed file that cannot be read).  Thread-safe: calls on one w
 * take turns talking to Watchman; walks in between run side by side.
 */
int tt_fwatch_state_of(tt_fwatch *w, tt_fhash *h, const char *root, tt_fwatch_state *st,
		       tt_fwatch_pending **pend, tt_error *err);
/* Store tree (the walk that followed a 0) with pend's clock, and free
 * pend (NULL: nothing).  Best effort: nothing is an error. */
void tt_fwatch_after_walk(tt_fwatch *w, tt_fwatch_pending *pend, const tt_file_tree *tree);
/* Free pend without storing anything (the walk failed). */
void tt_fwatch_pending_free(tt_fwatch_pending *pend);

#endif
