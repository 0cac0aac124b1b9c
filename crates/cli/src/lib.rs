//! `kvik-cli`: a command line client with redis-cli's habits, for kvik and
//! any Redis-compatible server, speaking RESP2, RESP3 or RESPB/1.
//!
//! The binary is a thin `main` over this library so the parts people and
//! scripts depend on (option parsing, URI parsing, output formatting, the
//! RESP <-> RESPB converter) are unit-tested without a server:
//!
//! - [`options`]: the command line, parsed into one [`options::Config`];
//! - [`uri`]: `redis://user:pass@host:port/db` URIs (`-u`);
//! - [`format`]: replies printed exactly as redis-cli prints them;
//! - [`convert`]: RESP command streams (append-only files, `--pipe` input) to
//!   RESPB frames and back, streaming in bounded memory;
//! - [`run`]: the modes (one-shot, `-r`/`-i` repeat, `--pipe`, `--scan`,
//!   `--stat`, interactive) on top of `kvik-client` connections.

#![forbid(unsafe_code)]

pub mod convert;
pub mod format;
pub mod options;
pub mod run;
pub mod uri;
