/*
 * backends/git/gitobj.c - the git backend (see gitobj.h), with the semantics of
 * tether-vcs's GitBackend: a commit sha is the state, a lightweight tag
 * "tether.<id>" the pin, a branch off it the fork.
 *
 * Everything here runs git in a repository a manifest names, and a manifest
 * arrives with every clone.  So: the path is checked (absolute, outside the
 * dataset's checkout) at every operation; every value that lands on git's
 * command line from a manifest, a state or a plan is refused when it starts
 * with '-' and follows --end-of-options; a sha must be hex; and every call
 * carries the hardening below, so the repository's own config can run
 * nothing (no hooks, no fsmonitor, no ext:: transport).
 *
 * Thread safety: the backend holds nothing but the executable's name and a
 * once-only version check (under a mutex); every operation is a sequence of
 * git processes.  Conditional ref moves are git's own compare-and-swap
 * (`update-ref <ref> <new> <old>`), so racing forks leave exactly one
 * winner whatever process they come from.
 */
#include "backends/git/gitobj.h"
#include "backends/kit.h"
#include "vcs/git_native.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"
#include "util/proc.h"
#include "vcs/git_exec.h"

#define KIND "git"
#define PIN_PREFIX "tether."
#define OWNER_KEY "tether.owner"
/* update-ref's old value for "the ref must not exist yet". */
#define ZERO_SHA "0000000000000000000000000000000000000000"
#define MIN_MAJOR 2
#define MIN_MINOR 38
#define GIT_OUT_CAP ((size_t)512 << 20)
#define GIT_ERR_CAP ((size_t)4 << 20)
/* A ref transaction that lost a lock race to a writer that left the ref
 * where it was is tried again (the compare-and-swap itself still decides). */
#define LOCK_RETRIES 40
#define LOCK_RETRY_NS (25L * 1000 * 1000)

/*
 * Config for every call.  A repository's config may name programs to run
 * (core.fsmonitor, hooks, ext:: transports), and git takes any directory
 * holding HEAD, objects/ and refs/ for a bare repository; tether needs none
 * of it.  Colour, path quoting and log signatures off keep the output
 * parseable whatever the user's config says.
 */
static const char *const hardened[] = {
	"-c", "core.fsmonitor=false",      "-c", "core.hooksPath=/dev/null",
	"-c", "protocol.ext.allow=never",  "-c", "safe.bareRepository=explicit",
	"-c", "color.ui=never",            "-c", "core.quotePath=false",
	"-c", "log.showSignature=false",
};
#define NHARDENED (sizeof hardened / sizeof hardened[0])

/* The fixed identity and dates of the root commit `create` makes. */
static const char *const root_env[] = {
	"GIT_AUTHOR_NAME=tether",
	"GIT_AUTHOR_EMAIL=tether@localhost",
	"GIT_AUTHOR_DATE=2000-01-01T00:00:00+00:00",
	"GIT_COMMITTER_NAME=tether",
	"GIT_COMMITTER_EMAIL=tether@localhost",
	"GIT_COMMITTER_DATE=2000-01-01T00:00:00+00:00",
	NULL,
};

typedef struct gitobj {
	char *exe;            /* git: a resolved path, or the name as given */
	char *jj;             /* jj_path of the config / TETHER_JJ, or NULL (PATH) */
	pthread_mutex_t lock; /* guards version_ok */
	bool version_ok;
} gitobj;

/* --- errors and small strings ------------------------------------------------- */


/* The ASCII characters Python's str.strip() removes (\x1c-\x1f included). */
static bool py_space(unsigned char c)
{
	return c == ' ' || (c >= '\t' && c <= '\r') || (c >= 0x1c && c <= 0x1f);
}

/* A stripped copy of s[0..len). */
static char *strip_dup(const char *s, size_t len)
{
	while (len && py_space((unsigned char)*s)) {
		s++;
		len--;
	}
	while (len && py_space((unsigned char)s[len - 1]))
		len--;
	return tt_strndup(s, len);
}

/* Python's str.splitlines() over text: each call yields the next line. */
typedef struct lines {
	const char *p, *end;
} lines;

static lines lines_of(const char *s)
{
	return (lines){ s, s + strlen(s) };
}

static bool line_next(lines *it, const char **s, size_t *n)
{
	const char *q = it->p;
	if (it->p >= it->end)
		return false;
	while (q < it->end) {
		unsigned char c = (unsigned char)*q;
		size_t brk = 0;
		if (c == '\n' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e)
			brk = 1;
		else if (c == '\r')
			brk = q + 1 < it->end && q[1] == '\n' ? 2 : 1;
		else if (c == 0xc2 && q + 1 < it->end && (unsigned char)q[1] == 0x85)
			brk = 2;
		else if (c == 0xe2 && q + 2 < it->end && (unsigned char)q[1] == 0x80 &&
			 ((unsigned char)q[2] == 0xa8 || (unsigned char)q[2] == 0xa9))
			brk = 3;
		if (brk) {
			*s = it->p;
			*n = (size_t)(q - it->p);
			it->p = q + brk;
			return true;
		}
		q++;
	}
	*s = it->p;
	*n = (size_t)(q - it->p);
	it->p = q;
	return true;
}

/* A git positional argument from a manifest, a state or a plan: a value
 * starting with '-' would be read as an option.  Every call also says
 * --end-of-options; this makes the refusal a clear error instead of
 * whatever git does with `--output=FILE`. */
static int guard(const char *value, const char *what, tt_error *err)
{
	if (value && value[0] && value[0] != '-')
		return 0;
	char *r = tt_pyv_repr_dup(value);
	KERR(err, TT_EBACKEND, "git %s %s looks like an option; refused", what, r ? r : "?");
	free(r);
	return TT_EBACKEND;
}

/* A commit id from a state: 4 to 64 lowercase hex digits, so it can never
 * be an option. */
static bool hex_sha(const char *s)
{
	size_t n = strlen(s);
	if (n < 4 || n > 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static int check_sha(const char *text, tt_error *err)
{
	if (hex_sha(text))
		return 0;
	char *r = tt_pyv_repr_dup(text);
	KERR(err, TT_EBACKEND, "not a git commit id: %s", r ? r : "?");
	free(r);
	return TT_EBACKEND;
}

/* The state's `sha`, checked. */
static int state_sha(const json_t *state, char **out, tt_error *err)
{
	*out = tt_pyv_str_dup(json_object_get(state, "sha"));
	if (!*out)
		return KOOM(err);
	if (check_sha(*out, err) < 0) {
		free(*out);
		*out = NULL;
		return TT_EBACKEND;
	}
	return 0;
}

/* --- the executable and the runner ----------------------------------------- */

/* Digits at *p (saturating), *p moved past them; false when none. */
static bool read_number(const char **p, long *v)
{
	const char *s = *p;
	if (*s < '0' || *s > '9')
		return false;
	for (*v = 0; *s >= '0' && *s <= '9'; s++)
		*v = *v > 100000000L ? *v : *v * 10 + (*s - '0');
	*p = s;
	return true;
}

/* `git --version` says 2.38 or newer; a banner without a version passes (a
 * custom build), as tether-vcs lets it. */
static int check_version(const char *exe, tt_error *err)
{
	const char *const argv[] = { exe, "--version", NULL };
	tt_proc_opts opts = { .argv = argv, .env_unset = tt_git_env_unset, .max_out = 1 << 16,
			      .max_err = 1 << 20 };
	tt_proc_result r;
	int rc;

	tt_proc_result_init(&r);
	rc = tt_proc_run(&opts, &r, err);
	if (rc == TT_ENOTFOUND) {
		rc = KERR(err, TT_EBACKEND, "executable not found: %s", exe);
		tt_error_hint(err, "install git 2.38 or newer, or name it with TETHER_GIT or "
				   ".tether/secrets.toml [vcs] git_path");
		goto done;
	}
	if (rc < 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	if (r.status != 0) {
		char *why = strip_dup(r.err.ptr, r.err.len);
		rc = KERR(err, TT_EBACKEND, "command failed (%s --version): %s", exe, why ? why : "");
		free(why);
		goto done;
	}
	/* The first "N.N[.N]" of the banner (tether-vcs's (\d+)\.(\d+)(?:\.(\d+))?). */
	for (const char *p = r.out.ptr; *p; p++) {
		const char *q = p;
		long maj, min, pat;
		if (!read_number(&q, &maj))
			continue;
		if (q[0] == '.')
			q++;
		if (q[-1] != '.' || !read_number(&q, &min)) {
			p = q - 1; /* no version starts inside this run of digits */
			continue;
		}
		if (q[0] == '.' && q[1] >= '0' && q[1] <= '9') {
			q++;
			read_number(&q, &pat);
		}
		if (maj < MIN_MAJOR || (maj == MIN_MAJOR && min < MIN_MINOR))
			rc = KERR(err, TT_EBACKEND,
				  "git %.*s is too old: tether needs git %d.%d.0 or newer (%s)",
				  (int)(q - p), p, MIN_MAJOR, MIN_MINOR, exe);
		break;
	}
done:
	tt_proc_result_release(&r);
	return rc;
}

/* Once per backend: safe.bareRepository means nothing to an older git. */
static int require_version(tt_backend *b, tt_error *err)
{
	gitobj *g = b->impl;
	int rc = 0;
	pthread_mutex_lock(&g->lock);
	if (!g->version_ok) {
		rc = check_version(g->exe, err);
		g->version_ok = rc == 0;
	}
	pthread_mutex_unlock(&g->lock);
	return rc;
}

/* Run git in repo (-C; NULL: none) with the hardening; r gets the result
 * whatever the exit status.  env_set: extra "NAME=value" entries. */
static int git_exec(tt_backend *b, const char *repo, const char *const *args,
		    const char *const *env_set, tt_proc_result *r, tt_error *err)
{
	gitobj *g = b->impl;
	size_t nargs = 0, i = 0;
	const char **argv = NULL;
	int rc;

	if ((rc = require_version(b, err)) < 0)
		return rc;
	while (args[nargs])
		nargs++;
	if (!(argv = tt_calloc(nargs + NHARDENED + 4, sizeof *argv)))
		return KOOM(err);
	argv[i++] = g->exe;
	for (size_t k = 0; k < NHARDENED; k++)
		argv[i++] = hardened[k];
	if (repo) {
		argv[i++] = "-C";
		argv[i++] = repo;
	}
	for (size_t k = 0; k < nargs; k++)
		argv[i++] = args[k];
	argv[i] = NULL;
	tt_proc_opts opts = { .argv = argv, .env_set = env_set, .env_unset = tt_git_env_unset,
			      .max_out = GIT_OUT_CAP, .max_err = GIT_ERR_CAP };
	rc = tt_proc_run(&opts, r, err);
	if (rc == TT_ENOTFOUND)
		rc = KERR(err, TT_EBACKEND, "executable not found: %s", g->exe);
	else if (rc < 0)
		tt_error_object(err, NULL, KIND);
	free(argv);
	return rc;
}

/* "git <args> failed: <stderr>", as tether-vcs words a failed call. */
static int git_failed(const char *const *args, const tt_proc_result *r, tt_error *err)
{
	tt_buf cmd = TT_BUF_INIT;
	char *why = strip_dup(r->err.ptr, r->err.len);
	for (size_t i = 0; args[i]; i++)
		tt_buf_printf(&cmd, "%s%s", i ? " " : "", args[i]);
	if (cmd.failed || !why) {
		tt_buf_release(&cmd);
		free(why);
		return KOOM(err);
	}
	KERR(err, TT_EBACKEND, "git %s failed: %s", cmd.ptr, why);
	tt_git_lock_hint(err, why, "that repository");
	tt_buf_release(&cmd);
	free(why);
	return TT_EBACKEND;
}

/*
 * Run git and fail on a non-zero exit.  *out (may be NULL): stdout,
 * stripped.  env_set as for git_exec.
 */
static int git_run_env(tt_backend *b, const char *repo, const char *const *args,
		       const char *const *env_set, char **out, tt_error *err)
{
	tt_proc_result r;
	int rc;
	if (out)
		*out = NULL;
	tt_proc_result_init(&r);
	rc = git_exec(b, repo, args, env_set, &r, err);
	if (rc == 0 && r.status != 0)
		rc = git_failed(args, &r, err);
	if (rc == 0 && out && !(*out = strip_dup(r.out.ptr, r.out.len)))
		rc = KOOM(err);
	tt_proc_result_release(&r);
	return rc;
}

static int git_run(tt_backend *b, const char *repo, const char *const *args, char **out,
		   tt_error *err)
{
	return git_run_env(b, repo, args, NULL, out, err);
}

/* Run git whatever its exit status: *out stdout stripped (may be NULL),
 * *status the exit status, *errtext (may be NULL) stderr stripped. */
static int git_try(tt_backend *b, const char *repo, const char *const *args, char **out,
		   int *status, char **errtext, tt_error *err)
{
	tt_proc_result r;
	int rc;
	if (out)
		*out = NULL;
	if (errtext)
		*errtext = NULL;
	*status = -1;
	tt_proc_result_init(&r);
	rc = git_exec(b, repo, args, NULL, &r, err);
	if (rc == 0) {
		*status = r.status;
		if (out && !(*out = strip_dup(r.out.ptr, r.out.len)))
			rc = KOOM(err);
		if (rc == 0 && errtext && !(*errtext = strip_dup(r.err.ptr, r.err.len)))
			rc = KOOM(err);
	}
	if (rc < 0 && out) {
		free(*out);
		*out = NULL;
	}
	tt_proc_result_release(&r);
	return rc;
}

/* --- locators ---------------------------------------------------------------- */

/* A locator value as text (Python's str()), dflt when absent or null. */
static int loc_text(const json_t *loc, const char *key, const char *dflt, char **out, tt_error *err)
{
	const json_t *v = json_object_get(loc, key);
	*out = !v || json_is_null(v) ? (dflt ? tt_strdup(dflt) : NULL) : tt_pyv_str_dup(v);
	if (!*out && ((v && !json_is_null(v)) || dflt))
		return KOOM(err);
	return 0;
}

/* `path`, or the CLI's positional locator (`uri`) when it is a local path. */
static int loc_local(const json_t *loc, char **out, tt_error *err)
{
	const json_t *v = json_object_get(loc, "path");
	*out = NULL;
	if (!tt_pyv_truthy(v))
		v = json_object_get(loc, "uri");
	if (tt_pyv_truthy(v) && !(*out = tt_pyv_str_dup(v)))
		return KOOM(err);
	if (!*out || strstr(*out, "://")) {
		free(*out);
		*out = NULL;
		return KERR(err, TT_EBACKEND, "git backend needs a local 'path' (url-only clones are "
					      "not supported yet)");
	}
	return 0;
}

/* Whether path is dir or below it (both resolved). */
static bool within(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/*
 * The repository to run git in.  A manifest arrives with every clone, so it
 * may not name a relative path (`add` stores an absolute one) or one inside
 * the checkout the clone made: that directory is the clone's own files.
 * Checked at every operation, never cached.
 */
static int repo_path(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	char *path = NULL, *resolved = NULL, *checkout = NULL, *r = NULL;
	int rc;

	*out = NULL;
	if ((rc = loc_local(loc, &path, err)) < 0)
		return rc;
	if (path[0] != '/') {
		r = tt_pyv_repr_dup(path);
		rc = KERR(err, TT_EBACKEND,
			  "git path %s is not absolute; `add` stores an absolute path, so this "
			  "manifest was written by hand", r ? r : path);
		goto done;
	}
	if (b->checkout) {
		resolved = tt_realpath(path);
		checkout = tt_realpath(b->checkout);
		if (!resolved || !checkout) {
			rc = KOOM(err);
			goto done;
		}
		if (within(resolved, checkout)) {
			rc = KERR(err, TT_EBACKEND,
				  "git path %s is inside the dataset's checkout (%s), whose files came "
				  "with the clone; point it at a repository outside it",
				  path, checkout);
			goto done;
		}
	}
	*out = path;
	path = NULL;
done:
	free(path);
	free(resolved);
	free(checkout);
	free(r);
	return rc;
}

/* The ref a read of the base means: `at` (any commit-ish, the
 * cross-backend spelling of `ref`), else `ref`, else HEAD. */
static int base_ref(const json_t *loc, char **out, tt_error *err)
{
	const json_t *at = json_object_get(loc, "at");
	if (at && !json_is_null(at) && !(json_is_string(at) && json_string_length(at) == 0)) {
		*out = tt_pyv_str_dup(at);
		return *out ? 0 : KOOM(err);
	}
	return loc_text(loc, "ref", "HEAD", out, err);
}

/* Credential-side settings for one object (tether-vcs's secrets_for): the
 * longest b->secret_rules prefix matching the object's URI over the kind's
 * config.  Borrowed; NULL when neither sets key. */
static const json_t *secret_value(tt_backend *b, const json_t *loc, const char *key)
{
	static const char *const uri_keys[] = { "uri", "path" };
	const char *uri = NULL, *best = NULL, *prefix;
	const json_t *v;
	json_t *rule;

	for (size_t i = 0; i < 2 && !uri; i++) {
		v = json_object_get(loc, uri_keys[i]);
		if (json_is_string(v) && json_string_length(v))
			uri = json_string_value(v);
	}
	if (uri && json_is_object(b->secret_rules)) {
		json_object_foreach(b->secret_rules, prefix, rule) {
			if (strncmp(uri, prefix, strlen(prefix)) == 0 &&
			    (!best || strlen(prefix) > strlen(best)))
				best = prefix;
		}
	}
	if (best && (v = json_object_get(json_object_get(b->secret_rules, best), key)))
		return v;
	return json_object_get(b->config, key);
}

/* --- reading the repository -------------------------------------------------- */

/* The commit ref names: with check a failure is an error, without it an
 * unresolvable ref gives *sha "". */
static int rev_commit(tt_backend *b, const char *repo, const char *ref, bool check, char **sha,
		      tt_error *err)
{
	char *spec = tt_asprintf("%s^{commit}", ref);
	int rc, status;
	*sha = NULL;
	if (!spec)
		return KOOM(err);
	if (check) {
		const char *const args[] = { "rev-parse", "--verify", "--end-of-options", spec, NULL };
		rc = git_run(b, repo, args, sha, err);
	} else {
		const char *const args[] = { "rev-parse", "--verify", "--quiet", "--end-of-options",
					     spec, NULL };
		rc = git_try(b, repo, args, sha, &status, NULL, err);
	}
	free(spec);
	return rc;
}

/* The commit refs/heads/<branch> names, "" when there is no such branch (a
 * tag of the same name does not count). */
static int branch_sha(tt_backend *b, const char *repo, const char *branch, char **sha,
		      tt_error *err)
{
	char *full = tt_asprintf("refs/heads/%s", branch);
	int status, rc;
	*sha = NULL;
	if (!full)
		return KOOM(err);
	const char *const args[] = { "rev-parse", "--verify", "--quiet", full, NULL };
	rc = git_try(b, repo, args, sha, &status, NULL, err);
	free(full);
	return rc;
}

/* The checked-out branch, NULL when HEAD is detached. */
static int checked_out(tt_backend *b, const char *repo, char **out, tt_error *err)
{
	/* HEAD read without git when the repository allows (vcs/git_native.h) */
	if (tt_gitnat_checked_out(repo, out) == 0)
		return 0;
	const char *const args[] = { "symbolic-ref", "--short", "-q", "HEAD", NULL };
	int status, rc = git_try(b, repo, args, out, &status, NULL, err);
	if (rc == 0 && !**out) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* Uncommitted changes in the checkout (untracked files count). */
static int worktree_dirty(tt_backend *b, const char *repo, bool *dirty, tt_error *err)
{
	/* No optional lock: a status killed (or failing on a full disk) must
	 * not leave .git/index.lock behind to stop the next write. */
	const char *const args[] = { "--no-optional-locks", "status", "--porcelain", NULL };
	char *out = NULL;
	int rc = git_run(b, repo, args, &out, err);
	*dirty = rc == 0 && out[0] != '\0';
	free(out);
	return rc;
}

/* The worktree that has branch checked out (an unborn one too), or NULL;
 * with other, only a worktree other than the locator's. */
static int worktree_of(tt_backend *b, const char *repo, const char *branch, bool other,
		       char **where, tt_error *err)
{
	const char *const top_args[] = { "rev-parse", "--show-toplevel", NULL };
	const char *const list_args[] = { "worktree", "list", "--porcelain", NULL };
	char *top = NULL, *here = NULL, *list = NULL, *want = NULL, *cur = NULL;
	const char *s;
	size_t n;
	int status, rc;
	lines it;

	*where = NULL;
	if ((rc = git_try(b, repo, top_args, &top, &status, NULL, err)) < 0 ||
	    (rc = git_run(b, repo, list_args, &list, err)) < 0)
		goto done;
	if (top[0] && !(here = tt_realpath(top))) {
		rc = KOOM(err);
		goto done;
	}
	if (!(want = tt_asprintf("branch refs/heads/%s", branch))) {
		rc = KOOM(err);
		goto done;
	}
	it = lines_of(list);
	while (line_next(&it, &s, &n)) {
		if (n > 9 && strncmp(s, "worktree ", 9) == 0) {
			free(cur);
			if (!(cur = tt_strndup(s + 9, n - 9))) {
				rc = KOOM(err);
				goto done;
			}
		} else if (cur && n == strlen(want) && memcmp(s, want, n) == 0) {
			bool same = false;
			if (other && here) {
				char *there = tt_realpath(cur);
				if (!there) {
					rc = KOOM(err);
					goto done;
				}
				same = strcmp(there, here) == 0;
				free(there);
			}
			if (!other || !same) {
				*where = cur;
				cur = NULL;
				goto done;
			}
		}
	}
done:
	free(top);
	free(here);
	free(list);
	free(want);
	free(cur);
	return rc;
}

/* dir/name exists (a symlink followed, as Python's Path.exists). */
static bool entry_exists(const char *dir, const char *name)
{
	struct stat st;
	char *p = tt_path_join(dir, name);
	bool ok = p && stat(p, &st) == 0;
	free(p);
	return ok;
}

/* jj's change id of sha, when the repository is a colocated jj one and jj
 * answers; NULL otherwise (the same sha pins identically either way). */
static char *change_id(tt_backend *b, const char *repo, const char *sha)
{
	gitobj *g = b->impl;
	char *exe = NULL, *out = NULL;
	tt_proc_result r;
	tt_error ignored = TT_ERROR_INIT;

	if (!entry_exists(repo, ".jj"))
		return NULL;
	exe = tt_proc_which(g->jj ? g->jj : "jj");
	if (!exe)
		return NULL;
	const char *const argv[] = { exe, "log", "--no-graph", "--ignore-working-copy", "-r", sha,
				     "-T", "change_id", NULL };
	tt_proc_opts opts = { .argv = argv, .cwd = repo, .env_unset = tt_git_env_unset,
			      .max_out = 1 << 20, .max_err = 1 << 20 };
	tt_proc_result_init(&r);
	if (tt_proc_run(&opts, &r, &ignored) == 0 && r.status == 0) {
		out = strip_dup(r.out.ptr, r.out.len);
		if (out && !*out) {
			free(out);
			out = NULL;
		}
	}
	tt_proc_result_release(&r);
	tt_error_clear(&ignored);
	free(exe);
	return out;
}

/* The state at ref: {sha, dirty[, change_id]}.  Uncommitted changes belong
 * to the checked-out ref only; a dirty worktree says nothing about a branch
 * that is not checked out. */
static int state_at(tt_backend *b, const char *repo, const char *ref, json_t **state, tt_error *err)
{
	char *sha = NULL, *head = NULL, *cid = NULL;
	bool dirty = false;
	int rc;

	*state = NULL;
	if ((rc = guard(ref, "ref", err)) < 0 || (rc = rev_commit(b, repo, ref, true, &sha, err)) < 0 ||
	    (rc = checked_out(b, repo, &head, err)) < 0)
		goto done;
	if ((strcmp(ref, "HEAD") == 0 || (head && strcmp(ref, head) == 0)) &&
	    (rc = worktree_dirty(b, repo, &dirty, err)) < 0)
		goto done;
	cid = change_id(b, repo, sha);
	*state = json_pack("{s:s, s:b}", "sha", sha, "dirty", dirty);
	if (!*state || (cid && json_object_set_new(*state, "change_id", json_string(cid)) != 0)) {
		json_decref(*state);
		*state = NULL;
		rc = KOOM(err);
	}
done:
	free(sha);
	free(head);
	free(cid);
	return rc;
}

/* The git name a source target stands for: a pin's tag, a state's sha (hex
 * only), a branch, or the base. */
static int source_ref(const json_t *loc, const tt_target *t, char **out, tt_error *err)
{
	int rc = 0;
	*out = NULL;
	switch (t->kind) {
	case TT_TARGET_PIN:
		if (!t->pin)
			return KERR(err, TT_EUSAGE, "a pin target needs a pin");
		*out = tt_strdup(t->pin->ref);
		break;
	case TT_TARGET_STATE:
		return state_sha(t->state, out, err);
	case TT_TARGET_REF:
		if (!t->ref)
			return KERR(err, TT_EUSAGE, "a ref target needs a ref");
		*out = tt_strdup(t->ref);
		break;
	case TT_TARGET_BASE:
		if ((rc = base_ref(loc, out, err)) < 0)
			return rc;
		break;
	}
	if (!*out)
		return KOOM(err);
	if ((rc = guard(*out, "source", err)) < 0) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* --- identity, fingerprint ------------------------------------------------------ */

/* Resolved, so equal repositories dedupe.  Bookkeeping only: a path git may
 * not run in still has an identity to group it by. */
static int git_identity(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	char *path = NULL, *resolved = NULL;
	int rc = loc_local(loc, &path, err);
	*out = NULL;
	if (rc == 0) {
		resolved = tt_realpath(path);
		*out = resolved ? json_pack("{s:s}", "path", resolved) : NULL;
		if (!*out)
			rc = KOOM(err);
	}
	free(path);
	free(resolved);
	return rc;
}

static int git_fingerprint(tt_backend *b, const json_t *loc, const char *working_ref,
			   json_t **state, tt_error *err)
{
	char *repo = NULL, *ref = NULL;
	int rc;

	*state = NULL;
	if ((rc = repo_path(b, loc, &repo, err)) < 0)
		goto done;
	if (working_ref && *working_ref)
		ref = tt_strdup(working_ref);
	else if ((rc = base_ref(loc, &ref, err)) < 0)
		goto done;
	if (!ref) {
		rc = KOOM(err);
		goto done;
	}
	rc = state_at(b, repo, ref, state, err);
done:
	free(repo);
	free(ref);
	return rc;
}

/* --- pins ------------------------------------------------------------------------ */

/*
 * Where pins are pushed: a remote .tether/secrets.toml gives the object (a
 * URL is fine there), else the remote the committed locator names, which
 * must be one the repository already has configured - a clone must not
 * choose where your code is pushed.  *out NULL: none.
 */
static int configured_remote(tt_backend *b, const char *repo, const json_t *named, char **out,
			     tt_error *err);

static int pin_remote(tt_backend *b, const json_t *loc, const char *repo, char **out,
		      tt_error *err)
{
	const json_t *local = secret_value(b, loc, "remote");
	const json_t *named = json_object_get(loc, "remote");
	int rc;

	*out = NULL;
	if (tt_pyv_truthy(local)) {
		/* From secrets: any URL or path, but never an option. */
		if (!(*out = tt_pyv_str_dup(local)))
			return KOOM(err);
		if ((rc = guard(*out, "remote", err)) < 0) {
			free(*out);
			*out = NULL;
		}
		return rc;
	}
	if (!tt_pyv_truthy(named))
		return 0;
	return configured_remote(b, repo, named, out, err);
}

/* The remote a committed locator names (named), which must be one the
 * repository at repo already has configured. */
static int configured_remote(tt_backend *b, const char *repo, const json_t *named, char **out,
			     tt_error *err)
{
	const char *const args[] = { "remote", NULL };
	char *listing = NULL, *r = NULL;
	const char *s;
	size_t n;
	bool found = false;
	int rc = 0;
	lines it;

	if (!(*out = tt_pyv_str_dup(named)))
		return KOOM(err);
	if ((rc = guard(*out, "remote", err)) < 0 || (rc = git_run(b, repo, args, &listing, err)) < 0)
		goto done;
	it = lines_of(listing);
	while (!found && line_next(&it, &s, &n))
		found = n == strlen(*out) && memcmp(s, *out, n) == 0;
	if (!found) {
		r = tt_pyv_repr_dup(*out);
		rc = KERR(err, TT_EBACKEND,
			  "%s is not a remote configured in %s. A committed locator arrives with every "
			  "clone, so it names a remote the repository already has (`git remote add`); "
			  "a URL goes in .tether/secrets.toml, as [objects.\"<key>\"] remote",
			  r ? r : *out, repo);
	}
done:
	free(listing);
	free(r);
	if (rc < 0) {
		free(*out);
		*out = NULL;
	}
	return rc;
}

/* At `add`: a committed `remote` must be one the repository has. */
static int git_check_locator(tt_backend *b, const json_t *loc, tt_error *err)
{
	const json_t *named = json_object_get(loc, "remote");
	char *repo = NULL, *remote = NULL;
	int rc;
	if (!named || json_is_null(named))
		return 0;
	if ((rc = repo_path(b, loc, &repo, err)) == 0)
		rc = configured_remote(b, repo, named, &remote, err);
	free(repo);
	free(remote);
	return rc;
}

static int git_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id,
		   tt_pin *out, tt_error *err)
{
	char *repo = NULL, *ref = NULL, *sha = NULL, *remote = NULL, *existing = NULL, *spec = NULL;
	bool created = false;
	int rc, status;

	if (tt_pyv_truthy(json_object_get(state, "dirty")) && !tt_pyv_truthy(json_object_get(loc, "allow_dirty"))) {
		rc = KERR(err, TT_EBACKEND, "refusing to pin a dirty working tree (set allow_dirty)");
		goto done;
	}
	if ((rc = repo_path(b, loc, &repo, err)) < 0)
		goto done;
	if (!pin_id || !(ref = tt_asprintf(PIN_PREFIX "%s", pin_id))) {
		rc = pin_id ? KOOM(err) : KERR(err, TT_EUSAGE, "pin needs an id");
		goto done;
	}
	/* The id fits a tt_pin before anything is made. */
	if ((rc = guard(pin_id, "pin", err)) < 0 || (rc = tt_kit_fill_pin(out, KIND, pin_id, ref, false, err)) < 0 ||
	    (rc = state_sha(state, &sha, err)) < 0 ||
	    (rc = pin_remote(b, loc, repo, &remote, err)) < 0 ||
	    (rc = rev_commit(b, repo, ref, false, &existing, err)) < 0)
		goto done;
	if (!existing[0]) {
		const char *const args[] = { "tag", "--end-of-options", ref, sha, NULL };
		tt_error terr = TT_ERROR_INIT, ignored = TT_ERROR_INIT;
		char *again = NULL;
		created = true;
		if ((rc = git_run(b, repo, args, NULL, &terr)) < 0) {
			/* A concurrent pin of the same id may have made it: then it
			 * holds the state, and this call made nothing. */
			if (rc == TT_EBACKEND &&
			    rev_commit(b, repo, ref, false, &again, &ignored) == 0 &&
			    strcmp(again, sha) == 0) {
				rc = 0;
				created = false;
			} else {
				tt_error_move(err, &terr);
			}
		}
		free(again);
		tt_error_clear(&terr);
		tt_error_clear(&ignored);
		if (rc < 0)
			goto done;
	} else if (strcmp(existing, sha) != 0) {
		rc = KERR(err, TT_EBACKEND, "tag %s already points at %s, not %s", ref, existing, sha);
		goto done;
	}
	if (remote) {
		/* The pin is only durable once it is on the remote.  A push that
		 * fails fails the pin - and leaves no local tag that would make
		 * the two diverge silently. */
		if (!(spec = tt_asprintf("refs/tags/%s", ref))) {
			rc = KOOM(err);
			goto done;
		}
		const char *const args[] = { "push", "--end-of-options", remote, spec, NULL };
		if ((rc = git_run(b, repo, args, NULL, err)) < 0) {
			if (created) {
				const char *const del[] = { "tag", "-d", "--end-of-options", ref,
							    NULL };
				tt_error ignored = TT_ERROR_INIT;
				git_try(b, repo, del, NULL, &status, NULL, &ignored);
				tt_error_clear(&ignored);
			}
			tt_error_prefix(err, "pin %s was not pushed to %s", ref, remote);
			goto done;
		}
	}
	out->created = created;
done:
	free(repo);
	free(ref);
	free(sha);
	free(remote);
	free(existing);
	free(spec);
	return rc;
}

static int git_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err)
{
	char *repo = NULL, *remote = NULL, *spec = NULL, *why = NULL, *still = NULL;
	int rc, status;

	if ((rc = repo_path(b, loc, &repo, err)) < 0 || (rc = guard(pin->ref, "ref", err)) < 0 ||
	    (rc = pin_remote(b, loc, repo, &remote, err)) < 0)
		goto done;
	if (!(spec = tt_asprintf("refs/tags/%s", pin->ref))) {
		rc = KOOM(err);
		goto done;
	}
	if (remote) {
		/* Remote first: while the remote has the tag the pin exists, and
		 * gc must hear so rather than believe it gone. */
		const char *const args[] = { "push", "--delete", "--end-of-options", remote, spec,
					     NULL };
		if ((rc = git_try(b, repo, args, NULL, &status, &why, err)) < 0)
			goto done;
		if (status != 0 && !strstr(why, "remote ref does not exist")) {
			rc = KERR(err, TT_EBACKEND, "pin %s was not deleted on %s: %s", pin->ref,
				  remote, why);
			goto done;
		}
		free(why);
		why = NULL;
	}
	const char *const del[] = { "tag", "-d", "--end-of-options", pin->ref, NULL };
	if ((rc = git_try(b, repo, del, NULL, &status, &why, err)) < 0)
		goto done;
	if (status != 0) {
		/* Still there: not "already gone" but a real failure (a locked
		 * ref, permissions); say so instead of reporting success. */
		const char *const check[] = { "rev-parse", "--verify", "--quiet", spec, NULL };
		int st2;
		if ((rc = git_try(b, repo, check, &still, &st2, NULL, err)) < 0)
			goto done;
		if (still[0])
			rc = KERR(err, TT_EBACKEND, "tag %s was not deleted: %s", pin->ref, why);
	}
done:
	free(repo);
	free(remote);
	free(spec);
	free(why);
	free(still);
	return rc;
}

/* A sorted JSON array of the distinct strings in v[0..n). */
static json_t *sorted_array(char **v, size_t n)
{
	json_t *out = json_array();
	if (n)
		qsort(v, n, sizeof *v, tt_cmp_cstr);
	for (size_t i = 0; out && i < n; i++) {
		if (i && strcmp(v[i], v[i - 1]) == 0)
			continue;
		if (json_array_append_new(out, json_string(v[i])) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	return out;
}

/* The stripped lines of a listing that start with prefix and not with skip
 * (may be NULL), each less its first cut characters: a sorted, deduplicated
 * JSON array. */
static int listing_array(const char *text, const char *prefix, const char *skip, size_t cut,
			 json_t **out, tt_error *err)
{
	char **v = NULL;
	size_t n = 0, alloc = 0;
	const char *s;
	size_t len;
	int rc = 0;
	lines it = lines_of(text);

	*out = NULL;
	while (line_next(&it, &s, &len)) {
		char *line = strip_dup(s, len);
		if (!line) {
			rc = KOOM(err);
			goto done;
		}
		if (!line[0] || strncmp(line, prefix, strlen(prefix)) != 0 ||
		    (skip && strncmp(line, skip, strlen(skip)) == 0)) {
			free(line);
			continue;
		}
		if (TT_ARRAY_GROW(v, alloc, n + 1) != 0) {
			free(line);
			rc = KOOM(err);
			goto done;
		}
		memmove(line, line + cut, strlen(line + cut) + 1);
		v[n++] = line;
	}
	if (!(*out = sorted_array(v, n)))
		rc = KOOM(err);
done:
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
	return rc;
}

static int git_list_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err)
{
	const char *const args[] = { "tag", "--list", PIN_PREFIX "*", NULL };
	char *repo = NULL, *out = NULL;
	int rc;

	*ids = NULL;
	if ((rc = repo_path(b, loc, &repo, err)) < 0 || (rc = git_run(b, repo, args, &out, err)) < 0)
		goto done;
	/* Pins only: the working refs' namespace is not a pin. */
	rc = listing_array(out, PIN_PREFIX, PIN_PREFIX "ws.", strlen(PIN_PREFIX), ids, err);
done:
	free(repo);
	free(out);
	return rc;
}

static int git_verify(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
		      bool deep, tt_verify_status *status, char **message, tt_error *err)
{
	char *repo = NULL, *sha = NULL, *resolved = NULL, *msg = NULL;
	const char *target;
	int rc;

	*status = TT_VERIFY_UNKNOWN;
	*message = NULL;
	if ((rc = repo_path(b, loc, &repo, err)) < 0 || (rc = state_sha(state, &sha, err)) < 0)
		goto done;
	/* A commit is addressable: without a pin, the sha itself (deep or not). */
	target = pin ? pin->ref : sha;
	if ((rc = guard(target, "ref", err)) < 0 ||
	    (rc = rev_commit(b, repo, target, false, &resolved, err)) < 0)
		goto done;
	if (!resolved[0]) {
		*status = TT_VERIFY_MISSING;
		msg = tt_asprintf("%s not found", target);
	} else if (strcmp(resolved, sha) != 0) {
		*status = TT_VERIFY_DRIFTED;
		msg = tt_asprintf("%s -> %s, expected %s", target, resolved, sha);
	} else {
		*status = TT_VERIFY_OK;
		msg = tt_strdup("");
	}
	if (!msg) {
		rc = KOOM(err);
		goto done;
	}
	*message = msg;
done:
	free(repo);
	free(sha);
	free(resolved);
	return rc;
}

/* --- forks ------------------------------------------------------------------------- */

/* `expected` as update-ref's old value: its sha, or all zeros for ABSENT
 * (an empty state is ABSENT too, as tether-vcs tests `not expected`). */
static int old_value(const tt_expect *expected, char **out, tt_error *err)
{
	if (expected->kind == TT_EXPECT_STATE && json_is_object(expected->state) &&
	    json_object_size(expected->state) > 0)
		return state_sha(expected->state, out, err);
	if (expected->kind == TT_EXPECT_STATE && !json_is_object(expected->state))
		return KERR(err, TT_EUSAGE, "an expected state must be a JSON object");
	*out = tt_strdup(ZERO_SHA);
	return *out ? 0 : KOOM(err);
}

/*
 * Why `update-ref refs/heads/<branch> <new> <old>` failed: TT_EREFMOVED when
 * the branch is not at old - what the compare-and-swap refuses; anything
 * else (a locked ref, permissions) is the failure itself.
 */
/* A lock file (git's "<file>.lock") that a git killed mid-write, or one
 * failing on a full disk, leaves stops every later write of that file:
 * TT_EBACKEND naming it and the fix when it is there.  lock: a path inside
 * the git directory ("index.lock", "refs/heads/main.lock").  One a running
 * git holds (a racing promote's update-ref) goes within moments: it is
 * waited for up to a second first, as git waits for a ref lock itself. */
static int no_lock_left(tt_backend *b, const char *repo, const char *lock, tt_error *err)
{
	const char *const args[] = { "rev-parse", "--git-path", lock, NULL };
	char *rel = NULL, *path = NULL;
	struct stat st;
	int rc = git_run(b, repo, args, &rel, err);
	if (rc < 0)
		return rc;
	if (!(path = rel[0] == '/' ? tt_strdup(rel) : tt_path_join(repo, rel)))
		rc = KOOM(err);
	for (int waited = 0; path && waited < 100 && lstat(path, &st) == 0; waited++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	if (rc == 0 && lstat(path, &st) == 0)
		rc = KERR(err, TT_EBACKEND, "%s exists: another git process is running in %s, or one "
			  "crashed; if none is running, remove it: rm %s", path, repo, path);
	free(rel);
	free(path);
	return rc;
}

static int no_ref_lock_left(tt_backend *b, const char *repo, const char *branch, tt_error *err)
{
	char *lock = tt_asprintf("refs/heads/%s.lock", branch);
	int rc = lock ? no_lock_left(b, repo, lock, err) : KOOM(err);
	free(lock);
	return rc;
}

static int moved_or_failed(tt_backend *b, const char *repo, const char *branch, const char *old,
			   const char *why, const char *what, tt_error *err)
{
	char *now = NULL;
	int rc = branch_sha(b, repo, branch, &now, err);
	if (rc < 0)
		return rc;
	if (strcmp(old, ZERO_SHA) == 0) {
		if (!now[0])
			rc = KERR(err, TT_EBACKEND, "git update-ref %s failed: %s", branch, why);
		else
			rc = KERR(err, TT_EREFMOVED, "%s: %s exists (at %.12s), expected absent", what,
				  branch, now);
	} else if (strcmp(now, old) == 0) {
		rc = KERR(err, TT_EBACKEND, "git update-ref %s failed: %s", branch, why);
	} else {
		rc = KERR(err, TT_EREFMOVED, "%s: %s is at %.12s, expected %.12s", what, branch,
			  now[0] ? now : "nothing", old);
	}
	free(now);
	return rc;
}

/* git's compare-and-swap: refs/heads/<branch> moves to new only while it
 * holds old (all zeros: does not exist), in one ref transaction. */
static int update_ref(tt_backend *b, const char *repo, const char *branch, const char *new_sha,
		      const char *old, const char *what, tt_error *err)
{
	char *full = tt_asprintf("refs/heads/%s", branch), *why = NULL, *now = NULL;
	int rc = 0, status = 0;

	if (!full)
		return KOOM(err);
	const char *const args[] = { "update-ref", "--end-of-options", full, new_sha, old, NULL };
	for (int attempt = 0;; attempt++) {
		free(why);
		why = NULL;
		if ((rc = git_try(b, repo, args, NULL, &status, &why, err)) < 0 || status == 0)
			goto done;
		/* Lost a lock to a writer that is still busy (or left the ref as
		 * it was): the swap would still hold, so try it again. */
		if (attempt < LOCK_RETRIES && strstr(why, "cannot lock ref")) {
			free(now);
			now = NULL;
			if ((rc = branch_sha(b, repo, branch, &now, err)) < 0)
				goto done;
			if (strcmp(now, old) == 0 || (strcmp(old, ZERO_SHA) == 0 && !now[0])) {
				struct timespec ts = { 0, LOCK_RETRY_NS };
				nanosleep(&ts, NULL);
				continue;
			}
		}
		if (strstr(why, "cannot lock ref")) {
			/* Still where it was after the retries: a lock nobody holds
			 * any more (a git killed mid-write) is named with the fix. */
			free(now);
			now = NULL;
			if ((rc = branch_sha(b, repo, branch, &now, err)) < 0)
				goto done;
			if ((strcmp(now, old) == 0 || (strcmp(old, ZERO_SHA) == 0 && !now[0])) &&
			    (rc = no_ref_lock_left(b, repo, branch, err)) < 0)
				goto done;
		}
		rc = moved_or_failed(b, repo, branch, old, why, what, err);
		goto done;
	}
done:
	free(full);
	free(why);
	free(now);
	return rc;
}

static int git_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		    const tt_expect *expected, char **ref_out, tt_error *err)
{
	char *repo = NULL, *src = NULL, *sha = NULL, *exists = NULL, *old = NULL, *where = NULL;
	int rc;

	*ref_out = NULL;
	if (source->kind != TT_TARGET_PIN && source->kind != TT_TARGET_STATE &&
	    source->kind != TT_TARGET_REF) {
		rc = KERR(err, TT_EUSAGE, "fork needs a pin or a recorded state to start from");
		goto done;
	}
	if ((rc = repo_path(b, loc, &repo, err)) < 0 || (rc = source_ref(loc, source, &src, err)) < 0 ||
	    (rc = rev_commit(b, repo, src, true, &sha, err)) < 0 ||
	    (rc = guard(name, "branch", err)) < 0 || (rc = branch_sha(b, repo, name, &exists, err)) < 0)
		goto done;
	if (!expected || expected->kind == TT_EXPECT_NONE) {
		/* Unconditional; a branch already at the source is left alone (no
		 * reflog entry), and `branch -f` refuses one checked out in any
		 * worktree. */
		const char *const force[] = { "branch", "-f", "--end-of-options", name, sha, NULL };
		const char *const make[] = { "branch", "--end-of-options", name, sha, NULL };
		if (strcmp(exists, sha) != 0 &&
		    (rc = git_run(b, repo, exists[0] ? force : make, NULL, err)) < 0)
			goto done;
	} else {
		if ((rc = old_value(expected, &old, err)) < 0)
			goto done;
		if (strcmp(exists, sha) != 0) {
			/* What `branch -f` refuses too, in every worktree: moving the
			 * ref under a checkout leaves its index and files describing
			 * another commit. */
			if ((rc = worktree_of(b, repo, name, false, &where, err)) < 0)
				goto done;
			if (where) {
				rc = KERR(err, TT_EBACKEND, "branch %s is checked out in %s; check out "
							    "another branch there before it is reset",
					  name, where);
				goto done;
			}
		}
		/* Already at the source and expected there: left alone. */
		if (!(exists[0] && strcmp(exists, sha) == 0 && strcmp(sha, old) == 0) &&
		    (rc = update_ref(b, repo, name, sha, old, "fork", err)) < 0)
			goto done;
	}
	if (!(*ref_out = tt_strdup(name)))
		rc = KOOM(err);
done:
	free(repo);
	free(src);
	free(sha);
	free(exists);
	free(old);
	free(where);
	return rc;
}

static int git_delete_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err)
{
	char *repo = NULL, *why = NULL, *still = NULL;
	int rc, status;

	if ((rc = repo_path(b, loc, &repo, err)) < 0 || (rc = guard(ref, "branch", err)) < 0)
		goto done;
	const char *const args[] = { "branch", "-D", "--end-of-options", ref, NULL };
	if ((rc = git_try(b, repo, args, NULL, &status, &why, err)) < 0 || status == 0)
		goto done;
	/* Gone already is success; still there is the failure. */
	if ((rc = branch_sha(b, repo, ref, &still, err)) < 0)
		goto done;
	if (still[0])
		rc = KERR(err, TT_EBACKEND, "branch %s was not deleted: %s", ref, why);
done:
	free(repo);
	free(why);
	free(still);
	return rc;
}

static int git_list_working_refs(tt_backend *b, const json_t *loc, json_t **refs, tt_error *err)
{
	const char *const args[] = { "for-each-ref", "--format=%(refname:short)",
				     "refs/heads/" TT_WORKING_REF_PREFIX "*", NULL };
	char *repo = NULL, *out = NULL;
	int rc;

	*refs = NULL;
	if ((rc = repo_path(b, loc, &repo, err)) < 0 || (rc = git_run(b, repo, args, &out, err)) < 0)
		goto done;
	rc = listing_array(out, "", NULL, 0, refs, err);
done:
	free(repo);
	free(out);
	return rc;
}

static int git_working_ref_blockers(tt_backend *b, const json_t *loc, const char *ref, char **why,
				    tt_error *err)
{
	*why = NULL; /* git can always delete a branch (checked-out ones refuse at the act) */
	return 0;
}

/* --- reading ----------------------------------------------------------------------- */

/* path is a directory with nothing in it. */
static bool dir_is_empty(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	bool empty = d != NULL;
	while (d && (e = readdir(d)))
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
			empty = false;
			break;
		}
	if (d)
		closedir(d);
	return empty;
}

/*
 * The checkout of a writable handle's branch, checked out at where (NULL:
 * nowhere).  want (an absolute path, may be NULL): a new worktree there,
 * unless the branch is already checked out at that very place; without it,
 * where (*out NULL: nowhere).
 */
static int checkout_at(tt_backend *b, const char *repo, const char *branch, const char *want,
		       const char *where, char **out, tt_error *err)
{
	char *there = NULL, *asked = NULL;
	int rc = 0;
	if (!want) {
		if (where && !(*out = tt_realpath(where)))
			rc = KOOM(err);
		return rc;
	}
	if (want[0] != '/')
		return KERR(err, TT_EUSAGE, "a worktree path must be absolute, not '%s'", want);
	if (where) {
		there = tt_realpath(where);
		asked = tt_exists(want) ? tt_realpath(want) : NULL;
		if (!there) {
			rc = KOOM(err);
		} else if (asked && strcmp(asked, there) == 0) {
			*out = there; /* already checked out right there */
			there = NULL;
		} else {
			rc = KERR(err, TT_EUSAGE, "branch %s is already checked out at %s (git checks a "
				  "branch out in one place only)", branch, there);
			tt_error_hint(err, "work there (open without --worktree), or free it first "
				      "(`git -C '%s' switch --detach`)", there);
		}
		free(there);
		free(asked);
		return rc;
	}
	if (tt_exists(want) && !dir_is_empty(want)) {
		rc = KERR(err, TT_EUSAGE, "cannot make a worktree at %s: it exists and is not an empty "
			  "directory", want);
		tt_error_hint(err, "name a new directory for --worktree");
		return rc;
	}
	const char *const args[] = { "worktree", "add", "--quiet", "--end-of-options", want, branch, NULL };
	if ((rc = git_run(b, repo, args, NULL, err)) < 0)
		return rc;
	if (!(*out = tt_realpath(want)))
		rc = KOOM(err);
	return rc;
}

static int git_checkout(tt_backend *b, const json_t *loc, const char *branch, const char *want,
			char **out, tt_error *err)
{
	char *repo = NULL, *where = NULL;
	int rc;
	*out = NULL;
	if ((rc = guard(branch, "branch", err)) < 0 || (rc = repo_path(b, loc, &repo, err)) < 0)
		return rc;
	rc = worktree_of(b, repo, branch, false, &where, err);
	if (rc == 0)
		rc = checkout_at(b, repo, branch, want, where, out, err);
	free(repo);
	free(where);
	return rc;
}

static int git_open(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		    json_t **handle, tt_error *err)
{
	char *repo = NULL, *path = NULL, *sha = NULL, *ref = NULL, *address = NULL;
	int rc;

	*handle = NULL;
	if ((rc = repo_path(b, loc, &repo, err)) < 0)
		goto done;
	if (!(path = tt_realpath(repo))) {
		rc = KOOM(err);
		goto done;
	}
	switch (target->kind) {
	case TT_TARGET_PIN:
		/* A pinned or recorded state is read-only whatever was asked. */
		read_only = true;
		if (!target->pin) {
			rc = KERR(err, TT_EUSAGE, "open needs a pin");
			goto done;
		}
		if ((rc = guard(target->pin->ref, "ref", err)) < 0 ||
		    (rc = rev_commit(b, repo, target->pin->ref, true, &sha, err)) < 0)
			goto done;
		break;
	case TT_TARGET_STATE:
		read_only = true;
		if ((rc = state_sha(target->state, &sha, err)) < 0)
			goto done;
		break;
	case TT_TARGET_REF:
	case TT_TARGET_BASE:
		if (target->kind == TT_TARGET_REF && target->ref && *target->ref)
			ref = tt_strdup(target->ref);
		else if ((rc = base_ref(loc, &ref, err)) < 0)
			goto done;
		if (!ref) {
			rc = KOOM(err);
			goto done;
		}
		if ((rc = guard(ref, "ref", err)) < 0 ||
		    (rc = rev_commit(b, repo, ref, true, &sha, err)) < 0)
			goto done;
		break;
	}
	if (!(address = tt_asprintf("%s@%s", path, sha))) {
		rc = KOOM(err);
		goto done;
	}
	/* A writable handle writes a branch: name it (the engine adds the
	 * worktree that has it, see git_checkout). */
	*handle = json_pack("{s:s, s:s, s:b, s:s, s:s, s:n, s:s?}", "type", KIND, "address", address,
			    "read_only", read_only, "path", path, "sha", sha, "worktree", "branch",
			    read_only ? NULL : ref);
	if (!*handle)
		rc = KOOM(err);
	else if (read_only)
		json_object_set_new(*handle, "branch", json_null());
done:
	free(repo);
	free(path);
	free(sha);
	free(ref);
	free(address);
	return rc;
}

static int git_history(tt_backend *b, const json_t *loc, const char *ref, size_t limit,
		       tt_history_entry **out, size_t *n, tt_error *err)
{
	char *repo = NULL, *start = NULL, *max = NULL, *text = NULL;
	tt_history_entry *entries = NULL;
	size_t count = 0, alloc = 0, len;
	const char *s;
	int rc;
	lines it;

	*out = NULL;
	*n = 0;
	if ((rc = repo_path(b, loc, &repo, err)) < 0)
		goto done;
	if (ref && *ref)
		start = tt_strdup(ref);
	else if ((rc = base_ref(loc, &start, err)) < 0)
		goto done;
	if (!start || !(max = tt_asprintf("--max-count=%zu", limit))) {
		rc = KOOM(err);
		goto done;
	}
	if ((rc = guard(start, "ref", err)) < 0)
		goto done;
	const char *const args[] = { "log", max, "--format=%H%x1f%cI%x1f%D%x1f%s", "--end-of-options",
				     start, "--", NULL };
	if ((rc = git_run(b, repo, args, &text, err)) < 0)
		goto done;
	it = lines_of(text);
	while (line_next(&it, &s, &len)) {
		/* id, when, decorations, subject: unit-separated. */
		const char *part[4];
		size_t plen[4], k = 0;
		const char *p = s, *end = s + len;
		while (k < 4) {
			const char *sep = memchr(p, 0x1f, (size_t)(end - p));
			part[k] = p;
			plen[k] = sep ? (size_t)(sep - p) : (size_t)(end - p);
			k++;
			if (!sep)
				break;
			p = sep + 1;
		}
		if (k < 4)
			continue;
		if (TT_ARRAY_GROW(entries, alloc, count + 1) != 0) {
			rc = KOOM(err);
			goto done;
		}
		tt_history_entry *e = &entries[count++];
		memset(e, 0, sizeof *e);
		e->id = tt_strndup(part[0], plen[0]);
		e->when = tt_strndup(part[1], plen[1]);
		e->message = tt_strndup(part[3], plen[3]);
		e->refs = json_array();
		if (!e->id || !e->when || !e->message || !e->refs) {
			rc = KOOM(err);
			goto done;
		}
		/* "HEAD -> main, tag: tether.x, origin/main": names, without the
		 * bare HEAD. */
		const char *d = part[2], *dend = part[2] + plen[2];
		while (d <= dend) {
			const char *comma = memchr(d, ',', (size_t)(dend - d));
			const char *stop = comma ? comma : dend;
			char *name = strip_dup(d, (size_t)(stop - d));
			if (!name) {
				rc = KOOM(err);
				goto done;
			}
			const char *shown = name;
			if (strncmp(shown, "HEAD -> ", 8) == 0)
				shown += 8;
			if (strncmp(shown, "tag: ", 5) == 0)
				shown += 5;
			if (name[0] && strcmp(name, "HEAD") != 0 &&
			    json_array_append_new(e->refs, json_string(shown)) != 0) {
				free(name);
				rc = KOOM(err);
				goto done;
			}
			free(name);
			if (!comma)
				break;
			d = comma + 1;
		}
	}
	*out = entries;
	*n = count;
	entries = NULL;
done:
	tt_history_release(entries, count);
	free(repo);
	free(start);
	free(max);
	free(text);
	return rc;
}

/* One numstat line's path and its "+A -D" detail. */
typedef struct numstat {
	char *path;
	char *detail;
} numstat;

static int git_diff(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		    const char *la, const char *lb, tt_object_diff *out, tt_error *err)
{
	char *repo = NULL, *sa = NULL, *sb = NULL, *status = NULL, *nums = NULL;
	numstat *ns = NULL;
	size_t nns = 0, alloc = 0, len;
	const char *s;
	int rc;
	lines it;

	tt_object_diff_init(out, "files");
	if (!(sa = tt_pyv_str_dup(json_object_get(a, "sha"))) ||
	    !(sb = tt_pyv_str_dup(json_object_get(bstate, "sha")))) {
		rc = KOOM(err);
		goto done;
	}
	if (strcmp(sa, sb) == 0) {
		/* One commit: only the checkout's condition can differ. */
		const json_t *da = json_object_get(a, "dirty"), *db = json_object_get(bstate, "dirty");
		bool same = (!da && !db) || (da && db && json_equal((json_t *)da, (json_t *)db));
		if (!same) {
			tt_buf note = TT_BUF_INIT;
			tt_buf_puts(&note, "dirty ");
			tt_pyv_str(&note, da);
			tt_buf_puts(&note, " -> ");
			tt_pyv_str(&note, db);
			if (note.failed) {
				tt_buf_release(&note);
				rc = KOOM(err);
				goto done;
			}
			out->note = tt_buf_detach(&note);
		}
		rc = 0;
		goto done;
	}
	if ((rc = repo_path(b, loc, &repo, err)) < 0 || (rc = check_sha(sa, err)) < 0 ||
	    (rc = check_sha(sb, err)) < 0)
		goto done;
	{
		/* One call for per-file status (with renames), one for line counts;
		 * no external diff program and no textconv filter ever runs. */
		const char *const st_args[] = { "diff", "--no-ext-diff", "--no-textconv",
						"--name-status", "-M", "--end-of-options", sa, sb,
						NULL };
		const char *const num_args[] = { "diff", "--no-ext-diff", "--no-textconv",
						 "--numstat", "-M", "--end-of-options", sa, sb, NULL };
		if ((rc = git_run(b, repo, st_args, &status, err)) < 0 ||
		    (rc = git_run(b, repo, num_args, &nums, err)) < 0)
			goto done;
	}
	it = lines_of(nums);
	while (line_next(&it, &s, &len)) {
		const char *t1 = memchr(s, '\t', len), *t2, *last;
		if (!t1 || !(t2 = memchr(t1 + 1, '\t', len - (size_t)(t1 + 1 - s))))
			continue;
		last = t2;
		for (const char *q = t2 + 1; q < s + len; q++)
			if (*q == '\t')
				last = q;
		if (TT_ARRAY_GROW(ns, alloc, nns + 1) != 0) {
			rc = KOOM(err);
			goto done;
		}
		ns[nns].path = tt_strndup(last + 1, (size_t)(s + len - last - 1));
		ns[nns].detail = tt_asprintf("+%.*s -%.*s", (int)(t1 - s), s, (int)(t2 - t1 - 1),
					     t1 + 1);
		nns++;
		if (!ns[nns - 1].path || !ns[nns - 1].detail) {
			rc = KOOM(err);
			goto done;
		}
	}
	it = lines_of(status);
	while (line_next(&it, &s, &len)) {
		char *line = tt_strndup(s, len), *fields[3] = { NULL, NULL, NULL }, *path = NULL;
		size_t nf = 0;
		const char *change, *detail = "";
		if (!line) {
			rc = KOOM(err);
			goto done;
		}
		/* code, path[, new path]: the last field names the file. */
		for (char *p = line, *tab; nf < 3; p = tab + 1) {
			fields[nf++] = p;
			if (!(tab = strchr(p, '\t')))
				break;
			*tab = '\0';
		}
		if (nf < 2) {
			free(line);
			continue;
		}
		const char *code = fields[0], *lastf = fields[nf - 1];
		if (code[0] == 'A') {
			change = "added";
		} else if (code[0] == 'D') {
			change = "removed";
		} else if (code[0] == 'R') {
			change = "renamed";
			if (nf >= 3)
				path = tt_asprintf("%s -> %s", fields[1], fields[2]);
		} else {
			change = "modified";
		}
		for (size_t i = nns; i-- > 0;)
			if (strcmp(ns[i].path, lastf) == 0) {
				detail = ns[i].detail;
				break;
			}
		rc = tt_object_diff_add(out, path ? path : lastf, change, detail, err);
		free(path);
		free(line);
		if (rc < 0) {
			tt_error_object(err, NULL, KIND);
			goto done;
		}
	}
done:
	for (size_t i = 0; i < nns; i++) {
		free(ns[i].path);
		free(ns[i].detail);
	}
	free(ns);
	free(repo);
	free(sa);
	free(sb);
	free(status);
	free(nums);
	return rc;
}

/* --- promote / merge ------------------------------------------------------------------ */

/* The branch promote and merge move: `ref`, or the checked-out branch. */
static int base_branch_in(tt_backend *b, const char *repo, const json_t *loc, char **out,
			  tt_error *err)
{
	char *ref = NULL, *at = NULL, *r = NULL;
	int rc;

	*out = NULL;
	if ((rc = loc_text(loc, "ref", "HEAD", &ref, err)) < 0)
		return rc;
	if (strcmp(ref, "HEAD") == 0) {
		if ((rc = checked_out(b, repo, out, err)) == 0 && !*out)
			rc = KERR(err, TT_EBACKEND,
				  "HEAD is detached; set the locator's `ref` to a branch to promote");
		goto done;
	}
	if ((rc = branch_sha(b, repo, ref, &at, err)) < 0)
		goto done;
	if (!at[0]) {
		r = tt_pyv_repr_dup(ref);
		rc = KERR(err, TT_EBACKEND, "%s is not a local branch", r ? r : ref);
		goto done;
	}
	*out = ref;
	ref = NULL;
done:
	free(ref);
	free(at);
	free(r);
	return rc;
}

static int git_base_branch(tt_backend *b, const json_t *loc, char **out, tt_error *err)
{
	char *repo = NULL;
	int rc = repo_path(b, loc, &repo, err);
	*out = NULL;
	if (rc == 0)
		rc = base_branch_in(b, repo, loc, out, err);
	free(repo);
	return rc;
}

/* Whether ancestor is in descendant's history (merge-base --is-ancestor). */
static int is_ancestor(tt_backend *b, const char *repo, const char *ancestor,
		       const char *descendant, int *answer, tt_error *err)
{
	const char *const args[] = { "merge-base", "--is-ancestor", "--end-of-options", ancestor,
				     descendant, NULL };
	char *why = NULL;
	int status, rc;

	*answer = -1;
	if ((rc = git_try(b, repo, args, NULL, &status, &why, err)) < 0)
		goto done;
	if (status == 0 || status == 1)
		*answer = status == 0;
	else
		rc = KERR(err, TT_EBACKEND, "git merge-base failed: %s", why);
done:
	free(why);
	return rc;
}

static int git_ancestor_of(tt_backend *b, const json_t *loc, const json_t *ancestor,
			   const tt_target *descendant, int *answer, tt_error *err)
{
	char *repo = NULL, *sha = NULL, *src = NULL;
	int rc;

	*answer = -1;
	if ((rc = repo_path(b, loc, &repo, err)) == 0 && (rc = state_sha(ancestor, &sha, err)) == 0 &&
	    (rc = source_ref(loc, descendant, &src, err)) == 0)
		rc = is_ancestor(b, repo, sha, src, answer, err);
	free(repo);
	free(sha);
	free(src);
	return rc;
}

/* Move base from head to target, a fast-forward only: `merge --ff-only`
 * where base is checked out here, else update-ref with old (refused where
 * another worktree has base checked out). */
static int fast_forward(tt_backend *b, const char *repo, const char *base, const char *head,
			const char *target, const char *old, tt_error *err)
{
	char *now = NULL, *where = NULL;
	bool dirty;
	int anc, rc;

	if ((rc = is_ancestor(b, repo, head, target, &anc, err)) < 0)
		goto done;
	if (anc != 1) {
		rc = KERR(err, TT_EBACKEND,
			  "%s moved to %.12s, which is not an ancestor of %.12s; merge instead", base,
			  head, target);
		goto done;
	}
	if ((rc = checked_out(b, repo, &now, err)) < 0)
		goto done;
	if (now && strcmp(now, base) == 0) {
		if ((rc = worktree_dirty(b, repo, &dirty, err)) < 0)
			goto done;
		if (dirty) {
			rc = KERR(err, TT_EBACKEND,
				  "%s is checked out with uncommitted changes; commit or stash them first",
				  base);
			goto done;
		}
		if ((rc = no_lock_left(b, repo, "index.lock", err)) < 0 ||
		    (rc = no_ref_lock_left(b, repo, base, err)) < 0)
			goto done;
		/* `merge --ff-only` moves HEAD, the index and the files together
		 * and has no old-value form: on this path the head compared
		 * above is a check before the act (a commit landing in between
		 * is merged or refused as not a fast-forward, never lost). */
		const char *const args[] = { "merge", "--ff-only", "--end-of-options", target, NULL };
		if ((rc = git_run(b, repo, args, NULL, err)) < 0)
			goto done;
	} else {
		if ((rc = worktree_of(b, repo, base, true, &where, err)) < 0)
			goto done;
		if (where) {
			rc = KERR(err, TT_EBACKEND,
				  "%s is checked out in %s; moving it from here would leave that "
				  "checkout describing another commit -- promote from there, or check "
				  "out another branch there first", base, where);
			goto done;
		}
		if ((rc = update_ref(b, repo, base, target, old, "promote", err)) < 0)
			goto done;
	}
done:
	free(now);
	free(where);
	return rc;
}

static int git_promote(tt_backend *b, const json_t *loc, const tt_target *source,
		       const tt_expect *expected, json_t **new_state, tt_error *err)
{
	char *repo = NULL, *base = NULL, *src = NULL, *target = NULL, *head = NULL, *old = NULL,
	     *full = NULL;
	int rc;

	*new_state = NULL;
	if ((rc = repo_path(b, loc, &repo, err)) < 0 ||
	    (rc = base_branch_in(b, repo, loc, &base, err)) < 0 ||
	    (rc = source_ref(loc, source, &src, err)) < 0 ||
	    (rc = rev_commit(b, repo, src, true, &target, err)) < 0)
		goto done;
	if (!(full = tt_asprintf("refs/heads/%s", base))) {
		rc = KOOM(err);
		goto done;
	}
	{
		const char *const args[] = { "rev-parse", "--verify", full, NULL };
		if ((rc = git_run(b, repo, args, &head, err)) < 0)
			goto done;
	}
	/* The old value: the head the caller reviewed, or the one just read
	 * when no plan is involved. */
	if (!expected || expected->kind == TT_EXPECT_NONE)
		old = tt_strdup(head);
	else if ((rc = old_value(expected, &old, err)) < 0)
		goto done;
	if (!old) {
		rc = KOOM(err);
		goto done;
	}
	if (strcmp(old, head) != 0) {
		rc = KERR(err, TT_EREFMOVED, "promote: %s is at %.12s, expected %.12s", base, head,
			  strcmp(old, ZERO_SHA) == 0 ? "absent" : old);
		goto done;
	}
	/* Already there: nothing to move, and the base as it is the result.
	 * Else the result is the commit this fast-forward moved the base to --
	 * not the branch read again, which another writer may have moved on. */
	if (strcmp(target, head) == 0)
		rc = state_at(b, repo, base, new_state, err);
	else if ((rc = fast_forward(b, repo, base, head, target, old, err)) == 0)
		rc = state_at(b, repo, target, new_state, err);
done:
	free(repo);
	free(base);
	free(src);
	free(target);
	free(head);
	free(old);
	free(full);
	return rc;
}

/* Whether promote (or merge) could move the base onto source now, asking
 * the questions fast_forward and git_merge ask before they move, and
 * moving nothing. */
static int git_check_move(tt_backend *b, const json_t *loc, const tt_target *source, const tt_expect *expected,
			  bool merge, tt_error *err)
{
	char *repo = NULL, *base = NULL, *src = NULL, *target = NULL, *head = NULL, *now = NULL,
	     *where = NULL, *full = NULL;
	bool dirty = false;
	int rc, anc;

	/* The move itself is conditional on the reviewed head; a base already
	 * elsewhere is said the way the move says it (TT_EREFMOVED). */
	if ((rc = repo_path(b, loc, &repo, err)) < 0 ||
	    (rc = base_branch_in(b, repo, loc, &base, err)) < 0 ||
	    (rc = source_ref(loc, source, &src, err)) < 0 ||
	    (rc = rev_commit(b, repo, src, true, &target, err)) < 0 ||
	    (rc = checked_out(b, repo, &now, err)) < 0)
		goto done;
	bool here = now && strcmp(now, base) == 0;
	if (merge && !here) {
		rc = KERR(err, TT_EBACKEND, "git merges into the checked-out branch; check out %s first",
			  base);
		goto done;
	}
	if (!(full = tt_asprintf("refs/heads/%s", base))) {
		rc = KOOM(err);
		goto done;
	}
	{
		const char *const args[] = { "rev-parse", "--verify", full, NULL };
		if ((rc = git_run(b, repo, args, &head, err)) < 0)
			goto done;
	}
	if (expected && expected->kind != TT_EXPECT_NONE) {
		char *old = NULL;
		if ((rc = old_value(expected, &old, err)) < 0)
			goto done;
		if (old && strcmp(old, head) != 0)
			rc = KERR(err, TT_EREFMOVED, "promote: %s is at %.12s, expected %.12s", base, head,
				  strcmp(old, ZERO_SHA) == 0 ? "absent" : old);
		free(old);
		if (rc < 0)
			goto done;
	}
	if (strcmp(head, target) == 0)
		goto done; /* nothing to move */
	if (!merge) {
		if ((rc = is_ancestor(b, repo, head, target, &anc, err)) < 0)
			goto done;
		if (anc != 1) {
			rc = KERR(err, TT_EBACKEND,
				  "%s moved to %.12s, which is not an ancestor of %.12s; merge instead",
				  base, head, target);
			goto done;
		}
	}
	if (here) {
		if ((rc = worktree_dirty(b, repo, &dirty, err)) < 0)
			goto done;
		if (dirty) {
			rc = KERR(err, TT_EBACKEND, "%s is checked out with uncommitted changes; commit or "
				  "stash them first", base);
			goto done;
		}
		if ((rc = no_lock_left(b, repo, "index.lock", err)) < 0)
			goto done;
	} else {
		if ((rc = worktree_of(b, repo, base, true, &where, err)) < 0)
			goto done;
		if (where) {
			rc = KERR(err, TT_EBACKEND,
				  "%s is checked out in %s; moving it from here would leave that "
				  "checkout describing another commit -- promote from there, or check "
				  "out another branch there first", base, where);
			goto done;
		}
	}
	rc = no_ref_lock_left(b, repo, base, err);
done:
	free(repo);
	free(base);
	free(src);
	free(target);
	free(head);
	free(now);
	free(where);
	free(full);
	return rc;
}

/* `git merge --no-ff` of src into the checked-out base; on failure the
 * unmerged paths are listed (*conflicts), the merge aborted and
 * TT_ECONFLICT returned: the base is left where it was. */
static int merge_checkout(tt_backend *b, const char *repo, const char *base, const char *src,
			  const char *message, json_t **conflicts, tt_error *err)
{
	const char *const args[] = { "merge", "--no-ff", "-m", message ? message : "",
				     "--end-of-options", src, NULL };
	const char *const unmerged[] = { "diff", "--name-only", "--diff-filter=U", NULL };
	const char *const abort_args[] = { "merge", "--abort", NULL };
	tt_error ignored = TT_ERROR_INIT;
	json_t *files = NULL;
	char *list = NULL;
	const char *s;
	size_t n, count = 0;
	int rc, status;
	lines it;

	if ((rc = git_try(b, repo, args, NULL, &status, NULL, err)) < 0 || status == 0)
		goto done;
	git_try(b, repo, unmerged, &list, &status, NULL, &ignored);
	tt_error_clear(&ignored);
	git_try(b, repo, abort_args, NULL, &status, NULL, &ignored);
	tt_error_clear(&ignored);
	if (!(files = json_array())) {
		rc = KOOM(err);
		goto done;
	}
	it = lines_of(list ? list : "");
	while (line_next(&it, &s, &n)) {
		char *f = strip_dup(s, n);
		count++;
		if (!f || (f[0] && json_array_append_new(files, json_string(f)) != 0)) {
			free(f);
			rc = KOOM(err);
			goto done;
		}
		free(f);
	}
	rc = KERR(err, TT_ECONFLICT, "merging %s into %s conflicts in %zu file(s)", src, base, count);
	if (conflicts) {
		*conflicts = files;
		files = NULL;
	}
done:
	json_decref(files);
	free(list);
	return rc;
}

/* The merge commit `git merge --no-ff` just made on base: on its
 * first-parent line, the commit whose parents are exactly the head it
 * merged into and the source -- the branch head itself, unless another
 * writer has committed on top since.  *out NULL when none is found. */
static int made_merge(tt_backend *b, const char *repo, const char *base, const char *was, const char *target,
		      char **out, tt_error *err)
{
	char *full = tt_asprintf("refs/heads/%s", base), *list = NULL;
	const char *s;
	size_t n;
	int rc;
	*out = NULL;
	if (!full)
		return KOOM(err);
	const char *const args[] = { "rev-list", "--first-parent", "--parents", "-n", "1000", full, "--", NULL };
	if ((rc = git_run(b, repo, args, &list, err)) < 0)
		goto done;
	lines it = lines_of(list);
	while (!*out && line_next(&it, &s, &n)) {
		char *line = strip_dup(s, n);
		char *sp1 = line ? strchr(line, ' ') : NULL, *sp2 = sp1 ? strchr(sp1 + 1, ' ') : NULL;
		if (!line) {
			rc = KOOM(err);
			break;
		}
		if (sp1 && sp2 && !strchr(sp2 + 1, ' ')) {
			*sp1 = *sp2 = '\0';
			if (strcmp(sp1 + 1, was) == 0 && strcmp(sp2 + 1, target) == 0 && !(*out = tt_strdup(line)))
				rc = KOOM(err);
		}
		free(line);
	}
done:
	free(full);
	free(list);
	return rc;
}

static int git_merge(tt_backend *b, const json_t *loc, const tt_target *source, const char *message,
		     const tt_expect *expected, json_t **new_state, json_t **conflicts, tt_error *err)
{
	char *repo = NULL, *base = NULL, *src = NULL, *now = NULL, *was = NULL, *target = NULL, *made = NULL;
	bool dirty;
	int rc;

	*new_state = NULL;
	if (conflicts)
		*conflicts = NULL;
	if ((rc = repo_path(b, loc, &repo, err)) < 0 ||
	    (rc = source_ref(loc, source, &src, err)) < 0 ||
	    (rc = base_branch_in(b, repo, loc, &base, err)) < 0 ||
	    (rc = checked_out(b, repo, &now, err)) < 0)
		goto done;
	if (!now || strcmp(now, base) != 0) {
		rc = KERR(err, TT_EBACKEND,
			  "git merges into the checked-out branch; check out %s first", base);
		goto done;
	}
	if ((rc = worktree_dirty(b, repo, &dirty, err)) < 0)
		goto done;
	if (dirty) {
		rc = KERR(err, TT_EBACKEND, "%s has uncommitted changes; commit or stash them first",
			  base);
		goto done;
	}
	if ((rc = no_lock_left(b, repo, "index.lock", err)) < 0 ||
	    (rc = no_ref_lock_left(b, repo, base, err)) < 0)
		goto done;
	/* `git merge` works on the checkout and has no old-value form: the
	 * reviewed head is compared right before it, a check rather than a
	 * swap. */
	if ((rc = tt_check_expected_for(b, loc, NULL, expected, "merge", err)) < 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	{
		const char *const args[] = { "rev-parse", "--verify", "HEAD", NULL };
		if ((rc = git_run(b, repo, args, &was, err)) < 0 ||
		    (rc = rev_commit(b, repo, src, true, &target, err)) < 0)
			goto done;
	}
	if ((rc = merge_checkout(b, repo, base, src, message, conflicts, err)) < 0 ||
	    (rc = made_merge(b, repo, base, was, target, &made, err)) < 0)
		goto done;
	/* The result is the merge commit this merge made; `git merge` names it
	 * nowhere but in the history. */
	if (!made)
		rc = KERR(err, TT_EBACKEND, "merged %s into %s, but the merge commit (parents %.12s and %.12s) is not "
			  "on %s's first-parent line any more; another writer rewrote it", src, base, was, target,
			  base);
	else
		rc = state_at(b, repo, made, new_state, err);
done:
	free(repo);
	free(base);
	free(src);
	free(now);
	free(was);
	free(target);
	free(made);
	return rc;
}

/* --- CREATE -------------------------------------------------------------------------- */

static bool path_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static int git_create(tt_backend *b, const json_t *loc, const char *owner, json_t **state,
		      tt_error *err)
{
	char *repo = NULL, *base = NULL, *root = NULL, *full = NULL;
	int rc;

	*state = NULL;
	if ((rc = repo_path(b, loc, &repo, err)) < 0)
		goto done;
	if (path_exists(repo)) {
		rc = KERR(err, TT_EBACKEND, "%s already exists; `create` never adopts it", repo);
		goto done;
	}
	if ((rc = loc_text(loc, "ref", "main", &base, err)) < 0 ||
	    (rc = guard(base, "ref", err)) < 0 || (rc = guard(owner, "owner", err)) < 0)
		goto done;
	if ((rc = require_version(b, err)) < 0)
		goto done;
	if ((rc = tt_mkdirs(repo, 0777, err)) < 0) {
		tt_error_object(err, NULL, KIND);
		goto done;
	}
	/*
	 * One empty root commit so the base branch exists and can be pinned,
	 * forked and fingerprinted (an unborn HEAD cannot).  Tree, author and
	 * dates are fixed, so every store tether creates has the same root
	 * sha: is_ref_empty compares the base with it, and two creates
	 * fingerprint alike.  Never signed: a signature would change the sha.
	 */
	{
		const char *const init[] = { "init", "-q", "-b", base, NULL };
		const char *const config[] = { "config", "--end-of-options", OWNER_KEY, owner, NULL };
		const char *const commit[] = { "commit-tree", "--no-gpg-sign", TT_GIT_EMPTY_TREE, "-m",
						"tether: created store", NULL };
		if ((rc = git_run(b, repo, init, NULL, err)) < 0 ||
		    (rc = git_run(b, repo, config, NULL, err)) < 0 ||
		    (rc = git_run_env(b, repo, commit, root_env, &root, err)) < 0)
			goto done;
	}
	if (strcmp(root, TT_GIT_EMPTY_ROOT_SHA) != 0) {
		rc = KERR(err, TT_EBACKEND, "unexpected root commit %s (expected %s)", root,
			  TT_GIT_EMPTY_ROOT_SHA);
		goto done;
	}
	if (!(full = tt_asprintf("refs/heads/%s", base))) {
		rc = KOOM(err);
		goto done;
	}
	{
		const char *const update[] = { "update-ref", "--end-of-options", full, root, NULL };
		const char *const reset[] = { "reset", "-q", "--hard", root, NULL };
		if ((rc = git_run(b, repo, update, NULL, err)) < 0 ||
		    (rc = git_run(b, repo, reset, NULL, err)) < 0)
			goto done;
	}
	/* The state this create made: its root commit, clean -- not the store
	 * read again, which a writer quick off the mark may already have moved. */
	rc = state_at(b, repo, root, state, err);
done:
	free(repo);
	free(base);
	free(root);
	free(full);
	return rc;
}

static bool has_git_dir(const char *repo)
{
	return entry_exists(repo, ".git");
}

static int owner_in(tt_backend *b, const char *repo, char **owner, tt_error *err)
{
	const char *const args[] = { "config", "--get", OWNER_KEY, NULL };
	int status, rc;
	*owner = NULL;
	if (!has_git_dir(repo))
		return 0;
	rc = git_try(b, repo, args, owner, &status, NULL, err);
	if (rc == 0 && !**owner) {
		free(*owner);
		*owner = NULL;
	}
	return rc;
}

static int git_owner(tt_backend *b, const json_t *loc, char **owner, tt_error *err)
{
	char *repo = NULL;
	int rc = repo_path(b, loc, &repo, err);
	*owner = NULL;
	if (rc == 0)
		rc = owner_in(b, repo, owner, err);
	free(repo);
	return rc;
}

static bool in_array(const json_t *arr, const char *s)
{
	for (size_t i = 0; i < json_array_size(arr); i++) {
		const char *v = json_string_value(json_array_get(arr, i));
		if (v && strcmp(v, s) == 0)
			return true;
	}
	return false;
}

/* Nothing but the base branch at the root commit, and a clean checkout:
 * files someone put in the working tree - untracked, staged, even ignored -
 * are data too, and delete_store would take them with the directory. */
static int empty_in(tt_backend *b, const char *repo, const json_t *loc, const json_t *ignoring,
		    int *answer, tt_error *err)
{
	const char *const refs_args[] = { "for-each-ref", "--format=%(refname:short)", "refs/heads/",
					  "refs/tags/", NULL };
	const char *const status_args[] = { "--no-optional-locks", "status", "--porcelain", "--ignored",
					    "--untracked-files=all", NULL };
	char *base = NULL, *refs = NULL, *head = NULL, *dirty = NULL;
	const char *s;
	size_t n, stray = 0;
	bool base_seen = false;
	int rc;
	lines it;

	*answer = -1;
	if (!has_git_dir(repo))
		return 0;
	if ((rc = loc_text(loc, "ref", "main", &base, err)) < 0 ||
	    (rc = git_run(b, repo, refs_args, &refs, err)) < 0)
		goto done;
	it = lines_of(refs);
	while (line_next(&it, &s, &n)) {
		char *r = strip_dup(s, n);
		if (!r) {
			rc = KOOM(err);
			goto done;
		}
		if (r[0] && !in_array(ignoring, r)) {
			stray++;
			if (strcmp(r, base) == 0)
				base_seen = true;
		}
		free(r);
	}
	*answer = 0;
	if (stray != 1 || !base_seen)
		goto done;
	/* The base still *at* the root create made - the same sha, not merely
	 * one commit deep (an amended root with files is one commit too). */
	if ((rc = guard(base, "ref", err)) < 0 ||
	    (rc = rev_commit(b, repo, base, false, &head, err)) < 0)
		goto done;
	if (strcmp(head, TT_GIT_EMPTY_ROOT_SHA) != 0)
		goto done;
	if ((rc = git_run(b, repo, status_args, &dirty, err)) < 0)
		goto done;
	*answer = dirty[0] ? 0 : 1;
done:
	if (rc < 0)
		*answer = -1;
	free(base);
	free(refs);
	free(head);
	free(dirty);
	return rc;
}

static int git_is_ref_empty(tt_backend *b, const json_t *loc, const json_t *ignoring, int *answer,
			    tt_error *err)
{
	char *repo = NULL;
	int rc = repo_path(b, loc, &repo, err);
	*answer = -1;
	if (rc == 0)
		rc = empty_in(b, repo, loc, ignoring, answer, err);
	free(repo);
	return rc;
}

static int git_delete_store(tt_backend *b, const json_t *loc, tt_error *err)
{
	char *repo = NULL, *owner = NULL;
	int rc, empty = -1;

	if ((rc = repo_path(b, loc, &repo, err)) < 0)
		goto done;
	if (!has_git_dir(repo) || (rc = owner_in(b, repo, &owner, err)) < 0 || !owner) {
		if (rc == 0)
			rc = KERR(err, TT_EBACKEND,
				  "%s is not a repository tether created; not removing it", repo);
		goto done;
	}
	/* The caller checked; check again here, where the removal is. */
	if ((rc = empty_in(b, repo, loc, NULL, &empty, err)) < 0)
		goto done;
	if (empty != 1) {
		rc = KERR(err, TT_EBACKEND, "%s is not empty (refs, commits, or files in the working "
					    "tree); not removing it", repo);
		goto done;
	}
	if ((rc = tt_remove_tree(repo, err)) < 0)
		tt_error_object(err, NULL, KIND);
done:
	free(repo);
	free(owner);
	return rc;
}

/* --- the vtable ------------------------------------------------------------------------ */

static void git_free(tt_backend *b)
{
	gitobj *g = b->impl;
	if (g) {
		pthread_mutex_destroy(&g->lock);
		free(g->exe);
		free(g->jj);
		free(g);
	}
	b->impl = NULL;
}

static const tt_backend_ops git_ops = {
	.abi = TT_BACKEND_ABI,
	.identity = git_identity,
	.fingerprint = git_fingerprint,
	.pin = git_pin,
	.unpin = git_unpin,
	.list_pins = git_list_pins,
	.verify = git_verify,
	.fork = git_fork,
	.delete_working_ref = git_delete_working_ref,
	.list_working_refs = git_list_working_refs,
	.working_ref_blockers = git_working_ref_blockers,
	.open = git_open,
	.checkout = git_checkout,
	.promote = git_promote,
	.merge = git_merge,
	.check_move = git_check_move,
	.ancestor_of = git_ancestor_of,
	.diff = git_diff,
	.history = git_history,
	.create = git_create,
	.owner = git_owner,
	.is_ref_empty = git_is_ref_empty,
	.delete_store = git_delete_store,
	.base_branch = git_base_branch,
	.check_locator = git_check_locator,
	.free = git_free,
};

/* A non-empty string setting of the backend's config, else the variable. */
static const char *setting(tt_backend *b, const char *key, const char *env)
{
	const json_t *v = json_object_get(b->config, key);
	if (json_is_string(v) && json_string_length(v))
		return json_string_value(v);
	const char *e = getenv(env);
	return e && *e ? e : NULL;
}

int tt_git_backend_new(tt_backend *b, tt_error *err)
{
	gitobj *g = tt_calloc(1, sizeof *g);
	const char *exe, *jj;
	char *found;

	if (!g)
		return KOOM(err);
	/* The executable comes from the untracked secrets.toml (the config
	 * holds only what it set: a committed tether.toml may set nothing
	 * for git), the environment, or PATH. */
	exe = setting(b, "git_path", "TETHER_GIT");
	jj = setting(b, "jj_path", "TETHER_JJ");
	found = tt_proc_which(exe ? exe : "git");
	g->exe = found ? found : tt_strdup(exe ? exe : "git");
	g->jj = jj ? tt_strdup(jj) : NULL;
	if (!g->exe || (jj && !g->jj) || pthread_mutex_init(&g->lock, NULL) != 0) {
		free(g->exe);
		free(g->jj);
		free(g);
		return KOOM(err);
	}
	b->ops = &git_ops;
	b->impl = g;
	return 0;
}
