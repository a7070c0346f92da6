/*
 * vcs/git_exec.c - running git (see git_exec.h): the isolation every call
 * gets, the version check, and what a failed call says.
 */
#include "vcs/git_exec.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fs.h"
#include "util/mem.h"
#include "util/proc.h"

static void trim_newlines(tt_buf *b)
{
	while (b->len && (b->ptr[b->len - 1] == '\n' || b->ptr[b->len - 1] == '\r'))
		tt_buf_truncate(b, b->len - 1);
}

const char *const tt_git_env_unset[] = {
	"GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_CONFIG", "GIT_CONFIG_COUNT",
	"GIT_CONFIG_PARAMETERS", "GIT_DIR", "GIT_GRAFT_FILE", "GIT_IMPLICIT_WORK_TREE",
	"GIT_INDEX_FILE", "GIT_NO_REPLACE_OBJECTS", "GIT_OBJECT_DIRECTORY", "GIT_PREFIX",
	"GIT_REPLACE_REF_BASE", "GIT_SHALLOW_FILE", "GIT_WORK_TREE", "GIT_CONFIG_KEY_*",
	"GIT_CONFIG_VALUE_*", "GIT_NAMESPACE", NULL,
};

const char *const tt_git_isolation[TT_GIT_NISO] = {
	"-c", "color.ui=never", "-c", "log.showSignature=false", "-c", "core.quotePath=false",
	"-c", "status.showUntrackedFiles=all",
};

static char *lock_in(const char *why)
{
	const char *start = why ? strstr(why, "Unable to create '") : NULL;
	const char *end = start ? strstr(start, ".lock': File exists") : NULL;
	if (!end)
		return NULL;
	start += strlen("Unable to create '");
	return tt_strndup(start, (size_t)(end - start) + strlen(".lock"));
}

void tt_git_lock_hint(tt_error *err, const char *why, const char *dir)
{
	char *lock = lock_in(why);
	if (lock && tt_exists(lock))
		tt_error_hint(err, "%s exists: another git process is running in %s, or one crashed; if none "
			      "is running, remove it: rm %s", lock, dir, lock);
	free(lock);
}

int tt_git_no_lock_left(const char *exe, const char *dir, const char *lock, tt_error *err)
{
	const char *const args[] = { "rev-parse", "--git-path", lock, NULL };
	tt_buf rel = TT_BUF_INIT;
	char *path = NULL;
	struct stat st;
	int rc = tt_git_run(exe, dir, args, &rel, false, NULL, err);
	if (rc < 0)
		goto done;
	trim_newlines(&rel);
	if (!rel.ptr || !rel.ptr[0])
		goto done;
	if (!(path = rel.ptr[0] == '/' ? tt_strdup(rel.ptr) : tt_path_join(dir, rel.ptr)))
		rc = tt_error_oom(err);
	else if (lstat(path, &st) == 0)
		rc = tt_error_set(err, TT_EVCS, "%s exists: another git process is running in %s, or one "
				  "crashed; if none is running, remove it: rm %s", path, dir, path);
done:
	tt_buf_release(&rel);
	free(path);
	return rc;
}

static int run_input(const char *exe, const char *dir, const char *const *args, const void *input,
		     size_t len, tt_buf *out, bool allow_fail, int *status, tt_error *err);
static int check_version(const char *exe, tt_error *err);

/* The executables whose version was checked (the read paths run no git,
 * so the check waits for the first git this process starts). */
static pthread_mutex_t version_lock = PTHREAD_MUTEX_INITIALIZER;
static char *version_checked[8];

int tt_git_version_once(const char *exe, tt_error *err)
{
	int rc = 0;
	pthread_mutex_lock(&version_lock);
	size_t i = 0;
	while (i < 8 && version_checked[i] && strcmp(version_checked[i], exe) != 0)
		i++;
	if (i == 8 || !version_checked[i]) {
		rc = check_version(exe, err);
		if (rc == 0 && i < 8)
			version_checked[i] = tt_strdup(exe);
	}
	pthread_mutex_unlock(&version_lock);
	return rc;
}

int tt_vcs_command_failed(const char *tool, const char *const *args, const tt_proc_result *r, tt_error *err)
{
	tt_buf cmd = TT_BUF_INIT;
	for (size_t i = 0; args[i]; i++)
		tt_buf_printf(&cmd, "%s%s", i ? " " : "", args[i]);
	/* what it said on stderr, else on stdout (either may be empty) */
	const char *why = r->err.len ? r->err.ptr : r->out.len ? r->out.ptr : "";
	size_t wl = strlen(why);
	while (wl && (why[wl - 1] == '\n' || why[wl - 1] == ' '))
		wl--;
	int rc = tt_error_set(err, TT_EVCS, "command failed (%s %s): %.*s", tool, cmd.ptr ? cmd.ptr : "", (int)wl,
			      why);
	tt_buf_release(&cmd);
	return rc;
}

int tt_git_run_input(const char *exe, const char *dir, const char *const *args, const void *input,
		     size_t len, tt_buf *out, bool allow_fail, int *status, tt_error *err)
{
	int rc = tt_git_version_once(exe, err);
	return rc < 0 ? rc : run_input(exe, dir, args, input, len, out, allow_fail, status, err);
}

static int run_input(const char *exe, const char *dir, const char *const *args, const void *input,
		     size_t len, tt_buf *out, bool allow_fail, int *status, tt_error *err)
{
	size_t nargs = 0;
	while (args[nargs])
		nargs++;
	const char **argv = tt_calloc(nargs + TT_GIT_NISO + 2, sizeof *argv);
	tt_proc_result r;
	int rc;
	if (!argv)
		return tt_error_oom(err);
	argv[0] = exe;
	memcpy(argv + 1, tt_git_isolation, sizeof tt_git_isolation);
	memcpy(argv + 1 + TT_GIT_NISO, args, nargs * sizeof *args);
	tt_proc_opts opts = { .argv = argv, .cwd = dir, .env_unset = tt_git_env_unset,
			      .stdin_data = input, .stdin_len = input ? len : 0,
			      .max_out = TT_GIT_OUTPUT_CAP, .max_err = 1 << 20 };
	tt_proc_result_init(&r);
	rc = tt_proc_run(&opts, &r, err);
	if (rc == 0) {
		if (status)
			*status = r.status;
		if (r.status != 0 && !allow_fail) {
			rc = tt_vcs_command_failed("git", args, &r, err);
			tt_git_lock_hint(err, r.err.len ? r.err.ptr : r.out.len ? r.out.ptr : "", dir);
		} else if (out) {
			tt_buf_put(out, r.out.ptr, r.out.len);
			rc = tt_buf_check(out, err, "git output");
		}
	} else if (rc == TT_ENOTFOUND) {
		tt_error_set(err, TT_EVCS, "executable not found: %s", exe);
		tt_error_hint(err, "install git 2.38 or newer, or name it with TETHER_GIT or "
				   ".tether/secrets.toml [vcs] git_path");
		rc = TT_EVCS;
	}
	tt_proc_result_release(&r);
	free(argv);
	return rc;
}

int tt_git_run(const char *exe, const char *dir, const char *const *args, tt_buf *out,
	       bool allow_fail, int *status, tt_error *err)
{
	return tt_git_run_input(exe, dir, args, NULL, 0, out, allow_fail, status, err);
}

int tt_git_check_branch_name(const char *exe, const char *dir, const char *name, tt_error *err)
{
	int status = 0, rc;
	/* a name git could read as an option, or one no request line can carry */
	if (name && *name && name[0] != '-' && !strpbrk(name, "\n\r")) {
		const char *args[] = { "check-ref-format", "--branch", name, NULL };
		if ((rc = tt_git_run(exe, dir, args, NULL, true, &status, err)) < 0)
			return rc;
		if (status == 0)
			return 0;
	}
	tt_error_set(err, TT_ECONFIG, "invalid bookmark name '%s': git refuses it as a branch name", name ? name : "");
	tt_error_hint(err, "choose another name (`git check-ref-format --help` lists git's rules)");
	return TT_ECONFIG;
}

/* git --version must say 2.38 or newer (an unparseable banner passes). */
static int check_version(const char *exe, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc = run_input(exe, NULL, (const char *const[]){ "--version", NULL }, NULL, 0, &b, false, NULL, err);
	if (rc == 0) {
		const char *p = b.ptr;
		while (*p && (*p < '0' || *p > '9'))
			p++;
		int maj = 0, min = 0, pat = 0;
		if (sscanf(p, "%d.%d.%d", &maj, &min, &pat) >= 2 && (maj < 2 || (maj == 2 && min < 38))) {
			trim_newlines(&b);
			rc = tt_error_set(err, TT_EVCS, "git %d.%d.%d is too old: tether needs git 2.38 or "
					  "newer (%s)", maj, min, pat, exe);
		}
	}
	tt_buf_release(&b);
	return rc;
}
