/*
 * engine/kernel/revisions.h - the dataset's manifests at other revisions:
 * the objects committed at a revision, and the manifests a history walk
 * meets, each text parsed once.
 */
#ifndef TT_ENGINE_KERNEL_REVISIONS_H
#define TT_ENGINE_KERNEL_REVISIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

#include "engine/kernel/handle.h"

/* The manifests committed at rev (sorted); *resolved (may be NULL) the commit. */
int tt_engine_objects_at(tt_repo *repo, const char *rev, tt_manifest_set *set, char **resolved,
			 tt_error *err);

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

#endif
