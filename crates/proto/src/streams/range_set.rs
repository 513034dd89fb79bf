//! A set of byte offsets stored as disjoint intervals.
//!
//! Used for what has arrived (receive side), what the peer acknowledged and
//! what was declared lost (send side). Memory grows with the number of holes,
//! never with the number of bytes.

use std::collections::BTreeMap;
use std::ops::Range;

/// Disjoint, non-adjacent half-open ranges, keyed by start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RangeSet {
    map: BTreeMap<u64, u64>,
}

impl RangeSet {
    pub(super) fn new() -> Self {
        Self::default()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The lowest range.
    pub(super) fn first(&self) -> Option<Range<u64>> {
        self.map.first_key_value().map(|(&s, &e)| s..e)
    }

    #[cfg(test)]
    pub(super) fn iter(&self) -> impl Iterator<Item = Range<u64>> + '_ {
        self.map.iter().map(|(&s, &e)| s..e)
    }

    /// Ranges of the set that intersect `range` (not clipped to it).
    pub(super) fn overlapping(&self, range: Range<u64>) -> impl Iterator<Item = Range<u64>> + '_ {
        let before = self
            .map
            .range(..range.start)
            .next_back()
            .filter(|(_, e)| **e > range.start);
        let within = self.map.range(range.start..range.end.max(range.start));
        before.into_iter().chain(within).map(|(&s, &e)| s..e)
    }

    /// Total number of offsets in the set.
    #[cfg(test)]
    pub(super) fn covered_len(&self) -> u64 {
        self.map.iter().map(|(s, e)| e - s).sum()
    }

    /// Adds `range`, merging with neighbours; returns how many of its offsets
    /// were not in the set before.
    pub(super) fn insert(&mut self, range: Range<u64>) -> u64 {
        if range.start >= range.end {
            return 0;
        }
        // The common cases, data arriving and acknowledged in order: the
        // range starts at or inside the highest range (which has nothing
        // above it to merge with), or above everything.
        match self.map.last_entry() {
            None => {
                self.map.insert(range.start, range.end);
                return range.end - range.start;
            }
            Some(mut last) if range.start >= *last.key() => {
                let end = *last.get();
                if range.start > end {
                    self.map.insert(range.start, range.end);
                    return range.end - range.start;
                }
                if range.end <= end {
                    return 0;
                }
                *last.get_mut() = range.end;
                return range.end - end;
            }
            Some(_) => {}
        }
        let (mut start, mut end) = (range.start, range.end);
        let mut already = 0;
        let overlap = |s: u64, e: u64| e.min(range.end).saturating_sub(s.max(range.start));
        if let Some((&s, &e)) = self.map.range(..=start).next_back()
            && e >= start
        {
            already += overlap(s, e);
            start = s;
            end = end.max(e);
            self.map.remove(&s);
        }
        while let Some((&s, &e)) = self.map.range(start..=end).next() {
            already += overlap(s, e);
            end = end.max(e);
            self.map.remove(&s);
        }
        self.map.insert(start, end);
        (range.end - range.start) - already
    }

    /// Takes `range` out of the set; returns how many offsets were removed.
    pub(super) fn remove(&mut self, range: Range<u64>) -> u64 {
        let (start, end) = (range.start, range.end);
        if start >= end {
            return 0;
        }
        // The common case, a reader or the acknowledgements consuming the
        // front: `range` ends within the lowest range.
        if let Some((&s, &e)) = self.map.first_key_value()
            && start <= s
            && end <= e
        {
            if end <= s {
                return 0;
            }
            self.map.pop_first();
            if end < e {
                self.map.insert(end, e);
            }
            return end - s;
        }
        let mut removed = 0;
        if let Some((&s, &e)) = self.map.range(..start).next_back()
            && e > start
        {
            self.map.insert(s, start);
            if e > end {
                self.map.insert(end, e);
                return end - start;
            }
            removed += e - start;
        }
        while let Some((&s, &e)) = self.map.range(start..end).next() {
            self.map.remove(&s);
            if e > end {
                self.map.insert(end, e);
                return removed + (end - s);
            }
            removed += e - s;
        }
        removed
    }

    /// Removes and returns up to `max_len` offsets from the front of the
    /// lowest range.
    pub(super) fn pop_front(&mut self, max_len: u64) -> Option<Range<u64>> {
        let first = self.first()?;
        if max_len == 0 {
            return None;
        }
        let taken = first.start..first.end.min(first.start.saturating_add(max_len));
        self.remove(taken.clone());
        Some(taken)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    fn ranges(set: &RangeSet) -> Vec<Range<u64>> {
        set.iter().collect()
    }

    #[test]
    fn insert_merges_overlapping_and_adjacent() {
        let mut s = RangeSet::new();
        assert_eq!(s.insert(10..20), 10);
        assert_eq!(s.insert(30..40), 10);
        assert_eq!(s.insert(20..25), 5, "adjacent on the left merges");
        assert_eq!(ranges(&s), vec![10..25, 30..40]);
        assert_eq!(s.insert(5..35), 10, "only the two holes are new");
        assert_eq!(ranges(&s), vec![5..40]);
        assert_eq!(s.insert(12..18), 0, "duplicates add nothing");
        assert_eq!(s.insert(7..7), 0);
        assert_eq!(s.covered_len(), 35);
    }

    #[test]
    fn remove_splits_and_trims() {
        let mut s = RangeSet::new();
        s.insert(0..100);
        assert_eq!(s.remove(10..20), 10);
        assert_eq!(ranges(&s), vec![0..10, 20..100]);
        assert_eq!(s.remove(5..30), 15);
        assert_eq!(ranges(&s), vec![0..5, 30..100]);
        assert_eq!(s.remove(200..300), 0);
        assert_eq!(s.remove(0..1000), 75);
        assert!(s.is_empty());
    }

    #[test]
    fn in_order_appends_and_front_removals() {
        let mut s = RangeSet::new();
        assert_eq!(s.insert(0..10), 10);
        assert_eq!(s.insert(10..20), 10, "extends the highest range");
        assert_eq!(s.insert(15..25), 5, "overlaps the top of the highest");
        assert_eq!(s.insert(30..40), 10, "a new range above");
        assert_eq!(s.insert(32..35), 0, "inside the highest");
        assert_eq!(ranges(&s), vec![0..25, 30..40]);
        assert_eq!(s.remove(0..5), 5, "the front of the lowest");
        assert_eq!(s.remove(0..5), 0, "already gone");
        assert_eq!(s.remove(5..25), 20, "the whole lowest");
        assert_eq!(ranges(&s), vec![30..40]);
        assert_eq!(s.remove(20..35), 5);
        assert_eq!(ranges(&s), vec![35..40]);
    }

    #[test]
    fn pop_front_takes_at_most_max_len() {
        let mut s = RangeSet::new();
        s.insert(4..10);
        s.insert(20..22);
        assert_eq!(s.pop_front(0), None);
        assert_eq!(s.pop_front(4), Some(4..8));
        assert_eq!(s.pop_front(4), Some(8..10));
        assert_eq!(s.pop_front(4), Some(20..22));
        assert_eq!(s.pop_front(4), None);
    }

    #[test]
    fn overlapping_includes_a_range_that_starts_before() {
        let mut s = RangeSet::new();
        s.insert(0..10);
        s.insert(20..30);
        s.insert(40..50);
        assert_eq!(
            s.overlapping(5..25).collect::<Vec<_>>(),
            vec![0..10, 20..30]
        );
        assert_eq!(s.overlapping(10..20).count(), 0);
        assert_eq!(s.overlapping(45..45).count(), 1);
    }

    proptest! {
        /// The interval set behaves like a plain set of offsets.
        #[test]
        fn matches_a_set_of_offsets(
            ops in proptest::collection::vec((any::<bool>(), 0u64..200, 0u64..40), 1..60)
        ) {
            let mut s = RangeSet::new();
            let mut model = BTreeSet::new();
            for (add, start, len) in ops {
                let r = start..start + len;
                let changed = if add {
                    let n = r.clone().filter(|o| model.insert(*o)).count() as u64;
                    prop_assert_eq!(s.insert(r), n);
                    n
                } else {
                    let n = r.clone().filter(|o| model.remove(o)).count() as u64;
                    prop_assert_eq!(s.remove(r), n);
                    n
                };
                let _ = changed;
                let flat: BTreeSet<u64> = s.iter().flatten().collect();
                prop_assert_eq!(&flat, &model);
                // Disjoint and non-adjacent.
                let rs = ranges(&s);
                for w in rs.windows(2) {
                    prop_assert!(w[0].end < w[1].start);
                }
            }
        }
    }
}
