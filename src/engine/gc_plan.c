/*
 * engine/gc_plan.c - gc: the plan: history walk, working trees,
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
#include "engine/engine.h"
#include "engine/gc.h"
#include "engine/gc_int.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/fault.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

/* tether-vcs's backends it no longer ships, and the release that removed them. */
static const char *removed_in(const char *kind)
{
	return strcmp(kind, "lakefs") == 0 ? "0.1.0b4" : NULL;
}

bool tt_gc_kind_gone(const char *kind)
{
	return tt_kind_find(kind) == NULL;
}

/* --- small set helpers (a JSON object used as a set) ------------------------ */

bool tt_gc_set_has(const json_t *set, const char *k)
{
	return k && json_object_get(set, k) != NULL;
}

int tt_gc_set_add(json_t *set, const char *k)
{
	return json_object_set_new(set, k, json_true());
}

/* Append v to obj[k] (a list, made when absent). */
int tt_gc_map_append(json_t *obj, const char *k, json_t *v)
{
	json_t *list = json_object_get(obj, k);
	if (!v)
		return -1;
	if (!list) {
		if (!(list = json_array()) || json_object_set_new(obj, k, list) < 0) {
			json_decref(v);
			return -1;
		}
	}
	return json_array_append_new(list, v);
}

/* Does the list hold a value equal (as Python compares) to v? */
bool tt_gc_list_has_value(const json_t *list, const json_t *v)
{
	size_t i;
	json_t *x;
	json_array_foreach((json_t *)list, i, x)
		if (tt_pyv_eq(x, v))
			return true;
	return false;
}

/* Sort an array of strings in place (by code point, as Python's sorted()). */
int tt_gc_sort_strings(json_t *arr)
{
	size_t n = json_array_size(arr), i;
	json_t *copy = json_copy(arr), *v;
	const char **items = tt_calloc(n ? n : 1, sizeof *items);
	int rc = 0;
	if (!copy || !items) {
		rc = -1;
		goto done;
	}
	json_array_foreach(copy, i, v) items[i] = json_string_value(v) ? json_string_value(v) : "";
	qsort(items, n, sizeof *items, tt_cmp_cstr);
	json_array_clear(arr);
	for (i = 0; i < n && rc == 0; i++)
		rc = json_array_append_new(arr, json_string(items[i]));
done:
	free(items);
	json_decref(copy);
	return rc;
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

/* An error about one object, as gc reports it.  A backend words its errors
 * "[kind] ..." (as tether-vcs does), and the key the engine adds then does
 * not show in the text; gc walks every object of the history, so the text
 * names which one: "[kind] key: ...". */
int tt_gc_object_error(tt_error *err, const char *key, const char *kind)
{
	int code = tt_error_object(err, key, kind);
	if (!err || !err->message || !key || !kind || code == TT_ENOMEM)
		return code;
	size_t kl = strlen(kind), keyl = strlen(key);
	const char *m = err->message, *rest = m + kl + 3;
	if (m[0] != '[' || strncmp(m + 1, kind, kl) != 0 || m[kl + 1] != ']' || m[kl + 2] != ' ' ||
	    (strncmp(rest, key, keyl) == 0 && rest[keyl] == ':'))
		return code;
	char *named = tt_asprintf("[%s] %s: %s", kind, key, rest);
	char *hint = err->hint ? tt_strdup(err->hint) : NULL;
	if (named)
		tt_error_set(err, code, "%s", named);
	if (hint)
		tt_error_hint(err, "%s", hint);
	free(named);
	free(hint);
	return code;
}

/* kind + "|" + the backend's ref namespace (default: canon(identity)). */
int tt_gc_namespace_key(tt_backend *b, const char *kind, const json_t *loc, char **out, tt_error *err)
{
	char *ns = NULL;
	int rc;
	*out = NULL;
	if (tt_backend_has(b, ref_namespace)) {
		if ((rc = tt_backend_ref_namespace(b, loc, &ns, err)) < 0)
			return rc;
	} else {
		json_t *identity = NULL;
		tt_buf c = TT_BUF_INIT;
		if ((rc = tt_backend_identity(b, loc, &identity, err)) < 0)
			return rc;
		rc = tt_json_canonical(&c, identity);
		json_decref(identity);
		if (rc == 0)
			rc = tt_buf_check(&c, err, "identity");
		if (rc < 0) {
			tt_buf_release(&c);
			return rc;
		}
		ns = tt_buf_detach(&c);
	}
	*out = ns ? tt_asprintf("%s|%s", kind, ns) : NULL;
	free(ns);
	return *out ? 0 : tt_error_oom(err);
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

int tt_gc_note(tt_plan *plan, char *text, tt_error *err)
{
	int rc = text ? tt_plan_note(plan, text, err) : tt_error_oom(err);
	free(text);
	return rc;
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

/* "<8 hex>.<16>.<digits>" -> "<8 hex>.<16>": generations count as one pin. */
char *tt_gc_pin_of_listed(const char *id)
{
	char *ref = tt_asprintf("tether.%s", id), pid[TT_PIN_ID_MAX];
	if (!ref)
		return NULL;
	bool ok = tt_pin_id_of_ref(ref, pid);
	free(ref);
	return tt_strdup(ok ? pid : id);
}

/*
 * The remotes this clone shares the dataset through, quoted and joined
 * (NULL when it has none), read once per plan.  A clone with a remote is
 * one of a family: any other clone of it may commit the state a pin holds,
 * and its pin has the same id.
 */
int tt_gc_sharing_remotes(gc_state *s, const char **out, tt_error *err)
{
	if (!s->remotes_read) {
		json_t *names = NULL;
		int rc = tt_vcs_has(s->repo->vcs, remotes) ? tt_vcs_remotes(s->repo->vcs, &names, err) : 0;
		if (rc < 0)
			return rc;
		tt_buf t = TT_BUF_INIT;
		size_t i;
		json_t *v;
		json_array_foreach(names, i, v) {
			tt_buf_puts(&t, i ? ", " : "");
			tt_pyv_repr_str(&t, json_string_value(v), strlen(json_string_value(v)));
		}
		json_decref(names);
		if ((rc = tt_buf_check(&t, err, "remotes")) < 0) {
			tt_buf_release(&t);
			return rc;
		}
		s->remotes = t.len ? tt_buf_detach(&t) : NULL;
		tt_buf_release(&t);
		s->remotes_read = true;
	}
	*out = s->remotes;
	return 0;
}

/*
 * Why some remote may hold commits that name pins this clone cannot see
 * (NULL: every remote's branches and tags are here), asked once per plan:
 * a remote with a branch or tag whose commit was not fetched, or one that
 * cannot be listed.
 */
int tt_gc_remote_unfetched(gc_state *s, const char **out, tt_error *err)
{
	const char *names;
	int rc;
	if ((rc = tt_gc_sharing_remotes(s, &names, err)) < 0)
		return rc;
	if (!s->unfetched_read && names) {
		json_t *list = NULL;
		tt_buf t = TT_BUF_INIT;
		size_t i, j;
		json_t *v, *r;
		if ((rc = tt_vcs_remotes(s->repo->vcs, &list, err)) < 0)
			return rc;
		json_array_foreach(list, i, v) {
			const char *name = json_string_value(v);
			json_t *refs = NULL;
			tt_error e = TT_ERROR_INIT;
			if (!tt_vcs_has(s->repo->vcs, remote_unfetched))
				break;
			tt_buf_puts(&t, t.len ? "; " : "");
			if (tt_vcs_remote_unfetched(s->repo->vcs, name, &refs, &e) < 0) {
				tt_buf_printf(&t, "%s, whose commits may name it: fetch it (or remove the remote) "
					      "first", tt_error_text(&e));
			} else if (json_array_size(refs)) {
				tt_buf_puts(&t, "remote ");
				tt_pyv_repr_str(&t, name, strlen(name));
				tt_buf_printf(&t, " has %zu branch(es)/tag(s) this clone has not fetched (",
					      json_array_size(refs));
				json_array_foreach(refs, j, r) {
					if (j == 3) {
						tt_buf_puts(&t, ", ...");
						break;
					}
					tt_buf_printf(&t, "%s%s", j ? ", " : "", json_string_value(r));
				}
				tt_buf_puts(&t, "), whose commits may name it: fetch them first");
			} else if (t.len) {
				tt_buf_truncate(&t, t.len - 2);
			}
			json_decref(refs);
			tt_error_clear(&e);
		}
		json_decref(list);
		if ((rc = tt_buf_check(&t, err, "remotes")) < 0) {
			tt_buf_release(&t);
			return rc;
		}
		s->unfetched = t.len ? tt_buf_detach(&t) : NULL;
		tt_buf_release(&t);
	}
	s->unfetched_read = true;
	*out = s->unfetched;
	return 0;
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
