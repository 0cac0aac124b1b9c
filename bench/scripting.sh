#!/usr/bin/env bash
# Lua scripts against redis-server, in the same run: EVALSHA of small
# scripts (GET + INCR, a lock's acquire-or-renew) at -c 50 -P 1 and -P 16,
# plain INCR beside them, and scripts on random declared keys at -c 16
# -P 16 with kvik on --threads 1 and 2 (bench/scripting.py says how each
# figure is taken).
#
#   bench/scripting.sh
#   QUICK=1 bench/scripting.sh           # a few thousand requests: a check that it works
#   KVIK_SERVER_BIN=/path/to/kvik-server bench/scripting.sh
#
# Writes bench/results/scripting.md, or into OUT_DIR.
#
# Environment (defaults in brackets): SERVERS [kvik redis], REQUESTS
# [200000], REPEATS [3], THREADS [nproc], OUT_DIR [bench/results],
# KVIK_SERVER_BIN [].
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
    export REQUESTS="${REQUESTS:-5000}" REPEATS="${REPEATS:-1}"
fi
OUT_DIR="${OUT_DIR:-bench/results}"
export SERVERS="${SERVERS:-kvik redis}"

# shellcheck source=bench/common.sh
source bench/common.sh
export THREADS
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

KVIK_BIN=""
for name in $SERVERS; do
    case "$name" in
        kvik) release_kvik_bin ;;
        redis | valkey)
            command -v "$name-server" >/dev/null || { echo "$name-server is missing" >&2; exit 2; }
            ;;
        *) echo "unknown server '$name' in SERVERS (kvik, redis, valkey)" >&2; exit 2 ;;
    esac
done
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is missing: make redis-server" >&2; exit 2; }

servers_meta >"$work/meta"
mkdir -p "$OUT_DIR"
COMMAND="bench/scripting.sh" python3 bench/scripting.py "${KVIK_BIN:-true}" "$OUT_DIR/scripting.md" "$work/meta"
