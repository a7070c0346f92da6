/*
 * vcs/dispatch.h - how the engine calls the dataset's VCS: tt_vcs_<op>(v,
 * ...) for every op of tt_vcs_ops, with the op's own signature, and the
 * calls derived from them (tt_vcs_files_at, tt_vcs_commit_alive,
 * tt_vcs_current_rev, tt_vcs_tracked / tt_vcs_tracked_at, the default
 * tt_vcs_history_digest).  Each resets the op's pointer out-parameters to
 * NULL and answers an op the adapter lacks with TT_ECAPABILITY naming the
 * VCS; tt_vcs_has(v, op) asks whether the adapter has an optional op,
 * tt_vcs_kind(v) which VCS it is.
 */
#ifndef TT_VCS_DISPATCH_H
#define TT_VCS_DISPATCH_H

#include "vcs/vcs.h"

#define tt_vcs_has(v, op) ((v)->ops->op != NULL)
/* "git" | "jj" */
const char *tt_vcs_kind(const tt_vcs *v);

int tt_vcs_current_bookmark(tt_vcs *v, char **out, tt_error *err);
int tt_vcs_check_bookmark_name(tt_vcs *v, const char *name, tt_error *err);
int tt_vcs_new_bookmark(tt_vcs *v, const char *name, const char *rev, tt_error *err);
int tt_vcs_park(tt_vcs *v, const char *name, tt_error *err);
int tt_vcs_tracked(tt_vcs *v, const char *const *relpaths, size_t n, bool *out, tt_error *err);
int tt_vcs_tracked_at(tt_vcs *v, const char *root, const char *const *relpaths, size_t n, bool *out,
		      tt_error *err);
int tt_vcs_resolve(tt_vcs *v, const char *rev, char **out, tt_error *err);
int tt_vcs_current_rev(tt_vcs *v, char **out, tt_error *err);
int tt_vcs_is_ancestor(tt_vcs *v, const char *ancestor, const char *rev, bool *out, tt_error *err);
int tt_vcs_read_file_at(tt_vcs *v, const char *rev, const char *relpath, char **out, size_t *len,
		tt_error *err);
int tt_vcs_files_at(tt_vcs *v, const char *rev, const char *reldir, json_t **out, tt_error *err);
int tt_vcs_files_at_many(tt_vcs *v, const char *const *revs, size_t n, const char *reldir,
		json_t **out, tt_error *err);
int tt_vcs_history_revs(tt_vcs *v, json_t **out, tt_error *err);
int tt_vcs_history_digest(tt_vcs *v, char out[17], tt_error *err);
int tt_vcs_iter_history_files(tt_vcs *v, const char *reldir, tt_vcs_history_fn fn, void *ctx,
		tt_error *err);
int tt_vcs_commit_info(tt_vcs *v, const char *const *revs, size_t n, json_t **out, tt_error *err);
int tt_vcs_refs(tt_vcs *v, json_t **out, tt_error *err);
int tt_vcs_remotes(tt_vcs *v, json_t **out, tt_error *err);
int tt_vcs_remote_unfetched(tt_vcs *v, const char *name, json_t **out, tt_error *err);
int tt_vcs_published_revs(tt_vcs *v, json_t **out, tt_error *err);
int tt_vcs_held_revs(tt_vcs *v, json_t **out, tt_error *err);
int tt_vcs_alive_commits(tt_vcs *v, const char *const *commits, size_t n, bool *out, tt_error *err);
int tt_vcs_commit_alive(tt_vcs *v, const char *commit, bool *out, tt_error *err);
int tt_vcs_alive_token(tt_vcs *v, char out[65]);
int tt_vcs_workspace_roots(tt_vcs *v, json_t **out, tt_error *err);
int tt_vcs_dirty(tt_vcs *v, const char *const *relpaths, size_t n, bool *out, tt_error *err);
int tt_vcs_commit(tt_vcs *v, const char *const *relpaths, size_t n, const char *message,
		const char *advance, char **out, tt_error *err);
int tt_vcs_check_commit(tt_vcs *v, tt_error *err);
int tt_vcs_unstage(tt_vcs *v, const char *const *relpaths, size_t n, tt_error *err);
int tt_vcs_position(tt_vcs *v, json_t **out, tt_error *err);
int tt_vcs_goto_position(tt_vcs *v, const json_t *position, tt_error *err);
int tt_vcs_uncommit(tt_vcs *v, const char *commit, bool *out, tt_error *err);
int tt_vcs_new(tt_vcs *v, const char *rev, tt_error *err);
int tt_vcs_bookmarks(tt_vcs *v, json_t **out, tt_error *err);
int tt_vcs_bookmark_set(tt_vcs *v, const char *name, const char *rev, tt_error *err);
int tt_vcs_bookmark_delete(tt_vcs *v, const char *name, tt_error *err);
int tt_vcs_exclusive_commits(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err);
int tt_vcs_remote_counterparts(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err);
int tt_vcs_forget_workspace(tt_vcs *v, const char *root, char **out, tt_error *err);
int tt_vcs_abandon(tt_vcs *v, const char *const *revs, size_t n, const char *keep_dir, json_t **ids,
		json_t **rewritten, tt_error *err);
int tt_vcs_drop_bookmark(tt_vcs *v, const char *bookmark, const json_t *commits, tt_error *err);

int tt_vcs_rewrite_history(tt_vcs *v, const char *reldir, tt_vcs_rewrite_fn fn, void *ctx, bool ignore_immutable,
			   json_t **mapping, tt_error *err);

#endif
