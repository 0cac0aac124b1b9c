//! Seeded random command sequences for one value family (lists or hashes),
//! mixed with string and generic key commands on a handful of shared keys so
//! keys change type under each other's feet and WRONGTYPE paths are hit. A
//! sequence runs pipelined on one connection to redis-server and one to
//! kvik; every reply must be the same bytes, except the few that are truly
//! unordered or random:
//!
//! - HGETALL, HKEYS, HVALS and a whole-hash HSCAN are preceded by
//!   `OBJECT ENCODING` of their key, and sorted only when Redis reported
//!   `hashtable` (a `listpack` hash has a fixed order, compared as is);
//! - HRANDFIELD is compared by properties: the reply's kind and length, that
//!   positive counts give distinct fields, and RESP3's pair shape.
//!
//! `KVIK_DIFF_SEED=<seed>` (or `<from>..<to>`) runs other seeds than the usual ones.

#![allow(dead_code)]

use crate::common::elements_of;
use crate::common::rng::Rng;
use crate::common::seeded;
use crate::common::{start_kvik, start_redis_or_skip};

/// Seeds run by default, and commands per seed.
pub const SEEDS: u64 = 100;
pub const COMMANDS_PER_SEED: usize = 400;

/// Which commands a sequence is mostly made of.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Family {
    Lists,
    Hashes,
}

/// How a reply is made comparable.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Mask {
    Exact,
    /// Sorted (pairs kept together when `pairs`) if the previous reply, an
    /// `OBJECT ENCODING` of the same key, was `hashtable`.
    SortedIfTable {
        pairs: bool,
        scan: bool,
    },
    /// An HRANDFIELD reply; `distinct` when the count was positive.
    RandomPicks {
        distinct: bool,
        with_values: bool,
    },
}

type Command = seeded::Command<Mask>;

impl Command {
    fn new(args: Vec<Vec<u8>>) -> Command {
        Command { args, mask: Mask::Exact }
    }
}

const KEYS: &[&str] = &["a", "b", "{a}c", "{b}d", "s"];
const ELEMENTS: &[&str] = &["a", "b", "c", "1", "2", "", "\u{0}x", "-3", "10"];
const FIELDS: &[&str] = &["f1", "f2", "f3", "f4", "f5", "f6", "f7", "", "\u{0}", "10"];
const INDEXES: &[&str] = &["0", "1", "2", "-1", "-2", "5", "-6", "100", "-100", "x", "1.5", "9223372036854775807"];
const BAD: &[&str] = &["x", "", "-1", "0", "1.5", "9223372036854775808", "-9223372036854775808", " 1"];

struct Gen {
    rng: Rng,
    family: Family,
}

impl Gen {
    fn key(&mut self) -> Vec<u8> {
        self.rng.pick(KEYS).as_bytes().to_vec()
    }

    fn word(&mut self, words: &[&str]) -> Vec<u8> {
        if self.rng.chance(4) {
            return vec![b'z'; 60 + self.rng.below(10)];
        }
        self.rng.pick(words).as_bytes().to_vec()
    }

    fn index(&mut self) -> Vec<u8> {
        self.rng.pick(INDEXES).as_bytes().to_vec()
    }

    fn count(&mut self) -> Vec<u8> {
        if self.rng.chance(10) {
            self.rng.pick(BAD).as_bytes().to_vec()
        } else {
            self.rng.below(5).to_string().into_bytes()
        }
    }

    fn end(&mut self) -> Vec<u8> {
        self.rng.pick(&["LEFT", "RIGHT", "left", "Right", "UP"]).as_bytes().to_vec()
    }

    /// Commands of one step: usually one, two when a reply needs its
    /// key's encoding to be compared.
    fn step(&mut self) -> Vec<Command> {
        let roll = self.rng.below(100);
        let mut commands = if roll < 70 {
            match self.family {
                Family::Lists => vec![Command::new(self.list_command())],
                Family::Hashes => self.hash_command(),
            }
        } else if roll < 85 {
            vec![Command::new(self.string_command())]
        } else {
            vec![Command::new(self.key_command())]
        };
        let last = commands.last_mut().expect("a step has a command");
        if last.mask == Mask::Exact {
            if self.rng.chance(3) && last.args.len() > 1 {
                last.args.pop();
            } else if self.rng.chance(2) {
                last.args.push(b"junk".to_vec());
            }
        }
        commands
    }

    fn list_command(&mut self) -> Vec<Vec<u8>> {
        let name = self.rng.pick(&[
            "LPUSH",
            "RPUSH",
            "RPUSH",
            "LPUSHX",
            "RPUSHX",
            "LPOP",
            "RPOP",
            "LLEN",
            "LRANGE",
            "LRANGE",
            "LINDEX",
            "LSET",
            "LREM",
            "LTRIM",
            "LINSERT",
            "LPOS",
            "RPOPLPUSH",
            "LMOVE",
            "LMPOP",
        ]);
        let mut a = vec![name.as_bytes().to_vec(), self.key()];
        match name {
            "LPUSH" | "RPUSH" | "LPUSHX" | "RPUSHX" => {
                for _ in 0..1 + self.rng.below(4) {
                    a.push(self.word(ELEMENTS));
                }
            }
            "LPOP" | "RPOP" if self.rng.chance(50) => a.push(self.count()),
            "LRANGE" | "LTRIM" => {
                a.push(self.index());
                a.push(self.index());
            }
            "LINDEX" => a.push(self.index()),
            "LSET" => {
                a.push(self.index());
                a.push(self.word(ELEMENTS));
            }
            "LREM" => {
                a.push(self.rng.pick(&["0", "1", "2", "-1", "-2", "x"]).as_bytes().to_vec());
                a.push(self.word(ELEMENTS));
            }
            "LINSERT" => {
                a.push(self.rng.pick(&["BEFORE", "AFTER", "after", "MIDDLE"]).as_bytes().to_vec());
                a.push(self.word(ELEMENTS));
                a.push(self.word(ELEMENTS));
            }
            "LPOS" => {
                a.push(self.word(ELEMENTS));
                for _ in 0..self.rng.below(3) {
                    a.push(self.rng.pick(&["RANK", "COUNT", "MAXLEN", "rank", "BOGUS"]).as_bytes().to_vec());
                    a.push(
                        self.rng
                            .pick(&["1", "2", "-1", "-2", "0", "3", "x", "-9223372036854775808"])
                            .as_bytes()
                            .to_vec(),
                    );
                }
            }
            "RPOPLPUSH" => a.push(self.key()),
            "LMOVE" => {
                a.push(self.key());
                a.push(self.end());
                a.push(self.end());
            }
            "LMPOP" => {
                let n = self.rng.below(4);
                a[1] = if self.rng.chance(10) {
                    self.rng.pick(BAD).as_bytes().to_vec()
                } else {
                    n.to_string().into_bytes()
                };
                for _ in 0..n {
                    a.push(self.key());
                }
                a.push(self.end());
                if self.rng.chance(40) {
                    a.push(b"COUNT".to_vec());
                    a.push(self.count());
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
            "HSET",
            "HMSET",
            "HSETNX",
            "HGET",
            "HMGET",
            "HGETALL",
            "HKEYS",
            "HVALS",
            "HDEL",
            "HDEL",
            "HEXISTS",
            "HLEN",
            "HSTRLEN",
            "HINCRBY",
            "HINCRBYFLOAT",
            "HRANDFIELD",
            "HSCAN",
            "CONFIG",
        ]);
        let key = self.key();
        let mut a = vec![name.as_bytes().to_vec(), key.clone()];
        let mut mask = Mask::Exact;
        match name {
            "HSET" | "HMSET" => {
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.word(FIELDS));
                    a.push(self.word(ELEMENTS));
                }
            }
            "HSETNX" => {
                a.push(self.word(FIELDS));
                a.push(self.word(ELEMENTS));
            }
            "HGET" | "HEXISTS" | "HSTRLEN" => a.push(self.word(FIELDS)),
            "HMGET" | "HDEL" => {
                for _ in 0..1 + self.rng.below(3) {
                    a.push(self.word(FIELDS));
                }
            }
            "HGETALL" | "HKEYS" | "HVALS" => mask = Mask::SortedIfTable { pairs: name == "HGETALL", scan: false },
            "HINCRBY" => {
                a.push(self.word(FIELDS));
                a.push(
                    self.rng
                        .pick(&["1", "-5", "100", "x", "9223372036854775807", "-9223372036854775808"])
                        .as_bytes()
                        .to_vec(),
                );
            }
            "HINCRBYFLOAT" => {
                a.push(self.word(FIELDS));
                a.push(
                    self.rng.pick(&["1.5", "-0.25", "1e3", "x", "inf", "nan", "0.1", "5", "1e308"]).as_bytes().to_vec(),
                );
            }
            "HRANDFIELD" => {
                let count: i64 = self.rng.pick(&["-3", "-1", "0", "1", "2", "5", "20", "-20"]).parse().unwrap_or(0);
                let mut with_values = false;
                if self.rng.chance(70) {
                    a.push(count.to_string().into_bytes());
                    with_values = self.rng.chance(50);
                    if with_values {
                        a.push(b"WITHVALUES".to_vec());
                    }
                }
                mask = Mask::RandomPicks { distinct: count >= 0, with_values };
            }
            "HSCAN" => {
                if self.rng.chance(15) {
                    // Refused: a cursor that is not one, or an option that is not allowed.
                    if self.rng.chance(50) {
                        a.push(self.rng.pick(&["x", "1.5", " 0", "0x1"]).as_bytes().to_vec());
                    } else {
                        a.push(b"0".to_vec());
                        let option =
                            self.rng.pick(&["COUNT 0", "COUNT x", "COUNT -1", "TYPE hash", "NOVALUES", "MATCH"]);
                        a.extend(option.split(' ').map(|w| w.as_bytes().to_vec()));
                    }
                } else {
                    a.push(b"0".to_vec());
                    if self.rng.chance(50) {
                        a.push(b"MATCH".to_vec());
                        a.push(self.rng.pick(&["f*", "*", "?", "f[1-3]"]).as_bytes().to_vec());
                    }
                    a.push(b"COUNT".to_vec());
                    a.push(b"1000".to_vec());
                }
                // Sorted if a table in every case: " 0" reads as cursor 0 in
                // Redis (strtoul skips blanks), so a "refused" scan may answer
                // in full; an error reply is left as it is.
                mask = Mask::SortedIfTable { pairs: true, scan: true };
            }
            _ => {
                // CONFIG SET of the small-hash limits; new writes follow them.
                let (option, values): (&str, &[&str]) = if self.rng.chance(50) {
                    ("hash-max-listpack-entries", &["0", "2", "4", "8", "512"])
                } else {
                    ("hash-max-listpack-value", &["0", "3", "16", "64"])
                };
                let value = self.rng.pick(values);
                return vec![Command::new(vec![b"CONFIG".to_vec(), b"SET".to_vec(), option.into(), value.into()])];
            }
        }
        let command = Command { args: a, mask };
        if matches!(mask, Mask::SortedIfTable { .. }) {
            let encoding = Command::new(vec![b"OBJECT".to_vec(), b"ENCODING".to_vec(), key]);
            return vec![encoding, command];
        }
        vec![command]
    }

    fn string_command(&mut self) -> Vec<Vec<u8>> {
        let name = self.rng.pick(&["SET", "GET", "APPEND", "INCR", "SETRANGE", "STRLEN"]);
        // Mostly the string key, so the family's keys are not strings most of the time.
        let key = if self.rng.chance(75) { b"s".to_vec() } else { self.key() };
        let mut a = vec![name.as_bytes().to_vec(), key];
        match name {
            "SET" | "APPEND" => a.push(self.word(ELEMENTS)),
            "SETRANGE" => {
                a.push(b"1".to_vec());
                a.push(b"x".to_vec());
            }
            _ => {}
        }
        a
    }

    fn key_command(&mut self) -> Vec<Vec<u8>> {
        let name = self.rng.pick(&["DEL", "EXISTS", "TYPE", "OBJECT", "RENAME", "COPY", "DBSIZE", "SCAN", "LLEN"]);
        let mut a = vec![name.as_bytes().to_vec()];
        match name {
            "OBJECT" => {
                a.push(b"ENCODING".to_vec());
                a.push(self.key());
            }
            "RENAME" | "COPY" => {
                a.push(self.key());
                a.push(self.key());
            }
            "DBSIZE" => {}
            "SCAN" => {
                // One key per type at most would be needed for a stable
                // order; TYPE with a pattern naming one key gives that.
                a.extend([b"0".to_vec(), b"MATCH".to_vec(), self.key(), b"TYPE".to_vec()]);
                a.push(self.rng.pick(&["list", "hash", "string"]).as_bytes().to_vec());
            }
            _ => a.push(self.key()),
        }
        a
    }
}

/// The commands of one seed: a clean start, then the random mix, some of it in RESP3.
fn sequence(family: Family, seed: u64) -> Vec<Command> {
    let mut gen = Gen { rng: Rng::new(seed), family };
    let words = |w: &[&str]| w.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
    let mut commands = vec![
        Command::new(words(&["FLUSHALL"])),
        Command::new(words(&["CONFIG", "SET", "hash-max-listpack-entries", "512"])),
        Command::new(words(&["CONFIG", "SET", "hash-max-listpack-value", "64"])),
    ];
    if seed % 3 == 1 {
        commands.push(Command::new(words(&["HELLO", "3"])));
    }
    while commands.len() < COMMANDS_PER_SEED {
        if gen.rng.chance(1) {
            let proto = gen.rng.pick(&["2", "3"]);
            commands.push(Command::new(words(&["HELLO", proto])));
        } else {
            commands.extend(gen.step());
        }
    }
    commands
}

/// The commands of one seed as argument lists, for tests that compare
/// something other than the replies (the keyspace notifications they cause).
pub fn sequence_args(family: Family, seed: u64) -> Vec<Vec<Vec<u8>>> {
    sequence(family, seed).into_iter().map(|c| c.args).collect()
}

/// `reply` with its elements sorted, in pairs when `pairs`.
fn sorted(reply: &[u8], pairs: bool) -> Vec<u8> {
    seeded::sorted(reply, if pairs { 2 } else { 1 }, true)
}

/// An HRANDFIELD reply reduced to what both servers must agree on: its
/// kind, its length and each element's kind, and whether fields repeat
/// where they must not.
fn picks_shape(reply: &[u8], distinct: bool, with_values: bool) -> Vec<u8> {
    if reply.starts_with(b"$") && !reply.starts_with(b"$-1") {
        return b"<one field>".to_vec();
    }
    let Some((mut out, items)) = elements_of(reply, true) else { return reply.to_vec() };
    out.extend(items.iter().map(|i| i[0]));
    let flat_pairs = with_values && items.first().is_some_and(|i| i[0] == b'$');
    let mut fields: Vec<&Vec<u8>> = items.iter().step_by(if flat_pairs { 2 } else { 1 }).collect();
    let all = fields.len();
    fields.sort();
    fields.dedup();
    if distinct && fields.len() < all {
        out.extend_from_slice(b" <repeated fields>");
    }
    out
}

fn normalise(reply: &[u8], mask: Mask, previous: Option<&[u8]>) -> Vec<u8> {
    match mask {
        Mask::Exact => reply.to_vec(),
        Mask::SortedIfTable { pairs, scan } => {
            if previous != Some(b"$9\r\nhashtable\r\n") {
                return reply.to_vec();
            }
            if !scan {
                return sorted(reply, pairs);
            }
            match elements_of(reply, true) {
                Some((mut out, items)) if items.len() == 2 => {
                    out.extend_from_slice(&items[0]);
                    out.extend(sorted(&items[1], true));
                    out
                }
                _ => reply.to_vec(),
            }
        }
        Mask::RandomPicks { distinct, with_values } => picks_shape(reply, distinct, with_values),
    }
}

use seeded::run;

/// What a matching seed exercised.
#[derive(Default)]
struct Tally {
    commands: usize,
    errors: usize,
    wrong_type: usize,
    unordered: usize,
}

/// The first difference between the servers' replies to one seed, described.
fn compare_seed(family: Family, seed: u64, redis_port: u16, kvik_port: u16) -> Result<Tally, String> {
    let commands = sequence(family, seed);
    let (expected, redis_closed) = run(redis_port, &commands);
    assert!(!redis_closed, "seed {seed}: redis closed the connection");
    assert_eq!(expected.len(), commands.len(), "seed {seed}: redis's replies do not split one per command");
    let (got, kvik_closed) = run(kvik_port, &commands);
    let mut tally = Tally { commands: commands.len(), ..Tally::default() };
    let previous = |i: usize| i.checked_sub(1).map(|p| expected[p].as_slice());
    for (i, command) in commands.iter().enumerate() {
        tally.errors += usize::from(expected[i].starts_with(b"-"));
        tally.wrong_type += usize::from(expected[i].starts_with(b"-WRONGTYPE"));
        tally.unordered += usize::from(command.mask != Mask::Exact && previous(i) != Some(b"$8\r\nlistpack\r\n"));
    }
    let normalised = |i: usize, r: &[u8]| normalise(r, commands[i].mask, previous(i));
    match seeded::first_difference(seed, &commands, (&expected, &got), kvik_closed, 6, normalised) {
        Some(difference) => Err(difference),
        None => Ok(tally),
    }
}

/// Run the family's seeds against both servers and fail listing every seed that differs.
pub fn compare_seeds(test: &str, family: Family) {
    let Some(redis) = start_redis_or_skip(test) else { return };
    let kvik = start_kvik();
    let seeds = seeded::seeds(1..=SEEDS);
    let mut failures = Vec::new();
    let mut total = Tally::default();
    for &seed in &seeds {
        match compare_seed(family, seed, redis.port, kvik.port) {
            Ok(t) => {
                total.commands += t.commands;
                total.errors += t.errors;
                total.wrong_type += t.wrong_type;
                total.unordered += t.unordered;
            }
            Err(msg) => failures.push(msg),
        }
    }
    seeded::assert_all_matched(&failures, &seeds);
    eprintln!(
        "{test}: {} commands over {} seeds, all replies matched ({} errors, {} WRONGTYPE, {} unordered or random replies compared by property)",
        total.commands,
        seeds.len(),
        total.errors,
        total.wrong_type,
        total.unordered
    );
}
