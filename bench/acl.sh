#!/usr/bin/env bash
# What an ACL user with limits costs, against redis-server in the same
# run: GET and SET at -c 50 -P 1 and -P 16 as the default user and as a
# user whose commands and keys are checked (bench/acl.py says how each
# figure is taken); bench/acl_instr.sh counts instructions per request.
#
#   bench/acl.sh
#   QUICK=1 bench/acl.sh                  # a few thousand requests: a check that it works
#   KVIK_SERVER_BIN=/path/to/kvik-server bench/acl.sh
#
# Writes bench/results/acl.md, or into OUT_DIR. Environment (defaults in
# brackets): SERVERS [kvik redis], REQUESTS [200000], REPEATS [3], THREADS
# [nproc], OUT_DIR [bench/results], KVIK_SERVER_BIN [].
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
        redis) command -v redis-server >/dev/null || { echo "redis-server is missing" >&2; exit 2; } ;;
        *) echo "unknown server '$name' in SERVERS (kvik, redis)" >&2; exit 2 ;;
    esac
done
command -v redis-benchmark >/dev/null || { echo "redis-benchmark is missing: make redis-server" >&2; exit 2; }

servers_meta >"$work/meta"
mkdir -p "$OUT_DIR"
COMMAND="bench/acl.sh" python3 bench/acl.py "${KVIK_BIN:-true}" "$OUT_DIR/acl.md" "$work/meta"
