//! Differential tests of PFADD, PFCOUNT and PFMERGE: replies, errors and the
//! stored strings themselves (read back with GET) must be identical to
//! redis-server's, byte for byte. Each case starts with `FLUSHALL`.

mod common;

use common::diff::*;

/// `PFADD key` with `n` generated elements starting at `from`, as one request.
fn pfadd_many(key: &str, prefix: &str, from: usize, n: usize) -> Vec<u8> {
    let elements: Vec<String> = (from..from + n).map(|i| format!("{prefix}{i}")).collect();
    let mut args: Vec<&[u8]> = vec![b"PFADD", key.as_bytes()];
    args.extend(elements.iter().map(|e| e.as_bytes()));
    multibulk(&args)
}

/// A case that fills counters with generated elements, then runs `tail`.
fn filled(name: &'static str, fills: &[(&str, &str, usize)], tail: &[&str]) -> Case {
    let mut bytes = b"FLUSHALL\r\n".to_vec();
    for (key, prefix, n) in fills {
        // In batches of 100 as a client would, so sparse updates happen one by one.
        for from in (0..*n).step_by(100) {
            bytes.extend_from_slice(&pfadd_many(key, prefix, from, 100.min(n - from)));
        }
    }
    for c in tail {
        bytes.extend_from_slice(c.as_bytes());
        bytes.extend_from_slice(b"\r\n");
    }
    open(name, bytes)
}

fn cases() -> Vec<Case> {
    vec![
        lines("pfadd basics", &["PFADD h a b c", "PFADD h a", "PFADD h", "PFADD new", "GET h", "GET new", "PFCOUNT h"]),
        lines("pfadd count cache", &["PFADD h a b c d", "GET h", "PFCOUNT h", "GET h", "PFADD h a", "GET h"]),
        lines("encoding", &["PFADD h a", "OBJECT ENCODING h", "TYPE h", "PFCOUNT h", "OBJECT ENCODING h", "STRLEN h"]),
        lines("missing keys", &["PFCOUNT nope", "PFCOUNT nope nada", "EXISTS nope", "PFMERGE dst", "GET dst"]),
        lines(
            "wrong types",
            &[
                "SET s notanhll",
                "PFADD s a",
                "PFCOUNT s",
                "PFCOUNT s s",
                "PFMERGE s",
                "PFMERGE d s",
                "SET n 12345",
                "PFADD n x",
                "SET short HYLL",
                "PFADD short a",
                "EXISTS d",
            ],
        ),
        lines("arity", &["PFADD", "PFCOUNT", "PFMERGE"]),
        lines(
            "merge",
            &[
                "PFADD a 1 2 3 4",
                "PFADD b 3 4 5 6",
                "PFMERGE c a b",
                "PFCOUNT c",
                "GET c",
                "PFMERGE a b",
                "GET a",
                "PFCOUNT a b c",
                "PFCOUNT a",
            ],
        ),
        lines(
            "invalid headers",
            &[
                "SET bad \"HYLL\\x02\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\"",
                "PFADD bad a",
                "SET bad2 \"HYLL\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\"",
                "PFCOUNT bad2",
                "SET corrupt \"HYLL\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x80\\x40\\x01\"",
                "PFCOUNT corrupt",
                "PFADD corrupt a",
                "PFMERGE x corrupt",
            ],
        ),
        lines(
            "sparse string ending in half an xzero opcode",
            &[
                "SET t \"HYLL\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x80\\x6c\\xad\\xc3\\xbf\\x50\"",
                "PFADD t e4448",
                "GET t",
                "PFCOUNT t",
                "PFADD t e4449",
                "GET t",
                "SET whole \"HYLL\\x01\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x80\\x6f\\xfe\\x50\"",
                "PFCOUNT whole",
                // Not read again: Redis would read the byte cut off the end
                // from past its string, which only it still holds.
                "PFADD whole e4448",
                "GET whole",
            ],
        ),
        filled("sparse grows", &[("h", "x", 300)], &["GET h", "PFCOUNT h", "GET h", "STRLEN h"]),
        filled("sparse to dense", &[("h", "e", 3000)], &["STRLEN h", "PFCOUNT h", "GET h"]),
        filled(
            "merge sparse and dense",
            &[("s", "a", 200), ("d", "b", 4000)],
            &["PFMERGE m s", "STRLEN m", "GET m", "PFMERGE m2 s d", "STRLEN m2", "PFCOUNT m2", "PFCOUNT s d", "GET m2"],
        ),
        lines(
            "sparse max bytes",
            &[
                "CONFIG SET hll-sparse-max-bytes 40",
                "PFADD h a b c d e f g h i j k l m n o p",
                "STRLEN h",
                "PFCOUNT h",
                "CONFIG SET hll-sparse-max-bytes 3000",
                "CONFIG GET hll-sparse-max-bytes",
            ],
        ),
    ]
}

#[test]
fn hyperloglog_replies_and_strings_match_redis() {
    compare_each("hyperloglog_replies_and_strings_match_redis", cases());
}

#[test]
fn hyperloglog_pipelined_matches_redis() {
    compare_pipelined("hyperloglog_pipelined_matches_redis", cases());
}
