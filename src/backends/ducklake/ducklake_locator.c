/*
 * backends/ducklake/ducklake_locator.c - the cheap checks `add` runs on a ducklake locator
 * (nothing contacted): its tt_kind's validate_locator.
 */
#include "backends/registry.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "backends/kit.h"

int tt_ducklake_validate_locator(const json_t *loc, const char *checkout, tt_error *err)
{
	/* A PostgreSQL catalog's password belongs in secrets, never in a
	 * committed locator (libpq's password= word, or user:password@ in a URI). */
	static const char *const keys[] = { "metadata", "uri" };
	for (size_t i = 0; i < 2; i++) {
		const char *m = tt_kit_locator_str(loc, keys[i]);
		const char *pg = m ? strstr(m, "postgres:") : NULL;
		if (!pg)
			continue;
		const char *at = strchr(pg, '@'), *scheme = strstr(pg, "://");
		const char *colon = scheme && at ? memchr(scheme + 3, ':', (size_t)(at - scheme - 3)) : NULL;
		if (strstr(pg, "password") || colon) {
			tt_error_set(err, TT_EBACKEND,
				     "ducklake locator's %s holds a password: a locator is committed", keys[i]);
			tt_error_hint(err, "put `password = \"...\"` under [objects.\"<key>\"] in .tether/secrets.toml");
			return tt_error_object(err, NULL, "ducklake");
		}
	}
	return tt_kit_locator_version_at(loc, "ducklake", "snapshot", err);
}
