/* vcs/git.c - the git adapter (see vcs.h); running git is git_exec.c. */
#include "vcs/vcs.h"
#include "vcs/dispatch.h"
#include "vcs/git_lifecycle.h"
#include "vcs/git_native.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/fs.h"
#include "util/mem.h"
#include "util/proc.h"

static void chomp(tt_buf *b)
{
	while (b->len && (b->ptr[b->len - 1] == '\n' || b->ptr[b->len - 1] == '\r'))
		tt_buf_truncate(b, b->len - 1);
}

static int git_current_bookmark(tt_vcs *v, char **out, tt_error *err)
{
	if (v->native) {
		char *sym = NULL, hex[65];
		*out = NULL;
		if (tt_gitnat_head(v->native, &sym, hex) == 0 &&
		    (!sym || (strncmp(sym, "refs/heads/", 11) == 0 && tt_gitnat_short_is_plain(v->native, sym + 11)))) {
			int rc = 0;
			if (sym && strncmp(sym + 11, "tether/", 7) != 0 && !(*out = tt_strdup(sym + 11)))
				rc = tt_error_oom(err);
			free(sym);
			return rc;
		}
		free(sym);
	}
	tt_buf b = TT_BUF_INIT;
	int status = 0;
	int rc = tt_git_run(v->exe, v->root, (const char *const[]){ "symbolic-ref", "--short", "-q", "HEAD", NULL },
			    &b, true, &status, err);
	*out = NULL;
	if (rc == 0) {
		chomp(&b);
		if (status == 0 && b.len && strncmp(b.ptr, "tether/", 7) != 0) {
			*out = tt_buf_detach(&b);
			if (!*out)
				rc = tt_error_oom(err);
		}
	}
	tt_buf_release(&b);
	return rc;
}

/* ---- helpers ---------------------------------------------------------- */

/* A growable NULL-terminated argument vector (the strings are borrowed). */
typedef struct argv_list {
	const char **v;
	size_t n, alloc;
	bool oom;
} argv_list;

static void av_add(argv_list *a, const char *s)
{
	if (a->oom)
		return;
	if (TT_ARRAY_GROW(a->v, a->alloc, a->n + 2) != 0) {
		a->oom = true;
		return;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

static void av_add_all(argv_list *a, const char *const *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		av_add(a, s[i]);
}

static void av_release(argv_list *a)
{
	free(a->v);
	a->v = NULL;
	a->n = a->alloc = 0;
}

/* Run git in the working tree; a non-zero exit is TT_EVCS. */
static int git(tt_vcs *v, const char *const *args, tt_buf *out, tt_error *err)
{
	return tt_git_run(v->exe, v->root, args, out, false, NULL, err);
}

static int git_av(tt_vcs *v, const argv_list *a, tt_buf *out, tt_error *err)
{
	if (a->oom || !a->v)
		return tt_error_oom(err);
	return git(v, a->v, out, err);
}

/* Run git, the exit status in *status (output only when it is 0). */
static int git_try(tt_vcs *v, const char *const *args, tt_buf *out, int *status, tt_error *err)
{
	return tt_git_run(v->exe, v->root, args, out, true, status, err);
}

/* A revision (or name) git could read as an option, or one no request
 * can carry (cat-file and --stdin take one per line). */
static bool bad_rev(const char *rev)
{
	return !rev || !*rev || rev[0] == '-' || strpbrk(rev, "\n\r") != NULL;
}

static int refuse_rev(const char *rev, tt_error *err)
{
	return tt_error_set(err, TT_EVCS, "could not resolve revision: %s", rev ? rev : "(none)");
}

static int refuse_name(const char *name, tt_error *err)
{
	return tt_error_set(err, TT_EVCS, "invalid branch name: %s", name ? name : "(none)");
}

/* `git rev-parse --verify --quiet --end-of-options rev` into out (chomped). */
static int rev_of(tt_vcs *v, const char *rev, tt_buf *out, int *status, tt_error *err)
{
	const char *args[] = { "rev-parse", "--verify", "-q", "--end-of-options", rev, NULL };
	tt_buf_reset(out);
	int rc = git_try(v, args, out, status, err);
	chomp(out);
	return rc;
}

static int git_resolve(tt_vcs *v, const char *rev, char **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	char *spec = NULL;
	int status = 0, rc;

	*out = NULL;
	if (bad_rev(rev))
		return refuse_rev(rev, err);
	if (!(spec = tt_asprintf("%s^{commit}", rev)))
		return tt_error_oom(err);
	if (v->native) {
		char type[16], oid[65];
		if (tt_gitnat_lookup(v->native, spec, type, oid, &b) == 1) {
			free(spec);
			tt_buf_release(&b);
			return (*out = tt_strdup(oid)) ? 0 : tt_error_oom(err);
		}
	}
	if ((rc = rev_of(v, spec, &b, &status, err)) < 0)
		goto done;
	if (status != 0 || !b.len) {
		rc = refuse_rev(rev, err);
		goto done;
	}
	if (!(*out = tt_buf_detach(&b)))
		rc = tt_error_oom(err);
done:
	free(spec);
	tt_buf_release(&b);
	return rc;
}

static int git_check_bookmark_name(tt_vcs *v, const char *name, tt_error *err)
{
	return tt_git_check_branch_name(v->exe, v->root, name, err);
}

static int git_new_bookmark(tt_vcs *v, const char *name, const char *rev, tt_error *err)
{
	char *commit = NULL;
	int rc;
	if (bad_rev(name))
		return refuse_name(name, err);
	if (rev && (rc = git_resolve(v, rev, &commit, err)) < 0)
		return rc;
	const char *args[] = { "switch", "-c", name, commit, NULL };
	rc = git(v, args, NULL, err);
	free(commit);
	return rc;
}

static int git_park(tt_vcs *v, const char *name, tt_error *err)
{
	tt_buf head = TT_BUF_INIT, there = TT_BUF_INIT;
	char *ref = tt_asprintf("refs/heads/%s^{commit}", name);
	int st_head = 0, st_there = 0, rc;
	if (!ref)
		return tt_error_oom(err);
	if ((rc = rev_of(v, "HEAD^{commit}", &head, &st_head, err)) < 0 ||
	    (rc = rev_of(v, ref, &there, &st_there, err)) < 0)
		goto done;
	if (st_there != 0) {
		rc = git_new_bookmark(v, name, NULL, err);
	} else if (st_head == 0 && strcmp(head.ptr, there.ptr) == 0) {
		rc = tt_git_run(v->exe, v->root, (const char *const[]){ "switch", "--end-of-options", name, NULL },
				NULL, false, NULL, err);
	} else {
		rc = tt_error_set(err, TT_EVCS, "HEAD is detached at %.12s and branch %s points elsewhere "
				  "(%.12s)", st_head == 0 ? head.ptr : "nothing", name, there.ptr);
		tt_error_hint(err, "check out the branch the dataset should work on (`git switch %s`, or "
				   "a new one), then run the command again", name);
	}
done:
	free(ref);
	tt_buf_release(&head);
	tt_buf_release(&there);
	return rc;
}

/* `git ls-files` of relpaths in the checkout at dir. */
static int ls_files_has(tt_vcs *v, const char *dir, const char *const *relpaths, size_t n, bool *out, tt_error *err)
{
	const char **args = tt_calloc(n + 5, sizeof *args);
	tt_buf b = TT_BUF_INIT;
	int rc;
	if (!args)
		return tt_error_oom(err);
	args[0] = "--literal-pathspecs";
	args[1] = "ls-files";
	args[2] = "-z";
	args[3] = "--";
	for (size_t i = 0; i < n; i++) {
		args[4 + i] = relpaths[i];
		out[i] = false;
	}
	rc = tt_git_run(v->exe, dir, args, &b, false, NULL, err);
	for (size_t off = 0; rc == 0 && off < b.len;) {
		const char *entry = b.ptr + off;
		size_t l = strlen(entry);
		for (size_t i = 0; i < n; i++)
			if (strcmp(entry, relpaths[i]) == 0)
				out[i] = true;
		off += l + 1;
	}
	tt_buf_release(&b);
	free(args);
	return rc;
}

/* Another worktree has its own index: git answers for it there. */
/* In this checkout (root NULL: from the index read natively where it can),
 * or in the worktree at root. */
static int git_tracked(tt_vcs *v, const char *root, const char *const *relpaths, size_t n, bool *out,
		       tt_error *err)
{
	if (!root && v->native && tt_gitnat_index_has(v->native, relpaths, n, out) == 0)
		return 0;
	return ls_files_has(v, root ? root : v->root, relpaths, n, out, err);
}

/* ---- content at a revision ------------------------------------------- */

static int open_reader(tt_vcs *v, tt_git_reader **r, tt_error *err)
{
	int rc = tt_git_reader_open(r, v->exe, v->root, NULL, err);
	if (rc == 0)
		tt_git_reader_use(*r, v->native);
	return rc;
}

static int git_read_file_at(tt_vcs *v, const char *rev, const char *relpath, char **out,
			    size_t *len, tt_error *err)
{
	tt_git_reader *r = NULL;
	int rc;

	*out = NULL;
	if (len)
		*len = 0;
	if (bad_rev(rev))
		return refuse_rev(rev, err);
	if (!relpath || strpbrk(relpath, "\n\r"))
		return tt_error_set(err, TT_EVCS, "cannot read a path holding a line break: %s",
				    relpath ? relpath : "(none)");
	if ((rc = open_reader(v, &r, err)) == 0)
		rc = tt_git_reader_text_at(r, rev, relpath, out, len, err);
	tt_git_reader_close(r);
	return rc;
}

static int git_files_at_many(tt_vcs *v, const char *const *revs, size_t n, const char *reldir,
			     json_t **out, tt_error *err)
{
	tt_git_reader *r = NULL;
	json_t *result = NULL, *files = NULL;
	int rc = 0;

	*out = NULL;
	for (size_t i = 0; i < n; i++)
		if (bad_rev(revs[i]))
			return refuse_rev(revs[i], err);
	if (reldir && strpbrk(reldir, "\n\r"))
		return tt_error_set(err, TT_EVCS, "cannot read a directory holding a line break: %s", reldir);
	if (!(result = json_object()))
		return tt_error_oom(err);
	if (n && (rc = open_reader(v, &r, err)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		if ((rc = tt_git_reader_files_at(r, revs[i], reldir, &files, err)) < 0)
			goto done;
		if (json_object_set_new(result, revs[i], files) != 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	*out = result;
	result = NULL;
done:
	tt_git_reader_close(r);
	json_decref(result);
	return rc;
}

/* ---- history ---------------------------------------------------------- */

/* The non-blank lines of b (trimmed) appended to arr as strings. */
static int lines_into(json_t *arr, const tt_buf *b, tt_error *err)
{
	const char *p = b->ptr, *end = b->ptr + b->len;
	while (p < end) {
		const char *le = memchr(p, '\n', (size_t)(end - p));
		if (!le)
			le = end;
		const char *s = p, *e = le;
		while (s < e && (*s == ' ' || *s == '\t' || *s == '\r'))
			s++;
		while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
			e--;
		if (e > s && json_array_append_new(arr, json_stringn(s, (size_t)(e - s))) != 0)
			return tt_error_oom(err);
		p = le + (le < end);
	}
	return 0;
}

static int git_history_revs(tt_vcs *v, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	json_t *arr = json_array();
	int status = 0, rc;

	*out = NULL;
	if (!arr)
		return tt_error_oom(err);
	rc = git_try(v, (const char *const[]){ "rev-list", "--all", NULL }, &b, &status, err);
	if (rc == 0 && status == 0)
		rc = lines_into(arr, &b, err);
	if (rc == 0) {
		*out = arr;
		arr = NULL;
	}
	json_decref(arr);
	tt_buf_release(&b);
	return rc;
}

static int git_iter_history_files(tt_vcs *v, const char *reldir, tt_vcs_history_fn fn, void *ctx,
				  tt_error *err)
{
	json_t *revs = NULL, *files = NULL;
	tt_git_reader *r = NULL;
	int rc;

	if (reldir && strpbrk(reldir, "\n\r"))
		return tt_error_set(err, TT_EVCS, "cannot read a directory holding a line break: %s", reldir);
	if ((rc = git_history_revs(v, &revs, err)) < 0)
		return rc;
	if (json_array_size(revs) && (rc = open_reader(v, &r, err)) < 0)
		goto done;
	for (size_t i = 0; i < json_array_size(revs); i++) {
		const char *rev = json_string_value(json_array_get(revs, i));
		if ((rc = tt_git_reader_files_at(r, rev, reldir, &files, err)) < 0)
			goto done;
		rc = fn(ctx, rev, files, err);
		json_decref(files);
		files = NULL;
		if (rc != 0)
			goto done;
	}
done:
	tt_git_reader_close(r);
	json_decref(revs);
	return rc;
}

static int git_remotes(tt_vcs *v, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int status = 0, rc;

	if (!(*out = json_array()))
		return tt_error_oom(err);
	rc = git_try(v, (const char *const[]){ "remote", NULL }, &b, &status, err);
	if (rc == 0 && status == 0)
		rc = lines_into(*out, &b, err);
	tt_buf_release(&b);
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static int git_published_revs(tt_vcs *v, json_t **out, tt_error *err)
{
	tt_buf names = TT_BUF_INIT, shas = TT_BUF_INIT, one = TT_BUF_INIT, revs = TT_BUF_INIT;
	json_t *refs = NULL;
	int status = 0, rc;

	if (!(*out = json_array()) || !(refs = json_array())) {
		rc = tt_error_oom(err);
		goto done;
	}
	rc = git_try(v, (const char *const[]){ "for-each-ref", "--format=%(refname)", "refs/remotes/", NULL },
		     &names, &status, err);
	if (rc < 0 || status != 0 || (rc = lines_into(refs, &names, err)) < 0)
		goto done;
	size_t i;
	json_t *r;
	json_array_foreach(refs, i, r) {
		const char *ref = json_string_value(r);
		if (bad_rev(ref))
			continue;
		/* Every value the ref took; one without a reflog has none. */
		tt_buf_reset(&one);
		const char *args[] = { "reflog", "show", "--format=%H", "--end-of-options", ref, "--", NULL };
		if ((rc = git_try(v, args, &one, &status, err)) < 0)
			goto done;
		if (status == 0)
			tt_buf_put(&shas, one.ptr, one.len);
	}
	if (!shas.len)
		goto done;
	if ((rc = tt_buf_check(&shas, err, "reflog")) < 0)
		goto done;
	/* Those no ref reaches now, with their ancestors no ref reaches. */
	rc = tt_git_run_input(v->exe, v->root,
			      (const char *const[]){ "rev-list", "--ignore-missing", "--stdin", "--not", "--all",
						     NULL },
			      shas.ptr, shas.len, &revs, true, &status, err);
	if (rc == 0 && status == 0)
		rc = lines_into(*out, &revs, err);
done:
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	json_decref(refs);
	tt_buf_release(&names);
	tt_buf_release(&shas);
	tt_buf_release(&one);
	tt_buf_release(&revs);
	return rc;
}

static int git_held_revs(tt_vcs *v, json_t **out, tt_error *err)
{
	tt_buf revs = TT_BUF_INIT;
	int status = 0, rc;

	if (!(*out = json_array()))
		return tt_error_oom(err);
	rc = git_try(v, (const char *const[]){ "rev-list", "--reflog", "--not", "--all", NULL }, &revs,
		     &status, err);
	if (rc == 0 && status != 0)
		rc = tt_error_set(err, TT_EVCS, "cannot read the reflogs (git rev-list --reflog failed)");
	if (rc == 0)
		rc = lines_into(*out, &revs, err);
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	tt_buf_release(&revs);
	return rc;
}

/* How long listing one remote may take before it counts as unreachable. */
#define REMOTE_LIST_TIMEOUT_MS 60000

static int git_remote_unfetched(tt_vcs *v, const char *name, json_t **out, tt_error *err)
{
	static const char *const env_set[] = { "GIT_TERMINAL_PROMPT=0", "GIT_ASKPASS=", "SSH_ASKPASS=",
					       NULL };
	const char *argv[TT_GIT_NISO + 8];
	tt_proc_result r;
	tt_buf ids = TT_BUF_INIT, known = TT_BUF_INIT;
	json_t *refs = NULL;
	int rc, status = 0;

	*out = NULL;
	if (bad_rev(name))
		return tt_error_set(err, TT_EVCS, "not a remote name: %s", name ? name : "");
	argv[0] = v->exe;
	memcpy(argv + 1, tt_git_isolation, sizeof tt_git_isolation);
	size_t k = 1 + TT_GIT_NISO;
	argv[k++] = "ls-remote";
	argv[k++] = "--heads";
	argv[k++] = "--tags";
	argv[k++] = "--end-of-options";
	argv[k++] = name;
	argv[k] = NULL;
	tt_proc_opts opts = { .argv = argv, .cwd = v->root, .env_set = env_set,
			      .env_unset = tt_git_env_unset, .max_out = TT_GIT_OUTPUT_CAP,
			      .max_err = 1 << 20, .timeout_ms = REMOTE_LIST_TIMEOUT_MS };
	tt_proc_result_init(&r);
	if ((rc = tt_proc_run(&opts, &r, err)) < 0)
		goto done;
	if (r.timed_out || r.status != 0) {
		/* git's first line, with any user:password in a URL masked. */
		tt_buf why = TT_BUF_INIT;
		const char *p = r.timed_out ? "timed out" : r.err.len ? r.err.ptr : "failed";
		const char *end = p + strcspn(p, "\n");
		while (p < end) {
			const char *sep = strstr(p, "://");
			if (!sep || sep >= end) {
				tt_buf_put(&why, p, (size_t)(end - p));
				break;
			}
			sep += 3;
			tt_buf_put(&why, p, (size_t)(sep - p));
			size_t host = strcspn(sep, "/ \t'\"\n");
			const char *at = memchr(sep, '@', host);
			if (at) {
				tt_buf_puts(&why, "***");
				sep = at;
			}
			p = sep;
		}
		rc = tt_buf_check(&why, err, "git output");
		if (rc == 0)
			rc = tt_error_set(err, TT_EVCS, "cannot list remote %s: %s", name, why.ptr);
		tt_buf_release(&why);
		goto done;
	}
	/* "<oid>\t<ref>" per line: ask which oids this repository has. */
	if (!(refs = json_object())) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (const char *p = r.out.ptr, *end = r.out.ptr + r.out.len; p < end;) {
		const char *le = memchr(p, '\n', (size_t)(end - p)), *tab;
		if (!le)
			le = end;
		tab = memchr(p, '\t', (size_t)(le - p));
		if (tab && tab > p) {
			char *oid = tt_strndup(p, (size_t)(tab - p)), *ref = tt_strndup(tab + 1, (size_t)(le - tab - 1));
			if (!oid || !ref || (!json_object_get(refs, oid) &&
					     json_object_set_new(refs, oid, json_string(ref)) < 0)) {
				free(oid);
				free(ref);
				rc = tt_error_oom(err);
				goto done;
			}
			tt_buf_printf(&ids, "%s\n", oid);
			free(oid);
			free(ref);
		}
		p = le + 1;
	}
	if (!(*out = json_array())) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (ids.len) {
		if ((rc = tt_buf_check(&ids, err, "remote refs")) < 0 ||
		    (rc = tt_git_run_input(v->exe, v->root,
					   (const char *const[]){ "cat-file", "--batch-check=%(objectname)", NULL },
					   ids.ptr, ids.len, &known, false, &status, err)) < 0)
			goto done;
		/* One answer per line, in order: "<oid>" or "<oid> missing". */
		for (const char *p = known.ptr, *end = known.ptr + known.len; p < end;) {
			const char *le = memchr(p, '\n', (size_t)(end - p));
			if (!le)
				le = end;
			const char *sp = memchr(p, ' ', (size_t)(le - p));
			if (sp && (size_t)(le - sp) == strlen(" missing") && memcmp(sp, " missing", 8) == 0) {
				char *oid = tt_strndup(p, (size_t)(sp - p));
				json_t *ref = oid ? json_object_get(refs, oid) : NULL;
				free(oid);
				if (ref && json_array_append(*out, ref) < 0) {
					rc = tt_error_oom(err);
					goto done;
				}
			}
			p = le + 1;
		}
	}
done:
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	json_decref(refs);
	tt_buf_release(&ids);
	tt_buf_release(&known);
	tt_proc_result_release(&r);
	return rc;
}

static int git_commit_info(tt_vcs *v, const char *const *revs, size_t n, json_t **out, tt_error *err)
{
	return tt_git_commit_info(v->exe, v->root, NULL, revs, n, out, err);
}

static int git_refs(tt_vcs *v, json_t **out, tt_error *err)
{
	tt_buf head = TT_BUF_INIT;
	json_t *refs = NULL, *h = NULL;
	int status = 0, rc;

	*out = NULL;
	if ((rc = tt_git_refs(v->exe, v->root, NULL, &refs, err)) < 0)
		goto done;
	if ((rc = rev_of(v, "HEAD", &head, &status, err)) < 0)
		goto done;
	if (status == 0 && head.len) {
		if (!(h = json_pack("{s:s, s:s, s:s%}", "name", "HEAD", "kind", "head", "commit_id",
				    head.ptr, head.len)) ||
		    json_array_append(refs, h) != 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	*out = refs;
	refs = NULL;
done:
	json_decref(h);
	json_decref(refs);
	tt_buf_release(&head);
	return rc;
}

/* Read natively or not at all: without the native reader nothing is cached. */
static int git_alive_token(tt_vcs *v, char out[65])
{
	return v->native && tt_gitnat_tips_token(v->native, out) == 0 ? 1 : 0;
}

static int git_alive_commits(tt_vcs *v, const char *const *commits, size_t n, bool *out,
			     tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	const char **ids = NULL;
	size_t nids = 0, alloc = 0;
	int status = 0, rc;

	for (size_t i = 0; i < n; i++)
		out[i] = false;
	if (!n)
		return 0;
	/* walked from the refs, stopping once every one is met */
	if (v->native && tt_gitnat_reachable(v->native, commits, n, out) == 0)
		return 0;
	rc = git_try(v, (const char *const[]){ "rev-list", "--all", NULL }, &b, &status, err);
	if (rc < 0 || status != 0)
		goto done;
	/* split in place: every line one commit id */
	for (char *p = b.ptr, *end = b.ptr + b.len; p < end;) {
		char *le = memchr(p, '\n', (size_t)(end - p));
		if (le)
			*le = '\0';
		if (*p) {
			if (TT_ARRAY_GROW(ids, alloc, nids + 1) != 0) {
				rc = tt_error_oom(err);
				goto done;
			}
			ids[nids++] = p;
		}
		p = le ? le + 1 : end;
	}
	if (nids)
		qsort(ids, nids, sizeof *ids, tt_cmp_cstr);
	for (size_t i = 0; i < n; i++)
		out[i] = nids && commits[i] && bsearch(&commits[i], ids, nids, sizeof *ids, tt_cmp_cstr) != NULL;
done:
	free(ids);
	tt_buf_release(&b);
	return rc;
}

static int git_is_ancestor(tt_vcs *v, const char *ancestor, const char *rev, bool *out, tt_error *err)
{
	int status = 1, rc;
	*out = false;
	if (bad_rev(ancestor))
		return refuse_rev(ancestor, err);
	if (bad_rev(rev))
		return refuse_rev(rev, err);
	const char *args[] = { "merge-base", "--is-ancestor", "--end-of-options", ancestor, rev, NULL };
	if ((rc = git_try(v, args, NULL, &status, err)) == 0)
		*out = status == 0;
	return rc;
}

/* ---- the working copy ------------------------------------------------- */

static int git_workspace_roots(tt_vcs *v, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	json_t *roots = json_array();
	int status = 0, rc;

	*out = NULL;
	if (!roots)
		return tt_error_oom(err);
	rc = git_try(v, (const char *const[]){ "worktree", "list", "--porcelain", NULL }, &b, &status, err);
	if (rc < 0)
		goto done;
	for (const char *p = b.ptr, *end = b.ptr + b.len; p < end;) {
		const char *le = memchr(p, '\n', (size_t)(end - p));
		if (!le)
			le = end;
		if ((size_t)(le - p) > 9 && memcmp(p, "worktree ", 9) == 0) {
			const char *s = p + 9, *e = le;
			while (s < e && (*s == ' ' || *s == '\t'))
				s++;
			while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r'))
				e--;
			if (json_array_append_new(roots, json_stringn(s, (size_t)(e - s))) != 0) {
				rc = tt_error_oom(err);
				goto done;
			}
		}
		p = le + (le < end);
	}
	if (!json_array_size(roots) && json_array_append_new(roots, json_string(v->root)) != 0) {
		rc = tt_error_oom(err);
		goto done;
	}
	*out = roots;
	roots = NULL;
done:
	json_decref(roots);
	tt_buf_release(&b);
	return rc;
}

/* A file name the atomic writers leave when killed (".<name>[.<hex>].tmp",
 * tether-vcs's and ours): never part of a dataset commit. */
static bool temp_name(const char *path)
{
	const char *base = strrchr(path, '/');
	base = base ? base + 1 : path;
	size_t n = strlen(base);
	return base[0] == '.' && n > 5 && strcmp(base + n - 4, ".tmp") == 0;
}

static int git_dirty(tt_vcs *v, const char *const *relpaths, size_t n, bool *out, tt_error *err)
{
	argv_list a = { 0 };
	tt_buf b = TT_BUF_INIT;
	int rc;

	*out = false;
	av_add(&a, "--literal-pathspecs");
	av_add(&a, "--no-optional-locks"); /* a status must never leave index.lock */
	av_add(&a, "status");
	av_add(&a, "--porcelain");
	av_add(&a, "--untracked-files=all");
	av_add(&a, "-z");
	av_add(&a, "--");
	av_add_all(&a, relpaths, n);
	/* "XY path\0" (a rename or copy: "XY new\0old\0"); an untracked
	 * temporary a killed write left is nothing to commit (temp_name). */
	if ((rc = git_av(v, &a, &b, err)) == 0) {
		for (size_t i = 0; i < b.len && !*out;) {
			const char *e = b.ptr + i;
			size_t l = strnlen(e, b.len - i);
			bool untracked_temp = l > 3 && e[0] == '?' && e[1] == '?' && temp_name(e + 3);
			*out = l > 0 && !untracked_temp;
			i += l + 1;
			if (l > 0 && (e[0] == 'R' || e[0] == 'C'))
				i += strnlen(b.ptr + i, i < b.len ? b.len - i : 0) + 1;
		}
	}
	av_release(&a);
	tt_buf_release(&b);
	return rc;
}

static int git_bookmark_set(tt_vcs *v, const char *name, const char *rev, tt_error *err);

/* Whether a directory holds anything git tracks: a file or symlink at any
 * depth.  An empty directory (the objects directory once the last object is
 * removed) is never in a commit's tree. */
static bool holds_a_file(const char *dir, int depth)
{
	DIR *d = depth < 64 ? opendir(dir) : NULL;
	struct dirent *e;
	struct stat st;
	bool found = false;
	if (!d)
		return depth >= 64;
	while (!found && (e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		char *p = tt_path_join(dir, e->d_name);
		if (!p)
			found = true; /* out of memory: assume it does, and check */
		else if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
			found = holds_a_file(p, depth + 1);
		else
			found = true;
		free(p);
	}
	closedir(d);
	return found;
}

/* The paths (of n) present in the working tree but absent from commit's
 * tree, listed into missing ("a, b, c, ..."); *count how many. */
static int missing_from(tt_vcs *v, const char *commit, const char *const *relpaths, size_t n,
			size_t *count, tt_buf *missing, tt_error *err)
{
	tt_git_reader *r = NULL;
	char *spec = NULL;
	char type[16], oid[65];
	bool found;
	int rc = 0;

	*count = 0;
	for (size_t i = 0; i < n; i++) {
		char *abs = tt_path_join(v->root, relpaths[i]);
		bool present = abs && tt_exists(abs) && (!tt_is_dir(abs) || holds_a_file(abs, 0));
		free(abs);
		if (!present || strpbrk(relpaths[i], "\n\r"))
			continue;
		if (!r && (rc = open_reader(v, &r, err)) < 0)
			goto done;
		free(spec);
		if (!(spec = tt_asprintf("%s:%s", commit, relpaths[i]))) {
			rc = tt_error_oom(err);
			goto done;
		}
		if ((rc = tt_git_reader_fetch(r, spec, &found, type, oid, NULL, err)) < 0)
			goto done;
		if (!found) {
			if (*count < 3)
				tt_buf_printf(missing, "%s%s", *count ? ", " : "", relpaths[i]);
			else if (*count == 3)
				tt_buf_puts(missing, ", ...");
			++*count;
		}
	}
	rc = tt_buf_check(missing, err, "paths");
done:
	free(spec);
	tt_git_reader_close(r);
	return rc;
}

/*
 * Unstage the temporaries `add` just staged (newly added files only): an
 * older .tether/.gitignore does not ignore them, and a crash's leftover
 * must not reach history.  A temporary already tracked keeps whatever add
 * staged (its deletion, typically).
 */
static int unstage_temps(tt_vcs *v, const char *const *relpaths, size_t n, tt_error *err)
{
	argv_list diff = { 0 }, reset = { 0 };
	tt_buf out = TT_BUF_INIT;
	int rc;
	av_add(&diff, "--literal-pathspecs");
	av_add(&diff, "diff");
	av_add(&diff, "--cached");
	av_add(&diff, "--name-only");
	av_add(&diff, "--diff-filter=A");
	av_add(&diff, "-z");
	av_add(&diff, "--");
	av_add_all(&diff, relpaths, n);
	if ((rc = git_av(v, &diff, &out, err)) < 0)
		goto done;
	av_add(&reset, "--literal-pathspecs");
	av_add(&reset, "reset");
	av_add(&reset, "-q");
	av_add(&reset, "--");
	size_t base = reset.n;
	for (size_t i = 0; i < out.len;) {
		const char *name = out.ptr + i;
		size_t l = strnlen(name, out.len - i);
		if (i + l < out.len && temp_name(name))
			av_add(&reset, name);
		i += l + 1;
	}
	if (reset.n > base || reset.oom)
		rc = git_av(v, &reset, NULL, err);
done:
	av_release(&diff);
	av_release(&reset);
	tt_buf_release(&out);
	return rc;
}

static int git_commit(tt_vcs *v, const char *const *relpaths, size_t n, const char *message,
		      const char *advance, char **out, tt_error *err)
{
	argv_list add = { 0 }, commit = { 0 }, reset = { 0 };
	tt_buf there = TT_BUF_INIT, missing = TT_BUF_INIT;
	char *head = NULL;
	size_t nmissing = 0;
	int status = 0, rc;

	*out = NULL;
	if (!n)
		return tt_error_set(err, TT_EUSAGE, "nothing to commit: no paths given");
	if (advance && bad_rev(advance))
		return refuse_name(advance, err);
	/* Pathspecs are literal: an object key may hold '*', '?' or '['. */
	av_add(&add, "--literal-pathspecs");
	av_add(&add, "add");
	av_add(&add, "--");
	av_add_all(&add, relpaths, n);
	av_add(&commit, "--literal-pathspecs");
	av_add(&commit, "commit");
	av_add(&commit, "-m");
	av_add(&commit, message ? message : "");
	av_add(&commit, "--");
	av_add_all(&commit, relpaths, n);
	av_add(&reset, "--literal-pathspecs");
	av_add(&reset, "reset");
	av_add(&reset, "-q");
	av_add(&reset, "--");
	av_add_all(&reset, relpaths, n);
	if (add.oom || commit.oom || reset.oom) {
		rc = tt_error_oom(err);
		goto done;
	}
	rc = git_av(v, &add, NULL, err);
	if (rc == 0)
		rc = unstage_temps(v, relpaths, n, err);
	if (rc == 0)
		rc = git_av(v, &commit, NULL, err);
	if (rc < 0) {
		/* A hook, a missing identity or an ignored path refused it.  The
		 * index still holds what add staged; left there, the user's next
		 * plain `git commit` would record it. */
		if (rc == TT_EVCS) {
			tt_error ignored = TT_ERROR_INIT;
			tt_git_run(v->exe, v->root, reset.v, NULL, true, &status, &ignored);
			tt_error_clear(&ignored);
		}
		goto done;
	}
	if ((rc = tt_vcs_current_rev(v, &head, err)) < 0)
		goto done;
	if (advance) {
		char *ref = tt_asprintf("refs/heads/%s^{commit}", advance);
		if (!ref) {
			rc = tt_error_oom(err);
			goto done;
		}
		rc = rev_of(v, ref, &there, &status, err);
		free(ref);
		if (rc < 0 || ((status != 0 || strcmp(there.ptr, head) != 0) &&
			       (rc = git_bookmark_set(v, advance, head, err)) < 0))
			goto done;
	}
	if ((rc = missing_from(v, head, relpaths, n, &nmissing, &missing, err)) < 0)
		goto done;
	*out = head;
	head = NULL;
	if (nmissing) {
		rc = tt_error_set(err, TT_EVCS, "git commit %.12s does not contain %zu of the committed "
				  "path(s) (%s); is the directory ignored by git?", *out, nmissing,
				  missing.ptr);
		tt_error_hint(err, "see `git check-ignore -v <path>`; fix that and commit again");
	}
done:
	free(head);
	av_release(&add);
	av_release(&commit);
	av_release(&reset);
	tt_buf_release(&there);
	tt_buf_release(&missing);
	return rc;
}

static int git_check_commit(tt_vcs *v, tt_error *err)
{
	return tt_git_no_lock_left(v->exe, v->root, "index.lock", err);
}

static int git_unstage(tt_vcs *v, const char *const *relpaths, size_t n, tt_error *err)
{
	argv_list a = { 0 };
	int rc;
	av_add(&a, "--literal-pathspecs");
	av_add(&a, "reset");
	av_add(&a, "-q");
	av_add(&a, "--");
	av_add_all(&a, relpaths, n);
	rc = a.oom ? tt_error_oom(err) : git_av(v, &a, NULL, err);
	av_release(&a);
	return rc;
}

static int git_position(tt_vcs *v, json_t **out, tt_error *err)
{
	tt_buf head = TT_BUF_INIT, branch = TT_BUF_INIT;
	int st_head = 0, st_branch = 0, rc;

	*out = NULL;
	/* An unborn branch (no commits yet) has a symbolic HEAD but no commit. */
	if ((rc = rev_of(v, "HEAD", &head, &st_head, err)) < 0 ||
	    (rc = git_try(v, (const char *const[]){ "symbolic-ref", "--short", "-q", "HEAD", NULL },
			  &branch, &st_branch, err)) < 0)
		goto done;
	chomp(&branch);
	json_t *commit = st_head == 0 && head.len ? json_stringn(head.ptr, head.len) : json_null();
	json_t *name = st_branch == 0 && branch.len ? json_stringn(branch.ptr, branch.len) : json_null();
	*out = json_pack("{s:s, s:O, s:o, s:o}", "kind", "git", "id", commit, "commit", commit,
			 "branch", name);
	if (!*out)
		rc = tt_error_oom(err);
done:
	tt_buf_release(&head);
	tt_buf_release(&branch);
	return rc;
}

static int git_goto_position(tt_vcs *v, const json_t *position, tt_error *err)
{
	const char *kind = json_string_value(json_object_get(position, "kind"));
	const char *branch = json_string_value(json_object_get(position, "branch"));
	const char *commit = json_string_value(json_object_get(position, "commit"));

	if (!kind || strcmp(kind, "git") != 0)
		return tt_error_set(err, TT_EVCS, "position was not recorded by git");
	if (branch && *branch) {
		if (bad_rev(branch))
			return refuse_name(branch, err);
		return git(v, (const char *const[]){ "switch", "--end-of-options", branch, NULL }, NULL, err);
	}
	if (commit && *commit) {
		if (bad_rev(commit))
			return refuse_rev(commit, err);
		return git(v, (const char *const[]){ "switch", "--detach", "--end-of-options", commit, NULL },
			   NULL, err);
	}
	return 0;
}

static int git_uncommit(tt_vcs *v, const char *commit, bool *out, tt_error *err)
{
	tt_buf head = TT_BUF_INIT, parent = TT_BUF_INIT;
	char *spec = NULL;
	int status = 0, rc;

	*out = false;
	if ((rc = rev_of(v, "HEAD", &head, &status, err)) < 0)
		goto done;
	if (status != 0 || !commit || strcmp(head.ptr, commit) != 0)
		goto done;
	if (!(spec = tt_asprintf("%s^", head.ptr))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = rev_of(v, spec, &parent, &status, err)) < 0)
		goto done;
	if (status == 0 && parent.len)
		rc = git(v, (const char *const[]){ "reset", "--soft", parent.ptr, NULL }, NULL, err);
	else  /* a root commit: the branch goes back to unborn, the tree stays */
		rc = git(v, (const char *const[]){ "update-ref", "-d", "HEAD", NULL }, NULL, err);
	*out = rc == 0;
done:
	free(spec);
	tt_buf_release(&head);
	tt_buf_release(&parent);
	return rc;
}

static int git_new(tt_vcs *v, const char *rev, tt_error *err)
{
	tt_buf there = TT_BUF_INIT;
	char *sha = NULL, *ref = NULL, *name = NULL;
	int status = 0, rc;

	if (!rev)
		return 0;  /* git has no empty working-copy commit: stay on the branch */
	if (bad_rev(rev))
		return refuse_rev(rev, err);
	/* Exactly a local branch (not `main~1`, which rev-parse would resolve) */
	if (!(ref = tt_asprintf("refs/heads/%s", rev))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = git_try(v, (const char *const[]){ "show-ref", "--verify", "--quiet", ref, NULL }, NULL,
			  &status, err)) < 0)
		goto done;
	if (status == 0) {
		rc = git(v, (const char *const[]){ "switch", "--end-of-options", rev, NULL }, NULL, err);
		goto done;
	}
	/* A commit, a tag, another commit-ish: never leave HEAD detached, or the
	 * commits made here become unreachable once the user switches away. */
	if ((rc = git_resolve(v, rev, &sha, err)) < 0)
		goto done;
	for (int k = 1; k < 1000; k++) {
		free(name);
		free(ref);
		ref = NULL;
		name = k == 1 ? tt_asprintf("tether/%.12s", sha) : tt_asprintf("tether/%.12s-%d", sha, k);
		if (!name || !(ref = tt_asprintf("refs/heads/%s", name))) {
			rc = tt_error_oom(err);
			goto done;
		}
		if ((rc = rev_of(v, ref, &there, &status, err)) < 0)
			goto done;
		if (status != 0) {
			rc = git(v, (const char *const[]){ "switch", "-c", name, sha, NULL }, NULL, err);
			goto done;
		}
		if (strcmp(there.ptr, sha) == 0) {
			rc = git(v, (const char *const[]){ "switch", "--end-of-options", name, NULL }, NULL, err);
			goto done;
		}
		/* taken and moved on: a sibling */
	}
	rc = tt_error_set(err, TT_EVCS, "too many tether/%.12s branches", sha);
done:
	free(sha);
	free(ref);
	free(name);
	tt_buf_release(&there);
	return rc;
}

/* ---- bookmarks -------------------------------------------------------- */

static int git_bookmarks(tt_vcs *v, json_t **out, tt_error *err)
{
	json_t *refs = NULL, *result = NULL, *r;
	size_t i;
	int rc;

	*out = NULL;
	if (v->native) {
		tt_gitnat_refent *heads = NULL;
		size_t nheads = 0;
		if (tt_gitnat_refs(v->native, "refs/heads/", &heads, &nheads) == 0) {
			rc = 0;
			if (!(result = json_object()))
				rc = tt_error_oom(err);
			for (size_t k = 0; result && k < nheads; k++) {
				const char *name = heads[k].name + 11;
				if (strncmp(name, "tether/", 7) == 0)
					continue;
				if (json_object_set_new(result, name, json_string(heads[k].hex)) != 0) {
					rc = tt_error_oom(err);
					json_decref(result);
					result = NULL;
				}
			}
			tt_gitnat_refs_free(heads, nheads);
			*out = result;
			return rc;
		}
	}
	if ((rc = tt_git_refs(v->exe, v->root, NULL, &refs, err)) < 0)
		return rc;
	if (!(result = json_object())) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* tether/<sha12> branches only park a checked-out commit (see new) */
	json_array_foreach(refs, i, r) {
		const char *name = json_string_value(json_object_get(r, "name"));
		const char *kind = json_string_value(json_object_get(r, "kind"));
		if (!name || !kind || strcmp(kind, "branch") != 0 || strncmp(name, "tether/", 7) == 0)
			continue;
		if (json_object_set(result, name, json_object_get(r, "commit_id")) != 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	*out = result;
	result = NULL;
done:
	json_decref(result);
	json_decref(refs);
	return rc;
}

static int git_bookmark_set(tt_vcs *v, const char *name, const char *rev, tt_error *err)
{
	char *commit = NULL, *current = NULL, *ref = NULL;
	int rc;

	if (bad_rev(name))
		return refuse_name(name, err);
	if ((rc = git_resolve(v, rev, &commit, err)) < 0 ||
	    (rc = git_current_bookmark(v, &current, err)) < 0)
		goto done;
	if (current && strcmp(current, name) == 0) {
		/* The checked-out branch: HEAD and the tree move (--keep refuses
		 * rather than overwrite local edits). */
		rc = git(v, (const char *const[]){ "reset", "--keep", commit, NULL }, NULL, err);
		goto done;
	}
	if (!(ref = tt_asprintf("refs/heads/%s", name))) {
		rc = tt_error_oom(err);
		goto done;
	}
	rc = git(v, (const char *const[]){ "update-ref", ref, commit, NULL }, NULL, err);
done:
	free(commit);
	free(current);
	free(ref);
	return rc;
}

static int git_bookmark_delete(tt_vcs *v, const char *name, tt_error *err)
{
	if (bad_rev(name))
		return refuse_name(name, err);
	return git(v, (const char *const[]){ "branch", "-D", "--end-of-options", name, NULL }, NULL, err);
}

static void git_free(tt_vcs *v)
{
	tt_gitnat_close(v->native);
	free(v->root);
	free(v->shared_dir);
	free(v->exe);
	free(v);
}

static const tt_vcs_ops git_ops = {
	.kind = "git",
	.working_rev = "HEAD",
	.current_bookmark = git_current_bookmark,
	.check_bookmark_name = git_check_bookmark_name,
	.new_bookmark = git_new_bookmark,
	.park = git_park,
	.tracked = git_tracked,
	.resolve = git_resolve,
	.is_ancestor = git_is_ancestor,
	.read_file_at = git_read_file_at,
	.files_at_many = git_files_at_many,
	.history_revs = git_history_revs,
	.iter_history_files = git_iter_history_files,
	.commit_info = git_commit_info,
	.refs = git_refs,
	.remotes = git_remotes,
	.remote_unfetched = git_remote_unfetched,
	.published_revs = git_published_revs,
	.held_revs = git_held_revs,
	.alive_commits = git_alive_commits,
	.alive_token = git_alive_token,
	.workspace_roots = git_workspace_roots,
	.dirty = git_dirty,
	.commit = git_commit,
	.check_commit = git_check_commit,
	.unstage = git_unstage,
	.position = git_position,
	.goto_position = git_goto_position,
	.uncommit = git_uncommit,
	.new = git_new,
	.bookmarks = git_bookmarks,
	.bookmark_set = git_bookmark_set,
	.bookmark_delete = git_bookmark_delete,
	.exclusive_commits = tt_git_exclusive_commits,
	.remote_counterparts = tt_git_remote_counterparts,
	.forget_workspace = tt_git_forget_workspace,
	.abandon = tt_git_abandon,
	.drop_bookmark = tt_git_drop_bookmark,
	.rewrite_history = tt_git_rewrite_history,
	.free = git_free,
};

int tt_git_open(tt_vcs **out, char *git_root, const char *exe, tt_error *err)
{
	tt_vcs *v = NULL;
	tt_buf b = TT_BUF_INIT;
	int rc = 0;

	*out = NULL;
	if (!(v = tt_calloc(1, sizeof *v))) {
		free(git_root);
		return tt_error_oom(err);
	}
	v->ops = &git_ops;
	v->root = git_root;
	if (!exe || !*exe)
		exe = getenv("TETHER_GIT");
	if (!exe || !*exe)
		exe = "git";
	v->exe = tt_proc_which(exe);
	if (!v->exe) {
		rc = tt_error_set(err, TT_EVCS, "executable not found: %s", exe);
		tt_error_hint(err, "install git 2.38 or newer, or name it with TETHER_GIT or "
				   ".tether/secrets.toml [vcs] git_path");
		goto done;
	}
	/* Read natively when the repository allows; the version is checked
	 * before the first git this process runs. */
	if ((v->native = tt_gitnat_open(v->root, NULL)) != NULL) {
		if (!(v->shared_dir = tt_strdup(tt_gitnat_common_dir(v->native))))
			rc = tt_error_oom(err);
		else
			*out = v, v = NULL;
		goto done;
	}
	if ((rc = tt_git_run(v->exe, v->root, (const char *const[]){ "rev-parse", "--git-common-dir", NULL },
			     &b, false, NULL, err)) < 0)
		goto done;
	chomp(&b);
	{
		char *joined = b.ptr[0] == '/' ? tt_strdup(b.ptr) : tt_path_join(v->root, b.ptr);
		v->shared_dir = joined ? tt_realpath(joined) : NULL;
		free(joined);
		if (!v->shared_dir) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	*out = v;
	v = NULL;
done:
	tt_vcs_free(v);
	tt_buf_release(&b);
	return rc;
}
