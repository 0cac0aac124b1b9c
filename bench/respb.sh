#!/usr/bin/env bash
# RESP vs RESPB on kvik-server, with redis-server and valkey-server as
# references, in the same run.
#
# For each pipeline depth P in PIPELINES and each repeat:
#   kvik-benchmark -t set,get -n BENCH_N -r 100000 -c CLIENTS -P P --json          (RESP)
#   kvik-benchmark ... --respb                                                      (RESPB)
# against kvik-server (one server per thread count of KVIK_THREADS), the two
# protocols back to back and their order swapped every repeat; then the same
# RESP command against each server of PEERS. One
# client for every cell, so the ratios compare servers and protocols, not
# benchmark tools. Reports the median requests/s of each cell and the ratios
# RESPB/RESP and kvik/peer, then appends the wire-size tables of
# `kvik-benchmark --wire-sizes` (bytes computed by the codecs).
#
# kvik RESPB over valkey RESP is the comparison the RESPB proposal makes for
# its Valkey fork (RESPB on the fork over Valkey's own RESP path).
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
#   PEERS      ["redis valkey"]      reference servers (RESP, persistence off)
#   REDIS      [1]                   0 leaves redis out of PEERS
#   QUICK      [0]                   1: BENCH_N=2000 REPEATS=1 PIPELINES="1 10"
#                                    unless given (a check that the script works)
#   KVIK_THREADS ["1 $THREADS"]     kvik-server --threads values, each a server of its own
#   PIN, THREADS, BENCH_THREADS, KVIK_SERVER_BIN, KVIK_BENCHMARK_BIN, BENCH_TIMEOUT: see bench/common.sh
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
PEERS="${PEERS-redis valkey}"
OUT_DIR="${OUT_DIR:-bench/results}"

# shellcheck source=bench/common.sh
source bench/common.sh

check_whole BENCH_N REPEATS CLIENTS THREADS BENCH_TIMEOUT
KVIK_THREADS="${KVIK_THREADS:-1 $THREADS}"
kvik_servers=()
for t in $KVIK_THREADS; do
    [[ "$t" =~ ^[1-9][0-9]?$ ]] || { echo "KVIK_THREADS must hold thread counts 1..99, got '$t'" >&2; exit 2; }
    [[ " ${kvik_servers[*]} " == *" kvik-t$t "* ]] || kvik_servers+=("kvik-t$t")
done
[ ${#kvik_servers[@]} -gt 0 ] || { echo "KVIK_THREADS is empty" >&2; exit 2; }
# The busiest kvik decides whether the client competes with it for cores (see finish_meta).
THREADS=$(printf '%s\n' "${kvik_servers[@]#kvik-t}" | sort -n | tail -1)
for p in $PIPELINES; do
    [[ "$p" =~ ^[1-9][0-9]*$ ]] || { echo "PIPELINES must hold whole numbers, got '$p'" >&2; exit 2; }
done
[ -n "${PIPELINES// /}" ] || { echo "PIPELINES is empty" >&2; exit 2; }
[ "$REPEATS" -ge 1 ] && [ "$REPEATS" -le 100 ] || { echo "REPEATS must be 1..100" >&2; exit 2; }
[[ "$TESTS" =~ ^[a-z_,]+$ ]] || { echo "TESTS must be a -t list such as set,get" >&2; exit 2; }
case "$REDIS" in 0 | 1) ;; *) echo "REDIS must be 0 or 1" >&2; exit 2 ;; esac
peers=()
for peer in $PEERS; do
    [ "$peer" = redis ] && [ "$REDIS" = 0 ] && continue
    case "$peer" in
        redis) need_redis ;;
        valkey) need_valkey ;;
        *) echo "PEERS may hold redis and valkey, got '$peer'" >&2; exit 2 ;;
    esac
    peers+=("$peer")
done
find_binaries
raise_fd_limit $((CLIENTS * 2 + 256))

command_line="BENCH_N=$BENCH_N REPEATS=$REPEATS PIPELINES=\"$PIPELINES\" CLIENTS=$CLIENTS TESTS=$TESTS KVIK_THREADS=\"${kvik_servers[*]//kvik-t/}\"${BENCH_THREADS:+ BENCH_THREADS=$BENCH_THREADS} PEERS=\"${peers[*]}\" bench/respb.sh"
write_meta "$command_line"
{
    echo "n=$BENCH_N"
    echo "repeats=$REPEATS"
    echo "pipelines=$PIPELINES"
    echo "clients=$CLIENTS"
    echo "tests=$TESTS"
    echo "peers=${peers[*]}"
    echo "kvik_servers=${kvik_servers[*]}"
    for peer in "${peers[@]}"; do
        echo "${peer}_version=$("$peer-server" --version | head -1)"
    done
} >>"$work/meta"

"$BENCH_BIN" --wire-sizes >"$work/wire_sizes.md"

failures=()
notes=()
: >"$work/runs.tsv"

# bench_one SERVER PROTO P REP: one kvik-benchmark run against SERVER.
bench_one() {
    local server=$1 proto=$2 p=$3 rep=$4 file extra=()
    file="$server-$proto-P$p-$rep.json"
    [ "$proto" = respb ] && extra=(--respb)
    echo "round $rep/$REPEATS  -P $p  $server $proto" >&2
    # The client's CPU time over the run, to tell runs it paced (as the suite does).
    local client_before=x client_after=x wall_before wall_after client_ms="" rc=0
    children_ms client_before || client_before=x
    now_ms wall_before
    run_bounded "$work/$file" "$work/$file.err" "${client_pin[@]}" "$BENCH_BIN" -h 127.0.0.1 -p "${port[$server]}" \
        -t "$TESTS" -n "$BENCH_N" -r 100000 -c "$CLIENTS" -P "$p" --json "${bench_threads[@]}" "${extra[@]}" || rc=$?
    now_ms wall_after
    children_ms client_after || client_after=x
    if [[ "$client_before" =~ ^[0-9]+$ && "$client_after" =~ ^[0-9]+$ ]]; then
        client_ms=$((client_after - client_before))
    fi
    if [ "$rc" = 0 ] && python3 "$HELPER" wait "${port[$server]}" 5; then
        printf '%s\t%s\t%s\t%s\tjson\t%s\t%s\t%s\n' "$server" "$proto" "$p" "$rep" "$file" "$client_ms" \
            "$((wall_after - wall_before))" >>"$work/runs.tsv"
    else
        failures+=("$server $proto -P $p round $rep")
        echo "  failed: $(tail -3 "$work/$file.err" | tr '\n' ' ')" >&2
        python3 "$HELPER" wait "${port[$server]}" 5 || { stop_server "$server"; start_server "$server"; }
    fi
}

for kvik in "${kvik_servers[@]}"; do start_server "$kvik"; done
for peer in "${peers[@]}"; do start_server "$peer"; done
for rep in $(seq 1 "$REPEATS"); do
    if [ $((rep % 2)) = 1 ]; then order=(resp respb); else order=(respb resp); fi
    for p in $PIPELINES; do
        for kvik in "${kvik_servers[@]}"; do
            for proto in "${order[@]}"; do
                bench_one "$kvik" "$proto" "$p" "$rep"
            done
        done
        for peer in "${peers[@]}"; do
            bench_one "$peer" resp "$p" "$rep"
        done
    done
done

if grep -q '"errors":[1-9]' "$work"/*.json 2>/dev/null; then
    notes+=("some kvik-benchmark runs counted error replies: $(grep -l '"errors":[1-9]' "$work"/*.json | xargs -n1 basename | tr '\n' ' ')")
fi
[ ${#peers[@]} -gt 0 ] || notes+=("no reference servers (PEERS is empty).")
finish_meta

mkdir -p "$OUT_DIR"
python3 "$REPORT" respb "$work" "$OUT_DIR/respb.md" "$OUT_DIR/respb.json"
echo "wrote $OUT_DIR/respb.md and $OUT_DIR/respb.json" >&2
[ ${#failures[@]} -eq 0 ] || { echo "failed: ${failures[*]}" >&2; exit 1; }
