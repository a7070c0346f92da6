/* Unit tests for util/error: the text of an error names its object once
 * (the backend's kind, as tether-vcs words it; the key rides beside it). */
#include "harness.h"
#include "util/error.h"

TT_TEST(error_text_names_the_key_once)
{
	tt_error err = TT_ERROR_INIT;
	tt_error_set(&err, TT_EBACKEND, "rev-parse failed");
	tt_error_object(&err, NULL, "git");
	CHECK_STR(tt_error_text(&err), "[git] rev-parse failed");
	/* then the key is known: it is carried, not written into the text
	 * again ("[code] [git] ..."); the CLI says "code: [git] ..." */
	tt_error_object(&err, "code", NULL);
	CHECK_STR(tt_error_text(&err), "[git] rev-parse failed");
	CHECK_STR(err.key, "code");
	tt_error_clear(&err);
	tt_error_set(&err, TT_EBACKEND, "boom");
	tt_error_object(&err, NULL, "git");
	tt_error_object(&err, NULL, "git"); /* named twice: written once */
	CHECK_STR(tt_error_text(&err), "[git] boom");
	tt_error_clear(&err);
}
