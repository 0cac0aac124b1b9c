//! The kvik server as a library, so that the binary stays a thin shell and tests
//! can start a server inside their own process when that is simpler than a child.
//!
//! Layers, top down, one folder or file each; a module imports only
//! modules below its own layer (no circles between folders or files:
//! `build/layers.py --folders` measures it, docs/architecture.md has the
//! table):
//! - [`net`]: the acceptor and event loops, connections (RESP and RESPB),
//!   mux channels, the frame scan, reply pacing;
//! - [`commands`]: validation against the command table, execution and the
//!   command implementations, one module per family (`commands::blocked`:
//!   blocking commands' waits, and serving waiters once their keys are ready);
//! - [`client`]: one logical client's session, authentication, MULTI queue
//!   and peer; [`effects`]: what follows a change to a key; [`housekeeping`]:
//!   what the server does by itself once a second;
//! - [`state`]: what all connections share;
//! - [`registries`]: clients, pub/sub, tracking, watches, blocked clients,
//!   pause; [`supervision`]: daemonizing, the pid file, supervisors;
//! - [`log`], [`sockets`] (binding and rebinding), [`config`];
//! - [`metrics`], [`events`] (the vocabulary of changes), [`clock`],
//!   [`signal`];
//! - below the server, in the `kvik-store` crate (brought in here as
//!   [`keyspace`], [`types`] and [`inline_list`]): the sharded databases and
//!   the stored value types with their encodings, which cannot import
//!   anything above them.

#![forbid(unsafe_code)]

pub(crate) use kvik_store::{inline_list, keyspace, types};

// What the binary and the tests use; everything else is the crate's own.
pub use commands::acl::load_users;
pub use commands::install_renames;
pub use net::listener::{Server, StopReason};
pub use net::read_ahead::min_keyspace_bytes;

/// Load what the server kept, before it accepts connections (see
/// [`persistence::load_at_start`]); the append-only file's commands run
/// through [`commands::replay`] and a file's function libraries are
/// installed by [`commands::install_loaded_functions`]. The error is the
/// text to log before exiting.
pub fn load_at_start(state: &std::sync::Arc<state::ServerState>) -> Result<(), String> {
    persistence::load_at_start(state, commands::replay, commands::install_loaded_functions)
}

/// Start the link to the master `replicaof` names, if it names one (see
/// [`replication::replica`]), once the server listens.
pub fn start_replication(state: &std::sync::Arc<state::ServerState>) -> std::io::Result<()> {
    replication::update_refusals(state);
    let Some((host, port)) = state.config().replicaof() else { return Ok(()) };
    let upstream = registries::replication::Upstream { host, port };
    replication::replica::follow(state, upstream, commands::REPLICATION_RUNNERS)
}

pub(crate) mod client;
pub(crate) mod clock;
pub(crate) mod commands;
pub mod config;
pub(crate) mod effects;
pub(crate) mod events;
pub(crate) mod housekeeping;
pub mod log;
pub(crate) mod metrics;
pub(crate) mod net;
pub(crate) mod per_thread;
pub mod persistence;
pub(crate) mod registries;
pub(crate) mod replication;
pub(crate) mod signal;
pub(crate) mod sockets;
pub mod state;
pub mod supervision;
pub(crate) mod tls;

/// Version of kvik itself, as printed in the startup line.
pub const KVIK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Redis version whose behaviour kvik reproduces.
///
/// Clients read `version` from `HELLO` (and later `INFO`) to decide which
/// features they may use, so kvik reports the Redis release it matches
/// rather than its own version number.
pub const REDIS_VERSION: &str = "7.0.15";
