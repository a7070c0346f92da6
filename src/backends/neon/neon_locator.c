/*
 * backends/neon/neon_locator.c - the cheap checks `add` runs on a neon locator
 * (nothing contacted): its tt_kind's validate_locator.
 */
#include "backends/registry.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "backends/kit.h"

int tt_neon_validate_locator(const json_t *loc, const char *checkout, tt_error *err)
{
	static const char *const need[] = { "project_id", "database", "role" };
	char missing[128] = "";
	for (size_t i = 0; i < 3; i++) {
		const char *v = tt_kit_locator_str(loc, need[i]);
		json_t *raw = json_object_get(loc, need[i]);
		if ((v && *v) || (raw && !json_is_string(raw) && !json_is_null(raw)))
			continue;
		size_t l = strlen(missing);
		snprintf(missing + l, sizeof missing - l, "%s'%s'", l ? ", " : "", need[i]);
	}
	if (missing[0]) {
		tt_error_set(err, TT_EBACKEND,
			     "neon locator needs %s (`--project-id`, `--database`, `--role`)", missing);
		return tt_error_object(err, NULL, "neon");
	}
	return 0;
}
