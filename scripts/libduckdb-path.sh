#!/usr/bin/env bash
# Print the directory holding libduckdb.so and include/duckdb.h that
# DuckDB-file DuckLake catalogs are read with: $TETHER_LIBDUCKDB_DIR when
# set, else the per-machine cache scripts/setup.sh fills.  --version prints
# the DuckDB version that cache is keyed by (the ducklake extension's).
LIBDUCKDB_VERSION=1.5.5
if [ "${1:-}" = --version ]; then echo "$LIBDUCKDB_VERSION"; exit 0; fi
if [ -n "${TETHER_LIBDUCKDB_DIR:-}" ]; then echo "$TETHER_LIBDUCKDB_DIR"; exit 0; fi
echo "${XDG_CACHE_HOME:-$HOME/.cache}/tether-tools/libduckdb-$LIBDUCKDB_VERSION"
