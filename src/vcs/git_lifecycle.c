/*
 * vcs/git_lifecycle.c - the git adapter's part of drop, abandon and
 * forget-workspace (see vcs.h): which commits only one branch reaches,
 * removing a worktree, and taking commits out of the checked-out history
 * while every later commit keeps the dataset's files as they were.
 */
#include "vcs/git_lifecycle.h"
#include "vcs/dispatch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fs.h"
#include "util/mem.h"
#include "util/proc.h"

#include <unistd.h>

static int run(tt_vcs *v, const char *const *args, tt_buf *out, tt_error *err)
{
	if (out)
		tt_buf_reset(out);
	return tt_git_run(v->exe, v->root, args, out, false, NULL, err);
}

static int run_try(tt_vcs *v, const char *const *args, tt_buf *out, int *status, tt_error *err)
{
	if (out)
		tt_buf_reset(out);
	return tt_git_run(v->exe, v->root, args, out, true, status, err);
}

static bool bad_name(const char *s)
{
	return !s || !*s || s[0] == '-' || strpbrk(s, "\n\r") != NULL;
}

/* Whitespace-separated words of b appended to arr. */
static int words_into(json_t *arr, const tt_buf *b, tt_error *err)
{
	const char *p = b->ptr, *end = b->ptr + b->len;
	while (p && p < end) {
		while (p < end && (*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
			p++;
		const char *s = p;
		while (p < end && !(*p == ' ' || *p == '\n' || *p == '\t' || *p == '\r'))
			p++;
		if (p > s && json_array_append_new(arr, json_stringn(s, (size_t)(p - s))) != 0)
			return tt_error_oom(err);
	}
	return 0;
}

int tt_git_exclusive_commits(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err)
{
	json_t *marks = NULL, *refs = json_array(), *result = json_array();
	tt_buf b = TT_BUF_INIT;
	char **argv = NULL;
	size_t nargs = 0;
	int rc;
	*out = NULL;
	if (!refs || !result) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = v->ops->bookmarks(v, &marks, err)) < 0)
		goto done;
	const char *head = json_string_value(json_object_get(marks, bookmark));
	if (bad_name(bookmark) || !head) {
		rc = tt_error_set(err, TT_EVCS, "no branch '%s'", bookmark ? bookmark : "");
		goto done;
	}
	/* Every other ref under refs/ keeps what it reaches: other branches
	 * (parking branches too), tags, remote-tracking refs. */
	if ((rc = run(v, (const char *const[]){ "for-each-ref", "--format=%(refname)", "refs/", NULL }, &b,
		      err)) < 0 ||
	    (rc = words_into(refs, &b, err)) < 0)
		goto done;
	char *mine = tt_asprintf("refs/heads/%s", bookmark);
	argv = tt_calloc(json_array_size(refs) + 5, sizeof *argv);
	if (!mine || !argv) {
		free(mine);
		rc = tt_error_oom(err);
		goto done;
	}
	argv[nargs++] = tt_strdup("rev-list");
	argv[nargs++] = tt_strdup("--reverse");
	argv[nargs++] = tt_strdup(head);
	size_t i;
	json_t *r;
	json_array_foreach(refs, i, r) {
		if (strcmp(json_string_value(r), mine) != 0)
			argv[nargs++] = tt_asprintf("^%s", json_string_value(r));
	}
	free(mine);
	for (size_t k = 0; k < nargs; k++)
		if (!argv[k]) {
			rc = tt_error_oom(err);
			goto done;
		}
	if ((rc = run(v, (const char *const *)argv, &b, err)) < 0 || (rc = words_into(result, &b, err)) < 0)
		goto done;
	*out = result;
	result = NULL;
done:
	for (size_t k = 0; argv && k < nargs; k++)
		free(argv[k]);
	free(argv);
	json_decref(marks);
	json_decref(refs);
	json_decref(result);
	tt_buf_release(&b);
	return rc;
}

int tt_git_remote_counterparts(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	json_t *all = json_array(), *result = json_array();
	int status = 0, rc;
	*out = NULL;
	if (!all || !result) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = run_try(v, (const char *const[]){ "for-each-ref", "--format=%(refname:short)", "refs/remotes/",
						    NULL }, &b, &status, err)) < 0)
		goto done;
	if (status == 0 && (rc = words_into(all, &b, err)) < 0)
		goto done;
	size_t i;
	json_t *r;
	json_array_foreach(all, i, r) {
		const char *slash = strchr(json_string_value(r), '/');
		if (slash && strcmp(slash + 1, bookmark) == 0)
			json_array_append(result, r);
	}
	/* sorted */
	for (size_t a = 1; a < json_array_size(result); a++)
		for (size_t c = a; c > 0 && strcmp(json_string_value(json_array_get(result, c - 1)),
						    json_string_value(json_array_get(result, c))) > 0; c--) {
			json_t *t = json_incref(json_array_get(result, c));
			json_array_set(result, c, json_array_get(result, c - 1));
			json_array_set_new(result, c - 1, t);
		}
	*out = result;
	result = NULL;
done:
	json_decref(all);
	json_decref(result);
	tt_buf_release(&b);
	return rc;
}

int tt_git_forget_workspace(tt_vcs *v, const char *root, char **out, tt_error *err)
{
	json_t *roots = NULL;
	char *target = NULL;
	int rc;
	*out = NULL;
	if ((rc = v->ops->workspace_roots(v, &roots, err)) < 0)
		return rc;
	target = tt_realpath(root);
	if (!target) {
		rc = tt_error_oom(err);
		goto done;
	}
	bool listed = false, main_tree = false;
	size_t i;
	json_t *r;
	json_array_foreach(roots, i, r) {
		char *p = tt_realpath(json_string_value(r));
		bool same = p && strcmp(p, target) == 0;
		free(p);
		if (same) {
			listed = true;
			main_tree = i == 0;
		}
	}
	if (!json_array_size(roots) || main_tree || !listed)
		goto done; /* the main worktree cannot be removed */
	if ((rc = run(v, (const char *const[]){ "worktree", "remove", target, NULL }, NULL, err)) < 0)
		goto done;
	if (!(*out = tt_asprintf("git worktree %s removed", target)))
		rc = tt_error_oom(err);
done:
	free(target);
	json_decref(roots);
	return rc;
}

int tt_git_drop_bookmark(tt_vcs *v, const char *bookmark, const json_t *commits, tt_error *err)
{
	(void)commits; /* deleting the branch drops what only it reached */
	if (bad_name(bookmark))
		return tt_error_set(err, TT_EVCS, "invalid branch name: %s", bookmark ? bookmark : "(none)");
	return run(v, (const char *const[]){ "branch", "-D", "--end-of-options", bookmark, NULL }, NULL, err);
}

/* ---- abandon ------------------------------------------------------------ */
/*
 * The rebase that drops a commit runs in a throwaway detached worktree
 * under the git dir, so a crash at any moment leaves this checkout, its
 * branch and its files as they were; only the last step (the branch moves
 * with `reset --keep`, other refs with a compare-and-swap update-ref)
 * touches them.  Every rewritten descendant then gets its dataset
 * directory back exactly as it was before.
 */

static const char *const isolation[] = {
	"-c", "color.ui=never", "-c", "log.showSignature=false", "-c", "core.quotePath=false",
	"-c", "core.hooksPath=/dev/null",
};
#define NISO (sizeof isolation / sizeof isolation[0])

/* git in cwd with extra environment and stdin; stdout into out (trailing
 * newlines dropped).  A non-zero exit is TT_EVCS unless status is asked. */
static int genv(tt_vcs *v, const char *cwd, const char *const *args, const char *const *env, const char *input,
		tt_buf *out, int *status, tt_error *err)
{
	size_t nargs = 0;
	while (args[nargs])
		nargs++;
	const char **argv = tt_calloc(nargs + NISO + 2, sizeof *argv);
	if (!argv)
		return tt_error_oom(err);
	argv[0] = v->exe;
	memcpy(argv + 1, isolation, sizeof isolation);
	memcpy(argv + 1 + NISO, args, nargs * sizeof *args);
	tt_proc_opts o = { .argv = argv, .cwd = cwd ? cwd : v->root, .env_set = env, .env_unset = tt_git_env_unset,
			   .stdin_data = input, .stdin_len = input ? strlen(input) : 0,
			   .max_out = (size_t)512 << 20, .max_err = 1 << 20 };
	tt_proc_result r;
	tt_proc_result_init(&r);
	int rc = tt_proc_run(&o, &r, err);
	if (rc == 0) {
		if (status)
			*status = r.status;
		else if (r.status != 0) {
			const char *why = r.err.len ? r.err.ptr : (r.out.len ? r.out.ptr : "");
			size_t wl = strlen(why);
			while (wl && (why[wl - 1] == '\n' || why[wl - 1] == ' '))
				wl--;
			rc = tt_error_set(err, TT_EVCS, "command failed (git %s): %.*s", args[0], (int)wl, why);
		}
		if (rc == 0 && out) {
			tt_buf_reset(out);
			tt_buf_put(out, r.out.ptr ? r.out.ptr : "", r.out.len);
			while (out->len && (out->ptr[out->len - 1] == '\n' || out->ptr[out->len - 1] == '\r'))
				out->len--;
			tt_buf_putc(out, '\0');
			out->len--;
		}
	}
	tt_proc_result_release(&r);
	free(argv);
	return rc;
}

static int list_of(tt_vcs *v, const char *cwd, const char *const *args, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc;
	*out = json_array();
	if (!*out)
		return tt_error_oom(err);
	if ((rc = genv(v, cwd, args, NULL, NULL, &b, NULL, err)) == 0)
		rc = words_into(*out, &b, err);
	tt_buf_release(&b);
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static bool arr_has(const json_t *arr, const char *s)
{
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x)
		if (strcmp(json_string_value(x), s) == 0)
			return true;
	return false;
}

/* Write files ({path: text}) under dir. */
static int write_files(const char *dir, const json_t *files, tt_error *err)
{
	const char *path;
	json_t *text;
	json_object_foreach((json_t *)files, path, text) {
		char *full = tt_path_join(dir, path), *parent = full ? tt_dirname(full) : NULL;
		int rc = !full || !parent ? tt_error_oom(err) : tt_mkdirs(parent, 0777, err);
		if (rc == 0)
			rc = tt_write_file_atomic(full, json_string_value(text), json_string_length(text), 0666, err);
		free(full);
		free(parent);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* In worktree wt: rebase the detached head onto parent without commit; a
 * conflict inside keep_dir is settled with the original descendant's files
 * (before), anything else aborts. */
static int rebase_dropping(tt_vcs *v, const char *wt, const char *commit, const char *parent, const json_t *before,
			   const char *keep_dir, tt_error *err)
{
	static const char *const env[] = { "GIT_EDITOR=true", "GIT_SEQUENCE_EDITOR=true", NULL };
	tt_buf b = TT_BUF_INIT, outside = TT_BUF_INIT;
	json_t *conflicted = NULL;
	int status = 0, rc;
	size_t kl = strlen(keep_dir);
	rc = genv(v, wt, (const char *const[]){ "rebase", "-q", "--onto", parent, commit, NULL }, env, NULL, NULL, &status,
		  err);
	while (rc == 0 && status != 0) {
		int st2 = 0;
		if ((rc = genv(v, wt, (const char *const[]){ "rev-parse", "--verify", "--quiet", "REBASE_HEAD", NULL }, NULL,
			       NULL, &b, &st2, err)) < 0)
			break;
		if (st2 != 0) {
			rc = tt_error_set(err, TT_EVCS, "git rebase failed while abandoning %.12s", commit);
			break;
		}
		char original[80];
		snprintf(original, sizeof original, "%s", b.ptr);
		json_decref(conflicted);
		if ((rc = list_of(v, wt, (const char *const[]){ "diff", "--name-only", "--diff-filter=U", NULL }, &conflicted,
				  err)) < 0)
			break;
		tt_buf_reset(&outside);
		size_t i;
		json_t *f;
		json_array_foreach(conflicted, i, f) {
			const char *p = json_string_value(f);
			if (!(strncmp(p, keep_dir, kl) == 0 && p[kl] == '/'))
				tt_buf_printf(&outside, "%s%s", outside.len ? ", " : "", p);
		}
		const json_t *mine = json_object_get(before, original);
		if (outside.len || !mine) {
			if (outside.len)
				rc = tt_error_set(err, TT_EVCS, "git: abandoning conflicts outside the dataset (%s); resolve by hand",
						  outside.ptr);
			else
				rc = tt_error_set(err, TT_EVCS, "git: abandoning conflicts outside the dataset (%.12s); resolve by hand",
						  original);
			break;
		}
		if ((rc = write_files(wt, mine, err)) < 0 ||
		    (rc = genv(v, wt, (const char *const[]){ "add", "--", keep_dir, NULL }, NULL, NULL, NULL, NULL, err)) < 0)
			break;
		rc = genv(v, wt, (const char *const[]){ "rebase", "--continue", NULL }, env, NULL, NULL, &status, err);
	}
	json_decref(conflicted);
	tt_buf_release(&b);
	tt_buf_release(&outside);
	return rc;
}

/* A commit like new_commit (tree, message, author, committer) on parent
 * whose keep_dir is old_commit's: *out the new id. */
static int with_old_dir(tt_vcs *v, const char *wt, const char *index_env, const char *new_commit, const char *parent,
			const char *old_commit, const char *keep_dir, char **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT, meta = TT_BUF_INIT;
	const char *const ienv[] = { index_env, NULL };
	char *spec = tt_asprintf("%s:%s", old_commit, keep_dir), *prefix = tt_asprintf("--prefix=%s/", keep_dir);
	char *tree = NULL, *message = NULL;
	char *e[7] = { 0 };
	int rc, status = 0;
	*out = NULL;
	if (!spec || !prefix) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* The index is this function's own (index_env), read from new_commit:
	 * forced, since git's up-to-date check compares it with the worktree's
	 * HEAD, which is another commit (the last rebased one) whenever more
	 * than one descendant is rewritten. */
	if ((rc = genv(v, wt, (const char *const[]){ "read-tree", new_commit, NULL }, ienv, NULL, NULL, NULL, err)) < 0 ||
	    (rc = genv(v, wt, (const char *const[]){ "rm", "-r", "-q", "-f", "--cached", "--ignore-unmatch", "--", keep_dir,
						     NULL },
		       ienv, NULL, NULL, NULL, err)) < 0 ||
	    (rc = genv(v, wt, (const char *const[]){ "rev-parse", "--verify", "--quiet", spec, NULL }, NULL, NULL, &b, &status,
		       err)) < 0)
		goto done;
	if (status == 0 &&
	    (rc = genv(v, wt, (const char *const[]){ "read-tree", prefix, spec, NULL }, ienv, NULL, NULL, NULL, err)) < 0)
		goto done;
	if ((rc = genv(v, wt, (const char *const[]){ "write-tree", NULL }, ienv, NULL, &b, NULL, err)) < 0)
		goto done;
	tree = tt_strdup(b.ptr);
	if ((rc = genv(v, wt, (const char *const[]){ "log", "-1", "--format=%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B",
						     new_commit, NULL }, NULL, NULL, &meta, NULL, err)) < 0)
		goto done;
	const char *f[7], *q = meta.ptr, *end = meta.ptr + meta.len;
	for (int k = 0; k < 7; k++) {
		f[k] = q;
		if (k < 6) {
			const char *z = memchr(q, '\0', (size_t)(end - q));
			q = z ? z + 1 : end;
		}
	}
	static const char *const names[6] = { "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_AUTHOR_DATE",
					      "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE" };
	for (int k = 0; k < 6; k++) {
		const char *z = memchr(f[k], '\0', (size_t)(end - f[k]));
		e[k] = tt_asprintf("%s=%.*s", names[k], (int)((z ? z : end) - f[k]), f[k]);
	}
	message = tt_asprintf("%.*s\n", (int)(end - f[6]), f[6]);
	if (!tree || !message || !e[5]) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = genv(v, wt, (const char *const[]){ "commit-tree", tree, "-p", parent, NULL }, (const char *const *)e,
		       message, &b, NULL, err)) < 0)
		goto done;
	if (!(*out = tt_strdup(b.ptr)))
		rc = tt_error_oom(err);
done:
	for (int k = 0; k < 6; k++)
		free(e[k]);
	free(spec);
	free(prefix);
	free(tree);
	free(message);
	tt_buf_release(&b);
	tt_buf_release(&meta);
	return rc;
}

/* Abandon one commit of the checked-out history: *mapping gains {old
 * descendant: new}; *new_head the branch's new head. */
static int abandon_one(tt_vcs *v, const char *gitdir, const char *commit, const char *head, const char *keep_dir,
		       json_t *mapping, char **new_head, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	json_t *desc = NULL, *newdesc = NULL, *before = json_object();
	char *parent = NULL, *wt = NULL, *index = NULL, *index_env = NULL;
	int rc, status = 0;
	*new_head = NULL;
	char *pspec = tt_asprintf("%s^", commit);
	if (!pspec || !before) {
		free(pspec);
		rc = tt_error_oom(err);
		goto done;
	}
	rc = genv(v, NULL, (const char *const[]){ "rev-parse", "--verify", "--quiet", pspec, NULL }, NULL, NULL, &b, &status,
		  err);
	free(pspec);
	if (rc < 0)
		goto done;
	if (status != 0 || !b.len) {
		rc = tt_error_set(err, TT_EVCS, "git: cannot abandon the root commit %.12s", commit);
		goto done;
	}
	parent = tt_strdup(b.ptr);
	char *range = tt_asprintf("%s..%s", commit, head);
	rc = parent && range ? list_of(v, NULL, (const char *const[]){ "rev-list", "--reverse", range, NULL }, &desc, err)
			     : tt_error_oom(err);
	free(range);
	if (rc < 0)
		goto done;
	if (!json_array_size(desc)) {
		*new_head = parent;
		parent = NULL;
		goto done;
	}
	size_t j;
	json_t *d;
	json_array_foreach(desc, j, d) {
		json_t *files = NULL;
		if ((rc = tt_vcs_files_at(v, json_string_value(d), keep_dir, &files, err)) < 0)
			goto done;
		json_object_set_new(before, json_string_value(d), files);
	}
	wt = tt_asprintf("%s/tether-abandon-%ld", gitdir, (long)getpid());
	index = tt_asprintf("%s/tether-abandon-%ld.index", gitdir, (long)getpid());
	index_env = index ? tt_asprintf("GIT_INDEX_FILE=%s", index) : NULL;
	if (!wt || !index_env) {
		rc = tt_error_oom(err);
		goto done;
	}
	genv(v, NULL, (const char *const[]){ "worktree", "remove", "--force", wt, NULL }, NULL, NULL, NULL, &status, err);
	if ((rc = genv(v, NULL, (const char *const[]){ "worktree", "add", "-q", "--detach", wt, head, NULL }, NULL, NULL,
		       NULL, NULL, err)) < 0)
		goto done;
	if ((rc = rebase_dropping(v, wt, commit, parent, before, keep_dir, err)) < 0)
		goto cleanup;
	range = tt_asprintf("%s..HEAD", parent);
	rc = range ? list_of(v, wt, (const char *const[]){ "rev-list", "--reverse", range, NULL }, &newdesc, err)
		   : tt_error_oom(err);
	free(range);
	if (rc < 0)
		goto cleanup;
	if (json_array_size(newdesc) != json_array_size(desc)) {
		rc = tt_error_set(err, TT_EVCS,
				  "git: abandoning %.12s would drop or merge %zu later commit(s) (merges in between?); "
				  "rebase by hand", commit, json_array_size(desc) - json_array_size(newdesc));
		goto cleanup;
	}
	/* Every rewritten descendant keeps its dataset files exactly. */
	char *tip = tt_strdup(parent);
	json_array_foreach(newdesc, j, d) {
		char *fixed = NULL;
		const char *old = json_string_value(json_array_get(desc, j));
		if (!tip || (rc = with_old_dir(v, wt, index_env, json_string_value(d), tip, old, keep_dir, &fixed, err)) < 0)
			break;
		json_object_set_new(mapping, old, json_string(fixed));
		free(tip);
		tip = fixed;
	}
	if (rc == 0)
		*new_head = tip;
	else
		free(tip);
cleanup:
	genv(v, NULL, (const char *const[]){ "worktree", "remove", "--force", wt, NULL }, NULL, NULL, NULL, &status, err);
	if (index)
		unlink(index);
done:
	free(parent);
	free(wt);
	free(index);
	free(index_env);
	json_decref(desc);
	json_decref(newdesc);
	json_decref(before);
	tt_buf_release(&b);
	return rc;
}

int tt_git_abandon(tt_vcs *v, const char *const *revs, size_t n, const char *keep_dir, json_t **ids_out,
		   json_t **rewritten, tt_error *err)
{
	json_t *ids = json_array(), *done = json_array(), *mapping = json_object(), *lines = NULL;
	tt_buf b = TT_BUF_INIT;
	char *head = NULL, *gitdir = NULL;
	int rc = 0, status = 0;
	*ids_out = *rewritten = NULL;
	if (!ids || !done || !mapping) {
		rc = tt_error_oom(err);
		goto out;
	}
	if ((rc = genv(v, NULL, (const char *const[]){ "status", "--porcelain", "--untracked-files=no", NULL }, NULL, NULL,
		       &b, NULL, err)) < 0)
		goto out;
	if (b.len) {
		rc = tt_error_set(err, TT_EVCS, "git: commit or stash your changes before abandoning");
		goto out;
	}
	if ((rc = genv(v, NULL, (const char *const[]){ "rev-parse", "--absolute-git-dir", NULL }, NULL, NULL, &b, NULL,
		       err)) < 0)
		goto out;
	gitdir = tt_strdup(b.ptr);
	if (!gitdir) {
		rc = tt_error_oom(err);
		goto out;
	}
	{
		/* Throwaway worktrees an interrupted abandon left behind go first. */
		json_t *roots = NULL;
		tt_error ig = TT_ERROR_INIT;
		char *prefix = tt_asprintf("%s/tether-abandon-", gitdir);
		if (prefix && v->ops->workspace_roots(v, &roots, &ig) == 0) {
			size_t k;
			json_t *r;
			json_array_foreach(roots, k, r)
				if (strncmp(json_string_value(r), prefix, strlen(prefix)) == 0)
					genv(v, NULL, (const char *const[]){ "worktree", "remove", "--force", json_string_value(r),
									     NULL }, NULL, NULL, NULL, &status, &ig);
		}
		tt_error_clear(&ig);
		json_decref(roots);
		free(prefix);
	}
	for (size_t i = 0; i < n; i++) {
		char *id = NULL;
		if ((rc = v->ops->resolve(v, revs[i], &id, err)) < 0)
			goto out;
		json_array_append_new(ids, json_string(id));
		free(id);
	}
	size_t i;
	json_t *c;
	json_array_foreach(ids, i, c) {
		const char *commit = json_string_value(c);
		free(head);
		head = NULL;
		if ((rc = tt_vcs_current_rev(v, &head, err)) < 0)
			goto out;
		if (arr_has(done, commit))
			continue;
		if ((rc = genv(v, NULL, (const char *const[]){ "merge-base", "--is-ancestor", commit, head, NULL }, NULL, NULL,
			       NULL, &status, err)) < 0)
			goto out;
		if (status != 0) {
			/* Already out of history (an abandon that was interrupted
			 * after its rewrite landed): nothing left to do. */
			bool alive = true;
			if ((rc = tt_vcs_commit_alive(v, commit, &alive, err)) < 0)
				goto out;
			if (!alive) {
				json_array_append(done, c);
				continue;
			}
			rc = tt_error_set(err, TT_EVCS,
					  "git: %.12s is not on the current branch; tether can only abandon commits of "
					  "the checked-out history", commit);
			goto out;
		}
		json_t *mine = json_object();
		char *new_head = NULL;
		if (!mine || (rc = abandon_one(v, gitdir, commit, head, keep_dir, mine, &new_head, err)) < 0) {
			json_decref(mine);
			rc = rc < 0 ? rc : tt_error_oom(err);
			goto out;
		}
		/* The one step that changes this checkout: the branch (or the
		 * detached HEAD) and the files move together, refusing to
		 * overwrite local edits; refs on rewritten commits follow. */
		rc = genv(v, NULL, (const char *const[]){ "reset", "-q", "--keep", new_head, NULL }, NULL, NULL, NULL, NULL, err);
		free(new_head);
		if (rc == 0) {
			json_decref(lines);
			rc = list_of(v, NULL, (const char *const[]){ "for-each-ref", "--format=%(refname) %(objectname) %(objecttype)",
								      NULL }, &lines, err);
		}
		for (size_t k = 0; rc == 0 && k + 2 < json_array_size(lines); k += 3) {
			const char *name = json_string_value(json_array_get(lines, k));
			const char *sha = json_string_value(json_array_get(lines, k + 1));
			const char *kind = json_string_value(json_array_get(lines, k + 2));
			json_t *to = json_object_get(mine, sha);
			if (strcmp(kind, "commit") == 0 && to)
				rc = genv(v, NULL, (const char *const[]){ "update-ref", name, json_string_value(to), sha, NULL },
					  NULL, NULL, NULL, NULL, err);
		}
		json_object_update(mapping, mine);
		json_decref(mine);
		if (rc < 0)
			goto out;
		json_array_append(done, c);
	}
	*ids_out = ids;
	*rewritten = mapping;
	ids = mapping = NULL;
out:
	free(head);
	free(gitdir);
	json_decref(ids);
	json_decref(done);
	json_decref(mapping);
	json_decref(lines);
	tt_buf_release(&b);
	return rc;
}

/*
 * The upgrade's history rewrite, as tether-vcs 0.1.0b7 does it under git:
 * every commit any ref reaches, oldest first, gets a new tree when fn
 * changes reldir's files and new parents when an ancestor was rewritten;
 * author, committer, their dates and the message are kept (the message as
 * `git log -1 --format=%B` prints it, with the record's newline).  Refs
 * pointing at a rewritten commit are moved compare-and-swap; HEAD's index
 * is refreshed (the working tree under reldir keeps the old texts for the
 * caller to rewrite).
 */
int tt_git_rewrite_history(tt_vcs *v, const char *reldir, tt_vcs_rewrite_fn fn, void *ctx, bool ignore_immutable,
			   json_t **mapping, tt_error *err)
{
	json_t *commits = NULL, *map = json_object(), *by_sub = json_object();
	tt_buf b = TT_BUF_INIT, gd = TT_BUF_INIT;
	char *index = NULL, *env_index = NULL, *start_commit = NULL;
	bool on_branch = false;
	int rc, st = 0;
	size_t i;
	json_t *c;
	(void)ignore_immutable;
	*mapping = NULL;
	if (!map || !by_sub) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = genv(v, NULL, (const char *const[]){ "symbolic-ref", "-q", "HEAD", NULL }, NULL, NULL, &b, &st,
		       err)) < 0)
		goto done;
	on_branch = st == 0 && b.len;
	if ((rc = genv(v, NULL, (const char *const[]){ "rev-parse", "--verify", "-q", "HEAD", NULL }, NULL, NULL, &b,
		       &st, err)) < 0)
		goto done;
	start_commit = st == 0 && b.len ? tt_strdup(b.ptr) : NULL;
	if ((rc = genv(v, NULL, (const char *const[]){ "rev-list", "--reverse", "--topo-order", "--all", NULL }, NULL,
		       NULL, &b, &st, err)) < 0)
		goto done;
	commits = json_array();
	if (!commits || (st == 0 && (rc = words_into(commits, &b, err)) < 0)) {
		rc = rc < 0 ? rc : tt_error_oom(err);
		goto done;
	}
	if ((rc = genv(v, NULL, (const char *const[]){ "rev-parse", "--git-dir", NULL }, NULL, NULL, &gd, NULL, err)) <
	    0)
		goto done;
	char *gdir = gd.ptr[0] == '/' ? tt_strdup(gd.ptr) : tt_path_join(v->root, gd.ptr);
	index = gdir ? tt_asprintf("%s/tether-rewrite-%ld.index", gdir, (long)getpid()) : NULL;
	free(gdir);
	env_index = index ? tt_asprintf("GIT_INDEX_FILE=%s", index) : NULL;
	if (!env_index) {
		rc = tt_error_oom(err);
		goto done;
	}
	const char *const ienv[] = { env_index, NULL };
	json_array_foreach(commits, i, c) {
		const char *commit = json_string_value(c);
		json_t *parents = NULL, *files = NULL, *new_files = NULL;
		char *spec = tt_asprintf("%s:%s", commit, reldir), *tree = NULL, *sub = NULL;
		bool reparent = false;
		if (!spec) {
			rc = tt_error_oom(err);
			break;
		}
		if ((rc = list_of(v, NULL, (const char *const[]){ "rev-list", "--parents", "-n1", commit, NULL }, &parents,
				  err)) < 0)
			goto next;
		json_array_remove(parents, 0);
		size_t k;
		json_t *p;
		json_array_foreach(parents, k, p) {
			json_t *to = json_object_get(map, json_string_value(p));
			if (to) {
				json_array_set(parents, k, to);
				reparent = true;
			}
		}
		if ((rc = genv(v, NULL, (const char *const[]){ "rev-parse", "--verify", "--quiet", spec, NULL }, NULL,
			       NULL, &b, &st, err)) < 0)
			goto next;
		sub = tt_strdup(st == 0 ? b.ptr : "");
		json_t *known = sub ? json_object_get(by_sub, sub) : NULL;
		if (!sub) {
			rc = tt_error_oom(err);
			goto next;
		}
		if (known) {
			files = json_incref(json_array_get(known, 0));
			new_files = json_incref(json_array_get(known, 1));
		} else {
			if (*sub) {
				if ((rc = tt_vcs_files_at(v, commit, reldir, &files, err)) < 0)
					goto next;
			} else {
				files = json_object();
			}
			if (json_object_size(files)) {
				if ((rc = fn(ctx, commit, files, &new_files, err)) < 0)
					goto next;
			} else {
				new_files = json_incref(files);
			}
			json_object_set_new(by_sub, sub, json_pack("[O,O]", files, new_files));
		}
		bool changed = !json_equal(files, new_files);
		if (!changed && !reparent)
			goto next;
		char *treespec = tt_asprintf("%s^{tree}", commit);
		if (!treespec || (rc = genv(v, NULL, (const char *const[]){ "rev-parse", treespec, NULL }, NULL, NULL, &b,
					    NULL, err)) < 0) {
			free(treespec);
			rc = rc < 0 ? rc : tt_error_oom(err);
			goto next;
		}
		free(treespec);
		tree = tt_strdup(b.ptr);
		if (changed) {
			const char *path;
			json_t *text;
			if ((rc = genv(v, NULL, (const char *const[]){ "read-tree", tree, NULL }, ienv, NULL, NULL, NULL,
				       err)) < 0)
				goto next;
			json_object_foreach(new_files, path, text) {
				char *info;
				if ((rc = genv(v, NULL, (const char *const[]){ "hash-object", "-w", "--stdin", NULL }, NULL,
					       json_string_value(text), &b, NULL, err)) < 0)
					goto next;
				if (!(info = tt_asprintf("100644,%s,%s", b.ptr, path))) {
					rc = tt_error_oom(err);
					goto next;
				}
				rc = genv(v, NULL, (const char *const[]){ "update-index", "--add", "--cacheinfo", info, NULL },
					  ienv, NULL, NULL, NULL, err);
				free(info);
				if (rc < 0)
					goto next;
			}
			if ((rc = genv(v, NULL, (const char *const[]){ "write-tree", NULL }, ienv, NULL, &b, NULL, err)) < 0)
				goto next;
			free(tree);
			tree = tt_strdup(b.ptr);
		}
		if ((rc = genv(v, NULL,
			       (const char *const[]){ "log", "-1", "--format=%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B%x01",
						      commit, NULL },
			       NULL, NULL, &b, NULL, err)) < 0)
			goto next;
		{
			const char *f[7];
			char *s = b.ptr, *end = b.ptr + b.len;
			size_t nf = 0;
			while (nf < 6 && s < end) {
				f[nf++] = s;
				s += strlen(s) + 1;
			}
			if (nf < 6 || s > end) {
				rc = tt_error_set(err, TT_EVCS, "git: cannot read the metadata of commit %s", commit);
				goto next;
			}
			f[6] = s;
			char *msg = tt_asprintf("%s\n", f[6]);
			char *x = msg ? strrchr(msg, '\x01') : NULL;
			if (x)
				memmove(x, x + 1, strlen(x + 1) + 1);
			char *e[7] = { tt_asprintf("GIT_AUTHOR_NAME=%s", f[0]), tt_asprintf("GIT_AUTHOR_EMAIL=%s", f[1]),
				       tt_asprintf("GIT_AUTHOR_DATE=%s", f[2]), tt_asprintf("GIT_COMMITTER_NAME=%s", f[3]),
				       tt_asprintf("GIT_COMMITTER_EMAIL=%s", f[4]),
				       tt_asprintf("GIT_COMMITTER_DATE=%s", f[5]), NULL };
			size_t np = json_array_size(parents);
			const char **argv = tt_calloc(2 * np + 3, sizeof *argv);
			bool ok = msg && tree && argv;
			for (size_t q = 0; q < 6; q++)
				ok = ok && e[q];
			if (ok) {
				size_t a = 0;
				argv[a++] = "commit-tree";
				argv[a++] = tree;
				json_array_foreach(parents, k, p) {
					argv[a++] = "-p";
					argv[a++] = json_string_value(p);
				}
				rc = genv(v, NULL, argv, (const char *const *)e, msg, &b, NULL, err);
				if (rc == 0)
					json_object_set_new(map, commit, json_string(b.ptr));
			} else {
				rc = tt_error_oom(err);
			}
			for (size_t q = 0; q < 6; q++)
				free(e[q]);
			free(argv);
			free(msg);
		}
	next:
		json_decref(parents);
		json_decref(files);
		json_decref(new_files);
		free(spec);
		free(tree);
		free(sub);
		if (rc < 0)
			break;
	}
	if (index)
		unlink(index);
	if (rc < 0 || !json_object_size(map))
		goto done;
	if ((rc = genv(v, NULL,
		       (const char *const[]){ "for-each-ref", "--format=%(refname) %(objectname) %(objecttype)", NULL },
		       NULL, NULL, &b, NULL, err)) < 0)
		goto done;
	for (char *line = b.ptr; line && *line && rc == 0;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		char name[1024], sha[128], kind[32];
		if (sscanf(line, "%1023s %127s %31s", name, sha, kind) == 3 && strcmp(kind, "commit") == 0) {
			const char *to = json_string_value(json_object_get(map, sha));
			if (to)
				rc = genv(v, NULL, (const char *const[]){ "update-ref", name, to, sha, NULL }, NULL, NULL, NULL,
					  NULL, err);
		}
		line = nl ? nl + 1 : NULL;
	}
	if (rc < 0)
		goto done;
	if (on_branch) {
		rc = genv(v, NULL, (const char *const[]){ "reset", "-q", NULL }, NULL, NULL, NULL, NULL, err);
	} else if (start_commit && json_object_get(map, start_commit)) {
		const char *to = json_string_value(json_object_get(map, start_commit));
		if ((rc = genv(v, NULL, (const char *const[]){ "update-ref", "--no-deref", "HEAD", to, NULL }, NULL, NULL,
			       NULL, NULL, err)) == 0)
			rc = genv(v, NULL, (const char *const[]){ "reset", "-q", NULL }, NULL, NULL, NULL, NULL, err);
	}
done:
	if (rc == 0) {
		*mapping = map;
		map = NULL;
	}
	json_decref(map);
	json_decref(by_sub);
	json_decref(commits);
	tt_buf_release(&b);
	tt_buf_release(&gd);
	free(index);
	free(env_index);
	free(start_commit);
	return rc;
}
