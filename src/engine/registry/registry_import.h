/*
 * engine/registry/registry_import.h - `import`: rows back to tracked objects.
 */
#ifndef TT_ENGINE_REGISTRY_REGISTRY_IMPORT_H
#define TT_ENGINE_REGISTRY_REGISTRY_IMPORT_H

#include <stdbool.h>

#include "engine/registry/registry.h"

/* import's halves.  Rows come from source (a PostgreSQL DSN, SQLite file,
 * .csv, .jsonl / .ndjson); a SQL source needs exactly one of table or
 * query, and the query runs alone in a read-only transaction. */
int tt_registry_read_source(const char *source, const char *table, const char *query, json_t **rows,
			    tt_error *err);
/* Is source read with SQL (a DSN or a SQLite file, not .csv / .jsonl)? */
bool tt_registry_sql_source(const char *source);
/* import as a planned command (engine/kernel/planned.h), its context the rows:
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
