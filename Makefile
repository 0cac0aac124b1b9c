# Entry points for people and CI. `make test` installs what the suite needs on a
# fresh Debian machine (redis-server for the differential tests, openssl for
# the TLS tests' certificates, a Python venv with redis-py and pytest), then
# runs every test.

SHELL := /bin/bash
.DEFAULT_GOAL := test

PYTHON ?= python3
VENV := .venv
TARGET_DIR = $${CARGO_TARGET_DIR:-target}
# The debug binary that `cargo test --workspace` builds for the server's
# integration tests; the Python tests drive the same one.
SERVER_BIN = $(TARGET_DIR)/debug/kvik-server
SUDO := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
APT := $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get

# A one-off build on a CI machine gains nothing from incremental state, which
# is the largest thing in target/ (gigabytes); disk there is scarce.
ifdef CI
export CARGO_INCREMENTAL = 0
endif

.PHONY: run release test deps cargo redis-server openssl fmt lint bench bench-protocol bench-server bench-respb bench-mux bench-keyspace bench-persistence bench-bgsave bench-aof crash-loop fuzz

## Build in release mode and serve on 127.0.0.1:6379 (kvik-server's defaults,
## no configuration file). PGO=1 serves the profile-guided build instead
## (build/pgo.sh; the first such build takes about 7 minutes).
run: cargo
ifeq ($(filter-out 0,$(PGO)),)
	cargo build --release -p kvik-server
	@exec "$(TARGET_DIR)/release/kvik-server"
else
	@bin=$$(build/pgo.sh) && exec "$$bin"
endif

## The profile-guided release build (build/pgo.sh), the one the benchmark
## scripts use; prints the binary's path.
release: cargo
	@build/pgo.sh

## Install what is missing, then run the Rust and Python test suites.
test: deps
	cargo test --workspace
	cargo test --manifest-path crates/protocol/fuzz/Cargo.toml --target-dir "$(TARGET_DIR)"
	cargo test --manifest-path crates/persist/fuzz/Cargo.toml --target-dir "$(TARGET_DIR)"
	cargo test --manifest-path crates/acl/fuzz/Cargo.toml --target-dir "$(TARGET_DIR)"
	KVIK_SERVER_BIN="$(SERVER_BIN)" $(VENV)/bin/python -m pytest -q tests/python

deps: cargo redis-server openssl $(VENV)/.installed $(VENV)/.kvik-python

cargo:
	@command -v cargo >/dev/null 2>&1 || { \
		echo "cargo not found: install Rust 1.88 or newer (https://rustup.rs)" >&2; exit 1; }

# Debian's package starts a redis-server service on port 6379 once installed.
# The tests start their own servers, and `make run` wants that port, so a
# service started by this install is stopped and not started at boot.
redis-server:
	@command -v redis-server >/dev/null 2>&1 || { \
		echo "installing redis-server (Debian package)"; \
		$(APT) update -qq && $(APT) install -y -qq redis-server >/dev/null && \
		{ $(SUDO) systemctl disable --now redis-server >/dev/null 2>&1 || \
		  $(SUDO) service redis-server stop >/dev/null 2>&1 || true; }; }

# The TLS tests make an encrypted key (Rust) and certificates (Python) with it.
openssl:
	@command -v openssl >/dev/null 2>&1 || { \
		echo "installing openssl (Debian package)"; \
		$(APT) update -qq && $(APT) install -y -qq openssl >/dev/null; }

$(VENV)/.installed: tests/python/requirements.txt
	@command -v $(PYTHON) >/dev/null 2>&1 || { \
		echo "installing python3 (Debian package)"; \
		$(APT) update -qq && $(APT) install -y -qq python3 python3-venv >/dev/null; }
	@$(PYTHON) -m venv $(VENV) >/dev/null 2>&1 || { \
		echo "installing python3-venv (Debian package)"; \
		$(APT) update -qq && $(APT) install -y -qq python3-venv >/dev/null && \
		$(PYTHON) -m venv --clear $(VENV); }
	@echo "installing Python test dependencies into $(VENV)"
	@$(VENV)/bin/python -m pip install -q --disable-pip-version-check -r tests/python/requirements.txt
	@touch $@

# The Python client (python/): maturin builds its native half against the
# venv's interpreter; built again when it or the protocol crate changes.
KVIK_PYTHON_SOURCES := $(shell find python/src python/kvik crates/protocol/src -name '*.rs' -o -name '*.py' -o -name '*.in' 2>/dev/null) python/Cargo.toml python/pyproject.toml
$(VENV)/.kvik-python: $(VENV)/.installed $(KVIK_PYTHON_SOURCES)
	@echo "building the Python client (python/) into $(VENV)"
	@$(VENV)/bin/python -m pip install -q --disable-pip-version-check ./python
	@touch $@

fmt:
	cargo fmt --all
	cargo fmt --manifest-path python/Cargo.toml

lint:
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo fmt --manifest-path python/Cargo.toml -- --check
	cargo clippy --manifest-path python/Cargo.toml -- -D warnings

## The benchmark suite: kvik-server (1 and 2 threads) against redis-server and
## valkey-server, throughput and bytes per key: bench/results/suite.md, CSV, SVG.
## QUICK=1 for a check that it works; see bench/suite.sh for the settings.
bench: cargo redis-server
	bench/suite.sh

## Criterion benches of the protocol codecs.
bench-protocol:
	cargo bench -p kvik-protocol

## kvik-server against redis-server only (the older report): bench/results/server.md.
bench-server: cargo redis-server
	bench/server.sh

## RESP vs RESPB on kvik (redis-server and valkey-server for reference): bench/results/respb.md.
## QUICK=1 for a check that it works; see the script's header for the settings.
bench-respb: cargo redis-server
	bench/respb.sh

## GET over 1,000,000 keys, kvik against redis-server and valkey-server:
## bench/results/keyspace.md. QUICK=1 for a check that it works.
bench-keyspace: cargo redis-server
	bench/keyspace.sh

## SAVE time, file size and load time against redis-server (1M keys; KEYS="1000000 5000000"
## for both sizes): bench/results/persistence.md.
bench-persistence: cargo redis-server
	bench/persistence.sh

## BGSAVE under a writing client, kvik (no fork) vs redis-server (fork):
## duration, extra memory, latency; bench/results/bgsave.md.
bench-bgsave: cargo redis-server
	KEYS="1000000 5000000" bench/bgsave.sh

## SET throughput with appendfsync always and everysec at -P 1 and -P 16, and the
## start on an append-only file (RESP and RESPB): bench/results/aof.md.
bench-aof: cargo redis-server
	bench/aof.sh

## SIGKILL under write load, 100 cycles per fsync policy; every acknowledged
## write must survive: bench/results/crash_loop.md.
crash-loop: cargo
	bench/crash_loop.sh

## 1,000 clients over RESPB mux vs a connection each: bench/results/mux.md.
bench-mux: cargo
	bench/mux.sh

## Every fuzz target for 10 minutes (nightly toolchain and cargo-fuzz needed).
fuzz:
	crates/protocol/fuzz/run.sh 600
	crates/persist/fuzz/run.sh 600
	crates/acl/fuzz/run.sh 600
