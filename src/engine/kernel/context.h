/*
 * engine/kernel/context.h - what every command needs from an open dataset:
 * the backend of each kind (built once, configured from the committed
 * allowlisted options under secrets.toml's), each object's effective
 * capabilities and working ref, which objects move without a `pull`,
 * which are stale, and concurrent fan-out across objects.
 */
#ifndef TT_ENGINE_KERNEL_CONTEXT_H
#define TT_ENGINE_KERNEL_CONTEXT_H

#include <stdbool.h>

#include "backends/backend.h"
#include "engine/kernel/handle.h"

/* Rebuild the built backends' secret rules from repo->objects, after the
 * objects were reloaded (a long-lived repo: an [objects."<key>"] entry of
 * an object added since applies).  Not while a fan-out runs. */
int tt_engine_refresh_secret_rules(tt_repo *repo, tt_error *err);

/* The backend for kind (built on first use; owned by the repo). */
int tt_engine_backend(tt_repo *repo, const char *kind, tt_backend **out, tt_error *err);
/* Build the backends of every registered object's kind up front, so a
 * fan-out never builds one from two threads.  Kinds this tether lacks are
 * not an error here: each object's own call reports it. */
void tt_engine_prepare(tt_repo *repo);

/* Effective capabilities of one object (policy applied); 0 when its kind's
 * backend is not built. */
unsigned tt_engine_caps(tt_repo *repo, const tt_manifest *m);

bool tt_engine_on_trunk(const tt_repo *repo);

/*
 * The store branch an object writes through now: the workspace's working
 * ref, or - on the trunk, for a Forkable object not registered `--at` - its
 * upstream branch.  *out NULL: none (position stays at its pin).
 */
int tt_engine_working_ref(tt_repo *repo, const tt_manifest *m, char **out, tt_error *err);

/* Whether an object's position moves without `pull`: it has a working ref,
 * or no committed state yet (the first commit reads it). */
bool tt_engine_moving(tt_repo *repo, const tt_manifest *m);

/* Forked objects whose manifest no longer records the state their working
 * ref started from (a JSON array of keys, sorted). */
json_t *tt_engine_stale_keys(tt_repo *repo);

/* Equality on content keys for an object's kind. */
bool tt_engine_same(const tt_manifest *m, const json_t *a, const json_t *b);

/*
 * Run fn over n items on up to 16 threads (network-bound work).  Each
 * call writes only its own slot of ctx.
 */
typedef void (*tt_fanout_fn)(size_t i, void *ctx);
int tt_engine_fanout(size_t n, tt_fanout_fn fn, void *ctx, tt_error *err);
/* tt_engine_fanout for a read-only phase tt_repo_cancel may stop: after a
 * request no further item starts, and the call fails with TT_ECANCELED
 * naming the phase and how many items were done (the request consumed). */
int tt_engine_fanout_cancellable(tt_repo *repo, const char *phase, size_t n, tt_fanout_fn fn, void *ctx,
				 tt_error *err);

#endif
