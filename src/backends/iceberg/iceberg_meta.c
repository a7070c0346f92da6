/* backends/iceberg/iceberg_meta.c - Iceberg table metadata (see iceberg_meta.h). */
#include "backends/iceberg/iceberg_meta.h"

#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "util/json.h"
#include "util/mem.h"

/* TT_EPARSE "<what>: <message>". */
#define PERR(err, what, ...) \
	(tt_error_set((err), TT_EPARSE, __VA_ARGS__), \
	 tt_error_prefix((err), "%s", (what) ? (what) : "table metadata"), TT_EPARSE)

void tt_iceberg_meta_release(tt_iceberg_meta *m)
{
	if (!m)
		return;
	json_decref(m->doc);
	free(m->snaps);
	free(m->by_id);
	free(m->refs);
	memset(m, 0, sizeof *m);
}

/* gzip input inflated into out (capped). */
static int gunzip(const unsigned char *data, size_t len, const char *what, tt_buf *out,
		  tt_error *err)
{
	z_stream zs;
	unsigned char chunk[16384];
	int zrc;
	memset(&zs, 0, sizeof zs);
	if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
		return tt_error_oom(err);
	zs.next_in = (unsigned char *)data;
	zs.avail_in = (uInt)(len > 0xffffffffu ? 0xffffffffu : len);
	do {
		zs.next_out = chunk;
		zs.avail_out = sizeof chunk;
		zrc = inflate(&zs, Z_NO_FLUSH);
		if (zrc != Z_OK && zrc != Z_STREAM_END) {
			inflateEnd(&zs);
			return PERR(err, what, "the gzip-compressed metadata is corrupt");
		}
		if (out->len + (sizeof chunk - zs.avail_out) > TT_ICEBERG_META_MAX) {
			inflateEnd(&zs);
			tt_error_set(err, TT_ELIMIT, "%s: the metadata inflates past %zu bytes",
				     what ? what : "table metadata", TT_ICEBERG_META_MAX);
			return TT_ELIMIT;
		}
		if (tt_buf_put(out, chunk, sizeof chunk - zs.avail_out) != 0) {
			inflateEnd(&zs);
			return tt_error_oom(err);
		}
		if (zrc == Z_OK && zs.avail_in == 0 && zs.avail_out != 0) {
			inflateEnd(&zs);
			return PERR(err, what, "the gzip-compressed metadata is truncated");
		}
	} while (zrc != Z_STREAM_END);
	inflateEnd(&zs);
	return 0;
}

/* An integer field: *out set when present and an integer; absent or null
 * leave dflt.  Anything else is malformed. */
static int int_field(const json_t *o, const char *key, long long dflt, long long *out,
		     const char *what, tt_error *err)
{
	const json_t *v = json_object_get(o, key);
	*out = dflt;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v))
		return PERR(err, what, "'%s' must be an integer", key);
	*out = (long long)json_integer_value(v);
	return 0;
}

static int cmp_by_id(const void *a, const void *b)
{
	long long x = (*(tt_iceberg_snapshot *const *)a)->id;
	long long y = (*(tt_iceberg_snapshot *const *)b)->id;
	return x < y ? -1 : x > y;
}

static int cmp_ref(const void *a, const void *b)
{
	return strcmp(((const tt_iceberg_ref *)a)->name, ((const tt_iceberg_ref *)b)->name);
}

/* (Re)build the index from m->doc. */
static int index_doc(tt_iceberg_meta *m, const char *what, tt_error *err)
{
	const json_t *doc = m->doc, *v, *snaps, *refs;
	long long fv;
	int rc;

	free(m->snaps);
	free(m->by_id);
	free(m->refs);
	m->snaps = NULL;
	m->by_id = NULL;
	m->refs = NULL;
	m->nsnaps = m->nrefs = 0;
	if (!json_is_object(doc))
		return PERR(err, what, "table metadata must be a JSON object");
	v = json_object_get(doc, "format-version");
	if (!json_is_integer(v))
		return PERR(err, what, "'%s' is missing or not an integer", "format-version");
	fv = (long long)json_integer_value(v);
	if (fv < 1 || fv > 3) {
		tt_error_set(err, TT_EPARSE,
			     "%s: Iceberg format version %lld is not supported (1, 2 and 3 are)",
			     what ? what : "table metadata", fv);
		return TT_EPARSE;
	}
	m->format_version = (int)fv;
	v = json_object_get(doc, "table-uuid");
	if (v && !json_is_null(v) && !json_is_string(v))
		return PERR(err, what, "'%s' must be a string", "table-uuid");
	m->uuid = json_is_string(v) ? json_string_value(v) : NULL;
	if (!m->uuid && fv >= 2)
		return PERR(err, what, "'%s' is required from format version 2", "table-uuid");
	v = json_object_get(doc, "location");
	if (!json_is_string(v))
		return PERR(err, what, "'%s' is missing or not a string", "location");
	m->location = json_string_value(v);
	if ((rc = int_field(doc, "current-snapshot-id", TT_ICEBERG_NO_SNAPSHOT, &m->current, what,
			    err)) != 0 ||
	    (rc = int_field(doc, "last-updated-ms", 0, &m->last_updated_ms, what, err)) != 0)
		return rc;
	if (m->current < 0)
		m->current = TT_ICEBERG_NO_SNAPSHOT;

	snaps = json_object_get(doc, "snapshots");
	if (snaps && !json_is_null(snaps) && !json_is_array(snaps))
		return PERR(err, what, "'%s' must be a list", "snapshots");
	m->nsnaps = json_array_size(snaps);
	if (m->nsnaps) {
		m->snaps = tt_calloc(m->nsnaps, sizeof *m->snaps);
		m->by_id = tt_calloc(m->nsnaps, sizeof *m->by_id);
		if (!m->snaps || !m->by_id)
			return tt_error_oom(err);
	}
	for (size_t i = 0; i < m->nsnaps; i++) {
		const json_t *s = json_array_get(snaps, i), *sum;
		tt_iceberg_snapshot *o = &m->snaps[i];
		if (!json_is_object(s))
			return PERR(err, what, "every entry of '%s' must be an object", "snapshots");
		if (!json_is_integer(json_object_get(s, "snapshot-id")))
			return PERR(err, what, "a snapshot has no integer '%s'", "snapshot-id");
		o->id = (long long)json_integer_value(json_object_get(s, "snapshot-id"));
		if ((rc = int_field(s, "parent-snapshot-id", -1, &o->parent, what, err)) != 0 ||
		    (rc = int_field(s, "timestamp-ms", 0, &o->timestamp_ms, what, err)) != 0 ||
		    (rc = int_field(s, "sequence-number", 0, &o->sequence, what, err)) != 0)
			return rc;
		sum = json_object_get(s, "summary");
		if (sum && !json_is_null(sum) && !json_is_object(sum))
			return PERR(err, what, "a snapshot's '%s' must be an object", "summary");
		o->summary = json_is_object(sum) ? sum : NULL;
		m->by_id[i] = o;
	}
	if (m->nsnaps > 1)
		qsort(m->by_id, m->nsnaps, sizeof *m->by_id, cmp_by_id);
	for (size_t i = 1; i < m->nsnaps; i++)
		if (m->by_id[i]->id == m->by_id[i - 1]->id)
			return PERR(err, what, "two snapshots share one '%s'", "snapshot-id");

	refs = json_object_get(doc, "refs");
	if (refs && !json_is_null(refs) && !json_is_object(refs))
		return PERR(err, what, "'%s' must be an object", "refs");
	size_t n = json_object_size(refs) + 1;
	m->refs = tt_calloc(n, sizeof *m->refs);
	if (!m->refs)
		return tt_error_oom(err);
	const char *name;
	json_t *r;
	bool has_main = false;
	json_object_foreach((json_t *)refs, name, r) {
		const json_t *type = json_object_get(r, "type");
		tt_iceberg_ref *o = &m->refs[m->nrefs];
		if (!json_is_object(r) || !json_is_integer(json_object_get(r, "snapshot-id")))
			return PERR(err, what, "ref '%s' has no integer snapshot-id", name);
		if (!json_is_string(type) || (strcmp(json_string_value(type), "tag") != 0 &&
					      strcmp(json_string_value(type), "branch") != 0))
			return PERR(err, what, "ref '%s' must have type \"tag\" or \"branch\"", name);
		o->name = name;
		o->snapshot_id = (long long)json_integer_value(json_object_get(r, "snapshot-id"));
		o->tag = strcmp(json_string_value(type), "tag") == 0;
		if (strcmp(name, "main") == 0)
			has_main = true;
		m->nrefs++;
	}
	/* `main` always exists once there is a current snapshot. */
	if (!has_main && m->current != TT_ICEBERG_NO_SNAPSHOT) {
		m->refs[m->nrefs].name = "main";
		m->refs[m->nrefs].snapshot_id = m->current;
		m->refs[m->nrefs].tag = false;
		m->nrefs++;
	}
	if (m->nrefs > 1)
		qsort(m->refs, m->nrefs, sizeof *m->refs, cmp_ref);
	return 0;
}

int tt_iceberg_meta_parse(const void *data, size_t len, const char *what, tt_iceberg_meta *m,
			  tt_error *err)
{
	tt_buf inflated = TT_BUF_INIT;
	const unsigned char *p = data;
	int rc;

	memset(m, 0, sizeof *m);
	m->current = TT_ICEBERG_NO_SNAPSHOT;
	if (len > TT_ICEBERG_META_MAX) {
		tt_error_set(err, TT_ELIMIT, "%s: metadata of %zu bytes is past the %zu-byte cap",
			     what ? what : "table metadata", len, TT_ICEBERG_META_MAX);
		return TT_ELIMIT;
	}
	if (len >= 2 && p[0] == 0x1f && p[1] == 0x8b) {
		if ((rc = gunzip(p, len, what, &inflated, err)) != 0) {
			tt_buf_release(&inflated);
			return rc;
		}
		p = (const unsigned char *)inflated.ptr;
		len = inflated.len;
	}
	m->doc = tt_json_parse((const char *)p, len, what ? what : "table metadata", err);
	tt_buf_release(&inflated);
	if (!m->doc)
		return err->code ? err->code : TT_EPARSE;
	/* a document that does not index is not kept: nothing to release */
	if ((rc = index_doc(m, what, err)) != 0) {
		tt_iceberg_meta_release(m);
		m->current = TT_ICEBERG_NO_SNAPSHOT;
	}
	return rc;
}

const tt_iceberg_snapshot *tt_iceberg_meta_snapshot(const tt_iceberg_meta *m, long long id)
{
	size_t lo = 0, hi = m->nsnaps;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const tt_iceberg_snapshot *s = m->by_id[mid];
		if (s->id == id)
			return s;
		if (s->id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

const tt_iceberg_ref *tt_iceberg_meta_ref(const tt_iceberg_meta *m, const char *name)
{
	for (size_t i = 0; i < m->nrefs; i++)
		if (strcmp(m->refs[i].name, name) == 0)
			return &m->refs[i];
	return NULL;
}

const char *tt_iceberg_summary(const tt_iceberg_snapshot *s, const char *key)
{
	const json_t *v = s && s->summary ? json_object_get(s->summary, key) : NULL;
	return json_is_string(v) ? json_string_value(v) : NULL;
}

int tt_iceberg_meta_ancestry(const tt_iceberg_meta *m, long long start, tt_iceberg_walk_fn fn,
			     void *ctx, tt_error *err)
{
	const tt_iceberg_snapshot *s = tt_iceberg_meta_snapshot(m, start);
	size_t steps = 0;
	while (s) {
		int rc = fn(s, ctx, err);
		if (rc < 0)
			return rc;
		if (rc > 0)
			return 0;
		/* A chain longer than the list has a cycle. */
		if (++steps >= m->nsnaps || s->parent < 0)
			break;
		s = tt_iceberg_meta_snapshot(m, s->parent);
	}
	return 0;
}

typedef struct find_ctx {
	long long wanted;
	bool found;
} find_ctx;

static int find_step(const tt_iceberg_snapshot *s, void *ctx, tt_error *err)
{
	find_ctx *f = ctx;
	(void)err;
	if (s->id == f->wanted) {
		f->found = true;
		return 1;
	}
	return 0;
}

bool tt_iceberg_meta_is_ancestor(const tt_iceberg_meta *m, long long ancestor, long long of)
{
	find_ctx f = { ancestor, false };
	if (ancestor == TT_ICEBERG_NO_SNAPSHOT)
		return true;
	tt_iceberg_meta_ancestry(m, of, find_step, &f, NULL);
	return f.found;
}

/* --- edits --------------------------------------------------------------------- */

static long long previous_max(const json_t *doc)
{
	const json_t *v = json_object_get(json_object_get(doc, "properties"),
					  "write.metadata.previous-versions-max");
	long long n = 100;
	if (json_is_string(v)) {
		char *end = NULL;
		long long x = strtoll(json_string_value(v), &end, 10);
		if (end && !*end && x >= 1)
			n = x;
	}
	return n;
}

/* Append the previous file to metadata-log and bump last-updated-ms. */
static int log_previous(tt_iceberg_meta *m, const char *previous_file, long long now_ms,
			tt_error *err)
{
	json_t *log = json_object_get(m->doc, "metadata-log");
	if (!json_is_array(log)) {
		log = json_array();
		if (!log || json_object_set_new(m->doc, "metadata-log", log) != 0)
			return tt_error_oom(err);
	}
	if (previous_file && *previous_file) {
		json_t *e = json_pack("{s:s, s:I}", "metadata-file", previous_file, "timestamp-ms",
				      (json_int_t)m->last_updated_ms);
		if (!e || json_array_append_new(log, e) != 0)
			return tt_error_oom(err);
		long long keep = previous_max(m->doc);
		while ((long long)json_array_size(log) > keep)
			json_array_remove(log, 0);
	}
	if (now_ms <= m->last_updated_ms)
		now_ms = m->last_updated_ms + 1;
	if (json_object_set_new(m->doc, "last-updated-ms", json_integer(now_ms)) != 0)
		return tt_error_oom(err);
	return 0;
}

int tt_iceberg_meta_set_ref(tt_iceberg_meta *m, const char *name, bool tag, long long snapshot_id,
			    const char *previous_file, long long now_ms, bool *changed,
			    tt_error *err)
{
	const tt_iceberg_ref *have = tt_iceberg_meta_ref(m, name);
	json_t *refs, *ref, *old;
	*changed = false;
	if (!tt_iceberg_meta_snapshot(m, snapshot_id))
		return tt_error_set(err, TT_EBACKEND, "snapshot %lld is not in the table", snapshot_id);
	if (strcmp(name, "main") == 0 && tag)
		return tt_error_set(err, TT_EUSAGE, "main is a branch");
	if (have && have->snapshot_id == snapshot_id && have->tag == tag &&
	    (strcmp(name, "main") != 0 || m->current == snapshot_id)) {
		/* Already there; a synthesised main still needs writing only if
		 * the document lacks it, which does not change the table. */
		return 0;
	}
	refs = json_object_get(m->doc, "refs");
	if (!json_is_object(refs)) {
		refs = json_object();
		if (!refs || json_object_set_new(m->doc, "refs", refs) != 0)
			return tt_error_oom(err);
	}
	/* Keep a moved ref's retention fields (a set-snapshot-ref replaces the
	 * ref whole, so they are sent again). */
	old = json_object_get(refs, name);
	ref = json_is_object(old) ? json_deep_copy(old) : json_object();
	if (!ref || json_object_set_new(ref, "snapshot-id", json_integer(snapshot_id)) != 0 ||
	    json_object_set_new(ref, "type", json_string(tag ? "tag" : "branch")) != 0 ||
	    json_object_set_new(refs, name, ref) != 0)
		return tt_error_oom(err);
	if (tag) {
		json_object_del(ref, "max-snapshot-age-ms");
		json_object_del(ref, "min-snapshots-to-keep");
	}
	if (strcmp(name, "main") == 0) {
		json_t *slog = json_object_get(m->doc, "snapshot-log");
		json_t *e;
		long long ts = now_ms > m->last_updated_ms ? now_ms : m->last_updated_ms + 1;
		if (!json_is_array(slog)) {
			slog = json_array();
			if (!slog || json_object_set_new(m->doc, "snapshot-log", slog) != 0)
				return tt_error_oom(err);
		}
		e = json_pack("{s:I, s:I}", "snapshot-id", (json_int_t)snapshot_id, "timestamp-ms",
			      (json_int_t)ts);
		if (!e || json_array_append_new(slog, e) != 0 ||
		    json_object_set_new(m->doc, "current-snapshot-id", json_integer(snapshot_id)) != 0)
			return tt_error_oom(err);
	}
	int rc = log_previous(m, previous_file, now_ms, err);
	if (rc)
		return rc;
	*changed = true;
	return index_doc(m, "table metadata", err);
}

int tt_iceberg_meta_remove_ref(tt_iceberg_meta *m, const char *name, const char *previous_file,
			       long long now_ms, bool *changed, tt_error *err)
{
	json_t *refs = json_object_get(m->doc, "refs");
	*changed = false;
	if (strcmp(name, "main") == 0)
		return tt_error_set(err, TT_EUSAGE, "the main branch is never removed");
	if (!json_is_object(refs) || !json_object_get(refs, name))
		return 0;
	json_object_del(refs, name);
	int rc = log_previous(m, previous_file, now_ms, err);
	if (rc)
		return rc;
	*changed = true;
	return index_doc(m, "table metadata", err);
}

int tt_iceberg_meta_dump(const tt_iceberg_meta *m, tt_buf *out, tt_error *err)
{
	char *text = json_dumps(m->doc, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(17));
	int rc = 0;
	if (!text)
		return tt_error_oom(err);
	if (tt_buf_puts(out, text) != 0)
		rc = tt_error_oom(err);
	free(text);
	return rc;
}

long tt_iceberg_meta_file_version(const char *location)
{
	const char *name = strrchr(location, '/');
	const char *p, *dash;
	name = name ? name + 1 : location;
	dash = strchr(name, '-');
	if (!dash || dash == name || dash - name > 9)
		return -1;
	for (p = name; p < dash; p++)
		if (*p < '0' || *p > '9')
			return -1;
	/* <digits>-<36-character uuid>.metadata.json */
	if (strlen(dash + 1) != 36 + strlen(".metadata.json") ||
	    strcmp(dash + 1 + 36, ".metadata.json") != 0)
		return -1;
	for (int i = 0; i < 36; i++) {
		char c = dash[1 + i];
		bool hyphen = i == 8 || i == 13 || i == 18 || i == 23;
		if (hyphen ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') ||
					  (c >= 'A' && c <= 'F')))
			return -1;
	}
	return strtol(name, NULL, 10);
}
