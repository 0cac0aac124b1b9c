//! [`WriteThrough`]: a TLS stream whose writes mean "on the socket".
//!
//! A TLS stream accepts plaintext into its session, encrypts it, and
//! writes the records to the socket as far as the socket takes them; what
//! the socket does not take waits in the session until the next write or
//! flush. kvik's connection code (and its clients') is written for
//! sockets, where an accepted byte is a sent byte and flushing is never
//! needed: after a write that "succeeded" it may go on to wait for input
//! only, and the records still waiting in the session would never leave,
//! the peer waiting for a reply that never comes.
//!
//! So a write here reports its bytes only once their records are all on
//! the socket. When the socket fills up halfway, the write answers
//! `Pending` (the task is woken when the socket has room, as for a plain
//! socket) and remembers how much the session took; the caller, which
//! sees nothing written, offers the same bytes again, and is then told
//! they went. The caller must offer the same bytes again after
//! `Pending`, as every writer that retries does (`write_all`, and kvik's
//! connection, which keeps unsent replies where they are); a shorter
//! offer is counted as written up to its length only.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A stream (a TLS stream) whose writes complete only once they are on
/// the underlying socket; see the module documentation.
#[derive(Debug)]
pub struct WriteThrough<S> {
    inner: S,
    /// Plaintext bytes the inner stream took whose records are not all
    /// sent yet.
    owed: usize,
}

impl<S> WriteThrough<S> {
    /// Wrap `inner`.
    pub fn new(inner: S) -> Self {
        WriteThrough { inner, owed: 0 }
    }

    /// The wrapped stream.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The wrapped stream, mutably.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for WriteThrough<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for WriteThrough<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.owed == 0 {
            if bytes.is_empty() {
                return Poll::Ready(Ok(0));
            }
            match Pin::new(&mut this.inner).poll_write(cx, bytes) {
                Poll::Ready(Ok(0)) => return Poll::Ready(Ok(0)),
                Poll::Ready(Ok(n)) => this.owed = n,
                other => return other,
            }
        }
        match Pin::new(&mut this.inner).poll_flush(cx) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => {
                this.owed = 0;
                Poll::Ready(Err(e))
            }
            Poll::Ready(Ok(())) => {
                let sent = std::mem::take(&mut this.owed).min(bytes.len());
                Poll::Ready(Ok(sent))
            }
        }
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
    use std::collections::VecDeque;

    /// A stream that buffers what it is given and sends it only when
    /// flushed, one byte per flush poll, as a TLS session behind a slow socket.
    #[derive(Default)]
    struct Buffering {
        queued: VecDeque<u8>,
        sent: Vec<u8>,
        flush_polls: usize,
    }

    impl AsyncRead for Buffering {
        fn poll_read(self: Pin<&mut Self>, _: &mut Context<'_>, _: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Buffering {
        fn poll_write(mut self: Pin<&mut Self>, _: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
            self.queued.extend(bytes);
            Poll::Ready(Ok(bytes.len()))
        }

        fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            self.flush_polls += 1;
            if let Some(b) = self.queued.pop_front() {
                self.sent.push(b);
            }
            if self.queued.is_empty() {
                Poll::Ready(Ok(()))
            } else {
                cx.waker().wake_by_ref();
                Poll::Pending
            }
        }

        fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    #[test]
    fn a_write_completes_only_once_everything_it_took_is_sent() {
        let runtime = tokio::runtime::Builder::new_current_thread().build().expect("runtime");
        runtime.block_on(async {
            let mut s = WriteThrough::new(Buffering::default());
            let waker = std::task::Waker::noop();
            let mut cx = Context::from_waker(waker);
            assert!(Pin::new(&mut s).poll_write(&mut cx, b"abc").is_pending());
            assert_eq!(s.get_ref().sent, b"a");
            assert!(Pin::new(&mut s).poll_write(&mut cx, b"abc").is_pending());
            match Pin::new(&mut s).poll_write(&mut cx, b"abc") {
                Poll::Ready(Ok(3)) => {}
                other => panic!("expected the 3 bytes reported once sent, got {other:?}"),
            }
            assert_eq!(s.get_ref().sent, b"abc");
            tokio::io::AsyncWriteExt::write_all(&mut s, b"hello").await.expect("write_all");
            assert_eq!(s.get_ref().sent, b"abchello");
        });
    }
}
