/*
 * engine/kernel/resume.h - interrupted commits and pulls: the journal
 * entries a run left open, found and closed once a later command has
 * finished what they started.
 */
#ifndef TT_ENGINE_KERNEL_RESUME_H
#define TT_ENGINE_KERNEL_RESUME_H

#include <stdbool.h>
#include <jansson.h>

#include "engine/kernel/handle.h"

/* Whether the dataset's manifests differ from the last VCS commit. */
int tt_engine_objects_dirty(tt_repo *repo, bool *dirty, tt_error *err);

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

#endif
