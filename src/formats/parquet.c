/* formats/parquet.c - one string column of a Parquet file (see parquet.h). */
#include "formats/parquet.h"

#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>
#include <zstd.h>

#include "formats/snappy.h"
#include "formats/thrift.h"
#include "util/buf.h"
#include "util/num.h"

/* parquet.thrift's enums, the values this reader meets. */
enum { TYPE_BYTE_ARRAY = 6 };
enum { REP_REQUIRED = 0, REP_OPTIONAL = 1, REP_REPEATED = 2 };
enum { CODEC_NONE = 0, CODEC_SNAPPY = 1, CODEC_GZIP = 2, CODEC_ZSTD = 6 };
enum { ENC_PLAIN = 0, ENC_PLAIN_DICTIONARY = 2, ENC_RLE = 3, ENC_BIT_PACKED = 4,
       ENC_RLE_DICTIONARY = 8 };
enum { PAGE_DATA = 0, PAGE_DICTIONARY = 2, PAGE_DATA_V2 = 3 };

static const char *const codec_names[] = { "UNCOMPRESSED", "SNAPPY", "GZIP", "LZO",
					   "BROTLI", "LZ4", "ZSTD", "LZ4_RAW" };
static const char *const encoding_names[] = {
	"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
	"DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY",
	"BYTE_STREAM_SPLIT"
};

#define NAME_OF(table, i) \
	((i) >= 0 && (size_t)(i) < sizeof(table) / sizeof(*(table)) ? (table)[i] : "unknown")

/* What a read carries: the file, the column, the caller. */
typedef struct reader {
	const unsigned char *data;
	size_t len;
	const char *what;
	const char *column;           /* "add.path", for errors */
	const char *const *path;
	size_t depth;
	int max_def;                  /* definition level of a present value */
	int64_t row;                  /* the next value's row */
	uint64_t values, bytes;       /* handed to fn so far */
	uint64_t max_values, max_bytes;
	tt_parquet_string_fn fn;
	void *ctx;
	tt_error *err;
} reader;

static int malformed(reader *rd, const char *why)
{
	return tt_error_set(rd->err, TT_EPARSE, "%s: column %s: %s (truncated or corrupt?)",
			    rd->what, rd->column, why);
}

static int unsupported(reader *rd, const char *what_kind, const char *name)
{
	return tt_error_set(rd->err, TT_ECAPABILITY,
			    "%s: column %s uses the %s %s, which tether does not read", rd->what,
			    rd->column, what_kind, name);
}

static int bit_width(int max)
{
	int w = 0;
	while (max >> w)
		w++;
	return w;
}

/* --- the schema -------------------------------------------------------------------- */

typedef struct element {
	const unsigned char *name;
	size_t nlen;
	int32_t type, repetition, children;
} element;

/* SchemaElement { 1: type, 3: repetition_type, 4: name, 5: num_children }. */
static void read_element(tt_thrift *r, element *e)
{
	int16_t last = 0, id = 0;
	memset(e, 0, sizeof *e);
	e->type = -1;
	for (;;) {
		int t = tt_thrift_field(r, &last, &id);
		if (r->bad || t == TT_CT_STOP)
			return;
		if (id == 1 && t == TT_CT_I32)
			e->type = tt_thrift_i32(r);
		else if (id == 3 && t == TT_CT_I32)
			e->repetition = tt_thrift_i32(r);
		else if (id == 4 && t == TT_CT_BINARY)
			e->name = tt_thrift_binary(r, &e->nlen);
		else if (id == 5 && t == TT_CT_I32)
			e->children = tt_thrift_i32(r);
		else
			tt_thrift_skip(r, t);
	}
}

static bool name_is(const unsigned char *s, size_t n, const char *want)
{
	return s && strlen(want) == n && memcmp(s, want, n) == 0;
}

/* The index just past the subtree rooted at i (n: malformed). */
static size_t subtree_end(const element *e, size_t n, size_t i)
{
	uint64_t open = 1;
	while (open > 0) {
		if (i >= n || e[i].children < 0)
			return n + 1;
		open += (uint64_t)e[i].children;
		open--;
		i++;
	}
	return i;
}

/* Find the leaf rd->path names in the flattened schema.  0: found (its
 * definition level in rd->max_def); 1: absent; <0: an error set. */
static int find_leaf(reader *rd, const element *e, size_t n)
{
	size_t i = 1;
	int32_t children;
	int def = 0;

	if (n == 0)
		return malformed(rd, "the footer has no schema");
	children = e[0].children;
	for (size_t d = 0; d < rd->depth; d++) {
		bool hit = false;
		for (int32_t c = 0; c < children; c++) {
			if (i >= n)
				return malformed(rd, "the schema is cut short");
			if (name_is(e[i].name, e[i].nlen, rd->path[d])) {
				hit = true;
				break;
			}
			if ((i = subtree_end(e, n, i)) > n)
				return malformed(rd, "the schema is cut short");
		}
		if (!hit)
			return 1;
		if (e[i].repetition == REP_REPEATED)
			return unsupported(rd, "layout", "of a repeated field");
		if (e[i].repetition == REP_OPTIONAL)
			def++;
		else if (e[i].repetition != REP_REQUIRED)
			return malformed(rd, "a schema element has an unknown repetition");
		children = e[i].children;
		if (d + 1 < rd->depth)
			i++;
	}
	if (children != 0)
		return malformed(rd, "it names a group, not a value");
	if (e[i].type != TYPE_BYTE_ARRAY)
		return malformed(rd, "it is not a string column");
	rd->max_def = def;
	return 0;
}

/* --- decompression ----------------------------------------------------------------- */

static int gunzip(reader *rd, const unsigned char *in, size_t n, unsigned char *out, size_t cap)
{
	z_stream z;
	memset(&z, 0, sizeof z);
	if (n > UINT_MAX || cap > UINT_MAX)
		return malformed(rd, "a GZIP page is too large");
	if (inflateInit2(&z, 15 + 32) != Z_OK)
		return tt_error_oom(rd->err);
	z.next_in = (unsigned char *)(uintptr_t)in;
	z.avail_in = (unsigned)n;
	z.next_out = out;
	z.avail_out = (unsigned)cap;
	int zr = inflate(&z, Z_FINISH);
	bool ok = zr == Z_STREAM_END && z.total_out == cap;
	inflateEnd(&z);
	if (zr == Z_MEM_ERROR)
		return tt_error_oom(rd->err);
	return ok ? 0 : malformed(rd, "a GZIP page does not decompress to its stated size");
}

/*
 * A page's bytes in n (compressed with codec) as `size` plain bytes: *out
 * is in itself when it is stored plain, or *owned, a buffer the caller
 * frees.
 */
static int expand(reader *rd, int codec, const unsigned char *in, size_t n, size_t size,
		  const unsigned char **out, unsigned char **owned)
{
	*owned = NULL;
	*out = in;
	if (codec == CODEC_NONE) {
		if (n != size)
			return malformed(rd, "an uncompressed page's sizes disagree");
		return 0;
	}
	if (codec != CODEC_SNAPPY && codec != CODEC_GZIP && codec != CODEC_ZSTD)
		return unsupported(rd, "compression", NAME_OF(codec_names, codec));
	if (size > TT_PARQUET_PAGE_MAX)
		return tt_error_set(rd->err, TT_ELIMIT,
				    "%s: column %s has a page of %zu bytes, more than tether reads "
				    "(%zu)", rd->what, rd->column, size, TT_PARQUET_PAGE_MAX);
	/* A Snappy element writes at most 64 bytes per 2 read, so a stated size
	 * beyond that is a lie worth no allocation. */
	if (codec == CODEC_SNAPPY && size / 32 > n + 1)
		return malformed(rd, "a SNAPPY page states more bytes than it can hold");
	unsigned char *buf = malloc(size ? size : 1);
	if (!buf)
		return tt_error_oom(rd->err);
	int rc = 0;
	if (codec == CODEC_SNAPPY) {
		if (!tt_snappy_uncompress(in, n, buf, size))
			rc = malformed(rd, "a SNAPPY page does not decompress to its stated size");
	} else if (codec == CODEC_GZIP) {
		rc = gunzip(rd, in, n, buf, size);
	} else {
		size_t got = ZSTD_decompress(buf, size, in, n);
		if (ZSTD_isError(got) || got != size)
			rc = malformed(rd, "a ZSTD page does not decompress to its stated size");
	}
	if (rc) {
		free(buf);
		return rc;
	}
	*owned = buf;
	*out = buf;
	return 0;
}

/* --- levels and dictionary indices ------------------------------------------------- */

/*
 * The RLE / bit-packed hybrid: runs, each a varint header whose low bit
 * says a repeated value (header >> 1 copies of one little-endian value of
 * ceil(width / 8) bytes) or bit-packed groups (header >> 1 groups of eight
 * values, packed least significant bit first).
 */
typedef struct hybrid {
	const unsigned char *p, *end;
	int width;
	uint64_t left;                /* values left in this run */
	bool packed;
	uint32_t value;               /* of a repeated run */
	const unsigned char *bits;    /* of a packed run */
	uint64_t at, avail;           /* next packed value; values its bytes hold */
	bool bad;
} hybrid;

static void hybrid_init(hybrid *h, const unsigned char *p, const unsigned char *end, int width)
{
	memset(h, 0, sizeof *h);
	h->p = p;
	h->end = end;
	h->width = width;
}

static bool hybrid_run(hybrid *h)
{
	tt_thrift r = { h->p, h->end, false };
	uint64_t header = tt_thrift_varint(&r); /* a ULEB128 like Thrift's */
	if (r.bad)
		return false;
	h->p = r.p;
	if (header & 1) {
		uint64_t groups = header >> 1;
		if (groups == 0 || groups > ((uint64_t)1 << 40))
			return false;
		uint64_t bytes = groups * (uint64_t)h->width;
		uint64_t have = (uint64_t)(h->end - h->p);
		/* A last run may stop short of its padding. */
		if (bytes > have)
			bytes = have;
		h->packed = true;
		h->bits = h->p;
		h->at = 0;
		h->left = groups * 8;
		h->avail = h->width ? bytes * 8 / (uint64_t)h->width : h->left;
		h->p += bytes;
	} else {
		int vb = (h->width + 7) / 8;
		if (h->end - h->p < vb)
			return false;
		h->packed = false;
		h->value = 0;
		for (int i = 0; i < vb; i++)
			h->value |= (uint32_t)h->p[i] << (8 * i);
		h->p += vb;
		h->left = header >> 1;
		if (h->left == 0)
			return hybrid_run(h);
	}
	return true;
}

/* The next value (false and bad at the end of the data). */
static bool hybrid_next(hybrid *h, uint32_t *v)
{
	if (h->left == 0 && !hybrid_run(h)) {
		h->bad = true;
		return false;
	}
	h->left--;
	if (!h->packed) {
		*v = h->value;
		return true;
	}
	if (h->at >= h->avail) {
		h->bad = true;
		return false;
	}
	uint64_t bit = h->at++ * (uint64_t)h->width;
	uint64_t word = 0;
	const unsigned char *b = h->bits + bit / 8;
	for (int i = 0; i < 5 && b + i < h->p; i++)
		word |= (uint64_t)b[i] << (8 * i);
	*v = (uint32_t)((word >> (bit % 8)) & (((uint64_t)1 << h->width) - 1));
	return true;
}

/* The levels of one page: the hybrid, or the old BIT_PACKED (most
 * significant bit first, no headers). */
typedef struct levels {
	bool old;
	hybrid h;
	const unsigned char *p;
	size_t nbytes;
	uint64_t at;
	int width;
} levels;

static bool level_next(levels *l, uint32_t *v)
{
	if (!l->old)
		return hybrid_next(&l->h, v);
	uint32_t out = 0;
	for (int i = 0; i < l->width; i++, l->at++) {
		if (l->at / 8 >= l->nbytes)
			return false;
		out = out << 1 | ((l->p[l->at / 8] >> (7 - l->at % 8)) & 1);
	}
	*v = out;
	return true;
}

/* --- pages ------------------------------------------------------------------------- */

/* The chunk's dictionary: its values point into `page`. */
typedef struct dict {
	unsigned char *page;
	const unsigned char **value;
	size_t *vlen;
	size_t n;
	bool have;
} dict;

static void dict_release(dict *d)
{
	free(d->page);
	free(d->value);
	free(d->vlen);
	memset(d, 0, sizeof *d);
}

/* A PLAIN BYTE_ARRAY value at *p: a 4-byte length, then the bytes. */
static bool plain_next(const unsigned char **p, const unsigned char *end,
		       const unsigned char **s, size_t *n)
{
	if (end - *p < 4)
		return false;
	uint32_t len = tt_le32(*p);
	if ((size_t)(end - *p - 4) < len)
		return false;
	*s = *p + 4;
	*n = len;
	*p += 4 + (size_t)len;
	return true;
}

static int read_dictionary(reader *rd, dict *d, int encoding, int32_t count,
			   const unsigned char *page, unsigned char *owned, size_t size)
{
	const unsigned char *p = page, *end = page + size;
	if (d->have) {
		free(owned);
		return malformed(rd, "a chunk has two dictionary pages");
	}
	if (encoding != ENC_PLAIN && encoding != ENC_PLAIN_DICTIONARY) {
		free(owned);
		return unsupported(rd, "dictionary encoding", NAME_OF(encoding_names, encoding));
	}
	/* Each value takes at least its 4-byte length. */
	if (count < 0 || (size_t)count > size / 4) {
		free(owned);
		return malformed(rd, "a dictionary page states more values than it holds");
	}
	d->have = true;
	d->page = owned;
	d->n = (size_t)count;
	d->value = malloc((d->n ? d->n : 1) * sizeof *d->value);
	d->vlen = malloc((d->n ? d->n : 1) * sizeof *d->vlen);
	if (!d->value || !d->vlen)
		return tt_error_oom(rd->err);
	for (size_t i = 0; i < d->n; i++)
		if (!plain_next(&p, end, &d->value[i], &d->vlen[i]))
			return malformed(rd, "a dictionary value runs past its page");
	return 0;
}

/* The values of one data page: num present values, after the levels. */
static int read_values(reader *rd, const dict *d, int encoding, const unsigned char *p,
		       const unsigned char *end, levels *lv, bool have_levels, int32_t num)
{
	hybrid idx;
	bool by_dict = encoding == ENC_PLAIN_DICTIONARY || encoding == ENC_RLE_DICTIONARY;
	int rc;

	memset(&idx, 0, sizeof idx);
	if (!by_dict && encoding != ENC_PLAIN)
		return unsupported(rd, "encoding", NAME_OF(encoding_names, encoding));
	if (by_dict) {
		if (!d->have)
			return malformed(rd, "a dictionary-encoded page comes without a dictionary");
		if (p >= end) {
			idx.width = -1;
		} else {
			if (*p > 32)
				return malformed(rd, "a dictionary index is wider than 32 bits");
			hybrid_init(&idx, p + 1, end, *p);
		}
	}
	for (int32_t i = 0; i < num; i++) {
		int64_t row = rd->row++;
		uint32_t level = (uint32_t)rd->max_def;
		if (have_levels && !level_next(lv, &level))
			return malformed(rd, "a page has fewer definition levels than values");
		if (level > (uint32_t)rd->max_def)
			return malformed(rd, "a definition level is out of range");
		if (level < (uint32_t)rd->max_def) {
			/* null here: the row is another action.  The rest of a
			 * repeated run is null too: skipped at once, so a run of
			 * billions from a few bytes costs nothing. */
			if (have_levels && !lv->old && !lv->h.packed && lv->h.left) {
				uint64_t k = lv->h.left < (uint64_t)(num - i - 1) ? lv->h.left
										 : (uint64_t)(num - i - 1);
				lv->h.left -= k;
				rd->row += (int64_t)k;
				i += (int32_t)k;
			}
			continue;
		}
		const unsigned char *s;
		size_t n;
		if (by_dict) {
			uint32_t k;
			if (idx.width < 0 || !hybrid_next(&idx, &k))
				return malformed(rd, "a page has fewer dictionary indices than values");
			if (k >= d->n)
				return malformed(rd, "a dictionary index is out of range");
			s = d->value[k];
			n = d->vlen[k];
		} else if (!plain_next(&p, end, &s, &n)) {
			return malformed(rd, "a value runs past its page");
		}
		/* A repeated run of dictionary indices hands out one value
		 * again and again from a few bytes: the read is bounded. */
		if (++rd->values > rd->max_values || (rd->bytes += n) > rd->max_bytes)
			return tt_error_set(rd->err, TT_ELIMIT,
					    "%s: column %s states more than %llu values or %llu bytes of "
					    "them in a file of %zu bytes, which no writer makes of real "
					    "data (corrupt, or crafted?)",
					    rd->what, rd->column, (unsigned long long)rd->max_values,
					    (unsigned long long)rd->max_bytes, rd->len);
		if ((rc = rd->fn(rd->ctx, row, s, n, rd->err)) != 0)
			return rc;
	}
	return 0;
}

/* The definition levels of a v1 page start its data: for the hybrid, a
 * 4-byte length first.  *p moves past them. */
static int v1_levels(reader *rd, int encoding, int32_t num, const unsigned char **p,
		     const unsigned char *end, levels *lv)
{
	int width = bit_width(rd->max_def);
	memset(lv, 0, sizeof *lv);
	lv->width = width;
	if (encoding == ENC_RLE) {
		if (end - *p < 4)
			return malformed(rd, "a page's definition levels are cut short");
		uint32_t n = tt_le32(*p);
		if ((size_t)(end - *p - 4) < n)
			return malformed(rd, "a page's definition levels run past it");
		hybrid_init(&lv->h, *p + 4, *p + 4 + n, width);
		*p += 4 + (size_t)n;
		return 0;
	}
	if (encoding == ENC_BIT_PACKED) {
		uint64_t n = ((uint64_t)num * (uint64_t)width + 7) / 8;
		if ((uint64_t)(end - *p) < n)
			return malformed(rd, "a page's definition levels run past it");
		lv->old = true;
		lv->p = *p;
		lv->nbytes = (size_t)n;
		*p += n;
		return 0;
	}
	return unsupported(rd, "level encoding", NAME_OF(encoding_names, encoding));
}

/* PageHeader { 1: type, 2: uncompressed_page_size, 3: compressed_page_size,
 * 5: data_page_header, 7: dictionary_page_header, 8: data_page_header_v2 }. */
typedef struct page_header {
	int32_t type, usize, csize;
	int32_t num, encoding, def_encoding;     /* data pages; num for dictionaries too */
	int32_t def_len, rep_len;                /* v2 */
	bool v2_compressed;
	bool have_sub;
} page_header;

static void read_sub_header(tt_thrift *r, page_header *h, int16_t which)
{
	int16_t last = 0, id = 0;
	h->have_sub = true;
	for (;;) {
		int t = tt_thrift_field(r, &last, &id);
		if (r->bad || t == TT_CT_STOP)
			return;
		if (id == 1 && t == TT_CT_I32)
			h->num = tt_thrift_i32(r);
		else if (which == 5 && id == 2 && t == TT_CT_I32)
			h->encoding = tt_thrift_i32(r);
		else if (which == 5 && id == 3 && t == TT_CT_I32)
			h->def_encoding = tt_thrift_i32(r);
		else if (which == 7 && id == 2 && t == TT_CT_I32)
			h->encoding = tt_thrift_i32(r);
		else if (which == 8 && id == 4 && t == TT_CT_I32)
			h->encoding = tt_thrift_i32(r);
		else if (which == 8 && id == 5 && t == TT_CT_I32)
			h->def_len = tt_thrift_i32(r);
		else if (which == 8 && id == 6 && t == TT_CT_I32)
			h->rep_len = tt_thrift_i32(r);
		else if (which == 8 && id == 7 && (t == TT_CT_TRUE || t == TT_CT_FALSE))
			h->v2_compressed = t == TT_CT_TRUE;
		else
			tt_thrift_skip(r, t);
	}
}

static void read_page_header(tt_thrift *r, page_header *h)
{
	int16_t last = 0, id = 0;
	memset(h, 0, sizeof *h);
	h->type = -1;
	h->v2_compressed = true;
	for (;;) {
		int t = tt_thrift_field(r, &last, &id);
		if (r->bad || t == TT_CT_STOP)
			return;
		if (id == 1 && t == TT_CT_I32)
			h->type = tt_thrift_i32(r);
		else if (id == 2 && t == TT_CT_I32)
			h->usize = tt_thrift_i32(r);
		else if (id == 3 && t == TT_CT_I32)
			h->csize = tt_thrift_i32(r);
		else if ((id == 5 || id == 7 || id == 8) && t == TT_CT_STRUCT &&
			 (h->type == -1 || (h->type == PAGE_DATA && id == 5) ||
			  (h->type == PAGE_DICTIONARY && id == 7) ||
			  (h->type == PAGE_DATA_V2 && id == 8)))
			read_sub_header(r, h, id);
		else
			tt_thrift_skip(r, t);
	}
}

/* One data page (v1 or v2) whose stored bytes are page[0..h->csize). */
static int read_data_page(reader *rd, const dict *d, int codec, const page_header *h,
			  const unsigned char *page)
{
	const unsigned char *plain, *p, *end;
	unsigned char *owned = NULL;
	levels lv;
	int rc;

	memset(&lv, 0, sizeof lv);
	if (h->num < 0)
		return malformed(rd, "a page states a negative number of values");
	if (h->type == PAGE_DATA) {
		if ((rc = expand(rd, codec, page, (size_t)h->csize, (size_t)h->usize, &plain,
				 &owned)) != 0)
			return rc;
		p = plain;
		end = plain + h->usize;
		if (rd->max_def > 0)
			rc = v1_levels(rd, h->def_encoding, h->num, &p, end, &lv);
	} else {
		/* v2: the levels are stored plain ahead of the (maybe compressed)
		 * values, and there are no repetition levels in this column. */
		if (h->def_len < 0 || h->rep_len != 0 || h->def_len > h->csize ||
		    h->def_len > h->usize)
			return malformed(rd, "a v2 page's level lengths do not fit it");
		memset(&lv, 0, sizeof lv);
		hybrid_init(&lv.h, page, page + h->def_len, bit_width(rd->max_def));
		rc = expand(rd, h->v2_compressed ? codec : CODEC_NONE, page + h->def_len,
			    (size_t)(h->csize - h->def_len), (size_t)(h->usize - h->def_len),
			    &plain, &owned);
		p = plain;
		end = plain + (h->usize - h->def_len);
	}
	if (rc == 0)
		rc = read_values(rd, d, h->encoding, p, end, &lv, rd->max_def > 0, h->num);
	free(owned);
	return rc;
}

/* ColumnMetaData, the fields a read needs. */
typedef struct chunk {
	bool is_column, external;
	int32_t codec;
	int64_t num_values, data_off, dict_off, size;
} chunk;

/* Read every page of a column chunk. */
static int read_chunk(reader *rd, const chunk *c, size_t body_end)
{
	dict d = { 0 };
	int64_t seen = 0;
	int rc = 0;

	if (c->external)
		return unsupported(rd, "layout", "of a chunk stored in another file");
	int64_t start = c->dict_off > 0 && c->dict_off < c->data_off ? c->dict_off : c->data_off;
	if (start < 4 || c->size < 0 || c->num_values < 0 || (uint64_t)start > body_end ||
	    (uint64_t)c->size > body_end - (uint64_t)start)
		return malformed(rd, "a column chunk lies outside the file");
	const unsigned char *p = rd->data + start, *end = p + c->size;
	while (seen < c->num_values && rc == 0) {
		page_header h;
		tt_thrift r = { p, end, false };
		read_page_header(&r, &h);
		if (r.bad || h.csize < 0 || h.usize < 0 || (size_t)(end - r.p) < (size_t)h.csize) {
			rc = malformed(rd, "a page header is cut short or its page runs past the chunk");
			break;
		}
		const unsigned char *page = r.p;
		p = page + h.csize;
		if (h.type == PAGE_DICTIONARY) {
			const unsigned char *plain;
			unsigned char *owned;
			if (!h.have_sub) {
				rc = malformed(rd, "a dictionary page has no header");
			} else if ((rc = expand(rd, c->codec, page, (size_t)h.csize, (size_t)h.usize,
						&plain, &owned)) == 0) {
				if (!owned && !(owned = malloc(h.usize ? (size_t)h.usize : 1)))
					rc = tt_error_oom(rd->err);
				else if (plain != owned)
					memcpy(owned, plain, (size_t)h.usize);
				if (rc == 0)
					rc = read_dictionary(rd, &d, h.encoding, h.num, owned, owned,
							     (size_t)h.usize);
			}
		} else if (h.type == PAGE_DATA || h.type == PAGE_DATA_V2) {
			if (!h.have_sub)
				rc = malformed(rd, "a data page has no header");
			else if ((rc = read_data_page(rd, &d, c->codec, &h, page)) == 0)
				seen += h.num;
		}
		/* Index pages and unknown page types carry no values: skipped. */
		if (rc == 0 && p >= end && seen < c->num_values)
			rc = malformed(rd, "a column chunk ends before its values do");
	}
	dict_release(&d);
	return rc;
}

/* A ColumnMetaData: is it rd's column, and where are its pages. */
static void read_column_meta(tt_thrift *r, const reader *rd, chunk *c)
{
	int16_t last = 0, id = 0;
	for (;;) {
		int t = tt_thrift_field(r, &last, &id);
		if (r->bad || t == TT_CT_STOP)
			return;
		if (id == 3 && t == TT_CT_LIST) {
			int et;
			uint64_t count = tt_thrift_list(r, &et);
			bool same = count == rd->depth && et == TT_CT_BINARY;
			for (uint64_t i = 0; i < count && !r->bad; i++) {
				if (et != TT_CT_BINARY) {
					tt_thrift_skip_elem(r, et);
					continue;
				}
				size_t n;
				const unsigned char *s = tt_thrift_binary(r, &n);
				if (same && !name_is(s, n, rd->path[i]))
					same = false;
			}
			c->is_column = same;
		} else if (id == 4 && t == TT_CT_I32) {
			c->codec = tt_thrift_i32(r);
		} else if (id == 5 && t == TT_CT_I64) {
			c->num_values = tt_thrift_zigzag(r);
		} else if (id == 7 && t == TT_CT_I64) {
			c->size = tt_thrift_zigzag(r);
		} else if (id == 9 && t == TT_CT_I64) {
			c->data_off = tt_thrift_zigzag(r);
		} else if (id == 11 && t == TT_CT_I64) {
			c->dict_off = tt_thrift_zigzag(r);
		} else {
			tt_thrift_skip(r, t);
		}
	}
}

/* RowGroup { 1: columns list<ColumnChunk { 1: file_path, 3: meta_data }> }:
 * read rd's column in it. */
static int read_row_group(tt_thrift *r, reader *rd, size_t body_end)
{
	int16_t last = 0, id = 0;
	chunk want = { 0 };
	for (;;) {
		int t = tt_thrift_field(r, &last, &id);
		if (r->bad || t == TT_CT_STOP)
			break;
		if (id != 1 || t != TT_CT_LIST) {
			tt_thrift_skip(r, t);
			continue;
		}
		int et;
		uint64_t count = tt_thrift_list(r, &et);
		for (uint64_t i = 0; i < count && !r->bad; i++) {
			if (et != TT_CT_STRUCT) {
				tt_thrift_skip_elem(r, et);
				continue;
			}
			int16_t clast = 0, cid = 0;
			chunk c = { 0 };
			bool external = false;
			for (;;) {
				int ct = tt_thrift_field(r, &clast, &cid);
				if (r->bad || ct == TT_CT_STOP)
					break;
				if (cid == 1 && ct == TT_CT_BINARY) {
					size_t n;
					(void)tt_thrift_binary(r, &n);
					external = n > 0; /* some writers store an empty path */
				} else if (cid == 3 && ct == TT_CT_STRUCT) {
					read_column_meta(r, rd, &c);
				} else {
					tt_thrift_skip(r, ct);
				}
			}
			if (c.is_column && !want.is_column) {
				want = c;
				want.external = external;
			}
		}
	}
	if (r->bad)
		return malformed(rd, "the footer is cut short");
	return want.is_column ? read_chunk(rd, &want, body_end) : 0;
}

int tt_parquet_strings(const unsigned char *data, size_t len, const char *what,
		       const char *const *path, size_t depth, tt_parquet_string_fn fn, void *ctx,
		       bool *found, tt_error *err)
{
	char column[256];
	size_t at = 0;
	element *schema = NULL;
	size_t nschema = 0;
	int rc = 0;

	*found = false;
	column[0] = 0;
	for (size_t i = 0; i < depth && at < sizeof column; i++)
		at += (size_t)snprintf(column + at, sizeof column - at, "%s%s", i ? "." : "", path[i]);
	reader rd = { .data = data, .len = len, .what = what, .column = column, .path = path,
		      .depth = depth, .fn = fn, .ctx = ctx, .err = err };
	rd.max_values = (uint64_t)len * TT_PARQUET_VALUES_PER_BYTE;
	if (rd.max_values < TT_PARQUET_VALUES_FLOOR)
		rd.max_values = TT_PARQUET_VALUES_FLOOR;
	rd.max_bytes = (uint64_t)len * TT_PARQUET_BYTES_PER_BYTE;
	if (rd.max_bytes < TT_PARQUET_BYTES_FLOOR)
		rd.max_bytes = TT_PARQUET_BYTES_FLOOR;
	if (depth == 0)
		return tt_error_set(err, TT_EUSAGE, "a Parquet column path is empty");
	if (len < 12 || memcmp(data, "PAR1", 4) != 0 || memcmp(data + len - 4, "PAR1", 4) != 0)
		return malformed(&rd, "not a Parquet file (no PAR1 magic at both ends)");
	uint32_t flen = tt_le32(data + len - 8);
	if (flen > len - 12)
		return malformed(&rd, "the footer is longer than the file");
	size_t body_end = len - 8 - flen;

	/* FileMetaData { 2: schema list<SchemaElement>, 4: row_groups list<RowGroup> }.
	 * The schema comes first in every writer; row groups before it are an error. */
	tt_thrift r = { data + body_end, data + len - 8, false };
	int16_t last = 0, id = 0;
	bool have_schema = false;
	for (;;) {
		int t = tt_thrift_field(&r, &last, &id);
		if (r.bad || t == TT_CT_STOP)
			break;
		if (id == 2 && t == TT_CT_LIST && !have_schema) {
			int et;
			uint64_t count = tt_thrift_list(&r, &et);
			if (r.bad || et != TT_CT_STRUCT) {
				rc = malformed(&rd, "the footer's schema is not a list of elements");
				goto done;
			}
			if (count && !(schema = calloc(count, sizeof *schema))) {
				rc = tt_error_oom(err);
				goto done;
			}
			nschema = count;
			for (uint64_t i = 0; i < count && !r.bad; i++)
				read_element(&r, &schema[i]);
			if (r.bad)
				break;
			have_schema = true;
			if ((rc = find_leaf(&rd, schema, nschema)) < 0)
				goto done;
			if (rc == 1) {
				rc = 0;
				goto done; /* no such column */
			}
			*found = true;
		} else if (id == 4 && t == TT_CT_LIST) {
			if (!have_schema) {
				rc = malformed(&rd, "the footer lists row groups before its schema");
				goto done;
			}
			int et;
			uint64_t count = tt_thrift_list(&r, &et);
			for (uint64_t i = 0; i < count && !r.bad; i++) {
				if (et != TT_CT_STRUCT) {
					tt_thrift_skip_elem(&r, et);
					continue;
				}
				if ((rc = read_row_group(&r, &rd, body_end)) != 0)
					goto done;
			}
		} else {
			tt_thrift_skip(&r, t);
		}
	}
	if (r.bad)
		rc = malformed(&rd, "the footer is cut short");
	else if (!have_schema)
		rc = malformed(&rd, "the footer has no schema");
done:
	if (rc)
		*found = false;
	free(schema);
	return rc;
}

/* --- the writer ------------------------------------------------------------- */

/* Thrift compact-protocol output: field headers carry the id delta when it
 * fits in 4 bits. */
typedef struct tw {
	tt_buf *b;
	int16_t last[8];  /* previous field id per nesting level */
	int depth;
} tw;

static void tw_varint(tw *w, uint64_t v)
{
	while (v >= 0x80) {
		tt_buf_putc(w->b, (char)((v & 0x7f) | 0x80));
		v >>= 7;
	}
	tt_buf_putc(w->b, (char)v);
}

static void tw_zigzag(tw *w, int64_t v)
{
	tw_varint(w, ((uint64_t)v << 1) ^ (uint64_t)(v >> 63));
}

static void tw_field(tw *w, int16_t id, int type)
{
	int16_t delta = (int16_t)(id - w->last[w->depth]);
	if (delta > 0 && delta <= 15) {
		tt_buf_putc(w->b, (char)(delta << 4 | type));
	} else {
		tt_buf_putc(w->b, (char)type);
		tw_zigzag(w, id);
	}
	w->last[w->depth] = id;
}

static void tw_i32(tw *w, int16_t id, int32_t v)
{
	tw_field(w, id, TT_CT_I32);
	tw_zigzag(w, v);
}

static void tw_i64(tw *w, int16_t id, int64_t v)
{
	tw_field(w, id, TT_CT_I64);
	tw_zigzag(w, v);
}

static void tw_binary(tw *w, int16_t id, const char *s, size_t n)
{
	tw_field(w, id, TT_CT_BINARY);
	tw_varint(w, n);
	tt_buf_put(w->b, s, n);
}

static void tw_begin(tw *w, int16_t id)  /* a struct field */
{
	if (id)
		tw_field(w, id, TT_CT_STRUCT);
	w->last[++w->depth] = 0;
}

static void tw_end(tw *w)
{
	tt_buf_putc(w->b, TT_CT_STOP);
	w->depth--;
}

static void tw_list(tw *w, int16_t id, int etype, size_t n)
{
	tw_field(w, id, TT_CT_LIST);
	if (n < 15) {
		tt_buf_putc(w->b, (char)(n << 4 | (size_t)etype));
	} else {
		tt_buf_putc(w->b, (char)(0xf0 | etype));
		tw_varint(w, n);
	}
}

static void tw_list_begin_elem(tw *w)  /* a struct element of a list */
{
	w->last[++w->depth] = 0;
}

enum { PQ_BOOLEAN = 0, PQ_INT64 = 2, PQ_BYTE_ARRAY = 6 };

/* Definition levels as RLE runs (bit width 1), with the v1 length prefix. */
static void put_def_levels(tt_buf *page, const tt_parquet_cell *cells, size_t ncols, size_t col, size_t nrows)
{
	tt_buf rl = TT_BUF_INIT;
	tw w = { &rl, { 0 }, 0 };
	size_t r = 0;
	while (r < nrows) {
		bool def = !cells[r * ncols + col].null;
		size_t run = 1;
		while (r + run < nrows && !cells[(r + run) * ncols + col].null == def)
			run++;
		tw_varint(&w, (uint64_t)run << 1);
		tt_buf_putc(&rl, def ? 1 : 0);
		r += run;
	}
	unsigned char len[4] = { (unsigned char)rl.len, (unsigned char)(rl.len >> 8),
				 (unsigned char)(rl.len >> 16), (unsigned char)(rl.len >> 24) };
	tt_buf_put(page, len, 4);
	tt_buf_put(page, rl.ptr, rl.len);
	tt_buf_release(&rl);
}

static void put_values(tt_buf *page, const tt_parquet_column *c, const tt_parquet_cell *cells, size_t ncols,
		       size_t col, size_t nrows)
{
	unsigned char bits = 0;
	int nbits = 0;
	for (size_t r = 0; r < nrows; r++) {
		const tt_parquet_cell *v = &cells[r * ncols + col];
		if (v->null)
			continue;
		if (c->type == TT_PARQUET_STRING) {
			uint32_t n = (uint32_t)v->n;
			unsigned char len[4] = { (unsigned char)n, (unsigned char)(n >> 8), (unsigned char)(n >> 16),
						 (unsigned char)(n >> 24) };
			tt_buf_put(page, len, 4);
			tt_buf_put(page, v->s, v->n);
		} else if (c->type == TT_PARQUET_INT64) {
			unsigned char le[8];
			uint64_t u = (uint64_t)v->i;
			for (int k = 0; k < 8; k++)
				le[k] = (unsigned char)(u >> (8 * k));
			tt_buf_put(page, le, 8);
		} else {
			if (v->i)
				bits |= (unsigned char)(1u << nbits);
			if (++nbits == 8) {
				tt_buf_putc(page, (char)bits);
				bits = 0;
				nbits = 0;
			}
		}
	}
	if (nbits)
		tt_buf_putc(page, (char)bits);
}

int tt_parquet_write(tt_buf *out, const tt_parquet_column *cols, size_t ncols, const tt_parquet_cell *cells,
		     size_t nrows, const char *created_by, tt_error *err)
{
	if (nrows > INT32_MAX)
		return tt_error_set(err, TT_ELIMIT, "a Parquet table of %zu rows is more than one page holds", nrows);
	size_t base = out->len;
	int64_t *offsets = calloc(ncols ? ncols : 1, sizeof *offsets);
	int64_t *sizes = calloc(ncols ? ncols : 1, sizeof *sizes);
	if (!offsets || !sizes) {
		free(offsets);
		free(sizes);
		return tt_error_oom(err);
	}
	tt_buf_put(out, "PAR1", 4);
	int64_t total = 0;
	for (size_t c = 0; nrows && c < ncols; c++) {
		tt_buf page = TT_BUF_INIT, hdr = TT_BUF_INIT;
		put_def_levels(&page, cells, ncols, c, nrows);
		put_values(&page, &cols[c], cells, ncols, c, nrows);
		if (page.len > INT32_MAX) {
			tt_buf_release(&page);
			free(offsets);
			free(sizes);
			return tt_error_set(err, TT_ELIMIT, "Parquet column %s is larger than one page holds", cols[c].name);
		}
		tw w = { &hdr, { 0 }, 0 };
		tw_begin(&w, 0);              /* PageHeader */
		tw_i32(&w, 1, 0);             /* type: DATA_PAGE */
		tw_i32(&w, 2, (int32_t)page.len);
		tw_i32(&w, 3, (int32_t)page.len);
		tw_begin(&w, 5);              /* DataPageHeader */
		tw_i32(&w, 1, (int32_t)nrows);
		tw_i32(&w, 2, 0);             /* PLAIN */
		tw_i32(&w, 3, 3);             /* definition levels: RLE */
		tw_i32(&w, 4, 3);             /* repetition levels: RLE */
		tw_end(&w);
		tw_end(&w);
		offsets[c] = (int64_t)(out->len - base);
		sizes[c] = (int64_t)(hdr.len + page.len);
		total += sizes[c];
		tt_buf_put(out, hdr.ptr, hdr.len);
		tt_buf_put(out, page.ptr, page.len);
		tt_buf_release(&hdr);
		tt_buf_release(&page);
	}
	/* FileMetaData. */
	size_t footer = out->len;
	tw w = { out, { 0 }, 0 };
	tw_begin(&w, 0);
	tw_i32(&w, 1, 1);                     /* version */
	tw_list(&w, 2, TT_CT_STRUCT, ncols + 1);
	tw_list_begin_elem(&w);               /* the root */
	tw_binary(&w, 4, "schema", 6);
	tw_i32(&w, 5, (int32_t)ncols);
	tw_end(&w);
	for (size_t c = 0; c < ncols; c++) {
		tw_list_begin_elem(&w);
		int type = cols[c].type == TT_PARQUET_STRING ? PQ_BYTE_ARRAY
			   : cols[c].type == TT_PARQUET_INT64 ? PQ_INT64 : PQ_BOOLEAN;
		tw_i32(&w, 1, type);
		tw_i32(&w, 3, 1);             /* OPTIONAL */
		tw_binary(&w, 4, cols[c].name, strlen(cols[c].name));
		if (cols[c].type == TT_PARQUET_STRING) {
			tw_i32(&w, 6, 0);     /* converted type UTF8 */
			tw_begin(&w, 10);     /* LogicalType union */
			tw_begin(&w, 1);      /* STRING: StringType {} */
			tw_end(&w);
			tw_end(&w);
		}
		tw_end(&w);
	}
	tw_i64(&w, 3, (int64_t)nrows);
	tw_list(&w, 4, TT_CT_STRUCT, nrows ? 1 : 0);
	if (nrows) {
		tw_list_begin_elem(&w);       /* RowGroup */
		tw_list(&w, 1, TT_CT_STRUCT, ncols);
		for (size_t c = 0; c < ncols; c++) {
			tw_list_begin_elem(&w);   /* ColumnChunk */
			tw_i64(&w, 2, offsets[c]);
			tw_begin(&w, 3);          /* ColumnMetaData */
			int type = cols[c].type == TT_PARQUET_STRING ? PQ_BYTE_ARRAY
				   : cols[c].type == TT_PARQUET_INT64 ? PQ_INT64 : PQ_BOOLEAN;
			tw_i32(&w, 1, type);
			tw_list(&w, 2, TT_CT_I32, 2);
			tw_zigzag(&w, 0);         /* PLAIN */
			tw_zigzag(&w, 3);         /* RLE */
			tw_list(&w, 3, TT_CT_BINARY, 1);
			tw_varint(&w, strlen(cols[c].name));
			tt_buf_puts(out, cols[c].name);
			tw_i32(&w, 4, 0);         /* UNCOMPRESSED */
			tw_i64(&w, 5, (int64_t)nrows);
			tw_i64(&w, 6, sizes[c]);
			tw_i64(&w, 7, sizes[c]);
			tw_i64(&w, 9, offsets[c]);
			tw_end(&w);
			tw_end(&w);
		}
		tw_i64(&w, 2, total);
		tw_i64(&w, 3, (int64_t)nrows);
		tw_end(&w);
	}
	if (created_by)
		tw_binary(&w, 6, created_by, strlen(created_by));
	tw_end(&w);
	size_t flen = out->len - footer;
	unsigned char len[4] = { (unsigned char)flen, (unsigned char)(flen >> 8), (unsigned char)(flen >> 16),
				 (unsigned char)(flen >> 24) };
	tt_buf_put(out, len, 4);
	tt_buf_put(out, "PAR1", 4);
	free(offsets);
	free(sizes);
	return tt_buf_check(out, err, "a Parquet file");
}
