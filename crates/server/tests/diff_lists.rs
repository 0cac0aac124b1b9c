//! Differential tests of the list commands: hand-written edge cases for
//! every command, each sent to kvik-server and to a real redis-server, with
//! identical replies required byte for byte; then seeded random sequences of
//! list commands mixed with string and key commands on a few shared keys.
//!
//! Every reply of a list command is deterministic (lists keep their order),
//! so nothing is normalised.

mod common;

mod random;

use common::diff::*;

fn push_pop_cases() -> Vec<Case> {
    vec![
        lines(
            "push and pop",
            &[
                "LPUSH l a b c",
                "RPUSH l d e",
                "LRANGE l 0 -1",
                "LLEN l",
                "LPOP l",
                "RPOP l",
                "LRANGE l 0 -1",
                "TYPE l",
                "OBJECT ENCODING l",
                "LPOP l",
                "LPOP l",
                "LPOP l",
                "EXISTS l",
                "LPOP l",
                "RPOP l",
                "LLEN l",
            ],
        ),
        lines(
            "pushx",
            &["LPUSHX l a", "RPUSHX l a b", "EXISTS l", "RPUSH l x", "LPUSHX l a b", "RPUSHX l c d", "LRANGE l 0 -1"],
        ),
        lines(
            "pop with count",
            &[
                "RPUSH l a b c d e",
                "LPOP l 2",
                "RPOP l 2",
                "LPOP l 0",
                "RPOP l 0",
                "LPOP l 10",
                "EXISTS l",
                "LPOP l 2",
                "RPOP l 0",
                "LPOP l",
                "RPUSH l x",
                "RPOP l 1",
                "EXISTS l",
            ],
        ),
        lines(
            "pop count errors",
            &[
                "RPUSH l a b",
                "LPOP l -1",
                "LPOP l x",
                "RPOP l 1.5",
                "LPOP l 9223372036854775808",
                "RPOP l -9223372036854775808",
                "LPOP l 1 2",
                "RPOP l 1 2 3",
                "LPOP missing -1",
                "LPOP missing x",
                "LPOP l 9223372036854775807",
                "EXISTS l",
            ],
        ),
        lines(
            "push pop arity",
            &["LPUSH", "LPUSH l", "RPUSH l", "LPUSHX l", "RPUSHX", "LPOP", "RPOP", "LLEN", "LLEN a b"],
        ),
        lines(
            "wrong types",
            &[
                "SET s v",
                "LPUSH s a",
                "RPUSH s a",
                "LPUSHX s a",
                "RPUSHX s a",
                "LPOP s",
                "RPOP s 2",
                "LPOP s 0",
                "LLEN s",
                "LRANGE s 0 -1",
                "LINDEX s 0",
                "LSET s 0 x",
                "LREM s 0 x",
                "LTRIM s 0 1",
                "LINSERT s BEFORE a b",
                "LPOS s a",
                "RPOPLPUSH s l",
                "LMOVE s l LEFT RIGHT",
                "LMPOP 1 s LEFT",
                "GET s",
                "RPUSH l a",
                "GET l",
                "INCR l",
                "APPEND l x",
                "SETRANGE l 0 x",
                "INCRBYFLOAT l 1",
                "STRLEN l",
                "GETRANGE l 0 1",
                "SETBIT l 0 1",
                "GETBIT l 0",
                "BITCOUNT l",
                "SET l v GET",
                "LRANGE l 0 -1",
                "MGET l s",
                "SET l v",
                "GET l",
            ],
        ),
        lines(
            "string commands refuse lists",
            &[
                "RPUSH l a",
                "SET s v",
                "GETSET l x",
                "GETDEL l",
                "GETEX l",
                "LCS l s",
                "BITOP AND d l",
                "BITOP OR l s",
                "BITPOS l 1",
                "BITFIELD l GET u8 0",
                "BITFIELD_RO l GET u8 0",
                "SETNX l x",
                "MSETNX l x n y",
                "DECRBY l 1",
                "SUBSTR l 0 1",
                "LRANGE l 0 -1",
                "PSETEX l 100000 x",
                "TYPE l",
            ],
        ),
        requests(
            "binary elements",
            &[
                &[b"RPUSH", b"l", b"", b"\x00", b"\r\n", b"\xff\xfe", b" "],
                &[b"LRANGE", b"l", b"0", b"-1"],
                &[b"LPOS", b"l", b"\x00"],
                &[b"LPOS", b"l", b""],
                &[b"LREM", b"l", b"0", b"\r\n"],
                &[b"LINSERT", b"l", b"AFTER", b"", b"\x00\x00"],
                &[b"LRANGE", b"l", b"0", b"-1"],
                &[b"LPUSH", b"\x00key", b"v"],
                &[b"LPOP", b"\x00key"],
            ],
        ),
        lines(
            "long and numeric elements",
            &[
                "RPUSH l 1 -1 9223372036854775807 18446744073709551616 1.5 0x10",
                "RPUSH l aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "LRANGE l 0 -1",
                "OBJECT ENCODING l",
                "LPOS l 9223372036854775807",
                "LINDEX l -1",
            ],
        ),
        lines(
            "resp3 pops",
            &[
                "HELLO 3",
                "LPOP missing",
                "LPOP missing 2",
                "RPOP missing 0",
                "RPUSH l a b",
                "LPOP l 0",
                "LPOP l 5",
                "LMPOP 1 l LEFT",
                "LMPOP 2 l x RIGHT COUNT 3",
                "RPOPLPUSH l m",
                "LINDEX l 0",
                "LPOS l a",
                "LPOS l a COUNT 0",
                "RPUSH l a",
                "LMPOP 1 l LEFT COUNT 3",
                "LRANGE missing 0 -1",
            ],
        ),
    ]
}

fn index_cases() -> Vec<Case> {
    vec![
        lines(
            "lrange",
            &[
                "RPUSH l a b c d e",
                "LRANGE l 0 -1",
                "LRANGE l 1 3",
                "LRANGE l -2 -1",
                "LRANGE l -100 100",
                "LRANGE l 3 1",
                "LRANGE l 5 10",
                "LRANGE l -1 -2",
                "LRANGE l 0 0",
                "LRANGE l -9223372036854775808 9223372036854775807",
                "LRANGE l 0 -9223372036854775808",
                "LRANGE l x 1",
                "LRANGE l 0 y",
                "LRANGE l 1.0 2",
                "LRANGE missing 0 -1",
                "LRANGE missing x 1",
                "LRANGE l 0",
                "LRANGE l 0 1 2",
            ],
        ),
        lines(
            "lindex",
            &[
                "RPUSH l a b c",
                "LINDEX l 0",
                "LINDEX l -1",
                "LINDEX l 2",
                "LINDEX l 3",
                "LINDEX l -4",
                "LINDEX l x",
                "LINDEX missing x",
                "LINDEX missing 0",
                "LINDEX l 9223372036854775807",
                "LINDEX l -9223372036854775808",
                "LINDEX l",
            ],
        ),
        lines(
            "lset",
            &[
                "RPUSH l a b c",
                "LSET l 0 x",
                "LSET l -1 z",
                "LSET l 3 w",
                "LSET l -4 w",
                "LSET l x w",
                "LSET missing 0 w",
                "LSET missing x w",
                "LRANGE l 0 -1",
                "LSET l 1 aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
                "LINDEX l 1",
                "LSET l 0",
            ],
        ),
        lines(
            "lrem",
            &[
                "RPUSH l a b a c a b a",
                "LREM l 2 a",
                "LRANGE l 0 -1",
                "LREM l -1 a",
                "LRANGE l 0 -1",
                "LREM l 0 b",
                "LRANGE l 0 -1",
                "LREM l 0 zz",
                "LREM l x a",
                "LREM missing 0 a",
                "LREM missing x a",
                "LREM l 0 a",
                "LREM l 0 c",
                "EXISTS l",
                "RPUSH l a a a",
                "LREM l -9223372036854775808 a",
                "EXISTS l",
                "LREM l 1",
            ],
        ),
        lines(
            "ltrim",
            &[
                "RPUSH l a b c d e",
                "LTRIM l 1 -2",
                "LRANGE l 0 -1",
                "LTRIM l -100 100",
                "LRANGE l 0 -1",
                "LTRIM l 1 1",
                "LRANGE l 0 -1",
                "LTRIM l x 1",
                "LTRIM l 0 y",
                "LTRIM missing 0 1",
                "EXISTS missing",
                "LTRIM l 2 1",
                "EXISTS l",
                "RPUSH l a b",
                "LTRIM l 5 10",
                "EXISTS l",
                "RPUSH l a b",
                "LTRIM l 0 -9223372036854775808",
                "EXISTS l",
                "LTRIM l 0",
            ],
        ),
        lines(
            "linsert",
            &[
                "RPUSH l a b c",
                "LINSERT l BEFORE b x",
                "LINSERT l after c y",
                "LINSERT l Before a z",
                "LINSERT l AFTER zz w",
                "LRANGE l 0 -1",
                "LINSERT l MIDDLE a w",
                "LINSERT missing BEFORE a w",
                "LINSERT missing MIDDLE a w",
                "EXISTS missing",
                "RPUSH d a a",
                "LINSERT d AFTER a b",
                "LRANGE d 0 -1",
                "LINSERT l BEFORE a",
            ],
        ),
        lines(
            "lpos",
            &[
                "RPUSH l a b c 1 2 3 c c",
                "LPOS l c",
                "LPOS l c RANK 2",
                "LPOS l c RANK -1",
                "LPOS l c RANK -3",
                "LPOS l c RANK 4",
                "LPOS l c COUNT 2",
                "LPOS l c COUNT 0",
                "LPOS l c COUNT 0 RANK -1",
                "LPOS l c COUNT 0 RANK 2",
                "LPOS l c COUNT 0 MAXLEN 3",
                "LPOS l c RANK -1 MAXLEN 2 COUNT 0",
                "LPOS l c MAXLEN 1",
                "LPOS l c MAXLEN 0",
                "LPOS l zz",
                "LPOS l zz COUNT 3",
                "LPOS missing a",
                "LPOS missing a COUNT 2",
                "LPOS l c RANK 1 RANK -2",
                "LPOS l c rank 2 count 1 maxlen 0",
                "LPOS l c RANK 9223372036854775807",
                "LPOS l c RANK -9223372036854775807",
            ],
        ),
        lines(
            "lpos errors",
            &[
                "RPUSH l a",
                "LPOS l a RANK 0",
                "LPOS l a RANK x",
                "LPOS l a RANK -9223372036854775808",
                "LPOS l a COUNT -1",
                "LPOS l a COUNT x",
                "LPOS l a MAXLEN -1",
                "LPOS l a MAXLEN 1.5",
                "LPOS l a RANK",
                "LPOS l a COUNT",
                "LPOS l a BOGUS 1",
                "LPOS l a RANK 1 COUNT",
                "LPOS missing a RANK 0",
                "LPOS missing a COUNT -1",
                "SET s v",
                "LPOS s a RANK 0",
                "LPOS s a",
                "LPOS l",
            ],
        ),
    ]
}

fn move_cases() -> Vec<Case> {
    vec![
        lines(
            "rpoplpush",
            &[
                "RPUSH a 1 2 3",
                "RPOPLPUSH a b",
                "RPOPLPUSH a b",
                "LRANGE a 0 -1",
                "LRANGE b 0 -1",
                "RPOPLPUSH a a",
                "RPOPLPUSH b a",
                "LRANGE a 0 -1",
                "RPOPLPUSH missing a",
                "RPOPLPUSH a b",
                "EXISTS a",
                "RPOPLPUSH b b",
                "LRANGE b 0 -1",
                "RPUSH one x",
                "RPOPLPUSH one one",
                "LRANGE one 0 -1",
            ],
        ),
        lines(
            "rpoplpush wrong types",
            &[
                "SET s v",
                "RPUSH l a",
                "RPOPLPUSH l s",
                "LRANGE l 0 -1",
                "RPOPLPUSH s l",
                "RPOPLPUSH missing s",
                "RPOPLPUSH s missing",
                "LMOVE missing s LEFT LEFT",
                "LMOVE l s LEFT LEFT",
                "RPOPLPUSH l",
            ],
        ),
        lines(
            "lmove",
            &[
                "RPUSH a 1 2 3 4",
                "LMOVE a b LEFT LEFT",
                "LMOVE a b LEFT RIGHT",
                "LMOVE a b right left",
                "LMOVE a b Right Right",
                "EXISTS a",
                "LRANGE b 0 -1",
                "LMOVE b b LEFT RIGHT",
                "LMOVE b b RIGHT LEFT",
                "LRANGE b 0 -1",
                "LMOVE b {b}c LEFT LEFT",
                "LRANGE {b}c 0 -1",
                "LMOVE b c UP LEFT",
                "LMOVE b c LEFT DOWN",
                "LMOVE missing c UP LEFT",
                "LMOVE missing c LEFT LEFT",
                "LMOVE b c LEFT",
                "LMOVE b c LEFT LEFT x",
            ],
        ),
        lines(
            "lmpop",
            &[
                "RPUSH a 1 2 3",
                "RPUSH b x y",
                "LMPOP 2 missing a LEFT",
                "LMPOP 2 missing a RIGHT COUNT 5",
                "EXISTS a",
                "LMPOP 3 a missing b left count 1",
                "LMPOP 1 missing LEFT",
                "LMPOP 2 b b RIGHT COUNT 9223372036854775807",
                "LMPOP 1 b LEFT",
            ],
        ),
        lines(
            "lmpop errors",
            &[
                "RPUSH a 1",
                "SET s v",
                "LMPOP 0 a LEFT",
                "LMPOP -1 a LEFT",
                "LMPOP x a LEFT",
                "LMPOP 2 a LEFT",
                "LMPOP 3 a b LEFT",
                "LMPOP 1 a MIDDLE",
                "LMPOP 1 a LEFT COUNT 0",
                "LMPOP 1 a LEFT COUNT -1",
                "LMPOP 1 a LEFT COUNT x",
                "LMPOP 1 a LEFT COUNT",
                "LMPOP 1 a LEFT COUNT 1 COUNT 1",
                "LMPOP 1 a LEFT BOGUS",
                "LMPOP 9223372036854775807 a LEFT",
                "LMPOP 2 s a LEFT",
                "LMPOP 2 a s LEFT",
                "LMPOP 2 missing s LEFT",
                "LMPOP 1 a",
                "LMPOP 1",
                "LLEN a",
            ],
        ),
    ]
}

fn key_command_cases() -> Vec<Case> {
    vec![
        lines(
            "generic key commands on lists",
            &[
                "RPUSH l a b c",
                "TYPE l",
                "OBJECT ENCODING l",
                "OBJECT REFCOUNT l",
                "COPY l m",
                "LPUSH m z",
                "LRANGE l 0 -1",
                "LRANGE m 0 -1",
                "RENAME m n",
                "LRANGE n 0 -1",
                "MOVE n 1",
                "SELECT 1",
                "LRANGE n 0 -1",
                "TYPE n",
                "SELECT 0",
                "SCAN 0 TYPE list",
                "SCAN 0 TYPE string",
                "EXPIRE l 100",
                "TTL l",
                "RPUSH l d",
                "TTL l",
                "DEL l",
                "TYPE l",
                "OBJECT ENCODING l",
            ],
        ),
        lines(
            "dump and restore a list",
            &[
                "RPUSH l a b c",
                "RESTORE l2 0 garbage",
                "SET s v",
                "RENAME s l",
                "TYPE l",
                "RPUSH m x",
                "RENAME m l",
                "TYPE l",
                "LRANGE l 0 -1",
            ],
        ),
        lines(
            "large list encoding",
            &[
                "RPUSH l 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24 25 26 27 28 29 30",
                "OBJECT ENCODING l",
                "LLEN l",
                "LTRIM l 0 0",
                "OBJECT ENCODING l",
            ],
        ),
    ]
}

fn cases() -> Vec<Case> {
    let mut cases = push_pop_cases();
    cases.extend(index_cases());
    cases.extend(move_cases());
    cases.extend(key_command_cases());
    cases
}

#[test]
fn list_replies_match_redis() {
    compare_each("list_replies_match_redis", cases());
}

#[test]
fn list_replies_pipelined_match_redis() {
    compare_pipelined("list_replies_pipelined_match_redis", cases());
}

#[test]
fn random_list_sequences_match_redis() {
    random::compare_seeds("random_list_sequences_match_redis", random::Family::Lists);
}

/// An integer reply's value.
fn integer(reply: &[u8]) -> i64 {
    let text = reply.strip_prefix(b":").and_then(|r| r.strip_suffix(b"\r\n")).expect("an integer reply");
    std::str::from_utf8(text).ok().and_then(|t| t.parse().ok()).expect("digits")
}

#[test]
fn lists_dump_restore_and_report_memory() {
    let kvik = common::start_kvik();
    let mut conn = common::connect(kvik.port);
    let long = vec![b'x'; 300];
    common::call(&mut conn, &[b"RPUSH", b"l", b"a", b"", b"\x00\xff", &long]);
    let dump = common::call(&mut conn, &[b"DUMP", b"l"]);
    let header_end = dump.windows(2).position(|w| w == b"\r\n").expect("a bulk reply") + 2;
    let payload = dump[header_end..dump.len() - 2].to_vec();
    assert_eq!(common::call(&mut conn, &[b"RESTORE", b"copy", b"0", &payload]), b"+OK\r\n");
    let original = common::call(&mut conn, &[b"LRANGE", b"l", b"0", b"-1"]);
    assert_eq!(common::call(&mut conn, &[b"LRANGE", b"copy", b"0", b"-1"]), original);
    assert_eq!(common::call(&mut conn, &[b"TYPE", b"copy"]), b"+list\r\n");
    for at in [1, payload.len() / 2, payload.len() - 1] {
        let mut bad = payload.clone();
        bad[at] ^= 1;
        assert_eq!(
            common::call(&mut conn, &[b"RESTORE", b"bad", b"0", &bad]),
            b"-ERR DUMP payload version or checksum are wrong\r\n"
        );
    }
    assert_eq!(common::call(&mut conn, &[b"EXISTS", b"bad"]), b":0\r\n");
    let small = integer(&common::call(&mut conn, &[b"MEMORY", b"USAGE", b"l"]));
    let items: Vec<Vec<u8>> = (0..1000).map(|i| format!("element-{i}-padding-past-inline").into_bytes()).collect();
    let mut push: Vec<&[u8]> = vec![b"RPUSH", b"l"];
    push.extend(items.iter().map(Vec::as_slice));
    common::call(&mut conn, &push);
    let big = integer(&common::call(&mut conn, &[b"MEMORY", b"USAGE", b"l"]));
    assert!(big > small + 1000 * 30, "memory grows with the list: {small} then {big}");
}

#[test]
fn concurrent_moves_lose_and_duplicate_nothing() {
    let kvik = common::start_kvik();
    let mut conn = common::connect(kvik.port);
    let items: Vec<Vec<u8>> = (0..200).map(|i| format!("item{i}").into_bytes()).collect();
    let mut push: Vec<&[u8]> = vec![b"RPUSH", b"a"];
    push.extend(items.iter().map(Vec::as_slice));
    common::call(&mut conn, &push);
    // Keys in different shards, moved both ways from several connections at once.
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let port = kvik.port;
            std::thread::spawn(move || {
                let mut conn = common::connect(port);
                for i in 0..300 {
                    let (from, to): (&[u8], &[u8]) = if (i + t) % 2 == 0 { (b"a", b"b") } else { (b"b", b"a") };
                    if i % 2 == 0 {
                        common::call(&mut conn, &[b"LMOVE", from, to, b"LEFT", b"RIGHT"]);
                    } else {
                        common::call(&mut conn, &[b"RPOPLPUSH", from, to]);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("mover thread");
    }
    let mut left: Vec<Vec<u8>> = Vec::new();
    for key in [&b"a"[..], b"b"] {
        let reply = common::call(&mut conn, &[b"LRANGE", key, b"0", b"-1"]);
        let lines = reply.split(|&b| b == b'\n').filter(|l| l.starts_with(b"item"));
        left.extend(lines.map(|l| l.trim_ascii_end().to_vec()));
    }
    left.sort();
    let mut all = items.clone();
    all.sort();
    assert_eq!(left, all, "every element is in exactly one list");
}
