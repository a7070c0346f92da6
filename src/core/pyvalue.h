#ifndef TT_CORE_PYVALUE_H
#define TT_CORE_PYVALUE_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"

/*
 * core/pyvalue.h - Python value semantics for JSON values.
 *
 * tether-vcs computes summaries, loads plans and words its messages and diff
 * details with Python's str(), repr(), bool(), len(), == and iteration over
 * whatever JSON holds; these give the same answers for JSON values (None,
 * True, 'text', {'k': 1}, [1, 2.5]).  NULL counts as None.  The str/repr
 * functions append to out and return 0 or the buffer's failure.
 */
bool tt_pyv_truthy(const json_t *v);
/* str(v) appended to out: "None", "True", 1.5, strings as they are,
 * containers as repr(). */
int tt_pyv_str(tt_buf *out, const json_t *v);
/* repr(v) appended to out. */
int tt_pyv_repr(tt_buf *out, const json_t *v);
/* str(v) / repr() of the C string s (NULL: ''), as new strings; NULL on OOM. */
char *tt_pyv_str_dup(const json_t *v);
char *tt_pyv_repr_dup(const char *s);
/* repr() of the str s[0..len) appended to out. */
int tt_pyv_repr_str(tt_buf *out, const char *s, size_t len);
/* len(v) for a string (code points), list or dict; false for the rest. */
bool tt_pyv_len(const json_t *v, size_t *out);
/* list(v): a list's items, a dict's keys, a string's characters, as a new
 * array; NULL for what Python cannot iterate (and on OOM). */
json_t *tt_pyv_list(const json_t *v);
/* v == w as Python compares the values JSON gives (1 == 1.0 == True). */
bool tt_pyv_eq(const json_t *v, const json_t *w);
/* dict(v) for the values a plan or journal holds: a dict (copied), a
 * falsy value ({}), a list of pairs; NULL when Python would raise. */
json_t *tt_pyv_dict(const json_t *v);

#endif
