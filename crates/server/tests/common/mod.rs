//! Starting servers as child processes and talking to them over loopback.
//!
//! Shared by the integration tests: each test starts its own servers on free
//! ports and stops them when the handle is dropped, so tests can run in
//! parallel and leave nothing behind.

#![allow(dead_code)]

pub mod diff;
pub mod respb;
pub mod rng;
pub mod seeded;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::thread;
use std::time::Duration;

/// How long a reply may take before the test gives up.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(5);

/// A server process, killed and reaped on drop (kvik-testkit's, which
/// also checks that the process listening is the one it started).
pub type ServerProcess = kvik_testkit::Server;

#[allow(unused_imports)]
pub use kvik_testkit::{free_port, listens_on};

/// Start the kvik-server binary built for these tests.
pub fn start_kvik() -> ServerProcess {
    start_kvik_with(&[])
}

/// Start kvik-server with extra options (`--requirepass secret`). Without a
/// `--save` among them it has no save points, as the redis-server the
/// differential tests compare it with (`kvik_testkit::start_redis`).
pub fn start_kvik_with(extra: &[&str]) -> ServerProcess {
    let mut args: Vec<String> = ["--bind", "127.0.0.1", "--port", "{port}"].iter().map(|s| s.to_string()).collect();
    if !extra.contains(&"--save") {
        args.extend(["--save".to_string(), String::new()]);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    kvik_testkit::start("kvik", env!("CARGO_BIN_EXE_kvik-server").into(), args)
}

/// Whether `redis-server` can be run from PATH.
pub fn redis_available() -> bool {
    Command::new("redis-server")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map(|s| s.success())
        .unwrap_or(false)
}

/// Start a real redis-server with persistence off, or `None` when it is not
/// installed. Under CI (`CI` set) a missing redis-server is a failure: the
/// comparison is the point of these tests and must not silently vanish.
pub fn start_redis_or_skip(test: &str) -> Option<ServerProcess> {
    start_redis_with_or_skip(test, &[])
}

/// [`start_redis_or_skip`] with extra options (`--requirepass secret`).
pub fn start_redis_with_or_skip(test: &str, extra: &[&str]) -> Option<ServerProcess> {
    if !redis_available() {
        if std::env::var_os("CI").is_some() {
            panic!("{test}: redis-server is not on PATH, and CI must compare against it");
        }
        eprintln!("{test}: skipped, redis-server is not on PATH (make test installs it)");
        return None;
    }
    let mut args: Vec<String> = ["--port", "{port}", "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        .iter()
        .chain(&["--daemonize", "no", "--loglevel", "warning"])
        .map(|s| s.to_string())
        .collect();
    args.extend(extra.iter().map(|s| s.to_string()));
    Some(kvik_testkit::start("redis", "redis-server".into(), args))
}

/// A connection to `port` with a read timeout, so a missing reply fails the test instead of hanging it.
pub fn connect(port: u16) -> TcpStream {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to test server");
    stream.set_read_timeout(Some(REPLY_TIMEOUT)).expect("set read timeout");
    stream.set_nodelay(true).expect("set nodelay");
    stream
}

/// What a server sent back for one exchange.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// Every byte received.
    pub bytes: Vec<u8>,
    /// Whether the server closed the connection.
    pub closed: bool,
}

impl Answer {
    /// The bytes as text with control bytes escaped, for failure messages.
    pub fn show(&self) -> String {
        let text: String = self.bytes.escape_ascii().to_string();
        if self.closed {
            format!("{text} <closed>")
        } else {
            text
        }
    }
}

/// Wait, if need be, until at least 200 ms remain before the wall clock's
/// next whole second.
///
/// OBJECT IDLETIME counts whole seconds of the clock, so a command sequence
/// that reads it straight after an access answers 0 only if it does not
/// straddle a second boundary. Redis hides this by caching its LRU clock in
/// the cron; a test that sends such a sequence calls this first, so that
/// both servers run it within one second.
pub fn clear_of_second_boundary() {
    const MARGIN_MS: u128 = 200;
    let into_second_ms =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() % 1000);
    if into_second_ms + MARGIN_MS >= 1000 {
        // Sleep into the next second, a little past its start.
        let left = u64::try_from(1000 - into_second_ms).unwrap_or(0) + 5;
        thread::sleep(Duration::from_millis(left));
    }
}

/// Send `request`, then read until `done` says the reply is complete or the
/// server closes the connection.
pub fn exchange(port: u16, request: &[u8], done: impl Fn(&[u8]) -> bool) -> Answer {
    let mut stream = connect(port);
    stream.write_all(request).expect("send request");
    read_until(&mut stream, done)
}

/// Read from `stream` until `done(bytes)` holds or the server closes.
pub fn read_until(stream: &mut TcpStream, done: impl Fn(&[u8]) -> bool) -> Answer {
    let mut bytes = Vec::new();
    let mut chunk = [0u8; 64 * 1024];
    loop {
        if done(&bytes) {
            return Answer { bytes, closed: false };
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Answer { bytes, closed: true },
            Ok(n) => bytes.extend_from_slice(&chunk[..n]),
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            // A reset after the server's last bytes is a close as far as the client can tell.
            Err(e) if e.kind() == ErrorKind::ConnectionReset => return Answer { bytes, closed: true },
            Err(e) => panic!("no complete reply within {REPLY_TIMEOUT:?} ({e}); got so far: {}", bytes.escape_ascii()),
        }
    }
}

/// The value of `name` in the text of an `INFO` reply (`name:value` lines);
/// panics, showing the reply, when the field is missing.
pub fn info_value<'a>(info: &'a str, name: &str) -> &'a str {
    let value = info.lines().find_map(|l| l.strip_prefix(name)?.strip_prefix(':'));
    value.unwrap_or_else(|| panic!("INFO lacks {name}:\n{info}"))
}

/// Send one request on `stream` and read one complete reply.
pub fn call(stream: &mut TcpStream, args: &[&[u8]]) -> Vec<u8> {
    stream.write_all(&diff::multibulk(args)).expect("send");
    read_until(stream, reply_complete).bytes
}

/// [`call`] with arguments written as text.
pub fn call_text(stream: &mut TcpStream, args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    call(stream, &args)
}

/// Send `args` and return the reply, which must not be an error.
pub fn call_ok(stream: &mut TcpStream, args: &[&[u8]]) -> Vec<u8> {
    let reply = call(stream, args);
    assert!(!reply.starts_with(b"-"), "{}: {}", String::from_utf8_lossy(&args.join(&b' ')), reply.escape_ascii());
    reply
}

/// [`call_ok`] with the words of `line` (split on spaces).
pub fn call_line(stream: &mut TcpStream, line: &str) -> Vec<u8> {
    let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    call_ok(stream, &words)
}

/// Split a stream of replies into single replies; a trailing incomplete part is kept whole.
pub fn split_replies(mut buf: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    while !buf.is_empty() {
        match reply_len(buf) {
            Some(n) => {
                out.push(buf[..n].to_vec());
                buf = &buf[n..];
            }
            None => {
                out.push(buf.to_vec());
                break;
            }
        }
    }
    out
}

/// The header line and elements of an array or set reply (and, with
/// `maps`, of a map reply, but not of a null array); `None` for any other.
pub fn elements_of(reply: &[u8], maps: bool) -> Option<(Vec<u8>, Vec<Vec<u8>>)> {
    let aggregate = match reply.first() {
        Some(b'*' | b'~') => !(maps && reply.starts_with(b"*-1")),
        Some(b'%') => maps,
        _ => false,
    };
    if !aggregate {
        return None;
    }
    let line_end = reply.windows(2).position(|w| w == b"\r\n")? + 2;
    Some((reply[..line_end].to_vec(), split_replies(&reply[line_end..])))
}

/// Whether `got` holds exactly one complete reply.
pub fn reply_complete(got: &[u8]) -> bool {
    reply_len(got) == Some(got.len())
}

/// The length of the first complete RESP2/RESP3 reply in `buf`, if it is all there.
pub fn reply_len(buf: &[u8]) -> Option<usize> {
    let line_end = buf.windows(2).position(|w| w == b"\r\n")?;
    let head = std::str::from_utf8(&buf[1..line_end]).ok();
    let after = line_end + 2;
    let count = || head.and_then(|h| h.parse::<i64>().ok());
    match buf.first()? {
        b'+' | b'-' | b':' | b'_' | b',' | b'#' | b'(' => Some(after),
        b'$' | b'=' | b'!' => {
            let n = count()?;
            if n < 0 {
                return Some(after);
            }
            let end = after + n as usize + 2;
            (buf.len() >= end).then_some(end)
        }
        b'*' | b'~' | b'>' | b'%' | b'|' => {
            let n = count()?;
            if n < 0 {
                return Some(after);
            }
            let items = if matches!(buf[0], b'%' | b'|') { n * 2 } else { n };
            let mut at = after;
            for _ in 0..items {
                at += reply_len(&buf[at..])?;
            }
            // An attribute is followed by the reply it annotates.
            if buf[0] == b'|' {
                at += reply_len(&buf[at..])?;
            }
            Some(at)
        }
        _ => None,
    }
}

/// Run `count` threads of `work(index)` and wait for all of them, failing
/// when one panics or when they are not all done within `deadline` (a
/// deadlock in the server must fail the test, not hang it).
pub fn run_threads<R: Send + 'static>(
    count: usize,
    deadline: std::time::Duration,
    work: impl Fn(usize) -> R + Send + Sync + 'static,
) -> Vec<R> {
    use std::thread::JoinHandle;
    let work = std::sync::Arc::new(work);
    let handles: Vec<JoinHandle<R>> = (0..count)
        .map(|i| {
            let work = std::sync::Arc::clone(&work);
            std::thread::spawn(move || work(i))
        })
        .collect();
    let until = std::time::Instant::now() + deadline;
    while !handles.iter().all(JoinHandle::is_finished) {
        assert!(std::time::Instant::now() < until, "client threads still running after {deadline:?}: deadlock?");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    handles.into_iter().map(|h| h.join().unwrap_or_else(|_| panic!("a client thread failed"))).collect()
}

/// `keyspace_hits` and `keyspace_misses` after `command`, counted from zero
/// (the keyspace emptied and `setup` run first).
pub fn lookups(port: u16, setup: &[&[&str]], command: &[&str]) -> String {
    let mut conn = connect(port);
    let mut run = |args: &[&str]| call_text(&mut conn, args);
    run(&["FLUSHALL"]);
    for s in setup {
        run(s);
    }
    run(&["CONFIG", "RESETSTAT"]);
    run(command);
    let info = String::from_utf8_lossy(&run(&["INFO", "stats"])).into_owned();
    info.lines().filter(|l| l.starts_with("keyspace_")).collect::<Vec<_>>().join(" ")
}

/// Wait until no rewrite runs or is scheduled.
pub fn wait_for_rewrite(k: &mut TcpStream) -> String {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let info = String::from_utf8_lossy(&call(k, &[b"INFO", b"persistence"])).into_owned();
        if info_value(&info, "aof_rewrite_in_progress") == "0" && info_value(&info, "aof_rewrite_scheduled") == "0" {
            return info;
        }
        assert!(std::time::Instant::now() < deadline, "the rewrite did not end: {info}");
        std::thread::sleep(Duration::from_millis(10));
    }
}
