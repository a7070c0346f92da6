/*
 * engine/repo.h - an open dataset: its root, configuration, VCS, secrets,
 * manifests and this checkout's workspace.  Opening runs the safety checks
 * a cloned dataset needs before anything of it is trusted: the committed
 * configuration is screened (config.c), the per-checkout files must not be
 * tracked by the VCS, and only then is secrets.toml read.
 */
#ifndef TT_ENGINE_REPO_H
#define TT_ENGINE_REPO_H

#include <tether/tether.h>

#include <stdatomic.h>
#include <time.h>

#include "core/config.h"
#include "core/manifest.h"
#include "core/secrets.h"
#include "core/workspace.h"
#include "util/lock.h"
#include "vcs/vcs.h"

struct tt_repo {
	char *root;              /* the dataset root (resolved) */
	tt_config config;
	tt_vcs *vcs;
	tt_secrets secrets;
	tt_workspace ws;
	tt_manifest_set objects;
	char **warnings;
	size_t nwarnings, warnings_alloc;
	tt_lock checkout_lock;
	struct timespec opened;  /* when this process opened it (CLOCK_REALTIME) */
	struct tt_backend **backends;   /* built on first use (engine.h) */
	size_t nbackends, backends_alloc;
	struct tt_progress_state *progress; /* tt_repo_set_progress (engine/progress.c) */
	atomic_bool cancel;             /* tt_repo_cancel, until a phase stops for it */
};

/* Take .tether/lock (30 s) for a writing command, then re-read the
 * manifests and workspace so nothing another process wrote is lost. */
int tt_repo_lock(tt_repo *repo, tt_error *err);
void tt_repo_unlock(tt_repo *repo);
/* dflt, unless TETHER_LOCK_TIMEOUT_MS gives another wait in milliseconds. */
int tt_lock_timeout_ms(int dflt);

/* Resolve relative (and ~) local paths of a locator against base, per kind. */
int tt_absolutize_locator(json_t *locator, const char *kind, const char *base, tt_error *err);

/* The key a locator's path gives (last segment less a store suffix), or NULL. */
char *tt_default_key(const json_t *locator, const char *kind);

#endif
