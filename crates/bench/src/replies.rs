//! Reading and counting replies without building them.
//!
//! The benchmark needs three facts per reply: that it is complete, which
//! channel it belongs to, and whether it is an error. `kvik-protocol`'s
//! [`reply_len`] (RESP) and [`skip_reply`] (RESPB) give exactly that while
//! validating the bytes, and allocate nothing. The buffer is reused for the
//! connection's life and bounded: a reply that would need more than the
//! limit fails the connection instead of growing memory without end.

use std::ops::Range;

use kvik_protocol::resp::reply_parser::{reply_len, ReplyLimits};
use kvik_protocol::respb::skip_reply;
use tokio::io::{AsyncRead, AsyncReadExt};

/// Smallest free space offered to each read.
const MIN_READ: usize = 64 * 1024;
/// Largest reply accepted: Redis's biggest string plus framing.
pub const MAX_REPLY: usize = 512 * 1024 * 1024 + 64 * 1024;

/// One complete reply.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Its channel (0 over RESP).
    pub mux: u16,
    /// For an error reply, where its message sits in [`Replies::text`].
    pub error: Option<Range<usize>>,
}

/// Replies arriving on one connection.
#[derive(Debug)]
pub struct Replies {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    respb: bool,
    limits: ReplyLimits,
}

impl Replies {
    /// A reader for RESP replies, or RESPB frames when `respb`.
    pub fn new(respb: bool) -> Replies {
        Replies { buf: vec![0; MIN_READ * 2], start: 0, end: 0, respb, limits: ReplyLimits::DEFAULT }
    }

    /// Switch to RESPB frames (after the handshake).
    pub fn set_respb(&mut self, respb: bool) {
        self.respb = respb;
    }

    /// Bytes received and not yet parsed.
    pub fn pending(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Drop `n` pending bytes.
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
    }

    /// Read more bytes; `Ok(0)` when the server closed the connection.
    pub async fn fill<R: AsyncRead + Unpin>(&mut self, r: &mut R) -> std::io::Result<usize> {
        self.make_room()?;
        let n = r.read(&mut self.buf[self.end..]).await?;
        self.end += n;
        Ok(n)
    }

    fn make_room(&mut self) -> std::io::Result<()> {
        let pending = self.end - self.start;
        if pending >= MAX_REPLY {
            return Err(std::io::Error::other(format!("a reply is longer than {MAX_REPLY} bytes")));
        }
        if self.start == self.end {
            self.start = 0;
            self.end = 0;
        } else if self.start > 0 && self.buf.len() - self.end < MIN_READ {
            self.buf.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = pending;
        }
        if self.buf.len() - self.end < MIN_READ {
            let want = (self.buf.len() * 2).min(MAX_REPLY + MIN_READ);
            self.buf.resize(want.max(self.end + MIN_READ), 0);
        }
        Ok(())
    }

    /// The next complete reply, consumed; `Ok(None)` when more bytes are needed.
    pub fn next_reply(&mut self) -> Result<Option<Reply>, String> {
        let at = self.start;
        let pending = &self.buf[at..self.end];
        if pending.is_empty() {
            return Ok(None);
        }
        if self.respb {
            let Some(r) = skip_reply(pending, &self.limits).map_err(|e| e.to_string())? else {
                return Ok(None);
            };
            let error = r.is_error.then(|| {
                if pending[..2] == [0xFF, 0xFF] {
                    resp_error_text(&pending[8..r.consumed], at + 8)
                } else {
                    at + 6..at + r.consumed
                }
            });
            self.consume(r.consumed);
            return Ok(Some(Reply { mux: r.mux, error }));
        }
        let Some(n) = reply_len(pending, &self.limits).map_err(|e| e.to_string())? else {
            return Ok(None);
        };
        let error = matches!(pending[0], b'-' | b'!').then(|| resp_error_text(&pending[..n], at));
        self.consume(n);
        Ok(Some(Reply { mux: 0, error }))
    }

    /// The bytes of `range` from a reply returned by [`next_reply`](Self::next_reply)
    /// (valid until the next [`fill`](Self::fill)).
    pub fn text(&self, range: Range<usize>) -> &[u8] {
        self.buf.get(range).unwrap_or(&[])
    }
}

/// The message of a RESP error reply `reply` that starts at `base`.
fn resp_error_text(reply: &[u8], base: usize) -> Range<usize> {
    let body_end = base + reply.len().saturating_sub(2);
    if reply.first() == Some(&b'!') {
        // Blob error: `!<len>\r\n<text>\r\n`.
        let skip = memchr::memchr(b'\n', reply).map_or(reply.len(), |i| i + 1);
        return (base + skip).min(body_end)..body_end;
    }
    (base + 1).min(body_end)..body_end
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_protocol::respb::RespbReplyWriter;
    use kvik_protocol::ReplySink;

    async fn read_all(respb: bool, bytes: Vec<u8>, chunk: usize) -> Vec<(u16, Option<String>)> {
        let mut r = Replies::new(respb);
        let mut out = Vec::new();
        for piece in bytes.chunks(chunk) {
            let mut src: &[u8] = piece;
            r.fill(&mut src).await.unwrap();
            while let Some(reply) = r.next_reply().unwrap() {
                let text = reply.error.map(|e| String::from_utf8_lossy(r.text(e)).into_owned());
                out.push((reply.mux, text));
            }
        }
        assert!(r.pending().is_empty());
        out
    }

    #[tokio::test]
    async fn counts_resp_replies_and_errors_split_anywhere() {
        let bytes = b"+OK\r\n-ERR no\r\n:5\r\n*2\r\n$1\r\na\r\n$-1\r\n!5\r\nERR x\r\n".to_vec();
        for chunk in 1..bytes.len() {
            let got = read_all(false, bytes.clone(), chunk).await;
            let want =
                vec![(0, None), (0, Some("ERR no".to_string())), (0, None), (0, None), (0, Some("ERR x".to_string()))];
            assert_eq!(got, want, "chunk {chunk}");
        }
    }

    #[tokio::test]
    async fn counts_respb_frames_by_channel() {
        let mut bytes = Vec::new();
        RespbReplyWriter::new(&mut bytes, 1).simple(b"OK");
        RespbReplyWriter::new(&mut bytes, 2).error(b"WRONGTYPE bad");
        let mut w = RespbReplyWriter::new(&mut bytes, 3);
        w.array(2);
        w.bulk(b"a");
        w.bulk(b"b");
        let mut pass = vec![0xFF, 0xFF, 0, 4, 0, 0, 0, 8];
        pass.extend_from_slice(b"-ERR p\r\n");
        bytes.extend_from_slice(&pass);
        for chunk in [1, 3, 7, 100] {
            let got = read_all(true, bytes.clone(), chunk).await;
            let want = vec![(1, None), (2, Some("WRONGTYPE bad".to_string())), (3, None), (4, Some("ERR p".into()))];
            assert_eq!(got, want, "chunk {chunk}");
        }
    }

    #[test]
    fn garbage_is_an_error() {
        let mut r = Replies::new(false);
        r.buf[..4].copy_from_slice(b"?x\r\n");
        r.end = 4;
        assert!(r.next_reply().is_err());
        let mut r = Replies::new(true);
        r.buf[..4].copy_from_slice(&[0x12, 0x34, 0, 0]);
        r.end = 4;
        assert!(r.next_reply().is_err());
    }
}
