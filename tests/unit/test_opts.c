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
}

TT_TEST(an_old_version_struct_is_refused)
{
	tt_error err = TT_ERROR_INIT;
	json_t *out = NULL;
	char *pj = NULL, *pt = NULL;
	tt_add_opts a = { .version = 0, .kind = "file" };
	tt_commit_opts c = { .version = 0 };
	tt_new_opts n = { .version = 0 };
	tt_open_opts o = { .version = 0 };
	tt_promote_opts p = { .version = 0 };
	tt_gc_opts g = { .version = 0, .dry_run = true };

	/* No repository: the version is checked before anything else. */
	CHECK(refused(tt_repo_add(NULL, &a, &out, &err), &err, "tt_add_opts", "TT_ADD_OPTS_INIT"));
	CHECK(refused(tt_repo_commit(NULL, &c, &out, &err), &err, "tt_commit_opts", "TT_COMMIT_OPTS_INIT"));
	CHECK(refused(tt_repo_plan_commit(NULL, &c, &pj, &pt, &err), &err, "tt_commit_opts",
		      "TT_COMMIT_OPTS_INIT"));
	CHECK(refused(tt_repo_new(NULL, &n, NULL, 0, NULL, NULL, &out, &err), &err, "tt_new_opts",
		      "TT_NEW_OPTS_INIT"));
	CHECK(refused(tt_repo_open_handle(NULL, "k", &o, &out, &err), &err, "tt_open_opts",
		      "TT_OPEN_OPTS_INIT"));
	CHECK(refused(tt_repo_promote(NULL, &p, NULL, 0, NULL, NULL, &out, &err), &err, "tt_promote_opts",
		      "TT_PROMOTE_OPTS_INIT"));
	CHECK(refused(tt_repo_gc(NULL, &g, &out, &err), &err, "tt_gc_opts", "TT_GC_OPTS_INIT"));
	CHECK(refused(tt_repo_plan_gc(NULL, &g, &pj, &pt, &err), &err, "tt_gc_opts", "TT_GC_OPTS_INIT"));
	CHECK(refused(tt_repo_plan_gc_scoped(NULL, &g, NULL, 0, NULL, 0, NULL, 0, &pj, &pt, &err), &err,
		      "tt_gc_opts", "TT_GC_OPTS_INIT"));
	/* A version from the future is refused the same way. */
	c.version = TT_COMMIT_OPTS_VERSION + 1;
	CHECK(tt_repo_commit(NULL, &c, &out, &err) == TT_EUSAGE);
	CHECK(out == NULL && pj == NULL && pt == NULL);
	tt_error_clear(&err);
}
