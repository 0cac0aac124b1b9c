//! The routing table shared by a mux connection's writer and reader tasks:
//! which channels exist, and for each the reply slots in the order their
//! requests were written.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use kvik_protocol::Value;
use tokio::sync::{mpsc, oneshot};

use crate::error::{Error, Result};

/// Mux id of the control channel, on which MUX_CLOSE travels.
pub const CONTROL_MUX: u16 = 0;

/// Where a reply goes.
pub type Waiter = oneshot::Sender<Result<Value>>;

/// What a request expects back.
pub enum Slot {
    /// One reply.
    Reply(Waiter),
    /// A subscribe-family command: `remaining` confirmations arrive as pushes;
    /// the first completes `reply`, the last retires the slot. An ordinary
    /// (non-push) reply, such as an arity error, retires it at once.
    Subscription { reply: Option<Waiter>, remaining: usize },
}

/// A control frame's acknowledgement, expected on [`CONTROL_MUX`].
pub enum Control {
    /// MUX_CLOSE: remove the route, failing its slots, then tell the closer.
    Close { target: u16, reply: Option<Waiter> },
}

/// A message for the writer task.
pub enum Outgoing {
    /// A request frame on channel `mux`.
    Request { mux: u16, frame: Vec<u8>, slot: Slot },
    /// Several request frames on channel `mux`, written together, one slot each.
    Batch { mux: u16, frames: Vec<u8>, slots: Vec<Slot> },
    /// A control frame on the control channel.
    Control { frame: Vec<u8>, ack: Control },
}

struct Route {
    slots: VecDeque<Slot>,
    pushes: mpsc::Sender<Value>,
    dropped: Arc<AtomicU64>,
}

/// The channels of one connection, and whether it is still alive.
#[derive(Default)]
pub struct Router {
    channels: HashMap<u16, Route>,
    control: VecDeque<Control>,
    next_id: u16,
    dead: Option<String>,
    /// Replies that matched no waiting request (ignored; kept for diagnosis).
    pub(crate) unmatched: u64,
}

impl Router {
    /// Why the connection is dead, if it is.
    pub fn dead(&self) -> Option<&str> {
        self.dead.as_deref()
    }

    /// `Err(ConnectionLost)` once the connection is dead.
    pub fn check_alive(&self) -> Result<()> {
        match &self.dead {
            Some(why) => Err(Error::ConnectionLost(why.clone())),
            None => Ok(()),
        }
    }

    /// Channels with a route (open, or closing but not yet acknowledged).
    pub fn open_channels(&self) -> usize {
        self.channels.len()
    }

    /// Reserve a free channel id (1–65535) and create its route.
    pub fn allocate(
        &mut self,
        max: usize,
        push_capacity: usize,
    ) -> Result<(u16, mpsc::Receiver<Value>, Arc<AtomicU64>)> {
        if self.channels.len() >= max {
            return Err(Error::ChannelLimit { max });
        }
        // Fewer than 65,535 routes exist, so a free id is found within one lap.
        let mut id = self.next_id;
        loop {
            id = id.wrapping_add(1);
            if id != CONTROL_MUX && !self.channels.contains_key(&id) {
                break;
            }
        }
        self.next_id = id;
        let (tx, rx) = mpsc::channel(push_capacity);
        let dropped = Arc::new(AtomicU64::new(0));
        self.channels.insert(id, Route { slots: VecDeque::new(), pushes: tx, dropped: dropped.clone() });
        Ok((id, rx, dropped))
    }

    /// Writer side: record `msg`'s reply slot and append its frame to `batch`,
    /// or fail it at once when it can no longer be answered.
    pub fn accept(&mut self, msg: Outgoing, batch: &mut Vec<u8>) {
        if let Some(why) = &self.dead {
            let why = why.clone();
            return fail_outgoing(msg, || Error::ConnectionLost(why.clone()));
        }
        match msg {
            Outgoing::Request { mux, frame, slot } => match self.channels.get_mut(&mux) {
                Some(route) => {
                    route.slots.push_back(slot);
                    batch.extend_from_slice(&frame);
                }
                None => fail_slot(slot, Error::ChannelClosed),
            },
            Outgoing::Batch { mux, frames, slots } => match self.channels.get_mut(&mux) {
                Some(route) => {
                    route.slots.extend(slots);
                    batch.extend_from_slice(&frames);
                }
                None => slots.into_iter().for_each(|s| fail_slot(s, Error::ChannelClosed)),
            },
            Outgoing::Control { frame, ack } => {
                self.control.push_back(ack);
                batch.extend_from_slice(&frame);
            }
        }
    }

    /// Reader side: hand one decoded frame to whoever waits for it.
    pub fn deliver(&mut self, mux: u16, value: Value) {
        if mux == CONTROL_MUX {
            return self.deliver_control(value);
        }
        let Some(route) = self.channels.get_mut(&mux) else {
            self.unmatched += 1;
            return;
        };
        if let Value::Push(_) = value {
            let confirms = is_subscription_confirmation(&value);
            if confirms {
                if let Some(Slot::Subscription { reply, remaining }) = route.slots.front_mut() {
                    if let Some(w) = reply.take() {
                        let _ = w.send(Ok(value.clone()));
                    }
                    *remaining = remaining.saturating_sub(1);
                    if *remaining == 0 {
                        route.slots.pop_front();
                    }
                }
            }
            match route.pushes.try_send(value) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(_)) => {
                    route.dropped.fetch_add(1, Ordering::Relaxed);
                }
                // Nobody listens for pushes on this channel.
                Err(mpsc::error::TrySendError::Closed(_)) => {}
            }
            return;
        }
        match route.slots.pop_front() {
            Some(Slot::Reply(w)) => {
                let _ = w.send(Ok(value));
            }
            Some(Slot::Subscription { reply, .. }) => {
                if let Some(w) = reply {
                    let _ = w.send(Ok(value));
                }
            }
            None => self.unmatched += 1,
        }
    }

    fn deliver_control(&mut self, value: Value) {
        match self.control.pop_front() {
            Some(Control::Close { target, reply }) => {
                if let Some(route) = self.channels.remove(&target) {
                    route.slots.into_iter().for_each(|s| fail_slot(s, Error::ChannelClosed));
                }
                if let Some(w) = reply {
                    let _ = w.send(Ok(value));
                }
            }
            None => {
                // An error on the control mux with nothing asked: the server
                // is about to close the connection (a fatal decode error).
                if let Value::Error(e) = value {
                    self.fail_all(format!("server error: {}", String::from_utf8_lossy(&e)));
                } else {
                    self.unmatched += 1;
                }
            }
        }
    }

    /// The connection is gone: fail every pending request, end every push
    /// stream, and refuse everything from now on.
    pub fn fail_all(&mut self, why: String) {
        if self.dead.is_none() {
            self.dead = Some(why);
        }
        let why = self.dead.clone().unwrap_or_default();
        for (_, route) in self.channels.drain() {
            route.slots.into_iter().for_each(|s| fail_slot(s, Error::ConnectionLost(why.clone())));
        }
        for ack in self.control.drain(..) {
            fail_control(ack, Error::ConnectionLost(why.clone()));
        }
    }
}

fn fail_slot(slot: Slot, e: Error) {
    match slot {
        Slot::Reply(w) | Slot::Subscription { reply: Some(w), .. } => {
            let _ = w.send(Err(e));
        }
        Slot::Subscription { reply: None, .. } => {}
    }
}

fn fail_control(ack: Control, e: Error) {
    match ack {
        Control::Close { reply: Some(reply), .. } => {
            let _ = reply.send(Err(e));
        }
        Control::Close { reply: None, .. } => {}
    }
}

fn fail_outgoing(msg: Outgoing, e: impl Fn() -> Error) {
    match msg {
        Outgoing::Request { slot, .. } => fail_slot(slot, e()),
        Outgoing::Batch { slots, .. } => slots.into_iter().for_each(|s| fail_slot(s, e())),
        Outgoing::Control { ack, .. } => fail_control(ack, e()),
    }
}

/// For a subscribe-family command, how many confirmations it will get (one
/// per channel or pattern named; one when it names none, as the
/// `UNSUBSCRIBE`-with-nothing-subscribed case does); `None` for other commands.
pub fn subscription_replies<A: AsRef<[u8]>>(args: &[A]) -> Option<usize> {
    const NAMES: [&[u8]; 6] =
        [b"SUBSCRIBE", b"PSUBSCRIBE", b"SSUBSCRIBE", b"UNSUBSCRIBE", b"PUNSUBSCRIBE", b"SUNSUBSCRIBE"];
    let name = args.first()?.as_ref();
    NAMES.iter().any(|n| n.eq_ignore_ascii_case(name)).then(|| args.len().saturating_sub(1).max(1))
}

/// A push that confirms a (un)subscription, as opposed to a message.
fn is_subscription_confirmation(v: &Value) -> bool {
    let Value::Push(items) = v else { return false };
    let Some(Value::Bulk(kind) | Value::Simple(kind)) = items.first() else { return false };
    subscription_replies(&[kind]).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn push(kind: &str, chan: &str) -> Value {
        Value::Push(vec![Value::bulk(kind), Value::bulk(chan), Value::Integer(1)])
    }

    fn request(r: &mut Router, mux: u16, slot: Slot) {
        let mut batch = Vec::new();
        r.accept(Outgoing::Request { mux, frame: vec![1, 2], slot }, &mut batch);
    }

    #[test]
    fn replies_complete_slots_in_order_per_channel() {
        let mut r = Router::default();
        let (a, _pa, _) = r.allocate(10, 4).unwrap();
        let (b, _pb, _) = r.allocate(10, 4).unwrap();
        let (w1, mut r1) = oneshot::channel();
        let (w2, mut r2) = oneshot::channel();
        let (w3, mut r3) = oneshot::channel();
        request(&mut r, a, Slot::Reply(w1));
        request(&mut r, b, Slot::Reply(w2));
        request(&mut r, a, Slot::Reply(w3));
        r.deliver(b, Value::Integer(2));
        r.deliver(a, Value::Integer(1));
        r.deliver(a, Value::Integer(3));
        assert_eq!(r1.try_recv().unwrap().unwrap(), Value::Integer(1));
        assert_eq!(r2.try_recv().unwrap().unwrap(), Value::Integer(2));
        assert_eq!(r3.try_recv().unwrap().unwrap(), Value::Integer(3));
        // A stray reply is counted, not a panic.
        r.deliver(a, Value::Null);
        r.deliver(999, Value::Null);
        assert_eq!(r.unmatched, 2);
    }

    #[test]
    fn subscriptions_complete_on_first_confirmation_and_messages_go_to_pushes() {
        let mut r = Router::default();
        let (a, mut pushes, dropped) = r.allocate(10, 2).unwrap();
        let (ws, mut rs) = oneshot::channel();
        let (wp, mut rp) = oneshot::channel();
        request(&mut r, a, Slot::Subscription { reply: Some(ws), remaining: 2 });
        request(&mut r, a, Slot::Reply(wp));
        r.deliver(a, push("subscribe", "x"));
        assert_eq!(rs.try_recv().unwrap().unwrap(), push("subscribe", "x"));
        r.deliver(a, push("subscribe", "y"));
        r.deliver(a, push("message", "x"));
        // The PING reply goes to the PING, not to the subscription.
        r.deliver(a, Value::simple("PONG"));
        assert_eq!(rp.try_recv().unwrap().unwrap(), Value::simple("PONG"));
        assert_eq!(pushes.try_recv().unwrap(), push("subscribe", "x"));
        assert_eq!(pushes.try_recv().unwrap(), push("subscribe", "y"));
        // Capacity 2: the message was dropped and counted.
        assert!(pushes.try_recv().is_err());
        assert_eq!(dropped.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn an_error_reply_retires_a_subscription_slot() {
        let mut r = Router::default();
        let (a, _p, _) = r.allocate(10, 2).unwrap();
        let (ws, mut rs) = oneshot::channel();
        request(&mut r, a, Slot::Subscription { reply: Some(ws), remaining: 1 });
        r.deliver(a, Value::error("ERR wrong number of arguments"));
        assert!(rs.try_recv().unwrap().unwrap().is_error());
        assert_eq!(r.unmatched, 0);
    }

    #[test]
    fn close_ack_fails_what_is_left_and_frees_the_id() {
        let mut r = Router::default();
        let (a, _p, _) = r.allocate(1, 2).unwrap();
        assert!(matches!(r.allocate(1, 2), Err(Error::ChannelLimit { max: 1 })));
        let (wb, mut rb) = oneshot::channel();
        request(&mut r, a, Slot::Reply(wb));
        let mut batch = Vec::new();
        r.accept(Outgoing::Control { frame: vec![], ack: Control::Close { target: a, reply: None } }, &mut batch);
        r.deliver(CONTROL_MUX, Value::simple("OK"));
        assert!(matches!(rb.try_recv().unwrap(), Err(Error::ChannelClosed)));
        assert_eq!(r.open_channels(), 0);
        // Requests for the closed id fail instead of waiting forever.
        let (wc, mut rc) = oneshot::channel();
        request(&mut r, a, Slot::Reply(wc));
        assert!(matches!(rc.try_recv().unwrap(), Err(Error::ChannelClosed)));
        assert!(r.allocate(1, 2).is_ok());
    }

    #[test]
    fn ids_skip_the_control_mux_and_ids_in_use() {
        let mut r = Router { next_id: u16::MAX - 1, ..Router::default() };
        assert_eq!(r.allocate(10, 1).unwrap().0, u16::MAX);
        assert_eq!(r.allocate(10, 1).unwrap().0, 1);
    }

    #[test]
    fn failing_the_connection_fails_everything_pending() {
        let mut r = Router::default();
        let (a, mut pushes, _) = r.allocate(10, 2).unwrap();
        let (w, mut rx) = oneshot::channel();
        request(&mut r, a, Slot::Reply(w));
        r.deliver(CONTROL_MUX, Value::error("ERR RESPB unknown opcode 0x0999"));
        assert!(matches!(rx.try_recv().unwrap(), Err(Error::ConnectionLost(m)) if m.contains("unknown opcode")));
        assert!(pushes.try_recv().is_err());
        let (w, mut rx) = oneshot::channel();
        request(&mut r, a, Slot::Reply(w));
        assert!(matches!(rx.try_recv().unwrap(), Err(Error::ConnectionLost(_))));
    }

    #[test]
    fn subscribe_family_is_recognised() {
        assert_eq!(subscription_replies(&["subscribe", "a", "b"]), Some(2));
        assert_eq!(subscription_replies(&["UNSUBSCRIBE"]), Some(1));
        assert_eq!(subscription_replies(&["PUBLISH", "a", "b"]), None);
        assert_eq!(subscription_replies::<&str>(&[]), None);
    }
}
