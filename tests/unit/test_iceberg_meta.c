/*
 * Iceberg table metadata: files pyiceberg 0.12 wrote (format v1 and v2, an
 * empty table) and a v3 document shaped after the spec's fixture, read
 * natively; ref edits as a catalog commit applies them; malformed input.
 */
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "harness.h"

#include "backends/iceberg/iceberg_meta.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"

static int load(const char *name, tt_iceberg_meta *m, tt_error *err)
{
	const char *src = getenv("TETHER_SOURCE_DIR");
	char *path = tt_asprintf("%s/tests/unit/data/iceberg/%s", src ? src : ".", name);
	tt_buf b = TT_BUF_INIT;
	int rc = path ? tt_read_file(path, &b, 0, err) : TT_ENOMEM;
	if (rc == 0)
		rc = tt_iceberg_meta_parse(b.ptr, b.len, name, m, err);
	tt_buf_release(&b);
	free(path);
	return rc;
}

static int parse_text(const char *text, tt_iceberg_meta *m, tt_error *err)
{
	return tt_iceberg_meta_parse(text, strlen(text), "t.json", m, err);
}

typedef struct collect {
	long long ids[16];
	size_t n;
} collect;

static int collect_step(const tt_iceberg_snapshot *s, void *ctx, tt_error *err)
{
	collect *c = ctx;
	(void)err;
	if (c->n < 16)
		c->ids[c->n++] = s->id;
	return 0;
}

TT_TEST(pyiceberg_v2_refs_snapshots_and_summaries)
{
	tt_error err = TT_ERROR_INIT;
	tt_iceberg_meta m;
	collect c = { { 0 }, 0 };
	CHECK_MSG(load("v2.metadata.json", &m, &err) == 0, "%s", err.message);
	CHECK_INT(m.format_version, 2);
	CHECK_INT(m.nsnaps, 3);
	CHECK_INT(m.current, 9006374795507350469LL);
	CHECK_STR(m.uuid, "f16513c8-3b25-4de0-8807-6be41c64ec65");
	const tt_iceberg_ref *main_ = tt_iceberg_meta_ref(&m, "main");
	const tt_iceberg_ref *tg = tt_iceberg_meta_ref(&m, "tg");
	const tt_iceberg_ref *br = tt_iceberg_meta_ref(&m, "br");
	CHECK(main_ && !main_->tag && main_->snapshot_id == m.current);
	CHECK(tg && tg->tag && tg->snapshot_id == 1379632503474153915LL);
	CHECK(br && !br->tag && br->snapshot_id == 6868927327107741373LL);
	const tt_iceberg_snapshot *s = tt_iceberg_meta_snapshot(&m, m.current);
	CHECK(s && s->parent == 6868927327107741373LL && s->sequence == 3);
	CHECK_STR(tt_iceberg_summary(s, "operation"), "append");
	CHECK_STR(tt_iceberg_summary(s, "added-records"), "3");
	CHECK_STR(tt_iceberg_summary(s, "total-records"), "6");
	CHECK(tt_iceberg_meta_ancestry(&m, m.current, collect_step, &c, &err) == 0);
	CHECK_INT(c.n, 3);
	CHECK_INT(c.ids[2], 1379632503474153915LL);
	CHECK(tt_iceberg_meta_is_ancestor(&m, tg->snapshot_id, m.current));
	CHECK(!tt_iceberg_meta_is_ancestor(&m, m.current, tg->snapshot_id));
	CHECK(tt_iceberg_meta_is_ancestor(&m, TT_ICEBERG_NO_SNAPSHOT, tg->snapshot_id));
	CHECK(!tt_iceberg_meta_snapshot(&m, 42));
	tt_iceberg_meta_release(&m);
}

TT_TEST(pyiceberg_v1_and_the_empty_table)
{
	tt_error err = TT_ERROR_INIT;
	tt_iceberg_meta m;
	CHECK_MSG(load("v1.metadata.json", &m, &err) == 0, "%s", err.message);
	CHECK_INT(m.format_version, 1);
	CHECK_INT(m.nsnaps, 3);
	CHECK(tt_iceberg_meta_ref(&m, "main")->snapshot_id == m.current);
	tt_iceberg_meta_release(&m);
	CHECK_MSG(load("empty.metadata.json", &m, &err) == 0, "%s", err.message);
	CHECK_INT(m.current, -1);
	CHECK_INT(m.nsnaps, 0);
	CHECK(!tt_iceberg_meta_ref(&m, "main"));
	tt_iceberg_meta_release(&m);
}

TT_TEST(v3_row_lineage_and_a_main_without_refs)
{
	tt_error err = TT_ERROR_INIT;
	tt_iceberg_meta m;
	CHECK_MSG(load("v3.metadata.json", &m, &err) == 0, "%s", err.message);
	CHECK_INT(m.format_version, 3);
	CHECK_STR(tt_iceberg_summary(tt_iceberg_meta_snapshot(&m, m.current), "deleted-records"), "4");
	tt_iceberg_meta_release(&m);
	/* No refs map: main is the current snapshot; null current means none. */
	CHECK(parse_text("{\"format-version\":1,\"location\":\"/t\",\"current-snapshot-id\":5,"
			 "\"snapshots\":[{\"snapshot-id\":5,\"timestamp-ms\":1}]}", &m, &err) == 0);
	CHECK(tt_iceberg_meta_ref(&m, "main") && tt_iceberg_meta_ref(&m, "main")->snapshot_id == 5);
	tt_iceberg_meta_release(&m);
	CHECK(parse_text("{\"format-version\":3,\"table-uuid\":\"u\",\"location\":\"/t\","
			 "\"current-snapshot-id\":null}", &m, &err) == 0);
	CHECK_INT(m.current, -1);
	tt_iceberg_meta_release(&m);
}

TT_TEST(gzip_compressed_metadata)
{
	tt_error err = TT_ERROR_INIT;
	tt_iceberg_meta m;
	const char *text = "{\"format-version\":2,\"table-uuid\":\"u\",\"location\":\"/t\","
			   "\"current-snapshot-id\":-1,\"snapshots\":[]}";
	unsigned char out[512];
	z_stream zs;
	memset(&zs, 0, sizeof zs);
	CHECK(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) == Z_OK);
	zs.next_in = (unsigned char *)text;
	zs.avail_in = (uInt)strlen(text);
	zs.next_out = out;
	zs.avail_out = sizeof out;
	CHECK(deflate(&zs, Z_FINISH) == Z_STREAM_END);
	size_t n = sizeof out - zs.avail_out;
	deflateEnd(&zs);
	CHECK_MSG(tt_iceberg_meta_parse(out, n, "t.gz", &m, &err) == 0, "%s", err.message);
	CHECK_INT(m.format_version, 2);
	tt_iceberg_meta_release(&m);
	CHECK(tt_iceberg_meta_parse(out, n / 2, "t.gz", &m, &err) == TT_EPARSE);
	tt_iceberg_meta_release(&m);
	tt_error_clear(&err);
}

TT_TEST(set_and_remove_refs_as_a_commit_does)
{
	tt_error err = TT_ERROR_INIT;
	tt_iceberg_meta m;
	bool changed;
	tt_buf out = TT_BUF_INIT;
	CHECK_MSG(load("v3.metadata.json", &m, &err) == 0, "%s", err.message);
	long long first = 3051729675574597004LL, head = m.current, before = m.last_updated_ms;
	CHECK(tt_iceberg_meta_set_ref(&m, "tether.x", true, first, "prev-1", before + 10, &changed,
				      &err) == 0 && changed);
	CHECK(tt_iceberg_meta_ref(&m, "tether.x")->tag);
	CHECK_INT(m.current, head);
	CHECK_INT(m.last_updated_ms, before + 10);
	/* The same again: nothing changes. */
	CHECK(tt_iceberg_meta_set_ref(&m, "tether.x", true, first, "prev-2", before + 20, &changed,
				      &err) == 0 && !changed);
	/* Moving main sets the current snapshot and the snapshot log. */
	CHECK(tt_iceberg_meta_set_ref(&m, "main", false, first, "prev-2", before + 30, &changed,
				      &err) == 0 && changed);
	CHECK_INT(m.current, first);
	CHECK_INT(json_array_size(json_object_get(m.doc, "snapshot-log")), 3);
	/* metadata-log trimmed to write.metadata.previous-versions-max = 2. */
	const json_t *log = json_object_get(m.doc, "metadata-log");
	CHECK_INT(json_array_size(log), 2);
	CHECK_STR(json_string_value(json_object_get(json_array_get(log, 1), "metadata-file")), "prev-2");
	CHECK(tt_iceberg_meta_set_ref(&m, "nope", false, 12345, "p", before + 40, &changed, &err) ==
	      TT_EBACKEND);
	tt_error_clear(&err);
	CHECK(tt_iceberg_meta_remove_ref(&m, "tether.x", "prev-3", before + 50, &changed, &err) == 0 &&
	      changed);
	CHECK(!tt_iceberg_meta_ref(&m, "tether.x"));
	CHECK(tt_iceberg_meta_remove_ref(&m, "main", "p", before + 60, &changed, &err) == TT_EUSAGE);
	tt_error_clear(&err);
	/* What is written reads back the same, big ids and defaults intact. */
	CHECK(tt_iceberg_meta_dump(&m, &out, &err) == 0);
	CHECK(strstr(out.ptr, "\"initial-default\":1") != NULL);
	tt_iceberg_meta again;
	CHECK(tt_iceberg_meta_parse(out.ptr, out.len, "again", &again, &err) == 0);
	CHECK_INT(again.current, first);
	CHECK_INT(again.nsnaps, 2);
	tt_iceberg_meta_release(&again);
	tt_buf_release(&out);
	tt_iceberg_meta_release(&m);
}

TT_TEST(file_versions)
{
	CHECK_INT(tt_iceberg_meta_file_version(
			  "file:///w/t/metadata/00004-9ad24e88-0fd3-4053-828b-99a63c541814.metadata.json"), 4);
	CHECK_INT(tt_iceberg_meta_file_version("/w/t/metadata/v3.metadata.json"), -1);
	CHECK_INT(tt_iceberg_meta_file_version("/w/00001-notauuid.metadata.json"), -1);
}

TT_TEST(malformed_metadata_is_a_parse_error_naming_the_field)
{
	static const char *const bad[][2] = {
		{ "[]", "JSON object" },
		{ "{\"location\":\"/t\"}", "format-version" },
		{ "{\"format-version\":4,\"location\":\"/t\"}", "format version 4" },
		{ "{\"format-version\":2,\"location\":\"/t\"}", "table-uuid" },
		{ "{\"format-version\":1}", "location" },
		{ "{\"format-version\":1,\"location\":\"/t\",\"snapshots\":{}}", "snapshots" },
		{ "{\"format-version\":1,\"location\":\"/t\",\"snapshots\":[{\"snapshot-id\":\"1\"}]}",
		  "snapshot-id" },
		{ "{\"format-version\":1,\"location\":\"/t\",\"snapshots\":[{\"snapshot-id\":1},"
		  "{\"snapshot-id\":1}]}", "share" },
		{ "{\"format-version\":1,\"location\":\"/t\",\"refs\":{\"a\":{\"snapshot-id\":1,"
		  "\"type\":\"other\"}}}", "ref 'a'" },
		{ "{\"format-version\":1,\"location\":\"/t\",\"current-snapshot-id\":\"x\"}",
		  "current-snapshot-id" },
		{ "{\"format-version\":", "t.json" },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		tt_error err = TT_ERROR_INIT;
		tt_iceberg_meta m;
		int rc = parse_text(bad[i][0], &m, &err);
		tt_iceberg_meta_release(&m);
		CHECK_MSG(rc == TT_EPARSE && err.message && strstr(err.message, bad[i][1]) &&
				  strstr(err.message, "t.json"),
			  "%s -> %d %s", bad[i][0], rc, err.message ? err.message : "");
		tt_error_clear(&err);
	}
}

TT_TEST(a_parent_cycle_ends_the_walk)
{
	tt_error err = TT_ERROR_INIT;
	tt_iceberg_meta m;
	collect c = { { 0 }, 0 };
	CHECK(parse_text("{\"format-version\":1,\"location\":\"/t\",\"current-snapshot-id\":1,"
			 "\"snapshots\":[{\"snapshot-id\":1,\"parent-snapshot-id\":2},"
			 "{\"snapshot-id\":2,\"parent-snapshot-id\":1}]}", &m, &err) == 0);
	CHECK(tt_iceberg_meta_ancestry(&m, 1, collect_step, &c, &err) == 0);
	CHECK_INT(c.n, 2);
	CHECK(!tt_iceberg_meta_is_ancestor(&m, 3, 1));
	tt_iceberg_meta_release(&m);
}
