/*
 * backends/icechunk/icechunk_fmt.c - see icechunk_fmt.h.
 *
 * The flatbuffers reader follows the wire rules: a table starts with an i32
 * offset back to its vtable (u16 vtable length, u16 inline size, one u16
 * field offset per slot, 0 = absent); strings, vectors and sub-tables are
 * u32 offsets relative to where they are stored.  Every read is bounds
 * checked; offsets must point forward (as icechunk's verifier requires), so
 * no input can make a decoder loop.
 */
#include "backends/icechunk/icechunk_fmt.h"

#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "util/json.h"
#include "util/num.h"
#include "util/mem.h"

static const uint8_t magic[12] = { 0x49, 0x43, 0x45, 0xF0, 0x9F, 0xA7,
				   0x8A, 0x43, 0x48, 0x55, 0x4E, 0x4B };
#define HEADER_LEN 39
#define DEFAULT_MAX ((size_t)256 << 20)
/* Far more than any real object holds; bounds allocations from a corrupt count. */
#define MAX_ITEMS ((size_t)50 * 1000 * 1000)

static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";

void tt_ic_id_encode(const uint8_t id[IC_ID_LEN], char out[IC_ID_CHARS + 1])
{
	unsigned acc = 0, bits = 0;
	size_t o = 0;
	for (size_t i = 0; i < IC_ID_LEN; i++) {
		acc = (acc << 8) | id[i];
		bits += 8;
		while (bits >= 5) {
			out[o++] = b32[(acc >> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	if (bits)
		out[o++] = b32[(acc << (5 - bits)) & 31];
	out[o] = '\0';
}

int tt_ic_id_decode(const char *s, uint8_t id[IC_ID_LEN])
{
	unsigned acc = 0, bits = 0;
	size_t o = 0;
	if (!s || strlen(s) != IC_ID_CHARS)
		return -1;
	for (size_t i = 0; i < IC_ID_CHARS; i++) {
		char c = s[i];
		const char *p;
		if (c >= 'a' && c <= 'z')
			c = (char)(c - 'a' + 'A');
		p = c ? strchr(b32, c) : NULL;
		if (!p)
			return -1;
		acc = (acc << 5) | (unsigned)(p - b32);
		bits += 5;
		if (bits >= 8) {
			id[o++] = (uint8_t)(acc >> (bits - 8));
			bits -= 8;
			acc &= (1u << bits) - 1;
		}
	}
	/* 100 bits for 96: the 4 padding bits must be zero. */
	return acc == 0 && o == IC_ID_LEN ? 0 : -1;
}

static int corrupt(tt_error *err, const char *what, const char *why)
{
	return tt_error_set(err, TT_EPARSE,
			    "icechunk %s is corrupt or not an icechunk file (%s); restore it from a "
			    "backup or re-create the repository",
			    what, why);
}

int tt_ic_container_read(const uint8_t *data, size_t len, int want_type, const char *what,
		      size_t max, tt_buf *out, int *spec, tt_error *err)
{
	ZSTD_DStream *z = NULL;
	ZSTD_inBuffer in;
	size_t ret = 1;
	int rc = 0;

	if (!max)
		max = DEFAULT_MAX;
	if (len < HEADER_LEN)
		return corrupt(err, what, "shorter than the 39-byte header");
	if (memcmp(data, magic, sizeof magic) != 0)
		return corrupt(err, what, "bad magic bytes");
	if (data[36] != 1 && data[36] != 2)
		return tt_error_set(err, TT_EPARSE,
				    "icechunk %s has spec version %u, which this tether cannot read "
				    "(it reads 1 and 2); upgrade tether",
				    what, data[36]);
	if (data[37] != want_type)
		return corrupt(err, what, "wrong file type in the header");
	if (data[38] != 1)
		return corrupt(err, what, "compression is not zstd");
	*spec = data[36];

	z = ZSTD_createDStream();
	if (!z)
		return tt_error_oom(err);
	in.src = data + HEADER_LEN;
	in.size = len - HEADER_LEN;
	in.pos = 0;
	/* Frames written by icechunk carry no content size: stream. */
	while (ret != 0) {
		ZSTD_outBuffer o;
		size_t chunk = ZSTD_DStreamOutSize();
		if (out->len + chunk > max)
			chunk = max > out->len ? max - out->len : 0;
		if (chunk == 0) {
			rc = tt_error_set(err, TT_ELIMIT, "icechunk %s decompresses to more than %zu bytes",
					  what, max);
			goto done;
		}
		if ((rc = tt_buf_grow(out, chunk)) != 0) {
			rc = tt_error_oom(err);
			goto done;
		}
		o.dst = out->ptr + out->len;
		o.size = chunk;
		o.pos = 0;
		ret = ZSTD_decompressStream(z, &o, &in);
		if (ZSTD_isError(ret)) {
			rc = corrupt(err, what, ZSTD_getErrorName(ret));
			goto done;
		}
		out->len += o.pos;
		out->ptr[out->len] = '\0';
		if (ret != 0 && in.pos == in.size && o.pos < o.size) {
			rc = corrupt(err, what, "truncated zstd frame");
			goto done;
		}
	}
	if (in.pos != in.size)
		rc = corrupt(err, what, "trailing bytes after the zstd frame");
done:
	ZSTD_freeDStream(z);
	return rc;
}

/* --- flatbuffers ------------------------------------------------------------ */

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }
static uint32_t rd32(const uint8_t *p) { return tt_le32(p); }
static uint64_t rd64(const uint8_t *p) { return rd32(p) | ((uint64_t)rd32(p + 4) << 32); }

static int table_at(const uint8_t *buf, size_t len, size_t pos, ic_fb *out)
{
	int64_t vt;
	if (pos > len || len - pos < 4 || pos % 4)
		return -1;
	vt = (int64_t)pos - (int32_t)rd32(buf + pos);
	if (vt < 0 || (uint64_t)vt > len || len - (size_t)vt < 4 || vt % 2)
		return -1;
	out->buf = buf;
	out->len = len;
	out->pos = pos;
	out->vt = (size_t)vt;
	out->vt_len = rd16(buf + vt);
	out->inl_len = rd16(buf + vt + 2);
	if (out->vt_len < 4 || out->vt_len % 2 || out->vt_len > len - (size_t)vt)
		return -1;
	if (out->inl_len < 4 || out->inl_len > len - pos)
		return -1;
	return 0;
}

int tt_ic_fb_root(const uint8_t *buf, size_t len, ic_fb *out)
{
	if (len < 8)
		return -1;
	return table_at(buf, len, rd32(buf), out);
}

long tt_ic_fb_field(const ic_fb *t, unsigned slot, size_t size)
{
	size_t at = 4 + 2 * (size_t)slot;
	uint16_t off;
	if (at + 2 > t->vt_len)
		return 0;
	off = rd16(t->buf + t->vt + at);
	if (!off)
		return 0;
	if (off < 4 || (size_t)off + size > t->inl_len)
		return -1;
	/* natural alignment, as icechunk's verifier requires */
	if (size > 1 && size <= 8 && (t->pos + off) % size)
		return -1;
	return (long)(t->pos + off);
}

#define SCALAR(name, type, size, read)                                          \
	int tt_ic_fb_##name(const ic_fb *t, unsigned slot, type def, type *v)     \
	{                                                                      \
		long p = tt_ic_fb_field(t, slot, size);                           \
		if (p < 0)                                                     \
			return -1;                                             \
		*v = p ? (type)read : def;                                     \
		return 0;                                                      \
	}
SCALAR(u8, uint8_t, 1, t->buf[p])
SCALAR(u16, uint16_t, 2, rd16(t->buf + p))
SCALAR(u32, uint32_t, 4, rd32(t->buf + p))
SCALAR(i32, int32_t, 4, (int32_t)rd32(t->buf + p))
SCALAR(u64, uint64_t, 8, rd64(t->buf + p))

int tt_ic_fb_struct(const ic_fb *t, unsigned slot, size_t size, const uint8_t **p)
{
	/* structs of bytes (ids) have alignment 1 */
	long at = tt_ic_fb_field(t, slot, 1);
	*p = NULL;
	if (at < 0)
		return -1;
	if (!at)
		return 0;
	if ((size_t)at - t->pos + size > t->inl_len)
		return -1;
	*p = t->buf + at;
	return 0;
}

/* Follow the uoffset stored at field `slot`: the absolute target, 0 when absent. */
static long follow(const ic_fb *t, unsigned slot)
{
	long at = tt_ic_fb_field(t, slot, 4);
	uint32_t rel;
	if (at <= 0)
		return at;
	rel = rd32(t->buf + at);
	if (rel == 0 || rel > t->len - (size_t)at)
		return -1;
	return at + (long)rel;
}

static int vec_at(const ic_fb *t, size_t pos, size_t elem, const uint8_t **data, size_t *count)
{
	uint32_t n;
	if (pos % 4 || pos > t->len || t->len - pos < 4)
		return -1;
	n = rd32(t->buf + pos);
	if (n > MAX_ITEMS || (elem && n > (t->len - pos - 4) / elem))
		return -1;
	*data = t->buf + pos + 4;
	*count = n;
	return 0;
}

int tt_ic_fb_string(const ic_fb *t, unsigned slot, const char **s, size_t *n)
{
	long at = follow(t, slot);
	const uint8_t *d;
	*s = NULL;
	*n = 0;
	if (at < 0)
		return -1;
	if (!at)
		return 0;
	if (vec_at(t, (size_t)at, 1, &d, n) != 0)
		return -1;
	*s = (const char *)d;
	return 0;
}

int tt_ic_fb_vector(const ic_fb *t, unsigned slot, size_t elem, const uint8_t **data,
		 size_t *count)
{
	long at = follow(t, slot);
	*data = NULL;
	*count = 0;
	if (at < 0)
		return -1;
	if (!at)
		return 0;
	return vec_at(t, (size_t)at, elem, data, count);
}

static long elem_target(const ic_fb *t, const uint8_t *data, size_t count, size_t i)
{
	size_t at;
	uint32_t rel;
	if (i >= count)
		return -1;
	at = (size_t)(data - t->buf) + 4 * i;
	rel = rd32(t->buf + at);
	if (rel == 0 || rel > t->len - at)
		return -1;
	return (long)(at + rel);
}

int tt_ic_fb_vector_table(const ic_fb *t, const uint8_t *data, size_t count, size_t i, ic_fb *out)
{
	long at = elem_target(t, data, count, i);
	return at < 0 ? -1 : table_at(t->buf, t->len, (size_t)at, out);
}

int tt_ic_fb_vector_string(const ic_fb *t, const uint8_t *data, size_t count, size_t i,
			const char **s, size_t *n)
{
	long at = elem_target(t, data, count, i);
	const uint8_t *d;
	if (at < 0 || vec_at(t, (size_t)at, 1, &d, n) != 0)
		return -1;
	*s = (const char *)d;
	return 0;
}

int tt_ic_fb_table(const ic_fb *t, unsigned slot, ic_fb *out)
{
	long at = follow(t, slot);
	if (at <= 0)
		return (int)at;
	return table_at(t->buf, t->len, (size_t)at, out) == 0 ? 1 : -1;
}

/* --- decoders ------------------------------------------------------------- */

/* A NUL-terminated, UTF-8-checked copy of a string field; required fields
 * must be present. */
static int dup_str(const char *s, size_t n, char **out)
{
	if (!s || memchr(s, '\0', n) || !tt_utf8_valid(s, n))
		return -1;
	*out = tt_strndup(s, n);
	return *out ? 0 : -2;
}

static int str_field(const ic_fb *t, unsigned slot, bool required, char **out)
{
	const char *s;
	size_t n;
	*out = NULL;
	if (tt_ic_fb_string(t, slot, &s, &n) != 0)
		return -1;
	if (!s)
		return required ? -1 : 0;
	return dup_str(s, n, out);
}

/* rc -2 is out of memory, anything else negative corruption. */
static int fail(int rc, tt_error *err, const char *what, const char *why)
{
	return rc == -2 ? tt_error_oom(err) : corrupt(err, what, why);
}

static int decode_refs(const ic_fb *root, unsigned slot, size_t nsnaps, ic_ref **out, size_t *n)
{
	const uint8_t *d;
	size_t count;
	*out = NULL;
	*n = 0;
	if (tt_ic_fb_vector(root, slot, 4, &d, &count) != 0 || !d)
		return -1;
	if (count && !(*out = tt_calloc(count, sizeof **out)))
		return -2;
	for (size_t i = 0; i < count; i++) {
		ic_fb r;
		int rc;
		if (tt_ic_fb_vector_table(root, d, count, i, &r) != 0 ||
		    tt_ic_fb_u32(&r, 1, 0, &(*out)[i].snap) != 0)
			return -1;
		*n = i + 1;
		if ((rc = str_field(&r, 0, true, &(*out)[i].name)) != 0)
			return rc;
		if ((*out)[i].snap >= nsnaps)
			return -1;
		/* binary search needs byte order; icechunk keeps it */
		if (i && strcmp((*out)[i - 1].name, (*out)[i].name) >= 0)
			return -1;
	}
	return 0;
}

static int decode_meta(const ic_fb *t, unsigned slot, ic_meta **out, size_t *n)
{
	const uint8_t *d;
	size_t count;
	*out = NULL;
	*n = 0;
	if (tt_ic_fb_vector(t, slot, 4, &d, &count) != 0)
		return -1;
	if (count && !(*out = tt_calloc(count, sizeof **out)))
		return -2;
	for (size_t i = 0; i < count; i++) {
		ic_fb m;
		const uint8_t *v;
		size_t vn;
		int rc;
		if (tt_ic_fb_vector_table(t, d, count, i, &m) != 0)
			return -1;
		*n = i + 1;
		if ((rc = str_field(&m, 0, true, &(*out)[i].name)) != 0)
			return rc;
		if (tt_ic_fb_vector(&m, 1, 1, &v, &vn) != 0 || !v)
			return -1;
		if (vn && !((*out)[i].value = tt_malloc(vn)))
			return -2;
		if (vn)
			memcpy((*out)[i].value, v, vn);
		(*out)[i].len = vn;
	}
	return 0;
}

static void meta_release(ic_meta *m, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(m[i].name);
		free(m[i].value);
	}
	free(m);
}

int tt_ic_repo_decode(const uint8_t *fb, size_t len, const char *what, ic_repo *out, tt_error *err)
{
	ic_fb root, st, up;
	const uint8_t *d;
	size_t count;
	int rc = -1;
	const char *why = "bad repo table";

	memset(out, 0, sizeof *out);
	if (tt_ic_fb_root(fb, len, &root) != 0 || tt_ic_fb_u8(&root, 0, 0, &out->spec_version) != 0)
		goto bad;
	if (out->spec_version > 2) {
		rc = tt_error_set(err, TT_EPARSE,
				  "icechunk %s has spec version %u, which this tether cannot read; "
				  "upgrade tether",
				  what, out->spec_version);
		tt_ic_repo_release(out);
		return rc;
	}
	why = "bad snapshot list";
	if (tt_ic_fb_vector(&root, 4, 4, &d, &count) != 0 || !d || count == 0)
		goto bad;
	if (!(out->snaps = tt_calloc(count, sizeof *out->snaps))) {
		rc = -2;
		goto bad;
	}
	for (size_t i = 0; i < count; i++) {
		ic_fb s;
		const uint8_t *id;
		ic_snapinfo *si = &out->snaps[i];
		if (tt_ic_fb_vector_table(&root, d, count, i, &s) != 0 ||
		    tt_ic_fb_struct(&s, 0, IC_ID_LEN, &id) != 0 || !id ||
		    tt_ic_fb_i32(&s, 1, 0, &si->parent) != 0 || tt_ic_fb_u64(&s, 2, 0, &si->flushed_at) != 0)
			goto bad;
		out->nsnaps = i + 1;
		memcpy(si->id, id, IC_ID_LEN);
		if ((rc = str_field(&s, 3, true, &si->message)) != 0)
			goto bad;
		rc = -1;
		if (si->parent < -1 || si->parent >= (int64_t)count)
			goto bad;
		{
			const uint8_t *pd;
			size_t pn;
			if (tt_ic_fb_vector(&s, 5, IC_ID_LEN, &pd, &pn) != 0)
				goto bad;
			if (pn && !(si->pruned = tt_malloc(pn * IC_ID_LEN))) {
				rc = -2;
				goto bad;
			}
			if (pn)
				memcpy(si->pruned, pd, pn * IC_ID_LEN);
			si->npruned = pn;
		}
		if (i && memcmp(out->snaps[i - 1].id, si->id, IC_ID_LEN) >= 0)
			goto bad;
	}
	why = "bad tag list";
	if ((rc = decode_refs(&root, 1, out->nsnaps, &out->tags, &out->ntags)) != 0)
		goto bad;
	why = "bad branch list";
	if ((rc = decode_refs(&root, 2, out->nsnaps, &out->branches, &out->nbranches)) != 0)
		goto bad;
	why = "bad deleted-tag list";
	if ((rc = tt_ic_fb_vector(&root, 3, 4, &d, &count)) != 0 || !d)
		goto bad;
	if (count && !(out->deleted_tags = tt_calloc(count, sizeof *out->deleted_tags))) {
		rc = -2;
		goto bad;
	}
	for (size_t i = 0; i < count; i++) {
		const char *s;
		size_t n;
		rc = -1;
		if (tt_ic_fb_vector_string(&root, d, count, i, &s, &n) != 0)
			goto bad;
		out->ndeleted = i + 1;
		if ((rc = dup_str(s, n, &out->deleted_tags[i])) != 0)
			goto bad;
	}
	why = "bad status";
	rc = -1;
	if (tt_ic_fb_table(&root, 5, &st) != 1 || tt_ic_fb_u8(&st, 0, 0, &out->availability) != 0)
		goto bad;
	why = "bad metadata";
	if ((rc = decode_meta(&root, 6, &out->metadata, &out->nmetadata)) != 0)
		goto bad;
	why = "bad ops log";
	rc = -1;
	if (tt_ic_fb_vector(&root, 7, 4, &d, &count) != 0 || !d || count == 0 ||
	    tt_ic_fb_vector_table(&root, d, count, 0, &up) != 0 ||
	    tt_ic_fb_u64(&up, 2, 0, &out->last_update_at) != 0)
		goto bad;
	out->nupdates = count;
	{
		const uint8_t *fd;
		size_t fn;
		if (tt_ic_fb_vector(&root, 11, 2, &fd, &fn) != 0)
			goto bad;
		for (size_t i = 0; i < fn; i++) {
			uint16_t flag = rd16(fd + 2 * i);
			out->create_tag_off |= flag == 4;
			out->delete_tag_off |= flag == 5;
		}
	}
	{
		const char *bs;
		size_t bn;
		if (tt_ic_fb_string(&root, 8, &bs, &bn) != 0)
			goto bad;
		out->chained = bs != NULL;
	}
	return 0;
bad:
	tt_ic_repo_release(out);
	return fail(rc, err, what, why);
}

static void refs_release(ic_ref *r, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(r[i].name);
	free(r);
}

void tt_ic_repo_release(ic_repo *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nsnaps; i++) {
		free(r->snaps[i].message);
		free(r->snaps[i].pruned);
	}
	free(r->snaps);
	refs_release(r->tags, r->ntags);
	refs_release(r->branches, r->nbranches);
	for (size_t i = 0; i < r->ndeleted; i++)
		free(r->deleted_tags[i]);
	free(r->deleted_tags);
	meta_release(r->metadata, r->nmetadata);
	memset(r, 0, sizeof *r);
}

long tt_ic_repo_find_snap(const ic_repo *r, const uint8_t id[IC_ID_LEN])
{
	size_t lo = 0, hi = r->nsnaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = memcmp(r->snaps[mid].id, id, IC_ID_LEN);
		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

long tt_ic_repo_find_ref(const ic_ref *refs, size_t n, const char *name)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = strcmp(refs[mid].name, name);
		if (c == 0)
			return (long)mid;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

int tt_ic_snapshot_decode(const uint8_t *fb, size_t len, const char *what, ic_snapshot *out,
		       tt_error *err)
{
	ic_fb root;
	const uint8_t *id, *pid, *d;
	size_t count;
	int rc = -1;
	const char *why = "bad snapshot table";

	memset(out, 0, sizeof *out);
	if (tt_ic_fb_root(fb, len, &root) != 0 || tt_ic_fb_struct(&root, 0, IC_ID_LEN, &id) != 0 || !id ||
	    tt_ic_fb_struct(&root, 1, IC_ID_LEN, &pid) != 0 || tt_ic_fb_u64(&root, 3, 0, &out->flushed_at) != 0)
		goto bad;
	memcpy(out->id, id, IC_ID_LEN);
	if (pid) {
		out->has_parent = true;
		memcpy(out->parent, pid, IC_ID_LEN);
	}
	if ((rc = str_field(&root, 4, true, &out->message)) != 0)
		goto bad;
	why = "bad node list";
	if ((rc = tt_ic_fb_vector(&root, 2, 4, &d, &count)) != 0 || !d) {
		rc = -1;
		goto bad;
	}
	if (count && !(out->nodes = tt_calloc(count, sizeof *out->nodes))) {
		rc = -2;
		goto bad;
	}
	for (size_t i = 0; i < count; i++) {
		ic_fb n;
		const uint8_t *nid;
		rc = -1;
		if (tt_ic_fb_vector_table(&root, d, count, i, &n) != 0 ||
		    tt_ic_fb_struct(&n, 0, IC_NODE_ID_LEN, &nid) != 0 || !nid ||
		    tt_ic_fb_u8(&n, 3, 0, &out->nodes[i].type) != 0)
			goto bad;
		out->nnodes = i + 1;
		memcpy(out->nodes[i].id, nid, IC_NODE_ID_LEN);
		if ((rc = str_field(&n, 1, true, &out->nodes[i].path)) != 0)
			goto bad;
	}
	return 0;
bad:
	tt_ic_snapshot_release(out);
	return fail(rc, err, what, why);
}

void tt_ic_snapshot_release(ic_snapshot *s)
{
	if (!s)
		return;
	free(s->message);
	for (size_t i = 0; i < s->nnodes; i++)
		free(s->nodes[i].path);
	free(s->nodes);
	memset(s, 0, sizeof *s);
}

static int decode_ids(const ic_fb *t, unsigned slot, ic_idlist *out)
{
	const uint8_t *d;
	size_t count;
	if (tt_ic_fb_vector(t, slot, IC_NODE_ID_LEN, &d, &count) != 0 || !d)
		return -1;
	if (count && !(out->ids = tt_malloc(count * IC_NODE_ID_LEN)))
		return -2;
	if (count)
		memcpy(out->ids, d, count * IC_NODE_ID_LEN);
	out->n = count;
	return 0;
}

static int decode_coords(const ic_fb *t, ic_chunks *c)
{
	const uint8_t *d;
	size_t count;
	if (tt_ic_fb_vector(t, 1, 4, &d, &count) != 0 || !d)
		return -1;
	if (count && !(c->coords = tt_calloc(count, sizeof *c->coords)))
		return -2;
	for (size_t i = 0; i < count; i++) {
		ic_fb ci;
		const uint8_t *v;
		size_t nv;
		tt_buf b = TT_BUF_INIT;
		if (tt_ic_fb_vector_table(t, d, count, i, &ci) != 0 || tt_ic_fb_vector(&ci, 0, 4, &v, &nv) != 0 ||
		    !v)
			return -1;
		for (size_t k = 0; k < nv; k++)
			tt_buf_printf(&b, "%s%u", k ? "," : "", (unsigned)rd32(v + 4 * k));
		c->coords[i] = b.failed ? NULL : b.len ? tt_buf_detach(&b) : tt_strdup("");
		if (!c->coords[i]) {
			tt_buf_release(&b);
			return -2;
		}
		c->ncoords = i + 1;
	}
	return 0;
}

int tt_ic_txlog_decode(const uint8_t *fb, size_t len, const char *what, ic_txlog *out,
		    tt_error *err)
{
	ic_fb root;
	const uint8_t *id, *d;
	size_t count;
	int rc = -1;
	const char *why = "bad transaction log";

	memset(out, 0, sizeof *out);
	if (tt_ic_fb_root(fb, len, &root) != 0 || tt_ic_fb_struct(&root, 0, IC_ID_LEN, &id) != 0 || !id)
		goto bad;
	memcpy(out->id, id, IC_ID_LEN);
	for (unsigned l = 0; l < IC_TX_NLISTS; l++)
		if ((rc = decode_ids(&root, 1 + l, &out->lists[l])) != 0)
			goto bad;
	rc = -1;
	if (tt_ic_fb_vector(&root, 7, 4, &d, &count) != 0 || !d)
		goto bad;
	if (count && !(out->chunks = tt_calloc(count, sizeof *out->chunks))) {
		rc = -2;
		goto bad;
	}
	for (size_t i = 0; i < count; i++) {
		ic_fb u;
		const uint8_t *nid;
		rc = -1;
		if (tt_ic_fb_vector_table(&root, d, count, i, &u) != 0 ||
		    tt_ic_fb_struct(&u, 0, IC_NODE_ID_LEN, &nid) != 0 || !nid)
			goto bad;
		out->nchunks = i + 1;
		memcpy(out->chunks[i].node, nid, IC_NODE_ID_LEN);
		if ((rc = decode_coords(&u, &out->chunks[i])) != 0)
			goto bad;
	}
	rc = -1;
	if (tt_ic_fb_vector(&root, 8, 4, &d, &count) != 0)
		goto bad;
	if (count && !(out->moves = tt_calloc(count, sizeof *out->moves))) {
		rc = -2;
		goto bad;
	}
	for (size_t i = 0; i < count; i++) {
		ic_fb m;
		const uint8_t *nid;
		rc = -1;
		if (tt_ic_fb_vector_table(&root, d, count, i, &m) != 0 ||
		    tt_ic_fb_struct(&m, 2, IC_NODE_ID_LEN, &nid) != 0)
			goto bad;
		out->nmoves = i + 1;
		if (nid)
			memcpy(out->moves[i].node, nid, IC_NODE_ID_LEN);
		if ((rc = str_field(&m, 0, false, &out->moves[i].from)) != 0 ||
		    (rc = str_field(&m, 1, false, &out->moves[i].to)) != 0)
			goto bad;
	}
	return 0;
bad:
	tt_ic_txlog_release(out);
	return fail(rc, err, what, why);
}

void tt_ic_txlog_release(ic_txlog *t)
{
	if (!t)
		return;
	for (unsigned l = 0; l < IC_TX_NLISTS; l++)
		free(t->lists[l].ids);
	for (size_t i = 0; i < t->nchunks; i++) {
		for (size_t k = 0; k < t->chunks[i].ncoords; k++)
			free(t->chunks[i].coords[k]);
		free(t->chunks[i].coords);
	}
	free(t->chunks);
	for (size_t i = 0; i < t->nmoves; i++) {
		free(t->moves[i].from);
		free(t->moves[i].to);
	}
	free(t->moves);
	memset(t, 0, sizeof *t);
}
