/*
 * engine/api/frontend.c - the public entry points the `tether` command line
 * needs beyond the commands themselves (see tether.h, "for front ends"):
 * with them src/cli/ is built on <tether/tether.h> and src/util/ alone.
 * Each is a thin view over the engine's own halves.
 */
#include <stdlib.h>
#include <string.h>

#include <tether/tether.h>

#include "core/plan.h"
#include "core/pyvalue.h"
#include "engine/registry/registry.h"
#include "engine/kernel/repo.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/registry/registry_publish.h"
#include "engine/registry/registry_import.h"

const char *tt_compat_version(void) { return TT_PLAN_TETHER_VERSION; }

int tt_repo_bookmarks(tt_repo *repo, json_t **out, tt_error *err)
{
	*out = NULL;
	return tt_vcs_bookmarks(repo->vcs, out, err);
}

const char *tt_repo_secret_setting(const tt_repo *repo, const char *table, const char *key)
{
	return json_string_value(json_object_get(json_object_get(repo->secrets.doc, table), key));
}

int tt_plan_command_of(const char *plan_json, size_t len, char **command, tt_error *err)
{
	tt_plan *plan = NULL;
	*command = NULL;
	int rc = tt_plan_parse(&plan, plan_json, len, err);
	if (rc < 0)
		return rc;
	const char *name = tt_plan_command(plan);
	*command = tt_strdup(name ? name : "");
	tt_plan_free(plan);
	return *command ? 0 : tt_error_oom(err);
}

bool tt_plan_action_writes(const char *op) { return op && tt_plan_op_writes(op); }

char *tt_repr_str(const char *s) { return tt_pyv_repr_dup(s); }

int tt_export_publish_plan(const json_t *report, const char *head, char **plan_json, char **plan_text,
			   tt_error *err)
{
	*plan_json = *plan_text = NULL;
	return tt_registry_publish_plan(report, head, plan_json, plan_text, err);
}

int tt_import_read_rows(const char *source, const char *table, const char *query, json_t **rows,
			tt_error *err)
{
	*rows = NULL;
	return tt_registry_read_source(source, table, query, rows, err);
}
