/*
 * engine/registry/registry_write.h - writing an export bundle to files.
 */
#ifndef TT_ENGINE_REGISTRY_REGISTRY_WRITE_H
#define TT_ENGINE_REGISTRY_REGISTRY_WRITE_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/registry/registry.h"

/* Write the bundle: format "sqlite" (path a file; append upserts into an
 * existing one instead of replacing it) or "parquet" / "csv" / "jsonl"
 * (path a directory).  *nfiles: the files written. */
int tt_registry_write(const tt_bundle *b, const char *path, const char *format, bool append,
		      size_t *nfiles, tt_error *err);

#endif
