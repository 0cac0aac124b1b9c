//! Smoke tests of the benchmark scripts `bench/respb.sh`, `bench/mux.sh`,
//! `bench/keyspace.sh`, `bench/bgsave.sh` and `bench/suite.sh`, and the Python unit tests of the suite's report code
//! (`bench/tests/`):
//! each runs in QUICK mode (a few thousand requests, one repeat) against the
//! debug kvik-server and this crate's kvik-benchmark, and must write a
//! well-formed Markdown report and JSON file. They check that the scripts
//! work, not how fast anything is: the figures of a debug build on a test
//! machine mean nothing, and performance is never asserted by tests.
//!
//! The redis-server reference of `respb.sh` is included when redis-server
//! and redis-benchmark are installed (CI installs them) and skipped otherwise.
//! `bench/syscalls.sh` runs where perf may count syscall tracepoints; its
//! test checks counts that do not depend on speed (one read and one write
//! per request at `-P 1`). `bench/ab.sh` runs the debug build as both of
//! the builds it compares.

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
    for var in [
        "PIPELINES",
        "CLIENTS",
        "MUX",
        "PIPELINE",
        "REDIS",
        "SERVERS",
        "SECTIONS",
        "SETTINGS",
        "SIZES",
        "RESPB",
        "COLLECTIONS",
        "COLL_SIZE",
        "MEM_KEYS",
        "MEM_SERVERS",
        "MEM_SETS",
        "BENCH_N_SLOW",
        "KEYS",
        "FILL",
        "STEADY_SECONDS",
        "LOAD_RATE",
        "POLICIES",
        "REQUESTS",
        "CYCLES",
    ] {
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
    // The reference servers that are installed; kvik-benchmark drives them all.
    let peers: Vec<&str> = [("redis", "redis-server"), ("valkey", "valkey-server")]
        .into_iter()
        .filter(|(_, binary)| on_path(binary))
        .map(|(name, _)| name)
        .collect();
    let out = OutDir::new("respb");
    let peer_list = peers.join(" ");
    run_script(
        "respb.sh",
        &out.0,
        &[("PIPELINES", "1 10"), ("CLIENTS", "4"), ("PEERS", &peer_list), ("KVIK_THREADS", "1 2")],
    );

    let md = read(&out.0.join("respb.md"));
    assert!(md.starts_with("# RESP vs RESPB"), "{md}");
    assert!(md.contains("**smoke test**"), "{md}");
    assert!(md.contains("one server per `--threads` value: 1, 2"), "{md}");
    for test in ["SET", "GET"] {
        let section = md.split(&format!("## {test} (")).nth(1).unwrap_or_else(|| panic!("no {test} section"));
        for kvik in ["kvik 1 thread", "kvik 2 threads"] {
            let table = section.split(&format!("### {test}, {kvik}\n")).nth(1).unwrap_or_else(|| panic!("no {kvik}"));
            for p in ["1", "10"] {
                let cells = row(table, p);
                // kvik RESP, RESPB and their ratio, then each peer and kvik's two ratios to it.
                let want = 4 + 3 * peers.len();
                assert_eq!(cells.len(), want, "{cells:?}");
                assert!(cells[1..].iter().all(|c| positive(c)), "{test} {kvik} -P {p}: {cells:?}");
            }
        }
    }
    if peers.contains(&"valkey") {
        let summary = md.split("## GET: kvik RESPB / valkey RESP").nth(1).expect("summary table");
        for p in ["1", "10"] {
            let cells = row(summary, p);
            assert_eq!(cells.len(), 3, "{cells:?}");
            assert!(cells[1..].iter().all(|c| positive(c)), "-P {p}: {cells:?}");
        }
    }
    assert!(md.contains("## Wire sizes"), "{md}");
    assert_eq!(row(&md, "GET (3-byte key)")[1..3], ["22", "9"]);

    let j = json(&out.0.join("respb.json"));
    let medians = j["medians"].as_array().expect("medians");
    // Two kvik servers over RESP and over RESPB, then the peers; two tests at two depths each.
    assert_eq!(medians.len(), (2 * 2 + peers.len()) * 2 * 2, "{medians:?}");
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

#[test]
fn keyspace_script_reports_kvik_against_both_references() {
    if !(on_path("redis-server") && on_path("valkey-server")) {
        eprintln!("redis-server or valkey-server is not installed: the keyspace smoke test is skipped");
        return;
    }
    let out = OutDir::new("keyspace");
    run_script("keyspace.sh", &out.0, &[("KEYS", "2000"), ("FILL", "4000")]);
    let md = read(&out.0.join("keyspace.md"));
    assert!(md.starts_with("# Pipelined GET over a large keyspace"), "{md}");
    assert!(md.contains("KEYS=2000 FILL=4000 BENCH_N=1000 REPEATS=1"), "{md}");
    for cell in ["RESP `-P 16`", "kvik RESPB `-P 100` vs RESP `-P 100`"] {
        let cells = row(&md, cell);
        assert_eq!(cells.len(), 11, "{cells:?}");
        // Throughputs and ratios; CPU figures of a short run may round to zero.
        assert!(cells[1..6].iter().all(|c| positive(c)), "{cell}: {cells:?}");
        assert!(cells[6..9].iter().all(|c| c.parse::<f64>().is_ok()), "{cell}: {cells:?}");
    }
}

#[test]
fn aof_script_reports_kvik_against_redis() {
    if !on_path("redis-server") {
        eprintln!("redis-server is not installed: the aof smoke test is skipped");
        return;
    }
    let out = OutDir::new("aof");
    run_script(
        "aof.sh",
        &out.0,
        &[("REQUESTS", "2000"), ("KEYS", "2000"), ("PIPELINES", "1 4"), ("CLIENTS", "10"), ("THREADS", "2")],
    );
    let md = read(&out.0.join("aof.md"));
    assert!(md.starts_with("# Append-only file: SET throughput and load time"), "{md}");
    for policy in ["always", "everysec"] {
        for depth in ["1", "4"] {
            for server in ["kvik-server", "redis-server"] {
                let line = md
                    .lines()
                    .find(|l| l.starts_with(&format!("| {policy} | {depth} | {server} |")))
                    .unwrap_or_else(|| panic!("{policy} -P {depth} {server}: {md}"));
                let cells: Vec<&str> = line.split('|').map(str::trim).collect();
                // A run this short may take less CPU than the clock's tick:
                // the per-CPU-second cell is then left empty.
                assert!(positive(cells[4]) && (positive(cells[6]) || cells[6] == "—"), "{line}");
            }
        }
    }
    for form in ["RESP", "RESPB"] {
        let line = md.lines().find(|l| l.starts_with(&format!("| 2,000 | kvik-server | {form} |"))).unwrap_or("");
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        assert!(cells.len() > 6 && positive(cells[4].trim_end_matches(" s")), "{form} load time: {md}");
        assert!(cells[6].ends_with('×'), "{form} against redis: {line}");
    }
}

#[test]
fn crash_loop_script_loses_no_acknowledged_write() {
    let out = OutDir::new("crash-loop");
    run_script(
        "crash_loop.sh",
        &out.0,
        &[("CYCLES", "3"), ("CLIENTS", "4"), ("MIN_RUN_S", "0.2"), ("MAX_RUN_S", "0.4"), ("THREADS", "2")],
    );
    let md = read(&out.0.join("crash_loop.md"));
    assert!(md.starts_with("# Crash loop: SIGKILL under write load"), "{md}");
    for policy in ["always", "everysec"] {
        assert!(md.contains(&format!("`appendfsync {policy}`")), "{md}");
    }
    // With always nothing acknowledged may go; everysec's figure is reported.
    let always = md.split("`appendfsync everysec`").next().unwrap_or("");
    assert!(always.contains("| acknowledged writes lost | 0 |"), "{md}");
    assert_eq!(md.matches("| acknowledged writes lost | ").count(), 2, "{md}");
    assert_eq!(md.matches("| consistency problems (half transactions, disorder) | 0 |").count(), 2, "{md}");
    let acked: Vec<u64> = md
        .lines()
        .filter_map(|l| l.strip_prefix("| acknowledged writes, all cycles | "))
        .filter_map(|l| l.trim_end_matches(" |").parse().ok())
        .collect();
    assert!(acked.len() == 2 && acked.iter().all(|&n| n > 0), "writes were acknowledged: {md}");
}

#[test]
fn bgsave_script_reports_kvik_against_redis() {
    if !on_path("redis-server") {
        eprintln!("redis-server is not installed: the bgsave smoke test is skipped");
        return;
    }
    let out = OutDir::new("bgsave");
    run_script(
        "bgsave.sh",
        &out.0,
        &[("KEYS", "5000"), ("STEADY_SECONDS", "1"), ("SERVERS", "kvik redis"), ("THREADS", "2")],
    );
    let md = read(&out.0.join("bgsave.md"));
    assert!(md.starts_with("# Background snapshots: BGSAVE under write load"), "{md}");
    let kvik = md.lines().filter(|l| l.starts_with("| kvik-server |")).collect::<Vec<_>>();
    assert_eq!(kvik.len(), 2, "both tables have kvik's row: {md}");
    let cells = row(&md, "kvik-server");
    assert!(positive(cells[1]), "the save's duration: {cells:?}");
    assert_eq!(cells[5], "— (no fork)", "{cells:?}");
    assert!(cells[6..10].iter().all(|c| positive(c)), "steady latencies: {cells:?}");
    // A save this small may end before the latency client's next request.
    assert!(cells[10..14].iter().all(|c| positive(c) || *c == "—"), "latencies during the save: {cells:?}");
    let redis = row(&md, "redis-server");
    assert!(positive(redis[5]), "redis forks: {redis:?}");
    assert!(kvik[1].contains("| ok |"), "the save worked: {}", kvik[1]);
}

#[test]
fn python_unit_tests_of_the_suite_report_pass() {
    let output = Command::new("python3")
        .args(["-m", "unittest", "discover", "-s", "bench/tests"])
        .current_dir(repo_root())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .expect("run python3");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "bench/tests failed:\n{stderr}");
    assert!(stderr.contains("OK"), "{stderr}");
}

/// Lines of a CSV file without quoted commas, split into cells.
fn csv_rows(text: &str) -> Vec<Vec<&str>> {
    text.lines().map(|l| l.split(',').collect()).collect()
}

#[test]
fn suite_script_writes_tables_csv_json_and_charts_for_every_server() {
    let peers = on_path("redis-server") && on_path("redis-benchmark") && on_path("valkey-server");
    let servers = if peers { "kvik-t1 kvik-t2 redis valkey valkey-io2" } else { "kvik-t1 kvik-t2" };
    let mem_servers = if peers { "kvik-t1 redis valkey" } else { "kvik-t1" };
    if !on_path("redis-benchmark") {
        eprintln!("redis-benchmark is not installed: the suite smoke test is skipped");
        return;
    }
    let out = OutDir::new("suite");
    run_script(
        "suite.sh",
        &out.0,
        &[
            ("SERVERS", servers),
            ("SECTIONS", "throughput collections"),
            ("SETTINGS", "c50_P16"),
            ("SIZES", "3"),
            // Enough requests that no run ends within redis-benchmark's 1 ms clock (it
            // reports `inf` requests/s then).
            ("BENCH_N", "5000"),
            ("COLLECTIONS", "2"),
            ("COLL_SIZE", "1000"),
            ("BENCH_N_SLOW", "2000"),
            ("MEM_KEYS", "2000"),
            ("MEM_SERVERS", mem_servers),
            ("MEM_SETS", "str3 hash3"),
            ("MEM_SETTLE", "0.1"),
        ],
    );

    let md = read(&out.0.join("suite.md"));
    assert!(md.starts_with("# kvik vs redis-server vs valkey-server"), "{md}");
    assert!(md.contains("**smoke test**"), "{md}");
    let targets = if peers { 7 } else { 4 };
    for test in ["SET", "GET", "LPOS list:__rand_int__ e999"] {
        let cells = row(&md, test);
        assert_eq!(cells.len(), 1 + targets, "{cells:?}");
        let bare = |c: &str| c.trim_end_matches(" ◆").trim_end_matches(" ⚠").to_string();
        assert!(cells[1..].iter().all(|c| positive(&bare(c))), "{test}: {cells:?}");
    }
    let memory = md.split("## Bytes per key").nth(1).expect("memory section");
    for set in ["SET, 3-byte values", "HSET, 3-field hashes"] {
        let cells = row(memory, set);
        let servers = mem_servers.split(' ').count();
        assert!(cells[1..=servers].iter().all(|c| positive(c)), "{set}: {cells:?}");
    }

    // Every run in the CSV, with a throughput, the server's CPU seconds, the
    // client's CPU seconds and the wall time.
    let runs = read(&out.0.join("suite_runs.csv"));
    let rows = csv_rows(&runs);
    assert_eq!(rows[0][10], "rps", "{runs}");
    assert_eq!(rows[0][13..15], ["client_cpu_seconds", "wall_seconds"], "{runs}");
    assert_eq!(rows.len() - 1, targets * 4, "two tests and two collection commands per target:\n{runs}");
    assert!(rows[1..].iter().all(|r| positive(r[10]) && r[11].parse::<f64>().is_ok()), "{runs}");
    assert_eq!(rows[0][15], "server_system_seconds", "{runs}");
    // A client that sent thousands of requests used some CPU, and no more than a
    // core; a server's system time is part of its CPU time.
    for r in &rows[1..] {
        let (client, wall) = (r[13].parse::<f64>().unwrap_or(-1.0), r[14].parse::<f64>().unwrap_or(0.0));
        assert!(wall > 0.0 && client > 0.0 && client <= wall * 1.1 + 0.01, "{r:?}");
        let (cpu, system) = (r[11].parse::<f64>().unwrap_or(-1.0), r[15].parse::<f64>().unwrap_or(-1.0));
        assert!(system >= 0.0 && system <= cpu, "{r:?}");
    }
    assert!(md.contains("Cells whose client was busy 90% of the time or more"), "{md}");
    let after = md.split("Share of each server's CPU time that was system time").nth(1).expect("kernel share");
    let kernel = row(after, "throughput `-c 50 -P 16`");
    assert_eq!(kernel.len(), 1 + targets, "{kernel:?}");
    // A share or, for a server that used less than a clock tick over the
    // setting's short runs, a dash: no share can be measured then.
    let share = |c: &&str| *c == "–" || c.trim_end_matches('%').parse::<u32>().is_ok_and(|p| p <= 100);
    assert!(kernel[1..].iter().all(share), "{kernel:?}");
    assert!(kernel[1..].iter().any(|c| *c != "–"), "no share measured at all: {kernel:?}");

    let j = json(&out.0.join("suite.json"));
    assert_eq!(j["medians"].as_array().map(Vec::len), Some(targets * 4));
    let ratios = j["ratios"].as_array().expect("ratios");
    assert_eq!(ratios.len(), if peers { 4 * 2 * 3 } else { 0 }, "{ratios:?}");
    assert!(ratios.iter().all(|r| r["ratio"].as_f64().is_some_and(|v| v > 0.0)), "{ratios:?}");

    let mut charts = vec!["suite_bytes_per_key.svg"];
    if peers {
        charts.extend(["suite_vs_redis.svg", "suite_vs_valkey.svg", "suite_vs_valkey-io2.svg"]);
    }
    for chart in charts {
        let svg = read(&out.0.join(chart));
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""), "{chart}");
        assert!(svg.trim_end().ends_with("</svg>"), "{chart}");
        assert!(svg.contains("<rect class=\"bar\""), "{chart}");
    }
}

/// Whether perf may count the syscall tracepoints here (it needs root or a
/// permissive `perf_event_paranoid`).
fn perf_can_trace() -> bool {
    on_path("perf")
        && Command::new("perf")
            .args(["stat", "-e", "syscalls:sys_enter_read", "-o", "/dev/null", "true"])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
}

/// `bench/syscalls.sh` at `-P 1`: every request costs the client one read
/// and one write, and the server too, kvik without an extra read that
/// finds the socket empty.
#[test]
fn syscalls_script_counts_one_read_and_one_write_per_request_at_p1() {
    if !perf_can_trace() || !on_path("redis-benchmark") {
        eprintln!("perf with tracepoints or redis-benchmark missing: syscalls.sh not run");
        return;
    }
    let kvik = common::kvik_bin();
    let with_redis = on_path("redis-server");
    let output = Command::new("bash")
        .arg(repo_root().join("bench/syscalls.sh"))
        .arg(&kvik)
        .env("REQUESTS", "3000")
        .env("CLIENTS", "10")
        .env("PIPELINE", "1")
        .env("KEYSPACE", "1000")
        .env("ROUNDS", "1")
        .env("REDIS", if with_redis { "1" } else { "0" })
        .env_remove("TEST")
        .env_remove("SIZE")
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "syscalls.sh failed:\n{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    let mut servers = vec![kvik.display().to_string()];
    if with_redis {
        servers.push("redis-server".to_string());
    }
    for server in &servers {
        let cells = row(&stdout, &format!("1 | {server}"));
        assert_eq!(cells.len(), 11, "{cells:?}");
        assert!(positive(cells[2]), "requests/s of {server}: {cells:?}");
        // Client reads and writes, then the server's; a few extra calls when
        // redis-benchmark connects add thousandths.
        for (what, at) in [("client reads", 4), ("client writes", 5), ("server reads", 8), ("server writes", 9)] {
            let per_request: f64 = cells[at].parse().unwrap_or_else(|e| panic!("{what} {:?}: {e}", cells[at]));
            assert!((0.99..1.05).contains(&per_request), "{what} per request of {server}: {per_request}\n{stdout}");
        }
    }
}

/// `bench/ab.sh` with the same build as A and B: every round runs both,
/// in turns, and the summary gives the medians of the ratios.
#[test]
fn ab_script_measures_both_builds_in_every_round() {
    if !on_path("redis-benchmark") {
        eprintln!("redis-benchmark missing: ab.sh not run");
        return;
    }
    let kvik = common::kvik_bin();
    let output = Command::new("bash")
        .arg(repo_root().join("bench/ab.sh"))
        .arg(&kvik)
        .arg(&kvik)
        .env("TEST", "get")
        .env("REQUESTS", "2000")
        .env("CLIENTS", "5")
        .env("PIPELINE", "4")
        .env("KEYSPACE", "1000")
        .env("ROUNDS", "2")
        .env("PREFILL", "-t set -n 1000 -c 5 -P 4")
        .env_remove("SIZE")
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(output.status.success(), "ab.sh failed:\n{}\n{stdout}", String::from_utf8_lossy(&output.stderr));
    for round in ["1", "2"] {
        let cells = row(&stdout, round);
        assert_eq!(cells.len(), 5, "{cells:?}\n{stdout}");
        assert!(cells[1..3].iter().all(|c| positive(c)), "requests/s in round {round}: {cells:?}");
        assert!(cells[3..].iter().all(|c| c.parse::<u64>().is_ok()), "CPU ticks in round {round}: {cells:?}");
    }
    assert!(stdout.contains("B/A requests/s: median "), "{stdout}");
    assert!(stdout.contains("B ahead in "), "{stdout}");
    assert!(!stdout.lines().any(|l| l.starts_with("| 3 |")), "two rounds only:\n{stdout}");
}
