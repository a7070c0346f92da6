/* engine/kernel/progress.c - the progress callback (tether/progress.h). */
#include "engine/kernel/progress.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <tether/progress.h>

#include "backends/dispatch.h"
#include "backends/kit.h"
#include "engine/kernel/handle.h"
#include "util/mem.h"

struct tt_progress_state {
	tt_progress_fn fn;
	void *ctx;
	pthread_mutex_t lock;
	const char *phase;
	size_t done, total;
	uint64_t files_done, files_total, bytes_done, bytes_total;
	struct timespec start;
	bool open;
};

static double since(const struct timespec *t)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) + (double)(now.tv_nsec - t->tv_nsec) / 1e9;
}

void tt_repo_set_progress(tt_repo *repo, tt_progress_fn fn, void *ctx)
{
	if (!repo)
		return;
	if (!fn) {
		tt_engine_progress_free(repo);
		return;
	}
	if (!repo->progress) {
		repo->progress = tt_calloc(1, sizeof *repo->progress);
		if (!repo->progress)
			return;
		pthread_mutex_init(&repo->progress->lock, NULL);
	}
	repo->progress->fn = fn;
	repo->progress->ctx = ctx;
}

static void call(struct tt_progress_state *s, const char *key, int finished)
{
	tt_progress p = { s->phase, key, s->done, s->total, since(&s->start), finished,
			  s->files_done, s->files_total, s->bytes_done, s->bytes_total };
	s->fn(&p, s->ctx);
}

void tt_engine_progress_begin(tt_repo *repo, const char *phase, size_t total)
{
	struct tt_progress_state *s = repo->progress;
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->phase = phase;
	s->done = 0;
	s->total = total;
	s->files_done = s->files_total = s->bytes_done = s->bytes_total = 0;
	s->open = true;
	clock_gettime(CLOCK_MONOTONIC, &s->start);
	call(s, NULL, 0);
	pthread_mutex_unlock(&s->lock);
}

void tt_engine_progress_step(tt_repo *repo, const char *key)
{
	struct tt_progress_state *s = repo->progress;
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->open && s->done < s->total) {
		s->done++;
		call(s, key, 0);
	}
	pthread_mutex_unlock(&s->lock);
}

void tt_engine_progress_end(tt_repo *repo)
{
	struct tt_progress_state *s = repo->progress;
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->open) {
		s->done = s->total;
		call(s, NULL, 1);
		s->open = false;
	}
	pthread_mutex_unlock(&s->lock);
}

void tt_engine_progress_free(tt_repo *repo)
{
	if (!repo || !repo->progress)
		return;
	pthread_mutex_destroy(&repo->progress->lock);
	free(repo->progress);
	repo->progress = NULL;
}

/* A file a backend read (the file kind's hashing): into the phase's
 * files and bytes.  A run's first file (files_done 1) brings its totals. */
static void on_file_hashed(void *ctx, const tt_backend_work *fp)
{
	struct tt_progress_state *s = ((tt_repo *)ctx)->progress;
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	if (s->open) {
		if (fp->files_done == 1) {
			s->files_total += fp->files_total;
			s->bytes_total += fp->bytes_total;
		}
		s->files_done++;
		s->bytes_done += fp->bytes_step;
		call(s, NULL, 0);
	}
	pthread_mutex_unlock(&s->lock);
}

void tt_engine_progress_files(tt_repo *repo, bool on)
{
	if (!repo->progress)
		return;
	for (size_t i = 0; i < repo->nbackends; i++)
		tt_backend_progress(repo->backends[i], on ? on_file_hashed : NULL, on ? repo : NULL);
}

/* --- traces ------------------------------------------------------------------------ */

static tt_trace_fn trace_line_fn;
static void *trace_line_ctx;

static void on_note(void *ctx, const char *kind, const char *about, const char *what)
{
	char line[1024];
	(void)ctx;
	snprintf(line, sizeof line, "%s: %s: %s", kind, about, what);
	if (trace_line_fn)
		trace_line_fn(trace_line_ctx, line);
}

void tt_set_trace(tt_trace_fn fn, void *ctx)
{
	trace_line_fn = fn;
	trace_line_ctx = ctx;
	tt_kit_set_note(fn ? on_note : NULL, NULL);
}
