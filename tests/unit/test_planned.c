/* Unit tests for the planned-command driver (engine/kernel/planned.c): which step
 * runs for a preview, a fresh apply and a saved plan, under which locks,
 * and what a saved plan of another command or a failing step leaves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#include "core/plan.h"
#include "engine/kernel/planned.h"
#include "engine/kernel/repo.h"
#include "util/lock.h"
#include "util/mem.h"
#include "vcs/vcs.h"

/* What the steps saw. */
typedef struct seen {
	int plans, loads, applies, gates;
	bool repository_at_gate, checkout_at_gate;
	int fail_gate;                  /* the gate refuses with this tt_code */
	bool plan_applying, apply_saved;
	bool checkout_at_plan, repository_at_plan, checkout_at_apply, repository_at_apply, checkout_at_load;
	int fail_plan, fail_apply;      /* a tt_code to fail with */
	bool partial;                   /* apply fails after setting *out */
} seen;

/* Is the lock on path held (by anyone: flock locks belong to the open
 * file, so this process's other descriptor counts)? */
static bool held(const char *path)
{
	tt_lock l = TT_LOCK_INIT;
	tt_error err = TT_ERROR_INIT;
	int rc = tt_lock_acquire(&l, path, NULL, 0, &err);
	tt_lock_release(&l);
	tt_error_clear(&err);
	return rc == TT_ELOCKED;
}

static bool repository_held(tt_repo *repo)
{
	char *path = tt_asprintf("%s/tether.lock", repo->vcs->shared_dir);
	bool h = held(path);
	free(path);
	return h;
}

static int step_plan(tt_repo *repo, void *ctx, bool applying, tt_plan **out, tt_error *err)
{
	seen *s = ctx;
	s->plans++;
	s->plan_applying = applying;
	s->checkout_at_plan = repo->checkout_lock.fd >= 0;
	s->repository_at_plan = repository_held(repo);
	if (s->fail_plan)
		return tt_error_set(err, s->fail_plan, "[t] cannot plan");
	*out = tt_plan_new("probe");
	tt_plan_action(*out, "note-it", "k", "memory", "target", "what it does", NULL, err);
	return *out ? 0 : tt_error_oom(err);
}

static int step_load(tt_repo *repo, void *ctx, tt_plan *plan, tt_error *err)
{
	seen *s = ctx;
	(void)plan, (void)err;
	s->loads++;
	s->checkout_at_load = repo->checkout_lock.fd >= 0;
	return 0;
}

static int step_apply(tt_repo *repo, void *ctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err)
{
	seen *s = ctx;
	s->applies++;
	s->apply_saved = saved;
	s->checkout_at_apply = repo->checkout_lock.fd >= 0;
	s->repository_at_apply = repository_held(repo);
	if (out)
		*out = json_pack("{s:s,s:i}", "command", tt_plan_command(plan), "actions",
				 (json_int_t)tt_plan_action_count(plan));
	if (s->fail_apply) {
		if (!s->partial && out) {
			json_decref(*out);
			*out = NULL;
		}
		return tt_error_set(err, s->fail_apply, "[t] half done");
	}
	return 0;
}

/* A gate: records what it saw in the plan, or refuses it. */
static int step_gate(tt_repo *repo, void *ctx, tt_plan *plan, tt_error *err)
{
	seen *s = ctx;
	s->gates++;
	s->checkout_at_gate = repo->checkout_lock.fd >= 0;
	s->repository_at_gate = repository_held(repo);
	if (s->fail_gate)
		return tt_error_set(err, s->fail_gate, "[t] the gate says no");
	json_t *v = json_string("passed");
	int rc = tt_plan_set_context(plan, "gate", v, err);
	json_decref(v);
	return rc;
}

static tt_planned_cmd probe(unsigned locks)
{
	return (tt_planned_cmd){ .command = "probe", .locks = locks, .plan = step_plan, .load = step_load,
				 .apply = step_apply };
}

/* A dataset in a fresh git repository with one commit on main, opened. */
static int open_dataset(tt_repo **repo)
{
	char dir[2048], cmd[8192];
	snprintf(dir, sizeof dir, "%s/ds", tt_test_tmpdir());
	snprintf(cmd, sizeof cmd,
		 "rm -rf '%s' && mkdir -p '%s' && cd '%s' && git init -q -b main && "
		 "git -c user.name=t -c user.email=t@t commit -q --allow-empty -m start",
		 dir, dir, dir);
	if (system(cmd) != 0)
		return -1;
	tt_error err = TT_ERROR_INIT;
	int rc = tt_init(dir, NULL, NULL, &err);
	if (rc == 0)
		rc = tt_repo_open(dir, repo, &err);
	tt_error_clear(&err);
	return rc;
}

/* The saved JSON of a plan of command. */
static char *saved_plan(const char *command)
{
	tt_error err = TT_ERROR_INIT;
	tt_plan *p = tt_plan_new(command);
	tt_plan_action(p, "note-it", "k", "memory", "target", "what it does", NULL, &err);
	tt_buf b = TT_BUF_INIT;
	char *text = tt_plan_to_json(p, &b, &err) == 0 ? tt_buf_detach(&b) : NULL;
	tt_buf_release(&b);
	tt_plan_free(p);
	tt_error_clear(&err);
	return text;
}

TT_TEST(fresh_apply_plans_then_applies_under_both_locks)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	CHECK_OK(open_dataset(&repo));
	seen s = { 0 };
	tt_planned_cmd cmd = probe(TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY);
	json_t *out = NULL;
	tt_planned_run run = { .out = &out };
	CHECK_OK(tt_engine_run_planned(repo, &cmd, &s, &run, &err));
	CHECK_INT(s.plans, 1);
	CHECK_INT(s.loads, 0);
	CHECK_INT(s.applies, 1);
	CHECK(s.plan_applying && !s.apply_saved);
	/* the checkout lock from planning on; the repository's around the apply */
	CHECK(s.checkout_at_plan && !s.repository_at_plan);
	CHECK(s.checkout_at_apply && s.repository_at_apply);
	CHECK_STR(json_string_value(json_object_get(out, "command")), "probe");
	/* both released after */
	CHECK(repo->checkout_lock.fd < 0 && !repository_held(repo));
	json_decref(out);
	tt_repo_free(repo);
}

TT_TEST(preview_renders_the_plan_and_applies_nothing)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	CHECK_OK(open_dataset(&repo));
	seen s = { 0 };
	tt_planned_cmd cmd = probe(TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY | TT_PLANNED_REPOSITORY_EARLY);
	char *pj = NULL, *pt = NULL;
	json_t *out = json_object(); /* reset, not freed: the caller's */
	json_t *mine = out;
	tt_planned_run run = { .dry = true, .plan_json = &pj, .plan_text = &pt, .out = &out };
	CHECK_OK(tt_engine_run_planned(repo, &cmd, &s, &run, &err));
	CHECK_INT(s.plans, 1);
	CHECK_INT(s.applies, 0);
	CHECK(!s.plan_applying);
	/* a preview writes nothing: no repository lock even where applying takes it early */
	CHECK(s.checkout_at_plan && !s.repository_at_plan);
	CHECK(out == NULL);
	CHECK(pj && strstr(pj, "\"command\": \"probe\"") != NULL);
	CHECK(pt && strncmp(pt, "plan: probe (1 write(s))\n", 25) == 0);
	free(pj);
	free(pt);
	json_decref(mine);
	tt_repo_free(repo);
}

TT_TEST(repository_lock_early_covers_planning_when_applying)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	CHECK_OK(open_dataset(&repo));
	seen s = { 0 };
	tt_planned_cmd cmd = probe(TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY | TT_PLANNED_REPOSITORY_EARLY);
	json_t *out = NULL;
	tt_planned_run run = { .out = &out };
	CHECK_OK(tt_engine_run_planned(repo, &cmd, &s, &run, &err));
	CHECK(s.checkout_at_plan && s.repository_at_plan);
	CHECK(s.checkout_at_apply && s.repository_at_apply);
	CHECK(!repository_held(repo));
	json_decref(out);
	tt_repo_free(repo);
}

TT_TEST(checkout_lock_at_apply_leaves_planning_and_previews_unlocked)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	CHECK_OK(open_dataset(&repo));
	seen s = { 0 };
	tt_planned_cmd cmd = probe(TT_PLANNED_CHECKOUT_AT_APPLY);
	json_t *out = NULL;
	tt_planned_run run = { .out = &out };
	CHECK_OK(tt_engine_run_planned(repo, &cmd, &s, &run, &err));
	CHECK(!s.checkout_at_plan && s.checkout_at_apply);
	CHECK(!s.repository_at_apply);
	json_decref(out);

	/* a preview takes no lock at all */
	seen p = { 0 };
	char *pj = NULL, *pt = NULL;
	tt_planned_run dry = { .dry = true, .plan_json = &pj, .plan_text = &pt };
	CHECK_OK(tt_engine_run_planned(repo, &cmd, &p, &dry, &err));
	CHECK(!p.checkout_at_plan && p.applies == 0);
	free(pj);
	free(pt);

	/* a saved plan is loaded under the lock it is applied under */
	seen l = { 0 };
	char *text = saved_plan("probe");
	CHECK(text != NULL);
	tt_planned_run from = { .from = text, .from_len = strlen(text), .out = &out };
	CHECK_OK(tt_engine_run_planned(repo, &cmd, &l, &from, &err));
	CHECK(l.loads == 1 && l.checkout_at_load && l.checkout_at_apply && l.plans == 0);
	free(text);
	json_decref(out);
	tt_repo_free(repo);
}

TT_TEST(saved_plan_is_loaded_checked_and_applied_as_saved)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	CHECK_OK(open_dataset(&repo));
	seen s = { 0 };
	tt_planned_cmd cmd = probe(TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY);
	char *text = saved_plan("probe");
	CHECK(text != NULL);
	json_t *out = NULL;
	tt_planned_run run = { .from = text, .from_len = strlen(text), .out = &out };
	CHECK_OK(tt_engine_run_planned(repo, &cmd, &s, &run, &err));
	CHECK_INT(s.plans, 0);
	CHECK_INT(s.loads, 1);
	CHECK_INT(s.applies, 1);
	CHECK(s.apply_saved && s.checkout_at_load && s.repository_at_apply);
	CHECK_INT(json_integer_value(json_object_get(out, "actions")), 1);
	json_decref(out);

	/* asked to preview a saved plan: it is shown, never applied */
	seen p = { 0 };
	char *pj = NULL, *pt = NULL;
	tt_planned_run dry = { .dry = true, .from = text, .from_len = strlen(text), .plan_json = &pj,
			       .plan_text = &pt };
	CHECK_OK(tt_engine_run_planned(repo, &cmd, &p, &dry, &err));
	CHECK(p.plans == 0 && p.loads == 0 && p.applies == 0);
	CHECK(pt && strncmp(pt, "plan: probe", 11) == 0);
	free(pj);
	free(pt);
	free(text);
	tt_repo_free(repo);
}

TT_TEST(saved_plan_of_another_command_is_refused_before_any_step)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	CHECK_OK(open_dataset(&repo));
	seen s = { 0 };
	tt_planned_cmd cmd = probe(TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY);
	char *text = saved_plan("other");
	CHECK(text != NULL);
	json_t *out = (json_t *)&s; /* reset */
	tt_planned_run run = { .from = text, .from_len = strlen(text), .out = &out };
	CHECK_INT(tt_engine_run_planned(repo, &cmd, &s, &run, &err), TT_ECONFIG);
	CHECK_STR(err.message, "this is a 'other' plan, expected 'probe'");
	CHECK(out == NULL);
	CHECK(s.plans == 0 && s.loads == 0 && s.applies == 0);
	CHECK(repo->checkout_lock.fd < 0 && !repository_held(repo));
	tt_error_clear(&err);

	/* an edited plan is refused by its digest, naming the fix */
	char *p = strstr(text, "what it does");
	CHECK(p != NULL);
	memcpy(p, "what it did!", 12);
	char *q = strstr(text, "\"other\"");
	CHECK(q != NULL);
	memcpy(q, "\"probe\"", 7);
	CHECK(tt_engine_run_planned(repo, &cmd, &s, &run, &err) < 0);
	CHECK(s.applies == 0 && out == NULL);
	tt_error_clear(&err);
	free(text);
	tt_repo_free(repo);
}

TT_TEST(failing_steps_reset_outputs_and_release_the_locks)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	CHECK_OK(open_dataset(&repo));
	tt_planned_cmd cmd = probe(TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY);

	seen s = { .fail_plan = TT_ECONFIG };
	char *pj = (char *)&s, *pt = (char *)&s;
	tt_planned_run dry = { .dry = true, .plan_json = &pj, .plan_text = &pt };
	CHECK_INT(tt_engine_run_planned(repo, &cmd, &s, &dry, &err), TT_ECONFIG);
	CHECK(pj == NULL && pt == NULL && s.applies == 0);
	CHECK(repo->checkout_lock.fd < 0);
	tt_error_clear(&err);

	/* an apply that fails with nothing done leaves no result */
	seen f = { .fail_apply = TT_EBACKEND };
	json_t *out = NULL;
	tt_planned_run run = { .out = &out };
	CHECK_INT(tt_engine_run_planned(repo, &cmd, &f, &run, &err), TT_EBACKEND);
	CHECK(out == NULL);
	tt_error_clear(&err);

	/* one that took effect in part hands back what it did beside the error */
	seen h = { .fail_apply = TT_EBACKEND, .partial = true };
	CHECK_INT(tt_engine_run_planned(repo, &cmd, &h, &run, &err), TT_EBACKEND);
	CHECK(out != NULL && json_integer_value(json_object_get(out, "actions")) == 1);
	CHECK(repo->checkout_lock.fd < 0 && !repository_held(repo));
	json_decref(out);
	tt_error_clear(&err);
	tt_repo_free(repo);
}

TT_TEST(gate_runs_between_plan_and_preview_or_apply_and_can_refuse)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	CHECK_OK(open_dataset(&repo));
	tt_planned_cmd cmd = probe(TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY);
	cmd.gate = step_gate;
	/* a preview runs the gate, and shows what it recorded */
	seen s = { 0 };
	char *pj = NULL, *pt = NULL;
	tt_planned_run dry = { .dry = true, .plan_json = &pj, .plan_text = &pt };
	CHECK_OK(tt_engine_run_planned(repo, &cmd, &s, &dry, &err));
	CHECK_INT(s.gates, 1);
	CHECK_INT(s.applies, 0);
	CHECK(pj && strstr(pj, "\"gate\": \"passed\"") != NULL);
	free(pj);
	free(pt);
	/* applying: under the checkout lock, before the repository's */
	s = (seen){ 0 };
	json_t *out = NULL;
	tt_planned_run run = { .out = &out };
	CHECK_OK(tt_engine_run_planned(repo, &cmd, &s, &run, &err));
	CHECK(s.gates == 1 && s.applies == 1);
	CHECK(s.checkout_at_gate && !s.repository_at_gate);
	json_decref(out);
	/* a refusal stops everything after it, and leaves no lock held */
	s = (seen){ .fail_gate = TT_ERROR };
	out = NULL;
	CHECK(tt_engine_run_planned(repo, &cmd, &s, &run, &err) == TT_ERROR);
	CHECK(strstr(err.message, "the gate says no") != NULL);
	CHECK(s.gates == 1 && s.applies == 0 && out == NULL);
	CHECK(repo->checkout_lock.fd < 0 && !repository_held(repo));
	tt_error_clear(&err);
	tt_repo_free(repo);
}
