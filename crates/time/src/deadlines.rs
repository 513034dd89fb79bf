//! One deadline per key, kept in time order: the timer wheel of a driver
//! that owns many state machines (an endpoint's connections, a socket
//! driver's detached connections). Re-arming moves a key; the earliest
//! deadline and the due keys come out in O(log n).

use crate::Instant;
use std::collections::{BTreeMap, BTreeSet};

/// Keys a [`Deadlines`] keeps in one sorted array before it moves them
/// into trees: with one or a few keys (a client, a simulated host), a
/// search of a short array costs a fraction of a tree's insertions and
/// removals, which a deadline moved on every packet paid.
const SMALL: usize = 16;

/// Each key's next deadline, earliest first.
#[derive(Debug, Clone)]
pub struct Deadlines<K> {
    repr: Repr<K>,
}

#[derive(Debug, Clone)]
enum Repr<K> {
    /// Up to [`SMALL`] keys, by deadline then key.
    Small(Vec<(Instant, K)>),
    Large {
        /// Every armed key, by deadline then key.
        order: BTreeSet<(Instant, K)>,
        /// The entry each key has in `order`.
        armed: BTreeMap<K, Instant>,
    },
}

impl<K> Default for Deadlines<K> {
    fn default() -> Self {
        Deadlines {
            repr: Repr::Small(Vec::new()),
        }
    }
}

/// The armed keys in deadline order, from either form.
enum Iter<'a, K> {
    Small(std::slice::Iter<'a, (Instant, K)>),
    Large(std::collections::btree_set::Iter<'a, (Instant, K)>),
}

impl<K: Copy> Iterator for Iter<'_, K> {
    type Item = (Instant, K);
    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::Small(i) => i.next().copied(),
            Iter::Large(i) => i.next().copied(),
        }
    }
}

impl<K: Ord + Copy> Deadlines<K> {
    /// Records `key`'s deadline (none: no timer running).
    pub fn rearm(&mut self, key: K, deadline: Option<Instant>) {
        match &mut self.repr {
            Repr::Small(v) => {
                let at = v.iter().position(|&(_, k)| k == key);
                if let Some(i) = at {
                    if Some(v[i].0) == deadline {
                        return;
                    }
                    v.remove(i);
                }
                let Some(t) = deadline else {
                    return;
                };
                if v.len() < SMALL {
                    let i = v.partition_point(|e| *e < (t, key));
                    v.insert(i, (t, key));
                    return;
                }
                let order: BTreeSet<_> = v.drain(..).collect();
                let armed = order.iter().map(|&(t, k)| (k, t)).collect();
                self.repr = Repr::Large { order, armed };
                self.rearm(key, deadline);
            }
            Repr::Large { order, armed } => {
                let old = match deadline {
                    Some(t) => armed.insert(key, t),
                    None => armed.remove(&key),
                };
                if old == deadline {
                    return;
                }
                if let Some(t) = old {
                    order.remove(&(t, key));
                }
                if let Some(t) = deadline {
                    order.insert((t, key));
                }
            }
        }
    }

    /// The earliest deadline of any key.
    pub fn first(&self) -> Option<Instant> {
        match &self.repr {
            Repr::Small(v) => v.first().map(|&(t, _)| t),
            Repr::Large { order, .. } => order.first().map(|&(t, _)| t),
        }
    }

    /// Removes and returns a key whose deadline is at or before `now`,
    /// earliest first; the caller re-arms it once it has run.
    pub fn pop_due(&mut self, now: Instant) -> Option<K> {
        match &mut self.repr {
            Repr::Small(v) => {
                let &(t, key) = v.first()?;
                if t > now {
                    return None;
                }
                v.remove(0);
                Some(key)
            }
            Repr::Large { order, armed } => {
                let &(t, key) = order.first()?;
                if t > now {
                    return None;
                }
                order.pop_first();
                armed.remove(&key);
                Some(key)
            }
        }
    }

    /// Every armed key with its deadline, earliest first.
    pub fn iter(&self) -> impl Iterator<Item = (Instant, K)> + '_ {
        match &self.repr {
            Repr::Small(v) => Iter::Small(v.iter()),
            Repr::Large { order, .. } => Iter::Large(order.iter()),
        }
    }

    /// The keys whose deadline is at or before `now`, left armed.
    pub fn due(&self, now: Instant) -> impl Iterator<Item = K> + '_ {
        self.iter()
            .take_while(move |&(t, _)| t <= now)
            .map(|(_, key)| key)
    }

    /// How many keys have a deadline.
    pub fn len(&self) -> usize {
        match &self.repr {
            Repr::Small(v) => v.len(),
            Repr::Large { armed, .. } => armed.len(),
        }
    }

    /// Whether no key has a deadline.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn due_keys_leave_in_time_order_once_and_rearming_moves_them() {
        let mut d = Deadlines::default();
        d.rearm(1u64, Some(at(30)));
        d.rearm(2, Some(at(10)));
        d.rearm(3, Some(at(20)));
        d.rearm(3, Some(at(40)));
        d.rearm(2, Some(at(10)));
        assert_eq!(d.first(), Some(at(10)));
        assert_eq!(d.due(at(30)).collect::<Vec<_>>(), vec![2, 1]);
        assert_eq!(d.pop_due(at(30)), Some(2));
        assert_eq!(d.pop_due(at(30)), Some(1));
        assert_eq!(d.pop_due(at(30)), None);
        assert_eq!(d.len(), 1);
        d.rearm(3, None);
        assert!(d.is_empty());
        assert_eq!(d.first(), None);
    }

    /// The array form and the trees agree with a plain model through
    /// growth past the array's size and back down.
    #[test]
    fn the_array_and_the_trees_behave_alike() {
        let mut d = Deadlines::default();
        let mut model: BTreeMap<u64, Instant> = BTreeMap::new();
        // A fixed pseudo-random walk over 40 keys and 60 instants.
        let mut x = 0x2545_f491_u64;
        for step in 0..5_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let keys = if step < 2_500 { 12 } else { 40 };
            let key = x % keys;
            let deadline = !(x >> 20).is_multiple_of(4);
            let t = at((x >> 32) % 60);
            if (x >> 40).is_multiple_of(7) {
                let now = at((x >> 44) % 60);
                let popped = d.pop_due(now);
                let expect = model
                    .iter()
                    .map(|(&k, &t)| (t, k))
                    .min()
                    .filter(|&(t, _)| t <= now);
                assert_eq!(popped, expect.map(|(_, k)| k), "step {step}");
                if let Some((_, k)) = expect {
                    model.remove(&k);
                }
            } else if deadline {
                d.rearm(key, Some(t));
                model.insert(key, t);
            } else {
                d.rearm(key, None);
                model.remove(&key);
            }
            let mut sorted: Vec<_> = model.iter().map(|(&k, &t)| (t, k)).collect();
            sorted.sort();
            assert_eq!(d.iter().collect::<Vec<_>>(), sorted, "step {step}");
            assert_eq!(d.len(), model.len());
            assert_eq!(d.first(), sorted.first().map(|e| e.0));
        }
    }
}
