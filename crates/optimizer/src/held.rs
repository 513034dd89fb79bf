//! [`Ring`]: a connection's held segments in offset order, in one ring
//! buffer.
//!
//! The server sends in order almost always, so a segment almost always
//! joins at the back and leaves from the front when the client
//! acknowledges it: both ends are O(1) here, where a tree pays a search
//! and an allocation per node. A lookup by offset is a binary search over
//! contiguous memory. A segment that arrives out of order is inserted in
//! the middle, moving the segments after it (rare, and bounded by the
//! connection's buffer).

use std::collections::VecDeque;
use std::ops::Range;

/// Values kept by a `u64` offset, in increasing offset order.
#[derive(Debug, Clone)]
pub(crate) struct Ring<T> {
    items: VecDeque<(u64, T)>,
}

impl<T> Default for Ring<T> {
    fn default() -> Self {
        Ring {
            items: VecDeque::new(),
        }
    }
}

impl<T> Ring<T> {
    /// The index of the first item at or after `off`.
    fn lower_bound(&self, off: u64) -> usize {
        let n = self.items.len();
        let (Some(&(first, _)), Some(&(last, _))) = (self.items.front(), self.items.back()) else {
            return 0;
        };
        if off <= first {
            return 0;
        }
        if off > last {
            return n;
        }
        // A server sends segments of one size, so an offset's index is
        // almost always where an even spread puts it, or one after: check
        // those two before a binary search (which costs a cache miss per
        // step over a full buffer's thousands of segments). Here
        // first < off <= last, so n >= 2 and the guess is below n.
        let guess = ((off - first) as u128 * (n - 1) as u128 / (last - first) as u128) as usize;
        for i in [guess, guess + 1] {
            if i > 0 && i < n && self.items[i].0 >= off && self.items[i - 1].0 < off {
                return i;
            }
        }
        self.items.partition_point(|&(o, _)| o < off)
    }

    fn index(&self, off: u64) -> Option<usize> {
        let i = self.lower_bound(off);
        (self.items.get(i)?.0 == off).then_some(i)
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    pub(crate) fn get(&self, off: u64) -> Option<&T> {
        self.index(off).map(|i| &self.items[i].1)
    }

    pub(crate) fn get_mut(&mut self, off: u64) -> Option<&mut T> {
        self.index(off).map(|i| &mut self.items[i].1)
    }

    pub(crate) fn contains(&self, off: u64) -> bool {
        self.index(off).is_some()
    }

    /// Inserts `value` at `off`, replacing any value already there.
    pub(crate) fn insert(&mut self, off: u64, value: T) {
        match self.items.back() {
            Some(&(last, _)) if last >= off => {
                let i = self.lower_bound(off);
                match self.items.get_mut(i) {
                    Some(slot) if slot.0 == off => slot.1 = value,
                    _ => self.items.insert(i, (off, value)),
                }
            }
            _ => self.items.push_back((off, value)),
        }
    }

    pub(crate) fn first(&self) -> Option<(u64, &T)> {
        self.items.front().map(|(o, v)| (*o, v))
    }

    pub(crate) fn pop_first(&mut self) -> Option<(u64, T)> {
        self.items.pop_front()
    }

    /// The last item starting before `end`.
    pub(crate) fn before(&self, end: u64) -> Option<(u64, &T)> {
        let i = self.lower_bound(end).checked_sub(1)?;
        self.items.get(i).map(|(o, v)| (*o, v))
    }

    /// Items whose offset is in `r`, in order.
    pub(crate) fn range(&self, r: Range<u64>) -> impl DoubleEndedIterator<Item = (u64, &T)> + '_ {
        let (from, to) = (self.lower_bound(r.start), self.lower_bound(r.end));
        self.items.range(from..to.max(from)).map(|(o, v)| (*o, v))
    }

    /// Items whose offset is in `r`, in order, mutable.
    pub(crate) fn range_mut(&mut self, r: Range<u64>) -> impl Iterator<Item = (u64, &mut T)> + '_ {
        let (from, to) = (self.lower_bound(r.start), self.lower_bound(r.end));
        self.items
            .range_mut(from..to.max(from))
            .map(|(o, v)| (*o, v))
    }

    /// Forgets every item and gives the memory back: a connection that
    /// ends must not keep a full buffer's worth of slots.
    pub(crate) fn clear(&mut self) {
        self.items = VecDeque::new();
    }

    /// Gives back slots once fewer than a quarter are used (down to twice
    /// what is held), so an idle connection does not keep the memory of
    /// its busiest moment; the gap between a quarter and a half keeps a
    /// length that swings from growing and shrinking on every segment.
    pub(crate) fn shrink(&mut self) {
        if self.items.capacity() > 4 * self.items.len() + 16 {
            self.items.shrink_to(self.items.len() * 2);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Out-of-order inserts, replacement, ranges and the predecessor agree
    /// with a sorted list.
    #[test]
    fn keeps_offset_order_whatever_the_insert_order() {
        let mut r = Ring::default();
        for off in [30, 10, 50, 20, 40, 60, 0] {
            r.insert(off, off * 2);
        }
        r.insert(20, 7);
        let all: Vec<(u64, u64)> = r.range(0..u64::MAX).map(|(o, v)| (o, *v)).collect();
        assert_eq!(
            all,
            [
                (0, 0),
                (10, 20),
                (20, 7),
                (30, 60),
                (40, 80),
                (50, 100),
                (60, 120)
            ]
        );
        assert_eq!(
            r.range(15..45).map(|(o, _)| o).collect::<Vec<_>>(),
            [20, 30, 40]
        );
        // A reversed range, as a caller's arithmetic may produce, is empty.
        let (lo, hi) = (45, 15);
        assert_eq!(r.range(lo..hi).count(), 0);
        assert_eq!(r.before(30).map(|(o, _)| o), Some(20));
        assert_eq!(r.before(31).map(|(o, _)| o), Some(30));
        assert_eq!(r.before(0), None);
        assert_eq!(r.get(25), None);
        assert!(r.contains(60) && !r.contains(61));
        for (_, v) in r.range_mut(50..61) {
            *v += 1;
        }
        assert_eq!(r.get(60), Some(&121));
        // Even and uneven spacing, every offset between the ends: the
        // guessed index agrees with a plain search.
        for step in [1_448, 7] {
            let mut u = Ring::default();
            for k in 0..50u64 {
                u.insert(k * step + k * k % 3, ());
            }
            for off in 0..50 * step + 3 {
                let want = u.items.partition_point(|&(o, _)| o < off);
                assert_eq!(u.lower_bound(off), want, "step {step}, offset {off}");
            }
        }
        assert_eq!(r.pop_first(), Some((0, 0)));
        assert_eq!(r.first().map(|(o, _)| o), Some(10));
        r.clear();
        assert!(r.is_empty());
    }
}
