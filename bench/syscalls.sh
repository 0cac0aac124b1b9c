#!/usr/bin/env bash
# System calls and context switches per request, of the load generator and
# of the server, counted with perf's tracepoints while redis-benchmark runs
# one workload against each server in turn.
#
# Where the client is the slower side (`-c 50 -P 1` on a 2-core machine),
# requests/s says more about the machine's mood than about the server, and
# callgrind (bench/server_instr.sh) sees no kernel work at all. These counts
# show what the server makes the client do: how many reads and writes a
# reply takes, how often the client finds nothing ready and sleeps. They
# move little between runs, so two builds, or kvik and redis-server, can be
# compared where throughput cannot.
#
#   bench/syscalls.sh                                    # release build and redis-server
#   bench/syscalls.sh old/kvik-server target/release/kvik-server
#   TEST=ping_mbulk PIPELINE=16 REDIS=0 bench/syscalls.sh
#
# Environment (defaults in brackets):
#   TEST      [get]      the -t test
#   REQUESTS  [300000]   -n
#   CLIENTS   [50]       -c
#   PIPELINE  [1]        -P
#   SIZE      [3]        -d
#   KEYSPACE  [100000]   -r, and how many keys are set first
#   ROUNDS    [2]        passes over the servers, alternating
#   REDIS     [1]        0: kvik builds only
#   PIN       [1]        1: the client on the first usable CPU and every server
#                        on the second (bench/common.sh); 0: unpinned
#
# Each kvik-server runs with `--threads 1`. Needs perf (Debian package
# `linux-perf`) allowed to read tracepoints (root, or
# kernel.perf_event_paranoid at -1), and redis-benchmark.
set -euo pipefail
cd "$(dirname "$0")/.."

TEST="${TEST:-get}"
REQUESTS="${REQUESTS:-300000}"
CLIENTS="${CLIENTS:-50}"
PIPELINE="${PIPELINE:-1}"
SIZE="${SIZE:-3}"
KEYSPACE="${KEYSPACE:-100000}"
ROUNDS="${ROUNDS:-2}"
REDIS="${REDIS:-1}"
for v in REQUESTS CLIENTS PIPELINE SIZE KEYSPACE ROUNDS; do
    [[ "${!v}" =~ ^[1-9][0-9]*$ ]] || { echo "$v must be a whole number ≥ 1, got '${!v}'" >&2; exit 2; }
done

command -v perf >/dev/null || { echo "perf is missing: apt-get install linux-perf" >&2; exit 2; }
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is missing: make redis-server" >&2; exit 2; }
perf stat -e syscalls:sys_enter_read -o /dev/null true 2>/dev/null ||
    { echo "perf cannot read the syscall tracepoints here (run as root)" >&2; exit 2; }

# common.sh: client_pin and server_pin (PIN=1 here by default), $work, the
# pid and port of each server by name, and stopping them all on exit.
PIN="${PIN:-1}"
# shellcheck source=bench/common.sh
source bench/common.sh

target_dir="${CARGO_TARGET_DIR:-target}"
if [ "$#" -eq 0 ]; then
    cargo build --quiet --release -p kvik-server
    set -- "$target_dir/release/kvik-server"
fi
servers=("$@")
[ "$REDIS" = 1 ] && servers+=(redis-server)

# Reads and writes of every flavour, the loop's waits, and the switches
# away from the CPU (a sleep, mostly, for a process pinned to its own).
CLIENT_EVENTS=syscalls:sys_enter_epoll_wait,syscalls:sys_enter_read,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write,syscalls:sys_enter_sendto,sched:sched_switch
SERVER_EVENTS=$CLIENT_EVENTS,syscalls:sys_enter_readv,syscalls:sys_enter_writev,syscalls:sys_enter_sendmsg

# start NAME BINARY: BINARY (a kvik-server build, or redis-server) on a free
# port of 127.0.0.1 as server NAME (pid[NAME], port[NAME]), then KEYSPACE keys set.
start() {
    local name=$1 binary=$2 p
    p=$(python3 "$HELPER" freeport)
    if [ "$binary" = redis-server ]; then
        "${server_pin[@]}" redis-server --bind 127.0.0.1 --port "$p" --save '' --appendonly no \
            --daemonize no --dir "$work" >>"$work/$name.log" 2>&1 &
    else
        "${server_pin[@]}" "$binary" --bind 127.0.0.1 --port "$p" --threads 1 --save '' --appendonly no \
            >>"$work/$name.log" 2>&1 &
    fi
    pid[$name]=$!
    port[$name]=$p
    await_server "$name"
    redis-benchmark -p "$p" -t set -n "$KEYSPACE" -r "$KEYSPACE" -d "$SIZE" -P 100 -q >/dev/null
}

# per_request FILE NAME...: the summed counts of the perf stat output FILE
# for the events NAME (without their `syscalls:sys_enter_` prefix), per request.
per_request() {
    local file=$1
    shift
    awk -F, -v n="$REQUESTS" -v names="$*" '
        BEGIN { split(names, want, " "); for (i in want) pick[want[i]] = 1 }
        /^#/ || NF < 3 { next }
        { name = $3; sub(/^syscalls:sys_enter_/, "", name); sub(/^sched:/, "", name) }
        (name in pick) && $1 ~ /^[0-9]+$/ { sum += $1 }
        END { printf "%.3f", sum / n }' "$file"
}

for i in "${!servers[@]}"; do
    start "s$i" "${servers[$i]}"
done

echo "Workload: redis-benchmark -t $TEST -n $REQUESTS -c $CLIENTS -P $PIPELINE -d $SIZE -r $KEYSPACE; per request; $ROUNDS rounds"
echo
echo "| round | server | requests/s | client epoll_wait | client reads | client writes | client switches | server epoll_wait | server reads | server writes | server switches |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
    for i in "${!servers[@]}"; do
        perf stat -x, -e "$SERVER_EVENTS" -p "${pid[s$i]}" -o "$work/server.txt" &
        stat_pid=$!
        sleep 0.3
        perf stat -x, -e "$CLIENT_EVENTS" -o "$work/client.txt" \
            "${client_pin[@]}" redis-benchmark -p "${port[s$i]}" -t "$TEST" -n "$REQUESTS" -c "$CLIENTS" \
            -P "$PIPELINE" -d "$SIZE" -r "$KEYSPACE" --csv >"$work/bench.csv" 2>/dev/null
        kill -INT "$stat_pid"
        wait "$stat_pid" 2>/dev/null || true
        rps=$(tail -1 "$work/bench.csv" | cut -d, -f2 | tr -d '"')
        printf '| %s | %s | %.0f | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$round" "${servers[$i]}" "$rps" \
            "$(per_request "$work/client.txt" epoll_wait)" \
            "$(per_request "$work/client.txt" read recvfrom)" \
            "$(per_request "$work/client.txt" write sendto)" \
            "$(per_request "$work/client.txt" sched_switch)" \
            "$(per_request "$work/server.txt" epoll_wait)" \
            "$(per_request "$work/server.txt" read recvfrom readv)" \
            "$(per_request "$work/server.txt" write sendto writev sendmsg)" \
            "$(per_request "$work/server.txt" sched_switch)"
    done
done
