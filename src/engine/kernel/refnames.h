/*
 * engine/kernel/refnames.h - the names of the working refs tether makes
 * (tether.ws.<ds8>.<slug>), taken apart.
 */
#ifndef TT_ENGINE_KERNEL_REFNAMES_H
#define TT_ENGINE_KERNEL_REFNAMES_H

#include <stdbool.h>

#include "core/ids.h"

/* A tether.ws.<ds8>.<rest> name, taken apart. */
typedef struct tt_ref_parts {
	char ds[TT_DATASET_ID_LEN + 1];
	char *slug;       /* bookmark slug, NULL for a legacy per-workspace ref */
	char *legacy_ws;  /* 8-hex workspace of a legacy ref, else NULL */
} tt_ref_parts;

/* A sibling generation ".<n>" is parsed off and a legacy "<ws8>.<slug>"
 * recognized.  False for anything else (nothing to release then). */
bool tt_working_ref_parts(const char *ref, tt_ref_parts *out);
void tt_ref_parts_release(tt_ref_parts *p);

#endif
