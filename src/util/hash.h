/*
 * util/hash.h - BLAKE2b with a chosen digest size (libb2) and SHA-256
 * (OpenSSL libcrypto, which uses SHA-NI where the CPU has it).
 */
#ifndef TT_UTIL_HASH_H
#define TT_UTIL_HASH_H

#include <stddef.h>
#include <stdint.h>

/* One input of tt_blake_parts(). */
typedef struct tt_bytes {
	const void *data;
	size_t len;
} tt_bytes;

/*
 * tether's _blake(*parts, size): BLAKE2b with digest_size = size (1..64;
 * a true variable-size BLAKE2b, not a truncated BLAKE2b-512), feeding each
 * part's length as 8 bytes big-endian and then its bytes.  Writes 2*size
 * lower-case hex digits and a NUL to hex.  Returns 0, or -1 on a bad size.
 */
int tt_blake_parts(char *hex, size_t size, const tt_bytes *parts, size_t nparts);

/* Plain BLAKE2b of one buffer, raw digest out (size bytes). */
int tt_blake2b(uint8_t *out, size_t size, const void *data, size_t len);

/* SHA-256. */
typedef struct tt_sha256 {
	void *ctx;  /* EVP_MD_CTX */
} tt_sha256;
int tt_sha256_init(tt_sha256 *s);
int tt_sha256_update(tt_sha256 *s, const void *data, size_t len);
int tt_sha256_final(tt_sha256 *s, uint8_t out[32]); /* also frees the context */
void tt_sha256_abort(tt_sha256 *s);                 /* free without a digest; NULL-safe */
int tt_sha256_hex(char hex[65], const void *data, size_t len);

void tt_hex(char *out, const uint8_t *in, size_t n); /* 2n digits + NUL */
/* The value of one hex digit of either case, or -1. */
int tt_hex_digit(int c);
/* in[0..2n), lower-case hex digits only, decoded into out[0..n): 0, or -1
 * (out then undefined) when any character is not one. */
int tt_unhex_lower(uint8_t *out, const char *in, size_t n);

#endif
