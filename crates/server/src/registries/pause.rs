//! `CLIENT PAUSE` and `CLIENT UNPAUSE`: holding clients' commands back until
//! a deadline, as Redis 7.0 does.
//!
//! A paused command waits in its connection's task before it runs, so its
//! event loop keeps serving other connections and no keyspace lock is held
//! while it waits; on a RESPB connection only the command's channel waits
//! (see `crate::net::mux`), and the connection goes on with the others, waking
//! when the pause ends or changes ([`Pause::next_change`]).
//!
//! Commands a pause holds back: every command in `ALL` mode; in `WRITE` mode
//! the ones that may write or be propagated (write commands, and those Redis
//! marks as possibly replicated, such as EVAL and PUBLISH). Redis never
//! pauses replicas; kvik has none.
//!
//! A client whose command waits counts as blocked (INFO `blocked_clients`),
//! as Redis counts it. Keys do not expire while writes are paused: an
//! expiry is a write (a deletion replicas and the AOF would see), so Redis
//! holds it back too, and reads find such keys until the pause ends.

use std::sync::atomic::{AtomicI64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use kvik_protocol::commands::{id, CommandFlags, CommandId, CommandSpec};
use tokio::sync::Notify;

use crate::keyspace::now_ms;

/// What a pause holds back; `All` is the stronger.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum PauseMode {
    /// Commands that may write or be propagated.
    Write = 1,
    /// Every command.
    All = 2,
}

/// Commands without the write flag that Redis 7.0 still pauses in `WRITE`
/// mode (its `may-replicate` flag, which `COMMAND INFO` does not show).
const MAY_REPLICATE: &[CommandId] = &[id::EVAL, id::EVALSHA, id::FCALL, id::PUBLISH, id::SPUBLISH, id::PFCOUNT];

/// The server's pause state.
#[derive(Debug, Default)]
pub struct Pause {
    /// End of the pause in Unix milliseconds; 0 when there is none. Read
    /// before every command, so while no pause is set that costs one load.
    until_ms: AtomicI64,
    /// The [`PauseMode`] as its number; meaningful while `until_ms` is ahead.
    mode: AtomicU8,
    /// Serializes `start` and `end`, which read and then write both fields.
    update: Mutex<()>,
    /// Wakes waiting commands when a pause ends early or changes.
    changed: Notify,
    /// Clients (connections and RESPB channels) whose command waits now.
    held: AtomicUsize,
}

/// Counts one client as held by a pause while it lives.
pub struct Held<'p>(&'p Pause);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

impl Pause {
    /// Pause until `until_ms` in `mode`. A pause already in force keeps its
    /// later end and its stronger mode, as Redis combines them.
    pub fn start(&self, until_ms: i64, mode: PauseMode) {
        let _update = self.update.lock().unwrap_or_else(|e| e.into_inner());
        let (until, mode) = match self.mode() {
            Some(current) => (self.until_ms.load(Ordering::Acquire).max(until_ms), current.max(mode)),
            None => (until_ms, mode),
        };
        self.mode.store(mode as u8, Ordering::Release);
        self.until_ms.store(until, Ordering::Release);
        crate::keyspace::pause_expiry(until);
        self.changed.notify_waiters();
    }

    /// End the pause now (`CLIENT UNPAUSE`) and release every waiting command.
    pub fn end(&self) {
        let _update = self.update.lock().unwrap_or_else(|e| e.into_inner());
        self.until_ms.store(0, Ordering::Release);
        crate::keyspace::pause_expiry(0);
        self.changed.notify_waiters();
    }

    /// The mode of the pause in force now, if any.
    #[inline]
    pub fn mode(&self) -> Option<PauseMode> {
        let until = self.until_ms.load(Ordering::Acquire);
        if until == 0 || now_ms() >= until {
            return None;
        }
        match self.mode.load(Ordering::Acquire) {
            2 => Some(PauseMode::All),
            _ => Some(PauseMode::Write),
        }
    }

    /// Wait until no pause holds `spec` back (at once when none does),
    /// counted as a held client meanwhile.
    pub async fn wait_for(&self, spec: &CommandSpec) {
        if !self.mode().is_some_and(|mode| holds(mode, spec)) {
            return;
        }
        let _held = self.hold();
        while self.mode().is_some_and(|mode| holds(mode, spec)) {
            self.next_change().await;
        }
    }

    /// Count a client as held until the guard goes.
    pub fn hold(&self) -> Held<'_> {
        self.held.fetch_add(1, Ordering::Relaxed);
        Held(self)
    }

    /// Count `n` more clients as held (RESPB channels, which keep their own
    /// count and give it back with [`Pause::release_many`]).
    pub fn hold_many(&self, n: usize) {
        self.held.fetch_add(n, Ordering::Relaxed);
    }

    /// Stop counting `n` clients as held.
    pub fn release_many(&self, n: usize) {
        self.held.fetch_sub(n, Ordering::Relaxed);
    }

    fn release(&self) {
        self.release_many(1);
    }

    /// Clients whose command waits for the pause now.
    pub fn held_clients(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }

    /// Wait until the pause in force ends (`CLIENT UNPAUSE` or its deadline)
    /// or changes (a new `CLIENT PAUSE`); at once when none is in force. A
    /// caller holding commands back looks again at what the pause holds.
    pub async fn next_change(&self) {
        let changed = self.changed.notified();
        tokio::pin!(changed);
        // Registered before the state is read, so an `end` or `start`
        // after a caller's last look still wakes this waiter.
        changed.as_mut().enable();
        let until = self.until_ms.load(Ordering::Acquire);
        let left = until.saturating_sub(now_ms());
        if until == 0 || left <= 0 {
            return;
        }
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep(Duration::from_millis(left.unsigned_abs())) => {}
        }
    }
}

/// Whether a pause in `mode` holds back `spec`.
pub fn holds(mode: PauseMode, spec: &CommandSpec) -> bool {
    match mode {
        PauseMode::All => true,
        PauseMode::Write => spec.flags.contains(CommandFlags::WRITE) || MAY_REPLICATE.contains(&spec.id),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kvik_protocol::commands::lookup;

    fn spec(name: &str) -> &'static CommandSpec {
        lookup(name.as_bytes()).unwrap()
    }

    #[test]
    fn write_mode_holds_writes_and_may_replicate_commands() {
        assert!(holds(PauseMode::Write, spec("set")));
        assert!(holds(PauseMode::Write, spec("publish")));
        assert!(holds(PauseMode::Write, spec("eval")));
        assert!(!holds(PauseMode::Write, spec("get")));
        assert!(!holds(PauseMode::Write, spec("ping")));
        assert!(holds(PauseMode::All, spec("get")));
    }

    #[test]
    fn pauses_combine_and_end() {
        let pause = Pause::default();
        assert_eq!(pause.mode(), None);
        let soon = now_ms() + 60_000;
        pause.start(soon, PauseMode::All);
        pause.start(soon - 30_000, PauseMode::Write);
        assert_eq!(pause.mode(), Some(PauseMode::All), "the stronger mode stays");
        assert_eq!(pause.until_ms.load(Ordering::Relaxed), soon, "the later end stays");
        pause.end();
        assert_eq!(pause.mode(), None);
        pause.start(soon, PauseMode::Write);
        assert_eq!(pause.mode(), Some(PauseMode::Write), "an ended pause leaves no mode behind");
        pause.start(now_ms() - 1, PauseMode::All);
        assert_eq!(pause.mode(), Some(PauseMode::All), "a stronger mode applies to the pause in force");
    }

    #[test]
    fn next_change_wakes_on_unpause_on_a_new_pause_and_at_the_deadline() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
        let pause = Pause::default();
        let within = |secs| tokio::time::timeout(Duration::from_secs(secs), pause.next_change());
        runtime.block_on(async {
            within(1).await.expect("no pause: at once");
            pause.start(now_ms() + 60_000, PauseMode::Write);
            let (waited, ()) = tokio::join!(within(10), async { pause.end() });
            waited.expect("CLIENT UNPAUSE wakes the wait");
            pause.start(now_ms() + 60_000, PauseMode::Write);
            let (waited, ()) = tokio::join!(within(10), async { pause.start(now_ms() + 60_000, PauseMode::All) });
            waited.expect("a new pause wakes the wait");
            assert!(within(0).await.is_err(), "an unchanged pause keeps it waiting");
            pause.end();
            pause.start(now_ms() + 50, PauseMode::Write);
            within(10).await.expect("the deadline ends the wait");
            assert_eq!(pause.mode(), None);
        });
    }
}
