/*
 * cli/cmd_query.c - `tether query`: SQL over every object of the dataset at
 * a revision (tt_repo_query), printed as an aligned table, CSV or JSON as
 * the rows arrive; and `--schema`, `--explain`, `--for ENGINE`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/help.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/mem.h"

typedef enum { OUT_TABLE, OUT_CSV, OUT_JSON } out_format;

typedef struct printer {
	out_format format;
	size_t ncols;
	char **names;
	size_t rows;        /* rows seen */
	long long limit;    /* the table's: rows kept for printing */
	char **kept;        /* table: limit * ncols cells (NULL = SQL NULL) */
	size_t nkept;
	bool first;
} printer;

static int on_columns(void *ctx, size_t n, const char *const *names)
{
	printer *p = ctx;
	p->ncols = n;
	p->names = tt_calloc(n ? n : 1, sizeof *p->names);
	if (!p->names)
		return TT_ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (!(p->names[i] = tt_strdup(names[i])))
			return TT_ENOMEM;
	if (p->format == OUT_CSV) {
		for (size_t i = 0; i < n; i++) {
			if (i)
				putchar(',');
			const char *s = names[i];
			bool q = strpbrk(s, ",\"\r\n") != NULL;
			if (q)
				putchar('"');
			for (; *s; s++) {
				if (*s == '"' && q)
					putchar('"');
				putchar(*s);
			}
			if (q)
				putchar('"');
		}
		putchar('\n');
	} else if (p->format == OUT_JSON) {
		fputs("[", stdout);
	}
	return 0;
}

static void csv_cell(const char *s, size_t len)
{
	bool q = len == 0 || memchr(s, ',', len) || memchr(s, '"', len) || memchr(s, '\n', len) ||
		 memchr(s, '\r', len);
	if (q)
		putchar('"');
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '"')
			putchar('"');
		putchar(s[i]);
	}
	if (q)
		putchar('"');
}

static int on_row(void *ctx, size_t n, const char *const *cells, const size_t *lens)
{
	printer *p = ctx;
	p->rows++;
	if (p->format == OUT_CSV) {
		for (size_t i = 0; i < n; i++) {
			if (i)
				putchar(',');
			if (cells[i])
				csv_cell(cells[i], lens[i]);
		}
		putchar('\n');
	} else if (p->format == OUT_JSON) {
		fputs(p->first ? "\n  {" : ",\n  {", stdout);
		p->first = false;
		for (size_t i = 0; i < n; i++) {
			json_t *k = json_string(i < p->ncols ? p->names[i] : "");
			char *ks = k ? json_dumps(k, JSON_ENCODE_ANY) : NULL;
			printf("%s%s: ", i ? ", " : "", ks ? ks : "\"\"");
			free(ks);
			json_decref(k);
			if (cells[i])
				fwrite(cells[i], 1, lens[i], stdout);
			else
				fputs("null", stdout);
		}
		putchar('}');
	} else if ((long long)p->nkept < p->limit) {
		char **row = p->kept + p->nkept * n;
		for (size_t i = 0; i < n; i++)
			if (cells[i] && !(row[i] = tt_strndup(cells[i], lens[i])))
				return TT_ENOMEM;
		p->nkept++;
	}
	return ferror(stdout) ? TT_EIO : 0;
}

/* Display width of a UTF-8 string (code points; control characters as one). */
static size_t width_of(const char *s)
{
	size_t w = 0;
	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			w++;
	return w;
}

/* Print s cut to w columns (an ellipsis marks a cut), padded to w. */
static void put_cell(const char *s, size_t w, bool right)
{
	size_t have = width_of(s);
	if (have > w) {
		size_t cols = 0;
		for (const char *c = s; *c; c++) {
			if (((unsigned char)*c & 0xC0) != 0x80) {
				if (cols + 1 >= w)
					break;
				cols++;
			}
			putchar(*c == '\n' || *c == '\t' ? ' ' : *c);
		}
		fputs(w ? "…" : "", stdout);
		return;
	}
	if (right)
		for (size_t i = have; i < w; i++)
			putchar(' ');
	for (const char *c = s; *c; c++)
		putchar(*c == '\n' || *c == '\t' ? ' ' : *c);
	if (!right)
		for (size_t i = have; i < w; i++)
			putchar(' ');
}

static bool numeric(const char *s)
{
	if (!s || !*s)
		return false;
	if (*s == '-' || *s == '+')
		s++;
	bool digit = false;
	for (; *s; s++) {
		if (*s >= '0' && *s <= '9')
			digit = true;
		else if (*s != '.' && *s != 'e' && *s != 'E' && *s != '-' && *s != '+')
			return false;
	}
	return digit;
}

static void print_table(const printer *p)
{
	size_t n = p->ncols, term = (size_t)cli_term_width();
	size_t *w = tt_calloc(n ? n : 1, sizeof *w);
	bool *right = tt_calloc(n ? n : 1, sizeof *right);
	if (!w || !right) {
		free(w);
		free(right);
		return;
	}
	for (size_t c = 0; c < n; c++) {
		w[c] = width_of(p->names[c]);
		right[c] = p->nkept > 0;
		for (size_t r = 0; r < p->nkept; r++) {
			const char *v = p->kept[r * n + c];
			size_t x = v ? width_of(v) : 4;
			if (x > w[c])
				w[c] = x;
			if (v && !numeric(v))
				right[c] = false;
		}
		if (w[c] > 40)
			w[c] = 40;
	}
	/* the columns that fit the terminal; the rest are counted */
	size_t shown = 0, used = 0;
	for (; shown < n; shown++) {
		size_t need = w[shown] + (shown ? 2 : 0);
		if (shown && used + need > term)
			break;
		used += need;
	}
	for (size_t c = 0; c < shown; c++) {
		if (c)
			fputs("  ", stdout);
		put_cell(p->names[c], w[c], right[c]);
	}
	putchar('\n');
	for (size_t c = 0; c < shown; c++) {
		if (c)
			fputs("  ", stdout);
		for (size_t i = 0; i < w[c]; i++)
			fputs("─", stdout);
	}
	putchar('\n');
	for (size_t r = 0; r < p->nkept; r++) {
		for (size_t c = 0; c < shown; c++) {
			const char *v = p->kept[r * n + c];
			if (c)
				fputs("  ", stdout);
			put_cell(v ? v : "NULL", w[c], right[c]);
		}
		putchar('\n');
	}
	printf("(%zu row%s", p->rows, p->rows == 1 ? "" : "s");
	if (p->rows > p->nkept)
		printf(", first %zu shown: --limit N, or --csv / --json for all", p->nkept);
	if (shown < n)
		printf(", %zu column%s not shown: narrower than the terminal", n - shown, n - shown == 1 ? "" : "s");
	printf(")\n");
	free(w);
	free(right);
}

static void printer_release(printer *p)
{
	for (size_t i = 0; i < p->ncols; i++)
		free(p->names[i]);
	free(p->names);
	if (p->kept)
		for (size_t i = 0; i < p->nkept * p->ncols; i++)
			free(p->kept[i]);
	free(p->kept);
}

/* The table sink allocates its row store once the width is known. */
static int on_columns_table(void *ctx, size_t n, const char *const *names)
{
	printer *p = ctx;
	int rc = on_columns(ctx, n, names);
	if (rc == 0 && p->format == OUT_TABLE && p->limit > 0 &&
	    !(p->kept = tt_calloc((size_t)p->limit * (n ? n : 1), sizeof *p->kept)))
		rc = TT_ENOMEM;
	return rc;
}

static json_t *without_secrets(json_t *out)
{
	json_t *shown = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(out, k, v)
		if (strncmp(k, "secret_", 7) != 0)
			json_object_set(shown, k, v);
	return shown;
}

static void print_not_relations(const json_t *out)
{
	const char *k;
	json_t *v;
	json_object_foreach(json_object_get(out, "not_relations"), k, v)
		cli_note("'%s' is not a relation: %s", k, json_string_value(v));
}

static int run(const cli_cmd *cmd, cli_args *a)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	tt_buf file = TT_BUF_INIT;
	printer p = { .first = true };
	const char *sql = a->npos ? a->pos[0] : NULL, *path = cli_value(cmd, a, "file");
	const char *engine = cli_value(cmd, a, "for"), *fmt = cli_value(cmd, a, "format");
	bool json = cli_flag(cmd, a, "json"), csv = cli_flag(cmd, a, "csv");
	bool schema = cli_flag(cmd, a, "schema"), explain = cli_flag(cmd, a, "explain");
	int rc;

	if (sql && path)
		return cli_usage_error(cmd, "give the SQL or -f FILE, not both");
	if (json + csv + (fmt != NULL) > 1)
		return cli_usage_error(cmd, "--json, --csv and --format contradict each other");
	if (fmt && strcmp(fmt, "table") != 0 && strcmp(fmt, "csv") != 0 && strcmp(fmt, "json") != 0)
		return cli_usage_error(cmd, "--format is table, csv or json, not '%s'", fmt);
	p.format = json || (fmt && strcmp(fmt, "json") == 0) ? OUT_JSON
		   : csv || (fmt && strcmp(fmt, "csv") == 0) ? OUT_CSV
							       : OUT_TABLE;
	int li = cli_opt_index(cmd, "limit");
	p.limit = a->seen[li] ? a->ivalue[li] : 40;
	if (p.limit < 0)
		return cli_usage_error(cmd, "--limit must be 0 or more");
	if (a->seen[li] && p.format != OUT_TABLE)
		return cli_usage_error(cmd, "--limit bounds the table; --csv and --json print every row (add LIMIT to the SQL)");
	if (path) {
		tt_error ferr = TT_ERROR_INIT;
		if (strcmp(path, "-") == 0) {
			char chunk[65536];
			size_t got;
			while ((got = fread(chunk, 1, sizeof chunk, stdin)) > 0)
				tt_buf_put(&file, chunk, got);
		} else if (tt_read_file(path, &file, 64u << 20, &ferr) < 0) {
			rc = cli_fail(&ferr);
			tt_error_clear(&ferr);
			return rc;
		}
		sql = file.ptr;
	}
	if (!sql && !schema && !explain && !engine)
		return cli_usage_error(cmd, "give the SQL to run (or -f FILE, --schema, --explain, --for ENGINE)");
	if (sql && (schema || engine))
		return cli_usage_error(cmd, "--schema and --for answer without SQL: leave the SQL out");
	if (schema + explain + (engine != NULL) > 1)
		return cli_usage_error(cmd, "--schema, --explain and --for are separate questions: ask one");
	if (engine && !cli_engine_known(engine))
		return cli_usage_error(cmd, "--for is duckdb, spark, trino or polars, not '%s'", engine);
	if ((rc = cli_open_repo(&repo)))
		goto done;
	size_t nkeys = 0;
	const char **keys = NULL;
	int ki = cli_opt_index(cmd, "key");
	if (a->seen[ki]) {
		keys = a->list[ki];
		nkeys = a->nlist[ki];
	}
	tt_query_sink sink = { .columns = on_columns_table, .row = on_row, .ctx = &p };
	tt_query_opts o = TT_QUERY_OPTS_INIT;
	o.rev = cli_value(cmd, a, "rev");
	o.keys = keys;
	o.nkeys = nkeys;
	o.sql = sql;
	o.sink = &sink;
	o.json_cells = p.format == OUT_JSON;
	o.schema = schema;
	o.explain = explain;
	o.engine = engine;
	rc = tt_repo_query(repo, &o, &out, &err);
	if (rc < 0) {
		if (p.format == OUT_JSON && p.names)
			fputs(p.first ? "]\n" : "\n]\n", stdout);
		fflush(stdout);
		rc = cli_fail(&err);
		goto done;
	}
	rc = EXIT_OK;
	if (explain || schema || engine) {
		if (json) {
			json_t *shown = without_secrets(out);
			rc = cli_print_json(shown);
			json_decref(shown);
			goto done;
		}
		if (explain) {
			size_t i;
			json_t *v;
			json_array_foreach(json_object_get(out, "statements"), i, v)
				printf("%s;\n", json_string_value(v));
		} else if (schema) {
			size_t i;
			json_t *r;
			json_array_foreach(json_object_get(out, "relations"), i, r) {
				printf("%s  (%s at %s)\n", json_string_value(json_object_get(r, "name")),
				       json_string_value(json_object_get(r, "kind")), json_string_value(json_object_get(r, "at")));
				size_t j;
				json_t *c;
				json_array_foreach(json_object_get(r, "columns"), j, c)
					printf("  %-24s %s\n", json_string_value(json_object_get(c, "name")),
					       json_string_value(json_object_get(c, "type")));
				const char *t;
				json_t *cols;
				json_object_foreach(json_object_get(r, "tables"), t, cols) {
					printf("  %s.%s\n", json_string_value(json_object_get(r, "name")), t);
					json_array_foreach(cols, j, c)
						printf("    %-22s %s\n", json_string_value(json_object_get(c, "name")),
						       json_string_value(json_object_get(c, "type")));
				}
			}
		} else if (strcmp(engine, "spark") == 0 && json_is_string(json_object_get(out, "script"))) {
			fputs(json_string_value(json_object_get(out, "script")), stdout);
		} else {
			const char *k;
			json_t *v;
			json_object_foreach(json_object_get(out, "objects"), k, v) {
				if (json_is_string(json_object_get(v, "refused")))
					printf("%s %s: not readable in %s: %s\n",
					       strcmp(engine, "duckdb") == 0 || strcmp(engine, "trino") == 0 ? "--" : "#", k, engine,
					       json_string_value(json_object_get(v, "refused")));
				else
					printf("%s %s (%s) at %s\n%s",
					       strcmp(engine, "duckdb") == 0 || strcmp(engine, "trino") == 0 ? "--" : "#", k,
					       json_string_value(json_object_get(v, "kind")),
					       json_string_value(json_object_get(v, "at")),
					       json_string_value(json_object_get(v, "snippet")));
			}
		}
		print_not_relations(out);
		goto done;
	}
	if (p.format == OUT_JSON)
		fputs(p.first ? "]\n" : "\n]\n", stdout);
	else if (p.format == OUT_TABLE)
		print_table(&p);
	print_not_relations(out);
done:
	fflush(stdout);
	json_decref(out);
	printer_release(&p);
	tt_buf_release(&file);
	tt_error_clear(&err);
	cli_close_repo(repo);
	return rc;
}

static const cli_opt opts[] = {
	{ "rev", 'r', OPT_VALUE, "REV", "Read the objects as this dataset revision recorded them (default: what the "
	  "working copy records)." },
	{ "key", 0, OPT_LIST, "KEY", "Set up only this object (or prefix/); repeatable.  Default: the objects the "
	  "SQL names outside its comments and strings." },
	{ "file", 'f', OPT_VALUE, "FILE", "Read the SQL from FILE ('-': standard input)." },
	{ "json", 0, OPT_FLAG, NULL, "Rows as a JSON array of objects, values as DuckDB's to_json maps them; with "
	  "--schema, --explain or --for, that answer as one JSON object." },
	{ "csv", 0, OPT_FLAG, NULL, "Rows as CSV with a header line (NULL an empty field, the empty string \"\")." },
	{ "format", 0, OPT_VALUE, "table|csv|json", "Output format; table is the default." },
	{ "limit", 'n', OPT_INT, "N", "Rows the table shows (default 40; every row is still counted).  --csv and "
	  "--json print every row." },
	{ "schema", 0, OPT_FLAG, NULL, "List the relations with their columns." },
	{ "explain", 0, OPT_FLAG, NULL, "Print the statements that make the relations the SQL reads (every "
	  "relation without SQL), credentials not shown; run nothing." },
	{ "for", 0, OPT_VALUE, "duckdb|spark|trino|polars", "Print code reading each object at its recorded state in "
	  "that engine (spark: one PySpark script registering every relation)." },
	{ NULL, 0, 0, NULL, NULL },
};

const cli_cmd cmd_query = {
	.name = "query",
	.synopsis = "[-r REV] [--key KEY]... (SQL | -f FILE) [--json | --csv | --format table|csv|json] [-n N] | "
		    "[-r REV] [--key KEY]... (--schema | --explain [SQL] | --for duckdb|spark|trino|polars) [--json]",
	.summary = "Run SQL over every object of the dataset as one revision recorded it.",
	.description = "Each object is a relation named by its key (quoted where it is no plain identifier), read\n"
	"in an in-process DuckDB at exactly the recorded state: a Delta table at its version, an\n"
	"Iceberg table at its snapshot, a Lance dataset at its version (on its branch), a DuckLake\n"
	"catalog or a Neon branch attached as a catalog named by the key (KEY.table), a Dolt\n"
	"database as a schema of views at the pinned commit (KEY.table), and a file object's\n"
	"Parquet, CSV or JSON files while their bytes are still the recorded state.  Git and\n"
	"Icechunk objects are no relations; what DuckDB cannot read (a Lance dataset off this\n"
	"machine) is refused naming what can.  Nothing is written to any store.\n"
	"\n"
	"DuckDB is libduckdb 1.5.5, loaded at run time ($TETHER_LIBDUCKDB overrides where).  Its\n"
	"extensions are loaded from ~/.duckdb/extensions or the directories in\n"
	"TETHER_DUCKDB_EXTENSIONS / .tether/secrets.toml [duckdb] extensions; nothing is\n"
	"downloaded.  Credentials reach DuckDB as in-memory secrets, never printed.  A Lance\n"
	"version is read from a view of it under $XDG_CACHE_HOME/tether/lance-views (else\n"
	"~/.cache/tether/lance-views): its manifest and links to the dataset's files.\n"
	"\n"
	"Rows stream as they come; the table shows --limit of them and counts the rest.  Several\n"
	"statements run in order and the last one's rows are printed.",
	.opts = opts,
	.min_pos = 0,
	.max_pos = 1,
	.run = run,
};

bool cli_engine_known(const char *engine)
{
	return strcmp(engine, "duckdb") == 0 || strcmp(engine, "spark") == 0 || strcmp(engine, "trino") == 0 ||
	       strcmp(engine, "polars") == 0;
}

int cli_open_for(const char *key, const char *rev, const char *engine, bool json)
{
	tt_error err = TT_ERROR_INIT;
	tt_repo *repo = NULL;
	json_t *out = NULL;
	int rc = cli_open_repo(&repo);
	if (rc)
		return rc;
	if (!rev) {
		const char *env = getenv("TETHER_REV");
		rev = env && *env ? env : NULL;
	}
	const char *keys[1] = { key };
	tt_query_opts o = TT_QUERY_OPTS_INIT;
	o.rev = rev;
	o.keys = keys;
	o.nkeys = 1;
	o.engine = engine;
	if (tt_repo_query(repo, &o, &out, &err) < 0) {
		rc = cli_fail(&err);
		goto done;
	}
	const json_t *entry = json_object_get(json_object_get(out, "objects"), key);
	const char *why = json_string_value(json_object_get(entry, "refused"));
	if (!entry) {
		rc = cli_error(NULL, "'%s' is a prefix or no object: --for reads one object", key);
		goto done;
	}
	if (why) {
		const char *kind = json_string_value(json_object_get(entry, "kind"));
		if (json) {
			cli_json_error(why, json_string_value(json_object_get(entry, "hint")), "capability", key, kind,
				       EXIT_ERROR);
			rc = EXIT_ERROR;
		} else {
			rc = cli_error(json_string_value(json_object_get(entry, "hint")),
				       "[%s] %s cannot read it at its recorded state: %s", key, engine, why);
		}
		goto done;
	}
	if (json) {
		/* open's shape (key, object, kind, type, address, read_only) plus the snippet */
		char *type = tt_asprintf("%c%sSnippet", engine[0] - 'a' + 'A', engine + 1);
		json_t *shown = json_pack("{s:s, s:s, s:O, s:s, s:O, s:b, s:s, s:O, s:O, s:O, s:O}", "key", key, "object",
					  key, "kind", json_object_get(entry, "kind"), "type", type ? type : "Snippet",
					  "address", json_object_get(entry, "at"), "read_only", 1, "engine", engine, "at",
					  json_object_get(entry, "at"), "rev", json_object_get(entry, "rev"), "snippet",
					  json_object_get(entry, "snippet"), "options", json_object_get(entry, "options"));
		free(type);
		rc = cli_print_json(shown);
		json_decref(shown);
		goto done;
	}
	fputs(json_string_value(json_object_get(entry, "snippet")), stdout);
	rc = EXIT_OK;
done:
	fflush(stdout);
	json_decref(out);
	tt_error_clear(&err);
	cli_close_repo(repo);
	return rc;
}
