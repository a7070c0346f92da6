/*
 * vcs/dispatch.c - the one way the engine calls the VCS (see dispatch.h),
 * and what is derived from the adapters' primitives, written once.
 */
#include "vcs/dispatch.h"

#include <stdlib.h>

#include "util/mem.h"

void tt_vcs_free(tt_vcs *v)
{
	if (v)
		v->ops->free(v);
}

const char *tt_vcs_kind(const tt_vcs *v)
{
	return v->ops->kind;
}

static int missing(const tt_vcs *v, const char *op, tt_error *err)
{
	return tt_error_set(err, TT_ECAPABILITY, "the %s adapter cannot %s", v->ops->kind, op);
}

int tt_vcs_current_bookmark(tt_vcs *v, char **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->current_bookmark)
		return missing(v, "current_bookmark", err);
	return v->ops->current_bookmark(v, out, err);
}

int tt_vcs_check_bookmark_name(tt_vcs *v, const char *name, tt_error *err)
{
	if (!v->ops->check_bookmark_name)
		return missing(v, "check_bookmark_name", err);
	return v->ops->check_bookmark_name(v, name, err);
}

int tt_vcs_new_bookmark(tt_vcs *v, const char *name, const char *rev, tt_error *err)
{
	if (!v->ops->new_bookmark)
		return missing(v, "new_bookmark", err);
	return v->ops->new_bookmark(v, name, rev, err);
}

int tt_vcs_park(tt_vcs *v, const char *name, tt_error *err)
{
	if (!v->ops->park)
		return missing(v, "park", err);
	return v->ops->park(v, name, err);
}

int tt_vcs_tracked(tt_vcs *v, const char *const *relpaths, size_t n, bool *out, tt_error *err)
{
	if (!v->ops->tracked)
		return missing(v, "tracked", err);
	return v->ops->tracked(v, NULL, relpaths, n, out, err);
}

int tt_vcs_tracked_at(tt_vcs *v, const char *root, const char *const *relpaths, size_t n, bool *out,
		      tt_error *err)
{
	for (size_t i = 0; i < n; i++)
		out[i] = false;
	if (!v->ops->tracked)
		return missing(v, "tracked_at", err);
	return v->ops->tracked(v, root, relpaths, n, out, err);
}

int tt_vcs_resolve(tt_vcs *v, const char *rev, char **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->resolve)
		return missing(v, "resolve", err);
	return v->ops->resolve(v, rev, out, err);
}

int tt_vcs_current_rev(tt_vcs *v, char **out, tt_error *err)
{
	return tt_vcs_resolve(v, v->ops->working_rev, out, err);
}

int tt_vcs_is_ancestor(tt_vcs *v, const char *ancestor, const char *rev, bool *out, tt_error *err)
{
	if (!v->ops->is_ancestor)
		return missing(v, "is_ancestor", err);
	return v->ops->is_ancestor(v, ancestor, rev, out, err);
}

int tt_vcs_read_file_at(tt_vcs *v, const char *rev, const char *relpath, char **out, size_t *len,
		tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->read_file_at)
		return missing(v, "read_file_at", err);
	return v->ops->read_file_at(v, rev, relpath, out, len, err);
}

int tt_vcs_files_at(tt_vcs *v, const char *rev, const char *reldir, json_t **out, tt_error *err)
{
	json_t *many = NULL;
	int rc = tt_vcs_files_at_many(v, &rev, 1, reldir, &many, err);
	if (rc == 0) {
		*out = json_incref(json_object_get(many, rev));
		json_decref(many);
	}
	return rc;
}

int tt_vcs_files_at_many(tt_vcs *v, const char *const *revs, size_t n, const char *reldir,
		json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->files_at_many)
		return missing(v, "files_at_many", err);
	return v->ops->files_at_many(v, revs, n, reldir, out, err);
}

int tt_vcs_history_revs(tt_vcs *v, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->history_revs)
		return missing(v, "history_revs", err);
	return v->ops->history_revs(v, out, err);
}

int tt_vcs_history_digest(tt_vcs *v, char out[17], tt_error *err)
{
	json_t *revs = NULL;
	const char **ids = NULL;
	size_t n;
	int rc;
	out[0] = '\0';
	if (v->ops->history_digest)
		return v->ops->history_digest(v, out, err);
	if ((rc = tt_vcs_history_revs(v, &revs, err)) < 0)
		return rc;
	n = json_array_size(revs);
	if (!(ids = tt_calloc(n ? n : 1, sizeof *ids))) {
		json_decref(revs);
		return tt_error_oom(err);
	}
	for (size_t i = 0; i < n; i++)
		ids[i] = json_string_value(json_array_get(revs, i));
	rc = tt_vcs_digest_revs(out, ids, n, err);
	free(ids);
	json_decref(revs);
	return rc;
}

int tt_vcs_iter_history_files(tt_vcs *v, const char *reldir, tt_vcs_history_fn fn, void *ctx,
		tt_error *err)
{
	if (!v->ops->iter_history_files)
		return missing(v, "iter_history_files", err);
	return v->ops->iter_history_files(v, reldir, fn, ctx, err);
}

int tt_vcs_commit_info(tt_vcs *v, const char *const *revs, size_t n, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->commit_info)
		return missing(v, "commit_info", err);
	return v->ops->commit_info(v, revs, n, out, err);
}

int tt_vcs_refs(tt_vcs *v, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->refs)
		return missing(v, "refs", err);
	return v->ops->refs(v, out, err);
}

int tt_vcs_remotes(tt_vcs *v, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->remotes)
		return missing(v, "remotes", err);
	return v->ops->remotes(v, out, err);
}

int tt_vcs_remote_unfetched(tt_vcs *v, const char *name, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->remote_unfetched)
		return missing(v, "remote_unfetched", err);
	return v->ops->remote_unfetched(v, name, out, err);
}

int tt_vcs_published_revs(tt_vcs *v, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->published_revs)
		return missing(v, "published_revs", err);
	return v->ops->published_revs(v, out, err);
}

int tt_vcs_held_revs(tt_vcs *v, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->held_revs)
		return missing(v, "held_revs", err);
	return v->ops->held_revs(v, out, err);
}

int tt_vcs_alive_commits(tt_vcs *v, const char *const *commits, size_t n, bool *out, tt_error *err)
{
	if (!v->ops->alive_commits)
		return missing(v, "alive_commits", err);
	return v->ops->alive_commits(v, commits, n, out, err);
}

int tt_vcs_commit_alive(tt_vcs *v, const char *commit, bool *out, tt_error *err)
{
	return tt_vcs_alive_commits(v, &commit, 1, out, err);
}

int tt_vcs_alive_token(tt_vcs *v, char out[65])
{
	return v->ops->alive_token ? v->ops->alive_token(v, out) : 0;
}

int tt_vcs_workspace_roots(tt_vcs *v, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->workspace_roots)
		return missing(v, "workspace_roots", err);
	return v->ops->workspace_roots(v, out, err);
}

int tt_vcs_dirty(tt_vcs *v, const char *const *relpaths, size_t n, bool *out, tt_error *err)
{
	if (!v->ops->dirty)
		return missing(v, "dirty", err);
	return v->ops->dirty(v, relpaths, n, out, err);
}

int tt_vcs_commit(tt_vcs *v, const char *const *relpaths, size_t n, const char *message,
		const char *advance, char **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->commit)
		return missing(v, "commit", err);
	return v->ops->commit(v, relpaths, n, message, advance, out, err);
}

int tt_vcs_check_commit(tt_vcs *v, tt_error *err)
{
	if (!v->ops->check_commit)
		return missing(v, "check_commit", err);
	return v->ops->check_commit(v, err);
}

int tt_vcs_unstage(tt_vcs *v, const char *const *relpaths, size_t n, tt_error *err)
{
	if (!v->ops->unstage || !n)
		return 0;
	return v->ops->unstage(v, relpaths, n, err);
}

int tt_vcs_position(tt_vcs *v, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->position)
		return missing(v, "position", err);
	return v->ops->position(v, out, err);
}

int tt_vcs_goto_position(tt_vcs *v, const json_t *position, tt_error *err)
{
	if (!v->ops->goto_position)
		return missing(v, "goto_position", err);
	return v->ops->goto_position(v, position, err);
}

int tt_vcs_uncommit(tt_vcs *v, const char *commit, bool *out, tt_error *err)
{
	if (!v->ops->uncommit)
		return missing(v, "uncommit", err);
	return v->ops->uncommit(v, commit, out, err);
}

int tt_vcs_new(tt_vcs *v, const char *rev, tt_error *err)
{
	if (!v->ops->new)
		return missing(v, "new", err);
	return v->ops->new(v, rev, err);
}

int tt_vcs_bookmarks(tt_vcs *v, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->bookmarks)
		return missing(v, "bookmarks", err);
	return v->ops->bookmarks(v, out, err);
}

int tt_vcs_bookmark_set(tt_vcs *v, const char *name, const char *rev, tt_error *err)
{
	if (!v->ops->bookmark_set)
		return missing(v, "bookmark_set", err);
	return v->ops->bookmark_set(v, name, rev, err);
}

int tt_vcs_bookmark_delete(tt_vcs *v, const char *name, tt_error *err)
{
	if (!v->ops->bookmark_delete)
		return missing(v, "bookmark_delete", err);
	return v->ops->bookmark_delete(v, name, err);
}

int tt_vcs_exclusive_commits(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->exclusive_commits)
		return missing(v, "exclusive_commits", err);
	return v->ops->exclusive_commits(v, bookmark, out, err);
}

int tt_vcs_remote_counterparts(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->remote_counterparts)
		return missing(v, "remote_counterparts", err);
	return v->ops->remote_counterparts(v, bookmark, out, err);
}

int tt_vcs_forget_workspace(tt_vcs *v, const char *root, char **out, tt_error *err)
{
	if (out)
		*out = NULL;
	if (!v->ops->forget_workspace)
		return missing(v, "forget_workspace", err);
	return v->ops->forget_workspace(v, root, out, err);
}

int tt_vcs_abandon(tt_vcs *v, const char *const *revs, size_t n, const char *keep_dir, json_t **ids,
		json_t **rewritten, tt_error *err)
{
	if (ids)
		*ids = NULL;
	if (rewritten)
		*rewritten = NULL;
	if (!v->ops->abandon)
		return missing(v, "abandon", err);
	return v->ops->abandon(v, revs, n, keep_dir, ids, rewritten, err);
}

int tt_vcs_drop_bookmark(tt_vcs *v, const char *bookmark, const json_t *commits, tt_error *err)
{
	if (!v->ops->drop_bookmark)
		return missing(v, "drop_bookmark", err);
	return v->ops->drop_bookmark(v, bookmark, commits, err);
}

int tt_vcs_rewrite_history(tt_vcs *v, const char *reldir, tt_vcs_rewrite_fn fn, void *ctx, bool ignore_immutable,
			   json_t **mapping, tt_error *err)
{
	if (mapping)
		*mapping = NULL;
	if (!v->ops->rewrite_history)
		return missing(v, "rewrite_history", err);
	return v->ops->rewrite_history(v, reldir, fn, ctx, ignore_immutable, mapping, err);
}
