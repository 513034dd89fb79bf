//! The engine's agenda: when each component (a flow's application, its two
//! access links, the two bottleneck directions) next wants to run.
//!
//! Each component's wake-up sits in a leaf of a tournament tree whose every
//! inner node holds the least (wake-up, number) below it, so the root is the
//! next to run. A node keeps the winner's wake-up beside its number, and
//! the two children of a node sit side by side: a match reads one pair, not
//! two numbers and then their times. A change replays the matches on the
//! path up from its leaf, and stops as soon as a node comes out as it was
//! (its ancestors are then unchanged too); a step of the engine costs a few
//! short climbs, however many flows there are. (A scan of blocks of 64
//! wake-ups did as well with one flow, but each step rescanned a block,
//! which with 100 flows was most of an engine step.) Nothing asks a
//! component for its wake-up unless the engine just touched it.
//!
//! A run of one or two flows has at most [`FLAT`] components: there the
//! wake-ups are kept in a plain array instead, written in one store and
//! scanned when the next round's time is wanted, which costs less than one
//! climb; a round keeps a bit mask of the components due at its time.
//!
//! Components are numbered in the order a round visits them, so ties are
//! deterministic. Time advances in rounds: a round at `t` visits, in number
//! order, the components due at `t`; one that becomes due at `t` after the
//! round has passed its number waits for the next round at the same `t`
//! (see [`Wakeups::schedule`]).

use brisk_time::Instant;

/// The wake-up of a component that has none (or waits in `next_round`).
const NEVER: u64 = u64::MAX;

/// Components up to which the agenda scans an array instead of keeping a
/// tree.
const FLAT: usize = 8;

/// A tree node: the winning component below it and its wake-up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Entry {
    at: u64,
    component: u32,
}

#[derive(Debug, Default)]
pub(crate) struct Wakeups {
    /// The tree, heap-numbered from 1 (the root) and stored by sibling
    /// pairs: pair `p` holds nodes `2p` and `2p + 1` (slot 0 of pair 0 is
    /// unused). Node `i < leaves` holds the winner of its children; leaf
    /// node `leaves + c` holds component `c`, padded with [`NEVER`] up to
    /// `leaves`. Ties go to the lower number, which is always on the left.
    pairs: Vec<[Entry; 2]>,
    /// Leaves of the tree: the number of components rounded up to a power
    /// of two.
    leaves: usize,
    /// Each component's wake-up as last scheduled, including those waiting
    /// in `next_round`; [`NEVER`] if none.
    due: Vec<u64>,
    /// Whether a round is open, its time, and the first component it has
    /// not passed yet (one past the last it visited). Every component in
    /// the tree due at the round's time is at or past the cursor, but for
    /// `popped`.
    in_round: bool,
    now: u64,
    cursor: usize,
    /// Components that became due in the current round behind its cursor.
    next_round: Vec<usize>,
    /// The component [`Wakeups::pop_due`] last handed out, left in the tree
    /// at the round's time: the engine schedules a component it visited
    /// again right after, and one climb then does what taking it out and
    /// putting it back did with two. Taken out before the tree is read if
    /// it was not. (The flat array takes it out at once.)
    popped: Option<usize>,
    /// With at most [`FLAT`] components: the tree is not used, and each
    /// component's wake-up in the tree's stead (padded with [`NEVER`]) is
    /// here.
    flat: Option<[u64; FLAT]>,
    /// With the flat array, in an open round: bit `c` is set when
    /// component `c`'s wake-up there is the round's time, so a pop takes
    /// the lowest bit from the cursor on instead of scanning the array.
    flat_due_now: u32,
    /// With the flat array: the earliest wake-up [`Wakeups::next_time`]
    /// found and the mask of the components due then, until the next
    /// change, for the round it opens to start from.
    flat_next: Option<(u64, u32)>,
}

impl Wakeups {
    pub(crate) fn new(components: usize) -> Wakeups {
        let leaves = components.next_power_of_two().max(2);
        let never = |c: usize| Entry {
            at: NEVER,
            component: c as u32,
        };
        let mut pairs = vec![[never(0); 2]; leaves];
        for c in 0..leaves {
            let node = leaves + c;
            pairs[node / 2][node % 2] = never(c);
        }
        // Every wake-up is NEVER: the left child wins every match.
        for node in (1..leaves).rev() {
            pairs[node / 2][node % 2] = pairs[node][0];
        }
        Wakeups {
            pairs,
            leaves,
            due: vec![NEVER; components],
            in_round: false,
            now: 0,
            cursor: 0,
            next_round: Vec::new(),
            popped: None,
            flat: (components <= FLAT).then_some([NEVER; FLAT]),
            flat_due_now: 0,
            flat_next: None,
        }
    }

    /// Sets when `component` next wants to run (`None`: never), replacing
    /// any earlier setting. During a round, a time at or before the round's
    /// is the round's own time; it is visited in this round if the round
    /// has not reached `component` yet, else in the next one.
    #[inline(always)]
    pub(crate) fn schedule(&mut self, component: usize, at: Option<Instant>) {
        let mut t = at.map_or(NEVER, Instant::as_nanos);
        if self.in_round && t < self.now {
            t = self.now;
        }
        // Most wake-ups asked for again have not moved.
        if self.due.get(component) == Some(&t) && self.popped != Some(component) {
            return;
        }
        self.schedule_moved(component, t);
    }

    /// [`Wakeups::schedule`] of a wake-up (`t`, in nanoseconds) that may
    /// have moved.
    #[inline(never)]
    fn schedule_moved(&mut self, component: usize, t: u64) {
        let Some(due) = self.due.get_mut(component) else {
            return;
        };
        if self.popped == Some(component) {
            // Still in the tree at the round's time, whatever `due` says.
            self.popped = None;
        } else if *due == t {
            return;
        }
        *due = t;
        if self.in_round && t == self.now && component < self.cursor {
            self.set(component, NEVER);
            self.next_round.push(component);
        } else {
            self.set(component, t);
        }
    }

    /// The time of the next round, if anything is scheduled.
    pub(crate) fn next_time(&mut self) -> Option<Instant> {
        self.settle_popped();
        let least = match &self.flat {
            Some(times) => {
                let (least, due) = earliest(times);
                self.flat_next = Some((least, due));
                least
            }
            None => self.pairs[0][1].at,
        };
        (least != NEVER).then(|| Instant::from_nanos(least))
    }

    /// Opens a round at `now` (a time [`Wakeups::next_time`] returned).
    pub(crate) fn start_round(&mut self, now: Instant) {
        self.in_round = true;
        self.now = now.as_nanos();
        self.cursor = 0;
        if let Some(times) = &self.flat {
            self.flat_due_now = match self.flat_next.take() {
                Some((least, due)) if least == self.now => due,
                _ => {
                    let now = self.now;
                    times
                        .iter()
                        .enumerate()
                        .fold(0, |m, (c, &t)| m | (u32::from(t == now) << c))
                }
            };
        }
    }

    /// The next component due in the current round, in number order; it
    /// counts as run (unscheduled) from here on.
    #[inline]
    pub(crate) fn pop_due(&mut self) -> Option<usize> {
        self.settle_popped();
        if !self.in_round || self.now == NEVER {
            return None;
        }
        // No wake-up is earlier than the round, and those at its time are
        // all past the cursor: the next is the first due from the cursor
        // on, which in the tree is the root, if due.
        let c = match &mut self.flat {
            Some(times) => {
                // Taken out of the array at once: a store is all a climb
                // of the tree would have been spared.
                let later = self.flat_due_now & (u32::MAX << self.cursor);
                if later == 0 {
                    return None;
                }
                let c = later.trailing_zeros() as usize;
                times[c] = NEVER;
                self.flat_due_now &= !(1 << c);
                self.due[c] = NEVER;
                self.cursor = c + 1;
                return Some(c);
            }
            None => {
                let root = self.pairs[0][1];
                if root.at != self.now {
                    return None;
                }
                root.component as usize
            }
        };
        self.due[c] = NEVER;
        self.popped = Some(c);
        self.cursor = c + 1;
        Some(c)
    }

    /// Closes the round; what became due behind its cursor is due at once.
    pub(crate) fn end_round(&mut self) {
        self.settle_popped();
        if !std::mem::replace(&mut self.in_round, false) || self.next_round.is_empty() {
            return;
        }
        let now = self.now;
        let waiting = std::mem::take(&mut self.next_round);
        for &c in &waiting {
            if self.due[c] == now {
                self.set(c, now);
            }
        }
        self.next_round = waiting;
        self.next_round.clear();
    }

    /// Takes the last popped component out of the tree if nothing
    /// scheduled it since.
    #[inline]
    fn settle_popped(&mut self) {
        if let Some(c) = self.popped.take() {
            self.set(c, NEVER);
        }
    }

    /// Writes a component's wake-up and replays the matches above it.
    fn set(&mut self, c: usize, t: u64) {
        if let Some(times) = &mut self.flat {
            let c = c % FLAT;
            times[c] = t;
            self.flat_next = None;
            if self.in_round {
                let bit = 1 << c;
                if t == self.now {
                    self.flat_due_now |= bit;
                } else {
                    self.flat_due_now &= !bit;
                }
            }
            return;
        }
        let mut node = self.leaves + c;
        let mut entry = Entry {
            at: t,
            component: c as u32,
        };
        loop {
            let slot = &mut self.pairs[node / 2][node % 2];
            if *slot == entry {
                return;
            }
            *slot = entry;
            node /= 2;
            if node == 0 {
                return;
            }
            let [l, r] = self.pairs[node];
            entry = if r.at < l.at { r } else { l };
        }
    }
}

/// The earliest of the flat array's wake-ups, and the mask of the
/// components due then, in one pass.
fn earliest(times: &[u64; FLAT]) -> (u64, u32) {
    let (mut least, mut due) = (NEVER, 0);
    for (c, &t) in times.iter().enumerate() {
        if t < least {
            (least, due) = (t, 0);
        }
        due |= u32::from(t == least) << c;
    }
    (least, due)
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

    /// The agenda's contract by brute force: scan every component.
    #[derive(Default)]
    struct Naive {
        due: Vec<Option<Instant>>,
        deferred: Vec<bool>,
        round: Option<(Instant, Option<usize>)>,
    }

    impl Naive {
        fn schedule(&mut self, c: usize, at: Option<Instant>) {
            let at = match (at, self.round) {
                (Some(t), Some((now, _))) => Some(t.max(now)),
                (t, _) => t,
            };
            if self.due[c] == at {
                return;
            }
            self.due[c] = at;
            self.deferred[c] = matches!(
                (at, self.round),
                (Some(t), Some((now, Some(done)))) if t == now && c <= done
            );
        }
        fn next_time(&self) -> Option<Instant> {
            self.due.iter().flatten().min().copied()
        }
        fn pop_due(&mut self) -> Option<usize> {
            let (now, cursor) = self.round?;
            let c = (0..self.due.len()).find(|&c| {
                self.due[c] == Some(now) && !self.deferred[c] && cursor.is_none_or(|d| c > d)
            })?;
            self.due[c] = None;
            self.round = Some((now, Some(c)));
            Some(c)
        }
    }

    proptest::proptest! {
        #[test]
        fn behaves_like_a_scan_of_every_component(
            ops in proptest::collection::vec((0usize..8, 0u8..6, 0u8..4), 1..300),
        ) {
            // Eight components: in the flat array, and spread over a tree.
            for stride in [1, 19] {
                let n = 8 * stride;
                let mut w = Wakeups::new(n);
                proptest::prop_assert_eq!(w.flat.is_some(), stride == 1);
                let mut naive = Naive {
                    due: vec![None; n],
                    deferred: vec![false; n],
                    round: None,
                };
                let mut now = 0u64;
                for &(c, offset, op) in &ops {
                    let c = c * stride;
                    match op {
                        // Schedule, or cancel when the offset is 5.
                        0 | 1 => {
                            let at = (offset < 5)
                                .then(|| Instant::from_millis(now + u64::from(offset)));
                            w.schedule(c, at);
                            naive.schedule(c, at);
                        }
                        2 if naive.round.is_some() => {
                            proptest::prop_assert_eq!(w.pop_due(), naive.pop_due());
                        }
                        _ => {
                            if naive.round.is_some() {
                                w.end_round();
                                naive.round = None;
                                naive.deferred.iter_mut().for_each(|d| *d = false);
                            }
                            proptest::prop_assert_eq!(w.next_time(), naive.next_time());
                            if let Some(t) = naive.next_time() {
                                now = t.as_millis();
                                w.start_round(t);
                                naive.round = Some((t, None));
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_component_rescheduled_now_behind_the_cursor_runs_once_per_round() {
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
