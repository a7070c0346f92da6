/*
 * engine/registry/registry_export.h - the export tables (their columns,
 * keys and views) and how a dataset's history fills them.
 */
#ifndef TT_ENGINE_REGISTRY_REGISTRY_EXPORT_H
#define TT_ENGINE_REGISTRY_REGISTRY_EXPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/registry/registry.h"

int tt_registry_build(tt_repo *repo, const tt_export_opts *o, tt_bundle *out, tt_error *err);
void tt_bundle_release(tt_bundle *b);

/* --- the table definitions every target shares  --------------------- */
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

#endif
