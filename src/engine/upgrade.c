/*
 * engine/upgrade.c - `upgrade`: bring a dataset an older tether-vcs wrote
 * to format 5 (TT_CONFIG_VERSION), as tether-vcs 0.1.0b7's one migration
 * does: its parts run on what the dataset shows, tether.toml records the
 * new version once at the end, and one VCS commit lands it.
 *
 * This build carries the parts a 0.1.0b1-b3 dataset (version 4) needs when
 * 0.1.0b3 left nothing under an old identity or state (no `file`, Neon or
 * DuckLake objects, no created/touched-store index records, every local
 * path absolute): the version changes and nothing else.  A dataset that
 * needs any other part (the alpha formats' ref renames and history
 * rewrites, content-hashed file states, manifest moves, identity and state
 * rewrites) is refused before anything is written, naming the part and
 * tether-vcs 0.1.0b7's `tether upgrade`, which does them all.
 */
#include <stdlib.h>
#include <string.h>

#include "core/config.h"
#include "core/layout.h"
#include "core/tomlfile.h"
#include "core/oplog.h"
#include "core/plan.h"
#include "engine/engine.h"
#include "util/fault.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/toml.h"

/* [tether] version tether.toml's text records (1 when absent), or -1
 * when it cannot be read. */
static long long version_in(const char *text, size_t len)
{
	tt_error ig = TT_ERROR_INIT;
	toml_value *doc = NULL;
	const toml_value *tether = NULL;
	int64_t version = 1;
	long long out = -1;
	if (text && toml_parse(&doc, text, len, TT_CONFIG_FILENAME, &ig) == 0 &&
	    tt_toml_get_table(doc, "tether", &tether, TT_CONFIG_FILENAME, "", &ig) == 0 &&
	    tt_toml_get_int(tether, "version", &version, TT_CONFIG_FILENAME, "[tether]", &ig) == 0)
		out = (long long)version;
	toml_free(doc);
	tt_error_clear(&ig);
	return out;
}

/* [tether] version of the dataset at or above start (1 when absent), or
 * -1 when it cannot be read (opening then says why). */
static long long recorded_version(const char *start)
{
	char *root = tt_find_dataset_root(start), *path = root ? tt_config_path(root) : NULL;
	tt_buf text = TT_BUF_INIT;
	tt_error ig = TT_ERROR_INIT;
	long long out = -1;
	if (path && tt_read_file(path, &text, 4 << 20, &ig) == 0)
		out = version_in(text.ptr, text.len);
	tt_error_clear(&ig);
	tt_buf_release(&text);
	free(path);
	free(root);
	return out;
}

/* The dataset's path relative to the VCS root ("" at the root). */
static char *dataset_rel(tt_repo *repo)
{
	size_t n = strlen(repo->vcs->root);
	return strncmp(repo->root, repo->vcs->root, n) == 0 && repo->root[n] == '/' ? tt_strdup(repo->root + n + 1)
										      : tt_strdup("");
}

/*
 * The version the last commit's tether.toml records when it is older than
 * the working tree's current one: an upgrade killed after writing
 * tether.toml and before its VCS commit landed (0 when there is none).
 */
static int interrupted_from(tt_repo *repo)
{
	char *rel = dataset_rel(repo), *path = NULL, *head = NULL, *text = NULL;
	size_t len = 0;
	long long v = 0;
	tt_error ig = TT_ERROR_INIT;
	if (rel && (path = *rel ? tt_asprintf("%s/%s", rel, TT_CONFIG_FILENAME) : tt_strdup(TT_CONFIG_FILENAME)) &&
	    (head = tt_engine_vcs_head(repo)) &&
	    repo->vcs->ops->read_file_at(repo->vcs, head, path, &text, &len, &ig) == 0 && text)
		v = version_in(text, len);
	tt_error_clear(&ig);
	free(rel);
	free(path);
	free(head);
	free(text);
	return v > 0 && v < TT_CONFIG_VERSION && repo->config.version >= TT_CONFIG_VERSION ? (int)v : 0;
}

int tt_repo_open_outdated(tt_repo **out, const char *start_dir, tt_error *err)
{
	long long v = recorded_version(start_dir ? start_dir : ".");
	*out = NULL;
	if (v >= 0 && v < 4) {
		/* an alpha format: what it needs (ref renames, history rewrites,
		 * content-hashed states) is more than this build carries */
		tt_error_set(err, TT_ECONFIG,
			     "this dataset (tether.toml version %lld) needs upgrade parts this tether does not build: "
			     "dataset-namespaced refs; content-hashed file states; no write policy", v);
		return tt_error_hint(err, "run the upgrade with tether-vcs 0.1.0b7 (`pip install tether-vcs==0.1.0b7`, "
					  "then `tether upgrade --dry-run` and `tether upgrade`); nothing was written");
	}
	tt_config_accept_outdated(true);
	int rc = tt_repo_open(out, start_dir, err);
	tt_config_accept_outdated(false);
	return rc;
}

/* Why this build cannot bring the dataset forward, or NULL. */
static char *unsupported(tt_repo *repo)
{
	int v = repo->config.version;
	if (v < 4)
		return tt_strdup("dataset-namespaced refs; content-hashed file states; no write policy");
	/* one manifest file per key; absolute local paths */
	for (size_t i = 0; i < repo->objects.n; i++) {
		const tt_manifest *m = &repo->objects.items[i];
		json_t *copy = json_deep_copy(m->locator);
		tt_error ig = TT_ERROR_INIT;
		bool moved = copy && tt_absolutize_locator(copy, m->kind, repo->root, &ig) == 0 &&
			     !json_equal(copy, m->locator);
		json_decref(copy);
		tt_error_clear(&ig);
		if (moved)
			return tt_asprintf("one manifest file per key; absolute local paths (%s names a relative path)",
					   m->key);
	}
	/* 0.1.0b3 identities and states */
	static const char *const rewritten[] = { "file", "neon", "ducklake" };
	for (size_t i = 0; i < repo->objects.n; i++)
		for (size_t k = 0; k < 3; k++)
			if (strcmp(repo->objects.items[i].kind, rewritten[k]) == 0)
				return tt_asprintf("0.1.0b3 identities and states (%s is a %s object)",
						   repo->objects.items[i].key, rewritten[k]);
	static const char *const indexes[] = { "tether-touched.jsonl", "tether-created.jsonl" };
	for (size_t k = 0; k < 2; k++) {
		char *path = tt_path_join(repo->vcs->shared_dir, indexes[k]);
		tt_buf b = TT_BUF_INIT;
		tt_error ig = TT_ERROR_INIT;
		bool changed = false;
		json_t *seen = json_object();
		if (path && seen && tt_is_file(path) && tt_read_file(path, &b, 64u << 20, &ig) == 0) {
			/* a record whose identity its store no longer gives (or that
			 * collapses onto an earlier one) is rewritten by 0.1.0b4 */
			for (char *line = b.ptr, *end = b.ptr + b.len; line && line < end;) {
				char *nl = memchr(line, '\n', (size_t)(end - line));
				size_t len = nl ? (size_t)(nl - line) : (size_t)(end - line);
				json_t *r = len ? json_loadb(line, len, 0, NULL) : NULL;
				const char *ds = json_string_value(json_object_get(r, "dataset_id"));
				const char *kind = json_string_value(json_object_get(r, "kind"));
				json_t *identity = json_incref(json_object_get(r, "identity"));
				tt_backend *be;
				if (r && ds && kind && strcmp(ds, repo->config.dataset_id) == 0 &&
				    tt_engine_backend(repo, kind, &be, &ig) == 0) {
					json_t *now = NULL, *loc = json_object_get(r, "locator");
					json_t *l = json_is_object(loc) ? loc : json_object();
					if (be->ops->identity(be, l, &now, &ig) == 0 && !json_equal(now, identity)) {
						changed = true;
					}
					if (now) {
						json_decref(identity);
						identity = now;
					}
					if (l != loc)
						json_decref(l);
				}
				tt_error_clear(&ig);
				tt_buf tag = TT_BUF_INIT;
				json_t *t = json_pack("[s?,s?,O?]", ds, kind, identity);
				if (t && tt_json_canonical(&tag, t) == 0 && tag.ptr) {
					if (json_object_get(seen, tag.ptr))
						changed = true;
					json_object_set(seen, tag.ptr, json_true());
				}
				json_decref(t);
				tt_buf_release(&tag);
				json_decref(identity);
				json_decref(r);
				line = nl ? nl + 1 : NULL;
			}
		}
		json_decref(seen);
		free(path);
		tt_buf_release(&b);
		tt_error_clear(&ig);
		bool records = changed;
		if (records)
			return tt_asprintf("0.1.0b3 identities and states (the store index %s records identities)",
					   indexes[k]);
	}
	return NULL;
}

static int plan_upgrade(tt_repo *repo, bool ignore_immutable, tt_plan **out, tt_error *err)
{
	int from = repo->config.version;
	tt_plan *plan = tt_plan_new("upgrade");
	char *why = NULL;
	int rc = 0;
	*out = NULL;
	if (!plan)
		return tt_error_oom(err);
	bool pending = from < TT_CONFIG_VERSION;
	json_t *ctx = json_pack("{s:i,s:i,s:b,s:[]}", "from", from, "to", TT_CONFIG_VERSION, "ignore_immutable",
				ignore_immutable, "steps");
	if (pending)
		json_array_append_new(json_object_get(ctx, "steps"),
				      json_sprintf("v%d: Bring an older dataset to the current format", TT_CONFIG_VERSION));
	const char *k;
	json_t *v;
	json_object_foreach(ctx, k, v) tt_plan_set_context(plan, k, v, err);
	json_decref(ctx);
	json_t *x = json_integer(from);
	char detail[160];
	snprintf(detail, sizeof detail,
		 "plan was made for version %d, the dataset is at {observed}; re-run the plan", from);
	tt_plan_require(plan, "config_version", x, NULL, NULL, detail, err);
	json_decref(x);
	if (!pending) {
		char note[200];
		int was = interrupted_from(repo);
		if (was)
			snprintf(note, sizeof note, "already at version %d; an interrupted upgrade from version %d left "
				 "tether.toml uncommitted: its VCS commit is made now", from, was);
		else
			snprintf(note, sizeof note, "already at version %d", from);
		tt_plan_note(plan, note, err);
		goto done;
	}
	if ((why = unsupported(repo)) != NULL) {
		rc = tt_error_set(err, TT_ECONFIG,
				  "this dataset (tether.toml version %d) needs upgrade parts this tether does not build: %s",
				  from, why);
		tt_error_hint(err, "run the upgrade with tether-vcs 0.1.0b7 (`pip install tether-vcs==0.1.0b7`, then "
				   "`tether upgrade --dry-run` and `tether upgrade`); nothing was written");
		goto done;
	}
	static const char part[] = "0.1.0b3 identities and states";
	json_t *parts = json_pack("[s]", part);
	tt_plan_set_context(plan, "parts", parts, err);
	json_decref(parts);
	tt_plan_note(plan, "0.1.0b3 left nothing under an old identity or state: only the version changes (which "
			   "also stops a 0.1.0b3 from opening the dataset)", err);
	char target[64], d[160];
	snprintf(target, sizeof target, "tether upgrade: v%d -> v%d", from, TT_CONFIG_VERSION);
	snprintf(d, sizeof d, "tether.toml records version = %d after: %s", TT_CONFIG_VERSION, part);
	json_t *params = json_pack("{s:i}", "migration", TT_CONFIG_VERSION);
	tt_plan_action(plan, "vcs-commit", NULL, NULL, target, d, params, err);
	json_decref(params);
done:
	free(why);
	if (rc == 0 && (rc = err->code) == 0)
		*out = plan;
	else
		tt_plan_free(plan);
	return rc;
}

static json_t *report(int from, const char *vcs_commit)
{
	return json_pack("{s:i,s:i,s:{},s:{},s:{},s:[],s:[],s:{},s:[],s:{},s:s?}", "from_version", from, "to_version",
			 TT_CONFIG_VERSION, "renamed_pins", "renamed_branches", "rewritten_commits", "refingerprinted",
			 "rewritten_manifests", "rewritten_indexes", "copied_listings", "failed", "vcs_commit", vcs_commit);
}

static int apply_upgrade(tt_repo *repo, const tt_plan *plan, json_t **out, tt_error *err)
{
	int from = repo->config.version, rc;
	char *commit = NULL, *objrel = NULL, *rel = NULL;
	json_t *pj = NULL, *result = NULL;
	const json_t *planned = json_object_get(tt_plan_context(plan), "from");
	if ((rc = tt_engine_check_preconditions(repo, plan, "upgrade", err)) < 0)
		return rc;
	if (!json_is_integer(planned) || json_integer_value(planned) != from)
		return tt_error_set(err, TT_ESTALEPLAN, "plan was made for version %lld, the dataset is at %d; re-run the plan",
				    (long long)json_integer_value(planned), from);
	int resumed = from >= TT_CONFIG_VERSION ? interrupted_from(repo) : 0;
	if (from >= TT_CONFIG_VERSION && !resumed) {
		*out = report(from, NULL);
		return *out ? 0 : tt_error_oom(err);
	}
	if (resumed)
		from = resumed;  /* finish it: the commit and the journal record */
	char *why = resumed ? NULL : unsupported(repo);
	if (why) {
		rc = tt_error_set(err, TT_ECONFIG, "this dataset needs upgrade parts this tether does not build: %s", why);
		free(why);
		return rc;
	}
	/* The manifests must be committed. */
	rel = dataset_rel(repo);
	objrel = rel ? (*rel ? tt_asprintf("%s/.tether/objects", rel) : tt_strdup(".tether/objects")) : NULL;
	if (!objrel) {
		rc = tt_error_oom(err);
		goto done;
	}
	bool dirty = false;
	if ((rc = repo->vcs->ops->dirty(repo->vcs, (const char *const[]){ objrel }, 1, &dirty, err)) < 0)
		goto done;
	if (dirty) {
		rc = tt_error_set(err, TT_ECONFIG, "the dataset's manifests have uncommitted changes; commit or restore them "
						   "before upgrading");
		goto done;
	}
	repo->config.version = TT_CONFIG_VERSION;
	if ((rc = tt_config_save(&repo->config, repo->root, err)) < 0 ||
	    (rc = tt_ensure_ignored(repo->root, false, err)) < 0)
		goto done;
	tt_fault("upgrade:after-config");
	char *paths[4] = { NULL };
	size_t np = 0;
	paths[np++] = tt_strdup(objrel);
	paths[np++] = *rel ? tt_asprintf("%s/.tether/.gitignore", rel) : tt_strdup(".tether/.gitignore");
	paths[np++] = *rel ? tt_asprintf("%s/tether.toml", rel) : tt_strdup("tether.toml");
	char *listings = tt_tether_path(repo->root, TT_LISTINGS_DIR);
	if (listings && tt_is_dir(listings))
		paths[np++] = *rel ? tt_asprintf("%s/.tether/listings", rel) : tt_strdup(".tether/listings");
	free(listings);
	for (size_t i = 0; i < np; i++)
		if (!paths[i])
			rc = tt_error_oom(err);
	if (rc == 0 && (rc = repo->vcs->ops->dirty(repo->vcs, (const char *const *)paths, np, &dirty, err)) == 0 &&
	    dirty) {
		char msg[64];
		snprintf(msg, sizeof msg, "tether upgrade: v%d -> v%d", from, TT_CONFIG_VERSION);
		rc = repo->vcs->ops->commit(repo->vcs, (const char *const *)paths, np, msg, repo->ws.bookmark, &commit, err);
	}
	for (size_t i = 0; i < np; i++)
		free(paths[i]);
	if (rc < 0)
		goto done;
	tt_fault("upgrade:after-vcs-commit");
	result = report(from, commit);
	pj = tt_plan_to_object(plan, err);
	if (!result || !pj) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_oplog_record_plan(repo->root, "upgrade", pj, result, NULL, NULL, NULL, err)) < 0)
		goto done;
	*out = result;
	result = NULL;
done:
	free(commit);
	free(objrel);
	free(rel);
	json_decref(pj);
	json_decref(result);
	return rc;
}

int tt_repo_upgrade(tt_repo *repo, bool ignore_immutable, bool dry_run, const char *from_plan, size_t from_len,
		    char **plan_json, char **plan_text, json_t **out, tt_error *err)
{
	tt_plan *plan = NULL;
	int rc;
	*out = NULL;
	if (from_plan) {
		if ((rc = tt_plan_from_json(&plan, from_plan, from_len, err)) < 0)
			return rc;
	} else if ((rc = plan_upgrade(repo, ignore_immutable, &plan, err)) < 0) {
		return rc;
	}
	if (dry_run && !from_plan) {
		tt_buf jb = TT_BUF_INIT, tb = TT_BUF_INIT;
		if ((rc = tt_plan_to_json(plan, &jb, err)) == 0 && (rc = tt_plan_render_text(plan, &tb, err)) == 0) {
			*plan_json = tt_buf_detach(&jb);
			*plan_text = tt_buf_detach(&tb);
		}
		tt_buf_release(&jb);
		tt_buf_release(&tb);
		tt_plan_free(plan);
		return rc;
	}
	if ((rc = tt_repo_lock(repo, err)) == 0) {
		/* the lock re-reads the checkout; the version stays as loaded */
		rc = apply_upgrade(repo, plan, out, err);
		tt_repo_unlock(repo);
	}
	tt_plan_free(plan);
	return rc;
}
