/*
 * engine/gc/gc_stores.c - `gc --delete-stores` (experimental): reclaim stores
 * this dataset created, and this clone's dead refs in stores no manifest
 * names any more, as tether-vcs decides.
 *
 * A created store (the clone's created-store index, or one named with
 * --store KIND=LOCATOR) is deleted only if all of these hold:
 *   1. its owner marker names this dataset (a manifest never vouches);
 *   2. no manifest in visible history, this working tree or any live
 *      checkout names it (by its recorded identity or its current one);
 *   3. every ref of this dataset in it is accounted for by this clone
 *      (pins it created, branches of bookmarks it had);
 *   4. everything of tether's in it is released by the same plan;
 *   5. the backend confirms nothing else remains (is_ref_empty).
 * Otherwise the plan says `keep-store` with the reason, or `forget-store`
 * when the indexed store has no marker any more.  `delete-store` runs last,
 * behind a `store_empty` precondition, and re-checks owner and emptiness
 * itself at that moment.
 */
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/index.h"
#include "core/oplog.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "backends/registry.h"
#include "engine/kernel/context.h"
#include "engine/cmd/lifecycle.h"
#include "engine/kernel/state.h"
#include "engine/kernel/repo.h"
#include "engine/gc/gc_stores.h"
#include "core/plan.h"
#include "engine/kernel/refnames.h"

static int cmp_json_str(const void *a, const void *b)
{
	return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

/* Sort an array of strings in place (by code point, as Python's sorted()). */
static void sort_strings(json_t *arr)
{
	size_t n = json_array_size(arr), i;
	json_t **items = tt_calloc(n ? n : 1, sizeof *items), *v;
	if (!items)
		return;
	json_array_foreach(arr, i, v) {
		if (!json_is_string(v)) {
			free(items);
			return;
		}
		items[i] = json_incref(v);
	}
	qsort(items, n, sizeof *items, cmp_json_str);
	json_array_clear(arr);
	for (i = 0; i < n; i++)
		json_array_append_new(arr, items[i]);
	free(items);
}

static bool has(const json_t *set, const char *k)
{
	return k && json_object_get(set, k) != NULL;
}

/* "kind|canon(identity)" (caller frees; NULL on OOM). */
static char *tag_of(const char *kind, const json_t *identity)
{
	tt_buf c = TT_BUF_INIT;
	char *out = NULL;
	if (tt_json_canonical(&c, identity) == 0 && !c.failed)
		out = tt_asprintf("%s|%s", kind, c.ptr);
	tt_buf_release(&c);
	return out;
}

/* Whether a manifest names an indexed store: by the identity recorded when
 * it was indexed, or by the one its locator has now (identities have been
 * normalized since; an index is never committed). */
static bool in_use(tt_repo *repo, const tt_gc_store_ctx *ctx, const char *kind, const json_t *identity,
		   const json_t *loc)
{
	tt_backend *b;
	json_t *now = NULL;
	tt_error ignored = TT_ERROR_INIT;
	char *tag = tag_of(kind, identity);
	bool used = has(ctx->in_use, tag);
	free(tag);
	if (!used && tt_engine_backend(repo, kind, &b, &ignored) == 0 &&
	    tt_backend_identity(b, loc, &now, &ignored) == 0) {
		tag = tag_of(kind, now);
		used = has(ctx->in_use, tag);
		free(tag);
	}
	json_decref(now);
	tt_error_clear(&ignored);
	return used;
}

static int action(tt_plan *plan, const char *op, const char *key, const char *kind, const char *target,
		  const char *detail, json_t *params, tt_error *err)
{
	int rc = params ? tt_plan_action(plan, op, key, kind, target, detail, params, err) : tt_error_oom(err);
	json_decref(params);
	return rc;
}

static int note(tt_plan *plan, char *text, tt_error *err)
{
	int rc = text ? tt_plan_note(plan, text, err) : tt_error_oom(err);
	free(text);
	return rc;
}

/* What one store holds of this dataset, and what the plan releases. */
typedef struct store_refs {
	json_t *ignoring;       /* refs this plan releases (array) */
	json_t *blockers;       /* why the store cannot go (array of str) */
	json_t *ours, *strangers;          /* working refs */
	json_t *pins;                      /* every listed pin id (set) */
	json_t *our_pins, *stranger_pins;  /* unreferenced pins of this dataset */
	size_t foreign_pins, foreign_refs;
} store_refs;

static void refs_release(store_refs *r)
{
	json_decref(r->ignoring);
	json_decref(r->blockers);
	json_decref(r->ours);
	json_decref(r->strangers);
	json_decref(r->pins);
	json_decref(r->our_pins);
	json_decref(r->stranger_pins);
	memset(r, 0, sizeof *r);
}

static void push(json_t *list, char *s)
{
	json_array_append_new(list, json_string(s ? s : "out of memory"));
	free(s);
}

static char *joined(const json_t *list, const char *sep)
{
	tt_buf b = TT_BUF_INIT;
	size_t i;
	json_t *v;
	json_array_foreach((json_t *)list, i, v) tt_buf_printf(&b, "%s%s", i ? sep : "", json_string_value(v));
	if (b.failed) {
		tt_buf_release(&b);
		return NULL;
	}
	return b.ptr ? tt_buf_detach(&b) : tt_strdup("");
}

/* The head of ref as content, compared with the pins and the base head. */
static int judge_ref(tt_repo *repo, tt_backend *b, const char *kind, const json_t *loc, const json_t *identity,
		     const store_refs *out, const char *ref, json_t **base_head, json_t **head,
		     const char **safe, char **reason, tt_error *err)
{
	tt_error e = TT_ERROR_INIT;
	json_t *content = NULL;
	if (tt_backend_fingerprint(b, loc, ref, head, &e) == 0 && (content = tt_content_state(b->kind, *head)) &&
	    !*base_head) {
		json_t *base = NULL;
		if (tt_backend_fingerprint(b, loc, NULL, &base, &e) == 0)
			*base_head = tt_content_state(b->kind, base);
		json_decref(base);
	}
	if (e.code) {
		*reason = tt_asprintf("cannot read head: %s", tt_error_text(&e));
		tt_error_clear(&e);
		json_decref(content);
		return *reason ? 0 : tt_error_oom(err);
	}
	if (!content)
		return tt_error_oom(err);
	char pid[TT_PIN_ID_MAX];
	int rc = tt_pin_id(pid, repo->config.dataset_id, kind, identity, content, err);
	if (rc == 0) {
		if (has(out->pins, pid)) {
			*safe = "head is pinned";
		} else if (*base_head && tt_pyv_eq(content, *base_head)) {
			*safe = "head equals the base branch";
		} else {
			tt_buf st = TT_BUF_INIT;
			tt_short_state(&st, content);
			*reason = tt_asprintf("has unpinned writes (%s)", st.ptr ? st.ptr : "");
			tt_buf_release(&st);
			rc = *reason ? 0 : tt_error_oom(err);
		}
	}
	json_decref(content);
	return rc;
}

/* What planning the release of one store's refs carries from step to step. */
typedef struct store_scan {
	tt_repo *repo;
	tt_plan *plan;
	const tt_gc_store_ctx *ctx;
	bool prune, force;
	const char *key, *kind, *why;
	const json_t *loc, *identity;
	tt_backend *b;
	store_refs *out;
	json_t *base_head;  /* the base branch's head as content, once read */
} store_scan;

/* The store's working refs into ours (this dataset's, of a bookmark this
 * clone had or created the store on) and strangers; others counted as
 * foreign. */
static int scan_branches(store_scan *s, const char *created_on, tt_error *err)
{
	store_refs *out = s->out;
	json_t *listed = NULL, *mine_slugs, *v;
	size_t i;
	int rc = 0;
	if (!(mine_slugs = json_deep_copy(s->ctx->known_slugs)))
		return tt_error_oom(err);
	if (created_on) {
		char *slug = NULL;
		if ((rc = tt_bookmark_slug(&slug, created_on, err)) < 0)
			goto done;
		json_object_set_new(mine_slugs, slug, json_true());
		free(slug);
	}
	if ((rc = tt_backend_list_working_refs(s->b, s->loc, &listed, err)) < 0)
		goto done;
	sort_strings(listed);
	json_array_foreach(listed, i, v) {
		tt_ref_parts parts;
		const char *ref = json_string_value(v);
		if (!ref || !tt_working_ref_parts(ref, &parts)) {
			out->foreign_refs++;
			continue;
		}
		if (strcmp(parts.ds, s->repo->config.dataset_id) != 0)
			out->foreign_refs++;
		else if (parts.slug && !has(mine_slugs, parts.slug))
			json_array_append_new(out->strangers, json_string(ref));
		else
			json_array_append_new(out->ours, json_string(ref));
		tt_ref_parts_release(&parts);
	}
done:
	json_decref(listed);
	json_decref(mine_slugs);
	return rc;
}

/* The store's pins into pins, and this dataset's unreferenced ones into
 * our_pins (a commit of this clone made them) and stranger_pins; others
 * counted as foreign. */
static int scan_pins(store_scan *s, tt_error *err)
{
	store_refs *out = s->out;
	const char *ds = s->repo->config.dataset_id;
	json_t *listed = NULL, *v;
	size_t i;
	int rc;
	if ((rc = tt_backend_list_pins(s->b, s->loc, &listed, err)) < 0) {
		json_decref(listed);
		return rc;
	}
	json_array_foreach(listed, i, v)
		if (json_is_string(v))
			json_object_set_new(out->pins, json_string_value(v), json_true());
	json_t *sorted = json_array();
	const char *pid;
	json_object_foreach(out->pins, pid, v) json_array_append_new(sorted, json_string(pid));
	sort_strings(sorted);
	json_array_foreach(sorted, i, v) {
		char pds[TT_DATASET_ID_LEN + 1];
		pid = json_string_value(v);
		if (!tt_pin_dataset(pid, pds) || strcmp(pds, ds) != 0) {
			out->foreign_pins++;
			continue;
		}
		/* A pin a manifest names stays (and so does its store). */
		if (has(s->ctx->referenced, pid))
			continue;
		json_array_append_new(has(s->ctx->known_pins, pid) ? out->our_pins : out->stranger_pins,
				      json_string(pid));
	}
	json_decref(sorted);
	json_decref(listed);
	return rc;
}

/* The blocker that says why strangers' refs hold the whole store. */
static int strangers_blocker(store_refs *out, tt_error *err)
{
	tt_buf t = TT_BUF_INIT;
	char *a = joined(out->strangers, ", "), *p = joined(out->stranger_pins, ", ");
	int rc;
	if (json_array_size(out->strangers))
		tt_buf_printf(&t, "branch(es) of bookmark(s) this clone never had: %s", a ? a : "");
	if (json_array_size(out->stranger_pins))
		tt_buf_printf(&t, "%spin(s) no commit of this clone made: %s", t.len ? "; " : "", p ? p : "");
	tt_buf_puts(&t, " -- another checkout or clone of this dataset may be working in the store; "
		    "fetch it, or --force-prune");
	free(a);
	free(p);
	if ((rc = tt_buf_check(&t, err, "blocker")) == 0)
		json_array_append_new(out->blockers, json_string(t.ptr));
	tt_buf_release(&t);
	return rc;
}

/* An unpin of each unreferenced pin of this dataset: ours, then the
 * strangers'. */
static int plan_pin_releases(store_scan *s, tt_error *err)
{
	size_t i;
	json_t *v;
	int rc;
	for (int pass = 0; pass < 2; pass++) {
		json_array_foreach(pass ? s->out->stranger_pins : s->out->our_pins, i, v) {
			char ref[TT_PIN_ID_MAX + 8];
			if (tt_ref_for_pin(ref, sizeof ref, json_string_value(v)) < 0)
				continue;
			if ((rc = action(s->plan, "unpin", s->key, s->kind, ref, s->why,
					 json_pack("{s:O,s:s}", "locator", s->loc, "pin_id", json_string_value(v)),
					 err)) < 0)
				return rc;
			json_array_append_new(s->out->ignoring, json_string(ref));
		}
	}
	return 0;
}

/* The delete of one working branch (a stranger's: of a bookmark this
 * clone never had), or the blocker that keeps it: no --prune-bookmarks, a
 * live bookmark's, or (unless forced) writes no pin holds. */
static int plan_branch_release(store_scan *s, const char *ref, bool stranger, tt_error *err)
{
	tt_ref_parts parts;
	char *slug = NULL, *reason = NULL;
	const char *safe = "";
	json_t *head = NULL;
	int rc;
	if (tt_working_ref_parts(ref, &parts)) {
		slug = parts.slug ? tt_strdup(parts.slug) : NULL;
		tt_ref_parts_release(&parts);
	}
	if (!s->prune) {
		push(s->out->blockers, tt_asprintf("working branch %s (gc --prune-bookmarks evaluates it)", ref));
		free(slug);
		return 0;
	}
	if (slug && has(s->ctx->keep_slugs, slug)) {
		push(s->out->blockers, tt_asprintf("branch %s belongs to live bookmark %s", ref, slug));
		free(slug);
		return 0;
	}
	free(slug);
	if (stranger)
		reason = tt_strdup("belongs to a bookmark this clone never had");
	else if ((rc = judge_ref(s->repo, s->b, s->kind, s->loc, s->identity, s->out, ref, &s->base_head, &head,
				 &safe, &reason, err)) < 0)
		return rc;
	if (reason && !s->force) {
		push(s->out->blockers, tt_asprintf("branch %s %s (--force-prune deletes)", ref, reason));
		free(reason);
		json_decref(head);
		return 0;
	}
	if (!head && stranger) {
		tt_error ignored = TT_ERROR_INIT;
		if (tt_backend_fingerprint(s->b, s->loc, ref, &head, &ignored) < 0)
			head = NULL;
		tt_error_clear(&ignored);
	}
	char *detail = reason ? tt_asprintf("%s; FORCED although it %s", s->why, reason)
			      : tt_asprintf("%s; %s", s->why, safe);
	json_t *params = json_pack("{s:O,s:O?}", "locator", s->loc, "head", head);
	if (params && reason)
		json_object_set_new(params, "forced", json_true());
	rc = detail ? action(s->plan, "delete-branch", s->key, s->kind, ref, detail, params, err)
		    : (json_decref(params), tt_error_oom(err));
	free(detail);
	free(reason);
	json_decref(head);
	if (rc < 0)
		return rc;
	json_array_append_new(s->out->ignoring, json_string(ref));
	return 0;
}

/*
 * Plan the release of this dataset's own refs in a store no manifest
 * names: unpin our pins, delete our stray branches under the
 * --prune-bookmarks rules.  A same-dataset branch of a bookmark this clone
 * never had, or a same-dataset pin it did not create, may be another
 * clone's live work: then nothing is planned for the store (not even our
 * pins), unless forced.
 */
static int plan_store_refs(tt_repo *repo, tt_plan *plan, const tt_gc_store_ctx *ctx, bool prune, bool force,
			   const char *key, const char *kind, const json_t *loc, const json_t *identity,
			   const char *created_on, const char *why, store_refs *out, tt_error *err)
{
	store_scan s = { .repo = repo, .plan = plan, .ctx = ctx, .prune = prune, .force = force, .key = key,
			 .kind = kind, .why = why, .loc = loc, .identity = identity, .out = out };
	size_t i;
	json_t *v;
	int rc;
	memset(out, 0, sizeof *out);
	out->ignoring = json_array();
	out->blockers = json_array();
	out->ours = json_array();
	out->strangers = json_array();
	out->pins = json_object();
	out->our_pins = json_array();
	out->stranger_pins = json_array();
	if (!out->ignoring || !out->blockers || !out->ours || !out->strangers || !out->pins || !out->our_pins ||
	    !out->stranger_pins)
		return tt_error_oom(err);
	if ((rc = tt_engine_backend(repo, kind, &s.b, err)) < 0)
		return rc;
	unsigned eff = tt_backend_caps(s.b, loc, repo->config.defaults.file, repo->config.defaults.pin);
	if ((eff & TT_CAP_FORK) && tt_backend_has(s.b, list_working_refs) &&
	    (rc = scan_branches(&s, created_on, err)) < 0)
		return rc;
	if ((eff & TT_CAP_PIN) && tt_backend_has(s.b, list_pins) && (rc = scan_pins(&s, err)) < 0)
		return rc;
	if ((json_array_size(out->strangers) || json_array_size(out->stranger_pins)) && !force)
		return strangers_blocker(out, err);   /* touch nothing */
	if ((rc = plan_pin_releases(&s, err)) < 0)
		goto done;
	for (int pass = 0; pass < 2; pass++)
		json_array_foreach(pass ? out->strangers : out->ours, i, v)
			if ((rc = plan_branch_release(&s, json_string_value(v), pass, err)) < 0)
				goto done;
done:
	json_decref(s.base_head);
	return rc;
}

static int keep_store(tt_plan *plan, const json_t *e, const char *where, const char *reason, tt_error *err)
{
	char *detail = tt_asprintf("created store is unreferenced; kept: %s", reason);
	int rc = detail ? action(plan, "keep-store", json_string_value(json_object_get(e, "key")),
				 json_string_value(json_object_get(e, "kind")), where, detail,
				 json_pack("{s:O,s:O}", "locator", json_object_get(e, "locator"), "identity",
					   json_object_get(e, "identity")), err)
			: tt_error_oom(err);
	free(detail);
	return rc;
}

/* The created stores to judge: the index's, then each --store the index
 * does not already hold (marked "claimed").  Adds their tags to seen. */
static int created_entries(tt_repo *repo, const char *const *claimed, size_t nclaimed, json_t *seen,
			   json_t **out, tt_error *err)
{
	int rc = tt_index_read_stores(repo->vcs->shared_dir, TT_CREATED_FILENAME, repo->config.dataset_id,
				      out, err);
	size_t i;
	json_t *e;
	if (rc < 0)
		return rc;
	json_array_foreach(*out, i, e) {
		const char *kind = json_string_value(json_object_get(e, "kind"));
		char *tag;
		if (!tt_kind_find(kind)) {
			rc = tt_error_set(err, TT_ECONFIG, "%s/%s:%lld: '%s' is not a kind this tether knows, so "
					  "the store it records cannot be judged", repo->vcs->shared_dir,
					  TT_CREATED_FILENAME, (long long)json_integer_value(json_object_get(e, "line")),
					  kind);
			tt_error_hint(err, "fix or delete that line (the index is this clone's own memory; a "
				      "deleted line only means gc no longer considers that store)");
			return rc;
		}
		if (!(tag = tag_of(kind, json_object_get(e, "identity"))))
			return tt_error_oom(err);
		json_object_set_new(seen, tag, json_true());
		free(tag);
	}
	for (size_t c = 0; c < nclaimed; c++) {
		const char *eq = strchr(claimed[c], '=');
		char *kind = eq ? tt_strndup(claimed[c], (size_t)(eq - claimed[c])) : NULL;
		char *cwd = tt_getcwd(), *tag = NULL;
		json_t *loc = eq ? json_pack("{s:s}", "uri", eq + 1) : NULL, *identity = NULL;
		tt_backend *b;
		tt_buf wb = TT_BUF_INIT;
		if (!eq || !eq[1] || eq == claimed[c])
			rc = tt_error_set(err, TT_EUSAGE, "--store expects KIND=LOCATOR, got '%s'", claimed[c]);
		else if (!kind || !cwd || !loc)
			rc = tt_error_oom(err);
		else if ((rc = tt_engine_backend(repo, kind, &b, err)) < 0 ||
			 (rc = tt_absolutize_locator(loc, kind, cwd, err)) < 0 ||
			 (rc = tt_backend_identity(b, loc, &identity, err)) < 0)
			tt_error_object(err, NULL, kind);
		else if (!(tag = tag_of(kind, identity)))
			rc = tt_error_oom(err);
		else if (!has(seen, tag)) {
			json_object_set_new(seen, tag, json_true());
			json_t *rec = json_pack("{s:s,s:s,s:O,s:O,s:s,s:s,s:n,s:b}", "dataset_id",
						repo->config.dataset_id, "kind", kind, "identity", identity,
						"locator", loc, "key", tt_engine_store_where(loc, &wb), "at", "",
						"bookmark", "claimed", true);
			if (!rec || json_array_append_new(*out, rec) < 0)
				rc = tt_error_oom(err);
		}
		tt_buf_release(&wb);
		free(kind);
		free(cwd);
		free(tag);
		json_decref(loc);
		json_decref(identity);
		if (rc < 0)
			return rc;
	}
	return 0;
}

/* Kept: a created store that holds more than tether's own refs. */
static int keep_not_empty(tt_plan *plan, const json_t *e, const char *where, const store_refs *refs, tt_error *err)
{
	tt_buf what = TT_BUF_INIT;
	int rc;
	tt_buf_puts(&what, "holds ");
	if (refs->foreign_pins)
		tt_buf_printf(&what, "%zu pin(s) of other datasets%s", refs->foreign_pins, ", or ");
	if (refs->foreign_refs)
		tt_buf_printf(&what, "%zu working branch(es) of other datasets%s", refs->foreign_refs, ", or ");
	tt_buf_puts(&what, "refs or writes that are not tether's own");
	rc = tt_buf_check(&what, err, "reason");
	if (rc == 0)
		rc = keep_store(plan, e, where, what.ptr, err);
	tt_buf_release(&what);
	return rc;
}

/* Kept, with why (prefix, then inner's text). */
static int keep_store_because(tt_plan *plan, const json_t *e, const char *where, const char *prefix,
			      tt_error *inner, tt_error *err)
{
	char *r = tt_asprintf("%s: %s", prefix, tt_error_text(inner));
	int rc = r ? keep_store(plan, e, where, r, err) : tt_error_oom(err);
	free(r);
	return rc;
}

/* A created store of this dataset (its owner marker says so): the release
 * of its refs, then kept for what blocks them or what else it holds, else
 * queued among the deletions with the refs it may still hold. */
static int plan_created_ours(tt_repo *repo, tt_plan *plan, const tt_gc_store_ctx *ctx, bool prune, bool force,
			     tt_backend *b, json_t *e, const char *key, const char *where, json_t *deletions,
			     tt_error *err)
{
	const char *kind = json_string_value(json_object_get(e, "kind"));
	const char *bookmark = json_string_value(json_object_get(e, "bookmark"));
	json_t *loc = json_object_get(e, "locator"), *identity = json_object_get(e, "identity");
	tt_error inner = TT_ERROR_INIT;
	store_refs refs = { 0 };
	int rc = 0, empty = -1;
	if (plan_store_refs(repo, plan, ctx, prune, force, key, kind, loc, identity, bookmark,
			    "in an unreferenced created store", &refs, &inner) < 0)
		rc = keep_store_because(plan, e, where, "cannot list its refs", &inner, err);
	else if (json_array_size(refs.blockers)) {
		char *r = joined(refs.blockers, "; ");
		rc = r ? keep_store(plan, e, where, r, err) : tt_error_oom(err);
		free(r);
	} else if (tt_backend_is_ref_empty(b, loc, refs.ignoring, &empty, &inner) < 0)
		rc = keep_store_because(plan, e, where, "cannot list what remains", &inner, err);
	else if (empty < 0)
		rc = keep_store(plan, e, where, "the backend cannot tell what remains in it", err);
	else if (!empty)
		rc = keep_not_empty(plan, e, where, &refs, err);
	else {
		sort_strings(refs.ignoring);
		if (json_array_append_new(deletions, json_pack("{s:O,s:O}", "entry", e, "ignoring", refs.ignoring)) < 0)
			rc = tt_error_oom(err);
	}
	refs_release(&refs);
	tt_error_clear(&inner);
	return rc;
}

/* One created store no manifest uses (still_used counts those some
 * manifest does): kept, forgotten, noted, or (ours, and only tether's
 * refs in it) queued among the deletions. */
static int plan_created_entry(tt_repo *repo, tt_plan *plan, const tt_gc_store_ctx *ctx, bool prune, bool force,
			      json_t *e, json_t *deletions, size_t *still_used, tt_error *err)
{
	const char *kind = json_string_value(json_object_get(e, "kind"));
	const char *key = json_string_value(json_object_get(e, "key"));
	json_t *loc = json_object_get(e, "locator"), *identity = json_object_get(e, "identity");
	bool indexed = !json_is_true(json_object_get(e, "claimed"));
	tt_buf wb = TT_BUF_INIT;
	tt_error inner = TT_ERROR_INIT;
	tt_backend *b;
	char *owner = NULL;
	int rc;
	key = key ? key : "";
	if (in_use(repo, ctx, kind, identity, loc)) {
		(*still_used)++;
		return 0;
	}
	const char *where = tt_engine_store_where(loc, &wb);
	if ((rc = tt_engine_backend(repo, kind, &b, err)) < 0)
		tt_error_object(err, key, kind);
	else if (!tt_backend_has(b, owner) || !tt_backend_has(b, is_ref_empty) || !tt_backend_has(b, delete_store))
		rc = keep_store(plan, e, where, "its kind cannot remove stores", err);
	else if (tt_backend_owner(b, loc, &owner, &inner) < 0)
		rc = keep_store_because(plan, e, where, "cannot read its owner marker", &inner, err);
	else if (!owner && !indexed)
		rc = note(plan, tt_asprintf("%s: no owner marker; not a store tether created", where), err);
	else if (!owner)
		rc = action(plan, "forget-store", key, kind, where,
			    "no owner marker: the store was removed or taken over; dropping it from "
			    "the created-store index",
			    json_pack("{s:O,s:O}", "locator", loc, "identity", identity), err);
	else if (strcmp(owner, repo->config.dataset_id) != 0)
		rc = note(plan, tt_asprintf("%s: created store %s carries dataset %s's owner marker; left "
					    "alone", key, where, owner), err);
	else
		rc = plan_created_ours(repo, plan, ctx, prune, force, b, e, key, where, deletions, err);
	tt_error_clear(&inner);
	tt_buf_release(&wb);
	free(owner);
	return rc;
}

/* A queued deletion ({entry, ignoring}): delete-store, required empty
 * again when it runs, with nothing ignored. */
static int plan_deletion(tt_plan *plan, const json_t *e, tt_error *err)
{
	json_t *entry = json_object_get(e, "entry");
	const char *kind = json_string_value(json_object_get(entry, "kind"));
	const char *key = json_string_value(json_object_get(entry, "key"));
	json_t *loc = json_object_get(entry, "locator");
	tt_buf wb = TT_BUF_INIT;
	const char *where = tt_engine_store_where(loc, &wb);
	char *detail = tt_asprintf("%s: the store at %s is no longer empty ({observed}); re-run the plan",
				   key, where);
	json_t *params = json_pack("{s:s,s:O,s:O}", "backend", kind, "locator", loc, "ignoring",
				   json_object_get(e, "ignoring"));
	int rc = action(plan, "delete-store", key, kind, where,
			"created by this dataset; unreferenced; only tether's own refs remained",
			json_pack("{s:O,s:O}", "locator", loc, "identity", json_object_get(entry, "identity")), err);
	if (rc == 0)
		rc = detail && params ? tt_plan_require(plan, "store_empty", json_true(), key, params, detail, err)
				      : tt_error_oom(err);
	free(detail);
	json_decref(params);
	tt_buf_release(&wb);
	return rc;
}

static int plan_created(tt_repo *repo, tt_plan *plan, const tt_gc_store_ctx *ctx, bool prune, bool force,
			const char *const *claimed, size_t nclaimed, json_t *seen, tt_error *err)
{
	json_t *entries = NULL, *deletions = json_array();
	size_t still_used = 0, i;
	json_t *e;
	int rc;
	if (!deletions)
		return tt_error_oom(err);
	if ((rc = created_entries(repo, claimed, nclaimed, seen, &entries, err)) < 0)
		goto done;
	json_array_foreach(entries, i, e)
		if ((rc = plan_created_entry(repo, plan, ctx, prune, force, e, deletions, &still_used, err)) < 0)
			goto done;
	/* Deletions go last: everything else runs first, and the precondition
	 * is checked again at that moment with nothing ignored. */
	json_array_foreach(deletions, i, e)
		if ((rc = plan_deletion(plan, e, err)) < 0)
			goto done;
	if (still_used)
		rc = note(plan, tt_asprintf("%zu created store(s) still referenced; kept", still_used), err);
done:
	json_decref(entries);
	json_decref(deletions);
	return rc;
}

/* Dead refs of this dataset in stores this clone forked or pinned in that
 * no manifest names any more (an abandoned bookmark took the manifest with
 * it).  skip: the identities the created step handled. */
static int plan_touched(tt_repo *repo, tt_plan *plan, const tt_gc_store_ctx *ctx, bool prune, bool force,
			const json_t *skip, tt_error *err)
{
	json_t *entries = NULL, *gone = json_object();
	size_t i;
	json_t *e;
	int rc;
	if (!gone)
		return tt_error_oom(err);
	if ((rc = tt_index_read_stores(repo->vcs->shared_dir, TT_TOUCHED_FILENAME, repo->config.dataset_id,
				       &entries, err)) < 0)
		goto done;
	json_array_foreach(entries, i, e) {
		const char *kind = json_string_value(json_object_get(e, "kind"));
		const char *key = json_string_value(json_object_get(e, "key"));
		json_t *loc = json_object_get(e, "locator"), *identity = json_object_get(e, "identity");
		tt_buf wb = TT_BUF_INIT;
		tt_error inner = TT_ERROR_INIT;
		store_refs refs = { 0 };
		key = key ? key : "";
		if (!tt_kind_find(kind)) {
			json_t *n = json_object_get(gone, kind);
			json_object_set_new(gone, kind, json_integer(json_integer_value(n) + 1));
			continue;
		}
		char *tag = tag_of(kind, identity);
		bool skipped = !tag || has(skip, tag) || in_use(repo, ctx, kind, identity, loc);
		free(tag);
		if (skipped)
			continue;
		const char *where = tt_engine_store_where(loc, &wb);
		if (plan_store_refs(repo, plan, ctx, prune, force, key, kind, loc, identity, NULL,
				    "in a store no manifest names (touched by this clone)", &refs, &inner) < 0) {
			rc = note(plan, tt_asprintf("%s: cannot list %s (touched by this clone): %s", key, where,
						    tt_error_text(&inner)), err);
			goto next;
		}
		if ((json_array_size(refs.strangers) || json_array_size(refs.stranger_pins)) && !force) {
			rc = note(plan, tt_asprintf("%s: %s: %s", key, where,
						    json_string_value(json_array_get(refs.blockers, 0))), err);
			goto next;
		}
		if (!json_array_size(refs.our_pins) && !json_array_size(refs.ours) && !json_array_size(refs.strangers))
			rc = action(plan, "forget-touched", key, kind, where,
				    "nothing of this dataset's remains in the store; dropping it from the "
				    "touched-store index",
				    json_pack("{s:O,s:O}", "locator", loc, "identity", identity), err);
		size_t k;
		json_t *line;
		json_array_foreach(refs.blockers, k, line) {
			if (rc < 0)
				break;
			rc = note(plan, tt_asprintf("%s: %s: kept %s", key, where, json_string_value(line)), err);
		}
next:
		refs_release(&refs);
		tt_error_clear(&inner);
		tt_buf_release(&wb);
		if (rc < 0)
			goto done;
	}
	const char *k;
	json_t *n;
	json_object_foreach(gone, k, n) {
		if ((rc = note(plan, tt_asprintf("'%s': %lld touched-store record(s) skipped -- this tether has no "
						 "'%s' backend; their stores are left as they are", k,
						 (long long)json_integer_value(n), k), err)) < 0)
			break;
	}
done:
	json_decref(entries);
	json_decref(gone);
	return rc;
}

int tt_gc_plan_stores(tt_repo *repo, tt_plan *plan, const tt_gc_store_ctx *ctx, bool prune_bookmarks,
		      bool force, const char *const *claimed, size_t nclaimed, tt_error *err)
{
	json_t *seen = json_object();
	int rc;
	if (!seen)
		return tt_error_oom(err);
	rc = plan_created(repo, plan, ctx, prune_bookmarks, force, claimed, nclaimed, seen, err);
	if (rc == 0)
		rc = plan_touched(repo, plan, ctx, prune_bookmarks, force, seen, err);
	json_decref(seen);
	return rc;
}

/* --- applying --------------------------------------------------------------------- */

bool tt_gc_store_op(const char *op)
{
	return !strcmp(op, "keep-store") || !strcmp(op, "forget-store") || !strcmp(op, "forget-touched") ||
	       !strcmp(op, "delete-store");
}

void tt_gc_preview_store(const tt_plan_action_view *a, json_t *report)
{
	if (!strcmp(a->op, "delete-store"))
		json_object_set_new(json_object_get(report, "deleted_stores"), a->key, json_string(a->target));
	else if (!strcmp(a->op, "keep-store"))
		json_object_set_new(json_object_get(report, "kept_stores"), a->key, json_string(a->detail));
	else if (!strcmp(a->op, "forget-store") || !strcmp(a->op, "forget-touched"))
		json_array_append_new(json_object_get(report, "forgotten_stores"), json_string(a->key));
}

void tt_gc_apply_store(tt_repo *repo, const tt_plan_action_view *a, json_t *report, const char *op_id,
		       tt_error *e)
{
	const char *ds = repo->config.dataset_id, *shared = repo->vcs->shared_dir;
	json_t *loc = json_object_get(a->params, "locator"), *identity = json_object_get(a->params, "identity");
	if (!strcmp(a->op, "keep-store")) {
		tt_gc_preview_store(a, report);
		return;
	}
	/* A plan is not authenticated: every store verb needs its store named. */
	if (!json_is_object(loc) || !json_is_object(identity)) {
		tt_error_set(e, TT_ESTALEPLAN, "%s: the plan's %s names no locator and identity; re-run the plan",
			     a->key, a->op);
		return;
	}
	if (!strcmp(a->op, "forget-store") || !strcmp(a->op, "forget-touched")) {
		if (tt_index_forget_store(shared, strcmp(a->op, "forget-store") == 0 ? TT_CREATED_FILENAME
										    : TT_TOUCHED_FILENAME,
					  ds, identity, e) == 0)
			tt_gc_preview_store(a, report);
		return;
	}
	if (strcmp(a->op, "delete-store") != 0)
		return;
	tt_backend *b;
	char *owner = NULL;
	int empty = -1;
	if (tt_engine_backend(repo, a->kind, &b, e) < 0)
		return;
	if (!tt_backend_has(b, owner) || !tt_backend_has(b, is_ref_empty) || !tt_backend_has(b, delete_store)) {
		tt_error_set(e, TT_ECAPABILITY, "[%s] cannot remove stores", a->kind);
		return;
	}
	/* The refs this plan released are gone now: the store must be empty
	 * outright, and still ours. */
	if (tt_backend_owner(b, loc, &owner, e) < 0)
		return;
	if (!owner || strcmp(owner, ds) != 0) {
		json_object_set_new(json_object_get(report, "kept_stores"), a->key, json_string("owner marker changed"));
		tt_error_set(e, TT_ESTALEPLAN, "%s: the store at %s no longer carries this dataset's owner marker",
			     a->key, a->target);
		free(owner);
		return;
	}
	free(owner);
	if (tt_backend_is_ref_empty(b, loc, NULL, &empty, e) < 0)
		return;
	if (empty != 1) {
		json_object_set_new(json_object_get(report, "kept_stores"), a->key,
				    json_string("not empty at the moment of deletion"));
		tt_error_set(e, TT_ESTALEPLAN, "%s: the store at %s is not empty; re-run the plan", a->key, a->target);
		return;
	}
	if (tt_backend_delete_store(b, loc, e) < 0)
		return;
	tt_error ignored = TT_ERROR_INIT;
	tt_index_forget_store(shared, TT_CREATED_FILENAME, ds, identity, &ignored);
	tt_error_clear(&ignored);
	tt_index_forget_store(shared, TT_TOUCHED_FILENAME, ds, identity, &ignored);
	tt_error_clear(&ignored);
	json_object_set_new(json_object_get(report, "deleted_stores"), a->key, json_string(a->target));
	if (op_id && *op_id) {
		json_t *d = json_pack("{s:s,s:s}", "key", a->key, "target", a->target);
		tt_oplog_progress(repo->root, op_id, "delete-store", d, &ignored);
		json_decref(d);
		tt_error_clear(&ignored);
	}
}
