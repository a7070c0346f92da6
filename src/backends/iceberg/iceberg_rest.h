/*
 * backends/iceberg/iceberg_rest.h - the Iceberg REST catalog protocol (the REST
 * OpenAPI spec) for the iceberg backend: config, load table, commit table.
 *
 * Properties are pyiceberg's RestCatalog properties: uri, warehouse,
 * prefix, token, credential ("client_id:client_secret" or a secret alone),
 * oauth2-server-uri, scope, header.<Name>.  GET /v1/config is read first
 * (its defaults under, its overrides over the properties given); the
 * prefix comes from there.  Authentication: a bearer token, or OAuth2
 * client credentials exchanged at the token endpoint (fetched again once
 * when the catalog answers 401).  A token never reaches a message: errors
 * name the table, the operation, the HTTP status and the server's own
 * message.  Transient failures (5xx, 429, a reset) are retried by
 * net/http.c; a commit that was retried and then refused re-reads to tell
 * its own write from another's (the caller's job: `attempts`).
 */
#ifndef TT_BACKENDS_ICEBERG_REST_H
#define TT_BACKENDS_ICEBERG_REST_H

#include <jansson.h>
#include <stdbool.h>

#include "util/buf.h"
#include "util/error.h"

typedef struct tt_iceberg_rest tt_iceberg_rest;

/* Connect: read /v1/config and authenticate.  `ident` names the table in
 * errors.  props is not kept. */
int tt_iceberg_rest_open(const json_t *props, const char *ident, tt_iceberg_rest **out,
			 tt_error *err);
void tt_iceberg_rest_close(tt_iceberg_rest *r);

/* The catalog's base uri (after config overrides), for messages. */
const char *tt_iceberg_rest_uri(const tt_iceberg_rest *r);

/* A loaded or committed table: its metadata location and the metadata
 * document as JSON text. */
typedef struct tt_iceberg_rest_table {
	char *location;
	tt_buf metadata;
} tt_iceberg_rest_table;
void tt_iceberg_rest_table_release(tt_iceberg_rest_table *t);

/* GET the table (ns is dot-separated, may be empty). */
int tt_iceberg_rest_load(tt_iceberg_rest *r, const char *ns, const char *name, const char *ident,
			 tt_iceberg_rest_table *out, tt_error *err);

/* POST a commit: {"requirements": [...], "updates": [...]}.  *conflict true
 * (and 0 returned) when the catalog refused a requirement (409); then
 * err holds the server's message.  *attempts: how many times it was sent. */
int tt_iceberg_rest_commit(tt_iceberg_rest *r, const char *ns, const char *name, const char *ident,
			   const json_t *requirements, const json_t *updates, bool *conflict,
			   unsigned *attempts, tt_iceberg_rest_table *out, tt_error *err);

#endif
