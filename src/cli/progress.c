/*
 * cli/progress.c - progress on stderr while the library works, driven by
 * its progress callback (tether/progress.h): one line, redrawn at most ten
 * times a second, erased when the phase ends.  Shown when stderr is a
 * terminal, not under --json, not with TETHER_PROGRESS=0; only for work
 * that lasts (0.3 s) unless TETHER_PROGRESS=1, which shows it from the
 * first update (also off a terminal, for tests).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <tether/progress.h>

#include "cli/cli.h"
#include "cli/progress.h"

static struct {
	bool forced, drawn;
	double last;
} st;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static void erase(void)
{
	if (st.drawn) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
		st.drawn = false;
	}
}

static void duration(char *out, size_t n, double s)
{
	if (s < 60)
		snprintf(out, n, s < 10 ? "%.1fs" : "%.0fs", s);
	else
		snprintf(out, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
}

static void on_progress(const tt_progress *p, void *ctx)
{
	(void)ctx;
	if (p->finished) {
		erase();
		return;
	}
	double t = now();
	if (!st.forced && p->elapsed < 0.3)
		return;
	if (st.drawn && t - st.last < 0.1 && !st.forced)
		return;
	st.last = t;
	char el[32], eta[48] = "";
	duration(el, sizeof el, p->elapsed);
	if (p->done && p->done < p->total) {
		char d[32];
		duration(d, sizeof d, p->elapsed / (double)p->done * (double)(p->total - p->done));
		snprintf(eta, sizeof eta, ", ETA %s", d);
	}
	fprintf(stderr, "\r\033[K%s: %zu/%zu object%s%s%s%s (%s%s)", p->phase, p->done, p->total,
		p->total == 1 ? "" : "s", p->key ? ", " : "", p->key ? p->key : "", p->key ? " done" : "",
		el, eta);
	fflush(stderr);
	st.drawn = true;
}

void cli_progress_attach(tt_repo *repo)
{
	const char *env = getenv("TETHER_PROGRESS");
	if (cli_json_errors || (env && strcmp(env, "0") == 0))
		return;
	st.forced = env && strcmp(env, "1") == 0;
	if (!st.forced && !isatty(STDERR_FILENO))
		return;
	static bool registered;
	tt_repo_set_progress(repo, on_progress, NULL);
	if (!registered)
		atexit(erase);
	registered = true;
}
