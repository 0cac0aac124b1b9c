//! `kvik-benchmark`: a redis-benchmark compatible load generator for kvik
//! and any Redis-compatible server, speaking RESP2, RESP3 or RESPB/1, with
//! RESPB mux channels (`--mux`) and several threads (`--threads`).
//!
//! Modules, in the order a run uses them:
//! - [`args`]: the command line (redis-benchmark's options and defaults);
//! - [`suite`]: the default tests, their commands and `-t` selection;
//! - [`request`]: request bytes per batch, `__rand_int__` written in place;
//! - [`replies`]: counting replies and errors without building values;
//! - [`driver`]: one connection's logical clients, pipelines and latencies;
//! - [`runner`]: threads, runtimes, the start gate and the progress line;
//! - [`histogram`]: the log-linear latency histogram;
//! - [`report`]: full, `-q`, `--csv` and `--json` output;
//! - [`wire_sizes`]: RESP and RESPB byte counts of sample requests and replies.
//!
//! Nothing is allocated per request: each logical client appends its batch
//! to a reused output buffer and replies are skipped in a reused input buffer.

#![forbid(unsafe_code)]

pub mod args;
pub mod driver;
pub mod histogram;
pub mod replies;
pub mod report;
pub mod request;
pub mod runner;
pub mod suite;
pub mod wire_sizes;
