/* core/kinds.c - the table of kinds (see kinds.h). */
#include "core/kinds.h"

#include <ctype.h>
#include <string.h>

#include "util/mem.h"

static const char *const cap_names[TT_CAP_COUNT] = {
	"fingerprint", "addressable", "pin", "fork", "cheap_fingerprint",
	"retention_bound", "needs_quiescence", "atomic_ref", "diff", "history",
	"branch_is_storage", "promote", "merge", "create", "conditional_ref",
};

const char *tt_cap_name(unsigned bit_index)
{
	return bit_index < TT_CAP_COUNT ? cap_names[bit_index] : "?";
}

const char *tt_tier_name(unsigned caps)
{
	if (caps & TT_CAP_FORK)
		return "forkable";
	if (caps & TT_CAP_PIN)
		return "pinnable";
	if (caps & TT_CAP_ADDRESSABLE)
		return "addressable";
	return "observed";
}

/* --- locator checks ------------------------------------------------------ */

static const char *str_field(const json_t *loc, const char *key)
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

static int version_at(const json_t *loc, const char *kind, const char *what, tt_error *err)
{
	char at[256] = "";
	at_text(loc, at, sizeof at);
	if (at[0] && !all_digits(at)) {
		tt_error_set(err, TT_EBACKEND, "%s `at` must be a %s number, got '%s'", kind, what, at);
		return tt_error_object(err, NULL, kind);
	}
	return 0;
}

static int delta_validate(const json_t *loc, const char *checkout, tt_error *err)
{
	return version_at(loc, "delta", "table version", err);
}

static int ducklake_validate(const json_t *loc, const char *checkout, tt_error *err)
{
	/* A PostgreSQL catalog's password belongs in secrets, never in a
	 * committed locator (libpq's password= word, or user:password@ in a URI). */
	static const char *const keys[] = { "metadata", "uri" };
	for (size_t i = 0; i < 2; i++) {
		const char *m = str_field(loc, keys[i]);
		const char *pg = m ? strstr(m, "postgres:") : NULL;
		if (!pg)
			continue;
		const char *at = strchr(pg, '@'), *scheme = strstr(pg, "://");
		const char *colon = scheme && at ? memchr(scheme + 3, ':', (size_t)(at - scheme - 3)) : NULL;
		if (strstr(pg, "password") || colon) {
			tt_error_set(err, TT_EBACKEND,
				     "ducklake locator's %s holds a password: a locator is committed", keys[i]);
			tt_error_hint(err, "put `password = \"...\"` under [objects.\"<key>\"] in .tether/secrets.toml");
			return tt_error_object(err, NULL, "ducklake");
		}
	}
	return version_at(loc, "ducklake", "snapshot", err);
}

static int neon_validate(const json_t *loc, const char *checkout, tt_error *err)
{
	static const char *const need[] = { "project_id", "database", "role" };
	char missing[128] = "";
	for (size_t i = 0; i < 3; i++) {
		const char *v = str_field(loc, need[i]);
		json_t *raw = json_object_get(loc, need[i]);
		if ((v && *v) || (raw && !json_is_string(raw) && !json_is_null(raw)))
			continue;
		size_t l = strlen(missing);
		snprintf(missing + l, sizeof missing - l, "%s'%s'", l ? ", " : "", need[i]);
	}
	if (missing[0]) {
		tt_error_set(err, TT_EBACKEND,
			     "neon locator needs %s (`--project-id`, `--database`, `--role`)", missing);
		return tt_error_object(err, NULL, "neon");
	}
	return 0;
}

static bool has_scheme(const char *s)
{
	/* RFC 3986 scheme: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." ) ":" */
	if (!isalpha((unsigned char)s[0]))
		return false;
	for (const char *p = s + 1; *p; p++) {
		if (*p == ':')
			return true;
		if (!isalnum((unsigned char)*p) && *p != '+' && *p != '-' && *p != '.')
			return false;
	}
	return false;
}

static int icechunk_validate(const json_t *loc, const char *checkout, tt_error *err)
{
	const char *uri = str_field(loc, "uri");
	if (!uri)
		uri = str_field(loc, "path");
	if (!uri || uri[0] == '/' || strncmp(uri, "file:", 5) == 0 || !has_scheme(uri))
		return 0;
	if (strncmp(uri, "s3://", 5) == 0)
		return 0;
	/* Azure Blob: icechunk writes it (tether-vcs takes s3 only) */
	if (strncmp(uri, "az://", 5) == 0 || strncmp(uri, "azure://", 8) == 0)
		return 0;
	size_t n = (size_t)(strchr(uri, ':') - uri);
	tt_error_set(err, TT_EBACKEND,
		     "unsupported icechunk storage scheme: '%.*s' (one of 'file', 's3', 'az')", (int)n, uri);
	return tt_error_object(err, NULL, "icechunk");
}

/* git: nothing a manifest names may reach git as an option, and the
 * repository must be an absolute path outside the dataset's checkout. */
static int git_guard(const char *value, const char *what, tt_error *err)
{
	if (!value[0] || value[0] == '-') {
		tt_error_set(err, TT_EBACKEND, "git %s '%s' looks like an option; refused", what, value);
		return tt_error_object(err, NULL, "git");
	}
	return 0;
}

static int git_validate(const json_t *loc, const char *checkout, tt_error *err)
{
	static const char *const refs[] = { "ref", "at", "remote" };
	int rc;
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_object_get(loc, refs[i]);
		if (!v || json_is_null(v))
			continue;
		char text[512];
		if (json_is_string(v))
			snprintf(text, sizeof text, "%s", json_string_value(v));
		else
			snprintf(text, sizeof text, "%lld", (long long)json_integer_value(v));
		if ((rc = git_guard(text, refs[i], err)) < 0)
			return rc;
	}
	const char *path = str_field(loc, "path");
	if (!path)
		path = str_field(loc, "uri");
	if (!path)
		return 0;
	if ((rc = git_guard(path, "path", err)) < 0)
		return rc;
	if (path[0] != '/') {
		tt_error_set(err, TT_EBACKEND,
			     "git path '%s' is not absolute; `add` stores an absolute path, so this "
			     "manifest was written by hand", path);
		return tt_error_object(err, NULL, "git");
	}
	if (checkout) {
		size_t n = strlen(checkout);
		if (strncmp(path, checkout, n) == 0 && (path[n] == '\0' || path[n] == '/' ||
							 (n == 1 && checkout[0] == '/'))) {
			tt_error_set(err, TT_EBACKEND,
				     "git path %s is inside the dataset's checkout (%s), whose files "
				     "came with the clone; point it at a repository outside it",
				     path, checkout);
			return tt_error_object(err, NULL, "git");
		}
	}
	return 0;
}

/* dolt: a database is required, and a committed locator never holds a
 * password (it belongs in .tether/secrets.toml's server entry). */
static int dolt_validate(const json_t *loc, const char *checkout, tt_error *err)
{
	const char *url = str_field(loc, "url");
	(void)checkout;
	if (url && *url) {
		const char *p = strncmp(url, "mysql://", 8) == 0 ? url + 8 : NULL;
		const char *end = p ? p + strcspn(p, "/") : NULL;
		const char *at = p ? memchr(p, '@', (size_t)(end - p)) : NULL;
		if (!p) {
			tt_error_set(err, TT_EBACKEND, "dolt url '%s' is not mysql://user@host:port/database", url);
			return tt_error_object(err, NULL, "dolt");
		}
		if (at && memchr(p, ':', (size_t)(at - p))) {
			tt_error_set(err, TT_EBACKEND,
				     "dolt url holds a password: a locator is committed; put it in "
				     ".tether/secrets.toml [uris.\"mysql://host:port\"]");
			return tt_error_object(err, NULL, "dolt");
		}
		return 0;
	}
	const char *db = str_field(loc, "database");
	if (!db || !*db) {
		tt_error_set(err, TT_EBACKEND, "dolt locator needs 'database' (or a url)");
		tt_error_hint(err, "tether add KEY --kind dolt --database NAME [--host H --port P]");
		return tt_error_object(err, NULL, "dolt");
	}
	return 0;
}

/* --- the table ------------------------------------------------------------ */

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define NONE ((const char *const[]){ NULL })

#define TIER_FORK (TT_CAP_FINGERPRINT | TT_CAP_ADDRESSABLE | TT_CAP_PIN | TT_CAP_FORK)
#define TIER_ADDR (TT_CAP_FINGERPRINT | TT_CAP_ADDRESSABLE)

#define STORAGE_OPTS L("region", "allow_http", "virtual_hosted_style_request", "conditional_put")
#define NEON_NOTE "tested against a fake of Neon's API built from its published OpenAPI spec, with real PostgreSQL behind it"
#define NOT_YET "not built into this tether yet: this kind arrives with its own release"

static const tt_kind kinds[] = {
	{ "delta", "stable",
	  TIER_ADDR | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_RETENTION_BOUND | TT_CAP_DIFF | TT_CAP_HISTORY,
	  true, NULL, L("uri"), NONE, L(".delta"), L("storage_options"), STORAGE_OPTS, NONE,
	  L("uri", "path"), delta_validate },
	{ "dolt", "experimental",
	  TIER_FORK | TT_CAP_ATOMIC_REF | TT_CAP_DIFF | TT_CAP_HISTORY | TT_CAP_PROMOTE | TT_CAP_MERGE,
	  true, NULL, NONE, NONE, NULL, NONE, NONE, NONE, L("uri", "path"), dolt_validate },
	{ "ducklake", "experimental",
	  TIER_ADDR | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_RETENTION_BOUND | TT_CAP_DIFF | TT_CAP_HISTORY,
	  true, NULL, L("metadata", "uri", "data_path"),
	  L("ducklake:", "ducklake:duckdb:", "ducklake:sqlite:", "duckdb:", "sqlite:"), NULL, NONE,
	  NONE, NONE, L("uri", "path"), ducklake_validate },
	{ "file", "stable",
	  TIER_ADDR | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_DIFF | TT_CAP_CREATE,
	  true, NULL, L("uri", "path"), NONE, NONE, L("storage_options"), STORAGE_OPTS, NONE,
	  L("uri", "path"), NULL },
	{ "git", "stable",
	  TIER_FORK | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_ATOMIC_REF | TT_CAP_DIFF | TT_CAP_HISTORY |
		  TT_CAP_PROMOTE | TT_CAP_MERGE | TT_CAP_CREATE | TT_CAP_CONDITIONAL_REF,
	  true, NULL, L("path", "uri"), NONE, L(".git"), NONE, NONE, L("change_id", "dirty"),
	  L("uri", "path"), git_validate },
	{ "iceberg", "experimental",
	  TIER_FORK | TT_CAP_RETENTION_BOUND | TT_CAP_DIFF | TT_CAP_HISTORY | TT_CAP_PROMOTE,
	  true, NULL, NONE, NONE, NULL, L("catalog"), L("type", "warehouse", "name"),
	  L("metadata_location"), L("identifier"), NULL },
	{ "icechunk", "stable",
	  TIER_FORK | TT_CAP_ATOMIC_REF | TT_CAP_DIFF | TT_CAP_HISTORY | TT_CAP_PROMOTE | TT_CAP_CREATE,
	  true, NULL, L("uri"), NONE, L(".icechunk", ".zarr"), NONE, NONE, NONE,
	  L("uri", "path"), icechunk_validate },
	{ "lance", "stable",
	  TIER_FORK | TT_CAP_ATOMIC_REF | TT_CAP_DIFF | TT_CAP_HISTORY,
	  true, NULL, L("uri"), NONE, L(".lance"), L("storage_options"), STORAGE_OPTS, NONE,
	  L("uri", "path"), NULL },
	{ "memory", "stable",
	  TIER_FORK | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_ATOMIC_REF | TT_CAP_DIFF | TT_CAP_HISTORY |
		  TT_CAP_PROMOTE | TT_CAP_MERGE | TT_CAP_CREATE | TT_CAP_CONDITIONAL_REF,
	  true, NULL, NONE, NONE, NULL, L("store"), NONE, NONE, L("system", "uri"), NULL },
	{ "neon", "experimental",
	  TIER_FORK | TT_CAP_NEEDS_QUIESCENCE | TT_CAP_RETENTION_BOUND | TT_CAP_BRANCH_IS_STORAGE,
	  true, NEON_NOTE, NONE, NONE, NULL, NONE, NONE, L("lsn", "timeline"), L("uri", "path"),
	  neon_validate },
};

const tt_kind *tt_kinds(size_t *count)
{
	*count = sizeof kinds / sizeof kinds[0];
	return kinds;
}

const tt_kind *tt_kind_find(const char *name)
{
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	return NULL;
}

int tt_kind_lookup(const tt_kind **out, const char *name, tt_error *err)
{
	*out = tt_kind_find(name);
	if (*out)
		return 0;
	char known[256] = "";
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		size_t l = strlen(known);
		snprintf(known + l, sizeof known - l, "%s%s", i ? ", " : "", kinds[i].name);
	}
	if (strcmp(name, "lakefs") == 0)
		return tt_error_set(err, TT_ECONFIG,
				    "the lakefs backend was removed in tether-vcs 0.1.0b4 (known: %s)", known);
	return tt_error_set(err, TT_ECONFIG, "unknown backend kind: '%s' (known: %s)", name, known);
}

bool tt_kind_is_volatile(const tt_kind *k, const char *state_key)
{
	for (const char *const *v = k->volatile_keys; v && *v; v++)
		if (strcmp(*v, state_key) == 0)
			return true;
	return false;
}

json_t *tt_content_state(const tt_kind *k, const json_t *state)
{
	json_t *out = json_object();
	const char *key;
	json_t *val;
	if (!out)
		return NULL;
	json_object_foreach((json_t *)state, key, val) {
		if (tt_kind_is_volatile(k, key))
			continue;
		if (json_object_set(out, key, val) < 0) {
			json_decref(out);
			return NULL;
		}
	}
	return out;
}
