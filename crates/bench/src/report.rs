//! Output formats: redis-benchmark 7.0's full report, `-q` one-liners and
//! `--csv` lines, byte for byte in layout; and `--json`, one object per test.
//! Error replies, which redis-benchmark does not report, add a line to the
//! full report's summary, a count to the `-q` line and `errors` and
//! `first_error` to the JSON object; `--csv` keeps redis-benchmark's columns.

use std::fmt::Write;

use crate::args::{Config, Wire};
use crate::runner::Outcome;

/// The server settings redis-benchmark shows in its header (from `CONFIG GET`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HostConfig {
    pub save: String,
    pub appendonly: String,
}

/// The CSV header line, printed once before the first test.
pub const CSV_HEADER: &str =
    "\"test\",\"rps\",\"avg_latency_ms\",\"min_latency_ms\",\"p50_latency_ms\",\"p95_latency_ms\",\"p99_latency_ms\",\"max_latency_ms\"\n";

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

/// `-q`: `SET: 123456.79 requests per second, p50=0.123 msec`, and
/// `, 5 errors` at the end when there were error replies.
pub fn quiet(o: &Outcome) -> String {
    let mut s =
        format!("{}: {:.2} requests per second, p50={:.3} msec", o.title, o.rps(), ms(o.latency.percentile(50.0)));
    if o.errors > 0 {
        let _ = write!(s, ", {}", count_errors(o.errors));
    }
    s.push('\n');
    s
}

/// `1 error`, `5 errors`.
fn count_errors(n: u64) -> String {
    if n == 1 {
        "1 error".into()
    } else {
        format!("{n} errors")
    }
}

/// `5 errors (first: ERR unknown command ...)`, for a test with error replies.
pub fn errors(o: &Outcome) -> String {
    match &o.first_error {
        Some(text) => format!("{} (first: {})", count_errors(o.errors), printable(text)),
        None => count_errors(o.errors),
    }
}

/// The line on stderr for a test whose every reply was an error.
pub fn all_errors(o: &Outcome) -> String {
    let first = o.first_error.as_deref().map(|t| format!(" (first: {})", printable(t))).unwrap_or_default();
    format!("{}: every reply was an error, {} of {}{first}", o.title, o.errors, o.requests)
}

/// `text` with control characters escaped, so an error reply shows on one line.
fn printable(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// One `--csv` line.
pub fn csv(o: &Outcome) -> String {
    let h = &o.latency;
    format!(
        "\"{}\",\"{:.2}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\",\"{:.3}\"\n",
        o.title,
        o.rps(),
        h.mean() / 1e6,
        ms(h.min()),
        ms(h.percentile(50.0)),
        ms(h.percentile(95.0)),
        ms(h.percentile(99.0)),
        ms(h.max()),
    )
}

/// The full report: header, percentile ladder, cumulative distribution, summary.
pub fn full(cfg: &Config, host: Option<&HostConfig>, o: &Outcome) -> String {
    let p = cfg.precision;
    let h = &o.latency;
    let mut s = String::new();
    let _ = writeln!(s, "====== {} ======", o.title);
    let _ = writeln!(s, "  {} requests completed in {:.2} seconds", o.requests, o.seconds);
    let _ = writeln!(s, "  {} parallel clients", cfg.clients);
    let _ = writeln!(s, "  {} bytes payload", cfg.data_size);
    let _ = writeln!(s, "  keep alive: {}", u8::from(cfg.keepalive));
    if let Some(host) = host {
        let _ = writeln!(s, "  host configuration \"save\": {}", host.save);
        let _ = writeln!(s, "  host configuration \"appendonly\": {}", host.appendonly);
    }
    let _ = writeln!(s, "  multi-thread: {}", if cfg.threads > 0 { "yes" } else { "no" });
    if cfg.threads > 0 {
        let _ = writeln!(s, "  threads: {}", cfg.threads);
    }
    // kvik's additions appear only when they differ from redis-benchmark's fixed settings.
    if cfg.wire != Wire::Resp2 {
        let _ = writeln!(s, "  protocol: {}", cfg.wire.name());
    }
    if cfg.mux > 1 {
        let _ = writeln!(s, "  mux: {} channels per connection, {} connections", cfg.mux, cfg.connections());
    }
    s.push_str("\nLatency by percentile distribution:\n");
    for (pct, v, cum) in h.percentile_ladder() {
        let _ = writeln!(s, "{pct:.3}% <= {:.p$} milliseconds (cumulative count {cum})", ms(v));
    }
    s.push_str("\nCumulative distribution of latencies:\n");
    for (pct, v, cum) in h.cumulative_steps() {
        let _ = writeln!(s, "{pct:.3}% <= {:.p$} milliseconds (cumulative count {cum})", ms(v));
    }
    s.push_str("\nSummary:\n");
    let _ = writeln!(s, "  throughput summary: {:.2} requests per second", o.rps());
    if o.errors > 0 {
        let _ = writeln!(s, "  {}", errors(o));
    }
    s.push_str("  latency summary (msec):\n");
    let _ = writeln!(s, "    {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}", "avg", "min", "p50", "p95", "p99", "max");
    let values = [
        h.mean() / 1e6,
        ms(h.min()),
        ms(h.percentile(50.0)),
        ms(h.percentile(95.0)),
        ms(h.percentile(99.0)),
        ms(h.max()),
    ];
    s.push_str("   ");
    for v in values {
        let _ = write!(s, " {v:>9.p$}");
    }
    s.push('\n');
    s
}

/// A JSON string literal.
fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A JSON number (JSON has no infinity: `null` then).
fn json_num(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "null".into()
    }
}

/// `--json`: one line holding one object.
pub fn json(cfg: &Config, o: &Outcome) -> String {
    let h = &o.latency;
    let lat = |p: f64| json_num(ms(h.percentile(p)), 6);
    format!(
        concat!(
            "{{\"name\":{},\"requests\":{},\"errors\":{},\"seconds\":{},\"rps\":{},",
            "\"latency_ms\":{{\"avg\":{},\"min\":{},\"p50\":{},\"p95\":{},\"p99\":{},\"p99.9\":{},\"max\":{}}},",
            "\"clients\":{},\"connections\":{},\"pipeline\":{},\"protocol\":{},\"mux\":{},\"threads\":{},",
            "\"data_size\":{},\"keepalive\":{},\"first_error\":{}}}\n"
        ),
        json_str(&o.title),
        o.requests,
        o.errors,
        json_num(o.seconds, 6),
        json_num(o.rps(), 2),
        json_num(h.mean() / 1e6, 6),
        json_num(ms(h.min()), 6),
        lat(50.0),
        lat(95.0),
        lat(99.0),
        lat(99.9),
        json_num(ms(h.max()), 6),
        cfg.clients,
        cfg.connections(),
        cfg.pipeline,
        json_str(cfg.wire.name()),
        cfg.mux,
        cfg.threads,
        cfg.data_size,
        cfg.keepalive,
        o.first_error.as_deref().map_or_else(|| "null".into(), json_str),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::histogram::Histogram;

    fn outcome() -> Outcome {
        let mut h = Histogram::new();
        for v in 1..=100u64 {
            h.record(v * 10_000); // 0.01 .. 1.00 ms; percentiles report their bucket's top
        }
        Outcome { title: "SET".into(), requests: 100, errors: 0, first_error: None, seconds: 0.5, latency: h }
    }

    #[test]
    fn quiet_line() {
        assert_eq!(quiet(&outcome()), "SET: 200.00 requests per second, p50=0.502 msec\n");
    }

    #[test]
    fn csv_line_and_header() {
        assert_eq!(csv(&outcome()), "\"SET\",\"200.00\",\"0.505\",\"0.010\",\"0.502\",\"0.950\",\"0.991\",\"1.000\"\n");
        assert!(CSV_HEADER.starts_with("\"test\",\"rps\",\"avg_latency_ms\""));
        let inf = Outcome { seconds: 0.0, ..outcome() };
        assert!(csv(&inf).starts_with("\"SET\",\"inf\","));
    }

    #[test]
    fn full_report_layout() {
        let cfg = Config { clients: 5, ..Config::default() };
        let host = HostConfig { save: "".into(), appendonly: "no".into() };
        let text = full(&cfg, Some(&host), &outcome());
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "====== SET ======");
        assert_eq!(lines[1], "  100 requests completed in 0.50 seconds");
        assert_eq!(lines[2], "  5 parallel clients");
        assert_eq!(lines[3], "  3 bytes payload");
        assert_eq!(lines[4], "  keep alive: 1");
        assert_eq!(lines[5], "  host configuration \"save\": ");
        assert_eq!(lines[6], "  host configuration \"appendonly\": no");
        assert_eq!(lines[7], "  multi-thread: no");
        assert_eq!(lines[8], "");
        assert_eq!(lines[9], "Latency by percentile distribution:");
        assert_eq!(lines[10], "0.000% <= 0.010 milliseconds (cumulative count 1)");
        assert_eq!(lines[11], "50.000% <= 0.502 milliseconds (cumulative count 50)");
        assert!(text.contains(
            "\nCumulative distribution of latencies:\n10.000% <= 0.100 milliseconds (cumulative count 10)\n"
        ));
        let n = lines.len();
        assert_eq!(lines[n - 5], "Summary:");
        assert_eq!(lines[n - 4], "  throughput summary: 200.00 requests per second");
        assert_eq!(lines[n - 3], "  latency summary (msec):");
        assert_eq!(lines[n - 2], "          avg       min       p50       p95       p99       max");
        assert_eq!(lines[n - 1], "        0.505     0.010     0.502     0.950     0.991     1.000");
    }

    #[test]
    fn full_report_names_kvik_settings_only_when_used() {
        let cfg = Config { clients: 200, mux: 100, wire: Wire::Respb, threads: 2, ..Config::default() };
        let text = full(&cfg, None, &outcome());
        assert!(text.contains(
            "  multi-thread: yes\n  threads: 2\n  protocol: respb\n  mux: 100 channels per connection, 2 connections\n"
        ));
        assert!(!text.contains("host configuration"));
        assert!(!full(&Config::default(), None, &outcome()).contains("protocol:"));
    }

    #[test]
    fn json_object_has_every_field() {
        let cfg = Config { pipeline: 16, ..Config::default() };
        let o = Outcome { title: "say \"hi\"\n".into(), ..outcome() };
        let line = json(&cfg, &o);
        assert!(line.ends_with("}\n") && !line[..line.len() - 1].contains('\n'));
        assert!(line.starts_with(
            "{\"name\":\"say \\\"hi\\\"\\n\",\"requests\":100,\"errors\":0,\"seconds\":0.500000,\"rps\":200.00,"
        ));
        assert!(line.contains("\"p99.9\":1.000000"));
        assert!(line.contains("\"pipeline\":16,\"protocol\":\"resp2\",\"mux\":1"));
        assert!(line.ends_with(",\"keepalive\":true,\"first_error\":null}\n"), "{line}");
        let inf = Outcome { seconds: 0.0, ..outcome() };
        assert!(json(&cfg, &inf).contains("\"rps\":null"));
    }

    fn failed() -> Outcome {
        Outcome { errors: 100, first_error: Some("ERR unknown command 'X'\r\n".into()), ..outcome() }
    }

    #[test]
    fn error_replies_are_reported_in_every_format_but_csv() {
        let text = full(&Config::default(), None, &failed());
        let lines: Vec<&str> = text.lines().collect();
        let n = lines.len();
        assert_eq!(lines[n - 5], "  throughput summary: 200.00 requests per second");
        assert_eq!(lines[n - 4], "  100 errors (first: ERR unknown command 'X'\\r\\n)");
        assert!(!full(&Config::default(), None, &outcome()).contains("error"));
        assert_eq!(quiet(&failed()), "SET: 200.00 requests per second, p50=0.502 msec, 100 errors\n");
        let one = Outcome { errors: 1, first_error: None, ..outcome() };
        assert!(quiet(&one).ends_with(", 1 error\n"));
        assert_eq!(errors(&one), "1 error");
        let line = json(&Config::default(), &failed());
        assert!(line.contains("\"requests\":100,\"errors\":100,"), "{line}");
        assert!(line.ends_with(",\"first_error\":\"ERR unknown command 'X'\\r\\n\"}\n"), "{line}");
        assert_eq!(csv(&failed()), csv(&outcome()));
    }

    #[test]
    fn a_test_of_errors_only_is_named_with_its_first_error() {
        assert_eq!(
            all_errors(&failed()),
            "SET: every reply was an error, 100 of 100 (first: ERR unknown command 'X'\\r\\n)"
        );
        let bare = Outcome { first_error: None, ..failed() };
        assert_eq!(all_errors(&bare), "SET: every reply was an error, 100 of 100");
    }
}
