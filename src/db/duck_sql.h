/*
 * db/duck_sql.h - SQL text read the way DuckDB's parser (PostgreSQL's
 * lexer) reads its quotes and comments, without the library.
 *
 * What counts as quoted or commented, as DuckDB 1.5 sees it:
 *   - '...' strings with '' for a quote (a backslash is an ordinary
 *     character), and the same after a B, X or N prefix;
 *   - E'...' strings, where a backslash also escapes the next character -
 *     only where the E starts a token (in abcE'...' the E ends a name);
 *   - "..." identifiers with "" for a quote;
 *   - $tag$...$tag$ and $$...$$ dollar quotes (a tag starts with a letter
 *     or '_'; $1 is a parameter, and a '$' inside a name such as a$b$ is
 *     part of the name);
 *   - -- comments to the end of the line (\n or \r), and slash-star comments, which
 *     nest.
 * An unterminated quote or comment runs to the end of the text.
 */
#ifndef TT_DB_DUCK_SQL_H
#define TT_DB_DUCK_SQL_H

#include <jansson.h>

/* Split SQL text at the semicolons that end statements (outside quotes,
 * dollar quotes and comments); statements holding only blanks and
 * comments are dropped, as DuckDB drops them.  *out: a JSON array of the
 * statements' texts.  0, or TT_ENOMEM. */
int tt_duck_split_sql(const char *sql, json_t **out);

/* A copy of sql, the same length, with every comment and every string
 * literal ('...', E'...', dollar-quoted) blanked to spaces: the text a
 * search for names should look at.  Quoted identifiers stay.  NULL when
 * out of memory. */
char *tt_duck_sql_code(const char *sql);

/* The contents of the string literals of sql ('...' with '' undoubled,
 * E'...' as written, dollar-quoted text between its tags), in order: a
 * JSON array of strings.  0, or TT_ENOMEM. */
int tt_duck_sql_strings(const char *sql, json_t **out);

#endif
