/*
 * util/proc.c - running other programs (see proc.h).
 *
 * Children are started with posix_spawn(): an argv vector, never a shell.
 * The child gets its three standard streams as pipes, every other
 * descriptor closed (the parent opens everything O_CLOEXEC and the spawn
 * also closes fds >= 3), an empty signal mask and SIGPIPE at its default.
 *
 * One poll(2) loop (pump()) moves bytes in all directions at once: it
 * writes pending stdin data while draining stdout and stderr into capped
 * buffers, so neither side can block the other however big the streams
 * are.  The parent's ends are non-blocking.  Writes block SIGPIPE in the
 * calling thread only for the duration of the write and consume a SIGPIPE
 * they raised, so the process's signal disposition is never touched.
 *
 * tt_proc_run() is tt_proc_spawn() plus a loop to the end.  A failure
 * (a stream passing its cap, a timeout) kills the child with SIGKILL and
 * reaps it before returning, so no zombie and no orphan is left behind.
 */
#define _GNU_SOURCE
#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/mem.h"

extern char **environ;

#define CHUNK 65536

struct tt_proc {
	pid_t pid;
	bool reaped;
	int wstatus;
	int in_fd, out_fd, err_fd;  /* the parent's ends; -1 once closed */
	bool in_broken;             /* a write to stdin hit EPIPE */
	tt_buf out;                 /* stdout read and not yet consumed */
	size_t out_pos;             /* consumed prefix of out */
	tt_buf err;                 /* stderr (capped) */
	int timeout_ms;
	bool group;                 /* the child leads its own process group */
	int failed;                 /* sticky failure: child killed */
	bool timed_out;
	char *failmsg;
	char *name;                 /* argv[0], for messages */
};

/* ---- small helpers ---------------------------------------------------- */

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd)
{
	if (*fd >= 0) {
		close(*fd);
		*fd = -1;
	}
}

/* Move a descriptor out of 0..2 so the child's dup2()s cannot clobber it. */
static int above_stdio(int fd)
{
	if (fd > 2)
		return fd;
	int nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	int saved = errno;
	close(fd);
	errno = saved;
	return nfd;
}

static int make_pipe(int fds[2])
{
	if (pipe2(fds, O_CLOEXEC) != 0)
		return -1;
	fds[0] = above_stdio(fds[0]);
	fds[1] = above_stdio(fds[1]);
	if (fds[0] < 0 || fds[1] < 0) {
		int saved = errno;
		close_fd(&fds[0]);
		close_fd(&fds[1]);
		errno = saved;
		return -1;
	}
	return 0;
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0)
		return -1;
	return fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

/*
 * write(2) that cannot kill the process with SIGPIPE: SIGPIPE is blocked in
 * this thread around the call, and one raised by it is consumed before the
 * mask is restored (unless one was already pending, which is left alone).
 */
static ssize_t write_nosigpipe(int fd, const void *data, size_t len)
{
	sigset_t pipe_set, old, pending;
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	int e = pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	if (e) {
		errno = e;
		return -1;
	}
	bool was_pending = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) == 1;
	ssize_t n;
	do
		n = write(fd, data, len);
	while (n < 0 && errno == EINTR);
	int saved = errno;
	if (n < 0 && saved == EPIPE && !was_pending) {
		struct timespec zero = { 0, 0 };
		while (sigtimedwait(&pipe_set, NULL, &zero) < 0 && errno == EINTR)
			;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	errno = saved;
	return n;
}

/* ---- environment ------------------------------------------------------ */

static bool name_matches(const char *entry, size_t nlen, const char *pat)
{
	size_t plen = strlen(pat);
	if (plen && pat[plen - 1] == '*')
		return nlen >= plen - 1 && strncmp(entry, pat, plen - 1) == 0;
	return nlen == plen && strncmp(entry, pat, nlen) == 0;
}

static bool listed(const char *entry, size_t nlen, const char *const *list, bool names_only)
{
	if (!list)
		return false;
	for (size_t i = 0; list[i]; i++) {
		if (names_only) {
			const char *eq = strchr(list[i], '=');
			size_t l = eq ? (size_t)(eq - list[i]) : strlen(list[i]);
			if (l == nlen && strncmp(entry, list[i], nlen) == 0)
				return true;
		} else if (name_matches(entry, nlen, list[i])) {
			return true;
		}
	}
	return false;
}

/* The child's environment: pointers into environ and env_set. */
static const char **build_env(const tt_proc_opts *o)
{
	size_t n = 0, ns = 0;
	for (char **e = environ; e && *e; e++)
		n++;
	if (o->env_set)
		while (o->env_set[ns])
			ns++;
	size_t total;
	if (!tt_add_ok(n, ns, &total) || !tt_add_ok(total, 1, &total))
		return NULL;
	const char **env = tt_reallocarray(NULL, total, sizeof *env);
	if (!env)
		return NULL;
	size_t k = 0;
	for (char **e = environ; e && *e; e++) {
		const char *eq = strchr(*e, '=');
		size_t nlen = eq ? (size_t)(eq - *e) : strlen(*e);
		if (listed(*e, nlen, o->env_unset, false) || listed(*e, nlen, o->env_set, true))
			continue;
		env[k++] = *e;
	}
	for (size_t i = 0; i < ns; i++)
		env[k++] = o->env_set[i];
	env[k] = NULL;
	return env;
}

/* ---- PATH lookup ------------------------------------------------------ */

static bool is_executable(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

char *tt_proc_which(const char *name)
{
	if (!name || !*name)
		return NULL;
	if (strchr(name, '/'))
		return is_executable(name) ? tt_strdup(name) : NULL;
	const char *path = getenv("PATH");
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	const char *p = path;
	for (;;) {
		const char *colon = strchr(p, ':');
		size_t dl = colon ? (size_t)(colon - p) : strlen(p);
		char *cand = dl ? tt_asprintf("%.*s/%s", (int)dl, p, name) : tt_asprintf("./%s", name);
		if (!cand)
			return NULL;
		if (is_executable(cand))
			return cand;
		free(cand);
		if (!colon)
			break;
		p = colon + 1;
	}
	return NULL;
}

/*
 * The path to hand to posix_spawn.  A relative path with a '/' is relative
 * to cwd (the child changes directory before exec, as Python's subprocess
 * does); a PATH hit in a relative PATH entry is made absolute, since it was
 * found relative to the parent's directory.
 */
static char *resolve_program(const char *name, const char *cwd)
{
	if (strchr(name, '/')) {
		if (name[0] == '/' || !cwd)
			return tt_proc_which(name);
		char *in_cwd = tt_asprintf("%s/%s", cwd, name);
		bool ok = in_cwd && is_executable(in_cwd);
		free(in_cwd);
		return ok ? tt_strdup(name) : NULL;
	}
	char *found = tt_proc_which(name);
	if (!found || found[0] == '/')
		return found;
	char *here = getcwd(NULL, 0);
	char *abs = here ? tt_asprintf("%s/%s", here, found) : NULL;
	free(here);
	free(found);
	return abs;
}

/* ---- the child -------------------------------------------------------- */

static void proc_free(tt_proc *p)
{
	if (!p)
		return;
	close_fd(&p->in_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	tt_buf_release(&p->out);
	tt_buf_release(&p->err);
	free(p->failmsg);
	free(p->name);
	free(p);
}

static void reap(tt_proc *p)
{
	if (p->reaped || p->pid <= 0)
		return;
	int st = 0;
	pid_t r;
	do
		r = waitpid(p->pid, &st, 0);
	while (r < 0 && errno == EINTR);
	p->reaped = true;
	p->wstatus = r == p->pid ? st : 0;
}

/*
 * Wait for the child until deadline (0: forever).  Returns 0 when reaped,
 * 1 when the deadline passed first.
 */
static int wait_child(tt_proc *p, int64_t deadline)
{
	if (p->reaped)
		return 0;
	if (!deadline) {
		reap(p);
		return 0;
	}
	long nap_us = 500;
	for (;;) {
		int st = 0;
		pid_t r = waitpid(p->pid, &st, WNOHANG);
		if (r == p->pid || (r < 0 && errno != EINTR)) {
			p->reaped = true;
			p->wstatus = r == p->pid ? st : 0;
			return 0;
		}
		int64_t left = deadline - now_ms();
		if (left <= 0)
			return 1;
		long us = nap_us;
		if ((int64_t)us > left * 1000)
			us = (long)(left * 1000);
		struct timespec ts = { us / 1000000, (us % 1000000) * 1000 };
		nanosleep(&ts, NULL);
		if (nap_us < 20000)
			nap_us *= 2;
	}
}

static void kill_child(tt_proc *p)
{
	if (!p->reaped && p->pid > 0)
		kill(p->group ? -p->pid : p->pid, SIGKILL);
	close_fd(&p->in_fd);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	reap(p);
}

/* Kill the child and remember why; returns code with err set. */
static int fail(tt_proc *p, tt_error *err, int code, const char *fmt, ...) TT_PRINTF(4, 5);
static int fail(tt_proc *p, tt_error *err, int code, const char *fmt, ...)
{
	kill_child(p);
	va_list ap;
	va_start(ap, fmt);
	char *msg = tt_vasprintf(fmt, ap);
	va_end(ap);
	if (!p->failed) {
		p->failed = code;
		free(p->failmsg);
		p->failmsg = msg;
		msg = NULL;
	}
	free(msg);
	if (!p->failmsg)
		return tt_error_oom(err);
	return tt_error_set(err, p->failed, "%s", p->failmsg);
}

static int sticky(const tt_proc *p, tt_error *err)
{
	if (!p->failmsg)
		return tt_error_oom(err);
	return tt_error_set(err, p->failed, "%s", p->failmsg);
}

static int fail_timeout(tt_proc *p, tt_error *err)
{
	p->timed_out = true;
	return fail(p, err, TT_ERROR, "%s timed out after %d ms and was killed", p->name, p->timeout_ms);
}

static int spawn_child(tt_proc **out, const tt_proc_opts *o, tt_error *err)
{
	int rc = 0;
	tt_proc *p = NULL;
	char *prog = NULL;
	const char **env = NULL;
	int in[2] = { -1, -1 }, outp[2] = { -1, -1 }, errp[2] = { -1, -1 };
	bool fa_init = false, attr_init = false;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;

	*out = NULL;
	if (!o || !o->argv || !o->argv[0] || !o->argv[0][0]) {
		rc = tt_error_set(err, TT_EUSAGE, "no program to run");
		goto done;
	}
	const char *name = o->argv[0];
	if (o->env_set) {
		for (size_t i = 0; o->env_set[i]; i++) {
			if (!strchr(o->env_set[i], '=') || o->env_set[i][0] == '=') {
				rc = tt_error_set(err, TT_EUSAGE, "running %s: environment entry \"%s\" is not NAME=value",
						  name, o->env_set[i]);
				goto done;
			}
		}
	}
	if (o->cwd) {
		struct stat st;
		if (stat(o->cwd, &st) != 0 || !S_ISDIR(st.st_mode)) {
			rc = tt_error_set(err, TT_ENOTFOUND, "cannot run %s in %s: no such directory", name, o->cwd);
			goto done;
		}
	}
	prog = resolve_program(name, o->cwd);
	if (!prog) {
		if (strchr(name, '/'))
			rc = tt_error_set(err, TT_ENOTFOUND, "cannot run %s: no such executable file", name);
		else
			rc = tt_error_set(err, TT_ENOTFOUND, "cannot run %s: program not found in PATH", name);
		goto done;
	}
	p = tt_calloc(1, sizeof *p);
	env = build_env(o);
	if (!p || !env) {
		rc = tt_error_oom(err);
		goto done;
	}
	p->in_fd = p->out_fd = p->err_fd = -1;
	p->pid = -1;
	tt_buf_init(&p->out, o->max_out ? o->max_out : TT_PROC_DEFAULT_CAP);
	tt_buf_init(&p->err, o->max_err ? o->max_err : TT_PROC_DEFAULT_CAP);
	p->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 0;
	p->name = tt_strdup(name);
	if (!p->name) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (make_pipe(in) || make_pipe(outp) || make_pipe(errp) || set_nonblock(in[1]) ||
	    set_nonblock(outp[0]) || set_nonblock(errp[0])) {
		rc = tt_error_errno(err, errno, "cannot run %s: creating pipes", name);
		goto done;
	}

	int e = posix_spawn_file_actions_init(&fa);
	fa_init = e == 0;
	if (!e)
		e = posix_spawn_file_actions_adddup2(&fa, in[0], 0);
	if (!e)
		e = posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
	if (!e)
		e = posix_spawn_file_actions_adddup2(&fa, o->merge_stderr ? outp[1] : errp[1], 2);
	if (!e && o->cwd)
		e = posix_spawn_file_actions_addchdir_np(&fa, o->cwd);
	if (!e)
		e = posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	if (!e) {
		e = posix_spawnattr_init(&attr);
		attr_init = e == 0;
	}
	if (!e) {
		/* An empty mask; SIGPIPE and SIGXFSZ back to their defaults (as
		 * Python's restore_signals does), so a parent that ignores SIGPIPE
		 * does not make `git ... | head` children spin on EPIPE.  Other
		 * ignored signals (nohup's SIGHUP) stay ignored; handled ones are
		 * reset by exec itself. */
		sigset_t none, dfl;
		sigemptyset(&none);
		sigemptyset(&dfl);
		sigaddset(&dfl, SIGPIPE);
		sigaddset(&dfl, SIGXFSZ);
		e = posix_spawnattr_setsigmask(&attr, &none);
		if (!e)
			e = posix_spawnattr_setsigdefault(&attr, &dfl);
		if (!e && o->own_group)
			e = posix_spawnattr_setpgroup(&attr, 0);
		if (!e)
			e = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF |
							    (o->own_group ? POSIX_SPAWN_SETPGROUP : 0));
	}
	if (!e)
		e = posix_spawn(&p->pid, prog, &fa, &attr, (char *const *)o->argv, (char *const *)env);
	if (e) {
		p->pid = -1;
		if (e == ENOENT)
			rc = tt_error_set(err, TT_ENOTFOUND, "cannot run %s: %s", name, strerror(e));
		else
			rc = tt_error_errno(err, e, "cannot run %s", name);
		goto done;
	}
	p->group = o->own_group;
	p->in_fd = in[1];
	p->out_fd = outp[0];
	p->err_fd = errp[0];
	in[1] = outp[0] = errp[0] = -1;
	*out = p;
	p = NULL;

done:
	if (fa_init)
		posix_spawn_file_actions_destroy(&fa);
	if (attr_init)
		posix_spawnattr_destroy(&attr);
	close_fd(&in[0]);
	close_fd(&in[1]);
	close_fd(&outp[0]);
	close_fd(&outp[1]);
	close_fd(&errp[0]);
	close_fd(&errp[1]);
	proc_free(p);
	free(env);
	free(prog);
	return rc;
}

/* Drop the consumed prefix of the stdout buffer. */
static void compact_out(tt_proc *p)
{
	if (!p->out_pos)
		return;
	size_t left = p->out.len - p->out_pos;
	if (left)
		memmove(p->out.ptr, p->out.ptr + p->out_pos, left);
	tt_buf_truncate(&p->out, left);
	p->out_pos = 0;
}

/* One read from a stream into its buffer; closes the fd at EOF. */
static int drain(tt_proc *p, int *fd, tt_buf *b, const char *stream, tt_error *err)
{
	char chunk[CHUNK];
	ssize_t n;
	do
		n = read(*fd, chunk, sizeof chunk);
	while (n < 0 && errno == EINTR);
	if (n == 0) {
		close_fd(fd);
		return 0;
	}
	if (n < 0) {
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		int e = errno;
		return fail(p, err, TT_EIO, "reading the %s of %s: %s", stream, p->name, strerror(e));
	}
	if (b == &p->out)
		compact_out(p);
	if (tt_buf_put(b, chunk, (size_t)n) != 0) {
		if (b->failed == TT_ELIMIT)
			return fail(p, err, TT_ELIMIT, "the %s of %s passed the %zu-byte limit; it was stopped",
				    stream, p->name, b->max);
		kill_child(p);
		return tt_error_oom(err);
	}
	return 0;
}

/*
 * One round of I/O: wait up to wait_ms (-1: forever) for any stream to be
 * ready, then write some of the pending (*wp, *wl) to stdin and read stdout and stderr.
 * Returns 0 after an event, 1 when the wait timed out (or there was nothing
 * to wait for), or a negative error (the child has been killed).
 */
static int pump(tt_proc *p, const unsigned char **wp, size_t *wl, int wait_ms, tt_error *err)
{
	struct pollfd fds[3];
	int nfds = 0, iin = -1, iout = -1, ierr = -1;
	if (p->in_fd >= 0 && wl && *wl) {
		iin = nfds;
		fds[nfds++] = (struct pollfd){ .fd = p->in_fd, .events = POLLOUT };
	}
	if (p->out_fd >= 0) {
		iout = nfds;
		fds[nfds++] = (struct pollfd){ .fd = p->out_fd, .events = POLLIN };
	}
	if (p->err_fd >= 0) {
		ierr = nfds;
		fds[nfds++] = (struct pollfd){ .fd = p->err_fd, .events = POLLIN };
	}
	if (!nfds)
		return 1;
	int r = poll(fds, (nfds_t)nfds, wait_ms);
	if (r < 0) {
		if (errno == EINTR)
			return 0;
		int e = errno;
		return fail(p, err, TT_EIO, "waiting for %s: %s", p->name, strerror(e));
	}
	if (r == 0)
		return 1;
	if (iin >= 0 && fds[iin].revents) {
		size_t n = *wl < CHUNK ? *wl : CHUNK;
		ssize_t w = write_nosigpipe(p->in_fd, *wp, n);
		if (w > 0) {
			*wp += w;
			*wl -= (size_t)w;
		} else if (w < 0 && errno == EPIPE) {
			p->in_broken = true;
			close_fd(&p->in_fd);
		} else if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
			int e = errno;
			return fail(p, err, TT_EIO, "writing to %s: %s", p->name, strerror(e));
		}
	}
	if (iout >= 0 && fds[iout].revents) {
		int rc = drain(p, &p->out_fd, &p->out, "output (stdout)", err);
		if (rc)
			return rc;
	}
	if (ierr >= 0 && fds[ierr].revents && p->err_fd >= 0) {
		int rc = drain(p, &p->err_fd, &p->err, "error output (stderr)", err);
		if (rc)
			return rc;
	}
	return 0;
}

static int remaining(int64_t deadline)
{
	if (!deadline)
		return -1;
	int64_t left = deadline - now_ms();
	if (left <= 0)
		return 0;
	return left > INT32_MAX ? INT32_MAX : (int)left;
}

static void fill_status(const tt_proc *p, int *status, bool *signaled)
{
	int st = p->wstatus, code = 0;
	bool sig = false;
	if (WIFEXITED(st)) {
		code = WEXITSTATUS(st);
	} else if (WIFSIGNALED(st)) {
		code = 128 + WTERMSIG(st);
		sig = true;
	}
	if (status)
		*status = code;
	if (signaled)
		*signaled = sig;
}

/* ---- run to completion ------------------------------------------------ */

void tt_proc_result_init(tt_proc_result *r)
{
	r->status = 0;
	r->signaled = false;
	r->timed_out = false;
	tt_buf_init(&r->out, 0);
	tt_buf_init(&r->err, 0);
}

void tt_proc_result_release(tt_proc_result *r)
{
	if (!r)
		return;
	tt_buf_release(&r->out);
	tt_buf_release(&r->err);
	tt_proc_result_init(r);
}

int tt_proc_run(const tt_proc_opts *opts, tt_proc_result *r, tt_error *err)
{
	tt_proc *p = NULL;
	tt_proc_result_release(r);
	int rc = spawn_child(&p, opts, err);
	if (rc)
		goto done;

	int64_t deadline = p->timeout_ms ? now_ms() + p->timeout_ms : 0;
	const unsigned char *wp = opts->stdin_data;
	size_t wl = wp ? opts->stdin_len : 0;
	for (;;) {
		if (wl == 0)
			close_fd(&p->in_fd);  /* all written (or broken): EOF for the child */
		if (p->out_fd < 0 && p->err_fd < 0 && wl == 0)
			break;
		int wait = remaining(deadline);
		if (wait == 0) {
			rc = fail_timeout(p, err);
			goto done;
		}
		rc = pump(p, &wp, &wl, wait, err);
		if (rc < 0)
			goto done;
		rc = 0;
		if (p->in_broken)
			wl = 0;  /* the child stopped reading: like Python, not an error */
	}
	close_fd(&p->in_fd);
	if (wait_child(p, deadline)) {
		rc = fail_timeout(p, err);
		goto done;
	}

done:
	if (p) {
		fill_status(p, &r->status, &r->signaled);
		r->timed_out = p->timed_out;
		r->out = p->out;
		r->err = p->err;
		tt_buf_init(&p->out, 0);
		tt_buf_init(&p->err, 0);
		kill_child(p);  /* no-op unless something went wrong above */
		proc_free(p);
	}
	return rc;
}

/* ---- run, streaming the output ---------------------------------------- */

int tt_proc_stream(const tt_proc_opts *opts, tt_proc_sink sink, void *sink_ctx, bool (*stop)(void *ctx),
		   void *stop_ctx, int *status, bool *stopped, tt_error *err)
{
	tt_proc *p = NULL;
	int64_t kill_at = 0;
	char chunk[CHUNK];
	if (status)
		*status = 0;
	if (stopped)
		*stopped = false;
	int rc = spawn_child(&p, opts, err);
	if (rc)
		return rc;
	close_fd(&p->in_fd); /* nothing to read: EOF */
	for (;;) {
		struct pollfd fds[2];
		int *which[2];
		nfds_t n = 0;
		if (p->out_fd >= 0) {
			fds[n] = (struct pollfd){ .fd = p->out_fd, .events = POLLIN };
			which[n++] = &p->out_fd;
		}
		if (p->err_fd >= 0) {
			fds[n] = (struct pollfd){ .fd = p->err_fd, .events = POLLIN };
			which[n++] = &p->err_fd;
		}
		if (!n)
			break;
		int r = poll(fds, n, 100);
		if (r < 0 && errno != EINTR) {
			rc = tt_error_errno(err, errno, "running %s: poll", p->name);
			break;
		}
		bool moved = false;
		for (nfds_t i = 0; r > 0 && i < n; i++) {
			if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t got;
			do
				got = read(*which[i], chunk, sizeof chunk);
			while (got < 0 && errno == EINTR);
			if (got < 0 && errno == EAGAIN)
				continue;
			if (got <= 0) {
				close_fd(which[i]);
				continue;
			}
			moved = true;
			if (sink && which[i] == &p->out_fd)
				sink(sink_ctx, chunk, (size_t)got);
		}
		if (stop && !kill_at && stop(stop_ctx)) {
			if (stopped)
				*stopped = true;
			kill(p->group ? -p->pid : p->pid, SIGTERM);
			kill_at = now_ms() + 2000;
		}
		if (kill_at && now_ms() >= kill_at) {
			kill(p->group ? -p->pid : p->pid, SIGKILL);
			kill_at = INT64_MAX;
		}
		/* The child is gone and what it left running keeps the pipe:
		 * what was written is read; the rest is not waited for. */
		if (!moved && !p->reaped)
			wait_child(p, now_ms());
		if (!moved && p->reaped)
			break;
	}
	if (rc == 0 && kill_at && !p->reaped)
		kill(p->group ? -p->pid : p->pid, SIGKILL);
	close_fd(&p->out_fd);
	close_fd(&p->err_fd);
	if (rc == 0)
		reap(p);
	else
		kill_child(p);
	fill_status(p, status, NULL);
	proc_free(p);
	return rc;
}

/* ---- a long-lived child ----------------------------------------------- */

int tt_proc_spawn(tt_proc **out, const tt_proc_opts *opts, tt_error *err)
{
	return spawn_child(out, opts, err);
}

static int64_t op_deadline(const tt_proc *p)
{
	return p->timeout_ms ? now_ms() + p->timeout_ms : 0;
}

int tt_proc_write(tt_proc *p, const void *data, size_t len, tt_error *err)
{
	if (p->failed)
		return sticky(p, err);
	if (p->in_fd < 0)
		return tt_error_set(err, TT_EIO, "writing to %s: its input is closed", p->name);
	const unsigned char *wp = data;
	size_t wl = len;
	int64_t deadline = op_deadline(p);
	while (wl) {
		int wait = remaining(deadline);
		if (wait == 0)
			return fail_timeout(p, err);
		size_t before = wl, buffered = p->out.len;
		int rc = pump(p, &wp, &wl, wait, err);
		if (rc < 0)
			return rc;
		if (p->in_broken)
			return tt_error_set(err, TT_EIO, "writing to %s: it closed its input (did it exit?)", p->name);
		if (rc == 1 && !p->timeout_ms)
			return tt_error_set(err, TT_EIO, "writing to %s: nothing to wait for", p->name);
		if (wl != before || p->out.len != buffered)
			deadline = op_deadline(p);  /* progress: the timeout is for inactivity */
	}
	return 0;
}

/* Wait for more stdout.  0: something happened (maybe EOF); <0: error. */
static int more_output(tt_proc *p, int64_t *deadline, tt_error *err)
{
	int wait = remaining(*deadline);
	if (wait == 0)
		return fail_timeout(p, err);
	size_t buffered = p->out.len - p->out_pos;
	int rc = pump(p, NULL, NULL, wait, err);
	if (rc < 0)
		return rc;
	if (p->out.len - p->out_pos != buffered)
		*deadline = op_deadline(p);
	return 0;
}

int tt_proc_read_line(tt_proc *p, tt_buf *line, tt_error *err)
{
	if (p->failed)
		return sticky(p, err);
	int64_t deadline = op_deadline(p);
	size_t scanned = 0;
	for (;;) {
		const char *start = p->out.ptr + p->out_pos;
		size_t avail = p->out.len - p->out_pos;
		const char *nl = avail > scanned ? memchr(start + scanned, '\n', avail - scanned) : NULL;
		if (nl || (p->out_fd < 0 && avail)) {
			size_t n = nl ? (size_t)(nl - start) : avail;
			tt_buf_reset(line);
			tt_buf_put(line, start, n);
			p->out_pos += nl ? n + 1 : n;
			if (p->out_pos == p->out.len) {
				tt_buf_reset(&p->out);
				p->out_pos = 0;
			}
			return tt_buf_check(line, err, "a line of output");
		}
		if (p->out_fd < 0) {
			tt_buf_reset(line);
			return 1;
		}
		scanned = avail;  /* offsets stay valid across compact_out() */
		int rc = more_output(p, &deadline, err);
		if (rc < 0)
			return rc;
	}
}

int tt_proc_read_exact(tt_proc *p, tt_buf *into, size_t len, tt_error *err)
{
	if (p->failed)
		return sticky(p, err);
	int64_t deadline = op_deadline(p);
	size_t got = 0;
	for (;;) {
		size_t avail = p->out.len - p->out_pos;
		size_t take = len - got < avail ? len - got : avail;
		if (take) {
			if (tt_buf_put(into, p->out.ptr + p->out_pos, take) != 0)
				return tt_buf_check(into, err, "output");
			p->out_pos += take;
			got += take;
			if (p->out_pos == p->out.len) {
				tt_buf_reset(&p->out);
				p->out_pos = 0;
			}
		}
		if (got == len)
			return 0;
		if (p->out_fd < 0)
			return tt_error_set(err, TT_EIO, "unexpected end of output from %s (%zu of %zu bytes read)",
					    p->name, got, len);
		int rc = more_output(p, &deadline, err);
		if (rc < 0)
			return rc;
	}
}

int tt_proc_finish(tt_proc *p, int *status, tt_buf *errout, tt_error *err)
{
	if (!p)
		return 0;
	int rc = 0;
	close_fd(&p->in_fd);
	int64_t deadline = op_deadline(p);
	while (!p->failed && (p->out_fd >= 0 || p->err_fd >= 0)) {
		/* Unread stdout is discarded: it cannot pass the cap now. */
		tt_buf_reset(&p->out);
		p->out_pos = 0;
		size_t before = p->err.len;
		int wait = remaining(deadline);
		if (wait == 0) {
			rc = fail_timeout(p, err);
			break;
		}
		rc = pump(p, NULL, NULL, wait, err);
		if (rc < 0)
			break;
		rc = 0;
		if (p->err.len != before || p->out.len)
			deadline = op_deadline(p);
	}
	if (!p->failed && wait_child(p, deadline))
		rc = fail_timeout(p, err);
	kill_child(p);
	if (p->failed && !rc)
		rc = sticky(p, err);
	fill_status(p, status, NULL);
	if (errout && p->err.len && tt_buf_put(errout, p->err.ptr, p->err.len) != 0 && !rc)
		rc = tt_buf_check(errout, err, "error output");
	proc_free(p);
	return rc;
}
