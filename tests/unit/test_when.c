/* Unit tests for util/when: durations, ISO 8601 times, relative text. */
#include <stdint.h>

#include "harness.h"
#include "util/when.h"

TT_TEST(durations_in_every_unit)
{
	int64_t s = 0;
	CHECK(tt_when_duration("45s", &s) && s == 45);
	CHECK(tt_when_duration("30m", &s) && s == 1800);
	CHECK(tt_when_duration("12h", &s) && s == 43200);
	CHECK(tt_when_duration("7d", &s) && s == 604800);
	CHECK(tt_when_duration("2w", &s) && s == 1209600);
	CHECK(tt_when_duration("1d12h", &s) && s == 129600);
}

TT_TEST(durations_refused)
{
	int64_t s = 7;
	const char *bad[] = { "", "7", "d", "7x", "-1d", "0s", "1.5h", "7 d", "7d ", "99999999999999999999s",
			      "40000d" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_MSG(!tt_when_duration(bad[i], &s), "accepted '%s'", bad[i]);
	CHECK_INT(s, 7);
}

TT_TEST(iso_times)
{
	int64_t t = 0;
	CHECK(tt_when_iso("1970-01-01T00:00:00Z", &t) && t == 0);
	CHECK(tt_when_iso("2026-12-11T07:30:00Z", &t) && t == 1796974200);
	CHECK(tt_when_iso("2026-12-11T09:30:00+02:00", &t) && t == 1796974200);
	CHECK(tt_when_iso("2026-12-11T02:30-05:00", &t) && t == 1796974200);
	CHECK(tt_when_iso("2026-12-11 07:30:00.123Z", &t) && t == 1796974200);
	CHECK(tt_when_iso("2026-12-11", &t) && t == 1796947200);
	CHECK(tt_when_iso("2024-02-29T00:00:00Z", &t) && t == 1709164800);
}

TT_TEST(iso_refused)
{
	int64_t t = 5;
	const char *bad[] = { "", "2026-12-11T07:30:00", "2026-13-01", "2025-02-29", "2026-12-11T24:00Z",
			      "2026-12-11T07:30:00+0200", "2026-12-11Tx", "tomorrow", "2026-12-11Z", "1969-12-31" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		CHECK_MSG(!tt_when_iso(bad[i], &t), "accepted '%s'", bad[i]);
	CHECK_INT(t, 5);
}

TT_TEST(format_and_relative)
{
	char b[TT_WHEN_ISO_LEN];
	int64_t t = 0;
	tt_when_format(b, sizeof b, 1796974200);
	CHECK_STR(b, "2026-12-11T07:30:00Z");
	CHECK(tt_when_iso(b, &t) && t == 1796974200);
	tt_when_relative(b, sizeof b, 1000 + 3 * 86400 + 5, 1000);
	CHECK_STR(b, "in 3d");
	tt_when_relative(b, sizeof b, 1000, 1000 + 2 * 3600 + 59);
	CHECK_STR(b, "2h ago");
	tt_when_relative(b, sizeof b, 1045, 1000);
	CHECK_STR(b, "in 45s");
	tt_when_relative(b, sizeof b, 1000, 1000 + 61);
	CHECK_STR(b, "1m ago");
	tt_when_relative(b, sizeof b, 1000 + 7 * 86400 - 30, 1000); /* a --ttl 7d read a moment later */
	CHECK_STR(b, "in 7d");
}
