/*
 * backends/file/hashcache.h - the table behind .tether/cache/file-hashes.json.
 *
 * The file is one JSON object, written by tether-vcs and by us alike:
 *     {"<absolute path>":[size,mtime_ns,ctime_ns,inode,"<sha256 hex>",hashed_at_ns],...}
 * A dataset of a million files makes it a couple of hundred megabytes, and a
 * cached refresh does nothing but read it and look every file up, so this is
 * a dedicated reader and table rather than a general JSON tree:
 *   - entries of exactly that shape (integers, 64 lower-case hex digits) are
 *     decoded into fixed records; keys point into the file's own text when
 *     they hold no escapes;
 *   - any other value is kept as its JSON text and written back as it was
 *     read (never a hit);
 *   - the order of keys is kept (a Python dict's: a key set again keeps its
 *     place, the last value wins), so what we write is what json.dumps of the
 *     same table would write.
 * Text that is not a JSON object is an empty cache, as tether-vcs reads it.
 * Not thread-safe: the caller locks.
 */
#ifndef TT_BACKENDS_HASHCACHE_H
#define TT_BACKENDS_HASHCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

typedef struct tt_hcache tt_hcache;

/* One decoded entry.  hashed_at is INT64_MIN for a value kept as text. */
typedef struct tt_hc_entry {
	int64_t size, mtime_ns, ctime_ns, ino, hashed_at;
	unsigned char sha[32];
	bool decoded;           /* false: a value of another shape, kept as text */
} tt_hc_entry;

tt_hcache *tt_hcache_new(void);
void tt_hcache_free(tt_hcache *c);

/*
 * Replace the table with the one in text[0..len).  The cache takes
 * ownership of text (a tt_malloc'd block; it is freed with the cache).
 * Returns 0; 1 when the text is not a JSON object (the table is then
 * empty); -1 when out of memory.
 */
int tt_hcache_load(tt_hcache *c, char *text, size_t len);

size_t tt_hcache_count(const tt_hcache *c);

/* A hint that key will be looked up soon: its slot is fetched into the
 * CPU cache meanwhile. */
void tt_hcache_prefetch(const tt_hcache *c, const char *key, size_t len);

/* The entry for key (len bytes), or NULL. */
const tt_hc_entry *tt_hcache_get(const tt_hcache *c, const char *key, size_t len);

/* Set key's entry (decoded), keeping the key's place when it is there.
 * Returns 0 or -1 when out of memory. */
int tt_hcache_put(tt_hcache *c, const char *key, size_t len, const tt_hc_entry *e);

/* Take every entry of src that dst lacks or holds with an older hashed_at.
 * Returns 0 or -1 when out of memory. */
int tt_hcache_merge(tt_hcache *dst, const tt_hcache *src);

/* The table as json.dumps(table, separators=(",", ":")) writes it
 * (ASCII escapes, insertion order).  Returns 0 or the buffer's failure. */
int tt_hcache_dump(const tt_hcache *c, tt_buf *out);

/* Record i (0 <= i < count) in insertion order: true with its key and entry
 * when it is a decoded entry a path can look up, false otherwise. */
bool tt_hcache_at(const tt_hcache *c, size_t i, const char **key, size_t *len,
		  const tt_hc_entry **e);

/* The lower-case hex of a decoded entry's sha (65 bytes with the NUL). */
void tt_hc_entry_hex(const tt_hc_entry *e, char hex[65]);

#endif
