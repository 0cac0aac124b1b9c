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
//! marks as possibly replicated, such as EVAL and PUBLISH). The master's
//! stream on a replica is never held back, as Redis never pauses it.
//!
//! Two things pause: `CLIENT PAUSE`, and `FAILOVER`, which holds writes
//! until the replica it hands over to has all of them. Each is kept on its
//! own, so that `CLIENT UNPAUSE` ends only the first; what they add up to
//! is published in two atomics that every command reads.
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
    /// End of the pause in force in Unix milliseconds; 0 when there is
    /// none. Read before every command, so while no pause is set that
    /// costs one load.
    until_ms: AtomicI64,
    /// The [`PauseMode`] as its number; meaningful while `until_ms` is ahead.
    mode: AtomicU8,
    /// Why the server pauses, each on its own; `until_ms` and `mode` are
    /// what they add up to. Serializes every change of the three.
    purposes: Mutex<Purposes>,
    /// Wakes waiting commands when a pause ends early or changes.
    changed: Notify,
    /// Clients (connections and RESPB channels) whose command waits now.
    held: AtomicUsize,
}

/// The pauses in force, by why, as Redis keeps them: `CLIENT UNPAUSE`
/// ends a client's pause, not a `FAILOVER`'s.
#[derive(Debug, Default)]
struct Purposes {
    /// `CLIENT PAUSE`: its end (Unix ms) and mode.
    client: Option<(i64, PauseMode)>,
    /// `FAILOVER` holds writes until it ends.
    failover: bool,
}

impl Purposes {
    /// The pause these add up to at `now_ms`: the strongest mode in force,
    /// until the latest end of a pause in that mode (0: none).
    fn in_force(&self, now_ms: i64) -> (i64, PauseMode) {
        let client = self.client.filter(|&(until, _)| until > now_ms);
        match (client, self.failover) {
            (Some((until, PauseMode::All)), _) => (until, PauseMode::All),
            (_, true) => (i64::MAX, PauseMode::Write),
            (Some(client), false) => client,
            (None, false) => (0, PauseMode::Write),
        }
    }
}

/// Counts one client as held by a pause while it lives.
pub struct Held<'p>(&'p Pause);

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.release();
    }
}

/// The longest a waiting command sleeps before it looks at the pause again
/// (a `FAILOVER`'s has no end of its own).
const LOOK_AGAIN: Duration = Duration::from_secs(60);

impl Pause {
    /// Pause until `until_ms` in `mode` (`CLIENT PAUSE`). A client's pause
    /// already in force keeps its later end and its stronger mode, as
    /// Redis combines them.
    pub fn start(&self, until_ms: i64, mode: PauseMode) {
        let mut purposes = self.lock();
        let now = now_ms();
        purposes.client = Some(match purposes.client.filter(|&(until, _)| until > now) {
            Some((until, current)) => (until.max(until_ms), current.max(mode)),
            None => (until_ms, mode),
        });
        self.publish(&purposes, now);
    }

    /// End the client's pause now (`CLIENT UNPAUSE`) and release every
    /// command that only it held back.
    pub fn end(&self) {
        let mut purposes = self.lock();
        purposes.client = None;
        self.publish(&purposes, now_ms());
    }

    /// Hold writes back for a `FAILOVER` (`on`), or stop.
    pub fn set_failover(&self, on: bool) {
        let mut purposes = self.lock();
        purposes.failover = on;
        self.publish(&purposes, now_ms());
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Purposes> {
        self.purposes.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Store what `purposes` add up to and wake the waiting commands.
    fn publish(&self, purposes: &Purposes, now_ms: i64) {
        let (until, mode) = purposes.in_force(now_ms);
        self.mode.store(mode as u8, Ordering::Release);
        self.until_ms.store(until, Ordering::Release);
        crate::keyspace::pause_expiry(until);
        self.changed.notify_waiters();
    }

    /// The mode of the pause in force now, if any.
    #[inline]
    pub fn mode(&self) -> Option<PauseMode> {
        let until = self.until_ms.load(Ordering::Acquire);
        if until == 0 {
            return None;
        }
        if now_ms() >= until {
            return self.expired();
        }
        match self.mode.load(Ordering::Acquire) {
            2 => Some(PauseMode::All),
            _ => Some(PauseMode::Write),
        }
    }

    /// The published pause ran out: what is left of the others, stored so
    /// that the next look is one load again.
    #[cold]
    fn expired(&self) -> Option<PauseMode> {
        let purposes = self.lock();
        let now = now_ms();
        if self.until_ms.load(Ordering::Acquire) > now {
            drop(purposes);
            return self.mode();
        }
        let (until, mode) = purposes.in_force(now);
        if until != 0 {
            self.publish(&purposes, now);
            return Some(mode);
        }
        self.until_ms.store(0, Ordering::Release);
        None
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
        if self.mode().is_none() {
            return;
        }
        let left = self.until_ms.load(Ordering::Acquire).saturating_sub(now_ms());
        let sleep = Duration::from_millis(left.max(1).unsigned_abs()).min(LOOK_AGAIN);
        tokio::select! {
            () = changed => {}
            () = tokio::time::sleep(sleep) => {}
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
    fn a_failover_pause_outlives_client_unpause_and_a_client_pause_ending() {
        let pause = Pause::default();
        pause.set_failover(true);
        assert_eq!(pause.mode(), Some(PauseMode::Write));
        pause.start(now_ms() + 60_000, PauseMode::All);
        assert_eq!(pause.mode(), Some(PauseMode::All), "the stronger client pause, while it lasts");
        pause.end();
        assert_eq!(pause.mode(), Some(PauseMode::Write), "CLIENT UNPAUSE leaves the failover's");
        pause.start(now_ms() + 30, PauseMode::All);
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(pause.mode(), Some(PauseMode::Write), "the client pause ran out, the failover's stays");
        pause.set_failover(false);
        assert_eq!(pause.mode(), None);
        pause.start(now_ms() + 20, PauseMode::Write);
        std::thread::sleep(Duration::from_millis(40));
        assert_eq!(pause.mode(), None);
        assert_eq!(pause.until_ms.load(Ordering::Relaxed), 0, "an expired pause is cleared on the first look");
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
