//! Blocked clients across connections: scenarios of several clients where
//! one blocks and others write, run against kvik-server and a real
//! redis-server with the replies compared byte for byte; timeouts measured
//! against the clock; and many waiters served by writers on several threads,
//! every element delivered exactly once.
//!
//! A scenario waits until the server lists a client as blocked (`flags=b`)
//! before the next step, so the order of events is the same on both servers.

mod common;

use std::io::Write;
use std::net::TcpStream;
use std::thread;
use std::time::{Duration, Instant};

use common::diff::multibulk;
use common::{call_text, connect, read_until, reply_complete, start_kvik_with, start_redis_or_skip, ServerProcess};

/// One step of a scenario; connections are numbered from 0.
enum Step {
    /// Send a command that blocks, and wait until the server lists the client as blocked.
    Block(usize, &'static str),
    /// Send a command and read its reply.
    Call(usize, &'static str),
    /// Send a command and read its reply without logging it (HELLO, whose reply shows the id).
    Quiet(usize, &'static str),
    /// Send a command that has no reply.
    Send(usize, &'static str),
    /// Send several commands in one write and read all their replies.
    Pipeline(usize, &'static [&'static str]),
    /// Read one reply on a connection (a blocked client's answer).
    Read(usize),
    /// Read this many replies on a connection.
    ReadN(usize, usize),
    /// `CLIENT UNBLOCK <id of the second> [mode]` from the first.
    Unblock(usize, usize, &'static str),
    /// `CLIENT KILL ID <id of the second>` from the first.
    Kill(usize, usize),
    /// Close a connection and wait until the server has let the client go.
    Close(usize),
}

use Step::*;

/// The requests for commands written as space-separated words, several
/// separated by `;`.
fn request(text: &str) -> Vec<u8> {
    text.split(';')
        .flat_map(|cmd| {
            let words: Vec<&[u8]> = cmd.split_whitespace().map(str::as_bytes).collect();
            multibulk(&words)
        })
        .collect()
}

/// The id of the client on `conn`.
fn client_id(conn: &mut TcpStream) -> String {
    let reply = call_text(conn, &["CLIENT", "ID"]);
    String::from_utf8_lossy(&reply).trim_start_matches(':').trim().to_string()
}

/// Wait until the server lists client `id` as blocked.
fn wait_until_blocked(control: &mut TcpStream, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let list = call_text(control, &["CLIENT", "LIST", "ID", id]);
        if String::from_utf8_lossy(&list).contains("flags=b") {
            return;
        }
        assert!(Instant::now() < deadline, "client {id} never blocked: {}", list.escape_ascii());
        thread::sleep(Duration::from_millis(2));
    }
}

/// Wait until the server no longer lists client `id`.
fn wait_until_gone(control: &mut TcpStream, id: &str) {
    let deadline = Instant::now() + Duration::from_secs(5);
    while String::from_utf8_lossy(&call_text(control, &["CLIENT", "LIST", "ID", id])).contains("id=") {
        assert!(Instant::now() < deadline, "client {id} is still listed");
        thread::sleep(Duration::from_millis(2));
    }
}

/// Run `steps` on `port` with `conns` connections; every reply read, in order.
fn run(port: u16, conns: usize, steps: &[Step]) -> Vec<String> {
    let mut control = connect(port);
    call_text(&mut control, &["FLUSHALL"]);
    let mut clients: Vec<Option<TcpStream>> = (0..conns).map(|_| Some(connect(port))).collect();
    let ids: Vec<String> = clients.iter_mut().map(|c| client_id(c.as_mut().expect("open"))).collect();
    let mut log = Vec::new();
    let conn = |clients: &mut Vec<Option<TcpStream>>, i: usize| -> TcpStream {
        clients[i].as_ref().expect("connection is open").try_clone().expect("clone stream")
    };
    for step in steps {
        match *step {
            Block(i, cmd) => {
                conn(&mut clients, i).write_all(&request(cmd)).expect("send");
                wait_until_blocked(&mut control, &ids[i]);
            }
            Quiet(i, cmd) => {
                let mut c = conn(&mut clients, i);
                c.write_all(&request(cmd)).expect("send");
                read_until(&mut c, reply_complete);
            }
            Send(i, cmd) => conn(&mut clients, i).write_all(&request(cmd)).expect("send"),
            Call(i, cmd) => {
                let mut c = conn(&mut clients, i);
                c.write_all(&request(cmd)).expect("send");
                log.push(read_until(&mut c, reply_complete).show());
            }
            Pipeline(i, cmds) => {
                let mut c = conn(&mut clients, i);
                let bytes: Vec<u8> = cmds.iter().flat_map(|cmd| request(cmd)).collect();
                c.write_all(&bytes).expect("send");
                let all = read_until(&mut c, |b| complete_replies(b) == cmds.len()).bytes;
                log.extend(common::split_replies(&all).iter().map(|r| r.escape_ascii().to_string()));
            }
            Read(i) => log.push(read_until(&mut conn(&mut clients, i), reply_complete).show()),
            ReadN(i, n) => {
                let all = read_until(&mut conn(&mut clients, i), |b| complete_replies(b) == n).bytes;
                log.extend(common::split_replies(&all).iter().map(|r| r.escape_ascii().to_string()));
            }
            Unblock(from, target, mode) => {
                let mut c = conn(&mut clients, from);
                let mut args = vec!["CLIENT", "UNBLOCK", &ids[target]];
                args.extend(Some(mode).filter(|m| !m.is_empty()));
                let reply = call_text(&mut c, &args);
                log.push(String::from_utf8_lossy(&reply).into_owned());
            }
            Kill(from, target) => {
                let mut c = conn(&mut clients, from);
                let reply = call_text(&mut c, &["CLIENT", "KILL", "ID", &ids[target]]);
                log.push(String::from_utf8_lossy(&reply).into_owned());
            }
            Close(i) => {
                clients[i] = None;
                wait_until_gone(&mut control, &ids[i]);
            }
        }
    }
    log
}

/// How many complete replies `buf` starts with.
fn complete_replies(mut buf: &[u8]) -> usize {
    let mut n = 0;
    while let Some(len) = common::reply_len(buf) {
        buf = &buf[len..];
        n += 1;
    }
    n
}

/// A scenario to compare.
struct Scenario {
    name: &'static str,
    conns: usize,
    steps: Vec<Step>,
}

fn scenarios() -> Vec<Scenario> {
    let s = |name, conns, steps| Scenario { name, conns, steps };
    vec![
        s("block then push", 2, vec![Block(0, "BLPOP k 0"), Call(1, "RPUSH k a b"), Read(0), Call(1, "LRANGE k 0 -1")]),
        s(
            "three waiters are served in order",
            4,
            vec![
                Block(0, "BLPOP k 0"),
                Block(1, "BRPOP k 0"),
                Block(2, "BLPOP k 0"),
                Call(3, "RPUSH k 1 2 3 4"),
                Read(0),
                Read(1),
                Read(2),
                Call(3, "LRANGE k 0 -1"),
                Call(3, "INFO clients"),
            ],
        ),
        s(
            "a pipelined push and pop: the waiter comes first",
            2,
            vec![Block(0, "BLPOP k 0"), Pipeline(1, &["LPUSH k x", "LPOP k", "EXISTS k"]), Read(0)],
        ),
        s(
            "several keys",
            2,
            vec![
                Block(0, "BLPOP k1 k2 k3 0"),
                Call(1, "RPUSH k3 c"),
                Read(0),
                Block(0, "BRPOP k1 k2 0"),
                Call(1, "RPUSH k2 x y"),
                Read(0),
                Call(1, "LRANGE k2 0 -1"),
            ],
        ),
        s(
            "blmove chain",
            4,
            vec![
                Block(0, "BLMOVE a b LEFT RIGHT 0"),
                Block(1, "BRPOPLPUSH b c 0"),
                Block(2, "BLPOP c 0"),
                Call(3, "RPUSH a x"),
                Read(0),
                Read(1),
                Read(2),
                Call(3, "EXISTS a b c"),
            ],
        ),
        s(
            "blmove into a key of another type puts the element back",
            2,
            vec![
                Call(1, "SET dst v"),
                Block(0, "BLMOVE src dst LEFT LEFT 0"),
                Call(1, "RPUSH src x"),
                Read(0),
                Call(1, "LRANGE src 0 -1"),
            ],
        ),
        s(
            "blmpop and bzmpop served",
            2,
            vec![
                Block(0, "BLMPOP 0 2 a b RIGHT COUNT 2"),
                Call(1, "RPUSH b 1 2 3"),
                Read(0),
                Block(0, "BZMPOP 0 2 z y MAX COUNT 5"),
                Call(1, "ZADD y 1 a 2.5 b"),
                Read(0),
                Block(0, "BZPOPMIN z 0"),
                Call(1, "ZADD z 3 c"),
                Read(0),
            ],
        ),
        s(
            "a key of another type keeps the client blocked",
            2,
            vec![
                Block(0, "BLPOP k 0"),
                Call(1, "SET k v"),
                Call(1, "DEL k"),
                Call(1, "ZADD k 1 m"),
                Call(1, "DEL k"),
                Call(1, "RPUSH k a"),
                Read(0),
            ],
        ),
        s(
            "a sorted set waiter is skipped for a list push",
            3,
            vec![Block(0, "BZPOPMIN k 0"), Block(1, "BLPOP k 0"), Call(2, "RPUSH k a"), Read(1), Unblock(2, 0, "")],
        ),
        s(
            "resp3 waiter",
            2,
            vec![
                Quiet(0, "HELLO 3"),
                Block(0, "BZPOPMAX z 0"),
                Call(1, "ZADD z 1.5 m"),
                Read(0),
                Block(0, "XREAD BLOCK 0 STREAMS s $"),
                Call(1, "XADD s 1-1 f v"),
                Read(0),
            ],
        ),
        s(
            "client unblock timeout and error",
            2,
            vec![
                Block(0, "BLPOP k 0"),
                Unblock(1, 0, "TIMEOUT"),
                Read(0),
                Unblock(1, 0, "TIMEOUT"),
                Block(0, "BLMOVE a b LEFT LEFT 0"),
                Unblock(1, 0, ""),
                Read(0),
                Block(0, "BZPOPMIN z 0"),
                Unblock(1, 0, "ERROR"),
                Read(0),
                Block(0, "XREAD BLOCK 0 STREAMS s $"),
                Unblock(1, 0, "error"),
                Read(0),
                Call(1, "INFO clients"),
            ],
        ),
        s(
            "a killed blocked client gets nothing",
            2,
            vec![
                Block(0, "BLPOP k 0"),
                Kill(1, 0),
                Call(1, "RPUSH k x"),
                Call(1, "LRANGE k 0 -1"),
                Call(1, "INFO clients"),
            ],
        ),
        s(
            "a blocked client that hangs up gets nothing",
            2,
            vec![Block(0, "BLPOP k 0"), Close(0), Call(1, "PING"), Call(1, "RPUSH k x"), Call(1, "LRANGE k 0 -1")],
        ),
        s(
            "xread block from $",
            3,
            vec![
                Call(2, "XADD s 1-1 a 1"),
                Block(0, "XREAD BLOCK 0 STREAMS s $"),
                Block(1, "XREAD COUNT 5 BLOCK 0 STREAMS other s $ 1-1"),
                Call(2, "XADD s 2-1 b 2"),
                Read(0),
                Read(1),
            ],
        ),
        s(
            "xread on a deleted and recreated stream",
            2,
            vec![
                Call(1, "XADD s 5-1 a 1"),
                Block(0, "XREAD BLOCK 0 STREAMS s $"),
                Call(1, "DEL s"),
                Call(1, "XADD s 1-1 a 1"),
                Call(1, "XADD s 6-1 a 1"),
                Read(0),
            ],
        ),
        s(
            "xreadgroup block >",
            3,
            vec![
                Call(2, "XGROUP CREATE s g $ MKSTREAM"),
                Block(0, "XREADGROUP GROUP g alice BLOCK 0 STREAMS s >"),
                Block(1, "XREADGROUP GROUP g bob COUNT 1 BLOCK 0 STREAMS s >"),
                Call(2, "XADD s 1-1 a 1"),
                Read(0),
                Call(2, "XADD s 2-1 b 2"),
                Read(1),
                Call(2, "XPENDING s g"),
            ],
        ),
        s(
            "xreadgroup waiters learn of a deleted group or stream",
            3,
            vec![
                Call(2, "XGROUP CREATE s g $ MKSTREAM"),
                Block(0, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
                Call(2, "XGROUP DESTROY s g"),
                Read(0),
                Call(2, "XGROUP CREATE s g $"),
                Block(1, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
                Call(2, "DEL s"),
                Read(1),
                Call(2, "XGROUP CREATE s g $ MKSTREAM"),
                Block(0, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
                Call(2, "SET s v"),
                Read(0),
            ],
        ),
        s(
            "flushes and renames end xreadgroup waits",
            3,
            vec![
                Call(2, "XGROUP CREATE s g $ MKSTREAM"),
                Block(0, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
                Block(1, "BLPOP k 0.5"),
                Call(2, "INFO clients"),
                Call(2, "FLUSHDB"),
                Read(0),
                Call(2, "XGROUP CREATE s g $ MKSTREAM"),
                Block(0, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
                Call(2, "FLUSHALL"),
                Read(0),
                Call(2, "XGROUP CREATE s g $ MKSTREAM"),
                Block(0, "XREADGROUP GROUP g c BLOCK 0 STREAMS s >"),
                Call(2, "RENAME s s2"),
                Read(0),
                Call(2, "RPUSH k x"),
                Read(1),
            ],
        ),
        s(
            "swapdb serves clients blocked in either database",
            2,
            vec![
                Block(0, "BLPOP k 0"),
                Call(1, "SELECT 1"),
                Call(1, "RPUSH k a"),
                Call(1, "SWAPDB 0 1"),
                Read(0),
                Call(1, "LLEN k"),
            ],
        ),
        s(
            "reply off drops the served reply",
            2,
            vec![
                Send(0, "CLIENT REPLY SKIP"),
                Block(0, "BLPOP k 0"),
                Call(1, "RPUSH k a"),
                Call(0, "PING"),
                Call(1, "EXISTS k"),
            ],
        ),
        s(
            "commands pipelined behind a blocked one wait for it",
            2,
            vec![
                Block(0, "BLPOP k 0;RPUSH k b;LRANGE k 0 -1;BLPOP j 0;PING"),
                Call(1, "RPUSH k a"),
                ReadN(0, 3),
                // Whether or not the second BLPOP blocked yet, it gets x.
                Call(1, "RPUSH j x"),
                ReadN(0, 2),
            ],
        ),
    ]
}

#[test]
fn blocked_clients_behave_as_in_redis() {
    let Some(redis) = start_redis_or_skip("blocked_clients_behave_as_in_redis") else {
        return;
    };
    let kvik = start_kvik_with(&["--threads", "2"]);
    let mut mismatches = Vec::new();
    for scenario in scenarios() {
        let expected = run(redis.port, scenario.conns, &scenario.steps);
        let got = run(kvik.port, scenario.conns, &scenario.steps);
        let mask = |log: Vec<String>| -> Vec<String> {
            log.into_iter().map(|l| if l.contains("# Clients") { clients_line(&l) } else { l }).collect()
        };
        let (expected, got) = (mask(expected), mask(got));
        if expected != got {
            mismatches.push(format!("{}:\n  redis {expected:?}\n  kvik  {got:?}", scenario.name));
        }
    }
    assert!(mismatches.is_empty(), "{} scenario(s) differ:\n{}", mismatches.len(), mismatches.join("\n"));
}

/// The blocked client counts of an `INFO clients` reply (other lines differ).
fn clients_line(info: &str) -> String {
    let lines = info.split("\\r\\n");
    lines
        .filter(|l| l.starts_with("blocked_clients") || l.starts_with("clients_in_timeout"))
        .collect::<Vec<_>>()
        .join(",")
}

/// Blocked for `timeout` seconds, the reply comes after about that long.
fn timed_wait(kvik: &ServerProcess, cmd: &str, timeout: f64) -> (Vec<u8>, Duration) {
    let mut conn = connect(kvik.port);
    let started = Instant::now();
    conn.write_all(&request(cmd)).expect("send");
    let reply = read_until(&mut conn, reply_complete).bytes;
    let took = started.elapsed();
    assert!(took >= Duration::from_secs_f64(timeout), "{cmd}: answered after {took:?}");
    assert!(took < Duration::from_secs_f64(timeout) + Duration::from_millis(400), "{cmd}: answered after {took:?}");
    (reply, took)
}

#[test]
fn timeouts_have_sub_second_precision() {
    let kvik = start_kvik_with(&[]);
    assert_eq!(timed_wait(&kvik, "BLPOP nokey 0.05", 0.05).0, b"*-1\r\n");
    assert_eq!(timed_wait(&kvik, "BLMOVE a b LEFT LEFT 0.05", 0.05).0, b"*-1\r\n");
    assert_eq!(timed_wait(&kvik, "BZMPOP 0.05 1 z MIN", 0.05).0, b"*-1\r\n");
    assert_eq!(timed_wait(&kvik, "XREAD BLOCK 50 STREAMS s $", 0.05).0, b"*-1\r\n");
    assert_eq!(timed_wait(&kvik, "BRPOP nokey 0.3", 0.3).0, b"*-1\r\n");
    let mut conn = connect(kvik.port);
    let info = call_text(&mut conn, &["INFO", "clients"]);
    assert!(String::from_utf8_lossy(&info).contains("blocked_clients:0\r\n"));
}

/// Many waiters on many connections and keys, served by pushes from
/// several threads: every element reaches exactly one waiter, none is left.
#[test]
fn many_waiters_get_every_element_exactly_once() {
    const KEYS: usize = 8;
    const WAITERS: usize = 40;
    const ROUNDS: usize = 10;
    const PUSHERS: usize = 4;
    let kvik = start_kvik_with(&["--threads", "2"]);
    let port = kvik.port;
    let waiters: Vec<_> = (0..WAITERS)
        .map(|w| {
            thread::spawn(move || {
                let mut conn = connect(port);
                let mut got = Vec::new();
                for r in 0..ROUNDS {
                    let key = format!("q{}", (w + r) % KEYS);
                    let other = format!("q{}", (w + r + 3) % KEYS);
                    let cmd = if r % 3 == 0 {
                        format!("BLPOP {key} {other} 20")
                    } else if r % 3 == 1 {
                        format!("BRPOP {key} 20")
                    } else {
                        format!("BLMPOP 20 2 {other} {key} LEFT")
                    };
                    let reply = call_text(&mut conn, &cmd.split(' ').collect::<Vec<_>>());
                    let text = String::from_utf8_lossy(&reply).into_owned();
                    let item = text.split("\r\n").find(|l| l.starts_with("item")).map(str::to_string);
                    got.push(item.unwrap_or_else(|| panic!("waiter {w} round {r}: {text:?}")));
                }
                got
            })
        })
        .collect();
    let total = WAITERS * ROUNDS;
    let pushers: Vec<_> = (0..PUSHERS)
        .map(|p| {
            thread::spawn(move || {
                let mut conn = connect(port);
                for i in (p..total).step_by(PUSHERS) {
                    let key = format!("q{}", i % KEYS);
                    let item = format!("item{i}");
                    call_text(&mut conn, &["RPUSH", &key, &item]);
                }
            })
        })
        .collect();
    for p in pushers {
        p.join().expect("pusher");
    }
    // Waiters whose keys got fewer elements than they wait for are fed
    // until every waiter has all its rounds; extra elements stay in lists.
    let mut delivered: Vec<String> = Vec::new();
    let mut feeder = connect(port);
    let mut extra = 0;
    let mut handles = waiters;
    let deadline = Instant::now() + Duration::from_secs(60);
    while !handles.is_empty() {
        let (done, pending): (Vec<_>, Vec<_>) = handles.into_iter().partition(|h| h.is_finished());
        for h in done {
            delivered.extend(h.join().expect("waiter"));
        }
        handles = pending;
        if handles.is_empty() {
            break;
        }
        assert!(Instant::now() < deadline, "waiters left hanging");
        let blocked = call_text(&mut feeder, &["INFO", "clients"]);
        if !String::from_utf8_lossy(&blocked).contains("blocked_clients:0\r\n") {
            for k in 0..KEYS {
                let item = format!("item{}", total + extra);
                extra += 1;
                call_text(&mut feeder, &["RPUSH", &format!("q{k}"), &item]);
            }
        }
        thread::sleep(Duration::from_millis(20));
    }
    let mut left = Vec::new();
    for k in 0..KEYS {
        let reply = call_text(&mut feeder, &["LRANGE", &format!("q{k}"), "0", "-1"]);
        let text = String::from_utf8_lossy(&reply).into_owned();
        left.extend(text.split("\r\n").filter(|l| l.starts_with("item")).map(str::to_string));
    }
    assert_eq!(delivered.len(), total);
    let mut all: Vec<String> = delivered.iter().chain(&left).cloned().collect();
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!(all.len(), before, "an element was delivered twice");
    assert_eq!(all.len(), total + extra, "an element was lost");
}

/// Waiters whose short timeouts race with pushes from other threads: an
/// element is either delivered or left in its list, never lost or doubled.
#[test]
fn timeouts_racing_with_pushes_lose_nothing() {
    const WAITERS: usize = 16;
    const PUSHES: usize = 600;
    let kvik = start_kvik_with(&["--threads", "2"]);
    let port = kvik.port;
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let waiters: Vec<_> = (0..WAITERS)
        .map(|w| {
            let stop = std::sync::Arc::clone(&stop);
            thread::spawn(move || {
                let mut conn = connect(port);
                let mut got = Vec::new();
                let mut timeouts = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let cmd = if w % 2 == 0 { ["BLPOP", "r0", "r1", "0.002"] } else { ["BRPOP", "r1", "r0", "0.003"] };
                    let reply = String::from_utf8_lossy(&call_text(&mut conn, &cmd)).into_owned();
                    match reply.split("\r\n").find(|l| l.starts_with("e")) {
                        Some(item) => got.push(item.to_string()),
                        None if reply == "*-1\r\n" => timeouts += 1,
                        None => panic!("unexpected reply {reply:?}"),
                    }
                }
                (got, timeouts)
            })
        })
        .collect();
    let pushers: Vec<_> = (0..2)
        .map(|p| {
            thread::spawn(move || {
                let mut conn = connect(port);
                for i in (p..PUSHES).step_by(2) {
                    call_text(&mut conn, &["LPUSH", &format!("r{}", i % 2), &format!("e{i}")]);
                    if i % 50 == 0 {
                        thread::sleep(Duration::from_millis(3));
                    }
                }
            })
        })
        .collect();
    for p in pushers {
        p.join().expect("pusher");
    }
    thread::sleep(Duration::from_millis(50));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut all = Vec::new();
    let mut timeouts = 0;
    for w in waiters {
        let (got, t) = w.join().expect("waiter");
        all.extend(got);
        timeouts += t;
    }
    let mut conn = connect(port);
    for key in ["r0", "r1"] {
        let reply = String::from_utf8_lossy(&call_text(&mut conn, &["LRANGE", key, "0", "-1"])).into_owned();
        all.extend(reply.split("\r\n").filter(|l| l.starts_with('e')).map(str::to_string));
    }
    all.sort();
    let before = all.len();
    all.dedup();
    assert_eq!(all.len(), before, "an element was delivered twice");
    assert_eq!(all.len(), PUSHES, "an element was lost");
    assert!(timeouts > 0, "the waits timed out meanwhile too");
    let info = String::from_utf8_lossy(&call_text(&mut conn, &["INFO", "clients"])).into_owned();
    assert!(info.contains("blocked_clients:0\r\n"), "{info}");
}

/// XREADGROUP's counters after a wait that XGROUP DESTROY ends with
/// -NOGROUP: `calls`, `rejected_calls` and `failed_calls` of commandstats.
fn failed_wait_counters(port: u16) -> String {
    let mut admin = connect(port);
    call_text(&mut admin, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]);
    call_text(&mut admin, &["CONFIG", "RESETSTAT"]);
    let mut waiter = connect(port);
    waiter
        .write_all(&multibulk(&[b"XREADGROUP", b"GROUP", b"g", b"c", b"BLOCK", b"0", b"STREAMS", b"s", b">"]))
        .expect("send");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !String::from_utf8_lossy(&call_text(&mut admin, &["INFO", "clients"])).contains("blocked_clients:1\r\n") {
        assert!(Instant::now() < deadline, "the reader did not block");
        thread::sleep(Duration::from_millis(10));
    }
    call_text(&mut admin, &["XGROUP", "DESTROY", "s", "g"]);
    let reply = read_until(&mut waiter, reply_complete).bytes;
    assert!(reply.starts_with(b"-NOGROUP"), "{}", reply.escape_ascii());
    let stats = String::from_utf8_lossy(&call_text(&mut admin, &["INFO", "commandstats"])).into_owned();
    let line = stats.lines().find(|l| l.starts_with("cmdstat_xreadgroup:")).unwrap_or_default().to_string();
    line.split(',').filter(|f| f.contains("calls=") && !f.contains("usec")).collect::<Vec<_>>().join(",")
}

#[test]
fn a_wait_ended_by_nogroup_is_a_failed_call() {
    let kvik = start_kvik_with(&[]);
    let ours = failed_wait_counters(kvik.port);
    assert!(ours.contains("failed_calls=1"), "{ours}");
    if let Some(redis) = start_redis_or_skip("a_wait_ended_by_nogroup_is_a_failed_call") {
        assert_eq!(ours, failed_wait_counters(redis.port));
    }
}
