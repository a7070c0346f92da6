/*
 * core/layout.h - where a dataset keeps its files, and object keys.
 *
 *   <root>/tether.toml                 committed configuration
 *   <root>/.tether/.gitignore          committed; ignores the per-checkout files
 *                                      and the atomic writers' temporaries
 *   <root>/.tether/objects/<key>.toml  committed; one manifest per object
 *   <root>/.tether/listings/           committed; content-addressed listings
 *   <root>/.tether/secrets.toml        per checkout, never committed
 *   <root>/.tether/workspace.toml      per checkout
 *   <root>/.tether/ops.jsonl           per checkout: the journal
 *   <root>/.tether/cache/, lock        per checkout
 */
#ifndef TT_CORE_LAYOUT_H
#define TT_CORE_LAYOUT_H

#include <stdbool.h>

#include "util/error.h"

#define TT_CONFIG_FILENAME "tether.toml"
#define TT_DIR ".tether"
#define TT_OBJECTS_DIR "objects"
#define TT_LISTINGS_DIR "listings"
#define TT_WORKSPACE_FILENAME "workspace.toml"
#define TT_SECRETS_FILENAME "secrets.toml"
#define TT_OPS_FILENAME "ops.jsonl"
#define TT_LOCK_FILENAME "lock"
#define TT_CACHE_DIR "cache"
#define TT_CONFIG_VERSION 5
/* The .tether/.gitignore line for the atomic writers' temporaries. */
#define TT_TEMP_PATTERN ".*.tmp"

/* Walk up from start to the nearest directory holding tether.toml.
 * Returns a malloc'd absolute path, or NULL (no dataset). */
char *tt_find_dataset_root(const char *start);

/* "<root>/<rel>" helpers; caller frees; NULL on OOM. */
char *tt_config_path(const char *root);
char *tt_tether_path(const char *root, const char *name); /* name may be NULL */

/*
 * Check an object key the way tether-vcs does on every read: not empty,
 * no leading or trailing '/', no '\', no empty, "." or ".." segment, no
 * segment starting with a drive ("C:"), no control characters (nor
 * whitespace other than the space).  TT_ECONFIG "unsafe object key: '...'".
 */
int tt_validate_key(const char *key, tt_error *err);

/* The manifest path of a key relative to .tether ("objects/a/b.toml").
 * Validates the key.  Caller frees *out. */
int tt_key_relpath(char **out, const char *key, tt_error *err);

/*
 * Refuse (TT_ECONFIG, naming the path) a symbolic link at root/rel or at
 * any directory between root and it; each component is lstat'ed, and one
 * that does not exist ends the check (nothing below it exists either).
 * Whatever tether reads or writes in a dataset goes through a check like
 * this first: a committed link would take it outside the checkout.
 */
int tt_refuse_links(const char *root, const char *rel, tt_error *err);

/*
 * The dataset's own paths: tether.toml, .tether, every entry of .tether,
 * .tether/cache and .tether/listings (the manifest walk checks every
 * level of .tether/objects).  Run when a dataset is opened or locked and
 * before init writes.
 */
int tt_check_dataset_links(const char *root, tt_error *err);

/*
 * Remove the temporaries a killed atomic write left (tt_is_atomic_temp:
 * ".<name>.<16 hex>.tmp") in .tether, .tether/objects (every level),
 * .tether/listings, .tether/cache (holding the cache's flock) and, for
 * tether.toml, the dataset root -- those last
 * modified before `before` (when this process opened the dataset).  Run
 * under the checkout lock, where no other writer of these files is at
 * work.  Best effort: what cannot be removed is never staged anyway.
 */
struct timespec;
void tt_sweep_temps(const char *root, const struct timespec *before);

/*
 * Make sure .tether/.gitignore lists every per-checkout file.  With
 * only_present, add entries only for such files that exist and are not
 * ignored yet (what a read-only command does; writes nothing otherwise).
 */
int tt_ensure_ignored(const char *root, bool only_present, tt_error *err);

#endif
