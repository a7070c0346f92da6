/*
 * cli/interrupt.c - Ctrl-C as tt_repo_cancel().
 *
 * In the commands whose read-only phases can stop (the fingerprint of
 * status, snapshot, commit and pull; verify), the first SIGINT asks the
 * library to stop at its next safe point: such a phase starts no further
 * object and fails "cancelled ... nothing was written", exit 130; a phase
 * that is changing stores runs to its end, so nothing is left half done.
 * A second SIGINT ends the process at once, as the first did before (and
 * as any SIGINT does in the other commands, which have nothing to stop
 * early).  The watcher costs a thread start, so only those commands pay.
 *
 * No handler runs asynchronously: SIGINT is blocked in the main thread
 * before it starts any other (every thread the library starts inherits the
 * mask; the children it spawns get a clean one), and one thread of the
 * CLI's own takes it with sigwait().  It is joined before the repository is
 * freed, so no signal ever reaches a freed repository, and no system call
 * anywhere returns EINTR because of it.  A SIGINT the shell set to be
 * ignored (`cmd &` in a script, nohup) stays ignored.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static struct {
	bool on;
	tt_repo *repo;
	pthread_t thread;
	sigset_t old_mask;
	atomic_bool quit;
} w;

static void *watch(void *arg)
{
	(void)arg;
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	for (int presses = 0;;) {
		int sig = 0;
		if (sigwait(&set, &sig) != 0)
			continue;
		if (atomic_load(&w.quit))
			return NULL;
		if (++presses == 1) {
			tt_repo_cancel(w.repo);
			fputs("tether: interrupted: stopping once the objects under way are done "
			      "(Ctrl-C again stops at once)\n",
			      stderr);
			fflush(stderr);
			continue;
		}
		/* The second: end the process the way SIGINT always did. */
		signal(SIGINT, SIG_DFL);
		pthread_sigmask(SIG_UNBLOCK, &set, NULL);
		raise(SIGINT);
	}
}

void cli_interrupt_attach(tt_repo *repo)
{
	struct sigaction now;
	sigset_t set;
	if (w.on || !repo || sigaction(SIGINT, NULL, &now) != 0 || now.sa_handler == SIG_IGN)
		return;
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	if (pthread_sigmask(SIG_BLOCK, &set, &w.old_mask) != 0)
		return;
	w.repo = repo;
	atomic_store(&w.quit, false);
	/* The watcher needs little stack: a small one keeps its start cheap. */
	pthread_attr_t attr;
	bool started = false;
	if (pthread_attr_init(&attr) == 0) {
		started = pthread_attr_setstacksize(&attr, 1 << 17) == 0 &&
			  pthread_create(&w.thread, &attr, watch, NULL) == 0;
		pthread_attr_destroy(&attr);
	}
	if (!started) {
		/* No watcher: Ctrl-C keeps its old meaning. */
		pthread_sigmask(SIG_SETMASK, &w.old_mask, NULL);
		w.repo = NULL;
		return;
	}
	w.on = true;
}

static void detach(void)
{
	atomic_store(&w.quit, true);
	pthread_kill(w.thread, SIGINT);
	pthread_join(w.thread, NULL);
	w.on = false;
	w.repo = NULL;
	/* A SIGINT that came meanwhile is pending still: unblocked, it ends
	 * the process as it would have without the watcher. */
	pthread_sigmask(SIG_SETMASK, &w.old_mask, NULL);
}

void cli_close_repo(tt_repo *repo)
{
	if (w.on && w.repo == repo)
		detach();
	cli_print_warnings(repo);
	cli_print_warnings(NULL); /* the next repository may get the same address */
	tt_repo_free(repo);
}
