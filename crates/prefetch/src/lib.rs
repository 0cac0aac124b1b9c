//! Ask the CPU to start loading the cache line holding an address.
//!
//! A pipelined batch of commands names its keys before they run. Looking a
//! key up costs a few cache misses (the table's control bytes, its slot,
//! the entry), each a wait of a hundred nanoseconds or so when the keyspace
//! is larger than the caches. Starting those loads a few commands ahead lets
//! them overlap with the work in between, so the lookup finds them cached.
//!
//! A prefetch is a hint: it never faults, reads nothing into the program,
//! and an address that is stale, freed or unmapped only wastes the hint.
//! That is why it takes a plain address and not a reference. This crate
//! exists so that the server crates can keep `#![forbid(unsafe_code)]`:
//! the intrinsic is marked unsafe only because it is a target-feature
//! function, and the single call lives here.

#![deny(unsafe_code)]
#![warn(missing_docs)]

/// Start loading the cache line holding `addr` into every cache level, for
/// a read soon. Does nothing on targets without a prefetch instruction.
#[inline(always)]
pub fn prefetch(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use core::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: PREFETCHT0 is part of SSE, which every x86-64 CPU has, and
        // it accesses no memory the program can observe: it cannot fault,
        // whatever the address.
        #[allow(unsafe_code)]
        unsafe {
            _mm_prefetch::<_MM_HINT_T0>(std::ptr::without_provenance::<i8>(addr));
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        let _ = addr;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_address_is_a_harmless_hint() {
        let data = vec![7u8; 4096];
        prefetch(data.as_ptr() as usize);
        // Null, unmapped and kernel addresses neither fault nor change data.
        for addr in [0, 1, 0x10, usize::MAX, 0xffff_8000_0000_0000, 0x7fff_ffff_f000] {
            prefetch(addr);
        }
        let freed = {
            let gone = vec![1u8; 1 << 20];
            gone.as_ptr() as usize
        };
        prefetch(freed);
        assert!(data.iter().all(|&b| b == 7));
    }
}
