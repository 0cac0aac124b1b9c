#!/usr/bin/env bash
# Many logical clients on kvik-server: RESPB mux channels over a few TCP
# connections vs one TCP connection per client (RESP and RESPB), same load.
#
# Three configurations, each run against a fresh kvik-server:
#   resp   kvik-benchmark -c CLIENTS                   (CLIENTS connections, RESP)
#   respb  kvik-benchmark -c CLIENTS --respb           (CLIENTS connections, RESPB)
#   mux    kvik-benchmark -c CLIENTS --mux MUX         (CLIENTS / MUX connections)
# all with -t TESTS -n BENCH_N -r 100000 -P PIPELINE --json. kvik-benchmark's
# -c counts logical clients, so `-c 1000 --mux 100` is 1,000 clients on 10
# connections and every configuration carries the same requests.
#
# Measured per run: requests/s and p99 latency (from --json), and the
# server's memory from /proc/<pid>/status: VmRSS when idle before the run,
# the highest VmRSS sampled every 0.1 s during it, and VmHWM after it. The
# configurations alternate run by run, their order rotated every repeat;
# the report gives medians.
#
# Writes bench/results/mux.md and bench/results/mux.json, or into OUT_DIR.
#
# Environment (defaults in brackets):
#   BENCH_N   [1000000]  requests per test and run
#   REPEATS   [3]        rounds
#   CLIENTS   [1000]     logical clients (-c)
#   MUX       [100]      channels per connection in the mux configuration
#   PIPELINE  [1]        -P
#   TESTS     [set,get]  -t
#   QUICK     [0]        1: BENCH_N=2000 REPEATS=1 CLIENTS=100 MUX=10 unless given
#   THREADS, BENCH_THREADS, KVIK_SERVER_BIN, KVIK_BENCHMARK_BIN, BENCH_TIMEOUT: see bench/common.sh
#   OUT_DIR   [bench/results]
#   LABEL     []         a line printed at the top of the report
#
#   bench/mux.sh
#   QUICK=1 bench/mux.sh        # seconds, not a measurement
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK="${QUICK:-0}"
if [ "$QUICK" = 1 ]; then
    BENCH_N="${BENCH_N:-2000}"
    REPEATS="${REPEATS:-1}"
    CLIENTS="${CLIENTS:-100}"
    MUX="${MUX:-10}"
fi
BENCH_N="${BENCH_N:-1000000}"
REPEATS="${REPEATS:-3}"
CLIENTS="${CLIENTS:-1000}"
MUX="${MUX:-100}"
PIPELINE="${PIPELINE:-1}"
TESTS="${TESTS:-set,get}"
OUT_DIR="${OUT_DIR:-bench/results}"

# shellcheck source=bench/common.sh
source bench/common.sh

check_whole BENCH_N REPEATS CLIENTS MUX PIPELINE THREADS BENCH_TIMEOUT
[ "$REPEATS" -ge 1 ] && [ "$REPEATS" -le 100 ] || { echo "REPEATS must be 1..100" >&2; exit 2; }
[ "$CLIENTS" -ge 1 ] && [ "$CLIENTS" -le 100000 ] || { echo "CLIENTS must be 1..100000" >&2; exit 2; }
[ "$MUX" -ge 2 ] && [ "$MUX" -le 1024 ] || { echo "MUX must be 2..1024 (kvik's default channel limit)" >&2; exit 2; }
[ "$PIPELINE" -ge 1 ] || { echo "PIPELINE must be at least 1" >&2; exit 2; }
[[ "$TESTS" =~ ^[a-z_,]+$ ]] || { echo "TESTS must be a -t list such as set,get" >&2; exit 2; }

find_binaries
# Client and server each hold a descriptor per connection.
raise_fd_limit $((CLIENTS * 2 + 256))

command_line="BENCH_N=$BENCH_N REPEATS=$REPEATS CLIENTS=$CLIENTS MUX=$MUX PIPELINE=$PIPELINE TESTS=$TESTS THREADS=$THREADS${BENCH_THREADS:+ BENCH_THREADS=$BENCH_THREADS} bench/mux.sh"
write_meta "$command_line"
{
    echo "n=$BENCH_N"
    echo "repeats=$REPEATS"
    echo "clients=$CLIENTS"
    echo "mux=$MUX"
    echo "pipeline=$PIPELINE"
    echo "tests=$TESTS"
} >>"$work/meta"

failures=()
notes=()
: >"$work/runs.tsv"

# rss_of PID: "VmRSS VmHWM" in bytes.
rss_of() {
    python3 "$REPORT" rss "$1"
}

# sample_rss PID OUT: the highest VmRSS seen, every 0.1 s, written to OUT
# on each rise, until PID is gone or this sampler is killed.
sample_rss() {
    local p=$1 out=$2 high=0 now
    echo 0 >"$out"
    while kill -0 "$p" 2>/dev/null; do
        now=$(awk '/^VmRSS:/ {print $2 * 1024}' "/proc/$p/status" 2>/dev/null || echo 0)
        if [ -n "$now" ] && [ "$now" -gt "$high" ]; then
            high=$now
            echo "$high" >"$out"
        fi
        sleep 0.1
    done
}

# run_config NAME REP: one benchmark run of configuration NAME on a fresh server.
run_config() {
    local name=$1 rep=$2 file idle hwm peak sampler extra=()
    case "$name" in
        resp) extra=() ;;
        respb) extra=(--respb) ;;
        mux) extra=(--mux "$MUX") ;;
    esac
    file="$name-$rep.json"
    start_server kvik
    idle=$(rss_of "${pid[kvik]}" | cut -d' ' -f1)
    sample_rss "${pid[kvik]}" "$work/peak" &
    sampler=$!
    echo "round $rep/$REPEATS  $name (-c $CLIENTS ${extra[*]})" >&2
    if run_bounded "$work/$file" "$work/$file.err" "$BENCH_BIN" -h 127.0.0.1 -p "${port[kvik]}" \
        -t "$TESTS" -n "$BENCH_N" -r 100000 -c "$CLIENTS" -P "$PIPELINE" --json "${bench_threads[@]}" "${extra[@]}" &&
        python3 "$HELPER" wait "${port[kvik]}" 5; then
        hwm=$(rss_of "${pid[kvik]}" | cut -d' ' -f2)
        kill "$sampler" 2>/dev/null || true
        wait "$sampler" 2>/dev/null || true
        peak=$(cat "$work/peak")
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$rep" "$file" "$idle" "$peak" "$hwm" >>"$work/runs.tsv"
    else
        kill "$sampler" 2>/dev/null || true
        wait "$sampler" 2>/dev/null || true
        failures+=("$name round $rep")
        echo "  failed: $(tail -3 "$work/$file.err" | tr '\n' ' ')" >&2
    fi
    stop_server kvik
}

configs=(resp respb mux)
for rep in $(seq 1 "$REPEATS"); do
    # Rotate the order every repeat so that no configuration always goes first.
    shift_by=$(((rep - 1) % ${#configs[@]}))
    order=("${configs[@]:shift_by}" "${configs[@]:0:shift_by}")
    for name in "${order[@]}"; do
        run_config "$name" "$rep"
    done
done

if grep -q '"errors":[1-9]' "$work"/*.json 2>/dev/null; then
    notes+=("some runs counted error replies: $(grep -l '"errors":[1-9]' "$work"/*.json | xargs -n1 basename | tr '\n' ' ')")
fi
finish_meta

mkdir -p "$OUT_DIR"
python3 "$REPORT" mux "$work" "$OUT_DIR/mux.md" "$OUT_DIR/mux.json"
echo "wrote $OUT_DIR/mux.md and $OUT_DIR/mux.json" >&2
[ ${#failures[@]} -eq 0 ] || { echo "failed: ${failures[*]}" >&2; exit 1; }
