//! Differential tests of keyspace notifications: the same command sequences
//! are run on kvik-server and on a real redis-server, each watched by a
//! subscriber `PSUBSCRIBE`d to `__key*__:*`, and the two servers must
//! publish the same messages, in the same order, byte for byte.
//!
//! Each case sets `notify-keyspace-events` (all classes, single classes,
//! keyspace-only or keyevent-only channels, and the `n`ew, `m`iss,
//! e`x`pired and `e`victed classes), runs its commands one by one on a
//! control connection (comparing the replies too), then publishes a
//! sentinel message and reads the subscriber up to it. Lazy expiry is made
//! deterministic by switching the active cycle off (`DEBUG
//! SET-ACTIVE-EXPIRE 0`); the case for the active cycle switches it back on
//! and waits. Eviction picks its victims at random, so that case compares
//! its messages sorted.
//!
//! Then seeded random sequences (the generators of `random/`, over 5,000
//! commands, and a generator of every other family's writes below) are
//! compared by the notifications they cause alone, with the `new` and
//! `keymiss` classes on as well.

mod common;

mod random;

use std::io::Write;
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use common::diff::{lines, multibulk};
use common::rng::Rng;
use common::{call_text, connect, elements_of, read_until, reply_complete, split_replies, ServerProcess};
use common::{start_kvik_with, start_redis_with_or_skip};
use random::Family;

/// Both servers allow DEBUG, to switch the active expiry cycle off.
const OPTIONS: &[&str] = &["--enable-debug-command", "yes"];

/// The payload of the message that ends a case.
const SENTINEL: &str = "end-of-notifications";

/// One case: the flags, then commands (a command `SLEEP <ms>` waits instead).
struct Case {
    name: &'static str,
    flags: &'static str,
    commands: Vec<Vec<Vec<u8>>>,
    /// Compare the messages as a multiset (eviction order is random).
    sorted: bool,
    /// Compare the replies too.
    replies: bool,
}

/// A case from inline commands (words split on spaces).
fn case(name: &'static str, flags: &'static str, commands: &[&str]) -> Case {
    let commands = commands.iter().map(|c| c.split(' ').map(|w| w.as_bytes().to_vec()).collect()).collect();
    Case { name, flags, commands, sorted: false, replies: true }
}

/// What a server did for a case: its replies and its messages as
/// `channel payload` lines.
struct Seen {
    replies: Vec<Vec<u8>>,
    messages: Vec<String>,
}

/// Send one command and read its reply.
fn roundtrip(stream: &mut TcpStream, args: &[Vec<u8>]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
    stream.write_all(&multibulk(&args)).expect("send");
    read_until(stream, reply_complete).bytes
}

/// Run `case` on the server at `port`.
fn observe(port: u16, case: &Case) -> Seen {
    let mut ctl = connect(port);
    for setup in [&["FLUSHALL"][..], &["DEBUG", "SET-ACTIVE-EXPIRE", "0"], &["CONFIG", "SET", "maxmemory", "0"]] {
        let reply = call_text(&mut ctl, setup);
        assert_eq!(reply, b"+OK\r\n", "{}: setup {setup:?}", case.name);
    }
    assert_eq!(call_text(&mut ctl, &["CONFIG", "SET", "notify-keyspace-events", case.flags]), b"+OK\r\n");
    let mut sub = connect(port);
    sub.write_all(&multibulk(&[b"PSUBSCRIBE", b"__key*__:*"])).expect("subscribe");
    read_until(&mut sub, reply_complete);
    let mut replies = Vec::new();
    for command in &case.commands {
        if command[0] == b"SLEEP" {
            let ms = std::str::from_utf8(&command[1]).ok().and_then(|t| t.parse().ok()).unwrap_or(0);
            thread::sleep(Duration::from_millis(ms));
            continue;
        }
        replies.push(roundtrip(&mut ctl, command));
    }
    call_text(&mut ctl, &["PUBLISH", "__keyend__:sentinel", SENTINEL]);
    let ending = format!("${}\r\n{SENTINEL}\r\n", SENTINEL.len());
    let got = read_until(&mut sub, |b| b.ends_with(ending.as_bytes()));
    for reset in [&["CONFIG", "SET", "notify-keyspace-events", ""][..], &["DEBUG", "SET-ACTIVE-EXPIRE", "1"]] {
        call_text(&mut ctl, reset);
    }
    let mut messages = Vec::new();
    for message in split_replies(&got.bytes) {
        let Some((_, parts)) = elements_of(&message, false) else { continue };
        let text: Vec<String> = parts.iter().map(|p| bulk_payload(p).escape_ascii().to_string()).collect();
        if text.len() == 4 && !text[2].starts_with("__keyend__") {
            messages.push(format!("{} {}", text[2], text[3]));
        }
    }
    Seen { replies, messages }
}

/// Start both servers, or `None` when redis-server is missing.
fn servers(test: &str) -> Option<(ServerProcess, ServerProcess)> {
    let redis = start_redis_with_or_skip(test, OPTIONS)?;
    Some((redis, start_kvik_with(OPTIONS)))
}

/// Run every case on both servers; fail listing each case that differs.
fn compare(test: &str, cases: Vec<Case>) {
    let Some((redis, kvik)) = servers(test) else { return };
    compare_on(&redis, &kvik, cases.iter().map(|c| (c, c)).collect());
}

/// Run each pair's first case on redis-server and its second on kvik (the
/// same commands but for server-made data such as DUMP payloads).
fn compare_on(redis: &ServerProcess, kvik: &ServerProcess, cases: Vec<(&Case, &Case)>) {
    let mut failures = Vec::new();
    for (case, kvik_case) in cases {
        let mut want = observe(redis.port, case);
        let mut have = observe(kvik.port, kvik_case);
        if case.sorted {
            want.messages.sort();
            have.messages.sort();
        }
        if case.replies && want.replies != have.replies {
            let show = |r: &[Vec<u8>]| r.iter().map(|x| x.escape_ascii().to_string()).collect::<Vec<_>>().join(" ");
            failures.push(format!(
                "case '{}': replies differ\n  redis {}\n  kvik  {}",
                case.name,
                show(&want.replies),
                show(&have.replies)
            ));
        }
        if want.messages != have.messages {
            failures.push(format!(
                "case '{}' ({}): messages differ\n  redis {:?}\n  kvik  {:?}",
                case.name, case.flags, want.messages, have.messages
            ));
        }
        // A case whose messages are all filtered out would prove nothing.
        assert!(
            !want.messages.is_empty() || case.flags.is_empty(),
            "case '{}': redis published nothing, so the case checks nothing",
            case.name
        );
    }
    assert!(failures.is_empty(), "{} difference(s):\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn string_writes_notify_like_redis() {
    compare(
        "string_writes_notify_like_redis",
        vec![
            case(
                "set family",
                "KEA",
                &[
                    "SET k v",
                    "SET k v NX",
                    "SET k v XX EX 10",
                    "SET k v KEEPTTL",
                    "SET k v GET",
                    "SET k v PX 100000 GET",
                    "SET k2 v XX",
                    "SETNX k v",
                    "SETNX k3 v",
                    "MSET a 1 b 2",
                    "MSETNX a 1 c 3",
                    "MSETNX c 1 d 2",
                    "SETEX se 10 v",
                    "PSETEX pse 10000 v",
                    "GETSET k v2",
                    "SET e v EX 0",
                    "SET k v EXAT 1",
                    "SET l x",
                    "RPUSH l x",
                    "SET l x GET",
                ],
            ),
            case(
                "counters and edits",
                "KEA",
                &[
                    "APPEND k x",
                    "APPEND k y",
                    "INCR i",
                    "DECR i",
                    "INCRBY i 5",
                    "DECRBY i 2",
                    "INCR k",
                    "INCRBYFLOAT f 1.5",
                    "INCRBYFLOAT k 1",
                    "SETRANGE a 0 x",
                    "SETRANGE a 0 ",
                    "SETRANGE nk 0 ",
                    "SETRANGE nk 2 x",
                    "GET nk",
                    "STRLEN nk",
                ],
            ),
            case(
                "getdel and getex",
                "KEA",
                &[
                    "MSET a 1 b 2",
                    "GETDEL a",
                    "GETDEL a",
                    "GETEX b",
                    "GETEX b EX 100",
                    "GETEX b PERSIST",
                    "GETEX b PERSIST",
                    "GETEX b PX 100000",
                    "GETEX nope EX 10",
                    "GETEX b EXAT 1",
                    "EXISTS b",
                ],
            ),
            case("string class only, keyspace channel", "K$", &["SET a 1", "DEL a", "SET b 1 EX 100", "INCR b"]),
            case(
                "bitmaps",
                "KEA",
                &[
                    "SETBIT b 7 1",
                    "SETBIT b 7 1",
                    "SETBIT b 7 0",
                    "SETBIT b2 0 0",
                    "BITOP AND d b b2",
                    "BITOP OR d nope nope2",
                    "BITOP OR d nope nope2",
                    "BITOP NOT d b",
                    "BITFIELD bf SET u8 0 1",
                    "BITFIELD bf GET u8 0",
                    "BITFIELD bf INCRBY u8 0 0",
                    "BITFIELD bf SET u8 0 1",
                    "BITFIELD bf OVERFLOW FAIL INCRBY u8 0 300",
                    "BITFIELD bf SET u8 100 0",
                    "BITFIELD_RO bf GET u8 0",
                ],
            ),
            case(
                "hyperloglogs",
                "KEA",
                &["PFADD h a", "PFADD h a", "PFADD h", "PFADD h2", "PFMERGE h3 h h2", "PFMERGE h3", "PFCOUNT h h2"],
            ),
        ],
    );
}

#[test]
fn list_writes_notify_like_redis() {
    compare(
        "list_writes_notify_like_redis",
        vec![
            case(
                "lists",
                "KEA",
                &[
                    "RPUSH l a b c a",
                    "LPUSHX nol x",
                    "RPUSHX l z",
                    "LPUSHX l y",
                    "LREM l 0 nope",
                    "LREM l 1 a",
                    "LTRIM nol 0 1",
                    "LTRIM l 0 100",
                    "LTRIM l 5 10",
                    "RPUSH l a b c",
                    "LSET l 0 x",
                    "LSET l 9 x",
                    "LINSERT l BEFORE nope y",
                    "LINSERT l BEFORE x y",
                    "RPOPLPUSH l l2",
                    "LMOVE l l RIGHT LEFT",
                    "LMOVE l l3 LEFT RIGHT",
                    "LMPOP 2 nol l2 LEFT COUNT 5",
                    "RPOP l 0",
                    "LPOP nol",
                    "RPOP l 10",
                    "LPUSH m a",
                    "RPOPLPUSH m m2",
                ],
            ),
            case(
                "blocking pops that find data",
                "KEA",
                &[
                    "RPUSH l a b c",
                    "BLPOP nol l 0",
                    "BRPOP l 0",
                    "BRPOPLPUSH l l2 0",
                    "RPUSH l a b",
                    "BLMOVE l l3 LEFT RIGHT 0",
                    "BLMPOP 0 2 nol l2 RIGHT COUNT 5",
                    "BLMPOP 0 1 l LEFT",
                    "ZADD z 1 a 2 b 3 c",
                    "BZPOPMIN z 0",
                    "BZPOPMAX z 0",
                    "BZMPOP 0 1 z MIN COUNT 3",
                    "BLPOP nol 0.01",
                ],
            ),
            case("list class only", "Kl", &["RPUSH l a", "SET s v", "LPOP l", "RPUSH l a b", "DEL l"]),
            case("generic class only, keyevent channel", "Eg", &["RPUSH l a", "LPOP l", "RPUSH l a b", "DEL l"]),
        ],
    );
}

#[test]
fn hash_and_set_writes_notify_like_redis() {
    compare(
        "hash_and_set_writes_notify_like_redis",
        vec![
            case(
                "hashes",
                "KEA",
                &[
                    "HSET h a 1 b 2",
                    "HSET h a 1",
                    "HMSET h a 1",
                    "HSETNX h a 2",
                    "HSETNX h c 3",
                    "HDEL h nope",
                    "HDEL h a b",
                    "HINCRBY h n 1",
                    "HINCRBYFLOAT h f 1.5",
                    "HDEL h c n f",
                    "HINCRBY h n x",
                    "HINCRBY nh n 0",
                    "HSET s x y",
                    "HSETNX s x z",
                    "HINCRBY s x 1",
                ],
            ),
            case(
                "sets",
                "KEA",
                &[
                    "SADD s a b",
                    "SADD s a",
                    "SREM s z",
                    "SREM s a",
                    "SMOVE s s2 z",
                    "SMOVE s s2 b",
                    "SADD s a",
                    "SMOVE s s a",
                    "SADD s q",
                    "SADD s2 q",
                    "SMOVE s s2 q",
                    "SPOP nos",
                    "SPOP s 0",
                    "SPOP s 10",
                    "SADD x 1 2",
                    "SADD y 2 3",
                    "SINTERSTORE d x y",
                    "SUNIONSTORE d x y",
                    "SDIFFSTORE d x x",
                    "SDIFFSTORE d2 x x",
                    "SINTERSTORE x x y",
                    "SADD one a",
                    "SPOP one",
                ],
            ),
        ],
    );
}

#[test]
fn sorted_set_and_geo_writes_notify_like_redis() {
    compare(
        "sorted_set_and_geo_writes_notify_like_redis",
        vec![
            case(
                "sorted sets",
                "KEA",
                &[
                    "ZADD z 1 a 2 b",
                    "ZADD z 1 a",
                    "ZADD z 5 a",
                    "ZADD z XX 1 q",
                    "ZADD z INCR 1 a",
                    "ZADD z NX INCR 1 a",
                    "ZADD z INCR 0 a",
                    "ZINCRBY z 1 c",
                    "ZREM z q",
                    "ZREM z c",
                    "ZREMRANGEBYSCORE z 100 200",
                    "ZREMRANGEBYRANK z 0 0",
                    "ZADD z 1 a 2 b 3 c",
                    "ZREMRANGEBYLEX z [a [a",
                    "ZPOPMIN z 0",
                    "ZPOPMIN z",
                    "ZPOPMAX z 5",
                    "ZPOPMIN noz",
                    "ZADD z 1 a",
                    "ZMPOP 1 z MIN",
                    "ZADD x 1 a 2 b",
                    "ZRANGESTORE d x 0 -1",
                    "ZRANGESTORE d x 5 6",
                    "ZUNIONSTORE d 1 x",
                    "ZINTERSTORE d 2 x noz",
                    "ZDIFFSTORE d 1 x",
                    "ZDIFFSTORE d 2 x x",
                    "ZDIFFSTORE d 2 x x",
                ],
            ),
            case(
                "geo",
                "KEA",
                &[
                    "GEOADD g 13.361389 38.115556 a",
                    "GEOADD g 13.361389 38.115556 a",
                    "GEOADD g 15.087269 37.502669 b",
                    "GEOSEARCHSTORE d g FROMLONLAT 13.36 38.11 BYRADIUS 100 km ASC",
                    "GEORADIUS g 13.36 38.11 100 km STORE d2",
                    "GEORADIUS g 13.36 38.11 100 km STOREDIST d2",
                    "GEORADIUSBYMEMBER g a 10 km STORE d3",
                    "GEOSEARCHSTORE d g FROMLONLAT 0 0 BYRADIUS 1 km ASC",
                    "GEORADIUS g 0 0 1 km STORE d2",
                    "GEORADIUS g 0 0 1 km STORE d4",
                    "SET d5 x",
                    "GEOSEARCHSTORE d5 nog FROMLONLAT 0 0 BYRADIUS 1 km ASC",
                ],
            ),
            case("sorted set class only", "Kz", &["ZADD z 1 a", "GEOADD g 13.361389 38.115556 a", "ZPOPMIN z"]),
        ],
    );
}

#[test]
fn stream_writes_notify_like_redis() {
    compare(
        "stream_writes_notify_like_redis",
        vec![case(
            "streams",
            "KEA",
            &[
                "XADD s 1-1 a 1",
                "XADD s MAXLEN 1 2-1 a 1",
                "XADD s MAXLEN 5 3-1 a 1",
                "XADD s NOMKSTREAM 4-1 a 1",
                "XADD ns NOMKSTREAM 4-1 a 1",
                "XADD s 1-1 a 1",
                "XDEL s 9-9",
                "XDEL s 3-1",
                "XTRIM s MAXLEN 100",
                "XTRIM s MAXLEN 0",
                "XGROUP CREATE s g 0",
                "XGROUP CREATE s g 0",
                "XGROUP CREATE ns g 0 MKSTREAM",
                "XGROUP SETID s g 0",
                "XGROUP SETID s nog 0",
                "XGROUP CREATECONSUMER s g c1",
                "XGROUP CREATECONSUMER s g c1",
                "XADD s 5-1 a 1",
                "XREADGROUP GROUP g c2 COUNT 1 STREAMS s >",
                "XREADGROUP GROUP g c2 COUNT 1 STREAMS s 0",
                "XREADGROUP GROUP g c9 COUNT 1 STREAMS s >",
                "XACK s g 5-1",
                "XACK s g 5-1",
                "XADD s 6-1 a 1",
                "XREADGROUP GROUP g c2 STREAMS s >",
                "XCLAIM s g c3 0 6-1",
                "XCLAIM s g c3 0 6-1 JUSTID",
                "XCLAIM s g c7 0 99-1",
                "XAUTOCLAIM s g c4 0 0",
                "XAUTOCLAIM s g c5 0 0 JUSTID",
                "XGROUP DELCONSUMER s g c1",
                "XGROUP DELCONSUMER s g nope",
                "XGROUP DESTROY s g",
                "XGROUP DESTROY s g",
                "XSETID s 100-1",
                "XSETID s 100-1",
                "XADD s MINID 200 300-1 a 1",
            ],
        )],
    );
}

#[test]
fn generic_writes_notify_like_redis() {
    compare(
        "generic_writes_notify_like_redis",
        vec![
            case(
                "del, expire, persist",
                "KEA",
                &[
                    "MSET a 1 b 2 c 3",
                    "DEL a nope b",
                    "UNLINK c",
                    "SET k v",
                    "EXPIRE k 100",
                    "PEXPIRE k 100000",
                    "EXPIREAT k 99999999999",
                    "PEXPIREAT k 99999999999999",
                    "EXPIRE k 100 NX",
                    "EXPIRE nope 10",
                    "EXPIRE k 0",
                    "SET k v",
                    "PEXPIRE k -1",
                    "SET k v",
                    "EXPIREAT k 1",
                    "SET k v",
                    "PERSIST k",
                    "EXPIRE k 100",
                    "PERSIST k",
                    "TOUCH k",
                ],
            ),
            case(
                "rename, copy, move, swapdb",
                "KEA",
                &[
                    "SET k v",
                    "RENAME k k2",
                    "RENAME k2 k2",
                    "SET k3 v",
                    "RENAME k2 k3",
                    "RENAMENX k3 k4",
                    "SET k5 v",
                    "RENAMENX k4 k5",
                    "COPY k5 k6",
                    "COPY k5 k6",
                    "COPY k5 k6 REPLACE",
                    "COPY k5 k6 DB 1",
                    "MOVE k6 1",
                    "MOVE k5 2",
                    "SWAPDB 0 1",
                    "SELECT 2",
                    "DEL k5",
                    "SELECT 0",
                ],
            ),
            case(
                "sort store",
                "KEA",
                &[
                    "SORT nope STORE s",
                    "RPUSH l 3 1 2",
                    "SORT l STORE s",
                    "SORT nope STORE s",
                    "SORT l STORE l",
                    "SORT_RO l",
                    "SORT l BY nosort STORE s2",
                    "SADD st b a",
                    "SORT st ALPHA STORE s3",
                ],
            ),
        ],
    );
}

/// RESTORE needs a DUMP payload, which each server makes for itself.
#[test]
fn restore_notifies_like_redis() {
    let Some((redis, kvik)) = servers("restore_notifies_like_redis") else { return };
    let restore_case = |port: u16| {
        let mut c = connect(port);
        call_text(&mut c, &["RPUSH", "src", "a", "b"]);
        let payload = bulk_payload(&call_text(&mut c, &["DUMP", "src"])).to_vec();
        let restore = |key: &str, ttl: &str, extra: &[&str]| {
            let mut args: Vec<Vec<u8>> = vec![b"RESTORE".to_vec(), key.into(), ttl.into(), payload.clone()];
            args.extend(extra.iter().map(|w| w.as_bytes().to_vec()));
            args
        };
        let commands = vec![
            restore("k", "0", &[]),
            restore("k", "0", &[]),
            restore("k", "0", &["REPLACE"]),
            restore("k2", "100000", &[]),
            restore("k", "1", &["ABSTTL", "REPLACE"]),
            restore("k", "1", &["ABSTTL", "REPLACE"]),
            restore("k3", "1", &["ABSTTL"]),
        ];
        Case { name: "restore", flags: "KEAn", commands, sorted: false, replies: true }
    };
    let (for_redis, for_kvik) = (restore_case(redis.port), restore_case(kvik.port));
    compare_on(&redis, &kvik, vec![(&for_redis, &for_kvik)]);
}

/// The bytes of a bulk string reply (the whole reply for any other kind).
fn bulk_payload(reply: &[u8]) -> &[u8] {
    if !reply.starts_with(b"$") {
        return reply;
    }
    let start = reply.windows(2).position(|w| w == b"\r\n").map_or(0, |i| i + 2);
    &reply[start.min(reply.len())..reply.len().saturating_sub(2).max(start.min(reply.len()))]
}

#[test]
fn server_side_events_notify_like_redis() {
    let mut evicted = case(
        "evicted",
        "KEe",
        &[
            "SET a 1",
            "SET b 2",
            "RPUSH c x",
            "CONFIG SET maxmemory-policy allkeys-random",
            "CONFIG SET maxmemory 1",
            "CONFIG SET maxmemory 0",
            "CONFIG SET maxmemory-policy noeviction",
        ],
    );
    evicted.sorted = true;
    compare(
        "server_side_events_notify_like_redis",
        vec![
            case(
                "new keys",
                "KEn",
                &[
                    "SET a 1",
                    "SET a 2",
                    "RPUSH l x",
                    "RPUSH l y",
                    "SADD s a",
                    "ZADD z 1 a",
                    "HSET h a 1",
                    "XADD x 1-1 a 1",
                    "INCR i",
                    "APPEND ap x",
                    "SETRANGE sr 1 x",
                    "SETBIT sb 1 1",
                    "PFADD hl a",
                    "RENAME a b",
                    "COPY b c",
                    "SUNIONSTORE d s",
                    "SUNIONSTORE d s",
                    "ZUNIONSTORE zd 1 z",
                    "MOVE c 1",
                    "SET e v PX 1",
                    "SLEEP 5",
                    "SET e v",
                ],
            ),
            case(
                "misses",
                "KEm",
                &[
                    "GET nope",
                    "MGET a nope b",
                    "SET a 1",
                    "GET a",
                    "EXISTS nope",
                    "TYPE nope",
                    "TTL nope",
                    "STRLEN nope",
                    "LLEN nope",
                    "LRANGE nope 0 -1",
                    "HGET nope f",
                    "SMEMBERS nope",
                    "ZSCORE nope m",
                    "XRANGE nope - +",
                    "OBJECT ENCODING nope",
                    "GETDEL nope",
                    "INCR newkey",
                    "RPUSH newlist a",
                ],
            ),
            case(
                "lazy expiry",
                "KEx",
                &[
                    "SET a 1 PX 1",
                    "SET b 1 PX 1",
                    "RPUSH c x",
                    "PEXPIRE c 1",
                    "SET d 1 PX 1",
                    "SET e 1 PX 1",
                    "SLEEP 10",
                    "GET a",
                    "LPUSH c y",
                    "EXISTS b",
                    "DEL d",
                    "SET e 2",
                    "GET e",
                ],
            ),
            case(
                "scan expires the matching keys it meets",
                "KEx",
                &["SET a 1 PX 1", "SET b 1 PX 1", "SET z v", "SLEEP 10", "SCAN 0 MATCH a", "SCAN 0 MATCH z", "DBSIZE"],
            ),
            case(
                "lazy expiry among the command's own events",
                "KEA",
                &["SET a 1 PX 1", "RPUSH l x", "PEXPIRE l 1", "SLEEP 10", "SET a 2", "RPUSH l y", "RENAME l a"],
            ),
            case(
                "active expiry",
                "KEx",
                &["SET a 1 PX 20", "DEBUG SET-ACTIVE-EXPIRE 1", "SLEEP 400", "DEBUG SET-ACTIVE-EXPIRE 0"],
            ),
            evicted,
        ],
    );
}

/// Every kind of write landing on a key that has just expired: the lazy
/// `expired`, the `new` key and the command's own events, in Redis's order.
#[test]
fn writes_over_expired_keys_notify_like_redis() {
    const WRITES: &[&str] = &[
        "SUNIONSTORE d s",
        "SINTERSTORE d nope",
        "ZUNIONSTORE d 1 z",
        "ZRANGESTORE d nope 0 -1",
        "SORT l STORE d",
        "SORT nope STORE d",
        "BITOP NOT d b",
        "BITOP AND d nope",
        "PFMERGE d h",
        "GEOSEARCHSTORE d g FROMLONLAT 0 0 BYRADIUS 1000 km",
        "GEORADIUS nope 0 0 1 km STORE d",
        "RENAME s d",
        "RENAMENX s d",
        "COPY s d",
        "MOVE d 1",
        "LPUSH d a",
        "LMOVE l d LEFT LEFT",
        "SMOVE s d a",
        "HSET d a 1",
        "HSETNX d a b",
        "SADD d a",
        "ZADD d 1 a",
        "GEOADD d 1 1 a",
        "XADD d 1-1 a 1",
        "XGROUP CREATE d g $ MKSTREAM",
        "SETBIT d 1 1",
        "PFADD d a",
        "APPEND d x",
        "INCR d",
        "SETRANGE d 0 x",
        "SET d x NX",
        "SET d x GET",
        "SETNX d x",
        "MSETNX d x",
        "GETSET d x",
        "GETEX d EX 100",
        "EXPIRE d 100",
        "PERSIST d",
        "DEL d",
        "LSET d 0 a",
        "TYPE d",
    ];
    let cases = WRITES
        .iter()
        .map(|write| {
            let setup =
                ["SET d v PX 1", "SADD s a", "ZADD z 1 a", "RPUSH l a", "SET b x", "PFADD h a", "GEOADD g 1 1 a"];
            let mut commands: Vec<&str> = setup.to_vec();
            commands.extend(["SLEEP 5", write, "EXISTS d", "DBSIZE"]);
            case("write over an expired key", "KEAxnm", &commands)
        })
        .collect();
    compare("writes_over_expired_keys_notify_like_redis", cases);
}

/// `notify-keyspace-events` is read and printed as Redis does.
#[test]
fn notify_keyspace_events_config_matches_redis() {
    let mut commands = Vec::new();
    for value in ["KEA", "A", "Kgx", "AKE", "nA", "KEAmn", "x", "d", "Ed$", "q", "KEA!", "", "g$lshzxetd", "KEtmdn"] {
        commands.push(format!("CONFIG SET notify-keyspace-events \"{value}\""));
        commands.push("CONFIG GET notify-keyspace-events".to_string());
    }
    let commands: Vec<&str> = commands.iter().map(String::as_str).collect();
    common::diff::compare_each("notify_keyspace_events_config_matches_redis", vec![lines("flags", &commands)]);
}

/// Seeded random sequences of every kind of write, compared by the
/// notifications they cause.
#[test]
fn random_sequences_notify_like_redis() {
    let mut cases = Vec::new();
    let mut total = 0;
    for seed in 1..=7u64 {
        for family in [Family::Lists, Family::Hashes] {
            let commands = random::sequence_args(family, seed);
            total += commands.len();
            cases.push(Case { name: "random", flags: "KEAnm", commands, sorted: false, replies: false });
        }
    }
    assert!(total >= 5_000, "only {total} commands");
    compare("random_sequences_notify_like_redis", cases);
}

/// Keys the write generator uses: few, so every family writes over every other.
const KEYS: &[&str] = &["a", "b", "c", "d", "e"];
const MEMBERS: &[&str] = &["x", "y", "z", "1", "2"];

/// One random write (or read, for misses) of any family but lists and
/// hashes, as words. Nothing here depends on the clock or on a random
/// pick by the server (SPOP always takes everything), so the servers must
/// announce exactly the same events.
fn random_write(rng: &mut Rng) -> String {
    let k = rng.pick(KEYS);
    let k2 = rng.pick(KEYS);
    let m = rng.pick(MEMBERS);
    let n = rng.below(6);
    match rng.below(44) {
        0 => format!("SET {k} {m} {}", rng.pick(&["", "EX 100", "NX", "XX", "KEEPTTL", "GET", "PXAT 1"])),
        1 => format!("MSET {k} {m} {k2} {n}"),
        2 => format!("MSETNX {k} {m} {k2} {n}"),
        3 => format!("APPEND {k} {m}"),
        4 => format!("{} {k}", rng.pick(&["INCR", "DECR"])),
        5 => format!("INCRBYFLOAT {k} 1.5"),
        6 => format!("SETRANGE {k} {n} {}", rng.pick(&["q", "qq"])),
        7 => format!("GETDEL {k}"),
        8 => format!("GETEX {k} {}", rng.pick(&["", "EX 100", "PERSIST", "EXAT 1"])),
        9 => format!("SETBIT {k} {n} {}", rng.below(2)),
        10 => format!("BITFIELD {k} SET u8 {} {n} INCRBY u4 0 {}", n * 8, rng.below(3)),
        11 => format!("BITOP {} {k} {k2} {}", rng.pick(&["AND", "OR", "XOR"]), rng.pick(KEYS)),
        12 => format!("PFADD {k} {m}"),
        13 => format!("PFMERGE {k} {k2}"),
        14 => format!("SADD {k} {m} {}", rng.pick(MEMBERS)),
        15 => format!("SREM {k} {m}"),
        16 => format!("SPOP {k} 100"),
        17 => format!("SMOVE {k} {k2} {m}"),
        18 => format!("{} {k} {k2} {}", rng.pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]), rng.pick(KEYS)),
        19 => format!("ZADD {k} {} {n} {m}", rng.pick(&["", "NX", "XX", "GT", "LT", "CH", "INCR"])),
        20 => format!("ZINCRBY {k} {n} {m}"),
        21 => format!("ZREM {k} {m}"),
        22 => format!("{} {k} {}", rng.pick(&["ZPOPMIN", "ZPOPMAX"]), rng.below(3)),
        23 => format!("ZMPOP 2 {k} {k2} {} COUNT {}", rng.pick(&["MIN", "MAX"]), n + 1),
        24 => format!("ZREMRANGEBYRANK {k} 0 {}", n as i64 - 3),
        25 => format!("ZREMRANGEBYSCORE {k} -inf {n}"),
        26 => format!("ZRANGESTORE {k} {k2} 0 {}", n as i64 - 2),
        27 => format!("{} {k} 2 {k2} {}", rng.pick(&["ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE"]), rng.pick(KEYS)),
        28 => format!("XADD {k} {}* f {m}", rng.pick(&["", "MAXLEN 2 ", "NOMKSTREAM "])),
        29 => format!("XTRIM {k} MAXLEN {}", n / 2),
        30 => format!("XGROUP CREATE {k} g $ {}", rng.pick(&["", "MKSTREAM"])),
        31 => format!("XREADGROUP GROUP g c{n} COUNT 1 STREAMS {k} {}", rng.pick(&[">", "0"])),
        32 => format!("XGROUP {} {k} g c{n}", rng.pick(&["CREATECONSUMER", "DELCONSUMER"])),
        33 => format!("XAUTOCLAIM {k} g c{n} 0 0"),
        34 => format!("GEOADD {k} {}.5 {}.25 {m}", n, n),
        35 => format!("GEOSEARCHSTORE {k} {k2} FROMLONLAT 0 0 BYRADIUS 500 km ASC"),
        36 => format!("{} {k} {}", rng.pick(&["DEL", "UNLINK", "EXISTS", "TOUCH"]), rng.pick(KEYS)),
        37 => format!("{} {k} {}", rng.pick(&["EXPIRE", "PEXPIRE"]), rng.pick(&["100000", "0"])),
        38 => format!("{} {k}", rng.pick(&["PERSIST", "GET", "TYPE", "STRLEN", "SCARD", "ZCARD", "XLEN"])),
        39 => format!("{} {k} {k2}", rng.pick(&["RENAME", "RENAMENX"])),
        40 => format!("COPY {k} {k2} {}", rng.pick(&["", "REPLACE", "DB 1"])),
        41 => format!("MOVE {k} 1"),
        42 => format!("SORT {k} ALPHA STORE {k2}"),
        _ => rng.pick(&["SELECT 1", "SELECT 0", "SWAPDB 0 1"]).to_string(),
    }
}

/// Seeded random writes of every family not covered by `random/`, compared
/// by their notifications (not by replies: XADD ids come from the clock).
#[test]
fn random_writes_of_every_family_notify_like_redis() {
    let mut cases = Vec::new();
    for seed in 1..=8u64 {
        let mut rng = Rng::new(seed);
        let mut commands: Vec<String> = vec!["SELECT 0".into()];
        commands.extend((0..700).map(|_| random_write(&mut rng)));
        commands.push("SELECT 0".into());
        let words: Vec<&str> = commands.iter().map(String::as_str).collect();
        let mut c = case("random writes", if seed % 2 == 0 { "KEAnm" } else { "KEA" }, &words);
        c.commands.iter_mut().for_each(|args| args.retain(|w| !w.is_empty()));
        c.replies = false;
        cases.push(c);
    }
    compare("random_writes_of_every_family_notify_like_redis", cases);
}
