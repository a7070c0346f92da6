/*
 * engine/engine.h - what every lifecycle command needs from an open
 * dataset: the backend of each kind (built once, configured from the
 * committed allowlisted options under secrets.toml's), each object's
 * effective capabilities and working ref, which objects move without a
 * `pull`, which are stale, and concurrent fan-out across objects.
 */
#ifndef TT_ENGINE_ENGINE_H
#define TT_ENGINE_ENGINE_H

#include <stdbool.h>

#include "backends/backend.h"
#include "backends/registry.h"
#include "engine/repo.h"

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

/* Keys the selectors name (exact keys, or prefixes ending in '/'), sorted;
 * no selectors: every key.  TT_ECONFIG naming each selector that matches
 * nothing. */
int tt_engine_select(tt_repo *repo, const char *const *selectors, size_t n, json_t **out,
		     tt_error *err);

/* The native resource that owns m's branches, as a string (the backend's
 * branch_scope, else its canonical identity). */
int tt_engine_branch_scope(tt_repo *repo, const tt_manifest *m, char **out, tt_error *err);

/* Refuse a `commit` or `pull` (verb) selection naming only some of the
 * objects of one native branch space (one kind and branch scope): they
 * share a pin and a working branch.  TT_ECONFIG naming the missing keys
 * and the command that takes them all. */
int tt_engine_require_whole_scopes(tt_repo *repo, const json_t *selected, const char *verb,
				   tt_error *err);

/*
 * Fingerprint concurrently and cache in workspace.toml.  keys: a JSON array
 * to limit to (NULL: all).  upstream: objects without a working ref are read
 * at their upstream head (on the trunk or no bookmark), else left at their
 * committed state.  *states: key -> state.  failures: when non-NULL, failed
 * objects are collected there ({key: {ref, error}}) instead of failing the
 * call.  An Observed immutable object that changed is TT_EIMMUTABLE.
 */
int tt_engine_snapshot(tt_repo *repo, const json_t *keys, bool upstream, json_t **states,
		       json_t **failures, tt_error *err);
/* TT_EIMMUTABLE for m, an immutable Observed object whose state changed:
 * tether-vcs's words, and the way to record the new state as the hint. */
int tt_engine_immutable_changed(const tt_manifest *m, tt_error *err);

/* The manifests committed at rev (sorted); *resolved (may be NULL) the commit. */
int tt_engine_objects_at(tt_repo *repo, const char *rev, tt_manifest_set *set, char **resolved,
			 tt_error *err);

/* tether-vcs's short_state: "k=v k=v", values cut at 16 characters. */
int tt_short_state(tt_buf *out, const json_t *state);

struct tt_plan;
/* commit's two halves (engine/commit.c). */
/* fetched: states `pull` read (used instead of a snapshot; the plan is a
 * pull plan); NULL for a commit. */
int tt_engine_plan_commit(tt_repo *repo, const char *message, const json_t *keys, bool strict,
			  bool force, bool do_snapshot, const json_t *fetched, struct tt_plan **out,
			  tt_error *err);
int tt_engine_apply_commit(tt_repo *repo, const struct tt_plan *plan, bool vcs, bool verify,
			   json_t **out, tt_error *err);
/* Check a plan's command, digest and every precondition against the
 * checkout (engine/preconditions.c); TT_ESTALEPLAN with the plan's words. */
int tt_engine_check_preconditions(tt_repo *repo, const struct tt_plan *plan, const char *command,
				  tt_error *err);

/* new's two halves (engine/fork.c). */
int tt_engine_plan_new(tt_repo *repo, const tt_new_opts *o, struct tt_plan **out, tt_error *err);
/* *partial (may be NULL): the error is that some objects could not fork
 * while the rest of the `new` took effect and was recorded; the message
 * names the rerun that finishes it.  parent: the operation the journal
 * entry belongs to (drop's leaving for another bookmark), or NULL. */
int tt_engine_apply_new(tt_repo *repo, const struct tt_plan *plan, bool verify, bool *partial,
			const char *parent, tt_error *err);

/* promote's two halves (engine/promote.c). */
int tt_engine_plan_promote(tt_repo *repo, const tt_promote_opts *o, struct tt_plan **out, tt_error *err);
int tt_engine_apply_promote(tt_repo *repo, const struct tt_plan *plan, bool verify, json_t **out,
			    tt_error *err);

struct tt_oplog;
struct tt_op_entry;
/* Dataset commits the journal records that the VCS no longer has:
 * [{op, commit, referenced: {key: bool}, message}] (engine/ops.c). */
int tt_engine_vcs_drift(tt_repo *repo, const struct tt_oplog *log, json_t **out, tt_error *err);

/* --- interrupted commits and pulls (engine/resume.c) ----------------------- */

/* Whether the dataset's manifests differ from the last VCS commit. */
int tt_engine_objects_dirty(tt_repo *repo, bool *dirty, tt_error *err);

/* The commit a plan binds to (NULL before the first commit): HEAD under
 * git; under jj the working copy's parent, since the working-copy commit's
 * own id changes whenever jj snapshots the tree. */
char *tt_engine_vcs_head(tt_repo *repo);
/* Whether the VCS is jj (its working copy is a change of its own). */
bool tt_engine_vcs_is_jj(const tt_repo *repo);

typedef enum tt_close_mode {
	TT_CLOSE_RERUN,  /* a commit or pull about to run: it finishes them all */
	TT_CLOSE_REPAIR, /* repair: with clean manifests, nothing is left of them */
	TT_CLOSE_MOVED,  /* gc: with clean manifests, those the checkout moved past */
} tt_close_mode;

/*
 * The interrupted (incomplete) commits and pulls of this checkout's journal
 * that mode may close, each as {id, landed: the commit it landed or absent,
 * result}; taken before the closing command does anything.  Under the
 * checkout lock (the journal and the working copy are this checkout's).
 */
int tt_engine_scan_interrupted(tt_repo *repo, tt_close_mode mode, json_t **out, tt_error *err);
/* Close what tt_engine_scan_interrupted found, once the command that
 * finishes them has succeeded: a landed one as done, the rest as moot
 * (marked undone by `by`, NULL: by themselves).  why names the closer. */
int tt_engine_close_interrupted(tt_repo *repo, json_t *found, const char *by, const char *why,
				tt_error *err);
/* A repair or gc that finished without a failure closes the interrupted
 * runs of the same command before it (not self) that it redid: those whose
 * plan context has the same value for every one of fields (NULL-ended). */
int tt_engine_close_reruns(tt_repo *repo, const char *command, const json_t *context,
			   const char *const *fields, const char *self, const char *why, tt_error *err);

/* What a drop the journal entry e records as never finished got done, and
 * which command finishes it: "<id> (drop <bookmark>), which was
 * interrupted <how far>: <command>. A drop is finished, not undone -- ...",
 * as `undo` refuses it and `repair` notes it.  Caller frees; NULL on OOM. */
char *tt_engine_interrupted_drop(tt_repo *repo, const struct tt_op_entry *e);

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

/* What a committed object is read or forked from: its pin, verified (a
 * drifted pin is TT_EPINDRIFT; a missing one falls back to the recorded
 * state where the kind can address it).  pin is storage for *t. */
int tt_engine_pinned_source(tt_repo *repo, const tt_manifest *m, tt_backend *b, tt_pin *pin,
			    tt_target *t, tt_error *err);

/* A committed manifest opened read-only at its verified pin, else its
 * recorded state where the kind can address it (Observed: TT_ECAPABILITY
 * naming where, e.g. the revision).  *out: the backend's handle with its
 * secret_storage_options (engine/fork.c). */
int tt_engine_open_recorded(tt_repo *repo, const tt_manifest *m, const char *where, json_t **out,
			    tt_error *err);

/* The same as `tether open --json -r WHERE` shows it: the handle in
 * tether-vcs's shape with every credential (secret_*, url_with_password)
 * left out. */
int tt_engine_open_shown(tt_repo *repo, const tt_manifest *m, const char *where, json_t **out, tt_error *err);

/* Fork branch name for m from its (verified) pin or recorded state, moving
 * it only from expected. */
int tt_engine_fork_from_manifest(tt_repo *repo, const tt_manifest *m, const char *name,
				 const tt_expect *expected, char **ref_out, tt_error *err);


/* --- manifests across history (history.c) --------------------------------- */

/* The dataset's objects directory relative to the VCS root, as history
 * files are named (".tether/objects" or "<sub>/.tether/objects"). */
char *tt_engine_objects_reldir(const tt_repo *repo);
/* Is path, a file of a history commit, a manifest directly under reldir? */
bool tt_engine_is_manifest_path(const char *reldir, const char *path);

/* The manifests a history walk meets, each distinct text parsed once (the
 * same manifest at hundreds of commits is one entry).  Indices are stable;
 * pointers into items are not across calls. */
typedef struct tt_manifest_memo {
	json_t *texts; /* text -> index in items */
	tt_manifest *items;
	size_t n, alloc;
} tt_manifest_memo;
/* The index of text's manifest in memo, parsing it on first sight (*fresh,
 * when asked, true then).  Parse errors name "<commit[:12]>:<path>", or path alone
 * when commit is NULL. */
int tt_manifest_memo_get(tt_manifest_memo *memo, const json_t *text, const char *commit,
			 const char *path, size_t *index, bool *fresh, tt_error *err);
void tt_manifest_memo_release(tt_manifest_memo *memo);

/* --- registering objects (objects.c) and created stores (lifecycle.c) ---- */

/* Write a new object's manifest (origin "created" when created) and start
 * its key without a working ref. */
int tt_engine_register(tt_repo *repo, const char *key, const char *kind, json_t *loc, tt_policy policy,
		       bool created, tt_error *err);

/* `add --create` after add's own checks, pre being add's undo record:
 * require CREATE, journal, have the backend make the store with this
 * dataset's owner marker, record it in the created-store index, register
 * it, and on a bookmark other than the trunk fork its working branch.
 * *result: the journal's result {key, created: {kind, identity, locator},
 * fork?}. */
int tt_engine_add_created(tt_repo *repo, const char *key, const tt_kind *kind, json_t *loc,
			  const tt_policy *policy, json_t *pre, json_t **result, tt_error *err);

/* Undoing such an add: remove the store while it is still empty and still
 * carries this dataset's marker (its own fork does not count); otherwise
 * say why it stays.  Lines go to restored / irreversible. */
void tt_engine_undo_created(tt_repo *repo, const json_t *result, json_t *restored, json_t *irreversible);

/* The locator field that names a store, for plan targets and messages
 * (uri, path, system, project_id or table; else the whole locator),
 * written to scratch. */
const char *tt_engine_store_where(const json_t *loc, tt_buf *scratch);

/* Progress of a fan-out (engine/progress.c; nothing without a callback):
 * begin a phase of total objects, count one done (any thread), end it. */
void tt_engine_progress_begin(tt_repo *repo, const char *phase, size_t total);
void tt_engine_progress_step(tt_repo *repo, const char *key);
void tt_engine_progress_end(tt_repo *repo);
/* Count the file kind's hashing into the phase's files and bytes (on), or
 * stop (off); nothing without a callback.  Backends built by then only. */
void tt_engine_progress_files(tt_repo *repo, bool on);
/* Release the progress state (tt_repo_free). */
void tt_engine_progress_free(tt_repo *repo);

/* After "no such object: KEY": attach a hint naming the registered key
 * closest to key (edit distance), when one is close and err has no hint
 * yet.  Returns err->code. */
int tt_engine_key_hint(tt_error *err, const tt_manifest_set *set, const char *key);

#endif
