//! Replication: the feed that turns the journal's records into the
//! stream replicas receive ([`feed`]), a replica's connection once it
//! asked to synchronize ([`master`]; [`diskless`] when the snapshot goes
//! straight to its socket), and this server's link to its own
//! master when it is a replica ([`replica`]); `WAIT`'s count of the
//! replicas that acknowledged a client's changes ([`acks`]); and
//! `FAILOVER`, which hands the master's role to a replica ([`failover`]).
//!
//! The stream is the journal's order of changes, the one the append-only
//! file writes: per-key order as the threads executed, a multi-key change
//! or a transaction whole (see [`crate::registries::journal`]), so that a
//! replica that replays it ends with the master's keyspace. What the
//! master shares of it lives in [`crate::registries::replication`].

pub mod acks;
pub mod diskless;
pub mod failover;
pub mod feed;
pub mod master;
pub mod replica;

use crate::registries::replication::MinReplicas;
use crate::state::ServerState;

/// Work out again what this server refuses for replication's sake
/// (`replica-read-only`, `replica-serve-stale-data`; as a master,
/// `min-replicas-to-write`), after a change of role, link, replica or
/// setting, and once a second as acknowledgements age.
pub fn update_refusals(state: &ServerState) {
    let config = state.config();
    let (read_only, serve_stale) =
        (config.get("replica-read-only") == "yes", config.get("replica-serve-stale-data") == "yes");
    let min = MinReplicas {
        to_write: usize::try_from(config.int("min-replicas-to-write")).unwrap_or(0),
        max_lag_s: config.int("min-replicas-max-lag"),
    };
    drop(config);
    state.replication.update_refusals(read_only, serve_stale, min);
}

/// Once a second: a master without replicas for `repl-backlog-ttl`
/// seconds lets its backlog go.
pub fn free_idle_backlog(state: &ServerState) {
    let ttl_s = state.config().int("repl-backlog-ttl");
    if state.replication.free_idle_backlog(ttl_s, crate::keyspace::now_ms()) {
        crate::log!(Notice, "Replication backlog freed after {ttl_s} seconds without connected replicas.");
    }
}
