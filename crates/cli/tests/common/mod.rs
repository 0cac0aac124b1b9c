//! Servers and programs for kvik-cli's integration tests: kvik-server from
//! this workspace and Debian's redis-server, each on a free loopback port,
//! killed when dropped; kvik-cli and redis-cli run as child processes.

#![allow(dead_code)]

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::thread;
use std::time::{Duration, Instant};

/// How long a server may take to start listening.
const STARTUP: Duration = Duration::from_secs(10);

/// A server child process on a loopback port.
pub struct Server {
    child: Option<Child>,
    program: PathBuf,
    args: Vec<String>,
    /// The port it listens on (kept across [`Server::restart`]).
    pub port: u16,
    /// Which server, for messages.
    pub label: &'static str,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

impl Server {
    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Kill the process and wait for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Start the same server again on the same port.
    pub fn restart(&mut self) {
        self.stop();
        let deadline = Instant::now() + STARTUP;
        // The port may take a moment to be free again.
        while Instant::now() < deadline {
            if self.spawn_and_wait() {
                return;
            }
            thread::sleep(Duration::from_millis(50));
        }
        panic!("{} did not restart on port {}", self.label, self.port);
    }

    fn spawn_and_wait(&mut self) -> bool {
        let args: Vec<String> = self.args.iter().map(|a| a.replace("{port}", &self.port.to_string())).collect();
        let child = Command::new(&self.program)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", self.program.display()));
        self.child = Some(child);
        let deadline = Instant::now() + STARTUP;
        while Instant::now() < deadline {
            let Some(child) = self.child.as_mut() else { return false };
            if let Ok(Some(_)) = child.try_wait() {
                self.child = None;
                return false;
            }
            // A connect to a loopback port in the ephemeral range can meet
            // itself (TCP simultaneous open) while nothing listens yet: only
            // a connection to another socket means the server is up.
            if let Ok(s) = TcpStream::connect(("127.0.0.1", self.port)) {
                if s.local_addr().ok() != s.peer_addr().ok() {
                    return true;
                }
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        false
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

fn start(label: &'static str, program: PathBuf, args: Vec<String>) -> Server {
    // Another process may take the port between picking and binding: retry.
    for _ in 0..3 {
        let mut server = Server { child: None, program: program.clone(), args: args.clone(), port: free_port(), label };
        if server.spawn_and_wait() {
            return server;
        }
    }
    panic!("{label} did not start listening");
}

/// The kvik-server binary: `KVIK_SERVER_BIN`, or the one cargo built next to
/// this test (`cargo test --workspace` builds it; alone, run
/// `cargo build -p kvik-server` first).
pub fn kvik_bin() -> PathBuf {
    if let Some(p) = std::env::var_os("KVIK_SERVER_BIN") {
        return PathBuf::from(p);
    }
    // The test runs from <target>/debug/deps/; the binary is in <target>/debug/.
    let exe = std::env::current_exe().expect("test executable path");
    let bin = exe.parent().and_then(|deps| deps.parent()).map(|debug| debug.join("kvik-server"));
    match bin {
        Some(bin) if bin.exists() => bin,
        _ => panic!("kvik-server binary not found next to {}: run `cargo build -p kvik-server` first", exe.display()),
    }
}

/// Start kvik-server with extra options.
pub fn start_kvik(extra: &[&str]) -> Server {
    let mut args: Vec<String> = ["--bind", "127.0.0.1", "--port", "{port}"].iter().map(|s| s.to_string()).collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    start("kvik", kvik_bin(), args)
}

/// Start redis-server (no persistence), or `None` when it is not installed
/// and this is not CI (under CI a missing redis-server is a failure).
pub fn start_redis(extra: &[&str]) -> Option<Server> {
    let installed = Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !installed {
        assert!(std::env::var_os("CI").is_none(), "redis-server is required under CI");
        eprintln!("redis-server not installed: skipping the redis half of this test");
        return None;
    }
    let mut args: Vec<String> =
        ["--bind", "127.0.0.1", "--port", "{port}", "--save", "", "--appendonly", "no", "--daemonize", "no"]
            .iter()
            .map(|s| s.to_string())
            .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    Some(start("redis", PathBuf::from("redis-server"), args))
}

/// Whether redis-cli and redis-server are installed; under CI they must be.
pub fn have_redis() -> bool {
    let ok = ["redis-server", "redis-cli"].iter().all(|p| {
        Command::new(p).arg("--version").stdout(Stdio::null()).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
    });
    if !ok {
        assert!(std::env::var_os("CI").is_none(), "redis-server and redis-cli are required under CI");
        eprintln!("redis-server or redis-cli not installed: skipping");
    }
    ok
}

/// Run `program` with `args`, feeding `stdin`, and return what it printed.
fn run(program: &str, args: &[&[u8]], stdin: &[u8]) -> Output {
    use std::os::unix::ffi::OsStrExt;
    let mut child = Command::new(program)
        .args(args.iter().map(|a| std::ffi::OsStr::from_bytes(a)))
        .env_remove("REDISCLI_AUTH")
        .env_remove("KVIKCLI_AUTH")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start {program}: {e}"));
    let mut input = child.stdin.take().expect("stdin");
    let data = stdin.to_vec();
    let feeder = thread::spawn(move || {
        let _ = input.write_all(&data);
    });
    let out = wait_bounded(child, program);
    let _ = feeder.join();
    out
}

/// Wait for a child at most a minute, so a hung run fails the test.
fn wait_bounded(child: Child, program: &str) -> Output {
    let (tx, rx) = std::sync::mpsc::channel();
    let id = child.id();
    thread::spawn(move || {
        let _ = tx.send(child.wait_with_output());
    });
    match rx.recv_timeout(Duration::from_secs(60)) {
        Ok(out) => out.expect("child output"),
        Err(_) => {
            let _ = Command::new("kill").arg("-9").arg(id.to_string()).status();
            panic!("{program} did not finish within a minute");
        }
    }
}

/// Run kvik-cli against `server` with `args` (options and command).
pub fn kvik_cli(server: &Server, args: &[&[u8]], stdin: &[u8]) -> Output {
    let port = server.port.to_string();
    let mut all: Vec<&[u8]> = vec![b"-p", port.as_bytes()];
    all.extend_from_slice(args);
    run(env!("CARGO_BIN_EXE_kvik-cli"), &all, stdin)
}

/// Run kvik-cli with `args` alone (no server options).
pub fn kvik_cli_plain(args: &[&[u8]], stdin: &[u8]) -> Output {
    run(env!("CARGO_BIN_EXE_kvik-cli"), args, stdin)
}

/// Run redis-cli against `server` with `args`.
pub fn redis_cli(server: &Server, args: &[&[u8]], stdin: &[u8]) -> Output {
    let port = server.port.to_string();
    let mut all: Vec<&[u8]> = vec![b"-p", port.as_bytes()];
    all.extend_from_slice(args);
    run("redis-cli", &all, stdin)
}

/// Bytes for messages.
pub fn show(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Run redis-cli with `args` alone.
pub fn run_redis_cli_plain(args: &[&[u8]]) -> Output {
    run("redis-cli", args, b"")
}
