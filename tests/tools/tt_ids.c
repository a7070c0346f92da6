/*
 * tt_ids - drive core/ids and util/json from the compatibility tests.
 *
 * Reads one JSON object per line on stdin and prints one line per case:
 * the result as a JSON string (ASCII-escaped, so it stays on one line),
 * `null` where tether-vcs returns None, or {"error": "..."}.
 *
 *   {"op":"pin_id","dataset":S,"kind":S,"identity":V,"state":V}
 *   {"op":"listing_name","kind":S,"identity":V,"state":V}
 *   {"op":"canonical","value":V}          canonical_bytes(V)
 *   {"op":"pretty","value":V}             json.dumps(V, indent=2)
 *   {"op":"manifest_hash","entries":[[key, canonical_string], ...]}
 *   {"op":"working_ref","dataset":S,"bookmark":S}
 *   {"op":"bookmark_slug","bookmark":S}
 *   {"op":"pin_id_of_ref","ref":S}
 *   {"op":"pin_dataset","pin":S}
 *   {"op":"blake","parts":[S, ...],"size":N}   _blake(*utf8 parts, size=N)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "util/buf.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"

/* A string member without embedded NUL, or NULL with err set. */
static const char *str_member(const json_t *o, const char *name, tt_error *err)
{
	json_t *v = json_object_get(o, name);
	if (!json_is_string(v)) {
		tt_error_set(err, TT_EUSAGE, "\"%s\" must be a string", name);
		return NULL;
	}
	if (strlen(json_string_value(v)) != json_string_length(v)) {
		tt_error_set(err, TT_EUSAGE, "\"%s\" holds a NUL character", name);
		return NULL;
	}
	return json_string_value(v);
}

static json_t *any_member(const json_t *o, const char *name, tt_error *err)
{
	json_t *v = json_object_get(o, name);
	if (!v)
		tt_error_set(err, TT_EUSAGE, "\"%s\" is missing", name);
	return v;
}

/* Run one case; the result text goes to res, *is_null for None. */
static int run_case(const json_t *c, tt_buf *res, int *is_null, tt_error *err)
{
	const char *op = str_member(c, "op", err);
	if (!op)
		return err->code;

	if (!strcmp(op, "pin_id") || !strcmp(op, "listing_name")) {
		int pin = !strcmp(op, "pin_id");
		const char *ds = pin ? str_member(c, "dataset", err) : "";
		const char *kind = ds ? str_member(c, "kind", err) : NULL;
		json_t *identity = kind ? any_member(c, "identity", err) : NULL;
		json_t *state = identity ? any_member(c, "state", err) : NULL;
		char out[TT_PIN_ID_MAX];
		int rc;
		if (!state)
			return err->code;
		if (pin)
			rc = tt_pin_id(out, ds, kind, identity, state, err);
		else
			rc = tt_listing_name(out, kind, identity, state, err);
		return rc ? rc : tt_buf_puts(res, out);
	}
	if (!strcmp(op, "canonical") || !strcmp(op, "pretty")) {
		json_t *v = any_member(c, "value", err);
		if (!v)
			return err->code;
		int rc = tt_json_dump(res, v, !strcmp(op, "pretty") ? TT_JSON_PRETTY
								 : TT_JSON_CANONICAL);
		return rc ? tt_error_set(err, rc, "cannot dump the value (%s)", tt_code_name(rc)) : 0;
	}
	if (!strcmp(op, "manifest_hash")) {
		json_t *list = any_member(c, "entries", err);
		size_t n = json_array_size(list);
		tt_keyed_canon *e = NULL;
		char hex[65];
		int rc = 0;
		if (!list)
			return err->code;
		if (!json_is_array(list))
			return tt_error_set(err, TT_EUSAGE, "\"entries\" must be a list");
		if (n && !(e = tt_calloc(n, sizeof *e)))
			return tt_error_oom(err);
		for (size_t i = 0; i < n && !rc; i++) {
			json_t *pair = json_array_get(list, i);
			json_t *k = json_array_get(pair, 0), *v = json_array_get(pair, 1);
			if (json_array_size(pair) != 2 || !json_is_string(k) || !json_is_string(v) ||
			    strlen(json_string_value(k)) != json_string_length(k) ||
			    strlen(json_string_value(v)) != json_string_length(v)) {
				rc = tt_error_set(err, TT_EUSAGE, "entry %zu: want [key, canonical]", i);
				break;
			}
			e[i].key = json_string_value(k);
			e[i].canonical = json_string_value(v);
		}
		if (!rc)
			rc = tt_manifest_hash_of(hex, e, n, err);
		free(e);
		return rc ? rc : tt_buf_puts(res, hex);
	}
	if (!strcmp(op, "working_ref") || !strcmp(op, "bookmark_slug")) {
		int ref = !strcmp(op, "working_ref");
		const char *ds = ref ? str_member(c, "dataset", err) : "";
		const char *bm = ds ? str_member(c, "bookmark", err) : NULL;
		char *out = NULL;
		int rc;
		if (!bm)
			return err->code;
		rc = ref ? tt_working_ref_name(&out, ds, bm, err) : tt_bookmark_slug(&out, bm, err);
		if (rc)
			return rc;
		tt_buf_puts(res, out);
		free(out);
		return 0;
	}
	if (!strcmp(op, "pin_id_of_ref")) {
		const char *ref = str_member(c, "ref", err);
		size_t off, len;
		if (!ref)
			return err->code;
		if (tt_pin_id_span(ref, &off, &len))
			return tt_buf_put(res, ref + off, len);
		*is_null = 1;
		return 0;
	}
	if (!strcmp(op, "pin_dataset")) {
		const char *pin = str_member(c, "pin", err);
		char ds[TT_DATASET_ID_LEN + 1];
		if (!pin)
			return err->code;
		if (tt_pin_dataset(pin, ds))
			return tt_buf_puts(res, ds);
		*is_null = 1;
		return 0;
	}
	if (!strcmp(op, "blake")) {
		json_t *list = any_member(c, "parts", err);
		json_t *size = list ? any_member(c, "size", err) : NULL;
		size_t n = json_array_size(list);
		tt_bytes *parts = NULL;
		char hex[129];
		int rc = 0;
		if (!size)
			return err->code;
		if (!json_is_integer(size) || json_integer_value(size) < 1 ||
		    json_integer_value(size) > 64)
			return tt_error_set(err, TT_EUSAGE, "\"size\" must be 1..64");
		if (n && !(parts = tt_calloc(n, sizeof *parts)))
			return tt_error_oom(err);
		for (size_t i = 0; i < n; i++) {
			json_t *p = json_array_get(list, i);
			if (!json_is_string(p)) {
				rc = tt_error_set(err, TT_EUSAGE, "part %zu is not a string", i);
				break;
			}
			parts[i].data = json_string_value(p);
			parts[i].len = json_string_length(p);
		}
		if (!rc && tt_blake_parts(hex, (size_t)json_integer_value(size), parts, n) != 0)
			rc = tt_error_set(err, TT_ERROR, "BLAKE2b failed");
		free(parts);
		return rc ? rc : tt_buf_puts(res, hex);
	}
	return tt_error_set(err, TT_EUSAGE, "unknown op \"%s\"", op);
}

int main(void)
{
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	unsigned long lineno = 0;
	tt_buf res = TT_BUF_INIT, out = TT_BUF_INIT;

	while ((n = getline(&line, &cap, stdin)) >= 0) {
		tt_error err = TT_ERROR_INIT;
		char what[32];
		int is_null = 0, rc;

		lineno++;
		snprintf(what, sizeof what, "<stdin:%lu>", lineno);
		tt_buf_reset(&res);
		tt_buf_reset(&out);
		json_t *c = tt_json_parse(line, (size_t)n, what, &err);
		if (!c)
			rc = err.code;
		else if (!json_is_object(c))
			rc = tt_error_set(&err, TT_EUSAGE, "a case must be a JSON object");
		else
			rc = run_case(c, &res, &is_null, &err);
		json_decref(c);

		if (!rc && res.failed)
			rc = tt_buf_check(&res, &err, "result");
		if (rc) {
			const char *msg = err.message ? err.message : tt_code_name(rc);
			tt_buf_puts(&out, "{\"error\": ");
			if (tt_json_dump_string(&out, msg, strlen(msg), true) != 0) {
				tt_buf_reset(&out);
				tt_buf_puts(&out, "{\"error\": \"(unprintable message)\"");
			}
			tt_buf_putc(&out, '}');
		} else if (is_null) {
			tt_buf_puts(&out, "null");
		} else {
			tt_json_dump_string(&out, res.ptr, res.len, true);
		}
		tt_buf_putc(&out, '\n');
		tt_error_clear(&err);
		if (out.failed || fwrite(out.ptr, 1, out.len, stdout) != out.len) {
			fprintf(stderr, "tt_ids: cannot write the result of line %lu\n", lineno);
			free(line);
			tt_buf_release(&res);
			tt_buf_release(&out);
			return 1;
		}
	}
	free(line);
	tt_buf_release(&res);
	tt_buf_release(&out);
	return fflush(stdout) == 0 ? 0 : 1;
}
