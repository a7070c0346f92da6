/*
 * Public options structs carry a version (include/tether/tether.h): one of
 * another version -- an old binary's struct, or one never initialised with
 * its TT_<NAME>_OPTS_INIT -- is refused with TT_EUSAGE naming the type and
 * the macro, before the repository is looked at.
 */
#include <string.h>

#include <tether/tether.h>

#include "harness.h"

static int refused(int rc, tt_error *err, const char *type, const char *macro)
{
	int ok = rc == TT_EUSAGE && err->message && strstr(err->message, type) &&
		 strstr(err->message, "version 0") && err->hint && strstr(err->hint, macro);
	if (!ok)
		fprintf(stderr, "  %s: rc %d, %s / %s\n", type, rc, err->message ? err->message : "-",
			err->hint ? err->hint : "-");
	tt_error_clear(err);
	return ok;
}

TT_TEST(init_macros_set_the_version)
{
	tt_add_opts a = TT_ADD_OPTS_INIT;
	tt_commit_opts c = TT_COMMIT_OPTS_INIT;
	tt_new_opts n = TT_NEW_OPTS_INIT;
	tt_open_opts o = TT_OPEN_OPTS_INIT;
	tt_promote_opts p = TT_PROMOTE_OPTS_INIT;
	tt_gc_opts g = TT_GC_OPTS_INIT;
	CHECK(a.version == TT_ADD_OPTS_VERSION && c.version == TT_COMMIT_OPTS_VERSION);
	CHECK(n.version == TT_NEW_OPTS_VERSION && o.version == TT_OPEN_OPTS_VERSION);
	CHECK(p.version == TT_PROMOTE_OPTS_VERSION && g.version == TT_GC_OPTS_VERSION);
	CHECK(c.message == NULL && c.nkeys == 0 && !g.dry_run && n.eager == 0);
	tt_plan_opts pl = TT_PLAN_OPTS_INIT;
	tt_repair_opts rp = TT_REPAIR_OPTS_INIT;
	tt_restore_opts rs = TT_RESTORE_OPTS_INIT;
	tt_forget_opts fg = TT_FORGET_OPTS_INIT;
	tt_upgrade_opts up = TT_UPGRADE_OPTS_INIT;
	tt_import_opts im = TT_IMPORT_OPTS_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	CHECK(pl.version == TT_PLAN_OPTS_VERSION && pl.mode == TT_PLAN_RUN && pl.saved == NULL);
	CHECK(rp.version == TT_REPAIR_OPTS_VERSION && rs.version == TT_RESTORE_OPTS_VERSION);
	CHECK(fg.version == TT_FORGET_OPTS_VERSION && up.version == TT_UPGRADE_OPTS_VERSION);
	CHECK(im.version == TT_IMPORT_OPTS_VERSION && !g.scoped);
	CHECK(res.plan_json == NULL && res.plan_text == NULL && res.out == NULL);
	tt_set_policy_opts sp = TT_SET_POLICY_OPTS_INIT;
	tt_verify_opts vf = TT_VERIFY_OPTS_INIT;
	tt_log_opts lg = TT_LOG_OPTS_INIT;
	tt_pull_opts pu = TT_PULL_OPTS_INIT;
	tt_export_opts ex = TT_EXPORT_OPTS_INIT;
	CHECK(sp.version == TT_SET_POLICY_OPTS_VERSION && vf.version == TT_VERIFY_OPTS_VERSION && vf.flags == 0);
	CHECK(lg.version == TT_LOG_OPTS_VERSION && pu.version == TT_PULL_OPTS_VERSION);
	CHECK(ex.version == TT_EXPORT_OPTS_VERSION && !ex.listings && !ex.workspace);
}

TT_TEST(an_old_version_struct_is_refused)
{
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	tt_add_opts a = { .version = 0, .kind = "file" };
	tt_commit_opts c = { .version = 0 };
	tt_new_opts n = { .version = 0 };
	tt_open_opts o = { .version = 0 };
	tt_promote_opts p = { .version = 0 };
	tt_gc_opts g = { .version = 0, .dry_run = true };
	tt_repair_opts rp = { .version = 0 };
	tt_restore_opts rs = { .version = 0 };
	tt_forget_opts fg = { .version = 0 };
	tt_upgrade_opts up = { .version = 0 };
	tt_import_opts im = { .version = 0 };
	tt_drop_opts dr = { .version = 0 };
	tt_plan_opts preview = TT_PLAN_OPTS_INIT;
	preview.mode = TT_PLAN_PREVIEW;

	/* No repository: the version is checked before anything else. */
	CHECK(refused(tt_repo_add(NULL, &a, &out, &err), &err, "tt_add_opts", "TT_ADD_OPTS_INIT"));
	CHECK(refused(tt_repo_commit(NULL, &c, NULL, &res, &err), &err, "tt_commit_opts", "TT_COMMIT_OPTS_INIT"));
	CHECK(refused(tt_repo_commit(NULL, &c, &preview, &res, &err), &err, "tt_commit_opts",
		      "TT_COMMIT_OPTS_INIT"));
	CHECK(refused(tt_repo_new(NULL, &n, NULL, &res, &err), &err, "tt_new_opts", "TT_NEW_OPTS_INIT"));
	CHECK(refused(tt_repo_open_handle(NULL, "k", &o, &out, &err), &err, "tt_open_opts",
		      "TT_OPEN_OPTS_INIT"));
	CHECK(refused(tt_repo_promote(NULL, &p, NULL, &res, &err), &err, "tt_promote_opts",
		      "TT_PROMOTE_OPTS_INIT"));
	CHECK(refused(tt_repo_gc(NULL, &g, NULL, &res, &err), &err, "tt_gc_opts", "TT_GC_OPTS_INIT"));
	CHECK(refused(tt_repo_gc(NULL, &g, &preview, &res, &err), &err, "tt_gc_opts", "TT_GC_OPTS_INIT"));
	CHECK(refused(tt_repo_repair(NULL, &rp, NULL, &res, &err), &err, "tt_repair_opts", "TT_REPAIR_OPTS_INIT"));
	CHECK(refused(tt_repo_restore(NULL, &rs, NULL, &res, &err), &err, "tt_restore_opts",
		      "TT_RESTORE_OPTS_INIT"));
	CHECK(refused(tt_repo_forget_workspace(NULL, &fg, NULL, &res, &err), &err, "tt_forget_opts",
		      "TT_FORGET_OPTS_INIT"));
	CHECK(refused(tt_repo_upgrade(NULL, &up, NULL, &res, &err), &err, "tt_upgrade_opts",
		      "TT_UPGRADE_OPTS_INIT"));
	CHECK(refused(tt_repo_import(NULL, &im, NULL, &res, &err), &err, "tt_import_opts", "TT_IMPORT_OPTS_INIT"));
	CHECK(refused(tt_repo_drop(NULL, &dr, NULL, &res, &err), &err, "tt_drop_opts", "TT_DROP_OPTS_INIT"));
	tt_set_policy_opts sp = { .version = 0 };
	tt_verify_opts vf = { .version = 0 };
	tt_log_opts lg = { .version = 0 };
	tt_pull_opts pu = { .version = 0 };
	tt_export_opts ex = { .version = 0 };
	CHECK(refused(tt_repo_set_policy(NULL, &sp, &out, &err), &err, "tt_set_policy_opts",
		      "TT_SET_POLICY_OPTS_INIT"));
	CHECK(refused(tt_repo_verify(NULL, &vf, &out, &err), &err, "tt_verify_opts", "TT_VERIFY_OPTS_INIT"));
	CHECK(refused(tt_repo_log(NULL, &lg, &out, &err), &err, "tt_log_opts", "TT_LOG_OPTS_INIT"));
	CHECK(refused(tt_repo_pull(NULL, &pu, &out, &err), &err, "tt_pull_opts", "TT_PULL_OPTS_INIT"));
	CHECK(refused(tt_repo_export(NULL, &ex, &out, &err), &err, "tt_export_opts", "TT_EXPORT_OPTS_INIT"));
	/* and so is the plan's own struct */
	tt_commit_opts good = TT_COMMIT_OPTS_INIT;
	tt_plan_opts old = { .version = 0, .mode = TT_PLAN_PREVIEW };
	CHECK(refused(tt_repo_commit(NULL, &good, &old, &res, &err), &err, "tt_plan_opts", "TT_PLAN_OPTS_INIT"));
	/* A version from the future is refused the same way. */
	c.version = TT_COMMIT_OPTS_VERSION + 1;
	CHECK(tt_repo_commit(NULL, &c, NULL, &res, &err) == TT_EUSAGE);
	CHECK(res.out == NULL && res.plan_json == NULL && res.plan_text == NULL);
	tt_error_clear(&err);
}

/* The planned form's own misuse: no result struct, a saved plan without
 * TT_PLAN_APPLY or TT_PLAN_APPLY without one, a mode that is none of the
 * three, drop's dry_run (gc --expired's) in a planned call, and a scoped gc
 * plan that is not a preview.  Each is TT_EUSAGE before the dataset is
 * touched (none is open here). */
TT_TEST(the_planned_form_refuses_misuse)
{
	tt_error err = TT_ERROR_INIT;
	tt_plan_result res = TT_PLAN_RESULT_INIT;
	tt_commit_opts c = TT_COMMIT_OPTS_INIT;
	tt_plan_opts apply = TT_PLAN_OPTS_INIT, run_saved = TT_PLAN_OPTS_INIT, bad = TT_PLAN_OPTS_INIT;
	apply.mode = TT_PLAN_APPLY;
	run_saved.saved = "{}";
	run_saved.saved_len = 2;
	bad.mode = (tt_plan_mode)7;
	CHECK_INT(tt_repo_commit(NULL, &c, NULL, NULL, &err), TT_EUSAGE);
	CHECK(strstr(err.message, "tt_plan_result") != NULL);
	tt_error_clear(&err);
	CHECK_INT(tt_repo_commit(NULL, &c, &apply, &res, &err), TT_EUSAGE);
	CHECK(strstr(err.message, "needs the saved plan") != NULL);
	tt_error_clear(&err);
	CHECK_INT(tt_repo_commit(NULL, &c, &run_saved, &res, &err), TT_EUSAGE);
	CHECK(strstr(err.message, "only applied by TT_PLAN_APPLY") != NULL);
	tt_error_clear(&err);
	CHECK_INT(tt_repo_commit(NULL, &c, &bad, &res, &err), TT_EUSAGE);
	CHECK(strstr(err.message, "unknown tt_plan_mode") != NULL);
	tt_error_clear(&err);
	tt_drop_opts d = TT_DROP_OPTS_INIT;
	d.dry_run = true;
	CHECK_INT(tt_repo_drop(NULL, &d, NULL, &res, &err), TT_EUSAGE);
	CHECK(strstr(err.message, "gc_expired") != NULL && err.hint && strstr(err.hint, "TT_PLAN_PREVIEW"));
	tt_error_clear(&err);
	tt_gc_opts g = TT_GC_OPTS_INIT;
	g.scoped = true;
	CHECK_INT(tt_repo_gc(NULL, &g, NULL, &res, &err), TT_EUSAGE);
	CHECK(strstr(err.message, "scoped") != NULL);
	tt_error_clear(&err);
	CHECK(res.out == NULL && res.plan_json == NULL && res.plan_text == NULL);
	tt_plan_result_release(&res);
	tt_plan_result_release(NULL);
}
