/*
 * engine/cmd/query_engines.c - the reads `tether query` makes, handed to the
 * engines users scale out on: for each object at its recorded state, the
 * code that reads exactly that state in DuckDB, Spark, Trino or Polars
 * (`tether open KEY --for ENGINE`), or a refusal saying why that engine
 * cannot address it; and a PySpark script over the whole dataset.
 *
 * Snippets never carry a credential: where one is needed they say where
 * it comes from (the engine's own configuration, or `tether open
 * --with-password`).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/cmd/query.h"
#include "util/mem.h"

static const char *s_of(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

/* A Python string literal (JSON's escapes are Python's). */
static void py(tt_buf *b, const char *s)
{
	json_t *j = json_string(s ? s : "");
	char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
	tt_buf_puts(b, t ? t : "''");
	free(t);
	json_decref(j);
}

static json_t *refused(const char *engine, const char *kind, const char *extra)
{
	char *m = tt_asprintf("%s has no reader that addresses a %s state%s", engine, kind, extra);
	json_t *r = json_pack("{s:s}", "refused", m ? m : "refused");
	free(m);
	return r;
}

static json_t *give(tt_buf *b, json_t *options)
{
	json_t *r = b->failed ? NULL : json_pack("{s:s, s:o}", "snippet", b->ptr, "options", options);
	if (!r)
		json_decref(options);
	tt_buf_release(b);
	return r;
}

static long long int_of(const json_t *o, const char *k)
{
	return (long long)json_integer_value(json_object_get(o, k));
}

/* The revision database URL of a dolt object, without its password. */
static char *dolt_url(const tt_qobj *o, const char *scheme)
{
	const char *url = s_of(o->handle, "url"), *commit = s_of(o->handle, "commit"),
		   *db = s_of(o->handle, "database");
	const char *host = url ? url + 8 : "";
	const char *at = strchr(host, '@');
	if (at)
		host = at + 1;
	const char *slash = strchr(host, '/');
	return tt_asprintf("%s%.*s/%s/%s", scheme, slash ? (int)(slash - host) : (int)strlen(host), host,
			   db ? db : "", commit ? commit : s_of(o->handle, "ref"));
}

static json_t *duckdb_snippet(const tt_qobj *o)
{
	tt_buf b = TT_BUF_INIT;
	json_t *stmts = json_array();
	size_t i;
	json_t *v;
	tt_buf_printf(&b, "-- '%s' (%s) at %s\n", o->m->key, o->m->kind, o->at ? o->at : "");
	json_array_foreach(o->exts, i, v) {
		tt_buf_printf(&b, "LOAD %s;\n", json_string_value(v));
		json_array_append_new(stmts, json_sprintf("LOAD %s", json_string_value(v)));
	}
	json_array_foreach(o->setup, i, v) {
		const json_t *shown = json_object_get(v, "shown");
		const char *sql = json_is_string(shown) ? json_string_value(shown) : s_of(v, "sql");
		if (json_is_string(shown))
			tt_buf_puts(&b, "-- credentials: add them as a DuckDB secret; tether does not print them\n");
		tt_buf_printf(&b, "%s;\n", sql);
		json_array_append_new(stmts, json_string(sql));
	}
	if (o->form == TT_QUERY_DOLT)
		tt_buf_printf(&b, "-- then, per table T: CREATE VIEW %s.T AS SELECT * FROM mysql_query('tether_dolt_%s', "
			      "'SELECT * FROM T');\n", o->name, o->m->key);
	tt_buf_printf(&b, "SELECT * FROM %s%s;\n", o->name,
		      tt_query_is_catalog(o->form) ? ".<table>"
			      : "");
	return give(&b, json_pack("{s:o}", "statements", stmts));
}

static json_t *spark_snippet(const tt_qobj *o)
{
	const char *k = o->m->kind;
	tt_buf b = TT_BUF_INIT;
	if (o->form == TT_QUERY_DELTA) {
		long long v = int_of(o->handle, "version");
		tt_buf_printf(&b, "df = spark.read.format(\"delta\").option(\"versionAsOf\", %lld).load(", v);
		py(&b, s_of(o->handle, "uri"));
		tt_buf_puts(&b, ")\n");
		return give(&b, json_pack("{s:s, s:s, s:I}", "format", "delta", "path", s_of(o->handle, "uri"),
					  "versionAsOf", (json_int_t)v));
	}
	if (o->form == TT_QUERY_ICEBERG) {
		long long sid = int_of(o->handle, "snapshot_id");
		const char *meta = s_of(o->handle, "metadata_location"), *ref = s_of(o->handle, "ref");
		tt_buf_printf(&b, "df = spark.read.format(\"iceberg\").option(\"snapshot-id\", %lld).load(", sid);
		py(&b, meta);
		tt_buf_puts(&b, ")\n");
		if (ref)
			tt_buf_printf(&b, "# the same snapshot through the catalog: spark.read.option(\"tag\", \"%s\")"
				      ".table(\"<catalog>.%s\")\n", ref, s_of(o->handle, "identifier"));
		return give(&b, json_pack("{s:s, s:s, s:I, s:s?, s:s?}", "format", "iceberg", "path", meta,
					  "snapshot-id", (json_int_t)sid, "tag", ref, "identifier",
					  s_of(o->handle, "identifier")));
	}
	if (o->form == TT_QUERY_LANCE) {
		long long v = int_of(o->handle, "version");
		if (o->branch)
			return refused("Spark", k, " off main: tether knows no lance-spark option naming a branch "
				       "(`--for polars` reads it)");
		tt_buf_printf(&b, "# needs the lance-spark connector on the classpath\n"
			      "df = spark.read.format(\"lance\").option(\"version\", %lld).load(", v);
		py(&b, s_of(o->handle, "uri"));
		tt_buf_puts(&b, ")\n");
		return give(&b, json_pack("{s:s, s:s, s:I}", "format", "lance", "path", s_of(o->handle, "uri"),
					  "version", (json_int_t)v));
	}
	if (o->form == TT_QUERY_DOLT) {
		char *url = dolt_url(o, "jdbc:mysql://");
		tt_buf_puts(&b, "# each table T of the revision database (password: `tether open KEY --with-password`)\n"
				"df = spark.read.format(\"jdbc\").option(\"url\", ");
		py(&b, url);
		tt_buf_puts(&b, ").option(\"dbtable\", \"T\").option(\"user\", USER).option(\"password\", PASSWORD).load()\n");
		json_t *opts = json_pack("{s:s, s:s?}", "format", "jdbc", "url", url);
		free(url);
		return give(&b, opts);
	}
	if (o->form == TT_QUERY_NEON) {
		tt_buf_puts(&b, "# the pin branch's read-only endpoint (`tether open KEY -r REV --with-password` "
				"gives the full URL); each table T\n"
				"df = spark.read.format(\"jdbc\").option(\"url\", \"jdbc:postgresql://HOST/DB\")"
				".option(\"dbtable\", \"public.T\").load()\n");
		return give(&b, json_pack("{s:s, s:s?}", "format", "jdbc", "endpoint", s_of(o->handle, "address")));
	}
	if (o->form == TT_QUERY_FILES) {
		size_t i;
		json_t *v;
		tt_buf_printf(&b, "df = spark.read%s.%s([", strcmp(o->format, "csv") == 0 ? ".option(\"header\", True)" : "",
			      o->format);
		json_array_foreach(o->files, i, v) {
			if (i)
				tt_buf_puts(&b, ", ");
			py(&b, json_string_value(v));
		}
		tt_buf_puts(&b, "])  # the files were the recorded state when this was printed\n");
		return give(&b, json_pack("{s:s, s:O}", "format", o->format, "paths", o->files));
	}
	return refused("Spark", k, "");
}

static json_t *trino_snippet(const tt_qobj *o)
{
	const char *k = o->m->kind;
	tt_buf b = TT_BUF_INIT;
	if (o->form == TT_QUERY_DELTA) {
		long long v = int_of(o->handle, "version");
		tt_buf_printf(&b, "-- the table at %s registered in a Delta Lake catalog as delta.SCHEMA.TABLE\n"
			      "SELECT * FROM delta.SCHEMA.TABLE FOR VERSION AS OF %lld;\n", s_of(o->handle, "uri"), v);
		return give(&b, json_pack("{s:s, s:I}", "location", s_of(o->handle, "uri"), "version", (json_int_t)v));
	}
	if (o->form == TT_QUERY_ICEBERG) {
		long long sid = int_of(o->handle, "snapshot_id");
		tt_buf_printf(&b, "SELECT * FROM iceberg.%s FOR VERSION AS OF %lld;\n", s_of(o->handle, "identifier"), sid);
		return give(&b, json_pack("{s:s?, s:I}", "table", s_of(o->handle, "identifier"), "snapshot_id",
					  (json_int_t)sid));
	}
	if (o->form == TT_QUERY_DOLT) {
		const char *db = s_of(o->handle, "database"), *c = s_of(o->handle, "commit");
		tt_buf_printf(&b, "-- a mysql catalog on the Dolt server; each table T\nSELECT * FROM mysql.\"%s/%s\".T;\n",
			      db ? db : "", c ? c : s_of(o->handle, "ref"));
		return give(&b, json_pack("{s:s?, s:s?}", "database", db, "commit", c));
	}
	if (o->form == TT_QUERY_NEON) {
		tt_buf_puts(&b, "-- a postgresql catalog on the pin branch's read-only endpoint; each table T\n"
				"SELECT * FROM CATALOG.public.T;\n");
		return give(&b, json_pack("{s:s?}", "endpoint", s_of(o->handle, "address")));
	}
	return refused("Trino", k, "");
}

static json_t *polars_snippet(const tt_qobj *o)
{
	const char *k = o->m->kind;
	tt_buf b = TT_BUF_INIT;
	if (o->form == TT_QUERY_DELTA) {
		long long v = int_of(o->handle, "version");
		tt_buf_puts(&b, "df = pl.scan_delta(");
		py(&b, s_of(o->handle, "uri"));
		tt_buf_printf(&b, ", version=%lld)\n", v);
		return give(&b, json_pack("{s:s, s:I}", "source", s_of(o->handle, "uri"), "version", (json_int_t)v));
	}
	if (o->form == TT_QUERY_ICEBERG) {
		long long sid = int_of(o->handle, "snapshot_id");
		tt_buf_puts(&b, "df = pl.scan_iceberg(");
		py(&b, s_of(o->handle, "metadata_location"));
		tt_buf_printf(&b, ", snapshot_id=%lld)\n", sid);
		return give(&b, json_pack("{s:s?, s:I}", "source", s_of(o->handle, "metadata_location"), "snapshot_id",
					  (json_int_t)sid));
	}
	if (o->form == TT_QUERY_LANCE) {
		/* the pin's tag names branch and version; else the branch's version */
		long long v = int_of(o->handle, "version");
		const char *uri = s_of(o->handle, "uri"), *tag = s_of(o->handle, "tag");
		if (tag) {
			tt_buf_puts(&b, "df = pl.scan_lance(");
			py(&b, uri);
			tt_buf_puts(&b, ", version=");
			py(&b, tag);
			tt_buf_puts(&b, ")\n");
		} else if (o->branch) {
			tt_buf_puts(&b, "import lance\ndf = pl.scan_lance(lance.dataset(");
			py(&b, uri);
			tt_buf_puts(&b, ").checkout_version((");
			py(&b, o->branch);
			tt_buf_printf(&b, ", %lld)))\n", v);
		} else {
			tt_buf_puts(&b, "df = pl.scan_lance(");
			py(&b, uri);
			tt_buf_printf(&b, ", version=%lld)\n", v);
		}
		return give(&b, json_pack("{s:s, s:I, s:s?, s:s?}", "source", uri, "version", (json_int_t)v, "tag", tag,
					  "branch", o->branch));
	}
	if (o->form == TT_QUERY_FILES) {
		size_t i;
		json_t *v;
		tt_buf_printf(&b, "df = pl.%s([", strcmp(o->format, "parquet") == 0 ? "scan_parquet"
						  : strcmp(o->format, "csv") == 0  ? "scan_csv"
										   : "scan_ndjson");
		json_array_foreach(o->files, i, v) {
			if (i)
				tt_buf_puts(&b, ", ");
			py(&b, json_string_value(v));
		}
		tt_buf_puts(&b, "])  # the files were the recorded state when this was printed\n");
		return give(&b, json_pack("{s:s, s:O}", "format", o->format, "paths", o->files));
	}
	if (o->form == TT_QUERY_DOLT) {
		char *url = dolt_url(o, "mysql://USER:PASSWORD@");
		tt_buf_puts(&b, "# each table T (password: `tether open KEY --with-password`)\n"
				"df = pl.read_database_uri(\"SELECT * FROM T\", ");
		py(&b, url);
		tt_buf_puts(&b, ")\n");
		json_t *opts = json_pack("{s:s?}", "uri", url);
		free(url);
		return give(&b, opts);
	}
	return refused("Polars", k, " (the DuckDB snippet does: `--for duckdb`, then .pl())");
}

json_t *tt_query_engine_snippet(const tt_qobj *o, const char *engine, const char *rev)
{
	json_t *r = strcmp(engine, "duckdb") == 0  ? duckdb_snippet(o)
		    : strcmp(engine, "spark") == 0 ? spark_snippet(o)
		    : strcmp(engine, "trino") == 0 ? trino_snippet(o)
						   : polars_snippet(o);
	if (r) {
		json_object_set_new(r, "at", json_string(o->at ? o->at : ""));
		json_object_set_new(r, "kind", json_string(o->m->kind));
		json_object_set_new(r, "rev", json_string(rev));
	}
	return r;
}

char *tt_query_spark_script(const tt_qobj *objs, size_t n, const char *rev)
{
	tt_buf b = TT_BUF_INIT;
	tt_buf_printf(&b, "# Every relation of the dataset at %s, as tether recorded it.\n"
		      "# Delta needs delta-spark, Iceberg iceberg-spark-runtime on the classpath.\n"
		      "from pyspark.sql import SparkSession\n\n"
		      "spark = SparkSession.builder.getOrCreate()\n",
		      rev);
	for (size_t i = 0; i < n; i++) {
		const tt_qobj *o = &objs[i];
		if (o->refused) {
			tt_buf_printf(&b, "\n# %s (%s): not a relation: %s\n", o->m->key, o->m->kind, o->refused);
			continue;
		}
		json_t *s = spark_snippet(o);
		const char *snip = s_of(s, "snippet");
		tt_buf_printf(&b, "\n# %s (%s) at %s\n", o->m->key, o->m->kind, o->at ? o->at : "");
		if (!snip) {
			tt_buf_printf(&b, "# %s\n", s_of(s, "refused") ? s_of(s, "refused") : "no Spark reader");
		} else if (o->form == TT_QUERY_DOLT || o->form == TT_QUERY_NEON || o->form == TT_QUERY_LANCE) {
			/* connector- or credential-dependent: left for the user to turn on */
			for (const char *l = snip; *l;) {
				const char *e = strchr(l, '\n');
				size_t len = e ? (size_t)(e - l) : strlen(l);
				tt_buf_printf(&b, "%s%.*s\n", l[0] == '#' ? "" : "# ", (int)len, l);
				l = e ? e + 1 : l + len;
			}
		} else {
			/* df = ...  ->  the relation registered under the key */
			const char *rhs = strncmp(snip, "df = ", 5) == 0 ? snip + 5 : NULL;
			const char *line = snip;
			while (!rhs && (line = strstr(line, "\ndf = ")) != NULL) {
				tt_buf_put(&b, snip, (size_t)(line - snip) + 1);
				rhs = line + 6;
			}
			if (rhs) {
				const char *e = strchr(rhs, '\n');
				tt_buf_printf(&b, "spark_df = %.*s\n", e ? (int)(e - rhs) : (int)strlen(rhs), rhs);
				tt_buf_puts(&b, "spark_df.createOrReplaceTempView(");
				py(&b, o->m->key);
				tt_buf_puts(&b, ")\n");
			}
		}
		json_decref(s);
	}
	tt_buf_puts(&b, "\n# e.g. spark.sql(\"SELECT count(*) FROM `KEY`\").show()\n");
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}
