//! The engine's agenda: when each component (a flow's application, its two
//! access links, the two bottleneck directions) next wants to run.
//!
//! A binary heap of (time, component) with lazy invalidation: rescheduling
//! a component pushes a new entry and leaves the old one in the heap, where
//! it is recognised as stale (its time is no longer the component's) and
//! skipped when it surfaces. Each component thus costs O(log n) only when
//! its wake-up time changes, instead of a scan of every component on every
//! step.
//!
//! Components are numbered in the order a round visits them, and equal
//! times pop in that order, so ties are deterministic. Time advances in
//! rounds: a round at `t` visits, in number order, the components due at
//! `t`; one that becomes due at `t` after the round has passed its number
//! waits for the next round at the same `t` (see [`Wakeups::schedule`]).

use brisk_time::Instant;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

#[derive(Debug, Default)]
pub(crate) struct Wakeups {
    heap: BinaryHeap<Reverse<(Instant, usize)>>,
    /// The live wake-up time of each component.
    due: Vec<Option<Instant>>,
    /// The round in progress: its time and the last component it visited.
    round: Option<(Instant, Option<usize>)>,
    /// Components that became due in the current round behind its cursor.
    next_round: Vec<usize>,
}

impl Wakeups {
    pub(crate) fn new(components: usize) -> Wakeups {
        Wakeups {
            heap: BinaryHeap::with_capacity(components * 2),
            due: vec![None; components],
            round: None,
            next_round: Vec::new(),
        }
    }

    /// Sets when `component` next wants to run (`None`: never), replacing
    /// any earlier setting. During a round, a time at or before the round's
    /// is the round's own time; it is visited in this round if the round
    /// has not reached `component` yet, else in the next one.
    pub(crate) fn schedule(&mut self, component: usize, at: Option<Instant>) {
        let at = match (at, self.round) {
            (Some(t), Some((now, _))) => Some(t.max(now)),
            (t, _) => t,
        };
        if self.due[component] == at {
            return;
        }
        self.due[component] = at;
        let Some(t) = at else { return };
        match self.round {
            Some((now, Some(done))) if t == now && component <= done => {
                self.next_round.push(component);
            }
            _ => self.heap.push(Reverse((t, component))),
        }
    }

    /// The time of the next round, if anything is scheduled.
    pub(crate) fn next_time(&mut self) -> Option<Instant> {
        self.drop_stale();
        self.heap.peek().map(|Reverse((t, _))| *t)
    }

    /// Opens a round at `now` (a time [`Wakeups::next_time`] returned).
    pub(crate) fn start_round(&mut self, now: Instant) {
        self.round = Some((now, None));
    }

    /// The next component due in the current round, in number order; it
    /// counts as run (unscheduled) from here on.
    pub(crate) fn pop_due(&mut self) -> Option<usize> {
        let (now, cursor) = self.round?;
        loop {
            self.drop_stale();
            let &Reverse((t, c)) = self.heap.peek()?;
            if t != now {
                return None;
            }
            self.heap.pop();
            // A second entry for a component this round already ran: its
            // new wake-up at `now` waits in `next_round`.
            if cursor.is_some_and(|done| c <= done) {
                continue;
            }
            self.due[c] = None;
            self.round = Some((now, Some(c)));
            return Some(c);
        }
    }

    /// Closes the round; what became due behind its cursor is due at once.
    pub(crate) fn end_round(&mut self) {
        let Some((now, _)) = self.round.take() else {
            return;
        };
        for c in self.next_round.drain(..) {
            if self.due[c] == Some(now) {
                self.heap.push(Reverse((now, c)));
            }
        }
    }

    /// Pops heap entries that no longer match their component's time.
    fn drop_stale(&mut self) {
        while let Some(&Reverse((t, c))) = self.heap.peek() {
            if self.due[c] == Some(t) {
                break;
            }
            self.heap.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(x: u64) -> Option<Instant> {
        Some(Instant::from_millis(x))
    }

    /// Runs rounds until nothing is left: each round's time and visits.
    fn drain(
        w: &mut Wakeups,
        mut visit: impl FnMut(&mut Wakeups, usize),
    ) -> Vec<(u64, Vec<usize>)> {
        let mut rounds = Vec::new();
        while let Some(t) = w.next_time() {
            w.start_round(t);
            let mut seen = Vec::new();
            while let Some(c) = w.pop_due() {
                seen.push(c);
                visit(w, c);
            }
            w.end_round();
            rounds.push((t.as_millis(), seen));
        }
        rounds
    }

    #[test]
    fn earliest_first_and_ties_in_component_order() {
        let mut w = Wakeups::new(4);
        w.schedule(3, ms(5));
        w.schedule(1, ms(5));
        w.schedule(2, ms(1));
        w.schedule(0, ms(9));
        assert_eq!(
            drain(&mut w, |_, _| {}),
            vec![(1, vec![2]), (5, vec![1, 3]), (9, vec![0])]
        );
    }

    #[test]
    fn rescheduling_replaces_and_cancelling_removes() {
        let mut w = Wakeups::new(3);
        w.schedule(0, ms(5));
        w.schedule(0, ms(2));
        w.schedule(1, ms(3));
        w.schedule(1, None);
        w.schedule(2, ms(4));
        w.schedule(2, ms(7));
        // Back to a time it had before: one visit, not two.
        w.schedule(2, ms(4));
        assert_eq!(drain(&mut w, |_, _| {}), vec![(2, vec![0]), (4, vec![2])]);
    }

    #[test]
    fn due_now_ahead_of_the_cursor_runs_in_this_round_behind_it_in_the_next() {
        let mut w = Wakeups::new(4);
        w.schedule(1, ms(10));
        let mut first = true;
        let rounds = drain(&mut w, |w, c| {
            if c == 1 && first {
                first = false;
                // Ahead of the cursor: this round. At or behind it: the next.
                w.schedule(3, ms(10));
                w.schedule(0, ms(10));
                w.schedule(1, ms(10));
                // A time in the past is read as the round's own.
                w.schedule(2, ms(3));
            }
        });
        assert_eq!(rounds, vec![(10, vec![1, 2, 3]), (10, vec![0, 1])]);
    }

    #[test]
    fn a_stale_twin_of_a_component_rescheduled_now_does_not_run_it_twice() {
        let mut w = Wakeups::new(2);
        // Two live-looking entries at 10 ms for component 0.
        w.schedule(0, ms(10));
        w.schedule(0, ms(20));
        w.schedule(0, ms(10));
        w.schedule(1, ms(10));
        let mut again = true;
        let rounds = drain(&mut w, |w, c| {
            if c == 0 && again {
                again = false;
                w.schedule(0, ms(10));
            }
        });
        assert_eq!(rounds, vec![(10, vec![0, 1]), (10, vec![0])]);
    }
}
