//! kvik's wire protocols, with no I/O: RESP2/RESP3 requests and replies, RESPB/1
//! frames, and the command table they all share.
//!
//! Layers, bottom up:
//! - [`args`]: the one decoded form of a request (name + arguments as RESP carries them);
//! - [`resp`]: RESP request parsing, reply writing (RESP2/RESP3) and reply parsing;
//! - [`respb`]: RESPB/1 detection, handshake, request decode/encode, reply encode/decode;
//! - [`commands`]: the command table (arity, flags, keys, ACL categories, RESPB opcode);
//! - [`value`] and [`reply`]: the reply data model and the sink replies are written through.

#![forbid(unsafe_code)]

pub mod args;
pub mod commands;
pub mod number;
pub mod reply;
pub mod resp;
pub mod respb;
pub mod value;

pub use args::{ArgRef, CommandArgs};
pub use reply::ReplySink;
pub use value::Value;
