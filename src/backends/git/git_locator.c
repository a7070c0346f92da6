/*
 * backends/git/git_locator.c - the cheap checks `add` runs on a git locator
 * (nothing contacted): its tt_kind's validate_locator.
 */
#include "backends/registry.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "backends/kit.h"

/* git: nothing a manifest names may reach git as an option, and the
 * repository must be an absolute path outside the dataset's checkout. */
static int git_guard(const char *value, const char *what, tt_error *err)
{
	if (!value[0] || value[0] == '-') {
		tt_error_set(err, TT_EBACKEND, "git %s '%s' looks like an option; refused", what, value);
		return tt_error_object(err, NULL, "git");
	}
	return 0;
}

int tt_git_validate_locator(const json_t *loc, const char *checkout, tt_error *err)
{
	static const char *const refs[] = { "ref", "at", "remote" };
	int rc;
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(loc, refs[i]);
		if (!v || json_is_null(v))
			continue;
		char text[512];
		if (json_is_string(v))
			snprintf(text, sizeof text, "%s", json_string_value(v));
		else
			snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
		if ((rc = git_guard(text, refs[i], err)) < 0)
			return rc;
	}
	const char *path = tt_kit_locator_str(loc, "path");
	if (!path)
		path = tt_kit_locator_str(loc, "uri");
	if (!path)
		return 0;
	if ((rc = git_guard(path, "path", err)) < 0)
		return rc;
	if (path[0] != '/') {
		tt_error_set(err, TT_EBACKEND,
			     "git path '%s' is not absolute; `add` stores an absolute path, so this "
			     "manifest was written by hand", path);
		return tt_error_object(err, NULL, "git");
	}
	if (checkout) {
		size_t n = strlen(checkout);
		if (strncmp(path, checkout, n) == 0 && (path[n] == '\0' || path[n] == '/' ||
							 (n == 1 && checkout[0] == '/'))) {
			tt_error_set(err, TT_EBACKEND,
				     "git path %s is inside the dataset's checkout (%s), whose files "
				     "came with the clone; point it at a repository outside it",
				     path, checkout);
			return tt_error_object(err, NULL, "git");
		}
	}
	return 0;
}
