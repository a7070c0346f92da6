/* Unit tests for util/proc: running programs, capture, caps, timeouts,
 * environment scrubbing, streaming children, and concurrency. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness.h"
#include "util/fs.h"
#include "util/mem.h"
#include "util/proc.h"

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* True when this process has no child left (everything was reaped). */
static int no_children(void)
{
	return waitpid(-1, NULL, WNOHANG) < 0 && errno == ECHILD;
}

static char *pattern(size_t n, unsigned seed)
{
	char *p = tt_malloc(n);
	if (!p)
		return NULL;
	uint32_t x = seed * 2654435761u + 1;
	for (size_t i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p[i] = (char)(x & 0xff);
	}
	return p;
}

TT_TEST(run_captures_stdout_and_stderr)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *argv[] = { "echo", "hello", "world", NULL };
	tt_proc_opts o = { .argv = argv };
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK_INT(r.status, 0);
	CHECK(!r.signaled && !r.timed_out);
	CHECK_STR(r.out.ptr, "hello world\n");
	CHECK_INT(r.err.len, 0);

	const char *sh[] = { "sh", "-c", "echo out; echo err >&2; exit 3", NULL };
	o.argv = sh;
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK_INT(r.status, 3);
	CHECK_STR(r.out.ptr, "out\n");
	CHECK_STR(r.err.ptr, "err\n");
	tt_proc_result_release(&r);
	CHECK(no_children());
}

TT_TEST(run_exit_codes_and_signals)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *f[] = { "false", NULL };
	tt_proc_opts o = { .argv = f };
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK_INT(r.status, 1);
	CHECK(!r.signaled);
	const char *term[] = { "sh", "-c", "kill -TERM $$", NULL };
	o.argv = term;
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK_INT(r.status, 128 + SIGTERM);
	CHECK(r.signaled);
	const char *e7[] = { "/bin/sh", "-c", "exit 7", NULL };
	o.argv = e7;
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK_INT(r.status, 7);
	tt_proc_result_release(&r);
}

TT_TEST(run_stdin_roundtrip_8mib)
{
	tt_error err = TT_ERROR_INIT;
	size_t n = (size_t)8 << 20;
	char *data = pattern(n, 1);
	CHECK(data);
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *argv[] = { "cat", NULL };
	tt_proc_opts o = { .argv = argv, .stdin_data = data, .stdin_len = n, .timeout_ms = 60000 };
	int rc = tt_proc_run(&o, &r, &err);
	int ok = rc == 0 && r.status == 0 && r.out.len == n && !memcmp(r.out.ptr, data, n);
	/* Both output streams big at once, while input is still flowing. */
	const char *tee[] = { "tee", "/dev/stderr", NULL };
	o.argv = tee;
	rc = tt_proc_run(&o, &r, &err);
	ok = ok && rc == 0 && r.status == 0 && r.out.len == n && r.err.len == n &&
	     !memcmp(r.out.ptr, data, n) && !memcmp(r.err.ptr, data, n);
	free(data);
	tt_proc_result_release(&r);
	CHECK(ok);
}

TT_TEST(run_child_not_reading_stdin_is_fine)
{
	tt_error err = TT_ERROR_INIT;
	size_t n = (size_t)4 << 20;
	char *data = pattern(n, 2);
	CHECK(data);
	sigset_t before, after;
	pthread_sigmask(SIG_SETMASK, NULL, &before);
	struct sigaction sa_before, sa_after;
	sigaction(SIGPIPE, NULL, &sa_before);
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *argv[] = { "true", NULL };
	tt_proc_opts o = { .argv = argv, .stdin_data = data, .stdin_len = n };
	int rc = tt_proc_run(&o, &r, &err);
	free(data);
	CHECK_INT(rc, 0);
	CHECK_INT(r.status, 0);
	tt_proc_result_release(&r);
	/* Still alive after the EPIPE, and nothing global changed. */
	pthread_sigmask(SIG_SETMASK, NULL, &after);
	CHECK(sigismember(&before, SIGPIPE) == sigismember(&after, SIGPIPE));
	sigaction(SIGPIPE, NULL, &sa_after);
	CHECK(sa_before.sa_handler == sa_after.sa_handler);
	sigset_t pending;
	sigpending(&pending);
	CHECK(!sigismember(&pending, SIGPIPE));
}

/* The hex mask on the "<field>:" line of /proc/self/status output. */
static unsigned long long status_mask(const char *out, const char *field)
{
	const char *p = strstr(out, field);
	return p ? strtoull(p + strlen(field), NULL, 16) : ~0ULL;
}

TT_TEST(run_child_signal_state)
{
	tt_error err = TT_ERROR_INIT;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe, old_hup;
	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old_pipe);
	sigaction(SIGHUP, &ign, &old_hup);
	sigset_t usr1, old_mask;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, &old_mask);
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *argv[] = { "grep", "-E", "^Sig(Ign|Blk):", "/proc/self/status", NULL };
	tt_proc_opts o = { .argv = argv };
	int rc = tt_proc_run(&o, &r, &err);
	sigaction(SIGPIPE, &old_pipe, NULL);
	sigaction(SIGHUP, &old_hup, NULL);
	pthread_sigmask(SIG_SETMASK, &old_mask, NULL);
	CHECK_OK(rc);
	unsigned long long ignored = status_mask(r.out.ptr, "SigIgn:");
	unsigned long long blocked = status_mask(r.out.ptr, "SigBlk:");
	tt_proc_result_release(&r);
	CHECK(!(ignored & (1ULL << (SIGPIPE - 1))));  /* back to its default */
	CHECK(ignored & (1ULL << (SIGHUP - 1)));      /* nohup's choice is kept */
	CHECK_INT(blocked, 0);                        /* an empty mask */
}

TT_TEST(run_cap_exceeded_is_an_error)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *argv[] = { "head", "-c", "10000000", "/dev/zero", NULL };
	tt_proc_opts o = { .argv = argv, .max_out = 1000 };
	CHECK_INT(tt_proc_run(&o, &r, &err), TT_ELIMIT);
	CHECK(strstr(err.message, "stdout"));
	CHECK(strstr(err.message, "1000-byte"));
	CHECK(r.out.len <= 1000);
	CHECK(no_children());
	tt_error_clear(&err);

	const char *e[] = { "sh", "-c", "head -c 10000000 /dev/zero >&2", NULL };
	o.argv = e;
	o.max_out = 0;
	o.max_err = 4096;
	CHECK_INT(tt_proc_run(&o, &r, &err), TT_ELIMIT);
	CHECK(strstr(err.message, "stderr"));
	CHECK(no_children());
	tt_error_clear(&err);

	/* Exactly at the cap is fine. */
	const char *x[] = { "head", "-c", "1000", "/dev/zero", NULL };
	o.argv = x;
	o.max_out = 1000;
	o.max_err = 0;
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK_INT(r.out.len, 1000);
	tt_proc_result_release(&r);
}

TT_TEST(run_timeout_kills)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *argv[] = { "sleep", "10", NULL };
	tt_proc_opts o = { .argv = argv, .timeout_ms = 300 };
	int64_t t0 = now_ms();
	int rc = tt_proc_run(&o, &r, &err);
	int64_t dt = now_ms() - t0;
	CHECK(rc < 0);
	CHECK(r.timed_out);
	CHECK(r.signaled);
	CHECK_INT(r.status, 128 + SIGKILL);
	CHECK_MSG(dt >= 250 && dt < 3000, "took %lld ms", (long long)dt);
	CHECK(strstr(err.message, "timed out"));
	CHECK(no_children());
	tt_error_clear(&err);

	/* The child closed its output but keeps running. */
	const char *quiet[] = { "sh", "-c", "exec >&- 2>&-; sleep 10", NULL };
	o.argv = quiet;
	t0 = now_ms();
	rc = tt_proc_run(&o, &r, &err);
	dt = now_ms() - t0;
	CHECK(rc < 0 && r.timed_out);
	CHECK_MSG(dt < 3000, "took %lld ms", (long long)dt);
	CHECK(no_children());
	tt_error_clear(&err);

	/* A quick child under a timeout is unaffected. */
	const char *t[] = { "true", NULL };
	o.argv = t;
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK(!r.timed_out);
	tt_proc_result_release(&r);
}

/* Does env output contain the line "NAME=..." for this exact name? */
static const char *env_line(const char *out, const char *name_eq)
{
	size_t l = strlen(name_eq);
	for (const char *p = out; p && *p;) {
		if (!strncmp(p, name_eq, l))
			return p + l;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

TT_TEST(run_env_scrub_and_set)
{
	tt_error err = TT_ERROR_INIT;
	setenv("TT_TEST_SECRET", "s3cret", 1);
	setenv("TT_TEST_SECRET_LONGER", "kept", 1);
	setenv("TTPFX_ONE", "1", 1);
	setenv("TTPFX_TWO", "2", 1);
	setenv("TT_TEST_OVERRIDE", "old", 1);
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *argv[] = { "env", NULL };
	const char *unset[] = { "TT_TEST_SECRET", "TTPFX_*", NULL };
	const char *set[] = { "TT_TEST_NEW=fresh value", "TT_TEST_OVERRIDE=new", NULL };
	tt_proc_opts o = { .argv = argv, .env_unset = unset, .env_set = set };
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK_INT(r.status, 0);
	CHECK(!env_line(r.out.ptr, "TT_TEST_SECRET="));
	CHECK(!env_line(r.out.ptr, "TTPFX_"));
	CHECK(env_line(r.out.ptr, "TT_TEST_SECRET_LONGER="));  /* exact means exact */
	CHECK(env_line(r.out.ptr, "PATH="));
	const char *v = env_line(r.out.ptr, "TT_TEST_NEW=");
	CHECK(v && !strncmp(v, "fresh value\n", 12));
	v = env_line(r.out.ptr, "TT_TEST_OVERRIDE=");
	CHECK(v && !strncmp(v, "new\n", 4));
	CHECK(!strstr(r.out.ptr, "TT_TEST_OVERRIDE=old"));
	/* The parent's environment is untouched. */
	CHECK_STR(getenv("TT_TEST_SECRET"), "s3cret");
	CHECK_STR(getenv("TTPFX_ONE"), "1");
	tt_proc_result_release(&r);

	const char *bad[] = { "NOEQUALS", NULL };
	o.env_set = bad;
	CHECK_INT(tt_proc_run(&o, &r, &err), TT_EUSAGE);
	tt_error_clear(&err);
	unsetenv("TT_TEST_SECRET");
	unsetenv("TT_TEST_SECRET_LONGER");
	unsetenv("TTPFX_ONE");
	unsetenv("TTPFX_TWO");
	unsetenv("TT_TEST_OVERRIDE");
}

TT_TEST(run_not_found_and_cwd)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *argv[] = { "tt-no-such-program-xyz", "arg", NULL };
	tt_proc_opts o = { .argv = argv };
	CHECK_INT(tt_proc_run(&o, &r, &err), TT_ENOTFOUND);
	CHECK(strstr(err.message, "tt-no-such-program-xyz"));
	tt_error_clear(&err);
	const char *abs[] = { "/nonexistent/dir/prog", NULL };
	o.argv = abs;
	CHECK_INT(tt_proc_run(&o, &r, &err), TT_ENOTFOUND);
	CHECK(strstr(err.message, "/nonexistent/dir/prog"));
	tt_error_clear(&err);

	char real[PATH_MAX];
	CHECK(realpath(tt_test_tmpdir(), real) != NULL);
	const char *pwd[] = { "pwd", "-P", NULL };
	o.argv = pwd;
	o.cwd = tt_test_tmpdir();
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK(r.out.len > 0);
	r.out.ptr[r.out.len - 1] = '\0';
	CHECK_STR(r.out.ptr, real);
	char *missing = tt_path_join(tt_test_tmpdir(), "missing");
	o.cwd = missing;
	CHECK_INT(tt_proc_run(&o, &r, &err), TT_ENOTFOUND);
	CHECK(strstr(err.message, missing));
	tt_error_clear(&err);
	free(missing);
	tt_proc_result_release(&r);

	const char *none[] = { NULL };
	o.argv = none;
	CHECK_INT(tt_proc_run(&o, &r, &err), TT_EUSAGE);
	tt_error_clear(&err);
}

TT_TEST(run_relative_program_paths)
{
	tt_error err = TT_ERROR_INIT;
	const char *dir = tt_test_tmpdir();
	char *script = tt_path_join(dir, "bin/hello.sh");
	CHECK_OK(tt_write_file_atomic(script, "#!/bin/sh\necho hi from $0\n", 25, 0755, &err));
	tt_proc_result r;
	tt_proc_result_init(&r);
	/* A relative path with a '/' is relative to cwd. */
	const char *rel[] = { "./bin/hello.sh", NULL };
	tt_proc_opts o = { .argv = rel, .cwd = dir };
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK_STR(r.out.ptr, "hi from ./bin/hello.sh\n");
	/* A relative PATH entry is relative to our directory, not cwd. */
	char *old_cwd = tt_getcwd();
	char *old_path = tt_strdup(getenv("PATH"));
	CHECK(old_cwd && old_path);
	char *path = tt_asprintf("bin:%s", old_path);
	CHECK(chdir(dir) == 0);
	setenv("PATH", path, 1);
	const char *bare[] = { "hello.sh", NULL };
	o.argv = bare;
	o.cwd = "/";
	int rc = tt_proc_run(&o, &r, &err);
	setenv("PATH", old_path, 1);
	CHECK(chdir(old_cwd) == 0);
	free(path);
	free(old_path);
	free(old_cwd);
	free(script);
	CHECK_OK(rc);
	/* The kernel hands the interpreter the (absolute) path it executed. */
	CHECK(!strncmp(r.out.ptr, "hi from /", 9));
	CHECK(strstr(r.out.ptr, "/bin/hello.sh\n"));
	tt_proc_result_release(&r);
}

TT_TEST(run_closes_other_fds)
{
	tt_error err = TT_ERROR_INIT;
	/* A descriptor without O_CLOEXEC must not reach the child. */
	int fds[2];
	CHECK(pipe(fds) == 0);
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *argv[] = { "ls", "/proc/self/fd", NULL };
	tt_proc_opts o = { .argv = argv };
	int rc = tt_proc_run(&o, &r, &err);
	close(fds[0]);
	close(fds[1]);
	CHECK_OK(rc);
	/* ls itself opens one fd for the directory: 0 1 2 3 at most. */
	CHECK_STR(r.out.ptr, "0\n1\n2\n3\n");
	tt_proc_result_release(&r);
}

TT_TEST(which_searches_path)
{
	char *sh = tt_proc_which("sh");
	CHECK(sh && sh[0] == '/');
	free(sh);
	CHECK(tt_proc_which("tt-no-such-program-xyz") == NULL);
	char *abs = tt_proc_which("/bin/sh");
	CHECK_STR(abs, "/bin/sh");
	free(abs);
	CHECK(tt_proc_which("/etc/passwd") == NULL);  /* not executable */
	CHECK(tt_proc_which("") == NULL);
}

TT_TEST(stream_cat_line_by_line)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc *p = NULL;
	const char *argv[] = { "cat", NULL };
	tt_proc_opts o = { .argv = argv, .timeout_ms = 10000 };
	CHECK_OK(tt_proc_spawn(&p, &o, &err));
	tt_buf line = TT_BUF_INIT;
	int ok = 1;
	for (int i = 0; i < 200 && ok; i++) {
		char req[64];
		int n = snprintf(req, sizeof req, "request %d\n", i);
		ok = tt_proc_write(p, req, (size_t)n, &err) == 0 &&
		     tt_proc_read_line(p, &line, &err) == 0 && line.len == (size_t)n - 1 &&
		     !memcmp(line.ptr, req, (size_t)n - 1);
	}
	/* Several lines in one write come back one at a time. */
	ok = ok && tt_proc_write(p, "x\n\ny\n", 5, &err) == 0;
	ok = ok && tt_proc_read_line(p, &line, &err) == 0 && !strcmp(line.ptr, "x");
	ok = ok && tt_proc_read_line(p, &line, &err) == 0 && !strcmp(line.ptr, "");
	ok = ok && tt_proc_read_line(p, &line, &err) == 0 && !strcmp(line.ptr, "y");
	int status = -1;
	int rc = tt_proc_finish(p, &status, NULL, &err);
	tt_buf_release(&line);
	CHECK(ok);
	CHECK_OK(rc);
	CHECK_INT(status, 0);
	CHECK(no_children());
}

TT_TEST(stream_read_line_eof_and_partial)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc *p = NULL;
	const char *argv[] = { "printf", "a\\nlast", NULL };
	tt_proc_opts o = { .argv = argv };
	CHECK_OK(tt_proc_spawn(&p, &o, &err));
	tt_buf line = TT_BUF_INIT;
	int a = tt_proc_read_line(p, &line, &err);
	int ok = a == 0 && !strcmp(line.ptr, "a");
	int b = tt_proc_read_line(p, &line, &err);
	ok = ok && b == 0 && !strcmp(line.ptr, "last");
	int c = tt_proc_read_line(p, &line, &err);
	ok = ok && c == 1 && line.len == 0;
	tt_buf tail = TT_BUF_INIT;
	ok = ok && tt_proc_read_exact(p, &tail, 1, &err) == TT_EIO;
	tt_error_clear(&err);
	int status = -1;
	CHECK_OK(tt_proc_finish(p, &status, NULL, &err));
	tt_buf_release(&line);
	tt_buf_release(&tail);
	CHECK(ok);
	CHECK_INT(status, 0);
}

TT_TEST(stream_drains_stderr_meanwhile)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc *p = NULL;
	/* 1 MB of stderr before the line: blocks unless stderr is drained. */
	const char *argv[] = { "sh", "-c", "head -c 1000000 /dev/zero >&2; echo done; exit 4", NULL };
	tt_proc_opts o = { .argv = argv, .timeout_ms = 20000 };
	CHECK_OK(tt_proc_spawn(&p, &o, &err));
	tt_buf line = TT_BUF_INIT;
	int rc = tt_proc_read_line(p, &line, &err);
	int ok = rc == 0 && !strcmp(line.ptr, "done");
	tt_buf errout = TT_BUF_INIT;
	int status = -1;
	rc = tt_proc_finish(p, &status, &errout, &err);
	ok = ok && rc == 0 && status == 4 && errout.len == 1000000;
	tt_buf_release(&line);
	tt_buf_release(&errout);
	CHECK(ok);
}

TT_TEST(stream_timeout_and_big_write)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc *p = NULL;
	const char *argv[] = { "sleep", "10", NULL };
	tt_proc_opts o = { .argv = argv, .timeout_ms = 200 };
	CHECK_OK(tt_proc_spawn(&p, &o, &err));
	tt_buf line = TT_BUF_INIT;
	int64_t t0 = now_ms();
	int rc = tt_proc_read_line(p, &line, &err);
	int64_t dt = now_ms() - t0;
	tt_error_clear(&err);
	int status = -1;
	int frc = tt_proc_finish(p, &status, NULL, &err);
	tt_error_clear(&err);
	tt_buf_release(&line);
	CHECK(rc < 0);
	CHECK(frc < 0);  /* the failure is reported again */
	CHECK_INT(status, 128 + SIGKILL);
	CHECK_MSG(dt < 3000, "took %lld ms", (long long)dt);
	CHECK(no_children());

	/* Writing far more than a pipe holds before reading anything: the
	 * output is buffered meanwhile, so cat never blocks. */
	const char *cat[] = { "cat", NULL };
	o.argv = cat;
	o.timeout_ms = 20000;
	CHECK_OK(tt_proc_spawn(&p, &o, &err));
	size_t n = (size_t)4 << 20;
	char *data = pattern(n, 3);
	CHECK(data);
	tt_buf got = TT_BUF_INIT;
	int ok = tt_proc_write(p, data, n, &err) == 0 && tt_proc_read_exact(p, &got, n, &err) == 0 &&
		 got.len == n && !memcmp(got.ptr, data, n);
	free(data);
	tt_buf_release(&got);
	CHECK_OK(tt_proc_finish(p, &status, NULL, &err));
	CHECK(ok);
	CHECK_INT(status, 0);
}

TT_TEST(stream_write_after_exit_fails_cleanly)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc *p = NULL;
	const char *argv[] = { "true", NULL };
	tt_proc_opts o = { .argv = argv, .timeout_ms = 10000 };
	CHECK_OK(tt_proc_spawn(&p, &o, &err));
	tt_buf line = TT_BUF_INIT;
	CHECK_INT(tt_proc_read_line(p, &line, &err), 1);  /* EOF: it exited */
	size_t n = 1 << 20;
	char *data = tt_calloc(1, n);
	CHECK(data);
	int rc = tt_proc_write(p, data, n, &err);
	free(data);
	tt_error_clear(&err);
	int status = -1;
	CHECK_OK(tt_proc_finish(p, &status, NULL, &err));
	tt_buf_release(&line);
	CHECK_INT(rc, TT_EIO);
	CHECK_INT(status, 0);
	sigset_t pending;
	sigpending(&pending);
	CHECK(!sigismember(&pending, SIGPIPE));
}

static const char *const git_unset[] = { "GIT_*", NULL };

static int git(const char *repo, const char *const *set, const char *in, tt_proc_result *r, tt_error *err,
	       const char *a1, const char *a2, const char *a3, const char *a4)
{
	const char *argv[] = { "git", a1, a2, a3, a4, NULL };
	tt_proc_opts o = { .argv = argv, .cwd = repo, .env_set = set, .env_unset = git_unset,
			   .stdin_data = in, .stdin_len = in ? strlen(in) : 0, .timeout_ms = 30000 };
	int rc = tt_proc_run(&o, r, err);
	if (!rc && r->status != 0)
		rc = tt_error_set(err, TT_EVCS, "git %s failed: %s", a1, r->err.ptr);
	return rc;
}

TT_TEST(stream_git_cat_file_batch)
{
	tt_error err = TT_ERROR_INIT;
	char *git_path = tt_proc_which("git");
	if (!git_path) {
		printf("  (git not installed: skipped)\n");
		return;
	}
	free(git_path);
	const char *repo = tt_test_tmpdir();
	char *home_env = tt_asprintf("HOME=%s", repo);
	const char *set[] = { home_env, "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "LC_ALL=C", NULL };
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *content = "first line\nsecond line\n";
	CHECK_OK(git(repo, set, NULL, &r, &err, "init", "-q", NULL, NULL));
	CHECK_OK(git(repo, set, content, &r, &err, "hash-object", "-w", "--stdin", NULL));
	CHECK_INT(r.out.len, 41);
	char oid[41];
	memcpy(oid, r.out.ptr, 40);
	oid[40] = '\0';
	tt_proc_result_release(&r);

	tt_proc *p = NULL;
	const char *argv[] = { "git", "cat-file", "--batch", NULL };
	tt_proc_opts o = { .argv = argv, .cwd = repo, .env_set = set, .env_unset = git_unset,
			   .timeout_ms = 30000 };
	CHECK_OK(tt_proc_spawn(&p, &o, &err));
	tt_buf line = TT_BUF_INIT, blob = TT_BUF_INIT, nl = TT_BUF_INIT;
	char *want_header = tt_asprintf("%s blob %zu", oid, strlen(content));
	char *missing = tt_asprintf("%040d missing", 0);
	int ok = 1;
	for (int round = 0; round < 3 && ok; round++) {
		char req[128];
		snprintf(req, sizeof req, "%s\n%040d\n", oid, 0);
		tt_buf_reset(&blob);
		tt_buf_reset(&nl);
		ok = tt_proc_write(p, req, strlen(req), &err) == 0 &&
		     tt_proc_read_line(p, &line, &err) == 0 && !strcmp(line.ptr, want_header) &&
		     tt_proc_read_exact(p, &blob, strlen(content), &err) == 0 &&
		     !strcmp(blob.ptr, content) && tt_proc_read_exact(p, &nl, 1, &err) == 0 &&
		     !strcmp(nl.ptr, "\n") && tt_proc_read_line(p, &line, &err) == 0 &&
		     !strcmp(line.ptr, missing);
	}
	int status = -1;
	tt_buf errout = TT_BUF_INIT;
	int rc = tt_proc_finish(p, &status, &errout, &err);
	free(want_header);
	free(missing);
	free(home_env);
	tt_buf_release(&line);
	tt_buf_release(&blob);
	tt_buf_release(&nl);
	tt_buf_release(&errout);
	CHECK_MSG(ok, "cat-file exchange failed: %s", err.message ? err.message : "");
	CHECK_OK(rc);
	CHECK_INT(status, 0);
}

/* Eight threads, each running children at the same time. */
static void *concurrent_worker(void *arg)
{
	unsigned id = (unsigned)(uintptr_t)arg;
	size_t n = 200000 + id * 1000;
	char *data = pattern(n, id + 10);
	int ok = data != NULL;
	for (int i = 0; i < 10 && ok; i++) {
		tt_error err = TT_ERROR_INIT;
		tt_proc_result r;
		tt_proc_result_init(&r);
		const char *argv[] = { "cat", NULL };
		tt_proc_opts o = { .argv = argv, .stdin_data = data, .stdin_len = n, .timeout_ms = 60000 };
		ok = tt_proc_run(&o, &r, &err) == 0 && r.status == 0 && r.out.len == n &&
		     !memcmp(r.out.ptr, data, n);
		tt_proc_result_release(&r);
		/* And a streaming child, whose EOF needs every other thread's
		 * children not to hold its stdin open. */
		tt_proc *p = NULL;
		tt_buf line = TT_BUF_INIT;
		int status = -1;
		ok = ok && tt_proc_spawn(&p, &o, &err) == 0;
		if (p) {
			ok = ok && tt_proc_write(p, "ping\n", 5, &err) == 0 &&
			     tt_proc_read_line(p, &line, &err) == 0 && !strcmp(line.ptr, "ping");
			ok = tt_proc_finish(p, &status, NULL, &err) == 0 && ok && status == 0;
		}
		tt_buf_release(&line);
		tt_error_clear(&err);
	}
	free(data);
	return ok ? arg : NULL;
}

TT_TEST(run_from_eight_threads)
{
	pthread_t t[8];
	for (unsigned i = 0; i < 8; i++)
		CHECK(pthread_create(&t[i], NULL, concurrent_worker, (void *)(uintptr_t)(i + 1)) == 0);
	int ok = 1;
	for (unsigned i = 0; i < 8; i++) {
		void *res = NULL;
		pthread_join(t[i], &res);
		ok = ok && res == (void *)(uintptr_t)(i + 1);
	}
	CHECK(ok);
	CHECK(no_children());
}

TT_TEST(run_large_output_without_input)
{
	tt_error err = TT_ERROR_INIT;
	tt_proc_result r;
	tt_proc_result_init(&r);
	const char *argv[] = { "head", "-c", "20000000", "/dev/zero", NULL };
	tt_proc_opts o = { .argv = argv };
	CHECK_OK(tt_proc_run(&o, &r, &err));
	CHECK_INT(r.out.len, 20000000);
	tt_proc_result_release(&r);
}

/* ---- tt_proc_stream: output as it comes, stop on request ---------------- */

static void collect(void *ctx, const char *data, size_t len)
{
	tt_buf_put(ctx, data, len);
}

static bool stop_after(void *ctx)
{
	int64_t *at = ctx;
	return now_ms() >= *at;
}

TT_TEST(stream_merges_stderr_and_reports_status)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf got = TT_BUF_INIT;
	const char *argv[] = { "/bin/sh", "-c", "echo one; echo two >&2; echo three; exit 5", NULL };
	tt_proc_opts o = { .argv = argv, .merge_stderr = true, .own_group = true };
	int status = -1;
	bool stopped = true;
	CHECK_OK(tt_proc_stream(&o, collect, &got, NULL, NULL, &status, &stopped, &err));
	CHECK_INT(status, 5);
	CHECK(!stopped);
	CHECK_STR(got.ptr, "one\ntwo\nthree\n");
	/* without merge_stderr, stderr is not the sink's */
	tt_buf_reset(&got);
	o.merge_stderr = false;
	CHECK_OK(tt_proc_stream(&o, collect, &got, NULL, NULL, &status, NULL, &err));
	CHECK_STR(got.ptr, "one\nthree\n");
	tt_buf_release(&got);
	CHECK(no_children());
}

TT_TEST(stream_stop_kills_the_whole_group)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf got = TT_BUF_INIT;
	/* the shell's child keeps the pipe open: stopping must end it too */
	const char *argv[] = { "/bin/sh", "-c", "echo started; sleep 30; echo never", NULL };
	tt_proc_opts o = { .argv = argv, .merge_stderr = true, .own_group = true };
	int64_t at = now_ms() + 300, t0 = now_ms();
	int status = 0;
	bool stopped = false;
	CHECK_OK(tt_proc_stream(&o, collect, &got, stop_after, &at, &status, &stopped, &err));
	int64_t dt = now_ms() - t0;
	CHECK(stopped);
	CHECK_INT(status, 128 + SIGTERM);
	CHECK_STR(got.ptr, "started\n");
	CHECK_MSG(dt < 5000, "took %lld ms", (long long)dt);
	tt_buf_release(&got);
	CHECK(no_children());
}

TT_TEST(stream_does_not_wait_for_what_the_child_left_running)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf got = TT_BUF_INIT;
	const char *argv[] = { "/bin/sh", "-c", "sleep 5 & echo done", NULL };
	tt_proc_opts o = { .argv = argv, .merge_stderr = true };
	int64_t t0 = now_ms();
	int status = -1;
	CHECK_OK(tt_proc_stream(&o, collect, &got, NULL, NULL, &status, NULL, &err));
	CHECK_INT(status, 0);
	CHECK_STR(got.ptr, "done\n");
	CHECK_MSG(now_ms() - t0 < 3000, "took %lld ms", (long long)(now_ms() - t0));
	tt_buf_release(&got);
}
