//! One deadline per key, kept in time order: the timer wheel of a driver
//! that owns many state machines (an endpoint's connections, a socket
//! driver's detached connections). Re-arming moves a key; the earliest
//! deadline and the due keys come out in O(log n).

use crate::Instant;
use std::collections::{BTreeMap, BTreeSet};

/// Each key's next deadline, earliest first.
#[derive(Debug, Clone)]
pub struct Deadlines<K> {
    /// Every armed key, by deadline then key.
    order: BTreeSet<(Instant, K)>,
    /// The entry each key has in `order`.
    armed: BTreeMap<K, Instant>,
}

impl<K> Default for Deadlines<K> {
    fn default() -> Self {
        Deadlines {
            order: BTreeSet::new(),
            armed: BTreeMap::new(),
        }
    }
}

impl<K: Ord + Copy> Deadlines<K> {
    /// Records `key`'s deadline (none: no timer running).
    pub fn rearm(&mut self, key: K, deadline: Option<Instant>) {
        let old = match deadline {
            Some(t) => self.armed.insert(key, t),
            None => self.armed.remove(&key),
        };
        if old == deadline {
            return;
        }
        if let Some(t) = old {
            self.order.remove(&(t, key));
        }
        if let Some(t) = deadline {
            self.order.insert((t, key));
        }
    }

    /// The earliest deadline of any key.
    pub fn first(&self) -> Option<Instant> {
        self.order.first().map(|&(t, _)| t)
    }

    /// Removes and returns a key whose deadline is at or before `now`,
    /// earliest first; the caller re-arms it once it has run.
    pub fn pop_due(&mut self, now: Instant) -> Option<K> {
        let &(t, key) = self.order.first()?;
        if t > now {
            return None;
        }
        self.order.pop_first();
        self.armed.remove(&key);
        Some(key)
    }

    /// Every armed key with its deadline, earliest first.
    pub fn iter(&self) -> impl Iterator<Item = (Instant, K)> + '_ {
        self.order.iter().copied()
    }

    /// The keys whose deadline is at or before `now`, left armed.
    pub fn due(&self, now: Instant) -> impl Iterator<Item = K> + '_ {
        self.iter()
            .take_while(move |&(t, _)| t <= now)
            .map(|(_, key)| key)
    }

    /// How many keys have a deadline.
    pub fn len(&self) -> usize {
        self.armed.len()
    }

    /// Whether no key has a deadline.
    pub fn is_empty(&self) -> bool {
        self.armed.is_empty()
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
}
