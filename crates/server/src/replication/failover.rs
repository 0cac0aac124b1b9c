//! `FAILOVER`: hand the master's role to one of its replicas without
//! losing a write, as Redis 7.0 does it.
//!
//! 1. Writes are held (a pause of its own, which `CLIENT UNPAUSE` does not
//!    end), so the stream stops growing.
//! 2. The master waits for a replica (the one named by `TO`, or the first
//!    to get there) to acknowledge the whole stream. With every shard
//!    held, every write that ran has its place, and that place must be in
//!    the stream and the replica's acknowledgement at the stream's end.
//! 3. It becomes a replica of that one and asks it, with
//!    `PSYNC <replid> <offset> FAILOVER`, to become the master; the
//!    replica promotes itself (PSYNC2), so the old master continues from
//!    its offset without a full sync. Its held writes then run, as a
//!    replica's: `-READONLY`.
//!
//! `TIMEOUT` ends the wait: the failover is given up, or with `FORCE` goes
//! on to the named replica anyway. If that replica refuses the request,
//! or `FAILOVER ABORT` comes while this server follows it, it is a master
//! again (with a new replication id, as after `REPLICAOF NO ONE`).
//!
//! One thread watches the wait, every [`CHECK`]; the link to the new
//! master ends the failover once its `PSYNC` is answered
//! ([`super::replica`]).

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::registries::replication::{Failover, FailoverState, Link, LinkState, Upstream};
use crate::state::ServerState;

use super::replica::{self, Runners};

/// How often the wait looks at the replicas' acknowledgements.
const CHECK: Duration = Duration::from_millis(10);

/// What `FAILOVER` asked for.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `TO host port` (the port as given: one no replica has matches none).
    pub target: Option<(String, i64)>,
    /// `TIMEOUT` in milliseconds (0: none).
    pub timeout_ms: i64,
    pub force: bool,
}

/// Begin a failover, or say why not, in Redis's words.
pub fn start(state: &Arc<ServerState>, ask: Request, runners: Runners) -> Result<(), &'static str> {
    let repl = &state.replication;
    let mut failover = repl.lock_failover();
    if failover.state != FailoverState::None {
        return Err("ERR FAILOVER already in progress.");
    }
    if repl.upstream().is_some() {
        return Err("ERR FAILOVER is not valid when server is a replica.");
    }
    let replicas = repl.replicas();
    if replicas.is_empty() {
        return Err("ERR FAILOVER requires connected replicas.");
    }
    if ask.force && (ask.timeout_ms == 0 || ask.target.is_none()) {
        return Err("ERR FAILOVER with force option requires both a timeout and target HOST and IP.");
    }
    let target = match &ask.target {
        Some((host, port)) => {
            let Some(link) = find(&replicas, host, *port) else {
                return Err("ERR FAILOVER target HOST and PORT is not a replica.");
            };
            if link.state() != LinkState::Online {
                return Err("ERR FAILOVER target replica is not online.");
            }
            crate::log!(Notice, "FAILOVER requested to {host}:{port}.");
            Some((host.clone(), link.port))
        }
        None => {
            crate::log!(Notice, "FAILOVER requested to any replica.");
            None
        }
    };
    let end_ms = if ask.timeout_ms > 0 { crate::keyspace::now_ms().saturating_add(ask.timeout_ms) } else { 0 };
    *failover = Failover { state: FailoverState::WaitForSync, target, end_ms, force: ask.force };
    drop(failover);
    state.pause.set_failover(true);
    let weak = Arc::downgrade(state);
    let spawned = std::thread::Builder::new().name("kvik-failover".into()).spawn(move || watch(&weak, runners));
    if spawned.is_err() {
        end(state);
        return Err("ERR FAILOVER could not start its thread");
    }
    Ok(())
}

/// `FAILOVER ABORT`.
pub fn abort_by_request(state: &Arc<ServerState>) -> Result<(), &'static str> {
    if state.replication.failover().state == FailoverState::None {
        return Err("ERR No failover in progress.");
    }
    abort(state, "Failover manually aborted");
    Ok(())
}

/// Give the failover up: a master again if this server already follows
/// the target, and writes go on.
pub fn abort(state: &Arc<ServerState>, why: &str) {
    let failover = state.replication.failover();
    match (&failover.state, &failover.target) {
        (FailoverState::None, _) => return,
        (_, Some((host, port))) => crate::log!(Notice, "FAILOVER to {host}:{port} aborted: {why}"),
        (_, None) => crate::log!(Notice, "FAILOVER to any replica aborted: {why}"),
    }
    if failover.state == FailoverState::InProgress {
        if let Err(e) = replica::promote(state, None) {
            crate::log!(Warning, "The replication feed could not start again: {e}");
        }
    }
    end(state);
}

/// The failover is over (the new master answered, or it was given up):
/// writes go on.
pub fn end(state: &ServerState) {
    *state.replication.lock_failover() = Failover::default();
    state.pause.set_failover(false);
}

/// The replica at `host` and `port`, as Redis finds it: its announced or
/// peer address, and the port it listens on.
fn find<'a>(replicas: &'a [Arc<Link>], host: &str, port: i64) -> Option<&'a Arc<Link>> {
    replicas.iter().find(|l| l.ip.eq_ignore_ascii_case(host) && i64::from(l.port) == port)
}

/// The wait, until it ends one way or another.
fn watch(state: &Weak<ServerState>, runners: Runners) {
    loop {
        std::thread::sleep(CHECK);
        let Some(state) = state.upgrade() else { return };
        if state.shutting_down() {
            return;
        }
        let failover = state.replication.failover();
        match failover.state {
            FailoverState::None | FailoverState::InProgress => return,
            FailoverState::WaitForSync => check(&state, &failover, runners),
        }
    }
}

/// One look: the timeout, then whether a replica has the whole stream.
fn check(state: &Arc<ServerState>, failover: &Failover, runners: Runners) {
    if failover.end_ms > 0 && crate::keyspace::now_ms() >= failover.end_ms {
        match (&failover.target, failover.force) {
            (Some((host, port)), true) => {
                crate::log!(Notice, "FAILOVER to {host}:{port} time out exceeded, failing over.");
                hand_over(state, host, *port, runners);
            }
            _ => abort(state, "Replica never caught up before timeout"),
        }
        return;
    }
    let Some((host, port)) = synced_replica(state, failover) else { return };
    crate::log!(Notice, "Failover target {host}:{port} is synced, failing over.");
    hand_over(state, &host, port, runners);
}

/// The replica to hand over to, once it has every write that ran.
fn synced_replica(state: &ServerState, failover: &Failover) -> Option<(String, u16)> {
    let repl = &state.replication;
    // Held, no write runs: every one that ran has its place, and none
    // comes between this look and the next.
    let all = state.keyspace.lock_all();
    let place = state.keyspace.changes_taken();
    let fed = super::acks::offset_of(state, place).is_some();
    let end = repl.offset();
    drop(all);
    if !fed {
        return None;
    }
    let replicas = repl.replicas();
    let synced = |l: &Arc<Link>| l.state() == LinkState::Online && l.ack_offset.load(Ordering::Acquire) == end;
    match &failover.target {
        Some((host, port)) => {
            find(&replicas, host, i64::from(*port)).filter(|l| synced(l)).map(|_| (host.clone(), *port))
        }
        None => replicas.iter().find(|l| synced(l)).map(|l| (l.ip.clone(), l.port)),
    }
}

/// Follow `host:port`, whose link asks it to take over.
fn hand_over(state: &Arc<ServerState>, host: &str, port: u16, runners: Runners) {
    {
        let mut failover = state.replication.lock_failover();
        failover.state = FailoverState::InProgress;
        failover.target = Some((host.to_string(), port));
    }
    let upstream = Upstream { host: host.to_string(), port };
    if let Err(e) = replica::follow(state, upstream, runners) {
        abort(state, &format!("the link to the target could not start: {e}"));
    }
}
