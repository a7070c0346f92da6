/* db/db_mysql.c - the MySQL / MariaDB side of db.h, through MariaDB's
 * Connector/C (libmariadb), for servers that speak the MySQL protocol
 * (MariaDB, MySQL, Dolt).
 *
 * Statements with parameters go through the binary (prepared-statement)
 * protocol, so values never enter the SQL text; db.h's $N placeholders are
 * rewritten to the protocol's positional ? marks, outside quoted strings,
 * quoted identifiers and comments, with the parameters reordered to match.
 * Statements without parameters use the text protocol on a connection
 * opened without CLIENT_MULTI_STATEMENTS, so the server itself refuses a
 * second statement after the first.  libmariadb is loaded on the first
 * connection (db/mysql_api.h). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "db/mysql_api.h"
#include "util/mem.h"

static int my_fail(tt_db *db, tt_error *err, const char *message, unsigned errnum)
{
	int code = TT_EBACKEND;
	/* ER_STATEMENT_TIMEOUT (MariaDB 1969), ER_QUERY_TIMEOUT (MySQL 3024),
	 * and the client's read timeout (CR_SERVER_LOST 2013 on a slow reply). */
	if (errnum == 1969 || errnum == 3024)
		code = TT_ELIMIT;
	return tt_db_fail(db, err, code, message && *message ? message : "the server closed the connection");
}

static int conn_fail(tt_db *db, tt_error *err)
{
	MYSQL *m = db->impl;
	return my_fail(db, err, mysql_error(m), mysql_errno(m));
}

static int stmt_fail(tt_db *db, tt_error *err, MYSQL_STMT *st)
{
	return my_fail(db, err, mysql_stmt_error(st), mysql_stmt_errno(st));
}

/* Rewrite $N to ?, recording which parameter each ? takes.  Quoted text
 * ('...', "...", `...`) and comments (-- , #, / * * /) pass unchanged. */
static int rewrite(tt_db *db, const char *sql, size_t nparams, char **out, size_t **order, size_t *nmarks,
		   tt_error *err)
{
	size_t len = strlen(sql);
	char *s = tt_malloc(len + 1);
	size_t *ord = tt_calloc(len ? len : 1, sizeof *ord);
	if (!s || !ord) {
		free(s);
		free(ord);
		return tt_error_oom(err);
	}
	size_t o = 0, k = 0;
	for (size_t i = 0; i < len;) {
		char c = sql[i];
		if (c == '\'' || c == '"' || c == '`') {
			s[o++] = sql[i++];
			while (i < len) {
				if (sql[i] == '\\' && c != '`' && i + 1 < len) {
					s[o++] = sql[i++];
					s[o++] = sql[i++];
					continue;
				}
				if (sql[i] == c) {
					if (i + 1 < len && sql[i + 1] == c) { /* doubled quote */
						s[o++] = sql[i++];
						s[o++] = sql[i++];
						continue;
					}
					s[o++] = sql[i++];
					break;
				}
				s[o++] = sql[i++];
			}
		} else if ((c == '-' && sql[i + 1] == '-' && (sql[i + 2] == ' ' || sql[i + 2] == '\t' || sql[i + 2] == '\n')) ||
			   c == '#') {
			while (i < len && sql[i] != '\n')
				s[o++] = sql[i++];
		} else if (c == '/' && sql[i + 1] == '*') {
			const char *end = strstr(sql + i + 2, "*/");
			size_t stop = end ? (size_t)(end - sql) + 2 : len;
			while (i < stop)
				s[o++] = sql[i++];
		} else if (c == '$' && isdigit((unsigned char)sql[i + 1])) {
			size_t j = i + 1, n = 0;
			while (j < len && isdigit((unsigned char)sql[j]) && n < 100000)
				n = n * 10 + (size_t)(sql[j++] - '0');
			if (n == 0 || n > nparams) {
				free(s);
				free(ord);
				return tt_db_fail(db, err, TT_EUSAGE, "a statement names a parameter it was not given");
			}
			ord[k++] = n - 1;
			s[o++] = '?';
			i = j;
		} else {
			s[o++] = sql[i++];
		}
	}
	s[o] = '\0';
	*out = s;
	*order = ord;
	*nmarks = k;
	return 0;
}

/* The text protocol: no parameters. */
static int text_exec(tt_db *db, const char *sql, tt_db_rows *out, tt_error *err)
{
	MYSQL *m = db->impl;
	if (mysql_real_query(m, sql, strlen(sql)) != 0)
		return conn_fail(db, err);
	MYSQL_RES *res = mysql_use_result(m);
	if (!res)
		return mysql_field_count(m) == 0 ? 0 : conn_fail(db, err);
	int ret = 0;
	size_t bytes = 0, alloc = 0;
	unsigned nf = mysql_num_fields(res);
	if (out) {
		MYSQL_FIELD *f = mysql_fetch_fields(res);
		out->ncols = nf;
		out->names = tt_calloc(nf ? nf : 1, sizeof *out->names);
		if (!out->names) {
			out->ncols = 0;
			ret = tt_error_oom(err);
		}
		for (unsigned k = 0; ret == 0 && k < nf; k++)
			if (!(out->names[k] = tt_strdup(f[k].name)))
				ret = tt_error_oom(err);
	}
	MYSQL_ROW row;
	while (ret == 0 && (row = mysql_fetch_row(res))) {
		if (!out)
			continue;
		unsigned long *lens = mysql_fetch_lengths(res);
		char **cells = tt_calloc(nf ? nf : 1, sizeof *cells);
		if (!cells) {
			ret = tt_error_oom(err);
			break;
		}
		for (unsigned k = 0; k < nf; k++)
			if (row[k])
				cells[k] = tt_strndup(row[k], lens[k]);
		ret = tt_db_rows_push(db, out, cells, &bytes, &alloc, err);
		free(cells);
	}
	if (ret == 0 && mysql_errno(m))
		ret = conn_fail(db, err);
	/* Past the cap the rest of the result is drained by mysql_free_result. */
	mysql_free_result(res);
	return ret;
}

typedef struct bound {
	MYSQL_BIND *binds;
	long long *ints;
	unsigned long *lens;
} bound;

static int bind_params(bound *b, const tt_db_value *params, const size_t *order, size_t nmarks, tt_error *err)
{
	b->binds = tt_calloc(nmarks ? nmarks : 1, sizeof *b->binds);
	b->ints = tt_calloc(nmarks ? nmarks : 1, sizeof *b->ints);
	b->lens = tt_calloc(nmarks ? nmarks : 1, sizeof *b->lens);
	if (!b->binds || !b->ints || !b->lens)
		return tt_error_oom(err);
	for (size_t k = 0; k < nmarks; k++) {
		const tt_db_value *v = &params[order[k]];
		MYSQL_BIND *bd = &b->binds[k];
		if (v->type == TT_DB_INT) {
			b->ints[k] = v->i;
			bd->buffer_type = MYSQL_TYPE_LONGLONG;
			bd->buffer = &b->ints[k];
		} else if (v->type == TT_DB_TEXT && v->text) {
			b->lens[k] = (unsigned long)strlen(v->text);
			bd->buffer_type = MYSQL_TYPE_STRING;
			bd->buffer = (void *)v->text;
			bd->buffer_length = b->lens[k];
			bd->length = &b->lens[k];
		} else {
			bd->buffer_type = MYSQL_TYPE_NULL;
		}
	}
	return 0;
}

static void bound_free(bound *b)
{
	free(b->binds);
	free(b->ints);
	free(b->lens);
}

/* Fetch every row of an executed statement as text cells. */
static int fetch_rows(tt_db *db, MYSQL_STMT *st, tt_db_rows *out, tt_error *err)
{
	MYSQL_RES *meta = mysql_stmt_result_metadata(st);
	if (!meta)
		return 0;  /* no result set */
	unsigned nf = mysql_num_fields(meta);
	MYSQL_FIELD *f = mysql_fetch_fields(meta);
	enum { CELL = 256 };
	int ret = 0;
	MYSQL_BIND *binds = tt_calloc(nf ? nf : 1, sizeof *binds);
	char *space = tt_malloc((size_t)(nf ? nf : 1) * CELL);
	unsigned long *lens = tt_calloc(nf ? nf : 1, sizeof *lens);
	my_bool *nulls = tt_calloc(nf ? nf : 1, sizeof *nulls);
	if (!binds || !space || !lens || !nulls)
		ret = tt_error_oom(err);
	if (ret == 0 && out) {
		out->ncols = nf;
		out->names = tt_calloc(nf ? nf : 1, sizeof *out->names);
		if (!out->names) {
			out->ncols = 0;
			ret = tt_error_oom(err);
		}
		for (unsigned k = 0; ret == 0 && k < nf; k++)
			if (!(out->names[k] = tt_strdup(f[k].name)))
				ret = tt_error_oom(err);
	}
	for (unsigned k = 0; ret == 0 && k < nf; k++) {
		binds[k].buffer_type = MYSQL_TYPE_STRING;
		binds[k].buffer = space + (size_t)k * CELL;
		binds[k].buffer_length = CELL - 1;
		binds[k].length = &lens[k];
		binds[k].is_null = &nulls[k];
	}
	if (ret == 0 && mysql_stmt_bind_result(st, binds))
		ret = stmt_fail(db, err, st);
	size_t bytes = 0, alloc = 0;
	while (ret == 0) {
		int r = mysql_stmt_fetch(st);
		if (r == MYSQL_NO_DATA)
			break;
		if (r == 1) {
			ret = stmt_fail(db, err, st);
			break;
		}
		if (!out)
			continue;
		char **cells = tt_calloc(nf ? nf : 1, sizeof *cells);
		if (!cells) {
			ret = tt_error_oom(err);
			break;
		}
		for (unsigned k = 0; ret == 0 && k < nf; k++) {
			if (nulls[k])
				continue;
			if (lens[k] < CELL) {
				cells[k] = tt_strndup(binds[k].buffer, lens[k]);
				continue;
			}
			/* Longer than the cell: fetch this column again, whole. */
			char *big = tt_malloc((size_t)lens[k] + 1);
			if (!big) {
				ret = tt_error_oom(err);
				break;
			}
			MYSQL_BIND one = { 0 };
			unsigned long got = 0;
			one.buffer_type = MYSQL_TYPE_STRING;
			one.buffer = big;
			one.buffer_length = lens[k] + 1;
			one.length = &got;
			if (mysql_stmt_fetch_column(st, &one, k, 0)) {
				free(big);
				ret = stmt_fail(db, err, st);
				break;
			}
			big[got < lens[k] ? got : lens[k]] = '\0';
			cells[k] = big;
		}
		if (ret < 0) {
			for (unsigned k = 0; k < nf; k++)
				free(cells[k]);
			free(cells);
			break;
		}
		ret = tt_db_rows_push(db, out, cells, &bytes, &alloc, err);
		free(cells);
	}
	mysql_free_result(meta);
	free(binds);
	free(space);
	free(lens);
	free(nulls);
	return ret;
}

static int prepare(tt_db *db, MYSQL_STMT **out, const char *sql, size_t n, size_t **order, size_t *nmarks,
		   tt_error *err)
{
	char *text = NULL;
	int ret = rewrite(db, sql, n, &text, order, nmarks, err);
	if (ret < 0)
		return ret;
	MYSQL_STMT *st = mysql_stmt_init(db->impl);
	if (!st) {
		free(text);
		free(*order);
		*order = NULL;
		return tt_error_oom(err);
	}
	if (mysql_stmt_prepare(st, text, strlen(text)) != 0) {
		ret = stmt_fail(db, err, st);
		mysql_stmt_close(st);
		free(*order);
		*order = NULL;
	} else if (mysql_stmt_param_count(st) != *nmarks) {
		ret = tt_db_fail(db, err, TT_EUSAGE, "the statement's parameter marks do not match its parameters");
		mysql_stmt_close(st);
		free(*order);
		*order = NULL;
	} else {
		*out = st;
	}
	free(text);
	return ret;
}

static int my_exec(tt_db *db, const char *sql, const tt_db_value *params, size_t n, tt_db_rows *out,
		   tt_error *err)
{
	if (n == 0)
		return text_exec(db, sql, out, err);
	MYSQL_STMT *st = NULL;
	size_t *order = NULL, nmarks = 0;
	int ret = prepare(db, &st, sql, n, &order, &nmarks, err);
	if (ret < 0)
		return ret;
	bound b = { 0 };
	ret = bind_params(&b, params, order, nmarks, err);
	if (ret == 0 && mysql_stmt_bind_param(st, b.binds))
		ret = stmt_fail(db, err, st);
	if (ret == 0 && mysql_stmt_execute(st))
		ret = stmt_fail(db, err, st);
	if (ret == 0)
		ret = fetch_rows(db, st, out, err);
	bound_free(&b);
	free(order);
	mysql_stmt_close(st);
	return ret;
}

static int my_exec_many(tt_db *db, const char *sql, const tt_db_value *params, size_t ncols, size_t nrows,
			tt_error *err)
{
	if (ncols == 0) {
		for (size_t r = 0; r < nrows; r++)
			if (text_exec(db, sql, NULL, err) < 0)
				return -1;
		return 0;
	}
	MYSQL_STMT *st = NULL;
	size_t *order = NULL, nmarks = 0;
	int ret = prepare(db, &st, sql, ncols, &order, &nmarks, err);
	if (ret < 0)
		return ret;
	for (size_t r = 0; ret == 0 && r < nrows; r++) {
		bound b = { 0 };
		ret = bind_params(&b, params + r * ncols, order, nmarks, err);
		if (ret == 0 && mysql_stmt_bind_param(st, b.binds))
			ret = stmt_fail(db, err, st);
		if (ret == 0 && mysql_stmt_execute(st))
			ret = stmt_fail(db, err, st);
		if (ret == 0)
			ret = fetch_rows(db, st, NULL, err);
		bound_free(&b);
	}
	free(order);
	mysql_stmt_close(st);
	return ret;
}

static void my_close(tt_db *db)
{
	if (db->impl)
		mysql_close(db->impl);
	db->impl = NULL;
}

static const tt_db_ops my_ops = { "mysql", my_exec, my_exec_many, my_close };

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A percent-decoded copy of s[0..n). */
static char *decode(const char *s, size_t n)
{
	char *d = tt_malloc(n + 1);
	if (!d)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
			d[o++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
			i += 2;
		} else {
			d[o++] = s[i];
		}
	}
	d[o] = '\0';
	return d;
}

typedef struct my_url {
	char *user, *password, *host, *database;
	unsigned port;
} my_url;

static void url_free(my_url *u)
{
	free(u->user);
	if (u->password)
		explicit_bzero(u->password, strlen(u->password));
	free(u->password);
	free(u->host);
	free(u->database);
}

/* mysql://[user[:password]@]host[:port][/database] (also mariadb://). */
static int parse_url(const char *dsn, my_url *u, tt_error *err)
{
	const char *p = strstr(dsn, "://");
	memset(u, 0, sizeof *u);
	u->port = 3306;
	if (!p)
		goto bad;
	p += 3;
	const char *end = p + strcspn(p, "/?#");
	const char *at = NULL;
	for (const char *q = p; q < end; q++)
		if (*q == '@')
			at = q;
	if (at) {
		const char *colon = memchr(p, ':', (size_t)(at - p));
		u->user = decode(p, (size_t)((colon ? colon : at) - p));
		if (colon)
			u->password = decode(colon + 1, (size_t)(at - colon - 1));
		p = at + 1;
	}
	const char *hs = p, *he = end;
	if (*hs == '[') { /* [v6]:port */
		const char *rb = memchr(hs, ']', (size_t)(end - hs));
		if (!rb)
			goto bad;
		u->host = tt_strndup(hs + 1, (size_t)(rb - hs - 1));
		he = rb + 1;
	} else {
		const char *colon = memchr(hs, ':', (size_t)(end - hs));
		he = colon ? colon : end;
		u->host = tt_strndup(hs, (size_t)(he - hs));
	}
	if (he < end && *he == ':') {
		char *stop = NULL;
		unsigned long port = strtoul(he + 1, &stop, 10);
		if (stop != end || port == 0 || port > 65535)
			goto bad;
		u->port = (unsigned)port;
	}
	if (*end == '/') {
		const char *ds = end + 1, *de = ds + strcspn(ds, "?#");
		if (de > ds)
			u->database = decode(ds, (size_t)(de - ds));
	}
	if (!u->host || !*u->host) {
		free(u->host);
		u->host = tt_strdup("127.0.0.1");
	}
	return 0;
bad:
	url_free(u);
	int rc = tt_error_set(err, TT_ECONFIG, "invalid MySQL connection URL");
	tt_error_hint(err, "use mysql://USER@HOST:PORT/DATABASE (the password from .tether/secrets.toml)");
	return rc;
}

int tt_db_mysql_open(tt_db *db, const char *dsn, tt_error *err)
{
	db->ops = &my_ops;
	my_url u;
	int rc = parse_url(dsn, &u, err);
	if (rc < 0)
		return rc;
	if (u.password && *u.password)
		db->secret = tt_strdup(u.password);
	if ((rc = tt_mysql_load(err)) < 0) {
		url_free(&u);
		return rc;
	}
	db->where = tt_asprintf("MySQL database '%s' on server %s:%u", u.database ? u.database : "(none)", u.host,
				u.port);
	MYSQL *m = mysql_init(NULL);
	db->impl = m;
	if (!db->where || !m) {
		url_free(&u);
		return tt_error_oom(err);
	}
	unsigned secs = (unsigned)((db->opts.timeout_ms + 999) / 1000);
	if (secs < 2)
		secs = 2;
	mysql_optionsv(m, MYSQL_OPT_CONNECT_TIMEOUT, &secs);
	mysql_optionsv(m, MYSQL_OPT_READ_TIMEOUT, &secs);
	mysql_optionsv(m, MYSQL_OPT_WRITE_TIMEOUT, &secs);
	/* No option files are read (MYSQL_READ_DEFAULT_* stay unset): the
	 * target alone decides where tether connects. */
	mysql_optionsv(m, MYSQL_SET_CHARSET_NAME, "utf8mb4");
	/* TLS whenever the server offers it (the certificate is not checked:
	 * servers on 127.0.0.1 and inside private networks rarely have one a
	 * client could verify); plain text when it does not. */
	my_bool no = 0;
	mysql_optionsv(m, MYSQL_OPT_SSL_VERIFY_SERVER_CERT, &no);
	mysql_optionsv(m, MYSQL_OPT_SSL_ENFORCE, &no);
	unsigned long flags = CLIENT_FOUND_ROWS;  /* and never CLIENT_MULTI_STATEMENTS */
	MYSQL *ok = mysql_real_connect(m, u.host, u.user ? u.user : "root", u.password ? u.password : "",
				       u.database, u.port, NULL, flags);
	url_free(&u);
	if (!ok)
		return conn_fail(db, err);
	/* A statement time limit where the server has one (MariaDB's
	 * max_statement_time in seconds, MySQL's max_execution_time in ms);
	 * the read timeout bounds the rest. */
	char set[96];
	tt_error ignored = TT_ERROR_INIT;
	snprintf(set, sizeof set, "SET SESSION max_statement_time = %.3f", db->opts.timeout_ms / 1000.0);
	if (text_exec(db, set, NULL, &ignored) < 0) {
		tt_error_clear(&ignored);
		snprintf(set, sizeof set, "SET SESSION max_execution_time = %d", db->opts.timeout_ms);
		text_exec(db, set, NULL, &ignored);
	}
	tt_error_clear(&ignored);
	if (db->opts.read_only)
		return text_exec(db, "SET SESSION TRANSACTION READ ONLY", NULL, err);
	return 0;
}
