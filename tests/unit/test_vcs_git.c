/* Unit tests for the git adapter (vcs/git*.c), driving real git in
 * temporary repositories under a private global config. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/mem.h"
#include "util/proc.h"
#include "vcs/dispatch.h"
#include "vcs/vcs.h"

/* ---- fixtures ---------------------------------------------------------- */

static int put(const char *root, const char *rel, const char *text)
{
	tt_error err = TT_ERROR_INIT;
	char *path = tt_path_join(root, rel);
	int rc = path ? tt_write_file_atomic(path, text, strlen(text), 0644, &err) : -1;
	tt_error_clear(&err);
	free(path);
	return rc;
}

static char *slurp(const char *root, const char *rel)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf b = TT_BUF_INIT;
	char *path = tt_path_join(root, rel);
	char *s = path && tt_read_file(path, &b, 0, &err) == 0 ? tt_buf_detach(&b) : NULL;
	tt_buf_release(&b);
	tt_error_clear(&err);
	free(path);
	return s;
}

/* git in dir with NULL-terminated arguments; output appended to out. */
static int gitv(const char *dir, tt_buf *out, tt_error *err, ...)
{
	const char *args[64];
	size_t n = 0;
	va_list ap;
	va_start(ap, err);
	while (n < 63 && (args[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	args[n] = NULL;
	return tt_git_run("git", dir, args, out, false, NULL, err);
}

#define GIT(dir, ...) CHECK_OK(gitv(dir, NULL, &err, __VA_ARGS__, (const char *)NULL))

/* git's output, trailing newlines dropped; NULL when git failed. */
static char *git_out(const char *dir, ...)
{
	const char *args[64];
	size_t n = 0;
	va_list ap;
	tt_buf b = TT_BUF_INIT;
	tt_error err = TT_ERROR_INIT;
	va_start(ap, dir);
	while (n < 63 && (args[n] = va_arg(ap, const char *)) != NULL)
		n++;
	va_end(ap);
	args[n] = NULL;
	char *s = NULL;
	if (tt_git_run("git", dir, args, &b, false, NULL, &err) == 0) {
		while (b.len && b.ptr[b.len - 1] == '\n')
			tt_buf_truncate(&b, b.len - 1);
		s = tt_buf_detach(&b);
	}
	tt_buf_release(&b);
	tt_error_clear(&err);
	return s;
}
#define OUT(dir, ...) git_out(dir, __VA_ARGS__, (const char *)NULL)

static const char *const scrubbed[] = {
	"GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL",
	"GIT_AUTHOR_DATE", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "GIT_COMMITTER_DATE",
	"GIT_OBJECT_DIRECTORY", "GIT_COMMON_DIR", NULL,
};

/* A private global git config (identity, main as the default branch) and
 * no system one, so the developer's settings cannot interfere.  Returns a
 * copy of this case's temporary directory (resolved). */
static char *setup(void)
{
	char *tmp = tt_realpath(tt_test_tmpdir());
	char *cfg = tmp ? tt_path_join(tmp, "gitconfig") : NULL;
	if (!cfg || put(tmp, "gitconfig",
			"[user]\n\tname = Test User\n\temail = test@example.com\n"
			"[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n"
			"[advice]\n\tdetachedHead = false\n") != 0) {
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

/* A new repository tmp/name with one commit (README). */
static char *new_repo(const char *tmp, const char *name)
{
	tt_error err = TT_ERROR_INIT;
	char *root = tt_path_join(tmp, name);
	if (!root || tt_mkdirs(root, 0755, &err) != 0 || put(root, "README", "hello\n") != 0 ||
	    gitv(root, NULL, &err, "init", "-q", (const char *)NULL) != 0 ||
	    gitv(root, NULL, &err, "add", "README", (const char *)NULL) != 0 ||
	    gitv(root, NULL, &err, "commit", "-q", "-m", "initial", (const char *)NULL) != 0) {
		fprintf(stderr, "  new_repo: %s\n", err.message ? err.message : "");
		free(root);
		root = NULL;
	}
	tt_error_clear(&err);
	return root;
}

static tt_vcs *open_vcs(const char *root, const char *exe)
{
	tt_error err = TT_ERROR_INIT;
	tt_vcs *v = NULL;
	if (tt_vcs_detect(&v, root, exe, NULL, &err) != 0)
		fprintf(stderr, "  detect: %s\n", err.message ? err.message : "");
	tt_error_clear(&err);
	return v;
}

/* Commit everything in the working tree; the new HEAD. */
static char *commit_all(const char *root, const char *msg)
{
	tt_error err = TT_ERROR_INIT;
	char *head = NULL;
	if (gitv(root, NULL, &err, "add", "-A", (const char *)NULL) == 0 &&
	    gitv(root, NULL, &err, "commit", "-q", "-m", msg, (const char *)NULL) == 0)
		head = OUT(root, "rev-parse", "HEAD");
	tt_error_clear(&err);
	return head;
}

static bool has_substr(const char *s, const char *needle)
{
	return s && strstr(s, needle) != NULL;
}

/* ---- pure helpers ------------------------------------------------------ */

TT_TEST(text_replaces_invalid_utf8_like_python)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "ok", "ok" },
		{ "a\xff" "b", "a\xef\xbf\xbd" "b" },
		{ "\xe2\x82", "\xef\xbf\xbd" },
		{ "\xe2\x82x", "\xef\xbf\xbdx" },
		{ "\xf0\x9f\x98", "\xef\xbf\xbd" },
		{ "\xed\xa0\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xf4\x90\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xe0\x80\xaf", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xf0\x80\x80", "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },
		{ "\xe2\x82\xac\xc3", "\xe2\x82\xac\xef\xbf\xbd" },
		{ "caf\xc3\xa9", "caf\xc3\xa9" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tt_buf b = TT_BUF_INIT;
		CHECK_INT(tt_vcs_text(&b, cases[i].in, strlen(cases[i].in)), 0);
		CHECK_MSG(strcmp(b.ptr, cases[i].want) == 0, "case %zu", i);
		tt_buf_release(&b);
	}
	/* NUL bytes pass through */
	tt_buf b = TT_BUF_INIT;
	CHECK_INT(tt_vcs_text(&b, "a\0b", 3), 0);
	CHECK_INT(b.len, 3);
	tt_buf_release(&b);
}

TT_TEST(digest_revs_matches_python)
{
	tt_error err = TT_ERROR_INIT;
	char a[41], bb[41], c[41], out[17];
	memset(a, 'a', 40);
	memset(bb, 'b', 40);
	memset(c, 'c', 40);
	a[40] = bb[40] = c[40] = '\0';
	const char *ids[] = { c, a, bb };
	CHECK_OK(tt_vcs_digest_revs(out, ids, 3, &err));
	CHECK_STR(out, "65b9a75dc65202fd");  /* tether.vcs._digest_revs */
	CHECK_OK(tt_vcs_digest_revs(out, NULL, 0, &err));
	CHECK_STR(out, "e3b0c44298fc1c14");
}

/* ---- revisions ---------------------------------------------------------- */

TT_TEST(resolve_and_current_rev)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	CHECK(put(root, "b.txt", "b\n") == 0);
	char *second = commit_all(root, "second");
	char *first = OUT(root, "rev-parse", "HEAD~1");
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && second && first);
	CHECK_STR(v->ops->kind, "git");

	char *id = NULL;
	CHECK_OK(tt_vcs_current_rev(v, &id, &err));
	CHECK_STR(id, second);
	free(id);
	CHECK_OK(v->ops->resolve(v, "main", &id, &err));
	CHECK_STR(id, second);
	free(id);
	CHECK_OK(v->ops->resolve(v, "HEAD~1", &id, &err));
	CHECK_STR(id, first);
	free(id);
	CHECK_OK(v->ops->resolve(v, first, &id, &err));
	CHECK_STR(id, first);
	free(id);

	CHECK_INT(v->ops->resolve(v, "nope", &id, &err), TT_EVCS);
	CHECK(id == NULL);
	CHECK_STR(err.message, "could not resolve revision: nope");
	tt_error_clear(&err);

	bool anc = false;
	CHECK_OK(v->ops->is_ancestor(v, first, second, &anc, &err));
	CHECK(anc);
	CHECK_OK(v->ops->is_ancestor(v, second, second, &anc, &err));
	CHECK(anc);
	CHECK_OK(v->ops->is_ancestor(v, second, first, &anc, &err));
	CHECK(!anc);
	CHECK_OK(v->ops->is_ancestor(v, "nope", second, &anc, &err));
	CHECK(!anc);

	tt_vcs_free(v);
	free(first);
	free(second);
	free(root);
	free(tmp);
}

TT_TEST(revisions_starting_with_dash_are_refused)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v);
	char *head = OUT(root, "rev-parse", "HEAD");
	char *id = NULL, *text = NULL;
	json_t *j = NULL;
	bool b = false;

	CHECK_INT(v->ops->resolve(v, "-h", &id, &err), TT_EVCS);
	CHECK_STR(err.message, "could not resolve revision: -h");
	tt_error_clear(&err);
	CHECK_INT(v->ops->resolve(v, "--output=pwned", &id, &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(v->ops->read_file_at(v, "--output=pwned", "README", &text, NULL, &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(tt_vcs_files_at(v, "-x", "", &j, &err), TT_EVCS);
	tt_error_clear(&err);
	const char *revs[] = { "--all" };
	CHECK_INT(v->ops->files_at_many(v, revs, 1, "", &j, &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(v->ops->commit_info(v, revs, 1, &j, &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(v->ops->is_ancestor(v, "--output=pwned", "HEAD", &b, &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(v->ops->is_ancestor(v, "HEAD", "-h", &b, &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(v->ops->new(v, "--orphan=x", &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(v->ops->bookmark_set(v, "-f", "HEAD", &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(v->ops->bookmark_set(v, "feature", "--all", &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(v->ops->bookmark_delete(v, "-a", &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(v->ops->new_bookmark(v, "x", "--detach", &err), TT_EVCS);
	tt_error_clear(&err);
	json_t *pos = json_pack("{s:s, s:s, s:s, s:s}", "kind", "git", "id", "x", "commit", "x", "branch",
				"--orphan=y");
	CHECK_INT(v->ops->goto_position(v, pos, &err), TT_EVCS);
	tt_error_clear(&err);
	json_decref(pos);
	/* a line break would smuggle a second request to cat-file */
	CHECK_INT(v->ops->read_file_at(v, "HEAD:README\nHEAD", "README", &text, NULL, &err), TT_EVCS);
	tt_error_clear(&err);

	/* nothing happened */
	char *pwned = tt_path_join(root, "pwned");
	CHECK(!tt_exists(pwned));
	free(pwned);
	char *now = OUT(root, "rev-parse", "HEAD");
	CHECK_STR(now, head);
	char *branches = OUT(root, "branch", "--format=%(refname:short)");
	CHECK_STR(branches, "main");
	free(branches);
	free(now);
	free(head);
	tt_vcs_free(v);
	free(root);
	free(tmp);
}

/* ---- content at a revision ----------------------------------------------- */

TT_TEST(read_file_at_revisions)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *first = OUT(root, "rev-parse", "HEAD");
	CHECK(put(root, "README", "changed\n") == 0);
	CHECK(put(root, "dir/bad.txt", "caf\xc3\xa9 \xff!\n") == 0);
	char *second = commit_all(root, "second");
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && first && second);

	char *text = NULL;
	size_t len = 99;
	CHECK_OK(v->ops->read_file_at(v, "HEAD", "README", &text, &len, &err));
	CHECK_STR(text, "changed\n");
	CHECK_INT(len, 8);
	free(text);
	CHECK_OK(v->ops->read_file_at(v, first, "README", &text, NULL, &err));
	CHECK_STR(text, "hello\n");
	free(text);
	CHECK_OK(v->ops->read_file_at(v, "HEAD", "dir/bad.txt", &text, NULL, &err));
	CHECK_STR(text, "caf\xc3\xa9 \xef\xbf\xbd!\n");
	free(text);
	/* absent: a path, a revision, a directory */
	CHECK_OK(v->ops->read_file_at(v, first, "dir/bad.txt", &text, &len, &err));
	CHECK(text == NULL);
	CHECK_INT(len, 0);
	CHECK_OK(v->ops->read_file_at(v, "nope", "README", &text, NULL, &err));
	CHECK(text == NULL);
	CHECK_OK(v->ops->read_file_at(v, "HEAD", "dir", &text, NULL, &err));
	CHECK(text == NULL);

	tt_vcs_free(v);
	free(first);
	free(second);
	free(root);
	free(tmp);
}

TT_TEST(files_at_nested_and_unicode)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	CHECK(put(root, "data/a.toml", "a = 1\n") == 0);
	CHECK(put(root, "data/sub/b.toml", "b = 2\n") == 0);
	CHECK(put(root, "data/sub/deeper/\xc3\xbc\xe5\x90\x8d.toml", "u = \"\xc3\xbc\"\n") == 0);
	CHECK(put(root, "data/sub/with space.toml", "s = 1\n") == 0);
	CHECK(put(root, "data/sub/deeper/same.toml", "a = 1\n") == 0);  /* the same blob twice */
	CHECK(put(root, "other/x.txt", "x\n") == 0);
	char *link = tt_path_join(root, "data/link");
	CHECK(link && symlink("a.toml", link) == 0);
	free(link);
	char *exe = tt_path_join(root, "data/run.sh");
	CHECK(put(root, "data/run.sh", "#!/bin/sh\n") == 0 && chmod(exe, 0755) == 0);
	free(exe);
	char *head = commit_all(root, "data");
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && head);

	json_t *files = NULL;
	CHECK_OK(tt_vcs_files_at(v, "HEAD", "data", &files, &err));
	CHECK(json_is_object(files));
	CHECK_INT(json_object_size(files), 6);  /* the symlink is left out */
	CHECK_STR(json_string_value(json_object_get(files, "data/a.toml")), "a = 1\n");
	CHECK_STR(json_string_value(json_object_get(files, "data/sub/b.toml")), "b = 2\n");
	CHECK_STR(json_string_value(json_object_get(files, "data/sub/deeper/\xc3\xbc\xe5\x90\x8d.toml")),
		  "u = \"\xc3\xbc\"\n");
	CHECK_STR(json_string_value(json_object_get(files, "data/sub/deeper/same.toml")), "a = 1\n");
	CHECK_STR(json_string_value(json_object_get(files, "data/sub/with space.toml")), "s = 1\n");
	CHECK_STR(json_string_value(json_object_get(files, "data/run.sh")), "#!/bin/sh\n");
	char *text = NULL;
	CHECK_OK(v->ops->read_file_at(v, head, "data/sub/with space.toml", &text, NULL, &err));
	CHECK_STR(text, "s = 1\n");
	free(text);
	CHECK_OK(v->ops->read_file_at(v, "HEAD", "data/sub/deeper/\xc3\xbc\xe5\x90\x8d.toml", &text, NULL, &err));
	CHECK_STR(text, "u = \"\xc3\xbc\"\n");
	free(text);
	CHECK(json_object_get(files, "data/link") == NULL);
	json_decref(files);

	/* the same answer however reldir is spelled; a subdirectory */
	const char *spellings[] = { "data/", "/data", "data//" };
	for (size_t i = 0; i < 3; i++) {
		CHECK_OK(tt_vcs_files_at(v, head, spellings[i], &files, &err));
		CHECK_INT(json_object_size(files), 6);
		CHECK(json_object_get(files, "data/sub/b.toml") != NULL);
		json_decref(files);
	}
	CHECK_OK(tt_vcs_files_at(v, "HEAD", "data/sub/deeper", &files, &err));
	CHECK_INT(json_object_size(files), 2);
	CHECK(json_object_get(files, "data/sub/deeper/same.toml") != NULL);
	json_decref(files);

	/* the whole tree */
	const char *roots[] = { "", ".", "/" };
	for (size_t i = 0; i < 3; i++) {
		CHECK_OK(tt_vcs_files_at(v, "HEAD", roots[i], &files, &err));
		CHECK_INT(json_object_size(files), 8);
		CHECK_STR(json_string_value(json_object_get(files, "README")), "hello\n");
		CHECK_STR(json_string_value(json_object_get(files, "other/x.txt")), "x\n");
		json_decref(files);
	}

	/* absent: {} */
	CHECK_OK(tt_vcs_files_at(v, "HEAD~1", "data", &files, &err));
	CHECK(json_is_object(files) && json_object_size(files) == 0);
	json_decref(files);
	CHECK_OK(tt_vcs_files_at(v, "nope", "data", &files, &err));
	CHECK(json_is_object(files) && json_object_size(files) == 0);
	json_decref(files);
	CHECK_OK(tt_vcs_files_at(v, "HEAD", "data/a.toml", &files, &err));  /* a file, not a tree */
	CHECK(json_is_object(files) && json_object_size(files) == 0);
	json_decref(files);

	/* several revisions through one reader */
	const char *revs[] = { "HEAD", "HEAD~1" };
	json_t *many = NULL;
	CHECK_OK(v->ops->files_at_many(v, revs, 2, "data", &many, &err));
	CHECK_INT(json_object_size(many), 2);
	CHECK_INT(json_object_size(json_object_get(many, "HEAD")), 6);
	CHECK_INT(json_object_size(json_object_get(many, "HEAD~1")), 0);
	json_decref(many);

	tt_vcs_free(v);
	free(head);
	free(root);
	free(tmp);
}

TT_TEST(files_at_in_a_sha256_repository)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup();
	char *root = tt_path_join(tmp, "repo256");
	CHECK(root && tt_mkdirs(root, 0755, &err) == 0);
	GIT(root, "init", "-q", "--object-format=sha256");
	CHECK(put(root, "data/sub/m.toml", "m = 1\n") == 0);
	char *head = commit_all(root, "sha256");
	CHECK(head && strlen(head) == 64);
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v);
	json_t *files = NULL;
	CHECK_OK(tt_vcs_files_at(v, "HEAD", "data", &files, &err));
	CHECK_INT(json_object_size(files), 1);
	CHECK_STR(json_string_value(json_object_get(files, "data/sub/m.toml")), "m = 1\n");
	json_decref(files);
	char *id = NULL;
	CHECK_OK(tt_vcs_current_rev(v, &id, &err));
	CHECK_STR(id, head);
	free(id);
	tt_vcs_free(v);
	free(head);
	free(root);
	free(tmp);
}

/* ---- history ------------------------------------------------------------ */

/* n commits on main via one fast-import: data/m.toml changes every 10th
 * commit, other.txt every commit. */
static int import_history(const char *root, int n, tt_error *err)
{
	tt_buf s = TT_BUF_INIT;
	for (int i = 1; i <= n; i++) {
		char msg[64], manifest[64], other[64];
		snprintf(msg, sizeof msg, "commit %d\n", i);
		snprintf(manifest, sizeof manifest, "v = %d\n", (i - 1) / 10);
		snprintf(other, sizeof other, "other %d\n", i);
		tt_buf_printf(&s, "commit refs/heads/main\nmark :%d\n"
				  "committer T <t@example.com> %d +0000\ndata %zu\n%s",
			      i, 1600000000 + i, strlen(msg), msg);
		if (i > 1)
			tt_buf_printf(&s, "from :%d\n", i - 1);
		tt_buf_printf(&s, "M 100644 inline data/m.toml\ndata %zu\n%s\n", strlen(manifest), manifest);
		tt_buf_printf(&s, "M 100644 inline other.txt\ndata %zu\n%s\n", strlen(other), other);
	}
	int rc = tt_buf_check(&s, err, "stream");
	if (rc == 0)
		rc = tt_git_run_input("git", root, (const char *const[]){ "fast-import", "--quiet", NULL },
				      s.ptr, s.len, NULL, false, NULL, err);
	tt_buf_release(&s);
	return rc;
}

/* A wrapper around git that logs each invocation's arguments to log, and
 * what cat-file is asked for to log.req. */
static char *logging_git(const char *tmp, const char *log)
{
	char *real = tt_proc_which("git");
	char *script = tt_asprintf("#!/bin/sh\nprintf '%%s\\n' \"$*\" >> '%s'\n"
				   "case \"$*\" in *cat-file*) tee -a '%s.req' | '%s' \"$@\"; exit $? ;; esac\n"
				   "exec '%s' \"$@\"\n",
				   log, log, real ? real : "git", real ? real : "git");
	char *path = tt_path_join(tmp, "git-wrapper");
	if (!script || !path || put(tmp, "git-wrapper", script) != 0 || chmod(path, 0755) != 0) {
		free(path);
		path = NULL;
	}
	free(real);
	free(script);
	return path;
}

static int count_lines_with(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; p && (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

typedef struct walk {
	int calls;
	int stop_after;
	int bad;
	json_t *seen;  /* distinct manifest texts */
	json_t *commits;
} walk;

static int on_commit(void *ctx, const char *commit, json_t *files, tt_error *err)
{
	walk *w = ctx;
	w->calls++;
	json_t *m = json_object_get(files, "data/m.toml");
	if (json_object_size(files) != 1 || !json_is_string(m) || strlen(commit) != 40)
		w->bad++;
	else
		json_object_set_new(w->seen, json_string_value(m), json_true());
	json_object_set_new(w->commits, commit, json_true());
	return w->stop_after && w->calls >= w->stop_after ? 7 : 0;
}

TT_TEST(history_walk_uses_one_cat_file_process)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = tt_path_join(tmp, "repo");
	CHECK(root && tt_mkdirs(root, 0755, &err) == 0);
	GIT(root, "init", "-q");
	CHECK_OK(import_history(root, 200, &err));
	char *log = tt_path_join(tmp, "git.log");
	char *wrapper = logging_git(tmp, log);
	CHECK(log && wrapper);
	/* the walk through git, as when the repository cannot be read natively */
	setenv("TETHER_GIT_NATIVE", "0", 1);
	tt_vcs *v = open_vcs(root, wrapper);
	CHECK(v);
	CHECK(unlink(log) == 0);  /* forget detection's calls */

	walk w = { 0, 0, 0, json_object(), json_object() };
	CHECK_OK(v->ops->iter_history_files(v, "data", on_commit, &w, &err));
	CHECK_INT(w.calls, 200);
	CHECK_INT(w.bad, 0);
	CHECK_INT(json_object_size(w.commits), 200);
	CHECK_INT(json_object_size(w.seen), 20);
	char *calls = slurp(tmp, "git.log");
	CHECK(calls);
	CHECK_INT(count_lines_with(calls, "cat-file"), 1);
	CHECK_INT(count_lines_with(calls, "\n"), 2);  /* rev-list --all, cat-file --batch */
	CHECK(has_substr(calls, "rev-list --all"));
	free(calls);
	/* a request per commit (rev:data answers with the tree itself), plus
	 * one per distinct blob: data/m.toml changed every 10th commit */
	char *requests = slurp(tmp, "git.log.req");
	CHECK_INT(count_lines_with(requests, "\n"), 200 + 20);
	free(requests);
	json_decref(w.seen);
	json_decref(w.commits);

	/* a callback stops the walk early */
	walk early = { 0, 5, 0, json_object(), json_object() };
	CHECK_INT(v->ops->iter_history_files(v, "data", on_commit, &early, &err), 7);
	CHECK_INT(early.calls, 5);
	json_decref(early.seen);
	json_decref(early.commits);

	/* files_at_many: one reader for all */
	CHECK(unlink(log) == 0);
	json_t *revs = NULL;
	CHECK_OK(v->ops->history_revs(v, &revs, &err));
	CHECK_INT(json_array_size(revs), 200);
	const char *ids[50];
	for (size_t i = 0; i < 50; i++)
		ids[i] = json_string_value(json_array_get(revs, i * 4));
	json_t *many = NULL;
	CHECK_OK(v->ops->files_at_many(v, ids, 50, "data/", &many, &err));
	CHECK_INT(json_object_size(many), 50);
	CHECK(json_is_string(json_object_get(json_object_get(many, ids[49]), "data/m.toml")));
	calls = slurp(tmp, "git.log");
	CHECK_INT(count_lines_with(calls, "cat-file"), 1);
	free(calls);
	json_decref(many);
	json_decref(revs);

	unsetenv("TETHER_GIT_NATIVE");
	tt_vcs_free(v);
	free(wrapper);
	free(log);
	free(root);
	free(tmp);
}

TT_TEST(history_revs_and_digest)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	CHECK(put(root, "a", "a\n") == 0);
	char *second = commit_all(root, "second");
	GIT(root, "branch", "side", "HEAD~1");
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && second);

	json_t *revs = NULL;
	CHECK_OK(v->ops->history_revs(v, &revs, &err));
	CHECK_INT(json_array_size(revs), 2);
	char d1[17], d2[17], d3[17], want[17];
	CHECK_OK(tt_vcs_history_digest(v, d1, &err));
	CHECK_OK(tt_vcs_history_digest(v, d2, &err));
	CHECK_STR(d1, d2);
	CHECK_INT(strlen(d1), 16);
	const char *ids[2] = { json_string_value(json_array_get(revs, 0)),
			       json_string_value(json_array_get(revs, 1)) };
	CHECK_OK(tt_vcs_digest_revs(want, ids, 2, &err));
	CHECK_STR(d1, want);
	json_decref(revs);

	/* a commit on a side branch changes it; losing it changes it back */
	GIT(root, "switch", "-q", "side");
	CHECK(put(root, "s", "s\n") == 0);
	char *side = commit_all(root, "side");
	CHECK(side);
	CHECK_OK(tt_vcs_history_digest(v, d3, &err));
	CHECK(strcmp(d3, d1) != 0);
	GIT(root, "switch", "-q", "main");
	GIT(root, "branch", "-D", "side");
	CHECK_OK(tt_vcs_history_digest(v, d3, &err));
	CHECK_STR(d3, d1);

	tt_vcs_free(v);
	free(side);
	free(second);
	free(root);
	free(tmp);
}

TT_TEST(commit_info_fields)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *first = OUT(root, "rev-parse", "HEAD");
	setenv("GIT_AUTHOR_NAME", "Ada L\xc3\xb6velace", 1);
	setenv("GIT_AUTHOR_EMAIL", "ada@example.org", 1);
	setenv("GIT_AUTHOR_DATE", "2020-01-02T03:04:05+01:00", 1);
	setenv("GIT_COMMITTER_DATE", "2021-06-07T08:09:10-02:30", 1);
	CHECK(put(root, "a", "a\n") == 0);
	GIT(root, "add", "a");
	GIT(root, "commit", "-q", "-m", "subject line\n\nbody \x1f with separators \x1e\nmore\n\n");
	char *second = OUT(root, "rev-parse", "HEAD");
	GIT(root, "switch", "-q", "-c", "side", first);
	CHECK(put(root, "b", "b\n") == 0);
	char *side = commit_all(root, "side");
	GIT(root, "switch", "-q", "main");
	GIT(root, "merge", "-q", "--no-edit", "side");
	char *merge = OUT(root, "rev-parse", "HEAD");
	for (size_t i = 0; scrubbed[i]; i++)
		unsetenv(scrubbed[i]);
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && first && second && side && merge);

	const char *revs[] = { merge, "0000000000000000000000000000000000000000", second, first };
	json_t *infos = NULL;
	CHECK_OK(v->ops->commit_info(v, revs, 4, &infos, &err));
	CHECK_INT(json_array_size(infos), 3);  /* the all-zero id is skipped */
	json_t *m = json_array_get(infos, 0), *s = json_array_get(infos, 1), *f = json_array_get(infos, 2);
	CHECK_STR(json_string_value(json_object_get(m, "commit_id")), merge);
	CHECK_INT(json_array_size(json_object_get(m, "parents")), 2);
	CHECK_STR(json_string_value(json_array_get(json_object_get(m, "parents"), 0)), second);
	CHECK_STR(json_string_value(json_array_get(json_object_get(m, "parents"), 1)), side);
	CHECK_STR(json_string_value(json_object_get(m, "message")), "Merge branch 'side'");

	CHECK_STR(json_string_value(json_object_get(s, "commit_id")), second);
	CHECK_STR(json_string_value(json_object_get(s, "author_name")), "Ada L\xc3\xb6velace");
	CHECK_STR(json_string_value(json_object_get(s, "author_email")), "ada@example.org");
	CHECK_STR(json_string_value(json_object_get(s, "authored_at")), "2020-01-02T03:04:05+01:00");
	CHECK_STR(json_string_value(json_object_get(s, "committed_at")), "2021-06-07T08:09:10-02:30");
	/* git itself cleans the message (trailing blank lines go) */
	CHECK(has_substr(json_string_value(json_object_get(s, "message")), "subject line\n\nbody "));
	CHECK_INT(json_array_size(json_object_get(s, "parents")), 1);
	CHECK_STR(json_string_value(json_array_get(json_object_get(s, "parents"), 0)), first);
	CHECK(json_is_null(json_object_get(s, "change_id")));

	CHECK_STR(json_string_value(json_object_get(f, "message")), "initial");
	CHECK_STR(json_string_value(json_object_get(f, "author_name")), "Test User");
	CHECK_INT(json_array_size(json_object_get(f, "parents")), 0);
	json_decref(infos);

	CHECK_OK(v->ops->commit_info(v, NULL, 0, &infos, &err));
	CHECK_INT(json_array_size(infos), 0);
	json_decref(infos);
	const char *unknown[] = { "1234567890123456789012345678901234567890" };
	CHECK_INT(v->ops->commit_info(v, unknown, 1, &infos, &err), TT_EVCS);
	tt_error_clear(&err);

	tt_vcs_free(v);
	free(first);
	free(second);
	free(side);
	free(merge);
	free(root);
	free(tmp);
}

static json_t *find_ref(json_t *refs, const char *name, const char *kind)
{
	size_t i;
	json_t *r;
	json_array_foreach(refs, i, r) {
		if (strcmp(json_string_value(json_object_get(r, "name")), name) == 0 &&
		    strcmp(json_string_value(json_object_get(r, "kind")), kind) == 0)
			return r;
	}
	return NULL;
}

TT_TEST(refs_with_an_annotated_tag)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *first = OUT(root, "rev-parse", "HEAD");
	GIT(root, "tag", "-a", "-m", "release", "v1");
	GIT(root, "tag", "light");
	CHECK(put(root, "a", "a\n") == 0);
	char *second = commit_all(root, "second");
	GIT(root, "branch", "feature", first);
	char *tag_obj = OUT(root, "rev-parse", "refs/tags/v1");
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && first && second && tag_obj);
	CHECK(strcmp(tag_obj, first) != 0);  /* an annotated tag is an object of its own */

	json_t *refs = NULL, *r;
	CHECK_OK(v->ops->refs(v, &refs, &err));
	CHECK_INT(json_array_size(refs), 5);
	CHECK((r = find_ref(refs, "v1", "tag")) != NULL);
	CHECK_STR(json_string_value(json_object_get(r, "commit_id")), first);  /* peeled */
	CHECK((r = find_ref(refs, "light", "tag")) != NULL);
	CHECK_STR(json_string_value(json_object_get(r, "commit_id")), first);
	CHECK((r = find_ref(refs, "main", "branch")) != NULL);
	CHECK_STR(json_string_value(json_object_get(r, "commit_id")), second);
	CHECK((r = find_ref(refs, "feature", "branch")) != NULL);
	CHECK_STR(json_string_value(json_object_get(r, "commit_id")), first);
	r = json_array_get(refs, 4);  /* the head comes last */
	CHECK_STR(json_string_value(json_object_get(r, "name")), "HEAD");
	CHECK_STR(json_string_value(json_object_get(r, "kind")), "head");
	CHECK_STR(json_string_value(json_object_get(r, "commit_id")), second);
	json_decref(refs);

	tt_vcs_free(v);
	free(tag_obj);
	free(first);
	free(second);
	free(root);
	free(tmp);
}

TT_TEST(alive_commits_are_reachable_from_refs)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *first = OUT(root, "rev-parse", "HEAD");
	GIT(root, "switch", "-q", "-c", "doomed");
	CHECK(put(root, "d", "d\n") == 0);
	char *doomed = commit_all(root, "doomed");
	GIT(root, "switch", "-q", "main");
	GIT(root, "tag", "kept", doomed);
	GIT(root, "switch", "-q", "-c", "gone");
	CHECK(put(root, "g", "g\n") == 0);
	char *gone = commit_all(root, "gone");
	GIT(root, "switch", "-q", "main");
	GIT(root, "branch", "-D", "gone", "doomed");
	char *log = tt_path_join(tmp, "git.log");
	char *wrapper = logging_git(tmp, log);
	const char *ids[] = { first, doomed, gone, "0123456789012345678901234567890123456789",
			      "HEAD" };
	bool alive[5];

	/* read natively: the same answers, and no git at all */
	tt_vcs *nv = open_vcs(root, wrapper);
	CHECK(nv && nv->native);
	unlink(log);
	GIT(root, "pack-refs", "--all");  /* packed refs and loose ones alike */
	CHECK_OK(nv->ops->alive_commits(nv, ids, 5, alive, &err));
	CHECK(alive[0] && alive[1] && !alive[2] && !alive[3] && !alive[4]);
	CHECK(!tt_exists(log));
	tt_vcs_free(nv);

	setenv("TETHER_GIT_NATIVE", "0", 1);
	tt_vcs *v = open_vcs(root, wrapper);
	unsetenv("TETHER_GIT_NATIVE");
	CHECK(v && first && doomed && gone && wrapper);
	CHECK(unlink(log) == 0);
	CHECK_OK(v->ops->alive_commits(v, ids, 5, alive, &err));
	CHECK(alive[0]);
	CHECK(alive[1]);  /* a tag keeps it */
	CHECK(!alive[2]);
	CHECK(!alive[3]);
	CHECK(!alive[4]);  /* ids only, as in tether-vcs */
	char *calls = slurp(tmp, "git.log");
	CHECK_INT(count_lines_with(calls, "\n"), 1);  /* one call for any number */
	free(calls);
	bool one = false;
	CHECK_OK(tt_vcs_commit_alive(v, first, &one, &err));
	CHECK(one);
	CHECK_OK(tt_vcs_commit_alive(v, gone, &one, &err));
	CHECK(!one);

	tt_vcs_free(v);
	free(wrapper);
	free(log);
	free(first);
	free(doomed);
	free(gone);
	free(root);
	free(tmp);
}

/* ---- the working copy --------------------------------------------------- */

TT_TEST(workspace_roots_lists_worktrees)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v);
	json_t *roots = NULL;
	CHECK_OK(v->ops->workspace_roots(v, &roots, &err));
	CHECK_INT(json_array_size(roots), 1);
	CHECK_STR(json_string_value(json_array_get(roots, 0)), root);
	json_decref(roots);
	char *wt = tt_path_join(tmp, "second checkout");
	GIT(root, "worktree", "add", "-q", "-b", "wt", wt);
	CHECK_OK(v->ops->workspace_roots(v, &roots, &err));
	CHECK_INT(json_array_size(roots), 2);
	CHECK_STR(json_string_value(json_array_get(roots, 0)), root);
	CHECK_STR(json_string_value(json_array_get(roots, 1)), wt);
	json_decref(roots);
	free(wt);
	tt_vcs_free(v);
	free(root);
	free(tmp);
}

TT_TEST(dirty_paths)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	CHECK(put(root, "data/m.toml", "m = 1\n") == 0);
	CHECK(put(root, "data/[x].toml", "x = 1\n") == 0);
	char *head = commit_all(root, "data");
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && head);
	const char *m[] = { "data/m.toml" }, *lit[] = { "data/[x].toml" }, *all[] = { "data" };
	bool d = true;
	CHECK_OK(v->ops->dirty(v, all, 1, &d, &err));
	CHECK(!d);
	CHECK_OK(v->ops->dirty(v, NULL, 0, &d, &err));
	CHECK(!d);
	CHECK(put(root, "README", "other change\n") == 0);
	CHECK_OK(v->ops->dirty(v, all, 1, &d, &err));
	CHECK(!d);  /* only the paths asked about */
	CHECK_OK(v->ops->dirty(v, NULL, 0, &d, &err));
	CHECK(d);
	CHECK(put(root, "data/x.toml", "untracked\n") == 0);
	CHECK_OK(v->ops->dirty(v, lit, 1, &d, &err));
	CHECK(!d);  /* literal: [x] is not a glob matching x */
	CHECK_OK(v->ops->dirty(v, all, 1, &d, &err));
	CHECK(d);   /* untracked files count */
	CHECK_OK(v->ops->dirty(v, m, 1, &d, &err));
	CHECK(!d);
	CHECK(put(root, "data/m.toml", "m = 2\n") == 0);
	CHECK_OK(v->ops->dirty(v, m, 1, &d, &err));
	CHECK(d);
	tt_vcs_free(v);
	free(head);
	free(root);
	free(tmp);
}

TT_TEST(commit_is_limited_to_its_paths)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *before = OUT(root, "rev-parse", "HEAD");
	CHECK(put(root, "other.txt", "staged by the user\n") == 0);
	GIT(root, "add", "other.txt");
	CHECK(put(root, "README", "unstaged edit\n") == 0);
	CHECK(put(root, "data/m.toml", "m = 1\n") == 0);
	CHECK(put(root, "data/[x].toml", "x = 1\n") == 0);
	CHECK(put(root, "data/x.toml", "not this one\n") == 0);
	CHECK(put(root, ":m.toml", "colon\n") == 0);  /* ":m.toml" as a pathspec is m.toml */
	CHECK(put(root, "m.toml", "not this one\n") == 0);
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && before);

	const char *paths[] = { "data/m.toml", "data/[x].toml", ":m.toml" };
	char *id = NULL;
	CHECK_OK(v->ops->commit(v, paths, 3, "tether: commit", NULL, &id, &err));
	char *head = OUT(root, "rev-parse", "HEAD");
	CHECK_STR(id, head);
	char *parent = OUT(root, "rev-parse", "HEAD~1");
	CHECK_STR(parent, before);
	char *tree = OUT(root, "ls-tree", "-r", "--name-only", "HEAD");
	CHECK_STR(tree, ":m.toml\nREADME\ndata/[x].toml\ndata/m.toml");
	char *staged = OUT(root, "diff", "--cached", "--name-only");
	CHECK_STR(staged, "other.txt");  /* still staged, not committed */
	char *readme = OUT(root, "show", "HEAD:README");
	CHECK_STR(readme, "hello");
	char *msg = OUT(root, "log", "-1", "--format=%B");
	CHECK_STR(msg, "tether: commit");
	bool d = true;
	CHECK_OK(v->ops->dirty(v, paths, 3, &d, &err));
	CHECK(!d);

	/* a deletion commits too */
	char *m = tt_path_join(root, "data/m.toml");
	CHECK(m && unlink(m) == 0);
	free(m);
	char *id2 = NULL;
	CHECK_OK(v->ops->commit(v, paths, 1, "tether: remove", NULL, &id2, &err));
	char *tree2 = OUT(root, "ls-tree", "-r", "--name-only", "HEAD");
	CHECK_STR(tree2, ":m.toml\nREADME\ndata/[x].toml");
	char *none = NULL;
	CHECK_INT(v->ops->commit(v, paths, 0, "nothing", NULL, &none, &err), TT_EUSAGE);
	CHECK(none == NULL);
	tt_error_clear(&err);

	free(id2);
	free(tree2);
	free(msg);
	free(readme);
	free(staged);
	free(tree);
	free(parent);
	free(head);
	free(id);
	tt_vcs_free(v);
	free(before);
	free(root);
	free(tmp);
}

TT_TEST(commit_refused_by_a_hook_resets_the_index)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *before = OUT(root, "rev-parse", "HEAD");
	CHECK(put(root, ".git/hooks/pre-commit", "#!/bin/sh\necho 'hook says no' >&2\nexit 1\n") == 0);
	char *hook = tt_path_join(root, ".git/hooks/pre-commit");
	CHECK(hook && chmod(hook, 0755) == 0);
	free(hook);
	CHECK(put(root, "data/m.toml", "m = 1\n") == 0);
	CHECK(put(root, "README", "edited\n") == 0);
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && before);

	const char *paths[] = { "data/m.toml", "README" };
	char *id = NULL;
	CHECK_INT(v->ops->commit(v, paths, 2, "refused", NULL, &id, &err), TT_EVCS);
	CHECK(id == NULL);
	CHECK(has_substr(err.message, "hook says no"));
	tt_error_clear(&err);
	char *head = OUT(root, "rev-parse", "HEAD");
	CHECK_STR(head, before);
	char *staged = OUT(root, "diff", "--cached", "--name-only");
	CHECK_STR(staged, "");
	char *status = OUT(root, "status", "--porcelain");
	CHECK_STR(status, " M README\n?? data/m.toml");  /* the files are as they were */
	free(status);
	free(staged);
	free(head);
	tt_vcs_free(v);
	free(before);
	free(root);
	free(tmp);
}

TT_TEST(commit_under_an_ignored_directory_is_refused)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	CHECK(put(root, ".gitignore", "ignored/\n") == 0);
	char *before = commit_all(root, "ignore");
	CHECK(put(root, "ignored/m.toml", "m = 1\n") == 0);
	CHECK(put(root, "ok.toml", "ok = 1\n") == 0);
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && before);
	const char *paths[] = { "ok.toml", "ignored/m.toml" };
	char *id = NULL;
	CHECK_INT(v->ops->commit(v, paths, 2, "tether", NULL, &id, &err), TT_EVCS);
	CHECK(id == NULL);
	CHECK(has_substr(err.message, "ignored"));
	tt_error_clear(&err);
	char *head = OUT(root, "rev-parse", "HEAD");
	CHECK_STR(head, before);
	char *staged = OUT(root, "diff", "--cached", "--name-only");
	CHECK_STR(staged, "");  /* ok.toml is not left staged either */
	free(staged);
	free(head);
	tt_vcs_free(v);
	free(before);
	free(root);
	free(tmp);
}

TT_TEST(commit_advances_another_branch)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *base = OUT(root, "rev-parse", "HEAD");
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && base);
	/* park on tether/<base12> and commit there, advancing main */
	CHECK_OK(v->ops->new(v, base, &err));
	char *cur = NULL;
	CHECK_OK(v->ops->current_bookmark(v, &cur, &err));
	CHECK(cur == NULL);
	CHECK(put(root, "m.toml", "m = 1\n") == 0);
	const char *paths[] = { "m.toml" };
	char *id = NULL;
	CHECK_OK(v->ops->commit(v, paths, 1, "tether", "main", &id, &err));
	char *main_at = OUT(root, "rev-parse", "refs/heads/main");
	CHECK_STR(main_at, id);
	char *on = OUT(root, "symbolic-ref", "--short", "HEAD");
	char want[64];
	snprintf(want, sizeof want, "tether/%.12s", base);
	CHECK_STR(on, want);
	/* advancing the checked-out branch is a no-op */
	GIT(root, "switch", "-q", "main");
	CHECK(put(root, "m.toml", "m = 2\n") == 0);
	char *id2 = NULL;
	CHECK_OK(v->ops->commit(v, paths, 1, "again", "main", &id2, &err));
	char *main2 = OUT(root, "rev-parse", "main");
	CHECK_STR(main2, id2);
	free(main2);
	free(id2);
	free(on);
	free(main_at);
	free(id);
	tt_vcs_free(v);
	free(base);
	free(root);
	free(tmp);
}

TT_TEST(repository_environment_variables_do_not_redirect)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo"), *other = new_repo(tmp, "other");
	CHECK(root && other);
	CHECK(put(other, "elsewhere", "other repository\n") == 0);
	char *other_head = commit_all(other, "other");
	char *gitdir = tt_path_join(other, ".git"), *index = tt_path_join(other, ".git/index");
	CHECK(other_head && gitdir && index);
	CHECK(put(root, "data/m.toml", "m = 1\n") == 0);
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v);
	char *head = OUT(root, "rev-parse", "HEAD");

	setenv("GIT_DIR", gitdir, 1);
	setenv("GIT_WORK_TREE", other, 1);
	setenv("GIT_INDEX_FILE", index, 1);
	setenv("GIT_OBJECT_DIRECTORY", gitdir, 1);
	char *id = NULL;
	const char *paths[] = { "data/m.toml" };
	bool d = false;
	int rc_dirty = v->ops->dirty(v, paths, 1, &d, &err);
	int rc_rev = tt_vcs_current_rev(v, &id, &err);
	char *cur = id;
	char *committed = NULL;
	int rc_commit = v->ops->commit(v, paths, 1, "here", NULL, &committed, &err);
	json_t *files = NULL, *revs = NULL;
	int rc_files = tt_vcs_files_at(v, "HEAD", "data", &files, &err);
	int rc_revs = v->ops->history_revs(v, &revs, &err);
	for (size_t i = 0; scrubbed[i]; i++)
		unsetenv(scrubbed[i]);

	CHECK_INT(rc_dirty, 0);
	CHECK(d);
	CHECK_INT(rc_rev, 0);
	CHECK_STR(cur, head);
	CHECK_INT(rc_commit, 0);
	char *now = OUT(root, "rev-parse", "HEAD");
	CHECK_STR(committed, now);
	char *other_now = OUT(other, "rev-parse", "HEAD");
	CHECK_STR(other_now, other_head);
	char *other_staged = OUT(other, "diff", "--cached", "--name-only");
	CHECK_STR(other_staged, "");
	CHECK_INT(rc_files, 0);
	CHECK_STR(json_string_value(json_object_get(files, "data/m.toml")), "m = 1\n");
	CHECK_INT(rc_revs, 0);
	CHECK_INT(json_array_size(revs), 2);
	json_decref(files);
	json_decref(revs);
	free(other_staged);
	free(other_now);
	free(now);
	free(committed);
	free(cur);
	free(head);
	tt_vcs_free(v);
	free(gitdir);
	free(index);
	free(other_head);
	free(other);
	free(root);
	free(tmp);
}

TT_TEST(uncommit_only_the_head)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *first = OUT(root, "rev-parse", "HEAD");
	CHECK(put(root, "m.toml", "m = 1\n") == 0);
	char *second = commit_all(root, "second");
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && first && second);

	bool did = true;
	CHECK_OK(v->ops->uncommit(v, first, &did, &err));
	CHECK(!did);  /* not HEAD */
	CHECK_OK(v->ops->uncommit(v, second, &did, &err));
	CHECK(did);
	char *head = OUT(root, "rev-parse", "HEAD");
	CHECK_STR(head, first);
	char *branch = OUT(root, "symbolic-ref", "--short", "HEAD");
	CHECK_STR(branch, "main");
	char *staged = OUT(root, "diff", "--cached", "--name-only");
	CHECK_STR(staged, "m.toml");  /* its changes are back in the working copy */
	char *text = slurp(root, "m.toml");
	CHECK_STR(text, "m = 1\n");
	CHECK_OK(v->ops->uncommit(v, second, &did, &err));
	CHECK(!did);

	/* the root commit: the branch becomes unborn, the files stay */
	CHECK_OK(v->ops->uncommit(v, first, &did, &err));
	CHECK(did);
	json_t *pos = NULL;
	CHECK_OK(v->ops->position(v, &pos, &err));
	CHECK(json_is_null(json_object_get(pos, "commit")));
	CHECK(json_is_null(json_object_get(pos, "id")));
	CHECK_STR(json_string_value(json_object_get(pos, "branch")), "main");
	json_decref(pos);
	char *readme = slurp(root, "README");
	CHECK_STR(readme, "hello\n");
	char *id = NULL;
	CHECK_INT(tt_vcs_current_rev(v, &id, &err), TT_EVCS);
	tt_error_clear(&err);

	free(readme);
	free(text);
	free(staged);
	free(branch);
	free(head);
	tt_vcs_free(v);
	free(first);
	free(second);
	free(root);
	free(tmp);
}

TT_TEST(new_switches_or_parks)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *first = OUT(root, "rev-parse", "HEAD");
	CHECK(put(root, "a", "a\n") == 0);
	char *second = commit_all(root, "second");
	GIT(root, "branch", "feature", first);
	GIT(root, "tag", "-a", "-m", "t", "v1", first);
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && first && second);
	char *cur = NULL, *on = NULL, want[64];

	CHECK_OK(v->ops->new(v, NULL, &err));  /* stays */
	on = OUT(root, "symbolic-ref", "--short", "HEAD");
	CHECK_STR(on, "main");
	free(on);

	CHECK_OK(v->ops->new(v, "feature", &err));  /* a branch: switched to */
	CHECK_OK(v->ops->current_bookmark(v, &cur, &err));
	CHECK_STR(cur, "feature");
	free(cur);

	/* a tag (peeled), then the same commit again: the same parking branch */
	CHECK_OK(v->ops->new(v, "v1", &err));
	snprintf(want, sizeof want, "tether/%.12s", first);
	on = OUT(root, "symbolic-ref", "--short", "HEAD");
	CHECK_STR(on, want);
	free(on);
	CHECK_OK(v->ops->current_bookmark(v, &cur, &err));
	CHECK(cur == NULL);
	json_t *pos = NULL;
	CHECK_OK(v->ops->position(v, &pos, &err));
	CHECK_STR(json_string_value(json_object_get(pos, "branch")), want);
	CHECK_STR(json_string_value(json_object_get(pos, "commit")), first);
	json_decref(pos);
	GIT(root, "switch", "-q", "main");
	CHECK_OK(v->ops->new(v, first, &err));
	on = OUT(root, "symbolic-ref", "--short", "HEAD");
	CHECK_STR(on, want);
	free(on);

	/* the parking branch moved on: a sibling */
	CHECK(put(root, "p", "p\n") == 0);
	char *parked = commit_all(root, "parked");
	CHECK(parked);
	GIT(root, "switch", "-q", "main");
	CHECK_OK(v->ops->new(v, "HEAD~1", &err));
	snprintf(want, sizeof want, "tether/%.12s-2", first);
	on = OUT(root, "symbolic-ref", "--short", "HEAD");
	CHECK_STR(on, want);
	free(on);
	char *head = OUT(root, "rev-parse", "HEAD");
	CHECK_STR(head, first);
	free(head);

	/* not a branch even though refs/heads/main~1 resolves */
	GIT(root, "switch", "-q", "main");
	CHECK_OK(v->ops->new(v, "main~1", &err));
	on = OUT(root, "symbolic-ref", "--short", "HEAD");
	CHECK_STR(on, want);
	free(on);

	CHECK_INT(v->ops->new(v, "nope", &err), TT_EVCS);
	CHECK_STR(err.message, "could not resolve revision: nope");
	tt_error_clear(&err);

	/* bookmarks leave parking branches out */
	json_t *marks = NULL;
	CHECK_OK(v->ops->bookmarks(v, &marks, &err));
	CHECK_INT(json_object_size(marks), 2);
	CHECK_STR(json_string_value(json_object_get(marks, "main")), second);
	CHECK_STR(json_string_value(json_object_get(marks, "feature")), first);
	json_decref(marks);

	free(parked);
	tt_vcs_free(v);
	free(first);
	free(second);
	free(root);
	free(tmp);
}

TT_TEST(position_and_goto)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *first = OUT(root, "rev-parse", "HEAD");
	CHECK(put(root, "a", "a\n") == 0);
	char *second = commit_all(root, "second");
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && first && second);

	json_t *pos = NULL, *detached = NULL;
	CHECK_OK(v->ops->position(v, &pos, &err));
	CHECK_STR(json_string_value(json_object_get(pos, "kind")), "git");
	CHECK_STR(json_string_value(json_object_get(pos, "id")), second);
	CHECK_STR(json_string_value(json_object_get(pos, "commit")), second);
	CHECK_STR(json_string_value(json_object_get(pos, "branch")), "main");
	const char *key;
	json_t *val;
	const char *order[] = { "kind", "id", "commit", "branch" };
	size_t k = 0;
	json_object_foreach(pos, key, val) {
		CHECK(k < 4);
		CHECK_STR(key, order[k++]);
	}

	GIT(root, "switch", "-q", "--detach", first);
	CHECK_OK(v->ops->position(v, &detached, &err));
	CHECK(json_is_null(json_object_get(detached, "branch")));
	CHECK_STR(json_string_value(json_object_get(detached, "commit")), first);

	CHECK_OK(v->ops->goto_position(v, pos, &err));
	char *on = OUT(root, "symbolic-ref", "--short", "HEAD");
	CHECK_STR(on, "main");
	free(on);
	CHECK_OK(v->ops->goto_position(v, detached, &err));
	char *head = OUT(root, "rev-parse", "HEAD");
	CHECK_STR(head, first);
	free(head);
	on = OUT(root, "symbolic-ref", "-q", "HEAD");
	CHECK(on == NULL);  /* detached */

	json_t *jj = json_pack("{s:s, s:s}", "kind", "jj", "id", "abc");
	CHECK_INT(v->ops->goto_position(v, jj, &err), TT_EVCS);
	CHECK_STR(err.message, "position was not recorded by git");
	tt_error_clear(&err);
	json_decref(jj);
	json_decref(pos);
	json_decref(detached);
	tt_vcs_free(v);
	free(first);
	free(second);
	free(root);
	free(tmp);
}

TT_TEST(bookmark_set_and_delete)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = new_repo(tmp, "repo");
	CHECK(root);
	char *first = OUT(root, "rev-parse", "HEAD");
	CHECK(put(root, "a", "a\n") == 0);
	char *second = commit_all(root, "second");
	tt_vcs *v = open_vcs(root, NULL);
	CHECK(v && first && second);

	CHECK_OK(v->ops->bookmark_set(v, "feature", "HEAD~1", &err));  /* create */
	char *at = OUT(root, "rev-parse", "refs/heads/feature");
	CHECK_STR(at, first);
	free(at);
	CHECK_OK(v->ops->bookmark_set(v, "feature", second, &err));  /* forwards */
	at = OUT(root, "rev-parse", "refs/heads/feature");
	CHECK_STR(at, second);
	free(at);
	CHECK_OK(v->ops->bookmark_set(v, "feature", first, &err));  /* backwards */
	at = OUT(root, "rev-parse", "refs/heads/feature");
	CHECK_STR(at, first);
	free(at);
	char *on = OUT(root, "symbolic-ref", "--short", "HEAD");
	CHECK_STR(on, "main");  /* the working copy did not move */
	free(on);
	char *a = tt_path_join(root, "a");
	CHECK(tt_exists(a));

	/* the checked-out branch moves with its tree */
	CHECK_OK(v->ops->bookmark_set(v, "main", "feature", &err));
	char *head = OUT(root, "rev-parse", "HEAD");
	CHECK_STR(head, first);
	free(head);
	CHECK(!tt_exists(a));
	CHECK_OK(v->ops->bookmark_set(v, "main", second, &err));
	CHECK(tt_exists(a));
	free(a);

	json_t *marks = NULL;
	CHECK_OK(v->ops->bookmarks(v, &marks, &err));
	CHECK_INT(json_object_size(marks), 2);
	CHECK_STR(json_string_value(json_object_get(marks, "feature")), first);
	json_decref(marks);

	CHECK_OK(v->ops->bookmark_delete(v, "feature", &err));
	CHECK_OK(v->ops->bookmarks(v, &marks, &err));
	CHECK_INT(json_object_size(marks), 1);
	CHECK(json_object_get(marks, "feature") == NULL);
	json_decref(marks);
	CHECK_INT(v->ops->bookmark_delete(v, "feature", &err), TT_EVCS);
	tt_error_clear(&err);
	CHECK_INT(v->ops->bookmark_set(v, "x", "nope", &err), TT_EVCS);
	CHECK_STR(err.message, "could not resolve revision: nope");
	tt_error_clear(&err);

	/* new_bookmark with a revision */
	CHECK_OK(v->ops->new_bookmark(v, "topic", "HEAD~1", &err));
	char *cur = NULL;
	CHECK_OK(v->ops->current_bookmark(v, &cur, &err));
	CHECK_STR(cur, "topic");
	free(cur);
	head = OUT(root, "rev-parse", "HEAD");
	CHECK_STR(head, first);
	free(head);

	tt_vcs_free(v);
	free(first);
	free(second);
	free(root);
	free(tmp);
}

/* Everything the read paths ask, answered natively and through git, on
 * loose objects and then on an aggressively delta-packed repository. */
static void same_answers(const char *root, const char *tmp, const char *const *revs, size_t n)
{
	tt_error err = TT_ERROR_INIT;
	char *log = tt_path_join(tmp, "native.log");
	char *wrapper = logging_git(tmp, log);
	tt_vcs *nv = open_vcs(root, wrapper);
	setenv("TETHER_GIT_NATIVE", "0", 1);
	tt_vcs *gv = open_vcs(root, NULL);
	unsetenv("TETHER_GIT_NATIVE");
	CHECK(nv && gv && nv->native && !gv->native && log && wrapper);
	unlink(log);
	CHECK_STR(nv->shared_dir, gv->shared_dir);
	json_t *a = NULL, *b = NULL;
	CHECK_OK(nv->ops->files_at_many(nv, revs, n, "", &a, &err));
	CHECK_OK(gv->ops->files_at_many(gv, revs, n, "", &b, &err));
	CHECK(a && b && json_object_size(a) == n && json_equal(a, b));
	json_decref(a);
	json_decref(b);
	CHECK_OK(tt_vcs_files_at(nv, revs[0], "data", &a, &err));
	CHECK_OK(tt_vcs_files_at(gv, revs[0], "data", &b, &err));
	CHECK(json_equal(a, b) && json_object_size(a) == 1);
	json_decref(a);
	json_decref(b);
	CHECK_OK(nv->ops->bookmarks(nv, &a, &err));
	CHECK_OK(gv->ops->bookmarks(gv, &b, &err));
	CHECK(json_equal(a, b) && json_object_size(a) == 2);
	json_decref(a);
	json_decref(b);
	const char *names[] = { "HEAD", "main", "side", "v1", "refs/heads/side", revs[n - 1] };
	for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
		char *x = NULL, *y = NULL;
		CHECK_OK(nv->ops->resolve(nv, names[i], &x, &err));
		CHECK_OK(gv->ops->resolve(gv, names[i], &y, &err));
		CHECK_STR(x, y);
		free(x);
		free(y);
	}
	char *x = NULL, *y = NULL;
	CHECK_OK(nv->ops->current_bookmark(nv, &x, &err));
	CHECK_OK(gv->ops->current_bookmark(gv, &y, &err));
	CHECK_STR(x, "main");
	CHECK_STR(y, "main");
	free(x);
	free(y);
	size_t len = 0;
	CHECK_OK(nv->ops->read_file_at(nv, "v1", "data/m.toml", &x, &len, &err));
	CHECK_OK(gv->ops->read_file_at(gv, "v1", "data/m.toml", &y, NULL, &err));
	CHECK_STR(x, y);
	free(x);
	free(y);
	CHECK_OK(nv->ops->read_file_at(nv, "HEAD", "data/none", &x, NULL, &err));
	CHECK(x == NULL);
	const char *paths[] = { "data/m.toml", "other.txt", "data", "nope" };
	bool ta[4], tb[4];
	CHECK_OK(tt_vcs_tracked(nv, paths, 4, ta, &err));
	CHECK_OK(tt_vcs_tracked(gv, paths, 4, tb, &err));
	for (int i = 0; i < 4; i++)
		CHECK(ta[i] == tb[i]);
	CHECK(ta[0] && ta[1] && !ta[2] && !ta[3]);
	CHECK(!tt_exists(log));  /* not one git process for any of it */
	tt_vcs_free(nv);
	tt_vcs_free(gv);
	free(log);
	free(wrapper);
}

TT_TEST(native_reads_match_git)
{
	tt_error err = TT_ERROR_INIT;
	char *tmp = setup(), *root = tt_path_join(tmp, "repo");
	CHECK(root && tt_mkdirs(root, 0755, &err) == 0);
	GIT(root, "init", "-q", "-b", "main");
	CHECK_OK(import_history(root, 200, &err));
	GIT(root, "checkout", "-q", "main");
	GIT(root, "branch", "side", "main~5");
	GIT(root, "tag", "-a", "-m", "one", "v1", "main~7");
	char *list = OUT(root, "rev-list", "--all");
	CHECK(list);
	const char *revs[256];
	size_t n = 0;
	for (char *p = strtok(list, "\n"); p && n < 256; p = strtok(NULL, "\n"))
		revs[n++] = p;
	CHECK_INT((int)n, 200);
	GIT(root, "repack", "-a", "-d", "-f", "--depth=50", "--window=50", "-q");
	GIT(root, "update-index", "--index-version", "4");
	same_answers(root, tmp, revs, n);
	GIT(root, "pack-refs", "--all");
	GIT(root, "update-index", "--index-version", "2");
	same_answers(root, tmp, revs, n);
	/* a tag named as the branch: git spells the branch heads/main */
	GIT(root, "tag", "main", "main~1");
	tt_vcs *nv = open_vcs(root, NULL);
	CHECK(nv && nv->native);
	char *cur = NULL;
	CHECK_OK(nv->ops->current_bookmark(nv, &cur, &err));
	CHECK_STR(cur, "heads/main");
	free(cur);
	tt_vcs_free(nv);
	free(list);
	free(root);
	free(tmp);
}

TT_TEST(silent_failure_is_named)
{
	/* git config --get of an unset key exits 1 and prints nothing: the
	 * error still names the command (and reads no output it lacks) */
	const char *args[] = { "config", "--file", "/dev/null", "--get", "tether.unset", NULL };
	tt_error err = TT_ERROR_INIT;
	tt_buf out = TT_BUF_INIT;
	int status = 0;
	int rc = tt_git_run("git", tt_test_tmpdir(), args, &out, false, &status, &err);
	CHECK_INT(rc, TT_EVCS);
	CHECK_INT(status, 1);
	CHECK_STR(tt_error_text(&err), "command failed (git config --file /dev/null --get tether.unset): ");
	tt_error_clear(&err);
	tt_buf_release(&out);
}
