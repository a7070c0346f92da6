/*
 * engine/kernel/repo.h - an open dataset: its root, configuration, VCS, secrets,
 * manifests and this checkout's workspace.  Opening runs the safety checks
 * a cloned dataset needs before anything of it is trusted: the committed
 * configuration is screened (config.c), the per-checkout files must not be
 * tracked by the VCS, and only then is secrets.toml read.
 */
#ifndef TT_ENGINE_REPO_H
#define TT_ENGINE_REPO_H

#include "engine/kernel/handle.h"

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

/* The dataset root relative to the VCS root ("" when they are one). */
const char *tt_engine_dataset_rel(const tt_repo *repo);

/* Add msg (taken; NULL: none) to the repo's warnings unless it is there
 * already (as Python's warnings registry shows each text once); the CLI
 * prints them after the command. */
void tt_engine_warn(tt_repo *repo, char *msg);

/* The repository-wide lock (the VCS's shared dir, 60 s): commit, new,
 * promote and gc of one clone take turns across its checkouts. */
int tt_engine_repo_lock(tt_repo *repo, tt_lock *lock, tt_error *err);

/* A public options struct's version check: TT_EUSAGE naming the type, the
 * version it carries and the one this library knows, and the _INIT macro
 * that sets it.  0 when it matches. */
int tt_engine_opts_version(unsigned have, unsigned want, const char *type, tt_error *err);
#define TT_CHECK_OPTS(o, TYPE, WANT, err)                                                   \
	do {                                                                                \
		if ((o) && (o)->version != (WANT))                                          \
			return tt_engine_opts_version((o)->version, (WANT), #TYPE, (err));  \
	} while (0)

/* The commit a plan binds to (NULL before the first commit): HEAD under
 * git; under jj the working copy's parent, since the working-copy commit's
 * own id changes whenever jj snapshots the tree. */
char *tt_engine_vcs_head(tt_repo *repo);
/* Whether the VCS is jj (its working copy is a change of its own). */
bool tt_engine_vcs_is_jj(const tt_repo *repo);

#endif
