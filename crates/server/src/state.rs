//! [`ServerState`]: what every connection of the server shares.

use std::sync::Arc;

use crate::auth::Auth;
use crate::clients::ClientRegistry;
use crate::keyspace::Keyspace;
use crate::session::ClientIds;
use crate::stats::Stats;

/// Default number of keyspace shards: many more than cores, so that commands
/// from different threads rarely meet on one lock.
pub const DEFAULT_SHARDS: usize = 256;

/// Number of databases (`SELECT 0` to `SELECT 15`), as Redis's default.
pub const DEFAULT_DATABASES: usize = 16;

/// State shared by all connections and threads.
#[derive(Debug)]
pub struct ServerState {
    /// Client id allocation.
    pub ids: ClientIds,
    /// All the data.
    pub keyspace: Keyspace,
    /// The password clients must give.
    pub auth: Auth,
    /// Connected clients.
    pub clients: Arc<ClientRegistry>,
    /// Counters for INFO and the slow log.
    pub stats: Stats,
    /// The TCP port the server listens on, for INFO.
    pub port: std::sync::atomic::AtomicU16,
}

impl Default for ServerState {
    fn default() -> Self {
        ServerState {
            ids: ClientIds::default(),
            keyspace: Keyspace::new(DEFAULT_SHARDS, DEFAULT_DATABASES),
            auth: Auth::default(),
            clients: Arc::default(),
            stats: Stats::default(),
            port: std::sync::atomic::AtomicU16::new(0),
        }
    }
}
