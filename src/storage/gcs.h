/*
 * storage/gcs.h - the store interface on Google Cloud Storage (and
 * fake-gcs-server).
 *
 * Keys are relative to `prefix` inside `bucket`.  Reads and listings go
 * through the XML API (as the object-store libraries read GCS, so ETags
 * are the same ones they see): HEAD/GET with x-goog-generation,
 * ListObjectsV2-style paging by continuation token.  Writes go through the
 * JSON API's multipart upload, whose ifGenerationMatch precondition makes
 * put_if_absent (generation 0) and put_if_match (the generation of the
 * ETag the caller read) atomic.  Every object's generation is its version:
 * a read at a generation reads it while it lives, or after it is replaced
 * where the bucket keeps versions.  Requests carry a bearer token when one
 * is given, or a service account's OAuth2 token (fetched, cached and
 * refreshed by gcs_auth.h; a 401 gets one fresh token and one retry); an
 * emulator takes none.  Errors name "gs://bucket/prefix" and
 * the key, never the token.
 */
#ifndef TT_STORAGE_GCS_H
#define TT_STORAGE_GCS_H

#include <stdbool.h>

#include "net/http.h"
#include "storage/gcs_auth.h"
#include "storage/store.h"

typedef struct tt_gcs_config {
	const char *bucket;
	const char *prefix;        /* "" or NULL: the whole bucket */
	const char *base_url;      /* NULL: https://storage.googleapis.com */
	const char *bearer_token;  /* NULL: unauthenticated (an emulator) */
	/* OAuth2 tokens of a service account (instead of bearer_token); the
	 * store owns it from tt_store_gcs_open on, whatever it returns. */
	tt_gcs_token_source *token_source;
	tt_http_opts http;
} tt_gcs_config;

int tt_store_gcs_open(const tt_gcs_config *cfg, tt_store **out, tt_error *err);

/* Create the bucket (an existing one is fine), with versioning when asked;
 * it takes cfg->token_source as tt_store_gcs_open does.
 * Tests, `add --create`. */
int tt_gcs_create_bucket(const tt_gcs_config *cfg, bool versioning, tt_error *err);

#endif
