/*
 * vcs/git_native.h - reading a git repository without running git: the git
 * directory, HEAD, loose and packed refs, the index's entry names, loose
 * and packed objects (deltas resolved), and reachability from the refs.
 *
 * Shared by the dataset's VCS adapter (vcs/git.c, the object reader in
 * vcs/git_objects.c) and the git backend.  Every answer is either exact
 * or TT_GITNAT_ASK: "ask git" - the repository uses something read here
 * is not known to follow (another object format, reftable, replace refs,
 * grafts, alternates, a shallow clone, a sparse index, a ref that does not
 * parse, an object not found), and the caller runs git as before.  So a
 * native answer never differs from git's; only the cost does.  Nothing
 * here prints, spawns or writes.  TETHER_GIT_NATIVE=0 turns it off (every
 * read through git), so the two can be compared.
 */
#ifndef TT_VCS_GIT_NATIVE_H
#define TT_VCS_GIT_NATIVE_H

#include <stdbool.h>
#include <stddef.h>

#include "util/buf.h"

#define TT_GITNAT_ASK (-1)

typedef struct tt_gitnat tt_gitnat;

/* The repository whose working tree is dir (dir/.git a directory or a
 * "gitdir:" file), or, when git_dir is given, that git directory itself.
 * NULL when it cannot be read natively (the caller asks git). */
tt_gitnat *tt_gitnat_open(const char *dir, const char *git_dir);
void tt_gitnat_close(tt_gitnat *g);
/* The common git directory (resolved): what `rev-parse --git-common-dir` names. */
const char *tt_gitnat_common_dir(const tt_gitnat *g);

/* HEAD: *symref (caller frees) the ref it names ("refs/heads/main"), NULL
 * when detached; hex the commit it resolves to ("" when unborn).  0 or ASK. */
int tt_gitnat_head(tt_gitnat *g, char **symref, char hex[65]);

/* One ref by full name ("refs/heads/x", "HEAD"), symbolic refs followed:
 * 1 and hex set, 0 when there is no such ref, or ASK. */
int tt_gitnat_ref(tt_gitnat *g, const char *name, char hex[65]);

typedef struct tt_gitnat_refent {
	char *name;     /* full name */
	char hex[41];   /* what it points at */
} tt_gitnat_refent;
/* Every ref whose full name starts with prefix ("refs/heads/"), sorted by
 * name as git sorts them (bytewise): 0 with *out (free with
 * tt_gitnat_refs_free), or ASK. */
int tt_gitnat_refs(tt_gitnat *g, const char *prefix, tt_gitnat_refent **out, size_t *n);
void tt_gitnat_refs_free(tt_gitnat_refent *refs, size_t n);

/* An object by full hex id: 1 with type ("commit", "tree", "blob", "tag")
 * and its bytes in data (replaced), or ASK (including when not found). */
int tt_gitnat_read(tt_gitnat *g, const char *hex, char type[16], tt_buf *data);

/* What `git cat-file --batch` answers for spec, for the forms tether asks:
 * REV, REV^{tree}, REV^{commit}, REV:PATH, with REV a full id, HEAD or a
 * ref name.  1 found (type, oid, data), 0 missing, or ASK. */
int tt_gitnat_lookup(tt_gitnat *g, const char *spec, char type[16], char oid[65], tt_buf *data);

/* For each path, whether the index holds it (any stage).  0 or ASK. */
int tt_gitnat_index_has(tt_gitnat *g, const char *const *paths, size_t n, bool *out);

/* For each commit id, whether a ref (or a worktree's HEAD) reaches it, as
 * `git rev-list --all` would list it; the walk stops once every one is
 * found.  0 or ASK. */
int tt_gitnat_reachable(tt_gitnat *g, const char *const *commits, size_t n, bool *out);

/* A digest (64 hex digits) of the set of commits reachability starts
 * from (every tip tt_gitnat_reachable walks from): equal digests, equal
 * answers from tt_gitnat_reachable, whatever was asked.  0 or ASK. */
int tt_gitnat_tips_token(tt_gitnat *g, char out[65]);

/* Whether `symbolic-ref --short` spells refs/heads/<branch> as <branch>:
 * no other ref (nor a file in the git directory) by that name. */
bool tt_gitnat_short_is_plain(tt_gitnat *g, const char *branch);

/* The branch HEAD of the repository at dir names (short, "main"), NULL when
 * detached: what `git -C dir symbolic-ref --short -q HEAD` prints.  0 or ASK. */
int tt_gitnat_checked_out(const char *dir, char **out);

#endif
