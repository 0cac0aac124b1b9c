//! RESP2/RESP3: request parsing, reply writing and reply parsing.

pub mod command;
pub mod inline;
pub mod reply_parser;
pub mod request;
pub mod writer;
