//! RESP reply parsing: `parse_reply` and `reply_len` agree, a parsed reply
//! ends where it says, and writing it back as RESP3 reads back the same.

use kvik_protocol::resp::reply_parser::{parse_reply, reply_len, ReplyLimits};
use kvik_protocol::resp::writer::{Protocol, RespWriter};
use kvik_protocol::Value;

use crate::values::{canonical_resp3, same};

/// Prefix lengths worth trying for a reply of `n` bytes: all of them for short
/// replies, a spread otherwise (each try reparses, which is quadratic).
pub(crate) fn prefixes(n: usize) -> impl Iterator<Item = usize> {
    let step = if n <= 64 { 1 } else { n / 32 };
    (0..n).step_by(step.max(1)).chain(n.checked_sub(1))
}

fn write(v: &Value, proto: Protocol) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = RespWriter::new(&mut out, proto);
    v.write_to(&mut w);
    assert!(!w.is_dropping_attributes(), "writer out of step after {v:?}");
    out
}

/// Check one fuzz input.
pub fn check(data: &[u8]) {
    let limits = ReplyLimits::DEFAULT;
    let parsed = parse_reply(data, &limits);
    let measured = reply_len(data, &limits);
    let (value, n) = match (parsed, measured) {
        (Ok(Some((v, n))), Ok(Some(m))) => {
            assert_eq!(n, m, "parse_reply and reply_len disagree on the length");
            (v, n)
        }
        (Ok(None), Ok(None)) => return,
        (Err(a), Err(b)) => {
            assert_eq!(a, b, "parse_reply and reply_len fail differently");
            return;
        }
        (p, m) => panic!("parse_reply gave {p:?} but reply_len gave {m:?}"),
    };
    assert!(n > 0 && n <= data.len(), "reply length {n} outside 1..={}", data.len());

    // The reply is self-delimiting: its own bytes suffice, and no fewer do.
    let alone = parse_reply(&data[..n], &limits);
    assert!(matches!(&alone, Ok(Some((v, m))) if *m == n && same(v, &value)), "reply read alone gives {alone:?}");
    for cut in prefixes(n) {
        let partial = parse_reply(&data[..cut], &limits);
        assert!(matches!(partial, Ok(None)), "prefix of {cut}/{n} bytes gives {partial:?}");
    }

    // RESP3 text round trip, modulo what RESP3 text cannot carry.
    let text = write(&value, Protocol::Resp3);
    let back = parse_reply(&text, &limits);
    let Ok(Some((again, used))) = back else {
        panic!("RESP3 text {text:?} written for {value:?} reads back as {back:?}");
    };
    assert_eq!(used, text.len(), "RESP3 text of {value:?} is not exactly one reply");
    assert!(same(&canonical_resp3(&value), &again), "RESP3 round trip changed {value:?} into {again:?}");
    assert_eq!(write(&again, Protocol::Resp3), text, "writing {again:?} is not stable");

    // RESP2 output must still be exactly one well-formed reply.
    let text2 = write(&value, Protocol::Resp2);
    let len2 = reply_len(&text2, &limits);
    assert_eq!(len2, Ok(Some(text2.len())), "RESP2 text {text2:?} written for {value:?} is not one reply");
}
