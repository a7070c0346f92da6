/*
 * vcs/jj.c - the jj adapter (see vcs.h).
 *
 * Every call is a `jj` process with plain output (no colour, no pager)
 * and, instead of the user's config file, a layer holding only the user's
 * settings tether's calls keep (identity, signing, snapshot, git interop,
 * working-copy and core settings, and the immutable_heads() revset alias
 * with the aliases it names): nothing else of theirs -- aliases,
 * templates, revset settings -- changes what tether parses.  Templates call
 * keywords as methods (`self.commit_id()`) so no alias can shadow them.
 *
 * Snapshots follow the user's snapshot.auto-track, minus tether's own
 * paths (everything under `.tether`), which commit and dirty track by name.  While tether
 * has moved the working copy itself (abandon), nothing new is tracked.
 *
 * Content, history walks and commit metadata go through git plumbing on
 * the repository's git store (the colocated .git, or .jj/repo/store/git):
 * one `git cat-file --batch` reader, as under git.
 */
#include "vcs/vcs.h"
#include "vcs/dispatch.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/mem.h"
#include "util/proc.h"

#define JJ_OUTPUT_CAP ((size_t)512 << 20)
#define US "\x1f"
#define RS "\x1e"

typedef struct jj_vcs {
	tt_vcs base;
	char *git_exe;      /* NULL: no git plumbing */
	char *git_dir;      /* the store when not colocated (NULL: root/.git) */
	tt_vcs *git;        /* the colocated .git's adapter, or NULL */
	char *layer;        /* the config file JJ_CONFIG names */
	char *layer_env;    /* "JJ_CONFIG=<layer>" */
	char *auto_track;   /* --config value: the user's auto-track minus .tether */
	int parked;
	bool version_checked;
} jj_vcs;

#define J(v) ((jj_vcs *)(v))

/* Prefixes of the user's settings kept (see the header comment). */
static const char *const user_keys[] = { "core.", "fsmonitor.", "git.", "signing.", "snapshot.", "user.",
					  "working-copy.", NULL };

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
	return tt_error_set(err, TT_EVCS, "invalid bookmark name: %s", name ? name : "(none)");
}

static void chomp(tt_buf *b)
{
	while (b->len && (b->ptr[b->len - 1] == '\n' || b->ptr[b->len - 1] == '\r' || b->ptr[b->len - 1] == ' '))
		tt_buf_truncate(b, b->len - 1);
}

static bool is_commit_id(const char *s)
{
	size_t n = strlen(s);
	if (n != 40 && n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isxdigit((unsigned char)s[i]) || isupper((unsigned char)s[i]))
			return false;
	return true;
}

/* A JSON string literal of s (jj's fileset and config string syntax). */
static char *quoted(const char *s)
{
	json_t *j = json_string(s);
	char *out = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	json_decref(j);
	return out;
}

/* ---- running jj ------------------------------------------------------ */

typedef struct argv_list {
	const char **v;
	size_t n, alloc;
	char **owned;
	size_t nowned, owned_alloc;
	bool oom;
} argv_list;

static void av_add(argv_list *a, const char *s)
{
	if (a->oom)
		return;
	if (!s || TT_ARRAY_GROW(a->v, a->alloc, a->n + 2) != 0) {
		a->oom = true;
		return;
	}
	a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

/* Add s, which the list then owns (NULL: out of memory). */
static void av_own(argv_list *a, char *s)
{
	if (!s || TT_ARRAY_GROW(a->owned, a->owned_alloc, a->nowned + 1) != 0) {
		free(s);
		a->oom = true;
		return;
	}
	a->owned[a->nowned++] = s;
	av_add(a, s);
}

/* Root-relative paths as filesets matching exactly them (a directory: all under it). */
static void av_paths(argv_list *a, const char *prefix, const char *const *relpaths, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *q = quoted(relpaths[i]);
		av_own(a, q ? tt_asprintf("%s%s", prefix, q) : NULL);
		free(q);
	}
}

static void av_release(argv_list *a)
{
	for (size_t i = 0; i < a->nowned; i++)
		free(a->owned[i]);
	free(a->owned);
	free(a->v);
	memset(a, 0, sizeof *a);
}

/* Run exe with argv (argv[0] excluded) in cwd: output into out. */
static int run_raw(const char *exe, const char *cwd, const char *const *args, const char *const *env_set,
		   tt_buf *out, bool allow_fail, int *status, tt_error *err)
{
	static const char *const iso[] = { "--color=never", "--no-pager", "--config", "ui.color=\"never\"",
					   "--config", "ui.paginate=\"never\"" };
	size_t nargs = 0;
	while (args[nargs])
		nargs++;
	const char **argv = tt_calloc(nargs + 8, sizeof *argv);
	tt_proc_result r;
	int rc;
	if (!argv)
		return tt_error_oom(err);
	argv[0] = exe;
	memcpy(argv + 1, iso, sizeof iso);
	memcpy(argv + 7, args, nargs * sizeof *args);
	tt_proc_opts opts = { .argv = argv, .cwd = cwd, .env_set = env_set, .env_unset = tt_git_env_unset,
			      .max_out = JJ_OUTPUT_CAP, .max_err = 1 << 20 };
	tt_proc_result_init(&r);
	rc = tt_proc_run(&opts, &r, err);
	if (rc == 0) {
		if (status)
			*status = r.status;
		if (r.status != 0 && !allow_fail) {
			rc = tt_vcs_command_failed("jj", args, &r, err);
		} else if (out && r.status == 0) {
			tt_buf_put(out, r.out.ptr, r.out.len);
			rc = tt_buf_check(out, err, "jj output");
		}
	} else if (rc == TT_ENOTFOUND) {
		tt_error_set(err, TT_EVCS, "executable not found: %s", exe);
		tt_error_hint(err, "install jj 0.43 or newer, or name it with TETHER_JJ or .tether/secrets.toml "
				   "[vcs] jj_path (or set [vcs] prefer = \"git\" in tether.toml to work through a "
				   "colocated .git)");
		rc = TT_EVCS;
	}
	tt_proc_result_release(&r);
	free(argv);
	return rc;
}

static int check_version(jj_vcs *j, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc;
	if (j->version_checked)
		return 0;
	rc = run_raw(j->base.exe, j->base.root, (const char *const[]){ "--version", NULL }, NULL, &b, false, NULL,
		     err);
	if (rc == 0) {
		const char *p = b.ptr;
		int maj = 0, min = 0, pat = 0;
		while (*p && !isdigit((unsigned char)*p))
			p++;
		if (sscanf(p, "%d.%d.%d", &maj, &min, &pat) == 3 && (maj == 0 && min < 43))
			rc = tt_error_set(err, TT_EVCS, "jj %d.%d.%d is too old: tether needs jj 0.43.0 or newer "
					  "(%s)", maj, min, pat, j->base.exe);
		else
			j->version_checked = true;
	}
	tt_buf_release(&b);
	return rc;
}

static bool kept_key(const char *name)
{
	for (size_t i = 0; user_keys[i]; i++)
		if (strncmp(name, user_keys[i], strlen(user_keys[i])) == 0)
			return true;
	return false;
}

/* The alias name of a revset-aliases entry ("revset-aliases.\"f(x)\"" -> f). */
static char *alias_base(const char *name)
{
	const char *p = name + strlen("revset-aliases.");
	if (*p == '"' || *p == '\'')
		p++;
	size_t n = strcspn(p, "(\"' ");
	return tt_strndup(p, n);
}

/* The text of a one-line TOML string value (jj prints values as TOML):
 * a basic string decoded as the JSON string it also is, a literal one
 * unquoted; NULL for anything else. */
static char *toml_string_text(const char *value)
{
	size_t n = strlen(value);
	if (n >= 2 && value[0] == '\'' && value[n - 1] == '\'')
		return tt_strndup(value + 1, n - 2);
	if (n >= 2 && value[0] == '"' && value[n - 1] == '"') {
		json_t *j = json_loads(value, JSON_DECODE_ANY, NULL);
		char *out = json_is_string(j) ? tt_strdup(json_string_value(j)) : NULL;
		json_decref(j);
		return out;
	}
	return NULL;
}

/* Whether code (an alias definition) names word outside string literals. */
static bool names_word(const char *code, const char *word)
{
	size_t wl = strlen(word);
	char quote = 0;
	for (const char *p = code; *p; p++) {
		if (quote) {
			if (*p == '\\' && quote == '"' && p[1])
				p++;
			else if (*p == quote)
				quote = 0;
			continue;
		}
		if (*p == '"' || *p == '\'') {
			quote = *p;
			continue;
		}
		if ((isalpha((unsigned char)*p) || *p == '_') &&
		    (p == code || !(isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '-'))) {
			size_t n = 0;
			while (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '-')
				n++;
			if (n == wl && strncmp(p, word, wl) == 0)
				return true;
			p += n - 1;
		}
	}
	return false;
}

/* Write the config layer (once per adapter) and read the user's auto-track. */
static int ensure_layer(jj_vcs *j, tt_error *err)
{
	tt_buf out = TT_BUF_INIT, text = TT_BUF_INIT, at = TT_BUF_INIT;
	json_t *aliases = NULL;  /* base name -> [[entry, definition], ...] */
	json_t *reached = NULL, *todo = NULL;
	int rc, status = 0;

	if (j->layer)
		return 0;
	if ((rc = check_version(j, err)) < 0)
		return rc;
	const char *list[] = { "config", "list", "--user", "-T",
			       "self.name() ++ \"\\x1f\" ++ self.value() ++ \"\\x1e\"", NULL };
	if ((rc = run_raw(j->base.exe, j->base.root, list, NULL, &out, true, &status, err)) < 0)
		goto done;
	if (!(aliases = json_object()) || !(reached = json_object()) || !(todo = json_array())) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (char *p = out.ptr, *end = out.ptr + out.len; status == 0 && p && p < end;) {
		char *rs = memchr(p, '\x1e', (size_t)(end - p));
		if (rs)
			*rs = '\0';
		while (*p == '\n')
			p++;
		char *us = strchr(p, '\x1f');
		if (us) {
			*us = '\0';
			const char *name = p, *value = us + 1;
			if (strchr(value, '\n')) {
				/* not one line of TOML: jj's default holds */
			} else if (kept_key(name)) {
				tt_buf_printf(&text, "%s = %s\n", name, value);
			} else if (strncmp(name, "revset-aliases.", 15) == 0) {
				char *base = alias_base(name);
				json_t *defs = base ? json_object_get(aliases, base) : NULL;
				if (base && !defs)
					json_object_set_new(aliases, base, defs = json_array());
				char *def = toml_string_text(value);
				if (defs && def)
					json_array_append_new(defs, json_pack("[s,s,s]", name, value, def));
				free(def);
				free(base);
			}
		}
		p = rs ? rs + 1 : NULL;
	}
	/* immutable_heads() and every alias its definition reaches. */
	json_array_append_new(todo, json_string("immutable_heads"));
	while (json_array_size(todo)) {
		char *base = tt_strdup(json_string_value(json_array_get(todo, json_array_size(todo) - 1)));
		json_array_remove(todo, json_array_size(todo) - 1);
		if (!base) {
			rc = tt_error_oom(err);
			goto done;
		}
		json_t *defs = json_object_get(aliases, base);
		if (defs && !json_object_get(reached, base)) {
			size_t i;
			json_t *d;
			json_object_set_new(reached, base, json_true());
			json_array_foreach(defs, i, d) {
				const char *def = json_string_value(json_array_get(d, 2));
				const char *k;
				json_t *unused;
				tt_buf_printf(&text, "%s = %s\n", json_string_value(json_array_get(d, 0)),
					      json_string_value(json_array_get(d, 1)));
				json_object_foreach(aliases, k, unused)
					if (names_word(def, k))
						json_array_append_new(todo, json_string(k));
			}
		}
		free(base);
	}
	{
		char tmpl[] = "/tmp/tether-jj-XXXXXX.toml";
		const char *tmpdir = getenv("TMPDIR");
		char *path = tmpdir && *tmpdir ? tt_asprintf("%s/tether-jj-XXXXXX.toml", tmpdir) : tt_strdup(tmpl);
		int fd = path ? mkstemps(path, 5) : -1;
		if (fd < 0) {
			rc = path ? tt_error_set(err, TT_EIO, "cannot create a jj config layer in %s",
						 tmpdir && *tmpdir ? tmpdir : "/tmp")
				  : tt_error_oom(err);
			free(path);
			goto done;
		}
		size_t off = 0;
		while (off < text.len) {
			ssize_t w = write(fd, text.ptr + off, text.len - off);
			if (w <= 0)
				break;
			off += (size_t)w;
		}
		close(fd);
		j->layer = path;
	}
	if (!(j->layer_env = tt_asprintf("JJ_CONFIG=%s", j->layer))) {
		rc = tt_error_oom(err);
		goto done;
	}
	{
		const char *env[] = { j->layer_env, NULL };
		const char *get[] = { "config", "get", "snapshot.auto-track", NULL };
		if ((rc = run_raw(j->base.exe, j->base.root, get, env, &at, true, &status, err)) < 0)
			goto done;
		chomp(&at);
		char *theirs = tt_asprintf("(%s) ~ root-glob:\"**/.tether/**\"",
					   status == 0 && at.len ? at.ptr : "all()");
		char *q = theirs ? quoted(theirs) : NULL;
		j->auto_track = q ? tt_asprintf("snapshot.auto-track=%s", q) : NULL;
		free(theirs);
		free(q);
		if (!j->auto_track)
			rc = tt_error_oom(err);
	}
done:
	json_decref(aliases);
	json_decref(reached);
	json_decref(todo);
	tt_buf_release(&out);
	tt_buf_release(&text);
	tt_buf_release(&at);
	return rc;
}

/* Run jj (in cwd, NULL: the root) with the isolation and snapshot settings. */
static int jj_run_in(jj_vcs *j, const char *cwd, const char *const *args, tt_buf *out, bool allow_fail,
		     int *status, tt_error *err)
{
	argv_list a = { 0 };
	int rc;
	if ((rc = ensure_layer(j, err)) < 0)
		return rc;
	av_add(&a, "--config");
	av_add(&a, j->parked ? "snapshot.auto-track=\"none()\"" : j->auto_track);
	for (size_t i = 0; args[i]; i++)
		av_add(&a, args[i]);
	if (a.oom) {
		av_release(&a);
		return tt_error_oom(err);
	}
	const char *env[] = { j->layer_env, NULL };
	rc = run_raw(j->base.exe, cwd ? cwd : j->base.root, a.v, env, out, allow_fail, status, err);
	av_release(&a);
	return rc;
}

static int jj(jj_vcs *j, const char *const *args, tt_buf *out, tt_error *err)
{
	return jj_run_in(j, NULL, args, out, false, NULL, err);
}

static int jj_try(jj_vcs *j, const char *const *args, tt_buf *out, int *status, tt_error *err)
{
	return jj_run_in(j, NULL, args, out, true, status, err);
}

static int jj_av(jj_vcs *j, argv_list *a, tt_buf *out, tt_error *err)
{
	if (a->oom || !a->v)
		return tt_error_oom(err);
	return jj(j, a->v, out, err);
}

/* `jj log --no-graph --ignore-working-copy -r revset -T tmpl`. */
static int jj_log(jj_vcs *j, const char *revset, const char *tmpl, bool ignore_wc, tt_buf *out, int *status,
		  tt_error *err)
{
	const char *args[] = { "log", "--no-graph", "-r", revset, "-T", tmpl,
			       ignore_wc ? "--ignore-working-copy" : NULL, NULL };
	if (status)
		return jj_try(j, args, out, status, err);
	return jj(j, args, out, err);
}

/* The whitespace-separated words of b appended to arr. */
static int words_into(json_t *arr, const tt_buf *b, tt_error *err)
{
	const char *p = b->ptr, *end = b->ptr + b->len;
	while (p && p < end) {
		while (p < end && isspace((unsigned char)*p))
			p++;
		const char *s = p;
		while (p < end && !isspace((unsigned char)*p))
			p++;
		if (p > s && json_array_append_new(arr, json_stringn(s, (size_t)(p - s))) != 0)
			return tt_error_oom(err);
	}
	return 0;
}

/* Track tether's paths by name: auto-track leaves them out, and a commit of
 * untracked paths is an empty commit jj reports as a success. */
static int track(jj_vcs *j, const char *const *relpaths, size_t n, tt_error *err)
{
	argv_list a = { 0 };
	int rc;
	if (!n)
		return 0;
	av_add(&a, "file");
	av_add(&a, "track");
	av_add(&a, "--config");
	av_add(&a, "snapshot.auto-track=\"none()\"");
	av_add(&a, "--config");
	av_add(&a, "snapshot.max-new-file-size=\"1GiB\"");
	av_paths(&a, "root:", relpaths, n);
	rc = jj_av(j, &a, NULL, err);
	av_release(&a);
	return rc;
}

/* ---- git plumbing ---------------------------------------------------- */

static int open_reader(jj_vcs *j, tt_git_reader **r, tt_error *err)
{
	if (!j->git_exe)
		return tt_error_set(err, TT_EVCS, "reading a jj repository needs git (its store is git's): "
				    "install git 2.38 or newer, or name it with TETHER_GIT");
	return tt_git_reader_open(r, j->git_exe, j->base.root, j->git_dir, err);
}

/* ---- revisions ------------------------------------------------------- */

static int jj_resolve(tt_vcs *v, const char *rev, char **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	json_t *ids = json_array();
	int status = 0, rc;
	*out = NULL;
	if (!ids)
		return tt_error_oom(err);
	if (bad_rev(rev)) {
		json_decref(ids);
		return refuse_rev(rev, err);
	}
	if ((rc = jj_log(J(v), rev, "self.commit_id() ++ \"\\n\"", true, &b, &status, err)) < 0 ||
	    (rc = words_into(ids, &b, err)) < 0)
		goto done;
	if (status != 0 || !json_array_size(ids)) {
		rc = refuse_rev(rev, err);
	} else if (json_array_size(ids) > 1) {
		tt_buf shown = TT_BUF_INIT;
		size_t i;
		json_t *x;
		json_array_foreach(ids, i, x)
			tt_buf_printf(&shown, "%s%.12s", i ? ", " : "", json_string_value(x));
		rc = tt_error_set(err, TT_EVCS, "revision '%s' is %zu commits (%s), not one", rev,
				  json_array_size(ids), shown.ptr ? shown.ptr : "");
		tt_buf_release(&shown);
	} else if (!(*out = tt_strdup(json_string_value(json_array_get(ids, 0))))) {
		rc = tt_error_oom(err);
	}
done:
	json_decref(ids);
	tt_buf_release(&b);
	return rc;
}

static int jj_is_ancestor(tt_vcs *v, const char *ancestor, const char *rev, bool *out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int status = 0, rc;
	*out = false;
	if (bad_rev(ancestor))
		return refuse_rev(ancestor, err);
	if (bad_rev(rev))
		return refuse_rev(rev, err);
	char *set = tt_asprintf("(%s)::(%s)", ancestor, rev);
	if (!set)
		return tt_error_oom(err);
	const char *args[] = { "log", "--no-graph", "-r", set, "--limit", "1", "-T", "self.commit_id()", NULL };
	rc = jj_try(J(v), args, &b, &status, err);
	if (rc == 0) {
		chomp(&b);
		*out = status == 0 && b.len > 0;
	}
	free(set);
	tt_buf_release(&b);
	return rc;
}

/* A revision as a commit id for git plumbing: NULL (with 0) when it does not resolve. */
static int commit_of(jj_vcs *j, const char *rev, char **out, tt_error *err)
{
	*out = NULL;
	if (is_commit_id(rev))
		return (*out = tt_strdup(rev)) ? 0 : tt_error_oom(err);
	tt_error none = TT_ERROR_INIT;
	int rc = jj_resolve(&j->base, rev, out, &none);
	if (rc == TT_EVCS) {
		tt_error_clear(&none);
		return 0;
	}
	if (rc < 0)
		tt_error_move(err, &none);
	tt_error_clear(&none);
	return rc;
}

/* ---- content at a revision ------------------------------------------- */

static int jj_read_file_at(tt_vcs *v, const char *rev, const char *relpath, char **out, size_t *len,
			   tt_error *err)
{
	tt_git_reader *r = NULL;
	char *commit = NULL;
	int rc;
	*out = NULL;
	if (len)
		*len = 0;
	if (bad_rev(rev))
		return refuse_rev(rev, err);
	if (!relpath || strpbrk(relpath, "\n\r"))
		return tt_error_set(err, TT_EVCS, "cannot read a path holding a line break: %s",
				    relpath ? relpath : "(none)");
	if ((rc = commit_of(J(v), rev, &commit, err)) < 0 || !commit)
		return rc;
	if ((rc = open_reader(J(v), &r, err)) == 0)
		rc = tt_git_reader_text_at(r, commit, relpath, out, len, err);
	tt_git_reader_close(r);
	free(commit);
	return rc;
}

static int jj_files_at_many(tt_vcs *v, const char *const *revs, size_t n, const char *reldir, json_t **out,
			    tt_error *err)
{
	tt_git_reader *r = NULL;
	json_t *result = NULL, *files = NULL;
	char *commit = NULL;
	int rc = 0;
	*out = NULL;
	for (size_t i = 0; i < n; i++)
		if (bad_rev(revs[i]))
			return refuse_rev(revs[i], err);
	if (reldir && strpbrk(reldir, "\n\r"))
		return tt_error_set(err, TT_EVCS, "cannot read a directory holding a line break: %s", reldir);
	if (!(result = json_object()))
		return tt_error_oom(err);
	for (size_t i = 0; i < n; i++) {
		free(commit);
		if ((rc = commit_of(J(v), revs[i], &commit, err)) < 0)
			goto done;
		if (!commit) {
			files = json_object();
		} else {
			if (!r && (rc = open_reader(J(v), &r, err)) < 0)
				goto done;
			if ((rc = tt_git_reader_files_at(r, commit, reldir, &files, err)) < 0)
				goto done;
		}
		if (!files || json_object_set_new(result, revs[i], files) != 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	*out = result;
	result = NULL;
done:
	free(commit);
	tt_git_reader_close(r);
	json_decref(result);
	return rc;
}

/* ---- history ---------------------------------------------------------- */

static int jj_history_revs(tt_vcs *v, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc;
	if (!(*out = json_array()))
		return tt_error_oom(err);
	if ((rc = jj_log(J(v), "::", "self.commit_id() ++ \"\\n\"", true, &b, NULL, err)) == 0)
		rc = words_into(*out, &b, err);
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	tt_buf_release(&b);
	return rc;
}

/*
 * Every visible commit as [commit, conflicted, some workspace's working
 * copy, this workspace's], from one `jj log` naming no revset function.
 */
static int scan(jj_vcs *j, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc;
	if (!(*out = json_array()))
		return tt_error_oom(err);
	rc = jj_log(j, "::",
		    "self.commit_id() ++ \"\\x1f\" ++ self.conflict() ++ \"\\x1f\" ++ self.current_working_copy()"
		    " ++ \"\\x1f\" ++ self.working_copies() ++ \"\\x1e\"",
		    true, &b, NULL, err);
	for (char *p = b.ptr, *end = b.ptr + b.len; rc == 0 && p && p < end;) {
		char *rs = memchr(p, '\x1e', (size_t)(end - p));
		if (rs)
			*rs = '\0';
		while (*p == '\n')
			p++;
		char *f[4] = { p, NULL, NULL, NULL };
		for (int k = 1; k < 4 && f[k - 1]; k++) {
			char *us = strchr(f[k - 1], '\x1f');
			if (us) {
				*us = '\0';
				f[k] = us + 1;
			}
		}
		if (f[3] && *f[0]) {
			bool here = strcmp(f[2], "true") == 0;
			bool copies = false;
			for (const char *c = f[3]; *c; c++)
				copies |= !isspace((unsigned char)*c);
			if (json_array_append_new(*out, json_pack("[s,b,b,b]", f[0], strcmp(f[1], "true") == 0,
								  here || copies, here)) != 0)
				rc = tt_error_oom(err);
		}
		p = rs ? rs + 1 : NULL;
	}
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	tt_buf_release(&b);
	return rc;
}

static int jj_history_digest(tt_vcs *v, char out[17], tt_error *err)
{
	json_t *rows = NULL, *row;
	const char **ids = NULL;
	size_t n = 0, i;
	int rc;
	out[0] = '\0';
	/* Not the working copies: jj re-snapshots them on any command, so a
	 * digest over them would stale a saved plan after a `jj log`. */
	if ((rc = scan(J(v), &rows, err)) < 0)
		return rc;
	if (!(ids = tt_calloc(json_array_size(rows) + 1, sizeof *ids))) {
		rc = tt_error_oom(err);
		goto done;
	}
	json_array_foreach(rows, i, row)
		if (!json_is_true(json_array_get(row, 2)))
			ids[n++] = json_string_value(json_array_get(row, 0));
	rc = tt_vcs_digest_revs(out, ids, n, err);
done:
	free(ids);
	json_decref(rows);
	return rc;
}

/* Where jj keeps a conflicted commit's inputs in its git tree. */
static const char *const conflict_trees[] = { ".jjconflict-side-", ".jjconflict-base-" };

/* fn for reldir as each input of a conflicted commit holds it. */
static int conflict_inputs(tt_git_reader *r, const char *rev, const char *reldir, tt_vcs_history_fn fn,
			   void *ctx, tt_error *err)
{
	char type[16], oid[65];
	bool found = false;
	char *spec = tt_asprintf("%s:%s0", rev, conflict_trees[0]);
	int rc;
	if (!spec)
		return tt_error_oom(err);
	rc = tt_git_reader_fetch(r, spec, &found, type, oid, NULL, err);
	free(spec);
	if (rc < 0 || !found)
		return rc;
	const char *sub = reldir ? reldir : "";
	while (*sub == '/')
		sub++;
	for (int t = 0; t < 2; t++) {
		for (int k = 0; k < 64; k++) {
			char *name = tt_asprintf("%s%d", conflict_trees[t], k);
			char *dir = name ? (*sub && strcmp(sub, ".") != 0 ? tt_asprintf("%s/%s", name, sub)
									  : tt_strdup(name))
					 : NULL;
			json_t *raw = NULL, *files = NULL;
			if (!dir) {
				free(name);
				return tt_error_oom(err);
			}
			spec = tt_asprintf("%s:%s", rev, name);
			rc = spec ? tt_git_reader_fetch(r, spec, &found, type, oid, NULL, err) : tt_error_oom(err);
			free(spec);
			if (rc == 0 && found)
				rc = tt_git_reader_files_at(r, rev, dir, &raw, err);
			if (rc == 0 && found && !(files = json_object()))
				rc = tt_error_oom(err);
			if (rc == 0 && found) {
				size_t pl = strlen(name) + 1;
				const char *key;
				json_t *text;
				json_object_foreach(raw, key, text)
					if (strlen(key) > pl && json_object_set(files, key + pl, text) != 0)
						rc = tt_error_oom(err);
				if (rc == 0)
					rc = fn(ctx, rev, files, err);
			}
			json_decref(raw);
			json_decref(files);
			free(name);
			free(dir);
			if (rc != 0)
				return rc;
			if (!found)
				break;
		}
	}
	return 0;
}

static int jj_iter_history_files(tt_vcs *v, const char *reldir, tt_vcs_history_fn fn, void *ctx,
				 tt_error *err)
{
	json_t *revs = NULL, *files = NULL;
	tt_git_reader *r = NULL;
	int rc;
	if (reldir && strpbrk(reldir, "\n\r"))
		return tt_error_set(err, TT_EVCS, "cannot read a directory holding a line break: %s", reldir);
	if ((rc = jj_history_revs(v, &revs, err)) < 0)
		return rc;
	if (json_array_size(revs) && (rc = open_reader(J(v), &r, err)) < 0)
		goto done;
	for (size_t i = 0; i < json_array_size(revs); i++) {
		const char *rev = json_string_value(json_array_get(revs, i));
		/* A conflicted commit: once per side and base, then as jj shows it. */
		if ((rc = conflict_inputs(r, rev, reldir, fn, ctx, err)) != 0)
			goto done;
		/* jj's virtual root commit has no git object: it reads as empty. */
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

/* {commit id: change id} for every visible commit. */
static int change_ids(jj_vcs *j, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	json_t *words = json_array();
	int rc;
	*out = json_object();
	if (!*out || !words) {
		json_decref(words);
		return tt_error_oom(err);
	}
	if ((rc = jj_log(j, "::", "self.commit_id() ++ \" \" ++ self.change_id() ++ \"\\n\"", true, &b, NULL,
			 err)) == 0 &&
	    (rc = words_into(words, &b, err)) == 0)
		for (size_t i = 0; i + 1 < json_array_size(words); i += 2)
			json_object_set(*out, json_string_value(json_array_get(words, i)), json_array_get(words, i + 1));
	json_decref(words);
	tt_buf_release(&b);
	return rc;
}

static int jj_commit_info(tt_vcs *v, const char *const *revs, size_t n, json_t **out, tt_error *err)
{
	json_t *changes = NULL, *info;
	size_t i;
	int rc;
	*out = NULL;
	if (!J(v)->git_exe)
		return open_reader(J(v), NULL, err);
	if ((rc = change_ids(J(v), &changes, err)) < 0)
		return rc;
	if ((rc = tt_git_commit_info(J(v)->git_exe, v->root, J(v)->git_dir, revs, n, out, err)) == 0)
		json_array_foreach(*out, i, info) {
			json_t *c = json_object_get(changes, json_string_value(json_object_get(info, "commit_id")));
			json_object_set(info, "change_id", c ? c : json_null());
		}
	json_decref(changes);
	return rc;
}

/*
 * [name, remote ("" local), conflicted, [targets]] for every bookmark or
 * tag `jj <kind> list` shows.
 */
static int list_refs(jj_vcs *j, const char *kind, bool all_remotes, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int status = 0, rc;
	if (!(*out = json_array()))
		return tt_error_oom(err);
	const char *args[] = { kind, "list", "--ignore-working-copy", "-T",
			       "self.name() ++ \"\\x1f\" ++ self.remote() ++ \"\\x1f\" ++ self.conflict() ++ \"\\x1f\" ++ "
			       "self.added_targets().map(|t| t.commit_id()).join(\" \") ++ \"\\x1e\"",
			       all_remotes ? "--all-remotes" : NULL, NULL };
	rc = jj_try(j, args, &b, &status, err);
	for (char *p = b.ptr, *end = b.ptr + b.len; rc == 0 && status == 0 && p && p < end;) {
		char *rs = memchr(p, '\x1e', (size_t)(end - p));
		if (rs)
			*rs = '\0';
		while (*p == '\n')
			p++;
		char *f[4] = { p, NULL, NULL, NULL };
		for (int k = 1; k < 4 && f[k - 1]; k++) {
			char *us = strchr(f[k - 1], '\x1f');
			if (us) {
				*us = '\0';
				f[k] = us + 1;
			}
		}
		if (f[3] && *f[0]) {
			json_t *targets = json_array();
			tt_buf t = TT_BUF_INIT;
			tt_buf_puts(&t, f[3]);
			if (!targets || words_into(targets, &t, err) < 0 ||
			    json_array_append_new(*out, json_pack("[s,s,b,o]", f[0], f[1], strcmp(f[2], "true") == 0,
								  targets)) != 0)
				rc = tt_error_oom(err);
			tt_buf_release(&t);
		}
		p = rs ? rs + 1 : NULL;
	}
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	tt_buf_release(&b);
	return rc;
}

static int jj_bookmarks(tt_vcs *v, json_t **out, tt_error *err)
{
	json_t *refs = NULL, *r;
	size_t i;
	int rc;
	*out = NULL;
	if ((rc = list_refs(J(v), "bookmark", false, &refs, err)) < 0)
		return rc;
	if (!(*out = json_object())) {
		json_decref(refs);
		return tt_error_oom(err);
	}
	json_array_foreach(refs, i, r) {
		json_t *targets = json_array_get(r, 3);
		if (!*json_string_value(json_array_get(r, 1)) && !json_is_true(json_array_get(r, 2)) &&
		    json_array_size(targets) == 1)
			json_object_set(*out, json_string_value(json_array_get(r, 0)), json_array_get(targets, 0));
	}
	json_decref(refs);
	return 0;
}

static int jj_refs(tt_vcs *v, json_t **out, tt_error *err)
{
	json_t *marks = NULL, *tags = NULL, *t;
	char *head = NULL;
	const char *name;
	json_t *c;
	size_t i;
	int rc;
	*out = NULL;
	if ((rc = jj_bookmarks(v, &marks, err)) < 0)
		return rc;
	if (!(*out = json_array())) {
		rc = tt_error_oom(err);
		goto done;
	}
	json_object_foreach(marks, name, c)
		json_array_append_new(*out, json_pack("{s:s, s:s, s:O}", "name", name, "kind", "bookmark",
						      "commit_id", c));
	if (J(v)->git_exe && tt_git_refs(J(v)->git_exe, v->root, J(v)->git_dir, &tags, err) == 0)
		json_array_foreach(tags, i, t)
			if (strcmp(json_string_value(json_object_get(t, "kind")), "tag") == 0)
				json_array_append(*out, t);
	if ((rc = tt_vcs_current_rev(v, &head, err)) < 0)
		goto done;
	json_array_append_new(*out, json_pack("{s:s, s:s, s:s}", "name", "@", "kind", "head", "commit_id", head));
done:
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	free(head);
	json_decref(marks);
	json_decref(tags);
	return rc;
}

static int jj_remotes(tt_vcs *v, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int status = 0, rc;
	if (!(*out = json_array()))
		return tt_error_oom(err);
	rc = jj_try(J(v), (const char *const[]){ "git", "remote", "list", "--ignore-working-copy", NULL }, &b,
		    &status, err);
	for (const char *p = b.ptr, *end = b.ptr + b.len; rc == 0 && status == 0 && p && p < end;) {
		const char *le = memchr(p, '\n', (size_t)(end - p));
		if (!le)
			le = end;
		size_t n = strcspn(p, " \t\n");
		if (n && p + n <= le && json_array_append_new(*out, json_stringn(p, n)) != 0)
			rc = tt_error_oom(err);
		p = le + 1;
	}
	tt_buf_release(&b);
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

static int jj_remote_unfetched(tt_vcs *v, const char *name, json_t **out, tt_error *err)
{
	if (J(v)->git)
		return J(v)->git->ops->remote_unfetched(J(v)->git, name, out, err);
	*out = NULL;
	return tt_error_set(err, TT_EVCS, "cannot list remote %s: the jj repository at %s has no colocated "
			    ".git to list it through", name ? name : "", v->root);
}

static int jj_published_revs(tt_vcs *v, json_t **out, tt_error *err)
{
	if (J(v)->git)
		return J(v)->git->ops->published_revs(J(v)->git, out, err);
	return (*out = json_array()) ? 0 : tt_error_oom(err);
}

/* Commits rewritten away that a clone may still hold: the colocated git's
 * reflogs.  Without a colocated .git they live only in jj's operation log,
 * which gc cannot list: say so, and gc keeps what they might name. */
static int jj_held_revs(tt_vcs *v, json_t **out, tt_error *err)
{
	if (J(v)->git && J(v)->git->ops->held_revs)
		return J(v)->git->ops->held_revs(J(v)->git, out, err);
	*out = NULL;
	return tt_error_set(err, TT_EVCS, "jj keeps rewritten commits in its operation log, which gc cannot list "
			    "without a colocated .git");
}

static int jj_alive_commits(tt_vcs *v, const char *const *commits, size_t n, bool *out, tt_error *err)
{
	tt_buf vis = TT_BUF_INIT, asked = TT_BUF_INIT, set = TT_BUF_INIT;
	json_t *visible = NULL, *pairs = NULL, *seen = NULL;
	int status = 0, rc = 0;
	size_t i;
	json_t *x;
	for (i = 0; i < n; i++)
		out[i] = false;
	if (!n)
		return 0;
	/* Every visible change id, and the change id of each asked commit
	 * (hidden commits still resolve when named in full): a rewrite is no
	 * loss. */
	if (!(visible = json_array()) || !(pairs = json_array()) || !(seen = json_object())) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = jj_log(J(v), "::", "self.change_id() ++ \"\\n\"", true, &vis, &status, err)) < 0 || status != 0)
		goto done;
	if ((rc = words_into(visible, &vis, err)) < 0)
		goto done;
	json_array_foreach(visible, i, x)
		json_object_set(seen, json_string_value(x), json_true());
	for (i = 0; i < n; i++) {
		if (!commits[i] || !is_commit_id(commits[i]))
			continue;
		tt_buf_printf(&set, "%s%s", set.len ? " | " : "", commits[i]);
	}
	if (!set.len)
		goto done;
	if ((rc = tt_buf_check(&set, err, "revset")) < 0)
		goto done;
	if ((rc = jj_log(J(v), set.ptr, "self.commit_id() ++ \" \" ++ self.change_id() ++ \"\\n\"", true, &asked,
			 &status, err)) < 0)
		goto done;
	if (status != 0) {
		/* One of them does not resolve at all: ask one by one. */
		for (i = 0; i < n; i++) {
			tt_buf one = TT_BUF_INIT;
			if (commits[i] && is_commit_id(commits[i]) &&
			    (rc = jj_log(J(v), commits[i], "self.change_id()", true, &one, &status, err)) == 0 &&
			    status == 0) {
				chomp(&one);
				out[i] = one.len && json_object_get(seen, one.ptr);
			}
			tt_buf_release(&one);
			if (rc < 0)
				goto done;
		}
		goto done;
	}
	if ((rc = words_into(pairs, &asked, err)) < 0)
		goto done;
	for (size_t k = 0; k + 1 < json_array_size(pairs); k += 2) {
		const char *c = json_string_value(json_array_get(pairs, k));
		bool alive = json_object_get(seen, json_string_value(json_array_get(pairs, k + 1))) != NULL;
		for (i = 0; i < n; i++)
			if (commits[i] && strcmp(commits[i], c) == 0)
				out[i] = alive;
	}
done:
	json_decref(visible);
	json_decref(pairs);
	json_decref(seen);
	tt_buf_release(&vis);
	tt_buf_release(&asked);
	tt_buf_release(&set);
	return rc;
}

/* ---- the working copy ------------------------------------------------- */

static int workspace_names(jj_vcs *j, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int status = 0, rc;
	if (!(*out = json_array()))
		return tt_error_oom(err);
	rc = jj_try(j, (const char *const[]){ "workspace", "list", "--ignore-working-copy", "-T",
					      "self.name() ++ \"\\n\"", NULL },
		    &b, &status, err);
	if (rc == 0 && status == 0)
		rc = words_into(*out, &b, err);
	tt_buf_release(&b);
	return rc;
}

static int workspace_root(jj_vcs *j, const char *name, char **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int status = 0, rc;
	*out = NULL;
	rc = jj_try(j, (const char *const[]){ "workspace", "root", "--ignore-working-copy", "--name", name, NULL },
		    &b, &status, err);
	if (rc == 0 && status == 0) {
		chomp(&b);
		if (b.len && !(*out = tt_buf_detach(&b)))
			rc = tt_error_oom(err);
	}
	tt_buf_release(&b);
	return rc;
}

static int jj_workspace_roots(tt_vcs *v, json_t **out, tt_error *err)
{
	json_t *names = NULL, *n;
	size_t i;
	int rc;
	*out = NULL;
	if ((rc = workspace_names(J(v), &names, err)) < 0)
		goto done;
	if (!(*out = json_array())) {
		rc = tt_error_oom(err);
		goto done;
	}
	json_array_foreach(names, i, n) {
		char *root = NULL;
		if ((rc = workspace_root(J(v), json_string_value(n), &root, err)) < 0)
			goto done;
		if (root)
			json_array_append_new(*out, json_string(root));
		free(root);
	}
	if (!json_array_size(*out))
		json_array_append_new(*out, json_string(v->root));
done:
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	json_decref(names);
	return rc;
}

static int jj_forget_workspace(tt_vcs *v, const char *root, char **out, tt_error *err)
{
	json_t *names = NULL, *n;
	char *target = tt_realpath(root);
	size_t i;
	int rc;
	*out = NULL;
	if ((rc = workspace_names(J(v), &names, err)) < 0)
		goto done;
	json_array_foreach(names, i, n) {
		char *ws = NULL, *real = NULL;
		const char *name = json_string_value(n);
		if ((rc = workspace_root(J(v), name, &ws, err)) < 0)
			goto done;
		real = ws ? tt_realpath(ws) : NULL;
		bool same = real && target && strcmp(real, target) == 0;
		free(ws);
		free(real);
		if (!same)
			continue;
		if ((rc = jj(J(v), (const char *const[]){ "workspace", "forget", name, NULL }, NULL, err)) == 0 &&
		    !(*out = tt_asprintf("jj workspace '%s' forgotten (its directory is left in place)", name)))
			rc = tt_error_oom(err);
		goto done;
	}
done:
	free(target);
	json_decref(names);
	return rc;
}

static int jj_dirty(tt_vcs *v, const char *const *relpaths, size_t n, bool *out, tt_error *err)
{
	argv_list a = { 0 };
	tt_buf b = TT_BUF_INIT;
	int rc;
	*out = false;
	/* A new manifest is untracked until tracked, and diff shows no
	 * untracked file. */
	if ((rc = track(J(v), relpaths, n, err)) < 0)
		return rc;
	av_add(&a, "diff");
	av_add(&a, "--summary");
	av_add(&a, "-r");
	av_add(&a, "@");
	av_paths(&a, "root:", relpaths, n);
	if ((rc = jj_av(J(v), &a, &b, err)) == 0) {
		chomp(&b);
		*out = b.len > 0;
	}
	av_release(&a);
	tt_buf_release(&b);
	return rc;
}

/* Which relpaths the working-copy commit of the workspace at cwd (NULL:
 * this one) holds, as jj last snapshotted it. */
static int tracked_in(tt_vcs *v, const char *cwd, const char *const *relpaths, size_t n, bool *out, tt_error *err)
{
	argv_list a = { 0 };
	tt_buf b = TT_BUF_INIT;
	int rc;
	for (size_t i = 0; i < n; i++)
		out[i] = false;
	if (!n)
		return 0;
	/* root-file: matches exactly that file; a path absent from @ is a
	 * warning on stderr, not an error. */
	av_add(&a, "file");
	av_add(&a, "list");
	av_add(&a, "--ignore-working-copy");
	av_add(&a, "-r");
	av_add(&a, "@");
	av_add(&a, "--");
	av_paths(&a, "root-file:", relpaths, n);
	rc = a.oom || !a.v ? tt_error_oom(err) : jj_run_in(J(v), cwd, a.v, &b, false, NULL, err);
	for (const char *p = b.ptr, *end = b.ptr + b.len; rc == 0 && p && p < end;) {
		const char *le = memchr(p, '\n', (size_t)(end - p));
		if (!le)
			le = end;
		for (size_t i = 0; i < n; i++)
			if (strlen(relpaths[i]) == (size_t)(le - p) && memcmp(relpaths[i], p, (size_t)(le - p)) == 0)
				out[i] = true;
		p = le + 1;
	}
	av_release(&a);
	tt_buf_release(&b);
	return rc;
}

/* This workspace (root NULL) or another: its own working-copy commit (@ there). */
static int jj_tracked(tt_vcs *v, const char *root, const char *const *relpaths, size_t n, bool *out,
		      tt_error *err)
{
	return tracked_in(v, root, relpaths, n, out, err);
}

static int jj_bookmark_set(tt_vcs *v, const char *name, const char *rev, tt_error *err)
{
	if (bad_rev(name))
		return refuse_name(name, err);
	if (bad_rev(rev))
		return refuse_rev(rev, err);
	return jj(J(v), (const char *const[]){ "bookmark", "set", name, "-r", rev, "--allow-backwards", NULL }, NULL,
		  err);
}

static int jj_bookmark_delete(tt_vcs *v, const char *name, tt_error *err)
{
	if (bad_rev(name))
		return refuse_name(name, err);
	return jj(J(v), (const char *const[]){ "bookmark", "delete", "--", name, NULL }, NULL, err);
}

static int jj_commit(tt_vcs *v, const char *const *relpaths, size_t n, const char *message, const char *advance,
		     char **out, tt_error *err)
{
	argv_list a = { 0 };
	json_t *marks = NULL;
	int rc;
	*out = NULL;
	if (!n)
		return tt_error_set(err, TT_EUSAGE, "nothing to commit: no paths given");
	if (advance && bad_rev(advance))
		return refuse_name(advance, err);
	if ((rc = track(J(v), relpaths, n, err)) < 0)
		return rc;
	/* `jj commit` finalizes @ (scoped to the paths: the user's other
	 * edits stay in the new @); with advance, jj's advance-bookmarks
	 * setting moves that bookmark onto it in the same operation, so one
	 * `jj undo` takes both back. */
	av_add(&a, "commit");
	av_add(&a, "-m");
	av_add(&a, message ? message : "");
	if (advance) {
		char *q = quoted(advance);
		av_add(&a, "--config");
		av_own(&a, q ? tt_asprintf("experimental-advance-branches.enabled-branches=[%s]", q) : NULL);
		free(q);
	}
	av_add(&a, "--");
	av_paths(&a, "root:", relpaths, n);
	if ((rc = jj_av(J(v), &a, NULL, err)) < 0)
		goto done;
	if ((rc = jj_resolve(v, "@-", out, err)) < 0)
		goto done;
	if (advance) {
		if ((rc = jj_bookmarks(v, &marks, err)) < 0)
			goto done;
		const char *at = json_string_value(json_object_get(marks, advance));
		if (!at || strcmp(at, *out) != 0)
			rc = jj_bookmark_set(v, advance, *out, err);
	}
done:
	json_decref(marks);
	av_release(&a);
	return rc;
}

static int jj_position(tt_vcs *v, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc;
	*out = NULL;
	rc = jj_log(J(v), "@",
		    "self.change_id() ++ \"\\n\" ++ self.commit_id() ++ \"\\n\" ++ self.empty() ++ \"\\n\" ++ "
		    "self.parents().map(|c| c.commit_id()).join(\",\") ++ \"\\n\"",
		    false, &b, NULL, err);
	if (rc == 0 && (rc = tt_buf_puts(&b, "")) < 0)
		rc = tt_error_oom(err);
	if (rc == 0) {
		char *f[4] = { b.ptr, NULL, NULL, NULL };
		for (int k = 1; k < 4; k++) {
			char *nl = f[k - 1] ? strchr(f[k - 1], '\n') : NULL;
			if (nl) {
				*nl = '\0';
				f[k] = nl + 1;
			}
		}
		if (f[3])
			f[3][strcspn(f[3], "\n")] = '\0';
		char *parent = f[3] && *f[3] ? tt_strndup(f[3], strcspn(f[3], ",")) : NULL;
		*out = json_pack("{s:s, s:s, s:s, s:o, s:b}", "kind", "jj", "id", f[0], "commit", f[1] ? f[1] : "",
				 "parent", parent ? json_string(parent) : json_null(), "empty",
				 f[2] && strcmp(f[2], "true") == 0);
		free(parent);
		if (!*out)
			rc = tt_error_oom(err);
	}
	tt_buf_release(&b);
	return rc;
}

static int jj_goto_position(tt_vcs *v, const json_t *position, tt_error *err)
{
	const char *kind = json_string_value(json_object_get(position, "kind"));
	const char *id = json_string_value(json_object_get(position, "id"));
	const char *parent = json_string_value(json_object_get(position, "parent"));
	if (!kind || strcmp(kind, "jj") != 0)
		return tt_error_set(err, TT_EVCS, "position was not recorded by jj");
	if (json_is_true(json_object_get(position, "empty")) && parent) {
		if (bad_rev(parent))
			return refuse_rev(parent, err);
		return jj(J(v), (const char *const[]){ "new", parent, NULL }, NULL, err);
	}
	if (bad_rev(id))
		return refuse_rev(id, err);
	return jj(J(v), (const char *const[]){ "edit", id, NULL }, NULL, err);
}

static int jj_uncommit(tt_vcs *v, const char *commit, bool *out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc;
	*out = false;
	if (!commit || bad_rev(commit))
		return 0;
	if ((rc = jj_log(J(v), "@-", "self.commit_id() ++ \"\\n\"", false, &b, NULL, err)) < 0)
		goto done;
	chomp(&b);
	if (!b.len || strcmp(b.ptr, commit) != 0)
		goto done;
	/* jj rebases every other child of a commit it squashes away: a
	 * bookmark's line on top of it would be rewritten onto its parent.
	 * Operator forms only, so a user's revset aliases change nothing. */
	char *revset = tt_asprintf("(%s:: ~ (%s | @))", commit, commit);
	tt_buf_reset(&b);
	rc = revset ? jj_log(J(v), revset, "self.commit_id() ++ \"\\n\"", false, &b, NULL, err) : tt_error_oom(err);
	free(revset);
	if (rc < 0)
		goto done;
	chomp(&b);
	if (b.len) {
		size_t n = 1, shown = 0;
		tt_buf ids = TT_BUF_INIT;
		for (const char *p = b.ptr; (p = strchr(p, '\n')); p++)
			n++;
		for (const char *p = b.ptr; *p && shown < 3; shown++) {
			size_t l = strcspn(p, "\n");
			tt_buf_printf(&ids, "%s%.*s", shown ? ", " : "", (int)(l < 12 ? l : 12), p);
			p += l + (p[l] == '\n');
		}
		rc = tt_error_set(err, TT_ECONFLICT, "commit %.12s has %zu other commit(s) built on it (%s%s); "
				  "squashing it into the working copy would rewrite them -- `jj backout -r %.12s` "
				  "reverts it and leaves them in place", commit, n, ids.ptr, n > 3 ? ", ..." : "", commit);
		tt_buf_release(&ids);
		goto done;
	}
	/* The commit's changes move into @ (which keeps its own empty
	 * description); jj abandons the emptied source. */
	rc = jj(J(v), (const char *const[]){ "squash", "--from", commit, "--into", "@", "-u", NULL }, NULL, err);
	*out = rc == 0;
done:
	tt_buf_release(&b);
	return rc;
}

static int jj_new(tt_vcs *v, const char *rev, tt_error *err)
{
	if (rev && bad_rev(rev))
		return refuse_rev(rev, err);
	return jj(J(v), (const char *const[]){ "new", rev ? rev : "@", NULL }, NULL, err);
}

/* The local bookmarks at @ and at its parents, and whether @ is empty. */
static int bookmarks_here(jj_vcs *j, json_t **at, json_t **parents, bool *empty, tt_error *err)
{
	tt_buf b = TT_BUF_INIT, one = TT_BUF_INIT;
	int status = 0, rc;
	*at = json_array();
	*parents = json_array();
	*empty = false;
	if (!*at || !*parents)
		return tt_error_oom(err);
	rc = jj_log(j, "@",
		    "self.local_bookmarks().map(|b| b.name()).join(\" \") ++ \"\\x1f\" ++ self.empty() ++ \"\\x1f\" ++ "
		    "self.parents().map(|p| p.local_bookmarks().map(|b| b.name()).join(\" \")).join(\" \")",
		    false, &b, &status, err);
	if (rc == 0 && status == 0 && b.ptr) {
		char *us1 = strchr(b.ptr, '\x1f');
		char *us2 = us1 ? strchr(us1 + 1, '\x1f') : NULL;
		if (us1 && us2) {
			*us1 = *us2 = '\0';
			*empty = strcmp(us1 + 1, "true") == 0;
			tt_buf_puts(&one, b.ptr);
			if ((rc = words_into(*at, &one, err)) == 0) {
				tt_buf_reset(&one);
				tt_buf_puts(&one, us2 + 1);
				rc = words_into(*parents, &one, err);
			}
		}
	}
	tt_buf_release(&b);
	tt_buf_release(&one);
	return rc;
}

static bool list_has(const json_t *arr, const char *s)
{
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x)
		if (s && strcmp(json_string_value(x), s) == 0)
			return true;
	return false;
}

static int jj_current_bookmark(tt_vcs *v, char **out, tt_error *err)
{
	json_t *at = NULL, *parents = NULL, *here;
	bool empty;
	int rc;
	*out = NULL;
	/* The bookmarks at @, else (@ empty, as right after `jj new main` or a
	 * commit) at its parent; with edits in @ it still sits on its parent's
	 * bookmark, where the commit lands.  Several share a commit right
	 * after a new bookmark: the workspace's wins, else the first by name. */
	if ((rc = bookmarks_here(J(v), &at, &parents, &empty, err)) < 0)
		goto done;
	here = json_array_size(at) ? at : parents;
	const char *mine = v->ws_bookmark ? *v->ws_bookmark : NULL;
	const char *pick = NULL;
	size_t i;
	json_t *x;
	if (list_has(at, mine) || list_has(parents, mine))
		pick = mine;
	else
		json_array_foreach(here, i, x)
			if (!pick || strcmp(json_string_value(x), pick) < 0)
				pick = json_string_value(x);
	if (pick && !(*out = tt_strdup(pick)))
		rc = tt_error_oom(err);
done:
	json_decref(at);
	json_decref(parents);
	return rc;
}

/*
 * jj's own rule first: its bookmark-name parser runs while the command line
 * is read, so a create at none() (no revision: refused, nothing written)
 * answers with a usage error (exit 2) exactly when the name is not one jj
 * takes.  Then git's: jj exports every bookmark to its git repository.
 */
static int jj_check_bookmark_name(tt_vcs *v, const char *name, tt_error *err)
{
	int status = 0, rc;
	if (!bad_rev(name)) {
		rc = jj_try(J(v), (const char *const[]){ "bookmark", "create", "--ignore-working-copy", "-r", "none()",
							 "--", name, NULL },
			    NULL, &status, err);
		if (rc < 0)
			return rc;
	}
	if (bad_rev(name) || status == 2) {
		tt_error_set(err, TT_ECONFIG, "invalid bookmark name '%s': jj refuses it as a bookmark name",
			     name ? name : "");
		tt_error_hint(err, "choose another name (`jj help -k bookmarks` describes them)");
		return TT_ECONFIG;
	}
	return J(v)->git_exe ? tt_git_check_branch_name(J(v)->git_exe, v->root, name, err) : 0;
}

static int jj_new_bookmark(tt_vcs *v, const char *name, const char *rev, tt_error *err)
{
	json_t *pos = NULL;
	int rc;
	if (bad_rev(name))
		return refuse_name(name, err);
	/* From rev, or from where the working copy is: an empty @ is kept (a
	 * fresh one would leave an empty, bookmarked commit in history). */
	if (rev) {
		if ((rc = jj_new(v, rev, err)) < 0)
			return rc;
	} else {
		if ((rc = jj_position(v, &pos, err)) < 0)
			return rc;
		bool empty = json_is_true(json_object_get(pos, "empty"));
		json_decref(pos);
		if (!empty && (rc = jj_new(v, NULL, err)) < 0)
			return rc;
	}
	J(v)->parked++;
	rc = jj_bookmark_set(v, name, "@-", err);
	J(v)->parked--;
	return rc;
}

static int jj_park(tt_vcs *v, const char *name, tt_error *err)
{
	/* No bookmark here: the trunk is created at @ (as a fresh git
	 * repository is on main). */
	return jj_bookmark_set(v, name, "@", err);
}

/* ---- the rest of the lifecycle ----------------------------------------- */

static int jj_exclusive_commits(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err)
{
	json_t *marks = NULL, *tags = NULL, *remote = NULL, *rows = NULL, *keep = NULL, *x;
	tt_buf set = TT_BUF_INIT, b = TT_BUF_INIT;
	const char *name;
	size_t i, k;
	int rc;
	*out = NULL;
	if ((rc = jj_bookmarks(v, &marks, err)) < 0)
		return rc;
	const char *tip = json_string_value(json_object_get(marks, bookmark));
	if (!tip) {
		rc = tt_error_set(err, TT_EVCS, "no bookmark '%s'", bookmark ? bookmark : "");
		goto done;
	}
	/* Whatever else keeps a commit visible: other bookmarks, tags, remote
	 * bookmarks (not @git, jj's view of the colocated repository), other
	 * workspaces' working copies. */
	if (!(keep = json_object()) || (rc = list_refs(J(v), "tag", false, &tags, err)) < 0 ||
	    (rc = list_refs(J(v), "bookmark", true, &remote, err)) < 0 || (rc = scan(J(v), &rows, err)) < 0) {
		if (rc == 0)
			rc = tt_error_oom(err);
		goto done;
	}
	json_object_foreach(marks, name, x)
		if (strcmp(name, bookmark) != 0)
			json_object_set(keep, json_string_value(x), json_true());
	json_array_foreach(tags, i, x)
		for (k = 0; k < json_array_size(json_array_get(x, 3)); k++)
			json_object_set(keep, json_string_value(json_array_get(json_array_get(x, 3), k)),
					json_true());
	json_array_foreach(remote, i, x) {
		const char *r = json_string_value(json_array_get(x, 1));
		if (*r && strcmp(r, "git") != 0)
			for (k = 0; k < json_array_size(json_array_get(x, 3)); k++)
				json_object_set(keep, json_string_value(json_array_get(json_array_get(x, 3), k)),
						json_true());
	}
	json_array_foreach(rows, i, x)
		if (json_is_true(json_array_get(x, 2)) && !json_is_true(json_array_get(x, 3)))
			json_object_set(keep, json_string_value(json_array_get(x, 0)), json_true());
	tt_buf_printf(&set, "::%s", tip);
	if (json_object_size(keep)) {
		const char **ids = tt_calloc(json_object_size(keep), sizeof *ids);
		size_t n = 0;
		json_t *unused;
		if (!ids) {
			rc = tt_error_oom(err);
			goto done;
		}
		json_object_foreach(keep, name, unused)
			ids[n++] = name;
		qsort(ids, n, sizeof *ids, tt_cmp_cstr);
		tt_buf_puts(&set, " ~ ::(");
		for (i = 0; i < n; i++)
			tt_buf_printf(&set, "%s%s", i ? " | " : "", ids[i]);
		tt_buf_puts(&set, ")");
		free(ids);
	}
	if ((rc = tt_buf_check(&set, err, "revset")) < 0)
		goto done;
	const char *args[] = { "log", "--no-graph", "--reversed", "-r", set.ptr, "-T", "self.commit_id() ++ \"\\n\"",
			       NULL };
	if ((rc = jj(J(v), args, &b, err)) < 0)
		goto done;
	json_t *all = json_array();
	if (!all || (rc = words_into(all, &b, err)) < 0) {
		json_decref(all);
		if (rc == 0)
			rc = tt_error_oom(err);
		goto done;
	}
	if (!(*out = json_array())) {
		json_decref(all);
		rc = tt_error_oom(err);
		goto done;
	}
	/* jj's virtual root commit (all zeros) is no one's to drop. */
	json_array_foreach(all, i, x)
		if (strspn(json_string_value(x), "0") != strlen(json_string_value(x)))
			json_array_append(*out, x);
	json_decref(all);
done:
	json_decref(marks);
	json_decref(tags);
	json_decref(remote);
	json_decref(rows);
	json_decref(keep);
	tt_buf_release(&set);
	tt_buf_release(&b);
	return rc;
}

static int jj_remote_counterparts(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err)
{
	json_t *refs = NULL, *x;
	size_t i;
	int rc;
	*out = NULL;
	if ((rc = list_refs(J(v), "bookmark", true, &refs, err)) < 0)
		return rc;
	if (!(*out = json_array())) {
		json_decref(refs);
		return tt_error_oom(err);
	}
	json_array_foreach(refs, i, x) {
		const char *name = json_string_value(json_array_get(x, 0));
		const char *remote = json_string_value(json_array_get(x, 1));
		if (bookmark && strcmp(name, bookmark) == 0 && *remote && strcmp(remote, "git") != 0)
			json_array_append_new(*out, json_sprintf("%s@%s", name, remote));
	}
	json_decref(refs);
	/* sorted */
	size_t n = json_array_size(*out);
	for (size_t a = 1; a < n; a++)
		for (size_t c = a; c > 0 && strcmp(json_string_value(json_array_get(*out, c - 1)),
						   json_string_value(json_array_get(*out, c))) > 0; c--) {
			json_t *t = json_incref(json_array_get(*out, c));
			json_array_remove(*out, c);
			json_array_insert_new(*out, c - 1, t);
		}
	return 0;
}

static int jj_drop_bookmark(tt_vcs *v, const char *bookmark, const json_t *commits, tt_error *err)
{
	argv_list a = { 0 };
	json_t *marks = NULL, *c;
	size_t i;
	int rc = 0;
	if (json_array_size(commits)) {
		av_add(&a, "abandon");
		json_array_foreach(commits, i, c)
			av_add(&a, json_string_value(c));
		rc = jj_av(J(v), &a, NULL, err);
		av_release(&a);
		if (rc < 0)
			return rc;
	}
	/* jj takes the bookmark with its commits; else it goes here. */
	if ((rc = jj_bookmarks(v, &marks, err)) == 0 && json_object_get(marks, bookmark))
		rc = jj_bookmark_delete(v, bookmark, err);
	json_decref(marks);
	return rc;
}

/* Write files ({root-relative path: text}) into the working copy. */
static int write_files(jj_vcs *j, const json_t *files, tt_error *err)
{
	const char *path;
	json_t *text;
	int rc = 0;
	json_object_foreach((json_t *)files, path, text) {
		char *abs = tt_path_join(j->base.root, path);
		char *dir = abs ? tt_dirname(abs) : NULL;
		if (!dir) {
			free(abs);
			return tt_error_oom(err);
		}
		rc = tt_mkdirs(dir, 0755, err);
		if (rc == 0)
			rc = tt_write_file_atomic(abs, json_string_value(text), json_string_length(text), 0644, err);
		free(dir);
		free(abs);
		if (rc < 0)
			return rc;
	}
	return 0;
}

static int track_files(jj_vcs *j, const json_t *files, tt_error *err)
{
	const char **paths = tt_calloc(json_object_size(files) + 1, sizeof *paths);
	const char *path;
	json_t *text;
	size_t n = 0;
	int rc;
	if (!paths)
		return tt_error_oom(err);
	json_object_foreach((json_t *)files, path, text)
		paths[n++] = path;
	rc = track(j, paths, n, err);
	free(paths);
	return rc;
}

/*
 * The upgrade's history rewrite, as tether-vcs 0.1.0b7 does it under jj:
 * each change touching reldir whose files fn changes gets a child holding
 * the new texts, squashed into it (jj rebases the descendants and keeps
 * the change ids); the working-copy change is left for the caller to
 * edit in place.  *mapping: {old commit: new commit} of every rewritten
 * descendant.
 */
static int jj_rewrite_history(tt_vcs *v, const char *reldir, tt_vcs_rewrite_fn fn, void *ctx, bool ignore_immutable,
			      json_t **mapping, tt_error *err)
{
	jj_vcs *j = J(v);
	json_t *start = NULL, *touched = json_array(), *affected = json_array(), *map = json_object();
	tt_buf b = TT_BUF_INIT;
	char *set = tt_asprintf("files(\"%s\")", reldir), *after = set ? tt_asprintf("%s::", set) : NULL;
	const char *tmpl = "self.change_id() ++ \" \" ++ self.commit_id() ++ \"\\n\"";
	const char *flag = ignore_immutable ? "--ignore-immutable" : NULL;
	bool rewritten = false;
	int rc = 0;
	*mapping = NULL;
	if (!touched || !affected || !map || !after) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (strpbrk(reldir, "\"\\\n")) {
		rc = tt_error_set(err, TT_EVCS, "jj: cannot name the path %s in a revset", reldir);
		goto done;
	}
	if ((rc = jj_position(v, &start, err)) < 0 ||
	    (rc = jj(j, (const char *const[]){ "log", "--no-graph", "--reversed", "-r", set, "-T", tmpl, NULL }, &b,
		     err)) < 0 ||
	    (rc = words_into(touched, &b, err)) < 0 ||
	    (rc = jj(j, (const char *const[]){ "log", "--no-graph", "-r", after, "-T", tmpl, NULL }, &b, err)) < 0 ||
	    (rc = words_into(affected, &b, err)) < 0)
		goto done;
	const char *wc = json_string_value(json_object_get(start, "id"));
	j->parked++;
	for (size_t i = 0; rc == 0 && i + 1 < json_array_size(touched); i += 2) {
		const char *change = json_string_value(json_array_get(touched, i));
		const char *commit = json_string_value(json_array_get(touched, i + 1));
		json_t *files = NULL, *new_files = NULL;
		if (wc && strcmp(change, wc) == 0)
			continue;  /* the working copy: the caller edits it in place */
		if ((rc = tt_vcs_files_at(v, commit, reldir, &files, err)) == 0 &&
		    (rc = fn(ctx, commit, files, &new_files, err)) == 0 && !json_equal(files, new_files)) {
			if (bad_rev(change))
				rc = refuse_rev(change, err);
			else if ((rc = jj(j, (const char *const[]){ "new", flag ? flag : change, flag ? change : NULL, NULL },
					  NULL, err)) == 0 &&
				 (rc = write_files(j, new_files, err)) == 0 && (rc = track_files(j, new_files, err)) == 0)
				rc = jj(j, (const char *const[]){ "squash", "-u", flag, NULL }, NULL, err);
			rewritten = rc == 0;
		}
		json_decref(files);
		json_decref(new_files);
	}
	if (rc == 0 && rewritten) {
		for (size_t i = 0; i + 1 < json_array_size(affected); i += 2) {
			const char *change = json_string_value(json_array_get(affected, i));
			const char *commit = json_string_value(json_array_get(affected, i + 1));
			char *now = NULL;
			tt_error ig = TT_ERROR_INIT;
			if (wc && strcmp(change, wc) == 0)
				continue;
			if (jj_resolve(v, change, &now, &ig) == 0 && strcmp(now, commit) != 0)
				json_object_set_new(map, commit, json_string(now));
			free(now);
			tt_error_clear(&ig);
		}
		/* the recorded parent may have been rewritten: `jj new` on its old
		 * id would revive the hidden pre-rewrite history */
		const char *parent = json_string_value(json_object_get(start, "parent"));
		const json_t *moved = parent ? json_object_get(map, parent) : NULL;
		if (moved)
			json_object_set(start, "parent", (json_t *)moved);
	}
	if (rc == 0)
		rc = jj_goto_position(v, start, err);
	j->parked--;
done:
	if (rc == 0) {
		*mapping = map;
		map = NULL;
	}
	json_decref(map);
	json_decref(start);
	json_decref(touched);
	json_decref(affected);
	tt_buf_release(&b);
	free(set);
	free(after);
	return rc;
}

static int jj_abandon(tt_vcs *v, const char *const *revs, size_t n, const char *keep_dir, json_t **ids_out,
		      json_t **rewritten, tt_error *err)
{
	jj_vcs *j = J(v);
	json_t *ids = json_array(), *pairs = json_array(), *before = json_object(), *map = json_object();
	json_t *start = NULL, *now = NULL;
	tt_buf uni = TT_BUF_INIT, b = TT_BUF_INIT;
	argv_list a = { 0 };
	size_t i;
	int rc = 0;
	*ids_out = *rewritten = NULL;
	if (!ids || !pairs || !before || !map) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (i = 0; i < n; i++) {
		char *id = NULL;
		if ((rc = jj_resolve(v, revs[i], &id, err)) < 0)
			goto done;
		json_array_append_new(ids, json_string(id));
		tt_buf_printf(&uni, "%s%s", i ? " | " : "", id);
		free(id);
	}
	if ((rc = tt_buf_check(&uni, err, "revset")) < 0)
		goto done;
	{
		char *set = tt_asprintf("(%s):: ~ (%s)", uni.ptr, uni.ptr);
		const char *args[] = { "log", "--no-graph", "--reversed", "-r", set, "-T",
				       "self.change_id() ++ \" \" ++ self.commit_id() ++ \"\\n\"", NULL };
		rc = set ? jj(j, args, &b, err) : tt_error_oom(err);
		free(set);
		if (rc < 0 || (rc = words_into(pairs, &b, err)) < 0)
			goto done;
	}
	/* change, commit pairs: each descendant's keep_dir before */
	for (i = 0; i + 1 < json_array_size(pairs); i += 2) {
		json_t *files = NULL;
		if ((rc = tt_vcs_files_at(v, json_string_value(json_array_get(pairs, i + 1)), keep_dir, &files, err)) < 0)
			goto done;
		json_object_set_new(before, json_string_value(json_array_get(pairs, i)), files);
	}
	if ((rc = jj_position(v, &start, err)) < 0)
		goto done;
	const char *wc = json_string_value(json_object_get(start, "id"));
	bool wc_empty = json_is_true(json_object_get(start, "empty"));
	/* Where the working copy goes back to once the fixes below have moved
	 * it: itself, or (empty, so jj drops it when left) on top of its
	 * parent's change, wherever the abandon rebased that. */
	tt_buf_reset(&b);
	if ((rc = jj_log(j, "@-", "self.change_id() ++ \"\\n\"", false, &b, NULL, err)) < 0)
		goto done;
	chomp(&b);
	char *home = tt_strdup(b.ptr ? b.ptr : "");
	if (!home) {
		rc = tt_error_oom(err);
		goto done;
	}
	bool wc_fix = false;
	j->parked++;
	av_add(&a, "abandon");
	for (i = 0; i < json_array_size(ids); i++)
		av_add(&a, json_string_value(json_array_get(ids, i)));
	rc = jj_av(j, &a, NULL, err);
	/* Snapshot semantics for keep_dir: every descendant gets its files
	 * back.  The working copy is a descendant too, but an empty one only
	 * inherited its files: it follows its new parent. */
	bool moved = false;
	for (i = 0; rc == 0 && i + 1 < json_array_size(pairs); i += 2) {
		const char *change = json_string_value(json_array_get(pairs, i));
		json_t *files = json_object_get(before, change), *nowf = NULL;
		if (wc && strcmp(change, wc) == 0) {
			wc_fix = !wc_empty;  /* once the working copy is back on it */
			continue;
		}
		if ((rc = tt_vcs_files_at(v, change, keep_dir, &nowf, err)) < 0)
			break;
		bool same = json_equal(nowf, files);
		json_decref(nowf);
		if (same)
			continue;
		moved = true;
		if ((rc = jj_new(v, change, err)) < 0 || (rc = write_files(j, files, err)) < 0 ||
		    (rc = track_files(j, files, err)) < 0)
			break;
		rc = jj(j, (const char *const[]){ "squash", "-u", NULL }, NULL, err);
	}
	if (rc == 0 && moved) {
		/* jj new moved the working copy: back where it was. */
		if (!wc_empty && wc)
			rc = jj(j, (const char *const[]){ "edit", wc, NULL }, NULL, err);
		else if (*home)
			rc = jj(j, (const char *const[]){ "new", home, NULL }, NULL, err);
	}
	if (rc == 0 && wc_fix) {
		json_t *files = json_object_get(before, wc);
		if ((rc = write_files(j, files, err)) == 0)
			rc = track_files(j, files, err);
	}
	free(home);
	j->parked--;
	if (rc < 0)
		goto done;
	for (i = 0; i + 1 < json_array_size(pairs); i += 2) {
		char *id = NULL;
		tt_error none = TT_ERROR_INIT;
		const char *change = json_string_value(json_array_get(pairs, i));
		const char *old = json_string_value(json_array_get(pairs, i + 1));
		if (jj_resolve(v, change, &id, &none) == 0 && strcmp(id, old) != 0)
			json_object_set_new(map, old, json_string(id));
		tt_error_clear(&none);
		free(id);
	}
	*ids_out = ids;
	*rewritten = map;
	ids = map = NULL;
done:
	av_release(&a);
	json_decref(ids);
	json_decref(pairs);
	json_decref(before);
	json_decref(map);
	json_decref(start);
	json_decref(now);
	tt_buf_release(&uni);
	tt_buf_release(&b);
	return rc;
}

static void jj_free(tt_vcs *v)
{
	jj_vcs *j = J(v);
	if (j->layer)
		unlink(j->layer);
	free(j->layer);
	free(j->layer_env);
	free(j->auto_track);
	free(j->git_exe);
	free(j->git_dir);
	tt_vcs_free(j->git);
	free(v->root);
	free(v->shared_dir);
	free(v->exe);
	free(j);
}

static const tt_vcs_ops jj_ops = {
	.kind = "jj",
	.working_rev = "@",
	.current_bookmark = jj_current_bookmark,
	.check_bookmark_name = jj_check_bookmark_name,
	.new_bookmark = jj_new_bookmark,
	.park = jj_park,
	.tracked = jj_tracked,
	.resolve = jj_resolve,
	.is_ancestor = jj_is_ancestor,
	.read_file_at = jj_read_file_at,
	.files_at_many = jj_files_at_many,
	.history_revs = jj_history_revs,
	.history_digest = jj_history_digest,
	.iter_history_files = jj_iter_history_files,
	.commit_info = jj_commit_info,
	.refs = jj_refs,
	.remotes = jj_remotes,
	.remote_unfetched = jj_remote_unfetched,
	.published_revs = jj_published_revs,
	.held_revs = jj_held_revs,
	.alive_commits = jj_alive_commits,
	.workspace_roots = jj_workspace_roots,
	.dirty = jj_dirty,
	.commit = jj_commit,
	.check_commit = NULL,
	.position = jj_position,
	.goto_position = jj_goto_position,
	.uncommit = jj_uncommit,
	.new = jj_new,
	.bookmarks = jj_bookmarks,
	.bookmark_set = jj_bookmark_set,
	.bookmark_delete = jj_bookmark_delete,
	.exclusive_commits = jj_exclusive_commits,
	.remote_counterparts = jj_remote_counterparts,
	.forget_workspace = jj_forget_workspace,
	.abandon = jj_abandon,
	.rewrite_history = jj_rewrite_history,
	.drop_bookmark = jj_drop_bookmark,
	.free = jj_free,
};

int tt_jj_open(tt_vcs **out, const char *jj_root, const char *jj_exe, const char *git_exe, tt_vcs *git,
	       tt_error *err)
{
	jj_vcs *j = tt_calloc(1, sizeof *j);
	char *repo = NULL, *store = NULL, *dotgit = NULL;
	tt_buf link = TT_BUF_INIT;
	int rc = 0;
	*out = NULL;
	if (!j) {
		tt_vcs_free(git);
		return tt_error_oom(err);
	}
	j->base.ops = &jj_ops;
	j->git = git;
	if (!(j->base.root = tt_strdup(jj_root))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!jj_exe || !*jj_exe)
		jj_exe = getenv("TETHER_JJ");
	if (!jj_exe || !*jj_exe)
		jj_exe = "jj";
	if (!(j->base.exe = tt_proc_which(jj_exe))) {
		rc = tt_error_set(err, TT_EVCS, "executable not found: %s", jj_exe);
		tt_error_hint(err, "install jj 0.43 or newer, or name it with TETHER_JJ or .tether/secrets.toml "
				   "[vcs] jj_path (or set [vcs] prefer = \"git\" in tether.toml to work through a "
				   "colocated .git)");
		goto done;
	}
	if (git_exe && *git_exe)
		j->git_exe = tt_proc_which(git_exe);
	/* The repo dir every workspace shares: .jj/repo, or (a secondary
	 * workspace) the file there naming the primary's, relative to .jj/. */
	if (!(repo = tt_path_join(jj_root, ".jj/repo"))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (tt_is_file(repo)) {
		if ((rc = tt_read_file(repo, &link, 1 << 16, err)) < 0)
			goto done;
		chomp(&link);
		char *jjdir = tt_path_join(jj_root, ".jj");
		char *target = jjdir && link.ptr ? (link.ptr[0] == '/' ? tt_strdup(link.ptr) : tt_path_join(jjdir, link.ptr))
						 : NULL;
		j->base.shared_dir = target ? tt_realpath(target) : NULL;
		free(jjdir);
		free(target);
	} else {
		j->base.shared_dir = tt_realpath(repo);
	}
	if (!j->base.shared_dir) {
		rc = tt_error_set(err, TT_EVCS, "the jj repository at %s has no readable .jj/repo", jj_root);
		goto done;
	}
	/* The git store: the colocated .git, else the one in the repo dir. */
	if (!(dotgit = tt_path_join(jj_root, ".git")) || !(store = tt_path_join(j->base.shared_dir, "store/git"))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!tt_exists(dotgit)) {
		/* store/git_target names the git repository (relative to the
		 * store directory): a colocated one's .git, seen from a
		 * secondary workspace. */
		char *target_file = tt_path_join(j->base.shared_dir, "store/git_target");
		tt_buf_reset(&link); /* it held .jj/repo's link */
		if (target_file && tt_is_file(target_file) && tt_read_file(target_file, &link, 1 << 16, err) == 0) {
			chomp(&link);
			char *sdir = tt_path_join(j->base.shared_dir, "store");
			char *t = sdir && link.len ? (link.ptr[0] == '/' ? tt_strdup(link.ptr) : tt_path_join(sdir, link.ptr))
						   : NULL;
			j->git_dir = t ? tt_realpath(t) : NULL;
			free(t);
			free(sdir);
		}
		free(target_file);
		tt_buf_reset(&link);
		if (j->git_dir) {
			/* found through git_target */
		} else if (tt_is_dir(store)) {
			j->git_dir = store;
			store = NULL;
		} else {
			free(j->git_exe);
			j->git_exe = NULL;  /* not git-backed: no plumbing */
		}
	}
	if (!j->git_exe) {
		rc = tt_error_set(err, TT_EVCS, "the jj repository at %s is not readable through git: tether "
				  "needs git 2.38 or newer on PATH (or TETHER_GIT) and a git-backed jj repository",
				  jj_root);
		goto done;
	}
	if ((rc = check_version(j, err)) < 0)
		goto done;
	*out = &j->base;
	j = NULL;
done:
	if (j)
		jj_free(&j->base);
	free(repo);
	free(store);
	free(dotgit);
	tt_buf_release(&link);
	return rc;
}
