/*
 * backends/kit.c - the pieces several backends share (see kit.h).
 */
#include "backends/kit.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "storage/store.h"
#include "util/json.h"

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

int tt_kit_no_merge(tt_backend *b, const json_t *loc, const tt_target *source, const char *message,
		    const tt_expect *expected, json_t **new_state, json_t **conflicts, tt_error *err)
{
	(void)loc, (void)source, (void)message, (void)expected;
	*new_state = NULL;
	*conflicts = NULL;
	const char *why = b->ops && b->ops->no_merge ? b->ops->no_merge : "this kind cannot merge";
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

int tt_kit_uri_identity(const tt_backend *b, const char *uri, json_t **out, tt_error *err)
{
	char *path = NULL;
	int rc = tt_store_local_path(uri, &path);
	const char *canon = path ? path : uri;
	*out = NULL;
	if (rc < 0)
		return TT_BACKEND_OOM(err, kind_of(b));
	if (!tt_utf8_valid(canon, strlen(canon)))
		rc = TT_BACKEND_ERR(err, kind_of(b), TT_EBACKEND, "the path is not valid UTF-8: %s", canon);
	else if (!(*out = json_pack("{s:s}", "uri", canon)))
		rc = TT_BACKEND_OOM(err, kind_of(b));
	else
		rc = 0;
	free(path);
	return rc;
}

int tt_kit_storage_options(tt_backend *b, const json_t *loc, json_t **out, tt_error *err)
{
	const json_t *loc_region = json_object_get(loc, "region");
	static const char *const region_keys[] = { "region", "aws_region", "default_region",
						    "aws_default_region", NULL };
	static const char *const secret_keys[] = { "access_key_id", "secret_access_key",
						    "session_token", "profile", "role_arn",
						    /* Azure Blob */
						    "account_name", "account_key", "sas_token",
						    "use_emulator",
						    /* GCS */
						    "service_account_path", "service_account",
						    "service_account_key", "bearer_token", NULL };
	json_t *all = NULL, *o = json_object(), *so, *region = NULL, *v;
	const char *k;
	int rc;

	*out = NULL;
	if (!o)
		return tt_error_oom(err);
	if ((rc = tt_backend_secrets_for(b, loc, &all, err)) != 0) {
		json_decref(o);
		return rc;
	}
	so = json_object_get(all, "storage_options");
	json_object_foreach(so, k, v) {
		bool is_region = false;
		for (const char *const *r = region_keys; *r; r++)
			is_region |= strcasecmp(k, *r) == 0;
		if (is_region)
			region = v;
		else if (json_object_set(o, k, v) < 0)
			goto oom;
	}
	for (const char *const *sk = secret_keys; *sk; sk++)
		if ((v = json_object_get(all, *sk)) && json_object_set(o, *sk, v) < 0)
			goto oom;
	if ((v = json_object_get(all, "endpoint_url")) && json_object_set(o, "endpoint_url", v) < 0)
		goto oom;
	/* HTTP client options (seconds) from the secrets entry, any spelling
	 * ("timeout", "aws_timeout", "client_timeout"): not committed, since a
	 * clone must not make every request wait; tether-vcs ignores them */
	json_object_foreach(all, k, v) {
		static const char *const client[] = { "connect_timeout", "timeout", "request_timeout",
						      NULL };
		const char *bare = !strncasecmp(k, "aws_", 4)       ? k + 4
				   : !strncasecmp(k, "client_", 7) ? k + 7
								   : k;
		for (const char *const *c = client; *c; c++)
			if (strcasecmp(bare, *c) == 0 && json_object_set(o, *c, v) < 0)
				goto oom;
	}
	if (tt_pyv_truthy(json_object_get(all, "region")))
		region = json_object_get(all, "region");
	else if (tt_pyv_truthy(loc_region))
		region = (json_t *)loc_region;
	if (region && json_object_set(o, "region", region) < 0)
		goto oom;
	json_decref(all);
	*out = o;
	return 0;
oom:
	json_decref(all);
	json_decref(o);
	return tt_error_oom(err);
}

static tt_kit_note_fn note_fn;
static void *note_ctx;

void tt_kit_set_note(tt_kit_note_fn fn, void *ctx)
{
	note_fn = fn;
	note_ctx = ctx;
}

bool tt_kit_noting(void)
{
	return note_fn != NULL;
}

void tt_kit_note(const char *kind, const char *about, const char *fmt, ...)
{
	char what[512];
	va_list ap;
	if (!note_fn)
		return;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	note_fn(note_ctx, kind, about, what);
}
