/*
 * engine/kernel/keyhint.h - "did you mean" for object keys.
 */
#ifndef TT_ENGINE_KERNEL_KEYHINT_H
#define TT_ENGINE_KERNEL_KEYHINT_H

#include "core/manifest.h"
#include "util/error.h"

/* After "no such object: KEY": attach a hint naming the registered key
 * closest to key (edit distance), when one is close and err has no hint
 * yet.  Returns err->code. */
int tt_engine_key_hint(tt_error *err, const tt_manifest_set *set, const char *key);

#endif
