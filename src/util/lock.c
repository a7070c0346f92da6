/*
 * util/lock.c - advisory locks between tether processes (see lock.h).
 *
 * The same lock tether-vcs takes: flock(LOCK_EX | LOCK_NB) on the lock file,
 * retried every 50 ms until the deadline.  The descriptor is O_CLOEXEC so a
 * child started while the lock is held does not inherit (and keep) it.
 */
#include "util/lock.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "util/fs.h"
#include "util/mem.h"

#define POLL_MS 50

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

int tt_lock_acquire(tt_lock *l, const char *path, const char *what, int timeout_ms, tt_error *err)
{
	int rc = 0, fd = -1;
	char *dir = NULL, *copy = NULL;
	if (!l || !path || !*path) {
		rc = tt_error_set(err, TT_EUSAGE, "no lock file to take");
		goto done;
	}
	if (l->fd >= 0) {
		rc = tt_error_set(err, TT_EUSAGE, "lock %s is already held by this handle", path);
		goto done;
	}
	dir = tt_dirname(path);
	copy = tt_strdup(path);
	if (!dir || !copy) {
		rc = tt_error_oom(err);
		goto done;
	}
	rc = tt_mkdirs(dir, 0777, err);
	if (rc)
		goto done;
	/* What Python's open(path, "a+") does. */
	fd = open(path, O_RDWR | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
	if (fd < 0) {
		rc = tt_error_errno(err, errno, "cannot open lock file %s", path);
		goto done;
	}
	int64_t deadline = now_ms() + (timeout_ms > 0 ? timeout_ms : 0);
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno == EINTR)
			continue;
		if (errno != EWOULDBLOCK) {
			rc = tt_error_errno(err, errno, "cannot lock %s", path);
			goto done;
		}
		int64_t left = deadline - now_ms();
		if (left <= 0) {
			rc = tt_error_set(err, TT_ELOCKED,
					  "another tether command is %s (%s is locked); wait for it to finish",
					  what && *what ? what : "running", path);
			goto done;
		}
		sleep_ms(left < POLL_MS ? left : POLL_MS);
	}
	l->fd = fd;
	l->path = copy;
	fd = -1;
	copy = NULL;

done:
	if (fd >= 0)
		close(fd);
	free(copy);
	free(dir);
	return rc;
}

void tt_lock_release(tt_lock *l)
{
	if (!l)
		return;
	if (l->fd >= 0) {
		flock(l->fd, LOCK_UN);
		close(l->fd);
	}
	l->fd = -1;
	free(l->path);
	l->path = NULL;
}
