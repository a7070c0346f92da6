/*
 * vcs/git_history.c - commit metadata and refs in one git call each (see
 * vcs.h); shared by the git adapter and, later, the jj one.
 */
#include "vcs/vcs.h"

#include <stdlib.h>
#include <string.h>

#include "util/mem.h"

#define US '\x1f'  /* field separator in the batched `git log` output */
#define RS '\x1e'  /* record separator */

/* A JSON string of git's bytes as text (see tt_vcs_text); NULL on OOM. */
static json_t *text_value(const char *s, size_t n)
{
	tt_buf b = TT_BUF_INIT;
	json_t *v = NULL;
	if (tt_vcs_text(&b, s, n) == 0)
		v = json_stringn_nocheck(b.ptr, b.len);
	tt_buf_release(&b);
	return v;
}

static bool all_zeros(const char *s)
{
	for (; *s; s++)
		if (*s != '0')
			return false;
	return true;
}

/* Split s[0..n) at the first `sep`: *field, *flen; returns the rest. */
static const char *next_field(const char *s, const char *end, char sep, size_t *flen)
{
	const char *p = memchr(s, sep, (size_t)(end - s));
	*flen = (size_t)((p ? p : end) - s);
	return p ? p + 1 : NULL;
}

/* One "%H US %P US %an US %ae US %aI US %cI US %B" record; NULL when the
 * record does not have seven fields. */
static int parse_record(const char *s, const char *end, json_t *out, tt_error *err)
{
	const char *f[7];
	size_t fl[7];
	const char *p = s;
	json_t *info = NULL, *parents = NULL;
	int rc = 0;

	while (p < end && *p == '\n')
		p++;
	for (int i = 0; i < 6; i++) {
		if (!p)
			return 0;
		f[i] = p;
		p = next_field(p, end, US, &fl[i]);
	}
	if (!p)
		return 0;
	f[6] = p;
	fl[6] = (size_t)(end - p);
	while (fl[6] && f[6][fl[6] - 1] == '\n')
		fl[6]--;

	if (!(info = json_object()) || !(parents = json_array())) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (const char *q = f[1], *qe = f[1] + fl[1]; q < qe;) {
		while (q < qe && *q == ' ')
			q++;
		const char *w = q;
		while (q < qe && *q != ' ')
			q++;
		if (q > w && json_array_append_new(parents, text_value(w, (size_t)(q - w))) != 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	static const char *const names[] = { "commit_id", NULL, "author_name", "author_email",
					     "authored_at", "committed_at", "message" };
	for (int i = 0; i < 7; i++) {
		if (i == 1) {
			if (json_object_set_new(info, "parents", parents) != 0) {
				parents = NULL;
				rc = tt_error_oom(err);
				goto done;
			}
			parents = NULL;
			continue;
		}
		if (json_object_set_new(info, names[i], text_value(f[i], fl[i])) != 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	if (json_object_set_new(info, "change_id", json_null()) != 0 ||
	    json_array_append(out, info) != 0)
		rc = tt_error_oom(err);
done:
	json_decref(parents);
	json_decref(info);
	return rc;
}

int tt_git_commit_info(const char *exe, const char *cwd, const char *git_dir,
		       const char *const *revs, size_t n, json_t **out, tt_error *err)
{
	static const char format[] = "--format=%H\x1f%P\x1f%an\x1f%ae\x1f%aI\x1f%cI\x1f%B\x1e";
	tt_buf input = TT_BUF_INIT, o = TT_BUF_INIT;
	json_t *result = json_array();
	const char *args[8];
	size_t a = 0;
	int rc = 0;

	*out = NULL;
	if (!result)
		return tt_error_oom(err);
	for (size_t i = 0; i < n; i++) {
		if (!revs[i][0] || all_zeros(revs[i]))
			continue;  /* jj's virtual root commit has no git object */
		if (revs[i][0] == '-' || strpbrk(revs[i], "\n\r")) {
			rc = tt_error_set(err, TT_EVCS, "could not resolve revision: %s", revs[i]);
			goto done;
		}
		tt_buf_puts(&input, revs[i]);
		tt_buf_putc(&input, '\n');
	}
	if ((rc = tt_buf_check(&input, err, "commit ids")) < 0)
		goto done;
	if (input.len) {
		if (git_dir) {
			args[a++] = "--git-dir";
			args[a++] = git_dir;
		}
		args[a++] = "log";
		args[a++] = "--no-walk=unsorted";
		args[a++] = "--stdin";
		args[a++] = format;
		args[a] = NULL;
		if ((rc = tt_git_run_input(exe, cwd, args, input.ptr, input.len, &o, false, NULL, err)) < 0)
			goto done;
		const char *end = o.ptr + o.len;
		for (const char *rec = o.ptr; rec < end;) {
			const char *re = memchr(rec, RS, (size_t)(end - rec));
			if (!re)
				re = end;
			if ((rc = parse_record(rec, re, result, err)) < 0)
				goto done;
			rec = re + (re < end);
		}
	}
	*out = result;
	result = NULL;
done:
	json_decref(result);
	tt_buf_release(&input);
	tt_buf_release(&o);
	return rc;
}

static int ref_entry(json_t *out, const char *name, size_t nl, const char *kind, const char *sha,
		     size_t sl)
{
	json_t *r = json_object();
	int bad = !r || json_object_set_new(r, "name", text_value(name, nl)) != 0 ||
		  json_object_set_new(r, "kind", json_string(kind)) != 0 ||
		  json_object_set_new(r, "commit_id", text_value(sha, sl)) != 0 ||
		  json_array_append(out, r) != 0;
	json_decref(r);
	return bad ? -1 : 0;
}

int tt_git_refs(const char *exe, const char *cwd, const char *git_dir, json_t **out, tt_error *err)
{
	tt_buf o = TT_BUF_INIT;
	json_t *result = json_array();
	const char *args[8];
	size_t a = 0;
	int status = 0, rc;

	*out = NULL;
	if (!result)
		return tt_error_oom(err);
	if (git_dir) {
		args[a++] = "--git-dir";
		args[a++] = git_dir;
	}
	args[a++] = "for-each-ref";
	/* for-each-ref spells a control character as %xx */
	args[a++] = "--format=%(refname)%1f%(objectname)%1f%(*objectname)";
	args[a++] = "refs/heads";
	args[a++] = "refs/tags";
	args[a] = NULL;
	if ((rc = tt_git_run(exe, cwd, args, &o, true, &status, err)) < 0)
		goto done;
	const char *end = o.ptr + o.len;
	for (const char *line = status == 0 ? o.ptr : end; line < end;) {
		const char *le = memchr(line, '\n', (size_t)(end - line));
		if (!le)
			le = end;
		const char *f[3];
		size_t fl[3];
		const char *p = line;
		int nf = 0;
		while (p && nf < 3) {
			f[nf] = p;
			p = next_field(p, le, US, &fl[nf]);
			nf++;
		}
		line = le + (le < end);
		if (nf != 3 || p)
			continue;  /* not three fields */
		static const char heads[] = "refs/heads/", tags[] = "refs/tags/";
		int bad = 0;
		if (fl[0] > sizeof heads - 1 && memcmp(f[0], heads, sizeof heads - 1) == 0)
			bad = ref_entry(result, f[0] + sizeof heads - 1, fl[0] - (sizeof heads - 1), "branch",
					f[1], fl[1]);
		else if (fl[0] > sizeof tags - 1 && memcmp(f[0], tags, sizeof tags - 1) == 0)
			bad = ref_entry(result, f[0] + sizeof tags - 1, fl[0] - (sizeof tags - 1), "tag",
					fl[2] ? f[2] : f[1], fl[2] ? fl[2] : fl[1]);
		if (bad) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	*out = result;
	result = NULL;
done:
	json_decref(result);
	tt_buf_release(&o);
	return rc;
}
