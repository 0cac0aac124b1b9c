#!/usr/bin/env bash
# Crash loop: writers under load, the server killed with SIGKILL at random
# moments and restarted on its append-only file; every acknowledged write
# must survive (bench/crash_loop.py says what is written and checked).
# Runs kvik-server with `appendfsync always`, then `everysec`, CYCLES each.
#
#   bench/crash_loop.sh                  # 100 cycles per policy
#   QUICK=1 bench/crash_loop.sh          # 3 cycles: a check that it works
#   KVIK_SERVER_BIN=/path/to/kvik-server bench/crash_loop.sh
#
# Writes bench/results/crash_loop.md, or into OUT_DIR. Exits with status 1
# when an acknowledged write was lost.
#
# Environment (defaults in brackets): CYCLES [100], CLIENTS [8],
# POLICIES [always everysec], MIN_RUN_S [0.2], MAX_RUN_S [1.0],
# THREADS [2], OUT_DIR [bench/results], KVIK_SERVER_BIN [].
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
    export CYCLES="${CYCLES:-3}"
fi
export CYCLES="${CYCLES:-100}"
OUT_DIR="${OUT_DIR:-bench/results}"
POLICIES="${POLICIES:-always everysec}"

# shellcheck source=bench/common.sh
source bench/common.sh
release_kvik_bin
export THREADS
mkdir -p "$OUT_DIR"
out="$OUT_DIR/crash_loop.md"
status=0
: > "$out"
for policy in $POLICIES; do
    part=$(mktemp)
    FSYNC=$policy SERVER=kvik COMMAND="CYCLES=$CYCLES bench/crash_loop.sh" \
        python3 bench/crash_loop.py "$KVIK_BIN" "$part" || status=1
    cat "$part" >> "$out"
    echo >> "$out"
    rm -f "$part"
done
echo "wrote $out"
exit $status
