/*
 * core/secrets.h - .tether/secrets.toml: what a cloned dataset must not
 * decide for you (executables, endpoints, credentials, SQL).  Per checkout,
 * never committed (refused while the VCS tracks it), read only after that
 * check, and never printed: errors name positions, not values.
 */
#ifndef TT_CORE_SECRETS_H
#define TT_CORE_SECRETS_H

#include <stdbool.h>

#include <jansson.h>

#include "util/error.h"

typedef struct tt_secrets {
	json_t *doc;      /* the whole file as JSON; an empty object when absent */
	bool present;
	bool insecure;    /* readable by group or others */
} tt_secrets;

int tt_secrets_parse(tt_secrets *s, const char *text, size_t len, const char *filename, tt_error *err);
/* Absent file: empty secrets.  Sets insecure from the file's mode. */
int tt_secrets_load(tt_secrets *s, const char *root, tt_error *err);
void tt_secrets_release(tt_secrets *s);

/* [vcs] git_path / jj_path, or NULL. */
const char *tt_secrets_vcs(const tt_secrets *s, const char *key);
/* [backends.<kind>] (borrowed; NULL when absent). */
json_t *tt_secrets_backend(const tt_secrets *s, const char *kind);

#endif
