/*
 * util/toml.h - a complete TOML 1.0 reader and writer.
 *
 * tt_toml_parse() builds a tree of tt_toml_value nodes; every node remembers the
 * line and column where it (or, for a table entry, its key) was defined, so
 * callers can report "FILE:LINE:COL: ..." for a value they refuse.
 * Tables keep their keys in definition order.  Strings are UTF-8 and may
 * contain NUL (hence the explicit lengths).
 *
 * tt_toml_write() renders a tree the way tether-vcs's tomlkit does, so a file
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

typedef enum tt_toml_type {
	TT_TOML_TABLE,
	TT_TOML_ARRAY,
	TT_TOML_STRING,
	TT_TOML_INTEGER,
	TT_TOML_FLOAT,
	TT_TOML_BOOLEAN,
	TT_TOML_DATETIME,        /* offset date-time: 1979-05-27T07:32:00Z */
	TT_TOML_DATETIME_LOCAL,  /* 1979-05-27T07:32:00 */
	TT_TOML_DATE_LOCAL,      /* 1979-05-27 */
	TT_TOML_TIME_LOCAL       /* 07:32:00 */
} tt_toml_type;

typedef struct tt_toml_value tt_toml_value;

/*
 * Parse text (len bytes; need not be NUL-terminated).  On success *out is a
 * TT_TOML_TABLE owned by the caller.  On failure err->code is TT_EPARSE and the
 * message is "<filename>:<line>:<col>: <what>" (filename may be NULL, then
 * "<input>").  Lines and columns count from 1; columns count characters.
 */
int tt_toml_parse(tt_toml_value **out, const char *text, size_t len,
	       const char *filename, tt_error *err);
void tt_toml_free(tt_toml_value *v);  /* NULL-safe; frees the whole subtree */

tt_toml_type tt_toml_type_of(const tt_toml_value *v);
const char *tt_toml_type_name(tt_toml_type t);  /* "table", "string", ... */
int tt_toml_line(const tt_toml_value *v);  /* 0 for nodes built in code */
int tt_toml_col(const tt_toml_value *v);

/* Tables (entries in definition order). */
size_t tt_toml_table_len(const tt_toml_value *t);
const char *tt_toml_table_key(const tt_toml_value *t, size_t i);
tt_toml_value *tt_toml_table_at(const tt_toml_value *t, size_t i);
tt_toml_value *tt_toml_table_get(const tt_toml_value *t, const char *key); /* NULL if absent */
/* The key with its length: quoted keys may hold NUL ("\u0000" = 1). */
const char *tt_toml_table_key_n(const tt_toml_value *t, size_t i, size_t *len);

/* Arrays. */
size_t tt_toml_array_len(const tt_toml_value *a);
tt_toml_value *tt_toml_array_at(const tt_toml_value *a, size_t i);

/* Scalars (the caller checks the type first). */
const char *tt_toml_string(const tt_toml_value *v, size_t *len); /* len may be NULL */
int64_t tt_toml_integer(const tt_toml_value *v);
double tt_toml_float(const tt_toml_value *v);
bool tt_toml_boolean(const tt_toml_value *v);
/* Date/time text in RFC 3339 form with 'T' and the source's precision. */
const char *tt_toml_datetime(const tt_toml_value *v);

/* Building trees in code (for the writer).  NULL on allocation failure. */
tt_toml_value *tt_toml_new_table(void);
tt_toml_value *tt_toml_new_array(void);
tt_toml_value *tt_toml_new_string(const char *s, size_t len);
tt_toml_value *tt_toml_new_integer(int64_t i);
tt_toml_value *tt_toml_new_float(double d);
tt_toml_value *tt_toml_new_boolean(bool b);
tt_toml_value *tt_toml_new_datetime(tt_toml_type t, const char *text);
/* Take ownership of v; replaces an existing key in place.  0 or -1 (OOM). */
int tt_toml_table_set(tt_toml_value *t, const char *key, tt_toml_value *v);
/* The same for a key of klen bytes (which may hold NUL). */
int tt_toml_table_setn(tt_toml_value *t, const char *key, size_t klen, tt_toml_value *v);
int tt_toml_array_push(tt_toml_value *a, tt_toml_value *v);

/*
 * Deep equality: same types and values, tables with the same keys (in any
 * order, as the writer reorders them), date/times with the same text, and
 * floats compared bit-for-bit in spirit: nan equals nan, -0.0 is not 0.0.
 */
bool tt_toml_equal(const tt_toml_value *a, const tt_toml_value *b);

/* Render a TT_TOML_TABLE as a document (format described above). */
int tt_toml_write(tt_buf *out, const tt_toml_value *doc, tt_error *err);
/* Append a key of n bytes as the writer spells it: bare or "quoted"
 * (toml.c: the reader's messages spell keys so too). */
void tt_toml_write_key(tt_buf *out, const char *key, size_t n);
/* Append s (n bytes) as a basic string: \" \\ \b \t \n \f \r, other
 * controls and DEL as \u00xx in lower-case hex, everything else as is. */
void tt_toml_write_string(tt_buf *out, const char *s, size_t n);

/*
 * Convert to and from JSON.  tt_toml_to_json() refuses date/time values
 * (TT_ECONFIG naming line:col) because tether's hashes cannot carry them;
 * tt_toml_from_json() drops nulls (as tether-vcs does before writing) and
 * fails only on allocation.
 * Also: tt_toml_to_json() refuses inf and nan floats the same way (JSON has
 * neither); nulls are dropped from arrays too; a bare top-level null (or
 * a NULL j) has no TOML form and gives NULL with TT_EUSAGE.
 */
json_t *tt_toml_to_json(const tt_toml_value *v, const char *filename, tt_error *err);
tt_toml_value *tt_toml_from_json(const json_t *j, tt_error *err);

#endif
