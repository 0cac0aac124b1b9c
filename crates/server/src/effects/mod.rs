//! What follows a change to a key ([`changes`]: keyspace events, `WATCH`,
//! client-side caching, ready keys), in the vocabulary of
//! [`crate::events`]. Every write
//! passes through here; the AOF and the replication stream will too.

pub mod changes;
