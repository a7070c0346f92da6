/*
 * util/dynlib.h - shared libraries loaded on first use (dlopen) instead of
 * at process start.
 *
 * The binary and libtether do not link libcurl, libpq, libmariadb or
 * OpenSSL's libcrypto: each is opened the first time a command needs it
 * (src/net, src/db, the hashing and signing code), so a command that needs
 * none of them - a cached `status`, `backends`, `log` - does not pay the
 * dynamic loader for them and their dependency trees (Kerberos, LDAP,
 * GnuTLS, ...).  Each user declares its symbols once as an X-macro list:
 *
 *     #define CURL_SYMS(X) X(curl_easy_init) X(curl_easy_cleanup)
 *     static struct { CURL_SYMS(TT_DYN_FIELD) } api;    // typed pointers
 *     #define CURL_SYM(name) TT_DYN_SYM(api, name)
 *     static const tt_dynsym syms[] = { CURL_SYMS(CURL_SYM) };
 *     static tt_dynlib lib = TT_DYNLIB_INIT("libcurl", TT_SONAME_CURL, "TETHER_LIBCURL",
 *                                           "libcurl4", syms);
 *     if (tt_dynlib_load(&lib, err)) return err->code;
 *
 * and then calls api.curl_easy_init() (the *_api.h headers #define the
 * library's names to those pointers so the calling code reads as before).
 *
 * Rules:
 *   - Loaded at most once per process, thread-safe; a failure is remembered
 *     and every later call gets the same error, TT_ECAPABILITY, naming the
 *     library, the file tried, what dlopen said and the package to install.
 *   - Every symbol in the list must resolve, or the library counts as not
 *     loaded (a library too old for us says which symbol it lacks).
 *   - The environment variable (e.g. TETHER_LIBCURL) overrides the file
 *     name: a path or a soname.  Never closed: the pointers stay valid.
 */
#ifndef TT_UTIL_DYNLIB_H
#define TT_UTIL_DYNLIB_H

#include <stdbool.h>
#include <stddef.h>

#include "util/error.h"

typedef struct tt_dynsym {
	const char *name;
	void *slot;          /* where the function pointer goes */
} tt_dynsym;

typedef struct tt_dynlib {
	const char *what;        /* "libcurl": what messages call it */
	const char *soname;      /* "libcurl.so.4": the file dlopen looks for */
	const char *env;         /* "TETHER_LIBCURL": overrides soname; may be NULL */
	const char *package;     /* "libcurl4": the Debian/Ubuntu package with it */
	const char *how;         /* how to get it, where no distribution package has it
				  * (replaces the package advice; NULL: none) */
	const tt_dynsym *syms;
	size_t nsyms;
	/* state, set by tt_dynlib_load */
	_Atomic int state;       /* 0 not tried, 1 loaded, -1 failed */
	void *handle;
	char why[640];
} tt_dynlib;

#define TT_DYN_FIELD(name) __typeof__(name) *name;
#define TT_DYN_SYM(api, name) {#name, &(api).name},
#define TT_DYNLIB_INIT(what_, soname_, env_, package_, syms_)                                     \
	{ .what = (what_), .soname = (soname_), .env = (env_), .package = (package_), .syms = (syms_), \
	  .nsyms = sizeof(syms_) / sizeof((syms_)[0]) }
/* The same for a library no distribution packages: how_ says where it comes from. */
#define TT_DYNLIB_INIT_HOW(what_, soname_, env_, how_, syms_)                                 \
	{ .what = (what_), .soname = (soname_), .env = (env_), .how = (how_), .syms = (syms_), \
	  .nsyms = sizeof(syms_) / sizeof((syms_)[0]) }

/* Load lib and resolve its symbols (once).  0, or TT_ECAPABILITY with err
 * set as above. */
int tt_dynlib_load(tt_dynlib *lib, tt_error *err);
/* Has lib been loaded (without trying)? */
bool tt_dynlib_loaded(const tt_dynlib *lib);
/* The message of a failed load, or NULL (for callers without a tt_error). */
const char *tt_dynlib_why(const tt_dynlib *lib);

#endif
