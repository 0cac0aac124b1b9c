//! One client connection, from its first byte to its close.
//!
//! The first byte decides the protocol for the life of the connection: RESP
//! text, RESPB frames, or a RESPB handshake followed by frames. After that
//! the loop is the same for both: read what the socket has, decode every
//! complete request in the buffer, run each one appending its reply to one
//! output buffer, and send that buffer with one write. Pipelined clients get
//! their whole batch answered with one system call each way, or two for a
//! large batch, whose first part's replies go out while the rest runs
//! ([`crate::net::reply_pacing`]).
//!
//! Output is bounded by backpressure: while the socket does not take a
//! client's replies, kvik neither reads nor runs that client's requests, so
//! what waits for a slow reader is at most [`FLUSH_AT`] bytes plus one reply,
//! however long its pipeline. Redis instead runs the whole pipeline and
//! buffers every reply, which is why it needs output limits to protect its
//! memory; kvik applies `client-output-buffer-limit`'s normal class on top
//! (replies accumulated for one write above the hard limit close the client,
//! unsent replies above the soft limit for its seconds too), and `timeout`
//! closes a client that takes nothing for that long, as Redis counts an
//! unread reply as no interaction.
//!
//! A blocking command that found nothing (BLPOP & co., see
//! [`crate::registries::blocking`]) makes the connection send the replies already due
//! and wait for its answer; requests pipelined behind it stay in the read
//! buffer until then. On RESPB a blocked channel waits alone: the
//! connection goes on serving its other channels (see [`crate::net::mux`]), and
//! it writes large replies while it goes on reading and running frames.
//!
//! A request that breaks the protocol cannot be skipped (there is no way to
//! find where the next one starts), so, as Redis does, the connection gets
//! the error text after the replies already due and is then closed.
//!
//! What the buffers hold is published to the client list (`CLIENT LIST`'s
//! `qbuf`, `rbs`, `obl`, `tot-mem`, …, and `mem_clients_normal`, which
//! `maxmemory` counts) whenever the connection stops to wait: for input, for
//! the socket to take replies, for a blocked command or a pause. Those are
//! the moments another client can see it at, and a few relaxed stores there
//! cost nothing next to the system call that follows; between them, while
//! commands run, nothing is measured. A RESPB connection's buffers are
//! shared by its channels and shown on one of them (see [`crate::net::mux`]).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use kvik_protocol::commands::CommandSpec;
use kvik_protocol::resp::request::{Progress, RequestError, RequestLimits, RequestParser};
use kvik_protocol::resp::writer::RespWriter;
use kvik_protocol::respb::handshake::{self, Greeting};
use kvik_protocol::respb::{detect, Decoded, Detected, Frame, RespbDecoder, RespbLimits, RespbReplyWriter};
use kvik_protocol::{CommandArgs, ReplySink};

pub use crate::client::peer::Peer;
use crate::client::session::Session;
use crate::clock;
use crate::commands::{execute, held_by_pause, Outcome, ReplyTarget, Request};
use crate::net::mux::{self, Channels, Queued, RespbTarget, RunFree};
use crate::net::net_meter::MeteredStream;
use crate::net::read_ahead::{RespReadAhead, RespbReadAhead};
use crate::net::reply_pacing::{self, BatchSplit, LoopSeat, WriteTimer};
use crate::registries::blocking::{Cancel, Ended, Waiter};
use crate::registries::clients::{BufferFigures, ClientHandle, Shown};
use crate::registries::pubsub::{encode_message, Message};
use crate::signal::Signal;
use crate::state::ServerState;

/// Smallest free space offered to a read.
const MIN_READ: usize = 16 * 1024;
/// The read buffer a connection keeps once its buffers went back
/// ([`crate::housekeeping::idle_trim`]): room for a typical request, grown
/// again to [`MIN_READ`] by the next read. The figure the once-a-second
/// check compares with, or it would ask again for a trim that changes
/// nothing.
const IDLE_READ: usize = crate::housekeeping::idle_trim::IDLE_HELD_BYTES;
/// Most the read buffer grows in one step, whatever length a client announces:
/// memory follows the bytes that actually arrive, not the bytes promised.
const MAX_GROWTH: usize = 1024 * 1024;
/// Pending output above which replies are sent before the batch ends, so a
/// long pipeline of large replies does not pile up in memory.
const FLUSH_AT: usize = 1024 * 1024;

thread_local! {
    /// This event loop's notifier of the append-only file's progress (see
    /// [`install_settled_notifier`]).
    static SETTLED: std::cell::RefCell<Option<std::rc::Rc<tokio::sync::Notify>>> =
        const { std::cell::RefCell::new(None) };
}

/// Give this thread's event loop a notifier its connections wait on for
/// the append-only file (woken by the loop's relay of the journal).
pub fn install_settled_notifier() -> std::rc::Rc<tokio::sync::Notify> {
    let notify = std::rc::Rc::new(tokio::sync::Notify::new());
    SETTLED.with(|s| *s.borrow_mut() = Some(std::rc::Rc::clone(&notify)));
    notify
}

/// How long a closing connection waits for the client to stop sending.
const LINGER: Duration = Duration::from_millis(200);
/// Most bytes discarded while lingering.
const LINGER_BYTES: usize = 1024 * 1024;

/// A byte stream a client is connected through (TCP or unix socket).
pub trait ClientStream: AsyncRead + AsyncWrite + Unpin {}

impl<S: AsyncRead + AsyncWrite + Unpin> ClientStream for S {}

/// One connection's socket with what decides when reading stops: the idle
/// timeout, the query buffer limit and the server's shutdown.
struct Conn<'a, S> {
    stream: S,
    state: &'a ServerState,
    /// Completes once the server is stopping.
    shutdown: Event,
    peer: Peer,
    /// Since when unsent replies have been above the soft output limit.
    over_soft_since: Option<Instant>,
    /// What the buffers hold, for the client list.
    meter: Meter,
    /// Raised when a RESP connection's buffers are to go back
    /// ([`crate::housekeeping::idle_trim`]); `None` on RESPB, whose channels are woken
    /// through their shared signal.
    trim: Option<TrimWake>,
}

/// The signal a RESP connection is asked through to give its buffers back,
/// and the event of its next raise.
struct TrimWake {
    signal: Arc<Signal>,
    raised: Event,
}

impl TrimWake {
    fn new() -> TrimWake {
        let signal = Signal::new();
        TrimWake { raised: Event::raised(Arc::clone(&signal)), signal }
    }

    /// Wait for the next raise.
    #[cold]
    fn rearm(&mut self) {
        self.signal.lower();
        self.raised = Event::raised(Arc::clone(&self.signal));
    }
}

/// A connection's measurements of its buffers, noted by the serving loop
/// (which owns the buffers) before it sends and waits, and published by
/// the waits.
///
/// At `-P 1` this runs once per request, so the common case is kept to a
/// few instructions: noting compares the capacities with the last ones
/// (they change only when a buffer grows) and a wait stores `qbuf` alone
/// unless something grew or replies waited for the socket (`dirty`).
#[derive(Default)]
struct Meter {
    /// Where a RESP connection publishes: its client's entry. `None` on
    /// RESPB, whose channels publish ([`Channels::show_buffers`]).
    handle: Option<Arc<ClientHandle>>,
    /// Bytes in the read buffer not yet run, as last noted.
    qbuf: usize,
    /// The read buffer's capacity, noted after making room for a read
    /// (the only place it changes).
    qbuf_cap: usize,
    /// Capacity of the argument list kept for reuse.
    args: usize,
    /// Capacity of the reply buffer.
    replies: usize,
    /// Most reply bytes one write took (the reply buffer's length when
    /// noted before a send).
    peak: usize,
    /// Something other than `qbuf` changed since the last full publish.
    dirty: bool,
    /// What was published last.
    shown: Shown,
}

impl Meter {
    /// Note a RESP connection's buffers before it sends `out`.
    #[inline]
    fn note(&mut self, buf: &ReadBuffer, args: &CommandArgs, out: &Vec<u8>) {
        self.qbuf = buf.unrun();
        let (held, replies, len) = (args.retained_bytes(), out.capacity(), out.len());
        if held != self.args || replies != self.replies || len > self.peak {
            self.grew(held, replies, len);
        }
    }

    #[cold]
    fn grew(&mut self, args: usize, replies: usize, len: usize) {
        self.args = args;
        self.replies = replies;
        self.peak = self.peak.max(len);
        self.dirty = true;
    }

    /// Note the read buffer once room was made for the next read.
    #[inline]
    fn note_read_buffer(&mut self, buf: &ReadBuffer) {
        self.qbuf = buf.unrun();
        let cap = buf.capacity();
        if cap != self.qbuf_cap {
            self.qbuf_cap = cap;
            self.dirty = true;
        }
    }

    /// Publish what was noted, all replies sent.
    #[inline]
    fn publish(&mut self) {
        let Some(handle) = &self.handle else { return };
        handle.show_input(self.qbuf);
        if self.dirty {
            self.publish_all(0);
        }
    }

    /// Publish what was noted, with `unsent` reply bytes waiting for the
    /// socket (RESP holds its replies in one buffer: no `oll`, `omem`).
    #[cold]
    fn publish_all(&mut self, unsent: usize) {
        let Some(handle) = &self.handle else { return };
        let figures = BufferFigures {
            qbuf: self.qbuf,
            qbuf_cap: self.qbuf_cap,
            rbs: self.replies,
            rbp: self.peak,
            obl: unsent,
            oll: 0,
            omem: 0,
            held: self.qbuf_cap + self.args + self.replies,
        };
        // `qbuf` first: `show_input` moves it without `shown` knowing.
        handle.show_input(self.qbuf);
        self.shown.publish(handle, &figures);
        // Replies still waiting are shown until a publish without them.
        self.dirty = unsent > 0;
    }

    /// A batch starts with `qbuf` bytes read and not yet run: shown at
    /// once (one store), so that the client's own `CLIENT INFO` finds its
    /// request in the buffer, as in Redis.
    #[inline]
    fn show_input(&self, qbuf: usize) {
        if let Some(handle) = &self.handle {
            handle.show_input(qbuf);
        }
    }
}

/// A signal, such as the server's shutdown or a client's kill, that the
/// connection waits on again and again.
///
/// The waiting future is made once per connection and polled by reference
/// in every wait. Once it has been polled with this task's waker it is
/// registered, and later polls with the same waker only read the flag:
/// polling the `Notify` behind it again would take its lock on every
/// request. Once it happened, the event stays ready.
struct Event {
    signal: Option<Arc<Signal>>,
    waiting: Option<Pin<Box<dyn Future<Output = ()>>>>,
    /// The waker `waiting` was last polled with.
    registered: Option<Waker>,
}

impl Event {
    /// The event of `signal` being raised.
    fn raised(signal: Arc<Signal>) -> Self {
        let waited = Arc::clone(&signal);
        let waiting: Pin<Box<dyn Future<Output = ()>>> = Box::pin(async move { waited.raised().await });
        Event { signal: Some(signal), waiting: Some(waiting), registered: None }
    }
}

impl Future for Event {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let this = &mut *self;
        let Some(waiting) = this.waiting.as_mut() else { return Poll::Ready(()) };
        if this.signal.as_ref().is_some_and(|s| s.is_raised()) {
            this.waiting = None;
            return Poll::Ready(());
        }
        if this.registered.as_ref().is_some_and(|w| w.will_wake(cx.waker())) {
            // Registered with this task: a raise wakes it, and the flag says so.
            return Poll::Pending;
        }
        if waiting.as_mut().poll(cx).is_ready() {
            this.waiting = None;
            return Poll::Ready(());
        }
        this.registered = Some(cx.waker().clone());
        Poll::Pending
    }
}

/// Ends a blocked client's wait when dropped: nothing is served to a
/// client whose connection stopped waiting.
struct Unblock<'a> {
    state: &'a ServerState,
    id: u64,
}

impl Drop for Unblock<'_> {
    fn drop(&mut self) {
        self.state.blocking.abandon(self.id);
    }
}

/// What ended a wait for input.
enum Wake {
    /// Input arrived (or the connection is to end, on `Ok(0)`).
    Read(io::Result<usize>),
    /// Another client's `CLIENT KILL` named this one.
    Killed,
    /// A line for this MONITOR client, or `None` once its feed stopped.
    Monitor(Option<Vec<u8>>),
    /// A message on a channel this client listens to.
    Message(Option<Message>),
}

impl<S: ClientStream> Conn<'_, S> {
    /// Read more input into `buf` (see [`ReadBuffer::fill`]). Returns 0 when
    /// the connection is to end without an error: the client closed, stayed
    /// idle past `timeout`, outgrew `client-query-buffer-limit`, or the
    /// server is stopping. Meanwhile the buffers go back when asked
    /// ([`crate::housekeeping::idle_trim`]; `spare`: the reply buffer and argument list
    /// that go with the read buffer).
    async fn fill(
        &mut self,
        buf: &mut ReadBuffer,
        want: usize,
        mut spare: Option<&mut Spare<'_>>,
    ) -> io::Result<usize> {
        let limits = &self.state.limits;
        if buf.pending().len() > limits.query_buffer_limit() {
            return Ok(0);
        }
        let idle = limits.idle_timeout();
        let idle_deadline = (idle > 0).then(|| tokio::time::Instant::now() + Duration::from_secs(idle));
        buf.make_room(want);
        self.meter.note_read_buffer(buf);
        self.meter.publish();
        loop {
            let Conn { stream, shutdown, trim, .. } = &mut *self;
            let read = buf.fill(stream, want);
            let read = async {
                match idle_deadline {
                    Some(at) => tokio::time::timeout_at(at, read).await.unwrap_or(Ok(0)),
                    None => read.await,
                }
            };
            let asked = async {
                match trim {
                    Some(t) => (&mut t.raised).await,
                    None => std::future::pending().await,
                }
            };
            // Shutdown first, so a client that always has input still sees it.
            tokio::select! {
                biased;
                () = shutdown => return Ok(0),
                r = read => return r,
                () = asked => {}
            }
            trim_idle(&mut self.meter, self.trim.as_mut(), buf, spare.as_deref_mut());
        }
    }

    /// [`Conn::fill`] for a client with a session of its own that is no
    /// MONITOR and receives no messages, which is nearly every client: the
    /// same waits, polled by hand. It runs once per request at `-P 1`, where
    /// the futures `tokio::select!` builds and drops on every call cost more
    /// than the read.
    async fn fill_plain(
        &mut self,
        buf: &mut ReadBuffer,
        want: usize,
        killed: &mut Event,
        spare: &mut Spare<'_>,
    ) -> io::Result<usize> {
        let limits = &self.state.limits;
        if buf.pending().len() > limits.query_buffer_limit() {
            return Ok(0);
        }
        if limits.idle_timeout() > 0 {
            // Rare enough to take the general path, with its timer.
            return tokio::select! {
                biased;
                r = self.fill(buf, want, Some(spare)) => r,
                () = &mut *killed => Ok(0),
            };
        }
        buf.make_room(want);
        self.meter.note_read_buffer(buf);
        self.meter.publish();
        let Conn { stream, shutdown, trim, meter, .. } = self;
        std::future::poll_fn(|cx| {
            // Shutdown and kill first, so a client that always has input
            // still sees them.
            if Pin::new(&mut *shutdown).poll(cx).is_ready() || Pin::new(&mut *killed).poll(cx).is_ready() {
                return Poll::Ready(Ok(0));
            }
            loop {
                if let Poll::Ready(r) = buf.poll_read_into(cx, stream) {
                    return Poll::Ready(r);
                }
                // Nothing to read: the buffers go back if asked.
                let Some(t) = trim.as_mut() else { return Poll::Pending };
                if Pin::new(&mut t.raised).poll(cx).is_pending() {
                    return Poll::Pending;
                }
                trim_idle(meter, Some(t), buf, Some(&mut *spare));
            }
        })
        .await
    }

    /// [`Conn::fill`] for a client with a session of its own: also ends when
    /// the client is killed, and meanwhile sends the lines fed to it if it
    /// is a MONITOR, so other clients never write to its socket.
    async fn fill_for(
        &mut self,
        buf: &mut ReadBuffer,
        want: usize,
        session: &mut Session,
        killed: &mut Event,
        spare: &mut Spare<'_>,
    ) -> io::Result<usize> {
        loop {
            if session.handle().is_some_and(|h| h.is_killed()) {
                return Ok(0);
            }
            if session.monitor.is_none() && session.subscriptions.inbox().is_none() {
                return self.fill_plain(buf, want, killed, spare).await;
            }
            let protocol = session.protocol;
            let event = {
                let (monitor, subscriptions) = (&mut session.monitor, &mut session.subscriptions);
                let feed = async {
                    match monitor.as_mut() {
                        Some(feed) => feed.recv().await,
                        None => std::future::pending().await,
                    }
                };
                let inbox = async {
                    match subscriptions.inbox() {
                        Some(inbox) => inbox.recv().await,
                        None => std::future::pending().await,
                    }
                };
                // Input first: a kill is also seen at the top of this loop,
                // so a client that always has input cannot miss it.
                tokio::select! {
                    biased;
                    r = self.fill(buf, want, Some(&mut *spare)) => Wake::Read(r),
                    () = &mut *killed => Wake::Killed,
                    line = feed => Wake::Monitor(line),
                    msg = inbox => Wake::Message(msg),
                }
            };
            match event {
                Wake::Read(r) => return r,
                Wake::Killed => return Ok(0),
                Wake::Monitor(Some(line)) => self.write_all(&line).await?,
                Wake::Monitor(None) => session.monitor = None,
                Wake::Message(Some(msg)) => {
                    let mut out = Vec::new();
                    encode_message(&mut out, protocol, session.subscriptions.active(), &msg);
                    if !drain_messages(session, &mut out) {
                        return Ok(0);
                    }
                    // A subscriber that stopped reading holds this write
                    // until it is cut off for the messages behind it.
                    tokio::select! {
                        r = self.write_all(&out) => r?,
                        () = &mut *killed => return Ok(0),
                    }
                }
                Wake::Message(None) => {}
            }
        }
    }

    /// Wait while a `CLIENT PAUSE` holds `spec` back. False when the wait
    /// ended because the client was killed or the server is stopping.
    async fn wait_for_pause(&mut self, spec: &CommandSpec, killed: &mut Event) -> bool {
        tokio::select! {
            () = self.state.pause.wait_for(spec) => true,
            () = killed => false,
            () = &mut self.shutdown => false,
        }
    }

    /// Wait while client `id` is blocked (see [`crate::registries::blocking`]), after
    /// sending the replies already due in `out`: the reply to send once it
    /// was served, timed out or unblocked; `None` when the client is to be
    /// closed (killed, gone, or the server stopping). The socket is still
    /// read meanwhile, within the query buffer limit, so that a client that
    /// hangs up is noticed; what it sends waits in `buf`.
    async fn wait_blocked(
        &mut self,
        buf: &mut ReadBuffer,
        out: &mut Vec<u8>,
        id: u64,
        killed: &mut Event,
    ) -> io::Result<Option<Vec<u8>>> {
        // However this ends, even by an error, the client waits no more.
        let _done = Unblock { state: self.state, id };
        if !out.is_empty() {
            self.send(out).await?;
            out.clear();
        }
        self.meter.note_read_buffer(buf);
        self.meter.publish();
        let Some(waiter) = self.state.blocking.waiter(id) else { return Ok(Some(Vec::new())) };
        Ok(self.await_waiter(buf, &waiter, killed).await)
    }

    async fn await_waiter(
        &mut self,
        buf: &mut ReadBuffer,
        waiter: &Arc<Waiter>,
        killed: &mut Event,
    ) -> Option<Vec<u8>> {
        let state = self.state;
        let mut cancelled = false;
        loop {
            match state.blocking.ended(&state.stats, waiter) {
                Some(Ended::Reply(bytes)) => return Some(bytes),
                Some(Ended::Gone) => return None,
                None => {}
            }
            if cancelled {
                // A thread is running the command: its reply is on the way.
                waiter.changed().await;
                continue;
            }
            let deadline = waiter.deadline;
            let sleep = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            };
            let may_read = buf.pending().len() <= state.limits.query_buffer_limit();
            let stream = &mut self.stream;
            let read = async {
                if may_read {
                    buf.fill(stream, 0).await
                } else {
                    std::future::pending().await
                }
            };
            let why = tokio::select! {
                () = waiter.changed() => None,
                () = sleep => Some(Cancel::Timeout),
                () = &mut *killed => Some(Cancel::Gone),
                () = &mut self.shutdown => Some(Cancel::Gone),
                r = read => match r {
                    Ok(0) | Err(_) => Some(Cancel::Gone),
                    Ok(_) => None,
                },
            };
            if let Some(why) = why {
                state.blocking.cancel(waiter, why);
                cancelled = true;
            }
        }
    }

    /// Send `bytes`; a client that does not read cannot hold up a shutdown.
    async fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.state.journal.on() {
            self.wait_for_journal().await?;
        }
        tokio::select! {
            r = self.stream.write_all(bytes) => r,
            () = &mut self.shutdown => Err(io::Error::other("server shutting down")),
        }
    }

    /// Whether replies of `pending` bytes waiting for one write break the
    /// hard output limit, so the client must be closed without them.
    fn over_hard_limit(&self, pending: usize) -> bool {
        let hard = self.state.limits.output_limit().hard;
        let over = hard > 0 && pending as u64 > hard;
        if over {
            self.log_output_limit_close();
        }
        over
    }

    /// The warning Redis logs for a client closed for its output buffer.
    #[cold]
    fn log_output_limit_close(&self) {
        static LIMIT: crate::log::RateLimit = crate::log::RateLimit::per(1000);
        if LIMIT.allow() {
            crate::log!(
                Warning,
                "Client addr={} laddr={} fd={} closed for overcoming of output buffer limits.",
                self.peer.addr,
                self.peer.laddr,
                self.peer.fd
            );
        }
    }

    /// Send replies, closing (with an error) a client that stays above the
    /// soft output limit too long or takes nothing for `timeout` seconds.
    async fn send(&mut self, bytes: &[u8]) -> io::Result<()> {
        if self.state.journal.on() {
            self.wait_for_journal().await?;
        }
        // Replies nearly always fit in the socket's buffer: one write, without
        // arming the timers and events a client that does not read needs.
        let mut sent = self.try_write(bytes).await?;
        while sent < bytes.len() {
            // Replies wait for the socket: the client list shows them.
            self.meter.publish_all(bytes.len() - sent);
            let pending = (bytes.len() - sent) as u64;
            let limit = self.state.limits.output_limit();
            let now = Instant::now();
            let mut deadline: Option<Instant> = None;
            if limit.soft > 0 && limit.soft_seconds > 0 && pending > limit.soft {
                let since = *self.over_soft_since.get_or_insert(now);
                deadline = Some(since + Duration::from_secs(limit.soft_seconds));
            } else {
                self.over_soft_since = None;
            }
            let idle = self.state.limits.idle_timeout();
            if idle > 0 {
                let stall = now + Duration::from_secs(idle);
                deadline = Some(deadline.map_or(stall, |d| d.min(stall)));
            }
            if deadline.is_some_and(|d| d <= now) {
                if self.over_soft_since.is_some() {
                    self.log_output_limit_close();
                }
                return Err(io::Error::other("output buffer limit reached"));
            }
            let wait = async {
                match deadline {
                    Some(d) => tokio::time::sleep_until(d.into()).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                r = self.stream.write(&bytes[sent..]) => match r {
                    Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
                    Ok(n) => {
                        sent += n;
                        if sent == bytes.len() {
                            // Taken at last: the list shows no replies waiting.
                            self.meter.publish_all(0);
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                },
                _ = wait => return Err(io::Error::other("client does not read its replies")),
                () = &mut self.shutdown => return Err(io::Error::other("server shutting down")),
            }
        }
        self.over_soft_since = None;
        Ok(())
    }

    /// Hold replies back until every change made before them is written
    /// to the append-only file (on disk, with `appendfsync always`): a
    /// reply may tell of a change, or show one, only once the change
    /// survives what `appendfsync` promises. Every change counts, not only
    /// this client's, so no client reads a value that a crash could take
    /// back; they are committed together, so the wait is one flush.
    async fn wait_for_journal(&mut self) -> io::Result<()> {
        let journal = &self.state.journal;
        let seq = self.state.keyspace.changes_taken();
        if journal.settled_at(seq) {
            return Ok(());
        }
        let Some(local) = SETTLED.with(|s| s.borrow().clone()) else {
            return tokio::select! {
                () = journal.wait_settled(seq) => Ok(()),
                () = &mut self.shutdown => Err(io::Error::other("server shutting down")),
            };
        };
        loop {
            let notified = local.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            if journal.settled_at(seq) {
                return Ok(());
            }
            tokio::select! {
                () = &mut notified => {}
                () = &mut self.shutdown => return Err(io::Error::other("server shutting down")),
            }
        }
    }

    /// Write what the socket takes now, without waiting: the bytes written,
    /// 0 when it takes nothing yet.
    async fn try_write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        std::future::poll_fn(|cx| match Pin::new(&mut self.stream).poll_write(cx, bytes) {
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => Poll::Ready(Ok(0)),
            Poll::Ready(r) => Poll::Ready(r),
            Poll::Pending => Poll::Ready(Ok(0)),
        })
        .await
    }
}

/// Serve `stream` until the client leaves, breaks the protocol, stays idle
/// too long, the socket fails, or `shutdown` is raised. `shutdown` is the
/// event loop's own signal, so waiting on it touches nothing other cores use.
pub async fn serve<S: ClientStream>(stream: S, state: &ServerState, shutdown: Arc<Signal>, peer: Peer) {
    let stream = MeteredStream::new(stream, &state.stats);
    let mut conn = Conn {
        stream,
        state,
        shutdown: Event::raised(shutdown),
        peer,
        over_soft_since: None,
        meter: Meter::default(),
        trim: None,
    };
    let _seat = LoopSeat::take();
    // An I/O error only means the client is gone; there is nobody to tell.
    let _ = run(&mut conn).await;
    close_gracefully(&mut conn.stream).await;
}

/// Close after the last reply without losing it.
///
/// Closing a socket that still has unread input makes the kernel reset the
/// connection, and a reset can destroy the reply (an error text, QUIT's OK)
/// before the client reads it. So: send FIN, then discard what the client
/// still sends, for a bounded time and amount, before closing.
pub async fn close_gracefully<S: ClientStream>(stream: &mut S) {
    let _ = stream.flush().await;
    let _ = stream.shutdown().await;
    let drain = async {
        let mut sink = [0u8; 16 * 1024];
        let mut discarded = 0;
        while discarded < LINGER_BYTES {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => break,
                Ok(n) => discarded += n,
            }
        }
    };
    let _ = tokio::time::timeout(LINGER, drain).await;
}

async fn run<S: ClientStream>(conn: &mut Conn<'_, S>) -> io::Result<()> {
    let mut buf = ReadBuffer::default();
    if conn.fill(&mut buf, 0, None).await? == 0 {
        return Ok(());
    }
    let Some(&first) = buf.pending().first() else {
        return Ok(());
    };
    match detect(first) {
        Detected::Resp => serve_resp(conn, &mut buf).await,
        Detected::Respb => serve_respb(conn, &mut buf, None).await,
        Detected::Handshake => {
            if greet(conn, &mut buf).await? {
                serve_respb(conn, &mut buf, None).await
            } else {
                Ok(())
            }
        }
    }
}

/// Bytes read from the socket and not yet consumed by a decoder.
///
/// Requests are decoded in place; consumed bytes are dropped by moving the
/// unconsumed tail to the front before the next read, so a request split
/// across reads always starts at the same offset (0), which is what the
/// resumable decoders need.
#[derive(Default)]
struct ReadBuffer {
    data: Vec<u8>,
    start: usize,
    end: usize,
    /// Cut down to [`IDLE_READ`] until a read fills it.
    trimmed: bool,
}

impl ReadBuffer {
    fn pending(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    fn consume(&mut self, n: usize) {
        self.start = (self.start + n).min(self.end);
    }

    /// Bytes the buffer holds, used or not.
    fn capacity(&self) -> usize {
        self.data.capacity()
    }

    /// Bytes read and not yet consumed (`pending().len()`, without making the slice).
    fn unrun(&self) -> usize {
        self.end - self.start
    }

    /// Whether the last read filled all the room it had: the socket most
    /// likely holds more input.
    fn is_full(&self) -> bool {
        self.end == self.data.len()
    }

    /// Move the unconsumed bytes to the front and make room for at least
    /// `want` bytes (within [`MAX_GROWTH`]).
    fn make_room(&mut self, want: usize) {
        if self.start > 0 {
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        let least = if self.trimmed { IDLE_READ } else { MIN_READ };
        let room = want.clamp(least, MAX_GROWTH);
        if self.data.len() - self.end < room {
            self.data.resize(self.end + room, 0);
        }
    }

    /// Whether the buffer holds more than an idle connection keeps.
    fn holds(&self) -> bool {
        self.data.len() > IDLE_READ
    }

    /// Give back all but [`IDLE_READ`] bytes, when no request is partly
    /// read (a partial one keeps its bytes where the decoder left them).
    fn trim(&mut self) {
        if self.start == self.end && self.holds() {
            self.data = vec![0; IDLE_READ];
            (self.start, self.end, self.trimmed) = (0, 0, true);
        }
    }

    /// `n` bytes arrived: a trimmed buffer grows to its usual room with
    /// the next read, the connection being busy again.
    #[inline]
    fn arrived(&mut self, n: usize) {
        self.end += n;
        self.trimmed &= n == 0;
    }

    /// [`ReadBuffer::fill`] as a poll, for a task that also polls the socket's
    /// other direction.
    fn poll_fill<S: ClientStream>(
        &mut self,
        cx: &mut Context<'_>,
        stream: &mut S,
        want: usize,
    ) -> Poll<io::Result<usize>> {
        self.make_room(want);
        self.poll_read_into(cx, stream)
    }

    /// One read from `stream` into the room [`ReadBuffer::make_room`] made.
    fn poll_read_into<S: ClientStream>(&mut self, cx: &mut Context<'_>, stream: &mut S) -> Poll<io::Result<usize>> {
        loop {
            let mut read = tokio::io::ReadBuf::new(&mut self.data[self.end..]);
            match Pin::new(&mut *stream).poll_read(cx, &mut read) {
                Poll::Ready(Ok(())) => {
                    let n = read.filled().len();
                    self.arrived(n);
                    return Poll::Ready(Ok(n));
                }
                Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
                other => return other.map_ok(|()| 0),
            }
        }
    }

    /// One read from `stream`, making room for at least `want` bytes (within
    /// [`MAX_GROWTH`]). Returns the bytes read; 0 means the client closed.
    async fn fill<S: ClientStream>(&mut self, stream: &mut S, want: usize) -> io::Result<usize> {
        self.make_room(want);
        loop {
            match stream.read(&mut self.data[self.end..]).await {
                Ok(n) => {
                    self.arrived(n);
                    return Ok(n);
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// A RESP connection's reply buffer and argument list, which go back with
/// its read buffer when it has waited long enough ([`crate::housekeeping::idle_trim`]).
struct Spare<'a> {
    out: &'a mut Vec<u8>,
    args: &'a mut CommandArgs,
}

/// Give back the buffers of a RESP connection asked to (see
/// [`crate::housekeeping::idle_trim`]), unless a request is partly read (its bytes and
/// arguments stay), and show what it holds now; `trim` waits for the next
/// request.
#[cold]
fn trim_idle(meter: &mut Meter, trim: Option<&mut TrimWake>, buf: &mut ReadBuffer, spare: Option<&mut Spare<'_>>) {
    if let Some(trim) = trim {
        trim.rearm();
    }
    let asked = meter.handle.as_ref().is_some_and(|h| h.take_trim_request());
    if !asked || !buf.pending().is_empty() {
        return;
    }
    buf.trim();
    if let Some(spare) = spare {
        if spare.out.is_empty() {
            *spare.out = Vec::new();
        }
        *spare.args = CommandArgs::new();
        meter.note(buf, spare.args, spare.out);
    }
    meter.note_read_buffer(buf);
    meter.publish();
}

/// Replies for a RESP connection, in the session's RESP version.
struct RespTarget<'a> {
    out: &'a mut Vec<u8>,
}

impl ReplyTarget for RespTarget<'_> {
    fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, session: &Session, write: F) {
        let mut w = RespWriter::new(self.out, session.protocol);
        write(&mut w);
    }

    fn has_pending(&self) -> bool {
        !self.out.is_empty()
    }
}

/// Redis's text for a protocol error. Unlike the parser's `Display`, which
/// must produce a `str`, this quotes a non-ASCII byte as the raw byte, as
/// Redis does.
fn protocol_error_text(e: &RequestError) -> Vec<u8> {
    match e {
        RequestError::ExpectedDollar(b) => {
            let mut msg = b"ERR Protocol error: expected '$', got '".to_vec();
            msg.push(*b);
            msg.push(b'\'');
            msg
        }
        other => other.to_string().into_bytes(),
    }
}

/// Append the messages waiting for `session` (after the replies already in
/// `out`, so a client sees its subscription confirmed before any message).
/// False when the client fell too far behind and must be closed.
///
/// Inlined down to the test for an inbox, which nearly every client lacks:
/// it runs twice per batch.
#[inline]
fn drain_messages(session: &mut Session, out: &mut Vec<u8>) -> bool {
    if session.subscriptions.inbox().is_none() {
        return true;
    }
    drain_inbox(session, out)
}

/// [`drain_messages`] for a client with an inbox.
#[inline(never)]
fn drain_inbox(session: &mut Session, out: &mut Vec<u8>) -> bool {
    let (protocol, listening) = (session.protocol, session.subscriptions.active());
    let Some(inbox) = session.subscriptions.inbox() else { return true };
    while let Some(msg) = inbox.try_recv() {
        encode_message(out, protocol, listening, &msg);
    }
    !inbox.overflowed()
}

/// The request limits the configuration asks for now.
fn request_limits(state: &ServerState) -> RequestLimits {
    RequestLimits { max_bulk_len: state.limits.proto_max_bulk_len(), ..RequestLimits::default() }
}

async fn serve_resp<S: ClientStream>(conn: &mut Conn<'_, S>, buf: &mut ReadBuffer) -> io::Result<()> {
    let state = conn.state;
    let mut parser = RequestParser::new(request_limits(state));
    let mut args = CommandArgs::new();
    let mut ahead = RespReadAhead::default();
    let wake = Signal::new();
    let mut session = Session::for_peer(state, &conn.peer, Some(Arc::clone(&wake)));
    let mut killed = Event::raised(Arc::clone(&wake));
    let mut out = Vec::new();
    conn.meter.handle = session.handle().cloned();
    let trim = TrimWake::new();
    if let Some(handle) = session.handle() {
        handle.on_trim(&trim.signal);
    }
    conn.trim = Some(trim);
    // The first read came before the client was listed: shown from the start.
    conn.meter.note(buf, &args, &out);
    conn.meter.note_read_buffer(buf);
    conn.meter.publish();
    loop {
        let mut want = 0;
        let mut close = false;
        conn.meter.show_input(buf.unrun());
        // Messages that arrived with the input were sent before it was, so
        // they go out before its replies, as Redis would have written them.
        if !drain_messages(&mut session, &mut out) {
            return Ok(());
        }
        let mut split = BatchSplit::plan(buf.pending().len(), buf.is_full());
        loop {
            match run_buffered(conn, (&mut parser, &mut ahead, &mut split), &mut args, buf, &mut session, &mut out) {
                Stop::NeedMore(hint) => {
                    want = hint;
                    break;
                }
                Stop::Paused(spec) => {
                    conn.meter.note(buf, &args, &out);
                    // Replies already due go out before the wait, as Redis sends them.
                    if !out.is_empty() {
                        conn.send(&out).await?;
                        out.clear();
                    }
                    conn.meter.publish();
                    if !conn.wait_for_pause(spec, &mut killed).await {
                        return Ok(());
                    }
                }
                Stop::Blocked => {
                    // Replies already due go out first; requests behind
                    // the blocked one stay in the buffer until it ends.
                    conn.meter.note(buf, &args, &out);
                    match conn.wait_blocked(buf, &mut out, session.id, &mut killed).await? {
                        Some(reply) => out.extend_from_slice(&reply),
                        None => return Ok(()),
                    }
                }
                Stop::Flush => {
                    conn.meter.note(buf, &args, &out);
                    conn.send(&out).await?;
                    out.clear();
                }
                Stop::Close => {
                    close = true;
                    break;
                }
                Stop::End => return Ok(()),
                Stop::Replica => {
                    conn.meter.note(buf, &args, &out);
                    conn.send(&out).await?;
                    return serve_replica(conn, &mut session, &mut killed).await;
                }
            }
        }
        // BCAST invalidations go out once per batch, gathered, as Redis
        // sends them before it waits for input again.
        state.tracking.flush_broadcasts(&state.clients, state.pubsub.limit());
        if !drain_messages(&mut session, &mut out) {
            return Ok(());
        }
        // Published by the send, if the socket makes it wait, or by the
        // wait for input that follows.
        conn.meter.note(buf, &args, &out);
        if !out.is_empty() {
            let timer = reply_pacing::before_write(out.len()).await;
            conn.send(&out).await?;
            if let Some(timer) = timer {
                timer.done();
            }
            out.clear();
        }
        if close && session.upgrade_respb {
            // `HELLO 3 PROTO RESPB`: its reply was the last RESP bytes.
            session.upgrade_respb = false;
            // From now on the channels publish, the session as channel 0.
            conn.meter.handle = None;
            conn.trim = None;
            return Box::pin(serve_respb(conn, buf, Some((session, wake)))).await;
        }
        let mut spare = Spare { out: &mut out, args: &mut args };
        if close || conn.fill_for(buf, want, &mut session, &mut killed, &mut spare).await? == 0 {
            return Ok(());
        }
    }
}

/// Serve the client as a replica from its `SYNC` or `PSYNC` on, until it
/// leaves, it is killed or the server stops.
async fn serve_replica<S: ClientStream>(
    conn: &mut Conn<'_, S>,
    session: &mut Session,
    killed: &mut Event,
) -> io::Result<()> {
    let Some(state) = conn.state.shared() else { return Ok(()) };
    let conf = std::mem::take(&mut session.replica);
    let ip = conf
        .ip
        .clone()
        .unwrap_or_else(|| conn.peer.addr.rsplit_once(':').map_or(conn.peer.addr.clone(), |(ip, _)| ip.to_string()));
    if let Some(h) = session.handle() {
        h.info().replica = true;
    }
    let link = Arc::new(crate::registries::replication::Link::new(session.id, ip, conf.port));
    let ask = crate::replication::master::Request {
        psync: conf.psync,
        rdb_only: conf.rdb_only,
        psync2: conf.psync2,
        eof: conf.eof,
    };
    let mut stop = std::pin::pin!(async {
        tokio::select! {
            () = &mut conn.shutdown => {}
            () = &mut *killed => {}
        }
    });
    crate::replication::master::serve(&mut conn.stream, &state, link, ask, &mut stop).await
}

/// Why [`run_buffered`] stopped running commands.
enum Stop {
    /// Every whole command buffered ran; at least this many more bytes
    /// are needed for the next one (0 when unknown).
    NeedMore(usize),
    /// A `CLIENT PAUSE` holds the next command, which stays in the buffer.
    Paused(&'static CommandSpec),
    /// The command that just ran blocked.
    Blocked,
    /// Replies passed [`FLUSH_AT`], or the first part of a split batch
    /// ([`BatchSplit`]) ran: they go out before more run.
    Flush,
    /// Send what is due, then close (QUIT, a protocol error).
    Close,
    /// Close at once (output over its hard limit, a dropped subscriber).
    End,
    /// Send what is due, then serve the client as a replica (`SYNC`, `PSYNC`).
    Replica,
}

/// Run the commands already in `buf`, in order, until one needs the
/// connection to wait (for input, a pause, a blocked command, a send).
/// Nothing here awaits, so the commands share clock readings
/// ([`clock::Batch`]).
fn run_buffered<S: ClientStream>(
    conn: &Conn<'_, S>,
    (parser, ahead, split): (&mut RequestParser, &mut RespReadAhead, &mut BatchSplit),
    args: &mut CommandArgs,
    buf: &mut ReadBuffer,
    session: &mut Session,
    out: &mut Vec<u8>,
) -> Stop {
    let state = conn.state;
    let _batch = clock::Batch::open();
    ahead.start(&state.keyspace);
    loop {
        let pending = buf.pending();
        if pending.is_empty() {
            return Stop::NeedMore(0);
        }
        // `CONFIG SET proto-max-bulk-len` applies to the very next command, as in Redis.
        parser.set_limits(request_limits(state));
        // Until it authenticates, a client may only send small requests.
        parser.set_auth_required(!session.authenticated && state.limits.auth_required());
        let parsed = match ahead.take(parser, args) {
            Some(n) => Ok(Progress::Done(n)),
            None => parser.parse(pending, args),
        };
        let n = match parsed {
            Ok(Progress::Done(n)) => n,
            Ok(Progress::NeedMore { hint }) => return Stop::NeedMore(hint),
            Err(e) => {
                RespWriter::new(out, session.protocol).error(&protocol_error_text(&e));
                return Stop::Close;
            }
        };
        let req = Request::new(args, pending);
        if let Some(spec) = held_by_pause(state, req, session) {
            // Parsed again once the pause lets it through.
            return Stop::Paused(spec);
        }
        let memo = ahead.before(&state.keyspace, session.db, pending);
        let outcome = if args.is_empty() {
            Outcome::Continue
        } else {
            let mut target = RespTarget { out: &mut *out };
            execute(state, req, session, &mut target)
        };
        drop(memo);
        // A tracking client gets invalidations right after the
        // reply of the command that caused them, as in Redis.
        if session.tracking.on() && !drain_messages(session, out) {
            return Stop::End;
        }
        buf.consume(n);
        ahead.after(n);
        if conn.over_hard_limit(out.len()) {
            return Stop::End;
        }
        match outcome {
            Outcome::Close => return Stop::Close,
            Outcome::Replica => return Stop::Replica,
            Outcome::Block => return Stop::Blocked,
            Outcome::Continue if out.len() >= FLUSH_AT => return Stop::Flush,
            Outcome::Continue if split.due(buf.pending().len(), out.len()) => return Stop::Flush,
            Outcome::Continue => {}
        }
    }
}

/// Answer a RESPB greeting. Returns whether frames follow.
async fn greet<S: ClientStream>(conn: &mut Conn<'_, S>, buf: &mut ReadBuffer) -> io::Result<bool> {
    loop {
        match handshake::read_greeting(buf.pending()) {
            Greeting::Incomplete => {
                if conn.fill(buf, handshake::LEN, None).await? == 0 {
                    return Ok(false);
                }
            }
            Greeting::Accept { reply } => {
                conn.write_all(&reply).await?;
                buf.consume(handshake::LEN);
                return Ok(true);
            }
            Greeting::Reject { reply } => {
                conn.write_all(&reply).await?;
                return Ok(false);
            }
        }
    }
}

/// A RESPB connection's replies: `out` collects new replies while
/// `inflight`, replies already handed over, is being written. The connection
/// goes on reading and running frames while a large reply is written, until
/// `out` holds [`FLUSH_AT`] bytes (backpressure).
#[derive(Default)]
struct Outgoing {
    out: Vec<u8>,
    inflight: Vec<u8>,
    sent: usize,
    /// When `inflight` last made progress, for `timeout`.
    progress: Option<Instant>,
    /// Whether `progress` is kept: only while a `timeout` is set, as reading
    /// the clock on every write costs more than the rest of the write path.
    stamp: bool,
    /// Times the write of the batch handed over (see [`reply_pacing`]).
    timer: Option<WriteTimer>,
    /// Most reply bytes handed over at once (`rbp`), a RESP phase's
    /// sends included.
    peak: usize,
    /// What the connection's argument list holds, noted before each wait
    /// for the client list (see [`respb_figures`]).
    args_held: usize,
}

impl Outgoing {
    /// Whether everything handed over was written.
    fn idle(&self) -> bool {
        self.sent >= self.inflight.len()
    }

    /// Hand `out` over to be written, if the previous write is done.
    fn hand_over(&mut self) {
        if self.idle() && !self.out.is_empty() {
            self.peak = self.peak.max(self.out.len());
            self.inflight.clear();
            self.sent = 0;
            std::mem::swap(&mut self.inflight, &mut self.out);
            self.progress = self.stamp.then(Instant::now);
        }
    }

    /// Whether new replies must wait for the socket before more frames run.
    fn full(&self) -> bool {
        self.out.len() >= FLUSH_AT
    }

    /// Write everything, waiting for the socket (before a close).
    async fn flush_all<S: ClientStream>(&mut self, conn: &mut Conn<'_, S>) -> io::Result<()> {
        if !self.idle() {
            conn.send(&self.inflight[self.sent..]).await?;
            self.sent = self.inflight.len();
        }
        if !self.out.is_empty() {
            self.peak = self.peak.max(self.out.len());
            conn.send(&self.out).await?;
            self.out.clear();
        }
        Ok(())
    }

    /// When the client is to be closed for not taking its replies: above
    /// the soft output limit too long, or taking nothing for `timeout`.
    fn write_deadline(&self, conn: &mut Conn<'_, impl ClientStream>) -> Option<Instant> {
        if self.idle() {
            conn.over_soft_since = None;
            return None;
        }
        let pending = (self.inflight.len() - self.sent + self.out.len()) as u64;
        let limit = conn.state.limits.output_limit();
        let mut deadline = None;
        if limit.soft > 0 && limit.soft_seconds > 0 && pending > limit.soft {
            let since = *conn.over_soft_since.get_or_insert_with(Instant::now);
            deadline = Some(since + Duration::from_secs(limit.soft_seconds));
        } else {
            conn.over_soft_since = None;
        }
        let idle = conn.state.limits.idle_timeout();
        if idle > 0 {
            let stall = self.progress.unwrap_or_else(Instant::now) + Duration::from_secs(idle);
            deadline = Some(deadline.map_or(stall, |d: Instant| d.min(stall)));
        }
        deadline
    }
}

async fn serve_respb<S: ClientStream>(
    conn: &mut Conn<'_, S>,
    buf: &mut ReadBuffer,
    upgraded: Option<(Session, Arc<Signal>)>,
) -> io::Result<()> {
    let state = conn.state;
    let mut decoder = RespbDecoder::new(RespbLimits::for_bulk_len(state.limits.proto_max_bulk_len()));
    let mut args = CommandArgs::new();
    let mut ahead = RespbReadAhead::new(&decoder);
    let (wake, first) = match upgraded {
        Some((session, wake)) => (wake, Some(session)),
        None => (Signal::new(), None),
    };
    // Every mux id is its own logical client, created on first use; a RESP
    // client that switched to RESPB goes on as channel 0.
    let mut channels = Channels::new(state, conn.peer.clone(), Arc::clone(&wake));
    if let Some(session) = first {
        channels.adopt(0, session);
    }
    let mut kill = Event::raised(Arc::clone(&wake));
    // The most a RESP phase sent at once is the peak so far.
    let mut output = Outgoing { peak: conn.meter.peak, ..Outgoing::default() };
    // The client stopped sending: what it sent is still answered.
    let mut eof = false;
    loop {
        let mut want = 0;
        let mut need_more = false;
        let mut close = false;
        output.stamp = state.limits.idle_timeout() > 0;
        // Nothing up to the next await yields: the frames share clock readings.
        let batch = clock::Batch::open();
        let mut split = BatchSplit::plan(buf.pending().len(), buf.is_full());
        let mut split_now = false;
        // Channels whose wait ended answer, then run the frames queued behind.
        if !settle(conn, &mut channels, &mut output) {
            return Ok(());
        }
        ahead.start(&state.keyspace);
        loop {
            if channels.stalled() || output.full() {
                break;
            }
            let pending = buf.pending();
            if pending.is_empty() {
                break;
            }
            // `CONFIG SET proto-max-bulk-len` applies to the very next frame,
            // and until one of its channels authenticates a connection may
            // only send small frames (as a RESP client may only send small
            // requests).
            // (A connection is trusted from the start when no password is
            // required then, so "not trusted" is "not authenticated".)
            let max_bulk_len = state.limits.proto_max_bulk_len();
            let now = decoder.limits();
            if max_bulk_len != now.max_bulk_len || now.unauthenticated == channels.trusted() {
                let limits = RespbLimits::for_bulk_len(max_bulk_len).unauthenticated(!channels.trusted());
                decoder.set_limits(limits);
                ahead.set_limits(limits);
            }
            let out = &mut output.out;
            // A frame the scan decoded comes back as two scalars, and the
            // match below reads them from registers: built into a `Decoded`
            // and matched again, they went through memory in pieces of
            // other widths, a store-forwarding stall per frame.
            let (consumed, frame) = match ahead.take(&mut args) {
                Some(found) => found,
                None => match decoder.decode(pending, &mut args) {
                    Ok(Decoded::Frame { frame, consumed }) => (consumed, frame),
                    Ok(Decoded::NeedMore { hint }) => {
                        want = hint;
                        need_more = true;
                        break;
                    }
                    Err(e) => {
                        RespbReplyWriter::new(out, e.mux.unwrap_or(0)).error(e.to_string().as_bytes());
                        close = true;
                        break;
                    }
                },
            };
            match frame {
                Frame::Command { mux } => {
                    let req = Request::new(&args, pending);
                    let ran = if state.pause.mode().is_some() {
                        open_and_run_frame(state, &mut channels, &mut ahead, mux, req, pending, out)
                    } else {
                        // No pause (one load): run it on the channel found once.
                        let memo = |db| ahead.before(&state.keyspace, db, pending);
                        channels.run_free(mux, out, memo, |session, out| {
                            execute(state, req, session, &mut RespbTarget::new(out, mux))
                        })
                    };
                    match ran {
                        RunFree::Ran => {}
                        RunFree::Busy => {
                            let (owned, size) = mux::owned(&req);
                            channels.enqueue(mux, Queued::Command(owned), size);
                        }
                        RunFree::Refused(why) => {
                            state.stats.error_reply(why);
                            RespbReplyWriter::new(out, mux).error(why);
                        }
                    }
                }
                Frame::MuxCreate { mux, target } => {
                    // Re-creating an open channel starts it afresh.
                    channels.close(target);
                    match channels.open(target) {
                        Ok(_) => answer_ok(&mut channels, mux, target, out),
                        Err(why) => {
                            state.stats.error_reply(why);
                            RespbReplyWriter::new(out, mux).error(why);
                        }
                    }
                }
                Frame::MuxClose { mux, target } => {
                    channels.close(target);
                    answer_ok(&mut channels, mux, target, out);
                }
            }
            buf.consume(consumed);
            ahead.after(consumed);
            if conn.over_hard_limit(output.out.len()) {
                return Ok(());
            }
            // A batch's replies go out with one write, unless they grow large
            // or the batch is split.
            if output.full() {
                output.hand_over();
            } else if output.idle() && split.due(buf.pending().len(), output.out.len()) {
                output.hand_over();
                split_now = true;
                break;
            }
        }
        state.tracking.flush_broadcasts(&state.clients, state.pubsub.limit());
        channels.drain_all(&mut output.out);
        drop(batch);
        // After the client's end of input, the frames it sent run (a blocked
        // channel is dropped, as Redis drops a blocked client that left).
        if close || (eof && (need_more || buf.pending().is_empty() || channels.stalled())) {
            return output.flush_all(conn).await;
        }
        if split_now {
            // The first part of a split batch: what the socket takes now
            // (the rest with the next wait), then on with the frames.
            output.sent = conn.try_write(&output.inflight).await?;
            continue;
        }
        output.hand_over();
        if !output.idle() && output.timer.is_none() {
            output.timer = reply_pacing::before_write(output.inflight.len() - output.sent).await;
        }
        output.args_held = args.retained_bytes();
        match wait_respb(conn, buf, want, eof, &mut channels, &mut kill, &wake, (&mut output, &mut args)).await {
            MuxWake::Closed => return Ok(()),
            MuxWake::Eof => eof = true,
            _ => {}
        }
    }
}

/// A command frame for channel `mux` while a `CLIENT PAUSE` is set:
/// opened and checked for being busy, then run or held (see [`run_frame`]).
fn open_and_run_frame(
    state: &ServerState,
    channels: &mut Channels<'_>,
    ahead: &mut RespbReadAhead,
    mux: u16,
    req: Request<'_>,
    pending: &[u8],
    out: &mut Vec<u8>,
) -> RunFree {
    match channels.open(mux).map(|ch| (ch.busy(), ch.session.db)) {
        Err(why) => RunFree::Refused(why),
        Ok((true, _)) => RunFree::Busy,
        Ok((false, db)) => {
            let _memo = ahead.before(&state.keyspace, db, pending);
            run_frame(state, channels, mux, req, out);
            RunFree::Ran
        }
    }
}

/// The `OK` of a MUX_CREATE / MUX_CLOSE sent on `mux`: at once, or in
/// `mux`'s order when frames before it wait there.
fn answer_ok(channels: &mut Channels<'_>, mux: u16, target: u16, out: &mut Vec<u8>) {
    match channels.get(mux) {
        Some(ch) if mux != target && ch.busy() => channels.enqueue(mux, Queued::Ok, 16),
        _ => RespbReplyWriter::new(out, mux).simple(b"OK"),
    }
}

/// Run `req` on free channel `mux`, or, when a `CLIENT PAUSE` holds it
/// back, keep a copy for the channel to wait with: the pause holds up that
/// channel only, as it would one RESP client, and the connection goes on
/// with the others. While no pause is set the check costs one atomic load.
fn run_frame(state: &ServerState, channels: &mut Channels<'_>, mux: u16, req: Request<'_>, out: &mut Vec<u8>) {
    // No pause (one load) needs no look at the channel's session.
    if state.pause.mode().is_some()
        && channels.get(mux).is_some_and(|ch| held_by_pause(state, req, &ch.session).is_some())
    {
        let (owned, size) = mux::owned(&req);
        channels.hold(mux, Queued::Command(owned), size);
        return;
    }
    run_frame_now(state, channels, mux, req, out);
}

/// Run one frame of channel `mux` that no pause holds.
fn run_frame_now(state: &ServerState, channels: &mut Channels<'_>, mux: u16, req: Request<'_>, out: &mut Vec<u8>) {
    // QUIT ends the logical client that sent it, not its neighbours.
    channels.run(mux, out, |session, out| execute(state, req, session, &mut RespbTarget::new(out, mux)));
}

/// Answer the channels whose blocked command ended and run the frames
/// queued behind them and behind commands a pause no longer holds, in
/// order, until each is free, blocked again or held again. False when the
/// connection is to end.
fn settle<S: ClientStream>(conn: &Conn<'_, S>, channels: &mut Channels<'_>, output: &mut Outgoing) -> bool {
    if !channels.any_busy() {
        return true;
    }
    for mux in channels.busy_channels() {
        if !channels.settle_wait(mux, &mut output.out) {
            continue;
        }
        while let Some(item) = channels.next_queued(mux) {
            match item {
                Queued::Ok => RespbReplyWriter::new(&mut output.out, mux).simple(b"OK"),
                // Not held: `next_queued` gives no command a pause holds.
                Queued::Command(args) => {
                    run_frame_now(conn.state, channels, mux, Request::new(&args, &[]), &mut output.out)
                }
            }
            if conn.over_hard_limit(output.out.len()) {
                return false;
            }
            if output.full() {
                output.hand_over();
            }
        }
    }
    true
}

/// What ended a RESPB connection's wait.
enum MuxWake {
    /// Input arrived, replies were written, a wait changed or a push came.
    Progress,
    /// The client sent its last bytes.
    Eof,
    Closed,
    Killed,
    Timeout,
}

/// Poll the socket both ways and the channels' events: write what is
/// handed over, take pushes and answered waits, read input. Ready when
/// the connection has something to do; `Closed` on end of input or an error.
/// A poll that finds nothing to do publishes the buffers, as the
/// connection is about to wait: the socket took what it takes, and room
/// was made for the read.
fn poll_respb<S: ClientStream>(
    cx: &mut Context<'_>,
    stream: &mut S,
    buf: &mut ReadBuffer,
    read_want: Option<usize>,
    channels: &mut Channels<'_>,
    output: &mut Outgoing,
) -> Poll<MuxWake> {
    let mut ready = false;
    while !output.idle() {
        match Pin::new(&mut *stream).poll_write(cx, &output.inflight[output.sent..]) {
            Poll::Ready(Ok(0)) => return Poll::Ready(MuxWake::Closed),
            Poll::Ready(Ok(n)) => {
                output.sent += n;
                output.progress = output.stamp.then(Instant::now);
            }
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::Interrupted => {}
            Poll::Ready(Err(_)) => return Poll::Ready(MuxWake::Closed),
            Poll::Pending => break,
        }
    }
    if output.idle() {
        if let Some(timer) = output.timer.take() {
            timer.done();
        }
    }
    // Replies waiting behind a finished write go next.
    if output.idle() && !output.out.is_empty() {
        ready = true;
    }
    if channels.poll_events(cx, &mut output.out).is_ready() {
        ready = true;
    }
    if let Some(want) = read_want {
        match buf.poll_fill(cx, stream, want) {
            Poll::Ready(Ok(0)) => return Poll::Ready(MuxWake::Eof),
            Poll::Ready(Err(_)) => return Poll::Ready(MuxWake::Closed),
            Poll::Ready(Ok(_)) => ready = true,
            Poll::Pending => {}
        }
    }
    if ready {
        Poll::Ready(MuxWake::Progress)
    } else {
        channels.show_buffers(&respb_figures(buf, output, channels.queued_bytes()));
        Poll::Pending
    }
}

/// Wait for input, the socket taking replies, a blocked channel's answer
/// or timeout, the end or change of a pause that holds a channel, a push
/// for a channel, or a channel's kill. Reading stops while the channel
/// queues or the replies waiting for the socket are full (backpressure),
/// and after the end of input.
#[allow(clippy::too_many_arguments)]
async fn wait_respb<S: ClientStream>(
    conn: &mut Conn<'_, S>,
    buf: &mut ReadBuffer,
    want: usize,
    eof: bool,
    channels: &mut Channels<'_>,
    kill: &mut Event,
    wake: &Arc<Signal>,
    (output, args): (&mut Outgoing, &mut CommandArgs),
) -> MuxWake {
    let state = conn.state;
    let within_limit = buf.pending().len() <= state.limits.query_buffer_limit();
    let may_read = within_limit && !eof && !channels.stalled() && !output.full();
    if !within_limit && !channels.any_busy() && output.idle() {
        return MuxWake::Closed;
    }
    // As in Redis, `timeout` spares blocked and subscribed clients.
    let idle =
        if channels.any_busy() || channels.any_listening() || !output.idle() { 0 } else { state.limits.idle_timeout() };
    let timers = RespbTimers {
        deadline: channels.next_deadline(),
        write_deadline: output.write_deadline(conn),
        held: channels.any_held(),
        idle_s: idle,
    };
    let Conn { stream, shutdown, .. } = conn;
    let read_want = may_read.then_some(want);
    let poll_io = |cx: &mut Context<'_>| poll_respb(cx, stream, buf, read_want, channels, output);
    let why = if timers.none() {
        // Nearly every wait: polled by hand in the order of
        // `wait_respb_timed`. At `-P 1` this runs once per frame, and the
        // futures `select!` builds and drops cost more than the read (as
        // in `Conn::fill_plain`).
        std::future::poll_fn(|cx| {
            if Pin::new(&mut *shutdown).poll(cx).is_ready() {
                return Poll::Ready(MuxWake::Closed);
            }
            if Pin::new(&mut *kill).poll(cx).is_ready() {
                return Poll::Ready(MuxWake::Killed);
            }
            poll_respb(cx, stream, buf, read_want, channels, output)
        })
        .await
    } else {
        wait_respb_timed(state, shutdown, kill, std::future::poll_fn(poll_io), timers).await
    };
    match why {
        MuxWake::Killed => {
            // A kill here means "look at the channels again": lowered
            // before looking, so a kill meanwhile raises it anew. The same
            // signal asks for the buffers back ([`crate::housekeeping::idle_trim`]).
            wake.lower();
            *kill = Event::raised(Arc::clone(wake));
            channels.close_killed();
            if channels.take_trim_request() {
                trim_respb(buf, output, args);
            }
        }
        MuxWake::Timeout => channels.expire(Instant::now()),
        MuxWake::Progress | MuxWake::Eof | MuxWake::Closed => {}
    }
    why
}

/// Give back the buffers of a RESPB connection asked to (see
/// [`crate::housekeeping::idle_trim`]): the read buffer unless a frame is partly read,
/// the reply buffers once their replies are all sent, the argument list.
/// The next wait shows the figures.
#[cold]
fn trim_respb(buf: &mut ReadBuffer, output: &mut Outgoing, args: &mut CommandArgs) {
    buf.trim();
    if output.idle() && output.out.is_empty() {
        output.out = Vec::new();
        output.inflight = Vec::new();
        output.sent = 0;
    }
    if buf.pending().is_empty() {
        *args = CommandArgs::new();
        output.args_held = 0;
    }
}

/// What a RESPB connection's buffers hold as it waits (see
/// [`BufferFigures`]): `inflight` is the reply buffer being written (`obl`
/// its unsent bytes), and `out`, collecting replies behind it, the one
/// further block (`oll`, `omem`); `queued` is what the frames queued for
/// busy channels hold.
fn respb_figures(buf: &ReadBuffer, output: &Outgoing, queued: usize) -> BufferFigures {
    let qbuf_cap = buf.capacity();
    let rbs = output.out.capacity() + output.inflight.capacity();
    BufferFigures {
        qbuf: buf.unrun(),
        qbuf_cap,
        rbs,
        rbp: output.peak,
        obl: output.inflight.len().saturating_sub(output.sent),
        oll: usize::from(!output.out.is_empty()),
        omem: output.out.len(),
        held: qbuf_cap + output.args_held + rbs + queued,
    }
}

/// What a RESPB connection waits for besides its socket and channels.
struct RespbTimers {
    /// The earliest timeout of a blocked channel.
    deadline: Option<Instant>,
    /// When replies stuck above the soft output limit close the connection.
    write_deadline: Option<Instant>,
    /// Whether a channel waits for a `CLIENT PAUSE` to end.
    held: bool,
    /// `timeout` for an idle connection (0: none).
    idle_s: u64,
}

impl RespbTimers {
    /// Whether there is nothing to wait for here.
    fn none(&self) -> bool {
        self.deadline.is_none() && self.write_deadline.is_none() && !self.held && self.idle_s == 0
    }
}

/// [`wait_respb`]'s wait when a timer or a pause is involved.
async fn wait_respb_timed(
    state: &ServerState,
    shutdown: &mut Event,
    kill: &mut Event,
    io: impl Future<Output = MuxWake>,
    timers: RespbTimers,
) -> MuxWake {
    let RespbTimers { deadline, write_deadline, held, idle_s } = timers;
    let sleep = async {
        match deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    let stalled_writer = async {
        match write_deadline {
            Some(d) => tokio::time::sleep_until(d.into()).await,
            None => std::future::pending().await,
        }
    };
    let pause = async {
        if held {
            state.pause.next_change().await
        } else {
            std::future::pending().await
        }
    };
    let idle_timer = async {
        if idle_s > 0 {
            tokio::time::sleep(Duration::from_secs(idle_s)).await
        } else {
            std::future::pending().await
        }
    };
    tokio::select! {
        biased;
        () = shutdown => MuxWake::Closed,
        () = kill => MuxWake::Killed,
        why = io => why,
        () = sleep => MuxWake::Timeout,
        // Settled at the top of the loop: held channels look again.
        () = pause => MuxWake::Progress,
        () = stalled_writer => MuxWake::Closed,
        () = idle_timer => MuxWake::Closed,
    }
}
