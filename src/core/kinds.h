/*
 * core/kinds.h - what tether knows about each kind of store before any
 * backend code runs: capabilities and tier, maturity, which locator keys are
 * local paths, which store suffixes a default key drops, what a committed
 * tether.toml may set for it, which state keys are volatile, and the cheap
 * locator checks `add` runs.  The backend vtables (backends/) implement the
 * behaviour; this table is the contract `tether backends` prints.  The
 * type is declared here; the one table of kinds is defined, and declared,
 * in backends/registry.h.
 */
#ifndef TT_CORE_KINDS_H
#define TT_CORE_KINDS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util/error.h"

struct tt_backend;

/* Capability flags, in tether-vcs's declaration order (the order names print in). */
typedef enum tt_cap {
	TT_CAP_FINGERPRINT = 1u << 0,
	TT_CAP_ADDRESSABLE = 1u << 1,
	TT_CAP_PIN = 1u << 2,
	TT_CAP_FORK = 1u << 3,
	TT_CAP_CHEAP_FINGERPRINT = 1u << 4,
	TT_CAP_RETENTION_BOUND = 1u << 5,
	TT_CAP_NEEDS_QUIESCENCE = 1u << 6,
	TT_CAP_ATOMIC_REF = 1u << 7,
	TT_CAP_DIFF = 1u << 8,
	TT_CAP_HISTORY = 1u << 9,
	TT_CAP_BRANCH_IS_STORAGE = 1u << 10,
	TT_CAP_PROMOTE = 1u << 11,
	TT_CAP_MERGE = 1u << 12,
	TT_CAP_CREATE = 1u << 13,
	TT_CAP_CONDITIONAL_REF = 1u << 14
} tt_cap;
#define TT_CAP_COUNT 15

const char *tt_cap_name(unsigned bit_index);  /* "fingerprint", ... */
/* "observed" | "addressable" | "pinnable" | "forkable" */
const char *tt_tier_name(unsigned caps);

/* How `tether query` reads a kind's recorded state (engine/cmd/query.c): the
 * table format or catalog DuckDB and the other engines are pointed at, or
 * why it holds no rows. */
typedef enum tt_query_form {
	TT_QUERY_UNREAD = 0, /* no reader: refused as a kind query does not read */
	TT_QUERY_COMMITS,    /* files and commits, not rows (open gives the commit) */
	TT_QUERY_ARRAYS,     /* Zarr arrays, not rows (read with xarray or zarr) */
	TT_QUERY_SPEC,       /* tether's executable specification, not a table */
	TT_QUERY_FILES,      /* data files at the recorded listing (parquet, csv, json) */
	TT_QUERY_DELTA,      /* a Delta table at a version */
	TT_QUERY_ICEBERG,    /* an Iceberg table at a snapshot */
	TT_QUERY_LANCE,      /* a Lance dataset at a version */
	TT_QUERY_DUCKLAKE,   /* a DuckLake catalog at a snapshot */
	TT_QUERY_DOLT,       /* a Dolt database at a commit (MySQL protocol) */
	TT_QUERY_NEON        /* a PostgreSQL catalog at a read-only endpoint */
} tt_query_form;

typedef struct tt_kind {
	const char *name;
	const char *maturity;             /* "stable" | "experimental" */
	unsigned caps;
	bool built;                       /* a backend is compiled into this tether */
	const char *not_built_note;       /* why not, when !built; a caveat `backends` shows, when built */
	const char *const *local_path_keys;    /* NULL-terminated */
	const char *const *local_path_prefixes;
	const char *const *key_suffixes;  /* NULL: the locator is not a path */
	const char *const *safe_config_keys;   /* committed [backends.<kind>] keys */
	const char *const *safe_option_keys;   /* keys allowed inside a committed option table */
	const char *const *volatile_keys;
	const char *const *uri_keys;      /* locator keys naming the store */
	/* secrets.toml [vcs] keys the kind's config takes unless it names its
	 * own (git: the same git and jj the dataset runs); NULL: none. */
	const char *const *vcs_config_keys;
	/* Settings of this checkout alone: keys of secrets.toml's table named
	 * after the kind that its config takes, never from a committed file
	 * (file: [file] fsmonitor); NULL: none. */
	const char *const *checkout_keys;
	const char *locator_key;          /* the field `add`'s positional LOCATOR fills; NULL: "uri" */
	tt_query_form query;              /* how `tether query` reads it */
	/* Cheap checks at `add` (nothing contacted); NULL: accept.  checkout is
	 * the dataset's VCS root (resolved), for kinds that refuse paths in it. */
	int (*validate_locator)(const json_t *locator, const char *checkout, tt_error *err);
	/* Build its backend (backends/backend.h); NULL: not built in. */
	int (*make)(struct tt_backend *b, tt_error *err);
} tt_kind;

/* The kind called name in a table of n kinds, or NULL.  The table of
 * every kind is backends/registry.h's (it holds the constructors): code
 * here is given it, as tt_config_parse is. */
const tt_kind *tt_kind_in(const tt_kind *kinds, size_t n, const char *name);
bool tt_kind_is_volatile(const tt_kind *k, const char *state_key);

/* The state without volatile keys (a new reference). */
json_t *tt_content_state(const tt_kind *k, const json_t *state);

#endif
