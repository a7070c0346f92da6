/*
 * engine/kernel/planned.h - the one driver of a planned command.
 *
 * Every store-writing command that can be previewed (`--dry-run`), saved
 * (`--plan FILE`) and applied later (`--from-plan FILE`) is the same three
 * steps: make a plan (or load a saved one, which must be a plan of this
 * command), stop there when only previewing, else apply it - under the
 * locks the command names.  A command declares those pieces in a
 * tt_planned_cmd; tt_engine_run_planned runs them, so the order of locking,
 * loading, checking and rendering is written once.
 */
#ifndef TT_ENGINE_PLANNED_H
#define TT_ENGINE_PLANNED_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "core/plan.h"
#include "engine/kernel/handle.h"

/* When the command's locks are held (flags). */
enum {
	/* The checkout lock (tt_repo_lock, which also re-reads the checkout),
	 * from planning - or loading the saved plan - to the end, previews
	 * included. */
	TT_PLANNED_CHECKOUT = 1u << 0,
	/* The checkout lock around loading and applying only: planning reads
	 * without it (a preview writes nothing, and takes no lock). */
	TT_PLANNED_CHECKOUT_AT_APPLY = 1u << 1,
	/* The repository lock (tt_engine_repo_lock) around applying: one
	 * clone's checkouts take turns. */
	TT_PLANNED_REPOSITORY = 1u << 2,
	/* With TT_PLANNED_REPOSITORY: taken before planning too when the fresh
	 * plan is to be applied (the plan step may then change what it reads:
	 * gc closes interrupted operations first). */
	TT_PLANNED_REPOSITORY_EARLY = 1u << 3,
};

typedef struct tt_planned_cmd {
	const char *command;  /* the plans' "command": a saved plan of another is refused */
	unsigned locks;       /* TT_PLANNED_* */
	/* A fresh plan.  applying: it is applied right after (not a preview). */
	int (*plan)(tt_repo *repo, void *ctx, bool applying, tt_plan **out, tt_error *err);
	/* Optional: checks of a saved plan before it is applied, under the
	 * checkout lock when the command takes one. */
	int (*load)(tt_repo *repo, void *ctx, tt_plan *plan, tt_error *err);
	/* Optional: a gate between the plan (made or loaded) and its preview
	 * or apply, under the checkout lock when the command takes one: may
	 * refuse the plan, and may record in it what it found (promote's
	 * --check). */
	int (*gate)(tt_repo *repo, void *ctx, tt_plan *plan, tt_error *err);
	/* Apply.  saved: the plan was loaded, so what it expected is checked
	 * again.  *out (out may be NULL) may be set even when it fails: what
	 * took effect of a partial success. */
	int (*apply)(tt_repo *repo, void *ctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err);
	/* Optional: a preview as a report instead of the plan's JSON and text
	 * (tt_planned_run.plan_json NULL). */
	json_t *(*preview)(const tt_plan *plan);
} tt_planned_cmd;

typedef struct tt_planned_run {
	bool dry;                        /* preview only: with from, of the saved plan */
	const char *from;                /* a saved plan's JSON to apply, or NULL */
	size_t from_len;
	char **plan_json, **plan_text;   /* a preview: the plan (both or neither) */
	json_t **out;                    /* what was applied, or the preview report; may be NULL */
} tt_planned_run;

/*
 * Run cmd with ctx (the command's options): plan or load, then preview or
 * apply, under cmd->locks.  Every out-parameter of run is reset first.
 * Returns 0 or a negative tt_code with err set naming what failed.
 */
int tt_engine_run_planned(tt_repo *repo, const tt_planned_cmd *cmd, void *ctx, const tt_planned_run *run,
			  tt_error *err);

/* A plan as its saved JSON and its text rendering (both allocated). */
int tt_engine_render_plan(const tt_plan *plan, char **plan_json, char **plan_text, tt_error *err);

#endif
