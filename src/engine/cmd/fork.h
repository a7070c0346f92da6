/*
 * engine/cmd/fork.h - `new` as a plan and its application, and reading
 * or forking a committed object at its verified pin.
 */
#ifndef TT_ENGINE_CMD_FORK_H
#define TT_ENGINE_CMD_FORK_H

#include <stdbool.h>
#include <jansson.h>

#include "backends/backend.h"
#include "engine/kernel/handle.h"

struct tt_plan;
/* new's two halves. */
int tt_engine_plan_new(tt_repo *repo, const tt_new_opts *o, struct tt_plan **out, tt_error *err);
/* *partial (may be NULL): the error is that some objects could not fork
 * while the rest of the `new` took effect and was recorded; the message
 * names the rerun that finishes it.  parent: the operation the journal
 * entry belongs to (drop's leaving for another bookmark), or NULL. */
int tt_engine_apply_new(tt_repo *repo, const struct tt_plan *plan, bool verify, bool *partial,
			const char *parent, tt_error *err);

/* What a committed object is read or forked from: its pin, verified (a
 * drifted pin is TT_EPINDRIFT; a missing one falls back to the recorded
 * state where the kind can address it).  pin is storage for *t. */
int tt_engine_pinned_source(tt_repo *repo, const tt_manifest *m, tt_backend *b, tt_pin *pin,
			    tt_target *t, tt_error *err);

/* A committed manifest opened read-only at its verified pin, else its
 * recorded state where the kind can address it (Observed: TT_ECAPABILITY
 * naming where, e.g. the revision).  *out: the backend's handle with its
 * secret_storage_options. */
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

/* The engine's side of the public tt_repo_new (include/tether/tether.h):
 * each of its modes as the call that runs it (api/planned.c chooses). */
int tt_engine_repo_new(tt_repo *repo, const tt_new_opts *o, const char *from_plan, size_t from_len,
		char **plan_json, char **plan_text, json_t **out, tt_error *err);

#endif
