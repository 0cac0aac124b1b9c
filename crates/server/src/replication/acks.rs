//! `WAIT`'s side of replication: which offset of the stream holds a
//! client's changes, how many replicas acknowledged it, and the
//! `REPLCONF GETACK *` that asks them to say so now.
//!
//! A client in `WAIT` waits for every change made before it (the
//! keyspace's last place then), not only its own: a superset, so the
//! count it gets never claims more than replicas have. The offset that
//! holds a place is known once the feed has appended it; it is the
//! stream's end at that moment (before the feed's own `PING` or
//! `GETACK`, which a replica acknowledges only with what follows), again
//! never less than needed. Changes
//! made before the feed started are in every replica's snapshot, so any
//! online replica has them (offset 0), as Redis counts a client that
//! wrote before any replica came.

use std::sync::atomic::Ordering;

use crate::registries::replication::LinkState;
use crate::state::ServerState;

/// The offset of the stream that holds every change up to `place`
/// (`None`: the feed has not appended it yet).
pub fn offset_of(state: &ServerState, place: u64) -> Option<u64> {
    let journal = &state.journal;
    if !journal.feed_on() || place < journal.feed_first() {
        return Some(0);
    }
    let repl = &state.replication;
    // The end stored before the feed's progress holds every byte of it.
    (repl.places_done.load(Ordering::Acquire) >= place).then(|| repl.fed_offset.load(Ordering::Acquire))
}

/// What the online replicas acknowledged.
pub fn online_acks(state: &ServerState) -> Vec<u64> {
    let replicas = state.replication.replicas();
    replicas.iter().filter(|r| r.state() == LinkState::Online).map(|r| r.ack_offset.load(Ordering::Acquire)).collect()
}

/// How many online replicas acknowledged `offset`.
pub fn count(state: &ServerState, offset: u64) -> usize {
    online_acks(state).into_iter().filter(|&a| a >= offset).count()
}

/// Answer the clients in `WAIT` that have their replicas (after an
/// acknowledgement, a replica leaving, or the feed's round).
pub fn serve(state: &ServerState) {
    if state.blocking.waits_for_acks() {
        let acks = online_acks(state);
        state.blocking.serve_acks(|place| offset_of(state, place), &acks);
    }
}

/// Ask every replica for its offset: the feed appends
/// `REPLCONF GETACK *` to the stream in its next round.
pub fn request(state: &ServerState) {
    state.replication.getack_wanted.store(true, Ordering::Release);
    state.journal.wake_feed();
}
