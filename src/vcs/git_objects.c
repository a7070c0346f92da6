/*
 * vcs/git_objects.c - reading objects through one `git cat-file --batch`
 * (see vcs.h): the reader, tree parsing, text decoding, the revs digest.
 */
#include "vcs/vcs.h"
#include "vcs/git_native.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/proc.h"

#define READER_OBJECT_CAP ((size_t)256 << 20)  /* one object read into memory */
#define READER_MAX_DEPTH 4096                  /* nested trees (git's own default limit) */

static const char *const reader_isolation[] = {
	"-c", "color.ui=never", "-c", "log.showSignature=false", "-c", "core.quotePath=false",
};
#define NREADER_ISO (sizeof reader_isolation / sizeof reader_isolation[0])

struct tt_git_reader {
	tt_proc *proc;      /* started at the first object read natively cannot answer */
	char *exe, *cwd, *git_dir;
	tt_gitnat *native;  /* borrowed; NULL: every object through git */
	json_t *trees;  /* tree oid -> {path under the tree: text} */
	json_t *blobs;  /* blob oid -> text */
	tt_buf line;
	int failed;     /* sticky: the stream may be out of step */
};

/* ---- text ------------------------------------------------------------- */

int tt_vcs_text(tt_buf *out, const void *data, size_t len)
{
	const unsigned char *s = data;
	size_t i = 0, run = 0;  /* run: start of the pending valid bytes */
	while (i < len) {
		unsigned c = s[i];
		size_t need;
		unsigned lo = 0x80, hi = 0xbf;
		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			need = 1;
		} else if (c >= 0xe0 && c <= 0xef) {
			need = 2;
			if (c == 0xe0)
				lo = 0xa0;
			else if (c == 0xed)
				hi = 0x9f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			need = 3;
			if (c == 0xf0)
				lo = 0x90;
			else if (c == 0xf4)
				hi = 0x8f;
		} else {
			need = 0;  /* never valid as a first byte */
		}
		/* the maximal subpart: the first byte and the continuations that fit */
		size_t j = i + 1, k = 0;
		while (k < need && j < len && s[j] >= (k ? 0x80u : lo) && s[j] <= (k ? 0xbfu : hi)) {
			j++;
			k++;
		}
		if (need && k == need) {
			i = j;
			continue;
		}
		tt_buf_put(out, s + run, i - run);
		tt_buf_put(out, "\xef\xbf\xbd", 3);
		i = run = j;
	}
	return tt_buf_put(out, s + run, len - run);
}

/* ---- the digest of a set of commit ids -------------------------------- */

int tt_vcs_digest_revs(char out[17], const char *const *ids, size_t n, tt_error *err)
{
	const char **sorted = tt_calloc(n ? n : 1, sizeof *sorted);
	tt_buf joined = TT_BUF_INIT;
	char hex[65];
	int rc = 0;
	if (!sorted)
		return tt_error_oom(err);
	if (n) {
		memcpy(sorted, ids, n * sizeof *ids);
		qsort(sorted, n, sizeof *sorted, tt_cmp_cstr);
	}
	for (size_t i = 0; i < n; i++) {
		if (i)
			tt_buf_putc(&joined, '\n');
		tt_buf_puts(&joined, sorted[i]);
	}
	if ((rc = tt_buf_check(&joined, err, "commit ids")) < 0)
		goto done;
	if (tt_sha256_hex(hex, joined.ptr, joined.len) != 0) {
		rc = tt_error_set(err, TT_ERROR, "sha256 failed");
		goto done;
	}
	memcpy(out, hex, 16);
	out[16] = '\0';
done:
	free(sorted);
	tt_buf_release(&joined);
	return rc;
}

/* ---- the reader ------------------------------------------------------- */

int tt_git_reader_open(tt_git_reader **out, const char *exe, const char *cwd, const char *git_dir,
		       tt_error *err)
{
	tt_git_reader *r = NULL;
	*out = NULL;
	if (!(r = tt_calloc(1, sizeof *r)))
		return tt_error_oom(err);
	tt_buf_init(&r->line, (size_t)1 << 20);
	r->trees = json_object();
	r->blobs = json_object();
	r->exe = tt_strdup(exe);
	r->cwd = cwd ? tt_strdup(cwd) : NULL;
	r->git_dir = git_dir ? tt_strdup(git_dir) : NULL;
	if (!r->trees || !r->blobs || !r->exe || (cwd && !r->cwd) || (git_dir && !r->git_dir)) {
		tt_git_reader_close(r);
		return tt_error_oom(err);
	}
	*out = r;
	return 0;
}

void tt_git_reader_use(tt_git_reader *r, tt_gitnat *native)
{
	r->native = native;
}

/* Start `git cat-file --batch`. */
static int reader_spawn(tt_git_reader *r, tt_error *err)
{
	const char *argv[NREADER_ISO + 6];
	const char *exe = r->exe, *cwd = r->cwd, *git_dir = r->git_dir;
	size_t a = 0;
	int rc;

	if ((rc = tt_git_version_once(exe, err)) < 0)
		return rc;
	argv[a++] = exe;
	for (size_t i = 0; i < NREADER_ISO; i++)
		argv[a++] = reader_isolation[i];
	if (git_dir) {
		argv[a++] = "--git-dir";
		argv[a++] = git_dir;
	}
	argv[a++] = "cat-file";
	argv[a++] = "--batch";
	argv[a] = NULL;
	tt_proc_opts opts = { .argv = argv, .cwd = cwd, .env_unset = tt_git_env_unset,
			      .max_out = READER_OBJECT_CAP + 4096, .max_err = 64 << 10 };
	rc = tt_proc_spawn(&r->proc, &opts, err);
	if (rc == TT_ENOTFOUND) {
		tt_error_set(err, TT_EVCS, "executable not found: %s", exe);
		rc = TT_EVCS;
	}
	if (rc < 0)
		r->failed = rc;
	return rc;
}

void tt_git_reader_close(tt_git_reader *r)
{
	if (!r)
		return;
	if (r->proc)
		tt_proc_finish(r->proc, NULL, NULL, NULL);
	free(r->exe);
	free(r->cwd);
	free(r->git_dir);
	json_decref(r->trees);
	json_decref(r->blobs);
	tt_buf_release(&r->line);
	free(r);
}

static bool is_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

static bool ends_with(const char *s, size_t n, const char *suffix)
{
	size_t l = strlen(suffix);
	return n >= l && memcmp(s + n - l, suffix, l) == 0;
}

static int reader_fail(tt_git_reader *r, int rc, tt_error *err)
{
	r->failed = rc;
	if (rc == TT_EIO)
		tt_error_set(err, TT_EVCS, "git cat-file --batch exited unexpectedly");
	return rc == TT_EIO ? TT_EVCS : rc;
}

int tt_git_reader_fetch(tt_git_reader *r, const char *spec, bool *found, char type[16],
			char oid[65], tt_buf *data, tt_error *err)
{
	tt_buf req = TT_BUF_INIT, skip = TT_BUF_INIT;
	int rc;

	*found = false;
	if (r->failed)
		return tt_error_set(err, TT_EVCS, "git cat-file --batch failed earlier");
	if (strchr(spec, '\n') || strchr(spec, '\r'))
		return tt_error_set(err, TT_EVCS, "cannot read an object named with a line break: %s", spec);
	if (r->native) {
		tt_buf scratch = TT_BUF_INIT;
		int got = tt_gitnat_lookup(r->native, spec, type, oid, data ? data : &scratch);
		tt_buf_release(&scratch);
		if (got >= 0) {
			*found = got == 1;
			return 0;
		}
	}
	if (!r->proc && (rc = reader_spawn(r, err)) < 0)
		return rc;
	tt_buf_puts(&req, spec);
	tt_buf_putc(&req, '\n');
	if ((rc = tt_buf_check(&req, err, "a cat-file request")) < 0)
		goto done;
	if ((rc = tt_proc_write(r->proc, req.ptr, req.len, err)) < 0) {
		rc = reader_fail(r, rc, err);
		goto done;
	}
	rc = tt_proc_read_line(r->proc, &r->line, err);
	if (rc == 1) {
		r->failed = TT_EVCS;
		rc = tt_error_set(err, TT_EVCS, "git cat-file --batch produced no output");
		goto done;
	}
	if (rc < 0) {
		rc = reader_fail(r, rc, err);
		goto done;
	}
	const char *h = r->line.ptr;
	size_t hl = r->line.len;
	if (ends_with(h, hl, " missing") || ends_with(h, hl, " ambiguous") ||
	    ends_with(h, hl, " dangling") || ends_with(h, hl, " notdir") || ends_with(h, hl, " loop"))
		goto done;  /* not found: no content follows */
	/* "<oid> SP <type> SP <size>" */
	const char *sp1 = memchr(h, ' ', hl);
	const char *sp2 = sp1 ? memchr(sp1 + 1, ' ', hl - (size_t)(sp1 + 1 - h)) : NULL;
	size_t ol = sp1 ? (size_t)(sp1 - h) : 0, tl = sp2 ? (size_t)(sp2 - sp1 - 1) : 0;
	char *end = NULL;
	unsigned long long size = sp2 ? strtoull(sp2 + 1, &end, 10) : 0;
	if (!sp2 || (ol != 40 && ol != 64) || !is_hex(h, ol) || tl == 0 || tl > 15 ||
	    !end || end == sp2 + 1 || *end != '\0' || sp2[1] == '-') {
		r->failed = TT_EVCS;
		rc = tt_error_set(err, TT_EVCS, "unexpected reply from git cat-file --batch: %.200s", h);
		goto done;
	}
	if (size > READER_OBJECT_CAP) {
		r->failed = TT_ELIMIT;
		rc = tt_error_set(err, TT_ELIMIT, "git object %.*s is too large to read (%llu bytes)",
				  (int)ol, h, size);
		goto done;
	}
	memcpy(oid, h, ol);
	oid[ol] = '\0';
	memcpy(type, sp1 + 1, tl);
	type[tl] = '\0';
	tt_buf *into = data ? data : &skip;
	tt_buf_reset(into);
	rc = tt_proc_read_exact(r->proc, into, (size_t)size, err);
	if (rc == 0)
		rc = tt_proc_read_exact(r->proc, &skip, 1, err);  /* the newline after the content */
	if (rc < 0) {
		rc = reader_fail(r, rc, err);
		goto done;
	}
	*found = true;
done:
	tt_buf_release(&req);
	tt_buf_release(&skip);
	return rc;
}

/* A blob's text, cached by oid (a borrowed reference); "" when missing. */
static int reader_blob(tt_git_reader *r, const char *sha, json_t **out, tt_error *err)
{
	tt_buf data = TT_BUF_INIT, text = TT_BUF_INIT;
	char type[16], oid[65];
	bool found;
	json_t *s;
	int rc = 0;

	if ((*out = json_object_get(r->blobs, sha)) != NULL)
		return 0;
	if ((rc = tt_git_reader_fetch(r, sha, &found, type, oid, &data, err)) < 0)
		goto done;
	if (found)
		tt_vcs_text(&text, data.ptr, data.len);
	if ((rc = tt_buf_check(&text, err, "a file's text")) < 0)
		goto done;
	if (!(s = json_stringn_nocheck(text.ptr, text.len)) || json_object_set_new_nocheck(r->blobs, sha, s) != 0) {
		rc = tt_error_oom(err);
		goto done;
	}
	*out = s;
done:
	tt_buf_release(&data);
	tt_buf_release(&text);
	return rc;
}

static int reader_tree(tt_git_reader *r, const char *tree_oid, const char *data, size_t len,
		       size_t depth, json_t **out, tt_error *err);

/* A subtree by oid, cached (a borrowed reference); NULL when missing. */
static int reader_subtree(tt_git_reader *r, const char *sha, size_t depth, json_t **out,
			  tt_error *err)
{
	tt_buf data = TT_BUF_INIT;
	char type[16], oid[65];
	bool found;
	int rc;

	if ((*out = json_object_get(r->trees, sha)) != NULL)
		return 0;
	rc = tt_git_reader_fetch(r, sha, &found, type, oid, &data, err);
	if (rc == 0 && found && strcmp(type, "tree") == 0)
		rc = reader_tree(r, sha, data.ptr, data.len, depth, out, err);
	tt_buf_release(&data);
	return rc;
}

/* Parse a raw tree ("<mode> SP <name> NUL <binary oid>"...) into {path: text},
 * recursing into subtrees; cached under tree_oid (a borrowed reference). */
static int reader_tree(tt_git_reader *r, const char *tree_oid, const char *data, size_t len,
		       size_t depth, json_t **out, tt_error *err)
{
	size_t rawlen = strlen(tree_oid) / 2;  /* 20 (SHA-1) or 32 (SHA-256) */
	json_t *result = NULL;
	tt_buf path = TT_BUF_INIT;
	int rc = 0;

	*out = NULL;
	if ((*out = json_object_get(r->trees, tree_oid)) != NULL)
		return 0;
	if (depth > READER_MAX_DEPTH)
		return tt_error_set(err, TT_ELIMIT, "git tree %s is nested too deeply", tree_oid);
	if (!(result = json_object()))
		return tt_error_oom(err);
	for (size_t i = 0; i < len;) {
		const char *sp = memchr(data + i, ' ', len - i);
		const char *nul = sp ? memchr(sp, '\0', len - (size_t)(sp - data)) : NULL;
		if (!nul || (size_t)(data + len - nul - 1) < rawlen) {
			rc = tt_error_set(err, TT_EVCS, "malformed git tree %s", tree_oid);
			goto done;
		}
		const char *mode = data + i, *name = sp + 1;
		size_t ml = (size_t)(sp - mode), nl = (size_t)(nul - name);
		char sha[65];
		tt_hex(sha, (const uint8_t *)nul + 1, rawlen);
		i = (size_t)(nul + 1 - data) + rawlen;
		bool is_tree = ml == 5 && memcmp(mode, "40000", 5) == 0;
		bool is_blob = ml == 6 && (memcmp(mode, "100644", 6) == 0 || memcmp(mode, "100755", 6) == 0);
		if ((!is_tree && !is_blob) || !tt_utf8_valid(name, nl))
			continue;
		if (is_blob) {
			json_t *text;
			if ((rc = reader_blob(r, sha, &text, err)) < 0)
				goto done;
			tt_buf_reset(&path);
			tt_buf_put(&path, name, nl);
			if ((rc = tt_buf_check(&path, err, "a path")) < 0)
				goto done;
			if (json_object_set_nocheck(result, path.ptr, text) != 0) {
				rc = tt_error_oom(err);
				goto done;
			}
			continue;
		}
		json_t *sub;
		if ((rc = reader_subtree(r, sha, depth + 1, &sub, err)) < 0)
			goto done;
		if (!sub)
			continue;  /* a corrupt repository */
		const char *k;
		json_t *text;
		json_object_foreach(sub, k, text) {
			tt_buf_reset(&path);
			tt_buf_put(&path, name, nl);
			tt_buf_putc(&path, '/');
			tt_buf_puts(&path, k);
			if ((rc = tt_buf_check(&path, err, "a path")) < 0)
				goto done;
			if (json_object_set_nocheck(result, path.ptr, text) != 0) {
				rc = tt_error_oom(err);
				goto done;
			}
		}
	}
	if (json_object_set_nocheck(r->trees, tree_oid, result) != 0) {
		rc = tt_error_oom(err);
		goto done;
	}
	*out = result;
done:
	json_decref(result);  /* the cache holds it */
	tt_buf_release(&path);
	return rc;
}

/* reldir without leading/trailing '/'; "" for the root ("." too). */
static char *strip_dir(const char *reldir)
{
	const char *s = reldir ? reldir : "";
	while (*s == '/')
		s++;
	size_t n = strlen(s);
	while (n && s[n - 1] == '/')
		n--;
	if (n == 1 && s[0] == '.')
		n = 0;
	return tt_strndup(s, n);
}

int tt_git_reader_files_at(tt_git_reader *r, const char *rev, const char *reldir, json_t **out,
			   tt_error *err)
{
	char *dir = strip_dir(reldir);
	char *spec = NULL;
	tt_buf data = TT_BUF_INIT, path = TT_BUF_INIT;
	json_t *result = NULL, *tree = NULL;
	char type[16], oid[65];
	bool found;
	int rc;

	*out = NULL;
	if (!dir || !(result = json_object()) ||
	    !(spec = *dir ? tt_asprintf("%s:%s", rev, dir) : tt_asprintf("%s^{tree}", rev))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_git_reader_fetch(r, spec, &found, type, oid, &data, err)) < 0)
		goto done;
	if (found && strcmp(type, "tree") == 0 &&
	    (rc = reader_tree(r, oid, data.ptr, data.len, 0, &tree, err)) < 0)
		goto done;
	const char *k;
	json_t *text;
	json_object_foreach(tree, k, text) {
		tt_buf_reset(&path);
		if (*dir)
			tt_buf_printf(&path, "%s/", dir);
		tt_buf_puts(&path, k);
		if ((rc = tt_buf_check(&path, err, "a path")) < 0)
			goto done;
		if (json_object_set_nocheck(result, path.ptr, text) != 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	*out = result;
	result = NULL;
done:
	json_decref(result);
	free(dir);
	free(spec);
	tt_buf_release(&data);
	tt_buf_release(&path);
	return rc;
}

int tt_git_reader_text_at(tt_git_reader *r, const char *rev, const char *relpath, char **out,
			  size_t *len, tt_error *err)
{
	char *spec = tt_asprintf("%s:%s", rev, relpath);
	tt_buf data = TT_BUF_INIT, text = TT_BUF_INIT;
	char type[16], oid[65];
	bool found;
	int rc;

	*out = NULL;
	if (len)
		*len = 0;
	if (!spec)
		return tt_error_oom(err);
	if ((rc = tt_git_reader_fetch(r, spec, &found, type, oid, &data, err)) < 0 || !found ||
	    strcmp(type, "blob") != 0)
		goto done;
	tt_vcs_text(&text, data.ptr, data.len);
	if ((rc = tt_buf_check(&text, err, "a file's text")) < 0)
		goto done;
	if (len)
		*len = text.len;
	if (!(*out = tt_buf_detach(&text)))
		rc = tt_error_oom(err);
done:
	free(spec);
	tt_buf_release(&data);
	tt_buf_release(&text);
	return rc;
}
