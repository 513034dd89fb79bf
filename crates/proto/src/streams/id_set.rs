//! A set of stream IDs in ID order, for the streams owed an event or a
//! frame: a short sorted array while it holds a few (a transfer's one
//! stream goes in and out of its Readable set around every packet, where
//! a tree's node work cost more than the rest of the bookkeeping), a tree
//! once it grows past that. Either form answers alike.

use super::id::StreamId;
use std::collections::BTreeSet;

/// IDs a set keeps in one sorted array before it moves them into a tree.
const SMALL: usize = 16;

#[derive(Debug)]
pub(super) enum IdSet {
    Small(Vec<StreamId>),
    Large(BTreeSet<StreamId>),
}

impl Default for IdSet {
    fn default() -> Self {
        IdSet::Small(Vec::new())
    }
}

impl IdSet {
    pub(super) fn insert(&mut self, id: StreamId) {
        match self {
            IdSet::Small(v) => {
                if v.first() == Some(&id) {
                    return;
                }
                let Err(i) = v.binary_search(&id) else {
                    return;
                };
                if v.len() < SMALL {
                    v.insert(i, id);
                } else {
                    let mut set: BTreeSet<_> = v.drain(..).collect();
                    set.insert(id);
                    *self = IdSet::Large(set);
                }
            }
            IdSet::Large(set) => {
                set.insert(id);
            }
        }
    }

    pub(super) fn remove(&mut self, id: &StreamId) {
        match self {
            IdSet::Small(v) => {
                if v.is_empty() {
                    return;
                }
                if let Ok(i) = v.binary_search(id) {
                    v.remove(i);
                }
            }
            IdSet::Large(set) => {
                set.remove(id);
            }
        }
    }

    /// Takes the lowest ID out.
    pub(super) fn pop_first(&mut self) -> Option<StreamId> {
        match self {
            IdSet::Small(v) if v.is_empty() => None,
            IdSet::Small(v) => Some(v.remove(0)),
            IdSet::Large(set) => set.pop_first(),
        }
    }

    pub(super) fn is_empty(&self) -> bool {
        match self {
            IdSet::Small(v) => v.is_empty(),
            IdSet::Large(set) => set.is_empty(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Random inserts, removals and pops, through growth past the array's
    /// size, answer as a tree does.
    #[test]
    fn answers_as_an_ordered_set() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for range in [4u64, 24, 64] {
            let mut set = IdSet::default();
            let mut model = BTreeSet::new();
            for _ in 0..4000 {
                let id = StreamId(rng.random_range(0..range));
                match rng.random_range(0..4) {
                    0 | 1 => {
                        set.insert(id);
                        model.insert(id);
                    }
                    2 => {
                        set.remove(&id);
                        model.remove(&id);
                    }
                    _ => assert_eq!(set.pop_first(), model.pop_first()),
                }
                assert_eq!(set.is_empty(), model.is_empty());
            }
            while let Some(id) = model.pop_first() {
                assert_eq!(set.pop_first(), Some(id));
            }
            assert_eq!(set.pop_first(), None);
        }
    }
}
