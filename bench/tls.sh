#!/usr/bin/env bash
# TLS against redis-server, in the same run: GET and SET over TLS at
# -c 50 -P 1 and -P 16 (redis-benchmark --tls), and TLS handshakes per
# second (redis-benchmark -k 0: a new connection and handshake for every
# PING). Both servers get the same certificates (RSA 2048, made with
# openssl for the run) and Redis's default tls-auth-clients yes, so the
# clients present certificates too (bench/tls.py says how each figure is
# taken).
#
#   bench/tls.sh
#   QUICK=1 bench/tls.sh           # a few thousand requests: a check that it works
#   KVIK_SERVER_BIN=/path/to/kvik-server bench/tls.sh
#
# Writes bench/results/tls.md, or into OUT_DIR.
#
# Environment (defaults in brackets): SERVERS [kvik redis], REQUESTS
# [200000], HANDSHAKES [5000], REPEATS [3], THREADS [nproc], OUT_DIR
# [bench/results], KVIK_SERVER_BIN [].
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "${QUICK:-0}" = 1 ]; then
    export REQUESTS="${REQUESTS:-5000}" HANDSHAKES="${HANDSHAKES:-500}" REPEATS="${REPEATS:-1}"
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
command -v openssl >/dev/null || { echo "openssl is missing: make openssl" >&2; exit 2; }

servers_meta >"$work/meta"
mkdir -p "$OUT_DIR"
COMMAND="bench/tls.sh" python3 bench/tls.py "${KVIK_BIN:-true}" "$OUT_DIR/tls.md" "$work/meta" "$work"
