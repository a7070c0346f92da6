/*
 * core/config.h - tether.toml, the committed dataset configuration
 * (format version 5, as tether-vcs writes it).
 *
 * The committed file arrives with every clone, so it is untrusted input:
 * it may not name an executable ([vcs] git_path / jj_path), SQL ([import]
 * query) or anything in [backends.<kind>] outside that kind's allowlist
 * (storage_options with region, allow_http, virtual_hosted_style_request,
 * conditional_put for file/delta/lance; catalog type/warehouse/name for
 * iceberg).  Such a key is refused by name, with its position and with
 * where it belongs (.tether/secrets.toml or the environment).
 */
#ifndef TT_CORE_CONFIG_H
#define TT_CORE_CONFIG_H

#include <stdbool.h>

#include <jansson.h>

#include "core/kinds.h"
#include "util/buf.h"
#include "util/error.h"

typedef struct tt_policy {
	char file[12];  /* "immutable" | "versioned" */
	char pin[8];    /* "native" | "record" */
} tt_policy;
#define TT_POLICY_DEFAULT ((tt_policy){ "immutable", "native" })

/* Check and set one policy field; TT_ECONFIG "invalid policy.file: 'x'". */
int tt_policy_set(tt_policy *p, const char *field, const char *value, tt_error *err);

typedef struct tt_config {
	int version;
	char dataset_id[9];
	bool snapshot_auto;
	bool verify_on_status;
	char new_fork[8];     /* "lazy" | "eager" */
	tt_policy defaults;
	json_t *vcs;          /* [vcs] (prefer, trunk); an object, never NULL once loaded */
	json_t *backends;     /* [backends]; an object */
} tt_config;

/* A fresh configuration with a new dataset id (or the one given). */
int tt_config_new(tt_config *c, const char *dataset_id, tt_error *err);

/*
 * Parse and check tether.toml text.  Refuses: a malformed file (file:line:col),
 * a version newer than this tether understands or older than 5 (with what
 * to do), a missing or malformed [dataset] id, ill-typed settings, and every
 * key a committed file may not set.  kinds (nkinds of them) are the kinds
 * [backends.<kind>] may name, with what each lets it set (the caller
 * passes the one table, backends/registry.h's tt_kinds).
 */
int tt_config_parse(tt_config *c, const char *text, size_t len, const char *filename,
		    const tt_kind *kinds, size_t nkinds, tt_error *err);
int tt_config_load(tt_config *c, const char *root, const tt_kind *kinds, size_t nkinds,
		   tt_error *err);
/* Let this thread's parses accept a [tether] version older than this
 * tether's (for `upgrade` only; c->version then tells). */
void tt_config_accept_outdated(bool yes);
/* The file as tether-vcs writes it. */
int tt_config_render(tt_buf *out, const tt_config *c, tt_error *err);
int tt_config_save(const tt_config *c, const char *root, tt_error *err);
void tt_config_release(tt_config *c);

/* [vcs] trunk, default "main". */
const char *tt_config_trunk(const tt_config *c);

#endif
