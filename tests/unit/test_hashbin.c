/* Unit tests for backends/file/hashbin: the binary copy of the hash cache, and
 * the file engine's use of it (the JSON is the truth). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/file/file.h"
#include "backends/file/hashbin.h"
#include "backends/file/hashcache.h"
#include "harness.h"
#include "util/buf.h"
#include "util/error.h"
#include "util/fs.h"
#include "util/mem.h"

#define HEX_A "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HEX_B "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"

static int load(tt_hcache *c, const char *text)
{
	size_t n = strlen(text);
	char *copy = tt_malloc(n + 1);
	if (!copy)
		return -1;
	memcpy(copy, text, n + 1);
	return tt_hcache_load(c, copy, n);
}

static char *path_in(const char *name)
{
	return tt_asprintf("%s/%s", tt_test_tmpdir(), name);
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *p;
	long n;
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	fseek(f, 0, SEEK_SET);
	p = malloc((size_t)n + 1);
	if (p && fread(p, 1, (size_t)n, f) != (size_t)n) {
		free(p);
		p = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return p;
}

static int spill(const char *path, const void *p, size_t n)
{
	FILE *f = fopen(path, "wb");
	int rc;
	if (!f)
		return -1;
	rc = fwrite(p, 1, n, f) == n ? 0 : -1;
	return fclose(f) == 0 ? rc : -1;
}

static const tt_hcbin_key KEY = { 1, 2, 3, 4, 5, 6 };

/* Keys inserted out of order, one set twice (the last value wins), a value
 * of another shape, a key no UTF-8 string can hold. */
static const char TABLE[] =
	"{\"/d/m\":[3,30,300,3000,\"" HEX_B "\",30000],"
	"\"/d/a\":[1,10,100,1000,\"" HEX_A "\",10000],"
	"\"/d/z/last\":[9,90,900,9000,\"" HEX_A "\",90000],"
	"\"/d/m\":[4,40,400,4000,\"" HEX_A "\",40000],"
	"\"/d/odd\":[1,2,3,4,\"" HEX_A "\",5.5],"
	"\"/d/lone\\udc00\":[1,2,3,4,\"" HEX_A "\",5],"
	"\"/d/b\":[2,20,200,2000,\"" HEX_B "\",20000]}";

/* A binary copy of TABLE at path; 0 on success. */
static int write_table(const char *path)
{
	tt_hcache *c = tt_hcache_new();
	int rc = c && load(c, TABLE) == 0 ? tt_hcbin_write(path, c, &KEY) : -1;
	tt_hcache_free(c);
	return rc;
}

TT_TEST(hashbin_answers_what_the_table_holds)
{
	char *path = path_in("h.bin");
	tt_hcbin *b;
	tt_hc_entry e;
	size_t hint = 0;
	static const char *const in_order[] = { "/d/a", "/d/b", "/d/m", "/d/z/last" };

	CHECK(path);
	CHECK_INT(write_table(path), 0);
	CHECK((b = tt_hcbin_open(path, &KEY)) != NULL);
	CHECK_INT(tt_hcbin_count(b), 4); /* a, b, m, z/last: decoded, lookable */

	CHECK(tt_hcbin_get(b, "/d/m", 4, NULL, &e));
	CHECK(e.decoded && e.size == 4 && e.mtime_ns == 40 && e.ctime_ns == 400 && e.ino == 4000 &&
	      e.hashed_at == 40000);
	{
		char hex[65];
		tt_hc_entry_hex(&e, hex);
		CHECK_STR(hex, HEX_A);
	}
	CHECK(tt_hcbin_get(b, "/d/b", 4, NULL, &e) && e.size == 2 && e.sha[0] == 0xff);
	/* In key order the hint walks along; then backwards, and misses in
	 * between and at both ends, with the same hint. */
	for (int i = 0; i < 4; i++) {
		CHECK_MSG(tt_hcbin_get(b, in_order[i], strlen(in_order[i]), &hint, &e), "%s", in_order[i]);
		CHECK_INT(hint, (size_t)i + 1);
	}
	for (int i = 3; i >= 0; i--)
		CHECK_MSG(tt_hcbin_get(b, in_order[i], strlen(in_order[i]), &hint, &e), "%s", in_order[i]);
	static const char *const absent[] = { "/d/", "/d/aa", "/d/c", "/d/z", "/d/z/last/",
					      "/d/zz", "/d/odd", "/e/a", "/", "" };
	for (size_t k = 0; k < sizeof absent / sizeof *absent; k++)
		for (size_t h0 = 0; h0 <= 5; h0++) {
			hint = h0;
			CHECK_MSG(!tt_hcbin_get(b, absent[k], strlen(absent[k]), &hint, &e), "%s at %zu",
				  absent[k], h0);
		}
	tt_hcbin_close(b);
	free(path);
}

TT_TEST(hashbin_refuses_a_stale_key)
{
	char *path = path_in("h.bin");
	CHECK(path);
	CHECK_INT(write_table(path), 0);
	for (int field = 0; field < 6; field++) {
		tt_hcbin_key k = KEY;
		tt_hcbin *b;
		switch (field) {
		case 0: k.dev++; break;
		case 1: k.ino++; break;
		case 2: k.size++; break;
		case 3: k.mtime_ns++; break;
		case 4: k.ctime_ns++; break;
		default: k.edges ^= 1; break;
		}
		b = tt_hcbin_open(path, &k);
		CHECK_MSG(!b, "field %d", field);
	}
	free(path);
}

TT_TEST(hashbin_refuses_every_damaged_byte)
{
	char *path = path_in("h.bin");
	unsigned char *good;
	size_t len;

	CHECK(path);
	CHECK_INT(write_table(path), 0);
	CHECK((good = slurp(path, &len)) != NULL);
	CHECK(len > 128 + 4 * 80);
	for (size_t at = 0; at < len; at++) {
		tt_hcbin *b;
		good[at] ^= 0x10;
		CHECK(spill(path, good, len) == 0);
		good[at] ^= 0x10;
		b = tt_hcbin_open(path, &KEY);
		tt_hcbin_close(b);
		CHECK_MSG(!b, "byte %zu of %zu flipped, still opened", at, len);
	}
	free(good);
	free(path);
}

TT_TEST(hashbin_refuses_truncated_and_extended_files)
{
	char *path = path_in("h.bin");
	unsigned char *good;
	size_t len;

	CHECK(path);
	CHECK_INT(write_table(path), 0);
	CHECK((good = slurp(path, &len)) != NULL);
	for (size_t n = 0; n < len; n++) {
		tt_hcbin *b;
		CHECK(spill(path, good, n) == 0);
		b = tt_hcbin_open(path, &KEY);
		tt_hcbin_close(b);
		CHECK_MSG(!b, "truncated to %zu of %zu, still opened", n, len);
	}
	{
		unsigned char *more = malloc(len + 1);
		tt_hcbin *b;
		CHECK(more);
		memcpy(more, good, len);
		more[len] = 0;
		CHECK(spill(path, more, len + 1) == 0);
		b = tt_hcbin_open(path, &KEY);
		tt_hcbin_close(b);
		free(more);
		CHECK(!b);
	}
	/* The intact file again: opens. */
	CHECK(spill(path, good, len) == 0);
	{
		tt_hcbin *b = tt_hcbin_open(path, &KEY);
		CHECK(b);
		tt_hcbin_close(b);
	}
	free(good);
	free(path);
}

TT_TEST(hashbin_empty_table_and_missing_file)
{
	char *path = path_in("h.bin");
	tt_hcache *c = tt_hcache_new();
	tt_hcbin *b;
	tt_hc_entry e;

	CHECK(path && c);
	CHECK(!tt_hcbin_open(path, &KEY));
	CHECK_INT(load(c, "{}"), 0);
	CHECK_INT(tt_hcbin_write(path, c, &KEY), 0);
	CHECK((b = tt_hcbin_open(path, &KEY)) != NULL);
	CHECK_INT(tt_hcbin_count(b), 0);
	CHECK(!tt_hcbin_get(b, "/a", 2, NULL, &e));
	tt_hcbin_close(b);
	tt_hcache_free(c);
	free(path);
}

TT_TEST(hashbin_key_covers_both_ends_of_the_file)
{
	static const size_t sizes[] = { 0, 1, 100, 4095, 4096, 4097, 8191, 8192, 8193, 20000 };
	char *path = path_in("k.json");
	CHECK(path);
	for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
		size_t n = sizes[i];
		char *text = malloc(n + 1);
		tt_hcbin_key k1, k2;
		int fd;
		CHECK(text);
		for (size_t j = 0; j < n; j++)
			text[j] = (char)('a' + j % 26);
		CHECK(spill(path, text, n) == 0);
		CHECK((fd = open(path, O_RDONLY)) >= 0);
		CHECK_INT(tt_hcbin_key_of_fd(fd, &k1), 0);
		close(fd);
		CHECK_INT(k1.size, n);
		CHECK_MSG(k1.edges == tt_hcbin_edges(text, n), "size %zu", n);
		if (n) {
			text[n - 1] ^= 1; /* the last byte, same size */
			CHECK(spill(path, text, n) == 0);
			CHECK((fd = open(path, O_RDONLY)) >= 0);
			CHECK_INT(tt_hcbin_key_of_fd(fd, &k2), 0);
			close(fd);
			CHECK_MSG(k1.edges != k2.edges, "size %zu: last byte not seen", n);
			text[0] ^= 1;
			CHECK_MSG(tt_hcbin_edges(text, n) != k2.edges, "size %zu: first byte not seen", n);
		}
		free(text);
	}
	char *p = tt_hcbin_path("/x/.tether/cache/file-hashes.json");
	CHECK_STR(p, "/x/.tether/cache/file-hashes.bin");
	free(p);
	free(path);
}

/* --- the engine: the JSON is the truth --------------------------------------------- */

static int64_t later_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return ((int64_t)t.tv_sec + 60) * 1000000000 + t.tv_nsec; /* past the racy window */
}

/* Hash path through a new engine on cache; hex out, and how many files it
 * read (0: the cache answered). */
static int engine_hash(const char *cache, const char *path, char hex[65], uint64_t *hashed)
{
	tt_fhash *h = NULL;
	tt_error err = TT_ERROR_INIT;
	tt_file_stats st;
	struct stat sb;
	int rc = tt_fhash_new(&h, cache, &err);
	if (rc == 0) {
		tt_fhash_set_clock(h, later_ns);
		rc = stat(path, &sb) == 0 ? tt_fhash_file(h, path, &sb, hex, &err) : -1;
		tt_fhash_stats(h, &st);
		*hashed = st.hashed_files;
	}
	tt_fhash_free(h);
	tt_error_clear(&err);
	return rc;
}

static bool binary_matches_json(const char *json, const char *bin)
{
	tt_hcbin_key k;
	tt_hcbin *b;
	int fd = open(json, O_RDONLY);
	bool ok = fd >= 0 && tt_hcbin_key_of_fd(fd, &k) == 0 && (b = tt_hcbin_open(bin, &k)) != NULL;
	if (ok)
		tt_hcbin_close(b);
	if (fd >= 0)
		close(fd);
	return ok;
}

TT_TEST(hashbin_engine_believes_the_json_over_the_binary_copy)
{
	char *file = path_in("f.txt"), *json = path_in("cache/file-hashes.json"),
	     *bin = path_in("cache/file-hashes.bin"), *tmp = path_in("cache/t");
	char hex[65], first[65];
	uint64_t hashed = 9;
	unsigned char *text;
	size_t len;
	char *at;

	CHECK(file && json && bin && tmp);
	CHECK(spill(file, "hello\n", 6) == 0);
	CHECK_INT(engine_hash(json, file, first, &hashed), 0);
	CHECK_INT(hashed, 1);
	CHECK(binary_matches_json(json, bin));
	CHECK_INT(engine_hash(json, file, hex, &hashed), 0);
	CHECK_INT(hashed, 0);
	CHECK_STR(hex, first);

	/* Another writer (as tether-vcs does: a new file renamed over it) gives
	 * the file another hash, in text of the same length. */
	CHECK((text = slurp(json, &len)) != NULL);
	CHECK((at = strstr((char *)text, first)) != NULL);
	memcpy(at, HEX_B, 64);
	CHECK(spill(tmp, text, len) == 0);
	CHECK(rename(tmp, json) == 0);
	CHECK(!binary_matches_json(json, bin));
	CHECK_INT(engine_hash(json, file, hex, &hashed), 0);
	CHECK_INT(hashed, 0);
	CHECK_STR(hex, HEX_B);
	/* The copy was made again from that JSON, and answers the same. */
	CHECK(binary_matches_json(json, bin));
	CHECK_INT(engine_hash(json, file, hex, &hashed), 0);
	CHECK_STR(hex, HEX_B);

	/* Rewritten in place with the same size (the inode kept): still stale. */
	memcpy(at, first, 64);
	{
		FILE *f = fopen(json, "r+b");
		CHECK(f);
		CHECK(fwrite(text, 1, len, f) == len);
		CHECK(fclose(f) == 0);
	}
	CHECK_INT(engine_hash(json, file, hex, &hashed), 0);
	CHECK_STR(hex, first);

	/* No JSON: nothing is known, whatever the binary copy says. */
	CHECK(unlink(json) == 0);
	CHECK_INT(engine_hash(json, file, hex, &hashed), 0);
	CHECK_INT(hashed, 1);
	CHECK_STR(hex, first);
	free(text);
	free(file);
	free(json);
	free(bin);
	free(tmp);
}

/* --- the walk's order ------------------------------------------------------------ */

static int put_at(const char *root, const char *rel)
{
	char *p = tt_asprintf("%s/%s", root, rel);
	char *slash;
	int rc = -1;
	if (!p)
		return -1;
	for (slash = strchr(p + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(p, 0777);
		*slash = '/';
	}
	rc = spill(p, rel, strlen(rel));
	free(p);
	return rc;
}

static int by_strcmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

TT_TEST(walk_rows_are_in_path_order_across_directories)
{
	/* Names that sort around a directory's "/" ('.' '-' ' ' before it, '0'
	 * and letters after), empty-named levels, deep chains, UTF-8. */
	static const char *const rels[] = {
		"a", "a.txt", "a-b", "a b", "a0", "aa", "b.x/y", "b/a.txt", "b/a/c",
		"b/a/c.d/e", "b/a-c", "b/a0", "b/ab/c/d/e/f/g", "b/ab.c", "c/\xc3\xa9", "c/e",
		"c/\xe6\x97\xa5/x", "c/z", "d/d/d/d", "d/d.d", "d/d0", "d/d/d0", "e0", "e/0",
	};
	enum { N = sizeof rels / sizeof *rels };
	const char *want[N];
	char *root = path_in("tree");
	tt_fhash *h = NULL;
	tt_error err = TT_ERROR_INIT;
	tt_file_tree t;

	CHECK(root);
	CHECK(mkdir(root, 0777) == 0);
	for (int i = 0; i < N; i++) {
		CHECK_MSG(put_at(root, rels[i]) == 0, "%s", rels[i]);
		want[i] = rels[i];
	}
	qsort(want, N, sizeof *want, by_strcmp);
	for (unsigned threads = 1; threads <= 3; threads++) {
		CHECK_INT(tt_fhash_new(&h, NULL, &err), 0);
		tt_fhash_set_threads(h, threads);
		CHECK_MSG(tt_fhash_dir(h, root, &t, &err) == 0, "%s", err.message ? err.message : "");
		CHECK_INT(t.n, N);
		for (int i = 0; i < N; i++)
			CHECK_MSG(strcmp(t.rows[i].path, want[i]) == 0, "%u threads: row %d is %s, want %s",
				  threads, i, t.rows[i].path, want[i]);
		tt_file_tree_release(&t);
		tt_fhash_free(h);
		h = NULL;
	}
	tt_error_clear(&err);
	free(root);
}

/* What another writer does at the walk's weak points (tt_fhash_set_race_hook). */
typedef struct racer {
	const char *remove_listed;   /* removed when the walk has just read its name */
	const char *remove_opening;  /* removed right before it is opened to hash */
	bool flip;                   /* instead: renamed X <-> X2 there, so it never settles */
	int removed;
} racer;

static bool ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);
	return n >= m && strcmp(s + n - m, tail) == 0;
}

static void race(void *ctx, const char *path, int when)
{
	racer *r = ctx;
	const char *name = when == TT_FHASH_LISTED ? r->remove_listed : r->remove_opening;
	if (!name)
		return;
	if (r->flip) {
		const char *base = strrchr(path, '/');
		size_t n = strlen(name);
		if (!base || strncmp(base + 1, name, n) != 0)
			return;
		char *other = ends_with(path, "2") ? tt_strndup(path, strlen(path) - 1) : tt_asprintf("%s2", path);
		if (other && rename(path, other) == 0)
			r->removed++;
		free(other);
		return;
	}
	if (!ends_with(path, name))
		return;
	if (remove(path) == 0) {
		r->removed++;
	} else if (errno == ENOTEMPTY) {
		char *inner = tt_asprintf("%s/inner", path);
		if (inner && unlink(inner) == 0 && rmdir(path) == 0)
			r->removed++;
		free(inner);
	}
}

static const char *row_paths(const tt_file_tree *t, char *buf, size_t cap)
{
	size_t used = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < t->n && used + 1 < cap; i++)
		used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? " " : "", t->rows[i].path);
	return buf;
}

TT_TEST(walk_survives_a_writer_removing_what_it_listed)
{
	char *root = path_in("churned");
	char got[256];
	tt_fhash *h = NULL;
	tt_error err = TT_ERROR_INIT;
	tt_file_tree t;

	CHECK(root);
	CHECK(mkdir(root, 0777) == 0);
	CHECK(put_at(root, "keep") == 0);
	CHECK(put_at(root, "sub/inner") == 0);
	CHECK(put_at(root, "tmp-listed") == 0);
	CHECK(put_at(root, "tmp-opening") == 0);
	for (unsigned threads = 1; threads <= 2; threads++) {
		/* Gone between readdir and stat: as a walk a moment later sees it. */
		racer r = { .remove_listed = "tmp-listed" };
		CHECK_INT(tt_fhash_new(&h, NULL, &err), 0);
		tt_fhash_set_threads(h, threads);
		tt_fhash_set_race_hook(h, race, &r);
		CHECK_MSG(tt_fhash_dir(h, root, &t, &err) == 0, "%s", err.message ? err.message : "");
		CHECK_INT(r.removed, 1);
		CHECK_MSG(strcmp(row_paths(&t, got, sizeof got), "keep sub/inner tmp-opening") == 0, "%s", got);
		tt_file_tree_release(&t);
		tt_fhash_free(h);
		CHECK(put_at(root, "tmp-listed") == 0);

		/* Gone after it was listed and stat'ed, before its bytes were
		 * read: the walk is taken again and the file is not in it. */
		r = (racer){ .remove_opening = "tmp-opening" };
		CHECK_INT(tt_fhash_new(&h, NULL, &err), 0);
		tt_fhash_set_threads(h, threads);
		tt_fhash_set_race_hook(h, race, &r);
		CHECK_MSG(tt_fhash_dir(h, root, &t, &err) == 0, "%s", err.message ? err.message : "");
		CHECK_INT(r.removed, 1);
		CHECK_MSG(strcmp(row_paths(&t, got, sizeof got), "keep sub/inner tmp-listed") == 0, "%s", got);
		tt_file_tree_release(&t);
		tt_fhash_free(h);
		CHECK(put_at(root, "tmp-opening") == 0);

		/* A whole subdirectory gone after its parent listed it. */
		r = (racer){ .remove_listed = "sub" };
		CHECK_INT(tt_fhash_new(&h, NULL, &err), 0);
		tt_fhash_set_threads(h, threads);
		tt_fhash_set_race_hook(h, race, &r);
		CHECK_MSG(tt_fhash_dir(h, root, &t, &err) == 0, "%s", err.message ? err.message : "");
		CHECK_INT(r.removed, 1);
		CHECK_MSG(strcmp(row_paths(&t, got, sizeof got), "keep tmp-listed tmp-opening") == 0, "%s", got);
		tt_file_tree_release(&t);
		tt_fhash_free(h);
		CHECK(put_at(root, "sub/inner") == 0);

		/* A writer that never stops: a few walks, then an error that says
		 * so, naming the directory. */
		r = (racer){ .remove_opening = "tmp-opening", .flip = true };
		CHECK_INT(tt_fhash_new(&h, NULL, &err), 0);
		tt_fhash_set_threads(h, threads);
		tt_fhash_set_race_hook(h, race, &r);
		CHECK_INT(tt_fhash_dir(h, root, &t, &err), TT_EBACKEND);
		CHECK_INT(r.removed, 4);
		CHECK(tt_exists(root));
		CHECK_MSG(strstr(err.message, "changed while it was fingerprinted") != NULL &&
			  strstr(err.message, root) != NULL && strstr(err.message, "tmp-opening") != NULL,
			  "%s", err.message);
		tt_error_clear(&err);
		tt_fhash_free(h);
		h = NULL;
		/* Put back what the flips left. */
		char *moved = tt_asprintf("%s/tmp-opening2", root), *back = tt_asprintf("%s/tmp-opening", root);
		CHECK(moved && back);
		if (tt_exists(moved))
			CHECK(rename(moved, back) == 0);
		free(moved);
		free(back);
	}
	free(root);
}
