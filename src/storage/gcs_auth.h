/*
 * storage/gcs_auth.h - OAuth2 access tokens for a Google service account.
 *
 * A service-account key file (the JSON Google hands out: client_email,
 * private_key, private_key_id, token_uri) is turned into an access token
 * the way Google's own libraries do it: a JWT with the claims iss, aud,
 * scope, iat and exp (one hour), signed RS256 with the private key through
 * OpenSSL, is POSTed to the file's token_uri as a jwt-bearer grant.  The
 * token is cached per process (per token URI and account) and asked for
 * again when less than REFRESH_S seconds of it are left, or when a store
 * is told 401.  Errors name the key file and the token URI, never the key
 * or a token.  Thread-safe.
 */
#ifndef TT_STORAGE_GCS_AUTH_H
#define TT_STORAGE_GCS_AUTH_H

#include <stdbool.h>

#include <jansson.h>

#include "net/http.h"
#include "util/error.h"

/* The audience Google's libraries put in the grant's JWT, whatever the
 * file's token_uri is; also token_uri's default. */
#define TT_GCS_TOKEN_AUDIENCE "https://oauth2.googleapis.com/token"
#define TT_GCS_SCOPE "https://www.googleapis.com/auth/devstorage.read_write"
/* A token with less left than this is refreshed (Google's libraries use
 * the same margin). */
#define TT_GCS_REFRESH_S 225

typedef struct tt_gcs_token_source tt_gcs_token_source;

/* From a parsed key file; `where` names it in errors (a path, or
 * "service_account_key").  The private key is parsed here: a key that is
 * no RSA PEM key fails now, naming `where`.  http: the options the token
 * requests use (allow_http for a local token endpoint, timeouts). */
int tt_gcs_token_source_new(const json_t *sa, const char *where, const tt_http_opts *http,
			    tt_gcs_token_source **out, tt_error *err);
void tt_gcs_token_source_free(tt_gcs_token_source *ts);

/* "Authorization: Bearer <token>" for a token with more than REFRESH_S
 * seconds left: the cached one, else a new one.  stale: a header the
 * server refused (401) - a cached token equal to it is not given again.
 * Caller wipes and frees the header. */
int tt_gcs_token_header(tt_gcs_token_source *ts, const char *stale, char **header,
			tt_error *err);

/* The signed grant assertion for issue time `now` (epoch seconds). */
int tt_gcs_jwt_assertion(const tt_gcs_token_source *ts, long long now, char **out,
			 tt_error *err);

#endif
