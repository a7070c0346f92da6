/*
 * net/curl_api.h - libcurl, loaded on first use (see util/dynlib.h).
 * Include this instead of <curl/curl.h>: the curl_* names below then call
 * through the loaded table.  tt_http_client_new() loads it; nothing else
 * calls libcurl.  A function not listed in TT_CURL_SYMS is not available.
 */
#ifndef TT_NET_CURL_API_H
#define TT_NET_CURL_API_H

#include <curl/curl.h>

#include "util/dynlib.h"

#define TT_CURL_SYMS(X)                                                                    \
	X(curl_global_init) X(curl_easy_init) X(curl_easy_setopt) X(curl_easy_perform)       \
	X(curl_easy_getinfo) X(curl_easy_cleanup) X(curl_easy_strerror) X(curl_share_init)   \
	X(curl_share_setopt) X(curl_share_cleanup) X(curl_slist_append) X(curl_slist_free_all)

typedef struct tt_curl_api {
	TT_CURL_SYMS(TT_DYN_FIELD)
} tt_curl_api;
extern tt_curl_api tt_curl;

/* Load libcurl once: 0, or TT_ECAPABILITY naming it and the package. */
int tt_curl_load(tt_error *err);

#ifndef TT_CURL_API_IMPL
/* curl.h's type-checking wrappers (GCC) would call the real names. */
#undef curl_easy_setopt
#undef curl_easy_getinfo
#undef curl_share_setopt
#define curl_global_init (*tt_curl.curl_global_init)
#define curl_easy_init (*tt_curl.curl_easy_init)
#define curl_easy_setopt (*tt_curl.curl_easy_setopt)
#define curl_easy_perform (*tt_curl.curl_easy_perform)
#define curl_easy_getinfo (*tt_curl.curl_easy_getinfo)
#define curl_easy_cleanup (*tt_curl.curl_easy_cleanup)
#define curl_easy_strerror (*tt_curl.curl_easy_strerror)
#define curl_share_init (*tt_curl.curl_share_init)
#define curl_share_setopt (*tt_curl.curl_share_setopt)
#define curl_share_cleanup (*tt_curl.curl_share_cleanup)
#define curl_slist_append (*tt_curl.curl_slist_append)
#define curl_slist_free_all (*tt_curl.curl_slist_free_all)
#endif

#endif
