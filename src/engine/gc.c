/*
 * engine/gc.c - `gc`: release what nothing references.
 *
 * The plan (read-only, but for seeding the clone's pinned index the first
 * time it is needed) decides, as tether-vcs decides but more cautiously
 * where other clones are concerned:
 *   - unpin: a pin of this dataset's namespace that no manifest anywhere in
 *     visible history (every ref, remote-tracking ones included), in this or
 *     any other live checkout's working tree, or in an operation still
 *     running or interrupted in any checkout names - and that this clone
 *     may release.  Pin ids depend only on the dataset and the state, and
 *     stores are shared, so another clone that commits the same state holds
 *     the same pin, and gc cannot see that clone's unpushed commits.  So,
 *     without --release-foreign, only a pin this clone created
 *     (tether-pinned.jsonl) in a clone with no remote, and that no commit
 *     of this repository ever named, is released; a pin it did not create
 *     is a keep-pin (tether-vcs's caution), and so is one it created while
 *     the dataset is shared through a remote (kept "shared"), and one a
 *     commit here named before it was rewritten away, since a clone made
 *     from this repository leaves no trace in it (kept "committed").
 *     With --release-foreign both are released, but only once every
 *     remote's branches and tags are fetched: a remote that has commits
 *     this clone lacks, or cannot be listed, keeps them all (kept
 *     "unfetched"), and never a pin that a commit a remote-tracking ref
 *     once held names (pushed or fetched, then rewritten away: kept
 *     "published"), since clones that fetched it may still name it;
 *   - forget-working-ref: this workspace's refs of removed objects;
 *   - with --prune-bookmarks, delete-branch / keep-branch for stray
 *     tether.ws.* branches, judged by their heads;
 *   - delete-listing: listings no manifest names;
 *   - with --delete-stores, the store step of gc_stores.c.
 * Applying it re-checks the preconditions (workspace id, history digest,
 * head, manifest hash), journals the operation, and attempts every action,
 * collecting failures instead of stopping at the first.
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

static bool kind_gone(const char *kind)
{
	return tt_kind_find(kind) == NULL;
}

/* --- small set helpers (a JSON object used as a set) ------------------------ */

static bool set_has(const json_t *set, const char *k)
{
	return k && json_object_get(set, k) != NULL;
}

static int set_add(json_t *set, const char *k)
{
	return json_object_set_new(set, k, json_true());
}

/* Append v to obj[k] (a list, made when absent). */
static int map_append(json_t *obj, const char *k, json_t *v)
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
static bool list_has_value(const json_t *list, const json_t *v)
{
	size_t i;
	json_t *x;
	json_array_foreach((json_t *)list, i, x)
		if (tt_pyv_eq(x, v))
			return true;
	return false;
}

/* Sort an array of strings in place (by code point, as Python's sorted()). */
static int sort_strings(json_t *arr)
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

/* repo->warnings, each text once (as Python's warnings registry shows it). */
static void warn(tt_repo *repo, char *msg)
{
	if (!msg)
		return;
	for (size_t i = 0; i < repo->nwarnings; i++) {
		if (strcmp(repo->warnings[i], msg) == 0) {
			free(msg);
			return;
		}
	}
	if (TT_ARRAY_GROW(repo->warnings, repo->warnings_alloc, repo->nwarnings + 1) < 0) {
		free(msg);
		return;
	}
	repo->warnings[repo->nwarnings++] = msg;
}

/* The dataset root relative to the VCS root ("" when they are one). */
static const char *dataset_rel(const tt_repo *repo)
{
	size_t n = strlen(repo->vcs->root);
	if (strncmp(repo->root, repo->vcs->root, n) == 0 && repo->root[n] == '/')
		return repo->root + n + 1;
	return "";
}

static char *rel_join(const char *rel, const char *tail)
{
	return *rel ? tt_asprintf("%s/%s", rel, tail) : tt_strdup(tail);
}

/* kind + "|" + the backend's ref namespace (default: canon(identity)). */
static int namespace_key(tt_backend *b, const char *kind, const json_t *loc, char **out, tt_error *err)
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

/* --- live checkouts ------------------------------------------------------------ */

typedef struct checkout {
	char *vcs_root;   /* as the VCS lists it */
	char *dataset;    /* its dataset root */
	bool here;        /* this checkout */
	bool ws_ok;       /* ws read (and its own file) */
	bool ops_own;     /* its ops.jsonl may be read */
	tt_workspace ws;
} checkout;

typedef struct checkouts {
	checkout *items;
	size_t n, alloc;
} checkouts;

static void checkouts_release(checkouts *c)
{
	for (size_t i = 0; i < c->n; i++) {
		free(c->items[i].vcs_root);
		free(c->items[i].dataset);
		if (c->items[i].ws_ok)
			tt_workspace_release(&c->items[i].ws);
	}
	free(c->items);
	memset(c, 0, sizeof *c);
}

/*
 * Whether .tether/<name> of another checkout is that checkout's own record:
 * a copy its index tracks came with a clone (or was committed by hand), and
 * could claim pins as this clone's; it is skipped with a warning.
 */
static bool own_file(tt_repo *repo, const checkout *c, const char *name)
{
	struct stat st;
	if (c->here)
		return true;
	char *sub = tt_asprintf(TT_DIR "/%s", name);
	char *path = sub ? tt_path_join(c->dataset, sub) : NULL;
	char *relpath = sub ? rel_join(dataset_rel(repo), sub) : NULL;
	bool own = true;
	if (!path || !relpath || stat(path, &st) != 0)
		goto done;
	const char *args[] = { "--literal-pathspecs", "ls-files", "-z", "--", relpath, NULL };
	tt_buf out = TT_BUF_INIT;
	tt_error e = TT_ERROR_INIT;
	char *why = NULL;
	if (tt_git_run(repo->vcs->exe, c->vcs_root, args, &out, false, NULL, &e) < 0) {
		own = false;
		why = tt_asprintf("cannot tell whether %s tracks it there (%s)", tt_vcs_kind(repo->vcs),
				  tt_error_text(&e));
	} else {
		for (size_t off = 0; off < out.len; off += strlen(out.ptr + off) + 1)
			if (strcmp(out.ptr + off, relpath) == 0)
				own = false;
		if (!own)
			why = tt_asprintf("%s tracks it there", tt_vcs_kind(repo->vcs));
	}
	if (!own)
		warn(repo, tt_asprintf("skipping %s of checkout %s: %s, so it is not that checkout's own "
				       "record (a tracked copy comes with every clone); untrack it in that "
				       "checkout to count it again", relpath, c->vcs_root, why ? why : ""));
	free(why);
	tt_buf_release(&out);
	tt_error_clear(&e);
done:
	free(sub);
	free(path);
	free(relpath);
	return own;
}

/* Every live checkout of this dataset that has run tether (this one too). */
static int live_checkouts(tt_repo *repo, checkouts *out, tt_error *err)
{
	json_t *roots = NULL;
	const char *rel = dataset_rel(repo);
	int rc;
	memset(out, 0, sizeof *out);
	if ((rc = tt_vcs_workspace_roots(repo->vcs, &roots, err)) < 0)
		return rc;
	size_t i;
	json_t *r;
	json_array_foreach(roots, i, r) {
		const char *root = json_string_value(r);
		char *dataset = *rel ? tt_path_join(root, rel) : tt_strdup(root);
		char *wsfile = dataset ? tt_path_join(dataset, TT_DIR "/" TT_WORKSPACE_FILENAME) : NULL;
		if (!dataset || !wsfile) {
			free(dataset);
			free(wsfile);
			rc = tt_error_oom(err);
			goto done;
		}
		bool present = tt_is_file(wsfile);
		free(wsfile);
		if (!present || TT_ARRAY_GROW(out->items, out->alloc, out->n + 1) < 0) {
			free(dataset);
			if (present) {
				rc = tt_error_oom(err);
				goto done;
			}
			continue;
		}
		checkout *c = &out->items[out->n++];
		memset(c, 0, sizeof *c);
		c->vcs_root = tt_strdup(root);
		c->dataset = dataset;
		char *real = tt_realpath(dataset);
		c->here = real && strcmp(real, repo->root) == 0;
		free(real);
		if (!c->vcs_root) {
			rc = tt_error_oom(err);
			goto done;
		}
		if (own_file(repo, c, TT_WORKSPACE_FILENAME)) {
			int exists = 0;
			tt_error ignored = TT_ERROR_INIT;
			/* One that cannot be read (mid-write, another format) is skipped. */
			c->ws_ok = tt_workspace_load(&c->ws, dataset, &exists, &ignored) == 0;
			if (c->ws_ok && !exists) {
				tt_workspace_release(&c->ws);
				c->ws_ok = false;
			}
			tt_error_clear(&ignored);
		}
		c->ops_own = own_file(repo, c, TT_OPS_FILENAME);
	}
done:
	json_decref(roots);
	if (rc < 0)
		checkouts_release(out);
	return rc;
}

/* The journals of every live checkout whose own file it is. */
typedef struct journals {
	tt_oplog *logs;
	size_t n;
} journals;

static void journals_release(journals *j)
{
	for (size_t i = 0; i < j->n; i++)
		tt_oplog_free(&j->logs[i]);
	free(j->logs);
	memset(j, 0, sizeof *j);
}

static int read_journals(const checkouts *co, journals *out, tt_error *err)
{
	memset(out, 0, sizeof *out);
	if (!(out->logs = tt_calloc(co->n ? co->n : 1, sizeof *out->logs)))
		return tt_error_oom(err);
	for (size_t i = 0; i < co->n; i++) {
		if (!co->items[i].ops_own)
			continue;
		int rc = tt_oplog_read(co->items[i].dataset, &out->logs[out->n], err);
		if (rc < 0) {
			journals_release(out);
			return rc;
		}
		out->n++;
	}
	return 0;
}

/* str(record.get("ref") or record.get("target") or "") as a pin id, or false. */
static bool progress_pin(const json_t *record, char out[TT_PIN_ID_MAX])
{
	json_t *v = json_object_get(record, "ref");
	if (!tt_pyv_truthy(v))
		v = json_object_get(record, "target");
	if (!tt_pyv_truthy(v))
		return false;
	tt_buf s = TT_BUF_INIT;
	tt_pyv_str(&s, v);
	bool ok = !s.failed && tt_pin_id_of_ref(s.ptr, out);
	tt_buf_release(&s);
	return ok;
}

static bool op_is(const json_t *a, const char *x, const char *y)
{
	const char *op = json_string_value(json_object_get(a, "op"));
	return op && (strcmp(op, x) == 0 || (y && strcmp(op, y) == 0));
}

/* Pins operations still running - or interrupted - set out to create. */
static int inflight_pins(const journals *j, json_t *ids, tt_error *err)
{
	for (size_t l = 0; l < j->n; l++) {
		for (size_t e = 0; e < j->logs[l].count; e++) {
			const tt_op_entry *op = &j->logs[l].entries[e];
			size_t i;
			json_t *a;
			if (!tt_op_incomplete(op))
				continue;
			json_t *actions = json_is_object(op->plan) ? json_object_get(op->plan, "actions") : NULL;
			json_array_foreach(actions, i, a) {
				json_t *params = json_object_get(a, "params");
				json_t *pid = json_is_object(params) ? json_object_get(params, "pin_id") : NULL;
				if (op_is(a, "pin", "repin") && tt_pyv_truthy(pid)) {
					tt_buf s = TT_BUF_INIT;
					tt_pyv_str(&s, pid);
					int rc = s.failed ? -1 : set_add(ids, s.ptr);
					tt_buf_release(&s);
					if (rc < 0)
						return tt_error_oom(err);
				}
			}
			json_array_foreach(op->progress, i, a) {
				char pid[TT_PIN_ID_MAX];
				const char *act = json_string_value(json_object_get(a, "action"));
				if (act && (strcmp(act, "pin") == 0 || strcmp(act, "repin") == 0) &&
				    progress_pin(a, pid) && set_add(ids, pid) < 0)
					return tt_error_oom(err);
			}
		}
	}
	return 0;
}

typedef struct op_ref {
	const tt_op_entry *op;
	size_t seq;
} op_ref;

static int cmp_op_at(const void *x, const void *y)
{
	const op_ref *a = x, *b = y;
	int c = strcmp(a->op->at ? a->op->at : "", b->op->at ? b->op->at : "");
	return c ? c : (a->seq > b->seq) - (a->seq < b->seq);
}

/*
 * The first time the pinned index is needed, seed it from every live
 * checkout's journal, oldest entry first: a pin a progress record says was
 * created is added, one a gc released taken off.  The file is made even
 * when there is nothing to record: its presence says it was seeded.
 */
static int seed_pinned(tt_repo *repo, const journals *j, tt_error *err)
{
	char *path = tt_path_join(repo->vcs->shared_dir, TT_PINNED_FILENAME);
	op_ref *ops = NULL;
	json_t *ours = NULL;
	size_t n = 0, total = 0;
	int rc = 0;
	if (!path)
		return tt_error_oom(err);
	if (tt_is_file(path))
		goto done;
	for (size_t l = 0; l < j->n; l++)
		total += j->logs[l].count;
	if (!(ops = tt_calloc(total ? total : 1, sizeof *ops)) || !(ours = json_object())) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t l = 0; l < j->n; l++)
		for (size_t e = 0; e < j->logs[l].count; e++, n++)
			ops[n] = (op_ref){ &j->logs[l].entries[e], n };
	qsort(ops, n, sizeof *ops, cmp_op_at);
	for (size_t k = 0; k < n; k++) {
		const tt_op_entry *op = ops[k].op;
		json_t *kinds = json_object(), *actions = json_is_object(op->plan)
			? json_object_get(op->plan, "actions") : NULL;
		size_t i;
		json_t *a;
		if (!kinds) {
			rc = tt_error_oom(err);
			goto done;
		}
		if (tt_pyv_truthy(json_object_get(op->result, "rolled_back"))) {
			json_decref(kinds);
			continue;
		}
		json_array_foreach(actions, i, a) {
			if (!op_is(a, "pin", "repin"))
				continue;
			tt_buf k1 = TT_BUF_INIT, k2 = TT_BUF_INIT;
			json_t *key = json_object_get(a, "key"), *kind = json_object_get(a, "kind");
			if (key)
				tt_pyv_str(&k1, key);
			if (kind)
				tt_pyv_str(&k2, kind);
			if (!k1.failed && !k2.failed)
				json_object_set_new(kinds, k1.ptr, json_string(k2.ptr));
			tt_buf_release(&k1);
			tt_buf_release(&k2);
		}
		/* An operation that reached its VCS commit committed what it pinned. */
		bool committed = false;
		json_array_foreach(op->progress, i, a) {
			const char *act = json_string_value(json_object_get(a, "action"));
			if (act && strcmp(act, "vcs-commit") == 0)
				committed = true;
		}
		json_array_foreach(op->progress, i, a) {
			const char *act = json_string_value(json_object_get(a, "action"));
			char pid[TT_PIN_ID_MAX];
			if (!act || !progress_pin(a, pid))
				continue;
			if (strcmp(act, "pin") == 0 ||
			    (strcmp(act, "repin") == 0 && tt_pyv_truthy(json_object_get(a, "created")))) {
				tt_buf key = TT_BUF_INIT;
				json_t *kv = json_object_get(a, "key");
				if (kv)
					tt_pyv_str(&key, kv);
				const char *kind = json_string_value(json_object_get(kinds, key.ptr));
				json_object_del(ours, pid);
				json_object_set_new(ours, pid, json_pack("[ssb]", kind ? kind : "", key.ptr,
									 committed));
				tt_buf_release(&key);
			} else if (strcmp(act, "unpin") == 0) {
				json_object_del(ours, pid);
			}
		}
		json_decref(kinds);
	}
	if ((rc = tt_append_fsync(path, "", 0, 0644, err)) < 0)
		goto done;
	const char *pid;
	json_t *v;
	json_object_foreach(ours, pid, v) {
		if ((rc = tt_index_note_pinned(repo->vcs->shared_dir, repo->config.dataset_id, pid,
					       json_string_value(json_array_get(v, 0)),
					       json_string_value(json_array_get(v, 1)), err)) < 0)
			goto done;
		if (json_is_true(json_array_get(v, 2))) {
			json_t *one = json_pack("[s]", pid);
			rc = one ? tt_index_note_committed(repo->vcs->shared_dir, repo->config.dataset_id, one, err)
				 : tt_error_oom(err);
			json_decref(one);
			if (rc < 0)
				goto done;
		}
	}
done:
	free(path);
	free(ops);
	json_decref(ours);
	return rc;
}

/* Pin ids this clone created and has not released (a set); into
 * *committed, those of them a commit of this clone named (a set). */
static json_t *known_pins(tt_repo *repo, json_t **committed)
{
	json_t *all = tt_index_read(repo->vcs->shared_dir, TT_PINNED_FILENAME), *out = json_object();
	size_t i;
	json_t *d;
	*committed = json_object();
	if (!all || !out || !*committed) {
		json_decref(all);
		json_decref(out);
		json_decref(*committed);
		*committed = NULL;
		return NULL;
	}
	json_array_foreach(all, i, d) {
		const char *ds = json_string_value(json_object_get(d, "dataset_id"));
		json_t *pid = json_object_get(d, "pin_id");
		if (ds && strcmp(ds, repo->config.dataset_id) == 0 && tt_pyv_truthy(pid)) {
			tt_buf s = TT_BUF_INIT;
			tt_pyv_str(&s, pid);
			if (!s.failed) {
				set_add(out, s.ptr);
				if (json_is_true(json_object_get(d, "committed")))
					set_add(*committed, s.ptr);
			}
			tt_buf_release(&s);
		}
	}
	json_decref(all);
	return out;
}

/* --- the plan ------------------------------------------------------------------ */

/* The history walk: each distinct manifest text parsed once. */
typedef struct gc_walk {
	tt_repo *repo;
	const char *reldir;
	tt_manifest_memo memo; /* history manifests, locators made absolute */
	size_t aside;        /* capacity of the per-manifest arrays below */
	char **ns;           /* per hist index: namespace key (pinned ones) */
	bool *seen;          /* per hist index: processed */
	size_t *order;       /* all_manifests: hist indices in first-seen order */
	size_t norder;
	size_t *pinned_order; /* history_manifests: first of each signature */
	size_t npinned;
	json_t *sigs;        /* signature set */
	json_t *referenced;  /* pin id set */
	json_t *skipped;     /* kind -> count */
	json_t *excluded;    /* drop's preview: commits walked as if gone (set), or NULL */
	tt_manifest_memo dropped; /* their manifests */
} gc_walk;

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
	    (rc = namespace_key(b, m->kind, m->locator, &w->ns[pi], err)) < 0) {
		tt_error_object(err, m->key, m->kind);
		return rc;
	}
	char *sig = tt_asprintf("%s:%s:%s", m->kind, m->pin_id, w->ns[pi]);
	if (!sig)
		return tt_error_oom(err);
	if (!set_has(w->sigs, sig)) {
		set_add(w->sigs, sig);
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
	if (w->excluded && set_has(w->excluded, commit)) {
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
		if (kind_gone(m->kind)) {
			/* Counted per commit, as tether-vcs counts them. */
			if (count_skipped(w->skipped, m->kind) < 0 ||
			    (m->pin_id && set_add(w->referenced, m->pin_id) < 0))
				return tt_error_oom(err);
			continue;
		}
		if (m->pin_id && set_add(w->referenced, m->pin_id) < 0)
			return tt_error_oom(err);
		if (!w->seen[pi]) {
			w->seen[pi] = true;
			if ((rc = first_sight(w, pi, err)) < 0)
				return rc;
		}
	}
	return 0;
}

/* Everything one plan needs to keep alive while it is built. */
typedef struct gc_state {
	tt_repo *repo;
	const tt_gc_opts *o;
	tt_plan *plan;
	checkouts co;
	journals journal;
	tt_manifest_set *others;      /* other live checkouts' working trees */
	size_t nothers;
	const tt_manifest **working;  /* available working-tree manifests */
	size_t nworking;
	gc_walk w;
	json_t *inflight;
	json_t *known;
	bool remotes_read, unfetched_read;
	json_t *published;            /* pin ids commits that left this clone name (NULL: not read) */
	json_t *committed;            /* known pin ids a commit of this clone named (the index's mark) */
	json_t *held;                 /* pin ids commits this repository held once name (NULL: not read) */
	char *held_unread;            /* why the reflogs could not be read (NULL: they were) */
	char *remotes;                /* "'origin', 'peer'" (NULL: none) */
	char *unfetched;              /* why a remote may name pins unseen here (NULL: none) */
	const tt_gc_scope *scope;     /* drop's, or NULL */
} gc_state;

static void state_release(gc_state *s)
{
	for (size_t i = 0; i < s->nothers; i++)
		tt_manifests_release(&s->others[i]);
	free(s->others);
	free(s->working);
	walk_release(&s->w);
	json_decref(s->w.referenced);
	json_decref(s->w.skipped);
	checkouts_release(&s->co);
	journals_release(&s->journal);
	json_decref(s->inflight);
	json_decref(s->known);
	free(s->remotes);
	free(s->unfetched);
	json_decref(s->published);
	json_decref(s->committed);
	json_decref(s->held);
	free(s->held_unread);
}

static int note(tt_plan *plan, char *text, tt_error *err)
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
		const checkout *c = &s->co.items[i];
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
			if (kind_gone(m->kind)) {
				if (count_skipped(s->w.skipped, m->kind) < 0 ||
				    (m->pin_id && set_add(s->w.referenced, m->pin_id) < 0))
					return tt_error_oom(err);
				continue;
			}
			s->working[s->nworking++] = m;
			if (m->pin_id && set_add(s->w.referenced, m->pin_id) < 0)
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
			set_add(uniq, o->keep_bookmarks[i]);
	json_object_foreach(uniq, k, v) json_array_append_new(keep, json_string(k));
	json_decref(uniq);
	sort_strings(keep);
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
		sort_strings(sb);
		sort_strings(se);
		sort_strings(sg);
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
static char *pin_of_listed(const char *id)
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
static int sharing_remotes(gc_state *s, const char **out, tt_error *err)
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
static int remote_unfetched(gc_state *s, const char **out, tt_error *err)
{
	const char *names;
	int rc;
	if ((rc = sharing_remotes(s, &names, err)) < 0)
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
			if (memo.items[pi].pin_id && set_add(into, memo.items[pi].pin_id) < 0) {
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
	if (s->scope || s->repo->gc_after_rewrite)
		return 0;
	if (!set_has(s->committed, pid)) {
		if ((rc = held_pins(s, err)) < 0)
			return rc;
		if (!s->held_unread && !set_has(s->held, pid))
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
	if (set_has(s->published, pid)) {
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
		if ((rc = sharing_remotes(s, &remotes, err)) < 0)
			return rc;
		if (!remotes)
			return committed_caution(s, pid, why, kept, err);
		*kept = "shared";
		*why = tt_asprintf("no manifest in history references it; created by this clone, but the "
				   "dataset is shared through remote(s) %s: another clone that committed the "
				   "same state shares this pin, and its unpushed commits may name it (fetch "
				   "every clone's work, then --release-foreign)", remotes);
	} else {
		if ((rc = remote_unfetched(s, &unfetched, err)) < 0)
			return rc;
		if (!unfetched)
			return 0;
		*kept = "unfetched";
		*why = tt_asprintf("no manifest in history references it, but %s", unfetched);
	}
	return *why ? 0 : tt_error_oom(err);
}

static int plan_unpins(gc_state *s, tt_error *err)
{
	tt_repo *repo = s->repo;
	json_t *checked = json_object(), *planned = json_object();
	int rc = 0;
	if (!checked || !planned) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t h = 0; h < s->w.npinned; h++) {
		const tt_manifest *m = &s->w.memo.items[s->w.pinned_order[h]];
		const char *ns = s->w.ns[s->w.pinned_order[h]];
		tt_backend *b;
		json_t *listed = NULL, *live = NULL, *mine = NULL;
		if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0)
			goto done;
		if (!(b->kind->caps & TT_CAP_PIN) || !tt_backend_has(b, list_pins) || set_has(checked, ns))
			continue;
		set_add(checked, ns);
		if ((rc = tt_backend_list_pins(b, m->locator, &listed, err)) < 0) {
			tt_error_object(err, m->key, m->kind);
			goto done;
		}
		/* id -> [listed generations], in order of first listing */
		live = json_object();
		mine = json_array();
		size_t i;
		json_t *v;
		json_array_foreach(listed, i, v) {
			char *pid = pin_of_listed(json_string_value(v));
			if (!pid || map_append(live, pid, json_string(json_string_value(v))) < 0) {
				free(pid);
				json_decref(listed), json_decref(live), json_decref(mine);
				rc = tt_error_oom(err);
				goto done;
			}
			free(pid);
		}
		json_decref(listed);
		size_t nlive = json_object_size(live), nmine = 0, nrunning = 0;
		const char *pid;
		json_object_foreach(live, pid, v) {
			char ds[TT_DATASET_ID_LEN + 1];
			if (!tt_pin_dataset(pid, ds) || strcmp(ds, repo->config.dataset_id) != 0)
				continue;
			nmine++;
			if (set_has(s->w.referenced, pid))
				continue;
			if (set_has(s->inflight, pid)) {
				nrunning++;
				continue;
			}
			json_array_append_new(mine, json_string(pid));
		}
		if (nlive > nmine &&
		    (rc = note(s->plan, tt_asprintf("%s: %zu pin(s) of other datasets left alone", m->key,
						    nlive - nmine), err)) < 0)
			goto next;
		if (nrunning &&
		    (rc = note(s->plan, tt_asprintf("%s: %zu pin(s) of unfinished operation(s) kept (see "
						    "`tether ops`)", m->key, nrunning), err)) < 0)
			goto next;
		/* sorted(mine - referenced - running) */
		sort_strings(mine);
		json_array_foreach(mine, i, v) {
			const char *id = json_string_value(v);
			char ref[TT_PIN_ID_MAX + 8];
			char *pkey = tt_asprintf("%s\x1f%s", m->kind, id);
			if (!pkey) {
				rc = tt_error_oom(err);
				goto next;
			}
			bool dup = set_has(planned, pkey);   /* the same store under another namespace */
			set_add(planned, pkey);
			free(pkey);
			if (dup)
				continue;
			tt_ref_for_pin(ref, sizeof ref, id);
			bool known = set_has(s->known, id);
			json_t *params = json_pack("{s:O,s:s}", "locator", m->locator, "pin_id", id);
			json_t *gens = json_object_get(live, id);
			/* Generations other than the plain ref: unpin them too. */
			if (params && (json_array_size(gens) > 1 ||
				       strcmp(json_string_value(json_array_get(gens, 0)), id) != 0)) {
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
			if (!params) {
				rc = tt_error_oom(err);
				goto next;
			}
			char *why = NULL;
			const char *kept = NULL;
			if ((rc = pin_caution(s, id, known, &why, &kept, err)) < 0) {
				json_decref(params);
				goto next;
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
			if (rc < 0)
				goto next;
		}
next:
		json_decref(live);
		json_decref(mine);
		if (rc < 0)
			goto done;
	}
done:
	json_decref(checked);
	json_decref(planned);
	return rc;
}

static int plan_forget_refs(gc_state *s, tt_error *err)
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
	if (!list_has_value(list, content))
		return json_array_append(list, content);
	return 0;
}

/* Every manifest gc weighs: those of visible history, then the working
 * tree's and the live checkouts'. */
static size_t manifest_count(const gc_state *s)
{
	return s->w.norder + s->nworking;
}

static const tt_manifest *manifest_at(const gc_state *s, size_t i)
{
	return i < s->w.norder ? &s->w.memo.items[s->w.order[i]] : s->working[i - s->w.norder];
}

/* The identity of m's store, by its kind's backend (errors name m). */
static int manifest_identity(tt_repo *repo, const tt_manifest *m, tt_backend **b,
			     json_t **identity, tt_error *err)
{
	int rc;
	*identity = NULL;
	if ((rc = tt_engine_backend(repo, m->kind, b, err)) < 0 ||
	    (rc = tt_backend_identity(*b, m->locator, identity, err)) < 0)
		tt_error_object(err, m->key, m->kind);
	return rc;
}

/* States per system: pinned (safe to drop a branch at) or merely recorded. */
static int state_buckets(gc_state *s, prune_ctx *p, tt_error *err)
{
	for (size_t i = 0; i < manifest_count(s); i++) {
		const tt_manifest *m = manifest_at(s, i);
		tt_backend *b;
		char *ns = NULL;
		int rc;
		if (!m->state)
			continue;
		if ((rc = tt_engine_backend(s->repo, m->kind, &b, err)) < 0 ||
		    (rc = namespace_key(b, m->kind, m->locator, &ns, err)) < 0) {
			tt_error_object(err, m->key, m->kind);
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
	json_object_foreach(marks, k, v) set_add(live, k);
	if (repo->ws.bookmark)
		set_add(live, repo->ws.bookmark);
	for (size_t i = 0; i < s->co.n; i++)
		if (s->co.items[i].ws_ok && s->co.items[i].ws.bookmark)
			set_add(live, s->co.items[i].ws.bookmark);
	for (size_t i = 0; i < s->o->nkeep; i++)
		if (s->o->keep_bookmarks[i])
			set_add(live, s->o->keep_bookmarks[i]);
	for (size_t i = 0; s->scope && i < s->scope->ngone; i++)
		json_object_del(live, s->scope->gone_bookmarks[i]);
	json_t *sorted = json_array();
	json_object_foreach(live, k, v) json_array_append_new(sorted, json_string(k));
	sort_strings(sorted);
	tt_buf text = TT_BUF_INIT;
	tt_buf_puts(&text, "keeping live bookmarks: ");
	size_t i;
	json_array_foreach(sorted, i, v) {
		char *slug = NULL;
		tt_buf_printf(&text, "%s%s", i ? ", " : "", json_string_value(v));
		if (!*json_string_value(v)) {
			set_add(p->keep_slugs, "");
			continue;
		}
		if ((rc = tt_bookmark_slug(&slug, json_string_value(v), err)) < 0)
			break;
		set_add(p->keep_slugs, slug);
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
	set_add(p->live_ws, id8);
	for (i = 0; i < s->co.n; i++) {
		if (!s->co.items[i].ws_ok)
			continue;
		snprintf(id8, sizeof id8, "%s", s->co.items[i].ws.workspace_id);
		set_add(p->live_ws, id8);
	}
	/* Spoken for: this workspace's refs of current objects and pending
	 * forks; every other live checkout's refs and pending forks. */
	json_object_foreach(repo->ws.working_refs, k, v)
		if (json_is_string(v) && tt_manifests_find(&repo->objects, k))
			set_add(p->in_use, json_string_value(v));
	json_object_foreach(repo->ws.pending_forks, k, v)
		if (json_is_string(v))
			set_add(p->in_use, json_string_value(v));
	for (i = 0; i < s->co.n; i++) {
		const checkout *c = &s->co.items[i];
		if (c->here || !c->ws_ok)
			continue;
		json_object_foreach(c->ws.working_refs, k, v)
			if (json_is_string(v))
				set_add(p->in_use, json_string_value(v));
		json_object_foreach(c->ws.pending_forks, k, v)
			if (json_is_string(v))
				set_add(p->in_use, json_string_value(v));
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
		tt_error_object(err, m->key, m->kind);
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
			if (list_has_value(json_object_get(p->pinned, ns), head))
				safe = "head is pinned";
			else if (p->dropped && list_has_value(json_object_get(p->dropped, ns), head))
				safe = "head was committed by a dropped commit";
			else if (*base_head && tt_pyv_eq(head, *base_head))
				safe = "head equals the base branch";
			else if (list_has_value(json_object_get(p->recorded, ns), head) &&
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
		set_add(p->only_slugs, slug);
		free(slug);
	}
	size_t total = sc->ndropped + s->w.dropped.n;
	for (size_t i = 0; i < total; i++) {
		const tt_manifest *m = i < sc->ndropped ? &sc->dropped[i] : &s->w.dropped.items[i - sc->ndropped];
		tt_backend *b;
		char *ns = NULL;
		int rc;
		if (!m->state || kind_gone(m->kind))
			continue;
		if ((rc = tt_engine_backend(s->repo, m->kind, &b, err)) < 0 ||
		    (rc = namespace_key(b, m->kind, m->locator, &ns, err)) < 0) {
			tt_error_object(err, m->key, m->kind);
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

static int plan_prune(gc_state *s, tt_error *err)
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
		if (kind_gone(m->kind))
			continue;
		if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0) {
			tt_error_object(err, m->key, m->kind);
			goto done;
		}
		unsigned eff = tt_engine_caps(repo, m);
		if (!(eff & TT_CAP_FORK))
			continue;
		if ((rc = namespace_key(b, m->kind, m->locator, &ns, err)) < 0) {
			tt_error_object(err, m->key, m->kind);
			goto done;
		}
		if (set_has(systems, ns)) {
			free(ns);
			continue;
		}
		set_add(systems, ns);
		bool storage = (eff & TT_CAP_BRANCH_IS_STORAGE) != 0;
		if (!tt_backend_has(b, list_working_refs) ||
		    (rc = tt_backend_list_working_refs(b, m->locator, &refs, err)) < 0) {
			if (rc < 0)
				tt_error_object(err, m->key, m->kind);
			free(ns);
			if (rc < 0)
				goto done;
			continue;
		}
		sort_strings(refs);
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
			if (set_has(p.in_use, ref) ||
			    (p.only_slugs && !(parts.slug && set_has(p.only_slugs, parts.slug)))) {
				tt_ref_parts_release(&parts);
				continue;
			}
			if (parts.slug && set_has(p.keep_slugs, parts.slug)) {
				if (strcmp(parts.slug, p.my_slug) == 0)
					origin = tt_strdup("this bookmark's branch; no object uses it");
			} else if (parts.slug) {
				origin = tt_asprintf("bookmark %s (gone)", parts.slug);
			} else if (!set_has(p.live_ws, parts.legacy_ws)) {
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
		if (foreign && (rc = note(s->plan, tt_asprintf("%s: %zu working branch(es) of other datasets "
							       "left alone", m->key, foreign), err)) < 0)
			goto done;
	}
done:
	prune_release(&p);
	json_decref(systems);
	return rc;
}

/* --- listings ----------------------------------------------------------------------- */

static int plan_listings(gc_state *s, tt_error *err)
{
	tt_repo *repo = s->repo;
	json_t *wanted = json_object();
	char *dir = tt_tether_path(repo->root, TT_LISTINGS_DIR);
	char **names = NULL;
	size_t n = 0, alloc = 0;
	DIR *d = NULL;
	int rc = 0;
	if (!wanted || !dir) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t i = 0; i < manifest_count(s); i++) {
		const tt_manifest *m = manifest_at(s, i);
		tt_backend *b;
		json_t *identity = NULL, *content = NULL;
		char name[TT_LISTING_NAME_MAX];
		if (!m->state)
			continue;
		if ((rc = manifest_identity(repo, m, &b, &identity, err)) < 0)
			goto done;
		if (!(content = tt_content_state(b->kind, m->state)))
			rc = tt_error_oom(err);
		else if ((rc = tt_listing_name(name, m->kind, identity, content, err)) == 0)
			set_add(wanted, name);
		json_decref(identity);
		json_decref(content);
		if (rc < 0)
			goto done;
	}
	if (!tt_is_dir(dir) || !(d = opendir(dir)))
		goto done;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		/* glob("*.jsonl"): no hidden names */
		if (l < 6 || e->d_name[0] == '.' || strcmp(e->d_name + l - 6, ".jsonl") != 0)
			continue;
		if (TT_ARRAY_GROW(names, alloc, n + 1) < 0 || !(names[n] = tt_strdup(e->d_name))) {
			rc = tt_error_oom(err);
			goto done;
		}
		n++;
	}
	if (n)
		qsort(names, n, sizeof *names, tt_cmp_cstr);
	for (size_t i = 0; i < n && rc == 0; i++)
		if (!set_has(wanted, names[i]))
			rc = tt_plan_action(s->plan, "delete-listing", NULL, NULL, names[i], "unreferenced", NULL, err);
done:
	if (d)
		closedir(d);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	free(dir);
	json_decref(wanted);
	return rc;
}

static int check_stores(const tt_gc_opts *o, tt_error *err)
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
	json_object_foreach(marks, k, v) set_add(live, k);
	if (repo->ws.bookmark)
		set_add(live, repo->ws.bookmark);
	for (size_t i = 0; i < s->co.n; i++)
		if (s->co.items[i].ws_ok && s->co.items[i].ws.bookmark)
			set_add(live, s->co.items[i].ws.bookmark);
	for (size_t i = 0; i < s->o->nkeep; i++)
		if (s->o->keep_bookmarks[i])
			set_add(live, s->o->keep_bookmarks[i]);
	for (size_t l = 0; l < s->journal.n; l++)
		for (size_t e = 0; e < s->journal.logs[l].count; e++) {
			const tt_op_entry *op = &s->journal.logs[l].entries[e];
			const char *bm = json_string_value(json_object_get(op->result, "bookmark"));
			if (strcmp(op->command, "new") == 0 && bm && *bm)
				set_add(known, bm);   /* slugged below */
		}
	json_object_foreach(live, k, v) {
		char *slug = NULL;
		if ((rc = tt_bookmark_slug(&slug, k, err)) < 0)
			goto done;
		set_add(keep, slug);
		set_add(known, slug);
		free(slug);
	}
	/* the `new` bookmarks, slugged (live ones are already there) */
	json_t *names = json_deep_copy(known);
	void *tmp;
	json_object_foreach_safe(names, tmp, k, v) {
		char *slug = NULL;
		if (set_has(live, k))
			continue;
		if ((rc = tt_bookmark_slug(&slug, k, err)) < 0)
			break;
		json_object_del(known, k);
		set_add(known, slug);
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
	for (size_t i = 0; i < manifest_count(s); i++) {
		const tt_manifest *m = manifest_at(s, i);
		tt_backend *b;
		json_t *identity = NULL;
		tt_buf c = TT_BUF_INIT;
		if ((rc = manifest_identity(repo, m, &b, &identity, err)) < 0)
			goto done;
		tt_buf_printf(&c, "%s|", m->kind);
		tt_json_canonical(&c, identity);
		json_decref(identity);
		if ((rc = tt_buf_check(&c, err, "identity")) == 0)
			set_add(in_use, c.ptr);
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
static int plan_gc_scoped(tt_repo *repo, const tt_gc_opts *o, const tt_gc_scope *scope, tt_plan **out,
			  tt_error *err)
{
	gc_state s = { 0 };
	char digest[17], *head = NULL, *reldir = NULL;
	int rc;
	*out = NULL;
	s.repo = repo;
	s.o = o;
	s.scope = scope;
	if (scope && scope->nexcluded) {
		if (!(s.w.excluded = json_object()))
			return tt_error_oom(err);
		for (size_t i = 0; i < scope->nexcluded; i++)
			set_add(s.w.excluded, scope->excluded_commits[i]);
	}
	if ((rc = check_stores(o, err)) < 0)
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
	if ((rc = live_checkouts(repo, &s.co, err)) < 0 || (rc = gather_working(&s, err)) < 0 ||
	    (rc = read_journals(&s.co, &s.journal, err)) < 0 ||
	    (rc = inflight_pins(&s.journal, s.inflight, err)) < 0)
		goto done;
	if ((rc = context_and_preconditions(&s, digest, head, err)) < 0 || (rc = gone_notes(&s, err)) < 0)
		goto done;
	if ((rc = seed_pinned(repo, &s.journal, err)) < 0)
		goto done;
	if (!(s.known = known_pins(repo, &s.committed))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = plan_unpins(&s, err)) < 0 || (rc = plan_forget_refs(&s, err)) < 0 ||
	    (o->prune_bookmarks && (rc = plan_prune(&s, err)) < 0) || (rc = plan_listings(&s, err)) < 0 ||
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

static int plan_gc(tt_repo *repo, const tt_gc_opts *o, tt_plan **out, tt_error *err)
{
	return plan_gc_scoped(repo, o, NULL, out, err);
}

int tt_gc_plan_scoped(tt_repo *repo, const tt_gc_opts *o, const tt_gc_scope *scope, tt_plan **out, tt_error *err)
{
	return plan_gc_scoped(repo, o, scope, out, err);
}

/* --- apply --------------------------------------------------------------------------- */

static json_t *new_report(bool dry_run)
{
	return json_pack("{s:{},s:{},s:{},s:{},s:{},s:[],s:{},s:{},s:[],s:b}", "unpinned", "kept_pins",
			 "deleted_working_refs", "kept_working_refs", "forgotten_working_refs",
			 "deleted_listings", "deleted_stores", "kept_stores", "forgotten_stores", "dry_run",
			 dry_run);
}

/* Where a failed action joins the failures: verb, target, (key), #n. */
static int fail_action(json_t *failed, const tt_plan_action_view *a, tt_error *e)
{
	tt_buf base = TT_BUF_INIT, key = TT_BUF_INIT;
	tt_buf_printf(&base, "%s %s", a->op, a->target);
	if (a->key && *a->key)
		tt_buf_printf(&base, " (%s)", a->key);
	tt_buf_puts(&key, base.ptr);
	for (int n = 2; json_object_get(failed, key.ptr); n++) {
		tt_buf_reset(&key);
		tt_buf_printf(&key, "%s #%d", base.ptr, n);
	}
	int rc = key.failed ? -1 : json_object_set_new(failed, key.ptr, json_string(tt_error_text(e)));
	tt_buf_release(&base);
	tt_buf_release(&key);
	tt_error_clear(e);
	return rc;
}

/* A branch gc deletes must still hold the head the plan saw. */
static int require_head(tt_repo *repo, const tt_plan_action_view *a, tt_error *err)
{
	tt_backend *b;
	json_t *loc = json_object_get(a->params, "locator"), *expected = json_object_get(a->params, "head");
	json_t *now = NULL;
	int rc;
	if ((rc = tt_engine_backend(repo, a->kind, &b, err)) < 0)
		return rc;
	if (!json_is_object(loc))
		return tt_error_set(err, TT_ESTALEPLAN, "gc %s: the plan names no locator; re-run the plan", a->key);
	if ((!expected || json_is_null(expected)) && (b->kind->caps & TT_CAP_BRANCH_IS_STORAGE))
		return 0; /* the plan read no head on purpose: the branch is the storage (forced) */
	if (!expected || json_is_null(expected)) {
		/* The plan could not read the head: if it reads now, review it. */
		tt_error none = TT_ERROR_INIT;
		if (tt_backend_fingerprint(b, loc, a->target, &now, &none) < 0) {
			tt_error_clear(&none);
			return 0;
		}
		tt_buf st = TT_BUF_INIT;
		tt_short_state(&st, now);
		rc = tt_error_set(err, TT_ESTALEPLAN, "gc %s: the plan could not read %s's head, but it reads "
				  "now (%s); re-run the plan to review it", a->key, a->target, st.ptr);
		tt_buf_release(&st);
		json_decref(now);
		return rc;
	}
	if ((rc = tt_backend_fingerprint(b, loc, a->target, &now, err)) < 0)
		return rc;
	if (!json_is_object(expected) || !tt_states_equal(b->kind, now, expected)) {
		tt_buf x = TT_BUF_INIT, y = TT_BUF_INIT;
		tt_short_state(&x, expected);
		tt_short_state(&y, now);
		rc = tt_error_set(err, TT_ESTALEPLAN, "gc %s: %s moved since the plan was made (%s -> %s); "
				  "re-run the plan", a->key, a->target, x.ptr, y.ptr);
		tt_buf_release(&x);
		tt_buf_release(&y);
	}
	json_decref(now);
	return rc;
}

static int do_unpin(tt_repo *repo, const tt_plan_action_view *a, const char *pid, tt_error *err)
{
	tt_backend *b;
	json_t *loc = json_object_get(a->params, "locator"), *refs = json_object_get(a->params, "refs");
	int rc;
	if ((rc = tt_engine_backend(repo, a->kind, &b, err)) < 0)
		return rc;
	if (!tt_backend_has(b, unpin) || !json_is_object(loc))
		return tt_error_set(err, TT_ECAPABILITY, "[%s] cannot unpin %s", a->kind, a->target);
	tt_pin pin = { 0 };
	if (strlen(pid) >= sizeof pin.id || strlen(a->target) >= sizeof pin.ref)
		return tt_error_set(err, TT_ELIMIT, "pin %s is too long", pid);
	memcpy(pin.id, pid, strlen(pid) + 1);
	memcpy(pin.ref, a->target, strlen(a->target) + 1);
	if ((rc = tt_backend_unpin(b, loc, &pin, err)) < 0)
		return rc;
	/* Every generation of this id the plan listed. */
	size_t i;
	json_t *r;
	json_array_foreach(refs, i, r) {
		const char *ref = json_string_value(r);
		char of[TT_PIN_ID_MAX];
		if (!ref || strcmp(ref, a->target) == 0 || strlen(ref) >= sizeof pin.ref ||
		    !tt_pin_id_of_ref(ref, of) || strcmp(of, pid) != 0)
			continue;
		memcpy(pin.ref, ref, strlen(ref) + 1);
		if ((rc = tt_backend_unpin(b, loc, &pin, err)) < 0)
			return rc;
	}
	return 0;
}

/* apply_gc: locks held by the caller. */
static int apply_gc(tt_repo *repo, const tt_plan *plan, json_t **out, tt_error *err)
{
	json_t *report = NULL, *failed = NULL, *pre = NULL, *plan_obj = NULL;
	json_t *shared = NULL;   /* keep-pins for another clone: the CLI's, not journaled */
	char op_id[TT_OP_ID_LEN + 1] = "";
	bool journaled = false, forgot = false;
	size_t na = tt_plan_action_count(plan);
	int rc;
	*out = NULL;
	if ((rc = tt_engine_check_preconditions(repo, plan, "gc", err)) < 0)
		return rc;
	if (!(shared = json_object()) || !(report = new_report(false)) || !(failed = json_object())) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* Preflight every branch the plan deletes before the first action: a
	 * stale head found half-way would leave the plan half-applied. */
	for (size_t i = 0; i < na; i++) {
		tt_plan_action_view a;
		tt_plan_action_at(plan, i, &a);
		if (strcmp(a.op, "delete-branch") == 0 && (rc = require_head(repo, &a, err)) < 0)
			goto done;
	}
	if (tt_plan_write_count(plan)) {
		tt_buf ws = TT_BUF_INIT;
		if ((rc = tt_workspace_render(&ws, &repo->ws, err)) < 0) {
			tt_buf_release(&ws);
			goto done;
		}
		pre = json_pack("{s:s%}", "workspace", ws.ptr, ws.len);
		tt_buf_release(&ws);
		if (!pre || !(plan_obj = tt_plan_to_object(plan, err))) {
			rc = pre ? err->code : tt_error_oom(err);
			goto done;
		}
		if ((rc = tt_oplog_begin(repo->root, "gc", plan_obj, pre, repo->op_parent, op_id, err)) < 0)
			goto done;
		journaled = true;
		tt_fault("gc:after-journal");
	}
	for (size_t i = 0; i < na; i++) {
		tt_plan_action_view a;
		tt_error e = TT_ERROR_INIT;
		tt_plan_action_at(plan, i, &a);
		if (strcmp(a.op, "unpin") == 0) {
			tt_buf pid = TT_BUF_INIT;
			tt_pyv_str(&pid, json_object_get(a.params, "pin_id"));
			if (do_unpin(repo, &a, pid.ptr, &e) == 0) {
				map_append(json_object_get(report, "unpinned"), a.kind, json_string(pid.ptr));
				json_t *d = json_pack("{s:s}", "target", a.target);
				if (journaled)
					tt_oplog_progress(repo->root, op_id, "unpin", d, &e);
				json_decref(d);
				tt_fault("gc:after-unpin");
				if (!e.code) {
					json_t *ids = json_pack("[s]", pid.ptr);
					tt_error ignored = TT_ERROR_INIT;
					/* Best effort: a miss can only make a later gc release a
					 * pin another clone re-creates under the same id. */
					tt_index_forget_pinned(repo->vcs->shared_dir, repo->config.dataset_id, ids,
							       &ignored);
					if (ignored.code)
						warn(repo, tt_asprintf("could not take pin %s off the pinned index: %s; if "
								       "another clone creates it again, a later `gc` "
								       "here may release it", pid.ptr,
								       tt_error_text(&ignored)));
					tt_error_clear(&ignored);
					json_decref(ids);
				}
			}
			tt_buf_release(&pid);
		} else if (strcmp(a.op, "forget-working-ref") == 0) {
			json_object_del(repo->ws.working_refs, a.key);
			forgot = true;
			map_append(json_object_get(report, "forgotten_working_refs"), a.key, json_string(a.target));
		} else if (strcmp(a.op, "delete-branch") == 0) {
			tt_backend *b;
			json_t *loc = json_object_get(a.params, "locator");
			/* Checked in the preflight; again now.  A move found here is a
			 * race, not a stale plan: keep this branch, finish the rest. */
			if (require_head(repo, &a, &e) < 0) {
				if (e.code == TT_ESTALEPLAN)
					map_append(json_object_get(report, "kept_working_refs"), a.key,
						   json_string(a.target));
			} else if (tt_engine_backend(repo, a.kind, &b, &e) == 0) {
				if (!tt_backend_has(b, delete_working_ref))
					tt_error_set(&e, TT_ECAPABILITY, "[%s] cannot delete branches", a.kind);
				else if (tt_backend_delete_working_ref(b, loc, a.target, &e) == 0) {
					map_append(json_object_get(report, "deleted_working_refs"), a.key,
						   json_string(a.target));
					json_t *d = json_pack("{s:s,s:s}", "key", a.key, "target", a.target);
					if (journaled)
						tt_oplog_progress(repo->root, op_id, "delete-branch", d, &e);
					json_decref(d);
				}
			}
		} else if (strcmp(a.op, "keep-branch") == 0) {
			map_append(json_object_get(report, "kept_working_refs"), a.key, json_string(a.target));
		} else if (strcmp(a.op, "keep-pin") == 0) {
			tt_buf pid = TT_BUF_INIT;
			tt_pyv_str(&pid, json_object_get(a.params, "pin_id"));
			map_append(json_object_get(report, "kept_pins"), a.kind, json_string(pid.ptr));
			if (json_is_string(json_object_get(a.params, "kept")))
				map_append(shared, a.kind, json_string(pid.ptr));
			tt_buf_release(&pid);
		} else if (tt_gc_store_op(a.op)) {
			tt_gc_apply_store(repo, &a, report, journaled ? op_id : NULL, &e);
		} else if (strcmp(a.op, "delete-listing") == 0) {
			/* A listing name, never a path: a plan is not authenticated. */
			if (!*a.target || strchr(a.target, '/') || a.target[0] == '.') {
				tt_error_set(&e, TT_ECONFIG, "not a listing name: %s", a.target);
			} else {
				char *rel = tt_asprintf(TT_LISTINGS_DIR "/%s", a.target);
				char *path = rel ? tt_tether_path(repo->root, rel) : NULL;
				if (!path)
					tt_error_oom(&e);
				else if (!tt_exists(path) || tt_unlink(path, &e) == 0)
					json_array_append_new(json_object_get(report, "deleted_listings"),
							      json_string(a.target));
				free(rel);
				free(path);
			}
		}
		if (e.code && fail_action(failed, &a, &e) < 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	if (forgot) {
		tt_error e = TT_ERROR_INIT;
		if (tt_workspace_save(&repo->ws, repo->root, &e) < 0) {
			tt_plan_action_view a = { .op = "forget-working-ref", .target = "workspace.toml", .key = "" };
			fail_action(failed, &a, &e);
		}
	}
	if (journaled) {
		json_t *result = json_deep_copy(report);
		tt_error e = TT_ERROR_INIT;
		if (!result || json_object_set(result, "failed", failed) < 0) {
			json_decref(result);
			rc = tt_error_oom(err);
			goto done;
		}
		if (tt_oplog_done(repo->root, op_id, result, NULL, NULL, &e) < 0)
			fail_action(failed, &(tt_plan_action_view){ .op = "journal", .target = op_id, .key = "" }, &e);
		json_decref(result);
	}
	json_object_set(report, "failed", failed);
	json_object_set(report, "kept_pins_shared", shared);
	*out = report;
	report = NULL;
done:
	json_decref(report);
	json_decref(shared);
	json_decref(failed);
	json_decref(pre);
	json_decref(plan_obj);
	return rc;
}

/* Python's gc(dry_run=True): the report the plan would make. */
static json_t *dry_report(const tt_plan *plan)
{
	json_t *r = new_report(true);
	for (size_t i = 0; r && i < tt_plan_action_count(plan); i++) {
		tt_plan_action_view a;
		tt_buf pid = TT_BUF_INIT;
		tt_plan_action_at(plan, i, &a);
		tt_pyv_str(&pid, json_object_get(a.params, "pin_id"));
		if (!strcmp(a.op, "unpin"))
			map_append(json_object_get(r, "unpinned"), a.kind, json_string(pid.ptr));
		else if (!strcmp(a.op, "keep-pin")) {
			map_append(json_object_get(r, "kept_pins"), a.kind, json_string(pid.ptr));
			if (json_is_string(json_object_get(a.params, "kept"))) {
				if (!json_object_get(r, "kept_pins_shared"))
					json_object_set_new(r, "kept_pins_shared", json_object());
				map_append(json_object_get(r, "kept_pins_shared"), a.kind, json_string(pid.ptr));
			}
		}
		else if (!strcmp(a.op, "forget-working-ref"))
			map_append(json_object_get(r, "forgotten_working_refs"), a.key, json_string(a.target));
		else if (!strcmp(a.op, "delete-branch"))
			map_append(json_object_get(r, "deleted_working_refs"), a.key, json_string(a.target));
		else if (!strcmp(a.op, "keep-branch"))
			map_append(json_object_get(r, "kept_working_refs"), a.key, json_string(a.target));
		else if (!strcmp(a.op, "delete-listing"))
			json_array_append_new(json_object_get(r, "deleted_listings"), json_string(a.target));
		else if (tt_gc_store_op(a.op))
			tt_gc_preview_store(&a, r);
		tt_buf_release(&pid);
	}
	if (r)
		json_object_set_new(r, "failed", json_object());
	return r;
}

/* --- the public entry points -------------------------------------------------------- */

/* The repository-wide lock (VCS shared dir, 60 s). */
static int repo_lock(tt_repo *repo, tt_lock *lock, tt_error *err)
{
	char *path = tt_path_join(repo->vcs->shared_dir, "tether.lock");
	int rc;
	if (!path)
		return tt_error_oom(err);
	rc = tt_lock_acquire(lock, path, "committing, collecting or forking in a checkout of this "
			     "repository", tt_lock_timeout_ms(TT_REPO_LOCK_TIMEOUT_MS), err);
	free(path);
	return rc;
}

int tt_repo_gc(tt_repo *repo, const tt_gc_opts *o, json_t **out, tt_error *err)
{
	tt_plan *plan = NULL;
	tt_lock rlock = TT_LOCK_INIT;
	int rc;
	*out = NULL;
	if ((rc = check_stores(o, err)) < 0)
		return rc;
	if ((rc = tt_repo_lock(repo, err)) < 0)
		return rc;
	/* Interrupted commits and pulls the checkout has moved past since, with
	 * no uncommitted manifests left of them, are closed first: the pins
	 * they cut are then weighed like any other. */
	if (!o->dry_run) {
		json_t *moot = NULL;
		if ((rc = repo_lock(repo, &rlock, err)) < 0 ||
		    (rc = tt_engine_scan_interrupted(repo, TT_CLOSE_MOVED, &moot, err)) < 0 ||
		    (rc = tt_engine_close_interrupted(repo, moot, NULL, "gc", err)) < 0) {
			json_decref(moot);
			goto done;
		}
		json_decref(moot);
	}
	/* Plan and apply under one lock: nothing in this checkout moves between. */
	if ((rc = plan_gc(repo, o, &plan, err)) < 0)
		goto done;
	if (o->dry_run) {
		if (!(*out = dry_report(plan)))
			rc = tt_error_oom(err);
		goto done;
	}
	rc = apply_gc(repo, plan, out, err);
	/* An interrupted gc with the same options is redone by this one. */
	if (rc == 0 && !json_object_size(json_object_get(*out, "failed"))) {
		static const char *const options[] = { "prune_bookmarks", "keep_bookmarks", "force_prune",
						       "delete_stores", "stores", "release_foreign", NULL };
		tt_error ignored = TT_ERROR_INIT;
		tt_engine_close_reruns(repo, "gc", tt_plan_context(plan), options, NULL, "a later gc", &ignored);
		tt_error_clear(&ignored);
	}
done:
	tt_lock_release(&rlock);
	tt_repo_unlock(repo);
	tt_plan_free(plan);
	return rc;
}

int tt_repo_plan_gc(tt_repo *repo, const tt_gc_opts *o, char **plan_json, char **plan_text, tt_error *err)
{
	tt_plan *plan = NULL;
	tt_buf jb = TT_BUF_INIT, tb = TT_BUF_INIT;
	int rc;
	*plan_json = *plan_text = NULL;
	if ((rc = plan_gc(repo, o, &plan, err)) < 0 || (rc = tt_plan_to_json(plan, &jb, err)) < 0 ||
	    (rc = tt_plan_render_text(plan, &tb, err)) < 0)
		goto done;
	*plan_json = tt_buf_detach(&jb);
	*plan_text = tt_buf_detach(&tb);
	if (!*plan_json || !*plan_text)
		rc = tt_error_oom(err);
done:
	tt_plan_free(plan);
	tt_buf_release(&jb);
	tt_buf_release(&tb);
	return rc;
}

int tt_repo_apply_gc_plan(tt_repo *repo, const char *text, size_t len, json_t **out, tt_error *err)
{
	tt_plan *plan = NULL;
	tt_lock rlock = TT_LOCK_INIT;
	int rc;
	*out = NULL;
	if ((rc = tt_plan_from_json(&plan, text, len, err)) < 0)
		return rc;
	if (strcmp(tt_plan_command(plan), "gc") != 0) {
		rc = tt_error_set(err, TT_ECONFIG, "this is a '%s' plan, expected 'gc'", tt_plan_command(plan));
		goto done;
	}
	if ((rc = tt_repo_lock(repo, err)) < 0)
		goto done;
	if ((rc = repo_lock(repo, &rlock, err)) == 0)
		rc = apply_gc(repo, plan, out, err);
	tt_lock_release(&rlock);
	tt_repo_unlock(repo);
done:
	tt_plan_free(plan);
	return rc;
}

int tt_gc_apply(tt_repo *repo, const tt_plan *plan, json_t **out, tt_error *err)
{
	return apply_gc(repo, plan, out, err);
}
