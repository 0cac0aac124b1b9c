//! Keys that became ready for blocked clients, noted on the thread that
//! made them so.
//!
//! A database reports every key it creates or deletes while clients are
//! blocked (see [`super::Keyspace::blocked_gate`]); the server's blocked
//! client machinery takes them from here once the command that made them
//! ready has finished and holds no lock. The list lives in the store, not
//! with the waiters, so that the store never calls up into the server.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

/// Most keys kept; past it the list only notes that more became ready
/// ([`take_overflow`]), and the server looks at every key it has waiters on.
pub const READY_LIMIT: usize = 1024;

thread_local! {
    /// Keys made ready on this thread since they were last taken.
    static READY: RefCell<ReadyList> = RefCell::new(ReadyList::default());
    /// Whether this thread has ready keys (read after every command).
    static HAS_READY: Cell<bool> = const { Cell::new(false) };
}

/// Ready keys of one thread, in the order they became ready, without repeats.
#[derive(Default)]
struct ReadyList {
    keys: VecDeque<(usize, Box<[u8]>)>,
    /// More keys became ready than were kept.
    overflow: bool,
}

/// Note that `key` of database `db` may now serve blocked clients.
pub fn push(db: usize, key: &[u8]) {
    READY.with(|r| {
        let mut r = r.borrow_mut();
        if r.keys.iter().any(|(d, k)| *d == db && &k[..] == key) {
            return;
        }
        if r.keys.len() >= READY_LIMIT {
            r.overflow = true;
        } else {
            r.keys.push_back((db, key.into()));
        }
    });
    HAS_READY.with(|h| h.set(true));
}

/// The oldest ready key, taken.
pub fn pop() -> Option<(usize, Box<[u8]>)> {
    READY.with(|r| r.borrow_mut().keys.pop_front())
}

/// Whether a key was noted since [`settled`]: one thread-local load.
#[inline]
pub fn any() -> bool {
    HAS_READY.with(Cell::get)
}

/// Every noted key was dealt with.
pub fn settled() {
    HAS_READY.with(|h| h.set(false));
}

/// Whether more keys became ready than were kept, since the last call.
pub fn take_overflow() -> bool {
    READY.with(|r| std::mem::take(&mut r.borrow_mut().overflow))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ready_keys_are_kept_once_in_order() {
        push(0, b"a");
        push(0, b"b");
        push(0, b"a");
        push(1, b"a");
        assert!(any());
        let got: Vec<_> = std::iter::from_fn(pop).collect();
        assert_eq!(got, [(0, Box::from(&b"a"[..])), (0, Box::from(&b"b"[..])), (1, Box::from(&b"a"[..]))]);
        settled();
        assert!(!any());
    }
}
