/*
 * engine/gc/gc_pins.c - gc: the unpin job: which pins of this namespace nothing
 * names, and the cautions that keep them (shared, committed, published,
 * unfetched); forgetting removed objects' working refs.
 */
#include "engine/gc/gc_pins.h"

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
#include "engine/kernel/context.h"
#include "engine/kernel/revisions.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/fault.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/gc/state.h"

/*
 * The pin ids named by commits that left this clone (or came from another)
 * and have been rewritten away since (see published_revs): clones that
 * fetched them may still name their pins.  Read once per plan.
 */
static int pins_of_revs(gc_state *s, json_t *revs, json_t *into, tt_error *err);

static int published_pins(gc_state *s, tt_error *err)
{
	tt_vcs *v = s->repo->vcs;
	json_t *revs = NULL;
	int rc = 0;
	if (s->published)
		return 0;
	if (!(s->published = json_object()))
		return tt_error_oom(err);
	if (tt_vcs_has(v, published_revs) && (rc = tt_vcs_published_revs(v, &revs, err)) == 0)
		rc = pins_of_revs(s, revs, s->published, err);
	json_decref(revs);
	return rc;
}

/*
 * The pin ids named by commits this repository held once and that no ref
 * reaches any more (see held_revs): a clone made from this repository
 * before they were rewritten away may still name their pins, and git
 * leaves no trace of such a clone here.  Read once per plan; reflogs that
 * cannot be read leave s->held_unread saying so.
 */
static int held_pins(gc_state *s, tt_error *err)
{
	tt_vcs *v = s->repo->vcs;
	json_t *revs = NULL;
	int rc = 0;
	if (s->held)
		return 0;
	if (!(s->held = json_object()))
		return tt_error_oom(err);
	if (!tt_vcs_has(v, held_revs))
		return 0;
	tt_error e = TT_ERROR_INIT;
	if (tt_vcs_held_revs(v, &revs, &e) < 0) {
		if (e.code == TT_ENOMEM) {
			tt_error_move(err, &e);
			return err->code;
		}
		s->held_unread = tt_strdup(tt_error_text(&e));
		tt_error_clear(&e);
		return s->held_unread ? 0 : tt_error_oom(err);
	}
	rc = pins_of_revs(s, revs, s->held, err);
	json_decref(revs);
	return rc;
}

/* Add to set `into` the pin id of every manifest in the commits `revs`. */
static int pins_of_revs(gc_state *s, json_t *revs, json_t *into, tt_error *err)
{
	tt_vcs *v = s->repo->vcs;
	json_t *files = NULL;
	tt_manifest_memo memo = { 0 };
	int rc = 0;
	if (!json_array_size(revs))
		return 0;
	size_t n = json_array_size(revs), i;
	const char **ids = tt_calloc(n, sizeof *ids);
	if (!ids || !(memo.texts = json_object())) {
		free(ids);
		rc = tt_error_oom(err);
		goto done;
	}
	for (i = 0; i < n; i++)
		ids[i] = json_string_value(json_array_get(revs, i));
	rc = tt_vcs_files_at_many(v, ids, n, s->w.reldir, &files, err);
	free(ids);
	if (rc < 0)
		goto done;
	const char *rev, *path;
	json_t *tree, *text;
	json_object_foreach(files, rev, tree) {
		json_object_foreach(tree, path, text) {
			size_t pi;
			if (!tt_engine_is_manifest_path(s->w.reldir, path))
				continue;
			if ((rc = tt_manifest_memo_get(&memo, text, rev, path, &pi, NULL, err)) < 0)
				goto done;
			if (memo.items[pi].pin_id && tt_gc_set_add(into, memo.items[pi].pin_id) < 0) {
				rc = tt_error_oom(err);
				goto done;
			}
		}
	}
done:
	tt_manifest_memo_release(&memo);
	json_decref(files);
	return rc;
}

/*
 * A pin this clone created, in a repository with no remote: released only
 * when no commit of this repository ever named it (a crashed or rolled
 * back commit's).  One that a commit named - the index's mark, or a commit
 * a reflog still holds - may be named by a clone made from this repository
 * before the commit was rewritten away: `git clone` leaves no trace in the
 * repository it reads, so gc keeps it (kept "committed") until
 * --release-foreign.  drop's own plan (a scope) and abandon's are the
 * decision to release what the commits they remove name, and are not held
 * back.
 */
static int committed_caution(gc_state *s, const char *pid, char **why, const char **kept,
			     tt_error *err)
{
	int rc;
	if (s->scope || s->after_rewrite)
		return 0;
	if (!tt_gc_set_has(s->committed, pid)) {
		if ((rc = held_pins(s, err)) < 0)
			return rc;
		if (!s->held_unread && !tt_gc_set_has(s->held, pid))
			return 0;
	}
	*kept = "committed";
	if (s->held_unread)
		*why = tt_asprintf("no manifest in history references it; created by this clone, but %s, so gc "
				   "cannot tell whether a commit of this repository named it, and a clone made "
				   "from this repository may (--release-foreign releases it)", s->held_unread);
	else
		*why = tt_strdup("no manifest in history references it; created by this clone, but a commit of "
				 "this repository named it and has been rewritten away since: a clone made from "
				 "this repository may still name it, and gc cannot see such clones (add each as "
				 "a remote and fetch it, or --release-foreign)");
	return *why ? 0 : tt_error_oom(err);
}

/*
 * The keep-or-release decision for one pin of this dataset that nothing
 * this clone can see names (see the file comment): *why is NULL to
 * release it, otherwise the keep-pin's detail (caller frees); *kept says
 * which caution kept it ("published", "foreign", "shared", "committed" or
 * "unfetched").
 */
static int pin_caution(gc_state *s, const char *pid, bool known, char **why, const char **kept,
		       tt_error *err)
{
	const char *remotes = NULL, *unfetched = NULL;
	int rc;
	*why = NULL;
	*kept = NULL;
	if ((rc = published_pins(s, err)) < 0)
		return rc;
	if (tt_gc_set_has(s->published, pid)) {
		/* Known to have left: even --release-foreign keeps it. */
		*kept = "published";
		*why = tt_strdup("no manifest in history references it, but a commit a remote-tracking ref "
				 "held (pushed or fetched, and rewritten since) names it: clones that fetched "
				 "that commit may still name it (once none does, expiring the remote-tracking "
				 "reflogs - git reflog expire --expire=now --all - lets gc release it)");
	} else if (!known && !s->o->release_foreign) {
		*kept = "foreign";
		*why = tt_strdup("no manifest in history references it; not created by this clone -- another "
				 "clone's commits may name it (fetch them, or --release-foreign)");
	} else if (!s->o->release_foreign) {
		if ((rc = tt_gc_sharing_remotes(s, &remotes, err)) < 0)
			return rc;
		if (!remotes)
			return committed_caution(s, pid, why, kept, err);
		*kept = "shared";
		*why = tt_asprintf("no manifest in history references it; created by this clone, but the "
				   "dataset is shared through remote(s) %s: another clone that committed the "
				   "same state shares this pin, and its unpushed commits may name it (fetch "
				   "every clone's work, then --release-foreign)", remotes);
	} else {
		if ((rc = tt_gc_remote_unfetched(s, &unfetched, err)) < 0)
			return rc;
		if (!unfetched)
			return 0;
		*kept = "unfetched";
		*why = tt_asprintf("no manifest in history references it, but %s", unfetched);
	}
	return *why ? 0 : tt_error_oom(err);
}

/* The pins a store lists by id: id -> [listed generations], in order of
 * first listing (*out: new reference). */
static int pins_by_id(json_t *listed, json_t **out, tt_error *err)
{
	json_t *live = json_object(), *v;
	size_t i;
	*out = NULL;
	json_array_foreach(listed, i, v) {
		char *pid = tt_gc_pin_of_listed(json_string_value(v));
		if (!pid || tt_gc_map_append(live, pid, json_string(json_string_value(v))) < 0) {
			free(pid);
			json_decref(live);
			return tt_error_oom(err);
		}
		free(pid);
	}
	*out = live;
	return 0;
}

/* Into mine (sorted): this dataset's pins among live that no manifest
 * references and no unfinished operation holds; notes on other datasets'
 * pins and the running ones. */
static int releasable_pins(gc_state *s, const tt_manifest *m, json_t *live, json_t *mine, tt_error *err)
{
	size_t nlive = json_object_size(live), nmine = 0, nrunning = 0;
	const char *pid;
	json_t *v;
	int rc;
	json_object_foreach(live, pid, v) {
		char ds[TT_DATASET_ID_LEN + 1];
		if (!tt_pin_dataset(pid, ds) || strcmp(ds, s->repo->config.dataset_id) != 0)
			continue;
		nmine++;
		if (tt_gc_set_has(s->w.referenced, pid))
			continue;
		if (tt_gc_set_has(s->inflight, pid)) {
			nrunning++;
			continue;
		}
		json_array_append_new(mine, json_string(pid));
	}
	if (nlive > nmine &&
	    (rc = tt_gc_note(s->plan, tt_asprintf("%s: %zu pin(s) of other datasets left alone", m->key,
						  nlive - nmine), err)) < 0)
		return rc;
	if (nrunning &&
	    (rc = tt_gc_note(s->plan, tt_asprintf("%s: %zu pin(s) of unfinished operation(s) kept (see "
						  "`tether ops`)", m->key, nrunning), err)) < 0)
		return rc;
	/* sorted(mine - referenced - running) */
	tt_gc_sort_strings(mine);
	return 0;
}

/* The params of pin id's release: its generations other than the plain
 * ref (gens) are unpinned too.  New reference; NULL: out of memory. */
static json_t *unpin_params(const tt_manifest *m, const char *id, const json_t *gens)
{
	json_t *params = json_pack("{s:O,s:s}", "locator", m->locator, "pin_id", id);
	if (params && (json_array_size(gens) > 1 || strcmp(json_string_value(json_array_get(gens, 0)), id) != 0)) {
		json_t *refs = json_array();
		size_t g;
		json_t *gv;
		json_array_foreach(gens, g, gv) {
			char *r = tt_asprintf("tether.%s", json_string_value(gv));
			json_array_append_new(refs, json_string(r ? r : ""));
			free(r);
		}
		json_object_set_new(params, "refs", refs);
	}
	return params;
}

/* The unpin of pin id in m's store, or keep-pin where a caution holds it;
 * once per store (planned: kind\x1fid, seen under another namespace). */
static int plan_pin_release(gc_state *s, const tt_manifest *m, const char *id, json_t *live, json_t *planned,
			    tt_error *err)
{
	char ref[TT_PIN_ID_MAX + 8];
	char *pkey = tt_asprintf("%s\x1f%s", m->kind, id);
	if (!pkey)
		return tt_error_oom(err);
	bool dup = tt_gc_set_has(planned, pkey);   /* the same store under another namespace */
	tt_gc_set_add(planned, pkey);
	free(pkey);
	if (dup)
		return 0;
	tt_ref_for_pin(ref, sizeof ref, id);
	bool known = tt_gc_set_has(s->known, id);
	json_t *params = unpin_params(m, id, json_object_get(live, id));
	if (!params)
		return tt_error_oom(err);
	char *why = NULL;
	const char *kept = NULL;
	int rc;
	if ((rc = pin_caution(s, id, known, &why, &kept, err)) < 0) {
		json_decref(params);
		return rc;
	}
	/* The cautions tether-vcs lacks say which in the plan. */
	if (kept && strcmp(kept, "foreign") != 0)
		rc = json_object_set_new(params, "kept", json_string(kept)) < 0 ? tt_error_oom(err) : 0;
	if (rc == 0 && why)
		rc = tt_plan_action(s->plan, "keep-pin", m->key, m->kind, ref, why, params, err);
	else if (rc == 0)
		rc = tt_plan_action(s->plan, "unpin", m->key, m->kind, ref,
				    known ? "no manifest in history references it"
					  : "no manifest in history references it; not created by "
					    "this clone", params, err);
	free(why);
	json_decref(params);
	return rc;
}

/* The releases of the pins in m's store (namespace ns), once per store
 * (checked). */
static int plan_store_unpins(gc_state *s, const tt_manifest *m, const char *ns, json_t *checked, json_t *planned,
			     tt_error *err)
{
	tt_backend *b;
	json_t *listed = NULL, *live = NULL, *mine = NULL, *v;
	size_t i;
	int rc;
	if ((rc = tt_engine_backend(s->repo, m->kind, &b, err)) < 0)
		return rc;
	if (!(b->kind->caps & TT_CAP_PIN) || !tt_backend_has(b, list_pins) || tt_gc_set_has(checked, ns))
		return 0;
	tt_gc_set_add(checked, ns);
	if ((rc = tt_backend_list_pins(b, m->locator, &listed, err)) < 0) {
		tt_gc_object_error(err, m->key, m->kind);
		return rc;
	}
	rc = pins_by_id(listed, &live, err);
	json_decref(listed);
	if (rc < 0)
		return rc;
	mine = json_array();
	if ((rc = releasable_pins(s, m, live, mine, err)) < 0)
		goto out;
	json_array_foreach(mine, i, v)
		if ((rc = plan_pin_release(s, m, json_string_value(v), live, planned, err)) < 0)
			goto out;
out:
	json_decref(live);
	json_decref(mine);
	return rc;
}

int tt_gc_plan_unpins(gc_state *s, tt_error *err)
{
	json_t *checked = json_object(), *planned = json_object();
	int rc = 0;
	if (!checked || !planned) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t h = 0; h < s->w.npinned; h++) {
		size_t at = s->w.pinned_order[h];
		if ((rc = plan_store_unpins(s, &s->w.memo.items[at], s->w.ns[at], checked, planned, err)) < 0)
			goto done;
	}
done:
	json_decref(checked);
	json_decref(planned);
	return rc;
}

int tt_gc_plan_forget_refs(gc_state *s, tt_error *err)
{
	tt_repo *repo = s->repo;
	size_t n = json_object_size(repo->ws.working_refs), i = 0;
	const char **keys = tt_calloc(n ? n : 1, sizeof *keys);
	const char *k;
	json_t *v;
	int rc = 0;
	if (!keys)
		return tt_error_oom(err);
	json_object_foreach(repo->ws.working_refs, k, v) keys[i++] = k;
	qsort(keys, n, sizeof *keys, tt_cmp_cstr);
	for (i = 0; i < n && rc == 0; i++) {
		if (tt_manifests_find(&repo->objects, keys[i]))
			continue;
		tt_buf ref = TT_BUF_INIT;
		tt_pyv_str(&ref, json_object_get(repo->ws.working_refs, keys[i]));
		rc = tt_plan_action(s->plan, "forget-working-ref", keys[i], NULL, ref.ptr,
				    "object removed; branch left in place (gc --prune-bookmarks evaluates it)",
				    NULL, err);
		tt_buf_release(&ref);
	}
	free(keys);
	return rc;
}
