/* util/num.c - Python-compatible float repr (see num.h). */
#include "util/num.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t tt_double_repr(char *out, double v)
{
	if (!isfinite(v))
		return 0;
	char tmp[64];
	char digits[32];
	int exp10 = 0;
	size_t nd = 0;

	if (v == 0.0) {
		memcpy(out, signbit(v) ? "-0.0" : "0.0", signbit(v) ? 5 : 4);
		return strlen(out);
	}
	/* Shortest precision whose %e output parses back to the same double. */
	for (int prec = 1; prec <= 17; prec++) {
		snprintf(tmp, sizeof tmp, "%.*e", prec - 1, v);
		if (strtod(tmp, NULL) == v)
			break;
	}
	/* tmp is "[-]d[.ddd]e[+-]XX": collect the digits and the exponent. */
	const char *p = tmp;
	int neg = 0;
	if (*p == '-') {
		neg = 1;
		p++;
	}
	for (; *p && *p != 'e'; p++) {
		if (*p >= '0' && *p <= '9' && nd < sizeof digits - 1)
			digits[nd++] = *p;
	}
	if (*p == 'e')
		exp10 = atoi(p + 1);
	while (nd > 1 && digits[nd - 1] == '0')
		nd--;
	digits[nd] = '\0';
	int decpt = exp10 + 1;

	char *o = out;
	if (neg)
		*o++ = '-';
	if (decpt > -4 && decpt <= 16) {
		if (decpt <= 0) {
			*o++ = '0';
			*o++ = '.';
			for (int i = 0; i < -decpt; i++)
				*o++ = '0';
			memcpy(o, digits, nd);
			o += nd;
		} else if ((size_t)decpt >= nd) {
			memcpy(o, digits, nd);
			o += nd;
			for (size_t i = nd; i < (size_t)decpt; i++)
				*o++ = '0';
			*o++ = '.';
			*o++ = '0';
		} else {
			memcpy(o, digits, (size_t)decpt);
			o += decpt;
			*o++ = '.';
			memcpy(o, digits + decpt, nd - (size_t)decpt);
			o += nd - (size_t)decpt;
		}
		*o = '\0';
	} else {
		*o++ = digits[0];
		if (nd > 1) {
			*o++ = '.';
			memcpy(o, digits + 1, nd - 1);
			o += nd - 1;
		}
		int e = decpt - 1;
		o += snprintf(o, 8, "e%c%02d", e < 0 ? '-' : '+', e < 0 ? -e : e);
	}
	return (size_t)(o - out);
}
