//! A short list kept on the stack: the arguments a command gathers before
//! it takes a lock (SADD's members, LPUSH's elements, HSET's pairs), and
//! the keys and shards of a multi-key lock.
//!
//! Nearly every such command names one or a few of them, and collecting
//! them into a `Vec` cost an allocation and a free per command, about a
//! tenth of a pipelined SADD. Up to `N` items stay in place; a longer list
//! moves to the heap once.

use std::ops::{Deref, DerefMut};

/// Up to `N` items inline, any number beyond on the heap.
#[derive(Debug)]
pub struct InlineList<T, const N: usize> {
    inline: [T; N],
    /// Items in `inline` while `spill` is empty.
    len: usize,
    /// Every item, once there were more than `N`.
    spill: Vec<T>,
}

impl<T: Copy + Default, const N: usize> FromIterator<T> for InlineList<T, N> {
    fn from_iter<I: IntoIterator<Item = T>>(items: I) -> Self {
        let items = items.into_iter();
        let (at_least, _) = items.size_hint();
        if at_least > N {
            // Known to be long: straight to the heap, in one allocation.
            return InlineList { spill: items.collect(), ..InlineList::new() };
        }
        let mut list = InlineList::new();
        items.for_each(|item| list.push(item));
        list
    }
}

impl<T: Copy + Default, const N: usize> Default for InlineList<T, N> {
    fn default() -> Self {
        InlineList::new()
    }
}

impl<T: Copy + Default, const N: usize> InlineList<T, N> {
    /// An empty list.
    pub fn new() -> Self {
        InlineList { inline: [T::default(); N], len: 0, spill: Vec::new() }
    }

    /// Add `item` at the end; the first one past `N` moves the list to the heap.
    #[inline]
    pub fn push(&mut self, item: T) {
        if self.spill.is_empty() {
            if self.len < N {
                self.inline[self.len] = item;
                self.len += 1;
                return;
            }
            self.spill.reserve(N * 2);
            self.spill.extend_from_slice(&self.inline);
        }
        self.spill.push(item);
    }
}

impl<T, const N: usize> Deref for InlineList<T, N> {
    type Target = [T];

    fn deref(&self) -> &[T] {
        if self.spill.is_empty() {
            &self.inline[..self.len]
        } else {
            &self.spill
        }
    }
}

impl<T, const N: usize> DerefMut for InlineList<T, N> {
    fn deref_mut(&mut self) -> &mut [T] {
        if self.spill.is_empty() {
            &mut self.inline[..self.len]
        } else {
            &mut self.spill
        }
    }
}

impl<'l, T, const N: usize> IntoIterator for &'l InlineList<T, N> {
    type Item = &'l T;
    type IntoIter = std::slice::Iter<'l, T>;

    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holds_what_was_collected_in_order_at_every_length() {
        for n in 0..40 {
            let list: InlineList<usize, 4> = (0..n).collect();
            assert_eq!(&*list, (0..n).collect::<Vec<_>>().as_slice(), "{n} items");
            assert_eq!(list.spill.is_empty(), n <= 4, "{n} items");
            // An iterator that does not tell its length spills as it goes.
            let unknown: InlineList<usize, 4> = (0..n).filter(|_| true).collect();
            assert_eq!(&*unknown, &*list, "{n} items");
        }
    }
}
