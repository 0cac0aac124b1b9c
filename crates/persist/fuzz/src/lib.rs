//! Properties kvik-persist's decoders must hold for any input, one module
//! per fuzz target: no panic, no unbounded allocation, and whatever decodes
//! encodes again to something that decodes to the same thing.
//!
//! Each module exposes `check(data)`, which panics when a property is
//! broken. The libFuzzer binaries are one-line wrappers around these
//! functions so that `cargo test` (stable toolchain, no sanitizers) replays
//! seeds, saved inputs and a sweep of mutated seeds through exactly the
//! same assertions.

pub mod aof;
pub mod payload;
pub mod rdb_file;
pub mod seeds;

/// Names of the fuzz targets, matching the binaries and the corpus folders.
pub const TARGETS: [&str; 4] = ["rdb_file", "payload", "aof_commands", "aof_manifest"];

/// Run the check of the target called `name` on `data`; false for an
/// unknown name, so callers report it instead of checking nothing.
pub fn check_target(name: &str, data: &[u8]) -> bool {
    match name {
        "rdb_file" => rdb_file::check(data),
        "payload" => payload::check(data),
        "aof_commands" => aof::check_commands(data),
        "aof_manifest" => aof::check_manifest(data),
        _ => return false,
    }
    true
}
