//! A short list kept on the stack: the arguments a command gathers before
//! it takes a lock (SADD's members, LPUSH's elements, HSET's pairs).
//!
//! Nearly every such command names one or a few of them, and collecting
//! them into a `Vec` cost an allocation and a free per command, about a
//! tenth of a pipelined SADD. Up to `N` items stay in place; a longer list
//! moves to the heap once.

use std::ops::Deref;

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
            return InlineList { inline: [T::default(); N], len: 0, spill: items.collect() };
        }
        let mut list = InlineList { inline: [T::default(); N], len: 0, spill: Vec::new() };
        for item in items {
            if list.len < N {
                list.inline[list.len] = item;
                list.len += 1;
            } else {
                if list.spill.is_empty() {
                    list.spill.reserve(N * 2);
                    list.spill.extend_from_slice(&list.inline);
                }
                list.spill.push(item);
            }
        }
        list
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
