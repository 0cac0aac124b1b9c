//! A kvik-server on a free loopback port for the benchmark's tests, the
//! `kvik-benchmark` binary to run against it, and a client to look at the
//! server's data afterwards.

#![allow(dead_code)]

use std::process::{Command, Output, Stdio};
use std::time::Duration;

use kvik_client::{Connection, Options, Value};
#[allow(unused_imports)]
pub use kvik_testkit::{free_port, kvik_bin};

/// A kvik-server child process (killed when dropped) and a connection to
/// look at its data.
pub struct Server {
    /// Keeps the process alive as long as the test holds this.
    _process: kvik_testkit::Server,
    pub port: u16,
    rt: tokio::runtime::Runtime,
    conn: Option<Connection>,
}

/// Start kvik-server with `extra` options on a free port.
pub fn start(extra: &[&str]) -> Server {
    let process = kvik_testkit::start_kvik(extra);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    Server { port: process.port, _process: process, rt, conn: None }
}

impl Server {
    /// Run kvik-benchmark against this server with `args` (after `-p <port>`).
    pub fn bench(&self, args: &[&str]) -> Output {
        let port = self.port.to_string();
        let mut all = vec!["-p", port.as_str()];
        all.extend_from_slice(args);
        run_bench(&all)
    }

    /// Like [`bench`](Self::bench), but the run must succeed; its stdout.
    pub fn bench_ok(&self, args: &[&str]) -> String {
        let out = self.bench(args);
        assert!(
            out.status.success(),
            "kvik-benchmark {args:?} failed: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// Send one command with a plain RESP2 connection and return the reply.
    pub fn cmd(&mut self, args: &[&str]) -> Value {
        let opts = Options::tcp(format!("127.0.0.1:{}", self.port)).with_request_timeout(Duration::from_secs(10));
        let Server { rt, conn, .. } = self;
        rt.block_on(async {
            if conn.is_none() {
                *conn = Some(Connection::connect(&opts).await.expect("connect"));
            }
            conn.as_mut().unwrap().command(args).await.expect("command")
        })
    }

    /// An integer reply.
    pub fn int(&mut self, args: &[&str]) -> i64 {
        match self.cmd(args) {
            Value::Integer(n) => n,
            other => panic!("{args:?} answered {other:?}"),
        }
    }

    /// The number a string reply holds (`GET counter`).
    pub fn get_num(&mut self, key: &str) -> i64 {
        match self.cmd(&["GET", key]) {
            kvik_client::Value::Bulk(b) => String::from_utf8_lossy(&b).parse().expect("a number"),
            other => panic!("GET {key} answered {other:?}"),
        }
    }

    /// The bulk strings of an array reply.
    pub fn strings(&mut self, args: &[&str]) -> Vec<String> {
        match self.cmd(args) {
            Value::Array(items) | Value::Set(items) => items
                .into_iter()
                .map(|v| match v {
                    Value::Bulk(b) => String::from_utf8(b).unwrap(),
                    other => panic!("{other:?}"),
                })
                .collect(),
            other => panic!("{args:?} answered {other:?}"),
        }
    }
}

/// Run the kvik-benchmark binary with `args`, killed after 60 s (coreutils
/// `timeout`) so a hung run fails the test instead of hanging it.
pub fn run_bench(args: &[&str]) -> Output {
    Command::new("timeout")
        .arg("60")
        .arg(env!("CARGO_BIN_EXE_kvik-benchmark"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run kvik-benchmark")
}

/// The three ways of talking to the server every test is run in.
pub const MODES: [&[&str]; 3] = [&[], &["--respb"], &["--mux", "4"]];
