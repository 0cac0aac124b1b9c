//! kvik-benchmark's output formats and failures, against a real kvik-server.

mod common;

use common::{run_bench, start};

#[test]
fn quiet_lines_name_each_test_with_rps_and_p50() {
    let s = start(&[]);
    let out = s.bench_ok(&["-t", "ping,set", "-n", "200", "-c", "2", "-q"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 3, "{out}");
    for (line, title) in lines.iter().zip(["PING_INLINE", "PING_MBULK", "SET"]) {
        let rest = line.strip_prefix(&format!("{title}: ")).unwrap_or_else(|| panic!("{line}"));
        let (rps, p50) = rest.split_once(" requests per second, p50=").unwrap();
        assert!(rps.parse::<f64>().unwrap() > 0.0, "{line}");
        assert!(p50.strip_suffix(" msec").unwrap().parse::<f64>().unwrap() >= 0.0, "{line}");
    }
}

#[test]
fn no_progress_line_when_stderr_is_not_a_terminal() {
    let s = start(&[]);
    let out = s.bench(&["-t", "get", "-n", "3000", "-c", "2"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stderr), "", "stderr is a pipe here");
}

#[test]
fn a_terminal_gets_a_live_progress_line() {
    // util-linux `script` runs the benchmark on a pseudo-terminal.
    if std::process::Command::new("script").arg("--version").output().is_err() {
        eprintln!("`script` not installed: skipping");
        return;
    }
    let s = start(&[]);
    let bin = env!("CARGO_BIN_EXE_kvik-benchmark");
    // Enough requests to take well over the 250 ms between redraws.
    let cmd = format!("timeout 60 {bin} -p {} -t incr -n 40000 -c 4", s.port);
    let out = std::process::Command::new("script").args(["-qefc", &cmd, "/dev/null"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let screen = String::from_utf8_lossy(&out.stdout);
    let progress = screen.split('\r').find(|part| part.starts_with("INCR: rps=")).unwrap_or_else(|| panic!("{screen}"));
    assert!(progress.contains(" (overall: ") && progress.contains(") avg_msec="), "{progress}");
    assert!(screen.contains("====== INCR ======"), "{screen}");
}

#[test]
fn csv_has_the_redis_benchmark_header_and_eight_fields() {
    let s = start(&[]);
    let out = s.bench_ok(&["-t", "get,lrange_100", "-n", "100", "-c", "2", "--csv"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        r#""test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms""#
    );
    let titles: Vec<&str> = lines[1..].iter().map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(titles, [r#""GET""#, r#""LPUSH (needed to benchmark LRANGE)""#, r#""LRANGE_100 (first 100 elements)""#]);
    for line in &lines[1..] {
        let fields: Vec<f64> = line.split("\",\"").skip(1).map(|f| f.trim_matches('"').parse().unwrap()).collect();
        assert_eq!(fields.len(), 7, "{line}");
        // min <= p50 <= p95 <= p99 <= max
        assert!(
            fields[2] <= fields[3] && fields[3] <= fields[4] && fields[4] <= fields[5] && fields[5] <= fields[6],
            "{line}"
        );
    }
}

#[test]
fn json_objects_carry_the_run_settings() {
    let s = start(&[]);
    let out = s.bench_ok(&["-t", "set", "-n", "300", "-c", "10", "--mux", "5", "-P", "2", "--json"]);
    let o: serde_json::Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(o["name"], "SET");
    assert_eq!(o["requests"], 300);
    assert_eq!((o["clients"].as_u64(), o["connections"].as_u64(), o["mux"].as_u64()), (Some(10), Some(2), Some(5)));
    assert_eq!((o["pipeline"].as_u64(), o["protocol"].as_str()), (Some(2), Some("respb")));
    assert!(o["seconds"].as_f64().unwrap() > 0.0 && o["rps"].as_f64().unwrap() > 0.0);
    let lat = &o["latency_ms"];
    let keys = ["min", "p50", "p95", "p99", "p99.9", "max"];
    let values: Vec<f64> = keys.iter().map(|k| lat[k].as_f64().unwrap()).collect();
    assert!(values.windows(2).all(|w| w[0] <= w[1]), "{lat}");
    assert!(lat["avg"].as_f64().unwrap() > 0.0);
}

#[test]
fn the_full_report_mirrors_redis_benchmark() {
    let s = start(&[]);
    let out = s.bench_ok(&["-t", "get", "-n", "200", "-c", "4"]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "====== GET ======");
    assert!(lines[1].starts_with("  200 requests completed in "), "{out}");
    assert_eq!(lines[2], "  4 parallel clients");
    assert_eq!(lines[3], "  3 bytes payload");
    assert_eq!(lines[4], "  keep alive: 1");
    assert!(out.contains("\nLatency by percentile distribution:\n0.000% <= "), "{out}");
    assert!(out.contains("\n100.000% <= "), "{out}");
    assert!(out.contains("\nCumulative distribution of latencies:\n"), "{out}");
    assert!(out.contains("\nSummary:\n  throughput summary: "), "{out}");
    assert!(
        out.contains("  latency summary (msec):\n          avg       min       p50       p95       p99       max\n")
    );
}

#[test]
fn bad_options_and_unreachable_servers_fail() {
    let out = run_bench(&["--no-such-option"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Invalid option \"--no-such-option\""));
    let out = run_bench(&["-c", "many"]);
    assert_eq!(out.status.code(), Some(1));
    let port = common::free_port().to_string();
    let out = run_bench(&["-p", &port, "-n", "10", "-q"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Could not connect to the server at 127.0.0.1:"));
    let help = run_bench(&["--help"]);
    assert!(help.status.success() && String::from_utf8_lossy(&help.stdout).contains("--mux <n>"));
}

#[test]
fn unix_sockets_work() {
    let path = std::env::temp_dir().join(format!("kvik-bench-{}.sock", std::process::id()));
    let path_s = path.to_str().unwrap();
    let mut s = start(&["--unixsocket", path_s]);
    for mode in [&[][..], &["--respb"]] {
        let mut args = vec!["-s", path_s, "-t", "rpush", "-n", "50", "-q"];
        args.extend_from_slice(mode);
        let out = common::run_bench(&args);
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(s.int(&["LLEN", "mylist"]), 100);
    let _ = std::fs::remove_file(&path);
}
