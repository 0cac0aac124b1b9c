#!/usr/bin/env bash
# Background snapshot cost against redis-server, in the same run: BGSAVE's
# duration, the memory it adds (fork copy-on-write for redis, kvik's own
# snapshot copy), fork time, and the latency of a client writing through the
# save against its steady state (bench/bgsave.py says how each figure is taken).
#
#   bench/bgsave.sh                      # 1,000,000 keys
#   KEYS="1000000 5000000" bench/bgsave.sh
#   QUICK=1 bench/bgsave.sh              # 20,000 keys, one round: a check that it works
#   KVIK_SERVER_BIN=/path/to/kvik-server bench/bgsave.sh
#
# Writes bench/results/bgsave.md, or into OUT_DIR.
#
# Environment (defaults in brackets):
#   KEYS            [1000000]     key counts, space-separated
#   REPEATS         [3]           rounds per server (medians)
#   VALUE_BYTES     [64]
#   SERVERS         [kvik redis]  which servers (kvik, redis, valkey)
#   STEADY_SECONDS  [3]           latency window before each BGSAVE
#   LOAD            [1]           0: no load client, only the latency client
#   LOAD_BATCH      [16]          commands per pipelined batch of the load client
#   LOAD_RATE       [20000]       writes/s the load client offers (0: as fast as it can)
#   LAT_INTERVAL_US [500]         pacing of the latency client's requests
#   THREADS         [nproc]       kvik-server --threads
#   KVIK_SERVER_BIN []            use this kvik-server instead of the release build
#   OUT_DIR         [bench/results]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
    KEYS="${KEYS:-20000}"
    export REPEATS="${REPEATS:-1}"
fi
KEYS="${KEYS:-1000000}"
OUT_DIR="${OUT_DIR:-bench/results}"
export SERVERS="${SERVERS:-kvik redis}"

# shellcheck source=bench/common.sh
source bench/common.sh
export THREADS
# shellcheck disable=SC2086  # KEYS is a list
for k in $KEYS; do
    [[ "$k" =~ ^[1-9][0-9]*$ ]] || { echo "KEYS must be whole numbers ≥ 1, got '$k'" >&2; exit 2; }
done

KVIK_BIN=""
for name in $SERVERS; do
    case "$name" in
        kvik)
            release_kvik_bin
            ;;
        redis | valkey)
            command -v "$name-server" >/dev/null || { echo "$name-server is missing" >&2; exit 2; }
            ;;
        *) echo "unknown server '$name' in SERVERS (kvik, redis, valkey)" >&2; exit 2 ;;
    esac
done

command_line="KEYS=\"$KEYS\" REPEATS=${REPEATS:-3} SERVERS=\"$SERVERS\" LOAD=${LOAD:-1} LOAD_RATE=${LOAD_RATE:-20000} bench/bgsave.sh"
{
    servers_meta
    echo "thp=$(cat /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo '?')"
    echo "overcommit=$(cat /proc/sys/vm/overcommit_memory 2>/dev/null || echo '?')"
} >"$work/meta"
mkdir -p "$OUT_DIR"
# shellcheck disable=SC2086  # KEYS is a list
COMMAND="$command_line" python3 bench/bgsave.py "${KVIK_BIN:--}" "$OUT_DIR/bgsave.md" "$work/meta" $KEYS
