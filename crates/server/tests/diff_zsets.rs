//! Differential tests of the sorted set commands: every case goes to
//! kvik-server and to a real redis-server, and the replies must be
//! identical, byte for byte, errors, score formatting and encodings
//! included. Each case starts with `FLUSHALL`.
//!
//! Replies are in the sets' defined order everywhere except ZSCAN of a
//! `skiplist` set and random picks, so those appear only where the order
//! is defined (a small set, a count covering the set). Also here: kvik-only
//! checks of DUMP and RESTORE, whose payloads are kvik's own.

mod common;

use common::diff::*;
use common::{call, call_text, connect, start_kvik};

/// `ZADD key` with members `m<i>` scored `i` for `i` in `from..to`.
fn zadd_range(key: &str, from: usize, to: usize) -> &'static str {
    let pairs: Vec<String> = (from..to).map(|i| format!("{i} m{i}")).collect();
    Box::leak(format!("ZADD {key} {}", pairs.join(" ")).into_boxed_str())
}

fn zadd_cases() -> Vec<Case> {
    vec![
        lines(
            "zadd and zrange",
            &["ZADD z 1 a 2 b 3 c", "ZRANGE z 0 -1 WITHSCORES", "ZADD z 2 a 5 d", "ZRANGE z 0 -1", "ZCARD z", "TYPE z"],
        ),
        lines(
            "score formats",
            &[
                "ZADD z 0.1 a 1e308 b -0 c 0x10 d 1.5e-7 e 123456789012345678 f -1.7976931348623157e308 g",
                "ZRANGE z 0 -1 WITHSCORES",
                "ZADD z inf h -inf i +inf j",
                "ZRANGE z 0 -1 WITHSCORES",
                "ZSCORE z a",
                "ZSCORE z c",
                "ZMSCORE z a b missing c",
                "ZADD z 1e400 x",
                "ZADD z -1e400 x",
                "ZADD z 1e-400 x",
                "ZADD z ' 1' x",
                "ZADD z '1 ' x",
                "ZADD z nan x",
                "ZADD z abc x",
                "ZADD z '' x",
                "ZADD z 4e-320 x",
                "ZSCORE z x",
                "ZADD z INFINITY y",
                "ZSCORE z y",
            ],
        ),
        lines(
            "zadd flags",
            &[
                "ZADD z 1 a 2 b",
                "ZADD z NX 5 a 3 c",
                "ZADD z XX 5 a 4 d",
                "ZRANGE z 0 -1 WITHSCORES",
                "ZADD z CH 6 a 2 b 7 e",
                "ZADD z GT CH 1 a 10 b",
                "ZADD z LT CH 1 a 10 b",
                "ZADD z GT 1 new",
                "ZADD z XX GT CH 20 a 0 e",
                "ZADD z xx lt ch 0 e 30 a",
                "ZRANGE z 0 -1 WITHSCORES",
                "ZADD missing XX 1 a",
                "EXISTS missing",
                "ZADD missing XX INCR 1 a",
            ],
        ),
        lines(
            "zadd option conflicts",
            &[
                "ZADD z NX XX 1 a",
                "ZADD z GT LT 1 a",
                "ZADD z GT NX 1 a",
                "ZADD z LT NX 1 a",
                "ZADD z XX NX GT LT 1 a",
                "ZADD z INCR 1 a 2 b",
                "ZADD z INCR NX XX 1 a 2 b",
                "ZADD z NX",
                "ZADD z CH 1",
                "ZADD z 1 a 2",
                "ZADD z nope 1 a",
                "ZADD z NX x a",
                "ZADD z 1 a x b",
                "EXISTS z",
            ],
        ),
        lines(
            "zadd incr and zincrby",
            &[
                "ZADD z INCR 1.5 a",
                "ZADD z INCR 1 a",
                "ZINCRBY z 0.1 a",
                "ZINCRBY z 1 new",
                "ZINCRBY z -inf new",
                "ZINCRBY z +inf new",
                "ZADD z INCR inf a",
                "ZADD z INCR -inf a",
                "ZADD z NX INCR 1 a",
                "ZADD z XX INCR 1 b",
                "ZADD z GT INCR -1 new",
                "ZADD z LT INCR -1 a",
                "ZADD z LT INCR 1 a",
                "ZINCRBY z abc a",
                "ZINCRBY z nan a",
                "ZINCRBY z nx a",
                "ZINCRBY z 1e308 big",
                "ZINCRBY z 1e308 big",
                "ZRANGE z 0 -1 WITHSCORES",
                "HELLO 3",
                "ZINCRBY z 1 a",
                "ZADD z INCR 1 a",
                "ZADD z XX INCR 1 none",
            ],
        ),
        lines(
            "negative zero",
            &[
                "ZADD z INCR -0 a",
                "ZSCORE z a",
                "ZADD z -0 b",
                "ZINCRBY z -0 b",
                "ZRANGE z 0 -1 WITHSCORES",
                "CONFIG SET zset-max-listpack-entries 2",
                "ZADD w -0 a -0 b -0 c -0 d",
                "ZRANGE w 0 -1 WITHSCORES",
                "ZINCRBY w -0 d",
                "ZRANGESTORE r w 0 -1",
                "ZRANGE r 0 -1 WITHSCORES",
                "ZRANGESTORE r w -inf +inf BYSCORE",
                "ZRANGE r 0 -1 WITHSCORES",
                "ZUNIONSTORE u 1 w",
                "ZRANGE u 0 -1 WITHSCORES",
                "ZUNION 1 w WITHSCORES",
                "ZUNION 1 w WITHSCORES WEIGHTS -1",
                "CONFIG SET zset-max-listpack-entries 128",
                "ZUNIONSTORE u 1 w",
                "ZRANGE u 0 -1 WITHSCORES",
                "OBJECT ENCODING u",
            ],
        ),
        requests(
            "binary-safe members",
            &[
                &[b"ZADD", b"z", b"1", b"\x00", b"1", b"\r\n", b"1", b"", b"1", b"\xff"],
                &[b"ZRANGE", b"z", b"0", b"-1", b"WITHSCORES"],
                &[b"ZRANGEBYLEX", b"z", b"(", b"[\xff"],
                &[b"ZRANGEBYLEX", b"z", b"[\x00", b"(\xff"],
                &[b"ZSCORE", b"z", b""],
                &[b"ZRANK", b"z", b"\xff"],
                &[b"ZREM", b"z", b"", b"\x00"],
                &[b"ZRANGE", b"z", b"0", b"-1"],
            ],
        ),
        lines(
            "zrem zcard zscore zrank",
            &[
                "ZADD z 1 a 2 b 3 c",
                "ZREM z a x a",
                "ZCARD z",
                "ZRANK z b",
                "ZREVRANK z b",
                "ZRANK z x",
                "ZRANK missing x",
                "ZSCORE missing x",
                "ZMSCORE missing a b",
                "ZCARD missing",
                "ZREM z b c",
                "EXISTS z",
                "ZREM missing a",
            ],
        ),
    ]
}

fn range_cases() -> Vec<Case> {
    vec![
        lines(
            "zrange by rank",
            &[
                "ZADD z 1 a 2 b 3 c 4 d 5 e",
                "ZRANGE z 1 3",
                "ZRANGE z -2 -1 WITHSCORES",
                "ZRANGE z -100 100",
                "ZRANGE z 3 1",
                "ZRANGE z 5 10",
                "ZRANGE z 0 -1 REV",
                "ZRANGE z 1 -2 REV WITHSCORES",
                "ZREVRANGE z 0 1 WITHSCORES",
                "ZREVRANGE z -1 -1",
                "ZRANGE z -9223372036854775808 9223372036854775807",
                "ZRANGE z 0 -1 LIMIT 0 -1",
                "ZRANGE z 1 3 LIMIT 2 -1",
                "ZREVRANGE z 0 2 LIMIT 5 -1 WITHSCORES",
                "ZRANGE z 0 -1 LIMIT 0 1",
                "ZRANGE missing 0 -1",
                "ZRANGE z x 1",
                "ZRANGE z 0 1.5",
                "ZREVRANGE z 0 -1 REV",
            ],
        ),
        lines(
            "zrange by score",
            &[
                "ZADD z 1 a 2 b 3 c 4 d 5 e",
                "ZRANGE z 2 4 BYSCORE",
                "ZRANGE z (2 (4 BYSCORE WITHSCORES",
                "ZRANGE z -inf +inf BYSCORE LIMIT 1 2",
                "ZRANGE z +inf -inf BYSCORE REV LIMIT 1 2 WITHSCORES",
                "ZRANGE z (1 +inf BYSCORE LIMIT 1 -1",
                "ZRANGE z -inf +inf BYSCORE LIMIT -1 2",
                "ZRANGE z -inf +inf BYSCORE LIMIT 10 2",
                "ZRANGE z -inf +inf BYSCORE LIMIT 2 0",
                "ZRANGE z 3 3 BYSCORE",
                "ZRANGE z (3 3 BYSCORE",
                "ZRANGE z 4 2 BYSCORE",
                "ZRANGEBYSCORE z 2 4 WITHSCORES",
                "ZRANGEBYSCORE z -inf 2 LIMIT 0 1 WITHSCORES",
                "ZRANGEBYSCORE z '( 2' 4",
                "ZRANGEBYSCORE z ' 2' 1e400",
                "ZRANGEBYSCORE z -1e400 (1e400",
                "ZREVRANGEBYSCORE z 4 2",
                "ZREVRANGEBYSCORE z (4 (2 WITHSCORES",
                "ZREVRANGEBYSCORE z +inf -inf LIMIT 1 1",
                "ZRANGEBYSCORE z x 4",
                "ZRANGEBYSCORE z 1 nan",
                "ZRANGEBYSCORE z ( 4",
                "ZRANGEBYSCORE z [1 4",
                "ZRANGEBYSCORE z 1 4 BYSCORE",
                "ZRANGEBYSCORE z 1 4 REV",
                "ZRANGEBYSCORE z 1 4 LIMIT 1",
                "ZRANGEBYSCORE z 1 4 LIMIT x 1",
                "ZRANGEBYSCORE missing 1 4",
                "ZRANGEBYSCORE missing x 4",
            ],
        ),
        lines(
            "zrange by lex",
            &[
                "ZADD z 0 a 0 b 0 c 0 d 0 e",
                "ZRANGE z [b (d BYLEX",
                "ZRANGE z - + BYLEX LIMIT 1 2",
                "ZRANGE z + - BYLEX REV",
                "ZRANGE z (d [b BYLEX REV",
                "ZRANGEBYLEX z - +",
                "ZRANGEBYLEX z [c +",
                "ZRANGEBYLEX z - (c",
                "ZRANGEBYLEX z [aa (c",
                "ZRANGEBYLEX z [c [c",
                "ZRANGEBYLEX z (c [c",
                "ZRANGEBYLEX z + -",
                "ZRANGEBYLEX z - -",
                "ZRANGEBYLEX z + +",
                "ZRANGEBYLEX z [e [a",
                "ZRANGEBYLEX z - + LIMIT 2 -1",
                "ZRANGEBYLEX z - + LIMIT -1 1",
                "ZREVRANGEBYLEX z + -",
                "ZREVRANGEBYLEX z (d - LIMIT 1 1",
                "ZRANGEBYLEX z a c",
                "ZRANGEBYLEX z [a c",
                "ZRANGEBYLEX z -a +",
                "ZRANGEBYLEX z - + WITHSCORES",
                "ZRANGE z - + BYLEX WITHSCORES",
                "ZLEXCOUNT z - +",
                "ZLEXCOUNT z [b (d",
                "ZLEXCOUNT z x y",
                "ZLEXCOUNT missing - +",
            ],
        ),
        lines(
            "lex ranges over unequal scores",
            &[
                "ZADD m 1 a 2 b 0 c 5 d",
                "ZRANGEBYLEX m - +",
                "ZRANGEBYLEX m [b +",
                "ZRANGEBYLEX m - (c",
                "ZREVRANGEBYLEX m + [b",
                "ZLEXCOUNT m [b [c",
                "ZREMRANGEBYLEX m [b [b",
                "ZRANGE m 0 -1",
            ],
        ),
        lines(
            "zrange option errors",
            &[
                "ZADD z 1 a",
                "ZRANGE z 0 -1 LIMIT 0 1",
                "ZRANGE z a b BYLEX WITHSCORES",
                "ZRANGE z (1 2 BYSCORE BYLEX",
                "ZRANGE z 1 2 BYSCORE BYSCORE",
                "ZRANGE z 0 -1 REV REV",
                "ZRANGE z 0 -1 LIMIT 0",
                "ZRANGE z 0 -1 FOO",
                "ZRANGE z 0 -1 LIMIT a b",
                "ZRANGE z x y BYSCORE",
                "ZRANGE z x y BYLEX",
                "ZRANGE z 0 -1 WITHSCORES WITHSCORES",
                "ZRANGE z 0",
                "ZREVRANGE z 0 -1 LIMIT 0 1",
                "ZRANGEBYLEX z - + BYLEX",
                "SET s x",
                "ZRANGE s 0 -1",
                "ZRANGE s x y",
                "ZRANGE s 0 -1 FOO",
            ],
        ),
        lines(
            "zrangestore",
            &[
                "ZADD z 1 a 2 b 3 c 4 d",
                "ZRANGESTORE d z 1 2",
                "ZRANGE d 0 -1 WITHSCORES",
                "ZRANGESTORE d z (1 +inf BYSCORE LIMIT 1 1",
                "ZRANGE d 0 -1 WITHSCORES",
                "ZRANGESTORE d z + [b BYLEX REV",
                "ZRANGESTORE d z [b + BYLEX",
                "ZRANGE d 0 -1",
                "ZRANGESTORE d z 0 -1 REV",
                "ZRANGE d 0 -1",
                "ZRANGESTORE d z 5 10",
                "EXISTS d",
                "SET d x",
                "ZRANGESTORE d missing 0 -1",
                "EXISTS d",
                "SET d x",
                "ZRANGESTORE d z 0 0",
                "TYPE d",
                "ZRANGESTORE d z 0 -1 WITHSCORES",
                "ZRANGESTORE d z 0 -1 LIMIT 0 1",
                "SET s x",
                "ZRANGESTORE d s 0 -1",
                "ZRANGESTORE z z 1 2",
                "ZRANGE z 0 -1",
                "ZRANGESTORE d z",
            ],
        ),
        lines(
            "zremrange",
            &[
                "ZADD z 1 a 2 b 3 c 4 d 5 e 6 f",
                "ZREMRANGEBYRANK z 0 0",
                "ZREMRANGEBYRANK z -1 -1",
                "ZRANGE z 0 -1",
                "ZREMRANGEBYSCORE z (2 3",
                "ZREMRANGEBYSCORE z 10 20",
                "ZRANGE z 0 -1",
                "ZREMRANGEBYLEX z [d +",
                "ZRANGE z 0 -1",
                "ZREMRANGEBYRANK z x 1",
                "ZREMRANGEBYSCORE z x 1",
                "ZREMRANGEBYLEX z x 1",
                "ZREMRANGEBYRANK missing 0 -1",
                "ZREMRANGEBYSCORE missing x 1",
                "ZREMRANGEBYSCORE z -inf +inf",
                "EXISTS z",
                "ZADD l 0 a 0 b 0 c",
                "ZREMRANGEBYLEX l - +",
                "EXISTS l",
                "SET s x",
                "ZREMRANGEBYRANK s 0 1",
                "ZREMRANGEBYSCORE s x 1",
            ],
        ),
        lines(
            "zcount",
            &[
                "ZADD z 1 a 2 b 3 c",
                "ZCOUNT z -inf +inf",
                "ZCOUNT z (1 3",
                "ZCOUNT z (1 (3",
                "ZCOUNT z 3 1",
                "ZCOUNT z x 1",
                "ZCOUNT z 1 (",
                "ZCOUNT missing 1 2",
                "SET s x",
                "ZCOUNT s 1 2",
                "ZCOUNT s x 2",
                "ZLEXCOUNT s - +",
            ],
        ),
    ]
}

fn pop_cases() -> Vec<Case> {
    vec![
        lines(
            "zpopmin and zpopmax",
            &[
                "ZADD z 1 a 2 b 3 c 4 d",
                "ZPOPMIN z",
                "ZPOPMAX z",
                "ZPOPMIN z 0",
                "ZPOPMAX z 10",
                "EXISTS z",
                "ZPOPMIN z",
                "ZPOPMIN missing 2",
                "ZPOPMIN missing -1",
                "ZPOPMIN missing x",
                "ZPOPMIN z 1 2",
                "SET s x",
                "ZPOPMIN s 0",
                "ZPOPMAX s",
            ],
        ),
        lines(
            "zmpop",
            &[
                "ZADD a 1 x 2 y 3 z",
                "ZADD b 5 p",
                "ZMPOP 2 missing a MIN",
                "ZMPOP 2 missing a MAX COUNT 5",
                "EXISTS a",
                "ZMPOP 2 a b min count 1",
                "ZMPOP 1 b MIN",
                "ZMPOP 1 missing MIN",
                "ZMPOP 0 a MIN",
                "ZMPOP -1 a MIN",
                "ZMPOP x a MIN",
                "ZMPOP 1 a",
                "ZMPOP 1 a FOO",
                "ZMPOP 2 a MIN",
                "ZMPOP 1 a MIN COUNT 0",
                "ZMPOP 1 a MIN COUNT -1",
                "ZMPOP 1 a MIN COUNT x",
                "ZMPOP 1 a MIN COUNT 1 COUNT 1",
                "ZMPOP 1 a MIN COUNT",
                "ZMPOP 1 a MIN FOO",
                "SET s x",
                "ZMPOP 2 missing s MIN",
                "ZADD c 1 q",
                "ZMPOP 2 c s MIN",
            ],
        ),
        lines(
            "resp3 shapes",
            &[
                "HELLO 3",
                "ZADD z 1 a 2 b 3 c 4 d 5 e 6 f",
                "ZRANGE z 0 1 WITHSCORES",
                "ZRANGE z 0 1",
                "ZRANGEBYSCORE z 1 2 WITHSCORES",
                "ZREVRANGE z 0 0 WITHSCORES",
                "ZSCORE z a",
                "ZSCORE z missing",
                "ZMSCORE z a missing",
                "ZINCRBY z 0.5 a",
                "ZRANK z missing",
                "ZPOPMIN z",
                "ZPOPMIN z 1",
                "ZPOPMAX z 2",
                "ZPOPMIN missing",
                "ZPOPMIN missing 1",
                "ZMPOP 1 z MIN",
                "ZMPOP 1 missing MIN",
                "ZRANDMEMBER z 10 WITHSCORES",
                "ZRANDMEMBER missing",
                "ZRANDMEMBER missing 1",
                "ZUNION 1 z WITHSCORES",
                "ZINTER 1 z",
                "ZDIFF 1 missing WITHSCORES",
                "ZRANGE missing 0 -1 WITHSCORES",
                "ZSCAN z 0",
                "ZADD z INCR 1 e",
            ],
        ),
        lines(
            "zrandmember defined cases",
            &[
                "ZADD z 1 a 2 b 3 c",
                "ZRANDMEMBER z 3",
                "ZRANDMEMBER z 10 WITHSCORES",
                "ZRANDMEMBER z 0",
                "ZRANDMEMBER z 0 WITHSCORES",
                "ZRANDMEMBER missing",
                "ZRANDMEMBER missing 5",
                "ZRANDMEMBER missing -5 WITHSCORES",
                "ZRANDMEMBER z x",
                "ZRANDMEMBER z 1 WITHSCORES x",
                "ZRANDMEMBER z 1 FOO",
                "ZRANDMEMBER z -9223372036854775808",
                "ZRANDMEMBER z 9223372036854775807 WITHSCORES",
                "ZRANDMEMBER z -4611686018427387904 WITHSCORES",
                "ZADD one 7 x",
                "ZRANDMEMBER one",
                "ZRANDMEMBER one -3 WITHSCORES",
                "ZRANDMEMBER one 1",
                "SET s x",
                "ZRANDMEMBER s",
                "ZRANDMEMBER s 2",
                "ZRANDMEMBER s x",
            ],
        ),
    ]
}

fn algebra_cases() -> Vec<Case> {
    vec![
        lines(
            "zunion zinter zdiff",
            &[
                "ZADD a 1 x 2 y 3 z",
                "ZADD b 10 y 20 z 30 w",
                "ZUNION 2 a b WITHSCORES",
                "ZINTER 2 a b WITHSCORES",
                "ZDIFF 2 a b WITHSCORES",
                "ZDIFF 2 b a",
                "ZUNION 2 a b WEIGHTS 2 0.5 WITHSCORES",
                "ZINTER 2 a b AGGREGATE MIN WITHSCORES",
                "ZINTER 2 a b AGGREGATE max WITHSCORES",
                "ZUNION 2 a b WEIGHTS 1 -1 AGGREGATE SUM WITHSCORES",
                "ZUNION 3 a missing b",
                "ZINTER 2 a missing",
                "ZDIFF 2 missing a",
                "ZDIFF 1 a",
                "ZINTER 2 a a WITHSCORES",
                "ZUNION 1 missing",
            ],
        ),
        lines(
            "sets as inputs",
            &[
                "ZADD z 5 a 6 b",
                "SADD s a c",
                "SADD i 1 2",
                "ZUNION 2 z s WITHSCORES",
                "ZINTER 2 z s WITHSCORES",
                "ZDIFF 2 s z WITHSCORES",
                "ZUNION 2 s i WITHSCORES",
                "ZUNIONSTORE d 2 s i",
                "ZRANGE d 0 -1 WITHSCORES",
                "ZINTERCARD 2 z s",
            ],
        ),
        lines(
            "infinities and nan",
            &[
                "ZADD a inf x -inf y 0 z",
                "ZADD b -inf x inf y inf z",
                "ZUNION 2 a b WITHSCORES",
                "ZINTER 2 a b WITHSCORES",
                "ZUNION 2 a b WEIGHTS 0 1 WITHSCORES",
                "ZUNION 2 a b WEIGHTS inf 1 WITHSCORES",
                "ZUNION 2 a b AGGREGATE MIN WITHSCORES",
                "ZUNION 2 a b AGGREGATE MAX WITHSCORES",
                "ZUNION 1 a WEIGHTS nan",
                "ZUNION 1 a WEIGHTS x",
                "ZUNION 1 a WEIGHTS 1e400",
            ],
        ),
        lines(
            "sum order follows the input sizes",
            &[
                "ZADD a 0.1 m",
                "ZADD b 0.2 m 1 x",
                "ZADD c 0.3 m 1 x 1 y",
                "ZUNION 3 c b a WITHSCORES",
                "ZINTER 3 c b a WITHSCORES",
                "ZUNION 3 a b c WITHSCORES",
            ],
        ),
        lines(
            "store forms",
            &[
                "ZADD a 1 x 2 y",
                "ZADD b 3 y 4 z",
                "ZUNIONSTORE d 2 a b",
                "ZRANGE d 0 -1 WITHSCORES",
                "OBJECT ENCODING d",
                "ZINTERSTORE d 2 a b WEIGHTS 2 3",
                "ZRANGE d 0 -1 WITHSCORES",
                "ZDIFFSTORE d 2 a b",
                "ZRANGE d 0 -1 WITHSCORES",
                "ZINTERSTORE d 2 a missing",
                "EXISTS d",
                "SET d x",
                "EXPIRE d 1000",
                "ZUNIONSTORE d 1 a",
                "TTL d",
                "ZUNIONSTORE a 2 a b",
                "ZRANGE a 0 -1 WITHSCORES",
                "ZDIFFSTORE d 1 a WITHSCORES",
                "ZUNIONSTORE d 1 a WITHSCORES",
                "ZDIFFSTORE d 1 a WEIGHTS 1",
            ],
        ),
        lines(
            "algebra errors",
            &[
                "ZADD z 1 a",
                "SET s x",
                "ZUNION 0 z",
                "ZINTER -1 z",
                "ZDIFF 0 z",
                "ZUNIONSTORE d 0 z",
                "ZINTERSTORE d 0 z",
                "ZDIFFSTORE d 0 z",
                "ZUNION x z",
                "ZUNION 3 z",
                "ZUNION 1 z WEIGHTS 1 2",
                "ZUNION 1 z WEIGHTS",
                "ZUNION 1 z AGGREGATE foo",
                "ZUNION 1 z AGGREGATE",
                "ZUNION 1 z FOO",
                "ZDIFF 1 z AGGREGATE SUM",
                "ZUNION 1 s WEIGHTS 1 2",
                "ZUNION 2 z s FOO",
                "ZINTERSTORE d 2 z s",
                "ZUNION 1 z WITHSCORES WITHSCORES",
                "ZUNION 1 z AGGREGATE SUM AGGREGATE MIN WITHSCORES",
                "ZUNION 1 z WEIGHTS 2 WEIGHTS 3 WITHSCORES",
            ],
        ),
        lines(
            "zintercard",
            &[
                "ZADD a 1 x 2 y 3 z",
                "ZADD b 1 y 2 z 3 w",
                "SADD s y",
                "ZINTERCARD 2 a b",
                "ZINTERCARD 2 a b LIMIT 1",
                "ZINTERCARD 2 a b LIMIT 0",
                "ZINTERCARD 3 a b s",
                "ZINTERCARD 2 a missing",
                "ZINTERCARD 0 a",
                "ZINTERCARD x a",
                "ZINTERCARD 3 a",
                "ZINTERCARD 1 a LIMIT -1",
                "ZINTERCARD 1 a LIMIT x",
                "ZINTERCARD 1 a WITHSCORES",
                "ZINTERCARD 1 a WEIGHTS 1",
                "ZINTERCARD 1 a LIMIT",
                "SET str x",
                "ZINTERCARD 2 a str",
            ],
        ),
    ]
}

fn scan_and_key_cases() -> Vec<Case> {
    vec![
        lines(
            "zscan",
            &[
                "ZADD z 1 a 2.5 b 1e20 c -0 d",
                "ZSCAN z 0",
                "ZSCAN z 0 MATCH a*",
                "ZSCAN z 0 COUNT 1",
                "ZSCAN z 3",
                "ZSCAN missing 0",
                "ZSCAN missing 0 COUNT x",
                "ZSCAN z x",
                "ZSCAN z 0 COUNT 0",
                "ZSCAN z 0 COUNT x",
                "ZSCAN z 0 TYPE zset",
                "ZSCAN z 0 MATCH",
                "SET s x",
                "ZSCAN s 0",
                "ZADD one 3 x",
                "CONFIG SET zset-max-listpack-entries 0",
                "ZADD big 1.5 y",
                "OBJECT ENCODING big",
                "ZSCAN big 0",
                "CONFIG SET zset-max-listpack-entries 128",
            ],
        ),
        lines(
            "generic key commands",
            &[
                "ZADD z 1 a 2 b",
                "TYPE z",
                "OBJECT ENCODING z",
                "COPY z c",
                "ZRANGE c 0 -1 WITHSCORES",
                "RENAME c r",
                "ZRANGE r 0 -1",
                "MOVE r 2",
                "SELECT 2",
                "ZRANGE r 0 -1 WITHSCORES",
                "SELECT 0",
                "SCAN 0 TYPE zset",
                "SCAN 0 TYPE set",
                "EXPIRE z 100",
                "ZADD z 3 c",
                "TTL z",
                "ZREM z a b c",
                "TTL z",
                "EXISTS z",
            ],
        ),
        lines(
            "wrong types",
            &[
                "SET s x",
                "SADD set a",
                "ZADD s 1 a",
                "ZINCRBY s 1 a",
                "ZREM s a",
                "ZCARD s",
                "ZSCORE s a",
                "ZMSCORE s a",
                "ZRANK s a",
                "ZREVRANK s a",
                "ZCOUNT s 0 1",
                "ZLEXCOUNT s - +",
                "ZRANGE set 0 -1",
                "ZRANGEBYSCORE s 0 1",
                "ZRANGEBYLEX s - +",
                "ZREMRANGEBYLEX set - +",
                "ZPOPMIN set",
                "ZRANDMEMBER set",
                "ZSCAN set 0",
                "ZADD z 1 a",
                "GET z",
                "SADD z a",
                "SCARD z",
                "SUNION z",
                "INCR z",
                "SET z x GET",
            ],
        ),
        lines(
            "arity",
            &[
                "ZADD z",
                "ZADD z 1",
                "ZINCRBY z 1",
                "ZREM z",
                "ZCARD",
                "ZSCORE z",
                "ZMSCORE z",
                "ZRANK z",
                "ZCOUNT z 1",
                "ZLEXCOUNT z -",
                "ZRANGE z 0",
                "ZREVRANGE z 0",
                "ZRANGEBYSCORE z 0",
                "ZRANGESTORE d z 0",
                "ZREMRANGEBYRANK z 0",
                "ZPOPMIN",
                "ZMPOP 1",
                "ZRANDMEMBER",
                "ZUNION 1",
                "ZUNIONSTORE d 1",
                "ZINTERCARD 1",
                "ZDIFF",
                "ZSCAN z",
            ],
        ),
    ]
}

fn encoding_cases() -> Vec<Case> {
    let long = "x".repeat(64);
    let longer = "y".repeat(65);
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    vec![
        lines(
            "listpack up to the entries limit",
            &[
                zadd_range("z", 0, 128),
                "OBJECT ENCODING z",
                "ZADD z 1 m1",
                "OBJECT ENCODING z",
                "ZADD z 500 extra",
                "OBJECT ENCODING z",
                "ZREM z extra m1 m2",
                "OBJECT ENCODING z",
                zadd_range("b", 0, 129),
                "OBJECT ENCODING b",
                "ZRANGE b 120 -1 WITHSCORES",
                "ZRANGEBYSCORE b (125 +inf",
                "ZRANK b m100",
            ],
        ),
        lines(
            "listpack up to the value limit",
            &[
                leak(format!("ZADD z 1 {long}")),
                "OBJECT ENCODING z",
                leak(format!("ZADD z 2 {longer}")),
                "OBJECT ENCODING z",
                leak(format!("ZADD w 1 {longer}")),
                "OBJECT ENCODING w",
                leak(format!("ZADD v XX 1 {longer}")),
                "EXISTS v",
                leak(format!("ZINCRBY u 1 {longer}")),
                "OBJECT ENCODING u",
            ],
        ),
        lines(
            "store results take the encoding they fit",
            &[
                zadd_range("big", 0, 200),
                "OBJECT ENCODING big",
                "ZRANGESTORE d big 0 9",
                "OBJECT ENCODING d",
                "ZRANGESTORE d big 0 150",
                "OBJECT ENCODING d",
                "ZRANGESTORE d big -inf (128 BYSCORE",
                "OBJECT ENCODING d",
                "ZRANGESTORE d big -inf (129 BYSCORE",
                "OBJECT ENCODING d",
                "ZUNIONSTORE u 1 big",
                "OBJECT ENCODING u",
                "ZREMRANGEBYRANK u 10 -1",
                "OBJECT ENCODING u",
                "ZUNIONSTORE u 1 u",
                "OBJECT ENCODING u",
                "ZINTERSTORE i 2 big u",
                "OBJECT ENCODING i",
                "ZDIFFSTORE f 2 big u",
                "OBJECT ENCODING f",
                "ZCARD f",
                "COPY big c",
                "OBJECT ENCODING c",
            ],
        ),
        lines(
            "config set changes the limits",
            &[
                "CONFIG SET zset-max-listpack-entries 2",
                "ZADD z 1 a 2 b",
                "OBJECT ENCODING z",
                "ZADD z 3 c",
                "OBJECT ENCODING z",
                "ZADD y 1 a 2 b 3 c",
                "OBJECT ENCODING y",
                "ZUNIONSTORE u 1 z",
                "OBJECT ENCODING u",
                "CONFIG SET zset-max-listpack-entries 0",
                "ZADD x 1 a",
                "OBJECT ENCODING x",
                "CONFIG SET zset-max-listpack-entries 128",
                "CONFIG SET zset-max-listpack-value 1",
                "ZADD w 1 a",
                "OBJECT ENCODING w",
                "ZADD w 1 bb",
                "OBJECT ENCODING w",
                "ZADD v 1 bb 2 a",
                "OBJECT ENCODING v",
                "CONFIG SET zset-max-listpack-value 64",
                "ZUNIONSTORE u 1 v",
                "OBJECT ENCODING u",
            ],
        ),
        lines(
            "large sets answer like small ones",
            &[
                "CONFIG SET zset-max-listpack-entries 0",
                "ZADD z 1 a 2 b 3 c 4 d 0 e",
                "OBJECT ENCODING z",
                "ZRANGE z 0 -1 WITHSCORES",
                "ZRANGE z (1 4 BYSCORE LIMIT 1 5",
                "ZREVRANGEBYSCORE z +inf -inf WITHSCORES",
                "ZRANK z c",
                "ZREVRANK z c",
                "ZCOUNT z 2 3",
                "ZPOPMIN z",
                "ZPOPMAX z 2",
                "ZREMRANGEBYSCORE z 2 2",
                "ZRANGE z 0 -1 WITHSCORES",
                "ZADD l 0 a 0 b 0 c",
                "ZRANGEBYLEX l (a +",
                "ZLEXCOUNT l - (c",
                "CONFIG SET zset-max-listpack-entries 128",
            ],
        ),
    ]
}

fn cases() -> Vec<Case> {
    let mut cases = zadd_cases();
    cases.extend(range_cases());
    cases.extend(pop_cases());
    cases.extend(algebra_cases());
    cases.extend(scan_and_key_cases());
    cases.extend(encoding_cases());
    cases
}

#[test]
fn zset_replies_match_redis() {
    compare_each("zset_replies_match_redis", cases());
}

#[test]
fn zset_pipelined_match_redis() {
    compare_pipelined("zset_pipelined_match_redis", cases());
}

/// The bulk string inside a one-bulk reply.
fn bulk_body(reply: &[u8]) -> Vec<u8> {
    let start = reply.windows(2).position(|w| w == b"\r\n").map_or(0, |i| i + 2);
    reply[start..reply.len().saturating_sub(2)].to_vec()
}

#[test]
fn dump_and_restore_keep_sets_and_sorted_sets() {
    let server = start_kvik();
    let mut conn = connect(server.port);
    let mut run = |args: &[&[u8]]| call(&mut conn, args);
    run(&[b"SADD", b"ints", b"3", b"1", b"2"]);
    run(&[b"SADD", b"table", b"a", b"\x00b"]);
    run(&[b"ZADD", b"small", b"1.5", b"a", b"-inf", b"\r\n"]);
    run(&[b"CONFIG", b"SET", b"zset-max-listpack-entries", b"1"]);
    run(&[b"ZADD", b"large", b"1", b"a", b"2", b"b"]);
    for key in [&b"ints"[..], b"table", b"small", b"large"] {
        let payload = bulk_body(&run(&[b"DUMP", key]));
        let copy = [key, b"-copy"].concat();
        assert_eq!(run(&[b"RESTORE", &copy, b"0", &payload]), b"+OK\r\n");
        // As Redis loads a value, the limits in force pick the encoding: with
        // zset-max-listpack-entries 1 both sorted sets come back as skiplists.
        let want = match key {
            b"small" | b"large" => b"$8\r\nskiplist\r\n".to_vec(),
            _ => run(&[b"OBJECT", b"ENCODING", key]),
        };
        assert_eq!(run(&[b"OBJECT", b"ENCODING", &copy]), want);
        assert_eq!(run(&[b"TYPE", &copy]), run(&[b"TYPE", key]));
        let mut damaged = payload.clone();
        damaged[1] ^= 0x20;
        assert_eq!(run(&[b"RESTORE", b"bad", b"0", &damaged]), b"-ERR DUMP payload version or checksum are wrong\r\n");
        assert_eq!(run(&[b"EXISTS", b"bad"]), b":0\r\n");
    }
    assert_eq!(run(&[b"SMEMBERS", b"ints-copy"]), run(&[b"SMEMBERS", b"ints"]));
    assert_eq!(run(&[b"SCARD", b"table-copy"]), b":2\r\n");
    assert_eq!(run(&[b"SISMEMBER", b"table-copy", b"\x00b"]), b":1\r\n");
    for key in [&b"small"[..], b"large"] {
        let copy = [key, b"-copy"].concat();
        assert_eq!(
            run(&[b"ZRANGE", &copy, b"0", b"-1", b"WITHSCORES"]),
            run(&[b"ZRANGE", key, b"0", b"-1", b"WITHSCORES"])
        );
    }
    // MEMORY USAGE follows the values' sizes.
    let usage = |reply: Vec<u8>| -> i64 {
        String::from_utf8_lossy(&reply).trim_start_matches(':').trim_end().parse().unwrap_or(-1)
    };
    let small = usage(run(&[b"MEMORY", b"USAGE", b"small"]));
    let wide: Vec<Vec<u8>> = (0..200).flat_map(|i| [b"1".to_vec(), format!("member{i}").into_bytes()]).collect();
    let mut zadd: Vec<&[u8]> = vec![b"ZADD", b"small"];
    zadd.extend(wide.iter().map(Vec::as_slice));
    run(&zadd);
    assert!(small > 0 && usage(run(&[b"MEMORY", b"USAGE", b"small"])) > small + 200 * 7);
    assert!(usage(run(&[b"MEMORY", b"USAGE", b"table"])) > usage(run(&[b"MEMORY", b"USAGE", b"missing"])));
}

/// The items of a scan reply: the next cursor and the bulk strings.
fn scan_reply(reply: &[u8]) -> (String, Vec<Vec<u8>>) {
    let text = reply.to_vec();
    let mut parts = Vec::new();
    let mut at = 0;
    while let Some(i) = text[at..].iter().position(|&b| b == b'$') {
        let start = at + i;
        let line_end = start + text[start..].windows(2).position(|w| w == b"\r\n").unwrap_or(0);
        let len: usize = std::str::from_utf8(&text[start + 1..line_end]).ok().and_then(|n| n.parse().ok()).unwrap_or(0);
        parts.push(text[line_end + 2..line_end + 2 + len].to_vec());
        at = line_end + 2 + len + 2;
    }
    let cursor = String::from_utf8_lossy(&parts[0]).into_owned();
    (cursor, parts[1..].to_vec())
}

#[test]
fn kvik_scans_of_large_sets_visit_every_member_despite_changes() {
    let server = start_kvik();
    let mut conn = connect(server.port);
    let mut run = |args: &[&str]| call_text(&mut conn, args);
    for i in 0..300 {
        let (score, member) = ((i % 50).to_string(), format!("m{i}"));
        run(&["ZADD", "z", &score, &member]);
        run(&["SADD", "s", &member]);
    }
    assert_eq!(run(&["OBJECT", "ENCODING", "z"]), b"$8\r\nskiplist\r\n");
    for (key, command) in [("z", "ZSCAN"), ("s", "SSCAN")] {
        let mut seen = std::collections::HashSet::new();
        let mut cursor = "0".to_string();
        let mut steps = 0;
        loop {
            let (next, items) = scan_reply(&run(&[command, key, &cursor, "COUNT", "10"]));
            let step = if command == "ZSCAN" { 2 } else { 1 };
            seen.extend(items.iter().step_by(step).cloned());
            // Members come and go between steps.
            let extra = format!("extra{steps}");
            if command == "ZSCAN" {
                run(&["ZADD", key, "-1", &extra]);
            } else {
                run(&["SADD", key, &extra]);
                run(&["SREM", key, &format!("extra{}", steps / 2)]);
            }
            steps += 1;
            cursor = next;
            if cursor == "0" {
                break;
            }
        }
        assert!((0..300).all(|i| seen.contains(format!("m{i}").as_bytes())), "{command} missed a member");
        assert!(steps > 10 && steps < 100, "{command} took {steps} steps");
    }
}
