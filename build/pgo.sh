#!/usr/bin/env bash
# The release kvik-server, built with profile-guided optimization (PGO):
# `make release`, `make run PGO=1` and the benchmark scripts build it here.
#
# An instrumented build of the server first serves a training workload and
# records which code ran and which way each branch went; the final build
# reads that profile to lay hot code out together, keep cold code out of the
# way and inline where calls are frequent. On this project's own benchmarks
# that is worth about a fifth more throughput on pipelined commands.
#
#   build/pgo.sh          # prints target/pgo/release/kvik-server
#   PGO=0 build/pgo.sh    # the plain release build: target/release/kvik-server
#
# The path of the binary is the last line on stdout; progress goes to stderr.
# A binary newer than every source file is reused as it is. TRAIN_REQUESTS
# [20000] is the number of requests per test and setting in the training.
#
# The training workload is kvik-benchmark's whole default test list (PING,
# SET, GET, INCR, list, set, hash and sorted-set commands, LRANGE, MSET) over
# RESP and over RESPB, one request at a time and pipelined, against a
# server with its default settings. The profile records how often code
# runs, not what the data was: keys and values are kvik-benchmark's
# random ones.
#
# Needs llvm-profdata of the LLVM major version rustc uses (`rustc -vV`),
# on PATH as llvm-profdata-N or under /usr/lib/llvm-N/bin; on Debian the
# package llvm-N is installed when it is missing. Without it, or when any
# step fails, the plain release build is made instead and the reason is
# printed: `make run PGO=1` always gets a server.
set -euo pipefail
cd "$(dirname "$0")/.."

target_dir="${CARGO_TARGET_DIR:-target}"
plain="$target_dir/release/kvik-server"
final="$target_dir/pgo/release/kvik-server"
profile_dir="$target_dir/pgo-profile"
TRAIN_REQUESTS="${TRAIN_REQUESTS:-20000}"

say() { echo "pgo: $*" >&2; }

plain_build() {
    say "$1; building without a profile"
    cargo build --release -q -p kvik-server >&2
    echo "$plain"
    exit 0
}

[ "${PGO:-1}" = 0 ] && plain_build "PGO=0"

if [ -x "$final" ] &&
    [ -z "$(find crates spec Cargo.toml Cargo.lock build -newer "$final" -not -path '*/target/*' -print -quit)" ]; then
    echo "$final"
    exit 0
fi

# llvm-profdata of rustc's LLVM major version: profiles of one version are
# not read by another.
llvm_major=$(rustc -vV | sed -n 's/^LLVM version: \([0-9]*\).*/\1/p')
[ -n "$llvm_major" ] || plain_build "rustc does not say which LLVM it uses"
find_profdata() {
    local p
    for p in "llvm-profdata-$llvm_major" "/usr/lib/llvm-$llvm_major/bin/llvm-profdata"; do
        command -v "$p" >/dev/null 2>&1 && { command -v "$p"; return 0; }
    done
    if command -v llvm-profdata >/dev/null 2>&1 &&
        llvm-profdata merge --version 2>/dev/null | grep -q "LLVM version $llvm_major\."; then
        command -v llvm-profdata
        return 0
    fi
    return 1
}
if ! profdata=$(find_profdata); then
    if command -v apt-get >/dev/null 2>&1; then
        say "installing llvm-$llvm_major (Debian package) for llvm-profdata"
        sudo=""
        [ "$(id -u)" = 0 ] || sudo=sudo
        { $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "llvm-$llvm_major" >/dev/null 2>&1 ||
            { $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null 2>&1 &&
                $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "llvm-$llvm_major" >/dev/null 2>&1; }; } || true
    fi
    profdata=$(find_profdata) || plain_build "no llvm-profdata for LLVM $llvm_major"
fi

say "building the load generator and an instrumented server (about 4 minutes)"
cargo build --release -q -p kvik-bench -p kvik-cli >&2 || plain_build "the load generator did not build"
rm -rf "$profile_dir"
mkdir -p "$profile_dir"
profile_abs=$(cd "$profile_dir" && pwd)
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-generate=$profile_abs" \
    cargo build --release -q -p kvik-server --target-dir "$target_dir/pgo-gen" >&2 ||
    plain_build "the instrumented server did not build"

# Training: the instrumented server on a free loopback port, stopped with
# SHUTDOWN so that it writes its profile as it exits.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$target_dir/pgo-gen/release/kvik-server" --bind 127.0.0.1 --port "$port" --save '' --appendonly no >/dev/null 2>&1 &
server=$!
stop() { kill "$server" 2>/dev/null || true; }
trap stop EXIT
cli="$target_dir/release/kvik-cli"
for _ in $(seq 100); do
    "$cli" -p "$port" ping >/dev/null 2>&1 && break
    sleep 0.1
done
say "training on 127.0.0.1:$port"
bench="$target_dir/release/kvik-benchmark"
train() { "$bench" -h 127.0.0.1 -p "$port" -r 100000 -q "$@" >/dev/null; }
for protocol in "" --respb; do
    for flags in "-c 50 -P 1" "-c 50 -P 32"; do
        # shellcheck disable=SC2086 # the flags are words on purpose
        train -n "$TRAIN_REQUESTS" $flags $protocol || plain_build "the training run failed"
    done
    # shellcheck disable=SC2086
    train -n $((TRAIN_REQUESTS * 10)) -c 1 -P 1000 -t ping_mbulk,set,get $protocol || plain_build "the training run failed"
done
"$cli" -p "$port" shutdown nosave >/dev/null 2>&1 || true
for _ in $(seq 100); do
    kill -0 "$server" 2>/dev/null || break
    sleep 0.1
done
trap - EXIT
stop
ls "$profile_dir"/*.profraw >/dev/null 2>&1 || plain_build "the instrumented server wrote no profile"
"$profdata" merge -o "$profile_dir/kvik.profdata" "$profile_dir"/*.profraw || plain_build "the profile did not merge"

say "building the server with the profile (about 3 minutes)"
RUSTFLAGS="${RUSTFLAGS:-} -Cprofile-use=$profile_abs/kvik.profdata -Cllvm-args=-pgo-warn-missing-function=false" \
    cargo build --release -q -p kvik-server --target-dir "$target_dir/pgo" >&2 ||
    plain_build "the build with the profile failed"
echo "$final"
