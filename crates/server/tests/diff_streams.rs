//! Differential tests of the stream commands against redis-server. Replies
//! must be identical byte for byte, except for figures that are clocks
//! (idle times, delivery and seen times) or Redis's radix tree internals
//! (`radix-tree-nodes`), which are masked. Each case starts with `FLUSHALL`.

mod common;

use common::diff::*;

/// Replace the integer reply that follows each of `fields` (as a bulk
/// string) with `:0`, and the integers of XPENDING's detailed rows' idle
/// column are left to the cases to avoid.
fn mask(bytes: &[u8]) -> Vec<u8> {
    const FIELDS: [&[u8]; 4] = [b"radix-tree-nodes", b"idle", b"seen-time", b"delivery-time"];
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hit = FIELDS.iter().find_map(|f| {
            let header = format!("${}\r\n", f.len());
            let mut pat = header.into_bytes();
            pat.extend_from_slice(f);
            pat.extend_from_slice(b"\r\n:");
            bytes[i..].starts_with(&pat).then_some(pat.len())
        });
        match hit {
            Some(n) => {
                out.extend_from_slice(&bytes[i..i + n]);
                i += n;
                while i < bytes.len() && bytes[i] != b'\r' {
                    i += 1;
                }
                out.push(b'0');
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    out
}

fn basic_cases() -> Vec<Case> {
    vec![
        lines(
            "xadd explicit ids",
            &[
                "XADD s 1-1 a 1",
                "XADD s 1-1 a 1",
                "XADD s 1-0 a 1",
                "XADD s 1-* b 2",
                "XADD s 2-* c 3",
                "XADD s 5 d 4",
                "XADD s 0-0 x y",
                "XADD s 0 x y",
                "XADD s 0-* x y",
                "XLEN s",
                "XRANGE s - +",
                "XREVRANGE s + -",
                "TYPE s",
                "OBJECT ENCODING s",
            ],
        ),
        lines(
            "xadd errors",
            &[
                "XADD s",
                "XADD s *",
                "XADD s * a",
                "XADD s * a 1 b",
                "XADD s bad a 1",
                "XADD s 1-x a 1",
                "XADD s - a 1",
                "XADD s + a 1",
                "XADD s MAXLEN -1 * a 1",
                "XADD s MAXLEN x * a 1",
                "XADD s MAXLEN 1 MINID 1 * a 1",
                "XADD s LIMIT 5 * a 1",
                "XADD s LIMIT 0 * a 1",
                "XADD s MAXLEN 5 LIMIT 5 * a 1",
                "XADD s MAXLEN ~ 5 LIMIT -1 * a 1",
                "XADD s MINID bad * a 1",
                "XADD s MAXLEN",
                "EXISTS s",
                "SET str v",
                "XADD str 1-1 a 1",
                "XADD s NOMKSTREAM 1-1 a 1",
                "EXISTS s",
                "XADD s 18446744073709551615-18446744073709551615 a 1",
                "XADD s * a 1",
                "XADD s 18446744073709551615-* a 1",
                "XADD q 1-18446744073709551615 a 1",
                "XADD q 1-* a 1",
                "XADD q 2-* a 1",
                "XLEN q",
            ],
        ),
        lines(
            "xadd trimming",
            &[
                "XADD s MAXLEN 2 1 a 1",
                "XADD s MAXLEN 2 2 a 1",
                "XADD s MAXLEN 2 3 a 1",
                "XADD s MAXLEN = 2 4 a 1",
                "XRANGE s - +",
                "XADD s MINID 4 5 a 1",
                "XRANGE s - +",
                "XADD s MAXLEN ~ 1 6 a 1",
                "XLEN s",
                "XTRIM s MAXLEN 1",
                "XRANGE s - +",
                "XINFO STREAM s",
            ],
        ),
        lines(
            "xtrim errors",
            &[
                "XTRIM s MAXLEN 1",
                "XTRIM s",
                "XTRIM s FOO 1",
                "XTRIM s MAXLEN",
                "XTRIM s LIMIT 10",
                "XTRIM s MAXLEN 1 LIMIT 10",
                "XTRIM s MAXLEN ~ 1 LIMIT 10",
                "XTRIM s MINID - ",
                "SET str v",
                "XTRIM str MAXLEN 1",
            ],
        ),
        lines(
            "ranges",
            &[
                "XADD s 1-0 a 1",
                "XADD s 1-1 b 2",
                "XADD s 2-0 c 3",
                "XADD s 3-5 d 4",
                "XRANGE s 1 1",
                "XRANGE s (1-0 +",
                "XRANGE s - (3-5",
                "XRANGE s 2 3",
                "XRANGE s - + COUNT 2",
                "XRANGE s - + COUNT 0",
                "XRANGE s - + COUNT -1",
                "XREVRANGE s + - COUNT 1",
                "XREVRANGE s (3-5 -",
                "XRANGE s 3 1",
                "XRANGE s (18446744073709551615-18446744073709551615 +",
                "XRANGE s - (0-0",
                "XRANGE s ( +",
                "XRANGE s (- +",
                "XRANGE s - + COUNT",
                "XRANGE s - + FOO 1",
                "XRANGE missing - +",
                "XRANGE missing - + COUNT 0",
                "XRANGE s x +",
            ],
        ),
        lines(
            "xdel",
            &[
                "XDEL missing 1-1",
                "XDEL missing bad",
                "XADD s 1-0 a 1",
                "XADD s 2-0 b 2",
                "XADD s 3-0 c 3",
                "XDEL s 2-0 2-0 9-9",
                "XDEL s bad",
                "XDEL s -",
                "XLEN s",
                "XINFO STREAM s",
                "XDEL s 1-0 3-0",
                "EXISTS s",
                "XLEN s",
                "XINFO STREAM s",
                "XADD s 2-5 d 4",
                "XADD s 3-0 d 4",
            ],
        ),
        lines(
            "xsetid",
            &[
                "XSETID missing 1-1",
                "XADD s 5-0 a 1",
                "XSETID s 4-0",
                "XSETID s 5-0",
                "XSETID s 10-0 ENTRIESADDED 0",
                "XSETID s 10-0 ENTRIESADDED -1",
                "XSETID s 10-0 MAXDELETEDID 11-0",
                "XSETID s 10-0 ENTRIESADDED 7 MAXDELETEDID 3-0",
                "XSETID s 10-0 FOO",
                "XINFO STREAM s",
                "XADD s 9-0 a 1",
                "XADD s 10-* a 1",
                "XSETID s 2-0",
            ],
        ),
        lines(
            "xsetid_below_max_deleted_id",
            &[
                "XADD s 10-1 a 1",
                "XADD s 20-1 a 1",
                "XDEL s 20-1",
                "XSETID s 15-0",
                "XINFO STREAM s",
                "XTRIM s MAXLEN 0",
                "XSETID s 12-0",
                "XADD s 13-0 a 1",
                "XINFO STREAM s",
            ],
        ),
        lines(
            "xread",
            &[
                "XREAD STREAMS missing 0",
                "XADD s 1-0 a 1",
                "XADD s 2-0 b 2",
                "XADD t 1-0 c 3",
                "XREAD STREAMS s 0",
                "XREAD COUNT 1 STREAMS s t 0 0",
                "XREAD STREAMS s t 1 1",
                "XREAD STREAMS s $",
                "XREAD STREAMS s t",
                "XREAD STREAMS s t 0",
                "XREAD STREAMS s >",
                "XREAD GROUP g c STREAMS s 0",
                "XREAD NOACK STREAMS s 0",
                "XREAD COUNT x STREAMS s 0",
                "XREAD FOO STREAMS s 0",
                "XREAD COUNT 1",
                "XREAD STREAMS s bad",
                "XREAD BLOCK -1 STREAMS s 0",
                "XREAD BLOCK x STREAMS s 0",
                "XREAD BLOCK 10 STREAMS s 0",
                "SET str v",
                "XREAD STREAMS str 0",
                "HELLO 3",
                "XREAD STREAMS s t 0 0",
                "XREAD STREAMS s 5",
            ],
        ),
    ]
}

fn group_cases() -> Vec<Case> {
    vec![
        lines(
            "xgroup create",
            &[
                "XGROUP CREATE s g 0",
                "XGROUP CREATE s g 0 MKSTREAM",
                "XGROUP CREATE s g 0 MKSTREAM",
                "XGROUP CREATE s g2 $",
                "XGROUP CREATE s g3 - ",
                "XGROUP CREATE s g3 bad",
                "XGROUP CREATE s g4 0 ENTRIESREAD -2",
                "XGROUP CREATE s g4 0 ENTRIESREAD 5",
                "XGROUP CREATE s g5 0 FOO",
                "XGROUP CREATE s g6 0 ENTRIESREAD",
                "XGROUP CREATE str g 0",
                "SET str v",
                "XGROUP CREATE str g 0",
                "XINFO GROUPS s",
                "XGROUP DESTROY s g",
                "XGROUP DESTROY s g",
                "XGROUP DESTROY nokey g",
                "XINFO GROUPS s",
                "XGROUP HELP",
                "XGROUP FOO",
                "XGROUP CREATE s",
            ],
        ),
        lines(
            "xgroup consumers",
            &[
                "XADD s 1-0 a 1",
                "XGROUP CREATE s g 0",
                "XGROUP CREATECONSUMER s g alice",
                "XGROUP CREATECONSUMER s g alice",
                "XGROUP CREATECONSUMER s nog alice",
                "XGROUP CREATECONSUMER nokey g alice",
                "XREADGROUP GROUP g bob STREAMS s >",
                "XGROUP DELCONSUMER s g bob",
                "XGROUP DELCONSUMER s g bob",
                "XPENDING s g",
                "XGROUP SETID s g 0",
                "XGROUP SETID s nog 0",
                "XGROUP SETID s g $ ENTRIESREAD 1",
                "XGROUP SETID s g - ",
                "XGROUP SETID s g 0 ENTRIESREAD 1 X",
                "XINFO GROUPS s",
                "XGROUP CREATE s ahead $ ENTRIESREAD 100",
                "XINFO GROUPS s",
                "XINFO CONSUMERS s g",
            ],
        ),
        lines(
            "xreadgroup",
            &[
                "XADD s 1-0 a 1",
                "XADD s 2-0 b 2",
                "XADD s 3-0 c 3",
                "XGROUP CREATE s g 0",
                "XREADGROUP GROUP g alice COUNT 1 STREAMS s >",
                "XREADGROUP GROUP g bob STREAMS s >",
                "XREADGROUP GROUP g bob STREAMS s >",
                "XREADGROUP GROUP g alice STREAMS s 0",
                "XREADGROUP GROUP g bob STREAMS s 0",
                "XREADGROUP GROUP g bob COUNT 1 STREAMS s 2",
                "XPENDING s g",
                "XACK s g 1-0 9-9",
                "XACK s g 1-0",
                "XACK s nog 1-0",
                "XACK s g bad",
                "XPENDING s g",
                "XDEL s 2-0",
                "XREADGROUP GROUP g bob STREAMS s 0",
                "XINFO GROUPS s",
                "XADD s 4-0 d 4",
                "XREADGROUP GROUP g carol NOACK STREAMS s >",
                "XPENDING s g",
                "XINFO GROUPS s",
                "XREADGROUP GROUP nog c STREAMS s >",
                "XREADGROUP GROUP g c STREAMS missing >",
                "XREADGROUP GROUP g c STREAMS s $",
                "XREADGROUP STREAMS s >",
                "XREADGROUP GROUP g STREAMS s >",
                "XREADGROUP GROUP g c STREAMS s",
                "XREADGROUP GROUP g c STREAMS s bad",
                "XREADGROUP GROUP g c COUNT 1 STREAMS s",
                "XREADGROUP GROUP g c STREAMS s a >",
                "HELLO 3",
                "XADD s 5-0 e 5",
                "XREADGROUP GROUP g dave STREAMS s >",
            ],
        ),
        lines(
            "xpending ranges",
            &[
                "XADD s 1-0 a 1",
                "XADD s 2-0 b 2",
                "XADD s 3-0 c 3",
                "XGROUP CREATE s g 0",
                "XREADGROUP GROUP g alice COUNT 2 STREAMS s >",
                "XREADGROUP GROUP g bob STREAMS s >",
                "XPENDING s g - + 10 nobody",
                "XPENDING s g - + 0",
                "XPENDING s g - + -5",
                "XPENDING s g IDLE 999999 - + 10",
                "XPENDING s g IDLE x - + 10",
                "XPENDING s g IDLE 5 - +",
                "XPENDING s g - + x",
                "XPENDING s g x + 10",
                "XPENDING s g (3-0 + 10",
                "XPENDING s g - + 0 alice extra",
                "XPENDING s g -",
                "XPENDING s nog",
                "XPENDING missing g",
                "SET str v",
                "XPENDING str g",
            ],
        ),
        lines(
            "xclaim",
            &[
                "XADD s 1-0 a 1",
                "XADD s 2-0 b 2",
                "XADD s 3-0 c 3",
                "XGROUP CREATE s g 0",
                "XREADGROUP GROUP g alice STREAMS s >",
                "XCLAIM s g bob 0 1-0 2-0",
                "XCLAIM s g bob 0 3-0 JUSTID",
                "XCLAIM s g bob 999999999 1-0",
                "XPENDING s g",
                "XCLAIM s g carol 0 9-0 FORCE",
                "XCLAIM s g carol 0 1-0 RETRYCOUNT 7 JUSTID",
                "XCLAIM s g carol x 1-0",
                "XCLAIM s g carol 0 1-0 IDLE x",
                "XCLAIM s g carol 0 1-0 TIME x",
                "XCLAIM s g carol 0 1-0 RETRYCOUNT x",
                "XCLAIM s g carol 0 1-0 LASTID bad",
                "XCLAIM s g carol 0 1-0 FOO",
                "XCLAIM s nog carol 0 1-0",
                "XCLAIM missing g carol 0 1-0",
                "XDEL s 2-0",
                "XCLAIM s g dave 0 2-0",
                "XPENDING s g",
                "XGROUP CREATE s h $",
                "XCLAIM s h erin 0 1-0 FORCE",
                "XCLAIM s h erin 0 3-0 FORCE JUSTID",
                "XCLAIM s h erin 0 5-0 LASTID 9-0",
                "XINFO GROUPS s",
                "XPENDING s h",
            ],
        ),
        lines(
            "xautoclaim",
            &[
                "XADD s 1-0 a 1",
                "XADD s 2-0 b 2",
                "XADD s 3-0 c 3",
                "XADD s 4-0 d 4",
                "XGROUP CREATE s g 0",
                "XREADGROUP GROUP g alice STREAMS s >",
                "XAUTOCLAIM s g bob 0 0 COUNT 2",
                "XAUTOCLAIM s g bob 0 (2-0 COUNT 1 JUSTID",
                "XDEL s 4-0",
                "XAUTOCLAIM s g carol 0 0",
                "XAUTOCLAIM s g carol 999999999 0",
                "XAUTOCLAIM s g carol 0 0 COUNT 0",
                "XAUTOCLAIM s g carol 0 0 COUNT x",
                "XAUTOCLAIM s g carol x 0",
                "XAUTOCLAIM s g carol 0 bad",
                "XAUTOCLAIM s g carol 0 0 FOO",
                "XAUTOCLAIM s nog carol 0 0",
                "XAUTOCLAIM missing g carol 0 0",
                "XPENDING s g",
            ],
        ),
        lines(
            "xinfo",
            &[
                "XINFO STREAM missing",
                "XINFO GROUPS missing",
                "XADD s 1-0 a 1 b 2",
                "XADD s 2-0 a 3 b 4",
                "XADD s 3-0 c 5",
                "XGROUP CREATE s g 0",
                "XGROUP CREATE s a $",
                "XINFO STREAM s FULL",
                "XINFO STREAM s FULL COUNT 1",
                "XINFO STREAM s FULL COUNT 0",
                "XREADGROUP GROUP g alice COUNT 1 STREAMS s >",
                "XINFO STREAM s",
                "XINFO STREAM s FULL COUNT x",
                "XINFO STREAM s FOO",
                "XINFO STREAM s FULL FOO 1",
                "XINFO GROUPS s",
                "XINFO CONSUMERS s g",
                "XINFO CONSUMERS s nog",
                "XINFO HELP",
                "SET str v",
                "XINFO STREAM str",
                "HELLO 3",
                "XINFO STREAM s",
                "XINFO GROUPS s",
            ],
        ),
        lines(
            "generic commands on streams",
            &[
                "XADD s 1-0 a 1",
                "XGROUP CREATE s g 0",
                "COPY s t",
                "XINFO GROUPS t",
                "RENAME t u",
                "XRANGE u - +",
                "GET s",
                "APPEND s x",
                "INCR s",
                "SETRANGE s 0 x",
                "GETBIT s 0",
            ],
        ),
    ]
}

/// Node layout through many entries: approximate trimming must remove
/// exactly what Redis removes.
fn layout_cases() -> Vec<Case> {
    let mut bytes = b"FLUSHALL\r\n".to_vec();
    for i in 1..=450u32 {
        let value = "v".repeat(1 + (i as usize * 7) % 90);
        bytes.extend_from_slice(format!("XADD s {i}-0 f{} {value} n {i}\r\n", i % 3).as_bytes());
        if i % 50 == 0 {
            bytes.extend_from_slice(format!("XDEL s {}-0\r\n", i - 10).as_bytes());
        }
    }
    for cmd in [
        "XLEN s",
        "XTRIM s MAXLEN ~ 300",
        "XLEN s",
        "XTRIM s MAXLEN ~ 100 LIMIT 120",
        "XLEN s",
        "XTRIM s MINID ~ 400",
        "XRANGE s - + COUNT 3",
        "XTRIM s MINID 420",
        "XADD s MAXLEN ~ 5 999-0 z 1",
        "XLEN s",
    ] {
        bytes.extend_from_slice(cmd.as_bytes());
        bytes.extend_from_slice(b"\r\n");
    }
    vec![open("approximate trimming follows nodes", bytes)]
}

fn cases() -> Vec<Case> {
    let mut all = basic_cases();
    all.extend(group_cases());
    all.extend(layout_cases());
    all
}

#[test]
fn stream_replies_match_redis() {
    compare_each_with("stream_replies_match_redis", &[], mask, cases());
}
