//! `INFO stats`' keyspace_hits and keyspace_misses compared with a real
//! redis-server, command by command and over one mixed sequence.
//!
//! Redis counts a hit or a miss in its read lookup only: a read command's
//! key (GET, MGET, EXISTS, TYPE, TTL, OBJECT, DUMP, ...), hit or miss, an
//! expired key being a miss; write commands' lookups (SET, INCR, APPEND,
//! EXPIRE, RENAME, ...) and commands that walk the keyspace count nothing.

mod common;

use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use common::{call, connect, start_kvik, start_redis_or_skip};

/// Keys every probe starts with: strings, an integer, a key whose deadline
/// has passed (a miss for every reader), and one key of each other type.
const SETUP: &[&str] = &[
    "FLUSHALL",
    "SET s hello",
    "SET n 10",
    "SET t other",
    "SET e gone PX 1",
    "RPUSH l a b c",
    "HSET h f v n 1",
    "SADD st a b",
    "ZADD z 1 a 2 b",
    "XADD x 1-1 f v",
    "XGROUP CREATE x g 0",
    "PFADD p a b",
];

/// Commands whose lookups are counted, one probe per line; each runs on a
/// fresh copy of [`SETUP`]'s keys.
const PROBES: &[&str] = &[
    "GET s",
    "GET missing",
    "GET e",
    "MGET s missing n e",
    "STRLEN s",
    "STRLEN missing",
    "GETRANGE s 0 1",
    "GETRANGE missing 0 1",
    "SETNX s x",
    "SETNX new x",
    "SET s x",
    "SET s x NX",
    "SET new x XX",
    "SET s x KEEPTTL",
    "SET s x GET",
    "SET missing x GET",
    "GETSET s y",
    "GETSET missing y",
    "GETDEL s",
    "GETDEL missing",
    "GETEX s",
    "GETEX missing PERSIST",
    "APPEND s x",
    "APPEND missing x",
    "INCR n",
    "INCR missing",
    "INCRBY n 2",
    "DECRBY n 2",
    "INCRBYFLOAT n 1.5",
    "INCRBYFLOAT missing 1",
    "SETRANGE s 1 x",
    "SETRANGE missing 1 x",
    "MSET s 1 missing 2",
    "MSETNX s 1 other 2",
    "MSETNX new1 1 new2 2",
    "SETEX s 10 v",
    "PSETEX s 10000 v",
    "LCS s t",
    "GETBIT s 1",
    "GETBIT missing 1",
    "SETBIT s 1 1",
    "SETBIT missing 1 1",
    "BITCOUNT s",
    "BITCOUNT missing",
    "BITPOS s 1",
    "BITOP AND dest s t missing",
    "BITFIELD s GET u8 0",
    "BITFIELD s SET u8 0 1",
    "BITFIELD_RO s GET u8 0",
    "BITFIELD missing GET u8 0",
    "EXISTS s missing e s",
    "TOUCH s missing",
    "TYPE s",
    "TYPE missing",
    "TTL s",
    "PTTL missing",
    "EXPIRETIME s",
    "EXPIRE s 100",
    "EXPIRE missing 100",
    "PERSIST s",
    "DEL s missing",
    "UNLINK s",
    "RENAME s u",
    "RENAMENX s t",
    "COPY s u",
    "COPY missing u",
    "MOVE s 1",
    "OBJECT ENCODING s",
    "OBJECT REFCOUNT missing",
    "DUMP s",
    "DUMP missing",
    "KEYS *",
    "SCAN 0",
    "RANDOMKEY",
    "DBSIZE",
    "MEMORY USAGE s",
    "LPUSH l x",
    "LPUSH missing x",
    "LPUSH s x",
    "LPOP l",
    "LRANGE l 0 -1",
    "LRANGE missing 0 -1",
    "LRANGE s 0 -1",
    "LLEN l",
    "LINDEX l 0",
    "LMOVE l l2 LEFT RIGHT",
    "LMPOP 2 missing l LEFT",
    "HSET h f 2",
    "HGET h f",
    "HGET missing f",
    "HGETALL h",
    "HDEL h f",
    "HINCRBY h n 1",
    "HSCAN h 0",
    "SADD st c",
    "SMEMBERS st",
    "SISMEMBER st a",
    "SCARD missing",
    "SREM st a",
    "SINTER st missing",
    "SINTERSTORE d st",
    "SUNIONSTORE d st missing",
    "SMOVE st st2 a",
    "SINTERCARD 2 st missing",
    "SPOP st",
    "SRANDMEMBER st",
    "ZADD z 3 c",
    "ZADD missing XX 3 c",
    "ZSCORE z a",
    "ZRANGE z 0 -1",
    "ZRANGESTORE d z 0 -1",
    "ZUNIONSTORE d 2 z st",
    "ZUNION 2 z missing",
    "ZINCRBY z 1 a",
    "ZREM z a",
    "ZPOPMIN z",
    "ZMPOP 2 missing z MIN",
    "ZCARD z",
    "GEOADD gg 13 38 m",
    "GEOPOS z a",
    "GEOSEARCH z FROMLONLAT 0 0 BYRADIUS 1 km",
    "GEOSEARCHSTORE d z FROMLONLAT 0 0 BYRADIUS 1 km",
    "XADD x 2-1 f v",
    "XLEN x",
    "XRANGE x - +",
    "XREAD STREAMS x missing 0 0",
    "XREADGROUP GROUP g c STREAMS x >",
    "XACK x g 1-1",
    "XPENDING x g",
    "XCLAIM x g c 0 1-1",
    "XAUTOCLAIM x g c 0 0",
    "XDEL x 1-1",
    "XTRIM x MAXLEN 0",
    "XGROUP CREATE x g2 0",
    "XGROUP CREATECONSUMER x g c2",
    "XINFO STREAM x",
    "XSETID x 5-5",
    "PFADD p c",
    "PFCOUNT p",
    "PFCOUNT p missing",
    "PFMERGE p2 p missing",
    "TYPE l",
    "OBJECT ENCODING z",
    "DUMP h",
    "COPY l l3",
    "RENAME h h2",
    "MEMORY USAGE z",
];

/// Send one command given as space-separated words.
fn send(stream: &mut TcpStream, line: &str) -> Vec<u8> {
    let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    call(stream, &words)
}

/// `(keyspace_hits, keyspace_misses)` from `INFO stats`.
fn lookup_counts(stream: &mut TcpStream) -> (u64, u64) {
    let info = String::from_utf8_lossy(&send(stream, "INFO stats")).into_owned();
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {name} in INFO stats: {info}"))
    };
    (field("keyspace_hits"), field("keyspace_misses"))
}

/// Load [`SETUP`] and let the short deadline pass.
fn setup(stream: &mut TcpStream) {
    for line in SETUP {
        send(stream, line);
    }
    thread::sleep(Duration::from_millis(10));
}

/// The counts each probe adds on a server, after a `CONFIG RESETSTAT`.
fn per_probe(port: u16) -> Vec<(u64, u64)> {
    let mut c = connect(port);
    PROBES
        .iter()
        .map(|probe| {
            setup(&mut c);
            send(&mut c, "CONFIG RESETSTAT");
            send(&mut c, probe);
            lookup_counts(&mut c)
        })
        .collect()
}

#[test]
fn each_command_counts_hits_and_misses_as_redis_does() {
    let Some(redis) = start_redis_or_skip("each_command_counts_hits_and_misses_as_redis_does") else { return };
    let kvik = start_kvik();
    let (want, got) = (per_probe(redis.port), per_probe(kvik.port));
    let differ: Vec<String> = PROBES
        .iter()
        .zip(want.iter().zip(&got))
        .filter(|(_, (w, g))| w != g)
        .map(|(p, (w, g))| format!("{p}: redis (hits, misses) {w:?}, kvik {g:?}"))
        .collect();
    assert!(differ.is_empty(), "{} probe(s) differ:\n{}", differ.len(), differ.join("\n"));
}

#[test]
fn a_mixed_sequence_ends_with_redis_counts() {
    let Some(redis) = start_redis_or_skip("a_mixed_sequence_ends_with_redis_counts") else { return };
    let kvik = start_kvik();
    let run = |port: u16| {
        let mut c = connect(port);
        setup(&mut c);
        send(&mut c, "CONFIG RESETSTAT");
        for probe in PROBES {
            send(&mut c, probe);
        }
        lookup_counts(&mut c)
    };
    assert_eq!(run(kvik.port), run(redis.port), "(keyspace_hits, keyspace_misses), kvik then redis");
}
