#!/usr/bin/env bash
# kvik-server against redis-server on loopback, in the same run.
#
# Throughput: redis-benchmark -t ping,set,get,incr,mset -n BENCH_N -r 100000 -q --csv
# at three settings (-c 50 -P 1, -c 50 -P 16, -c 1 -P 1000), alternating kvik and
# redis for every setting, REPEATS times; reports the median requests/s of each
# server and the ratio kvik/redis.
#
# Bytes per key: each server started fresh, then MEM_KEYS pipelined
# `SET key:<i> <value>` with 3-byte and then 64-byte values; reports
# (after - before) / DBSIZE of the process RSS and, where the server has
# INFO, of used_memory.
#
# Writes bench/results/server.md and bench/results/server.csv (or OUT_DIR).
#
# Environment (defaults in brackets):
#   BENCH_N   [1000000]  requests per redis-benchmark test
#   REPEATS   [3]        kvik/redis rounds per setting
#   THREADS   [nproc]    kvik-server --threads
#   MEM_KEYS  [1000000]  keys loaded for bytes per key (0 skips it)
#   OUT_DIR   [bench/results]
#   LABEL     []         a line printed at the top of the Markdown report
#   KVIK_SERVER_BIN  []  use this kvik-server instead of building a release one
#
#   bench/server.sh
#   BENCH_N=100000 REPEATS=1 MEM_KEYS=200000 bench/server.sh     # quick check
set -euo pipefail
cd "$(dirname "$0")/.."

BENCH_N="${BENCH_N:-1000000}"
REPEATS="${REPEATS:-3}"
THREADS="${THREADS:-$(nproc)}"
MEM_KEYS="${MEM_KEYS:-1000000}"
OUT_DIR="${OUT_DIR:-bench/results}"
LABEL="${LABEL:-}"
TESTS="ping,set,get,incr,mset"
SETTINGS=("c50_P1:-c 50 -P 1" "c50_P16:-c 50 -P 16" "c1_P1000:-c 1 -P 1000")
HELPER=bench/server_report.py
# Upper bound for one redis-benchmark invocation; a stuck server must not hang the run.
BENCH_TIMEOUT="${BENCH_TIMEOUT:-900}"

for v in BENCH_N REPEATS THREADS MEM_KEYS BENCH_TIMEOUT; do
    [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "$v must be a whole number, got '${!v}'" >&2; exit 2; }
done
[ "$REPEATS" -ge 1 ] && [ "$REPEATS" -le 100 ] || { echo "REPEATS must be 1..100" >&2; exit 2; }

command_line="BENCH_N=$BENCH_N REPEATS=$REPEATS THREADS=$THREADS MEM_KEYS=$MEM_KEYS bench/server.sh"

# ------------------------------------------------------------------ tools
# Servers on free ports, bounded runs and clean-up are shared with the RESPB scripts.
# shellcheck source=bench/common.sh
source bench/common.sh
need_redis

release_kvik_bin

# ------------------------------------------------------------------ metadata
{
    machine_meta
    echo "redis_version=$(redis-server --version | head -1)"
    echo "bench_version=$(redis-benchmark --version 2>&1 | head -1)"
    echo "threads=$THREADS"
    echo "n=$BENCH_N"
    echo "repeats=$REPEATS"
    echo "tests=$TESTS"
    echo "command=$command_line"
    echo "label=$LABEL"
} >"$work/meta"

# ------------------------------------------------------------------ throughput
# Both servers run side by side for the whole throughput part; only one is
# under load at a time.
failures=()
start_server kvik
start_server redis
for rep in $(seq 1 "$REPEATS"); do
    for entry in "${SETTINGS[@]}"; do
        key=${entry%%:*}
        flags=${entry#*:}
        for name in kvik redis; do
            echo "round $rep/$REPEATS  $flags  $name" >&2
            out="$work/bench-$key-$name-$rep"
            # shellcheck disable=SC2086  # $flags is a list of options
            if ! run_bounded "$out.csv" "$out.err" redis-benchmark -h 127.0.0.1 \
                -p "${port[$name]}" -t "$TESTS" -n "$BENCH_N" -r 100000 $flags -q --csv ||
                ! python3 "$HELPER" wait "${port[$name]}" 5; then
                failures+=("$name $flags round $rep")
                echo "  failed: $(tail -3 "$out.err" | tr '\n' ' ')" >&2
                # A server that stopped answering is started again for the next rounds.
                if ! python3 "$HELPER" wait "${port[$name]}" 5; then
                    stop_server "$name"
                    start_server "$name"
                fi
            fi
        done
    done
done
stop_server kvik
stop_server redis

# ------------------------------------------------------------------ bytes per key
if [ "$MEM_KEYS" -gt 0 ]; then
    for size in 3 64; do
        for name in kvik redis; do
            measure_memory "$HELPER" "$name" "$size"
        done
    done
fi

notes=()
if [ "$((THREADS + 1))" -gt "$(nproc)" ]; then
    notes+=("redis-benchmark runs on the same $(nproc) cores as the server under test (kvik with $THREADS threads), so client and server compete for CPU.")
fi
if grep -qi 'unknown command' "$work"/*.err 2>/dev/null; then
    notes+=("some requests got 'unknown command': $(grep -hi 'unknown command' "$work"/*.err | sort -u | head -3 | tr '\n' ' ')")
fi
outcome_meta

mkdir -p "$OUT_DIR"
python3 "$HELPER" report "$work" "$OUT_DIR/server.md" "$OUT_DIR/server.csv"
echo "wrote $OUT_DIR/server.md and $OUT_DIR/server.csv" >&2
[ ${#failures[@]} -eq 0 ] || { echo "failed: ${failures[*]}" >&2; exit 1; }
