/* util/when.c - points in time as tether writes and reads them (see when.h). */
#include "util/when.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define MAX_SECONDS (100LL * 366 * 86400)

bool tt_when_duration(const char *text, int64_t *out)
{
	const char *p = text;
	int64_t total = 0;
	if (!p || !*p)
		return false;
	while (*p) {
		int64_t n = 0;
		if (!isdigit((unsigned char)*p))
			return false;
		for (; isdigit((unsigned char)*p); p++) {
			n = n * 10 + (*p - '0');
			if (n > MAX_SECONDS)
				return false;
		}
		int64_t unit;
		switch (*p++) {
		case 's': unit = 1; break;
		case 'm': unit = 60; break;
		case 'h': unit = 3600; break;
		case 'd': unit = 86400; break;
		case 'w': unit = 7 * 86400; break;
		default: return false;
		}
		if (n > MAX_SECONDS / unit || (total += n * unit) > MAX_SECONDS)
			return false;
	}
	if (total <= 0)
		return false;
	*out = total;
	return true;
}

/* n digits at *p into *v. */
static bool digits(const char **p, int n, int *v)
{
	*v = 0;
	for (int i = 0; i < n; i++, (*p)++) {
		if (!isdigit((unsigned char)**p))
			return false;
		*v = *v * 10 + (**p - '0');
	}
	return true;
}

static bool leap(int y)
{
	return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static int64_t days_from_civil(int y, int m, int d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	int64_t yoe = y - era * 400;
	int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

bool tt_when_iso(const char *text, int64_t *out)
{
	static const int mdays[] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };
	const char *p = text;
	int y, mo, d, h = 0, mi = 0, s = 0, oh = 0, om = 0, sign = 0;
	if (!p || !digits(&p, 4, &y) || *p++ != '-' || !digits(&p, 2, &mo) || *p++ != '-' || !digits(&p, 2, &d))
		return false;
	if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] + (mo == 2 && leap(y)))
		return false;
	if (*p) {
		if ((*p != 'T' && *p != 't' && *p != ' ') || (p++, !digits(&p, 2, &h)) || *p++ != ':' ||
		    !digits(&p, 2, &mi))
			return false;
		if (*p == ':') {
			p++;
			if (!digits(&p, 2, &s))
				return false;
			if (*p == '.' || *p == ',') {
				p++;
				if (!isdigit((unsigned char)*p))
					return false;
				while (isdigit((unsigned char)*p))
					p++;
			}
		}
		if (h > 23 || mi > 59 || s > 60)
			return false;
		if (*p == 'Z' || *p == 'z') {
			p++;
		} else if (*p == '+' || *p == '-') {
			sign = *p++ == '-' ? -1 : 1;
			if (!digits(&p, 2, &oh) || *p++ != ':' || !digits(&p, 2, &om) || oh > 23 || om > 59)
				return false;
		} else {
			return false; /* no zone */
		}
		if (*p)
			return false;
	}
	int64_t t = days_from_civil(y, mo, d) * 86400 + h * 3600 + mi * 60 + (s > 59 ? 59 : s);
	t -= (int64_t)sign * (oh * 3600 + om * 60);
	*out = t;
	return true;
}

void tt_when_format(char *out, size_t n, int64_t t)
{
	time_t tt = (time_t)t;
	struct tm tm;
	if (!n)
		return;
	if (!gmtime_r(&tt, &tm) || !strftime(out, n, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, n, "?");
}

void tt_when_relative(char *out, size_t n, int64_t t, int64_t now)
{
	int64_t s = t - now;
	bool past = s < 0;
	if (past)
		s = -s;
	/* The largest whole unit, rounded: 6d23h59m reads "7d". */
	int64_t v, per;
	char unit;
	if (s >= 86400)
		per = 86400, unit = 'd';
	else if (s >= 3600)
		per = 3600, unit = 'h';
	else if (s >= 60)
		per = 60, unit = 'm';
	else
		per = 1, unit = 's';
	v = (s + per / 2) / per;
	if (past)
		snprintf(out, n, "%lld%c ago", (long long)v, unit);
	else
		snprintf(out, n, "in %lld%c", (long long)v, unit);
}
