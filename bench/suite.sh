#!/usr/bin/env bash
# The benchmark suite: kvik-server against redis-server and valkey-server on
# loopback, in the same run (`make bench`).
#
# Servers (SERVERS): kvik-t1 and kvik-t2 (kvik-server --threads 1 / 2),
# redis (Debian's redis-server), valkey and valkey-io2 (valkey-server, and
# with --io-threads 2), all with persistence off, side by side on free ports.
#
# Cells: one test at one client setting. Every cell runs against every target
# in the same repetition, the order of the targets rotated by one place each
# repetition, REPEATS times. Targets are the servers under redis-benchmark
# (RESP) and, with RESPB=1, the kvik servers under kvik-benchmark --respb.
#   throughput   redis-benchmark -t TEST -d SIZE -r 100000 at -c 1 -P 1,
#                -c 50 -P 1, -c 50 -P 16 (every test in TESTS) and -c 1 -P 1000
#                (ping_mbulk, set and get only), SIZE in SIZES
#   collections  ZRANGEBYSCORE (100 of 10,000 members) and LPOS (a scan of a
#                10,000-element list) on random keys of COLLECTIONS prepared
#                collections, -c 16 -P 16
#   ping         PING at -c 1 -P 1, -c 1 -P 1000, -c 10 -P 1000 (a yardstick)
# The server's utime and stime over each run are read from /proc/<pid>/stat.
#
# Bytes per key: for each server in MEM_SERVERS and each data set (SET with
# 3, 64, 256 and 1024-byte values; one-element RPUSH lists; 3-field hashes),
# a fresh server, MEM_KEYS keys: RSS and used_memory before and after,
# then FLUSHALL + MEMORY PURGE and the residual RSS.
#
# Writes suite.md, suite_runs.csv (every run), suite_memory.csv, suite.json
# and SVG charts (suite_vs_<peer>.svg, suite_bytes_per_key.svg) into
# bench/results (or OUT_DIR). bench/suite_readme.py turns suite.json into the
# comparison section of docs/benchmarks.md.
#
# Environment (defaults in brackets):
#   BENCH_N      [1000000]  requests per run at -c 50 -P 1
#   BENCH_N_SLOW [BENCH_N/10] requests per run at -c 1 -P 1 and for the collections
#   BENCH_N_PIPE [BENCH_N]  requests per run at -P 16 and -P 1000, which go 5-30×
#                           faster than -P 1: more requests keep those runs long
#                           enough to measure
#                (lrange_100 and mset, which move 10-100× the bytes of the
#                other tests per request, run a tenth of these counts)
#   PING_N_PIPE  [5×BENCH_N_PIPE] requests per run of the ping section at -P 1000:
#                a PING moves the fewest bytes, so these runs are the shortest
#   REPEATS      [3]
#   SERVERS      ["kvik-t1 kvik-t2 redis valkey valkey-io2"]
#   SECTIONS     ["throughput collections ping"]
#   SETTINGS     ["c1_P1 c50_P1 c50_P16 c1_P1000"]   throughput settings
#   TESTS        [ping_mbulk,set,get,incr,lpush,rpop,sadd,hset,zadd,lrange_100,mset]
#   SIZES        ["3 256"]  -d values
#   RESPB        [1]        0 leaves out the kvik-benchmark --respb targets
#   COLLECTIONS  [100]      collections of each kind; COLL_SIZE [10000] elements each
#   MEM_KEYS     [1000000]  keys per bytes-per-key data set (0 skips memory)
#   MEM_SERVERS  ["kvik-t1 redis valkey"]
#   MEM_SETS     ["str3 str64 str256 str1024 list1 hash3"]
#   MEM_SETTLE   [1]        seconds to wait before each memory reading
#   PIN          [1]        client on one CPU, one-thread servers on another (see bench/common.sh)
#   QUICK        [0]        1: BENCH_N=2000 REPEATS=1 SETTINGS=c50_P16 TESTS=set,get
#                           SIZES=3 COLLECTIONS=4 COLL_SIZE=1000 MEM_KEYS=5000 unless given
#   OUT_DIR [bench/results], LABEL [], and THREADS, BENCH_THREADS, KVIK_SERVER_BIN,
#   KVIK_BENCHMARK_BIN, BENCH_TIMEOUT: see bench/common.sh
#
#   make bench
#   QUICK=1 bench/suite.sh                       # seconds, not a measurement
#   SERVERS="kvik-t2 redis" SECTIONS=ping MEM_KEYS=0 bench/suite.sh
set -euo pipefail
cd "$(dirname "$0")/.."

QUICK="${QUICK:-0}"
if [ "$QUICK" = 1 ]; then
    BENCH_N="${BENCH_N:-2000}"
    REPEATS="${REPEATS:-1}"
    SETTINGS="${SETTINGS:-c50_P16}"
    TESTS="${TESTS:-set,get}"
    SIZES="${SIZES:-3}"
    COLLECTIONS="${COLLECTIONS:-4}"
    COLL_SIZE="${COLL_SIZE:-1000}"
    MEM_KEYS="${MEM_KEYS:-5000}"
fi
BENCH_N="${BENCH_N:-1000000}"
REPEATS="${REPEATS:-3}"
SERVERS="${SERVERS:-kvik-t1 kvik-t2 redis valkey valkey-io2}"
SECTIONS="${SECTIONS:-throughput collections ping}"
SETTINGS="${SETTINGS:-c1_P1 c50_P1 c50_P16 c1_P1000}"
TESTS="${TESTS:-ping_mbulk,set,get,incr,lpush,rpop,sadd,hset,zadd,lrange_100,mset}"
SIZES="${SIZES:-3 256}"
RESPB="${RESPB:-1}"
COLLECTIONS="${COLLECTIONS:-100}"
COLL_SIZE="${COLL_SIZE:-10000}"
MEM_KEYS="${MEM_KEYS:-1000000}"
MEM_SERVERS="${MEM_SERVERS:-kvik-t1 redis valkey}"
MEM_SETS="${MEM_SETS:-str3 str64 str256 str1024 list1 hash3}"
OUT_DIR="${OUT_DIR:-bench/results}"
SUITE_REPORT=bench/suite_report.py

# Pinned by default: unpinned on two cores, the scheduler can put the client
# and a one-thread server on the same core for stretches of a run.
PIN="${PIN:-1}"
# shellcheck source=bench/common.sh
source bench/common.sh

check_whole BENCH_N
BENCH_N_SLOW="${BENCH_N_SLOW:-$((BENCH_N / 10 > 0 ? BENCH_N / 10 : 1))}"
BENCH_N_PIPE="${BENCH_N_PIPE:-$BENCH_N}"
check_whole BENCH_N_PIPE
PING_N_PIPE="${PING_N_PIPE:-$((BENCH_N_PIPE * 5))}"
check_whole BENCH_N_SLOW PING_N_PIPE REPEATS COLLECTIONS COLL_SIZE MEM_KEYS BENCH_TIMEOUT
[ "$BENCH_N" -ge 1 ] && [ "$BENCH_N_SLOW" -ge 1 ] && [ "$BENCH_N_PIPE" -ge 1 ] && [ "$PING_N_PIPE" -ge 1 ] ||
    { echo "BENCH_N, BENCH_N_SLOW, BENCH_N_PIPE and PING_N_PIPE must be ≥ 1" >&2; exit 2; }
[ "$REPEATS" -ge 1 ] && [ "$REPEATS" -le 100 ] || { echo "REPEATS must be 1..100" >&2; exit 2; }
[ "$COLLECTIONS" -ge 1 ] && [ "$COLL_SIZE" -ge 1 ] && [ "$COLL_SIZE" -le 1000000 ] ||
    { echo "COLLECTIONS must be ≥ 1 and COLL_SIZE 1..1000000" >&2; exit 2; }
[[ "$TESTS" =~ ^[a-z_0-9,]+$ ]] || { echo "TESTS must be a -t list such as set,get" >&2; exit 2; }
case "$RESPB" in 0 | 1) ;; *) echo "RESPB must be 0 or 1" >&2; exit 2 ;; esac
known_servers=" kvik-t1 kvik-t2 redis valkey valkey-io2 "
for s in $SERVERS $MEM_SERVERS; do
    [[ "$known_servers" == *" $s "* ]] || { echo "unknown server '$s' (known:$known_servers)" >&2; exit 2; }
done
for s in $SECTIONS; do
    case "$s" in throughput | collections | ping) ;; *) echo "unknown section '$s'" >&2; exit 2 ;; esac
done
for s in $SETTINGS; do
    case "$s" in c1_P1 | c50_P1 | c50_P16 | c1_P1000) ;; *) echo "unknown setting '$s'" >&2; exit 2 ;; esac
done
for s in $SIZES; do
    [[ "$s" =~ ^[1-9][0-9]*$ ]] && [ "$s" -le 1048576 ] || { echo "SIZES must hold sizes 1..1048576" >&2; exit 2; }
done
for s in $MEM_SETS; do
    case "$s" in str3 | str64 | str256 | str1024 | list1 | hash3) ;; *) echo "unknown data set '$s'" >&2; exit 2 ;; esac
done
[ -n "${SERVERS// /}" ] || { echo "SERVERS is empty" >&2; exit 2; }

# Only what the selected servers need.
case " $SERVERS $MEM_SERVERS " in *" redis "*) need_redis ;; esac
case " $SERVERS $MEM_SERVERS " in *" valkey"*) need_valkey ;; esac
command -v redis-benchmark >/dev/null 2>&1 || need_redis
find_binaries
raise_fd_limit 1024

command_line="BENCH_N=$BENCH_N BENCH_N_SLOW=$BENCH_N_SLOW BENCH_N_PIPE=$BENCH_N_PIPE PING_N_PIPE=$PING_N_PIPE REPEATS=$REPEATS SERVERS=\"$SERVERS\" SECTIONS=\"$SECTIONS\" SETTINGS=\"$SETTINGS\" TESTS=$TESTS SIZES=\"$SIZES\" RESPB=$RESPB COLLECTIONS=$COLLECTIONS COLL_SIZE=$COLL_SIZE MEM_KEYS=$MEM_KEYS${BENCH_THREADS:+ BENCH_THREADS=$BENCH_THREADS} bench/suite.sh"
THREADS="per server (kvik-tN: --threads N)" write_meta "$command_line"
{
    echo "n=$BENCH_N"
    echo "n_slow=$BENCH_N_SLOW"
    echo "n_pipe=$BENCH_N_PIPE"
    echo "n_ping_pipe=$PING_N_PIPE"
    echo "repeats=$REPEATS"
    echo "servers=$SERVERS"
    echo "collections=$COLLECTIONS"
    echo "coll_size=$COLL_SIZE"
    echo "mem_keys=$MEM_KEYS"
    echo "clk_tck=$(getconf CLK_TCK)"
    echo "bench_version=$(redis-benchmark --version 2>&1 | head -1)"
    if command -v redis-server >/dev/null 2>&1; then
        echo "redis_version=$(redis-server --version | head -1)"
    fi
    if command -v valkey-server >/dev/null 2>&1; then
        echo "valkey_version=$(valkey-server --version | head -1)"
    fi
} >>"$work/meta"

# ------------------------------------------------------------------ cells
# whole_pipelines N FLAGS: N, raised to at least one full pipeline per client
# (redis-benchmark gives up when -n is below -c × -P).
whole_pipelines() {
    local n=$1 c p
    c=$(sed -n 's/.*-c \([0-9]*\).*/\1/p' <<<"$2")
    p=$(sed -n 's/.*-P \([0-9]*\).*/\1/p' <<<"$2")
    echo $((n > c * p ? n : c * p))
}
# One line per cell: section|cell|flags|size|test|n|command (command empty for -t tests).
cells=()
declare -A flags_of=([c1_P1]="-c 1 -P 1" [c50_P1]="-c 50 -P 1" [c50_P16]="-c 50 -P 16" [c1_P1000]="-c 1 -P 1000")
for section in $SECTIONS; do
    case "$section" in
        throughput)
            for setting in $SETTINGS; do
                case "$setting" in
                    c1_P1) n=$BENCH_N_SLOW ;;
                    c50_P1) n=$BENCH_N ;;
                    *) n=$BENCH_N_PIPE ;;
                esac
                for size in $SIZES; do
                    for t in ${TESTS//,/ }; do
                        [ "$setting" = c1_P1000 ] && [[ " ping_mbulk set get " != *" $t "* ]] && continue
                        tn=$n
                        [[ " lrange_100 mset " == *" $t "* ]] && tn=$((n / 10 > 0 ? n / 10 : 1))
                        cells+=("throughput|$setting/d$size|${flags_of[$setting]}|$size|$t|$(whole_pipelines "$tn" "${flags_of[$setting]}")|")
                    done
                done
            done
            ;;
        collections)
            lo=$((COLL_SIZE / 2))
            n=$(whole_pipelines "$BENCH_N_SLOW" "-c 16 -P 16")
            cells+=("collections|zrangebyscore|-c 16 -P 16|-|ZRANGEBYSCORE|$n|ZRANGEBYSCORE zset:__rand_int__ $lo $((lo + 99))")
            cells+=("collections|lpos|-c 16 -P 16|-|LPOS|$n|LPOS list:__rand_int__ e$((COLL_SIZE - 1))")
            ;;
        ping)
            for fl in "-c 1 -P 1" "-c 1 -P 1000" "-c 10 -P 1000"; do
                n=$PING_N_PIPE
                [ "$fl" = "-c 1 -P 1" ] && n=$BENCH_N_SLOW
                cells+=("ping|ping ${fl//[ -]/}|$fl|-|ping_mbulk|$(whole_pipelines "$n" "$fl")|")
            done
            ;;
    esac
done

targets=()
for s in $SERVERS; do
    targets+=("$s")
    if [ "$RESPB" = 1 ] && [[ "$s" == kvik-* ]]; then targets+=("$s+respb"); fi
done

failures=()
notes=()
: >"$work/runs.tsv"

# run_cell REP POS TARGET CELL: one client run, with the server's CPU time around it.
run_cell() {
    local rep=$1 pos=$2 target=$3 cell=$4
    local section id flags size t n command server file fmt before after rc=0 client=()
    IFS='|' read -r section id flags size t n command <<<"$cell"
    server=${target%+respb}
    run_no=$((run_no + 1))
    file="run-$run_no.out"
    # shellcheck disable=SC2206  # flags and command are word lists
    local args=(-h 127.0.0.1 -p "${port[$server]}" -n "$n" $flags "${bench_threads[@]}") tail=()
    if [ "$target" = "$server" ]; then
        client=("${client_pin[@]}" redis-benchmark)
        args+=(-q --csv)
        fmt=csv
    else
        client=("${client_pin[@]}" "$BENCH_BIN")
        args+=(--json --respb)
        fmt=json
    fi
    if [ -z "$command" ]; then
        args+=(-t "$t" -r 100000)
        if [ "$size" != - ]; then args+=(-d "$size"); fi
    else
        # The command goes last: both tools read everything after it as its arguments.
        # shellcheck disable=SC2206
        args+=(-r "$COLLECTIONS")
        tail=($command)
    fi
    client+=("${args[@]}" "${tail[@]}")
    echo "round $rep/$REPEATS  $id $t  $target" >&2
    local client_before=x client_after=x wall_before wall_after
    before=$(user_system_ticks "${pid[$server]}" || echo x)
    children_ms client_before || client_before=x
    now_ms wall_before
    run_bounded "$work/$file" "$work/$file.err" "${client[@]}" || rc=$?
    now_ms wall_after
    children_ms client_after || client_after=x
    after=$(user_system_ticks "${pid[$server]}" || echo x)
    local ticks="" system_ticks="" client_ms=""
    if [[ "$before" =~ ^[0-9]+\ [0-9]+$ && "$after" =~ ^[0-9]+\ [0-9]+$ ]]; then
        system_ticks=$((${after#* } - ${before#* }))
        ticks=$((${after% *} - ${before% *} + system_ticks))
    fi
    if [[ "$client_before" =~ ^[0-9]+$ && "$client_after" =~ ^[0-9]+$ ]]; then
        client_ms=$((client_after - client_before))
    fi
    if [ "$rc" = 0 ] && python3 "$HELPER" wait "${port[$server]}" 5; then
        printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$section" "$id" "$flags" "$size" "$t" \
            "$target" "$rep" "$pos" "$fmt" "$file" "$n" "$ticks" "$client_ms" \
            "$((wall_after - wall_before))" "$system_ticks" >>"$work/runs.tsv"
    else
        failures+=("$target $id $t round $rep")
        echo "  failed: $(tail -3 "$work/$file.err" | tr '\n' ' ')" >&2
        if ! python3 "$HELPER" wait "${port[$server]}" 5; then
            stop_server "$server"
            start_server "$server"
            if [[ " $SECTIONS " == *" collections "* ]]; then prepare "$server"; fi
        fi
    fi
}
run_no=0

# prepare SERVER: the collections the collection cells read.
prepare() {
    echo "preparing $COLLECTIONS sorted sets and lists of $COLL_SIZE elements on $1" >&2
    run_bounded /dev/null "$work/prepare-$1.err" python3 "$SUITE_REPORT" prepare "${port[$1]}" \
        "$COLLECTIONS" "$COLL_SIZE" || { echo "preparing $1 failed: $(tail -3 "$work/prepare-$1.err")" >&2; exit 1; }
}

if [ ${#cells[@]} -gt 0 ]; then
    for s in $SERVERS; do
        start_server "$s"
        if [[ " $SECTIONS " == *" collections "* ]]; then prepare "$s"; fi
    done
    for rep in $(seq 1 "$REPEATS"); do
        # Rotate the targets by one place per repetition.
        k=$(((rep - 1) % ${#targets[@]}))
        order=("${targets[@]:k}" "${targets[@]:0:k}")
        for cell in "${cells[@]}"; do
            pos=0
            for target in "${order[@]}"; do
                pos=$((pos + 1))
                run_cell "$rep" "$pos" "$target" "$cell"
            done
        done
    done
    for s in $SERVERS; do stop_server "$s"; done
fi

# ------------------------------------------------------------------ bytes per key
if [ "$MEM_KEYS" -gt 0 ]; then
    for set in $MEM_SETS; do
        for s in $MEM_SERVERS; do
            measure_memory "$SUITE_REPORT" "$s" "$set"
        done
    done
fi

if grep -qi 'unknown command\|"errors":[1-9]' "$work"/*.out "$work"/*.err 2>/dev/null; then
    notes+=("some runs got error replies: $(grep -li 'unknown command\|"errors":[1-9]' "$work"/*.out "$work"/*.err | xargs -n1 basename | head -5 | tr '\n' ' ')")
fi
cores=$(nproc)
if [ "$cores" -lt 4 ]; then
    notes+=("the benchmark client runs on the same $cores cores as the server under test, so client and server compete for CPU (most of all for kvik --threads 2 and valkey --io-threads 2).")
fi
if [ "${PROFILE%%,*}" != release ]; then
    notes+=("kvik binaries are not release builds ($PROFILE): the figures only show that the script works.")
fi
if [ "$QUICK" = 1 ]; then
    notes+=("QUICK=1: a check that the suite works, not a measurement.")
fi
outcome_meta

mkdir -p "$OUT_DIR"
python3 "$SUITE_REPORT" report "$work" "$OUT_DIR"
echo "wrote $OUT_DIR/suite.md, suite_runs.csv, suite_memory.csv, suite.json and the SVG charts" >&2
[ ${#failures[@]} -eq 0 ] || { echo "failed: ${failures[*]}" >&2; exit 1; }
