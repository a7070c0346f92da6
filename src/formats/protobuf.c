/* formats/protobuf.c - the protobuf wire format (see protobuf.h). */
#include "formats/protobuf.h"

#include <string.h>

void tt_pb_reader_init(tt_pb_reader *r, const void *data, size_t len)
{
	r->p = data;
	r->end = r->p + len;
}

bool tt_pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *out)
{
	uint64_t v = 0;
	const uint8_t *q = *p;
	for (unsigned shift = 0; shift < 70; shift += 7) {
		if (q >= end)
			return false;
		uint8_t c = *q++;
		/* The tenth byte may carry only the top bit of a 64-bit value. */
		if (shift == 63 && (c & 0x7e))
			return false;
		v |= (uint64_t)(c & 0x7f) << shift;
		if (!(c & 0x80)) {
			*out = v;
			*p = q;
			return true;
		}
	}
	return false;
}

int tt_pb_next(tt_pb_reader *r, tt_pb_field *f)
{
	uint64_t key;
	const uint8_t *p = r->p;

	if (p >= r->end)
		return 0;
	memset(f, 0, sizeof *f);
	f->start = p;
	if (!tt_pb_varint(&p, r->end, &key) || (key >> 3) == 0 || (key >> 3) > 0x1fffffff)
		return -1;
	f->number = (uint32_t)(key >> 3);
	f->wire = (int)(key & 7);
	switch (f->wire) {
	case TT_PB_VARINT:
		if (!tt_pb_varint(&p, r->end, &f->value))
			return -1;
		break;
	case TT_PB_I64:
		if (r->end - p < 8)
			return -1;
		for (int i = 7; i >= 0; i--)
			f->value = f->value << 8 | p[i];
		p += 8;
		break;
	case TT_PB_I32:
		if (r->end - p < 4)
			return -1;
		for (int i = 3; i >= 0; i--)
			f->value = f->value << 8 | p[i];
		p += 4;
		break;
	case TT_PB_LEN: {
		uint64_t n;
		if (!tt_pb_varint(&p, r->end, &n) || n > (uint64_t)(r->end - p))
			return -1;
		f->data = p;
		f->len = (size_t)n;
		p += n;
		break;
	}
	default:
		return -1; /* groups (3, 4) are long deprecated; 6, 7 do not exist */
	}
	f->size = (size_t)(p - f->start);
	r->p = p;
	return 1;
}

int tt_pb_put_varint(tt_buf *b, uint64_t v)
{
	uint8_t tmp[10];
	size_t n = 0;
	do {
		tmp[n] = (uint8_t)(v & 0x7f);
		v >>= 7;
		if (v)
			tmp[n] |= 0x80;
		n++;
	} while (v);
	return tt_buf_put(b, tmp, n);
}

int tt_pb_put_tag(tt_buf *b, uint32_t number, int wire)
{
	return tt_pb_put_varint(b, (uint64_t)number << 3 | (unsigned)wire);
}

int tt_pb_put_uint(tt_buf *b, uint32_t number, uint64_t v)
{
	int rc = tt_pb_put_tag(b, number, TT_PB_VARINT);
	return rc ? rc : tt_pb_put_varint(b, v);
}

int tt_pb_put_bytes(tt_buf *b, uint32_t number, const void *data, size_t len)
{
	int rc = tt_pb_put_tag(b, number, TT_PB_LEN);
	if (!rc)
		rc = tt_pb_put_varint(b, len);
	if (!rc && len)
		rc = tt_buf_put(b, data, len);
	return rc;
}
