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

int tt_index_forget_pinned(const char *shared_dir, const char *dataset_id, const json_t *pin_ids,
			   tt_error *err)
{
	int rc = 0;
	char *path = tt_path_join(shared_dir, TT_PINNED_FILENAME);
	tt_buf b = TT_BUF_INIT;
	if (!path)
		return tt_error_oom(err);
	pthread_mutex_lock(&index_lock);
	if (!tt_is_file(path) || !json_array_size(pin_ids))
		goto done;
	json_t *all = tt_index_read(shared_dir, TT_PINNED_FILENAME);
	size_t i, j;
	json_t *d, *id;
	json_array_foreach(all, i, d) {
		const char *ds = json_string_value(json_object_get(d, "dataset_id"));
		const char *pid = json_string_value(json_object_get(d, "pin_id"));
		bool drop = false;
		json_array_foreach((json_t *)pin_ids, j, id)
			drop = drop || (ds && pid && strcmp(ds, dataset_id) == 0 &&
					strcmp(pid, json_string_value(id)) == 0);
		if (drop)
			continue;
		tt_json_dump(&b, d, py_default);
		tt_buf_putc(&b, '\n');
	}
	json_decref(all);
	if ((rc = tt_buf_check(&b, err, TT_PINNED_FILENAME)) == 0)
		rc = tt_write_file_atomic(path, b.ptr, b.len, 0644, err);
done:
	pthread_mutex_unlock(&index_lock);
	tt_buf_release(&b);
	free(path);
	return rc;
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
