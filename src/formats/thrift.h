/*
 * formats/thrift.h - the Thrift compact protocol, read by hand.
 *
 * Parquet's footer and page headers are Thrift structs in the compact
 * encoding.  A reader walks one struct at a time: field headers give a
 * field's id and type, and a caller decodes the fields it knows and skips
 * the rest.  Nothing here allocates; binaries point into the input.  Any
 * read past the end or malformed header sets `bad` and yields zeros, so a
 * caller checks `bad` once after a walk.
 */
#ifndef TT_FORMATS_THRIFT_H
#define TT_FORMATS_THRIFT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Compact-protocol type codes as they appear in field and list headers. */
enum {
	TT_CT_STOP = 0, TT_CT_TRUE = 1, TT_CT_FALSE = 2, TT_CT_BYTE = 3, TT_CT_I16 = 4,
	TT_CT_I32 = 5, TT_CT_I64 = 6, TT_CT_DOUBLE = 7, TT_CT_BINARY = 8, TT_CT_LIST = 9,
	TT_CT_SET = 10, TT_CT_MAP = 11, TT_CT_STRUCT = 12
};

typedef struct tt_thrift {
	const unsigned char *p, *end;
	bool bad;
} tt_thrift;

/* An unsigned varint (ULEB128, at most 64 bits). */
uint64_t tt_thrift_varint(tt_thrift *r);
/* A zigzag varint: i16, i32 and i64 fields. */
int64_t tt_thrift_zigzag(tt_thrift *r);
/* A zigzag varint that must fit an i32 (bad otherwise). */
int32_t tt_thrift_i32(tt_thrift *r);
/* A binary's bytes, not copied (NULL and bad when cut). */
const unsigned char *tt_thrift_binary(tt_thrift *r, size_t *n);
/* A list or set header: its element type and count (every element takes at
 * least a byte, so a count beyond the input is bad). */
uint64_t tt_thrift_list(tt_thrift *r, int *etype);
/* The next field of a struct: its type (TT_CT_STOP at the end) and id;
 * *last carries the previous id (start it at 0 for each struct). */
int tt_thrift_field(tt_thrift *r, int16_t *last, int16_t *id);
/* Skip a value of type (a field's bool, carried in its header, is nothing). */
void tt_thrift_skip(tt_thrift *r, int type);
/* Skip one element of a list or set of etype (bools there take a byte). */
void tt_thrift_skip_elem(tt_thrift *r, int etype);
/* Skip the rest of a struct, up to and including its stop byte. */
void tt_thrift_skip_struct(tt_thrift *r);

#endif
