//! Many clients at once against a kvik-server with four event loops: counts
//! add up exactly, multi-key commands are atomic across shards, and clients
//! coming and going do not disturb the others.
//!
//! Every loop is bounded and every read has a timeout, and the threads are
//! watched with a deadline, so a lost reply or a deadlock fails the test
//! instead of hanging it.

mod common;

/// `common::run_threads` with this file's deadline.
fn run_threads_until<R: Send + 'static>(count: usize, work: impl Fn(usize) -> R + Send + Sync + 'static) -> Vec<R> {
    common::run_threads(count, DEADLINE, work)
}

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use common::diff::multibulk;
use common::{connect, reply_len, start_kvik_with, ServerProcess, REPLY_TIMEOUT};

/// How long all the threads of one test may take together.
const DEADLINE: Duration = Duration::from_secs(60);

fn start() -> ServerProcess {
    start_kvik_with(&["--threads", "4"])
}

/// One connection that sends commands and reads their replies one by one.
struct Client {
    stream: TcpStream,
    buf: Vec<u8>,
}

impl Client {
    fn new(port: u16) -> Client {
        Client { stream: connect(port), buf: Vec::new() }
    }

    fn send(&mut self, args: &[&[u8]]) {
        self.stream.write_all(&multibulk(args)).expect("send a command");
    }

    /// Send several commands in one write.
    fn send_all(&mut self, commands: &[Vec<Vec<u8>>]) {
        let mut out = Vec::new();
        for c in commands {
            let args: Vec<&[u8]> = c.iter().map(Vec::as_slice).collect();
            out.extend(multibulk(&args));
        }
        self.stream.write_all(&out).expect("send a batch");
    }

    fn read_reply(&mut self) -> Vec<u8> {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            if let Some(n) = reply_len(&self.buf) {
                return self.buf.drain(..n).collect();
            }
            match self.stream.read(&mut chunk) {
                Ok(0) => panic!("server closed the connection; got so far: {}", self.buf.escape_ascii()),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) => panic!("no reply within {REPLY_TIMEOUT:?}: {e}"),
            }
        }
    }

    fn call(&mut self, args: &[&[u8]]) -> Vec<u8> {
        self.send(args);
        self.read_reply()
    }

    fn int(&mut self, args: &[&[u8]]) -> i64 {
        let reply = self.call(args);
        int(&reply)
    }
}

fn int(reply: &[u8]) -> i64 {
    std::str::from_utf8(reply)
        .ok()
        .and_then(|s| s.strip_prefix(':'))
        .and_then(|s| s.strip_suffix("\r\n"))
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an integer reply: {}", reply.escape_ascii()))
}

/// The elements of an array of bulk strings (`None` for nil).
fn bulks(reply: &[u8]) -> Vec<Option<Vec<u8>>> {
    let mut rest = reply;
    let header_end = rest.windows(2).position(|w| w == b"\r\n").expect("array header") + 2;
    assert_eq!(rest.first(), Some(&b'*'), "not an array: {}", reply.escape_ascii());
    let count: usize = std::str::from_utf8(&rest[1..header_end - 2]).expect("count").parse().expect("count");
    rest = &rest[header_end..];
    let mut out = Vec::with_capacity(count);
    for _ in 0..count {
        let n = reply_len(rest).expect("complete element");
        let item = &rest[..n];
        out.push(if item.starts_with(b"$-1") {
            None
        } else {
            let start = item.windows(2).position(|w| w == b"\r\n").expect("bulk header") + 2;
            Some(item[start..n - 2].to_vec())
        });
        rest = &rest[n..];
    }
    out
}

fn args(parts: &[&[u8]]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.to_vec()).collect()
}

/// Every INCR on one key is seen by exactly one client: the replies are
/// 1..=total with no repeats and no gaps, and the key ends at the total.
#[test]
fn incr_on_one_key_from_many_clients_counts_exactly() {
    const CLIENTS: usize = 16;
    const ROUNDS: usize = 10;
    const BATCH: usize = 100;
    let server = start();
    let port = server.port;
    let seen = run_threads_until(CLIENTS, move |_| {
        let mut c = Client::new(port);
        let batch = vec![args(&[b"INCR", b"counter"]); BATCH];
        let mut seen = Vec::with_capacity(ROUNDS * BATCH);
        for _ in 0..ROUNDS {
            c.send_all(&batch);
            for _ in 0..BATCH {
                let reply = c.read_reply();
                seen.push(int(&reply));
            }
        }
        seen
    });
    let total = CLIENTS * ROUNDS * BATCH;
    let mut all: Vec<i64> = seen.into_iter().flatten().collect();
    all.sort_unstable();
    assert!(all.iter().copied().eq(1..=total as i64), "INCR replies are not exactly 1..={total}");
    let mut c = Client::new(port);
    assert_eq!(c.call(&[b"GET", b"counter"]), format!("${}\r\n{total}\r\n", total.to_string().len()).into_bytes());
}

/// Clients adding different amounts to keys spread over the shards, each
/// key written by several clients: every key ends at the exact sum.
#[test]
fn incrby_on_many_keys_from_many_clients_sums_exactly() {
    const CLIENTS: usize = 8;
    const KEYS: usize = 32;
    const OPS: usize = 2000;
    const BATCH: usize = 100;
    // Which key and how much, for client `t`'s `i`-th command.
    fn op(t: usize, i: usize) -> (usize, i64) {
        ((t * 7 + i * 13) % KEYS, (i % 11) as i64 - 5 + t as i64)
    }
    let server = start();
    let port = server.port;
    run_threads_until(CLIENTS, move |t| {
        let mut c = Client::new(port);
        for chunk in (0..OPS).collect::<Vec<_>>().chunks(BATCH) {
            let batch: Vec<Vec<Vec<u8>>> = chunk
                .iter()
                .map(|&i| {
                    let (k, d) = op(t, i);
                    let key = format!("sum:{k}").into_bytes();
                    // Half the time as DECRBY of the negated amount.
                    if i % 2 == 0 {
                        vec![b"INCRBY".to_vec(), key, d.to_string().into_bytes()]
                    } else {
                        vec![b"DECRBY".to_vec(), key, (-d).to_string().into_bytes()]
                    }
                })
                .collect();
            c.send_all(&batch);
            for _ in chunk {
                let reply = c.read_reply();
                int(&reply);
            }
        }
    });
    let mut expected = [0i64; KEYS];
    for t in 0..CLIENTS {
        for i in 0..OPS {
            let (k, d) = op(t, i);
            expected[k] += d;
        }
    }
    let keys: Vec<Vec<u8>> = (0..KEYS).map(|k| format!("sum:{k}").into_bytes()).collect();
    let mut request: Vec<&[u8]> = vec![b"MGET"];
    request.extend(keys.iter().map(Vec::as_slice));
    let mut c = Client::new(port);
    let got = bulks(&c.call(&request));
    for (k, value) in got.iter().enumerate() {
        let want = expected[k].to_string().into_bytes();
        assert_eq!(value.as_deref(), Some(want.as_slice()), "sum:{k}");
    }
}

/// Writers set two keys on different shards to the same value with one
/// MSET (or delete both with one DEL) while readers MGET and EXISTS them:
/// a reader never sees one key changed without the other.
///
/// The hash slots of `x` and `y` (16287 and 12222) differ in their lowest
/// bit, so `a{x}` and `b{y}` sit on different shards for any shard count.
#[test]
fn mset_mget_del_exists_are_atomic_across_shards() {
    const WRITERS: usize = 4;
    const READERS: usize = 4;
    const WRITES: usize = 2000;
    const BATCH: usize = 50;
    // Readers stop when the writers are done, or after this many batches.
    const MAX_READ_BATCHES: usize = 2000;
    let server = start();
    let port = server.port;
    let done = Arc::new(AtomicBool::new(false));
    let readers_done = Arc::clone(&done);
    let readers = thread::spawn(move || {
        run_threads_until(READERS, move |_| {
            let mut c = Client::new(port);
            let pair = [args(&[b"MGET", b"a{x}", b"b{y}"]), args(&[b"EXISTS", b"a{x}", b"b{y}"])];
            let batch: Vec<Vec<Vec<u8>>> = pair.iter().cycle().take(BATCH).cloned().collect();
            let mut observed = 0usize;
            for _ in 0..MAX_READ_BATCHES {
                if readers_done.load(Ordering::Relaxed) {
                    break;
                }
                c.send_all(&batch);
                for _ in 0..BATCH / 2 {
                    let pair = bulks(&c.read_reply());
                    assert_eq!(pair[0], pair[1], "MGET saw a half-applied write");
                    let exists = int(&c.read_reply());
                    assert!(exists == 0 || exists == 2, "EXISTS saw one key of two: {exists}");
                    observed += 1;
                }
            }
            observed
        })
    });
    run_threads_until(WRITERS, move |t| {
        let mut c = Client::new(port);
        for chunk in (0..WRITES).collect::<Vec<_>>().chunks(BATCH) {
            let batch: Vec<Vec<Vec<u8>>> = chunk
                .iter()
                .map(|&i| {
                    if i % 10 == 9 {
                        args(&[b"DEL", b"a{x}", b"b{y}"])
                    } else {
                        let v = format!("w{t}-{i}").into_bytes();
                        vec![b"MSET".to_vec(), b"a{x}".to_vec(), v.clone(), b"b{y}".to_vec(), v]
                    }
                })
                .collect();
            c.send_all(&batch);
            for _ in chunk {
                c.read_reply();
            }
        }
    });
    done.store(true, Ordering::Relaxed);
    let observed = readers.join().unwrap_or_else(|_| panic!("a reader failed"));
    assert!(observed.iter().all(|&n| n > 0), "every reader read at least once: {observed:?}");
}

/// All clients race to create the same keys with SETNX, then to delete them
/// with DEL: for each key exactly one client wins each race, and nothing is
/// left. Then a SETNX lock taken and released in turn admits one holder at a time.
#[test]
fn setnx_and_del_races_have_exactly_one_winner() {
    const CLIENTS: usize = 8;
    const KEYS: usize = 500;
    const LOCK_ATTEMPTS: usize = 200;
    let server = start();
    let port = server.port;
    let barrier = Arc::new(Barrier::new(CLIENTS));
    let wins = run_threads_until(CLIENTS, move |t| {
        let mut c = Client::new(port);
        let me = format!("client-{t}").into_bytes();
        let mut race = |command: &[u8]| -> Vec<i64> {
            barrier.wait();
            let batch: Vec<Vec<Vec<u8>>> = (0..KEYS)
                .map(|k| {
                    let key = format!("race:{k}").into_bytes();
                    if command == b"SETNX" {
                        vec![command.to_vec(), key, me.clone()]
                    } else {
                        vec![command.to_vec(), key]
                    }
                })
                .collect();
            c.send_all(&batch);
            (0..KEYS).map(|_| int(&c.read_reply())).collect()
        };
        let created = race(b"SETNX");
        let deleted = race(b"DEL");
        // A lock: whoever sets it owns it until it deletes it.
        let mut held = 0i64;
        for _ in 0..LOCK_ATTEMPTS {
            if c.int(&[b"SETNX", b"lock", &me]) == 1 {
                assert_eq!(
                    c.call(&[b"GET", b"lock"]),
                    [format!("${}\r\n", me.len()).as_bytes(), &me, b"\r\n"].concat()
                );
                c.int(&[b"INCR", b"held"]);
                assert_eq!(c.int(&[b"DEL", b"lock"]), 1, "someone else released the lock");
                held += 1;
            }
        }
        (created, deleted, held)
    });
    for k in 0..KEYS {
        let creators: i64 = wins.iter().map(|(c, _, _)| c[k]).sum();
        let deleters: i64 = wins.iter().map(|(_, d, _)| d[k]).sum();
        assert_eq!((creators, deleters), (1, 1), "race:{k}");
    }
    let held: i64 = wins.iter().map(|(_, _, h)| h).sum();
    let mut c = Client::new(port);
    assert!(held > 0);
    assert_eq!(c.call(&[b"GET", b"held"]), format!("${}\r\n{held}\r\n", held.to_string().len()).into_bytes());
    assert_eq!(c.int(&[b"EXISTS", b"lock"]), 0);
    assert_eq!(c.int(&[b"DBSIZE"]), 1);
}

/// Connections opening and closing in every way a client can (after a
/// reply, at once, in the middle of a command, with replies unread, with
/// QUIT) while other clients count: the counts are exact and the server
/// still answers new clients.
#[test]
fn connections_come_and_go_while_others_work() {
    const WORKERS: usize = 4;
    const CHURNERS: usize = 4;
    const CONNECTIONS: usize = 100;
    const INCRS: usize = 2000;
    const BATCH: usize = 100;
    let server = start();
    let port = server.port;
    let churn = thread::spawn(move || {
        run_threads_until(CHURNERS, move |t| {
            for i in 0..CONNECTIONS {
                let mut s = connect(port);
                match (t + i) % 5 {
                    0 => {
                        s.write_all(b"PING\r\n").expect("send");
                        let mut reply = [0u8; 7];
                        s.read_exact(&mut reply).expect("PONG");
                        assert_eq!(&reply, b"+PONG\r\n");
                    }
                    1 => {}
                    2 => s.write_all(b"*2\r\n$4\r\nINCR\r\n$3\r\nor").expect("send half a command"),
                    3 => s.write_all(&multibulk(&[b"INCR", b"orphan"]).repeat(50)).expect("send unread commands"),
                    _ => {
                        s.write_all(b"QUIT\r\n").expect("send");
                        let mut rest = Vec::new();
                        s.read_to_end(&mut rest).expect("read until closed");
                        assert_eq!(rest, b"+OK\r\n");
                    }
                }
            }
        })
    });
    run_threads_until(WORKERS, move |_| {
        let mut c = Client::new(port);
        let batch = vec![args(&[b"INCR", b"work"]); BATCH];
        for _ in 0..INCRS / BATCH {
            c.send_all(&batch);
            for _ in 0..BATCH {
                let reply = c.read_reply();
                int(&reply);
            }
        }
    });
    churn.join().unwrap_or_else(|_| panic!("a connecting thread failed"));
    let mut c = Client::new(port);
    let total = WORKERS * INCRS;
    assert_eq!(c.call(&[b"GET", b"work"]), format!("${}\r\n{total}\r\n", total.to_string().len()).into_bytes());
    assert_eq!(c.call(&[b"PING"]), b"+PONG\r\n");
}

/// A key renamed back and forth between two shards by several clients while
/// others look for it: it is always under exactly one of its two names, and
/// it keeps its value.
#[test]
fn rename_across_shards_never_shows_both_or_neither() {
    const RENAMERS: usize = 4;
    const LOOKERS: usize = 4;
    const RENAMES: usize = 1000;
    const BATCH: usize = 50;
    const MAX_LOOK_BATCHES: usize = 2000;
    let server = start();
    let port = server.port;
    Client::new(port).call(&[b"SET", b"a{x}", b"payload"]);
    let done = Arc::new(AtomicBool::new(false));
    let lookers_done = Arc::clone(&done);
    let lookers = thread::spawn(move || {
        run_threads_until(LOOKERS, move |_| {
            let mut c = Client::new(port);
            let look = [args(&[b"EXISTS", b"a{x}", b"b{y}"]), args(&[b"MGET", b"a{x}", b"b{y}"])];
            let batch: Vec<Vec<Vec<u8>>> = look.iter().cycle().take(BATCH).cloned().collect();
            for _ in 0..MAX_LOOK_BATCHES {
                if lookers_done.load(Ordering::Relaxed) {
                    break;
                }
                c.send_all(&batch);
                for _ in 0..BATCH / 2 {
                    assert_eq!(int(&c.read_reply()), 1, "the key is under both names or neither");
                    let values = bulks(&c.read_reply());
                    let present: Vec<&Vec<u8>> = values.iter().flatten().collect();
                    assert_eq!(present, [&b"payload".to_vec()], "MGET saw the key under both names or neither");
                }
            }
        })
    });
    run_threads_until(RENAMERS, move |_| {
        let mut c = Client::new(port);
        // Each RENAME fails with "no such key" when another client moved the key first.
        let there_and_back = [args(&[b"RENAME", b"a{x}", b"b{y}"]), args(&[b"RENAME", b"b{y}", b"a{x}"])];
        let batch: Vec<Vec<Vec<u8>>> = there_and_back.iter().cycle().take(BATCH).cloned().collect();
        for _ in 0..RENAMES / BATCH {
            c.send_all(&batch);
            for _ in 0..BATCH {
                let reply = c.read_reply();
                assert!(reply == b"+OK\r\n" || reply == b"-ERR no such key\r\n", "{}", reply.escape_ascii());
            }
        }
    });
    done.store(true, Ordering::Relaxed);
    lookers.join().unwrap_or_else(|_| panic!("a looking thread failed"));
    let mut c = Client::new(port);
    assert_eq!(c.int(&[b"EXISTS", b"a{x}", b"b{y}"]), 1);
    assert_eq!(c.int(&[b"DBSIZE"]), 1);
}

/// On one event loop, clients that each pipeline megabytes of LRANGE
/// replies (past the point where a connection flushes before running more)
/// get every reply whole and in order.
#[test]
fn large_reply_batches_on_one_loop_arrive_whole_and_in_order() {
    const CLIENTS: usize = 4;
    const BATCH: usize = 8;
    let server = start_kvik_with(&["--threads", "1"]);
    let port = server.port;
    let mut c = Client::new(port);
    // 2,000 elements of 200 bytes: each LRANGE reply is about 420 KB.
    let fill: Vec<Vec<Vec<u8>>> =
        (0..2000).map(|i| args(&[b"RPUSH", b"big", format!("{i:0>200}").as_bytes()])).collect();
    c.send_all(&fill);
    for i in 0..2000 {
        assert_eq!(int(&c.read_reply()), i + 1);
    }
    let whole = c.call(&[b"LRANGE", b"big", b"0", b"-1"]);
    assert!(whole.len() > 400_000, "{} bytes", whole.len());
    let whole = Arc::new(whole);
    run_threads_until(CLIENTS, move |n| {
        let mut c = Client::new(port);
        // Each client's own marker between the batches shows its replies stay its own and in order.
        let marker = format!("client-{n}");
        for round in 0..3 {
            let mut batch: Vec<Vec<Vec<u8>>> = (0..BATCH).map(|_| args(&[b"LRANGE", b"big", b"0", b"-1"])).collect();
            batch.push(args(&[b"ECHO", marker.as_bytes()]));
            c.send_all(&batch);
            for k in 0..BATCH {
                assert!(c.read_reply() == *whole, "client {n}, round {round}: reply {k} differs");
            }
            assert_eq!(c.read_reply(), format!("${}\r\n{marker}\r\n", marker.len()).into_bytes());
        }
    });
    drop(server);
}

/// While clients RENAME keys back and forth between shards, DBSIZE and
/// INFO keyspace count each key exactly once.
#[test]
fn counts_stay_exact_while_keys_move_between_shards() {
    let server = start();
    let port = server.port;
    let mut setup = Client::new(port);
    // Names whose slots differ, so that each RENAME moves a key between shards.
    let names: [&[u8]; 4] = [b"move:a", b"move:b", b"move:c", b"move:d"];
    setup.call(&[b"SET", names[0], b"1"]);
    setup.call(&[b"SET", names[2], b"1"]);
    let stop = Arc::new(AtomicBool::new(false));
    let movers: Vec<_> = (0..2)
        .map(|i| {
            let stop = Arc::clone(&stop);
            thread::spawn(move || {
                let mut c = Client::new(port);
                let (from, to) = (names[2 * i], names[2 * i + 1]);
                while !stop.load(Ordering::Relaxed) {
                    c.call(&[b"RENAME", from, to]);
                    c.call(&[b"RENAME", to, from]);
                }
            })
        })
        .collect();
    let mut reader = Client::new(port);
    let mut wrong = Vec::new();
    for _ in 0..1500 {
        let n = reader.int(&[b"DBSIZE"]);
        if n != 2 {
            wrong.push(format!("DBSIZE {n}"));
        }
        let info = String::from_utf8_lossy(&reader.call(&[b"INFO", b"keyspace"])).into_owned();
        if !info.contains("db0:keys=2,") {
            wrong.push(info);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for m in movers {
        m.join().expect("mover");
    }
    assert!(wrong.is_empty(), "{} of 3000 counts were wrong, e.g. {:?}", wrong.len(), wrong.first());
}
