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

/* Deep merge: src's fields over dst's, tables merged field by field at
 * every depth (a later layer wins a key both set).  -1 on OOM. */
int tt_secrets_merge(json_t *dst, const json_t *src);

/* The store URI a locator names, as secret rules match it: its "uri", else
 * its "path", else its "identifier" (an Iceberg table; a non-empty string);
 * NULL when none. */
const char *tt_secrets_locator_uri(const json_t *locator);

/*
 * URI prefix -> credential options for the objects of one kind:
 * [uris."<prefix>"] as written, plus each [objects."<key>"] entry of the n
 * objects given (keys[i] with locators[i]) as an exact rule on that
 * object's own store URI, merged over an [uris] entry of the same URI, so
 * an object entry beats any prefix.  A new reference; NULL on OOM.
 */
json_t *tt_secrets_rules(const tt_secrets *s, size_t n, const char *const *keys,
			 const json_t *const *locators);

/* The options of the longest rule whose prefix the URI starts with
 * (borrowed; NULL when none matches). */
json_t *tt_secrets_rule_for(const json_t *rules, const char *uri);

#endif
