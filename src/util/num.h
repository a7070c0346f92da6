/* util/num.h - numbers: formatting shared by the JSON and TOML writers, and
 * little-endian integers read from the files of other systems. */
#ifndef TT_UTIL_NUM_H
#define TT_UTIL_NUM_H

#include <stddef.h>
#include <stdint.h>

/*
 * Format a finite double exactly as Python's repr() does: the shortest
 * digits that round-trip, fixed notation when the decimal exponent is in
 * (-4, 16], otherwise "1e+16" / "1e-05" style; always a ".0" on integral
 * values.  out must hold TT_DOUBLE_REPR_MAX bytes.  Returns the length, or
 * 0 for inf/nan (the caller spells those per format).
 */
#define TT_DOUBLE_REPR_MAX 40
size_t tt_double_repr(char *out, double v);

/* The little-endian 32-bit integer at p (Parquet, Icechunk, Snappy). */
static inline uint32_t tt_le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
