/*
 * tests/support/store_conformance.h - the storage conformance suite: the
 * invariants of storage/store.h, checked against any implementation (the
 * local store, S3 against a local server, ...).
 *
 * Use from a TT_TEST with a fresh, empty store:
 *     CHECK_INT(tt_store_conformance_run(store, "local"), 0);
 * Each failed check is reported through tt_test_fail() as
 * "<label>/<check>: ..." and counted in the return value.
 */
#ifndef TT_TESTS_STORE_CONFORMANCE_H
#define TT_TESTS_STORE_CONFORMANCE_H

#include "storage/store.h"

int tt_store_conformance_run(tt_store *s, const char *label);

#endif
