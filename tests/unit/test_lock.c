/* Unit tests for util/lock: flock(2) exclusion within a process, against a
 * forked child, and against Python's fcntl.flock (tether-vcs). */
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "util/fs.h"
#include "util/lock.h"
#include "util/mem.h"
#include "util/proc.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

TT_TEST(second_acquire_times_out_then_succeeds)
{
	tt_error err = TT_ERROR_INIT;
	char *path = tt_path_join(tt_test_tmpdir(), "co/.tether/lock");
	tt_lock a = TT_LOCK_INIT, b = TT_LOCK_INIT;
	CHECK_OK(tt_lock_acquire(&a, path, "writing in this checkout", 1000, &err));
	CHECK(a.fd >= 0);
	CHECK_STR(a.path, path);
	CHECK(tt_is_file(path));  /* created, with its parent directories */
	CHECK(fcntl(a.fd, F_GETFD) & FD_CLOEXEC);

	int64_t t0 = now_ms();
	int rc = tt_lock_acquire(&b, path, "writing in this checkout", 300, &err);
	int64_t dt = now_ms() - t0;
	CHECK_INT(rc, TT_ELOCKED);
	CHECK_INT(err.code, TT_ELOCKED);
	CHECK_MSG(dt >= 280 && dt < 1500, "gave up after %lld ms", (long long)dt);
	char *want = tt_asprintf("another tether command is writing in this checkout (%s is locked); "
				 "wait for it to finish", path);
	CHECK_STR(err.message, want);
	free(want);
	tt_error_clear(&err);
	CHECK(b.fd < 0 && b.path == NULL);

	/* timeout 0: one try. */
	t0 = now_ms();
	CHECK_INT(tt_lock_acquire(&b, path, "committing", 0, &err), TT_ELOCKED);
	CHECK(now_ms() - t0 < 200);
	CHECK(strstr(err.message, "is committing ("));
	tt_error_clear(&err);

	tt_lock_release(&a);
	CHECK(a.fd < 0 && a.path == NULL);
	tt_lock_release(&a);  /* idempotent */
	tt_lock_release(NULL);
	CHECK_OK(tt_lock_acquire(&b, path, "writing in this checkout", 300, &err));
	/* Taking a held handle again is a usage error, not a deadlock. */
	CHECK_INT(tt_lock_acquire(&b, path, "x", 0, &err), TT_EUSAGE);
	tt_error_clear(&err);
	tt_lock_release(&b);
	free(path);
}

TT_TEST(waiting_acquire_gets_the_lock_when_released)
{
	tt_error err = TT_ERROR_INIT;
	char *path = tt_path_join(tt_test_tmpdir(), "lock");
	int go[2];
	CHECK(pipe(go) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		tt_lock l = TT_LOCK_INIT;
		if (tt_lock_acquire(&l, path, "x", 1000, NULL) != 0)
			_exit(3);
		char c = 'L';
		if (write(go[1], &c, 1) != 1)
			_exit(4);
		struct timespec ts = { 0, 400 * 1000000L };
		nanosleep(&ts, NULL);
		tt_lock_release(&l);
		_exit(0);
	}
	char c = 0;
	CHECK(read(go[0], &c, 1) == 1 && c == 'L');
	tt_lock l = TT_LOCK_INIT;
	/* Held by the child: a short wait fails ... */
	CHECK_INT(tt_lock_acquire(&l, path, "x", 100, &err), TT_ELOCKED);
	tt_error_clear(&err);
	/* ... a longer one outlasts it. */
	int64_t t0 = now_ms();
	CHECK_OK(tt_lock_acquire(&l, path, "x", 5000, &err));
	CHECK(now_ms() - t0 < 2000);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	tt_lock_release(&l);
	close(go[0]);
	close(go[1]);
	free(path);
}

TT_TEST(forked_holder_blocks_us)
{
	tt_error err = TT_ERROR_INIT;
	char *path = tt_path_join(tt_test_tmpdir(), "repo/tether.lock");
	int ready[2], done[2];
	CHECK(pipe(ready) == 0 && pipe(done) == 0);
	pid_t pid = fork();
	CHECK(pid >= 0);
	if (pid == 0) {
		tt_lock l = TT_LOCK_INIT;
		if (tt_lock_acquire(&l, path, "x", 1000, NULL) != 0)
			_exit(3);
		char c = 'L';
		if (write(ready[1], &c, 1) != 1)
			_exit(4);
		if (read(done[0], &c, 1) < 0)  /* until the parent says so */
			_exit(5);
		_exit(0);  /* exiting releases the lock */
	}
	char c = 0;
	CHECK(read(ready[0], &c, 1) == 1);
	tt_lock l = TT_LOCK_INIT;
	int64_t t0 = now_ms();
	int rc = tt_lock_acquire(&l, path, "committing, collecting or forking in a checkout of this repository",
				 300, &err);
	int64_t dt = now_ms() - t0;
	CHECK(write(done[1], "x", 1) == 1);
	int st = 0;
	CHECK(waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	CHECK_INT(rc, TT_ELOCKED);
	CHECK(dt >= 280);
	CHECK(strstr(err.message, path));
	tt_error_clear(&err);
	CHECK_OK(tt_lock_acquire(&l, path, "x", 300, &err));
	tt_lock_release(&l);
	close(ready[0]);
	close(ready[1]);
	close(done[0]);
	close(done[1]);
	free(path);
}

TT_TEST(interoperates_with_python_fcntl_flock)
{
	tt_error err = TT_ERROR_INIT;
	char *py = tt_proc_which("python3");
	if (!py) {
		printf("  (python3 not installed: skipped)\n");
		return;
	}
	free(py);
	char *path = tt_path_join(tt_test_tmpdir(), "py/.tether/lock");
	/* Python holds it (the way tether-vcs does) until its stdin closes. */
	const char *holder[] = { "python3", "-c",
		"import fcntl, os, sys\n"
		"p = sys.argv[1]\n"
		"os.makedirs(os.path.dirname(p), exist_ok=True)\n"
		"fh = open(p, 'a+', encoding='utf-8')\n"
		"fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
		"print('locked', flush=True)\n"
		"sys.stdin.read()\n",
		path, NULL };
	tt_proc_opts o = { .argv = holder, .timeout_ms = 30000 };
	tt_proc *p = NULL;
	CHECK_OK(tt_proc_spawn(&p, &o, &err));
	tt_buf line = TT_BUF_INIT;
	int rc = tt_proc_read_line(p, &line, &err);
	int locked = rc == 0 && !strcmp(line.ptr, "locked");
	tt_lock l = TT_LOCK_INIT;
	int arc = tt_lock_acquire(&l, path, "writing in this checkout", 300, &err);
	tt_error_clear(&err);
	int status = -1;
	int frc = tt_proc_finish(p, &status, NULL, &err);
	tt_buf_release(&line);
	CHECK(locked);
	CHECK_INT(arc, TT_ELOCKED);
	CHECK_OK(frc);
	CHECK_INT(status, 0);

	/* And the other way round: we hold it, Python cannot take it. */
	CHECK_OK(tt_lock_acquire(&l, path, "writing in this checkout", 300, &err));
	const char *probe[] = { "python3", "-c",
		"import fcntl, sys\n"
		"fh = open(sys.argv[1], 'a+')\n"
		"try:\n"
		"    fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
		"except BlockingIOError:\n"
		"    sys.exit(7)\n",
		path, NULL };
	tt_proc_result r;
	tt_proc_result_init(&r);
	o.argv = probe;
	CHECK_OK(tt_proc_run(&o, &r, &err));
	int held_status = r.status;
	tt_lock_release(&l);
	CHECK_OK(tt_proc_run(&o, &r, &err));
	int free_status = r.status;
	tt_proc_result_release(&r);
	CHECK_INT(held_status, 7);
	CHECK_INT(free_status, 0);
	free(path);
}

TT_TEST(lock_errors)
{
	tt_error err = TT_ERROR_INIT;
	tt_lock l = TT_LOCK_INIT;
	char *file = tt_path_join(tt_test_tmpdir(), "file");
	CHECK_OK(tt_write_file_atomic(file, "x", 1, 0644, &err));
	char *under = tt_path_join(file, "lock");
	CHECK(tt_lock_acquire(&l, under, "x", 100, &err) < 0);
	CHECK(l.fd < 0);
	tt_error_clear(&err);
	CHECK_INT(tt_lock_acquire(&l, "", "x", 100, &err), TT_EUSAGE);
	tt_error_clear(&err);
	free(under);
	free(file);
}
