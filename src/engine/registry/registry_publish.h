/*
 * engine/registry/registry_publish.h - `publish`: an export bundle upserted
 * into PostgreSQL.
 */
#ifndef TT_ENGINE_REGISTRY_REGISTRY_PUBLISH_H
#define TT_ENGINE_REGISTRY_REGISTRY_PUBLISH_H

#include <stdbool.h>

#include "engine/registry/registry.h"

/* Upsert into schema of the PostgreSQL database dsn names, in one
 * transaction; commits already there are skipped, refs / workspace /
 * tether_meta rewritten.  *report: {schema, upserted: {table: n},
 * skipped_commits, dry_run}. */
int tt_registry_publish(const tt_bundle *b, const char *dsn, const char *schema, bool dry_run,
			json_t **report, tt_error *err);

/* A dry run's report as a plan ("upsert" per table with rows, a note for
 * the commits already there): saved-plan JSON and its text. */
int tt_registry_publish_plan(const json_t *report, const char *head, char **plan_json, char **plan_text,
			     tt_error *err);

#endif
