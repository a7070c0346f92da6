/* engine/kernel/refnames.c - the working refs' names taken apart (see
 * refnames.h). */
#include "engine/kernel/refnames.h"

#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "util/mem.h"

static bool all_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

bool tt_working_ref_parts(const char *ref, tt_ref_parts *out)
{
	size_t pl = strlen(TT_WORKING_REF_PREFIX);
	memset(out, 0, sizeof *out);
	if (strncmp(ref, TT_WORKING_REF_PREFIX, pl) != 0)
		return false;
	const char *rest = ref + pl, *dot = strchr(rest, '.');
	size_t dl = dot ? (size_t)(dot - rest) : strlen(rest);
	if (dl != TT_DATASET_ID_LEN)
		return false;
	memcpy(out->ds, rest, dl);
	out->ds[dl] = '\0';
	if (!tt_is_dataset_id(out->ds) || !dot || !dot[1])
		return false;
	const char *name = dot + 1;
	size_t nl = strlen(name);
	const char *last = strrchr(name, '.');
	if (last && last > name && all_digits(last + 1, strlen(last + 1)))
		nl = (size_t)(last - name);
	char *body = tt_strndup(name, nl);
	if (!body)
		return false;
	char *d2 = strchr(body, '.');
	if (d2 && d2[1]) {
		*d2 = '\0';
		if (tt_is_dataset_id(body)) {
			out->legacy_ws = body;
			out->slug = NULL;
			memmove(body + strlen(body) + 1, d2 + 1, strlen(d2 + 1) + 1);
			return true;
		}
		*d2 = '.';
	}
	out->slug = body;
	return true;
}

void tt_ref_parts_release(tt_ref_parts *p)
{
	free(p->slug);
	free(p->legacy_ws);
}
