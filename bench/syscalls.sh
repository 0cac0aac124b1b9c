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
#
# Each kvik-server runs with `--threads 1`; with two CPUs or more every
# server runs on CPU 1 and the client on CPU 0. Needs perf (Debian package
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

target_dir="${CARGO_TARGET_DIR:-target}"
if [ "$#" -eq 0 ]; then
    cargo build --quiet --release -p kvik-server
    set -- "$target_dir/release/kvik-server"
fi
servers=("$@")
[ "$REDIS" = 1 ] && servers+=(redis-server)

if [ "$(nproc)" -ge 2 ]; then
    server_cpu=(taskset -c 1)
    client_cpu=(taskset -c 0)
else
    server_cpu=()
    client_cpu=()
fi

work=$(mktemp -d)
pids=()
cleanup() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# Reads and writes of every flavour, the loop's waits, and the switches
# away from the CPU (a sleep, mostly, for a process pinned to its own).
CLIENT_EVENTS=syscalls:sys_enter_epoll_wait,syscalls:sys_enter_read,syscalls:sys_enter_recvfrom,syscalls:sys_enter_write,syscalls:sys_enter_sendto,sched:sched_switch
SERVER_EVENTS=$CLIENT_EVENTS,syscalls:sys_enter_readv,syscalls:sys_enter_writev,syscalls:sys_enter_sendmsg

# start BINARY PORT: the server's pid, once it answers.
start() {
    local binary=$1 port=$2 pid
    if [ "$binary" = redis-server ]; then
        "${server_cpu[@]}" redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
            >"$work/server-$port.log" 2>&1 &
    else
        "${server_cpu[@]}" "$binary" --bind 127.0.0.1 --port "$port" --threads 1 --save '' --appendonly no \
            >"$work/server-$port.log" 2>&1 &
    fi
    pid=$!
    for _ in $(seq 100); do
        redis-cli -p "$port" ping >/dev/null 2>&1 && break
        sleep 0.1
    done
    redis-benchmark -p "$port" -t set -n "$KEYSPACE" -r "$KEYSPACE" -d "$SIZE" -P 100 -q >/dev/null
    echo "$pid"
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

ports=()
for binary in "${servers[@]}"; do
    port=$(python3 bench/server_report.py freeport)
    pids+=("$(start "$binary" "$port")")
    ports+=("$port")
done

echo "Workload: redis-benchmark -t $TEST -n $REQUESTS -c $CLIENTS -P $PIPELINE -d $SIZE -r $KEYSPACE; per request; $ROUNDS rounds"
echo
echo "| round | server | requests/s | client epoll_wait | client reads | client writes | client switches | server epoll_wait | server reads | server writes | server switches |"
echo "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for round in $(seq "$ROUNDS"); do
    for i in "${!servers[@]}"; do
        port=${ports[$i]}
        perf stat -x, -e "$SERVER_EVENTS" -p "${pids[$i]}" -o "$work/server.txt" &
        stat_pid=$!
        sleep 0.3
        perf stat -x, -e "$CLIENT_EVENTS" -o "$work/client.txt" \
            "${client_cpu[@]}" redis-benchmark -p "$port" -t "$TEST" -n "$REQUESTS" -c "$CLIENTS" \
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
for port in "${ports[@]}"; do
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
done
