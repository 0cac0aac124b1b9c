#!/usr/bin/env bash
# RESP vs RESPB on kvik-server, with redis-server as a reference, in the same run.
#
# For each pipeline depth P in PIPELINES and each repeat:
#   kvik-benchmark -t set,get -n BENCH_N -r 100000 -c CLIENTS -P P --json          (RESP)
#   kvik-benchmark ... --respb                                                      (RESPB)
# against kvik-server, the two protocols back to back and their order swapped
# every repeat; then redis-benchmark with the same -t -n -r -c -P --csv against
# redis-server (RESP; the reference). Reports the median requests/s of each
# cell and the ratios RESPB/RESP and kvik/redis, then appends the wire-size
# tables of `kvik-benchmark --wire-sizes` (bytes computed by the codecs).
#
# Writes bench/results/respb.md and bench/results/respb.json (all runs and
# medians), or into OUT_DIR.
#
# Environment (defaults in brackets):
#   BENCH_N    [1000000]             requests per test and run
#   REPEATS    [3]                   rounds
#   PIPELINES  ["1 10 50 100 200"]   -P values
#   CLIENTS    [50]                  -c
#   TESTS      [set,get]             -t
#   REDIS      [1]                   0 skips the redis-server reference
#   QUICK      [0]                   1: BENCH_N=2000 REPEATS=1 PIPELINES="1 10"
#                                    unless given (a check that the script works)
#   THREADS, BENCH_THREADS, KVIK_SERVER_BIN, KVIK_BENCHMARK_BIN, BENCH_TIMEOUT: see bench/common.sh
#   OUT_DIR    [bench/results]
#   LABEL      []                    a line printed at the top of the report
#
#   bench/respb.sh
#   QUICK=1 bench/respb.sh            # seconds, not a measurement
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK="${QUICK:-0}"
if [ "$QUICK" = 1 ]; then
    BENCH_N="${BENCH_N:-2000}"
    REPEATS="${REPEATS:-1}"
    PIPELINES="${PIPELINES:-1 10}"
fi
BENCH_N="${BENCH_N:-1000000}"
REPEATS="${REPEATS:-3}"
PIPELINES="${PIPELINES:-1 10 50 100 200}"
CLIENTS="${CLIENTS:-50}"
TESTS="${TESTS:-set,get}"
REDIS="${REDIS:-1}"
OUT_DIR="${OUT_DIR:-bench/results}"

# shellcheck source=bench/common.sh
source bench/common.sh

check_whole BENCH_N REPEATS CLIENTS THREADS BENCH_TIMEOUT
for p in $PIPELINES; do
    [[ "$p" =~ ^[1-9][0-9]*$ ]] || { echo "PIPELINES must hold whole numbers, got '$p'" >&2; exit 2; }
done
[ -n "${PIPELINES// /}" ] || { echo "PIPELINES is empty" >&2; exit 2; }
[ "$REPEATS" -ge 1 ] && [ "$REPEATS" -le 100 ] || { echo "REPEATS must be 1..100" >&2; exit 2; }
[[ "$TESTS" =~ ^[a-z_,]+$ ]] || { echo "TESTS must be a -t list such as set,get" >&2; exit 2; }
case "$REDIS" in 0 | 1) ;; *) echo "REDIS must be 0 or 1" >&2; exit 2 ;; esac

[ "$REDIS" = 1 ] && need_redis
find_binaries
raise_fd_limit $((CLIENTS * 2 + 256))

command_line="BENCH_N=$BENCH_N REPEATS=$REPEATS PIPELINES=\"$PIPELINES\" CLIENTS=$CLIENTS TESTS=$TESTS THREADS=$THREADS${BENCH_THREADS:+ BENCH_THREADS=$BENCH_THREADS} REDIS=$REDIS bench/respb.sh"
write_meta "$command_line"
{
    echo "n=$BENCH_N"
    echo "repeats=$REPEATS"
    echo "pipelines=$PIPELINES"
    echo "clients=$CLIENTS"
    echo "tests=$TESTS"
    if [ "$REDIS" = 1 ]; then
        echo "redis_version=$(redis-server --version | head -1)"
        echo "bench_version=$(redis-benchmark --version 2>&1 | head -1)"
    fi
} >>"$work/meta"

"$BENCH_BIN" --wire-sizes >"$work/wire_sizes.md"

failures=()
notes=()
: >"$work/runs.tsv"

# bench_kvik PROTO P REP: one kvik-benchmark run against kvik-server.
bench_kvik() {
    local proto=$1 p=$2 rep=$3 file extra=()
    file="kvik-$proto-P$p-$rep.json"
    [ "$proto" = respb ] && extra=(--respb)
    echo "round $rep/$REPEATS  -P $p  kvik $proto" >&2
    if run_bounded "$work/$file" "$work/$file.err" "$BENCH_BIN" -h 127.0.0.1 -p "${port[kvik]}" \
        -t "$TESTS" -n "$BENCH_N" -r 100000 -c "$CLIENTS" -P "$p" --json "${bench_threads[@]}" "${extra[@]}" &&
        python3 "$HELPER" wait "${port[kvik]}" 5; then
        printf 'kvik\t%s\t%s\t%s\tjson\t%s\n' "$proto" "$p" "$rep" "$file" >>"$work/runs.tsv"
    else
        failures+=("kvik $proto -P $p round $rep")
        echo "  failed: $(tail -3 "$work/$file.err" | tr '\n' ' ')" >&2
        python3 "$HELPER" wait "${port[kvik]}" 5 || { stop_server kvik; start_server kvik; }
    fi
}

# bench_redis P REP: one redis-benchmark run against redis-server.
bench_redis() {
    local p=$1 rep=$2 file
    file="redis-resp-P$p-$rep.csv"
    echo "round $rep/$REPEATS  -P $p  redis resp" >&2
    if run_bounded "$work/$file" "$work/$file.err" redis-benchmark -h 127.0.0.1 -p "${port[redis]}" \
        -t "$TESTS" -n "$BENCH_N" -r 100000 -c "$CLIENTS" -P "$p" -q --csv "${bench_threads[@]}" &&
        python3 "$HELPER" wait "${port[redis]}" 5; then
        printf 'redis\tresp\t%s\t%s\tcsv\t%s\n' "$p" "$rep" "$file" >>"$work/runs.tsv"
    else
        failures+=("redis -P $p round $rep")
        echo "  failed: $(tail -3 "$work/$file.err" | tr '\n' ' ')" >&2
        python3 "$HELPER" wait "${port[redis]}" 5 || { stop_server redis; start_server redis; }
    fi
}

start_server kvik
[ "$REDIS" = 1 ] && start_server redis
for rep in $(seq 1 "$REPEATS"); do
    if [ $((rep % 2)) = 1 ]; then order=(resp respb); else order=(respb resp); fi
    for p in $PIPELINES; do
        for proto in "${order[@]}"; do
            bench_kvik "$proto" "$p" "$rep"
        done
        [ "$REDIS" = 1 ] && bench_redis "$p" "$rep"
    done
done

if grep -q '"errors":[1-9]' "$work"/*.json 2>/dev/null; then
    notes+=("some kvik-benchmark runs counted error replies: $(grep -l '"errors":[1-9]' "$work"/*.json | xargs -n1 basename | tr '\n' ' ')")
fi
[ "$REDIS" = 1 ] || notes+=("redis-server reference skipped (REDIS=0).")
finish_meta

mkdir -p "$OUT_DIR"
python3 "$REPORT" respb "$work" "$OUT_DIR/respb.md" "$OUT_DIR/respb.json"
echo "wrote $OUT_DIR/respb.md and $OUT_DIR/respb.json" >&2
[ ${#failures[@]} -eq 0 ] || { echo "failed: ${failures[*]}" >&2; exit 1; }
