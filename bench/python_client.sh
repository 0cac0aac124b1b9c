#!/usr/bin/env bash
# Python clients against kvik-server and redis-server, in the same run:
# redis-py with its pure-Python parser, redis-py with hiredis, and kvik's
# Python client (python/), each over a Unix socket and over TCP, in the
# sections of the usual redis-py / hiredis / redis-cli comparison (naive
# LPUSH, pipelined LPUSH, RPOP against LRANGE + LTRIM, bulk load against
# redis-cli --pipe, building commands without a server). Reports ops/s,
# the kvik ratios against the issue's goals, and each cell's client and
# server CPU time (bench/python_client.py says how each figure is taken).
#
# The pure-Python redis-py and kvik run in PYTHON (the project's test venv,
# where `pip install ./python` put kvik); redis-py + hiredis runs in a venv
# made here under the work directory, with the same redis-py version and
# hiredis from pip. Where pip cannot install hiredis, that client is
# reported as not available and the rest still runs.
#
#   bench/python_client.sh                          # 100,000 operations per cell, 3 rounds
#   SECTIONS="naive pipeline" bench/python_client.sh
#   TRANSPORTS=unix SERVERS=kvik bench/python_client.sh
#   QUICK=1 bench/python_client.sh                  # 5,000 operations, one round: a check
#                                                   # that it works, written to ${TMPDIR:-/tmp}
#   KVIK_SERVER_BIN=/path/to/kvik-server bench/python_client.sh
#
# Writes bench/results/python_client.md, or into OUT_DIR (QUICK=1 without
# OUT_DIR: ${TMPDIR:-/tmp}, so that a smoke run leaves the results alone).
#
# Environment (defaults in brackets):
#   REPEATS         [3]        rounds (medians; QUICK: 1)
#   OPS             [100000]   operations per cell (QUICK: 5000)
#   VALUE_BYTES     [129]
#   SERVERS         [kvik redis]
#   TRANSPORTS      [unix tcp]
#   CLIENTS         [redis-py redis-py+hiredis kvik]
#   SECTIONS        [naive pipeline pop bulk encode]
#   BATCH           [1000]     commands per pipeline (sections 2 and 3)
#   BULK_BATCH      [10000]    commands per redis-py pipeline in the bulk load
#   BULK_WINDOW     [1000]     kvik bulk_load's window
#   THREADS         [2]        kvik-server --threads
#   PYTHON          [.venv/bin/python]  the interpreter with redis-py and kvik
#   HIREDIS_PYTHON  []         an interpreter with redis-py and hiredis to use instead of
#                              making the venv
#   BENCH_TIMEOUT   [900]      seconds one cell may take
#   QUICK           [0]
#   KVIK_SERVER_BIN []         use this kvik-server instead of the release build
#   OUT_DIR         [bench/results]
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK="${QUICK:-0}"
if [ "$QUICK" = 1 ]; then
    OPS="${OPS:-5000}"
    REPEATS="${REPEATS:-1}"
    OUT_DIR="${OUT_DIR:-${TMPDIR:-/tmp}}"
fi
OPS="${OPS:-100000}"
REPEATS="${REPEATS:-3}"
VALUE_BYTES="${VALUE_BYTES:-129}"
SERVERS="${SERVERS:-kvik redis}"
TRANSPORTS="${TRANSPORTS:-unix tcp}"
CLIENTS="${CLIENTS:-redis-py redis-py+hiredis kvik}"
SECTIONS="${SECTIONS:-naive pipeline pop bulk encode}"
BATCH="${BATCH:-1000}"
BULK_BATCH="${BULK_BATCH:-10000}"
BULK_WINDOW="${BULK_WINDOW:-1000}"
THREADS="${THREADS:-2}"
PYTHON="${PYTHON:-.venv/bin/python}"
OUT_DIR="${OUT_DIR:-bench/results}"

# shellcheck source=bench/common.sh
source bench/common.sh
check_whole OPS REPEATS VALUE_BYTES BATCH BULK_BATCH BULK_WINDOW THREADS BENCH_TIMEOUT
if [ "$OPS" -lt 1 ] || [ "$REPEATS" -lt 1 ]; then
    echo "OPS and REPEATS must be at least 1" >&2
    exit 2
fi
export QUICK OPS REPEATS VALUE_BYTES SERVERS TRANSPORTS CLIENTS SECTIONS BATCH BULK_BATCH BULK_WINDOW \
    THREADS BENCH_TIMEOUT

[ -x "$PYTHON" ] || {
    echo "no Python at $PYTHON: make the test venv (python3 -m venv .venv; .venv/bin/pip install redis ./python)" \
        "or set PYTHON" >&2
    exit 2
}
PYTHON=$(cd "$(dirname "$PYTHON")" && pwd)/$(basename "$PYTHON")
"$PYTHON" -c 'import redis' 2>/dev/null || { echo "$PYTHON has no redis-py (pip install redis)" >&2; exit 2; }
export PYTHON

# Only the sections that talk to a server need one.
needs_server=0
for s in $SECTIONS; do
    [ "$s" = encode ] || needs_server=1
done
KVIK_BIN=""
if [ "$needs_server" = 1 ]; then
    if [[ " $SERVERS " == *" redis "* ]]; then
        command -v redis-server >/dev/null || { echo "redis-server is missing (or leave redis out of SERVERS)" >&2; exit 2; }
    fi
    if [[ " $SERVERS " == *" kvik "* ]]; then
        release_kvik_bin
    fi
fi

# redis-py + hiredis: the same redis-py as PYTHON's, with hiredis, in a venv of its own.
HIREDIS_MISSING=""
if [[ " $CLIENTS " == *" redis-py+hiredis "* ]] && [ -z "${HIREDIS_PYTHON:-}" ]; then
    redis_py=$("$PYTHON" -c 'import redis; print(redis.__version__)')
    echo "making a venv with redis==$redis_py and hiredis (pip)" >&2
    if "$PYTHON" -m venv "$work/venv-hiredis" >"$work/venv-hiredis.log" 2>&1 &&
        timeout 600 "$work/venv-hiredis/bin/pip" install -q --disable-pip-version-check \
            "redis==$redis_py" hiredis >>"$work/venv-hiredis.log" 2>&1; then
        HIREDIS_PYTHON="$work/venv-hiredis/bin/python"
    else
        HIREDIS_MISSING="pip could not install redis==$redis_py and hiredis: $(tail -1 "$work/venv-hiredis.log")"
        echo "redis-py + hiredis not available: $HIREDIS_MISSING" >&2
        HIREDIS_PYTHON=""
    fi
fi
export HIREDIS_PYTHON="${HIREDIS_PYTHON:-}" HIREDIS_MISSING

{ servers_meta; } >"$work/meta"
mkdir -p "$OUT_DIR"
quick=""
[ "$QUICK" = 1 ] && quick="QUICK=1 "
export COMMAND="${quick}OPS=$OPS REPEATS=$REPEATS VALUE_BYTES=$VALUE_BYTES SERVERS=\"$SERVERS\" TRANSPORTS=\"$TRANSPORTS\" CLIENTS=\"$CLIENTS\" SECTIONS=\"$SECTIONS\" bench/python_client.sh"
rc=0
python3 bench/python_client.py "$KVIK_BIN" "$OUT_DIR/python_client.md" "$work/meta" || rc=$?
echo "wrote $OUT_DIR/python_client.md" >&2
exit "$rc"
