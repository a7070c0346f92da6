/*
 * util/fault.h - crash injection for tests.
 *
 * TETHER_FAULT names a point ("commit:after-journal", "commit:after-pin",
 * "commit:after-manifests", "commit:before-vcs-commit",
 * "commit:after-vcs-commit"; the same five as "pull:..." for a pull;
 * "undo:after-journal", "undo:after-uncommit", "undo:after-vcs" (an undone
 * `new` returned the working copy), "undo:after-restore";
 * "repair:after-journal", "repair:after-repin", "repair:after-refork";
 * "restore:after-journal", "restore:after-fork", "restore:after-reset", "restore:before-done";
 * "new:...", "promote:...", "gc:..."; the rest of the lifecycle:
 * "drop:after-journal", "drop:after-leave", "drop:after-delete-bookmark",
 * "abandon:after-rewrite", "abandon:after-journal",
 * "forget-workspace:after-journal";
 * "upgrade:after-parts" (every part written,
 * tether.toml not yet: a marker in .tether/cache lets the rerun plan what
 * is left and finish), "upgrade:after-config" (tether.toml records the new
 * version, not yet committed: a rerun makes the commit),
 * "upgrade:after-vcs-commit";
 * "upgrade:after-renames" (an alpha dataset's pins and working branches
 * renamed into its namespace in every store, history and manifests not yet
 * rewritten: the rerun finds them renamed and rewrites), "upgrade:after-history"
 * (history rewritten and the branch moved, the working tree's manifests
 * not yet: the rerun rewrites them);
 * "fs:before-rename": every atomic file write, its temporary written and
 * not yet renamed into place; "fork:lance-before-ref" inside a Lance fork,
 * between the branch's manifest and its branch file; "lance:after-branch-file"
 * inside a Lance branch delete, the branch file removed and its tree not yet;
 * "iceberg:after-metadata-write"
 * inside an Iceberg catalog commit, the next metadata file written and the
 * catalog not yet swapped to it); when the
 * running command reaches it, the process is killed on the spot (SIGKILL:
 * no cleanup, no flush), exactly as a crash or a power cut would leave
 * things.  Tests then check that rerunning the command, `repair` or `gc`
 * converges with nothing lost.  "POINT#N" kills the Nth time the process
 * reaches POINT (a point inside a loop, past its first turns).  Unset,
 * every point costs one getenv.
 */
#ifndef TT_UTIL_FAULT_H
#define TT_UTIL_FAULT_H

#define TT_FAULT_ENV "TETHER_FAULT"

void tt_fault(const char *point);

#endif
