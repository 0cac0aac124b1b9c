//! Every command kvik runs, fed seeded random arguments (numbers at the
//! edges of every range, option words in the wrong places, empty and binary
//! strings, ids and bounds in odd forms) against keys of every type: each
//! request must get an answer on the same connection, the server must stay
//! up, and a final PING must still be answered. A panic in a command would
//! close the connection before the end marker, so any of them fails here.

mod common;

use std::io::Write;

use common::diff::multibulk;
use common::*;

/// Arguments commands meet in practice and at their edges.
const ATOMS: &[&[u8]] = &[
    b"",
    b"0",
    b"1",
    b"-1",
    b"2",
    b"10",
    b"-10",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"18446744073709551615",
    b"1e308",
    b"-inf",
    b"inf",
    b"nan",
    b"(1",
    b"[a",
    b"+",
    b"-",
    b"*",
    b"$",
    b">",
    b"0-0",
    b"1-1",
    b"5-*",
    b"~",
    b"=",
    b"k",
    b"l",
    b"h",
    b"s",
    b"z",
    b"x",
    b"geo",
    b"hll",
    b"COUNT",
    b"LIMIT",
    b"WITHSCORES",
    b"BYSCORE",
    b"BYLEX",
    b"REV",
    b"MAXLEN",
    b"MINID",
    b"STORE",
    b"BY",
    b"GET",
    b"ALPHA",
    b"DESC",
    b"ASC",
    b"WITHVALUES",
    b"MATCH",
    b"TYPE",
    b"LEFT",
    b"RIGHT",
    b"BEFORE",
    b"AFTER",
    b"RANK",
    b"IDLE",
    b"FORCE",
    b"JUSTID",
    b"STREAMS",
    b"GROUP",
    b"NOACK",
    b"FROMLONLAT",
    b"BYRADIUS",
    b"BYBOX",
    b"FROMMEMBER",
    b"km",
    b"m",
    b"\x00\xff",
    b"99999999999",
    b"0.5",
    b"-0",
    b"4294967296",
    b"EX",
    b"PX",
    b"KEEPTTL",
    b"NX",
    b"XX",
    b"GT",
    b"LT",
    b"CH",
    b"INCR",
    b"WEIGHTS",
    b"AGGREGATE",
    b"MIN",
    b"MAX",
    b"SUM",
    b"ENTRIESREAD",
    b"MKSTREAM",
    b"u8",
    b"i64",
    b"#0",
    b"OVERFLOW",
    b"SAT",
    b"FAIL",
    b"WRAP",
    b"SET",
    b"INCRBY",
];

/// Commands left out: they end or stall the connection, change what the
/// rest of the run means, or wait by design.
const SKIPPED: &[&str] = &[
    "shutdown",
    "debug",
    "monitor",
    // They make the connection a replica's: no more replies.
    "sync",
    "psync",
    "quit",
    "reset",
    "hello",
    "auth",
    "client|kill",
    "client|pause",
    "client|reply",
    "subscribe",
    "psubscribe",
    "ssubscribe",
    "config|set",
    "config|rewrite",
    "flushall",
    "flushdb",
    "swapdb",
    "select",
    "move",
    // Blocking commands wait for data that may never come (their
    // arguments are checked in diff_blocking.rs).
    "blpop",
    "brpop",
    "brpoplpush",
    "blmove",
    "blmpop",
    "bzpopmin",
    "bzpopmax",
    "bzmpop",
    // Queues everything after it, the end marker included.
    "multi",
];

fn setup() -> Vec<u8> {
    let cmds: [&[&[u8]]; 8] = [
        &[b"RPUSH", b"l", b"a", b"b", b"1"],
        &[b"HSET", b"h", b"f", b"1", b"g", b"x"],
        &[b"SADD", b"s", b"1", b"a"],
        &[b"ZADD", b"z", b"1", b"a", b"2", b"b"],
        &[b"SET", b"k", b"10"],
        &[b"XADD", b"x", b"1-1", b"f", b"v"],
        &[b"GEOADD", b"geo", b"13", b"38", b"p"],
        &[b"PFADD", b"hll", b"a"],
    ];
    cmds.iter().flat_map(|c| multibulk(c)).collect()
}

#[test]
fn random_arguments_to_every_command_never_break_the_server() {
    let kvik = start_kvik();
    let mut conn = connect(kvik.port);
    let list = call(&mut conn, &[b"COMMAND", b"LIST"]);
    let names: Vec<String> = String::from_utf8_lossy(&list)
        .split("\r\n")
        .filter(|l| !l.is_empty() && !l.starts_with(['*', '$']))
        .filter(|l| !SKIPPED.contains(l))
        .map(str::to_string)
        .collect();
    assert!(names.len() > 150, "{} commands", names.len());
    let mut x: u64 = 0x2545_F491_4F6C_DD1D;
    let mut next = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    let rounds = 20;
    for round in 0..rounds {
        let mut conn = connect(kvik.port);
        let mut batch = setup();
        for _ in 0..400 {
            let name = &names[next(names.len())];
            let mut args: Vec<&[u8]> = name.split('|').map(str::as_bytes).collect();
            for _ in 0..next(9) {
                args.push(ATOMS[next(ATOMS.len())]);
            }
            batch.extend_from_slice(&multibulk(&args));
        }
        batch.extend_from_slice(&multibulk(&[b"ECHO", b"end-of-round"]));
        conn.write_all(&batch).expect("send a round");
        let got = read_until(&mut conn, |got| got.windows(12).any(|w| w == b"end-of-round"));
        assert!(!got.closed, "round {round}: the connection closed before the end marker");
    }
    let mut conn = connect(kvik.port);
    assert_eq!(call(&mut conn, &[b"PING"]), b"+PONG\r\n");
}

/// The same random commands queued inside MULTI and run by EXEC: the
/// shards EXEC reserves are worked out from arguments of any shape, and
/// every round ends with its marker answered.
#[test]
fn random_commands_inside_transactions_never_break_the_server() {
    let kvik = start_kvik_with(&["--threads", "2"]);
    let mut conn = connect(kvik.port);
    let list = call(&mut conn, &[b"COMMAND", b"LIST"]);
    let names: Vec<String> = String::from_utf8_lossy(&list)
        .split("\r\n")
        .filter(|l| !l.is_empty() && !l.starts_with(['*', '$']))
        .filter(|l| !SKIPPED.contains(l))
        .map(str::to_string)
        .collect();
    let (mut queued, mut aborted) = (0, 0);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = move |n: usize| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x % n as u64) as usize
    };
    for round in 0..20 {
        let mut conn = connect(kvik.port);
        let mut batch = setup();
        for _ in 0..100 {
            // One or two commands per transaction, so that many run rather
            // than abort on a random argument count.
            batch.extend_from_slice(&multibulk(&[b"MULTI"]));
            for _ in 0..1 + next(2) {
                let name = &names[next(names.len())];
                let mut args: Vec<&[u8]> = name.split('|').map(str::as_bytes).collect();
                for _ in 0..next(9) {
                    args.push(ATOMS[next(ATOMS.len())]);
                }
                batch.extend_from_slice(&multibulk(&args));
            }
            batch.extend_from_slice(&multibulk(&[b"EXEC"]));
        }
        batch.extend_from_slice(&multibulk(&[b"ECHO", b"end-of-round"]));
        conn.write_all(&batch).expect("send a round");
        let got = read_until(&mut conn, |got| got.windows(12).any(|w| w == b"end-of-round"));
        assert!(!got.closed, "round {round}: the connection closed before the end marker");
        let count = |needle: &[u8]| got.bytes.windows(needle.len()).filter(|w| *w == needle).count();
        queued += count(b"+QUEUED\r\n");
        aborted += count(b"-EXECABORT");
    }
    assert!(queued > 100 && aborted > 100, "{queued} commands queued, {aborted} transactions aborted");
    let mut conn = connect(kvik.port);
    assert_eq!(call(&mut conn, &[b"PING"]), b"+PONG\r\n");
}
