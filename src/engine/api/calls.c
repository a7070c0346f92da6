/*
 * engine/api/calls.c - the public calls that take an options struct (tether.h)
 * for what used to be a run of parameters: each checks the struct's version
 * and hands its fields to the engine's own call.
 */
#include <stddef.h>

#include "engine/cmd/history.h"
#include "engine/cmd/objects.h"
#include "engine/cmd/pull.h"
#include "engine/kernel/repo.h"

int tt_repo_set_policy(tt_repo *repo, const tt_set_policy_opts *opts, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(opts, tt_set_policy_opts, TT_SET_POLICY_OPTS_VERSION, err);
	tt_set_policy_opts o = TT_SET_POLICY_OPTS_INIT;
	if (opts)
		o = *opts;
	return tt_engine_repo_set_policy(repo, o.keys, o.nkeys, o.file_policy, o.pin_policy, out, err);
}

int tt_repo_verify(tt_repo *repo, const tt_verify_opts *opts, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(opts, tt_verify_opts, TT_VERIFY_OPTS_VERSION, err);
	tt_verify_opts o = TT_VERIFY_OPTS_INIT;
	if (opts)
		o = *opts;
	return tt_engine_repo_verify(repo, o.selectors, o.nselectors, o.rev, (o.flags & TT_VERIFY_DEEP) != 0,
				     (o.flags & TT_VERIFY_ALL_HISTORY) != 0, out, err);
}

int tt_repo_log(tt_repo *repo, const tt_log_opts *opts, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(opts, tt_log_opts, TT_LOG_OPTS_VERSION, err);
	tt_log_opts o = TT_LOG_OPTS_INIT;
	if (opts)
		o = *opts;
	return tt_engine_repo_log(repo, o.key, o.kind, o.locator, o.ref, o.limit, out, err);
}

int tt_repo_pull(tt_repo *repo, const tt_pull_opts *opts, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(opts, tt_pull_opts, TT_PULL_OPTS_VERSION, err);
	tt_pull_opts o = TT_PULL_OPTS_INIT;
	if (opts)
		o = *opts;
	return tt_engine_repo_pull(repo, o.bookmark, o.selectors, o.nselectors, o.message, out, err);
}
