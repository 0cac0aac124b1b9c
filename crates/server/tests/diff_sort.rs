//! Differential tests of `SORT` and `SORT_RO`: every case goes to
//! kvik-server and to a real redis-server, and the replies must be
//! identical byte for byte. Each case starts with `FLUSHALL`.
//!
//! Sorted output does not depend on how a set stores its members, so sets
//! appear freely; the one order that does (`BY nosort` on a set without
//! `STORE`, which lists the set in hash order) is only used on sets of one
//! member. Ties between equal `ALPHA ... BY` values are avoided where a
//! `LIMIT` makes Redis use its unstable partial sort.

mod common;

use common::diff::*;

fn cases() -> Vec<Case> {
    vec![
        lines(
            "numeric, alpha and desc",
            &[
                "RPUSH l 3 1 2 10 1.5 -4 1e2 0x10 inf -inf",
                "SORT l",
                "SORT l DESC",
                "SORT l ASC",
                "SORT l ALPHA",
                "SORT l ALPHA DESC",
                "SORT l desc asc",
                "SORT_RO l",
                "SORT_RO l alpha desc",
                "RPUSH ties 2 1 b a 10 01 1.0 +1 1",
                "SORT ties ALPHA",
                "SORT ties ALPHA DESC",
                "SORT ties BY nosort",
                "SORT ties BY nosort DESC",
            ],
        ),
        lines(
            "numeric ties fall back to the elements' bytes",
            &["RPUSH l 1.0 1 01 +1 1e0 2 0.2e1", "SORT l", "SORT l DESC", "SORT l LIMIT 1 3", "SORT l DESC LIMIT 2 2"],
        ),
        lines(
            "limit clamping",
            &[
                "RPUSH l 5 4 3 2 1",
                "SORT l LIMIT 0 -1",
                "SORT l LIMIT 1 2",
                "SORT l LIMIT -1 2",
                "SORT l LIMIT -10 -1",
                "SORT l LIMIT 0 0",
                "SORT l LIMIT 4 1",
                "SORT l LIMIT 5 1",
                "SORT l LIMIT 6 -1",
                "SORT l LIMIT 3 100",
                "SORT l LIMIT 2 -5 DESC",
                "SORT l LIMIT 1 9223372036854775807",
                "SORT l LIMIT -9223372036854775808 2",
                "SORT l LIMIT 0 1 LIMIT 2 2",
                "SORT missing LIMIT 0 1",
                "SORT missing LIMIT 5 5",
            ],
        ),
        lines(
            "syntax errors",
            &[
                "RPUSH l 1 2",
                "SORT l LIMIT a 1",
                "SORT l LIMIT 1 b",
                "SORT l LIMIT 1",
                "SORT l LIMIT 1.5 2",
                "SORT l foo",
                "SORT l STORE",
                "SORT l BY",
                "SORT l GET",
                "SORT l ALPHA foo",
                "SORT_RO l STORE d",
                "EXISTS d",
                "SET s x",
                "SORT s foo",
                "SORT s LIMIT x 1",
                "SORT s",
            ],
        ),
        lines(
            "wrong types and missing keys",
            &[
                "SET s x",
                "SORT s",
                "SORT_RO s",
                "SORT s STORE d",
                "HSET h a 1",
                "SORT h BY nosort",
                "XADD x 1-1 f v",
                "SORT x",
                "SORT missing",
                "SORT missing ALPHA DESC",
                "SORT_RO missing BY nosort",
                "SORT missing STORE d",
                "EXISTS d",
            ],
        ),
        lines(
            "numbers Redis refuses",
            &[
                "RPUSH words a 1",
                "SORT words",
                "SORT words DESC LIMIT 0 1",
                "SORT words ALPHA",
                "SORT words STORE d",
                "EXISTS d",
                "RPUSH nan nan",
                "SORT nan",
                "RPUSH space \" \"",
                "SORT space",
                "RPUSH trail \"1 \"",
                "SORT trail",
                "RPUSH words2 x",
                "SORT words2 BY nosort",
            ],
        ),
        requests(
            "numbers Redis accepts",
            &[
                &[b"RPUSH", b"l", b" 5", b"0x10", b"inf", b"-inf", b"", b"7\x00x", b"\t2", b"1e-300", b"-0"],
                &[b"SORT", b"l"],
                &[b"SORT", b"l", b"DESC"],
            ],
        ),
        requests(
            "alpha compares c strings unless storing",
            &[
                &[b"RPUSH", b"l", b"a\x00z", b"a\x00b", b"a", b"ab", b"\xff", b"\x01"],
                &[b"SORT", b"l", b"ALPHA", b"STORE", b"d"],
                &[b"LRANGE", b"d", b"0", b"-1"],
                &[b"SORT", b"l", b"ALPHA", b"LIMIT", b"4", b"2"],
                &[b"SORT", b"l", b"ALPHA", b"LIMIT", b"0", b"1"],
                &[b"SORT", b"l", b"ALPHA", b"DESC", b"LIMIT", b"0", b"1"],
            ],
        ),
        lines(
            "by string keys",
            &[
                "RPUSH l b a c d",
                "MSET w_a 3 w_b 1 w_c 2 w_d 2.5",
                "SORT l BY w_*",
                "SORT l BY w_* DESC",
                "SORT l BY w_* LIMIT 1 2",
                "SORT l BY w_* ALPHA",
                "SORT l BY w_* ALPHA DESC",
                "SET w_d x",
                "SORT l BY w_*",
                "SORT l BY w_* ALPHA",
                "DEL w_d",
                "SORT l BY w_*",
                "SORT l BY w_* DESC",
                "SORT l BY w_* LIMIT 1 2 DESC",
                "SORT l BY w_* ALPHA LIMIT 1 2",
                "SORT l BY w_* ALPHA DESC LIMIT 0 3",
                "SORT l BY w_*_x",
                "SORT l BY *",
                "MSET a 9 b 8 c 7 d 6",
                "SORT l BY *",
                "SORT l BY *_suffix ALPHA",
                "RPUSH w_c 1",
                "SORT l BY w_*",
            ],
        ),
        lines(
            "by missing keys sort as zero or first",
            &[
                "RPUSH l 3 1 2 -1",
                "SET w_3 -5",
                "SORT l BY w_*",
                "SORT l BY w_* DESC",
                "SORT l BY nothing_*",
                "SORT l BY nothing_* DESC",
                "SET v_1 m",
                "SORT l BY v_* ALPHA",
                "SORT l BY v_* ALPHA DESC",
            ],
        ),
        lines(
            "by hash fields",
            &[
                "RPUSH l b a c d",
                "HSET h_a f 30 g zz",
                "HSET h_b f 10 g yy",
                "HSET h_c f 20 g xx",
                "HSET h_d f 5",
                "SORT l BY h_*->f",
                "SORT l BY h_*->f DESC",
                "SORT l BY h_*->g ALPHA",
                "SORT l BY h_*->g ALPHA DESC",
                "SORT l BY h_*->missing",
                "SORT l BY h_*->",
                "SORT l BY h_*->f->x",
                "SORT l BY h_*-",
                "SET h_d notahash",
                "SORT l BY h_*->f",
                "SORT l BY ->f*",
                "HSET ->fa x 1",
                "SORT l BY ->*",
            ],
        ),
        lines(
            "nosort keeps list and sorted set order",
            &[
                "RPUSH l 3 1 2 5 4",
                "SORT l BY nosort",
                "SORT l BY nosort DESC",
                "SORT l BY nosort LIMIT 1 3",
                "SORT l BY nosort LIMIT 1 3 DESC",
                "SORT l BY nosort LIMIT 10 3",
                "SORT l BY nosort LIMIT -2 2 DESC",
                "SORT l BY nosort LIMIT 2 0",
                "SORT l BY nosort ALPHA DESC",
                "SORT l BY w_ ALPHA",
                "ZADD z 3 a 1 b 2 c 2 d 0 e",
                "SORT z BY nosort",
                "SORT z BY nosort DESC",
                "SORT z BY nosort LIMIT 1 2",
                "SORT z BY nosort LIMIT 1 2 DESC",
                "SORT z BY nosort LIMIT -5 10 DESC",
                "SORT z BY nosort LIMIT 4 1 DESC",
                "SORT z BY nosort LIMIT 5 1",
                "SORT z BY nosort LIMIT 0 0",
                "SORT z BY nosort GET #",
                "SORT z BY nosort STORE d",
                "LRANGE d 0 -1",
                "SORT z ALPHA",
                "SORT z ALPHA DESC",
                "SORT z ALPHA LIMIT 1 2",
                "ZADD zn 1 10 2 9 3 8",
                "SORT zn",
                "SORT zn BY nosort",
                "SORT zn DESC LIMIT 0 2",
            ],
        ),
        lines(
            "sets",
            &[
                "SADD s 5 3 9 1 100 -2",
                "SORT s",
                "SORT s DESC LIMIT 1 2",
                "SORT s ALPHA",
                "SORT s BY nosort STORE d",
                "LRANGE d 0 -1",
                "SORT s BY nosort DESC STORE d",
                "LRANGE d 0 -1",
                "SORT s BY nosort LIMIT 1 2 STORE d",
                "LRANGE d 0 -1",
                "SADD t b a c 1",
                "SORT t ALPHA",
                "SORT t",
                "SORT t BY nosort STORE d",
                "LRANGE d 0 -1",
                "SADD one x",
                "SORT one BY nosort",
                "SORT one BY nosort DESC LIMIT 0 5",
                "MSET w_b 1 w_a 2 w_c 3 w_1 4",
                "SORT t BY w_*",
                "SORT t BY w_* GET # GET w_*",
            ],
        ),
        lines(
            "get patterns",
            &[
                "RPUSH l b a c",
                "MSET w_a 3 w_b 1 w_c 2",
                "HSET h_a f x",
                "HSET h_b f y g z",
                "SORT l ALPHA GET #",
                "SORT l ALPHA GET # GET w_* GET h_*->f GET h_*->g GET nokey GET nostar GET h_*->",
                "SORT l BY w_* GET h_*->f GET #",
                "SORT l BY nosort GET w_* LIMIT 1 1",
                "SORT l ALPHA GET #x",
                "SORT l ALPHA GET x#",
                "SORT l ALPHA GET w_*->f",
                "SORT l ALPHA GET h_*",
                "SORT l ALPHA GET * GET **",
                "SET b bee",
                "SORT l ALPHA GET * GET *->f",
                "SORT l ALPHA LIMIT 0 0 GET #",
                "SORT l ALPHA GET # DESC GET w_* LIMIT 1 5",
            ],
        ),
        requests(
            "patterns are c strings before the star",
            &[
                &[b"RPUSH", b"l", b"a", b"b"],
                &[b"MSET", b"w_a", b"2", b"w_b", b"1", b"w_a\x00x", b"5"],
                &[b"SORT", b"l", b"BY", b"w_*\x00x"],
                &[b"SORT", b"l", b"BY", b"w_\x00*"],
                &[b"SORT", b"l", b"ALPHA", b"GET", b"#\x00junk"],
                &[b"SORT", b"l", b"ALPHA", b"GET", b"w_*\x00x"],
                &[b"SORT", b"l", b"ALPHA", b"GET", b"w_\x00*"],
            ],
        ),
        lines(
            "store",
            &[
                "RPUSH l 3 1 2",
                "SORT l STORE d",
                "TYPE d",
                "OBJECT ENCODING d",
                "LRANGE d 0 -1",
                "SET d x",
                "EXPIRE d 100",
                "SORT l DESC STORE d",
                "LRANGE d 0 -1",
                "TTL d",
                "SORT l STORE d LIMIT 5 5",
                "EXISTS d",
                "SORT l STORE d LIMIT 0 0",
                "SORT missing STORE d",
                "SET d x",
                "SORT missing STORE d",
                "EXISTS d",
                "SORT l STORE l",
                "LRANGE l 0 -1",
                "SORT l GET nokey_* GET # STORE d",
                "LRANGE d 0 -1",
                "MSET w_1 a w_2 b",
                "SORT l GET w_* STORE d",
                "LRANGE d 0 -1",
                "SORT l STORE d STORE e",
                "EXISTS d e",
                "HSET h f v",
                "SORT h STORE d",
                "LRANGE d 0 -1",
                "SORT_RO l",
            ],
        ),
        lines(
            "resp3",
            &[
                "HELLO 3",
                "RPUSH l b a c",
                "SET w_a 1",
                "SORT l ALPHA",
                "SORT l ALPHA GET # GET w_*",
                "SORT_RO l BY nosort GET w_*",
                "SORT missing",
                "SORT l STORE d",
                "SORT l LIMIT 0 1 ALPHA",
                "SORT l",
            ],
        ),
    ]
}

/// Values whose parse overflows or underflows. Redis tells these apart by
/// `errno`, which it does not clear first, so once one is read a later valid
/// number on the same server thread may be refused too: they run alone, in
/// their own server, after every valid number.
fn range_error_cases() -> Vec<Case> {
    vec![lines(
        "numbers out of a double's range",
        &[
            "RPUSH fine 2 1e300 -1e-300",
            "SORT fine",
            "RPUSH big 1e400",
            "SORT big",
            "RPUSH tiny 1e-400",
            "SORT tiny",
            "RPUSH sub 1e-310",
            "SORT sub",
            "SORT sub STORE d",
            "EXISTS d",
        ],
    )]
}

#[test]
fn sort_range_errors_match_redis() {
    compare_each("sort_range_errors_match_redis", range_error_cases());
}

/// Longer inputs with many equal scores, sorted whole and in slices.
fn bulk_cases() -> Vec<Case> {
    let numbers: Vec<Vec<u8>> = (0..400u32).map(|i| ((i * 7919) % 97).to_string().into_bytes()).collect();
    let mut push: Vec<&[u8]> = vec![b"RPUSH", b"l"];
    push.extend(numbers.iter().map(Vec::as_slice));
    let weights: Vec<Vec<u8>> =
        (0..97u32).flat_map(|i| [format!("w_{i}"), ((i * 31) % 13).to_string()]).map(String::into_bytes).collect();
    let mut mset: Vec<&[u8]> = vec![b"MSET"];
    mset.extend(weights.iter().map(Vec::as_slice));
    let mut sadd: Vec<&[u8]> = vec![b"SADD", b"s"];
    sadd.extend(numbers.iter().map(Vec::as_slice));
    vec![requests(
        "long inputs",
        &[
            &push,
            &mset,
            &sadd,
            &[b"SORT", b"l"],
            &[b"SORT", b"l", b"DESC", b"LIMIT", b"100", b"50"],
            &[b"SORT", b"l", b"ALPHA"],
            &[b"SORT", b"l", b"BY", b"w_*", b"GET", b"#", b"GET", b"w_*"],
            &[b"SORT", b"l", b"BY", b"w_*", b"LIMIT", b"10", b"30", b"DESC"],
            &[b"SORT", b"s", b"BY", b"w_*", b"LIMIT", b"5", b"20"],
            &[b"SORT", b"s", b"BY", b"nosort", b"STORE", b"d"],
            &[b"LRANGE", b"d", b"0", b"-1"],
            &[b"SORT", b"s", b"DESC", b"STORE", b"d"],
            &[b"LRANGE", b"d", b"0", b"-1"],
        ],
    )]
}

#[test]
fn sort_replies_match_redis() {
    compare_each("sort_replies_match_redis", cases().into_iter().chain(bulk_cases()).collect());
}

#[test]
fn sort_pipelined_match_redis() {
    compare_pipelined("sort_pipelined_match_redis", cases());
}

/// Sorts reading other keys through patterns, run against writers of those
/// keys and of the sorted list from several clients on several event loops:
/// none deadlocks, and each sort sees every `MSET` whole, because it holds
/// the keys it reads for the whole command.
#[test]
fn concurrent_sorts_with_patterns_see_whole_writes() {
    let kvik = common::start_kvik_with(&["--threads", "4"]);
    let port = kvik.port;
    let keys: Vec<String> = (0..16).map(|i| format!("k{i}")).collect();
    {
        let mut conn = common::connect(port);
        let mut push = vec!["RPUSH", "l"];
        push.extend(keys.iter().map(String::as_str));
        common::call_text(&mut conn, &push);
        let mut mset = vec!["MSET"];
        for k in &keys {
            mset.extend([k.as_str(), "0"]);
        }
        common::call_text(&mut conn, &mset);
    }
    let writer = {
        let keys = keys.clone();
        std::thread::spawn(move || {
            let mut conn = common::connect(port);
            for round in 0..300 {
                let value = round.to_string();
                let mut mset = vec!["MSET"];
                for k in &keys {
                    mset.push(k);
                    mset.push(&value);
                }
                assert_eq!(common::call_text(&mut conn, &mset), b"+OK\r\n");
            }
        })
    };
    let readers: Vec<_> = (0..3)
        .map(|r| {
            std::thread::spawn(move || {
                let mut conn = common::connect(port);
                let dest = format!("d{r}");
                for _ in 0..150 {
                    let reply = common::call_text(&mut conn, &["SORT", "l", "BY", "nosort", "GET", "*"]);
                    let text = String::from_utf8_lossy(&reply).into_owned();
                    let values: Vec<&str> = text.lines().skip(1).filter(|l| !l.starts_with('$')).collect();
                    assert_eq!(values.len(), 16, "{text}");
                    assert!(values.iter().all(|v| *v == values[0]), "a sort saw a partial MSET: {text}");
                    let stored = common::call_text(&mut conn, &["SORT", "l", "BY", "*", "GET", "*", "STORE", &dest]);
                    assert_eq!(stored, b":16\r\n");
                }
            })
        })
        .collect();
    writer.join().expect("writer");
    for r in readers {
        r.join().expect("reader");
    }
}

/// The sorted key and every key a pattern names count as reads, found or not.
#[test]
fn sort_counts_hits_and_misses_like_redis() {
    let Some(redis) = common::start_redis_or_skip("sort_counts_hits_and_misses_like_redis") else {
        return;
    };
    let kvik = common::start_kvik();
    let setup: &[&[&str]] = &[&["RPUSH", "l", "a", "b", "c"], &["SET", "w_a", "1"], &["HSET", "h_b", "f", "2"]];
    let commands: &[&[&str]] = &[
        &["SORT", "l", "BY", "w_*", "GET", "h_*->f", "GET", "#", "GET", "nostar", "STORE", "d"],
        &["SORT", "l", "BY", "nosort", "GET", "w_*"],
        &["SORT", "l", "ALPHA", "BY", "h_*->f"],
        &["SORT", "missing"],
        &["SORT", "w_a"],
        &["SORT", "l", "BY", "w_*", "LIMIT", "0", "1"],
    ];
    for command in commands {
        assert_eq!(
            common::lookups(kvik.port, setup, command),
            common::lookups(redis.port, setup, command),
            "{command:?}"
        );
    }
}
