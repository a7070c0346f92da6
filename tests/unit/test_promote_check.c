/* Unit tests for engine/cmd/promote_check.c: how a check's command is shown and
 * journaled (a URL's password masked, everything else as given). */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

#include "engine/cmd/promote_check.h"

static int shown_as(const char *cmd, const char *want)
{
	char *got = tt_check_command_shown(cmd);
	int ok = got && strcmp(got, want) == 0;
	if (!ok)
		fprintf(stderr, "  %s -> %s (want %s)\n", cmd, got ? got : "(null)", want);
	free(got);
	return ok;
}

TT_TEST(url_passwords_are_masked_and_nothing_else_changes)
{
	CHECK(shown_as("pytest checks/", "pytest checks/"));
	CHECK(shown_as("psql postgres://bob:hunter2@db:5432/app -c 'select 1'",
		       "psql postgres://bob:***@db:5432/app -c 'select 1'"));
	CHECK(shown_as("a https://u:p@h/x b s3://k:s@bucket/p", "a https://u:***@h/x b s3://k:***@bucket/p"));
	/* a user without a password, a port without a user, a bare scheme */
	CHECK(shown_as("git clone https://bob@h/r", "git clone https://bob@h/r"));
	CHECK(shown_as("curl http://h:8080/x", "curl http://h:8080/x"));
	CHECK(shown_as("echo ://", "echo ://"));
	CHECK(shown_as("'mysql://u:p@h/db'", "'mysql://u:***@h/db'"));
	CHECK(shown_as("", ""));
}
