/* The unit-test runner (see harness.h). */
#include "harness.h"

#include <dirent.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_TESTS 1024

static struct {
	const char *name;
	void (*fn)(void);
} tests[MAX_TESTS];
static int ntests;
static int current_failed;
static char tmproot[4096];
static char tmpcase[4200];

void tt_test_register(const char *name, void (*fn)(void))
{
	if (ntests < MAX_TESTS) {
		tests[ntests].name = name;
		tests[ntests].fn = fn;
		ntests++;
	}
}

void tt_test_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;
	current_failed = 1;
	fprintf(stderr, "  %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int tt_test_failed(void) { return current_failed; }

static void rmtree(const char *path)
{
	struct stat st;
	if (lstat(path, &st) != 0)
		return;
	if (S_ISDIR(st.st_mode)) {
		DIR *d = opendir(path);
		if (d) {
			struct dirent *e;
			while ((e = readdir(d)) != NULL) {
				if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
					continue;
				char sub[4096];
				snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
				rmtree(sub);
			}
			closedir(d);
		}
		chmod(path, 0700);
		rmdir(path);
	} else {
		unlink(path);
	}
}

const char *tt_test_tmpdir(void)
{
	if (!tmpcase[0]) {
		if (!tmproot[0]) {
			const char *base = getenv("TMPDIR");
			snprintf(tmproot, sizeof tmproot, "%s/tt-unit-XXXXXX", base ? base : "/tmp");
			if (!mkdtemp(tmproot)) {
				perror("mkdtemp");
				exit(2);
			}
		}
		static int seq;
		snprintf(tmpcase, sizeof tmpcase, "%s/case%d", tmproot, ++seq);
		mkdir(tmpcase, 0700);
	}
	return tmpcase;
}

int main(int argc, char **argv)
{
	int passed = 0, failed = 0;
	for (int i = 0; i < ntests; i++) {
		if (argc > 1 && strncmp(tests[i].name, argv[1], strlen(argv[1])) != 0)
			continue;
		current_failed = 0;
		tmpcase[0] = '\0';
		tests[i].fn();
		if (current_failed) {
			failed++;
			printf("FAIL %s\n", tests[i].name);
		} else {
			passed++;
			printf("ok   %s\n", tests[i].name);
		}
		fflush(stdout);
	}
	if (tmproot[0] && !getenv("TT_KEEP_TMP"))
		rmtree(tmproot);
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
