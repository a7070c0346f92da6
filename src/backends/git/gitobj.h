/*
 * backends/git/gitobj.h - the git backend (a git object: a repository outside
 * the dataset, pinned with lightweight tags).  Not the dataset's own VCS:
 * that is vcs/.
 *
 * A locator names the repository by `path` (or the CLI's positional `uri`),
 * absolute and outside the dataset's checkout, re-checked at every
 * operation since manifests arrive with clones; `ref` (default HEAD) or
 * `at` choose the base; `remote` names a configured remote pins are pushed
 * to (a URL only through .tether/secrets.toml); `allow_dirty` lets a dirty
 * checkout be pinned.  States are {sha, dirty[, change_id]}; dirty and
 * change_id are volatile.  Every git call runs with hooks, fsmonitor and
 * ext:: transports off and safe.bareRepository=explicit, with the variables
 * that point git at another repository cleared; git 2.38 or newer is
 * checked once per backend.  The executable: [backends.git] git_path of
 * secrets.toml (the backend's config), else TETHER_GIT, else PATH.
 */
#ifndef TT_BACKENDS_GITOBJ_H
#define TT_BACKENDS_GITOBJ_H

/* The root commit `create` makes: git's empty tree, author and committer
 * "tether <tether@localhost>" at 2000-01-01T00:00:00+00:00, message
 * "tether: created store" - the same sha tether-vcs's GitBackend makes. */
#define TT_GIT_EMPTY_ROOT_SHA "5a2cfa770badaceb6c6de5171fdf82c871fa40de"
#define TT_GIT_EMPTY_TREE "4b825dc642cb6eb9a060e54bf8d69288fbee4904"

#endif
