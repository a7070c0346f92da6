/*
 * engine/gc/gc_prune.c - gc: the --prune-bookmarks job: stray tether.ws.*
 * branches judged by their heads.
 */
#include "engine/gc/gc_prune.h"

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
#include "engine/kernel/state.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/fault.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "engine/gc/state.h"
#include "engine/kernel/refnames.h"

/* --- --prune-bookmarks ------------------------------------------------------------ */

typedef struct prune_ctx {
	json_t *pinned;    /* ns -> [content states] */
	json_t *recorded;
	json_t *keep_slugs;
	json_t *in_use;
	json_t *live_ws;
	char *my_slug;
	json_t *dropped;     /* drop: ns -> [states the dropped commits pinned or recorded] */
	json_t *only_slugs;  /* drop: judge only these bookmarks' branches (set), or NULL */
} prune_ctx;

static int bucket_add(json_t *bucket, const char *ns, json_t *content)
{
	json_t *list = json_object_get(bucket, ns);
	if (!list) {
		list = json_array();
		if (!list || json_object_set_new(bucket, ns, list) < 0)
			return -1;
	}
	if (!tt_gc_list_has_value(list, content))
		return json_array_append(list, content);
	return 0;
}

/* States per system: pinned (safe to drop a branch at) or merely recorded. */
static int state_buckets(gc_state *s, prune_ctx *p, tt_error *err)
{
	for (size_t i = 0; i < tt_gc_manifest_count(s); i++) {
		const tt_manifest *m = tt_gc_manifest_at(s, i);
		tt_backend *b;
		char *ns = NULL;
		int rc;
		if (!m->state)
			continue;
		if ((rc = tt_engine_backend(s->repo, m->kind, &b, err)) < 0 ||
		    (rc = tt_gc_namespace_key(b, m->kind, m->locator, &ns, err)) < 0) {
			tt_gc_object_error(err, m->key, m->kind);
			return rc;
		}
		json_t *content = tt_content_state(b->kind, m->state);
		rc = content ? bucket_add(m->pin_id ? p->pinned : p->recorded, ns, content) : -1;
		json_decref(content);
		free(ns);
		if (rc < 0)
			return tt_error_oom(err);
	}
	return 0;
}

static int prune_setup(gc_state *s, prune_ctx *p, tt_error *err)
{
	tt_repo *repo = s->repo;
	json_t *marks = NULL, *live = NULL;
	int rc;
	p->pinned = json_object();
	p->recorded = json_object();
	p->keep_slugs = json_object();
	p->in_use = json_object();
	p->live_ws = json_object();
	live = json_object();
	if (!p->pinned || !p->recorded || !p->keep_slugs || !p->in_use || !p->live_ws || !live) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* Live bookmarks: the VCS's, this workspace's, every live checkout's,
	 * and --keep-bookmark names. */
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) < 0)
		goto done;
	const char *k;
	json_t *v;
	json_object_foreach(marks, k, v) tt_gc_set_add(live, k);
	if (repo->ws.bookmark)
		tt_gc_set_add(live, repo->ws.bookmark);
	for (size_t i = 0; i < s->co.n; i++)
		if (s->co.items[i].ws_ok && s->co.items[i].ws.bookmark)
			tt_gc_set_add(live, s->co.items[i].ws.bookmark);
	for (size_t i = 0; i < s->o->nkeep; i++)
		if (s->o->keep_bookmarks[i])
			tt_gc_set_add(live, s->o->keep_bookmarks[i]);
	for (size_t i = 0; s->scope && i < s->scope->ngone; i++)
		json_object_del(live, s->scope->gone_bookmarks[i]);
	json_t *sorted = json_array();
	json_object_foreach(live, k, v) json_array_append_new(sorted, json_string(k));
	tt_gc_sort_strings(sorted);
	tt_buf text = TT_BUF_INIT;
	tt_buf_puts(&text, "keeping live bookmarks: ");
	size_t i;
	json_array_foreach(sorted, i, v) {
		char *slug = NULL;
		tt_buf_printf(&text, "%s%s", i ? ", " : "", json_string_value(v));
		if (!*json_string_value(v)) {
			tt_gc_set_add(p->keep_slugs, "");
			continue;
		}
		if ((rc = tt_bookmark_slug(&slug, json_string_value(v), err)) < 0)
			break;
		tt_gc_set_add(p->keep_slugs, slug);
		free(slug);
	}
	if (rc == 0 && (rc = tt_plan_set_context(s->plan, "live_bookmarks", sorted, err)) == 0 &&
	    (rc = tt_buf_check(&text, err, "note")) == 0)
		rc = tt_plan_note(s->plan, text.ptr, err);
	tt_buf_release(&text);
	json_decref(sorted);
	if (rc < 0)
		goto done;
	/* No bookmark: bookmark_slug("") is "", which no branch's slug is. */
	if (!repo->ws.bookmark)
		p->my_slug = tt_strdup("");
	else if ((rc = tt_bookmark_slug(&p->my_slug, repo->ws.bookmark, err)) < 0)
		goto done;
	if (!p->my_slug) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* Legacy per-workspace branches: of live workspaces (first 8 of the id). */
	char id8[9];
	snprintf(id8, sizeof id8, "%s", repo->ws.workspace_id);
	tt_gc_set_add(p->live_ws, id8);
	for (i = 0; i < s->co.n; i++) {
		if (!s->co.items[i].ws_ok)
			continue;
		snprintf(id8, sizeof id8, "%s", s->co.items[i].ws.workspace_id);
		tt_gc_set_add(p->live_ws, id8);
	}
	/* Spoken for: this workspace's refs of current objects and pending
	 * forks; every other live checkout's refs and pending forks. */
	json_object_foreach(repo->ws.working_refs, k, v)
		if (json_is_string(v) && tt_manifests_find(&repo->objects, k))
			tt_gc_set_add(p->in_use, json_string_value(v));
	json_object_foreach(repo->ws.pending_forks, k, v)
		if (json_is_string(v))
			tt_gc_set_add(p->in_use, json_string_value(v));
	for (i = 0; i < s->co.n; i++) {
		const tt_checkout *c = &s->co.items[i];
		if (c->here || !c->ws_ok)
			continue;
		json_object_foreach(c->ws.working_refs, k, v)
			if (json_is_string(v))
				tt_gc_set_add(p->in_use, json_string_value(v));
		json_object_foreach(c->ws.pending_forks, k, v)
			if (json_is_string(v))
				tt_gc_set_add(p->in_use, json_string_value(v));
	}
	rc = state_buckets(s, p, err);
done:
	json_decref(marks);
	json_decref(live);
	return rc;
}

static void prune_release(prune_ctx *p)
{
	json_decref(p->pinned);
	json_decref(p->recorded);
	json_decref(p->keep_slugs);
	json_decref(p->in_use);
	json_decref(p->live_ws);
	json_decref(p->dropped);
	json_decref(p->only_slugs);
	free(p->my_slug);
}

/* Judge one stray branch of a system. */
static int judge_branch(gc_state *s, prune_ctx *p, const tt_manifest *m, tt_backend *b, const char *ns,
			bool storage, const char *ref, const char *origin, json_t **base_head, tt_error *err)
{
	char *why = NULL, *reason = NULL;
	const char *safe = "";
	json_t *full = NULL, *head = NULL, *params = NULL;
	tt_buf det = TT_BUF_INIT;
	int rc = 0;
	if (tt_backend_has(b, working_ref_blockers) &&
	    (rc = tt_backend_working_ref_blockers(b, m->locator, ref, &why, err)) < 0) {
		tt_gc_object_error(err, m->key, m->kind);
		goto done;
	}
	if (why) {
		/* The store will refuse: kept with the reason, even when forced. */
		tt_buf_printf(&det, "%s; cannot be deleted: %s", origin, why);
		params = json_pack("{s:O,s:b}", "locator", m->locator, "blocked", 1);
		rc = params ? tt_plan_action(s->plan, "keep-branch", m->key, m->kind, ref, det.ptr, params, err)
			    : tt_error_oom(err);
		goto done;
	}
	if (storage) {
		reason = tt_strdup("branch is storage; deleting reclaims its data");
	} else {
		tt_error e = TT_ERROR_INIT;
		if (tt_backend_fingerprint(b, m->locator, ref, &full, &e) == 0 &&
		    (head = tt_content_state(b->kind, full)) != NULL && !*base_head) {
			json_t *base = NULL;
			if (tt_backend_fingerprint(b, m->locator, NULL, &base, &e) == 0) {
				*base_head = tt_content_state(b->kind, base);
				json_decref(base);
			} else {
				json_decref(head);
				head = NULL;
			}
		}
		if (e.code) {
			reason = tt_asprintf("cannot read head: %s", tt_error_text(&e));
			json_decref(head);
			head = NULL;
		}
		tt_error_clear(&e);
		if (head) {
			tt_buf st = TT_BUF_INIT;
			if (tt_gc_list_has_value(json_object_get(p->pinned, ns), head))
				safe = "head is pinned";
			else if (p->dropped && tt_gc_list_has_value(json_object_get(p->dropped, ns), head))
				safe = "head was committed by a dropped commit";
			else if (*base_head && tt_pyv_eq(head, *base_head))
				safe = "head equals the base branch";
			else if (tt_gc_list_has_value(json_object_get(p->recorded, ns), head) &&
				 tt_short_state(&st, head) == 0)
				reason = tt_asprintf("holds a pin-less recorded state (%s)", st.ptr);
			else if (tt_short_state(&st, head) == 0)
				reason = tt_asprintf("has unpinned writes (%s)", st.ptr);
			tt_buf_release(&st);
		}
	}
	if (!reason && !*safe) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!reason) {
		tt_buf_printf(&det, "%s; %s", origin, safe);
		params = json_pack("{s:O,s:O?}", "locator", m->locator, "head", full);
		rc = params ? tt_plan_action(s->plan, "delete-branch", m->key, m->kind, ref, det.ptr, params, err)
			    : tt_error_oom(err);
	} else if (s->o->force_prune) {
		tt_buf_printf(&det, "%s; FORCED although it %s", origin, reason);
		params = json_pack("{s:O,s:b,s:O?}", "locator", m->locator, "forced", 1, "head", full);
		rc = params ? tt_plan_action(s->plan, "delete-branch", m->key, m->kind, ref, det.ptr, params, err)
			    : tt_error_oom(err);
	} else {
		tt_buf_printf(&det, "%s; kept: %s (--force-prune deletes)", origin, reason);
		rc = tt_plan_action(s->plan, "keep-branch", m->key, m->kind, ref, det.ptr, NULL, err);
	}
done:
	free(why);
	free(reason);
	json_decref(full);
	json_decref(head);
	json_decref(params);
	tt_buf_release(&det);
	return rc;
}

/* drop's scope: which bookmarks' branches to judge, and the states the
 * dropped commits pinned or recorded. */
static int scope_setup(gc_state *s, prune_ctx *p, tt_error *err)
{
	const tt_gc_scope *sc = s->scope;
	if (!sc)
		return 0;
	p->only_slugs = json_object();
	p->dropped = json_object();
	if (!p->only_slugs || !p->dropped)
		return tt_error_oom(err);
	for (size_t i = 0; i < sc->nbookmarks; i++) {
		char *slug = NULL;
		int rc = tt_bookmark_slug(&slug, sc->bookmarks[i], err);
		if (rc < 0)
			return rc;
		tt_gc_set_add(p->only_slugs, slug);
		free(slug);
	}
	size_t total = sc->ndropped + s->w.dropped.n;
	for (size_t i = 0; i < total; i++) {
		const tt_manifest *m = i < sc->ndropped ? &sc->dropped[i] : &s->w.dropped.items[i - sc->ndropped];
		tt_backend *b;
		char *ns = NULL;
		int rc;
		if (!m->state || tt_gc_kind_gone(m->kind))
			continue;
		if ((rc = tt_engine_backend(s->repo, m->kind, &b, err)) < 0 ||
		    (rc = tt_gc_namespace_key(b, m->kind, m->locator, &ns, err)) < 0) {
			tt_gc_object_error(err, m->key, m->kind);
			return rc;
		}
		json_t *content = tt_content_state(b->kind, m->state);
		rc = content ? bucket_add(p->dropped, ns, content) : -1;
		json_decref(content);
		free(ns);
		if (rc < 0)
			return tt_error_oom(err);
	}
	return 0;
}

int tt_gc_plan_prune(gc_state *s, tt_error *err)
{
	tt_repo *repo = s->repo;
	prune_ctx p = { 0 };
	json_t *systems = json_object();
	int rc;
	if (!systems)
		return tt_error_oom(err);
	if ((rc = prune_setup(s, &p, err)) < 0 || (rc = scope_setup(s, &p, err)) < 0)
		goto done;
	for (size_t i = 0; i < repo->objects.n; i++) {
		const tt_manifest *m = &repo->objects.items[i];
		tt_backend *b;
		char *ns = NULL;
		json_t *refs = NULL, *base_head = NULL;
		size_t foreign = 0;
		if (tt_gc_kind_gone(m->kind))
			continue;
		if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0) {
			tt_gc_object_error(err, m->key, m->kind);
			goto done;
		}
		unsigned eff = tt_engine_caps(repo, m);
		if (!(eff & TT_CAP_FORK))
			continue;
		if ((rc = tt_gc_namespace_key(b, m->kind, m->locator, &ns, err)) < 0) {
			tt_gc_object_error(err, m->key, m->kind);
			goto done;
		}
		if (tt_gc_set_has(systems, ns)) {
			free(ns);
			continue;
		}
		tt_gc_set_add(systems, ns);
		bool storage = (eff & TT_CAP_BRANCH_IS_STORAGE) != 0;
		if (!tt_backend_has(b, list_working_refs) ||
		    (rc = tt_backend_list_working_refs(b, m->locator, &refs, err)) < 0) {
			if (rc < 0)
				tt_gc_object_error(err, m->key, m->kind);
			free(ns);
			if (rc < 0)
				goto done;
			continue;
		}
		tt_gc_sort_strings(refs);
		size_t r;
		json_t *rv;
		json_array_foreach(refs, r, rv) {
			const char *ref = json_string_value(rv);
			tt_ref_parts parts;
			char *origin = NULL;
			if (!ref || !tt_working_ref_parts(ref, &parts))
				continue;
			if (strcmp(parts.ds, repo->config.dataset_id) != 0) {
				foreign++;   /* another dataset's branch; not ours to judge */
				tt_ref_parts_release(&parts);
				continue;
			}
			if (tt_gc_set_has(p.in_use, ref) ||
			    (p.only_slugs && !(parts.slug && tt_gc_set_has(p.only_slugs, parts.slug)))) {
				tt_ref_parts_release(&parts);
				continue;
			}
			if (parts.slug && tt_gc_set_has(p.keep_slugs, parts.slug)) {
				if (strcmp(parts.slug, p.my_slug) == 0)
					origin = tt_strdup("this bookmark's branch; no object uses it");
			} else if (parts.slug) {
				origin = tt_asprintf("bookmark %s (gone)", parts.slug);
			} else if (!tt_gc_set_has(p.live_ws, parts.legacy_ws)) {
				origin = tt_asprintf("legacy workspace %s branch", parts.legacy_ws);
			}
			tt_ref_parts_release(&parts);
			if (!origin)
				continue;
			rc = judge_branch(s, &p, m, b, ns, storage, ref, origin, &base_head, err);
			free(origin);
			if (rc < 0)
				break;
		}
		json_decref(refs);
		json_decref(base_head);
		free(ns);
		if (rc < 0)
			goto done;
		if (foreign && (rc = tt_gc_note(s->plan, tt_asprintf("%s: %zu working branch(es) of other datasets "
							       "left alone", m->key, foreign), err)) < 0)
			goto done;
	}
done:
	prune_release(&p);
	json_decref(systems);
	return rc;
}
