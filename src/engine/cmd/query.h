/*
 * engine/cmd/query.h - `tether query`'s pieces shared by query.c (the DuckDB
 * relations and running SQL over them) and query_engines.c (the same reads
 * handed to Spark, Trino, Polars and DuckDB as code).
 */
#ifndef TT_ENGINE_QUERY_H
#define TT_ENGINE_QUERY_H

#include <stdbool.h>

#include <jansson.h>

#include "core/kinds.h"
#include "core/manifest.h"
#include "util/buf.h"

/* One object of the dataset at the revision, as a relation or not. */
typedef struct tt_qobj {
	const tt_manifest *m;
	tt_query_form form; /* how its kind is read (the kinds table's query column) */
	char *name;     /* the relation's name as SQL writes it (quoted where needed) */
	char *at;       /* the recorded state, in words ("version 3") */
	char *reader;   /* how DuckDB reads it ("delta_scan", "ATTACH (TYPE ducklake)", ...) */
	char *refused;  /* why it is no relation (then nothing else is set) */
	char *duck_refused; /* why DuckDB cannot read it, where other engines can (a query refuses it,
			     * `open --for` other engines reads it) */
	json_t *handle; /* the backend's read-only handle at the state (secret_ keys included) */
	json_t *exts;   /* DuckDB extensions it needs, in load order */
	json_t *setup;  /* [{sql, shown}]: shown is NULL for a statement without credentials */
	json_t *files;  /* file objects: the data files; format "parquet", "csv" or "json" */
	const char *format;
	char *path;     /* lance: the directory DuckDB reads (the recorded version alone) */
	char *branch;   /* lance: the branch of the recorded version (NULL: main) */
} tt_qobj;

/* The forms read as a catalog of tables (the relation is NAME.<table>). */
static inline bool tt_query_is_catalog(tt_query_form f)
{
	return f == TT_QUERY_DUCKLAKE || f == TT_QUERY_DOLT || f == TT_QUERY_NEON;
}

/* SQL quoting: "identifier" and 'literal' with the quote doubled. */
void tt_q_ident(tt_buf *b, const char *s);
void tt_q_literal(tt_buf *b, const char *s);

/* A key as SQL names it: bare when it is a plain identifier, else quoted. */
char *tt_query_sql_name(const char *key);
/* Whether code - SQL with its comments and strings blanked
 * (tt_duck_sql_code) - names key, bare or quoted, in any case. */
bool tt_query_names_key(const char *code, const char *key);

/* mysql://[USER[:PASSWORD]@]HOST[:PORT][/...]: user and password
 * percent-decoded, port 3306 when not given.  0, -1 when url is no such
 * URL (or its port no number from 1 to 65535), TT_ENOMEM. */
typedef struct tt_query_url {
	char *user, *password, *host;
	long port;
} tt_query_url;
int tt_query_mysql_url(const char *url, tt_query_url *u);
void tt_query_url_release(tt_query_url *u); /* wipes the password */

/* The directory DuckDB's lance extension reads as the version whose
 * manifest file is manifest, of the dataset (or branch tree) at root: a
 * version view in the user's cache, made if need be (query_lance.c says
 * what it holds and why it is safe).  *out: its path. */
int tt_query_lance_view(const char *root, const char *manifest, const char *key, char **out, tt_error *err);

/* The snippet and options that read o at its recorded state in engine
 * ("duckdb", "spark", "trino", "polars"): {snippet, options} or {refused}
 * (query_engines.c).  rev names the revision in comments. */
json_t *tt_query_engine_snippet(const tt_qobj *o, const char *engine, const char *rev);
/* A PySpark script reading every relation of objs (query_engines.c). */
char *tt_query_spark_script(const tt_qobj *objs, size_t n, const char *rev);

#endif
