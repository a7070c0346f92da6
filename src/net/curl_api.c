/* net/curl_api.c - libcurl's table; see curl_api.h. */
#define TT_CURL_API_IMPL /* the real names, for the table */
#include "net/curl_api.h"

#ifndef TT_SONAME_CURL
#define TT_SONAME_CURL "libcurl.so.4"
#endif

tt_curl_api tt_curl;

#define SYM(name) TT_DYN_SYM(tt_curl, name)
static const tt_dynsym syms[] = { TT_CURL_SYMS(SYM) };
#undef SYM

static tt_dynlib lib = TT_DYNLIB_INIT("libcurl", TT_SONAME_CURL, "TETHER_LIBCURL", "libcurl4", syms);

int tt_curl_load(tt_error *err)
{
	return tt_dynlib_load(&lib, err);
}
