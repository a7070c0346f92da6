/* backends/delta/delta_log.c - readers of one Delta log file (see delta.h). */
#include "backends/delta/delta.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "formats/thrift.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/num.h"
#include "util/mem.h"

void tt_delta_commit_release(tt_delta_commit *c)
{
	if (!c)
		return;
	free(c->operation);
	free(c->table_id);
	memset(c, 0, sizeof *c);
}

/* --- commits --------------------------------------------------------------------- */

/* A metric's value: a JSON integer (delta-rs) or a string of digits (Spark);
 * -1 for anything else. */
static long long metric_value(const json_t *v)
{
	if (json_is_integer(v))
		return json_integer_value(v) >= 0 ? (long long)json_integer_value(v) : -1;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		char *end = NULL;
		if (!*s || *s < '0' || *s > '9')
			return -1;
		errno = 0;
		long long n = strtoll(s, &end, 10);
		return errno || *end ? -1 : n;
	}
	return -1;
}

/* The first of names the metrics carry. */
static long long first_metric(const json_t *m, const char *const *names)
{
	for (; *names; names++) {
		long long v = metric_value(json_object_get(m, *names));
		if (v >= 0)
			return v;
	}
	return -1;
}

#define NAMES(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Spark writes camelCase keys with string values, delta-rs snake_case keys
 * with numbers; both name the same few quantities. */
static void read_metrics(const json_t *m, const char *operation, tt_delta_metrics *out)
{
	bool merge = operation && strstr(operation, "MERGE");
	out->added_rows = first_metric(m, NAMES("num_added_rows", "num_target_rows_inserted",
						"numTargetRowsInserted"));
	/* Spark's WRITE counts its output rows; a MERGE's output rows include
	 * the copied ones, so they are not additions. */
	if (out->added_rows < 0 && !merge)
		out->added_rows = first_metric(m, NAMES("numOutputRows", "num_output_rows"));
	out->deleted_rows = first_metric(m, NAMES("num_deleted_rows", "numDeletedRows",
						  "num_target_rows_deleted", "numTargetRowsDeleted"));
	out->updated_rows = first_metric(m, NAMES("num_updated_rows", "numUpdatedRows",
						  "num_target_rows_updated", "numTargetRowsUpdated"));
	out->added_files = first_metric(m, NAMES("num_added_files", "num_files_added",
						 "numAddedFiles", "numTargetFilesAdded", "numFiles"));
	out->removed_files = first_metric(m, NAMES("num_removed_files", "num_files_removed",
						   "numRemovedFiles", "numTargetFilesRemoved"));
}

/* Does s[0..n) contain needle (nlen > 0)? */
static bool contains(const char *s, size_t n, const char *needle, size_t nlen)
{
	for (const char *p = s; n >= nlen && (p = memchr(p, needle[0], n - nlen + 1)) != NULL; p++) {
		if (memcmp(p, needle, nlen) == 0)
			return true;
		n -= (size_t)(p + 1 - s);
		s = p + 1;
	}
	return false;
}

/* Calls fn(ctx, action object, line json) for every non-blank line. */
typedef int (*line_fn)(void *ctx, const json_t *line, tt_error *err);

/* Lines that cannot hold the action `only` names (NULL: every line is read)
 * are skipped unparsed. */
static int each_line(const char *text, size_t len, const char *what, const char *only,
		     line_fn fn, void *ctx, tt_error *err)
{
	size_t olen = only ? strlen(only) : 0;
	size_t pos = 0, lineno = 0;
	int rc = 0;

	while (pos < len && rc == 0) {
		const char *start = text + pos;
		const char *nl = memchr(start, '\n', len - pos);
		size_t n = nl ? (size_t)(nl - start) : len - pos;
		pos += n + (nl ? 1 : 0);
		lineno++;
		size_t k = 0;
		while (k < n && (start[k] == ' ' || start[k] == '\t' || start[k] == '\r'))
			k++;
		if (k == n || (only && !contains(start, n, only, olen)))
			continue;
		char *where = tt_asprintf("%s (line %zu)", what, lineno);
		if (!where)
			return tt_error_oom(err);
		json_t *v = tt_json_parse(start, n, where, err);
		if (!v) {
			free(where);
			return err ? err->code : TT_EPARSE;
		}
		if (!json_is_object(v))
			rc = tt_error_set(err, TT_EPARSE, "%s: an action must be a JSON object", where);
		else
			rc = fn(ctx, v, err);
		json_decref(v);
		free(where);
	}
	return rc;
}

static int commit_line(void *ctx, const json_t *line, tt_error *err)
{
	tt_delta_commit *c = ctx;
	json_t *ci = json_object_get(line, "commitInfo");
	json_t *md = json_object_get(line, "metaData");

	if (json_is_object(md)) {
		json_t *id = json_object_get(md, "id");
		if (json_is_string(id)) {
			free(c->table_id);
			if (!(c->table_id = tt_strdup(json_string_value(id))))
				return tt_error_oom(err);
		}
	}
	if (json_is_object(ci)) {
		json_t *op = json_object_get(ci, "operation");
		json_t *ict = json_object_get(ci, "inCommitTimestamp");
		json_t *ts = json_object_get(ci, "timestamp");
		c->has_commit_info = true;
		if (json_is_string(op)) {
			free(c->operation);
			if (!(c->operation = tt_strdup(json_string_value(op))))
				return tt_error_oom(err);
		}
		read_metrics(json_object_get(ci, "operationMetrics"), c->operation, &c->metrics);
		if (json_is_integer(ict)) {
			c->has_ict = true;
			c->ict_ms = json_integer_value(ict);
		}
		if (json_is_integer(ts)) {
			c->has_timestamp = true;
			c->timestamp_ms = json_integer_value(ts);
		}
	}
	return 0;
}

int tt_delta_parse_commit(const char *text, size_t len, const char *what, tt_delta_commit *out,
			  tt_error *err)
{
	memset(out, 0, sizeof *out);
	out->metrics = (tt_delta_metrics){ -1, -1, -1, -1, -1 };
	int rc = each_line(text, len, what, NULL, commit_line, out, err);
	if (rc)
		tt_delta_commit_release(out);
	return rc;
}

int tt_delta_parse_commit_info(const char *text, size_t len, const char *what,
			       tt_delta_commit *out, tt_error *err)
{
	memset(out, 0, sizeof *out);
	out->metrics = (tt_delta_metrics){ -1, -1, -1, -1, -1 };
	int rc = each_line(text, len, what, "\"commitInfo\"", commit_line, out, err);
	if (rc)
		tt_delta_commit_release(out);
	return rc;
}

typedef struct files_ctx {
	tt_delta_file_fn fn;
	void *ctx;
} files_ctx;

/* Z85 (ZeroMQ's base-85): five characters to four bytes, big-endian. */
static int z85_digit(char c)
{
	static const char alphabet[] =
		"0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#";
	const char *at = c ? strchr(alphabet, c) : NULL;
	return at ? (int)(at - alphabet) : -1;
}

int tt_delta_dv_file(const char *storage_type, const char *value, size_t len, char **path)
{
	*path = NULL;
	errno = 0;
	if (strcmp(storage_type, "i") == 0)
		return 0;
	if (memchr(value, 0, len))
		return -1;
	if (strcmp(storage_type, "p") == 0) {
		if (!len)
			return -1;
		*path = tt_strndup(value, len);
		return *path ? 0 : -1;
	}
	if (strcmp(storage_type, "u") != 0 || len < 20)
		return -1;
	unsigned char id[16];
	const char *z = value + len - 20;
	for (int g = 0; g < 4; g++) {
		uint64_t v = 0;
		for (int k = 0; k < 5; k++) {
			int d = z85_digit(z[g * 5 + k]);
			if (d < 0)
				return -1;
			v = v * 85 + (uint64_t)d;
		}
		if (v > UINT32_MAX)
			return -1;
		for (int k = 0; k < 4; k++)
			id[g * 4 + k] = (unsigned char)(v >> (24 - 8 * k));
	}
	char hex[33];
	tt_hex(hex, id, sizeof id);
	size_t plen = len - 20;
	*path = tt_asprintf("%.*s%sdeletion_vector_%.8s-%.4s-%.4s-%.4s-%.12s.bin", (int)plen, value,
			    plen ? "/" : "", hex, hex + 8, hex + 12, hex + 16, hex + 20);
	if (!*path)
		errno = ENOMEM;
	return *path ? 0 : -1;
}

/* The deletion vector an add or remove action names: its file to fn. */
static int dv_of(const files_ctx *f, const json_t *action, tt_delta_file_action kind,
		 tt_error *err)
{
	json_t *dv = json_object_get(action, "deletionVector");
	if (!json_is_object(dv))
		return 0;
	json_t *type = json_object_get(dv, "storageType");
	json_t *value = json_object_get(dv, "pathOrInlineDv");
	char *path;
	if (!json_is_string(type) || !json_is_string(value) ||
	    tt_delta_dv_file(json_string_value(type), json_string_value(value),
			     json_string_length(value), &path) != 0) {
		if (errno == ENOMEM)
			return tt_error_oom(err);
		return tt_error_set(err, TT_EPARSE, "a deletion vector's descriptor is malformed "
				    "(storageType %s, pathOrInlineDv %s)",
				    json_is_string(type) ? json_string_value(type) : "missing",
				    json_is_string(value) ? json_string_value(value) : "missing");
	}
	int rc = path ? f->fn(f->ctx, kind, path, err) : 0;
	free(path);
	return rc;
}

static int files_line(void *ctx, const json_t *line, tt_error *err)
{
	files_ctx *f = ctx;
	static const char *const keys[] = { "add", "remove", "sidecar" };
	static const tt_delta_file_action actions[] = { TT_DELTA_ADD, TT_DELTA_REMOVE,
							TT_DELTA_SIDECAR };
	static const tt_delta_file_action dvs[] = { TT_DELTA_ADD_DV, TT_DELTA_REMOVE_DV };
	for (int i = 0; i < 3; i++) {
		json_t *a = json_object_get(line, keys[i]);
		json_t *p = json_is_object(a) ? json_object_get(a, "path") : NULL;
		if (!json_is_string(p))
			continue;
		int rc = f->fn(f->ctx, actions[i], json_string_value(p), err);
		if (rc == 0 && i < 2)
			rc = dv_of(f, a, dvs[i], err);
		if (rc)
			return rc;
	}
	return 0;
}

int tt_delta_commit_files(const char *text, size_t len, const char *what, tt_delta_file_fn fn,
			  void *ctx, tt_error *err)
{
	files_ctx f = { fn, ctx };
	return each_line(text, len, what, NULL, files_line, &f, err);
}

/* --- the Parquet footer (Thrift compact protocol) ------------------------------------ */

/* What the footer scan found for the metaData.id column. */
typedef struct id_scan {
	const unsigned char *value;   /* the agreed value so far */
	size_t len;
	bool conflict;                /* two row groups disagree, or min != max */
	bool found_column;
} id_scan;

/* Statistics { 1: max, 2: min, 3: null_count, 4: distinct_count,
 * 5: max_value, 6: min_value, ... }: the single value min == max names. */
static void read_statistics(tt_thrift *r, id_scan *s)
{
	const unsigned char *v[7] = { 0 };
	size_t n[7] = { 0 };
	int16_t last = 0, id = 0;
	for (;;) {
		int t = tt_thrift_field(r, &last, &id);
		if (r->bad || t == TT_CT_STOP)
			break;
		if (t == TT_CT_BINARY && id >= 1 && id <= 6 && id != 3 && id != 4)
			v[id] = tt_thrift_binary(r, &n[id]);
		else
			tt_thrift_skip(r, t);
	}
	if (r->bad)
		return;
	const unsigned char *mn = v[6] ? v[6] : v[2], *mx = v[5] ? v[5] : v[1];
	size_t mnl = v[6] ? n[6] : n[2], mxl = v[5] ? n[5] : n[1];
	if (!mn || !mx)
		return; /* no statistics in this row group (say, all null) */
	if (mnl != mxl || memcmp(mn, mx, mnl) != 0) {
		s->conflict = true;
		return;
	}
	if (s->value && (s->len != mnl || memcmp(s->value, mn, mnl) != 0)) {
		s->conflict = true;
		return;
	}
	s->value = mn;
	s->len = mnl;
}

/* ColumnMetaData { 3: path_in_schema list<string>, 12: statistics, ... }. */
static void read_column_meta(tt_thrift *r, id_scan *s)
{
	int16_t last = 0, id = 0;
	bool is_id = false;
	const unsigned char *stats = NULL;
	for (;;) {
		int t = tt_thrift_field(r, &last, &id);
		if (r->bad || t == TT_CT_STOP)
			break;
		if (id == 3 && t == TT_CT_LIST) {
			int et;
			uint64_t count = tt_thrift_list(r, &et);
			const unsigned char *part[2] = { 0 };
			size_t plen[2] = { 0 };
			for (uint64_t i = 0; i < count && !r->bad; i++) {
				size_t l;
				const unsigned char *b = et == TT_CT_BINARY ? tt_thrift_binary(r, &l) : NULL;
				if (et != TT_CT_BINARY)
					tt_thrift_skip_elem(r, et);
				if (i < 2) {
					part[i] = b;
					plen[i] = b ? l : 0;
				}
			}
			is_id = count == 2 && part[0] && part[1] && plen[0] == 8 &&
				memcmp(part[0], "metaData", 8) == 0 && plen[1] == 2 &&
				memcmp(part[1], "id", 2) == 0;
		} else if (id == 12 && t == TT_CT_STRUCT) {
			stats = r->p;
			tt_thrift_skip_struct(r);
		} else {
			tt_thrift_skip(r, t);
		}
	}
	if (r->bad || !is_id)
		return;
	s->found_column = true;
	if (stats) {
		tt_thrift sub = { stats, r->end, false };
		read_statistics(&sub, s);
		if (sub.bad)
			r->bad = true;
	}
}

/* ColumnChunk { 3: meta_data ColumnMetaData, ... }. */
static void read_column_chunk(tt_thrift *r, id_scan *s)
{
	int16_t last = 0, id = 0;
	for (;;) {
		int t = tt_thrift_field(r, &last, &id);
		if (r->bad || t == TT_CT_STOP)
			return;
		if (id == 3 && t == TT_CT_STRUCT)
			read_column_meta(r, s);
		else
			tt_thrift_skip(r, t);
	}
}

/* RowGroup { 1: columns list<ColumnChunk>, ... }. */
static void read_row_group(tt_thrift *r, id_scan *s)
{
	int16_t last = 0, id = 0;
	for (;;) {
		int t = tt_thrift_field(r, &last, &id);
		if (r->bad || t == TT_CT_STOP)
			return;
		if (id == 1 && t == TT_CT_LIST) {
			int et;
			uint64_t count = tt_thrift_list(r, &et);
			for (uint64_t i = 0; i < count && !r->bad; i++) {
				if (et == TT_CT_STRUCT)
					read_column_chunk(r, s);
				else
					tt_thrift_skip_elem(r, et);
			}
		} else {
			tt_thrift_skip(r, t);
		}
	}
}

int tt_delta_footer_length(const unsigned char tail[8], const char *what, uint32_t *len,
			   tt_error *err)
{
	if (memcmp(tail + 4, "PAR1", 4) != 0)
		return tt_error_set(err, TT_EPARSE,
				    "%s: not a Parquet file (no PAR1 trailer; truncated?)", what);
	*len = tt_le32(tail);
	return 0;
}

int tt_delta_footer_table_id(const unsigned char *data, size_t len, const char *what, char **id,
			     tt_error *err)
{
	uint32_t flen;
	int rc;
	id_scan s = { 0 };

	*id = NULL;
	if (len < 12)
		return tt_error_set(err, TT_EPARSE, "%s: too short to be Parquet (%zu bytes)", what,
				    len);
	if ((rc = tt_delta_footer_length(data + len - 8, what, &flen, err)) != 0)
		return rc;
	if (flen > len - 8)
		return tt_error_set(err, TT_EPARSE,
				    "%s: the Parquet footer says %u bytes but the file has only %zu "
				    "(truncated?)", what, flen, len - 8);
	/* FileMetaData { 1: version, 2: schema, 3: num_rows, 4: row_groups, ... } */
	tt_thrift r = { data + len - 8 - flen, data + len - 8, false };
	int16_t last = 0, fid = 0;
	for (;;) {
		int t = tt_thrift_field(&r, &last, &fid);
		if (r.bad || t == TT_CT_STOP)
			break;
		if (fid == 4 && t == TT_CT_LIST) {
			int et;
			uint64_t count = tt_thrift_list(&r, &et);
			for (uint64_t i = 0; i < count && !r.bad; i++) {
				if (et == TT_CT_STRUCT)
					read_row_group(&r, &s);
				else
					tt_thrift_skip_elem(&r, et);
			}
		} else {
			tt_thrift_skip(&r, t);
		}
	}
	if (r.bad)
		return tt_error_set(err, TT_EPARSE, "%s: the Parquet footer is malformed (truncated?)",
				    what);
	if (!s.found_column)
		return tt_error_set(err, TT_EPARSE,
				    "%s: a Delta checkpoint must have a metaData.id column", what);
	if (s.conflict || !s.value)
		return 0; /* not said: unknown, never a guess */
	if (!tt_utf8_valid((const char *)s.value, s.len) || memchr(s.value, 0, s.len))
		return 0;
	if (!(*id = tt_strndup((const char *)s.value, s.len)))
		return tt_error_oom(err);
	return 0;
}
