/*
 * engine/ops.c - this checkout's journal as the user sees it (`ops`), and
 * the dataset commits it records that the VCS no longer has (vcs drift:
 * undone or abandoned behind tether's back), which `status` warns about.
 */
#include <stdlib.h>
#include <string.h>

#include "core/oplog.h"
#include "engine/engine.h"
#include "util/mem.h"

int tt_engine_vcs_drift(tt_repo *repo, const tt_oplog *log, json_t **out, tt_error *err)
{
	json_t *gone = json_object(), *alias = json_object(), *wanted = json_array();
	const char **commits = NULL;
	bool *alive = NULL;
	int rc = 0;
	*out = json_array();
	if (!gone || !alias || !wanted || !*out) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < log->count; i++) {
		const tt_op_entry *e = &log->entries[i];
		size_t k;
		json_t *c;
		if (strcmp(e->command, "abandon") == 0)
			json_array_foreach(json_object_get(e->result, "abandoned"), k, c)
				if (json_is_string(c))
					json_object_set(gone, json_string_value(c), json_true());
		const char *old;
		json_object_foreach(json_object_get(e->result, "rewritten_commits"), old, c)
			if (json_is_string(c))
				json_object_set(alias, old, c);
	}
	for (size_t i = 0; i < log->count; i++) {
		const tt_op_entry *e = tt_oplog_newest(log, i);
		const char *commit = json_string_value(json_object_get(e->result, "vcs_commit"));
		if (strcmp(e->command, "commit") != 0 || json_is_string(e->undone_by) || !commit)
			continue;
		for (int hops = 0; hops < 64 && json_is_string(json_object_get(alias, commit)); hops++)
			commit = json_string_value(json_object_get(alias, commit));
		if (json_object_get(gone, commit))
			continue;
		json_array_append_new(wanted, json_pack("{s:s,s:s,s:i}", "commit", commit, "id", e->id,
							 "index", (json_int_t)i));
	}
	size_t n = json_array_size(wanted);
	if (!n)
		goto done;
	commits = tt_calloc(n, sizeof *commits);
	alive = tt_calloc(n, sizeof *alive);
	if (!commits || !alive) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < n; i++)
		commits[i] = json_string_value(json_object_get(json_array_get(wanted, i), "commit"));
	if ((rc = repo->vcs->ops->alive_commits(repo->vcs, commits, n, alive, err)) < 0)
		goto done;
	for (size_t i = 0; i < n; i++) {
		if (alive[i])
			continue;
		json_t *w = json_array_get(wanted, i);
		const tt_op_entry *e = tt_oplog_newest(log, (size_t)json_integer_value(json_object_get(w, "index")));
		json_t *referenced = json_object();
		const char *key;
		json_t *pid;
		json_object_foreach(json_object_get(e->result, "pinned"), key, pid) {
			if (!json_is_string(pid))
				continue;
			const tt_manifest *m = tt_manifests_find(&repo->objects, key);
			json_object_set_new(referenced, key,
					    json_boolean(m && m->pin_id && strcmp(m->pin_id, json_string_value(pid)) == 0));
		}
		/* The message status prints, as tether-vcs words it. */
		tt_buf msg = TT_BUF_INIT, kept = TT_BUF_INIT, dropped = TT_BUF_INIT;
		json_t *v;
		json_object_foreach(referenced, key, v)
			tt_buf_printf(json_is_true(v) ? &kept : &dropped, "%s%s",
				      (json_is_true(v) ? kept.len : dropped.len) ? ", " : "", key);
		const char *vc = json_string_value(json_object_get(e->result, "vcs_commit"));
		tt_buf_printf(&msg, "dataset commit %.12s (op %s) is no longer in VCS history: undone or "
			      "abandoned outside tether", vc, e->id);
		if (kept.len)
			tt_buf_printf(&msg, "; its pins for %s are still named by the working tree (commit again, "
				      "or restore the manifests to drop them)", kept.ptr);
		if (dropped.len)
			tt_buf_printf(&msg, "; its pins for %s are unreferenced; `gc` will release them, `repair` "
				      "recreates them if the commit comes back", dropped.ptr);
		json_array_append_new(*out, json_pack("{s:s,s:s,s:o,s:s}", "op", e->id, "commit", vc,
						      "referenced", referenced, "message", msg.ptr));
		tt_buf_release(&msg);
		tt_buf_release(&kept);
		tt_buf_release(&dropped);
	}
done:
	free(commits);
	free(alive);
	json_decref(gone);
	json_decref(alias);
	json_decref(wanted);
	return rc;
}

int tt_repo_ops(tt_repo *repo, size_t limit, json_t **out, char **text, tt_error *err)
{
	tt_oplog log = TT_OPLOG_INIT;
	json_t *drift = NULL, *drifted = json_object();
	tt_buf t = TT_BUF_INIT;
	int rc;
	*out = NULL;
	if (text)
		*text = NULL;
	if ((rc = tt_oplog_read(repo->root, &log, err)) < 0) {
		json_decref(drifted);
		return rc;
	}
	if ((rc = tt_engine_vcs_drift(repo, &log, &drift, err)) < 0)
		goto done;
	size_t i;
	json_t *d;
	json_array_foreach(drift, i, d)
		json_object_set(drifted, json_string_value(json_object_get(d, "op")), json_true());
	*out = json_array();
	for (i = 0; i < log.count && i < limit; i++) {
		const tt_op_entry *e = tt_oplog_newest(&log, i);
		bool gone = json_object_get(drifted, e->id) != NULL;
		json_array_append_new(*out, tt_op_to_json(e, gone));
		char *line = tt_op_format_line(e, gone);
		if (line)
			tt_buf_printf(&t, "%s\n", line);
		free(line);
	}
	if (!log.count)
		tt_buf_puts(&t, "no operations recorded\n");
	if (text)
		*text = tt_buf_detach(&t);
done:
	tt_oplog_free(&log);
	json_decref(drift);
	json_decref(drifted);
	tt_buf_release(&t);
	return rc;
}
