//! [`MuxConnection`] and [`Channel`]: many logical clients on one RESPB stream.
//!
//! A RESPB frame carries a 16-bit mux id and the server keeps separate client
//! state (database, auth, MULTI, subscriptions) per id, answering each id's
//! requests in order. The client mirrors that:
//!
//! - one **writer task** owns the write half. Callers encode their frame in
//!   their own task and queue it; the writer records the caller's reply slot
//!   in the channel's queue *at the moment it takes the frame*, then batches
//!   whatever else is queued into one write. Recording in write order is what
//!   makes the per-channel FIFO of reply slots match the order the server sees.
//! - one **reader task** owns the read half, decodes frames and routes each by
//!   its mux id: a reply completes the oldest slot of that channel, a push goes
//!   to the channel's push stream. Channels never wait on each other's replies.
//! - `MUX_CREATE` goes on the new channel's own mux (nothing else is queued
//!   there yet), `MUX_CLOSE` on mux id 0, the connection's **control
//!   channel**, so its `OK` never mixes with the closing channel's replies (a
//!   closed channel's cancelled `BLPOP` gets no reply; its slot is failed when
//!   the close is acknowledged). Channels use ids 1–65535.
//!
//! When either task fails, the connection is dead: every pending request
//! fails with [`Error::ConnectionLost`], push streams end, and new requests
//! fail at once. Reconnecting is the caller's choice (open a new `MuxConnection`).

pub(crate) mod router;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use kvik_protocol::respb::{control_frame, MUX_CLOSE, MUX_CREATE};
use kvik_protocol::Value;
use tokio::io::AsyncWriteExt;
use tokio::sync::{mpsc, oneshot};
use tokio::task::AbortHandle;

use crate::codec::{write_request, ReplyReader};
use crate::connection::Connection;
use crate::error::{Error, Result};
use crate::options::{Options, Protocol};
use crate::stream::{ReadHalf, WriteHalf};
use router::{subscription_replies, Control, Outgoing, Router, Slot};

/// The writer sends once this many bytes are batched, even if more are queued.
const WRITE_BATCH: usize = 256 * 1024;
/// A batch buffer that grew past this (one huge request) is not kept.
const KEEP_BUFFER: usize = 4 * 1024 * 1024;

/// A RESPB connection shared by many tasks. Cloning is cheap (a handle);
/// the connection closes when the last handle and the last [`Channel`] are gone.
#[derive(Clone)]
pub struct MuxConnection {
    shared: Arc<Shared>,
}

struct Shared {
    router: Arc<Mutex<Router>>,
    tx: mpsc::Sender<Outgoing>,
    reader: AbortHandle,
    setup: Vec<(&'static str, Vec<Vec<u8>>)>,
    open_timeout: Duration,
    request_timeout: Option<Duration>,
    max_channels: usize,
    push_capacity: usize,
}

impl Drop for Shared {
    fn drop(&mut self) {
        // The writer ends when `tx` goes; the reader may be parked on a read.
        self.reader.abort();
    }
}

fn lock(router: &Mutex<Router>) -> MutexGuard<'_, Router> {
    // A panic while holding the lock cannot leave the router half-updated in
    // a way that matters more than losing the connection would.
    router.lock().unwrap_or_else(|e| e.into_inner())
}

impl MuxConnection {
    /// Connect and run the RESPB handshake (within `opts.connect_timeout`),
    /// then start the writer and reader tasks on the current tokio runtime.
    ///
    /// `opts.protocol` is ignored (this is always RESPB); `AUTH` and `SELECT`
    /// from the options are sent on every channel as it opens, since each
    /// channel is a fresh logical client.
    pub async fn connect(opts: &Options) -> Result<MuxConnection> {
        let mut bare = opts.clone().with_protocol(Protocol::Respb);
        bare.password = None;
        bare.db = None;
        bare.request_timeout = None;
        let (stream, reader) = Connection::connect(&bare).await?.into_parts();
        let (read_half, write_half) = stream.into_split();
        let router = Arc::new(Mutex::new(Router::default()));
        let (tx, rx) = mpsc::channel(opts.writer_queue.max(1));
        tokio::spawn(write_loop(rx, write_half, router.clone()));
        let reader_task = tokio::spawn(read_loop(read_half, reader, router.clone()));
        Ok(MuxConnection {
            shared: Arc::new(Shared {
                router,
                tx,
                reader: reader_task.abort_handle(),
                setup: opts.setup_commands(Protocol::Respb),
                open_timeout: opts.connect_timeout,
                request_timeout: opts.request_timeout,
                max_channels: opts.max_channels.min(usize::from(u16::MAX)),
                push_capacity: opts.push_capacity.max(1),
            }),
        })
    }

    /// Open a new channel: `MUX_CREATE`, then the options' `AUTH`/`SELECT`.
    pub async fn channel(&self) -> Result<Channel> {
        let timeout = self.shared.open_timeout;
        match tokio::time::timeout(timeout, self.open_channel()).await {
            Ok(r) => r,
            Err(_) => Err(Error::Timeout(timeout)),
        }
    }

    async fn open_channel(&self) -> Result<Channel> {
        let (id, pushes, dropped) = {
            let mut router = lock(&self.shared.router);
            router.check_alive()?;
            router.allocate(self.shared.max_channels, self.shared.push_capacity)?
        };
        // From here on, dropping `channel` (an error below, or the caller's
        // timeout) sends MUX_CLOSE and frees the id.
        let channel = Channel { id, shared: self.shared.clone(), pushes, dropped, open: true };
        // MUX_CREATE travels on the new channel's own mux, so its answer comes
        // there whether a server replies on the frame's mux (the spec) or on
        // the target (as "an error on that channel" could also be read).
        let (reply, ack) = oneshot::channel();
        let mut frame = Vec::with_capacity(6);
        control_frame(MUX_CREATE, id, id, &mut frame);
        self.shared.enqueue(Outgoing::Request { mux: id, frame, slot: Slot::Reply(reply) }).await?;
        match ack.await.unwrap_or_else(|_| Err(self.shared.lost())) {
            Ok(Value::Error(e)) => return Err(Error::Rejected(String::from_utf8_lossy(&e).into_owned())),
            Ok(_) => {}
            Err(e) => return Err(e),
        }
        for (step, args) in &self.shared.setup {
            if let Value::Error(e) = channel.command(args).await? {
                return Err(Error::Setup { step, message: String::from_utf8_lossy(&e).into_owned() });
            }
        }
        Ok(channel)
    }

    /// True once the connection has failed or been closed.
    pub fn is_closed(&self) -> bool {
        lock(&self.shared.router).dead().is_some() || self.shared.tx.is_closed()
    }

    /// Channels currently open (including ones whose close is not yet acknowledged).
    pub fn open_channels(&self) -> usize {
        lock(&self.shared.router).open_channels()
    }
}

impl Shared {
    /// Queue `msg` for the writer; fails at once when the connection is dead.
    async fn enqueue(&self, msg: Outgoing) -> Result<()> {
        lock(&self.router).check_alive()?;
        self.tx.send(msg).await.map_err(|_| self.lost())
    }

    fn lost(&self) -> Error {
        let why = lock(&self.router).dead().unwrap_or("the connection's tasks stopped").to_string();
        Error::ConnectionLost(why)
    }
}

/// One logical client on a [`MuxConnection`], with its own mux id and server
/// state (database, auth, transaction, subscriptions).
///
/// Requests may be issued from several tasks at once through `&Channel`; each
/// gets its own reply, in the order the writer sent them. Push messages
/// (pub/sub) arrive on [`next_push`](Self::next_push). Dropping the channel
/// closes it on the server (`MUX_CLOSE`).
pub struct Channel {
    id: u16,
    shared: Arc<Shared>,
    pushes: mpsc::Receiver<Value>,
    dropped: Arc<AtomicU64>,
    open: bool,
}

impl std::fmt::Debug for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Channel").field("id", &self.id).finish()
    }
}

impl Channel {
    /// This channel's mux id (1–65535).
    pub fn id(&self) -> u16 {
        self.id
    }

    /// Send one command (name first) and return its reply; an error reply is
    /// `Ok(Value::Error(..))`.
    ///
    /// Subscribe commands return their first confirmation; every confirmation
    /// and every message also arrives on [`next_push`](Self::next_push).
    pub async fn command<A: AsRef<[u8]>>(&self, args: &[A]) -> Result<Value> {
        let mut frame = Vec::with_capacity(64);
        write_request(Protocol::Respb, args, self.id, &mut frame);
        let confirmations = subscription_replies(args);
        let request = async {
            let (reply, slot) = oneshot::channel();
            let slot_kind = match confirmations {
                Some(count) => Slot::Subscription { reply: Some(reply), remaining: count },
                None => Slot::Reply(reply),
            };
            self.shared.enqueue(Outgoing::Request { mux: self.id, frame, slot: slot_kind }).await?;
            slot.await.unwrap_or_else(|_| Err(self.shared.lost()))
        };
        match self.shared.request_timeout {
            Some(d) => tokio::time::timeout(d, request).await.unwrap_or(Err(Error::Timeout(d))),
            None => request.await,
        }
    }

    /// `command` for string arguments.
    pub async fn command_str(&self, args: &[&str]) -> Result<Value> {
        self.command(args).await
    }

    /// Send several commands in one write on this channel and return their
    /// replies in order (the request timeout covers the whole batch).
    /// Subscribe commands are not allowed here.
    pub async fn pipeline<C, A>(&self, commands: &[C]) -> Result<Vec<Value>>
    where
        C: AsRef<[A]>,
        A: AsRef<[u8]>,
    {
        if commands.iter().any(|c| subscription_replies(c.as_ref()).is_some()) {
            return Err(Error::Usage("subscribe commands cannot be pipelined on a channel; use command()"));
        }
        let mut frames = Vec::with_capacity(commands.len() * 32);
        let mut slots = Vec::with_capacity(commands.len());
        let mut replies = Vec::with_capacity(commands.len());
        for c in commands {
            write_request(Protocol::Respb, c.as_ref(), self.id, &mut frames);
            let (reply, slot) = oneshot::channel();
            slots.push(Slot::Reply(reply));
            replies.push(slot);
        }
        let request = async {
            self.shared.enqueue(Outgoing::Batch { mux: self.id, frames, slots }).await?;
            let mut values = Vec::with_capacity(replies.len());
            for slot in replies {
                values.push(slot.await.unwrap_or_else(|_| Err(self.shared.lost()))?);
            }
            Ok(values)
        };
        match self.shared.request_timeout {
            Some(d) => tokio::time::timeout(d, request).await.unwrap_or(Err(Error::Timeout(d))),
            None => request.await,
        }
    }

    /// The next push message for this channel; `None` once the channel or
    /// the connection is closed.
    pub async fn next_push(&mut self) -> Option<Value> {
        self.pushes.recv().await
    }

    /// A push message if one is already waiting.
    pub fn try_next_push(&mut self) -> Option<Value> {
        self.pushes.try_recv().ok()
    }

    /// Push messages dropped because this channel's push buffer was full.
    pub fn dropped_pushes(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Close the channel on the server and wait for the acknowledgement;
    /// requests still pending on it fail with [`Error::ChannelClosed`].
    pub async fn close(mut self) -> Result<()> {
        self.open = false;
        let (reply, ack) = oneshot::channel();
        let msg = close_message(self.id, Some(reply));
        self.shared.enqueue(msg).await?;
        ack.await.unwrap_or_else(|_| Err(self.shared.lost())).map(|_| ())
    }
}

fn close_message(id: u16, reply: Option<oneshot::Sender<Result<Value>>>) -> Outgoing {
    let mut frame = Vec::with_capacity(6);
    control_frame(MUX_CLOSE, router::CONTROL_MUX, id, &mut frame);
    Outgoing::Control { frame, ack: Control::Close { target: id, reply } }
}

impl Drop for Channel {
    fn drop(&mut self) {
        if !self.open {
            return;
        }
        match self.shared.tx.try_send(close_message(self.id, None)) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(msg)) => {
                // The queue is busy: hand the close to a task rather than block.
                let tx = self.shared.tx.clone();
                if let Ok(handle) = tokio::runtime::Handle::try_current() {
                    handle.spawn(async move {
                        let _ = tx.send(msg).await;
                    });
                }
            }
            // The writer is gone: the connection and all its channels are too.
            Err(mpsc::error::TrySendError::Closed(_)) => {}
        }
    }
}

/// The writer task: records each request's reply slot, batches frames, writes.
async fn write_loop(mut rx: mpsc::Receiver<Outgoing>, mut out: WriteHalf, router: Arc<Mutex<Router>>) {
    let mut batch = Vec::with_capacity(64 * 1024);
    while let Some(first) = rx.recv().await {
        batch.clear();
        {
            let mut r = lock(&router);
            r.accept(first, &mut batch);
            while batch.len() < WRITE_BATCH {
                match rx.try_recv() {
                    Ok(msg) => r.accept(msg, &mut batch),
                    Err(_) => break,
                }
            }
        }
        if batch.is_empty() {
            continue;
        }
        if let Err(e) = out.write_all(&batch).await {
            lock(&router).fail_all(format!("write failed: {e}"));
        }
        if batch.capacity() > KEEP_BUFFER {
            batch = Vec::with_capacity(64 * 1024);
        }
    }
    let _ = out.shutdown().await;
}

/// The reader task: decodes frames and routes them by mux id until the
/// stream ends or breaks.
async fn read_loop(mut input: ReadHalf, mut reader: ReplyReader, router: Arc<Mutex<Router>>) {
    loop {
        match reader.next(&mut input).await {
            Ok((mux, value)) => {
                let mut r = lock(&router);
                r.deliver(mux, value);
                // Route everything already buffered under the same lock.
                loop {
                    match reader.try_next() {
                        Ok(Some((mux, value))) => r.deliver(mux, value),
                        Ok(None) => break,
                        Err(e) => {
                            r.fail_all(e.to_string());
                            return;
                        }
                    }
                }
            }
            Err(e) => {
                lock(&router).fail_all(e.to_string());
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests;
