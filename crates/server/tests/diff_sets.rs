//! Differential tests of the set commands: every case goes to kvik-server
//! and to a real redis-server, and the replies must be identical, byte for
//! byte, errors and encodings included. Each case starts with `FLUSHALL`.
//!
//! A `hashtable` set lists its members in hash order, which is the server's
//! own business, so cases only list sets whose order is defined (`intset`
//! sets, which are ascending, and sets of one member) and otherwise ask for
//! sizes and memberships. Random picks are compared only where they are
//! not random (a count covering the whole set); the seeded sequences in
//! `diff_random_collections.rs` check the others by their properties.

mod common;

use common::diff::*;

/// `SADD key` with the integers `from..to`, as one inline command.
fn sadd_range(key: &str, from: i64, to: i64) -> String {
    let members: Vec<String> = (from..to).map(|i| i.to_string()).collect();
    format!("SADD {key} {}", members.join(" "))
}

fn basic_cases() -> Vec<Case> {
    vec![
        lines(
            "sadd and smembers of an intset",
            &["SADD s 3 1 2 1", "SMEMBERS s", "SCARD s", "OBJECT ENCODING s", "TYPE s", "SADD s 2 3", "SADD s -5 0"],
        ),
        lines("sadd non-integer member converts", &["SADD s 1 2", "SADD s a", "OBJECT ENCODING s", "SCARD s"]),
        lines(
            "canonical integers only stay in an intset",
            &[
                "SADD a 01",
                "OBJECT ENCODING a",
                "SADD b -0",
                "OBJECT ENCODING b",
                "SADD c +1",
                "OBJECT ENCODING c",
                "SADD d 9223372036854775807 -9223372036854775808",
                "OBJECT ENCODING d",
                "SMEMBERS d",
                "SADD e 9223372036854775808",
                "OBJECT ENCODING e",
                "SADD f ' 1'",
                "OBJECT ENCODING f",
            ],
        ),
        lines(
            "srem deletes the emptied key",
            &["SADD s 1 2 3", "SREM s 1 4 1", "SREM s 2 3", "EXISTS s", "SREM s 1", "SREM missing a"],
        ),
        lines(
            "membership",
            &[
                "SADD s 1 2 x",
                "SISMEMBER s 1",
                "SISMEMBER s 01",
                "SISMEMBER s x",
                "SISMEMBER missing x",
                "SMISMEMBER s 1 2 3 x y",
                "SMISMEMBER missing a b",
                "SADD i 5",
                "SISMEMBER i 5",
                "SISMEMBER i 5.0",
                "SMISMEMBER i 5 6",
            ],
        ),
        lines("scard", &["SCARD missing", "SADD s a b c", "SCARD s"]),
        requests(
            "binary-safe members",
            &[
                &[b"SADD", b"s", b"\x00", b"\r\n", b"", b"\xff"],
                &[b"SCARD", b"s"],
                &[b"SISMEMBER", b"s", b""],
                &[b"SISMEMBER", b"s", b"\x00"],
                &[b"SMISMEMBER", b"s", b"\r\n", b"\xfe", b"\xff"],
                &[b"SREM", b"s", b"\x00", b"\xff", b"\r\n"],
                &[b"SMEMBERS", b"s"],
            ],
        ),
        lines(
            "wrong types",
            &[
                "SET str x",
                "SADD str a",
                "SREM str a",
                "SMEMBERS str",
                "SISMEMBER str a",
                "SMISMEMBER str a",
                "SCARD str",
                "SPOP str",
                "SPOP str 2",
                "SRANDMEMBER str",
                "SRANDMEMBER str -2",
                "SINTER str",
                "SUNION str",
                "SDIFF str",
                "SINTERCARD 1 str",
                "SSCAN str 0",
                "SADD s a",
                "GET s",
                "INCR s",
                "APPEND s x",
                "STRLEN s",
                "SET s x GET",
                "GETRANGE s 0 1",
                "SETRANGE s 0 x",
                "GETBIT s 0",
                "INCRBYFLOAT s 1",
                "TYPE s",
            ],
        ),
        lines(
            "arity",
            &[
                "SADD s",
                "SADD",
                "SREM s",
                "SMEMBERS",
                "SMEMBERS a b",
                "SISMEMBER s",
                "SISMEMBER s a b",
                "SMISMEMBER s",
                "SCARD",
                "SPOP",
                "SRANDMEMBER",
                "SINTER",
                "SINTERSTORE d",
                "SUNION",
                "SUNIONSTORE d",
                "SDIFF",
                "SDIFFSTORE d",
                "SMOVE a b",
                "SSCAN s",
                "SINTERCARD 1",
            ],
        ),
        lines("set overwrites a set", &["SADD s a", "SET s v", "GET s", "TYPE s"]),
    ]
}

fn pick_cases() -> Vec<Case> {
    vec![
        lines(
            "spop and srandmember edges",
            &[
                "SADD s 1 2 3",
                "SPOP s 0",
                "SPOP missing",
                "SPOP missing 2",
                "SPOP s -1",
                "SPOP s abc",
                "SPOP s 1 2",
                "SRANDMEMBER s 0",
                "SRANDMEMBER s 3",
                "SRANDMEMBER s 10",
                "SRANDMEMBER missing",
                "SRANDMEMBER missing 3",
                "SRANDMEMBER missing -3",
                "SRANDMEMBER s x",
                "SRANDMEMBER s -9223372036854775808",
                "SRANDMEMBER s -9223372036854775807 extra",
                "SRANDMEMBER s 1 2",
                "SCARD s",
            ],
        ),
        lines(
            "spop all of an intset",
            &["SADD s 5 1 3", "SPOP s 3", "EXISTS s", "SADD t 2 1", "SPOP t 10", "EXISTS t"],
        ),
        lines("spop one of one", &["SADD s x", "SPOP s", "EXISTS s", "SADD t 7", "SRANDMEMBER t", "SRANDMEMBER t -3"]),
        lines("a table stays a table", &["SADD s 1 2 3 a", "SREM s a", "OBJECT ENCODING s", "SPOP s 0", "SCARD s"]),
        lines(
            "resp3 shapes",
            &[
                "HELLO 3",
                "SADD s 1 2 3",
                "SMEMBERS s",
                "SMEMBERS missing",
                "SPOP missing",
                "SPOP missing 1",
                "SPOP s 0",
                "SRANDMEMBER s 5",
                "SRANDMEMBER missing 2",
                "SRANDMEMBER missing",
                "SINTER s missing",
                "SUNION s",
                "SDIFF s missing",
                "SMISMEMBER s 1 9",
                "SSCAN s 0",
                "SPOP s 3",
            ],
        ),
    ]
}

fn algebra_cases() -> Vec<Case> {
    vec![
        lines(
            "sinter",
            &[
                "SADD a 1 2 3 4",
                "SADD b 2 3 4 5",
                "SADD c 3 4 9",
                "SINTER a b c",
                "SINTER a b",
                "SINTER a",
                "SINTER a missing",
                "SINTER missing a",
                "SINTER a a",
            ],
        ),
        lines(
            "sinter checks every type",
            &["SADD a 1", "SET s x", "SINTER missing s", "SINTER s missing", "SINTER a s"],
        ),
        lines(
            "sunion and sdiff of integers",
            &[
                "SADD a 1 2 3",
                "SADD b 3 4",
                "SUNION a b",
                "SUNION a missing b",
                "SDIFF a b",
                "SDIFF b a",
                "SDIFF a missing",
                "SDIFF missing a",
                "SDIFF a a",
                "SUNION missing",
                "SET s x",
                "SUNION a s",
                "SDIFF missing s",
                "SDIFF a b s",
            ],
        ),
        lines(
            "store forms",
            &[
                "SADD a 1 2 3",
                "SADD b 2 3 4",
                "SINTERSTORE d a b",
                "SMEMBERS d",
                "OBJECT ENCODING d",
                "SUNIONSTORE d a b",
                "SMEMBERS d",
                "SDIFFSTORE d a b",
                "SMEMBERS d",
                "SDIFFSTORE d a a",
                "EXISTS d",
                "SET d x",
                "SINTERSTORE d a missing",
                "EXISTS d",
                "SET d x",
                "EXPIRE d 1000",
                "SUNIONSTORE d a",
                "TTL d",
                "TYPE d",
                "SUNIONSTORE a a b",
                "SMEMBERS a",
                "SET s x",
                "SUNIONSTORE d a s",
                "SMEMBERS d",
            ],
        ),
        lines(
            "store encodings follow the result",
            &[
                "SADD a x 1 2",
                "SADD b 1 2 y",
                "OBJECT ENCODING a",
                "SINTERSTORE d a b",
                "OBJECT ENCODING d",
                "SMEMBERS d",
                "SDIFFSTORE e a b",
                "OBJECT ENCODING e",
                "SUNIONSTORE f a b",
                "OBJECT ENCODING f",
                "SCARD f",
            ],
        ),
        lines(
            "sintercard",
            &[
                "SADD a 1 2 3 4",
                "SADD b 2 3 4 5",
                "SINTERCARD 2 a b",
                "SINTERCARD 2 a b LIMIT 2",
                "SINTERCARD 2 a b LIMIT 0",
                "SINTERCARD 2 a b limit 10",
                "SINTERCARD 1 a",
                "SINTERCARD 2 a missing",
                "SINTERCARD 0 a",
                "SINTERCARD -1 a",
                "SINTERCARD x a",
                "SINTERCARD 3 a b",
                "SINTERCARD 2 a b LIMIT -1",
                "SINTERCARD 2 a b LIMIT x",
                "SINTERCARD 2 a b LIMIT",
                "SINTERCARD 2 a b FOO",
                "SINTERCARD 1 a b",
                "SET s x",
                "SINTERCARD 2 a s",
                "SINTERCARD 2 missing s",
            ],
        ),
        lines(
            "smove",
            &[
                "SADD a 1 2",
                "SADD b x",
                "SMOVE a b 1",
                "SMISMEMBER a 1 2",
                "SISMEMBER b 1",
                "OBJECT ENCODING b",
                "SMOVE a b 9",
                "SMOVE a c 2",
                "EXISTS a",
                "SMEMBERS c",
                "OBJECT ENCODING c",
                "SMOVE c c 2",
                "SMOVE c c 3",
                "SMOVE missing c 1",
                "SET s x",
                "SMOVE missing s 1",
                "SMOVE c s 2",
                "SMOVE s c 2",
                "SMOVE b d x",
                "OBJECT ENCODING d",
                "SMOVE b d 1",
                "SMEMBERS b",
                "SMOVE d b 1",
                "SCARD b",
            ],
        ),
    ]
}

fn scan_and_key_cases() -> Vec<Case> {
    vec![
        lines(
            "sscan",
            &[
                "SADD s 1 2 3 10 20",
                "SSCAN s 0",
                "SSCAN s 0 MATCH 1*",
                "SSCAN s 0 COUNT 1",
                "SSCAN s 0 MATCH *0 COUNT 100",
                "SSCAN s 5",
                "SSCAN missing 0",
                "SSCAN missing 0 COUNT abc",
                "SSCAN s x",
                "SSCAN s -1",
                "SSCAN s 0 COUNT 0",
                "SSCAN s 0 COUNT x",
                "SSCAN s 0 TYPE set",
                "SSCAN s 0 MATCH",
                "SSCAN s 0 FOO bar",
                "SADD one x",
                "SSCAN one 0",
                "SSCAN one 0 MATCH y",
            ],
        ),
        lines(
            "generic key commands",
            &[
                "SADD s 1 2",
                "TYPE s",
                "OBJECT ENCODING s",
                "COPY s t",
                "SMEMBERS t",
                "OBJECT ENCODING t",
                "RENAME t u",
                "SMEMBERS u",
                "EXISTS t",
                "MOVE u 1",
                "SELECT 1",
                "SMEMBERS u",
                "SELECT 0",
                "SCAN 0 TYPE set",
                "SCAN 0 TYPE string",
                "SADD h a",
                "COPY h h2",
                "OBJECT ENCODING h2",
                "DEL s h h2",
                "DBSIZE",
            ],
        ),
        lines(
            "dump and restore",
            &["SADD s 1 2 3", "SADD h a", "RESTORE x 0 bad", "SET k v", "RESTORE k 0 x REPLACE", "EXISTS x"],
        ),
    ]
}

fn encoding_cases() -> Vec<Case> {
    let upto_512 = sadd_range("s", 0, 512);
    let upto_513 = sadd_range("t", 0, 513);
    let small = sadd_range("a", 0, 300);
    let other = sadd_range("b", 300, 600);
    let leaked: &'static [String] = Box::leak(Box::new([upto_512, upto_513, small, other]));
    vec![
        lines(
            "intset at the entries threshold",
            &[
                &leaked[0],
                "OBJECT ENCODING s",
                "SADD s 600",
                "OBJECT ENCODING s",
                "SCARD s",
                &leaked[1],
                "OBJECT ENCODING t",
                "SREM t 1 2 3",
                "OBJECT ENCODING t",
            ],
        ),
        lines(
            "union over the threshold",
            &[
                &leaked[2],
                &leaked[3],
                "SUNIONSTORE d a b",
                "OBJECT ENCODING d",
                "SINTERSTORE e a b",
                "EXISTS e",
                "SDIFFSTORE f a b",
                "OBJECT ENCODING f",
                "SCARD d",
                "SINTERCARD 2 d a",
                "SINTERCARD 2 d a LIMIT 7",
            ],
        ),
        lines(
            "config set changes the threshold",
            &[
                "CONFIG SET set-max-intset-entries 2",
                "SADD s 1 2",
                "OBJECT ENCODING s",
                "SADD s 3",
                "OBJECT ENCODING s",
                "SADD t 1 2 3",
                "OBJECT ENCODING t",
                "SUNIONSTORE u s",
                "OBJECT ENCODING u",
                "CONFIG SET set-max-intset-entries 0",
                "SADD v 1",
                "OBJECT ENCODING v",
                "CONFIG SET set-max-intset-entries 512",
                "SADD w 1",
                "OBJECT ENCODING w",
            ],
        ),
    ]
}

fn cases() -> Vec<Case> {
    let mut cases = basic_cases();
    cases.extend(pick_cases());
    cases.extend(algebra_cases());
    cases.extend(scan_and_key_cases());
    cases.extend(encoding_cases());
    cases
}

#[test]
fn set_replies_match_redis() {
    compare_each("set_replies_match_redis", cases());
}

#[test]
fn set_pipelined_match_redis() {
    compare_pipelined("set_pipelined_match_redis", cases());
}

#[test]
fn reads_count_hits_and_misses_like_redis() {
    let Some(redis) = common::start_redis_or_skip("reads_count_hits_and_misses_like_redis") else { return };
    let kvik = common::start_kvik();
    let setup: &[&[&str]] = &[&["SADD", "s", "1", "2"], &["ZADD", "z", "1", "a"], &["SET", "str", "x"]];
    let commands: &[&[&str]] = &[
        &["SISMEMBER", "s", "1"],
        &["SMISMEMBER", "missing", "1"],
        &["SCARD", "str"],
        &["SMEMBERS", "s"],
        &["SINTER", "s", "missing", "s"],
        &["SINTERSTORE", "d", "s", "missing"],
        &["SUNIONSTORE", "d", "s", "missing"],
        &["SDIFF", "missing", "str", "s"],
        &["SINTERCARD", "2", "s", "missing"],
        &["SRANDMEMBER", "missing", "2"],
        &["SSCAN", "s", "0"],
        &["SPOP", "s"],
        &["SMOVE", "s", "t", "1"],
        &["SADD", "s", "3"],
        &["ZSCORE", "z", "a"],
        &["ZRANGE", "missing", "0", "-1"],
        &["ZRANGESTORE", "d", "z", "0", "-1"],
        &["ZUNIONSTORE", "d", "2", "z", "missing"],
        &["ZINTER", "2", "s", "z"],
        &["ZINTERCARD", "2", "z", "str"],
        &["ZRANDMEMBER", "z"],
        &["ZCOUNT", "z", "0", "1"],
        &["ZSCAN", "missing", "0"],
        &["ZADD", "z", "2", "b"],
        &["ZPOPMIN", "z"],
        &["ZMPOP", "1", "z", "MIN"],
        &["ZREMRANGEBYRANK", "z", "0", "0"],
    ];
    for command in commands {
        assert_eq!(
            common::lookups(kvik.port, setup, command),
            common::lookups(redis.port, setup, command),
            "{command:?}"
        );
    }
}

/// Members move between two sets (in different shards) while another client
/// reads the union and the intersection: each multi-key command sees both
/// sets at one instant, so no member is ever missing or in both.
#[test]
fn kvik_moves_between_sets_are_atomic() {
    let server = common::start_kvik();
    let port = server.port;
    let mut setup = common::connect(port);
    let members: Vec<String> = (0..100).map(|i| format!("m{i}")).collect();
    let mut sadd: Vec<&[u8]> = vec![b"SADD", b"left"];
    sadd.extend(members.iter().map(|m| m.as_bytes()));
    common::call(&mut setup, &sadd);
    let writers: Vec<_> = (0..2)
        .map(|w| {
            std::thread::spawn(move || {
                let mut conn = common::connect(port);
                for i in 0..2000 {
                    let member = format!("m{}", (i * 7 + w * 13) % 100);
                    let (from, to): (&[u8], &[u8]) = if i % 2 == 0 { (b"left", b"right") } else { (b"right", b"left") };
                    common::call(&mut conn, &[b"SMOVE", from, to, member.as_bytes()]);
                }
            })
        })
        .collect();
    let mut reader = common::connect(port);
    for _ in 0..500 {
        let union = common::call(&mut reader, &[b"SUNIONSTORE", b"all", b"left", b"right"]);
        assert_eq!(union, b":100\r\n");
        let both = common::call(&mut reader, &[b"SINTERCARD", b"2", b"left", b"right"]);
        assert_eq!(both, b":0\r\n");
    }
    for w in writers {
        w.join().expect("writer thread");
    }
}
