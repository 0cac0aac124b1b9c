//! Smoke tests of the benchmark scripts `bench/respb.sh` and `bench/mux.sh`:
//! each runs in QUICK mode (a few thousand requests, one repeat) against the
//! debug kvik-server and this crate's kvik-benchmark, and must write a
//! well-formed Markdown report and JSON file. They check that the scripts
//! work, not how fast anything is: the figures of a debug build on a test
//! machine mean nothing, and performance is never asserted by tests.
//!
//! The redis-server reference of `respb.sh` is included when redis-server
//! and redis-benchmark are installed (CI installs them) and skipped otherwise.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().expect("repository root")
}

fn on_path(tool: &str) -> bool {
    Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().map(|o| o.status.success()).unwrap_or(false)
}

/// An empty directory for one script's output, removed when dropped.
struct OutDir(PathBuf);

impl OutDir {
    fn new(name: &str) -> OutDir {
        let dir = std::env::temp_dir().join(format!("kvik-bench-scripts-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("output directory");
        OutDir(dir)
    }
}

impl Drop for OutDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Run `bench/<script>` in QUICK mode with `env`, writing into `out`; stderr on failure.
fn run_script(script: &str, out: &Path, env: &[(&str, &str)]) {
    let mut cmd = Command::new("bash");
    cmd.arg(repo_root().join("bench").join(script))
        .env("QUICK", "1")
        .env("KVIK_SERVER_BIN", common::kvik_bin())
        .env("KVIK_BENCHMARK_BIN", env!("CARGO_BIN_EXE_kvik-benchmark"))
        .env("OUT_DIR", out)
        .env("THREADS", "1")
        .env("BENCH_N", "1000")
        .env("REPEATS", "1")
        .env("TESTS", "set,get")
        .env("BENCH_TIMEOUT", "120")
        .env("LABEL", "smoke test");
    for var in ["PIPELINES", "CLIENTS", "MUX", "PIPELINE", "REDIS"] {
        cmd.env_remove(var);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let output = cmd.output().expect("run bash");
    assert!(
        output.status.success(),
        "{script} failed ({}):\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn json(path: &Path) -> Value {
    serde_json::from_str(&read(path)).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The cells of the Markdown table row starting with `| first |`.
fn row<'a>(md: &'a str, first: &str) -> Vec<&'a str> {
    let prefix = format!("| {first} |");
    let line = md.lines().find(|l| l.starts_with(&prefix)).unwrap_or_else(|| panic!("no row {prefix} in\n{md}"));
    line.trim_matches('|').split('|').map(str::trim).collect()
}

/// A figure such as `12,345` or `1.04×`: present and above zero.
fn positive(cell: &str) -> bool {
    cell.trim_end_matches('×').replace(',', "").parse::<f64>().is_ok_and(|v| v > 0.0)
}

#[test]
fn respb_script_writes_a_report_with_every_cell_and_the_wire_sizes() {
    let redis = on_path("redis-server") && on_path("redis-benchmark");
    let out = OutDir::new("respb");
    run_script(
        "respb.sh",
        &out.0,
        &[("PIPELINES", "1 10"), ("CLIENTS", "4"), ("REDIS", if redis { "1" } else { "0" })],
    );

    let md = read(&out.0.join("respb.md"));
    assert!(md.starts_with("# RESP vs RESPB"), "{md}");
    assert!(md.contains("**smoke test**"), "{md}");
    for test in ["SET", "GET"] {
        let section = md.split(&format!("## {test} (")).nth(1).unwrap_or_else(|| panic!("no {test} section"));
        for p in ["1", "10"] {
            let cells = row(section, p);
            let want = if redis { 7 } else { 4 };
            assert_eq!(cells.len(), want, "{cells:?}");
            assert!(cells[1..].iter().all(|c| positive(c)), "{test} -P {p}: {cells:?}");
        }
    }
    assert!(md.contains("## Wire sizes"), "{md}");
    assert_eq!(row(&md, "GET (3-byte key)")[1..3], ["22", "9"]);

    let j = json(&out.0.join("respb.json"));
    let medians = j["medians"].as_array().expect("medians");
    let servers = if redis { 3 } else { 2 };
    assert_eq!(medians.len(), servers * 2 * 2, "{medians:?}");
    assert!(medians.iter().all(|m| m["rps"].as_f64().is_some_and(|r| r > 0.0)), "{medians:?}");
    let runs = j["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), medians.len(), "one repeat: a run per cell");
    assert_eq!(j["meta"]["pipelines"], "1 10");
}

#[test]
fn mux_script_reports_throughput_latency_and_memory_per_configuration() {
    let out = OutDir::new("mux");
    run_script("mux.sh", &out.0, &[("CLIENTS", "20"), ("MUX", "10")]);

    let md = read(&out.0.join("mux.md"));
    assert!(md.starts_with("# 20 logical clients"), "{md}");
    for test in ["SET", "GET"] {
        let section = md.split(&format!("## {test}\n")).nth(1).unwrap_or_else(|| panic!("no {test} section"));
        for config in ["RESP, 20 connections", "RESPB, 20 connections", "RESPB `--mux 10`, 2 connections"] {
            let cells = row(section, config);
            assert!(cells[1..].iter().all(|c| positive(c)), "{test} {config}: {cells:?}");
        }
    }
    let memory = md.split("## Server memory").nth(1).expect("memory section");
    for config in ["RESP, 20 connections", "RESPB, 20 connections", "RESPB `--mux 10`, 2 connections"] {
        let cells = row(memory, config);
        assert!(cells[1..4].iter().all(|c| positive(c)), "{config}: {cells:?}");
    }

    let j = json(&out.0.join("mux.json"));
    let runs = j["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 3 * 2, "three configurations, two tests, one repeat");
    for r in runs {
        let want = if r["config"] == "mux" { 2 } else { 20 };
        assert_eq!(r["connections"], want, "{r}");
        assert_eq!(r["clients"], 20, "{r}");
        assert_eq!(r["errors"], 0, "{r}");
        assert!(r["p99"].as_f64().is_some_and(|v| v >= 0.0), "{r}");
        assert!(r["vm_hwm"].as_u64().is_some_and(|v| v >= r["rss_idle"].as_u64().unwrap_or(u64::MAX)), "{r}");
    }
}
