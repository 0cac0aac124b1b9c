//! RESTORE's decoder: any input is refused or restores a value whose own
//! payload (compressed or not) restores to an equal value.

use kvik_persist::payload::{dump, restore};
use kvik_persist::rdb::value::LoadLimits;

/// Panics when a property is broken for `data`.
pub fn check(data: &[u8]) {
    let limits = LoadLimits::default();
    let Ok(value) = restore(data, &limits) else { return };
    for compress in [true, false] {
        let again = dump(value.view(), compress);
        let back = restore(&again, &limits).expect("a payload kvik wrote restores");
        assert_eq!(back, value, "a restored value dumps and restores the same (compress {compress})");
    }
}
