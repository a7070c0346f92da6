/*
 * tether/tether.h - libtether, version control for datasets that live in
 * other systems.
 *
 * A dataset is a git repository holding tether.toml and one manifest per
 * tracked object.  Results are returned as JSON values (jansson) in the
 * shapes `tether ... --json` prints, so a program gets exactly what the CLI
 * shows.  Every call returns 0 or a negative tt_code and fills a tt_error;
 * the library never prints and never exits.
 */
#ifndef TETHER_TETHER_H
#define TETHER_TETHER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include <tether/error.h>

#ifdef __cplusplus
extern "C" {
#endif

/* "0.1.0" */
const char *tt_version(void);

typedef struct tt_repo tt_repo;

/*
 * Initialise a dataset at path (created if missing) inside an existing git
 * repository: tether.toml with a fresh dataset id (or dataset_id), the
 * .tether/ layout and this checkout's workspace on HEAD's branch, which
 * becomes the trunk.  *out (may be NULL): {"root", "dataset_id"}.
 * Nothing is written when it fails.
 */
int tt_init(const char *path, const char *dataset_id, json_t **out, tt_error *err);

/* Open the dataset whose tether.toml is at or above start_dir. */
int tt_repo_open(tt_repo **out, const char *start_dir, tt_error *err);
void tt_repo_free(tt_repo *repo);
const char *tt_repo_root(const tt_repo *repo);
const char *tt_repo_dataset_id(const tt_repo *repo);

/* Warnings gathered while opening (e.g. a group-readable secrets.toml). */
size_t tt_repo_warning_count(const tt_repo *repo);
const char *tt_repo_warning(const tt_repo *repo, size_t i);

typedef struct tt_add_opts {
	const char *key;          /* NULL: derived from the locator's path */
	const char *kind;
	json_t *locator;          /* borrowed; fields as on the command line */
	const char *file_policy;  /* NULL: [defaults] file */
	const char *pin_policy;   /* NULL: [defaults] pin */
	const char *cwd;          /* relative paths resolve here (NULL: the process's) */
} tt_add_opts;

/*
 * Register an object: write its manifest, contacting nothing.  *out:
 * {"key", "kind", "derived_key": bool, "experimental": bool, "at": ...}.
 */
int tt_repo_add(tt_repo *repo, const tt_add_opts *opts, json_t **out, tt_error *err);

/* Unregister an object (the store is untouched).  Undoable. */
int tt_repo_remove(tt_repo *repo, const char *key, tt_error *err);

/*
 * Change policies in place.  file/pin may be NULL (unchanged) but not both.
 * *out: {"changed": {key: {field: {"from", "to"}}}, "unchanged": [keys]}.
 */
int tt_repo_set_policy(tt_repo *repo, const char *const *keys, size_t nkeys,
		       const char *file, const char *pin, json_t **out, tt_error *err);

/* Every registered key, sorted (*out: a JSON array of strings). */
int tt_repo_keys(tt_repo *repo, json_t **out, tt_error *err);

/*
 * The kinds this tether knows: [{kind, installed, maturity, tier,
 * capabilities: [names], note}], sorted by kind.
 */
json_t *tt_backends(void);

#ifdef __cplusplus
}
#endif
#endif
