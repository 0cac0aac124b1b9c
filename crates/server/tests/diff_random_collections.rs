//! Seeded random command sequences for the set and the sorted set
//! families, run pipelined on one connection to redis-server and one to
//! kvik: every reply must be the same bytes once the truly unordered ones
//! are normalised.
//!
//! Each family works on a handful of keys, with a string key among them so
//! the WRONGTYPE paths are hit, sets among the sorted set keys (the algebra
//! takes them as inputs), valid and invalid arguments, encoding limits
//! lowered at times with CONFIG SET, and RESP3 switched on now and then.
//!
//! What is normalised: members of a `hashtable` set come in hash order, so
//! replies listing set members are sorted; SSCAN and ZSCAN are asked for
//! everything at once (COUNT 1000) and their items sorted; random picks
//! (SRANDMEMBER, ZRANDMEMBER, SPOP) keep only their shape, and a key SPOP
//! took random members from is deleted right after so both servers go on
//! from the same state. `kvik_random_picks_hold_their_properties` checks
//! what the shapes cannot: picks are members, distinct when they must be.
//!
//! Lexicographic ranges are only meaningful when all scores are equal, so
//! they run on the key `lex`, which only ever gets members scored 0, and on
//! `txt`, a string nothing overwrites.
//!
//! Set `KVIK_DIFF_SEED=<seed>` or `<from>..<to>` to run other seeds.

mod common;

use std::collections::HashSet;

use common::elements_of;
use common::rng::Rng;
use common::seeded;
use common::{call_text, connect, start_kvik, start_redis_or_skip};

const SEEDS: u64 = 100;
const COMMANDS_PER_SEED: usize = 400;

/// How a reply is made comparable.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mask {
    Exact,
    /// The elements of an array or set reply are sorted.
    Sorted,
    /// A scan reply: cursor kept, items (or member/score pairs) sorted.
    Scan {
        pairs: bool,
    },
    /// A random pick: only the reply's kind and length are kept.
    Shape,
}

type Command = seeded::Command<Mask>;

impl Command {
    fn new(words: &[&str], mask: Mask) -> Command {
        Command { args: words.iter().map(|w| w.as_bytes().to_vec()).collect(), mask }
    }
}

/// Set keys; `str` holds a string, `{a}c` and `{b}d` share slots with `a` and `b`.
const SET_KEYS: &[&str] = &["a", "b", "{a}c", "{b}d", "s", "str"];
const SET_MEMBERS: &[&str] = &[
    "0",
    "1",
    "2",
    "3",
    "4",
    "5",
    "7",
    "10",
    "-1",
    "-20",
    "01",
    "+1",
    "-0",
    "x",
    "y",
    "z",
    "",
    " 1",
    "1.5",
    "9223372036854775807",
    "-9223372036854775808",
    "9223372036854775808",
    "\u{0}b\u{ff}",
];
const COUNTS: &[&str] = &["0", "1", "2", "3", "5", "100", "-1", "-3", "-100", "x", "1.5", "-9223372036854775808"];

const ZSET_KEYS: &[&str] = &["a", "b", "{a}c", "{b}d", "z", "str", "set"];
const ZMEMBERS: &[&str] = &["a", "b", "c", "d", "e", "f", "g", "", "\u{0}\r\n", "aa", "b\u{ff}"];
const SCORES: &[&str] = &[
    "0", "1", "2", "3", "-1", "2.5", "0.1", "0.2", "0.3", "-0", "inf", "-inf", "+inf", "1e308", "-1e308", "1e-300",
    "17", "100", "1.5e3", "nan", "abc", "1e400", "(1", "",
];
const BOUNDS: &[&str] = &[
    "-inf", "+inf", "inf", "0", "1", "(1", "2", "(2.5", "3", "(3", "-1", "(-inf", "(+inf", "100", "x", "nan", "(",
    "1e400",
];
const LEX_BOUNDS: &[&str] = &["-", "+", "[a", "(a", "[b", "(c", "[d", "(e", "[aa", "[", "(", "a", "+x", "[\u{0}"];
const RANKS: &[&str] = &["0", "1", "2", "-1", "-2", "-100", "100", "3", "x", "9223372036854775807"];

struct Gen {
    rng: Rng,
}

fn cmd(words: Vec<String>, mask: Mask) -> Command {
    Command { args: words.into_iter().map(String::into_bytes).collect(), mask }
}

impl Gen {
    fn pick(&mut self, items: &[&str]) -> String {
        self.rng.pick(items).to_string()
    }

    /// Commands every family mixes in: string writes, type and encoding
    /// checks, deletions, and encoding limits changing under the data.
    fn generic(&mut self, keys: &[&str], limit_option: &str, limits: &[&str]) -> Command {
        let key = self.pick(keys);
        match self.rng.below(6) {
            0 => cmd(vec!["SET".into(), key, "v".into()], Mask::Exact),
            1 => cmd(vec!["TYPE".into(), key], Mask::Exact),
            2 => cmd(vec!["OBJECT".into(), "ENCODING".into(), key], Mask::Exact),
            3 => cmd(vec!["DEL".into(), key], Mask::Exact),
            4 => cmd(vec!["EXISTS".into(), key], Mask::Exact),
            _ => cmd(vec!["CONFIG".into(), "SET".into(), limit_option.into(), self.pick(limits)], Mask::Exact),
        }
    }

    fn members(&mut self, pool: &[&str], min: usize) -> Vec<String> {
        let n = min + self.rng.below(4);
        (0..n).map(|_| self.pick(pool)).collect()
    }

    fn set_command(&mut self, out: &mut Vec<Command>) {
        let key = self.pick(SET_KEYS);
        let w = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<String>>();
        let cmd = match self.rng.below(22) {
            0..=3 => {
                let mut a = w(&["SADD", &key]);
                a.extend(self.members(SET_MEMBERS, 1));
                cmd(a, Mask::Exact)
            }
            4 => {
                let mut a = w(&["SREM", &key]);
                a.extend(self.members(SET_MEMBERS, 1));
                cmd(a, Mask::Exact)
            }
            5 => cmd(w(&["SMEMBERS", &key]), Mask::Sorted),
            6 => cmd(vec!["SISMEMBER".into(), key, self.pick(SET_MEMBERS)], Mask::Exact),
            7 => {
                let mut a = w(&["SMISMEMBER", &key]);
                a.extend(self.members(SET_MEMBERS, 1));
                cmd(a, Mask::Exact)
            }
            8 => cmd(w(&["SCARD", &key]), Mask::Exact),
            9 => {
                // SPOP takes random members unless it takes all: the key is
                // then dropped so both servers continue from the same state.
                let mut a = w(&["SPOP", &key]);
                if self.rng.chance(70) {
                    a.push(self.pick(COUNTS));
                }
                out.push(cmd(a, Mask::Shape));
                cmd(w(&["DEL", &key]), Mask::Exact)
            }
            10 => {
                let mut a = w(&["SRANDMEMBER", &key]);
                if self.rng.chance(80) {
                    a.push(self.pick(COUNTS));
                }
                cmd(a, Mask::Shape)
            }
            11 | 12 => {
                let name = self.pick(&["SINTER", "SUNION", "SDIFF"]);
                let mut a = vec![name];
                a.extend(self.members(SET_KEYS, 1));
                cmd(a, Mask::Sorted)
            }
            13 | 14 => {
                let name = self.pick(&["SINTERSTORE", "SUNIONSTORE", "SDIFFSTORE"]);
                let mut a = vec![name, key];
                a.extend(self.members(SET_KEYS, 1));
                cmd(a, Mask::Exact)
            }
            15 => {
                let keys = self.members(SET_KEYS, 1);
                let mut a = vec!["SINTERCARD".to_string(), keys.len().to_string()];
                if self.rng.chance(10) {
                    a[1] = self.pick(&["0", "-1", "x", "9"]);
                }
                a.extend(keys);
                if self.rng.chance(40) {
                    a.push("LIMIT".into());
                    a.push(self.pick(&["0", "1", "2", "-1", "x"]));
                }
                cmd(a, Mask::Exact)
            }
            16 | 17 => {
                let dst = self.pick(SET_KEYS);
                cmd(vec!["SMOVE".into(), key, dst, self.pick(SET_MEMBERS)], Mask::Exact)
            }
            18 => {
                let mut a = w(&["SSCAN", &key, "0", "COUNT", "1000"]);
                if self.rng.chance(30) {
                    a.push("MATCH".into());
                    a.push(self.pick(&["1*", "*0", "?", "x"]));
                }
                cmd(a, Mask::Scan { pairs: false })
            }
            _ => self.generic(SET_KEYS, "set-max-intset-entries", &["512", "3", "1", "0", "5"]),
        };
        out.push(cmd);
    }

    fn zadd(&mut self, key: &str) -> Command {
        let mut a = vec!["ZADD".to_string(), key.to_string()];
        for flag in ["NX", "XX", "GT", "LT", "CH", "INCR"] {
            if self.rng.chance(12) {
                a.push(flag.into());
            }
        }
        for _ in 0..1 + self.rng.below(3) {
            a.push(self.pick(SCORES));
            a.push(self.pick(ZMEMBERS));
        }
        cmd(a, Mask::Exact)
    }

    fn zrange(&mut self, key: String) -> Command {
        let (name, lex) = match self.rng.below(8) {
            0 => ("ZRANGE", false),
            1 => ("ZREVRANGE", false),
            2 => ("ZRANGEBYSCORE", false),
            3 => ("ZREVRANGEBYSCORE", false),
            4 => ("ZRANGEBYLEX", true),
            5 => ("ZREVRANGEBYLEX", true),
            6 => ("ZRANGESTORE", false),
            _ => ("ZRANGE", true),
        };
        let mut a = vec![name.to_string()];
        if name == "ZRANGESTORE" {
            a.push(self.pick(&["a", "b", "z", "str"]));
        }
        let by = match name {
            "ZRANGE" | "ZRANGESTORE" if lex => Some("BYLEX"),
            "ZRANGE" | "ZRANGESTORE" => [None, Some("BYSCORE")][self.rng.below(2)],
            _ => None,
        };
        let lexical = lex || by == Some("BYLEX");
        a.push(if lexical { self.pick(&["lex", "lex", "lex", "txt"]) } else { key });
        let pool = if lexical {
            LEX_BOUNDS
        } else if by == Some("BYSCORE") || name.contains("BYSCORE") {
            BOUNDS
        } else {
            RANKS
        };
        a.push(self.pick(pool));
        a.push(self.pick(pool));
        if let Some(b) = by {
            a.push(b.into());
        }
        if name.starts_with("ZRANGE") && name != "ZRANGEBYSCORE" && name != "ZRANGEBYLEX" && self.rng.chance(30) {
            a.push("REV".into());
        }
        if self.rng.chance(30) {
            a.push("LIMIT".into());
            a.push(self.pick(&["0", "1", "2", "-1", "x"]));
            a.push(self.pick(&["1", "2", "-1", "0", "100"]));
        }
        if self.rng.chance(50) {
            a.push("WITHSCORES".into());
        }
        cmd(a, Mask::Exact)
    }

    fn zalgebra(&mut self, key: String) -> Command {
        let name = self.pick(&["ZUNION", "ZINTER", "ZDIFF", "ZUNIONSTORE", "ZINTERSTORE", "ZDIFFSTORE", "ZINTERCARD"]);
        let keys = self.members(&["a", "b", "{a}c", "z", "set", "str", "lex", "none"], 1);
        let mut a = vec![name.clone()];
        if name.ends_with("STORE") {
            a.push(key);
        }
        a.push(if self.rng.chance(8) { self.pick(&["0", "-1", "x", "9"]) } else { keys.len().to_string() });
        let n = keys.len();
        a.extend(keys);
        if self.rng.chance(30) {
            a.push("WEIGHTS".into());
            for _ in 0..n {
                a.push(self.pick(&["1", "2", "-1", "0", "0.5", "inf", "x"]));
            }
        }
        if self.rng.chance(30) {
            a.push("AGGREGATE".into());
            a.push(self.pick(&["SUM", "min", "MAX", "avg"]));
        }
        if self.rng.chance(20) {
            a.push("LIMIT".into());
            a.push(self.pick(&["0", "1", "-1"]));
        }
        if self.rng.chance(50) {
            a.push("WITHSCORES".into());
        }
        cmd(a, Mask::Exact)
    }

    fn zset_command(&mut self, out: &mut Vec<Command>) {
        let key = self.pick(ZSET_KEYS);
        let cmd = match self.rng.below(30) {
            0..=4 => self.zadd(&key),
            5 => {
                let member = self.pick(ZMEMBERS);
                cmd(vec!["ZADD".into(), "lex".into(), "0".into(), member], Mask::Exact)
            }
            6 => cmd(vec!["ZINCRBY".into(), key, self.pick(SCORES), self.pick(ZMEMBERS)], Mask::Exact),
            7 => {
                let mut a = vec!["ZREM".to_string(), self.pick(&["a", "b", "z", "lex", "str"])];
                a.extend(self.members(ZMEMBERS, 1));
                cmd(a, Mask::Exact)
            }
            8 => cmd(vec!["ZCARD".into(), key], Mask::Exact),
            9 => cmd(vec!["ZSCORE".into(), key, self.pick(ZMEMBERS)], Mask::Exact),
            10 => {
                let mut a = vec!["ZMSCORE".to_string(), key];
                a.extend(self.members(ZMEMBERS, 1));
                cmd(a, Mask::Exact)
            }
            11 => {
                let name = self.pick(&["ZRANK", "ZREVRANK"]);
                cmd(vec![name, key, self.pick(ZMEMBERS)], Mask::Exact)
            }
            12 => cmd(vec!["ZCOUNT".into(), key, self.pick(BOUNDS), self.pick(BOUNDS)], Mask::Exact),
            13 => {
                let k = self.pick(&["lex", "txt", "none"]);
                cmd(vec!["ZLEXCOUNT".into(), k, self.pick(LEX_BOUNDS), self.pick(LEX_BOUNDS)], Mask::Exact)
            }
            14..=17 => self.zrange(key),
            18 => cmd(vec!["ZREMRANGEBYRANK".into(), key, self.pick(RANKS), self.pick(RANKS)], Mask::Exact),
            19 => cmd(vec!["ZREMRANGEBYSCORE".into(), key, self.pick(BOUNDS), self.pick(BOUNDS)], Mask::Exact),
            20 => {
                let (min, max) = (self.pick(LEX_BOUNDS), self.pick(LEX_BOUNDS));
                cmd(vec!["ZREMRANGEBYLEX".into(), "lex".into(), min, max], Mask::Exact)
            }
            21 => {
                let mut a = vec![self.pick(&["ZPOPMIN", "ZPOPMAX"]), key];
                if self.rng.chance(60) {
                    a.push(self.pick(&["0", "1", "2", "10", "-1", "x"]));
                }
                cmd(a, Mask::Exact)
            }
            22 => {
                let keys = self.members(&["a", "b", "z", "none", "str", "lex"], 1);
                let mut a = vec!["ZMPOP".to_string(), keys.len().to_string()];
                a.extend(keys);
                a.push(self.pick(&["MIN", "MAX", "max", "FOO"]));
                if self.rng.chance(50) {
                    a.push("COUNT".into());
                    a.push(self.pick(&["1", "2", "10", "0", "x"]));
                }
                cmd(a, Mask::Exact)
            }
            23 => {
                let mut a = vec!["ZRANDMEMBER".to_string(), key];
                if self.rng.chance(80) {
                    a.push(self.pick(COUNTS));
                    if self.rng.chance(50) {
                        a.push("WITHSCORES".into());
                    }
                }
                cmd(a, Mask::Shape)
            }
            24 | 25 => self.zalgebra(key),
            26 => {
                let members = self.members(ZMEMBERS, 1);
                let mut a = vec!["SADD".to_string(), "set".to_string()];
                a.extend(members);
                cmd(a, Mask::Exact)
            }
            27 => {
                let mut a = vec!["ZSCAN".to_string(), key, "0".into(), "COUNT".into(), "1000".into()];
                if self.rng.chance(30) {
                    a.push("MATCH".into());
                    a.push(self.pick(&["a*", "?", "*b*"]));
                }
                cmd(a, Mask::Scan { pairs: true })
            }
            _ => self.generic(ZSET_KEYS, "zset-max-listpack-entries", &["128", "3", "1", "0", "5"]),
        };
        out.push(cmd);
    }
}

/// `reply`'s elements sorted, taken `group` at a time (2 keeps member/score pairs together).
fn sorted(reply: &[u8], group: usize) -> Vec<u8> {
    seeded::sorted(reply, group, false)
}

fn normalise(reply: &[u8], mask: Mask) -> Vec<u8> {
    match mask {
        Mask::Exact => reply.to_vec(),
        Mask::Sorted => sorted(reply, 1),
        Mask::Scan { pairs } => match elements_of(reply, false) {
            Some((mut out, items)) if items.len() == 2 => {
                out.extend_from_slice(&items[0]);
                out.extend(sorted(&items[1], if pairs { 2 } else { 1 }));
                out
            }
            _ => reply.to_vec(),
        },
        Mask::Shape => match reply.first() {
            Some(b'*' | b'~') => reply[..reply.windows(2).position(|w| w == b"\r\n").map_or(0, |i| i + 2)].to_vec(),
            Some(b'$') if !reply.starts_with(b"$-1") => b"$<bulk>".to_vec(),
            _ => reply.to_vec(),
        },
    }
}

/// One seed's commands: a clean start with the default limits, then the mix.
fn sequence(seed: u64, zsets: bool) -> Vec<Command> {
    let mut gen = Gen { rng: Rng::new(seed) };
    let mut commands = vec![
        Command::new(&["FLUSHALL"], Mask::Exact),
        Command::new(&["CONFIG", "SET", "set-max-intset-entries", "512"], Mask::Exact),
        Command::new(&["CONFIG", "SET", "zset-max-listpack-entries", "128"], Mask::Exact),
        Command::new(&["SET", "str", "text"], Mask::Exact),
        Command::new(&["SET", "txt", "text"], Mask::Exact),
    ];
    if seed % 3 == 1 {
        commands.push(Command::new(&["HELLO", "3"], Mask::Exact));
    }
    while commands.len() < COMMANDS_PER_SEED {
        if gen.rng.chance(1) {
            let proto = gen.rng.pick(&["2", "3"]);
            commands.push(Command::new(&["HELLO", proto], Mask::Exact));
        } else if zsets {
            gen.zset_command(&mut commands);
        } else {
            gen.set_command(&mut commands);
        }
    }
    commands
}

/// The first difference between the servers' replies to a seed's sequence.
fn compare_seed(seed: u64, zsets: bool, redis_port: u16, kvik_port: u16) -> Result<usize, String> {
    let commands = sequence(seed, zsets);
    let (expected, redis_closed) = seeded::run(redis_port, &commands);
    assert!(!redis_closed, "seed {seed}: redis closed the connection");
    assert_eq!(expected.len(), commands.len(), "seed {seed}: redis's replies do not split into one per command");
    let (got, kvik_closed) = seeded::run(kvik_port, &commands);
    let normalised = |i: usize, r: &[u8]| normalise(r, commands[i].mask);
    match seeded::first_difference(seed, &commands, (&expected, &got), kvik_closed, 6, normalised) {
        Some(difference) => Err(difference),
        None => Ok(commands.len()),
    }
}

fn compare_family(test: &str, zsets: bool) {
    let Some(redis) = start_redis_or_skip(test) else { return };
    let kvik = start_kvik();
    let seeds = seeded::seeds(1..=SEEDS);
    let mut failures = Vec::new();
    let mut compared = 0;
    for &seed in &seeds {
        match compare_seed(seed, zsets, redis.port, kvik.port) {
            Ok(n) => compared += n,
            Err(e) => failures.push(e),
        }
    }
    seeded::assert_all_matched(&failures, &seeds);
    eprintln!("{test}: {compared} commands over {} seeds matched redis-server", seeds.len());
}

#[test]
fn random_set_sequences_match_redis() {
    compare_family("random_set_sequences_match_redis", false);
}

#[test]
fn random_zset_sequences_match_redis() {
    compare_family("random_zset_sequences_match_redis", true);
}

/// The bulk strings of a flat RESP2 array reply.
fn bulks(reply: &[u8]) -> Vec<Vec<u8>> {
    elements_of(reply, false)
        .map(|(_, items)| {
            items
                .iter()
                .map(|i| {
                    let start = i.windows(2).position(|w| w == b"\r\n").map_or(0, |p| p + 2);
                    i[start..i.len() - 2].to_vec()
                })
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn kvik_random_picks_hold_their_properties() {
    let server = start_kvik();
    let mut conn = connect(server.port);
    let mut run = |args: &[&str]| call_text(&mut conn, args);
    let members: Vec<String> = (0..50).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD", "s"];
    sadd.extend(members.iter().map(String::as_str));
    run(&sadd);
    let all: HashSet<Vec<u8>> = members.iter().map(|m| m.as_bytes().to_vec()).collect();
    for count in ["1", "10", "49", "50", "80"] {
        let picked = bulks(&run(&["SRANDMEMBER", "s", count]));
        let distinct: HashSet<_> = picked.iter().cloned().collect();
        assert_eq!(picked.len(), count.parse::<usize>().unwrap_or(0).min(50));
        assert_eq!(distinct.len(), picked.len(), "SRANDMEMBER {count} repeats a member");
        assert!(distinct.is_subset(&all));
    }
    let repeated = bulks(&run(&["SRANDMEMBER", "s", "-200"]));
    assert_eq!(repeated.len(), 200);
    assert!(repeated.iter().all(|m| all.contains(m)));
    let popped = bulks(&run(&["SPOP", "s", "20"]));
    let distinct: HashSet<_> = popped.iter().cloned().collect();
    assert_eq!((popped.len(), distinct.len()), (20, 20));
    assert_eq!(run(&["SCARD", "s"]), b":30\r\n");
    for m in &popped {
        let m = String::from_utf8_lossy(m).into_owned();
        assert_eq!(run(&["SISMEMBER", "s", &m]), b":0\r\n");
    }

    let mut zadd = vec!["ZADD".to_string(), "z".to_string()];
    for (i, m) in members.iter().enumerate() {
        zadd.push(i.to_string());
        zadd.push(m.clone());
    }
    let zadd: Vec<&str> = zadd.iter().map(String::as_str).collect();
    run(&zadd);
    let pairs = bulks(&run(&["ZRANDMEMBER", "z", "20", "WITHSCORES"]));
    assert_eq!(pairs.len(), 40);
    let names: HashSet<_> = pairs.chunks(2).map(|p| p[0].clone()).collect();
    assert_eq!(names.len(), 20, "ZRANDMEMBER 20 repeats a member");
    for p in pairs.chunks(2) {
        let m = String::from_utf8_lossy(&p[0]).into_owned();
        let score = run(&["ZSCORE", "z", &m]);
        assert_eq!(bulks(&[b"*1\r\n".to_vec(), score].concat()), vec![p[1].clone()]);
    }
    let repeated = bulks(&run(&["ZRANDMEMBER", "z", "-70"]));
    assert_eq!(repeated.len(), 70);
    assert!(repeated.iter().all(|m| all.contains(m)));
}
