/*
 * formats/protobuf.h - the protobuf wire format, walked by hand.
 *
 * A reader yields one field at a time (number, wire type, and either the
 * integer value or the byte span of a length-delimited field), so a caller
 * can decode what it knows and copy everything else byte for byte.  The
 * writer appends tags, varints and length-delimited fields to a tt_buf.
 * Nothing here allocates; every span points into the input.
 */
#ifndef TT_FORMATS_PROTOBUF_H
#define TT_FORMATS_PROTOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/buf.h"

enum { TT_PB_VARINT = 0, TT_PB_I64 = 1, TT_PB_LEN = 2, TT_PB_I32 = 5 };

typedef struct tt_pb_reader {
	const uint8_t *p, *end;
} tt_pb_reader;

typedef struct tt_pb_field {
	uint32_t number;
	int wire;               /* TT_PB_* */
	uint64_t value;         /* VARINT, I64, I32 */
	const uint8_t *data;    /* LEN: the payload */
	size_t len;
	const uint8_t *start;   /* the whole field, tag included */
	size_t size;
} tt_pb_field;

void tt_pb_reader_init(tt_pb_reader *r, const void *data, size_t len);
/* 1: *f filled; 0: end of input; -1: malformed (truncated varint or span,
 * field number 0, group or unknown wire type). */
int tt_pb_next(tt_pb_reader *r, tt_pb_field *f);
/* Decode a varint at *p (advanced); false when truncated or over 10 bytes. */
bool tt_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *out);
/* An int32 field's value: negative numbers arrive sign-extended to 64 bits. */
static inline int32_t tt_pb_int32(uint64_t v) { return (int32_t)(uint32_t)v; }

int tt_pb_put_varint(tt_buf *b, uint64_t v);
int tt_pb_put_tag(tt_buf *b, uint32_t number, int wire);
int tt_pb_put_uint(tt_buf *b, uint32_t number, uint64_t v);
int tt_pb_put_bytes(tt_buf *b, uint32_t number, const void *data, size_t len);

#endif
