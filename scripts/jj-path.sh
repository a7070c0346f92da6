#!/usr/bin/env bash
# Print where the jj binary the tests use lives: $TETHER_JJ when set, else
# the per-machine cache scripts/setup.sh builds it into.  --version prints
# the jj-cli version that cache is keyed by.
JJ_VERSION=0.45.1
if [ "${1:-}" = --version ]; then echo "$JJ_VERSION"; exit 0; fi
if [ -n "${TETHER_JJ:-}" ]; then echo "$TETHER_JJ"; exit 0; fi
echo "${XDG_CACHE_HOME:-$HOME/.cache}/tether-tools/jj-$JJ_VERSION/bin/jj"
