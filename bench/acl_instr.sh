#!/usr/bin/env bash
# Instructions per request of kvik-server (callgrind, one event loop,
# redis-benchmark -c 1 -P 100 SET then GET of key:__rand_int__), as the
# default user and as users with limits: `keys` (+@all ~key:* &*) and
# `cmds` (-@all +get +set +ping +config ~key:*). Each figure is a run of
# 1,000 + REQUESTS of each command less a run of 1,000, divided by the
# requests: the connections, logging in and redis-benchmark's own first
# commands cost the same in both runs and cancel out.
# redis-server is measured the same way after kvik when it is installed.
#
#   bench/acl_instr.sh [KVIK_BIN]       (default: target/release/kvik-server)
#
# Environment: REQUESTS [20000], PORT [7801].
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-target/release/kvik-server}"
n="${REQUESTS:-20000}"
port="${PORT:-7801}"
command -v valgrind >/dev/null || { echo "valgrind is missing" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

total() { # total SERVER REQUESTS USER: callgrind's instruction total for a run
    local server=$1 out="$work/cg.$2.$3" auth=() one_loop=(--threads 1)
    shift
    [ "$server" = kvik ] && server_bin=$bin || { server_bin=$(command -v redis-server); one_loop=(); }
    valgrind --tool=callgrind --callgrind-out-file="$out" "$server_bin" --port "$port" "${one_loop[@]}" --save '' \
        --user keys on nopass +@all '~key:*' '&*' \
        --user cmds on nopass -@all +get +set +ping +config '~key:*' >/dev/null 2>&1 &
    local pid=$!
    for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
    [ "$2" = default ] || auth=(--user "$2" -a x)
    redis-benchmark -p "$port" "${auth[@]}" -n "$1" -c 1 -P 100 -r 1000 SET key:__rand_int__ v >/dev/null 2>&1
    redis-benchmark -p "$port" "${auth[@]}" -n "$1" -c 1 -P 100 -r 1000 GET key:__rand_int__ >/dev/null 2>&1
    redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
    wait "$pid" || true
    grep -E '^(summary|totals)' "$out" | head -1 | awk '{print $2}'
}

servers=(kvik)
command -v redis-server >/dev/null && servers+=(redis)
for server in "${servers[@]}"; do
    for user in default keys cmds; do
        base=$(total "$server" 1000 "$user")
        run=$(total "$server" "$((n + 1000))" "$user")
        echo "$server $user: $(((run - base) / (2 * n))) instructions per request"
    done
done
