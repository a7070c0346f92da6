#!/usr/bin/env bash
# The quickstart on local stores, run for real: a dataset in a fresh git
# repository tracking a directory of files and a git repository.
# (Grows with tether: commit, new, promote, gc and verify join as they land.)
set -euo pipefail
tether=$(realpath "${1:-build/tether}")
top=$(cd "$(dirname "$0")/.." && pwd)
demo=$top/.tmp/demo
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
git init -q stores/code && printf 'print("hi")\n' > stores/code/train.py
git -C stores/code add . && git -C stores/code commit -q -m "first model"

# The dataset: an ordinary git repository.
git init -q dataset && git -C dataset commit -q --allow-empty -m "start"
cd dataset
step "$tether" --version
step "$tether" init
step "$tether" backends
step "$tether" add images ../stores/images --kind file
step "$tether" add ../stores/code --kind git
step "$tether" set images --pin record
step cat .tether/objects/images.toml
step cat tether.toml
step git status --short
printf '\ndemo dataset left in %s\n' "$demo/dataset"
