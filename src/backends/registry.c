/*
 * backends/registry.c - the one table of kinds: for each, what core/kinds.h
 * describes (capabilities, maturity, locator keys, what a committed
 * tether.toml may set, volatile state keys), its constructor and its
 * locator check (beside its backend, backends/<kind>/<kind>_locator.c).
 * Adding a kind is adding one entry here.  Building a backend of a kind
 * (tt_backend_new) is here too: the one place above every backend.
 */
#include "backends/registry.h"

#include <stdio.h>
#include <string.h>

#include "backends/backend.h"
#include "util/mem.h"

/* --- the table ------------------------------------------------------------ */

#define L(...) ((const char *const[]){ __VA_ARGS__, NULL })
#define NONE ((const char *const[]){ NULL })

#define TIER_FORK (TT_CAP_FINGERPRINT | TT_CAP_ADDRESSABLE | TT_CAP_PIN | TT_CAP_FORK)
#define TIER_ADDR (TT_CAP_FINGERPRINT | TT_CAP_ADDRESSABLE)

#define STORAGE_OPTS L("region", "allow_http", "virtual_hosted_style_request", "conditional_put")
#define NEON_NOTE "tested against a fake of Neon's API built from its published OpenAPI spec, with real PostgreSQL behind it"

static const tt_kind kinds[] = {
	{
		.name = "delta",
		.query = TT_QUERY_DELTA,
		.maturity = "stable",
		.caps = TIER_ADDR | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_RETENTION_BOUND | TT_CAP_DIFF |
			TT_CAP_HISTORY,
		.built = true,
		.make = tt_delta_backend_new,
		.local_path_keys = L("uri"),
		.local_path_prefixes = NONE,
		.key_suffixes = L(".delta"),
		.safe_config_keys = L("storage_options"),
		.safe_option_keys = STORAGE_OPTS,
		.volatile_keys = NONE,
		.uri_keys = L("uri", "path"),
		.validate_locator = tt_delta_validate_locator,
	},
	{
		.name = "dolt",
		.query = TT_QUERY_DOLT,
		.maturity = "experimental",
		.caps = TIER_FORK | TT_CAP_ATOMIC_REF | TT_CAP_DIFF | TT_CAP_HISTORY |
			TT_CAP_PROMOTE | TT_CAP_MERGE,
		.built = true,
		.make = tt_dolt_backend_new,
		.local_path_keys = NONE,
		.local_path_prefixes = NONE,
		.safe_config_keys = NONE,
		.safe_option_keys = NONE,
		.volatile_keys = NONE,
		.uri_keys = L("uri", "path"),
		.locator_key = "url", /* mysql://user@host:port/database */
		.validate_locator = tt_dolt_validate_locator,
	},
	{
		.name = "ducklake",
		.query = TT_QUERY_DUCKLAKE,
		.maturity = "experimental",
		.caps = TIER_ADDR | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_RETENTION_BOUND | TT_CAP_DIFF |
			TT_CAP_HISTORY,
		.built = true,
		.make = tt_ducklake_backend_new,
		.local_path_keys = L("metadata", "uri", "data_path"),
		.local_path_prefixes = L("ducklake:", "ducklake:duckdb:", "ducklake:sqlite:", "duckdb:", "sqlite:"),
		.safe_config_keys = NONE,
		.safe_option_keys = NONE,
		.volatile_keys = NONE,
		.uri_keys = L("uri", "path"),
		.validate_locator = tt_ducklake_validate_locator,
	},
	{
		.name = "file",
		.query = TT_QUERY_FILES,
		.maturity = "stable",
		.caps = TIER_ADDR | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_DIFF | TT_CAP_CREATE,
		.built = true,
		.make = tt_file_backend_new,
		.local_path_keys = L("uri", "path"),
		.local_path_prefixes = NONE,
		.key_suffixes = NONE,
		.safe_config_keys = L("storage_options"),
		.safe_option_keys = STORAGE_OPTS,
		.volatile_keys = NONE,
		.uri_keys = L("uri", "path"),
		.checkout_keys = L("fsmonitor"),
	},
	{
		.name = "git",
		.query = TT_QUERY_COMMITS,
		.maturity = "stable",
		.caps = TIER_FORK | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_ATOMIC_REF | TT_CAP_DIFF |
			TT_CAP_HISTORY | TT_CAP_PROMOTE | TT_CAP_MERGE | TT_CAP_CREATE |
			TT_CAP_CONDITIONAL_REF,
		.built = true,
		.make = tt_git_backend_new,
		.local_path_keys = L("path", "uri"),
		.local_path_prefixes = NONE,
		.key_suffixes = L(".git"),
		.safe_config_keys = NONE,
		.safe_option_keys = NONE,
		.volatile_keys = L("change_id", "dirty"),
		.uri_keys = L("uri", "path"),
		.vcs_config_keys = L("git_path", "jj_path"),
		.validate_locator = tt_git_validate_locator,
	},
	{
		.name = "iceberg",
		.query = TT_QUERY_ICEBERG,
		.maturity = "experimental",
		.caps = TIER_FORK | TT_CAP_RETENTION_BOUND | TT_CAP_DIFF | TT_CAP_HISTORY |
			TT_CAP_PROMOTE,
		.built = true,
		.make = tt_iceberg_backend_new,
		.local_path_keys = NONE,
		.local_path_prefixes = NONE,
		.safe_config_keys = L("catalog"),
		.safe_option_keys = L("type", "warehouse", "name"),
		.volatile_keys = L("metadata_location"),
		.uri_keys = L("identifier"),
	},
	{
		.name = "icechunk",
		.query = TT_QUERY_ARRAYS,
		.maturity = "stable",
		.caps = TIER_FORK | TT_CAP_ATOMIC_REF | TT_CAP_DIFF | TT_CAP_HISTORY |
			TT_CAP_PROMOTE | TT_CAP_CREATE,
		.built = true,
		.make = tt_icechunk_backend_new,
		.local_path_keys = L("uri"),
		.local_path_prefixes = NONE,
		.key_suffixes = L(".icechunk", ".zarr"),
		.safe_config_keys = NONE,
		.safe_option_keys = NONE,
		.volatile_keys = NONE,
		.uri_keys = L("uri", "path"),
		.validate_locator = tt_icechunk_validate_locator,
	},
	{
		.name = "lance",
		.query = TT_QUERY_LANCE,
		.maturity = "stable",
		.caps = TIER_FORK | TT_CAP_ATOMIC_REF | TT_CAP_DIFF | TT_CAP_HISTORY,
		.built = true,
		.make = tt_lance_backend_new,
		.local_path_keys = L("uri"),
		.local_path_prefixes = NONE,
		.key_suffixes = L(".lance"),
		.safe_config_keys = L("storage_options"),
		.safe_option_keys = STORAGE_OPTS,
		.volatile_keys = NONE,
		.uri_keys = L("uri", "path"),
	},
	{
		.name = "memory",
		.query = TT_QUERY_SPEC,
		.maturity = "stable",
		.caps = TIER_FORK | TT_CAP_CHEAP_FINGERPRINT | TT_CAP_ATOMIC_REF | TT_CAP_DIFF |
			TT_CAP_HISTORY | TT_CAP_PROMOTE | TT_CAP_MERGE | TT_CAP_CREATE |
			TT_CAP_CONDITIONAL_REF,
		.built = true,
		.make = tt_memory_backend_new,
		.local_path_keys = NONE,
		.local_path_prefixes = NONE,
		.safe_config_keys = L("store"),
		.safe_option_keys = NONE,
		.volatile_keys = NONE,
		.uri_keys = L("system", "uri"),
	},
	{
		.name = "neon",
		.query = TT_QUERY_NEON,
		.maturity = "experimental",
		.caps = TIER_FORK | TT_CAP_NEEDS_QUIESCENCE | TT_CAP_RETENTION_BOUND |
			TT_CAP_BRANCH_IS_STORAGE,
		.built = true,
		.make = tt_neon_backend_new,
		.not_built_note = NEON_NOTE,
		.local_path_keys = NONE,
		.local_path_prefixes = NONE,
		.safe_config_keys = NONE,
		.safe_option_keys = NONE,
		.volatile_keys = L("lsn", "timeline"),
		.uri_keys = L("uri", "path"),
		.validate_locator = tt_neon_validate_locator,
	},
};

const tt_kind *tt_kinds(size_t *count)
{
	*count = sizeof kinds / sizeof kinds[0];
	return kinds;
}

const tt_kind *tt_kind_find(const char *name)
{
	return tt_kind_in(kinds, sizeof kinds / sizeof kinds[0], name);
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

/* --- building a backend of a kind -------------------------------------- */

int tt_backend_new(tt_backend **out, const tt_kind *kind, const json_t *config,
		   const char *cache_dir, const char *checkout, tt_error *err)
{
	int rc = 0;
	tt_backend *b = NULL;
	int (*make)(tt_backend *b, tt_error *err) = NULL;

	*out = NULL;
	if (!kind || !kind->name)
		return tt_error_set(err, TT_EUSAGE, "no backend kind given");
	/* The constructor comes from the one table of kinds, found by name: a
	 * copy of a kind under another name builds nothing. */
	const tt_kind *registered = tt_kind_find(kind->name);
	make = registered ? registered->make : NULL;
	if (!make) {
		rc = tt_error_set(err, TT_ECAPABILITY,
				  "the %s backend is not built into this tether yet", kind->name);
		tt_error_object(err, NULL, kind->name);
		goto done;
	}
	b = tt_calloc(1, sizeof *b);
	if (!b) {
		rc = tt_error_oom(err);
		goto done;
	}
	b->kind = kind;
	b->config = config ? json_deep_copy(config) : json_object();
	b->secret_rules = json_object();
	b->cache_dir = cache_dir ? tt_strdup(cache_dir) : NULL;
	b->checkout = checkout ? tt_strdup(checkout) : NULL;
	if (!b->config || !b->secret_rules || (cache_dir && !b->cache_dir) ||
	    (checkout && !b->checkout)) {
		rc = tt_error_oom(err);
		goto done;
	}
	rc = make(b, err);
	if (rc)
		goto done;
	if (!b->ops || b->ops->abi != TT_BACKEND_ABI) {
		rc = tt_error_set(err, TT_EBACKEND, "the %s backend speaks another backend ABI",
				  kind->name);
		tt_error_object(err, NULL, kind->name);
		goto done;
	}
	*out = b;
	b = NULL;
done:
	tt_backend_free(b);
	return rc;
}
