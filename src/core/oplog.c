/* core/oplog.c - the journal: appending, reading and folding (see oplog.h). */
#include "core/oplog.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "core/ids.h"
#include "core/layout.h"
#include "core/plan.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"

/* The biggest journal read (a log grows for as long as the checkout lives). */
#define OPLOG_MAX_BYTES ((size_t)1 << 30)

/* Appends from the threads of this process take turns. */
static pthread_mutex_t append_lock = PTHREAD_MUTEX_INITIALIZER;

void tt_now_iso_seconds(char out[32])
{
	time_t t = time(NULL);
	struct tm tm;
	gmtime_r(&t, &tm);
	strftime(out, 32, "%Y-%m-%dT%H:%M:%S+00:00", &tm);
}

void tt_now_iso_micro(char out[40])
{
	struct timeval tv;
	struct tm tm;
	gettimeofday(&tv, NULL);
	gmtime_r(&tv.tv_sec, &tm);
	char base[20];
	if (strftime(base, sizeof base, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
		base[0] = '\0';
	snprintf(out, 40, "%s.%06ld+00:00", base, (long)tv.tv_usec);
}

int tt_oplog_append(const char *root, json_t *line, tt_error *err)
{
	/* json.dumps(obj) defaults: ", " and ": ", ensure_ascii, insertion order. */
	static const tt_json_style style = { -1, false, true, false };
	tt_buf b = TT_BUF_INIT;
	char *path = tt_tether_path(root, TT_OPS_FILENAME);
	int rc;
	if (!path)
		return tt_error_oom(err);
	rc = tt_json_dump(&b, line, style);
	if (rc && !b.failed)
		rc = tt_error_set(err, rc, "journal entry cannot be written as JSON");
	else
		rc = tt_buf_putc(&b, '\n') ? tt_buf_check(&b, err, "journal entry") : 0;
	if (rc == 0) {
		pthread_mutex_lock(&append_lock);
		rc = tt_append_fsync(path, b.ptr, b.len, 0644, err);
		pthread_mutex_unlock(&append_lock);
	}
	free(path);
	tt_buf_release(&b);
	return rc;
}

/* An OpEntry.to_dict() with a fresh id. */
static json_t *new_entry(const char *command, json_t *plan, json_t *result, json_t *pre,
			 const char *undoes, const char *parent, const char *status,
			 char id[TT_OP_ID_LEN + 1], tt_error *err)
{
	char at[32];
	json_t *e;
	if (tt_random_hex(id, TT_OP_ID_LEN, err) < 0)
		return NULL;
	tt_now_iso_seconds(at);
	e = json_pack("{s:s,s:s,s:s,s:O,s:o,s:o,s:o,s:n,s:s,s:o,s:[]}", "id", id, "at", at,
		      "command", command, "plan", plan ? plan : json_null(), "result",
		      result ? json_copy(result) : json_object(), "pre",
		      pre ? json_copy(pre) : json_object(), "undoes",
		      undoes ? json_string(undoes) : json_null(), "undone_by", "status", status,
		      "parent", parent ? json_string(parent) : json_null(), "progress");
	if (!e)
		tt_error_set(err, TT_EUSAGE, "journal entry cannot be built (not UTF-8, or out of memory)");
	return e;
}

int tt_oplog_record(const char *root, const char *command, json_t *result, json_t *pre,
		    char *id_out, tt_error *err)
{
	char id[TT_OP_ID_LEN + 1];
	int rc;
	json_t *e = new_entry(command, NULL, result, pre, NULL, NULL, "done", id, err);
	if (!e)
		return err && err->code ? err->code : TT_ENOMEM;
	rc = tt_oplog_append(root, e, err);
	json_decref(e);
	if (rc == 0 && id_out)
		memcpy(id_out, id, sizeof id);
	return rc;
}

int tt_oplog_record_plan(const char *root, const char *command, json_t *plan, json_t *result, json_t *pre,
			 const char *parent, char *id_out, tt_error *err)
{
	char id[TT_OP_ID_LEN + 1];
	int rc;
	json_t *e = new_entry(command, plan, result, pre, NULL, parent, "done", id, err);
	if (!e)
		return err && err->code ? err->code : TT_ENOMEM;
	rc = tt_oplog_append(root, e, err);
	json_decref(e);
	if (rc == 0 && id_out)
		memcpy(id_out, id, sizeof id);
	return rc;
}

int tt_oplog_begin_ex(const char *root, const char *command, json_t *plan, json_t *pre,
		      const char *undoes, const char *parent, char id_out[TT_OP_ID_LEN + 1],
		      tt_error *err)
{
	char id[TT_OP_ID_LEN + 1];
	int rc;
	if ((pre && !json_is_object(pre)) || !command)
		return tt_error_set(err, TT_EUSAGE, "journal: pre must be an object");
	json_t *e = new_entry(command, plan, NULL, pre, undoes, parent, "started", id, err);
	if (!e)
		return err && err->code ? err->code : TT_ENOMEM;
	rc = tt_oplog_append(root, e, err);
	json_decref(e);
	if (rc == 0)
		memcpy(id_out, id, sizeof id);
	return rc;
}

int tt_oplog_begin(const char *root, const char *command, json_t *plan, json_t *pre,
		   const char *parent, char id_out[TT_OP_ID_LEN + 1], tt_error *err)
{
	return tt_oplog_begin_ex(root, command, plan, pre, NULL, parent, id_out, err);
}

int tt_oplog_progress(const char *root, const char *id, const char *action, json_t *detail,
		      tt_error *err)
{
	json_t *line;
	int rc;
	if (detail && (!json_is_object(detail) || json_object_get(detail, "action")))
		return tt_error_set(err, TT_EUSAGE,
				    "journal: progress detail must be an object without \"action\"");
	line = json_pack("{s:s,s:s}", "progress", id, "action", action);
	if (!line || (detail && json_object_update(line, detail))) {
		json_decref(line);
		return tt_error_set(err, TT_EUSAGE, "journal: progress record cannot be built");
	}
	rc = tt_oplog_append(root, line, err);
	json_decref(line);
	return rc;
}

int tt_oplog_done(const char *root, const char *id, json_t *result, json_t *pre,
		  const char *undone, tt_error *err)
{
	json_t *line;
	int rc;
	if ((result && !json_is_object(result)) || (pre && !json_is_object(pre)))
		return tt_error_set(err, TT_EUSAGE, "journal: result and pre must be objects");
	line = json_pack("{s:s,s:o,s:o}", "done", id, "result",
			 result ? json_copy(result) : json_object(), "pre",
			 pre ? json_copy(pre) : json_object());
	if (line && undone &&
	    (json_object_set_new(line, "undone", json_string(undone)) ||
	     json_object_set_new(line, "by", json_string(id)))) {
		json_decref(line);
		line = NULL;
	}
	if (!line)
		return tt_error_set(err, TT_EUSAGE, "journal: done mark cannot be built");
	rc = tt_oplog_append(root, line, err);
	json_decref(line);
	return rc;
}

int tt_oplog_mark_undone(const char *root, const char *id, const char *by, tt_error *err)
{
	json_t *line = json_pack("{s:s,s:s}", "undone", id, "by", by);
	int rc;
	if (!line)
		return tt_error_set(err, TT_EUSAGE, "journal: undo mark cannot be built");
	rc = tt_oplog_append(root, line, err);
	json_decref(line);
	return rc;
}

/* ------------------------------------------------------------------------ */
/* Is a line that failed to parse a torn fragment?                           */

enum { J_INVALID, J_INCOMPLETE, J_COMPLETE };

/*
 * Classify text as Python's json.loads grammar reads it (NaN, Infinity and
 * -Infinity included): an unfinished document (every byte fits, the input
 * just stops), a complete one, or neither.  An append cut short leaves an
 * unfinished document.  No recursion: nesting is kept in a byte stack.
 */
static int json_classify(const unsigned char *s, size_t n)
{
	enum { VALUE, ARRAY_FIRST, AFTER, KEY_FIRST, KEY, COLON } state = VALUE;
	tt_buf stack = TT_BUF_INIT;
	size_t i = 0;
	int result = J_INVALID;

	for (;;) {
		while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
			i++;
		if (i == n) {
			result = state == AFTER && stack.len == 0 ? J_COMPLETE : J_INCOMPLETE;
			goto done;
		}
		unsigned char c = s[i];
		char top = stack.len ? stack.ptr[stack.len - 1] : 0;
		switch (state) {
		case ARRAY_FIRST:
			if (c == ']') {
				tt_buf_truncate(&stack, stack.len - 1);
				state = AFTER;
				i++;
				continue;
			}
			state = VALUE; /* and look at c again */
			continue;
		case VALUE:
			if (c == '{' || c == '[') {
				if (tt_buf_putc(&stack, (char)c))
					goto done;
				state = c == '{' ? KEY_FIRST : ARRAY_FIRST;
				i++;
				continue;
			}
			if (c == '"')
				break; /* the string scan below */
			if (c == '-' || (c >= '0' && c <= '9')) {
				if (c == '-')
					i++;
				if (i == n) {
					result = J_INCOMPLETE;
					goto done;
				}
				if (s[i] == 'I') {
					c = 'I';
					goto literal;
				}
				if (s[i] < '0' || s[i] > '9')
					goto done;
				if (s[i] == '0')
					i++;
				else
					while (i < n && s[i] >= '0' && s[i] <= '9')
						i++;
				if (i < n && s[i] == '.') {
					if (++i == n) {
						result = J_INCOMPLETE;
						goto done;
					}
					if (s[i] < '0' || s[i] > '9')
						goto done;
					while (i < n && s[i] >= '0' && s[i] <= '9')
						i++;
				}
				if (i < n && (s[i] == 'e' || s[i] == 'E')) {
					if (++i < n && (s[i] == '+' || s[i] == '-'))
						i++;
					if (i == n) {
						result = J_INCOMPLETE;
						goto done;
					}
					if (s[i] < '0' || s[i] > '9')
						goto done;
					while (i < n && s[i] >= '0' && s[i] <= '9')
						i++;
				}
				state = AFTER;
				continue;
			}
		literal: {
			static const char *const words[] = { "true", "false", "null", "NaN",
							     "Infinity" };
			const char *w = NULL;
			for (size_t k = 0; k < 5; k++)
				if (words[k][0] == (char)c)
					w = words[k];
			if (!w)
				goto done;
			for (size_t k = 0; w[k]; k++, i++) {
				if (i == n) {
					result = J_INCOMPLETE;
					goto done;
				}
				if (s[i] != (unsigned char)w[k])
					goto done;
			}
			state = AFTER;
			continue;
		}
		case AFTER:
			if (!top)
				goto done;
			if (c == ',') {
				state = top == '{' ? KEY : VALUE;
			} else if (c == (top == '{' ? '}' : ']')) {
				tt_buf_truncate(&stack, stack.len - 1);
			} else {
				goto done;
			}
			i++;
			continue;
		case KEY_FIRST:
			if (c == '}') {
				tt_buf_truncate(&stack, stack.len - 1);
				state = AFTER;
				i++;
				continue;
			}
			state = KEY;
			continue;
		case KEY:
			if (c != '"')
				goto done;
			break;
		case COLON:
			if (c != ':')
				goto done;
			state = VALUE;
			i++;
			continue;
		}
		/* A string: s[i] is its opening quote. */
		for (i++;; i++) {
			if (i == n) {
				result = J_INCOMPLETE;
				goto done;
			}
			if (s[i] == '"')
				break;
			if (s[i] < 0x20)
				goto done;
			if (s[i] != '\\')
				continue;
			if (++i == n) {
				result = J_INCOMPLETE;
				goto done;
			}
			if (s[i] == 'u') {
				for (int k = 0; k < 4; k++) {
					if (++i == n) {
						result = J_INCOMPLETE;
						goto done;
					}
					if (!strchr("0123456789abcdefABCDEF", s[i]) || !s[i])
						goto done;
				}
			} else if (!s[i] || !strchr("\"\\/bfnrt", s[i])) {
				goto done;
			}
		}
		i++;
		state = state == KEY || state == KEY_FIRST ? COLON : AFTER;
	}
done:
	tt_buf_release(&stack);
	return result;
}

/* ------------------------------------------------------------------------ */
/* Lines as str.splitlines() and str.strip() find them                       */

/* The length of a line break at s[i] (0: none). */
static size_t line_break(const unsigned char *s, size_t i, size_t n)
{
	unsigned char c = s[i];
	if (c == '\r')
		return i + 1 < n && s[i + 1] == '\n' ? 2 : 1;
	if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e))
		return 1;
	if (c == 0xc2 && i + 1 < n && s[i + 1] == 0x85)
		return 2;
	if (c == 0xe2 && i + 2 < n && s[i + 1] == 0x80 && (s[i + 2] == 0xa8 || s[i + 2] == 0xa9))
		return 3;
	return 0;
}

/* The length of Python whitespace at s[i] (0: none); reads ahead only. */
static size_t space_at(const unsigned char *s, size_t i, size_t n)
{
	unsigned char c = s[i];
	if ((c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20))
		return 1;
	if (c == 0xc2 && i + 1 < n && (s[i + 1] == 0x85 || s[i + 1] == 0xa0))
		return 2;
	if (c == 0xe1 && i + 2 < n && s[i + 1] == 0x9a && s[i + 2] == 0x80)
		return 3;
	if (c == 0xe2 && i + 2 < n && s[i + 1] == 0x80 &&
	    (s[i + 2] <= 0x8a || s[i + 2] == 0xa8 || s[i + 2] == 0xa9 || s[i + 2] == 0xaf))
		return 3;
	if (c == 0xe2 && i + 2 < n && s[i + 1] == 0x81 && s[i + 2] == 0x9f)
		return 3;
	if (c == 0xe3 && i + 2 < n && s[i + 1] == 0x80 && s[i + 2] == 0x80)
		return 3;
	return 0;
}

/* Trim Python whitespace from both ends of [*b, *e) (valid UTF-8). */
static void strip(const unsigned char *s, size_t *b, size_t *e)
{
	size_t i = *b, last = *b;
	bool seen = false;
	while (i < *e) {
		size_t w = space_at(s, i, *e);
		if (!w)
			break;
		i += w;
	}
	*b = i;
	/* Scan forward to find the end of the last non-space character. */
	while (i < *e) {
		size_t w = space_at(s, i, *e);
		if (w) {
			i += w;
			continue;
		}
		unsigned char c = s[i];
		i += c < 0x80 ? 1 : c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
		if (i > *e)
			i = *e;
		last = i;
		seen = true;
	}
	*e = seen ? last : *b;
}

/* Does the line hold a printable ASCII character (so it is not blank)? */
static bool has_visible_ascii(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (s[i] > 0x20 && s[i] < 0x7f)
			return true;
	return false;
}

/* ------------------------------------------------------------------------ */
/* Folding                                                                   */

void tt_oplog_free(tt_oplog *log)
{
	if (!log)
		return;
	for (size_t i = 0; i < log->count; i++)
		json_decref(log->entries[i].record);
	free(log->entries);
	log->entries = NULL;
	log->count = 0;
}

/* str(v) as a new JSON string. */
static json_t *str_json(const json_t *v)
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

static json_t *get_default(const json_t *o, const char *name, json_t *dflt)
{
	json_t *v = json_object_get(o, name);
	if (v) {
		json_decref(dflt);
		return json_incref(v);
	}
	return dflt;
}

typedef struct fold_state {
	const char *what;
	json_t *entries;   /* [record, ...] */
	json_t *lines;     /* [line, ...] parallel to entries */
	json_t *done;      /* id -> [mark, line] */
	json_t *marks;     /* id -> by */
	json_t *progress;  /* id -> [record, ...] */
} fold_state;

static int line_error(tt_error *err, const fold_state *st, size_t line, const char *msg)
{
	return tt_error_set(err, TT_EPARSE, "%s:%zu: %s", st->what, line, msg);
}

/* OpEntry.from_dict(data) as its to_dict() record. */
static int take_entry(fold_state *st, json_t *data, size_t line, tt_error *err)
{
	json_t *id = json_object_get(data, "id"), *rec, *result, *pre, *status;
	if (!id)
		return line_error(err, st, line, "journal entry without an \"id\"");
	result = tt_pyv_dict(json_object_get(data, "result"));
	pre = tt_pyv_dict(json_object_get(data, "pre"));
	if (!result || !pre) {
		json_decref(result);
		json_decref(pre);
		return line_error(err, st, line, "journal entry whose result or pre is not a dict");
	}
	status = json_object_get(data, "status");
	rec = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:[]}", "id", str_json(id), "at",
			json_object_get(data, "at") ? str_json(json_object_get(data, "at"))
						    : json_string(""),
			"command", str_json(json_object_get(data, "command")), "plan",
			get_default(data, "plan", json_null()), "result", result, "pre", pre,
			"undoes", get_default(data, "undoes", json_null()), "undone_by",
			get_default(data, "undone_by", json_null()), "status",
			tt_pyv_truthy(status) ? str_json(status) : json_string("done"), "parent",
			get_default(data, "parent", json_null()), "progress");
	if (!rec || json_array_append_new(st->entries, rec) ||
	    json_array_append_new(st->lines, json_integer((json_int_t)line)))
		return tt_error_oom(err);
	return 0;
}

static int set_by_id(json_t *map, const json_t *idv, json_t *value, tt_error *err)
{
	json_t *id = str_json(idv);
	int rc = 0;
	if (!id || !value ||
	    json_object_setn_new(map, json_string_value(id), json_string_length(id), value))
		rc = tt_error_oom(err);
	else
		value = NULL;
	json_decref(id);
	json_decref(value);
	return rc;
}

static json_t *get_by_id(const json_t *map, const json_t *id)
{
	return json_object_getn(map, json_string_value(id), json_string_length(id));
}

/* One parsed line. */
static int take_line(fold_state *st, json_t *obj, size_t line, tt_error *err)
{
	if (!json_is_object(obj))
		return line_error(err, st, line, "journal line is not a JSON object");
	if (json_object_get(obj, "command"))
		return take_entry(st, obj, line, err);
	if (json_object_get(obj, "done")) {
		int rc = set_by_id(st->done, json_object_get(obj, "done"),
				   json_pack("[O,I]", obj, (json_int_t)line), err);
		json_t *undone = json_object_get(obj, "undone");
		if (rc == 0 && tt_pyv_truthy(undone)) {
			json_t *by = json_object_get(obj, "by");
			rc = set_by_id(st->marks, undone, by ? str_json(by) : json_string(""), err);
		}
		return rc;
	}
	if (json_object_get(obj, "undone")) {
		json_t *by = json_object_get(obj, "by");
		return set_by_id(st->marks, json_object_get(obj, "undone"),
				 by ? str_json(by) : json_string(""), err);
	}
	if (json_object_get(obj, "progress")) {
		json_t *id = str_json(json_object_get(obj, "progress"));
		json_t *rec = json_copy(obj), *list;
		int rc = 0;
		if (!id || !rec || json_object_del(rec, "progress")) {
			rc = tt_error_oom(err);
			goto out;
		}
		list = get_by_id(st->progress, id);
		if (!list) {
			list = json_array();
			if (!list || json_object_setn_new(st->progress, json_string_value(id),
							  json_string_length(id), list)) {
				rc = tt_error_oom(err);
				goto out;
			}
		}
		if (json_array_append(list, rec))
			rc = tt_error_oom(err);
	out:
		json_decref(id);
		json_decref(rec);
		return rc;
	}
	return 0; /* something newer: not ours to read */
}

/* Fold marks into the entries and build out. */
static int finish(fold_state *st, tt_oplog *out, tt_error *err)
{
	size_t n = json_array_size(st->entries);
	tt_op_entry *arr = n ? tt_calloc(n, sizeof *arr) : NULL;
	int rc = 0;
	if (n && !arr)
		return tt_error_oom(err);
	for (size_t i = 0; i < n; i++) {
		json_t *rec = json_array_get(st->entries, i), *id = json_object_get(rec, "id");
		json_t *prog = get_by_id(st->progress, id), *by = get_by_id(st->marks, id);
		json_t *mark = get_by_id(st->done, id);
		if (prog && json_object_set_new(rec, "progress", json_copy(prog))) {
			rc = tt_error_oom(err);
			goto done;
		}
		if (by && json_object_set(rec, "undone_by",
					  json_string_length(by) ? by : json_null())) {
			rc = tt_error_oom(err);
			goto done;
		}
		if (mark) {
			json_t *m = json_array_get(mark, 0);
			size_t line = (size_t)json_integer_value(json_array_get(mark, 1));
			json_t *res = json_object_get(m, "result"), *pre = json_object_get(m, "pre");
			json_object_set_new(rec, "status", json_string("done"));
			if (tt_pyv_truthy(res)) {
				json_t *d = tt_pyv_dict(res);
				if (!d) {
					rc = line_error(err, st, line, "done mark whose result is not a dict");
					goto done;
				}
				json_object_set_new(rec, "result", d);
			}
			if (tt_pyv_truthy(pre)) {
				json_t *d = tt_pyv_dict(pre);
				json_t *merged = json_copy(json_object_get(rec, "pre"));
				if (!d || !merged || json_object_update(merged, d)) {
					json_decref(d);
					json_decref(merged);
					rc = d ? tt_error_oom(err)
					       : line_error(err, st, line, "done mark whose pre is not a dict");
					goto done;
				}
				json_decref(d);
				json_object_set_new(rec, "pre", merged);
			}
		}
		tt_op_entry *e = &arr[i];
		e->record = json_incref(rec);
		e->id = json_string_value(id);
		e->at = json_string_value(json_object_get(rec, "at"));
		e->command = json_string_value(json_object_get(rec, "command"));
		e->status = json_string_value(json_object_get(rec, "status"));
		e->plan = json_object_get(rec, "plan");
		e->result = json_object_get(rec, "result");
		e->pre = json_object_get(rec, "pre");
		e->undoes = json_object_get(rec, "undoes");
		e->undone_by = json_object_get(rec, "undone_by");
		e->parent = json_object_get(rec, "parent");
		e->progress = json_object_get(rec, "progress");
		e->line = (size_t)json_integer_value(json_array_get(st->lines, i));
		if (!e->status || !e->result || !e->pre) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	out->entries = arr;
	out->count = n;
	arr = NULL;
done:
	if (arr) {
		for (size_t i = 0; i < n; i++)
			json_decref(arr[i].record);
		free(arr);
	}
	return rc;
}

int tt_oplog_parse(const char *text, size_t len, const char *what, tt_oplog *out,
		   tt_error *err)
{
	const unsigned char *s = (const unsigned char *)text;
	fold_state st = { what ? what : TT_DIR "/" TT_OPS_FILENAME, json_array(), json_array(),
			  json_object(), json_object(), json_object() };
	size_t line = 0, last_line = 0;
	int rc = 0;

	tt_oplog_free(out);
	if (!st.entries || !st.lines || !st.done || !st.marks || !st.progress) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* Where the last non-empty line is: a torn one there is skipped. */
	for (size_t i = 0, ln = 0; i < len;) {
		size_t b = i, e, br = 0;
		while (i < len && !(br = line_break(s, i, len)))
			i++;
		e = i;
		i += br;
		ln++;
		if (!has_visible_ascii(s + b, e - b) && tt_utf8_valid(text + b, e - b))
			strip(s, &b, &e);
		if (e > b)
			last_line = ln;
	}
	for (size_t i = 0; i < len;) {
		size_t b = i, e, br = 0;
		json_error_t je;
		while (i < len && !(br = line_break(s, i, len)))
			i++;
		e = i;
		i += br;
		line++;
		bool last = line == last_line;
		if (!tt_utf8_valid(text + b, e - b)) {
			if (last)
				continue;
			rc = line_error(err, &st, line, "journal line is not valid UTF-8");
			goto done;
		}
		strip(s, &b, &e);
		if (e == b)
			continue;
		json_t *obj = json_loadb(text + b, e - b, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
		if (!obj) {
			if (json_error_code(&je) == json_error_out_of_memory) {
				rc = tt_error_oom(err);
				goto done;
			}
			/* A complete document (one nested too deep to read, say) is
			 * no torn append, last line or not: refused like any other. */
			int kind = json_classify(s + b, e - b);
			if (last && kind != J_COMPLETE)
				continue; /* a torn final line from an interrupted append */
			if (kind == J_INCOMPLETE)
				continue; /* a torn line a later append closed */
			rc = tt_error_set(err, TT_EPARSE, "%s:%zu: %s: %s", st.what, line,
					  kind == J_COMPLETE ? "journal line cannot be read here"
							     : "malformed journal line",
					  je.text);
			goto done;
		}
		rc = take_line(&st, obj, line, err);
		json_decref(obj);
		if (rc)
			goto done;
	}
	rc = finish(&st, out, err);
done:
	json_decref(st.entries);
	json_decref(st.lines);
	json_decref(st.done);
	json_decref(st.marks);
	json_decref(st.progress);
	return rc;
}

int tt_oplog_read(const char *root, tt_oplog *out, tt_error *err)
{
	char *path = tt_tether_path(root, TT_OPS_FILENAME);
	tt_buf b = TT_BUF_INIT;
	int rc = 0;
	tt_oplog_free(out);
	if (!path)
		return tt_error_oom(err);
	if (!tt_is_file(path))
		goto done; /* no log yet: no entries */
	if ((rc = tt_read_file(path, &b, OPLOG_MAX_BYTES, err)))
		goto done;
	rc = tt_oplog_parse(b.ptr, b.len, TT_DIR "/" TT_OPS_FILENAME, out, err);
done:
	free(path);
	tt_buf_release(&b);
	return rc;
}

const tt_op_entry *tt_oplog_newest(const tt_oplog *log, size_t i)
{
	return log && i < log->count ? &log->entries[log->count - 1 - i] : NULL;
}

const tt_op_entry *tt_oplog_find(const tt_oplog *log, const char *id)
{
	for (size_t i = 0; log && id && i < log->count; i++) {
		const tt_op_entry *e = &log->entries[log->count - 1 - i];
		if (!strcmp(e->id, id) && strlen(id) == json_string_length(json_object_get(e->record, "id")))
			return e;
	}
	return NULL;
}

/* ------------------------------------------------------------------------ */
/* Entries                                                                   */

bool tt_op_incomplete(const tt_op_entry *e)
{
	return !strcmp(e->status, "started") &&
	       json_string_length(json_object_get(e->record, "status")) == 7;
}

static bool is_none(const json_t *v)
{
	return !v || json_is_null(v);
}

bool tt_op_undoable(const tt_op_entry *e)
{
	static const char *const not_undoable[] = { "undo",    "repair", "upgrade",
						    "abandon", "drop",   "forget-workspace" };
	if (!is_none(e->undoes) || !is_none(e->undone_by) || tt_op_incomplete(e) ||
	    !is_none(e->parent))
		return false;
	if (strlen(e->command) != json_string_length(json_object_get(e->record, "command")))
		return true;
	for (size_t i = 0; i < sizeof not_undoable / sizeof *not_undoable; i++)
		if (!strcmp(e->command, not_undoable[i]))
			return false;
	return true;
}

json_t *tt_op_to_json(const tt_op_entry *e, bool vcs_commit_gone)
{
	json_t *o = json_copy(e->record);
	if (o && json_object_set_new(o, "vcs_commit_gone", json_boolean(vcs_commit_gone))) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

/* --- summary helpers: Python's expressions over the result dict ---------- */

static json_t *get(const json_t *o, const char *name)
{
	return json_is_object(o) ? json_object_get(o, name) : NULL;
}

/* `x or {}` / `x or []` then something that needs a dict. */
static const json_t *dict_or_empty(const json_t *v)
{
	return json_is_object(v) && json_object_size(v) ? v : NULL;
}

/* len(x or []) */
static size_t len_or_zero(const json_t *v)
{
	size_t n = 0;
	if (tt_pyv_truthy(v) && !tt_pyv_len(v, &n))
		n = 0;
	return n;
}

/* sum(len(v) for v in (x or {}).values()) */
static size_t sum_lens(const json_t *v)
{
	const char *k;
	json_t *x;
	size_t total = 0;
	if (!dict_or_empty(v))
		return 0;
	json_object_foreach((json_t *)v, k, x)
	{
		(void)k;
		total += len_or_zero(x);
	}
	return total;
}

static void put_str(tt_buf *out, const json_t *v)
{
	tt_pyv_str(out, v);
}

/* str(v)[:n] */
static void put_prefix(tt_buf *out, const json_t *v, size_t ncp)
{
	tt_buf tmp = TT_BUF_INIT;
	size_t i = 0, cps = 0;
	tt_pyv_str(&tmp, v);
	while (i < tmp.len) {
		if (((unsigned char)tmp.ptr[i] & 0xc0) != 0x80) {
			if (cps == ncp)
				break;
			cps++;
		}
		i++;
	}
	tt_buf_put(out, tmp.ptr, i);
	if (tmp.failed)
		out->failed = out->failed ? out->failed : tmp.failed;
	tt_buf_release(&tmp);
}

static int cmp_json_str(const void *a, const void *b)
{
	const json_t *x = *(json_t *const *)a, *y = *(json_t *const *)b;
	size_t lx = json_string_length(x), ly = json_string_length(y);
	int c = memcmp(json_string_value(x), json_string_value(y), lx < ly ? lx : ly);
	return c ? c : (lx > ly) - (lx < ly);
}

/* The str() of every item of each iterable, sorted (and deduplicated when
 * dedup: a set), as a new array of strings.  A value Python cannot iterate
 * adds nothing. */
static json_t *sorted_strs(const json_t *const *vals, size_t nvals, bool dedup)
{
	json_t *out = json_array();
	json_t **ptrs = NULL;
	size_t n;
	for (size_t k = 0; out && k < nvals; k++) {
		json_t *items = tt_pyv_truthy(vals[k]) ? tt_pyv_list(vals[k]) : NULL;
		for (size_t i = 0; i < json_array_size(items); i++)
			if (json_array_append_new(out, str_json(json_array_get(items, i)))) {
				json_decref(out);
				out = NULL;
				break;
			}
		json_decref(items);
	}
	if (!out || (n = json_array_size(out)) < 2)
		return out;
	if (!(ptrs = tt_calloc(n, sizeof *ptrs))) {
		json_decref(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++)
		ptrs[i] = json_incref(json_array_get(out, i));
	qsort(ptrs, n, sizeof *ptrs, cmp_json_str);
	json_array_clear(out);
	for (size_t i = 0; i < n; i++) {
		if (!(dedup && i && cmp_json_str(&ptrs[i - 1], &ptrs[i]) == 0))
			json_array_append(out, ptrs[i]);
	}
	for (size_t i = 0; i < n; i++)
		json_decref(ptrs[i]);
	free(ptrs);
	return out;
}

static void put_joined(tt_buf *out, const json_t *strs, const char *sep)
{
	for (size_t i = 0; i < json_array_size(strs); i++) {
		if (i)
			tt_buf_puts(out, sep);
		put_str(out, json_array_get(strs, i));
	}
}

/* "<label> " + ", ".join(sorted(v)) as one of the "; "-joined bits. */
static void bit_sorted(tt_buf *out, size_t *nbits, const char *label, const json_t *v)
{
	json_t *s = sorted_strs(&v, 1, false);
	if (!s) {
		out->failed = out->failed ? out->failed : TT_ENOMEM;
		return;
	}
	tt_buf_puts(out, (*nbits)++ ? "; " : "");
	tt_buf_puts(out, label);
	tt_buf_putc(out, ' ');
	put_joined(out, s, ", ");
	json_decref(s);
}

/* `item in container` */
static bool py_contains(const json_t *container, const json_t *item)
{
	if (json_is_object(container))
		return json_is_string(item) &&
		       json_object_getn(container, json_string_value(item), json_string_length(item));
	if (json_is_array(container)) {
		for (size_t i = 0; i < json_array_size(container); i++)
			if (tt_pyv_eq(json_array_get(container, i), item))
				return true;
		return false;
	}
	if (json_is_string(container) && json_is_string(item)) {
		size_t hl = json_string_length(container), nl = json_string_length(item);
		const char *h = json_string_value(container), *nd = json_string_value(item);
		for (size_t i = 0; nl <= hl && i <= hl - nl; i++)
			if (!memcmp(h + i, nd, nl))
				return true;
	}
	return false;
}

static void summary_commit(tt_buf *out, const json_t *r)
{
	const json_t *pinned = dict_or_empty(get(r, "pinned"));
	json_t *yes = json_array(), *no = json_array(), *v;
	const char *k;
	size_t klen, nbits = 0;
	if (!yes || !no) {
		out->failed = TT_ENOMEM;
		goto done;
	}
	if (pinned)
		json_object_keylen_foreach((json_t *)pinned, k, klen, v)
		{
			json_array_append_new(tt_pyv_truthy(v) ? yes : no, json_stringn(k, klen));
		}
	if (json_array_size(yes))
		bit_sorted(out, &nbits, "pinned", yes);
	if (json_array_size(no))
		bit_sorted(out, &nbits, "recorded", no);
	if (tt_pyv_truthy(get(r, "vcs_commit"))) {
		tt_buf_puts(out, nbits++ ? "; vcs " : "vcs ");
		put_prefix(out, get(r, "vcs_commit"), 12);
	}
	if (!nbits)
		tt_buf_puts(out, "nothing changed");
done:
	json_decref(yes);
	json_decref(no);
}

static void summary_new(tt_buf *out, const json_t *r, const json_t *plan)
{
	size_t nbits = 0;
	const json_t *adopted = tt_pyv_truthy(get(r, "adopted")) ? get(r, "adopted") : NULL;
	if (tt_pyv_truthy(get(r, "created")))
		bit_sorted(out, &nbits, "forked", get(r, "created"));
	if (tt_pyv_truthy(get(r, "reset")))
		bit_sorted(out, &nbits, "reset", get(r, "reset"));
	if (adopted)
		bit_sorted(out, &nbits, "adopted", adopted);
	json_t *reused = tt_pyv_truthy(get(r, "reused")) ? tt_pyv_list(get(r, "reused")) : NULL;
	json_t *kept = json_array();
	for (size_t i = 0; kept && i < json_array_size(reused); i++) {
		json_t *x = json_array_get(reused, i);
		if (!adopted || !py_contains(adopted, x))
			json_array_append(kept, x);
	}
	if (json_array_size(kept))
		bit_sorted(out, &nbits, "kept", kept);
	json_decref(kept);
	json_decref(reused);
	if (tt_pyv_truthy(get(r, "pending_forks")))
		bit_sorted(out, &nbits, "deferred", get(r, "pending_forks"));
	const json_t *ctx = tt_pyv_truthy(plan) ? get(plan, "context") : NULL;
	const json_t *rev = tt_pyv_truthy(ctx) ? get(ctx, "rev") : NULL;
	if (tt_pyv_truthy(rev)) {
		tt_buf_puts(out, nbits++ ? "; at " : "at ");
		put_str(out, rev);
	}
	if (!nbits)
		tt_buf_puts(out, "working refs unchanged");
}

static void summary_keys(tt_buf *out, const json_t *a, const json_t *b)
{
	const json_t *vals[2] = { a, b };
	json_t *keys = sorted_strs(vals, 2, true);
	if (!keys) {
		out->failed = out->failed ? out->failed : TT_ENOMEM;
		return;
	}
	put_joined(out, keys, ", ");
	json_decref(keys);
}

static void summary_restore(tt_buf *out, const json_t *r)
{
	json_t *at = get(r, "at");
	tt_buf_puts(out, "restored ");
	summary_keys(out, get(r, "created"), get(r, "reset"));
	tt_buf_puts(out, " from ");
	if (!is_none(at))
		put_str(out, at);
	else
		put_prefix(out, get(r, "from_commit"), 12);
}

static void summary_set(tt_buf *out, const json_t *r)
{
	const json_t *changed = dict_or_empty(get(r, "changed"));
	const char *k, *f;
	size_t klen, flen;
	json_t *d, *v;
	bool first = true;
	if (!changed)
		return;
	json_object_keylen_foreach((json_t *)changed, k, klen, d)
	{
		bool ffirst = true;
		if (!first)
			tt_buf_puts(out, ", ");
		first = false;
		tt_buf_put(out, k, klen);
		tt_buf_puts(out, ": ");
		if (!json_is_object(d))
			continue;
		json_object_keylen_foreach(d, f, flen, v)
		{
			json_t *items = tt_pyv_list(v);
			if (!ffirst)
				tt_buf_putc(out, ' ');
			ffirst = false;
			tt_buf_put(out, f, flen);
			tt_buf_putc(out, '=');
			if (json_is_array(v) || json_is_string(v)) {
				put_str(out, json_array_get(items, 0));
				tt_buf_puts(out, "->");
				put_str(out, json_array_get(items, 1));
			}
			json_decref(items);
		}
	}
}

static void summary_into(tt_buf *out, const tt_op_entry *e)
{
	const json_t *r = e->result;
	const char *c = e->command;
	if (strlen(c) != json_string_length(json_object_get(e->record, "command")))
		return;
	if (!strcmp(c, "commit")) {
		summary_commit(out, r);
	} else if (!strcmp(c, "new")) {
		summary_new(out, r, e->plan);
	} else if (!strcmp(c, "restore")) {
		summary_restore(out, r);
	} else if (!strcmp(c, "fork")) {
		tt_buf_puts(out, "forked ");
		put_str(out, get(r, "key"));
		tt_buf_puts(out, " -> ");
		put_str(out, get(r, "ref"));
	} else if (!strcmp(c, "drop")) {
		json_t *gc = get(r, "gc");
		const json_t *g = tt_pyv_truthy(gc) ? gc : NULL;
		tt_buf_puts(out, "dropped ");
		put_str(out, get(r, "bookmark"));
		tt_buf_printf(out, ": %zu commit(s), %zu pin(s), %zu branch(es)",
			      len_or_zero(get(r, "abandoned")), sum_lens(get(g, "unpinned")),
			      sum_lens(get(g, "deleted_working_refs")));
		if (tt_pyv_truthy(get(g, "deleted_stores")))
			tt_buf_printf(out, ", %zu store(s)", len_or_zero(get(g, "deleted_stores")));
	} else if (!strcmp(c, "gc")) {
		size_t stores = len_or_zero(get(r, "deleted_stores"));
		tt_buf_printf(out, "unpinned %zu, deleted %zu branch(es)", sum_lens(get(r, "unpinned")),
			      sum_lens(get(r, "deleted_working_refs")));
		if (stores)
			tt_buf_printf(out, ", deleted %zu store(s)", stores);
	} else if (!strcmp(c, "promote")) {
		const json_t *vals[2] = { get(r, "fast_forwarded"), get(r, "merged") };
		json_t *keys = sorted_strs(vals, 2, true);
		if (!keys) {
			out->failed = TT_ENOMEM;
		} else if (json_array_size(keys)) {
			tt_buf_puts(out, "promoted ");
			put_joined(out, keys, ", ");
		} else {
			tt_buf_puts(out, "nothing promoted");
		}
		json_decref(keys);
	} else if (!strcmp(c, "import")) {
		tt_buf_printf(out, "added %zu, updated %zu, removed %zu", len_or_zero(get(r, "added")),
			      len_or_zero(get(r, "updated")), len_or_zero(get(r, "removed")));
	} else if (!strcmp(c, "add") || !strcmp(c, "remove")) {
		json_t *key = get(r, "key");
		if (key)
			put_str(out, key);
		if (tt_pyv_truthy(get(r, "created")))
			tt_buf_puts(out, " (created store)");
	} else if (!strcmp(c, "set")) {
		summary_set(out, r);
	} else if (!strcmp(c, "pull")) {
		json_t *vc = get(r, "vcs_commit");
		tt_buf_printf(out, "pulled %zu object(s) -> ", len_or_zero(get(r, "pinned")));
		if (vc)
			put_prefix(out, vc, 12);
	} else if (!strcmp(c, "undo")) {
		json_t *s = get(r, "summary");
		tt_buf_puts(out, "undid ");
		put_str(out, e->undoes);
		tt_buf_puts(out, ": ");
		if (s)
			put_str(out, s);
	} else if (!strcmp(c, "repair")) {
		tt_buf_printf(out, "repinned %zu, reforked %zu", len_or_zero(get(r, "repinned")),
			      len_or_zero(get(r, "reforked")));
	} else if (!strcmp(c, "bookmarks")) {
		json_t *x = get(r, "expires");
		tt_buf_puts(out, "bookmark ");
		put_str(out, get(r, "bookmark"));
		if (json_is_string(x)) {
			tt_buf_puts(out, " expires at ");
			put_str(out, x);
		} else {
			tt_buf_puts(out, " no longer expires");
		}
	} else if (!strcmp(c, "forget-workspace")) {
		tt_buf_puts(out, "forgot workspace ");
		put_str(out, get(r, "workspace"));
	} else if (!strcmp(c, "abandon")) {
		json_t *ids = tt_pyv_truthy(get(r, "abandoned")) ? tt_pyv_list(get(r, "abandoned"))
							       : NULL;
		tt_buf_puts(out, "abandoned ");
		for (size_t i = 0; i < json_array_size(ids); i++) {
			if (i)
				tt_buf_puts(out, ", ");
			put_prefix(out, json_array_get(ids, i), 12);
		}
		json_decref(ids);
		tt_buf_printf(out, "; %zu pin(s) freed", len_or_zero(get(r, "unreferenced")));
	} else if (!strcmp(c, "upgrade")) {
		tt_buf_putc(out, 'v');
		put_str(out, get(r, "from_version"));
		tt_buf_puts(out, " -> v");
		put_str(out, get(r, "to_version"));
		tt_buf_printf(out, ": %zu pin(s), %zu branch(es), %zu commit(s) rewritten",
			      len_or_zero(get(r, "renamed_pins")),
			      len_or_zero(get(r, "renamed_branches")),
			      len_or_zero(get(r, "rewritten_commits")));
	}
}

char *tt_op_summary(const tt_op_entry *e)
{
	tt_buf out = TT_BUF_INIT;
	summary_into(&out, e);
	if (out.failed) {
		tt_buf_release(&out);
		return NULL;
	}
	return tt_buf_detach(&out);
}

char *tt_op_format_line(const tt_op_entry *e, bool vcs_commit_gone)
{
	tt_buf out = TT_BUF_INIT;
	json_t *cmd = json_object_get(e->record, "command");
	size_t cps = 0;
	put_str(&out, json_object_get(e->record, "id"));
	tt_buf_puts(&out, "  ");
	put_str(&out, json_object_get(e->record, "at"));
	tt_buf_puts(&out, "  ");
	put_str(&out, cmd);
	tt_pyv_len(cmd, &cps);
	for (; cps < 8; cps++)
		tt_buf_putc(&out, ' ');
	tt_buf_putc(&out, ' ');
	summary_into(&out, e);
	if (tt_op_incomplete(e)) {
		tt_buf_puts(&out, "  (INCOMPLETE: never finished; see `tether repair --dry-run`)");
	} else if (tt_pyv_truthy(e->undone_by)) {
		tt_buf_puts(&out, "  (undone by ");
		put_str(&out, e->undone_by);
		tt_buf_putc(&out, ')');
	} else if (vcs_commit_gone) {
		tt_buf_puts(&out, "  (vcs commit gone)");
	}
	if (tt_pyv_truthy(e->parent)) {
		tt_buf_puts(&out, "  (step of ");
		put_str(&out, e->parent);
		tt_buf_putc(&out, ')');
	}
	if (out.failed) {
		tt_buf_release(&out);
		return NULL;
	}
	return tt_buf_detach(&out);
}
