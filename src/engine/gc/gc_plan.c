/*
 * engine/gc/gc_plan.c - gc: the plan: history walk, working trees,
 * preconditions, remotes, and the plan assembled from the jobs below.
 */
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
#include "engine/kernel/context.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/revisions.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/fault.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "backends/registry.h"
#include "engine/gc/state.h"
#include "engine/gc/gc_workspaces.h"
#include "engine/gc/gc_pins.h"
#include "engine/gc/gc_listings.h"
#include "engine/gc/gc_prune.h"
#include "engine/gc/gc_plan.h"
#include "engine/gc/gc_stores.h"

/* --- small set helpers (a JSON object used as a set) ------------------------ */

/* tether-vcs's backends it no longer ships, and the release that removed them. */
static const char *removed_in(const char *kind)
{
	return strcmp(kind, "lakefs") == 0 ? "0.1.0b4" : NULL;
}

static void append_unique_str(json_t *arr, const char *v)
{
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x)
		if (strcmp(json_string_value(x), v) == 0)
			return;
	json_array_append_new(arr, json_string(v));
}

/* --- the plan ------------------------------------------------------------------ */

static void walk_release(gc_walk *w)
{
	for (size_t i = 0; w->ns && i < w->memo.n; i++)
		free(w->ns[i]);
	tt_manifest_memo_release(&w->memo);
	tt_manifest_memo_release(&w->dropped);
	json_decref(w->excluded);
	free(w->ns);
	free(w->seen);
	free(w->order);
	free(w->pinned_order);
	json_decref(w->sigs);
}

static int count_skipped(json_t *skipped, const char *kind)
{
	json_t *n = json_object_get(skipped, kind);
	return json_object_set_new(skipped, kind, json_integer(n ? json_integer_value(n) + 1 : 1));
}

/* First sight of a (distinct) history manifest. */
static int first_sight(gc_walk *w, size_t pi, tt_error *err)
{
	tt_manifest *m = &w->memo.items[pi];
	tt_backend *b;
	int rc;
	w->order[w->norder++] = pi;
	if (!m->pin_id)
		return 0;
	if ((rc = tt_engine_backend(w->repo, m->kind, &b, err)) < 0 ||
	    (rc = tt_gc_namespace_key(b, m->kind, m->locator, &w->ns[pi], err)) < 0) {
		tt_gc_object_error(err, m->key, m->kind);
		return rc;
	}
	char *sig = tt_asprintf("%s:%s:%s", m->kind, m->pin_id, w->ns[pi]);
	if (!sig)
		return tt_error_oom(err);
	if (!tt_gc_set_has(w->sigs, sig)) {
		tt_gc_set_add(w->sigs, sig);
		w->pinned_order[w->npinned++] = pi;
	}
	free(sig);
	return 0;
}

static int walk_commit(void *ctx, const char *commit, json_t *files, tt_error *err)
{
	gc_walk *w = ctx;
	const char *path;
	json_t *text;
	if (w->excluded && tt_gc_set_has(w->excluded, commit)) {
		/* drop's preview: as if abandoned - not references, but states
		 * a branch head of the dropped bookmark may sit on */
		json_object_foreach(files, path, text) {
			size_t di;
			int rc;
			if (tt_engine_is_manifest_path(w->reldir, path) &&
			    (rc = tt_manifest_memo_get(&w->dropped, text, commit, path, &di, NULL, err)) < 0)
				return rc;
		}
		return 0;
	}
	json_object_foreach(files, path, text) {
		size_t pi;
		bool fresh;
		int rc;
		if (!tt_engine_is_manifest_path(w->reldir, path))
			continue;
		if ((rc = tt_manifest_memo_get(&w->memo, text, commit, path, &pi, &fresh, err)) < 0)
			return rc;
		if (fresh) {
			if (w->aside < w->memo.alloc) {
				size_t cap = w->memo.alloc;
				char **ns = tt_reallocarray(w->ns, cap, sizeof *ns);
				if (ns)
					w->ns = ns;
				bool *seen = ns ? tt_reallocarray(w->seen, cap, sizeof *seen) : NULL;
				if (seen)
					w->seen = seen;
				size_t *order = seen ? tt_reallocarray(w->order, cap, sizeof *order) : NULL;
				if (order)
					w->order = order;
				size_t *po = order ? tt_reallocarray(w->pinned_order, cap, sizeof *po) : NULL;
				if (!po)
					return tt_error_oom(err);
				w->pinned_order = po;
				w->aside = cap;
			}
			/* A path as typed in an old manifest means the dataset root. */
			tt_error ignored = TT_ERROR_INIT;
			tt_absolutize_locator(w->memo.items[pi].locator, w->memo.items[pi].kind,
					      w->repo->root, &ignored);
			tt_error_clear(&ignored);
			w->ns[pi] = NULL;
			w->seen[pi] = false;
		}
		const tt_manifest *m = &w->memo.items[pi];
		if (tt_gc_kind_gone(m->kind)) {
			/* Counted per commit, as tether-vcs counts them. */
			if (count_skipped(w->skipped, m->kind) < 0 ||
			    (m->pin_id && tt_gc_set_add(w->referenced, m->pin_id) < 0))
				return tt_error_oom(err);
			continue;
		}
		if (m->pin_id && tt_gc_set_add(w->referenced, m->pin_id) < 0)
			return tt_error_oom(err);
		if (!w->seen[pi]) {
			w->seen[pi] = true;
			if ((rc = first_sight(w, pi, err)) < 0)
				return rc;
		}
	}
	return 0;
}

static void state_release(gc_state *s)
{
	for (size_t i = 0; i < s->nothers; i++)
		tt_manifests_release(&s->others[i]);
	free(s->others);
	free(s->working);
	walk_release(&s->w);
	json_decref(s->w.referenced);
	json_decref(s->w.skipped);
	tt_engine_checkouts_release(&s->co);
	tt_gc_journals_release(&s->journal);
	json_decref(s->inflight);
	json_decref(s->known);
	free(s->remotes);
	free(s->unfetched);
	json_decref(s->published);
	json_decref(s->committed);
	json_decref(s->held);
	free(s->held_unread);
}

/* The working trees: this checkout's manifests and every other live one's. */
static int gather_working(gc_state *s, tt_error *err)
{
	tt_repo *repo = s->repo;
	size_t total = repo->objects.n;
	int rc;
	if (!(s->others = tt_calloc(s->co.n ? s->co.n : 1, sizeof *s->others)))
		return tt_error_oom(err);
	for (size_t i = 0; i < s->co.n; i++) {
		const tt_checkout *c = &s->co.items[i];
		if (c->here || !c->ws_ok)
			continue;
		tt_error inner = TT_ERROR_INIT;
		if (tt_manifests_load(&s->others[s->nothers], c->dataset, &inner) < 0) {
			rc = tt_error_set(err, TT_ECONFIG, "cannot read the manifests of checkout %s (%s); they "
					  "may reference pins, so nothing is released until they read",
					  c->dataset, tt_error_text(&inner));
			tt_error_clear(&inner);
			return rc;
		}
		total += s->others[s->nothers++].n;
	}
	if (!(s->working = tt_calloc(total ? total : 1, sizeof *s->working)))
		return tt_error_oom(err);
	for (size_t k = 0; k <= s->nothers; k++) {
		const tt_manifest_set *set = k == 0 ? &repo->objects : &s->others[k - 1];
		for (size_t i = 0; i < set->n; i++) {
			const tt_manifest *m = &set->items[i];
			if (tt_gc_kind_gone(m->kind)) {
				if (count_skipped(s->w.skipped, m->kind) < 0 ||
				    (m->pin_id && tt_gc_set_add(s->w.referenced, m->pin_id) < 0))
					return tt_error_oom(err);
				continue;
			}
			s->working[s->nworking++] = m;
			if (m->pin_id && tt_gc_set_add(s->w.referenced, m->pin_id) < 0)
				return tt_error_oom(err);
		}
	}
	return 0;
}

static int context_and_preconditions(gc_state *s, const char *digest, const char *head, tt_error *err)
{
	tt_repo *repo = s->repo;
	const tt_gc_opts *o = s->o;
	char hash[65];
	int rc;
	/* sorted(set(keep_bookmarks)) */
	json_t *uniq = json_object(), *keep = json_array(), *v;
	const char *k;
	if (!uniq || !keep) {
		json_decref(uniq);
		json_decref(keep);
		return tt_error_oom(err);
	}
	for (size_t i = 0; i < o->nkeep; i++)
		if (o->keep_bookmarks[i])
			tt_gc_set_add(uniq, o->keep_bookmarks[i]);
	json_object_foreach(uniq, k, v) json_array_append_new(keep, json_string(k));
	json_decref(uniq);
	tt_gc_sort_strings(keep);
	if ((rc = tt_manifests_hash(hash, &repo->objects, err)) < 0) {
		json_decref(keep);
		return rc;
	}
	/* [[kind, {"uri": where}]] per --store, as tether-vcs records them. */
	json_t *claimed = json_array();
	for (size_t i = 0; claimed && i < o->nstores; i++) {
		const char *eq = strchr(o->stores[i], '=');
		if (eq)
			json_array_append_new(claimed, json_pack("[s#,{s:s}]", o->stores[i],
								 (int)(eq - o->stores[i]), "uri", eq + 1));
	}
	json_t *ctx = claimed ? json_pack("{s:s,s:b,s:o,s:b,s:n,s:b,s:o,s:b,s:s,s:s?,s:s}",
					  "workspace_id", repo->ws.workspace_id, "prune_bookmarks",
					  o->prune_bookmarks, "keep_bookmarks", keep, "force_prune", o->force_prune,
					  "scope", "delete_stores", o->delete_stores || o->nstores, "stores",
					  claimed, "release_foreign", o->release_foreign, "manifest_hash", hash,
					  "vcs_head", head, "history_digest", digest)
			      : NULL;
	if (!ctx)
		return tt_error_oom(err);
	if (s->scope) {
		json_t *sb = json_array(), *se = json_array(), *sg = json_array();
		for (size_t i = 0; i < s->scope->nbookmarks; i++)
			append_unique_str(sb, s->scope->bookmarks[i]);
		for (size_t i = 0; i < s->scope->nexcluded; i++)
			append_unique_str(se, s->scope->excluded_commits[i]);
		for (size_t i = 0; i < s->scope->ngone; i++)
			append_unique_str(sg, s->scope->gone_bookmarks[i]);
		tt_gc_sort_strings(sb);
		tt_gc_sort_strings(se);
		tt_gc_sort_strings(sg);
		json_object_set_new(ctx, "scope", json_pack("{s:o,s:o,s:o}", "bookmarks", sb, "excluded_commits", se,
							    "gone_bookmarks", sg));
	}
	json_object_foreach(ctx, k, v) {
		if ((rc = tt_plan_set_context(s->plan, k, v, err)) < 0) {
			json_decref(ctx);
			return rc;
		}
	}
	json_decref(ctx);
	json_t *x;
	if (head) {
		x = json_string(head);
		rc = tt_plan_require(s->plan, "vcs_head", x, NULL, NULL,
				     "history moved since the gc plan was made (a new commit may reference a "
				     "pin it would release); re-run the plan", err);
		json_decref(x);
		if (rc < 0)
			return rc;
	}
	x = json_string(digest);
	rc = tt_plan_require(s->plan, "history_digest", x, NULL, NULL,
			     "history changed since the gc plan was made -- a commit in this or another "
			     "workspace may reference a pin it would release; re-run the plan", err);
	json_decref(x);
	if (rc < 0)
		return rc;
	x = json_string(hash);
	rc = tt_plan_require(s->plan, "manifest_hash", x, NULL, NULL,
			     "manifests changed since the gc plan was made; re-run the plan", err);
	json_decref(x);
	if (rc < 0)
		return rc;
	x = json_string(repo->ws.workspace_id);
	rc = tt_plan_require(s->plan, "workspace_id", x, NULL, NULL,
			     "this gc plan was made in another checkout; re-run the plan here", err);
	json_decref(x);
	return rc;
}

static int gone_notes(gc_state *s, tt_error *err)
{
	/* sorted by kind */
	size_t n = json_object_size(s->w.skipped), i = 0;
	const char **kinds = tt_calloc(n ? n : 1, sizeof *kinds);
	const char *k;
	json_t *v;
	int rc = 0;
	if (!kinds)
		return tt_error_oom(err);
	json_object_foreach(s->w.skipped, k, v) kinds[i++] = k;
	qsort(kinds, n, sizeof *kinds, tt_cmp_cstr);
	for (i = 0; i < n && rc == 0; i++) {
		tt_buf t = TT_BUF_INIT, r = TT_BUF_INIT;
		tt_pyv_repr_str(&r, kinds[i], strlen(kinds[i]));
		const char *when = removed_in(kinds[i]);
		tt_buf_printf(&t, "%s: %lld manifest(s) skipped -- this tether has no %s backend", r.ptr,
			      (long long)json_integer_value(json_object_get(s->w.skipped, kinds[i])), r.ptr);
		if (when)
			tt_buf_printf(&t, " (removed in %s)", when);
		tt_buf_puts(&t, "; their pins count as references, and nothing in their stores is read "
			    "or released");
		rc = tt_buf_check(&t, err, "note");
		if (rc == 0)
			rc = tt_plan_note(s->plan, t.ptr, err);
		tt_buf_release(&t);
		tt_buf_release(&r);
	}
	free(kinds);
	return rc;
}

int tt_gc_check_stores(const tt_gc_opts *o, tt_error *err)
{
	for (size_t i = 0; i < o->nstores; i++) {
		const char *eq = o->stores[i] ? strchr(o->stores[i], '=') : NULL;
		if (!eq || eq == o->stores[i] || !eq[1]) {
			tt_buf r = TT_BUF_INIT;
			const char *got = o->stores[i] ? o->stores[i] : "";
			tt_pyv_repr_str(&r, got, strlen(got));
			int rc = tt_error_set(err, TT_EUSAGE, "--store expects KIND=LOCATOR, got %s", r.ptr);
			tt_buf_release(&r);
			return rc;
		}
	}
	return 0;
}

/* Slugs of the bookmarks this clone can account for (--delete-stores):
 * live ones (keep) and every bookmark a `new` in a live checkout made. */
static int store_slugs(gc_state *s, json_t *keep, json_t *known, tt_error *err)
{
	tt_repo *repo = s->repo;
	json_t *marks = NULL, *live = json_object();
	const char *k;
	json_t *v;
	int rc;
	if (!live)
		return tt_error_oom(err);
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) < 0)
		goto done;
	json_object_foreach(marks, k, v) tt_gc_set_add(live, k);
	if (repo->ws.bookmark)
		tt_gc_set_add(live, repo->ws.bookmark);
	for (size_t i = 0; i < s->co.n; i++)
		if (s->co.items[i].ws_ok && s->co.items[i].ws.bookmark)
			tt_gc_set_add(live, s->co.items[i].ws.bookmark);
	for (size_t i = 0; i < s->o->nkeep; i++)
		if (s->o->keep_bookmarks[i])
			tt_gc_set_add(live, s->o->keep_bookmarks[i]);
	for (size_t l = 0; l < s->journal.n; l++)
		for (size_t e = 0; e < s->journal.logs[l].count; e++) {
			const tt_op_entry *op = &s->journal.logs[l].entries[e];
			const char *bm = json_string_value(json_object_get(op->result, "bookmark"));
			if (strcmp(op->command, "new") == 0 && bm && *bm)
				tt_gc_set_add(known, bm);   /* slugged below */
		}
	json_object_foreach(live, k, v) {
		char *slug = NULL;
		if ((rc = tt_bookmark_slug(&slug, k, err)) < 0)
			goto done;
		tt_gc_set_add(keep, slug);
		tt_gc_set_add(known, slug);
		free(slug);
	}
	/* the `new` bookmarks, slugged (live ones are already there) */
	json_t *names = json_deep_copy(known);
	void *tmp;
	json_object_foreach_safe(names, tmp, k, v) {
		char *slug = NULL;
		if (tt_gc_set_has(live, k))
			continue;
		if ((rc = tt_bookmark_slug(&slug, k, err)) < 0)
			break;
		json_object_del(known, k);
		tt_gc_set_add(known, slug);
		free(slug);
	}
	json_decref(names);
done:
	json_decref(marks);
	json_decref(live);
	return rc;
}

/* The --delete-stores step, with what it needs to know about the world. */
static int plan_stores(gc_state *s, tt_error *err)
{
	tt_repo *repo = s->repo;
	json_t *in_use = json_object(), *keep = json_object(), *known = json_object();
	json_t *referenced = json_deep_copy(s->w.referenced);
	int rc = 0;
	if (!in_use || !keep || !known || !referenced) {
		rc = tt_error_oom(err);
		goto done;
	}
	json_object_update(referenced, s->inflight);
	for (size_t i = 0; i < tt_gc_manifest_count(s); i++) {
		const tt_manifest *m = tt_gc_manifest_at(s, i);
		tt_backend *b;
		json_t *identity = NULL;
		tt_buf c = TT_BUF_INIT;
		if ((rc = tt_gc_manifest_identity(repo, m, &b, &identity, err)) < 0)
			goto done;
		tt_buf_printf(&c, "%s|", m->kind);
		tt_json_canonical(&c, identity);
		json_decref(identity);
		if ((rc = tt_buf_check(&c, err, "identity")) == 0)
			tt_gc_set_add(in_use, c.ptr);
		tt_buf_release(&c);
		if (rc < 0)
			goto done;
	}
	if ((rc = store_slugs(s, keep, known, err)) < 0)
		goto done;
	tt_gc_store_ctx ctx = { in_use, keep, known, s->known, referenced };
	rc = tt_gc_plan_stores(repo, s->plan, &ctx, s->o->prune_bookmarks, s->o->force_prune, s->o->stores,
			       s->o->nstores, err);
done:
	json_decref(in_use);
	json_decref(keep);
	json_decref(known);
	json_decref(referenced);
	return rc;
}

/* plan_gc: compute what gc would release, writing nothing but the seeded
 * pinned index. */
static int plan_gc_scoped(tt_repo *repo, const tt_gc_opts *o, const tt_gc_scope *scope, bool after_rewrite,
			  tt_plan **out, tt_error *err)
{
	gc_state s = { 0 };
	char digest[17], *head = NULL, *reldir = NULL;
	int rc;
	*out = NULL;
	s.repo = repo;
	s.o = o;
	s.scope = scope;
	s.after_rewrite = after_rewrite;
	if (scope && scope->nexcluded) {
		if (!(s.w.excluded = json_object()))
			return tt_error_oom(err);
		for (size_t i = 0; i < scope->nexcluded; i++)
			tt_gc_set_add(s.w.excluded, scope->excluded_commits[i]);
	}
	if ((rc = tt_gc_check_stores(o, err)) < 0)
		return rc;
	if (!(s.plan = tt_plan_new("gc")) || !(s.w.sigs = json_object()) ||
	    !(s.w.referenced = json_object()) || !(s.w.skipped = json_object()) ||
	    !(s.inflight = json_object()) || !(reldir = tt_engine_objects_reldir(repo))) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* The digest before the walk: a commit landing during or after it
	 * changes what the apply compares against. */
	if ((rc = tt_vcs_history_digest(repo->vcs, digest, err)) < 0)
		goto done;
	head = tt_engine_vcs_head(repo);
	s.w.repo = repo;
	s.w.reldir = reldir;
	if ((rc = tt_vcs_iter_history_files(repo->vcs, reldir, walk_commit, &s.w, err)) < 0)
		goto done;
	if ((rc = tt_engine_live_checkouts(repo, &s.co, err)) < 0 || (rc = gather_working(&s, err)) < 0 ||
	    (rc = tt_gc_read_journals(repo, &s.co, &s.journal, err)) < 0 ||
	    (rc = tt_gc_inflight_pins(&s.journal, s.inflight, err)) < 0)
		goto done;
	if ((rc = context_and_preconditions(&s, digest, head, err)) < 0 || (rc = gone_notes(&s, err)) < 0)
		goto done;
	if ((rc = tt_gc_seed_pinned(repo, &s.journal, err)) < 0)
		goto done;
	if (!(s.known = tt_gc_known_pins(repo, &s.committed))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_gc_plan_unpins(&s, err)) < 0 || (rc = tt_gc_plan_forget_refs(&s, err)) < 0 ||
	    (o->prune_bookmarks && (rc = tt_gc_plan_prune(&s, err)) < 0) || (rc = tt_gc_plan_listings(&s, err)) < 0 ||
	    ((o->delete_stores || o->nstores) && (rc = plan_stores(&s, err)) < 0))
		goto done;
	*out = s.plan;
	s.plan = NULL;
done:
	tt_plan_free(s.plan);
	state_release(&s);
	free(head);
	free(reldir);
	return rc;
}

int tt_gc_plan_gc(tt_repo *repo, const tt_gc_opts *o, tt_plan **out, tt_error *err)
{
	return plan_gc_scoped(repo, o, NULL, false, out, err);
}

int tt_gc_plan_after_rewrite(tt_repo *repo, const tt_gc_opts *o, tt_plan **out, tt_error *err)
{
	return plan_gc_scoped(repo, o, NULL, true, out, err);
}

int tt_gc_plan_scoped(tt_repo *repo, const tt_gc_opts *o, const tt_gc_scope *scope, tt_plan **out, tt_error *err)
{
	return plan_gc_scoped(repo, o, scope, false, out, err);
}
