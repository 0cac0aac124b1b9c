//! The glue between the byte stream and `kvik-protocol`'s codecs: writing a
//! request in the connection's protocol, and reading replies from a bounded
//! buffer. No encoding or parsing happens here; it is all `kvik-protocol`.

use kvik_protocol::resp::command::write_command;
use kvik_protocol::resp::reply_parser::{parse_reply, reply_len, ReplyLimits};
use kvik_protocol::respb::{decode_reply, encode_request};
use kvik_protocol::Value;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::error::{Error, Result};
use crate::options::{Options, Protocol};

/// Append one request for `args` to `out`: a RESP multibulk, or a RESPB frame
/// (binary layout or passthrough, as the encoder decides) on channel `mux`.
pub fn write_request<A: AsRef<[u8]>>(protocol: Protocol, args: &[A], mux: u16, out: &mut Vec<u8>) {
    match protocol {
        Protocol::Resp2 | Protocol::Resp3 => write_command(args, out),
        Protocol::Respb => {
            encode_request(args, mux, out);
        }
    }
}

/// Smallest read: enough for many small replies per system call.
const MIN_READ: usize = 16 * 1024;

/// Replies read from the server, kept in one growing buffer that holds at
/// most one incomplete reply beyond what was already parsed.
///
/// The buffer never grows past the configured reply limit: when the reply at
/// its start is still incomplete at that size, reading fails with
/// [`Error::ReplyTooLarge`].
#[derive(Debug)]
pub struct ReplyReader {
    buf: Vec<u8>,
    start: usize,
    end: usize,
    respb: bool,
    limits: ReplyLimits,
    max_reply_bytes: usize,
}

impl ReplyReader {
    /// A reader for `protocol` with the limits from `opts`.
    pub fn new(protocol: Protocol, opts: &Options) -> ReplyReader {
        let limits = ReplyLimits {
            max_bulk_len: ReplyLimits::DEFAULT.max_bulk_len.min(opts.max_reply_bytes),
            max_aggregate_len: ReplyLimits::DEFAULT.max_aggregate_len.min(opts.max_reply_bytes),
            max_depth: opts.max_reply_depth,
        };
        ReplyReader {
            buf: Vec::new(),
            start: 0,
            end: 0,
            respb: protocol == Protocol::Respb,
            limits,
            max_reply_bytes: opts.max_reply_bytes.max(1),
        }
    }

    /// Switch to RESPB frames (after the handshake).
    pub fn set_respb(&mut self, respb: bool) {
        self.respb = respb;
    }

    /// Bytes received and not yet parsed.
    pub fn buffered(&self) -> &[u8] {
        &self.buf[self.start..self.end]
    }

    /// Drop `n` buffered bytes (the handshake answer).
    pub fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
    }

    /// The next complete reply already buffered, with its mux id (0 for RESP).
    pub fn try_next(&mut self) -> Result<Option<(u16, Value)>> {
        let pending = &self.buf[self.start..self.end];
        if pending.is_empty() {
            return Ok(None);
        }
        let parsed = if self.respb {
            decode_reply(pending, &self.limits)
                .map_err(|e| Error::Protocol(e.to_string()))?
                .map(|f| (f.mux, f.value, f.consumed))
        } else {
            parse_reply(pending, &self.limits).map_err(|e| Error::Protocol(e.to_string()))?.map(|(v, n)| (0, v, n))
        };
        Ok(parsed.map(|(mux, value, used)| {
            self.consume(used);
            (mux, value)
        }))
    }

    /// Skip the next complete reply without building it (RESP; RESPB frames
    /// are decoded and dropped). `Some(is_error)` when one was skipped.
    pub fn try_skip(&mut self) -> Result<Option<bool>> {
        if self.respb {
            return Ok(self.try_next()?.map(|(_, v)| v.is_error()));
        }
        let pending = &self.buf[self.start..self.end];
        let Some(&first) = pending.first() else {
            return Ok(None);
        };
        let len = reply_len(pending, &self.limits).map_err(|e| Error::Protocol(e.to_string()))?;
        Ok(len.map(|n| {
            self.consume(n);
            first == b'-' || first == b'!'
        }))
    }

    /// Read the next reply, waiting for bytes as needed.
    pub async fn next<R: AsyncRead + Unpin>(&mut self, stream: &mut R) -> Result<(u16, Value)> {
        loop {
            if let Some(reply) = self.try_next()? {
                return Ok(reply);
            }
            self.fill(stream).await?;
        }
    }

    /// Read at least one more byte from `stream` (end of stream is an error:
    /// the server closed the connection while a reply was awaited).
    pub async fn fill<R: AsyncRead + Unpin>(&mut self, stream: &mut R) -> Result<()> {
        self.make_room()?;
        let n = stream.read(&mut self.buf[self.end..]).await.map_err(Error::Io)?;
        if n == 0 {
            return Err(Error::ConnectionLost("the server closed the connection".into()));
        }
        self.end += n;
        Ok(())
    }

    /// Ensure free space after `end`: move the unparsed bytes to the front,
    /// then grow (doubling, so re-parsing a long incomplete reply stays
    /// cheap) up to the reply limit.
    fn make_room(&mut self) -> Result<()> {
        let pending = self.end - self.start;
        if pending >= self.max_reply_bytes {
            return Err(Error::ReplyTooLarge { limit: self.max_reply_bytes });
        }
        if self.start > 0 && (self.end == self.buf.len() || self.start >= self.buf.len() / 2) {
            self.buf.copy_within(self.start..self.end, 0);
            self.start = 0;
            self.end = pending;
        }
        let free = self.buf.len() - self.end;
        if free < MIN_READ.min(self.max_reply_bytes) || free < pending {
            let want = (self.buf.len() * 2).max(MIN_READ);
            // One byte over the limit lets a reply of exactly the limit complete.
            let cap = self.max_reply_bytes.saturating_add(1).max(self.end + 1);
            self.buf.resize(want.min(cap).max(self.end + 1), 0);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_protocol::respb::RespbReplyWriter;
    use kvik_protocol::ReplySink;

    fn reader(protocol: Protocol, max: usize) -> ReplyReader {
        ReplyReader::new(protocol, &Options::tcp("x:1").with_max_reply_bytes(max))
    }

    #[tokio::test]
    async fn reads_resp_replies_split_anywhere() {
        let bytes = b"+OK\r\n$3\r\nabc\r\n*2\r\n:1\r\n_\r\n".to_vec();
        for cut in 1..bytes.len() {
            let mut r = reader(Protocol::Resp3, 1 << 20);
            let mut stream = tokio_test_stream(vec![bytes[..cut].to_vec(), bytes[cut..].to_vec()]);
            assert_eq!(r.next(&mut stream).await.unwrap().1, Value::simple("OK"));
            assert_eq!(r.next(&mut stream).await.unwrap().1, Value::bulk("abc"));
            assert_eq!(r.next(&mut stream).await.unwrap().1, Value::Array(vec![Value::Integer(1), Value::Null]));
        }
    }

    #[tokio::test]
    async fn reads_respb_frames_with_their_mux() {
        let mut bytes = Vec::new();
        RespbReplyWriter::new(&mut bytes, 7).integer(42);
        RespbReplyWriter::new(&mut bytes, 9).error(b"ERR nope");
        let mut r = reader(Protocol::Respb, 1 << 20);
        let mut stream = tokio_test_stream(vec![bytes]);
        assert_eq!(r.next(&mut stream).await.unwrap(), (7, Value::Integer(42)));
        assert_eq!(r.next(&mut stream).await.unwrap(), (9, Value::error("ERR nope")));
    }

    #[tokio::test]
    async fn a_reply_over_the_limit_fails_without_growing_past_it() {
        let mut bytes = b"$100000\r\n".to_vec();
        bytes.extend(std::iter::repeat_n(b'x', 100_000));
        bytes.extend_from_slice(b"\r\n");
        let mut r = reader(Protocol::Resp2, 1000);
        let mut stream = tokio_test_stream(vec![bytes.clone()]);
        let err = r.next(&mut stream).await.unwrap_err();
        assert!(matches!(err, Error::Protocol(_) | Error::ReplyTooLarge { .. }), "{err}");
        // Under a limit large enough the same bytes parse.
        let mut r = reader(Protocol::Resp2, bytes.len());
        let mut stream = tokio_test_stream(vec![bytes]);
        assert!(matches!(r.next(&mut stream).await.unwrap().1, Value::Bulk(b) if b.len() == 100_000));
    }

    #[tokio::test]
    async fn an_aggregate_growing_past_the_limit_fails() {
        // 10,000 elements are allowed by count but take 40,000 bytes.
        let mut bytes = b"*10000\r\n".to_vec();
        for _ in 0..10_000 {
            bytes.extend_from_slice(b":1\r\n");
        }
        let mut r = reader(Protocol::Resp2, 16 * 1024);
        let mut stream = tokio_test_stream(vec![bytes]);
        assert!(matches!(r.next(&mut stream).await.unwrap_err(), Error::ReplyTooLarge { limit: 16384 }));
        assert!(r.buf.len() <= 16 * 1024 + 1);
    }

    #[tokio::test]
    async fn garbage_and_eof_are_errors_not_panics() {
        let mut r = reader(Protocol::Resp2, 1 << 20);
        let mut stream = tokio_test_stream(vec![b"\x01\x02garbage".to_vec()]);
        assert!(matches!(r.next(&mut stream).await.unwrap_err(), Error::Protocol(_)));
        let mut r = reader(Protocol::Respb, 1 << 20);
        let mut stream = tokio_test_stream(vec![vec![0x80, 0x03, 0, 1, 0, 0]]);
        assert!(matches!(r.next(&mut stream).await.unwrap_err(), Error::ConnectionLost(_)));
        let mut r = reader(Protocol::Respb, 1 << 20);
        let mut stream = tokio_test_stream(vec![vec![0x12, 0x34, 0, 0]]);
        assert!(matches!(r.next(&mut stream).await.unwrap_err(), Error::Protocol(_)));
    }

    #[tokio::test]
    async fn skipping_counts_replies_without_building_them() {
        let mut r = reader(Protocol::Resp2, 1 << 20);
        let mut stream = tokio_test_stream(vec![b"+OK\r\n-ERR x\r\n*1\r\n$1\r\na\r\n".to_vec()]);
        r.fill(&mut stream).await.unwrap();
        assert_eq!(r.try_skip().unwrap(), Some(false));
        assert_eq!(r.try_skip().unwrap(), Some(true));
        assert_eq!(r.try_skip().unwrap(), Some(false));
        assert_eq!(r.try_skip().unwrap(), None);
    }

    #[test]
    fn random_bytes_are_errors_or_replies_never_panics() {
        let mut seed = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        // Mostly bytes that mean something to one of the parsers.
        let alphabet = b"*$:+-_%~>,#(=!|\r\n0123456789?tf.\x80\x00\x01\x02\x03\x04\x05\x08\x0a\xff";
        for protocol in [Protocol::Resp3, Protocol::Respb] {
            for _ in 0..5000 {
                let len = (next() % 48) as usize;
                let bytes: Vec<u8> = (0..len)
                    .map(|_| match next() % 8 {
                        0 => next() as u8,
                        _ => alphabet[(next() % alphabet.len() as u64) as usize],
                    })
                    .collect();
                let mut r = reader(protocol, 1 << 16);
                r.buf = bytes;
                r.end = len;
                while let Ok(Some(_)) = r.try_next() {}
                let mut r2 = reader(protocol, 1 << 16);
                r2.buf = r.buf.clone();
                r2.end = len;
                while let Ok(Some(_)) = r2.try_skip() {}
            }
        }
    }

    #[test]
    fn requests_use_the_protocol_codecs() {
        let mut out = Vec::new();
        write_request(Protocol::Resp2, &["GET", "k"], 0, &mut out);
        assert_eq!(out, b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n");
        out.clear();
        write_request(Protocol::Respb, &["GET", "k"], 5, &mut out);
        assert_eq!(out, [0, 0, 0, 5, 0, 1, b'k']);
    }

    /// A reader that hands out `chunks` one per read, then end of stream.
    fn tokio_test_stream(chunks: Vec<Vec<u8>>) -> ChunkStream {
        ChunkStream { chunks: chunks.into_iter().filter(|c| !c.is_empty()).collect() }
    }

    struct ChunkStream {
        chunks: std::collections::VecDeque<Vec<u8>>,
    }

    impl AsyncRead for ChunkStream {
        fn poll_read(
            mut self: std::pin::Pin<&mut Self>,
            _cx: &mut std::task::Context<'_>,
            buf: &mut tokio::io::ReadBuf<'_>,
        ) -> std::task::Poll<std::io::Result<()>> {
            if let Some(mut chunk) = self.chunks.pop_front() {
                let n = chunk.len().min(buf.remaining());
                buf.put_slice(&chunk[..n]);
                if n < chunk.len() {
                    self.chunks.push_front(chunk.split_off(n));
                }
            }
            std::task::Poll::Ready(Ok(()))
        }
    }
}
