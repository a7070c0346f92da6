/*
 * backends/file/prefix.h - a prefix's listing in an object store, as the
 * `file` kind fingerprints it (see prefix.c).
 */
#ifndef TT_BACKENDS_FILE_PREFIX_H
#define TT_BACKENDS_FILE_PREFIX_H

#include <stdbool.h>
#include <stddef.h>

#include "backends/file/file.h"
#include "storage/store.h"
#include "util/error.h"

/*
 * The listing of prefix (whole segments, '/'-ended, or "" for the bucket)
 * in s: tree's count, size and digest are tether-vcs's over the sorted
 * (name, ETag) pairs, read again until two readings agree where the prefix
 * changed while its pages were read.  uri names the object in errors.
 * The rows themselves are kept only up to keep_max of them (SIZE_MAX:
 * all): past it tree->rows and tree->names are NULL while tree->n counts
 * every row, so a listing of any length is read in bounded memory.
 * Caller releases tree.
 */
int tt_file_prefix_list(tt_store *s, const char *uri, const char *prefix, size_t keep_max,
			tt_file_tree *tree, tt_error *err);

/* For tests: the most listing entries held in memory at once (pages
 * listed and not yet read, plus rows kept) since the last reset. */
size_t tt_file_prefix_held_peak(bool reset);
/* For tests: of the last listing in key ranges, the most requests it let
 * fly at once, how often it widened and how often it backed off. */
void tt_file_prefix_pace(size_t *widest, size_t *widened, size_t *backed_off);

#endif
