//! RESPB reply decoding: a decoded frame ends where it says, and writing its
//! value back with `RespbReplyWriter` on the same channel reads back the same.

use kvik_protocol::resp::reply_parser::ReplyLimits;
use kvik_protocol::respb::{decode_reply, RespbReplyWriter, PASSTHROUGH};
use kvik_protocol::Value;

use crate::resp_reply::prefixes;
use crate::values::{canonical_resp3, canonical_respb_binary, same};

fn write(v: &Value, mux: u16) -> Vec<u8> {
    let mut out = Vec::new();
    let mut w = RespbReplyWriter::new(&mut out, mux);
    v.write_to(&mut w);
    assert!(w.is_complete(), "writer out of step after {v:?}");
    out
}

fn is_passthrough(frame: &[u8]) -> bool {
    frame.get(..2) == Some(&PASSTHROUGH.to_be_bytes()[..])
}

/// Check one fuzz input.
pub fn check(data: &[u8]) {
    let limits = ReplyLimits::DEFAULT;
    let Ok(Some(frame)) = decode_reply(data, &limits) else {
        return;
    };
    let n = frame.consumed;
    assert!(n > 0 && n <= data.len(), "frame length {n} outside 1..={}", data.len());
    let alone = decode_reply(&data[..n], &limits);
    assert!(
        matches!(&alone, Ok(Some(f)) if f.consumed == n && f.mux == frame.mux && same(&f.value, &frame.value)),
        "frame read alone gives {alone:?}"
    );
    for cut in prefixes(n) {
        let partial = decode_reply(&data[..cut], &limits);
        assert!(matches!(partial, Ok(None)), "prefix of {cut}/{n} bytes gives {partial:?}");
    }

    let bytes = write(&frame.value, frame.mux);
    let back = decode_reply(&bytes, &limits);
    let Ok(Some(again)) = back else {
        panic!("frame {bytes:?} written for {:?} reads back as {back:?}", frame.value);
    };
    assert_eq!(again.consumed, bytes.len(), "written frame is not exactly one frame");
    assert_eq!(again.mux, frame.mux, "channel lost in the round trip");
    if is_passthrough(&bytes) {
        // The writer fell back to RESP3 text part way through, so each part of
        // the value went through one of the two conversions: apply both.
        let loose = |v: &Value| canonical_resp3(&canonical_respb_binary(v));
        assert!(
            same(&loose(&frame.value), &loose(&again.value)),
            "passthrough round trip changed {:?} into {:?}",
            frame.value,
            again.value
        );
    } else {
        assert!(
            same(&canonical_respb_binary(&frame.value), &again.value),
            "binary round trip changed {:?} into {:?}",
            frame.value,
            again.value
        );
    }
    assert_eq!(write(&again.value, again.mux), bytes, "writing {:?} is not stable", again.value);
}
