#!/usr/bin/env bash
# Print where Neon's OpenAPI spec (public-v2-for-users.gen.yaml from the npm
# package @neondatabase/api-client) lives: $TETHER_NEON_SPEC when set, else
# the per-machine cache scripts/setup.sh unpacks it into.  --version prints
# the package version that cache is keyed by.
NEON_API_CLIENT_VERSION=2.7.3
if [ "${1:-}" = --version ]; then echo "$NEON_API_CLIENT_VERSION"; exit 0; fi
if [ -n "${TETHER_NEON_SPEC:-}" ]; then echo "$TETHER_NEON_SPEC"; exit 0; fi
echo "${XDG_CACHE_HOME:-$HOME/.cache}/tether-tools/neon-api-client-$NEON_API_CLIENT_VERSION/public-v2-for-users.gen.yaml"
