//! Properties kvik-acl must hold for any input, one module per fuzz
//! target: an ACL file or a list of rules never panics, and whatever is
//! accepted is written back (`ACL LIST`, `ACL SAVE`) as text that reads
//! again to a user described the same and allowed the same requests.
//!
//! The server rewrites the ACL file from these descriptions (`ACL SAVE`,
//! `CONFIG REWRITE`), so a description that does not rebuild its user
//! loses or changes permissions at the next start.
//!
//! Each module exposes `check(data)`, which panics when a property is
//! broken. The libFuzzer binaries are one-line wrappers around these
//! functions so that `cargo test` (stable toolchain, no sanitizers) replays
//! seeds, saved inputs and a sweep of mutated seeds through exactly the
//! same assertions.

pub mod acl_file;
mod round_trip;
pub mod rules;
pub mod seeds;

/// Names of the fuzz targets, matching the binaries and the corpus folders.
pub const TARGETS: [&str; 2] = ["acl_file", "rules"];

/// Run the check of the target called `name` on `data`; false for an
/// unknown name, so callers report it instead of checking nothing.
pub fn check_target(name: &str, data: &[u8]) -> bool {
    match name {
        "acl_file" => acl_file::check(data),
        "rules" => rules::check(data),
        _ => return false,
    }
    true
}
