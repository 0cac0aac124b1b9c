#!/usr/bin/env bash
# Replication against redis-server, in the same run (bench/replication.py
# says how each figure is taken):
#   sync  full resync time: kvik as the master and as the replica, each beside
#         redis-server in the same role;
#   load  a master's writes/s, writes per CPU-second and latency under a write
#         load, before and while a redis-server replica syncs from it;
#   lag   a synced replica's lag in bytes and its catch-up time under a load of
#         50 clients with 16 SETs pipelined each (kvik -> kvik, redis -> redis,
#         kvik -> redis).
#
#   bench/replication.sh                       # 1,000,000 keys
#   KEYS="1000000 5000000" bench/replication.sh
#   SECTIONS="load lag" bench/replication.sh   # leave the full resync out
#   QUICK=1 bench/replication.sh               # 20,000 keys, one round, short windows and
#                                              # loads: a check that it works
#   KVIK_SERVER_BIN=/path/to/kvik-server bench/replication.sh
#
# Writes bench/results/replication.md, or into OUT_DIR.
#
# Environment (defaults in brackets):
#   KEYS            [1000000]   key counts, space-separated
#   REPEATS         [3]         rounds (medians)
#   VALUE_BYTES     [64]
#   THREADS         [nproc]     kvik-server --threads
#   SECTIONS        [sync load lag]  which measurements to run
#   SYNC_TIMEOUT    [600]       seconds a sync may take
#   STEADY_SECONDS  [3]         load: the window before the sync (QUICK: 1)
#   WARMUP_SECONDS  [0.5]       load: after the clients start (QUICK: 0.3)
#   LOAD_BATCH      [16]        load: SETs per pipelined batch of the load client
#   LOAD_RATE       [0]         load: writes/s the load client offers; 0: as fast as it can
#   LAT_INTERVAL_US [500]       load: the latency client's pace
#   LAG_PAIRS       [kvik:kvik redis:redis kvik:redis]  lag: MASTER:REPLICA pairs
#   LAG_CLIENTS     [50]        lag: benchmark connections (-c)
#   LAG_PIPELINE    [16]        lag: commands pipelined per connection (-P)
#   LAG_REQUESTS    [5000000]   lag: SETs the benchmark sends (-n; QUICK: 1000000)
#   LAG_BENCH       []          lag: the benchmark binary; redis-benchmark when installed,
#                               else $KVIK_BENCHMARK_BIN or target/release/kvik-benchmark
#   CATCHUP_TIMEOUT [60]        lag: seconds the replica may take to catch up
#   KVIK_SERVER_BIN []          use this kvik-server instead of the release build
#   OUT_DIR         [bench/results]
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
    KEYS="${KEYS:-20000}"
    export REPEATS="${REPEATS:-1}"
    export STEADY_SECONDS="${STEADY_SECONDS:-1}"
    export WARMUP_SECONDS="${WARMUP_SECONDS:-0.3}"
    export LAG_REQUESTS="${LAG_REQUESTS:-1000000}"
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
SECTIONS="${SECTIONS:-sync load lag}"
export SECTIONS
if [[ " $SECTIONS " == *" lag "* ]]; then
    if [ -z "${LAG_BENCH:-}" ]; then
        if command -v redis-benchmark >/dev/null; then
            LAG_BENCH=$(command -v redis-benchmark)
        elif [ -n "${KVIK_BENCHMARK_BIN:-}" ]; then
            LAG_BENCH=$KVIK_BENCHMARK_BIN
        else
            LAG_BENCH="${CARGO_TARGET_DIR:-target}/release/kvik-benchmark"
        fi
    fi
    [ -x "$LAG_BENCH" ] || {
        echo "no benchmark for the lag section at '$LAG_BENCH': install redis-tools," \
            "build kvik-benchmark (cargo build --release -p kvik-bench) or leave lag out of SECTIONS" >&2
        exit 2
    }
    export LAG_BENCH
fi
KVIK_BIN=""
release_kvik_bin

{ servers_meta; } >"$work/meta"
mkdir -p "$OUT_DIR"
quick=""
[ "${QUICK:-0}" = 1 ] && quick="QUICK=1 "
# shellcheck disable=SC2086  # KEYS is a list
COMMAND="${quick}KEYS=\"$KEYS\" REPEATS=${REPEATS:-3} SECTIONS=\"$SECTIONS\" bench/replication.sh" \
    python3 bench/replication.py "$KVIK_BIN" "$OUT_DIR/replication.md" "$work/meta" $KEYS
