/*
 * backends/kit.h - the pieces several backends share, written once: pin
 * descriptors, the capability stubs of kinds that record states without
 * pinning or forking them, and the filter their ref listings apply.
 *
 * Errors name the backend's kind, as every backend error does.
 */
#ifndef TT_BACKENDS_KIT_H
#define TT_BACKENDS_KIT_H

#include <stdbool.h>

#include <jansson.h>

#include "backends/backend.h"

/*
 * The one error-macro pair of a backend's files: with KIND defined to the
 * kind's name ("delta") before use, KERR(err, code, fmt, ...) sets err,
 * naming the kind, and is code; KOOM(err) the same for out of memory.
 * Both are expressions the compiler sees the value of, so `return
 * KERR(...)` keeps flow analysis exact.
 */
#define KERR(err, code, ...) TT_BACKEND_ERR((err), KIND, (code), __VA_ARGS__)
#define KOOM(err) TT_BACKEND_OOM((err), KIND)

/* Fill a pin descriptor: id pin_id, native name ref (NULL: "tether.<pin_id>").
 * TT_ELIMIT naming the kind when either does not fit; *out is zeroed first. */
int tt_kit_fill_pin(tt_pin *out, const char *kind, const char *pin_id, const char *ref, bool created,
		    tt_error *err);

/*
 * Capability stubs for kinds that cannot pin or fork: pin and unpin refuse
 * with the ops' no_pin reason, fork with its no_fork reason (both
 * TT_ECAPABILITY naming the kind); there are never pins or working refs to
 * list, and deleting a working ref (there are none) succeeds.  (And
 * tt_kit_no_merge, below, for kinds that cannot merge.)
 */
int tt_kit_no_pin(tt_backend *b, const json_t *loc, const json_t *state, const char *pin_id, tt_pin *out,
		  tt_error *err);
int tt_kit_no_unpin(tt_backend *b, const json_t *loc, const tt_pin *pin, tt_error *err);
int tt_kit_no_pins(tt_backend *b, const json_t *loc, json_t **ids, tt_error *err);
int tt_kit_no_fork(tt_backend *b, const json_t *loc, const tt_target *source, const char *name,
		   const tt_expect *expected, char **ref_out, tt_error *err);
int tt_kit_no_working_ref(tt_backend *b, const json_t *loc, const char *ref, tt_error *err);
/* merge for kinds that promote by fast-forward only: TT_ECAPABILITY with
 * the ops' no_merge reason (what to do instead). */
int tt_kit_no_merge(tt_backend *b, const json_t *loc, const tt_target *source, const char *message,
		    const tt_expect *expected, json_t **new_state, json_t **conflicts, tt_error *err);
/* working_ref_blockers for kinds where nothing ever blocks deleting a
 * branch (refusals, if any, surface when the delete is tried): *why NULL. */
int tt_kit_no_blockers(tt_backend *b, const json_t *loc, const char *ref, char **why, tt_error *err);

/*
 * The ref-listing filter: append name to the array out when it begins with
 * prefix and not with skip (NULL: nothing skipped), without the prefix when
 * strip.  Pins: prefix "tether.", skip "tether.ws.", strip; working refs:
 * prefix TT_WORKING_REF_PREFIX, kept whole.  0, or TT_ENOMEM (out is then
 * left as it was).  A NULL name is skipped.
 */
int tt_kit_keep_ref(json_t *out, const char *name, const char *prefix, const char *skip, bool strip);

/* Locator checks' helpers.  The string at key, or NULL (absent, not a string). */
const char *tt_kit_locator_str(const json_t *loc, const char *key);
/* TT_EBACKEND "<kind> `at` must be a <what> number, got '...'" when the
 * locator's `at` is given and is not all digits. */
int tt_kit_locator_version_at(const json_t *loc, const char *kind, const char *what, tt_error *err);

/* {"uri": canonical_uri(uri)}: a local path resolved (tt_store_local_path),
 * any other URL as written; TT_EBACKEND naming the kind when it is not
 * UTF-8 (an identity is hashed as JSON text, which cannot hold it).  The
 * identity of file, icechunk and delta objects. */
int tt_kit_uri_identity(const tt_backend *b, const char *uri, json_t **out, tt_error *err);

/*
 * The options an object-store URI of b's object is opened with
 * (tt_store_open_uri), layered as tether-vcs's merged_storage_options does:
 * [backends.<kind>] storage_options (committed), then from the object's
 * secrets only the credentials and endpoint_url, the region once (the
 * secrets', else the locator's, else the committed one).  file, lance and
 * delta share it, as their storage_options op too.
 */
int tt_kit_storage_options(tt_backend *b, const json_t *loc, json_t **out, tt_error *err);

/*
 * Notes for traces: what a backend decided and why, where the answer alone
 * does not say (the file watcher's "walking: a fresh Watchman instance").
 * One line each, naming the kind and what it is about (a directory, a
 * table).  Process-wide; fn NULL turns them off; set it before backends are
 * used from several threads.  tt_kit_note may be called from any thread.
 */
typedef void (*tt_kit_note_fn)(void *ctx, const char *kind, const char *about, const char *what);
void tt_kit_set_note(tt_kit_note_fn fn, void *ctx);
bool tt_kit_noting(void);
void tt_kit_note(const char *kind, const char *about, const char *fmt, ...) TT_PRINTF(3, 4);

#endif
