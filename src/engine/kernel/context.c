/* engine/kernel/context.c - backends, capabilities, working refs (see context.h). */
#include "engine/kernel/context.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/kinds.h"
#include "backends/dispatch.h"
#include "core/layout.h"
#include "util/mem.h"
#include "util/pool.h"
#include "backends/registry.h"

#define MAX_FANOUT_THREADS 16

/* Deep merge: src's fields over dst's, tables merged field by field. */
static int merge_into(json_t *dst, const json_t *src)
{
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)src, k, v) {
		json_t *held = json_object_get(dst, k);
		if (json_is_object(v) && json_is_object(held)) {
			if (merge_into(held, v) < 0)
				return -1;
		} else if (json_object_set_new(dst, k, json_deep_copy(v)) < 0) {
			return -1;
		}
	}
	return 0;
}

/* The backend's secret rules: secrets.toml's [uris] and the [objects]
 * entries of this kind's registered objects. */
static int set_secret_rules(tt_repo *repo, tt_backend *b, const char *kind, tt_error *err)
{
	const char **keys = tt_calloc(repo->objects.n + 1, sizeof *keys);
	const json_t **locs = tt_calloc(repo->objects.n + 1, sizeof *locs);
	size_t n = 0;
	json_t *rules = NULL;
	for (size_t i = 0; keys && locs && i < repo->objects.n; i++) {
		const tt_manifest *m = &repo->objects.items[i];
		if (strcmp(m->kind, kind) == 0) {
			keys[n] = m->key;
			locs[n++] = m->locator;
		}
	}
	if (keys && locs)
		rules = tt_secrets_rules(&repo->secrets, n, keys, (const json_t *const *)locs);
	free(keys);
	free(locs);
	if (!rules)
		return tt_error_oom(err);
	tt_backend_set_secret_rules(b, rules);
	return 0;
}

/* Backends are built on first use; a fan-out may look one up from several
 * threads, so the list is guarded. */
static pthread_mutex_t backends_lock = PTHREAD_MUTEX_INITIALIZER;

int tt_engine_refresh_secret_rules(tt_repo *repo, tt_error *err)
{
	int rc = 0;
	pthread_mutex_lock(&backends_lock);
	for (size_t i = 0; rc == 0 && i < repo->nbackends; i++)
		rc = set_secret_rules(repo, repo->backends[i], repo->backends[i]->kind->name, err);
	pthread_mutex_unlock(&backends_lock);
	return rc;
}

static int engine_backend_locked(tt_repo *repo, const char *kind, tt_backend **out, tt_error *err);

int tt_engine_backend(tt_repo *repo, const char *kind, tt_backend **out, tt_error *err)
{
	pthread_mutex_lock(&backends_lock);
	int rc = engine_backend_locked(repo, kind, out, err);
	pthread_mutex_unlock(&backends_lock);
	return rc;
}

static int engine_backend_locked(tt_repo *repo, const char *kind, tt_backend **out, tt_error *err)
{
	const tt_kind *k = NULL;
	json_t *config = NULL;
	char *cache = NULL;
	int rc;
	*out = NULL;
	for (size_t i = 0; i < repo->nbackends; i++) {
		if (strcmp(repo->backends[i]->kind->name, kind) == 0) {
			*out = repo->backends[i];
			return 0;
		}
	}
	if ((rc = tt_kind_lookup(&k, kind, err)) < 0)
		return rc;
	json_t *committed = json_object_get(repo->config.backends, kind);
	json_t *local = tt_secrets_backend(&repo->secrets, kind);
	config = json_object();
	cache = tt_tether_path(repo->root, TT_CACHE_DIR);
	if (!config || !cache || (committed && merge_into(config, committed) < 0) ||
	    (local && merge_into(config, local) < 0)) {
		rc = tt_error_oom(err);
		goto done;
	}
	/* The cache is written where it is: never through a link. */
	if ((rc = tt_refuse_links(repo->root, TT_DIR "/" TT_CACHE_DIR, err)) < 0)
		goto done;
	/* Settings of this checkout alone (the file watcher: `[file]
	 * fsmonitor`) come from its secrets.toml, never a committed key. */
	for (const char *const *x = k->checkout_keys; x && *x; x++) {
		json_t *t = json_object_get(repo->secrets.doc, k->name);
		json_t *v = json_is_object(t) ? json_object_get(t, *x) : NULL;
		json_object_del(config, *x);
		if (v && json_object_set(config, *x, v) < 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	/* The git object backend runs the same git the dataset does: secrets
	 * [vcs] git_path/jj_path apply unless [backends.git] names its own. */
	for (const char *const *x = k->vcs_config_keys; x && *x; x++) {
		const char *v = tt_secrets_vcs(&repo->secrets, *x);
		if (v && !json_object_get(config, *x) && json_object_set_new(config, *x, json_string(v)) < 0) {
			rc = tt_error_oom(err);
			goto done;
		}
	}
	if ((rc = tt_backend_new(out, k, config, cache, repo->vcs->root, err)) < 0)
		goto done;
	if ((rc = set_secret_rules(repo, *out, kind, err)) < 0) {
		tt_backend_free(*out);
		*out = NULL;
		goto done;
	}
	if (TT_ARRAY_GROW(repo->backends, repo->backends_alloc, repo->nbackends + 1) < 0) {
		tt_backend_free(*out);
		*out = NULL;
		rc = tt_error_oom(err);
		goto done;
	}
	repo->backends[repo->nbackends++] = *out;
done:
	json_decref(config);
	free(cache);
	return rc;
}

void tt_engine_prepare(tt_repo *repo)
{
	for (size_t i = 0; i < repo->objects.n; i++) {
		tt_backend *b;
		tt_error ignored = TT_ERROR_INIT;
		tt_engine_backend(repo, repo->objects.items[i].kind, &b, &ignored);
		tt_error_clear(&ignored);
	}
}

unsigned tt_engine_caps(tt_repo *repo, const tt_manifest *m)
{
	tt_backend *b;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_engine_backend(repo, m->kind, &b, &ignored) < 0) {
		tt_error_clear(&ignored);
		const tt_kind *k = tt_kind_find(m->kind);
		unsigned caps = k ? k->caps : 0;
		if (strcmp(m->policy.pin, "record") == 0)
			caps &= ~(unsigned)TT_CAP_PIN;
		return caps;
	}
	return tt_backend_caps(b, m->locator, m->policy.file, m->policy.pin);
}

bool tt_engine_on_trunk(const tt_repo *repo)
{
	return repo->ws.bookmark && strcmp(repo->ws.bookmark, tt_config_trunk(&repo->config)) == 0;
}

static bool has_at(const tt_manifest *m)
{
	json_t *at = json_object_get(m->locator, "at");
	if (!at || json_is_null(at))
		return false;
	if (json_is_string(at)) {
		for (const char *p = json_string_value(at); *p; p++)
			if (*p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
				return true;
		return false;
	}
	return true;
}

int tt_engine_working_ref(tt_repo *repo, const tt_manifest *m, char **out, tt_error *err)
{
	json_t *ref = json_object_get(repo->ws.working_refs, m->key);
	*out = NULL;
	if (json_is_string(ref)) {
		*out = tt_strdup(json_string_value(ref));
		return *out ? 0 : tt_error_oom(err);
	}
	if (!tt_engine_on_trunk(repo) || has_at(m))
		return 0;
	tt_backend *b;
	tt_error ignored = TT_ERROR_INIT;
	if (tt_engine_backend(repo, m->kind, &b, &ignored) < 0 ||
	    !(tt_backend_caps(b, m->locator, m->policy.file, m->policy.pin) & TT_CAP_FORK)) {
		tt_error_clear(&ignored);
		return 0;
	}
	if (tt_backend_has(b, base_branch)) {
		if (tt_backend_base_branch(b, m->locator, out, &ignored) < 0) {
			tt_error_clear(&ignored);
			*out = NULL;
		}
		return 0;
	}
	json_t *branch = json_object_get(m->locator, "branch");
	*out = tt_strdup(json_is_string(branch) ? json_string_value(branch) : "main");
	return *out ? 0 : tt_error_oom(err);
}

bool tt_engine_moving(tt_repo *repo, const tt_manifest *m)
{
	if (!m->state)
		return true;
	char *ref = NULL;
	tt_error ignored = TT_ERROR_INIT;
	tt_engine_working_ref(repo, m, &ref, &ignored);
	tt_error_clear(&ignored);
	bool moving = ref != NULL;
	free(ref);
	return moving;
}

bool tt_engine_same(const tt_manifest *m, const json_t *a, const json_t *b)
{
	const tt_kind *k = tt_kind_find(m->kind);
	if (!a || !b)
		return a == b;
	if (!k)
		return json_equal((json_t *)a, (json_t *)b);
	return tt_states_equal(k, a, b);
}

json_t *tt_engine_stale_keys(tt_repo *repo)
{
	json_t *out = json_array();
	json_t *keys = json_object();
	const char *k;
	json_t *v;
	if (!out || !keys) {
		json_decref(out);
		json_decref(keys);
		return NULL;
	}
	json_object_foreach(repo->ws.working_refs, k, v) json_object_set(keys, k, json_true());
	json_object_foreach(repo->ws.pending_forks, k, v) json_object_set(keys, k, json_true());
	/* Sorted: manifests are, so walk them. */
	for (size_t i = 0; i < repo->objects.n; i++) {
		const tt_manifest *m = &repo->objects.items[i];
		if (!json_object_get(keys, m->key) || tt_engine_on_trunk(repo) || !m->state)
			continue;
		json_t *expected = json_object_get(repo->ws.base_states, m->key);
		if (!expected || !tt_engine_same(m, m->state, expected))
			json_array_append_new(out, json_string(m->key));
	}
	json_decref(keys);
	return out;
}

int tt_engine_fanout(size_t n, tt_fanout_fn fn, void *ctx, tt_error *err)
{
	unsigned threads = n < MAX_FANOUT_THREADS ? (unsigned)n : MAX_FANOUT_THREADS;
	return tt_pool_map(n, threads ? threads : 1, fn, ctx, err);
}

void tt_repo_cancel(tt_repo *repo)
{
	if (repo)
		atomic_store(&repo->cancel, true);
}

typedef struct cancellable {
	tt_repo *repo;
	tt_fanout_fn fn;
	void *ctx;
	atomic_size_t done, skipped;
} cancellable;

static void cancellable_one(size_t i, void *ctx)
{
	cancellable *c = ctx;
	if (atomic_load(&c->repo->cancel)) {
		atomic_fetch_add(&c->skipped, 1);
		return;
	}
	c->fn(i, c->ctx);
	atomic_fetch_add(&c->done, 1);
}

int tt_engine_fanout_cancellable(tt_repo *repo, const char *phase, size_t n, tt_fanout_fn fn, void *ctx,
				 tt_error *err)
{
	cancellable c = { .repo = repo, .fn = fn, .ctx = ctx };
	atomic_init(&c.done, 0);
	atomic_init(&c.skipped, 0);
	int rc = tt_engine_fanout(n, cancellable_one, &c, err);
	/* A request that came while the last objects were under way stops the
	 * phase too: nothing has been written yet, so it still can.  Whatever
	 * those objects reported is dropped with the rest of the phase. */
	if (rc < 0 || !atomic_exchange(&repo->cancel, false))
		return rc;
	tt_error_set(err, TT_ECANCELED, "%s cancelled after %zu of %zu object(s); nothing was written", phase,
		     atomic_load(&c.done), n);
	return TT_ECANCELED;
}
