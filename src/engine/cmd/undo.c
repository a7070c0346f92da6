/*
 * engine/cmd/undo.c - `undo`: reverse a journaled operation where the stores
 * still allow it.  The newest operation by default (undos and what they
 * reversed are skipped; one that cannot be reversed is refused, not skipped);
 * an older one by id gets back only the workspace fields nothing changed
 * again since.  commit/pull: uncommit (pins stay; refused on jj while other
 * commits build on it); new/fork/restore: delete the branches it created
 * (refused when they hold writes, or a recorded state no pin holds, unless
 * --discard), return the working copy and the workspace, delete a bookmark
 * -b made -- refused while the checkout still works on that bookmark under
 * a working copy that moved on; add/remove/set/import: restore the
 * manifests (an add that created a store also removes it while it is still
 * empty); gc: listings come back from the VCS, the branches, pins and
 * stores it deleted are reported; promote: refused with the old base
 * heads.  A drop and its steps are refused, an interrupted drop with how
 * far it came and what finishes it.
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
#include "engine/cmd/drop.h"
#include "engine/cmd/lifecycle.h"
#include "engine/kernel/context.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/resume.h"
#include "engine/kernel/state.h"
#include "util/fault.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/kernel/refnames.h"

typedef struct undo_report {
	json_t *restored, *irreversible, *skipped;
	bool resuming;  /* finishing an undo that was interrupted */
} undo_report;

static void add_line(json_t *list, const char *fmt, ...) TT_PRINTF(2, 3);
static char *bookmark_kept(tt_repo *repo, const tt_oplog *log, const tt_op_entry *target, bool vcs_back,
			   char **before_out, char **after_out);
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

/* workspace.toml's per-object tables, in the order undo reports them (tether-vcs's). */
#define TABLES(X) X(base_states) X(working_refs) X(pending_forks) X(pending_resets) X(fork_points) \
	X(last_snapshot)

/* The keys of a and b together, sorted (byte order: Python's code point
 * order), as copies: restoring a table may delete the key they came from.
 * NULL when out of memory; free with free_keys. */
static char **union_keys(json_t *a, json_t *b, size_t *n)
{
	size_t cap = json_object_size(a) + json_object_size(b), i = 0;
	char **keys = calloc(cap ? cap : 1, sizeof *keys);
	const char *k;
	json_t *v;
	bool oom = !keys;
	json_object_foreach(a, k, v) if (!oom && !(keys[i++] = tt_strdup(k))) oom = true;
	json_object_foreach(b, k, v) if (!oom && !json_object_get(a, k) && !(keys[i++] = tt_strdup(k))) oom = true;
	if (oom) {
		for (size_t j = 0; keys && j < i; j++)
			free(keys[j]);
		free(keys);
		return NULL;
	}
	qsort(keys, i, sizeof *keys, tt_cmp_cstr);
	*n = i;
	return keys;
}

static void free_keys(char **keys, size_t n)
{
	for (size_t i = 0; keys && i < n; i++)
		free(keys[i]);
	free(keys);
}

/* Put back the fields the entry changed that nothing changed again. */
static int restore_workspace(tt_repo *repo, const tt_oplog *log, const tt_op_entry *target,
			     undo_report *r, tt_error *err)
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
	/* Left while the checkout cannot go back to the bookmark it was on. */
	char *kept = bm_changed ? bookmark_kept(repo, log, target, false, NULL, NULL) : NULL;
	bool bm_kept = kept != NULL;
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
	bool oom = false;
#define RESTORE(t)                                                                                   \
	if (!bm_kept || strcmp(#t, "last_snapshot") == 0) {                                          \
		size_t nkeys = 0;                                                                    \
		char **union_ = union_keys(before.t, after->t, &nkeys);                              \
		if (!union_)                                                                         \
			oom = true;                                                                  \
		for (size_t ki = 0; union_ && ki < nkeys; ki++) {                                    \
			const char *k = union_[ki];                                                  \
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
		free_keys(union_, nkeys);                                                            \
	}
	TABLES(RESTORE)
#undef RESTORE
	if (json_object_size(tables_seen)) {
		const char *k;
		json_t *v;
		tt_buf tl = TT_BUF_INIT;
		json_object_foreach(tables_seen, k, v) tt_buf_printf(&tl, "%s%s", tl.len ? ", " : "", k);
		size_t nk = 0;
		char **sorted = union_keys(keys_seen, NULL, &nk);
		if (!sorted)
			oom = true;
		for (size_t ki = 0; sorted && ki < nk; ki++)
			tt_buf_printf(&keys, "%s%s", keys.len ? ", " : "", sorted[ki]);
		free_keys(sorted, nk);
		tt_buf_printf(&changed, "%s%s of %s", changed.len ? "; " : "", tl.ptr, keys.ptr);
		tt_buf_release(&tl);
	}
	tt_buf left = TT_BUF_INIT;
	if (bm_kept)
		tt_buf_printf(&left, "bookmark %s and its working refs (%s)",
			      repo->ws.bookmark ? repo->ws.bookmark : "(none)", kept);
	free(kept);
	if (later.len)
		tt_buf_printf(&left, "%s%s (changed again by a later operation)", left.len ? "; " : "", later.ptr);
	if (left.len)
		add_line(r->skipped, "workspace.toml: left %s", left.ptr);
	if (oom)
		rc = tt_error_oom(err);
	else if (changed.len) {
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

static int cmp_json_str(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* An array of strings sorted in place (byte order: Python's sorted()). */
static void sort_json_strings(json_t *arr)
{
	size_t n = json_array_size(arr), i;
	json_t **items = n ? malloc(n * sizeof *items) : NULL, *v;
	if (!items)
		return;
	json_array_foreach(arr, i, v) items[i] = json_incref(v);
	qsort(items, n, sizeof *items, cmp_json_str);
	json_array_clear(arr);
	for (i = 0; i < n; i++)
		json_array_append_new(arr, items[i]);
	free(items);
}

/* Whether a and b name the same bookmark (NULL: none). */
static bool same_bookmark(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* The bookmarks the VCS has this working copy on, sorted: git's branch;
 * jj's at @ and at @'s parent (a working copy with edits still sits on
 * its parent's bookmark, where the next commit lands). */
static json_t *vcs_bookmarks_here(tt_repo *repo)
{
	json_t *here = json_array(), *pos = NULL, *marks = NULL;
	char *cur = NULL;
	tt_error ig = TT_ERROR_INIT;
	if (!here)
		return NULL;
	if (tt_vcs_current_bookmark(repo->vcs, &cur, &ig) == 0 && cur)
		json_array_append_new(here, json_string(cur));
	free(cur);
	tt_error_clear(&ig);
	if (tt_engine_vcs_is_jj(repo) && tt_vcs_position(repo->vcs, &pos, &ig) == 0 &&
	    tt_vcs_bookmarks(repo->vcs, &marks, &ig) == 0) {
		const char *at[] = { json_string_value(json_object_get(pos, "commit")),
				     json_string_value(json_object_get(pos, "parent")) };
		const char *name;
		json_t *c;
		json_object_foreach(marks, name, c) {
			bool on = false;
			for (size_t i = 0; i < 2; i++)
				on |= at[i] && json_is_string(c) && strcmp(json_string_value(c), at[i]) == 0;
			if (on && !tt_json_has_string(here, name))
				json_array_append_new(here, json_string(name));
		}
	}
	tt_error_clear(&ig);
	json_decref(pos);
	json_decref(marks);
	sort_json_strings(here);
	return here;
}

/*
 * Why undoing target must leave this checkout on the bookmark it is on now,
 * or NULL when it may go back (caller frees): a later operation moved it
 * on, or the VCS working copy is no longer on the bookmark target started
 * from (vcs_back: the undo is about to return it there) -- a workspace put
 * back on the trunk under a working copy that stays on a bookmark's commit
 * would write straight to the store's main.  before_out/after_out (NULL:
 * not wanted) get the bookmark before and right after target.
 */
static char *bookmark_kept(tt_repo *repo, const tt_oplog *log, const tt_op_entry *target, bool vcs_back,
			   char **before_out, char **after_out)
{
	json_t *text = json_object_get(target->pre, "workspace");
	tt_workspace before = { 0 }, after_parsed = { 0 };
	tt_error ig = TT_ERROR_INIT;
	bool now = false;
	char *why = NULL;
	if (!json_is_string(text) ||
	    tt_workspace_parse(&before, json_string_value(text), json_string_length(text), "journal", &ig) < 0) {
		tt_error_clear(&ig);
		return NULL;
	}
	if (workspace_after(repo, log, target, &after_parsed, &now, &ig) < 0) {
		tt_error_clear(&ig);
		tt_workspace_release(&before);
		return NULL;
	}
	const tt_workspace *after = now ? &repo->ws : &after_parsed;
	if (same_bookmark(before.bookmark, after->bookmark)) {
		/* nothing to keep */
	} else if (!same_bookmark(repo->ws.bookmark, after->bookmark)) {
		why = tt_asprintf("a later operation moved this checkout to %s",
				  repo->ws.bookmark ? repo->ws.bookmark : "no bookmark");
	} else if (!vcs_back && before.bookmark) {
		json_t *here = vcs_bookmarks_here(repo);
		if (here && !tt_json_has_string(here, before.bookmark)) {
			tt_buf names = TT_BUF_INIT;
			size_t i;
			json_t *n;
			json_array_foreach(here, i, n)
				tt_buf_printf(&names, "%s%s", names.len ? ", " : "", json_string_value(n));
			why = tt_asprintf("the VCS working copy has moved on from %s since (it is on %s)",
					  before.bookmark, names.len ? names.ptr : "no bookmark");
			tt_buf_release(&names);
		}
		json_decref(here);
	}
	if (before_out)
		*before_out = before.bookmark ? tt_strdup(before.bookmark) : NULL;
	if (after_out)
		*after_out = after->bookmark ? tt_strdup(after->bookmark) : NULL;
	tt_workspace_release(&before);
	tt_workspace_release(&after_parsed);
	return why;
}

/* A listing a gc deleted, back from the VCS's last commit (the journal
 * names it; entry_usable checked it is a plain name). */
static int restore_listing(tt_repo *repo, const char *name, undo_report *r, tt_error *err)
{
	char *in_tether = tt_asprintf(TT_DIR "/" TT_LISTINGS_DIR "/%s", name);
	char *rel = in_tether ? tt_path_join(tt_engine_dataset_rel(repo), in_tether) : NULL;
	char *rel_local = tt_asprintf(TT_LISTINGS_DIR "/%s", name);
	char *path = rel_local ? tt_tether_path(repo->root, rel_local) : NULL;
	char *text = NULL, *dir = NULL;
	size_t len = 0;
	tt_error ig = TT_ERROR_INIT;
	int rc = 0;
	if (!rel || !path) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (tt_vcs_read_file_at(repo->vcs, tt_engine_vcs_is_jj(repo) ? "@-" : "HEAD", rel, &text, &len, &ig) < 0 ||
	    !text) {
		add_line(r->irreversible, "listing %s: not in the VCS either", name);
		goto done;
	}
	if (!(dir = tt_dirname(path))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_mkdirs(dir, 0755, err)) < 0 || (rc = tt_write_file_atomic(path, text, len, 0644, err)) < 0)
		goto done;
	add_line(r->restored, "listing %s: restored from the VCS", name);
done:
	tt_error_clear(&ig);
	free(in_tether);
	free(rel);
	free(rel_local);
	free(path);
	free(text);
	free(dir);
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

/* Whether deleting m's branch ref (at head) would lose something: its head
 * is neither where the operation forked it (source) nor this workspace's
 * fork point, and it holds writes, or a state a manifest records that no
 * pin holds (the manifest would name a state that is gone).  *what is
 * "writes" or "record" then; NULL when nothing is lost. */
static void deleting_would_lose(tt_repo *repo, const tt_manifest *m, tt_backend *b, const json_t *head,
				const json_t *source, const char **what)
{
	json_t *fp = json_object_get(repo->ws.fork_points, m->key);
	*what = NULL;
	if ((source && tt_engine_same(m, head, source)) || (fp && tt_engine_same(m, head, fp)))
		return;
	if (m->state && tt_engine_same(m, head, m->state)) {
		tt_verify_status st = TT_VERIFY_UNKNOWN;
		if (m->pin_id && tt_backend_has(b, verify)) {
			tt_pin pin;
			char *msg = NULL;
			tt_error ig = TT_ERROR_INIT;
			memset(&pin, 0, sizeof pin);
			snprintf(pin.id, sizeof pin.id, "%s", m->pin_id);
			snprintf(pin.ref, sizeof pin.ref, "%s", m->pin_ref ? m->pin_ref : "");
			if (tt_backend_verify(b, m->locator, m->state, &pin, false, &st, &msg, &ig) < 0)
				st = TT_VERIFY_UNKNOWN;
			free(msg);
			tt_error_clear(&ig);
		}
		*what = st == TT_VERIFY_OK ? NULL : "record"; /* the pin holds it, or nothing does */
		return;
	}
	json_t *base = json_object_get(repo->ws.base_states, m->key);
	*what = base && tt_engine_same(m, head, base) ? "record" : "writes";
}

/* Delete the branches an operation created; a reset one is reported. */
static int undo_branches(tt_repo *repo, const tt_oplog *log, const tt_op_entry *e, undo_report *r,
			 bool discard, json_t *created, json_t *reset, tt_error *err)
{
	const char *key;
	json_t *ref;
	if (!discard && json_object_size(created)) {
		/* What each was forked from: the fork point the operation
		 * recorded (the workspace right after it). */
		tt_workspace after = { 0 };
		bool now = false;
		int arc;
		if ((arc = workspace_after(repo, log, e, &after, &now, err)) < 0)
			return arc;
		json_t *sources = now ? repo->ws.fork_points : after.fork_points;
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
			const char *what;
			deleting_would_lose(repo, m, b, head, json_object_get(sources, key), &what);
			if (what) {
				tt_buf s = TT_BUF_INIT;
				tt_short_state(&s, head);
				if (strcmp(what, "record") == 0)
					tt_buf_printf(&dirty, "\n  %s: %s is at %s, a state the manifest records (a commit "
						      "since, or the working tree) and no pin holds; deleting the branch "
						      "would leave the manifest naming a state that is gone", key,
						      json_string_value(ref), s.ptr);
				else
					tt_buf_printf(&dirty, "\n  %s: %s has writes since (%s)", key,
						      json_string_value(ref), s.ptr);
				tt_buf_release(&s);
			}
			json_decref(head);
		}
		tt_workspace_release(&after);
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

/*
 * A finished entry that changed nothing: a whole command failed and
 * journaled only why ({"failed": ...}; a fork's key; a commit that rolled
 * back what it had done), with no step taken.  `undo` passes over it: there
 * is nothing to take back.
 */
static bool changed_nothing(const tt_op_entry *e)
{
	if (tt_op_incomplete(e) || !json_is_string(json_object_get(e->result, "failed")) || json_array_size(e->progress))
		return false;
	const char *k;
	json_t *v;
	json_object_foreach(e->result, k, v)
		if (strcmp(k, "failed") != 0 && strcmp(k, "key") != 0 &&
		    !(strcmp(k, "rolled_back") == 0 && json_is_true(v)))
			return false;
	return true;
}

/* A revision or name the journal hands the VCS: nothing an option or a
 * second line could be made of. */
static bool plain_name(const json_t *v)
{
	const char *s = json_string_value(v);
	return s && *s && s[0] != '-' && !strpbrk(s, "\n\r");
}

static bool commit_id(const json_t *v)
{
	const char *s = json_string_value(v);
	size_t n = s ? strlen(s) : 0;
	if (n != 40 && n != 64)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* A position() as the journal holds it: this VCS's, its ids commit ids (or
 * jj change ids: plain names), its branch a plain name. */
static bool position_ok(tt_repo *repo, const json_t *p)
{
	if (!p || json_is_null(p))
		return true;
	const char *kind = json_string_value(json_object_get(p, "kind"));
	if (!json_is_object(p) || !kind || strcmp(kind, tt_vcs_kind(repo->vcs)) != 0)
		return false;
	static const char *const fields[] = { "id", "commit", "parent", "branch" };
	for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++) {
		json_t *f = json_object_get(p, fields[i]);
		if (f && !json_is_null(f) && !plain_name(f))
			return false;
	}
	return !json_object_get(p, "commit") || json_is_null(json_object_get(p, "commit")) ||
	       commit_id(json_object_get(p, "commit"));
}

/* A working ref this dataset's `new` or fork made: tether.ws.<our id>.<name>. */
static bool our_working_ref(tt_repo *repo, const json_t *v)
{
	tt_ref_parts parts;
	const char *ref = json_string_value(v);
	if (!ref || strpbrk(ref, "\n\r") || !tt_working_ref_parts(ref, &parts))
		return false;
	bool ok = strcmp(parts.ds, repo->config.dataset_id) == 0;
	tt_ref_parts_release(&parts);
	return ok;
}

/*
 * What undo will hand the VCS, the stores and the files, checked before its
 * journal entry is written: a malformed or hostile entry (a hand-edited or
 * foreign ops.jsonl) is refused with nothing written.  *what names the
 * first field found wrong.
 */
static bool entry_usable(tt_repo *repo, const tt_op_entry *e, const char **what)
{
	const char *cmd = e->command;
	json_t *objs = json_object_get(e->pre, "objects"), *ws = json_object_get(e->pre, "workspace");
	*what = NULL;
	if (objs && !json_is_object(objs))
		*what = "pre.objects";
	const char *k;
	json_t *v;
	json_object_foreach(objs, k, v) {
		char *rel = NULL;
		tt_error ignored = TT_ERROR_INIT;
		if (!*what && ((!json_is_string(v) && !json_is_null(v)) || tt_key_relpath(&rel, k, &ignored) < 0))
			*what = "pre.objects (an object key or manifest text)";
		free(rel);
		tt_error_clear(&ignored);
	}
	if (!*what && ws && !json_is_null(ws)) {
		tt_workspace w = { 0 };
		tt_error ignored = TT_ERROR_INIT;
		if (!json_is_string(ws) ||
		    tt_workspace_parse(&w, json_string_value(ws), json_string_length(ws), "journal", &ignored) < 0)
			*what = "pre.workspace";
		else
			tt_workspace_release(&w);
		tt_error_clear(&ignored);
	}
	if (!*what && (strcmp(cmd, "commit") == 0 || strcmp(cmd, "pull") == 0)) {
		json_t *c = json_object_get(e->result, "vcs_commit");
		if (c && !json_is_null(c) && !commit_id(c))
			*what = "result.vcs_commit";
	}
	if (!*what && strcmp(cmd, "gc") == 0) {
		/* Listings come back by name, never by path. */
		size_t i;
		json_t *name;
		json_array_foreach(json_object_get(e->result, "deleted_listings"), i, name) {
			const char *n = json_string_value(name);
			if (!n || !*n || n[0] == '.' || strpbrk(n, "/\\\n\r"))
				*what = "result.deleted_listings";
		}
	}
	if (!*what && (strcmp(cmd, "new") == 0 || strcmp(cmd, "fork") == 0 || strcmp(cmd, "restore") == 0)) {
		json_t *made = json_object_get(e->result, "created_bookmark");
		if (!position_ok(repo, json_object_get(e->pre, "vcs")) || !position_ok(repo, json_object_get(e->result, "vcs")))
			*what = "the VCS position (pre.vcs or result.vcs)";
		else if (made && !json_is_null(made) && !plain_name(made))
			*what = "result.created_bookmark";
		else if (strcmp(cmd, "fork") == 0) {
			json_t *ref = json_object_get(e->result, "ref");
			if (ref && !our_working_ref(repo, ref))
				*what = "result.ref";
		} else {
			json_t *refs = json_object_get(e->result, "working_refs");
			static const char *const lists[] = { "created", "reset" };
			for (size_t l = 0; l < 2 && !*what; l++) {
				size_t i;
				json_t *key;
				json_array_foreach(json_object_get(e->result, lists[l]), i, key) {
					json_t *ref = json_object_get(refs, json_string_value(key) ? json_string_value(key) : "");
					if (ref && !our_working_ref(repo, ref))
						*what = "result.working_refs";
				}
			}
		}
	}
	return *what == NULL;
}

/* One undo: the journal, the entry it takes back, and what it reports. */
typedef struct undo_ctx {
	tt_repo *repo;
	const char *op_id;          /* borrowed: the entry named, NULL for the newest */
	bool discard;
	tt_oplog log;
	const tt_op_entry *target;  /* borrowed from log: the entry taken back */
	const tt_op_entry *resume;  /* borrowed from log: an interrupted undo this one finishes */
	undo_report r;
	char undo_id[TT_OP_ID_LEN + 1];
	bool nothing_restored;      /* refused: every effect irreversible */
} undo_ctx;

/* The entry to take back (u->target, NULL when there is none).  An undo
 * that was interrupted is finished first, under its own entry: the newest
 * entry but for repairs (which only rebuild what manifests already
 * promise), an undo that never finished, of an entry not undone. */
static void find_target(undo_ctx *u)
{
	const tt_oplog *log = &u->log;
	const char *op_id = u->op_id;
	for (size_t i = 0; i < log->count; i++) {
		const tt_op_entry *e = tt_oplog_newest(log, i);
		if (strcmp(e->command, "repair") == 0)
			continue;
		if (strcmp(e->command, "undo") == 0 && tt_op_incomplete(e) && json_is_string(e->undoes)) {
			const tt_op_entry *t = tt_oplog_find(log, json_string_value(e->undoes));
			if (t && !json_is_string(t->undone_by) && !tt_op_incomplete(t) &&
			    (!op_id || strcmp(op_id, e->id) == 0 || strcmp(op_id, t->id) == 0)) {
				u->resume = e;
				u->target = t;
			}
		}
		break;
	}
	for (size_t i = 0; i < log->count && !u->target; i++) {
		const tt_op_entry *e = tt_oplog_newest(log, i);
		/* By default a finished repair is passed over, as undos are, and
		 * so is a failed command that changed nothing. */
		if (!op_id && ((strcmp(e->command, "repair") == 0 && !tt_op_incomplete(e)) || changed_nothing(e)))
			continue;
		if (op_id ? strcmp(e->id, op_id) == 0 : (json_is_null(e->undoes) && !json_is_string(e->undone_by))) {
			u->target = e;
			break;
		}
	}
	u->r.resuming = u->resume != NULL;
}

/* Refused: a step of a drop, or an entry that never finished. */
static int refuse_unfinished(undo_ctx *u, tt_error *err)
{
	const tt_op_entry *target = u->target;
	int rc;
	if (json_is_string(target->parent)) {
		const tt_op_entry *parent = tt_oplog_find(&u->log, json_string_value(target->parent));
		char *how = parent && tt_op_incomplete(parent) ? tt_engine_interrupted_drop(u->repo, parent) : NULL;
		if (how)
			rc = tt_error_set(err, TT_ECONFIG, "%s (%s) is a step of %s", target->id, target->command, how);
		else
			rc = tt_error_set(err, TT_ECONFIG, "%s (%s) is a step of %s (a drop), which cannot be undone; the "
					  "VCS's own undo brings its commits and bookmark back, then `tether repair` its "
					  "branches and pins", target->id, target->command,
					  json_string_value(target->parent));
		free(how);
		return rc;
	}
	if (tt_op_incomplete(target) && strcmp(target->command, "drop") == 0) {
		char *how = tt_engine_interrupted_drop(u->repo, target);
		rc = how ? tt_error_set(err, TT_ECONFIG, "cannot undo %s", how) : tt_error_oom(err);
		free(how);
		return rc;
	}
	if (tt_op_incomplete(target)) {
		rc = tt_error_set(err, TT_ECONFIG, "%s (%s) never finished, so what it did is not known; "
				  "`tether verify` and `tether gc --dry-run` show what it left behind",
				  target->id, target->command);
		tt_error_hint(err, "rerunning the command finishes it");
		return rc;
	}
	return 0;
}

/* Refused: a command undo does not take back, one that changed nothing,
 * or (unless resuming) an entry malformed for what undo hands on. */
static int refuse_unhandled(undo_ctx *u, tt_error *err)
{
	static const char *const handled[] = { "commit", "pull", "new", "fork", "restore", "gc", "promote",
						"add", "remove", "set", "import" };
	const tt_op_entry *target = u->target;
	const char *op_id = u->op_id;
	int rc;
	bool known = false;
	for (size_t i = 0; i < sizeof handled / sizeof handled[0]; i++)
		known |= strcmp(target->command, handled[i]) == 0;
	if (!json_is_null(target->undoes) || !tt_op_undoable(target) || !known)
		return tt_error_set(err, TT_ECONFIG, "cannot undo '%s'%s%s%s", target->command,
				    op_id ? "" : " (", op_id ? "" : target->id,
				    op_id ? "" : ", the newest operation); `tether undo ID` names an older one, and takes "
						 "back only what nothing since has changed again");
	if (changed_nothing(target))
		return tt_error_set(err, TT_ECONFIG, "%s (%s) failed and changed nothing (%s); there is nothing to undo",
				    target->id, target->command,
				    json_string_value(json_object_get(target->result, "failed")));
	const char *bad = NULL;
	if (!u->resume && !entry_usable(u->repo, target, &bad)) {
		rc = tt_error_set(err, TT_ECONFIG, "cannot undo %s (%s): its journal entry is malformed (%s); nothing "
				  "was changed", target->id, target->command, bad);
		tt_error_hint(err, "`tether ops --json` shows the entry; .tether/ops.jsonl is tether's own file, "
			      "not for editing");
		return rc;
	}
	return 0;
}

/* Whether the target can be undone at all, checked before anything is
 * written. */
static int check_target(undo_ctx *u, tt_error *err)
{
	int rc;
	if (!u->target)
		return u->op_id ? tt_error_set(err, TT_ECONFIG, "no operation '%s' in this workspace's log", u->op_id)
				: tt_error_set(err, TT_ECONFIG, "nothing to undo");
	if (u->op_id && json_is_string(u->target->undone_by))
		return tt_error_set(err, TT_ECONFIG, "%s was already undone by %s", u->op_id,
				    json_string_value(u->target->undone_by));
	if ((rc = refuse_unfinished(u, err)) < 0)
		return rc;
	return refuse_unhandled(u, err);
}

/* The undo's journal entry, with the workspace as it is (an interrupted
 * undo goes on under its own). */
static int journal_undo(undo_ctx *u, tt_error *err)
{
	json_t *pre = NULL, *wstext = NULL;
	tt_buf wb = TT_BUF_INIT;
	int rc;
	if ((rc = tt_workspace_render(&wb, &u->repo->ws, err)) == 0)
		wstext = json_stringn(wb.ptr, wb.len);
	tt_buf_release(&wb);
	if (rc < 0)
		return rc;
	pre = json_pack("{s:O,s:s}", "workspace", wstext, "target", u->target->id);
	if (u->resume)
		snprintf(u->undo_id, sizeof u->undo_id, "%s", u->resume->id);
	else
		rc = tt_oplog_begin_ex(u->repo->root, "undo", NULL, pre, u->target->id, NULL, u->undo_id, err);
	json_decref(pre);
	json_decref(wstext);
	if (rc < 0)
		return rc;
	tt_fault("undo:after-journal");
	return 0;
}

/* How the commit's uncommit went, as a line of the report. */
static void report_uncommit(undo_ctx *u, const char *commit, bool did, bool already, bool built_on)
{
	char *m;
	if (built_on)
		return; /* reported already */
	if (already) {
		m = tt_asprintf("%.12s was already uncommitted (the working copy is on its parent, "
				"its manifests working-tree changes; pins kept)", commit);
		json_array_append_new(u->r.restored, json_string(m ? m : ""));
	} else if (did) {
		m = tt_asprintf("uncommitted %.12s; its manifests are working-tree changes again "
				"(pins kept)", commit);
		json_array_append_new(u->r.restored, json_string(m ? m : ""));
	} else {
		m = tt_engine_vcs_is_jj(u->repo)
			    ? tt_asprintf("commit %.12s is no longer the working copy's parent; take it "
					  "back in jj first (`jj undo` reverts jj's last operation)", commit)
			    : tt_asprintf("commit %.12s is no longer the working copy's parent; uncommit "
					  "it with jj/git first", commit);
		json_array_append_new(u->r.irreversible, json_string(m ? m : ""));
	}
	free(m);
}

/* add/remove/set/import, and a commit made without the VCS: the
 * manifests and the workspace back. */
static int undo_manifests(undo_ctx *u, tt_error *err)
{
	int rc;
	if ((rc = restore_manifests(u->repo, json_object_get(u->target->pre, "objects"), &u->r, err)) < 0 ||
	    (rc = restore_workspace(u->repo, &u->log, u->target, &u->r, err)) < 0)
		return rc;
	return 0;
}

/* commit/pull: uncommit its VCS commit (pins stay), unless other commits
 * build on it (jj) or the working copy has moved off it. */
static int undo_commit(undo_ctx *u, tt_error *err)
{
	const char *commit = json_string_value(json_object_get(u->target->result, "vcs_commit"));
	bool did = false, already = false, built_on = false;
	int rc;
	if (!commit)
		return undo_manifests(u, err);
	rc = tt_vcs_uncommit(u->repo->vcs, commit, &did, err);
	if (rc == TT_ECONFLICT) {
		/* Other commits are built on it (jj): left as it is. */
		json_array_append_new(u->r.irreversible, json_string(tt_error_text(err)));
		tt_error_clear(err);
		rc = 0;
		built_on = true;
	}
	if (rc < 0 || (!did && !built_on && (rc = already_uncommitted(u->repo, commit, &already, err)) < 0))
		return rc;
	if (did)
		tt_fault("undo:after-uncommit");
	report_uncommit(u, commit, did, already, built_on);
	return 0;
}

/* The working branches new/restore created or reset (fork: its one), by
 * key. */
static void branches_made(const tt_op_entry *target, json_t *created, json_t *reset)
{
	json_t *res = target->result;
	if (strcmp(target->command, "fork") == 0) {
		const char *k = json_string_value(json_object_get(res, "key"));
		const char *ref = json_string_value(json_object_get(res, "ref"));
		bool existed = json_object_get(json_object_get(target->pre, "heads"), k ? k : "") != NULL;
		if (k && ref)
			json_object_set_new(existed ? reset : created, k, json_string(ref));
		return;
	}
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

/* The working copy back to before (vcs_back), or reported as already back
 * (an interrupted undo returned it) or as moved on since.  Manifests the
 * returned working copy holds that cannot be read stop the undo there,
 * its entry left to the rerun that finishes it. */
static int return_working_copy(undo_ctx *u, json_t *before, const json_t *now, bool moved_vcs, bool vcs_back,
			       tt_error *err)
{
	int rc;
	if (vcs_back) {
		if ((rc = tt_vcs_goto_position(u->repo->vcs, before, err)) < 0)
			return rc;
		tt_fault("undo:after-vcs");
		json_array_append_new(u->r.restored, json_string("VCS working copy back where it was"));
		tt_manifest_set fresh;
		if ((rc = tt_manifests_load(&fresh, u->repo->root, err)) < 0) {
			/* (any hint of the manifest's own stays) */
			tt_error_prefix(err, "undo of %s stopped with the VCS working copy back where it was: its "
					"manifests cannot be read (fix that, then `tether undo` again finishes it)",
					u->target->id);
			return rc;
		}
		tt_manifests_release(&u->repo->objects);
		u->repo->objects = fresh;
	} else if (moved_vcs && u->r.resuming && same_field(now, before, "id") && same_field(now, before, "branch")) {
		/* The interrupted undo had returned it already. */
		json_array_append_new(u->r.restored, json_string("VCS working copy back where it was"));
	} else if (moved_vcs) {
		json_array_append_new(u->r.skipped, json_string("VCS working copy has moved since; not returning it"));
	}
	return 0;
}

/* The bookmark `new -b` made goes while it is still where `new` left it,
 * wherever the checkout went since (tether-vcs's rule). */
static void delete_made_bookmark(undo_ctx *u, const char *made, const json_t *after, tt_error *err)
{
	json_t *marks = NULL;
	if (tt_vcs_bookmarks(u->repo->vcs, &marks, err) == 0) {
		const char *at = json_string_value(json_object_get(marks, made));
		/* jj: the bookmark went on @'s parent */
		const char *was = json_string_value(json_object_get(after, "parent"));
		if (!was)
			was = json_string_value(json_object_get(after, "commit"));
		if (at && was && strcmp(at, was) == 0 && tt_vcs_bookmark_delete(u->repo->vcs, made, err) == 0)
			add_line(u->r.restored, "bookmark %s deleted", made);
		else if (at)
			add_line(u->r.skipped, "bookmark %s has moved since; kept", made);
	}
	json_decref(marks);
	tt_error_clear(err);
}

/* new/fork/restore: delete the branches it made, return the working copy
 * (if it is still where `new` left it, on the bookmark `new` left this
 * checkout on) and the workspace, delete a bookmark -b made. */
static int undo_new(undo_ctx *u, tt_error *err)
{
	tt_repo *repo = u->repo;
	const tt_op_entry *target = u->target;
	json_t *created = json_object(), *reset = json_object();
	json_t *res = target->result, *now = NULL;
	char *bm_before = NULL, *bm_after = NULL, *kept = NULL;
	int rc = 0;
	branches_made(target, created, reset);
	json_t *before = json_object_get(target->pre, "vcs"), *after = json_object_get(res, "vcs");
	const char *made = json_string_value(json_object_get(res, "created_bookmark"));
	json_t *ctx = json_object_get(target->plan, "context");
	bool moved_vcs = strcmp(target->command, "fork") != 0 &&
			 (json_is_string(json_object_get(ctx, "rev")) || made) && json_is_object(before) &&
			 json_is_object(after);
	bool vcs_back = false;
	if (moved_vcs && (rc = tt_vcs_position(repo->vcs, &now, err)) < 0)
		goto out;
	kept = bookmark_kept(repo, &u->log, target, false, &bm_before, &bm_after);
	vcs_back = moved_vcs && same_field(now, after, "id") && same_field(now, after, "branch") &&
		   (!json_is_string(json_object_get(target->pre, "workspace")) ||
		    same_bookmark(repo->ws.bookmark, bm_after));
	free(kept);
	kept = bookmark_kept(repo, &u->log, target, vcs_back, NULL, NULL);
	if (kept && !u->r.resuming && json_is_string(json_object_get(target->pre, "workspace")) &&
	    same_bookmark(repo->ws.bookmark, bm_after)) {
		/* Still on the bookmark this `new` put it on, and unable to
		 * leave it: its branches are the ones the checkout writes
		 * through, and nothing else is left to undo. */
		rc = tt_error_set(err, TT_ECONFIG, "cannot undo %s (new): %s, and this checkout still works on "
				  "%s; `tether new %s` leaves it (its branches stay until `gc --prune-bookmarks`)",
				  target->id, kept, bm_after ? bm_after : "None", bm_before ? bm_before : "None");
		goto out;
	}
	if ((rc = undo_branches(repo, &u->log, target, &u->r, u->discard, created, reset, err)) < 0 ||
	    (rc = return_working_copy(u, before, now, moved_vcs, vcs_back, err)) < 0 ||
	    (rc = restore_workspace(repo, &u->log, target, &u->r, err)) < 0)
		goto out;
	if (made && json_is_object(after))
		delete_made_bookmark(u, made, after, err);
	/* Every effect a reset: undone as far as it can be, and marked so. */
	if (!json_array_size(u->r.restored) && json_array_size(u->r.irreversible))
		add_line(u->r.skipped, "nothing else of this %s is reversible", target->command);
out:
	json_decref(now);
	json_decref(created);
	json_decref(reset);
	free(kept);
	free(bm_before);
	free(bm_after);
	return rc;
}

/* What gc deleted that cannot come back: working branches (repair
 * recreates them from the manifests), pins, and stores it created. */
static void report_gc_deleted(undo_ctx *u)
{
	json_t *res = u->target->result;
	json_t *branches = json_array();
	size_t n = 0, i;
	const char *k;
	json_t *v, *x;
	json_object_foreach(json_object_get(res, "deleted_working_refs"), k, v)
		json_array_foreach(v, i, x) if (json_is_string(x)) json_array_append(branches, x);
	sort_json_strings(branches);
	if (json_array_size(branches)) {
		/* A branch gc judged dead is not recreated from a recorded
		 * head: `repair` recreates a bookmark's branches from what
		 * the manifests say. */
		tt_buf names = TT_BUF_INIT;
		json_array_foreach(branches, i, x)
			if (i < 3)
				tt_buf_printf(&names, "%s%s", i ? ", " : "", json_string_value(x));
		add_line(u->r.irreversible, "%zu branch(es) deleted (%s%s); `tether repair` recreates a bookmark's "
			 "branches from its manifests", json_array_size(branches), names.ptr,
			 json_array_size(branches) > 3 ? ", ..." : "");
		tt_buf_release(&names);
	}
	json_decref(branches);
	json_object_foreach(json_object_get(res, "unpinned"), k, v) n += json_array_size(v);
	if (n)
		add_line(u->r.irreversible, "%zu pin(s) deleted; if a manifest references them again, `tether "
			 "repair` recreates them while the state is still reachable", n);
	json_t *stores = json_object_get(res, "deleted_stores");
	json_t *skeys = json_array();
	json_object_foreach(stores, k, v) json_array_append_new(skeys, json_string(k));
	sort_json_strings(skeys);
	json_array_foreach(skeys, i, x) {
		const char *where = json_string_value(json_object_get(stores, json_string_value(x)));
		add_line(u->r.irreversible, "%s: the created store at %s was deleted; nothing referenced it and it "
			 "held only tether's own refs", json_string_value(x), where ? where : "None");
	}
	json_decref(skeys);
}

/* gc: listings come back from the VCS, and the workspace; the rest is
 * reported. */
static int undo_gc(undo_ctx *u, tt_error *err)
{
	size_t i;
	json_t *x;
	int rc;
	report_gc_deleted(u);
	json_array_foreach(json_object_get(u->target->result, "deleted_listings"), i, x) {
		if ((rc = restore_listing(u->repo, json_string_value(x), &u->r, err)) < 0)
			return rc;
	}
	if ((rc = restore_workspace(u->repo, &u->log, u->target, &u->r, err)) < 0)
		return rc;
	if (!json_array_size(u->r.restored))
		json_array_append_new(u->r.skipped, json_string("nothing else of this gc is reversible"));
	return 0;
}

/* promote: refused, with the base heads it moved. */
static void undo_promote(undo_ctx *u)
{
	const tt_op_entry *target = u->target;
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
		json_array_append_new(u->r.irreversible, json_string(m ? m : ""));
		free(m);
		tt_buf_release(&a);
		tt_buf_release(&b);
	}
	if (!json_object_size(moved))
		json_array_append_new(u->r.skipped, json_string("promote moved nothing"));
	json_decref(moved);
}

/* Take back what the target did, by its command. */
static int undo_target(undo_ctx *u, tt_error *err)
{
	const char *cmd = u->target->command;
	if (strcmp(cmd, "commit") == 0 || strcmp(cmd, "pull") == 0)
		return undo_commit(u, err);
	if (strcmp(cmd, "add") == 0 || strcmp(cmd, "remove") == 0 || strcmp(cmd, "set") == 0 ||
	    strcmp(cmd, "import") == 0) {
		int rc = undo_manifests(u, err);
		/* `add --create` made a store: removed again while still empty. */
		if (rc >= 0 && strcmp(cmd, "add") == 0)
			tt_engine_undo_created(u->repo, u->target->result, u->r.restored, u->r.irreversible);
		return rc;
	}
	if (strcmp(cmd, "new") == 0 || strcmp(cmd, "fork") == 0 || strcmp(cmd, "restore") == 0)
		return undo_new(u, err);
	if (strcmp(cmd, "gc") == 0)
		return undo_gc(u, err);
	if (strcmp(cmd, "promote") == 0)
		undo_promote(u);
	return 0;
}

/* Refused after all when every effect is irreversible: nothing restored,
 * nothing skipped. */
static int refuse_irreversible(undo_ctx *u, tt_error *err)
{
	if (json_array_size(u->r.restored) || json_array_size(u->r.skipped) || !json_array_size(u->r.irreversible))
		return 0;
	tt_buf lines = TT_BUF_INIT;
	size_t i;
	json_t *l;
	int rc;
	json_array_foreach(u->r.irreversible, i, l)
		tt_buf_printf(&lines, "\n  %s", json_string_value(l));
	rc = tt_error_set(err, TT_ECONFIG, "cannot undo %s (%s):%s", u->target->id, u->target->command, lines.ptr);
	tt_buf_release(&lines);
	u->nothing_restored = true;
	return rc;
}

/* The undo's entry done, marking the target undone; the report. */
static int finish_undo(undo_ctx *u, json_t **out, tt_error *err)
{
	const tt_op_entry *target = u->target;
	char *summary = tt_op_summary(target);
	char *sline = tt_asprintf("%s %s", target->command, summary ? summary : "");
	json_t *result = json_pack("{s:s,s:O,s:O,s:O}", "summary", sline ? sline : "", "restored", u->r.restored,
				   "irreversible", u->r.irreversible, "skipped", u->r.skipped);
	int rc;
	free(sline);
	rc = tt_oplog_done(u->repo->root, u->undo_id, result, NULL, target->id, err);
	json_decref(result);
	if (rc == 0)
		*out = json_pack("{s:s,s:s,s:s,s:s,s:O,s:O,s:O}", "undone", target->id, "command", target->command,
				 "summary", summary ? summary : "", "undo_id", u->undo_id, "restored", u->r.restored,
				 "irreversible", u->r.irreversible, "skipped", u->r.skipped);
	free(summary);
	return rc;
}

/* A failure before anything was restored is a failed attempt, not an
 * interrupted one: its entry is closed with the full report, as tether-vcs
 * journals a refused undo. */
static void journal_failed(undo_ctx *u, tt_error *err)
{
	if (json_array_size(u->r.restored))
		return;
	tt_error ignored = TT_ERROR_INIT;
	char *fsum = tt_op_summary(u->target);
	char *fline = tt_asprintf("%s %s", u->target->command, fsum ? fsum : "");
	json_t *f = json_pack("{s:s,s:O,s:O,s:O,s:s}", "summary", fline ? fline : "", "restored", u->r.restored,
			      "irreversible", u->r.irreversible, "skipped", u->r.skipped, "failed",
			      u->nothing_restored ? "nothing restored" : tt_error_text(err));
	free(fsum);
	free(fline);
	tt_oplog_done(u->repo->root, u->undo_id, f, NULL, NULL, &ignored);
	json_decref(f);
	tt_error_clear(&ignored);
}

int tt_repo_undo(tt_repo *repo, const char *op_id, bool discard, json_t **out, tt_error *err)
{
	undo_ctx u = { .repo = repo, .op_id = op_id, .discard = discard, .log = TT_OPLOG_INIT,
		       .r = { json_array(), json_array(), json_array(), false } };
	tt_lock rlock = TT_LOCK_INIT;
	int rc;
	*out = NULL;
	if ((rc = tt_repo_lock(repo, err)) < 0)
		goto cleanup;
	if ((rc = tt_engine_repo_lock(repo, &rlock, err)) < 0 || (rc = tt_oplog_read(repo->root, &u.log, err)) < 0)
		goto done;
	find_target(&u);
	if ((rc = check_target(&u, err)) < 0 || (rc = journal_undo(&u, err)) < 0)
		goto done;
	if ((rc = undo_target(&u, err)) < 0 || (rc = refuse_irreversible(&u, err)) < 0) {
		journal_failed(&u, err);
		goto done;
	}
	tt_fault("undo:after-restore");
	rc = finish_undo(&u, out, err);
done:
	tt_lock_release(&rlock);
	tt_repo_unlock(repo);
cleanup:
	tt_oplog_free(&u.log);
	json_decref(u.r.restored);
	json_decref(u.r.irreversible);
	json_decref(u.r.skipped);
	return rc;
}
