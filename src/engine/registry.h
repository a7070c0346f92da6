/*
 * engine/registry.h - the registry commands (experimental, as in
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
 */
#ifndef TT_ENGINE_REGISTRY_H
#define TT_ENGINE_REGISTRY_H

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

typedef struct tt_export_opts {
	const char *const *revs;  /* NULL / 0: every reachable commit */
	size_t nrevs;
	bool listings;
	bool workspace;
} tt_export_opts;

int tt_registry_build(tt_repo *repo, const tt_export_opts *o, tt_bundle *out, tt_error *err);
void tt_bundle_release(tt_bundle *b);

/* Write the bundle: format "sqlite" (path a file; append upserts into an
 * existing one instead of replacing it) or "parquet" / "csv" / "jsonl"
 * (path a directory).  *nfiles: the files written. */
int tt_registry_write(const tt_bundle *b, const char *path, const char *format, bool append,
		      size_t *nfiles, tt_error *err);

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

/* import's halves.  Rows come from source (a PostgreSQL DSN, SQLite file,
 * .csv, .jsonl / .ndjson); a SQL source needs exactly one of table or
 * query, and the query runs alone in a read-only transaction. */
int tt_registry_read_source(const char *source, const char *table, const char *query, json_t **rows,
			    tt_error *err);
/* Is source read with SQL (a DSN or a SQLite file, not .csv / .jsonl)? */
bool tt_registry_sql_source(const char *source);
/* import as a planned command (engine/planned.h), its context the rows:
 * the plan adds / updates / removes (sync) objects; applying it is
 * journaled as "import", undoable, *out {added, updated, removed,
 * unchanged}. */
typedef struct tt_import_rows {
	const json_t *rows;
	bool sync;
} tt_import_rows;
struct tt_planned_cmd;
extern const struct tt_planned_cmd tt_registry_import_cmd;

#endif

/* --- the table definitions every target shares (registry_export.c) ------- */
typedef enum tt_reg_type { TT_REG_TEXT, TT_REG_INT, TT_REG_BOOL, TT_REG_JSON, TT_REG_TIMESTAMP } tt_reg_type;
typedef struct tt_reg_column {
	const char *name;
	tt_reg_type type;
	const char *doc;
} tt_reg_column;
typedef struct tt_reg_table {
	const char *name;
	const tt_reg_column *columns;
	size_t ncolumns;
	const char *const *primary_key;  /* NULL-terminated */
	const char *doc;
} tt_reg_table;
#define TT_REG_SCHEMA_VERSION 3
extern const tt_reg_table tt_reg_tables[];
extern const size_t tt_reg_ntables;
/* Commit-keyed tables (publish skips commits already present) and the ones
 * rewritten on every export / publish. */
bool tt_reg_commit_keyed(const char *table);
bool tt_reg_replaced_wholesale(const char *table);
/* The views, "{q}" standing for the schema qualifier. */
extern const char *const tt_reg_views[][2];
extern const size_t tt_reg_nviews;
/* A cell as text for SQL and CSV: NULL for null, JSON columns as compact
 * sorted ASCII JSON, booleans as sqlite ("1"/"0"), csv ("True"/"False") or
 * postgres ("true"/"false"), integers in decimal.  Caller frees. */
char *tt_reg_cell_text(const tt_reg_column *c, const json_t *v, const char *dialect);
/* A row's cell (borrowed; NULL when absent), looking through TT_REG_SHARED. */
json_t *tt_reg_row_get(const json_t *row, const char *column);
/* The row with its shared columns merged in (a new reference). */
json_t *tt_reg_row_full(const json_t *row);
