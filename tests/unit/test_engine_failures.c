/*
 * Commands that meet a failure after their journal entry began, or while
 * writing it: each fails with the cause named (never succeeds with its
 * error still set), and leaves nothing it did unrecorded.  A dataset in a
 * fresh git repository over the in-process memory store; the backend trace
 * hook (backends/dispatch.h) is where a failure is arranged, between two
 * backend calls of the command under test.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backends/dispatch.h"
#include "backends/memory/memory.h"
#include "engine/kernel/handle.h"
#include "harness.h"
#include "util/buf.h"
#include "util/fs.h"

/* --- a dataset with two memory objects, committed, on bookmark feature ------ */

typedef struct fixture {
	char dir[2048];
	char sys[2][64];    /* the memory systems of m1 and m2 */
	tt_repo *repo;
} fixture;

/* init, add m1 and m2, commit, then `new -b feature` (eager: each object
 * forks its branch now, or lazy: each is a pending fork). */
static int fixture_open(fixture *f, int eager)
{
	static int seq;
	tt_error err = TT_ERROR_INIT;
	int rc = -1;
	unsetenv(TT_MEMORY_STORE_ENV);
	tt_backend_set_trace(NULL, NULL);
	memset(f, 0, sizeof *f);
	snprintf(f->dir, sizeof f->dir, "%s/ds", tt_test_tmpdir());
	char cmd[4500];
	snprintf(cmd, sizeof cmd,
		 "mkdir -p '%s' && cd '%s' && git init -q -b main && git -c user.name=t -c user.email=t@t "
		 "commit -q --allow-empty -m start",
		 f->dir, f->dir);
	if (system(cmd) != 0 ||
	    tt_init(f->dir, NULL, NULL, &err) < 0 || tt_repo_open(f->dir, &f->repo, &err) < 0)
		goto done;
	seq++;
	for (int i = 0; i < 2; i++) {
		char key[16];
		snprintf(f->sys[i], sizeof f->sys[i], "fail-%ld-%d-%d", (long)getpid(), seq, i + 1);
		snprintf(key, sizeof key, "m%d", i + 1);
		json_t *loc = json_pack("{s:s}", "system", f->sys[i]), *out = NULL;
		tt_add_opts add = TT_ADD_OPTS_INIT;
		add.key = key;
		add.kind = "memory";
		add.locator = loc;
		rc = tt_repo_add(f->repo, &add, &out, &err);
		json_decref(out);
		json_decref(loc);
		if (rc < 0)
			goto done;
	}
	tt_commit_opts co = TT_COMMIT_OPTS_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	co.message = "first";
	if ((rc = tt_repo_commit(f->repo, &co, NULL, &res, &err)) < 0)
		goto done;
	tt_plan_result_release(&res);
	tt_new_opts no = TT_NEW_OPTS_INIT;
	no.bookmark = "feature";
	no.eager = eager;
	rc = tt_repo_new(f->repo, &no, NULL, &res, &err);
	tt_plan_result_release(&res);
done:
	if (rc < 0 || err.code)
		fprintf(stderr, "  fixture: %s\n", err.message ? err.message : "(failed)");
	tt_error_clear(&err);
	return rc < 0 ? -1 : 0;
}

static void fixture_close(fixture *f)
{
	tt_backend_set_trace(NULL, NULL);
	tt_repo_free(f->repo);
	f->repo = NULL;
}

/* What the journal holds now: its number of entries. */
static size_t journal_entries(fixture *f)
{
	tt_error err = TT_ERROR_INIT;
	json_t *ops = NULL;
	size_t n = tt_repo_ops(f->repo, 1000, &ops, NULL, &err) == 0 ? json_array_size(ops) : (size_t)-1;
	json_decref(ops);
	tt_error_clear(&err);
	return n;
}

/* The branch of system sys named name, as the store has it (NULL: none). */
static bool has_branch(const char *sys, const char *name)
{
	tt_error err = TT_ERROR_INIT;
	json_t *s = NULL;
	bool yes = tt_memory_show(sys, &s, &err) == 0 && json_object_get(json_object_get(s, "branches"), name);
	json_decref(s);
	tt_error_clear(&err);
	return yes;
}

/* .tether/workspace.toml as the disk has it. */
static char *workspace_file(fixture *f)
{
	char path[2300];
	tt_buf b = TT_BUF_INIT;
	tt_error err = TT_ERROR_INIT;
	snprintf(path, sizeof path, "%s/.tether/workspace.toml", f->dir);
	if (tt_read_file(path, &b, 1 << 20, &err) < 0) {
		tt_error_clear(&err);
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

static int restore_both(fixture *f, tt_plan_result *res, tt_error *err)
{
	static const char *const keys[] = { "m1", "m2" };
	tt_restore_opts ro = TT_RESTORE_OPTS_INIT;
	ro.selectors = keys;
	ro.nselectors = 2;
	ro.rev = "main";
	return tt_repo_restore(f->repo, &ro, NULL, res, err);
}

/* --- the journal refuses a progress record between two resets ------------------ */

/* .tether/ops.jsonl swapped for a directory (every append then fails) at
 * the first fork, and put back at the second. */
typedef struct journal_outage {
	char ops[2300], saved[2300];
	int forks;
} journal_outage;

static void break_journal_at_first_fork(void *ctx, const char *kind, const char *op, int rc)
{
	journal_outage *o = ctx;
	(void)kind;
	if (strcmp(op, "fork") != 0 || rc < 0)
		return;
	if (++o->forks == 1) {
		if (rename(o->ops, o->saved) != 0 || mkdir(o->ops, 0755) != 0)
			fprintf(stderr, "  could not break the journal: %s\n", strerror(errno));
	} else if (o->forks == 2) {
		if (rmdir(o->ops) != 0 || rename(o->saved, o->ops) != 0)
			fprintf(stderr, "  could not mend the journal: %s\n", strerror(errno));
	}
}

TT_TEST(restore_stops_when_a_reset_cannot_be_journaled_and_keeps_it_recorded)
{
	fixture f;
	tt_error err = TT_ERROR_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	journal_outage o = { .forks = 0 };
	CHECK_OK(fixture_open(&f, 0));
	snprintf(o.ops, sizeof o.ops, "%s/.tether/ops.jsonl", f.dir);
	snprintf(o.saved, sizeof o.saved, "%s/.tether/ops.jsonl.saved", f.dir);
	char branch[128];
	snprintf(branch, sizeof branch, "tether.ws.%s.feature", tt_repo_dataset_id(f.repo));
	CHECK(!has_branch(f.sys[0], branch) && !has_branch(f.sys[1], branch)); /* lazy: pending forks */

	tt_backend_set_trace(break_journal_at_first_fork, &o);
	int rc = restore_both(&f, &res, &err);
	tt_backend_set_trace(NULL, NULL);
	if (o.forks == 1) { /* still broken: mend it */
		CHECK(rmdir(o.ops) == 0 && rename(o.saved, o.ops) == 0);
	}
	/* The journal failure is the call's: not a success with err still set. */
	CHECK_MSG(rc < 0, "restore returned %d with err %d (%s)", rc, err.code, err.message ? err.message : "");
	CHECK_INT(err.code, rc);
	CHECK(res.out == NULL);
	CHECK_MSG(strstr(err.message, "ops.jsonl") && strstr(err.message, "restore m1") &&
			  strstr(err.message, "m1 restored and recorded"),
		  "%s", err.message);
	tt_error_clear(&err);
	/* m1 was reset and stays recorded in the workspace; m2 was not touched. */
	CHECK(has_branch(f.sys[0], branch) && !has_branch(f.sys[1], branch));
	char *ws = workspace_file(&f);
	CHECK(ws != NULL);
	char *refs = strstr(ws, "[working_refs]"), *pending = strstr(ws, "[pending_forks]");
	CHECK_MSG(refs && strstr(refs, "m1 = ") && pending && strstr(pending, "m2 = ") &&
			  !strstr(pending, "m1 = "),
		  "%s", ws);
	free(ws);

	/* The rest, restored by the same restore of what is left. */
	static const char *const rest[] = { "m2" };
	tt_restore_opts ro = TT_RESTORE_OPTS_INIT;
	ro.selectors = rest;
	ro.nselectors = 1;
	ro.rev = "main";
	CHECK_OK(tt_repo_restore(f.repo, &ro, NULL, &res, &err));
	CHECK(has_branch(f.sys[1], branch));
	tt_plan_result_release(&res);
	fixture_close(&f);
}

/* --- the workspace cannot be rendered for the journal's entry ------------------- */

/*
 * tt_workspace_render fails when out of memory, or on a value the TOML
 * writer refuses (nested deeper than it goes).  A value of the second sort
 * is put in the open repo's workspace at each backend call, after the
 * command's lock re-read it: its journal entry cannot describe the
 * workspace, and the command must stop there, before it changes anything.
 */
static json_t *too_deep(void)
{
	json_t *v = json_array();
	for (int i = 0; v && i < 1100; i++) {
		json_t *w = json_array();
		if (!w || json_array_append_new(w, v) != 0) {
			json_decref(w);
			json_decref(v);
			return NULL;
		}
		v = w;
	}
	return v;
}

static void spoil_workspace(void *ctx, const char *kind, const char *op, int rc)
{
	tt_repo *repo = ctx;
	(void)kind, (void)op, (void)rc;
	json_t *deep = too_deep();
	if (deep)
		json_object_set_new(repo->ws.base_states, "zz-unrenderable", json_pack("{s:o}", "v", deep));
}

TT_TEST(restore_writes_nothing_when_its_journal_entry_cannot_hold_the_workspace)
{
	fixture f;
	tt_error err = TT_ERROR_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	CHECK_OK(fixture_open(&f, 0));
	char branch[128];
	snprintf(branch, sizeof branch, "tether.ws.%s.feature", tt_repo_dataset_id(f.repo));
	size_t entries = journal_entries(&f);

	tt_backend_set_trace(spoil_workspace, f.repo);
	int rc = restore_both(&f, &res, &err);
	tt_backend_set_trace(NULL, NULL);
	CHECK_MSG(rc < 0 && err.code == rc, "restore returned %d with err %d (%s)", rc, err.code,
		  err.message ? err.message : "");
	CHECK_MSG(strstr(err.message, "workspace") && strstr(err.message, "nested deeper"), "%s", err.message);
	tt_error_clear(&err);
	/* Nothing written: no branch made, no journal entry begun. */
	CHECK(!has_branch(f.sys[0], branch) && !has_branch(f.sys[1], branch));
	CHECK_INT(journal_entries(&f), entries);
	fixture_close(&f);
}

TT_TEST(drop_writes_nothing_when_its_journal_entry_cannot_hold_the_workspace)
{
	fixture f;
	tt_error err = TT_ERROR_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	CHECK_OK(fixture_open(&f, 1));
	char branch[128];
	snprintf(branch, sizeof branch, "tether.ws.%s.feature", tt_repo_dataset_id(f.repo));
	CHECK(has_branch(f.sys[0], branch));
	/* Back on the trunk: feature is dropped from elsewhere. */
	tt_new_opts no = TT_NEW_OPTS_INIT;
	no.rev = "main";
	CHECK_OK(tt_repo_new(f.repo, &no, NULL, &res, &err));
	tt_plan_result_release(&res);
	size_t entries = journal_entries(&f);

	tt_drop_opts d = TT_DROP_OPTS_INIT;
	d.bookmark = "feature";
	tt_backend_set_trace(spoil_workspace, f.repo);
	int rc = tt_repo_drop(f.repo, &d, NULL, &res, &err);
	tt_backend_set_trace(NULL, NULL);
	CHECK_MSG(rc < 0 && err.code == rc, "drop returned %d with err %d (%s)", rc, err.code,
		  err.message ? err.message : "");
	CHECK_MSG(strstr(err.message, "workspace") && strstr(err.message, "nested deeper"), "%s", err.message);
	tt_error_clear(&err);
	/* Nothing written: the bookmark and its branches stay, no entry begun. */
	json_t *marks = NULL;
	CHECK_OK(tt_repo_bookmarks(f.repo, &marks, &err));
	CHECK(json_object_get(marks, "feature") != NULL);
	json_decref(marks);
	CHECK(has_branch(f.sys[0], branch) && has_branch(f.sys[1], branch));
	CHECK_INT(journal_entries(&f), entries);
	fixture_close(&f);
}

/* --- repair: a lost working branch forked again ------------------------------------ */

/* An eager fixture whose workspace expects both working branches under
 * names the stores never had: repair plans a refork of each. */
static int lose_working_branches(fixture *f, char names[2][160])
{
	tt_error err = TT_ERROR_INIT;
	for (int i = 0; i < 2; i++) {
		snprintf(names[i], 160, "tether.ws.%s.lost%d", tt_repo_dataset_id(f->repo), i + 1);
		json_object_set_new(f->repo->ws.working_refs, i ? "m2" : "m1", json_string(names[i]));
	}
	int rc = tt_workspace_save(&f->repo->ws, f->repo->root, &err);
	tt_error_clear(&err);
	return rc;
}

TT_TEST(repair_writes_nothing_when_its_journal_entry_cannot_hold_the_workspace)
{
	fixture f;
	tt_error err = TT_ERROR_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	char lost[2][160];
	CHECK_OK(fixture_open(&f, 1));
	CHECK_OK(lose_working_branches(&f, lost));
	size_t entries = journal_entries(&f);

	tt_repair_opts ro = TT_REPAIR_OPTS_INIT;
	tt_backend_set_trace(spoil_workspace, f.repo);
	int rc = tt_repo_repair(f.repo, &ro, NULL, &res, &err);
	tt_backend_set_trace(NULL, NULL);
	CHECK_MSG(rc < 0 && err.code == rc, "repair returned %d with err %d (%s)", rc, err.code,
		  err.message ? err.message : "");
	CHECK_MSG(err.message && strstr(err.message, "workspace") && strstr(err.message, "nothing was repaired"),
		  "%s", err.message ? err.message : "");
	tt_error_clear(&err);
	tt_plan_result_release(&res);
	/* Nothing written: no branch forked again, no journal entry begun. */
	CHECK(!has_branch(f.sys[0], lost[0]) && !has_branch(f.sys[1], lost[1]));
	CHECK_INT(journal_entries(&f), entries);
	fixture_close(&f);
}

TT_TEST(repair_stops_when_a_refork_cannot_be_journaled_and_keeps_it_recorded)
{
	fixture f;
	tt_error err = TT_ERROR_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	journal_outage o = { .forks = 0 };
	char lost[2][160];
	CHECK_OK(fixture_open(&f, 1));
	CHECK_OK(lose_working_branches(&f, lost));
	snprintf(o.ops, sizeof o.ops, "%s/.tether/ops.jsonl", f.dir);
	snprintf(o.saved, sizeof o.saved, "%s/.tether/ops.jsonl.saved", f.dir);

	tt_repair_opts ro = TT_REPAIR_OPTS_INIT;
	tt_backend_set_trace(break_journal_at_first_fork, &o);
	int rc = tt_repo_repair(f.repo, &ro, NULL, &res, &err);
	tt_backend_set_trace(NULL, NULL);
	if (o.forks == 1) { /* still broken: mend it */
		CHECK(rmdir(o.ops) == 0 && rename(o.saved, o.ops) == 0);
	}
	/* Never a success with the refork reported failed, or err set. */
	CHECK_MSG(rc < 0, "repair returned %d with err %d (%s)", rc, err.code, err.message ? err.message : "");
	CHECK_INT(err.code, rc);
	CHECK(res.out == NULL);
	CHECK_MSG(err.message && strstr(err.message, "ops.jsonl") && strstr(err.message, "repair m1") &&
			  strstr(err.message, "m1 repaired and recorded"),
		  "%s", err.message ? err.message : "");
	tt_error_clear(&err);
	tt_plan_result_release(&res);
	/* m1 was forked again and the workspace records it; m2 was not touched. */
	CHECK(has_branch(f.sys[0], lost[0]) && !has_branch(f.sys[1], lost[1]));
	char *ws = workspace_file(&f);
	CHECK(ws != NULL);
	CHECK_MSG(ws && strstr(ws, lost[0]), "%s", ws ? ws : "");
	free(ws);

	/* The rest, by repair again. */
	CHECK_OK(tt_repo_repair(f.repo, &ro, NULL, &res, &err));
	CHECK(has_branch(f.sys[1], lost[1]));
	tt_plan_result_release(&res);
	fixture_close(&f);
}

/* --- gc: an unpin the journal cannot record -------------------------------------- */

/* ops.jsonl swapped for a directory after the first unpin (mended by the test). */
static void break_journal_at_unpin(void *ctx, const char *kind, const char *op, int rc)
{
	journal_outage *o = ctx;
	(void)kind;
	if (strcmp(op, "unpin") != 0 || rc < 0 || o->forks++ != 0)
		return;
	if (rename(o->ops, o->saved) != 0 || mkdir(o->ops, 0755) != 0)
		fprintf(stderr, "  could not break the journal: %s\n", strerror(errno));
}

/* The pinned index holds pin pid. */
static bool indexed(fixture *f, const char *pid)
{
	char path[2300];
	tt_buf b = TT_BUF_INIT;
	tt_error err = TT_ERROR_INIT;
	snprintf(path, sizeof path, "%s/.git/tether-pinned.jsonl", f->dir);
	bool yes = tt_read_file(path, &b, 1 << 20, &err) == 0 && b.ptr && strstr(b.ptr, pid);
	tt_error_clear(&err);
	tt_buf_release(&b);
	return yes;
}

TT_TEST(gc_stops_when_an_unpin_cannot_be_journaled_and_keeps_its_bookkeeping)
{
	fixture f;
	tt_error err = TT_ERROR_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	journal_outage o = { .forks = 0 };
	CHECK_OK(fixture_open(&f, 1));
	/* A second commit's manifests written and discarded: its pin is named nowhere. */
	char branch[128], cmd[2400], pid[256] = "";
	snprintf(branch, sizeof branch, "tether.ws.%s.feature", tt_repo_dataset_id(f.repo));
	json_t *payload = json_pack("{s:i}", "x", 1);
	CHECK_OK(tt_memory_write(f.sys[0], branch, payload, NULL, &err));
	json_decref(payload);
	tt_commit_opts co = TT_COMMIT_OPTS_INIT;
	co.message = "second";
	co.no_vcs = true;
	CHECK_OK(tt_repo_commit(f.repo, &co, NULL, &res, &err));
	const char *tag = json_string_value(json_object_get(json_object_get(res.out, "pinned"), "m1"));
	CHECK_MSG(tag && strncmp(tag, "tether.", 7) == 0, "pinned: %s", tag ? tag : "(none)");
	snprintf(pid, sizeof pid, "%s", tag ? tag + 7 : "");
	tt_plan_result_release(&res);
	snprintf(cmd, sizeof cmd, "cd '%s' && git checkout -q -- .tether", f.dir);
	CHECK(system(cmd) == 0);
	tt_repo_free(f.repo);
	CHECK_OK(tt_repo_open(f.dir, &f.repo, &err));
	CHECK(indexed(&f, pid));
	snprintf(o.ops, sizeof o.ops, "%s/.tether/ops.jsonl", f.dir);
	snprintf(o.saved, sizeof o.saved, "%s/.tether/ops.jsonl.saved", f.dir);

	tt_gc_opts go = TT_GC_OPTS_INIT;
	tt_backend_set_trace(break_journal_at_unpin, &o);
	int rc = tt_repo_gc(f.repo, &go, NULL, &res, &err);
	tt_backend_set_trace(NULL, NULL);
	if (o.forks) { /* mend it */
		CHECK(rmdir(o.ops) == 0 && rename(o.saved, o.ops) == 0);
	}
	CHECK_MSG(o.forks == 1, "gc unpinned %d time(s)", o.forks);
	/* Never a success with the unpin reported failed, or err set. */
	CHECK_MSG(rc < 0, "gc returned %d with err %d (%s)", rc, err.code, err.message ? err.message : "");
	CHECK_INT(err.code, rc);
	CHECK(res.out == NULL);
	CHECK_MSG(err.message && strstr(err.message, "unpin tether.") && strstr(err.message, "ops.jsonl") &&
			  strstr(err.message, "tether gc"),
		  "%s", err.message ? err.message : "");
	tt_error_clear(&err);
	tt_plan_result_release(&res);
	/* The pin is gone from the store and, its bookkeeping done, from the pinned index. */
	char tagname[300];
	snprintf(tagname, sizeof tagname, "tether.%s", pid);
	json_t *after = NULL;
	CHECK_OK(tt_memory_show(f.sys[0], &after, &err));
	CHECK(json_object_get(json_object_get(after, "tags"), tagname) == NULL);
	json_decref(after);
	CHECK(!indexed(&f, pid));
	/* gc again has nothing left to unpin, and succeeds. */
	CHECK_OK(tt_repo_gc(f.repo, &go, NULL, &res, &err));
	tt_plan_result_release(&res);
	fixture_close(&f);
}
