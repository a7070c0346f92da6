/*
 * engine/cmd/bookmarks.c - bookmarks as a whole: `tether bookmarks` lists them
 * (trunk or not, head, working branches per object, the live checkouts on
 * each, created and expires), sets or clears one's expiry, and `gc
 * --expired` drops the expired ones through `drop`'s own plan and apply.
 *
 * An expiry is committed with the bookmark it belongs to, as the file
 * .tether/bookmarks/<name>.toml on that bookmark's branch, so every clone
 * that has the bookmark has its expiry, and tether-vcs (which reads only
 * tether.toml, .tether/objects and .tether/listings) never sees it.  A
 * bookmark's expiry is the file named after it at its own head; a file of
 * another name (a bookmark it was made from, or one landed into it) says
 * nothing about it.  The trunk never expires, whatever a file says.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/layout.h"
#include "core/ids.h"
#include "core/oplog.h"
#include "core/pyvalue.h"
#include "backends/dispatch.h"
#include "engine/kernel/checkouts.h"
#include "engine/kernel/context.h"
#include "engine/kernel/repo.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "util/toml.h"
#include "util/when.h"
#include "vcs/dispatch.h"
#include "engine/kernel/refnames.h"
#include "engine/cmd/drop.h"

#define BOOKMARKS_DIR "bookmarks"

/* "<dataset rel>/.tether/bookmarks", relative to the VCS root. */
static char *expiry_reldir(const tt_repo *repo)
{
	return tt_path_join(tt_engine_dataset_rel(repo), TT_DIR "/" BOOKMARKS_DIR);
}

/* Whether name can be a path under the bookmarks directory: no empty, "."
 * or ".." component (the VCS refuses those names anyway). */
static bool path_safe(const char *name)
{
	const char *p = name;
	if (!*p || *p == '/')
		return false;
	while (*p) {
		size_t l = strcspn(p, "/");
		if (l == 0 || (l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
			return false;
		p += l;
		if (*p == '/' && !*++p)
			return false;
	}
	return true;
}

/* A time value of the file: an offset date-time, or a string in ISO form. */
static bool file_time(const tt_toml_value *t, const char *key, int64_t *out)
{
	const tt_toml_value *v = tt_toml_table_get(t, key);
	if (!v)
		return false;
	if (tt_toml_type_of(v) == TT_TOML_DATETIME)
		return tt_when_iso(tt_toml_datetime(v), out);
	if (tt_toml_type_of(v) == TT_TOML_STRING)
		return tt_when_iso(tt_toml_string(v, NULL), out);
	return false;
}

/* {created, expires} (ISO strings; created may be null) from an expiry
 * file's text, or NULL when it names another bookmark or has no expiry.
 * A file that does not parse is warned about once, naming it. */
static json_t *parse_expiry(tt_repo *repo, const char *name, const char *text, size_t len, const char *where)
{
	tt_toml_value *doc = NULL;
	tt_error e = TT_ERROR_INIT;
	json_t *out = NULL;
	int64_t created = 0, expires = 0;
	if (tt_toml_parse(&doc, text, len, where, &e) < 0) {
		tt_engine_warn(repo, tt_asprintf("%s; the bookmark's expiry is not read (fix or remove the file and "
						 "commit it)", tt_error_text(&e)));
		goto done;
	}
	const tt_toml_value *b = tt_toml_table_get(doc, "bookmark");
	if (!b || tt_toml_type_of(b) != TT_TOML_STRING || strcmp(tt_toml_string(b, NULL), name) != 0)
		goto done;
	if (!file_time(doc, "expires", &expires)) {
		tt_engine_warn(repo, tt_asprintf("%s: no `expires` time in ISO 8601 form; the bookmark's expiry is not "
						 "read (`tether bookmarks %s --ttl DURATION` writes it anew)", where, name));
		goto done;
	}
	char c[TT_WHEN_ISO_LEN], x[TT_WHEN_ISO_LEN];
	bool has_created = file_time(doc, "created", &created);
	tt_when_format(c, sizeof c, created);
	tt_when_format(x, sizeof x, expires);
	out = json_pack("{s:s?,s:s}", "created", has_created ? c : NULL, "expires", x);
done:
	tt_toml_free(doc);
	tt_error_clear(&e);
	return out;
}

/* {name: {created, expires}} for the bookmarks of marks ({name: head})
 * with an expiry at their head, through one reader.  The trunk is left
 * out. */
static int read_expiries(tt_repo *repo, const json_t *marks, json_t **out, tt_error *err)
{
	const char *trunk = tt_config_trunk(&repo->config);
	char *reldir = expiry_reldir(repo);
	const char **revs = tt_calloc(json_object_size(marks) + 1, sizeof *revs);
	json_t *files_by = NULL;
	size_t n = 0;
	int rc = 0;
	*out = json_object();
	if (!reldir || !revs || !*out) {
		rc = tt_error_oom(err);
		goto done;
	}
	const char *name;
	json_t *head;
	json_object_foreach((json_t *)marks, name, head) {
		if (strcmp(name, trunk) != 0 && json_is_string(head))
			revs[n++] = json_string_value(head);
	}
	if (n && (rc = tt_vcs_files_at_many(repo->vcs, revs, n, reldir, &files_by, err)) < 0)
		goto done;
	json_object_foreach((json_t *)marks, name, head) {
		if (strcmp(name, trunk) == 0 || !json_is_string(head) || !path_safe(name))
			continue;
		json_t *files = json_object_get(files_by, json_string_value(head));
		char *path = tt_asprintf("%s/%s.toml", reldir, name);
		json_t *text = path ? json_object_get(files, path) : NULL;
		if (json_is_string(text)) {
			char *where = tt_asprintf("%.12s:%s", json_string_value(head), path);
			json_t *x = parse_expiry(repo, name, json_string_value(text), json_string_length(text),
						 where ? where : path);
			if (x)
				json_object_set_new(*out, name, x);
			free(where);
		}
		free(path);
	}
done:
	if (rc < 0) {
		json_decref(*out);
		*out = NULL;
	}
	free(reldir);
	free(revs);
	json_decref(files_by);
	return rc;
}

static int64_t now_seconds(void)
{
	return (int64_t)time(NULL);
}

/* The branch the trunk writes for m (its upstream), or NULL. */
static char *upstream_branch(tt_backend *b, const tt_manifest *m)
{
	char *out = NULL;
	if (tt_backend_has(b, base_branch)) {
		tt_error ig = TT_ERROR_INIT;
		if (tt_backend_base_branch(b, m->locator, &out, &ig) < 0)
			out = NULL;
		tt_error_clear(&ig);
		return out;
	}
	json_t *branch = json_object_get(m->locator, "branch");
	return tt_strdup(json_is_string(branch) ? json_string_value(branch) : "main");
}

/* Add ref under entry.working_refs[key] (a sorted list without repeats). */
static void add_ref(json_t *entry, const char *key, const char *ref)
{
	json_t *refs = json_object_get(entry, "working_refs"), *list = json_object_get(refs, key);
	if (!list) {
		list = json_array();
		json_object_set_new(refs, key, list);
	}
	if (!tt_json_has_string(list, ref))
		json_array_append_new(list, json_string(ref));
}

/* Each forkable object's working branches, attributed to the bookmarks of
 * by_name ({name: entry}) by their slug; the trunk's are its upstream
 * branches.  A store that cannot be listed goes into errors. */
static int store_refs(tt_repo *repo, json_t *by_name, const char *trunk, json_t *errors, tt_error *err)
{
	json_t *slugs = json_object();  /* slug -> name */
	const char *name;
	json_t *entry;
	int rc = 0;
	if (!slugs)
		return tt_error_oom(err);
	json_object_foreach(by_name, name, entry) {
		char *slug = NULL;
		if ((rc = tt_bookmark_slug(&slug, name, err)) < 0)
			goto done;
		json_object_set_new(slugs, slug, json_string(name));
		free(slug);
	}
	for (size_t i = 0; i < repo->objects.n; i++) {
		const tt_manifest *m = &repo->objects.items[i];
		tt_backend *b;
		tt_error e = TT_ERROR_INIT;
		json_t *refs = NULL;
		if (tt_engine_backend(repo, m->kind, &b, &e) < 0 || !(tt_engine_caps(repo, m) & TT_CAP_FORK)) {
			tt_error_clear(&e);
			continue;
		}
		char *up = upstream_branch(b, m);
		json_t *te = json_object_get(by_name, trunk);
		if (up && te)
			add_ref(te, m->key, up);
		free(up);
		if (!tt_backend_has(b, list_working_refs))
			continue;
		if (tt_backend_list_working_refs(b, m->locator, &refs, &e) < 0) {
			json_object_set_new(errors, m->key, json_string(tt_error_text(&e)));
			tt_error_clear(&e);
			continue;
		}
		size_t r;
		json_t *rv;
		json_array_foreach(refs, r, rv) {
			tt_ref_parts parts;
			const char *ref = json_string_value(rv);
			if (!ref || !tt_working_ref_parts(ref, &parts))
				continue;
			const char *owner = parts.slug && strcmp(parts.ds, repo->config.dataset_id) == 0
						    ? json_string_value(json_object_get(slugs, parts.slug))
						    : NULL;
			if (owner)
				add_ref(json_object_get(by_name, owner), m->key, ref);
			tt_ref_parts_release(&parts);
		}
		json_decref(refs);
	}
done:
	json_decref(slugs);
	return rc;
}

int tt_repo_list_bookmarks(tt_repo *repo, bool stores, json_t **out, tt_error *err)
{
	const char *trunk = tt_config_trunk(&repo->config);
	json_t *marks = NULL, *expiries = NULL, *by_name = NULL, *list = NULL, *errors = NULL;
	tt_checkouts co = { 0 };
	int64_t now = now_seconds();
	char nowtext[TT_WHEN_ISO_LEN];
	int rc;
	*out = NULL;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) < 0 || (rc = read_expiries(repo, marks, &expiries, err)) < 0 ||
	    (rc = tt_engine_live_checkouts(repo, &co, err)) < 0)
		goto done;
	by_name = json_object();
	errors = json_object();
	list = json_array();
	if (!by_name || !errors || !list) {
		rc = tt_error_oom(err);
		goto done;
	}
	const char *name;
	json_t *head;
	json_object_foreach(marks, name, head) {
		json_t *x = json_object_get(expiries, name);
		const char *exp = json_string_value(json_object_get(x, "expires"));
		int64_t t = 0;
		bool expired = exp && tt_when_iso(exp, &t) && t <= now;
		json_t *e = json_pack("{s:s,s:b,s:O,s:O,s:O,s:b,s:{},s:[]}", "name", name, "trunk", strcmp(name, trunk) == 0,
				      "head", head, "created", x ? json_object_get(x, "created") : json_null(),
				      "expires", x ? json_object_get(x, "expires") : json_null(), "expired", expired,
				      "working_refs", "checkouts");
		if (!e || json_object_set_new(by_name, name, e) < 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	for (size_t i = 0; i < co.n; i++) {
		const tt_checkout *c = &co.items[i];
		json_t *e = c->ws_ok && c->ws.bookmark ? json_object_get(by_name, c->ws.bookmark) : NULL;
		if (!e)
			continue;
		char id[9];
		snprintf(id, sizeof id, "%.8s", c->ws.workspace_id ? c->ws.workspace_id : "");
		json_array_append_new(json_object_get(e, "checkouts"),
				      json_pack("{s:s,s:s,s:b}", "workspace_id", id, "root", c->dataset, "here", c->here));
		const char *key;
		json_t *ref;
		json_object_foreach(c->ws.working_refs, key, ref)
			if (json_is_string(ref))
				add_ref(e, key, json_string_value(ref));
	}
	if (stores && (rc = store_refs(repo, by_name, trunk, errors, err)) < 0)
		goto done;
	/* The trunk first, then by name. */
	json_t *te = json_object_get(by_name, trunk);
	if (te)
		json_array_append(list, te);
	json_t *e;
	json_object_foreach(by_name, name, e)
		if (strcmp(name, trunk) != 0)
			json_array_append(list, e);
	tt_when_format(nowtext, sizeof nowtext, now);
	*out = json_pack("{s:s,s:s,s:O,s:O}", "trunk", trunk, "now", nowtext, "bookmarks", list, "errors", errors);
	if (!*out)
		rc = tt_error_oom(err);
done:
	tt_engine_checkouts_release(&co);
	json_decref(marks);
	json_decref(expiries);
	json_decref(by_name);
	json_decref(list);
	json_decref(errors);
	return rc;
}

/* "'name'" as Python's repr spells it, into a new string. */
static char *repr(const char *s)
{
	tt_buf b = TT_BUF_INIT;
	tt_pyv_repr_str(&b, s, strlen(s));
	return tt_buf_detach(&b);
}

/* TT_ECONFIG "<lead>'name'<tail>". */
static int refuse_named(tt_error *err, const char *lead, const char *name, const char *tail)
{
	char *r = repr(name);
	int rc = tt_error_set(err, TT_ECONFIG, "%s%s%s", lead, r ? r : name, tail);
	free(r);
	return rc;
}

/* The expiry file's text. */
static int expiry_text(tt_buf *out, const char *name, int64_t created, int64_t expires, tt_error *err)
{
	char c[TT_WHEN_ISO_LEN], x[TT_WHEN_ISO_LEN];
	tt_toml_value *doc = tt_toml_new_table();
	tt_when_format(c, sizeof c, created);
	tt_when_format(x, sizeof x, expires);
	if (!doc || tt_toml_table_set(doc, "bookmark", tt_toml_new_string(name, strlen(name))) < 0 ||
	    tt_toml_table_set(doc, "created", tt_toml_new_datetime(TT_TOML_DATETIME, c)) < 0 ||
	    tt_toml_table_set(doc, "expires", tt_toml_new_datetime(TT_TOML_DATETIME, x)) < 0) {
		tt_toml_free(doc);
		return tt_error_oom(err);
	}
	tt_buf_puts(out, "# When this bookmark expires: `tether gc --expired` drops it after that time.\n"
			 "# Written by `tether new --ttl` and `tether bookmarks NAME --ttl`; read from the\n"
			 "# bookmark's own head only.\n");
	int rc = tt_toml_write(out, doc, err);
	tt_toml_free(doc);
	return rc;
}

/* What setting an expiry carries from step to step. */
typedef struct expiry_set {
	tt_repo *repo;
	const char *bookmark;
	int64_t expires;
	bool clear;
	json_t *marks;			       /* the VCS's bookmarks */
	json_t *old;			       /* the expiry committed before (NULL: none) */
	json_t *pre, *result;
	char *reldir, *relpath, *abspath, *here;
	char *prev;			       /* the committed file's text (NULL: none) */
	size_t prev_len;
	char *commit, *message;
	tt_buf text;			       /* the file's new text */
	int64_t created;
	char x[TT_WHEN_ISO_LEN];	       /* expires, formatted */
	bool wrote;			       /* the file is written and not yet committed */
} expiry_set;

/* What no expiry may name: the trunk, or a bookmark no file can be named for. */
static int expiry_refused(tt_repo *repo, const char *bookmark, tt_error *err)
{
	if (strcmp(bookmark, tt_config_trunk(&repo->config)) == 0)
		return refuse_named(err, "", bookmark, " is the trunk bookmark, and the trunk never expires; an expiry is "
				    "for the bookmarks forked off it (`tether new -b NAME --ttl 7d`)");
	if (!path_safe(bookmark))
		return refuse_named(err, "bookmark ", bookmark, " cannot name an expiry file; rename it");
	return 0;
}

/* The expiry is a commit on the bookmark: made where it is checked out.
 * *head: the bookmark's commit (borrowed from es->marks). */
static int on_own_bookmark(expiry_set *es, const char **head, tt_error *err)
{
	tt_repo *repo = es->repo;
	const char *bookmark = es->bookmark;
	int rc;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &es->marks, err)) < 0)
		return rc;
	*head = json_string_value(json_object_get(es->marks, bookmark));
	if (!*head)
		return refuse_named(err, "no bookmark ", bookmark, " (`tether bookmarks` lists them)");
	if ((rc = tt_vcs_current_bookmark(repo->vcs, &es->here, err)) < 0)
		return rc;
	if (!es->here || strcmp(es->here, bookmark) != 0 || !repo->ws.bookmark ||
	    strcmp(repo->ws.bookmark, bookmark) != 0) {
		char *r = repr(bookmark);
		rc = tt_error_set(err, TT_ECONFIG,
				  "this checkout is on %s, not %s: an expiry is committed on its own bookmark; `tether new "
				  "%s` first, or set it in a checkout on %s",
				  repo->ws.bookmark ? repo->ws.bookmark : "no bookmark", r ? r : bookmark, bookmark,
				  bookmark);
		free(r);
		return rc;
	}
	return 0;
}

/* The expiry committed at head, if any; its file's paths. */
static int committed_expiry(expiry_set *es, const char *head, tt_error *err)
{
	tt_repo *repo = es->repo;
	int rc;
	if (!(es->reldir = expiry_reldir(repo)) ||
	    !(es->relpath = tt_asprintf("%s/%s.toml", es->reldir, es->bookmark)) ||
	    !(es->abspath = tt_asprintf("%s/" TT_DIR "/" BOOKMARKS_DIR "/%s.toml", repo->root, es->bookmark)))
		return tt_error_oom(err);
	if ((rc = tt_vcs_read_file_at(repo->vcs, head, es->relpath, &es->prev, &es->prev_len, err)) < 0)
		return rc;
	/* A committed link would take the write outside the checkout. */
	char *rel = tt_asprintf(TT_DIR "/" BOOKMARKS_DIR "/%s.toml", es->bookmark);
	rc = rel ? tt_refuse_links(repo->root, rel, err) : tt_error_oom(err);
	free(rel);
	if (rc < 0)
		return rc;
	es->old = es->prev ? parse_expiry(repo, es->bookmark, es->prev, es->prev_len, es->relpath) : NULL;
	return 0;
}

/* The commit's message and (unless clearing) the file's new text; the
 * expiry keeps the creation time it had. */
static int expiry_change(expiry_set *es, tt_error *err)
{
	int rc;
	es->created = now_seconds();
	const char *oc = json_string_value(json_object_get(es->old, "created"));
	if (oc)
		tt_when_iso(oc, &es->created);
	tt_when_format(es->x, sizeof es->x, es->expires);
	if (es->clear) {
		es->message = tt_asprintf("tether: bookmark %s no longer expires", es->bookmark);
	} else {
		es->message = tt_asprintf("tether: bookmark %s expires at %s", es->bookmark, es->x);
		if ((rc = expiry_text(&es->text, es->bookmark, es->created, es->expires, err)) < 0)
			return rc;
	}
	return es->message ? 0 : tt_error_oom(err);
}

/* The file written (or removed) in the working copy: es->wrote until committed. */
static int write_expiry_file(expiry_set *es, tt_error *err)
{
	int rc;
	char *dir = tt_strdup(es->abspath);
	if (!dir)
		return tt_error_oom(err);
	*strrchr(dir, '/') = '\0';
	rc = es->clear ? tt_unlink(es->abspath, err)
		       : (rc = tt_mkdirs(dir, 0755, err)) < 0 ? rc
							       : tt_write_file_atomic(es->abspath, es->text.ptr,
										      es->text.len, 0644, err);
	free(dir);
	if (rc < 0)
		return rc;
	es->wrote = true;
	return 0;
}

/* The commit on the bookmark, then the journal's record of it; *out: the result. */
static int commit_expiry(expiry_set *es, json_t **out, tt_error *err)
{
	const char *paths[] = { es->relpath };
	int rc;
	if ((rc = tt_vcs_commit(es->repo->vcs, paths, 1, es->message, es->bookmark, &es->commit, err)) < 0)
		return rc;
	es->wrote = false;
	char c[TT_WHEN_ISO_LEN];
	tt_when_format(c, sizeof c, es->created);
	es->result = es->clear ? json_pack("{s:s,s:n,s:n,s:s,s:b}", "bookmark", es->bookmark, "created", "expires",
					   "commit", es->commit, "changed", 1)
			       : json_pack("{s:s,s:s,s:s,s:s,s:b}", "bookmark", es->bookmark, "created", c, "expires",
					   es->x, "commit", es->commit, "changed", 1);
	es->pre = json_pack("{s:O}", "expiry", es->old ? es->old : json_null());
	if (!es->result || !es->pre)
		return tt_error_oom(err);
	/* The commit is made: a journal that cannot be written is a
	 * warning, not an undone expiry. */
	tt_error ig = TT_ERROR_INIT;
	if (tt_oplog_record(es->repo->root, "bookmarks", es->result, es->pre, NULL, &ig) < 0)
		tt_engine_warn(es->repo, tt_asprintf("the journal entry of the expiry was not written: %s",
						     tt_error_text(&ig)));
	tt_error_clear(&ig);
	*out = es->result;
	es->result = NULL;
	return 0;
}

/* The commit was refused: the working copy gets its file back. */
static void restore_expiry_file(expiry_set *es)
{
	tt_error ig = TT_ERROR_INIT;
	if (es->prev)
		tt_write_file_atomic(es->abspath, es->prev, es->prev_len, 0644, &ig);
	else
		tt_unlink(es->abspath, &ig);
	tt_error_clear(&ig);
}

static void expiry_set_release(expiry_set *es)
{
	tt_buf_release(&es->text);
	json_decref(es->marks);
	json_decref(es->old);
	json_decref(es->pre);
	json_decref(es->result);
	free(es->reldir);
	free(es->relpath);
	free(es->abspath);
	free(es->here);
	free(es->prev);
	free(es->commit);
	free(es->message);
}

/*
 * Set (or clear) a bookmark's expiry: a file committed on the bookmark
 * itself, in a checkout on it.  Nothing to clear, or the same expiry
 * again, commits nothing.
 */
int tt_repo_set_expiry(tt_repo *repo, const char *bookmark, long long expires, bool clear, json_t **out,
		       tt_error *err)
{
	expiry_set es = { .repo = repo, .bookmark = bookmark, .expires = (int64_t)expires, .clear = clear,
			  .text = TT_BUF_INIT };
	const char *head;
	int rc;
	*out = NULL;
	if ((rc = expiry_refused(repo, bookmark, err)) < 0)
		return rc;
	/* what the expiry file's reader takes back: 1970 to 9999, UTC */
	if (!clear && (expires < 0 || expires > 253402300799LL))
		return tt_error_set(err, TT_EUSAGE,
				    "bookmark %s: expiry %lld is outside 1970-01-01 to 9999-12-31 UTC (seconds since the "
				    "epoch); give one inside that range",
				    bookmark, expires);
	if ((rc = tt_repo_lock(repo, err)) < 0)
		return rc;
	if ((rc = on_own_bookmark(&es, &head, err)) < 0 || (rc = committed_expiry(&es, head, err)) < 0)
		goto done;
	if (clear && !es.prev) {
		*out = json_pack("{s:s,s:n,s:n,s:n,s:b}", "bookmark", bookmark, "created", "expires", "commit", "changed",
				 0);
		rc = *out ? 0 : tt_error_oom(err);
		goto done;
	}
	if ((rc = expiry_change(&es, err)) < 0)
		goto done;
	if (!clear && es.prev && es.prev_len == es.text.len && memcmp(es.prev, es.text.ptr, es.text.len) == 0) {
		*out = json_pack("{s:s,s:O,s:s,s:n,s:b}", "bookmark", bookmark, "created",
				 json_object_get(es.old, "created"), "expires", es.x, "commit", "changed", 0);
		rc = *out ? 0 : tt_error_oom(err);
		goto done;
	}
	if ((rc = write_expiry_file(&es, err)) < 0 || (rc = commit_expiry(&es, out, err)) < 0)
		goto done;
done:
	if (es.wrote)
		restore_expiry_file(&es);
	tt_repo_unlock(repo);
	expiry_set_release(&es);
	return rc;
}

/* Why the drop plan of an expired bookmark is not applied by gc
 * --expired, or NULL: this checkout would have to leave it (a sweep never
 * moves a checkout), or a branch would be kept for its unpinned writes
 * (the bookmark would go and its data stay behind, unnamed). */
static char *sweep_refusal(const json_t *plan, const char *bookmark, const char *trunk)
{
	tt_buf why = TT_BUF_INIT;
	size_t i;
	json_t *a;
	json_array_foreach(json_object_get(plan, "actions"), i, a) {
		const char *op = json_string_value(json_object_get(a, "op"));
		if (op && strcmp(op, "leave-bookmark") == 0) {
			tt_buf_release(&why);
			return tt_asprintf("this checkout works on it; `tether new %s` here first (gc --expired never "
					   "moves a checkout), or `tether drop %s`", trunk, bookmark);
		}
		if (!op || strcmp(op, "keep-branch") != 0 ||
		    json_is_true(json_object_get(json_object_get(a, "params"), "blocked")))
			continue;
		const char *key = json_string_value(json_object_get(a, "key"));
		const char *target = json_string_value(json_object_get(a, "target"));
		const char *detail = json_string_value(json_object_get(a, "detail"));
		tt_buf_printf(&why, "%s[%s] %s: %s", why.len ? "; " : "", key ? key : "?", target ? target : "?",
			      detail ? detail : "kept");
	}
	if (!why.len)
		return NULL;
	tt_buf_printf(&why, "; `tether new %s` and commit what it holds, or --force-prune to lose it", bookmark);
	return tt_buf_detach(&why);
}

int tt_repo_gc_expired(tt_repo *repo, const tt_drop_opts *opts, json_t **out, tt_error *err)
{
	TT_CHECK_OPTS(opts, tt_drop_opts, TT_DROP_OPTS_VERSION, err);
	static const tt_drop_opts none_given = TT_DROP_OPTS_INIT;
	const tt_drop_opts *given = opts ? opts : &none_given;
	bool dry_run = given->dry_run;
	const char *trunk = tt_config_trunk(&repo->config);
	json_t *marks = NULL, *expiries = NULL, *list = NULL;
	int64_t now = now_seconds();
	char nowtext[TT_WHEN_ISO_LEN];
	int rc;
	*out = NULL;
	if ((rc = tt_vcs_bookmarks(repo->vcs, &marks, err)) < 0 || (rc = read_expiries(repo, marks, &expiries, err)) < 0)
		goto done;
	if (!(list = json_array())) {
		rc = tt_error_oom(err);
		goto done;
	}
	const char *name;
	json_t *x;
	json_object_foreach(expiries, name, x) {
		int64_t t;
		const char *exp = json_string_value(json_object_get(x, "expires"));
		if (strcmp(name, trunk) == 0 || !exp || !tt_when_iso(exp, &t) || t > now)
			continue;
		tt_error e = TT_ERROR_INIT;
		char *pj = NULL, *pt = NULL, *why = NULL;
		json_t *plan = NULL, *result = NULL;
		const char *outcome = "refused";
		/* Planned first, always: what drop refuses, or what a sweep
		 * must not do, refuses this bookmark alone. */
		tt_drop_opts one = *given;
		one.bookmark = name;
		one.to = NULL;
		one.dry_run = true;
		if (tt_engine_repo_drop(repo, &one, NULL, 0, &pj, &pt, NULL, &e) == 0) {
			plan = tt_json_parse(pj, strlen(pj), "the drop plan", &e);
			why = plan ? sweep_refusal(plan, name, trunk) : NULL;
			one.dry_run = false;
			if (plan && !why && dry_run)
				outcome = "planned";
			else if (plan && !why && tt_engine_repo_drop(repo, &one, NULL, 0, NULL, NULL, &result, &e) == 0)
				outcome = "dropped";
			else if (plan && !why)
				outcome = "failed";
		}
		const char *error = why ? why : e.code ? tt_error_text(&e) : NULL;
		json_t *entry = json_pack("{s:s,s:O,s:O,s:s,s:O?,s:s?,s:O?,s:s?}", "bookmark", name, "created",
					  json_object_get(x, "created") ? json_object_get(x, "created") : json_null(),
					  "expires", json_object_get(x, "expires"), "outcome", outcome, "plan",
					  dry_run ? plan : NULL, "plan_text", dry_run && plan ? pt : NULL, "result", result,
					  "error", error);
		if (!entry || json_array_append_new(list, entry) < 0)
			rc = tt_error_oom(err);
		free(pj);
		free(pt);
		free(why);
		json_decref(plan);
		json_decref(result);
		tt_error_clear(&e);
		if (rc < 0)
			goto done;
	}
	tt_when_format(nowtext, sizeof nowtext, now);
	*out = json_pack("{s:b,s:s,s:O}", "dry_run", dry_run, "now", nowtext, "bookmarks", list);
	if (!*out)
		rc = tt_error_oom(err);
done:
	json_decref(marks);
	json_decref(expiries);
	json_decref(list);
	return rc;
}
