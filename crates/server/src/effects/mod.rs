//! What follows a change to a key ([`changes`]: keyspace events, `WATCH`,
//! client-side caching, ready keys), in the vocabulary of
//! [`crate::events`]. Every write
//! passes through here, and so into the journal
//! ([`crate::registries::journal`], through [`propagation`]) the
//! append-only file is written from.

pub mod changes;
pub mod propagation;
