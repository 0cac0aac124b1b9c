//! A map from 16-bit ids to values, for a RESPB connection's mux channels.
//!
//! Every RESPB command frame looks up its channel, so the lookup sits on the
//! per-command path. Clients number their channels from 0 (no mux) or 1
//! upward, so ids below [`DIRECT`] are kept in a vector indexed by the id:
//! a bounds check instead of hashing and probing. Larger ids, which a
//! client may pick freely, go to a hash map.

use std::collections::hash_map::Entry;
use std::collections::HashMap;

use foldhash::fast::FixedState;

/// Ids below this one live in the vector; the vector grows only as far as
/// the largest such id in use.
pub const DIRECT: u16 = 64;

/// Values by 16-bit id.
#[derive(Debug)]
pub struct IdMap<V> {
    direct: Vec<Option<V>>,
    /// Keyed with foldhash: SipHash on a 2-byte id cost more per frame
    /// than decoding the frame.
    rest: HashMap<u16, V, FixedState>,
    len: usize,
}

impl<V> Default for IdMap<V> {
    fn default() -> Self {
        IdMap { direct: Vec::new(), rest: HashMap::with_hasher(FixedState::default()), len: 0 }
    }
}

impl<V> IdMap<V> {
    /// How many ids have a value.
    pub fn len(&self) -> usize {
        self.len
    }

    /// The value of `id`.
    #[inline]
    pub fn get(&self, id: u16) -> Option<&V> {
        if id < DIRECT {
            self.direct.get(usize::from(id))?.as_ref()
        } else {
            self.rest.get(&id)
        }
    }

    /// The value of `id`, to change.
    #[inline]
    pub fn get_mut(&mut self, id: u16) -> Option<&mut V> {
        if id < DIRECT {
            self.direct.get_mut(usize::from(id))?.as_mut()
        } else {
            self.rest.get_mut(&id)
        }
    }

    /// The value of `id`, made by `make` when there is none; `None` when
    /// there was none and `make` gave none.
    #[inline]
    pub fn get_or_try_insert_with(&mut self, id: u16, make: impl FnOnce() -> Option<V>) -> Option<&mut V> {
        if id >= DIRECT {
            return match self.rest.entry(id) {
                Entry::Occupied(found) => Some(found.into_mut()),
                Entry::Vacant(place) => {
                    let value = make()?;
                    self.len += 1;
                    Some(place.insert(value))
                }
            };
        }
        let at = usize::from(id);
        if self.direct.get(at).is_some_and(Option::is_some) {
            return self.direct[at].as_mut();
        }
        let value = make()?;
        if self.direct.len() <= at {
            self.direct.resize_with(at + 1, || None);
        }
        self.len += 1;
        Some(self.direct[at].insert(value))
    }

    /// Give `id` the value `value`; the one it had.
    pub fn insert(&mut self, id: u16, value: V) -> Option<V> {
        let before = if id < DIRECT {
            let at = usize::from(id);
            if self.direct.len() <= at {
                self.direct.resize_with(at + 1, || None);
            }
            self.direct[at].replace(value)
        } else {
            self.rest.insert(id, value)
        };
        if before.is_none() {
            self.len += 1;
        }
        before
    }

    /// Take `id`'s value away.
    pub fn remove(&mut self, id: u16) -> Option<V> {
        let taken = if id < DIRECT { self.direct.get_mut(usize::from(id))?.take() } else { self.rest.remove(&id) };
        if taken.is_some() {
            self.len -= 1;
        }
        taken
    }

    /// Every id with its value: the small ids in order, then the others.
    pub fn iter(&self) -> impl Iterator<Item = (u16, &V)> {
        let direct = self.direct.iter().enumerate().filter_map(|(id, v)| Some((id as u16, v.as_ref()?)));
        direct.chain(self.rest.iter().map(|(&id, v)| (id, v)))
    }

    /// Every value.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.iter().map(|(_, v)| v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator for the model test.
    fn next(state: &mut u64) -> u64 {
        *state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        *state >> 33
    }

    #[test]
    fn behaves_like_a_hash_map() {
        let mut map = IdMap::default();
        let mut model: HashMap<u16, u64> = HashMap::new();
        let mut seed = 7;
        for step in 0..20_000u64 {
            // Mostly small ids, some large ones, DIRECT itself and the extremes.
            let id = match next(&mut seed) % 10 {
                0 => DIRECT,
                1 => u16::MAX,
                2 | 3 => (next(&mut seed) % 1000) as u16,
                _ => (next(&mut seed) % 80) as u16,
            };
            match next(&mut seed) % 5 {
                0 => assert_eq!(map.insert(id, step), model.insert(id, step), "insert {id}"),
                1 => assert_eq!(map.remove(id), model.remove(&id), "remove {id}"),
                2 => {
                    let give = next(&mut seed) & 1 == 0;
                    let got = map.get_or_try_insert_with(id, || give.then_some(step)).copied();
                    let want = match model.get(&id) {
                        Some(&v) => Some(v),
                        None if give => {
                            model.insert(id, step);
                            Some(step)
                        }
                        None => None,
                    };
                    assert_eq!(got, want, "get_or_try_insert_with {id}");
                }
                3 => {
                    if let Some(v) = map.get_mut(id) {
                        *v += 1;
                    }
                    if let Some(v) = model.get_mut(&id) {
                        *v += 1;
                    }
                }
                _ => assert_eq!(map.get(id), model.get(&id), "get {id}"),
            }
            assert_eq!(map.len(), model.len());
        }
        let mut all: Vec<(u16, u64)> = map.iter().map(|(id, &v)| (id, v)).collect();
        all.sort_unstable();
        let mut want: Vec<(u16, u64)> = model.into_iter().collect();
        want.sort_unstable();
        assert_eq!(all, want);
        assert_eq!(map.values().count(), all.len());
    }

    #[test]
    fn small_ids_need_no_hashing_and_grow_only_as_far_as_used() {
        let mut map = IdMap::default();
        assert_eq!(map.len(), 0);
        assert_eq!(map.get_or_try_insert_with(0, || Some("zero")), Some(&mut "zero"));
        assert_eq!(map.direct.len(), 1);
        assert_eq!(map.get_or_try_insert_with(0, || Some("again")), Some(&mut "zero"), "an open id keeps its value");
        assert_eq!(map.get_or_try_insert_with(5, || None), None, "refused: nothing stored");
        assert_eq!(map.len(), 1);
        map.insert(DIRECT, "large");
        assert_eq!(map.direct.len(), 1, "ids from DIRECT on go to the hash map");
        assert_eq!(map.iter().collect::<Vec<_>>(), vec![(0, &"zero"), (DIRECT, &"large")]);
        assert_eq!(map.remove(0), Some("zero"));
        assert_eq!(map.remove(0), None);
        assert_eq!(map.remove(DIRECT - 1), None, "an id past the vector's end is simply absent");
        assert_eq!(map.len(), 1);
    }
}
