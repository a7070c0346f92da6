/*
 * engine/cmd/fork.c - `new` (which bookmark this checkout works on, and a
 * working branch per forkable object off its pin) and `open` (a native
 * handle; a writable open creates the deferred branch first).
 *
 * On the trunk bookmark every forkable object writes its upstream branch
 * directly.  Elsewhere its working ref is tether.ws.<dataset8>.<bookmark>,
 * forked from the pin - lazily on the first writable open by default, or
 * during `new` with --eager; `pin = "record"` objects fork at once, since
 * only a branch keeps their recorded state from expiring.  A branch holding
 * writes no commit pinned is never reset without --discard.
 *
 * An interrupted or partial `new` is finished by running it again: a
 * `new -b X` that made X resumes on it (resuming_new), and a fork killed
 * half-way has its leftover cleared first (interrupted_fork_of).
 */
#include "engine/cmd/fork.h"

#include <stdlib.h>
#include <string.h>

#include "backends/dispatch.h"
#include "backends/kit.h"
#include "core/ids.h"
#include "core/index.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/kernel/checkouts.h"
#include "engine/kernel/context.h"
#include "engine/kernel/keyhint.h"
#include "engine/kernel/preconditions.h"
#include "engine/kernel/progress.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/state.h"
#include "engine/kernel/planned.h"
#include "storage/open.h"
#include "util/fault.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

static bool same_state(const tt_manifest *m, const json_t *a, const json_t *b)
{
	return a && b && tt_engine_same(m, a, b);
}

/* The pin (or recorded state) a committed object is read or forked from,
 * checked first: a drifted pin is refused, a missing one falls back to the
 * recorded state where the kind can address it. */
int tt_engine_pinned_source(tt_repo *repo, const tt_manifest *m, tt_backend *b, tt_pin *pin,
			    tt_target *t, tt_error *err)
{
	unsigned caps = tt_engine_caps(repo, m);
	if (!m->pin_id) {
		if (!(caps & TT_CAP_ADDRESSABLE)) {
			tt_error_set(err, TT_ECAPABILITY, "'%s' has no pin and %s cannot address a recorded "
				     "state", m->key, m->kind);
			return tt_error_object(err, m->key, m->kind);
		}
		*t = (tt_target){ .kind = TT_TARGET_STATE, .state = m->state };
		return 0;
	}
	memset(pin, 0, sizeof *pin);
	snprintf(pin->id, sizeof pin->id, "%s", m->pin_id);
	snprintf(pin->ref, sizeof pin->ref, "%s", m->pin_ref);
	tt_verify_status st = TT_VERIFY_UNKNOWN;
	char *msg = NULL;
	int rc = tt_backend_has(b, verify) ? tt_backend_verify(b, m->locator, m->state, pin, false, &st, &msg, err) : 0;
	if (rc < 0) {
		free(msg);
		return tt_error_object(err, m->key, m->kind);
	}
	if (st == TT_VERIFY_DRIFTED) {
		rc = tt_error_set(err, TT_EPINDRIFT, "pin %s of '%s' no longer names the committed state (%s)",
				  m->pin_ref, m->key, msg ? msg : "");
		tt_error_hint(err, "`tether verify` reports it and `repair` never overwrites a drifted pin: "
				   "move the ref back by hand, or use a commit whose pins hold");
		free(msg);
		return tt_error_object(err, m->key, m->kind);
	}
	if (st == TT_VERIFY_MISSING) {
		if (caps & TT_CAP_ADDRESSABLE) {
			free(msg);
			*t = (tt_target){ .kind = TT_TARGET_STATE, .state = m->state };
			return 0;
		}
		rc = tt_error_set(err, TT_EBACKEND, "pin missing: %s", msg ? msg : "");
		free(msg);
		return tt_error_object(err, m->key, m->kind);
	}
	free(msg);
	*t = (tt_target){ .kind = TT_TARGET_PIN, .pin = pin };
	return 0;
}

/* How many sibling names of a working branch a rerun checks for what its
 * killed run left (more siblings than this mean a bookmark re-forked that
 * often while pins held every earlier branch). */
#define TT_FORK_SIBLINGS_CLEARED 16

/* This checkout's journal holds an earlier operation that set out to fork
 * `name` for key and never finished: files of that name without its ref are
 * what it left when it was killed.  Every caller has journaled its own
 * operation before it forks (under the checkout lock), so the newest entry
 * is the running one and is not counted. */
static bool interrupted_fork_of(tt_repo *repo, const char *key, const char *name)
{
	tt_oplog log = TT_OPLOG_INIT;
	tt_error ignored = TT_ERROR_INIT;
	bool found = false;
	if (tt_oplog_read(repo->root, &log, &ignored) < 0) {
		tt_error_clear(&ignored);
		return false;
	}
	for (size_t i = 0; i + 1 < log.count && !found; i++) {
		const tt_op_entry *e = &log.entries[i];
		if (!tt_op_incomplete(e) || !e->command)
			continue;
		if (strcmp(e->command, "fork") == 0) {
			/* A writable open's lazy fork: of what the workspace has pending. */
			const char *p = json_string_value(json_object_get(repo->ws.pending_forks, key));
			found = p && strcmp(p, name) == 0;
			continue;
		}
		if (strcmp(e->command, "new") != 0 && strcmp(e->command, "restore") != 0)
			continue;
		size_t k;
		json_t *a;
		json_array_foreach(json_object_get(e->plan, "actions"), k, a) {
			const char *op = json_string_value(json_object_get(a, "op"));
			const char *ak = json_string_value(json_object_get(a, "key"));
			const char *at = json_string_value(json_object_get(a, "target"));
			if (op && ak && at && strcmp(op, "fork") == 0 && strcmp(ak, key) == 0 &&
			    strcmp(at, name) == 0)
				found = true;
		}
	}
	tt_oplog_free(&log);
	return found;
}

/* A sibling `sib` the killed run forked completely (its ref exists) is the
 * fork it set out to make when its head is still the state forked from and
 * nothing else speaks for it: no working ref or pending fork of this
 * checkout, and no other checkout on the bookmark.  It is taken over
 * (*ref_out set) instead of forking one more sibling beside it, which no
 * working ref would ever name again. */
static int adopt_sibling(tt_repo *repo, const tt_manifest *m, tt_backend *b, const char *sib, char **ref_out,
			 tt_error *err)
{
	json_t *refs = NULL, *head = NULL, *holders = NULL;
	tt_error ignored = TT_ERROR_INIT;
	bool spoken;
	(void)err;
	if (tt_backend_list_working_refs(b, m->locator, &refs, &ignored) < 0)
		goto done;
	if (!tt_json_has_string(refs, sib))
		goto done;
	spoken = tt_json_has_string(repo->ws.working_refs, sib) || tt_json_has_string(repo->ws.pending_forks, sib);
	if (spoken || tt_engine_bookmark_holders(repo, repo->ws.bookmark, &holders, &ignored) < 0 ||
	    json_array_size(holders) > 0)
		goto done;
	if (tt_backend_fingerprint(b, m->locator, sib, &head, &ignored) == 0 && tt_engine_same(m, head, m->state))
		*ref_out = tt_strdup(sib);
done:
	tt_error_clear(&ignored);
	json_decref(refs);
	json_decref(head);
	json_decref(holders);
	return 0;
}

/* Fork branch `name` for m from its pin, moving it only from expected. */
int tt_engine_fork_from_manifest(tt_repo *repo, const tt_manifest *m, const char *name,
				 const tt_expect *expected, char **ref_out, tt_error *err)
{
	tt_backend *b;
	tt_pin pin;
	tt_target src;
	int rc;
	*ref_out = NULL;
	if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0 ||
	    (rc = tt_engine_pinned_source(repo, m, b, &pin, &src, err)) < 0)
		return rc;
	if (!tt_backend_has(b, fork)) {
		tt_error_set(err, TT_ECAPABILITY, "%s backend cannot fork", m->kind);
		return tt_error_object(err, m->key, m->kind);
	}
	if (src.kind == TT_TARGET_STATE && m->pin_id == NULL && tt_backend_has(b, verify)) {
		/* No pin: the recorded state is the fork point while the store has it. */
		tt_verify_status st = TT_VERIFY_UNKNOWN;
		char *msg = NULL;
		if (tt_backend_verify(b, m->locator, m->state, NULL, true, &st, &msg, err) == 0 &&
		    st == TT_VERIFY_MISSING) {
			rc = tt_error_set(err, TT_EBACKEND, "recorded state is gone: %s", msg ? msg : "");
			free(msg);
			return tt_error_object(err, m->key, m->kind);
		}
		free(msg);
		tt_error_clear(err);
	}
	if (tt_backend_has(b, clear_partial_fork) && expected && interrupted_fork_of(repo, m->key, name)) {
		/* Finish what the killed run began: its leftover goes, the fork
		 * is made again.  A reset of a branch that pins hold forks a
		 * sibling (name.2, name.3, ...) instead, so the killed run may have
		 * left one of those: a backend clears only a name that has no ref
		 * and holds no more than one half-written version. */
		bool cleared = false;
		if (expected->kind == TT_EXPECT_ABSENT &&
		    (rc = tt_backend_clear_partial_fork(b, m->locator, name, &cleared, err)) < 0)
			return tt_error_object(err, m->key, m->kind);
		for (unsigned n = 2; n <= TT_FORK_SIBLINGS_CLEARED; n++) {
			char *sib = tt_asprintf("%s.%u", name, n);
			if (!sib)
				return tt_error_oom(err);
			rc = tt_backend_clear_partial_fork(b, m->locator, sib, &cleared, err);
			if (rc == 0 && !cleared && m->state)
				rc = adopt_sibling(repo, m, b, sib, ref_out, err);
			free(sib);
			if (rc < 0)
				return tt_error_object(err, m->key, m->kind);
			if (*ref_out)
				goto forked;
		}
	}
	if ((rc = tt_backend_fork(b, m->locator, &src, name, expected, ref_out, err)) < 0)
		return tt_error_object(err, m->key, m->kind);
forked:;
	json_t *identity = NULL;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_backend_identity(b, m->locator, &identity, &ignored) == 0)
		tt_index_note_touched(repo->vcs->shared_dir, repo->config.dataset_id, m->kind, identity,
				      m->locator, m->key, &ignored);
	json_decref(identity);
	tt_error_clear(&ignored);
	return 0;
}

/* Sort a JSON array of strings in place (byte order, as Python sorts). */
static void sort_strings(json_t *arr)
{
	size_t n = json_array_size(arr);
	for (size_t i = 1; i < n; i++)
		for (size_t j = i; j > 0; j--) {
			json_t *a = json_array_get(arr, j - 1), *b = json_array_get(arr, j);
			if (strcmp(json_string_value(a), json_string_value(b)) <= 0)
				break;
			json_incref(a);
			json_array_set(arr, j - 1, b);
			json_array_set_new(arr, j, a);
		}
}

static bool list_has(const json_t *list, const char *s)
{
	size_t i;
	json_t *v;
	json_array_foreach((json_t *)list, i, v)
		if (strcmp(json_string_value(v), s) == 0)
			return true;
	return false;
}

/* A bookmark name a store would take for a sibling generation ("x.2"). */
static bool generation_suffix(const char *name)
{
	const char *dot = strrchr(name, '.');
	if (!dot || !dot[1] || dot == name)
		return false;
	for (const char *p = dot + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return false;
	return true;
}

/* --- plan ------------------------------------------------------------------ */

/* `new -b bookmark [rev]` run again after it created the bookmark and then
 * was killed or could not fork every object: the checkout is still on the
 * bookmark it made, at the commit it made it at, so the rerun finishes that
 * `new` rather than refuse the bookmark as someone else's. */
static int resuming_new(tt_repo *repo, const char *bookmark, const json_t *known, const char *resolved,
			bool *yes, tt_error *err)
{
	tt_oplog log = TT_OPLOG_INIT;
	char *here = NULL;
	int rc;
	*yes = false;
	/* The workspace may still name the bookmark it left: a kill between
	 * the switch and the workspace write (only an interrupted `new`, not a
	 * partial one, which wrote its workspace). */
	bool ws_on_it = repo->ws.bookmark && strcmp(repo->ws.bookmark, bookmark) == 0;
	if ((rc = tt_vcs_current_bookmark(repo->vcs, &here, err)) < 0)
		return rc;
	bool on_it = here && strcmp(here, bookmark) == 0;
	free(here);
	if (!on_it)
		return 0;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_oplog_read(repo->root, &log, &ignored) < 0) {
		tt_error_clear(&ignored);
		return 0;
	}
	for (size_t i = 0;; i++) {
		const tt_op_entry *e = tt_oplog_newest(&log, i);
		if (!e)
			break;
		if (!e->command || strcmp(e->command, "new") != 0 || json_is_string(e->undone_by))
			continue;
		/* The newest `new`s, unfinished, on this bookmark: back to the one
		 * that made it (earlier reruns may have stopped short too). */
		json_t *ctx = json_object_get(e->plan, "context");
		const char *bm = json_string_value(json_object_get(ctx, "bookmark"));
		json_t *failed = json_object_get(e->result, "failed");
		bool unfinished = tt_op_incomplete(e) || json_is_string(failed) || json_array_size(failed);
		if (!bm || strcmp(bm, bookmark) != 0 || !unfinished)
			break;
		if (!json_is_true(json_object_get(ctx, "create")))
			continue;
		if (!ws_on_it && !tt_op_incomplete(e))
			break;
		const char *made_at = resolved;
		if (!tt_op_incomplete(e) && json_is_string(json_object_get(json_object_get(e->result, "vcs"), "id")))
			made_at = json_string_value(json_object_get(json_object_get(e->result, "vcs"), "id"));
		else if (!made_at)
			made_at = json_string_value(json_object_get(json_object_get(e->pre, "vcs"), "id"));
		const char *now = json_string_value(json_object_get(known, bookmark));
		*yes = made_at && now && strcmp(made_at, now) == 0;
		break;
	}
	tt_oplog_free(&log);
	return 0;
}

/*
 * `new -b bookmark` run again after a failed run made the bookmark and could
 * neither move the working copy onto it nor take it back (a read-only .git:
 * the branch made, HEAD not movable, the branch not deletable): its journal
 * entry names the bookmark and where it stood.  While the bookmark is still
 * there, and this checkout not on it, the rerun joins it, which finishes
 * that `new`.
 */
static int stranded_bookmark(tt_repo *repo, const char *bookmark, bool *yes, tt_error *err)
{
	tt_oplog log = TT_OPLOG_INIT;
	json_t *known = NULL;
	char *here = NULL;
	int rc;
	*yes = false;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &known, err)) < 0)
		return rc;
	const char *now = json_string_value(json_object_get(known, bookmark));
	if (!now || (rc = tt_vcs_current_bookmark(repo->vcs, &here, err)) < 0 || (here && strcmp(here, bookmark) == 0))
		goto done;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_oplog_read(repo->root, &log, &ignored) < 0) {
		tt_error_clear(&ignored);
		goto done;
	}
	for (size_t i = 0;; i++) {
		const tt_op_entry *e = tt_oplog_newest(&log, i);
		if (!e)
			break;
		if (!e->command || strcmp(e->command, "new") != 0 || json_is_string(e->undone_by))
			continue;
		const char *made = json_string_value(json_object_get(e->result, "created_bookmark"));
		const char *at = json_string_value(json_object_get(e->result, "bookmark_at"));
		*yes = json_is_string(json_object_get(e->result, "failed")) && made && strcmp(made, bookmark) == 0 &&
		       at && strcmp(at, now) == 0;
		break;
	}
done:
	tt_oplog_free(&log);
	json_decref(known);
	free(here);
	return rc;
}

/* new --adopt for one object: this dataset's branch for bookmark in its
 * store, taken as it is (the highest generation where the store made
 * siblings), or a refusal when the store cannot say.  1: an action was
 * planned; 0: no such branch (fork as usual). */
static long adopt_generation(const char *ref)
{
	const char *dot = strrchr(ref, '.');
	if (!dot || !dot[1] || strncmp(ref, TT_WORKING_REF_PREFIX, strlen(TT_WORKING_REF_PREFIX)) != 0)
		return 0;
	for (const char *p = dot + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return strtol(dot + 1, NULL, 10);
}

static int plan_adopt(tt_repo *repo, tt_plan *plan, const tt_manifest *m, tt_backend *b, const char *bookmark,
		      tt_error *err)
{
	json_t *refs = NULL, *found = json_array(), *full = NULL, *head = NULL, *params = NULL;
	char *slug = NULL, *wanted = NULL;
	tt_error lerr = TT_ERROR_INIT;
	tt_buf d = TT_BUF_INIT, hs = TT_BUF_INIT;
	int rc = 0;
	if (!found || (rc = tt_bookmark_slug(&slug, bookmark, err)) < 0 ||
	    (rc = tt_working_ref_name(&wanted, repo->config.dataset_id, bookmark, err)) < 0)
		goto done;
	if (!tt_backend_has(b, list_working_refs) || tt_backend_list_working_refs(b, m->locator, &refs, &lerr) < 0) {
		tt_buf_printf(&d, "could not list branches (%s); whether %s's branch exists is unknown, so there is nothing "
				  "to adopt or fork", lerr.code ? tt_error_text(&lerr) : "cannot list", bookmark);
		rc = tt_plan_action(plan, "refuse", m->key, m->kind, wanted, d.ptr, NULL, err);
		rc = rc < 0 ? rc : 1;
		goto done;
	}
	/* this dataset's branches of the bookmark: the name, or name.<n> */
	size_t i, wl = strlen(wanted);
	json_t *r;
	json_array_foreach(refs, i, r) {
		const char *ref = json_string_value(r);
		if (!ref || strncmp(ref, wanted, wl) != 0)
			continue;
		if (ref[wl] == '\0' || (ref[wl] == '.' && adopt_generation(ref) > 0 && !strchr(ref + wl + 1, '.')))
			json_array_append(found, r);
	}
	if (!json_array_size(found))
		goto done;
	/* stable sort by generation (none = 1) */
	for (size_t a2 = 1; a2 < json_array_size(found); a2++)
		for (size_t c = a2; c > 0; c--) {
			long g1 = adopt_generation(json_string_value(json_array_get(found, c - 1)));
			long g2 = adopt_generation(json_string_value(json_array_get(found, c)));
			if ((g1 ? g1 : 1) <= (g2 ? g2 : 1))
				break;
			json_t *t = json_incref(json_array_get(found, c));
			json_array_set(found, c, json_array_get(found, c - 1));
			json_array_set_new(found, c - 1, t);
		}
	const char *ref = json_string_value(json_array_get(found, json_array_size(found) - 1));
	tt_error_clear(&lerr);
	if (tt_backend_fingerprint(b, m->locator, ref, &full, &lerr) < 0) {
		tt_buf_printf(&d, "%s exists but its head could not be read (%s); it is not adopted blind", ref,
			      tt_error_text(&lerr));
		rc = tt_plan_action(plan, "refuse", m->key, m->kind, ref, d.ptr, NULL, err);
		rc = rc < 0 ? rc : 1;
		goto done;
	}
	long gen = adopt_generation(ref);
	tt_short_state(&hs, full);
	tt_buf_puts(&d, "adopted ");
	if (json_array_size(found) > 1)
		tt_buf_printf(&d, "as it is: generation %ld, the highest of %zu", gen ? gen : 1, json_array_size(found));
	else
		tt_buf_puts(&d, "as it is");
	tt_buf_printf(&d, "; at %s, %s", hs.ptr,
		      same_state(m, full, m->state) ? "the pin" : "writes no commit here pins; the next commit pins them");
	const json_t *mine = json_object_get(repo->ws.working_refs, m->key);
	const json_t *fp = json_is_string(mine) && strcmp(json_string_value(mine), ref) == 0
				   ? json_object_get(repo->ws.fork_points, m->key)
				   : NULL;
	params = json_pack("{s:O,s:O,s:b,s:o}", "head", full, "fork_point", fp ? fp : (m->state ? m->state : json_null()),
			   "adopted", 1, "generation", gen ? json_integer(gen) : json_null());
	rc = params ? tt_plan_action(plan, "adopt", m->key, m->kind, ref, d.ptr, params, err) : tt_error_oom(err);
	rc = rc < 0 ? rc : 1;
done:
	tt_error_clear(&lerr);
	tt_buf_release(&d);
	tt_buf_release(&hs);
	free(slug);
	free(wanted);
	json_decref(refs);
	json_decref(found);
	json_decref(full);
	json_decref(head);
	json_decref(params);
	return rc;
}

/* What planning `new` carries from object to object. */
typedef struct new_plan {
	tt_repo *repo;
	const tt_new_opts *o;
	const tt_manifest_set *objects;
	tt_plan *plan;
	const char *bookmark;  /* NULL: none */
	const char *name;      /* the working ref's name on the bookmark */
	bool on_trunk, eager;
	json_t *scopes;        /* "kind|scope" -> {key, op} of its first member */
} new_plan;

/* The bookmark at that commit (or where the VCS working copy is): this
 * workspace's, else the trunk, else the only one; NULL when none fits. */
static int bookmark_here(tt_repo *repo, const char *rev, const char *resolved, json_t *known,
			 char **out, tt_error *err)
{
	const char *k, *trunk = tt_config_trunk(&repo->config);
	json_t *c, *cands = json_array();
	char *here = NULL;
	int rc = 0;
	*out = NULL;
	if (!cands)
		return tt_error_oom(err);
	if (rev) {
		json_object_foreach(known, k, c)
			if (strcmp(json_string_value(c), resolved) == 0)
				json_array_append_new(cands, json_string(k));
	} else {
		if ((rc = tt_vcs_current_bookmark(repo->vcs, &here, err)) < 0) {
			json_decref(cands);
			return rc;
		}
		if (here)
			json_array_append_new(cands, json_string(here));
		else if (repo->ws.bookmark)
			json_array_append_new(cands, json_string(repo->ws.bookmark));
	}
	if (repo->ws.bookmark && list_has(cands, repo->ws.bookmark))
		*out = tt_strdup(repo->ws.bookmark);
	else if (list_has(cands, trunk))
		*out = tt_strdup(trunk);
	else if (json_array_size(cands) == 1)
		*out = tt_strdup(json_string_value(json_array_get(cands, 0)));
	json_decref(cands);
	free(here);
	return 0;
}

/* Which bookmark `new` lands on (*bookmark NULL: none), whether it creates
 * it, and whether it finishes an interrupted `new` on it (*resume). */
static int new_target(tt_repo *repo, const tt_new_opts *o, json_t *known, const char *resolved,
		      char **bookmark, bool *create, bool *resume, tt_error *err)
{
	int rc;
	*bookmark = NULL;
	*create = *resume = false;
	if (o->bookmark && json_object_get(known, o->bookmark) &&
	    (rc = resuming_new(repo, o->bookmark, known, resolved, resume, err)) < 0)
		return rc;
	if (*resume) {
		/* Finish on the bookmark as it is: no switch, nothing created. */
		*bookmark = tt_strdup(o->bookmark);
	} else if (o->bookmark) {
		if (json_object_get(known, o->bookmark))
			return tt_error_set(err, TT_ECONFIG, "bookmark '%s' exists; `tether new %s` joins it",
					    o->bookmark, o->bookmark);
		if ((rc = tt_vcs_check_bookmark_name(repo->vcs, o->bookmark, err)) < 0)
			return rc;
		if (generation_suffix(o->bookmark))
			return tt_error_set(err, TT_ECONFIG, "bookmark '%s' ends in `.<number>`, which is how a store "
					    "names a sibling of a branch it cannot reset; pick another name",
					    o->bookmark);
		*bookmark = tt_strdup(o->bookmark);
		*create = true;
	} else if (o->rev && json_object_get(known, o->rev)) {
		*bookmark = tt_strdup(o->rev);
	} else if (o->rev || !o->keep) {
		return bookmark_here(repo, o->rev, resolved, known, bookmark, err);
	} else if (repo->ws.bookmark) {
		*bookmark = tt_strdup(repo->ws.bookmark);
	}
	return 0;
}

/* A refusal of the whole `new` (no object), with params. */
static int refuse_all(tt_plan *plan, tt_buf *d, json_t *params, tt_error *err)
{
	int rc = tt_plan_action(plan, "refuse", NULL, NULL, NULL, d->ptr, params, err);
	json_decref(params);
	tt_buf_release(d);
	return rc;
}

/*
 * What stops `new` before any object is weighed: --adopt without a
 * bookmark of its own, --keep, no bookmark, a bookmark other live
 * workspaces hold.  *stop: planned, the objects are not looked at.
 */
static int new_gates(new_plan *np, bool *stop, tt_error *err)
{
	const tt_new_opts *o = np->o;
	const char *bookmark = np->bookmark;
	json_t *holders = NULL;
	tt_buf d = TT_BUF_INIT;
	int rc = 0;
	*stop = true;
	if (o->adopt) {
		tt_plan_set_context(np->plan, "adopt", json_true(), err);
		if (!bookmark || np->on_trunk) {
			if (bookmark)
				tt_buf_printf(&d, "--adopt takes a bookmark's own store branches; the trunk '%s' has none -- its "
						  "working refs are the upstream branches themselves", bookmark);
			else
				tt_buf_puts(&d, "--adopt needs a bookmark: `tether new -b NAME --adopt`, or `tether new NAME "
						"--adopt` to join one");
			return refuse_all(np->plan, &d, json_pack("{s:s?}", "bookmark", bookmark), err);
		}
	}
	if (o->keep)
		return tt_plan_note(np->plan, "keep: refresh the baseline only; working refs unchanged", err);
	if (!bookmark)
		return tt_plan_note(np->plan, "no bookmark: read-only working copy (`tether new -b NAME` to write)", err);
	if (!np->on_trunk && !o->shared) {
		if ((rc = tt_engine_bookmark_holders(np->repo, bookmark, &holders, err)) < 0)
			return rc;
		if (json_array_size(holders)) {
			size_t k;
			json_t *h;
			tt_buf_printf(&d, "bookmark '%s' is held by live workspace(s) ", bookmark);
			json_array_foreach(holders, k, h)
				tt_buf_printf(&d, "%s%s", k ? ", " : "", json_string_value(h));
			tt_buf_puts(&d, "; pass --shared to write the same store branches from here too");
			rc = refuse_all(np->plan, &d, json_pack("{s:s,s:O}", "bookmark", bookmark, "holders", holders), err);
			json_decref(holders);
			return rc;
		}
		json_decref(holders);
	}
	*stop = false;
	if (np->on_trunk) {
		char note[256];
		snprintf(note, sizeof note, "on trunk '%s': writes land on each object's upstream branch", bookmark);
		rc = tt_plan_note(np->plan, note, err);
	}
	return rc;
}

/* On the trunk: the object's writes land on its upstream branch. */
static int plan_trunk_object(new_plan *np, const tt_manifest *m, tt_backend *b, tt_error *err)
{
	char *branch = NULL, note[512];
	int rc = 0;
	if (tt_backend_has(b, base_branch)) {
		rc = tt_backend_base_branch(b, m->locator, &branch, err);
	} else {
		json_t *br = json_object_get(m->locator, "branch");
		branch = tt_strdup(json_is_string(br) ? json_string_value(br) : "main");
	}
	if (rc < 0 || !branch) {
		snprintf(note, sizeof note, "%s: no upstream branch to write to (%s)", m->key,
			 err->message ? err->message : "unknown");
		tt_error_clear(err);
		rc = tt_plan_note(np->plan, note, err);
	} else {
		rc = tt_plan_action(np->plan, "trunk", m->key, m->kind, branch, "upstream branch", NULL, err);
	}
	free(branch);
	return rc;
}

/* "kind|scope": objects of one kind and scope share one branch. */
static int scope_key_of(const tt_manifest *m, tt_backend *b, char **out, tt_error *err)
{
	char *scope = NULL;
	json_t *identity = NULL;
	int rc;
	if (tt_backend_has(b, branch_scope)) {
		rc = tt_backend_branch_scope(b, m->locator, &scope, err);
	} else if ((rc = tt_backend_identity(b, m->locator, &identity, err)) == 0) {
		tt_buf sb = TT_BUF_INIT;
		tt_json_canonical(&sb, identity);
		scope = tt_buf_detach(&sb);
	}
	json_decref(identity);
	if (rc < 0)
		return rc;
	*out = tt_asprintf("%s|%s", m->kind, scope ? scope : "");
	free(scope);
	return *out ? 0 : tt_error_oom(err);
}

/* A later member of a branch's scope: shares what its first member does. */
static int plan_scope_member(new_plan *np, const tt_manifest *m, const json_t *first, tt_error *err)
{
	const char *fk = json_string_value(json_object_get(first, "key"));
	const char *fop = json_string_value(json_object_get(first, "op"));
	const tt_manifest *fm = tt_manifests_find(np->objects, fk);
	char note[512];
	json_t *params;
	int rc;
	if (!fop || strcmp(fop, "refuse") == 0) {
		snprintf(note, sizeof note, "%s: shares a branch with %s, which cannot fork", m->key, fk);
		return tt_plan_note(np->plan, note, err);
	}
	if (!same_state(m, m->state, fm->state)) {
		tt_buf d = TT_BUF_INIT, s1 = TT_BUF_INIT, s2 = TT_BUF_INIT;
		tt_short_state(&s1, m->state);
		tt_short_state(&s2, fm->state);
		tt_buf_printf(&d, "shares branch %s with '%s' but pins %s where it pins %s; a branch is "
			      "at one point -- commit them together (`tether pull` on the trunk) "
			      "before forking", np->name, fk, s1.ptr, s2.ptr);
		params = json_pack("{s:s}", "with", fk);
		rc = tt_plan_action(np->plan, "refuse", m->key, m->kind, np->name, d.ptr, params, err);
		json_decref(params);
		tt_buf_release(&d);
		tt_buf_release(&s1);
		tt_buf_release(&s2);
		return rc;
	}
	snprintf(note, sizeof note, "same branch as %s (%s)", fk, fop);
	params = json_pack("{s:s,s:O}", "with", fk, "state", m->state);
	rc = tt_plan_action(np->plan, "share", m->key, m->kind, np->name, note, params, err);
	json_decref(params);
	return rc;
}

/* Whether the bookmark's branch exists and its head (*head NULL when it
 * does not); *op "refuse" with the reason in detail when that cannot be
 * told, as a fork would then reset it blind. */
static void existing_branch(new_plan *np, const tt_manifest *m, tt_backend *b, bool *existing, json_t **head,
			    json_t *params, tt_buf *detail, const char **op)
{
	json_t *refs = NULL;
	*existing = false;
	*head = NULL;
	if (tt_backend_has(b, list_working_refs)) {
		tt_error lerr = TT_ERROR_INIT;
		if (tt_backend_list_working_refs(b, m->locator, &refs, &lerr) < 0) {
			tt_buf_printf(detail, "could not list branches (%s); whether %s exists is unknown "
				      "and a fork would reset it blind", tt_error_text(&lerr), np->name);
			*op = "refuse";
		} else {
			*existing = list_has(refs, np->name);
		}
		tt_error_clear(&lerr);
	}
	json_decref(refs);
	if (!*op && *existing) {
		tt_error herr = TT_ERROR_INIT;
		if (tt_backend_fingerprint(b, m->locator, np->name, head, &herr) < 0) {
			tt_buf_printf(detail, "%s exists but its head could not be read (%s); a fork would "
				      "reset it blind", np->name, tt_error_text(&herr));
			json_object_set_new(params, "existing", json_string(np->name));
			*op = "refuse";
		}
		tt_error_clear(&herr);
	}
}

/*
 * The branch exists at a head no commit pins (writes since): shared
 * as it is with --shared where they build on the pin ("adopt"), else
 * refused with whose writes they are and what to do.
 */
static const char *unpinned_writes(new_plan *np, const tt_manifest *m, tt_backend *b, json_t *head,
				   json_t **params, tt_buf *detail)
{
	const char *name = np->name, *op;
	tt_buf hs = TT_BUF_INIT, pinned = TT_BUF_INIT; /* tether-vcs names the bookmark and its pin */
	int builds = -1;
	tt_target t = { .kind = TT_TARGET_REF, .ref = name };
	tt_error aerr = TT_ERROR_INIT;
	const json_t *wr = json_object_get(np->repo->ws.working_refs, m->key);
	bool ours = json_is_string(wr) && strcmp(json_string_value(wr), name) == 0;
	const char *whose = ours ? "this workspace's own"
				 : "not this workspace's: another checkout or clone writes to it";

	tt_short_state(&hs, head);
	if (!tt_backend_has(b, ancestor_of) || tt_backend_ancestor_of(b, m->locator, m->state, &t, &builds, &aerr) < 0)
		builds = -1;
	tt_error_clear(&aerr);
	tt_buf_reset(detail);
	if (builds == 0) {
		tt_buf ps = TT_BUF_INIT;
		tt_short_state(&ps, m->state);
		tt_buf_printf(&pinned, "they do not build on what %s's commit pins (%s), so "
			      "it cannot be shared as it is; --discard resets it onto the "
			      "pin, throwing them away", np->bookmark ? np->bookmark : "the bookmark", ps.ptr);
		tt_buf_release(&ps);
	}
	if (np->o->shared && builds != 0) {
		json_t *fp = ours ? json_object_get(np->repo->ws.fork_points, m->key) : NULL;
		json_decref(*params);
		*params = json_pack("{s:O,s:O}", "head", head, "fork_point", fp ? fp : m->state);
		if (builds == 1)
			json_object_set(*params, "descends_from", m->state);
		tt_buf_printf(detail, "holds writes no commit pins (%s; %s); kept as it is and "
			      "shared -- the next commit here pins them too", hs.ptr, whose);
		op = "adopt";
	} else {
		tt_buf_printf(detail, "%s has writes since this workspace last committed (%s; %s); %s", name, hs.ptr,
			      whose,
			      builds == 0 ? (pinned.ptr ? pinned.ptr : "")
			      : ours ? "commit them, or pass --discard to throw them away"
				     : "`--shared` works on the branch as it is, with them; --discard "
				       "would throw away work that is not yours");
		op = "refuse";
	}
	tt_buf_release(&pinned);
	tt_buf_release(&hs);
	return op;
}

/* The fork resets an existing branch: say so, and what of its writes. */
static const char *resets_branch(new_plan *np, const tt_manifest *m, tt_backend *b, json_t *head,
				 json_t **params, tt_buf *detail)
{
	const json_t *recorded[3] = { json_object_get(np->repo->ws.base_states, m->key), m->state,
				      json_object_get(np->repo->ws.fork_points, m->key) };
	bool pinned_somewhere = false;
	json_object_set_new(*params, "existing", json_string(np->name));
	json_object_set(*params, "head", head ? head : json_null());
	tt_buf_printf(detail, "; resets %s", np->name);
	for (int r = 0; r < 3; r++)
		pinned_somewhere |= same_state(m, head, recorded[r]);
	if (head && !pinned_somewhere && !np->o->discard)
		return unpinned_writes(np, m, b, head, params, detail);
	if (head && !pinned_somewhere) {
		tt_buf hs = TT_BUF_INIT;
		tt_short_state(&hs, head);
		tt_buf_printf(detail, ", discarding its writes (%s)", hs.ptr);
		tt_buf_release(&hs);
	}
	return NULL;
}

/* The first object of its branch's scope: fork (now or on first open),
 * reuse the branch already at the pin, adopt it, or refuse. */
static int plan_first_of_scope(new_plan *np, const tt_manifest *m, tt_backend *b, unsigned caps,
			       const char *scope_key, tt_error *err)
{
	json_t *head = NULL, *params = json_object();
	bool existing = false, durable = true;
	const char *op = NULL;
	tt_buf detail = TT_BUF_INIT, src = TT_BUF_INIT;
	char note[512];
	int rc = 0;

	/* The bookmark's branch may already exist: its head decides. */
	existing_branch(np, m, b, &existing, &head, params, &detail, &op);
	if (!op) {
		if (m->pin_id) {
			json_object_set_new(params, "pin", json_pack("{s:s,s:s}", "id", m->pin_id, "ref", m->pin_ref));
			tt_buf_printf(&src, "pin %s", m->pin_ref);
		} else if (caps & TT_CAP_ADDRESSABLE) {
			tt_buf st = TT_BUF_INIT;
			tt_short_state(&st, m->state);
			json_object_set(params, "state", m->state);
			tt_buf_printf(&src, "recorded state %s (no pin)", st.ptr);
			tt_buf_release(&st);
			durable = false;
		} else {
			snprintf(note, sizeof note, "%s: no pin and not addressable; cannot fork", m->key);
			rc = tt_plan_note(np->plan, note, err);
			op = "";
		}
	}
	if (!op && existing && head && same_state(m, head, m->state)) {
		/* Already exactly at the pin: kept. */
		tt_buf_printf(&detail, "already at %s; kept", src.ptr);
		json_decref(params);
		params = json_pack("{s:O}", "then_state", m->state);
		op = "reuse";
	}
	if (!op) {
		tt_buf_printf(&detail, "from %s", src.ptr);
		if (existing)
			op = resets_branch(np, m, b, head, &params, &detail);
	}
	if (!op) {
		if (np->eager || !durable) {
			if (!durable && !np->eager)
				tt_buf_puts(&detail, "; forked now so the state cannot expire");
			op = "fork";
		} else {
			tt_buf_puts(&detail, "; created on first writable open");
			op = "defer-fork";
		}
	}
	if (rc == 0 && *op) {
		rc = tt_plan_action(np->plan, op, m->key, m->kind, np->name, detail.ptr, params, err);
		json_object_set_new(np->scopes, scope_key, json_pack("{s:s,s:s}", "key", m->key, "op", op));
	}
	tt_buf_release(&detail);
	tt_buf_release(&src);
	json_decref(params);
	json_decref(head);
	return rc;
}

/* One object of the dataset: what `new` does with its store. */
static int plan_new_object(new_plan *np, const tt_manifest *m, tt_error *err)
{
	tt_backend *b;
	unsigned caps = tt_engine_caps(np->repo, m);
	char note[512], *scope_key = NULL;
	int rc;
	if (!(caps & TT_CAP_FORK) || tt_engine_backend(np->repo, m->kind, &b, err) < 0) {
		tt_error_clear(err);
		return 0;
	}
	if (np->on_trunk)
		return plan_trunk_object(np, m, b, err);
	if (!m->state) {
		snprintf(note, sizeof note, "%s: nothing committed yet; fork after first commit", m->key);
		return tt_plan_note(np->plan, note, err);
	}
	/* One branch per (kind, scope): members after the first share it. */
	if ((rc = scope_key_of(m, b, &scope_key, err)) < 0)
		return rc;
	const json_t *first = json_object_get(np->scopes, scope_key);
	if (first) {
		rc = plan_scope_member(np, m, first, err);
	} else if (np->o->adopt && (rc = plan_adopt(np->repo, np->plan, m, b, np->bookmark, err)) != 0) {
		if (rc > 0)
			json_object_set_new(np->scopes, scope_key, json_pack("{s:s,s:s}", "key", m->key, "op", "adopt"));
		rc = rc < 0 ? rc : 0;
	} else {
		rc = plan_first_of_scope(np, m, b, caps, scope_key, err);
	}
	free(scope_key);
	return rc;
}

/* What applying compares before it writes. */
static int new_preconditions(tt_repo *repo, const tt_new_opts *o, tt_plan *plan, const tt_manifest_set *objects,
			     const char *hash, const char *bookmark, bool resume, tt_error *err)
{
	json_t *h = json_string(hash), *ws = json_string(repo->ws.workspace_id);
	/* {"rev": null} without one (or on a resume), as tether-vcs records it. */
	json_t *params = json_pack("{s:s?}", "rev", resume ? NULL : o->rev);
	int rc = tt_plan_require(plan, "manifest_hash", h, NULL, params,
				 "manifests at the target differ from the plan; re-run the plan", err);
	if (rc == 0)
		rc = tt_plan_require(plan, "workspace_id", ws, NULL, NULL,
				     "this plan was made in another workspace; re-run the plan here", err);
	json_decref(params);
	json_decref(h);
	json_decref(ws);
	if (rc == 0 && bookmark && strcmp(bookmark, tt_config_trunk(&repo->config)) != 0 && !o->shared) {
		char d[256];
		snprintf(d, sizeof d, "bookmark '%s' is now held by live workspace(s) {observed}; re-run "
			 "the plan (or pass --shared)", bookmark);
		params = json_pack("{s:s}", "bookmark", bookmark);
		rc = tt_plan_require(plan, "no_new_holders", NULL, NULL, params, d, err);
		json_decref(params);
	}
	for (size_t i = 0; rc == 0 && i < tt_plan_action_count(plan); i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		const tt_manifest *m = a.key && *a.key ? tt_manifests_find(objects, a.key) : NULL;
		if (!m)
			continue;
		char what[300];
		snprintf(what, sizeof what, "new %s", a.key);
		json_t *p = json_pack("{s:s,s:O,s:s,s:s}", "backend", a.kind, "locator", m->locator, "ref", a.target,
				      "what", what);
		if (strcmp(a.op, "adopt") == 0) {
			rc = tt_plan_require(plan, "ref_present", NULL, a.key, p, NULL, err);
			json_t *d = json_object_get(a.params, "descends_from");
			if (rc == 0 && d)
				rc = tt_plan_require(plan, "ref_descends", d, a.key, p, NULL, err);
		} else if (strcmp(a.op, "reuse") == 0) {
			rc = tt_plan_require(plan, "ref_head", json_object_get(a.params, "then_state"), a.key, p, NULL,
					     err);
		} else if (strcmp(a.op, "fork") == 0 && json_object_get(a.params, "existing")) {
			rc = tt_plan_require(plan, "ref_head", json_object_get(a.params, "head"), a.key, p, NULL, err);
		} else if (strcmp(a.op, "fork") == 0) {
			char d[512];
			snprintf(d, sizeof d, "new %s: %s exists since the plan was made; re-run the plan", a.key,
				 a.target);
			/* Its detail names the command: no "what" (tether-vcs writes none). */
			json_object_del(p, "what");
			rc = tt_plan_require(plan, "ref_absent", NULL, a.key, p, d, err);
		}
		json_decref(p);
	}
	return rc;
}

/* The plan's context: what it was asked and where it was made. */
static int new_context(tt_repo *repo, const tt_new_opts *o, tt_plan *plan, const char *bookmark, bool create,
		       bool eager, bool resume, const char *hash, tt_error *err)
{
	const char *ck;
	json_t *cv;
	int rc = 0;
	json_t *ctx = json_pack("{s:s?,s:s?,s:b,s:b,s:b,s:b,s:b,s:s,s:s}", "rev", resume ? NULL : o->rev, "bookmark",
				bookmark, "create", create, "shared", o->shared, "keep", o->keep, "eager", eager,
				"discard", o->discard, "manifest_hash", hash, "workspace_id", repo->ws.workspace_id);
	if (!ctx)
		return tt_error_oom(err);
	json_object_foreach(ctx, ck, cv)
		if ((rc = tt_plan_set_context(plan, ck, cv, err)) < 0)
			break;
	json_decref(ctx);
	return rc;
}

/*
 * Plan `new`: the bookmark it lands on, then per object what happens to
 * its store's branch on it, then what applying must find unchanged.
 */
int tt_engine_plan_new(tt_repo *repo, const tt_new_opts *o, tt_plan **out, tt_error *err)
{
	tt_manifest_set at = { 0 };
	json_t *known = NULL;
	char *resolved = NULL, *bookmark = NULL, *name = NULL;
	new_plan np = { .repo = repo, .o = o, .objects = &repo->objects };
	bool create = false, resume = false, stop = false;
	char hash[65];
	int rc;

	*out = NULL;
	if (o->adopt && (o->keep || o->discard))
		return tt_error_set(err, TT_ECONFIG, "--adopt takes the bookmark's branches as they are; %s",
				    o->keep ? "--keep keeps this workspace's working refs instead"
					    : "--discard would reset them");
	if (o->bookmark) {
		if ((rc = stranded_bookmark(repo, o->bookmark, &stop, err)) < 0)
			return rc;
		if (stop) {
			tt_new_opts join = *o;
			join.rev = o->bookmark;
			join.bookmark = NULL;
			return tt_engine_plan_new(repo, &join, out, err);
		}
	}
	if (o->rev && (rc = tt_engine_objects_at(repo, o->rev, &at, &resolved, err)) < 0)
		goto done;
	if (o->rev)
		np.objects = &at;
	np.eager = o->eager < 0 ? strcmp(repo->config.new_fork, "eager") == 0 : o->eager > 0;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &known, err)) < 0 ||
	    (rc = new_target(repo, o, known, resolved, &bookmark, &create, &resume, err)) < 0)
		goto done;
	if (resume)
		np.objects = &repo->objects;
	if ((rc = tt_manifests_hash(hash, np.objects, err)) < 0)
		goto done;
	if (!(np.plan = tt_plan_new("new")) || !(np.scopes = json_object())) {
		rc = tt_error_oom(err);
		goto done;
	}
	np.bookmark = bookmark;
	np.on_trunk = bookmark && strcmp(bookmark, tt_config_trunk(&repo->config)) == 0;
	if ((rc = new_context(repo, o, np.plan, bookmark, create, np.eager, resume, hash, err)) < 0 ||
	    (rc = new_gates(&np, &stop, err)) < 0)
		goto done;
	if (!stop) {
		if ((rc = tt_working_ref_name(&name, repo->config.dataset_id, bookmark, err)) < 0)
			goto done;
		np.name = name;
		tt_engine_prepare(repo);
		for (size_t i = 0; rc >= 0 && i < np.objects->n; i++)
			rc = plan_new_object(&np, &np.objects->items[i], err);
		if (rc < 0)
			goto done;
	}
	if ((rc = new_preconditions(repo, o, np.plan, np.objects, hash, bookmark, resume, err)) == 0) {
		*out = np.plan;
		np.plan = NULL;
	}
done:
	tt_plan_free(np.plan);
	tt_manifests_release(&at);
	json_decref(known);
	json_decref(np.scopes);
	free(resolved);
	free(bookmark);
	free(name);
	return rc;
}

/* --- apply ------------------------------------------------------------------- */

static int workspace_text(tt_repo *repo, json_t **out, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc = tt_workspace_render(&b, &repo->ws, err);
	*out = rc == 0 ? json_stringn(b.ptr, b.len) : NULL;
	tt_buf_release(&b);
	return rc == 0 && !*out ? tt_error_oom(err) : rc;
}

static void mark_base_states(tt_repo *repo, json_t *keys_obj)
{
	const char *key;
	json_t *v;
	json_object_foreach(keys_obj, key, v) {
		const tt_manifest *m = tt_manifests_find(&repo->objects, key);
		if (m && m->state)
			json_object_set(repo->ws.base_states, key, m->state);
		else
			json_object_del(repo->ws.base_states, key);
	}
}

typedef struct fork_job {
	tt_repo *repo;
	const tt_manifest *m;
	const char *target;
	tt_expect expected;
	char *ref;
	tt_error err;
} fork_job;

static void fork_one(size_t i, void *ctx)
{
	fork_job *j = &((fork_job *)ctx)[i];
	j->err = (tt_error)TT_ERROR_INIT;
	tt_engine_fork_from_manifest(j->repo, j->m, j->target, &j->expected, &j->ref, &j->err);
	if (j->ref)
		tt_fault("new:after-fork");
}

/* fork_one, counted for the progress callback. */
static void fork_counted(size_t i, void *ctx)
{
	fork_job *j = &((fork_job *)ctx)[i];
	fork_one(i, ctx);
	tt_engine_progress_step(j->repo, j->m->key);
}

static int reload_objects(tt_repo *repo, tt_error *err)
{
	tt_manifest_set fresh;
	int rc = tt_manifests_load(&fresh, repo->root, err);
	if (rc == 0) {
		tt_manifests_release(&repo->objects);
		repo->objects = fresh;
	}
	return rc;
}

/*
 * A `new -b` that failed after its bookmark was made: the working copy goes
 * back where it was (if the bookmark took it), and the bookmark goes.
 * made: the VCS said it made it; otherwise (the VCS failed part-way: git
 * made the branch, then could not move HEAD) it goes only if it exists now,
 * having been absent when the plan was made.
 */
static int take_back_bookmark(tt_repo *repo, const char *bookmark, const json_t *before, bool made, tt_error *err)
{
	json_t *marks = NULL;
	char *here = NULL;
	int rc;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) < 0)
		goto done;
	if (!json_object_get(marks, bookmark)) {
		rc = made ? tt_error_set(err, TT_EVCS, "bookmark '%s' is gone", bookmark) : 0;
		goto done;
	}
	if ((rc = tt_vcs_current_bookmark(repo->vcs, &here, err)) < 0)
		goto done;
	if (here && strcmp(here, bookmark) == 0 && (rc = tt_vcs_goto_position(repo->vcs, before, err)) < 0)
		goto done;
	rc = tt_vcs_bookmark_delete(repo->vcs, bookmark, err);
done:
	json_decref(marks);
	free(here);
	return rc;
}

/*
 * Whether a `new -b` whose VCS step failed left the bookmark made anyway
 * (git made the branch, then could not move HEAD).  The plan found it
 * absent.  When the VCS cannot list its bookmarks either, it may have:
 * the failure path then takes it back if it is there.
 */
static bool bookmark_made_anyway(tt_repo *repo, const char *bookmark)
{
	json_t *marks = NULL;
	tt_error ignored = TT_ERROR_INIT;
	bool made = tt_vcs_bookmarks(repo->vcs, &marks, &ignored) < 0 || json_object_get(marks, bookmark);
	tt_error_clear(&ignored);
	json_decref(marks);
	return made;
}

/* Reorder an object's members by key (Python's sorted(dict.items())). */
static void sort_object_keys(json_t *obj)
{
	json_t *keys = json_array(), *copy = json_deep_copy(obj);
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v)
		json_array_append_new(keys, json_string(k));
	sort_strings(keys);
	json_object_clear(obj);
	size_t i;
	json_array_foreach(keys, i, v)
		json_object_set(obj, json_string_value(v), json_object_get(copy, json_string_value(v)));
	json_decref(keys);
	json_decref(copy);
}

/* What applying `new` carries from step to step. */
typedef struct new_apply {
	tt_repo *repo;
	const tt_plan *plan;
	json_t *ctx;		/* borrowed: the plan's context */
	const char *rev;	/* borrowed from ctx; NULL: none */
	const char *bookmark;	/* borrowed from ctx; NULL: none */
	bool create;		/* -b: the bookmark is made */
	json_t *pre;		/* the journal's `pre`: workspace, vcs, heads */
	json_t *position, *wstext, *heads, *plan_json;
	json_t *working;	/* key -> working ref */
	json_t *pending;	/* key -> deferred fork's branch */
	json_t *resets;		/* key -> head a deferred fork resets */
	json_t *reused;		/* key -> fork point of a branch taken as it is */
	json_t *leftovers;	/* key -> working ref of an object removed since */
	json_t *result;
	fork_job *jobs;
	size_t njobs;
	char op_id[TT_OP_ID_LEN + 1];
	bool made_bookmark, maybe_made;
} new_apply;

/* What the fan-out of forks came to. */
typedef struct new_forked {
	json_t *created, *reset, *failed_keys; /* keys; taken over by the journal's result */
	json_t *forked;			       /* key -> the ref forked */
	tt_buf why;			       /* "\n  key: error" per fork that failed */
} new_forked;

/* The plan's refusals as one error; 0 when it has none. */
static int new_refusals(const tt_plan *plan, tt_error *err)
{
	size_t na = tt_plan_action_count(plan);
	tt_buf refused = TT_BUF_INIT;
	bool all_keyed = true, all_writes = true;
	int rc = 0;
	for (size_t i = 0; i < na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		if (strcmp(a.op, "refuse") != 0)
			continue;
		all_keyed &= a.key && *a.key;
		/* A branch holding writes no commit pins is the refusal that
		 * carries its head; the others (a store that cannot be listed or
		 * read, a shared branch at another point) are not about writes. */
		json_t *head = json_object_get(a.params, "head");
		all_writes &= head && !json_is_null(head);
		if (a.key && *a.key)
			tt_buf_printf(&refused, "\n  %s: %s", a.key, a.detail);
		else
			tt_buf_printf(&refused, "%s%s", refused.len ? "; " : "", a.detail);
	}
	if (refused.len)
		rc = all_keyed && all_writes ? tt_error_set(err, TT_ECONFIG, "refusing to reset working branches with "
							    "unpinned writes:%s", refused.ptr)
		     : all_keyed	     ? tt_error_set(err, TT_ECONFIG, "refusing to fork:%s", refused.ptr)
					     : tt_error_set(err, TT_ECONFIG, "%s", refused.ptr);
	tt_buf_release(&refused);
	return rc;
}

/* The journal's entry: the plan, with the workspace, the VCS's position and
 * the heads of the existing branches it resets as its `pre`. */
static int journal_new(new_apply *na, const char *parent, tt_error *err)
{
	size_t n = tt_plan_action_count(na->plan);
	int rc;
	for (size_t i = 0; i < n; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(na->plan, i, &a);
		if (strcmp(a.op, "fork") == 0 && json_object_get(a.params, "existing"))
			json_object_set(na->heads, a.key, json_object_get(a.params, "head"));
	}
	if ((rc = tt_vcs_position(na->repo->vcs, &na->position, err)) < 0 ||
	    (rc = workspace_text(na->repo, &na->wstext, err)) < 0)
		return rc;
	na->pre = json_pack("{s:O,s:O,s:O}", "workspace", na->wstext, "vcs", na->position, "heads", na->heads);
	if (!na->pre || !(na->plan_json = tt_plan_to_object(na->plan, err)))
		return na->pre ? err->code : tt_error_oom(err);
	return tt_oplog_begin(na->repo->root, "new", na->plan_json, na->pre, parent, na->op_id, err);
}

/*
 * The VCS onto the plan's bookmark (made, with -b) or revision, and the
 * objects as they are there.  *untouched: the VCS refused the move and
 * changed nothing (a local file in the way, a name it will not take): the
 * entry stays started, as tether-vcs leaves it, and the same command once
 * the cause is gone finishes it.
 */
static int land_new(new_apply *na, bool *untouched, tt_error *err)
{
	int rc;
	*untouched = false;
	if (na->create) {
		if ((rc = tt_vcs_new_bookmark(na->repo->vcs, na->bookmark, na->rev, err)) < 0) {
			/* git failing part-way (the branch made, HEAD not
			 * movable) left the bookmark: it is taken back, or
			 * recorded for the rerun. */
			if (!bookmark_made_anyway(na->repo, na->bookmark))
				*untouched = true;
			else
				na->maybe_made = true;
			return rc;
		}
		na->made_bookmark = true;
		return reload_objects(na->repo, err);
	}
	if (na->rev) {
		if ((rc = tt_vcs_new(na->repo->vcs, na->rev, err)) < 0) {
			*untouched = true;
			return rc;
		}
		return reload_objects(na->repo, err);
	}
	return 0;
}

/* --keep: the working refs stay as they are, on the base states here. */
static int keep_working_refs(new_apply *na, tt_error *err)
{
	json_t *keys = json_object();
	json_object_update(keys, na->repo->ws.working_refs);
	json_object_update(keys, na->repo->ws.pending_forks);
	mark_base_states(na->repo, keys);
	json_decref(keys);
	return tt_workspace_save(&na->repo->ws, na->repo->root, err);
}

/* --keep's entry done: where the VCS is now (where undo returns it).  A
 * position that cannot be read leaves the entry started, as an
 * interrupted `new`'s: the same `new` again finishes it (resuming_new). */
/* Where the VCS working copy is now, for the entry's done record; a
 * position that cannot be read is the command's error (what stands: the
 * refs `how`, kept or recorded), with the VCS's own hint kept. */
static int position_for_journal(new_apply *na, const char *how, json_t **now, tt_error *err)
{
	int rc = tt_vcs_position(na->repo->vcs, now, err);
	if (rc < 0)
		tt_error_prefix(err, "new: this checkout is on %s with its working refs %s, but where the VCS working "
				"copy is now cannot be read for the journal (once that is fixed, the same `tether new` "
				"again finishes it)", na->bookmark ? na->bookmark : "its bookmark", how);
	return rc;
}

static int journal_kept(new_apply *na, tt_error *err)
{
	json_t *now = NULL;
	int rc;
	if ((rc = position_for_journal(na, "kept", &now, err)) < 0)
		return rc;
	if (!(na->result = json_pack("{s:o}", "vcs", now)))
		return tt_error_oom(err);
	return tt_oplog_done(na->repo->root, na->op_id, na->result, NULL, NULL, err);
}

/* One fork job per planned fork: its object here, and what it expects of the branch. */
static int add_fork_job(new_apply *na, const tt_plan_action_view *a, tt_error *err)
{
	const tt_manifest *m = tt_manifests_find(&na->repo->objects, a->key);
	if (!m)
		return tt_error_set(err, TT_ESTALEPLAN, "'%s' is not registered at the target; re-run the plan", a->key);
	fork_job *j = &na->jobs[na->njobs++];
	j->repo = na->repo;
	j->m = m;
	j->target = a->target;
	json_t *h = json_object_get(a->params, "head");
	if (json_object_get(a->params, "existing"))
		j->expected = json_is_object(h) ? (tt_expect){ TT_EXPECT_STATE, h } : (tt_expect){ TT_EXPECT_NONE, NULL };
	else
		j->expected = (tt_expect){ TT_EXPECT_ABSENT, NULL };
	return 0;
}

/* Per action, where its key goes: a working ref (trunk, reuse, adopt), a
 * deferred fork, or a fork job; and the working refs of removed objects,
 * which stay until gc deletes their branches. */
static int sort_new_actions(new_apply *na, tt_error *err)
{
	size_t n = tt_plan_action_count(na->plan);
	int rc;
	if (!(na->jobs = tt_calloc(n ? n : 1, sizeof *na->jobs)))
		return tt_error_oom(err);
	for (size_t i = 0; i < n; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(na->plan, i, &a);
		if (strcmp(a.op, "trunk") == 0) {
			json_object_set_new(na->working, a.key, json_string(a.target));
		} else if (strcmp(a.op, "defer-fork") == 0) {
			json_object_set_new(na->pending, a.key, json_string(a.target));
			json_t *h = json_object_get(a.params, "head");
			if (json_object_get(a.params, "existing") && json_is_object(h))
				json_object_set(na->resets, a.key, h);
		} else if (strcmp(a.op, "reuse") == 0) {
			json_object_set_new(na->working, a.key, json_string(a.target));
			json_t *known = json_object_get(na->repo->ws.fork_points, a.key);
			json_object_set(na->reused, a.key, known ? known : json_object_get(a.params, "then_state"));
		} else if (strcmp(a.op, "adopt") == 0) {
			json_object_set_new(na->working, a.key, json_string(a.target));
			json_object_set(na->reused, a.key, json_object_get(a.params, "fork_point"));
		} else if (strcmp(a.op, "fork") == 0 && (rc = add_fork_job(na, &a, err)) < 0) {
			return rc;
		}
	}
	const char *k;
	json_t *v;
	json_object_foreach(na->repo->ws.working_refs, k, v)
		if (!tt_manifests_find(&na->repo->objects, k))
			json_object_set(na->leftovers, k, v);
	return 0;
}

/* The members of from whose keys are leftovers (new reference). */
static json_t *of_leftovers(json_t *from, json_t *leftovers)
{
	json_t *out = json_object();
	const char *k;
	json_t *v;
	json_object_foreach(from, k, v)
		if (json_object_get(leftovers, k))
			json_object_set(out, k, v);
	return out;
}

/* The workspace's working refs: the leftovers, then working. */
static void set_working_refs(new_apply *na)
{
	json_decref(na->repo->ws.working_refs);
	na->repo->ws.working_refs = json_deep_copy(na->leftovers);
	json_object_update(na->repo->ws.working_refs, na->working);
}

/* Every planned fork as pending (with the head it resets), and each
 * sharer of a scope as its first member: *pending, *resets new references. */
static void interim_pending(new_apply *na, json_t **pending, json_t **resets)
{
	json_t *interim = json_deep_copy(na->pending), *interim_resets = json_deep_copy(na->resets);
	size_t n = tt_plan_action_count(na->plan);
	for (size_t i = 0; i < na->njobs; i++) {
		json_object_set_new(interim, na->jobs[i].m->key, json_string(na->jobs[i].target));
		if (na->jobs[i].expected.kind == TT_EXPECT_STATE)
			json_object_set(interim_resets, na->jobs[i].m->key, (json_t *)na->jobs[i].expected.state);
	}
	for (size_t i = 0; i < n; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(na->plan, i, &a);
		if (strcmp(a.op, "share") != 0)
			continue;
		const char *first = json_string_value(json_object_get(a.params, "with"));
		if (first && json_object_get(interim, first)) {
			json_object_set(interim, a.key, json_object_get(interim, first));
			if (json_object_get(interim_resets, first))
				json_object_set(interim_resets, a.key, json_object_get(interim_resets, first));
		}
	}
	*pending = interim;
	*resets = interim_resets;
}

/*
 * Before the first store write, the workspace agrees with the VCS: every
 * planned fork is pending, so a crash mid-fan-out leaves a lazy `new`.
 */
static int record_interim(new_apply *na, tt_error *err)
{
	tt_workspace *ws = &na->repo->ws;
	json_t *interim, *interim_resets;
	const char *k;
	json_t *v;
	interim_pending(na, &interim, &interim_resets);
	json_t *touched = json_object();
	json_object_update(touched, ws->working_refs);
	json_object_update(touched, ws->pending_forks);
	json_object_update(touched, na->working);
	json_object_update(touched, interim);
	json_object_foreach(touched, k, v)
		json_object_del(ws->last_snapshot, k);
	json_decref(touched);
	json_t *fp = of_leftovers(ws->fork_points, na->leftovers);
	json_object_update(fp, na->reused);
	json_t *bs = of_leftovers(ws->base_states, na->leftovers);
	set_working_refs(na);
	json_decref(ws->pending_forks);
	ws->pending_forks = interim;
	json_decref(ws->pending_resets);
	ws->pending_resets = interim_resets;
	json_decref(ws->fork_points);
	ws->fork_points = fp;
	json_decref(ws->base_states);
	ws->base_states = bs;
	json_t *mark = json_object();
	json_object_update(mark, na->working);
	json_object_update(mark, interim);
	mark_base_states(na->repo, mark);
	json_decref(mark);
	return tt_workspace_save(ws, na->repo->root, err);
}

/* The forks, side by side, counted for the progress callback. */
static int fork_all(new_apply *na, tt_error *err)
{
	tt_engine_prepare(na->repo);
	tt_engine_progress_begin(na->repo, "fork", na->njobs);
	int rc = tt_engine_fanout(na->njobs, fork_counted, na->jobs, err);
	tt_engine_progress_end(na->repo);
	return rc;
}

/* Each fork made is journalled and becomes a working ref; each that failed stays pending. */
static void collect_forks(new_apply *na, new_forked *fo)
{
	fo->created = json_array();
	fo->reset = json_array();
	fo->failed_keys = json_array();
	fo->forked = json_object();
	for (size_t i = 0; i < na->njobs; i++) {
		fork_job *j = &na->jobs[i];
		if (j->ref) {
			json_object_set_new(fo->forked, j->m->key, json_string(j->ref));
			json_array_append_new(j->expected.kind == TT_EXPECT_STATE ? fo->reset : fo->created,
					      json_string(j->m->key));
			json_t *d = json_pack("{s:s,s:s}", "key", j->m->key, "ref", j->ref);
			tt_error ignored = TT_ERROR_INIT;
			tt_oplog_progress(na->repo->root, na->op_id, "fork", d, &ignored);
			tt_error_clear(&ignored);
			json_decref(d);
		} else {
			json_array_append_new(fo->failed_keys, json_string(j->m->key));
			json_object_set_new(na->pending, j->m->key, json_string(j->target));
			if (j->expected.kind == TT_EXPECT_STATE)
				json_object_set(na->resets, j->m->key, (json_t *)j->expected.state);
			tt_buf_printf(&fo->why, "\n  %s: %s", j->m->key, tt_error_text(&j->err));
		}
	}
	json_object_update(na->working, fo->forked);
}

/* Each sharer of a scope goes where its first member went. */
static void settle_sharers(new_apply *na, new_forked *fo)
{
	size_t n = tt_plan_action_count(na->plan);
	for (size_t i = 0; i < n; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(na->plan, i, &a);
		if (strcmp(a.op, "share") != 0)
			continue;
		const char *first = json_string_value(json_object_get(a.params, "with"));
		if (!first)
			continue;
		if (json_object_get(fo->forked, first)) {
			json_object_set(na->working, a.key, json_object_get(fo->forked, first));
		} else if (json_object_get(na->pending, first)) {
			json_object_set(na->pending, a.key, json_object_get(na->pending, first));
			if (json_object_get(na->resets, first))
				json_object_set(na->resets, a.key, json_object_get(na->resets, first));
		} else if (json_object_get(na->reused, first)) {
			json_object_set_new(na->working, a.key, json_string(a.target));
			json_t *known = json_object_get(na->repo->ws.fork_points, a.key);
			json_object_set(na->reused, a.key, known ? known : json_object_get(a.params, "state"));
		}
	}
}

/* What each new branch was created from: promote's baseline.  Only
 * branches this `new` forked (and their sharers): an upstream branch on
 * the trunk has no fork point, and a recorded one would go stale. */
static void forked_fork_points(new_apply *na, new_forked *fo, json_t *fp)
{
	json_t *from_here = json_deep_copy(fo->forked);
	size_t n = tt_plan_action_count(na->plan);
	const char *k;
	json_t *v;
	for (size_t i = 0; i < n; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(na->plan, i, &a);
		if (strcmp(a.op, "share") == 0 && json_object_get(na->working, a.key))
			json_object_set_new(from_here, a.key, json_true());
	}
	json_object_foreach(from_here, k, v) {
		const tt_manifest *m = tt_manifests_find(&na->repo->objects, k);
		if (m && m->state)
			json_object_set(fp, k, m->state);
	}
	json_decref(from_here);
}

/* The workspace after the forks: working refs, pending forks, fork points, base states. */
static int record_forked(new_apply *na, new_forked *fo, tt_error *err)
{
	tt_workspace *ws = &na->repo->ws;
	set_working_refs(na);
	json_decref(ws->pending_forks);
	ws->pending_forks = json_deep_copy(na->pending);
	json_decref(ws->pending_resets);
	ws->pending_resets = json_deep_copy(na->resets);
	json_t *fp = of_leftovers(ws->fork_points, na->leftovers);
	forked_fork_points(na, fo, fp);
	json_object_update(fp, na->reused);
	json_decref(ws->fork_points);
	ws->fork_points = fp;
	json_t *mark = json_object();
	json_object_update(mark, na->working);
	json_object_update(mark, na->pending);
	mark_base_states(na->repo, mark);
	json_decref(mark);
	return tt_workspace_save(ws, na->repo->root, err);
}

/* The branches --adopt took as they are: {key: branch}, as printed (new reference). */
static json_t *adopted_branches(const tt_plan *plan)
{
	json_t *adopted = json_object();
	size_t n = tt_plan_action_count(plan);
	for (size_t i = 0; i < n; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		if (strcmp(a.op, "adopt") == 0 && json_is_true(json_object_get(a.params, "adopted")) && a.target)
			json_object_set_new(adopted, a.key, json_string(a.target));
	}
	sort_object_keys(adopted);
	return adopted;
}

/* The entry done.  As tether-vcs journals it: the reused keys, and the
 * heads of the branches reset as a late `pre`, and where the VCS is now
 * (where undo returns it).  A position that cannot be read leaves the
 * entry started, as an interrupted `new`'s: the same `new` again finishes
 * it (resuming_new). */
static int journal_forked(new_apply *na, new_forked *fo, tt_error *err)
{
	json_t *now = NULL;
	const char *k;
	json_t *v;
	int rc;
	if ((rc = position_for_journal(na, "recorded", &now, err)) < 0)
		return rc;
	json_t *reused_keys = json_array(), *done_pre = json_pack("{s:{}}", "heads");
	json_object_foreach(na->reused, k, v)
		json_array_append_new(reused_keys, json_string(k));
	sort_strings(reused_keys);
	for (size_t i = 0; i < na->njobs; i++)
		if (na->jobs[i].ref && na->jobs[i].expected.kind == TT_EXPECT_STATE)
			json_object_set(json_object_get(done_pre, "heads"), na->jobs[i].m->key,
					(json_t *)na->jobs[i].expected.state);
	json_t *adopted = adopted_branches(na->plan);
	na->result = json_pack("{s:o,s:s?,s:s?,s:o,s:o,s:o,s:o,s:O,s:O,s:o}", "vcs", now, "bookmark", na->bookmark,
			       "created_bookmark", na->create ? na->bookmark : NULL, "created", fo->created, "reset",
			       fo->reset, "reused", reused_keys, "adopted", adopted, "working_refs", na->working,
			       "pending_forks", na->pending, "failed", fo->failed_keys);
	fo->created = fo->reset = fo->failed_keys = NULL;
	if (!na->result) {
		json_decref(done_pre);
		return tt_error_oom(err);
	}
	rc = tt_oplog_done(na->repo->root, na->op_id, na->result, done_pre, NULL, err);
	json_decref(done_pre);
	return rc;
}

/* Some forks failed: the bookmark, the workspace and the other forks
 * stand, and the same command again forks the rest (see resuming_new). */
static int partly_forked(new_apply *na, new_forked *fo, bool *partial, tt_error *err)
{
	tt_buf again = TT_BUF_INIT;
	tt_buf_puts(&again, "tether new");
	if (na->create)
		tt_buf_printf(&again, " -b %s", na->bookmark);
	if (na->rev)
		tt_buf_printf(&again, " %s", na->rev);
	if (json_is_true(json_object_get(na->ctx, "eager")))
		tt_buf_puts(&again, " --eager");
	if (json_is_true(json_object_get(na->ctx, "shared")))
		tt_buf_puts(&again, " --shared");
	if (json_is_true(json_object_get(na->ctx, "discard")))
		tt_buf_puts(&again, " --discard");
	int rc = tt_error_set(err, TT_EBACKEND, "could not fork every working ref (the others were forked "
			      "and recorded):%s", fo->why.ptr);
	tt_error_hint(err, "fix what is named above, then run `%s` again: it finishes this `new`", again.ptr);
	tt_buf_release(&again);
	if (partial)
		*partial = true;
	return rc;
}

/* A failure after the journal's entry: the entry records it, and a
 * bookmark this run made goes again, so the failure changed nothing and
 * the same command can be run again as it was. */
static void fail_new(new_apply *na, tt_error *err)
{
	tt_error ignored = TT_ERROR_INIT;
	json_t *r = json_pack("{s:s}", "failed", tt_error_text(err));
	if (r && (na->made_bookmark || na->maybe_made) &&
	    take_back_bookmark(na->repo, na->bookmark, json_object_get(na->pre, "vcs"), na->made_bookmark,
			       &ignored) < 0) {
		json_t *left = NULL;
		tt_error lerr = TT_ERROR_INIT;
		tt_vcs_position(na->repo->vcs, &left, &lerr);
		tt_error_clear(&lerr);
		json_t *marks = NULL;
		if (tt_vcs_bookmarks(na->repo->vcs, &marks, &lerr) == 0 && json_object_get(marks, na->bookmark))
			json_object_set(r, "bookmark_at", json_object_get(marks, na->bookmark));
		tt_error_clear(&lerr);
		json_decref(marks);
		json_object_set_new(r, "created_bookmark", json_string(na->bookmark));
		json_object_set_new(r, "vcs", left ? left : json_null());
		tt_error_hint(err, "bookmark '%s' was made and could not be taken back (%s); fix what is named "
			      "above, then run the same `tether new` again: it finishes on that bookmark", na->bookmark,
			      tt_error_text(&ignored));
		tt_error_clear(&ignored);
	}
	tt_oplog_done(na->repo->root, na->op_id, r, NULL, NULL, &ignored);
	json_decref(r);
	tt_error_clear(&ignored);
}

static void new_apply_release(new_apply *na, new_forked *fo)
{
	for (size_t i = 0; i < na->njobs; i++) {
		free(na->jobs[i].ref);
		tt_error_clear(&na->jobs[i].err);
	}
	free(na->jobs);
	json_decref(na->pre);
	json_decref(na->position);
	json_decref(na->wstext);
	json_decref(na->heads);
	json_decref(na->plan_json);
	json_decref(na->working);
	json_decref(na->pending);
	json_decref(na->resets);
	json_decref(na->reused);
	json_decref(na->leftovers);
	json_decref(na->result);
	json_decref(fo->created);
	json_decref(fo->reset);
	json_decref(fo->failed_keys);
	json_decref(fo->forked);
	tt_buf_release(&fo->why);
}

/*
 * Apply `new`: refusals, the journal's entry, the VCS onto the bookmark,
 * then (unless --keep) the workspace as it will be with every fork
 * pending, the forks side by side, and the workspace and entry as they
 * came out.
 */
int tt_engine_apply_new(tt_repo *repo, const tt_plan *plan, bool verify, bool *partial, const char *parent,
			tt_error *err)
{
	json_t *ctx = tt_plan_context(plan);
	new_apply na = { .repo = repo, .plan = plan, .ctx = ctx, .heads = json_object(), .working = json_object(),
			 .pending = json_object(), .resets = json_object(), .reused = json_object(),
			 .leftovers = json_object() };
	new_forked fo = { .why = TT_BUF_INIT };
	bool untouched;
	int rc;

	if (partial)
		*partial = false;
	if (strcmp(tt_plan_command(plan), "new") != 0) {
		rc = tt_error_set(err, TT_ECONFIG, "expected a new plan, got '%s'", tt_plan_command(plan));
		goto done;
	}
	if (verify && (rc = tt_engine_check_preconditions(repo, plan, "new", err)) < 0)
		goto done;
	if ((rc = new_refusals(plan, err)) < 0)
		goto done;
	na.rev = json_string_value(json_object_get(ctx, "rev"));
	na.bookmark = json_string_value(json_object_get(ctx, "bookmark"));
	na.create = json_is_true(json_object_get(ctx, "create"));
	/* A name the VCS refuses (a plan file can carry any) is refused
	 * before the journal: refused input writes nothing. */
	if (na.create && (rc = tt_vcs_check_bookmark_name(repo->vcs, na.bookmark ? na.bookmark : "", err)) < 0)
		goto done;
	if ((rc = journal_new(&na, parent, err)) < 0)
		goto done;
	tt_fault("new:after-journal");
	if ((rc = land_new(&na, &untouched, err)) < 0) {
		if (untouched)
			goto done;
		goto failed;
	}
	if ((rc = tt_workspace_set_bookmark(&repo->ws, na.bookmark, err)) < 0)
		goto failed;
	if (json_is_true(json_object_get(ctx, "keep"))) {
		if ((rc = keep_working_refs(&na, err)) < 0)
			goto failed;
		rc = journal_kept(&na, err);
		goto done;
	}
	if ((rc = sort_new_actions(&na, err)) < 0 || (rc = record_interim(&na, err)) < 0 ||
	    (rc = fork_all(&na, err)) < 0)
		goto failed;
	collect_forks(&na, &fo);
	settle_sharers(&na, &fo);
	if ((rc = record_forked(&na, &fo, err)) < 0)
		goto failed;
	rc = journal_forked(&na, &fo, err);
	if (rc == 0 && fo.why.len)
		rc = partly_forked(&na, &fo, partial, err);
	goto done;

failed:
	fail_new(&na, err);
done:
	new_apply_release(&na, &fo);
	return rc;
}

/* --- the lazy fork and open -------------------------------------------------- */

/* What creating a deferred working branch carries from step to step. */
typedef struct lazy_fork {
	tt_repo *repo;
	const tt_manifest *m;
	const char *name; /* borrowed from the workspace: the pending branch's name */
	tt_backend *b;
	json_t *refs;	  /* the store's working refs (NULL: it cannot list them) */
	json_t *head;	  /* the branch's head, when it exists */
	json_t *pre, *wstext, *result;
	tt_expect expected; /* what the fork expects of the branch */
	char op_id[TT_OP_ID_LEN + 1]; /* "": nothing journalled */
} lazy_fork;

/* The branch as the store has it.  It exists: reset only onto the head
 * `new` reviewed; a branch already at the pin is taken as it is (*at_pin,
 * then a working ref already). */
static int branch_as_found(lazy_fork *lf, bool *at_pin, tt_error *err)
{
	const tt_manifest *m = lf->m;
	int rc;
	*at_pin = false;
	lf->expected = (tt_expect){ TT_EXPECT_ABSENT, NULL };
	if (tt_backend_has(lf->b, list_working_refs) &&
	    (rc = tt_backend_list_working_refs(lf->b, m->locator, &lf->refs, err)) < 0)
		return rc;
	if (!list_has(lf->refs, lf->name))
		return 0;
	if ((rc = tt_backend_fingerprint(lf->b, m->locator, lf->name, &lf->head, err)) < 0)
		return rc;
	if (m->state && tt_engine_same(m, lf->head, m->state)) {
		json_object_set_new(lf->repo->ws.working_refs, m->key, json_string(lf->name));
		*at_pin = true;
		return 0;
	}
	json_t *agreed = json_object_get(lf->repo->ws.pending_resets, m->key);
	if (!agreed || !tt_engine_same(m, lf->head, agreed)) {
		tt_buf s = TT_BUF_INIT;
		tt_short_state(&s, lf->head);
		rc = tt_error_set(err, TT_EREFMOVED, "branch %s holds writes (%s) that `new` did not see -- "
				  "another checkout or clone writes to it; a writable open never resets a "
				  "branch", lf->name, s.ptr);
		tt_error_hint(err, "`tether new --shared` works on it as it is, with those writes");
		tt_buf_release(&s);
		return rc;
	}
	lf->expected = (tt_expect){ TT_EXPECT_STATE, lf->head };
	return 0;
}

/* Another clone forked the branch between the listing and the fork, and
 * nothing was written: a failed attempt, journaled so. */
static int fork_raced(lazy_fork *lf, tt_error *err)
{
	tt_error ignored = TT_ERROR_INIT;
	char *why = tt_strdup(tt_error_text(err));
	json_t *r = json_pack("{s:s,s:s}", "key", lf->m->key, "failed", why ? why : "");
	tt_oplog_done(lf->repo->root, lf->op_id, r, NULL, NULL, &ignored);
	json_decref(r);
	tt_error_clear(&ignored);
	tt_error_clear(err);
	int rc = tt_error_set(err, TT_EREFMOVED, "branch %s was created by another checkout since it was listed "
			      "(%s), which may be writing to it; a writable open never resets a branch", lf->name,
			      why ? why : "");
	tt_error_hint(err, "`tether new --shared` works on it as it is, with those writes");
	free(why);
	return rc;
}

/* The fork, journalled, and the key's working ref on it. */
static int fork_pending(lazy_fork *lf, tt_error *err)
{
	const tt_manifest *m = lf->m;
	int rc;
	if ((rc = workspace_text(lf->repo, &lf->wstext, err)) < 0)
		return rc;
	lf->pre = json_pack("{s:O}", "workspace", lf->wstext);
	if (lf->head)
		json_object_set_new(lf->pre, "heads", json_pack("{s:O}", m->key, lf->head));
	if ((rc = tt_oplog_begin(lf->repo->root, "fork", NULL, lf->pre, NULL, lf->op_id, err)) < 0)
		return rc;
	char *ref = NULL;
	if ((rc = tt_engine_fork_from_manifest(lf->repo, m, lf->name, &lf->expected, &ref, err)) < 0) {
		/* Any failure but a race may have left part of a fork
		 * behind: the entry stays started, as an interrupted fork's
		 * does, for the rerun to finish. */
		return rc == TT_EREFMOVED ? fork_raced(lf, err) : rc;
	}
	json_object_set_new(lf->repo->ws.working_refs, m->key, json_string(ref));
	lf->result = json_pack("{s:s,s:s,s:s,s:O}", "key", m->key, "ref", ref, "kind", m->kind, "locator",
			       m->locator);
	free(ref);
	return 0;
}

/* Is the pending key k (branch v) a sibling on want in m's branch space
 * (kind and scope: one store)?  *sm: its manifest. */
static bool writes_through(tt_repo *repo, const tt_manifest *m, const char *scope, const char *want,
			   const char *k, json_t *v, const tt_manifest **sm)
{
	if (!want || !json_is_string(v) || strcmp(json_string_value(v), want) != 0)
		return false;
	*sm = tt_manifests_find(&repo->objects, k);
	if (!*sm || strcmp((*sm)->kind, m->kind) != 0)
		return false;
	char *sscope = NULL;
	tt_error ig = TT_ERROR_INIT;
	bool same = strcmp(k, m->key) == 0 ||
		    (scope && tt_engine_branch_scope(repo, *sm, &sscope, &ig) == 0 && sscope && strcmp(sscope, scope) == 0);
	tt_error_clear(&ig);
	free(sscope);
	return same;
}

/* This key and every sibling pending on the same branch of the same
 * branch space write through it.  The names are copied: deleting the
 * pending entries frees theirs. */
static void write_through_siblings(tt_repo *repo, const tt_manifest *m, const char *name)
{
	const char *k;
	json_t *v;
	void *tmp;
	char *want = tt_strdup(name), *scope = NULL;
	tt_error ig = TT_ERROR_INIT;
	if (tt_engine_branch_scope(repo, m, &scope, &ig) < 0)
		scope = NULL; /* no sibling is known to share it */
	tt_error_clear(&ig);
	const char *made = json_string_value(json_object_get(repo->ws.working_refs, m->key));
	json_object_foreach_safe(repo->ws.pending_forks, tmp, k, v) {
		const tt_manifest *sm = NULL;
		if (!writes_through(repo, m, scope, want, k, v, &sm))
			continue;
		json_object_set_new(repo->ws.working_refs, k, json_string(made));
		if (sm->state) {
			json_object_set(repo->ws.fork_points, k, sm->state);
			json_object_set(repo->ws.base_states, k, sm->state);
		}
		json_object_del(repo->ws.pending_resets, k);
		json_object_del(repo->ws.pending_forks, k);
	}
	free(want);
	free(scope);
	json_object_del(repo->ws.pending_forks, m->key);
	json_object_del(repo->ws.pending_resets, m->key);
}

/* Create the deferred working branch of key now (the first writable open):
 * refused on a stale working copy; the branch as found, forked unless it
 * is at the pin, then the key and its siblings write through it. */
static int materialize_fork(tt_repo *repo, const tt_manifest *m, char **ref_out, tt_error *err)
{
	json_t *have = json_object_get(repo->ws.working_refs, m->key);
	lazy_fork lf = { .repo = repo, .m = m };
	json_t *stale = NULL;
	tt_lock rlock = TT_LOCK_INIT;
	bool at_pin;
	int rc = 0;
	lf.name = json_string_value(json_object_get(repo->ws.pending_forks, m->key));
	*ref_out = NULL;
	if (json_is_string(have)) {
		*ref_out = tt_strdup(json_string_value(have));
		return *ref_out ? 0 : tt_error_oom(err);
	}
	if (!lf.name) {
		tt_error_set(err, TT_ECONFIG, "no working branch pending for '%s'", m->key);
		tt_error_hint(err, "run `tether new` (or `tether new -b NAME`) first");
		return tt_error_object(err, m->key, m->kind);
	}
	stale = tt_engine_stale_keys(repo);
	if (json_array_size(stale)) {
		rc = tt_error_set(err, TT_ECONFIG, "working copy is stale: the committed state of %s changed "
				  "since `new`; run `tether new` before writing",
				  json_string_value(json_array_get(stale, 0)));
		goto done;
	}
	if ((rc = tt_engine_backend(repo, m->kind, &lf.b, err)) < 0 ||
	    (rc = tt_engine_repo_lock(repo, &rlock, err)) < 0 || (rc = branch_as_found(&lf, &at_pin, err)) < 0)
		goto done;
	if (!at_pin && (rc = fork_pending(&lf, err)) < 0)
		goto done;
	write_through_siblings(repo, m, lf.name);
	if ((rc = tt_workspace_save(&repo->ws, repo->root, err)) < 0)
		goto done;
	if (lf.op_id[0] && (rc = tt_oplog_done(repo->root, lf.op_id, lf.result, NULL, NULL, err)) < 0)
		goto done;
	*ref_out = tt_strdup(json_string_value(json_object_get(repo->ws.working_refs, m->key)));
	if (!*ref_out)
		rc = tt_error_oom(err);
done:
	tt_lock_release(&rlock);
	json_decref(stale);
	json_decref(lf.refs);
	json_decref(lf.head);
	json_decref(lf.pre);
	json_decref(lf.wstext);
	json_decref(lf.result);
	return rc;
}

/* A handle as tether-vcs describes it: `key` the store's path or URI, `type`
 * its handle class; the object key and kind stay as `object` and `kind`. */
static void handle_shape(json_t *h, const char *object)
{
	static const char *const classes[][2] = {
		{ "git", "GitHandle" },         { "file", "FileHandle" },   { "icechunk", "IcechunkHandle" },
		{ "lance", "LanceHandle" },     { "delta", "DeltaHandle" }, { "memory", "MemoryHandle" },
		{ "neon", "NeonHandle" },       { "iceberg", "IcebergHandle" },
		{ "ducklake", "DuckLakeHandle" }, { "dolt", "DoltHandle" },
	};
	const char *kind = json_string_value(json_object_get(h, "type"));
	json_t *where = json_object_get(h, "path");
	if (!json_is_string(where))
		where = json_object_get(h, "uri");
	if (!json_is_string(where))
		where = json_object_get(h, "system");
	if (!json_is_string(where))
		where = json_object_get(h, "metadata"); /* ducklake */
	if (!json_is_string(where))
		where = json_object_get(h, "identifier"); /* iceberg: the table */
	if (!json_is_string(where))
		where = json_object_get(h, "database"); /* dolt */
	if (!json_is_string(where))
		where = json_object_get(h, "branch"); /* neon: the branch it opens */
	json_object_set_new(h, "key", json_is_string(where) ? json_copy(where) : json_string(object));
	json_object_set_new(h, "object", json_string(object));
	if (!kind)
		return;
	json_object_set_new(h, "kind", json_string(kind));
	for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++)
		if (strcmp(kind, classes[i][0]) == 0) {
			/* replacing "type" frees the string kind points into */
			json_object_set_new(h, "type", json_string(classes[i][1]));
			break;
		}
}

/* A writable open writes the bookmark's branches: refused while the
 * dataset's checkout is elsewhere (a `git checkout` behind tether's back),
 * naming the command that puts things right. */
static int on_bookmark(tt_repo *repo, const tt_manifest *m, tt_error *err)
{
	const char *b = repo->ws.bookmark;
	char *here = NULL;
	bool on = false;
	int rc;
	if (strcmp(tt_vcs_kind(repo->vcs), "jj") == 0) {
		/* jj's working copy sits on a change above the bookmark */
		if ((rc = tt_vcs_is_ancestor(repo->vcs, b, "@", &on, err)) < 0)
			return rc;
	} else {
		if ((rc = tt_vcs_current_bookmark(repo->vcs, &here, err)) < 0)
			return rc;
		on = here && strcmp(here, b) == 0;
	}
	if (!on) {
		tt_error_set(err, TT_ECONFIG, "the working copy has left bookmark '%s' (now on %s); a "
			     "writable open would write that bookmark's branches from elsewhere", b,
			     here ? here : "no bookmark");
		tt_error_object(err, m->key, m->kind);
		if (here)
			tt_error_hint(err, "`tether new %s` returns to it; `tether new %s` works where you are",
				      b, here);
		else
			tt_error_hint(err, "`tether new %s` returns to it; `tether new -b NAME` starts a "
				      "bookmark where you are", b);
		rc = TT_ECONFIG;
	}
	free(here);
	return rc;
}

/*
 * For a caller in this process that opens the store itself (the Python
 * package's handles): the resolved options of a store on an object-store
 * URI, credentials included, as `secret_storage_options` (a secret_ key:
 * never printed).  Literal keys as given; a profile or role is resolved
 * to the keys it yields now.
 */
static int storage_options_into(tt_backend *b, const json_t *loc, json_t *h, tt_error *err);

/* ...and on failure the handle is dropped: nothing half-described. */
static int attach_storage_options(tt_backend *b, const json_t *loc, json_t **h, tt_error *err)
{
	int rc = *h ? storage_options_into(b, loc, *h, err) : 0;
	if (rc < 0) {
		json_decref(*h);
		*h = NULL;
	}
	return rc;
}

static int storage_options_into(tt_backend *b, const json_t *loc, json_t *h, tt_error *err)
{
	const char *uri = json_string_value(json_object_get(h, "uri"));
	json_t *o = NULL;
	int rc;
	if (!uri || !strstr(uri, "://") || strncmp(uri, "file://", 7) == 0)
		return 0;
	if ((rc = tt_backend_storage_options(b, loc, &o, err)) != 0 || !o)
		return rc;
	if (strncmp(uri, "s3://", 5) == 0 && !json_object_get(o, "access_key_id") &&
	    (json_object_get(o, "profile") || json_object_get(o, "role_arn"))) {
		tt_aws_resolved r = { 0 };
		if ((rc = tt_aws_resolve(o, &r, err)) == 0 && r.access_key_id && r.secret_access_key) {
			json_object_set_new(o, "access_key_id", json_string(r.access_key_id));
			json_object_set_new(o, "secret_access_key", json_string(r.secret_access_key));
			if (r.session_token)
				json_object_set_new(o, "session_token", json_string(r.session_token));
			json_object_del(o, "profile");
			json_object_del(o, "role_arn");
		}
		tt_aws_resolved_release(&r);
		if (rc) {
			json_decref(o);
			return rc;
		}
	}
	if (json_object_set_new(h, "secret_storage_options", o) < 0)
		return tt_error_oom(err);
	return 0;
}

/*
 * A committed object opened read-only at what its manifest records: the
 * verified pin, else the recorded state where the kind can address it;
 * an Observed object is refused naming where.  The backend's handle
 * with its storage options (before tt_repo_open_handle's reshaping).
 */
int tt_engine_open_recorded(tt_repo *repo, const tt_manifest *m, const char *where, json_t **out,
			    tt_error *err)
{
	unsigned caps = tt_engine_caps(repo, m);
	tt_backend *b;
	tt_pin pin;
	tt_target t;
	int rc;
	*out = NULL;
	if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0)
		return tt_error_object(err, m->key, m->kind);
	if (m->pin_id && (caps & TT_CAP_PIN)) {
		if ((rc = tt_engine_pinned_source(repo, m, b, &pin, &t, err)) < 0)
			return rc;
	} else if (caps & TT_CAP_ADDRESSABLE) {
		t = (tt_target){ .kind = TT_TARGET_STATE, .state = m->state };
	} else {
		rc = tt_error_set(err, TT_ECAPABILITY, "'%s' (%s) is Observed-tier; its state at %s is not "
				  "recoverable", m->key, m->kind, where);
		return tt_error_object(err, m->key, m->kind);
	}
	if ((rc = tt_backend_open(b, m->locator, &t, true, out, err)) < 0 ||
	    (rc = attach_storage_options(b, m->locator, out, err)) < 0)
		return tt_error_object(err, m->key, m->kind);
	return 0;
}

int tt_engine_open_shown(tt_repo *repo, const tt_manifest *m, const char *where, json_t **out, tt_error *err)
{
	int rc = tt_engine_open_recorded(repo, m, where, out, err);
	if (rc < 0)
		return rc;
	handle_shape(*out, m->key);
	const char *k;
	void *tmp;
	json_t *v;
	json_object_foreach_safe(*out, tmp, k, v)
		if (strcmp(k, "url_with_password") == 0 || strncmp(k, "secret_", 7) == 0)
			json_object_del(*out, k);
	return 0;
}

int tt_repo_open_object(tt_repo *repo, const char *key, const char *rev, int read_only, json_t **out,
			tt_error *err)
{
	tt_open_opts o = { .version = TT_OPEN_OPTS_VERSION, .rev = rev, .read_only = read_only };
	return tt_repo_open_handle(repo, key, &o, out, err);
}

/* Read-only at what that commit pinned or recorded. */
static int open_at_rev(tt_repo *repo, const char *key, const char *rev, json_t **out, tt_error *err)
{
	tt_manifest_set at = { 0 };
	int rc;
	if ((rc = tt_engine_objects_at(repo, rev, &at, NULL, err)) < 0)
		return rc;
	const tt_manifest *m = tt_manifests_find(&at, key);
	if (!m)
		rc = tt_error_set(err, TT_ECONFIG, "object '%s' does not exist at %s", key, rev);
	else if (!m->state)
		rc = tt_error_set(err, TT_ECONFIG, "'%s' has no committed state at %s", key, rev);
	else
		rc = tt_engine_open_recorded(repo, m, rev, out, err);
	tt_manifests_release(&at);
	return rc;
}

/* A writable handle needs a kind that forks and a working copy on a bookmark. */
static int writable_allowed(tt_repo *repo, const tt_manifest *m, unsigned caps, tt_error *err)
{
	int rc;
	if (!(caps & TT_CAP_FORK)) {
		rc = tt_error_set(err, TT_ECAPABILITY, "'%s' (%s, tier %s) does not support writable "
				  "handles; open it --read-only", m->key, m->kind, tt_tier_name(caps));
		tt_error_object(err, m->key, m->kind);
		return rc;
	}
	if (!repo->ws.bookmark) {
		rc = tt_error_set(err, TT_ECONFIG, "this working copy is on no bookmark and is read-only");
		tt_error_hint(err, "`tether new -b NAME` to start one, or `tether new NAME` to join one");
		return rc;
	}
	return 0;
}

/* Where the branch is checked out (or a new checkout of it), in the
 * handle; on failure the handle goes. */
static int checkout_into(tt_backend *b, const tt_manifest *m, const char *ref, const char *worktree, json_t **out,
			 tt_error *err)
{
	char *where = NULL;
	int rc;
	if ((rc = tt_backend_checkout(b, m->locator, ref, worktree, &where, err)) < 0) {
		tt_error_object(err, m->key, m->kind);
		json_decref(*out);
		*out = NULL;
		return rc;
	}
	json_object_set_new(*out, "worktree", where ? json_string(where) : json_null());
	free(where);
	return 0;
}

/* Under the repo's lock: the object's working branch (created now when
 * it was deferred), opened writable.  *ref: caller frees. */
static int open_working_branch(tt_repo *repo, tt_backend *b, const char *key, const char *worktree, char **ref,
			       json_t **out, tt_error *err)
{
	int rc;
	const tt_manifest *m = tt_manifests_find(&repo->objects, key); /* re-read under the lock */
	if (!m)
		return tt_error_set(err, TT_ECONFIG, "no such object: %s", key);
	if ((rc = on_bookmark(repo, m, err)) < 0 || (rc = tt_engine_working_ref(repo, m, ref, err)) < 0)
		return rc;
	if (!*ref && (rc = materialize_fork(repo, m, ref, err)) < 0)
		return rc;
	tt_target t = { .kind = TT_TARGET_REF, .ref = *ref };
	if ((rc = tt_backend_open(b, m->locator, &t, false, out, err)) < 0 ||
	    (rc = attach_storage_options(b, m->locator, out, err)) < 0) {
		tt_error_object(err, key, m->kind);
		return rc;
	}
	if (tt_backend_has(b, checkout))
		return checkout_into(b, m, *ref, worktree, out, err);
	return 0;
}

/* Read-only: at the working ref when there is one, else the committed
 * pin or state, else the base.  *ref: caller frees. */
static int open_read_only(tt_repo *repo, tt_backend *b, const tt_manifest *m, char **ref, json_t **out,
			  tt_error *err)
{
	int rc;
	if ((rc = tt_engine_working_ref(repo, m, ref, err)) < 0)
		return rc;
	tt_target t = { .kind = TT_TARGET_BASE };
	tt_pin pin;
	if (*ref)
		t = (tt_target){ .kind = TT_TARGET_REF, .ref = *ref };
	else if (m->state && (rc = tt_engine_pinned_source(repo, m, b, &pin, &t, err)) < 0) {
		if (rc != TT_ECAPABILITY)
			return rc;
		tt_error_clear(err);
		t = (tt_target){ .kind = TT_TARGET_BASE };
		rc = 0;
	}
	if ((rc = tt_backend_open(b, m->locator, &t, true, out, err)) < 0 ||
	    (rc = attach_storage_options(b, m->locator, out, err)) < 0)
		tt_error_object(err, m->key, m->kind);
	return rc;
}

/*
 * A native handle on key: read-only at a revision, writable on this
 * bookmark's working branch (under the repo's lock), or read-only here.
 */
int tt_repo_open_handle(tt_repo *repo, const char *key, const tt_open_opts *opts, json_t **out,
			tt_error *err)
{
	TT_CHECK_OPTS(opts, tt_open_opts, TT_OPEN_OPTS_VERSION, err);
	const char *rev = opts->rev;
	int read_only = opts->read_only;
	tt_backend *b;
	char *ref = NULL;
	int rc;
	bool locked = false;
	*out = NULL;
	if (!rev) {
		const char *env = getenv("TETHER_REV");
		rev = env && *env ? env : NULL;
	}
	if (rev && opts->worktree)
		return tt_error_set(err, TT_EUSAGE, "a worktree is a checkout of a writable branch; "
				    "opening at %s is read-only (leave out --worktree)", rev);
	if (rev) {
		rc = open_at_rev(repo, key, rev, out, err);
		goto done;
	}
	const tt_manifest *m = tt_manifests_find(&repo->objects, key);
	if (!m) {
		tt_error_set(err, TT_ECONFIG, "no such object: %s", key);
		tt_engine_key_hint(err, &repo->objects, key);
		return TT_ECONFIG;
	}
	unsigned caps = tt_engine_caps(repo, m);
	bool forkable = (caps & TT_CAP_FORK) != 0;
	bool want_write = read_only < 0 ? forkable : read_only == 0;
	if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0)
		return tt_error_object(err, key, m->kind);
	if (opts->worktree && (!want_write || !tt_backend_has(b, checkout))) {
		rc = tt_error_set(err, TT_EUSAGE, "a worktree is a checkout of a writable branch; '%s' "
				  "opens %s", key, !want_write ? "read-only" : "no branch checkout (not git)");
		tt_error_hint(err, "leave out --worktree%s", !want_write && forkable ? ", or open --writable" : "");
		tt_error_object(err, key, m->kind);
		goto done;
	}
	if (!want_write) {
		rc = open_read_only(repo, b, m, &ref, out, err);
		goto done;
	}
	if ((rc = writable_allowed(repo, m, caps, err)) < 0 || (rc = tt_repo_lock(repo, err)) < 0)
		goto done;
	locked = true;
	rc = open_working_branch(repo, b, key, opts->worktree, &ref, out, err);
done:
	if (locked)
		tt_repo_unlock(repo);
	free(ref);
	if (rc == 0 && *out)
		handle_shape(*out, key);
	return rc;
}

/* --- public `new` -------------------------------------------------------------- */

static int plan_new(tt_repo *repo, void *ctx, bool applying, tt_plan **out, tt_error *err)
{
	(void)applying;
	return tt_engine_plan_new(repo, ctx, out, err);
}

static int apply_new(tt_repo *repo, void *ctx, const tt_plan *plan, bool saved, json_t **out, tt_error *err)
{
	(void)ctx;
	bool partial = false;
	int rc = tt_engine_apply_new(repo, plan, saved, &partial, NULL, err);
	if (rc < 0 && !partial)
		return rc;
	/* With a partial success: what took effect, beside the error. */
	if (out) {
		json_t *adopted = json_object(), *details = json_object();
		for (size_t i = 0; adopted && details && i < tt_plan_action_count(plan); i++) {
			tt_plan_action_view a;
			tt_plan_action_at(plan, i, &a);
			if (strcmp(a.op, "adopt") == 0 && json_is_true(json_object_get(a.params, "adopted"))) {
				json_object_set_new(adopted, a.key, json_string(a.target));
				json_object_set_new(details, a.key, json_string(a.detail));
			}
		}
		*out = json_pack("{s:s?,s:O,s:O,s:O,s:o,s:o}", "bookmark", repo->ws.bookmark, "working_refs",
				 repo->ws.working_refs, "pending_forks", repo->ws.pending_forks, "fork_points",
				 repo->ws.fork_points, "adopted", adopted, "adopted_detail", details);
	}
	return rc;
}

static const tt_planned_cmd new_cmd = {
	.command = "new",
	.locks = TT_PLANNED_CHECKOUT | TT_PLANNED_REPOSITORY,
	.plan = plan_new,
	.apply = apply_new,
};

int tt_engine_repo_new(tt_repo *repo, const tt_new_opts *o, const char *from_plan, size_t from_len,
		char **plan_json, char **plan_text, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(o, tt_new_opts, TT_NEW_OPTS_VERSION, err);
	tt_planned_run run = { .dry = plan_json != NULL, .from = from_plan, .from_len = from_len,
			       .plan_json = plan_json, .plan_text = plan_text, .out = out };
	return tt_engine_run_planned(repo, &new_cmd, (void *)o, &run, err);
}
