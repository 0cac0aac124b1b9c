#!/usr/bin/env bash
# Snapshot cost against redis-server, in the same run: SAVE time, file size,
# load time at start, and each server loading the other's file
# (bench/persistence.py says how each figure is taken).
#
#   bench/persistence.sh                 # 1,000,000 keys
#   KEYS="1000000 5000000" bench/persistence.sh
#   QUICK=1 bench/persistence.sh         # 20,000 keys, one repeat: a check that it works
#
# Environment (defaults in brackets):
#   KEYS         [1000000]   key counts, space-separated
#   REPEATS      [3]         SAVEs and restarts per server (medians)
#   VALUE_BYTES  [64]
#   THREADS      [nproc]     kvik-server --threads
#   KVIK_SERVER_BIN []       use this kvik-server instead of the release build
#   OUT_DIR      [bench/results]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
    KEYS="${KEYS:-20000}"
    export REPEATS="${REPEATS:-1}"
fi
KEYS="${KEYS:-1000000}"
OUT_DIR="${OUT_DIR:-bench/results}"
# shellcheck source=bench/common.sh
source bench/common.sh
need_redis
release_kvik_bin
mkdir -p "$OUT_DIR"
# shellcheck disable=SC2086  # KEYS is a list
python3 bench/persistence.py "$KVIK_BIN" "$OUT_DIR/persistence.md" $KEYS
