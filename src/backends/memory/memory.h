/*
 * backends/memory/memory.h - the memory backend's store, for tests and tools.
 *
 * The memory kind is tether's executable specification: a tiny versioned
 * key-value store (systems of snapshots, branches, tags).  Every memory
 * backend of a process shares one store, as tether-vcs's process-global
 * store is shared.  When the environment variable TETHER_MEMORY_STORE names
 * a file, the store lives in that JSON file instead, so separate processes
 * (CLI runs in end-to-end tests) see one store: each operation holds an
 * exclusive flock on "<file>.lock" while it reads, acts, and writes the
 * file back atomically.  A backend reads the variable when it is built;
 * the functions below read it at each call.
 *
 * A system's JSON (tt_memory_show, and the file's "systems" members):
 *   {"snapshots": {id: payload}, "branches": {name: id}, "tags": {name: id},
 *    "parents": {id: [id, ...]}, "counter": N, "owner": null | "dataset id"}
 * A new system has snapshot "<system>:s0" (payload {}) on branch "main";
 * later snapshots are "<system>:s<N>".
 */
#ifndef TT_BACKENDS_MEMORY_H
#define TT_BACKENDS_MEMORY_H

#include <jansson.h>

#include "util/error.h"

#define TT_MEMORY_STORE_ENV "TETHER_MEMORY_STORE"

/* Append a snapshot holding payload (a JSON object, copied) to branch of
 * system, its parent the branch's head (none when the branch is new), and
 * move the branch onto it.  The system is made when absent; a deleted one is
 * TT_EBACKEND.  *snapshot_id (caller frees) names the new snapshot; may be
 * NULL when not wanted. */
int tt_memory_write(const char *system, const char *branch, const json_t *payload,
		    char **snapshot_id, tt_error *err);

/* A copy of the payload at ref (a branch, tag or snapshot id) of system. */
int tt_memory_read(const char *system, const char *ref, json_t **payload, tt_error *err);

/* A copy of one system (shape above); TT_ENOTFOUND when it does not exist,
 * TT_EBACKEND when it was deleted. */
int tt_memory_show(const char *system, json_t **out, tt_error *err);

/* Forget the in-process store (tests; frees its memory).  The file store
 * is left alone. */
void tt_memory_reset(void);

#endif
