/*
 * engine/cmd/recover.c - `recover`: what a lost dataset left in its stores,
 * and how to take it back.  Read-only.  Each registered object's store is
 * listed (pins `tether.<dataset>.<hash>`, working branches
 * `tether.ws.<dataset>.<bookmark>[.<n>]`, and the pre-bookmark per-workspace
 * `tether.ws.<dataset>.<workspace>.<key>`), grouped by the dataset id each
 * ref carries, and turned into steps: shell-quoted commands, each ending
 * its options with `--`, or `#` notes - the same report tether-vcs makes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "engine/kernel/context.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/select.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"

#define RECOVER_COMMIT "Recover "

/* ---- names --------------------------------------------------------------- */

/* shlex.quote */
static void q(tt_buf *b, const char *s)
{
	bool safe = *s != '\0';
	for (const char *p = s; *p && safe; p++)
		safe = strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./-_", *p) != NULL;
	if (safe) {
		tt_buf_puts(b, s);
		return;
	}
	tt_buf_putc(b, '\'');
	for (const char *p = s; *p; p++) {
		if (*p == '\'')
			tt_buf_puts(b, "'\"'\"'");
		else
			tt_buf_putc(b, *p);
	}
	tt_buf_putc(b, '\'');
}

/* tether.ws.<ds>[.<name>].<n>: the generation, or 0 for none */
static long generation(const char *ref)
{
	if (strncmp(ref, TT_WORKING_REF_PREFIX, strlen(TT_WORKING_REF_PREFIX)) != 0)
		return 0;
	const char *dot = strrchr(ref, '.');
	if (!dot || dot == ref || !dot[1])
		return 0;
	for (const char *p = dot + 1; *p; p++)
		if (*p < '0' || *p > '9')
			return 0;
	return strtol(dot + 1, NULL, 10);
}

static long gen_or_1(const char *ref)
{
	long g = generation(ref);
	return g ? g : 1;
}

/* (dataset, slug, legacy workspace or NULL) of a working ref; false when
 * it is not one.  Buffers are caller-provided. */
static bool working_ref_parts(const char *ref, char ds[9], char **slug, char **ws)
{
	size_t pl = strlen(TT_WORKING_REF_PREFIX);
	*slug = *ws = NULL;
	if (strncmp(ref, TT_WORKING_REF_PREFIX, pl) != 0)
		return false;
	const char *rest = ref + pl, *dot = strchr(rest, '.');
	if (!dot || (size_t)(dot - rest) != 8)
		return false;
	memcpy(ds, rest, 8);
	ds[8] = '\0';
	if (!tt_is_dataset_id(ds) || !dot[1])
		return false;
	char *r = tt_strdup(dot + 1);
	if (!r)
		return false;
	/* a generation suffix .<n> after a non-empty name */
	char *last = strrchr(r, '.');
	if (last && last != r && last[1]) {
		bool digits = true;
		for (char *p = last + 1; *p; p++)
			digits = digits && *p >= '0' && *p <= '9';
		if (digits)
			*last = '\0';
	}
	char *d2 = strchr(r, '.');
	if (d2 && d2[1]) {
		char head[9] = { 0 };
		if ((size_t)(d2 - r) == 8) {
			memcpy(head, r, 8);
			if (tt_is_dataset_id(head)) {
				*ws = tt_strdup(head);
				*slug = tt_strdup(d2 + 1);
				free(r);
				return *ws && *slug;
			}
		}
	}
	*slug = r;
	return true;
}

/* ---- one object's listing ------------------------------------------------- */

typedef struct rec_obj {
	tt_repo *repo;
	const tt_manifest *m;
	bool holds_refs;
	char *error;
	char *missing_pin;
	json_t *unrecognized;  /* [refs] */
	json_t *ns;            /* ds -> {pins: {id: true}, bookmarks: {slug: [refs]}, legacy: {ws: [refs]}} */
} rec_obj;

static json_t *under(json_t *ns, const char *ds)
{
	json_t *r = json_object_get(ns, ds);
	if (!r) {
		r = json_pack("{s:{},s:{},s:{}}", "pins", "bookmarks", "legacy");
		json_object_set_new(ns, ds, r);
	}
	return r;
}

static void append_unique(json_t *arr, const char *s)
{
	size_t i;
	json_t *x;
	json_array_foreach(arr, i, x)
		if (strcmp(json_string_value(x), s) == 0)
			return;
	json_array_append_new(arr, json_string(s));
}

/* stable insertion sorts */
static void sort_by_generation(json_t *arr)
{
	for (size_t a = 1; a < json_array_size(arr); a++)
		for (size_t c = a; c > 0 && gen_or_1(json_string_value(json_array_get(arr, c - 1))) >
						gen_or_1(json_string_value(json_array_get(arr, c))); c--) {
			json_t *t = json_incref(json_array_get(arr, c));
			json_array_set(arr, c, json_array_get(arr, c - 1));
			json_array_set_new(arr, c - 1, t);
		}
}

static void sort_strings(json_t *arr)
{
	for (size_t a = 1; a < json_array_size(arr); a++)
		for (size_t c = a; c > 0 && strcmp(json_string_value(json_array_get(arr, c - 1)),
						    json_string_value(json_array_get(arr, c))) > 0; c--) {
			json_t *t = json_incref(json_array_get(arr, c));
			json_array_set(arr, c, json_array_get(arr, c - 1));
			json_array_set_new(arr, c - 1, t);
		}
}

static void list_one(size_t i, void *vctx)
{
	rec_obj *o = &((rec_obj *)vctx)[i];
	const tt_manifest *m = o->m;
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = NULL;
	json_t *listed = NULL, *seen = json_object();
	o->unrecognized = json_array();
	o->ns = json_object();
	o->holds_refs = true;
	if (tt_engine_backend(o->repo, m->kind, &b, &err) < 0)
		goto fail;
	unsigned caps = b->kind->caps;
	if (!(caps & (TT_CAP_PIN | TT_CAP_FORK))) {
		o->holds_refs = false;
		goto done;
	}
	if ((caps & TT_CAP_PIN) && tt_backend_has(b, list_pins)) {
		if (tt_backend_list_pins(b, m->locator, &listed, &err) < 0)
			goto fail;
		size_t k;
		json_t *raw;
		json_array_foreach(listed, k, raw) {
			char ref[256], id[TT_PIN_ID_MAX], ds[TT_DATASET_ID_LEN + 1];
			snprintf(ref, sizeof ref, "tether.%s", json_string_value(raw));
			if (!tt_pin_id_of_ref(ref, id) || !tt_pin_dataset(id, ds)) {
				if (strncmp(ref, "tether.owner.", 13) != 0)
					json_array_append_new(o->unrecognized, json_string(ref));
				continue;
			}
			json_object_set(seen, id, json_true());
			json_object_set(json_object_get(under(o->ns, ds), "pins"), id, json_true());
		}
		if (m->pin_id && !json_object_get(seen, m->pin_id))
			o->missing_pin = tt_strdup(m->pin_id);
		json_decref(listed);
		listed = NULL;
	}
	if ((caps & TT_CAP_FORK) && tt_backend_has(b, list_working_refs)) {
		if (tt_backend_list_working_refs(b, m->locator, &listed, &err) < 0)
			goto fail;
		size_t k;
		json_t *r;
		json_array_foreach(listed, k, r) {
			const char *ref = json_string_value(r);
			char ds[9];
			char *slug = NULL, *ws = NULL;
			if (ref && working_ref_parts(ref, ds, &slug, &ws)) {
				json_t *group = json_object_get(under(o->ns, ds), ws ? "legacy" : "bookmarks");
				const char *name = ws ? ws : slug;
				json_t *arr = json_object_get(group, name);
				if (!arr) {
					arr = json_array();
					json_object_set_new(group, name, arr);
				}
				json_array_append(arr, r);
			} else if (ref) {
				json_array_append(o->unrecognized, r);
			}
			free(slug);
			free(ws);
		}
	}
	const char *ds;
	json_t *refs;
	json_object_foreach(o->ns, ds, refs) {
		const char *name;
		json_t *arr;
		json_object_foreach(json_object_get(refs, "bookmarks"), name, arr)
			sort_by_generation(arr);
		json_object_foreach(json_object_get(refs, "legacy"), name, arr)
			sort_strings(arr);
	}
	sort_strings(o->unrecognized);
	goto done;
fail:
	if (!err.key)
		tt_error_object(&err, m->key, NULL);
	o->error = tt_strdup(tt_error_text(&err));
done:
	json_decref(listed);
	json_decref(seen);
	tt_error_clear(&err);
}

/* ---- the report ------------------------------------------------------------ */

static json_t *sorted_keys(const json_t *obj)
{
	json_t *arr = json_array();
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)obj, k, v)
		json_array_append_new(arr, json_string(k));
	sort_strings(arr);
	return arr;
}

static json_t *refs_dict(const char *ds, const json_t *refs, const char *current)
{
	json_t *bms = json_array(), *legacy = json_array(), *slugs, *s;
	size_t i;
	slugs = sorted_keys(json_object_get(refs, "bookmarks"));
	json_array_foreach(slugs, i, s) {
		json_t *arr = json_object_get(json_object_get(refs, "bookmarks"), json_string_value(s));
		const char *last = json_string_value(json_array_get(arr, json_array_size(arr) - 1));
		long g = generation(last);
		json_array_append_new(bms, json_pack("{s:O,s:s,s:o,s:O}", "bookmark", s, "branch", last, "generation",
						     g ? json_integer(g) : json_null(), "branches", arr));
	}
	json_decref(slugs);
	slugs = sorted_keys(json_object_get(refs, "legacy"));
	json_array_foreach(slugs, i, s)
		json_array_append_new(legacy, json_pack("{s:O,s:O}", "workspace", s, "branches",
							json_object_get(json_object_get(refs, "legacy"),
									json_string_value(s))));
	json_decref(slugs);
	return json_pack("{s:s,s:b,s:I,s:o,s:o}", "dataset_id", ds, "current", strcmp(ds, current) == 0, "pins",
			 (json_int_t)json_object_size(json_object_get(refs, "pins")), "bookmarks", bms, "legacy", legacy);
}

static void merge_refs(json_t *into, const json_t *from)
{
	const char *k;
	json_t *v;
	json_object_update(json_object_get(into, "pins"), json_object_get(from, "pins"));
	json_object_foreach(json_object_get(from, "bookmarks"), k, v) {
		json_t *mine = json_object_get(json_object_get(into, "bookmarks"), k);
		if (!mine) {
			mine = json_array();
			json_object_set_new(json_object_get(into, "bookmarks"), k, mine);
		}
		size_t i;
		json_t *r;
		json_array_foreach(v, i, r)
			append_unique(mine, json_string_value(r));
		sort_by_generation(mine);
	}
	json_object_foreach(json_object_get(from, "legacy"), k, v) {
		json_t *mine = json_object_get(json_object_get(into, "legacy"), k);
		if (!mine) {
			mine = json_array();
			json_object_set_new(json_object_get(into, "legacy"), k, mine);
		}
		size_t i;
		json_t *r;
		json_array_foreach(v, i, r)
			append_unique(mine, json_string_value(r));
		sort_strings(mine);
	}
}

typedef struct rctx {
	tt_repo *repo;
	rec_obj *objs;
	size_t n;
	json_t *found;   /* merged datasets: ds -> refs */
	json_t *steps;
	const char *current, *trunk;
	bool scoped, pinned;
	char *suggested;
} rctx;

static void step(rctx *c, const char *command, const char *note)
{
	json_array_append_new(c->steps, json_pack("{s:s?,s:s}", "command", command, "note", note));
}

static void join_strings(tt_buf *b, const json_t *arr, const char *sep)
{
	size_t i;
	json_t *s;
	json_array_foreach(arr, i, s)
		tt_buf_printf(b, "%s%s", i ? sep : "", json_string_value(s));
}

static json_t *other_ids(rctx *c)
{
	json_t *others = json_array();
	json_t *all = sorted_keys(c->found);
	size_t i;
	json_t *s;
	json_array_foreach(all, i, s)
		if (strcmp(json_string_value(s), c->current) != 0)
			json_array_append(others, s);
	json_decref(all);
	return others;
}

static bool any_unrecognized_or_missing(rctx *c)
{
	for (size_t i = 0; i < c->n; i++)
		if (json_array_size(c->objs[i].unrecognized) || c->objs[i].missing_pin)
			return true;
	return false;
}

static void scoped_steps(rctx *c)
{
	tt_buf note = TT_BUF_INIT;
	if (!json_object_size(c->found)) {
		if (!any_unrecognized_or_missing(c))
			step(c, NULL, "no tether refs in the selected stores");
		return;
	}
	json_t *others = other_ids(c);
	if (json_array_size(others)) {
		tt_buf_puts(&note, "the refs of ");
		join_strings(&note, others, ", ");
		tt_buf_printf(&note, " are %s, not %s's; ",
			      json_array_size(others) == 1 ? "another dataset's" : "other datasets'", c->current);
		if (c->pinned)
			tt_buf_printf(&note,
				      "this dataset has pinned under %s already, so its id can no longer change; if "
				      "they were this one's, take them back in a fresh repository: `tether init "
				      "--dataset-id ID`, `tether add` the objects, then `tether recover` there",
				      c->current);
		else
			tt_buf_printf(&note, "nothing is pinned under %s yet, so the id can still change", c->current);
		step(c, NULL, note.ptr);
	}
	json_decref(others);
	tt_buf_release(&note);
}

/* Whether bookmark name (head) is an earlier recovery's: everything only
 * it reaches is a legacy-restore commit and its head registers keys. */
static bool earlier_recovery(rctx *c, const char *name, const char *head, const json_t *keys)
{
	tt_vcs *v = c->repo->vcs;
	json_t *only = NULL, *infos = NULL;
	tt_manifest_set at = { 0 };
	tt_error err = TT_ERROR_INIT;
	bool yes = false;
	if (!tt_vcs_has(v, exclusive_commits) || tt_vcs_exclusive_commits(v, name, &only, &err) < 0)
		goto done;
	if (json_array_size(only)) {
		const char **ids = tt_calloc(json_array_size(only), sizeof *ids);
		size_t i;
		json_t *x;
		json_array_foreach(only, i, x)
			ids[i] = json_string_value(x);
		int rc = ids ? tt_vcs_commit_info(v, ids, json_array_size(only), &infos, &err) : -1;
		free(ids);
		if (rc < 0)
			goto done;
	}
	if (tt_engine_objects_at(c->repo, head, &at, NULL, &err) < 0)
		goto done;
	yes = true;
	size_t i;
	json_t *x;
	json_array_foreach(keys, i, x)
		if (!tt_manifests_find(&at, json_string_value(x)))
			yes = false;
	json_array_foreach(infos, i, x) {
		const char *msg = json_string_value(json_object_get(x, "message"));
		if (!msg || strncmp(msg, RECOVER_COMMIT TT_WORKING_REF_PREFIX, strlen(RECOVER_COMMIT TT_WORKING_REF_PREFIX)) != 0)
			yes = false;
	}
done:
	tt_manifests_release(&at);
	json_decref(only);
	json_decref(infos);
	tt_error_clear(&err);
	return yes;
}

/* What o's legacy branches share a branch space by: the backend's branch
 * scope, else its canonical identity; NULL when unknown (caller frees). */
static char *legacy_scope(rctx *c, const rec_obj *o)
{
	tt_error err = TT_ERROR_INIT;
	tt_backend *b = NULL;
	char *scope = NULL;
	if (tt_engine_backend(c->repo, o->m->kind, &b, &err) == 0) {
		if (tt_backend_has(b, branch_scope)) {
			tt_backend_branch_scope(b, o->m->locator, &scope, &err);
		} else {
			json_t *identity = NULL;
			if (tt_backend_identity(b, o->m->locator, &identity, &err) == 0) {
				tt_buf sb = TT_BUF_INIT;
				tt_json_canonical(&sb, identity);
				scope = tt_buf_detach(&sb);
			}
			json_decref(identity);
		}
	}
	tt_error_clear(&err);
	return scope;
}

/* The legacy branches of the dataset recovered, grouped by branch space. */
typedef struct legacy_groups {
	json_t *groups;    /* "kind\x1fscope\x1fref" -> {keys: [], ws, ref} */
	json_t *order;     /* the groups' names, first seen first */
	json_t *restored;  /* ws -> {key: true} */
} legacy_groups;

/* o's legacy branches ({ws: [refs]}) into their groups: one per (kind,
 * scope, ref), naming every object that shares it. */
static void group_legacy(legacy_groups *lg, const rec_obj *o, const char *scope, json_t *legacy)
{
	const char *ws;
	json_t *branches;
	json_object_foreach(legacy, ws, branches) {
		size_t k;
		json_t *r;
		json_array_foreach(branches, k, r) {
			char *gk = tt_asprintf("%s\x1f%s\x1f%s", o->m->kind, scope ? scope : "", json_string_value(r));
			json_t *g = json_object_get(lg->groups, gk);
			if (!g) {
				g = json_pack("{s:[],s:s,s:O}", "keys", "ws", ws, "ref", r);
				json_object_set_new(lg->groups, gk, g);
				json_array_append_new(lg->order, json_string(gk));
			}
			json_array_append_new(json_object_get(g, "keys"), json_string(o->m->key));
			json_object_set_new(g, "ws", json_string(ws));
			json_t *set = json_object_get(lg->restored, ws);
			if (!set) {
				set = json_object();
				json_object_set_new(lg->restored, ws, set);
			}
			json_object_set(set, o->m->key, json_true());
			free(gk);
		}
	}
}

/* The bookmark workspace ws's legacy branches (restoring keys) go onto:
 * recover-<ws>, else recover-<ws>-<n>, the first that is neither a name
 * the steps before create (known less the VCS's marks) nor a bookmark
 * other than an earlier recovery's.  Caller frees. */
static char *recovery_bookmark(rctx *c, const char *ws, const json_t *keys, const json_t *known, const json_t *marks)
{
	for (int n = 1;; n++) {
		char *name = n == 1 ? tt_asprintf("recover-%s", ws) : tt_asprintf("recover-%s-%d", ws, n);
		bool other = false;
		size_t k;
		json_t *x;
		json_array_foreach(known, k, x)
			if (strcmp(json_string_value(x), name) == 0 && !json_object_get(marks, name))
				other = true;
		const char *head = json_string_value(json_object_get(marks, name));
		if (!other && (!head || earlier_recovery(c, name, head, keys)))
			return name;
		free(name);
	}
}

/* ws -> the bookmark its legacy branches go onto, for every workspace
 * restored (new reference). */
static json_t *recovery_bookmarks(rctx *c, const json_t *restored, const json_t *known, const json_t *marks)
{
	json_t *chosen = json_object();
	json_t *wss = sorted_keys(restored);
	size_t i;
	json_t *w;
	json_array_foreach(wss, i, w) {
		const char *ws = json_string_value(w);
		json_t *keys = sorted_keys(json_object_get(restored, ws));
		char *name = recovery_bookmark(c, ws, keys, known, marks);
		json_object_set_new(chosen, ws, json_string(name));
		free(name);
		json_decref(keys);
	}
	json_decref(wss);
	return chosen;
}

/* Two groups by their key lists (lexicographically), then their refs. */
static int group_cmp(const json_t *ga, const json_t *gb)
{
	json_t *ka = json_object_get(ga, "keys"), *kb = json_object_get(gb, "keys");
	int cmp = 0;
	for (size_t z = 0; !cmp && (z < json_array_size(ka) || z < json_array_size(kb)); z++) {
		if (z >= json_array_size(ka))
			cmp = -1;
		else if (z >= json_array_size(kb))
			cmp = 1;
		else
			cmp = strcmp(json_string_value(json_array_get(ka, z)), json_string_value(json_array_get(kb, z)));
	}
	if (!cmp)
		cmp = strcmp(json_string_value(json_object_get(ga, "ref")), json_string_value(json_object_get(gb, "ref")));
	return cmp;
}

/* The groups' order sorted by (keys, ref); stable. */
static void sort_groups(const json_t *groups, json_t *order)
{
	size_t ng = json_array_size(order);
	for (size_t a = 1; a < ng; a++)
		for (size_t b2 = a; b2 > 0; b2--) {
			json_t *ga = json_object_get(groups, json_string_value(json_array_get(order, b2 - 1)));
			json_t *gb = json_object_get(groups, json_string_value(json_array_get(order, b2)));
			if (group_cmp(ga, gb) <= 0)
				break;
			json_t *t = json_incref(json_array_get(order, b2));
			json_array_set(order, b2, json_array_get(order, b2 - 1));
			json_array_set_new(order, b2 - 1, t);
		}
}

/* One group's step: onto bookmark bm (made here the first time, off the
 * trunk, unless the VCS has it: marks), restore its ref for its keys and
 * commit. */
static void legacy_step(rctx *c, const json_t *g, const char *bm, json_t *made, const json_t *marks)
{
	const char *ws = json_string_value(json_object_get(g, "ws"));
	const char *ref = json_string_value(json_object_get(g, "ref"));
	json_t *keys = json_object_get(g, "keys");
	tt_buf cmd = TT_BUF_INIT, note = TT_BUF_INIT, msg = TT_BUF_INIT;
	if (json_object_get(made, bm) || json_object_get(marks, bm)) {
		tt_buf_puts(&cmd, "tether new -- ");
		q(&cmd, bm);
	} else {
		tt_buf_puts(&cmd, "tether new -b ");
		q(&cmd, bm);
		tt_buf_puts(&cmd, " -- ");
		q(&cmd, c->trunk);
	}
	json_object_set(made, bm, json_true());
	tt_buf_puts(&cmd, " && tether restore --at ");
	q(&cmd, ref);
	tt_buf_puts(&cmd, " --");
	size_t k;
	json_t *x;
	json_array_foreach(keys, k, x) {
		tt_buf_putc(&cmd, ' ');
		q(&cmd, json_string_value(x));
	}
	tt_buf_printf(&msg, RECOVER_COMMIT "%s", ref);
	tt_buf_puts(&cmd, " && tether commit -m ");
	q(&cmd, msg.ptr);
	tt_buf_printf(&note,
		      "%s is a legacy branch of workspace %s (named before bookmarks) and may hold writes no "
		      "commit pins: this copies it onto bookmark %s and pins it", ref, ws, bm);
	if (json_array_size(keys) > 1) {
		tt_buf_puts(&note, "; ");
		join_strings(&note, keys, ", ");
		tt_buf_puts(&note, " share its branch space, so they are restored together");
	}
	char *plain = tt_asprintf("recover-%s", ws);
	if (plain && strcmp(bm, plain) != 0)
		tt_buf_printf(&note, "; recover-%s is taken by a bookmark that is not an earlier recovery's, so "
				     "it is left as it is", ws);
	free(plain);
	step(c, cmd.ptr, note.ptr);
	tt_buf_release(&cmd);
	tt_buf_release(&note);
	tt_buf_release(&msg);
}

/* The legacy per-workspace branches: a `restore --at` each, onto a
 * bookmark recover-<workspace> off the trunk, naming every object of a
 * branch space together. */
static void legacy_steps(rctx *c, const char *target, const json_t *known)
{
	legacy_groups lg = { json_object(), json_array(), json_object() };
	json_t *marks = NULL, *chosen, *made, *gkname;
	tt_error err = TT_ERROR_INIT;
	size_t i;
	for (i = 0; i < c->n; i++) {
		rec_obj *o = &c->objs[i];
		json_t *legacy = json_object_get(json_object_get(o->ns, target), "legacy");
		if (!json_object_size(legacy))
			continue;
		char *scope = legacy_scope(c, o);
		group_legacy(&lg, o, scope, legacy);
		free(scope);
	}
	if (!json_array_size(lg.order))
		goto done;
	if (tt_vcs_bookmarks(c->repo->vcs, &marks, &err) < 0) {
		tt_error_clear(&err);
		marks = json_object();
	}
	chosen = recovery_bookmarks(c, lg.restored, known, marks);
	sort_groups(lg.groups, lg.order);
	made = json_object();
	json_array_foreach(lg.order, i, gkname) {
		json_t *g = json_object_get(lg.groups, json_string_value(gkname));
		const char *ws = json_string_value(json_object_get(g, "ws"));
		legacy_step(c, g, json_string_value(json_object_get(chosen, ws)), made, marks);
	}
	json_decref(made);
	json_decref(chosen);
done:
	json_decref(marks);
	json_decref(lg.groups);
	json_decref(lg.order);
	json_decref(lg.restored);
}

static const char adopts[] = "takes its branches as they are, uncommitted writes included, and pins them";

/* The command that commits on the trunk (switching to it first from
 * elsewhere): each object pinned afresh. */
static void recommit_command(rctx *c, tt_buf *recommit)
{
	tt_buf m = TT_BUF_INIT;
	const char *bookmark = c->repo->ws.bookmark;
	if (!bookmark || strcmp(bookmark, c->trunk) != 0) {
		tt_buf_puts(recommit, "tether new -- ");
		q(recommit, c->trunk);
		tt_buf_puts(recommit, " && ");
	}
	tt_buf_printf(&m, "Recover %s", c->trunk);
	tt_buf_puts(recommit, "tether commit -m ");
	q(recommit, m.ptr);
	tt_buf_release(&m);
}

/* How another dataset's refs are taken back once this one's id is
 * pinned: in a fresh repository under that id. */
static void elsewhere_text(rctx *c, const json_t *others, tt_buf *elsewhere)
{
	const char *named = json_array_size(others) == 1 ? json_string_value(json_array_get(others, 0)) : "ID";
	tt_buf_printf(elsewhere,
		      "this dataset has pinned under %s already, so its id can no longer change; take them back in a "
		      "fresh repository: `tether init --dataset-id ", c->current);
	q(elsewhere, named);
	tt_buf_puts(elsewhere, "`, `tether add` the objects, then `tether recover` there");
}

/* Whose refs to take back: *target is this dataset's id when the stores
 * hold its refs, else the only other id's (suggested as this one's), else
 * NULL (the user chooses among others); the notes that say so.  False:
 * nothing is taken back here (the id is pinned, the refs are another's). */
static bool take_back_target(rctx *c, const json_t *others, const char *elsewhere, const char **target)
{
	tt_buf note = TT_BUF_INIT;
	bool go = true;
	*target = json_object_get(c->found, c->current) ? c->current : NULL;
	if (!*target && c->pinned) {
		tt_buf_puts(&note, "the refs are ");
		join_strings(&note, others, ", ");
		tt_buf_printf(&note, "'s, and %s", elsewhere);
		step(c, NULL, note.ptr);
		go = false;
	} else if (!*target && json_array_size(others) == 1) {
		*target = json_string_value(json_array_get(others, 0));
		c->suggested = tt_strdup(*target);
		tt_buf_printf(&note,
			      "set this dataset's id in tether.toml (nothing is pinned under %s yet):\n[dataset]\nid = "
			      "\"%s\"", c->current, *target);
		step(c, NULL, note.ptr);
	} else if (!*target) {
		tt_buf_printf(&note,
			      "the stores hold refs of %zu datasets; set the id that was this one's in tether.toml "
			      "(nothing is pinned under %s yet), one of these under [dataset]:",
			      json_array_size(others), c->current);
		size_t i;
		json_t *s;
		json_array_foreach(others, i, s)
			tt_buf_printf(&note, "\nid = \"%s\"", json_string_value(s));
		step(c, NULL, note.ptr);
	}
	tt_buf_release(&note);
	return go;
}

/* The VCS's bookmarks (known) by their slugs: slug -> [names]. */
static json_t *bookmarks_by_slug(const json_t *known)
{
	tt_error err = TT_ERROR_INIT;
	json_t *by_slug = json_object();
	size_t i;
	json_t *s;
	json_array_foreach(known, i, s) {
		char *slug = NULL;
		if (tt_bookmark_slug(&slug, json_string_value(s), &err) < 0) {
			tt_error_clear(&err);
			continue;
		}
		json_t *arr = json_object_get(by_slug, slug);
		if (!arr) {
			arr = json_array();
			json_object_set_new(by_slug, slug, arr);
		}
		json_array_append(arr, s);
		free(slug);
	}
	return by_slug;
}

/* Whether a slug ends in the digest an escaped bookmark name gets. */
static bool escaped_slug(const char *slug)
{
	size_t sl = strlen(slug);
	bool escaped = sl >= 7 && slug[sl - 7] == '-';
	for (size_t z = sl >= 6 ? sl - 6 : 0; escaped && z < sl; z++)
		escaped = (slug[z] >= '0' && slug[z] <= '9') || (slug[z] >= 'a' && slug[z] <= 'f');
	return escaped;
}

/* No bookmark has slug s's name: it is made afresh off the trunk, adopting
 * branch (and named from here on: known). */
static void fresh_bookmark_step(rctx *c, json_t *s, const char *branch, json_t *known)
{
	const char *slug = json_string_value(s);
	tt_buf cmd = TT_BUF_INIT, n2 = TT_BUF_INIT, msg = TT_BUF_INIT;
	if (escaped_slug(slug))
		tt_buf_printf(&n2,
			      "%s names bookmark %s, which looks escaped (a name with `/`, `.` or spaces gets "
			      "a digest of the original appended); the original name cannot be recovered "
			      "from the branch, and this takes it under %s: it %s", branch, slug, slug, adopts);
	else
		tt_buf_printf(&n2, "bookmark %s, made afresh off the trunk: %s", slug, adopts);
	json_array_append(known, s);
	tt_buf_puts(&cmd, "tether new -b ");
	q(&cmd, slug);
	tt_buf_puts(&cmd, " --adopt -- ");
	q(&cmd, c->trunk);
	tt_buf_printf(&msg, "Recover %s", slug);
	tt_buf_puts(&cmd, " && tether commit -m ");
	q(&cmd, msg.ptr);
	step(c, cmd.ptr, n2.ptr);
	tt_buf_release(&cmd);
	tt_buf_release(&n2);
	tt_buf_release(&msg);
}

/* The step for the working branches of bookmark slug s (branches, by
 * generation): a note for the trunk's, adopt the one bookmark of that
 * slug (names), a note when several share it, else make it afresh. */
static void bookmark_step(rctx *c, json_t *s, const json_t *branches, const json_t *names, const char *trunk_slug,
			  json_t *known)
{
	const char *slug = json_string_value(s);
	const char *branch = json_string_value(json_array_get(branches, json_array_size(branches) - 1));
	tt_buf cmd = TT_BUF_INIT, n2 = TT_BUF_INIT, msg = TT_BUF_INIT;
	if (trunk_slug && strcmp(slug, trunk_slug) == 0) {
		tt_buf_printf(&n2,
			      "%s is named for the trunk, whose working refs are the upstream branches: on a "
			      "bookmark, `tether restore --at ", branch);
		q(&n2, branch);
		tt_buf_puts(&n2, " -- KEY` copies it");
		step(c, NULL, n2.ptr);
	} else if (json_array_size(names) == 1) {
		const char *name = json_string_value(json_array_get(names, 0));
		tt_buf_puts(&cmd, "tether new --adopt -- ");
		q(&cmd, name);
		tt_buf_printf(&msg, "Recover %s", name);
		tt_buf_puts(&cmd, " && tether commit -m ");
		q(&cmd, msg.ptr);
		tt_buf_printf(&n2, "bookmark %s: %s", name, adopts);
		step(c, cmd.ptr, n2.ptr);
	} else if (json_array_size(names) > 1) {
		tt_buf_printf(&n2, "%s is the branch of whichever of the bookmarks ", branch);
		join_strings(&n2, names, ", ");
		tt_buf_puts(&n2, " it was (their names escape alike): `tether new --adopt -- NAME` with that one, "
				 "then `tether commit`");
		step(c, NULL, n2.ptr);
	} else {
		fresh_bookmark_step(c, s, branch, known);
	}
	tt_buf_release(&cmd);
	tt_buf_release(&n2);
	tt_buf_release(&msg);
}

/* A step per bookmark whose working branches target's refs hold, in slug
 * order; known (the VCS's bookmarks) gains the ones made afresh. */
static void bookmark_steps(rctx *c, const char *target, json_t *known)
{
	tt_error err = TT_ERROR_INIT;
	json_t *by_slug = bookmarks_by_slug(known);
	char *trunk_slug = NULL;
	if (tt_bookmark_slug(&trunk_slug, c->trunk, &err) < 0)
		tt_error_clear(&err);
	json_t *tb = json_object_get(json_object_get(c->found, target), "bookmarks");
	json_t *slugs = sorted_keys(tb);
	size_t i;
	json_t *s;
	json_array_foreach(slugs, i, s)
		bookmark_step(c, s, json_object_get(tb, json_string_value(s)),
			      json_object_get(by_slug, json_string_value(s)), trunk_slug, known);
	json_decref(slugs);
	json_decref(by_slug);
	free(trunk_slug);
}

/* target is this dataset: the other datasets' refs are left alone, with a
 * note on what to do if they were this one's. */
static void others_left_note(rctx *c, const json_t *others, const char *elsewhere)
{
	tt_buf note = TT_BUF_INIT;
	tt_buf_puts(&note, "the refs of ");
	join_strings(&note, others, ", ");
	tt_buf_printf(&note, " are %s and are left as they are; if they were this one's, %s",
		      json_array_size(others) == 1 ? "another dataset's" : "other datasets'",
		      c->pinned ? elsewhere : "set its id in tether.toml before anything is pinned");
	step(c, NULL, note.ptr);
	tt_buf_release(&note);
}

static void take_back_steps(rctx *c)
{
	tt_buf recommit = TT_BUF_INIT, note = TT_BUF_INIT, elsewhere = TT_BUF_INIT;
	json_t *others = other_ids(c), *known = NULL, *marks = NULL;
	tt_error err = TT_ERROR_INIT;
	const char *target;
	recommit_command(c, &recommit);
	if (!json_object_size(c->found)) {
		if (!any_unrecognized_or_missing(c)) {
			tt_buf_printf(&note,
				      "no tether refs in these stores: nothing to take back; a commit on the trunk (%s) "
				      "pins the objects afresh", c->trunk);
			step(c, recommit.ptr, note.ptr);
		}
		goto done;
	}
	elsewhere_text(c, others, &elsewhere);
	if (!take_back_target(c, others, elsewhere.ptr, &target))
		goto done;
	tt_buf_printf(&note, "pins each object's upstream branch on the trunk (%s); a state pinned before reuses its tag",
		      c->trunk);
	step(c, recommit.ptr, note.ptr);
	if (!target) {
		tt_buf_reset(&note);
		tt_buf_puts(&note, "with the id set, the steps that take back its bookmarks: `tether new -b BOOKMARK "
				   "--adopt -- ");
		q(&note, c->trunk);
		tt_buf_puts(&note, "`, then `tether commit`, for each");
		step(c, "tether recover", note.ptr);
		goto done;
	}
	if (tt_vcs_bookmarks(c->repo->vcs, &marks, &err) < 0) {
		tt_error_clear(&err);
		marks = json_object();
	}
	known = sorted_keys(marks); /* list(vcs.bookmarks()) - order only matters for membership */
	bookmark_steps(c, target, known);
	legacy_steps(c, target, known);
	if (json_array_size(others) && strcmp(target, c->current) == 0)
		others_left_note(c, others, elsewhere.ptr);
done:
	json_decref(others);
	json_decref(known);
	json_decref(marks);
	tt_buf_release(&recommit);
	tt_buf_release(&note);
	tt_buf_release(&elsewhere);
}

static void make_steps(rctx *c)
{
	tt_buf note = TT_BUF_INIT, cmd = TT_BUF_INIT;
	json_t *failed = json_array(), *missing = json_array(), *unrec = json_object();
	for (size_t i = 0; i < c->n; i++) {
		if (c->objs[i].error)
			json_array_append_new(failed, json_string(c->objs[i].m->key));
		if (c->objs[i].missing_pin)
			json_array_append_new(missing, json_string(c->objs[i].m->key));
		size_t k;
		json_t *r;
		json_array_foreach(c->objs[i].unrecognized, k, r)
			json_object_set(unrec, json_string_value(r), json_true());
	}
	if (json_array_size(failed)) {
		tt_buf_puts(&note, "could not list the refs of ");
		join_strings(&note, failed, ", ");
		tt_buf_puts(&note, ": fix access to their stores and run `tether recover` again, or leave them out "
				   "(`tether recover KEY...`); nothing is suggested from a partial listing");
		step(c, NULL, note.ptr);
		goto done;
	}
	if (json_array_size(missing)) {
		tt_buf_puts(&cmd, "tether repair --");
		size_t i;
		json_t *k;
		json_array_foreach(missing, i, k) {
			tt_buf_putc(&cmd, ' ');
			q(&cmd, json_string_value(k));
		}
		tt_buf_puts(&note, "the manifests of ");
		join_strings(&note, missing, ", ");
		tt_buf_puts(&note, " name pins their stores lack; repair recreates them from the recorded states -- a "
				   "`tether commit` does not, the states being unchanged");
		step(c, cmd.ptr, note.ptr);
	}
	if (c->scoped)
		scoped_steps(c);
	else
		take_back_steps(c);
	if (json_object_size(unrec)) {
		json_t *list = sorted_keys(unrec);
		tt_buf_reset(&note);
		join_strings(&note, list, ", ");
		tt_buf_puts(&note, " look like tether's but carry no dataset id it can read, so no step here takes them "
				   "back: look at them before pinning afresh; on a bookmark, `tether restore --at REF -- "
				   "KEY` copies a branch");
		step(c, NULL, note.ptr);
		json_decref(list);
	}
	if (c->scoped)
		step(c, "tether recover",
		     "the dataset id applies to every object, and a commit pins every object under it, after which the "
		     "id can no longer change: the steps that take these refs back come from listing every store");
done:
	json_decref(failed);
	json_decref(missing);
	json_decref(unrec);
	tt_buf_release(&note);
	tt_buf_release(&cmd);
}

int tt_repo_recover(tt_repo *repo, const char *const *selectors, size_t n, bool scoped, json_t **out,
		    tt_error *err)
{
	json_t *keys = NULL, *objects = NULL;
	rctx c = { .repo = repo, .current = repo->config.dataset_id, .trunk = tt_config_trunk(&repo->config),
		   .scoped = scoped };
	int rc;
	*out = NULL;
	if ((rc = tt_engine_select(repo, selectors, n, &keys, err)) < 0)
		return rc;
	c.n = json_array_size(keys);
	c.objs = tt_calloc(c.n ? c.n : 1, sizeof *c.objs);
	c.found = json_object();
	c.steps = json_array();
	if (!c.objs || !c.found || !c.steps) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < c.n; i++) {
		c.objs[i].repo = repo;
		c.objs[i].m = tt_manifests_find(&repo->objects, json_string_value(json_array_get(keys, i)));
	}
	tt_engine_prepare(repo);
	if ((rc = tt_engine_fanout(c.n, list_one, c.objs, err)) < 0)
		goto done;
	objects = json_array();
	for (size_t i = 0; i < c.n; i++) {
		rec_obj *o = &c.objs[i];
		json_t *dss = json_array(), *ids = sorted_keys(o->ns);
		size_t k;
		json_t *ds;
		json_array_foreach(ids, k, ds) {
			const char *d = json_string_value(ds);
			json_t *refs = json_object_get(o->ns, d);
			json_array_append_new(dss, refs_dict(d, refs, c.current));
			json_t *merged = json_object_get(c.found, d);
			if (!merged) {
				merged = json_pack("{s:{},s:{},s:{}}", "pins", "bookmarks", "legacy");
				json_object_set_new(c.found, d, merged);
			}
			merge_refs(merged, refs);
		}
		json_decref(ids);
		json_array_append_new(objects,
				      json_pack("{s:s,s:s,s:b,s:s?,s:s?,s:O,s:o}", "key", o->m->key, "kind", o->m->kind,
						"holds_refs", o->holds_refs, "error", o->error, "missing_pin", o->missing_pin,
						"unrecognized", o->unrecognized ? o->unrecognized : json_array(),
						"datasets", dss));
	}
	for (size_t i = 0; i < repo->objects.n; i++)
		if (repo->objects.items[i].pin_id)
			c.pinned = true;
	json_t *mine = json_object_get(c.found, c.current);
	if (mine && json_object_size(json_object_get(mine, "pins")))
		c.pinned = true;
	make_steps(&c);
	json_t *datasets = json_array(), *ids = sorted_keys(c.found);
	size_t k;
	json_t *ds;
	json_array_foreach(ids, k, ds)
		json_array_append_new(datasets, refs_dict(json_string_value(ds),
							  json_object_get(c.found, json_string_value(ds)), c.current));
	json_decref(ids);
	*out = json_pack("{s:s,s:s,s:b,s:s?,s:b,s:O,s:o,s:O}", "dataset_id", c.current, "trunk", c.trunk, "pinned",
			 c.pinned, "suggested_dataset_id", c.suggested, "scoped", c.scoped, "objects", objects,
			 "datasets", datasets, "steps", c.steps);
	if (!*out)
		rc = tt_error_oom(err);
done:
	for (size_t i = 0; c.objs && i < c.n; i++) {
		free(c.objs[i].error);
		free(c.objs[i].missing_pin);
		json_decref(c.objs[i].unrecognized);
		json_decref(c.objs[i].ns);
	}
	free(c.objs);
	free(c.suggested);
	json_decref(c.found);
	json_decref(c.steps);
	json_decref(objects);
	json_decref(keys);
	return rc;
}
