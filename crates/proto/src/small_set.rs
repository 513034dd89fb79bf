//! An ordered set for the handful of items a ready list usually holds: a
//! short sorted array while it holds a few, a tree once it grows past
//! that. A client's one connection goes in and out of the endpoint's ready
//! sets, and a transfer's one stream in and out of its Readable set,
//! around every packet, where a tree's node work cost more than the rest
//! of the bookkeeping. Either form answers alike.

use std::collections::BTreeSet;

/// Items a set keeps in one sorted array before it moves them into a tree.
const SMALL: usize = 16;

#[derive(Debug)]
pub(crate) enum SmallSet<T> {
    Small(Vec<T>),
    Large(BTreeSet<T>),
}

impl<T> Default for SmallSet<T> {
    fn default() -> Self {
        SmallSet::Small(Vec::new())
    }
}

impl<T: Ord + Copy> SmallSet<T> {
    pub(crate) fn insert(&mut self, x: T) {
        match self {
            SmallSet::Small(v) => {
                // The usual case first: the one item already there.
                if v.first() == Some(&x) {
                    return;
                }
                let Err(i) = v.binary_search(&x) else {
                    return;
                };
                if v.len() < SMALL {
                    v.insert(i, x);
                } else {
                    let mut set: BTreeSet<_> = v.drain(..).collect();
                    set.insert(x);
                    *self = SmallSet::Large(set);
                }
            }
            SmallSet::Large(set) => {
                set.insert(x);
            }
        }
    }

    pub(crate) fn remove(&mut self, x: &T) {
        match self {
            SmallSet::Small(v) => {
                if let Ok(i) = v.binary_search(x) {
                    v.remove(i);
                }
            }
            SmallSet::Large(set) => {
                set.remove(x);
            }
        }
    }

    pub(crate) fn first(&self) -> Option<&T> {
        match self {
            SmallSet::Small(v) => v.first(),
            SmallSet::Large(set) => set.first(),
        }
    }

    /// The first item in `from..below` (`from < below`).
    pub(crate) fn first_in(&self, from: T, below: T) -> Option<T> {
        match self {
            SmallSet::Small(v) => {
                let i = v.partition_point(|&x| x < from);
                v.get(i).copied().filter(|&x| x < below)
            }
            SmallSet::Large(set) => set.range(from..below).next().copied(),
        }
    }

    /// Takes the lowest item out.
    pub(crate) fn pop_first(&mut self) -> Option<T> {
        match self {
            SmallSet::Small(v) if v.is_empty() => None,
            SmallSet::Small(v) => Some(v.remove(0)),
            SmallSet::Large(set) => set.pop_first(),
        }
    }

    pub(crate) fn is_empty(&self) -> bool {
        match self {
            SmallSet::Small(v) => v.is_empty(),
            SmallSet::Large(set) => set.is_empty(),
        }
    }

    #[cfg(test)]
    pub(crate) fn to_vec(&self) -> Vec<T> {
        match self {
            SmallSet::Small(v) => v.clone(),
            SmallSet::Large(set) => set.iter().copied().collect(),
        }
    }
}

impl<T: Ord + Copy> Extend<T> for SmallSet<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        for x in iter {
            self.insert(x);
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
            let mut set = SmallSet::default();
            let mut model = BTreeSet::new();
            for _ in 0..4000 {
                let id = rng.random_range(0..range);
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
