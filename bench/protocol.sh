#!/usr/bin/env bash
# Protocol codec benchmarks, repeated: runs the criterion benches REPEATS
# times (default 3), keeps each run's results, and prints the tables of
# medians (bench/protocol_table.py) followed by the instruction counts
# (bench/parse_cost.sh, when valgrind is installed).
#
#   bench/protocol.sh 3 > /tmp/protocol-tables.md
set -euo pipefail
cd "$(dirname "$0")/.."
repeats="${1:-3}"
target="${CARGO_TARGET_DIR:-target}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
dirs=()
for i in $(seq 1 "$repeats"); do
    rm -rf "$target/criterion"
    cargo bench -q -p kvik-protocol --bench protocol -- --measurement-time 3 --warm-up-time 1 --noplot \
        > "$work/log-$i" 2>&1
    cp -r "$target/criterion" "$work/criterion-$i"
    dirs+=("$work/criterion-$i")
done
python3 bench/protocol_table.py "$work/log-1" "${dirs[@]}"
if command -v valgrind >/dev/null; then
    echo
    bench/parse_cost.sh
fi
