/*
 * engine/registry/registry.h - the registry commands (experimental, as in
 * tether-vcs 0.1.0b7): a relational view of a dataset's history and the
 * way back from a registry to tracked objects.
 *
 *   export   history -> tables in SQLite, or a directory of Parquet, CSV
 *            or JSONL files (one per table, plus schema.json)
 *   publish  the same tables upserted into a PostgreSQL schema, in one
 *            transaction
 *   import   rows in the canonical object columns (key, kind, uri,
 *            locator_json, policy_file, policy_pin, at) from PostgreSQL,
 *            SQLite, CSV or JSONL -> add / update / remove manifests
 *
 * The tables (schema_version 3) and their columns, keys and types are
 * those of tether-vcs, and so are the values: identity_hash and state_hash
 * are blake(canon(identity)) and blake(canon(content state)), 16 bytes.
 * SQL goes through src/db/ only.
 *
 * This header holds the types the registry files share; each file's
 * functions are in its own header.
 */
#ifndef TT_ENGINE_REGISTRY_REGISTRY_H
#define TT_ENGINE_REGISTRY_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>
#include <tether/tether.h>

#include "util/error.h"

/* TT_REGISTRY_NOTE, what the commands say first, is in <tether/tether.h>. */

/* The tables of one export: rows as JSON objects keyed by column (JSON
 * columns hold the JSON value itself), in the tables' fixed order.  A row
 * may keep the columns it shares with other rows in a shared object under
 * TT_REG_SHARED (an objects row: everything but commit_id comes from its
 * manifest): read cells with tt_reg_row_get, whole rows with
 * tt_reg_row_full. */
#define TT_REG_SHARED "_shared"
typedef struct tt_bundle {
	json_t *tables;      /* {name: [row, ...]}, every table present */
	char *head;          /* the working copy's commit, or NULL */
	char exported_at[32];
} tt_bundle;

/* tt_export_opts, what an export takes, is the public one (tether.h). */

#endif
