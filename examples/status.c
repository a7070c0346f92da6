/*
 * examples/status.c - `tether status --snapshot --json` through the public
 * API alone: open the dataset that contains DIR (default "."),
 * fingerprint every object, print the status object as JSON.
 *
 *   cc status.c $(pkg-config --cflags --libs libtether) -o status
 */
#include <stdio.h>
#include <stdlib.h>

#include <tether/tether.h>

int main(int argc, char **argv)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	if (tt_repo_open(argc > 1 ? argv[1] : ".", &repo, &err) < 0 ||
	    tt_repo_status(repo, NULL, 0, 1, &out, &err) < 0) {
		fprintf(stderr, "error: %s\n", tt_error_text(&err));
		tt_error_clear(&err);
		tt_repo_free(repo);
		return 1;
	}
	char *text = json_dumps(out, JSON_SORT_KEYS | JSON_COMPACT);
	puts(text ? text : "null");
	free(text);
	json_decref(out);
	tt_repo_free(repo);
	return text ? 0 : 1;
}
