/*
 * storage/s3.h - the store interface on Amazon S3 and S3-compatible servers.
 *
 * Keys are relative to `prefix` inside `bucket`.  Path-style
 * (endpoint/bucket/key) or virtual-hosted (bucket.endpoint/key) requests,
 * signed with SigV4; ListObjectsV2 paging (the continuation token is the
 * page token); conditional writes with If-None-Match: * and If-Match; reads
 * at a version id when the bucket has versioning (looked up at open).
 * Errors name "s3://bucket/prefix" and the key, and say what the server
 * said (its error code and message), never a credential.
 */
#ifndef TT_STORAGE_S3_H
#define TT_STORAGE_S3_H

#include <stdbool.h>

#include "net/http.h"
#include "net/sigv4.h"
#include "storage/store.h"

/* Fetch fresh temporary keys (owned by the caller), with their expiry. */
typedef int (*tt_s3_refresh_fn)(void *ctx, char **access_key_id, char **secret_access_key,
				char **session_token, long long *expires, tt_error *err);

typedef struct tt_s3_config {
	const char *bucket;
	const char *prefix;          /* "" or NULL: the whole bucket; else "a/b" or "a/b/" */
	const char *region;          /* NULL: us-east-1 */
	const char *endpoint;        /* "http(s)://host[:port]"; NULL: AWS for the region */
	bool virtual_hosted;         /* bucket in the host name (AWS's default) */
	tt_aws_creds creds;
	/* Temporary keys: expires (epoch s, 0 never) and how to renew them
	 * (five minutes before); the store owns refresh_ctx once opened and
	 * releases it with refresh_free, also when opening fails. */
	long long expires;
	tt_s3_refresh_fn refresh;
	void *refresh_ctx;
	void (*refresh_free)(void *ctx);
	tt_http_opts http;           /* timeouts, retries, allow_http, proxies, trace */
} tt_s3_config;

int tt_store_s3_open(const tt_s3_config *cfg, tt_store **out, tt_error *err);

/* Bucket administration (tests, `add --create`): create the bucket (an
 * existing one of ours is fine); turn versioning on. */
int tt_s3_create_bucket(const tt_s3_config *cfg, tt_error *err);
int tt_s3_enable_versioning(const tt_s3_config *cfg, tt_error *err);

#endif
