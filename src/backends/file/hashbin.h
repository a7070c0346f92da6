/*
 * backends/file/hashbin.h - a binary, mmap-able copy of the hash cache's table
 * (.tether/cache/file-hashes.bin beside file-hashes.json).
 *
 * The JSON file stays the cache both implementations read and write; this
 * file only saves parsing it.  It holds the decoded entries of one exact
 * JSON file (the last value of each key, as json.loads keeps it; values of
 * another shape never hit, so they are left out), sorted by key, and is
 * keyed by that JSON file's identity: device, inode, size, mtime, ctime and
 * a digest of its first and last 4 KiB.  A binary file whose key is not the
 * JSON file's present one is stale and is never read; one whose magic,
 * version, length or checksum is wrong is corrupt and is never read.  The
 * caller then parses the JSON and writes a new binary file.
 *
 * Layout (native byte order; the magic says which):
 *     header   (HEADER_SIZE bytes: magic, version, counts, key, checksum)
 *     records  n x { key offset u32, key length u32, size, mtime_ns,
 *                    ctime_ns, ino, hashed_at i64, sha256 [32] }
 *     prefix   the bytes every key starts with (stored once)
 *     keys     each key's remaining bytes, in record order
 * The checksum is a 64-bit hash of the whole file with its own field zero.
 */
#ifndef TT_BACKENDS_HASHBIN_H
#define TT_BACKENDS_HASHBIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "backends/file/hashcache.h"

/* The identity of the JSON file a binary file was made from. */
typedef struct tt_hcbin_key {
	uint64_t dev, ino, size;
	int64_t mtime_ns, ctime_ns;
	uint64_t edges;         /* hash of the first and last 4 KiB */
} tt_hcbin_key;

typedef struct tt_hcbin tt_hcbin;

/* The key of the JSON file open on fd.  Returns 0, or -1 when it cannot be
 * read (then there is nothing to key a binary file by). */
int tt_hcbin_key_of_fd(int fd, tt_hcbin_key *out);

/* The edges digest tt_hcbin_key_of_fd gives a file holding text[0..len). */
uint64_t tt_hcbin_edges(const char *text, size_t len);

/* The binary path beside a JSON cache path ("x.json" -> "x.bin", anything
 * else + ".bin"), malloc'd, or NULL when out of memory. */
char *tt_hcbin_path(const char *json_path);

/* Map path when it is a well-formed binary file made from the JSON file
 * whose key is key; NULL otherwise (missing, stale, corrupt, truncated). */
tt_hcbin *tt_hcbin_open(const char *path, const tt_hcbin_key *key);
void tt_hcbin_close(tt_hcbin *b);
size_t tt_hcbin_count(const tt_hcbin *b);

/*
 * The entry for key (len bytes) into *out; false when there is none.
 * *hint (may be NULL) is a record index carried between calls: lookups in
 * key order find their record next to the previous one without searching.
 */
bool tt_hcbin_get(const tt_hcbin *b, const char *key, size_t len, size_t *hint, tt_hc_entry *out);

/* Write the decoded entries of c as path (atomically: a temporary file
 * renamed over it), keyed by key.  Returns 0 or -1 (nothing is replaced). */
int tt_hcbin_write(const char *path, const tt_hcache *c, const tt_hcbin_key *key);

#endif
