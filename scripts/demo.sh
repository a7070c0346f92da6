#!/usr/bin/env bash
# The quickstart on local stores, run for real: a dataset in a fresh git
# repository tracking a directory of files and a code repository, through
# the whole loop -- commit, branch, write, commit, diff, promote, pull, gc,
# the journal, and verify last.
set -euo pipefail
tether=$(realpath "${1:-build/tether}")
top=$(cd "$(dirname "$0")/.." && pwd)
demo=${TT_DEMO_DIR:-$top/.tmp/demo}   # (the package tests run it elsewhere)
rm -rf "$demo"
mkdir -p "$demo"
cd "$demo"
export GIT_CONFIG_GLOBAL=$demo/.gitconfig GIT_CONFIG_NOSYSTEM=1
git config --global user.name "Demo" && git config --global user.email demo@example.com
git config --global init.defaultBranch main

step() { printf '\n\033[1m$ %s\033[0m\n' "$*"; "$@"; }

# Two stores that live outside the dataset: files, and a code repository.
mkdir -p stores/images/raw
printf 'frame 1\n' > stores/images/raw/001.txt
printf 'frame 2\n' > stores/images/raw/002.txt
git init -q stores/code && printf 'weights = 1\n' > stores/code/train.py
git -C stores/code add . && git -C stores/code commit -q -m "first model"

# The dataset: an ordinary git repository.
git init -q dataset && git -C dataset commit -q --allow-empty -m "start"
cd dataset
step "$tether" init --dataset-id 0d3e0d3e
step "$tether" add images ../stores/images --kind file --file versioned
step "$tether" add ../stores/code --kind git
step "$tether" commit -m "first recording"
step "$tether" status

# A line of work: the code repository gets a working branch off its pin.
step "$tether" new -b retrain --eager
branch=tether.ws.0d3e0d3e.retrain   # tether.ws.<dataset id>.<bookmark>
git -C ../stores/code worktree add -q ../wt "$branch"
printf 'weights = 2\n' > ../stores/wt/train.py
git -C ../stores/wt commit -q -am "retrain"
git -C ../stores/code worktree remove ../wt
step "$tether" status --snapshot
step "$tether" commit -m "retrained model"
step "$tether" diff --content main retrain

# Land it: main in the code repository moves, and so does the trunk bookmark.
step "$tether" promote
step git switch -q main
step "$tether" new main

# The directory changed on disk: pull records it on the trunk.
printf 'frame 3\n' > ../stores/images/raw/003.txt
step "$tether" status --snapshot
step "$tether" pull
step "$tether" diff --content HEAD~1 HEAD

step "$tether" gc
step "$tether" ops -n 5
step "$tether" verify
printf '\ndemo dataset left in %s\n' "$demo/dataset"
