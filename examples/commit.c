/*
 * examples/commit.c - a planned command through the public API: preview a
 * commit (TT_PLAN_PREVIEW), print its plan, then apply exactly that saved
 * plan (TT_PLAN_APPLY), which is refused if anything it read has changed
 * since.  Prints the plan's text on stderr and the commit's result as JSON.
 *
 *   cc commit.c $(pkg-config --cflags --libs libtether) -o commit
 *   ./commit DIR "message"
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tether/tether.h>

static int fail(tt_error *err, tt_repo *repo, tt_plan_result *res)
{
	fprintf(stderr, "error: %s\n", tt_error_text(err));
	tt_error_clear(err);
	tt_plan_result_release(res);
	tt_repo_free(repo);
	return 1;
}

int main(int argc, char **argv)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	tt_commit_opts opts = TT_COMMIT_OPTS_INIT;
	tt_plan_opts plan = TT_PLAN_OPTS_INIT;
	tt_plan_result preview = TT_PLAN_RESULT_INIT, done = TT_PLAN_RESULT_INIT;
	opts.message = argc > 2 ? argv[2] : "commit from examples/commit.c";

	if (tt_repo_open(argc > 1 ? argv[1] : ".", &repo, &err) < 0)
		return fail(&err, repo, &preview);
	/* 1. the plan alone: nothing is written */
	plan.mode = TT_PLAN_PREVIEW;
	if (tt_repo_commit(repo, &opts, &plan, &preview, &err) < 0)
		return fail(&err, repo, &preview);
	fputs(preview.plan_text, stderr);
	/* 2. that plan, applied as saved (a reviewer could have read it first) */
	plan.mode = TT_PLAN_APPLY;
	plan.saved = preview.plan_json;
	plan.saved_len = strlen(preview.plan_json);
	if (tt_repo_commit(repo, &opts, &plan, &done, &err) < 0) {
		tt_plan_result_release(&done);
		return fail(&err, repo, &preview);
	}
	char *text = json_dumps(done.out, JSON_SORT_KEYS | JSON_COMPACT);
	puts(text ? text : "null");
	free(text);
	tt_plan_result_release(&preview);
	tt_plan_result_release(&done);
	tt_repo_free(repo);
	return text ? 0 : 1;
}
