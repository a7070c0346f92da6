/*
 * tt_lance - show what formats/lance_manifest and the lance backend read,
 * as JSON, for the end-to-end tests to compare with pylance.
 *
 *   tt_lance versions DIR     every attached version of the dataset root DIR
 *                             (or a branch's tree/<name>): [{version,
 *                             timestamp, branch, fragments: [{id,
 *                             physical_rows, files, deletion}], fields:
 *                             [{id, parent, name, type}]}], ascending
 *   tt_lance diff DIR A B     the backend's diff of main versions A and B
 *   tt_lance history DIR [N]  the backend's history of main (N entries)
 *
 * Exit 1 with the error on stderr when a read fails.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "core/kinds.h"
#include "formats/lance_manifest.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return x < y ? -1 : x > y;
}

static json_t *manifest_json(const tt_lance_manifest *m)
{
	json_t *frags = json_array(), *fields = json_array();
	for (size_t i = 0; i < m->nfrags; i++) {
		const tt_lance_fragment *f = &m->frags[i];
		json_t *files = json_array();
		const char *p = f->files;
		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			json_array_append_new(files, json_stringn(p, n));
			p += n + (nl ? 1 : 0);
		}
		json_t *del = f->has_deletion ? json_pack("{s:I, s:I, s:I}", "read_version",
							  (json_int_t)f->del_read_version, "id",
							  (json_int_t)f->del_id, "rows",
							  (json_int_t)f->del_rows)
					      : json_null();
		json_array_append_new(frags, json_pack("{s:I, s:I, s:o, s:o}", "id", (json_int_t)f->id,
						       "physical_rows", (json_int_t)f->physical_rows,
						       "files", files, "deletion", del));
	}
	for (size_t i = 0; i < m->nfields; i++)
		json_array_append_new(fields, json_pack("{s:i, s:i, s:s, s:s}", "id", m->fields[i].id,
							"parent", m->fields[i].parent, "name",
							m->fields[i].name, "type",
							m->fields[i].type ? m->fields[i].type : ""));
	return json_pack("{s:I, s:o, s:o, s:o, s:o}", "version", (json_int_t)m->version, "timestamp",
			 m->has_timestamp ? json_integer(m->ts_seconds) : json_null(), "branch",
			 m->branch ? json_string(m->branch) : json_null(), "fragments", frags, "fields",
			 fields);
}

static int versions(const char *root)
{
	char *vd = tt_path_join(root, "_versions");
	DIR *d = vd ? opendir(vd) : NULL;
	struct dirent *e;
	uint64_t *vs = NULL;
	size_t n = 0, alloc = 0;
	json_t *out = json_array();
	int rc = 0;

	if (!d) {
		fprintf(stderr, "cannot list %s\n", vd ? vd : root);
		free(vd);
		return 1;
	}
	while ((e = readdir(d)) != NULL) {
		uint64_t v;
		bool v2;
		if (tt_lance_manifest_name(e->d_name, &v, &v2) != 1)
			continue;
		if (TT_ARRAY_GROW(vs, alloc, n + 1) != 0)
			return 1;
		vs[n++] = v;
		char *p = tt_path_join(vd, e->d_name), why[256];
		tt_buf buf = TT_BUF_INIT;
		tt_error err = TT_ERROR_INIT;
		tt_lance_manifest m;
		if (tt_read_file(p, &buf, 256u << 20, &err) != 0 ||
		    tt_lance_manifest_parse(&m, buf.ptr, buf.len, why, sizeof why) != 0) {
			fprintf(stderr, "%s: %s\n", p, err.code ? tt_error_text(&err) : why);
			rc = 1;
		} else {
			json_array_append_new(out, manifest_json(&m));
			tt_lance_manifest_release(&m);
		}
		tt_error_clear(&err);
		tt_buf_release(&buf);
		free(p);
	}
	closedir(d);
	qsort(vs, n, sizeof *vs, cmp_u64);
	/* Ascending by version. */
	json_t *sorted = json_array();
	for (size_t i = 0; i < n; i++) {
		size_t j;
		json_t *v;
		json_array_foreach(out, j, v)
			if ((uint64_t)json_integer_value(json_object_get(v, "version")) == vs[i])
				json_array_append(sorted, v);
	}
	char *text = json_dumps(sorted, JSON_COMPACT);
	if (rc == 0 && text)
		puts(text);
	free(text);
	json_decref(sorted);
	json_decref(out);
	free(vs);
	free(vd);
	return rc;
}

static tt_backend *backend(void)
{
	tt_backend *b = NULL;
	tt_error err = TT_ERROR_INIT;
	if (tt_backend_new(&b, tt_kind_find("lance"), NULL, NULL, NULL, &err) != 0) {
		fprintf(stderr, "%s\n", tt_error_text(&err));
		b = NULL;
	}
	tt_error_clear(&err);
	return b;
}

static int diff(const char *root, const char *a, const char *bv)
{
	tt_backend *b = backend();
	tt_error err = TT_ERROR_INIT;
	tt_object_diff d;
	json_t *loc = json_pack("{s:s}", "uri", root);
	json_t *sa = json_pack("{s:s, s:I}", "branch", "main", "version", (json_int_t)atoll(a));
	json_t *sb = json_pack("{s:s, s:I}", "branch", "main", "version", (json_int_t)atoll(bv));
	int rc = 1;
	if (b && b->ops->diff(b, loc, sa, sb, NULL, NULL, &d, &err) == 0) {
		json_t *j = tt_object_diff_json(&d);
		char *text = json_dumps(j, JSON_COMPACT);
		puts(text);
		free(text);
		json_decref(j);
		rc = 0;
	} else if (b) {
		fprintf(stderr, "%s\n", tt_error_text(&err));
	}
	tt_object_diff_release(&d);
	tt_error_clear(&err);
	json_decref(loc);
	json_decref(sa);
	json_decref(sb);
	tt_backend_free(b);
	return rc;
}

static int history(const char *root, const char *limit)
{
	tt_backend *b = backend();
	tt_error err = TT_ERROR_INIT;
	tt_history_entry *h = NULL;
	size_t n = 0;
	json_t *loc = json_pack("{s:s}", "uri", root);
	int rc = 1;
	if (b && b->ops->history(b, loc, NULL, limit ? (size_t)atoll(limit) : 0, &h, &n, &err) == 0) {
		json_t *out = json_array();
		for (size_t i = 0; i < n; i++)
			json_array_append_new(out, json_pack("{s:s, s:s?, s:s, s:O}", "id", h[i].id, "when",
							     h[i].when, "message", h[i].message, "refs",
							     h[i].refs));
		char *text = json_dumps(out, JSON_COMPACT);
		puts(text);
		free(text);
		json_decref(out);
		rc = 0;
	} else if (b) {
		fprintf(stderr, "%s\n", tt_error_text(&err));
	}
	tt_history_release(h, n);
	tt_error_clear(&err);
	json_decref(loc);
	tt_backend_free(b);
	return rc;
}

int main(int argc, char **argv)
{
	if (argc >= 3 && strcmp(argv[1], "versions") == 0)
		return versions(argv[2]);
	if (argc == 5 && strcmp(argv[1], "diff") == 0)
		return diff(argv[2], argv[3], argv[4]);
	if ((argc == 3 || argc == 4) && strcmp(argv[1], "history") == 0)
		return history(argv[2], argc == 4 ? argv[3] : NULL);
	fprintf(stderr, "usage: tt_lance versions DIR | diff DIR A B | history DIR [N]\n");
	return 2;
}
