/* Unit tests for core/plan: the saved format, its digest and loading rules,
 * write counts and the text rendering.  Expected bytes were produced with
 * tether-vcs 0.1.0b7's tether.plan.Plan on the same plans. */
#include <stdlib.h>
#include <string.h>

#include "core/plan.h"
#include "harness.h"
#include "util/buf.h"

/* The plan of the reference run (see the file comment). */
static tt_plan *sample(void)
{
	tt_error err = TT_ERROR_INIT;
	tt_plan *p = tt_plan_new("new");
	json_t *states = json_pack("{s:{s:f,s:[i,n,b]}}", "a", "x", 1.5, "y", 1, 1);
	json_t *params = json_pack("{s:s,s:s}", "ref", "tether.ws.x", "backend", "memory");
	json_t *state = json_pack("{s:s}", "state", "s1");
	json_t *ws = json_string("ws1"), *h = json_string("abc"), *s1 = json_string("s1");
	json_t *rev = json_string("main");
	int rc = !p || !states || !params || !state;
	rc = rc || tt_plan_set_created_at(p, "2026-01-02T03:04:05+00:00", &err);
	rc = rc || tt_plan_set_context(p, "rev", rev, &err);
	rc = rc || tt_plan_set_context(p, "states", states, &err);
	rc = rc || tt_plan_require(p, "workspace_id", ws, NULL, NULL, "wrong workspace", &err);
	rc = rc || tt_plan_require(p, "manifest_hash", h, NULL, NULL, NULL, &err);
	rc = rc || tt_plan_require(p, "ref_head", s1, "data/a", params, "", &err);
	rc = rc || tt_plan_require(p, "ref_head", NULL, "b", NULL, NULL, &err);
	rc = rc || tt_plan_action(p, "fork", "data/a", "memory", "tether.ws.x", "from s1", state,
				  &err);
	rc = rc || tt_plan_action(p, "reuse", "b", "git", "", "", NULL, &err);
	rc = rc || tt_plan_action(p, "trunk", "ccc", NULL, "main", "h\xc3\xa9llo \xe2\x9c\x93 ", NULL,
				  &err);
	rc = rc || tt_plan_note(p, "dd: unchanged", &err);
	json_decref(states);
	json_decref(params);
	json_decref(state);
	json_decref(ws);
	json_decref(h);
	json_decref(s1);
	json_decref(rev);
	tt_error_clear(&err);
	if (rc) {
		tt_plan_free(p);
		return NULL;
	}
	return p;
}

static const char sample_digest[] =
	"b2d47804b8c747de11a642040d37152e98e984e72dad9f248ee4eb3cf2bc02cd";

static const char sample_text[] =
	"plan: new (1 write(s))\n"
	"                fork  data/a  [memory] tether.ws.x  from s1\n"
	"               reuse  b       [git]\n"
	"               trunk  ccc     main  h\xc3\xa9llo \xe2\x9c\x93\n"
	"                      dd: unchanged\n";

/* Replace the first occurrence of from with to in text (a new string). */
static char *replace(const char *text, const char *from, const char *to)
{
	const char *at = strstr(text, from);
	tt_buf b = TT_BUF_INIT;
	if (!at)
		return NULL;
	tt_buf_put(&b, text, (size_t)(at - text));
	tt_buf_puts(&b, to);
	tt_buf_puts(&b, at + strlen(from));
	return tt_buf_detach(&b);
}

TT_TEST(digest_matches_python)
{
	tt_error err = TT_ERROR_INIT;
	char hex[65];
	tt_plan *p = sample();
	CHECK(p);
	CHECK_OK(tt_plan_digest(p, hex, &err));
	CHECK_STR(hex, sample_digest);
	tt_plan_free(p);
}

TT_TEST(to_json_matches_python)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf b = TT_BUF_INIT;
	tt_plan *p = sample();
	CHECK(p);
	CHECK_OK(tt_plan_to_json(p, &b, &err));
	static const char head[] = "{\n  \"format\": 3,\n  \"tether_version\": \"0.1.0b7\",\n"
				   "  \"command\": \"new\",\n";
	CHECK(strncmp(b.ptr, head, sizeof head - 1) == 0);
	CHECK(strstr(b.ptr, "\"detail\": \"h\\u00e9llo \\u2713 \",\n"));
	CHECK(strstr(b.ptr, "\"y\": [\n          1,\n          null,\n          true\n"));
	CHECK(strstr(b.ptr, "\"params\": {}\n"));
	CHECK(strstr(b.ptr, "\n  \"digest\": \"b2d47804b8c747de11a642040d37152e98e984e72dad9f248ee4eb3cf2bc02cd\"\n}"));
	CHECK(b.ptr[b.len - 1] == '}');
	tt_buf_release(&b);
	tt_plan_free(p);
}

TT_TEST(round_trip_is_byte_identical)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf a = TT_BUF_INIT, b = TT_BUF_INIT;
	tt_plan *p = sample(), *q = NULL;
	CHECK(p);
	CHECK_OK(tt_plan_to_json(p, &a, &err));
	CHECK_OK(tt_plan_from_json(&q, a.ptr, a.len, &err));
	CHECK(!tt_plan_edited(q));
	CHECK_STR(tt_plan_saved_digest(q), sample_digest);
	CHECK_OK(tt_plan_to_json(q, &b, &err));
	CHECK_STR(b.ptr, a.ptr);
	CHECK_STR(tt_plan_command(q), "new");
	CHECK_STR(tt_plan_created_at(q), "2026-01-02T03:04:05+00:00");
	CHECK_INT(tt_plan_action_count(q), 3);
	CHECK_INT(tt_plan_precondition_count(q), 4);
	CHECK_INT(tt_plan_note_count(q), 1);
	CHECK_STR(tt_plan_note_at(q, 0), "dd: unchanged");
	tt_plan_action_view av;
	CHECK(tt_plan_action_at(q, 0, &av));
	CHECK_STR(av.op, "fork");
	CHECK_STR(av.key, "data/a");
	CHECK_STR(av.kind, "memory");
	CHECK_STR(av.target, "tether.ws.x");
	CHECK_STR(json_string_value(json_object_get(av.params, "state")), "s1");
	CHECK(!tt_plan_action_at(q, 3, &av));
	tt_plan_precondition_view pv;
	CHECK(tt_plan_precondition_at(q, 2, &pv));
	CHECK_STR(pv.kind, "ref_head");
	CHECK_STR(json_string_value(pv.key), "data/a");
	CHECK_STR(json_string_value(pv.expected), "s1");
	CHECK(tt_plan_precondition_at(q, 0, &pv));
	CHECK(json_is_null(pv.key));
	CHECK_STR(pv.detail, "wrong workspace");
	tt_buf_release(&a);
	tt_buf_release(&b);
	tt_plan_free(p);
	tt_plan_free(q);
}

TT_TEST(tampering_is_detected)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf a = TT_BUF_INIT;
	tt_plan *p = sample(), *q = NULL;
	char *edited;
	CHECK(p);
	CHECK_OK(tt_plan_to_json(p, &a, &err));
	/* An action's target changed, digest left alone. */
	edited = replace(a.ptr, "\"target\": \"tether.ws.x\"", "\"target\": \"tether.ws.y\"");
	CHECK(edited);
	CHECK_OK(tt_plan_parse(&q, edited, strlen(edited), &err));
	CHECK(tt_plan_edited(q));
	tt_plan_free(q);
	q = NULL;
	CHECK_INT(tt_plan_from_json(&q, edited, strlen(edited), &err), TT_ESTALEPLAN);
	CHECK(q == NULL);
	CHECK(strstr(err.message, "this new plan was edited after it was saved"));
	CHECK(strstr(err.message, "re-run the plan"));
	tt_error_clear(&err);
	free(edited);
	/* No digest at all counts as edited. */
	edited = replace(a.ptr, ",\n  \"digest\": \"b2d47804b8c747de11a642040d37152e98e984e72dad9f248ee4eb3cf2bc02cd\"", "");
	CHECK(edited);
	CHECK_INT(tt_plan_from_json(&q, edited, strlen(edited), &err), TT_ESTALEPLAN);
	tt_error_clear(&err);
	free(edited);
	/* A wrong digest. */
	edited = replace(a.ptr, "b2d47804", "c2d47804");
	CHECK(edited);
	CHECK_INT(tt_plan_from_json(&q, edited, strlen(edited), &err), TT_ESTALEPLAN);
	tt_error_clear(&err);
	free(edited);
	/* Key order and whitespace do not matter: the digest is over content. */
	edited = replace(a.ptr, "{\n  \"format\": 3,", "{\"format\":3,");
	CHECK(edited);
	CHECK_OK(tt_plan_from_json(&q, edited, strlen(edited), &err));
	tt_plan_free(q);
	free(edited);
	tt_buf_release(&a);
	tt_plan_free(p);
}

TT_TEST(old_formats_and_versions_refused)
{
	tt_error err = TT_ERROR_INIT;
	tt_plan *q = NULL;
	static const char v1[] = "{\"format\": 1, \"command\": \"commit\", \"actions\": []}";
	static const char v2[] =
		"{\"format\": 2, \"command\": \"commit\", \"actions\": [], \"preconditions\": []}";
	static const char other[] = "{\"format\": 3, \"tether_version\": \"0.1.0b6\", "
				    "\"command\": \"commit\"}";
	static const char f2[] = "{\"format\": 2, \"tether_version\": \"0.1.0b7\", "
				 "\"command\": \"commit\"}";
	CHECK_INT(tt_plan_parse(&q, v1, strlen(v1), &err), TT_ESTALEPLAN);
	CHECK_STR(err.message,
		  "this plan was made by an older tether; this is tether 0.1.0b7: re-run the plan");
	tt_error_clear(&err);
	CHECK_INT(tt_plan_parse(&q, v2, strlen(v2), &err), TT_ESTALEPLAN);
	CHECK(strstr(err.message, "re-run the plan"));
	tt_error_clear(&err);
	CHECK_INT(tt_plan_parse(&q, other, strlen(other), &err), TT_ESTALEPLAN);
	CHECK_STR(err.message,
		  "this plan was made by tether 0.1.0b6; this is tether 0.1.0b7: re-run the plan");
	tt_error_clear(&err);
	CHECK_INT(tt_plan_parse(&q, f2, strlen(f2), &err), TT_ESTALEPLAN);
	CHECK_STR(err.message, "unsupported plan format 2");
	CHECK_STR(err.hint, "re-run the plan");
	tt_error_clear(&err);
	CHECK(q == NULL);
}

TT_TEST(malformed_plans_refused)
{
	tt_error err = TT_ERROR_INIT;
	tt_plan *q = NULL;
	static const char *const bad[] = {
		"not json",
		"[1, 2]",
		"{\"tether_version\": \"0.1.0b7\"}",
		"{\"tether_version\": \"0.1.0b7\", \"command\": \"gc\", \"actions\": [1]}",
		"{\"tether_version\": \"0.1.0b7\", \"command\": \"gc\", \"actions\": [{}]}",
		"{\"tether_version\": \"0.1.0b7\", \"command\": \"gc\", \"actions\": null}",
		"{\"tether_version\": \"0.1.0b7\", \"command\": \"gc\", \"context\": 5}",
		"{\"tether_version\": \"0.1.0b7\", \"command\": \"gc\", \"format\": \"x\"}",
		"{\"tether_version\": \"0.1.0b7\", \"command\": \"gc\", \"preconditions\": [{}]}",
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		CHECK_MSG(tt_plan_parse(&q, bad[i], strlen(bad[i]), &err) == TT_ECONFIG, "case %zu",
			  i);
		CHECK(q == NULL);
		CHECK(strncmp(err.message, "invalid plan: ", 14) == 0);
		tt_error_clear(&err);
	}
	static const char unknown[] = "{\"tether_version\": \"0.1.0b7\", \"command\": \"gc\", "
				      "\"preconditions\": [{\"kind\": \"moon_phase\"}]}";
	CHECK_INT(tt_plan_parse(&q, unknown, strlen(unknown), &err), TT_ECONFIG);
	CHECK_STR(err.message, "unknown plan precondition 'moon_phase'");
	tt_error_clear(&err);
}

TT_TEST(python_conversions_on_load)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf b = TT_BUF_INIT;
	tt_plan *q = NULL;
	/* format "3" is int("3"); str() of a null key is "None"; notes
	 * iterate a string; a missing digest is "". */
	static const char text[] =
		"{\"tether_version\": \"0.1.0b7\", \"format\": \" 3 \", \"command\": \"import\", "
		"\"notes\": \"ab\", \"actions\": [{\"op\": \"add\", \"key\": null, \"params\": "
		"[[\"a\", 1]]}], \"context\": null, \"preconditions\": [{\"kind\": \"manifest_hash\", "
		"\"detail\": 7}]}";
	CHECK_OK(tt_plan_parse(&q, text, strlen(text), &err));
	CHECK_STR(tt_plan_saved_digest(q), "");
	CHECK(tt_plan_edited(q));
	CHECK_INT(tt_plan_note_count(q), 2);
	CHECK_STR(tt_plan_note_at(q, 1), "b");
	tt_plan_action_view av;
	CHECK(tt_plan_action_at(q, 0, &av));
	CHECK_STR(av.key, "None");
	CHECK_STR(av.kind, "");
	CHECK_INT(json_integer_value(json_object_get(av.params, "a")), 1);
	tt_plan_precondition_view pv;
	CHECK(tt_plan_precondition_at(q, 0, &pv));
	CHECK_STR(pv.detail, "7");
	CHECK_STR(tt_plan_created_at(q), "");
	CHECK_OK(tt_plan_render_text(q, &b, &err));
	CHECK_STR(b.ptr, "plan: import (1 write(s))\n"
			 "                 add  None\n"
			 "                      a\n"
			 "                      b\n");
	tt_buf_release(&b);
	tt_plan_free(q);
}

TT_TEST(required_preconditions)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf b = TT_BUF_INIT;
	tt_plan *p = tt_plan_new("new");
	json_t *x = json_string("x");
	CHECK(p && x);
	CHECK_OK(tt_plan_action(p, "fork", "k'1", NULL, NULL, NULL, NULL, &err));
	CHECK_OK(tt_plan_action(p, "adopt", "k2", NULL, NULL, NULL, NULL, &err));
	CHECK_INT(tt_plan_missing_preconditions(p, &b), 4);
	CHECK_STR(b.ptr, "manifest_hash, workspace_id, ref_absent/ref_head for \"k'1\", "
			 "ref_present for 'k2'");
	CHECK_INT(tt_plan_check(p, &err), TT_ESTALEPLAN);
	CHECK(strstr(err.message, "this new plan lacks the manifest_hash, workspace_id, "));
	CHECK(strstr(err.message, "re-run the plan"));
	tt_error_clear(&err);
	CHECK_OK(tt_plan_require(p, "workspace_id", x, NULL, NULL, NULL, &err));
	CHECK_OK(tt_plan_require(p, "manifest_hash", x, NULL, NULL, NULL, &err));
	CHECK_OK(tt_plan_require(p, "ref_absent", NULL, "k'1", NULL, NULL, &err));
	CHECK_OK(tt_plan_require(p, "ref_present", x, "k2", NULL, NULL, &err));
	tt_buf_reset(&b);
	CHECK_INT(tt_plan_missing_preconditions(p, &b), 0);
	CHECK_OK(tt_plan_check(p, &err));
	/* A saved plan that lacks one is refused on load. */
	tt_buf_reset(&b);
	tt_plan *q = tt_plan_new("promote");
	CHECK(q);
	CHECK_OK(tt_plan_action(q, "merge", "m", NULL, NULL, NULL, NULL, &err));
	CHECK_OK(tt_plan_to_json(q, &b, &err));
	tt_plan *r = NULL;
	CHECK_INT(tt_plan_from_json(&r, b.ptr, b.len, &err), TT_ESTALEPLAN);
	CHECK(strstr(err.message, "this promote plan lacks the bookmark_head, manifest_hash, "
				  "workspace_bookmark, workspace_id, base_state for 'm', "
				  "pin_state/ref_head for 'm' precondition(s)"));
	tt_error_clear(&err);
	/* Commands without requirements need none. */
	tt_plan *s = tt_plan_new("import");
	CHECK(s);
	CHECK_OK(tt_plan_check(s, &err));
	/* Unknown kinds cannot be required. */
	CHECK_INT(tt_plan_require(s, "moon_phase", NULL, NULL, NULL, NULL, &err), TT_EUSAGE);
	tt_error_clear(&err);
	CHECK(tt_plan_precondition_kind_valid("config_version"));
	CHECK(!tt_plan_precondition_kind_valid("ref"));
	tt_plan_free(s);
	tt_plan_free(q);
	tt_plan_free(p);
	json_decref(x);
	tt_buf_release(&b);
}

TT_TEST(write_counts)
{
	tt_error err = TT_ERROR_INIT;
	static const char *const quiet[] = { "trunk", "defer-fork", "reuse", "adopt", "share",
					     "hold", "refuse", "keep-branch", "keep-pin",
					     "keep-store" };
	static const char *const loud[] = { "pin", "record", "fork", "unpin", "delete-branch",
					    "forget-working-ref", "delete-listing", "fast-forward",
					    "merge", "add", "update", "remove", "upsert", "repin",
					    "refork", "vcs-commit", "delete-store", "forget-store",
					    "leave-bookmark", "delete-file" };
	tt_plan *p = tt_plan_new("gc");
	CHECK(p);
	for (size_t i = 0; i < sizeof quiet / sizeof *quiet; i++) {
		CHECK(!tt_plan_op_writes(quiet[i]));
		CHECK_OK(tt_plan_action(p, quiet[i], "k", NULL, NULL, NULL, NULL, &err));
	}
	CHECK_INT(tt_plan_write_count(p), 0);
	for (size_t i = 0; i < sizeof loud / sizeof *loud; i++) {
		CHECK(tt_plan_op_writes(loud[i]));
		CHECK_OK(tt_plan_action(p, loud[i], "k", NULL, NULL, NULL, NULL, &err));
	}
	CHECK_INT(tt_plan_write_count(p), sizeof loud / sizeof *loud);
	tt_plan_free(p);
}

TT_TEST(text_rendering)
{
	tt_error err = TT_ERROR_INIT;
	tt_buf b = TT_BUF_INIT;
	tt_plan *p = sample();
	CHECK(p);
	CHECK_OK(tt_plan_render_text(p, &b, &err));
	CHECK_STR(b.ptr, sample_text);
	tt_plan_free(p);
	/* Nothing to do; notes still shown. */
	tt_buf_reset(&b);
	p = tt_plan_new("gc");
	CHECK(p);
	CHECK_OK(tt_plan_note(p, "keeping live bookmarks: main", &err));
	CHECK_OK(tt_plan_render_text(p, &b, &err));
	CHECK_STR(b.ptr, "plan: gc (0 write(s))\n  gc: nothing to do\n"
			 "                      keeping live bookmarks: main\n");
	tt_plan_free(p);
	/* No keys: no key column; a long verb is not cut; trailing
	 * whitespace (Unicode too) is dropped. */
	tt_buf_reset(&b);
	p = tt_plan_new("forget-workspace");
	CHECK(p);
	CHECK_OK(tt_plan_action(p, "forget-vcs-workspace-now", NULL, NULL, "ws", NULL, NULL, &err));
	CHECK_OK(tt_plan_action(p, "delete-file", NULL, "", "", "x\xe3\x80\x80", NULL, &err));
	CHECK_OK(tt_plan_render(p, &b, &err));
	CHECK_STR(b.ptr, "  forget-vcs-workspace-now  ws\n"
			 "         delete-file    x\n");
	tt_plan_free(p);
	tt_buf_release(&b);
}

TT_TEST(python_value_helpers)
{
	tt_buf b = TT_BUF_INIT;
	json_t *v = json_loads("{\"a\": [1, 2.5, null, true, \"it's\"], \"b\": {\"c\": \"x\\ny\"}}",
			       0, NULL);
	CHECK(v);
	tt_pyv_str(&b, v);
	CHECK_STR(b.ptr, "{'a': [1, 2.5, None, True, \"it's\"], 'b': {'c': 'x\\ny'}}");
	tt_buf_reset(&b);
	json_t *s = json_string("\xc3\xa9\x01\xc2\xa0");
	tt_pyv_repr(&b, s);
	CHECK_STR(b.ptr, "'\xc3\xa9\\x01\\xa0'");
	size_t n = 0;
	CHECK(tt_pyv_len(s, &n));
	CHECK_INT(n, 3);
	json_t *one = json_integer(1), *onef = json_real(1.0);
	CHECK(tt_pyv_eq(one, onef));
	CHECK(tt_pyv_eq(one, json_true()));
	json_t *empty = json_string(""), *half = json_real(0.5);
	CHECK(!tt_pyv_truthy(empty));
	CHECK(tt_pyv_truthy(half));
	json_decref(empty);
	json_decref(half);
	json_decref(one);
	json_decref(onef);
	json_decref(s);
	json_decref(v);
	tt_buf_release(&b);
}
