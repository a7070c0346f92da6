/*
 * db/duck_sql.c - SQL text split into statements and stripped of its
 * comments and strings, as DuckDB's lexer reads it (see duck_sql.h).
 */
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include <tether/error.h>

#include "db/duck_sql.h"
#include "util/buf.h"
#include "util/mem.h"

typedef enum { U_CODE, U_BLANK, U_COMMENT, U_STRING, U_IDENT, U_END } unit_kind;

static bool name_start(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c >= 0x80;
}

static bool name_char(unsigned char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

/* The end of a quote opened at p (p[0] is the quote character q): the
 * doubled quote stays inside; with backslashes, a backslash escapes the
 * next character too. */
static const char *quote_end(const char *p, char q, bool backslashes)
{
	for (p++; *p; p++) {
		if (backslashes && *p == '\\' && p[1]) {
			p++;
			continue;
		}
		if (*p == q) {
			if (p[1] == q) {
				p++;
				continue;
			}
			return p + 1;
		}
	}
	return p;
}

/* The length of the lexical unit at p, and its kind. */
static size_t unit(const char *p, unit_kind *kind)
{
	const unsigned char c = (unsigned char)p[0];
	const char *e;
	if (!c) {
		*kind = U_END;
		return 0;
	}
	if (c == '-' && p[1] == '-') {
		*kind = U_COMMENT; /* to the end of the line: \n or \r */
		return strcspn(p, "\n\r");
	}
	if (c == '/' && p[1] == '*') {
		/* nested, as PostgreSQL's lexer nests them */
		int depth = 1;
		*kind = U_COMMENT;
		for (e = p + 2; *e && depth; e++) {
			if (e[0] == '/' && e[1] == '*') {
				depth++;
				e++;
			} else if (e[0] == '*' && e[1] == '/') {
				depth--;
				e++;
			}
		}
		return (size_t)(e - p);
	}
	if (c == '\'') {
		*kind = U_STRING;
		return (size_t)(quote_end(p, '\'', false) - p);
	}
	if ((c == 'e' || c == 'E') && p[1] == '\'') {
		*kind = U_STRING;
		return (size_t)(quote_end(p + 1, '\'', true) - p);
	}
	if (c == '"') {
		*kind = U_IDENT;
		return (size_t)(quote_end(p, '"', false) - p);
	}
	if (c == '$') {
		const char *t = p + 1;
		if (name_start((unsigned char)*t))
			while (name_char((unsigned char)*t))
				t++;
		if (*t == '$') {
			/* $tag$ ... $tag$ */
			size_t taglen = (size_t)(t - p) + 1;
			*kind = U_STRING;
			for (e = t + 1; *e; e++)
				if (*e == '$' && strncmp(e, p, taglen) == 0)
					return (size_t)(e - p) + taglen;
			return (size_t)(e - p);
		}
		*kind = U_CODE; /* a parameter ($1), or an operator character */
		return 1;
	}
	if (name_start(c)) {
		/* a name or keyword, '$' included: a$b$ is one name */
		*kind = U_CODE;
		for (e = p + 1; name_char((unsigned char)*e) || *e == '$'; e++)
			;
		return (size_t)(e - p);
	}
	*kind = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v' ? U_BLANK : U_CODE;
	return 1;
}

int tt_duck_split_sql(const char *sql, json_t **out)
{
	json_t *arr = json_array();
	const char *p = sql, *start = sql;
	bool meaningful = false;
	*out = NULL;
	if (!arr)
		return TT_ENOMEM;
	for (;;) {
		unit_kind k;
		size_t n = unit(p, &k);
		if (k == U_END || (k == U_CODE && *p == ';')) {
			if (meaningful && json_array_append_new(arr, json_stringn_nocheck(start, (size_t)(p - start))) < 0) {
				json_decref(arr);
				return TT_ENOMEM;
			}
			if (k == U_END)
				break;
			meaningful = false;
			start = p + 1;
		} else if (k != U_BLANK && k != U_COMMENT) {
			meaningful = true;
		}
		p += n;
	}
	*out = arr;
	return 0;
}

char *tt_duck_sql_code(const char *sql)
{
	char *code = tt_strdup(sql);
	if (!code)
		return NULL;
	for (char *p = code;;) {
		unit_kind k;
		size_t n = unit(p, &k);
		if (k == U_END)
			break;
		if (k == U_COMMENT || k == U_STRING)
			memset(p, ' ', n);
		p += n;
	}
	return code;
}

int tt_duck_sql_strings(const char *sql, json_t **out)
{
	json_t *arr = json_array();
	*out = NULL;
	if (!arr)
		return TT_ENOMEM;
	for (const char *p = sql;;) {
		unit_kind k;
		size_t n = unit(p, &k);
		if (k == U_END)
			break;
		if (k == U_STRING) {
			const char *body = p, *end = p + n;
			char q = *p == '$' ? '$' : '\'';
			if (q == '$') {
				/* $tag$...$tag$: the tag's length from its closing '$' */
				const char *t = strchr(p + 1, '$');
				size_t tag = (size_t)(t - p) + 1;
				body = p + tag;
				end = (size_t)(end - body) >= tag && strncmp(end - tag, p, tag) == 0 ? end - tag : end;
			} else {
				body = strchr(p, '\'') + 1;
				if (end > body && end[-1] == '\'')
					end--;
			}
			tt_buf v = TT_BUF_INIT;
			for (const char *c = body; c < end; c++) {
				tt_buf_putc(&v, *c);
				if (q == '\'' && *c == '\'' && c + 1 < end && c[1] == '\'')
					c++;
			}
			int bad = v.failed || json_array_append_new(arr, json_stringn_nocheck(v.ptr ? v.ptr : "", v.len)) < 0;
			tt_buf_release(&v);
			if (bad) {
				json_decref(arr);
				return TT_ENOMEM;
			}
		}
		p += n;
	}
	*out = arr;
	return 0;
}
