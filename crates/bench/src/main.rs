//! The `kvik-benchmark` binary: parse, check the server, run the tests, print.
//! The run fails when a test got nothing but error replies.

#![forbid(unsafe_code)]

use std::io::{IsTerminal, Write};
use std::process::ExitCode;
use std::time::Duration;

use kvik_bench::args::{self, Config, Parsed, Wire};
use kvik_bench::driver::{probe_respb, Target};
use kvik_bench::report::{self, HostConfig};
use kvik_bench::runner::run_test;
use kvik_bench::suite;
use kvik_client::{Connection, Options, Value};

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let cfg = match args::parse(&argv) {
        Ok(Parsed::Run(cfg)) => cfg,
        Ok(Parsed::Help) => {
            print!("{}", args::USAGE);
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::Version) => {
            println!("kvik-benchmark {}", env!("CARGO_PKG_VERSION"));
            return ExitCode::SUCCESS;
        }
        Ok(Parsed::WireSizes) => {
            print!("{}", kvik_bench::wire_sizes::markdown());
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("{e}\n\nTry 'kvik-benchmark --help' for the options.");
            return ExitCode::FAILURE;
        }
    };
    match run(&cfg) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}

fn run(cfg: &Config) -> Result<(), String> {
    let host = host_config(cfg)?;
    if host.is_none() {
        eprintln!("WARNING: Could not fetch server CONFIG");
    }
    if cfg.wire == Wire::Respb {
        check_respb(cfg)?;
    }
    let progress = !cfg.quiet && !cfg.csv && !cfg.json && std::io::stderr().is_terminal();
    let tests = suite::tests(cfg);
    let mut out = std::io::stdout().lock();
    if cfg.csv {
        write_out(&mut out, report::CSV_HEADER)?;
    }
    loop {
        let mut only_errors = Vec::new();
        for test in &tests {
            let outcome = run_test(cfg, test, progress)?;
            if outcome.all_errors() {
                only_errors.push(report::all_errors(&outcome));
            } else if cfg.csv && outcome.errors > 0 {
                // The CSV columns are redis-benchmark's; the count goes to stderr.
                eprintln!("{}: {}", outcome.title, report::errors(&outcome));
            }
            let text = if cfg.json {
                report::json(cfg, &outcome)
            } else if cfg.csv {
                report::csv(&outcome)
            } else if cfg.quiet {
                report::quiet(&outcome)
            } else {
                report::full(cfg, host.as_ref(), &outcome)
            };
            write_out(&mut out, &text)?;
        }
        if !only_errors.is_empty() {
            return Err(only_errors.join("\n"));
        }
        if !cfg.loop_forever || tests.is_empty() {
            return Ok(());
        }
    }
}

fn write_out(out: &mut impl Write, text: &str) -> Result<(), String> {
    out.write_all(text.as_bytes()).and_then(|()| out.flush()).map_err(|e| format!("cannot write the report: {e}"))
}

/// Before a `--respb` run: the server must speak RESPB (see [`probe_respb`]).
fn check_respb(cfg: &Config) -> Result<(), String> {
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(probe_respb(&Target::from_config(cfg)?))
}

/// `CONFIG GET save` and `appendonly`, as redis-benchmark shows them. A
/// server that cannot be reached is an error; one that refuses CONFIG is not.
fn host_config(cfg: &Config) -> Result<Option<HostConfig>, String> {
    let mut opts = match &cfg.socket {
        Some(p) => Options::unix(p),
        None => Options::tcp(format!("{}:{}", cfg.host, cfg.port)),
    }
    .with_connect_timeout(Duration::from_secs(5))
    .with_request_timeout(Duration::from_secs(5));
    if let Some(pass) = &cfg.password {
        opts = opts.with_auth(cfg.user.as_deref(), pass);
    }
    if cfg.tls {
        let tls = kvik_client::ClientTls::new(&cfg.tls_options)
            .map_err(|e| format!("Could not create a TLS context: {e}"))?;
        opts = opts.with_tls(tls);
    }
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| e.to_string())?;
    rt.block_on(async {
        let mut conn = Connection::connect(&opts)
            .await
            .map_err(|e| format!("Could not connect to the server at {}: {e}", cfg.server_name()))?;
        let mut get = async |name: &str| match conn.command(&["CONFIG", "GET", name]).await {
            Ok(Value::Array(items)) if items.len() == 2 => match &items[1] {
                Value::Bulk(b) | Value::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
                _ => None,
            },
            _ => None,
        };
        let save = get("save").await;
        let appendonly = get("appendonly").await;
        Ok(save.zip(appendonly).map(|(save, appendonly)| HostConfig { save, appendonly }))
    })
}
