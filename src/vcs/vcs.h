/*
 * vcs/vcs.h - the dataset's own version control, behind one interface so a
 * jj adapter can stand beside git.  Backends never touch the VCS; the
 * engine does, through this.
 *
 * Every git call runs with the variables that point git at another
 * repository cleared (what `git rev-parse --local-env-vars` lists, and
 * GIT_CONFIG_KEY_* and GIT_CONFIG_VALUE_* variables), and with colour, log signatures and path
 * quoting off.  The executable comes from secrets.toml [vcs] git_path, then
 * TETHER_GIT, then PATH - never from the committed tether.toml.
 */
#ifndef TT_VCS_VCS_H
#define TT_VCS_VCS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "util/buf.h"
#include "util/error.h"

typedef struct tt_vcs tt_vcs;

/*
 * Called by iter_history_files once per commit with the commit id and the
 * files object (a borrowed reference valid for the call; take a reference
 * to keep it, never modify it).  Return 0 to go on, a positive value to
 * stop the walk (iter_history_files returns it), or a negative tt_code
 * with err set to fail it.
 */
typedef int (*tt_vcs_history_fn)(void *ctx, const char *commit, json_t *files, tt_error *err);

/*
 * Called by rewrite_history for each commit whose reldir holds files: the
 * files ({path: text}, borrowed) in, *out the files that commit should hold
 * instead (a new reference; the same texts: nothing to rewrite).
 */
typedef int (*tt_vcs_rewrite_fn)(void *ctx, const char *commit, const json_t *files, json_t **out,
				 tt_error *err);

/*
 * The adapter.  Paths are relative to the VCS root, '/'-separated.  A
 * revision is anything the VCS resolves (a commit id, a bookmark/branch, a
 * tag, git's HEAD~2, jj's @-); one starting with '-', or holding a line
 * break, is refused (TT_EVCS) before any VCS call sees it.  Lists and maps
 * come back as jansson values owned by the caller; a file's text is its
 * bytes as UTF-8, every invalid sequence replaced by U+FFFD (Python's
 * errors="replace").  Commit ids are full (git: 40 or 64 hex digits).
 * Every op returns 0 or a negative tt_code with err set.
 *
 * The ops are the adapter's primitives; what can be derived from them
 * (files_at from files_at_many, commit_alive from alive_commits,
 * current_rev from resolve, tracked in this checkout, a default
 * history_digest) is written once in vcs/dispatch.c.
 */
typedef struct tt_vcs_ops {
	const char *kind;  /* "git" | "jj" */
	/* The revision naming the working copy's commit (git: "HEAD", jj: "@"). */
	const char *working_rev;
	/* The bookmark(s) the working copy is on (git: HEAD's branch, unless
	 * it is a tether/ parking branch); *out is NULL when none. */
	int (*current_bookmark)(tt_vcs *v, char **out, tt_error *err);
	/* Whether name can be a new bookmark, asked of the VCS without writing
	 * anything: TT_ECONFIG "invalid bookmark name ..." when it refuses it
	 * (git: check-ref-format --branch; jj: its own bookmark-name syntax,
	 * and git's too, since jj exports its bookmarks to git).  Called
	 * before a command journals or moves anything. */
	int (*check_bookmark_name)(tt_vcs *v, const char *name, tt_error *err);
	/* Create bookmark name at rev (NULL: here) and move the working copy onto it. */
	int (*new_bookmark)(tt_vcs *v, const char *name, const char *rev, tt_error *err);
	/* Put a detached working copy on bookmark name: create it here, or move
	 * onto it when it already points here; TT_EVCS when it points elsewhere. */
	int (*park)(tt_vcs *v, const char *name, tt_error *err);
	/* For each path (relative to the VCS root), whether the VCS tracks it
	 * in this checkout (root NULL), or in another checkout of this
	 * repository (a git worktree, a jj workspace) at root: gc's test that
	 * a peer's .tether files are its own, not a tracked copy. */
	int (*tracked)(tt_vcs *v, const char *root, const char *const *relpaths, size_t n, bool *out,
		       tt_error *err);

	/* ---- revisions -------------------------------------------------- */
	/* The commit id rev names: TT_EVCS "could not resolve revision: <rev>". */
	int (*resolve)(tt_vcs *v, const char *rev, char **out, tt_error *err);
	/* Whether ancestor is rev or one of its ancestors (false too when either
	 * does not resolve). */
	int (*is_ancestor)(tt_vcs *v, const char *ancestor, const char *rev, bool *out, tt_error *err);

	/* ---- content at a revision -------------------------------------- */
	/* The text of relpath at rev; *out NULL when rev or the file is absent
	 * (or the path is a directory).  len (may be NULL) gets its length: the
	 * text may hold NUL bytes. */
	int (*read_file_at)(tt_vcs *v, const char *rev, const char *relpath, char **out, size_t *len,
			    tt_error *err);
	/* {rev: {root-relative path: text}} for n revisions: every regular
	 * file under reldir ("" or ".": the whole tree) at each rev, through
	 * one reader; {} for a rev where it or reldir is absent.  Symlinks and
	 * submodules are left out. */
	int (*files_at_many)(tt_vcs *v, const char *const *revs, size_t n, const char *reldir,
			     json_t **out, tt_error *err);

	/* ---- history ---------------------------------------------------- */
	/* Every commit id reachable in the repository (git: rev-list --all),
	 * as a JSON array; [] when the VCS cannot list them. */
	int (*history_revs)(tt_vcs *v, json_t **out, tt_error *err);
	/* Optional: 16 hex digits (and a NUL) naming the set of history_revs:
	 * changes whenever any workspace or bookmark gains or loses a commit.
	 * NULL: the digest of history_revs (tt_vcs_digest_revs); jj's leaves
	 * its working copies out. */
	int (*history_digest)(tt_vcs *v, char out[17], tt_error *err);
	/* fn(ctx, commit, files_at(commit, reldir)) for every history_revs
	 * commit, streamed through one object reader (a round-trip per commit
	 * plus one per distinct object).  Returns fn's first non-zero value. */
	int (*iter_history_files)(tt_vcs *v, const char *reldir, tt_vcs_history_fn fn, void *ctx,
				  tt_error *err);
	/* Metadata of n commits in one call, in the order given: a JSON array
	 * of {commit_id, parents: [ids, first parent first], author_name,
	 * author_email, authored_at, committed_at (ISO 8601), message (trailing
	 * newlines dropped), change_id (jj's; null under git)}. */
	int (*commit_info)(tt_vcs *v, const char *const *revs, size_t n, json_t **out, tt_error *err);
	/* Named pointers: a JSON array of {name, kind, commit_id}, kind
	 * "bookmark" (jj) / "branch" (git), "tag" (peeled to its commit), and
	 * last "head" for the working copy (when it has a commit). */
	int (*refs)(tt_vcs *v, json_t **out, tt_error *err);
	/* The remotes this clone exchanges history with (git: `git remote`), as
	 * a JSON array of names; [] when none.  Other clones of the dataset are
	 * reached through them. */
	int (*remotes)(tt_vcs *v, json_t **out, tt_error *err);
	/* The branches and tags remote `name` has now (git ls-remote --heads
	 * --tags, without prompting, bounded in time) whose commits this clone
	 * lacks, as a JSON array of ref names; TT_EVCS "cannot list remote
	 * <name>: ..." when it cannot be listed. */
	int (*remote_unfetched)(tt_vcs *v, const char *name, json_t **out, tt_error *err);
	/* Commits that left this clone or came from another one and that no
	 * ref reaches any more: those a remote-tracking ref held (git: its
	 * reflog) since rewritten away, with their unreachable ancestors.  A
	 * JSON array of ids; [] when there are none. */
	int (*published_revs)(tt_vcs *v, json_t **out, tt_error *err);
	/* Commits this repository held once (git: any reflog names them, HEAD's
	 * and every worktree's included) that no ref reaches any more, with
	 * their unreachable ancestors: a clone made from this repository before
	 * they were rewritten away may still have them.  A JSON array of ids;
	 * [] when there are none; TT_EVCS when the reflogs cannot be read. */
	int (*held_revs)(tt_vcs *v, json_t **out, tt_error *err);
	/* For each commit id, whether it is still part of visible history (git:
	 * reachable from a ref).  A bounded number of VCS calls, whatever n. */
	int (*alive_commits)(tt_vcs *v, const char *const *commits, size_t n, bool *out,
			     tt_error *err);
	/* Optional (NULL: none): a token (64 hex digits) that is equal only
	 * while alive_commits' answers cannot change (git: a digest of the ref
	 * tips), so they may be cached under it.  1 with out set, 0 when there
	 * is none to give (then nothing is cached). */
	int (*alive_token)(tt_vcs *v, char out[65]);

	/* ---- the working copy ------------------------------------------- */
	/* Root directories of every live checkout, as a JSON array of strings
	 * (git worktrees, jj workspaces); at least this one. */
	int (*workspace_roots)(tt_vcs *v, json_t **out, tt_error *err);
	/* Whether any of relpaths differs from the last commit (untracked
	 * files count).  n == 0 asks about the whole working copy. */
	int (*dirty)(tt_vcs *v, const char *const *relpaths, size_t n, bool *out, tt_error *err);
	/*
	 * Commit exactly relpaths (n > 0; anything else the user staged or
	 * changed stays out) with message; *out the new commit id.  A refused
	 * commit (a hook, no identity, an ignored path) leaves relpaths
	 * unstaged and is TT_EVCS with the VCS's own words.  advance (may be
	 * NULL) names a bookmark moved onto the new commit (git: the
	 * checked-out branch moves by itself, another one afterwards).  When
	 * the new commit lacks a path that exists in the working copy (an
	 * ignored directory) the commit has landed: *out is set and TT_EVCS
	 * says which paths are missing.
	 */
	int (*commit)(tt_vcs *v, const char *const *relpaths, size_t n, const char *message,
		      const char *advance, char **out, tt_error *err);
	/* Nothing a crashed VCS process left stops a commit now (git: a
	 * .git/index.lock): TT_EVCS naming it and the fix.  NULL: no check. */
	int (*check_commit)(tt_vcs *v, tt_error *err);
	/* Put relpaths' staged entries back to the last commit's, the working
	 * copy untouched (git: reset -q -- paths): what a commit killed between
	 * staging and committing left staged.  NULL: this VCS has no staging
	 * area (jj), nothing to do. */
	int (*unstage)(tt_vcs *v, const char *const *relpaths, size_t n, tt_error *err);
	/* Where the working copy is, as data goto_position returns to: {kind,
	 * id, commit, ...}; git adds branch (null when detached; id and commit
	 * are null on an unborn branch), jj parent and empty. */
	int (*position)(tt_vcs *v, json_t **out, tt_error *err);
	/* Return to a position() taken earlier (git: switch to the branch, or
	 * detach at the commit).  TT_EVCS when another VCS recorded it. */
	int (*goto_position)(tt_vcs *v, const json_t *position, tt_error *err);
	/* Turn commit back into working-copy changes if it is still the working
	 * copy's parent (git: HEAD; reset --soft); *out false when it is not.
	 * The files stay as they are.  TT_ECONFLICT, nothing changed, when
	 * other visible commits are built on it (jj would rewrite them). */
	int (*uncommit)(tt_vcs *v, const char *commit, bool *out, tt_error *err);
	/* Move the working copy so the next commit lands on top of rev.  git: a
	 * branch name is switched to, another revision checked out onto the
	 * parking branch tether/<commit12> (a sibling -2, -3... when that name
	 * moved on); NULL stays where it is. */
	int (*new)(tt_vcs *v, const char *rev, tt_error *err);

	/* ---- bookmarks (git branches; tether/ parking branches left out) -- */
	/* {name: commit id}. */
	int (*bookmarks)(tt_vcs *v, json_t **out, tt_error *err);
	/* Create name at rev or move it there (backwards allowed); the one the
	 * working copy is on moves with the working copy (git: reset --keep,
	 * which refuses to overwrite local edits). */
	int (*bookmark_set)(tt_vcs *v, const char *name, const char *rev, tt_error *err);
	int (*bookmark_delete)(tt_vcs *v, const char *name, tt_error *err);

	/* ---- the rest of the lifecycle (drop, abandon, forget-workspace) -- */
	/* The commits only bookmark reaches, oldest first (git: what no other
	 * ref under refs/ reaches); TT_EVCS when there is no such bookmark. */
	int (*exclusive_commits)(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err);
	/* Remote-tracking counterparts of bookmark ("origin/NAME"), sorted. */
	int (*remote_counterparts)(tt_vcs *v, const char *bookmark, json_t **out, tt_error *err);
	/* Stop tracking the checkout at root (git: worktree remove; the main
	 * worktree stays).  *out: what was done, or NULL when nothing was. */
	int (*forget_workspace)(tt_vcs *v, const char *root, char **out, tt_error *err);
	/* Drop revs from history; later commits keep keep_dir (the dataset's
	 * .tether) exactly as it was.  *ids: the resolved commits, *rewritten:
	 * {old descendant: new commit}. */
	int (*abandon)(tt_vcs *v, const char *const *revs, size_t n, const char *keep_dir,
		       json_t **ids, json_t **rewritten, tt_error *err);
	/* Delete bookmark whose exclusive commits are commits (git: the branch
	 * goes, and with it what only it reached). */
	int (*drop_bookmark)(tt_vcs *v, const char *bookmark, const json_t *commits, tt_error *err);
	/* The upgrade's history rewrite: every commit reachable from a ref
	 * gets reldir's files as fn gives them (the commit's metadata kept),
	 * descendants re-parented, refs moved; *mapping: {old: new}.  NULL:
	 * this VCS cannot (the upgrade refuses before writing anything). */
	int (*rewrite_history)(tt_vcs *v, const char *reldir, tt_vcs_rewrite_fn fn, void *ctx,
			       bool ignore_immutable, json_t **mapping, tt_error *err);

	void (*free)(tt_vcs *v);
} tt_vcs_ops;

struct tt_vcs {
	const tt_vcs_ops *ops;
	char *root;        /* the working tree's top level (resolved) */
	char *shared_dir;  /* git common dir / .jj/repo: one per clone */
	char *exe;         /* the executable used */
	struct tt_gitnat *native;  /* git read without running it (vcs/git_native.h); NULL: ask git */
	/* Borrowed, may be NULL: where the caller keeps the bookmark its
	 * workspace works on.  jj puts several bookmarks on one commit (right
	 * after a new one); current_bookmark then answers this one. */
	char *const *ws_bookmark;
};

/*
 * Find the VCS enclosing `start`: jj when a .jj is at or above it (unless
 * prefer is "git" and there is a git working tree), else git.  exe: git's
 * executable (NULL: from TETHER_GIT, else PATH); jj_exe: jj's (NULL:
 * TETHER_JJ, else PATH).  The versions are checked (git >= 2.38, jj >=
 * 0.43).  TT_EVCS "no git or jj repository found at or above <start>" when
 * none.
 */
int tt_vcs_detect(tt_vcs **out, const char *start, const char *exe, const char *prefer,
		  tt_error *err);
int tt_vcs_detect_with(tt_vcs **out, const char *start, const char *exe, const char *jj_exe,
		       const char *prefer, tt_error *err);
/* The git adapter for the working tree at git_root (taken over; also on
 * failure); exe as for tt_vcs_detect. */
int tt_git_open(tt_vcs **out, char *git_root, const char *exe, tt_error *err);
/* The jj adapter for the workspace at jj_root; git (taken over, may be
 * NULL) is the colocated .git's adapter, git_exe the git for plumbing. */
int tt_jj_open(tt_vcs **out, const char *jj_root, const char *jj_exe, const char *git_exe, tt_vcs *git,
	       tt_error *err);
void tt_vcs_free(tt_vcs *v);

#include "vcs/git_exec.h"

/*
 * git plumbing both adapters use (a jj repository is git-backed).  git_dir
 * (may be NULL) is passed as --git-dir, for a store that is not dir/.git.
 */

/* Append data as text: UTF-8 with every invalid sequence (each maximal
 * invalid subpart) replaced by U+FFFD, as Python's decode(errors="replace"). */
int tt_vcs_text(tt_buf *out, const void *data, size_t len);

/* The first 16 hex digits of sha256 of the sorted ids joined by '\n'
 * (an order-independent digest of a set of commit ids). */
int tt_vcs_digest_revs(char out[17], const char *const *ids, size_t n, tt_error *err);

/*
 * Many objects through one `git cat-file --batch` process.  Trees and blobs
 * are cached by object id, so a walk over a long history whose files rarely
 * change costs a round-trip per commit plus one per distinct object.  A
 * reader belongs to one thread at a time; after a failure every call fails.
 */
typedef struct tt_git_reader tt_git_reader;
int tt_git_reader_open(tt_git_reader **out, const char *exe, const char *cwd, const char *git_dir,
		       tt_error *err);
/* Answer from native (borrowed, outliving r; vcs/git_native.h) what it
 * can, starting git only for the rest. */
void tt_git_reader_use(tt_git_reader *r, struct tt_gitnat *native);
/* Stop the process and free r (NULL-safe). */
void tt_git_reader_close(tt_git_reader *r);
/* One object by name (spec: anything cat-file takes, no line break).
 * *found false when git answers "missing" (or "ambiguous"); otherwise
 * type ("blob", "tree", ...) and oid (hex) are filled and data (may be
 * NULL) holds the raw bytes, replacing its content. */
int tt_git_reader_fetch(tt_git_reader *r, const char *spec, bool *found, char type[16],
			char oid[65], tt_buf *data, tt_error *err);
/* {root-relative path: text} for every regular file (modes 100644/100755)
 * under reldir ("" or "." for the whole tree) at rev; {} when either is
 * missing or not a tree.  Names that are not UTF-8 are left out.  A new
 * object whose values the reader's cache shares: do not modify them. */
int tt_git_reader_files_at(tt_git_reader *r, const char *rev, const char *reldir, json_t **out,
			   tt_error *err);
/* The text of blob rev:relpath; *out NULL when missing or not a blob. */
int tt_git_reader_text_at(tt_git_reader *r, const char *rev, const char *relpath, char **out,
			  size_t *len, tt_error *err);

/* Commit metadata (see tt_vcs_ops.commit_info) for n commit ids through
 * one `git log --no-walk=unsorted --stdin`; all-zero ids (jj's root) are
 * skipped. */
int tt_git_commit_info(const char *exe, const char *cwd, const char *git_dir,
		       const char *const *revs, size_t n, json_t **out, tt_error *err);
/* Local branches and tags (peeled) through one `git for-each-ref`: a JSON
 * array of {name, kind: "branch" | "tag", commit_id}; [] when git fails. */
int tt_git_refs(const char *exe, const char *cwd, const char *git_dir, json_t **out, tt_error *err);

#endif
