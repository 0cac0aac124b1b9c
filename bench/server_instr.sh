#!/usr/bin/env bash
# User-space instructions per request of kvik-server under one workload,
# counted with callgrind: the same on a busy machine as on an idle one, so
# two builds can be compared where requests/s on a shared VM drift by 10%
# between identical runs. Counts work, not stalls: a change that removes
# cache misses shows in requests/s and server CPU time (bench/ab.sh for two
# builds), not here.
#
# For each server binary: start it under callgrind (`--threads 1`, persistence
# off, 127.0.0.1 on a free port), run PREFILL, zero the counters, run the
# workload, dump, and divide the instructions collected by REQUESTS.
#
#   bench/server_instr.sh                                   # the release build
#   bench/server_instr.sh old/kvik-server target/release/kvik-server
#   CLIENT=respb REQUESTS=200000 PIPELINE=200 TEST=get bench/server_instr.sh
#
# Environment (defaults in brackets):
#   TEST      [ping_mbulk]   the -t test
#   REQUESTS  [100000]       -n
#   CLIENTS   [1]            -c
#   PIPELINE  [1000]         -P
#   KEYSPACE  [100000]       -r
#   CLIENT    [resp]         resp: redis-benchmark; respb: kvik-benchmark --respb
#   PREFILL   [-t set -n 100000 -r 100000 -P 100]   redis-benchmark arguments run
#                            before counting ("" for none)
#
# Needs valgrind (Debian package `valgrind`) and redis-benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."

command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 2; }
command -v callgrind_control >/dev/null || { echo "callgrind_control is missing (package valgrind)" >&2; exit 2; }
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is missing: make redis-server" >&2; exit 2; }

TEST="${TEST:-ping_mbulk}"
REQUESTS="${REQUESTS:-100000}"
CLIENTS="${CLIENTS:-1}"
PIPELINE="${PIPELINE:-1000}"
KEYSPACE="${KEYSPACE:-100000}"
CLIENT="${CLIENT:-resp}"
PREFILL="${PREFILL--t set -n 100000 -r 100000 -P 100}"

target_dir="${CARGO_TARGET_DIR:-target}"
if [ "$#" -eq 0 ]; then
    cargo build --quiet --release -p kvik-server -p kvik-bench
    set -- "$target_dir/release/kvik-server"
elif [ "$CLIENT" = respb ]; then
    cargo build --quiet --release -p kvik-bench
fi
benchmark="$target_dir/release/kvik-benchmark"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Instructions callgrind collects while `binary` serves the workload.
count() {
    local binary=$1 port pid out
    port=$(python3 bench/server_report.py freeport)
    out="$work/callgrind.out"
    valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$binary" --bind 127.0.0.1 --port "$port" --threads 1 --save '' --appendonly no \
        >"$work/server.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.2
    done
    redis-cli -p "$port" ping >/dev/null 2>&1 || { echo "$binary did not start under valgrind" >&2; kill "$pid"; return 1; }
    if [ -n "$PREFILL" ]; then
        # shellcheck disable=SC2086
        redis-benchmark -p "$port" $PREFILL -q >/dev/null
    fi
    callgrind_control -z "$pid" >/dev/null 2>&1
    local args=(-p "$port" -t "$TEST" -n "$REQUESTS" -c "$CLIENTS" -P "$PIPELINE" -r "$KEYSPACE" -q)
    case "$CLIENT" in
        resp) redis-benchmark "${args[@]}" >/dev/null ;;
        respb) "$benchmark" "${args[@]}" --respb >/dev/null ;;
        *) echo "CLIENT must be resp or respb" >&2; kill "$pid"; return 2 ;;
    esac
    callgrind_control -d "$pid" >/dev/null 2>&1
    kill "$pid"
    wait "$pid" 2>/dev/null || true
    # The dump taken after the workload is the first numbered part.
    sed -n 's/^summary: \([0-9]*\).*/\1/p' "$out.1" | head -1
}

echo "Workload: $TEST -n $REQUESTS -c $CLIENTS -P $PIPELINE -r $KEYSPACE over $CLIENT; prefill: ${PREFILL:-none}"
echo
echo "| server | instructions per request |"
echo "|---|---:|"
for binary in "$@"; do
    total=$(count "$binary")
    awk -v b="$binary" -v t="$total" -v n="$REQUESTS" 'BEGIN { printf "| %s | %.0f |\n", b, t / n }'
done
