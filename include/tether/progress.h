/*
 * tether/progress.h - hearing how long work is going: a callback the
 * library calls while it fingerprints or fans out across objects, so a
 * program can show progress as `tether` does on a terminal.
 */
#ifndef TETHER_PROGRESS_H
#define TETHER_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

#include <tether/error.h>

#ifdef __cplusplus
extern "C" {
#endif

TT_API_BEGIN

typedef struct tt_repo tt_repo;

typedef struct tt_progress {
	const char *phase;    /* "fingerprint", "verify", ... */
	const char *key;      /* the object just finished, or NULL (start) */
	size_t done, total;   /* objects of this phase */
	double elapsed;       /* seconds since the phase started */
	int finished;         /* 1 on the phase's last call (done == total) */
	/* What the phase reads, where a kind counts it (file fingerprints:
	 * the files and bytes it has to hash, cache hits left out); all 0
	 * otherwise.  These move on calls of their own (key NULL, done as
	 * before); the totals grow as each object's hashing starts. */
	uint64_t files_done, files_total;
	uint64_t bytes_done, bytes_total;
} tt_progress;

/*
 * Called from whichever thread finished the work (calls are serialised:
 * never two at once); it must not call back into the repo.  Each phase
 * starts with done == 0 and ends with finished == 1.  Byte counts come
 * once per file hashed: a display throttles itself.
 */
typedef void (*tt_progress_fn)(const tt_progress *p, void *ctx);

/* Install (fn NULL: remove) the repo's progress callback. */
void tt_repo_set_progress(tt_repo *repo, tt_progress_fn fn, void *ctx);

/*
 * Ask the operation running on repo to stop: from any thread, from the
 * progress callback, or from a signal handler (it only sets a flag).  The
 * read-only phases - "fingerprint" (snapshot, status, commit and pull
 * fingerprint first) and "verify" - start no object after the request and
 * let the ones under way finish; the phase then fails with TT_ECANCELED,
 * saying how many objects were done, and the operation writes nothing past
 * that point (a commit pins and writes nothing, a snapshot caches nothing).
 * Phases that change stores (fork, promote, merge) run to their end so no
 * store is left half done.  The request holds until a read-only phase
 * stops for it: the one running, or else the next one.
 */
void tt_repo_cancel(tt_repo *repo);

/*
 * Lines for a trace (`tether` prints them to stderr under TETHER_TRACE=1):
 * today, for each local directory refreshed with the file watcher on, what
 * Watchman answered or why the directory was walked instead.  Process-wide;
 * called from any thread (serialise in fn if needed); fn NULL turns it off.
 */
typedef void (*tt_trace_fn)(void *ctx, const char *line);
void tt_set_trace(tt_trace_fn fn, void *ctx);

TT_API_END

#ifdef __cplusplus
}
#endif
#endif
