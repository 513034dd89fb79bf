//! Which connections of an endpoint have work: the deadline of each (in
//! deadline order), and the ones that may have a datagram to send or an
//! event to report. The endpoint asks only those, so a call costs the same
//! with ten idle connections as with ten thousand.
//!
//! A connection changes only when the endpoint hands it input (a datagram,
//! a due timer, an application call through `connection_mut`) or polls it.
//! Each such connection is `touch`ed; the endpoint then re-reads its
//! deadline and marks it ready. A connection leaves a ready set when asked
//! and found to have nothing; between inputs, the only thing that can give
//! it something to send is time reaching its deadline (`mark_due`).

use crate::endpoint::ConnectionHandle;
use crate::small_set::SmallSet;
use brisk_time::{Deadlines, Instant};

/// Connection handles in handle order: a client's one connection goes in
/// and out around every datagram, so a short array before a tree.
pub(crate) type ReadySet = SmallSet<ConnectionHandle>;

#[derive(Debug, Default)]
pub(crate) struct Schedule {
    /// Every connection's next deadline, earliest first.
    pub timers: Deadlines<ConnectionHandle>,
    /// May have a datagram to send, in handle order for the round robin.
    pub send_ready: ReadySet,
    /// May have an event to report, in handle order.
    pub events_ready: ReadySet,
    /// Handed input since the schedule last looked at them.
    pub touched: Vec<ConnectionHandle>,
    /// Reused list of connections whose deadline came.
    pub due: Vec<ConnectionHandle>,
}

impl Schedule {
    /// `h` may have changed: look at it again before the next decision.
    pub(crate) fn touch(&mut self, h: ConnectionHandle) {
        if self.touched.last() != Some(&h) {
            self.touched.push(h);
        }
    }

    /// Records `h`'s deadline (none: no timer running).
    pub(crate) fn rearm(&mut self, h: ConnectionHandle, deadline: Option<Instant>) {
        self.timers.rearm(h, deadline);
    }

    /// Connections whose deadline is at or before `now` may send again
    /// (a pacer's release, an ACK delay that ran out) even if nobody ran
    /// their timers yet.
    pub(crate) fn mark_due(&mut self, now: Instant) {
        self.send_ready.extend(self.timers.due(now));
    }

    /// Takes out the connections whose deadline is at or before `now`,
    /// into `due` (each once); the caller re-arms them afterwards.
    pub(crate) fn take_due(&mut self, now: Instant, due: &mut Vec<ConnectionHandle>) {
        while let Some(h) = self.timers.pop_due(now) {
            due.push(h);
        }
    }

    /// The first connection ready to send with a handle in `from..below`.
    pub(crate) fn next_ready(&self, from: u64, below: u64) -> Option<ConnectionHandle> {
        if from >= below {
            return None;
        }
        self.send_ready
            .first_in(ConnectionHandle(from), ConnectionHandle(below))
    }

    /// `h` is gone: no deadline, nothing ready.
    pub(crate) fn forget(&mut self, h: ConnectionHandle) {
        self.rearm(h, None);
        self.send_ready.remove(&h);
        self.events_ready.remove(&h);
        self.touched.retain(|&t| t != h);
    }

    /// Connections with a deadline (for tests of the bookkeeping).
    #[cfg(test)]
    pub(crate) fn armed_len(&self) -> usize {
        self.timers.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn at(ms: u64) -> Instant {
        Instant::from_nanos(ms * 1_000_000)
    }

    #[test]
    fn deadlines_come_out_in_time_order_once_each_and_rearming_moves_them() {
        let mut s = Schedule::default();
        s.rearm(ConnectionHandle(1), Some(at(30)));
        s.rearm(ConnectionHandle(2), Some(at(10)));
        s.rearm(ConnectionHandle(3), Some(at(20)));
        // Moving 1 earlier leaves no stale entry at 30 ms.
        s.rearm(ConnectionHandle(1), Some(at(5)));
        s.rearm(ConnectionHandle(3), None);
        assert_eq!(s.timers.len(), 2);
        assert_eq!(s.armed_len(), 2);
        let mut due = Vec::new();
        s.take_due(at(10), &mut due);
        assert_eq!(due, [ConnectionHandle(1), ConnectionHandle(2)]);
        assert!(s.timers.is_empty());
        s.take_due(at(100), &mut due);
        assert_eq!(due.len(), 2);
    }

    /// The array form and the tree give the same answers, through growth
    /// past the array's size.
    #[test]
    fn ready_sets_behave_as_ordered_sets() {
        let mut s = ReadySet::default();
        let mut model = BTreeSet::new();
        let mut x = 0x9e37_79b9_u64;
        for step in 0..4_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let span = if step < 2_000 { 10 } else { 50 };
            let h = ConnectionHandle(x % span);
            if (x >> 32).is_multiple_of(3) {
                s.remove(&h);
                model.remove(&h);
            } else {
                s.insert(h);
                model.insert(h);
            }
            assert_eq!(s.to_vec(), model.iter().copied().collect::<Vec<_>>());
            assert_eq!(s.first(), model.first());
            let (from, below) = ((x >> 40) % span, (x >> 48) % (span + 1));
            if from < below {
                assert_eq!(
                    s.first_in(ConnectionHandle(from), ConnectionHandle(below)),
                    model
                        .range(ConnectionHandle(from)..ConnectionHandle(below))
                        .next()
                        .copied(),
                    "step {step}"
                );
            }
        }
        assert!(matches!(s, ReadySet::Large(_)));
    }

    #[test]
    fn due_connections_become_ready_to_send_and_ranges_bound_the_search() {
        let mut s = Schedule::default();
        s.rearm(ConnectionHandle(4), Some(at(10)));
        s.rearm(ConnectionHandle(7), Some(at(50)));
        s.mark_due(at(10));
        assert_eq!(s.next_ready(0, u64::MAX), Some(ConnectionHandle(4)));
        assert_eq!(s.next_ready(5, u64::MAX), None);
        assert_eq!(s.next_ready(0, 4), None);
        s.forget(ConnectionHandle(4));
        assert_eq!(s.next_ready(0, u64::MAX), None);
        assert_eq!(s.timers.len(), 1);
    }
}
