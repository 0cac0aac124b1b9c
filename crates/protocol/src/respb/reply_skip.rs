//! Skipping RESPB reply frames without building them, for load generators
//! that only count replies and errors.
//!
//! [`skip_reply`] accepts exactly the frames [`decode_reply`](super::decode_reply)
//! accepts (same tags, limits and passthrough checks) but allocates nothing.

use super::reply::{opcode, ReplyDecodeError};
use super::PASSTHROUGH;
use crate::resp::reply_parser::{reply_len, ReplyLimits};

/// A complete reply frame found at the start of a buffer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SkippedReply {
    /// Channel the reply belongs to.
    pub mux: u16,
    /// Bytes the frame took.
    pub consumed: usize,
    /// True for an error reply (binary error frame, or a passthrough
    /// carrying a RESP error).
    pub is_error: bool,
}

/// Length, channel and error-ness of the reply frame at the start of `buf`;
/// `Ok(None)` when more bytes are needed.
pub fn skip_reply(buf: &[u8], limits: &ReplyLimits) -> Result<Option<SkippedReply>, ReplyDecodeError> {
    let (Some(op), Some(mux)) = (be2(buf), buf.get(2..).and_then(be2)) else {
        return Ok(None);
    };
    if op == PASSTHROUGH {
        let Some(len) = buf.get(4..8) else {
            return Ok(None);
        };
        let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
        if len > limits.max_bulk_len.saturating_add(64 * 1024) {
            return Err(ReplyDecodeError::TooLong(len as u64));
        }
        let Some(text) = buf.get(8..8 + len) else {
            return Ok(None);
        };
        return match reply_len(text, limits) {
            Ok(Some(used)) if used == len => {
                Ok(Some(SkippedReply { mux, consumed: 8 + len, is_error: matches!(text.first(), Some(b'-' | b'!')) }))
            }
            Ok(_) => Err(ReplyDecodeError::PassthroughLength),
            Err(e) => Err(ReplyDecodeError::Passthrough(e)),
        };
    }
    if !(opcode::SIMPLE..=opcode::PUSH).contains(&op) {
        return Err(ReplyDecodeError::UnknownType(op));
    }
    let mut pos = 4;
    match skip_value(op as u8, buf, &mut pos, limits, 0) {
        Ok(()) => Ok(Some(SkippedReply { mux, consumed: pos, is_error: op == opcode::ERROR })),
        Err(None) => Ok(None),
        Err(Some(e)) => Err(e),
    }
}

fn be2(b: &[u8]) -> Option<u16> {
    Some(u16::from_be_bytes([*b.first()?, *b.get(1)?]))
}

/// Advance `pos` past one value with tag `tag`; `Err(None)` when short.
fn skip_value(
    tag: u8,
    buf: &[u8],
    pos: &mut usize,
    limits: &ReplyLimits,
    depth: usize,
) -> Result<(), Option<ReplyDecodeError>> {
    let op = u16::from(tag) | 0x8000;
    let rest = buf.get(*pos..).unwrap_or(&[]);
    let need = |n: usize| if rest.len() >= n { Ok(()) } else { Err(None) };
    match op {
        opcode::SIMPLE | opcode::ERROR => {
            let n = usize::from(be2(rest).ok_or(None)?);
            need(2 + n)?;
            *pos += 2 + n;
        }
        opcode::INTEGER | opcode::DOUBLE => {
            need(8)?;
            *pos += 8;
        }
        opcode::BULK => {
            need(4)?;
            let n = u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]]) as usize;
            if n > limits.max_bulk_len {
                return Err(Some(ReplyDecodeError::TooLong(n as u64)));
            }
            need(4 + n)?;
            *pos += 4 + n;
        }
        opcode::NULL => {}
        opcode::BOOLEAN => {
            let b = *rest.first().ok_or(None)?;
            if b > 1 {
                return Err(Some(ReplyDecodeError::BadBoolean(b)));
            }
            *pos += 1;
        }
        opcode::ARRAY | opcode::MAP | opcode::SET | opcode::PUSH => {
            if depth >= limits.max_depth {
                return Err(Some(ReplyDecodeError::TooDeep));
            }
            let count = usize::from(be2(rest).ok_or(None)?);
            *pos += 2;
            let elements = if op == opcode::MAP { count * 2 } else { count };
            for _ in 0..elements {
                let t = *buf.get(*pos).ok_or(None)?;
                *pos += 1;
                skip_value(t, buf, pos, limits, depth + 1)?;
            }
        }
        _ => return Err(Some(ReplyDecodeError::UnknownType(op))),
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::respb::{decode_reply, RespbReplyWriter};
    use crate::ReplySink;

    fn frames() -> Vec<u8> {
        let mut out = Vec::new();
        let mut w = RespbReplyWriter::new(&mut out, 3);
        w.simple(b"OK");
        w.error(b"ERR bad");
        w.integer(-5);
        w.bulk(b"hello");
        w.null();
        w.array(3);
        w.bulk(b"a");
        w.map(1);
        w.simple(b"k");
        w.double(1.5);
        w.boolean(true);
        w.set(0);
        w.push(1);
        w.integer(1);
        out
    }

    #[test]
    fn skips_what_decode_reads_with_the_same_lengths() {
        let bytes = frames();
        let limits = ReplyLimits::DEFAULT;
        let (mut a, mut b) = (0, 0);
        while a < bytes.len() {
            let decoded = decode_reply(&bytes[a..], &limits).unwrap().unwrap();
            let skipped = skip_reply(&bytes[b..], &limits).unwrap().unwrap();
            assert_eq!((skipped.mux, skipped.consumed), (decoded.mux, decoded.consumed));
            assert_eq!(skipped.is_error, decoded.value.is_error());
            a += decoded.consumed;
            b += skipped.consumed;
        }
    }

    #[test]
    fn every_prefix_needs_more_bytes() {
        let bytes = frames();
        let limits = ReplyLimits::DEFAULT;
        let first = skip_reply(&bytes, &limits).unwrap().unwrap().consumed;
        let mut pos = 0;
        while pos < bytes.len() {
            let n = skip_reply(&bytes[pos..], &limits).unwrap().unwrap().consumed;
            for cut in 0..n {
                assert_eq!(skip_reply(&bytes[pos..pos + cut], &limits), Ok(None), "cut {cut}");
            }
            pos += n;
        }
        assert!(first > 0);
    }

    #[test]
    fn passthrough_errors_and_bad_frames() {
        let limits = ReplyLimits::DEFAULT;
        let mut f = vec![0xFF, 0xFF, 0, 2, 0, 0, 0, 7];
        f.extend_from_slice(b"-ERR x\r");
        assert!(skip_reply(&f, &limits).is_err());
        let mut f = vec![0xFF, 0xFF, 0, 2, 0, 0, 0, 8];
        f.extend_from_slice(b"-ERR x\r\n");
        assert_eq!(skip_reply(&f, &limits), Ok(Some(SkippedReply { mux: 2, consumed: 16, is_error: true })));
        assert_eq!(skip_reply(&[0x12, 0x34, 0, 0], &limits), Err(ReplyDecodeError::UnknownType(0x1234)));
        assert_eq!(skip_reply(&[0x80, 0x06, 0, 0, 7], &limits), Err(ReplyDecodeError::BadBoolean(7)));
    }
}
