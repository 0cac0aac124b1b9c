//! Giving freed heap memory back to the operating system.
//!
//! kvik uses the system allocator. glibc's malloc keeps the memory of freed
//! small blocks in its arenas for reuse, so after `FLUSHALL` a server that
//! held a million keys still shows most of that memory as resident.
//! `MEMORY PURGE` asks the allocator to return every free page it can, as
//! Redis does with jemalloc.
//!
//! This crate exists so that the server crates can keep
//! `#![forbid(unsafe_code)]`: the single foreign call lives here.

#![deny(unsafe_code)]
#![warn(missing_docs)]

/// Return the free pages of every malloc arena to the system.
///
/// Returns `true` when the allocator released some memory. On targets
/// without glibc there is nothing to call and the answer is `false`.
pub fn release_free_memory() -> bool {
    trim()
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
#[allow(unsafe_code)]
fn trim() -> bool {
    // SAFETY: malloc_trim takes a plain integer (the bytes to keep at the
    // top of the main heap), touches only the allocator's own state under
    // its own locks, and may be called from any thread at any time.
    unsafe { libc::malloc_trim(0) == 1 }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn trim() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn freed_blocks_are_given_back() {
        // Many small blocks, freed, leave free pages inside the heap that
        // only a trim returns; the call must say it released something.
        let blocks: Vec<Vec<u8>> = (0..200_000).map(|i| vec![(i % 251) as u8; 200]).collect();
        let kept: Vec<Vec<u8>> = blocks.iter().step_by(1000).cloned().collect();
        drop(blocks);
        assert!(release_free_memory());
        assert_eq!(kept.len(), 200);
    }
}
