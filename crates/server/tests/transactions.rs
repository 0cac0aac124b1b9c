//! Transactions under concurrency, against a kvik-server with two event
//! loops: WATCH-retry loops count exactly, MULTI transfers between keys on
//! different shards never show a reader a broken sum, and transactions that
//! reserve every shard run alongside other traffic without deadlock.
//!
//! Every loop is bounded, every read has a timeout, and the threads are
//! watched with a deadline, so a lost wake-up or a deadlock fails the test
//! instead of hanging it.

mod common;

/// `common::run_threads` with this file's deadline.
fn run_threads_until<R: Send + 'static>(count: usize, work: impl Fn(usize) -> R + Send + Sync + 'static) -> Vec<R> {
    common::run_threads(count, DEADLINE, work)
}

use std::net::TcpStream;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use common::{call_text, connect, elements_of, start_kvik_with, ServerProcess};

/// How long all the threads of one test may take together.
const DEADLINE: Duration = Duration::from_secs(60);

fn start() -> ServerProcess {
    start_kvik_with(&["--threads", "2"])
}

fn integer(reply: &[u8]) -> i64 {
    let text = std::str::from_utf8(reply).expect("ascii reply");
    let digits = text.trim_start_matches([':', '$']).trim_end();
    // A bulk string reply: `$len\r\nvalue\r\n`.
    let value = digits.rsplit("\r\n").next().unwrap_or(digits);
    value.parse().unwrap_or_else(|_| panic!("not an integer reply: {}", reply.escape_ascii()))
}

/// `EXEC`'s elements, `None` for a transaction a watched change failed.
fn exec(stream: &mut TcpStream) -> Option<Vec<Vec<u8>>> {
    let reply = call_text(stream, &["EXEC"]);
    if reply == b"*-1\r\n" {
        return None;
    }
    let (_, elements) = elements_of(&reply, false).unwrap_or_else(|| panic!("EXEC reply: {}", reply.escape_ascii()));
    Some(elements)
}

/// The classic optimistic increment: WATCH, read, MULTI, write, EXEC, and
/// again when a concurrent client got there first. With every EXEC atomic
/// and every change seen by the watchers, no increment is lost.
#[test]
fn watch_retry_increments_from_many_clients_count_exactly() {
    const CLIENTS: usize = 8;
    const INCREMENTS: usize = 40;
    let server = start();
    let port = server.port;
    let retries = run_threads_until(CLIENTS, move |_| {
        let mut s = connect(port);
        let mut retries = 0;
        for _ in 0..INCREMENTS {
            let mut done = false;
            for _ in 0..10_000 {
                assert_eq!(call_text(&mut s, &["WATCH", "counter"]), b"+OK\r\n");
                let now = call_text(&mut s, &["GET", "counter"]);
                let value = if now == b"$-1\r\n" { 0 } else { integer(&now) };
                assert_eq!(call_text(&mut s, &["MULTI"]), b"+OK\r\n");
                assert_eq!(call_text(&mut s, &["SET", "counter", &(value + 1).to_string()]), b"+QUEUED\r\n");
                if exec(&mut s).is_some() {
                    done = true;
                    break;
                }
                retries += 1;
            }
            assert!(done, "an increment never got through");
        }
        retries
    });
    let mut s = connect(port);
    assert_eq!(integer(&call_text(&mut s, &["GET", "counter"])), (CLIENTS * INCREMENTS) as i64);
    eprintln!("{} retries", retries.iter().sum::<usize>());
}

/// Money moves between accounts on different shards inside MULTI while
/// readers read every account inside MULTI: each reader must see the same
/// total every time, which separate reads would not.
#[test]
fn transfers_across_shards_keep_the_sum_for_readers_in_multi() {
    const ACCOUNTS: usize = 8;
    const START: i64 = 1000;
    const WRITERS: usize = 4;
    const READERS: usize = 3;
    const ROUNDS: usize = 200;
    const FILLER: usize = 50;
    let server = start();
    let port = server.port;
    let accounts: Vec<String> = (0..ACCOUNTS).map(|i| format!("account:{i}")).collect();
    let mut s = connect(port);
    for a in &accounts {
        assert_eq!(call_text(&mut s, &["SET", a, &START.to_string()]), b"+OK\r\n");
    }
    let accounts = Arc::new(accounts);
    let sums = run_threads_until(WRITERS + READERS, move |t| {
        let mut s = connect(port);
        let mut sums = Vec::new();
        for round in 0..ROUNDS {
            assert_eq!(call_text(&mut s, &["MULTI"]), b"+OK\r\n");
            if t < WRITERS {
                let from = &accounts[(t + round) % ACCOUNTS];
                let to = &accounts[(t * 3 + round * 7 + 1) % ACCOUNTS];
                let amount = ((t + round) % 17 + 1).to_string();
                assert_eq!(call_text(&mut s, &["DECRBY", from, &amount]), b"+QUEUED\r\n");
                // Work between the two halves widens the window a reader
                // would see a half-done transfer in, were EXEC not atomic.
                for _ in 0..FILLER {
                    assert_eq!(call_text(&mut s, &["STRLEN", to]), b"+QUEUED\r\n");
                }
                assert_eq!(call_text(&mut s, &["INCRBY", to, &amount]), b"+QUEUED\r\n");
                assert_eq!(exec(&mut s).map(|e| e.len()), Some(FILLER + 2));
            } else {
                for a in accounts.iter() {
                    assert_eq!(call_text(&mut s, &["GET", a]), b"+QUEUED\r\n");
                }
                let values = exec(&mut s).expect("no watches, so EXEC runs");
                sums.push(values.iter().map(|v| integer(v)).sum::<i64>());
            }
        }
        sums
    });
    let all: Vec<i64> = sums.into_iter().flatten().collect();
    assert_eq!(all.len(), READERS * ROUNDS);
    let expected = START * ACCOUNTS as i64;
    assert!(
        all.iter().all(|&sum| sum == expected),
        "a reader saw a broken sum: {:?}",
        all.iter().find(|&&s| s != expected)
    );
}

/// Transactions whose commands cannot say their keys (KEYS, DBSIZE,
/// FLUSHALL) reserve every shard; they run among transactions on a few
/// shards, plain multi-key commands and single-key traffic, and everything
/// finishes in bounded time.
#[test]
fn transactions_over_every_shard_run_alongside_traffic() {
    const ROUNDS: usize = 150;
    let server = start();
    let port = server.port;
    run_threads_until(8, move |t| {
        let mut s = connect(port);
        for round in 0..ROUNDS {
            let key = format!("k:{t}:{}", round % 10);
            match t % 4 {
                0 => {
                    call_text(&mut s, &["MULTI"]);
                    call_text(&mut s, &["SET", &key, "v"]);
                    call_text(&mut s, &["KEYS", "k:*"]);
                    call_text(&mut s, &["DBSIZE"]);
                    if round % 50 == 0 {
                        call_text(&mut s, &["FLUSHALL"]);
                    }
                    let replies = exec(&mut s).expect("EXEC runs");
                    assert!(replies.len() >= 3);
                }
                1 => {
                    call_text(&mut s, &["MULTI"]);
                    call_text(&mut s, &["INCR", "x"]);
                    call_text(&mut s, &["MSET", &key, "1", "other", "2"]);
                    call_text(&mut s, &["INCR", "y"]);
                    assert_eq!(exec(&mut s).map(|e| e.len()), Some(3));
                }
                2 => {
                    call_text(&mut s, &["WATCH", "x", &key]);
                    call_text(&mut s, &["MULTI"]);
                    call_text(&mut s, &["LPUSH", &key, "a"]);
                    call_text(&mut s, &["DEL", &key]);
                    let _ = exec(&mut s);
                }
                _ => {
                    call_text(&mut s, &["MSET", "a", "1", "b", "2", "c", "3", &key, "4"]);
                    call_text(&mut s, &["MGET", "a", "b", "c", &key]);
                    call_text(&mut s, &["SET", &key, "x", "PX", "1"]);
                }
            }
        }
    });
    let mut s = connect(port);
    assert_eq!(call_text(&mut s, &["PING"]), b"+PONG\r\n", "the server still answers");
}

/// CLIENT LIST shows an open transaction: `flags=x` and the number of
/// queued commands in `multi=`, and `multi=-1` once it ends.
#[test]
fn client_list_shows_open_transactions() {
    let server = start();
    let mut a = connect(server.port);
    let mut b = connect(server.port);
    let line = |b: &mut TcpStream| String::from_utf8_lossy(&call_text(b, &["CLIENT", "LIST"])).into_owned();
    call_text(&mut a, &["MULTI"]);
    call_text(&mut a, &["SET", "k", "v"]);
    call_text(&mut a, &["GET", "k"]);
    let listing = line(&mut b);
    assert!(listing.contains(" flags=x ") && listing.contains(" multi=2 "), "{listing}");
    assert_eq!(exec(&mut a).map(|e| e.len()), Some(2));
    let listing = line(&mut b);
    assert!(!listing.contains(" flags=x ") && !listing.contains(" multi=2 "), "{listing}");
}

/// A watched key whose deadline passes is seen by EXEC whichever way the
/// key went: the active expiry thread removing it counts too.
#[test]
fn active_expiry_of_a_watched_key_fails_exec() {
    let server = start();
    let mut a = connect(server.port);
    assert_eq!(call_text(&mut a, &["SET", "e", "1", "PX", "50"]), b"+OK\r\n");
    assert_eq!(call_text(&mut a, &["WATCH", "e"]), b"+OK\r\n");
    thread::sleep(Duration::from_millis(400));
    assert_eq!(call_text(&mut a, &["MULTI"]), b"+OK\r\n");
    assert_eq!(call_text(&mut a, &["SET", "e", "2"]), b"+QUEUED\r\n");
    assert_eq!(exec(&mut a), None);
    assert_eq!(call_text(&mut a, &["EXISTS", "e"]), b":0\r\n");
}

/// `CLIENT PAUSE WRITE` holds back an EXEC whose queued commands write (and
/// the queuing of a write), as Redis 7.0 does, but not a read-only one.
#[test]
fn client_pause_write_holds_exec_of_writes() {
    const PAUSE_MS: u64 = 400;
    let server = start();
    let (mut a, mut b) = (connect(server.port), connect(server.port));
    let timed = |s: &mut TcpStream, args: &[&str]| {
        let started = Instant::now();
        let reply = call_text(s, args);
        (reply, started.elapsed())
    };
    let pause =
        |b: &mut TcpStream| assert_eq!(call_text(b, &["CLIENT", "PAUSE", &PAUSE_MS.to_string(), "WRITE"]), b"+OK\r\n");
    let held = Duration::from_millis(PAUSE_MS * 3 / 4);
    call_text(&mut a, &["MULTI"]);
    call_text(&mut a, &["SET", "x", "1"]);
    pause(&mut b);
    let (reply, took) = timed(&mut a, &["EXEC"]);
    assert_eq!(reply, b"*1\r\n+OK\r\n");
    assert!(took >= held, "EXEC of a write ran during the pause ({took:?})");
    pause(&mut b);
    call_text(&mut a, &["MULTI"]);
    let (reply, took) = timed(&mut a, &["GET", "x"]);
    assert_eq!(reply, b"+QUEUED\r\n");
    let (reply, took_exec) = timed(&mut a, &["EXEC"]);
    assert_eq!(reply, b"*1\r\n$1\r\n1\r\n");
    assert!(took + took_exec < held, "a read-only transaction waited ({took:?}, {took_exec:?})");
}
