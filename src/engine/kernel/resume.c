/*
 * engine/kernel/resume.c - closing the journal entries of interrupted commits and
 * pulls once nothing of theirs is left to finish.
 *
 * A commit or pull killed part-way leaves an entry with status "started",
 * and gc keeps every pin such an entry set out to create.  Once the
 * checkout's manifests carry no uncommitted edits, whatever the operation
 * did is either in history (its VCS commit landed: the manifests there name
 * its pins) or moot (it never committed: a pin it made that no manifest
 * names is an orphan, and a rerun cuts the same pin again from the state
 * it then reads).  Either way the entry can be closed:
 *
 *   landed: {"done": id, "result": {vcs_commit, pinned, unrecoverable,
 *            finished_by}, "pre": {}}, as the operation would have written;
 *   moot:   {"done": id, "result": {..., "superseded": why}, "pre": {},
 *            "undone": id, "by": <closer>}, so that `undo` (ours and
 *            tether-vcs's) passes over it rather than reverse what it never
 *            did.
 *
 * Both are records tether-vcs's reader folds as it folds its own.
 */
#include "engine/kernel/resume.h"

#include <stdlib.h>
#include <string.h>

#include "core/oplog.h"
#include "engine/kernel/context.h"
#include "engine/kernel/revisions.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

static bool commit_like(const tt_op_entry *e)
{
	return strcmp(e->command, "commit") == 0 || strcmp(e->command, "pull") == 0;
}

int tt_engine_objects_dirty(tt_repo *repo, bool *dirty, tt_error *err)
{
	char *reldir = tt_engine_objects_reldir(repo);
	int rc;
	*dirty = false;
	if (!reldir)
		return tt_error_oom(err);
	const char *paths[] = { reldir };
	rc = tt_vcs_dirty(repo->vcs, paths, 1, dirty, err);
	free(reldir);
	return rc;
}

/* The commit the VCS position in an entry's pre names (NULL: none). */
static const char *started_at(const tt_op_entry *e)
{
	return json_string_value(json_object_get(json_object_get(e->pre, "vcs"), "commit"));
}

/* Every object the entry set out to pin or record has, in the (clean)
 * working tree, the state and pin the entry planned; with none (a commit of
 * manifest edits alone), the commit carries the entry's message. */
static bool manifests_match(tt_repo *repo, const tt_op_entry *e, const json_t *info)
{
	json_t *actions = json_is_object(e->plan) ? json_object_get(e->plan, "actions") : NULL;
	size_t i, n = 0;
	json_t *a;
	json_array_foreach(actions, i, a) {
		const char *op = json_string_value(json_object_get(a, "op"));
		const char *key = json_string_value(json_object_get(a, "key"));
		json_t *params = json_object_get(a, "params");
		if (!op || !key || (strcmp(op, "pin") != 0 && strcmp(op, "record") != 0))
			continue;
		const tt_manifest *m = tt_manifests_find(&repo->objects, key);
		if (!m || !m->state || !tt_engine_same(m, m->state, json_object_get(params, "state")))
			return false;
		const char *pid = json_string_value(json_object_get(params, "pin_id"));
		if (strcmp(op, "pin") == 0 && (!m->pin_id || !pid || strcmp(m->pin_id, pid) != 0))
			return false;
		n++;
	}
	if (n)
		return true;
	const char *msg = json_string_value(json_object_get(json_object_get(e->plan, "context"), "message"));
	const char *said = json_string_value(json_object_get(info, "message"));
	return msg && said && strcmp(msg, said) == 0;
}

/* The commit an interrupted entry landed: its progress record says, or
 * (judge_head) HEAD is it when HEAD's first parent is where the entry
 * started and the manifests there are the entry's.  NULL: it did not land. */
static int landed_commit(tt_repo *repo, const tt_op_entry *e, bool judge_head, char **out,
			 tt_error *err)
{
	const char *before = started_at(e);
	char *head = NULL;
	json_t *info = NULL;
	int rc = 0;
	*out = NULL;
	size_t i;
	json_t *p;
	json_array_foreach(e->progress, i, p) {
		const char *act = json_string_value(json_object_get(p, "action"));
		const char *c = json_string_value(json_object_get(p, "commit"));
		if (act && c && strcmp(act, "vcs-commit") == 0) {
			free(*out);
			*out = tt_strdup(c);
		}
	}
	if (*out || !judge_head)
		return 0;
	tt_error none = TT_ERROR_INIT;
	if (tt_vcs_current_rev(repo->vcs, &head, &none) < 0 || !head ||
	    (before && strcmp(head, before) == 0)) {
		tt_error_clear(&none);
		goto done;
	}
	const char *revs[] = { head };
	if ((rc = tt_vcs_commit_info(repo->vcs, revs, 1, &info, err)) < 0)
		goto done;
	json_t *parents = json_object_get(json_array_get(info, 0), "parents");
	const char *first = json_string_value(json_array_get(parents, 0));
	bool child = before ? first && strcmp(first, before) == 0 : json_array_size(parents) == 0;
	if (child && manifests_match(repo, e, json_array_get(info, 0))) {
		*out = head;
		head = NULL;
	}
done:
	free(head);
	json_decref(info);
	return rc;
}

/* What the entry would have recorded had it finished at `commit`. */
static json_t *landed_result(const tt_op_entry *e, const char *commit)
{
	json_t *pinned = json_object(), *unrec = json_array();
	json_t *actions = json_is_object(e->plan) ? json_object_get(e->plan, "actions") : NULL;
	size_t i;
	json_t *a;
	json_array_foreach(actions, i, a) {
		const char *op = json_string_value(json_object_get(a, "op"));
		const char *key = json_string_value(json_object_get(a, "key"));
		json_t *params = json_object_get(a, "params");
		if (!op || !key)
			continue;
		if (strcmp(op, "pin") == 0)
			json_object_set(pinned, key, json_object_get(params, "pin_id"));
		else if (strcmp(op, "record") == 0 && json_is_false(json_object_get(params, "recoverable")))
			json_array_append_new(unrec, json_string(key));
		else if (strcmp(op, "record") == 0)
			json_object_set_new(pinned, key, json_null());
	}
	return json_pack("{s:s,s:o,s:o}", "vcs_commit", commit, "pinned", pinned, "unrecoverable", unrec);
}

int tt_engine_scan_interrupted(tt_repo *repo, tt_close_mode mode, json_t **out, tt_error *err)
{
	tt_oplog log = TT_OPLOG_INIT;
	bool checked = false, dirty = false;
	int rc = 0;
	*out = json_array();
	if (!*out)
		return tt_error_oom(err);
	if (tt_oplog_read(repo->root, &log, err) < 0) {
		/* Unreadable: nothing is closed, so no pin is released for it. */
		tt_error_clear(err);
		goto done;
	}
	bool newest = true;
	for (size_t i = 0; i < log.count; i++) {
		const tt_op_entry *e = tt_oplog_newest(&log, i);
		if (!commit_like(e))
			continue;
		bool is_newest = newest;
		newest = false;
		if (!tt_op_incomplete(e) || json_is_string(e->parent))
			continue;
		if (!checked) {
			if ((rc = tt_engine_objects_dirty(repo, &dirty, err)) < 0)
				goto done;
			checked = true;
		}
		if (dirty && mode != TT_CLOSE_RERUN)
			break; /* uncommitted manifests: a rerun still has work to do */
		char *landed = NULL;
		/* Its progress says so; or, for the newest, the VCS does (which
		 * needs manifests that are the committed ones). */
		if ((rc = landed_commit(repo, e, is_newest && !dirty, &landed, err)) < 0)
			goto done;
		if (mode == TT_CLOSE_MOVED && !landed) {
			/* gc: only what the checkout has moved past since. */
			const char *before = started_at(e);
			char *head = NULL;
			tt_error none = TT_ERROR_INIT;
			bool moved = tt_vcs_current_rev(repo->vcs, &head, &none) == 0 && head &&
				     (!before || strcmp(head, before) != 0);
			tt_error_clear(&none);
			free(head);
			if (!moved)
				continue;
		}
		json_t *item = json_pack("{s:s,s:s?,s:o}", "id", e->id, "landed", landed, "result",
					 landed ? landed_result(e, landed) : json_object());
		free(landed);
		if (!item || json_array_append_new(*out, item)) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
done:
	tt_oplog_free(&log);
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	return rc;
}

int tt_engine_close_interrupted(tt_repo *repo, json_t *found, const char *by, const char *why,
				tt_error *err)
{
	size_t i;
	json_t *item;
	bool ws_changed = false;
	int rc = 0;
	json_array_foreach(found, i, item) {
		const char *id = json_string_value(json_object_get(item, "id"));
		json_t *line;
		if (json_is_string(json_object_get(item, "landed"))) {
			json_t *result = json_copy(json_object_get(item, "result"));
			json_object_set_new(result, "finished_by", json_string(why));
			line = json_pack("{s:s,s:o,s:{}}", "done", id, "result", result, "pre");
			/* What finishing it would have recorded as the branches' base. */
			const char *key;
			json_t *pid;
			json_object_foreach(json_object_get(result, "pinned"), key, pid) {
				const tt_manifest *m = tt_manifests_find(&repo->objects, key);
				if (m && m->state && (json_object_get(repo->ws.working_refs, key) ||
						      json_object_get(repo->ws.pending_forks, key))) {
					json_object_set(repo->ws.base_states, key, m->state);
					ws_changed = true;
				}
			}
		} else {
			line = json_pack("{s:s,s:{s:n,s:{},s:[],s:s},s:{},s:s,s:s}", "done", id, "result",
					 "vcs_commit", "pinned", "unrecoverable", "superseded", why, "pre",
					 "undone", id, "by", by ? by : id);
		}
		if (!line)
			return tt_error_oom(err);
		rc = tt_oplog_append(repo->root, line, err);
		json_decref(line);
		if (rc < 0)
			return rc;
	}
	if (ws_changed)
		rc = tt_workspace_save(&repo->ws, repo->root, err);
	return rc;
}

int tt_engine_close_reruns(tt_repo *repo, const char *command, const json_t *context,
			   const char *const *fields, const char *self, const char *why, tt_error *err)
{
	tt_oplog log = TT_OPLOG_INIT;
	int rc = 0;
	if (tt_oplog_read(repo->root, &log, err) < 0) {
		tt_error_clear(err);
		return 0;
	}
	for (size_t i = 0; i < log.count && rc == 0; i++) {
		const tt_op_entry *e = &log.entries[i];
		if (strcmp(e->command, command) != 0 || !tt_op_incomplete(e) || json_is_string(e->parent) ||
		    (self && strcmp(e->id, self) == 0))
			continue;
		json_t *then = json_object_get(e->plan, "context");
		bool same = json_is_object(then);
		for (size_t f = 0; same && fields[f]; f++) {
			json_t *a = json_object_get(context, fields[f]), *b = json_object_get(then, fields[f]);
			same = (!a && !b) || (a && b && json_equal(a, b));
		}
		if (!same)
			continue;
		json_t *line = json_pack("{s:s,s:{s:s},s:{}}", "done", e->id, "result", "finished_by", why, "pre");
		rc = line ? tt_oplog_append(repo->root, line, err) : tt_error_oom(err);
		json_decref(line);
	}
	tt_oplog_free(&log);
	return rc;
}
