//! [`Signal`]: a flag that connections wait on between every two requests.
//!
//! A connection waits for its next input and, at the same time, for the
//! server's shutdown and for `CLIENT KILL`. Polling a watch channel or a
//! `Notify` again on every request takes a lock each time, which cost more
//! than a whole small command. A `Signal` is an atomic flag next to a
//! `Notify`: a waiter that is already registered with the same waker only
//! reads the flag (see `connection::Event`).

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use tokio::sync::Notify;

/// A flag raised by one thread and waited on by tasks on any thread.
#[derive(Debug, Default)]
pub struct Signal {
    raised: AtomicBool,
    notify: Notify,
}

impl Signal {
    /// A signal not raised yet.
    pub fn new() -> Arc<Signal> {
        Arc::new(Signal::default())
    }

    /// Raise the flag and wake every task waiting on it.
    pub fn raise(&self) {
        // The flag first: a waiter woken by the notification must see it.
        self.raised.store(true, Ordering::Release);
        self.notify.notify_waiters();
    }

    /// Whether the flag is up.
    pub fn is_raised(&self) -> bool {
        self.raised.load(Ordering::Acquire)
    }

    /// Take the flag down again; whether it was up. For signals that mean
    /// "look again" rather than "stop", such as a kill of one of several
    /// channels sharing a connection.
    pub fn lower(&self) -> bool {
        self.raised.swap(false, Ordering::AcqRel)
    }

    /// Complete once the flag is up (at once if it already is).
    pub async fn raised(&self) {
        loop {
            let notified = self.notify.notified();
            tokio::pin!(notified);
            // Registered before the flag is read, so a raise in between
            // still wakes this waiter.
            notified.as_mut().enable();
            if self.is_raised() {
                return;
            }
            notified.await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime")
    }

    #[test]
    fn a_raise_from_another_thread_wakes_the_waiter() {
        let signal = Signal::new();
        let raiser = Arc::clone(&signal);
        let thread = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(20));
            raiser.raise();
        });
        runtime().block_on(async {
            tokio::time::timeout(std::time::Duration::from_secs(5), signal.raised()).await.expect("woken");
        });
        assert!(signal.is_raised());
        thread.join().expect("raiser");
    }

    #[test]
    fn a_raised_signal_completes_at_once_and_can_be_lowered() {
        let signal = Signal::new();
        signal.raise();
        runtime().block_on(signal.raised());
        assert!(signal.lower());
        assert!(!signal.lower());
        assert!(!signal.is_raised());
    }
}
