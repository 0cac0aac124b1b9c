#!/usr/bin/env bash
# Instructions per command for RESP parsing and RESPB decoding, counted with
# callgrind (deterministic: the same on a busy machine as on an idle one).
#
#   bench/parse_cost.sh            # prints a Markdown table
#
# Needs valgrind (Debian package `valgrind`).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v valgrind >/dev/null || { echo "valgrind is missing: apt-get install valgrind" >&2; exit 2; }
reps=20
cargo build --quiet --release -p kvik-protocol --example parse_cost
bin="${CARGO_TARGET_DIR:-target}/release/examples/parse_cost"
count() {
    valgrind --tool=callgrind --callgrind-out-file=/dev/null --toggle-collect='parse_cost::run' \
        "$bin" "$1" "$2" "$reps" 2>&1 | sed -n 's/.*Collected : \([0-9]*\).*/\1/p'
}
echo "| workload | RESP instr/cmd | RESPB instr/cmd | redis-protocol instr/cmd | RESP/RESPB | peer/RESP |"
echo "|---|---:|---:|---:|---:|---:|"
for w in get set50 set1k mixed; do
    r=$(count "$w" resp)
    b=$(count "$w" respb)
    p=$(count "$w" peer)
    awk -v w="$w" -v r="$r" -v b="$b" -v p="$p" -v n="$((reps * 1000))" \
        'BEGIN { printf "| %s | %.0f | %.0f | %.0f | %.2f× | %.2f× |\n", w, r / n, b / n, p / n, r / b, p / r }'
done
