#!/usr/bin/env bash
# Full resync time against redis-server, in the same run: kvik as the master
# and as the replica, each beside redis-server in the same role
# (bench/replication.py says how each figure is taken).
#
#   bench/replication.sh                       # 1,000,000 keys
#   KEYS="1000000 5000000" bench/replication.sh
#   QUICK=1 bench/replication.sh               # 20,000 keys, one round: a check that it works
#   KVIK_SERVER_BIN=/path/to/kvik-server bench/replication.sh
#
# Writes bench/results/replication.md, or into OUT_DIR.
#
# Environment (defaults in brackets):
#   KEYS            [1000000]   key counts, space-separated
#   REPEATS         [3]         rounds (medians)
#   VALUE_BYTES     [64]
#   THREADS         [nproc]     kvik-server --threads
#   KVIK_SERVER_BIN []          use this kvik-server instead of the release build
#   OUT_DIR         [bench/results]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
    KEYS="${KEYS:-20000}"
    export REPEATS="${REPEATS:-1}"
fi
KEYS="${KEYS:-1000000}"
OUT_DIR="${OUT_DIR:-bench/results}"
export SERVERS="kvik redis"

# shellcheck source=bench/common.sh
source bench/common.sh
export THREADS
# shellcheck disable=SC2086  # KEYS is a list
for k in $KEYS; do
    [[ "$k" =~ ^[1-9][0-9]*$ ]] || { echo "KEYS must be whole numbers ≥ 1, got '$k'" >&2; exit 2; }
done
command -v redis-server >/dev/null || { echo "redis-server is missing" >&2; exit 2; }
KVIK_BIN=""
release_kvik_bin

{ servers_meta; } >"$work/meta"
mkdir -p "$OUT_DIR"
# shellcheck disable=SC2086  # KEYS is a list
COMMAND="KEYS=\"$KEYS\" REPEATS=${REPEATS:-3} bench/replication.sh" \
    python3 bench/replication.py "$KVIK_BIN" "$OUT_DIR/replication.md" "$work/meta" $KEYS
