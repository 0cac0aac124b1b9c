//! `CLIENT PAUSE`: held commands wait for the pause to end, on kvik as on
//! redis-server. Each scenario runs against both servers; replies must match,
//! and each reply must come before or after the end of the pause as Redis's
//! rules say. Times are measured from when the pause was requested, so a busy
//! machine slows the tests down without making them fail.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{call, connect, start_kvik, start_kvik_with, ServerProcess};

/// How long the tests pause for.
const PAUSE: Duration = Duration::from_millis(1500);
/// Servers count the pause in whole milliseconds, so it may end this much early.
const ROUNDING: Duration = Duration::from_millis(20);

/// Pause the server and return when the request was sent: the pause ends no
/// earlier than `PAUSE` after that (less `ROUNDING`), and no later than `PAUSE`
/// after the reply.
fn pause(port: u16, mode: &[u8], ms: u64) -> Instant {
    let mut admin = connect(port);
    let sent = Instant::now();
    assert_eq!(call(&mut admin, &[b"CLIENT", b"PAUSE", ms.to_string().as_bytes(), mode]), b"+OK\r\n");
    sent
}

fn pause_ms() -> u64 {
    PAUSE.as_millis() as u64
}

/// Under `WRITE`, reads and rejected requests are answered before the pause
/// ends and a write only after; returns the replies.
fn write_mode(port: u16) -> Vec<Vec<u8>> {
    let mut c = connect(port);
    call(&mut c, &[b"SET", b"k", b"old"]);
    let paused = pause(port, b"WRITE", pause_ms());
    let mut replies = Vec::new();
    for args in [&[&b"GET"[..], b"k"][..], &[b"PING"], &[b"SET", b"k"], &[b"NOSUCH"]] {
        replies.push(call(&mut c, args));
        assert!(paused.elapsed() < PAUSE - ROUNDING, "{} waited for the pause", args[0].escape_ascii());
    }
    replies.push(call(&mut c, &[b"SET", b"k", b"new"]));
    assert!(paused.elapsed() >= PAUSE - ROUNDING, "the SET ran during the pause");
    replies.push(call(&mut c, &[b"GET", b"k"]));
    replies
}

/// Under `ALL` even reads wait, until the pause's timeout.
fn all_mode(port: u16) -> Vec<Vec<u8>> {
    let mut c = connect(port);
    let paused = pause(port, b"ALL", pause_ms());
    let get = call(&mut c, &[b"GET", b"k"]);
    assert!(paused.elapsed() >= PAUSE - ROUNDING, "the GET ran during the pause");
    let after = Instant::now();
    let ping = call(&mut c, &[b"PING"]);
    assert!(after.elapsed() < PAUSE, "the pause outlived its timeout");
    vec![get, ping]
}

/// `CLIENT UNPAUSE` releases a waiting write long before the timeout.
fn unpause_releases(port: u16) -> Vec<u8> {
    let paused = pause(port, b"WRITE", 60_000);
    let writer = thread::spawn(move || {
        let mut c = connect(port);
        let reply = call(&mut c, &[b"INCR", b"n"]);
        (reply, Instant::now())
    });
    thread::sleep(Duration::from_millis(300));
    assert!(!writer.is_finished(), "the write did not wait");
    let mut admin = connect(port);
    let unpaused = Instant::now();
    assert_eq!(call(&mut admin, &[b"CLIENT", b"UNPAUSE"]), b"+OK\r\n");
    let (reply, done) = writer.join().expect("writer");
    assert!(done >= unpaused, "the INCR ran before CLIENT UNPAUSE");
    assert!(paused.elapsed() < Duration::from_secs(30), "the INCR waited for the timeout");
    reply
}

fn redis() -> Option<ServerProcess> {
    common::start_redis_or_skip("pause")
}

#[test]
fn write_pause_holds_writes_only() {
    let kvik = start_kvik();
    let ours = write_mode(kvik.port);
    assert_eq!(ours.last().map(Vec::as_slice), Some(&b"$3\r\nnew\r\n"[..]));
    if let Some(redis) = redis() {
        assert_eq!(ours, write_mode(redis.port));
    }
}

#[test]
fn all_pause_holds_every_command_until_its_timeout() {
    let kvik = start_kvik();
    let ours = all_mode(kvik.port);
    if let Some(redis) = redis() {
        assert_eq!(ours, all_mode(redis.port));
    }
}

#[test]
fn unpause_releases_waiting_commands() {
    let kvik = start_kvik();
    let ours = unpause_releases(kvik.port);
    assert_eq!(ours, b":1\r\n");
    if let Some(redis) = redis() {
        assert_eq!(ours, unpause_releases(redis.port));
    }
}

/// A waiting client does not hold up others served by the same thread.
#[test]
fn a_waiting_client_does_not_stall_its_thread() {
    let kvik = start_kvik_with(&["--threads", "1"]);
    let port = kvik.port;
    pause(port, b"WRITE", 60_000);
    let writer = thread::spawn(move || {
        let mut c = connect(port);
        call(&mut c, &[b"SET", b"k", b"v"])
    });
    thread::sleep(Duration::from_millis(100));
    let mut reader = connect(port);
    for _ in 0..20 {
        assert_eq!(call(&mut reader, &[b"GET", b"k"]), b"$-1\r\n");
    }
    assert!(!writer.is_finished(), "the SET did not wait");
    let mut admin = connect(port);
    assert_eq!(call(&mut admin, &[b"CLIENT", b"UNPAUSE"]), b"+OK\r\n");
    assert_eq!(writer.join().expect("writer"), b"+OK\r\n");
}

/// Under a write pause a client held back counts in `blocked_clients`, and
/// a key whose time is up reads as missing but is not deleted (an expiry is
/// a write) until the pause ends: `DBSIZE` still counts it and no expiry is
/// counted. Returns what was observed during and after the pause.
fn held_clients_and_expiry(port: u16) -> Vec<String> {
    let mut c = connect(port);
    call(&mut c, &[b"SET", b"e", b"v", b"PX", b"100"]);
    pause(port, b"WRITE", 60_000);
    let writer = thread::spawn(move || {
        let mut w = connect(port);
        call(&mut w, &[b"SET", b"w", b"1"])
    });
    thread::sleep(Duration::from_millis(400));
    let info = |c: &mut std::net::TcpStream, field: &str| {
        let text = String::from_utf8_lossy(&call(c, &[b"INFO", b"everything"])).into_owned();
        common::info_value(&text, field).trim().to_string()
    };
    let mut seen = vec![
        info(&mut c, "blocked_clients"),
        String::from_utf8_lossy(&call(&mut c, &[b"GET", b"e"])).into_owned(),
        String::from_utf8_lossy(&call(&mut c, &[b"DBSIZE"])).into_owned(),
        info(&mut c, "expired_keys"),
    ];
    assert_eq!(call(&mut c, &[b"CLIENT", b"UNPAUSE"]), b"+OK\r\n");
    assert_eq!(writer.join().expect("writer"), b"+OK\r\n");
    seen.push(info(&mut c, "blocked_clients"));
    seen.push(String::from_utf8_lossy(&call(&mut c, &[b"GET", b"e"])).into_owned());
    seen.push(String::from_utf8_lossy(&call(&mut c, &[b"DBSIZE"])).into_owned());
    seen.push(info(&mut c, "expired_keys"));
    seen
}

#[test]
fn a_write_pause_counts_held_clients_and_holds_expiry_back() {
    let kvik = start_kvik();
    let ours = held_clients_and_expiry(kvik.port);
    assert_eq!(ours, ["1", "$-1\r\n", ":1\r\n", "0", "0", "$-1\r\n", ":1\r\n", "1"]);
    if let Some(redis) = redis() {
        assert_eq!(ours, held_clients_and_expiry(redis.port));
    }
}
