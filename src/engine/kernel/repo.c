/* engine/kernel/repo.c - opening and initialising datasets (see repo.h). */
#include "engine/kernel/repo.h"
#include "engine/kernel/context.h"
#include "engine/kernel/progress.h"

#include "backends/backend.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/ids.h"
#include "core/layout.h"
#include "core/oplog.h"
#include "util/fs.h"
#include "util/mem.h"
#include "vcs/dispatch.h"
#include "backends/registry.h"

/* The one version number is CMake's project(VERSION), passed as
 * TETHER_VERSION_STRING; there is no second copy to fall back on. */
#ifndef TETHER_VERSION_STRING
#error "TETHER_VERSION_STRING is defined by CMakeLists.txt from project(VERSION)"
#endif
const char *tt_version(void) { return TETHER_VERSION_STRING; }

const char *tt_repo_root(const tt_repo *repo) { return repo->root; }
const char *tt_repo_dataset_id(const tt_repo *repo) { return repo->config.dataset_id; }
const char *tt_repo_trunk(const tt_repo *repo) { return tt_config_trunk(&repo->config); }
size_t tt_repo_warning_count(const tt_repo *repo) { return repo->nwarnings; }
const char *tt_repo_warning(const tt_repo *repo, size_t i)
{
	return i < repo->nwarnings ? repo->warnings[i] : NULL;
}

const char *tt_engine_dataset_rel(const tt_repo *repo)
{
	size_t n = strlen(repo->vcs->root);
	if (strncmp(repo->root, repo->vcs->root, n) == 0 && repo->root[n] == '/')
		return repo->root + n + 1;
	return "";
}

void tt_engine_warn(tt_repo *repo, char *msg)
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

void tt_repo_free(tt_repo *repo)
{
	if (!repo)
		return;
	tt_repo_unlock(repo);
	tt_engine_progress_free(repo);
	free(repo->root);
	tt_config_release(&repo->config);
	tt_vcs_free(repo->vcs);
	tt_secrets_release(&repo->secrets);
	tt_workspace_release(&repo->ws);
	tt_manifests_release(&repo->objects);
	for (size_t i = 0; i < repo->nbackends; i++)
		tt_backend_free(repo->backends[i]);
	free(repo->backends);
	for (size_t i = 0; i < repo->nwarnings; i++)
		free(repo->warnings[i]);
	free(repo->warnings);
	free(repo);
}

/* The dataset root relative to the VCS root ("" when they are one). */
static const char *rel_to(const char *root, const char *base)
{
	size_t n = strlen(base);
	if (strncmp(root, base, n) == 0 && (root[n] == '/' || root[n] == '\0'))
		return root[n] == '/' ? root + n + 1 : "";
	return NULL;
}

/*
 * secrets.toml, workspace.toml and ops.jsonl are this checkout's own; a
 * copy the VCS tracks arrived with a clone (secrets choose executables and
 * credentials, the workspace where writes go, the journal which pins gc may
 * release), so it is refused before any of them is read.
 */
static int refuse_tracked(tt_repo *repo, tt_error *err)
{
	static const char *const names[] = { TT_SECRETS_FILENAME, TT_WORKSPACE_FILENAME, TT_OPS_FILENAME };
	const char *rel[3];
	char *owned[3] = { NULL, NULL, NULL };
	bool tracked[3] = { false, false, false };
	size_t n = 0;
	int rc = 0;
	const char *prefix = rel_to(repo->root, repo->vcs->root);

	for (size_t i = 0; i < 3; i++) {
		char *p = tt_tether_path(repo->root, names[i]);
		bool present = p && tt_is_file(p);
		free(p);
		if (!present)
			continue;
		owned[n] = prefix && *prefix ? tt_asprintf("%s/" TT_DIR "/%s", prefix, names[i])
					     : tt_asprintf(TT_DIR "/%s", names[i]);
		if (!owned[n]) {
			rc = tt_error_oom(err);
			goto done;
		}
		rel[n] = owned[n];
		n++;
	}
	if (!n)
		goto done;
	if ((rc = tt_vcs_tracked(repo->vcs, rel, n, tracked, err)) < 0) {
		tt_error_prefix(err, "cannot tell whether git tracks this checkout's per-checkout files");
		tt_error_hint(err, "put git on PATH or set TETHER_GIT (secrets.toml's git_path is read "
				   "only after this check)");
		goto done;
	}
	tt_buf names_b = TT_BUF_INIT;
	for (size_t i = 0; i < n; i++) {
		if (tracked[i])
			tt_buf_printf(&names_b, "%s%s", names_b.len ? " " : "", rel[i]);
	}
	if (names_b.len) {
		bool jj = strcmp(tt_vcs_kind(repo->vcs), "jj") == 0;
		tt_ensure_ignored(repo->root, true, NULL);
		rc = tt_error_set(err, TT_ECONFIG,
				  "%s tracks %s: tether reads these per-checkout files only when the VCS "
				  "does not, since a tracked copy arrives with every clone -- secrets.toml "
				  "chooses executables, endpoints and credentials, workspace.toml where "
				  "writes go, ops.jsonl which pins gc may release", tt_vcs_kind(repo->vcs), names_b.ptr);
		tt_error_hint(err, "review (or delete) them, then untrack them from the repository root "
				   "(%s) with `%s %s` -- the files stay on disk and "
				   ".tether/.gitignore ignores them -- and commit", repo->vcs->root,
			      jj ? "jj file untrack" : "git rm --cached", names_b.ptr);
	}
	tt_buf_release(&names_b);
done:
	for (size_t i = 0; i < 3; i++)
		free(owned[i]);
	return rc;
}

static int open_vcs(tt_repo *repo, tt_error *err)
{
	json_t *prefer = json_object_get(repo->config.vcs, "prefer");
	const char *pref = json_is_string(prefer) ? json_string_value(prefer) : "jj";
	int rc = tt_vcs_detect(&repo->vcs, repo->root, NULL, pref, err);
	if (rc < 0)
		return rc;
	if ((rc = refuse_tracked(repo, err)) < 0)
		return rc;
	if ((rc = tt_secrets_load(&repo->secrets, repo->root, err)) < 0)
		return rc;
	const char *git_path = tt_secrets_vcs(&repo->secrets, "git_path");
	const char *jj_path = tt_secrets_vcs(&repo->secrets, "jj_path");
	if (git_path || jj_path) {
		tt_vcs_free(repo->vcs);
		repo->vcs = NULL;
		rc = tt_vcs_detect_with(&repo->vcs, repo->root, git_path, jj_path, pref, err);
	}
	/* jj can put several bookmarks on the working copy's commit: the
	 * workspace's is the one it is on. */
	if (rc == 0)
		repo->vcs->ws_bookmark = &repo->ws.bookmark;
	return rc;
}

static int load_checkout_state(tt_repo *repo, tt_error *err)
{
	int exists = 0, rc;
	tt_manifests_release(&repo->objects);
	tt_workspace_release(&repo->ws);
	if ((rc = tt_manifests_load(&repo->objects, repo->root, err)) < 0)
		return rc;
	if ((rc = tt_workspace_load(&repo->ws, repo->root, &exists, err)) < 0)
		return rc;
	return tt_engine_refresh_secret_rules(repo, err);
}

int tt_repo_open(const char *start_dir, tt_repo **out, tt_error *err)
{
	tt_repo *repo = tt_calloc(1, sizeof *repo);
	int rc = 0, exists = 0;
	*out = NULL;
	if (!repo)
		return tt_error_oom(err);
	repo->checkout_lock = (tt_lock)TT_LOCK_INIT;
	clock_gettime(CLOCK_REALTIME, &repo->opened);
	if (!(repo->root = tt_find_dataset_root(start_dir ? start_dir : "."))) {
		rc = tt_error_set(err, TT_ECONFIG, "no tether dataset found at or above %s",
				  start_dir ? start_dir : ".");
		tt_error_hint(err, "run `tether init` inside a git repository first");
		goto done;
	}
	/* Before anything of it is read: no link may lead outside. */
	if ((rc = tt_check_dataset_links(repo->root, err)) < 0)
		goto done;
	size_t nkinds;
	const tt_kind *kinds = tt_kinds(&nkinds);
	if ((rc = tt_config_load(&repo->config, repo->root, kinds, nkinds, err)) < 0)
		goto done;
	if ((rc = open_vcs(repo, err)) < 0)
		goto done;
	if ((rc = tt_ensure_ignored(repo->root, true, err)) < 0)
		goto done;
	if ((rc = tt_manifests_load(&repo->objects, repo->root, err)) < 0)
		goto done;
	if ((rc = tt_workspace_load(&repo->ws, repo->root, &exists, err)) < 0)
		goto done;
	if (!exists) {
		/* A read-only checkout keeps the fresh id in memory only. */
		tt_error ignored = TT_ERROR_INIT;
		tt_workspace_claim(&repo->ws, repo->root, &ignored);
		tt_error_clear(&ignored);
	}
	if (repo->secrets.insecure)
		tt_engine_warn(repo, tt_asprintf("%s/.tether/secrets.toml is readable by other users; "
						 "`chmod 600` it -- it may hold credentials", repo->root));
	*out = repo;
	repo = NULL;
done:
	tt_repo_free(repo);
	return rc;
}

/* TETHER_LOCK_TIMEOUT_MS shortens (or lengthens) every lock wait: for tests
 * and for CI jobs that would rather fail fast than queue. */
int tt_lock_timeout_ms(int dflt)
{
	const char *s = getenv("TETHER_LOCK_TIMEOUT_MS");
	char *end;
	long v = s ? strtol(s, &end, 10) : -1;
	return s && *s && !*end && v >= 0 && v <= 3600000 ? (int)v : dflt;
}

/* The repository-wide lock (VCS shared dir, 60 s): commit, pull, gc, new
 * and undo of one clone take turns across all its checkouts. */
int tt_engine_repo_lock(tt_repo *repo, tt_lock *lock, tt_error *err)
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

int tt_engine_opts_version(unsigned have, unsigned want, const char *type, tt_error *err)
{
	char macro[64];
	size_t n = 0;
	/* tt_commit_opts -> TT_COMMIT_OPTS_INIT */
	for (const char *p = type; *p && n + 6 < sizeof macro; p++)
		macro[n++] = (char)toupper((unsigned char)*p);
	macro[n] = '\0';
	if (have == want)
		return 0;
	tt_error_set(err, TT_EUSAGE, "%s version %u is not one this libtether knows (it knows %u)",
		     type, have, want);
	tt_error_hint(err, "initialise it with %s_INIT and rebuild against this tether.h", macro);
	return TT_EUSAGE;
}

int tt_repo_lock(tt_repo *repo, tt_error *err)
{
	char *path = tt_tether_path(repo->root, TT_LOCK_FILENAME);
	int rc;
	if (!path)
		return tt_error_oom(err);
	rc = tt_lock_acquire(&repo->checkout_lock, path, "writing in this checkout",
			     tt_lock_timeout_ms(TT_CHECKOUT_LOCK_TIMEOUT_MS), err);
	free(path);
	/* What a killed write of ours left is no one's now: no writer holds it. */
	if (rc == 0)
		tt_sweep_temps(repo->root, &repo->opened);
	if (rc == 0 && (rc = load_checkout_state(repo, err)) < 0)
		tt_repo_unlock(repo);
	return rc;
}

void tt_repo_unlock(tt_repo *repo)
{
	tt_lock_release(&repo->checkout_lock);
}

/* --- init ------------------------------------------------------------------ */

int tt_init(const char *path, const char *dataset_id, json_t **out, tt_error *err)
{
	char *root = tt_realpath(path ? path : ".");
	char *cfg = NULL, *bookmark = NULL, *objdir = NULL;
	tt_config config = { 0 };
	tt_vcs *vcs = NULL;
	tt_workspace ws = { 0 };
	int rc;

	if (out)
		*out = NULL;
	if (!root)
		return tt_error_oom(err);
	if ((rc = tt_config_new(&config, dataset_id, err)) < 0)
		goto done;
	if (!(cfg = tt_config_path(root))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (tt_exists(cfg)) {
		rc = tt_error_set(err, TT_ECONFIG, "tether already initialized at %s", root);
		goto done;
	}
	if ((rc = tt_check_dataset_links(root, err)) < 0)
		goto done;
	/* Find the VCS before writing anything: a failed init leaves no trace. */
	if ((rc = tt_vcs_detect(&vcs, root, NULL, "jj", err)) < 0)
		goto done;
	if ((rc = tt_vcs_current_bookmark(vcs, &bookmark, err)) < 0)
		goto done;
	if (strcmp(tt_vcs_kind(vcs), "jj") == 0) {
		/* jj: the trunk bookmark when it exists (unless the working copy
		 * sits on another one alone), else the one the working copy is
		 * on, else the trunk created at @.  tether.toml is left alone. */
		json_t *marks = NULL;
		const char *trunk = tt_config_trunk(&config);
		if ((rc = tt_vcs_bookmarks(vcs, &marks, err)) < 0)
			goto done;
		bool have_trunk = json_object_get(marks, trunk) != NULL;
		json_decref(marks);
		if (!bookmark || (have_trunk && strcmp(bookmark, trunk) == 0)) {
			if (!have_trunk && (rc = tt_vcs_park(vcs, trunk, err)) < 0)
				goto done;
			free(bookmark);
			bookmark = tt_strdup(trunk);
		}
	} else if (!bookmark) {
		/* Detached HEAD: park the dataset on the trunk branch. */
		if ((rc = tt_vcs_park(vcs, tt_config_trunk(&config), err)) < 0)
			goto done;
		bookmark = tt_strdup(tt_config_trunk(&config));
	} else if (strcmp(bookmark, tt_config_trunk(&config)) != 0) {
		/* Under git the branch HEAD is on is the trunk, whatever its name. */
		json_object_set_new(config.vcs, "trunk", json_string(bookmark));
	}
	if (!bookmark) {
		rc = tt_error_oom(err);
		goto done;
	}
	if (!(objdir = tt_tether_path(root, TT_OBJECTS_DIR))) {
		rc = tt_error_oom(err);
		goto done;
	}
	if ((rc = tt_mkdirs(objdir, 0755, err)) < 0 ||
	    (rc = tt_ensure_ignored(root, false, err)) < 0 ||
	    (rc = tt_config_save(&config, root, err)) < 0 ||
	    (rc = tt_workspace_new(&ws, err)) < 0 ||
	    (rc = tt_workspace_set_bookmark(&ws, bookmark, err)) < 0 ||
	    (rc = tt_workspace_save(&ws, root, err)) < 0)
		goto done;
	if (out && !(*out = json_pack("{s:s,s:s}", "root", root, "dataset_id", config.dataset_id)))
		rc = tt_error_oom(err);
done:
	tt_workspace_release(&ws);
	tt_vcs_free(vcs);
	tt_config_release(&config);
	free(bookmark);
	free(objdir);
	free(cfg);
	free(root);
	return rc;
}

char *tt_engine_vcs_head(tt_repo *repo)
{
	tt_error none = TT_ERROR_INIT;
	char *head = NULL;
	if (tt_engine_vcs_is_jj(repo)) {
		json_t *pos = NULL;
		if (tt_vcs_position(repo->vcs, &pos, &none) == 0) {
			const char *parent = json_string_value(json_object_get(pos, "parent"));
			head = parent ? tt_strdup(parent) : NULL;
		}
		json_decref(pos);
	}
	if (!head && tt_vcs_current_rev(repo->vcs, &head, &none) < 0)
		head = NULL;
	tt_error_clear(&none);
	return head;
}

bool tt_engine_vcs_is_jj(const tt_repo *repo)
{
	return strcmp(tt_vcs_kind(repo->vcs), "jj") == 0;
}
