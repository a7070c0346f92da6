/*
 * The SQL text `tether query` reads itself: statements split at their
 * semicolons (db/duck_sql.c: the last one is wrapped to stream its rows, so
 * the split must be DuckDB's), the text searched for object names with its
 * comments and strings blanked, keys quoted as SQL names, and the dolt
 * server URL taken apart, string literals read out of a statement holding
 * credentials so that DuckDB's errors never repeat them.  Where libduckdb
 * loads, every split case is also split by DuckDB's own parser and the two
 * must agree, statement by statement.
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "db/duck_api.h"
#include "db/duck_session.h"
#include "db/duck_sql.h"
#include "engine/cmd/query.h"
#include "harness.h"

/* The statements of sql, "|"-joined, each trimmed of blanks. */
static char *split(const char *sql)
{
	json_t *arr = NULL;
	if (tt_duck_split_sql(sql, &arr) != 0)
		return NULL;
	size_t cap = strlen(sql) + json_array_size(arr) + 1, i;
	char *out = calloc(1, cap);
	json_t *v;
	json_array_foreach(arr, i, v) {
		const char *s = json_string_value(v);
		size_t n = strlen(s);
		while (*s == ' ' || *s == '\n')
			s++, n--;
		while (n && (s[n - 1] == ' ' || s[n - 1] == '\n'))
			n--;
		if (i)
			strcat(out, "|");
		strncat(out, s, n);
	}
	json_decref(arr);
	return out;
}

static const struct {
	const char *sql, *want;
} cases[] = {
	{ "SELECT 1", "SELECT 1" },
	{ "SELECT 1; SELECT 2;", "SELECT 1|SELECT 2" },
	/* empty statements and trailing comments are no statements */
	{ ";; SELECT 1;;; SELECT 2;;", "SELECT 1|SELECT 2" },
	{ "SELECT 1; -- done; really\n /* ; */", "SELECT 1" },
	{ "  ;  \n", "" },
	{ "-- only a comment;", "" },
	/* semicolons in strings, with doubled quotes */
	{ "SELECT 'a;b'; SELECT 'it''s; fine'", "SELECT 'a;b'|SELECT 'it''s; fine'" },
	{ "SELECT ''';'; SELECT 2", "SELECT ''';'|SELECT 2" },
	/* a backslash is an ordinary character in a plain string ... */
	{ "SELECT 'a\\'; SELECT 2", "SELECT 'a\\'|SELECT 2" },
	/* ... and an escape in an E string, only where the E starts a token */
	{ "SELECT E'it\\'s; x'; SELECT 2", "SELECT E'it\\'s; x'|SELECT 2" },
	{ "SELECT (e'x\\';y'); SELECT 2", "SELECT (e'x\\';y')|SELECT 2" },
	{ "SELECT E'a\\\\'; SELECT 2", "SELECT E'a\\\\'|SELECT 2" },
	{ "SELECT E'a''b;c'; SELECT 2", "SELECT E'a''b;c'|SELECT 2" },
	{ "SELECT somee'x;y' ; SELECT 2", "SELECT somee'x;y'|SELECT 2" },
	{ "SELECT X'3B'; SELECT N'x;y'", "SELECT X'3B'|SELECT N'x;y'" },
	/* quoted identifiers */
	{ "SELECT 1 AS \"a;\"\"b\"; SELECT 2", "SELECT 1 AS \"a;\"\"b\"|SELECT 2" },
	/* dollar quotes, with and without a tag; $1 is a parameter */
	{ "SELECT $t$ a; $x$ ; $t$; SELECT $$;$$", "SELECT $t$ a; $x$ ; $t$|SELECT $$;$$" },
	{ "SELECT $a1$ ; $a1$; SELECT 2", "SELECT $a1$ ; $a1$|SELECT 2" },
	{ "SELECT $\xc3\xa9$ ; $\xc3\xa9$; SELECT 2", "SELECT $\xc3\xa9$ ; $\xc3\xa9$|SELECT 2" },
	{ "SELECT($q$;$q$); SELECT 2", "SELECT($q$;$q$)|SELECT 2" },
	{ "SELECT \"a\"$b$;$b$; SELECT 2", "SELECT \"a\"$b$;$b$|SELECT 2" },
	/* a '$' inside a name is part of it */
	{ "SELECT 1 AS a$b$; SELECT 2 AS x$b$", "SELECT 1 AS a$b$|SELECT 2 AS x$b$" },
	/* comments: to the end of the line, and nested block comments */
	{ "SELECT 1 -- x; y\n; SELECT 2", "SELECT 1 -- x; y|SELECT 2" },
	{ "SELECT 1 -- x\r; SELECT 2", "SELECT 1 -- x\r|SELECT 2" },
	{ "SELECT 1 /* a /* b; */ c; */ ; SELECT 2", "SELECT 1 /* a /* b; */ c; */|SELECT 2" },
	{ "SELECT 1 /* /* /* */ ; */ ; */; SELECT 2", "SELECT 1 /* /* /* */ ; */ ; */|SELECT 2" },
	{ "SELECT 4 */* c; */ 2; SELECT 1", "SELECT 4 */* c; */ 2|SELECT 1" },
	{ "SELECT 1 /* ' */; SELECT '/* ;'", "SELECT 1 /* ' */|SELECT '/* ;'" },
	{ "SELECT 1 -- $$\n; SELECT $$ -- $$", "SELECT 1 -- $$|SELECT $$ -- $$" },
	{ "SELECT '--'; SELECT '*/'", "SELECT '--'|SELECT '*/'" },
};

TT_TEST(statements_split_at_the_semicolons_that_end_them)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *got = split(cases[i].sql);
		CHECK_MSG(got && strcmp(got, cases[i].want) == 0, "split(%s)\n  got  %s\n  want %s", cases[i].sql,
			  got ? got : "(null)", cases[i].want);
		free(got);
	}
}

TT_TEST(unterminated_quotes_and_comments_run_to_the_end)
{
	static const char *const sql[][2] = {
		{ "SELECT 1; SELECT 'a;b", "SELECT 1|SELECT 'a;b" },
		{ "SELECT 1; /* ; SELECT 2", "SELECT 1" },
		{ "SELECT 1; /* /* */ ; SELECT 2", "SELECT 1" },
		{ "SELECT $x$ ; SELECT 2", "SELECT $x$ ; SELECT 2" },
		{ "SELECT \"a; b", "SELECT \"a; b" },
		{ "SELECT E'\\", "SELECT E'\\" },
		{ "", "" },
	};
	for (size_t i = 0; i < sizeof sql / sizeof sql[0]; i++) {
		char *got = split(sql[i][0]);
		CHECK_MSG(got && strcmp(got, sql[i][1]) == 0, "split(%s) = %s", sql[i][0], got ? got : "(null)");
		free(got);
	}
}

#ifdef TT_HAVE_DUCKDB_H
/* DuckDB's own statement count for sql, or -1 when it does not parse. */
static long duck_count(duckdb_connection con, const char *sql)
{
	duckdb_extracted_statements ex = NULL;
	idx_t n = duckdb_extract_statements(con, sql, &ex);
	long r = n == 0 && duckdb_extract_statements_error(ex) ? -1 : (long)n;
	duckdb_destroy_extracted(&ex);
	return r;
}
#endif

TT_TEST(the_split_is_duckdbs_own)
{
#ifdef TT_HAVE_DUCKDB_H
	if (tt_duck_load(NULL) != 0) {
		if (getenv("TETHER_REQUIRE_TOOLS") && strcmp(getenv("TETHER_REQUIRE_TOOLS"), "1") == 0)
			CHECK_MSG(false, "libduckdb is required (TETHER_REQUIRE_TOOLS=1) and is missing");
		fprintf(stderr, "note: libduckdb not available; the split is not compared with DuckDB's\n");
		return;
	}
	duckdb_database db;
	duckdb_connection con;
	CHECK(duckdb_open_ext(NULL, &db, NULL, NULL) == DuckDBSuccess);
	CHECK(duckdb_connect(db, &con) == DuckDBSuccess);
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		json_t *pieces = NULL;
		CHECK(tt_duck_split_sql(cases[i].sql, &pieces) == 0);
		long n = duck_count(con, cases[i].sql);
		CHECK_MSG(n == (long)json_array_size(pieces), "%s: DuckDB finds %ld statements, the split %zu",
			  cases[i].sql, n, json_array_size(pieces));
		/* each piece alone is one statement to DuckDB */
		size_t k;
		json_t *v;
		json_array_foreach(pieces, k, v)
			CHECK_MSG(duck_count(con, json_string_value(v)) == 1, "%s: piece %zu (%s) is not one statement",
				  cases[i].sql, k, json_string_value(v));
		json_decref(pieces);
	}
	duckdb_disconnect(&con);
	duckdb_close(&db);
#endif
}

TT_TEST(names_are_looked_for_outside_comments_and_strings)
{
	static const struct {
		const char *sql, *key;
		bool named;
	} c[] = {
		{ "SELECT * FROM sales", "sales", true },
		{ "select * from SALES", "sales", true },
		{ "SELECT * FROM sales_2024", "sales", false },
		{ "SELECT * FROM old_sales", "sales", false },
		{ "SELECT * FROM \"raw/files\"", "raw/files", true },
		{ "SELECT * FROM lake.t", "lake", true },
		{ "SELECT * FROM db.public.t", "db", true },
		{ "SELECT count(*) FROM sales -- not raw/files", "raw/files", false },
		{ "SELECT count(*) FROM sales /* raw/files; /* nested */ raw/files */", "raw/files", false },
		{ "SELECT 'raw/files' AS name FROM sales", "raw/files", false },
		{ "SELECT E'raw/files\\'' FROM sales", "raw/files", false },
		{ "SELECT $$raw/files$$ FROM sales", "raw/files", false },
		{ "SELECT $q$ 'x' $q$, * FROM \"raw/files\"", "raw/files", true },
		{ "SELECT 'it''s' FROM vecs", "vecs", true },
		{ "SELECT * FROM vecs", "", false },
	};
	for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
		char *code = tt_duck_sql_code(c[i].sql);
		CHECK(code && strlen(code) == strlen(c[i].sql));
		CHECK_MSG(tt_query_names_key(code, c[i].key) == c[i].named, "%s names '%s': want %d", c[i].sql,
			  c[i].key, c[i].named);
		free(code);
	}
}

TT_TEST(keys_are_quoted_where_they_are_no_plain_identifier)
{
	static const char *const k[][2] = {
		{ "sales", "sales" },   { "_x9", "_x9" },	     { "raw/files", "\"raw/files\"" },
		{ "9lives", "\"9lives\"" }, { "a\"b", "\"a\"\"b\"" }, { "my table", "\"my table\"" },
		{ "caf\xc3\xa9", "\"caf\xc3\xa9\"" },
	};
	for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
		char *n = tt_query_sql_name(k[i][0]);
		CHECK_STR(n, k[i][1]);
		free(n);
	}
}

TT_TEST(a_dolt_server_url_comes_apart)
{
	tt_query_url u;
	CHECK_INT(tt_query_mysql_url("mysql://root:p%40ss%3Aw%2F@127.0.0.1:3307/db/abc", &u), 0);
	CHECK_STR(u.user, "root");
	CHECK_STR(u.password, "p@ss:w/");
	CHECK_STR(u.host, "127.0.0.1");
	CHECK_INT(u.port, 3307);
	tt_query_url_release(&u);
	/* no user; a '@' in the database name is no user */
	CHECK_INT(tt_query_mysql_url("mysql://db.example:3306/my@db/main", &u), 0);
	CHECK(u.user == NULL && u.password == NULL);
	CHECK_STR(u.host, "db.example");
	tt_query_url_release(&u);
	/* a user without a password, the default port */
	CHECK_INT(tt_query_mysql_url("mysql://ann@h/db", &u), 0);
	CHECK_STR(u.user, "ann");
	CHECK(u.password == NULL);
	CHECK_INT(u.port, 3306);
	tt_query_url_release(&u);
	/* a trailing '%' is no escape */
	CHECK_INT(tt_query_mysql_url("mysql://a%:b%4@h:1/x", &u), 0);
	CHECK_STR(u.user, "a%");
	CHECK_STR(u.password, "b%4");
	tt_query_url_release(&u);
	CHECK_INT(tt_query_mysql_url("postgres://h/db", &u), -1);
	CHECK_INT(tt_query_mysql_url("mysql://h:99999/db", &u), -1);
	CHECK_INT(tt_query_mysql_url("mysql://h:12x/db", &u), -1);
	CHECK_INT(tt_query_mysql_url("mysql://u@/db", &u), -1);
}

TT_TEST(string_literals_come_out_as_written)
{
	json_t *arr = NULL;
	CHECK_INT(tt_duck_sql_strings("SELECT 'a''b', E'x\\'y', $t$ 'q' $t$, $$$$, \"ident\" -- 'no'\n, ''", &arr), 0);
	char *got = json_dumps(arr, JSON_COMPACT);
	CHECK_STR(got, "[\"a'b\",\"x\\\\'y\",\" 'q' \",\"\",\"\"]");
	free(got);
	json_decref(arr);
}

TT_TEST(credentials_never_come_back_in_an_error)
{
#ifdef TT_HAVE_DUCKDB_H
	tt_duck_session *s = NULL;
	tt_error err = TT_ERROR_INIT;
	if (tt_duck_session_open(&s, &err) != 0) {
		CHECK_MSG(!(getenv("TETHER_REQUIRE_TOOLS") && strcmp(getenv("TETHER_REQUIRE_TOOLS"), "1") == 0),
			  "libduckdb is required (TETHER_REQUIRE_TOOLS=1): %s", err.message);
		tt_error_clear(&err);
		return;
	}
	/* DuckDB's conversion error repeats the string: a credential in a
	 * statement run as one is scrubbed, a string the shown form holds is not */
	CHECK(tt_duck_session_exec_secret(s, "SELECT CAST('sup3r-s3cret' AS INTEGER), CAST('shown-part' AS INTEGER)",
					  "SELECT CAST(... AS INTEGER), CAST('shown-part' AS INTEGER)", "a step", &err) < 0);
	CHECK_MSG(!strstr(err.message, "sup3r-s3cret") && strstr(err.message, "***") && strstr(err.message, "a step"),
		  "%s", err.message);
	tt_error_clear(&err);
	CHECK(tt_duck_session_exec_secret(s, "SELECT CAST('shown-part' AS INTEGER)", "'shown-part'", NULL, &err) < 0);
	CHECK_MSG(strstr(err.message, "shown-part"), "%s", err.message);
	tt_error_clear(&err);
	/* a URL's password and a password= word, in that statement or any later one */
	CHECK(tt_duck_session_exec_secret(s, "SELECT 'postgresql://ann:p%40ss-W0rd@db:5432/x', "
					  "'host=db password=w0rd-Two user=ann'", "(not shown)", NULL, &err) == 0);
	CHECK(tt_duck_session_exec(s, "SELECT CAST('p@ss-W0rd and p%40ss-W0rd and w0rd-Two' AS INTEGER)", NULL,
				   &err) < 0);
	CHECK_MSG(!strstr(err.message, "W0rd") && !strstr(err.message, "w0rd-Two"), "%s", err.message);
	tt_error_clear(&err);
	/* a secret spelled like the mark itself does not loop */
	CHECK_INT(tt_duck_session_add_secret(s, "***"), 0);
	CHECK(tt_duck_session_exec(s, "SELECT CAST('*** x' AS INTEGER)", NULL, &err) < 0);
	tt_error_clear(&err);
	tt_duck_session_close(s);
#endif
}
