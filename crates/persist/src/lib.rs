//! kvik's files: snapshots in Redis's RDB format, DUMP payloads in Redis's
//! format and the append-only file's manifest and commands in Redis 7's
//! layout, so that data moves between kvik and redis-server either way.
//!
//! It sits above the store and below the server: it reads values through
//! the store's types and builds them back, and knows nothing of
//! connections or commands. Everything it reads is untrusted: a damaged
//! file or payload is an error with a reason, never a panic.

#![forbid(unsafe_code)]

pub mod aof;
pub mod crc64;
pub mod lzf;
pub mod payload;
pub mod rdb;
