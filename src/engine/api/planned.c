/*
 * engine/api/planned.c - the one public form of every planned command
 * (tether.h, "planned commands"): a command's options, a tt_plan_opts that
 * says whether to run, preview or apply a saved plan, and a tt_plan_result
 * for what comes back.  Each call checks the structs' versions and hands
 * the mode to the engine's half that runs it.
 */
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

#include "engine/api/binding.h"
#include "engine/cmd/commit.h"
#include "engine/cmd/drop.h"
#include "engine/cmd/forget.h"
#include "engine/cmd/fork.h"
#include "engine/cmd/promote.h"
#include "engine/cmd/repair.h"
#include "engine/cmd/restore.h"
#include "engine/cmd/upgrade.h"
#include "engine/gc/gc.h"
#include "engine/kernel/repo.h"

void tt_plan_result_release(tt_plan_result *res)
{
	if (!res)
		return;
	free(res->plan_json);
	free(res->plan_text);
	json_decref(res->out);
	res->plan_json = res->plan_text = NULL;
	res->out = NULL;
}

/* TT_EUSAGE with msg and, when there is one, the fix. */
static int usage(tt_error *err, const char *msg, const char *hint)
{
	tt_error_set(err, TT_EUSAGE, "%s", msg);
	return hint ? tt_error_hint(err, "%s", hint) : TT_EUSAGE;
}

/* The mode plan asks for (NULL: run), after the checks every planned call
 * makes: the struct's version, a saved plan exactly when applying one, and
 * somewhere for the results. */
static int plan_mode(const tt_plan_opts *plan, tt_plan_result *res, tt_plan_mode *mode, tt_error *err)
{
	if (!res)
		return usage(err, "a planned call needs a tt_plan_result for its results",
				    "pass one set with TT_PLAN_RESULT_INIT");
	res->plan_json = res->plan_text = NULL;
	res->out = NULL;
	TT_CHECK_OPTS(plan, tt_plan_opts, TT_PLAN_OPTS_VERSION, err);
	*mode = plan ? plan->mode : TT_PLAN_RUN;
	if (*mode != TT_PLAN_RUN && *mode != TT_PLAN_PREVIEW && *mode != TT_PLAN_APPLY)
		return usage(err, "unknown tt_plan_mode", "use TT_PLAN_RUN, TT_PLAN_PREVIEW or TT_PLAN_APPLY");
	if ((*mode == TT_PLAN_APPLY) != (plan && plan->saved != NULL))
		return usage(err,
			     *mode == TT_PLAN_APPLY ? "TT_PLAN_APPLY needs the saved plan (tt_plan_opts.saved)"
						    : "a saved plan (tt_plan_opts.saved) is only applied by TT_PLAN_APPLY",
			     NULL);
	return 0;
}

/* The saved plan of TT_PLAN_APPLY as the engine's halves take it (from_plan
 * and its length); NULL and 0 otherwise. */
#define SAVED(plan, mode) ((mode) == TT_PLAN_APPLY ? (plan)->saved : NULL), \
			  ((mode) == TT_PLAN_APPLY ? (plan)->saved_len : 0)

int tt_repo_commit(tt_repo *repo, const tt_commit_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		   tt_error *err)
{
	tt_plan_mode mode;
	int rc = plan_mode(plan, res, &mode, err);
	if (rc < 0)
		return rc;
	if (mode == TT_PLAN_PREVIEW)
		return tt_engine_repo_plan_commit(repo, opts, &res->plan_json, &res->plan_text, err);
	if (mode == TT_PLAN_RUN)
		return tt_engine_repo_commit(repo, opts, &res->out, err);
	TT_CHECK_OPTS(opts, tt_commit_opts, TT_COMMIT_OPTS_VERSION, err);
	return tt_engine_repo_apply_commit_plan(repo, plan->saved, plan->saved_len, opts ? opts->message : NULL,
						opts ? opts->keys : NULL, opts ? opts->nkeys : 0,
						opts && opts->no_vcs, &res->out, err);
}

int tt_repo_new(tt_repo *repo, const tt_new_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		tt_error *err)
{
	tt_plan_mode mode;
	int rc = plan_mode(plan, res, &mode, err);
	if (rc < 0)
		return rc;
	bool preview = mode == TT_PLAN_PREVIEW;
	return tt_engine_repo_new(repo, opts, SAVED(plan, mode), preview ? &res->plan_json : NULL,
				  preview ? &res->plan_text : NULL, preview ? NULL : &res->out, err);
}

int tt_repo_promote(tt_repo *repo, const tt_promote_opts *opts, const tt_plan_opts *plan,
		    tt_plan_result *res, tt_error *err)
{
	tt_plan_mode mode;
	int rc = plan_mode(plan, res, &mode, err);
	if (rc < 0)
		return rc;
	bool preview = mode == TT_PLAN_PREVIEW;
	return tt_engine_repo_promote(repo, opts, SAVED(plan, mode), preview ? &res->plan_json : NULL,
				      preview ? &res->plan_text : NULL, preview ? NULL : &res->out, err);
}

/* The engine's halves that take dry_run and fill plan_json / plan_text
 * either way: a preview keeps the plan, a run or an apply only *out. */
static void keep_plan_only_in_preview(tt_plan_mode mode, tt_plan_result *res)
{
	if (mode == TT_PLAN_PREVIEW) {
		json_decref(res->out);
		res->out = NULL;
		return;
	}
	free(res->plan_json);
	free(res->plan_text);
	res->plan_json = res->plan_text = NULL;
}

int tt_repo_repair(tt_repo *repo, const tt_repair_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		   tt_error *err)
{
	tt_plan_mode mode;
	int rc = plan_mode(plan, res, &mode, err);
	if (rc < 0)
		return rc;
	TT_CHECK_OPTS(opts, tt_repair_opts, TT_REPAIR_OPTS_VERSION, err);
	rc = tt_engine_repo_repair(repo, opts ? opts->selectors : NULL, opts ? opts->nselectors : 0,
				   opts && opts->all_history, mode == TT_PLAN_PREVIEW, SAVED(plan, mode), &res->plan_json,
				   &res->plan_text, &res->out, err);
	if (rc == 0)
		keep_plan_only_in_preview(mode, res);
	return rc;
}

int tt_repo_restore(tt_repo *repo, const tt_restore_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		    tt_error *err)
{
	tt_plan_mode mode;
	int rc = plan_mode(plan, res, &mode, err);
	if (rc < 0)
		return rc;
	TT_CHECK_OPTS(opts, tt_restore_opts, TT_RESTORE_OPTS_VERSION, err);
	rc = tt_engine_repo_restore(repo, opts ? opts->selectors : NULL, opts ? opts->nselectors : 0,
				    opts ? opts->rev : NULL, opts ? opts->at : NULL, opts && opts->discard,
				    mode == TT_PLAN_PREVIEW, SAVED(plan, mode), &res->plan_json, &res->plan_text, &res->out,
				    err);
	if (rc == 0)
		keep_plan_only_in_preview(mode, res);
	return rc;
}

int tt_repo_forget_workspace(tt_repo *repo, const tt_forget_opts *opts, const tt_plan_opts *plan,
			     tt_plan_result *res, tt_error *err)
{
	tt_plan_mode mode;
	int rc = plan_mode(plan, res, &mode, err);
	if (rc < 0)
		return rc;
	TT_CHECK_OPTS(opts, tt_forget_opts, TT_FORGET_OPTS_VERSION, err);
	rc = tt_engine_repo_forget_workspace(repo, opts ? opts->workspace_id : NULL, mode == TT_PLAN_PREVIEW, SAVED(plan, mode),
					      &res->plan_json, &res->plan_text, &res->out, err);
	if (rc == 0)
		keep_plan_only_in_preview(mode, res);
	return rc;
}

int tt_repo_drop(tt_repo *repo, const tt_drop_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		 tt_error *err)
{
	tt_plan_mode mode;
	int rc = plan_mode(plan, res, &mode, err);
	if (rc < 0)
		return rc;
	TT_CHECK_OPTS(opts, tt_drop_opts, TT_DROP_OPTS_VERSION, err);
	if (opts && opts->dry_run)
		return usage(err, "tt_drop_opts.dry_run is tt_repo_gc_expired's",
				    "preview a drop with TT_PLAN_PREVIEW");
	tt_drop_opts o = TT_DROP_OPTS_INIT;
	if (opts)
		o = *opts;
	o.dry_run = mode == TT_PLAN_PREVIEW;
	rc = tt_engine_repo_drop(repo, opts ? &o : NULL, SAVED(plan, mode), &res->plan_json, &res->plan_text, &res->out,
				 err);
	if (rc == 0)
		keep_plan_only_in_preview(mode, res);
	return rc;
}

int tt_repo_upgrade(tt_repo *repo, const tt_upgrade_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		    tt_error *err)
{
	tt_plan_mode mode;
	int rc = plan_mode(plan, res, &mode, err);
	if (rc < 0)
		return rc;
	TT_CHECK_OPTS(opts, tt_upgrade_opts, TT_UPGRADE_OPTS_VERSION, err);
	rc = tt_engine_repo_upgrade(repo, opts && opts->ignore_immutable, mode == TT_PLAN_PREVIEW, SAVED(plan, mode),
				    &res->plan_json, &res->plan_text, &res->out, err);
	if (rc == 0)
		keep_plan_only_in_preview(mode, res);
	return rc;
}

int tt_repo_gc(tt_repo *repo, const tt_gc_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
	       tt_error *err)
{
	tt_plan_mode mode;
	int rc = plan_mode(plan, res, &mode, err);
	if (rc < 0)
		return rc;
	TT_CHECK_OPTS(opts, tt_gc_opts, TT_GC_OPTS_VERSION, err);
	if (opts && opts->scoped && mode != TT_PLAN_PREVIEW)
		return usage(err, "a scoped gc plan (tt_gc_opts.scoped) is a preview",
				    "ask for it with TT_PLAN_PREVIEW");
	if (mode == TT_PLAN_APPLY)
		return tt_engine_repo_apply_gc_plan(repo, plan->saved, plan->saved_len, &res->out, err);
	if (mode == TT_PLAN_RUN)
		return tt_engine_repo_gc(repo, opts, &res->out, err);
	if (opts && opts->scoped)
		return tt_engine_repo_plan_gc_scoped(repo, opts, opts->scope_bookmarks, opts->nscope_bookmarks,
						     opts->excluded_commits, opts->nexcluded, opts->gone_bookmarks,
						     opts->ngone, &res->plan_json, &res->plan_text, err);
	return tt_engine_repo_plan_gc(repo, opts, &res->plan_json, &res->plan_text, err);
}

int tt_repo_import(tt_repo *repo, const tt_import_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		   tt_error *err)
{
	tt_plan_mode mode;
	int rc = plan_mode(plan, res, &mode, err);
	if (rc < 0)
		return rc;
	TT_CHECK_OPTS(opts, tt_import_opts, TT_IMPORT_OPTS_VERSION, err);
	if (mode == TT_PLAN_APPLY)
		return tt_engine_repo_apply_import(repo, plan->saved, plan->saved_len, &res->out, err);
	if (!opts || !opts->rows)
		return usage(err, "import needs its rows (tt_import_opts.rows)", NULL);
	if ((rc = tt_engine_repo_plan_import(repo, opts->rows, opts->sync, &res->plan_json, &res->plan_text,
					     err)) < 0 || mode == TT_PLAN_PREVIEW)
		return rc;
	rc = tt_engine_repo_apply_import(repo, res->plan_json, strlen(res->plan_json), &res->out, err);
	keep_plan_only_in_preview(mode, res);
	return rc;
}
