//! Counts what a client connection's socket moves, for `INFO stats`
//! (`total_net_input_bytes`, `total_net_output_bytes`,
//! `total_reads_processed`, `total_writes_processed`).
//!
//! [`MeteredStream`] wraps the socket, so every read and write a
//! connection makes is counted, whichever path of the connection makes it,
//! and the counts go to the serving thread's own lane
//! ([`crate::metrics::stat_lanes`]): no shared cache line per system call.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::metrics::stats::Stats;

/// A client's socket that counts its reads and writes in `stats`.
pub struct MeteredStream<'a, S> {
    inner: S,
    stats: &'a Stats,
}

impl<'a, S> MeteredStream<'a, S> {
    /// Count what `inner` moves in `stats`.
    pub fn new(inner: S, stats: &'a Stats) -> Self {
        MeteredStream { inner, stats }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for MeteredStream<'_, S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if let Poll::Ready(Ok(())) = polled {
            self.stats.record_read(buf.filled().len().saturating_sub(before));
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for MeteredStream<'_, S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, bytes);
        if let Poll::Ready(Ok(n)) = polled {
            if n > 0 {
                self.stats.record_write(n);
            }
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn reads_and_writes_are_counted_with_their_bytes() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let stats = Stats::default();
        runtime.block_on(async {
            let (near, mut far) = tokio::io::duplex(64);
            let mut metered = MeteredStream::new(near, &stats);
            far.write_all(b"hello").await.expect("write");
            let mut buf = [0u8; 16];
            assert_eq!(metered.read(&mut buf).await.expect("read"), 5);
            metered.write_all(b"+PONG\r\n").await.expect("write");
            let mut got = [0u8; 7];
            far.read_exact(&mut got).await.expect("read");
            assert_eq!(&got, b"+PONG\r\n");
            drop(far);
            assert_eq!(metered.read(&mut buf).await.expect("end"), 0);
        });
        let net = stats.net();
        assert_eq!((net.reads, net.input_bytes), (2, 5), "the end of input is a read of nothing");
        assert_eq!((net.writes, net.output_bytes), (1, 7));
    }
}
