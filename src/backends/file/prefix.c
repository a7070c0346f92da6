/*
 * backends/file/prefix.c - a prefix's listing in an object store, as the
 * `file` kind fingerprints it: {"count", "size", "digest"} over the
 * (name, ETag) pairs of every key, tether-vcs's digest byte for byte.
 *
 * The pages stream through: each is read as soon as it and every page
 * before it are in, its rows fed to the digest, and freed.  A listing's
 * names come in key order, which is name order unless a key ends in '/'
 * or starts with one (a "dir/" marker is the row "dir", which sorts before
 * "dir-x" although "dir-x" is listed first): then, and only then, the
 * prefix is listed again with every row held, sorted and deduplicated as
 * a dict keeps them.  Rows are kept for the listing only up to the
 * caller's cap; counts and sizes are always exact.
 *
 * Where the store can start a listing after a key (S3's start-after), the
 * keys after the first page are cut into ranges listed by several
 * threads, each at most LIST_AHEAD pages ahead of the reader, so memory
 * stays bounded however long the listing is.  How many requests are in
 * flight adapts to the server: two at first, more while the keys read a
 * second grow, half as many after a request the server failed first (its
 * retry is the HTTP client's, with its own back-off).
 */
#define _GNU_SOURCE
#include "backends/file/prefix.h"
#include "backends/kit.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/buf.h"
#include "util/mem.h"
#include "util/pool.h"

#define KIND "file"

/* Re-lists allowed when a paged listing saw the prefix change under it. */
#define PREFIX_LIST_TRIES 3
/* An entry changed this close to (or after) the listing's start may have
 * been written while the pages were read (server clocks drift, uploads
 * take time). */
#define PREFIX_RECENT_NS (15LL * 1000000000LL)
/* Key ranges listed at once after the first page (where the store can
 * start a listing after a key), the threads that list them, and the pages
 * a range may list before the reader has taken them. */
#define LIST_RANGES_MAX 48
#define LIST_THREADS 8
#define LIST_AHEAD 4
/* Requests in flight at first; the width doubles while a window of
 * LIST_WINDOW_NS reads more keys a second than the one before (by a
 * tenth), then grows by one, and halves when a request needed a retry
 * (the server said SlowDown). */
#define LIST_WIDTH_START 2
#define LIST_WINDOW_NS (250LL * 1000000LL)

/* ---- what a listing holds, for tests ---------------------------------------------- */

static atomic_size_t held_now, held_peak;

static void held_add(size_t n)
{
	size_t now = atomic_fetch_add(&held_now, n) + n;
	size_t peak = atomic_load(&held_peak);
	while (now > peak && !atomic_compare_exchange_weak(&held_peak, &peak, now))
		;
}

static void held_sub(size_t n)
{
	atomic_fetch_sub(&held_now, n);
}

static atomic_size_t pace_widest, pace_widened, pace_backed_off;

void tt_file_prefix_pace(size_t *widest, size_t *widened, size_t *backed_off)
{
	*widest = atomic_load(&pace_widest);
	*widened = atomic_load(&pace_widened);
	*backed_off = atomic_load(&pace_backed_off);
}

size_t tt_file_prefix_held_peak(bool reset)
{
	size_t p = atomic_load(&held_peak);
	if (reset)
		atomic_store(&held_peak, atomic_load(&held_now));
	return p;
}

/* ---- the pages, in key order ---------------------------------------------------------- */

/* Reads a page (its entries may be taken out); the caller releases it.
 * Nonzero stops the listing and is returned. */
typedef int (*page_fn)(tt_store_page *pg, void *ctx, tt_error *err);

typedef struct list_feed list_feed;

typedef struct list_range {
	tt_store *s;
	const char *prefix;
	char *after;          /* keys > after ... */
	char *upto;           /* ... and <= upto (NULL: to the end) */
	tt_store_page *pgs;   /* listed; [taken, npgs) not yet read */
	size_t npgs, alloc, taken;
	bool done;
	int rc;
	tt_error err;
	list_feed *feed;
} list_range;

struct list_feed {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	bool stop;            /* the reader has stopped: list no further */
	size_t ahead;         /* pages a range may hold unread */
	size_t width, active; /* requests allowed in flight, and in flight */
	size_t widest, widened, backed_off;
	bool doubling;        /* the width has not yet stopped paying */
	int64_t win_t0;       /* the reader's window: since when, keys read, */
	size_t win_keys;      /* and the rate of the window before */
	double last_rate;
	list_range *rs;
	size_t nr;
	tt_error err;         /* the pool's own */
};

/* Keep the page's keys up to the range's end and hand it to the reader,
 * waiting while the range holds `ahead` pages unread; *more: the next
 * page may still be inside the range (the page had a `next`). */
static int range_keep(list_range *r, tt_store_page *pg, bool has_next, bool *more)
{
	list_feed *f = r->feed;
	size_t keep = pg->n;
	if (r->upto)
		for (size_t i = 0; i < pg->n; i++)
			if (strcmp(pg->items[i].key, r->upto) > 0) {
				keep = i;
				break;
			}
	*more = keep == pg->n && has_next;
	for (size_t i = keep; i < pg->n; i++) {
		free(pg->items[i].key);
		tt_store_meta_release(&pg->items[i].meta);
	}
	pg->n = keep;
	pthread_mutex_lock(&f->mu);
	if (TT_ARRAY_GROW(r->pgs, r->alloc, r->npgs + 1) != 0) {
		pthread_mutex_unlock(&f->mu);
		tt_store_page_release(pg);
		return tt_error_oom(&r->err);
	}
	r->pgs[r->npgs++] = *pg;
	held_add(pg->n);
	pthread_cond_broadcast(&f->cv);
	while (r->npgs - r->taken >= f->ahead && !f->stop)
		pthread_cond_wait(&f->cv, &f->mu);
	if (f->stop)
		*more = false;
	pthread_mutex_unlock(&f->mu);
	return 0;
}

static int64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* A request slot (false: the reader has stopped). */
static bool slot_take(list_feed *f)
{
	bool go;
	pthread_mutex_lock(&f->mu);
	while (f->active >= f->width && !f->stop)
		pthread_cond_wait(&f->cv, &f->mu);
	go = !f->stop;
	if (go)
		f->active++;
	pthread_mutex_unlock(&f->mu);
	return go;
}

/* The slot back; a request the server failed first halves the width. */
static void slot_give(list_feed *f, int rc, const tt_store_page *pg)
{
	pthread_mutex_lock(&f->mu);
	f->active--;
	if (rc == 0 && pg->retried) {
		f->width = f->width > 1 ? f->width / 2 : 1;
		f->doubling = false;
		f->backed_off++;
		f->last_rate = 0;
		f->win_t0 = mono_ns();
		f->win_keys = 0;
	}
	pthread_cond_broadcast(&f->cv);
	pthread_mutex_unlock(&f->mu);
}

/* The reader took n keys: at the end of a window, widen while the rate
 * grows. */
static void pace(list_feed *f, size_t n)
{
	int64_t now = mono_ns();
	pthread_mutex_lock(&f->mu);
	f->win_keys += n;
	if (now - f->win_t0 >= LIST_WINDOW_NS) {
		double rate = (double)f->win_keys * 1e9 / (double)(now - f->win_t0);
		if (rate > f->last_rate * 1.1 && f->width < LIST_THREADS) {
			f->width = f->doubling ? f->width * 2 : f->width + 1;
			if (f->width > LIST_THREADS)
				f->width = LIST_THREADS;
			f->widened++;
			if (f->width > f->widest)
				f->widest = f->width;
			pthread_cond_broadcast(&f->cv);
		} else {
			f->doubling = false;
		}
		f->last_rate = rate;
		f->win_t0 = now;
		f->win_keys = 0;
	}
	pthread_mutex_unlock(&f->mu);
}

static void list_range_run(size_t i, void *ctx)
{
	list_range *r = &((list_range *)ctx)[i];
	tt_store_page pg;
	bool more;
	char *token = NULL;
	pthread_mutex_lock(&r->feed->mu);
	more = !r->feed->stop;
	pthread_mutex_unlock(&r->feed->mu);
	if (more && (more = slot_take(r->feed))) {
		r->rc = tt_store_list_after(r->s, r->prefix, r->after, 1000, &pg, &r->err);
		slot_give(r->feed, r->rc, &pg);
	}
	while (more && r->rc == 0) {
		token = pg.next;
		pg.next = NULL;
		if ((r->rc = range_keep(r, &pg, token != NULL, &more)) != 0 || !more ||
		    !slot_take(r->feed))
			break;
		r->rc = tt_store_list(r->s, r->prefix, token, 0, &pg, &r->err);
		slot_give(r->feed, r->rc, &pg);
		free(token);
		token = NULL;
	}
	free(token);
	pthread_mutex_lock(&r->feed->mu);
	r->done = true;
	pthread_cond_broadcast(&r->feed->cv);
	pthread_mutex_unlock(&r->feed->mu);
}

static void *feed_main(void *arg)
{
	list_feed *f = arg;
	tt_pool_map(f->nr, LIST_THREADS, list_range_run, f->rs, &f->err);
	return NULL;
}

/* The ranges' pages to fn in order, each as soon as it is in. */
static int feed_read(list_feed *f, page_fn fn, void *ctx, tt_error *err)
{
	int rc = 0;
	for (size_t i = 0; i < f->nr && rc == 0; i++) {
		list_range *r = &f->rs[i];
		for (;;) {
			tt_store_page pg;
			pthread_mutex_lock(&f->mu);
			while (r->taken == r->npgs && !r->done)
				pthread_cond_wait(&f->cv, &f->mu);
			if (r->taken == r->npgs) {
				pthread_mutex_unlock(&f->mu);
				break;
			}
			pg = r->pgs[r->taken++];
			pthread_cond_broadcast(&f->cv);
			pthread_mutex_unlock(&f->mu);
			size_t n = pg.n;
			pace(f, n);
			rc = fn(&pg, ctx, err);
			tt_store_page_release(&pg);
			held_sub(n);
			if (rc)
				break;
		}
		if (rc == 0 && r->rc) { /* done: no thread writes r any more */
			rc = r->rc;
			tt_error_move(err, &r->err);
		}
	}
	return rc;
}

/*
 * Where to cut the rest of a listing whose first page ended at `last`:
 * for each position j from the end of `last` back to the prefix, the keys
 * that share last's first j bytes and continue with a greater byte, one
 * range per such byte among those the first page's keys use (so numbered
 * keys split by their digits).  Ascending by construction.  Only a guess
 * at balance: the ranges cover every key after `last` whatever the keys
 * are.
 */
static size_t list_bounds(const tt_store_page *first, size_t plen, char **out, size_t max)
{
	const char *last = first->items[first->n - 1].key;
	bool used[256] = { false };
	size_t n = 0, len = strlen(last);
	for (size_t i = 0; i < first->n; i++)
		for (const unsigned char *p = (const unsigned char *)first->items[i].key + plen; *p; p++)
			used[*p] = true;
	for (size_t j = len; j-- > plen && n < max;) {
		for (unsigned c = (unsigned char)last[j] + 1; c < 256 && n < max; c++) {
			if (!used[c])
				continue;
			char *b = tt_asprintf("%.*s%c", (int)j, last, (char)c);
			if (!b)
				break;
			out[n++] = b;
		}
	}
	return n;
}

/* The rest of a listing after its first page (taken over), in key
 * ranges listed in parallel over the store's one HTTP client, fed to fn in
 * order. */
static int each_range(tt_store *s, const char *prefix, tt_store_page *first, page_fn fn,
		      void *ctx, tt_error *err)
{
	char *bounds[LIST_RANGES_MAX];
	size_t nb = list_bounds(first, strlen(prefix), bounds, LIST_RANGES_MAX - 1);
	list_feed f = { .ahead = LIST_AHEAD, .width = LIST_WIDTH_START, .widest = LIST_WIDTH_START,
			.doubling = true, .win_t0 = mono_ns(), .err = TT_ERROR_INIT };
	char *after0 = tt_strdup(first->items[first->n - 1].key);
	pthread_t feeder;
	bool threaded;
	int rc;

	f.rs = tt_calloc(nb + 1, sizeof *f.rs);
	f.nr = nb + 1;
	if (!f.rs || !after0) {
		for (size_t i = 0; i < nb; i++)
			free(bounds[i]);
		free(f.rs);
		free(after0);
		tt_store_page_release(first);
		return KOOM(err);
	}
	pthread_mutex_init(&f.mu, NULL);
	pthread_cond_init(&f.cv, NULL);
	for (size_t i = 0; i <= nb; i++) {
		f.rs[i] = (list_range){ .s = s, .prefix = prefix, .after = i ? bounds[i - 1] : after0,
					.upto = i < nb ? bounds[i] : NULL, .err = TT_ERROR_INIT,
					.feed = &f };
	}
	free(first->next);
	first->next = NULL;
	/* the ranges are listed while the first page is read; without a
	 * thread for them, they are listed first, all held */
	threaded = pthread_create(&feeder, NULL, feed_main, &f) == 0;
	if (!threaded) {
		f.ahead = SIZE_MAX;
		f.width = 1;
		feed_main(&f);
	}
	rc = fn(first, ctx, err);
	tt_store_page_release(first);
	if (rc == 0)
		rc = feed_read(&f, fn, ctx, err);
	pthread_mutex_lock(&f.mu);
	f.stop = true;
	pthread_cond_broadcast(&f.cv);
	pthread_mutex_unlock(&f.mu);
	if (threaded)
		pthread_join(feeder, NULL);
	atomic_store(&pace_widest, f.widest);
	atomic_store(&pace_widened, f.widened);
	atomic_store(&pace_backed_off, f.backed_off);
	for (size_t i = 0; i <= nb; i++) {
		for (size_t k = f.rs[i].taken; k < f.rs[i].npgs; k++) {
			held_sub(f.rs[i].pgs[k].n);
			tt_store_page_release(&f.rs[i].pgs[k]);
		}
		free(f.rs[i].pgs);
		tt_error_clear(&f.rs[i].err);
		free(f.rs[i].after);
	}
	free(f.rs[nb].upto);
	free(f.rs);
	tt_error_clear(&f.err);
	pthread_mutex_destroy(&f.mu);
	pthread_cond_destroy(&f.cv);
	return rc;
}

/*
 * Every page of prefix's LIST to fn, in key order.  Where the store lists
 * after a key and the first page is not the last, the rest goes by
 * each_range; the pages together hold the same keys one paged LIST gives.
 */
static int each_page(tt_store *s, const char *prefix, page_fn fn, void *ctx, tt_error *err)
{
	tt_store_page pg;
	int rc = tt_store_list(s, prefix, NULL, 0, &pg, err);
	if (rc == 0 && pg.next && pg.n && !pg.held && tt_store_lists_after(s))
		return each_range(s, prefix, &pg, fn, ctx, err);
	while (rc == 0) {
		char *token = pg.next;
		pg.next = NULL;
		rc = fn(&pg, ctx, err);
		tt_store_page_release(&pg);
		if (rc || !token) {
			free(token);
			break;
		}
		rc = tt_store_list(s, prefix, token, 0, &pg, err);
		free(token);
	}
	return rc;
}

/* ---- the rows -------------------------------------------------------------------------- */

typedef struct prefix_ent {
	char *key;
	char *etag;
	uint64_t size;
	size_t seq;  /* listing order: of two entries one path names, the later wins */
} prefix_ent;

static int prefix_ent_cmp(const void *a, const void *b)
{
	const prefix_ent *x = a, *y = b;
	int c = strcmp(x->key, y->key);
	return c ? c : (x->seq < y->seq ? -1 : x->seq > y->seq);
}

/* A reading of the listing: entries checked and counted, then either fed
 * to the digest in order (rows kept up to keep_max) or, where the names
 * are not in key order, every one gathered to be sorted. */
typedef struct prefix_scan {
	tt_store *s;
	const char *uri, *prefix;
	bool collect;       /* gather every entry (ents) */
	bool unsorted;      /* streaming met a name not after the one before */
	bool refused;       /* an entry was refused: the error names it */
	size_t n, no_etag;
	uint64_t total;
	int64_t newest;
	unsigned pages;
	char sample[256];   /* keys without an ETag */
	prefix_ent *ents;   /* collect */
	size_t ealloc;
	tt_file_digest *dg; /* stream */
	tt_buf last;
	size_t keep_max, ralloc, oalloc;
	tt_file_row *rows;
	size_t *offs;       /* each row's name in names */
	tt_buf names;
	bool dropped;       /* more than keep_max: no rows kept */
} prefix_scan;

/*
 * The name a listed key has in a listing, as the object-store libraries
 * parse it: one leading and one trailing '/' dropped (a "dir/" marker
 * object is the row "dir"), as a span of key; NULL when the key cannot be
 * such a name (an empty segment, "." or ".."): *why says which.
 */
static const char *listed_name(const char *key, size_t *len, const char **why)
{
	size_t n = strlen(key);
	const char *p = key;
	*why = NULL;
	if (n && *p == '/')
		p++, n--;
	if (n && p[n - 1] == '/')
		n--;
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && p[j] != '/')
			j++;
		if (j == i) {
			*why = "an empty path segment";
			return NULL;
		}
		if ((j - i == 1 && p[i] == '.') || (j - i == 2 && p[i] == '.' && p[i + 1] == '.')) {
			*why = "a '.' or '..' segment";
			return NULL;
		}
		i = j + 1;
	}
	*len = n;
	return p;
}

static void drop_rows(prefix_scan *sc)
{
	if (!sc->dropped)
		held_sub(sc->n < sc->keep_max ? sc->n : sc->keep_max);
	free(sc->rows);
	free(sc->offs);
	sc->rows = NULL;
	sc->offs = NULL;
	tt_buf_release(&sc->names);
	sc->dropped = true;
}

static void scan_release(prefix_scan *sc)
{
	for (size_t i = 0; i < sc->n && sc->ents; i++) {
		free(sc->ents[i].key);
		free(sc->ents[i].etag);
	}
	free(sc->ents);
	tt_file_digest_free(sc->dg);
	tt_buf_release(&sc->last);
	drop_rows(sc);
}

/* A row in name order: into the digest, and kept while there is room. */
static int stream_row(prefix_scan *sc, const char *name, size_t nl, tt_store_entry *it,
		      tt_error *err)
{
	tt_file_row *row;
	if (sc->n) {
		size_t m = nl < sc->last.len ? nl : sc->last.len;
		int c = memcmp(name, sc->last.ptr, m);
		if (c < 0 || (c == 0 && nl <= sc->last.len)) {
			sc->unsorted = true;
			return 1;
		}
	}
	sc->last.len = 0;
	if (tt_buf_put(&sc->last, name, nl) != 0)
		return KOOM(err);
	if (it->meta.etag) /* else refused once every entry is counted */
		tt_file_digest_add(sc->dg, name, nl, it->meta.etag);
	if (sc->n >= sc->keep_max) {
		if (!sc->dropped)
			drop_rows(sc);
		sc->n++;
		return 0;
	}
	if (TT_ARRAY_GROW(sc->rows, sc->ralloc, sc->n + 1) != 0 ||
	    TT_ARRAY_GROW(sc->offs, sc->oalloc, sc->n + 1) != 0)
		return KOOM(err);
	row = &sc->rows[sc->n];
	row->size = it->meta.size;
	snprintf(row->token, sizeof row->token, "%s", it->meta.etag ? it->meta.etag : "");
	sc->offs[sc->n] = sc->names.len;
	tt_buf_put(&sc->names, name, nl);
	tt_buf_putc(&sc->names, '\0');
	if (sc->names.failed)
		return KOOM(err);
	held_add(1);
	sc->n++;
	return 0;
}

/* An entry gathered to be sorted (its ETag taken out of the page). */
static int collect_row(prefix_scan *sc, const char *name, size_t nl, tt_store_entry *it,
		       tt_error *err)
{
	char *copy = tt_strndup(name, nl);
	if (!copy || TT_ARRAY_GROW(sc->ents, sc->ealloc, sc->n + 1) != 0) {
		free(copy);
		return KOOM(err);
	}
	sc->ents[sc->n] = (prefix_ent){ copy, it->meta.etag, it->meta.size, sc->n };
	it->meta.etag = NULL;
	sc->n++;
	return 0;
}

/* An entry's ETag: counted when missing, refused when too long. */
static int check_etag(prefix_scan *sc, const tt_store_entry *it, tt_error *err)
{
	if (!it->meta.etag || !*it->meta.etag) {
		if (sc->no_etag < 3) {
			size_t u = strlen(sc->sample);
			snprintf(sc->sample + u, sizeof sc->sample - u, "%s%s", u ? ", " : "", it->key);
		}
		sc->no_etag++;
	} else if (strlen(it->meta.etag) >= TT_FILE_TOKEN_MAX) {
		return KERR(err, TT_EBACKEND,
			    "%s: the object '%s' has an ETag longer than %d characters; "
			    "track it as a single object instead", sc->uri, it->key,
			    TT_FILE_TOKEN_MAX - 1);
	}
	return 0;
}

static int scan_page(tt_store_page *pg, void *ctx, tt_error *err)
{
	prefix_scan *sc = ctx;
	int rc = 0;
	sc->pages++;
	for (size_t i = 0; i < pg->n && rc == 0; i++) {
		tt_store_entry *it = &pg->items[i];
		const char *why, *name;
		size_t nl = 0;
		/* Azure listings leave out the blob named as the prefix itself
		 * (a "dir/" marker), as the object-store libraries do there */
		if (sc->s->kind == TT_STORE_AZURE && strcmp(it->key, sc->prefix) == 0)
			continue;
		if (!(name = listed_name(it->key, &nl, &why))) {
			sc->refused = true;
			return KERR(err, TT_EBACKEND,
				    "%s: the object '%s' has %s in its key, which no listing "
				    "can name; rename it in the bucket or track a narrower prefix",
				    sc->uri, it->key, why);
		}
		if ((rc = check_etag(sc, it, err)) != 0) {
			sc->refused = true;
			return rc;
		}
		sc->total += it->meta.size;
		if (it->meta.mtime_ns > sc->newest)
			sc->newest = it->meta.mtime_ns;
		rc = sc->collect ? collect_row(sc, name, nl, it, err) : stream_row(sc, name, nl, it, err);
	}
	return rc;
}

/* ---- one reading, and readings until two agree ------------------------------------ */

/* The streamed rows into tree: the digest fed as they came, the rows kept
 * (none past keep_max). */
static int finish_stream(prefix_scan *sc, tt_file_tree *tree, tt_error *err)
{
	tt_file_digest_end(sc->dg, tree->digest);
	tree->n = sc->n;
	tree->size = sc->total;
	if (sc->dropped)
		return 0;
	held_sub(sc->n);
	tree->rows = sc->rows ? sc->rows : calloc(1, sizeof *tree->rows);
	sc->rows = NULL;
	if (!tree->rows)
		return KOOM(err);
	if (sc->n) {
		tree->names = tt_buf_detach(&sc->names);
		for (size_t i = 0; i < sc->n; i++)
			tree->rows[i].path = tree->names + sc->offs[i];
	}
	free(sc->offs);
	sc->offs = NULL;
	sc->dropped = true;
	return 0;
}

/* The gathered entries sorted into tree, one row per name: the entry
 * listed last, as a dict keeps it. */
static int finish_collect(prefix_scan *sc, tt_file_tree *tree, tt_error *err)
{
	prefix_ent *ents = sc->ents;
	size_t m = 0, n = sc->n, *offs;
	tt_buf names = TT_BUF_INIT;
	if (n > 1)
		qsort(ents, n, sizeof *ents, prefix_ent_cmp);
	for (size_t i = 0; i < n; i++) {
		if (i + 1 < n && strcmp(ents[i].key, ents[i + 1].key) == 0) {
			free(ents[i].key);
			free(ents[i].etag);
			continue;
		}
		ents[m++] = ents[i];
	}
	sc->n = n = m;
	offs = calloc(n ? n : 1, sizeof *offs);
	tree->rows = calloc(n ? n : 1, sizeof *tree->rows);
	if (!offs || !tree->rows) {
		free(offs);
		return KOOM(err);
	}
	for (size_t i = 0; i < n; i++) {
		offs[i] = names.len;
		tt_buf_put(&names, ents[i].key, strlen(ents[i].key) + 1);
		tree->rows[i].size = ents[i].size;
		snprintf(tree->rows[i].token, sizeof tree->rows[i].token, "%s", ents[i].etag);
	}
	if (names.failed) {
		free(offs);
		tt_buf_release(&names);
		return KOOM(err);
	}
	tree->names = tt_buf_detach(&names);
	for (size_t i = 0; i < n; i++)
		tree->rows[i].path = tree->names + offs[i];
	free(offs);
	tree->n = n;
	tree->size = sc->total;
	tt_file_rows_digest(tree->rows, tree->n, tree->digest);
	return 0;
}

/*
 * One paged LIST of prefix into tree (rows by path, token the ETag), as
 * tether-vcs's obstore listing gives it; *pages and *newest (the latest
 * LastModified seen) say whether it may have raced a writer.
 */
static int list_prefix_once(tt_store *s, const char *uri, const char *prefix, size_t keep_max,
			    tt_file_tree *tree, unsigned *pages, int64_t *newest, tt_error *err)
{
	int rc = 0;
	memset(tree, 0, sizeof *tree);
	*pages = 0;
	*newest = 0;
	/* names out of key order: listed again, every row held to be sorted */
	for (int collect = 0; collect < 2; collect++) {
		prefix_scan sc = { .s = s, .uri = uri, .prefix = prefix, .collect = collect,
				   .keep_max = keep_max, .last = TT_BUF_INIT, .names = TT_BUF_INIT };
		if (!collect && !(sc.dg = tt_file_digest_new()))
			return KOOM(err);
		rc = each_page(s, prefix, scan_page, &sc, err);
		if (rc == 1 && sc.unsorted) {
			scan_release(&sc);
			continue;
		}
		if (rc && !sc.refused)
			tt_error_object(err, NULL, KIND);
		if (rc == 0 && sc.no_etag) /* a digest over names alone would call any rewrite "unchanged" */
			rc = KERR(err, TT_EBACKEND,
				  "%zu object(s) under %s report no ETag (%s%s); the store cannot be "
				  "fingerprinted by listing -- pin single objects with a versioned "
				  "policy instead", sc.no_etag, prefix[0] ? prefix : "/", sc.sample,
				  sc.no_etag > 3 ? ", ..." : "");
		if (rc == 0)
			rc = collect ? finish_collect(&sc, tree, err) : finish_stream(&sc, tree, err);
		*pages = sc.pages;
		*newest = sc.newest;
		scan_release(&sc);
		break;
	}
	if (rc)
		tt_file_tree_release(tree);
	return rc;
}

static int64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * A prefix's listing, never a mix of two states as far as the store lets
 * us see: a listing of one page is one answer from the store; one of
 * several pages during which an object under the prefix changed (an entry
 * modified since shortly before the first page) is read again until two
 * readings agree.  A prefix that keeps changing is refused, naming it.
 */
int tt_file_prefix_list(tt_store *s, const char *uri, const char *prefix, size_t keep_max,
			tt_file_tree *tree, tt_error *err)
{
	tt_file_tree prev;
	bool have_prev = false;
	int rc = 0;

	memset(&prev, 0, sizeof prev);
	for (int attempt = 0; attempt < PREFIX_LIST_TRIES + 1; attempt++) {
		unsigned pages;
		int64_t newest, started = wall_ns();
		if ((rc = list_prefix_once(s, uri, prefix, keep_max, tree, &pages, &newest, err)) != 0)
			break;
		if (have_prev && strcmp(prev.digest, tree->digest) == 0)
			break; /* two readings agree */
		if (!have_prev && (pages <= 1 || newest < started - PREFIX_RECENT_NS))
			break; /* one answer, or nothing changed while we read */
		tt_file_tree_release(&prev);
		prev = *tree;
		have_prev = true;
		memset(tree, 0, sizeof *tree);
		if (attempt == PREFIX_LIST_TRIES) {
			rc = KERR(err, TT_EBACKEND,
				  "%s changed while it was being listed, %d times in a row; retry "
				  "when its writers are done (or track a narrower prefix)",
				  uri, PREFIX_LIST_TRIES + 1);
			break;
		}
	}
	tt_file_tree_release(&prev);
	return rc;
}
