#!/usr/bin/env bash
# Pipelined GET over a keyspace larger than the CPU's caches: kvik-server
# (--threads 1) against redis-server and valkey-server, in the same run.
#
# Each server is filled with SET over KEYS random keys of 64-byte values
# (kvik-benchmark -t set -n FILL -r KEYS -d 64), then, per repeat and in
# rotating order:
#   resp   kvik-benchmark -t get -n BENCH_N -r KEYS -c 50 -P 16            every server
#   respb  kvik-benchmark -t get -n BENCH_N -r KEYS -c 50 -P 100 --respb   kvik
#   p100   kvik-benchmark -t get -n BENCH_N -r KEYS -c 50 -P 100           redis, valkey
# Reported: median requests/s and median server CPU seconds per million
# requests (from /proc/PID/stat around each run), and kvik's ratios.
# This is where kvik's frame loops prefetch keys ahead of the running
# command (crates/server/src/read_ahead.rs); over a keyspace that fits the
# caches the suite's cells (bench/suite.sh) are the measure.
#
# Writes bench/results/keyspace.md, or into OUT_DIR.
#
# Environment (defaults in brackets):
#   KEYS      [1000000]  key range (-r)
#   FILL      [3000000]  SET requests of the fill (3 × KEYS leaves about 95% of the range set)
#   BENCH_N   [3000000]  GET requests per run
#   REPEATS   [3]        rounds
#   QUICK     [0]        1: KEYS=20000 FILL=40000 BENCH_N=20000 REPEATS=1 unless given
#   KVIK_SERVER_BIN, KVIK_BENCHMARK_BIN, BENCH_TIMEOUT: see bench/common.sh
#   OUT_DIR   [bench/results]
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK="${QUICK:-0}"
if [ "$QUICK" = 1 ]; then
    KEYS="${KEYS:-20000}"
    FILL="${FILL:-40000}"
    BENCH_N="${BENCH_N:-20000}"
    REPEATS="${REPEATS:-1}"
fi
KEYS="${KEYS:-1000000}"
FILL="${FILL:-$((KEYS * 3))}"
BENCH_N="${BENCH_N:-3000000}"
REPEATS="${REPEATS:-3}"
OUT_DIR="${OUT_DIR:-bench/results}"
THREADS=1

# shellcheck source=bench/common.sh
source bench/common.sh

check_whole KEYS FILL BENCH_N REPEATS BENCH_TIMEOUT
[ "$KEYS" -ge 1 ] || { echo "KEYS must be at least 1" >&2; exit 2; }
[ "$REPEATS" -ge 1 ] && [ "$REPEATS" -le 100 ] || { echo "REPEATS must be 1..100" >&2; exit 2; }
need_redis
need_valkey
find_binaries
raise_fd_limit 512

command_line="KEYS=$KEYS FILL=$FILL BENCH_N=$BENCH_N REPEATS=$REPEATS bench/keyspace.sh"
write_meta "$command_line"
failures=()
notes=()
runs="$work/runs.tsv"
: >"$runs"

servers=(kvik-t1 redis valkey)
for name in "${servers[@]}"; do
    start_server "$name"
    echo "filling $name: $FILL SETs over $KEYS keys" >&2
    run_bounded "$work/fill-$name.out" "$work/fill-$name.err" "$BENCH_BIN" -h 127.0.0.1 -p "${port[$name]}" \
        -t set -n "$FILL" -r "$KEYS" -d 64 -c 50 -P 100 -q ||
        { echo "fill of $name failed: $(tail -3 "$work/fill-$name.err")" >&2; exit 1; }
done

# run NAME CONFIG REP: one GET run; appends "name config rep rps cpu_s" to $runs.
run() {
    local name=$1 config=$2 rep=$3 extra=() before after rps
    case "$config" in
        resp) extra=(-P 16) ;;
        respb) extra=(-P 100 --respb) ;;
        p100) extra=(-P 100) ;;
    esac
    before=$(cpu_ticks "${pid[$name]}")
    if run_bounded "$work/run.json" "$work/run.err" "$BENCH_BIN" -h 127.0.0.1 -p "${port[$name]}" \
        -t get -n "$BENCH_N" -r "$KEYS" -c 50 "${extra[@]}" --json; then
        after=$(cpu_ticks "${pid[$name]}")
        rps=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["rps"])' "$work/run.json")
        printf '%s\t%s\t%s\t%s\t%s\n' "$name" "$config" "$rep" "$rps" \
            "$(python3 -c "print(($after - $before) / $(getconf CLK_TCK))")" >>"$runs"
        echo "round $rep/$REPEATS  $name $config: $rps requests/s" >&2
    else
        failures+=("$name $config round $rep")
    fi
}

cells=("kvik-t1 resp" "redis resp" "valkey resp" "kvik-t1 respb" "redis p100" "valkey p100")
for rep in $(seq 1 "$REPEATS"); do
    shift_by=$(((rep - 1) % ${#cells[@]}))
    for cell in "${cells[@]:shift_by}" "${cells[@]:0:shift_by}"; do
        # shellcheck disable=SC2086
        run $cell "$rep"
    done
done
finish_meta

mkdir -p "$OUT_DIR"
python3 - "$work/meta" "$runs" "$BENCH_N" "$OUT_DIR/keyspace.md" <<'EOF'
import statistics, sys
meta = dict(l.rstrip("\n").split("=", 1) for l in open(sys.argv[1]) if "=" in l)
n = int(sys.argv[3])
cells = {}
for line in open(sys.argv[2]):
    name, config, _, rps, cpu = line.split("\t")
    cells.setdefault((name, config), []).append((float(rps), float(cpu)))
def med(key, i):
    runs = cells.get(key)
    return statistics.median(r[i] for r in runs) if runs else None
def rps(key):
    return med(key, 0)
def cpu(key):
    c = med(key, 1)
    return None if c is None else c / n * 1e6
fmt = lambda v, f: "—" if v is None else f.format(v)
ratio = lambda a, b: "—" if a is None or b is None or b == 0 else f"{a / b:.2f}×"
out = ["# Pipelined GET over a large keyspace", ""]
out += [f"- Date: {meta['date']}; machine: `{meta['cpu']}`, {meta['cores']} cores, {meta['memtotal']}; load average at start: {meta['loadavg']}",
        f"- kvik-server: {meta['kvik_version']}, `--threads 1`; redis-server and valkey-server with persistence off",
        f"- Command: `{meta['command']}`",
        "- Each server filled with 64-byte values, then GET with `-c 50`; figures are medians over the repeats. CPU is the server's user + system time per million requests.",
        ""]
if meta.get("failures"):
    out += [f"- Failed runs: {meta['failures']}", ""]
for note in filter(None, meta.get("notes", "").split("|")):
    out += [f"- Note: {note}", ""]
out += ["| cell | kvik req/s | redis req/s | valkey req/s | kvik ÷ redis | kvik ÷ valkey | kvik CPU s/M | redis CPU s/M | valkey CPU s/M | redis CPU ÷ kvik CPU | valkey CPU ÷ kvik CPU |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
for label, mine, theirs in [("RESP `-P 16`", "resp", "resp"), ("kvik RESPB `-P 100` vs RESP `-P 100`", "respb", "p100")]:
    k, r, v = ("kvik-t1", mine), ("redis", theirs), ("valkey", theirs)
    out.append(f"| {label} | {fmt(rps(k), '{:,.0f}')} | {fmt(rps(r), '{:,.0f}')} | {fmt(rps(v), '{:,.0f}')} | "
               f"{ratio(rps(k), rps(r))} | {ratio(rps(k), rps(v))} | {fmt(cpu(k), '{:.2f}')} | {fmt(cpu(r), '{:.2f}')} | "
               f"{fmt(cpu(v), '{:.2f}')} | {ratio(cpu(r), cpu(k))} | {ratio(cpu(v), cpu(k))} |")
open(sys.argv[4], "w").write("\n".join(out) + "\n")
EOF
echo "wrote $OUT_DIR/keyspace.md" >&2
