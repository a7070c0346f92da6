/*
 * engine/kernel/handle.h - the open dataset every engine function takes:
 * its root, configuration, VCS, secrets, manifests, this checkout's
 * workspace and what the commands build on it (backends, progress).  Only
 * the type: opening, locking and closing it are repo.h's.
 */
#ifndef TT_ENGINE_KERNEL_HANDLE_H
#define TT_ENGINE_KERNEL_HANDLE_H

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
	struct tt_backend **backends;   /* built on first use (context.h) */
	size_t nbackends, backends_alloc;
	struct tt_progress_state *progress; /* tt_repo_set_progress (engine/kernel/progress.c) */
	atomic_bool cancel;             /* tt_repo_cancel, until a phase stops for it */
};

#endif
