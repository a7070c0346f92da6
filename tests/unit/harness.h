/*
 * A small unit-test harness.  Each tests/unit/test_<module>.c is one
 * executable; TT_TEST(name) registers a case; the CHECK macros fail the
 * current case and return from it.  Run with a case name (or a prefix) as
 * argument to run only matching cases.  Ends with "N passed, N failed".
 */
#ifndef TT_TEST_HARNESS_H
#define TT_TEST_HARNESS_H

#include <stdio.h>
#include <string.h>

void tt_test_register(const char *name, void (*fn)(void));
void tt_test_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int tt_test_failed(void);  /* has the current case failed? */
/* A fresh empty directory for this case, removed after the run. */
const char *tt_test_tmpdir(void);

#define TT_TEST(name)                                                        \
	static void name(void);                                              \
	__attribute__((constructor)) static void tt_register_##name(void)   \
	{                                                                    \
		tt_test_register(#name, name);                               \
	}                                                                    \
	static void name(void)

#define CHECK(cond)                                                          \
	do {                                                                 \
		if (!(cond)) {                                               \
			tt_test_fail(__FILE__, __LINE__, "%s", #cond);       \
			return;                                              \
		}                                                            \
	} while (0)

#define CHECK_MSG(cond, ...)                                                 \
	do {                                                                 \
		if (!(cond)) {                                               \
			tt_test_fail(__FILE__, __LINE__, __VA_ARGS__);       \
			return;                                              \
		}                                                            \
	} while (0)

#define CHECK_STR(a, b)                                                      \
	do {                                                                 \
		const char *tt_a_ = (a), *tt_b_ = (b);                       \
		if (!tt_a_ || !tt_b_ || strcmp(tt_a_, tt_b_) != 0) {         \
			tt_test_fail(__FILE__, __LINE__,                     \
				     "%s == %s: \"%s\" != \"%s\"", #a, #b,   \
				     tt_a_ ? tt_a_ : "(null)",               \
				     tt_b_ ? tt_b_ : "(null)");              \
			return;                                              \
		}                                                            \
	} while (0)

#define CHECK_INT(a, b)                                                      \
	do {                                                                 \
		long long tt_a_ = (long long)(a), tt_b_ = (long long)(b);    \
		if (tt_a_ != tt_b_) {                                        \
			tt_test_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", \
				     #a, #b, tt_a_, tt_b_);                  \
			return;                                              \
		}                                                            \
	} while (0)

/* expr returns 0 on success and fills the tt_error `err` in scope. */
#define CHECK_OK(expr)                                                       \
	do {                                                                 \
		int tt_rc_ = (expr);                                         \
		if (tt_rc_ != 0) {                                           \
			tt_test_fail(__FILE__, __LINE__, "%s failed (%d): %s", \
				     #expr, tt_rc_,                          \
				     err.message ? err.message : "");        \
			return;                                              \
		}                                                            \
	} while (0)

#endif
