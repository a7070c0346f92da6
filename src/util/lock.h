/*
 * util/lock.h - advisory locks between tether processes.
 *
 * flock(2) on a lock file, exactly as tether-vcs takes it, so the two
 * implementations exclude each other: `.tether/lock` (one writer per
 * checkout, wait 30 s) and `tether.lock` in the VCS's shared directory (one
 * committer/collector per repository, wait 60 s).  flock locks belong to
 * the open file, so two threads of one process exclude each other too.
 * A lock file left behind by a crash locks nothing.
 */
#ifndef TT_UTIL_LOCK_H
#define TT_UTIL_LOCK_H

#include "util/error.h"

#define TT_CHECKOUT_LOCK_TIMEOUT_MS 30000
#define TT_REPO_LOCK_TIMEOUT_MS 60000

typedef struct tt_lock {
	int fd;       /* -1 when not held */
	char *path;
} tt_lock;
#define TT_LOCK_INIT { -1, NULL }

/*
 * Wait up to timeout_ms for an exclusive lock on path (created if missing,
 * with its parent directories).  On timeout: TT_ELOCKED with a message that
 * names the lock ("another tether command is writing in this checkout
 * (<path> is locked); wait for it to finish") - `what` describes the holder
 * in that message (NULL: "running").  timeout_ms <= 0 tries once.  The lock
 * file is opened O_CLOEXEC, so children never hold it.  TT_EUSAGE when l
 * already holds a lock.
 */
int tt_lock_acquire(tt_lock *l, const char *path, const char *what, int timeout_ms, tt_error *err);
void tt_lock_release(tt_lock *l);  /* NULL-safe, idempotent */

#endif
