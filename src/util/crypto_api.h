/*
 * util/crypto_api.h - OpenSSL's libcrypto, loaded on first use (see
 * util/dynlib.h).  Include this instead of <openssl/evp.h> and
 * <openssl/hmac.h>; the OpenSSL names used below then call through the
 * loaded table, so the code reads as it would against the linked library.
 * Call tt_crypto_load() (or rely on a caller that did) before the first
 * call; a function not listed in TT_CRYPTO_SYMS is not available.
 */
#ifndef TT_UTIL_CRYPTO_API_H
#define TT_UTIL_CRYPTO_API_H

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

#include "util/dynlib.h"

#define TT_CRYPTO_SYMS(X)                                                             \
	X(EVP_MD_CTX_new) X(EVP_MD_CTX_free) X(EVP_DigestInit_ex) X(EVP_DigestInit_ex2) \
	X(EVP_DigestUpdate) X(EVP_DigestFinal_ex) X(EVP_Digest) X(EVP_sha256) X(EVP_md5) \
	X(EVP_MD_fetch) X(EVP_MD_free) X(HMAC) X(EVP_EncodeBlock) X(EVP_DecodeBlock)                   \
	/* RS256 (GCS service-account JWTs) */                                        \
	X(BIO_new_mem_buf) X(BIO_free) X(PEM_read_bio_PrivateKey) X(EVP_PKEY_free)      \
	X(EVP_PKEY_get_base_id) X(EVP_DigestSignInit) X(EVP_DigestSign)

typedef struct tt_crypto_api {
	TT_CRYPTO_SYMS(TT_DYN_FIELD)
} tt_crypto_api;
extern tt_crypto_api tt_crypto;

/* Load libcrypto once: 0, or TT_ECAPABILITY naming it and the package. */
int tt_crypto_load(tt_error *err);
/* Why the load failed, or NULL (for callers without a tt_error). */
const char *tt_crypto_why(void);

#ifndef TT_CRYPTO_API_IMPL
#define EVP_MD_CTX_new (*tt_crypto.EVP_MD_CTX_new)
#define EVP_MD_CTX_free (*tt_crypto.EVP_MD_CTX_free)
#define EVP_DigestInit_ex (*tt_crypto.EVP_DigestInit_ex)
#define EVP_DigestInit_ex2 (*tt_crypto.EVP_DigestInit_ex2)
#define EVP_DigestUpdate (*tt_crypto.EVP_DigestUpdate)
#define EVP_DigestFinal_ex (*tt_crypto.EVP_DigestFinal_ex)
#define EVP_Digest (*tt_crypto.EVP_Digest)
#define EVP_sha256 (*tt_crypto.EVP_sha256)
#define EVP_md5 (*tt_crypto.EVP_md5)
#define EVP_MD_fetch (*tt_crypto.EVP_MD_fetch)
#define EVP_MD_free (*tt_crypto.EVP_MD_free)
#define HMAC (*tt_crypto.HMAC)
#define EVP_EncodeBlock (*tt_crypto.EVP_EncodeBlock)
#define EVP_DecodeBlock (*tt_crypto.EVP_DecodeBlock)
#define BIO_new_mem_buf (*tt_crypto.BIO_new_mem_buf)
#define BIO_free (*tt_crypto.BIO_free)
#define PEM_read_bio_PrivateKey (*tt_crypto.PEM_read_bio_PrivateKey)
#define EVP_PKEY_free (*tt_crypto.EVP_PKEY_free)
#define EVP_PKEY_get_base_id (*tt_crypto.EVP_PKEY_get_base_id)
#define EVP_DigestSignInit (*tt_crypto.EVP_DigestSignInit)
#define EVP_DigestSign (*tt_crypto.EVP_DigestSign)
#endif

#endif
