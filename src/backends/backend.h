/*
 * backends/backend.h - the contract every kind of store implements.
 *
 * One backend instance serves every object of its kind; per-object
 * addressing travels in the locator (a JSON object).  States are JSON
 * objects: their *content* keys say what the data is, their volatile keys
 * (tt_kind.volatile_keys) only where to find it; equality, pin ids and
 * listing names use content keys only (tt_content_state).
 *
 * Every operation returns 0 or a negative tt_code and fills err; errors
 * name the kind (tt_error_object(err, NULL, kind)) and the engine adds the
 * object key.  Conventions:
 *   - TT_EREFMOVED: a conditional move found another head; nothing moved;
 *   - TT_ECONFLICT: a merge found conflicts (listed in *conflicts); the base
 *     is untouched;
 *   - TT_ECAPABILITY: the kind cannot do this;
 *   - TT_EBACKEND: anything else the store refused or failed.
 * Backends must be safe to call from several threads at once for different
 * objects, and for the same object where the store itself is (racing
 * conditional forks: exactly one wins).
 */
#ifndef TT_BACKENDS_BACKEND_H
#define TT_BACKENDS_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "core/kinds.h"
#include "core/pyvalue.h"
#include "util/buf.h"
#include "util/error.h"

#define TT_BACKEND_ABI 1
#define TT_WORKING_REF_PREFIX "tether.ws."
#define TT_MAX_DIFF_ENTRIES 2000

/* A pin: the native ref holding a state. */
typedef struct tt_pin {
	char id[64];    /* "<dataset8>.<hash16>" */
	char ref[96];   /* the native name: "tether.<id>" (or a generation "tether.<id>.2") */
	bool created;   /* this call made the ref (commit rolls back only those) */
} tt_pin;

/* What an operation reads or moves from. */
typedef enum tt_target_kind {
	TT_TARGET_BASE,   /* the locator's base: its `at`, else its upstream branch */
	TT_TARGET_REF,    /* a branch name (a working ref) */
	TT_TARGET_PIN,    /* a pin */
	TT_TARGET_STATE   /* a recorded state (addressable kinds) */
} tt_target_kind;

typedef struct tt_target {
	tt_target_kind kind;
	const char *ref;        /* TT_TARGET_REF */
	const tt_pin *pin;      /* TT_TARGET_PIN */
	const json_t *state;    /* TT_TARGET_STATE */
} tt_target;

/* The head a conditional move expects: anything (NONE: unconditional), no
 * ref at all (ABSENT), or a state (compared on content keys). */
typedef enum tt_expect_kind { TT_EXPECT_NONE, TT_EXPECT_ABSENT, TT_EXPECT_STATE } tt_expect_kind;
typedef struct tt_expect {
	tt_expect_kind kind;
	const json_t *state;
} tt_expect;

typedef enum tt_verify_status {
	TT_VERIFY_OK, TT_VERIFY_DRIFTED, TT_VERIFY_MISSING, TT_VERIFY_UNKNOWN
} tt_verify_status;
const char *tt_verify_status_name(tt_verify_status s); /* "ok", "drifted", ... */

/* What changed inside an object between two states (diff --content). */
typedef struct tt_diff_entry {
	char *path;
	char *change;   /* "added" | "removed" | "modified" | "renamed" */
	char *detail;   /* may be NULL */
} tt_diff_entry;

typedef struct tt_object_diff {
	char unit[24];          /* "files", "nodes", "commits", "keys", ... */
	long long added, removed, modified;   /* exact counts */
	tt_diff_entry *entries; /* at most TT_MAX_DIFF_ENTRIES */
	size_t nentries, alloc;
	bool truncated;
	char *note;             /* may be NULL */
} tt_object_diff;

void tt_object_diff_init(tt_object_diff *d, const char *unit);
void tt_object_diff_release(tt_object_diff *d);
/* Count one change and keep its entry while under the cap. */
int tt_object_diff_add(tt_object_diff *d, const char *path, const char *change,
		       const char *detail, tt_error *err);
/* {summary, unit, added, removed, modified, truncated, note, entries: [...]} */
json_t *tt_object_diff_json(const tt_object_diff *d);
/* Nothing counted and no entry (ObjectDiff.is_empty). */
bool tt_object_diff_is_empty(const tt_object_diff *d);
/* "+A -R ~M <unit>[ (first N shown)][; note]" (caller frees; NULL on OOM). */
char *tt_object_diff_summary(const tt_object_diff *d);

/* One entry of native history, newest first; id is accepted as `at`. */
typedef struct tt_history_entry {
	char *id;
	char *when;      /* ISO 8601 UTC, or NULL */
	char *message;
	json_t *refs;    /* array of strings (branches, tags, pins pointing here) */
} tt_history_entry;
void tt_history_release(tt_history_entry *entries, size_t n);

/* Work a backend reports while a call runs: files and bytes read so far
 * out of what the call has to read (the file kind's hashing; answers from
 * a cache are not counted).  Called from the backend's own threads,
 * possibly from several at once: the callback must be thread-safe and
 * cheap (a progress bar throttles itself). */
typedef struct tt_backend_work {
	uint64_t files_done, files_total;
	uint64_t bytes_done, bytes_total;
	uint64_t bytes_step;  /* read for the file this call reports */
} tt_backend_work;
typedef void (*tt_backend_work_fn)(void *ctx, const tt_backend_work *p);

typedef struct tt_backend tt_backend;

typedef struct tt_backend_ops {
	int abi;  /* TT_BACKEND_ABI */

	/* --- required ---------------------------------------------------- */
	/* The subset of the locator naming the system (local paths resolved). */
	int (*identity)(tt_backend *b, const json_t *loc, json_t **out, tt_error *err);
	/* The current state at working_ref, or at the base (honouring `at`)
	 * when working_ref is NULL. */
	int (*fingerprint)(tt_backend *b, const json_t *loc, const char *working_ref,
			   json_t **state, tt_error *err);

	/* --- PIN ----------------------------------------------------------- */
	/* Create "tether.<pin_id>" at state.  Idempotent (created = false when
	 * it already holds the state); TT_EBACKEND when it holds another state
	 * or the state is no longer reachable. */
	int (*pin)(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id,
		   tt_pin *out, tt_error *err);
	/* Delete the pin; already gone is success; must not remain afterwards. */
	int (*unpin)(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err);
	/* Ids (without "tether.") of every dataset's pins: a JSON array. */
	int (*list_pins)(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err);
	/* With a pin: OK, DRIFTED or MISSING.  Without: UNKNOWN unless deep. */
	int (*verify)(tt_backend *b, const json_t *loc, const json_t *state, const tt_pin *pin,
		      bool deep, tt_verify_status *status, char **message, tt_error *err);

	/* --- FORK ---------------------------------------------------------- */
	/* Make branch `name` at source (a pin, or a state for record objects);
	 * an existing branch is reset onto it, one already there left alone.
	 * expected: see tt_expect.  *ref_out: the working ref (a sibling name
	 * is allowed). */
	int (*fork)(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		    const tt_expect *expected, char **ref_out, tt_error *err);
	/* Delete a branch fork made (never the base); already gone is success. */
	int (*delete_working_ref)(tt_backend *b, const json_t *loc, const char *ref, tt_error *err);
	/* Native tether.ws.* branches of every dataset (JSON array). */
	int (*list_working_refs)(tt_backend *b, const json_t *loc, json_t **refs, tt_error *err);
	/* Why ref cannot be deleted now (*why NULL: it can). */
	int (*working_ref_blockers)(tt_backend *b, const json_t *loc, const char *ref, char **why,
				    tt_error *err);

	/* --- reading ------------------------------------------------------- */
	/* A handle description: {"type", "address", "read_only", ...fields a
	 * caller needs to open it natively}. */
	int (*open)(tt_backend *b, const json_t *loc, const tt_target *target, bool read_only,
		    json_t **handle, tt_error *err);
	/* Optional (kinds whose branches are checked out in a directory: git).
	 * Where branch ref is checked out (*where NULL: nowhere); with want (an
	 * absolute path, may be NULL), a new checkout of it there -- unless it
	 * is already checked out at exactly that place. */
	int (*checkout)(tt_backend *b, const json_t *loc, const char *ref, const char *want, char **where,
			tt_error *err);

	/* --- PROMOTE / MERGE --------------------------------------------- */
	/* Fast-forward the base to source; refuse unless the base head is an
	 * ancestor; no-op when already there.  *new_state: the base's state. */
	int (*promote)(tt_backend *b, const json_t *loc, const tt_target *source,
		       const tt_expect *expected, json_t **new_state, tt_error *err);
	int (*merge)(tt_backend *b, const json_t *loc, const tt_target *source, const char *message,
		     const tt_expect *expected, json_t **new_state, json_t **conflicts, tt_error *err);
	/* Whether promote (merge false) or merge could move the base onto
	 * source now, moving nothing: TT_EBACKEND naming what stands in the way
	 * (a lock file left behind, a dirty or missing checkout) and its fix,
	 * TT_EREFMOVED when the base is no longer at expected (the head the
	 * plan reviewed, as promote and merge receive it).  promote asks it of
	 * every object before it moves any.  NULL: the move itself is the only
	 * check. */
	int (*check_move)(tt_backend *b, const json_t *loc, const tt_target *source, const tt_expect *expected,
			  bool merge, tt_error *err);
	/* *answer: 1 yes, 0 no, -1 unknown. */
	int (*ancestor_of)(tt_backend *b, const json_t *loc, const json_t *ancestor,
			   const tt_target *descendant, int *answer, tt_error *err);

	/* --- DIFF / HISTORY ------------------------------------------------ */
	/* A per-state listing to store with the commit (*text NULL: none). */
	int (*listing)(tt_backend *b, const json_t *loc, const json_t *state, char **text,
		       tt_error *err);
	/* la / lb: the two states' stored listings, or NULL. */
	int (*diff)(tt_backend *b, const json_t *loc, const json_t *a, const json_t *bstate,
		    const char *la, const char *lb, tt_object_diff *out, tt_error *err);
	/* Newest first from ref (NULL: the base), at most limit entries. */
	int (*history)(tt_backend *b, const json_t *loc, const char *ref, size_t limit,
		       tt_history_entry **out, size_t *n, tt_error *err);

	/* --- CREATE (experimental) ------------------------------------------ */
	int (*create)(tt_backend *b, const json_t *loc, const char *owner, json_t **state,
		      tt_error *err);
	/* *owner NULL: no marker (or no store). */
	int (*owner)(tt_backend *b, const json_t *loc, char **owner, tt_error *err);
	/* *answer: 1 empty, 0 not, -1 cannot tell (keep). ignoring: refs about
	 * to be deleted (JSON array or NULL). */
	int (*is_ref_empty)(tt_backend *b, const json_t *loc, const json_t *ignoring, int *answer,
			    tt_error *err);
	int (*delete_store)(tt_backend *b, const json_t *loc, tt_error *err);

	/* --- refinements (NULL: the defaults described) -------------------- */
	/* Default: the kind's caps. */
	unsigned (*effective_capabilities)(tt_backend *b, const json_t *loc, const char *file_policy);
	/* Default: true. */
	bool (*state_addressable)(tt_backend *b, const json_t *loc, const json_t *state);
	/* Default: canon(identity). *out caller-owned. */
	int (*branch_scope)(tt_backend *b, const json_t *loc, char **out, tt_error *err);
	int (*ref_namespace)(tt_backend *b, const json_t *loc, char **out, tt_error *err);
	/* Default: locator "branch", else "main". */
	int (*base_branch)(tt_backend *b, const json_t *loc, char **out, tt_error *err);
	/* NEEDS_QUIESCENCE: TT_EBACKEND when writers are active. */
	int (*check_quiescence)(tt_backend *b, const json_t *loc, const char *working_ref,
				tt_error *err);

	/* Clear what an interrupted fork of `name` left (the branch's files
	 * written, its ref not), so the fork can be made again; a ref that
	 * exists, or files that are more than such a leftover, are left alone.
	 * The engine calls it only when this checkout's journal shows a fork of
	 * that name that never finished.  *cleared: something was removed.
	 * NULL: the kind leaves nothing half-made. */
	int (*clear_partial_fork)(tt_backend *b, const json_t *loc, const char *name, bool *cleared,
				  tt_error *err);

	/* Refuse at `add` a locator its store contradicts (git: a `remote` the
	 * repository has not configured).  Default: nothing to check. */
	int (*check_locator)(tt_backend *b, const json_t *loc, tt_error *err);

	/* Rename native ref `old` (a pin's "tether.<id>" or a working branch)
	 * to `new_name` in place, keeping what it holds and what hangs off it
	 * (`upgrade`'s renames).  TT_EBACKEND when old is not there or the new
	 * name is taken.  NULL: the engine pins again and unpins, or forks and
	 * deletes (Neon needs it: a pin there is a branch with children). */
	int (*rename_ref)(tt_backend *b, const json_t *loc, const char *old, const char *new_name,
			  tt_error *err);

	/* For a caller in this process that opens the object's store itself:
	 * the options its object-store URI is opened with, credentials
	 * included (*out a new object; never into a message, a state or the
	 * journal).  NULL: the kind opens no object store (the caller adds
	 * nothing). */
	int (*storage_options)(tt_backend *b, const json_t *loc, json_t **out, tt_error *err);
	/* Report the work of the calls that follow to fn (NULL: stop).
	 * NULL: the kind reports none. */
	void (*progress)(tt_backend *b, tt_backend_work_fn fn, void *ctx);

	/* What to do instead, appended to a refused promote (NULL: nothing). */
	const char *promote_hint;
	/* Why a kind without PIN / FORK / MERGE cannot: the text of the
	 * capability error the kit's stubs (backends/kit.h) and the dispatcher
	 * give. */
	const char *no_pin;
	const char *no_fork;
	const char *no_merge;  /* tt_kit_no_merge's text: a kind that promotes but cannot merge */

	void (*free)(tt_backend *b);
} tt_backend_ops;

/* The engine's view of a built backend. */
struct tt_backend {
	const tt_backend_ops *ops;
	const tt_kind *kind;
	json_t *config;       /* merged [backends.<kind>]: committed allowlisted keys under secrets */
	json_t *secret_rules; /* URI prefix -> credential options (object) */
	char *cache_dir;      /* .tether/cache of the checkout */
	char *checkout;       /* the dataset's VCS root: backends refuse paths inside it */
	void *impl;           /* the backend's own state */
};

/* Built by tt_backend_new (backends/registry.h).  NULL-safe. */
void tt_backend_free(tt_backend *b);

/* Replace b's secret rules (see tt_secrets_rules); takes the reference. */
void tt_backend_set_secret_rules(tt_backend *b, json_t *rules);

/*
 * The one call through which a backend gets an object's credentials:
 * [backends.<kind>] (committed, under secrets.toml's) with the longest
 * matching secret rule for the locator's store URI over it, where an
 * [objects."<key>"] entry is the exact rule on its own URI.  *out is a new
 * object (empty when nothing applies: the environment's credential chain
 * is then the backend's to use).  The values are secrets: pass them to the
 * store and never into a message, a state or the journal.
 */
int tt_backend_secrets_for(const tt_backend *b, const json_t *locator, json_t **out, tt_error *err);

/* Effective capabilities of one object: the backend's refinement, minus PIN
 * under `pin = "record"`. */
unsigned tt_backend_caps(tt_backend *b, const json_t *loc, const char *file_policy,
			 const char *pin_policy);

/* Two states equal on content keys. */
bool tt_states_equal(const tt_kind *kind, const json_t *a, const json_t *b);

/* The default conditional check for backends without native CAS: compare
 * `ref`'s current head (fingerprint) with expected.  TT_EREFMOVED naming
 * what was found. */
int tt_check_expected(tt_backend *b, const json_t *loc, const char *ref, const tt_expect *expected,
		      tt_error *err);
/* The same, naming the move in the message ("fork", "promote", "merge");
 * tt_check_expected says "fork", as tether-vcs's default does.  ref NULL
 * checks the base head (the locator without `at`). */
int tt_check_expected_for(tt_backend *b, const json_t *loc, const char *ref,
			  const tt_expect *expected, const char *what, tt_error *err);

/* Is code one a store's refusal carries (tether-vcs's BackendError and its
 * subclasses: EBACKEND, EREFMOVED, ECONFLICT, ECAPABILITY)? */
bool tt_backend_error_code(int code);


/* Per-kind constructors (registered in backends/registry.c). */
int tt_memory_backend_new(tt_backend *b, tt_error *err);
int tt_file_backend_new(tt_backend *b, tt_error *err);
int tt_git_backend_new(tt_backend *b, tt_error *err);
/* Every backend's error helpers: set err (printf-style, or out of memory)
 * with the backend's kind attached.  The macros give back the code as an
 * expression the compiler can see, so `return ERR(...)` keeps flow
 * analysis exact. */
void tt_backend_seterr(tt_error *err, const char *kind, int code, const char *fmt, ...)
	TT_PRINTF(4, 5);
void tt_backend_setoom(tt_error *err, const char *kind);
static inline int tt_backend_code(int code)
{
	return code;
}
#define TT_BACKEND_ERR(err, kind, code, ...) \
	tt_backend_code((tt_backend_seterr((err), (kind), (code), __VA_ARGS__), (code)))
#define TT_BACKEND_OOM(err, kind) tt_backend_code((tt_backend_setoom((err), (kind)), TT_ENOMEM))

int tt_delta_backend_new(tt_backend *b, tt_error *err);
int tt_lance_backend_new(tt_backend *b, tt_error *err);
int tt_icechunk_backend_new(tt_backend *b, tt_error *err);
/* ducklake */
int tt_ducklake_backend_new(tt_backend *b, tt_error *err);
/* iceberg: tables through a SQL catalog (backends/iceberg/) */
int tt_iceberg_backend_new(tt_backend *b, tt_error *err);
/* dolt: Dolt databases over the MySQL protocol (backends/dolt/) */
int tt_dolt_backend_new(tt_backend *b, tt_error *err);
/* neon: branches through Neon's API v2, state over libpq (backends/neon/) */
int tt_neon_backend_new(tt_backend *b, tt_error *err);

#endif
