//! `CLIENT PAUSE`: held commands wait for the pause to end, on kvik as on
//! redis-server. Each scenario runs against both servers; replies must match
//! and the waits must fall in the same generous time bounds (the machine
//! running the tests may be busy, so the bounds are wide).

mod common;

use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::{call, connect, start_kvik, start_kvik_with, ServerProcess};

/// How long the tests pause for.
const PAUSE_MS: u64 = 600;
/// A wait shorter than this did not wait for the pause.
const WAITED: Duration = Duration::from_millis(PAUSE_MS - 100);
/// An answer faster than this did not wait (generous for a loaded machine).
const AT_ONCE: Duration = Duration::from_millis(PAUSE_MS / 2);

/// One request's reply and how long it took.
fn timed(stream: &mut TcpStream, args: &[&[u8]]) -> (Vec<u8>, Duration) {
    let started = Instant::now();
    let reply = call(stream, args);
    (reply, started.elapsed())
}

fn pause(port: u16, mode: &[u8], ms: u64) {
    let mut admin = connect(port);
    assert_eq!(call(&mut admin, &[b"CLIENT", b"PAUSE", ms.to_string().as_bytes(), mode]), b"+OK\r\n");
}

/// Under `WRITE`, reads and rejected requests are answered at once and a
/// write waits for the pause to end; returns the replies.
fn write_mode(port: u16) -> Vec<Vec<u8>> {
    let mut c = connect(port);
    call(&mut c, &[b"SET", b"k", b"old"]);
    pause(port, b"WRITE", PAUSE_MS);
    let mut replies = Vec::new();
    for args in [&[&b"GET"[..], b"k"][..], &[b"PING"], &[b"SET", b"k"], &[b"NOSUCH"]] {
        let (reply, took) = timed(&mut c, args);
        assert!(took < AT_ONCE, "{:?} took {took:?}", args[0].escape_ascii().to_string());
        replies.push(reply);
    }
    let (reply, took) = timed(&mut c, &[b"SET", b"k", b"new"]);
    assert!(took >= WAITED && took < Duration::from_secs(5), "the paused SET took {took:?}");
    replies.push(reply);
    replies.push(call(&mut c, &[b"GET", b"k"]));
    replies
}

/// Under `ALL` even reads wait, and so does `CLIENT UNPAUSE` from another
/// client; a pause ends at its timeout.
fn all_mode(port: u16) -> Vec<Vec<u8>> {
    let mut c = connect(port);
    pause(port, b"ALL", PAUSE_MS);
    let (get, took) = timed(&mut c, &[b"GET", b"k"]);
    assert!(took >= WAITED && took < Duration::from_secs(5), "the paused GET took {took:?}");
    let (ping, took) = timed(&mut c, &[b"PING"]);
    assert!(took < AT_ONCE, "after the pause PING took {took:?}");
    vec![get, ping]
}

/// `CLIENT UNPAUSE` releases a waiting write long before the timeout.
fn unpause_releases(port: u16) -> Vec<u8> {
    pause(port, b"WRITE", 20_000);
    let writer = thread::spawn(move || {
        let mut c = connect(port);
        timed(&mut c, &[b"INCR", b"n"])
    });
    thread::sleep(Duration::from_millis(300));
    assert!(!writer.is_finished(), "the write did not wait");
    let mut admin = connect(port);
    assert_eq!(call(&mut admin, &[b"CLIENT", b"UNPAUSE"]), b"+OK\r\n");
    let (reply, took) = writer.join().expect("writer");
    assert!(took >= Duration::from_millis(250) && took < Duration::from_secs(5), "the INCR took {took:?}");
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
    pause(port, b"WRITE", 2_000);
    let writer = thread::spawn(move || {
        let mut c = connect(port);
        timed(&mut c, &[b"SET", b"k", b"v"])
    });
    thread::sleep(Duration::from_millis(100));
    let mut reader = connect(port);
    for _ in 0..20 {
        let (reply, took) = timed(&mut reader, &[b"GET", b"k"]);
        assert_eq!(reply, b"$-1\r\n");
        assert!(took < Duration::from_millis(500), "GET took {took:?}");
    }
    let mut admin = connect(port);
    assert_eq!(call(&mut admin, &[b"CLIENT", b"UNPAUSE"]), b"+OK\r\n");
    let (reply, _) = writer.join().expect("writer");
    assert_eq!(reply, b"+OK\r\n");
}
