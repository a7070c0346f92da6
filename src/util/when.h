/*
 * util/when.h - points in time as tether writes and reads them: UTC seconds
 * since the epoch, spelled in ISO 8601 ("2026-12-11T07:30:00Z"), given on
 * the command line as a duration from now ("45s", "30m", "12h", "7d",
 * "2w", or several: "1d12h") or as an ISO time, and told to people
 * relative to now ("in 3d", "2h ago").
 */
#ifndef TT_UTIL_WHEN_H
#define TT_UTIL_WHEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The forms tt_when_duration and tt_when_iso take, for usage errors. */
#define TT_WHEN_DURATION_FORMS "a duration such as 45s, 30m, 12h, 7d or 2w (or several: 1d12h)"
#define TT_WHEN_ISO_FORMS \
	"an ISO 8601 time such as 2026-12-11T07:30:00Z or 2026-12-11T09:30:00+02:00 (a time needs Z or an " \
	"offset), or a date, 2026-12-11 (midnight UTC)"

/* Seconds in text: one or more <digits><s|m|h|d|w> groups, > 0 and at most
 * 100 years.  False for anything else (out untouched). */
bool tt_when_duration(const char *text, int64_t *out);

/* UTC seconds of an ISO 8601 time: YYYY-MM-DD, or YYYY-MM-DDTHH:MM[:SS]
 * with Z or a +HH:MM/-HH:MM offset (a fraction of a second is dropped;
 * ' ' may stand for 'T').  A time without a zone is refused: it would mean
 * another instant on every clone.  False for anything else. */
bool tt_when_iso(const char *text, int64_t *out);

/* "2026-12-11T07:30:00Z" into out (at least TT_WHEN_ISO_LEN bytes). */
#define TT_WHEN_ISO_LEN 32
void tt_when_format(char *out, size_t n, int64_t t);

/* "in 3d", "in 5h", "in 45s", "2h ago", "3d ago" of t against now: the
 * largest unit (s, m, h, d) that is whole, rounded to the nearest. */
void tt_when_relative(char *out, size_t n, int64_t t, int64_t now);

#endif
