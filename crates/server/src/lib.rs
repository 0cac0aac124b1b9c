//! The kvik server as a library, so that the binary stays a thin shell and tests
//! can start a server inside their own process when that is simpler than a child.
//!
//! Layers, top down; a module imports only modules below it (no circles,
//! `build/layers.py` measures it, docs/architecture.md has the table):
//! - [`listener`]: one event loop per thread and the acceptor that hands
//!   connections to the loops in turn; [`sockets`]: binding and rebinding;
//! - [`connection`]: one client connection: read buffer, protocol detection,
//!   batched parsing and one write per batch, for RESP and RESPB alike;
//!   [`mux`]: the channels of a RESPB connection, their queues and pushes;
//!   [`read_ahead`], [`reply_pacing`], [`net_meter`], [`peer`];
//! - [`commands`]: validation against the command table, execution and the
//!   command implementations, one module per family (`commands::blocked`:
//!   blocking commands' waits, and serving waiters once their keys are ready);
//! - [`session`]: the state of one logical client (a RESP connection or a
//!   RESPB channel); [`auth`];
//! - [`changes`]: what follows a change to a key (events, WATCH, tracking);
//! - [`state`]: what all connections share;
//! - the registries: [`clients`], [`pubsub`], [`tracking`], [`watch`],
//!   [`blocking`] (waiters), [`pause`], [`transaction`] (a MULTI's queue);
//!   [`events`]: the vocabulary of changes;
//! - [`config`], [`log`], [`supervision`], [`stats`] and the metrics
//!   ([`stat_lanes`], [`instant_metrics`], [`histogram`], [`latency`]), the
//!   process-level housekeeping ([`idle_trim`], [`heap_return`],
//!   [`reply_budget`]) and small pieces ([`clock`], [`id_map`], [`signal`]);
//! - below the server, in the `kvik-store` crate (re-exported here as
//!   [`keyspace`], [`types`] and [`inline_list`]): the sharded databases and
//!   the stored value types with their encodings, which cannot import
//!   anything above them.

#![forbid(unsafe_code)]

pub use kvik_store::{inline_list, keyspace, types};

pub mod auth;
pub mod blocking;
pub mod changes;
pub mod clients;
pub mod clock;
pub mod commands;
pub mod config;
pub mod connection;
pub mod events;
pub mod heap_return;
pub mod histogram;
pub mod id_map;
pub mod idle_trim;
pub mod instant_metrics;
pub mod latency;
pub mod listener;
pub mod log;
pub mod mux;
pub mod net_meter;
pub mod pause;
pub mod peer;
pub mod pubsub;
pub mod read_ahead;
pub mod reply_budget;
pub mod reply_pacing;
pub mod session;
pub mod signal;
pub mod sockets;
pub mod stat_lanes;
pub mod state;
pub mod stats;
pub mod supervision;
pub mod tracking;
pub mod transaction;
pub mod watch;

/// Version of kvik itself, as printed in the startup line.
pub const KVIK_VERSION: &str = env!("CARGO_PKG_VERSION");

/// The Redis version whose behaviour kvik reproduces.
///
/// Clients read `version` from `HELLO` (and later `INFO`) to decide which
/// features they may use, so kvik reports the Redis release it matches
/// rather than its own version number.
pub const REDIS_VERSION: &str = "7.0.15";
