/* formats/snappy.c - raw Snappy decompression (see snappy.h). */
#include "formats/snappy.h"

#include <stdint.h>
#include <string.h>

/* The preamble: a little-endian base-128 varint of at most 32 bits. */
static bool preamble(const unsigned char **p, const unsigned char *end, size_t *len)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 35; shift += 7) {
		if (*p >= end)
			return false;
		unsigned char b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			if (v > UINT32_MAX)
				return false;
			*len = (size_t)v;
			return true;
		}
	}
	return false;
}

bool tt_snappy_length(const unsigned char *in, size_t n, size_t *len)
{
	const unsigned char *p = in;
	return preamble(&p, in + n, len);
}

/* A little-endian integer of k bytes (1..4). */
static uint32_t le(const unsigned char *p, int k)
{
	uint32_t v = 0;
	for (int i = 0; i < k; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

bool tt_snappy_uncompress(const unsigned char *in, size_t n, unsigned char *out, size_t cap)
{
	const unsigned char *p = in, *end = in + n;
	size_t want, o = 0;

	if (!preamble(&p, end, &want) || want != cap)
		return false;
	while (p < end) {
		unsigned char tag = *p++;
		size_t len, off;
		switch (tag & 3) {
		case 0: /* a literal: its length - 1 in the tag, or in 1..4 bytes after it */
			len = tag >> 2;
			if (len >= 60) {
				int k = (int)len - 59;
				if (end - p < k)
					return false;
				len = le(p, k);
				p += k;
			}
			len += 1;
			if ((size_t)(end - p) < len || cap - o < len)
				return false;
			memcpy(out + o, p, len);
			p += len;
			o += len;
			continue;
		case 1: /* a copy: length 4..11, an 11-bit offset */
			if (p >= end)
				return false;
			len = ((tag >> 2) & 7) + 4;
			off = (size_t)(tag >> 5) << 8 | *p++;
			break;
		case 2: /* a copy: length 1..64, a 16-bit offset */
			if (end - p < 2)
				return false;
			len = (size_t)(tag >> 2) + 1;
			off = le(p, 2);
			p += 2;
			break;
		default: /* a copy: length 1..64, a 32-bit offset */
			if (end - p < 4)
				return false;
			len = (size_t)(tag >> 2) + 1;
			off = le(p, 4);
			p += 4;
			break;
		}
		if (off == 0 || off > o || cap - o < len)
			return false;
		/* The source may overlap what is being written (a repeat). */
		if (off >= len) {
			memcpy(out + o, out + o - off, len);
		} else {
			for (size_t i = 0; i < len; i++)
				out[o + i] = out[o - off + i];
		}
		o += len;
	}
	return o == cap;
}
