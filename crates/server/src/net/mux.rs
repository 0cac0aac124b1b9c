//! The mux channels of one RESPB connection.
//!
//! Every mux id is an independent logical client with its own [`Session`]
//! (see `spec/respb.md`, section 6). The connection task owns the table and
//! serves all channels: a channel blocked in BLPOP & co. keeps its
//! [`Waiter`] here while the connection goes on decoding and running the
//! frames of the other channels. A command a `CLIENT PAUSE` holds back
//! holds back its channel the same way: it stays, copied, at the head of the
//! channel's queue, and the channel waits for the pause while the others go
//! on. Frames that arrive for a channel that is blocked, waits for a pause,
//! or still has frames waiting, are copied into that channel's queue and run
//! in order once it is free, so replies on one channel keep request order.
//! Queues are bounded per channel and per connection; past a bound the
//! connection stops decoding and reading (backpressure) until queued frames
//! have run.
//!
//! While no channel is blocked nothing here allocates per command: a frame
//! for a free channel runs straight from the read buffer.
//!
//! Pushes (pub/sub messages, tracking invalidations) reach a channel through
//! the same per-session inbox RESP connections use; the connection polls
//! the inboxes of the channels that have one and writes their messages as
//! Push frames on the channel's mux id.
//!
//! The connection's buffers (its read buffer, its reply buffers and the
//! frames queued here) belong to no channel in particular, so `CLIENT LIST`
//! shows them on one channel, the connection's *lead*: one of the channels
//! open when they are first published, and after it closes another one.
//! The other channels show zeros for them (their `tot-mem`
//! is what their own MULTI holds), so that `tot-mem` summed over the list
//! is what the connection holds, counted once, as `mem_clients_normal` is.
//! They are what the connection held when it last waited (the lead's own
//! `CLIENT INFO` does not see its request in the buffer, as a RESP
//! client's does). A connection with no channel open is no client, and its
//! buffers are counted nowhere until a channel opens.

use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use kvik_protocol::resp::writer::Protocol;
use kvik_protocol::respb::RespbReplyWriter;
use kvik_protocol::{CommandArgs, ReplySink};

use crate::client::session::Session;
use crate::commands::{held_by_pause, Outcome, ReplyTarget, Request};
use crate::net::id_map::IdMap;
use crate::registries::blocking::{Cancel, Encoding, Ended, Waiter};
use crate::registries::clients::{BufferFigures, ClientHandle, Shown};
use crate::registries::pubsub::write_message;
use crate::signal::Signal;
use crate::state::ServerState;

/// Most frames queued behind one channel's blocked or held command.
pub const QUEUE_FRAMES: usize = 1024;
/// Most bytes of frames queued on one connection, all channels together.
pub const QUEUE_BYTES: usize = 16 * 1024 * 1024;
/// Most messages taken from the inboxes in one poll, so a flood of
/// messages cannot keep the connection from its requests.
const MESSAGES_PER_POLL: usize = 1024;

/// Most channels a connection may have open while none of them has
/// authenticated (when the server requires a password): a stranger gets
/// no more than a few sessions' worth of memory.
pub const UNAUTHENTICATED_CHANNELS: usize = 16;
/// Most bytes of frames queued on a connection none of whose channels
/// has authenticated.
pub const UNAUTHENTICATED_QUEUE_BYTES: usize = 64 * 1024;

/// The error a frame for one channel too many gets.
pub const TOO_MANY: &[u8] = b"ERR too many mux channels on this connection (respb-max-channels)";
/// The error a frame for a new channel gets when an unauthenticated
/// connection has [`UNAUTHENTICATED_CHANNELS`] open: the one commands get.
pub use crate::client::auth::NOAUTH;
/// The error a frame for a new channel gets when the server has
/// `maxclients` clients, channels included.
pub const MAX_CLIENTS: &[u8] = b"ERR max number of clients reached";

/// Replies for one RESPB channel, as frames on its mux id.
///
/// One writer serves every reply of a command, so a reply written in parts
/// (`EXEC`'s array header, then each queued command's reply) stays one frame.
pub struct RespbTarget<'a> {
    writer: RespbReplyWriter<'a>,
    mux: u16,
}

impl<'a> RespbTarget<'a> {
    /// Replies appended to `out` on channel `mux`.
    pub fn new(out: &'a mut Vec<u8>, mux: u16) -> Self {
        RespbTarget { writer: RespbReplyWriter::new(out, mux), mux }
    }
}

impl ReplyTarget for RespbTarget<'_> {
    fn reply<F: FnOnce(&mut dyn ReplySink)>(&mut self, _session: &Session, write: F) {
        write(&mut self.writer);
    }

    fn encoding(&self, _session: &Session) -> Encoding {
        Encoding::Respb(self.mux)
    }
}

/// A frame waiting for its channel.
pub enum Queued {
    /// A command, with owned copies of its arguments.
    Command(CommandArgs),
    /// The `OK` of a MUX_CREATE / MUX_CLOSE sent on this channel, which
    /// acted when it was read but answers in the channel's order.
    Ok,
}

/// A channel's blocked command.
struct Blocked {
    waiter: Arc<Waiter>,
    /// Completes when the waiter's state changes; made again after.
    changed: Pin<Box<dyn Future<Output = ()>>>,
    /// The wait was cancelled (timeout); its reply is on the way.
    cancelled: bool,
}

fn watch(waiter: &Arc<Waiter>) -> Pin<Box<dyn Future<Output = ()>>> {
    let waiter = Arc::clone(waiter);
    Box::pin(async move { waiter.changed().await })
}

/// One channel: a logical client and what waits for it.
pub struct Channel {
    /// The channel's client state.
    pub session: Session,
    blocked: Option<Blocked>,
    /// The command at the head of `queue` waits for a `CLIENT PAUSE` to end.
    held: bool,
    queue: VecDeque<(Queued, usize)>,
    /// Whether the session has an inbox the connection polls.
    listening: bool,
}

impl Channel {
    /// `session` as channel `mux`: a RESP3 client listed with its mux id.
    fn adopting(mux: u16, mut session: Session) -> Channel {
        session.protocol = Protocol::Resp3;
        if let Some(handle) = session.handle() {
            handle.info().mux = Some(mux);
        }
        session.publish();
        // A RESP client that switched keeps its subscriptions and their inbox.
        let listening = session.subscriptions.inbox().is_some();
        Channel { session, blocked: None, held: false, queue: VecDeque::new(), listening }
    }

    /// Whether frames for this channel must queue (it is blocked, or
    /// frames before them still wait, a command held by a pause among them).
    pub fn busy(&self) -> bool {
        self.blocked.is_some() || !self.queue.is_empty()
    }
}

/// What [`Channels::run_free`] did with a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunFree {
    /// The command ran.
    Ran,
    /// The channel is blocked or has frames queued: the frame must queue.
    Busy,
    /// The channel could not be opened; the frame gets this error.
    Refused(&'static [u8]),
}

/// What opening a channel needs besides the map: the fields of
/// [`Channels`] it reads and updates, borrowed apart from the map so that
/// the channel found can be used beside them.
struct Opening<'x> {
    state: &'x ServerState,
    peer: &'x crate::client::peer::Peer,
    wake: &'x Arc<Signal>,
    listening: &'x mut Vec<u16>,
    trusted: bool,
    extra_slots: &'x mut usize,
}

/// Channel `mux` of a `Channels`, opened by [`new_channel`] on first use:
/// the fields borrowed one by one, so that the channel found can be used
/// beside the others, and nothing but the lookup on the common path.
macro_rules! open {
    ($channels:expr, $mux:expr) => {{
        let (open, mux) = ($channels.map.len(), $mux);
        let mut refused = TOO_MANY;
        let (state, trusted) = ($channels.state, $channels.trusted);
        let (peer, wake) = (&$channels.peer, &$channels.wake);
        let (listening, extra_slots) = (&mut $channels.listening, &mut $channels.extra_slots);
        $channels
            .map
            .get_or_try_insert_with(mux, || {
                let with = Opening { state, peer, wake, listening, trusted, extra_slots };
                new_channel(with, open, mux).map_err(|e| refused = e).ok()
            })
            .ok_or(refused)
    }};
}

/// A new channel `mux` for a connection with `open` channels, or the
/// error that refuses it: past `respb-max-channels`, past
/// [`UNAUTHENTICATED_CHANNELS`] before authentication, or past
/// `maxclients` (every channel after a connection's first is a client of
/// its own, and takes a slot as an accepted connection does).
#[cold]
fn new_channel(with: Opening<'_>, open: usize, mux: u16) -> Result<Channel, &'static [u8]> {
    let state = with.state;
    if open >= state.limits.respb_max_channels() {
        return Err(TOO_MANY);
    }
    if !with.trusted && open >= UNAUTHENTICATED_CHANNELS {
        return Err(NOAUTH);
    }
    if open > 0 {
        if !state.admit_client() {
            state.stats.rejected_connections.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            return Err(MAX_CLIENTS);
        }
        *with.extra_slots += 1;
    }
    let session = Session::for_peer(state, with.peer, Some(Arc::clone(with.wake)));
    if let Some(handle) = session.handle() {
        handle.on_trim(with.wake);
    }
    let channel = Channel::adopting(mux, session);
    if channel.listening {
        with.listening.push(mux);
    }
    Ok(channel)
}

/// `after_command` in place, on a channel whose command went on: the
/// channel answers in RESP3 and starts listening if it subscribed. True
/// when its tracking may have queued invalidations to drain.
fn continue_on(ch: &mut Channel, mux: u16, listening: &mut Vec<u16>) -> bool {
    ch.session.protocol = Protocol::Resp3;
    let newly_listening = !ch.listening && ch.session.subscriptions.inbox().is_some();
    ch.listening |= newly_listening;
    if newly_listening {
        listening.push(mux);
    }
    ch.session.tracking.on()
}

/// The channels of one connection.
pub struct Channels<'a> {
    state: &'a ServerState,
    /// By mux id.
    map: IdMap<Channel>,
    /// The client address the channels show (their connection's).
    peer: crate::client::peer::Peer,
    /// Notified when a channel of this connection is killed.
    wake: Arc<Signal>,
    /// Channels that are blocked or have queued frames.
    busy: Vec<u16>,
    /// How many channels wait for a pause to end.
    held: usize,
    /// Channels with an inbox.
    listening: Vec<u16>,
    queued_bytes: usize,
    /// A channel of the connection has authenticated, or none needed to:
    /// the pre-authentication bounds no longer apply to it.
    trusted: bool,
    /// Client slots (`maxclients`) taken by channels after the first,
    /// which the accepted connection's slot covers.
    extra_slots: usize,
    /// The channel that shows the connection's buffers, its entry (held
    /// here so that publishing looks up no channel), and what it was last
    /// shown.
    lead: Option<(u16, Arc<ClientHandle>, Shown)>,
}

impl Drop for Channels<'_> {
    fn drop(&mut self) {
        self.state.pause.release_many(self.held);
        self.state.release_clients(self.extra_slots);
        for ch in self.map.values() {
            if ch.blocked.is_some() {
                self.state.blocking.abandon(ch.session.id);
            }
        }
    }
}

impl<'a> Channels<'a> {
    /// No channels yet; `wake` is notified when one of them is killed.
    pub fn new(state: &'a ServerState, peer: crate::client::peer::Peer, wake: Arc<Signal>) -> Self {
        Channels {
            state,
            map: IdMap::default(),
            peer,
            wake,
            busy: Vec::new(),
            held: 0,
            listening: Vec::new(),
            queued_bytes: 0,
            trusted: !state.limits.auth_required(),
            extra_slots: 0,
            lead: None,
        }
    }

    /// Whether the connection was asked to give its buffers back
    /// ([`crate::housekeeping::idle_trim`]): through the channel that shows them, the
    /// only one whose figures can call for it.
    pub fn take_trim_request(&self) -> bool {
        self.lead.as_ref().is_some_and(|(_, handle, _)| handle.take_trim_request())
    }

    /// Whether a channel of the connection has authenticated, or was
    /// created while no password was required.
    #[inline]
    pub fn trusted(&self) -> bool {
        self.trusted
    }

    /// Bytes of the frames queued behind busy channels (as the queue
    /// bounds count them: each argument's bytes and 16 for its slot).
    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes
    }

    /// Publish the connection's buffers on its lead channel, choosing one
    /// when there is none; stored only when they changed.
    #[inline]
    pub fn show_buffers(&mut self, figures: &BufferFigures) {
        match &mut self.lead {
            Some((_, handle, shown)) => shown.publish(handle, figures),
            None => self.choose_lead(figures),
        }
    }

    #[cold]
    fn choose_lead(&mut self, figures: &BufferFigures) {
        let Some((mux, handle)) = self.map.iter().find_map(|(mux, ch)| Some((mux, Arc::clone(ch.session.handle()?))))
        else {
            return;
        };
        let mut shown = Shown::default();
        shown.publish(&handle, figures);
        self.lead = Some((mux, handle, shown));
    }

    /// Channel `mux`, opened with fresh state on first use, or the error
    /// that refuses it (see [`new_channel`]). One lookup of the map.
    #[inline]
    pub fn open(&mut self, mux: u16) -> Result<&mut Channel, &'static [u8]> {
        open!(self, mux)
    }

    /// Run a command on channel `mux`, opened on first use, if the channel
    /// is free: `prepare` is given the channel's database and what it
    /// returns lives while `run` runs (the read-ahead's key memo); then
    /// what follows every command, as in [`Channels::run`]. One lookup of
    /// the channel for all of it.
    pub fn run_free<M>(
        &mut self,
        mux: u16,
        out: &mut Vec<u8>,
        prepare: impl FnOnce(usize) -> M,
        run: impl FnOnce(&mut Session, &mut Vec<u8>) -> Outcome,
    ) -> RunFree {
        let ch = match open!(self, mux) {
            Ok(ch) => ch,
            Err(refused) => return RunFree::Refused(refused),
        };
        if ch.busy() {
            return RunFree::Busy;
        }
        let prepared = prepare(ch.session.db);
        let outcome = run(&mut ch.session, out);
        drop(prepared);
        self.trusted |= ch.session.authenticated;
        let drain = outcome == Outcome::Continue && continue_on(ch, mux, &mut self.listening);
        self.follow(mux, outcome, drain, out);
        RunFree::Ran
    }

    /// Run a command on channel `mux` with `run` (given the channel's
    /// session), then what follows every command there: closing or blocking
    /// the channel as the outcome says, and the bookkeeping of
    /// [`Channels::after_command`]. One lookup of the channel on the common
    /// path, where running a frame took five.
    pub fn run(&mut self, mux: u16, out: &mut Vec<u8>, run: impl FnOnce(&mut Session, &mut Vec<u8>) -> Outcome) {
        let Some(ch) = self.map.get_mut(mux) else { return };
        let outcome = run(&mut ch.session, out);
        self.trusted |= ch.session.authenticated;
        let drain = outcome == Outcome::Continue && continue_on(ch, mux, &mut self.listening);
        self.follow(mux, outcome, drain, out);
    }

    /// After a command on channel `mux`: closing or blocking it as
    /// `outcome` says, with the bookkeeping of [`Channels::after_command`]
    /// for a blocked one. A command that went on had that bookkeeping done
    /// in place ([`continue_on`]); `drain` says its tracking may have
    /// queued invalidations.
    fn follow(&mut self, mux: u16, outcome: Outcome, drain: bool, out: &mut Vec<u8>) {
        match outcome {
            // A channel is never handed to replication (`SYNC` refuses).
            Outcome::Close | Outcome::Replica => self.close(mux),
            Outcome::Block => {
                self.block(mux);
                self.after_command(mux, out);
            }
            Outcome::Continue => {
                if drain {
                    self.drain(mux, out);
                }
            }
        }
    }

    /// Make `session` channel `mux` (a RESP client that switched to RESPB).
    pub fn adopt(&mut self, mux: u16, session: Session) {
        if let Some(handle) = session.handle() {
            handle.on_trim(&self.wake);
        }
        let channel = Channel::adopting(mux, session);
        self.trusted |= channel.session.authenticated;
        if channel.listening {
            self.listening.push(mux);
        }
        self.map.insert(mux, channel);
    }

    /// Channel `mux`, if open.
    pub fn get(&mut self, mux: u16) -> Option<&mut Channel> {
        self.map.get_mut(mux)
    }

    /// Close channel `mux`: its wait is cancelled without a reply, its
    /// queued frames (a command held by a pause among them) dropped, and its
    /// MULTI, watches, subscriptions and tracking go with its session.
    pub fn close(&mut self, mux: u16) {
        let Some(ch) = self.map.remove(mux) else { return };
        if self.extra_slots > self.map.len().saturating_sub(1) {
            self.extra_slots -= 1;
            self.state.release_clients(1);
        }
        if self.lead.as_ref().is_some_and(|(lead, ..)| *lead == mux) {
            // Its entry leaves the sum with it; the next publish picks another.
            self.lead = None;
        }
        if ch.blocked.is_some() {
            self.state.blocking.abandon(ch.session.id);
        }
        if ch.held {
            self.held -= 1;
            self.state.pause.release_many(1);
        }
        self.queued_bytes -= ch.queue.iter().map(|(_, n)| n).sum::<usize>();
        self.busy.retain(|&m| m != mux);
        self.listening.retain(|&m| m != mux);
    }

    /// Close the channels another client's `CLIENT KILL` named.
    pub fn close_killed(&mut self) {
        let killed: Vec<u16> = self
            .map
            .iter()
            .filter(|(_, ch)| ch.session.handle().is_some_and(|h| h.is_killed()))
            .map(|(m, _)| m)
            .collect();
        for mux in killed {
            self.close(mux);
        }
    }

    /// Queue `item` (of `size` bytes) behind channel `mux`'s earlier frames.
    pub fn enqueue(&mut self, mux: u16, item: Queued, size: usize) {
        let Some(ch) = self.map.get_mut(mux) else { return };
        if !ch.busy() {
            self.busy.push(mux);
        }
        ch.queue.push_back((item, size));
        self.queued_bytes += size;
    }

    /// Channel `mux`'s command, which a pause holds back and of which `item`
    /// is a copy, waits at the head of its queue (the channel is free, so
    /// its queue is empty) until the pause lets it run.
    pub fn hold(&mut self, mux: u16, item: Queued, size: usize) {
        self.enqueue(mux, item, size);
        if let Some(ch) = self.map.get_mut(mux) {
            if !ch.held {
                ch.held = true;
                self.held += 1;
                self.state.pause.hold_many(1);
            }
        }
    }

    /// Whether any channel waits for a pause to end, so the connection is
    /// to wake when it ends or changes ([`crate::registries::pause::Pause::next_change`]).
    pub fn any_held(&self) -> bool {
        self.held > 0
    }

    /// Whether the queues are full: decoding and reading stop until frames ran.
    pub fn stalled(&self) -> bool {
        let bound = if self.trusted { QUEUE_BYTES } else { UNAUTHENTICATED_QUEUE_BYTES };
        self.queued_bytes >= bound
            || self.busy.iter().any(|m| self.map.get(*m).is_some_and(|ch| ch.queue.len() >= QUEUE_FRAMES))
    }

    /// Whether any channel is blocked or has queued frames.
    pub fn any_busy(&self) -> bool {
        !self.busy.is_empty()
    }

    /// Whether any channel may receive pushes.
    pub fn any_listening(&self) -> bool {
        !self.listening.is_empty()
    }

    /// Channel `mux` ran a command that blocked: wait on its waiter.
    pub fn block(&mut self, mux: u16) {
        let Some(ch) = self.map.get_mut(mux) else { return };
        let Some(waiter) = self.state.blocking.waiter(ch.session.id) else { return };
        if !ch.busy() {
            self.busy.push(mux);
        }
        ch.blocked = Some(Blocked { changed: watch(&waiter), waiter, cancelled: false });
    }

    /// After channel `mux` ran a command: note a new inbox, and append the
    /// invalidations a tracking client gets right after its reply. False
    /// when the channel fell too far behind and was closed.
    pub fn after_command(&mut self, mux: u16, out: &mut Vec<u8>) -> bool {
        let Some(ch) = self.map.get_mut(mux) else { return true };
        // RESET and HELLO may have asked for RESP2; a channel has RESP3 shapes.
        ch.session.protocol = Protocol::Resp3;
        if !ch.listening && ch.session.subscriptions.inbox().is_some() {
            ch.listening = true;
            self.listening.push(mux);
        }
        if ch.session.tracking.on() {
            return self.drain(mux, out);
        }
        true
    }

    /// Append the messages waiting for channel `mux` as Push frames; false
    /// (and the channel closed) when it overflowed its limit.
    pub fn drain(&mut self, mux: u16, out: &mut Vec<u8>) -> bool {
        let Some(ch) = self.map.get_mut(mux) else { return true };
        let listening = ch.session.subscriptions.active();
        let Some(inbox) = ch.session.subscriptions.inbox() else { return true };
        while let Some(msg) = inbox.try_recv() {
            write_message(&mut RespbReplyWriter::new(out, mux), Protocol::Resp3, listening, &msg);
        }
        if inbox.overflowed() {
            self.close(mux);
            return false;
        }
        true
    }

    /// [`Channels::drain`] for every listening channel.
    pub fn drain_all(&mut self, out: &mut Vec<u8>) {
        // By position: a drain that closes its channel takes it out of the list.
        let mut i = 0;
        while let Some(&mux) = self.listening.get(i) {
            if self.drain(mux, out) {
                i += 1;
            }
        }
    }

    /// The earliest deadline of a blocked command still waiting.
    pub fn next_deadline(&self) -> Option<Instant> {
        self.busy
            .iter()
            .filter_map(|m| self.map.get(*m)?.blocked.as_ref())
            .filter(|b| !b.cancelled)
            .filter_map(|b| b.waiter.deadline)
            .min()
    }

    /// Time out the blocked commands whose deadline passed.
    pub fn expire(&mut self, now: Instant) {
        for &mux in &self.busy {
            let Some(b) = self.map.get_mut(mux).and_then(|ch| ch.blocked.as_mut()) else { continue };
            if !b.cancelled && b.waiter.deadline.is_some_and(|d| d <= now) {
                self.state.blocking.cancel(&b.waiter, Cancel::Timeout);
                b.cancelled = true;
            }
        }
    }

    /// Ready when a blocked command's wait changed or messages arrived
    /// (appended to `out` as Push frames).
    pub fn poll_events(&mut self, cx: &mut Context<'_>, out: &mut Vec<u8>) -> Poll<()> {
        let mut ready = false;
        for &mux in &self.busy {
            let Some(b) = self.map.get_mut(mux).and_then(|ch| ch.blocked.as_mut()) else { continue };
            if b.changed.as_mut().poll(cx).is_ready() {
                b.changed = watch(&b.waiter);
                ready = true;
            }
        }
        let mut taken = 0;
        for &mux in &self.listening {
            let Some(ch) = self.map.get_mut(mux) else { continue };
            let listening = ch.session.subscriptions.active();
            let Some(inbox) = ch.session.subscriptions.inbox() else { continue };
            while taken < MESSAGES_PER_POLL {
                match inbox.poll_recv(cx) {
                    Poll::Ready(Some(msg)) => {
                        write_message(&mut RespbReplyWriter::new(out, mux), Protocol::Resp3, listening, &msg);
                        taken += 1;
                        ready = true;
                    }
                    _ => break,
                }
            }
            if inbox.overflowed() {
                // Closed by the next drain.
                ready = true;
            }
        }
        if ready {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }

    /// The channels that are blocked or have queued frames, in the order
    /// they became so.
    pub fn busy_channels(&self) -> Vec<u16> {
        self.busy.clone()
    }

    /// If channel `mux`'s blocked command ended, its reply (appended to
    /// `out`); then whether the channel is free to run its queued frames.
    /// A channel whose client is gone is closed.
    pub fn settle_wait(&mut self, mux: u16, out: &mut Vec<u8>) -> bool {
        let Some(ch) = self.map.get_mut(mux) else { return false };
        let Some(b) = &ch.blocked else { return true };
        match self.state.blocking.ended(&self.state.stats, &b.waiter) {
            None => false,
            Some(Ended::Gone) => {
                self.close(mux);
                false
            }
            Some(Ended::Reply(bytes)) => {
                out.extend_from_slice(&bytes);
                self.state.blocking.abandon(ch.session.id);
                ch.blocked = None;
                if ch.queue.is_empty() {
                    self.busy.retain(|&m| m != mux);
                }
                true
            }
        }
    }

    /// The next queued frame of channel `mux`: none while the channel is
    /// blocked, or while a pause holds back the command at the head of its
    /// queue (the channel then waits for the pause; the pause's state is
    /// read again at every call, so once the pause ended the command goes).
    pub fn next_queued(&mut self, mux: u16) -> Option<Queued> {
        let ch = self.map.get_mut(mux)?;
        if ch.blocked.is_some() {
            return None;
        }
        let held = match ch.queue.front() {
            Some((Queued::Command(args), _)) => {
                held_by_pause(self.state, Request::new(args, &[]), &ch.session).is_some()
            }
            _ => false,
        };
        if held != ch.held {
            ch.held = held;
            if held {
                self.held += 1;
                self.state.pause.hold_many(1);
            } else {
                self.held -= 1;
                self.state.pause.release_many(1);
            }
        }
        if held {
            return None;
        }
        let (item, size) = ch.queue.pop_front()?;
        self.queued_bytes -= size;
        if !ch.busy() {
            self.busy.retain(|&m| m != mux);
        }
        Some(item)
    }
}

/// An owned copy of a request's arguments, and its size for the queue bounds.
pub fn owned(req: &Request<'_>) -> (CommandArgs, usize) {
    let args = crate::commands::blocked::copy_args(req);
    let size = (0..req.argc()).map(|i| req.arg(i).len() + 16).sum();
    (args, size)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::peer::Peer;

    fn channels(state: &ServerState) -> Channels<'_> {
        Channels::new(state, Peer::default(), Signal::new())
    }

    fn args(words: &[&[u8]]) -> CommandArgs {
        let mut a = CommandArgs::new();
        for w in words {
            a.push_owned(w);
        }
        a
    }

    #[test]
    fn channels_open_up_to_the_limit_with_resp3_and_their_mux_listed() {
        let state = ServerState::default();
        state.limits.respb_max_channels.store(2, std::sync::atomic::Ordering::Relaxed);
        let mut ch = channels(&state);
        let first = ch.open(7).expect("room for one").session.id;
        assert_eq!(ch.open(7).expect("open already").session.id, first, "the same channel again");
        assert!(ch.open(8).is_ok());
        assert!(ch.open(9).is_err(), "a third channel is refused");
        let session = &ch.get(7).expect("open").session;
        assert_eq!(session.protocol, Protocol::Resp3);
        assert_eq!(session.handle().expect("registered").info().mux, Some(7));
        ch.close(8);
        assert!(ch.open(9).is_ok(), "closing frees a place");
    }

    #[test]
    fn the_connection_buffers_are_shown_on_one_channel_and_move_when_it_closes() {
        let state = ServerState::default();
        let mut ch = channels(&state);
        let figures = BufferFigures { qbuf: 3, qbuf_cap: 16384, held: 20000, ..BufferFigures::default() };
        ch.show_buffers(&figures);
        assert_eq!(state.clients.memory(), 0, "no channel, no client to show them on");
        assert!(ch.open(4).is_ok());
        assert!(ch.open(2).is_ok());
        ch.show_buffers(&figures);
        let shown =
            |ch: &mut Channels<'_>, mux| ch.get(mux).and_then(|c| c.session.handle()).map(|h| h.buffers.total());
        assert_eq!(state.clients.memory(), 20000, "counted once");
        assert_eq!(shown(&mut ch, 2), Some(20000), "on the first channel found");
        assert_eq!(shown(&mut ch, 4), Some(0));
        ch.show_buffers(&BufferFigures { qbuf: 70, ..figures });
        assert_eq!(ch.get(2).and_then(|c| c.session.handle()).map(|h| h.buffers.figures().qbuf), Some(70));
        assert_eq!(state.clients.memory(), 20000, "the same bytes held");
        ch.close(2);
        assert_eq!(state.clients.memory(), 0, "gone with the channel");
        ch.show_buffers(&figures);
        assert_eq!(shown(&mut ch, 4), Some(20000), "taken over by the channel left");
        assert_eq!(state.clients.memory(), 20000);
        drop(ch);
        assert_eq!(state.clients.memory(), 0);
    }

    #[test]
    fn queued_frames_come_back_in_order_and_count_against_the_bounds() {
        let state = ServerState::default();
        let mut ch = channels(&state);
        assert!(ch.open(1).is_ok());
        ch.enqueue(1, Queued::Command(args(&[b"PING"])), 10);
        ch.enqueue(1, Queued::Ok, 16);
        assert!(ch.any_busy() && ch.get(1).is_some_and(|c| c.busy()));
        assert!(matches!(ch.next_queued(1), Some(Queued::Command(a)) if a.len() == 1));
        assert!(matches!(ch.next_queued(1), Some(Queued::Ok)));
        assert!(ch.next_queued(1).is_none());
        assert!(!ch.any_busy(), "an empty queue leaves the busy list");
        for _ in 0..QUEUE_FRAMES - 1 {
            ch.enqueue(1, Queued::Ok, 1);
        }
        assert!(!ch.stalled());
        ch.enqueue(1, Queued::Ok, 1);
        assert!(ch.stalled(), "one channel's bound");
        ch.close(1);
        assert!(!ch.stalled() && !ch.any_busy(), "closing drops the queue");
        assert!(ch.open(2).is_ok());
        ch.enqueue(2, Queued::Ok, QUEUE_BYTES);
        assert!(ch.stalled(), "the connection's byte bound");
    }

    #[test]
    fn a_held_command_waits_at_the_head_of_its_queue_until_the_pause_lets_it_go() {
        let state = ServerState::default();
        let mut ch = channels(&state);
        assert!(ch.open(1).is_ok());
        assert!(ch.open(2).is_ok());
        state.pause.start(crate::keyspace::now_ms() + 60_000, crate::registries::pause::PauseMode::Write);
        ch.hold(1, Queued::Command(args(&[b"SET", b"k", b"v"])), 40);
        ch.enqueue(1, Queued::Command(args(&[b"GET", b"k"])), 30);
        assert!(ch.any_held() && ch.get(1).is_some_and(|c| c.busy()));
        assert!(ch.next_queued(1).is_none(), "the SET stays held, and the GET behind it");
        assert!(ch.any_held());
        state.pause.end();
        assert!(matches!(ch.next_queued(1), Some(Queued::Command(a)) if a.len() == 3));
        assert!(!ch.any_held(), "released once the pause ended");
        assert!(matches!(ch.next_queued(1), Some(Queued::Command(a)) if a.len() == 2));
        assert!(!ch.any_busy());
        // A command queued behind a free one is held when it comes to the head.
        state.pause.start(crate::keyspace::now_ms() + 60_000, crate::registries::pause::PauseMode::All);
        ch.enqueue(2, Queued::Ok, 16);
        ch.enqueue(2, Queued::Command(args(&[b"GET", b"k"])), 30);
        assert!(matches!(ch.next_queued(2), Some(Queued::Ok)), "an OK is never held");
        assert!(ch.next_queued(2).is_none() && ch.any_held());
        ch.close(2);
        assert!(!ch.any_held() && !ch.any_busy() && !ch.stalled(), "closing drops the held command");
    }
}
