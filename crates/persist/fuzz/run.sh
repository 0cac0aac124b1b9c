#!/usr/bin/env bash
# Run every fuzz target of kvik-persist for SECONDS seconds each (default 600).
#
#   ./run.sh            # 10 minutes per target
#   ./run.sh 10         # smoke run
#   ./run.sh 60 payload # only some targets
#
# Needs a nightly toolchain and cargo-fuzz. Seeds and the saved inputs of
# regressions/ are copied into corpus/<target>/ first. Exits non-zero on the
# first target that finds a crash; the input is left in artifacts/<target>/.
set -euo pipefail

cd "$(dirname "$0")"
seconds="${1:-600}"
shift || true
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    targets=(rdb_file payload)
fi
jobs="${FUZZ_BUILD_JOBS:-2}"
toolchain="${FUZZ_TOOLCHAIN:-nightly}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2
    exit 2
fi

cargo run --quiet --release -j "$jobs" --example seeds -- corpus
CARGO_BUILD_JOBS="$jobs" cargo "+$toolchain" fuzz build

for target in "${targets[@]}"; do
    echo "== $target: ${seconds}s"
    cargo "+$toolchain" fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
done
echo "all targets ran ${seconds}s without a crash"
