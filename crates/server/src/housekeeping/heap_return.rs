//! Giving freed memory back to the system without being asked.
//!
//! kvik uses glibc's malloc, which keeps the pages of freed small blocks
//! for reuse: after a `FLUSHALL` of a million keys, or once connections
//! gave large buffers back, the process stays at most of its peak resident
//! size until `MEMORY PURGE`. Redis's jemalloc returns such pages by itself
//! over a few seconds. kvik does it from the task that samples the rates,
//! once a second, by watching the gap between the resident size and what
//! the server holds (`used_memory`: the data and the clients' buffers).
//! Freeing widens the gap, however quickly it came and went; when the gap
//! has grown by a quarter of what is held, and by at least
//! [`RETURN_AFTER_BYTES`], since the last return (or since the server
//! started), the free pages go back ([`kvik_heap::release_free_memory`]) and
//! the gap that remains is the new reference. A gap that narrows (freed
//! memory reused) lowers the reference, so a server whose data churns at a
//! steady size never pays for a return, and one that shrank pays once.

/// The least growth of the gap that is worth a return.
pub const RETURN_AFTER_BYTES: usize = 16 << 20;

/// When freed memory is due to go back.
#[derive(Debug, Default)]
pub struct HeapReturn {
    /// Resident bytes beyond those held, after the last return (or the
    /// least seen since).
    reference_gap: Option<usize>,
}

impl HeapReturn {
    /// Whether memory is due to go back, with `used` bytes held and
    /// `resident` bytes resident; the caller returns it when so, and tells
    /// [`HeapReturn::returned`] what is resident afterwards.
    pub fn due(&mut self, used: usize, resident: usize) -> bool {
        let gap = resident.saturating_sub(used);
        let reference = *self.reference_gap.get_or_insert(gap);
        if gap < reference {
            self.reference_gap = Some(gap);
            return false;
        }
        gap - reference >= RETURN_AFTER_BYTES.max(used / 4)
    }

    /// Memory went back: the gap now is the reference.
    pub fn returned(&mut self, used: usize, resident: usize) {
        self.reference_gap = Some(resident.saturating_sub(used));
    }

    /// Once a second: return the free pages if [`HeapReturn::due`].
    pub fn tick(&mut self, used: usize) {
        let resident = || usize::try_from(resident_bytes()).unwrap_or(usize::MAX);
        if self.due(used, resident()) {
            kvik_heap::release_free_memory();
            self.returned(used, resident());
        }
    }
}

/// The resident set size of this process (`VmRSS`), in bytes; 0 where
/// the system does not say.
pub fn resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1).and_then(|v| v.parse::<u64>().ok()))
        .map(|pages| pages * 4096)
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_widened_gap_is_returned_once_steady_churn_never() {
        let mut r = HeapReturn::default();
        let mib = 1 << 20;
        // 100 MiB held, 120 resident: the reference gap is 20 MiB.
        assert!(!r.due(100 * mib, 120 * mib));
        // Churn: the gap moves by less than a quarter of what is held.
        assert!(!r.due(90 * mib, 130 * mib));
        assert!(!r.due(110 * mib, 135 * mib));
        // Most of it freed while the pages stay: due, and after the return
        // the gap left is the reference.
        assert!(r.due(10 * mib, 135 * mib));
        r.returned(10 * mib, 40 * mib);
        assert!(!r.due(10 * mib, 40 * mib));
        assert!(!r.due(10 * mib, 50 * mib), "10 MiB more gap is under the 16 MiB floor");
        assert!(r.due(10 * mib, 60 * mib));
        // A gap that narrows lowers the reference.
        let mut r = HeapReturn::default();
        assert!(!r.due(0, 50 * mib));
        assert!(!r.due(40 * mib, 60 * mib));
        assert!(r.due(0, 60 * mib), "40 MiB freed against the narrowed gap");
    }
}
