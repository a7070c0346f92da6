/*
 * engine/gc/gc_workspaces.c - gc: the journals of this repository's live
 * checkouts (in-flight pins, the pinned index seeded from them).
 */
#include "engine/gc/gc_workspaces.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/index.h"
#include "core/layout.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/kernel/checkouts.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/fault.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/gc/state.h"

/* --- the journals of live checkouts (engine/kernel/checkouts.c finds them) ------------- */

void tt_gc_journals_release(journals *j)
{
	for (size_t i = 0; i < j->n; i++)
		tt_oplog_free(&j->logs[i]);
	free(j->logs);
	memset(j, 0, sizeof *j);
}

int tt_gc_read_journals(tt_repo *repo, const tt_checkouts *co, journals *out, tt_error *err)
{
	memset(out, 0, sizeof *out);
	if (!(out->logs = tt_calloc(co->n ? co->n : 1, sizeof *out->logs)))
		return tt_error_oom(err);
	for (size_t i = 0; i < co->n; i++) {
		if (!tt_engine_checkout_owns(repo, &co->items[i], TT_OPS_FILENAME))
			continue;
		int rc = tt_oplog_read(co->items[i].dataset, &out->logs[out->n], err);
		if (rc < 0) {
			tt_gc_journals_release(out);
			return rc;
		}
		out->n++;
	}
	return 0;
}

/* str(record.get("ref") or record.get("target") or "") as a pin id, or false. */
static bool progress_pin(const json_t *record, char out[TT_PIN_ID_MAX])
{
	json_t *v = json_object_get(record, "ref");
	if (!tt_pyv_truthy(v))
		v = json_object_get(record, "target");
	if (!tt_pyv_truthy(v))
		return false;
	tt_buf s = TT_BUF_INIT;
	tt_pyv_str(&s, v);
	bool ok = !s.failed && tt_pin_id_of_ref(s.ptr, out);
	tt_buf_release(&s);
	return ok;
}

static bool op_is(const json_t *a, const char *x, const char *y)
{
	const char *op = json_string_value(json_object_get(a, "op"));
	return op && (strcmp(op, x) == 0 || (y && strcmp(op, y) == 0));
}

/* Pins operations still running - or interrupted - set out to create. */
int tt_gc_inflight_pins(const journals *j, json_t *ids, tt_error *err)
{
	for (size_t l = 0; l < j->n; l++) {
		for (size_t e = 0; e < j->logs[l].count; e++) {
			const tt_op_entry *op = &j->logs[l].entries[e];
			size_t i;
			json_t *a;
			if (!tt_op_incomplete(op))
				continue;
			json_t *actions = json_is_object(op->plan) ? json_object_get(op->plan, "actions") : NULL;
			json_array_foreach(actions, i, a) {
				json_t *params = json_object_get(a, "params");
				json_t *pid = json_is_object(params) ? json_object_get(params, "pin_id") : NULL;
				if (op_is(a, "pin", "repin") && tt_pyv_truthy(pid)) {
					tt_buf s = TT_BUF_INIT;
					tt_pyv_str(&s, pid);
					int rc = s.failed ? -1 : tt_gc_set_add(ids, s.ptr);
					tt_buf_release(&s);
					if (rc < 0)
						return tt_error_oom(err);
				}
			}
			json_array_foreach(op->progress, i, a) {
				char pid[TT_PIN_ID_MAX];
				const char *act = json_string_value(json_object_get(a, "action"));
				if (act && (strcmp(act, "pin") == 0 || strcmp(act, "repin") == 0) &&
				    progress_pin(a, pid) && tt_gc_set_add(ids, pid) < 0)
					return tt_error_oom(err);
			}
		}
	}
	return 0;
}

typedef struct op_ref {
	const tt_op_entry *op;
	size_t seq;
} op_ref;

static int cmp_op_at(const void *x, const void *y)
{
	const op_ref *a = x, *b = y;
	int c = strcmp(a->op->at ? a->op->at : "", b->op->at ? b->op->at : "");
	return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

/*
 * The first time the pinned index is needed, seed it from every live
 * checkout's journal, oldest entry first: a pin a progress record says was
 * created is added, one a gc released taken off.  The file is made even
 * when there is nothing to record: its presence says it was seeded.
 */
int tt_gc_seed_pinned(tt_repo *repo, const journals *j, tt_error *err)
{
	char *path = tt_path_join(repo->vcs->shared_dir, TT_PINNED_FILENAME);
	op_ref *ops = NULL;
	json_t *ours = NULL;
	size_t n = 0, total = 0;
	int rc = 0;
	if (!path)
		return tt_error_oom(err);
	if (tt_is_file(path))
		goto done;
	for (size_t l = 0; l < j->n; l++)
		total += j->logs[l].count;
	if (!(ops = tt_calloc(total ? total : 1, sizeof *ops)) || !(ours = json_object())) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t l = 0; l < j->n; l++)
		for (size_t e = 0; e < j->logs[l].count; e++, n++)
			ops[n] = (op_ref){ &j->logs[l].entries[e], n };
	qsort(ops, n, sizeof *ops, cmp_op_at);
	for (size_t k = 0; k < n; k++) {
		const tt_op_entry *op = ops[k].op;
		json_t *kinds = json_object(), *actions = json_is_object(op->plan)
			? json_object_get(op->plan, "actions") : NULL;
		size_t i;
		json_t *a;
		if (!kinds) {
			rc = tt_error_oom(err);
			goto done;
		}
		if (tt_pyv_truthy(json_object_get(op->result, "rolled_back"))) {
			json_decref(kinds);
			continue;
		}
		json_array_foreach(actions, i, a) {
			if (!op_is(a, "pin", "repin"))
				continue;
			tt_buf k1 = TT_BUF_INIT, k2 = TT_BUF_INIT;
			json_t *key = json_object_get(a, "key"), *kind = json_object_get(a, "kind");
			if (key)
				tt_pyv_str(&k1, key);
			if (kind)
				tt_pyv_str(&k2, kind);
			if (!k1.failed && !k2.failed)
				json_object_set_new(kinds, k1.ptr, json_string(k2.ptr));
			tt_buf_release(&k1);
			tt_buf_release(&k2);
		}
		/* An operation that reached its VCS commit committed what it pinned. */
		bool committed = false;
		json_array_foreach(op->progress, i, a) {
			const char *act = json_string_value(json_object_get(a, "action"));
			if (act && strcmp(act, "vcs-commit") == 0)
				committed = true;
		}
		json_array_foreach(op->progress, i, a) {
			const char *act = json_string_value(json_object_get(a, "action"));
			char pid[TT_PIN_ID_MAX];
			if (!act || !progress_pin(a, pid))
				continue;
			if (strcmp(act, "pin") == 0 ||
			    (strcmp(act, "repin") == 0 && tt_pyv_truthy(json_object_get(a, "created")))) {
				tt_buf key = TT_BUF_INIT;
				json_t *kv = json_object_get(a, "key");
				if (kv)
					tt_pyv_str(&key, kv);
				const char *kind = json_string_value(json_object_get(kinds, key.ptr));
				json_object_del(ours, pid);
				json_object_set_new(ours, pid, json_pack("[ssb]", kind ? kind : "", key.ptr,
									 committed));
				tt_buf_release(&key);
			} else if (strcmp(act, "unpin") == 0) {
				json_object_del(ours, pid);
			}
		}
		json_decref(kinds);
	}
	if ((rc = tt_append_fsync(path, "", 0, 0644, err)) < 0)
		goto done;
	const char *pid;
	json_t *v;
	json_object_foreach(ours, pid, v) {
		if ((rc = tt_index_note_pinned(repo->vcs->shared_dir, repo->config.dataset_id, pid,
					       json_string_value(json_array_get(v, 0)),
					       json_string_value(json_array_get(v, 1)), err)) < 0)
			goto done;
		if (json_is_true(json_array_get(v, 2))) {
			json_t *one = json_pack("[s]", pid);
			rc = one ? tt_index_note_committed(repo->vcs->shared_dir, repo->config.dataset_id, one, err)
				 : tt_error_oom(err);
			json_decref(one);
			if (rc < 0)
				goto done;
		}
	}
done:
	free(path);
	free(ops);
	json_decref(ours);
	return rc;
}

/* Pin ids this clone created and has not released (a set); into
 * *committed, those of them a commit of this clone named (a set). */
json_t *tt_gc_known_pins(tt_repo *repo, json_t **committed)
{
	json_t *all = tt_index_read(repo->vcs->shared_dir, TT_PINNED_FILENAME), *out = json_object();
	size_t i;
	json_t *d;
	*committed = json_object();
	if (!all || !out || !*committed) {
		json_decref(all);
		json_decref(out);
		json_decref(*committed);
		*committed = NULL;
		return NULL;
	}
	json_array_foreach(all, i, d) {
		const char *ds = json_string_value(json_object_get(d, "dataset_id"));
		json_t *pid = json_object_get(d, "pin_id");
		if (ds && strcmp(ds, repo->config.dataset_id) == 0 && tt_pyv_truthy(pid)) {
			tt_buf s = TT_BUF_INIT;
			tt_pyv_str(&s, pid);
			if (!s.failed) {
				tt_gc_set_add(out, s.ptr);
				if (json_is_true(json_object_get(d, "committed")))
					tt_gc_set_add(*committed, s.ptr);
			}
			tt_buf_release(&s);
		}
	}
	json_decref(all);
	return out;
}
