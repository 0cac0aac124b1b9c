//! Replication: the feed that turns the journal's records into the
//! stream replicas receive ([`feed`]), a replica's connection once it
//! asked to synchronize ([`master`]), and this server's link to its own
//! master when it is a replica ([`replica`]).
//!
//! The stream is the journal's order of changes, the one the append-only
//! file writes: per-key order as the threads executed, a multi-key change
//! or a transaction whole (see [`crate::registries::journal`]), so that a
//! replica that replays it ends with the master's keyspace. What the
//! master shares of it lives in [`crate::registries::replication`].

pub mod feed;
pub mod master;
pub mod replica;
