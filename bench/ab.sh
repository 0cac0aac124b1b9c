#!/usr/bin/env bash
# Two kvik-server builds, A and B, against one redis-benchmark workload in
# alternating rounds: requests/s and server CPU time, and the median of
# B's ratio to A within each round.
#
# On a shared VM the speed of the whole machine drifts by 10-60% between
# runs minutes apart, so two builds measured one after the other, or a few
# runs of each, can show a gain or a loss that is only the drift. Here the
# two run back to back in every round, in turns (AB, BA, AB, …, so that
# neither always goes first), each on a server of its own with the same
# prefill, and only ratios within a round are combined. Server CPU time
# (user + system, from /proc) per request says more than requests/s where
# the client is the bottleneck.
#
# Compare builds of the same kind: a profile-guided build (build/pgo.sh)
# against a plain release build measures the profile, not the change.
#
#   bench/ab.sh old/kvik-server target/release/kvik-server
#   TEST=zadd REQUESTS=600000 bench/ab.sh a b
#   TEST=mset PIPELINE=16 PREFILL="" ROUNDS=10 bench/ab.sh a b
#
# Environment (defaults in brackets):
#   TEST      [get]      the -t test
#   REQUESTS  [800000]   -n
#   CLIENTS   [50]       -c
#   PIPELINE  [16]       -P
#   KEYSPACE  [100000]   -r
#   SIZE      [3]        -d
#   ROUNDS    [8]        rounds, each running A and B once
#   PREFILL   [-t set -n 400000 -c 50 -P 16]   redis-benchmark arguments run
#                        on each fresh server before it is measured, with the
#                        same -r and -d ("" for none)
#   PIN       [1]        1: the server on the second usable CPU and the client
#                        on the first (taskset), where there are two
#
# The servers run with --threads 1, persistence off, on free ports of
# 127.0.0.1. Needs redis-benchmark (make redis-server) and python3.
set -euo pipefail

[ "$#" -eq 2 ] || { echo "usage: bench/ab.sh A_SERVER_BINARY B_SERVER_BINARY" >&2; exit 2; }
for binary in "$@"; do
    [ -x "$binary" ] || { echo "no kvik-server at $binary" >&2; exit 2; }
done
# Paths as given, before the working directory changes.
set -- "$(realpath "$1")" "$(realpath "$2")"
cd "$(dirname "$0")/.."
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is missing: make redis-server" >&2; exit 2; }

TEST="${TEST:-get}"
REQUESTS="${REQUESTS:-800000}"
CLIENTS="${CLIENTS:-50}"
PIPELINE="${PIPELINE:-16}"
KEYSPACE="${KEYSPACE:-100000}"
SIZE="${SIZE:-3}"
ROUNDS="${ROUNDS:-8}"
PREFILL="${PREFILL--t set -n 400000 -c 50 -P 16}"

# common.sh: client_pin and server_pin (PIN=1 here by default), $work,
# cpu_ticks, the pid and port of each server by name, and stopping them
# all on exit.
PIN="${PIN:-1}"
# shellcheck source=bench/common.sh
source bench/common.sh
check_whole REQUESTS CLIENTS PIPELINE KEYSPACE SIZE ROUNDS
[ "$ROUNDS" -ge 1 ] || { echo "ROUNDS must be 1 or more" >&2; exit 2; }

# measure NAME BINARY: BINARY on a free port of 127.0.0.1 as server NAME,
# prefilled, then the workload; sets m_rps and m_ticks (the server's CPU
# time over the workload) and stops the server.
measure() {
    local name=$1 binary=$2 p before after csv
    p=$(python3 "$HELPER" freeport)
    "${server_pin[@]}" "$binary" --bind 127.0.0.1 --port "$p" --threads 1 --save '' --appendonly no \
        >>"$work/$name.log" 2>&1 &
    pid[$name]=$!
    port[$name]=$p
    await_server "$name"
    if [ -n "$PREFILL" ]; then
        # shellcheck disable=SC2086
        redis-benchmark -p "$p" $PREFILL -r "$KEYSPACE" -d "$SIZE" -q >/dev/null
    fi
    before=$(cpu_ticks "${pid[$name]}")
    csv=$("${client_pin[@]}" redis-benchmark -p "$p" -t "$TEST" -n "$REQUESTS" -c "$CLIENTS" \
        -P "$PIPELINE" -r "$KEYSPACE" -d "$SIZE" --csv)
    after=$(cpu_ticks "${pid[$name]}")
    stop_server "$name"
    # The first row after the header: "TEST","rps",…
    m_rps=$(sed -n '2s/^"[^"]*","\([0-9.]*\)".*/\1/p' <<<"$csv")
    m_ticks=$((after - before))
    [ -n "$m_rps" ] || { echo "no requests/s in redis-benchmark's output: $csv" >&2; exit 1; }
}

echo "A: $1"
echo "B: $2"
echo "Workload: -t $TEST -n $REQUESTS -c $CLIENTS -P $PIPELINE -r $KEYSPACE -d $SIZE; prefill: ${PREFILL:-none};" \
    "pinned: $([ ${#server_pin[@]} -gt 0 ] && echo yes || echo no)"
echo
echo "| round | A requests/s | B requests/s | A CPU ticks | B CPU ticks |"
echo "|---:|---:|---:|---:|---:|"
: >"$work/rounds"
for round in $(seq "$ROUNDS"); do
    order=(a b)
    [ $((round % 2)) -eq 1 ] || order=(b a)
    for which in "${order[@]}"; do
        if [ "$which" = a ]; then
            measure a "$1"
            a_rps=$m_rps a_cpu=$m_ticks
        else
            measure b "$2"
            b_rps=$m_rps b_cpu=$m_ticks
        fi
    done
    echo "| $round | $a_rps | $b_rps | $a_cpu | $b_cpu |"
    echo "$a_rps $b_rps $a_cpu $b_cpu" >>"$work/rounds"
done
echo
python3 - "$work/rounds" <<'EOF'
import statistics
import sys

rounds = [tuple(float(x) for x in line.split()) for line in open(sys.argv[1]) if line.strip()]
speed = [b / a for a, b, _, _ in rounds if a > 0]
# CPU per request: both ran the same number of requests, so the ratio of
# ticks is the ratio of CPU per request. Above 1, B used less.
cpu = [ac / bc for _, _, ac, bc in rounds if bc > 0]
if speed:
    print(f"B/A requests/s: median {statistics.median(speed):.3f}, "
          f"B ahead in {sum(r > 1 for r in speed)} of {len(speed)} rounds")
if cpu:
    print(f"A/B server CPU per request: median {statistics.median(cpu):.3f} (above 1: B uses less)")
EOF
