/*
 * cli/progress.c - progress on stderr while the library works, driven by
 * its progress callback (tether/progress.h): one line (objects; files,
 * bytes and a rate while the file kind hashes), redrawn at most ten times
 * a second, cut to the terminal's width, erased when the phase ends.  Shown when stderr is a
 * terminal, not under --json, not with TETHER_PROGRESS=0; only for work
 * that lasts (0.3 s) unless TETHER_PROGRESS=1, which shows it from the
 * first update (also off a terminal, for tests).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <tether/progress.h>

#include "cli/cli.h"
#include "cli/human.h"
#include "cli/progress.h"

static struct {
	bool forced, drawn;
	double last;
	double rate_t0;      /* when the phase's first bytes came (0: not yet) */
	uint64_t rate_b0;    /* and how many */
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

/* The terminal's width (0: unknown): a longer line would wrap, and
 * "\r\033[K" erases only its last row. */
static size_t term_width(void)
{
	struct winsize ws;
	if (ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
		return ws.ws_col;
	return 0;
}

static void on_progress(const tt_progress *p, void *ctx)
{
	(void)ctx;
	if (p->finished) {
		erase();
		st.rate_t0 = 0;
		return;
	}
	double t = now();
	/* a phase's opening call */
	if (!p->key && p->done == 0 && p->files_done == 0)
		st.rate_t0 = 0;
	if (p->bytes_done && !st.rate_t0) {
		st.rate_t0 = t;
		st.rate_b0 = p->bytes_done;
	}
	if (!st.forced && p->elapsed < 0.3)
		return;
	/* At most ~10 redraws a second; TETHER_PROGRESS=1 draws each object
	 * (tests read them), byte counts (one call a file) stay throttled. */
	bool bytes_only = !p->key && p->files_done > 0;
	if (st.drawn && t - st.last < 0.1 && (!st.forced || bytes_only))
		return;
	st.last = t;
	char el[32], eta[48] = "", line[512];
	double rate = 0;
	if (p->bytes_total && st.rate_t0 && t - st.rate_t0 >= 0.2)
		rate = (double)(p->bytes_done - st.rate_b0) / (t - st.rate_t0);
	duration(el, sizeof el, p->elapsed);
	if (rate > 0 && p->bytes_done < p->bytes_total) {
		char d[32];
		duration(d, sizeof d, (double)(p->bytes_total - p->bytes_done) / rate);
		snprintf(eta, sizeof eta, ", ETA %s", d);
	} else if (!p->bytes_total && p->done && p->done < p->total) {
		char d[32];
		duration(d, sizeof d, p->elapsed / (double)p->done * (double)(p->total - p->done));
		snprintf(eta, sizeof eta, ", ETA %s", d);
	}
	int n = snprintf(line, sizeof line, "%s: %zu/%zu object%s%s%s%s", p->phase, p->done, p->total,
			 p->total == 1 ? "" : "s", p->key ? ", " : "", p->key ? p->key : "",
			 p->key ? " done" : "");
	if (p->bytes_total && n >= 0 && (size_t)n < sizeof line) {
		/* totals grow as each object's hashing starts: never show done > total */
		uint64_t ft = p->files_total > p->files_done ? p->files_total : p->files_done;
		uint64_t bt = p->bytes_total > p->bytes_done ? p->bytes_total : p->bytes_done;
		char bd[32], bts[32], r[40] = "";
		cli_size_text(bd, sizeof bd, (double)p->bytes_done);
		cli_size_text(bts, sizeof bts, (double)bt);
		if (rate > 0) {
			char rs[32];
			cli_size_text(rs, sizeof rs, rate);
			snprintf(r, sizeof r, ", %s/s", rs);
		}
		n += snprintf(line + n, sizeof line - (size_t)n, "; %" PRIu64 "/%" PRIu64 " files, %s/%s%s",
			      p->files_done, ft, bd, bts, r);
	}
	if (n >= 0 && (size_t)n < sizeof line)
		snprintf(line + n, sizeof line - (size_t)n, " (%s%s)", el, eta);
	size_t w = term_width(), len = strlen(line);
	if (w && len > w - 1)
		len = w - 1;
	fprintf(stderr, "\r\033[K%.*s", (int)len, line);
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
