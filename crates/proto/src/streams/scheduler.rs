//! Which stream sends next: strict priority across urgency levels,
//! round-robin within a level, retransmissions before new data.
//!
//! The scheduler only orders stream ids; whether a stream really has data
//! (and credit) is asked of the stream when it comes up, so a cancelled
//! stream that is still queued is simply skipped.

use std::collections::{BTreeMap, VecDeque};

use super::id::StreamId;

/// Urgency of a stream's data: lower is more urgent, like the RFC 9218
/// urgency parameter (0..=7, default 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Priority(pub u8);

impl Priority {
    /// The most urgent level.
    pub const HIGHEST: Priority = Priority(0);
    /// The least urgent level.
    pub const LOWEST: Priority = Priority(7);
}

impl Default for Priority {
    fn default() -> Self {
        Priority(3)
    }
}

/// The two kinds of work a stream can be queued for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Queue {
    /// Bytes declared lost, sent again before anything new at the level.
    Retransmit,
    /// Bytes (or a FIN) never sent.
    Fresh,
}

#[derive(Debug, Default)]
struct Level {
    retransmit: VecDeque<StreamId>,
    fresh: VecDeque<StreamId>,
}

impl Level {
    fn queue(&mut self, q: Queue) -> &mut VecDeque<StreamId> {
        match q {
            Queue::Retransmit => &mut self.retransmit,
            Queue::Fresh => &mut self.fresh,
        }
    }

    fn is_empty(&self) -> bool {
        self.retransmit.is_empty() && self.fresh.is_empty()
    }
}

#[derive(Debug, Clone, Copy)]
struct Member {
    level: u8,
    retransmit: bool,
    fresh: bool,
}

impl Member {
    fn flag(&mut self, q: Queue) -> &mut bool {
        match q {
            Queue::Retransmit => &mut self.retransmit,
            Queue::Fresh => &mut self.fresh,
        }
    }
}

#[derive(Debug, Default)]
pub(crate) struct Scheduler {
    levels: BTreeMap<u8, Level>,
    /// Where each queued stream sits; a stream is at most once per queue.
    members: BTreeMap<StreamId, Member>,
}

impl Scheduler {
    pub(super) fn new() -> Self {
        Self::default()
    }

    /// No stream is queued for either kind of work.
    pub(super) fn is_empty(&self) -> bool {
        self.levels.is_empty()
    }

    /// Queues `id` at the back of its level, unless already queued there.
    pub(super) fn push(&mut self, id: StreamId, priority: Priority, q: Queue) {
        self.set_priority(id, priority);
        let m = self.members.entry(id).or_insert(Member {
            level: priority.0,
            retransmit: false,
            fresh: false,
        });
        if *m.flag(q) {
            return;
        }
        *m.flag(q) = true;
        self.levels
            .entry(m.level)
            .or_default()
            .queue(q)
            .push_back(id);
    }

    /// Takes the stream at the front of `level`'s queue `q`.
    pub(super) fn pop(&mut self, level: u8, q: Queue) -> Option<StreamId> {
        let l = self.levels.get_mut(&level)?;
        let id = l.queue(q).pop_front()?;
        if l.is_empty() {
            self.levels.remove(&level);
        }
        if let Some(m) = self.members.get_mut(&id) {
            *m.flag(q) = false;
            if !m.retransmit && !m.fresh {
                self.members.remove(&id);
            }
        }
        Some(id)
    }

    /// `level`'s queue `q`, if the level has streams queued: the caller
    /// looks at its front and turns it (a stream that stays queued goes to
    /// the back, the same as [`Scheduler::pop`] then [`Scheduler::push`] at
    /// an unchanged priority) with one lookup of the level.
    pub(super) fn queue_mut(&mut self, level: u8, q: Queue) -> Option<&mut VecDeque<StreamId>> {
        self.levels.get_mut(&level).map(|l| l.queue(q))
    }

    #[cfg(test)]
    pub(super) fn queue_len(&self, level: u8, q: Queue) -> usize {
        self.levels.get(&level).map_or(0, |l| match q {
            Queue::Retransmit => l.retransmit.len(),
            Queue::Fresh => l.fresh.len(),
        })
    }

    /// The most urgent level after `after` (or the most urgent of all).
    pub(super) fn next_level(&self, after: Option<u8>) -> Option<u8> {
        match after {
            None => self.levels.first_key_value().map(|(k, _)| *k),
            Some(l) => self
                .levels
                .range(l.checked_add(1)?..)
                .next()
                .map(|(k, _)| *k),
        }
    }

    /// Forgets `id` entirely (reset, closed).
    pub(super) fn remove(&mut self, id: StreamId) {
        if let Some(m) = self.members.remove(&id) {
            self.unlink(id, m.level);
        }
    }

    /// Moves a queued stream to another level, keeping what it is queued for.
    pub(super) fn set_priority(&mut self, id: StreamId, priority: Priority) {
        let Some(m) = self.members.get(&id).copied() else {
            return;
        };
        if m.level == priority.0 {
            return;
        }
        self.unlink(id, m.level);
        let level = self.levels.entry(priority.0).or_default();
        if m.retransmit {
            level.retransmit.push_back(id);
        }
        if m.fresh {
            level.fresh.push_back(id);
        }
        self.members.insert(
            id,
            Member {
                level: priority.0,
                ..m
            },
        );
    }

    fn unlink(&mut self, id: StreamId, level: u8) {
        if let Some(l) = self.levels.get_mut(&level) {
            l.retransmit.retain(|x| *x != id);
            l.fresh.retain(|x| *x != id);
            if l.is_empty() {
                self.levels.remove(&level);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_come_most_urgent_first() {
        let mut s = Scheduler::new();
        s.push(StreamId(8), Priority(5), Queue::Fresh);
        s.push(StreamId(4), Priority(1), Queue::Fresh);
        s.push(StreamId(0), Priority(3), Queue::Retransmit);
        assert_eq!(s.next_level(None), Some(1));
        assert_eq!(s.next_level(Some(1)), Some(3));
        assert_eq!(s.next_level(Some(3)), Some(5));
        assert_eq!(s.next_level(Some(5)), None);
        assert_eq!(s.next_level(Some(255)), None);
    }

    #[test]
    fn round_robin_within_a_level_and_no_duplicates() {
        let mut s = Scheduler::new();
        let p = Priority::default();
        for id in [0, 4, 8] {
            s.push(StreamId(id), p, Queue::Fresh);
        }
        s.push(StreamId(0), p, Queue::Fresh);
        assert_eq!(s.queue_len(3, Queue::Fresh), 3);
        let mut order = Vec::new();
        for _ in 0..6 {
            let id = s.pop(3, Queue::Fresh).unwrap();
            order.push(id.0);
            s.push(id, p, Queue::Fresh);
        }
        assert_eq!(order, vec![0, 4, 8, 0, 4, 8]);
    }

    #[test]
    fn rotate_matches_pop_then_push() {
        let p = Priority::default();
        let (mut a, mut b) = (Scheduler::new(), Scheduler::new());
        for id in [0, 4, 8] {
            a.push(StreamId(id), p, Queue::Fresh);
            b.push(StreamId(id), p, Queue::Fresh);
        }
        for _ in 0..4 {
            let queue = a.queue_mut(3, Queue::Fresh).unwrap();
            let id = *queue.front().unwrap();
            queue.pop_front();
            queue.push_back(id);
            assert_eq!(b.pop(3, Queue::Fresh), Some(id));
            b.push(id, p, Queue::Fresh);
        }
        for _ in 0..3 {
            assert_eq!(a.pop(3, Queue::Fresh), b.pop(3, Queue::Fresh));
        }
        assert_eq!(a.next_level(None), None);
        assert!(a.queue_mut(3, Queue::Fresh).is_none(), "the level is gone");
    }

    #[test]
    fn remove_and_reprioritize() {
        let mut s = Scheduler::new();
        s.push(StreamId(0), Priority(3), Queue::Fresh);
        s.push(StreamId(0), Priority(3), Queue::Retransmit);
        s.push(StreamId(4), Priority(3), Queue::Fresh);
        s.set_priority(StreamId(0), Priority(0));
        assert_eq!(s.next_level(None), Some(0));
        assert_eq!(s.queue_len(0, Queue::Retransmit), 1);
        assert_eq!(s.queue_len(0, Queue::Fresh), 1);
        assert_eq!(s.queue_len(3, Queue::Fresh), 1);
        // Pushing with a new priority moves the stream too.
        s.push(StreamId(4), Priority(0), Queue::Fresh);
        assert_eq!(s.queue_len(3, Queue::Fresh), 0);
        assert_eq!(s.queue_len(0, Queue::Fresh), 2);
        s.remove(StreamId(0));
        assert_eq!(s.queue_len(0, Queue::Retransmit), 0);
        assert_eq!(s.pop(0, Queue::Fresh), Some(StreamId(4)));
        assert_eq!(s.next_level(None), None);
    }
}
