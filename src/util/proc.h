/*
 * util/proc.h - the one way tether runs another program.
 *
 * An argv vector, never a shell string.  The child's environment is the
 * parent's minus everything `env_unset` names (exact names, or prefixes
 * ending in '*': "GIT_*") plus `env_set` ("NAME=value"), so a caller can
 * scrub what a hostile environment could use to redirect the child.  stdout
 * and stderr are captured into buffers with a size cap; exceeding it fails
 * the run (TT_ELIMIT) rather than truncating silently.
 *
 * A bare argv[0] is looked up in the parent's PATH (not an env_set PATH);
 * a missing program is TT_ENOTFOUND naming it, as is a missing cwd.  The
 * child gets pipes for its standard streams and no other descriptor, an
 * empty signal mask, and SIGPIPE/SIGXFSZ at their defaults.  Whenever a call
 * fails after the child started (a cap, a timeout) the child has been
 * killed with SIGKILL and reaped.  Safe to call from several threads; one
 * tt_proc handle belongs to one thread at a time.  The process's signal
 * dispositions are never changed (SIGPIPE is blocked in the writing thread
 * only for the duration of a write).
 */
#ifndef TT_UTIL_PROC_H
#define TT_UTIL_PROC_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/buf.h"
#include "util/error.h"

#define TT_PROC_DEFAULT_CAP ((size_t)256 << 20)  /* 256 MiB per stream */

typedef struct tt_proc_opts {
	const char *const *argv;       /* argv[0] is a path or a name looked up in PATH */
	const char *cwd;               /* NULL: inherit */
	const char *const *env_set;    /* NULL-terminated "NAME=value", or NULL */
	const char *const *env_unset;  /* NULL-terminated names / "PREFIX*", or NULL */
	const void *stdin_data;        /* tt_proc_run: written to stdin, then closed */
	size_t stdin_len;
	size_t max_out;                /* 0: TT_PROC_DEFAULT_CAP */
	size_t max_err;                /* 0: TT_PROC_DEFAULT_CAP */
	int timeout_ms;                /* <= 0: none; on expiry the child is killed.
	                                  tt_proc_run: for the whole run; tt_proc_*:
	                                  for each call, restarted whenever bytes move */
	bool merge_stderr;             /* the child's stderr goes where its stdout goes */
	bool own_group;                /* the child leads a new process group, and
	                                  killing it kills the group */
} tt_proc_opts;

typedef struct tt_proc_result {
	int status;        /* exit code; 128+N when killed by signal N */
	bool signaled;
	bool timed_out;
	tt_buf out;
	tt_buf err;
} tt_proc_result;

/* r must be initialised; tt_proc_run() releases what it held first. */
void tt_proc_result_init(tt_proc_result *r);
void tt_proc_result_release(tt_proc_result *r);

/*
 * Run to completion.  Returns 0 when the program ran (whatever its exit
 * status: check r->status), or an error when it could not be started, a
 * stream passed its cap (TT_ELIMIT, the message names stdout or stderr), or
 * the timeout hit (TT_ERROR with r->timed_out, r->status 137).  A child that
 * exits without reading all of stdin_data is not an error.
 */
int tt_proc_run(const tt_proc_opts *opts, tt_proc_result *r, tt_error *err);

/*
 * Run to completion, handing the output to sink (may be NULL) as it comes:
 * stdout, and stderr too with merge_stderr (else stderr is discarded).
 * stop (may be NULL) is asked about every 100 ms: once it says yes the
 * child (its group, with own_group) gets SIGTERM, and SIGKILL 2 s later;
 * *stopped (may be NULL) says so.  A child that exits while something it
 * started still holds the pipe is not waited for past that.  Returns 0
 * when the program ran, *status as in tt_proc_result; nothing is capped
 * (the sink keeps what it wants).
 */
typedef void (*tt_proc_sink)(void *ctx, const char *data, size_t len);
int tt_proc_stream(const tt_proc_opts *opts, tt_proc_sink sink, void *sink_ctx, bool (*stop)(void *ctx),
		   void *stop_ctx, int *status, bool *stopped, tt_error *err);

/*
 * A long-lived child with pipes (e.g. `git cat-file --batch`): write
 * requests to its stdin and read replies from its stdout.  stderr is
 * captured (capped) and readable after tt_proc_finish().  Every call drains
 * stdout (into an internal buffer capped by max_out) and stderr while it
 * waits, so a large write never deadlocks against unread output.  After a
 * cap or timeout failure the child is dead and every later call returns the
 * same error; tt_proc_finish() still has to be called to free p.
 */
typedef struct tt_proc tt_proc;
int tt_proc_spawn(tt_proc **out, const tt_proc_opts *opts, tt_error *err);
int tt_proc_write(tt_proc *p, const void *data, size_t len, tt_error *err);
/* Read up to and including '\n' (the newline is stripped) into line,
 * replacing its content; a last line without '\n' is returned as it is,
 * then 1 at EOF (line empty). */
int tt_proc_read_line(tt_proc *p, tt_buf *line, tt_error *err);
/* Read exactly len bytes, appended to into; TT_EIO if output ends first. */
int tt_proc_read_exact(tt_proc *p, tt_buf *into, size_t len, tt_error *err);
/* Close stdin, discard unread stdout, wait, append stderr to errout (may be
 * NULL); *status (may be NULL) as in tt_proc_result.  Returns an earlier
 * sticky failure again.  Frees p; NULL p is a no-op. */
int tt_proc_finish(tt_proc *p, int *status, tt_buf *errout, tt_error *err);

/* Locate a program in PATH (or check a path containing '/'): an executable
 * regular file.  Caller frees; NULL if not found. */
char *tt_proc_which(const char *name);

#endif
