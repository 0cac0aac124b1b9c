//! Differential tests of the hash commands: hand-written edge cases for
//! every command, each sent to kvik-server and to a real redis-server, with
//! identical replies required byte for byte; then seeded random sequences of
//! hash commands mixed with string and key commands, and kvik-only checks of
//! what cannot be compared byte for byte (random picks, table scans).
//!
//! Hand-written cases only list whole hashes while they are `listpack`
//! encoded, whose order is insertion order in both servers; a case that
//! changes the encoding limits with CONFIG SET puts them back at its end.

mod common;

mod random;

use std::collections::{HashMap, HashSet};

use common::diff::*;
use common::{call, connect, start_kvik};

/// Put the encoding limits back to Redis's defaults.
const RESET_LIMITS: [&str; 2] = ["CONFIG SET hash-max-listpack-entries 512", "CONFIG SET hash-max-listpack-value 64"];

fn with_reset(commands: &[&'static str]) -> Vec<&'static str> {
    let mut all = commands.to_vec();
    all.extend(RESET_LIMITS);
    all
}

fn basic_cases() -> Vec<Case> {
    vec![
        lines(
            "hset hget hgetall",
            &[
                "HSET h f1 v1",
                "HSET h f2 v2 f3 v3",
                "HSET h f1 new f4 v4",
                "HGET h f1",
                "HGET h missing",
                "HGET missing f1",
                "HGETALL h",
                "HKEYS h",
                "HVALS h",
                "HLEN h",
                "TYPE h",
                "OBJECT ENCODING h",
                "HGETALL missing",
                "HKEYS missing",
                "HVALS missing",
                "HLEN missing",
            ],
        ),
        lines(
            "hset arity",
            &[
                "HSET h f",
                "HSET h f v g",
                "HSET h",
                "HMSET h f",
                "HMSET h f v g",
                "HMSET h f v g w",
                "HGETALL h",
                "HSETNX h f",
                "HGET h",
                "HMGET h",
                "HGETALL",
                "HKEYS a b",
                "HDEL h",
                "HEXISTS h",
                "HLEN",
                "HSTRLEN h",
                "HINCRBY h f",
                "HINCRBYFLOAT h f",
                "HRANDFIELD",
                "HSCAN h",
            ],
        ),
        lines(
            "hsetnx",
            &[
                "HSETNX h f v",
                "HSETNX h f w",
                "HGET h f",
                "HSETNX h g w",
                "HGETALL h",
                "HSETNX missing f v",
                "HLEN missing",
            ],
        ),
        lines(
            "hmget",
            &["HSET h a 1 b 2", "HMGET h a b c a", "HMGET missing a b", "SET s v", "HMGET s a", "HMGET h b"],
        ),
        lines(
            "hdel deletes empty hashes",
            &[
                "HSET h a 1 b 2 c 3",
                "HDEL h a a zz",
                "HGETALL h",
                "HDEL h b c",
                "EXISTS h",
                "HDEL h b",
                "HDEL missing a",
                "TYPE h",
            ],
        ),
        lines(
            "hexists hstrlen",
            &[
                "HSET h a hello b '' c 123",
                "HEXISTS h a",
                "HEXISTS h zz",
                "HEXISTS missing a",
                "HSTRLEN h a",
                "HSTRLEN h b",
                "HSTRLEN h c",
                "HSTRLEN h zz",
                "HSTRLEN missing a",
            ],
        ),
        requests(
            "binary fields and values",
            &[
                &[b"HSET", b"h", b"", b"empty", b"\x00", b"\xff\r\n", b"a\x00b", b""],
                &[b"HGETALL", b"h"],
                &[b"HGET", b"h", b"a\x00b"],
                &[b"HGET", b"h", b"a"],
                &[b"HSTRLEN", b"h", b"\x00"],
                &[b"HDEL", b"h", b""],
                &[b"HKEYS", b"h"],
                &[b"HSET", b"\x00k\xff", b"f", b"v"],
                &[b"HGETALL", b"\x00k\xff"],
            ],
        ),
        lines(
            "wrong types",
            &[
                "SET s v",
                "HSET s f v",
                "HMSET s f v",
                "HSETNX s f v",
                "HGET s f",
                "HGETALL s",
                "HKEYS s",
                "HVALS s",
                "HDEL s f",
                "HEXISTS s f",
                "HLEN s",
                "HSTRLEN s f",
                "HINCRBY s f 1",
                "HINCRBYFLOAT s f 1",
                "HRANDFIELD s",
                "HRANDFIELD s 2",
                "HSCAN s 0",
                "RPUSH l a",
                "HSET l f v",
                "HSET h f v",
                "GET h",
                "LPUSH h x",
                "LLEN h",
                "INCR h",
                "APPEND h x",
                "STRLEN h",
                "SET h v GET",
                "HGET h f",
                "SET h v",
                "GET h",
            ],
        ),
        lines(
            "resp3 replies",
            &[
                "HELLO 3",
                "HSET h a 1 b 2",
                "HGETALL h",
                "HGETALL missing",
                "HKEYS h",
                "HMGET h a zz",
                "HGET h zz",
                "HRANDFIELD missing",
                "HRANDFIELD missing 2",
                "HRANDFIELD h 5 WITHVALUES",
                "HRANDFIELD h 0 WITHVALUES",
                "HDEL h a",
                "HRANDFIELD h -3 WITHVALUES",
                "HRANDFIELD h -2",
                "HRANDFIELD h 1 WITHVALUES",
                "HSCAN h 0",
                "HINCRBYFLOAT h b 0.5",
            ],
        ),
    ]
}

fn counter_cases() -> Vec<Case> {
    vec![
        lines(
            "hincrby",
            &[
                "HINCRBY h n 5",
                "HINCRBY h n -10",
                "HGET h n",
                "HINCRBY h n x",
                "HINCRBY h n 1.5",
                "HINCRBY h n 9223372036854775807",
                "HINCRBY h n -9223372036854775808",
                "HINCRBY h n -9223372036854775808",
                "HSET h s abc t 1.5 u ' 1' v 007",
                "HINCRBY h s 1",
                "HINCRBY h t 1",
                "HINCRBY h u 1",
                "HINCRBY h v 1",
                "HINCRBY h big 9223372036854775807",
                "HINCRBY h big 1",
                "HINCRBY missing n x",
                "EXISTS missing",
                "HGETALL h",
            ],
        ),
        lines(
            "hincrbyfloat",
            &[
                "HINCRBYFLOAT h f 1.5",
                "HINCRBYFLOAT h f 0.1",
                "HINCRBYFLOAT h f -1.6",
                "HINCRBYFLOAT h f 1e3",
                "HINCRBYFLOAT h f 3.0e-2",
                "HINCRBYFLOAT h g 17.0000000000000001",
                "HINCRBYFLOAT h f x",
                "HINCRBYFLOAT h f inf",
                "HINCRBYFLOAT h f -inf",
                "HINCRBYFLOAT h f nan",
                "HINCRBYFLOAT h f ''",
                "HINCRBYFLOAT h f ' 1'",
                "HINCRBYFLOAT h f 1e5000",
                "HINCRBYFLOAT h f 0x10",
                "HSET h s abc i 10 e 1e5000 m 1.7976931348623157e308",
                "HINCRBYFLOAT h s 1",
                "HINCRBYFLOAT h i 0.5",
                "HINCRBYFLOAT h e 1",
                "HINCRBYFLOAT h m 1.7976931348623157e308",
                "HINCRBYFLOAT h m 1e4932",
                "HINCRBYFLOAT missing f nan",
                "EXISTS missing",
                "HMGET h f g s i e",
                "OBJECT ENCODING h",
            ],
        ),
    ]
}

fn random_and_scan_cases() -> Vec<Case> {
    vec![
        lines(
            "hrandfield deterministic shapes",
            &[
                "HRANDFIELD missing",
                "HRANDFIELD missing 3",
                "HRANDFIELD missing -3 WITHVALUES",
                "HSET h only one",
                "HRANDFIELD h",
                "HRANDFIELD h 1",
                "HRANDFIELD h -4",
                "HRANDFIELD h -4 WITHVALUES",
                "HRANDFIELD h 0",
                "HRANDFIELD h 0 WITHVALUES",
                "HSET h two 2 three 3",
                "HRANDFIELD h 3",
                "HRANDFIELD h 10 withvalues",
                "HRANDFIELD h 9223372036854775807",
            ],
        ),
        lines(
            "hrandfield errors",
            &[
                "HSET h a 1",
                "HRANDFIELD h x",
                "HRANDFIELD h 1.5",
                "HRANDFIELD h -9223372036854775808",
                "HRANDFIELD h 1 WITHVALUE",
                "HRANDFIELD h 1 WITHVALUES x",
                "HRANDFIELD h x WITHVALUES",
                "HRANDFIELD h 4611686018427387904 WITHVALUES",
                "HRANDFIELD h -4611686018427387904 WITHVALUES",
                "HRANDFIELD h 4611686018427387903 WITHVALUES",
                "HRANDFIELD missing 1 bogus",
                "HRANDFIELD missing x",
                "SET s v",
                "HRANDFIELD s x",
                "HRANDFIELD s 1 bogus",
            ],
        ),
        lines(
            "hscan small hashes",
            &[
                "HSET h f1 a f2 b g1 c",
                "HSCAN h 0",
                "HSCAN h 0 COUNT 1",
                "HSCAN h 0 MATCH f*",
                "HSCAN h 0 match *1 count 100",
                "HSCAN h 0 MATCH zz*",
                "HSCAN h 7",
                "HSCAN missing 0",
                "HSCAN missing 0 COUNT x",
                "HSCAN missing x",
            ],
        ),
        lines(
            "hscan errors",
            &[
                "HSET h f v",
                "HSCAN h x",
                "HSCAN h -1",
                "HSCAN h 18446744073709551616",
                "HSCAN h 0 COUNT 0",
                "HSCAN h 0 COUNT -1",
                "HSCAN h 0 COUNT x",
                "HSCAN h 0 COUNT",
                "HSCAN h 0 MATCH",
                "HSCAN h 0 TYPE string",
                "HSCAN h 0 NOVALUES",
                "HSCAN h 0 BOGUS 1",
            ],
        ),
    ]
}

/// HSET of `n` fields `f0`.. with short values, as one command.
fn hset_fields(key: &str, n: usize) -> String {
    let mut cmd = format!("HSET {key}");
    for i in 0..n {
        cmd.push_str(&format!(" f{i} {i}"));
    }
    cmd
}

fn encoding_cases() -> Vec<Case> {
    let long64 = format!("HSET h v64 {}", "x".repeat(64));
    let long65 = format!("HSET h v65 {}", "x".repeat(65));
    let field65 = format!("HSET h {} v", "y".repeat(65));
    let at_limit = hset_fields("big", 512);
    let over_limit = hset_fields("bigger", 513);
    let cmds: Vec<String> = vec![
        long64,
        "OBJECT ENCODING h".into(),
        long65.clone(),
        "OBJECT ENCODING h".into(),
        "HDEL h v65".into(),
        "OBJECT ENCODING h".into(),
        field65.clone(),
        "OBJECT ENCODING h".into(),
        at_limit,
        "OBJECT ENCODING big".into(),
        "HSET big one more".into(),
        "OBJECT ENCODING big".into(),
        over_limit,
        "OBJECT ENCODING bigger".into(),
        "HLEN bigger".into(),
        "HGET bigger f512".into(),
        "HMSET m a 1".into(),
        long65.replace("HSET h", "HSETNX n"),
        "OBJECT ENCODING n".into(),
        "HINCRBY k ".to_string() + &"z".repeat(65) + " 1",
        "OBJECT ENCODING k".into(),
        "HINCRBYFLOAT k2 ".to_string() + &"z".repeat(65) + " 1.5",
        "OBJECT ENCODING k2".into(),
    ];
    let leaked: Vec<&'static str> = cmds.into_iter().map(|s| &*Box::leak(s.into_boxed_str())).collect();
    vec![
        lines("encodings at the default limits", &leaked),
        lines(
            "config set changes later writes",
            &with_reset(&[
                "HSET h a 1 b 2 c 3",
                "CONFIG SET hash-max-listpack-entries 3",
                "OBJECT ENCODING h",
                "HSET h a 2",
                "OBJECT ENCODING h",
                "HSET h d 4",
                "OBJECT ENCODING h",
                "HDEL h a b c",
                "OBJECT ENCODING h",
                "CONFIG SET hash-max-listpack-entries 512",
                "HSET h e 5",
                "OBJECT ENCODING h",
                "CONFIG SET hash-max-listpack-value 3",
                "HSET p abc def",
                "OBJECT ENCODING p",
                "HSET p abcd e",
                "OBJECT ENCODING p",
                "HSET q a b",
                "HSETNX q c dddd",
                "OBJECT ENCODING q",
                "HSET r n 1",
                "HINCRBY r n 9999",
                "OBJECT ENCODING r",
                "HINCRBYFLOAT r m 0.5",
                "OBJECT ENCODING r",
                "HINCRBYFLOAT r m 1000",
                "OBJECT ENCODING r",
            ]),
        ),
        lines(
            "ziplist names of the limits",
            &with_reset(&[
                "CONFIG SET hash-max-ziplist-entries 1",
                "CONFIG GET hash-max-ziplist-entries",
                "CONFIG GET hash-max-listpack-entries",
                "HSET h a 1 b 2",
                "OBJECT ENCODING h",
                "CONFIG SET hash-max-ziplist-value 1",
                "HSET g a bb",
                "OBJECT ENCODING g",
            ]),
        ),
        lines(
            "zero limits",
            &with_reset(&[
                "CONFIG SET hash-max-listpack-entries 0",
                "HSET h a 1",
                "OBJECT ENCODING h",
                "CONFIG SET hash-max-listpack-entries 512",
                "CONFIG SET hash-max-listpack-value 0",
                "HSET g '' ''",
                "OBJECT ENCODING g",
                "HSET g a ''",
                "OBJECT ENCODING g",
            ]),
        ),
        lines(
            "generic key commands on hashes",
            &with_reset(&[
                "HSET h a 1 b 2",
                "TYPE h",
                "OBJECT REFCOUNT h",
                "COPY h c",
                "HSET c z 26",
                "HGETALL h",
                "HGETALL c",
                "RENAME c d",
                "HGETALL d",
                "MOVE d 2",
                "SELECT 2",
                "HGETALL d",
                "SELECT 0",
                "SCAN 0 TYPE hash",
                "EXPIRE h 100",
                "HSET h c 3",
                "TTL h",
                "HDEL h a b c",
                "TTL h",
                "EXISTS h",
                "CONFIG SET hash-max-listpack-entries 1",
                "HSET t a 1 b 2",
                "COPY t u",
                "OBJECT ENCODING u",
                "RENAME u v",
                "OBJECT ENCODING v",
                "RESTORE w 0 garbage",
            ]),
        ),
    ]
}

fn cases() -> Vec<Case> {
    let mut cases = basic_cases();
    cases.extend(counter_cases());
    cases.extend(random_and_scan_cases());
    cases.extend(encoding_cases());
    cases
}

#[test]
fn hash_replies_match_redis() {
    compare_each("hash_replies_match_redis", cases());
}

#[test]
fn hash_replies_pipelined_match_redis() {
    compare_pipelined("hash_replies_pipelined_match_redis", cases());
}

#[test]
fn random_hash_sequences_match_redis() {
    random::compare_seeds("random_hash_sequences_match_redis", random::Family::Hashes);
}

/// The bulk strings of a flat RESP2 array reply.
fn bulks(reply: &[u8]) -> Vec<Vec<u8>> {
    let text = reply.to_vec();
    let mut out = Vec::new();
    let mut rest = &text[..];
    while let Some(at) = rest.iter().position(|&b| b == b'$') {
        let line_end = rest[at..].windows(2).position(|w| w == b"\r\n").map(|p| p + at).unwrap_or(rest.len());
        let len: usize = std::str::from_utf8(&rest[at + 1..line_end]).ok().and_then(|s| s.parse().ok()).unwrap_or(0);
        out.push(rest[line_end + 2..line_end + 2 + len].to_vec());
        rest = &rest[line_end + 2 + len + 2..];
    }
    out
}

#[test]
fn hrandfield_picks_fields_of_the_hash() {
    let kvik = start_kvik();
    let mut conn = connect(kvik.port);
    let mut fields = HashMap::new();
    let mut cmd: Vec<Vec<u8>> = vec![b"HSET".to_vec(), b"h".to_vec()];
    for i in 0..600 {
        fields.insert(format!("f{i}").into_bytes(), format!("v{i}").into_bytes());
        cmd.push(format!("f{i}").into_bytes());
        cmd.push(format!("v{i}").into_bytes());
    }
    let args: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
    assert_eq!(call(&mut conn, &args), b":600\r\n");
    assert_eq!(call(&mut conn, &[b"OBJECT", b"ENCODING", b"h"]), b"$9\r\nhashtable\r\n");
    let distinct = bulks(&call(&mut conn, &[b"HRANDFIELD", b"h", b"100", b"WITHVALUES"]));
    assert_eq!(distinct.len(), 200);
    let picked: HashSet<&Vec<u8>> = distinct.iter().step_by(2).collect();
    assert_eq!(picked.len(), 100, "a positive count picks distinct fields");
    for pair in distinct.chunks(2) {
        assert_eq!(fields.get(&pair[0]), Some(&pair[1]), "each value is its field's");
    }
    let repeats = bulks(&call(&mut conn, &[b"HRANDFIELD", b"h", b"-2000"]));
    assert_eq!(repeats.len(), 2000);
    assert!(repeats.iter().all(|f| fields.contains_key(f)));
    let seen: HashSet<&Vec<u8>> = repeats.iter().collect();
    assert!(seen.len() > 400, "2000 uniform picks of 600 fields reach most of them, got {}", seen.len());
    let all = bulks(&call(&mut conn, &[b"HRANDFIELD", b"h", b"1000"]));
    assert_eq!(all.iter().collect::<HashSet<_>>().len(), 600);
}

#[test]
fn hscan_of_a_table_returns_every_field_once_unchanged() {
    let kvik = start_kvik();
    let mut conn = connect(kvik.port);
    for i in 0..1000 {
        let (f, v) = (format!("f{i}"), format!("v{i}"));
        call(&mut conn, &[b"HSET", b"h", f.as_bytes(), v.as_bytes()]);
    }
    let mut seen = HashMap::new();
    let mut cursor = b"0".to_vec();
    let mut rounds = 0;
    loop {
        let reply = call(&mut conn, &[b"HSCAN", b"h", &cursor, b"COUNT", b"50"]);
        let items = bulks(&reply);
        cursor = items[0].clone();
        for pair in items[1..].chunks(2) {
            *seen.entry(pair[0].clone()).or_insert(0) += 1;
            assert_eq!(pair[1][1..], pair[0][1..], "value follows field");
        }
        rounds += 1;
        if cursor == b"0" {
            break;
        }
    }
    assert_eq!(seen.len(), 1000);
    assert!(seen.values().all(|&n| n == 1), "an unchanged hash is scanned once over");
    assert!(rounds > 10, "COUNT bounds each step");
}

/// The payload of a DUMP reply.
fn payload(reply: &[u8]) -> Vec<u8> {
    let header_end = reply.windows(2).position(|w| w == b"\r\n").expect("a bulk reply") + 2;
    reply[header_end..reply.len() - 2].to_vec()
}

#[test]
fn restored_hashes_take_the_encoding_of_the_limits_in_force() {
    let kvik = start_kvik();
    let mut conn = connect(kvik.port);
    call(&mut conn, &[b"HSET", b"h", b"a", b"1", b"b", b"\x00\xff", b"", b"empty"]);
    let dumped = payload(&call(&mut conn, &[b"DUMP", b"h"]));
    let original = call(&mut conn, &[b"HGETALL", b"h"]);
    call(&mut conn, &[b"CONFIG", b"SET", b"hash-max-listpack-entries", b"2"]);
    assert_eq!(call(&mut conn, &[b"RESTORE", b"r1", b"0", &dumped]), b"+OK\r\n");
    assert_eq!(call(&mut conn, &[b"OBJECT", b"ENCODING", b"r1"]), b"$9\r\nhashtable\r\n");
    let table_dump = payload(&call(&mut conn, &[b"DUMP", b"r1"]));
    call(&mut conn, &[b"CONFIG", b"SET", b"hash-max-listpack-entries", b"512"]);
    assert_eq!(call(&mut conn, &[b"RESTORE", b"r2", b"0", &table_dump]), b"+OK\r\n");
    assert_eq!(call(&mut conn, &[b"OBJECT", b"ENCODING", b"r2"]), b"$8\r\nlistpack\r\n");
    assert_eq!(call(&mut conn, &[b"HGETALL", b"r2"]), original, "a table keeps insertion order here");
    for at in [0, dumped.len() / 2, dumped.len() - 1] {
        let mut bad = dumped.clone();
        bad[at] ^= 0x40;
        assert_eq!(
            call(&mut conn, &[b"RESTORE", b"bad", b"0", &bad]),
            b"-ERR DUMP payload version or checksum are wrong\r\n"
        );
    }
    assert_eq!(call(&mut conn, &[b"RESTORE", b"h", b"0", &dumped]), b"-BUSYKEY Target key name already exists.\r\n");
    assert_eq!(call(&mut conn, &[b"RESTORE", b"h", b"0", &dumped, b"REPLACE"]), b"+OK\r\n");
    assert_eq!(call(&mut conn, &[b"TYPE", b"h"]), b"+hash\r\n");
    let usage = call(&mut conn, &[b"MEMORY", b"USAGE", b"h"]);
    assert!(usage.starts_with(b":") && usage != b":0\r\n");
}
