# Shared by bench/respb.sh, bench/mux.sh, bench/server.sh and bench/suite.sh (sourced, not run): binaries,
# servers on free loopback ports, bounded runs, machine metadata.
#
# Environment read here (defaults in brackets):
#   KVIK_SERVER_BIN, KVIK_BENCHMARK_BIN  use these binaries instead of building
#                        release ones (the smoke test passes its debug builds)
#   THREADS        [nproc]  kvik-server --threads
#   BENCH_THREADS  []       --threads for kvik-benchmark and redis-benchmark (both
#                           default to one thread; the same value goes to both)
#   BENCH_TIMEOUT  [900]    seconds one benchmark invocation may take
#   PIN            [0]      1: the load generator runs on one CPU and every server
#                           with a single worker thread (kvik-t1, redis, valkey) on
#                           another (taskset), so that neither is moved onto the
#                           other's core mid-run; servers with more threads may use
#                           every CPU. Needs two CPUs or more, otherwise ignored.

THREADS="${THREADS:-$(nproc)}"
BENCH_THREADS="${BENCH_THREADS:-}"
if [ -n "$BENCH_THREADS" ]; then
    [[ "$BENCH_THREADS" =~ ^[1-9][0-9]*$ ]] || { echo "BENCH_THREADS must be a whole number ≥ 1" >&2; exit 2; }
    bench_threads=(--threads "$BENCH_THREADS")
else
    bench_threads=()
fi
BENCH_TIMEOUT="${BENCH_TIMEOUT:-900}"
PIN="${PIN:-0}"
[[ "$PIN" =~ ^[01]$ ]] || { echo "PIN must be 0 or 1" >&2; exit 2; }
HELPER=bench/server_report.py
REPORT=bench/respb_report.py

# check_whole NAME...: each variable must be a whole number.
check_whole() {
    local v
    for v in "$@"; do
        [[ "${!v}" =~ ^[0-9]+$ ]] || { echo "$v must be a whole number, got '${!v}'" >&2; exit 2; }
    done
}

command -v python3 >/dev/null 2>&1 || { echo "python3 is required" >&2; exit 1; }
command -v timeout >/dev/null 2>&1 || { echo "timeout (coreutils) is required" >&2; exit 1; }

# need_redis: redis-server and redis-benchmark, installed from Debian when run as root.
need_redis() {
    local missing=()
    command -v redis-server >/dev/null 2>&1 || missing+=(redis-server)
    command -v redis-benchmark >/dev/null 2>&1 || missing+=(redis-tools)
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing ${missing[*]} (Debian packages)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq
        apt-get install -y -qq "${missing[@]}" >/dev/null
        systemctl disable --now redis-server >/dev/null 2>&1 ||
            service redis-server stop >/dev/null 2>&1 || true
    else
        echo "missing ${missing[*]}: install Debian's redis-server and redis-tools packages," \
            "or run with REDIS=0 to skip the redis-server reference" >&2
        exit 1
    fi
}

# need_valkey: valkey-server, installed from Debian when run as root.
need_valkey() {
    command -v valkey-server >/dev/null 2>&1 && return 0
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing valkey-server (Debian package)" >&2
        export DEBIAN_FRONTEND=noninteractive
        # bookworm has no valkey: its backports suite carries 8.0.
        if ! apt-cache policy valkey-server 2>/dev/null | grep -q 'Candidate: [0-9]' &&
            grep -qs bookworm /etc/os-release &&
            ! grep -rqs bookworm-backports /etc/apt/sources.list /etc/apt/sources.list.d; then
            echo 'deb http://deb.debian.org/debian bookworm-backports main' \
                >/etc/apt/sources.list.d/bookworm-backports.list
        fi
        apt-get update -qq
        apt-get install -y -qq valkey-server >/dev/null
        systemctl disable --now valkey-server >/dev/null 2>&1 ||
            service valkey-server stop >/dev/null 2>&1 || true
    else
        echo "missing valkey-server: install Debian's valkey-server package," \
            "or leave valkey out of SERVERS" >&2
        exit 1
    fi
}

# children_ms NAME: set the variable NAME to the user+system CPU milliseconds
# of every child this shell has waited for so far (the second line of
# `times`). It runs in this shell and forks nothing: a $(...) subshell has
# children of its own, and would itself count as one.
children_ms() {
    local -n into=$1
    local lines part ms=0
    times >"$work/times"
    mapfile -t lines <"$work/times"
    for part in ${lines[1]:-}; do
        [[ "$part" =~ ^([0-9]+)m([0-9]+)\.([0-9]+)s$ ]] || return 1
        ms=$((ms + BASH_REMATCH[1] * 60000 + 10#${BASH_REMATCH[2]} * 1000 + 10#${BASH_REMATCH[3]:0:3}))
    done
    into=$ms
}

# now_ms NAME: set the variable NAME to the wall clock in milliseconds.
now_ms() {
    local -n into=$1
    local us=${EPOCHREALTIME/[.,]/}
    into=$((us / 1000))
}

# user_system_ticks PID: utime and stime of PID in clock ticks, in that order
# (fields 14 and 15 of /proc/PID/stat; the command name may hold spaces, so
# split after its ')').
user_system_ticks() {
    local stat fields
    stat=$(<"/proc/$1/stat") || return 1
    read -ra fields <<<"${stat##*) }"
    echo "${fields[11]} ${fields[12]}"
}

# cpu_ticks PID: utime+stime of PID in clock ticks.
cpu_ticks() {
    local ticks
    ticks=$(user_system_ticks "$1") || return 1
    echo $((${ticks% *} + ${ticks#* }))
}

# find_binaries: sets KVIK_BIN, BENCH_BIN and PROFILE, building release binaries
# unless both are given: kvik-server as `make release` and `make run PGO=1`
# build it (build/pgo.sh, profile-guided unless PGO=0 or no llvm-profdata can
# be had).
find_binaries() {
    if [ -n "${KVIK_SERVER_BIN:-}" ] && [ -n "${KVIK_BENCHMARK_BIN:-}" ]; then
        KVIK_BIN=$KVIK_SERVER_BIN
        BENCH_BIN=$KVIK_BENCHMARK_BIN
    else
        echo "building kvik-server (build/pgo.sh) and kvik-benchmark (release)" >&2
        KVIK_BIN=$(build/pgo.sh)
        cargo build --release -q -p kvik-bench
        BENCH_BIN="${CARGO_TARGET_DIR:-target}/release/kvik-benchmark"
    fi
    # The build, told by where cargo (or build/pgo.sh) put the binary.
    case "$KVIK_BIN" in
        */debug/*) PROFILE=debug ;;
        */pgo/release/*) PROFILE="release, profile-guided" ;;
        */release/*) PROFILE=release ;;
        *) PROFILE="given (KVIK_SERVER_BIN)" ;;
    esac
    [ -x "$KVIK_BIN" ] || { echo "no kvik-server at $KVIK_BIN" >&2; exit 1; }
    [ -x "$BENCH_BIN" ] || { echo "no kvik-benchmark at $BENCH_BIN" >&2; exit 1; }
}

# raise_fd_limit N: at least N open files for this shell and its children.
raise_fd_limit() {
    local want=$1 soft hard
    soft=$(ulimit -Sn)
    hard=$(ulimit -Hn)
    [ "$soft" = unlimited ] && return 0
    [ "$soft" -ge "$want" ] && return 0
    if [ "$hard" = unlimited ] || [ "$hard" -ge "$want" ]; then
        ulimit -Sn "$want"
    else
        echo "need $want open files, the hard limit is $hard (ulimit -Hn)" >&2
        exit 1
    fi
}

# The CPUs this script may use, lowest first; with PIN=1 and two or more of
# them, client_pin is the prefix that runs a load generator on the first and
# server_pin the one for single-threaded servers on the second.
client_pin=()
server_pin=()
if [ "$PIN" = 1 ]; then
    read -ra usable_cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0)))')
    if [ "${#usable_cpus[@]}" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
        client_pin=(taskset -c "${usable_cpus[0]}")
        server_pin=(taskset -c "${usable_cpus[1]}")
    else
        echo "PIN=1 needs two CPUs and taskset: running unpinned" >&2
        PIN=0
    fi
fi

work=$(mktemp -d)
declare -A pid=() port=()

# stop_server NAME: SIGTERM, a bounded wait for a clean exit, then SIGKILL.
stop_server() {
    local name=$1 p=${pid[$1]:-}
    [ -n "$p" ] || return 0
    kill "$p" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "$p" 2>/dev/null || break
        sleep 0.1
    done
    kill -9 "$p" 2>/dev/null || true
    wait "$p" 2>/dev/null || true
    unset "pid[$name]"
}

# run_bounded OUT ERR CMD...: CMD under `timeout`, in the background so that a
# signal to the script runs the traps at once.
child_pid=""
run_bounded() {
    local out=$1 err=$2 rc=0
    shift 2
    timeout "$BENCH_TIMEOUT" "$@" >"$out" 2>"$err" &
    child_pid=$!
    wait "$child_pid" || rc=$?
    child_pid=""
    return "$rc"
}

cleanup() {
    if [ -n "$child_pid" ]; then
        kill "$child_pid" 2>/dev/null || true
        wait "$child_pid" 2>/dev/null || true
    fi
    local name
    for name in "${!pid[@]}"; do
        stop_server "$name"
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# start_server NAME: a server on a free port of 127.0.0.1; sets pid[NAME], port[NAME].
# NAME is kvik (--threads $THREADS), kvik-tN (--threads N), redis, valkey or
# valkey-ioN (--io-threads N); all but kvik are started with persistence off.
start_server() {
    local name=$1 p pin=()
    p=$(python3 "$HELPER" freeport)
    # Servers with one worker thread get server_pin; the others every CPU.
    case "$name" in kvik-t1 | redis | valkey) pin=("${server_pin[@]}") ;; esac
    case "$name" in
        kvik)
            "$KVIK_BIN" --bind 127.0.0.1 --port "$p" --threads "$THREADS" --save '' --appendonly no >>"$work/kvik.log" 2>&1 &
            ;;
        kvik-t[1-9] | kvik-t[1-9][0-9])
            "${pin[@]}" "$KVIK_BIN" --bind 127.0.0.1 --port "$p" --threads "${name#kvik-t}" \
                --save '' --appendonly no >>"$work/$name.log" 2>&1 &
            ;;
        redis)
            "${pin[@]}" redis-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
                --daemonize no --dir "$work" >>"$work/redis.log" 2>&1 &
            ;;
        valkey | valkey-io[1-9] | valkey-io[1-9][0-9])
            local io=()
            [ "$name" = valkey ] || io=(--io-threads "${name#valkey-io}")
            "${pin[@]}" valkey-server --port "$p" --bind 127.0.0.1 --save '' --appendonly no \
                --daemonize no --dir "$work" "${io[@]}" >>"$work/$name.log" 2>&1 &
            ;;
        *)
            echo "unknown server '$name'" >&2
            exit 2
            ;;
    esac
    pid[$name]=$!
    port[$name]=$p
    await_server "$name"
}

# await_server NAME: wait for server NAME (started with its output in
# $work/NAME.log) to answer PING; otherwise show its log and exit.
await_server() {
    local name=$1
    if ! python3 "$HELPER" wait "${port[$name]}" 20; then
        echo "$name did not answer PING on port ${port[$name]}; its log:" >&2
        tail -20 "$work/$name.log" >&2 || true
        exit 1
    fi
}

# measure_memory HELPER SERVER SET: bytes per key of SERVER for key set SET
# (a value size, or a data set name the helper knows): the server started
# fresh, `HELPER memory SERVER PID PORT $MEM_KEYS SET $work/memory.csv`
# within the run bound, then stopped; a failed run is added to `failures`.
measure_memory() {
    local helper=$1 name=$2 set=$3
    echo "bytes per key: $name, $MEM_KEYS keys, $set" >&2
    start_server "$name"
    if ! run_bounded /dev/null "$work/memory-$name-$set.err" python3 "$helper" memory \
        "$name" "${pid[$name]}" "${port[$name]}" "$MEM_KEYS" "$set" "$work/memory.csv"; then
        failures+=("bytes per key: $name $set")
        echo "  failed: $(tail -3 "$work/memory-$name-$set.err" | tr '\n' ' ')" >&2
    fi
    stop_server "$name"
}

# servers_meta: machine_meta (without kvik's line when $KVIK_BIN is
# empty: kvik is not among the servers), then the versions of the
# redis-server and valkey-server installed, on stdout.
servers_meta() {
    if [ -n "${KVIK_BIN:-}" ]; then
        machine_meta
    else
        KVIK_BIN=true machine_meta | grep -v '^kvik_version='
    fi
    local name
    for name in redis valkey; do
        if command -v "$name-server" >/dev/null; then
            echo "${name}_version=$("$name-server" --version | head -1)"
        fi
    done
}

# machine_meta: the lines every report starts from (machine, load, the
# kvik-server at $KVIK_BIN and the commit), on stdout.
machine_meta() {
    local cpu memtotal
    cpu=$(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)
    memtotal=$(awk '/^MemTotal:/ {printf "%.0f GiB RAM", $2/1048576}' /proc/meminfo)
    echo "date=$(date -u '+%Y-%m-%d %H:%M UTC')"
    echo "cpu=${cpu:-unknown}"
    echo "cores=$(nproc)"
    echo "memtotal=$memtotal"
    echo "loadavg=$(cut -d' ' -f1-3 /proc/loadavg)"
    echo "kvik_version=$("$KVIK_BIN" --version 2>&1 | head -1) ($(git describe --always --dirty 2>/dev/null || echo '?'))"
}

# write_meta COMMAND_LINE: machine and version lines into $work/meta.
write_meta() {
    {
        machine_meta
        echo "kvik_bench_version=$("$BENCH_BIN" --version 2>&1 | head -1)"
        echo "profile=$PROFILE"
        echo "threads=$THREADS"
        echo "bench_threads=${BENCH_THREADS:-1 (default)}"
        echo "pin=$PIN"
        echo "client_cpu=${client_pin[2]:-}"
        echo "server_cpu=${server_pin[2]:-}"
        echo "command=$1"
        echo "label=${LABEL:-}"
    } >"$work/meta"
}

# outcome_meta: the run's failures and notes (arrays `failures`, `notes`)
# appended to $work/meta.
outcome_meta() {
    {
        echo "failures=${failures[*]:-}"
        echo "notes=$(IFS='|'; echo "${notes[*]:-}")"
    } >>"$work/meta"
}

# finish_meta: failures and notes (arrays `failures`, `notes`) into $work/meta.
finish_meta() {
    if [ "$((THREADS + ${BENCH_THREADS:-1}))" -gt "$(nproc)" ]; then
        notes+=("the benchmark client runs on the same $(nproc) cores as the server under test (kvik with $THREADS threads), so client and server compete for CPU.")
    fi
    if [ "${PROFILE%%,*}" != release ]; then
        notes+=("kvik binaries are not release builds ($PROFILE): the figures only show that the script works.")
    fi
    outcome_meta
}

# KVIK_BIN: $KVIK_SERVER_BIN when set, else a plain release build of
# kvik-server made now (the scripts that measure one server binary, not
# the profile-guided suite).
release_kvik_bin() {
    if [ -n "${KVIK_SERVER_BIN:-}" ]; then
        KVIK_BIN=$KVIK_SERVER_BIN
    else
        echo "building kvik-server (release)" >&2
        cargo build --release -q -p kvik-server
        KVIK_BIN="${CARGO_TARGET_DIR:-target}/release/kvik-server"
    fi
    [ -x "$KVIK_BIN" ] || { echo "no kvik-server at $KVIK_BIN" >&2; exit 1; }
}
