//! The two facts a database's table and the look-ahead that loads it ahead
//! of a command must agree on: how a key is hashed, and how big a cache
//! line is. They sit below both, so that neither imports the other for them.

use std::hash::BuildHasher;
use std::sync::OnceLock;

use foldhash::fast::FixedState;

/// The size of a cache line on the targets kvik is tuned for.
pub const LINE: usize = 64;

/// The hasher of every database's table: fast, and seeded at random once
/// per process, so clients cannot choose keys that collide.
pub fn key_hasher() -> FixedState {
    static SEED: OnceLock<u64> = OnceLock::new();
    // The standard library seeds its hashers from the operating system.
    FixedState::with_seed(*SEED.get_or_init(|| std::hash::RandomState::new().hash_one(0x6b76_696b_u64)))
}
