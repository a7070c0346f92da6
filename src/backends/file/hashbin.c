/*
 * backends/file/hashbin.c - see hashbin.h.
 */
#define _GNU_SOURCE
#include "backends/file/hashbin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util/mem.h"

#define MAGIC "TTHCBIN"
#define VERSION 1u
#define BYTE_ORDER_MARK UINT32_C(0x01020304)
#define EDGE ((size_t)4096)
#define BLOCK ((size_t)1 << 20)

typedef struct brec {
	uint32_t koff, klen;    /* into the keys area: the key past the prefix */
	int64_t size, mtime_ns, ctime_ns, ino, hashed_at;
	uint8_t sha[32];
} brec;

typedef struct bhead {
	char magic[8];
	uint32_t order, version, rec_size, head_size;
	uint64_t n, prefix_len, keys_len, file_size;
	tt_hcbin_key key;
	uint64_t checksum;      /* zero while it is computed */
	uint8_t spare[128 - 8 - 16 - 32 - sizeof(tt_hcbin_key) - 8];
} bhead;

_Static_assert(sizeof(bhead) == 128, "the header is 128 bytes");
_Static_assert(sizeof(brec) == 80, "a record is 80 bytes");

struct tt_hcbin {
	void *map;
	size_t map_len;
	const brec *recs;
	size_t n;
	const char *prefix, *keys;
	size_t prefix_len, keys_len;
};

/* --- checksum ------------------------------------------------------------------------ */

static inline uint64_t mix(uint64_t h)
{
	h ^= h >> 33;
	h *= UINT64_C(0xff51afd7ed558ccd);
	h ^= h >> 33;
	h *= UINT64_C(0xc4ceb9fe1a85ec53);
	return h ^ (h >> 33);
}

/* A 64-bit hash of p[0..n): four lanes of 8 bytes, so it runs at memory
 * speed.  Not cryptographic: it finds torn and damaged files. */
static uint64_t hash_block(const unsigned char *p, size_t n, uint64_t seed)
{
	uint64_t a = seed ^ UINT64_C(0x9e3779b97f4a7c15), b = seed + n, c = ~seed, d = seed * 31 + 7;
	const uint64_t m = UINT64_C(0x94d049bb133111eb);
	uint64_t w[4];
	size_t i = 0;

	for (; i + 32 <= n; i += 32) {
		memcpy(w, p + i, 32);
		a = (a ^ w[0]) * m;
		b = (b ^ w[1]) * m;
		c = (c ^ w[2]) * m;
		d = (d ^ w[3]) * m;
		a ^= a >> 29;
		b ^= b >> 29;
		c ^= c >> 29;
		d ^= d >> 29;
	}
	for (; i < n; i++)
		a = (a ^ p[i]) * m;
	return mix(a ^ mix(b) ^ mix(c + 1) ^ mix(d + 2) ^ n);
}

/* The running checksum of a file: its 1 MiB blocks' hashes chained. */
static uint64_t chain(uint64_t sum, const unsigned char *p, size_t n)
{
	return mix(sum ^ hash_block(p, n, sum));
}

static uint64_t checksum_of(const unsigned char *file, size_t len)
{
	bhead h;
	uint64_t sum = 0;
	memcpy(&h, file, sizeof h);
	h.checksum = 0;
	sum = chain(sum, (const unsigned char *)&h, sizeof h);
	for (size_t off = sizeof h; off < len; off += BLOCK)
		sum = chain(sum, file + off, len - off < BLOCK ? len - off : BLOCK);
	return sum;
}

/* --- the key ------------------------------------------------------------------------- */

int tt_hcbin_key_of_fd(int fd, tt_hcbin_key *out)
{
	struct stat st;
	unsigned char buf[2 * EDGE];
	size_t head, tail = 0;
	ssize_t got;

	memset(out, 0, sizeof *out);
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))
		return -1;
	out->dev = (uint64_t)st.st_dev;
	out->ino = (uint64_t)st.st_ino;
	out->size = (uint64_t)st.st_size;
	out->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
	out->ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
	head = out->size < EDGE ? (size_t)out->size : EDGE;
	if ((got = pread(fd, buf, head, 0)) < 0 || (size_t)got != head)
		return -1;
	if (out->size > EDGE) {
		tail = out->size - EDGE < EDGE ? (size_t)(out->size - EDGE) : EDGE;
		got = pread(fd, buf + head, tail, (off_t)(out->size - tail));
		if (got < 0 || (size_t)got != tail)
			return -1;
	}
	out->edges = hash_block(buf, head + tail, out->size);
	return 0;
}

uint64_t tt_hcbin_edges(const char *text, size_t len)
{
	unsigned char buf[2 * EDGE];
	size_t head = len < EDGE ? len : EDGE, tail = 0;
	memcpy(buf, text, head);
	if (len > EDGE) {
		tail = len - EDGE < EDGE ? len - EDGE : EDGE;
		memcpy(buf + head, text + len - tail, tail);
	}
	return hash_block(buf, head + tail, len);
}

char *tt_hcbin_path(const char *json_path)
{
	size_t n = strlen(json_path);
	if (n > 5 && strcmp(json_path + n - 5, ".json") == 0)
		return tt_asprintf("%.*s.bin", (int)(n - 5), json_path);
	return tt_asprintf("%s.bin", json_path);
}

static bool key_equal(const tt_hcbin_key *a, const tt_hcbin_key *b)
{
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns && a->edges == b->edges;
}

/* --- reading ------------------------------------------------------------------------- */

tt_hcbin *tt_hcbin_open(const char *path, const tt_hcbin_key *key)
{
	struct stat st;
	tt_hcbin *b = NULL;
	void *map = MAP_FAILED;
	bhead h;
	size_t len, recs_len;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size < sizeof h ||
	    (uint64_t)st.st_size > SIZE_MAX)
		goto bad;
	len = (size_t)st.st_size;
	/* The header first, from the file: a stale one is not worth mapping. */
	if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
		goto bad;
	if (memcmp(h.magic, MAGIC, sizeof h.magic) != 0 || h.order != BYTE_ORDER_MARK ||
	    h.version != VERSION || h.rec_size != sizeof(brec) || h.head_size != sizeof h ||
	    h.file_size != (uint64_t)len || !key_equal(&h.key, key))
		goto bad;
	if (h.n > (len - sizeof h) / sizeof(brec))
		goto bad;
	recs_len = (size_t)h.n * sizeof(brec);
	if (h.prefix_len > len - sizeof h - recs_len ||
	    h.keys_len != len - sizeof h - recs_len - h.prefix_len || h.keys_len > UINT32_MAX)
		goto bad;
	map = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	if (map == MAP_FAILED)
		goto bad;
	if (checksum_of(map, len) != h.checksum)
		goto bad;
	if (!(b = tt_calloc(1, sizeof *b)))
		goto bad;
	b->map = map;
	b->map_len = len;
	b->recs = (const brec *)((const char *)map + sizeof h);
	b->n = (size_t)h.n;
	b->prefix = (const char *)map + sizeof h + recs_len;
	b->prefix_len = (size_t)h.prefix_len;
	b->keys = b->prefix + b->prefix_len;
	b->keys_len = (size_t)h.keys_len;
	for (size_t i = 0; i < b->n; i++)
		if (b->recs[i].koff > b->keys_len || b->recs[i].klen > b->keys_len - b->recs[i].koff) {
			free(b);
			b = NULL;
			goto bad;
		}
	close(fd);
	return b;
bad:
	if (map != MAP_FAILED)
		munmap(map, len);
	close(fd);
	return NULL;
}

void tt_hcbin_close(tt_hcbin *b)
{
	if (!b)
		return;
	munmap(b->map, b->map_len);
	free(b);
}

size_t tt_hcbin_count(const tt_hcbin *b)
{
	return b->n;
}

/* Order of key s (n bytes, past the prefix) against record i. */
static int cmp_rec(const tt_hcbin *b, const char *s, size_t n, size_t i)
{
	const brec *r = &b->recs[i];
	size_t m = n < r->klen ? n : r->klen;
	int c = m ? memcmp(s, b->keys + r->koff, m) : 0;
	if (c)
		return c;
	return n < r->klen ? -1 : n > r->klen;
}

/* The index of s in [lo, hi), or SIZE_MAX. */
static size_t search(const tt_hcbin *b, const char *s, size_t n, size_t lo, size_t hi)
{
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = cmp_rec(b, s, n, mid);
		if (!c)
			return mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return SIZE_MAX;
}

bool tt_hcbin_get(const tt_hcbin *b, const char *key, size_t len, size_t *hint, tt_hc_entry *out)
{
	size_t at = SIZE_MAX, h = hint ? *hint : 0;
	const char *s;
	size_t n;
	const brec *r;

	if (!b->n || len < b->prefix_len || memcmp(key, b->prefix, b->prefix_len) != 0)
		return false;
	s = key + b->prefix_len;
	n = len - b->prefix_len;
	if (h < b->n) {
		int c = cmp_rec(b, s, n, h);
		if (!c)
			at = h;
		else if (c > 0)
			at = search(b, s, n, h + 1, b->n);
		else if (h > 0 && cmp_rec(b, s, n, h - 1) <= 0)
			at = search(b, s, n, 0, h);
		/* else: between records h - 1 and h, so not there */
	} else {
		at = search(b, s, n, 0, b->n);
	}
	if (at == SIZE_MAX)
		return false;
	if (hint)
		*hint = at + 1;
	r = &b->recs[at];
	memset(out, 0, sizeof *out);
	out->size = r->size;
	out->mtime_ns = r->mtime_ns;
	out->ctime_ns = r->ctime_ns;
	out->ino = r->ino;
	out->hashed_at = r->hashed_at;
	memcpy(out->sha, r->sha, sizeof out->sha);
	out->decoded = true;
	return true;
}

/* --- writing ------------------------------------------------------------------------- */

typedef struct item {
	const char *key;
	size_t len;
	const tt_hc_entry *e;
} item;

static int cmp_key(const char *a, size_t an, const char *b, size_t bn)
{
	size_t m = an < bn ? an : bn;
	int c = m ? memcmp(a, b, m) : 0;
	if (c)
		return c;
	return an < bn ? -1 : an > bn;
}

static int by_key(const void *pa, const void *pb)
{
	const item *a = pa, *b = pb;
	return cmp_key(a->key, a->len, b->key, b->len);
}

/* A file written through one block: what it has written is checksummed. */
typedef struct out {
	int fd;
	unsigned char *block;
	size_t used;
	uint64_t sum;
	bool failed;
} out;

static void flush(out *o)
{
	const unsigned char *p = o->block;
	size_t n = o->used;
	if (o->failed || !n)
		return;
	o->sum = chain(o->sum, p, n);
	while (n) {
		ssize_t w = write(o->fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			o->failed = true;
			return;
		}
		p += w;
		n -= (size_t)w;
	}
	o->used = 0;
}

static void put(out *o, const void *data, size_t n)
{
	const unsigned char *p = data;
	while (n && !o->failed) {
		size_t room = BLOCK - o->used, k = n < room ? n : room;
		memcpy(o->block + o->used, p, k);
		o->used += k;
		p += k;
		n -= k;
		if (o->used == BLOCK)
			flush(o);
	}
}

int tt_hcbin_write(const char *path, const tt_hcache *c, const tt_hcbin_key *key)
{
	size_t total = tt_hcache_count(c), n = 0, plen = 0, keys_len = 0;
	item *items = total ? tt_reallocarray(NULL, total, sizeof *items) : NULL;
	char *tmp = NULL;
	bool sorted = true;
	out o = { -1, NULL, 0, 0, false };
	bhead h;
	int rc = -1;

	if (total && !items)
		return -1;
	for (size_t i = 0; i < total; i++) {
		item *it = &items[n];
		if (!tt_hcache_at(c, i, &it->key, &it->len, &it->e))
			continue;
		if (n && sorted && cmp_key(items[n - 1].key, items[n - 1].len, it->key, it->len) >= 0)
			sorted = false;
		n++;
	}
	if (!sorted) /* a dump we wrote ourselves usually is; tether-vcs's need not be */
		qsort(items, n, sizeof *items, by_key);
	if (n) {
		/* The common prefix of the first and last keys is every key's. */
		const item *a = &items[0], *z = &items[n - 1];
		while (plen < a->len && plen < z->len && a->key[plen] == z->key[plen])
			plen++;
	}
	for (size_t i = 0; i < n; i++)
		keys_len += items[i].len - plen;
	if (keys_len > UINT32_MAX)
		goto done;

	memset(&h, 0, sizeof h);
	memcpy(h.magic, MAGIC, sizeof h.magic);
	h.order = BYTE_ORDER_MARK;
	h.version = VERSION;
	h.rec_size = sizeof(brec);
	h.head_size = sizeof h;
	h.n = n;
	h.prefix_len = plen;
	h.keys_len = keys_len;
	h.file_size = sizeof h + n * sizeof(brec) + plen + keys_len;
	h.key = *key;

	if (!(tmp = tt_asprintf("%s.tmp.%ld", path, (long)getpid())) ||
	    !(o.block = tt_malloc(BLOCK)))
		goto done;
	if ((o.fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666)) < 0)
		goto done;
	/* The header's place first (zero checksum), the rest through the block;
	 * the header is then written again with the sum of it all. */
	o.sum = chain(0, (const unsigned char *)&h, sizeof h);
	if (write(o.fd, &h, sizeof h) != (ssize_t)sizeof h)
		goto done;
	for (size_t i = 0, koff = 0; i < n; i++) {
		brec r;
		const tt_hc_entry *e = items[i].e;
		memset(&r, 0, sizeof r);
		r.koff = (uint32_t)koff;
		r.klen = (uint32_t)(items[i].len - plen);
		r.size = e->size;
		r.mtime_ns = e->mtime_ns;
		r.ctime_ns = e->ctime_ns;
		r.ino = e->ino;
		r.hashed_at = e->hashed_at;
		memcpy(r.sha, e->sha, sizeof r.sha);
		put(&o, &r, sizeof r);
		koff += r.klen;
	}
	if (n)
		put(&o, items[0].key, plen);
	for (size_t i = 0; i < n; i++)
		put(&o, items[i].key + plen, items[i].len - plen);
	flush(&o);
	if (o.failed)
		goto done;
	h.checksum = o.sum;
	if (pwrite(o.fd, &h, sizeof h, 0) != (ssize_t)sizeof h)
		goto done;
	if (close(o.fd) != 0) {
		o.fd = -1;
		goto done;
	}
	o.fd = -1;
	if (rename(tmp, path) != 0)
		goto done;
	rc = 0;
done:
	if (o.fd >= 0)
		close(o.fd);
	if (rc && tmp)
		unlink(tmp);
	free(tmp);
	free(o.block);
	free(items);
	return rc;
}
