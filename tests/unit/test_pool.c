/* Unit tests for util/pool: every item runs exactly once, whatever the
 * thread count. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "util/mem.h"
#include "util/pool.h"

typedef struct counts {
	atomic_int *hits;
	atomic_size_t calls;
} counts;

static void hit(size_t i, void *ctx)
{
	counts *c = ctx;
	atomic_fetch_add(&c->hits[i], 1);
	atomic_fetch_add(&c->calls, 1);
}

TT_TEST(every_item_runs_once)
{
	tt_error err = TT_ERROR_INIT;
	static const unsigned threads[] = { 0, 1, 2, 8 };
	static const size_t sizes[] = { 0, 1, 2, 7, 1000 };
	for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
		for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
			size_t n = sizes[s];
			counts c;
			c.hits = tt_calloc(n ? n : 1, sizeof *c.hits);
			CHECK(c.hits);
			for (size_t i = 0; i < n; i++)
				atomic_init(&c.hits[i], 0);
			atomic_init(&c.calls, 0);
			int rc = tt_pool_map(n, threads[t], hit, &c, &err);
			int bad = -1;
			for (size_t i = 0; i < n && bad < 0; i++)
				if (atomic_load(&c.hits[i]) != 1)
					bad = (int)i;
			size_t calls = atomic_load(&c.calls);
			free(c.hits);
			CHECK_OK(rc);
			CHECK_MSG(bad < 0, "threads=%u n=%zu: item %d ran a wrong number of times", threads[t], n, bad);
			CHECK_INT(calls, n);
		}
	}
}

/* Slow items: with 8 workers several threads must take part. */
typedef struct who {
	pthread_t *tid;
} who;

static void record_thread(size_t i, void *ctx)
{
	who *w = ctx;
	w->tid[i] = pthread_self();
	usleep(2000);
}

TT_TEST(work_is_spread_over_threads)
{
	tt_error err = TT_ERROR_INIT;
	size_t n = 64;
	who w = { tt_calloc(n, sizeof(pthread_t)) };
	CHECK(w.tid);
	int rc = tt_pool_map(n, 8, record_thread, &w, &err);
	size_t distinct = 0;
	for (size_t i = 0; i < n; i++) {
		int seen = 0;
		for (size_t j = 0; j < i && !seen; j++)
			seen = pthread_equal(w.tid[i], w.tid[j]);
		distinct += !seen;
	}
	free(w.tid);
	CHECK_OK(rc);
	CHECK_MSG(distinct >= 2, "only %zu thread(s) ran the items", distinct);
	CHECK(distinct <= 8);
}

static void inline_check(size_t i, void *ctx)
{
	pthread_t *caller = ctx;
	if (!pthread_equal(*caller, pthread_self()))
		abort();
	(void)i;
}

TT_TEST(single_thread_runs_inline)
{
	tt_error err = TT_ERROR_INIT;
	pthread_t self = pthread_self();
	CHECK_OK(tt_pool_map(50, 1, inline_check, &self, &err));
	CHECK_OK(tt_pool_map(1, 8, inline_check, &self, &err));
	CHECK_INT(tt_pool_map(3, 2, NULL, NULL, &err), TT_EUSAGE);
	tt_error_clear(&err);
}

TT_TEST(cpu_count_is_sane)
{
	unsigned n = tt_cpu_count();
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	CHECK(n >= 1);
	CHECK(online < 1 || (long)n <= online);
}
