//! [`Connection`]: one logical client on one stream, owned by one task.
//!
//! Requests are written and replies read in order by the caller itself: no
//! background task, no locks, one output buffer and one input buffer reused
//! for the connection's life. This is the layer the CLI and the benchmark use
//! directly; [`Client`](crate::Client) adds reconnection and
//! [`MuxConnection`](crate::MuxConnection) shares one RESPB stream between tasks.

use std::collections::VecDeque;
use std::time::Duration;

use kvik_protocol::respb::handshake;
use kvik_protocol::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::codec::{write_request, ReplyReader};
use crate::error::{Error, Result};
use crate::mux::router::subscription_replies;
use crate::options::{Options, Protocol};
use crate::pipeline::Pipeline;
use crate::stream::Stream;

/// The mux id a plain (non-mux) RESPB connection uses for everything.
const MUX: u16 = 0;

/// A connection to the server, speaking the protocol its [`Options`] name.
///
/// After a transport failure, a protocol error or a request timeout the
/// connection is *broken* (a late reply would otherwise be taken for the next
/// request's) and every further call fails with [`Error::Broken`].
///
/// Over RESP3 and RESPB, push messages (pub/sub, invalidations) that arrive
/// while a command waits for its reply are set aside, up to
/// `Options::push_capacity` (older ones are dropped and counted beyond
/// that), and returned by [`read_reply`](Self::read_reply) first. RESP2 has
/// no push type: there a subscribed connection reads messages as replies.
#[derive(Debug)]
pub struct Connection {
    stream: Stream,
    reader: ReplyReader,
    out: Vec<u8>,
    protocol: Protocol,
    request_timeout: Option<Duration>,
    broken: Option<String>,
    pushes: VecDeque<Value>,
    push_capacity: usize,
    dropped_pushes: u64,
}

impl Connection {
    /// Connect, run the handshake or `HELLO 3`, then `AUTH` and `SELECT` as
    /// the options ask, all within `opts.connect_timeout`.
    pub async fn connect(opts: &Options) -> Result<Connection> {
        match tokio::time::timeout(opts.connect_timeout, Connection::open(opts)).await {
            Ok(result) => result,
            Err(_) => Err(Error::ConnectTimeout(opts.connect_timeout)),
        }
    }

    async fn open(opts: &Options) -> Result<Connection> {
        let stream = Stream::connect_with(&opts.address, opts.tls.as_ref()).await?;
        let mut conn = Connection {
            stream,
            reader: ReplyReader::new(Protocol::Resp2, opts),
            out: Vec::with_capacity(4096),
            protocol: opts.protocol,
            // Setup runs under the connect timeout instead.
            request_timeout: None,
            broken: None,
            pushes: VecDeque::new(),
            push_capacity: opts.push_capacity.max(1),
            dropped_pushes: 0,
        };
        if opts.protocol == Protocol::Respb {
            conn.respb_handshake().await?;
        }
        for (step, args) in opts.setup_commands(opts.protocol) {
            if let Value::Error(e) = conn.command(&args).await? {
                return Err(Error::Setup { step, message: String::from_utf8_lossy(&e).into_owned() });
            }
        }
        conn.request_timeout = opts.request_timeout;
        Ok(conn)
    }

    /// Send `D3 C1 01 00` and check the server's four-byte answer.
    async fn respb_handshake(&mut self) -> Result<()> {
        self.stream.write_all(&handshake::client_hello(kvik_protocol::respb::VERSION)).await?;
        while self.reader.buffered().len() < handshake::LEN {
            self.reader.fill(&mut self.stream).await.map_err(|e| match e {
                Error::ConnectionLost(_) => Error::Handshake([0; 4]),
                e => e,
            })?;
        }
        let mut answer = [0u8; handshake::LEN];
        answer.copy_from_slice(&self.reader.buffered()[..handshake::LEN]);
        if !handshake::answer_accepts(&answer) {
            return Err(Error::Handshake(answer));
        }
        self.reader.consume(handshake::LEN);
        self.reader.set_respb(true);
        Ok(())
    }

    /// The stream and the reader (with anything already buffered), for the
    /// mux connection, which splits them between its two tasks.
    pub(crate) fn into_parts(self) -> (Stream, ReplyReader) {
        (self.stream, self.reader)
    }

    /// The protocol this connection speaks.
    pub fn protocol(&self) -> Protocol {
        self.protocol
    }

    /// Why the connection is unusable, if it is.
    pub fn broken(&self) -> Option<&str> {
        self.broken.as_deref()
    }

    /// Send one command (name first) and return its reply. An error reply is
    /// `Ok(Value::Error(..))`.
    ///
    /// Works with `&[&[u8]]`, `&[&str]`, `&[Vec<u8>]`, `&[String]`, ….
    /// A subscribe command returns its first confirmation; further
    /// confirmations and the messages come from [`read_reply`](Self::read_reply).
    pub async fn command<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<Value> {
        self.check()?;
        self.out.clear();
        write_request(self.protocol, args, MUX, &mut self.out);
        let subscribing = subscription_replies(args).is_some();
        self.guarded(async |c: &mut Connection| {
            c.stream.write_all(&c.out).await?;
            c.read_answer(subscribing).await
        })
        .await
    }

    /// `command` for string arguments, e.g. `conn.command_str(&["SET", "k", "v"])`.
    pub async fn command_str(&mut self, args: &[&str]) -> Result<Value> {
        self.command(args).await
    }

    /// Send one command without waiting for a reply (pub/sub, `MONITOR`, or a
    /// hand-made pipeline); read what comes back with [`read_reply`](Self::read_reply).
    pub async fn send<A: AsRef<[u8]>>(&mut self, args: &[A]) -> Result<()> {
        self.check()?;
        self.out.clear();
        write_request(self.protocol, args, MUX, &mut self.out);
        self.guarded(async |c: &mut Connection| Ok(c.stream.write_all(&c.out).await?)).await
    }

    /// The next push message set aside while waiting for a reply, or else
    /// the next reply or push message from the server.
    pub async fn read_reply(&mut self) -> Result<Value> {
        if let Some(push) = self.pushes.pop_front() {
            return Ok(push);
        }
        self.check()?;
        self.guarded(async |c: &mut Connection| c.read_one().await).await
    }

    /// Push messages set aside and not yet read.
    pub fn pending_pushes(&self) -> usize {
        self.pushes.len()
    }

    /// Push messages dropped because more than `push_capacity` were set aside.
    pub fn dropped_pushes(&self) -> u64 {
        self.dropped_pushes
    }

    /// Send every command of `pipeline` in one write and append its replies,
    /// in order, to `replies` (which the caller may reuse between calls).
    pub async fn pipeline(&mut self, pipeline: &Pipeline, replies: &mut Vec<Value>) -> Result<()> {
        self.check_pipeline(pipeline)?;
        replies.reserve(pipeline.len());
        self.guarded(async |c: &mut Connection| {
            c.stream.write_all(pipeline.bytes()).await?;
            for _ in 0..pipeline.len() {
                replies.push(c.read_answer(false).await?);
            }
            Ok(())
        })
        .await
    }

    /// Like [`pipeline`](Self::pipeline) but only counts the replies, without
    /// building them (over RESPB they are decoded and dropped), and returns
    /// how many were error replies. For load generators; a push message
    /// arriving meanwhile would be counted as a reply, so use it on
    /// connections that do not subscribe.
    pub async fn pipeline_count_errors(&mut self, pipeline: &Pipeline) -> Result<usize> {
        self.check_pipeline(pipeline)?;
        self.guarded(async |c: &mut Connection| {
            c.stream.write_all(pipeline.bytes()).await?;
            let mut errors = 0;
            for _ in 0..pipeline.len() {
                loop {
                    if let Some(is_error) = c.reader.try_skip()? {
                        errors += usize::from(is_error);
                        break;
                    }
                    c.reader.fill(&mut c.stream).await?;
                }
            }
            Ok(errors)
        })
        .await
    }

    fn check_pipeline(&self, pipeline: &Pipeline) -> Result<()> {
        self.check()?;
        if pipeline.protocol() != self.protocol {
            return Err(Error::Usage("the pipeline was built for another protocol than this connection's"));
        }
        Ok(())
    }

    /// The reply to a command: the next value that is not a push (pushes
    /// are set aside), or for a subscribe command its first confirmation.
    async fn read_answer(&mut self, subscribing: bool) -> Result<Value> {
        loop {
            let value = self.read_one().await?;
            if subscribing || self.protocol == Protocol::Resp2 || !matches!(value, Value::Push(_)) {
                return Ok(value);
            }
            if self.pushes.len() >= self.push_capacity {
                self.pushes.pop_front();
                self.dropped_pushes += 1;
            }
            self.pushes.push_back(value);
        }
    }

    async fn read_one(&mut self) -> Result<Value> {
        let (mux, value) = self.reader.next(&mut self.stream).await?;
        if mux != MUX {
            return Err(Error::Protocol(format!("reply on mux {mux}, expected {MUX}")));
        }
        Ok(value)
    }

    fn check(&self) -> Result<()> {
        match &self.broken {
            Some(why) => Err(Error::Broken(why.clone())),
            None => Ok(()),
        }
    }

    /// Run `op` under the request timeout; any connection-level failure
    /// marks the connection broken.
    async fn guarded<T, F>(&mut self, op: F) -> Result<T>
    where
        F: AsyncFnOnce(&mut Connection) -> Result<T>,
    {
        let timeout = self.request_timeout;
        let result = match timeout {
            Some(d) => match tokio::time::timeout(d, op(self)).await {
                Ok(r) => r,
                Err(_) => Err(Error::Timeout(d)),
            },
            None => op(self).await,
        };
        if let Err(e) = &result {
            if e.is_connection_error() {
                self.broken = Some(e.to_string());
            }
        }
        result
    }

    /// Close the connection politely (shut down the write side).
    pub async fn close(mut self) -> Result<()> {
        self.stream.shutdown().await?;
        // Drain until the server closes, briefly, so it sees a clean end.
        let mut scratch = [0u8; 512];
        let _ = tokio::time::timeout(Duration::from_millis(100), async {
            while matches!(self.stream.read(&mut scratch).await, Ok(n) if n > 0) {}
        })
        .await;
        Ok(())
    }
}
