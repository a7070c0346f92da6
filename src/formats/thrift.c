/* formats/thrift.c - the Thrift compact protocol reader (see thrift.h). */
#include "formats/thrift.h"

/* Deeper nesting than any Parquet struct has is taken as hostile. */
#define MAX_DEPTH 32

uint64_t tt_thrift_varint(tt_thrift *r)
{
	uint64_t v = 0;
	for (int shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end) {
			r->bad = true;
			return 0;
		}
		unsigned char b = *r->p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

int64_t tt_thrift_zigzag(tt_thrift *r)
{
	uint64_t v = tt_thrift_varint(r);
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

int32_t tt_thrift_i32(tt_thrift *r)
{
	int64_t v = tt_thrift_zigzag(r);
	if (v < INT32_MIN || v > INT32_MAX) {
		r->bad = true;
		return 0;
	}
	return (int32_t)v;
}

const unsigned char *tt_thrift_binary(tt_thrift *r, size_t *n)
{
	uint64_t len = tt_thrift_varint(r);
	if (r->bad || len > (uint64_t)(r->end - r->p)) {
		r->bad = true;
		*n = 0;
		return NULL;
	}
	const unsigned char *s = r->p;
	r->p += len;
	*n = (size_t)len;
	return s;
}

uint64_t tt_thrift_list(tt_thrift *r, int *etype)
{
	if (r->p >= r->end) {
		r->bad = true;
		*etype = TT_CT_STOP;
		return 0;
	}
	unsigned char h = *r->p++;
	*etype = h & 0x0f;
	uint64_t n = h >> 4;
	if (n == 15)
		n = tt_thrift_varint(r);
	/* Every element takes at least one byte (bools in lists do too). */
	if (n > (uint64_t)(r->end - r->p))
		r->bad = true;
	return r->bad ? 0 : n;
}

int tt_thrift_field(tt_thrift *r, int16_t *last, int16_t *id)
{
	if (r->p >= r->end) {
		r->bad = true;
		return TT_CT_STOP;
	}
	unsigned char h = *r->p++;
	int type = h & 0x0f;
	if (type == TT_CT_STOP)
		return TT_CT_STOP;
	int delta = h >> 4;
	*id = delta ? (int16_t)(*last + delta) : (int16_t)tt_thrift_zigzag(r);
	*last = *id;
	return type;
}

static void skip(tt_thrift *r, int type, int depth);

static void skip_struct(tt_thrift *r, int depth)
{
	int16_t last = 0, id = 0;
	if (depth > MAX_DEPTH) {
		r->bad = true;
		return;
	}
	for (;;) {
		int t = tt_thrift_field(r, &last, &id);
		if (r->bad || t == TT_CT_STOP)
			return;
		skip(r, t, depth + 1);
		if (r->bad)
			return;
	}
}

/* An element of a list or map: bools there take a byte each. */
static int element_type(int t)
{
	return t == TT_CT_TRUE || t == TT_CT_FALSE ? TT_CT_BYTE : t;
}

static void skip(tt_thrift *r, int type, int depth)
{
	size_t n;
	if (depth > MAX_DEPTH) {
		r->bad = true;
		return;
	}
	switch (type) {
	case TT_CT_TRUE:
	case TT_CT_FALSE:
		return; /* a field's bool lives in its header */
	case TT_CT_BYTE:
		if (r->p >= r->end)
			r->bad = true;
		else
			r->p++;
		return;
	case TT_CT_I16:
	case TT_CT_I32:
	case TT_CT_I64:
		(void)tt_thrift_varint(r);
		return;
	case TT_CT_DOUBLE:
		if (r->end - r->p < 8)
			r->bad = true;
		else
			r->p += 8;
		return;
	case TT_CT_BINARY:
		(void)tt_thrift_binary(r, &n);
		return;
	case TT_CT_LIST:
	case TT_CT_SET: {
		int et;
		uint64_t count = tt_thrift_list(r, &et);
		for (uint64_t i = 0; i < count && !r->bad; i++)
			skip(r, element_type(et), depth + 1);
		return;
	}
	case TT_CT_MAP: {
		uint64_t count = tt_thrift_varint(r);
		if (r->bad || count == 0)
			return;
		if (r->p >= r->end || count > (uint64_t)(r->end - r->p)) {
			r->bad = true;
			return;
		}
		unsigned char kv = *r->p++;
		for (uint64_t i = 0; i < count && !r->bad; i++) {
			skip(r, element_type(kv >> 4), depth + 1);
			skip(r, element_type(kv & 0x0f), depth + 1);
		}
		return;
	}
	case TT_CT_STRUCT:
		skip_struct(r, depth + 1);
		return;
	default:
		r->bad = true;
	}
}

void tt_thrift_skip(tt_thrift *r, int type)
{
	skip(r, type, 0);
}

void tt_thrift_skip_elem(tt_thrift *r, int etype)
{
	skip(r, element_type(etype), 0);
}

void tt_thrift_skip_struct(tt_thrift *r)
{
	skip_struct(r, 0);
}
