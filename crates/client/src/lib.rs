//! The Rust client for kvik (and any Redis-compatible server): RESP2, RESP3
//! and RESPB/1, pipelining, mux channels and reconnection. `kvik-cli` and
//! `kvik-benchmark` are built on it.
//!
//! # Layers
//!
//! Bottom up, each layer using only the ones below it:
//!
//! 1. **Codecs** live in `kvik-protocol`, not here: RESP request writing, the
//!    RESP2/RESP3 reply parser, the RESPB request encoder, reply decoder and
//!    handshake, and [`Value`]. This crate only moves bytes (`codec`), so the
//!    server, the client, the CLI and the fuzzers all agree on one
//!    implementation of the wire formats.
//! 2. [`Connection`]: one stream, one logical client, owned by one task.
//!    The caller writes and reads in order itself; no background task, no
//!    locks, one output and one input buffer for the connection's life,
//!    bounded by [`Options::max_reply_bytes`]. [`Pipeline`] batches commands
//!    into one write. This is the fastest path and what the benchmark uses.
//! 3. [`MuxConnection`] / [`Channel`]: many logical clients on one RESPB
//!    stream, shared by any number of tasks. RESPB frames name their channel
//!    (mux id) and carry no request ids, so correctness rests on order: one
//!    **writer task** owns the write half and records each request's reply
//!    slot in its channel's FIFO at the moment it writes the frame, and one
//!    **reader task** routes each reply by mux id to the oldest slot of that
//!    channel. A single writer is what makes "order written" well defined
//!    across tasks (and lets it batch frames from many tasks into one write);
//!    routing by mux id is what keeps a slow channel (a `BLPOP`, a huge reply)
//!    from holding back the others' callers. Push frames go to a per-channel
//!    stream.
//! 4. [`Client`]: a `Connection` that reconnects with bounded backoff after
//!    the connection breaks. The request in flight fails with a clear error
//!    (it may or may not have run, so it is never silently retried); the next
//!    request gets a new connection.
//!
//! Any of these runs over TLS when [`Options::with_tls`] is given a
//! [`ClientTls`], built once from redis-cli's options ([`ClientTlsOptions`]:
//! CA file or directory, client certificate and key, SNI, cipher lists,
//! `insecure`) and shared by every connection; the plain TCP path is the
//! same as without it.
//!
//! Error replies from the server are values ([`Value::Error`]), never Rust
//! errors; [`Error`] is for transport, protocol and limit failures. Nothing
//! the server sends can make the client panic: every length is checked
//! against the limits before anything is allocated.
//!
//! ```no_run
//! # async fn demo() -> kvik_client::Result<()> {
//! use kvik_client::{Connection, Options, Protocol};
//! let opts = Options::tcp("127.0.0.1:6379").with_protocol(Protocol::Respb);
//! let mut conn = Connection::connect(&opts).await?;
//! conn.command(&["SET", "greeting", "hello"]).await?;
//! let value = conn.command(&["GET", "greeting"]).await?;
//! # let _ = value; Ok(()) }
//! ```

#![forbid(unsafe_code)]

mod client;
mod codec;
mod connection;
mod error;
mod mux;
mod options;
mod pipeline;
mod stream;

pub use client::{Backoff, Client};
pub use connection::Connection;
pub use error::{Error, Result};
pub use kvik_protocol::Value;
pub use kvik_tls::client::{ClientTls, ClientTlsOptions};
pub use mux::{Channel, MuxConnection};
pub use options::{Address, Options, Protocol};
pub use pipeline::Pipeline;
pub use stream::{ReadHalf, Stream, WriteHalf};
