/*
 * engine/cmd/history.c - the dataset at other revisions, and the read-only
 * commands over it: `verify` (do pins and recorded states still resolve?),
 * `log` (an object's native history) and `diff` (what changed between two
 * dataset revisions, object by object and, with --content, inside).
 */
#include "engine/cmd/history.h"

#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "backends/dispatch.h"
#include "core/layout.h"
#include "engine/kernel/context.h"
#include "engine/kernel/keyhint.h"
#include "engine/kernel/progress.h"
#include "engine/kernel/repo.h"
#include "engine/kernel/revisions.h"
#include "engine/kernel/select.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "backends/registry.h"

/* --- verify ---------------------------------------------------------------- */

typedef struct verify_job {
	tt_repo *repo;
	const tt_manifest *m;
	bool deep;
	char *sig;             /* canonical (kind, identity, state, pin) */
	tt_verify_status status;
	char *message;
} verify_job;

static void verify_one(size_t i, void *ctx)
{
	verify_job *job = &((verify_job *)ctx)[i];
	tt_backend *b;
	tt_error err = TT_ERROR_INIT;
	job->status = TT_VERIFY_UNKNOWN;
	if (tt_engine_backend(job->repo, job->m->kind, &b, &err) < 0 || !tt_backend_has(b, verify)) {
		job->message = tt_strdup(err.code ? tt_error_text(&err) : "cannot verify");
		tt_error_clear(&err);
		return;
	}
	tt_pin pin = { 0 };
	if (job->m->pin_id) {
		snprintf(pin.id, sizeof pin.id, "%s", job->m->pin_id);
		snprintf(pin.ref, sizeof pin.ref, "%s", job->m->pin_ref);
	}
	if (tt_backend_verify(b, job->m->locator, job->m->state, job->m->pin_id ? &pin : NULL, job->deep,
			   &job->status, &job->message, &err) < 0) {
		/* A store that cannot answer is reported, not fatal. */
		job->status = TT_VERIFY_UNKNOWN;
		free(job->message);
		tt_error_object(&err, job->m->key, job->m->kind);
		job->message = tt_strdup(tt_error_text(&err));
	}
	tt_error_clear(&err);
}

static char *signature(tt_repo *repo, const tt_manifest *m)
{
	tt_backend *b;
	json_t *identity = NULL;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_engine_backend(repo, m->kind, &b, &ignored) < 0 ||
	    tt_backend_identity(b, m->locator, &identity, &ignored) < 0)
		identity = json_deep_copy(m->locator);
	tt_error_clear(&ignored);
	json_t *sig = json_pack("[s,o,O,o]", m->kind, identity ? identity : json_null(), m->state,
				m->pin_id ? json_pack("{s:s,s:s}", "id", m->pin_id, "ref", m->pin_ref)
					  : json_null());
	tt_buf b2 = TT_BUF_INIT;
	if (sig)
		tt_json_canonical(&b2, sig);
	json_decref(sig);
	return tt_buf_detach(&b2);
}

/* Verify labelled manifests concurrently, once per distinct record. */
/* verify_one, counted for the progress callback. */
static void verify_counted(size_t i, void *ctx)
{
	verify_job *job = &((verify_job *)ctx)[i];
	verify_one(i, ctx);
	tt_engine_progress_step(job->repo, job->m->key);
}

static int verify_targets(tt_repo *repo, const char **labels, const tt_manifest **ms, size_t n,
			  bool deep, json_t **out, tt_error *err)
{
	verify_job *jobs = tt_calloc(n ? n : 1, sizeof *jobs);
	size_t *which = tt_calloc(n ? n : 1, sizeof *which);
	size_t njobs = 0;
	int rc = 0;
	*out = NULL;
	if (!jobs || !which) {
		rc = tt_error_oom(err);
		goto done;
	}
	tt_engine_prepare(repo);
	for (size_t i = 0; i < n; i++) {
		char *sig = signature(repo, ms[i]);
		size_t j;
		for (j = 0; j < njobs; j++)
			if (sig && jobs[j].sig && strcmp(sig, jobs[j].sig) == 0)
				break;
		if (j == njobs) {
			jobs[njobs].repo = repo;
			jobs[njobs].m = ms[i];
			jobs[njobs].deep = deep;
			jobs[njobs].sig = sig;
			njobs++;
		} else {
			free(sig);
		}
		which[i] = j;
	}
	tt_engine_progress_begin(repo, "verify", njobs);
	rc = tt_engine_fanout_cancellable(repo, "verify", njobs, verify_counted, jobs, err);
	tt_engine_progress_end(repo);
	if (rc < 0)
		goto done;
	*out = json_object();
	for (size_t i = 0; *out && i < n; i++) {
		verify_job *j = &jobs[which[i]];
		json_object_set_new(*out, labels[i],
				    json_pack("{s:s,s:s}", "status", tt_verify_status_name(j->status),
					      "message", j->message ? j->message : ""));
	}
	if (!*out)
		rc = tt_error_oom(err);
done:
	for (size_t i = 0; jobs && i < njobs; i++) {
		free(jobs[i].sig);
		free(jobs[i].message);
	}
	free(jobs);
	free(which);
	return rc;
}

static bool wanted(const json_t *keys, const char *key)
{
	size_t i;
	json_t *k;
	if (!keys)
		return true;
	json_array_foreach(keys, i, k)
		if (strcmp(json_string_value(k), key) == 0)
			return true;
	return false;
}

/* Selection against an arbitrary manifest set (keys or prefixes). */
static int select_among(const tt_manifest_set *set, const char *const *sel, size_t n,
			json_t **out, tt_error *err)
{
	*out = NULL;
	if (!n)
		return 0;
	json_t *keys = json_array();
	for (size_t s = 0; s < n; s++) {
		size_t sl = strlen(sel[s]);
		bool prefix = sl && sel[s][sl - 1] == '/', hit = false;
		for (size_t i = 0; i < set->n; i++) {
			const char *k = set->items[i].key;
			if (prefix ? strncmp(k, sel[s], sl) == 0 : strcmp(k, sel[s]) == 0) {
				json_array_append_new(keys, json_string(k));
				hit = true;
			}
		}
		if (!hit) {
			json_decref(keys);
			tt_error_set(err, TT_ECONFIG, prefix ? "no object under %s" : "no such object: %s",
				     sel[s]);
			if (!prefix)
				tt_engine_key_hint(err, set, sel[s]);
			return TT_ECONFIG;
		}
	}
	*out = keys;
	return 0;
}

typedef struct history_walk {
	const char *reldir;
	tt_manifest_memo memo;
	char **labels;          /* "<commit[:12]>:<key>" of each promise met */
	size_t *index;          /* per label: its manifest in memo */
	size_t n, nalloc;
} history_walk;

static int walk_commit(void *ctx, const char *commit, json_t *files, tt_error *err)
{
	history_walk *w = ctx;
	const char *path;
	json_t *text;
	json_object_foreach(files, path, text) {
		size_t pi;
		int rc;
		if (!tt_engine_is_manifest_path(w->reldir, path))
			continue;
		if ((rc = tt_manifest_memo_get(&w->memo, text, commit, path, &pi, NULL, err)) < 0)
			return rc;
		const tt_manifest *m = &w->memo.items[pi];
		/* Pins and recorded states are promises; Observed records are not. */
		if (!m->state || (!m->pin_id && !m->recoverable))
			continue;
		if (TT_ARRAY_GROW(w->labels, w->nalloc, w->n + 1) < 0 ||
		    !(w->index = tt_reallocarray(w->index, w->nalloc, sizeof *w->index)))
			return tt_error_oom(err);
		w->labels[w->n] = tt_asprintf("%.12s:%s", commit, m->key);
		if (!w->labels[w->n])
			return tt_error_oom(err);
		w->index[w->n++] = pi;
	}
	return 0;
}

int tt_engine_repo_verify(tt_repo *repo, const char *const *selectors, size_t n, const char *rev,
		   bool deep, bool all_history, json_t **out, tt_error *err)
{
	tt_manifest_set at = { 0 };
	history_walk w = { 0 };
	json_t *keys = NULL;
	const char **labels = NULL;
	const tt_manifest **ms = NULL;
	size_t count = 0;
	char *reldir = NULL;
	int rc = 0;
	*out = NULL;
	if (all_history) {
		if (!(reldir = tt_engine_objects_reldir(repo))) {
			rc = tt_error_oom(err);
			goto done;
		}
		w.reldir = reldir;
		if ((rc = tt_vcs_iter_history_files(repo->vcs, reldir, walk_commit, &w, err)) < 0)
			goto done;
		/* Selection among every key history has had. */
		if (n) {
			tt_manifest_set pseudo = { 0 };
			pseudo.items = w.memo.items;
			pseudo.n = w.memo.n;
			if ((rc = select_among(&pseudo, selectors, n, &keys, err)) < 0) {
				/* A key only the working tree has is selected too. */
				tt_error_clear(err);
				if ((rc = tt_engine_select(repo, selectors, n, &keys, err)) < 0)
					goto done;
			}
		}
		labels = tt_calloc(w.n ? w.n : 1, sizeof *labels);
		ms = tt_calloc(w.n ? w.n : 1, sizeof *ms);
		if (!labels || !ms) {
			rc = tt_error_oom(err);
			goto done;
		}
		for (size_t i = 0; i < w.n; i++) {
			const tt_manifest *m = &w.memo.items[w.index[i]];
			if (!wanted(keys, m->key))
				continue;
			labels[count] = w.labels[i];
			ms[count++] = m;
		}
	} else {
		const tt_manifest_set *set = &repo->objects;
		if (rev) {
			if ((rc = tt_engine_objects_at(repo, rev, &at, NULL, err)) < 0)
				goto done;
			set = &at;
		}
		if ((rc = select_among(set, selectors, n, &keys, err)) < 0)
			goto done;
		labels = tt_calloc(set->n ? set->n : 1, sizeof *labels);
		ms = tt_calloc(set->n ? set->n : 1, sizeof *ms);
		if (!labels || !ms) {
			rc = tt_error_oom(err);
			goto done;
		}
		for (size_t i = 0; i < set->n; i++) {
			if (!set->items[i].state || !wanted(keys, set->items[i].key))
				continue;
			labels[count] = set->items[i].key;
			ms[count++] = &set->items[i];
		}
	}
	rc = verify_targets(repo, labels, ms, count, deep, out, err);
done:
	tt_manifests_release(&at);
	tt_manifest_memo_release(&w.memo);
	for (size_t i = 0; i < w.n; i++)
		free(w.labels[i]);
	free(w.labels);
	free(w.index);
	json_decref(keys);
	free(labels);
	free(ms);
	free(reldir);
	return rc;
}

/* --- log ----------------------------------------------------------------- */

static json_t *history_json(tt_history_entry *e, size_t n)
{
	json_t *out = json_array();
	for (size_t i = 0; out && i < n; i++)
		json_array_append_new(out, json_pack("{s:s,s:s?,s:s,s:O}", "id", e[i].id, "when", e[i].when,
						     "message", e[i].message ? e[i].message : "", "refs",
						     e[i].refs ? e[i].refs : json_array()));
	return out;
}

int tt_engine_repo_log(tt_repo *repo, const char *key, const char *kind, const json_t *locator,
		const char *ref, size_t limit, json_t **out, tt_error *err)
{
	tt_backend *b;
	tt_history_entry *entries = NULL;
	size_t n = 0;
	char *start = NULL;
	const json_t *loc = locator;
	json_t *resolved = NULL;
	int rc;
	unsigned caps;
	*out = NULL;
	if (kind) {
		const tt_kind *k;
		char *cwd = NULL;
		if ((rc = tt_kind_lookup(&k, kind, err)) < 0 || (rc = tt_engine_backend(repo, kind, &b, err)) < 0)
			return rc;
		caps = k->caps;
		/* An unregistered locator's relative paths mean here, as `add`
		 * (and `add --pick`, which lists before adding) takes them. */
		if (!(resolved = json_deep_copy(locator ? locator : json_object())) || !(cwd = tt_getcwd())) {
			json_decref(resolved);
			return tt_error_oom(err);
		}
		rc = tt_absolutize_locator(resolved, kind, cwd, err);
		free(cwd);
		if (rc < 0) {
			json_decref(resolved);
			return rc;
		}
		loc = resolved;
		if (ref && !(start = tt_strdup(ref))) {
			json_decref(resolved);
			return tt_error_oom(err);
		}
	} else {
		const tt_manifest *m = tt_manifests_find(&repo->objects, key);
		if (!m) {
			tt_error_set(err, TT_ECONFIG, "no such object: %s", key);
			tt_engine_key_hint(err, &repo->objects, key);
			return TT_ECONFIG;
		}
		if ((rc = tt_engine_backend(repo, m->kind, &b, err)) < 0)
			return tt_error_object(err, key, m->kind);
		caps = tt_engine_caps(repo, m);
		loc = m->locator;
		kind = m->kind;
		if (ref)
			start = tt_strdup(ref);
		else if ((rc = tt_engine_working_ref(repo, m, &start, err)) < 0)
			return rc;
	}
	if (!(caps & TT_CAP_HISTORY) || !tt_backend_has(b, history)) {
		rc = key ? tt_error_set(err, TT_ECAPABILITY, "'%s' (%s) cannot list history", key, kind)
			 : tt_error_set(err, TT_ECAPABILITY, "%s backend cannot list history", kind);
		tt_error_object(err, key, kind);
		goto done;
	}
	if ((rc = tt_backend_history(b, loc, start, limit, &entries, &n, err)) < 0) {
		tt_error_object(err, key, kind);
		goto done;
	}
	if (!(*out = history_json(entries, n)))
		rc = tt_error_oom(err);
done:
	tt_history_release(entries, n);
	json_decref(resolved);
	free(start);
	return rc;
}

/* --- diff ------------------------------------------------------------------- */

typedef struct diff_job {
	tt_repo *repo;
	const tt_manifest *a, *b;
	const char *rev_a, *rev_b;   /* NULL: the working tree */
	json_t *detail;
	char *error;
} diff_job;

/* A state's stored listing, at rev (or in the working tree). */
static char *listing_for(tt_repo *repo, const tt_manifest *m, const char *rev)
{
	tt_backend *b;
	json_t *identity = NULL, *content = NULL;
	char name[TT_LISTING_NAME_MAX], *text = NULL;
	tt_error ignored = TT_ERROR_INIT;
	if (!m->state || tt_engine_backend(repo, m->kind, &b, &ignored) < 0 ||
	    tt_backend_identity(b, m->locator, &identity, &ignored) < 0 ||
	    !(content = tt_content_state(b->kind, m->state)) ||
	    tt_listing_name(name, m->kind, identity, content, &ignored) < 0)
		goto done;
	char *rel = tt_asprintf(TT_DIR "/" TT_LISTINGS_DIR "/%s", name);
	if (!rel)
		goto done;
	if (rev) {
		char *full = tt_path_join(tt_engine_dataset_rel(repo), rel);
		size_t len;
		if (full)
			tt_vcs_read_file_at(repo->vcs, rev, full, &text, &len, &ignored);
		free(full);
	} else {
		char *path = tt_path_join(repo->root, rel);
		tt_buf buf = TT_BUF_INIT;
		if (path && tt_refuse_links(repo->root, rel, &ignored) == 0 && tt_is_file(path) && tt_read_file(path, &buf, 1u << 30, &ignored) == 0)
			text = tt_buf_detach(&buf);
		tt_buf_release(&buf);
		free(path);
	}
	free(rel);
done:
	json_decref(identity);
	json_decref(content);
	tt_error_clear(&ignored);
	return text;
}

static void diff_one(size_t i, void *ctx)
{
	diff_job *job = &((diff_job *)ctx)[i];
	tt_backend *b;
	tt_error err = TT_ERROR_INIT;
	tt_object_diff d;
	if (tt_engine_backend(job->repo, job->b->kind, &b, &err) < 0) {
		job->error = tt_strdup(tt_error_text(&err));
		tt_error_clear(&err);
		return;
	}
	char *la = listing_for(job->repo, job->a, job->rev_a);
	char *lb = listing_for(job->repo, job->b, job->rev_b);
	if (tt_backend_diff(b, job->b->locator, job->a->state, job->b->state, la, lb, &d, &err) < 0) {
		tt_error_object(&err, job->b->key, job->b->kind);
		job->error = tt_strdup(tt_error_text(&err));
	} else {
		job->detail = tt_object_diff_json(&d);
		tt_object_diff_release(&d);
	}
	free(la);
	free(lb);
	tt_error_clear(&err);
}

static bool policy_equal(const tt_policy *a, const tt_policy *b)
{
	return strcmp(a->file, b->file) == 0 && strcmp(a->pin, b->pin) == 0;
}

/* describe: the entry's kind and its states on the two sides. */
static int describe_entry(json_t *e, const tt_manifest *ma, const tt_manifest *mb)
{
	json_t *sa = ma && ma->state ? json_deep_copy(ma->state) : json_null();
	json_t *sb = mb && mb->state ? json_deep_copy(mb->state) : json_null();
	int rc = json_object_set_new(e, "kind", json_string((mb ? mb : ma)->kind));
	rc |= json_object_set_new(e, "state_a", sa);
	rc |= json_object_set_new(e, "state_b", sb);
	return rc ? -1 : 0;
}

/* One diff: its two sides, the selection, the entries and the content
 * diffs to fetch. */
typedef struct diff_ctx {
	tt_repo *repo;
	const tt_diff_opts *opts;    /* borrowed */
	tt_manifest_set sa, sb;      /* the sides read at revisions */
	const tt_manifest_set *a, *b; /* the two sides: sa/sb or the working tree */
	char *ra, *rb;               /* the revisions resolved */
	json_t *entries, *keys;      /* keys: the selection, NULL for every object */
	diff_job *jobs;
	size_t njobs;
	json_t **saved; /* no revisions: the manifests' own states, put back at the end */
} diff_ctx;

static void diff_ctx_release(diff_ctx *d)
{
	tt_repo *repo = d->repo;
	for (size_t x = 0; d->saved && x < repo->objects.n; x++) {
		json_decref(repo->objects.items[x].state);
		repo->objects.items[x].state = d->saved[x];
	}
	free(d->saved);
	for (size_t x = 0; d->jobs && x < d->njobs; x++) {
		json_decref(d->jobs[x].detail);
		free(d->jobs[x].error);
	}
	free(d->jobs);
	tt_manifests_release(&d->sa);
	tt_manifests_release(&d->sb);
	free(d->ra);
	free(d->rb);
	json_decref(d->entries);
	json_decref(d->keys);
}

/* As `git diff`: the working copy is what the stores hold now, as the last
 * snapshot fingerprinted them (what `status` shows), for the objects that
 * move; the rest stand at their pins.  Their own states are saved to put
 * back. */
static int working_states(diff_ctx *d, tt_error *err)
{
	tt_repo *repo = d->repo;
	if (repo->objects.n && !(d->saved = tt_calloc(repo->objects.n, sizeof *d->saved)))
		return tt_error_oom(err);
	for (size_t x = 0; x < repo->objects.n; x++) {
		tt_manifest *m = &repo->objects.items[x];
		json_t *now = json_object_get(repo->ws.last_snapshot, m->key);
		d->saved[x] = m->state;
		if (json_is_object(now) && json_object_size(now) && tt_engine_moving(repo, m))
			m->state = json_incref(now);
		else
			json_incref(m->state);
	}
	return 0;
}

/* The two sides: REV_A -> REV_B, REV -> the working tree, or the last
 * commit -> the working tree (no commit yet: all added). */
static int diff_sides(diff_ctx *d, tt_error *err)
{
	tt_repo *repo = d->repo;
	const char *rev_a = d->opts->rev_a, *rev_b = d->opts->rev_b;
	int rc;
	if (rev_a && rev_b) {
		if ((rc = tt_engine_objects_at(repo, rev_a, &d->sa, &d->ra, err)) < 0 ||
		    (rc = tt_engine_objects_at(repo, rev_b, &d->sb, &d->rb, err)) < 0)
			return rc;
		d->a = &d->sa;
		d->b = &d->sb;
		return 0;
	}
	if (rev_a) {
		if ((rc = tt_engine_objects_at(repo, rev_a, &d->sa, &d->ra, err)) < 0)
			return rc;
		d->a = &d->sa;
		d->b = &repo->objects;
		return 0;
	}
	tt_error none = TT_ERROR_INIT;
	/* jj: @ is the working copy itself; its parent is the last commit. */
	if (tt_engine_objects_at(repo, tt_engine_vcs_is_jj(repo) ? "@-" : "HEAD", &d->sa, &d->ra, &none) < 0) {
		tt_error_clear(&none);
		memset(&d->sa, 0, sizeof d->sa);
	}
	d->a = &d->sa;
	d->b = &repo->objects;
	return working_states(d, err);
}

/* The keys the selectors name, matched on either side; a selector that
 * matches nothing is refused. */
static int select_keys(diff_ctx *d, tt_error *err)
{
	const char *const *selectors = d->opts->selectors;
	d->keys = json_array();
	for (size_t s = 0; s < d->opts->nselectors; s++) {
		size_t sl = strlen(selectors[s]);
		bool prefix = sl && selectors[s][sl - 1] == '/', hit = false;
		const tt_manifest_set *sides[2] = { d->a, d->b };
		for (int side = 0; side < 2; side++)
			for (size_t i = 0; i < sides[side]->n; i++) {
				const char *k = sides[side]->items[i].key;
				if (prefix ? strncmp(k, selectors[s], sl) == 0 : strcmp(k, selectors[s]) == 0) {
					json_array_append_new(d->keys, json_string(k));
					hit = true;
				}
			}
		if (!hit) {
			int rc = tt_error_set(err, TT_ECONFIG, prefix ? "no object under %s" : "no such object: %s",
					      selectors[s]);
			if (!prefix)
				tt_engine_key_hint(err, d->b->n ? d->b : d->a, selectors[s]);
			return rc;
		}
	}
	return 0;
}

/* How an object on both sides differs (why: state, pin, locator, policy);
 * a changed state of a kind that diffs queues a content diff. */
static const char *compare_sides(diff_ctx *d, const tt_manifest *ma, const tt_manifest *mb, json_t *why)
{
	bool state_differs = !((ma->state == NULL && mb->state == NULL) ||
			       (ma->state && mb->state && json_equal(ma->state, mb->state)));
	bool pin_differs = (ma->pin_id == NULL) != (mb->pin_id == NULL) ||
			   (ma->pin_id && strcmp(ma->pin_id, mb->pin_id) != 0);
	if (state_differs)
		json_array_append_new(why, json_string("state"));
	if (pin_differs)
		json_array_append_new(why, json_string("pin"));
	if (!json_equal(ma->locator, mb->locator))
		json_array_append_new(why, json_string("locator"));
	if (!policy_equal(&ma->policy, &mb->policy))
		json_array_append_new(why, json_string("policy"));
	if (d->opts->content && state_differs && ma->state && mb->state && strcmp(ma->kind, mb->kind) == 0 &&
	    (tt_engine_caps(d->repo, mb) & TT_CAP_DIFF)) {
		diff_job *job = &d->jobs[d->njobs++];
		job->repo = d->repo;
		job->a = ma;
		job->b = mb;
		job->rev_a = d->ra;
		job->rev_b = d->rb;
	}
	return json_array_size(why) ? "changed" : "unchanged";
}

/* The entry of one key: on side a (ma), side b (mb) or both. */
static int diff_entry(diff_ctx *d, const char *key, const tt_manifest *ma, const tt_manifest *mb, tt_error *err)
{
	json_t *why = json_array();
	const char *change;
	if (ma && !mb)
		change = "removed";
	else if (mb && !ma)
		change = "added";
	else
		change = compare_sides(d, ma, mb, why);
	json_t *e = json_pack("{s:s,s:s,s:s?,s:s?,s:n,s:n,s:o}", "key", key, "change", change, "a",
			      ma ? ma->pin_id : NULL, "b", mb ? mb->pin_id : NULL, "detail", "detail_error", "why",
			      why);
	if (!e || json_array_append_new(d->entries, e) < 0 || (d->opts->describe && describe_entry(e, ma, mb) < 0))
		return tt_error_oom(err);
	return 0;
}

/* Walk the union of keys in order (both sets are sorted), an entry for
 * each key selected. */
static int diff_entries(diff_ctx *d, tt_error *err)
{
	const tt_manifest_set *a = d->a, *b = d->b;
	size_t i = 0, j = 0;
	int rc;
	while (i < a->n || j < b->n) {
		int c = i >= a->n ? 1 : j >= b->n ? -1 : strcmp(a->items[i].key, b->items[j].key);
		const tt_manifest *ma = c <= 0 ? &a->items[i] : NULL;
		const tt_manifest *mb = c >= 0 ? &b->items[j] : NULL;
		if (c <= 0)
			i++;
		if (c >= 0)
			j++;
		const tt_manifest *either = ma ? ma : mb;
		if (!either)
			break;
		if (!wanted(d->keys, either->key))
			continue;
		if ((rc = diff_entry(d, either->key, ma, mb, err)) < 0)
			return rc;
	}
	return 0;
}

/* The content diffs, fetched in parallel, onto their entries. */
static int attach_details(diff_ctx *d, tt_error *err)
{
	size_t k;
	json_t *e;
	int rc;
	tt_engine_prepare(d->repo);
	if ((rc = tt_engine_fanout(d->njobs, diff_one, d->jobs, err)) < 0)
		return rc;
	json_array_foreach(d->entries, k, e) {
		for (size_t x = 0; x < d->njobs; x++) {
			if (strcmp(d->jobs[x].b->key, json_string_value(json_object_get(e, "key"))) != 0)
				continue;
			if (d->jobs[x].detail)
				json_object_set(e, "detail", d->jobs[x].detail);
			if (d->jobs[x].error)
				json_object_set_new(e, "detail_error", json_string(d->jobs[x].error));
		}
	}
	return 0;
}

int tt_repo_diff(tt_repo *repo, const tt_diff_opts *opts, json_t **out, tt_error *err)
{
	static const tt_diff_opts none_given = TT_DIFF_OPTS_INIT;
	if (!opts)
		opts = &none_given;
	TT_CHECK_OPTS(opts, tt_diff_opts, TT_DIFF_OPTS_VERSION, err);
	diff_ctx d = { .repo = repo, .opts = opts };
	int rc = 0;
	*out = NULL;
	if ((rc = diff_sides(&d, err)) < 0)
		goto done;
	/* Selectors match keys on either side. */
	if (opts->nselectors && (rc = select_keys(&d, err)) < 0)
		goto done;
	d.entries = json_array();
	d.jobs = tt_calloc(d.a->n + d.b->n + 1, sizeof *d.jobs);
	if (!d.entries || !d.jobs) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = diff_entries(&d, err)) < 0)
		goto done;
	if (d.njobs && (rc = attach_details(&d, err)) < 0)
		goto done;
	*out = d.entries;
	d.entries = NULL;
done:
	diff_ctx_release(&d);
	return rc;
}
