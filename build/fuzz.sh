#!/usr/bin/env bash
# Run the fuzz targets of one fuzz crate for SECONDS seconds each.
#
#   build/fuzz.sh crates/protocol/fuzz 600                 # every target, 10 minutes each
#   build/fuzz.sh crates/persist/fuzz 60 payload           # some targets
#
# The crate's `seeds` example writes its seeds (and saved inputs) into
# corpus/<target>/ first, so a fresh checkout starts from valid inputs; new
# inputs a run finds stay there (ignored by git) so later runs start further
# along. Needs a nightly toolchain (FUZZ_TOOLCHAIN, default nightly) and
# cargo-fuzz. Exits non-zero on the first target that finds a crash; the
# input is left in the crate's artifacts/<target>/.
set -euo pipefail

crate="${1:?usage: build/fuzz.sh CRATE_DIR [SECONDS] [TARGET ...]}"
seconds="${2:-600}"
shift $(($# < 2 ? $# : 2))
cd "$crate"
targets=("$@")
jobs="${FUZZ_BUILD_JOBS:-2}"
toolchain="${FUZZ_TOOLCHAIN:-nightly}"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2
    exit 2
fi
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo "+$toolchain" fuzz list)
fi

cargo run --quiet --release -j "$jobs" --example seeds -- corpus
CARGO_BUILD_JOBS="$jobs" cargo "+$toolchain" fuzz build

for target in "${targets[@]}"; do
    echo "== $target: ${seconds}s"
    cargo "+$toolchain" fuzz run "$target" "corpus/$target" -- \
        -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1
done
echo "all targets of $crate ran ${seconds}s without a crash"
