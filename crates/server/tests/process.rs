//! The server as a process among others: its log (format, levels, file,
//! warnings), its pid file, daemonizing, telling systemd it is ready, the
//! out-of-memory score, and the options that are kept without effect.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::{call_text, connect, free_port, read_until};

const KVIK: &str = env!("CARGO_BIN_EXE_kvik-server");

/// A fresh directory for one test's files.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kvik-process-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

/// Wait until `ready` holds, for at most ten seconds.
fn wait_for(what: &str, mut ready: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        thread::sleep(Duration::from_millis(20));
    }
}

/// A kvik-server child on `port`, killed on drop.
struct Child {
    child: std::process::Child,
    port: u16,
    /// Its working directory (the default `dir`), removed after it.
    _cwd: kvik_testkit::ScratchDir,
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Start kvik on `port` with `args`, a configuration file first if the
/// first one names one.
fn start(port: u16, args: &[&str], env: &[(&str, &Path)]) -> Child {
    let mut command = Command::new(KVIK);
    let (file, flags) = match args.split_first() {
        Some((first, rest)) if !first.starts_with("--") => (Some(*first), rest),
        _ => (None, args),
    };
    command.args(file).args(["--bind", "127.0.0.1", "--port", &port.to_string()]).args(flags);
    for (name, value) in env {
        command.env(name, value);
    }
    let cwd = kvik_testkit::ScratchDir::new("process");
    command.current_dir(cwd.path());
    let child = command.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null()).spawn().expect("start");
    // Its own listening socket, not another test's server that took the port.
    let pid = child.id();
    wait_for("the server to listen", || {
        TcpStream::connect(("127.0.0.1", port)).is_ok() && kvik_testkit::listens_on(pid, port)
    });
    Child { child, port, _cwd: cwd }
}

/// Stop the server with SHUTDOWN and wait for it to exit.
fn shutdown(mut server: Child) {
    let mut s = connect(server.port);
    s.write_all(b"SHUTDOWN\r\n").expect("send");
    let _ = read_until(&mut s, |_| false);
    wait_for("the server to exit", || server.child.try_wait().is_ok_and(|s| s.is_some()));
}

/// Whether `line` has Redis's log line shape: `pid:M dd Mon yyyy hh:mm:ss.mmm <mark> text`.
fn redis_shaped(line: &str) -> bool {
    let Some((pid, rest)) = line.split_once(":M ") else { return false };
    let words: Vec<&str> = rest.splitn(6, ' ').collect();
    let [day, month, year, time, mark, text] = words[..] else { return false };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let time_ok =
        time.len() == 12 && time.as_bytes()[2] == b':' && time.as_bytes()[5] == b':' && time.as_bytes()[8] == b'.';
    !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && digits(day, 2)
        && ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"].contains(&month)
        && digits(year, 4)
        && time_ok
        && [".", "-", "*", "#"].contains(&mark)
        && !text.is_empty()
}

#[test]
fn the_log_has_redis_lines_levels_and_warnings() {
    let dir = temp_dir("log");
    let log = dir.join("kvik.log");
    let port = free_port();
    let server = start(port, &["--logfile", log.to_str().unwrap_or(""), "--activerehashing", "no"], &[]);
    let mut c = connect(port);
    // A warning: an HTTP request sent to the port.
    let mut http = connect(port);
    http.write_all(b"POST / HTTP/1.1\r\n").expect("send");
    assert!(read_until(&mut http, |_| false).closed);
    // Notices stop once the level is raised.
    assert_eq!(call_text(&mut c, &["CONFIG", "SET", "loglevel", "warning"]), b"+OK\r\n");
    shutdown(server);
    let text = std::fs::read_to_string(&log).expect("the log file");
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines.iter().all(|l| redis_shaped(l)), "{text}");
    assert!(lines.iter().any(|l| l.ends_with(" * Ready to accept connections")), "{text}");
    assert!(lines.iter().any(|l| l.contains(" # Possible SECURITY ATTACK detected.")), "{text}");
    assert!(text.contains("Option 'activerehashing' is kept but has no effect in kvik"), "{text}");
    assert!(!text.contains("shut down, bye"), "a notice after loglevel warning: {text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_client_closed_for_its_output_buffer_is_logged() {
    let dir = temp_dir("obuf");
    let log = dir.join("kvik.log");
    let port = free_port();
    let server =
        start(port, &["--logfile", log.to_str().unwrap_or(""), "--client-output-buffer-limit", "normal 1mb 0 0"], &[]);
    let mut c = connect(port);
    let value = "x".repeat(600_000);
    assert_eq!(call_text(&mut c, &["SET", "big", &value]), b"+OK\r\n");
    // Two replies of 600 KB wait for one write: over the 1 MB hard limit.
    c.write_all(b"GET big\r\nGET big\r\nGET big\r\n").expect("send");
    assert!(read_until(&mut c, |_| false).closed, "closed at the hard limit");
    shutdown(server);
    let text = std::fs::read_to_string(&log).expect("the log file");
    assert!(text.contains(" # Client addr=127.0.0.1:"), "{text}");
    assert!(text.contains("closed for overcoming of output buffer limits."), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_pid_file_holds_the_pid_while_the_server_runs() {
    let dir = temp_dir("pid");
    let pidfile = dir.join("kvik.pid");
    let port = free_port();
    let server = start(port, &["--pidfile", pidfile.to_str().unwrap_or("")], &[]);
    let written = std::fs::read_to_string(&pidfile).expect("the pid file");
    assert_eq!(written, format!("{}\n", server.child.id()));
    shutdown(server);
    assert!(!pidfile.exists(), "removed at shutdown");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn daemonize_detaches_and_keeps_serving() {
    let dir = temp_dir("daemon");
    let (pidfile, log) = (dir.join("kvik.pid"), dir.join("kvik.log"));
    let port = free_port();
    let status = Command::new(KVIK)
        .args(["--bind", "127.0.0.1", "--port", &port.to_string(), "--daemonize", "yes"])
        .args(["--pidfile", pidfile.to_str().unwrap_or(""), "--logfile", log.to_str().unwrap_or("")])
        .args(["--dir", dir.to_str().unwrap_or("")])
        .stdin(Stdio::null())
        .status()
        .expect("run kvik-server");
    assert!(status.success(), "the parent exits 0 at once");
    wait_for("the daemon to listen", || TcpStream::connect(("127.0.0.1", port)).is_ok());
    let pid: u32 = std::fs::read_to_string(&pidfile).expect("pid file").trim().parse().expect("a pid");
    let mut c = connect(port);
    assert_eq!(call_text(&mut c, &["CONFIG", "GET", "daemonize"]), b"*2\r\n$9\r\ndaemonize\r\n$3\r\nyes\r\n");
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("the daemon's stat");
    // Fields after the name: state, parent, group, session; a daemon leads its session.
    let fields: Vec<&str> = stat.rsplit_once(") ").map(|(_, rest)| rest.split(' ').collect()).unwrap_or_default();
    assert_eq!(fields.get(3).copied(), Some(pid.to_string().as_str()), "a session of its own: {stat}");
    c.write_all(b"SHUTDOWN\r\n").expect("send");
    let _ = read_until(&mut c, |_| false);
    wait_for("the daemon to exit", || !Path::new(&format!("/proc/{pid}")).exists() || !pidfile.exists());
    let text = std::fs::read_to_string(&log).expect("the log");
    assert!(text.contains("Ready to accept connections"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn supervised_systemd_is_told_ready_and_stopping() {
    let dir = temp_dir("notify");
    let socket_path = dir.join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).expect("bind the notify socket");
    socket.set_read_timeout(Some(Duration::from_secs(10))).expect("timeout");
    let port = free_port();
    let server = start(port, &["--supervised", "systemd"], &[("NOTIFY_SOCKET", &socket_path)]);
    let mut buf = [0u8; 512];
    let n = socket.recv(&mut buf).expect("READY from kvik");
    assert!(String::from_utf8_lossy(&buf[..n]).contains("READY=1\n"));
    shutdown(server);
    let n = socket.recv(&mut buf).expect("STOPPING from kvik");
    assert_eq!(&buf[..n], b"STOPPING=1\n");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The `oom_score_adj` of process `pid`.
fn oom_score(pid: u32) -> i64 {
    std::fs::read_to_string(format!("/proc/{pid}/oom_score_adj")).expect("oom_score_adj").trim().parse().expect("n")
}

#[test]
fn oom_score_adj_sets_the_kernel_score() {
    let base = oom_score(std::process::id());
    let port = free_port();
    let server = start(port, &["--oom-score-adj", "absolute", "--oom-score-adj-values", "300 0 0"], &[]);
    let pid = server.child.id();
    assert_eq!(oom_score(pid), 300);
    let mut c = connect(port);
    assert_eq!(
        call_text(&mut c, &["CONFIG", "SET", "oom-score-adj", "relative", "oom-score-adj-values", "5 0 0"]),
        b"+OK\r\n"
    );
    assert_eq!(oom_score(pid), (base + 5).clamp(-1000, 1000));
    assert_eq!(call_text(&mut c, &["CONFIG", "SET", "oom-score-adj", "no"]), b"+OK\r\n");
    assert_eq!(oom_score(pid), base, "back to the score it started with");
    let bad = call_text(&mut c, &["CONFIG", "SET", "oom-score-adj-values", "1 2"]);
    assert!(bad.starts_with(b"-ERR CONFIG SET failed (possibly related to argument 'oom-score-adj-values')"));
    shutdown(server);
}

/// Debian's stock redis.conf (installed with redis-server, which the suite
/// needs) and valkey.conf (when valkey-server is installed) start kvik,
/// with only what would clash with this test overridden by flags.
#[test]
fn stock_configuration_files_load() {
    let files = [("/etc/redis/redis.conf", true), ("/etc/valkey/valkey.conf", false)];
    for (file, required) in files {
        if !Path::new(file).exists() {
            assert!(!(required && std::env::var_os("CI").is_some()), "{file} is missing under CI");
            eprintln!("{file} is not installed: skipped");
            continue;
        }
        let dir = temp_dir("stock");
        let port = free_port();
        let server = start(
            port,
            &[file, "--daemonize", "no", "--logfile", "", "--pidfile", "", "--dir", dir.to_str().unwrap_or("")],
            &[],
        );
        let mut c = connect(port);
        assert_eq!(call_text(&mut c, &["PING"]), b"+PONG\r\n", "{file}");
        assert_eq!(
            call_text(&mut c, &["CONFIG", "GET", "list-compress-depth"]),
            b"*2\r\n$19\r\nlist-compress-depth\r\n$1\r\n0\r\n"
        );
        shutdown(server);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
