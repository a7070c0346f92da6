/* Unit tests for util/dynlib (libraries loaded on first use) and for the
 * layers on it: a library that cannot be loaded gives TT_ECAPABILITY with
 * a message naming the library, the file tried and the package to install,
 * every time it is asked for; nothing links the libraries at start. */
#include <stdlib.h>
#include <string.h>

#include "db/db.h"
#include "harness.h"
#include "net/http.h"
#include "util/crypto_api.h"
#include "util/dynlib.h"
#include "util/hash.h"

/* Set before main: nothing in this test program has loaded these yet. */
__attribute__((constructor)) static void missing_libraries(void)
{
	setenv("TETHER_LIBPQ", "/nonexistent/libpq.so.5", 1);
	setenv("TETHER_LIBMARIADB", "libmariadb-not-here.so.3", 1);
	setenv("TETHER_LIBCURL", "/nonexistent/libcurl.so.4", 1);
}

static size_t (*my_strlen)(const char *);
static int (*my_nothing)(void);

TT_TEST(a_library_loads_and_its_symbols_resolve)
{
	struct { size_t (*len)(const char *); } api = { 0 };
	const tt_dynsym syms[] = { { "strlen", &api.len } };
	tt_dynlib lib = TT_DYNLIB_INIT("the C library", "libc.so.6", NULL, "libc6", syms);
	tt_error err = TT_ERROR_INIT;
	CHECK(!tt_dynlib_loaded(&lib));
	CHECK_INT(tt_dynlib_load(&lib, &err), 0);
	CHECK(tt_dynlib_loaded(&lib));
	CHECK(api.len != NULL);
	CHECK_INT(api.len("four"), 4);
	CHECK_INT(tt_dynlib_load(&lib, &err), 0);  /* once: still loaded */
	CHECK(tt_dynlib_why(&lib) == NULL);
	(void)my_strlen;
}

TT_TEST(a_missing_library_names_itself_the_file_and_the_package)
{
	const tt_dynsym syms[] = { { "strlen", &my_strlen } };
	tt_dynlib lib = TT_DYNLIB_INIT("libexample", "libexample-not-installed.so.7", "TETHER_TEST_LIBEXAMPLE",
				       "libexample7", syms);
	tt_error err = TT_ERROR_INIT;
	unsetenv("TETHER_TEST_LIBEXAMPLE");
	CHECK_INT(tt_dynlib_load(&lib, &err), TT_ECAPABILITY);
	CHECK_MSG(strstr(err.message, "libexample (libexample-not-installed.so.7)") &&
		  strstr(err.message, "install libexample7") && strstr(err.message, "TETHER_TEST_LIBEXAMPLE"),
		  "%s", err.message);
	CHECK(!tt_dynlib_loaded(&lib));
	CHECK(tt_dynlib_why(&lib) && strstr(tt_dynlib_why(&lib), "libexample7"));
	tt_error_clear(&err);
	/* remembered: the same answer again, without another dlopen */
	CHECK_INT(tt_dynlib_load(&lib, &err), TT_ECAPABILITY);
	CHECK(strstr(err.message, "install libexample7"));
	tt_error_clear(&err);
	CHECK_INT(tt_dynlib_load(&lib, NULL), TT_ECAPABILITY);
}

TT_TEST(the_environment_variable_overrides_the_file)
{
	const tt_dynsym syms[] = { { "strlen", &my_strlen } };
	tt_dynlib lib = TT_DYNLIB_INIT("libexample", "libexample-not-installed.so.7", "TETHER_TEST_LIBEXAMPLE2",
				       "libexample7", syms);
	tt_error err = TT_ERROR_INIT;
	setenv("TETHER_TEST_LIBEXAMPLE2", "libc.so.6", 1);
	CHECK_INT(tt_dynlib_load(&lib, &err), 0);
	CHECK_INT(my_strlen("abc"), 3);
	unsetenv("TETHER_TEST_LIBEXAMPLE2");
}

TT_TEST(a_library_without_a_symbol_we_need_is_refused)
{
	const tt_dynsym syms[] = { { "strlen", &my_strlen }, { "tt_no_such_function_anywhere", &my_nothing } };
	tt_dynlib lib = TT_DYNLIB_INIT("the C library", "libc.so.6", NULL, "libc6", syms);
	tt_error err = TT_ERROR_INIT;
	CHECK_INT(tt_dynlib_load(&lib, &err), TT_ECAPABILITY);
	CHECK_MSG(strstr(err.message, "has no tt_no_such_function_anywhere") && strstr(err.message, "libc6"),
		  "%s", err.message);
	CHECK(!tt_dynlib_loaded(&lib));
	tt_error_clear(&err);
}

TT_TEST(postgres_without_libpq_says_so)
{
	tt_db *db = NULL;
	tt_error err = TT_ERROR_INIT;
	CHECK_INT(tt_db_open(&db, "postgresql://u:secret-pw@127.0.0.1:1/db", NULL, &err), TT_ECAPABILITY);
	CHECK(db == NULL);
	CHECK_MSG(strstr(err.message, "libpq") && strstr(err.message, "/nonexistent/libpq.so.5") &&
		  strstr(err.message, "libpq5") && !strstr(err.message, "secret-pw"), "%s", err.message);
	tt_error_clear(&err);
}

TT_TEST(mysql_without_libmariadb_says_so)
{
	tt_db *db = NULL;
	tt_error err = TT_ERROR_INIT;
	CHECK_INT(tt_db_open(&db, "mysql://u:secret-pw@127.0.0.1:1/db", NULL, &err), TT_ECAPABILITY);
	CHECK(db == NULL);
	CHECK_MSG(strstr(err.message, "libmariadb") && strstr(err.message, "libmariadb3") &&
		  !strstr(err.message, "secret-pw"), "%s", err.message);
	tt_error_clear(&err);
	/* a malformed URL is still a configuration error, found before loading */
	CHECK_INT(tt_db_open(&db, "mysql://u@host:99999/db", NULL, &err), TT_ECONFIG);
	tt_error_clear(&err);
}

TT_TEST(http_without_libcurl_says_so)
{
	tt_http_client *c = NULL;
	tt_error err = TT_ERROR_INIT;
	CHECK_INT(tt_http_client_new(NULL, &c, &err), TT_ECAPABILITY);
	CHECK(c == NULL);
	CHECK_MSG(strstr(err.message, "libcurl") && strstr(err.message, "libcurl4") &&
		  strstr(err.message, "TETHER_LIBCURL"), "%s", err.message);
	tt_error_clear(&err);
	tt_http_client_free(c);
}

TT_TEST(sqlite_and_sha256_need_nothing_more)
{
	tt_db *db = NULL;
	tt_error err = TT_ERROR_INIT;
	char hex[65], path[4096];
	snprintf(path, sizeof path, "%s/x.sqlite", tt_test_tmpdir());
	tt_db_opts o = { .create = true };
	CHECK_INT(tt_db_open(&db, path, &o, &err), 0);
	tt_db_close(db);
	CHECK_INT(tt_sha256_hex(hex, "abc", 3), 0);
	CHECK_STR(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	CHECK_INT(tt_crypto_load(&err), 0);
	CHECK(tt_crypto_why() == NULL);
}
