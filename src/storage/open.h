/*
 * storage/open.h - a store from a URI and its resolved options (what
 * tt_backend_secrets_for() gives a backend), and AWS credentials the way
 * users already keep them.
 *
 * Options read for s3:// (any case; an "aws_" prefix is accepted):
 *   region, endpoint (also endpoint_url), allow_http,
 *   virtual_hosted_style_request, access_key_id, secret_access_key,
 *   session_token, profile, and the client options connect_timeout,
 *   timeout (the read timeout), request_timeout (whole request), in
 *   seconds.  Without options the SDKs' environment variables apply:
 *   AWS_REGION / AWS_DEFAULT_REGION, AWS_ENDPOINT_URL / AWS_ENDPOINT,
 *   AWS_ALLOW_HTTP, then the credential chain below.
 *
 * AWS credentials, first match wins (as tether-vcs and the SDKs order
 * them): literal access_key_id + secret_access_key (+ session_token); a
 * named profile; AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY /
 * AWS_SESSION_TOKEN; the profile AWS_PROFILE names, else "default".  A
 * profile is read from the shared credentials file
 * (AWS_SHARED_CREDENTIALS_FILE, else ~/.aws/credentials), then from the
 * config file (AWS_CONFIG_FILE, else ~/.aws/config; "[profile NAME]").
 * After the environment's keys: web identity (AWS_ROLE_ARN +
 * AWS_WEB_IDENTITY_TOKEN_FILE); then the profile; then the container
 * endpoint (AWS_CONTAINER_CREDENTIALS_*); then the EC2 instance metadata
 * service (IMDSv2, skipped with AWS_EC2_METADATA_DISABLED=true).  A
 * profile with role_arn assumes it through STS from its source_profile,
 * its credential_source (Environment, EcsContainer, Ec2InstanceMetadata)
 * or its web_identity_token_file; role_arn among the options assumes that
 * role from whatever the rest resolved (role_session_name, external_id,
 * duration_seconds, sts_endpoint beside it).  Temporary keys carry their
 * expiry, and an S3 store renews them five minutes before it (see
 * aws_creds.h).  Errors name the profile, file or endpoint, never a value.
 */
#ifndef TT_STORAGE_OPEN_H
#define TT_STORAGE_OPEN_H

#include <jansson.h>

#include "storage/store.h"

/* Resolved AWS credentials and region; every string owned. */
typedef struct tt_aws_resolved {
	char *access_key_id;
	char *secret_access_key;
	char *session_token;
	char *region;        /* from the profile's config, when it has one */
	long long expires;   /* epoch seconds the keys expire at; 0: never */
	/* "options", "profile", "environment", "shared-file", "assume-role",
	 * "web-identity", "container", "instance-metadata", or NULL: none */
	const char *source;
} tt_aws_resolved;

/* Resolve from options (may be NULL).  No credentials anywhere is not an
 * error (source NULL: unsigned requests will be refused by the server). */
int tt_aws_resolve(const json_t *options, tt_aws_resolved *out, tt_error *err);
void tt_aws_resolved_release(tt_aws_resolved *r);

/*
 * Open the store a URI names: a local path must be a directory and becomes
 * the store's root (*key ""); an s3://, gs:// or az:// URI opens the
 * bucket (container) and *key is the object key or prefix within it.
 * gs:// reads endpoint / base_url, bearer_token, service_account_path
 * (else GOOGLE_SERVICE_ACCOUNT[_PATH], GOOGLE_APPLICATION_CREDENTIALS) or
 * service_account_key (GOOGLE_SERVICE_ACCOUNT_KEY): a service account's
 * key, whose OAuth2 tokens authorise the requests, or a file whose
 * gcs_base_url and disable_oauth reach an emulator; az://
 * reads account_name, account_key, sas_token, endpoint, use_emulator (any
 * "azure_" / "azure_storage_" spelling; else the AZURE_STORAGE_* variables
 * and AZURITE_BLOB_STORAGE_URL).  Other schemes: TT_ECAPABILITY naming the
 * scheme.  *key is the caller's to free.
 */
int tt_store_open_uri(const char *uri, const json_t *options, tt_store **out, char **key,
		      tt_error *err);

#endif
