/*
 * backends/icechunk/icechunk_locator.c - the cheap checks `add` runs on a icechunk locator
 * (nothing contacted): its tt_kind's validate_locator.
 */
#include "backends/registry.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "backends/kit.h"

static bool has_scheme(const char *s)
{
	/* RFC 3986 scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
	if (!isalpha((unsigned char)s[0]))
		return false;
	for (const char *p = s + 1; *p; p++) {
		if (*p == ':')
			return true;
		if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
			return false;
	}
	return false;
}

int tt_icechunk_validate_locator(const json_t *loc, const char *checkout, tt_error *err)
{
	const char *uri = tt_kit_locator_str(loc, "uri");
	if (!uri)
		uri = tt_kit_locator_str(loc, "path");
	if (!uri || uri[0] == '/' || strncmp(uri, "file:", 5) == 0 || !has_scheme(uri))
		return 0;
	if (strncmp(uri, "s3://", 5) == 0)
		return 0;
	/* Azure Blob: icechunk writes it (tether-vcs takes s3 only) */
	if (strncmp(uri, "az://", 5) == 0 || strncmp(uri, "azure://", 8) == 0)
		return 0;
	size_t n = (size_t)(strchr(uri, ':') - uri);
	tt_error_set(err, TT_EBACKEND,
		     "unsupported icechunk storage scheme: '%.*s' (one of 'file', 's3', 'az')", (int)n, uri);
	return tt_error_object(err, NULL, "icechunk");
}
