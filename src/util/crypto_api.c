/* util/crypto_api.c - libcrypto's table; see crypto_api.h. */
#define TT_CRYPTO_API_IMPL /* the real names, for the table */
#include "util/crypto_api.h"

#ifndef TT_SONAME_CRYPTO
#define TT_SONAME_CRYPTO "libcrypto.so.3"
#endif

tt_crypto_api tt_crypto;

#define SYM(name) TT_DYN_SYM(tt_crypto, name)
static const tt_dynsym syms[] = { TT_CRYPTO_SYMS(SYM) };
#undef SYM

static tt_dynlib lib = TT_DYNLIB_INIT("OpenSSL's libcrypto", TT_SONAME_CRYPTO, "TETHER_LIBCRYPTO",
				      "libssl3", syms);

int tt_crypto_load(tt_error *err)
{
	return tt_dynlib_load(&lib, err);
}

const char *tt_crypto_why(void)
{
	return tt_dynlib_why(&lib);
}
