/* tests/support/testserver.c - see testserver.h. */
#include "testserver.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pid_t live[16];

static void kill_live(void)
{
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
		if (live[i] > 0) {
			kill(-live[i], SIGKILL);
			waitpid(live[i], NULL, 0);
			live[i] = 0;
		}
}

const char *tt_testserver_source_dir(void)
{
	const char *d = getenv("TETHER_SOURCE_DIR");
	return d && *d ? d : ".";
}

int tt_testserver_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof a;
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;
	if (fd < 0)
		return -1;
	if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	close(fd);
	return port;
}

static int connects(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), ok;
	if (fd < 0)
		return 0;
	ok = connect(fd, (struct sockaddr *)&a, sizeof a) == 0;
	close(fd);
	return ok;
}

int tt_testserver_start(const char *const *argv, int port, int wait_ms, tt_testserver *out)
{
	int pipefd[2];
	pid_t pid;
	static int registered;

	memset(out, 0, sizeof *out);
	if (!registered++)
		atexit(kill_live);
	if (pipe(pipefd) != 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setpgid(0, 0);
		/* dies with the test even when that aborts (a sanitizer) */
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (port) {
			/* awaited by connecting: nobody reads its stdout */
			close(pipefd[1]);
			pipefd[1] = open("/dev/null", O_WRONLY);
			dup2(pipefd[1], 2);  /* nor its request log */
		}
		dup2(pipefd[1], 1);
		close(pipefd[0]);
		close(pipefd[1]);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	setpgid(pid, pid);
	close(pipefd[1]);
	if (port)
		close(pipefd[0]);
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
		if (!live[i]) {
			live[i] = pid;
			break;
		}
	out->pid = pid;
	if (port == 0) {
		char line[32] = "";
		FILE *f = fdopen(pipefd[0], "r");
		if (!f || !fgets(line, sizeof line, f) || (port = atoi(line)) <= 0) {
			fprintf(stderr, "testserver: %s printed no port\n", argv[0]);
			if (f)
				fclose(f);
			tt_testserver_stop(out);
			return -1;
		}
		/* keep the pipe's read end open (leaked deliberately) so a
		 * server writing more never gets SIGPIPE */
		(void)f;
	} else {
		struct timespec ts = { 0, 50 * 1000000L };
		int waited = 0;
		while (!connects(port)) {
			int st;
			if (waited >= wait_ms || waitpid(pid, &st, WNOHANG) == pid) {
				fprintf(stderr, "testserver: %s did not listen on %d\n", argv[0], port);
				tt_testserver_stop(out);
				return -1;
			}
			nanosleep(&ts, NULL);
			waited += 50;
		}
	}
	out->port = port;
	snprintf(out->base, sizeof out->base, "http://127.0.0.1:%d", port);
	return 0;
}

void tt_testserver_stop(tt_testserver *s)
{
	if (!s || s->pid <= 0)
		return;
	kill(-s->pid, SIGKILL);
	waitpid(s->pid, NULL, 0);
	for (size_t i = 0; i < sizeof live / sizeof live[0]; i++)
		if (live[i] == s->pid)
			live[i] = 0;
	s->pid = 0;
}
