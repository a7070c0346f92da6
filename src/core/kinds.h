/*
 * core/kinds.h - what tether knows about each kind of store before any
 * backend code runs: capabilities and tier, maturity, which locator keys are
 * local paths, which store suffixes a default key drops, what a committed
 * tether.toml may set for it, which state keys are volatile, and the cheap
 * locator checks `add` runs.  The backend vtables (backends/) implement the
 * behaviour; this table is the contract `tether backends` prints.
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
	/* Cheap checks at `add` (nothing contacted); NULL: accept.  checkout is
	 * the dataset's VCS root (resolved), for kinds that refuse paths in it. */
	int (*validate_locator)(const json_t *locator, const char *checkout, tt_error *err);
	/* Build its backend (backends/backend.h); NULL: not built in. */
	int (*make)(struct tt_backend *b, tt_error *err);
} tt_kind;

/* Every kind, sorted by name (as `tether backends` lists them): the table
 * of backends/registry.c. */
const tt_kind *tt_kinds(size_t *count);
const tt_kind *tt_kind_find(const char *name);
/* TT_ECONFIG "unknown backend kind: 'x' (known: ...)" when absent. */
int tt_kind_lookup(const tt_kind **out, const char *name, tt_error *err);
bool tt_kind_is_volatile(const tt_kind *k, const char *state_key);

/* The state without volatile keys (a new reference). */
json_t *tt_content_state(const tt_kind *k, const json_t *state);

#endif
