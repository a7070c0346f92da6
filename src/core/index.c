/* core/index.c - the clone's pinned/touched indexes (see index.h). */
#include "core/index.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/oplog.h"
#include "util/buf.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"

static pthread_mutex_t index_lock = PTHREAD_MUTEX_INITIALIZER;

/* json.dumps(obj) defaults: ", " and ": ", ASCII-escaped, insertion order. */
static const tt_json_style py_default = { -1, false, true, false };

json_t *tt_index_read(const char *shared_dir, const char *name)
{
	char *path = tt_path_join(shared_dir, name);
	tt_buf text = TT_BUF_INIT;
	json_t *out = json_array();
	tt_error ignored = TT_ERROR_INIT;
	if (!path || !out)
		goto done;
	if (!tt_is_file(path) || tt_read_file(path, &text, 256u << 20, &ignored) < 0)
		goto done;
	for (char *line = text.ptr; *line;) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		json_t *v = json_loadb(line, len, JSON_DECODE_ANY, NULL);
		if (json_is_object(v))
			json_array_append(out, v);
		json_decref(v);
		line = nl ? nl + 1 : line + len;
	}
done:
	tt_error_clear(&ignored);
	tt_buf_release(&text);
	free(path);
	return out;
}

static int append_record(const char *shared_dir, const char *name, json_t *rec, tt_error *err)
{
	char *path = tt_path_join(shared_dir, name);
	tt_buf b = TT_BUF_INIT;
	int rc;
	if (!path)
		return tt_error_oom(err);
	tt_json_dump(&b, rec, py_default);
	tt_buf_putc(&b, '\n');
	rc = tt_buf_check(&b, err, name);
	if (rc == 0)
		rc = tt_append_fsync(path, b.ptr, b.len, 0644, err);
	tt_buf_release(&b);
	free(path);
	return rc;
}

int tt_index_note_pinned(const char *shared_dir, const char *dataset_id, const char *pin_id,
			 const char *kind, const char *key, tt_error *err)
{
	int rc = 0;
	pthread_mutex_lock(&index_lock);
	json_t *all = tt_index_read(shared_dir, TT_PINNED_FILENAME);
	size_t i;
	json_t *d;
	json_array_foreach(all, i, d) {
		const char *ds = json_string_value(json_object_get(d, "dataset_id"));
		const char *id = json_string_value(json_object_get(d, "pin_id"));
		if (ds && id && strcmp(ds, dataset_id) == 0 && strcmp(id, pin_id) == 0)
			goto done;
	}
	char at[32];
	tt_now_iso_seconds(at);
	json_t *rec = json_pack("{s:s,s:s,s:s,s:s,s:s}", "dataset_id", dataset_id, "pin_id", pin_id,
				"kind", kind, "key", key, "at", at);
	rc = rec ? append_record(shared_dir, TT_PINNED_FILENAME, rec, err) : tt_error_oom(err);
	json_decref(rec);
done:
	json_decref(all);
	pthread_mutex_unlock(&index_lock);
	return rc;
}

int tt_index_note_committed(const char *shared_dir, const char *dataset_id, const json_t *pin_ids,
			    tt_error *err)
{
	int rc = 0;
	if (!json_array_size(pin_ids))
		return 0;
	pthread_mutex_lock(&index_lock);
	json_t *all = tt_index_read(shared_dir, TT_PINNED_FILENAME), *created = json_object(),
	       *marked = json_object();
	size_t i;
	json_t *d;
	if (!all || !created || !marked) {
		rc = tt_error_oom(err);
		goto done;
	}
	json_array_foreach(all, i, d) {
		const char *ds = json_string_value(json_object_get(d, "dataset_id"));
		const char *id = json_string_value(json_object_get(d, "pin_id"));
		if (!ds || !id || strcmp(ds, dataset_id) != 0)
			continue;
		json_object_set_new(json_is_true(json_object_get(d, "committed")) ? marked : created, id,
				    json_true());
	}
	char at[32];
	tt_now_iso_seconds(at);
	json_array_foreach((json_t *)pin_ids, i, d) {
		const char *id = json_string_value(d);
		if (!id || !json_object_get(created, id) || json_object_get(marked, id))
			continue;
		json_t *rec = json_pack("{s:s,s:s,s:b,s:s}", "dataset_id", dataset_id, "pin_id", id,
					"committed", 1, "at", at);
		rc = rec ? append_record(shared_dir, TT_PINNED_FILENAME, rec, err) : tt_error_oom(err);
		json_decref(rec);
		if (rc < 0)
			goto done;
		json_object_set_new(marked, id, json_true());
	}
done:
	json_decref(all);
	json_decref(created);
	json_decref(marked);
	pthread_mutex_unlock(&index_lock);
	return rc;
}

/* Rewrite index `name` without the records drop() picks, under the index
 * lock (an absent file stays absent). */
typedef bool (*drop_fn)(const json_t *rec, const void *ctx);

static int rewrite_without(const char *shared_dir, const char *name, drop_fn drop,
			   const void *ctx, tt_error *err)
{
	int rc = 0;
	char *path = tt_path_join(shared_dir, name);
	tt_buf b = TT_BUF_INIT;
	if (!path)
		return tt_error_oom(err);
	pthread_mutex_lock(&index_lock);
	if (!tt_is_file(path))
		goto done;
	json_t *all = tt_index_read(shared_dir, name);
	size_t i;
	json_t *d;
	json_array_foreach(all, i, d) {
		if (drop(d, ctx))
			continue;
		tt_json_dump(&b, d, py_default);
		tt_buf_putc(&b, '\n');
	}
	json_decref(all);
	if ((rc = tt_buf_check(&b, err, name)) == 0)
		rc = tt_write_file_atomic(path, b.ptr, b.len, 0644, err);
done:
	pthread_mutex_unlock(&index_lock);
	tt_buf_release(&b);
	free(path);
	return rc;
}

typedef struct pins_of {
	const char *dataset_id;
	const json_t *pin_ids;
} pins_of;

static bool is_forgotten_pin(const json_t *d, const void *ctx)
{
	const pins_of *p = ctx;
	const char *ds = json_string_value(json_object_get(d, "dataset_id"));
	const char *pid = json_string_value(json_object_get(d, "pin_id"));
	size_t j;
	json_t *id;
	if (!ds || !pid || strcmp(ds, p->dataset_id) != 0)
		return false;
	json_array_foreach((json_t *)p->pin_ids, j, id)
		if (json_is_string(id) && strcmp(pid, json_string_value(id)) == 0)
			return true;
	return false;
}

int tt_index_forget_pinned(const char *shared_dir, const char *dataset_id, const json_t *pin_ids,
			   tt_error *err)
{
	pins_of p = { dataset_id, pin_ids };
	if (!json_array_size(pin_ids))
		return 0;
	return rewrite_without(shared_dir, TT_PINNED_FILENAME, is_forgotten_pin, &p, err);
}

int tt_index_note_touched(const char *shared_dir, const char *dataset_id, const char *kind,
			  const json_t *identity, const json_t *locator, const char *key,
			  tt_error *err)
{
	int rc = 0;
	pthread_mutex_lock(&index_lock);
	json_t *all = tt_index_read(shared_dir, TT_TOUCHED_FILENAME);
	size_t i;
	json_t *d;
	json_array_foreach(all, i, d) {
		const char *ds = json_string_value(json_object_get(d, "dataset_id"));
		if (ds && strcmp(ds, dataset_id) == 0 &&
		    json_equal(json_object_get(d, "identity"), (json_t *)identity))
			goto done;
	}
	char at[40];
	tt_now_iso_seconds(at);
	json_t *rec = json_pack("{s:s,s:s,s:O,s:O,s:s,s:s}", "dataset_id", dataset_id, "kind", kind,
				"identity", identity, "locator", locator, "key", key, "at", at);
	rc = rec ? append_record(shared_dir, TT_TOUCHED_FILENAME, rec, err) : tt_error_oom(err);
	json_decref(rec);
done:
	json_decref(all);
	pthread_mutex_unlock(&index_lock);
	return rc;
}

int tt_index_note_created(const char *shared_dir, const char *dataset_id, const char *kind,
			  const json_t *identity, const json_t *locator, const char *key,
			  const char *bookmark, tt_error *err)
{
	char at[40];
	int rc;
	tt_now_iso_micro(at);
	json_t *rec = json_pack("{s:s,s:s,s:O,s:O,s:s,s:s,s:s?}", "dataset_id", dataset_id, "kind", kind,
				"identity", identity, "locator", locator, "key", key, "at", at, "bookmark",
				bookmark);
	if (!rec)
		return tt_error_oom(err);
	if (!bookmark)
		json_object_set_new(rec, "bookmark", json_null());
	pthread_mutex_lock(&index_lock);
	rc = append_record(shared_dir, TT_CREATED_FILENAME, rec, err);
	pthread_mutex_unlock(&index_lock);
	json_decref(rec);
	return rc;
}

typedef struct store_of {
	const char *dataset_id;
	const json_t *identity;
} store_of;

static bool is_forgotten_store(const json_t *d, const void *ctx)
{
	const store_of *st = ctx;
	const char *ds = json_string_value(json_object_get(d, "dataset_id"));
	json_t *id = json_object_get(d, "identity");
	return ds && strcmp(ds, st->dataset_id) == 0 &&
	       (id && !json_is_null(id) ? json_equal(id, (json_t *)st->identity)
				    : json_object_size(st->identity) == 0);
}

int tt_index_forget_store(const char *shared_dir, const char *name, const char *dataset_id,
			  const json_t *identity, tt_error *err)
{
	store_of st = { dataset_id, identity };
	return rewrite_without(shared_dir, name, is_forgotten_store, &st, err);
}

/* Why a store record cannot be acted on (NULL: it can). */
static const char *store_shape(const json_t *d)
{
	const json_t *bm = json_object_get(d, "bookmark");
	if (!json_is_string(json_object_get(d, "kind")) || !json_string_length(json_object_get(d, "kind")))
		return "'kind' is not a non-empty string";
	if (!json_is_object(json_object_get(d, "identity")))
		return "'identity' is not a JSON object";
	if (!json_is_object(json_object_get(d, "locator")) || !json_object_size(json_object_get(d, "locator")))
		return "'locator' is not a non-empty JSON object";
	if (json_object_get(d, "key") && !json_is_string(json_object_get(d, "key")))
		return "'key' is not a string";
	if (json_object_get(d, "at") && !json_is_string(json_object_get(d, "at")))
		return "'at' is not a string";
	if (bm && !json_is_null(bm) && !json_is_string(bm))
		return "'bookmark' is neither a string nor null";
	return NULL;
}

int tt_index_read_stores(const char *shared_dir, const char *name, const char *dataset_id,
			 json_t **out, tt_error *err)
{
	char *path = tt_path_join(shared_dir, name);
	tt_buf text = TT_BUF_INIT;
	int rc = 0;
	*out = json_array();
	if (!path || !*out) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!tt_is_file(path))
		goto done;
	if ((rc = tt_read_file(path, &text, 256u << 20, err)) < 0)
		goto done;
	size_t lineno = 0;
	for (char *line = text.ptr; *line;) {
		char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		json_t *d = json_loadb(line, len, JSON_DECODE_ANY, NULL);
		lineno++;
		line = nl ? nl + 1 : line + len;
		if (!json_is_object(d)) {   /* torn or not a record: a memory, skipped */
			json_decref(d);
			continue;
		}
		json_t *ds = json_object_get(d, "dataset_id");
		const char *why = !json_is_string(ds) ? "'dataset_id' is not a string"
			: strcmp(json_string_value(ds), dataset_id) != 0 ? NULL : store_shape(d);
		if (why) {
			rc = tt_error_set(err, TT_ECONFIG, "%s:%zu: %s, so the store it records cannot be "
					  "judged", path, lineno, why);
			tt_error_hint(err, "this index is this clone's own memory of stores (never committed); "
				      "fix or delete that line -- a deleted line only means gc no longer "
				      "considers that store%s", strcmp(name, TT_CREATED_FILENAME) == 0
				      ? " (`gc --store KIND=LOCATOR` names a created one again)" : "");
			json_decref(d);
			json_decref(*out);
			*out = NULL;
			goto done;
		}
		if (json_is_string(ds) && strcmp(json_string_value(ds), dataset_id) == 0 &&
		    (json_object_set_new(d, "line", json_integer((json_int_t)lineno)) < 0 ||
		     json_array_append(*out, d) < 0))
			rc = tt_error_oom(err);
		json_decref(d);
		if (rc < 0)
			goto done;
	}
done:
	tt_buf_release(&text);
	free(path);
	return rc;
}
