//! kvik's data, below everything that serves it: the stored value types
//! and their encodings ([`types`]), and the sharded databases that hold
//! them ([`keyspace`]), with expiry, eviction, scans and the per-thread
//! note of keys that became ready for blocked clients; what a thread
//! carries for the store is in one place, [`per_thread`].
//!
//! It is a crate of its own so that the direction of every dependency is a
//! build error to get wrong: nothing here can reach the network, the
//! sessions or the command table above it. What the server must learn from
//! a change (a key created or deleted while clients are blocked) the store
//! notes where the server collects it ([`keyspace::ready`]), instead of
//! calling up. Snapshots will walk the store the same way, without the
//! network layer.

#![forbid(unsafe_code)]

pub mod inline_list;
pub mod keyspace;
pub mod per_thread;
pub mod types;
