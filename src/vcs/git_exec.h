/*
 * vcs/git_exec.h - running git: tether's isolation (the environment every
 * call clears, the version check), its errors (lock-file hints).  Apart
 * from the VCS interface (vcs.h includes it), so a store backend that
 * drives git (backends/git) needs only this, not the VCS layer.
 */
#ifndef TT_VCS_GIT_EXEC_H
#define TT_VCS_GIT_EXEC_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"
#include "util/error.h"

/* Check once per process per executable that exe is git 2.38 or newer
 * (every tt_git_run does; a reader does before it starts git). */
int tt_git_version_once(const char *exe, tt_error *err);

/* The environment entries every VCS call clears (NULL-terminated; "X*" = prefix). */
extern const char *const tt_git_env_unset[];
/* The options every git call starts with (colour, signatures and path
 * quoting off; untracked files listed one by one), for a caller that runs
 * git itself (a time limit, an environment of its own). */
#define TT_GIT_NISO 8
extern const char *const tt_git_isolation[TT_GIT_NISO];
/* The most a git call's output may be. */
#define TT_GIT_OUTPUT_CAP ((size_t)512 << 20)

/* Run git with tether's isolation flags in dir; stdout into out (may be
 * NULL).  A non-zero exit is TT_EVCS naming the command and git's stderr,
 * unless allow_fail (then *status tells). */
int tt_git_run(const char *exe, const char *dir, const char *const *args, tt_buf *out,
	       bool allow_fail, int *status, tt_error *err);
/* When git's stderr (why) says a lock file of dir's repository exists,
 * hint at removing it: a git killed mid-write, or one failing on a full
 * disk, leaves it and it stops every later write there. */
/* A VCS command (tool: "git", "jj") that exited non-zero, as an error:
 * TT_EVCS, the command and what it said (stderr, else stdout).  Returns
 * TT_EVCS. */
struct tt_proc_result;
int tt_vcs_command_failed(const char *tool, const char *const *args, const struct tt_proc_result *r,
			  tt_error *err);
void tt_git_lock_hint(tt_error *err, const char *why, const char *dir);
/* TT_EVCS "<path> exists: ... remove it: rm <path>" when lock (a path in
 * dir's git directory, "index.lock") is there; 0 when not. */
int tt_git_no_lock_left(const char *exe, const char *dir, const char *lock, tt_error *err);
/* tt_git_run with input (len bytes) written to git's stdin. */
int tt_git_run_input(const char *exe, const char *dir, const char *const *args, const void *input,
		     size_t len, tt_buf *out, bool allow_fail, int *status, tt_error *err);
/* Whether git takes name as a branch name (check-ref-format --branch):
 * TT_ECONFIG "invalid bookmark name '<name>': git refuses it ..." when not. */
int tt_git_check_branch_name(const char *exe, const char *dir, const char *name, tt_error *err);

#endif
