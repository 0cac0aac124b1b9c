//! Seeded random command sequences mixing every value family (strings,
//! lists, hashes, sets, sorted sets, streams, HyperLogLogs, geo sets) and the
//! generic key commands on one small shared key space, run pipelined on one
//! connection to redis-server and one to kvik: every reply must be the same
//! bytes. With few keys and every family writing to all of them, keys keep
//! changing type under each other, so the WRONGTYPE paths between all pairs
//! of types are hit, as are RENAME and COPY of every type.
//!
//! Replies are deterministic by construction: stream ids are always explicit
//! (`5-1`, or `5-*` which follows from the stream's last id), GEOSEARCH always
//! sorts (ASC, DESC, or COUNT which implies ASC) and each geo member has its
//! own fixed point so distances rarely tie, expiries are far in the future
//! never read back as a TTL, and compared
//! with GT or LT only when absolute, and no command picks at random.
//!
//! What is normalised: SMEMBERS, HGETALL, HKEYS and HVALS are preceded by
//! `OBJECT ENCODING` of their key and sorted only when Redis reported
//! `hashtable`; SINTER, SUNION and SDIFF build a new set whose order is
//! the server's, so they are always sorted.
//!
//! A second run (`random_transactions_and_blocking_match_redis`, its own
//! seeds) mixes into the same steps `MULTI … EXEC` and `MULTI … DISCARD`
//! blocks (with queue-time errors that end in EXECABORT, runtime errors
//! inside EXEC, nested MULTI and WATCH refused inside MULTI), `WATCH` /
//! `UNWATCH` of random keys before a transaction (on one connection only
//! the client's own writes break a watch, which they do in Redis too),
//! stream consumer groups, and the blocking commands: inside MULTI they never
//! block; outside it their timeout is 0.01 s (10 ms for XREAD and
//! XREADGROUP), so on a key without data they answer the same null as
//! Redis soon after. Queued commands are only ones compared exactly, so an
//! EXEC reply needs no normalising.
//!
//! The same run sends some of its steps' commands through `EVAL`: a script
//! that runs them with `redis.pcall` (or `redis.call`) and returns their
//! replies, so Lua's conversions of every family's replies, and scripts'
//! errors, are compared as well.
//!
//! A failure names the seed, the command index and the command. Set
//! `KVIK_DIFF_SEED=<seed>` (or `<from>..<to>`) to run other seeds.

mod common;

use std::collections::BTreeMap;

use common::rng::Rng;
use common::seeded;
use common::split_replies;
use common::{start_kvik, start_redis_with_or_skip};

/// Seeds run by default, and commands per seed.
const SEEDS: u64 = 100;
const COMMANDS_PER_SEED: usize = 1000;
/// The run with transactions and blocking commands: its seeds and commands per seed.
const TX_SEEDS: std::ops::RangeInclusive<u64> = 1001..=1100;
const TX_COMMANDS_PER_SEED: usize = 600;

/// How a reply is made comparable.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mask {
    Exact,
    /// Elements sorted.
    Sorted,
    /// Sorted (pairs kept together when `pairs`) if the previous reply, an
    /// `OBJECT ENCODING` of the same key, was `hashtable`.
    SortedIfTable {
        pairs: bool,
    },
}

type Command = seeded::Command<Mask>;

impl Command {
    fn new(args: Vec<Vec<u8>>) -> Command {
        Command { args, mask: Mask::Exact }
    }
}

fn words(w: &[&str]) -> Vec<Vec<u8>> {
    w.iter().map(|s| s.as_bytes().to_vec()).collect()
}

/// The shared key space: keys every family picks as often as any, and one
/// home key per family that its commands pick more often, so that values
/// grow before another type takes their key. `{a}c` sits in the slot of `a`.
const KEYS: &[&str] = &["a", "b", "{a}c", "s", "l", "h", "t", "z", "x", "p", "g"];
const VALUES: &[&str] = &["", "v", "0", "1", "-3", "12", "abc", "1.5", "9223372036854775807", "\u{0}\r\n"];
const MEMBERS: &[&str] = &["m1", "m2", "m3", "m4", "1", "2", "-7", "", "\u{0}x", "10"];
const FIELDS: &[&str] = &["f1", "f2", "f3", "f4", "", "\u{0}", "10"];
const INDEXES: &[&str] = &["0", "1", "2", "-1", "-2", "5", "-6", "100", "x", "1.5"];
const COUNTS: &[&str] = &["0", "1", "2", "3", "5", "-1", "x", "1.5"];
const SCORES: &[&str] = &["0", "1", "1.5", "-2", "10", "1e3", "-inf", "+inf", "x", "nan", "3"];
const RANGE_SCORES: &[&str] = &["-inf", "+inf", "0", "1", "(1", "2.5", "(10", "x", "-2"];
/// Geo members, each with its own point (same index in `POINTS`).
const GEO_MEMBERS: &[&str] = &["p0", "p1", "p2", "p3", "p4", "p5", "p6"];
const POINTS: &[(&str, &str)] = &[
    ("13.361389", "38.115556"),
    ("15.087269", "37.502669"),
    ("2.3522219", "48.856614"),
    ("-73.935242", "40.730610"),
    ("139.691706", "35.689487"),
    ("-0.127758", "51.507351"),
    ("12.496366", "41.902782"),
];
const BAD_POINTS: &[(&str, &str)] = &[("181", "0"), ("0", "86"), ("x", "1"), ("1", ""), ("-180.5", "10"), ("inf", "0")];

struct Gen {
    rng: Rng,
    /// The home key of the family whose command is being made, if any.
    home: Option<&'static str>,
    /// Grows with every XADD so most explicit ids come after the stream's last one.
    stream_time: usize,
}

impl Gen {
    fn key(&mut self) -> Vec<u8> {
        match self.home {
            Some(home) if self.rng.chance(75) => home.as_bytes().to_vec(),
            _ => self.rng.pick(KEYS).as_bytes().to_vec(),
        }
    }

    /// A word of `list`, or now and then one long enough to change a small value's encoding.
    fn word(&mut self, list: &[&str]) -> Vec<u8> {
        if self.rng.chance(3) {
            return vec![b'z'; 60 + self.rng.below(10)];
        }
        self.rng.pick(list).as_bytes().to_vec()
    }

    fn from(&mut self, list: &[&str]) -> Vec<u8> {
        self.rng.pick(list).as_bytes().to_vec()
    }

    /// Commands of one step: usually one, two when a reply needs its key's encoding to be compared.
    fn step(&mut self) -> Vec<Command> {
        let roll = self.rng.below(100);
        self.home = Some(match roll {
            0..=9 => "s",
            10..=21 => "l",
            22..=33 => "h",
            34..=45 => "t",
            46..=57 => "z",
            58..=71 => "x",
            72..=79 => "p",
            80..=88 => "g",
            _ => "",
        })
        .filter(|home| !home.is_empty());
        let mut commands = match roll {
            0..=9 => vec![Command::new(self.string_command())],
            10..=21 => vec![Command::new(self.list_command())],
            22..=33 => self.hash_command(),
            34..=45 => self.set_command(),
            46..=57 => vec![Command::new(self.zset_command())],
            58..=71 => vec![Command::new(self.stream_command())],
            72..=79 => vec![Command::new(self.hll_command())],
            80..=88 => vec![Command::new(self.geo_command())],
            _ => vec![Command::new(self.key_command())],
        };
        let last = commands.last_mut().expect("a step has a command");
        if last.mask == Mask::Exact {
            if self.rng.chance(2) && last.args.len() > 1 {
                last.args.pop();
            } else if self.rng.chance(1) {
                last.args.push(b"junk".to_vec());
            }
        }
        commands
    }

    fn string_command(&mut self) -> Vec<Vec<u8>> {
        let name = self.rng.pick(&[
            "SET", "SET", "GET", "APPEND", "INCR", "INCRBY", "SETRANGE", "GETRANGE", "STRLEN", "GETDEL", "MGET",
            "MSETNX",
        ]);
        let mut a = vec![name.as_bytes().to_vec(), self.key()];
        match name {
            "SET" => {
                a.push(self.word(VALUES));
                if self.rng.chance(30) {
                    a.push(self.from(&["NX", "XX", "GET", "KEEPTTL", "EXAT"]));
                    if a[3] == b"EXAT" {
                        a.push(self.from(&["4000000000", "x"]));
                    }
                }
            }
            "APPEND" => a.push(self.word(VALUES)),
            "MGET" => {
                for _ in 0..self.rng.below(3) {
                    a.push(self.key());
                }
            }
            "MSETNX" => {
                a.push(self.word(VALUES));
                if self.rng.chance(50) {
                    a.push(self.key());
                    a.push(self.word(VALUES));
                }
            }
            "INCRBY" => a.push(self.from(&["1", "-5", "100", "x", "9223372036854775807"])),
            "SETRANGE" => {
                // Small offsets land in an HLL's header and registers too.
                a.push(self.rng.below(20).to_string().into_bytes());
                a.push(self.from(&["x", "\u{0}", "\u{ff}", "HYLL", ""]));
            }
            "GETRANGE" => {
                a.push(self.from(INDEXES));
                a.push(self.from(INDEXES));
            }
            _ => {}
        }
        a
    }

    fn list_command(&mut self) -> Vec<Vec<u8>> {
        let name = self.rng.pick(&[
            "LPUSH", "RPUSH", "RPUSH", "LPOP", "RPOP", "LLEN", "LRANGE", "LINDEX", "LSET", "LREM", "LINSERT", "LMOVE",
            "LPOS", "LTRIM",
        ]);
        let mut a = vec![name.as_bytes().to_vec(), self.key()];
        match name {
            "LPUSH" | "RPUSH" => {
                for _ in 0..1 + self.rng.below(4) {
                    a.push(self.word(MEMBERS));
                }
            }
            "LPOP" | "RPOP" if self.rng.chance(40) => a.push(self.from(COUNTS)),
            "LRANGE" | "LTRIM" => {
                a.push(self.from(INDEXES));
                a.push(self.from(INDEXES));
            }
            "LINDEX" => a.push(self.from(INDEXES)),
            "LSET" => {
                a.push(self.from(INDEXES));
                a.push(self.word(MEMBERS));
            }
            "LREM" => {
                a.push(self.from(&["0", "1", "-1", "2", "x"]));
                a.push(self.word(MEMBERS));
            }
            "LINSERT" => {
                a.push(self.from(&["BEFORE", "AFTER", "MIDDLE"]));
                a.push(self.word(MEMBERS));
                a.push(self.word(MEMBERS));
            }
            "LMOVE" => {
                a.push(self.key());
                a.push(self.from(&["LEFT", "RIGHT", "UP"]));
                a.push(self.from(&["LEFT", "RIGHT"]));
            }
            "LPOS" => {
                a.push(self.word(MEMBERS));
                if self.rng.chance(50) {
                    a.push(self.from(&["RANK", "COUNT", "MAXLEN"]));
                    a.push(self.from(&["1", "-1", "0", "2", "x"]));
                }
            }
            _ => {}
        }
        a
    }

    fn hash_command(&mut self) -> Vec<Command> {
        let name = self.rng.pick(&[
            "HSET",
            "HSET",
            "HGET",
            "HMGET",
            "HDEL",
            "HLEN",
            "HEXISTS",
            "HINCRBY",
            "HINCRBYFLOAT",
            "HGETALL",
            "HKEYS",
            "HVALS",
            "HSETNX",
            "HSTRLEN",
        ]);
        let key = self.key();
        let mut a = vec![name.as_bytes().to_vec(), key.clone()];
        let mut mask = Mask::Exact;
        match name {
            "HSET" => {
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.word(FIELDS));
                    a.push(self.word(VALUES));
                }
            }
            "HSETNX" => {
                a.push(self.word(FIELDS));
                a.push(self.word(VALUES));
            }
            "HGET" | "HEXISTS" | "HSTRLEN" => a.push(self.word(FIELDS)),
            "HMGET" | "HDEL" => {
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.word(FIELDS));
                }
            }
            "HINCRBY" => {
                a.push(self.word(FIELDS));
                a.push(self.from(&["1", "-5", "x", "9223372036854775807"]));
            }
            "HINCRBYFLOAT" => {
                a.push(self.word(FIELDS));
                a.push(self.from(&["1.5", "-0.25", "x", "inf", "5"]));
            }
            _ => mask = Mask::SortedIfTable { pairs: name == "HGETALL" },
        }
        with_encoding(key, Command { args: a, mask })
    }

    fn set_command(&mut self) -> Vec<Command> {
        let name = self.rng.pick(&[
            "SADD",
            "SADD",
            "SREM",
            "SCARD",
            "SISMEMBER",
            "SMISMEMBER",
            "SMEMBERS",
            "SINTER",
            "SUNION",
            "SDIFF",
            "SINTERSTORE",
            "SUNIONSTORE",
            "SDIFFSTORE",
            "SINTERCARD",
            "SMOVE",
        ]);
        let key = self.key();
        let mut a = vec![name.as_bytes().to_vec(), key.clone()];
        let mut mask = Mask::Exact;
        match name {
            "SADD" | "SREM" | "SMISMEMBER" => {
                for _ in 0..1 + self.rng.below(4) {
                    a.push(self.word(MEMBERS));
                }
            }
            "SISMEMBER" => a.push(self.word(MEMBERS)),
            "SMEMBERS" => mask = Mask::SortedIfTable { pairs: false },
            "SINTER" | "SUNION" | "SDIFF" => {
                for _ in 0..self.rng.below(3) {
                    a.push(self.key());
                }
                mask = Mask::Sorted;
            }
            "SINTERSTORE" | "SUNIONSTORE" | "SDIFFSTORE" => {
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.key());
                }
            }
            "SINTERCARD" => {
                let n = 1 + self.rng.below(3);
                a[1] = if self.rng.chance(10) { self.from(&["0", "x", "-1"]) } else { n.to_string().into_bytes() };
                for _ in 0..n {
                    a.push(self.key());
                }
                if self.rng.chance(30) {
                    a.push(b"LIMIT".to_vec());
                    a.push(self.from(COUNTS));
                }
            }
            "SMOVE" => {
                a.push(self.key());
                a.push(self.word(MEMBERS));
            }
            _ => {}
        }
        if mask == Mask::Exact {
            return vec![Command::new(a)];
        }
        with_encoding(key, Command { args: a, mask })
    }

    fn zset_command(&mut self) -> Vec<Vec<u8>> {
        let name = self.rng.pick(&[
            "ZADD",
            "ZADD",
            "ZREM",
            "ZSCORE",
            "ZINCRBY",
            "ZRANGE",
            "ZRANGEBYSCORE",
            "ZRANK",
            "ZREVRANK",
            "ZCARD",
            "ZCOUNT",
            "ZPOPMIN",
            "ZPOPMAX",
            "ZMSCORE",
            "ZUNIONSTORE",
            "ZINTERSTORE",
        ]);
        let mut a = vec![name.as_bytes().to_vec(), self.key()];
        match name {
            "ZADD" => {
                for _ in 0..self.rng.below(2) {
                    a.push(self.from(&["NX", "XX", "GT", "LT", "CH", "INCR"]));
                }
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.from(SCORES));
                    a.push(self.word(MEMBERS));
                }
            }
            "ZREM" | "ZMSCORE" => {
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.word(MEMBERS));
                }
            }
            "ZSCORE" | "ZRANK" | "ZREVRANK" => a.push(self.word(MEMBERS)),
            "ZINCRBY" => {
                a.push(self.from(SCORES));
                a.push(self.word(MEMBERS));
            }
            "ZRANGE" => {
                if self.rng.chance(30) {
                    a.push(self.from(RANGE_SCORES));
                    a.push(self.from(RANGE_SCORES));
                    a.push(b"BYSCORE".to_vec());
                } else {
                    a.push(self.from(INDEXES));
                    a.push(self.from(INDEXES));
                }
                if self.rng.chance(30) {
                    a.push(b"REV".to_vec());
                }
                if self.rng.chance(50) {
                    a.push(b"WITHSCORES".to_vec());
                }
            }
            "ZRANGEBYSCORE" | "ZCOUNT" => {
                a.push(self.from(RANGE_SCORES));
                a.push(self.from(RANGE_SCORES));
                if name == "ZRANGEBYSCORE" && self.rng.chance(40) {
                    a.push(b"WITHSCORES".to_vec());
                }
                if name == "ZRANGEBYSCORE" && self.rng.chance(20) {
                    a.push(b"LIMIT".to_vec());
                    a.push(self.from(INDEXES));
                    a.push(self.from(COUNTS));
                }
            }
            "ZPOPMIN" | "ZPOPMAX" if self.rng.chance(50) => a.push(self.from(COUNTS)),
            "ZUNIONSTORE" | "ZINTERSTORE" => {
                let n = 1 + self.rng.below(3);
                a.push(n.to_string().into_bytes());
                for _ in 0..n {
                    a.push(self.key());
                }
                if self.rng.chance(30) {
                    a.push(b"AGGREGATE".to_vec());
                    a.push(self.from(&["SUM", "MIN", "MAX", "AVG"]));
                }
            }
            _ => {}
        }
        a
    }

    /// An explicit stream id: small times and sequences so ids collide,
    /// sometimes `<ms>-*`, sometimes invalid.
    /// A stream time near the latest ones given to XADD.
    fn recent_ms(&mut self) -> usize {
        self.stream_time.saturating_sub(self.rng.below(25))
    }

    /// An explicit stream id: recent times and small sequences so ids
    /// collide, sometimes `<ms>-*`, sometimes invalid.
    fn stream_id(&mut self) -> Vec<u8> {
        match self.rng.below(20) {
            0 if self.rng.chance(10) => b"18446744073709551615-18446744073709551615".to_vec(),
            0 => self.from(&["0-0", "x", "-1", "1-x", "18446744073709551615-0"]),
            1..=3 => format!("{}-*", self.recent_ms() + self.rng.below(3)).into_bytes(),
            4 => self.recent_ms().to_string().into_bytes(),
            _ => format!("{}-{}", self.recent_ms(), self.rng.below(4)).into_bytes(),
        }
    }

    fn range_id(&mut self) -> Vec<u8> {
        match self.rng.below(10) {
            0 => b"-".to_vec(),
            1 => b"+".to_vec(),
            2 => format!("({}-{}", self.recent_ms(), self.rng.below(4)).into_bytes(),
            3 => self.from(&["x", "(-", "(+", "1-x", "(18446744073709551615-18446744073709551615"]),
            4 => self.recent_ms().to_string().into_bytes(),
            _ => format!("{}-{}", self.recent_ms(), self.rng.below(4)).into_bytes(),
        }
    }

    fn stream_command(&mut self) -> Vec<Vec<u8>> {
        let name =
            self.rng.pick(&["XADD", "XADD", "XADD", "XADD", "XRANGE", "XREVRANGE", "XLEN", "XDEL", "XTRIM", "XSETID"]);
        let mut a = vec![name.as_bytes().to_vec(), self.key()];
        match name {
            "XADD" => {
                // The explicit id usually falls behind the last one; a fresh id
                // after a cleared stream keeps some inserts going through.
                if self.rng.chance(10) {
                    a.push(b"NOMKSTREAM".to_vec());
                }
                if self.rng.chance(20) {
                    a.push(b"MAXLEN".to_vec());
                    if self.rng.chance(20) {
                        a.push(b"=".to_vec());
                    }
                    a.push(self.from(COUNTS));
                }
                self.stream_time += self.rng.below(3);
                if self.rng.chance(70) {
                    a.push(format!("{}-{}", self.stream_time, self.rng.below(3)).into_bytes());
                } else {
                    a.push(self.stream_id());
                }
                for _ in 0..1 + self.rng.below(2) {
                    a.push(self.word(FIELDS));
                    a.push(self.word(VALUES));
                }
            }
            "XRANGE" | "XREVRANGE" => {
                a.push(self.range_id());
                a.push(self.range_id());
                if self.rng.chance(30) {
                    a.push(b"COUNT".to_vec());
                    a.push(self.from(COUNTS));
                }
            }
            "XDEL" => {
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.stream_id());
                }
            }
            "XTRIM" => {
                a.push(self.from(&["MAXLEN", "MAXLEN", "MINID", "maxlen", "LEN"]));
                if self.rng.chance(20) {
                    a.push(b"=".to_vec());
                }
                if a[2] == b"MINID" {
                    a.push(self.stream_id());
                } else {
                    a.push(self.from(COUNTS));
                }
            }
            "XSETID" => {
                if self.rng.chance(50) {
                    a.push(format!("{}-{}", self.stream_time + self.rng.below(3), self.rng.below(3)).into_bytes());
                } else {
                    a.push(self.stream_id());
                }
            }
            _ => {}
        }
        a
    }

    fn hll_command(&mut self) -> Vec<Vec<u8>> {
        let name = self.rng.pick(&["PFADD", "PFADD", "PFADD", "PFCOUNT", "PFMERGE", "GET"]);
        let mut a = vec![name.as_bytes().to_vec(), self.key()];
        match name {
            "PFADD" => {
                // Now and then enough elements to turn a sparse HLL dense.
                let n = if self.rng.chance(8) { 100 + self.rng.below(1500) } else { self.rng.below(4) };
                let base = self.rng.below(5000);
                for i in 0..n {
                    a.push(format!("e{}", base + i).into_bytes());
                }
            }
            "PFCOUNT" | "PFMERGE" => {
                for _ in 0..self.rng.below(3) {
                    a.push(self.key());
                }
            }
            _ => {}
        }
        a
    }

    fn point(&mut self, member: usize) -> (Vec<u8>, Vec<u8>) {
        let (lon, lat) = if self.rng.chance(5) { BAD_POINTS[self.rng.below(BAD_POINTS.len())] } else { POINTS[member] };
        (lon.as_bytes().to_vec(), lat.as_bytes().to_vec())
    }

    fn geo_member(&mut self) -> Vec<u8> {
        self.from(GEO_MEMBERS)
    }

    fn geo_command(&mut self) -> Vec<Vec<u8>> {
        let name = self.rng.pick(&[
            "GEOADD",
            "GEOADD",
            "GEODIST",
            "GEOHASH",
            "GEOPOS",
            "GEOSEARCH",
            "GEOSEARCH",
            "GEOSEARCHSTORE",
        ]);
        let mut a = vec![name.as_bytes().to_vec(), self.key()];
        if name == "GEOSEARCHSTORE" {
            a.push(self.key());
        }
        match name {
            "GEOADD" => {
                if self.rng.chance(20) {
                    a.push(self.from(&["NX", "XX", "CH"]));
                }
                for _ in 0..1 + self.rng.below(3) {
                    let m = self.rng.below(GEO_MEMBERS.len());
                    let (lon, lat) = self.point(m);
                    a.push(lon);
                    a.push(lat);
                    a.push(GEO_MEMBERS[m].as_bytes().to_vec());
                }
            }
            "GEODIST" => {
                a.push(self.geo_member());
                a.push(self.geo_member());
                if self.rng.chance(60) {
                    a.push(self.from(&["m", "km", "mi", "ft", "KM", "yd"]));
                }
            }
            "GEOHASH" | "GEOPOS" => {
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.geo_member());
                }
            }
            _ => {
                if self.rng.chance(50) {
                    a.push(b"FROMMEMBER".to_vec());
                    a.push(self.geo_member());
                } else {
                    let m = self.rng.below(POINTS.len());
                    let (lon, lat) = self.point(m);
                    a.extend([b"FROMLONLAT".to_vec(), lon, lat]);
                }
                if self.rng.chance(50) {
                    a.push(b"BYRADIUS".to_vec());
                    a.push(self.from(&["100", "1000", "5000", "20000", "0", "-1", "x"]));
                } else {
                    a.push(b"BYBOX".to_vec());
                    a.push(self.from(&["200", "2000", "40000", "0", "-1"]));
                    a.push(self.from(&["200", "2000", "40000", "x"]));
                }
                a.push(self.from(&["km", "km", "mi", "m", "xx"]));
                let sorted = self.rng.chance(75);
                if sorted {
                    a.push(self.from(&["ASC", "DESC"]));
                }
                if !sorted || self.rng.chance(30) {
                    a.push(b"COUNT".to_vec());
                    a.push(self.from(&["1", "2", "3", "10", "0", "-1"]));
                }
                let options: &[&str] =
                    if name == "GEOSEARCH" { &["WITHCOORD", "WITHDIST", "WITHHASH"] } else { &["STOREDIST"] };
                for option in options {
                    if self.rng.chance(30) {
                        a.push(option.as_bytes().to_vec());
                    }
                }
            }
        }
        a
    }

    fn key_command(&mut self) -> Vec<Vec<u8>> {
        let name = self.rng.pick(&[
            "TYPE", "TYPE", "EXISTS", "DEL", "DEL", "DEL", "RENAME", "RENAMENX", "COPY", "OBJECT", "OBJECT", "EXPIRE",
            "PERSIST", "DBSIZE",
        ]);
        let mut a = vec![name.as_bytes().to_vec()];
        match name {
            "EXISTS" | "DEL" => {
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.key());
                }
            }
            "RENAME" | "RENAMENX" => {
                a.push(self.key());
                a.push(self.key());
            }
            "COPY" => {
                a.push(self.key());
                a.push(self.key());
                if self.rng.chance(50) {
                    a.push(b"REPLACE".to_vec());
                }
            }
            "OBJECT" => {
                a.push(b"ENCODING".to_vec());
                a.push(self.key());
            }
            "EXPIRE" => {
                // A relative TTL given twice makes two deadlines a few
                // milliseconds apart, so GT and LT only come with absolute ones.
                a.push(self.key());
                if self.rng.chance(50) {
                    a.push(self.from(&["100000", "200000", "1000000", "x"]));
                    if self.rng.chance(30) {
                        a.push(self.from(&["NX", "XX"]));
                    }
                } else {
                    a[0] = b"EXPIREAT".to_vec();
                    a.push(self.from(&["4000000000", "4000000500", "4100000000", "x"]));
                    if self.rng.chance(40) {
                        a.push(self.from(&["NX", "XX", "GT", "LT"]));
                    }
                }
            }
            "DBSIZE" => {}
            _ => a.push(self.key()),
        }
        a
    }
}

/// `bytes` as a Lua string literal: printable ASCII as it is, any other
/// byte (and the quote and backslash) as a decimal escape.
fn lua_literal(bytes: &[u8]) -> String {
    let mut out = String::from("'");
    for &b in bytes {
        if b.is_ascii_graphic() && b != b'\\' && b != b'\'' || b == b' ' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("\\{b:03}"));
        }
    }
    out.push('\'');
    out
}

/// Consumer groups and consumers the stream group commands use.
const GROUPS: &[&str] = &["g1", "g2"];
const CONSUMERS: &[&str] = &["c1", "c2"];

/// Steps of the run with transactions and blocking commands.
impl Gen {
    fn extended_step(&mut self) -> Vec<Command> {
        match self.rng.below(100) {
            0..=5 => self.transaction(),
            6..=8 => self.watched_transaction(),
            9 | 10 => vec![Command::new(self.blocking_command(false))],
            11..=15 => vec![Command::new(self.group_command())],
            16..=20 => self.script(),
            _ => self.step(),
        }
    }

    /// `EVAL` of a script that runs the commands of one to three steps
    /// (those compared exactly) through `redis.pcall`, or now and then
    /// `redis.call` (whose error fails the script), and returns their
    /// replies as Lua saw them; its keys undeclared, or one of them
    /// declared.
    fn script(&mut self) -> Vec<Command> {
        let mut calls = Vec::new();
        for _ in 0..1 + self.rng.below(3) {
            calls.extend(self.step().into_iter().filter(|c| c.mask == Mask::Exact).map(|c| c.args));
        }
        if calls.is_empty() {
            return self.step();
        }
        let mut body = String::from("local r = {} ");
        for (i, args) in calls.iter().enumerate() {
            let how = if self.rng.chance(85) { "pcall" } else { "call" };
            let args: Vec<String> = args.iter().map(|a| lua_literal(a)).collect();
            body.push_str(&format!("r[{}] = redis.{how}({}) ", i + 1, args.join(", ")));
        }
        body.push_str("return r");
        let mut eval = vec![b"EVAL".to_vec(), body.into_bytes()];
        if self.rng.chance(50) {
            eval.extend([b"1".to_vec(), self.from(KEYS)]);
        } else {
            eval.push(b"0".to_vec());
        }
        vec![Command::new(eval)]
    }

    /// `MULTI`, a few queued commands, then `EXEC` or now and then `DISCARD`.
    fn transaction(&mut self) -> Vec<Command> {
        let mut out = vec![Command::new(words(&["MULTI"]))];
        for _ in 0..1 + self.rng.below(6) {
            out.extend(self.queued());
        }
        out.push(Command::new(words(&[if self.rng.chance(85) { "EXEC" } else { "DISCARD" }])));
        out
    }

    /// `WATCH` of a key or two, a few commands of the client's own that may
    /// write them, sometimes `UNWATCH`, then usually a transaction (a watch
    /// left open is ended by a later one).
    fn watched_transaction(&mut self) -> Vec<Command> {
        let mut watch = vec![b"WATCH".to_vec()];
        for _ in 0..1 + self.rng.below(2) {
            watch.push(self.from(KEYS));
        }
        if self.rng.chance(3) {
            watch.truncate(1);
        }
        let target = watch.get(1).cloned().unwrap_or_else(|| self.from(KEYS));
        let mut out = vec![Command::new(watch)];
        for _ in 0..self.rng.below(4) {
            out.extend(self.step());
        }
        if self.rng.chance(50) {
            out.push(Command::new(self.write_to(target)));
        }
        if self.rng.chance(15) {
            out.push(Command::new(words(&["UNWATCH"])));
        }
        if self.rng.chance(90) {
            out.extend(self.transaction());
        }
        out
    }

    /// A command naming `key` that may or may not change it: some writes
    /// leave the value as it was (and so the watch), and Redis counts a
    /// consumer group change or XSETID as no change of the key.
    fn write_to(&mut self, key: Vec<u8>) -> Vec<Vec<u8>> {
        let command = self.rng.pick(&[
            "SET . v",
            "DEL .",
            "SADD . m1",
            "SREM . nothing",
            "LPUSH . v",
            "LREM . 0 nothing",
            "HSET . f1 v",
            "HDEL . nothing",
            "ZADD . 1 m1",
            "ZADD . XX 1 nothing",
            "ZREM . nothing",
            "EXPIRE . 100000",
            "PERSIST .",
            "XGROUP CREATE . g1 0",
            "XGROUP CREATE . g2 $ MKSTREAM",
            "XGROUP SETID . g1 0",
            "XGROUP DESTROY . g1",
            "XSETID . 1000-0",
            "XTRIM . MAXLEN 1000",
            "XDEL . 0-1",
            "PFADD . e1",
            "APPEND . x",
            "INCR .",
            "GETDEL .",
        ]);
        command.split(' ').map(|w| if w == "." { key.clone() } else { w.as_bytes().to_vec() }).collect()
    }

    /// Commands to queue inside MULTI: one step compared exactly, or a
    /// blocking or group command, or a command refused at queue time (which
    /// makes EXEC abort), or MULTI and WATCH, refused without aborting, or
    /// HELLO.
    fn queued(&mut self) -> Vec<Command> {
        match self.rng.below(100) {
            0..=2 => vec![Command::new(vec![b"NOSUCHCMD".to_vec(), self.from(KEYS)])],
            3 => vec![Command::new(words(&["GET"]))],
            4 => vec![Command::new(words(&["MULTI"]))],
            5 => vec![Command::new(vec![b"WATCH".to_vec(), self.from(KEYS)])],
            // The protocol switches in the middle of EXEC's reply.
            6 => vec![Command::new(vec![b"HELLO".to_vec(), self.from(&["2", "3"])])],
            7..=17 => vec![Command::new(self.blocking_command(true))],
            18..=24 => vec![Command::new(self.group_command())],
            _ => {
                let mut step = self.step();
                step.retain(|c| c.mask == Mask::Exact);
                step
            }
        }
    }

    /// A timeout in seconds: any when queued (a queued command never
    /// blocks), 10 ms otherwise; now and then one that is refused.
    fn timeout(&mut self, queued: bool, millis: bool) -> Vec<u8> {
        if self.rng.chance(4) {
            return self.from(&["-1", "x", "1.5.", ""]);
        }
        match (queued, millis) {
            (true, false) => self.from(&["0", "0.01", "1", "2.5"]),
            (true, true) => self.from(&["0", "10", "1000"]),
            (false, false) => b"0.01".to_vec(),
            (false, true) => b"10".to_vec(),
        }
    }

    fn blocking_command(&mut self, queued: bool) -> Vec<Vec<u8>> {
        let name = self.rng.pick(&[
            "BLPOP",
            "BRPOP",
            "BRPOPLPUSH",
            "BLMOVE",
            "BLMPOP",
            "BZPOPMIN",
            "BZPOPMAX",
            "BZMPOP",
            "XREAD",
            "XREADGROUP",
        ]);
        self.home = Some(match name.as_bytes()[1] {
            b'L' | b'R' => "l",
            b'Z' => "z",
            _ => "x",
        });
        let mut a = vec![name.as_bytes().to_vec()];
        match name {
            "BLPOP" | "BRPOP" | "BZPOPMIN" | "BZPOPMAX" => {
                for _ in 0..1 + self.rng.below(2) {
                    a.push(self.key());
                }
                a.push(self.timeout(queued, false));
            }
            "BRPOPLPUSH" => {
                a.push(self.key());
                a.push(self.key());
                a.push(self.timeout(queued, false));
            }
            "BLMOVE" => {
                a.push(self.key());
                a.push(self.key());
                a.push(self.from(&["LEFT", "RIGHT", "left", "UP"]));
                a.push(self.from(&["LEFT", "RIGHT"]));
                a.push(self.timeout(queued, false));
            }
            "BLMPOP" | "BZMPOP" => {
                a.push(self.timeout(queued, false));
                let n = 1 + self.rng.below(2);
                a.push(if self.rng.chance(5) { self.from(&["0", "x", "-1"]) } else { n.to_string().into_bytes() });
                for _ in 0..n {
                    a.push(self.key());
                }
                a.push(if name == "BLMPOP" { self.from(&["LEFT", "RIGHT"]) } else { self.from(&["MIN", "MAX"]) });
                if self.rng.chance(40) {
                    a.push(b"COUNT".to_vec());
                    a.push(self.from(COUNTS));
                }
            }
            "XREAD" => {
                if self.rng.chance(30) {
                    a.push(b"COUNT".to_vec());
                    a.push(self.from(&["1", "2", "0", "x"]));
                }
                if self.rng.chance(85) {
                    a.push(b"BLOCK".to_vec());
                    a.push(self.timeout(queued, true));
                }
                self.read_streams(&mut a, &["$", "0", "0-0"]);
            }
            _ => {
                a.extend([b"GROUP".to_vec(), self.from(GROUPS), self.from(CONSUMERS)]);
                if self.rng.chance(30) {
                    a.push(b"COUNT".to_vec());
                    a.push(self.from(&["1", "2", "0", "x"]));
                }
                if self.rng.chance(85) {
                    a.push(b"BLOCK".to_vec());
                    a.push(self.timeout(queued, true));
                }
                if self.rng.chance(15) {
                    a.push(b"NOACK".to_vec());
                }
                self.read_streams(&mut a, &[">", ">", ">", "0", "0-0"]);
            }
        }
        a
    }

    /// `STREAMS`, one or two keys and an id for each (now and then one short).
    fn read_streams(&mut self, a: &mut Vec<Vec<u8>>, special: &[&str]) {
        a.push(b"STREAMS".to_vec());
        let n = 1 + self.rng.below(2);
        for _ in 0..n {
            a.push(self.key());
        }
        for _ in 0..n {
            a.push(if self.rng.chance(70) { self.from(special) } else { self.stream_id() });
        }
        if self.rng.chance(3) {
            a.pop();
        }
    }

    /// Consumer group commands whose replies hold no clock readings.
    fn group_command(&mut self) -> Vec<Vec<u8>> {
        self.home = Some("x");
        let name = self.rng.pick(&[
            "CREATE",
            "CREATE",
            "SETID",
            "DESTROY",
            "CREATECONSUMER",
            "DELCONSUMER",
            "XACK",
            "XPENDING",
            "XCLAIM",
            "XAUTOCLAIM",
        ]);
        let key = self.key();
        let group = self.from(GROUPS);
        let consumer = self.from(CONSUMERS);
        let mut a = if name.starts_with('X') {
            vec![name.as_bytes().to_vec(), key, group]
        } else {
            vec![b"XGROUP".to_vec(), name.as_bytes().to_vec(), key, group]
        };
        match name {
            "CREATE" | "SETID" => {
                a.push(if self.rng.chance(60) { self.from(&["$", "0", "0-0"]) } else { self.stream_id() });
                if name == "CREATE" && self.rng.chance(50) {
                    a.push(b"MKSTREAM".to_vec());
                }
            }
            "CREATECONSUMER" | "DELCONSUMER" => a.push(consumer),
            "XACK" => {
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.stream_id());
                }
            }
            "XCLAIM" => {
                a.push(consumer);
                a.push(self.from(&["0", "0", "x", "-1"]));
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.stream_id());
                }
                if self.rng.chance(50) {
                    a.push(b"JUSTID".to_vec());
                }
            }
            "XAUTOCLAIM" => {
                a.push(consumer);
                a.push(self.from(&["0", "0", "x"]));
                a.push(self.from(&["0", "0-0", "-", "x"]));
                if self.rng.chance(40) {
                    a.push(b"COUNT".to_vec());
                    a.push(self.from(&["1", "2", "100", "0", "x"]));
                }
                if self.rng.chance(50) {
                    a.push(b"JUSTID".to_vec());
                }
            }
            _ => {}
        }
        a
    }
}

/// `command` preceded by `OBJECT ENCODING` of its key, which tells the comparison whether to sort.
fn with_encoding(key: Vec<u8>, command: Command) -> Vec<Command> {
    if command.mask == Mask::Exact {
        return vec![command];
    }
    vec![Command::new(vec![b"OBJECT".to_vec(), b"ENCODING".to_vec(), key]), command]
}

/// The commands of one seed: a clean start with encoding limits that the
/// small values cross (on every other seed), then the mix, some in RESP3;
/// with transactions and blocking commands when `extended`.
fn sequence(seed: u64, extended: bool) -> Vec<Command> {
    let length = if extended { TX_COMMANDS_PER_SEED } else { COMMANDS_PER_SEED };
    let mut gen = Gen { rng: Rng::new(seed), home: None, stream_time: 10 };
    let mut commands = vec![Command::new(words(&["FLUSHALL"]))];
    let limits: &[(&str, &str, &str)] = &[
        ("hash-max-listpack-entries", "4", "128"),
        ("hash-max-listpack-value", "16", "64"),
        ("set-max-intset-entries", "4", "512"),
        ("zset-max-listpack-entries", "4", "128"),
        ("zset-max-listpack-value", "16", "64"),
        ("list-max-listpack-size", "4", "-2"),
    ];
    for (name, small, usual) in limits {
        let value = if seed.is_multiple_of(2) { small } else { usual };
        commands.push(Command::new(words(&["CONFIG", "SET", name, value])));
    }
    if seed % 3 == 1 {
        commands.push(Command::new(words(&["HELLO", "3"])));
    }
    while commands.len() < length {
        if gen.rng.chance(1) {
            let proto = gen.rng.pick(&["2", "3"]);
            commands.push(Command::new(words(&["HELLO", proto])));
        } else if extended {
            commands.extend(gen.extended_step());
        } else {
            commands.extend(gen.step());
        }
    }
    commands
}

/// `reply` with its elements sorted, in pairs when `pairs`.
fn sorted(reply: &[u8], pairs: bool) -> Vec<u8> {
    seeded::sorted(reply, if pairs { 2 } else { 1 }, true)
}

fn normalise(reply: &[u8], mask: Mask, previous: Option<&[u8]>) -> Vec<u8> {
    match mask {
        Mask::Exact => reply.to_vec(),
        Mask::Sorted => sorted(reply, false),
        Mask::SortedIfTable { pairs } if previous == Some(b"$9\r\nhashtable\r\n") => sorted(reply, pairs),
        Mask::SortedIfTable { .. } => reply.to_vec(),
    }
}

use seeded::run;

/// What a matching seed exercised.
#[derive(Default)]
struct Tally {
    commands: usize,
    errors: usize,
    wrong_type: usize,
    /// Per command name: replies, and how many of them were errors.
    by_name: BTreeMap<String, (usize, usize)>,
    /// EXEC replies: run, aborted by a queue-time error, aborted by a broken watch.
    exec: [usize; 3],
    /// Blocking commands outside MULTI that timed out with a null reply.
    timeouts: usize,
}

impl Tally {
    fn add(&mut self, other: Tally) {
        self.commands += other.commands;
        self.errors += other.errors;
        self.wrong_type += other.wrong_type;
        for (name, (n, e)) in other.by_name {
            let entry = self.by_name.entry(name).or_default();
            entry.0 += n;
            entry.1 += e;
        }
        for (sum, n) in self.exec.iter_mut().zip(other.exec) {
            *sum += n;
        }
        self.timeouts += other.timeouts;
    }

    /// Counts what Redis's `reply` to `command` shows; `in_multi` tells whether it was queued.
    fn count(&mut self, command: &Command, reply: &[u8], in_multi: bool) {
        let name = String::from_utf8_lossy(&command.args[0]).to_ascii_uppercase();
        let null = reply == b"*-1\r\n" || reply == b"$-1\r\n" || reply == b"_\r\n";
        if name == "EXEC" {
            let outcome = if reply.starts_with(b"-EXECABORT") {
                1
            } else if null {
                2
            } else {
                0
            };
            self.exec[outcome] += usize::from(reply.starts_with(b"*") || reply.starts_with(b"-EXECABORT") || null);
        }
        let blocking = ["BL", "BR", "BZ"].iter().any(|p| name.starts_with(p))
            || command.args.iter().any(|a| a.eq_ignore_ascii_case(b"BLOCK"));
        self.timeouts += usize::from(blocking && null && !in_multi);
        self.errors += usize::from(reply.starts_with(b"-"));
        self.wrong_type += usize::from(reply.starts_with(b"-WRONGTYPE"));
        let entry = self.by_name.entry(name).or_default();
        entry.0 += 1;
        entry.1 += usize::from(reply.starts_with(b"-"));
    }
}

/// The first difference between the servers' replies to one seed, described.
fn compare_seed(seed: u64, extended: bool, redis_port: u16, kvik_port: u16) -> Result<Tally, String> {
    let commands = sequence(seed, extended);
    let (expected, redis_closed) = run(redis_port, &commands);
    assert!(!redis_closed, "seed {seed}: redis closed the connection");
    assert_eq!(expected.len(), commands.len(), "seed {seed}: redis's replies do not split one per command");
    let (got, kvik_closed) = run(kvik_port, &commands);
    let mut tally = Tally { commands: commands.len(), ..Tally::default() };
    let mut in_multi = false;
    for (i, command) in commands.iter().enumerate() {
        let previous = i.checked_sub(1).map(|p| expected[p].as_slice());
        tally.count(command, &expected[i], in_multi);
        match command.args[0].as_slice() {
            b"MULTI" => in_multi = true,
            b"EXEC" | b"DISCARD" => in_multi = false,
            _ => {}
        }
        let want = normalise(&expected[i], command.mask, previous);
        let have = got.get(i).map(|r| normalise(r, command.mask, previous));
        if have.as_deref() != Some(want.as_slice()) {
            // Back to the last WATCH or MULTI when one is near, which the reply may hang on.
            let window = i.saturating_sub(60);
            let last = |name: &[u8]| commands[window..i].iter().rposition(|c| c.args[0] == name);
            let from = last(b"WATCH")
                .or_else(|| last(b"MULTI"))
                .map_or(i.saturating_sub(6), |p| (window + p).min(i.saturating_sub(6)));
            let before: Vec<String> = commands[from..i].iter().map(Command::show).collect();
            let shown = |r: &[u8]| {
                let text = r.escape_ascii().to_string();
                if text.len() > 600 {
                    format!("{}... ({} bytes)", &text[..600], r.len())
                } else {
                    text
                }
            };
            let mut shown_command = command.show();
            if shown_command.len() > 400 {
                shown_command = format!("{}... ({} arguments)", &shown_command[..400], command.args.len());
            }
            // The earlier commands naming the same key, which made the value that differs.
            let key = command.args.get(1).cloned().unwrap_or_default();
            let history: Vec<String> = commands[..i]
                .iter()
                .enumerate()
                .filter(|(_, c)| c.args.iter().skip(1).any(|a| *a == key))
                .map(|(j, c)| format!("    {j}: {}", c.show().chars().take(200).collect::<String>()))
                .collect();
            // The transaction commands before, with Redis's replies: what a WATCH hangs on.
            let transactions: Vec<String> = commands[..i]
                .iter()
                .enumerate()
                .filter(|(_, c)| {
                    [&b"WATCH"[..], b"UNWATCH", b"MULTI", b"EXEC", b"DISCARD"].contains(&c.args[0].as_slice())
                })
                .map(|(j, c)| format!("    {j}: {} -> {}", c.show(), shown(&expected[j])))
                .collect();
            return Err(format!(
                "seed {seed}, command {i}: {shown_command}\n  after: {}\n  key history:\n{}\n  transactions:\n{}\n  redis {}\n  kvik  {}{}",
                before.join(" | ").chars().take(2400).collect::<String>(),
                history[history.len().saturating_sub(15)..].join("\n"),
                transactions[transactions.len().saturating_sub(8)..].join("\n"),
                shown(&want),
                have.map(|h| shown(&h)).unwrap_or_else(|| "<no reply>".into()),
                if kvik_closed { " <closed>" } else { "" },
            ));
        }
    }
    Ok(tally)
}

/// Runs the seeds against both servers, fails listing every seed that
/// differs, and returns what matched.
fn compare_run(test: &str, seeds: &[u64], extended: bool, redis_options: &[&str]) -> Option<Tally> {
    let redis = start_redis_with_or_skip(test, redis_options)?;
    let kvik = start_kvik();
    let mut failures = Vec::new();
    let mut total = Tally::default();
    for &seed in seeds {
        match compare_seed(seed, extended, redis.port, kvik.port) {
            Ok(t) => total.add(t),
            Err(msg) => failures.push(msg),
        }
    }
    seeded::assert_all_matched(&failures, seeds);
    eprintln!(
        "{test}: {} commands over {} seeds, all replies matched ({} error replies, {} of them WRONGTYPE)",
        total.commands,
        seeds.len(),
        total.errors,
        total.wrong_type
    );
    let per_name: Vec<String> = total.by_name.iter().map(|(name, (n, e))| format!("{name} {n}/{e}")).collect();
    eprintln!("{test}: replies/errors per command: {}", per_name.join(", "));
    Some(total)
}

#[test]
fn random_sequences_of_all_families_match_redis() {
    let test = "random_sequences_of_all_families_match_redis";
    let seeds = seeded::seeds(1..=SEEDS);
    let Some(total) = compare_run(test, &seeds, false, &[]) else { return };
    assert!(total.commands >= seeds.len() * COMMANDS_PER_SEED, "{test}: only {} commands compared", total.commands);
}

#[test]
fn random_transactions_and_blocking_match_redis() {
    let test = "random_transactions_and_blocking_match_redis";
    let seeds = seeded::seeds(TX_SEEDS);
    // Redis checks blocked clients' deadlines on its cron: at 100 Hz a 10 ms
    // timeout ends within about 10 ms rather than 100.
    let Some(total) = compare_run(test, &seeds, true, &["--hz", "100"]) else { return };
    let [run, aborted, unwatched] = total.exec;
    eprintln!(
        "{test}: EXEC ran {run} transactions, {aborted} aborted on queue-time errors, {unwatched} on a broken watch; \
         {} blocking commands timed out",
        total.timeouts
    );
    assert!(total.commands >= seeds.len() * TX_COMMANDS_PER_SEED, "{test}: only {} commands compared", total.commands);
    if std::env::var_os("KVIK_DIFF_SEED").is_none() {
        // The generator must keep reaching every outcome it is meant to test.
        assert!(run > 0 && aborted > 0 && unwatched > 0 && total.timeouts > 0, "{test}: an outcome was never reached");
        let nested = total.by_name.get("MULTI").map_or(0, |(_, errors)| *errors);
        assert!(nested > 0, "{test}: no nested MULTI was refused");
        let (scripts, failed) = total.by_name.get("EVAL").copied().unwrap_or((0, 0));
        assert!(scripts > 0 && failed > 0 && failed < scripts, "{test}: scripts ran {scripts}, failed {failed}");
    }
}

#[test]
fn sequences_are_deterministic_and_well_formed() {
    for seed in [1, 2, 77] {
        for extended in [false, true] {
            let a: Vec<String> = sequence(seed, extended).iter().map(Command::show).collect();
            let b: Vec<String> = sequence(seed, extended).iter().map(Command::show).collect();
            assert_eq!(a, b);
            assert!(a.len() >= if extended { TX_COMMANDS_PER_SEED } else { COMMANDS_PER_SEED });
        }
    }
    let stream = b"*2\r\n$1\r\nb\r\n$1\r\na\r\n:1\r\n";
    let parts = split_replies(stream);
    assert_eq!(parts.len(), 2);
    assert_eq!(normalise(&parts[0], Mask::Sorted, None), b"*2\r\n$1\r\na\r\n$1\r\nb\r\n");
    assert_eq!(normalise(&parts[0], Mask::SortedIfTable { pairs: false }, Some(b"$6\r\nintset\r\n")), parts[0]);
}
