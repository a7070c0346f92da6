/* util/hash.c - BLAKE2b (libb2) and SHA-256 (OpenSSL EVP, loaded on first use); see hash.h. */
#include "util/hash.h"

#include <string.h>

#include <blake2.h>
#include "util/crypto_api.h"
#include "util/error.h"

/* Four bytes into eight lowercase hex digits, in a 64-bit word whose bytes
 * in memory order are the digits in text order (little-endian): each
 * nibble lands in a byte of its own, and 0-9 and 10-15 are moved to '0'
 * and 'a' without a branch (n + 6 carries into bit 4 exactly when n > 9). */
static uint64_t hex8_le(const uint8_t *in)
{
	uint64_t t = (uint64_t)in[0] | (uint64_t)in[1] << 16 | (uint64_t)in[2] << 32 | (uint64_t)in[3] << 48;
	const uint64_t lo = 0x000F000F000F000Full;
	uint64_t n = ((t >> 4) & lo) | ((t & lo) << 8);
	uint64_t letters = ((n + 0x0606060606060606ull) >> 4) & 0x0101010101010101ull;
	return n + 0x3030303030303030ull + letters * 39;
}

void tt_hex(char *out, const uint8_t *in, size_t n)
{
	static const char digits[] = "0123456789abcdef";
	size_t i = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* Cache hits convert a SHA-256 each: a million of them in a refresh. */
	for (; i + 4 <= n; i += 4) {
		uint64_t w = hex8_le(in + i);
		memcpy(out + 2 * i, &w, sizeof w);
	}
#endif
	for (; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * n] = '\0';
}

int tt_hex_digit(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Lower-case hex digits to their value; 0x10 for anything else. */
static const unsigned char lower_hex[256] = {
#define X16 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10
	X16, X16, X16,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
	X16, X16,
	0x10, 10, 11, 12, 13, 14, 15, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10, 0x10,
	X16, X16, X16, X16, X16, X16, X16, X16, X16,
#undef X16
};

int tt_unhex_lower(uint8_t *out, const char *in, size_t n)
{
	unsigned bad = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned hi = lower_hex[(unsigned char)in[2 * i]], lo = lower_hex[(unsigned char)in[2 * i + 1]];
		bad |= hi | lo;
		out[i] = (uint8_t)(hi << 4 | (lo & 15));
	}
	return bad & 0x10 ? -1 : 0;
}

/* libb2 wants a non-NULL pointer even for an empty update. */
static int blake_update(blake2b_state *S, const void *data, size_t len)
{
	static const uint8_t none[1];
	return blake2b_update(S, len ? (const uint8_t *)data : none, len);
}

int tt_blake_parts(char *hex, size_t size, const tt_bytes *parts, size_t nparts)
{
	blake2b_state S;
	uint8_t digest[BLAKE2B_OUTBYTES];

	if (size < 1 || size > BLAKE2B_OUTBYTES || (nparts && !parts))
		return TT_ERROR;
	if (blake2b_init(&S, size) != 0)
		return TT_ERROR;
	for (size_t i = 0; i < nparts; i++) {
		uint64_t len = (uint64_t)parts[i].len;
		uint8_t be[8];
		for (int b = 0; b < 8; b++)
			be[b] = (uint8_t)(len >> (56 - 8 * b));
		if (blake_update(&S, be, sizeof be) != 0 ||
		    blake_update(&S, parts[i].data, parts[i].len) != 0)
			return TT_ERROR;
	}
	if (blake2b_final(&S, digest, size) != 0)
		return TT_ERROR;
	tt_hex(hex, digest, size);
	return 0;
}

int tt_blake2b(uint8_t *out, size_t size, const void *data, size_t len)
{
	blake2b_state S;

	if (size < 1 || size > BLAKE2B_OUTBYTES)
		return TT_ERROR;
	if (blake2b_init(&S, size) != 0 || blake_update(&S, data, len) != 0 ||
	    blake2b_final(&S, out, size) != 0)
		return TT_ERROR;
	return 0;
}

int tt_sha256_init(tt_sha256 *s)
{
	EVP_MD_CTX *ctx;
	s->ctx = NULL;
	if (tt_crypto_load(NULL) != 0)
		return TT_ECAPABILITY;
	ctx = EVP_MD_CTX_new();
	if (!ctx)
		return TT_ENOMEM;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		return TT_ERROR;
	}
	s->ctx = ctx;
	return 0;
}

int tt_sha256_update(tt_sha256 *s, const void *data, size_t len)
{
	if (!s->ctx)
		return TT_EUSAGE;
	if (len == 0)
		return 0;
	return EVP_DigestUpdate(s->ctx, data, len) == 1 ? 0 : TT_ERROR;
}

int tt_sha256_final(tt_sha256 *s, uint8_t out[32])
{
	unsigned int n = 0;
	int rc;

	if (!s->ctx)
		return TT_EUSAGE;
	rc = EVP_DigestFinal_ex(s->ctx, out, &n) == 1 && n == 32 ? 0 : TT_ERROR;
	EVP_MD_CTX_free(s->ctx);
	s->ctx = NULL;
	return rc;
}

void tt_sha256_abort(tt_sha256 *s)
{
	if (!s || !s->ctx)
		return;
	EVP_MD_CTX_free(s->ctx);
	s->ctx = NULL;
}

int tt_sha256_hex(char hex[65], const void *data, size_t len)
{
	tt_sha256 s;
	uint8_t d[32];
	int rc = tt_sha256_init(&s);
	if (rc)
		return rc;
	rc = tt_sha256_update(&s, data, len);
	if (rc) {
		tt_sha256_abort(&s);
		return rc;
	}
	rc = tt_sha256_final(&s, d);
	if (rc)
		return rc;
	tt_hex(hex, d, 32);
	return 0;
}
