/*
 * util/pool.c - fan-out over worker threads (see pool.h).
 *
 * The workers (the calling thread is one of them) take the next index from
 * one shared atomic counter until it passes n, so each item runs exactly
 * once and a slow item holds up only the worker running it.
 */
#define _GNU_SOURCE
#include "util/pool.h"

#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/mem.h"

typedef struct pool_job {
	atomic_size_t next;
	size_t n;
	tt_pool_fn fn;
	void *ctx;
} pool_job;

static void run_items(pool_job *job)
{
	for (;;) {
		size_t i = atomic_fetch_add_explicit(&job->next, 1, memory_order_relaxed);
		if (i >= job->n)
			break;
		job->fn(i, job->ctx);
	}
}

static void *worker(void *arg)
{
	run_items(arg);
	return NULL;
}

int tt_pool_map(size_t n, unsigned threads, tt_pool_fn fn, void *ctx, tt_error *err)
{
	if (!fn)
		return tt_error_set(err, TT_EUSAGE, "no function to map");
	if (threads == 0)
		threads = tt_cpu_count();
	if ((size_t)threads > n)
		threads = (unsigned)n;
	pool_job job = { .n = n, .fn = fn, .ctx = ctx };
	atomic_init(&job.next, 0);
	if (n <= 1 || threads <= 1) {
		run_items(&job);
		return 0;
	}
	/* threads - 1 helpers; the caller is the last worker.  A helper that
	 * cannot be started only means fewer hands: the work still gets done. */
	pthread_t *tids = tt_calloc(threads - 1, sizeof *tids);
	size_t started = 0;
	if (tids) {
		for (unsigned t = 0; t + 1 < threads; t++) {
			if (pthread_create(&tids[started], NULL, worker, &job) != 0)
				break;
			started++;
		}
	}
	run_items(&job);
	for (size_t t = 0; t < started; t++)
		pthread_join(tids[t], NULL);
	free(tids);
	return 0;
}

unsigned tt_cpu_count(void)
{
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = online > 0 ? (unsigned)online : 1;
	cpu_set_t set;
	CPU_ZERO(&set);
	if (sched_getaffinity(0, sizeof set, &set) == 0) {
		int allowed = CPU_COUNT(&set);
		if (allowed > 0 && (unsigned)allowed < n)
			n = (unsigned)allowed;
	}
	return n ? n : 1;
}
