/*
 * util/toml.h - a complete TOML 1.0 reader and writer.
 *
 * toml_parse() builds a tree of toml_value nodes; every node remembers the
 * line and column where it (or, for a table entry, its key) was defined, so
 * callers can report "FILE:LINE:COL: ..." for a value they refuse.
 * Tables keep their keys in definition order.  Strings are UTF-8 and may
 * contain NUL (hence the explicit lengths).
 *
 * toml_write() renders a tree the way tether-vcs's tomlkit does, so a file
 * written by either implementation is byte-identical:
 *   - in each table, plain values (scalars, arrays, inline tables inside
 *     arrays) first in insertion order, then sub-tables, each under a
 *     "[dotted.header]" preceded by a blank line; a table holding only
 *     sub-tables gets no header of its own; arrays whose items are all
 *     tables are written as "[[header]]" blocks;
 *   - keys bare when they match [A-Za-z0-9_-]+, else "quoted";
 *   - strings as basic strings escaping \" \\ \b \t \n \f \r and other
 *     controls (and DEL) as \u00XX in lower-case hex; non-ASCII kept;
 *   - floats in Python repr form (0.1, 1e+16, inf, -inf, nan);
 *   - arrays inline: [1, "a", {x = 1}].
 * The finer points follow tomlkit's own rules, quirks included:
 *   - a blank line precedes a sub-table's header (or, for a header-less
 *     table, its first sub-table) only when that table was not the first
 *     key added to its parent: {t = {a = 1}, x = 2} is "x = 2\n[t]\na = 1";
 *   - in a [[...]] element and in an inline table directly inside an
 *     array, keys holding tables come after the other keys;
 *   - each [[...]] block after the first gets a blank line before it unless
 *     the block before it is empty; the first gets one unless the array was
 *     the first key added to its parent;
 *   - inline tables nested in inline tables are written {a = 1,b = 2};
 *   - date/time values are written as their text.
 */
#ifndef TT_UTIL_TOML_H
#define TT_UTIL_TOML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/error.h"

typedef enum toml_type {
	TOML_TABLE,
	TOML_ARRAY,
	TOML_STRING,
	TOML_INTEGER,
	TOML_FLOAT,
	TOML_BOOLEAN,
	TOML_DATETIME,        /* offset date-time: 1979-05-27T07:32:00Z */
	TOML_DATETIME_LOCAL,  /* 1979-05-27T07:32:00 */
	TOML_DATE_LOCAL,      /* 1979-05-27 */
	TOML_TIME_LOCAL       /* 07:32:00 */
} toml_type;

typedef struct toml_value toml_value;

/*
 * Parse text (len bytes; need not be NUL-terminated).  On success *out is a
 * TOML_TABLE owned by the caller.  On failure err->code is TT_EPARSE and the
 * message is "<filename>:<line>:<col>: <what>" (filename may be NULL, then
 * "<input>").  Lines and columns count from 1; columns count characters.
 */
int toml_parse(toml_value **out, const char *text, size_t len,
	       const char *filename, tt_error *err);
void toml_free(toml_value *v);  /* NULL-safe; frees the whole subtree */

toml_type toml_type_of(const toml_value *v);
const char *toml_type_name(toml_type t);  /* "table", "string", ... */
int toml_line(const toml_value *v);  /* 0 for nodes built in code */
int toml_col(const toml_value *v);

/* Tables (entries in definition order). */
size_t toml_table_len(const toml_value *t);
const char *toml_table_key(const toml_value *t, size_t i);
toml_value *toml_table_at(const toml_value *t, size_t i);
toml_value *toml_table_get(const toml_value *t, const char *key); /* NULL if absent */
/* The key with its length: quoted keys may hold NUL ("\u0000" = 1). */
const char *toml_table_key_n(const toml_value *t, size_t i, size_t *len);

/* Arrays. */
size_t toml_array_len(const toml_value *a);
toml_value *toml_array_at(const toml_value *a, size_t i);

/* Scalars (the caller checks the type first). */
const char *toml_string(const toml_value *v, size_t *len); /* len may be NULL */
int64_t toml_integer(const toml_value *v);
double toml_float(const toml_value *v);
bool toml_boolean(const toml_value *v);
/* Date/time text in RFC 3339 form with 'T' and the source's precision. */
const char *toml_datetime(const toml_value *v);

/* Building trees in code (for the writer).  NULL on allocation failure. */
toml_value *toml_new_table(void);
toml_value *toml_new_array(void);
toml_value *toml_new_string(const char *s, size_t len);
toml_value *toml_new_integer(int64_t i);
toml_value *toml_new_float(double d);
toml_value *toml_new_boolean(bool b);
toml_value *toml_new_datetime(toml_type t, const char *text);
/* Take ownership of v; replaces an existing key in place.  0 or -1 (OOM). */
int toml_table_set(toml_value *t, const char *key, toml_value *v);
/* The same for a key of klen bytes (which may hold NUL). */
int toml_table_setn(toml_value *t, const char *key, size_t klen, toml_value *v);
int toml_array_push(toml_value *a, toml_value *v);

/*
 * Deep equality: same types and values, tables with the same keys (in any
 * order, as the writer reorders them), date/times with the same text, and
 * floats compared bit-for-bit in spirit: nan equals nan, -0.0 is not 0.0.
 */
bool toml_equal(const toml_value *a, const toml_value *b);

/* Render a TOML_TABLE as a document (format described above). */
int toml_write(tt_buf *out, const toml_value *doc, tt_error *err);
/* Append a key of n bytes as the writer spells it: bare or "quoted". */
void toml_write_key(tt_buf *out, const char *key, size_t n);

/*
 * Convert to and from JSON.  toml_to_json() refuses date/time values
 * (TT_ECONFIG naming line:col) because tether's hashes cannot carry them;
 * toml_from_json() drops nulls (as tether-vcs does before writing) and
 * fails only on allocation.
 * Also: toml_to_json() refuses inf and nan floats the same way (JSON has
 * neither); nulls are dropped from arrays too; a bare top-level null (or
 * a NULL j) has no TOML form and gives NULL with TT_EUSAGE.
 */
json_t *toml_to_json(const toml_value *v, const char *filename, tt_error *err);
toml_value *toml_from_json(const json_t *j, tt_error *err);

#endif
