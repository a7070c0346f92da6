/*
 * engine/registry/registry_export.c - the export tables and how they are derived
 * from a dataset's history (registry.h).  Every target (SQLite, Parquet,
 * CSV, JSONL, PostgreSQL) writes the rows built here, so the shapes cannot
 * drift between them.
 */
#include "engine/registry/registry_export.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/kinds.h"
#include "core/layout.h"
#include "core/oplog.h"
#include "engine/kernel/context.h"
#include "engine/kernel/revisions.h"
#include "engine/registry/registry.h"
#include "util/fs.h"
#include "util/hash.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "backends/registry.h"

/* --- tables ----------------------------------------------------------------- */

#define COLS(a) a, sizeof a / sizeof a[0]

static const tt_reg_column meta_cols[] = {
	{ "key", TT_REG_TEXT, "" }, { "value", TT_REG_TEXT, "" },
};
static const tt_reg_column commit_cols[] = {
	{ "commit_id", TT_REG_TEXT, "Full VCS commit hash" },
	{ "change_id", TT_REG_TEXT, "jj change id; null in git repos" },
	{ "author_name", TT_REG_TEXT, "" },
	{ "author_email", TT_REG_TEXT, "" },
	{ "authored_at", TT_REG_TIMESTAMP, "ISO-8601 author time" },
	{ "committed_at", TT_REG_TIMESTAMP, "ISO-8601 committer time" },
	{ "message", TT_REG_TEXT, "Full commit message" },
	{ "manifest_hash", TT_REG_TEXT, "Hash of the object set at this commit" },
};
static const tt_reg_column parent_cols[] = {
	{ "commit_id", TT_REG_TEXT, "" },
	{ "parent_id", TT_REG_TEXT, "" },
	{ "position", TT_REG_INT, "0 = first parent" },
};
static const tt_reg_column ref_cols[] = {
	{ "name", TT_REG_TEXT, "Bookmark / branch / tag name, or @ / HEAD" },
	{ "kind", TT_REG_TEXT, "bookmark, branch, tag, or head" },
	{ "commit_id", TT_REG_TEXT, "" },
};
static const tt_reg_column object_cols[] = {
	{ "commit_id", TT_REG_TEXT, "" },
	{ "key", TT_REG_TEXT, "Object key" },
	{ "kind", TT_REG_TEXT, "Backend kind" },
	{ "uri", TT_REG_TEXT, "Locator `uri` when present; the join key to a catalog" },
	{ "locator_json", TT_REG_JSON, "Full locator" },
	{ "identity_json", TT_REG_JSON, "Backend identity (what names the system)" },
	{ "identity_hash", TT_REG_TEXT, "blake2b of the canonical identity" },
	{ "policy_file", TT_REG_TEXT, "immutable or versioned" },
	{ "policy_pin", TT_REG_TEXT, "native or record" },
	{ "state_json", TT_REG_JSON, "Recorded state; null before the first commit" },
	{ "state_hash", TT_REG_TEXT, "blake2b of the canonical state" },
	{ "pin_id", TT_REG_TEXT, "" },
	{ "pin_ref", TT_REG_TEXT, "Native ref name (tether.<pin_id>)" },
	{ "recoverable", TT_REG_BOOL, "False for Observed-tier records" },
	{ "captured_at", TT_REG_TIMESTAMP, "When the state was recorded" },
};
static const tt_reg_column state_cols[] = {
	{ "kind", TT_REG_TEXT, "" },
	{ "identity_hash", TT_REG_TEXT, "" },
	{ "state_hash", TT_REG_TEXT, "" },
	{ "identity_json", TT_REG_JSON, "" },
	{ "state_json", TT_REG_JSON, "" },
	{ "pin_id", TT_REG_TEXT, "Same for every commit that records this state" },
	{ "first_commit_id", TT_REG_TEXT, "Earliest exported commit recording it" },
	{ "first_committed_at", TT_REG_TIMESTAMP, "" },
};
static const tt_reg_column listing_cols[] = {
	{ "listing_name", TT_REG_TEXT, "File name under .tether/listings/" },
	{ "kind", TT_REG_TEXT, "" },
	{ "identity_hash", TT_REG_TEXT, "" },
	{ "state_hash", TT_REG_TEXT, "" },
	{ "entries", TT_REG_INT, "Row count in listing_entries" },
};
static const tt_reg_column entry_cols[] = {
	{ "listing_name", TT_REG_TEXT, "" },
	{ "path", TT_REG_TEXT, "Path relative to the object" },
	{ "token", TT_REG_TEXT, "etag / mtime token" },
	{ "size", TT_REG_INT, "Bytes" },
};
static const tt_reg_column ws_cols[] = {
	{ "workspace_id", TT_REG_TEXT, "" },
	{ "key", TT_REG_TEXT, "" },
	{ "working_ref", TT_REG_TEXT, "Branch this checkout writes to" },
	{ "base_state_json", TT_REG_JSON, "Committed state this working ref corresponds to" },
	{ "fork_point_json", TT_REG_JSON, "State the working branch was forked from" },
	{ "last_snapshot_json", TT_REG_JSON, "Last fingerprint taken here" },
};

static const char *const pk_key[] = { "key", NULL };
static const char *const pk_commit[] = { "commit_id", NULL };
static const char *const pk_parent[] = { "commit_id", "parent_id", NULL };
static const char *const pk_ref[] = { "name", "kind", NULL };
static const char *const pk_object[] = { "commit_id", "key", NULL };
static const char *const pk_state[] = { "kind", "identity_hash", "state_hash", NULL };
static const char *const pk_listing[] = { "listing_name", NULL };
static const char *const pk_entry[] = { "listing_name", "path", NULL };
static const char *const pk_ws[] = { "workspace_id", "key", NULL };

const tt_reg_table tt_reg_tables[] = {
	{ "tether_meta", COLS(meta_cols), pk_key, "schema_version, exported_at, head, vcs, tether_version" },
	{ "commits", COLS(commit_cols), pk_commit, "One row per VCS commit that was exported" },
	{ "commit_parents", COLS(parent_cols), pk_parent, "Parent edges of the commit graph" },
	{ "refs", COLS(ref_cols), pk_ref, "Named pointers into history at export time" },
	{ "objects", COLS(object_cols), pk_object, "Every object manifest at every exported commit" },
	{ "object_states", COLS(state_cols), pk_state,
	  "Distinct (system, state) pairs: the versions a registry keys on" },
	{ "listings", COLS(listing_cols), pk_listing, "Content-addressed per-file listings (opt-in)" },
	{ "listing_entries", COLS(entry_cols), pk_entry, "One row per file in a listing (opt-in)" },
	{ "workspace", COLS(ws_cols), pk_ws, "This checkout's working refs (opt-in; moves constantly)" },
};
const size_t tt_reg_ntables = sizeof tt_reg_tables / sizeof tt_reg_tables[0];

const char *const tt_reg_views[][2] = {
	{ "objects_head", "SELECT o.* FROM {q}objects o JOIN {q}refs r ON r.commit_id = o.commit_id "
			  "WHERE r.kind = 'head'" },
	{ "object_pins", "SELECT o.kind, o.identity_hash, o.pin_id, o.pin_ref, "
			 "COUNT(DISTINCT o.commit_id) AS commits FROM {q}objects o "
			 "WHERE o.pin_id IS NOT NULL "
			 "GROUP BY o.kind, o.identity_hash, o.pin_id, o.pin_ref" },
};
const size_t tt_reg_nviews = sizeof tt_reg_views / sizeof tt_reg_views[0];

bool tt_reg_commit_keyed(const char *t)
{
	return !strcmp(t, "commits") || !strcmp(t, "commit_parents") || !strcmp(t, "objects");
}

bool tt_reg_replaced_wholesale(const char *t)
{
	return !strcmp(t, "refs") || !strcmp(t, "workspace") || !strcmp(t, "tether_meta");
}

char *tt_reg_cell_text(const tt_reg_column *c, const json_t *v, const char *dialect)
{
	if (!v || json_is_null(v))
		return NULL;
	if (c->type == TT_REG_JSON) {
		tt_buf b = TT_BUF_INIT;
		if (tt_json_dump(&b, v, (tt_json_style){ -1, true, true, true }) < 0) {
			tt_buf_release(&b);
			return NULL;
		}
		return tt_buf_detach(&b);
	}
	if (c->type == TT_REG_BOOL) {
		bool t = json_is_true(v) || (json_is_integer(v) && json_integer_value(v));
		if (!strcmp(dialect, "sqlite"))
			return tt_strdup(t ? "1" : "0");
		if (!strcmp(dialect, "csv"))
			return tt_strdup(t ? "True" : "False");
		return tt_strdup(t ? "true" : "false");
	}
	if (json_is_integer(v))
		return tt_asprintf("%lld", (long long)json_integer_value(v));
	if (json_is_string(v))
		return tt_strdup(json_string_value(v));
	tt_buf b = TT_BUF_INIT;
	tt_json_dump(&b, v, (tt_json_style){ -1, true, true, true });
	return tt_buf_detach(&b);
}

json_t *tt_reg_row_get(const json_t *row, const char *column)
{
	json_t *v = json_object_get(row, column);
	return v ? v : json_object_get(json_object_get(row, TT_REG_SHARED), column);
}

json_t *tt_reg_row_full(const json_t *row)
{
	json_t *shared = json_object_get(row, TT_REG_SHARED);
	if (!shared)
		return json_incref((json_t *)row);
	json_t *out = json_copy(shared);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)row, k, v)
		if (strcmp(k, TT_REG_SHARED) && out)
			json_object_set(out, k, v);
	return out;
}

/* --- building --------------------------------------------------------------- */

/* What one distinct manifest contributes, computed once however many
 * commits record it. */
typedef struct derived {
	bool done;
	char *canonical;     /* tt_manifest_canonical */
	json_t *identity;    /* NULL: the backend is not available here */
	char ident_hash[33]; /* "" when identity is NULL */
	json_t *content;     /* content state (NULL before the first commit) */
	char state_hash[33]; /* "" when content is NULL */
	json_t *row;         /* its objects columns but commit_id, shared by every commit's row */
} derived;

typedef struct commit_objs {
	char *commit;
	size_t *idx;         /* memo indices, sorted by key */
	size_t n;
} commit_objs;

typedef struct builder {
	tt_repo *repo;
	char *reldir;
	tt_manifest_memo memo;
	derived *der;
	size_t nder;
	commit_objs *commits;
	size_t ncommits, alloc;
	json_t *seen;        /* commit -> true */
} builder;

static int digest_of(char out[33], const json_t *v, tt_error *err)
{
	tt_buf b = TT_BUF_INIT;
	int rc = tt_json_canonical(&b, v);
	if (rc == 0) {
		tt_bytes part = { b.ptr, b.len };
		tt_blake_parts(out, 16, &part, 1);
	} else {
		rc = tt_error_set(err, rc, "cannot hash a value for the export");
	}
	tt_buf_release(&b);
	return rc;
}

static int derive(builder *bd, size_t i, tt_error *err)
{
	if (bd->nder < bd->memo.n) {
		derived *g = realloc(bd->der, bd->memo.n * sizeof *g);
		if (!g)
			return tt_error_oom(err);
		memset(g + bd->nder, 0, (bd->memo.n - bd->nder) * sizeof *g);
		bd->der = g;
		bd->nder = bd->memo.n;
	}
	derived *d = &bd->der[i];
	if (d->done)
		return 0;
	const tt_manifest *m = &bd->memo.items[i];
	tt_buf b = TT_BUF_INIT;
	int rc = tt_manifest_canonical(&b, m, err);
	if (rc < 0) {
		tt_buf_release(&b);
		return rc;
	}
	d->canonical = tt_buf_detach(&b);
	tt_backend *be = NULL;
	tt_error ignored = TT_ERROR_INIT;
	bool have_backend = tt_engine_backend(bd->repo, m->kind, &be, &ignored) == 0;
	tt_error_clear(&ignored);
	if (have_backend && tt_backend_identity(be, m->locator, &d->identity, &ignored) < 0)
		d->identity = NULL;  /* unknown here; the identity stays unknown */
	tt_error_clear(&ignored);
	if (d->identity && (rc = digest_of(d->ident_hash, d->identity, err)) < 0)
		return rc;
	if (m->state) {
		const tt_kind *k = have_backend ? tt_kind_find(m->kind) : NULL;
		d->content = k ? tt_content_state(k, m->state) : json_incref(m->state);
		if (d->content && (rc = digest_of(d->state_hash, d->content, err)) < 0)
			return rc;
	}
	d->done = true;
	return 0;
}

/* Insertion sort of memo indices by key (a commit holds few manifests;
 * stable, so the last file declaring a key stays last). */
static void sort_by_key(size_t *idx, size_t n, const tt_manifest_memo *memo)
{
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && strcmp(memo->items[idx[b - 1]].key, memo->items[idx[b]].key) > 0; b--) {
			size_t t = idx[b];
			idx[b] = idx[b - 1];
			idx[b - 1] = t;
		}
}

/* One commit's manifests from its {path: text}. */
static int add_commit(builder *bd, const char *commit, const json_t *files, tt_error *err)
{
	if (json_object_get(bd->seen, commit))
		return 0;
	if (TT_ARRAY_GROW(bd->commits, bd->alloc, bd->ncommits + 1) < 0)
		return tt_error_oom(err);
	commit_objs *c = &bd->commits[bd->ncommits];
	memset(c, 0, sizeof *c);
	if (!(c->commit = tt_strdup(commit)) || json_object_set_new(bd->seen, commit, json_true()) < 0)
		return tt_error_oom(err);
	bd->ncommits++;
	c->idx = tt_calloc(json_object_size(files) + 1, sizeof *c->idx);
	if (!c->idx)
		return tt_error_oom(err);
	const char *path;
	json_t *text;
	json_object_foreach((json_t *)files, path, text) {
		if (!tt_engine_is_manifest_path(bd->reldir, path))
			continue;
		size_t at;
		int rc = tt_manifest_memo_get(&bd->memo, text, commit, path, &at, NULL, err);
		if (rc < 0)
			return rc;
		c->idx[c->n++] = at;
	}
	sort_by_key(c->idx, c->n, &bd->memo);
	/* One manifest per key (the last file declaring it). */
	size_t w = 0;
	for (size_t r = 0; r < c->n; r++) {
		if (w && !strcmp(bd->memo.items[c->idx[w - 1]].key, bd->memo.items[c->idx[r]].key))
			w--;
		c->idx[w++] = c->idx[r];
	}
	c->n = w;
	return 0;
}

static int history_cb(void *ctx, const char *commit, json_t *files, tt_error *err)
{
	builder *bd = ctx;
	if (strspn(commit, "0") == strlen(commit))
		return 0;  /* jj's virtual root */
	return add_commit(bd, commit, files, err);
}

static int push(json_t *tables, const char *table, json_t *row, tt_error *err)
{
	if (!row || json_array_append_new(json_object_get(tables, table), row) < 0)
		return tt_error_oom(err);
	return 0;
}

static json_t *jstr_or_null(const char *s)
{
	return s && *s ? json_string(s) : json_null();
}

/* Longest parent chain within the exported set (roots and outsiders 0). */
static int ancestry_depth(json_t *infos, json_t **out, tt_error *err)
{
	json_t *depth = json_object();
	json_t *stack = json_array();
	const char *start;
	json_t *info;
	if (!depth || !stack) {
		json_decref(depth);
		json_decref(stack);
		return tt_error_oom(err);
	}
	json_object_foreach(infos, start, info) {
		json_array_append_new(stack, json_string(start));
		while (json_array_size(stack)) {
			const char *c = json_string_value(json_array_get(stack, json_array_size(stack) - 1));
			if (json_object_get(depth, c)) {
				json_array_remove(stack, json_array_size(stack) - 1);
				continue;
			}
			json_t *parents = json_object_get(json_object_get(infos, c), "parents");
			size_t i, pending = 0;
			json_t *p;
			long long best = -1;
			json_array_foreach(parents, i, p) {
				const char *ps = json_string_value(p);
				if (!ps || !json_object_get(infos, ps))
					continue;
				json_t *dp = json_object_get(depth, ps);
				if (!dp) {
					json_array_append_new(stack, json_string(ps));
					pending++;
				} else if (json_integer_value(dp) > best) {
					best = json_integer_value(dp);
				}
			}
			if (pending)
				continue;
			char *name = tt_strdup(c);
			json_object_set_new(depth, name, json_integer(best + 1));
			free(name);
			json_array_remove(stack, json_array_size(stack) - 1);
		}
	}
	json_decref(stack);
	*out = depth;
	return 0;
}

/* Python's tuple order over (depth, committed_at, commit). */
static int rank_cmp(long long da, const char *ta, const char *ca, long long db, const char *tb, const char *cb)
{
	if (da != db)
		return da < db ? -1 : 1;
	int c = strcmp(ta ? ta : "", tb ? tb : "");
	return c ? c : strcmp(ca, cb);
}

static json_t *pin_json(const tt_manifest *m, bool ref)
{
	if (!m->pin_id)
		return json_null();
	return json_string(ref ? m->pin_ref : m->pin_id);
}

static int add_listings(builder *bd, json_t *tables, tt_error *err)
{
	json_t *seen = json_object();
	if (!seen)
		return tt_error_oom(err);
	int rc = 0;
	for (size_t c = 0; rc == 0 && c < bd->ncommits; c++) {
		for (size_t j = 0; rc == 0 && j < bd->commits[c].n; j++) {
			size_t i = bd->commits[c].idx[j];
			const tt_manifest *m = &bd->memo.items[i];
			derived *d = &bd->der[i];
			if (!m->state || !d->identity || !d->content)
				continue;
			char name[TT_LISTING_NAME_MAX];
			if ((rc = tt_listing_name(name, m->kind, d->identity, d->content, err)) < 0)
				break;
			if (json_object_get(seen, name))
				continue;
			json_object_set_new(seen, name, json_true());
			char *path = tt_asprintf("%s/" TT_DIR "/" TT_LISTINGS_DIR "/%s", bd->repo->root, name);
			tt_buf tb = TT_BUF_INIT;
			if (!path) {
				rc = tt_error_oom(err);
				break;
			}
			tt_error ignored = TT_ERROR_INIT;
			int rr = tt_read_file(path, &tb, (size_t)1 << 30, &ignored);
			tt_error_clear(&ignored);
			free(path);
			if (rr < 0 || tt_buf_putc(&tb, '\0') < 0) {
				tt_buf_release(&tb);
				continue;
			}
			char *text = tt_buf_detach(&tb);
			long long count = 0;
			char *save = NULL;
			for (char *line = strtok_r(text, "\n", &save); line && rc == 0; line = strtok_r(NULL, "\n", &save)) {
				if (strspn(line, " \t\r") == strlen(line))
					continue;
				json_error_t je;
				json_t *row = json_loads(line, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
				if (!json_is_object(row)) {
					json_decref(row);
					rc = tt_error_set(err, TT_EPARSE, "listing %s: a line is not a JSON object", name);
					break;
				}
				json_t *p = json_object_get(row, "p"), *k = json_object_get(row, "k"), *s = json_object_get(row, "s");
				char *ktext = k ? (json_is_string(k) ? tt_strdup(json_string_value(k))
								     : tt_reg_cell_text(&entry_cols[2], k, "csv"))
						: NULL;
				json_t *er = json_pack("{s:s,s:o,s:o,s:I}", "listing_name", name, "path",
						       json_is_string(p) ? json_copy(p) : json_string(""), "token",
						       jstr_or_null(ktext), "size",
						       (json_int_t)(json_is_integer(s) ? json_integer_value(s) : 0));
				free(ktext);
				json_decref(row);
				rc = push(tables, "listing_entries", er, err);
				count++;
			}
			free(text);
			if (rc == 0)
				rc = push(tables, "listings",
					  json_pack("{s:s,s:s,s:s,s:s,s:I}", "listing_name", name, "kind", m->kind,
						    "identity_hash", d->ident_hash, "state_hash", d->state_hash, "entries",
						    (json_int_t)count),
					  err);
		}
	}
	json_decref(seen);
	return rc;
}

/* Insertion sort of names (few enough that it does not matter). */
static void sort_names(const char **names, size_t n)
{
	for (size_t a = 1; a < n; a++)
		for (size_t b = a; b > 0 && strcmp(names[b - 1], names[b]) > 0; b--) {
			const char *t = names[b];
			names[b] = names[b - 1];
			names[b - 1] = t;
		}
}

static int add_workspace(tt_repo *repo, json_t *tables, tt_error *err)
{
	const tt_workspace *ws = &repo->ws;
	json_t *keys = json_object();
	const char *k;
	json_t *v;
	if (!keys)
		return tt_error_oom(err);
	json_object_foreach(ws->working_refs, k, v)
		json_object_set_new(keys, k, json_true());
	json_object_foreach(ws->last_snapshot, k, v)
		json_object_set_new(keys, k, json_true());
	size_t n = json_object_size(keys), i = 0;
	const char **sorted = tt_calloc(n + 1, sizeof *sorted);
	if (!sorted) {
		json_decref(keys);
		return tt_error_oom(err);
	}
	json_object_foreach(keys, k, v)
		sorted[i++] = k;
	sort_names(sorted, n);
	int rc = 0;
	for (i = 0; rc == 0 && i < n; i++) {
		json_t *ref = json_object_get(ws->working_refs, sorted[i]);
		json_t *base = json_object_get(ws->base_states, sorted[i]);
		json_t *fork = json_object_get(ws->fork_points, sorted[i]);
		json_t *snap = json_object_get(ws->last_snapshot, sorted[i]);
		rc = push(tables, "workspace",
			  json_pack("{s:s,s:s,s:O,s:O,s:O,s:O}", "workspace_id", ws->workspace_id, "key", sorted[i],
				    "working_ref", ref ? ref : json_null(), "base_state_json", base ? base : json_null(),
				    "fork_point_json", fork ? fork : json_null(), "last_snapshot_json",
				    snap ? snap : json_null()),
			  err);
	}
	free(sorted);
	json_decref(keys);
	return rc;
}

static void builder_release(builder *bd)
{
	for (size_t i = 0; i < bd->nder; i++) {
		free(bd->der[i].canonical);
		json_decref(bd->der[i].row);
		json_decref(bd->der[i].identity);
		json_decref(bd->der[i].content);
	}
	free(bd->der);
	for (size_t i = 0; i < bd->ncommits; i++) {
		free(bd->commits[i].commit);
		free(bd->commits[i].idx);
	}
	free(bd->commits);
	tt_manifest_memo_release(&bd->memo);
	json_decref(bd->seen);
	free(bd->reldir);
}

/* Every exported commit's manifests (the revs asked for, else the whole
 * history), each distinct one derived once. */
static int collect_manifests(builder *bd, const tt_export_opts *o, tt_error *err)
{
	tt_vcs *v = bd->repo->vcs;
	int rc = 0;
	if (o->nrevs) {
		for (size_t i = 0; rc == 0 && i < o->nrevs; i++) {
			char *commit = NULL;
			json_t *files = NULL;
			if ((rc = tt_vcs_resolve(v, o->revs[i], &commit, err)) == 0 &&
			    (rc = tt_vcs_files_at(v, commit, bd->reldir, &files, err)) == 0)
				rc = add_commit(bd, commit, files, err);
			free(commit);
			json_decref(files);
		}
	} else {
		rc = tt_vcs_iter_history_files(v, bd->reldir, history_cb, bd, err);
		if (rc > 0)
			rc = 0;
	}
	if (rc < 0)
		return rc;
	for (size_t i = 0; i < bd->memo.n; i++)
		if ((rc = derive(bd, i, err)) < 0)
			return rc;
	return 0;
}

/* The exported commits' metadata, in one VCS call, into infos
 * (commit -> info). */
static int commit_infos(builder *bd, json_t *infos, tt_error *err)
{
	const char **ids = tt_calloc(bd->ncommits + 1, sizeof *ids);
	json_t *list = NULL, *info;
	size_t li;
	int rc = 0;
	if (!ids)
		return tt_error_oom(err);
	for (size_t i = 0; i < bd->ncommits; i++)
		ids[i] = bd->commits[i].commit;
	if (bd->ncommits && (rc = tt_vcs_commit_info(bd->repo->vcs, ids, bd->ncommits, &list, err)) < 0)
		goto out;
	json_array_foreach(list, li, info) {
		const char *id = json_string_value(json_object_get(info, "commit_id"));
		if (id)
			json_object_set(infos, id, info);
	}
out:
	free(ids);
	json_decref(list);
	return rc;
}

/* The VCS's current revision; NULL when it has none to tell. */
static char *current_head(tt_vcs *v)
{
	char *head = NULL;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_vcs_current_rev(v, &head, &ignored) < 0)
		head = NULL;
	tt_error_clear(&ignored);
	return head;
}

/* One commit's commits row (with the hash of its object set) and its
 * commit_parents rows. */
static int commit_rows(builder *bd, json_t *tables, const commit_objs *co, json_t *info, tt_error *err)
{
	tt_keyed_canon *kc = tt_calloc(co->n + 1, sizeof *kc);
	char mh[65];
	int rc;
	if (!kc)
		return tt_error_oom(err);
	for (size_t j = 0; j < co->n; j++) {
		kc[j].key = bd->memo.items[co->idx[j]].key;
		kc[j].canonical = bd->der[co->idx[j]].canonical;
	}
	rc = tt_manifest_hash_of(mh, kc, co->n, err);
	free(kc);
	if (rc < 0)
		return rc;
	json_t *row = json_pack("{s:s,s:O,s:O,s:O,s:O,s:O,s:O,s:s}", "commit_id", co->commit, "change_id",
				json_object_get(info, "change_id") ? json_object_get(info, "change_id") : json_null(),
				"author_name", json_object_get(info, "author_name"), "author_email",
				json_object_get(info, "author_email"), "authored_at",
				json_object_get(info, "authored_at"), "committed_at",
				json_object_get(info, "committed_at"), "message", json_object_get(info, "message"),
				"manifest_hash", mh);
	if ((rc = push(tables, "commits", row, err)) < 0)
		return rc;
	size_t pi;
	json_t *p;
	json_array_foreach(json_object_get(info, "parents"), pi, p)
		if ((rc = push(tables, "commit_parents",
			       json_pack("{s:s,s:O,s:I}", "commit_id", co->commit, "parent_id", p, "position",
					 (json_int_t)pi),
			       err)) < 0)
			return rc;
	return 0;
}

/* The objects columns a distinct manifest shares across commits (d->row),
 * built the first time a commit records it. */
static int shared_object_row(const tt_manifest *m, derived *d, tt_error *err)
{
	if (d->row)
		return 0;
	json_t *uri = json_object_get(m->locator, "uri");
	d->row = json_pack("{s:s,s:s,s:O,s:O,s:O,s:o,s:s,s:s,s:O,s:o,s:o,s:o,s:b,s:o}", "key", m->key, "kind",
			   m->kind, "uri", uri ? uri : json_null(), "locator_json", m->locator, "identity_json",
			   d->identity ? d->identity : json_null(), "identity_hash", jstr_or_null(d->ident_hash),
			   "policy_file", m->policy.file, "policy_pin", m->policy.pin, "state_json",
			   m->state ? m->state : json_null(), "state_hash", jstr_or_null(d->state_hash), "pin_id",
			   pin_json(m, false), "pin_ref", pin_json(m, true), "recoverable", m->recoverable,
			   "captured_at", jstr_or_null(m->captured_at));
	if (!d->row)
		return tt_error_oom(err);
	return 0;
}

/* Where a commit records a state: its rank, and the info it was read from. */
typedef struct state_seen {
	const char *commit;
	json_t *info;
	const char *committed_at;
	long long depth;
} state_seen;

/* Record m's state in states (keyed as Python's (kind, identity_hash,
 * state_hash) tuple), keeping the earliest-ranked commit that records it. */
static int note_state(json_t *states, const tt_manifest *m, const derived *d, const state_seen *at,
		      tt_error *err)
{
	json_t *skey = json_pack("[s,s,s]", m->kind, d->ident_hash, d->state_hash);
	tt_buf kb = TT_BUF_INIT;
	tt_json_canonical(&kb, skey);
	json_decref(skey);
	tt_buf_putc(&kb, '\0');
	json_t *prev = kb.failed ? NULL : json_object_get(states, kb.ptr);
	bool better = !prev;
	if (prev)
		better = rank_cmp(at->depth, at->committed_at, at->commit,
				  json_integer_value(json_object_get(prev, "_depth")),
				  json_string_value(json_object_get(prev, "first_committed_at")),
				  json_string_value(json_object_get(prev, "first_commit_id"))) < 0;
	if (better && !kb.failed) {
		json_t *pin = m->pin_id ? json_string(m->pin_id)
					: json_incref(prev ? json_object_get(prev, "pin_id") : json_null());
		json_t *srow = json_pack("{s:s,s:o,s:s,s:O,s:O,s:o,s:s,s:O,s:I}", "kind", m->kind, "identity_hash",
					 jstr_or_null(d->ident_hash), "state_hash", d->state_hash, "identity_json",
					 d->identity ? d->identity : json_null(), "state_json", m->state, "pin_id",
					 pin ? pin : json_null(), "first_commit_id", at->commit, "first_committed_at",
					 json_object_get(at->info, "committed_at"), "_depth", (json_int_t)at->depth);
		if (!srow || json_object_set_new(states, kb.ptr, srow) < 0) {
			tt_buf_release(&kb);
			return tt_error_oom(err);
		}
	}
	int failed = kb.failed;
	tt_buf_release(&kb);
	if (failed)
		return tt_error_oom(err);
	return 0;
}

/* One commit's objects rows, and the distinct states they record. */
static int object_rows(builder *bd, json_t *tables, json_t *states, const commit_objs *co, json_t *info,
		       json_t *depth, tt_error *err)
{
	state_seen at = { .commit = co->commit, .info = info,
			  .committed_at = json_string_value(json_object_get(info, "committed_at")),
			  .depth = json_integer_value(json_object_get(depth, co->commit)) };
	int rc;
	for (size_t j = 0; j < co->n; j++) {
		const tt_manifest *m = &bd->memo.items[co->idx[j]];
		derived *d = &bd->der[co->idx[j]];
		if ((rc = shared_object_row(m, d, err)) < 0)
			return rc;
		json_t *row = json_pack("{s:s,s:O}", "commit_id", co->commit, TT_REG_SHARED, d->row);
		if ((rc = push(tables, "objects", row, err)) < 0)
			return rc;
		if (!m->state || !d->content)
			continue;
		if ((rc = note_state(states, m, d, &at, err)) < 0)
			return rc;
	}
	return 0;
}

/* The object_states rows, in the order of their keys. */
static int state_rows(json_t *tables, json_t *states, tt_error *err)
{
	size_t n = json_object_size(states), i = 0;
	const char **keys = tt_calloc(n + 1, sizeof *keys);
	const char *k;
	json_t *sv;
	int rc = 0;
	if (!keys)
		return tt_error_oom(err);
	json_object_foreach(states, k, sv)
		keys[i++] = k;
	/* The canonical [kind, ident, state] text sorts as the tuple does
	 * (hex hashes and kind names hold no escapes). */
	sort_names(keys, n);
	for (i = 0; rc == 0 && i < n; i++) {
		json_t *row = json_copy(json_object_get(states, keys[i]));
		json_object_del(row, "_depth");
		rc = push(tables, "object_states", row, err);
	}
	free(keys);
	return rc;
}

/* The refs rows: the VCS's refs that point at exported commits. */
static int ref_rows(builder *bd, json_t *tables, json_t *infos, tt_error *err)
{
	json_t *refs = NULL, *r;
	size_t li;
	int rc;
	if ((rc = tt_vcs_refs(bd->repo->vcs, &refs, err)) < 0)
		goto out;
	json_array_foreach(refs, li, r) {
		const char *cid = json_string_value(json_object_get(r, "commit_id"));
		if (cid && json_object_get(bd->seen, cid) && json_object_get(infos, cid) &&
		    (rc = push(tables, "refs", json_pack("{s:O,s:O,s:s}", "name", json_object_get(r, "name"), "kind",
							 json_object_get(r, "kind"), "commit_id", cid),
			       err)) < 0)
			goto out;
	}
out:
	json_decref(refs);
	return rc;
}

/* The tether_meta rows; stamps out->exported_at. */
static int meta_rows(tt_vcs *v, json_t *tables, tt_bundle *out, tt_error *err)
{
	int rc = 0;
	tt_now_iso_seconds(out->exported_at);
	char sv[8];
	snprintf(sv, sizeof sv, "%d", TT_REG_SCHEMA_VERSION);
	const char *meta[][2] = { { "schema_version", sv }, { "exported_at", out->exported_at },
				  { "head", out->head }, { "vcs", tt_vcs_kind(v) }, { "tether_version", tt_version() } };
	for (size_t i = 0; rc == 0 && i < sizeof meta / sizeof meta[0]; i++)
		rc = push(tables, "tether_meta", json_pack("{s:s,s:s?}", "key", meta[i][0], "value", meta[i][1]), err);
	return rc;
}

int tt_registry_build(tt_repo *repo, const tt_export_opts *o, tt_bundle *out, tt_error *err)
{
	builder bd = { .repo = repo };
	json_t *tables = json_object(), *infos = json_object(), *depth = NULL;
	json_t *states = json_object();
	int rc = 0;
	memset(out, 0, sizeof *out);
	bd.reldir = tt_engine_objects_reldir(repo);
	bd.seen = json_object();
	if (!tables || !infos || !states || !bd.reldir || !bd.seen) {
		rc = tt_error_oom(err);
		goto done;
	}
	for (size_t t = 0; t < tt_reg_ntables; t++)
		json_object_set_new(tables, tt_reg_tables[t].name, json_array());
	tt_engine_prepare(repo);

	if ((rc = collect_manifests(&bd, o, err)) < 0 || (rc = commit_infos(&bd, infos, err)) < 0 ||
	    (rc = ancestry_depth(infos, &depth, err)) < 0)
		goto done;
	out->head = current_head(repo->vcs);
	/* Commits without metadata are left out of every table. */
	for (size_t c = 0; c < bd.ncommits; c++) {
		json_t *info = json_object_get(infos, bd.commits[c].commit);
		if (info && (rc = commit_rows(&bd, tables, &bd.commits[c], info, err)) < 0)
			goto done;
	}
	for (size_t c = 0; c < bd.ncommits; c++) {
		json_t *info = json_object_get(infos, bd.commits[c].commit);
		if (info && (rc = object_rows(&bd, tables, states, &bd.commits[c], info, depth, err)) < 0)
			goto done;
	}
	if ((rc = state_rows(tables, states, err)) < 0 || (rc = ref_rows(&bd, tables, infos, err)) < 0)
		goto done;
	if (o->listings && (rc = add_listings(&bd, tables, err)) < 0)
		goto done;
	if (o->workspace && (rc = add_workspace(repo, tables, err)) < 0)
		goto done;
	rc = meta_rows(repo->vcs, tables, out, err);
done:
	json_decref(infos);
	json_decref(depth);
	json_decref(states);
	builder_release(&bd);
	if (rc < 0) {
		json_decref(tables);
		free(out->head);
		out->head = NULL;
	} else {
		out->tables = tables;
	}
	return rc;
}

void tt_bundle_release(tt_bundle *b)
{
	json_decref(b->tables);
	free(b->head);
	memset(b, 0, sizeof *b);
}

