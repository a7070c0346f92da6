/*
 * util/json.h - JSON output byte-compatible with Python's json.dumps.
 *
 * tether's hashes are taken over
 *     json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
 * and its CLI prints json.dumps(obj, indent=2) (ensure_ascii on, insertion
 * order).  jansson's own dumper differs (floats as %.17g, upper-case \u
 * escapes), so every byte we hash or print goes through this writer:
 *   - floats as Python repr (0.1, 1e+16, 1.0); NaN, Infinity, -Infinity;
 *   - strings escape \" \\ \n \r \t \b \f, other controls as \u00XX in
 *     lower-case hex; DEL and non-ASCII raw unless ensure_ascii, which
 *     writes \uXXXX (surrogate pairs above the BMP, lower-case hex);
 *   - keys sorted by code point when sort_keys (UTF-8 byte order).
 */
#ifndef TT_UTIL_JSON_H
#define TT_UTIL_JSON_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/error.h"

typedef struct tt_json_style {
	int indent;         /* < 0: one line; >= 0: newline + indent spaces per level */
	bool sort_keys;
	bool ensure_ascii;
	bool compact;       /* separators (",", ":") instead of (", ", ": ") */
} tt_json_style;

/* The canonical form tether hashes. */
#define TT_JSON_CANONICAL ((tt_json_style){ -1, true, false, true })
/* What `--json` prints (json.dumps(obj, indent=2)). */
#define TT_JSON_PRETTY ((tt_json_style){ 2, false, true, false })

int tt_json_dump(tt_buf *out, const json_t *v, tt_json_style style);
/* Canonical bytes of v appended to out. */
int tt_json_canonical(tt_buf *out, const json_t *v);

/*
 * Both dumpers return 0, or: TT_ENOMEM / TT_ELIMIT from the buffer (sticky,
 * see buf.h), TT_EPARSE when a string or key is not valid UTF-8 (Python
 * strings cannot hold such bytes), TT_ELIMIT when nesting passes
 * TT_JSON_MAX_DEPTH (Python would hit its recursion limit), TT_EUSAGE for a
 * NULL value.  On failure out may hold a partial document.
 */
#define TT_JSON_MAX_DEPTH 4096

/* One string (len bytes, may hold NUL) as a JSON string literal, escaped
 * exactly as json.dumps escapes it with the given ensure_ascii. */
int tt_json_dump_string(tt_buf *out, const char *s, size_t len, bool ensure_ascii);

/* Is s[0..len) well-formed UTF-8 (no overlongs, no surrogates, <= U+10FFFF)? */
bool tt_utf8_valid(const char *s, size_t len);
/* One code point of the UTF-8 text at s (avail > 0 bytes left): returns its
 * length and stores it in *cp.  A byte that does not start a well-formed
 * sequence is taken alone, as its own value. */
size_t tt_utf8_next(const unsigned char *s, size_t avail, uint32_t *cp);
/* Code point cp (<= U+10FFFF) as UTF-8 into out; returns its length (1-4). */
size_t tt_utf8_put(char out[4], uint32_t cp);

/*
 * Parse JSON text with jansson, errors as "<what>:<line>:<col>: ...".
 * Any value is accepted at the top level (like json.loads); strings may hold
 * "\u0000" (read them with json_string_length); duplicate keys keep the last
 * value in the first key's position, as a Python dict does.  Unlike
 * json.loads, NaN/Infinity, numbers outside long long / double range, lone
 * surrogates and "\u0000" inside object keys are refused: jansson cannot
 * hold them.  (The writer does handle keys with NUL made by
 * json_object_setn; note json_deep_copy truncates such keys at the NUL.)
 * Returns a new reference, or NULL with err set (TT_EPARSE, or TT_ENOMEM).
 */
json_t *tt_json_parse(const char *text, size_t len, const char *what, tt_error *err);

/* Whether an array's items, or an object's values, include the string s. */
bool tt_json_has_string(const json_t *v, const char *s);

#endif
