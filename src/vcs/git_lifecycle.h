/* vcs/git_lifecycle.h - the git adapter's drop/abandon/forget-workspace ops (see vcs.h). */
#ifndef TT_VCS_GIT_LIFECYCLE_H
#define TT_VCS_GIT_LIFECYCLE_H

#include "vcs/vcs.h"

int tt_git_exclusive_commits(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err);
int tt_git_remote_counterparts(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err);
int tt_git_forget_workspace(tt_vcs *v, const char *root, char **out, tt_error *err);
int tt_git_abandon(tt_vcs *v, const char *const *revs, size_t n, const char *keep_dir, json_t **ids,
		   json_t **rewritten, tt_error *err);
int tt_git_drop_bookmark(tt_vcs *v, const char *bookmark, const json_t *commits, tt_error *err);

int tt_git_rewrite_history(tt_vcs *v, const char *reldir, tt_vcs_rewrite_fn fn, void *ctx,
			    bool ignore_immutable, json_t **mapping, tt_error *err);

#endif
