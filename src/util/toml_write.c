/*
 * util/tt_toml_write.c - the TOML writer and the JSON conversions.
 *
 * The writer reproduces what tomlkit 0.13's dumps() makes of plain Python
 * data, because tether-vcs writes its files that way and both
 * implementations must produce the same bytes.  tomlkit first converts the
 * data into its own item objects -- and what a value becomes depends on
 * where it sits -- then appends them one by one to containers whose append
 * logic decides order and blank lines.  We compute the same outcome
 * directly:
 *
 *   - a table value inside a table becomes a Table (a [header] section);
 *     inside an array or an inline table it becomes an InlineTable;
 *   - a non-empty array of only tables inside a table becomes an AoT
 *     ([[header]] sections); any other array is an inline Array;
 *   - appending a non-table to a table container inserts it before the
 *     first Table/AoT, so plain values end up first, in insertion order;
 *   - appending a Table (or an AoT) to a non-empty container gives it (its
 *     first element) an indent of "\n": the blank line before its header.
 *     It is "non-empty" in insertion order, not in output order, hence the
 *     missing blank line in "x = 2\n[t]" when t was added before x;
 *   - AoT elements after the first get that "\n" only when the element
 *     before them is non-empty (tomlkit tests the previous table's truth);
 *   - a Table whose entries are all Tables/AoTs (and at least one) is a
 *     "super table" and has no header line; it still writes its "\n";
 *   - tables built for the elements of an array (AoT elements, and inline
 *     tables directly in an array) are filled with the table-valued keys
 *     last; everywhere else keys keep their order;
 *   - inline tables created for array elements join entries with ", ",
 *     the ones nested in inline tables with "," (tomlkit's "new" flag).
 */
#include "util/toml.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/mem.h"
#include "util/num.h"

/* Past this depth the writer refuses (parsed trees stay far below). */
#define TOML_WRITE_MAX_DEPTH 1024

typedef enum kind {
	K_SCALAR,
	K_ARRAY,   /* inline array */
	K_INLINE,  /* inline table */
	K_TABLE,   /* [header] section */
	K_AOT      /* [[header]] sections */
} kind;

typedef struct writer {
	tt_buf *out;
	tt_error *err;
	int depth;
} writer;

static bool all_tables(const tt_toml_value *a)
{
	size_t n = tt_toml_array_len(a);
	for (size_t i = 0; i < n; i++) {
		if (tt_toml_type_of(tt_toml_array_at(a, i)) != TT_TOML_TABLE)
			return false;
	}
	return n > 0;
}

/* What v becomes; in_table: its parent is a Table (not an inline one, not
 * an array). */
static kind kind_of(const tt_toml_value *v, bool in_table)
{
	switch (tt_toml_type_of(v)) {
	case TT_TOML_TABLE:
		return in_table ? K_TABLE : K_INLINE;
	case TT_TOML_ARRAY:
		return in_table && all_tables(v) ? K_AOT : K_ARRAY;
	default:
		return K_SCALAR;
	}
}

static bool is_section(kind k) { return k == K_TABLE || k == K_AOT; }

/*
 * The order in which tomlkit adds t's entries: as they are, or (tables
 * built for array elements) a stable partition with table values last.
 * Returns a malloc'd index array (NULL on OOM; n == 0 gives a valid one).
 */
static size_t *insertion_order(const tt_toml_value *t, bool tables_last)
{
	size_t n = tt_toml_table_len(t), k = 0;
	size_t *ord = tt_reallocarray(NULL, n ? n : 1, sizeof *ord);
	if (!ord)
		return NULL;
	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < n; i++) {
			bool is_tab = tt_toml_type_of(tt_toml_table_at(t, i)) == TT_TOML_TABLE;
			if (!tables_last ? pass == 0 : is_tab == (pass == 1))
				ord[k++] = i;
		}
	}
	return ord;
}

static int enter(writer *w)
{
	if (++w->depth > TOML_WRITE_MAX_DEPTH)
		return tt_error_set(w->err, TT_ELIMIT, "TOML tree nested deeper than %d levels",
				    TOML_WRITE_MAX_DEPTH);
	return 0;
}

static void put_scalar(tt_buf *out, const tt_toml_value *v)
{
	switch (tt_toml_type_of(v)) {
	case TT_TOML_STRING: {
		size_t n;
		const char *s = tt_toml_string(v, &n);
		tt_toml_write_string(out, s, n);
		break;
	}
	case TT_TOML_INTEGER:
		tt_buf_printf(out, "%lld", (long long)tt_toml_integer(v));
		break;
	case TT_TOML_FLOAT: {
		char num[TT_DOUBLE_REPR_MAX];
		double d = tt_toml_float(v);
		size_t n = tt_double_repr(num, d);
		if (n)
			tt_buf_put(out, num, n);
		else
			tt_buf_puts(out, isnan(d) ? "nan" : d < 0 ? "-inf" : "inf");
		break;
	}
	case TT_TOML_BOOLEAN:
		tt_buf_puts(out, tt_toml_boolean(v) ? "true" : "false");
		break;
	default: /* the date/time kinds */
		tt_buf_puts(out, tt_toml_datetime(v));
		break;
	}
}

/*
 * A value inside an array or an inline table.  new_inline: a table here is
 * one tomlkit made for an array element (entries ", "-joined, table values
 * last) rather than one nested in an inline table (","-joined, in order).
 */
static int put_inline(writer *w, const tt_toml_value *v, bool new_inline)
{
	int rc = 0;
	size_t *ord = NULL;

	if (tt_toml_type_of(v) == TT_TOML_ARRAY) {
		if ((rc = enter(w)) != 0)
			goto done;
		tt_buf_putc(w->out, '[');
		for (size_t i = 0; i < tt_toml_array_len(v); i++) {
			if (i)
				tt_buf_puts(w->out, ", ");
			if ((rc = put_inline(w, tt_toml_array_at(v, i), true)) != 0)
				goto done;
		}
		tt_buf_putc(w->out, ']');
		w->depth--;
	} else if (tt_toml_type_of(v) == TT_TOML_TABLE) {
		if ((rc = enter(w)) != 0)
			goto done;
		ord = insertion_order(v, new_inline);
		if (!ord) {
			rc = tt_error_oom(w->err);
			goto done;
		}
		tt_buf_putc(w->out, '{');
		for (size_t i = 0; i < tt_toml_table_len(v); i++) {
			size_t klen;
			const char *k = tt_toml_table_key_n(v, ord[i], &klen);
			if (i)
				tt_buf_puts(w->out, new_inline ? ", " : ",");
			tt_toml_write_key(w->out, k, klen);
			tt_buf_puts(w->out, " = ");
			if ((rc = put_inline(w, tt_toml_table_at(v, ord[i]), false)) != 0)
				goto done;
		}
		tt_buf_putc(w->out, '}');
		w->depth--;
	} else {
		put_scalar(w->out, v);
	}
done:
	free(ord);
	return rc;
}

static int put_body(writer *w, const tt_toml_value *t, const char *prefix, size_t plen,
		    bool tables_last);

/* prefix "." key, or just key at the top. */
static char *section_name(const char *prefix, size_t plen, const char *k, size_t klen)
{
	tt_buf b = TT_BUF_INIT;
	if (prefix) {
		tt_buf_put(&b, prefix, plen);
		tt_buf_putc(&b, '.');
	}
	tt_toml_write_key(&b, k, klen);
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return tt_buf_detach(&b);
}

/* A Table section; blank: its indent is "\n". */
static int put_table(writer *w, const tt_toml_value *t, const char *name, bool blank)
{
	bool super = tt_toml_table_len(t) > 0;
	for (size_t i = 0; i < tt_toml_table_len(t) && super; i++)
		super = is_section(kind_of(tt_toml_table_at(t, i), true));
	if (!super)
		tt_buf_printf(w->out, "%s[%s]\n", blank ? "\n" : "", name);
	else if (blank)
		tt_buf_putc(w->out, '\n');
	return put_body(w, t, name, strlen(name), false);
}

/* An AoT; blank: the first element's indent is "\n". */
static int put_aot(writer *w, const tt_toml_value *a, const char *name, bool blank)
{
	for (size_t i = 0; i < tt_toml_array_len(a); i++) {
		const tt_toml_value *e = tt_toml_array_at(a, i);
		if (i > 0)
			blank = tt_toml_table_len(tt_toml_array_at(a, i - 1)) > 0;
		tt_buf_printf(w->out, "%s[[%s]]\n", blank ? "\n" : "", name);
		int rc = put_body(w, e, name, strlen(name), true);
		if (rc)
			return rc;
	}
	return 0;
}

/* The entries of a Table (or the document): plain values, then sections. */
static int put_body(writer *w, const tt_toml_value *t, const char *prefix, size_t plen,
		    bool tables_last)
{
	int rc;
	char *name = NULL;
	size_t *ord = NULL;
	size_t n = tt_toml_table_len(t);

	if ((rc = enter(w)) != 0)
		goto done;
	ord = insertion_order(t, tables_last);
	if (!ord) {
		rc = tt_error_oom(w->err);
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		const tt_toml_value *v = tt_toml_table_at(t, ord[i]);
		if (is_section(kind_of(v, true)))
			continue;
		size_t klen;
		const char *k = tt_toml_table_key_n(t, ord[i], &klen);
		tt_toml_write_key(w->out, k, klen);
		tt_buf_puts(w->out, " = ");
		if ((rc = put_inline(w, v, true)) != 0)
			goto done;
		tt_buf_putc(w->out, '\n');
	}
	for (size_t i = 0; i < n; i++) {
		const tt_toml_value *v = tt_toml_table_at(t, ord[i]);
		kind k = kind_of(v, true);
		if (!is_section(k))
			continue;
		size_t klen;
		const char *key = tt_toml_table_key_n(t, ord[i], &klen);
		name = section_name(prefix, plen, key, klen);
		if (!name) {
			rc = tt_error_oom(w->err);
			goto done;
		}
		/* Blank line unless it was the first entry tomlkit added. */
		bool blank = i > 0;
		rc = k == K_TABLE ? put_table(w, v, name, blank) : put_aot(w, v, name, blank);
		if (rc)
			goto done;
		free(name);
		name = NULL;
	}
	w->depth--;
done:
	free(name);
	free(ord);
	return rc;
}

int tt_toml_write(tt_buf *out, const tt_toml_value *doc, tt_error *err)
{
	if (!doc || tt_toml_type_of(doc) != TT_TOML_TABLE)
		return tt_error_set(err, TT_EUSAGE, "tt_toml_write needs a table");
	writer w = { out, err, 0 };
	int rc = put_body(&w, doc, NULL, 0, false);
	if (rc)
		return rc;
	return tt_buf_check(out, err, "TOML document");
}

/* ------------------------------------------------------------------ */
/* JSON                                                                */
/* ------------------------------------------------------------------ */

/* Refuse v (a date/time, or an inf/nan float), naming its key and place. */
static void refuse(const tt_toml_value *v, const char *file, const char *key, size_t klen,
		   tt_error *err)
{
	tt_buf kb = TT_BUF_INIT;
	if (key)
		tt_toml_write_key(&kb, key, klen);
	else
		tt_buf_puts(&kb, "an array element");
	const char *what = tt_toml_type_of(v) == TT_TOML_FLOAT ? "inf and nan are"
							 : "dates and times are";
	if (kb.failed)
		tt_error_oom(err);
	else if (tt_toml_line(v) > 0)
		tt_error_set(err, TT_ECONFIG, "%s:%d:%d: %s: %s not supported in JSON", file,
			     tt_toml_line(v), tt_toml_col(v), kb.ptr, what);
	else
		tt_error_set(err, TT_ECONFIG, "%s: %s: %s not supported in JSON", file, kb.ptr,
			     what);
	tt_buf_release(&kb);
}

static json_t *to_json(const tt_toml_value *v, const char *file, const char *key, size_t klen,
		       int depth, tt_error *err)
{
	json_t *j = NULL, *c = NULL;
	bool ok = false;

	if (depth > TOML_WRITE_MAX_DEPTH) {
		tt_error_set(err, TT_ELIMIT, "TOML tree nested deeper than %d levels",
			     TOML_WRITE_MAX_DEPTH);
		goto done;
	}
	switch (tt_toml_type_of(v)) {
	case TT_TOML_TABLE:
		if (!(j = json_object()))
			goto oom;
		for (size_t i = 0; i < tt_toml_table_len(v); i++) {
			size_t n;
			const char *k = tt_toml_table_key_n(v, i, &n);
			if (!(c = to_json(tt_toml_table_at(v, i), file, k, n, depth + 1, err)))
				goto done;
			if (json_object_setn_new(j, k, n, c) != 0) /* takes c even then */
				goto oom_taken;
			c = NULL;
		}
		break;
	case TT_TOML_ARRAY:
		if (!(j = json_array()))
			goto oom;
		for (size_t i = 0; i < tt_toml_array_len(v); i++) {
			if (!(c = to_json(tt_toml_array_at(v, i), file, NULL, 0, depth + 1, err)))
				goto done;
			if (json_array_append_new(j, c) != 0)
				goto oom_taken;
			c = NULL;
		}
		break;
	case TT_TOML_STRING: {
		size_t n;
		const char *s = tt_toml_string(v, &n);
		j = json_stringn(s, n);
		break;
	}
	case TT_TOML_INTEGER:
		j = json_integer((json_int_t)tt_toml_integer(v));
		break;
	case TT_TOML_BOOLEAN:
		j = json_boolean(tt_toml_boolean(v));
		break;
	case TT_TOML_FLOAT:
		/* JSON has no inf or nan either. */
		if (!isfinite(tt_toml_float(v))) {
			refuse(v, file, key, klen, err);
			goto done;
		}
		j = json_real(tt_toml_float(v));
		break;
	default:
		refuse(v, file, key, klen, err);
		goto done;
	}
	if (!j)
		goto oom;
	ok = true;
	goto done;
oom_taken:
	c = NULL;
oom:
	tt_error_oom(err);
done:
	json_decref(c);
	if (!ok) {
		json_decref(j);
		j = NULL;
	}
	return j;
}

json_t *tt_toml_to_json(const tt_toml_value *v, const char *filename, tt_error *err)
{
	tt_error local = TT_ERROR_INIT;
	json_t *j = to_json(v, filename ? filename : "<input>", NULL, 0, 0, err ? err : &local);
	tt_error_clear(&local);
	return j;
}

static tt_toml_value *from_json(const json_t *j, int depth, tt_error *err)
{
	tt_toml_value *v = NULL, *c = NULL;
	bool ok = false;

	if (depth > TOML_WRITE_MAX_DEPTH) {
		tt_error_set(err, TT_ELIMIT, "JSON nested deeper than %d levels", TOML_WRITE_MAX_DEPTH);
		goto done;
	}
	switch (json_typeof(j)) {
	case JSON_OBJECT: {
		const char *k;
		size_t klen;
		json_t *jc;
		if (!(v = tt_toml_new_table()))
			goto oom;
		json_object_keylen_foreach((json_t *)j, k, klen, jc) {
			if (json_is_null(jc))
				continue; /* tether-vcs drops nulls before writing */
			if (!(c = from_json(jc, depth + 1, err)))
				goto done;
			if (tt_toml_table_setn(v, k, klen, c) != 0)
				goto oom;
			c = NULL;
		}
		break;
	}
	case JSON_ARRAY: {
		size_t i;
		json_t *jc;
		if (!(v = tt_toml_new_array()))
			goto oom;
		json_array_foreach(j, i, jc) {
			if (json_is_null(jc))
				continue;
			if (!(c = from_json(jc, depth + 1, err)))
				goto done;
			if (tt_toml_array_push(v, c) != 0)
				goto oom;
			c = NULL;
		}
		break;
	}
	case JSON_STRING:
		v = tt_toml_new_string(json_string_value(j), json_string_length(j));
		break;
	case JSON_INTEGER:
		v = tt_toml_new_integer((int64_t)json_integer_value(j));
		break;
	case JSON_REAL:
		v = tt_toml_new_float(json_real_value(j));
		break;
	case JSON_TRUE:
	case JSON_FALSE:
		v = tt_toml_new_boolean(json_is_true(j));
		break;
	case JSON_NULL:
		tt_error_set(err, TT_EUSAGE, "a JSON null has no TOML form");
		goto done;
	}
	if (!v)
		goto oom;
	ok = true;
	goto done;
oom:
	tt_error_oom(err);
done:
	tt_toml_free(c);
	if (!ok) {
		tt_toml_free(v);
		v = NULL;
	}
	return v;
}

tt_toml_value *tt_toml_from_json(const json_t *j, tt_error *err)
{
	tt_error local = TT_ERROR_INIT;
	tt_toml_value *v = j ? from_json(j, 0, err ? err : &local) : NULL;
	if (!j)
		tt_error_set(err, TT_EUSAGE, "no JSON value");
	tt_error_clear(&local);
	return v;
}
