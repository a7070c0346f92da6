/*
 * tests/support/testserver.h - a server process for a test, on 127.0.0.1.
 *
 * tt_testserver_start() runs argv with stdout on a pipe.  With port 0 the
 * server must print its port as the first line of stdout; otherwise the
 * port is given (see tt_testserver_free_port()) and the server is awaited
 * until it accepts a TCP connection.  The process is killed (its process
 * group) by tt_testserver_stop(), at exit if the test forgot, and by the
 * kernel when the test process dies.
 */
#ifndef TT_TESTS_TESTSERVER_H
#define TT_TESTS_TESTSERVER_H

#include <sys/types.h>

typedef struct tt_testserver {
	pid_t pid;
	int port;
	char base[64];  /* "http://127.0.0.1:<port>" */
} tt_testserver;

/* 0 on success; -1 with a message on stderr. */
int tt_testserver_start(const char *const *argv, int port, int wait_ms, tt_testserver *out);
void tt_testserver_stop(tt_testserver *s);
/* A TCP port that was free a moment ago. */
int tt_testserver_free_port(void);
/* The repository's source directory (TETHER_SOURCE_DIR, else "."). */
const char *tt_testserver_source_dir(void);

#endif
