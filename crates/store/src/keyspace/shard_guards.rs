//! The guards a multi-key lock holds, one per locked shard.
//!
//! A multi-key command (MSET, MGET, DEL of a few keys, LMOVE) locks a few
//! shards; a `Vec` for their guards cost an allocation and a free on every
//! such command. Up to [`INLINE_GUARDS`] stay in place; a lock of more
//! shards (`lock_all`, a long MSET) puts them all on the heap at once.

use super::ShardGuard;

/// Guards kept in place before a lock's guards go to the heap.
pub const INLINE_GUARDS: usize = 16;

/// The guards of the shards a lock holds, in the order they were taken.
pub struct ShardGuards<'a> {
    /// The guards while there are at most [`INLINE_GUARDS`]: the first
    /// `len` are `Some`.
    inline: [Option<ShardGuard<'a>>; INLINE_GUARDS],
    len: usize,
    /// Every guard, when the lock was made for more shards than fit inline.
    spill: Vec<ShardGuard<'a>>,
    spilled: bool,
}

impl<'a> ShardGuards<'a> {
    /// No guards, room for [`INLINE_GUARDS`] in place.
    pub fn new() -> ShardGuards<'a> {
        ShardGuards { inline: [const { None }; INLINE_GUARDS], len: 0, spill: Vec::new(), spilled: false }
    }

    /// Let every guard go, and make room for the guards of `shards` shards.
    pub fn reset_for(&mut self, shards: usize) {
        self.inline[..self.len].iter_mut().for_each(|g| *g = None);
        self.len = 0;
        self.spill.clear();
        self.spilled = shards > INLINE_GUARDS;
        if self.spilled {
            self.spill.reserve(shards);
        }
    }

    /// Keep `guard`, after those already kept.
    pub fn push(&mut self, guard: ShardGuard<'a>) {
        if self.spilled {
            self.spill.push(guard);
            return;
        }
        assert!(self.len < INLINE_GUARDS, "more guards than the lock was made for");
        self.inline[self.len] = Some(guard);
        self.len += 1;
    }

    /// The guard kept `at`-th, if there is one.
    pub fn get_mut(&mut self, at: usize) -> Option<&mut ShardGuard<'a>> {
        if self.spilled {
            self.spill.get_mut(at)
        } else {
            self.inline.get_mut(at)?.as_mut()
        }
    }

    /// Every guard, in the order kept.
    pub fn iter_mut(&mut self) -> impl Iterator<Item = &mut ShardGuard<'a>> {
        self.inline[..self.len].iter_mut().flatten().chain(self.spill.iter_mut())
    }
}
