/*
 * engine/gc_prune.c - gc: the --prune-bookmarks job: stray tether.ws.*
 * branches judged by their heads.
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
#include "engine/engine.h"
#include "engine/gc.h"
#include "engine/gc_int.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/fault.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

/* --- --prune-bookmarks ------------------------------------------------------------ */

static bool all_digits(const char *s, size_t n)
{
	if (!n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < '0' || s[i] > '9')
			return false;
	return true;
}

bool tt_working_ref_parts(const char *ref, tt_ref_parts *out)
{
	size_t pl = strlen(TT_WORKING_REF_PREFIX);
	memset(out, 0, sizeof *out);
	if (strncmp(ref, TT_WORKING_REF_PREFIX, pl) != 0)
		return false;
	const char *rest = ref + pl, *dot = strchr(rest, '.');
	size_t dl = dot ? (size_t)(dot - rest) : strlen(rest);
	if (dl != TT_DATASET_ID_LEN)
		return false;
	memcpy(out->ds, rest, dl);
	out->ds[dl] = '\0';
	if (!tt_is_dataset_id(out->ds) || !dot || !dot[1])
		return false;
	const char *name = dot + 1;
	size_t nl = strlen(name);
	const char *last = strrchr(name, '.');
	if (last && last > name && all_digits(last + 1, strlen(last + 1)))
		nl = (size_t)(last - name);
	char *body = tt_strndup(name, nl);
	if (!body)
		return false;
	char *d2 = strchr(body, '.');
	if (d2 && d2[1]) {
		*d2 = '\0';
		if (tt_is_dataset_id(body)) {
			out->legacy_ws = body;
			out->slug = NULL;
			memmove(body + strlen(body) + 1, d2 + 1, strlen(d2 + 1) + 1);
			return true;
		}
		*d2 = '.';
	}
	out->slug = body;
	return true;
}

void tt_ref_parts_release(tt_ref_parts *p)
{
	free(p->slug);
	free(p->legacy_ws);
}

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

/* Every manifest gc weighs: those of visible history, then the working
 * tree's and the live checkouts'. */
size_t tt_gc_manifest_count(const gc_state *s)
{
	return s->w.norder + s->nworking;
}

const tt_manifest *tt_gc_manifest_at(const gc_state *s, size_t i)
{
	return i < s->w.norder ? &s->w.memo.items[s->w.order[i]] : s->working[i - s->w.norder];
}

/* The identity of m's store, by its kind's backend (errors name m). */
int tt_gc_manifest_identity(tt_repo *repo, const tt_manifest *m, tt_backend **b,
			     json_t **identity, tt_error *err)
{
	int rc;
	*identity = NULL;
	if ((rc = tt_engine_backend(repo, m->kind, b, err)) < 0 ||
	    (rc = tt_backend_identity(*b, m->locator, identity, err)) < 0)
		tt_gc_object_error(err, m->key, m->kind);
	return rc;
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
