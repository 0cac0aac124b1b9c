//! A kvik-server on a free loopback port for the benchmark's tests, the
//! `kvik-benchmark` binary to run against it, and a client to look at the
//! server's data afterwards.

#![allow(dead_code)]

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

use kvik_client::{Connection, Options, Value};

/// How long the server may take to start listening.
const STARTUP: Duration = Duration::from_secs(10);

/// A kvik-server child process, killed when dropped.
pub struct Server {
    child: Child,
    pub port: u16,
    rt: tokio::runtime::Runtime,
    conn: Option<Connection>,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A port nothing listens on now, never handed out twice in this process.
pub fn free_port() -> u16 {
    static GIVEN: Mutex<Vec<u16>> = Mutex::new(Vec::new());
    loop {
        let port = TcpListener::bind("127.0.0.1:0").and_then(|l| l.local_addr()).expect("ephemeral port").port();
        let mut given = GIVEN.lock().unwrap_or_else(|e| e.into_inner());
        if !given.contains(&port) {
            given.push(port);
            return port;
        }
    }
}

/// The kvik-server binary: `KVIK_SERVER_BIN`, or the one cargo built next to
/// this test (run `cargo build -p kvik-server` first when testing this crate alone).
pub fn kvik_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("KVIK_SERVER_BIN") {
        return PathBuf::from(p);
    }
    let exe = std::env::current_exe().expect("test executable path");
    let bin = exe.parent().and_then(|deps| deps.parent()).map(|debug| debug.join("kvik-server"));
    match bin {
        Some(bin) if bin.exists() => bin,
        _ => panic!("kvik-server binary not found next to {}: run `cargo build -p kvik-server` first", exe.display()),
    }
}

/// Start kvik-server with `extra` options on a free port.
pub fn start(extra: &[&str]) -> Server {
    for _ in 0..3 {
        let port = free_port();
        let mut args = vec!["--bind".to_string(), "127.0.0.1".into(), "--port".into(), port.to_string()];
        args.extend(extra.iter().map(|s| s.to_string()));
        let mut child = Command::new(kvik_bin())
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start kvik-server");
        let deadline = Instant::now() + STARTUP;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                break;
            }
            if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
                return Server { child, port, rt, conn: None };
            }
            thread::sleep(Duration::from_millis(20));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
    panic!("kvik-server did not start listening");
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
