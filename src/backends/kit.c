/*
 * backends/kit.c - the pieces several backends share (see kit.h).
 */
#include "backends/kit.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "core/ids.h"

static const char *kind_of(const tt_backend *b)
{
	return b && b->kind && b->kind->name ? b->kind->name : "backend";
}

int tt_kit_fill_pin(tt_pin *out, const char *kind, const char *pin_id, const char *ref, bool created,
		    tt_error *err)
{
	memset(out, 0, sizeof *out);
	if (!pin_id)
		return TT_BACKEND_ERR(err, kind, TT_EUSAGE, "pin needs an id");
	if (strlen(pin_id) >= sizeof out->id ||
	    (ref ? snprintf(out->ref, sizeof out->ref, "%s", ref) >= (int)sizeof out->ref
		 : tt_ref_for_pin(out->ref, sizeof out->ref, pin_id) != 0)) {
		memset(out, 0, sizeof *out);
		return TT_BACKEND_ERR(err, kind, TT_ELIMIT, "pin id %s is too long", pin_id);
	}
	memcpy(out->id, pin_id, strlen(pin_id) + 1);
	out->created = created;
	return 0;
}

static int no_pin(const tt_backend *b, tt_error *err)
{
	const char *why = b->ops && b->ops->no_pin ? b->ops->no_pin : "this kind cannot pin";
	return TT_BACKEND_ERR(err, kind_of(b), TT_ECAPABILITY, "%s", why);
}

int tt_kit_no_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id, tt_pin *out,
		  tt_error *err)
{
	(void)loc, (void)state, (void)pin_id, (void)out;
	return no_pin(b, err);
}

int tt_kit_no_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err)
{
	(void)loc, (void)pin;
	return no_pin(b, err);
}

int tt_kit_no_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err)
{
	(void)loc;
	*ids = json_array();
	return *ids ? 0 : TT_BACKEND_OOM(err, kind_of(b));
}

int tt_kit_no_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		   const tt_expect *expected, char **ref_out, tt_error *err)
{
	(void)loc, (void)source, (void)name, (void)expected;
	*ref_out = NULL;
	const char *why = b->ops && b->ops->no_fork ? b->ops->no_fork : "this kind cannot fork";
	return TT_BACKEND_ERR(err, kind_of(b), TT_ECAPABILITY, "%s", why);
}

int tt_kit_no_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err)
{
	(void)b, (void)loc, (void)ref, (void)err;
	return 0; /* there are none */
}

int tt_kit_no_blockers(tt_backend *b, const json_t *loc, const char *ref, char **why, tt_error *err)
{
	(void)b, (void)loc, (void)ref, (void)err;
	*why = NULL;
	return 0;
}

int tt_kit_keep_ref(json_t *out, const char *name, const char *prefix, const char *skip, bool strip)
{
	size_t n = strlen(prefix);
	if (!name || strncmp(name, prefix, n) != 0 || (skip && strncmp(name, skip, strlen(skip)) == 0))
		return 0;
	return json_array_append_new(out, json_string(strip ? name + n : name)) == 0 ? 0 : TT_ENOMEM;
}

/* --- locator checks' helpers ---------------------------------------------- */

const char *tt_kit_locator_str(const json_t *loc, const char *key)
{
	json_t *v = json_object_get(loc, key);
	return json_is_string(v) ? json_string_value(v) : NULL;
}

/* The `at` a locator gives, as text ("" when absent). */
static int at_text(const json_t *loc, char *buf, size_t n)
{
	json_t *v = json_object_get(loc, "at");
	if (!v || json_is_null(v))
		return 0;
	if (json_is_integer(v))
		return snprintf(buf, n, "%lld", (long long)json_integer_value(v)) > 0;
	if (json_is_string(v))
		return snprintf(buf, n, "%s", json_string_value(v)) >= 0;
	return snprintf(buf, n, "?") > 0;
}

static bool all_digits(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isdigit((unsigned char)*s))
			return false;
	return true;
}

int tt_kit_locator_version_at(const json_t *loc, const char *kind, const char *what, tt_error *err)
{
	char at[256] = "";
	at_text(loc, at, sizeof at);
	if (at[0] && !all_digits(at)) {
		tt_error_set(err, TT_EBACKEND, "%s `at` must be a %s number, got '%s'", kind, what, at);
		return tt_error_object(err, NULL, kind);
	}
	return 0;
}
