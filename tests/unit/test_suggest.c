/* Unit tests for util/suggest: edit distance and "did you mean". */
#include "harness.h"
#include "util/suggest.h"

TT_TEST(edit_distance_basics)
{
	CHECK_INT(tt_edit_distance("", ""), 0);
	CHECK_INT(tt_edit_distance("abc", ""), 3);
	CHECK_INT(tt_edit_distance("comit", "commit"), 1);
	CHECK_INT(tt_edit_distance("verison", "version"), 1); /* a swap costs 1 */
	CHECK_INT(tt_edit_distance("kitten", "sitting"), 3);
}

TT_TEST(suggest_picks_the_closest)
{
	const char *cmds[] = { "init", "add", "status", "commit", "diff", "log" };
	CHECK_STR(tt_suggest("comit", cmds, 6), "commit");
	CHECK_STR(tt_suggest("stauts", cmds, 6), "status");
	CHECK_STR(tt_suggest("stat", cmds, 6), "status");
	CHECK_STR(tt_suggest("ad", cmds, 6), "add");
	CHECK(tt_suggest("frobnicate", cmds, 6) == NULL);
	CHECK(tt_suggest("x", cmds, 6) == NULL);
	CHECK(tt_suggest("", cmds, 6) == NULL);
	CHECK(tt_suggest("add", cmds, 6) == NULL); /* itself is no suggestion */
}
