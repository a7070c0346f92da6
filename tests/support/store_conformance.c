/*
 * tests/support/store_conformance.c - see store_conformance.h.
 *
 * Each check is a function returning 0 when it held; SC_CHECK reports the
 * first failed condition of a check and returns 1 from it.
 */
#include "store_conformance.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "util/mem.h"

static const char *label_;

#define SC_CHECK(cond, ...)                                                      \
	do {                                                                     \
		if (!(cond)) {                                                   \
			char m_[512];                                            \
			snprintf(m_, sizeof m_, __VA_ARGS__);                    \
			tt_test_fail(__FILE__, __LINE__, "%s/%s: %s (%s) %s", label_, \
				     __func__, m_, #cond, err.message ? err.message : ""); \
			goto fail;                                               \
		}                                                                \
	} while (0)

#define SC_BEGIN tt_error err = TT_ERROR_INIT; int failed_ = 0
#define SC_END                                                                   \
	goto done;                                                               \
fail:                                                                            \
	failed_ = 1;                                                             \
done:                                                                            \
	tt_error_clear(&err)

/* get into a fresh buffer; content compared with want (NULL: expect rc). */
static int get_is(tt_store *s, const char *key, const char *want, size_t wlen)
{
	tt_buf b = TT_BUF_INIT;
	tt_error err = TT_ERROR_INIT;
	int rc = tt_store_get(s, key, NULL, &b, NULL, &err);
	int ok = rc == 0 && b.len == wlen && memcmp(b.ptr, want, wlen) == 0;
	if (!ok)
		tt_test_fail(__FILE__, __LINE__, "%s: get '%s' rc=%d len=%zu (want %zu) %s", label_, key,
			     rc, b.len, wlen, err.message ? err.message : "");
	tt_buf_release(&b);
	tt_error_clear(&err);
	return ok ? 0 : 1;
}

static int sc_missing(tt_store *s)
{
	SC_BEGIN;
	tt_store_meta m;
	tt_buf b = TT_BUF_INIT;
	SC_CHECK(tt_store_head(s, "no/such", NULL, &m, &err) == TT_ENOTFOUND, "head");
	tt_error_clear(&err);
	SC_CHECK(tt_store_get(s, "no/such", NULL, &b, NULL, &err) == TT_ENOTFOUND, "get");
	tt_error_clear(&err);
	SC_CHECK(tt_store_get_range(s, "nosuch", NULL, 0, 4, &b, &err) == TT_ENOTFOUND, "range");
	tt_error_clear(&err);
	SC_CHECK(b.len == 0, "nothing read");
	SC_CHECK(tt_store_delete(s, "no/such", &err) == 0, "delete of a missing key succeeds");
	SC_END;
	tt_buf_release(&b);
	return failed_;
}

static int sc_roundtrip(tt_store *s)
{
	SC_BEGIN;
	static const char bin[] = "a\0b\0\xff\x01z";
	tt_store_meta put = { 0 }, head = { 0 }, got = { 0 };
	tt_buf b = TT_BUF_INIT;
	SC_CHECK(tt_store_put(s, "rt/bin", bin, sizeof bin, &put, &err) == 0, "put");
	SC_CHECK(put.etag && *put.etag, "put gives an etag");
	SC_CHECK(put.etag[0] != '"', "etag without quotes");
	SC_CHECK(tt_store_head(s, "rt/bin", NULL, &head, &err) == 0, "head");
	SC_CHECK(head.size == sizeof bin, "size %llu", (unsigned long long)head.size);
	SC_CHECK(head.etag && strcmp(head.etag, put.etag) == 0, "head etag %s vs put %s", head.etag,
		 put.etag);
	SC_CHECK(tt_store_get(s, "rt/bin", NULL, &b, &got, &err) == 0, "get");
	SC_CHECK(b.len == sizeof bin && memcmp(b.ptr, bin, sizeof bin) == 0, "content");
	SC_CHECK(got.etag && strcmp(got.etag, head.etag) == 0, "get's meta is the head");
	SC_CHECK(tt_store_put(s, "rt/empty", "", 0, NULL, &err) == 0, "empty put");
	/* reserved and non-ASCII characters survive encoding and signing */
	SC_CHECK(tt_store_put(s, "rt/sp ace+plus=&%\xc3\xa9~(1).txt", "odd", 3, NULL, &err) == 0,
		 "odd key");
	SC_CHECK(get_is(s, "rt/sp ace+plus=&%\xc3\xa9~(1).txt", "odd", 3) == 0, "odd key get");
	SC_CHECK(get_is(s, "rt/empty", "", 0) == 0, "empty get");
	SC_END;
	tt_store_meta_release(&put);
	tt_store_meta_release(&head);
	tt_store_meta_release(&got);
	tt_buf_release(&b);
	return failed_;
}

static int sc_range(tt_store *s)
{
	SC_BEGIN;
	tt_buf b = TT_BUF_INIT;
	SC_CHECK(tt_store_put(s, "range", "0123456789", 10, NULL, &err) == 0, "put");
	SC_CHECK(tt_store_get_range(s, "range", NULL, 2, 3, &b, &err) == 0, "middle");
	SC_CHECK(b.len == 3 && memcmp(b.ptr, "234", 3) == 0, "middle is '%s'", b.ptr);
	tt_buf_reset(&b);
	SC_CHECK(tt_store_get_range(s, "range", NULL, 8, 10, &b, &err) == 0, "over the end");
	SC_CHECK(b.len == 2 && memcmp(b.ptr, "89", 2) == 0, "tail is '%s'", b.ptr);
	tt_buf_reset(&b);
	SC_CHECK(tt_store_get_range(s, "range", NULL, 0, 10, &b, &err) == 0, "whole");
	SC_CHECK(b.len == 10, "whole len %zu", b.len);
	SC_END;
	tt_buf_release(&b);
	return failed_;
}

static int sc_overwrite(tt_store *s)
{
	SC_BEGIN;
	tt_store_meta a = { 0 }, b = { 0 };
	SC_CHECK(tt_store_put(s, "ow", "one", 3, &a, &err) == 0, "first");
	SC_CHECK(tt_store_put(s, "ow", "two", 3, &b, &err) == 0, "second");
	SC_CHECK(strcmp(a.etag, b.etag) != 0, "same-size overwrite changes the etag (%s)", a.etag);
	SC_CHECK(get_is(s, "ow", "two", 3) == 0, "new content");
	SC_END;
	tt_store_meta_release(&a);
	tt_store_meta_release(&b);
	return failed_;
}

static int sc_put_if_absent(tt_store *s)
{
	SC_BEGIN;
	tt_store_meta m = { 0 };
	SC_CHECK(tt_store_put_if_absent(s, "pia/k", "first", 5, &m, &err) == 0, "absent");
	SC_CHECK(m.etag && *m.etag, "etag");
	SC_CHECK(tt_store_put_if_absent(s, "pia/k", "second", 6, NULL, &err) == TT_EEXISTS, "present");
	tt_error_clear(&err);
	SC_CHECK(get_is(s, "pia/k", "first", 5) == 0, "unchanged");
	SC_END;
	tt_store_meta_release(&m);
	return failed_;
}

static int sc_put_if_match(tt_store *s)
{
	SC_BEGIN;
	tt_store_meta a = { 0 }, b = { 0 };
	SC_CHECK(tt_store_put(s, "pim", "v1", 2, &a, &err) == 0, "put");
	SC_CHECK(tt_store_put_if_match(s, "pim", a.etag, "v2", 2, &b, &err) == 0, "matching etag");
	SC_CHECK(b.etag && strcmp(a.etag, b.etag) != 0, "new etag");
	SC_CHECK(tt_store_put_if_match(s, "pim", a.etag, "v3", 2, NULL, &err) == TT_EREFMOVED,
		 "stale etag");
	SC_CHECK(err.message && strstr(err.message, "pim"), "error names the key");
	tt_error_clear(&err);
	SC_CHECK(get_is(s, "pim", "v2", 2) == 0, "unchanged by the refused write");
	SC_CHECK(tt_store_put_if_match(s, "pim-none", a.etag, "x", 1, NULL, &err) == TT_ENOTFOUND,
		 "missing key");
	tt_error_clear(&err);
	SC_END;
	tt_store_meta_release(&a);
	tt_store_meta_release(&b);
	return failed_;
}

typedef struct race_arg {
	tt_store *s;
	const char *etag;
	int n, rc;
} race_arg;

static void *racer(void *p)
{
	race_arg *a = p;
	tt_error err = TT_ERROR_INIT;
	char body[16];
	snprintf(body, sizeof body, "racer-%d", a->n);
	a->rc = tt_store_put_if_match(a->s, "race", a->etag, body, strlen(body), NULL, &err);
	tt_error_clear(&err);
	return NULL;
}

static int sc_race(tt_store *s)
{
	SC_BEGIN;
	enum { N = 8 };
	tt_store_meta m = { 0 };
	pthread_t th[N];
	race_arg args[N];
	int wins = 0, moved = 0;
	SC_CHECK(tt_store_put(s, "race", "base", 4, &m, &err) == 0, "put");
	for (int i = 0; i < N; i++) {
		args[i] = (race_arg){ s, m.etag, i, 1 };
		pthread_create(&th[i], NULL, racer, &args[i]);
	}
	for (int i = 0; i < N; i++) {
		pthread_join(th[i], NULL);
		wins += args[i].rc == 0;
		moved += args[i].rc == TT_EREFMOVED;
	}
	SC_CHECK(wins == 1 && moved == N - 1, "%d wins, %d moved", wins, moved);
	SC_END;
	tt_store_meta_release(&m);
	return failed_;
}

typedef int (*sc_lister)(tt_store *, const char *, const char *, size_t, tt_store_page *, tt_error *);

/* Paged through in pages of `size` by `list`, prefix names keys[0..nk)
 * once each, in order. */
static int sc_pages(tt_store *s, sc_lister list, const char *prefix, size_t size,
		    const char *const *keys, size_t nk)
{
	SC_BEGIN;
	tt_store_page p = { 0 };
	char *token = NULL;
	size_t seen = 0;
	do {
		SC_CHECK(list(s, prefix, token, size, &p, &err) == 0, "page");
		SC_CHECK(p.n <= size, "page of %zu", p.n);
		for (size_t i = 0; i < p.n; i++, seen++)
			SC_CHECK(seen < nk && strcmp(p.items[i].key, keys[seen]) == 0, "paged order");
		free(token);
		token = p.next;
		p.next = NULL;
		tt_store_page_release(&p);
	} while (token);
	SC_CHECK(seen == nk, "pages of %zu: %zu of %zu keys", size, seen, nk);
	SC_END;
	free(token);
	tt_store_page_release(&p);
	return failed_;
}

static int sc_list(tt_store *s)
{
	SC_BEGIN;
	static const char *const keys[] = { "l/a-b", "l/a/b", "l/a/c/d", "l/a0", "l/ab", "l/b" };
	enum { NK = sizeof keys / sizeof keys[0] };
	tt_store_page p = { 0 };
	for (size_t i = 0; i < NK; i++)
		SC_CHECK(tt_store_put(s, keys[i], keys[i], strlen(keys[i]), NULL, &err) == 0, "put %s",
			 keys[i]);
	SC_CHECK(tt_store_list(s, "l/", NULL, 0, &p, &err) == 0, "list");
	SC_CHECK(p.n == NK && !p.next, "%zu keys, next %s", p.n, p.next ? p.next : "-");
	for (size_t i = 0; i < NK; i++) {
		SC_CHECK(strcmp(p.items[i].key, keys[i]) == 0, "order: %s at %zu", p.items[i].key, i);
		SC_CHECK(p.items[i].meta.size == strlen(keys[i]), "size of %s", keys[i]);
		SC_CHECK(p.items[i].meta.etag && *p.items[i].meta.etag, "etag of %s", keys[i]);
	}
	tt_store_page_release(&p);
	/* a string prefix, not only whole segments ('-' < '/' < '0' in byte order) */
	SC_CHECK(tt_store_list(s, "l/a", NULL, 0, &p, &err) == 0, "list l/a");
	SC_CHECK(p.n == 5, "l/a: %zu", p.n);
	tt_store_page_release(&p);
	SC_CHECK(tt_store_list(s, "l/a/", NULL, 0, &p, &err) == 0, "list l/a/");
	SC_CHECK(p.n == 2, "l/a/: %zu", p.n);
	tt_store_page_release(&p);
	SC_CHECK(tt_store_list(s, "l/zz", NULL, 0, &p, &err) == 0, "list l/zz");
	SC_CHECK(p.n == 0 && !p.next, "nothing under l/zz");
	tt_store_page_release(&p);
	/* pages of two, each key once, in order */
	SC_CHECK(sc_pages(s, tt_store_list, "l/", 2, keys, NK) == 0, "pages of two");
	/* a deleted key is no longer listed */
	SC_CHECK(tt_store_delete(s, "l/ab", &err) == 0, "delete");
	SC_CHECK(tt_store_list(s, "l/", NULL, 0, &p, &err) == 0, "list after delete");
	SC_CHECK(p.n == NK - 1, "%zu after delete", p.n);
	tt_store_meta m;
	SC_CHECK(tt_store_head(s, "l/ab", NULL, &m, &err) == TT_ENOTFOUND, "deleted");
	tt_error_clear(&err);
	SC_END;
	tt_store_page_release(&p);
	return failed_;
}

static int sc_bad_keys(tt_store *s)
{
	SC_BEGIN;
	static const char *const bad[] = { "", "/a", "a/", "a//b", "a/./b", "../x", "a/..", "." };
	tt_buf b = TT_BUF_INIT;
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		SC_CHECK(tt_store_put(s, bad[i], "x", 1, NULL, &err) == TT_EUSAGE, "put '%s'", bad[i]);
		tt_error_clear(&err);
		SC_CHECK(tt_store_get(s, bad[i], NULL, &b, NULL, &err) == TT_EUSAGE, "get '%s'", bad[i]);
		tt_error_clear(&err);
		SC_CHECK(tt_store_delete(s, bad[i], &err) == TT_EUSAGE, "delete '%s'", bad[i]);
		tt_error_clear(&err);
	}
	SC_END;
	tt_buf_release(&b);
	return failed_;
}

static int sc_cap(tt_store *s)
{
	SC_BEGIN;
	tt_buf b;
	tt_buf_init(&b, 8);
	SC_CHECK(tt_store_put(s, "cap", "0123456789abcdef", 16, NULL, &err) == 0, "put");
	SC_CHECK(tt_store_get(s, "cap", NULL, &b, NULL, &err) == TT_ELIMIT, "past the cap");
	SC_CHECK(b.len == 0, "nothing kept (%zu)", b.len);
	tt_error_clear(&err);
	SC_END;
	tt_buf_release(&b);
	return failed_;
}

static int sc_versions(tt_store *s)
{
	SC_BEGIN;
	tt_store_meta a = { 0 }, b = { 0 }, h = { 0 };
	tt_buf buf = TT_BUF_INIT;
	SC_CHECK(tt_store_put(s, "ver", "old", 3, &a, &err) == 0, "put");
	if (!s->versioned) {
		SC_CHECK(tt_store_head(s, "ver", "v1", &h, &err) == TT_ECAPABILITY,
			 "a version on an unversioned store");
		tt_error_clear(&err);
		SC_CHECK(!a.version, "no version from an unversioned store");
	} else {
		SC_CHECK(a.version && *a.version, "version from put");
		SC_CHECK(tt_store_put(s, "ver", "new!", 4, &b, &err) == 0, "put again");
		SC_CHECK(b.version && strcmp(a.version, b.version) != 0, "new version");
		SC_CHECK(tt_store_get(s, "ver", a.version, &buf, &h, &err) == 0, "get old version");
		SC_CHECK(buf.len == 3 && memcmp(buf.ptr, "old", 3) == 0, "old content");
		SC_CHECK(h.version && strcmp(h.version, a.version) == 0, "meta names the version");
	}
	SC_END;
	tt_store_meta_release(&a);
	tt_store_meta_release(&b);
	tt_store_meta_release(&h);
	tt_buf_release(&buf);
	return failed_;
}

/* list_keys names exactly the keys list names, page by page. */
static int sc_list_keys(tt_store *s)
{
	SC_BEGIN;
	static const char *const keys[] = { "lk/a-b", "lk/a/b", "lk/a/c/d", "lk/a0", "lk/ab", "lk/b/x/y", "lk/b0" };
	enum { NK = sizeof keys / sizeof keys[0] };
	tt_store_page p = { 0 }, q = { 0 };
	for (size_t i = 0; i < NK; i++)
		SC_CHECK(tt_store_put(s, keys[i], "k", 1, NULL, &err) == 0, "put %s", keys[i]);
	static const char *const prefixes[] = { "lk/", "lk/a", "lk/a/", "lk/b/", "lk/zz" };
	for (size_t k = 0; k < sizeof prefixes / sizeof prefixes[0]; k++) {
		SC_CHECK(tt_store_list(s, prefixes[k], NULL, 0, &p, &err) == 0, "list %s", prefixes[k]);
		SC_CHECK(tt_store_list_keys(s, prefixes[k], NULL, 0, &q, &err) == 0, "list_keys %s", prefixes[k]);
		SC_CHECK(p.n == q.n, "%s: list %zu keys, list_keys %zu", prefixes[k], p.n, q.n);
		for (size_t i = 0; i < p.n && i < q.n; i++)
			SC_CHECK(strcmp(p.items[i].key, q.items[i].key) == 0, "%s: %s vs %s", prefixes[k],
				 p.items[i].key, q.items[i].key);
		tt_store_page_release(&p);
		tt_store_page_release(&q);
	}
	for (size_t size = 1; size <= 3; size++)
		SC_CHECK(sc_pages(s, tt_store_list_keys, "lk/", size, keys, NK) == 0, "pages of %zu", size);
	SC_END;
	tt_store_page_release(&p);
	tt_store_page_release(&q);
	return failed_;
}

static int cmp_entry_key(const void *a, const void *b)
{
	return strcmp(((const tt_store_entry *)a)->key, ((const tt_store_entry *)b)->key);
}

/* A page's names, sorted (list_names promises no order). */
static void sort_names(tt_store_page *p)
{
	if (p->n > 1)
		qsort(p->items, p->n, sizeof *p->items, cmp_entry_key);
}

/* list_names: each first segment under a dir once, and the same names
 * whether the store reads one level or cuts a listing. */
static int sc_list_names(tt_store *s)
{
	SC_BEGIN;
	static const char *const keys[] = { "ln/a-1", "ln/a/x", "ln/a/y/z", "ln/a.b", "ln/b/c", "ln/c", "lnx" };
	static const char *const under_ln[] = { "a", "a-1", "a.b", "b", "c" };
	tt_store_page p = { 0 };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		SC_CHECK(tt_store_put(s, keys[i], "n", 1, NULL, &err) == 0, "put %s", keys[i]);
	SC_CHECK(tt_store_list_names(s, "ln", &p, &err) == 0, "names under ln");
	sort_names(&p);
	SC_CHECK(p.n == 5 && !p.next, "%zu names under ln", p.n);
	for (size_t i = 0; i < p.n && i < 5; i++)
		SC_CHECK(strcmp(p.items[i].key, under_ln[i]) == 0 && p.items[i].meta.size == 0,
			 "name %zu is %s, want %s", i, p.items[i].key, under_ln[i]);
	tt_store_page_release(&p);
	SC_CHECK(tt_store_list_names(s, "ln/a", &p, &err) == 0, "names under ln/a");
	sort_names(&p);
	SC_CHECK(p.n == 2 && strcmp(p.items[0].key, "x") == 0 && strcmp(p.items[1].key, "y") == 0,
		 "%zu names under ln/a", p.n);
	tt_store_page_release(&p);
	SC_CHECK(tt_store_list_names(s, "ln/none", &p, &err) == 0 && p.n == 0, "a dir without keys");
	tt_store_page_release(&p);
	SC_CHECK(tt_store_list_names(s, "", &p, &err) == 0, "names at the root");
	sort_names(&p);
	bool ln = false, lnx = false;
	for (size_t i = 0; i < p.n; i++) {
		ln |= strcmp(p.items[i].key, "ln") == 0;
		lnx |= strcmp(p.items[i].key, "lnx") == 0;
		SC_CHECK(!strchr(p.items[i].key, '/'), "a root name holds no '/': %s", p.items[i].key);
		SC_CHECK(i == 0 || strcmp(p.items[i - 1].key, p.items[i].key) < 0, "each root name once");
	}
	SC_CHECK(ln && lnx, "ln and lnx among the root names");
	tt_store_page_release(&p);
	SC_CHECK(tt_store_list_names(s, "ln/", &p, &err) == TT_EUSAGE, "a dir spelt with a trailing '/'");
	tt_error_clear(&err);
	SC_END;
	tt_store_page_release(&p);
	return failed_;
}

/* has_dir: a key under dir/ makes a dir; a blob alone does not. */
static int sc_has_dir(tt_store *s)
{
	SC_BEGIN;
	SC_CHECK(tt_store_put(s, "hd/a/b", "h", 1, NULL, &err) == 0, "put hd/a/b");
	SC_CHECK(tt_store_put(s, "hd/c", "h", 1, NULL, &err) == 0, "put hd/c");
	SC_CHECK(tt_store_has_dir(s, "hd"), "hd");
	SC_CHECK(tt_store_has_dir(s, "hd/a"), "hd/a");
	SC_CHECK(!tt_store_has_dir(s, "hd/c"), "a blob is no dir");
	SC_CHECK(!tt_store_has_dir(s, "hd/none"), "hd/none");
	SC_CHECK(!tt_store_has_dir(s, "h"), "a prefix of a dir's name");
	SC_CHECK(!tt_store_has_dir(s, "hd/"), "a dir spelt with a trailing '/'");
	SC_END;
	return failed_;
}

/* delete_tree: every key under dir/, nothing beside it. */
static int sc_delete_tree(tt_store *s)
{
	SC_BEGIN;
	static const char *const keys[] = { "dt/a", "dt/b/c", "dt/b/d/e", "dt-x", "dtx/y" };
	tt_store_page p = { 0 };
	tt_store_meta m = { 0 };
	for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++)
		SC_CHECK(tt_store_put(s, keys[i], "d", 1, NULL, &err) == 0, "put %s", keys[i]);
	SC_CHECK(tt_store_delete_tree(s, "dt/b", &err) == 0, "delete dt/b");
	SC_CHECK(tt_store_list_keys(s, "dt", NULL, 0, &p, &err) == 0, "list dt");
	SC_CHECK(p.n == 3 && strcmp(p.items[0].key, "dt-x") == 0 && strcmp(p.items[1].key, "dt/a") == 0 &&
		 strcmp(p.items[2].key, "dtx/y") == 0, "%zu keys left under dt", p.n);
	tt_store_page_release(&p);
	SC_CHECK(tt_store_delete_tree(s, "dt", &err) == 0, "delete dt");
	SC_CHECK(tt_store_list_keys(s, "dt", NULL, 0, &p, &err) == 0, "list dt again");
	SC_CHECK(p.n == 2 && strcmp(p.items[0].key, "dt-x") == 0 && strcmp(p.items[1].key, "dtx/y") == 0,
		 "%zu keys left beside dt", p.n);
	tt_store_page_release(&p);
	SC_CHECK(tt_store_delete_tree(s, "dt", &err) == 0, "a missing dir");
	SC_CHECK(tt_store_delete_tree(s, "dt-x", &err) == 0, "a blob is no dir");
	SC_CHECK(tt_store_head(s, "dt-x", NULL, &m, &err) == 0, "the blob stays");
	tt_store_meta_release(&m);
	SC_CHECK(tt_store_delete_tree(s, "dt/", &err) == TT_EUSAGE, "a dir spelt with a trailing '/'");
	tt_error_clear(&err);
	SC_END;
	tt_store_page_release(&p);
	tt_store_meta_release(&m);
	return failed_;
}

/* Last: it takes what every check before it left. */
static int sc_delete_all(tt_store *s)
{
	SC_BEGIN;
	tt_store_page p = { 0 };
	tt_buf b = TT_BUF_INIT;
	SC_CHECK(tt_store_put(s, "da/x/y", "d", 1, NULL, &err) == 0, "put da/x/y");
	SC_CHECK(tt_store_put(s, "da-top", "d", 1, NULL, &err) == 0, "put da-top");
	SC_CHECK(tt_store_delete_all(s, &err) == 0, "delete all");
	SC_CHECK(tt_store_list_keys(s, "", NULL, 0, &p, &err) == 0, "list the emptied store");
	SC_CHECK(p.n == 0, "%zu keys left, the first %s", p.n, p.n ? p.items[0].key : "");
	tt_store_page_release(&p);
	SC_CHECK(!tt_store_has_dir(s, "da"), "a directory left");
	SC_CHECK(tt_store_get(s, "da-top", NULL, &b, NULL, &err) == TT_ENOTFOUND, "da-top still reads");
	tt_error_clear(&err);
	SC_CHECK(tt_store_delete_all(s, &err) == 0, "a store already empty");
	/* it stays usable */
	SC_CHECK(tt_store_put(s, "da/again", "e", 1, NULL, &err) == 0, "put after delete all");
	SC_CHECK(tt_store_get(s, "da/again", NULL, &b, NULL, &err) == 0 && b.len == 1 && b.ptr[0] == 'e',
		 "read after delete all");
	SC_CHECK(tt_store_delete(s, "da/again", &err) == 0, "delete da/again");
	SC_END;
	tt_store_page_release(&p);
	tt_buf_release(&b);
	return failed_;
}

int tt_store_conformance_run(tt_store *s, const char *label)
{
	int (*const checks[])(tt_store *) = {
		sc_missing, sc_roundtrip, sc_range, sc_overwrite, sc_put_if_absent,
		sc_put_if_match, sc_race, sc_list, sc_list_keys, sc_list_names, sc_has_dir, sc_delete_tree, sc_bad_keys, sc_cap, sc_versions,
		sc_delete_all,
	};
	int failed = 0;
	label_ = label;
	for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
		failed += checks[i](s);
	return failed;
}
