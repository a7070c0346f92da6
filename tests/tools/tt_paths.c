/*
 * tt_paths - print tt_path_normalize() and tt_realpath() of each line of
 * stdin as "<normalize>\t<realpath>", for comparing with Python's
 * os.path.normpath / os.path.realpath (tests/e2e/test_paths_compat.py).
 * An optional argument is a directory to chdir into first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fs.h"

int main(int argc, char **argv)
{
	if (argc > 1 && chdir(argv[1]) != 0) {
		perror(argv[1]);
		return 2;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int rc = 0;
	while ((n = getline(&line, &cap, stdin)) >= 0) {
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		char *norm = tt_path_normalize(line);
		char *real = tt_realpath(line);
		if (!norm || !real) {
			fprintf(stderr, "tt_paths: failed on \"%s\"\n", line);
			rc = 1;
		}
		printf("%s\t%s\n", norm ? norm : "", real ? real : "");
		free(norm);
		free(real);
	}
	free(line);
	return rc;
}
