//! The kvik server as a library, so that the binary stays a thin shell and tests
//! can start a server inside their own process when that is simpler than a child.
//!
//! Layers, outside in:
//! - [`config`]: the option registry, redis.conf files and `--name value` flags;
//! - [`supervision`]: daemonizing, the pid file, supervisors, the OOM score;
//!   [`log`]: the server log in Redis's format;
//! - [`listener`]: listening sockets, one event loop per thread, and the
//!   acceptor that hands connections to the loops in turn;
//! - [`connection`]: one client connection: read buffer, protocol detection,
//!   batched parsing and one write per batch, for RESP and RESPB alike;
//! - [`session`]: the state of one logical client (a RESP connection or a RESPB channel);
//! - [`mux`]: the channels of a RESPB connection, their queues and pushes;
//! - [`commands`]: validation against the command table and the command implementations;
//! - [`blocking`]: clients waiting in BLPOP, XREAD BLOCK and the like, and
//!   serving them when a write makes their keys ready;
//! - [`state`]: what all connections share;
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
pub mod pubsub;
pub mod read_ahead;
pub mod reply_budget;
pub mod reply_pacing;
pub mod session;
pub mod signal;
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
