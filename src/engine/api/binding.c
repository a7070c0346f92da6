/*
 * engine/api/binding.c - the public entry points a language binding needs for
 * tether-vcs's Python API beyond the commands: gc's scoped plan and the
 * registry (export, publish, import), over the engine's own halves.
 */
#include "engine/api/binding.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tether/tether.h>

#include "core/plan.h"
#include "engine/kernel/planned.h"
#include "engine/registry/registry.h"
#include "engine/kernel/repo.h"
#include "util/buf.h"
#include "engine/gc/gc_plan.h"
#include "engine/registry/registry_export.h"
#include "engine/registry/registry_import.h"
#include "engine/registry/registry_publish.h"
#include "engine/registry/registry_write.h"

int tt_engine_repo_plan_gc_scoped(tt_repo *repo, const tt_gc_opts *o, const char *const *bookmarks, size_t nbookmarks,
			   const char *const *excluded, size_t nexcluded, const char *const *gone, size_t ngone,
			   char **plan_json, char **plan_text, tt_error *err)
{
	TT_CHECK_OPTS(o, tt_gc_opts, TT_GC_OPTS_VERSION, err);
	tt_gc_scope scope = { .bookmarks = nbookmarks ? bookmarks : NULL, .nbookmarks = nbookmarks,
			      .excluded_commits = excluded, .nexcluded = nexcluded, .gone_bookmarks = gone,
			      .ngone = ngone };
	tt_plan *plan = NULL;
	int rc;
	*plan_json = *plan_text = NULL;
	if ((rc = tt_gc_plan_scoped(repo, o, &scope, &plan, err)) == 0)
		rc = tt_engine_render_plan(plan, plan_json, plan_text, err);
	tt_plan_free(plan);
	return rc;
}

int tt_repo_export(tt_repo *repo, const tt_export_opts *opts, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(opts, tt_export_opts, TT_EXPORT_OPTS_VERSION, err);
	tt_export_opts o = TT_EXPORT_OPTS_INIT;
	if (opts)
		o = *opts;
	if (!o.nrevs)
		o.revs = NULL;
	tt_bundle b;
	*out = NULL;
	memset(&b, 0, sizeof b);
	int rc = tt_registry_build(repo, &o, &b, err);
	if (rc < 0) {
		if (b.tables)
			tt_bundle_release(&b);
		return rc;
	}
	json_t *tables = json_object();
	for (size_t t = 0; tables && t < tt_reg_ntables; t++) {
		const char *name = tt_reg_tables[t].name;
		json_t *rows = json_object_get(b.tables, name), *full = json_array(), *row;
		size_t i;
		json_array_foreach(rows, i, row)
			json_array_append_new(full, tt_reg_row_full(row));
		json_object_set_new(tables, name, full);
	}
	*out = json_pack("{s:o?,s:s?,s:s}", "tables", tables, "head", b.head, "exported_at", b.exported_at);
	tt_bundle_release(&b);
	return *out ? 0 : tt_error_oom(err);
}

/* A bundle from an export's JSON (borrowed parts), every table present. */
static int bundle_view(const json_t *bundle, tt_bundle *b, tt_error *err)
{
	memset(b, 0, sizeof *b);
	json_t *tables = json_object_get(bundle, "tables");
	if (!json_is_object(tables))
		return tt_error_set(err, TT_EUSAGE, "[export] not an export: no tables (make one with Repo.export)");
	for (size_t t = 0; t < tt_reg_ntables; t++)
		if (!json_is_array(json_object_get(tables, tt_reg_tables[t].name)))
			return tt_error_set(err, TT_EUSAGE, "[export] table %s missing: write what Repo.export made",
					    tt_reg_tables[t].name);
	b->tables = tables;
	b->head = (char *)json_string_value(json_object_get(bundle, "head"));
	const char *at = json_string_value(json_object_get(bundle, "exported_at"));
	snprintf(b->exported_at, sizeof b->exported_at, "%s", at ? at : "");
	return 0;
}

int tt_export_write(const json_t *bundle, const char *path, const char *format, bool append, size_t *nfiles,
		    tt_error *err)
{
	tt_bundle b;
	size_t n = 0;
	int rc = bundle_view(bundle, &b, err);
	if (rc == 0)
		rc = tt_registry_write(&b, path, format, append, &n, err);
	if (nfiles)
		*nfiles = n;
	return rc;
}

int tt_export_publish(const json_t *bundle, const char *dsn, const char *schema, bool dry_run, json_t **report,
		      tt_error *err)
{
	tt_bundle b;
	*report = NULL;
	int rc = bundle_view(bundle, &b, err);
	return rc < 0 ? rc : tt_registry_publish(&b, dsn, schema, dry_run, report, err);
}

int tt_engine_repo_plan_import(tt_repo *repo, const json_t *rows, bool sync, char **plan_json, char **plan_text,
			tt_error *err)
{
	tt_import_rows ctx = { rows, sync };
	tt_planned_run run = { .dry = true, .plan_json = plan_json, .plan_text = plan_text };
	return tt_engine_run_planned(repo, &tt_registry_import_cmd, &ctx, &run, err);
}

int tt_engine_repo_apply_import(tt_repo *repo, const char *plan_json, size_t len, json_t **out, tt_error *err)
{
	tt_planned_run run = { .from = plan_json, .from_len = len, .out = out };
	return tt_engine_run_planned(repo, &tt_registry_import_cmd, NULL, &run, err);
}
