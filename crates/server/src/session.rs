//! The state of one logical client.
//!
//! A RESP connection is one session; a RESPB connection holds one session per
//! mux channel. Commands see only a [`Session`], so per-client state (protocol,
//! name, and later the selected database, MULTI and subscriptions) works the
//! same way on both without special cases.

use std::sync::atomic::{AtomicU64, Ordering};

use kvik_protocol::resp::writer::Protocol;

/// Hands out client ids, unique for the life of the server.
///
/// Redis numbers clients from 1 upwards and never reuses an id; `HELLO`,
/// `CLIENT ID` and `CLIENT KILL ID` rely on that, so kvik does the same.
#[derive(Debug)]
pub struct ClientIds {
    next: AtomicU64,
}

impl Default for ClientIds {
    fn default() -> Self {
        ClientIds { next: AtomicU64::new(1) }
    }
}

impl ClientIds {
    /// The next unused id.
    pub fn next_id(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }
}

/// One logical client.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// Client id, as `HELLO` reports it.
    pub id: u64,
    /// The RESP dialect replies are written in; `HELLO` changes it.
    pub protocol: Protocol,
    /// Name set by `HELLO ... SETNAME` (none until then).
    pub name: Option<Vec<u8>>,
    /// The database `SELECT` chose.
    pub db: usize,
    /// Whether the client may run commands while `requirepass` is set: it
    /// sent the password, or it connected while no password was required
    /// (as in Redis, setting a password later does not lock out clients
    /// already connected).
    pub authenticated: bool,
}

impl Session {
    /// A fresh client: RESP2, no name, not authenticated.
    pub fn new(id: u64) -> Self {
        Session { id, protocol: Protocol::Resp2, name: None, db: 0, authenticated: false }
    }
}
