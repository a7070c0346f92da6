/*
 * engine/cmd/promote_check.c - `promote --check CMD`: write-audit-publish.
 *
 * The promote is planned first; then CMD runs (`/bin/sh -c`, the caller's
 * own command, never one read from the dataset) with every object of the
 * bookmark readable at exactly the heads the plan lands: a private file
 * names each object's read-only handle (what `tether open --json -r REV`
 * shows, credentials left out) at the dataset commit the landing records.
 *
 * A non-zero exit refuses the promote whole: nothing has moved yet, and
 * the error carries the exit status and the last lines of the output.
 * Exit 0 records the check in the plan's context - the command (URL
 * passwords masked), its status, the commit and the heads it saw - and
 * the apply holds every move to it: each source head is compared again
 * before any base moves ("moved after the check"), and each base moves only
 * from the head the check saw (conditionally where the system can).  The
 * plan's context is what the journal records, so the check is in it too.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/plan.h"
#include "engine/cmd/fork.h"
#include "engine/kernel/context.h"
#include "engine/kernel/revisions.h"
#include "engine/cmd/promote_check.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/proc.h"

#define TAIL_LINES 20
#define TAIL_BYTES 4096

/* The command as it may be shown and journaled: the password of any
 * scheme://user:password@ in it masked. */
char *tt_check_command_shown(const char *cmd)
{
	tt_buf b = TT_BUF_INIT;
	const char *p = cmd;
	while (*p) {
		const char *s = strstr(p, "://");
		if (!s) {
			tt_buf_puts(&b, p);
			break;
		}
		s += 3;
		size_t span = strcspn(s, "/@ \t\n'\"");
		const char *colon = memchr(s, ':', span);
		tt_buf_put(&b, p, (size_t)(s - p));
		if (s[span] == '@' && colon) {
			tt_buf_put(&b, s, (size_t)(colon - s));
			tt_buf_puts(&b, ":***");
			p = s + span;
		} else {
			p = s;
		}
	}
	return tt_buf_detach(&b);
}

typedef struct tail {
	char buf[TAIL_BYTES];
	size_t len;
	bool cut;
	void (*forward)(void *ctx, const char *data, size_t len);
	void *forward_ctx;
} tail;

static void keep_tail(void *ctx, const char *data, size_t len)
{
	tail *t = ctx;
	if (t->forward)
		t->forward(t->forward_ctx, data, len);
	if (len >= sizeof t->buf) {
		memcpy(t->buf, data + len - sizeof t->buf, sizeof t->buf);
		t->len = sizeof t->buf;
		t->cut = true;
		return;
	}
	if (t->len + len > sizeof t->buf) {
		size_t drop = t->len + len - sizeof t->buf;
		memmove(t->buf, t->buf + drop, t->len - drop);
		t->len -= drop;
		t->cut = true;
	}
	memcpy(t->buf + t->len, data, len);
	t->len += len;
}

/* The last TAIL_LINES lines kept, each indented. */
static void tail_text(const tail *t, tt_buf *out)
{
	size_t end = t->len, start = 0;
	while (end && (t->buf[end - 1] == '\n' || t->buf[end - 1] == '\r'))
		end--;
	if (t->cut) { /* the first line kept may be a part of one */
		const char *nl = memchr(t->buf, '\n', end);
		start = nl ? (size_t)(nl - t->buf) + 1 : 0;
	}
	size_t from = end;
	for (int lines = 0; from > start; from--)
		if (t->buf[from - 1] == '\n' && ++lines == TAIL_LINES)
			break;
	for (size_t i = from; i < end;) {
		const char *nl = memchr(t->buf + i, '\n', end - i);
		size_t n = nl ? (size_t)(nl - (t->buf + i)) : end - i;
		tt_buf_puts(out, "\n    ");
		tt_buf_put(out, t->buf + i, n);
		i += n + 1;
	}
}

static bool stop_requested(void *ctx)
{
	return atomic_load(&((tt_repo *)ctx)->cancel);
}

typedef struct open_job {
	tt_repo *repo;
	const tt_manifest *m;
	const char *where;
	json_t *handle;
	tt_error err;
} open_job;

static void open_one(size_t i, void *ctx)
{
	open_job *j = &((open_job *)ctx)[i];
	j->err = (tt_error)TT_ERROR_INIT;
	if (!j->m->state)
		tt_error_set(&j->err, TT_ECONFIG, "nothing committed at %s", j->where);
	else
		tt_engine_open_shown(j->repo, j->m, j->where, &j->handle, &j->err);
}

/* A private directory for the handles file. */
static char *private_dir(tt_error *err)
{
	const char *tmp = getenv("TMPDIR");
	char *tmpl = tt_asprintf("%s/tether-check-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!tmpl) {
		tt_error_oom(err);
		return NULL;
	}
	if (!mkdtemp(tmpl)) {
		tt_error_errno(err, errno, "cannot make a private directory for the check's handles (%s)", tmpl);
		free(tmpl);
		return NULL;
	}
	return tmpl;
}

/* What lands: every fast-forward (and what shares its branch), into heads and
 * bases.  A merge's result does not exist until it is made, so a plan that
 * merges cannot be checked before it lands. */
static int landing_heads(tt_plan *plan, json_t *heads, json_t *bases, tt_error *err)
{
	tt_buf merges = TT_BUF_INIT;
	size_t na = tt_plan_action_count(plan);
	int rc = 0;
	for (size_t i = 0; i < na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		const char *would = json_string_value(json_object_get(a.params, "would"));
		if (strcmp(a.op, "merge") == 0 || (strcmp(a.op, "share") == 0 && would && strcmp(would, "merge") == 0))
			tt_buf_printf(&merges, "%s%s", merges.len ? ", " : "", a.key);
		else if (strcmp(a.op, "fast-forward") == 0 || strcmp(a.op, "share") == 0) {
			json_t *ts = json_object_get(a.params, "target_state");
			const char *with = json_string_value(json_object_get(a.params, "with"));
			for (size_t k = 0; k < na && !ts && with; k++) {
				tt_plan_action_view w;
				tt_plan_action_at(plan, k, &w);
				if (strcmp(w.key, with) == 0)
					ts = json_object_get(w.params, "target_state");
			}
			if (json_is_object(ts))
				json_object_set(heads, a.key, ts);
			json_t *bs = json_object_get(a.params, "base_state");
			if (json_is_object(bs))
				json_object_set(bases, a.key, bs);
		}
	}
	if ((rc = tt_buf_check(&merges, err, "merges")) == 0 && merges.len) {
		rc = tt_error_set(err, TT_ECONFIG, "cannot check what lands: %s would merge (its base moved since "
				  "the fork), and a merge's result does not exist until it is made; nothing moved",
				  merges.ptr);
		tt_error_hint(err, "bring those forks up to date with their base branches and commit, then "
			      "promote --check again (or land them without a check on purpose)");
	}
	tt_buf_release(&merges);
	return rc;
}

/* Every object of the commit `where` opened read-only, in parallel: into
 * handles, or unavailable with why; one that lands must open. */
static int open_handles(tt_repo *repo, const tt_manifest_set *at, const char *where, const json_t *heads,
			json_t *handles, json_t *unavailable, tt_error *err)
{
	open_job *jobs = tt_calloc(at->n ? at->n : 1, sizeof *jobs);
	int rc = 0;
	if (!jobs)
		return tt_error_oom(err);
	for (size_t i = 0; i < at->n; i++)
		jobs[i] = (open_job){ repo, &at->items[i], where, NULL, TT_ERROR_INIT };
	tt_engine_prepare(repo);
	if ((rc = tt_engine_fanout(at->n, open_one, jobs, err)) < 0)
		goto done;
	for (size_t i = 0; i < at->n; i++) {
		if (jobs[i].handle) {
			json_object_set(handles, at->items[i].key, jobs[i].handle);
		} else if (json_object_get(heads, at->items[i].key)) {
			/* What lands must be readable by the check. */
			rc = tt_error_set(err, jobs[i].err.code ? jobs[i].err.code : TT_ERROR,
					  "cannot check what lands: %s does not open at %s (%s); nothing moved",
					  at->items[i].key, where, tt_error_text(&jobs[i].err));
			tt_error_object(err, at->items[i].key, at->items[i].kind);
			goto done;
		} else {
			json_object_set_new(unavailable, at->items[i].key, json_string(tt_error_text(&jobs[i].err)));
		}
	}
done:
	for (size_t i = 0; i < at->n; i++) {
		json_decref(jobs[i].handle);
		tt_error_clear(&jobs[i].err);
	}
	free(jobs);
	return rc;
}

/* Run the check through /bin/sh with the handles file and the commit in its
 * environment: 0 when it exited 0, else the refusal (its last lines in it). */
static int run_check(tt_repo *repo, const tt_promote_opts *o, const char *file, const char *where,
		     const char *bookmark, const char *shown, tt_error *err)
{
	char *env_h = tt_asprintf("TETHER_CHECK_HANDLES=%s", file);
	char *env_r = tt_asprintf("TETHER_CHECK_REV=%s", where);
	char *env_b = tt_asprintf("TETHER_CHECK_BOOKMARK=%s", bookmark ? bookmark : "");
	char *env_rev = tt_asprintf("TETHER_REV=%s", where);
	tail *t = tt_calloc(1, sizeof *t);
	int rc = 0, status = 0;
	bool stopped = false;
	if (!env_h || !env_r || !env_b || !env_rev || !t) {
		rc = tt_error_oom(err);
		goto done;
	}
	t->forward = o->check_output;
	t->forward_ctx = o->check_ctx;
	const char *argv[] = { "/bin/sh", "-c", o->check, NULL };
	const char *set[] = { env_h, env_r, env_b, env_rev, NULL };
	tt_proc_opts po = { .argv = argv, .env_set = set, .merge_stderr = true, .own_group = true };
	if ((rc = tt_proc_stream(&po, keep_tail, t, stop_requested, repo, &status, &stopped, err)) < 0)
		goto done;
	if (stopped) {
		atomic_store(&repo->cancel, false);
		rc = tt_error_set(err, TT_ECANCELED, "the check (%s) was interrupted and stopped; nothing moved",
				  shown);
	} else if (status != 0) {
		tt_buf msg = TT_BUF_INIT;
		tt_buf_printf(&msg, "the check refused the promote: `%s` exited with status %d; nothing moved",
			      shown, status);
		if (t->len) {
			tt_buf_puts(&msg, "\n  its last lines:");
			tail_text(t, &msg);
		}
		rc = msg.failed ? tt_error_oom(err) : tt_error_set(err, TT_ERROR, "%s", msg.ptr);
		tt_buf_release(&msg);
	}
done:
	free(t);
	free(env_h);
	free(env_r);
	free(env_b);
	free(env_rev);
	return rc;
}

int tt_engine_promote_check(tt_repo *repo, const tt_promote_opts *o, tt_plan *plan, tt_error *err)
{
	json_t *ctx = tt_plan_context(plan), *heads = json_object(), *bases = json_object(), *doc = NULL;
	json_t *handles = json_object(), *unavailable = json_object(), *record = NULL;
	tt_manifest_set at = { 0 };
	char *dir = NULL, *file = NULL, *commit = NULL, *shown = NULL;
	tt_buf text = TT_BUF_INIT, note = TT_BUF_INIT;
	int rc = 0;

	if (!o->check)
		goto done;
	if (!*o->check) {
		rc = tt_error_set(err, TT_EUSAGE, "--check needs a command (an empty one checks nothing)");
		goto done;
	}
	if (!heads || !bases || !handles || !unavailable) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = landing_heads(plan, heads, bases, err)) < 0)
		goto done;
	if (!json_object_size(heads)) {
		rc = tt_plan_note(plan, "check not run: this plan lands nothing", err);
		goto done;
	}
	/* The dataset commit the landing records, and every object at it. */
	const char *rev = json_string_value(json_object_get(ctx, "rev"));
	const char *at_rev = rev ? rev : json_string_value(json_object_get(ctx, "bookmark_commit"));
	const char *bookmark = json_string_value(json_object_get(ctx, "bookmark"));
	if (!at_rev) {
		rc = tt_error_set(err, TT_ECONFIG, "cannot check what lands: this bookmark has no commit");
		goto done;
	}
	if ((rc = tt_engine_objects_at(repo, at_rev, &at, &commit, err)) < 0)
		goto done;
	const char *where = commit ? commit : at_rev, *key;
	json_t *head;
	json_object_foreach(heads, key, head) {
		const tt_manifest *m = tt_manifests_find(&at, key);
		if (!m || !m->state || !tt_engine_same(m, m->state, head)) {
			rc = tt_error_set(err, TT_ESTALEPLAN, "cannot check what lands: %s lands a state %s does not "
					  "record; re-run the plan", key, where);
			goto done;
		}
	}
	if ((rc = open_handles(repo, &at, where, heads, handles, unavailable, err)) < 0)
		goto done;
	doc = json_pack("{s:s,s:s?,s:O,s:O,s:O}", "rev", where, "bookmark", bookmark, "heads", heads, "objects",
			handles, "unavailable", unavailable);
	if (!doc || tt_json_dump(&text, doc, TT_JSON_PRETTY) != 0) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!(dir = private_dir(err))) {
		rc = err->code;
		goto done;
	}
	if (!(file = tt_path_join(dir, "handles.json")) || !(shown = tt_check_command_shown(o->check))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_write_file_exclusive(file, text.ptr, text.len, 0600, err)) < 0 ||
	    (rc = run_check(repo, o, file, where, bookmark, shown, err)) < 0)
		goto done;
	record = json_pack("{s:s,s:i,s:s,s:s?,s:O,s:O}", "command", shown, "exit_status", 0, "rev", where,
			   "bookmark", bookmark, "heads", heads, "bases", bases);
	if (!record) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_plan_set_context(plan, "check", record, err)) < 0)
		goto done;
	tt_buf_printf(&note, "checked: `%s` exited 0 with every object at %.12s; %zu head(s) land only as "
		      "they were checked", shown, where, json_object_size(heads));
	rc = tt_buf_check(&note, err, "note") < 0 ? err->code : tt_plan_note(plan, note.ptr, err);
done:
	if (file)
		unlink(file);
	if (dir)
		rmdir(dir);
	free(dir);
	free(file);
	free(commit);
	free(shown);
	tt_manifests_release(&at);
	json_decref(heads);
	json_decref(bases);
	json_decref(doc);
	json_decref(handles);
	json_decref(unavailable);
	json_decref(record);
	tt_buf_release(&text);
	tt_buf_release(&note);
	return rc;
}
