#!/usr/bin/env bash
# Append-only file cost against redis-server, in the same run: SET
# throughput under `appendfsync always` and `everysec` at -c 50 -P 1 and
# -P 16 (requests/s and per server-CPU-second), and the time to start on an
# append-only file of 1,000,000 and 5,000,000 SETs (bench/aof.py says how each figure is
# taken).
#
#   bench/aof.sh
#   QUICK=1 bench/aof.sh                 # a few thousand requests: a check that it works
#   KVIK_SERVER_BIN=/path/to/kvik-server bench/aof.sh
#
# Writes bench/results/aof.md, or into OUT_DIR.
#
# Environment (defaults in brackets): SERVERS [kvik redis], POLICIES
# [always everysec], PIPELINES [1 16], CLIENTS [50], REQUESTS [200000],
# REPEATS [3], KEYS ["1000000 5000000"] (0: no load-time table), VALUE_BYTES [64],
# THREADS [nproc], OUT_DIR [bench/results], KVIK_SERVER_BIN [].
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
    export REQUESTS="${REQUESTS:-5000}" KEYS="${KEYS:-20000}" REPEATS="${REPEATS:-1}"
fi
OUT_DIR="${OUT_DIR:-bench/results}"
export SERVERS="${SERVERS:-kvik redis}"

# shellcheck source=bench/common.sh
source bench/common.sh
export THREADS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

KVIK_BIN=""
for name in $SERVERS; do
    case "$name" in
        kvik) release_kvik_bin ;;
        redis | valkey)
            command -v "$name-server" >/dev/null || { echo "$name-server is missing" >&2; exit 2; }
            ;;
        *) echo "unknown server '$name' in SERVERS (kvik, redis, valkey)" >&2; exit 2 ;;
    esac
done
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is missing: make redis-server" >&2; exit 2; }

{
    servers_meta
    echo "disk=$(df --output=source,fstype "${TMPDIR:-/tmp}" | tail -1)"
} >"$work/meta"
mkdir -p "$OUT_DIR"
COMMAND="bench/aof.sh" python3 bench/aof.py "${KVIK_BIN:-true}" "$OUT_DIR/aof.md" "$work/meta"
