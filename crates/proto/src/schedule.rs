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
use brisk_time::{Deadlines, Instant};
use std::collections::BTreeSet;

#[derive(Debug, Default)]
pub(crate) struct Schedule {
    /// Every connection's next deadline, earliest first.
    pub timers: Deadlines<ConnectionHandle>,
    /// May have a datagram to send, in handle order for the round robin.
    pub send_ready: BTreeSet<ConnectionHandle>,
    /// May have an event to report, in handle order.
    pub events_ready: BTreeSet<ConnectionHandle>,
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
            .range(ConnectionHandle(from)..ConnectionHandle(below))
            .next()
            .copied()
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
