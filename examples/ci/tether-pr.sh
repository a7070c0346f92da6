#!/bin/sh
# tether-pr.sh - the steps of a data pull request, for any CI.
#
#   tether-pr.sh open     fork every store of the dataset for the pull request:
#                         bookmark $TETHER_BOOKMARK, expiring after $TETHER_TTL
#                         (joined again, as it is, when the bookmark exists)
#   tether-pr.sh commit   record what the pipeline wrote on the forks, push the
#                         bookmark, and write the review ($TETHER_REVIEW, markdown)
#   tether-pr.sh land     promote the bookmark onto the trunk, gated by the check
#                         $TETHER_CHECK run on exactly what lands; push the trunk
#   tether-pr.sh close    drop the bookmark: its commits the trunk does not hold,
#                         its working branches and pins in every store
#   tether-pr.sh sweep    drop every bookmark whose expiry has passed (nightly)
#
# It runs in a clone of the dataset's repository (the working directory), as a
# CI job's checkout is, with the stores' credentials in .tether/secrets.toml or
# the environment.  Each step is a fresh job: what one step needs of another
# comes from the remote (the bookmark's branch) and from the stores.
#
# Environment:
#   TETHER_PR        the pull request's number (every step but sweep)
#   TETHER_BOOKMARK  the bookmark (default pr-$TETHER_PR)
#   TETHER_TRUNK     the dataset's trunk branch (default main)
#   TETHER_REMOTE    the git remote (default origin)
#   TETHER_TTL       how long the forks of a pull request never closed live
#                    (default 7d)
#   TETHER_CHECK     land: the check, a shell command (required)
#   TETHER_MESSAGE   commit: the commit message (default "pull request $TETHER_PR")
#   TETHER_REVIEW    commit: the markdown review's file (default tether-review.md)
#   TETHER_FORCE     close, sweep: 1 (the default) throws away what the forks hold
#                    that no commit pinned - closing a pull request, or its
#                    expiry, means its data goes (Neon's branches are the data
#                    itself, so they go only so); 0 keeps such forks, named
#   TETHER           the tether binary (default tether)
#   TETHER_PUSH      0: change nothing on the remote (default 1)
set -eu

tether=${TETHER:-tether}
remote=${TETHER_REMOTE:-origin}
trunk=${TETHER_TRUNK:-main}
push=${TETHER_PUSH:-1}
force=--force-prune
[ "${TETHER_FORCE:-1}" = 1 ] || force=

die() {
	echo "tether-pr: $*" >&2
	exit 1
}

say() {
	echo "tether-pr: $*" >&2
}

bookmark() {
	[ -n "${TETHER_PR:-}" ] || [ -n "${TETHER_BOOKMARK:-}" ] ||
		die "set TETHER_PR (the pull request's number) or TETHER_BOOKMARK"
	echo "${TETHER_BOOKMARK:-pr-$TETHER_PR}"
}

remote_has() { # remote_has BRANCH
	git ls-remote --exit-code --heads "$remote" "$1" >/dev/null 2>&1
}

# Leave any branch, so a fetch may update every local one.
detach() {
	git checkout -q --detach
}

# A clone's remote-tracking refs keep every branch of the remote reachable:
# gone, a dropped bookmark's commits (and so its pins) are its alone.  The
# job's clone is thrown away; the remote is changed by the pushes below.
forget_remote_refs() {
	git for-each-ref --format='delete %(refname)' refs/remotes/ | git update-ref --no-deref --stdin
}

# The local branch BRANCH as the remote has it.
fetch_branch() {
	git fetch -q "$remote" "+refs/heads/$1:refs/heads/$1"
}

git_push() {
	if [ "$push" = 1 ]; then
		git push -q "$remote" "$@"
	else
		say "not pushing (TETHER_PUSH=0): git push $remote $*"
	fi
}

step_open() {
	bm=$(bookmark)
	detach
	fetch_branch "$trunk"
	if remote_has "$bm"; then
		# A new push to the pull request: the forks exist; work on them again.
		fetch_branch "$bm"
		git checkout -q "$bm"
		"$tether" new "$bm" --eager
		return
	fi
	git checkout -q "$trunk"
	"$tether" new -b "$bm" --ttl "${TETHER_TTL:-7d}" --eager
	git_push "$bm"
}

step_commit() {
	bm=$(bookmark)
	[ "$(git symbolic-ref -q --short HEAD || true)" = "$bm" ] ||
		die "not on bookmark $bm: run \`tether-pr.sh open\` in this checkout first"
	"$tether" commit -m "${TETHER_MESSAGE:-pull request ${TETHER_PR:-$bm}}"
	git_push "$bm"
	git fetch -q "$remote" "$trunk"
	review=${TETHER_REVIEW:-tether-review.md}
	"$tether" diff "$(git merge-base "$remote/$trunk" HEAD)" HEAD --content --format markdown >"$review"
	say "review written to $review"
}

step_land() {
	bm=$(bookmark)
	[ -n "${TETHER_CHECK:-}" ] || die "set TETHER_CHECK to the check that gates the landing"
	detach
	fetch_branch "$trunk"
	remote_has "$bm" || die "the remote has no bookmark $bm: nothing to land"
	fetch_branch "$bm"
	git checkout -q "$bm"
	"$tether" new "$bm"
	if git merge-base --is-ancestor "$trunk" HEAD; then
		# The trunk is where the bookmark forked: the whole bookmark lands,
		# and the trunk moves to it.
		"$tether" promote --check "$TETHER_CHECK" -m "land $bm"
		[ "$(git rev-parse "$trunk")" = "$(git rev-parse HEAD)" ] ||
			die "$trunk did not move to $bm; see \`tether promote --dry-run\`"
	else
		# Another pull request landed since this one forked: land the objects
		# this one changed (an object both changed would merge, and a checked
		# promote never lands a merge nobody checked), then merge the
		# bookmark's manifests into the trunk's.
		keys=$(git diff --name-only "$(git merge-base "$trunk" HEAD)" HEAD -- .tether/objects/ |
			sed -n 's|^\.tether/objects/\(.*\)\.toml$|\1|p')
		[ -n "$keys" ] || die "$bm changed no object since it forked: nothing to land"
		# shellcheck disable=SC2086 # one word per key; keys hold no blanks
		"$tether" promote --check "$TETHER_CHECK" -m "land $bm" $keys
		git checkout -q "$trunk"
		git merge -q --no-edit -m "land $bm" "$bm" ||
			die "the manifests of $trunk and $bm conflict after landing: merge them by hand"
	fi
	git_push "$trunk" "$bm"
}

step_close() {
	bm=$(bookmark)
	detach
	fetch_branch "$trunk"
	remote_has "$bm" || {
		say "the remote has no bookmark $bm: nothing to close"
		return
	}
	fetch_branch "$bm"
	forget_remote_refs
	git checkout -q "$trunk"
	"$tether" new "$trunk"
	"$tether" drop "$bm" --release-foreign $force --no-dry-run
	git_push --delete "$bm"
}

step_sweep() {
	detach
	# Every branch of the remote, so every bookmark's expiry is seen.
	git fetch -q --prune "$remote" "+refs/heads/*:refs/heads/*"
	forget_remote_refs
	git checkout -q "$trunk"
	"$tether" new "$trunk"
	before=$(git for-each-ref --format='%(refname:short)' refs/heads/)
	# exit 3: some expired bookmark was refused (named above); the others went
	rc=0
	"$tether" gc --expired --release-foreign $force --no-dry-run || rc=$?
	for b in $before; do
		git show-ref -q --verify "refs/heads/$b" || git_push --delete "$b"
	done
	return "$rc"
}

case "${1:-}" in
open | commit | land | close | sweep) "step_$1" ;;
*)
	echo "usage: tether-pr.sh open|commit|land|close|sweep (see the head of this file)" >&2
	exit 2
	;;
esac
