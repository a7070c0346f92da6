/*
 * backends/dolt/dolt_locator.c - the cheap checks `add` runs on a dolt locator
 * (nothing contacted): its tt_kind's validate_locator.
 */
#include "backends/registry.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "backends/kit.h"

/* dolt: a database is required, and a committed locator never holds a
 * password (it belongs in .tether/secrets.toml's server entry). */
int tt_dolt_validate_locator(const json_t *loc, const char *checkout, tt_error *err)
{
	const char *url = tt_kit_locator_str(loc, "url");
	(void)checkout;
	if (url && *url) {
		const char *p = strncmp(url, "mysql://", 8) == 0 ? url + 8 : NULL;
		const char *end = p ? p + strcspn(p, "/") : NULL;
		const char *at = p ? memchr(p, '@', (size_t)(end - p)) : NULL;
		if (!p) {
			tt_error_set(err, TT_EBACKEND, "dolt url '%s' is not mysql://user@host:port/database", url);
			return tt_error_object(err, NULL, "dolt");
		}
		if (at && memchr(p, ':', (size_t)(at - p))) {
			tt_error_set(err, TT_EBACKEND,
				     "dolt url holds a password: a locator is committed; put it in "
				     ".tether/secrets.toml [uris.\"mysql://host:port\"]");
			return tt_error_object(err, NULL, "dolt");
		}
		return 0;
	}
	const char *db = tt_kit_locator_str(loc, "database");
	if (!db || !*db) {
		tt_error_set(err, TT_EBACKEND, "dolt locator needs 'database' (or a url)");
		tt_error_hint(err, "tether add KEY --kind dolt --database NAME [--host H --port P]");
		return tt_error_object(err, NULL, "dolt");
	}
	return 0;
}
