/*
 * Unit tests: backends/file/prefix.c, a prefix's listing streamed, against
 * bench/list_responder.py (a ListObjectsV2 responder serving numbered keys
 * from memory) started here on 127.0.0.1.  A listing of many pages is
 * digested as it comes: the digest, count and size are the ones of the
 * listing held whole, while what it holds at once stays bounded (the
 * module's own count of entries held); pages answered 503 SlowDown now and
 * then are retried into the same listing, and the requests in flight
 * halve; a server slow to answer each request gets more of them at once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backends/file/file.h"
#include "backends/file/prefix.h"
#include "harness.h"
#include "storage/s3.h"
#include "storage/store.h"
#include "testserver.h"
#include "util/mem.h"

/* keys in the responder: 200 pages of 1000 */
#define NKEYS 200000
/* what a listing may hold at once past its kept rows: 8 ranges each at
 * most 4 pages ahead of the reader and one being listed */
#define HELD_BOUND (8u * 5u * 1000u)

static bool start(tt_testserver *srv, const char *fail_every, const char *delay_ms)
{
	const char *py = getenv("TETHER_PYTHON");
	char *pyp = py ? tt_strdup(py) : tt_asprintf("%s/.venv/bin/python", tt_testserver_source_dir());
	char *script = tt_asprintf("%s/bench/list_responder.py", tt_testserver_source_dir());
	char port[16], keys[16];
	int p = tt_testserver_free_port();
	snprintf(port, sizeof port, "%d", p);
	snprintf(keys, sizeof keys, "%d", NKEYS);
	const char *argv[] = { pyp,	    script,	  "--keys",   keys, "--port", port,
			       "--fail-every", fail_every, "--delay-ms", delay_ms, NULL };
	bool ok = access(pyp, X_OK) == 0 && tt_testserver_start(argv, p, 30000, srv) == 0;
	if (!ok)
		fprintf(stderr, "could not start %s with %s\n", script, pyp);
	free(script);
	free(pyp);
	return ok;
}

static tt_store *open_store(const tt_testserver *srv)
{
	tt_error err = TT_ERROR_INIT;
	tt_store *s = NULL;
	tt_s3_config c = { .bucket = "bench", .endpoint = srv->base, .creds = { "ak", "sk", NULL } };
	c.http.allow_http = true;
	c.http.backoff_base_ms = 5;
	if (tt_store_s3_open(&c, &s, &err) != 0)
		fprintf(stderr, "opening the responder's bucket: %s\n", err.message);
	tt_error_clear(&err);
	return s;
}

TT_TEST(prefix_listing_streams_in_bounded_memory_with_the_whole_listings_digest)
{
	tt_testserver srv = { 0 };
	tt_error err = TT_ERROR_INIT;
	tt_file_tree whole, streamed;
	char want[33];
	size_t peak_whole, peak;
	CHECK_MSG(start(&srv, "0", "0"), "the responder did not start");
	tt_store *s = open_store(&srv);
	CHECK(s);

	tt_file_prefix_held_peak(true);
	CHECK_OK(tt_file_prefix_list(s, "s3://bench/big/", "big/", SIZE_MAX, &whole, &err));
	peak_whole = tt_file_prefix_held_peak(true);
	CHECK_INT((long long)whole.n, NKEYS);
	CHECK(whole.rows && strcmp(whole.rows[0].path, "big/00000000") == 0);
	CHECK(strcmp(whole.rows[NKEYS - 1].path, "big/00199999") == 0);
	CHECK(strcmp(whole.rows[1].token, "00000001000000000123456789abcdef") == 0);
	tt_file_rows_digest(whole.rows, whole.n, want);
	CHECK_STR(whole.digest, want);
	CHECK_MSG(peak_whole >= NKEYS, "held at most %zu with every row kept", peak_whole);

	CHECK_OK(tt_file_prefix_list(s, "s3://bench/big/", "big/", 100, &streamed, &err));
	peak = tt_file_prefix_held_peak(true);
	CHECK_INT((long long)streamed.n, NKEYS);
	CHECK(!streamed.rows && !streamed.names);
	CHECK_STR(streamed.digest, want);
	CHECK_INT((long long)streamed.size, (long long)whole.size);
	CHECK_MSG(peak <= 100 + HELD_BOUND, "held %zu entries at once", peak);

	tt_file_tree_release(&whole);
	tt_file_tree_release(&streamed);
	tt_store_close(s);
	tt_testserver_stop(&srv);
}

TT_TEST(prefix_listing_through_slowdown_answers_is_the_same_listing)
{
	tt_testserver srv = { 0 }, calm = { 0 };
	tt_error err = TT_ERROR_INIT;
	tt_file_tree a, b;
	CHECK_MSG(start(&calm, "0", "0") && start(&srv, "5", "0"), "the responder did not start");
	tt_store *s = open_store(&calm), *t = open_store(&srv);
	CHECK(s && t);
	CHECK_OK(tt_file_prefix_list(s, "s3://bench/big/", "big/", 1000, &a, &err));
	/* every fifth request answered 503 SlowDown: retried, same rows */
	CHECK_OK(tt_file_prefix_list(t, "s3://bench/big/", "big/", 1000, &b, &err));
	CHECK_STR(b.digest, a.digest);
	CHECK_INT((long long)b.n, NKEYS);
	size_t widest, widened, backed_off;
	tt_file_prefix_pace(&widest, &widened, &backed_off);
	CHECK_MSG(backed_off >= 1, "never backed off");
	tt_file_tree_release(&a);
	tt_file_tree_release(&b);
	tt_store_close(s);
	tt_store_close(t);
	tt_testserver_stop(&srv);
	tt_testserver_stop(&calm);
}

TT_TEST(prefix_listing_widens_while_more_requests_at_once_read_faster)
{
	tt_testserver srv = { 0 };
	tt_error err = TT_ERROR_INIT;
	tt_file_tree t;
	size_t widest, widened, backed_off;
	/* each answer 20 ms late: two requests at a time read half what four do */
	CHECK_MSG(start(&srv, "0", "20"), "the responder did not start");
	tt_store *s = open_store(&srv);
	CHECK(s);
	CHECK_OK(tt_file_prefix_list(s, "s3://bench/big/", "big/", 1000, &t, &err));
	CHECK_INT((long long)t.n, NKEYS);
	tt_file_prefix_pace(&widest, &widened, &backed_off);
	CHECK_MSG(widened >= 1 && widest > 2 && widest <= 8, "widest %zu after %zu widenings", widest,
		  widened);
	CHECK_INT((long long)backed_off, 0);
	tt_file_tree_release(&t);
	tt_store_close(s);
	tt_testserver_stop(&srv);
}
