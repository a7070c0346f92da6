/*
 * backends/registry.c - the one table of kinds: for each, what core/kinds.h
 * describes (capabilities, maturity, locator keys, what a committed
 * tether.toml may set, volatile state keys), its constructor and its
 * locator check (beside its backend, backends/<kind>/<kind>_locator.c).
 * Adding a kind is adding one entry here.
 */
#include "backends/registry.h"

#include <stdio.h>
#include <string.h>

#include "backends/backend.h"

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
		.validate_locator = tt_dolt_validate_locator,
	},
	{
		.name = "ducklake",
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
	},
	{
		.name = "git",
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
		.validate_locator = tt_git_validate_locator,
	},
	{
		.name = "iceberg",
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
