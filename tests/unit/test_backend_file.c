/*
 * The file backend: the conformance suite (Observed tier, directories and
 * single files), identity folding, states and the directory digest against
 * vectors computed by tether-vcs, the walk's symlink and marker rules, the
 * hash cache (hits, ctime, the racy-timestamp guard, persistence, merging
 * concurrent writers), parallel hashing, listings, diffs and the store
 * lifecycle.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backends/backend.h"
#include "backends/dispatch.h"
#include "backends/registry.h"
#include "backends/file/file.h"
#include "storage/store.h"
#include "conformance.h"
#include "core/kinds.h"
#include "harness.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"

/* --- helpers ----------------------------------------------------------------------- */

static tt_backend *file_backend(const char *cache_dir)
{
	tt_backend *b = NULL;
	tt_error err = TT_ERROR_INIT;
	if (tt_backend_new(&b, tt_kind_find("file"), NULL, cache_dir, NULL, &err) != 0)
		fprintf(stderr, "  tt_backend_new(file): %s\n", tt_error_text(&err));
	tt_error_clear(&err);
	return b;
}

/* Write path (parents created) with len bytes of data. */
static int put(const char *path, const void *data, size_t len)
{
	tt_error err = TT_ERROR_INIT;
	char *dir = tt_dirname(path);
	int rc = dir ? tt_mkdirs(dir, 0777, &err) : -1;
	free(dir);
	tt_error_clear(&err);
	if (rc)
		return rc;
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	size_t n = len ? fwrite(data, 1, len, f) : 0;
	return fclose(f) == 0 && n == len ? 0 : -1;
}

static int puts_file(const char *path, const char *text)
{
	return put(path, text, strlen(text));
}

static char *path2(const char *a, const char *b)
{
	return tt_path_join(a, b);
}

static json_t *loc_of(const char *uri)
{
	return json_pack("{s:s}", "uri", uri);
}

/* The fingerprint of uri, or NULL (the error printed). */
static json_t *fp(tt_backend *b, const char *uri)
{
	tt_error err = TT_ERROR_INIT;
	json_t *loc = loc_of(uri), *state = NULL;
	if (b->ops->fingerprint(b, loc, NULL, &state, &err) != 0)
		fprintf(stderr, "  fingerprint(%s): %s\n", uri, tt_error_text(&err));
	tt_error_clear(&err);
	json_decref(loc);
	return state;
}

static const char *sfield(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static long long ifield(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

static char *listing_of(tt_backend *b, const char *uri, const json_t *state)
{
	tt_error err = TT_ERROR_INIT;
	json_t *loc = loc_of(uri);
	char *text = NULL;
	if (b->ops->listing(b, loc, state, &text, &err) != 0)
		fprintf(stderr, "  listing(%s): %s\n", uri, tt_error_text(&err));
	tt_error_clear(&err);
	json_decref(loc);
	return text;
}

static uint64_t hashed(tt_backend *b)
{
	tt_file_stats s;
	tt_file_backend_stats(b, &s);
	return s.hashed_files;
}

/* A realpath() of something that exists. */
static char *real(const char *p)
{
	char buf[PATH_MAX];
	return realpath(p, buf) ? tt_strdup(buf) : NULL;
}

/* --- conformance ------------------------------------------------------------------- */

typedef struct conf_ctx {
	const char *base;
	int seq;
	bool single;  /* objects are single files, not directories */
} conf_ctx;

static int h_new_object(void *vctx, json_t **loc)
{
	conf_ctx *c = vctx;
	char *dir = tt_asprintf("%s/obj-%d", c->base, ++c->seq), *p1 = NULL, *p2 = NULL;
	int rc = -1;
	*loc = NULL;
	if (!dir)
		return -1;
	p1 = path2(dir, "a.txt");
	p2 = path2(dir, "sub/b.txt");
	if (p1 && p2 && puts_file(p1, "alpha\n") == 0 && puts_file(p2, "beta\n") == 0) {
		*loc = loc_of(c->single ? p1 : dir);
		rc = *loc ? 0 : -1;
	}
	free(dir);
	free(p1);
	free(p2);
	return rc;
}

/* A new file per call (a directory), or new content (a single file). */
static int h_mutate(void *vctx, const json_t *loc, const char *ref)
{
	conf_ctx *c = vctx;
	const char *uri = sfield(loc, "uri");
	char *p, *text;
	int rc;
	(void)ref;
	c->seq++;
	/* (the CREATE checks hand a created directory to a single-file harness) */
	p = c->single && !tt_is_dir(uri) ? tt_strdup(uri) : tt_asprintf("%s/m-%d.txt", uri, c->seq);
	text = tt_asprintf("mutation %d\n", c->seq);
	rc = p && text ? puts_file(p, text) : -1;
	free(p);
	free(text);
	return rc;
}

static int h_fresh(void *vctx, json_t **loc)
{
	conf_ctx *c = vctx;
	char *p = tt_asprintf("%s/fresh-%d/store", c->base, ++c->seq);
	*loc = p ? loc_of(p) : NULL;
	free(p);
	return *loc ? 0 : -1;
}

static unsigned local_caps(tt_backend *b, const char *uri)
{
	json_t *loc = loc_of(uri);
	unsigned caps = tt_backend_caps(b, loc, NULL, NULL);
	json_decref(loc);
	return caps;
}

TT_TEST(conformance_file_dir)
{
	tt_backend *b = file_backend(NULL);
	CHECK(b != NULL);
	conf_ctx c = { tt_test_tmpdir(), 0, false };
	tt_conformance_harness h = { .backend = b, .new_object = h_new_object, .mutate = h_mutate,
				     .fresh_locator = h_fresh, .ctx = &c,
				     .label = "conformance/file-dir" };
	/* Local paths are Observed: the suite runs what that tier allows. */
	h.capabilities = local_caps(b, c.base);
	CHECK_INT(h.capabilities, TT_CAP_FINGERPRINT | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_DIFF |
					  TT_CAP_CREATE);
	int failed = tt_conformance_run(&h);
	tt_backend_free(b);
	CHECK_INT(failed, 0);
}

TT_TEST(conformance_file_single)
{
	char *cache = path2(tt_test_tmpdir(), "cache");
	tt_backend *b = file_backend(cache);
	free(cache);
	CHECK(b != NULL);
	conf_ctx c = { tt_test_tmpdir(), 0, true };
	tt_conformance_harness h = { .backend = b, .new_object = h_new_object, .mutate = h_mutate,
				     .fresh_locator = h_fresh, .ctx = &c,
				     .label = "conformance/file-single" };
	h.capabilities = local_caps(b, c.base);
	int failed = tt_conformance_run(&h);
	tt_backend_free(b);
	CHECK_INT(failed, 0);
}

/* --- identity ---------------------------------------------------------------------- */

static bool identity_is(tt_backend *b, const char *uri, const char *want)
{
	tt_error err = TT_ERROR_INIT;
	json_t *loc = loc_of(uri), *id = NULL;
	bool ok = b->ops->identity(b, loc, &id, &err) == 0 && json_object_size(id) == 1 &&
		  sfield(id, "uri") && strcmp(sfield(id, "uri"), want) == 0;
	if (!ok)
		fprintf(stderr, "  identity(%s) = %s, want %s\n", uri,
			id && sfield(id, "uri") ? sfield(id, "uri") : tt_error_text(&err), want);
	json_decref(loc);
	json_decref(id);
	tt_error_clear(&err);
	return ok;
}

TT_TEST(identity_folds_spellings_of_one_directory)
{
	tt_backend *b = file_backend(NULL);
	char *dir = path2(tt_test_tmpdir(), "data/real"), *link = path2(tt_test_tmpdir(), "link");
	char *canon = NULL, *spell[8] = { 0 };
	CHECK(b && dir && link);
	CHECK(tt_mkdirs(dir, 0777, NULL) == 0);
	char *lparent = path2(tt_test_tmpdir(), "data");
	CHECK(symlink(lparent, link) == 0);
	free(lparent);
	canon = real(dir);
	CHECK(canon != NULL);
	spell[0] = tt_strdup(dir);
	spell[1] = tt_asprintf("%s/", dir);
	spell[2] = tt_asprintf("%s//", dir);
	spell[3] = tt_asprintf("file://%s", dir);
	spell[4] = tt_asprintf("file://localhost%s/", dir);
	spell[5] = tt_asprintf("%s/real", link);  /* through a symlinked parent */
	spell[6] = tt_asprintf("%s/./sub/../", dir);
	spell[7] = tt_asprintf("file:%s", dir);
	for (int i = 0; i < 8; i++) {
		CHECK(spell[i] != NULL);
		CHECK_MSG(identity_is(b, spell[i], canon), "spelling %d", i);
	}
	/* The same store: equal states and equal identities give equal pin ids. */
	json_t *s1 = fp(b, spell[0]), *s2 = fp(b, spell[5]);
	CHECK(s1 && s2 && json_equal(s1, s2));
	json_decref(s1);
	json_decref(s2);
	/* Other URLs as written; relative paths lexically; `path` as well as `uri`. */
	CHECK(identity_is(b, "s3://bucket/key", "s3://bucket/key"));
	CHECK(identity_is(b, "file://otherhost/p", "file://otherhost/p"));
	CHECK(identity_is(b, "rel/./x/../y/", "rel/y"));
	CHECK(identity_is(b, "/a/../b#c?d", "/b#c?d")); /* '#', '?' are path characters */
	{
		tt_error err = TT_ERROR_INIT;
		json_t *loc = json_pack("{s:s}", "path", dir), *id = NULL;
		CHECK_OK(b->ops->identity(b, loc, &id, &err));
		CHECK_STR(sfield(id, "uri"), canon);
		json_decref(id);
		json_decref(loc);
		loc = json_object();
		CHECK_INT(b->ops->identity(b, loc, &id, &err), TT_EBACKEND);
		CHECK(strstr(tt_error_text(&err), "file locator needs 'uri'") != NULL);
		json_decref(loc);
		tt_error_clear(&err);
	}
	for (int i = 0; i < 8; i++)
		free(spell[i]);
	free(canon);
	free(dir);
	free(link);
	tt_backend_free(b);
}

TT_TEST(local_path_matches_tether_vcs_rules)
{
	char *out = NULL;
	CHECK_INT(tt_store_local_path("s3://b/k", &out), 0);
	CHECK(out == NULL);
	CHECK_INT(tt_store_local_path("file://host/p", &out), 0);
	CHECK_INT(tt_store_local_path("file://", &out), 0);
	CHECK_INT(tt_store_local_path("file:", &out), 0);
	CHECK_INT(tt_store_local_path("ducklake:x", &out), 0);
	CHECK_INT(tt_store_local_path("file:///", &out), 1);
	CHECK_STR(out, "/");
	free(out);
	CHECK_INT(tt_store_local_path("file:rel/./a", &out), 1);
	CHECK_STR(out, "rel/a");
	free(out);
	CHECK_INT(tt_store_local_path("./x//y/", &out), 1);
	CHECK_STR(out, "x/y");
	free(out);
	CHECK_INT(tt_store_local_path("/no/such/../dir/", &out), 1);
	CHECK_STR(out, "/no/dir");
	free(out);
	/* urlsplit's scheme needs a letter first */
	CHECK_INT(tt_store_local_path("1a:b", &out), 1);
	CHECK_STR(out, "1a:b");
	free(out);
}

TT_TEST(object_store_uris_are_refused_clearly)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = file_backend(NULL);
	/* s3://, gs:// and az:// are built; a plain HTTP store is not */
	json_t *loc = loc_of("https://example.com/runs/a.bin"), *state = NULL;
	CHECK(b != NULL);
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &state, &err), TT_ECAPABILITY);
	CHECK_STR(tt_error_text(&err),
		  "[file] object-store URIs (https://...) are not built into this tether yet");
	tt_error_clear(&err);
	json_decref(loc);
	/* s3:// single objects and prefixes are built (tests/unit/test_s3.c,
	 * e2e test_s3_file.py and test_s3_prefix.py) */
	loc = loc_of("s3://bucket/runs/a.bin");
	/* Capabilities are still computed as tether-vcs does: versioned single
	 * objects are Addressable, prefixes and local paths never. */
	unsigned base = TT_CAP_FINGERPRINT | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_DIFF;
	CHECK_INT(tt_backend_caps(b, loc, "immutable", NULL), base);
	CHECK_INT(tt_backend_caps(b, loc, "versioned", NULL), base | TT_CAP_ADDRESSABLE);
	json_decref(loc);
	loc = loc_of("gs://bucket/runs/");
	CHECK_INT(tt_backend_caps(b, loc, "versioned", NULL), base);
	json_decref(loc);
	loc = loc_of("/tmp");
	CHECK_INT(tt_backend_caps(b, loc, "versioned", NULL), base | TT_CAP_CREATE);
	json_decref(loc);
	loc = loc_of("ftp://host/x");
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &state, &err), TT_EBACKEND);
	CHECK_STR(tt_error_text(&err), "[file] unsupported file URI scheme: 'ftp'");
	tt_error_clear(&err);
	CHECK_INT(tt_backend_caps(b, loc, NULL, NULL), base);
	json_decref(loc);
	/* A remote prefix is never created by tether. */
	loc = loc_of("s3://bucket/new/");
	CHECK_INT(b->ops->create(b, loc, "c0fe5a1e", &state, &err), TT_EBACKEND);
	CHECK(strstr(tt_error_text(&err), "only a local directory can be created") != NULL);
	tt_error_clear(&err);
	json_decref(loc);
	/* `at` names no history here. */
	loc = json_pack("{s:s, s:s}", "uri", "/tmp", "at", "v1");
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &state, &err), TT_EBACKEND);
	CHECK(strstr(tt_error_text(&err), "no history to detach from") != NULL);
	tt_error_clear(&err);
	json_decref(loc);
	tt_backend_free(b);
}

/* --- states and the digest --------------------------------------------------------- */

/* The tree tether-vcs was run on to make the vectors below. */
static int make_vector_tree(const char *root)
{
	unsigned char bytes[256];
	char *p;
	int rc = 0;
	for (int i = 0; i < 256; i++)
		bytes[i] = (unsigned char)i;
#define PUT(rel, data, len)                                                          \
	do {                                                                         \
		p = path2(root, rel);                                                \
		rc |= p ? put(p, data, len) : -1;                                    \
		free(p);                                                             \
	} while (0)
#define LINK(target, rel)                                                            \
	do {                                                                         \
		p = path2(root, rel);                                                \
		rc |= p ? symlink(target, p) : -1;                                   \
		free(p);                                                             \
	} while (0)
	PUT("a.txt", "hello\n", 6);
	PUT("empty", "", 0);
	PUT("sub/b.bin", bytes, 256);
	PUT("sub/deeper/\xc3\xbc-\xc3\xb1.txt", "unicode\n", 8);
	PUT(".tether-owner", "owner\n", 6);
	PUT("sub/.tether-owner", "x", 1);
	LINK("a.txt", "link-file");
	LINK("sub", "link-dir");
	LINK("nowhere", "dangling");
#undef PUT
#undef LINK
	return rc;
}

static const char vector_listing[] =
	"{\"p\":\"a.txt\",\"k\":\"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\",\"s\":6}\n"
	"{\"p\":\"dangling\",\"k\":\"symlink:20aeff0494e828d188c704e1f488a589b15ae01d11f6cb129f62129caa6cc543\",\"s\":0}\n"
	"{\"p\":\"empty\",\"k\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\",\"s\":0}\n"
	"{\"p\":\"link-dir\",\"k\":\"symlink:ddc6e2b224d0fd821669202258386936fc9ce2899e215eec6322b95f8dd96d6a\",\"s\":0}\n"
	"{\"p\":\"link-file\",\"k\":\"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03\",\"s\":6}\n"
	"{\"p\":\"sub/.tether-owner\",\"k\":\"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\",\"s\":1}\n"
	"{\"p\":\"sub/b.bin\",\"k\":\"40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880\",\"s\":256}\n"
	"{\"p\":\"sub/deeper/\\u00fc-\\u00f1.txt\",\"k\":\"ebc45fabefbabdd06424b3c476b11e93fec784069ff10844e7383d59f491f8cb\",\"s\":8}\n";

TT_TEST(states_and_digest_match_tether_vcs)
{
	tt_backend *b = file_backend(NULL);
	char *root = path2(tt_test_tmpdir(), "t"), *empty = path2(tt_test_tmpdir(), "e");
	char *a = path2(root, "a.txt"), *lf = path2(root, "link-file");
	CHECK(b && root && empty && a && lf);
	CHECK_INT(make_vector_tree(root), 0);
	CHECK_INT(tt_mkdirs(empty, 0777, NULL), 0);

	/* Nested directories, a unicode name, an empty file, the marker at the
	 * root skipped (and not below it), a symlink to a file read through, one
	 * to a directory and a dangling one recorded by their targets. */
	json_t *s = fp(b, root);
	CHECK(s != NULL);
	CHECK_STR(sfield(s, "type"), "dir");
	CHECK_INT(ifield(s, "count"), 8);
	CHECK_INT(ifield(s, "size"), 277);
	CHECK_STR(sfield(s, "digest"), "0d3463b247cc427e6365246f82129cc9");
	/* Key order as tether-vcs builds the dict. */
	{
		tt_buf out = TT_BUF_INIT;
		CHECK_INT(tt_json_dump(&out, s, (tt_json_style){ -1, false, true, true }), 0);
		CHECK_STR(out.ptr, "{\"type\":\"dir\",\"count\":8,\"size\":277,"
				   "\"digest\":\"0d3463b247cc427e6365246f82129cc9\"}");
		tt_buf_release(&out);
	}
	char *text = listing_of(b, root, s);
	CHECK(text != NULL);
	CHECK_STR(text, vector_listing);
	free(text);
	json_decref(s);

	s = fp(b, empty);
	CHECK(s != NULL);
	CHECK_INT(ifield(s, "count"), 0);
	CHECK_STR(sfield(s, "digest"), "cae66941d9efbd404e4d88758ea67670");
	text = listing_of(b, empty, s);
	CHECK_STR(text, "");
	free(text);
	json_decref(s);

	s = fp(b, a);
	CHECK(s != NULL);
	CHECK_INT(json_object_size(s), 3);
	CHECK_STR(sfield(s, "type"), "file");
	CHECK_INT(ifield(s, "size"), 6);
	CHECK_STR(sfield(s, "sha256"), "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03");
	/* A single file has no listing: its state says everything. */
	text = listing_of(b, a, s);
	CHECK(text == NULL);
	json_t *s2 = fp(b, lf);
	CHECK(s2 && json_equal(s, s2));
	json_decref(s);
	json_decref(s2);
	free(root);
	free(empty);
	free(a);
	free(lf);
	tt_backend_free(b);
}

TT_TEST(walk_rules)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = file_backend(NULL);
	char *root = path2(tt_test_tmpdir(), "w"), *p;
	json_t *s1, *s2, *loc, *st = NULL;
	CHECK(b && root);
	p = path2(root, "f");
	CHECK_INT(puts_file(p, "f"), 0);
	free(p);
	s1 = fp(b, root);
	CHECK(s1 != NULL);
	/* A FIFO is not a file, and a symlink named like the marker at the root
	 * that points to a file is skipped as the marker is. */
	p = path2(root, "fifo");
	CHECK_INT(mkfifo(p, 0600), 0);
	free(p);
	p = path2(root, TT_FILE_OWNER_MARKER);
	CHECK_INT(symlink("f", p), 0);
	free(p);
	s2 = fp(b, root);
	CHECK(s2 && json_equal(s1, s2));
	json_decref(s2);
	/* Retargeting a symlink to a directory is a change; edits below it are not seen. */
	p = path2(root, "d");
	CHECK_INT(tt_mkdirs(p, 0777, NULL), 0);
	free(p);
	p = path2(root, "ld");
	CHECK_INT(symlink("d", p), 0);
	s1 = (json_decref(s1), fp(b, root));
	char *inner = path2(root, "d/x");
	CHECK_INT(puts_file(inner, "x"), 0);
	free(inner);
	s2 = fp(b, root);
	CHECK_INT(ifield(s2, "count"), ifield(s1, "count") + 1); /* d/x itself counts */
	json_decref(s2);
	CHECK_INT(unlink(p), 0);
	CHECK_INT(symlink("./d", p), 0);
	free(p);
	s2 = fp(b, root);
	CHECK(s2 && ifield(s2, "count") == ifield(s1, "count") + 1);
	json_decref(s1);
	json_decref(s2);
	/* A symlink loop is an error, as os.DirEntry.is_file() raises it. */
	p = path2(root, "loop");
	CHECK_INT(symlink("loop", p), 0);
	free(p);
	loc = loc_of(root);
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &st, &err), TT_EBACKEND);
	CHECK(strstr(tt_error_text(&err), "[file] file: OSError: [Errno 40] Too many levels of "
				       "symbolic links: '") != NULL);
	tt_error_clear(&err);
	json_decref(loc);
	p = path2(root, "loop");
	unlink(p);
	free(p);
	/* A name that is not UTF-8 cannot be listed: refused, not mangled. */
	p = path2(root, "bad-\xff");
	CHECK_INT(puts_file(p, "x"), 0);
	loc = loc_of(root);
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &st, &err), TT_EBACKEND);
	CHECK(strstr(tt_error_text(&err), "not valid UTF-8") != NULL);
	tt_error_clear(&err);
	unlink(p);
	free(p);
	json_decref(loc);
	/* A missing path. */
	p = path2(root, "nope");
	loc = loc_of(p);
	CHECK_INT(b->ops->fingerprint(b, loc, NULL, &st, &err), TT_EBACKEND);
	{
		char *rp = real(root);
		char *want = tt_asprintf("[file] path does not exist: %s/nope", rp);
		CHECK_STR(tt_error_text(&err), want);
		free(want);
		free(rp);
	}
	tt_error_clear(&err);
	json_decref(loc);
	free(p);
	free(root);
	tt_backend_free(b);
}

/* --- the hash cache ---------------------------------------------------------------- */

static int64_t clock_offset_ns;

static int64_t fake_now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec + clock_offset_ns;
}

TT_TEST(cache_hits_ctime_and_racy_guard)
{
	const char *tmp = tt_test_tmpdir();
	char *cache = path2(tmp, "cache"), *root = path2(tmp, "d"), *f1 = path2(root, "f1"),
	     *f2 = path2(root, "f2"), *cfile = path2(cache, TT_FILE_HASH_CACHE);
	tt_backend *b = file_backend(cache);
	json_t *s0, *s;
	struct stat st;
	CHECK(b && f1 && f2 && cfile);
	CHECK_INT(puts_file(f1, "one one\n"), 0);
	CHECK_INT(puts_file(f2, "two two\n"), 0);
	tt_file_backend_set_clock(b, fake_now);

	/* Hashed 10 s "after" the files changed: trusted next time. */
	clock_offset_ns = INT64_C(10000000000);
	s0 = fp(b, root);
	CHECK(s0 != NULL);
	CHECK_INT(hashed(b), 2);
	s = fp(b, root);
	CHECK(s && json_equal(s, s0));
	CHECK_INT(hashed(b), 2); /* no re-read */
	json_decref(s);
	{
		tt_file_stats stats;
		tt_file_backend_stats(b, &stats);
		CHECK_INT(stats.cache_hits, 2);
		CHECK_INT(stats.cache_saves, 1); /* nothing new, nothing written */
	}

	/* The file is tether-vcs's format: [size, mtime_ns, ctime_ns, inode,
	 * sha256, hashed_at_ns] under the full path. */
	{
		tt_error err = TT_ERROR_INIT;
		tt_buf text = TT_BUF_INIT;
		CHECK_OK(tt_read_file(cfile, &text, 0, &err));
		json_t *all = tt_json_parse(text.ptr, text.len, "cache", &err);
		char *rf1 = real(f1);
		json_t *e = json_object_get(all, rf1);
		CHECK(stat(f1, &st) == 0);
		CHECK(json_is_array(e) && json_array_size(e) == 6);
		CHECK_INT(json_integer_value(json_array_get(e, 0)), 8);
		CHECK_INT(json_integer_value(json_array_get(e, 1)),
			  (long long)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec);
		CHECK_INT(json_integer_value(json_array_get(e, 2)),
			  (long long)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec);
		CHECK_INT(json_integer_value(json_array_get(e, 3)), (long long)st.st_ino);
		CHECK_STR(json_string_value(json_array_get(e, 4)),
			  "7dd83ce9b7dd0a45763a5b4bc394406de3296b6a778337b2686f34deea2abf84");
		CHECK(json_is_integer(json_array_get(e, 5)));
		/* Compact separators, ASCII escapes. */
		CHECK(strstr(text.ptr, "\":[8,") != NULL && !strchr(text.ptr, ' '));
		free(rf1);
		json_decref(all);
		tt_buf_release(&text);
	}

	/* A second backend (another process) reads the file: no re-read. */
	{
		tt_backend *b2 = file_backend(cache);
		CHECK(b2 != NULL);
		s = fp(b2, root);
		CHECK(s && json_equal(s, s0));
		CHECK_INT(hashed(b2), 0);
		json_decref(s);
		tt_backend_free(b2);
	}

	/* Rewritten with the same size and the old mtime put back (a sync
	 * tool, `touch -r`): the ctime still moved, so the file is re-read. */
	CHECK(stat(f1, &st) == 0);
	CHECK_INT(puts_file(f1, "ONE ONE\n"), 0);
	{
		struct timespec times[2] = { st.st_atim, st.st_mtim };
		CHECK_INT(utimensat(AT_FDCWD, f1, times, 0), 0);
	}
	s = fp(b, root);
	CHECK(s && !json_equal(s, s0));
	CHECK_INT(hashed(b), 3); /* only f1 */
	json_decref(s);

	/* The racy guard: an entry made within 2 s of the file's change is read
	 * again next time, even though nothing changed... */
	clock_offset_ns = 0;
	CHECK_INT(puts_file(f2, "TWO TWO\n"), 0);
	s = fp(b, root);
	CHECK_INT(hashed(b), 4);  /* f2 changed */
	json_decref(s);
	s = fp(b, root);
	CHECK_INT(hashed(b), 5);  /* f2 again: its entry is racy; f1's is not */
	json_decref(s);
	/* ...until an entry is made 2 s or more after the change. */
	clock_offset_ns = INT64_C(3000000000);
	s = fp(b, root);
	CHECK_INT(hashed(b), 6);
	json_decref(s);
	s = fp(b, root);
	CHECK_INT(hashed(b), 6);
	json_decref(s);
	json_decref(s0);

	/* A single-file object goes through the same cache. */
	s = fp(b, f1);
	CHECK_INT(hashed(b), 6);
	CHECK_STR(sfield(s, "sha256"), "c38b3a658891ea3bedfe60a2ebe6c6c053af696d3818a57a93ff8fb4bfea51c9");
	json_decref(s);

	/* A cache that is not JSON is an empty cache, not an error. */
	CHECK_INT(puts_file(cfile, "{not json"), 0);
	{
		tt_backend *b3 = file_backend(cache);
		tt_file_backend_set_clock(b3, fake_now);
		s = fp(b3, root);
		CHECK(s != NULL);
		CHECK_INT(hashed(b3), 2);
		json_decref(s);
		tt_backend_free(b3);
	}
	clock_offset_ns = 0;
	free(cache);
	free(root);
	free(f1);
	free(f2);
	free(cfile);
	tt_backend_free(b);
}

/* Two backends on one cache file (two processes), each fingerprinting its
 * own directory, and two threads on one backend: every entry survives. */
typedef struct fp_job {
	tt_backend *b;
	const char *uri;
	json_t *state;
} fp_job;

static void *fp_thread(void *arg)
{
	fp_job *j = arg;
	j->state = fp(j->b, j->uri);
	return NULL;
}

static size_t cache_entries(const char *cfile)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf text = TT_BUF_INIT;
	json_t *all = NULL;
	size_t n = 0;
	if (tt_read_file(cfile, &text, 0, &err) == 0 &&
	    (all = tt_json_parse(text.ptr, text.len, "cache", &err)))
		n = json_object_size(all);
	json_decref(all);
	tt_buf_release(&text);
	tt_error_clear(&err);
	return n;
}

TT_TEST(cache_concurrent_writers_merge)
{
	const char *tmp = tt_test_tmpdir();
	char *cache = path2(tmp, "cache"), *cfile = path2(cache, TT_FILE_HASH_CACHE);
	char *dirs[4];
	tt_backend *b1 = file_backend(cache), *b2 = file_backend(cache);
	CHECK(b1 && b2);
	for (int d = 0; d < 4; d++) {
		dirs[d] = tt_asprintf("%s/d%d", tmp, d);
		for (int i = 0; i < 25; i++) {
			char *p = tt_asprintf("%s/f%02d", dirs[d], i), *t = tt_asprintf("%d/%d", d, i);
			CHECK_INT(puts_file(p, t), 0);
			free(p);
			free(t);
		}
	}
	/* Two "processes" in turn: the second keeps the first's entries. */
	json_t *s = fp(b1, dirs[0]);
	json_decref(s);
	s = fp(b2, dirs[1]);
	json_decref(s);
	CHECK_INT(cache_entries(cfile), 50);
	/* Two threads on each backend at once. */
	{
		pthread_t t[4];
		fp_job jobs[4] = { { b1, dirs[2], NULL }, { b1, dirs[3], NULL },
				   { b2, dirs[0], NULL }, { b2, dirs[1], NULL } };
		for (int i = 0; i < 4; i++)
			CHECK_INT(pthread_create(&t[i], NULL, fp_thread, &jobs[i]), 0);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		for (int i = 0; i < 4; i++) {
			CHECK(jobs[i].state != NULL);
			CHECK_INT(ifield(jobs[i].state, "count"), 25);
			json_decref(jobs[i].state);
		}
	}
	/* One more write from b2 merges b1's threads' entries in. */
	{
		char *p = tt_asprintf("%s/new", dirs[0]);
		CHECK_INT(puts_file(p, "new"), 0);
		free(p);
		s = fp(b2, dirs[0]);
		json_decref(s);
	}
	CHECK_INT(cache_entries(cfile), 101);
	for (int d = 0; d < 4; d++)
		free(dirs[d]);
	free(cache);
	free(cfile);
	tt_backend_free(b1);
	tt_backend_free(b2);
}

/* --- parallel hashing -------------------------------------------------------------- */

typedef struct progress_seen {
	pthread_mutex_t m;
	uint64_t calls, files_total, bytes_total, max_files, max_bytes;
} progress_seen;

static void on_progress(void *ctx, const tt_backend_work *p)
{
	progress_seen *s = ctx;
	pthread_mutex_lock(&s->m);
	s->calls++;
	s->files_total = p->files_total;
	s->bytes_total = p->bytes_total;
	if (p->files_done > s->max_files)
		s->max_files = p->files_done;
	if (p->bytes_done > s->max_bytes)
		s->max_bytes = p->bytes_done;
	pthread_mutex_unlock(&s->m);
}

TT_TEST(parallel_hashing_is_deterministic)
{
	const char *tmp = tt_test_tmpdir();
	char *root = path2(tmp, "tree");
	size_t big = (size_t)3 << 20; /* several read buffers */
	unsigned char *data = tt_malloc(big);
	uint64_t total = 0;
	json_t *first = NULL;
	char *first_listing = NULL;
	CHECK(root && data);
	for (size_t i = 0; i < big; i++)
		data[i] = (unsigned char)(i * 2654435761u >> 13);
	for (int i = 0; i < 300; i++) {
		char *p = tt_asprintf("%s/d%d/e%d/f%03d.bin", root, i % 7, i % 3, i);
		size_t len = i % 50 == 0 ? big - (size_t)i : (size_t)(i * 37 % 5000);
		CHECK_INT(put(p, data, len), 0);
		total += len;
		free(p);
	}
	{
		/* One file's sha256 against the one-shot hash. */
		char want[65];
		char *p = tt_asprintf("%s/d0/e0/f000.bin", root);
		tt_backend *b = file_backend(NULL);
		CHECK_INT(tt_sha256_hex(want, data, big), 0);
		json_t *s = fp(b, p);
		CHECK_STR(sfield(s, "sha256"), want);
		json_decref(s);
		tt_backend_free(b);
		free(p);
	}
	unsigned threads[] = { 1, 2, 8, 0 };
	for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
		tt_backend *b = file_backend(NULL);
		progress_seen seen = { .m = PTHREAD_MUTEX_INITIALIZER };
		CHECK(b != NULL);
		tt_file_backend_set_threads(b, threads[t]);
		tt_backend_progress(b, on_progress, &seen);
		json_t *s = fp(b, root);
		char *text = listing_of(b, root, s);
		CHECK(s && text);
		CHECK_INT(ifield(s, "count"), 300);
		CHECK_INT(ifield(s, "size"), (long long)total);
		CHECK_INT(hashed(b), 300);
		CHECK_INT(seen.files_total, 300);
		CHECK_INT(seen.max_files, 300);
		CHECK_INT(seen.bytes_total, (long long)total);
		CHECK_INT(seen.max_bytes, (long long)total);
		CHECK_INT(seen.calls, 300);
		if (!first) {
			first = json_incref(s);
			first_listing = tt_strdup(text);
		} else {
			CHECK_MSG(json_equal(first, s), "threads=%u gives another state", threads[t]);
			CHECK_STR(text, first_listing);
		}
		json_decref(s);
		free(text);
		tt_backend_free(b);
	}
	json_decref(first);
	free(first_listing);
	free(data);
	free(root);
}

/* A refresh of more entries than the post-walk work splits (16384, in
 * slices of 4096) feeds the listing digest slice by slice beside the cache
 * lookups.  Cold
 * (every file a miss), warm (every file a hit) and with misses in the first,
 * a middle and the last slice, on 2 and 8 threads, it gives the state and
 * listing that one thread (one slice, digested after the hashing) gives. */
TT_TEST(sliced_refresh_digest_matches_one_thread)
{
	const char *tmp = tt_test_tmpdir();
	char *root = path2(tmp, "many"), *cache = path2(tmp, "cache");
	enum { FILES = 17000 };
	CHECK(root && cache);
	for (int i = 0; i < FILES; i++) {
		char *p = tt_asprintf("%s/d%03d/f%05d", root, i / 100, i);
		char body[32];
		snprintf(body, sizeof body, "%d\n", i);
		CHECK_INT(puts_file(p, body), 0);
		free(p);
	}
	{
		char *target = tt_asprintf("%s/d100/f10000", root), *link = tt_asprintf("%s/d100/link", root);
		/* dangling: a row of its own, with the symlink's token */
		CHECK(target && link && symlink("nowhere", link) == 0);
		free(target);
		free(link);
	}
	const int changed[] = { 5, 10011, FILES - 1 };
	json_t *want = NULL;
	char *want_listing = NULL;
	for (int round = 0; round < 3; round++) {
		if (round == 2)
			for (size_t c = 0; c < sizeof changed / sizeof changed[0]; c++) {
				char *p = tt_asprintf("%s/d%03d/f%05d", root, changed[c] / 100, changed[c]);
				CHECK_INT(puts_file(p, "changed\n"), 0);
				free(p);
			}
		/* one thread, no cache: every file hashed, one slice (again
		 * only when the tree changed) */
		if (round != 1) {
			json_decref(want);
			free(want_listing);
			tt_backend *one = file_backend(NULL);
			CHECK(one != NULL);
			tt_file_backend_set_threads(one, 1);
			want = fp(one, root);
			want_listing = listing_of(one, root, want);
			tt_backend_free(one);
		}
		CHECK(want && want_listing);
		CHECK_INT(ifield(want, "count"), FILES + 1);
		unsigned threads[] = { 2, 8 };
		for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++) {
			tt_backend *b = file_backend(cache);
			CHECK(b != NULL);
			tt_file_backend_set_threads(b, threads[t]);
			tt_file_backend_set_clock(b, fake_now);
			clock_offset_ns = INT64_C(10000000000); /* hashed well after the writes: trusted */
			json_t *s = fp(b, root);
			char *text = listing_of(b, root, s);
			CHECK_MSG(s && json_equal(s, want), "round %d, %u threads: another state", round,
				  threads[t]);
			CHECK(text && strcmp(text, want_listing) == 0);
			/* round 0 on 2 threads fills the cache: later runs hit it,
			 * but for the files round 2 changed */
			uint64_t expect = round == 0 && t == 0 ? FILES : round == 2 && t == 0 ? 3 : 0;
			CHECK_MSG(hashed(b) == expect, "round %d, %u threads: %llu hashed, not %llu", round,
				  threads[t], (unsigned long long)hashed(b), (unsigned long long)expect);
			json_decref(s);
			free(text);
			tt_backend_free(b);
		}
	}
	json_decref(want);
	free(want_listing);
	free(root);
	free(cache);
}

/* --- listings after another process, and diffs ------------------------------------- */

TT_TEST(listing_reads_again_only_for_the_recorded_state)
{
	tt_backend *b = file_backend(NULL), *b2 = file_backend(NULL);
	char *root = path2(tt_test_tmpdir(), "l"), *p = path2(root, "x");
	CHECK(b && b2 && root && p);
	CHECK_INT(puts_file(p, "x"), 0);
	json_t *s = fp(b, root);
	/* Another backend never saw it: it walks again and finds the same digest. */
	char *text = listing_of(b2, root, s);
	CHECK_STR(text, "{\"p\":\"x\",\"k\":\"2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881\",\"s\":1}\n");
	free(text);
	/* Once the directory changed, the recorded state has no listing. */
	tt_backend_free(b2);
	b2 = file_backend(NULL);
	CHECK_INT(puts_file(p, "y"), 0);
	text = listing_of(b2, root, s);
	CHECK(text == NULL);
	/* The first backend remembers it by digest. */
	text = listing_of(b, root, s);
	CHECK(text != NULL);
	free(text);
	json_decref(s);
	free(root);
	free(p);
	tt_backend_free(b);
	tt_backend_free(b2);
}

static int diff_of(tt_backend *b, const json_t *a, const json_t *bs, const char *la,
		   const char *lb, tt_object_diff *d)
{
	tt_error err = TT_ERROR_INIT;
	json_t *loc = loc_of("/data/x");
	int rc = b->ops->diff(b, loc, a, bs, la, lb, d, &err);
	if (rc)
		fprintf(stderr, "  diff: %s\n", tt_error_text(&err));
	tt_error_clear(&err);
	json_decref(loc);
	return rc;
}

static json_t *dir_state(long long count, long long size, const char *digest)
{
	return json_pack("{s:s, s:I, s:I, s:s}", "type", "dir", "count", (json_int_t)count, "size",
			 (json_int_t)size, "digest", digest);
}

TT_TEST(diff_file_by_file)
{
	tt_backend *b = file_backend(NULL);
	tt_object_diff d;
	json_t *a = dir_state(3, 3000, "aa"), *bs = dir_state(3, 5000, "bb");
	const char *la = "{\"p\":\"keep\",\"k\":\"k1\",\"s\":1000}\n"
			 "{\"p\":\"grow\",\"k\":\"k2\",\"s\":1000}\n"
			 "\n"
			 "{\"p\":\"gone\",\"k\":\"k3\",\"s\":1000}\n";
	const char *lb = "{\"p\":\"grow\",\"k\":\"k2b\",\"s\":5096}\r\n"
			 "{\"p\":\"keep\",\"k\":\"k1\",\"s\":1000}\n"
			 "{\"p\":\"n\\u00e9w\",\"k\":\"k4\",\"s\":0}";
	CHECK(b != NULL);
	CHECK_INT(diff_of(b, a, bs, la, lb, &d), 0);
	CHECK_STR(d.unit, "files");
	CHECK_INT(d.added, 1);
	CHECK_INT(d.removed, 1);
	CHECK_INT(d.modified, 1);
	CHECK_INT(d.nentries, 3);
	/* Path order; size deltas as tether-vcs's _human formats them. */
	CHECK_STR(d.entries[0].path, "gone");
	CHECK_STR(d.entries[0].change, "removed");
	CHECK_STR(d.entries[0].detail, "-1000 B");
	CHECK_STR(d.entries[1].path, "grow");
	CHECK_STR(d.entries[1].change, "modified");
	CHECK_STR(d.entries[1].detail, "+4.0 KiB");
	CHECK_STR(d.entries[2].path, "n\xc3\xa9w");
	CHECK_STR(d.entries[2].change, "added");
	CHECK_STR(d.entries[2].detail, "+0 B");
	char *summary = tt_object_diff_summary(&d);
	CHECK_STR(summary, "+1 -1 ~1 files");
	free(summary);
	tt_object_diff_release(&d);

	/* Equal digests: nothing, whatever the listings say. */
	CHECK_INT(diff_of(b, a, a, la, lb, &d), 0);
	CHECK(tt_object_diff_is_empty(&d));
	tt_object_diff_release(&d);

	/* A missing listing: a count and size summary, and a note. */
	CHECK_INT(diff_of(b, a, bs, NULL, lb, &d), 0);
	CHECK_INT(d.modified, 1);
	CHECK_STR(d.entries[0].path, "(summary)");
	CHECK_STR(d.entries[0].detail, "3 -> 3 files, +2.0 KiB");
	summary = tt_object_diff_summary(&d);
	CHECK_STR(summary, "+0 -0 ~1 files; no stored listing for side a");
	free(summary);
	tt_object_diff_release(&d);
	CHECK_INT(diff_of(b, a, bs, NULL, NULL, &d), 0);
	CHECK_STR(d.note, "no stored listing for side a and b");
	tt_object_diff_release(&d);
	CHECK_INT(diff_of(b, a, bs, la, NULL, &d), 0);
	CHECK_STR(d.note, "no stored listing for side b");
	tt_object_diff_release(&d);

	/* A malformed listing is an error, not a silent diff. */
	{
		tt_error err = TT_ERROR_INIT;
		json_t *loc = loc_of("/x");
		CHECK_INT(b->ops->diff(b, loc, a, bs, "{\"p\":", lb, &d, &err), TT_EBACKEND);
		tt_error_clear(&err);
		json_decref(loc);
	}
	json_decref(a);
	json_decref(bs);
	tt_backend_free(b);
}

/* Listings read on the fast path (the shape both implementations write)
 * and through the JSON reader (any other spelling of the same rows) give
 * the same diff; the fast path never accepts what the JSON reader would
 * refuse, nor differs on duplicates, order, line breaks or sizes. */
TT_TEST(diff_listing_fast_and_general_readers_agree)
{
	tt_backend *b = file_backend(NULL);
	tt_object_diff d1, d2;
	json_t *a = dir_state(3, 3000, "aa"), *bs = dir_state(3, 5000, "bb");
	const char *lb = "{\"p\":\"a\",\"k\":\"k1\",\"s\":1}\n"
			 "{\"p\":\"b\",\"k\":\"k2\",\"s\":20}\n"
			 "{\"p\":\"c\",\"k\":\"k3\",\"s\":-3}\n";
	/* the same rows in canonical form, out of order, with a duplicate
	 * (the last wins), a lone \r and a \r\n break */
	const char *fast = "{\"p\":\"c\",\"k\":\"old\",\"s\":9}\r"
			   "{\"p\":\"b\",\"k\":\"k2\",\"s\":20}\r\n"
			   "{\"p\":\"a\",\"k\":\"k1\",\"s\":1}\n"
			   "{\"p\":\"c\",\"k\":\"k3\",\"s\":-3}";
	/* the same rows spelled so that only the JSON reader takes them */
	const char *general = "{ \"p\": \"c\", \"k\": \"old\", \"s\": 9 }\r"
			      "{\"k\":\"k2\",\"p\":\"b\",\"s\":20}  \r\n"
			      "{\"p\":\"\\u0061\",\"k\":\"k\\u0031\",\"s\":1}\n"
			      "{\"p\":\"c\",\"s\":-3,\"k\":\"k3\"}";
	CHECK(b != NULL);
	CHECK_INT(diff_of(b, a, bs, fast, lb, &d1), 0);
	CHECK_INT(diff_of(b, a, bs, general, lb, &d2), 0);
	CHECK(tt_object_diff_is_empty(&d1));
	CHECK(tt_object_diff_is_empty(&d2));
	tt_object_diff_release(&d1);
	tt_object_diff_release(&d2);
	CHECK_INT(diff_of(b, a, bs, lb, fast + 0, &d1), 0);
	CHECK(tt_object_diff_is_empty(&d1));
	tt_object_diff_release(&d1);

	/* a long path (past several eight-byte words) and a non-ASCII one */
	{
		const char *la2 = "{\"p\":\"dir/sub/a-rather-long-file-name-0001.parquet\",\"k\":\"x\",\"s\":5}\n"
				  "{\"p\":\"n\xc3\xa9w\",\"k\":\"y\",\"s\":7}\n";
		const char *lb2 = "{\"p\":\"dir/sub/a-rather-long-file-name-0001.parquet\",\"k\":\"x2\",\"s\":6}\n";
		CHECK_INT(diff_of(b, a, bs, la2, lb2, &d1), 0);
		CHECK_INT(d1.modified, 1);
		CHECK_INT(d1.removed, 1);
		CHECK_STR(d1.entries[0].path, "dir/sub/a-rather-long-file-name-0001.parquet");
		CHECK_STR(d1.entries[0].detail, "+1 B");
		CHECK_STR(d1.entries[1].path, "n\xc3\xa9w");
		tt_object_diff_release(&d1);
	}

	/* shapes the JSON reader refuses stay refused */
	{
		static const char *const bad[] = {
			"{\"p\":\"a\",\"k\":\"k\",\"s\":01}",   /* leading zero */
			"{\"p\":\"a\",\"k\":\"k\",\"s\":}",     /* no number */
			"{\"p\":\"a\tb\",\"k\":\"k\",\"s\":1}", /* raw control byte */
			"{\"p\":\"a\",\"k\":\"k\",\"s\":1}x",   /* trailing junk */
			"{\"p\":\"a\",\"k\":\"k\",\"s\":99999999999999999999}",
		};
		for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
			tt_error err = TT_ERROR_INIT;
			json_t *loc = loc_of("/x");
			CHECK_INT(b->ops->diff(b, loc, a, bs, bad[i], lb, &d1, &err), TT_EBACKEND);
			CHECK(strstr(tt_error_text(&err), "malformed at line 1") != NULL);
			tt_error_clear(&err);
			json_decref(loc);
		}
	}
	json_decref(a);
	json_decref(bs);
	tt_backend_free(b);
}

/* Listings of over a megabyte are read on two threads (one per side): the
 * diff is the same, unsorted input is still sorted, and a malformed line is
 * reported for the side it is on. */
TT_TEST(diff_big_listings_read_side_by_side)
{
	enum { N = 20000 };
	tt_backend *b = file_backend(NULL);
	tt_buf la = TT_BUF_INIT, lb = TT_BUF_INIT, bad = TT_BUF_INIT;
	tt_object_diff d;
	json_t *a = dir_state(N, 0, "a"), *bs = dir_state(N, 1, "b");
	char *summary;

	CHECK(b != NULL);
	/* b lists the rows in reverse order: reading must sort it */
	for (int i = 0; i < N; i++)
		tt_buf_printf(&la, "{\"p\":\"dir/sub/f%06d\",\"k\":\"%064d\",\"s\":%d}\n", i, i, i);
	for (int i = N - 1; i >= 0; i--) {
		if (i == 17)
			continue; /* removed */
		tt_buf_printf(&lb, "{\"p\":\"dir/sub/f%06d\",\"k\":\"%064d\",\"s\":%d}\n", i,
			      i % 1000 == 999 ? i + 1 : i, i);
	}
	tt_buf_puts(&lb, "{\"p\":\"dir/sub/zz\",\"k\":\"x\",\"s\":5}\n"); /* added */
	CHECK(!la.failed && !lb.failed && la.len > (1u << 20) && lb.len > (1u << 20));
	CHECK_INT(diff_of(b, a, bs, la.ptr, lb.ptr, &d), 0);
	summary = tt_object_diff_summary(&d);
	CHECK_STR(summary, "+1 -1 ~20 files");
	free(summary);
	CHECK_STR(d.entries[0].path, "dir/sub/f000017");
	CHECK_STR(d.entries[0].change, "removed");
	tt_object_diff_release(&d);

	/* a malformed line on either side names that side and line */
	tt_buf_put(&bad, la.ptr, la.len);
	tt_buf_puts(&bad, "{\"p\": oops}\n");
	for (int side = 0; side < 2; side++) {
		tt_error err = TT_ERROR_INIT;
		json_t *loc = loc_of("/data/x");
		const char *x = side ? lb.ptr : bad.ptr, *y = side ? bad.ptr : lb.ptr;
		CHECK(b->ops->diff(b, loc, a, bs, x, y, &d, &err) != 0);
		CHECK_MSG(strstr(tt_error_text(&err), side ? "side b is malformed at line 20001"
							 : "side a is malformed at line 20001"),
			  "side %d: %s", side, tt_error_text(&err));
		tt_error_clear(&err);
		json_decref(loc);
	}
	tt_buf_release(&la);
	tt_buf_release(&lb);
	tt_buf_release(&bad);
	json_decref(a);
	json_decref(bs);
	tt_backend_free(b);
}

TT_TEST(diff_sizes_format_like_tether_vcs)
{
	static const struct {
		long long from, to;
		const char *detail;
	} cases[] = {
		{ 0, 0, "+0 B" },                   { 0, 1023, "+1023 B" },
		{ 0, 1024, "+1.0 KiB" },            { 1536, 0, "-1.5 KiB" },
		{ 0, 5 << 20, "+5.0 MiB" },         { 0, 1126, "+1.1 KiB" },
		{ 0, 1075, "+1.0 KiB" },            { 0, 3LL << 30, "+3.0 GiB" },
		{ 0, 2048LL << 40, "+2048.0 TiB" }, { 0, 1152, "+1.1 KiB" },
	};
	tt_backend *b = file_backend(NULL);
	CHECK(b != NULL);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		tt_object_diff d;
		json_t *a = dir_state(1, cases[i].from, "a"), *bs = dir_state(1, cases[i].to, "b");
		char *la = tt_asprintf("{\"p\":\"f\",\"k\":\"x\",\"s\":%lld}\n", cases[i].from);
		char *lb = tt_asprintf("{\"p\":\"f\",\"k\":\"y\",\"s\":%lld}\n", cases[i].to);
		CHECK_INT(diff_of(b, a, bs, la, lb, &d), 0);
		CHECK_INT(d.nentries, 1);
		CHECK_STR(d.entries[0].detail, cases[i].detail);
		tt_object_diff_release(&d);
		free(la);
		free(lb);
		json_decref(a);
		json_decref(bs);
	}
	tt_backend_free(b);
}

TT_TEST(diff_caps_entries_counts_exact)
{
	tt_backend *b = file_backend(NULL);
	tt_buf la = TT_BUF_INIT, lb = TT_BUF_INIT;
	tt_object_diff d;
	json_t *a = dir_state(2005, 0, "a"), *bs = dir_state(2005, 2005, "b");
	CHECK(b != NULL);
	for (int i = 0; i < 2005; i++) {
		tt_buf_printf(&la, "{\"p\":\"f%04d\",\"k\":\"x\",\"s\":0}\n", i);
		tt_buf_printf(&lb, "{\"p\":\"f%04d\",\"k\":\"y\",\"s\":1}\n", i);
	}
	/* plus 7 removed and 3 added */
	for (int i = 0; i < 7; i++)
		tt_buf_printf(&la, "{\"p\":\"r%d\",\"k\":\"x\",\"s\":2}\n", i);
	for (int i = 0; i < 3; i++)
		tt_buf_printf(&lb, "{\"p\":\"z%d\",\"k\":\"x\",\"s\":2}\n", i);
	CHECK_INT(diff_of(b, a, bs, la.ptr, lb.ptr, &d), 0);
	CHECK_INT(d.modified, 2005);
	CHECK_INT(d.removed, 7);
	CHECK_INT(d.added, 3);
	CHECK_INT(d.nentries, 2000);
	CHECK(d.truncated);
	char *summary = tt_object_diff_summary(&d);
	CHECK_STR(summary, "+3 -7 ~2005 files (first 2000 shown)");
	free(summary);
	CHECK_STR(d.entries[1999].path, "f1999");
	tt_object_diff_release(&d);
	tt_buf_release(&la);
	tt_buf_release(&lb);
	json_decref(a);
	json_decref(bs);
	tt_backend_free(b);
}

TT_TEST(diff_single_files)
{
	tt_backend *b = file_backend(NULL);
	tt_object_diff d;
	json_t *a = json_pack("{s:s, s:i, s:s}", "type", "file", "size", 10, "sha256",
			      "aaaaaaaaaaaaaaaaaaaaaaaaaaaa");
	json_t *bs = json_pack("{s:s, s:i, s:s}", "type", "file", "size", 2058, "sha256",
			       "bbbbbbbbbbbbbbbbbbbbbbbbbbbb");
	CHECK(b != NULL);
	CHECK_INT(diff_of(b, a, bs, NULL, NULL, &d), 0);
	CHECK_STR(d.unit, "objects");
	CHECK_INT(d.modified, 1);
	CHECK_STR(d.entries[0].path, "/data/x");
	CHECK_STR(d.entries[0].detail, "size +2.0 KiB, sha256 aaaaaaaaaaaa -> bbbbbbbbbbbb");
	tt_object_diff_release(&d);
	CHECK_INT(diff_of(b, a, a, NULL, NULL, &d), 0);
	CHECK(tt_object_diff_is_empty(&d));
	tt_object_diff_release(&d);
	/* A file that became a directory: the listing path, with its summary. */
	json_t *dirs = dir_state(2, 10, "cc");
	CHECK_INT(diff_of(b, a, dirs, NULL, NULL, &d), 0);
	CHECK_STR(d.unit, "files");
	CHECK_STR(d.entries[0].detail, "0 -> 2 files, +0 B");
	tt_object_diff_release(&d);
	json_decref(dirs);
	json_decref(a);
	json_decref(bs);
	tt_backend_free(b);
}

/* --- verify and open --------------------------------------------------------------- */

TT_TEST(verify_and_open)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = file_backend(NULL);
	char *root = path2(tt_test_tmpdir(), "v"), *f = path2(root, "f");
	tt_verify_status st;
	char *msg = NULL;
	CHECK(b && f);
	CHECK_INT(puts_file(f, "1"), 0);
	json_t *loc = loc_of(root), *s = fp(b, root), *h = NULL;
	CHECK(s != NULL);
	CHECK_OK(b->ops->verify(b, loc, s, NULL, false, &st, &msg, &err));
	CHECK_INT(st, TT_VERIFY_OK);
	free(msg);
	CHECK_INT(puts_file(f, "2"), 0);
	CHECK_OK(b->ops->verify(b, loc, s, NULL, true, &st, &msg, &err));
	CHECK_INT(st, TT_VERIFY_DRIFTED);
	CHECK_STR(msg, "content changed since commit");
	free(msg);
	CHECK_INT(unlink(f), 0);
	CHECK_INT(rmdir(root), 0);
	CHECK_OK(b->ops->verify(b, loc, s, NULL, false, &st, &msg, &err));
	CHECK_INT(st, TT_VERIFY_MISSING);
	CHECK(strncmp(msg, "[file] path does not exist: ", 28) == 0);
	free(msg);
	/* open: a read-only description of where the data is. */
	tt_target t = { TT_TARGET_STATE, NULL, NULL, s };
	CHECK_OK(b->ops->open(b, loc, &t, false, &h, &err));
	{
		json_t *want = json_pack("{s:s, s:s, s:b, s:s, s:n}", "type", "file", "address", root,
					 "read_only", 1, "uri", root, "version_id");
		CHECK(json_equal(h, want));
		json_decref(want);
	}
	json_decref(h);
	json_decref(s);
	json_decref(loc);
	/* A recorded remote object with no version id cannot be opened at it. */
	loc = loc_of("s3://b/k");
	s = json_pack("{s:s, s:i, s:s}", "type", "object", "size", 1, "etag", "e");
	t.state = s;
	CHECK_INT(b->ops->open(b, loc, &t, true, &h, &err), TT_EBACKEND);
	tt_error_clear(&err);
	json_object_set_new(s, "version_id", json_string("v7"));
	CHECK_OK(b->ops->open(b, loc, &t, true, &h, &err));
	CHECK_STR(sfield(h, "address"), "s3://b/k#v7");
	CHECK_STR(sfield(h, "version_id"), "v7");
	json_decref(h);
	CHECK_OK(b->ops->verify(b, loc, s, NULL, false, &st, &msg, &err));
	CHECK_INT(st, TT_VERIFY_UNKNOWN);
	CHECK_STR(msg, "pass --deep to confirm the version");
	free(msg);
	json_decref(s);
	json_decref(loc);
	/* No pins, no forks. */
	{
		tt_pin pin;
		json_t *ids = NULL;
		loc = loc_of("/tmp");
		CHECK_INT(b->ops->pin(b, loc, NULL, "x", &pin, &err), TT_ECAPABILITY);
		tt_error_clear(&err);
		CHECK_OK(b->ops->list_pins(b, loc, &ids, &err));
		CHECK_INT(json_array_size(ids), 0);
		json_decref(ids);
		json_decref(loc);
	}
	free(root);
	free(f);
	tt_backend_free(b);
}

/* --- the store lifecycle ----------------------------------------------------------- */

TT_TEST(create_lifecycle)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = file_backend(NULL);
	char *dir = path2(tt_test_tmpdir(), "new/parents/store"), *marker = path2(dir, ".tether-owner");
	char *f = path2(dir, "data"), *who = NULL;
	json_t *loc = loc_of(dir), *s = NULL, *junk = NULL;
	int empty;
	CHECK(b && marker && f);
	CHECK_OK(b->ops->create(b, loc, "ab12cd34", &s, &err));
	/* The marker is not content: an empty directory's state. */
	CHECK_STR(sfield(s, "digest"), "cae66941d9efbd404e4d88758ea67670");
	CHECK_INT(ifield(s, "count"), 0);
	{
		tt_buf text = TT_BUF_INIT;
		CHECK_OK(tt_read_file(marker, &text, 0, &err));
		CHECK_STR(text.ptr, "ab12cd34\n");
		tt_buf_release(&text);
	}
	CHECK_OK(b->ops->owner(b, loc, &who, &err));
	CHECK_STR(who, "ab12cd34");
	free(who);
	CHECK_OK(b->ops->is_ref_empty(b, loc, NULL, &empty, &err));
	CHECK_INT(empty, 1);
	/* Never adopted twice. */
	CHECK_INT(b->ops->create(b, loc, "ffffffff", &junk, &err), TT_EBACKEND);
	CHECK(strstr(tt_error_text(&err), "already exists; `create` never adopts it") != NULL);
	tt_error_clear(&err);
	/* Data in it: not empty, and delete_store refuses. */
	CHECK_INT(puts_file(f, "data"), 0);
	CHECK_OK(b->ops->is_ref_empty(b, loc, NULL, &empty, &err));
	CHECK_INT(empty, 0);
	CHECK_INT(b->ops->delete_store(b, loc, &err), TT_EBACKEND);
	CHECK(strstr(tt_error_text(&err), "is not empty; not removing it") != NULL);
	tt_error_clear(&err);
	CHECK(tt_is_file(f) && tt_is_file(marker));
	CHECK_INT(unlink(f), 0);
	CHECK_OK(b->ops->delete_store(b, loc, &err));
	CHECK(!tt_exists(dir));
	who = (char *)"x";
	CHECK_OK(b->ops->owner(b, loc, &who, &err));
	CHECK(who == NULL);
	CHECK_OK(b->ops->is_ref_empty(b, loc, NULL, &empty, &err));
	CHECK_INT(empty, -1);
	/* An empty directory tether did not make is never removed. */
	CHECK_INT(tt_mkdirs(dir, 0777, NULL), 0);
	CHECK_INT(b->ops->delete_store(b, loc, &err), TT_EBACKEND);
	CHECK(strstr(tt_error_text(&err), "has no .tether-owner marker") != NULL);
	tt_error_clear(&err);
	CHECK(tt_is_dir(dir));
	json_decref(s);
	json_decref(loc);
	free(dir);
	free(marker);
	free(f);
	tt_backend_free(b);
}
