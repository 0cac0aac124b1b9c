//! The server's runtime and configuration, across processes: event loops
//! under many concurrent clients, listeners (TCP, unix socket), client
//! limits, idle timeouts, configuration files and flags, CONFIG, signals and
//! SHUTDOWN, protected mode.

mod common;

use std::io::{Read, Write};
use std::net::{TcpStream, UdpSocket};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use common::diff::{closed, compare_each, multibulk, open, Case};
use common::{connect, free_port, listens_on, read_until};
use kvik_protocol::respb::handshake;

const KVIK: &str = env!("CARGO_BIN_EXE_kvik-server");

/// A kvik-server child with its log (standard output) and standard error
/// kept, killed and reaped on drop.
struct Kvik {
    child: Child,
    port: u16,
    /// Its working directory (the default `dir`), removed after it.
    _cwd: kvik_testkit::ScratchDir,
}

impl Drop for Kvik {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Kvik {
    /// Start kvik with `args` and wait until `ready` holds. With a TCP
    /// `port` (not 0), ready also means this process holds the port's
    /// listening socket, not a server another test started there.
    fn try_start_until(args: &[String], port: u16, ready: impl Fn() -> bool) -> Result<Kvik, String> {
        let cwd = kvik_testkit::ScratchDir::new("runtime");
        let child = Command::new(KVIK)
            .args(args)
            .current_dir(cwd.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start kvik-server");
        let mut kvik = Kvik { child, port, _cwd: cwd };
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(status)) = kvik.child.try_wait() {
                return Err(format!("kvik-server exited at startup: {status}"));
            }
            if ready() && (port == 0 || listens_on(kvik.child.id(), port)) {
                return Ok(kvik);
            }
            thread::sleep(Duration::from_millis(20));
        }
        Err("kvik-server did not become ready".into())
    }

    /// [`Kvik::try_start_until`], failing the test when it does not start.
    fn start_until(args: &[String], port: u16, ready: impl Fn() -> bool) -> Kvik {
        Kvik::try_start_until(args, port, ready).unwrap_or_else(|e| panic!("{e}"))
    }

    /// Start kvik on a free loopback port with extra `args`. Another
    /// process can take the port between picking and binding; then kvik
    /// exits, and it is started again on another port.
    fn start(args: &[&str]) -> Kvik {
        let mut failed = String::new();
        for _ in 0..3 {
            let port = free_port();
            let mut all: Vec<String> = vec!["--bind".into(), "127.0.0.1".into(), "--port".into(), port.to_string()];
            all.extend(args.iter().map(|s| s.to_string()));
            match Kvik::try_start_until(&all, port, || TcpStream::connect(("127.0.0.1", port)).is_ok()) {
                Ok(kvik) => return kvik,
                Err(e) => failed = e,
            }
        }
        panic!("{failed}")
    }

    /// Wait for the process to exit by itself; returns its status and what
    /// it wrote, its log then its standard error.
    fn wait_exit(mut self) -> (ExitStatus, String) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                let mut out = String::new();
                if let Some(mut stdout) = self.child.stdout.take() {
                    let _ = stdout.read_to_string(&mut out);
                }
                if let Some(mut stderr) = self.child.stderr.take() {
                    let _ = stderr.read_to_string(&mut out);
                }
                return (status, out);
            }
            assert!(Instant::now() < deadline, "kvik-server did not exit");
            thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Send one request on `stream` and read one reply line (or a whole bulk).
fn call(stream: &mut TcpStream, args: &[&[u8]]) -> Vec<u8> {
    stream.write_all(&multibulk(args)).expect("send");
    read_until(stream, reply_complete).bytes
}

/// Whether `got` holds one complete simple reply, bulk reply, or flat array of bulks.
fn reply_complete(got: &[u8]) -> bool {
    fn one(got: &[u8]) -> Option<usize> {
        let line_end = got.windows(2).position(|w| w == b"\r\n")? + 2;
        match got.first()? {
            b'$' => {
                let n: i64 = std::str::from_utf8(&got[1..line_end - 2]).ok()?.parse().ok()?;
                if n < 0 {
                    return Some(line_end);
                }
                let end = line_end + n as usize + 2;
                (got.len() >= end).then_some(end)
            }
            b'*' | b'%' => {
                let n: usize = std::str::from_utf8(&got[1..line_end - 2]).ok()?.parse().ok()?;
                let n = if got[0] == b'%' { n * 2 } else { n };
                let mut at = line_end;
                for _ in 0..n {
                    at += one(&got[at..])?;
                }
                Some(at)
            }
            _ => Some(line_end),
        }
    }
    one(got) == Some(got.len())
}

fn config_get(stream: &mut TcpStream, name: &str) -> String {
    let reply = call(stream, &[b"CONFIG", b"GET", name.as_bytes()]);
    let text = String::from_utf8_lossy(&reply).into_owned();
    let parts: Vec<&str> = text.split("\r\n").collect();
    assert!(parts.len() >= 5 && parts[0] == "*2", "CONFIG GET {name}: {text:?}");
    parts[4].to_string()
}

#[test]
fn many_pipelining_clients_on_four_loops() {
    let kvik = Kvik::start(&["--threads", "4"]);
    let clients: Vec<_> = (0..50)
        .map(|client| {
            let port = kvik.port;
            thread::spawn(move || {
                let mut stream = connect(port);
                let mut request = Vec::new();
                let mut expected = Vec::new();
                for i in 0..1000 {
                    let key = format!("c{client}:k{i}");
                    let value = format!("v{client}-{i}");
                    request.extend(multibulk(&[b"SET", key.as_bytes(), value.as_bytes()]));
                    expected.extend_from_slice(b"+OK\r\n");
                }
                for i in 0..1000 {
                    let key = format!("c{client}:k{i}");
                    let value = format!("v{client}-{i}");
                    request.extend(multibulk(&[b"GET", key.as_bytes()]));
                    expected.extend(format!("${}\r\n{value}\r\n", value.len()).into_bytes());
                }
                stream.write_all(&request).expect("send pipeline");
                let answer = read_until(&mut stream, |got| got.len() >= expected.len());
                assert_eq!(answer.bytes, expected, "client {client}");
            })
        })
        .collect();
    for c in clients {
        c.join().expect("client thread");
    }
    let mut stream = connect(kvik.port);
    assert_eq!(call(&mut stream, &[b"DBSIZE"]), b":50000\r\n");
    assert_eq!(config_get(&mut stream, "threads"), "4");
}

#[test]
fn unix_socket_with_permissions_and_no_tcp() {
    let dir = temp_dir("unix");
    let path = dir.join("kvik.sock");
    let args: Vec<String> = ["--port", "0", "--unixsocket", path.to_str().unwrap_or(""), "--unixsocketperm", "700"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let kvik = Kvik::start_until(&args, 0, || UnixStream::connect(&path).is_ok());
    let mode = std::fs::metadata(&path).expect("socket file").permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let mut stream = UnixStream::connect(&path).expect("connect");
    stream.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
    stream.write_all(b"PING\r\nCONFIG GET unixsocketperm\r\n").expect("send");
    let mut got = Vec::new();
    let expected = b"+PONG\r\n*2\r\n$14\r\nunixsocketperm\r\n$3\r\n700\r\n";
    let mut chunk = [0u8; 256];
    while got.len() < expected.len() {
        let n = stream.read(&mut chunk).expect("read");
        assert!(n > 0, "closed early: {}", got.escape_ascii());
        got.extend_from_slice(&chunk[..n]);
    }
    assert_eq!(got, expected);
    drop(kvik);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn clients_over_maxclients_are_refused() {
    // The limit is set once two clients are in, so that the connection
    // which probed for startup cannot take one of the two places.
    let kvik = Kvik::start(&["--maxclients", "100"]);
    let mut a = connect(kvik.port);
    let mut b = connect(kvik.port);
    assert_eq!(call(&mut a, &[b"PING"]), b"+PONG\r\n");
    assert_eq!(call(&mut b, &[b"PING"]), b"+PONG\r\n");
    assert_eq!(call(&mut b, &[b"CONFIG", b"SET", b"maxclients", b"2"]), b"+OK\r\n");
    let mut c = connect(kvik.port);
    let _ = c.write_all(b"PING\r\n");
    let answer = read_until(&mut c, |_| false);
    assert_eq!(answer.bytes, b"-ERR max number of clients reached\r\n");
    assert!(answer.closed);
    let stats = String::from_utf8_lossy(&call(&mut b, &[b"INFO", b"stats"])).into_owned();
    assert!(stats.contains("\r\nrejected_connections:1\r\n"), "{stats}");
    // A place frees up when a client leaves.
    drop(a);
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let mut d = connect(kvik.port);
        if call(&mut d, &[b"PING"]) == b"+PONG\r\n" {
            break;
        }
        assert!(Instant::now() < deadline, "no place freed");
        thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn idle_clients_are_closed_after_timeout() {
    let kvik = Kvik::start(&["--timeout", "1"]);
    let mut idle = connect(kvik.port);
    assert_eq!(call(&mut idle, &[b"PING"]), b"+PONG\r\n");
    let mut busy = connect(kvik.port);
    for _ in 0..8 {
        thread::sleep(Duration::from_millis(300));
        assert_eq!(call(&mut busy, &[b"PING"]), b"+PONG\r\n");
    }
    let answer = read_until(&mut idle, |_| false);
    assert!(answer.closed && answer.bytes.is_empty(), "idle client got {}", answer.show());
    // Set at run time, 0 turns it off.
    assert_eq!(call(&mut busy, &[b"CONFIG", b"SET", b"timeout", b"0"]), b"+OK\r\n");
    let mut later = connect(kvik.port);
    assert_eq!(call(&mut later, &[b"PING"]), b"+PONG\r\n");
    thread::sleep(Duration::from_millis(1500));
    assert_eq!(call(&mut later, &[b"PING"]), b"+PONG\r\n");
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kvik-runtime-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    dir
}

#[test]
fn config_file_then_flags_and_rewrite() {
    let dir = temp_dir("conf");
    let file = dir.join("kvik.conf");
    let port = free_port();
    let extra = dir.join("extra.conf");
    std::fs::write(&extra, "maxmemory-policy allkeys-lru\n").expect("write included config");
    let text = format!(
        "# a comment\nbind 127.0.0.1\nport {port}\ntimeout 7\nmaxmemory 10mb\nsave \"\"\nappendonly no\n\
         rename-command DEBUG \"\"\n\
         requirepass \"a b\"\n  loglevel warning\ninclude {}\n",
        extra.display()
    );
    std::fs::write(&file, text).expect("write config");
    let args = vec![file.to_string_lossy().into_owned(), "--timeout".into(), "8".into()];
    let kvik = Kvik::start_until(&args, port, || TcpStream::connect(("127.0.0.1", port)).is_ok());
    let mut s = connect(kvik.port);
    assert_eq!(call(&mut s, &[b"AUTH", b"a b"]), b"+OK\r\n", "the file's password is in force");
    assert_eq!(config_get(&mut s, "timeout"), "8", "flags override the file");
    assert_eq!(config_get(&mut s, "maxmemory"), "10485760");
    assert_eq!(config_get(&mut s, "save"), "");
    assert_eq!(config_get(&mut s, "requirepass"), "a b");
    assert_eq!(config_get(&mut s, "loglevel"), "warning");
    assert_eq!(config_get(&mut s, "maxmemory-policy"), "allkeys-lru", "included file");
    assert_eq!(call(&mut s, &[b"CONFIG", b"SET", b"maxclients", b"77", b"timeout", b"9"]), b"+OK\r\n");
    assert_eq!(call(&mut s, &[b"CONFIG", b"REWRITE"]), b"+OK\r\n");
    let rewritten = std::fs::read_to_string(&file).expect("read config");
    assert!(rewritten.starts_with("# a comment\n"), "{rewritten}");
    assert!(rewritten.contains("\ntimeout 9\n"), "{rewritten}");
    assert!(rewritten.contains("\nmaxclients 77\n"), "{rewritten}");
    assert!(rewritten.contains("\nsave \"\"\n"), "{rewritten}");
    assert!(rewritten.contains("\nrequirepass \"a b\"\n"), "{rewritten}");
    assert_eq!(rewritten.matches("save").count(), 1, "{rewritten}");
    assert!(rewritten.contains("\nrename-command DEBUG \"\"\n"), "kept by the rewrite: {rewritten}");
    drop(kvik);
    // The rewritten file starts a server with the same settings.
    let kvik = Kvik::start_until(&[file.to_string_lossy().into_owned()], port, || {
        TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let mut s = connect(kvik.port);
    assert_eq!(call(&mut s, &[b"AUTH", b"a b"]), b"+OK\r\n");
    assert_eq!(config_get(&mut s, "maxclients"), "77");
    assert_eq!(config_get(&mut s, "save"), "");
    drop(kvik);
    let _ = std::fs::remove_dir_all(&dir);
}

fn run_to_exit(args: &[&str]) -> Output {
    Command::new(KVIK).args(args).stdin(Stdio::null()).output().expect("run kvik-server")
}

#[test]
fn bad_options_stop_startup_with_a_message() {
    let out = run_to_exit(&["--port", "0", "--foo", "1"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stderr), "kvik-server: unknown option '--foo'\n");
    let out = run_to_exit(&["--maxmemory", "lots"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "kvik-server: invalid value 'lots' for option '--maxmemory': argument must be a memory value\n"
    );
    let dir = temp_dir("bad");
    let file = dir.join("bad.conf");
    std::fs::write(&file, "port 0\nmaxmemry 1gb\n").expect("write");
    let out = run_to_exit(&[file.to_str().unwrap_or("")]);
    assert_eq!(out.status.code(), Some(1));
    let expected = format!("kvik-server: {}:2: unknown option 'maxmemry'\n", file.display());
    assert_eq!(String::from_utf8_lossy(&out.stderr), expected);
    let out = run_to_exit(&[dir.join("missing.conf").to_str().unwrap_or("")]);
    assert_eq!(out.status.code(), Some(1));
    let out = run_to_exit(&["--port", "0"]);
    assert_eq!(out.status.code(), Some(1), "listening nowhere is an error");
    let out = run_to_exit(&["--rename-command", "NOSUCH", "x"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("No such command in rename-command"), "{out:?}");
    let out = run_to_exit(&["--rename-command", "GET", "set"]);
    assert!(String::from_utf8_lossy(&out.stderr).contains("Target command name already exists"), "{out:?}");
    let out = run_to_exit(&["--dir", dir.join("missing").to_str().unwrap_or("")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("Can't chdir to"), "{out:?}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn settings_that_ask_for_what_kvik_cannot_do_yet_are_refused() {
    // At startup, from flags and from a file, with the reason.
    let out = run_to_exit(&["--cluster-enabled", "yes"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kvik does not run in cluster mode yet"), "{stderr}");
    let dir = temp_dir("persist");
    let file = dir.join("kvik.conf");
    std::fs::write(&file, "port 0\ncluster-enabled yes\n").expect("write");
    let out = run_to_exit(&[file.to_str().unwrap_or("")]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains(":2: "), "{out:?}");
    // At run time, changing nothing.
    let kvik = Kvik::start(&["--dir", dir.to_str().unwrap_or("")]);
    let mut s = connect(kvik.port);
    let refused =
        String::from_utf8_lossy(&call(&mut s, &[b"CONFIG", b"SET", b"aof-use-rdb-preamble", b"no"])).into_owned();
    assert!(
        refused.starts_with("-ERR CONFIG SET failed (possibly related to argument 'aof-use-rdb-preamble') - kvik"),
        "{refused}"
    );
    assert_eq!(config_get(&mut s, "aof-use-rdb-preamble"), "yes");
    assert_eq!(config_get(&mut s, "appendonly"), "no");
    assert_eq!(config_get(&mut s, "save"), "3600 1 300 100 60 10000", "Redis's save points");
    assert_eq!(call(&mut s, &[b"CONFIG", b"SET", b"save", b"60 1"]), b"+OK\r\n");
    assert_eq!(config_get(&mut s, "save"), "60 1");
    let canonical = dir.canonicalize().expect("canonical dir");
    assert_eq!(config_get(&mut s, "dir"), canonical.display().to_string(), "dir is entered");
    let info = String::from_utf8_lossy(&call(&mut s, &[b"INFO", b"persistence"])).into_owned();
    assert!(info.contains("aof_enabled:0\r\n"), "{info}");
    // SHUTDOWN SAVE writes the snapshot, then stops.
    s.write_all(b"SHUTDOWN SAVE\r\n").expect("send");
    assert!(read_until(&mut s, |_| false).closed, "saved and stopped");
    let (status, stderr) = kvik.wait_exit();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(dir.join("dump.rdb").exists(), "the snapshot is written");
    // One whose save fails (its directory went away) keeps the server up,
    // as in Redis, unless FORCE says to stop all the same.
    let gone = dir.join("gone");
    std::fs::create_dir(&gone).expect("mkdir");
    let kvik = Kvik::start(&["--dir", gone.to_str().unwrap_or("")]);
    let mut s = connect(kvik.port);
    std::fs::remove_dir(&gone).expect("rmdir");
    assert_eq!(call(&mut s, &[b"SHUTDOWN", b"SAVE"]), b"-ERR Errors trying to SHUTDOWN. Check logs.\r\n");
    assert_eq!(call(&mut s, &[b"PING"]), b"+PONG\r\n");
    assert!(
        String::from_utf8_lossy(&call(&mut s, &[b"INFO", b"persistence"])).contains("rdb_last_bgsave_status:ok\r\n")
    );
    s.write_all(b"SHUTDOWN SAVE FORCE\r\n").expect("send");
    assert!(read_until(&mut s, |_| false).closed, "FORCE exits all the same");
    let (status, stderr) = kvik.wait_exit();
    assert_eq!(status.code(), Some(0), "{stderr}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn config_set_then_get_round_trips() {
    let kvik = Kvik::start(&[]);
    let mut s = connect(kvik.port);
    let cases: &[(&str, &str, &str)] = &[
        ("timeout", "30", "30"),
        ("tcp-keepalive", "60", "60"),
        ("maxclients", "500", "500"),
        ("requirepass", "", ""),
        ("protected-mode", "NO", "no"),
        ("proto-max-bulk-len", "2mb", "2097152"),
        ("client-query-buffer-limit", "1gb", "1073741824"),
        ("maxmemory", "100k", "100000"),
        ("maxmemory-policy", "allkeys-LRU", "allkeys-lru"),
        ("maxmemory-samples", "10", "10"),
        ("hash-max-listpack-entries", "100", "100"),
        ("list-max-listpack-size", "-3", "-3"),
        ("set-max-listpack-entries", "64", "64"),
        ("stream-node-max-bytes", "8kb", "8192"),
        ("notify-keyspace-events", "KEA", "AKE"),
        ("appendonly", "NO", "no"),
        ("appendfsync", "no", "no"),
        ("save", "", ""),
        ("loglevel", "debug", "debug"),
        ("slowlog-log-slower-than", "-1", "-1"),
        ("latency-monitor-threshold", "100", "100"),
        ("hz", "0", "1"),
        ("lfu-decay-time", "5", "5"),
    ];
    for (name, value, shown) in cases {
        let reply = call(&mut s, &[b"CONFIG", b"SET", name.as_bytes(), value.as_bytes()]);
        assert_eq!(reply, b"+OK\r\n", "CONFIG SET {name} {value}: {}", reply.escape_ascii());
        assert_eq!(config_get(&mut s, name), *shown, "CONFIG GET {name}");
    }
    // RESP3 replies a map.
    call(&mut s, &[b"HELLO", b"3"]);
    assert_eq!(call(&mut s, &[b"CONFIG", b"GET", b"hz"]), b"%1\r\n$2\r\nhz\r\n$1\r\n1\r\n");
}

#[test]
fn sigterm_and_shutdown_exit_cleanly() {
    let kvik = Kvik::start(&[]);
    let mut idle = connect(kvik.port);
    assert_eq!(call(&mut idle, &[b"PING"]), b"+PONG\r\n");
    // A RESPB connection waiting for its next frame is closed too.
    let mut idle_respb = connect(kvik.port);
    idle_respb.write_all(&handshake::client_hello(1)).expect("send greeting");
    assert_eq!(read_until(&mut idle_respb, |got| got.len() >= handshake::LEN).bytes, [0xD3, 0xC1, 0x01, 0x00]);
    let killed = Command::new("kill").args(["-TERM", &kvik.child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let (status, stderr) = kvik.wait_exit();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("received SIGTERM, shut down"), "{stderr}");
    assert!(read_until(&mut idle, |_| false).closed, "clients are closed");
    assert!(read_until(&mut idle_respb, |_| false).closed, "RESPB clients are closed");

    let kvik = Kvik::start(&["--threads", "3"]);
    let killed = Command::new("kill").args(["-INT", &kvik.child.id().to_string()]).status().expect("kill");
    assert!(killed.success());
    let (status, stderr) = kvik.wait_exit();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("received SIGINT, shut down"), "{stderr}");

    let kvik = Kvik::start(&[]);
    let mut s = connect(kvik.port);
    assert_eq!(call(&mut s, &[b"SHUTDOWN", b"NOSAVE", b"SAVE"]), b"-ERR syntax error\r\n");
    assert_eq!(call(&mut s, &[b"SHUTDOWN", b"ABORT"]), b"-ERR No shutdown in progress.\r\n");
    s.write_all(b"SHUTDOWN NOSAVE\r\n").expect("send");
    let answer = read_until(&mut s, |_| false);
    assert!(answer.closed && answer.bytes.is_empty(), "{}", answer.show());
    let (status, stderr) = kvik.wait_exit();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(stderr.contains("SHUTDOWN requested by a client"), "{stderr}");
}

/// An address of this machine other than loopback, if it has one.
fn non_loopback_address() -> Option<std::net::IpAddr> {
    // Connecting a UDP socket sends nothing; it only picks the outgoing address.
    let socket = UdpSocket::bind("0.0.0.0:0").ok()?;
    socket.connect("192.0.2.1:9").ok()?;
    let ip = socket.local_addr().ok()?.ip();
    (!ip.is_loopback() && !ip.is_unspecified()).then_some(ip)
}

#[test]
fn an_http_request_is_dropped_before_its_body_runs() {
    let kvik = Kvik::start(&[]);
    for request in [
        &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\n\r\nSET ssrf pwned\r\n"[..],
        b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nSET ssrf pwned\r\n",
    ] {
        let mut s = connect(kvik.port);
        s.write_all(request).expect("send");
        let answer = read_until(&mut s, |_| false);
        assert!(answer.closed, "{}", answer.show());
        assert!(!answer.bytes.windows(3).any(|w| w == b"+OK"), "{}", answer.show());
    }
    let mut s = connect(kvik.port);
    assert_eq!(call(&mut s, &[b"EXISTS", b"ssrf"]), b":0\r\n", "the body did not run");
    let (status, stderr) = {
        s.write_all(b"SHUTDOWN NOSAVE\r\n").expect("send");
        kvik.wait_exit()
    };
    assert_eq!(status.code(), Some(0));
    assert_eq!(stderr.matches("Possible SECURITY ATTACK detected").count(), 1, "logged once a minute: {stderr}");
}

#[test]
fn protected_mode_refuses_remote_clients_without_password() {
    let Some(ip) = non_loopback_address() else {
        eprintln!("protected mode: skipped, this machine has no non-loopback address");
        return;
    };
    let port = free_port();
    let args: Vec<String> = ["--bind", "0.0.0.0", "--port", &port.to_string()].iter().map(|s| s.to_string()).collect();
    let kvik = Kvik::start_until(&args, port, || TcpStream::connect(("127.0.0.1", port)).is_ok());
    let remote = |request: &[u8], done: &[u8]| {
        let mut s = TcpStream::connect((ip, port)).expect("connect remotely");
        s.set_read_timeout(Some(Duration::from_secs(5))).expect("timeout");
        s.write_all(request).expect("send");
        read_until(&mut s, |got| got == done)
    };
    let answer = remote(b"PING\r\n", b"+PONG\r\n");
    assert!(answer.closed, "{}", answer.show());
    assert!(answer.bytes.starts_with(b"-DENIED Redis is running in protected mode"), "{}", answer.show());
    let mut local = connect(kvik.port);
    assert_eq!(call(&mut local, &[b"PING"]), b"+PONG\r\n");
    // With a password set, remote clients get in, and must authenticate.
    assert_eq!(call(&mut local, &[b"CONFIG", b"SET", b"requirepass", b"secret"]), b"+OK\r\n");
    let answer = remote(b"PING\r\n", b"-NOAUTH Authentication required.\r\n");
    assert_eq!(answer.bytes, b"-NOAUTH Authentication required.\r\n");
    let answer = remote(b"AUTH secret\r\nPING\r\n", b"+OK\r\n+PONG\r\n");
    assert_eq!(answer.bytes, b"+OK\r\n+PONG\r\n");
    // Clients connected before the password was set stay logged in, as in Redis.
    assert_eq!(call(&mut local, &[b"PING"]), b"+PONG\r\n");
    // The default user's password decides, however it was given.
    assert_eq!(call(&mut local, &[b"ACL", b"SETUSER", b"default", b"nopass"]), b"+OK\r\n");
    let answer = remote(b"PING\r\n", b"+PONG\r\n");
    assert!(answer.bytes.starts_with(b"-DENIED"), "{}", answer.show());
    assert_eq!(call(&mut local, &[b"ACL", b"SETUSER", b"default", b">pw"]), b"+OK\r\n");
    let answer = remote(b"AUTH pw\r\nPING\r\n", b"+OK\r\n+PONG\r\n");
    assert_eq!(answer.bytes, b"+OK\r\n+PONG\r\n");
}

fn config_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    // Options whose defaults are the same in kvik and in the redis-server the tests start.
    for name in [
        "databases",
        "timeout",
        "tcp-keepalive",
        "maxclients",
        "requirepass",
        "protected-mode",
        "proto-max-bulk-len",
        "client-query-buffer-limit",
        "maxmemory",
        "maxmemory-policy",
        "maxmemory-samples",
        "hash-max-listpack-entries",
        "hash-max-listpack-value",
        "list-max-listpack-size",
        "set-max-intset-entries",
        "zset-max-listpack-entries",
        "zset-max-listpack-value",
        "stream-node-max-entries",
        "stream-node-max-bytes",
        "notify-keyspace-events",
        "appendonly",
        "appendfsync",
        "save",
        "dbfilename",
        // Not `dir`: each test server has a directory of its own.
        "unixsocket",
        "unixsocketperm",
        "slowlog-log-slower-than",
        "slowlog-max-len",
        "latency-monitor-threshold",
        "hz",
        "lfu-log-factor",
        "lfu-decay-time",
    ] {
        cases.push(open("config get", multibulk(&[b"CONFIG", b"GET", name.as_bytes()])));
    }
    let get = |args: &[&str]| {
        let mut words: Vec<&[u8]> = vec![b"CONFIG", b"GET"];
        words.extend(args.iter().map(|a| a.as_bytes()));
        multibulk(&words)
    };
    cases.extend([
        open("config get glob", get(&["maxmemory-p*"])),
        open("config get class", get(&["[t]imeout"])),
        open("config get upper case", get(&["MAXCLIENTS"])),
        open("config get twice", get(&["Timeout", "timeout"])),
        open("config get several", get(&["nomatch", "hz"])),
        open("config get nothing", get(&["nomatch"])),
        open("config get no pattern", "CONFIG GET\r\n"),
        open("config get resp3", [b"HELLO 3\r\n".to_vec(), get(&["appendfsync"])].concat()),
        open("config help", "CONFIG HELP\r\n"),
        open("config resetstat", "CONFIG RESETSTAT\r\n"),
        open("config rewrite without file", "CONFIG REWRITE\r\n"),
        open("config bogus", "CONFIG BOGUS\r\n"),
        open("config set unknown", "CONFIG SET foo bar\r\n"),
        open("config set unknown later", "CONFIG SET timeout 5 foo 1\r\nCONFIG GET timeout\r\n"),
        open("config set odd", "CONFIG SET timeout 5 maxclients\r\nCONFIG SET timeout\r\n"),
        open("config set not integer", "CONFIG SET timeout abc\r\nCONFIG SET timeout +5\r\n"),
        open("config set range", "CONFIG SET timeout -1\r\nCONFIG SET maxclients 0\r\nCONFIG SET proto-max-bulk-len 10\r\n"),
        open("config set enum", "CONFIG SET maxmemory-policy bogus\r\nCONFIG SET appendfsync sometimes\r\n"),
        open("config set bool", "CONFIG SET protected-mode maybe\r\nCONFIG SET appendonly 1\r\n"),
        open("config set memory", "CONFIG SET maxmemory -1\r\nCONFIG SET maxmemory 1.5mb\r\nCONFIG SET maxmemory 1zb\r\n"),
        open("config set immutable", "CONFIG SET databases 5\r\nCONFIG SET unixsocketperm 700\r\n"),
        open("config set protected", "CONFIG SET dbfilename x.rdb\r\n"),
        open("config set duplicate", "CONFIG SET timeout 5 timeout 6\r\nCONFIG GET timeout\r\n"),
        open("config set events", "CONFIG SET notify-keyspace-events q\r\nCONFIG SET notify-keyspace-events KEA\r\nCONFIG GET notify-keyspace-events\r\nCONFIG SET notify-keyspace-events Kgx\r\nCONFIG GET notify-keyspace-events\r\nCONFIG SET notify-keyspace-events \"\"\r\n"),
        // Save points kvik cannot honour are refused (settings_that_ask_for_persistence_are_refused).
        open("config set save", "CONFIG SET save 1\r\nCONFIG SET save \"\"\r\nCONFIG GET save\r\nCONFIG SET save \"\"\r\n"),
        open("config set memory units", "CONFIG SET maxmemory 1MB\r\nCONFIG GET maxmemory\r\nCONFIG SET maxmemory 2k\r\nCONFIG GET maxmemory\r\nCONFIG SET maxmemory 0\r\n"),
        open("config set hz clamps", "CONFIG SET hz 1000\r\nCONFIG GET hz\r\nCONFIG SET hz 10\r\n"),
        open("config set several", "CONFIG SET timeout 3 maxmemory-policy ALLKEYS-LRU\r\nCONFIG GET timeout\r\nCONFIG GET maxmemory-policy\r\nCONFIG SET timeout 0 maxmemory-policy noeviction\r\n"),
        // requirepass: set on one connection, felt by the next ones, then cleared.
        open("requirepass set", "CONFIG SET requirepass sec\r\nPING\r\n"),
        open(
            "requirepass gates commands",
            "PING\r\nGET a\r\nFOO\r\nAUTH\r\nAUTH x\r\nAUTH a b c\r\nAUTH bad\r\nAUTH other sec\r\n\
             HELLO 3 AUTH default bad\r\nHELLO 3\r\nHELLO\r\nCONFIG GET x\r\nAUTH default sec\r\nPING\r\n",
        ),
        open("hello auth", "HELLO 2 AUTH default sec\r\nPING\r\n"),
        closed("unauthenticated multibulk", "*20\r\n"),
        closed("unauthenticated bulk", "*2\r\n$4\r\nECHO\r\n$20000\r\n"),
        open("requirepass cleared", "AUTH sec\r\nCONFIG SET requirepass \"\"\r\nPING\r\n"),
        open("auth without requirepass", "AUTH x\r\nAUTH default x\r\nAUTH bob x\r\n"),
        // Last, since it changes the limit for the rest of the servers' lives.
        closed(
            "bulk over proto-max-bulk-len",
            "CONFIG SET proto-max-bulk-len 1mb\r\nPING\r\n*2\r\n$4\r\nECHO\r\n$1048577\r\n",
        ),
        open("shutdown syntax", "SHUTDOWN foo\r\nSHUTDOWN NOSAVE SAVE\r\nSHUTDOWN ABORT NOW\r\nSHUTDOWN ABORT\r\nSHUTDOWN ABORT ABORT\r\n"),
    ]);
    cases
}

#[test]
fn config_replies_match_redis() {
    compare_each("config_replies_match_redis", config_cases());
}

#[test]
fn query_buffer_over_the_limit_closes_the_client() {
    let kvik = Kvik::start(&["--client-query-buffer-limit", "1mb"]);
    let mut s = connect(kvik.port);
    s.write_all(b"*2\r\n$4\r\nECHO\r\n$3000000\r\n").expect("send header");
    let chunk = vec![b'x'; 100_000];
    // The server may close while the payload is still being sent.
    for _ in 0..30 {
        if s.write_all(&chunk).is_err() {
            break;
        }
    }
    let answer = read_until(&mut s, |_| false);
    assert!(answer.closed && answer.bytes.is_empty(), "{}", answer.show());
    let mut other = connect(kvik.port);
    assert_eq!(call(&mut other, &[b"PING"]), b"+PONG\r\n", "other clients are served");
}

#[test]
fn client_kill_ends_an_idle_client_at_once() {
    let kvik = Kvik::start(&["--threads", "2"]);
    let mut idle = connect(kvik.port);
    assert_eq!(call(&mut idle, &[b"CLIENT", b"SETNAME", b"idle"]), b"+OK\r\n");
    let mut admin = connect(kvik.port);
    let started = Instant::now();
    assert_eq!(call(&mut admin, &[b"CLIENT", b"KILL", b"SKIPME", b"yes"]), b":1\r\n");
    // The idle client sends nothing more: its connection is closed by the kill itself.
    let answer = read_until(&mut idle, |_| false);
    assert!(answer.closed && answer.bytes.is_empty(), "{}", answer.show());
    assert!(started.elapsed() < Duration::from_secs(2));
    let list = String::from_utf8_lossy(&call(&mut admin, &[b"CLIENT", b"LIST"])).into_owned();
    assert!(!list.contains("name=idle"), "{list}");
}

#[test]
fn a_monitor_that_stops_reading_holds_up_no_other_client() {
    let kvik = Kvik::start(&["--threads", "2"]);
    // Several monitors, so that some share a loop with the writer; one never reads.
    let mut stuck = connect(kvik.port);
    assert_eq!(call(&mut stuck, &[b"MONITOR"]), b"+OK\r\n");
    let mut monitors: Vec<TcpStream> = (0..3).map(|_| connect(kvik.port)).collect();
    for m in &mut monitors {
        assert_eq!(call(m, &[b"MONITOR"]), b"+OK\r\n");
    }
    let mut writer = connect(kvik.port);
    let count = 20_000;
    let mut batch = Vec::new();
    for i in 0..count {
        batch.extend_from_slice(&multibulk(&[b"SET", b"key", format!("value-{i}").as_bytes()]));
    }
    batch.extend_from_slice(&multibulk(&[b"ECHO", b"end-of-feed"]));
    writer.write_all(&batch).expect("send");
    let answer = read_until(&mut writer, |b| b.ends_with(b"$11\r\nend-of-feed\r\n"));
    assert!(!answer.closed);
    // A reading monitor gets every line, in order, after its +OK.
    for m in &mut monitors {
        let fed = read_until(m, |b| b.ends_with(b"\"ECHO\" \"end-of-feed\"\r\n"));
        let text = String::from_utf8_lossy(&fed.bytes).into_owned();
        assert_eq!(text.matches("\"SET\" \"key\"").count(), count, "{}", &text[..text.len().min(300)]);
        assert!(text.contains("\"value-0\"") && text.contains(&format!("\"value-{}\"", count - 1)));
    }
}

#[test]
fn requirepass_set_at_run_time_is_the_password_auth_and_hello_check() {
    let kvik = Kvik::start(&[]);
    let mut admin = connect(kvik.port);
    assert_eq!(call(&mut admin, &[b"CONFIG", b"SET", b"requirepass", b"pw"]), b"+OK\r\n");
    let mut c = connect(kvik.port);
    assert_eq!(call(&mut c, &[b"PING"]), b"-NOAUTH Authentication required.\r\n");
    assert_eq!(
        call(&mut c, &[b"HELLO", b"2", b"AUTH", b"default", b"nope"]),
        b"-WRONGPASS invalid username-password pair or user is disabled.\r\n"
    );
    let hello = call(&mut c, &[b"HELLO", b"2", b"AUTH", b"default", b"pw"]);
    assert!(hello.starts_with(b"*14\r\n"), "{}", String::from_utf8_lossy(&hello));
    assert_eq!(call(&mut c, &[b"PING"]), b"+PONG\r\n");
    let mut d = connect(kvik.port);
    assert_eq!(call(&mut d, &[b"AUTH", b"pw"]), b"+OK\r\n");
    assert_eq!(call(&mut d, &[b"CONFIG", b"SET", b"requirepass", b""]), b"+OK\r\n");
    // With the password cleared, new clients need no AUTH and AUTH <password> is refused as in Redis.
    let mut e = connect(kvik.port);
    assert_eq!(call(&mut e, &[b"PING"]), b"+PONG\r\n");
    assert!(call(&mut e, &[b"AUTH", b"pw"]).starts_with(b"-ERR AUTH <password> called without any password"));
}

/// `CONFIG GET *` as name → value pairs.
fn all_config(port: u16) -> Vec<(String, String)> {
    let mut s = connect(port);
    let reply = call(&mut s, &[b"CONFIG", b"GET", b"*"]);
    let (_, items) = common::elements_of(&reply, false).expect("an array");
    let text: Vec<String> = items
        .iter()
        .map(|item| {
            let body = item.splitn(2, |&b| b == b'\n').nth(1).unwrap_or_default();
            String::from_utf8_lossy(body.strip_suffix(b"\r\n").unwrap_or(body)).into_owned()
        })
        .collect();
    text.chunks(2).map(|p| (p[0].clone(), p.get(1).cloned().unwrap_or_default())).collect()
}

/// Every parameter redis-server 7.0 reports is known to kvik under the same
/// name, with Redis's default, except where the difference is the point.
#[test]
fn every_redis_parameter_is_known_with_its_default() {
    let Some(redis) = common::start_redis_or_skip("every_redis_parameter_is_known_with_its_default") else { return };
    let kvik = Kvik::start(&[]);
    let theirs = all_config(redis.port);
    let ours = all_config(kvik.port);
    assert!(theirs.len() >= 190, "{} parameters from redis-server", theirs.len());
    // Set per server by the tests, or different on purpose (see docs/config.md).
    let differ = [
        "port",
        "dir",
        "daemonize",
        "pidfile",
        "io-threads",
        "logfile",
        "loglevel",
        "save",
        "appendonly",
        "unixsocket",
    ];
    let mut missing = Vec::new();
    let mut other_default = Vec::new();
    for (name, value) in &theirs {
        match ours.iter().find(|(n, _)| n == name) {
            None => missing.push(name.clone()),
            Some((_, mine)) if mine != value && !differ.contains(&name.as_str()) => {
                other_default.push(format!("{name}: redis {value:?}, kvik {mine:?}"))
            }
            Some(_) => {}
        }
    }
    assert!(missing.is_empty(), "unknown to kvik: {missing:?}");
    assert!(other_default.is_empty(), "defaults differ:\n{}", other_default.join("\n"));
    // Each answers CONFIG SET with its own value, as Redis does.
    let mut s = connect(kvik.port);
    for (name, value) in &ours {
        let reply = call(&mut s, &[b"CONFIG", b"GET", name.as_bytes()]);
        assert!(reply.ends_with(format!("${}\r\n{value}\r\n", value.len()).as_bytes()), "{name}");
    }
}

/// `CONFIG SET port` moves the listener, as Redis 7.0 does: clients already
/// connected stay, new ones connect to the new port only, and a port that
/// cannot be had is refused with Redis's text, the old one staying.
#[test]
fn config_set_port_rebinds() {
    let kvik = Kvik::start(&[]);
    let mut s = connect(kvik.port);
    let new_port = free_port();
    let set = |s: &mut TcpStream, port: u16| call(s, &[b"CONFIG", b"SET", b"port", port.to_string().as_bytes()]);
    assert_eq!(set(&mut s, new_port), b"+OK\r\n");
    assert_eq!(config_get(&mut s, "port"), new_port.to_string());
    let mut moved = connect(new_port);
    assert_eq!(call(&mut moved, &[b"PING"]), b"+PONG\r\n");
    let info = String::from_utf8_lossy(&call(&mut moved, &[b"INFO", b"server"])).into_owned();
    assert!(info.contains(&format!("tcp_port:{new_port}\r\n")), "{info}");
    assert!(TcpStream::connect(("127.0.0.1", kvik.port)).is_err(), "the old port is closed");
    assert_eq!(call(&mut s, &[b"PING"]), b"+PONG\r\n", "a client of the old port stays");
    let taken = std::net::TcpListener::bind(("127.0.0.1", 0)).expect("a port to occupy");
    let busy = taken.local_addr().expect("addr").port();
    assert_eq!(
        set(&mut s, busy),
        b"-ERR CONFIG SET failed (possibly related to argument 'port') - Unable to listen on this port. Check server logs.\r\n"
    );
    assert_eq!(config_get(&mut s, "port"), new_port.to_string());
    assert_eq!(call(&mut connect(new_port), &[b"PING"]), b"+PONG\r\n");
}

/// The soft open-files limit of process `pid`.
fn open_files_soft_limit(pid: u32) -> u64 {
    let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).expect("limits");
    let line = limits.lines().find(|l| l.starts_with("Max open files")).expect("open files line");
    line.split_whitespace().nth(3).and_then(|v| v.parse().ok()).expect("a number")
}

/// `maxclients` never asks for more file descriptors than the process may
/// open: the limit is raised when it can be, and `maxclients` lowered (with
/// Redis's log line) when it cannot; CONFIG SET refuses more than fits.
#[test]
fn maxclients_fits_the_open_files_limit() {
    let port = free_port();
    let script = format!("ulimit -n 200 && exec {KVIK} --bind 127.0.0.1 --port {port} --maxclients 1000");
    let cwd = kvik_testkit::ScratchDir::new("runtime");
    let child = Command::new("sh")
        .args(["-c", &script])
        .current_dir(cwd.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start kvik-server under a low ulimit");
    let kvik = Kvik { child, port, _cwd: cwd };
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "kvik-server did not start");
        thread::sleep(Duration::from_millis(20));
    }
    let mut s = connect(port);
    let maxclients: u64 = config_get(&mut s, "maxclients").parse().expect("a number");
    let soft = open_files_soft_limit(kvik.child.id());
    assert!(maxclients + 32 <= soft, "maxclients {maxclients} with {soft} open files");
    let refused = String::from_utf8_lossy(&call(&mut s, &[b"CONFIG", b"SET", b"maxclients", b"5000000"])).into_owned();
    assert!(
        refused.contains("The operating system is not able to handle the specified number of clients"),
        "{refused}"
    );
    s.write_all(b"SHUTDOWN\r\n").expect("send");
    let _ = read_until(&mut s, |_| false);
    let (_, log) = kvik.wait_exit();
    if maxclients < 1000 {
        assert!(log.contains("maxclients has been reduced to"), "{log}");
    }
}
