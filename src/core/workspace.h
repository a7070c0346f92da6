/*
 * core/workspace.h - .tether/workspace.toml, this checkout's own state:
 * its id, the bookmark it works on, its working refs, pending forks and
 * resets, base states, fork points and the last snapshot.  Never
 * committed (refused while tracked).
 */
#ifndef TT_CORE_WORKSPACE_H
#define TT_CORE_WORKSPACE_H

#include <jansson.h>

#include "util/buf.h"
#include "util/error.h"

typedef struct tt_workspace {
	char *workspace_id;       /* 32 hex */
	char *bookmark;           /* NULL: read-only */
	char *last_snapshot_at;
	/* objects: key -> string (refs) or key -> state object */
	json_t *working_refs;
	json_t *pending_forks;
	json_t *pending_resets;
	json_t *fork_points;
	json_t *base_states;
	json_t *last_snapshot;
	json_t *last_snapshot_errors;
} tt_workspace;

/* An empty workspace with a fresh id. */
int tt_workspace_new(tt_workspace *w, tt_error *err);
void tt_workspace_release(tt_workspace *w);
int tt_workspace_parse(tt_workspace *w, const char *text, size_t len, const char *filename, tt_error *err);
int tt_workspace_render(tt_buf *out, const tt_workspace *w, tt_error *err);
/* Load root's workspace.toml; *exists says whether there was one (a fresh
 * workspace is returned when not). */
int tt_workspace_load(tt_workspace *w, const char *root, int *exists, tt_error *err);
int tt_workspace_save(const tt_workspace *w, const char *root, tt_error *err);
/*
 * Write w as workspace.toml only if none exists yet (create-if-absent, whole
 * file or nothing); when another process got there first, w is replaced by
 * what is on disk.  The id binds saved plans to this checkout.
 */
int tt_workspace_claim(tt_workspace *w, const char *root, tt_error *err);
/* Forget every per-key entry of key (a re-added or removed object). */
void tt_workspace_forget_key(tt_workspace *w, const char *key, int keep_working_ref);
int tt_workspace_set_bookmark(tt_workspace *w, const char *bookmark, tt_error *err);

#endif
