//! Properties the kvik-protocol codecs must hold for any input, one module per
//! fuzz target.
//!
//! Each module exposes `check(data)`, which panics when a property is broken.
//! The libFuzzer binaries are one-line wrappers around these functions so that
//! `cargo test` (stable toolchain, no sanitizers) can replay seeds and saved
//! crash inputs through exactly the same assertions.

pub mod resp_reply;
pub mod resp_request;
pub mod respb_reply;
pub mod respb_request;
pub mod seeds;
pub mod values;

/// Names of the fuzz targets, matching the binaries and the corpus folders.
pub const TARGETS: [&str; 4] = ["resp_request", "respb_request", "resp_reply", "respb_reply"];

/// Run the check of the target called `name` on `data`.
///
/// Returns false for an unknown name so callers can report it instead of
/// silently checking nothing.
pub fn check_target(name: &str, data: &[u8]) -> bool {
    match name {
        "resp_request" => resp_request::check(data),
        "respb_request" => respb_request::check(data),
        "resp_reply" => resp_reply::check(data),
        "respb_reply" => respb_reply::check(data),
        _ => return false,
    }
    true
}
