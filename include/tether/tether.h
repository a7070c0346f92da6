/*
 * tether/tether.h - libtether, version control for datasets that live in
 * other systems.
 *
 * A dataset is a git repository holding tether.toml and one manifest per
 * tracked object.  Results are returned as JSON values (jansson) in the
 * shapes `tether ... --json` prints, so a program gets exactly what the CLI
 * shows.  Every call returns 0 or a negative tt_code and fills a tt_error;
 * the library never prints and never exits.
 */
#ifndef TETHER_TETHER_H
#define TETHER_TETHER_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include <tether/error.h>
#include <tether/progress.h>

#ifdef __cplusplus
extern "C" {
#endif

TT_API_BEGIN

/* tether's version, "MAJOR.MINOR.PATCH" (CMake's project(VERSION), which the
 * .deb, the wheel and libtether.pc carry too). */
const char *tt_version(void);

typedef struct tt_repo tt_repo;

/*
 * Initialise a dataset at path (created if missing) inside an existing git
 * repository: tether.toml with a fresh dataset id (or dataset_id), the
 * .tether/ layout and this checkout's workspace on HEAD's branch, which
 * becomes the trunk.  *out (may be NULL): {"root", "dataset_id"}.
 * Nothing is written when it fails.
 */
int tt_init(const char *path, const char *dataset_id, json_t **out, tt_error *err);

/* Open the dataset whose tether.toml is at or above start_dir. */
int tt_repo_open(const char *start_dir, tt_repo **out, tt_error *err);
void tt_repo_free(tt_repo *repo);
const char *tt_repo_root(const tt_repo *repo);
const char *tt_repo_dataset_id(const tt_repo *repo);
/* The trunk bookmark ([vcs] trunk, default "main"). */
const char *tt_repo_trunk(const tt_repo *repo);

/* Warnings gathered while opening (e.g. a group-readable secrets.toml). */
size_t tt_repo_warning_count(const tt_repo *repo);
const char *tt_repo_warning(const tt_repo *repo, size_t i);

/* Set version to TT_ADD_OPTS_VERSION (TT_ADD_OPTS_INIT does): a struct of
 * another version is refused with TT_EUSAGE, never misread. */
#define TT_ADD_OPTS_VERSION 1u
#define TT_ADD_OPTS_INIT { .version = TT_ADD_OPTS_VERSION }
typedef struct tt_add_opts {
	unsigned version;  /* TT_ADD_OPTS_VERSION */
	const char *key;          /* NULL: derived from the locator's path */
	const char *kind;
	json_t *locator;          /* borrowed; fields as on the command line */
	const char *file_policy;  /* NULL: [defaults] file */
	const char *pin_policy;   /* NULL: [defaults] pin */
	const char *cwd;          /* relative paths resolve here (NULL: the process's) */
	bool create;              /* experimental: make an empty store there first */
} tt_add_opts;

/*
 * Register an object: write its manifest, contacting nothing - unless
 * create, which has the backend make an empty store at the locator marked
 * as this dataset's (refused if anything exists there, or the kind cannot
 * create), records it in the clone's created-store index and, on a
 * bookmark other than the trunk, forks its working branch.  *out:
 * {"key", "kind", "derived_key": bool, "experimental": bool, "at": ...,
 * "created": bool, "locator" (created only), "fork" (a forked branch)}.
 */
int tt_repo_add(tt_repo *repo, const tt_add_opts *opts, json_t **out, tt_error *err);

/* Unregister an object (the store is untouched).  Undoable. */
int tt_repo_remove(tt_repo *repo, const char *key, tt_error *err);

/* Set version to TT_SET_POLICY_OPTS_VERSION (TT_SET_POLICY_OPTS_INIT does). */
#define TT_SET_POLICY_OPTS_VERSION 1u
#define TT_SET_POLICY_OPTS_INIT { .version = TT_SET_POLICY_OPTS_VERSION }
typedef struct tt_set_policy_opts {
	unsigned version;        /* TT_SET_POLICY_OPTS_VERSION */
	const char *const *keys; /* the objects (keys or "prefix/") */
	size_t nkeys;
	const char *file_policy; /* NULL: unchanged */
	const char *pin_policy;  /* NULL: unchanged (not both NULL) */
} tt_set_policy_opts;

/*
 * Change policies in place.  *out: {"changed": {key: {field: {"from",
 * "to"}}}, "unchanged": [keys]}.
 */
int tt_repo_set_policy(tt_repo *repo, const tt_set_policy_opts *opts, json_t **out, tt_error *err);

/*
 * Fingerprint objects (selectors: keys or "prefix/"; none: all) and cache the
 * states in the workspace.  *out: {key: state}.
 */
int tt_repo_snapshot(tt_repo *repo, const char *const *selectors, size_t n, json_t **out,
		     tt_error *err);

/*
 * Classify every object against its committed manifest.  snapshot: 1
 * fingerprint first, 0 show the cached snapshot, -1 tether.toml [snapshot]
 * auto.  *out: the `status --json` object.
 */
int tt_repo_status(tt_repo *repo, const char *const *selectors, size_t n, int snapshot,
		   json_t **out, tt_error *err);

/* --- planned commands ------------------------------------------------------ */

/*
 * Every command that changes stores (commit, new, promote, repair, restore,
 * forget-workspace, drop, upgrade, gc, import) takes the same two
 * arguments after its own options: how to run (plan NULL: TT_PLAN_RUN) and
 * where its results go.
 *
 *   TT_PLAN_RUN      plan, then apply at once: res->out is the command's result
 *   TT_PLAN_PREVIEW  plan only, nothing written: res->plan_json (a saved plan,
 *                    format 3, for TT_PLAN_APPLY or `--from-plan`) and
 *                    res->plan_text (its text rendering)
 *   TT_PLAN_APPLY    apply the saved plan plan->saved (plan->saved_len bytes)
 *                    once every precondition it recorded still holds
 *                    (TT_ESTALEPLAN otherwise): res->out as TT_PLAN_RUN's
 *
 * The call starts by clearing res and fills it on success.  A command that
 * can partly succeed (new) sets res->out on failure too, as it says.
 * tt_plan_result_release frees what res holds, after a failure as well.
 */
typedef enum tt_plan_mode {
	TT_PLAN_RUN = 0,
	TT_PLAN_PREVIEW,
	TT_PLAN_APPLY,
} tt_plan_mode;
/* Set version to TT_PLAN_OPTS_VERSION (TT_PLAN_OPTS_INIT does). */
#define TT_PLAN_OPTS_VERSION 1u
#define TT_PLAN_OPTS_INIT { .version = TT_PLAN_OPTS_VERSION }
typedef struct tt_plan_opts {
	unsigned version;   /* TT_PLAN_OPTS_VERSION */
	tt_plan_mode mode;
	const char *saved;  /* TT_PLAN_APPLY: the saved plan's JSON */
	size_t saved_len;
} tt_plan_opts;
#define TT_PLAN_RESULT_INIT { NULL, NULL, NULL }
typedef struct tt_plan_result {
	char *plan_json;  /* TT_PLAN_PREVIEW: the saved plan */
	char *plan_text;  /* TT_PLAN_PREVIEW: its text rendering */
	json_t *out;      /* TT_PLAN_RUN, TT_PLAN_APPLY: the command's result */
} tt_plan_result;
void tt_plan_result_release(tt_plan_result *res);

/* Set version to TT_COMMIT_OPTS_VERSION (TT_COMMIT_OPTS_INIT does): a struct of
 * another version is refused with TT_EUSAGE, never misread. */
#define TT_COMMIT_OPTS_VERSION 1u
#define TT_COMMIT_OPTS_INIT { .version = TT_COMMIT_OPTS_VERSION }
typedef struct tt_commit_opts {
	unsigned version;  /* TT_COMMIT_OPTS_VERSION */
	const char *message;        /* the VCS commit message */
	const char *const *keys;    /* commit only these (keys or "prefix/"); NULL: all */
	size_t nkeys;
	bool no_vcs;                /* write manifests, skip the VCS commit */
	bool strict;                /* refuse Observed objects instead of recording them */
	bool force;                 /* skip quiescence checks */
	bool no_snapshot;           /* commit the cached fingerprints */
} tt_commit_opts;
/* (Applying a saved plan, message, keys and no_vcs still apply: the
 * message of the VCS commit, the keys that must be the plan's, and whether
 * to skip the VCS commit.) */

/*
 * Pin (or record) every changed object, write the manifests and listings,
 * commit them and move the bookmark.  *out: {vcs_commit, pinned: {key:
 * ref|null}, unrecoverable: [keys], unchanged: [keys]}.
 */
int tt_repo_commit(tt_repo *repo, const tt_commit_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		   tt_error *err);

/* Set version to TT_VERIFY_OPTS_VERSION (TT_VERIFY_OPTS_INIT does). */
#define TT_VERIFY_OPTS_VERSION 1u
#define TT_VERIFY_OPTS_INIT { .version = TT_VERIFY_OPTS_VERSION }
typedef enum tt_verify_flags {
	TT_VERIFY_DEEP = 1u << 0,        /* open recorded states (resolves "unknown") */
	TT_VERIFY_ALL_HISTORY = 1u << 1, /* every commit's records, each distinct one once */
} tt_verify_flags;
typedef struct tt_verify_opts {
	unsigned version;             /* TT_VERIFY_OPTS_VERSION */
	const char *const *selectors; /* keys or "prefix/"; NULL / 0: every object */
	size_t nselectors;
	const char *rev;              /* at this dataset commit (NULL: the working tree) */
	unsigned flags;               /* tt_verify_flags */
} tt_verify_opts;

/*
 * Check that pins and recorded states still resolve: at the working tree,
 * at rev, or (TT_VERIFY_ALL_HISTORY) at every commit, each distinct record
 * once.  *out: {label: {status, message}} with labels "key" or
 * "<commit12>:key".
 */
int tt_repo_verify(tt_repo *repo, const tt_verify_opts *opts, json_t **out, tt_error *err);

/* Set version to TT_LOG_OPTS_VERSION (TT_LOG_OPTS_INIT does). */
#define TT_LOG_OPTS_VERSION 1u
#define TT_LOG_OPTS_INIT { .version = TT_LOG_OPTS_VERSION }
typedef struct tt_log_opts {
	unsigned version;       /* TT_LOG_OPTS_VERSION */
	const char *key;        /* a registered object, or NULL with kind + locator */
	const char *kind;       /* a store not registered: its kind */
	const json_t *locator;  /* and its locator */
	const char *ref;        /* from this native ref (NULL: the object's own) */
	size_t limit;           /* at most this many entries */
} tt_log_opts;

/*
 * Native history, newest first: of a registered object (key), or of a
 * locator of some kind not registered (kind + locator; key NULL).
 * *out: [{id, when, message, refs}].
 */
int tt_repo_log(tt_repo *repo, const tt_log_opts *opts, json_t **out, tt_error *err);

/* Set version to TT_DIFF_OPTS_VERSION (TT_DIFF_OPTS_INIT does). */
#define TT_DIFF_OPTS_VERSION 1u
#define TT_DIFF_OPTS_INIT { .version = TT_DIFF_OPTS_VERSION }
typedef struct tt_diff_opts {
	unsigned version;              /* TT_DIFF_OPTS_VERSION */
	const char *rev_a, *rev_b;     /* see tt_repo_diff */
	const char *const *selectors;  /* keys, or prefixes ending in '/' */
	size_t nselectors;
	bool content;                  /* content diffs from the backends */
	bool describe;                 /* each entry also names its kind and both states */
} tt_diff_opts;

/*
 * Object-level diff between two dataset revisions (rev_a and rev_b NULL:
 * the last commit -> the working tree; rev_a only: rev_a -> the working
 * tree), with content diffs from the backends when asked.  *out: [{key,
 * change, why, a, b, detail, detail_error}], tether-vcs's shape; with
 * describe, each entry also has kind, state_a and state_b (the recorded
 * states; null on the side without the object or without a state).
 */
int tt_repo_diff(tt_repo *repo, const tt_diff_opts *opts, json_t **out, tt_error *err);

/* Set version to TT_NEW_OPTS_VERSION (TT_NEW_OPTS_INIT does): a struct of
 * another version is refused with TT_EUSAGE, never misread. */
#define TT_NEW_OPTS_VERSION 1u
#define TT_NEW_OPTS_INIT { .version = TT_NEW_OPTS_VERSION }
typedef struct tt_new_opts {
	unsigned version;  /* TT_NEW_OPTS_VERSION */
	const char *rev;       /* move the working copy here first (NULL: stay) */
	const char *bookmark;  /* -b NAME: create it at rev and work on it */
	bool shared;           /* work on a bookmark another live checkout holds */
	bool keep;             /* keep working refs; refresh the baseline only */
	int eager;             /* 1 fork now, 0 lazily, -1 tether.toml [new] fork */
	bool discard;          /* reset branches holding writes no commit pinned */
	bool adopt;            /* take the bookmark's existing store branches as they are */
} tt_new_opts;

/*
 * Decide the bookmark this checkout works on and a working ref per
 * forkable object.  res->out: {bookmark, working_refs, pending_forks, fork_points, adopted}.
 * When some objects could not fork but the rest of the `new` took effect,
 * the call fails naming them and the rerun that finishes it, and *out is
 * set as well (a partial success).
 */
int tt_repo_new(tt_repo *repo, const tt_new_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		tt_error *err);

/*
 * A native handle description {key, read_only, address, type, ...} as
 * tether-vcs gives it: key the store's path or URI, type the handle class
 * ("GitHandle"); the object key and kind are `object` and `kind`.  rev
 * (or $TETHER_REV): read-only at that commit's pin.  read_only: 1, 0, or
 * -1 (writable for forkable objects, creating the deferred fork first).
 * Keys named `secret_...` (and `url_with_password`) carry credentials for a
 * caller in this process that opens the store itself (iceberg's
 * secret_catalog, ducklake's secret_attach_sql and secret_init_sql, the
 * secret_storage_options of a store on an object-store URI): never
 * print, log or store them; `tether open` does not show them.
 */
int tt_repo_open_object(tt_repo *repo, const char *key, const char *rev, int read_only,
			json_t **out, tt_error *err);

/* Set version to TT_OPEN_OPTS_VERSION (TT_OPEN_OPTS_INIT does): a struct of
 * another version is refused with TT_EUSAGE, never misread. */
#define TT_OPEN_OPTS_VERSION 1u
#define TT_OPEN_OPTS_INIT { .version = TT_OPEN_OPTS_VERSION }
typedef struct tt_open_opts {
	unsigned version;  /* TT_OPEN_OPTS_VERSION */
	const char *rev;       /* as tt_repo_open_object's rev */
	int read_only;         /* 1, 0 or -1, as tt_repo_open_object's */
	const char *worktree;  /* git, writable: check the branch out in a new worktree at this
				  absolute path (or where it already is checked out) */
} tt_open_opts;

/*
 * tt_repo_open_object with options.  A writable git handle also carries
 * `branch` (the branch its writes go to) and `worktree` (where that branch
 * is checked out, null when nowhere).  A writable open is refused while the
 * dataset's checkout is off the workspace's bookmark.
 */
int tt_repo_open_handle(tt_repo *repo, const char *key, const tt_open_opts *opts, json_t **out,
			tt_error *err);

/* Set version to TT_PROMOTE_OPTS_VERSION (TT_PROMOTE_OPTS_INIT does): a struct of
 * another version is refused with TT_EUSAGE, never misread. */
#define TT_PROMOTE_OPTS_VERSION 2u
#define TT_PROMOTE_OPTS_INIT { .version = TT_PROMOTE_OPTS_VERSION }
typedef struct tt_promote_opts {
	unsigned version;  /* TT_PROMOTE_OPTS_VERSION */
	const char *const *keys;  /* land only these (keys or "prefix/"); never moves the trunk */
	size_t nkeys;
	const char *rev;          /* promote what this dataset commit pinned */
	const char *strategy;     /* "auto" (default), "ff", "merge" */
	const char *message;      /* merge message for systems that record one */
	/* Write-audit-publish: after planning, run this command (/bin/sh -c;
	 * the caller's own, never one read from a dataset) with every object
	 * readable at exactly the heads the plan lands ($TETHER_CHECK_HANDLES,
	 * $TETHER_CHECK_REV, $TETHER_CHECK_BOOKMARK, $TETHER_REV).  A non-zero
	 * exit refuses the promote (TT_ERROR naming its status and last lines,
	 * nothing moved; TT_ECANCELED when tt_repo_cancel stopped it); exit 0
	 * lands it only while every head is still the one checked.  NULL: no
	 * check. */
	const char *check;
	/* The check's output (stdout and stderr, merged) as it comes; NULL:
	 * only its last lines are kept, for the error. */
	void (*check_output)(void *ctx, const char *data, size_t len);
	void *check_ctx;
} tt_promote_opts;

/*
 * Land this bookmark on the trunk.  res->out: {fast_forwarded, merged, skipped,
 * refused, held, conflicts, kept_forks, trunk_moved, trunk_held, failed},
 * and check {command, exit_status, rev, bookmark, heads} when the plan was
 * checked.  A preview with a check runs the check and moves nothing.
 */
int tt_repo_promote(tt_repo *repo, const tt_promote_opts *opts, const tt_plan_opts *plan,
		    tt_plan_result *res, tt_error *err);

/*
 * The dataset's fetch: read the heads of this bookmark's branches (bookmark
 * may be NULL: the current one), pin what moved and commit it.  *out:
 * {bookmark, committed: {key: {from, to}}, unchanged, skipped: {key:
 * reason}, vcs_commit, pinned: {key: pin_id|null}}.
 */
/* Set version to TT_PULL_OPTS_VERSION (TT_PULL_OPTS_INIT does). */
#define TT_PULL_OPTS_VERSION 1u
#define TT_PULL_OPTS_INIT { .version = TT_PULL_OPTS_VERSION }
typedef struct tt_pull_opts {
	unsigned version;             /* TT_PULL_OPTS_VERSION */
	const char *bookmark;         /* NULL: the current one */
	const char *const *selectors; /* keys or "prefix/"; NULL / 0: every object */
	size_t nselectors;
	const char *message;          /* the VCS commit's message (NULL: tether's own) */
} tt_pull_opts;
int tt_repo_pull(tt_repo *repo, const tt_pull_opts *opts, json_t **out, tt_error *err);

/*
 * Reverse a journaled operation (op_id NULL: the newest) where the stores
 * allow it.  *out: {undone, command, summary, undo_id, restored,
 * irreversible, skipped}.
 */
int tt_repo_undo(tt_repo *repo, const char *op_id, bool discard, json_t **out, tt_error *err);

/* Set version to TT_REPAIR_OPTS_VERSION (TT_REPAIR_OPTS_INIT does). */
#define TT_REPAIR_OPTS_VERSION 1u
#define TT_REPAIR_OPTS_INIT { .version = TT_REPAIR_OPTS_VERSION }
typedef struct tt_repair_opts {
	unsigned version;             /* TT_REPAIR_OPTS_VERSION */
	const char *const *selectors; /* keys or "prefix/"; NULL / 0: every object */
	size_t nselectors;
	bool all_history;             /* also the pins of manifests in history, not only the checkout's */
} tt_repair_opts;

/*
 * Recreate missing pins and lost working branches from the manifests.
 * res->out: {repinned, reforked, failed, notes}.
 */
int tt_repo_repair(tt_repo *repo, const tt_repair_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		   tt_error *err);

/* Set version to TT_RESTORE_OPTS_VERSION (TT_RESTORE_OPTS_INIT does). */
#define TT_RESTORE_OPTS_VERSION 1u
#define TT_RESTORE_OPTS_INIT { .version = TT_RESTORE_OPTS_VERSION }
typedef struct tt_restore_opts {
	unsigned version;             /* TT_RESTORE_OPTS_VERSION */
	const char *const *selectors; /* keys or "prefix/" (at least one) */
	size_t nselectors;
	const char *rev;              /* the dataset commit whose pins to restore */
	const char *at;               /* instead of rev: a native ref or state in each object's store */
	bool discard;                 /* throw away unpinned writes on the working branches */
} tt_restore_opts;

/*
 * Reset the named objects' working branches to what rev pinned, or (at
 * instead of rev) start them from the native ref or state at in each
 * object's store.  res->out: {from, at, working_refs: {key: ref}}.
 */
int tt_repo_restore(tt_repo *repo, const tt_restore_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		    tt_error *err);

/*
 * recover: tether's refs in each selected object's store (selectors: keys
 * or "prefix/"; none: every object, scoped false), grouped by the dataset
 * id they carry, and the steps that take them back.  Read-only.  *out: the
 * `recover --json` object {dataset_id, trunk, pinned, suggested_dataset_id,
 * scoped, objects, datasets, steps}; an object whose store could not be
 * listed carries its "error" (the call still succeeds).
 */
int tt_repo_recover(tt_repo *repo, const char *const *selectors, size_t n, bool scoped, json_t **out,
		    tt_error *err);

/* Set version to TT_FORGET_OPTS_VERSION (TT_FORGET_OPTS_INIT does). */
#define TT_FORGET_OPTS_VERSION 1u
#define TT_FORGET_OPTS_INIT { .version = TT_FORGET_OPTS_VERSION }
typedef struct tt_forget_opts {
	unsigned version;         /* TT_FORGET_OPTS_VERSION */
	const char *workspace_id; /* NULL: this checkout's */
} tt_forget_opts;

/*
 * forget-workspace: remove a workspace's workspace.toml and ops.jsonl and
 * have the VCS stop tracking its checkout (git's main worktree stays).
 * opts->workspace_id: full or 8 characters (NULL: this one).  res->out:
 * {workspace, removed_files, vcs, failed}.
 */
int tt_repo_forget_workspace(tt_repo *repo, const tt_forget_opts *opts, const tt_plan_opts *plan,
			     tt_plan_result *res, tt_error *err);

/*
 * abandon: drop the commits revs name from VCS history, later commits
 * keeping their manifests exactly; a bookmark on one moves to the nearest
 * kept ancestor.  Then plan gc (applied when gc).  Journaled, not
 * undoable.  *out: {abandoned, gc_plan, gc_applied, gc_report (when
 * applied), bookmarks_moved, gc_plan_text}.
 */
int tt_repo_abandon(tt_repo *repo, const char *const *revs, size_t n, bool gc, json_t **out, tt_error *err);

/* Set version to TT_DROP_OPTS_VERSION (TT_DROP_OPTS_INIT does). */
#define TT_DROP_OPTS_VERSION 1u
#define TT_DROP_OPTS_INIT { .version = TT_DROP_OPTS_VERSION }
typedef struct tt_drop_opts {
	unsigned version;      /* TT_DROP_OPTS_VERSION */
	const char *bookmark;  /* tt_repo_drop: the bookmark (tt_repo_gc_expired: each expired one) */
	const char *to;        /* where this checkout goes when it is on it (NULL: the trunk) */
	bool delete_stores;    /* also the experimental created-store step */
	bool force_prune;      /* delete its branches even when they hold unpinned writes */
	bool release_foreign;  /* release the pins only its commits named that another clone made
				  (gc --release-foreign's rule: every remote fetched first) */
	bool dry_run;          /* tt_repo_gc_expired: plan each drop, apply none (tt_repo_drop
				  takes a tt_plan_opts instead, and refuses this) */
} tt_drop_opts;

/*
 * drop: throw opts->bookmark away - leave it when this checkout is on it
 * (for opts->to, default the trunk), drop the commits only it reaches,
 * delete it, then gc --prune-bookmarks for its branches alone.
 * res->out: {bookmark, left_for, abandoned, gc: the gc report}.  Not
 * undoable.
 */
int tt_repo_drop(tt_repo *repo, const tt_drop_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		 tt_error *err);

/*
 * list_bookmarks: every bookmark of the dataset, the trunk first.  *out: {trunk,
 * now, bookmarks: [{name, trunk, head, created, expires (ISO 8601 UTC or
 * null), expired, working_refs: {key: [branch]}, checkouts: [{workspace_id,
 * root, here}]}], errors: {key: message}}.  stores: also list each forkable
 * object's working branches in its store (else only those the live
 * checkouts hold); a store that cannot be listed goes into errors.  The
 * trunk never expires.
 */
int tt_repo_list_bookmarks(tt_repo *repo, bool stores, json_t **out, tt_error *err);

/*
 * Set bookmark's expiry to expires (UTC seconds since the epoch), or clear
 * it: a commit on the bookmark of .tether/bookmarks/<bookmark>.toml, made
 * in a checkout on it; journaled as "bookmarks" (not undoable: the VCS
 * undoes a commit).  Refused for the trunk.  Clearing an expiry there is
 * none of, or setting the one there is, commits nothing.  *out: {bookmark,
 * created, expires, commit (null when nothing changed), changed}.
 */
int tt_repo_set_expiry(tt_repo *repo, const char *bookmark, long long expires, bool clear, json_t **out,
		       tt_error *err);

/*
 * gc --expired: drop every bookmark whose expiry has passed, each through
 * tt_repo_drop's own plan and apply (journaled as its drop).  A bookmark
 * drop refuses, one this checkout works on, or one whose branches hold
 * unpinned writes (without force_prune) is refused alone; the others still
 * go; opts as tt_repo_drop's (bookmark and to unused).  *out: {dry_run,
 * now, bookmarks: [{bookmark,
 * created, expires, outcome: "planned" | "dropped" | "refused" | "failed",
 * plan, plan_text (dry runs), result (drop's *out), error}]}.
 */
int tt_repo_gc_expired(tt_repo *repo, const tt_drop_opts *opts, json_t **out, tt_error *err);

/*
 * upgrade: bring a dataset an older tether-vcs wrote to this format.
 * tt_repo_open_outdated opens one whose tether.toml records an older
 * version (only for this).  res->out: {from_version, to_version, renamed_pins, renamed_branches,
 * rewritten_commits, refingerprinted, rewritten_manifests,
 * rewritten_indexes, copied_listings, failed, vcs_commit}.  A dataset that
 * needs a part this build lacks is refused, naming it, before anything is
 * written.
 */
int tt_repo_open_outdated(const char *start_dir, tt_repo **out, tt_error *err);
/* Set version to TT_UPGRADE_OPTS_VERSION (TT_UPGRADE_OPTS_INIT does). */
#define TT_UPGRADE_OPTS_VERSION 1u
#define TT_UPGRADE_OPTS_INIT { .version = TT_UPGRADE_OPTS_VERSION }
typedef struct tt_upgrade_opts {
	unsigned version;       /* TT_UPGRADE_OPTS_VERSION */
	bool ignore_immutable;  /* record an immutable object's changed state instead of refusing */
} tt_upgrade_opts;
int tt_repo_upgrade(tt_repo *repo, const tt_upgrade_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		    tt_error *err);

/*
 * This checkout's journal, newest first (at most limit entries): *out the
 * `ops --json` list, *text (may be NULL) the text lines.
 */
int tt_repo_ops(tt_repo *repo, size_t limit, json_t **out, char **text, tt_error *err);

/* Every registered key, sorted (*out: a JSON array of strings). */
int tt_repo_keys(tt_repo *repo, json_t **out, tt_error *err);

/*
 * The kinds this tether knows: [{kind, installed, maturity, tier,
 * capabilities: [names], note, schemes}], sorted by kind.  schemes: the
 * URI schemes this build opens the kind's stores through ("file" for
 * local paths, "s3", "gs", "az", ...), null for kinds not addressed by a
 * store URI or not built.
 */
json_t *tt_backends(void);

/* Progress of long work: tt_repo_set_progress in <tether/progress.h>. */

/* --- read-only views for language bindings -------------------------------- */

/*
 * The working tree's manifests, read afresh from disk: {key: {key, kind,
 * locator, policy: {file, pin}, state|null, pin: {id, ref}|null,
 * captured_at|null, recoverable, origin: "adopted"|"created"}}.
 */
int tt_repo_objects(tt_repo *repo, json_t **out, tt_error *err);
/* The working copy's commit (git: HEAD), full length; *out is malloc'd. */
int tt_repo_current_rev(tt_repo *repo, char **out, tt_error *err);
/* "git" or "jj". */
const char *tt_repo_vcs_kind(const tt_repo *repo);
/* The bookmark this checkout works on, or NULL (a read-only working copy). */
const char *tt_repo_bookmark(const tt_repo *repo);

/* A pin id, "<dataset8>.<hash16>", over kind, the locator identity and the
 * content state, as tether-vcs's compute_pin_id. */
int tt_compute_pin_id(const char *kind, const json_t *identity, const json_t *state, const char *dataset_id,
		      char out[64], tt_error *err);
/* A state's listing file name, "<hash20>.jsonl", as tether-vcs's listing_name. */
int tt_compute_listing_name(const char *kind, const json_t *identity, const json_t *state, char out[32],
			    tt_error *err);
/* The store branch of a bookmark, "tether.ws.<dataset8>.<slug>"; *out is malloc'd. */
int tt_compute_working_ref_name(const char *dataset_id, const char *bookmark, char **out, tt_error *err);
/* The manifest hash (64 hex digits) of {key: manifest} in tt_repo_objects's
 * shape (only key, kind, locator, policy, state, pin, recoverable count). */
int tt_manifest_hash(const json_t *manifests, char hex[65], tt_error *err);

/* --- gc ------------------------------------------------------------------- */

/* Set version to TT_GC_OPTS_VERSION (TT_GC_OPTS_INIT does): a struct of
 * another version is refused with TT_EUSAGE, never misread. */
#define TT_GC_OPTS_VERSION 2u
#define TT_GC_OPTS_INIT { .version = TT_GC_OPTS_VERSION }
typedef struct tt_gc_opts {
	unsigned version;  /* TT_GC_OPTS_VERSION */
	bool dry_run;                        /* tt_repo_gc: report what would go, release nothing */
	bool release_foreign;                /* also unpin unreferenced pins this clone did not create */
	bool prune_bookmarks;                /* judge stray tether.ws.* branches */
	const char *const *keep_bookmarks;   /* bookmarks whose branches pruning keeps */
	size_t nkeep;
	bool force_prune;                    /* delete stray branches holding unpinned data too */
	bool delete_stores;                  /* experimental: also reclaim stores this dataset created */
	const char *const *stores;           /* "KIND=LOCATOR" created stores to consider (implies delete_stores) */
	size_t nstores;
	/* A scoped plan (TT_PLAN_PREVIEW only; tether-vcs's plan_gc(scope=GcScope(...))):
	 * judge only these bookmarks' branches, walk history as if
	 * excluded_commits were gone, treat gone_bookmarks as not live.  A plan
	 * with excluded commits is a preview and is refused when applied. */
	bool scoped;
	const char *const *scope_bookmarks;  /* NULL / 0: every stray branch */
	size_t nscope_bookmarks;
	const char *const *excluded_commits;
	size_t nexcluded;
	const char *const *gone_bookmarks;
	size_t ngone;
} tt_gc_opts;

/*
 * Release what nothing references.  A pin is referenced by any manifest in
 * visible VCS history, in this or any other live checkout's working tree,
 * or by an operation still running or interrupted in one of them.  Plain gc
 * unpins this dataset's unreferenced pins that this clone created, when the
 * repository has no remote (others: `keep-pin`, unless release_foreign,
 * which first requires every remote's branches and tags to be fetched; a pin
 * a commit that left this clone names is kept either way - see docs/gc.md),
 * forgets the working refs of removed
 * objects and deletes listings no manifest names; it never deletes a
 * branch.  prune_bookmarks judges stray tether.ws.* branches (delete when
 * the head is pinned or equals the base, else keep unless force_prune).
 * delete_stores (experimental) also considers the stores this dataset
 * created (the clone's created-store index, plus stores) that no manifest
 * names: this dataset's refs in them are released and, when the store's
 * owner marker names this dataset and the backend confirms nothing else
 * remains, the store is deleted (`delete-store`, last); otherwise
 * `keep-store` with the reason.  It also releases this dataset's dead refs
 * in stores this clone touched that no manifest names.
 *
 * Plans then applies under the checkout and repository locks (a preview
 * writes nothing but seeding the clone's pinned index the first time).
 * res->out is the report: {unpinned: {kind: [pin ids]}, kept_pins, deleted_working_refs:
 * {key: [refs]}, kept_working_refs, forgotten_working_refs,
 * deleted_listings: [names], deleted_stores: {key: where}, kept_stores:
 * {key: reason}, forgotten_stores: [keys], dry_run, failed: {"<op> <target> (key)": error},
 * kept_pins_shared: {kind: [pin ids]}, those of kept_pins kept because
 * another clone may hold them (not in tether-vcs's report)}.
 * Once the plan is applied the call returns 0 whatever single actions
 * failed: those are in "failed", each attempted independently.
 */
int tt_repo_gc(tt_repo *repo, const tt_gc_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
	       tt_error *err);

/* --- for language bindings: what tether-vcs's Python API offers beyond the
 * commands above (export / publish / import) ------------------------------ */

/*
 * export (experimental, as tether-vcs's Repo.export): the history's tables.
 * *out: {tables: {name: [row]},
 * head, exported_at}, each row a whole object keyed by column.
 */
/* Set version to TT_EXPORT_OPTS_VERSION (TT_EXPORT_OPTS_INIT does). */
#define TT_EXPORT_OPTS_VERSION 1u
#define TT_EXPORT_OPTS_INIT { .version = TT_EXPORT_OPTS_VERSION }
typedef struct tt_export_opts {
	unsigned version;         /* TT_EXPORT_OPTS_VERSION */
	const char *const *revs;  /* NULL / 0: every reachable commit */
	size_t nrevs;
	bool listings;            /* also listings and listing_entries */
	bool workspace;           /* also this checkout's working refs and snapshot */
} tt_export_opts;
int tt_repo_export(tt_repo *repo, const tt_export_opts *opts, json_t **out, tt_error *err);
/* Write an export's tables: format "sqlite" (path a file; append upserts
 * into an existing one) or "parquet" / "csv" / "jsonl" (path a directory).
 * *nfiles (may be NULL): the files written. */
int tt_export_write(const json_t *bundle, const char *path, const char *format, bool append, size_t *nfiles,
		    tt_error *err);
/* publish: upsert an export's tables into schema of the PostgreSQL
 * database dsn names, in one transaction.  *report: {schema, upserted:
 * {table: n}, skipped_commits, dry_run}. */
int tt_export_publish(const json_t *bundle, const char *dsn, const char *schema, bool dry_run, json_t **report,
		      tt_error *err);
/* Set version to TT_IMPORT_OPTS_VERSION (TT_IMPORT_OPTS_INIT does). */
#define TT_IMPORT_OPTS_VERSION 1u
#define TT_IMPORT_OPTS_INIT { .version = TT_IMPORT_OPTS_VERSION }
typedef struct tt_import_opts {
	unsigned version;    /* TT_IMPORT_OPTS_VERSION */
	const json_t *rows;  /* rows in the canonical columns (key, kind, uri, locator_json,
				policy_file, policy_pin, at); unused by TT_PLAN_APPLY */
	bool sync;           /* also remove the objects the rows do not name */
} tt_import_opts;
/* import: add / update / remove (sync: also remove) objects from rows.
 * res->out: {added, updated, removed, unchanged}. */
int tt_repo_import(tt_repo *repo, const tt_import_opts *opts, const tt_plan_opts *plan, tt_plan_result *res,
		   tt_error *err);

/* --- SQL over the dataset at a revision ------------------------------------ */

/* Where tt_repo_query's rows go: the column names once, then each row's
 * cells (NULL for SQL NULL; lens their byte lengths).  A non-zero return
 * stops the query and is returned. */
typedef struct tt_query_sink {
	int (*columns)(void *ctx, size_t n, const char *const *names);
	int (*row)(void *ctx, size_t n, const char *const *cells, const size_t *lens);
	void *ctx;
} tt_query_sink;

/* Set version to TT_QUERY_OPTS_VERSION (TT_QUERY_OPTS_INIT does): a struct of
 * another version is refused with TT_EUSAGE, never misread. */
#define TT_QUERY_OPTS_VERSION 1u
#define TT_QUERY_OPTS_INIT { .version = TT_QUERY_OPTS_VERSION }
typedef struct tt_query_opts {
	unsigned version;  /* TT_QUERY_OPTS_VERSION */
	const char *rev;            /* a dataset revision; NULL: what the working copy records */
	const char *const *keys;    /* only these objects (keys or "prefix/"); NULL: the objects
				       the SQL names (every object for schema, explain, engine) */
	size_t nkeys;
	const char *sql;            /* run it; the last statement's rows go to sink */
	const tt_query_sink *sink;
	bool json_cells;            /* cells as DuckDB's to_json gives them, else its VARCHAR cast */
	bool schema;                /* *out: the relations with their columns (no sql) */
	bool explain;               /* *out: the statements that make the relations; nothing runs */
	const char *engine;         /* "duckdb", "spark", "trino", "polars": *out: each object's
				       snippet and options for that engine; nothing runs */
} tt_query_opts;

/*
 * Every object of the dataset at rev as a relation named by its key, read
 * at exactly the recorded state, in an in-process DuckDB (libduckdb and
 * DuckDB's extensions, found locally; nothing is downloaded): delta at its
 * version, iceberg at its snapshot, lance at its version, ducklake and
 * neon attached as a catalog named by the key, dolt as a schema of views
 * at the pinned commit, file objects of Parquet / CSV / JSON files while
 * their bytes are the recorded state.  Credentials reach DuckDB as
 * in-memory secrets only.  *out: {rev, relations: [{name, key, kind, at,
 * reader, columns?}], not_relations: {key: why}, rows (with sql),
 * statements (explain), engine, objects: {key: {snippet, options} |
 * {refused}}, script (engine)}; and for a caller in this process that
 * opens its own DuckDB, secret_setup: the statements with credentials
 * (never print, log or store it).
 */
int tt_repo_query(tt_repo *repo, const tt_query_opts *opts, json_t **out, tt_error *err);

/* --- for front ends: what the `tether` command line reads beyond the
 * commands, so that it is built on this API alone -------------------------- */

/* The tether-vcs release this tether is compatible with, "0.1.0b7": every
 * saved plan's tether_version. */
const char *tt_compat_version(void);

/*
 * One kind, by name: its tt_backends() entry plus "path_locator" (true when
 * the locator is a path, so `add`'s lone positional is the LOCATOR and the
 * key comes from it), "path_keys" (the locator fields that hold local
 * paths) and "locator_key" (the locator field `add`'s positional LOCATOR
 * fills: "uri", or "url" for dolt).  TT_ECONFIG, naming the known kinds,
 * when there is none.
 */
int tt_kind_describe(const char *kind, json_t **out, tt_error *err);

/* The dataset repository's bookmarks: {name: commit}. */
int tt_repo_bookmarks(tt_repo *repo, json_t **out, tt_error *err);

/*
 * A string from this checkout's .tether/secrets.toml, table.key ([publish]
 * dsn, [import] query), or NULL when absent or not a string.  It may hold a
 * credential: never print, log or store it.  Borrowed from the repo.
 */
const char *tt_repo_secret_setting(const tt_repo *repo, const char *table, const char *key);

/* The command a saved plan belongs to ("gc", "new", ...), after checking it
 * is a plan this tether reads; *command is malloc'd. */
int tt_plan_command_of(const char *plan_json, size_t len, char **command, tt_error *err);
/* Whether a plan action with this op changes something: false for the ops
 * that only say what stays ("keep-pin", "hold", "refuse", "trunk", ...)
 * and for NULL. */
bool tt_plan_action_writes(const char *op);

/* s quoted as tether's messages quote a string (Python's repr(): 'a',
 * "it's", escapes for control characters); malloc'd, NULL on OOM. */
char *tt_repr_str(const char *s);

/* What `export`, `publish` and `import` say before they start. */
#define TT_REGISTRY_NOTE "export/publish/import are experimental (tether.experimental.registry): " \
			 "the schema may change before 0.2"

/* publish --dry-run: tt_export_publish's dry-run report as a plan (an
 * "upsert" per table with rows, a note for the commits already there):
 * the saved-plan JSON and its text. */
int tt_export_publish_plan(const json_t *report, const char *head, char **plan_json, char **plan_text,
			   tt_error *err);
/* import's source: rows from a PostgreSQL DSN or SQLite file (exactly one
 * of table or query; the query runs alone in a read-only transaction), a
 * .csv or a .jsonl / .ndjson file.  *rows: a JSON array of row objects. */
int tt_import_read_rows(const char *source, const char *table, const char *query, json_t **rows,
			tt_error *err);

TT_API_END

#ifdef __cplusplus
}
#endif
#endif
