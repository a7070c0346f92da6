/*
 * formats/snappy.h - the raw Snappy block format, decompressed.
 *
 * Parquet pages compressed with SNAPPY hold one raw block (no framing): a
 * varint of the uncompressed length, then literals and back-references.
 * Only decompression is needed.  Input is untrusted: every length and
 * offset is checked, and the output never grows past what the preamble
 * said.
 */
#ifndef TT_FORMATS_SNAPPY_H
#define TT_FORMATS_SNAPPY_H

#include <stdbool.h>
#include <stddef.h>

/* The uncompressed length a block's preamble gives (false: no preamble). */
bool tt_snappy_length(const unsigned char *in, size_t n, size_t *len);

/* Decompress a block into out, which holds exactly the preamble's length
 * (cap).  False when the block is malformed or does not fill out exactly. */
bool tt_snappy_uncompress(const unsigned char *in, size_t n, unsigned char *out, size_t cap);

#endif
