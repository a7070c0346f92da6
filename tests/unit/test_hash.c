/* Unit tests for util/hash: BLAKE2b at several digest sizes, the length-
 * prefixed parts hash, SHA-256 and hex.  Vectors: RFC 7693 (BLAKE2b-512 of
 * "abc"), FIPS 180-2 (SHA-256), the rest from Python's hashlib. */
#include <stdlib.h>

#include "harness.h"
#include "util/hash.h"

static void blake_hex(char *hex, size_t size, const char *s)
{
	uint8_t d[64];
	if (tt_blake2b(d, size, s, strlen(s)) != 0) {
		hex[0] = '\0';
		return;
	}
	tt_hex(hex, d, size);
}

TT_TEST(blake2b_rfc7693_512)
{
	char hex[129];
	blake_hex(hex, 64, "abc");
	CHECK_STR(hex, "ba80a53f981c4d0d6a2797b69f12f6e94c212f14685ac4b74b12bb6fdbffa2d1"
		       "7d87c5392aab792dc252d5de4533cc9518d38aa8dbf1925ab92386edd4009923");
	blake_hex(hex, 64, "");
	CHECK_STR(hex, "786a02f742015903c6c6fd852552d272912f4740e15847618a86e217f71f5419"
		       "d25e1031afee585313896444934eb04b903a685b1448b755d56f701afe9be2ce");
}

TT_TEST(blake2b_256)
{
	char hex[65];
	blake_hex(hex, 32, "");
	CHECK_STR(hex, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");
	blake_hex(hex, 32, "abc");
	CHECK_STR(hex, "bddd813c634239723171ef3fee98579b94964e3bb1cb3e427262c8c068d52319");
}

/* A true variable-size digest: not the first 16 bytes of BLAKE2b-512. */
TT_TEST(blake2b_128_is_not_truncated)
{
	char hex[33];
	blake_hex(hex, 16, "");
	CHECK_STR(hex, "cae66941d9efbd404e4d88758ea67670");
	blake_hex(hex, 16, "abc");
	CHECK_STR(hex, "cf4ab791c62b8d2b2109c90275287816");
	CHECK(strncmp(hex, "ba80a53f981c4d0d", 16) != 0);
}

TT_TEST(blake2b_small_sizes)
{
	char hex[17];
	blake_hex(hex, 8, "");
	CHECK_STR(hex, "e4a6a0577479b2b4");
	blake_hex(hex, 8, "abc");
	CHECK_STR(hex, "d8bb14d833d59559");
	blake_hex(hex, 1, "");
	CHECK_STR(hex, "2e");
	blake_hex(hex, 1, "abc");
	CHECK_STR(hex, "6b");
}

TT_TEST(blake2b_bad_sizes)
{
	uint8_t d[65];
	char hex[131];
	tt_bytes p = { "x", 1 };
	CHECK_INT(tt_blake2b(d, 0, "x", 1), -1);
	CHECK_INT(tt_blake2b(d, 65, "x", 1), -1);
	CHECK_INT(tt_blake_parts(hex, 0, &p, 1), -1);
	CHECK_INT(tt_blake_parts(hex, 65, &p, 1), -1);
}

/* tether's _blake(*parts, size): each part prefixed with its 8-byte BE length. */
TT_TEST(blake_parts_vectors)
{
	char hex[129];
	tt_bytes two[2] = { { "abc", 3 }, { "", 0 } };
	CHECK_INT(tt_blake_parts(hex, 16, two, 2), 0);
	CHECK_STR(hex, "ac36cdd036fad84cdcdaec6375f5af55");

	/* No parts at all: plain BLAKE2b-256 of nothing. */
	CHECK_INT(tt_blake_parts(hex, 32, NULL, 0), 0);
	CHECK_STR(hex, "0e5751c026e543b2e8ab2eb06099daa1d1e5df47778f7787faab45cdf12fe3a8");

	char big[300];
	memset(big, 'x', sizeof big);
	tt_bytes one = { big, sizeof big };
	CHECK_INT(tt_blake_parts(hex, 64, &one, 1), 0);
	CHECK_STR(hex, "1033183b7cf9cbbd852f8676942a39df2801aab0693d5c892fbc818e06ecd03b"
		       "2384b93fad38af98096b30e026dfb143b077574ca1351d72c6d352fa5be40318");
}

/* The length prefix keeps ("ab","c") and ("a","bc") apart. */
TT_TEST(blake_parts_are_framed)
{
	char h1[33], h2[33], h3[33];
	tt_bytes a[2] = { { "ab", 2 }, { "c", 1 } };
	tt_bytes b[2] = { { "a", 1 }, { "bc", 2 } };
	tt_bytes c[1] = { { "abc", 3 } };
	CHECK_INT(tt_blake_parts(h1, 16, a, 2), 0);
	CHECK_INT(tt_blake_parts(h2, 16, b, 2), 0);
	CHECK_INT(tt_blake_parts(h3, 16, c, 1), 0);
	CHECK(strcmp(h1, h2) != 0);
	CHECK(strcmp(h1, h3) != 0);
	CHECK(strcmp(h2, h3) != 0);
	CHECK_INT(strlen(h1), 32);
}

TT_TEST(sha256_vectors)
{
	char hex[65];
	CHECK_INT(tt_sha256_hex(hex, "abc", 3), 0);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK_INT(tt_sha256_hex(hex, "", 0), 0);
	CHECK_STR(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

TT_TEST(sha256_streaming)
{
	/* One million 'a' (FIPS 180-2), fed in uneven chunks. */
	char chunk[997];
	uint8_t d[32];
	char hex[65];
	tt_sha256 s;
	size_t left = 1000000;
	memset(chunk, 'a', sizeof chunk);
	CHECK_INT(tt_sha256_init(&s), 0);
	while (left) {
		size_t n = left < sizeof chunk ? left : sizeof chunk;
		CHECK_INT(tt_sha256_update(&s, chunk, n), 0);
		left -= n;
	}
	CHECK_INT(tt_sha256_update(&s, chunk, 0), 0);
	CHECK_INT(tt_sha256_final(&s, d), 0);
	CHECK(s.ctx == NULL);
	tt_hex(hex, d, 32);
	CHECK_STR(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TT_TEST(sha256_abort)
{
	tt_sha256 s;
	CHECK_INT(tt_sha256_init(&s), 0);
	CHECK_INT(tt_sha256_update(&s, "x", 1), 0);
	tt_sha256_abort(&s);
	CHECK(s.ctx == NULL);
	tt_sha256_abort(&s);   /* twice is fine */
	tt_sha256_abort(NULL);
	uint8_t d[32];
	CHECK(tt_sha256_update(&s, "x", 1) != 0);
	CHECK(tt_sha256_final(&s, d) != 0);
}

TT_TEST(hex_lower_case)
{
	uint8_t in[] = { 0x00, 0x0f, 0xa5, 0xff };
	char out[9];
	tt_hex(out, in, 4);
	CHECK_STR(out, "000fa5ff");
	tt_hex(out, in, 0);
	CHECK_STR(out, "");
}

/* Every byte value, at every length up to 40 and every start offset up to
 * 8 (the word-at-a-time path and its byte-at-a-time tail), matches
 * printf's %02x. */
TT_TEST(hex_matches_printf_for_every_byte_length_and_offset)
{
	uint8_t in[256 + 8];
	char out[2 * 264 + 1], want[2 * 264 + 1];
	for (size_t i = 0; i < sizeof in; i++)
		in[i] = (uint8_t)(i * 37 + 11);
	for (size_t i = 0; i < 256; i++)
		in[i] = (uint8_t)i;
	tt_hex(out, in, 256);
	for (size_t i = 0; i < 256; i++)
		snprintf(want + 2 * i, 3, "%02x", in[i]);
	CHECK_STR(out, want);
	for (size_t off = 0; off < 8; off++)
		for (size_t n = 0; n <= 40; n++) {
			tt_hex(out, in + off, n);
			for (size_t i = 0; i < n; i++)
				snprintf(want + 2 * i, 3, "%02x", in[off + i]);
			want[2 * n] = '\0';
			CHECK_STR(out, want);
		}
}
