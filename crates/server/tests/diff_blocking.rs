//! Differential tests of the blocking commands on one connection: every
//! path that answers at once (data present, errors, argument checks) and
//! short timeouts, sent to kvik-server and to a real redis-server with
//! identical replies required byte for byte. Waits served by another
//! client are in `blocking.rs`.

mod common;

use common::diff::*;

fn list_cases() -> Vec<Case> {
    vec![
        lines(
            "blpop and brpop with data",
            &[
                "RPUSH a 1 2 3",
                "RPUSH b x",
                "BLPOP missing a b 0",
                "BRPOP missing a b 0",
                "BLPOP a 0",
                "EXISTS a",
                "BRPOP a b 0.5",
                "EXISTS b",
            ],
        ),
        lines(
            "blpop timeouts",
            &["BLPOP nokey 0.01", "BRPOP nokey other 0.02", "BLPOP nokey 0.0001", "HELLO 3", "BLPOP nokey 0.01"],
        ),
        lines(
            "blpop errors",
            &[
                "BLPOP k abc",
                "BLPOP k -1",
                "BLPOP k -0.5",
                "BLPOP k 1e100",
                "BLPOP k inf",
                "BLPOP k -inf",
                "BLPOP k nan",
                "BLPOP k ''",
                "BLPOP k ' 1'",
                "BLPOP k 9223372036854775.808",
                "BLPOP k 9223372036854776",
                "BLPOP k",
                "BRPOP k",
                "SET s v",
                "BLPOP s 0",
                "BLPOP nokey s 0",
                "BRPOP s abc",
                "RPUSH l x",
                "BLPOP l s 0",
                "BLPOP s l 0",
            ],
        ),
        lines(
            "brpoplpush and blmove with data",
            &[
                "RPUSH src a b c",
                "BRPOPLPUSH src dst 0",
                "BLMOVE src dst LEFT RIGHT 0",
                "BLMOVE src src RIGHT LEFT 0.1",
                "LRANGE src 0 -1",
                "LRANGE dst 0 -1",
                "BLMOVE src dst left left 0",
                "EXISTS src",
                "BRPOPLPUSH src dst 0.01",
                "BLMOVE src dst LEFT LEFT 0.01",
                "HELLO 3",
                "BRPOPLPUSH src dst 0.01",
            ],
        ),
        lines(
            "brpoplpush and blmove errors",
            &[
                "BRPOPLPUSH a b x",
                "BRPOPLPUSH a b -1",
                "BLMOVE a b left up 1",
                "BLMOVE a b up left x",
                "BLMOVE a b left left x",
                "BLMOVE a b left left -2",
                "BLMOVE a b left left",
                "SET s v",
                "BRPOPLPUSH s b 0",
                "RPUSH l x",
                "BRPOPLPUSH l s 0",
                "BLMOVE l s LEFT LEFT 0",
                "LRANGE l 0 -1",
                "BRPOPLPUSH missing s 0.01",
            ],
        ),
        lines(
            "blmpop",
            &[
                "RPUSH a 1 2 3 4",
                "BLMPOP 0 2 missing a LEFT",
                "BLMPOP 0 1 a RIGHT COUNT 2",
                "BLMPOP 0 1 a LEFT COUNT 10",
                "EXISTS a",
                "BLMPOP 0.01 2 a b LEFT",
                "BLMPOP x 1 a LEFT",
                "BLMPOP -1 1 a LEFT",
                "BLMPOP 0 0 a LEFT",
                "BLMPOP 0 -1 a LEFT",
                "BLMPOP 0 x a LEFT",
                "BLMPOP 0 1 a UP",
                "BLMPOP 0 1 a LEFT COUNT 0",
                "BLMPOP 0 1 a LEFT COUNT x",
                "BLMPOP 0 1 a LEFT COUNT 1 COUNT 2",
                "BLMPOP 0 2 a LEFT",
                "BLMPOP 0 5 a LEFT",
                "BLMPOP x 0 a LEFT",
                "SET s v",
                "BLMPOP 0 2 missing s LEFT",
            ],
        ),
    ]
}

fn zset_cases() -> Vec<Case> {
    vec![
        lines(
            "bzpopmin and bzpopmax with data",
            &[
                "ZADD z 1 a 2 b 3.5 c",
                "BZPOPMIN missing z 0",
                "BZPOPMAX z 0",
                "HELLO 3",
                "BZPOPMIN z 0",
                "BZPOPMAX z 0.5",
                "EXISTS z",
                "BZPOPMIN z 0.01",
                "HELLO 2",
                "BZPOPMAX z 0.01",
            ],
        ),
        lines(
            "bzpop errors",
            &["BZPOPMIN z x", "BZPOPMAX z -1", "BZPOPMIN z", "SET s v", "BZPOPMIN s 0", "BZPOPMAX missing s 0"],
        ),
        lines(
            "bzmpop",
            &[
                "ZADD z 1 a 2 b 3 c",
                "BZMPOP 0 2 missing z MIN",
                "BZMPOP 0 1 z MAX COUNT 5",
                "BZMPOP 0.01 1 z MIN",
                "BZMPOP x 1 z MIN",
                "BZMPOP 0 0 z MIN",
                "BZMPOP 0 1 z UP",
                "BZMPOP 0 1 z MIN COUNT 0",
                "BZMPOP 0 3 z MIN",
                "SET s v",
                "BZMPOP 0 1 s MAX",
                "HELLO 3",
                "ZADD z 1 a",
                "BZMPOP 0 1 z MIN",
                "BZMPOP 0.01 1 z MIN",
            ],
        ),
    ]
}

fn stream_cases() -> Vec<Case> {
    vec![
        lines(
            "xread block with data",
            &[
                "XADD s 1-1 a 1",
                "XADD s 2-1 b 2",
                "XREAD BLOCK 0 STREAMS s 0",
                "XREAD COUNT 1 BLOCK 10 STREAMS s 1-1",
                "XREAD BLOCK 10 STREAMS s $",
                "XREAD BLOCK 10 STREAMS missing $",
                "XREAD BLOCK 10 STREAMS s missing 2-1 0",
                "HELLO 3",
                "XREAD BLOCK 10 STREAMS s $",
                "XREAD BLOCK 10 STREAMS s 0",
            ],
        ),
        lines(
            "xread block errors",
            &[
                "XREAD BLOCK x STREAMS s 0",
                "XREAD BLOCK -1 STREAMS s 0",
                "XREAD BLOCK 1.5 STREAMS s $",
                "XREAD BLOCK 99999999999999999999 STREAMS s $",
                "XREAD BLOCK 10 STREAMS s",
                "SET str v",
                "XREAD BLOCK 10 STREAMS str $",
                "XREAD BLOCK 10 STREAMS s str 0 0",
            ],
        ),
        lines(
            "xreadgroup block",
            &[
                "XGROUP CREATE s g $ MKSTREAM",
                "XREADGROUP GROUP g c BLOCK 10 STREAMS s >",
                "XADD s 1-1 a 1",
                "XREADGROUP GROUP g c BLOCK 0 STREAMS s >",
                "XREADGROUP GROUP g c BLOCK 10 STREAMS s >",
                "XREADGROUP GROUP g c BLOCK 0 STREAMS s 0",
                "XREADGROUP GROUP nog c BLOCK 0 STREAMS s >",
                "XREADGROUP GROUP g c BLOCK 0 STREAMS missing >",
                "XREADGROUP GROUP g c BLOCK x STREAMS s >",
                "XREADGROUP GROUP g c BLOCK 0 STREAMS s $",
                "XPENDING s g",
            ],
        ),
    ]
}

fn client_cases() -> Vec<Case> {
    vec![lines(
        "client unblock of clients that are not blocked",
        &[
            "CLIENT UNBLOCK 999999",
            "CLIENT UNBLOCK 999999 TIMEOUT",
            "CLIENT UNBLOCK 999999 error",
            "CLIENT UNBLOCK 999999 other",
            "CLIENT UNBLOCK x",
            "CLIENT UNBLOCK 1 TIMEOUT extra",
            "CLIENT UNBLOCK",
        ],
    )]
}

#[test]
fn blocking_lists_match_redis() {
    compare_each("blocking_lists_match_redis", list_cases());
}

#[test]
fn blocking_zsets_match_redis() {
    compare_each("blocking_zsets_match_redis", zset_cases());
}

#[test]
fn blocking_streams_match_redis() {
    compare_each("blocking_streams_match_redis", stream_cases());
}

#[test]
fn client_unblock_arguments_match_redis() {
    compare_each("client_unblock_arguments_match_redis", client_cases());
}

#[test]
fn blocking_commands_pipelined_match_redis() {
    let mut cases = list_cases();
    cases.extend(zset_cases());
    cases.extend(stream_cases());
    compare_pipelined("blocking_commands_pipelined_match_redis", cases);
}
