/*
 * util/pool.h - fan-out over a fixed set of worker threads.
 *
 * tt_pool_map() runs fn(i, ctx) for i in [0, n) on up to `threads` workers
 * (0: the number of online CPUs) and returns when all are done.  Items are
 * handed out one at a time, so slow items do not hold up the rest.  Each
 * call must write only to its own slot of whatever ctx points at.
 *
 * The calling thread is one of the workers; with n <= 1 or one thread
 * everything runs inline.  A helper thread that cannot be created only
 * means fewer workers, never an error; TT_EUSAGE when fn is NULL.
 */
#ifndef TT_UTIL_POOL_H
#define TT_UTIL_POOL_H

#include <stddef.h>

#include "util/error.h"

typedef void (*tt_pool_fn)(size_t index, void *ctx);

int tt_pool_map(size_t n, unsigned threads, tt_pool_fn fn, void *ctx, tt_error *err);
/* Online CPUs this process may run on (its affinity mask); at least 1. */
unsigned tt_cpu_count(void);

#endif
