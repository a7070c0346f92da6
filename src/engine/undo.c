/*
 * engine/undo.c - `undo`: reverse a journaled operation where the stores
 * still allow it.  The newest operation by default (undos and what they
 * reversed are skipped; one that cannot be reversed is refused, not skipped);
 * an older one by id gets back only the workspace fields nothing changed
 * again since.  commit/pull: uncommit (pins stay); new/fork: delete the
 * branches it created (refused when they gained writes, unless --discard),
 * return the working copy and the workspace, delete a bookmark -b made;
 * add/remove/set: restore the manifests (an add that created a store also
 * removes it while it is still empty); gc: only the irreversible parts
 * are reported; promote: refused with the old base heads.
 *
 * An undo that was interrupted is finished by running `undo` again: the
 * newest entry (finished repairs aside, which only rebuild what manifests
 * already promise and are passed over) being an undo that never finished,
 * it is completed under its own id, and a commit it had already uncommitted
 * is recognised as such rather than uncommitting the one before.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/layout.h"
#include "backends/dispatch.h"
#include "core/oplog.h"
#include "engine/engine.h"
#include "util/fault.h"
#include "util/fs.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

typedef struct undo_report {
	json_t *restored, *irreversible, *skipped;
	bool resuming;  /* finishing an undo that was interrupted */
} undo_report;

static void add_line(json_t *list, const char *fmt, ...) TT_PRINTF(2, 3);
static void add_line(json_t *list, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = tt_vasprintf(fmt, ap);
	va_end(ap);
	if (s)
		json_array_append_new(list, json_string(s));
	free(s);
}

/* The workspace right after entry: the next journaled entry's pre, or the
 * file as it is now. */
static int workspace_after(tt_repo *repo, const tt_oplog *log, const tt_op_entry *target,
			   tt_workspace *out, bool *is_now, tt_error *err)
{
	bool found = false;
	for (size_t i = 0; i < log->count; i++) {
		const tt_op_entry *e = &log->entries[i];
		json_t *w = json_object_get(e->pre, "workspace");
		if (found && json_is_string(w)) {
			*is_now = false;
			return tt_workspace_parse(out, json_string_value(w), json_string_length(w), "journal", err);
		}
		found = found || strcmp(e->id, target->id) == 0;
	}
	*is_now = true;
	return 0;
}

#define TABLES(X) X(working_refs) X(pending_forks) X(pending_resets) X(fork_points) X(base_states) \
	X(last_snapshot)

/* Put back the fields the entry changed that nothing changed again. */
static int restore_workspace(tt_repo *repo, const tt_oplog *log, const tt_op_entry *target,
			     undo_report *r, bool keep_bookmark, tt_error *err)
{
	json_t *text = json_object_get(target->pre, "workspace");
	tt_workspace before = { 0 }, after_parsed = { 0 };
	bool now = false;
	int rc;
	if (!json_is_string(text))
		return 0;
	if ((rc = tt_workspace_parse(&before, json_string_value(text), json_string_length(text), "journal",
				     err)) < 0)
		return rc;
	if ((rc = workspace_after(repo, log, target, &after_parsed, &now, err)) < 0) {
		tt_workspace_release(&before);
		return rc;
	}
	const tt_workspace *after = now ? &repo->ws : &after_parsed;
	tt_buf changed = TT_BUF_INIT, later = TT_BUF_INIT, keys = TT_BUF_INIT;
	bool bm_changed = !((before.bookmark == NULL && after->bookmark == NULL) ||
			    (before.bookmark && after->bookmark && strcmp(before.bookmark, after->bookmark) == 0));
	bool bm_kept = bm_changed && (keep_bookmark ||
				      !((repo->ws.bookmark == NULL && after->bookmark == NULL) ||
					(repo->ws.bookmark && after->bookmark &&
					 strcmp(repo->ws.bookmark, after->bookmark) == 0)));
	/* Finishing an interrupted undo: a bookmark it already put back is back. */
	bool bm_back = r->resuming && bm_changed &&
		       ((repo->ws.bookmark == NULL && before.bookmark == NULL) ||
			(repo->ws.bookmark && before.bookmark && strcmp(repo->ws.bookmark, before.bookmark) == 0));
	if (bm_back) {
		bm_kept = false;
		tt_buf_puts(&changed, "bookmark");
	} else if (bm_changed && !bm_kept) {
		tt_workspace_set_bookmark(&repo->ws, before.bookmark, err);
		tt_buf_puts(&changed, "bookmark");
	}
	json_t *tables_seen = json_object(), *keys_seen = json_object();
#define RESTORE(t)                                                                                   \
	if (!bm_kept || strcmp(#t, "last_snapshot") == 0) {                                          \
		json_t *union_ = json_object();                                                      \
		json_object_update(union_, before.t);                                                \
		json_object_update(union_, after->t);                                                \
		const char *k;                                                                       \
		json_t *v;                                                                           \
		json_object_foreach(union_, k, v) {                                                  \
			json_t *was = json_object_get(before.t, k), *then = json_object_get(after->t, k); \
			json_t *cur = json_object_get(repo->ws.t, k);                                \
			if ((was && then && json_equal(was, then)) || (!was && !then))               \
				continue;                                                            \
			if (r->resuming && ((cur && was && json_equal(cur, was)) || (!cur && !was))) { \
				json_object_set(tables_seen, #t, json_true());                       \
				json_object_set(keys_seen, k, json_true());                          \
				continue;                                                            \
			}                                                                            \
			if (!((cur && then && json_equal(cur, then)) || (!cur && !then))) {          \
				tt_buf_printf(&later, "%s%s of %s", later.len ? ", " : "", #t, k);   \
				continue;                                                            \
			}                                                                            \
			if (was)                                                                     \
				json_object_set(repo->ws.t, k, was);                                 \
			else                                                                         \
				json_object_del(repo->ws.t, k);                                      \
			json_object_set(tables_seen, #t, json_true());                               \
			json_object_set(keys_seen, k, json_true());                                  \
		}                                                                                    \
		json_decref(union_);                                                                 \
	}
	TABLES(RESTORE)
#undef RESTORE
	if (json_object_size(tables_seen)) {
		const char *k;
		json_t *v;
		tt_buf tl = TT_BUF_INIT;
		json_object_foreach(tables_seen, k, v) tt_buf_printf(&tl, "%s%s", tl.len ? ", " : "", k);
		json_object_foreach(keys_seen, k, v) tt_buf_printf(&keys, "%s%s", keys.len ? ", " : "", k);
		tt_buf_printf(&changed, "%s%s of %s", changed.len ? "; " : "", tl.ptr, keys.ptr);
		tt_buf_release(&tl);
	}
	tt_buf left = TT_BUF_INIT;
	if (bm_kept)
		tt_buf_printf(&left, "bookmark %s and its working refs (a later operation moved this checkout)",
			      repo->ws.bookmark ? repo->ws.bookmark : "(none)");
	if (later.len)
		tt_buf_printf(&left, "%s%s (changed again by a later operation)", left.len ? "; " : "", later.ptr);
	if (left.len)
		add_line(r->skipped, "workspace.toml: left %s", left.ptr);
	if (changed.len) {
		if ((rc = tt_workspace_save(&repo->ws, repo->root, err)) == 0)
			add_line(r->restored, "workspace.toml restored (%s)", changed.ptr);
	}
	tt_buf_release(&left);
	tt_buf_release(&changed);
	tt_buf_release(&later);
	tt_buf_release(&keys);
	json_decref(tables_seen);
	json_decref(keys_seen);
	tt_workspace_release(&before);
	tt_workspace_release(&after_parsed);
	return rc;
}

static int restore_manifests(tt_repo *repo, json_t *texts, undo_report *r, tt_error *err)
{
	const char *key;
	json_t *text;
	int rc = 0;
	json_object_foreach(texts, key, text) {
		if (json_is_string(text)) {
			char *rel = NULL;
			if ((rc = tt_key_relpath(&rel, key, err)) < 0)
				return rc;
			char *path = tt_tether_path(repo->root, rel);
			free(rel);
			rc = path ? tt_write_file_atomic(path, json_string_value(text), json_string_length(text), 0644, err)
				  : tt_error_oom(err);
			free(path);
			if (rc < 0)
				return rc;
			add_line(r->restored, "%s: manifest restored", key);
		} else {
			if ((rc = tt_manifest_delete(repo->root, key, err)) < 0)
				return rc;
			add_line(r->restored, "%s: manifest removed again", key);
		}
	}
	tt_manifest_set fresh;
	if ((rc = tt_manifests_load(&fresh, repo->root, err)) == 0) {
		tt_manifests_release(&repo->objects);
		repo->objects = fresh;
	}
	return rc;
}

/* Delete the branches an operation created; a reset one is reported. */
static int undo_branches(tt_repo *repo, const tt_op_entry *e, undo_report *r, bool discard,
			 json_t *created, json_t *reset, tt_error *err)
{
	const char *key;
	json_t *ref;
	if (!discard) {
		tt_buf dirty = TT_BUF_INIT;
		json_object_foreach(created, key, ref) {
			const tt_manifest *m = tt_manifests_find(&repo->objects, key);
			tt_backend *b;
			json_t *head = NULL;
			tt_error ignored = TT_ERROR_INIT;
			if (!m || tt_engine_backend(repo, m->kind, &b, &ignored) < 0 ||
			    tt_backend_fingerprint(b, m->locator, json_string_value(ref), &head, &ignored) < 0) {
				tt_error_clear(&ignored);
				continue; /* gone: nothing to lose */
			}
			json_t *fp = json_object_get(repo->ws.fork_points, key);
			bool safe = (fp && tt_engine_same(m, head, fp)) || (m->state && tt_engine_same(m, head, m->state) && m->pin_id);
			if (!safe) {
				tt_buf s = TT_BUF_INIT;
				tt_short_state(&s, head);
				tt_buf_printf(&dirty, "\n  %s: %s has writes since (%s)", key, json_string_value(ref), s.ptr);
				tt_buf_release(&s);
			}
			json_decref(head);
		}
		if (dirty.len) {
			int rc = tt_error_set(err, TT_ECONFIG, "refusing to undo: branches gained writes; commit them "
					      "or pass --discard%s", dirty.ptr);
			tt_buf_release(&dirty);
			return rc;
		}
	}
	json_object_foreach(created, key, ref) {
		const tt_manifest *m = tt_manifests_find(&repo->objects, key);
		tt_backend *b;
		tt_error derr = TT_ERROR_INIT;
		if (!m) {
			add_line(r->skipped, "%s: object no longer registered; %s left", key, json_string_value(ref));
			continue;
		}
		json_t *refs = NULL;
		bool gone = false;
		/* Finishing an interrupted undo: a branch it deleted is gone already. */
		if (r->resuming && tt_engine_backend(repo, m->kind, &b, &derr) == 0 && tt_backend_has(b, list_working_refs) &&
		    tt_backend_list_working_refs(b, m->locator, &refs, &derr) == 0) {
			size_t k;
			json_t *x;
			gone = true;
			json_array_foreach(refs, k, x) gone &= strcmp(json_string_value(x), json_string_value(ref)) != 0;
		}
		json_decref(refs);
		tt_error_clear(&derr);
		if (gone) {
			/* ... but what its killed delete left of it goes too (a
			 * Lance tree whose branch file was removed); a ref that is
			 * gone is not an error here. */
			if (tt_engine_backend(repo, m->kind, &b, &derr) == 0 && tt_backend_has(b, delete_working_ref))
				tt_backend_delete_working_ref(b, m->locator, json_string_value(ref), &derr);
			tt_error_clear(&derr);
			add_line(r->restored, "%s: deleted %s", key, json_string_value(ref));
		} else if (tt_engine_backend(repo, m->kind, &b, &derr) == 0 && tt_backend_has(b, delete_working_ref) &&
			 tt_backend_delete_working_ref(b, m->locator, json_string_value(ref), &derr) == 0)
			add_line(r->restored, "%s: deleted %s", key, json_string_value(ref));
		else {
			char *msg = tt_asprintf("%s: could not delete %s: %s", key, json_string_value(ref),
						tt_error_text(&derr));
			json_array_append_new(r->irreversible, json_string(msg ? msg : ""));
			free(msg);
		}
		tt_error_clear(&derr);
	}
	json_t *heads = json_object_get(e->pre, "heads");
	json_object_foreach(reset, key, ref) {
		tt_buf s = TT_BUF_INIT;
		json_t *h = json_object_get(heads, key);
		if (json_is_object(h)) {
			tt_buf_puts(&s, " (was ");
			tt_short_state(&s, h);
			tt_buf_puts(&s, ")");
		}
		char *msg = tt_asprintf("%s: %s was reset%s; `tether restore %s --from REV` or `tether new "
					"--discard` puts it where you want", key, json_string_value(ref), s.ptr, key);
		json_array_append_new(r->irreversible, json_string(msg ? msg : ""));
		free(msg);
		tt_buf_release(&s);
	}
	return 0;
}

/*
 * Whether commit has already been turned back into working-copy changes:
 * the working copy sits on its first parent (on an unborn branch for a root
 * commit) with the manifests differing from there, as an uncommit leaves it
 * (an undo interrupted after its uncommit, or a `git reset --soft`).
 * Uncommitting again would take back the commit before it.
 */
/* Whether a and b hold the same value at key, absent in both counting as
 * the same (a jj position has no branch). */
static bool same_field(const json_t *a, const json_t *b, const char *key)
{
	json_t *x = json_object_get(a, key), *y = json_object_get(b, key);
	return (!x && !y) || json_equal(x, y);
}

static int already_uncommitted(tt_repo *repo, const char *commit, bool *out, tt_error *err)
{
	json_t *info = NULL, *pos = NULL;
	bool dirty = false;
	int rc;
	*out = false;
	const char *revs[] = { commit };
	if ((rc = tt_vcs_commit_info(repo->vcs, revs, 1, &info, err)) < 0 ||
	    (rc = tt_vcs_position(repo->vcs, &pos, err)) < 0)
		goto done;
	json_t *parents = json_object_get(json_array_get(info, 0), "parents");
	const char *parent = json_string_value(json_array_get(parents, 0));
	const char *here = json_string_value(json_object_get(pos, tt_engine_vcs_is_jj(repo) ? "parent" : "commit"));
	bool on_parent = parent ? here && strcmp(here, parent) == 0 : !here && json_array_size(info) == 1;
	if (on_parent && (rc = tt_engine_objects_dirty(repo, &dirty, err)) < 0)
		goto done;
	*out = on_parent && dirty;
done:
	json_decref(info);
	json_decref(pos);
	return rc;
}

int tt_repo_undo(tt_repo *repo, const char *op_id, bool discard, json_t **out, tt_error *err)
{
	tt_oplog log = TT_OPLOG_INIT;
	tt_lock rlock = TT_LOCK_INIT;
	undo_report r = { json_array(), json_array(), json_array(), false };
	char undo_id[TT_OP_ID_LEN + 1] = "";
	json_t *pre = NULL, *wstext = NULL;
	bool nothing_restored = false;
	int rc;
	*out = NULL;
	if ((rc = tt_repo_lock(repo, err)) < 0)
		goto cleanup;
	if ((rc = tt_engine_repo_lock(repo, &rlock, err)) < 0 || (rc = tt_oplog_read(repo->root, &log, err)) < 0)
		goto done;
	const tt_op_entry *target = NULL;
	/* An undo that was interrupted is finished first, under its own entry:
	 * the newest entry but for repairs (which only rebuild what manifests
	 * already promise), an undo that never finished, of an entry not undone. */
	const tt_op_entry *resume = NULL;
	for (size_t i = 0; i < log.count; i++) {
		const tt_op_entry *e = tt_oplog_newest(&log, i);
		if (strcmp(e->command, "repair") == 0)
			continue;
		if (strcmp(e->command, "undo") == 0 && tt_op_incomplete(e) && json_is_string(e->undoes)) {
			const tt_op_entry *t = tt_oplog_find(&log, json_string_value(e->undoes));
			if (t && !json_is_string(t->undone_by) && !tt_op_incomplete(t) &&
			    (!op_id || strcmp(op_id, e->id) == 0 || strcmp(op_id, t->id) == 0)) {
				resume = e;
				target = t;
			}
		}
		break;
	}
	for (size_t i = 0; i < log.count && !target; i++) {
		const tt_op_entry *e = tt_oplog_newest(&log, i);
		/* By default a finished repair is passed over, as undos are. */
		if (!op_id && strcmp(e->command, "repair") == 0 && !tt_op_incomplete(e))
			continue;
		if (op_id ? strcmp(e->id, op_id) == 0 : (json_is_null(e->undoes) && !json_is_string(e->undone_by))) {
			target = e;
			break;
		}
	}
	r.resuming = resume != NULL;
	if (!target) {
		rc = op_id ? tt_error_set(err, TT_ECONFIG, "no operation '%s' in this workspace's log", op_id)
			   : tt_error_set(err, TT_ECONFIG, "nothing to undo");
		goto done;
	}
	if (op_id && json_is_string(target->undone_by)) {
		rc = tt_error_set(err, TT_ECONFIG, "%s was already undone by %s", op_id,
				  json_string_value(target->undone_by));
		goto done;
	}
	if (json_is_string(target->parent)) {
		rc = tt_error_set(err, TT_ECONFIG, "%s (%s) is a step of %s (a drop), which cannot be undone",
				  target->id, target->command, json_string_value(target->parent));
		goto done;
	}
	if (tt_op_incomplete(target)) {
		rc = tt_error_set(err, TT_ECONFIG, "%s (%s) never finished, so what it did is not known; "
				  "`tether verify` and `tether gc --dry-run` show what it left behind",
				  target->id, target->command);
		tt_error_hint(err, "rerunning the command finishes it");
		goto done;
	}
	static const char *const handled[] = { "commit", "pull", "new", "fork", "gc", "promote", "add",
						"remove", "set", "import" };
	bool known = false;
	for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++)
		known |= strcmp(target->command, handled[i]) == 0;
	if (!json_is_null(target->undoes) || !tt_op_undoable(target) || !known) {
		rc = tt_error_set(err, TT_ECONFIG, "cannot undo '%s'%s%s%s", target->command,
				  op_id ? "" : " (", op_id ? "" : target->id,
				  op_id ? "" : ", the newest operation); `tether undo ID` names an older one, and takes "
					       "back only what nothing since has changed again");
		goto done;
	}
	tt_buf wb = TT_BUF_INIT;
	if ((rc = tt_workspace_render(&wb, &repo->ws, err)) == 0)
		wstext = json_stringn(wb.ptr, wb.len);
	tt_buf_release(&wb);
	if (rc < 0)
		goto done;
	pre = json_pack("{s:O,s:s}", "workspace", wstext, "target", target->id);
	if (resume)
		snprintf(undo_id, sizeof undo_id, "%s", resume->id);
	else if ((rc = tt_oplog_begin_ex(repo->root, "undo", NULL, pre, target->id, NULL, undo_id, err)) < 0)
		goto done;
	tt_fault("undo:after-journal");

	const char *cmd = target->command;
	if (strcmp(cmd, "commit") == 0 || strcmp(cmd, "pull") == 0) {
		const char *commit = json_string_value(json_object_get(target->result, "vcs_commit"));
		if (commit) {
			bool did = false, already = false;
			if ((rc = tt_vcs_uncommit(repo->vcs, commit, &did, err)) < 0 ||
			    (!did && (rc = already_uncommitted(repo, commit, &already, err)) < 0))
				goto failed;
			if (did)
				tt_fault("undo:after-uncommit");
			if (already) {
				char *m = tt_asprintf("%.12s was already uncommitted (the working copy is on its parent, "
						      "its manifests working-tree changes; pins kept)", commit);
				json_array_append_new(r.restored, json_string(m ? m : ""));
				free(m);
			} else if (did) {
				char *m = tt_asprintf("uncommitted %.12s; its manifests are working-tree changes again "
						      "(pins kept)", commit);
				json_array_append_new(r.restored, json_string(m ? m : ""));
				free(m);
			} else {
				char *m = tt_engine_vcs_is_jj(repo)
						  ? tt_asprintf("commit %.12s is no longer the working copy's parent; take it "
								"back in jj first (`jj undo` reverts jj's last operation)",
								commit)
						  : tt_asprintf("commit %.12s is no longer the working copy's parent; uncommit "
								"it with git first", commit);
				json_array_append_new(r.irreversible, json_string(m ? m : ""));
				free(m);
			}
		} else {
			if ((rc = restore_manifests(repo, json_object_get(target->pre, "objects"), &r, err)) < 0 ||
			    (rc = restore_workspace(repo, &log, target, &r, false, err)) < 0)
				goto failed;
		}
	} else if (strcmp(cmd, "add") == 0 || strcmp(cmd, "remove") == 0 || strcmp(cmd, "set") == 0 ||
		   strcmp(cmd, "import") == 0) {
		if ((rc = restore_manifests(repo, json_object_get(target->pre, "objects"), &r, err)) < 0 ||
		    (rc = restore_workspace(repo, &log, target, &r, false, err)) < 0)
			goto failed;
		/* `add --create` made a store: removed again while still empty. */
		if (strcmp(cmd, "add") == 0)
			tt_engine_undo_created(repo, target->result, r.restored, r.irreversible);
	} else if (strcmp(cmd, "new") == 0 || strcmp(cmd, "fork") == 0) {
		json_t *created = json_object(), *reset = json_object();
		json_t *res = target->result;
		if (strcmp(cmd, "fork") == 0) {
			const char *k = json_string_value(json_object_get(res, "key"));
			const char *ref = json_string_value(json_object_get(res, "ref"));
			bool existed = json_object_get(json_object_get(target->pre, "heads"), k ? k : "") != NULL;
			if (k && ref)
				json_object_set_new(existed ? reset : created, k, json_string(ref));
		} else {
			json_t *refs = json_object_get(res, "working_refs");
			size_t i;
			json_t *k;
			json_array_foreach(json_object_get(res, "created"), i, k)
				if (json_object_get(refs, json_string_value(k)))
					json_object_set(created, json_string_value(k), json_object_get(refs, json_string_value(k)));
			json_array_foreach(json_object_get(res, "reset"), i, k)
				if (json_object_get(refs, json_string_value(k)))
					json_object_set(reset, json_string_value(k), json_object_get(refs, json_string_value(k)));
		}
		rc = undo_branches(repo, target, &r, discard, created, reset, err);
		json_decref(created);
		json_decref(reset);
		if (rc < 0)
			goto failed;
		/* The working copy goes back if it is still where `new` left it. */
		json_t *before = json_object_get(target->pre, "vcs"), *after = json_object_get(res, "vcs");
		const char *made = json_string_value(json_object_get(res, "created_bookmark"));
		json_t *ctx = json_object_get(target->plan, "context");
		bool moved_vcs = strcmp(cmd, "new") == 0 && (json_is_string(json_object_get(ctx, "rev")) || made) &&
				 json_is_object(before) && json_is_object(after);
		bool went_back = false;
		if (moved_vcs) {
			json_t *now = NULL;
			if ((rc = tt_vcs_position(repo->vcs, &now, err)) < 0)
				goto failed;
			if (same_field(now, after, "id") && same_field(now, after, "branch")) {
				if ((rc = tt_vcs_goto_position(repo->vcs, before, err)) < 0) {
					json_decref(now);
					goto failed;
				}
				tt_fault("undo:after-vcs");
				json_array_append_new(r.restored, json_string("VCS working copy back where it was"));
				went_back = true;
				tt_manifest_set fresh;
				if (tt_manifests_load(&fresh, repo->root, err) == 0) {
					tt_manifests_release(&repo->objects);
					repo->objects = fresh;
				}
			} else if (r.resuming && same_field(now, before, "id") && same_field(now, before, "branch")) {
				/* The interrupted undo had returned it already. */
				json_array_append_new(r.restored, json_string("VCS working copy back where it was"));
				went_back = true;
			} else {
				json_array_append_new(r.skipped, json_string("VCS working copy has moved since; not returning it"));
			}
			json_decref(now);
		}
		if ((rc = restore_workspace(repo, &log, target, &r, moved_vcs && !went_back, err)) < 0)
			goto failed;
		if (made && went_back) {
			json_t *marks = NULL;
			if (tt_vcs_bookmarks(repo->vcs, &marks, err) == 0) {
				const char *at = json_string_value(json_object_get(marks, made));
				/* jj: the bookmark went on @'s parent */
				const char *was = json_string_value(json_object_get(after, "parent"));
				if (!was)
					was = json_string_value(json_object_get(after, "commit"));
				if (at && was && strcmp(at, was) == 0 &&
				    tt_vcs_bookmark_delete(repo->vcs, made, err) == 0)
					add_line(r.restored, "bookmark %s deleted", made);
				else if (at)
					add_line(r.skipped, "bookmark %s has moved since; kept", made);
			}
			json_decref(marks);
			tt_error_clear(err);
		}
	} else if (strcmp(cmd, "gc") == 0) {
		json_t *res = target->result;
		size_t n = 0;
		const char *k;
		json_t *v;
		json_object_foreach(json_object_get(res, "unpinned"), k, v) n += json_array_size(v);
		if (n) {
			char *m = tt_asprintf("%zu pin(s) deleted; if a manifest references them again, `tether repair` "
					      "recreates them while the state is still reachable", n);
			json_array_append_new(r.irreversible, json_string(m ? m : ""));
			free(m);
		}
		size_t nb = 0;
		json_object_foreach(json_object_get(res, "deleted_working_refs"), k, v) nb += json_array_size(v);
		if (nb) {
			char *m = tt_asprintf("%zu branch(es) deleted; `tether repair` recreates a bookmark's branches "
					      "from its manifests", nb);
			json_array_append_new(r.irreversible, json_string(m ? m : ""));
			free(m);
		}
		if ((rc = restore_workspace(repo, &log, target, &r, false, err)) < 0)
			goto failed;
		if (!json_array_size(r.restored))
			json_array_append_new(r.skipped, json_string("nothing else of this gc is reversible"));
	} else if (strcmp(cmd, "promote") == 0) {
		json_t *moved = json_object(), *bases = json_object_get(target->pre, "base_states");
		json_object_update(moved, json_object_get(target->result, "fast_forwarded"));
		json_object_update(moved, json_object_get(target->result, "merged"));
		const char *k;
		json_t *v;
		json_object_foreach(moved, k, v) {
			tt_buf a = TT_BUF_INIT, b = TT_BUF_INIT;
			tt_short_state(&a, json_object_get(bases, k));
			tt_short_state(&b, v);
			char *m = tt_asprintf("%s: base branch %s %s -> %s; tether never moves a base branch backwards "
					      "(readers of it may have built on it), reset it in the store yourself", k,
					      json_object_get(json_object_get(target->result, "merged"), k) ? "merged"
													     : "fast-forwarded",
					      a.ptr, b.ptr);
			json_array_append_new(r.irreversible, json_string(m ? m : ""));
			free(m);
			tt_buf_release(&a);
			tt_buf_release(&b);
		}
		if (!json_object_size(moved))
			json_array_append_new(r.skipped, json_string("promote moved nothing"));
		json_decref(moved);
	}
	if (!json_array_size(r.restored) && !json_array_size(r.skipped) && json_array_size(r.irreversible)) {
		tt_buf lines = TT_BUF_INIT;
		size_t i;
		json_t *l;
		json_array_foreach(r.irreversible, i, l)
			tt_buf_printf(&lines, "\n  %s", json_string_value(l));
		rc = tt_error_set(err, TT_ECONFIG, "cannot undo %s (%s):%s", target->id, target->command, lines.ptr);
		tt_buf_release(&lines);
		nothing_restored = true;
		goto failed;
	}
	tt_fault("undo:after-restore");
	char *summary = tt_op_summary(target);
	char *sline = tt_asprintf("%s %s", target->command, summary ? summary : "");
	json_t *result = json_pack("{s:s,s:O,s:O,s:O}", "summary", sline ? sline : "", "restored", r.restored,
				   "irreversible", r.irreversible, "skipped", r.skipped);
	free(sline);
	rc = tt_oplog_done(repo->root, undo_id, result, NULL, target->id, err);
	json_decref(result);
	if (rc == 0)
		*out = json_pack("{s:s,s:s,s:s,s:s,s:O,s:O,s:O}", "undone", target->id, "command", target->command,
				 "summary", summary ? summary : "", "undo_id", undo_id, "restored", r.restored,
				 "irreversible", r.irreversible, "skipped", r.skipped);
	free(summary);
	goto done;
failed:
	if (!json_array_size(r.restored)) {
		/* Refused before touching anything: a failed attempt, not an
		 * interrupted one. */
		tt_error ignored = TT_ERROR_INIT;
		/* The full report, as tether-vcs journals a refused undo. */
		char *fsum = tt_op_summary(target);
		char *fline = tt_asprintf("%s %s", target->command, fsum ? fsum : "");
		json_t *f = json_pack("{s:s,s:O,s:O,s:O,s:s}", "summary", fline ? fline : "", "restored", r.restored,
				      "irreversible", r.irreversible, "skipped", r.skipped, "failed",
				      nothing_restored ? "nothing restored" : tt_error_text(err));
		free(fsum);
		free(fline);
		tt_oplog_done(repo->root, undo_id, f, NULL, NULL, &ignored);
		json_decref(f);
		tt_error_clear(&ignored);
	}
done:
	tt_lock_release(&rlock);
	tt_repo_unlock(repo);
cleanup:
	tt_oplog_free(&log);
	json_decref(r.restored);
	json_decref(r.irreversible);
	json_decref(r.skipped);
	json_decref(pre);
	json_decref(wstext);
	return rc;
}
