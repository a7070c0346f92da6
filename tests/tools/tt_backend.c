/*
 * tt_backend - call one backend operation from end-to-end tests and print
 * the result as JSON, so they can be compared with what the native tool or
 * tether-vcs reports for the same store.
 *
 *   tt_backend KIND LOCATOR fingerprint [REF]
 *   tt_backend KIND LOCATOR history [REF] [LIMIT]
 *   tt_backend KIND LOCATOR diff STATE_A STATE_B
 *   tt_backend KIND LOCATOR list_pins
 *   tt_backend KIND LOCATOR list_working_refs
 *   tt_backend KIND LOCATOR fork SOURCE_STATE NAME EXPECTED
 *       (EXPECTED: a state, "absent" or "none"; prints the ref)
 *
 * TT_BACKEND_CONFIG, when set, is the kind's [backends.KIND] table as a
 * JSON object (endpoints and keys for an object store, as secrets.toml
 * would give them).  TT_BACKEND_CACHE_DIR, when set, is the checkout's
 * .tether/cache (the file kind keeps its hash cache and file watcher state
 * there); TETHER_TRACE=1 prints the library's trace lines on stderr.
 * LOCATOR and STATE are JSON objects.  Exit status: 0 done, 1 the backend
 * refused (message on stderr), 2 usage.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backends/backend.h"
#include "backends/kit.h"
#include "backends/registry.h"
#include "core/kinds.h"
#include "util/json.h"

static int usage(void)
{
	fprintf(stderr, "usage: tt_backend KIND LOCATOR OP [ARGS...]\n");
	return 2;
}

static void print_trace(void *ctx, const char *kind, const char *about, const char *what)
{
	(void)ctx;
	fprintf(stderr, "trace: %s: %s: %s\n", kind, about, what);
}

static json_t *parse(const char *text)
{
	json_error_t e;
	return json_loads(text, 0, &e);
}

int main(int argc, char **argv)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = NULL;
	json_t *loc, *out = NULL;
	const char *op;
	int rc;

	if (argc < 4)
		return usage();
	loc = parse(argv[2]);
	op = argv[3];
	if (!loc || !tt_kind_find(argv[1]))
		return usage();
	json_t *config = getenv("TT_BACKEND_CONFIG") ? parse(getenv("TT_BACKEND_CONFIG")) : NULL;
	if (getenv("TT_BACKEND_CONFIG") && !config)
		return usage();
	if (getenv("TETHER_TRACE"))
		tt_kit_set_note(print_trace, NULL);
	rc = tt_backend_new(&b, tt_kind_find(argv[1]), config, getenv("TT_BACKEND_CACHE_DIR"), NULL,
			    &err);
	json_decref(config);
	if (rc)
		goto done;
	if (strcmp(op, "fingerprint") == 0) {
		rc = b->ops->fingerprint(b, loc, argc > 4 ? argv[4] : NULL, &out, &err);
	} else if (strcmp(op, "history") == 0) {
		tt_history_entry *h = NULL;
		size_t n = 0, limit = argc > 5 ? strtoul(argv[5], NULL, 10) : 20;
		rc = b->ops->history(b, loc, argc > 4 && *argv[4] ? argv[4] : NULL, limit, &h, &n, &err);
		if (rc == 0) {
			out = json_array();
			for (size_t i = 0; i < n; i++)
				json_array_append_new(out, json_pack("{s:s,s:s?,s:s,s:O}", "id", h[i].id,
								     "when", h[i].when, "message",
								     h[i].message, "refs", h[i].refs));
			tt_history_release(h, n);
		}
	} else if (strcmp(op, "diff") == 0 && argc > 5) {
		tt_object_diff d;
		json_t *sa = parse(argv[4]), *sb = parse(argv[5]);
		if (!sa || !sb)
			return usage();
		rc = b->ops->diff(b, loc, sa, sb, NULL, NULL, &d, &err);
		if (rc == 0)
			out = tt_object_diff_json(&d);
		tt_object_diff_release(&d);
		json_decref(sa);
		json_decref(sb);
	} else if (strcmp(op, "list_pins") == 0) {
		rc = b->ops->list_pins(b, loc, &out, &err);
	} else if (strcmp(op, "list_working_refs") == 0) {
		rc = b->ops->list_working_refs(b, loc, &out, &err);
	} else if (strcmp(op, "fork") == 0 && argc > 6) {
		json_t *src = parse(argv[4]), *want = NULL;
		tt_target t = { .kind = TT_TARGET_STATE, .state = src };
		tt_expect e = { TT_EXPECT_NONE, NULL };
		char *ref = NULL;
		if (strcmp(argv[6], "absent") == 0)
			e.kind = TT_EXPECT_ABSENT;
		else if (strcmp(argv[6], "none") != 0 && (want = parse(argv[6])))
			e = (tt_expect){ TT_EXPECT_STATE, want };
		if (!src || (e.kind == TT_EXPECT_NONE && strcmp(argv[6], "none") != 0))
			return usage();
		rc = b->ops->fork(b, loc, &t, argv[5], &e, &ref, &err);
		if (rc == 0)
			out = json_string(ref);
		free(ref);
		json_decref(src);
		json_decref(want);
	} else {
		return usage();
	}
done:
	if (rc) {
		fprintf(stderr, "error: %s\n", tt_error_text(&err));
		rc = 1;
	} else {
		char *text = json_dumps(out, JSON_COMPACT | JSON_ENCODE_ANY);
		puts(text ? text : "null");
		free(text);
	}
	json_decref(out);
	json_decref(loc);
	tt_backend_free(b);
	tt_error_clear(&err);
	return rc;
}
