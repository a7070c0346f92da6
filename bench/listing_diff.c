/*
 * bench/listing_diff.c - time the file backend's listing diff alone (the
 * work under `tether diff --content` for a directory object, without
 * process startup, git or manifest reading).
 *
 *   bench_listing_diff LISTING_A LISTING_B REPS
 *
 * Reads the two stored listings (.tether/listings/<digest>.jsonl), then calls
 * the backend's diff REPS times on two directory states that differ in
 * digest, and prints one JSON line: {"reps", "median_ms", "min_ms",
 * "summary"}.  The CMake target bench_listing_diff: linked against the static
 * library (it calls a backend through the internal headers) with the
 * library's own dependencies; bench/run.py brings it up to date in the build
 * tree its binary comes from.
 */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "core/kinds.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;
	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		perror(path);
		exit(2);
	}
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		perror(path);
		exit(2);
	}
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	tt_error err;
	tt_backend *b = NULL;
	json_t *config = json_object(), *loc = json_pack("{s:s}", "uri", "/nonexistent");
	json_t *sa = json_pack("{s:s,s:s}", "type", "dir", "digest", "a");
	json_t *sb = json_pack("{s:s,s:s}", "type", "dir", "digest", "b");
	char *la, *lb, *summary = NULL;
	int reps;
	double *t;

	if (argc != 4 || (reps = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: bench_listing_diff LISTING_A LISTING_B REPS\n");
		return 2;
	}
	la = slurp(argv[1]);
	lb = slurp(argv[2]);
	t = calloc((size_t)reps, sizeof *t);
	memset(&err, 0, sizeof err);
	if (!t || tt_backend_new(&b, tt_kind_find("file"), config, "/nonexistent", "/nonexistent",
				 &err) != 0) {
		fprintf(stderr, "bench_listing_diff: cannot build the file backend: %s\n", tt_error_text(&err));
		return 1;
	}
	for (int i = 0; i < reps; i++) {
		tt_object_diff d;
		double t0 = now_ms();
		if (b->ops->diff(b, loc, sa, sb, la, lb, &d, &err) != 0) {
			fprintf(stderr, "bench_listing_diff: %s\n", tt_error_text(&err));
			return 1;
		}
		t[i] = now_ms() - t0;
		if (i == reps - 1)
			summary = tt_object_diff_summary(&d);
		tt_object_diff_release(&d);
	}
	qsort(t, (size_t)reps, sizeof *t, cmp_double);
	printf("{\"reps\": %d, \"median_ms\": %.3f, \"min_ms\": %.3f, \"summary\": \"%s\"}\n", reps,
	       reps % 2 ? t[reps / 2] : (t[reps / 2 - 1] + t[reps / 2]) / 2, t[0],
	       summary ? summary : "");
	free(summary);
	tt_backend_free(b);
	json_decref(config), json_decref(loc), json_decref(sa), json_decref(sb);
	free(la), free(lb), free(t);
	return 0;
}
