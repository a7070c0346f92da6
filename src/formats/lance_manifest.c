/* formats/lance_manifest.c - Lance manifest files (see lance_manifest.h). */
#include "formats/lance_manifest.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/protobuf.h"
#include "util/mem.h"

#define FOOTER 16

static int why_set(char *why, size_t n, const char *fmt, ...) TT_PRINTF(3, 4);
static int why_set(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && n)
		vsnprintf(why, n, fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static void put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++, v >>= 8)
		p[i] = (uint8_t)(v & 0xff);
}

/* The manifest protobuf's span inside a file. */
static int locate(const uint8_t *f, size_t len, size_t *body, size_t *blen, uint16_t *major,
		  uint16_t *minor, char *why, size_t whylen)
{
	if (len < FOOTER + 4)
		return why_set(why, whylen, "%zu bytes is too short for a manifest file", len);
	if (memcmp(f + len - 4, "LANC", 4) != 0)
		return why_set(why, whylen, "no LANC magic in the last 4 bytes (not a manifest, or truncated)");
	uint64_t pos = le(f + len - FOOTER, 8);
	*major = (uint16_t)le(f + len - 8, 2);
	*minor = (uint16_t)le(f + len - 6, 2);
	if (pos > len - FOOTER - 4)
		return why_set(why, whylen, "footer points at offset %" PRIu64 " beyond the file (%zu bytes)",
			       pos, len);
	uint64_t n = le(f + pos, 4);
	if (pos + 4 + n != len - FOOTER)
		return why_set(why, whylen,
			       "manifest at offset %" PRIu64 " claims %" PRIu64
			       " bytes but %zu lie before the footer", pos, n, (size_t)(len - FOOTER - pos - 4));
	*body = (size_t)pos + 4;
	*blen = (size_t)n;
	return 0;
}

static char *dup_span(const tt_pb_field *f)
{
	return tt_strndup((const char *)f->data, f->len);
}

static int want(const tt_pb_field *f, int wire, const char *msg, char *why, size_t whylen)
{
	if (f->wire == wire)
		return 0;
	return why_set(why, whylen, "%s field %u has wire type %d, expected %d", msg, f->number, f->wire,
		       wire);
}

static int parse_field(tt_lance_field *out, const tt_pb_field *in, char *why, size_t whylen)
{
	tt_pb_reader r;
	tt_pb_field f;
	int k;
	out->parent = -1;
	tt_pb_reader_init(&r, in->data, in->len);
	while ((k = tt_pb_next(&r, &f)) > 0) {
		switch (f.number) {
		case 2:
		case 5:
			if (want(&f, TT_PB_LEN, "schema Field", why, whylen) < 0)
				return -1;
			char **slot = f.number == 2 ? &out->name : &out->type;
			free(*slot);
			if (!(*slot = dup_span(&f)))
				return why_set(why, whylen, "out of memory");
			break;
		case 3:
		case 4:
			if (want(&f, TT_PB_VARINT, "schema Field", why, whylen) < 0)
				return -1;
			*(f.number == 3 ? &out->id : &out->parent) = tt_pb_int32(f.value);
			break;
		default:
			break;
		}
	}
	if (k < 0)
		return why_set(why, whylen, "malformed schema Field");
	if (!out->name && !(out->name = tt_strdup("")))
		return why_set(why, whylen, "out of memory");
	return 0;
}

static int parse_fragment(tt_lance_fragment *out, const tt_pb_field *in, char *why, size_t whylen)
{
	tt_pb_reader r, s;
	tt_pb_field f, g;
	tt_buf files = TT_BUF_INIT;
	int k, rc = 0;

	tt_pb_reader_init(&r, in->data, in->len);
	while (rc == 0 && (k = tt_pb_next(&r, &f)) > 0) {
		switch (f.number) {
		case 1:
		case 4:
			if ((rc = want(&f, TT_PB_VARINT, "DataFragment", why, whylen)) < 0)
				break;
			*(f.number == 1 ? &out->id : &out->physical_rows) = f.value;
			break;
		case 2: /* DataFile */
			if ((rc = want(&f, TT_PB_LEN, "DataFragment", why, whylen)) < 0)
				break;
			out->nfiles++;
			if (files.len)
				tt_buf_putc(&files, '\n');
			tt_pb_reader_init(&s, f.data, f.len);
			while ((k = tt_pb_next(&s, &g)) > 0) {
				if (g.number == 1 && g.wire == TT_PB_LEN)
					tt_buf_put(&files, g.data, g.len);
				else if (g.number == 6 && g.wire == TT_PB_VARINT)
					out->files_size += g.value;
			}
			if (k < 0)
				rc = why_set(why, whylen, "malformed DataFile in fragment %" PRIu64, out->id);
			break;
		case 3: /* DeletionFile */
			if ((rc = want(&f, TT_PB_LEN, "DataFragment", why, whylen)) < 0)
				break;
			out->has_deletion = true;
			tt_pb_reader_init(&s, f.data, f.len);
			while ((k = tt_pb_next(&s, &g)) > 0) {
				if (g.wire != TT_PB_VARINT)
					continue;
				if (g.number == 2)
					out->del_read_version = g.value;
				else if (g.number == 3)
					out->del_id = g.value;
				else if (g.number == 4)
					out->del_rows = g.value;
			}
			if (k < 0)
				rc = why_set(why, whylen, "malformed DeletionFile in fragment %" PRIu64, out->id);
			break;
		default:
			break;
		}
	}
	if (rc == 0 && k < 0)
		rc = why_set(why, whylen, "malformed DataFragment");
	if (rc == 0 && files.failed)
		rc = why_set(why, whylen, "out of memory");
	if (rc == 0)
		out->files = files.len ? tt_buf_detach(&files) : tt_strdup("");
	if (rc == 0 && !out->files)
		rc = why_set(why, whylen, "out of memory");
	tt_buf_release(&files);
	return rc;
}

void tt_lance_manifest_release(tt_lance_manifest *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->nfrags; i++)
		free(m->frags[i].files);
	for (size_t i = 0; i < m->nfields; i++) {
		free(m->fields[i].name);
		free(m->fields[i].type);
	}
	free(m->frags);
	free(m->fields);
	free(m->branch);
	free(m->transaction_file);
	memset(m, 0, sizeof *m);
}

int tt_lance_manifest_parse(tt_lance_manifest *m, const void *file, size_t len, char *why,
			    size_t whylen)
{
	const uint8_t *f = file;
	size_t body, blen, fa = 0, ga = 0;
	tt_pb_reader r, s;
	tt_pb_field x, y;
	int k, rc;
	bool has_version = false;

	memset(m, 0, sizeof *m);
	if ((rc = locate(f, len, &body, &blen, &m->major, &m->minor, why, whylen)) < 0)
		return rc;
	tt_pb_reader_init(&r, f + body, blen);
	while ((k = tt_pb_next(&r, &x)) > 0) {
		switch (x.number) {
		case 1:
			if ((rc = want(&x, TT_PB_LEN, "Manifest", why, whylen)) < 0)
				goto fail;
			if (TT_ARRAY_GROW(m->fields, fa, m->nfields + 1) != 0) {
				rc = why_set(why, whylen, "out of memory");
				goto fail;
			}
			memset(&m->fields[m->nfields], 0, sizeof m->fields[0]);
			rc = parse_field(&m->fields[m->nfields], &x, why, whylen);
			m->nfields++;
			if (rc < 0)
				goto fail;
			break;
		case 2:
			if ((rc = want(&x, TT_PB_LEN, "Manifest", why, whylen)) < 0)
				goto fail;
			if (TT_ARRAY_GROW(m->frags, ga, m->nfrags + 1) != 0) {
				rc = why_set(why, whylen, "out of memory");
				goto fail;
			}
			memset(&m->frags[m->nfrags], 0, sizeof m->frags[0]);
			rc = parse_fragment(&m->frags[m->nfrags], &x, why, whylen);
			m->nfrags++;
			if (rc < 0)
				goto fail;
			break;
		case 3:
		case 9:
		case 10:
			if ((rc = want(&x, TT_PB_VARINT, "Manifest", why, whylen)) < 0)
				goto fail;
			if (x.number == 3) {
				m->version = x.value;
				has_version = true;
			} else {
				*(x.number == 9 ? &m->reader_flags : &m->writer_flags) = x.value;
			}
			break;
		case 7:
			if ((rc = want(&x, TT_PB_LEN, "Manifest", why, whylen)) < 0)
				goto fail;
			m->has_timestamp = true;
			m->ts_seconds = 0;
			m->ts_nanos = 0;
			tt_pb_reader_init(&s, x.data, x.len);
			while ((k = tt_pb_next(&s, &y)) > 0) {
				if (y.number == 1 && y.wire == TT_PB_VARINT)
					m->ts_seconds = (int64_t)y.value;
				else if (y.number == 2 && y.wire == TT_PB_VARINT)
					m->ts_nanos = tt_pb_int32(y.value);
			}
			if (k < 0) {
				rc = why_set(why, whylen, "malformed timestamp");
				goto fail;
			}
			break;
		case 12:
		case 20: {
			if ((rc = want(&x, TT_PB_LEN, "Manifest", why, whylen)) < 0)
				goto fail;
			char **slot = x.number == 12 ? &m->transaction_file : &m->branch;
			free(*slot);
			*slot = NULL;
			if (x.len && !(*slot = dup_span(&x))) {
				rc = why_set(why, whylen, "out of memory");
				goto fail;
			}
			break;
		}
		default:
			break;
		}
	}
	if (k < 0) {
		rc = why_set(why, whylen, "malformed protobuf in the manifest body");
		goto fail;
	}
	if (!has_version && blen == 0) {
		rc = why_set(why, whylen, "empty manifest body");
		goto fail;
	}
	return 0;
fail:
	tt_lance_manifest_release(m);
	return -1;
}

void tt_lance_manifest_summary(const tt_lance_manifest *m, tt_lance_summary *s)
{
	memset(s, 0, sizeof *s);
	s->fragments = m->nfrags;
	for (size_t i = 0; i < m->nfrags; i++) {
		const tt_lance_fragment *g = &m->frags[i];
		s->data_files += g->nfiles;
		s->files_size += g->files_size;
		s->data_file_rows += g->physical_rows;
		if (g->has_deletion) {
			s->deletion_files++;
			s->deletion_file_rows += g->del_rows;
		}
	}
	s->rows = s->data_file_rows >= s->deletion_file_rows ? s->data_file_rows - s->deletion_file_rows : 0;
}

/* --- names ------------------------------------------------------------------ */

int tt_lance_manifest_name(const char *name, uint64_t *version, bool *v2)
{
	static const char suffix[] = ".manifest";
	size_t n = strlen(name), digits = n - (sizeof suffix - 1);
	uint64_t v = 0;

	if (n <= sizeof suffix - 1 || strcmp(name + digits, suffix) != 0 || digits > 20)
		return 0;
	for (size_t i = 0; i < digits; i++) {
		if (name[i] < '0' || name[i] > '9')
			return 0; /* "d<N>" detached, ".tmp...", "_latest" */
		unsigned d = (unsigned)(name[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return 0;
		v = v * 10 + d;
	}
	*v2 = digits == 20;
	*version = *v2 ? UINT64_MAX - v : v;
	return 1;
}

/* --- cloning onto a branch ----------------------------------------------------- */

/* A message with `base_id` (field number) appended when it has none. */
static int with_base(tt_buf *out, uint32_t number, const tt_pb_field *msg, uint32_t base_field,
		     uint32_t base)
{
	tt_pb_reader r;
	tt_pb_field f;
	tt_buf b = TT_BUF_INIT;
	bool has = false;
	int k, rc;

	tt_pb_reader_init(&r, msg->data, msg->len);
	while ((k = tt_pb_next(&r, &f)) > 0)
		if (f.number == base_field)
			has = true;
	if (k < 0)
		return -1;
	rc = tt_buf_put(&b, msg->data, msg->len);
	if (!rc && !has)
		rc = tt_pb_put_uint(&b, base_field, base);
	if (!rc)
		rc = tt_pb_put_bytes(out, number, b.ptr, b.len);
	tt_buf_release(&b);
	return rc ? -1 : 0;
}

static int clone_fragment(tt_buf *out, const tt_pb_field *frag, uint32_t base)
{
	tt_pb_reader r;
	tt_pb_field f;
	tt_buf b = TT_BUF_INIT;
	int k, rc = 0;

	tt_pb_reader_init(&r, frag->data, frag->len);
	while (rc == 0 && (k = tt_pb_next(&r, &f)) > 0) {
		if ((f.number == 2 || f.number == 3) && f.wire == TT_PB_LEN)
			rc = with_base(&b, f.number, &f, 7, base);
		else
			rc = tt_buf_put(&b, f.start, f.size) ? -1 : 0;
	}
	if (rc == 0 && k < 0)
		rc = -1;
	if (rc == 0)
		rc = tt_pb_put_bytes(out, 2, b.ptr, b.len) ? -1 : 0;
	tt_buf_release(&b);
	return rc;
}

int tt_lance_manifest_branch(tt_buf *out, const void *file, size_t len, const char *branch,
			     const char *source_branch, const char *source_uri, int64_t now_seconds,
			     int32_t now_nanos, char *why, size_t whylen)
{
	const uint8_t *f = file;
	size_t body, blen;
	uint16_t major, minor;
	tt_pb_reader r, s;
	tt_pb_field x, y;
	tt_buf man = TT_BUF_INIT, msg = TT_BUF_INIT, idx = TT_BUF_INIT;
	uint64_t rflags = 0, wflags = 0, index_at = 0;
	bool has_index = false, next_base_set = false;
	uint32_t next_base = 0;
	int k, rc = -1;

	if (locate(f, len, &body, &blen, &major, &minor, why, whylen) < 0)
		return -1;
	/* First pass: flags, the index section and the base path ids in use. */
	tt_pb_reader_init(&r, f + body, blen);
	while ((k = tt_pb_next(&r, &x)) > 0) {
		if (x.number == 9 && x.wire == TT_PB_VARINT)
			rflags = x.value;
		else if (x.number == 10 && x.wire == TT_PB_VARINT)
			wflags = x.value;
		else if (x.number == 6 && x.wire == TT_PB_VARINT) {
			has_index = true;
			index_at = x.value;
		} else if (x.number == 18 && x.wire == TT_PB_LEN) {
			tt_pb_reader_init(&s, x.data, x.len);
			while ((k = tt_pb_next(&s, &y)) > 0)
				if (y.number == 1 && y.wire == TT_PB_VARINT && y.value < UINT32_MAX &&
				    (!next_base_set || y.value + 1 > next_base)) {
					next_base = (uint32_t)y.value + 1;
					next_base_set = true;
				}
			if (k < 0)
				break;
		}
	}
	if (k < 0) {
		why_set(why, whylen, "malformed protobuf in the manifest body");
		goto done;
	}
	if ((rflags | wflags) & ~(uint64_t)TT_LANCE_KNOWN_FLAGS) {
		why_set(why, whylen,
			"feature flags reader=%" PRIu64 " writer=%" PRIu64
			" include ones this tether does not know; refusing to write a branch "
			"manifest it may get wrong (create the branch with pylance)", rflags, wflags);
		goto done;
	}

	/* The index section goes first, at offset 0, each index given the base. */
	if (has_index) {
		if (index_at > body - 4 || le(f + index_at, 4) > body - 4 - index_at) {
			why_set(why, whylen, "index section offset %" PRIu64 " lies outside the file", index_at);
			goto done;
		}
		tt_pb_reader_init(&s, f + index_at + 4, (size_t)le(f + index_at, 4));
		while ((k = tt_pb_next(&s, &y)) > 0) {
			int e = y.number == 1 && y.wire == TT_PB_LEN ? with_base(&msg, 1, &y, 9, next_base)
								     : tt_buf_put(&msg, y.start, y.size);
			if (e) {
				k = -1;
				break;
			}
		}
		if (k < 0) {
			why_set(why, whylen, "malformed index section");
			goto done;
		}
		uint8_t n4[4];
		put_le(n4, msg.len, 4);
		tt_buf_put(&idx, n4, 4);
		tt_buf_put(&idx, msg.ptr, msg.len);
		tt_buf_reset(&msg);
	}

	tt_pb_reader_init(&r, f + body, blen);
	while ((k = tt_pb_next(&r, &x)) > 0) {
		switch (x.number) {
		case 2:
			if (x.wire == TT_PB_LEN) {
				if (clone_fragment(&man, &x, next_base) < 0)
					k = -1;
				break;
			}
			tt_buf_put(&man, x.start, x.size);
			break;
		case 6:  /* index section: re-pointed below */
		case 7:  /* timestamp: now */
		case 8:  /* the legacy per-version tag is not carried over */
		case 9:
		case 10: /* flags: recomputed */
		case 12: /* transaction file: the source's, not this commit's */
		case 20: /* branch */
		case 21: /* inline transaction (1.0) */
		case 23: /* the same in pylance 14's manifests */
			break;
		default:
			tt_buf_put(&man, x.start, x.size);
		}
		if (k < 0)
			break;
	}
	if (k < 0) {
		why_set(why, whylen, "malformed fragment in the manifest body");
		goto done;
	}
	/* The new base path: the source dataset's root. */
	tt_pb_put_uint(&msg, 1, next_base);
	if (source_branch)
		tt_pb_put_bytes(&msg, 2, source_branch, strlen(source_branch));
	tt_pb_put_uint(&msg, 3, 1);
	tt_pb_put_bytes(&msg, 4, source_uri, strlen(source_uri));
	tt_pb_put_bytes(&man, 18, msg.ptr, msg.len);
	tt_buf_reset(&msg);
	if (has_index)
		tt_pb_put_uint(&man, 6, 0);
	tt_pb_put_uint(&msg, 1, (uint64_t)now_seconds);
	if (now_nanos)
		tt_pb_put_uint(&msg, 2, (uint64_t)(int64_t)now_nanos);
	tt_pb_put_bytes(&man, 7, msg.ptr, msg.len);
	tt_pb_put_uint(&man, 9, rflags | TT_LANCE_FLAG_BASE_PATHS);
	tt_pb_put_uint(&man, 10, wflags | TT_LANCE_FLAG_BASE_PATHS);
	tt_pb_put_bytes(&man, 20, branch, strlen(branch));

	{
		uint8_t n4[4], foot[FOOTER];
		size_t pos = idx.len;
		put_le(n4, man.len, 4);
		put_le(foot, pos, 8);
		put_le(foot + 8, major, 2);
		put_le(foot + 10, minor, 2);
		memcpy(foot + 12, "LANC", 4);
		tt_buf_put(out, idx.ptr, idx.len);
		tt_buf_put(out, n4, 4);
		tt_buf_put(out, man.ptr, man.len);
		tt_buf_put(out, foot, FOOTER);
	}
	if (man.failed || msg.failed || idx.failed || out->failed) {
		why_set(why, whylen, "out of memory");
		goto done;
	}
	rc = 0;
done:
	tt_buf_release(&man);
	tt_buf_release(&msg);
	tt_buf_release(&idx);
	return rc;
}
