//! The append-only file as Redis 7 lays it out: a directory
//! (`appenddirname`) holding a manifest ([`manifest`]) that names a base
//! file (an RDB file, read by [`crate::rdb`], or commands) and the
//! incremental files of commands written since ([`commands`]).
//!
//! This module knows the formats only; which commands are written, when
//! the files are flushed to disk and how they are replayed is the server's.

pub mod commands;
pub mod manifest;
