/*
 * vcs/git_lifecycle.c - the git adapter's part of drop, abandon and
 * forget-workspace (see vcs.h): which commits only one branch reaches,
 * removing a worktree, and taking commits out of the checked-out history
 * while every later commit keeps the dataset's files as they were.
 */
#include "vcs/git_lifecycle.h"

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

static const char *const isolation[] = {
	"-c", "color.ui=never", "-c", "log.showSignature=false", "-c", "core.quotePath=false",
};
#define NISO (sizeof isolation / sizeof isolation[0])

/* git with extra environment and stdin; stdout into out (chomped when
 * chomp).  A non-zero exit is TT_EVCS unless status is asked for. */
static int genv(tt_vcs *v, const char *const *args, const char *const *env, const char *input,
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
	tt_proc_opts o = { .argv = argv, .cwd = v->root, .env_set = env, .env_unset = tt_git_env_unset,
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

static int rev_list(tt_vcs *v, const char *const *args, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc;
	*out = json_array();
	if (!*out)
		return tt_error_oom(err);
	if ((rc = genv(v, args, NULL, NULL, &b, NULL, err)) == 0)
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

/* Write files ({path: text}) into the working tree. */
static int write_files(tt_vcs *v, const json_t *files, tt_error *err)
{
	const char *path;
	json_t *text;
	json_object_foreach((json_t *)files, path, text) {
		char *full = tt_path_join(v->root, path), *dir = full ? tt_dirname(full) : NULL;
		int rc = !full || !dir ? tt_error_oom(err) : tt_mkdirs(dir, 0777, err);
		if (rc == 0)
			rc = tt_write_file_atomic(full, json_string_value(text), json_string_length(text), 0666, err);
		free(full);
		free(dir);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* git rebase --onto parent commit; a conflict inside keep_dir is settled
 * with the original descendant's files (before), anything else aborts. */
static int rebase_dropping(tt_vcs *v, const char *commit, const char *parent, const json_t *before,
			   const char *keep_dir, tt_error *err)
{
	static const char *const env[] = { "GIT_EDITOR=true", "GIT_SEQUENCE_EDITOR=true", NULL };
	tt_buf b = TT_BUF_INIT, errb = TT_BUF_INIT;
	json_t *conflicted = NULL;
	int status = 0, rc;
	size_t kl = strlen(keep_dir);
	rc = genv(v, (const char *const[]){ "rebase", "--onto", parent, commit, NULL }, env, NULL, NULL, &status, err);
	while (rc == 0 && status != 0) {
		int st2 = 0;
		if ((rc = genv(v, (const char *const[]){ "rev-parse", "--verify", "--quiet", "REBASE_HEAD", NULL }, NULL,
			       NULL, &b, &st2, err)) < 0)
			break;
		if (st2 != 0) {
			rc = tt_error_set(err, TT_EVCS, "git rebase failed");
			break;
		}
		char *original = tt_strdup(b.ptr);
		json_decref(conflicted);
		if (!original || (rc = rev_list(v, (const char *const[]){ "diff", "--name-only", "--diff-filter=U", NULL },
						&conflicted, err)) < 0) {
			free(original);
			rc = rc < 0 ? rc : tt_error_oom(err);
			break;
		}
		tt_buf_reset(&errb);
		size_t i;
		json_t *f;
		json_array_foreach(conflicted, i, f) {
			const char *p = json_string_value(f);
			if (!(strncmp(p, keep_dir, kl) == 0 && p[kl] == '/'))
				tt_buf_printf(&errb, "%s%s", errb.len ? ", " : "", p);
		}
		const json_t *mine = json_object_get(before, original);
		if (errb.len || !mine) {
			genv(v, (const char *const[]){ "rebase", "--abort", NULL }, NULL, NULL, NULL, &st2, err);
			rc = tt_error_set(err, TT_EVCS, "git: abandoning conflicts outside the dataset (%s); resolve by hand",
					  errb.len ? errb.ptr : "");
			if (!errb.len) {
				free(err->message);
				err->message = tt_asprintf("git: abandoning conflicts outside the dataset (%.12s); resolve by hand",
							   original);
			}
			free(original);
			break;
		}
		free(original);
		if ((rc = write_files(v, mine, err)) < 0 ||
		    (rc = genv(v, (const char *const[]){ "add", "--", keep_dir, NULL }, NULL, NULL, NULL, NULL, err)) < 0)
			break;
		rc = genv(v, (const char *const[]){ "rebase", "--continue", NULL }, env, NULL, NULL, &status, err);
	}
	json_decref(conflicted);
	tt_buf_release(&b);
	tt_buf_release(&errb);
	return rc;
}

/*
 * Rewrite every commit (rev-list --all, oldest first) whose keep_dir files
 * desired replaces, and every descendant of one; refs follow.  *mapping:
 * {old: new}.
 */
static int rewrite_history(tt_vcs *v, const char *keep_dir, const json_t *desired, json_t **mapping,
			   tt_error *err)
{
	json_t *commits = NULL, *map = json_object(), *pos = NULL;
	tt_buf b = TT_BUF_INIT, meta = TT_BUF_INIT;
	char *gitdir = NULL, *index = NULL, *index_env = NULL;
	int rc;
	*mapping = NULL;
	if (!map)
		return tt_error_oom(err);
	if ((rc = v->ops->position(v, &pos, err)) < 0 ||
	    (rc = rev_list(v, (const char *const[]){ "rev-list", "--reverse", "--topo-order", "--all", NULL }, &commits,
			   err)) < 0 ||
	    (rc = genv(v, (const char *const[]){ "rev-parse", "--absolute-git-dir", NULL }, NULL, NULL, &b, NULL, err)) < 0)
		goto done;
	gitdir = tt_strdup(b.ptr);
	index = gitdir ? tt_asprintf("%s/tether-rewrite-%ld.index", gitdir, (long)getpid()) : NULL;
	index_env = index ? tt_asprintf("GIT_INDEX_FILE=%s", index) : NULL;
	if (!index_env) {
		rc = tt_error_oom(err);
		goto done;
	}
	const char *const ienv[] = { index_env, NULL };
	size_t i;
	json_t *c;
	json_array_foreach(commits, i, c) {
		const char *commit = json_string_value(c);
		json_t *parents = NULL;
		if ((rc = rev_list(v, (const char *const[]){ "rev-list", "--parents", "-n1", commit, NULL }, &parents,
				   err)) < 0)
			goto done;
		json_array_remove(parents, 0);
		bool moved = false;
		size_t j;
		json_t *p;
		json_array_foreach(parents, j, p) {
			json_t *np = json_object_get(map, json_string_value(p));
			if (np) {
				json_array_set(parents, j, np);
				moved = true;
			}
		}
		const json_t *want = json_object_get(desired, commit);
		json_t *files = NULL;
		bool changed = false;
		if (want && json_object_size(want)) {
			if ((rc = v->ops->files_at(v, commit, keep_dir, &files, err)) < 0) {
				json_decref(parents);
				goto done;
			}
			changed = json_object_size(files) && !json_equal(files, (json_t *)want);
		}
		json_decref(files);
		char *tree_spec = tt_asprintf("%s^{tree}", commit);
		if (!tree_spec || (rc = genv(v, (const char *const[]){ "rev-parse", tree_spec, NULL }, NULL, NULL, &b, NULL,
					    err)) < 0) {
			free(tree_spec);
			json_decref(parents);
			rc = rc < 0 ? rc : tt_error_oom(err);
			goto done;
		}
		free(tree_spec);
		char *tree = tt_strdup(b.ptr);
		if (changed) {
			rc = genv(v, (const char *const[]){ "read-tree", tree, NULL }, ienv, NULL, NULL, NULL, err);
			const char *path;
			json_t *text;
			json_object_foreach((json_t *)want, path, text) {
				if (rc < 0)
					break;
				if ((rc = genv(v, (const char *const[]){ "hash-object", "-w", "--stdin", NULL }, NULL,
					       json_string_value(text), &b, NULL, err)) < 0)
					break;
				char *info = tt_asprintf("100644,%s,%s", b.ptr, path);
				rc = info ? genv(v, (const char *const[]){ "update-index", "--add", "--cacheinfo", info, NULL },
						 ienv, NULL, NULL, NULL, err)
					  : tt_error_oom(err);
				free(info);
			}
			if (rc == 0 && (rc = genv(v, (const char *const[]){ "write-tree", NULL }, ienv, NULL, &b, NULL, err)) == 0) {
				free(tree);
				tree = tt_strdup(b.ptr);
			}
		} else if (!moved) {
			free(tree);
			json_decref(parents);
			continue;
		}
		if (rc == 0)
			rc = genv(v, (const char *const[]){ "log", "-1", "--format=%an%x00%ae%x00%aI%x00%cn%x00%ce%x00%cI%x00%B",
							    commit, NULL }, NULL, NULL, &meta, NULL, err);
		if (rc < 0) {
			free(tree);
			json_decref(parents);
			goto done;
		}
		/* meta ends where its last newline was chomped: %B keeps one */
		const char *f[7];
		const char *q = meta.ptr, *end = meta.ptr + meta.len;
		for (int k = 0; k < 7; k++) {
			f[k] = q;
			if (k < 6) {
				const char *z = memchr(q, '\0', (size_t)(end - q));
				q = z ? z + 1 : end;
			}
		}
		char *e[7] = { tt_asprintf("GIT_AUTHOR_NAME=%s", f[0]), tt_asprintf("GIT_AUTHOR_EMAIL=%s", f[1]),
			       tt_asprintf("GIT_AUTHOR_DATE=%s", f[2]), tt_asprintf("GIT_COMMITTER_NAME=%s", f[3]),
			       tt_asprintf("GIT_COMMITTER_EMAIL=%s", f[4]), tt_asprintf("GIT_COMMITTER_DATE=%s", f[5]),
			       NULL };
		char *message = tt_asprintf("%.*s\n", (int)(end - f[6]), f[6]);
		const char **av = tt_calloc(3 + 2 * json_array_size(parents) + 1, sizeof *av);
		size_t na = 0;
		if (av) {
			av[na++] = "commit-tree";
			av[na++] = tree;
			json_array_foreach(parents, j, p) {
				av[na++] = "-p";
				av[na++] = json_string_value(p);
			}
		}
		rc = av && message && e[5] ? genv(v, av, (const char *const *)e, message, &b, NULL, err) : tt_error_oom(err);
		if (rc == 0)
			json_object_set_new(map, commit, json_string(b.ptr));
		for (int k = 0; k < 6; k++)
			free(e[k]);
		free(message);
		free(av);
		free(tree);
		json_decref(parents);
		if (rc < 0)
			goto done;
	}
	if (json_object_size(map)) {
		json_t *lines = NULL;
		if ((rc = genv(v, (const char *const[]){ "for-each-ref", "--format=%(refname) %(objectname) %(objecttype)",
							 NULL }, NULL, NULL, &b, NULL, err)) < 0)
			goto done;
		lines = json_array();
		if (!lines || (rc = words_into(lines, &b, err)) < 0) {
			json_decref(lines);
			rc = rc < 0 ? rc : tt_error_oom(err);
			goto done;
		}
		for (size_t k = 0; k + 2 < json_array_size(lines) + 0 && rc == 0; k += 3) {
			const char *name = json_string_value(json_array_get(lines, k));
			const char *sha = json_string_value(json_array_get(lines, k + 1));
			const char *kind = json_string_value(json_array_get(lines, k + 2));
			json_t *to = json_object_get(map, sha);
			if (strcmp(kind, "commit") == 0 && to)
				rc = genv(v, (const char *const[]){ "update-ref", name, json_string_value(to), sha, NULL }, NULL,
					  NULL, NULL, NULL, err);
		}
		json_decref(lines);
		if (rc < 0)
			goto done;
		const json_t *branch = json_object_get(pos, "branch");
		const char *at = json_string_value(json_object_get(pos, "commit"));
		if (json_is_string(branch)) {
			rc = genv(v, (const char *const[]){ "reset", "-q", NULL }, NULL, NULL, NULL, NULL, err);
		} else if (at && json_object_get(map, at)) {
			rc = genv(v, (const char *const[]){ "update-ref", "--no-deref", "HEAD",
							    json_string_value(json_object_get(map, at)), NULL },
				  NULL, NULL, NULL, NULL, err);
			if (rc == 0)
				rc = genv(v, (const char *const[]){ "reset", "-q", NULL }, NULL, NULL, NULL, NULL, err);
		}
	}
	if (rc == 0) {
		*mapping = map;
		map = NULL;
	}
done:
	if (index)
		unlink(index);
	free(index);
	free(index_env);
	free(gitdir);
	json_decref(commits);
	json_decref(pos);
	json_decref(map);
	tt_buf_release(&b);
	tt_buf_release(&meta);
	return rc;
}

int tt_git_abandon(tt_vcs *v, const char *const *revs, size_t n, const char *keep_dir, json_t **ids_out,
		   json_t **rewritten, tt_error *err)
{
	json_t *ids = json_array(), *done = json_array(), *mapping = json_object();
	json_t *desc = NULL, *newdesc = NULL, *before = NULL, *desired = NULL, *fixed = NULL;
	tt_buf b = TT_BUF_INIT;
	char *head = NULL;
	int rc = 0, status = 0;
	*ids_out = *rewritten = NULL;
	if (!ids || !done || !mapping) {
		rc = tt_error_oom(err);
		goto out;
	}
	if ((rc = genv(v, (const char *const[]){ "status", "--porcelain", "--untracked-files=no", NULL }, NULL, NULL, &b,
		       NULL, err)) < 0)
		goto out;
	if (b.len) {
		rc = tt_error_set(err, TT_EVCS, "git: commit or stash your changes before abandoning");
		goto out;
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
		if ((rc = v->ops->current_rev(v, &head, err)) < 0)
			goto out;
		if (arr_has(done, commit))
			continue;
		if ((rc = genv(v, (const char *const[]){ "merge-base", "--is-ancestor", commit, head, NULL }, NULL, NULL,
			       NULL, &status, err)) < 0)
			goto out;
		if (status != 0) {
			rc = tt_error_set(err, TT_EVCS,
					  "git: %.12s is not on the current branch; tether can only abandon commits of "
					  "the checked-out history", commit);
			goto out;
		}
		char *pspec = tt_asprintf("%s^", commit);
		if (!pspec) {
			rc = tt_error_oom(err);
			goto out;
		}
		rc = genv(v, (const char *const[]){ "rev-parse", "--verify", "--quiet", pspec, NULL }, NULL, NULL, &b, &status,
			  err);
		free(pspec);
		if (rc < 0)
			goto out;
		if (status != 0 || !b.len) {
			rc = tt_error_set(err, TT_EVCS, "git: cannot abandon the root commit %.12s", commit);
			goto out;
		}
		char *parent = tt_strdup(b.ptr);
		char *range = tt_asprintf("%s..%s", commit, head);
		json_decref(desc);
		desc = NULL;
		rc = parent && range ? rev_list(v, (const char *const[]){ "rev-list", "--reverse", range, NULL }, &desc, err)
				     : tt_error_oom(err);
		free(range);
		if (rc < 0) {
			free(parent);
			goto out;
		}
		json_decref(before);
		before = json_object();
		size_t j;
		json_t *d;
		json_array_foreach(desc, j, d) {
			json_t *files = NULL;
			if ((rc = v->ops->files_at(v, json_string_value(d), keep_dir, &files, err)) < 0) {
				free(parent);
				goto out;
			}
			json_object_set_new(before, json_string_value(d), files);
		}
		if (!json_array_size(desc)) {
			rc = genv(v, (const char *const[]){ "reset", "--hard", parent, NULL }, NULL, NULL, NULL, NULL, err);
			free(parent);
			if (rc < 0)
				goto out;
			json_array_append(done, c);
			continue;
		}
		if ((rc = rebase_dropping(v, commit, parent, before, keep_dir, err)) < 0) {
			free(parent);
			goto out;
		}
		range = tt_asprintf("%s..HEAD", parent);
		free(parent);
		json_decref(newdesc);
		newdesc = NULL;
		rc = range ? rev_list(v, (const char *const[]){ "rev-list", "--reverse", range, NULL }, &newdesc, err)
			   : tt_error_oom(err);
		free(range);
		if (rc < 0)
			goto out;
		if (json_array_size(newdesc) != json_array_size(desc)) {
			rc = tt_error_set(err, TT_EVCS,
					  "git: the rebase that abandons %.12s left %zu commits where there were %zu",
					  commit, json_array_size(newdesc), json_array_size(desc));
			goto out;
		}
		json_decref(desired);
		desired = json_object();
		json_array_foreach(newdesc, j, d)
			json_object_set(desired, json_string_value(d),
					json_object_get(before, json_string_value(json_array_get(desc, j))));
		json_decref(fixed);
		fixed = NULL;
		if ((rc = rewrite_history(v, keep_dir, desired, &fixed, err)) < 0)
			goto out;
		const char *last = json_string_value(json_array_get(desc, json_array_size(desc) - 1));
		if (json_object_size(fixed) && json_object_size(json_object_get(before, last)) &&
		    (rc = genv(v, (const char *const[]){ "checkout", "HEAD", "--", keep_dir, NULL }, NULL, NULL, NULL, NULL,
			       err)) < 0)
			goto out;
		json_array_foreach(desc, j, d) {
			const char *nd = json_string_value(json_array_get(newdesc, j));
			json_t *f = json_object_get(fixed, nd);
			json_object_set_new(mapping, json_string_value(d), json_string(f ? json_string_value(f) : nd));
		}
		json_array_append(done, c);
	}
	*ids_out = ids;
	*rewritten = mapping;
	ids = mapping = NULL;
out:
	free(head);
	json_decref(ids);
	json_decref(done);
	json_decref(mapping);
	json_decref(desc);
	json_decref(newdesc);
	json_decref(before);
	json_decref(desired);
	json_decref(fixed);
	tt_buf_release(&b);
	return rc;
}
