/* core/plan.c - plans in tether-vcs's saved format 3 (see plan.h). */
#include "core/plan.h"

#include <inttypes.h>
#include <math.h> /* isnan: a macro, no libm */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/oplog.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/num.h"

struct tt_plan {
	/* {"format", "tether_version", "command", "created_at", "context",
	 *  "notes", "preconditions", "actions"}, in that order: Plan._content(). */
	json_t *content;
	char *saved_digest; /* NULL: built in this process */
};

/* ------------------------------------------------------------------------ */
/* Tables (tether.plan)                                                      */

static const char *const precondition_kinds[] = {
	"manifest_hash", "workspace_id", "workspace_bookmark", "vcs_head", "history_digest",
	"config_version", "ref_absent", "ref_head", "ref_present", "ref_descends",
	"base_state", "pin_state", "no_new_holders", "store_empty", "bookmark_head",
};

static const char *const non_writes[] = {
	"trunk", "keep-branch", "keep-pin", "keep-store", "defer-fork",
	"refuse", "reuse", "adopt", "hold", "share",
};

/* REQUIRED_PRECONDITIONS, each list sorted (missing ones are reported sorted). */
typedef struct required_entry {
	const char *command;
	const char *kinds[7];
} required_entry;

static const required_entry required[] = {
	{ "commit", { "manifest_hash", "workspace_bookmark", "workspace_id" } },
	{ "new", { "manifest_hash", "workspace_id" } },
	{ "restore", { "manifest_hash", "workspace_bookmark", "workspace_id" } },
	{ "promote", { "bookmark_head", "manifest_hash", "workspace_bookmark", "workspace_id" } },
	{ "drop",
	  { "bookmark_head", "history_digest", "no_new_holders", "vcs_head", "workspace_bookmark",
	    "workspace_id" } },
	{ "gc", { "history_digest", "workspace_id" } },
	{ "repair", { "history_digest", "workspace_id" } },
};

/* REQUIRED_ACTION_PRECONDITIONS: per command and verb, groups of
 * alternatives (each group's kinds sorted, as the message joins them). */
typedef struct action_required {
	const char *command;
	const char *op;
	const char *groups[2][3];
} action_required;

static const action_required action_required_table[] = {
	{ "new", "fork", { { "ref_absent", "ref_head" } } },
	{ "new", "reuse", { { "ref_head" } } },
	{ "new", "adopt", { { "ref_present" } } },
	{ "restore", "fork", { { "ref_absent", "ref_head" } } },
	{ "promote", "fast-forward", { { "base_state" }, { "pin_state", "ref_head" } } },
	{ "promote", "merge", { { "base_state" }, { "pin_state", "ref_head" } } },
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

bool tt_plan_precondition_kind_valid(const char *kind)
{
	if (!kind)
		return false;
	for (size_t i = 0; i < COUNT(precondition_kinds); i++)
		if (!strcmp(kind, precondition_kinds[i]))
			return true;
	return false;
}

/* The same for a JSON string (which may hold a NUL). */
static bool kind_valid_json(const json_t *s)
{
	return json_is_string(s) && strlen(json_string_value(s)) == json_string_length(s) &&
	       tt_plan_precondition_kind_valid(json_string_value(s));
}

bool tt_plan_op_writes(const char *op)
{
	if (!op)
		return true;
	for (size_t i = 0; i < COUNT(non_writes); i++)
		if (!strcmp(op, non_writes[i]))
			return false;
	return true;
}

static bool op_writes_json(const json_t *s)
{
	if (strlen(json_string_value(s)) != json_string_length(s))
		return true;
	return tt_plan_op_writes(json_string_value(s));
}

/* ------------------------------------------------------------------------ */
/* Building                                                                  */

static json_t *str_or_empty(const char *s)
{
	return json_string(s ? s : "");
}

tt_plan *tt_plan_new(const char *command)
{
	char at[32];
	tt_plan *plan;
	if (!command || !tt_utf8_valid(command, strlen(command)))
		return NULL;
	if (!(plan = tt_calloc(1, sizeof *plan)))
		return NULL;
	tt_now_iso_seconds(at);
	plan->content = json_pack("{s:i,s:s,s:s,s:s,s:{},s:[],s:[],s:[]}", "format", TT_PLAN_FORMAT,
				  "tether_version", TT_PLAN_TETHER_VERSION, "command", command,
				  "created_at", at, "context", "notes", "preconditions", "actions");
	if (!plan->content) {
		free(plan);
		return NULL;
	}
	return plan;
}

void tt_plan_free(tt_plan *plan)
{
	if (!plan)
		return;
	json_decref(plan->content);
	free(plan->saved_digest);
	free(plan);
}

static int check_utf8(const char *s, const char *what, tt_error *err)
{
	if (s && !tt_utf8_valid(s, strlen(s)))
		return tt_error_set(err, TT_EUSAGE, "plan %s is not valid UTF-8", what);
	return 0;
}

int tt_plan_set_created_at(tt_plan *plan, const char *created_at, tt_error *err)
{
	int rc = check_utf8(created_at, "created_at", err);
	if (rc)
		return rc;
	if (json_object_set_new(plan->content, "created_at", str_or_empty(created_at)))
		return tt_error_oom(err);
	return 0;
}

static json_t *params_copy(const json_t *params, tt_error *err)
{
	json_t *p;
	if (params && !json_is_object(params)) {
		tt_error_set(err, TT_EUSAGE, "plan params must be an object");
		return NULL;
	}
	p = params ? json_deep_copy(params) : json_object();
	if (!p)
		tt_error_oom(err);
	return p;
}

int tt_plan_require(tt_plan *plan, const char *kind, const json_t *expected, const char *key,
		    const json_t *params, const char *detail, tt_error *err)
{
	json_t *p, *pre;
	int rc;
	if (!tt_plan_precondition_kind_valid(kind))
		return tt_error_set(err, TT_EUSAGE, "unknown precondition kind '%s'",
				    kind ? kind : "(null)");
	if ((rc = check_utf8(key, "precondition key", err)) ||
	    (rc = check_utf8(detail, "precondition detail", err)))
		return rc;
	if (!(p = params_copy(params, err)))
		return err ? err->code : TT_ENOMEM;
	pre = json_pack("{s:s,s:o,s:o,s:o,s:o}", "kind", kind, "expected",
			expected ? json_deep_copy(expected) : json_null(), "key",
			key ? json_string(key) : json_null(), "params", p, "detail",
			str_or_empty(detail));
	if (!pre || json_array_append_new(json_object_get(plan->content, "preconditions"), pre))
		return tt_error_oom(err);
	return 0;
}

int tt_plan_action(tt_plan *plan, const char *op, const char *key, const char *kind,
		   const char *target, const char *detail, const json_t *params, tt_error *err)
{
	json_t *p, *a;
	int rc;
	if ((rc = check_utf8(op, "action op", err)) || (rc = check_utf8(key, "action key", err)) ||
	    (rc = check_utf8(kind, "action kind", err)) ||
	    (rc = check_utf8(target, "action target", err)) ||
	    (rc = check_utf8(detail, "action detail", err)))
		return rc;
	if (!(p = params_copy(params, err)))
		return err ? err->code : TT_ENOMEM;
	a = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "op", str_or_empty(op), "key", str_or_empty(key),
		      "kind", str_or_empty(kind), "target", str_or_empty(target), "detail",
		      str_or_empty(detail), "params", p);
	if (!a || json_array_append_new(json_object_get(plan->content, "actions"), a))
		return tt_error_oom(err);
	return 0;
}

int tt_plan_note(tt_plan *plan, const char *note, tt_error *err)
{
	int rc = check_utf8(note, "note", err);
	if (rc)
		return rc;
	if (json_array_append_new(json_object_get(plan->content, "notes"), str_or_empty(note)))
		return tt_error_oom(err);
	return 0;
}

json_t *tt_plan_context(const tt_plan *plan)
{
	return json_object_get(plan->content, "context");
}

int tt_plan_set_context(tt_plan *plan, const char *name, const json_t *value, tt_error *err)
{
	int rc = check_utf8(name, "context name", err);
	if (rc)
		return rc;
	json_t *v = value ? json_deep_copy(value) : json_null();
	if (!v || json_object_set_new(tt_plan_context(plan), name, v))
		return tt_error_oom(err);
	return 0;
}

/* ------------------------------------------------------------------------ */
/* Reading                                                                   */

const char *tt_plan_command(const tt_plan *plan)
{
	return json_string_value(json_object_get(plan->content, "command"));
}

const char *tt_plan_created_at(const tt_plan *plan)
{
	return json_string_value(json_object_get(plan->content, "created_at"));
}

static json_t *list_of(const tt_plan *plan, const char *name)
{
	return json_object_get(plan->content, name);
}

size_t tt_plan_action_count(const tt_plan *plan)
{
	return json_array_size(list_of(plan, "actions"));
}

size_t tt_plan_note_count(const tt_plan *plan)
{
	return json_array_size(list_of(plan, "notes"));
}

const char *tt_plan_note_at(const tt_plan *plan, size_t i)
{
	return json_string_value(json_array_get(list_of(plan, "notes"), i));
}

size_t tt_plan_precondition_count(const tt_plan *plan)
{
	return json_array_size(list_of(plan, "preconditions"));
}

bool tt_plan_action_at(const tt_plan *plan, size_t i, tt_plan_action_view *out)
{
	json_t *a = json_array_get(list_of(plan, "actions"), i);
	if (!a)
		return false;
	out->op = json_string_value(json_object_get(a, "op"));
	out->key = json_string_value(json_object_get(a, "key"));
	out->key_len = json_string_length(json_object_get(a, "key"));
	out->kind = json_string_value(json_object_get(a, "kind"));
	out->target = json_string_value(json_object_get(a, "target"));
	out->detail = json_string_value(json_object_get(a, "detail"));
	out->params = json_object_get(a, "params");
	return true;
}

bool tt_plan_precondition_at(const tt_plan *plan, size_t i, tt_plan_precondition_view *out)
{
	json_t *p = json_array_get(list_of(plan, "preconditions"), i);
	if (!p)
		return false;
	out->kind = json_string_value(json_object_get(p, "kind"));
	out->expected = json_object_get(p, "expected");
	out->key = json_object_get(p, "key");
	out->params = json_object_get(p, "params");
	out->detail = json_string_value(json_object_get(p, "detail"));
	return true;
}

size_t tt_plan_write_count(const tt_plan *plan)
{
	json_t *actions = list_of(plan, "actions");
	size_t n = 0;
	for (size_t i = 0; i < json_array_size(actions); i++)
		if (op_writes_json(json_object_get(json_array_get(actions, i), "op")))
			n++;
	return n;
}

/* ------------------------------------------------------------------------ */
/* Serialization                                                             */

/* The error of a failed tt_json_dump. */
static int dump_error(int rc, const tt_buf *b, tt_error *err)
{
	if (rc == 0)
		return 0;
	if (b->failed)
		return tt_buf_check(b, err, "plan");
	return tt_error_set(err, rc, "plan cannot be written as JSON (%s)", tt_code_name(rc));
}

int tt_plan_digest(const tt_plan *plan, char hex[65], tt_error *err)
{
	/* json.dumps(..., sort_keys=True, separators=(",", ":")): ASCII escapes. */
	static const tt_json_style style = { -1, true, true, true };
	tt_buf b = TT_BUF_INIT;
	int rc = dump_error(tt_json_dump(&b, plan->content, style), &b, err);
	if (rc == 0 && tt_sha256_hex(hex, b.ptr, b.len) != 0)
		rc = tt_error_set(err, TT_ERROR, "SHA-256 failed");
	tt_buf_release(&b);
	return rc;
}

json_t *tt_plan_to_object(const tt_plan *plan, tt_error *err)
{
	char hex[65];
	json_t *o;
	if (tt_plan_digest(plan, hex, err))
		return NULL;
	o = json_copy(plan->content);
	if (!o || json_object_set_new(o, "digest", json_string(hex))) {
		json_decref(o);
		tt_error_oom(err);
		return NULL;
	}
	return o;
}

int tt_plan_to_json(const tt_plan *plan, tt_buf *out, tt_error *err)
{
	json_t *o = tt_plan_to_object(plan, err);
	int rc;
	if (!o)
		return err && err->code ? err->code : TT_ERROR;
	rc = dump_error(tt_json_dump(out, o, TT_JSON_PRETTY), out, err);
	json_decref(o);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                   */

static int invalid(tt_error *err, const char *what)
{
	return tt_error_set(err, TT_ECONFIG, "invalid plan: %s", what);
}

/* str(v) as a new JSON string, NULL on OOM. */
static json_t *py_str_json(const json_t *v)
{
	tt_buf b = TT_BUF_INIT;
	json_t *s;
	if (v && json_is_string(v))
		return json_incref((json_t *)v);
	tt_pyv_str(&b, v);
	s = b.failed ? NULL : json_stringn(b.ptr, b.len);
	tt_buf_release(&b);
	return s;
}

/* int(v) for the format; 0 or an error. */
static int py_int_format(const json_t *v, long long *out, tt_error *err)
{
	if (json_is_integer(v)) {
		*out = json_integer_value(v);
		return 0;
	}
	if (json_is_boolean(v)) {
		*out = json_is_true(v);
		return 0;
	}
	if (json_is_real(v)) {
		double d = json_real_value(v);
		*out = d > -9.2e18 && d < 9.2e18 ? (long long)d : (d < 0 ? -1 : 9999);
		return 0;
	}
	if (json_is_string(v)) {
		const char *s = json_string_value(v);
		size_t len = json_string_length(v), i = 0, end = len;
		long long n = 0;
		bool neg = false, digits = false;
		while (i < end && strchr(" \t\n\r\v\f", s[i]) && s[i])
			i++;
		while (end > i && strchr(" \t\n\r\v\f", s[end - 1]) && s[end - 1])
			end--;
		if (i < end && (s[i] == '+' || s[i] == '-'))
			neg = s[i++] == '-';
		for (; i < end; i++) {
			if (s[i] == '_' && digits && i + 1 < end && s[i + 1] >= '0' && s[i + 1] <= '9')
				continue;
			if (s[i] < '0' || s[i] > '9')
				break;
			digits = true;
			n = n > 100000000000000000LL ? n : n * 10 + (s[i] - '0');
		}
		if (digits && i == end) {
			*out = neg ? -n : n;
			return 0;
		}
		tt_buf b = TT_BUF_INIT;
		tt_pyv_repr_str(&b, s, len);
		tt_error_set(err, TT_ECONFIG, "invalid plan: invalid literal for int() with base 10: %s",
			     b.failed ? "?" : b.ptr);
		tt_buf_release(&b);
		return TT_ECONFIG;
	}
	return tt_error_set(err, TT_ECONFIG, "invalid plan: the format is not a number");
}

/* list(data.get(name, [])) as a new array; NULL when Python cannot iterate it. */
static json_t *list_member(const json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);
	return v ? tt_pyv_list(v) : json_array();
}

/* str(data.get(name, "")) */
static json_t *field_str(const json_t *o, const char *name)
{
	json_t *v = json_object_get(o, name);
	return v ? py_str_json(v) : json_string("");
}

/* Action.from_dict */
static int load_action(json_t *actions, const json_t *d, tt_error *err)
{
	json_t *a = NULL, *params = NULL;
	int rc = 0;
	if (!json_is_object(d))
		return invalid(err, "an action is not an object");
	if (!json_object_get(d, "op"))
		return invalid(err, "'op'");
	if (!(params = tt_pyv_dict(json_object_get(d, "params"))))
		return invalid(err, "an action's params are not a dict");
	a = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o}", "op", py_str_json(json_object_get(d, "op")),
		      "key", field_str(d, "key"), "kind", field_str(d, "kind"), "target",
		      field_str(d, "target"), "detail", field_str(d, "detail"), "params", params);
	if (!a || json_array_append_new(actions, a))
		rc = tt_error_oom(err);
	return rc;
}

/* Precondition.from_dict */
static int load_precondition(json_t *pres, const json_t *d, tt_error *err)
{
	json_t *p = NULL, *kind = NULL, *params = NULL;
	int rc = 0;
	if (!json_is_object(d))
		return invalid(err, "a precondition is not an object");
	if (!json_object_get(d, "kind"))
		return invalid(err, "'kind'");
	if (!(kind = py_str_json(json_object_get(d, "kind"))))
		return tt_error_oom(err);
	if (!kind_valid_json(kind)) {
		tt_buf b = TT_BUF_INIT;
		tt_pyv_repr_str(&b, json_string_value(kind), json_string_length(kind));
		rc = tt_error_set(err, TT_ECONFIG, "unknown plan precondition %s",
				  b.failed ? "?" : b.ptr);
		tt_buf_release(&b);
		json_decref(kind);
		return rc;
	}
	if (!(params = tt_pyv_dict(json_object_get(d, "params")))) {
		json_decref(kind);
		return invalid(err, "a precondition's params are not a dict");
	}
	json_t *expected = json_object_get(d, "expected"), *key = json_object_get(d, "key");
	p = json_pack("{s:o,s:O,s:O,s:o,s:o}", "kind", kind, "expected",
		      expected ? expected : json_null(), "key", key ? key : json_null(),
		      "params", params, "detail", field_str(d, "detail"));
	if (!p || json_array_append_new(pres, p))
		rc = tt_error_oom(err);
	return rc;
}

int tt_plan_parse(tt_plan **out, const char *text, size_t len, tt_error *err)
{
	json_t *data = NULL, *items = NULL, *content = NULL, *v;
	tt_plan *plan = NULL;
	tt_buf b = TT_BUF_INIT;
	long long fmt = TT_PLAN_FORMAT;
	int rc = 0;

	*out = NULL;
	if (!(data = tt_json_parse(text, len, "plan", err))) {
		rc = err ? err->code : TT_EPARSE;
		if (rc == TT_EPARSE) {
			tt_error_prefix(err, "invalid plan");
			rc = TT_ECONFIG;
			if (err)
				err->code = rc;
		}
		goto done;
	}
	if (!json_is_object(data)) {
		rc = invalid(err, "not a JSON object");
		goto done;
	}
	/* Another version's plan is refused before its format is looked at. */
	v = json_object_get(data, "tether_version");
	if (!json_is_string(v) || strcmp(json_string_value(v), TT_PLAN_TETHER_VERSION) != 0 ||
	    json_string_length(v) != strlen(TT_PLAN_TETHER_VERSION)) {
		if (tt_pyv_truthy(v)) {
			tt_buf_puts(&b, "tether ");
			tt_pyv_str(&b, v);
		} else {
			tt_buf_puts(&b, "an older tether");
		}
		if ((rc = tt_buf_check(&b, err, "plan")))
			goto done;
		rc = tt_error_set(err, TT_ESTALEPLAN,
				  "this plan was made by %s; this is tether %s: re-run the plan",
				  b.ptr, TT_PLAN_TETHER_VERSION);
		goto done;
	}
	if ((v = json_object_get(data, "format")) && (rc = py_int_format(v, &fmt, err)))
		goto done;
	if (fmt != TT_PLAN_FORMAT) {
		rc = tt_error_set(err, TT_ESTALEPLAN, "unsupported plan format %lld", fmt);
		tt_error_hint(err, "re-run the plan");
		goto done;
	}
	if (!json_object_get(data, "command")) {
		rc = invalid(err, "'command'");
		goto done;
	}
	content = json_pack("{s:i,s:s,s:o,s:o,s:o,s:[],s:[],s:[]}", "format", TT_PLAN_FORMAT,
			    "tether_version", TT_PLAN_TETHER_VERSION, "command",
			    py_str_json(json_object_get(data, "command")), "created_at",
			    field_str(data, "created_at"), "context",
			    json_object(), "notes", "preconditions", "actions");
	if (!content) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* actions */
	if (!(items = list_member(data, "actions"))) {
		rc = invalid(err, "the actions are not a list");
		goto done;
	}
	for (size_t i = 0; i < json_array_size(items); i++)
		if ((rc = load_action(json_object_get(content, "actions"), json_array_get(items, i),
				      err)))
			goto done;
	json_decref(items);
	items = NULL;
	/* context */
	if (!(v = tt_pyv_dict(json_object_get(data, "context")))) {
		rc = invalid(err, "the context is not a dict");
		goto done;
	}
	if (json_object_set_new(content, "context", v)) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* notes */
	if (!(items = list_member(data, "notes"))) {
		rc = invalid(err, "the notes are not a list");
		goto done;
	}
	for (size_t i = 0; i < json_array_size(items); i++) {
		json_t *s = py_str_json(json_array_get(items, i));
		if (!s || json_array_append_new(json_object_get(content, "notes"), s)) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	json_decref(items);
	items = NULL;
	/* preconditions */
	if (!(items = list_member(data, "preconditions"))) {
		rc = invalid(err, "the preconditions are not a list");
		goto done;
	}
	for (size_t i = 0; i < json_array_size(items); i++)
		if ((rc = load_precondition(json_object_get(content, "preconditions"),
					    json_array_get(items, i), err)))
			goto done;

	if (!(plan = tt_calloc(1, sizeof *plan))) {
		rc = tt_error_oom(err);
		goto done;
	}
	plan->content = content;
	content = NULL;
	/* str(data.get("digest") or "") */
	v = json_object_get(data, "digest");
	tt_buf_reset(&b);
	if (tt_pyv_truthy(v))
		tt_pyv_str(&b, v);
	if ((rc = tt_buf_check(&b, err, "plan")))
		goto done;
	plan->saved_digest = tt_buf_detach(&b);
	*out = plan;
	plan = NULL;
done:
	tt_plan_free(plan);
	json_decref(content);
	json_decref(items);
	json_decref(data);
	tt_buf_release(&b);
	return rc;
}

const char *tt_plan_saved_digest(const tt_plan *plan)
{
	return plan->saved_digest;
}

bool tt_plan_edited(const tt_plan *plan)
{
	char hex[65];
	if (!plan->saved_digest)
		return false;
	if (tt_plan_digest(plan, hex, NULL) != 0)
		return true;
	return strcmp(plan->saved_digest, hex) != 0;
}

/* Does a precondition of this kind name this key (a string, byte-equal)? */
static bool have_for_key(const json_t *pres, const char *kind, const json_t *key)
{
	for (size_t i = 0; i < json_array_size(pres); i++) {
		json_t *p = json_array_get(pres, i), *k = json_object_get(p, "key");
		if (json_is_string(k) && json_equal(k, key) &&
		    !strcmp(json_string_value(json_object_get(p, "kind")), kind))
			return true;
	}
	return false;
}

size_t tt_plan_missing_preconditions(const tt_plan *plan, tt_buf *out)
{
	json_t *pres = list_of(plan, "preconditions"), *actions = list_of(plan, "actions");
	json_t *cmd = json_object_get(plan->content, "command");
	const char *command = json_string_value(cmd);
	size_t n = 0;
	if (strlen(command) != json_string_length(cmd))
		return 0;
	for (size_t r = 0; r < COUNT(required); r++) {
		if (strcmp(required[r].command, command) != 0)
			continue;
		for (size_t k = 0; k < COUNT(required[r].kinds) && required[r].kinds[k]; k++) {
			bool have = false;
			for (size_t i = 0; i < json_array_size(pres) && !have; i++)
				have = !strcmp(json_string_value(json_object_get(
						       json_array_get(pres, i), "kind")),
					       required[r].kinds[k]);
			if (!have) {
				tt_buf_puts(out, n++ ? ", " : "");
				tt_buf_puts(out, required[r].kinds[k]);
			}
		}
	}
	for (size_t i = 0; i < json_array_size(actions); i++) {
		json_t *a = json_array_get(actions, i), *op = json_object_get(a, "op");
		json_t *key = json_object_get(a, "key");
		for (size_t t = 0; t < COUNT(action_required_table); t++) {
			const action_required *ar = &action_required_table[t];
			if (strcmp(ar->command, command) || strcmp(ar->op, json_string_value(op)) ||
			    strlen(json_string_value(op)) != json_string_length(op))
				continue;
			for (size_t g = 0; g < 2 && ar->groups[g][0]; g++) {
				bool have = false;
				for (size_t k = 0; k < 3 && ar->groups[g][k] && !have; k++)
					have = have_for_key(pres, ar->groups[g][k], key);
				if (have)
					continue;
				tt_buf_puts(out, n++ ? ", " : "");
				for (size_t k = 0; k < 3 && ar->groups[g][k]; k++) {
					if (k)
						tt_buf_putc(out, '/');
					tt_buf_puts(out, ar->groups[g][k]);
				}
				tt_buf_puts(out, " for ");
				tt_pyv_repr_str(out, json_string_value(key), json_string_length(key));
			}
		}
	}
	return n;
}

int tt_plan_check(const tt_plan *plan, tt_error *err)
{
	tt_buf missing = TT_BUF_INIT;
	tt_buf cmd = TT_BUF_INIT;
	int rc = 0;
	size_t n = tt_plan_missing_preconditions(plan, &missing);
	tt_pyv_str(&cmd, json_object_get(plan->content, "command"));
	if ((rc = tt_buf_check(&missing, err, "plan")) || (rc = tt_buf_check(&cmd, err, "plan")))
		goto done;
	if (n) {
		rc = tt_error_set(err, TT_ESTALEPLAN,
				  "this %s plan lacks the %s precondition(s) tether requires of it "
				  "(it was edited) and cannot be trusted to apply where it was "
				  "reviewed; re-run the plan",
				  cmd.ptr, missing.ptr);
		goto done;
	}
	if (tt_plan_edited(plan))
		rc = tt_error_set(err, TT_ESTALEPLAN,
				  "this %s plan was edited after it was saved: its actions, context "
				  "and preconditions no longer match the digest they were saved "
				  "with, so the checks no longer vouch for what it would do; re-run "
				  "the plan",
				  cmd.ptr);
done:
	tt_buf_release(&missing);
	tt_buf_release(&cmd);
	return rc;
}

int tt_plan_from_json(tt_plan **out, const char *text, size_t len, tt_error *err)
{
	int rc = tt_plan_parse(out, text, len, err);
	if (rc)
		return rc;
	if ((rc = tt_plan_check(*out, err))) {
		tt_plan_free(*out);
		*out = NULL;
	}
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Text                                                                      */

static void pad(tt_buf *out, size_t n)
{
	while (n--)
		tt_buf_putc(out, ' ');
}

/* Is cp whitespace to str.strip()? */
static bool py_space(uint32_t cp)
{
	return (cp >= 0x09 && cp <= 0x0d) || (cp >= 0x1c && cp <= 0x20) || cp == 0x85 ||
	       cp == 0xa0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 ||
	       cp == 0x2029 || cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* Drop trailing whitespace after offset start (str.rstrip()). */
static void rstrip_from(tt_buf *out, size_t start)
{
	const unsigned char *p = (const unsigned char *)out->ptr;
	size_t keep = start;
	for (size_t i = start; i < out->len;) {
		uint32_t cp;
		size_t n = tt_utf8_next(p + i, out->len - i, &cp);
		i += n;
		if (!py_space(cp))
			keep = i;
	}
	tt_buf_truncate(out, keep);
}

static void put_json_str(tt_buf *out, const json_t *s)
{
	tt_buf_put(out, json_string_value(s), json_string_length(s));
}

int tt_plan_render(const tt_plan *plan, tt_buf *out, tt_error *err)
{
	json_t *actions = list_of(plan, "actions"), *notes = list_of(plan, "notes");
	size_t width = 0, n = json_array_size(actions);
	if (!n) {
		tt_buf_puts(out, "  ");
		put_json_str(out, json_object_get(plan->content, "command"));
		tt_buf_puts(out, ": nothing to do\n");
	}
	for (size_t i = 0; i < n; i++) {
		size_t w;
		tt_pyv_len(json_object_get(json_array_get(actions, i), "key"), &w);
		if (w > width)
			width = w;
	}
	for (size_t i = 0; i < n; i++) {
		json_t *a = json_array_get(actions, i);
		json_t *op = json_object_get(a, "op"), *key = json_object_get(a, "key");
		json_t *kind = json_object_get(a, "kind");
		size_t start = out->len, w;
		tt_buf_puts(out, "  ");
		tt_pyv_len(op, &w);
		if (w < 18)
			pad(out, 18 - w);
		put_json_str(out, op);
		tt_buf_puts(out, "  ");
		if (width) {
			tt_pyv_len(key, &w);
			put_json_str(out, key);
			pad(out, width - w);
			tt_buf_puts(out, "  ");
		}
		if (json_string_length(kind)) {
			tt_buf_putc(out, '[');
			put_json_str(out, kind);
			tt_buf_puts(out, "] ");
		}
		put_json_str(out, json_object_get(a, "target"));
		tt_buf_puts(out, "  ");
		put_json_str(out, json_object_get(a, "detail"));
		rstrip_from(out, start);
		tt_buf_putc(out, '\n');
	}
	for (size_t i = 0; i < json_array_size(notes); i++) {
		tt_buf_puts(out, "  ");
		pad(out, 18);
		tt_buf_puts(out, "  ");
		put_json_str(out, json_array_get(notes, i));
		tt_buf_putc(out, '\n');
	}
	return tt_buf_check(out, err, "plan text");
}

int tt_plan_render_text(const tt_plan *plan, tt_buf *out, tt_error *err)
{
	tt_buf_puts(out, "plan: ");
	put_json_str(out, json_object_get(plan->content, "command"));
	tt_buf_printf(out, " (%zu write(s))\n", tt_plan_write_count(plan));
	return tt_plan_render(plan, out, err);
}
