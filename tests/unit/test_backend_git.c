/*
 * The git backend (backends/gitobj.c) through the conformance suite on real
 * repositories - the 8 racing conditional forks, promote and merge
 * included - and its own hardening: the created root commit is tether-vcs's,
 * a repository's hooks and fsmonitor never run, option-shaped refs and
 * non-hex shas are refused, a branch checked out in another worktree is
 * never moved, paths must be absolute and outside the dataset's checkout,
 * pins go to a configured remote first, and an old git is refused.
 *
 * The tests' own git calls run with hooks and fsmonitor off too, so a
 * marker file can only come from the backend (or from the sharpness probes
 * that show the hook would run).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "backends/git/gitobj.h"
#include "conformance.h"
#include "core/kinds.h"
#include "harness.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"
#include "util/proc.h"

/* --- fixtures ------------------------------------------------------------------- */

static const char *const scrubbed[] = {
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR",
	"GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
	"GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
	"TETHER_GIT", "TETHER_JJ", NULL,
};

static int put(const char *root, const char *rel, const char *text)
{
	tt_error err = TT_ERROR_INIT;
	char *path = rel ? tt_path_join(root, rel) : tt_strdup(root);
	int rc = path ? tt_write_file_atomic(path, text, strlen(text), 0755, &err) : -1;
	tt_error_clear(&err);
	free(path);
	return rc;
}

static bool exists_in(const char *root, const char *rel)
{
	char *path = tt_path_join(root, rel);
	bool yes = path && tt_exists(path);
	free(path);
	return yes;
}

/* Run git (hardened unless raw) in dir; *out (may be NULL) its stdout
 * without trailing newlines.  Returns the exit status, -1 when it could
 * not run. */
static int vgit(bool raw, const char *dir, const char *const *env, char **out, va_list ap)
{
	const char *argv[64];
	size_t n = 0;
	tt_proc_result r;
	tt_error err = TT_ERROR_INIT;
	int status = -1;

	argv[n++] = "git";
	if (!raw) {
		argv[n++] = "-c";
		argv[n++] = "core.hooksPath=/dev/null";
		argv[n++] = "-c";
		argv[n++] = "core.fsmonitor=false";
	}
	if (dir) {
		argv[n++] = "-C";
		argv[n++] = dir;
	}
	while (n < 63 && (argv[n] = va_arg(ap, const char *)) != NULL)
		n++;
	argv[n] = NULL;
	tt_proc_opts opts = { .argv = argv, .env_set = env };
	tt_proc_result_init(&r);
	if (out)
		*out = NULL;
	if (tt_proc_run(&opts, &r, &err) == 0) {
		status = r.status;
		if (status != 0 && r.err.len)
			fprintf(stderr, "  git: %s", r.err.ptr);
		while (r.out.len && r.out.ptr[r.out.len - 1] == '\n')
			tt_buf_truncate(&r.out, r.out.len - 1);
		if (out)
			*out = tt_buf_detach(&r.out);
	}
	tt_proc_result_release(&r);
	tt_error_clear(&err);
	return status;
}

static int git_env(const char *dir, const char *const *env, char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = vgit(false, dir, env, out, ap);
	va_end(ap);
	return rc;
}

static int raw_git(const char *dir, char **out, ...)
{
	va_list ap;
	va_start(ap, out);
	int rc = vgit(true, dir, NULL, out, ap);
	va_end(ap);
	return rc;
}

#define G(dir, ...) git_env(dir, NULL, NULL, __VA_ARGS__, (const char *)NULL)
#define GOUT(dir, out, ...) git_env(dir, NULL, out, __VA_ARGS__, (const char *)NULL)

/* A private global config (identity, no signing) and a clean environment;
 * returns the case's directory (resolved). */
static char *setup(void)
{
	char *tmp = tt_realpath(tt_test_tmpdir());
	char *cfg = tmp ? tt_path_join(tmp, "gitconfig") : NULL;
	if (!cfg || put(tmp, "gitconfig",
			"[user]\n\tname = Test User\n\temail = test@example.com\n"
			"[commit]\n\tgpgsign = false\n[advice]\n\tdetachedHead = false\n") != 0) {
		free(cfg);
		free(tmp);
		return NULL;
	}
	setenv("GIT_CONFIG_GLOBAL", cfg, 1);
	setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
	for (size_t i = 0; scrubbed[i]; i++)
		unsetenv(scrubbed[i]);
	free(cfg);
	return tmp;
}

/* tmp/name: a repository on main with one commit (README). */
static char *new_repo(const char *tmp, const char *name)
{
	tt_error err = TT_ERROR_INIT;
	char *root = tt_path_join(tmp, name);
	if (!root || tt_mkdirs(root, 0755, &err) != 0 || put(root, "README", "hello\n") != 0 ||
	    G(root, "init", "-q", "-b", "main") != 0 || G(root, "add", "README") != 0 ||
	    G(root, "commit", "-q", "-m", "initial") != 0) {
		free(root);
		root = NULL;
	}
	tt_error_clear(&err);
	return root;
}

static char *head_of(const char *repo, const char *ref)
{
	char *out = NULL;
	if (GOUT(repo, &out, "rev-parse", "--verify", "--quiet", ref) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/*
 * Commit a new file on branch (NULL or the checked-out branch: in the
 * checkout).  A branch that is not checked out cannot take a normal
 * commit, so it gets one through plumbing: a private index, write-tree,
 * commit-tree and a conditional update-ref.
 */
static int commit_on(const char *tmp, const char *repo, const char *branch, const char *file,
		     const char *text)
{
	char *cur = NULL, *idx = NULL, *blobfile = NULL, *blob = NULL, *tree = NULL, *commit = NULL,
	     *old = NULL, *cacheinfo = NULL, *full = NULL, *envidx = NULL;
	int rc = -1;

	GOUT(repo, &cur, "symbolic-ref", "--short", "-q", "HEAD");
	if (!branch || (cur && strcmp(cur, branch) == 0)) {
		rc = put(repo, file, text) == 0 && G(repo, "add", "--", file) == 0 &&
				     G(repo, "commit", "-q", "-m", file) == 0
			     ? 0
			     : -1;
		goto done;
	}
	static int seq;
	idx = tt_asprintf("%s/index-%d", tmp, ++seq);
	blobfile = tt_asprintf("%s/blob-%d", tmp, seq);
	full = tt_asprintf("refs/heads/%s", branch);
	envidx = idx ? tt_asprintf("GIT_INDEX_FILE=%s", idx) : NULL;
	if (!idx || !blobfile || !full || !envidx || put(blobfile, NULL, text) != 0)
		goto done;
	const char *const env[] = { envidx, NULL };
	if (GOUT(repo, &blob, "hash-object", "-w", blobfile) != 0 || !(old = head_of(repo, full)) ||
	    !(cacheinfo = tt_asprintf("100644,%s,%s", blob, file)) ||
	    git_env(repo, env, NULL, "read-tree", old, (const char *)NULL) != 0 ||
	    git_env(repo, env, NULL, "update-index", "--add", "--cacheinfo", cacheinfo,
		    (const char *)NULL) != 0 ||
	    git_env(repo, env, &tree, "write-tree", (const char *)NULL) != 0 ||
	    GOUT(repo, &commit, "commit-tree", tree, "-p", old, "-m", file) != 0 ||
	    G(repo, "update-ref", full, commit, old) != 0)
		goto done;
	rc = 0;
done:
	free(cur);
	free(idx);
	free(blobfile);
	free(blob);
	free(tree);
	free(commit);
	free(old);
	free(cacheinfo);
	free(full);
	free(envidx);
	return rc;
}

static tt_backend *git_backend(const json_t *config, const char *checkout)
{
	tt_backend *b = NULL;
	tt_error err = TT_ERROR_INIT;
	if (tt_backend_new(&b, tt_kind_find("git"), config, NULL, checkout, &err) != 0)
		fprintf(stderr, "  tt_backend_new(git): %s\n", tt_error_text(&err));
	tt_error_clear(&err);
	return b;
}

static json_t *loc_of(const char *path)
{
	return json_pack("{s:s}", "path", path);
}

/* --- the conformance harness -------------------------------------------------------- */

typedef struct harness_ctx {
	const char *tmp;
	int objects, fresh, writes;
} harness_ctx;

static int h_new_object(void *p, json_t **loc)
{
	harness_ctx *c = p;
	char name[32];
	snprintf(name, sizeof name, "obj%d", ++c->objects);
	char *repo = new_repo(c->tmp, name);
	*loc = repo ? loc_of(repo) : NULL;
	free(repo);
	return *loc ? 0 : -1;
}

/* A new file per call: two calls on two branches never touch one file, so
 * the suite's merge is clean. */
static int h_mutate(void *p, const json_t *loc, const char *ref)
{
	harness_ctx *c = p;
	char file[32], text[64];
	snprintf(file, sizeof file, "f%d.txt", ++c->writes);
	snprintf(text, sizeof text, "write %d\n", c->writes);
	int rc = commit_on(c->tmp, json_string_value(json_object_get(loc, "path")), ref, file, text);
	if (rc)
		fprintf(stderr, "  mutate(%s) failed\n", ref ? ref : "base");
	return rc;
}

static int h_fresh(void *p, json_t **loc)
{
	harness_ctx *c = p;
	char *path = tt_asprintf("%s/created/store%d", c->tmp, ++c->fresh);
	*loc = path ? loc_of(path) : NULL;
	free(path);
	return *loc ? 0 : -1;
}

TT_TEST(conformance_git)
{
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *ds = tt_path_join(tmp, "dataset");
	CHECK(ds && mkdir(ds, 0755) == 0);
	tt_backend *b = git_backend(NULL, ds);
	harness_ctx c = { .tmp = tmp };
	tt_conformance_harness h = { .backend = b, .new_object = h_new_object, .mutate = h_mutate,
				     .fresh_locator = h_fresh, .ctx = &c, .label = "conformance/git" };
	json_t *failures = json_array();
	h.failures = failures;
	int failed = b ? tt_conformance_run(&h) : -1;
	/* The suite's race checks ran: exactly one of eight forks won each. */
	bool raced = b != NULL;
	tt_backend_free(b);
	json_decref(failures);
	free(ds);
	free(tmp);
	CHECK(raced);
	CHECK_INT(failed, 0);
}

/* --- create and the root commit -------------------------------------------------------- */

TT_TEST(create_root_is_tether_vcs_root)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *path = NULL, *body = NULL, *owner = NULL, *branch = NULL;
	json_t *loc = NULL, *state = NULL, *junk = NULL;
	tt_backend *b = git_backend(NULL, NULL);
	int empty = -1;
	CHECK(tmp && b);
	/* tether-vcs's GitBackend.EMPTY_ROOT_SHA. */
	CHECK_STR(TT_GIT_EMPTY_ROOT_SHA, "5a2cfa770badaceb6c6de5171fdf82c871fa40de");
	path = tt_asprintf("%s/made/store", tmp);
	loc = json_pack("{s:s, s:s}", "path", path, "ref", "trunk");
	CHECK_OK(b->ops->create(b, loc, "0a1b2c3d", &state, &err));
	CHECK_STR(json_string_value(json_object_get(state, "sha")), TT_GIT_EMPTY_ROOT_SHA);
	CHECK(json_is_false(json_object_get(state, "dirty")));
	CHECK(json_object_get(state, "change_id") == NULL);
	CHECK_INT(GOUT(path, &branch, "symbolic-ref", "--short", "HEAD"), 0);
	CHECK_STR(branch, "trunk");
	CHECK_INT(GOUT(path, &body, "cat-file", "-p", TT_GIT_EMPTY_ROOT_SHA), 0);
	CHECK_STR(body, "tree " TT_GIT_EMPTY_TREE "\n"
			"author tether <tether@localhost> 946684800 +0000\n"
			"committer tether <tether@localhost> 946684800 +0000\n\n"
			"tether: created store");
	CHECK_OK(b->ops->owner(b, loc, &owner, &err));
	CHECK_STR(owner, "0a1b2c3d");
	CHECK_OK(b->ops->is_ref_empty(b, loc, NULL, &empty, &err));
	CHECK_INT(empty, 1);
	/* An untracked (or ignored) file is data: not empty, not deleted. */
	CHECK(put(path, "notes.txt", "keep me\n") == 0);
	CHECK_OK(b->ops->is_ref_empty(b, loc, NULL, &empty, &err));
	CHECK_INT(empty, 0);
	CHECK_INT(b->ops->delete_store(b, loc, &err), TT_EBACKEND);
	CHECK(strstr(err.message, "is not empty"));
	CHECK(exists_in(path, "notes.txt"));
	tt_error_clear(&err);
	CHECK_INT(b->ops->create(b, loc, "0a1b2c3d", &junk, &err), TT_EBACKEND);
	CHECK(strstr(err.message, "already exists; `create` never adopts it"));
	tt_error_clear(&err);
	/* A repository tether did not create is never removed. */
	char *other = new_repo(tmp, "foreign");
	json_t *floc = loc_of(other);
	CHECK_INT(b->ops->delete_store(b, floc, &err), TT_EBACKEND);
	CHECK(strstr(err.message, "is not a repository tether created"));
	CHECK(exists_in(other, "README"));
	json_decref(floc);
	free(other);
	tt_error_clear(&err);
	tt_backend_free(b);
	json_decref(loc);
	json_decref(state);
	json_decref(junk);
	free(tmp);
	free(path);
	free(body);
	free(owner);
	free(branch);
}

/* --- hooks and fsmonitor never run ------------------------------------------------------------ */

/* Every hook git has that a backend operation could reach, each appending
 * its name to marker. */
static const char *const hook_names[] = {
	"pre-commit", "prepare-commit-msg", "commit-msg", "post-commit", "pre-merge-commit",
	"post-merge", "post-checkout", "reference-transaction", "pre-push", "post-rewrite",
	"pre-auto-gc", "post-index-change", "push-to-checkout", NULL,
};

static int install_hooks(const char *dir, const char *marker)
{
	char *script = tt_asprintf("#!/bin/sh\necho \"$0\" >> '%s'\nexit 0\n", marker);
	int rc = script ? 0 : -1;
	tt_error err = TT_ERROR_INIT;
	if (rc == 0)
		rc = tt_mkdirs(dir, 0755, &err) == 0 ? 0 : -1;
	tt_error_clear(&err);
	for (size_t i = 0; rc == 0 && hook_names[i]; i++)
		rc = put(dir, hook_names[i], script);
	free(script);
	return rc;
}

/* Run most of the backend against loc: fingerprint, pin (pushed), fork,
 * promote (a fast-forward in the checkout), merge, history, diff, unpin,
 * delete.  Returns the number of calls that failed. */
static int exercise(tt_backend *b, const char *tmp, const json_t *loc)
{
	tt_error err = TT_ERROR_INIT;
	json_t *s0 = NULL, *s1 = NULL, *moved = NULL, *merged = NULL, *conf = NULL, *ids = NULL;
	char *wref = NULL, *wref2 = NULL;
	tt_pin pin;
	tt_history_entry *hist = NULL;
	size_t nh = 0;
	tt_object_diff d;
	tt_verify_status st;
	char *msg = NULL;
	const char *repo = json_string_value(json_object_get(loc, "path"));
	tt_expect none = { TT_EXPECT_NONE, NULL }, absent = { TT_EXPECT_ABSENT, NULL };
	int failed = 0;

	tt_object_diff_init(&d, "files");
#define TRY(expr)                                                                            \
	do {                                                                                 \
		if ((expr) != 0) {                                                           \
			fprintf(stderr, "  %s: %s\n", #expr, tt_error_text(&err));           \
			failed++;                                                            \
		}                                                                            \
		tt_error_clear(&err);                                                        \
	} while (0)
	TRY(b->ops->fingerprint(b, loc, NULL, &s0, &err));
	TRY(b->ops->pin(b, loc, s0, "c0fe5a1e.0000000000000001", &pin, &err));
	TRY(b->ops->verify(b, loc, s0, &pin, true, &st, &msg, &err));
	tt_target from_pin = { TT_TARGET_PIN, NULL, &pin, NULL };
	TRY(b->ops->fork(b, loc, &from_pin, "tether.ws.hooks", &absent, &wref, &err));
	if (commit_on(tmp, repo, "tether.ws.hooks", "hooked.txt", "x\n") != 0)
		failed++;
	tt_target fork_ref = { TT_TARGET_REF, "tether.ws.hooks", NULL, NULL };
	TRY(b->ops->promote(b, loc, &fork_ref, &none, &moved, &err));
	TRY(b->ops->fork(b, loc, &from_pin, "tether.ws.hooks2", &none, &wref2, &err));
	if (commit_on(tmp, repo, "tether.ws.hooks2", "hooked2.txt", "y\n") != 0)
		failed++;
	tt_target fork2 = { TT_TARGET_REF, "tether.ws.hooks2", NULL, NULL };
	TRY(b->ops->merge(b, loc, &fork2, "merge it", &none, &merged, &conf, &err));
	TRY(b->ops->fingerprint(b, loc, NULL, &s1, &err));
	TRY(b->ops->history(b, loc, NULL, 10, &hist, &nh, &err));
	TRY(b->ops->diff(b, loc, s0, s1, NULL, NULL, &d, &err));
	TRY(b->ops->list_pins(b, loc, &ids, &err));
	TRY(b->ops->unpin(b, loc, &pin, &err));
	TRY(b->ops->delete_working_ref(b, loc, "tether.ws.hooks", &err));
	TRY(b->ops->delete_working_ref(b, loc, "tether.ws.hooks2", &err));
#undef TRY
	json_decref(s0);
	json_decref(s1);
	json_decref(moved);
	json_decref(merged);
	json_decref(conf);
	json_decref(ids);
	free(wref);
	free(wref2);
	free(msg);
	tt_history_release(hist, nh);
	tt_object_diff_release(&d);
	return failed;
}

TT_TEST(hooks_never_run)
{
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *repo = new_repo(tmp, "hooked");
	char *remote = tt_path_join(tmp, "remote.git");
	char *marker = tt_path_join(tmp, "HOOK-RAN");
	char *hooks = tt_path_join(repo, ".git/hooks");
	char *custom = tt_path_join(tmp, "custom-hooks");
	CHECK(repo && remote && marker && hooks && custom);
	CHECK_INT(G(NULL, "init", "-q", "--bare", remote), 0);
	CHECK_INT(G(repo, "remote", "add", "origin", remote), 0);
	/* In git's default place and where the repository's config points. */
	CHECK_INT(install_hooks(hooks, marker), 0);
	CHECK_INT(install_hooks(custom, marker), 0);
	CHECK_INT(G(repo, "config", "core.hooksPath", custom), 0);
	/* Sharp: plain git runs them. */
	CHECK_INT(raw_git(repo, NULL, "tag", "probe", (const char *)NULL), 0);
	CHECK(tt_exists(marker));
	CHECK_INT(unlink(marker), 0);
	CHECK_INT(G(repo, "tag", "-d", "probe"), 0);

	tt_backend *b = git_backend(NULL, NULL);
	json_t *loc = json_pack("{s:s, s:s}", "path", repo, "remote", "origin");
	CHECK(b && loc);
	CHECK_INT(exercise(b, tmp, loc), 0);
	CHECK_MSG(!tt_exists(marker), "a hook ran during a backend operation");
	/* CREATE too (init, commit-tree, update-ref, reset). */
	char *made = tt_path_join(tmp, "made");
	json_t *mloc = loc_of(made), *st = NULL;
	tt_error err = TT_ERROR_INIT;
	char *tpl = tt_path_join(tmp, "template");
	char *tpl_hooks = tt_path_join(tpl, "hooks");
	CHECK_INT(install_hooks(tpl_hooks, marker), 0);
	CHECK_INT(G(NULL, "config", "--global", "init.templateDir", tpl), 0);
	CHECK_OK(b->ops->create(b, mloc, "0a1b2c3d", &st, &err));
	CHECK_MSG(!tt_exists(marker), "a hook ran during create");
	G(NULL, "config", "--global", "--unset", "init.templateDir");
	json_decref(st);
	json_decref(mloc);
	json_decref(loc);
	tt_backend_free(b);
	free(made);
	free(tpl);
	free(tpl_hooks);
	free(tmp);
	free(repo);
	free(remote);
	free(marker);
	free(hooks);
	free(custom);
}

TT_TEST(fsmonitor_never_runs)
{
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *repo = new_repo(tmp, "watched");
	char *marker = tt_path_join(tmp, "FSMONITOR-RAN");
	char *prog = tt_path_join(tmp, "fsmonitor.sh");
	char *script = tt_asprintf("#!/bin/sh\necho \"$@\" >> '%s'\nexit 1\n", marker);
	CHECK(repo && marker && prog && script);
	CHECK_INT(put(prog, NULL, script), 0);
	CHECK_INT(G(repo, "config", "core.fsmonitor", prog), 0);
	/* Sharp: plain `git status` runs it. */
	CHECK_INT(raw_git(repo, NULL, "status", "--porcelain", (const char *)NULL), 0);
	CHECK(tt_exists(marker));
	CHECK_INT(unlink(marker), 0);

	tt_backend *b = git_backend(NULL, NULL);
	json_t *loc = loc_of(repo);
	CHECK(b && loc);
	CHECK(put(repo, "stray.txt", "untracked\n") == 0);
	json_t *state = NULL;
	tt_error err = TT_ERROR_INIT;
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &state, &err));
	CHECK(json_is_true(json_object_get(state, "dirty")));
	json_decref(state);
	char *stray = tt_path_join(repo, "stray.txt");
	CHECK_INT(unlink(stray), 0);
	free(stray);
	CHECK_INT(exercise(b, tmp, loc), 0);
	CHECK_MSG(!tt_exists(marker), "core.fsmonitor ran during a backend operation");
	json_decref(loc);
	tt_backend_free(b);
	free(tmp);
	free(repo);
	free(marker);
	free(prog);
	free(script);
}

/* --- injection ------------------------------------------------------------------------------ */

static bool refused_with(int rc, tt_error *err, const char *text)
{
	bool ok = rc == TT_EBACKEND && err->message && strstr(err->message, text) &&
		  err->kind && strcmp(err->kind, "git") == 0;
	if (!ok)
		fprintf(stderr, "  got %d: %s (wanted '%s')\n", rc, err->message ? err->message : "",
			text);
	tt_error_clear(err);
	return ok;
}

TT_TEST(option_refs_refused)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *repo = new_repo(tmp, "victim");
	char *out = tt_path_join(tmp, "written");
	char *opt = tt_asprintf("--output=%s", out);
	tt_backend *b = git_backend(NULL, NULL);
	json_t *s = NULL, *h = NULL, *loc, *good = loc_of(repo), *state = NULL;
	char *ref = NULL;
	tt_history_entry *e = NULL;
	size_t n = 0;
	tt_pin pin;
	CHECK(repo && b && opt && good);
	CHECK_OK(b->ops->fingerprint(b, good, NULL, &state, &err));

	loc = json_pack("{s:s, s:s}", "path", repo, "ref", opt);
	CHECK(refused_with(b->ops->fingerprint(b, loc, NULL, &s, &err), &err, "looks like an option"));
	CHECK(refused_with(b->ops->history(b, loc, NULL, 5, &e, &n, &err), &err,
			   "looks like an option"));
	tt_target base = { TT_TARGET_BASE, NULL, NULL, NULL };
	CHECK(refused_with(b->ops->open(b, loc, &base, true, &h, &err), &err, "looks like an option"));
	json_decref(loc);
	loc = json_pack("{s:s, s:s}", "path", repo, "at", "-p");
	CHECK(refused_with(b->ops->fingerprint(b, loc, NULL, &s, &err), &err,
			   "git ref '-p' looks like an option; refused"));
	json_decref(loc);
	loc = json_pack("{s:s, s:s}", "path", repo, "remote", "--receive-pack=touch x");
	CHECK(refused_with(b->ops->pin(b, loc, state, "c0fe5a1e.1", &pin, &err), &err,
			   "git remote '--receive-pack=touch x' looks like an option"));
	json_decref(loc);
	CHECK(refused_with(b->ops->fingerprint(b, good, "--output=x", &s, &err), &err,
			   "looks like an option"));
	tt_target src = { TT_TARGET_STATE, NULL, NULL, state };
	CHECK(refused_with(b->ops->fork(b, good, &src, "--force", NULL, &ref, &err), &err,
			   "git branch '--force' looks like an option"));
	CHECK(refused_with(b->ops->delete_working_ref(b, good, "-D", &err), &err,
			   "looks like an option"));
	tt_target bad_ref = { TT_TARGET_REF, "--all", NULL, NULL };
	tt_expect none = { TT_EXPECT_NONE, NULL };
	CHECK(refused_with(b->ops->promote(b, good, &bad_ref, &none, &s, &err), &err,
			   "git source '--all' looks like an option"));
	CHECK(refused_with(b->ops->history(b, good, "-p", 3, &e, &n, &err), &err,
			   "looks like an option"));
	/* Nothing reached git as an option. */
	CHECK(!tt_exists(out));
	CHECK(s == NULL && h == NULL && ref == NULL && e == NULL);
	json_decref(good);
	json_decref(state);
	tt_backend_free(b);
	free(tmp);
	free(repo);
	free(out);
	free(opt);
}

TT_TEST(non_hex_sha_refused)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *repo = new_repo(tmp, "victim");
	tt_backend *b = git_backend(NULL, NULL);
	json_t *loc = loc_of(repo), *real = NULL, *h = NULL, *s = NULL;
	tt_pin pin;
	tt_verify_status st;
	char *msg = NULL, *ref = NULL;
	int answer;
	tt_object_diff d;
	CHECK(repo && b && loc);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &real, &err));
	static const char *const bad[] = { "HEAD", "main", "--output=x", "ABCDEF12", "abc", "" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		json_t *state = json_pack("{s:s, s:b}", "sha", bad[i], "dirty", 0);
		tt_target t = { TT_TARGET_STATE, NULL, NULL, state };
		tt_expect none = { TT_EXPECT_NONE, NULL }, ex = { TT_EXPECT_STATE, state };
		CHECK(refused_with(b->ops->pin(b, loc, state, "c0fe5a1e.2", &pin, &err), &err,
				   "not a git commit id"));
		CHECK(refused_with(b->ops->verify(b, loc, state, NULL, true, &st, &msg, &err), &err,
				   "not a git commit id"));
		CHECK(refused_with(b->ops->open(b, loc, &t, true, &h, &err), &err,
				   "not a git commit id"));
		CHECK(refused_with(b->ops->fork(b, loc, &t, "tether.ws.x", &none, &ref, &err), &err,
				   "not a git commit id"));
		tt_target head = { TT_TARGET_STATE, NULL, NULL, real };
		CHECK(refused_with(b->ops->fork(b, loc, &head, "tether.ws.x", &ex, &ref, &err), &err,
				   "not a git commit id"));
		CHECK(refused_with(b->ops->ancestor_of(b, loc, state, &head, &answer, &err), &err,
				   "not a git commit id"));
		CHECK(refused_with(b->ops->promote(b, loc, &t, &none, &s, &err), &err,
				   "not a git commit id"));
		CHECK(refused_with(b->ops->diff(b, loc, real, state, NULL, NULL, &d, &err), &err,
				   "not a git commit id"));
		tt_object_diff_release(&d);
		json_decref(state);
	}
	json_t *state = json_pack("{s:s}", "sha", "HEAD");
	CHECK(refused_with(b->ops->pin(b, loc, state, "c0fe5a1e.2", &pin, &err), &err,
			   "not a git commit id: 'HEAD'"));
	json_decref(state);
	CHECK(h == NULL && s == NULL && ref == NULL && msg == NULL);
	json_decref(loc);
	json_decref(real);
	tt_backend_free(b);
	free(tmp);
	free(repo);
}

/* --- worktrees ---------------------------------------------------------------------------- */

TT_TEST(branch_checked_out_elsewhere_refused)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *repo = new_repo(tmp, "main-repo");
	char *wt = tt_path_join(tmp, "other-worktree");
	tt_backend *b = git_backend(NULL, NULL);
	json_t *loc = loc_of(repo), *base = NULL, *head = NULL, *s = NULL;
	char *ref = NULL, *before = NULL, *after = NULL;
	CHECK(repo && wt && b && loc);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &base, &err));
	CHECK_INT(G(repo, "worktree", "add", "-q", "-b", "tether.ws.busy", wt), 0);
	CHECK_INT(commit_on(tmp, wt, NULL, "busy.txt", "busy\n"), 0);
	CHECK_OK(b->ops->fingerprint(b, loc, "tether.ws.busy", &head, &err));
	before = head_of(repo, "refs/heads/tether.ws.busy");
	tt_target src = { TT_TARGET_STATE, NULL, NULL, base };
	/* Conditional: the right expected, still refused. */
	tt_expect ex = { TT_EXPECT_STATE, head };
	CHECK(refused_with(b->ops->fork(b, loc, &src, "tether.ws.busy", &ex, &ref, &err), &err,
			   "is checked out in"));
	/* Unconditional: `branch -f` refuses it too. */
	tt_expect none = { TT_EXPECT_NONE, NULL };
	CHECK_INT(b->ops->fork(b, loc, &src, "tether.ws.busy", &none, &ref, &err), TT_EBACKEND);
	tt_error_clear(&err);
	after = head_of(repo, "refs/heads/tether.ws.busy");
	CHECK_STR(after, before);
	/* Promote onto a base checked out in another worktree: refused. */
	json_t *wloc = json_pack("{s:s, s:s}", "path", repo, "ref", "tether.ws.busy");
	CHECK_INT(G(repo, "branch", "ahead", "tether.ws.busy"), 0);
	CHECK_INT(commit_on(tmp, repo, "ahead", "ahead.txt", "ahead\n"), 0);
	tt_target ahead = { TT_TARGET_REF, "ahead", NULL, NULL };
	CHECK(refused_with(b->ops->promote(b, wloc, &ahead, &none, &s, &err), &err,
			   "is checked out in"));
	free(after);
	after = head_of(repo, "refs/heads/tether.ws.busy");
	CHECK_STR(after, before);
	json_decref(wloc);
	json_decref(loc);
	json_decref(base);
	json_decref(head);
	tt_backend_free(b);
	free(tmp);
	free(repo);
	free(wt);
	free(before);
	free(after);
}

/* --- paths ------------------------------------------------------------------------------------ */

TT_TEST(paths_checked_at_every_call)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *ds = tt_path_join(tmp, "dataset");
	CHECK(ds && mkdir(ds, 0755) == 0);
	char *inside = new_repo(ds, "code");
	char *outside = new_repo(tmp, "code");
	tt_backend *b = git_backend(NULL, ds);
	json_t *s = NULL, *loc;
	CHECK(inside && outside && b);

	loc = loc_of(inside);
	CHECK(refused_with(b->ops->fingerprint(b, loc, NULL, &s, &err), &err,
			   "is inside the dataset's checkout"));
	json_decref(loc);
	/* Through a symlink from outside: still inside. */
	char *link = tt_path_join(tmp, "link");
	CHECK(symlink(inside, link) == 0);
	loc = loc_of(link);
	CHECK(refused_with(b->ops->fingerprint(b, loc, NULL, &s, &err), &err,
			   "is inside the dataset's checkout"));
	json_decref(loc);
	loc = json_pack("{s:s}", "uri", "code");
	CHECK(refused_with(b->ops->fingerprint(b, loc, NULL, &s, &err), &err,
			   "git path 'code' is not absolute"));
	json_decref(loc);
	loc = json_pack("{s:s}", "uri", "https://example.com/code.git");
	CHECK(refused_with(b->ops->fingerprint(b, loc, NULL, &s, &err), &err,
			   "needs a local 'path'"));
	json_decref(loc);
	loc = json_object();
	CHECK(refused_with(b->ops->fingerprint(b, loc, NULL, &s, &err), &err,
			   "needs a local 'path'"));
	json_decref(loc);
	CHECK(s == NULL);
	/* The positional uri works, and identity is the resolved path. */
	loc = json_pack("{s:s}", "uri", outside);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &s, &err));
	json_t *ident = NULL;
	CHECK_OK(b->ops->identity(b, loc, &ident, &err));
	CHECK_STR(json_string_value(json_object_get(ident, "path")), outside);
	json_decref(ident);
	json_decref(loc);
	json_decref(s);
	tt_backend_free(b);
	free(tmp);
	free(ds);
	free(inside);
	free(outside);
	free(link);
}

/* --- states ------------------------------------------------------------------------------------ */

TT_TEST(state_shape_and_dirty)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *repo = new_repo(tmp, "code");
	tt_backend *b = git_backend(NULL, NULL);
	json_t *loc = loc_of(repo), *clean = NULL, *dirty = NULL, *side = NULL, *at = NULL;
	tt_pin pin;
	char *sha = head_of(repo, "HEAD");
	CHECK(repo && b && loc && sha);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &clean, &err));
	CHECK_INT(json_object_size(clean), 2);
	CHECK_STR(json_string_value(json_object_get(clean, "sha")), sha);
	CHECK(json_is_false(json_object_get(clean, "dirty")));
	/* A stray file makes the checked-out ref dirty, and only it. */
	CHECK(put(repo, "stray.txt", "x\n") == 0);
	CHECK_INT(G(repo, "branch", "side"), 0);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &dirty, &err));
	CHECK(json_is_true(json_object_get(dirty, "dirty")));
	CHECK_OK(b->ops->fingerprint(b, loc, "side", &side, &err));
	CHECK(json_is_false(json_object_get(side, "dirty")));
	json_decref(side);
	CHECK_OK(b->ops->fingerprint(b, loc, "main", &side, &err));
	CHECK(json_is_true(json_object_get(side, "dirty")));
	CHECK(tt_states_equal(b->kind, clean, dirty));
	/* A dirty tree is not pinned without allow_dirty. */
	CHECK(refused_with(b->ops->pin(b, loc, dirty, "c0fe5a1e.3", &pin, &err), &err,
			   "refusing to pin a dirty working tree (set allow_dirty)"));
	json_t *allow = json_pack("{s:s, s:b}", "path", repo, "allow_dirty", 1);
	CHECK_OK(b->ops->pin(b, allow, dirty, "c0fe5a1e.3", &pin, &err));
	CHECK(pin.created);
	CHECK_STR(pin.ref, "tether.c0fe5a1e.3");
	/* `at` names a commit: detached there, never dirty. */
	json_t *atloc = json_pack("{s:s, s:s}", "path", repo, "at", "tether.c0fe5a1e.3");
	CHECK_OK(b->ops->fingerprint(b, atloc, NULL, &at, &err));
	CHECK_STR(json_string_value(json_object_get(at, "sha")), sha);
	CHECK(json_is_false(json_object_get(at, "dirty")));
	json_decref(atloc);
	json_decref(allow);
	json_decref(loc);
	json_decref(clean);
	json_decref(dirty);
	json_decref(side);
	json_decref(at);
	tt_backend_free(b);
	free(tmp);
	free(repo);
	free(sha);
}

/* --- pins on a remote ------------------------------------------------------------------------- */

TT_TEST(pins_pushed_to_remote)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *repo = new_repo(tmp, "code");
	char *remote = tt_path_join(tmp, "remote.git");
	char *gone = tt_path_join(tmp, "nowhere.git");
	tt_backend *b = git_backend(NULL, NULL);
	json_t *loc = json_pack("{s:s, s:s}", "path", repo, "remote", "origin"), *state = NULL;
	tt_pin pin;
	char *remote_tag = NULL, *local = NULL;
	CHECK(repo && remote && b && loc);
	CHECK_INT(G(NULL, "init", "-q", "--bare", remote), 0);
	CHECK_INT(G(repo, "remote", "add", "origin", remote), 0);
	CHECK_INT(G(repo, "remote", "add", "broken", gone), 0);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &state, &err));
	CHECK_OK(b->ops->pin(b, loc, state, "c0fe5a1e.4", &pin, &err));
	CHECK_INT(GOUT(remote, &remote_tag, "rev-parse", "--verify", "--quiet",
		       "refs/tags/tether.c0fe5a1e.4"), 0);
	CHECK_STR(remote_tag, json_string_value(json_object_get(state, "sha")));
	CHECK_OK(b->ops->unpin(b, loc, &pin, &err));
	free(remote_tag);
	remote_tag = NULL;
	CHECK(GOUT(remote, &remote_tag, "tag", "--list", "tether.*") == 0 && remote_tag[0] == '\0');
	/* Unpinning again: gone on both sides is success. */
	CHECK_OK(b->ops->unpin(b, loc, &pin, &err));
	/* A failed push fails the pin and leaves no local tag. */
	json_t *bad = json_pack("{s:s, s:s}", "path", repo, "remote", "broken");
	CHECK(refused_with(b->ops->pin(b, bad, state, "c0fe5a1e.5", &pin, &err), &err,
			   "pin tether.c0fe5a1e.5 was not pushed to broken"));
	local = head_of(repo, "refs/tags/tether.c0fe5a1e.5");
	CHECK(local == NULL);
	json_decref(bad);
	/* A committed locator names a configured remote, never a URL. */
	bad = json_pack("{s:s, s:s}", "path", repo, "remote", remote);
	CHECK(refused_with(b->ops->pin(b, bad, state, "c0fe5a1e.6", &pin, &err), &err,
			   "is not a remote configured in"));
	json_decref(bad);
	/* A URL is fine from secrets (the backend's config / secret rules). */
	json_t *config = json_pack("{s:s}", "remote", remote);
	tt_backend *sb = git_backend(config, NULL);
	json_t *plain = loc_of(repo);
	CHECK_OK(sb->ops->pin(sb, plain, state, "c0fe5a1e.7", &pin, &err));
	free(remote_tag);
	remote_tag = NULL;
	CHECK_INT(GOUT(remote, &remote_tag, "tag", "--list", "tether.*"), 0);
	CHECK_STR(remote_tag, "tether.c0fe5a1e.7");
	tt_backend_free(sb);
	json_decref(plain);
	json_decref(config);
	json_decref(loc);
	json_decref(state);
	tt_backend_free(b);
	free(tmp);
	free(repo);
	free(remote);
	free(gone);
	free(remote_tag);
	free(local);
}

/* --- history, diff, merge conflicts ------------------------------------------------------------- */

TT_TEST(history_and_diff_shapes)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *repo = new_repo(tmp, "code");
	tt_backend *b = git_backend(NULL, NULL);
	json_t *loc = loc_of(repo), *a = NULL, *z = NULL;
	tt_history_entry *e = NULL;
	tt_object_diff d;
	tt_pin pin;
	size_t n = 0;
	CHECK(repo && b && loc);
	CHECK(put(repo, "keep.txt", "one\ntwo\n") == 0 && put(repo, "gone.txt", "bye\n") == 0 &&
	      put(repo, "moved.txt", "a fairly long line that stays the same\nand another\n") == 0);
	CHECK_INT(G(repo, "add", "."), 0);
	CHECK_INT(G(repo, "commit", "-q", "-m", "files"), 0);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &a, &err));
	CHECK_OK(b->ops->pin(b, loc, a, "c0fe5a1e.8", &pin, &err));
	CHECK(put(repo, "keep.txt", "one\nTWO\n") == 0 && put(repo, "new.txt", "hi\n") == 0);
	CHECK_INT(G(repo, "rm", "-q", "gone.txt"), 0);
	CHECK_INT(G(repo, "mv", "moved.txt", "renamed.txt"), 0);
	CHECK_INT(G(repo, "add", "."), 0);
	CHECK_INT(G(repo, "commit", "-q", "-m", "change things"), 0);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &z, &err));

	CHECK_OK(b->ops->history(b, loc, NULL, 10, &e, &n, &err));
	CHECK_INT(n, 3);
	CHECK_STR(e[0].id, json_string_value(json_object_get(z, "sha")));
	CHECK_STR(e[0].message, "change things");
	CHECK(e[0].when && strlen(e[0].when) == 25 && e[0].when[10] == 'T');
	CHECK_INT(json_array_size(e[0].refs), 1);
	CHECK_STR(json_string_value(json_array_get(e[0].refs, 0)), "main");
	CHECK_STR(e[1].message, "files");
	CHECK_INT(json_array_size(e[1].refs), 1);
	CHECK_STR(json_string_value(json_array_get(e[1].refs, 0)), "tether.c0fe5a1e.8");
	CHECK_INT(json_array_size(e[2].refs), 0);
	tt_history_release(e, n);
	e = NULL;
	CHECK_OK(b->ops->history(b, loc, "tether.c0fe5a1e.8", 1, &e, &n, &err));
	CHECK_INT(n, 1);
	CHECK_STR(e[0].message, "files");
	tt_history_release(e, n);

	CHECK_OK(b->ops->diff(b, loc, a, z, NULL, NULL, &d, &err));
	json_t *dj = tt_object_diff_json(&d);
	char *text = json_dumps(dj, JSON_COMPACT);
	CHECK_STR(text, "{\"summary\":\"+1 -1 ~2 files\",\"unit\":\"files\",\"added\":1,\"removed\":1,"
			"\"modified\":2,\"truncated\":false,\"note\":\"\",\"entries\":["
			"{\"path\":\"gone.txt\",\"change\":\"removed\",\"detail\":\"+0 -1\"},"
			"{\"path\":\"keep.txt\",\"change\":\"modified\",\"detail\":\"+1 -1\"},"
			"{\"path\":\"new.txt\",\"change\":\"added\",\"detail\":\"+1 -0\"},"
			"{\"path\":\"moved.txt -> renamed.txt\",\"change\":\"renamed\"}]}");
	free(text);
	json_decref(dj);
	tt_object_diff_release(&d);
	/* One sha, two conditions of the checkout: a note, no entries. */
	json_t *zd = json_deep_copy(z);
	json_object_set_new(zd, "dirty", json_true());
	CHECK_OK(b->ops->diff(b, loc, z, zd, NULL, NULL, &d, &err));
	CHECK(tt_object_diff_is_empty(&d));
	CHECK_STR(d.note, "dirty False -> True");
	tt_object_diff_release(&d);
	json_decref(zd);
	json_decref(loc);
	json_decref(a);
	json_decref(z);
	tt_backend_free(b);
	free(tmp);
	free(repo);
}

TT_TEST(merge_conflict_leaves_base)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *repo = new_repo(tmp, "code");
	tt_backend *b = git_backend(NULL, NULL);
	json_t *loc = loc_of(repo), *base = NULL, *s = NULL, *conflicts = NULL, *after = NULL;
	char *ref = NULL, *status = NULL;
	CHECK(repo && b && loc);
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &base, &err));
	tt_target src = { TT_TARGET_STATE, NULL, NULL, base };
	tt_expect none = { TT_EXPECT_NONE, NULL };
	CHECK_OK(b->ops->fork(b, loc, &src, "tether.ws.clash", &none, &ref, &err));
	CHECK_INT(commit_on(tmp, repo, "tether.ws.clash", "README", "theirs\n"), 0);
	CHECK_INT(commit_on(tmp, repo, NULL, "README", "ours\n"), 0);
	json_t *before = NULL;
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &before, &err));
	tt_target fork = { TT_TARGET_REF, "tether.ws.clash", NULL, NULL };
	tt_expect ex = { TT_EXPECT_STATE, before };
	CHECK_INT(b->ops->merge(b, loc, &fork, "clash", &ex, &s, &conflicts, &err), TT_ECONFLICT);
	CHECK(strstr(err.message, "merging tether.ws.clash into main conflicts in 1 file(s)"));
	tt_error_clear(&err);
	CHECK_INT(json_array_size(conflicts), 1);
	CHECK_STR(json_string_value(json_array_get(conflicts, 0)), "README");
	CHECK_OK(b->ops->fingerprint(b, loc, NULL, &after, &err));
	CHECK(json_equal(after, before));
	CHECK(GOUT(repo, &status, "status", "--porcelain") == 0 && status[0] == '\0');
	/* Promote can't fast-forward a diverged base either. */
	CHECK(refused_with(b->ops->promote(b, loc, &fork, &none, &s, &err), &err,
			   "which is not an ancestor of"));
	/* A detached HEAD has no base branch to move. */
	CHECK_INT(G(repo, "checkout", "-q", "--detach"), 0);
	json_decref(conflicts);
	conflicts = NULL;
	CHECK(refused_with(b->ops->merge(b, loc, &fork, "x", &none, &s, &conflicts, &err), &err,
			   "HEAD is detached"));
	json_decref(loc);
	json_decref(base);
	json_decref(before);
	json_decref(after);
	json_decref(conflicts);
	tt_backend_free(b);
	free(tmp);
	free(repo);
	free(ref);
	free(status);
}

/* --- the executable ------------------------------------------------------------------------- */

TT_TEST(old_git_refused)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup();
	CHECK(tmp != NULL);
	char *repo = new_repo(tmp, "code");
	char *fake = tt_path_join(tmp, "old-git");
	CHECK(fake && put(fake, NULL, "#!/bin/sh\necho 'git version 2.30.1'\n") == 0);
	json_t *config = json_pack("{s:s}", "git_path", fake), *loc = loc_of(repo), *s = NULL;
	tt_backend *b = git_backend(config, NULL);
	CHECK(b && loc);
	int rc = b->ops->fingerprint(b, loc, NULL, &s, &err);
	char *want = tt_asprintf("git 2.30.1 is too old: tether needs git 2.38.0 or newer (%s)", fake);
	CHECK_MSG(refused_with(rc, &err, want), "config git_path");
	tt_backend_free(b);
	/* TETHER_GIT when the config says nothing. */
	setenv("TETHER_GIT", fake, 1);
	b = git_backend(NULL, NULL);
	rc = b->ops->fingerprint(b, loc, NULL, &s, &err);
	unsetenv("TETHER_GIT");
	CHECK_MSG(refused_with(rc, &err, want), "TETHER_GIT");
	tt_backend_free(b);
	/* A missing one is named. */
	json_decref(config);
	config = json_pack("{s:s}", "git_path", "/nonexistent/git");
	b = git_backend(config, NULL);
	CHECK(refused_with(b->ops->fingerprint(b, loc, NULL, &s, &err), &err,
			   "executable not found: /nonexistent/git"));
	tt_backend_free(b);
	json_decref(config);
	json_decref(loc);
	free(want);
	free(tmp);
	free(repo);
	free(fake);
}
