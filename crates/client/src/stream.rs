//! [`Stream`]: a TCP, TLS-over-TCP or unix-socket byte stream behind one
//! type, so the connection code above it is written once. TLS is a
//! variant of its own, so a plain connection pays nothing for it but the
//! match it already had.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{tcp, unix, TcpStream, UnixStream};

use kvik_tls::client::{ClientStream as TlsStream, ClientTls};

use crate::error::{Error, Result};
use crate::options::Address;

/// A connected byte stream to the server.
#[derive(Debug)]
pub enum Stream {
    /// Over TCP (Nagle off: requests are written whole, and latency matters).
    Tcp(TcpStream),
    /// Over a unix domain socket.
    Unix(UnixStream),
    /// TLS over TCP (`--tls`).
    Tls(Box<TlsStream>),
}

impl Stream {
    /// Connect to `address` (no timeout here: callers bound the whole setup).
    pub async fn connect(address: &Address) -> Result<Stream> {
        match address {
            Address::Tcp(addr) => {
                let s = TcpStream::connect(addr.as_str()).await.map_err(Error::Io)?;
                s.set_nodelay(true).map_err(Error::Io)?;
                Ok(Stream::Tcp(s))
            }
            Address::Unix(path) => Ok(Stream::Unix(UnixStream::connect(path).await.map_err(Error::Io)?)),
        }
    }

    /// Connect to `address`, over TLS when `tls` is given (TCP only).
    pub async fn connect_with(address: &Address, tls: Option<&ClientTls>) -> Result<Stream> {
        let Some(tls) = tls else { return Stream::connect(address).await };
        let Address::Tcp(addr) = address else {
            return Err(Error::Io(io::Error::new(
                io::ErrorKind::InvalidInput,
                "TLS over a unix socket is not supported",
            )));
        };
        let tcp = TcpStream::connect(addr.as_str()).await.map_err(Error::Io)?;
        tcp.set_nodelay(true).map_err(Error::Io)?;
        let host = addr.rsplit_once(':').map_or(addr.as_str(), |(host, _)| host);
        let stream = tls.connect(host, tcp).await.map_err(Error::Io)?;
        Ok(Stream::Tls(Box::new(stream)))
    }

    /// Split into halves that two tasks can own, without a lock between them.
    pub fn into_split(self) -> (ReadHalf, WriteHalf) {
        match self {
            Stream::Tcp(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Tcp(r), WriteHalf::Tcp(w))
            }
            Stream::Unix(s) => {
                let (r, w) = s.into_split();
                (ReadHalf::Unix(r), WriteHalf::Unix(w))
            }
            Stream::Tls(s) => {
                // One TLS session serves both directions: the halves share it behind a lock.
                let (r, w) = tokio::io::split(*s);
                (ReadHalf::Tls(r), WriteHalf::Tls(w))
            }
        }
    }
}

/// The reading half of a [`Stream`].
#[derive(Debug)]
pub enum ReadHalf {
    /// Of a TCP stream.
    Tcp(tcp::OwnedReadHalf),
    /// Of a unix socket.
    Unix(unix::OwnedReadHalf),
    /// Of a TLS stream.
    Tls(tokio::io::ReadHalf<TlsStream>),
}

/// The writing half of a [`Stream`]; dropping or shutting it down ends the
/// stream's write side.
#[derive(Debug)]
pub enum WriteHalf {
    /// Of a TCP stream.
    Tcp(tcp::OwnedWriteHalf),
    /// Of a unix socket.
    Unix(unix::OwnedWriteHalf),
    /// Of a TLS stream.
    Tls(tokio::io::WriteHalf<TlsStream>),
}

impl AsyncRead for ReadHalf {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            ReadHalf::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            ReadHalf::Unix(s) => Pin::new(s).poll_read(cx, buf),
            ReadHalf::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for WriteHalf {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            WriteHalf::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            WriteHalf::Unix(s) => Pin::new(s).poll_write(cx, buf),
            WriteHalf::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(s) => Pin::new(s).poll_flush(cx),
            WriteHalf::Unix(s) => Pin::new(s).poll_flush(cx),
            WriteHalf::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            WriteHalf::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            WriteHalf::Unix(s) => Pin::new(s).poll_shutdown(cx),
            WriteHalf::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Unix(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_flush(cx),
            Stream::Unix(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Tcp(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Unix(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s).poll_shutdown(cx),
        }
    }
}
