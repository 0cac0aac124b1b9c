//! Keys that became ready for blocked clients, noted on the thread that
//! made them so.
//!
//! A database reports every key it creates or deletes while clients are
//! blocked (see [`super::Keyspace::blocked_gate`]); the server's blocked
//! client machinery takes them from here once the command that made them
//! ready has finished and holds no lock. The list lives in the store, not
//! with the waiters, so that the store never calls up into the server.

use crate::per_thread;

/// Most keys kept; past it the list only notes that more became ready
/// ([`take_overflow`]), and the server looks at every key it has waiters on.
pub const READY_LIMIT: usize = 1024;

/// Note that `key` of database `db` may now serve blocked clients.
pub fn push(db: usize, key: &[u8]) {
    per_thread::with(|t| t.has_ready.set(true));
    per_thread::with_notes(|n| {
        let mut r = n.ready.borrow_mut();
        if r.keys.iter().any(|(d, k)| *d == db && &k[..] == key) {
            return;
        }
        if r.keys.len() >= READY_LIMIT {
            r.overflow = true;
        } else {
            r.keys.push_back((db, key.into()));
        }
    });
}

/// The oldest ready key, taken.
pub fn pop() -> Option<(usize, Box<[u8]>)> {
    per_thread::with_notes(|n| n.ready.borrow_mut().keys.pop_front())
}

/// Whether a key was noted since [`settled`]: one thread-local load.
#[inline]
pub fn any() -> bool {
    per_thread::with(|t| t.has_ready.get())
}

/// Every noted key was dealt with.
pub fn settled() {
    per_thread::with(|t| t.has_ready.set(false));
}

/// Whether more keys became ready than were kept, since the last call.
pub fn take_overflow() -> bool {
    per_thread::with_notes(|n| std::mem::take(&mut n.ready.borrow_mut().overflow))
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
