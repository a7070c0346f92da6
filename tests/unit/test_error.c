/* Unit tests for util/error: the text of an error names its object once. */
#include "harness.h"
#include "util/error.h"

TT_TEST(error_text_names_the_key_once)
{
	tt_error err = TT_ERROR_INIT;
	tt_error_set(&err, TT_EBACKEND, "rev-parse failed");
	tt_error_object(&err, NULL, "git");
	CHECK_STR(tt_error_text(&err), "[git] rev-parse failed");
	/* then the key is known: "[code] ...", not "[code] [git] ..." */
	tt_error_object(&err, "code", NULL);
	CHECK_STR(tt_error_text(&err), "[code] rev-parse failed");
	tt_error_clear(&err);
	tt_error_set(&err, TT_EBACKEND, "[git] boom");
	tt_error_object(&err, "tables", "file");
	CHECK_STR(tt_error_text(&err), "[tables] [git] boom"); /* another kind's name stays */
	tt_error_clear(&err);
}
