/* util/fault.c - crash injection for tests (see fault.h). */
#include "util/fault.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void tt_fault(const char *point)
{
	static unsigned hits;
	const char *want = getenv(TT_FAULT_ENV);
	if (!want)
		return;
	/* "point#N": the Nth time the process reaches point. */
	const char *hash = strchr(want, '#');
	size_t len = hash ? (size_t)(hash - want) : strlen(want);
	if (strncmp(want, point, len) != 0 || point[len] != '\0')
		return;
	if (hash && ++hits < strtoul(hash + 1, NULL, 10))
		return;
	kill(getpid(), SIGKILL);
	_exit(137); /* not reached */
}
