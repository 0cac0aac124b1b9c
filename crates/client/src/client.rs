//! [`Client`]: a [`Connection`] that comes back after the server goes away.
//!
//! Requests go through one connection at a time (callers queue on an async
//! lock). When a request fails because the connection broke (I/O error,
//! closed stream, timeout, protocol error), that request fails with the
//! error: the client cannot know whether the command ran, so it never
//! retries it. The broken connection is dropped, and the next request opens a
//! new one, retrying the connect with bounded exponential backoff.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kvik_protocol::Value;
use tokio::sync::Mutex;

use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::options::Options;
use crate::pipeline::Pipeline;

/// How hard to try when (re)connecting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Backoff {
    /// Wait after the first failed attempt.
    pub initial: Duration,
    /// Longest wait between attempts (the wait doubles up to this).
    pub max: Duration,
    /// Attempts before giving up with [`Error::ReconnectFailed`].
    pub attempts: u32,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff { initial: Duration::from_millis(20), max: Duration::from_secs(1), attempts: 10 }
    }
}

impl Backoff {
    /// The wait after failed attempt number `attempt` (1-based).
    pub fn delay(&self, attempt: u32) -> Duration {
        let factor = 1u32.checked_shl(attempt.saturating_sub(1)).unwrap_or(u32::MAX);
        self.initial.saturating_mul(factor).min(self.max)
    }
}

/// A self-healing connection: see the module docs.
#[derive(Debug)]
pub struct Client {
    opts: Options,
    backoff: Backoff,
    conn: Mutex<Option<Connection>>,
    connects: AtomicU64,
}

impl Client {
    /// A client that connects on its first request.
    pub fn new(opts: Options) -> Client {
        Client { opts, backoff: Backoff::default(), conn: Mutex::new(None), connects: AtomicU64::new(0) }
    }

    /// A client that connects now (with backoff), so a wrong address or
    /// password shows at once.
    pub async fn connect(opts: Options) -> Result<Client> {
        let client = Client::new(opts);
        let conn = client.reconnect().await?;
        *client.conn.lock().await = Some(conn);
        Ok(client)
    }

    /// Use `backoff` for (re)connecting.
    pub fn with_backoff(mut self, backoff: Backoff) -> Client {
        self.backoff = backoff;
        self
    }

    /// The options connections are opened with.
    pub fn options(&self) -> &Options {
        &self.opts
    }

    /// Connections opened after the first one.
    pub fn reconnects(&self) -> u64 {
        self.connects.load(Ordering::Relaxed).saturating_sub(1)
    }

    /// Send one command and return its reply (see [`Connection::command`]).
    pub async fn command<A: AsRef<[u8]>>(&self, args: &[A]) -> Result<Value> {
        self.run(async |c: &mut Connection| c.command(args).await).await
    }

    /// `command` for string arguments.
    pub async fn command_str(&self, args: &[&str]) -> Result<Value> {
        self.command(args).await
    }

    /// Run a pipeline (see [`Connection::pipeline`]).
    pub async fn pipeline(&self, pipeline: &Pipeline, replies: &mut Vec<Value>) -> Result<()> {
        self.run(async |c: &mut Connection| c.pipeline(pipeline, replies).await).await
    }

    /// Run `op` on a healthy connection, opening one if needed; drop the
    /// connection if `op` broke it.
    async fn run<T, F>(&self, op: F) -> Result<T>
    where
        F: AsyncFnOnce(&mut Connection) -> Result<T>,
    {
        let mut slot = self.conn.lock().await;
        let conn = match slot.take().filter(|c| c.broken().is_none()) {
            Some(c) => c,
            None => self.reconnect().await?,
        };
        let conn = slot.insert(conn);
        let result = op(conn).await;
        if matches!(&result, Err(e) if e.is_connection_error()) {
            *slot = None;
        }
        result
    }

    /// Connect, retrying transient failures with backoff. A setup error
    /// (wrong password, bad database) is not transient and returns at once.
    async fn reconnect(&self) -> Result<Connection> {
        let mut attempt = 0;
        loop {
            attempt += 1;
            match Connection::connect(&self.opts).await {
                Ok(c) => {
                    self.connects.fetch_add(1, Ordering::Relaxed);
                    return Ok(c);
                }
                Err(e @ (Error::Setup { .. } | Error::Handshake(_))) => return Err(e),
                Err(e) if attempt >= self.backoff.attempts.max(1) => {
                    return Err(Error::ReconnectFailed { attempts: attempt, last: Box::new(e) });
                }
                Err(_) => tokio::time::sleep(self.backoff.delay(attempt)).await,
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let b = Backoff { initial: Duration::from_millis(10), max: Duration::from_millis(50), attempts: 5 };
        let waits: Vec<u128> = (1..=5).map(|a| b.delay(a).as_millis()).collect();
        assert_eq!(waits, [10, 20, 40, 50, 50]);
        assert_eq!(b.delay(200), Duration::from_millis(50));
    }

    #[tokio::test]
    async fn gives_up_after_the_configured_attempts() {
        // A port that was just free: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let opts = Options::tcp(format!("127.0.0.1:{port}"));
        let backoff = Backoff { initial: Duration::from_millis(1), max: Duration::from_millis(2), attempts: 3 };
        let client = Client::new(opts).with_backoff(backoff);
        let err = client.command(&["PING"]).await.unwrap_err();
        assert!(matches!(&err, Error::ReconnectFailed { attempts: 3, .. }), "{err}");
    }
}
