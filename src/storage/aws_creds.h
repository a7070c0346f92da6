/*
 * storage/aws_creds.h - temporary AWS credentials from STS (AssumeRole,
 * AssumeRoleWithWebIdentity), the ECS/EKS container endpoint and the EC2
 * instance metadata service (see aws_creds.c for the endpoints).
 */
#ifndef TT_STORAGE_AWS_CREDS_H
#define TT_STORAGE_AWS_CREDS_H

#include <stdbool.h>

#include "net/sigv4.h"
#include "util/error.h"

/* Temporary keys; every string owned (secrets wiped on release). */
typedef struct tt_aws_temp {
	char *access_key_id;
	char *secret_access_key;
	char *session_token;
	long long expires;  /* epoch seconds; 0: not said */
} tt_aws_temp;
void tt_aws_temp_release(tt_aws_temp *t);

typedef struct tt_aws_role {
	const char *arn;            /* required */
	const char *session_name;   /* NULL: "tether" */
	const char *external_id;    /* AssumeRole only */
	const char *region;         /* NULL: us-east-1 */
	const char *endpoint;       /* NULL: AWS_ENDPOINT_URL_STS, AWS_ENDPOINT_URL, then AWS */
	long duration_s;            /* 0: 3600 */
	bool allow_http;
} tt_aws_role;

/* STS AssumeRole, signed with src. */
int tt_aws_assume_role(const tt_aws_creds *src, const tt_aws_role *role, tt_aws_temp *out, tt_error *err);
/* STS AssumeRoleWithWebIdentity with the token in token_file (unsigned). */
int tt_aws_web_identity(const tt_aws_role *role, const char *token_file, tt_aws_temp *out, tt_error *err);
/* The container endpoint; TT_ENOTFOUND (err untouched) when its variables are unset. */
int tt_aws_container_creds(tt_aws_temp *out, tt_error *err);
/* IMDSv2; TT_ENOTFOUND (err untouched) when disabled or not reachable. */
int tt_aws_imds_creds(tt_aws_temp *out, tt_error *err);

/* An ISO 8601 UTC time as epoch seconds; 0 when unreadable. */
long long tt_aws_parse_time(const char *s);

#endif
