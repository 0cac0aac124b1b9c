//! [`ServerState`]: what every connection of the server shares.

use crate::keyspace::Keyspace;
use crate::session::ClientIds;

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
}

impl Default for ServerState {
    fn default() -> Self {
        ServerState { ids: ClientIds::default(), keyspace: Keyspace::new(DEFAULT_SHARDS, DEFAULT_DATABASES) }
    }
}
