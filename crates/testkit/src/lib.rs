//! Test support shared by kvik's crates: a kvik-server from this workspace
//! or Debian's redis-server as a child process on a free loopback port,
//! killed when dropped, so every crate's integration tests start servers
//! the same way.
//!
//! The kvik-server binary is `KVIK_SERVER_BIN`, or the one cargo built next
//! to the running test (`cargo test --workspace` builds it; a crate tested
//! alone needs `cargo build -p kvik-server` first). Without redis-server
//! installed, the redis halves of tests are skipped, except under CI
//! (`CI` set), where that is a failure.
//!
//! Every server gets a working directory of its own (`--dir`, unless the
//! arguments name one), removed when it is dropped: a `SAVE` or `SHUTDOWN
//! SAVE` in one test must not leave a `dump.rdb` that the next server
//! started in the crate's directory loads.

pub mod pki;

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
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
    /// The `--dir` made for this server, removed when it is dropped.
    scratch_dir: Option<PathBuf>,
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        if let Some(dir) = self.scratch_dir.take() {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// A fresh, empty directory, removed with everything in it when dropped:
/// the working directory of a server a test starts, so that the snapshot
/// it saves on shutdown (save points are on by default, as in Redis) lands
/// nowhere another server would load it.
#[derive(Debug)]
pub struct ScratchDir(PathBuf);

impl ScratchDir {
    /// A new directory, `label` in its name.
    pub fn new(label: &str) -> ScratchDir {
        ScratchDir(scratch_dir(label))
    }

    /// Where it is.
    pub fn path(&self) -> &std::path::Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh, empty directory for one server.
fn scratch_dir(label: &str) -> PathBuf {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let dir = std::env::temp_dir().join(format!("kvik-testkit-{}-{label}-{n}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory for the server");
    dir
}

impl Server {
    /// `127.0.0.1:<port>`.
    pub fn addr(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// The process id (0 once stopped), to read its memory use from `/proc`.
    pub fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, Child::id)
    }

    /// Kill the process and wait for it.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Wait up to ten seconds for the process to exit by itself (after a
    /// `SHUTDOWN`); its status, or `None` when it did not exit.
    pub fn wait_for_exit(&mut self) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let child = self.child.as_mut()?;
            if let Ok(Some(status)) = child.try_wait() {
                self.child = None;
                return Some(status);
            }
            thread::sleep(Duration::from_millis(20));
        }
        None
    }

    /// Send `signal` (a name `kill` knows: `TERM`, `INT`) and wait for the
    /// process to exit, as [`Server::wait_for_exit`].
    pub fn signal_and_wait(&mut self, signal: &str) -> Option<std::process::ExitStatus> {
        let pid = self.child.as_ref()?.id().to_string();
        let sent = Command::new("kill").args([format!("-{signal}"), pid]).status().ok()?;
        assert!(sent.success(), "kill -{signal} failed");
        self.wait_for_exit()
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
                    // Something listens there; it must be this child, not a
                    // server another test started on a port it was also given
                    // (this one then failed to bind, and may not have exited yet).
                    if listens_on(child.id(), self.port) {
                        return true;
                    }
                    break;
                }
            }
            thread::sleep(Duration::from_millis(20));
        }
        self.stop();
        false
    }
}

/// Whether process `pid` holds the listening socket on `port`, read from
/// `/proc` (the socket inodes among its open files against the kernel's
/// TCP tables), so a test never mistakes a server another test started on
/// the same port for its own. Where `/proc` cannot tell, the answer is yes.
pub fn listens_on(pid: u32, port: u16) -> bool {
    let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else { return true };
    let inodes: Vec<String> = fds
        .filter_map(|e| std::fs::read_link(e.ok()?.path()).ok())
        .filter_map(|link| Some(link.to_str()?.strip_prefix("socket:[")?.strip_suffix(']')?.to_string()))
        .collect();
    ["/proc/net/tcp", "/proc/net/tcp6"].iter().filter_map(|t| std::fs::read_to_string(t).ok()).any(|table| {
        table.lines().skip(1).any(|line| {
            let cols: Vec<&str> = line.split_whitespace().collect();
            let local_port =
                cols.get(1).and_then(|a| a.rsplit(':').next()).and_then(|p| u16::from_str_radix(p, 16).ok());
            // State 0A is LISTEN; column 9 is the socket's inode.
            cols.len() > 9 && cols[3] == "0A" && local_port == Some(port) && inodes.iter().any(|i| i == cols[9])
        })
    })
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

/// Start `program` with `args` (`{port}` stands for the port it is given)
/// on a free loopback port, and wait until it listens there.
pub fn start(label: &'static str, program: PathBuf, mut args: Vec<String>) -> Server {
    let mut scratch = None;
    if !args.iter().any(|a| a == "--dir") {
        let dir = scratch_dir(label);
        args.extend(["--dir".to_string(), dir.display().to_string()]);
        scratch = Some(dir);
    }
    // Another process may take the port between picking and binding: retry.
    for _ in 0..3 {
        let mut server = Server {
            child: None,
            program: program.clone(),
            args: args.clone(),
            port: free_port(),
            label,
            scratch_dir: scratch.take(),
        };
        if server.spawn_and_wait() {
            return server;
        }
        scratch = server.scratch_dir.take();
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

/// Start kvik-server with extra options; without a `--save` among them it
/// has no save points, as [`start_redis`]'s server.
pub fn start_kvik(extra: &[&str]) -> Server {
    let mut args: Vec<String> = ["--bind", "127.0.0.1", "--port", "{port}"].iter().map(|s| s.to_string()).collect();
    if !extra.contains(&"--save") {
        args.extend(["--save".to_string(), String::new()]);
    }
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

/// A temporary path for a unix socket, unique per call: `<tag>` names the
/// test, the process id keeps parallel test binaries apart.
pub fn socket_path(tag: &str) -> PathBuf {
    static N: Mutex<u32> = Mutex::new(0);
    let mut n = N.lock().unwrap_or_else(|e| e.into_inner());
    *n += 1;
    std::env::temp_dir().join(format!("kvik-test-{}-{tag}-{n}.sock", std::process::id()))
}
