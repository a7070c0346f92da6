/*
 * vcs/vcs.c - which adapter a checkout gets (tt_vcs_detect): jj where a
 * .jj is, else git.  The one file that knows both adapters.
 */
#include "vcs/vcs.h"

#include <stdlib.h>
#include <string.h>

#include "util/fs.h"

int tt_vcs_detect_with(tt_vcs **out, const char *start, const char *exe, const char *jj_exe,
		       const char *prefer, tt_error *err)
{
	char *git_root = tt_find_up(start, ".git", false);
	char *jj_root = tt_find_up(start, ".jj", false);
	tt_vcs *git = NULL;
	int rc = 0;

	*out = NULL;
	/* jj when there is a .jj at or above start, unless [vcs] prefer says
	 * git and there is a git working tree; a colocated repository's .git
	 * stays reachable for git plumbing. */
	bool use_jj = jj_root && (!prefer || strcmp(prefer, "git") != 0 || !git_root);
	if (use_jj) {
		const char *git_exe = exe && *exe ? exe : getenv("TETHER_GIT");
		if (git_root && strcmp(git_root, jj_root) == 0) {
			tt_error ignored = TT_ERROR_INIT;
			if (tt_git_open(&git, git_root, exe, &ignored) < 0)
				git = NULL;
			git_root = NULL;
			tt_error_clear(&ignored);
		}
		rc = tt_jj_open(out, jj_root, jj_exe, git_exe && *git_exe ? git_exe : "git", git, err);
		goto done;
	}
	if (!git_root) {
		rc = tt_error_set(err, TT_EVCS, "no git or jj repository found at or above %s", start);
		tt_error_hint(err, "run `git init` first, then `tether init`");
		goto done;
	}
	rc = tt_git_open(out, git_root, exe, err);
	git_root = NULL;
done:
	free(git_root);
	free(jj_root);
	return rc;
}

int tt_vcs_detect(tt_vcs **out, const char *start, const char *exe, const char *prefer,
		  tt_error *err)
{
	return tt_vcs_detect_with(out, start, exe, NULL, prefer, err);
}
