/*
 * tests/support/conformance.h - the backend conformance suite.
 *
 * A port of tether-vcs's run_conformance: a backend author provides a small
 * harness (make an empty object, mutate it) and the suite runs the checks
 * the backend's capabilities call for (always: fingerprint, content state,
 * identity and pin ids; then DIFF, HISTORY, ADDRESSABLE, PIN (+ FORK, unpin),
 * FORK (conditional moves, CONDITIONAL_REF races, PROMOTE, MERGE, ancestry)
 * and CREATE).
 *
 * Every check is a named sub-result ("<label>/<check>").  In the default
 * mode they are reported through the unit-test harness: each one is added
 * as a case of its own (registered while the run is in progress, so the
 * runner prints "ok   conformance/pin_idempotent" or "FAIL ..." with its
 * message after the calling case, and counts it in "N passed, N failed");
 * the calling case itself fails when any check failed.  A check that cannot
 * run because an earlier step of its group failed is not reported.
 *
 * Use from a TT_TEST:
 *     tt_conformance_harness h = { .backend = b, .new_object = mk, .mutate = mut,
 *                                  .ctx = &state, .label = "conformance/memory" };
 *     CHECK_INT(tt_conformance_run(&h), 0);
 */
#ifndef TT_TESTS_CONFORMANCE_H
#define TT_TESTS_CONFORMANCE_H

#include <stdbool.h>

#include <jansson.h>

#include "backends/backend.h"

/* The dataset id the suite pins under (any 8 hex digits would do). */
#define TT_CONFORMANCE_DATASET "c0fe5a1e"

typedef enum tt_conformance_mode {
	TT_CONFORMANCE_REPORT = 0, /* sub-results through the unit-test harness */
	TT_CONFORMANCE_COUNT       /* report nothing; only return the failure count */
} tt_conformance_mode;

typedef struct tt_conformance_harness {
	tt_backend *backend;
	/* The capabilities to test (one tier of a multi-tier backend); 0: the
	 * kind's. */
	unsigned capabilities;
	/* A fresh, empty system with a `main` branch: *locator a new reference.
	 * 0 on success. */
	int (*new_object)(void *ctx, json_t **locator);
	/* Change the state at working_ref (the base when NULL).  Every call
	 * writes something new, and two calls on different branches write
	 * different things (a new key/file/table per call): the merge check
	 * merges a fork into a base both were written to and expects no
	 * conflict.  0 on success. */
	int (*mutate)(void *ctx, const json_t *locator, const char *working_ref);
	/* CREATE backends: a locator where no store exists yet.  0 on success. */
	int (*fresh_locator)(void *ctx, json_t **locator);
	void *ctx;
	const char *dataset_id;   /* NULL: TT_CONFORMANCE_DATASET */
	const char *label;        /* sub-result prefix; NULL: "conformance" */
	tt_conformance_mode mode;
	/* When set (a JSON array), the names of the checks that failed are
	 * appended to it, in either mode. */
	json_t *failures;
} tt_conformance_harness;

/* Run every check the capabilities call for.  Returns the number of checks
 * that failed (0: the backend conforms), or -1 when the harness itself is
 * unusable (no backend, no new_object / mutate). */
int tt_conformance_run(const tt_conformance_harness *h);

#endif
