/*
 * core/index.h - the clone's own memories, kept in the VCS's shared
 * directory (git's common dir) beside the repository lock, in tether-vcs's
 * format (one JSON object per line):
 *   tether-pinned.jsonl   pins this clone created: the only ones `gc`
 *                         releases without --release-foreign
 *                         {"dataset_id", "pin_id", "kind", "key", "at"}, then
 *                         {"dataset_id", "pin_id", "committed": true, "at"}
 *                         once a commit of this clone names it (written
 *                         before the commit, so a crash errs on keeping)
 *   tether-touched.jsonl  stores this clone wrote a ref into
 *                         {"dataset_id", "kind", "identity", "locator", "key", "at"}
 *   tether-created.jsonl  stores this clone made with `add --create`
 *                         {"dataset_id", "kind", "identity", "locator", "key", "at",
 *                          "bookmark"}
 * "Memories, not authority": a torn or undecodable line is skipped, and a
 * fresh clone starts without them.
 */
#ifndef TT_CORE_INDEX_H
#define TT_CORE_INDEX_H

#include <jansson.h>

#include "util/error.h"

#define TT_PINNED_FILENAME "tether-pinned.jsonl"
#define TT_TOUCHED_FILENAME "tether-touched.jsonl"
#define TT_CREATED_FILENAME "tether-created.jsonl"

/* Every decodable record (a JSON array of objects), oldest first. */
json_t *tt_index_read(const char *shared_dir, const char *name);

/* Record a pin this clone created (once per pin id and dataset). */
int tt_index_note_pinned(const char *shared_dir, const char *dataset_id, const char *pin_id,
			 const char *kind, const char *key, tt_error *err);
/* Record that a commit is about to name these pins (a JSON array of ids):
 * only those on record as created by this clone and not yet marked. */
int tt_index_note_committed(const char *shared_dir, const char *dataset_id, const json_t *pin_ids,
			    tt_error *err);
/* Forget pins this clone released. */
int tt_index_forget_pinned(const char *shared_dir, const char *dataset_id,
			   const json_t *pin_ids, tt_error *err);
/* Record a store this clone wrote a ref into (once per dataset and identity). */
int tt_index_note_touched(const char *shared_dir, const char *dataset_id, const char *kind,
			  const json_t *identity, const json_t *locator, const char *key,
			  tt_error *err);

/* Record a store `add --create` made (bookmark NULL: none). */
int tt_index_note_created(const char *shared_dir, const char *dataset_id, const char *kind,
			  const json_t *identity, const json_t *locator, const char *key,
			  const char *bookmark, tt_error *err);
/* Drop a dataset's records of one store (by identity) from index `name`
 * (the created or the touched one). */
int tt_index_forget_store(const char *shared_dir, const char *name, const char *dataset_id,
			  const json_t *identity, tt_error *err);
/*
 * The store records (created or touched index `name`) of one dataset,
 * oldest first, each checked: dataset_id, kind, key and at strings,
 * identity and a non-empty locator objects, bookmark a string or null.  A
 * torn (undecodable) line is skipped, as every index skips one; a
 * decodable record in another shape is TT_ECONFIG naming the file and
 * line, because gc would act on it.  Each record gains "line" (its line
 * number).
 */
int tt_index_read_stores(const char *shared_dir, const char *name, const char *dataset_id,
			 json_t **out, tt_error *err);

#endif
